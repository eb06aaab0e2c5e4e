// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The burst provider through the public libibverbs API, run under
// `burstctl run` by provider_test.sh (it skips when no burst0 device is
// visible, so running it alone is harmless). It checks what the unmodified
// tools do not show: the legacy ibv_query_device path (attr_size of the old
// struct), the async-event fd, the sysfs-backed GID/P_Key/GUID queries, PD and
// CQ through burstd (which must be running: opening the device connects to it)
// and the EOPNOTSUPP convention of the verbs that come with the data path.
// verbs_ctl_probe covers QPs.
//
// Environment: BURST_PROBE_NETDEV names the port's netdev (ifindex check).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

class VerbsProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    list_ = ibv_get_device_list(&num_);
    // NULL (ENOSYS) when there is no RDMA device class at all.
    if (list_ == nullptr) GTEST_SKIP() << "no RDMA devices: " << strerror(errno);
    for (int i = 0; i < num_; ++i) {
      if (strcmp(ibv_get_device_name(list_[i]), "burst0") == 0) dev_ = list_[i];
    }
    if (dev_ == nullptr) GTEST_SKIP() << "no burst0 device (run under `burstctl run`)";
    ctx_ = ibv_open_device(dev_);
    ASSERT_NE(ctx_, nullptr) << strerror(errno);
  }
  void TearDown() override {
    if (ctx_ != nullptr) {
      EXPECT_EQ(ibv_close_device(ctx_), 0);
    }
    if (list_ != nullptr) ibv_free_device_list(list_);
  }

  ibv_device** list_ = nullptr;
  int num_ = 0;
  ibv_device* dev_ = nullptr;
  ibv_context* ctx_ = nullptr;
};

TEST_F(VerbsProbe, LegacyQueryDeviceCopiesOnlyTheOldStruct) {
  // ibv_query_device reaches the provider's query_device_ex with
  // attr_size = sizeof(ibv_device_attr): nothing beyond it may be written.
  struct {
    ibv_device_attr attr;
    unsigned char guard[64];
  } buf;
  memset(&buf, 0xa5, sizeof(buf));
  ASSERT_EQ(ibv_query_device(ctx_, &buf.attr), 0);
  for (unsigned char c : buf.guard) ASSERT_EQ(c, 0xa5);
  EXPECT_STREQ(buf.attr.fw_ver, "burst 0.1");
  EXPECT_EQ(buf.attr.phys_port_cnt, 1);
  EXPECT_EQ(buf.attr.atomic_cap, IBV_ATOMIC_HCA);
  EXPECT_GT(buf.attr.max_qp, 0);
  EXPECT_GT(buf.attr.max_qp_wr, 0);
  EXPECT_GT(buf.attr.max_sge, 0);
  EXPECT_GT(buf.attr.max_cqe, 0);
  EXPECT_EQ(buf.attr.node_guid, ibv_get_device_guid(dev_));  // sysfs and provider agree
  EXPECT_NE(buf.attr.node_guid, 0u);
}

TEST_F(VerbsProbe, QueryDeviceExRejectsUnknownInput) {
  ibv_device_attr_ex attr{};
  ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &attr), 0);
  EXPECT_EQ(attr.orig_attr.phys_port_cnt, 1);
  EXPECT_EQ(attr.phys_port_cnt_ex, 1u);  // the same port count as the old field
  ibv_query_device_ex_input in{};
  in.comp_mask = 1;
  EXPECT_EQ(ibv_query_device_ex(ctx_, &in, &attr), EINVAL);
}

TEST_F(VerbsProbe, EveryCompVectorBelowTheCountWorks) {
  // One completion vector per possible CPU (as rxe and siw); any vector below
  // the count creates a CQ, the count itself and negative ones are EINVAL.
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  ASSERT_GT(cpus, 0);
  ASSERT_EQ(ctx_->num_comp_vectors, static_cast<int>(cpus));
  for (int v = 0; v < ctx_->num_comp_vectors; ++v) {
    ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, v);
    ASSERT_NE(cq, nullptr) << "comp_vector " << v << ": " << strerror(errno);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
  }
  for (int v : {ctx_->num_comp_vectors, -1}) {
    errno = 0;
    EXPECT_EQ(ibv_create_cq(ctx_, 16, nullptr, nullptr, v), nullptr) << "comp_vector " << v;
    EXPECT_EQ(errno, EINVAL);
  }
}

TEST_F(VerbsProbe, PortIsActiveRoce) {
  ibv_port_attr pa{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(pa.max_mtu, IBV_MTU_4096);
  EXPECT_GE(pa.active_mtu, IBV_MTU_256);
  EXPECT_EQ(pa.gid_tbl_len, 256);
  EXPECT_NE(ibv_query_port(ctx_, 2, &pa), 0);  // one port
}

TEST_F(VerbsProbe, GidTableFromSysfs) {
  union ibv_gid gid {};
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &gid), 0);
  EXPECT_EQ(gid.raw[0], 0xfe);
  EXPECT_EQ(gid.raw[1], 0x80);
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 1, &gid), 0);
  const unsigned char mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  EXPECT_EQ(memcmp(gid.raw, mapped_prefix, 12), 0) << "GID[1] is not IPv4-mapped";

  ibv_gid_entry entries[8];
  ssize_t n = ibv_query_gid_table(ctx_, entries, 8, 0);
  ASSERT_GE(n, 2) << strerror(errno);
  const char* nd = getenv("BURST_PROBE_NETDEV");
  for (ssize_t i = 0; i < n; ++i) {
    EXPECT_EQ(entries[i].gid_type, IBV_GID_TYPE_ROCE_V2);
    EXPECT_EQ(entries[i].port_num, 1u);
    if (nd != nullptr) {
      EXPECT_EQ(entries[i].ndev_ifindex, if_nametoindex(nd));
    }
  }
  __be16 pkey = 0;
  ASSERT_EQ(ibv_query_pkey(ctx_, 1, 0, &pkey), 0);
  EXPECT_EQ(pkey, htobe16(0xffff));
}

TEST_F(VerbsProbe, AsyncFdIsTheProvidersPipe) {
  struct stat st {};
  ASSERT_EQ(fstat(ctx_->async_fd, &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_GE(ctx_->num_comp_vectors, 1);
  // No event pending: a non-blocking read finds the pipe empty.
  int fl = fcntl(ctx_->async_fd, F_GETFL);
  ASSERT_EQ(fcntl(ctx_->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
  ibv_async_event ev{};
  EXPECT_NE(ibv_get_async_event(ctx_, &ev), 0);
}

TEST_F(VerbsProbe, PdCqAndMrComeFromBurstdSrqNotYet) {
  // PD and CQ are created in burstd (the context's control connection).
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr) << strerror(errno);
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr) << strerror(errno);
  EXPECT_GE(cq->cqe, 16);
  // Memory registration through burstd; SRQs are not supported yet.
  char buf[64];
  ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  EXPECT_NE(mr->lkey, 0u);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  ibv_srq_init_attr_ex srq{};
  errno = 0;
  EXPECT_EQ(ibv_create_srq_ex(ctx_, &srq), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

}  // namespace
