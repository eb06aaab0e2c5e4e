// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// net_probe: drives net/ from the shell for tests/netns/net/net_test.sh.
// Prints one JSON object per line.
//
//   net_probe query IFNAME
//       netdev, its addresses and its GID table
//   net_probe resolve IFNAME DST [--timeout-ms N] [--trigger auto|netlink|udp]
//       destination MAC of DST (IPv4 or IPv6 text) through IFNAME
//   net_probe srcgid IFNAME DST
//       source GID (and its index in the GID table) toward DST
//   net_probe watch IFNAME GID [--absent] [--timeout-ms N]
//       follows address changes until the GID table holds GID (lacks it with
//       --absent); prints "ready" once subscribed
//
// Exit: 0 success, 1 timeout (watch), 2 error from the library, 64 usage.
#include <poll.h>
#include <string.h>
#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "net/address_watcher.h"
#include "net/gid_table.h"
#include "net/neigh.h"
#include "net/netdev.h"

namespace {

using namespace burst::net;

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string gid_list(const std::vector<Gid>& gids) {
  std::string out = "[";
  for (size_t i = 0; i < gids.size(); ++i) {
    if (i != 0) out += ",";
    out += quote(gid_is_zero(gids[i]) ? "" : format_gid(gids[i]));
  }
  return out + "]";
}

int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

int fail(const Status& st, int64_t start_ms) {
  const char* name = strerrorname_np(st.code());
  std::printf("{\"type\":\"error\",\"errno\":%d,\"error\":%s,\"message\":%s,\"elapsed_ms\":%lld}\n",
              st.code(), quote(name != nullptr ? name : "?").c_str(), quote(st.message()).c_str(),
              static_cast<long long>(now_ms() - start_ms));
  return 2;
}

int usage() {
  std::fprintf(stderr,
               "usage: net_probe query IFNAME\n"
               "       net_probe resolve IFNAME DST [--timeout-ms N] [--trigger auto|netlink|udp]\n"
               "       net_probe srcgid IFNAME DST\n"
               "       net_probe watch IFNAME GID [--absent] [--timeout-ms N]\n");
  return 64;
}

int cmd_query(const std::string& ifname) {
  const int64_t start = now_ms();
  NetdevInfo info;
  Status st = query_netdev(ifname, &info);
  if (!st.ok()) return fail(st, start);
  std::printf(
      "{\"type\":\"netdev\",\"name\":%s,\"ifindex\":%u,\"link_type\":%u,\"mac\":%s,\"mtu\":%u,"
      "\"rx_queues\":%u,\"tx_queues\":%u,\"queues_from\":%s,\"operstate\":%s}\n",
      quote(info.name).c_str(), info.ifindex, info.link_type, quote(format_mac(info.mac)).c_str(),
      info.mtu, info.rx_queues, info.tx_queues,
      info.queues_from_ethtool ? "\"ethtool\"" : "\"rtnl\"",
      quote(operstate_name(info.operstate)).c_str());
  auto print_addrs = [](const char* family, const std::vector<IfAddress>& addrs) {
    for (const IfAddress& a : addrs) {
      std::printf(
          "{\"type\":\"addr\",\"family\":\"%s\",\"addr\":%s,\"prefix\":%u,\"scope\":%u,"
          "\"flags\":%u}\n",
          family, quote(format_gid(a.addr)).c_str(), a.prefix_len, a.scope, a.flags);
    }
  };
  print_addrs("inet", info.ipv4);
  print_addrs("inet6", info.ipv6);
  std::vector<Gid> table = build_gid_table(info);
  for (size_t i = 0; i < table.size(); ++i) {
    std::printf("{\"type\":\"gid\",\"index\":%zu,\"gid\":%s}\n", i,
                quote(format_gid(table[i])).c_str());
  }
  std::printf("{\"type\":\"gid_table\",\"gids\":%s}\n", gid_list(table).c_str());
  return 0;
}

int cmd_resolve(const std::string& ifname, const std::string& dst_text, int argc, char** argv) {
  ResolveOptions opt;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--timeout-ms" && i + 1 < argc) {
      opt.timeout_ms = std::atoi(argv[++i]);
    } else if (a == "--trigger" && i + 1 < argc) {
      std::string t = argv[++i];
      if (t == "auto") {
        opt.trigger = Trigger::kAuto;
      } else if (t == "netlink") {
        opt.trigger = Trigger::kNetlink;
      } else if (t == "udp") {
        opt.trigger = Trigger::kUdp;
      } else {
        return usage();
      }
    } else {
      return usage();
    }
  }
  const int64_t start = now_ms();
  Gid dst;
  if (!parse_gid(dst_text, &dst)) return usage();
  NetdevInfo info;
  Status st = query_netdev(ifname, &info);
  if (!st.ok()) return fail(st, start);
  MacAddr mac;
  ResolveInfo ri;
  st = resolve_neighbour(info.ifindex, dst, &mac, opt, &ri);
  if (!st.ok()) return fail(st, start);
  const char* used = ri.used == Trigger::kNetlink ? "netlink"
                     : ri.used == Trigger::kUdp   ? "udp"
                                                  : "";
  std::printf(
      "{\"type\":\"neigh\",\"dst\":%s,\"next_hop\":%s,\"mac\":%s,\"state\":%s,"
      "\"triggered\":%s,\"trigger\":\"%s\",\"elapsed_ms\":%d}\n",
      quote(format_gid(dst)).c_str(), quote(format_gid(ri.next_hop)).c_str(),
      quote(format_mac(mac)).c_str(), quote(nud_state_name(ri.state)).c_str(),
      ri.triggered ? "true" : "false", used, ri.elapsed_ms);
  return 0;
}

int cmd_srcgid(const std::string& ifname, const std::string& dst_text) {
  const int64_t start = now_ms();
  Gid dst;
  if (!parse_gid(dst_text, &dst)) return usage();
  NetdevInfo info;
  Status st = query_netdev(ifname, &info);
  if (!st.ok()) return fail(st, start);
  Gid src;
  st = local_gid_for(info.ifindex, dst, &src);
  if (!st.ok()) return fail(st, start);
  GidTable table;
  table.update(info);
  std::printf("{\"type\":\"srcgid\",\"dst\":%s,\"gid\":%s,\"index\":%d}\n",
              quote(format_gid(dst)).c_str(), quote(format_gid(src)).c_str(), table.find(src));
  return 0;
}

int cmd_watch(const std::string& ifname, const std::string& gid_text, int argc, char** argv) {
  bool absent = false;
  int timeout_ms = 5000;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--absent") {
      absent = true;
    } else if (a == "--timeout-ms" && i + 1 < argc) {
      timeout_ms = std::atoi(argv[++i]);
    } else {
      return usage();
    }
  }
  const int64_t start = now_ms();
  Gid want;
  if (!parse_gid(gid_text, &want)) return usage();
  AddressWatcher w;
  Status st = w.open(ifname);
  if (!st.ok()) return fail(st, start);
  std::printf("{\"type\":\"ready\",\"gids\":%s}\n", gid_list(w.gids().entries()).c_str());
  std::fflush(stdout);
  auto satisfied = [&] { return (w.gids().find(want) >= 0) != absent; };
  int changes = 0;
  while (!satisfied()) {
    int64_t left = start + timeout_ms - now_ms();
    if (left <= 0) {
      std::printf("{\"type\":\"timeout\",\"changes\":%d,\"gids\":%s}\n", changes,
                  gid_list(w.gids().entries()).c_str());
      return 1;
    }
    pollfd pfd{w.fd(), POLLIN, 0};
    int pr = poll(&pfd, 1, static_cast<int>(left));
    if (pr < 0 && errno != EINTR) return fail(Status::Error(errno, "poll"), start);
    if (pr <= 0) continue;
    bool gids_changed = false;
    bool link_changed = false;
    st = w.poll_changes(&gids_changed, &link_changed);
    if (!st.ok()) return fail(st, start);
    if (gids_changed || link_changed) {
      ++changes;
      std::printf("{\"type\":\"change\",\"gids_changed\":%s,\"link_changed\":%s,\"gids\":%s}\n",
                  gids_changed ? "true" : "false", link_changed ? "true" : "false",
                  gid_list(w.gids().entries()).c_str());
      std::fflush(stdout);
    }
  }
  std::printf("{\"type\":\"done\",\"index\":%d,\"elapsed_ms\":%lld,\"gids\":%s}\n",
              w.gids().find(want), static_cast<long long>(now_ms() - start),
              gid_list(w.gids().entries()).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  std::string cmd = argv[1];
  std::string ifname = argv[2];
  int rc;
  if (cmd == "query" && argc == 3) {
    rc = cmd_query(ifname);
  } else if (cmd == "resolve" && argc >= 4) {
    rc = cmd_resolve(ifname, argv[3], argc - 4, argv + 4);
  } else if (cmd == "srcgid" && argc == 4) {
    rc = cmd_srcgid(ifname, argv[3]);
  } else if (cmd == "watch" && argc >= 4) {
    rc = cmd_watch(ifname, argv[3], argc - 4, argv + 4);
  } else {
    rc = usage();
  }
  std::fflush(stdout);
  return rc;
}
