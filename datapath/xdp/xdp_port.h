/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// XdpPort: the roce_steer XDP program on one netdev (control plane).
//
// Open() opens the program (embedded object, or XdpConfig::bpf_object), sizes
// its XSKMAP to the netdev's queues and attaches it through libxdp (native,
// generic, or native falling back to generic; the mode of a dispatcher already
// there). libxdp puts it into its multi-program dispatcher next to the other
// XDP programs of the netdev (bpffs and a kernel that allows freplace programs),
// or attaches it alone (legacy) where the dispatcher cannot load: notes() says
// so, and then any other program on the netdev makes Open() fail. A burst
// program left attached by a process that died (a legacy attach and a pinned
// dispatcher link both outlive their process) is recognised by program name,
// its version is read from its .rodata, and it is detached before ours is
// attached (replaced, never duplicated); a burst program of a live process, or
// a foreign program attached without the dispatcher, makes Open() fail with a
// message naming the fix. The destructor detaches the program only if it is
// still the one this port attached, and only it (other dispatcher programs stay).
//
// Threading: control plane; create and destroy on one thread. The XdpQueues
// of a port (one per worker) must be destroyed before the port.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "bpf/roce_steer.h"
#include "datapath/xdp/xdp_config.h"

struct bpf_object;
struct xdp_multiprog;
struct xdp_program;

namespace burst::datapath {

using XdpSteerCounters = std::array<uint64_t, BURST_STEER_NR_COUNTERS>;

// Name of each BURST_STEER_* counter, for tools and tests.
const char* SteerCounterName(uint32_t index);

class XdpPort {
 public:
  static std::unique_ptr<XdpPort> Open(const XdpConfig& config, XdpError* error);
  ~XdpPort();
  XdpPort(const XdpPort&) = delete;
  XdpPort& operator=(const XdpPort&) = delete;

  const XdpConfig& config() const { return config_; }
  const std::string& netdev() const { return config_.netdev; }
  int ifindex() const { return ifindex_; }
  uint32_t netdev_mtu() const { return netdev_mtu_; }  // L3 MTU
  uint32_t queue_count() const { return queue_count_; }
  bool native() const { return native_; }  // false: generic (skb) XDP
  const char* attach_mode_name() const { return native_ ? "native" : "generic"; }
  // True: held by libxdp's dispatcher (other XDP programs may share the netdev);
  // false: attached alone (legacy).
  bool dispatcher() const { return dispatcher_; }
  uint32_t prog_id() const { return prog_id_; }
  int xsks_map_fd() const { return xsks_fd_; }
  // What Open() had to do or found beyond a plain attach (stale program replaced,
  // legacy attach because libxdp's dispatcher is unavailable), "" if nothing.
  const std::string& notes() const { return notes_; }

  // Sum over CPUs of the program's counters. False if the map cannot be read.
  bool ReadCounters(XdpSteerCounters* out) const;

 private:
  XdpPort() = default;
  XdpError Load();
  XdpError Attach();                          // xdp_attach.cc, as the three below
  XdpError RemoveStale(xdp_multiprog* mp);    // refuses a busy netdev
  XdpError AfterAttach();                     // fds, owner record, dispatcher or legacy
  void Detach();

  XdpConfig config_;
  int ifindex_ = 0;
  uint32_t netdev_mtu_ = 0;
  uint32_t queue_count_ = 1;
  uint32_t max_queues_ = 1;
  bpf_object* obj_ = nullptr;
  xdp_program* xprog_ = nullptr;  // libxdp's handle on obj_'s program
  int prog_fd_ = -1;
  uint32_t prog_id_ = 0;
  int xsks_fd_ = -1;
  int counters_fd_ = -1;
  int owner_fd_ = -1;
  bool attached_ = false;
  bool native_ = false;
  bool dispatcher_ = false;
  std::string notes_;
};

}  // namespace burst::datapath
