// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burst-xfer: perftest-style RDMA transfers over the burst transport, run
// in-process (no daemon): the demo and the native benchmark tool.
//   --backend loopback: both peers in this process on the loopback datapath.
//   --backend xdp:      one peer per host over AF_XDP; the server starts first,
//                       the client names the server's address as its last
//                       argument; setup runs over a TCP side channel.
//   --backend dpdk:     the same over a DPDK port (a vdev on --netdev, memif,
//                       tap or a PCI device; datapath/dpdk).
// It ends with one summary line: goodput, message rate, latency percentiles,
// verification result and drop counters.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "tools/burst-xfer/xfer.h"
#ifdef BURST_XFER_WITH_NET
#include "port/port.h"
#endif

namespace burst::tools {
int run_loopback(const Options& o);
#ifdef BURST_XFER_WITH_NET
int run_net(const Options& o);
int run_net_perftest(const Options& o);  // --peer perftest (perftest_compat.h)
#endif
}  // namespace burst::tools

int main(int argc, char** argv) {
  burst::tools::Options o;
  CLI::App app{"burst-xfer: RDMA transfers over the burst transport"};
  std::vector<std::string> backends = {"loopback"};
#ifdef BURST_XFER_WITH_NET
  for (burst::port::Kind k : {burst::port::Kind::kXdp, burst::port::Kind::kDpdk})
    if (burst::port::have_backend(k)) backends.push_back(burst::port::kind_name(k));
#endif
  app.add_option("--backend", o.backend, "datapath backend")->check(CLI::IsMember(backends));
  app.add_option("--op", o.op, "operation")
      ->check(CLI::IsMember({"write", "write_imm", "read", "send"}));
  app.add_option("--size", o.size, "message size in bytes")->check(CLI::Range(0, 1 << 30));
  app.add_option("--qps", o.qps, "queue pairs")->check(CLI::Range(1, 1024));
  app.add_option("--depth", o.depth, "outstanding messages per QP")->check(CLI::Range(1, 1024));
  app.add_option("--window", o.window, "unacknowledged packets per QP (default 256)")
      ->check(CLI::Range(1, 1 << 20));
  auto* it = app.add_option("--iters", o.iters, "messages to transfer in total");
  auto* du =
      app.add_option("--duration", o.duration_s, "seconds to run")->check(CLI::Range(0.0, 3600.0));
  it->excludes(du);
  app.add_option("--mtu", o.mtu, "RoCE path MTU")
      ->check(CLI::IsMember({256, 512, 1024, 2048, 4096}));
  app.add_flag("--verify", o.verify, "check every byte of every message");
  app.add_option("--lat-out", o.lat_out,
                 "requester: write every message's latency (ns, post to completion), one per "
                 "line, to this file");
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  app.add_option("--loss", o.loss, "loopback only: drop probability per frame")
      ->check(CLI::Range(0.0, 0.5));
#endif
  app.add_option("--netdev", o.netdev, "network backends: the interface to use");
  app.add_option("--workers", o.workers, "network backends: worker threads (one queue each)")
      ->check(CLI::Range(1, 64));
  app.add_flag("--spin", o.spin,
               "network backends: poll without ever yielding the CPU (a core per worker; what "
               "a busy-polling UDP ping-pong does)");
  app.add_option("--port", o.port, "TCP port of the side channel (default 18515)");
  app.add_option("--xdp-mode", o.xdp_mode, "xdp: native, generic or auto")
      ->check(CLI::IsMember({"auto", "native", "generic"}));
  app.add_option("--frames", o.frames,
                 "xdp: UMEM frames per queue, half for receive (default 16384: fewer socket "
                 "drops when the receiver falls behind)")
      ->check(CLI::Range(64, 1 << 20));
  app.add_option("--dpdk-port", o.dpdk_port,
                 "dpdk: the port's devargs (net_af_packet0,iface=IF / net_memif0,role=server,"
                 "socket=PATH / a PCI address); default net_af_packet on --netdev");
  app.add_option("--eal", o.eal, "dpdk: extra EAL arguments (one string)");
  app.add_option("--address", o.address,
                 "dpdk without --netdev: this port's IPv4 address A.B.C.D/LEN (burst answers ARP)");
  app.add_option("--port-mtu", o.port_mtu,
                 "dpdk without --netdev: the port's L3 MTU (default 1500, 9000 for --mtu 4096)")
      ->check(CLI::Range(576, 9000));
  std::string peer = "burst";
  app.add_option("--peer", peer,
                 "xdp: the other end's side channel: burst (burst-xfer) or perftest (a stock "
                 "ib_write_bw server; client role, --op write, one QP)")
      ->check(CLI::IsMember({"burst", "perftest"}));
  app.add_option("server", o.server, "client mode: the server's address");
  CLI11_PARSE(app, argc, argv);
  if (o.iters == 0 && o.duration_s == 0) o.duration_s = 5;
  burst::tools::install_signal_handlers();
  try {
    if (o.backend == "loopback") {
      if (!o.server.empty() || !o.netdev.empty()) {
        std::fprintf(stderr,
                     "burst-xfer: --backend loopback runs both peers in this process; "
                     "it takes no server address or --netdev\n");
        return 2;
      }
      return burst::tools::run_loopback(o);
    }
#ifdef BURST_XFER_WITH_NET
    if (peer == "perftest") return burst::tools::run_net_perftest(o);
    return burst::tools::run_net(o);
#else
    return 2;
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "burst-xfer: %s\n", e.what());
    return 1;
  }
}
