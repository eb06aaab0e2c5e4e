// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/kmod_device.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "abi/burst_device.h"
#include "daemon/burstd/device.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/log.h"
#include "daemon/ctl/ctl_codec.h"
#include "net/addr.h"

namespace burst::burstd {
namespace {

constexpr uint64_t kPageSizeCap = 0xfffff000;  // as the provider reports (4 KiB and up)
constexpr char kNamePattern[] = BURST_IBDEV_PREFIX "%d";

// What a refusal of /dev/burst means, for the log line.
const char* refusal_hint(int err) {
  switch (err) {
    case EPERM:
      return "REGISTER needs CAP_NET_ADMIN over the netdev's network namespace";
    case EACCES:
      return "/dev/burst is not open to burstd's user (the module makes it mode 0666)";
    case EEXIST:
      return "the netdev already has a burst device (another burstd on it?)";
    case EINVAL:
      return "the module does not speak this burstd's ABI (install matching versions)";
    case ENODEV:
      return "the netdev is not in burstd's network namespace";
    case ENOTTY:
      return "/dev/burst is not burst's module";
    default:
      return "see the kernel log (dmesg)";
  }
}

}  // namespace

burst_kmod_device_attr kmod_device_attr(const Device& device) {
  burst_ctl_hello_resp h{};
  fill_hello_limits(device, &h);
  const DeviceInfo& info = device.info();
  burst_kmod_device_attr a{};
  // The EUI-64 of the MAC, its bytes in network order (burstctl's node_guid file).
  const net::Gid ll = net::gid_link_local_from_mac(info.mac);
  std::memcpy(&a.node_guid, ll.data() + 8, sizeof(a.node_guid));
  a.sys_image_guid = a.node_guid;
  a.max_mr_size = h.max_mr_size;
  a.page_size_cap = kPageSizeCap;
  a.vendor_id = BURST_VENDOR_ID;
  a.vendor_part_id = BURST_VENDOR_PART_ID;
  a.max_qp = h.max_qp;
  a.max_qp_wr = h.max_qp_wr;
  a.max_send_sge = h.max_sge;
  a.max_recv_sge = h.max_sge;
  a.max_sge_rd = h.max_sge;
  a.max_cq = h.max_cq;
  a.max_cqe = h.max_cqe;
  a.max_mr = h.max_mr;
  a.max_mw = h.max_mr;  // one table (BURST_MAX_MW)
  a.max_pd = h.max_pd;
  a.max_qp_rd_atom = h.max_qp_rd_atom;
  a.max_qp_init_rd_atom = h.max_qp_rd_atom;
  a.max_res_rd_atom = h.max_res_rd_atom;
  a.max_srq = h.max_srq;
  a.max_srq_wr = h.max_srq_wr;
  a.max_srq_sge = h.max_srq_sge;
  a.max_ah = h.max_ah;
  a.max_mcast_grp = h.max_mcast_grp;
  a.max_mcast_qp_attach = h.max_mcast_qp_attach;
  a.max_total_mcast_qp_attach = h.max_total_mcast_qp_attach;
  a.max_pkeys = BURST_PKEY_TABLE_LEN;
  a.num_comp_vectors = std::max<uint32_t>(1, device.workers());
  a.active_mtu = std::max<uint8_t>(1, burst_ib_mtu_for_netdev(info.mtu));
  return a;
}

std::unique_ptr<KmodDevice> KmodDevice::Register(const Device& device,
                                                 const std::string& socket_path, bool* absent,
                                                 std::string* error) {
  *absent = false;
  const DeviceInfo& info = device.info();
  burst_kmod_register req{};
  req.size = sizeof(req);
  req.abi_version = BURST_KMOD_ABI_VERSION;
  req.ifindex = info.ifindex;
  if (info.ifindex == 0 || socket_path.size() >= sizeof(req.socket_path)) {
    *error = info.ifindex == 0 ? "the port has no kernel netdev to register on"
                               : "the control socket path is too long for the module";
    return nullptr;
  }
  ctl::set_str(req.name, kNamePattern);
  ctl::set_str(req.socket_path, socket_path);
  req.attr = kmod_device_attr(device);
  // O_CLOEXEC: only burstd holds the registration (a child it ran must not keep it alive).
  const int fd = ::open(BURST_KMOD_DEVICE_PATH, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    *absent = e == ENOENT || e == ENXIO || e == ENODEV;
    *error = std::string(BURST_KMOD_DEVICE_PATH ": ") + std::strerror(e) +
             (*absent ? " (module burst not loaded)" : std::string(": ") + refusal_hint(e));
    return nullptr;
  }
  if (::ioctl(fd, BURST_KMOD_REGISTER, &req) != 0) {
    const int e = errno;
    ::close(fd);
    *error = std::string("the module refused to register ") + info.netdev + ": " +
             std::strerror(e) + " (" + refusal_hint(e) + ")";
    return nullptr;
  }
  req.name[sizeof(req.name) - 1] = '\0';
  return std::unique_ptr<KmodDevice>(new KmodDevice(fd, req.name));
}

KmodDevice::~KmodDevice() { ::close(fd_); }

int KmodDevice::raise(uint32_t kind, uint32_t event_type, uint32_t tgid, uint64_t handle) const {
  burst_kmod_event ev{};
  ev.size = sizeof(ev);
  ev.kind = kind;
  ev.event_type = event_type;
  ev.tgid = tgid;
  ev.handle = handle;
  return ::ioctl(fd_, BURST_KMOD_RAISE, &ev) == 0 ? 0 : errno;
}

bool setup_kmod(const Config& config, const Device& device, std::unique_ptr<KmodDevice>* out,
                std::string* error) {
  const std::string& netdev = device.info().netdev;
  if (config.kmod == KmodMode::kOff) {
    BURSTD_INFO("kmod = off: not registered with the kernel's RDMA core");
    return true;
  }
  bool absent = false;
  std::string why;
  *out = KmodDevice::Register(device, config.socket_path, &absent, &why);
  if (*out) {
    BURSTD_INFO("kmod: registered as %s on %s with the kernel's RDMA core (%s)",
                (*out)->name().c_str(), netdev.c_str(), BURST_KMOD_DEVICE_PATH);
    return true;
  }
  if (config.kmod == KmodMode::kOn) {
    *error = origin_prefix(config, "kmod") + "kmod = on: " + why +
             (absent ? " (fix: load the module, modprobe burst, or set kmod = auto)"
                     : " (fix: see above, or set kmod = auto)");
    return false;
  }
  if (absent || device.info().ifindex == 0) {
    BURSTD_INFO("kmod: not registered with the kernel's RDMA core: %s", why.c_str());
  } else {
    BURSTD_WARN("kmod: not registered with the kernel's RDMA core: %s", why.c_str());
  }
  return true;
}

}  // namespace burst::burstd
