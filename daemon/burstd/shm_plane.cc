// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/shm_plane.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "abi/burst_kmod.h"
#include "daemon/burstd/kmod_device.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kIbvEventCqErr = 0;           // IBV_EVENT_CQ_ERR
constexpr uint32_t kIbvEventQpFatal = 1;         // IBV_EVENT_QP_FATAL
constexpr uint32_t kIbvEventSrqErr = 14;         // IBV_EVENT_SRQ_ERR
constexpr uint32_t kIbvEventSrqLimit = 15;       // IBV_EVENT_SRQ_LIMIT_REACHED
constexpr uint32_t kIbvEventLastWqe = 16;        // IBV_EVENT_QP_LAST_WQE_REACHED
constexpr uint32_t kEntriesPerVisit = 64;        // per ring per poll: fairness between QPs
constexpr uint64_t kSweepIntervalNs = 1'000'000;  // one slice of the rings this often
constexpr size_t kSweepQpsPerTick = 64;            // QPs per slice (bounded work per interval)
constexpr uint32_t kCqeBatch = 64;

}  // namespace

// ---------------------------------------------------------------------------
// AsyncSink

AsyncSink::~AsyncSink() {
  if (fd_ >= 0) close(fd_);
}

void AsyncSink::post(uint64_t element, uint32_t event_type) {
  if (kmod_ != nullptr) {
    const uint32_t kind = event_type == kIbvEventCqErr ? BURST_KMOD_EV_CQ_ASYNC
                          : event_type == kIbvEventSrqErr || event_type == kIbvEventSrqLimit
                              ? BURST_KMOD_EV_SRQ_ASYNC
                              : BURST_KMOD_EV_QP_ASYNC;
    if (kmod_->raise(kind, event_type, tgid_, element) != 0) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
    return;
  }
  struct {
    uint64_t element;
    uint32_t event_type;
    uint32_t reserved;
  } rec{element, event_type, 0};
  static_assert(sizeof(rec) == 16);
  if (fd_ < 0 || write(fd_, &rec, sizeof(rec)) != static_cast<ssize_t>(sizeof(rec))) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

// ---------------------------------------------------------------------------
// ShmCq

namespace {

// A CQ region: one ring of at least `cqe` entries, headers written.
core::Status MakeCqRegion(uint32_t handle, uint32_t cqe, shm::ShmRegion* region,
                          shm::RingGeometry* geom, uint64_t* ring_offset) {
  shm::RingSpec spec;
  spec.kind = BURST_SHM_RING_CQ;
  spec.handle = handle;
  spec.geom.log2_entries = shm::Log2Ceil(cqe < 2 ? 2 : cqe);
  spec.geom.entry_size = shm::kCqEntrySize;
  if (spec.geom.log2_entries > BURST_SHM_MAX_LOG2_ENTRIES) return core::Errc::kInvalid;
  shm::RegionLayout layout;
  if (core::Status s = shm::LayoutRings({&spec, 1}, &layout); !s.ok()) return s;
  const std::string name = "burst-cq-" + std::to_string(handle);
  if (core::Status s = shm::ShmRegion::Create(name.c_str(), layout.size, region); !s.ok()) {
    return s;
  }
  shm::InitRingRegion(region->data(), layout, BURST_SHM_REGION_CQ, handle, {&spec, 1});
  *geom = spec.geom;
  *ring_offset = layout.part_offset[0];
  return core::Status::Ok();
}

// What the arm requests since `answered` ask for (abi: arm_sequence).
enum class ArmWait : uint8_t { kNone, kNext, kSolicited };
ArmWait pending_arm(uint32_t arm, uint32_t answered) {
  const auto all =
      static_cast<uint16_t>((arm & BURST_SHM_ARM_ALL_MASK) - (answered & BURST_SHM_ARM_ALL_MASK));
  const auto solicited = static_cast<uint16_t>((arm >> BURST_SHM_ARM_SOLICITED_SHIFT) -
                                               (answered >> BURST_SHM_ARM_SOLICITED_SHIFT));
  if (all == 0) return ArmWait::kNone;
  return all > solicited ? ArmWait::kNext : ArmWait::kSolicited;
}

bool wakes_solicited(const core::Wc& wc) {
  return wc.solicited || wc.status != core::WcStatus::kSuccess;
}

}  // namespace

core::Status ShmCq::Create(uint32_t handle, uint32_t cqe, uint64_t user_handle, int channel_fd,
                           std::unique_ptr<ShmCq>* out, const KmodDevice* kmod, uint32_t tgid) {
  std::unique_ptr<ShmCq> cq(new ShmCq());
  cq->channel_fd_ = channel_fd;  // adopted even on failure (closed by ~ShmCq)
  cq->kmod_ = channel_fd < 0 ? kmod : nullptr;
  cq->tgid_ = tgid;
  cq->user_handle_ = user_handle;
  cq->handle_ = handle;
  if (core::Status s = MakeCqRegion(handle, cqe, &cq->region_, &cq->geom_, &cq->ring_offset_);
      !s.ok()) {
    return s;
  }
  cq->producer_ = shm::RingProducer(cq->region_.data(), cq->ring_offset_, cq->geom_);
  *out = std::move(cq);
  return core::Status::Ok();
}

core::Status ShmCq::Resize(uint32_t cqe) {
  if (cqe == 0) return core::Errc::kInvalid;
  shm::ShmRegion region;
  shm::RingGeometry geom;
  uint64_t offset = 0;
  if (core::Status s = MakeCqRegion(handle_, cqe, &region, &geom, &offset); !s.ok()) return s;
  shm::RingProducer next(region.data(), offset, geom);
  auto* next_hdr = reinterpret_cast<burst_shm_ring*>(region.data() + offset);
  core::Status st = core::Status::Ok();
  lock();
  auto* hdr = reinterpret_cast<burst_shm_ring*>(region_.data() + ring_offset_);
  const uint32_t held = producer_.Unconsumed();
  if (producer_.fault() != shm::RingFault::kNone) {
    st = core::Errc::kState;
  } else if (held > cqe || next.Reserve(held) != held) {
    st = core::Errc::kInvalid;  // rxe and mlx5: EINVAL below the completions held
  } else {
    for (uint32_t i = 0; i < held; ++i) {
      std::memcpy(next.Entry(i), producer_.UnconsumedEntry(i), shm::kCqEntrySize);
    }
    next.Publish(held);
    // The application's pending arm requests and what burstd said of the ring go along.
    auto copy_word = [](uint32_t* to, uint32_t* from) {
      std::atomic_ref<uint32_t>(*to).store(
          std::atomic_ref<uint32_t>(*from).load(std::memory_order_acquire),
          std::memory_order_release);
    };
    copy_word(&next_hdr->arm_sequence, &hdr->arm_sequence);
    copy_word(&next_hdr->error_reason, &hdr->error_reason);
    copy_word(&next_hdr->status, &hdr->status);
    std::swap(region_, region);
    geom_ = geom;
    ring_offset_ = offset;
    producer_ = next;
  }
  unlock();
  return st;  // `region` (the old one after a switch) is unmapped here
}

ShmCq::~ShmCq() {
  if (channel_fd_ >= 0) close(channel_fd_);
}

void ShmCq::notify_locked(bool wakes_solicited) {
  auto* hdr = reinterpret_cast<burst_shm_ring*>(region_.data() + ring_offset_);
  // The producer index just published (a store) and the arm word (a load)
  // against the application's arm (a store, seq_cst) and its poll (a load):
  // without the fence both sides could miss the other's store and the
  // application would sleep on a completion in its ring. Only CQs with a
  // channel pay for it (the others have nobody to wake).
  if (channel_fd_ >= 0 || kmod_ != nullptr) std::atomic_thread_fence(std::memory_order_seq_cst);
  // Written by the application (req_notify_cq); any value is harmless.
  const uint32_t arm =
      std::atomic_ref<uint32_t>(hdr->arm_sequence).load(std::memory_order_acquire);
  const ArmWait wait = pending_arm(arm, answered_arm_);
  if (wait == ArmWait::kNone || (wait == ArmWait::kSolicited && !wakes_solicited)) return;
  answered_arm_ = arm;
  if (kmod_ != nullptr) {
    // Native mode: the kernel's completion channel, through the shadow CQ
    // (one ioctl per answered arm, as the channel write below).
    if (kmod_->raise(BURST_KMOD_EV_CQ_COMP, 0, tgid_, user_handle_) != 0) {
      overflows_.fetch_add(1, std::memory_order_relaxed);
    }
    return;
  }
  if (channel_fd_ < 0) return;
  // What read() on the channel returns: struct ib_uverbs_comp_event_desc,
  // the CQ's user handle (8 bytes).
  const uint64_t ev = user_handle_;
  if (send(channel_fd_, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(ev)) {
    overflows_.fetch_add(1, std::memory_order_relaxed);
  }
}

uint32_t ShmCq::deliver(core::Engine& engine, uint32_t shard) {
  core::Wc wc[kCqeBatch];
  uint32_t moved = 0;
  bool solicited = false;  // a completion that answers a solicited-only arm
  lock();
  for (;;) {
    const uint32_t room = producer_.Reserve(kCqeBatch);
    if (room == 0) {
      if (producer_.fault() != shm::RingFault::kNone) {
        shm::MarkRingError(region_.data(), ring_offset_, BURST_SHM_RING_ERR_INDEX_BACKWARDS);
      }
      break;  // full: the completions wait in the Engine CQ
    }
    const int n = engine.poll_cq(shard, wc, static_cast<int>(room));
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) {
      shm::EncodeCqe(wc[i], reinterpret_cast<burst_shm_cqe*>(producer_.Entry(i)));
      solicited |= wakes_solicited(wc[i]);
    }
    producer_.Publish(static_cast<uint32_t>(n));
    moved += static_cast<uint32_t>(n);
    if (static_cast<uint32_t>(n) < room) break;
  }
  if (moved != 0) notify_locked(solicited);
  unlock();
  return moved;
}

bool ShmCq::push(const core::Wc& wc) {
  lock();
  const bool ok = producer_.Reserve(1) == 1;
  if (ok) {
    shm::EncodeCqe(wc, reinterpret_cast<burst_shm_cqe*>(producer_.Entry(0)));
    producer_.Publish(1);
    notify_locked(wakes_solicited(wc));
  } else {
    overflows_.fetch_add(1, std::memory_order_relaxed);
  }
  unlock();
  return ok;
}

// ---------------------------------------------------------------------------
// AhTable

AhTable::AhTable() : slots_(new Slot[kSlots]) {}

uint32_t AhTable::add(uint32_t client, const core::Address& ah) {
  for (uint32_t i = 0; i < kSlots - 1; ++i) {
    const uint32_t h = next_;
    next_ = next_ + 1 == kSlots ? 1 : next_ + 1;
    Slot& s = slots_[h];
    if (s.owner.load(std::memory_order_relaxed) != 0) continue;
    s.seq.fetch_add(1, std::memory_order_relaxed);  // odd: being written
    std::atomic_thread_fence(std::memory_order_release);
    s.ah = ah;
    s.seq.fetch_add(1, std::memory_order_release);
    s.owner.store(client, std::memory_order_release);
    return h;
  }
  return 0;
}

void AhTable::remove(uint32_t handle) {
  if (handle == 0 || handle >= kSlots) return;
  slots_[handle].owner.store(0, std::memory_order_release);
}

bool AhTable::get(uint32_t handle, uint32_t client, core::Address* out) const {
  if (handle == 0 || handle >= kSlots || client == 0) return false;
  const Slot& s = slots_[handle];
  if (s.owner.load(std::memory_order_acquire) != client) return false;
  const uint32_t seq = s.seq.load(std::memory_order_acquire);
  if (seq & 1) return false;
  *out = s.ah;
  std::atomic_thread_fence(std::memory_order_acquire);
  return s.seq.load(std::memory_order_relaxed) == seq &&
         s.owner.load(std::memory_order_relaxed) == client;
}

// ---------------------------------------------------------------------------
// ShmPlane

void ShmPlane::set_doorbell(shm::ShmRegion* region, uint32_t log2_slots, uint64_t reclaim_ns) {
  auto* hdr = reinterpret_cast<burst_shm_doorbell*>(
      region->data() + reinterpret_cast<const burst_shm_region*>(region->data())->part_offset[0]);
  doorbell_ = std::make_unique<shm::DoorbellConsumer>(hdr, log2_slots, reclaim_ns);
  doorbell_hdr_ = hdr;
}

bool ShmPlane::prepare_sleep() {
  if (doorbell_hdr_ == nullptr) return true;
  std::atomic_ref<uint32_t> flag(doorbell_hdr_->need_wakeup);
  flag.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // head is advanced by producers when they reserve: anything past our tail is
  // a record (or a reservation) to look at before sleeping.
  const uint64_t head = std::atomic_ref<uint64_t>(doorbell_hdr_->head).load(std::memory_order_relaxed);
  if (head != doorbell_->tail()) {
    flag.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void ShmPlane::end_sleep() {
  if (doorbell_hdr_ != nullptr) {
    std::atomic_ref<uint32_t>(doorbell_hdr_->need_wakeup).store(0, std::memory_order_relaxed);
  }
}

void ShmPlane::bind_qp(const ShmQpBinding& b) {
  QpRings q;
  q.b = b;
  q.sq = shm::RingConsumer(b.region, b.sq_offset, b.sq_geom);
  if (b.rq_offset != 0) q.rq = shm::RingConsumer(b.region, b.rq_offset, b.rq_geom);
  auto [it, fresh] = qps_.insert_or_assign(b.qpn, std::move(q));
  if (fresh) {
    it->second.sweep_pos = static_cast<uint32_t>(sweep_qps_.size());
    sweep_qps_.push_back(b.qpn);
  } else {
    it->second.sweep_pos = sweep_pos_of(b.qpn);
  }
  const uint32_t need = std::max(b.sq_geom.entry_size, b.rq_geom.entry_size);
  if (copy_.size() < need) copy_.resize(need);
}

uint32_t ShmPlane::sweep_pos_of(uint32_t qpn) const {
  for (uint32_t i = 0; i < sweep_qps_.size(); ++i) {
    if (sweep_qps_[i] == qpn) return i;
  }
  return 0;  // not reached: every bound QP is in the sweep order
}

void ShmPlane::unbind_qp(uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) return;
  // Swap-remove from the sweep order: the last QP takes the freed position.
  const uint32_t pos = it->second.sweep_pos;
  const uint32_t last = sweep_qps_.back();
  sweep_qps_[pos] = last;
  qps_.find(last)->second.sweep_pos = pos;
  sweep_qps_.pop_back();
  qps_.erase(it);
}

void ShmPlane::bind_srq(const ShmSrqBinding& b) {
  SrqRing st;
  st.b = b;
  st.ring = shm::RingConsumer(b.region, b.ring_offset, b.geom);
  srqs_[b.srqn] = std::move(st);
  if (copy_.size() < b.geom.entry_size) copy_.resize(b.geom.entry_size);
}

void ShmPlane::unbind_srq(uint32_t srqn) { srqs_.erase(srqn); }

bool ShmPlane::drain_srq(core::Engine& engine, SrqRing& st) {
  if (st.failed) return false;
  const uint32_t n = st.ring.Peek(kEntriesPerVisit);
  bool bad = n == 0 && st.ring.fault() != shm::RingFault::kNone;
  uint32_t done = 0;
  for (; done < n && !bad; ++done) {
    st.ring.CopyEntry(done, copy_.data());
    core::RecvWr wr;
    core::Status s = shm::DecodeRecvWqe(copy_.data(), st.b.limits, &wr);
    if (s.ok()) s = engine.post_srq_recv(st.b.engine_id, wr);
    if (s.errc() == core::Errc::kNoMemory) break;
    bad = !s.ok();
    if (bad) break;
  }
  st.ring.Release(done);
  counters_.recv_wqes += done;
  if (bad) {
    // The SRQ stops taking work; its QPs keep what they have (IBV_EVENT_SRQ_ERR).
    st.failed = true;
    ++counters_.bad_wqes;
    shm::MarkRingError(st.b.region, st.b.ring_offset,
                       n == 0 ? BURST_SHM_RING_ERR_INDEX_OVERRUN : BURST_SHM_RING_ERR_BAD_ENTRY);
    if (st.b.async) st.b.async->post(st.b.user_handle, kIbvEventSrqErr);
    return true;
  }
  return done != 0;
}

void ShmPlane::engine_events(core::Engine& engine) {
  uint32_t id = 0;
  while (engine.take_srq_limit_event(&id)) {
    for (auto& [srqn, st] : srqs_) {
      if (st.b.engine_id == id && st.b.async) st.b.async->post(st.b.user_handle, kIbvEventSrqLimit);
    }
  }
  while (engine.take_last_wqe_event(&id)) {
    auto it = qps_.find(id);
    if (it != qps_.end() && it->second.b.async) {
      it->second.b.async->post(it->second.b.user_handle, kIbvEventLastWqe);
    }
  }
}

void ShmPlane::bind_cq(uint32_t shard, ShmCq* cq) { cqs_.emplace_back(shard, cq); }

void ShmPlane::unbind_cq(uint32_t shard) {
  for (size_t i = 0; i < cqs_.size(); ++i) {
    if (cqs_[i].first == shard) {
      cqs_[i] = cqs_.back();
      cqs_.pop_back();
      return;
    }
  }
}

void ShmPlane::fail_qp(core::Engine& engine, QpRings& q, bool send_side, uint64_t wr_id,
                       burst_shm_ring_error reason) {
  if (q.failed) return;
  q.failed = true;
  // The ring the bad entry came from tells the provider why; its later posts fail.
  shm::MarkRingError(q.b.region, send_side ? q.b.sq_offset : q.b.rq_offset, reason);
  core::QpAttr err;
  err.qp_state = core::QpState::kErr;
  (void)engine.modify_qp(q.b.qpn, err, core::kQpState);  // flushes outstanding work
  deliver(engine);  // the flushed completions first, then the bad request's own
  if (reason == BURST_SHM_RING_ERR_BAD_ENTRY) {
    core::Wc wc;
    wc.wr_id = wr_id;
    wc.status = core::WcStatus::kLocQpOpErr;
    wc.opcode = send_side ? core::WcOpcode::kSend : core::WcOpcode::kRecv;
    wc.qp_num = q.b.qpn;
    ShmCq* cq = send_side ? q.b.send_cq : q.b.recv_cq;
    if (cq != nullptr) (void)cq->push(wc);
  }
  if (q.b.async) q.b.async->post(q.b.user_handle, kIbvEventQpFatal);
}

void ShmPlane::revoke_qp(core::Engine& engine, uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) return;
  QpRings& q = it->second;
  if (q.failed) {
    // Failed earlier (its rings are no longer read), but the client may have
    // moved the QP out of ERR since: back to ERR, and say so.
    core::QpAttr err;
    err.qp_state = core::QpState::kErr;
    (void)engine.modify_qp(q.b.qpn, err, core::kQpState);
    deliver(engine);
    if (q.b.async) q.b.async->post(q.b.user_handle, kIbvEventQpFatal);
    return;
  }
  if (q.b.rq_offset != q.b.sq_offset) {
    shm::MarkRingError(q.b.region, q.b.rq_offset, BURST_SHM_RING_ERR_REVOKED);
  }
  fail_qp(engine, q, true, 0, BURST_SHM_RING_ERR_REVOKED);
}

template <class Post>
bool ShmPlane::drain_ring(core::Engine& engine, QpRings& q, bool send_side, Post&& post) {
  shm::RingConsumer& ring = send_side ? q.sq : q.rq;
  const uint32_t n = ring.Peek(kEntriesPerVisit);
  if (n == 0) {
    if (ring.fault() != shm::RingFault::kNone) {
      ++counters_.ring_faults;
      fail_qp(engine, q, send_side, 0, BURST_SHM_RING_ERR_INDEX_OVERRUN);
    }
    return false;
  }
  uint32_t done = 0;
  for (; done < n; ++done) {
    ring.CopyEntry(done, copy_.data());
    const core::Status s = post(copy_.data());
    if (s.errc() == core::Errc::kNoMemory) break;  // Engine queue full: retry later
    if (!s.ok()) {
      ++counters_.bad_wqes;
      ring.Release(done);
      uint64_t wr_id;
      std::memcpy(&wr_id,
                  copy_.data() + (send_side ? offsetof(burst_shm_send_wqe, wr_id)
                                            : offsetof(burst_shm_recv_wqe, wr_id)),
                  sizeof(wr_id));
      fail_qp(engine, q, send_side, wr_id, BURST_SHM_RING_ERR_BAD_ENTRY);
      return true;
    }
  }
  ring.Release(done);
  (send_side ? counters_.send_wqes : counters_.recv_wqes) += done;
  return done != 0;
}

bool ShmPlane::drain_sq(core::Engine& engine, QpRings& q) {
  if (q.failed) return false;
  return drain_ring(engine, q, true, [&](const uint8_t* entry) {
    shm::DecodedSendWqe d;
    core::Status s = shm::DecodeSendWqe(entry, q.b.sq_limits, &d);
    if (s.ok() && (d.wr.send_flags & core::kSendInline) != 0) {
      // Inline bytes are read from this private copy at post time.
      d.wr.num_sge = d.inline_len != 0 ? 1 : 0;
      d.wr.sg_list[0] = core::Sge{reinterpret_cast<uintptr_t>(d.inline_data), d.inline_len, 0};
    }
    if (s.ok() && d.ah_handle != 0) {
      if (ahs_ == nullptr || !ahs_->get(d.ah_handle, q.b.client, &d.wr.ud.ah)) {
        s = core::Errc::kInvalid;  // not an address handle of this client
      }
    }
    return s.ok() ? engine.post_send(q.b.qpn, d.wr) : s;
  });
}

bool ShmPlane::drain_rq(core::Engine& engine, QpRings& q) {
  if (q.failed || q.b.rq_offset == 0) return false;
  return drain_ring(engine, q, false, [&](const uint8_t* entry) {
    core::RecvWr wr;
    const core::Status s = shm::DecodeRecvWqe(entry, q.b.rq_limits, &wr);
    return s.ok() ? engine.post_recv(q.b.qpn, wr) : s;
  });
}

bool ShmPlane::poll(core::Engine& engine, uint64_t now_ns) {
  bool worked = false;
  if (doorbell_) {
    shm::DoorbellRecord recs[32];
    const uint32_t n = doorbell_->Poll(recs, 32, now_ns);
    counters_.doorbells += n;
    for (uint32_t i = 0; i < n; ++i) {
      if (recs[i].kind == BURST_SHM_DB_SRQ) {
        auto sit = srqs_.find(recs[i].handle);
        if (sit != srqs_.end()) worked |= drain_srq(engine, sit->second);
        continue;
      }
      auto it = qps_.find(recs[i].handle);
      if (it == qps_.end()) continue;  // a hint for a QP that is gone (or forged)
      if (recs[i].kind == BURST_SHM_DB_SQ) {
        worked |= drain_sq(engine, it->second);
      } else if (recs[i].kind == BURST_SHM_DB_RQ) {
        worked |= drain_rq(engine, it->second);
      }
    }
    worked |= n != 0;
  }
  if (now_ns >= next_sweep_ns_ && (!qps_.empty() || !srqs_.empty())) {
    next_sweep_ns_ = now_ns + kSweepIntervalNs;
    worked |= sweep(engine);
  }
  return worked;
}

// A bounded slice of the rings per interval (idle QPs must not cost a loop
// O(QPs)): every SRQ (few), then up to kSweepQpsPerTick QPs from a cursor that
// wraps, so every ring is looked at within ceil(QPs / kSweepQpsPerTick) intervals.
bool ShmPlane::sweep(core::Engine& engine) {
  bool worked = false;
  ++counters_.sweeps;
  for (auto& [srqn, st] : srqs_) {
    const bool found = drain_srq(engine, st);
    counters_.sweep_finds += found ? 1 : 0;
    worked |= found;
  }
  const size_t visits = std::min<size_t>(sweep_qps_.size(), kSweepQpsPerTick);
  for (size_t i = 0; i < visits; ++i) {
    if (sweep_cursor_ >= sweep_qps_.size()) sweep_cursor_ = 0;
    QpRings& q = qps_.find(sweep_qps_[sweep_cursor_++])->second;
    const bool rq = drain_rq(engine, q);  // both rings, always
    const bool found = drain_sq(engine, q) || rq;
    counters_.sweep_finds += found ? 1 : 0;
    counters_.sweep_visits += 1;
    worked |= found;
  }
  return worked;
}

bool ShmPlane::deliver(core::Engine& engine) {
  engine_events(engine);
  // Nothing completed since the last look and nothing left behind: no CQ to
  // visit (an idle worker with thousands of CQs costs a load, not a scan).
  const uint64_t pushed = engine.cqes_pushed();
  if (pushed == cqes_seen_ && !cq_backlog_) return false;
  cqes_seen_ = pushed;
  cq_backlog_ = false;
  uint32_t moved = 0;
  // A CQ with nothing new costs a load, not its lock (other workers feeding
  // the same CQ take it too).
  for (auto& [shard, cq] : cqs_) {
    if (engine.cq_size(shard) == 0) continue;
    moved += cq->deliver(engine, shard);
    cq_backlog_ |= engine.cq_size(shard) != 0;  // its ring was full: look again
  }
  counters_.cqes += moved;
  return moved != 0;
}

}  // namespace burst::burstd
