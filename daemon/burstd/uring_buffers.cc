// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/uring_buffers.h"

#include <sys/mman.h>

#include <cerrno>

namespace burst::burstd {

UringBuffers::~UringBuffers() {
  if (registered_) io_uring_unregister_buf_ring(ring_, kGroup);
  if (br_ != nullptr) munmap(br_, map_len_);
}

int UringBuffers::init(io_uring* ring) {
  ring_ = ring;
  const size_t ring_bytes = (sizeof(io_uring_buf) * kCount + 4095) & ~size_t{4095};
  map_len_ = ring_bytes + kSize * kCount;
  void* m = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return errno;
  br_ = static_cast<io_uring_buf_ring*>(m);
  bufs_ = static_cast<uint8_t*>(m) + ring_bytes;
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(br_);
  reg.ring_entries = kCount;
  reg.bgid = kGroup;
  const int rc = io_uring_register_buf_ring(ring_, &reg, 0);
  if (rc < 0) return -rc;
  registered_ = true;
  io_uring_buf_ring_init(br_);
  for (unsigned i = 0; i < kCount; ++i) {
    io_uring_buf_ring_add(br_, bufs_ + kSize * i, kSize, static_cast<unsigned short>(i),
                          io_uring_buf_ring_mask(kCount), static_cast<int>(i));
  }
  io_uring_buf_ring_advance(br_, static_cast<int>(kCount));
  templ_.msg_namelen = 0;
  templ_.msg_controllen = kControl;
  return 0;
}

bool UringBuffers::message(uint16_t bid, int res, const uint8_t** payload, size_t* len,
                           msghdr* mh) {
  if (bid >= kCount || res < 0 || static_cast<size_t>(res) > kSize) return false;
  uint8_t* buf = bufs_ + kSize * bid;
  io_uring_recvmsg_out* out = io_uring_recvmsg_validate(buf, res, &templ_);
  if (out == nullptr) return false;
  *mh = msghdr{};
  mh->msg_control = out->controllen != 0 ? io_uring_recvmsg_cmsg_firsthdr(out, &templ_) : nullptr;
  mh->msg_controllen = mh->msg_control != nullptr ? out->controllen : 0;
  mh->msg_flags = static_cast<int>(out->flags);
  *payload = static_cast<const uint8_t*>(io_uring_recvmsg_payload(out, &templ_));
  *len = io_uring_recvmsg_payload_length(out, res, &templ_);
  return true;
}

void UringBuffers::recycle(uint16_t bid) {
  if (bid >= kCount) return;
  io_uring_buf_ring_add(br_, bufs_ + kSize * bid, kSize, bid, io_uring_buf_ring_mask(kCount), 0);
  io_uring_buf_ring_advance(br_, 1);
}

}  // namespace burst::burstd
