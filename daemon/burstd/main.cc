// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burstd: the burst daemon. Runs in the foreground (systemd Type=notify), logs
// to stderr, serves the control socket, owns the datapath of one port.
//
//   burstd [--config FILE | --config-dir DIR] [--netdev IF] [--backend xdp|dpdk|loopback]
//          [--workers N] [--socket PATH] [--xdp-mode auto|native|generic]
//          [--log-level LEVEL] [--event-loop auto|uring|epoll]
//
// Configuration: --config FILE alone, or DIR/burstd.conf (default /etc/burst)
// then DIR/NETDEV.conf (the keys of that netdev), then the flags. Under systemd
// (burstd@NETDEV.service, packaging/systemd) it says READY=1, STATUS=,
// WATCHDOG=1 while its workers move (watchdog.h) and STOPPING=1 (notify.h).
//
// Exit status: 0 after SIGTERM/SIGINT, 1 when it cannot start (the reason is the
// last line on stderr), 2 for a bad command line.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "daemon/burstd/access.h"
#include "daemon/burstd/cm_service.h"
#include "daemon/burstd/config.h"
#include "daemon/burstd/control_socket.h"
#include "daemon/burstd/device.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/event_loop.h"
#include "daemon/burstd/kmod_device.h"
#include "daemon/burstd/log.h"
#include "daemon/burstd/privileges.h"
#include "daemon/burstd/resources.h"
#include "daemon/burstd/startup_checks.h"
#include "daemon/burstd/watchdog.h"
#include "daemon/ctl/ctl_codec.h"

#ifndef BURST_VERSION_STRING
#define BURST_VERSION_STRING "unknown"
#endif

namespace burst::burstd {
namespace {

// Every QP holds its ring region's memfd (and each CQ its own): thousands of
// connections need more descriptors than the usual soft limit of 1024. The
// soft limit goes up to the hard one (no privilege needed); logged once.
void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  const rlim_t was = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) == 0) {
    BURSTD_INFO("descriptors: soft limit %llu raised to the hard limit %llu",
                static_cast<unsigned long long>(was), static_cast<unsigned long long>(rl.rlim_max));
  }
}

int fail(const std::string& msg) {
  BURSTD_ERROR("%s", msg.c_str());
  return 1;
}

std::string describe(const Device& d) {
  const DeviceInfo& i = d.info();
  std::string s = i.ibdev + " on ";
  if (i.backend == BURST_CTL_BACKEND_DPDK) {
    s += "DPDK port " + i.dpdk_port + " (" + i.dpdk_driver + ")" +
         (i.netdev.empty() ? std::string(", no kernel netdev: ARP answered by burst")
                           : ", kernel netdev " + i.netdev);
  } else {
    s += i.netdev.empty() ? std::string("a loopback port")
                          : i.netdev + " (ifindex " + std::to_string(i.ifindex) + ")";
  }
  s += ", MAC " + net::format_mac(i.mac) + ", MTU " + std::to_string(i.mtu) + ", backend " +
       ctl::backend_name(i.backend);
  if (i.backend == BURST_CTL_BACKEND_XDP) {
    s += std::string(" (") + ctl::xdp_mode_name(i.xdp_mode) + ", " +
         (i.zero_copy ? "zero-copy" : "copy mode") + ", program id " +
         std::to_string(i.xdp_prog_id) + ")";
  }
  s += ", " + std::to_string(i.queues) + " queues, " + std::to_string(i.gids.size()) + " GIDs";
  for (uint32_t w = 0; w < i.worker_queues.size(); ++w) {
    s += w == 0 ? "; worker 0: queues " : ", worker " + std::to_string(w) + ": queues ";
    for (size_t q = 0; q < i.worker_queues[w].size(); ++q) {
      s += (q ? "," : "") + std::to_string(i.worker_queues[w][q]);
    }
  }
  return s;
}

// burstd.conf's socket_owner / socket_group (a name or a numeric id) and socket_mode.
bool socket_access(const Config& c, SocketAccess* a, std::string* error) {
  a->mode = c.socket_mode;
  a->owner_name = c.socket_owner;
  a->group_name = c.socket_group;
  if (!c.socket_owner.empty() && !resolve_user(c.socket_owner, &a->owner)) {
    *error = "'socket_owner = " + c.socket_owner +
             "': no such user (a user name from the passwd database, or a numeric uid)";
    return false;
  }
  if (!c.socket_group.empty() && !resolve_group(c.socket_group, &a->group)) {
    *error = "'socket_group = " + c.socket_group +
             "': no such group (a group name from the group database, or a numeric gid)";
    return false;
  }
  return true;
}

// The command line: the config's sources and the flags that override it.
struct Flags {
  ConfigSources sources;
  std::string backend, socket_path, xdp_mode, log_level, event_loop;
  uint32_t workers = 0;
};

// Parses argv into *f: -1 to go on, else the exit status (--help, --version, 2).
int parse_flags(int argc, char** argv, Flags* f) {
  CLI::App app{"burstd: the burst soft-RoCE daemon (runs in the foreground)"};
  app.add_option("--config", f->sources.file,
                 "one configuration file (instead of DIR/burstd.conf + DIR/NETDEV.conf)");
  app.add_option("--config-dir", f->sources.dir,
                 "read DIR/burstd.conf, then DIR/NETDEV.conf (the netdev's own keys)")
      ->capture_default_str();
  app.add_option("--netdev", f->sources.netdev, "the network interface that carries RoCE");
  app.add_option("--backend", f->backend, "datapath backend")
      ->check(CLI::IsMember({"xdp", "dpdk", "loopback"}));
  app.add_option("--workers", f->workers, "worker threads")
      ->check(CLI::Range(1, BURST_CTL_MAX_WORKERS));
  app.add_option("--socket", f->socket_path,
                 "control socket path (default " BURST_CTL_DEFAULT_SOCKET ")");
  app.add_option("--xdp-mode", f->xdp_mode, "XDP attach mode")
      ->check(CLI::IsMember({"auto", "native", "generic"}));
  app.add_option("--log-level", f->log_level, "error, warning, info or debug")
      ->check(CLI::IsMember({"error", "warning", "info", "debug"}));
  app.add_option("--event-loop", f->event_loop, "the control thread's loop")
      ->check(CLI::IsMember({"auto", "uring", "epoll"}));
  app.set_version_flag("--version", "burstd " BURST_VERSION_STRING);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return -1;
}

// The layered files, then the flags; checked. *read: the files that were read.
bool configure(const Flags& f, Config* config, std::vector<std::string>* read, std::string* err) {
  if (!load_layered_config(f.sources, config, read, err)) return false;
  const std::pair<const char*, const std::string*> overrides[] = {
      {"netdev", &f.sources.netdev}, {"backend", &f.backend},       {"socket", &f.socket_path},
      {"xdp_mode", &f.xdp_mode},     {"log_level", &f.log_level},   {"event_loop", &f.event_loop}};
  for (const auto& [key, value] : overrides) {
    if (value->empty()) continue;
    if (!set_config_value(config, key, *value, err)) return false;
    config->origin[key] = std::string("--") + key;
  }
  if (f.workers != 0) config->workers = f.workers;
  return validate_config(*config, err) && check_event_loop(*config, err) &&
         check_netdev(*config, err);
}

std::string files_text(const std::vector<std::string>& read) {
  if (read.empty()) return "no config file, defaults and flags";
  std::string s = "config ";
  for (size_t i = 0; i < read.size(); ++i) s += (i ? " + " : "") + read[i];
  return s;
}

// Serves until SIGTERM/SIGINT: the control loop over the open port.
int serve(const Config& config, Device& device, ControlSocket& sock) {
  UserLimits limits;
  limits.max_qps = config.max_qps_per_user;
  limits.max_cqs = config.max_cqs_per_user;
  limits.max_mrs = config.max_mrs_per_user;
  limits.max_pds = config.max_pds_per_user;
  Resources resources(device, config.command_timeout_ms, limits);
  Dispatcher dispatcher(config, device, resources);
  device.start();
  EventLoop loop(config, sock, dispatcher);
  CmService cm(device, device.gsi(), resources, loop);  // rdma_cm and the IB CM on QP1
  dispatcher.set_cm(&cm);
  Watchdog watchdog(device, loop,
                    "serving " + device.info().ibdev + " (" +
                        (config.netdev.empty() ? std::string("no netdev") : config.netdev) + ", " +
                        backend_kind_name(config.backend) + ", " +
                        std::to_string(device.workers()) + " workers) on " + sock.path());
  std::string err;
  int rc = 0;
  if (!loop.run(&err)) {
    BURSTD_ERROR("%s", err.c_str());
    rc = 1;
  }
  dispatcher.set_cm(nullptr);  // every session is closed: the CM goes first
  return rc;
}  // clients closed and their objects released while the workers still run

int run(int argc, char** argv) {
  block_signals();  // before any thread exists: signals go to the signalfd only
  Flags flags;
  if (const int rc = parse_flags(argc, argv, &flags); rc >= 0) return rc;
  Config config;
  std::vector<std::string> read;
  std::string err;
  if (!configure(flags, &config, &read, &err)) return fail(err);
  LogLevel level;
  parse_log_level(config.log_level, &level);
  set_log_level(level);
  BURSTD_INFO("burstd %s (pid %d): backend %s%s%s, %u workers, %s", BURST_VERSION_STRING,
              static_cast<int>(getpid()), backend_kind_name(config.backend),
              config.netdev.empty() ? "" : " on ", config.netdev.c_str(), config.workers,
              files_text(read).c_str());

  // One burstd per netdev, then the socket: a second daemon stops before touching the port.
  const int lock_fd = lock_netdev(config, kLockDir, &err);
  if (lock_fd == -1) return fail(err);
  SocketAccess access;
  if (!socket_access(config, &access, &err)) return fail(err);
  std::unique_ptr<ControlSocket> sock = ControlSocket::Bind(config.socket_path, access, &err);
  if (!sock) return fail(err);
  if (sock->replaced_stale())
    BURSTD_INFO("replaced the stale control socket %s", sock->path().c_str());

  raise_fd_limit();
  std::unique_ptr<Device> device = Device::Open(config, &err);
  if (!device) return fail(explain_port_error(config, err));
  BURSTD_INFO("%s", describe(*device).c_str());
  if (!device->info().notes.empty()) BURSTD_INFO("%s", device->info().notes.c_str());
  // The kernel's RDMA core: REGISTER needs CAP_NET_ADMIN, so before the drop.
  std::unique_ptr<KmodDevice> kmod;
  if (!setup_kmod(config, *device, &kmod, &err)) return fail(err);
  device->set_kmod(std::move(kmod));
  // The port is open and the socket bound: keep only what the run time needs,
  // before the workers exist (they inherit the control thread's sets).
  std::string caps;
  if (!drop_privileges(config, device->info().xdp_dispatcher, &caps, &err)) return fail(err);
  BURSTD_INFO("%s", caps.c_str());
  const int rc = serve(config, *device, *sock);
  device->stop();
  device.reset();  // workers, queues, then the XDP program is detached
  const std::string path = sock->path();
  sock.reset();
  BURSTD_INFO("stopped; control socket %s removed", path.c_str());
  if (lock_fd >= 0) close(lock_fd);
  return rc;
}

}  // namespace
}  // namespace burst::burstd

int main(int argc, char** argv) { return burst::burstd::run(argc, argv); }
