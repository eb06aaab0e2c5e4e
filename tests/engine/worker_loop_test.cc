// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// One-host loopback in core::Worker (issue 14 item 1): with local delivery on,
// frames for the port's own MAC never reach the backend; they go through the
// handoff ring of the worker owning their destination QP (its own ring on a
// single-worker port) and are received like wire frames. RC QPs of one port,
// on one worker or on two, move data with the whole transport; a ring too small
// for a burst drops frames (counted) and the transport recovers them.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/mr.h"
#include "core/worker.h"

namespace burst::test {
namespace {

constexpr std::array<uint8_t, 6> kOwnMac = {2, 0, 0, 0, 0, 1};
constexpr std::array<uint8_t, 16> kOwnGid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};

// A queue with nothing on the wire: it records what it is asked to send.
struct WireQueue {
  static constexpr uint32_t kMaxBurst = 8;
  uint32_t allocated = 0;
  uint32_t sent = 0;
  uint32_t freed = 0;
  std::vector<uint8_t> tx_store = std::vector<uint8_t>(kMaxBurst * 2048);

  uint32_t rx_burst(datapath::Frame*, uint32_t) { return 0; }
  void rx_release(datapath::Frame*, uint32_t) {}
  uint32_t tx_alloc(datapath::Frame* f, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) f[i] = {tx_store.data() + i * 2048, 0, 2048, i};
    allocated += n;
    return n;
  }
  uint32_t tx_burst(datapath::Frame*, uint32_t n) {
    sent += n;
    return n;
  }
  void tx_free(datapath::Frame*, uint32_t n) { freed += n; }
  void flush() {}
  void refill() {}
  uint32_t mtu() const { return 1514; }
  uint32_t headroom() const { return 0; }
  uint32_t queue_count() const { return 2; }
  bool zero_copy() const { return false; }
};
static_assert(datapath::Backend<WireQueue>);

struct LoopPort {
  LoopPort(uint32_t workers, uint32_t ring_slots) : mrs(64, 8), handoff(workers, ring_slots, 2048) {
    for (uint32_t w = 0; w < workers; ++w) {
      core::EngineConfig c;
      c.port.mac = kOwnMac;
      c.port.gids = {kOwnGid};
      c.max_qps = 16;
      c.qpn_stride = workers;
      c.qpn_offset = w;
      copiers.push_back(std::make_unique<core::CopyEngine>());
      engines.push_back(std::make_unique<core::Engine>(c, mrs, *copiers.back()));
      queues.push_back(std::make_unique<WireQueue>());
      loops.push_back(
          std::make_unique<core::Worker<WireQueue>>(*engines.back(), *queues.back(), &handoff, w));
      loops.back()->enable_local_delivery();
    }
  }
  void poll() {
    now_ns += 2000;
    for (auto& l : loops) l->poll_once(now_ns);
  }

  core::MrTable mrs;
  core::Handoff handoff;
  std::vector<std::unique_ptr<core::CopyEngine>> copiers;
  std::vector<std::unique_ptr<core::Engine>> engines;
  std::vector<std::unique_ptr<WireQueue>> queues;
  std::vector<std::unique_ptr<core::Worker<WireQueue>>> loops;
  uint64_t now_ns = 1000;
};

struct Qp {
  core::Engine* engine;
  uint32_t qpn = 0;
  uint32_t cq = 0;
};

// An RC QP on worker w, not yet connected.
Qp make_qp(LoopPort& p, uint32_t w, uint32_t pd) {
  Qp q{p.engines[w].get()};
  EXPECT_TRUE(q.engine->create_cq(256, &q.cq).ok());
  core::QpInitAttr ia;
  ia.pd = pd;
  ia.send_cq = ia.recv_cq = q.cq;
  EXPECT_TRUE(q.engine->create_qp(ia, &q.qpn).ok());
  return q;
}

// To RTS, aimed at `peer` through the port's own GID and MAC.
void connect(Qp& q, const Qp& peer) {
  core::QpAttr a{};
  a.qp_state = core::QpState::kInit;
  a.port_num = 1;
  a.qp_access_flags = core::kAccessLocalWrite | core::kAccessRemoteWrite;
  ASSERT_TRUE(
      q.engine
          ->modify_qp(q.qpn, a,
                      core::kQpState | core::kQpPkeyIndex | core::kQpPort | core::kQpAccessFlags)
          .ok());
  a = {};
  a.qp_state = core::QpState::kRtr;
  a.path_mtu = core::Mtu::k1024;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = 100;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.ah.dgid = kOwnGid;
  a.ah.dmac = kOwnMac;
  a.ah.sgid_index = 0;
  ASSERT_TRUE(q.engine
                  ->modify_qp(q.qpn, a,
                              core::kQpState | core::kQpAv | core::kQpPathMtu | core::kQpDestQpn |
                                  core::kQpRqPsn | core::kQpMaxDestRdAtomic | core::kQpMinRnrTimer)
                  .ok());
  a = {};
  a.qp_state = core::QpState::kRts;
  a.sq_psn = 100;
  a.timeout = 5;  // 4.096 us * 2^5: ~131 us of virtual time
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  ASSERT_TRUE(q.engine
                  ->modify_qp(q.qpn, a,
                              core::kQpState | core::kQpSqPsn | core::kQpQpTimeout |
                                  core::kQpRetryCnt | core::kQpRnrRetry | core::kQpMaxQpRdAtomic)
                  .ok());
}

// Writes 64 KiB from a to b's buffer, then SENDs 4 KiB; both must arrive intact.
void write_and_send(LoopPort& p, uint32_t wa, uint32_t wb) {
  const uint32_t pd = p.mrs.alloc_pd();
  ASSERT_NE(pd, 0u);
  Qp a = make_qp(p, wa, pd);
  Qp b = make_qp(p, wb, pd);
  if (wa != wb) {
    EXPECT_EQ(a.qpn % 2 == b.qpn % 2, false) << "QPNs are striped over the workers";
  }
  connect(a, b);
  connect(b, a);
  std::vector<uint8_t> src(65536), dst(65536, 0), rbuf(4096, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  const uint32_t access = core::kAccessLocalWrite | core::kAccessRemoteWrite;
  uint32_t sl, sr, dl, dr, rl, rr;
  ASSERT_TRUE(p.mrs.reg_mr(pd, src.data(), 0x10000, src.size(), access, &sl, &sr).ok());
  ASSERT_TRUE(p.mrs.reg_mr(pd, dst.data(), 0x100000, dst.size(), access, &dl, &dr).ok());
  ASSERT_TRUE(p.mrs.reg_mr(pd, rbuf.data(), 0x200000, rbuf.size(), access, &rl, &rr).ok());

  core::RecvWr rwr;
  rwr.wr_id = 9;
  rwr.num_sge = 1;
  rwr.sg_list[0] = {0x200000, 4096, rl};
  ASSERT_TRUE(b.engine->post_recv(b.qpn, rwr).ok());
  core::SendWr w;
  w.wr_id = 1;
  w.opcode = core::WrOpcode::kRdmaWrite;
  w.send_flags = core::kSendSignaled;
  w.num_sge = 1;
  w.sg_list[0] = {0x10000, 65536, sl};
  w.rdma.remote_addr = 0x100000;
  w.rdma.rkey = dr;
  ASSERT_TRUE(a.engine->post_send(a.qpn, w).ok());
  w.wr_id = 2;
  w.opcode = core::WrOpcode::kSend;
  w.sg_list[0] = {0x10000, 4096, sl};
  ASSERT_TRUE(a.engine->post_send(a.qpn, w).ok());

  int sends = 0, recvs = 0;
  for (int round = 0; round < 200000 && (sends < 2 || recvs < 1); ++round) {
    p.poll();
    core::Wc wc[4];
    for (int k = a.engine->poll_cq(a.cq, wc, 4), i = 0; i < k; ++i) {
      EXPECT_EQ(wc[i].status, core::WcStatus::kSuccess) << "wr " << wc[i].wr_id;
      if (wc[i].qp_num == a.qpn) ++sends;
      if (wc[i].qp_num == b.qpn) ++recvs;
    }
    if (b.cq != a.cq || b.engine != a.engine) {
      for (int k = b.engine->poll_cq(b.cq, wc, 4), i = 0; i < k; ++i) {
        EXPECT_EQ(wc[i].status, core::WcStatus::kSuccess) << "wr " << wc[i].wr_id;
        if (wc[i].qp_num == b.qpn) ++recvs;
      }
    }
  }
  ASSERT_EQ(sends, 2);
  ASSERT_EQ(recvs, 1);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(std::memcmp(rbuf.data(), src.data(), 4096), 0);
  for (auto& q : p.queues) EXPECT_EQ(q->sent, 0u) << "no frame for the own MAC reaches the wire";
}

TEST(WorkerLoop, OneWorkerDeliversToItself) {
  LoopPort p(1, 1024);
  write_and_send(p, 0, 0);
  const core::WorkerCounters& c = p.loops[0]->counters();
  EXPECT_GT(c.looped, 64u);  // 64 write packets + the SEND + ACKs
  EXPECT_EQ(c.loop_full, 0u);
  EXPECT_EQ(c.handoff_in, c.looped);
  EXPECT_EQ(p.queues[0]->freed, p.queues[0]->allocated) << "every transmit buffer is given back";
  EXPECT_EQ(p.engines[0]->counters().retransmit_events, 0u);
}

TEST(WorkerLoop, TwoWorkersCrossTheRings) {
  LoopPort p(2, 1024);
  write_and_send(p, 0, 1);
  for (uint32_t w = 0; w < 2; ++w) {
    const core::WorkerCounters& c = p.loops[w]->counters();
    EXPECT_GT(c.looped, 0u) << "worker " << w;
    EXPECT_GT(c.handoff_in, 0u) << "worker " << w;
    EXPECT_EQ(c.loop_full, 0u) << "worker " << w;
  }
  EXPECT_GT(p.loops[0]->counters().looped, 64u);  // worker 0 is the requester
}

TEST(WorkerLoop, FullRingDropsAndTheTransportRecovers) {
  LoopPort p(1, 2);  // two slots: a burst of four overflows it
  write_and_send(p, 0, 0);
  const core::WorkerCounters& c = p.loops[0]->counters();
  EXPECT_GT(c.loop_full, 0u);
  EXPECT_GT(p.engines[0]->counters().retransmitted_packets, 0u);
}

TEST(WorkerLoop, ProducerWakesASleepingOwner) {
  core::Handoff h(2, 8, 64);
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  h.set_wake_fd(1, fd);
  uint64_t v = 0;
  const uint8_t frame[16] = {};
  h.wake(1);  // not sleeping: no write
  EXPECT_LT(read(fd, &v, sizeof(v)), 0);
  ASSERT_TRUE(h.may_sleep(1));
  ASSERT_TRUE(h.ring(0, 1).push(frame, sizeof(frame)));
  h.wake(1);
  EXPECT_EQ(read(fd, &v, sizeof(v)), 8);
  h.wake(1);  // once per sleep
  EXPECT_LT(read(fd, &v, sizeof(v)), 0);
  h.woke(1);
  EXPECT_FALSE(h.may_sleep(1)) << "a frame waits in ring (0, 1)";
  const uint8_t* p[4];
  uint32_t len[4];
  ASSERT_EQ(h.ring(0, 1).peek(p, len, 4), 1u);
  h.ring(0, 1).release(1);
  EXPECT_TRUE(h.may_sleep(1));
  h.woke(1);
  close(fd);
}

TEST(WorkerLoop, OffByDefault) {
  // Without enable_local_delivery a frame for the own MAC goes to the backend.
  core::MrTable mrs(64, 8);
  core::CopyEngine copier;
  core::EngineConfig c;
  c.port.mac = kOwnMac;
  c.port.gids = {kOwnGid};
  c.max_qps = 16;
  core::Engine e(c, mrs, copier);
  WireQueue q;
  core::Handoff h(1, 64, 2048);
  core::Worker<WireQueue> worker(e, q, &h, 0);
  const uint32_t pd = mrs.alloc_pd();
  uint32_t cq, qpn;
  ASSERT_TRUE(e.create_cq(16, &cq).ok());
  core::QpInitAttr ia;
  ia.pd = pd;
  ia.send_cq = ia.recv_cq = cq;
  ASSERT_TRUE(e.create_qp(ia, &qpn).ok());
  Qp a{&e, qpn, cq};
  connect(a, a);
  std::vector<uint8_t> buf(64);
  uint32_t l, r;
  ASSERT_TRUE(mrs.reg_mr(pd, buf.data(), 0x1000, buf.size(), core::kAccessLocalWrite, &l, &r).ok());
  core::SendWr w;
  w.opcode = core::WrOpcode::kRdmaWrite;
  w.num_sge = 1;
  w.sg_list[0] = {0x1000, 64, l};
  w.rdma.remote_addr = 0x1000;
  w.rdma.rkey = r;
  ASSERT_TRUE(e.post_send(qpn, w).ok());
  worker.poll_once(1000);
  EXPECT_EQ(q.sent, 1u);
  EXPECT_EQ(worker.counters().looped, 0u);
}

}  // namespace
}  // namespace burst::test
