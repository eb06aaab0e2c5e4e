// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/privileges.h"

#include <cap-ng.h>
#include <dirent.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "daemon/burstd/log.h"

namespace burst::burstd {
namespace {

constexpr RuntimeCapability kNetAdminXdp = {
    CAP_NET_ADMIN,
    "detach the XDP program at shutdown (RTM_SETLINK); resolve a peer's MAC (RTM_NEWNEIGH)"};
constexpr RuntimeCapability kSysAdminXdpDispatcher = {
    CAP_SYS_ADMIN,
    "detach the XDP program from libxdp's dispatcher at shutdown (a new dispatcher is loaded, "
    "the other programs re-linked to it)"};
constexpr RuntimeCapability kNetAdminDpdkAfXdp = {
    CAP_NET_ADMIN, "net_af_xdp detaches its XDP program when the port closes (RTM_SETLINK)"};

// The handler other threads run is async-signal-safe: raw system calls only.
// A real-time signal nothing else in burstd (or DPDK) uses.
int drop_signal() { return SIGRTMIN + 3; }

// Written by the control thread before it signals, read by the handlers.
struct ThreadTarget {
  uint64_t keep = 0;    // permitted = effective; bounding when `bounds`
  bool bounds = false;  // drop the bounding set too (CAP_SETPCAP held)
  unsigned last_cap = 0;
  std::atomic<int> applied{0};  // written by the handlers, read by the control thread
  std::atomic<int> failed{0};
};
ThreadTarget g_target;
static_assert(std::atomic<int>::is_always_lock_free, "used in a signal handler");

// Brings the calling thread to g_target (runs in a signal handler).
void apply_in_this_thread(int) {
  const int saved_errno = errno;
  bool ok = true;
  if (g_target.bounds) {
    for (unsigned c = 0; c <= g_target.last_cap; ++c) {
      if ((g_target.keep >> c & 1) == 0 && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) ok = false;
    }
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; ++i) {
    data[i].permitted = data[i].effective = static_cast<uint32_t>(g_target.keep >> (32 * i));
  }
  if (syscall(SYS_capset, &hdr, data) != 0) ok = false;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ok = false;
  (ok ? g_target.applied : g_target.failed).fetch_add(1);
  errno = saved_errno;
}

unsigned last_cap() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  unsigned v = 0;
  if (in >> v && v < 64) return v;
  return CAP_LAST_CAP;
}

std::string cap_name(unsigned cap) {
  const char* n = capng_capability_to_name(cap);
  return n != nullptr ? std::string("cap_") + n : "cap_" + std::to_string(cap);
}

std::string names(uint64_t mask) {
  std::string s;
  for (unsigned c = 0; c < 64; ++c) {
    if ((mask >> c & 1) == 0) continue;
    if (!s.empty()) s += ",";
    s += cap_name(c);
  }
  return s.empty() ? "none" : s;
}

// One thread's credentials as /proc/self/task/TID/status shows them.
struct TaskCreds {
  uint64_t inh = 0, prm = 0, eff = 0, bnd = 0, amb = 0;
  int no_new_privs = -1;
};

bool read_task(pid_t tid, TaskCreds* out) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  if (!in) return false;
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    const char* v = line.c_str() + colon + 1;
    uint64_t* f = key == "CapInh"   ? &out->inh
                  : key == "CapPrm" ? &out->prm
                  : key == "CapEff" ? &out->eff
                  : key == "CapBnd" ? &out->bnd
                  : key == "CapAmb" ? &out->amb
                                    : nullptr;
    if (f != nullptr) {
      *f = std::strtoull(v, nullptr, 16);
      any = true;
    } else if (key == "NoNewPrivs") {
      out->no_new_privs = std::atoi(v);
    }
  }
  return any;
}

bool matches_target(const TaskCreds& c) {
  return c.prm == g_target.keep && c.eff == g_target.keep && c.inh == 0 && c.amb == 0 &&
         (!g_target.bounds || c.bnd == g_target.keep) && c.no_new_privs == 1;
}

std::vector<pid_t> task_ids() {
  std::vector<pid_t> ids;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return ids;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') ids.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  return ids;
}

// Threads that are not (yet) at the target; gone threads are not listed.
std::vector<pid_t> threads_off_target(std::string* detail) {
  std::vector<pid_t> off;
  for (pid_t tid : task_ids()) {
    TaskCreds c;
    if (!read_task(tid, &c)) continue;
    if (!matches_target(c)) {
      off.push_back(tid);
      char buf[160];
      std::snprintf(buf, sizeof(buf),
                    "thread %d: CapPrm %016llx CapEff %016llx CapBnd %016llx NoNewPrivs %d", tid,
                    static_cast<unsigned long long>(c.prm), static_cast<unsigned long long>(c.eff),
                    static_cast<unsigned long long>(c.bnd), c.no_new_privs);
      *detail = buf;
    }
  }
  return off;
}

// The other threads of the process (the DPDK EAL's) apply the target
// themselves: capabilities are per thread and capset(2) changes the caller only.
bool apply_in_other_threads(std::string* error) {
  struct sigaction sa {};
  sa.sa_handler = apply_in_this_thread;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(drop_signal(), &sa, nullptr) != 0) {
    *error = std::string("sigaction: ") + std::strerror(errno);
    return false;
  }
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  std::string detail;
  bool ok = false;
  for (int round = 0; round < 3; ++round) {
    const std::vector<pid_t> off = threads_off_target(&detail);
    if (off.empty()) {
      ok = true;
      break;
    }
    int sent = 0;
    const int before = g_target.applied.load() + g_target.failed.load();
    for (pid_t tid : off) {
      if (tid == self) continue;  // applied with libcap-ng already: checked below
      if (syscall(SYS_tgkill, getpid(), tid, drop_signal()) == 0) ++sent;
    }
    if (sent == 0) break;  // only this thread is off target
    for (int i = 0; i < 2000 && g_target.applied.load() + g_target.failed.load() - before < sent;
         ++i) {
      const timespec ms{0, 1'000'000};
      nanosleep(&ms, nullptr);
    }
  }
  // A signal still pending somewhere is discarded, never fatal.
  signal(drop_signal(), SIG_IGN);
  if (!ok) {
    *error = "cannot drop the capabilities of every thread (" + detail +
             "): set drop_caps = off to run with every capability burstd started with";
  }
  return ok;
}

}  // namespace

std::vector<RuntimeCapability> runtime_capabilities(const Config& config, bool xdp_dispatcher) {
  std::vector<RuntimeCapability> out;
  switch (config.backend) {
    case BackendKind::kXdp:
      out.push_back(kNetAdminXdp);
      if (xdp_dispatcher) out.push_back(kSysAdminXdpDispatcher);
      break;
    case BackendKind::kDpdk:
      // net_af_packet (the default on a netdev), memif, ring, PCI: nothing. A
      // peer's MAC on a kernel netdev is then asked for with neigh.cc's UDP
      // trigger instead of RTM_NEWNEIGH.
      if (config.dpdk_port.rfind("net_af_xdp", 0) == 0) out.push_back(kNetAdminDpdkAfXdp);
      break;
    case BackendKind::kLoopback:
      break;
  }
  return out;
}

bool drop_privileges(const Config& config, bool xdp_dispatcher, std::string* summary,
                     std::string* error) {
  capng_clear(CAPNG_SELECT_ALL);
  if (capng_get_caps_process() != 0) {
    *error = std::string("cannot read burstd's capabilities: ") + std::strerror(errno);
    return false;
  }
  if (!config.drop_caps) {
    uint64_t eff = 0;
    for (unsigned c = 0; c <= last_cap(); ++c) {
      if (capng_have_capability(CAPNG_EFFECTIVE, c)) eff |= uint64_t{1} << c;
    }
    char hex[24];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(eff));
    *summary = std::string("capabilities after start-up: all kept (drop_caps = off; effective ") +
               hex + ")";
    return true;
  }

  uint64_t keep = 0;
  for (const RuntimeCapability& rc : runtime_capabilities(config, xdp_dispatcher)) {
    if (capng_have_capability(CAPNG_PERMITTED, rc.cap)) {
      keep |= uint64_t{1} << rc.cap;
      BURSTD_DEBUG("keeping %s: %s", cap_name(rc.cap).c_str(), rc.reason);
    } else {
      BURSTD_DEBUG("not keeping %s (burstd did not start with it): %s", cap_name(rc.cap).c_str(),
                   rc.reason);
    }
  }
  g_target.keep = keep;
  g_target.bounds = capng_have_capability(CAPNG_EFFECTIVE, CAP_SETPCAP) != 0;
  g_target.last_cap = last_cap();

  // This thread through libcap-ng; the bounding set first (it needs
  // CAP_SETPCAP, which the capset then drops).
  capng_clear(CAPNG_SELECT_ALL);
  constexpr auto kKeptSets =
      static_cast<capng_type_t>(CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET);
  for (unsigned c = 0; c < 64; ++c) {
    if ((keep >> c & 1) && capng_update(CAPNG_ADD, kKeptSets, c) != 0) {
      *error = "libcap-ng does not know " + cap_name(c);
      return false;
    }
  }
  const capng_select_t sets =
      g_target.bounds ? CAPNG_SELECT_ALL
                      : static_cast<capng_select_t>(CAPNG_SELECT_CAPS | CAPNG_SELECT_AMBIENT);
  if (const int rc = capng_apply(sets); rc != 0) {
    *error = "cannot drop capabilities (capng_apply: " + std::to_string(rc) + ", " +
             std::strerror(errno) + "): set drop_caps = off to keep them";
    return false;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *error = std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno);
    return false;
  }
  if (!apply_in_other_threads(error)) return false;

  *summary = "capabilities after start-up: " + names(keep);
  if (!g_target.bounds)
    *summary += " (bounding set left as inherited: burstd has no CAP_SETPCAP; no_new_privs set)";
  return true;
}

}  // namespace burst::burstd
