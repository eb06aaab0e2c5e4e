// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The ibv_qp_ex work-request builder (provider/qp_ex.cc) on its own: this
// executable compiles qp_ex.cc with a test double of post_send that copies
// every chain it is given (WRs, SGEs, inline bytes), so each test asserts on
// exactly what the builder would hand the data path. The shipped provider
// links the real post_send (post_wr.cc).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "provider/provider.h"
#include "shm/layout.h"

namespace {

struct CapturedWr {
  ibv_send_wr wr;  // sg_list and next as given (pointers into the builder's storage)
  std::vector<ibv_sge> sges;
  std::vector<unsigned char> inline_bytes;  // IBV_SEND_INLINE: what the SGEs point at
};

std::mutex g_mu;
std::vector<std::vector<CapturedWr>> g_posts;
std::vector<ibv_send_wr*> g_heads;  // the chain head of each post (storage reuse)
ibv_qp* g_qp_seen = nullptr;
int g_fail_at = -1;  // post_send fails at this WR index with g_fail_err
int g_fail_err = 0;

void reset_double() {
  std::lock_guard<std::mutex> l(g_mu);
  g_posts.clear();
  g_heads.clear();
  g_qp_seen = nullptr;
  g_fail_at = -1;
  g_fail_err = 0;
}

}  // namespace

namespace burst::provider {

// The test double: records the chain; fails at g_fail_at like the real one
// (*bad_wr at the failing WR, the ones before it posted).
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  std::lock_guard<std::mutex> l(g_mu);
  g_qp_seen = qp;
  g_heads.push_back(wr);
  std::vector<CapturedWr> chain;
  int i = 0;
  for (ibv_send_wr* w = wr; w != nullptr; w = w->next, ++i) {
    if (i == g_fail_at) {
      *bad_wr = w;
      g_posts.push_back(std::move(chain));
      return g_fail_err;
    }
    CapturedWr c;
    c.wr = *w;
    if (w->num_sge > 0) c.sges.assign(w->sg_list, w->sg_list + w->num_sge);
    if (w->send_flags & IBV_SEND_INLINE) {
      for (const ibv_sge& s : c.sges) {
        const auto* p = reinterpret_cast<const unsigned char*>(static_cast<uintptr_t>(s.addr));
        c.inline_bytes.insert(c.inline_bytes.end(), p, p + s.length);
      }
    }
    chain.push_back(std::move(c));
  }
  g_posts.push_back(std::move(chain));
  return 0;
}

}  // namespace burst::provider

namespace {

using burst::provider::fini_qp_ex;
using burst::provider::init_qp_ex;
using burst::provider::Qp;

constexpr uint64_t kAllRcOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                               IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                               IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                               IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;

class QpExTest : public ::testing::Test {
 protected:
  void SetUp() override { reset_double(); }
  void TearDown() override {
    if (qp_ != nullptr) fini_qp_ex(qp_.get());
  }

  // A QP as make_qp leaves it (type, limits; the send ring when log2_sq > 0).
  ibv_qp_ex* make(ibv_qp_type type, uint64_t ops = 0, uint32_t max_sge = 4,
                  uint32_t max_inline = 64, uint32_t log2_sq = 0) {
    qp_ = std::make_unique<Qp>();
    qp_->vqp.qp.qp_type = type;
    qp_->max_send_sge = max_sge;
    qp_->max_inline = max_inline;
    if (log2_sq != 0) {
      ring_.assign(64 * 1024, 0);
      qp_->sq = burst::shm::RingProducer(ring_.data(), 0, burst::shm::RingGeometry{log2_sq, 64});
    }
    if (ops == 0) ops = type == IBV_QPT_UD ? uint64_t{IBV_QP_EX_WITH_SEND} : kAllRcOps;
    EXPECT_EQ(init_qp_ex(qp_.get(), ops), 0);
    return ibv_qp_to_qp_ex(&qp_->vqp.qp);
  }

  std::unique_ptr<Qp> qp_;
  std::vector<uint8_t> ring_;
};

TEST_F(QpExTest, InitRejectsWhatBurstDoesNotBuild) {
  qp_ = std::make_unique<Qp>();
  qp_->vqp.qp.qp_type = IBV_QPT_RC;
  for (uint64_t op : {uint64_t{IBV_QP_EX_WITH_TSO}, uint64_t{IBV_QP_EX_WITH_ATOMIC_WRITE},
                      uint64_t{1} << 11, uint64_t{1} << 40}) {
    EXPECT_EQ(init_qp_ex(qp_.get(), IBV_QP_EX_WITH_SEND | op), EOPNOTSUPP) << std::hex << op;
    EXPECT_EQ(qp_->ex, nullptr);
    EXPECT_EQ(ibv_qp_to_qp_ex(&qp_->vqp.qp), nullptr);
  }
  qp_->vqp.qp.qp_type = IBV_QPT_UD;  // UD: sends only
  EXPECT_EQ(init_qp_ex(qp_.get(), IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE), EOPNOTSUPP);
  EXPECT_EQ(init_qp_ex(qp_.get(), IBV_QP_EX_WITH_SEND_WITH_INV), EOPNOTSUPP);
  EXPECT_EQ(init_qp_ex(qp_.get(), IBV_QP_EX_WITH_BIND_MW), EOPNOTSUPP);
  EXPECT_EQ(init_qp_ex(qp_.get(), IBV_QP_EX_WITH_LOCAL_INV), EOPNOTSUPP);
  qp_->vqp.qp.qp_type = IBV_QPT_UC;
  EXPECT_EQ(init_qp_ex(qp_.get(), IBV_QP_EX_WITH_SEND), EOPNOTSUPP);
  EXPECT_EQ(qp_->ex, nullptr);
}

TEST_F(QpExTest, QpToQpExFollowsInitAndFini) {
  ibv_qp_ex* qpx = make(IBV_QPT_RC);
  ASSERT_NE(qpx, nullptr);
  EXPECT_EQ(qpx, &qp_->vqp.qp_ex);
  EXPECT_EQ(&qpx->qp_base, &qp_->vqp.qp);
  EXPECT_NE(qp_->ex, nullptr);
  for (auto fn :
       {reinterpret_cast<void*>(qpx->wr_start), reinterpret_cast<void*>(qpx->wr_complete),
        reinterpret_cast<void*>(qpx->wr_abort), reinterpret_cast<void*>(qpx->wr_send),
        reinterpret_cast<void*>(qpx->wr_bind_mw), reinterpret_cast<void*>(qpx->wr_set_xrc_srqn),
        reinterpret_cast<void*>(qpx->wr_atomic_write), reinterpret_cast<void*>(qpx->wr_send_tso)}) {
    EXPECT_NE(fn, nullptr);  // no slot left NULL
  }
  fini_qp_ex(qp_.get());
  EXPECT_EQ(qp_->ex, nullptr);
  EXPECT_EQ(ibv_qp_to_qp_ex(&qp_->vqp.qp), nullptr);
  fini_qp_ex(qp_.get());  // twice is fine
  // Asking for no operation at all is fine too (the builders still work).
  EXPECT_EQ(init_qp_ex(qp_.get(), 0), 0);
  EXPECT_NE(ibv_qp_to_qp_ex(&qp_->vqp.qp), nullptr);
}

TEST_F(QpExTest, OneBatchOfEveryRcOperation) {
  ibv_qp_ex* qpx = make(IBV_QPT_RC);
  ibv_wr_start(qpx);
  struct Op {
    ibv_wr_opcode opcode;
    void (*build)(ibv_qp_ex*);
  };
  const Op ops[] = {
      {IBV_WR_SEND, [](ibv_qp_ex* q) { ibv_wr_send(q); }},
      {IBV_WR_SEND_WITH_IMM, [](ibv_qp_ex* q) { ibv_wr_send_imm(q, htonl(0xabcdef01)); }},
      {IBV_WR_SEND_WITH_INV, [](ibv_qp_ex* q) { ibv_wr_send_inv(q, 0x5151); }},
      {IBV_WR_RDMA_WRITE, [](ibv_qp_ex* q) { ibv_wr_rdma_write(q, 0x77, 0x1000); }},
      {IBV_WR_RDMA_WRITE_WITH_IMM,
       [](ibv_qp_ex* q) { ibv_wr_rdma_write_imm(q, 0x78, 0x2000, htonl(9)); }},
      {IBV_WR_RDMA_READ, [](ibv_qp_ex* q) { ibv_wr_rdma_read(q, 0x79, 0x3000); }},
      {IBV_WR_ATOMIC_CMP_AND_SWP,
       [](ibv_qp_ex* q) { ibv_wr_atomic_cmp_swp(q, 0x7a, 0x4000, 11, 22); }},
      {IBV_WR_ATOMIC_FETCH_AND_ADD,
       [](ibv_qp_ex* q) { ibv_wr_atomic_fetch_add(q, 0x7b, 0x5000, 33); }},
  };
  uint64_t id = 100;
  for (const Op& op : ops) {
    qpx->wr_id = id;
    qpx->wr_flags = (id % 2 != 0 ? unsigned{IBV_SEND_SIGNALED} : 0u) | IBV_SEND_FENCE;
    op.build(qpx);
    qpx->wr_id = 0xdead;  // read at the builder call, not later
    qpx->wr_flags = IBV_SEND_SOLICITED;
    ibv_wr_set_sge(qpx, 0x1000 + static_cast<uint32_t>(id), 0xa0000 + id, 8);
    ++id;
  }
  ASSERT_EQ(ibv_wr_complete(qpx), 0);
  ASSERT_EQ(g_posts.size(), 1u);
  EXPECT_EQ(g_qp_seen, &qp_->vqp.qp);
  const std::vector<CapturedWr>& chain = g_posts[0];
  ASSERT_EQ(chain.size(), std::size(ops));
  for (size_t i = 0; i < chain.size(); ++i) {
    const ibv_send_wr& w = chain[i].wr;
    SCOPED_TRACE(i);
    EXPECT_EQ(w.opcode, ops[i].opcode);
    EXPECT_EQ(w.wr_id, 100 + i);
    EXPECT_EQ(w.send_flags,
              ((100 + i) % 2 != 0 ? unsigned{IBV_SEND_SIGNALED} : 0u) | IBV_SEND_FENCE);
    ASSERT_EQ(w.num_sge, 1);
    EXPECT_EQ(chain[i].sges[0].lkey, 0x1000 + 100 + i);
    EXPECT_EQ(chain[i].sges[0].addr, 0xa0000 + 100 + i);
    EXPECT_EQ(chain[i].sges[0].length, 8u);
    EXPECT_EQ(w.next == nullptr, i + 1 == chain.size());
  }
  EXPECT_EQ(chain[1].wr.imm_data, htonl(0xabcdef01));
  EXPECT_EQ(chain[2].wr.invalidate_rkey, 0x5151u);
  EXPECT_EQ(chain[3].wr.wr.rdma.rkey, 0x77u);
  EXPECT_EQ(chain[3].wr.wr.rdma.remote_addr, 0x1000u);
  EXPECT_EQ(chain[4].wr.wr.rdma.rkey, 0x78u);
  EXPECT_EQ(chain[4].wr.imm_data, htonl(9));
  EXPECT_EQ(chain[5].wr.wr.rdma.remote_addr, 0x3000u);
  EXPECT_EQ(chain[6].wr.wr.atomic.rkey, 0x7au);
  EXPECT_EQ(chain[6].wr.wr.atomic.remote_addr, 0x4000u);
  EXPECT_EQ(chain[6].wr.wr.atomic.compare_add, 11u);
  EXPECT_EQ(chain[6].wr.wr.atomic.swap, 22u);
  EXPECT_EQ(chain[7].wr.wr.atomic.compare_add, 33u);
}

TEST_F(QpExTest, InlineDataIsCopiedAtTheSetterCall) {
  ibv_qp_ex* qpx = make(IBV_QPT_RC);
  ibv_wr_start(qpx);
  qpx->wr_id = 1;
  qpx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qpx, 5, 0x9000);
  char buf[16] = "hello, inline!";
  ibv_wr_set_inline_data(qpx, buf, 14);
  memset(buf, 'X', sizeof(buf));  // the caller reuses its buffer at once

  qpx->wr_id = 2;
  ibv_wr_send(qpx);
  char a[] = "abc", b[] = "", c[] = "defgh";
  const ibv_data_buf list[] = {{a, 3}, {b, 0}, {c, 5}};
  ibv_wr_set_inline_data_list(qpx, 3, list);
  a[0] = c[0] = '!';

  qpx->wr_id = 3;
  ibv_wr_send(qpx);
  ibv_wr_set_inline_data(qpx, nullptr, 0);  // zero-length inline send

  qpx->wr_id = 4;  // IBV_SEND_INLINE in wr_flags alone does not make a WR inline
  qpx->wr_flags = IBV_SEND_INLINE;
  ibv_wr_send(qpx);
  ibv_wr_set_sge(qpx, 7, 0x100, 4);
  ASSERT_EQ(ibv_wr_complete(qpx), 0);

  ASSERT_EQ(g_posts.size(), 1u);
  const auto& chain = g_posts[0];
  ASSERT_EQ(chain.size(), 4u);
  EXPECT_EQ(chain[0].wr.send_flags, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
  ASSERT_EQ(chain[0].wr.num_sge, 1);  // one SGE whatever the number of buffers
  EXPECT_EQ(std::string(chain[0].inline_bytes.begin(), chain[0].inline_bytes.end()),
            "hello, inline!");
  ASSERT_EQ(chain[1].wr.num_sge, 1);
  EXPECT_EQ(std::string(chain[1].inline_bytes.begin(), chain[1].inline_bytes.end()), "abcdefgh");
  EXPECT_EQ(chain[2].wr.num_sge, 0);
  EXPECT_EQ(chain[2].wr.send_flags, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
  EXPECT_EQ(chain[3].wr.send_flags, 0u);
  EXPECT_EQ(chain[3].sges[0].lkey, 7u);
}

TEST_F(QpExTest, InlineBytesSurviveStorageGrowth) {
  // Default storage (no ring): 64 WRs; 300 inline WRs make every array grow
  // mid-batch, after earlier WRs already refer to them.
  ibv_qp_ex* qpx = make(IBV_QPT_RC, 0, 4, 64);
  ibv_wr_start(qpx);
  for (int i = 0; i < 300; ++i) {
    qpx->wr_id = static_cast<uint64_t>(i);
    ibv_wr_send(qpx);
    unsigned char data[60];
    memset(data, i & 0xff, sizeof(data));
    ibv_wr_set_inline_data(qpx, data, sizeof(data));
  }
  ASSERT_EQ(ibv_wr_complete(qpx), 0);
  ASSERT_EQ(g_posts.size(), 1u);
  ASSERT_EQ(g_posts[0].size(), 300u);
  for (int i = 0; i < 300; ++i) {
    const CapturedWr& c = g_posts[0][i];
    ASSERT_EQ(c.wr.wr_id, static_cast<uint64_t>(i));
    ASSERT_EQ(c.inline_bytes, std::vector<unsigned char>(60, static_cast<unsigned char>(i)));
  }
}

TEST_F(QpExTest, SgeListIsCopiedAndLastSetterWins) {
  ibv_qp_ex* qpx = make(IBV_QPT_RC, 0, 3);
  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  ibv_sge list[3] = {{0x10, 1, 1}, {0x20, 2, 2}, {0x30, 3, 3}};
  ibv_wr_set_inline_data(qpx, list, 4);  // replaced below
  ibv_wr_set_sge_list(qpx, 3, list);
  list[1].addr = 0xbad;
  ibv_wr_send(qpx);
  ibv_wr_set_sge_list(qpx, 0, nullptr);  // a zero-length send
  ASSERT_EQ(ibv_wr_complete(qpx), 0);
  const auto& chain = g_posts.at(0);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].wr.send_flags & IBV_SEND_INLINE, 0u);
  ASSERT_EQ(chain[0].sges.size(), 3u);
  EXPECT_EQ(chain[0].sges[1].addr, 0x20u);
  EXPECT_EQ(chain[0].sges[2].lkey, 3u);
  EXPECT_EQ(chain[1].wr.num_sge, 0);
  EXPECT_EQ(chain[1].wr.sg_list, nullptr);
}

TEST_F(QpExTest, BuilderErrorsAreReportedByCompleteAndNothingIsPosted) {
  ibv_qp_ex* qpx = make(IBV_QPT_RC, 0, 2, 16);
  ibv_sge three[3] = {};
  char big[17] = {};
  const struct {
    const char* what;
    int err;
    void (*build)(ibv_qp_ex*, ibv_sge*, char*);
  } cases[] = {
      {"setter before any WR", EINVAL,
       [](ibv_qp_ex* q, ibv_sge*, char*) { ibv_wr_set_sge(q, 1, 2, 3); }},
      {"more SGEs than max_send_sge", EINVAL,
       [](ibv_qp_ex* q, ibv_sge* s, char*) {
         ibv_wr_send(q);
         ibv_wr_set_sge_list(q, 3, s);
       }},
      {"more inline bytes than max_inline_data", EINVAL,
       [](ibv_qp_ex* q, ibv_sge*, char* b) {
         ibv_wr_send(q);
         ibv_wr_set_inline_data(q, b, 17);
       }},
      {"UD address on an RC QP", EINVAL,
       [](ibv_qp_ex* q, ibv_sge*, char*) {
         ibv_wr_send(q);
         ibv_wr_set_ud_addr(q, reinterpret_cast<ibv_ah*>(8), 1, 2);
       }},
      {"memory window bind without a window", EINVAL,
       [](ibv_qp_ex* q, ibv_sge*, char*) { ibv_wr_bind_mw(q, nullptr, 0, nullptr); }},
      {"an SGE setter after a local invalidate", EINVAL,
       [](ibv_qp_ex* q, ibv_sge* s, char*) {
         ibv_wr_local_inv(q, 1);
         ibv_wr_set_sge_list(q, 1, s);
       }},
      {"TSO", EOPNOTSUPP, [](ibv_qp_ex* q, ibv_sge*, char*) { ibv_wr_send_tso(q, nullptr, 0, 0); }},
      {"atomic write", EOPNOTSUPP,
       [](ibv_qp_ex* q, ibv_sge*, char*) { ibv_wr_atomic_write(q, 1, 2, nullptr); }},
      {"XRC SRQ number", EOPNOTSUPP,
       [](ibv_qp_ex* q, ibv_sge*, char*) {
         ibv_wr_send(q);
         ibv_wr_set_xrc_srqn(q, 1);
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    ibv_wr_start(qpx);
    if (c.err != EINVAL || strcmp(c.what, "setter before any WR") != 0) {
      ibv_wr_rdma_write(qpx, 1, 2);  // a good WR first: dropped with the batch
      ibv_wr_set_sge(qpx, 1, 2, 3);
    }
    c.build(qpx, three, big);
    ibv_wr_send(qpx);  // later calls do not clear the error
    ibv_wr_set_sge(qpx, 1, 2, 3);
    EXPECT_EQ(ibv_wr_complete(qpx), c.err);
    EXPECT_TRUE(g_posts.empty());
  }
  // The next batch starts clean.
  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  EXPECT_EQ(ibv_wr_complete(qpx), 0);
  EXPECT_EQ(g_posts.size(), 1u);
}

TEST_F(QpExTest, UdSendsCarryTheAddressAndNothingElse) {
  ibv_qp_ex* qpx = make(IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
  auto* ah = reinterpret_cast<ibv_ah*>(0x1234);
  ibv_wr_start(qpx);
  qpx->wr_id = 5;
  ibv_wr_send_imm(qpx, htonl(77));
  ibv_wr_set_ud_addr(qpx, ah, 0xabcdef, 0x11111111);
  ibv_wr_set_sge(qpx, 1, 0x100, 64);
  ASSERT_EQ(ibv_wr_complete(qpx), 0);
  const ibv_send_wr& w = g_posts.at(0).at(0).wr;
  EXPECT_EQ(w.opcode, IBV_WR_SEND_WITH_IMM);
  EXPECT_EQ(w.wr.ud.ah, ah);
  EXPECT_EQ(w.wr.ud.remote_qpn, 0xabcdefu);
  EXPECT_EQ(w.wr.ud.remote_qkey, 0x11111111u);

  ibv_wr_start(qpx);  // RDMA on UD: EINVAL
  ibv_wr_rdma_write(qpx, 1, 2);
  EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
  ibv_wr_start(qpx);  // no AH
  ibv_wr_send(qpx);
  ibv_wr_set_ud_addr(qpx, nullptr, 1, 2);
  EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
  EXPECT_EQ(g_posts.size(), 1u);
}

TEST_F(QpExTest, AbortDropsTheBatchAndEmptyBatchesPostNothing) {
  ibv_qp_ex* qpx = make(IBV_QPT_RC);
  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  ibv_wr_set_sge(qpx, 1, 2, 3);
  ibv_wr_abort(qpx);
  EXPECT_TRUE(g_posts.empty());
  ibv_wr_start(qpx);
  EXPECT_EQ(ibv_wr_complete(qpx), 0);
  EXPECT_TRUE(g_posts.empty());
  ibv_wr_start(qpx);
  qpx->wr_id = 9;
  ibv_wr_send(qpx);
  EXPECT_EQ(ibv_wr_complete(qpx), 0);
  ASSERT_EQ(g_posts.size(), 1u);
  ASSERT_EQ(g_posts[0].size(), 1u);
  EXPECT_EQ(g_posts[0][0].wr.wr_id, 9u);
  // Without wr_start: ignored, and complete says so.
  ibv_wr_send(qpx);
  EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
  ibv_wr_abort(qpx);
  EXPECT_EQ(g_posts.size(), 1u);
}

TEST_F(QpExTest, PostSendErrorsAreReturned) {
  ibv_qp_ex* qpx = make(IBV_QPT_RC);
  g_fail_at = 1;
  g_fail_err = ENOMEM;
  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  ibv_wr_send(qpx);
  ibv_wr_send(qpx);
  EXPECT_EQ(ibv_wr_complete(qpx), ENOMEM);
  ASSERT_EQ(g_posts.size(), 1u);
  EXPECT_EQ(g_posts[0].size(), 1u);  // the WRs before *bad_wr
}

TEST_F(QpExTest, BatchIsBoundedByTheSendQueueAndStorageIsReused) {
  ibv_qp_ex* qpx = make(IBV_QPT_RC, 0, 4, 64, /*log2_sq=*/3);  // 8 entries
  ibv_wr_start(qpx);
  for (int i = 0; i < 9; ++i) ibv_wr_send(qpx);
  EXPECT_EQ(ibv_wr_complete(qpx), ENOMEM);
  EXPECT_TRUE(g_posts.empty());
  for (int round = 0; round < 3; ++round) {
    ibv_wr_start(qpx);
    for (int i = 0; i < 8; ++i) {
      ibv_wr_send(qpx);
      ibv_wr_set_sge_list(qpx, 4, std::vector<ibv_sge>(4, ibv_sge{1, 2, 3}).data());
    }
    ASSERT_EQ(ibv_wr_complete(qpx), 0);
  }
  ASSERT_EQ(g_heads.size(), 3u);
  // Preallocated for the whole queue: every batch is built in the same place.
  EXPECT_EQ(g_heads[0], g_heads[1]);
  EXPECT_EQ(g_heads[1], g_heads[2]);
}

TEST_F(QpExTest, ConcurrentBuildersDoNotInterleave) {
  ibv_qp_ex* qpx = make(IBV_QPT_RC);
  constexpr int kThreads = 4;
  constexpr int kBatches = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([qpx, t] {
      for (int b = 0; b < kBatches; ++b) {
        ibv_wr_start(qpx);
        for (int i = 0; i < 3; ++i) {
          qpx->wr_id = static_cast<uint64_t>(t);
          ibv_wr_send(qpx);
          ibv_wr_set_sge(qpx, static_cast<uint32_t>(t), 0, 1);
        }
        ASSERT_EQ(ibv_wr_complete(qpx), 0);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  ASSERT_EQ(g_posts.size(), size_t{kThreads} * kBatches);
  for (const auto& chain : g_posts) {
    ASSERT_EQ(chain.size(), 3u);
    for (const CapturedWr& c : chain) {
      EXPECT_EQ(c.wr.wr_id, chain[0].wr.wr_id);
      EXPECT_EQ(c.sges.at(0).lkey, chain[0].wr.wr_id);
    }
  }
}

}  // namespace
