/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The provided-buffer ring the io_uring loop's multishot recvmsg receive into:
// kCount buffers shared by every client, each with room for the kernel's
// io_uring_recvmsg_out header, SCM_RIGHTS for LoopCore::kMaxFdsReceived
// descriptors and a message of LoopCore::kRxBytes (larger: MSG_TRUNC). The
// buffers are one anonymous mapping: a page is touched only by what arrives.
//
// Threading: the control thread only.
#pragma once

#include <liburing.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "daemon/burstd/loop_core.h"

namespace burst::burstd {

class UringBuffers {
 public:
  static constexpr unsigned kCount = 64;  // a power of two
  static constexpr uint16_t kGroup = 0;

  UringBuffers() = default;
  ~UringBuffers();
  UringBuffers(const UringBuffers&) = delete;
  UringBuffers& operator=(const UringBuffers&) = delete;

  // Maps and registers the ring: 0 or a positive errno value.
  int init(io_uring* ring);
  // The msghdr the multishot recvmsg is prepared with (name and control sizes).
  msghdr* templ() { return &templ_; }

  // One received message in buffer `bid` (res: the completion's result): its
  // payload, length and a msghdr over its control data and flags, for
  // LoopCore::serve_message / close_received_fds. False if malformed.
  bool message(uint16_t bid, int res, const uint8_t** payload, size_t* len, msghdr* mh);
  // Hands buffer `bid` back to the kernel.
  void recycle(uint16_t bid);
  // Requests that may still write the buffers outlive the ring: keep them mapped.
  void abandon() { br_ = nullptr; registered_ = false; }

 private:
  static constexpr size_t kControl = CMSG_SPACE(sizeof(int) * LoopCore::kMaxFdsReceived);
  // Rounded to a cache line: every buffer starts aligned for the header and cmsghdr.
  static constexpr size_t kSize =
      (sizeof(io_uring_recvmsg_out) + kControl + LoopCore::kRxBytes + 63) & ~size_t{63};

  io_uring* ring_ = nullptr;
  io_uring_buf_ring* br_ = nullptr;
  uint8_t* bufs_ = nullptr;
  size_t map_len_ = 0;
  bool registered_ = false;
  msghdr templ_{};
};

}  // namespace burst::burstd
