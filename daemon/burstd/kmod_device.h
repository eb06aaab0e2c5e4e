/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstd's registration with the burst kernel module (kmod/, docs/kmod.md):
// with /dev/burst present, burstd registers its device with the kernel's RDMA
// core (BURST_KMOD_REGISTER, abi/burst_kmod.h), so /sys/class/infiniband/burst0,
// /dev/infiniband/uverbsN and `rdma link` show it and stock libibverbs finds it.
// The descriptor is the registration: it stays open for burstd's life and
// closing it (also when burstd is killed) unregisters the device; applications
// holding it get IBV_EVENT_DEVICE_FATAL.
//
// burstd.conf `kmod = auto | on | off` (default auto: register when /dev/burst
// exists). REGISTER needs CAP_NET_ADMIN over the netdev's network namespace:
// burstd registers before it drops its capabilities (privileges.h).
//
// raise(): completion and async events of the kernel "shadow" objects the
// provider creates in native mode (named by burstd's handle and the client's
// tgid). One ioctl, a system call: call it at most once per CQ event (as the
// completion channel write is today), never per packet. Thread-safe (the
// module serialises it per descriptor); the control thread calls it, a worker
// may as well where it writes a completion event today.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "abi/burst_kmod.h"
#include "daemon/burstd/config.h"

namespace burst::burstd {

class Device;

class KmodDevice {
 public:
  // Registers `device` (on its netdev's ifindex, with HELLO's limits) as the
  // control socket `socket_path`'s ib_device, named "burst%d" by the kernel.
  // nullptr with *error (and *absent when /dev/burst does not exist).
  static std::unique_ptr<KmodDevice> Register(const Device& device, const std::string& socket_path,
                                              bool* absent, std::string* error);
  ~KmodDevice();  // closes the registration: the kernel unregisters the device
  KmodDevice(const KmodDevice&) = delete;
  KmodDevice& operator=(const KmodDevice&) = delete;

  const std::string& name() const { return name_; }  // "burst0": the kernel's name
  // BURST_KMOD_RAISE: kind is enum burst_kmod_event_kind, event_type enum
  // ib_event_type (IBV_EVENT_* has the same values). 0, or an errno value
  // (EINVAL: a kind/event pair the module refuses). An event naming no live
  // shadow is not an error (counted by the module as dropped).
  int raise(uint32_t kind, uint32_t event_type, uint32_t tgid, uint64_t handle) const;

 private:
  KmodDevice(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  int fd_;
  std::string name_;
};

// The registration burstd.conf asks for: kmod = off: none; auto: when
// /dev/burst exists (module absent: one info line; present but refused: a
// warning with the errno); on: false with *error when it cannot register.
// Logs one line saying what it did.
bool setup_kmod(const Config& config, const Device& device, std::unique_ptr<KmodDevice>* out,
                std::string* error);

// HELLO's device attributes as the module's query_device answers them.
burst_kmod_device_attr kmod_device_attr(const Device& device);

}  // namespace burst::burstd
