// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "tools/burstctl/run.h"

#include <linux/netlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "abi/burst_ctl_proto.h"
#include "net/netdev.h"
#include "abi/burst_device.h"
#include "abi/burst_shim.h"
#include "tools/burstctl/discover.h"
#include "tools/burstctl/sysfs_mount.h"
#include "tools/burstctl/sysfs_tree.h"

namespace burst::tools {
namespace {

using net::Status;

constexpr char kProviderSuffix[] = "-rdmav34.so";  // appended by libibverbs
constexpr int kMaxUverbsNodes = 64;

void err(const std::string& msg) { fprintf(stderr, "burstctl run: %s\n", msg.c_str()); }

// The only Ethernet netdev that is up (loopback aside).
Status default_netdev(std::string* out) {
  struct if_nameindex* list = if_nameindex();
  if (list == nullptr) return Status::Error(errno, net::errno_message("if_nameindex", errno));
  std::vector<std::string> up;
  for (struct if_nameindex* i = list; i->if_index != 0; ++i) {
    net::NetdevInfo nd;
    if (!net::query_netdev(i->if_index, &nd).ok()) continue;
    if (nd.link_type == ARPHRD_ETHER && (nd.flags & IFF_UP) && !(nd.flags & IFF_LOOPBACK)) {
      up.push_back(nd.name);
    }
  }
  if_freenameindex(list);
  if (up.size() == 1) {
    *out = up[0];
    return Status::Ok();
  }
  if (up.empty()) {
    return Status::Error(ENODEV,
                         "no Ethernet interface is up in this network namespace; "
                         "name one with --netdev");
  }
  std::string names;
  for (const std::string& n : up) names += (names.empty() ? "" : ", ") + n;
  return Status::Error(
      EINVAL, "several Ethernet interfaces are up (" + names + "): name one with --netdev");
}

// Finds or creates `count` nodes /dev/infiniband/uverbsN that are the burst
// character device (one per device: libibverbs opens the node of the device).
Status ensure_uverbs_nodes(size_t count, std::vector<std::string>* uverbs) {
  const dev_t want = makedev(BURST_UVERBS_CDEV_MAJOR, BURST_UVERBS_CDEV_MINOR);
  const std::string dir = BURST_CDEV_DIR;
  for (int n = 0; n < kMaxUverbsNodes && uverbs->size() < count; ++n) {
    const std::string name = "uverbs" + std::to_string(n);
    const std::string path = dir + "/" + name;
    for (int attempt = 0; attempt < 2; ++attempt) {
      struct stat st;
      if (stat(path.c_str(), &st) == 0) {
        if (!S_ISCHR(st.st_mode) || st.st_rdev != want) break;  // someone else's: next N
        if (access(path.c_str(), R_OK | W_OK) != 0) {
          return Status::Error(errno, path +
                                          " exists but this user cannot open it read-write "
                                          "(make it mode 0666, as /dev/full is)");
        }
        uverbs->push_back(name);
        break;
      }
      if (errno != ENOENT) return Status::Error(errno, net::errno_message("stat " + path, errno));
      if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        return Status::Error(errno, net::errno_message("mkdir " + dir, errno));
      }
      if (mknod(path.c_str(), S_IFCHR | 0666, want) == 0) {
        chmod(path.c_str(), 0666);  // not subject to the umask
        fprintf(stderr, "burstctl run: created %s (character device %d:%d, as /dev/full)\n",
                path.c_str(), BURST_UVERBS_CDEV_MAJOR, BURST_UVERBS_CDEV_MINOR);
        uverbs->push_back(name);
        break;
      }
      if (errno != EEXIST) {  // EEXIST: created concurrently, look again
        return Status::Error(errno, net::errno_message("cannot create " + path +
                                                           " (character device 1:7, as "
                                                           "/dev/full; libibverbs lists a device "
                                                           "only when its node exists; run "
                                                           "burstctl once as root)",
                                                       errno));
      }
    }
  }
  if (uverbs->size() < count) {
    return Status::Error(EEXIST, "not enough free /dev/infiniband/uverbsN names (N < 64)");
  }
  return Status::Ok();
}

// The provider path libibverbs gets in RDMAV_DRIVERS: absolute, without the suffix.
Status resolve_provider(const std::string& given, std::string* out) {
  std::string p = given;
  if (p.empty()) {
    const char* env = getenv("BURST_PROVIDER");
    p = env != nullptr ? env : BURST_PROVIDER_DEFAULT;
  }
  const size_t sl = sizeof(kProviderSuffix) - 1;
  if (p.size() > sl && p.compare(p.size() - sl, sl, kProviderSuffix) == 0) p.resize(p.size() - sl);
  const std::string file = p + kProviderSuffix;
  char abs[PATH_MAX];
  if (realpath(file.c_str(), abs) == nullptr) {
    return Status::Error(errno, net::errno_message("provider " + file, errno));
  }
  std::string a = abs;
  *out = a.substr(0, a.size() - sl);
  return Status::Ok();
}

// The completion-channel shim preloaded into the command (provider/shim):
// $BURST_SHIM if set (empty: none), else libburst-shim.so in the provider's
// directory. Absolute; empty when there is none to preload (with a warning:
// everything but completion channels works without it).
std::string resolve_shim(const std::string& provider) {
  std::string p;
  if (const char* env = getenv(BURST_SHIM_ENV); env != nullptr) {
    if (env[0] == '\0') return "";
    p = env;
  } else {
    const size_t slash = provider.rfind('/');
    p = (slash == std::string::npos ? std::string(".") : provider.substr(0, slash)) + "/" +
        BURST_SHIM_LIBRARY_NAME;
  }
  char abs[PATH_MAX];
  if (realpath(p.c_str(), abs) == nullptr) {
    err("warning: " + net::errno_message("completion-channel shim " + p, errno) +
        " (build the burst_shim target); ibv_create_comp_channel will fail");
    return "";
  }
  std::string a = abs;
  if (a.find_first_of(": ") != std::string::npos) {  // LD_PRELOAD's separators
    err("warning: cannot preload " + a +
        " (a ':' or ' ' in its path); ibv_create_comp_channel will fail");
    return "";
  }
  return a;
}

// Puts lib first in LD_PRELOAD, keeping what is there (unless it is there already).
void preload(const std::string& lib) {
  const char* old = getenv("LD_PRELOAD");
  const std::string v = old != nullptr ? old : "";
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t end = v.find_first_of(": ", pos);
    if (end == std::string::npos) end = v.size();
    if (v.compare(pos, end - pos, lib) == 0 && end - pos == lib.size()) return;
    pos = end + 1;
  }
  setenv("LD_PRELOAD", (v.empty() ? lib : lib + ":" + v).c_str(), 1);
}

// On a kernel with ib_core, libibverbs lists devices over netlink and never
// reads SYSFS_PATH: the device would be invisible.
void warn_if_kernel_rdma() {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
  if (fd < 0) return;
  close(fd);
  err("warning: this kernel has RDMA support (NETLINK_RDMA answers); libibverbs will list "
      "its devices over netlink and ignore SYSFS_PATH, so burst0 is not visible this way");
}

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// In the command's process, before exec: the tree at /sys/class (sysfs_mount.h),
// or one warning line saying why not.
void show_tree(const std::string& root, const std::string& ibdev) {
  SysfsMountMode mode;
  if (Status s = show_tree_at_sys_class(root, &mode); !s.ok()) {
    err("warning: " + s.message() + "; " + ibdev +
        " is visible through SYSFS_PATH (libibverbs) only, not at /sys/class/infiniband "
        "(where UCX, NCCL, Open MPI and Mooncake look)");
  }
}

// Runs the command with the environment set; returns its exit status. With a
// mount_root, the command sees that tree at /sys/class/infiniband{,_verbs}.
int spawn_and_wait(const std::vector<std::string>& command, const std::string& mount_root,
                   const std::string& ibdev) {
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    err(net::errno_message("fork", errno));
    return kExitSetupFailed;
  }
  if (pid == 0) {
    if (!mount_root.empty()) show_tree(mount_root, ibdev);
    execvp(argv[0], argv.data());
    const int e = errno;
    fprintf(stderr, "burstctl run: %s: %s\n", argv[0], strerror(e));
    _exit(e == ENOENT ? kExitNotFound : kExitCannotExecute);
  }
  g_child = pid;
  // Like system(): the terminal's SIGINT/SIGQUIT reach the command directly;
  // SIGTERM/SIGHUP sent to burstctl are passed on, so the tree is still removed.
  struct sigaction ign = {};
  struct sigaction fwd = {};
  struct sigaction old_int, old_quit, old_term, old_hup;
  ign.sa_handler = SIG_IGN;
  fwd.sa_handler = forward_signal;
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  sigaction(SIGTERM, &fwd, &old_term);
  sigaction(SIGHUP, &fwd, &old_hup);

  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);

  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  g_child = 0;
  if (r < 0) {
    err(net::errno_message("waitpid", errno));
    return kExitSetupFailed;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitSetupFailed;
}

void prepend_env(const char* var, const std::string& value) {
  const char* old = getenv(var);
  const std::string v = old != nullptr && old[0] != '\0' ? value + ":" + old : value;
  setenv(var, v.c_str(), 1);
}

// One device of the run: its netdev and its burstd's socket ("" = the
// provider's default: $BURST_SOCKET, else BURST_CTL_DEFAULT_SOCKET).
struct RunDevice {
  std::string netdev;
  std::string socket;
  std::string ibdev;  // its device_name when pinned, else "" (named by position: burstN)
};

// --socket (or $BURST_SOCKET): that burstd only; its netdev from HELLO unless
// --netdev names it. A burstd that does not answer (yet) is not fatal.
Status one_socket(const RunOptions& o, const std::string& given, std::vector<RunDevice>* out) {
  std::string sock;
  if (Status s = absolute_path(given, &sock); !s.ok()) return s;
  struct stat st;
  if (stat(sock.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    // The provider reports it when the application opens the device.
    err("warning: no burstd socket at " + sock + " (yet)");
  }
  std::string netdev = o.netdev;
  const Burstd b = probe_burstd(sock);
  if (netdev.empty()) {
    if (b.answered && !b.netdev.empty()) {
      netdev = b.netdev;
    } else if (Status s = default_netdev(&netdev); !s.ok()) {
      return Status::Error(s.code(), s.message() + " (burstd at " + sock + ": " +
                                         (b.answered ? "serves no netdev" : b.error) + ")");
    }
  }
  out->push_back({netdev, sock, b.answered ? b.pinned : std::string()});
  return Status::Ok();
}

// The devices of this run (discover.h): every burstd of the socket directory,
// or the one --socket / $BURST_SOCKET / --netdev names. With no burstd found,
// as before: the only Ethernet interface up (or --netdev) and the default socket.
Status choose_devices(const RunOptions& o, std::vector<RunDevice>* out) {
  std::string given = o.socket;
  if (const char* env = getenv(BURST_CTL_SOCKET_ENV); given.empty() && env != nullptr) given = env;
  if (!given.empty()) return one_socket(o, given, out);
  std::vector<std::string> skipped;
  const std::vector<Burstd> found = discover_burstd(socket_dir(o.socket_dir), &skipped);
  for (const std::string& why : skipped) err("note: " + why + ": not listed");
  for (const Burstd& b : found) {
    // Restricted to one netdev: that device is burst0 unless pinned (docs/devices.md).
    if (o.netdev.empty()) out->push_back({b.netdev, b.socket, b.ibdev});
    if (!o.netdev.empty() && b.netdev == o.netdev) out->push_back({b.netdev, b.socket, b.pinned});
  }
  if (!out->empty()) return Status::Ok();
  if (!found.empty()) {
    err("note: no burstd in " + socket_dir(o.socket_dir) + " serves " + o.netdev +
        "; the provider uses $" BURST_CTL_SOCKET_ENV " or " BURST_CTL_DEFAULT_SOCKET);
  }
  std::string netdev = o.netdev;
  if (netdev.empty()) {
    if (Status s = default_netdev(&netdev); !s.ok()) return s;
  }
  out->push_back({netdev, "", ""});
  return Status::Ok();
}

// The tree's root: --root (kept) or a private temporary directory; absolute.
Status make_root(const RunOptions& o, std::string* root) {
  std::string r = o.root;
  if (r.empty()) {
    const char* tmp = getenv("TMPDIR");
    r = std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/burst-sysfs.XXXXXX";
    if (mkdtemp(r.data()) == nullptr) {
      return Status::Error(errno, net::errno_message("mkdtemp " + r, errno));
    }
    chmod(r.c_str(), 0755);  // readable by a command that drops privileges
  } else if (mkdir(r.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Error(errno, net::errno_message("mkdir " + r, errno));
  }
  char abs_root[PATH_MAX];
  if (realpath(r.c_str(), abs_root) == nullptr) {
    const int e = errno;
    if (o.root.empty()) rmdir(r.c_str());
    return Status::Error(e, net::errno_message("realpath " + r, e));
  }
  *root = abs_root;
  return Status::Ok();
}

// A device's name: pinned or from discovery, else burst0, burst1, ... in the order given.
std::string device_name(const std::vector<RunDevice>& devs, size_t i) {
  return devs[i].ibdev.empty() ? BURST_IBDEV_PREFIX + std::to_string(i) : devs[i].ibdev;
}

// Describes every device under root.
Status write_trees(const RunOptions& o, const std::vector<RunDevice>& devs,
                   const std::vector<std::string>& uverbs, const std::string& root) {
  for (size_t i = 0; i < devs.size(); ++i) {
    net::NetdevInfo nd;
    if (Status s = net::query_netdev(devs[i].netdev, &nd); !s.ok()) return s;
    if (nd.link_type != ARPHRD_ETHER) {
      return Status::Error(EINVAL, "netdev '" + devs[i].netdev +
                                       "' is not an Ethernet interface (ARPHRD " +
                                       std::to_string(nd.link_type) + "): RoCE needs Ethernet");
    }
    SysfsDevice dev = describe_device(nd, device_name(devs, i), uverbs[i]);
    dev.nic.traffic_class = o.traffic_class;
    dev.socket = devs[i].socket;
    if (Status s = write_sysfs_tree(root, dev); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

int run_command(const RunOptions& o) {
  if (o.command.empty()) {
    err("no command given (burstctl run [options] -- COMMAND [ARGS...])");
    return kExitSetupFailed;
  }
  std::string provider;
  if (Status s = resolve_provider(o.provider, &provider); !s.ok()) {
    err(s.message() + " (build the burst_provider target, or point --provider at it)");
    return kExitSetupFailed;
  }
  const std::string shim = resolve_shim(provider);
  std::vector<RunDevice> devs;
  if (Status s = choose_devices(o, &devs); !s.ok()) {
    err(s.message());
    return kExitSetupFailed;
  }
  warn_if_kernel_rdma();
  std::vector<std::string> uverbs;
  if (Status s = ensure_uverbs_nodes(devs.size(), &uverbs); !s.ok()) {
    err(s.message());
    return kExitSetupFailed;
  }
  std::string root;
  if (Status s = make_root(o, &root); !s.ok()) {
    err(s.message());
    return kExitSetupFailed;
  }
  int rc = kExitSetupFailed;
  if (Status s = write_trees(o, devs, uverbs, root); !s.ok()) {
    err(s.message());
  } else {
    setenv("SYSFS_PATH", root.c_str(), 1);
    prepend_env("RDMAV_DRIVERS", provider);
    // The shim's rdma_cm channels and a provider reading no burst_socket file
    // talk to the first device's burstd.
    if (!devs[0].socket.empty()) setenv(BURST_CTL_SOCKET_ENV, devs[0].socket.c_str(), 1);
    if (!shim.empty()) preload(shim);
    rc = spawn_and_wait(o.command, o.no_sysfs_mount ? std::string() : root,
                        device_name(devs, 0));
  }
  if (o.root.empty()) {
    if (Status s = remove_tree(root); !s.ok()) err("cleanup: " + s.message());
  }
  return rc;
}

}  // namespace burst::tools
