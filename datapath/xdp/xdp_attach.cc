// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// XdpPort's attach and detach through libxdp (xdp_port.h says what; docs/xdp.md
// why): stale-program detection, libxdp's dispatcher or its legacy fallback.
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "datapath/xdp/xdp_port.h"
#include "datapath/xdp/xdp_sys.h"

namespace burst::datapath {
namespace {

XdpError Fail(int code, std::string message) {
  return xdp_sys::FailWithLog(code, std::move(message));
}

std::string Errno(int e) { return std::strerror(e); }

// What is known about a program found attached to the netdev (alone or in a dispatcher).
struct AttachedProg {
  AttachedProg() = default;
  AttachedProg(const AttachedProg&) = delete;
  AttachedProg& operator=(const AttachedProg&) = delete;
  ~AttachedProg() {
    if (fd >= 0) close(fd);
  }
  uint32_t id = 0;
  int fd = -1;
  std::string name;
  bool has_version = false;
  uint32_t version = 0;
  bool has_owner = false;
  burst_steer_owner owner{};
  uint64_t load_time_ns = 0;  // CLOCK_BOOTTIME
};

// A burst program loaded this recently without an owner record is being set
// up by another process (the record is written right after libxdp's attach).
constexpr uint64_t kOwnerGraceNs = 2'000'000'000;

uint64_t BoottimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// burst_steer_version from the kernel map `mfd` (a .rodata map with BTF), if there.
void ReadVersion(int mfd, const bpf_map_info& mi, AttachedProg* p) {
  btf* b = btf__load_from_kernel_by_id(mi.btf_id);
  uint32_t off = 0;
  const uint32_t zero = 0;
  std::vector<uint8_t> value(mi.value_size);
  if (b != nullptr &&
      xdp_sys::DatasecVarOffset(b, static_cast<int>(mi.btf_value_type_id),
                                BURST_STEER_VERSION_VAR, &off) &&
      off + sizeof(uint32_t) <= value.size() && bpf_map_lookup_elem(mfd, &zero, value.data()) == 0) {
    std::memcpy(&p->version, value.data() + off, sizeof(uint32_t));
    p->has_version = true;
  }
  btf__free(b);
}

// Reads the version (from its .rodata map, via the map's kernel BTF) and the
// owner record of a burst program found attached.
void InspectMaps(AttachedProg* p, const bpf_prog_info& info) {
  std::vector<uint32_t> ids(info.nr_map_ids);
  bpf_prog_info again{};
  again.nr_map_ids = info.nr_map_ids;
  again.map_ids = reinterpret_cast<uint64_t>(ids.data());
  uint32_t len = sizeof(again);
  if (ids.empty() || bpf_obj_get_info_by_fd(p->fd, &again, &len) != 0) return;
  for (uint32_t i = 0; i < again.nr_map_ids && i < ids.size(); ++i) {
    const int mfd = bpf_map_get_fd_by_id(ids[i]);
    if (mfd < 0) continue;
    bpf_map_info mi{};
    uint32_t mlen = sizeof(mi);
    if (bpf_obj_get_info_by_fd(mfd, &mi, &mlen) == 0) {
      const std::string name = mi.name;
      const uint32_t zero = 0;
      if (name == BURST_STEER_OWNER_MAP && mi.value_size == sizeof(burst_steer_owner)) {
        p->has_owner = bpf_map_lookup_elem(mfd, &zero, &p->owner) == 0;
      } else if (EndsWith(name, ".rodata") && mi.btf_id != 0) {
        ReadVersion(mfd, mi, p);
      }
    }
    close(mfd);
  }
}

XdpError InspectAttached(uint32_t id, AttachedProg* p) {
  p->id = id;
  p->fd = bpf_prog_get_fd_by_id(id);
  if (p->fd < 0) {
    const int e = errno;
    return Fail(e, "cannot inspect the XDP program (id " + std::to_string(id) +
                       ") already attached: " + Errno(e) +
                       (e == EPERM ? " (needs CAP_SYS_ADMIN: run as root)" : ""));
  }
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(p->fd, &info, &len) != 0) {
    const int e = errno;
    return Fail(e, "bpf_obj_get_info_by_fd(prog " + std::to_string(id) + "): " + Errno(e));
  }
  p->name = info.name;
  p->load_time_ns = info.load_time;
  if (p->name == BURST_STEER_PROG_NAME) InspectMaps(p, info);
  return {};
}

bool OwnerAlive(const burst_steer_owner& o) {
  if (o.pid == 0) return false;
  if (kill(static_cast<pid_t>(o.pid), 0) != 0 && errno == ESRCH) return false;
  const uint64_t start = xdp_sys::ProcessStartTime(static_cast<pid_t>(o.pid));
  return start != 0 && start == o.start_time;  // same pid, same process (not reused)
}

const char* ModeName(xdp_attach_mode m) {
  return m == XDP_MODE_NATIVE ? "native" : m == XDP_MODE_SKB ? "generic" : "unknown mode";
}

std::string OffCommand(const std::string& dev, xdp_attach_mode m) {
  return "`ip link set dev " + dev + (m == XDP_MODE_SKB ? " xdpgeneric off`" : " xdpdrv off`");
}

struct MultiprogClose {
  void operator()(xdp_multiprog* mp) const { xdp_multiprog__close(mp); }
};
using Multiprog = std::unique_ptr<xdp_multiprog, MultiprogClose>;

// What libxdp sees on the netdev; empty when nothing is attached.
XdpError GetMultiprog(int ifindex, const std::string& dev, Multiprog* out) {
  out->reset();
  xdp_multiprog* mp = xdp_multiprog__get_from_ifindex(ifindex);
  const long err = libxdp_get_error(mp);
  if (err == -ENOENT || (err == 0 && mp == nullptr)) return {};
  if (err != 0) {
    return Fail(static_cast<int>(-err),
                "cannot read the XDP programs on '" + dev + "': " + Errno(static_cast<int>(-err)));
  }
  out->reset(mp);
  return {};
}

// The programs to look at: the one legacy program, or the dispatcher's components.
std::vector<xdp_program*> Programs(xdp_multiprog* mp) {
  std::vector<xdp_program*> progs;
  if (xdp_multiprog__is_legacy(mp)) {
    if (xdp_program* main = xdp_multiprog__main_prog(mp); main != nullptr) progs.push_back(main);
    return progs;
  }
  for (xdp_program* p = xdp_multiprog__next_prog(nullptr, mp); p != nullptr;
       p = xdp_multiprog__next_prog(p, mp)) {
    progs.push_back(p);
  }
  return progs;
}

std::string BusyForeign(const std::string& dev, const AttachedProg& p, xdp_attach_mode mode) {
  std::string m = "'" + dev + "' is busy: XDP program '" + p.name + "' (id " +
                  std::to_string(p.id) + ", " + ModeName(mode) +
                  ") is attached without libxdp's dispatcher and is not burst's: detach it with " +
                  OffCommand(dev, mode) + " or stop its owner";
  if (p.name == "xdp_dispatcher") {
    m += " (it is a libxdp dispatcher whose programs are pinned in a bpffs this process does not "
         "see: mount one with `mount -t bpf bpf /sys/fs/bpf`)";
  } else {
    m += " (a program loaded through libxdp, e.g. `xdp-loader load`, shares the netdev where "
         "libxdp's dispatcher works)";
  }
  return m;
}

}  // namespace

XdpError XdpPort::RemoveStale(xdp_multiprog* mp) {
  const std::string& dev = config_.netdev;
  const xdp_attach_mode mode = xdp_multiprog__attach_mode(mp);
  const bool legacy = xdp_multiprog__is_legacy(mp);
  for (xdp_program* p : Programs(mp)) {
    AttachedProg old;
    if (XdpError e = InspectAttached(xdp_program__id(p), &old); e) return e;
    if (old.name != BURST_STEER_PROG_NAME) {
      if (legacy) return Fail(EBUSY, BusyForeign(dev, old, mode));
      continue;  // another program in the dispatcher: it stays, ours joins it
    }
    if ((!old.has_owner || old.owner.pid == 0) && BoottimeNs() - old.load_time_ns < kOwnerGraceNs) {
      return Fail(EBUSY, "'" + dev + "' is busy: burst's XDP program (id " +
                             std::to_string(old.id) +
                             ") is being attached by another process: stop it, or retry");
    }
    if (old.has_owner && OwnerAlive(old.owner)) {
      return Fail(EBUSY, "'" + dev + "' is busy: burst's XDP program (id " +
                             std::to_string(old.id) + ") belongs to running process " +
                             std::to_string(old.owner.pid) + ": stop it, or use another netdev");
    }
    // libxdp detaches it only if it is still there (legacy: XDP_FLAGS_REPLACE
    // with its fd; dispatcher: a new dispatcher without it).
    if (const int rc = xdp_program__detach(p, ifindex_, mode, 0); rc != 0) {
      return Fail(-rc, "cannot detach the stale XDP program (id " + std::to_string(old.id) +
                           ") from '" + dev + "': " + Errno(-rc) + "; try " +
                           (legacy ? OffCommand(dev, mode)
                                   : "`xdp-loader unload " + dev + " -i " +
                                         std::to_string(old.id) + "`"));
    }
    if (!notes_.empty()) notes_ += "; ";
    notes_ += "replaced stale " BURST_STEER_PROG_NAME " (id " + std::to_string(old.id) + ", " +
              ModeName(mode) + (legacy ? "" : ", in libxdp's dispatcher") + ", version " +
              (old.has_version ? std::to_string(old.version) : std::string("unknown")) +
              ", owner pid " + (old.has_owner ? std::to_string(old.owner.pid) : "unknown") +
              " gone)";
  }
  return {};
}

XdpError XdpPort::Attach() {
  const std::string& dev = config_.netdev;
  Multiprog mp;
  if (XdpError e = GetMultiprog(ifindex_, dev, &mp); e) return e;
  if (mp && xdp_multiprog__hw_prog(mp.get()) != nullptr) {
    return Fail(EBUSY, "'" + dev + "' has an offloaded (hw) XDP program (id " +
                           std::to_string(xdp_program__id(xdp_multiprog__hw_prog(mp.get()))) +
                           "): remove it with `ip link set dev " + dev + " xdpoffload off`");
  }
  if (mp && xdp_multiprog__main_prog(mp.get()) != nullptr) {
    if (XdpError e = RemoveStale(mp.get()); e) return e;
    if (XdpError e = GetMultiprog(ifindex_, dev, &mp); e) return e;  // what is left
  }

  std::vector<xdp_attach_mode> modes;
  if (config_.xdp_mode != XdpAttachMode::kGeneric) modes.push_back(XDP_MODE_NATIVE);
  if (config_.xdp_mode != XdpAttachMode::kNative) modes.push_back(XDP_MODE_SKB);
  if (mp && !xdp_multiprog__is_legacy(mp.get())) {
    // Join the dispatcher in its mode: native and generic cannot coexist.
    const xdp_attach_mode m = xdp_multiprog__attach_mode(mp.get());
    if (std::find(modes.begin(), modes.end(), m) == modes.end()) {
      return Fail(EBUSY, "'" + dev + "' has libxdp's dispatcher in " + ModeName(m) +
                             " mode; xdp_mode=" + ToString(config_.xdp_mode) +
                             " cannot join it: set xdp_mode=auto");
    }
    modes = {m};
  }
  mp.reset();

  XdpError last;
  for (xdp_attach_mode mode : modes) {
    xdp_sys::ClearLibbpfLog();
    const int rc = xdp_program__attach(xprog_, ifindex_, mode, 0);
    if (rc == 0) {
      attached_ = true;
      native_ = mode == XDP_MODE_NATIVE;
      break;
    }
    const int e = -rc;
    if (e == EBUSY || e == EEXIST) {
      last = Fail(EBUSY, "'" + dev +
                             "' is busy: another XDP program was attached meanwhile, without "
                             "libxdp's dispatcher; detach it with `ip link set dev " +
                             dev + " xdp off`");
      break;
    }
    last = Fail(e, std::string("attaching XDP (") + ModeName(mode) + ") to '" + dev +
                       "' failed: " + Errno(e) +
                       (e == EOPNOTSUPP && mode == XDP_MODE_NATIVE
                            ? " (driver has no native XDP: use xdp_mode=generic or auto)"
                        : e == EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN (root), and a kernel "
                                       "lockdown mode that allows BPF)"
                                     : " (the kernel's reason, if any, follows)"));
  }
  if (!attached_) return last;
  if (XdpError e = AfterAttach(); e) {
    Detach();
    return e;
  }
  return {};
}

XdpError XdpPort::AfterAttach() {
  const std::string& dev = config_.netdev;
  prog_fd_ = xdp_program__fd(xprog_);
  prog_id_ = xdp_program__id(xprog_);
  // libxdp loaded it as an extension (freplace) program of its dispatcher, or
  // as a plain XDP program when it fell back to a legacy attach.
  const bpf_program* prog = bpf_object__find_program_by_name(obj_, BURST_STEER_PROG_NAME);
  dispatcher_ = prog != nullptr && bpf_program__type(prog) == BPF_PROG_TYPE_EXT;
  xsks_fd_ = bpf_object__find_map_fd_by_name(obj_, BURST_STEER_XSKS_MAP);
  counters_fd_ = bpf_object__find_map_fd_by_name(obj_, BURST_STEER_COUNTERS_MAP);
  owner_fd_ = bpf_object__find_map_fd_by_name(obj_, BURST_STEER_OWNER_MAP);

  // Who attached it: the next loader uses this to tell stale from busy.
  burst_steer_owner owner{};
  owner.pid = static_cast<uint32_t>(getpid());
  owner.version = BURST_STEER_VERSION;
  owner.start_time = xdp_sys::ProcessStartTime(getpid());
  const uint32_t zero = 0;
  // The program never reads the owner map: bind it so that it is listed among
  // the program's maps (that is how the next loader finds it).
  errno = 0;
  if (prog_fd_ < 0 || xsks_fd_ < 0 || owner_fd_ < 0 || counters_fd_ < 0 ||
      bpf_map_update_elem(owner_fd_, &zero, &owner, BPF_ANY) != 0 ||
      bpf_prog_bind_map(prog_fd_, owner_fd_, nullptr) != 0) {
    const int e = errno ? errno : ENOENT;
    return Fail(e, std::string("cannot set up the owner map of the XDP program: ") + Errno(e));
  }

  if (!dispatcher_) {
    const char* skip = std::getenv("LIBXDP_SKIP_DISPATCHER");
    const std::string why = skip != nullptr && std::strcmp(skip, "1") == 0
                                ? std::string("LIBXDP_SKIP_DISPATCHER=1")
                                : xdp_sys::DispatcherUnavailableReason();
    if (!notes_.empty()) notes_ += "; ";
    notes_ += "legacy XDP attach: libxdp's multi-program dispatcher is unavailable (" +
              (why.empty() ? std::string("libxdp fell back to a single-program attach") : why) +
              "), so no other XDP program can share '" + dev + "'";
  }
  return {};
}

void XdpPort::Detach() {
  if (!attached_) return;
  attached_ = false;
  if (dispatcher_) {
    // libxdp finds ours by program id among the dispatcher's and builds a new
    // dispatcher without it (CAP_SYS_ADMIN, kept for this: privileges.h).
    xdp_program__detach(xprog_, ifindex_, native_ ? XDP_MODE_NATIVE : XDP_MODE_SKB, 0);
    return;
  }
  // Alone (legacy): what libxdp's detach would do, without its look-up of the
  // program by id (CAP_SYS_ADMIN, dropped after start-up): only if it is still
  // ours, XDP_FLAGS_REPLACE with our fd as the expected one (CAP_NET_ADMIN).
  LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = prog_fd_);
  bpf_xdp_detach(ifindex_,
                 (native_ ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE) | XDP_FLAGS_REPLACE, &opts);
}

}  // namespace burst::datapath
