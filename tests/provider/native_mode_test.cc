// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The provider's native mode (provider/native_mode.cc) without a kernel: the
// uverbs write commands it sends are captured from a pipe and checked against
// what the kernel's ib_uverbs_write() reads (header words, the core command,
// `response`, the driver data naming the object), and detection refuses
// burstctl run's /dev/full stand-in and anything that does not answer
// GET_CONTEXT as the burst module does. The module's side is tested in the
// guest (tests/interop/kmod.sh, ctest interop.kmod).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <rdma/ib_user_verbs.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "abi/burst_kmod.h"
#include "provider/native_mode.h"

namespace burst::provider {
void debug_log(const char*, ...) {}  // verbs_device.cc's, not linked here
}  // namespace burst::provider

namespace {

using namespace burst::provider;

class NativeModeTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(pipe2(p_, O_CLOEXEC | O_NONBLOCK), 0); }
  void TearDown() override {
    close(p_[0]);
    close(p_[1]);
  }
  // The one command written since the last call.
  std::vector<uint8_t> take() {
    std::vector<uint8_t> b(512);
    const ssize_t n = read(p_[0], b.data(), b.size());
    b.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return b;
  }
  template <typename T>
  static T at(const std::vector<uint8_t>& b, size_t off) {
    T v{};
    EXPECT_LE(off + sizeof(T), b.size());
    if (off + sizeof(T) <= b.size()) memcpy(&v, b.data() + off, sizeof(T));
    return v;
  }
  int p_[2];
};

constexpr size_t kHdr = sizeof(ib_uverbs_cmd_hdr);

TEST_F(NativeModeTest, CreateCqCarriesChannelVectorAndTheShadowsName) {
  uint32_t kcq = 77;
  ASSERT_EQ(native_create_cq(p_[1], 0x1122334455667788ull, 64, 9, 3, &kcq), 0);
  const auto b = take();
  ASSERT_EQ(b.size(), kHdr + sizeof(ib_uverbs_create_cq) + sizeof(burst_kmod_shadow_udata));
  const auto hdr = at<ib_uverbs_cmd_hdr>(b, 0);
  EXPECT_EQ(hdr.command, static_cast<uint32_t>(IB_USER_VERBS_CMD_CREATE_CQ));
  EXPECT_EQ(hdr.in_words * 4u, b.size());
  EXPECT_EQ(hdr.out_words * 4u, sizeof(ib_uverbs_create_cq_resp));
  const auto cmd = at<ib_uverbs_create_cq>(b, kHdr);
  EXPECT_NE(cmd.response, 0u);
  EXPECT_EQ(cmd.user_handle, 0x1122334455667788ull);
  EXPECT_EQ(cmd.cqe, 64u);
  EXPECT_EQ(cmd.comp_vector, 3u);
  EXPECT_EQ(cmd.comp_channel, 9);
  EXPECT_EQ(at<burst_kmod_shadow_udata>(b, kHdr + sizeof(cmd)).handle, 0x1122334455667788ull);
  EXPECT_EQ(kcq, 0u);  // the (untouched, zeroed) response: a pipe answers nothing
}

TEST_F(NativeModeTest, CreateQpOnSrqNamesTheShadows) {
  NativeQpArgs a{};
  a.user_handle = 0xabc0;
  a.kpd = 1;
  a.send_kcq = 2;
  a.recv_kcq = 3;
  a.ksrq = 4;
  a.has_srq = true;
  a.qp_type = IBV_QPT_RC;
  a.sq_sig_all = 1;
  a.cap = ibv_qp_cap{.max_send_wr = 128,
                     .max_recv_wr = 99,
                     .max_send_sge = 4,
                     .max_recv_sge = 5,
                     .max_inline_data = 64};
  uint32_t kqp = 0;
  ASSERT_EQ(native_create_qp(p_[1], a, &kqp), 0);
  const auto b = take();
  ASSERT_EQ(b.size(), kHdr + sizeof(ib_uverbs_create_qp) + sizeof(burst_kmod_shadow_udata));
  EXPECT_EQ(at<ib_uverbs_cmd_hdr>(b, 0).out_words * 4u, sizeof(ib_uverbs_create_qp_resp));
  const auto cmd = at<ib_uverbs_create_qp>(b, kHdr);
  EXPECT_EQ(cmd.user_handle, 0xabc0u);
  EXPECT_EQ(cmd.pd_handle, 1u);
  EXPECT_EQ(cmd.send_cq_handle, 2u);
  EXPECT_EQ(cmd.recv_cq_handle, 3u);
  EXPECT_EQ(cmd.srq_handle, 4u);
  EXPECT_EQ(cmd.is_srq, 1);
  EXPECT_EQ(cmd.max_recv_wr, 0u);  // an SRQ's QP has no receive queue of its own
  EXPECT_EQ(cmd.max_send_wr, 128u);
  EXPECT_EQ(cmd.max_inline_data, 64u);
  EXPECT_EQ(cmd.qp_type, IBV_QPT_RC);
  EXPECT_EQ(cmd.sq_sig_all, 1);
  EXPECT_EQ(at<burst_kmod_shadow_udata>(b, kHdr + sizeof(cmd)).handle, 0xabc0u);
}

TEST_F(NativeModeTest, PdAndSrqShadowsAndDeallocWithoutResponse) {
  uint32_t h = 0;
  ASSERT_EQ(native_alloc_pd(p_[1], 0x5000, &h), 0);
  auto b = take();
  ASSERT_EQ(b.size(), kHdr + sizeof(ib_uverbs_alloc_pd) + sizeof(burst_kmod_shadow_udata));
  EXPECT_EQ(at<ib_uverbs_cmd_hdr>(b, 0).command, static_cast<uint32_t>(IB_USER_VERBS_CMD_ALLOC_PD));
  EXPECT_EQ(at<burst_kmod_shadow_udata>(b, kHdr + sizeof(ib_uverbs_alloc_pd)).handle, 0x5000u);

  ASSERT_EQ(native_dealloc_pd(p_[1], 7), 0);
  b = take();
  ASSERT_EQ(b.size(), kHdr + sizeof(ib_uverbs_dealloc_pd));
  EXPECT_EQ(at<ib_uverbs_cmd_hdr>(b, 0).out_words, 0);  // DEALLOC_PD has no response
  EXPECT_EQ(at<ib_uverbs_dealloc_pd>(b, kHdr).pd_handle, 7u);

  ibv_srq_attr attr{.max_wr = 256, .max_sge = 2, .srq_limit = 10};
  ASSERT_EQ(native_create_srq(p_[1], 0x6000, 7, attr, &h), 0);
  b = take();
  const auto cmd = at<ib_uverbs_create_srq>(b, kHdr);
  EXPECT_EQ(cmd.pd_handle, 7u);
  EXPECT_EQ(cmd.max_wr, 256u);
  EXPECT_EQ(cmd.srq_limit, 10u);
  EXPECT_EQ(at<burst_kmod_shadow_udata>(b, kHdr + sizeof(cmd)).handle, 0x6000u);
}

TEST_F(NativeModeTest, DestroyWaitsOnlyForReportedEvents) {
  // The pipe answers nothing: 0 events reported, none acknowledged, no wait.
  ibv_cq cq{};
  pthread_mutex_init(&cq.mutex, nullptr);
  pthread_cond_init(&cq.cond, nullptr);
  ASSERT_EQ(native_destroy_cq(p_[1], &cq, 5), 0);
  const auto b = take();
  EXPECT_EQ(at<ib_uverbs_cmd_hdr>(b, 0).out_words * 4u, sizeof(ib_uverbs_destroy_cq_resp));
  EXPECT_EQ(at<ib_uverbs_destroy_cq>(b, kHdr).cq_handle, 5u);
}

TEST_F(NativeModeTest, DetectionAndContext) {
  const int full = open("/dev/full", O_RDWR | O_CLOEXEC);
  ASSERT_GE(full, 0);
  EXPECT_FALSE(cmd_fd_is_kernel(full));  // burstctl run's stand-in
  EXPECT_FALSE(cmd_fd_is_kernel(p_[1]));
  EXPECT_FALSE(cmd_fd_is_kernel(-1));
  close(full);
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  ASSERT_GE(null, 0);
  EXPECT_TRUE(cmd_fd_is_kernel(null));  // a character device: GET_CONTEXT decides
  NativeContext nc{};
  const bool had_fd0 = fcntl(0, F_GETFD) != -1;
  // /dev/null takes the write and answers nothing: refused, and descriptor 0 is not closed.
  EXPECT_EQ(native_get_context(null, &nc), EPROTO);
  if (had_fd0) {
    EXPECT_NE(fcntl(0, F_GETFD), -1);
  }
  close(null);
  EXPECT_EQ(native_get_context(p_[1], &nc), EPROTO);
  const auto b = take();
  ASSERT_EQ(b.size(), kHdr + sizeof(ib_uverbs_get_context));
  EXPECT_EQ(at<ib_uverbs_cmd_hdr>(b, 0).out_words * 4u,
            sizeof(ib_uverbs_get_context_resp) + sizeof(burst_kmod_context_resp));
}

}  // namespace
