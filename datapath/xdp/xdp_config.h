/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Configuration and error type of the AF_XDP backend (XdpPort / XdpQueue).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "datapath/error.h"

namespace burst::datapath {

enum class XdpAttachMode : uint8_t {
  kAuto,     // native (driver) XDP, generic (skb) XDP when the driver has none
  kNative,   // XDP_FLAGS_DRV_MODE only
  kGeneric,  // XDP_FLAGS_SKB_MODE only
};

enum class ZeroCopyMode : uint8_t {
  kAuto,     // bind with XDP_ZEROCOPY, fall back to XDP_COPY
  kOff,      // XDP_COPY
  kRequire,  // XDP_ZEROCOPY or fail
};

enum class HugepageMode : uint8_t {
  kAuto,     // UMEM on 2 MB hugepages when some are free, normal pages otherwise
  kOff,      // normal pages
  kRequire,  // 2 MB hugepages or fail
};

// The netdev as its caller found it (net::query_netdev): XdpPort does not
// query the netdev itself.
struct XdpNetdev {
  int ifindex = 0;
  uint32_t mtu = 0;         // L3 MTU
  uint32_t rx_queues = 1;   // receive queues in use (what rx_queue_index ranges over)
  uint32_t max_queues = 1;  // largest queue count the device can be configured to
};

struct XdpConfig {
  std::string netdev;
  XdpNetdev netdev_info;         // required (ifindex 0 is an error)
  std::vector<uint32_t> queues;  // queue ids this process opens (one XdpQueue each)
  uint32_t frame_size = 4096;    // UMEM chunk bytes: 2048 or 4096 (kernel limit 4096)
  uint32_t num_frames = 4096;    // UMEM chunks per queue; half receive, half transmit
  uint32_t headroom = 0;         // bytes kept free before `data` in every frame
  XdpAttachMode xdp_mode = XdpAttachMode::kAuto;
  ZeroCopyMode zero_copy = ZeroCopyMode::kAuto;
  HugepageMode hugepages = HugepageMode::kAuto;
  // Frames larger than one chunk (netdev MTU above ~3800 with 4 KB chunks) need
  // AF_XDP multi-buffer (XDP_USE_SG, Linux >= 6.6). Off: such an MTU is an error.
  bool multi_buffer = true;
  uint32_t rx_scratch = 64;  // reassembly buffers for multi-buffer receive, per queue
  std::string bpf_object;    // empty: the roce_steer object embedded in the library
};

using XdpError = Error;  // datapath/error.h

const char* ToString(XdpAttachMode m);
const char* ToString(ZeroCopyMode m);
const char* ToString(HugepageMode m);
// The mode whose ToString is s, in *m; false when none is.
bool FromString(std::string_view s, XdpAttachMode* m);
bool FromString(std::string_view s, ZeroCopyMode* m);
bool FromString(std::string_view s, HugepageMode* m);

}  // namespace burst::datapath
