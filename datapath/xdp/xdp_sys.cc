// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "datapath/xdp/xdp_sys.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/enum_names.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << 26)
#endif

namespace burst::datapath {

namespace {
constexpr const char* kAttachModeNames[] = {"auto", "native", "generic"};
// ZeroCopyMode and HugepageMode.
constexpr const char* kAutoOffRequireNames[] = {"auto", "off", "require"};
static_assert(static_cast<int>(XdpAttachMode::kGeneric) == 2 &&
              static_cast<int>(ZeroCopyMode::kRequire) == 2 &&
              static_cast<int>(HugepageMode::kRequire) == 2);
}  // namespace

const char* ToString(XdpAttachMode m) { return enum_name(kAttachModeNames, m); }
const char* ToString(ZeroCopyMode m) { return enum_name(kAutoOffRequireNames, m); }
const char* ToString(HugepageMode m) { return enum_name(kAutoOffRequireNames, m); }
bool FromString(std::string_view s, XdpAttachMode* m) { return enum_parse(kAttachModeNames, s, m); }
bool FromString(std::string_view s, ZeroCopyMode* m) {
  return enum_parse(kAutoOffRequireNames, s, m);
}
bool FromString(std::string_view s, HugepageMode* m) {
  return enum_parse(kAutoOffRequireNames, s, m);
}

namespace xdp_sys {
namespace {

XdpError Fail(int code, std::string message) { return XdpError{code, std::move(message)}; }

bool HasCap(const __user_cap_data_struct* data, int cap) {
  return (data[cap / 32].effective & (1u << (cap % 32))) != 0;
}

std::mutex g_log_mutex;
std::deque<std::string> g_log_lines;  // written by libbpf's callback, read by LibbpfLog()
constexpr size_t kLogLines = 12;

std::string g_dispatcher_reason;  // see DispatcherUnavailableReason()

// Formats one library line; "" when it is debug output or empty.
std::string FormatLine(bool is_debug, const char* fmt, va_list args) {
  static const bool debug = [] {
    const char* v = std::getenv("BURST_LIBBPF_DEBUG");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  char line[512];
  va_list copy;
  va_copy(copy, args);
  std::vsnprintf(line, sizeof(line), fmt, copy);
  va_end(copy);
  if (debug) std::fputs(line, stderr);
  if (is_debug) return {};
  std::string s(line);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void Keep(std::string s) {
  if (s.empty()) return;
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_log_lines.push_back(std::move(s));
  if (g_log_lines.size() > kLogLines) g_log_lines.pop_front();
}

int LibbpfPrint(enum libbpf_print_level level, const char* fmt, va_list args) {
  std::string s = FormatLine(level == LIBBPF_DEBUG, fmt, args);
  // libxdp's metadata (XDP_RUN_CONFIG) is read by libxdp, not libbpf: no news.
  if (s.find(".xdp_run_config") != std::string::npos) return 0;
  Keep(std::move(s));
  return 0;
}

// libxdp says why it falls back in a warning ("Can't use dispatcher without a
// working bpffs") or an info line ("Compatibility check for dispatcher program
// failed: ..."), before "Falling back to loading single prog without dispatcher".
int LibxdpPrint(enum libxdp_print_level level, const char* fmt, va_list args) {
  std::string s = FormatLine(level == LIBXDP_DEBUG, fmt, args);
  if (s.empty()) return 0;
  if ((s.find("dispatcher") != std::string::npos || s.find("bpffs") != std::string::npos) &&
      s.find("Falling back") == std::string::npos) {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_dispatcher_reason = s;
  }
  Keep(std::move(s));
  return 0;
}

}  // namespace

std::string MissingCapabilities() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return "(capget failed)";
  std::string missing;
  auto need = [&](bool ok, const char* name) {
    if (ok) return;
    if (!missing.empty()) missing += ", ";
    missing += name;
  };
  need(HasCap(data, CAP_NET_ADMIN), "CAP_NET_ADMIN");
  need(HasCap(data, CAP_NET_RAW), "CAP_NET_RAW");
  need(HasCap(data, CAP_BPF) || HasCap(data, CAP_SYS_ADMIN), "CAP_BPF");
  // Finding a stale program by id (BPF_PROG_GET_FD_BY_ID) needs CAP_SYS_ADMIN.
  need(HasCap(data, CAP_SYS_ADMIN), "CAP_SYS_ADMIN");
  return missing;
}

int ProbeAfXdp() {
  const int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

uint64_t ProcessStartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return 0;
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 1));
  std::string f;
  // Fields after "(comm)" start at field 3 (state); starttime is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> f)) return 0;
  }
  return std::strtoull(f.c_str(), nullptr, 10);
}

void RaiseMemlockLimit() {
  rlimit r{RLIM_INFINITY, RLIM_INFINITY};
  if (setrlimit(RLIMIT_MEMLOCK, &r) != 0) {
    // Without CAP_SYS_RESOURCE raise the soft limit to the hard one.
    if (getrlimit(RLIMIT_MEMLOCK, &r) == 0) {
      r.rlim_cur = r.rlim_max;
      setrlimit(RLIMIT_MEMLOCK, &r);
    }
  }
}

XdpError MapRegion(size_t bytes, HugepageMode mode, Region* out) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (mode != HugepageMode::kOff) {
    const size_t len = (bytes + kHuge - 1) & ~(kHuge - 1);
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB | MAP_POPULATE, -1, 0);
    if (p != MAP_FAILED) {
      *out = Region{static_cast<uint8_t*>(p), len, true};
      return {};
    }
    if (mode == HugepageMode::kRequire) {
      const int err = errno;
      return Fail(err, "no free 2 MB hugepages for a " + std::to_string(len >> 20) + " MB UMEM (" +
                           std::strerror(err) +
                           "): reserve some with `echo N > /proc/sys/vm/nr_hugepages` or set "
                           "hugepages=auto");
    }
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t len = (bytes + page - 1) & ~(page - 1);
  void* p =
      mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    return Fail(err, "mmap of " + std::to_string(len) +
                         " bytes for the UMEM failed: " + std::strerror(err));
  }
  *out = Region{static_cast<uint8_t*>(p), len, false};
  return {};
}

void UnmapRegion(Region* r) {
  if (r->addr != nullptr) munmap(r->addr, r->len);
  *r = Region{};
}

bool DatasecVarOffset(const btf* b, int datasec_id, const char* var, uint32_t* off) {
  const btf_type* t = btf__type_by_id(b, datasec_id);
  if (t == nullptr || !btf_is_datasec(t)) return false;
  const btf_var_secinfo* vs = btf_var_secinfos(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++vs) {
    const btf_type* v = btf__type_by_id(b, vs->type);
    if (v == nullptr) continue;
    const char* name = btf__name_by_offset(b, v->name_off);
    if (name != nullptr && std::strcmp(name, var) == 0) {
      *off = vs->offset;
      return true;
    }
  }
  return false;
}

void InstallLibbpfLogger() {
  static std::once_flag once;
  std::call_once(once, [] {
    libbpf_set_print(LibbpfPrint);
    libxdp_set_print(LibxdpPrint);
  });
}

std::string DispatcherUnavailableReason() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  return g_dispatcher_reason;
}

XdpError FailWithLog(int code, std::string message) {
  const std::string log = LibbpfLog();
  if (!log.empty()) message += " [libbpf/libxdp: " + log + "]";
  return XdpError{code, std::move(message)};
}

void ClearLibbpfLog() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_log_lines.clear();
}

std::string LibbpfLog() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  std::string s;
  for (const auto& l : g_log_lines) {
    if (!s.empty()) s += " | ";
    s += l;
  }
  return s;
}

}  // namespace xdp_sys
}  // namespace burst::datapath
