// burstctl: the operator's tool for burst.
//   burstctl run [--netdev IF] [--root DIR] [--provider PATH] -- COMMAND [ARGS...]
//       runs an unmodified verbs application with the burst device burst0
//       visible on a kernel without RDMA support (see run.h).
// status / devices / qps / workers / counters come with burstd.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "tools/burstctl/run.h"

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
      app.add_subcommand("run", "run COMMAND with the burst device burst0 visible to libibverbs");
  run->add_option("--netdev", run_opts.netdev,
                  "the port's network interface (default: the only Ethernet interface up)");
  run->add_option("--root", run_opts.root,
                  "write the sysfs tree here and keep it (default: a private temporary "
                  "directory, removed afterwards)");
  run->add_option("--provider", run_opts.provider,
                  "the provider library, libburst-rdmav34.so (default: $BURST_PROVIDER, else "
                  "this build's)");
  run->add_option("command", run_opts.command,
                  "the command and its arguments (after --, when it has options of its own)");

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
    if (*run) return burst::tools::run_command(run_opts);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "burstctl: %s\n", e.what());
    return burst::tools::kExitSetupFailed;
  }
  return burst::tools::kExitSetupFailed;
}
