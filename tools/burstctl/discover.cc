// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "tools/burstctl/discover.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>

#include "abi/burst_ctl_proto.h"
#include "abi/burst_device.h"
#include "daemon/ctl/ctl_client.h"
#include "daemon/ctl/ctl_codec.h"
#include "net/netdev.h"

namespace burst::tools {
namespace {

using net::Status;

constexpr char kSocketDirEnv[] = "BURST_SOCKET_DIR";

// Empty when burstd's netdev is the one this namespace shows under its name, else why not.
std::string netdev_mismatch(const Burstd& b) {
  net::NetdevInfo nd;
  if (!net::query_netdev(b.netdev, &nd).ok()) {
    return "burstd at " + b.socket + " serves netdev " + b.netdev +
           ", which this network namespace does not show";
  }
  if (nd.mac != b.mac) {
    return "burstd at " + b.socket + " serves netdev " + b.netdev + " (MAC " +
           net::format_mac(b.mac) + ") of another network namespace (here " + b.netdev +
           " has MAC " + net::format_mac(nd.mac) + ")";
  }
  return "";
}

// Names usable burstd: pinned names first (a second claim of one goes to rest),
// then burst0, burst1, ... in order, skipping the pinned names.
void name_devices(std::vector<Burstd>* usable, std::vector<Burstd>* rest) {
  std::set<std::string> taken;
  std::vector<Burstd> kept;
  for (Burstd& b : *usable) {
    if (!b.pinned.empty() && !taken.insert(b.pinned).second) {
      b.error = "burstd at " + b.socket + " (" + b.netdev + ") is configured as " + b.pinned +
                ", which another burstd's device_name already names";
      rest->push_back(std::move(b));
      continue;
    }
    kept.push_back(std::move(b));
  }
  *usable = std::move(kept);
  int next = 0;
  for (Burstd& b : *usable) {
    if (!b.pinned.empty()) {
      b.ibdev = b.pinned;
      continue;
    }
    while (taken.count(BURST_IBDEV_PREFIX + std::to_string(next)) != 0) ++next;
    b.ibdev = BURST_IBDEV_PREFIX + std::to_string(next++);
  }
}

// Splits probed sockets into usable (named, netdev order) and the rest.
void classify(std::vector<Burstd> all, std::vector<Burstd>* usable, std::vector<Burstd>* rest) {
  for (Burstd& b : all) {
    if (!b.answered) {
      rest->push_back(std::move(b));
      continue;
    }
    if (b.netdev.empty()) {
      b.error = "burstd at " + b.socket + " serves no netdev (" +
                ctl::backend_name(b.backend) + " backend)";
    } else {
      b.error = netdev_mismatch(b);
    }
    if (b.error.empty()) {
      const bool dup = std::any_of(usable->begin(), usable->end(), [&](const Burstd& u) {
        return u.netdev == b.netdev && u.mac == b.mac;
      });
      if (!dup) {
        usable->push_back(std::move(b));
        continue;
      }
      b.error = "burstd at " + b.socket + " serves " + b.netdev + ", as an earlier socket does";
    }
    rest->push_back(std::move(b));
  }
  std::stable_sort(usable->begin(), usable->end(), [](const Burstd& x, const Burstd& y) {
    return std::strcmp(x.netdev.c_str(), y.netdev.c_str()) < 0;
  });
  name_devices(usable, rest);
}

std::vector<Burstd> probe_dir(const std::string& dir) {
  std::vector<Burstd> all;
  for (const std::string& s : list_sockets(dir)) all.push_back(probe_burstd(s));
  return all;
}

}  // namespace

std::string socket_dir(const std::string& given) {
  if (!given.empty()) return given;
  const char* env = getenv(kSocketDirEnv);
  if (env != nullptr && env[0] != '\0') return env;
  std::string d = BURST_CTL_DEFAULT_SOCKET;
  return d.substr(0, d.rfind('/'));
}

Status absolute_path(const std::string& path, std::string* out) {
  if (!path.empty() && path[0] == '/') {
    *out = path;
    return Status::Ok();
  }
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) {
    return Status::Error(errno, net::errno_message("getcwd", errno));
  }
  *out = std::string(cwd) + "/" + path;
  return Status::Ok();
}

std::vector<std::string> list_sockets(const std::string& dir_in) {
  std::vector<std::string> out;
  std::string dir;
  if (!absolute_path(dir_in, &dir).ok()) return out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string path = dir + "/" + e->d_name;
    struct stat st;
    if (e->d_name[0] != '.' && stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      out.push_back(path);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Burstd probe_burstd(const std::string& socket) {
  Burstd b;
  b.socket = socket;
  std::unique_ptr<ctl::Client> c = ctl::Client::Connect(socket, &b.error);
  if (!c) return b;
  burst_ctl_hello_resp h{};
  if (c->hello("burstctl", &h) != 0) {
    b.error = "HELLO to burstd at " + socket + ": " + c->error();
    return b;
  }
  b.answered = true;
  b.error.clear();
  b.netdev = ctl::get_str(h.netdev);
  b.ifindex = h.ifindex;
  std::memcpy(b.mac.data(), h.mac, b.mac.size());
  b.backend = h.backend;
  b.port_state = h.port_state;
  b.pinned = ctl::get_str(h.ibdev);
  return b;
}

std::string device_name_of(const std::string& socket, const std::string& pinned,
                           const std::string& dir) {
  if (!pinned.empty()) return pinned;
  std::vector<std::string> skipped;
  char want[PATH_MAX], have[PATH_MAX];
  if (realpath(socket.c_str(), want) != nullptr) {
    for (const Burstd& b : discover_burstd(dir, &skipped)) {
      if (realpath(b.socket.c_str(), have) != nullptr && std::strcmp(want, have) == 0) {
        return b.ibdev;
      }
    }
  }
  return BURST_IBDEV_PREFIX "0";
}

std::vector<Burstd> discover_burstd(const std::string& dir, std::vector<std::string>* skipped) {
  std::vector<Burstd> usable, rest;
  classify(probe_dir(dir), &usable, &rest);
  for (const Burstd& b : rest) {
    if (b.answered) skipped->push_back(b.error);  // a dead socket file is no news
  }
  return usable;
}

std::vector<Burstd> list_burstd(const std::string& dir) {
  std::vector<Burstd> usable, rest;
  classify(probe_dir(dir), &usable, &rest);
  usable.insert(usable.end(), rest.begin(), rest.end());
  return usable;
}

}  // namespace burst::tools
