// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/config.h"

#include <arpa/inet.h>
#include <ini.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "daemon/burstd/log.h"
#include "daemon/ctl/ctl_codec.h"
#include "port/port.h"

namespace burst::burstd {
namespace {

bool parse_u32(const std::string& v, uint32_t lo, uint32_t hi, int base, uint32_t* out) {
  if (v.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), &end, base);
  if (errno != 0 || *end != '\0' || v[0] == '-' || x < lo || x > hi) return false;
  *out = static_cast<uint32_t>(x);
  return true;
}

struct ParseState {
  Config* config;
  std::string error;  // the first error
  std::string path;
};

int on_entry(void* user, const char* section, const char* name, const char* value) {
  auto* st = static_cast<ParseState*>(user);
  if (!st->error.empty()) return 0;
  if (section != nullptr && section[0] != '\0') {
    st->error = std::string("section [") + section +
                "] is not known: burstd.conf has its keys outside any section";
    return 0;
  }
  // Inline comments: "key = value   # comment" (inih strips only ';' ones).
  std::string v = value;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '#' && (i == 0 || v[i - 1] == ' ' || v[i - 1] == '\t')) {
      v.resize(i);
      break;
    }
  }
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
  std::string err;
  if (!set_config_value(st->config, name, v, &err)) {
    st->error = err;
    return 0;
  }
  return 1;
}

}  // namespace

const char* backend_kind_name(BackendKind b) {
  switch (b) {
    case BackendKind::kXdp:
      return "xdp";
    case BackendKind::kDpdk:
      return "dpdk";
    case BackendKind::kLoopback:
      break;
  }
  return "loopback";
}

bool have_dpdk_backend() { return port::have_backend(port::Kind::kDpdk); }

const char* xdp_mode_name(XdpMode m) {
  switch (m) {
    case XdpMode::kNative:
      return "native";
    case XdpMode::kGeneric:
      return "generic";
    case XdpMode::kAuto:
      break;
  }
  return "auto";
}

const char* zero_copy_name(ZeroCopy z) {
  switch (z) {
    case ZeroCopy::kOn:
      return "on";
    case ZeroCopy::kOff:
      return "off";
    case ZeroCopy::kAuto:
      break;
  }
  return "auto";
}

bool set_config_value(Config* c, const std::string& key, const std::string& value,
                      std::string* error) {
  auto bad = [&](const std::string& want) {
    *error = "'" + key + " = " + value + "': expected " + want;
    return false;
  };
  if (key == "netdev") {
    if (value.size() >= BURST_CTL_IFNAME_LEN) return bad("an interface name (< 16 characters)");
    c->netdev = value;
  } else if (key == "backend") {
    if (value == "xdp") {
      c->backend = BackendKind::kXdp;
    } else if (value == "loopback") {
      c->backend = BackendKind::kLoopback;
    } else if (value == "dpdk") {
      if (!have_dpdk_backend()) {
        *error = "backend 'dpdk': " + port::missing_backend(port::Kind::kDpdk) +
                 "; use xdp or loopback";
        return false;
      }
      c->backend = BackendKind::kDpdk;
    } else {
      return bad("xdp, dpdk or loopback");
    }
  } else if (key == "workers") {
    if (!parse_u32(value, 1, BURST_CTL_MAX_WORKERS, 10, &c->workers)) {
      return bad("a number of worker threads, 1.." + std::to_string(BURST_CTL_MAX_WORKERS));
    }
  } else if (key == "socket") {
    if (value.empty() || value[0] != '/' || value.size() >= BURST_CTL_PATH_LEN) {
      return bad("an absolute path shorter than " + std::to_string(BURST_CTL_PATH_LEN) + " bytes");
    }
    c->socket_path = value;
  } else if (key == "socket_mode") {
    if (!parse_u32(value, 0, 0777, 8, &c->socket_mode)) return bad("an octal mode like 0666");
  } else if (key == "socket_owner" || key == "socket_group" || key == "admin_group") {
    if (value.find_first_of(" \t:/") != std::string::npos || value.size() > 64)
      return bad("a user or group name, or a numeric id");
    (key == "socket_owner" ? c->socket_owner
     : key == "socket_group" ? c->socket_group
                             : c->admin_group) = value;
  } else if (key == "max_qps_per_user" || key == "max_cqs_per_user" ||
             key == "max_mrs_per_user" || key == "max_pds_per_user") {
    uint32_t* f = key == "max_qps_per_user"   ? &c->max_qps_per_user
                  : key == "max_cqs_per_user" ? &c->max_cqs_per_user
                  : key == "max_mrs_per_user" ? &c->max_mrs_per_user
                                              : &c->max_pds_per_user;
    if (!parse_u32(value, 0, 1u << 24, 10, f)) return bad("0 (no cap) .. 16777216");
  } else if (key == "client_check_ms") {
    if (!parse_u32(value, 10, 10'000, 10, &c->client_check_ms)) return bad("milliseconds, 10..10000");
  } else if (key == "drop_caps") {
    if (value == "on") {
      c->drop_caps = true;
    } else if (value == "off") {
      c->drop_caps = false;
    } else {
      return bad("on or off");
    }
  } else if (key == "xdp_mode") {
    if (value == "auto") {
      c->xdp_mode = XdpMode::kAuto;
    } else if (value == "native") {
      c->xdp_mode = XdpMode::kNative;
    } else if (value == "generic") {
      c->xdp_mode = XdpMode::kGeneric;
    } else {
      return bad("auto, native or generic");
    }
  } else if (key == "zero_copy") {
    if (value == "auto") {
      c->zero_copy = ZeroCopy::kAuto;
    } else if (value == "on") {
      c->zero_copy = ZeroCopy::kOn;
    } else if (value == "off") {
      c->zero_copy = ZeroCopy::kOff;
    } else {
      return bad("auto, on or off");
    }
  } else if (key == "memory") {
    if (value == "cma") {
      c->memory_mode = BURST_CTL_MEM_CMA;
    } else if (value == "shm") {
      c->memory_mode = BURST_CTL_MEM_SHM;
    } else if (value == "kmod") {
      *error = "memory = kmod needs the kernel assistant, which is not available yet";
      return false;
    } else {
      return bad("cma or shm");
    }
  } else if (key == "mtu") {
    if (!parse_u32(value, 576, 9000, 10, &c->mtu)) return bad("an L3 MTU, 576..9000");
  } else if (key == "window") {
    if (!parse_u32(value, 16, 1u << 16, 10, &c->window_pkts)) return bad("packets, 16..65536");
  } else if (key == "xdp_frames") {
    if (!parse_u32(value, 512, 1u << 18, 10, &c->xdp_frames) || (c->xdp_frames & (c->xdp_frames - 1)))
      return bad("a power of two, 512..262144");
  } else if (key == "idle_sleep_max_us") {
    if (!parse_u32(value, 0, 100'000, 10, &c->idle_sleep_max_us)) {
      return bad("microseconds, 0..100000");
    }
  } else if (key == "command_timeout_ms") {
    if (!parse_u32(value, 10, 60'000, 10, &c->command_timeout_ms)) {
      return bad("milliseconds, 10..60000");
    }
  } else if (key == "max_clients") {
    if (!parse_u32(value, 1, 65'536, 10, &c->max_clients)) return bad("1..65536");
  } else if (key == "dpdk_port") {
    if (value.empty() || value.find_first_of(" \t") != std::string::npos)
      return bad("DPDK devargs without spaces (net_af_packet0,iface=eth0 or 0000:3b:00.0)");
    c->dpdk_port = value;
  } else if (key == "dpdk_eal") {
    c->dpdk_eal = value;
  } else if (key == "dpdk_hugepages") {
    if (value == "auto") {
      c->dpdk_hugepages = Hugepages::kAuto;
    } else if (value == "on") {
      c->dpdk_hugepages = Hugepages::kOn;
    } else if (value == "off") {
      c->dpdk_hugepages = Hugepages::kOff;
    } else {
      return bad("auto, on or off");
    }
  } else if (key == "dpdk_flow") {
    if (value == "on") {
      c->dpdk_flow = true;
    } else if (value == "off") {
      c->dpdk_flow = false;
    } else {
      return bad("on or off");
    }
  } else if (key == "address") {
    std::vector<std::string> list;
    size_t pos = 0;
    while (pos <= value.size()) {
      size_t comma = value.find(',', pos);
      if (comma == std::string::npos) comma = value.size();
      std::string item = value.substr(pos, comma - pos);
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      const size_t slash = item.find('/');
      in_addr a{};
      uint32_t len = 32;
      if (item.empty() || inet_pton(AF_INET, item.substr(0, slash).c_str(), &a) != 1 ||
          (slash != std::string::npos &&
           !parse_u32(item.substr(slash + 1), 1, 32, 10, &len)))
        return bad("IPv4 addresses with prefix length, comma-separated (10.0.0.1/24); IPv6 "
                   "needs neighbour discovery, which burst does not do itself yet");
      list.push_back(item.substr(0, slash) + "/" + std::to_string(len));
      pos = comma + 1;
    }
    c->addresses = list;
  } else if (key == "log_level") {
    LogLevel l;
    if (!parse_log_level(value, &l)) return bad("error, warning, info or debug");
    c->log_level = value;
  } else {
    *error = "unknown key '" + key + "'";
    return false;
  }
  return true;
}

bool load_config(const std::string& path, bool required, Config* c, bool* missing,
                 std::string* error) {
  *missing = false;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    const int e = errno;
    if (e == ENOENT && !required) {
      *missing = true;
      return true;
    }
    *error = "cannot read config file " + path + ": " + std::strerror(e);
    return false;
  }
  Config parsed = *c;
  ParseState st{&parsed, "", path};
  const int line = ini_parse_file(f, on_entry, &st);
  std::fclose(f);
  if (line != 0) {
    *error = path + ":" + std::to_string(line) + ": " +
             (st.error.empty() ? std::string("syntax error (expected key = value)") : st.error);
    return false;
  }
  *c = parsed;
  return true;
}

bool validate_config(const Config& c, std::string* error) {
  if (c.backend == BackendKind::kXdp && c.netdev.empty()) {
    *error =
        "backend xdp needs a netdev: set 'netdev = IF' in the config file or pass --netdev IF "
        "(or use --backend loopback)";
    return false;
  }
  if (c.backend == BackendKind::kDpdk && c.dpdk_port.empty() && c.netdev.empty()) {
    *error =
        "backend dpdk needs a port: set 'dpdk_port = DEVARGS' (e.g. net_memif0,role=server or a "
        "PCI address) or 'netdev = IF' (then net_af_packet on IF)";
    return false;
  }
  if (c.backend == BackendKind::kDpdk && c.netdev.empty() && c.addresses.empty()) {
    *error =
        "backend dpdk on a port without a kernel netdev needs its addresses: set "
        "'address = A.B.C.D/LEN' (or 'netdev = IF' when a kernel netdev stands behind the port)";
    return false;
  }
  if (c.workers == 0 || c.workers > BURST_CTL_MAX_WORKERS) {
    *error = "workers must be 1.." + std::to_string(BURST_CTL_MAX_WORKERS);
    return false;
  }
  return true;
}

}  // namespace burst::burstd
