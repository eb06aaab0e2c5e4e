// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "datapath/xdp/xdp_queue.h"

#include <bpf/bpf.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "datapath/xdp/xdp_port.h"

// Linux 6.6 UAPI; the 6.1 headers of Debian 12 lack them.
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

namespace burst::datapath {
namespace {

constexpr uint32_t kXdpPacketHeadroom = 256;  // kernel headroom before rx data in a chunk
constexpr uint32_t kEthHlen = 14;
constexpr uint32_t kVlanHlen = 4;
constexpr int kMaxKicksPerFlush = 16;  // copy mode sends 32 descriptors per sendto()

uint32_t Pow2Ceil(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

XdpError Fail(int code, std::string message) { return XdpError{code, std::move(message)}; }

}  // namespace

std::unique_ptr<XdpQueue> XdpQueue::Open(XdpPort& port, uint32_t queue_id, XdpError* error) {
  *error = {};
  std::unique_ptr<XdpQueue> q(new XdpQueue());
  if (XdpError e = q->Setup(port, queue_id); e) {
    *error = e;
    return nullptr;
  }
  return q;
}

XdpError XdpQueue::Setup(XdpPort& port, uint32_t queue_id) {
  const XdpConfig& cfg = port.config();
  const std::string& dev = port.netdev();
  if (queue_id >= port.queue_count()) {
    return Fail(EINVAL, "queue " + std::to_string(queue_id) + " does not exist on '" + dev + "' (" +
                            std::to_string(port.queue_count()) + " rx queues)");
  }
  queue_id_ = queue_id;
  queue_count_ = port.queue_count();
  xsks_map_fd_ = port.xsks_map_fd();
  chunk_ = cfg.frame_size;
  headroom_ = cfg.headroom;
  if (headroom_ + kXdpPacketHeadroom + 256 > chunk_) {
    return Fail(EINVAL, "headroom " + std::to_string(headroom_) + " too large for " +
                            std::to_string(chunk_) + "-byte frames");
  }

  // Frame sizes: what the netdev can deliver (one VLAN tag included) and what
  // one chunk holds on receive (the kernel keeps XDP_PACKET_HEADROOM in front).
  mtu_ = port.netdev_mtu() + kEthHlen;
  const uint32_t max_frame = mtu_ + kVlanHlen;
  const uint32_t rx_chunk_cap = chunk_ - kXdpPacketHeadroom - headroom_;
  sg_ = max_frame > rx_chunk_cap;
  if (sg_ && !cfg.multi_buffer) {
    return Fail(EMSGSIZE, "MTU " + std::to_string(port.netdev_mtu()) + " of '" + dev + "' needs " +
                              std::to_string(max_frame) + "-byte frames but one " +
                              std::to_string(chunk_) + "-byte UMEM chunk holds " +
                              std::to_string(rx_chunk_cap) +
                              ": enable multi_buffer, or lower the MTU (`ip link set dev " + dev +
                              " mtu " + std::to_string(rx_chunk_cap - kEthHlen - kVlanHlen) + "`)");
  }
  slot_chunks_ = sg_ ? (headroom_ + max_frame + chunk_ - 1) / chunk_ : 1;
  slot_bytes_ = slot_chunks_ * chunk_;

  rx_frames_ = cfg.num_frames / 2;
  tx_slots_ = (cfg.num_frames - rx_frames_) / slot_chunks_;
  if (rx_frames_ < 2 * kMaxBurst || tx_slots_ < kMaxBurst) {
    return Fail(EINVAL, "num_frames " + std::to_string(cfg.num_frames) +
                            " too small: need at least " +
                            std::to_string(2 * kMaxBurst * (1 + slot_chunks_)) + " for this MTU");
  }
  fill_size_ = Pow2Ceil(rx_frames_);
  rx_ring_size_ = fill_size_;
  comp_size_ = Pow2Ceil(tx_slots_ * slot_chunks_);
  tx_base_ = uint64_t{rx_frames_} * chunk_;
  const uint64_t umem_bytes = tx_base_ + uint64_t{tx_slots_} * slot_bytes_;

  if (XdpError e = xdp_sys::MapRegion(umem_bytes, cfg.hugepages, &region_); e) return e;
  base_ = region_.addr;

  if (sg_) {
    scratch_bytes_ = (headroom_ + max_frame + 63) & ~63u;
    const uint32_t n = std::max(cfg.rx_scratch, 1u);
    scratch_.reset(new uint8_t[size_t{n} * scratch_bytes_]);
    scratch_free_.reset(new uint32_t[n]);
    for (uint32_t i = 0; i < n; ++i) scratch_free_[i] = n - 1 - i;
    scratch_free_n_ = n;
  }

  // Bind: zero-copy first (native XDP only: generic XDP always copies).
  const uint16_t base_flags = XDP_USE_NEED_WAKEUP | (sg_ ? XDP_USE_SG : 0);
  uint16_t modes[2];
  int nmodes = 0;
  if (cfg.zero_copy == ZeroCopyMode::kRequire) {
    modes[nmodes++] = XDP_ZEROCOPY;
  } else {
    if (cfg.zero_copy == ZeroCopyMode::kAuto && port.native()) modes[nmodes++] = XDP_ZEROCOPY;
    modes[nmodes++] = XDP_COPY;
  }
  XdpError bind_error;
  for (int i = 0; i < nmodes; ++i) {
    // The kernel releases the AF_XDP socket of a process that was just killed
    // asynchronously: the queue answers EBUSY for a short while after a
    // kill -9. Retry for up to 2 s before reporting it busy.
    for (int attempt = 0;; ++attempt) {
      bind_error = TryBind(dev, base_flags | modes[i]);
      if (bind_error.code != EBUSY || attempt >= 40) break;
      usleep(50'000);
    }
    if (!bind_error) break;
  }
  if (bind_error) return bind_error;

  xdp_options opts{};
  socklen_t optlen = sizeof(opts);
  zero_copy_ = getsockopt(fd(), SOL_XDP, XDP_OPTIONS, &opts, &optlen) == 0 &&
               (opts.flags & XDP_OPTIONS_ZEROCOPY) != 0;

  const int sock_fd = fd();
  if (bpf_map_update_elem(xsks_map_fd_, &queue_id_, &sock_fd, BPF_ANY) != 0) {
    const int e = errno;
    return Fail(e, "cannot register the AF_XDP socket of queue " + std::to_string(queue_id_) +
                       " in the XSKMAP: " + std::strerror(e));
  }

  rx_free_.reset(new uint64_t[rx_frames_]);
  for (uint32_t i = 0; i < rx_frames_; ++i) rx_free_[i] = uint64_t{rx_frames_ - 1 - i} * chunk_;
  rx_free_n_ = rx_frames_;
  refill();  // the fill ring holds every rx chunk: all of them go in now

  tx_free_.reset(new uint32_t[tx_slots_]);
  tx_pending_.reset(new uint16_t[tx_slots_]());
  for (uint32_t i = 0; i < tx_slots_; ++i) tx_free_[i] = tx_slots_ - 1 - i;
  tx_free_n_ = tx_slots_;
  return {};
}

XdpError XdpQueue::TryBind(const std::string& netdev, uint16_t bind_flags) {
  // libxdp 1.3.1 leaves fields of these structs unset: start from zero.
  fill_ = {};
  comp_ = {};
  rx_ = {};
  tx_ = {};
  xsk_umem_config ucfg{};
  ucfg.fill_size = fill_size_;
  ucfg.comp_size = comp_size_;
  ucfg.frame_size = chunk_;
  ucfg.frame_headroom = headroom_;
  const uint64_t umem_bytes = tx_base_ + uint64_t{tx_slots_} * slot_bytes_;
  int rc = xsk_umem__create(&umem_, base_, umem_bytes, &fill_, &comp_, &ucfg);
  if (rc != 0) {
    umem_ = nullptr;
    return Fail(-rc, "registering the " + std::to_string(umem_bytes >> 20) +
                         " MB UMEM failed: " + std::strerror(-rc) +
                         (-rc == ENOMEM || -rc == EPERM
                              ? " (locked-memory limit: run as root or raise `ulimit -l`)"
                              : ""));
  }
  xsk_socket_config scfg{};
  scfg.rx_size = rx_ring_size_;
  scfg.tx_size = comp_size_;
  scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // our program, our map
  scfg.bind_flags = bind_flags;
  rc = xsk_socket__create(&xsk_, netdev.c_str(), queue_id_, umem_, &rx_, &tx_, &scfg);
  if (rc == 0) return {};

  xsk_ = nullptr;
  // Undo the UMEM so that the next attempt starts clean; libxdp leaves the
  // fill and completion ring mappings of a UMEM whose first bind failed.
  xdp_mmap_offsets off{};
  socklen_t optlen = sizeof(off);
  if (getsockopt(xsk_umem__fd(umem_), SOL_XDP, XDP_MMAP_OFFSETS, &off, &optlen) == 0) {
    munmap(static_cast<uint8_t*>(fill_.ring) - off.fr.desc, off.fr.desc + fill_size_ * 8);
    munmap(static_cast<uint8_t*>(comp_.ring) - off.cr.desc, off.cr.desc + comp_size_ * 8);
  }
  xsk_umem__delete(umem_);
  umem_ = nullptr;

  const int e = -rc;
  std::string why = std::strerror(e);
  if (bind_flags & XDP_ZEROCOPY) {
    why += " (zero-copy: the driver lacks AF_XDP zero-copy; set zero_copy=auto or off)";
  } else if ((bind_flags & XDP_USE_SG) && (e == EINVAL || e == EOPNOTSUPP)) {
    why += " (AF_XDP multi-buffer needs Linux >= 6.6; or lower the MTU of '" + netdev +
           "' so a frame fits one chunk)";
  } else if (e == EBUSY) {
    why += " (another AF_XDP socket is bound to this queue)";
  }
  return Fail(e, "binding an AF_XDP socket to '" + netdev + "' queue " + std::to_string(queue_id_) +
                     " failed: " + why);
}

void XdpQueue::DestroySocket() {
  if (xsk_ != nullptr) {
    // Stop redirects first; the kernel also drops a closed socket from the map.
    bpf_map_delete_elem(xsks_map_fd_, &queue_id_);
    xsk_socket__delete(xsk_);
    xsk_ = nullptr;
  }
  if (umem_ != nullptr) {
    xsk_umem__delete(umem_);
    umem_ = nullptr;
  }
}

XdpQueue::~XdpQueue() {
  DestroySocket();
  xdp_sys::UnmapRegion(&region_);
}

bool XdpQueue::KernelStats(xdp_statistics* out) const {
  socklen_t len = sizeof(*out);
  return fd() >= 0 && getsockopt(fd(), SOL_XDP, XDP_STATISTICS, out, &len) == 0;
}

// ---------------------------------------------------------------- receive

uint32_t XdpQueue::rx_burst(Frame* frames, uint32_t n) {
  n = std::min(n, kMaxBurst);
  uint32_t idx = 0;
  const uint32_t avail = xsk_ring_cons__peek(&rx_, rx_ring_size_, &idx);
  if (avail == 0) return 0;

  uint32_t used = 0;
  uint32_t out = 0;
  uint64_t bytes = 0;
  uint32_t multi = 0;
  while (out < n && used < avail) {
    const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, idx + used);
    if ((d->options & XDP_PKT_CONTD) == 0) {
      // One descriptor: hand out the chunk in place.
      const uint64_t chunk_end = (d->addr | (chunk_ - 1)) + 1;
      if (d->addr + d->len > chunk_end || d->addr >= tx_base_) {
        ++counters_.rx_bad_desc;
        if (d->addr < tx_base_) rx_free_[rx_free_n_++] = d->addr & ~uint64_t{chunk_ - 1};
        ++used;
        continue;
      }
      frames[out++] =
          Frame{base_ + d->addr, d->len, static_cast<uint32_t>(chunk_end - d->addr), d->addr};
      bytes += d->len;
      ++used;
      continue;
    }
    // Multi-buffer: the kernel publishes a packet's descriptors together, but
    // stay safe if its last one is not visible yet.
    uint32_t last = used;
    while (last < avail &&
           (xsk_ring_cons__rx_desc(&rx_, idx + last)->options & XDP_PKT_CONTD) != 0) {
      ++last;
    }
    if (last == avail) break;
    if (scratch_free_n_ == 0) {
      ++counters_.rx_scratch_waits;
      break;
    }
    const uint32_t s = scratch_free_[--scratch_free_n_];
    uint8_t* dst = scratch_.get() + size_t{s} * scratch_bytes_ + headroom_;
    const uint32_t room = scratch_bytes_ - headroom_;
    uint32_t total = 0;
    bool ok = true;
    for (uint32_t j = used; j <= last; ++j) {
      const xdp_desc* f = xsk_ring_cons__rx_desc(&rx_, idx + j);
      if (f->addr >= tx_base_) {
        ok = false;
        ++counters_.rx_bad_desc;
        continue;
      }
      if (ok && total + f->len <= room && (f->addr & (chunk_ - 1)) + f->len <= chunk_) {
        std::memcpy(dst + total, base_ + f->addr, f->len);
        total += f->len;
      } else {
        ok = false;
      }
      rx_free_[rx_free_n_++] = f->addr & ~uint64_t{chunk_ - 1};
    }
    used = last + 1;
    if (!ok) {
      ++counters_.rx_oversize;
      scratch_free_[scratch_free_n_++] = s;
      continue;
    }
    frames[out++] = Frame{dst, total, room, kScratchTag | s};
    bytes += total;
    ++multi;
  }
  if (used < avail) xsk_ring_cons__cancel(&rx_, avail - used);
  if (used > 0) xsk_ring_cons__release(&rx_, used);
  counters_.rx_frames += out;
  counters_.rx_bytes += bytes;
  counters_.rx_multibuf += multi;
  return out;
}

void XdpQueue::rx_release(Frame* frames, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t h = frames[i].handle;
    if (h & kScratchTag) {
      scratch_free_[scratch_free_n_++] = static_cast<uint32_t>(h & ~kScratchTag);
    } else {
      rx_free_[rx_free_n_++] = h & ~uint64_t{chunk_ - 1};
    }
  }
}

void XdpQueue::refill() {
  if (rx_free_n_ == 0) return;
  if (rx_free_n_ < kMaxBurst) {
    // Below the batch threshold: refill only if the kernel is running short.
    const uint32_t free_slots = xsk_prod_nb_free(&fill_, fill_size_);
    if (fill_size_ - free_slots >= kMaxBurst) return;
  }
  const uint32_t free_slots = xsk_prod_nb_free(&fill_, rx_free_n_);
  const uint32_t k = std::min(rx_free_n_, free_slots);
  uint32_t idx = 0;
  if (k == 0 || xsk_ring_prod__reserve(&fill_, k, &idx) != k) return;
  for (uint32_t i = 0; i < k; ++i) {
    *xsk_ring_prod__fill_addr(&fill_, idx + i) = rx_free_[--rx_free_n_];
  }
  xsk_ring_prod__submit(&fill_, k);
  counters_.fill_submitted += k;
}

// ---------------------------------------------------------------- transmit

uint32_t XdpQueue::tx_alloc(Frame* frames, uint32_t n) {
  if (tx_free_n_ < n) ReapCompletions();
  const uint32_t k = std::min(n, tx_free_n_);
  for (uint32_t i = 0; i < k; ++i) {
    const uint32_t slot = tx_free_[--tx_free_n_];
    const uint64_t addr = tx_base_ + uint64_t{slot} * slot_bytes_;
    frames[i] = Frame{base_ + addr + headroom_, 0, slot_bytes_ - headroom_, addr};
  }
  return k;
}

void XdpQueue::tx_free(Frame* frames, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t h = frames[i].handle;
    if (h < tx_base_ || (h - tx_base_) % slot_bytes_ != 0) continue;
    const uint64_t slot = (h - tx_base_) / slot_bytes_;
    if (slot < tx_slots_) tx_free_[tx_free_n_++] = static_cast<uint32_t>(slot);
  }
}

uint32_t XdpQueue::tx_burst(Frame* frames, uint32_t n) {
  // Descriptors a frame needs: 0 if it is not a valid filled tx frame.
  auto descs_of = [this](const Frame& f) -> uint32_t {
    const uint64_t h = f.handle;
    if (h < tx_base_ || (h - tx_base_) % slot_bytes_ != 0 ||
        (h - tx_base_) / slot_bytes_ >= tx_slots_ || f.data < base_ || f.len == 0) {
      return 0;
    }
    const uint64_t off = static_cast<uint64_t>(f.data - base_);
    if (off < h || off + f.len > h + slot_bytes_) return 0;
    return static_cast<uint32_t>((off + f.len - 1) / chunk_ - off / chunk_ + 1);
  };

  const uint32_t room = xsk_prod_nb_free(&tx_, n * slot_chunks_);
  uint32_t accepted = 0;
  uint32_t descs = 0;
  for (; accepted < n; ++accepted) {
    const uint32_t d = descs_of(frames[accepted]);
    if (descs + d > room) break;
    descs += d;
  }
  if (accepted < n) ++counters_.tx_ring_full;
  if (accepted == 0) return 0;

  uint32_t idx = 0;
  if (descs > 0 && xsk_ring_prod__reserve(&tx_, descs, &idx) != descs) return 0;
  uint64_t bytes = 0;
  uint32_t sent = 0;
  uint32_t invalid = 0;
  for (uint32_t i = 0; i < accepted; ++i) {
    const Frame& f = frames[i];
    if (descs_of(f) == 0) {
      ++invalid;  // a caller bug: count it and give the slot back
      tx_free(&frames[i], 1);
      continue;
    }
    const uint32_t slot = static_cast<uint32_t>((f.handle - tx_base_) / slot_bytes_);
    uint64_t off = static_cast<uint64_t>(f.data - base_);
    uint32_t left = f.len;
    while (left > 0) {
      const uint64_t chunk_end = (off | (chunk_ - 1)) + 1;
      const uint32_t seg = static_cast<uint32_t>(std::min<uint64_t>(left, chunk_end - off));
      xdp_desc* d = xsk_ring_prod__tx_desc(&tx_, idx++);
      d->addr = off;
      d->len = seg;
      left -= seg;
      d->options = left > 0 ? XDP_PKT_CONTD : 0;
      off += seg;
      ++tx_pending_[slot];
    }
    bytes += f.len;
    ++sent;
  }
  if (descs > 0) {
    xsk_ring_prod__submit(&tx_, descs);
    tx_needs_kick_ = true;
  }
  counters_.tx_frames += sent;
  counters_.tx_bytes += bytes;
  counters_.tx_descs += descs;
  counters_.tx_invalid += invalid;
  return accepted;
}

void XdpQueue::ReapCompletions() {
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_cons__peek(&comp_, comp_size_, &idx);
  if (n == 0) return;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t addr = *xsk_ring_cons__comp_addr(&comp_, idx + i);
    if (addr < tx_base_) continue;
    const uint64_t slot = (addr - tx_base_) / slot_bytes_;
    if (slot >= tx_slots_ || tx_pending_[slot] == 0) continue;
    if (--tx_pending_[slot] == 0) tx_free_[tx_free_n_++] = static_cast<uint32_t>(slot);
  }
  xsk_ring_cons__release(&comp_, n);
  counters_.tx_completed += n;
}

void XdpQueue::Kick() {
  for (int i = 0; i < kMaxKicksPerFlush; ++i) {
    ++counters_.tx_kicks;
    if (sendto(fd(), nullptr, 0, MSG_DONTWAIT, nullptr, 0) >= 0) {
      tx_needs_kick_ = false;
      return;
    }
    const int e = errno;
    if (e == EAGAIN || e == EBUSY || e == ENOBUFS) {
      // Copy mode sends a batch per call, or the completion ring is full.
      ++counters_.tx_kick_busy;
      ReapCompletions();
      continue;
    }
    ++counters_.tx_kick_errors;  // e.g. ENETDOWN: keep the flag, retry next flush
    return;
  }
}

void XdpQueue::flush() {
  if (tx_needs_kick_) {
    // Copy mode transmits only inside sendto(); zero-copy drivers say when.
    if (!zero_copy_ || xsk_ring_prod__needs_wakeup(&tx_)) {
      Kick();
    } else {
      tx_needs_kick_ = false;
    }
  }
  if (xsk_ring_prod__needs_wakeup(&fill_)) {
    recvfrom(fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    ++counters_.fill_wakeups;
  }
  if (tx_free_n_ < tx_slots_) ReapCompletions();
}

}  // namespace burst::datapath
