// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "datapath/dpdk/dpdk_queue.h"

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <cstring>

#include "datapath/arp_agent.h"

namespace burst::datapath {
namespace {

// Frames handed out by rx_burst or tx_alloc carry their mbuf in `handle`.
void free_frames(Frame* frames, uint32_t n) {
  rte_mbuf* mb[DpdkQueue::kMaxBurst];
  while (n > 0) {
    const uint32_t k = n < DpdkQueue::kMaxBurst ? n : DpdkQueue::kMaxBurst;
    for (uint32_t i = 0; i < k; ++i) mb[i] = reinterpret_cast<rte_mbuf*>(frames[i].handle);
    rte_pktmbuf_free_bulk(mb, k);
    frames += k;
    n -= k;
  }
}

}  // namespace

DpdkQueue::~DpdkQueue() {
  for (rte_mbuf* m : control_) rte_pktmbuf_free(m);
}

void DpdkQueue::on_thread_start() {
  // A registered non-EAL thread gets an lcore id, so mempool gets and puts go
  // through its per-lcore cache instead of the shared ring. Failure (every
  // lcore slot taken) only costs speed.
  if (rte_lcore_id() == LCORE_ID_ANY) rte_thread_register();
}

uint32_t DpdkQueue::rx_burst(Frame* frames, uint32_t n) {
  rte_mbuf* mb[kMaxBurst];
  if (n > kMaxBurst) n = kMaxBurst;
  const uint16_t got = rte_eth_rx_burst(port_id_, queue_id_, mb, static_cast<uint16_t>(n));
  uint32_t out = 0;
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < got; ++i) {
    rte_mbuf* m = mb[i];
    uint8_t* data = rte_pktmbuf_mtod(m, uint8_t*);
    const uint32_t len = m->pkt_len;
    if (m->nb_segs > 1) {
      if (len > frame_max_) {
        ++counters_.rx_oversize;
        rte_pktmbuf_free(m);
        continue;
      }
      uint8_t* dst = scratch_.get() + size_t{out} * frame_max_;
      uint32_t off = 0;
      for (const rte_mbuf* s = m; s != nullptr; s = s->next) {
        std::memcpy(dst + off, rte_pktmbuf_mtod(s, const uint8_t*), s->data_len);
        off += s->data_len;
      }
      data = dst;
      ++counters_.rx_multiseg;
    }
    if (arp_ != nullptr && ArpAgent::is_arp(data, len)) {
      arp_->on_frame(data, len);
      ++counters_.rx_arp;
      rte_pktmbuf_free(m);
      continue;
    }
    frames[out].data = data;
    frames[out].len = len;
    frames[out].cap = 0;
    frames[out].handle = reinterpret_cast<uint64_t>(m);
    bytes += len;
    ++out;
  }
  counters_.rx_frames += out;
  counters_.rx_bytes += bytes;
  return out;
}

void DpdkQueue::rx_release(Frame* frames, uint32_t n) { free_frames(frames, n); }

uint32_t DpdkQueue::tx_alloc(Frame* frames, uint32_t n) {
  rte_mbuf* mb[kMaxBurst];
  uint32_t done = 0;
  while (done < n) {
    uint32_t k = n - done < kMaxBurst ? n - done : kMaxBurst;
    // alloc_bulk is all-or-nothing: halve the request until it succeeds.
    while (k > 0 && rte_pktmbuf_alloc_bulk(tx_pool_, mb, k) != 0) k /= 2;
    if (k == 0) {
      ++counters_.tx_alloc_fail;
      break;
    }
    for (uint32_t i = 0; i < k; ++i) {
      Frame& f = frames[done + i];
      f.data = rte_pktmbuf_mtod(mb[i], uint8_t*);
      f.len = 0;
      f.cap = rte_pktmbuf_tailroom(mb[i]);
      f.handle = reinterpret_cast<uint64_t>(mb[i]);
    }
    done += k;
  }
  return done;
}

uint32_t DpdkQueue::tx_burst(Frame* frames, uint32_t n) {
  rte_mbuf* mb[kMaxBurst];
  uint32_t done = 0;
  while (done < n) {
    const uint32_t want = n - done < kMaxBurst ? n - done : kMaxBurst;
    uint32_t k = 0;
    for (; k < want; ++k) {
      const Frame& f = frames[done + k];
      if (f.len == 0 || f.len > f.cap || f.len > frame_max_) break;
      rte_mbuf* m = reinterpret_cast<rte_mbuf*>(f.handle);
      m->data_len = static_cast<uint16_t>(f.len);
      m->pkt_len = f.len;
      mb[k] = m;
    }
    if (k == 0) {  // a bad frame: consumed (freed, counted); the caller moves on
      rte_pktmbuf_free(reinterpret_cast<rte_mbuf*>(frames[done].handle));
      ++counters_.tx_invalid;
      ++done;
      continue;
    }
    const uint16_t sent = rte_eth_tx_burst(port_id_, queue_id_, mb, static_cast<uint16_t>(k));
    for (uint16_t i = 0; i < sent; ++i) counters_.tx_bytes += frames[done + i].len;
    counters_.tx_frames += sent;
    done += sent;
    if (sent < k) {
      ++counters_.tx_full;
      break;
    }
  }
  return done;
}

bool DpdkQueue::queue_control(rte_mbuf* m) {
  std::lock_guard<std::mutex> lock(control_mu_);
  if (control_.size() >= 64) {
    rte_pktmbuf_free(m);
    return false;
  }
  control_.push_back(m);
  control_pending_.store(true, std::memory_order_release);
  return true;
}

void DpdkQueue::flush_control() {
  std::lock_guard<std::mutex> lock(control_mu_);
  const uint16_t n = static_cast<uint16_t>(control_.size());
  const uint16_t sent = rte_eth_tx_burst(port_id_, queue_id_, control_.data(), n);
  counters_.tx_frames += sent;
  control_.erase(control_.begin(), control_.begin() + sent);
  control_pending_.store(!control_.empty(), std::memory_order_release);
}

void DpdkQueue::tx_free(Frame* frames, uint32_t n) { free_frames(frames, n); }

}  // namespace burst::datapath
