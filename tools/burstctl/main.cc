// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burstctl: the operator's tool for burst.
//   burstctl run [--netdev IF] [--root DIR] [--provider PATH] [--socket PATH]
//                [--socket-dir DIR] [--no-sysfs-mount] [--traffic-class N] -- COMMAND [ARGS...]
//       runs an unmodified verbs application with the burst devices burst0,
//       burst1, ... (one per burstd found, discover.h) visible on a kernel
//       without RDMA support (see run.h).
//   burstctl [--socket PATH] [--socket-dir DIR] devices [--json]
//       every burstd of the socket directory: device, netdev, socket, backend,
//       state; with --socket (or $BURST_SOCKET) that one burstd in detail.
//   burstctl [--socket PATH] status|workers|counters|qps [--json]
//       what a running burstd reports (see queries.h); the socket defaults to
//       $BURST_SOCKET, else /run/burst/burstd.sock, else the only socket of the
//       socket directory (several: burstctl names them and asks for --socket).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "abi/burst_ctl_proto.h"
#include "tools/burstctl/run.h"
#include "tools/burstctl/queries.h"

int main(int argc, char** argv) {
  // Everything after the first "--" is the command, passed through untouched
  // (its own options included); CLI11 sees only what comes before.
  std::vector<std::string> tail;
  int cli_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      cli_argc = i;
      tail.assign(argv + i + 1, argv + argc);
      break;
    }
  }

  CLI::App app{"burstctl: control and inspect burst"};
  app.require_subcommand(1);

  burst::tools::RunOptions run_opts;
  CLI::App* run =
      app.add_subcommand("run", "run COMMAND with the burst devices (burst0, burst1, ...: one per "
                                "burstd) visible to libibverbs");
  run->add_option("--netdev", run_opts.netdev,
                  "only the device of this network interface (default: the device of every "
                  "burstd found; none found: the only Ethernet interface up)");
  run->add_option("--root", run_opts.root,
                  "write the sysfs tree here and keep it (default: a private temporary "
                  "directory, removed afterwards)");
  run->add_option("--provider", run_opts.provider,
                  "the provider library, libburst-rdmav34.so (default: $BURST_PROVIDER, else "
                  BURST_PROVIDER_DEFAULT "-rdmav34.so)");
  run->add_option("--socket", run_opts.socket,
                  "only this burstd's control socket, passed to COMMAND as $" BURST_CTL_SOCKET_ENV
                  " (default: $" BURST_CTL_SOCKET_ENV
                  " as inherited, else every socket of the socket directory)");
  run->add_option("--socket-dir", run_opts.socket_dir,
                  "where to look for burstd sockets when --socket is not given (default: "
                  "$BURST_SOCKET_DIR, else /run/burst)");
  run->add_flag("--no-sysfs-mount", run_opts.no_sysfs_mount,
                "leave /sys as it is: only SYSFS_PATH readers (libibverbs) find the device, "
                "not UCX, NCCL, Open MPI or Mooncake, which read /sys/class/infiniband");
  run->add_option("--traffic-class", run_opts.traffic_class,
                  "write tc/1/traffic_class \"Global tclass=N\" (the traffic class UCX uses "
                  "by default, as MLNX_OFED's file; default: no tc/ directory, as upstream "
                  "kernels)")
      ->check(CLI::Range(0, 255));
  run->add_option("command", run_opts.command,
                  "the command and its arguments (after --, when it has options of its own)");

  // Views of a running burstd. --socket may come before or after the subcommand.
  burst::tools::StatusOptions status_opts;
  app.add_option("--socket", status_opts.socket,
                 "burstd's control socket (default: $BURST_SOCKET, else " BURST_CTL_DEFAULT_SOCKET
                 ")");
  app.add_option("--socket-dir", status_opts.socket_dir,
                 "where devices and run look for burstd sockets (default: $BURST_SOCKET_DIR, "
                 "else /run/burst)");
  app.fallthrough();
  struct View {
    const char* name;
    const char* help;
    burst::tools::StatusView view;
    CLI::App* cmd = nullptr;
  };
  View views[] = {
      {"status", "burstd: backend, XDP mode, queues, workers, memory mode, clients",
       burst::tools::StatusView::kStatus},
      {"devices", "every burstd: device, netdev, socket, backend, state (--socket: one, in detail)",
       burst::tools::StatusView::kDevices},
      {"workers", "per worker: queues, QPs, loops, packets, handoff",
       burst::tools::StatusView::kWorkers},
      {"counters", "transport counters, every drop reason by name",
       burst::tools::StatusView::kCounters},
      {"qps", "QPs: worker, type, state, PSNs, owner (the first 100; --all)", burst::tools::StatusView::kQps},
  };
  for (View& v : views) {
    v.cmd = app.add_subcommand(v.name, v.help);
    v.cmd->add_flag("--json", status_opts.json, "JSON for tools instead of a table");
  }
  views[3].cmd->add_option("--worker", status_opts.worker, "one worker instead of the sum");
  views[3].cmd->add_flag("--all", status_opts.all, "list zero counters too");
  views[4].cmd->add_flag("--all", status_opts.all, "list every QP (default: the first 100 and the total)");

  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : burst::tools::kExitSetupFailed;
  }
  if (!tail.empty()) {
    if (!run_opts.command.empty()) {
      std::fprintf(stderr, "burstctl run: give the command either before or after --, not both\n");
      return burst::tools::kExitSetupFailed;
    }
    run_opts.command = std::move(tail);
  }
  try {
    if (*run) {
      // `burstctl --socket PATH run ...` names the socket too.
      if (run_opts.socket.empty()) run_opts.socket = status_opts.socket;
      if (run_opts.socket_dir.empty()) run_opts.socket_dir = status_opts.socket_dir;
      return burst::tools::run_command(run_opts);
    }
    for (const View& v : views) {
      if (*v.cmd) return burst::tools::show_status(v.view, status_opts);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "burstctl: %s\n", e.what());
    return burst::tools::kExitSetupFailed;
  }
  return burst::tools::kExitSetupFailed;
}
