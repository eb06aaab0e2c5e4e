// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The control protocol without a socket: encode/decode and validation in
// ctl_codec, and burstd's Dispatcher fed directly (bad lengths, unknown ops,
// wrong versions, random bytes: error responses, never a crash), resources with
// per-client ownership, and traffic between two QPs of one burstd over the
// loopback backend (two workers: frames reach the other worker through the
// handoff).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/verbs.h"
#include "daemon/burstd/config.h"
#include "daemon/burstd/device.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/kmod_device.h"
#include "daemon/burstd/resources.h"
#include "daemon/burstd/watchdog.h"
#include "abi/burst_ctl_proto.h"
#include "daemon/ctl/ctl_codec.h"

namespace burst::burstd {
namespace {

// ---------------------------------------------------------------------------
// Codec

template <class T>
T request(uint16_t op, uint16_t version = BURST_CTL_VERSION, uint64_t id = 7) {
  T t{};
  ctl::init_request(&t.hdr, op, sizeof(T), version, id);
  return t;
}

TEST(CtlCodec, EveryOpHasItsRequestSize) {
  struct {
    uint16_t op;
    size_t size;
  } cases[] = {
      {BURST_CTL_OP_HELLO, sizeof(burst_ctl_hello_req)},
      {BURST_CTL_OP_QUERY_STATUS, sizeof(burst_ctl_query_status_req)},
      {BURST_CTL_OP_QUERY_WORKERS, sizeof(burst_ctl_query_workers_req)},
      {BURST_CTL_OP_QUERY_COUNTERS, sizeof(burst_ctl_query_counters_req)},
      {BURST_CTL_OP_QUERY_QPS, sizeof(burst_ctl_query_qps_req)},
      {BURST_CTL_OP_ALLOC_PD, sizeof(burst_ctl_alloc_pd_req)},
      {BURST_CTL_OP_DEALLOC_PD, sizeof(burst_ctl_handle_req)},
      {BURST_CTL_OP_CREATE_CQ, sizeof(burst_ctl_create_cq_req)},
      {BURST_CTL_OP_DESTROY_CQ, sizeof(burst_ctl_handle_req)},
      {BURST_CTL_OP_CREATE_QP, sizeof(burst_ctl_create_qp_req)},
      {BURST_CTL_OP_MODIFY_QP, sizeof(burst_ctl_modify_qp_req)},
      {BURST_CTL_OP_QUERY_QP, sizeof(burst_ctl_query_qp_req)},
      {BURST_CTL_OP_DESTROY_QP, sizeof(burst_ctl_handle_req)},
      {BURST_CTL_OP_REG_MR, sizeof(burst_ctl_reg_mr_req)},
      {BURST_CTL_OP_DEREG_MR, sizeof(burst_ctl_handle_req)},
      {BURST_CTL_OP_MAP_DOORBELL, sizeof(burst_ctl_map_doorbell_req)},
      {BURST_CTL_OP_CREATE_AH, sizeof(burst_ctl_create_ah_req)},
      {BURST_CTL_OP_DESTROY_AH, sizeof(burst_ctl_handle_req)},
      {BURST_CTL_OP_SET_ASYNC_FD, sizeof(burst_ctl_set_async_fd_req)},
      {BURST_CTL_OP_RESIZE_CQ, sizeof(burst_ctl_resize_cq_req)},
      {BURST_CTL_OP_REREG_MR, sizeof(burst_ctl_rereg_mr_req)},
      {BURST_CTL_OP_ALLOC_MW, sizeof(burst_ctl_alloc_mw_req)},
      {BURST_CTL_OP_DEALLOC_MW, sizeof(burst_ctl_handle_req)},
      {BURST_CTL_OP_REG_DMABUF_MR, sizeof(burst_ctl_reg_dmabuf_mr_req)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(ctl::op_name(c.op));
    std::vector<uint8_t> m(c.size, 0);
    ctl::init_request(reinterpret_cast<burst_ctl_hdr*>(m.data()), c.op,
                      static_cast<uint32_t>(c.size), 1, 3);
    EXPECT_EQ(ctl::check_request(m.data(), m.size()).error, 0);
    m.push_back(0);  // one byte more, length field adjusted: wrong size for the op
    reinterpret_cast<burst_ctl_hdr*>(m.data())->length = static_cast<uint32_t>(m.size());
    EXPECT_EQ(ctl::check_request(m.data(), m.size()).error, EBADMSG);
  }
}

TEST(CtlCodec, RejectsMalformedRequests) {
  auto st = request<burst_ctl_query_status_req>(BURST_CTL_OP_QUERY_STATUS);
  ctl::RequestCheck r = ctl::check_request(&st, 10);  // shorter than a header
  EXPECT_EQ(r.error, EPROTO);
  EXPECT_TRUE(r.close);
  r = ctl::check_request(&st, 0);
  EXPECT_EQ(r.error, EPROTO);

  auto bad = st;
  bad.hdr.magic = 0x12345678;
  r = ctl::check_request(&bad, sizeof(bad));
  EXPECT_EQ(r.error, EPROTO);
  EXPECT_TRUE(r.close);

  bad = st;
  bad.hdr.length = sizeof(bad) + 4;  // length field says more than received
  r = ctl::check_request(&bad, sizeof(bad));
  EXPECT_EQ(r.error, EBADMSG);
  EXPECT_FALSE(r.close);

  bad = st;
  bad.hdr.op = 0x4242;
  r = ctl::check_request(&bad, sizeof(bad));
  EXPECT_EQ(r.error, EOPNOTSUPP);
  EXPECT_EQ(r.request_id, 7u);

  bad = st;
  bad.hdr.op = BURST_CTL_OP_QUERY_STATUS | BURST_CTL_RESPONSE;  // a response is not a request
  EXPECT_EQ(ctl::check_request(&bad, sizeof(bad)).error, EOPNOTSUPP);

  bad = st;
  bad.hdr.status = 5;
  EXPECT_EQ(ctl::check_request(&bad, sizeof(bad)).error, EINVAL);

  std::vector<uint8_t> big(BURST_CTL_MAX_MSG + 1, 0);
  std::memcpy(big.data(), &st, sizeof(st));
  reinterpret_cast<burst_ctl_hdr*>(big.data())->length = static_cast<uint32_t>(big.size());
  EXPECT_EQ(ctl::check_request(big.data(), big.size()).error, EMSGSIZE);
}

TEST(CtlCodec, ChecksResponses) {
  burst_ctl_hdr req{};
  ctl::init_request(&req, BURST_CTL_OP_QUERY_QPS, sizeof(burst_ctl_query_qps_req), 1, 9);
  std::vector<uint8_t> m(ctl::list_length(BURST_CTL_OP_QUERY_QPS, 3), 0);
  auto* r = reinterpret_cast<burst_ctl_qps_resp*>(m.data());
  ctl::init_response(&r->hdr, req, static_cast<uint32_t>(m.size()), 0);
  r->count = 3;
  EXPECT_EQ(ctl::check_response(m.data(), m.size(), BURST_CTL_OP_QUERY_QPS, 9), 0);
  EXPECT_EQ(ctl::check_response(m.data(), m.size(), BURST_CTL_OP_QUERY_QPS, 8), EPROTO);  // id
  EXPECT_EQ(ctl::check_response(m.data(), m.size(), BURST_CTL_OP_QUERY_STATUS, 9), EPROTO);
  r->count = 4;  // count and length disagree
  EXPECT_EQ(ctl::check_response(m.data(), m.size(), BURST_CTL_OP_QUERY_QPS, 9), EBADMSG);
  r->count = 0xffffffff;
  EXPECT_EQ(ctl::check_response(m.data(), m.size(), BURST_CTL_OP_QUERY_QPS, 9), EBADMSG);
  // An error is the header alone.
  burst_ctl_hdr e;
  ctl::init_response(&e, req, sizeof(e), ENOENT);
  EXPECT_EQ(ctl::check_response(&e, sizeof(e), BURST_CTL_OP_QUERY_QPS, 9), 0);
  EXPECT_EQ(ctl::check_response(&e, sizeof(e) - 1, BURST_CTL_OP_QUERY_QPS, 9), EBADMSG);
}

TEST(CtlCodec, NegotiatesVersions) {
  EXPECT_EQ(ctl::negotiate_version(1, 1), 0);  // version 1 (no data path) is no longer spoken
  EXPECT_EQ(ctl::negotiate_version(BURST_CTL_VERSION_MIN, BURST_CTL_VERSION_MIN),
            BURST_CTL_VERSION_MIN);
  EXPECT_EQ(ctl::negotiate_version(1, 9), BURST_CTL_VERSION);
  EXPECT_EQ(ctl::negotiate_version(BURST_CTL_VERSION + 1, BURST_CTL_VERSION + 5), 0);
  EXPECT_EQ(ctl::negotiate_version(0, 0), 0);
  EXPECT_EQ(ctl::negotiate_version(3, 1), 0);  // empty range
}

TEST(CtlCodec, FixedStrings) {
  char f[8];
  ctl::set_str(f, "abcdefghij");
  EXPECT_EQ(ctl::get_str(f), "abcdefg");  // truncated, NUL-terminated
  std::memset(f, 'x', sizeof(f));         // no NUL at all: reading stops at the end
  EXPECT_EQ(ctl::get_str(f), "xxxxxxxx");
}

// ---------------------------------------------------------------------------
// Config

TEST(BurstdConfig, ParsesKeysAndReportsLines) {
  const std::string path = testing::TempDir() + "/burstd_test.conf";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(
      "# comment\nbackend = loopback   # inline\nworkers = 3\nsocket = /tmp/x.sock\n"
      "xdp_mode = generic\nmemory = shm\nsocket_mode = 0660\n",
      f);
  std::fclose(f);
  Config c;
  bool missing = true;
  std::string err;
  ASSERT_TRUE(load_config(path, true, &c, &missing, &err)) << err;
  EXPECT_FALSE(missing);
  EXPECT_EQ(c.backend, BackendKind::kLoopback);
  EXPECT_EQ(c.workers, 3u);
  EXPECT_EQ(c.socket_path, "/tmp/x.sock");
  EXPECT_EQ(c.xdp_mode, XdpMode::kGeneric);
  EXPECT_EQ(c.memory_mode, BURST_CTL_MEM_SHM);
  EXPECT_EQ(c.socket_mode, 0660u);

  f = std::fopen(path.c_str(), "w");
  std::fputs("workers = 2\nbogus = 1\n", f);
  std::fclose(f);
  EXPECT_FALSE(load_config(path, true, &c, &missing, &err));
  EXPECT_NE(err.find("burstd_test.conf:2: unknown key 'bogus'"), std::string::npos) << err;
  f = std::fopen(path.c_str(), "w");
  std::fputs("workers = 99\n", f);
  std::fclose(f);
  EXPECT_FALSE(load_config(path, true, &c, &missing, &err));
  EXPECT_NE(err.find(":1:"), std::string::npos) << err;
  f = std::fopen(path.c_str(), "w");
  std::fputs("[daemon]\nworkers = 2\n", f);
  std::fclose(f);
  EXPECT_FALSE(load_config(path, true, &c, &missing, &err));

  EXPECT_TRUE(load_config(path + ".absent", false, &c, &missing, &err));
  EXPECT_TRUE(missing);
  EXPECT_FALSE(load_config(path + ".absent", true, &c, &missing, &err));

  Config x;
  x.backend = BackendKind::kXdp;
  EXPECT_FALSE(validate_config(x, &err));
  EXPECT_NE(err.find("--netdev"), std::string::npos);
  std::remove(path.c_str());
}

// kmod = auto | on | off (docs/kmod.md).
TEST(BurstdConfig, KmodKey) {
  Config c;
  std::string err;
  EXPECT_EQ(c.kmod, KmodMode::kAuto);
  ASSERT_TRUE(set_config_value(&c, "kmod", "on", &err)) << err;
  EXPECT_EQ(c.kmod, KmodMode::kOn);
  ASSERT_TRUE(set_config_value(&c, "kmod", "off", &err)) << err;
  EXPECT_EQ(c.kmod, KmodMode::kOff);
  EXPECT_FALSE(set_config_value(&c, "kmod", "yes", &err));
  EXPECT_STREQ(kmod_mode_name(KmodMode::kAuto), "auto");
}

// Where /dev/burst does not exist (this host cannot load modules): kmod = auto
// starts unregistered, kmod = on refuses to start; the attributes burstd would
// register are HELLO's limits.
TEST(BurstdKmod, WithoutTheModule) {
  if (access(BURST_KMOD_DEVICE_PATH, F_OK) == 0) GTEST_SKIP() << "/dev/burst exists here";
  Config c;
  c.backend = BackendKind::kLoopback;
  c.workers = 2;
  std::string err;
  std::unique_ptr<Device> dev = Device::Open(c, &err);
  ASSERT_NE(dev, nullptr) << err;
  std::unique_ptr<KmodDevice> k;
  EXPECT_TRUE(setup_kmod(c, *dev, &k, &err));
  EXPECT_EQ(k, nullptr);
  c.kmod = KmodMode::kOff;
  EXPECT_TRUE(setup_kmod(c, *dev, &k, &err));
  EXPECT_EQ(k, nullptr);
  c.kmod = KmodMode::kOn;
  EXPECT_FALSE(setup_kmod(c, *dev, &k, &err));
  EXPECT_NE(err.find("kmod = on"), std::string::npos) << err;
  EXPECT_FALSE(dev->kernel_registered());

  burst_ctl_hello_resp h{};
  fill_hello_limits(*dev, &h);
  const burst_kmod_device_attr a = kmod_device_attr(*dev);
  EXPECT_EQ(a.max_qp, h.max_qp);
  EXPECT_EQ(a.max_qp, dev->qps_per_worker() * 2);
  EXPECT_EQ(a.max_cqe, h.max_cqe);
  EXPECT_EQ(a.max_send_sge, h.max_sge);
  EXPECT_EQ(a.max_res_rd_atom, h.max_res_rd_atom);
  EXPECT_EQ(a.max_total_mcast_qp_attach, h.max_total_mcast_qp_attach);
  EXPECT_EQ(a.num_comp_vectors, 2u);
  EXPECT_GE(a.active_mtu, 1u);
  EXPECT_LE(a.active_mtu, 5u);
  EXPECT_NE(a.node_guid, 0u);
  EXPECT_EQ(a.reserved[0] | a.reserved[1], 0u);
}

// /etc/burst/burstd.conf, then /etc/burst/NETDEV.conf, with errors naming the
// file and line and a fix.
TEST(BurstdConfig, LayersCommonThenPerNicFile) {
  const std::string dir = testing::TempDir() + "/burstd_layers";
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  auto write = [&](const std::string& name, const char* text) {
    FILE* f = std::fopen((dir + "/" + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text, f);
    std::fclose(f);
  };
  write("burstd.conf", "workers = 2\nxdp_mode = generic\n");
  write("eth7.conf", "# eth7 only\nworkers = 4\n");
  ConfigSources src;
  src.dir = dir;
  src.netdev = "eth7";
  Config c;
  std::vector<std::string> read;
  std::string err;
  ASSERT_TRUE(load_layered_config(src, &c, &read, &err)) << err;
  EXPECT_EQ(c.workers, 4u);  // the NIC's file wins
  EXPECT_EQ(c.xdp_mode, XdpMode::kGeneric);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(origin_prefix(c, "workers"), dir + "/eth7.conf:2: ");

  src.netdev = "eth8";  // no file of its own
  c = Config{};
  read.clear();
  ASSERT_TRUE(load_layered_config(src, &c, &read, &err)) << err;
  EXPECT_EQ(c.workers, 2u);
  EXPECT_EQ(read.size(), 1u);

  write("eth7.conf", "netdev = eth9\n");  // the file's name picks the netdev
  src.netdev = "eth7";
  c = Config{};
  EXPECT_FALSE(load_layered_config(src, &c, &read, &err));
  EXPECT_NE(err.find("eth7.conf:1: 'netdev = eth9' in the file of eth7 (fix:"), std::string::npos) << err;

  write("eth7.conf", "wokers = 3\n");
  EXPECT_FALSE(load_layered_config(src, &c, &read, &err));
  EXPECT_NE(err.find("eth7.conf:1: unknown key 'wokers' (fix: did you mean 'workers'?"),
            std::string::npos)
      << err;
  write("eth7.conf", "xdp_mode = fast\n");
  EXPECT_FALSE(load_layered_config(src, &c, &read, &err));
  EXPECT_NE(err.find("eth7.conf:1: 'xdp_mode = fast' is not valid (fix: xdp_mode takes auto, "),
            std::string::npos)
      << err;

  src.netdev = "../x";  // never a path outside DIR
  EXPECT_FALSE(load_layered_config(src, &c, &read, &err));
  std::system(("rm -rf " + dir).c_str());
}

TEST(BurstdWatchdog, PingsOnlyWhenEveryWorkerMoved) {
  uint32_t stuck = 99;
  EXPECT_TRUE(all_moved({1, 5, 9}, {2, 6, 10}, &stuck));
  EXPECT_FALSE(all_moved({1, 5, 9}, {2, 5, 10}, &stuck));
  EXPECT_EQ(stuck, 1u);
  EXPECT_TRUE(all_moved({}, {}, &stuck));
}

// ---------------------------------------------------------------------------
// Dispatcher over a loopback device

class DispatchTest : public testing::Test {
 protected:
  void SetUp() override {
    config_.backend = BackendKind::kLoopback;
    config_.workers = 2;
    config_.mtu = 1500;
    std::string err;
    device_ = Device::Open(config_, &err);
    ASSERT_NE(device_, nullptr) << err;
    res_ = std::make_unique<Resources>(*device_, 5000);
    disp_ = std::make_unique<Dispatcher>(config_, *device_, *res_);
    device_->start();  // commands cross threads as in burstd
    a_.id = 1;
    b_.id = 2;
    disp_->open_session(a_);
    disp_->open_session(b_);
  }
  void TearDown() override {
    disp_->close_session(a_, "test over");
    disp_->close_session(b_, "test over");
    EXPECT_EQ(res_->qp_count(), 0u);
    device_->stop();
  }

  // Sends a message; returns the response status (checked for framing).
  int send(Session& s, const void* msg, size_t len, std::vector<uint8_t>* out = nullptr,
           bool* close = nullptr) {
    std::vector<uint8_t> resp;
    bool c = false;
    disp_->handle(s, static_cast<const uint8_t*>(msg), len, &resp, &c);
    EXPECT_GE(resp.size(), sizeof(burst_ctl_hdr));
    burst_ctl_hdr h;
    std::memcpy(&h, resp.data(), sizeof(h));
    EXPECT_EQ(h.magic, BURST_CTL_MAGIC);
    EXPECT_EQ(h.length, resp.size());
    if (close != nullptr) *close = c;
    if (out != nullptr) *out = resp;
    return h.status;
  }
  template <class T>
  int call(Session& s, T req, std::vector<uint8_t>* out = nullptr) {
    ctl::init_request(&req.hdr, req.hdr.op, sizeof(T), s.version ? s.version : 1, 11);
    std::vector<uint8_t> resp;
    const int st = send(s, &req, sizeof(req), &resp);
    EXPECT_EQ(ctl::check_response(resp.data(), resp.size(), req.hdr.op, 11), 0);
    if (out != nullptr) *out = resp;
    return st;
  }
  void hello(Session& s) {
    auto h = request<burst_ctl_hello_req>(BURST_CTL_OP_HELLO);
    h.version_min = 1;
    h.version_max = BURST_CTL_VERSION;
    ASSERT_EQ(call(s, h), 0);
    ASSERT_TRUE(s.hello);
  }
  uint32_t alloc_pd(Session& s) {
    std::vector<uint8_t> out;
    EXPECT_EQ(call(s, request<burst_ctl_alloc_pd_req>(BURST_CTL_OP_ALLOC_PD), &out), 0);
    return reinterpret_cast<burst_ctl_alloc_pd_resp*>(out.data())->pd_handle;
  }
  uint32_t create_cq(Session& s) {
    auto r = request<burst_ctl_create_cq_req>(BURST_CTL_OP_CREATE_CQ);
    r.cqe = 128;
    std::vector<uint8_t> out;
    EXPECT_EQ(call(s, r, &out), 0);
    return reinterpret_cast<burst_ctl_create_cq_resp*>(out.data())->cq_handle;
  }
  int create_qp(Session& s, uint32_t pd, uint32_t cq, burst_ctl_create_qp_resp* resp,
                uint8_t qp_type = 2) {
    auto r = request<burst_ctl_create_qp_req>(BURST_CTL_OP_CREATE_QP);
    r.pd_handle = pd;
    r.send_cq_handle = r.recv_cq_handle = cq;
    r.qp_type = qp_type;
    r.cap.max_send_wr = r.cap.max_recv_wr = 16;
    r.cap.max_send_sge = r.cap.max_recv_sge = 1;
    std::vector<uint8_t> out;
    const int e = call(s, r, &out);
    if (e == 0) std::memcpy(resp, out.data(), sizeof(*resp));
    return e;
  }
  int modify(Session& s, uint32_t qp, uint32_t mask, const burst_ctl_qp_attr& a) {
    auto r = request<burst_ctl_modify_qp_req>(BURST_CTL_OP_MODIFY_QP);
    r.qp_handle = qp;
    r.attr_mask = mask;
    r.attr = a;
    return call(s, r);
  }
  void to_rts(Session& s, uint32_t qp, uint32_t dest_qpn) {
    burst_ctl_qp_attr a{};
    a.qp_state = 1;
    a.port_num = 1;
    a.qp_access_flags = core::kAccessRemoteWrite | core::kAccessRemoteRead;
    ASSERT_EQ(modify(s, qp,
                     core::kQpState | core::kQpPkeyIndex | core::kQpPort | core::kQpAccessFlags, a),
              0);
    a = {};
    a.qp_state = 2;
    a.path_mtu = 3;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = 5;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    std::memcpy(a.ah.dgid, device_->info().gids[0].data(), 16);  // dmac zero: burstd fills it
    a.ah.hop_limit = 64;
    a.ah.vlan_id = 0xffff;
    ASSERT_EQ(modify(s, qp,
                     core::kQpState | core::kQpAv | core::kQpPathMtu | core::kQpDestQpn |
                         core::kQpRqPsn | core::kQpMaxDestRdAtomic | core::kQpMinRnrTimer,
                     a),
              0);
    a = {};
    a.qp_state = 3;
    a.sq_psn = 5;
    a.timeout = 10;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    ASSERT_EQ(modify(s, qp,
                     core::kQpState | core::kQpSqPsn | core::kQpQpTimeout | core::kQpRetryCnt |
                         core::kQpRnrRetry | core::kQpMaxQpRdAtomic,
                     a),
              0);
  }

  Config config_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Resources> res_;
  std::unique_ptr<Dispatcher> disp_;
  Session a_, b_;
};

TEST_F(DispatchTest, HelloFirstAndVersions) {
  auto st = request<burst_ctl_query_status_req>(BURST_CTL_OP_QUERY_STATUS);
  EXPECT_EQ(send(a_, &st, sizeof(st)), EPROTO);  // before HELLO

  auto h = request<burst_ctl_hello_req>(BURST_CTL_OP_HELLO);
  h.version_min = BURST_CTL_VERSION + 1;
  h.version_max = BURST_CTL_VERSION + 3;
  std::vector<uint8_t> out;
  EXPECT_EQ(send(a_, &h, sizeof(h), &out), EPROTONOSUPPORT);
  ASSERT_EQ(out.size(), sizeof(burst_ctl_hello_resp));  // HELLO keeps its body on error
  const auto* hr = reinterpret_cast<const burst_ctl_hello_resp*>(out.data());
  EXPECT_EQ(hr->version, 0);
  EXPECT_EQ(hr->server_version_max, BURST_CTL_VERSION);
  EXPECT_FALSE(a_.hello);

  hello(a_);
  EXPECT_EQ(a_.version, BURST_CTL_VERSION);
  st = request<burst_ctl_query_status_req>(BURST_CTL_OP_QUERY_STATUS, BURST_CTL_VERSION + 1);
  EXPECT_EQ(send(a_, &st, sizeof(st)), EPROTONOSUPPORT);
  st = request<burst_ctl_query_status_req>(BURST_CTL_OP_QUERY_STATUS);
  ASSERT_EQ(send(a_, &st, sizeof(st), &out), 0);
  const auto* sr = reinterpret_cast<const burst_ctl_status_resp*>(out.data());
  EXPECT_EQ(sr->backend, BURST_CTL_BACKEND_LOOPBACK);
  EXPECT_EQ(sr->workers, 2u);
  EXPECT_EQ(sr->clients, 2u);
}

TEST_F(DispatchTest, HelloDescribesTheDevice) {
  std::vector<uint8_t> out;
  auto h = request<burst_ctl_hello_req>(BURST_CTL_OP_HELLO);
  h.version_min = BURST_CTL_VERSION_MIN;
  h.version_max = BURST_CTL_VERSION;
  ASSERT_EQ(send(a_, &h, sizeof(h), &out), 0);
  const auto* r = reinterpret_cast<const burst_ctl_hello_resp*>(out.data());
  EXPECT_EQ(ctl::get_str(r->ibdev), "");  // no device_name: burstctl names it (docs/devices.md)
  EXPECT_EQ(r->gid_count, 2);  // fe80::EUI-64, ::ffff:127.0.0.1
  EXPECT_EQ(r->gids[1][10], 0xff);
  EXPECT_EQ(r->gids[1][12], 127);
  EXPECT_EQ(r->active_mtu, 3);  // 1024 on a 1500-byte link
  EXPECT_EQ(r->port_state, BURST_CTL_PORT_ACTIVE);
  EXPECT_EQ(r->max_qp, 2048u);
  EXPECT_EQ(r->max_mcast_grp, BURST_MAX_MCAST_GRP);
  EXPECT_EQ(r->max_mcast_qp_attach, BURST_MAX_MCAST_QP_ATTACH);
  EXPECT_EQ(r->max_total_mcast_qp_attach, BURST_MAX_TOTAL_MCAST_QP_ATTACH);
}

// ATTACH_MCAST / DETACH_MCAST: per client, with the uverbs errnos; a client
// that goes away loses its attachments (and the group goes with the last).
TEST_F(DispatchTest, McastAttachmentsArePerClientAndGoWithIt) {
  hello(a_);
  hello(b_);
  const uint32_t pd = alloc_pd(a_);
  const uint32_t cq = create_cq(a_);
  burst_ctl_create_qp_resp ud1{}, ud2{}, rc{};
  ASSERT_EQ(create_qp(a_, pd, cq, &ud1, 4), 0);
  ASSERT_EQ(create_qp(a_, pd, cq, &ud2, 4), 0);  // on the other worker
  ASSERT_EQ(create_qp(a_, pd, cq, &rc), 0);
  auto m = request<burst_ctl_mcast_req>(BURST_CTL_OP_ATTACH_MCAST);
  const uint8_t group[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 1, 1};
  std::memcpy(m.gid, group, 16);
  m.qp_handle = rc.qp_handle;
  EXPECT_EQ(call(a_, m), EINVAL);  // not UD
  m.qp_handle = ud1.qp_handle;
  EXPECT_EQ(call(b_, m), ENOENT);  // not b's QP
  EXPECT_EQ(call(a_, m), 0);
  EXPECT_EQ(call(a_, m), 0);  // twice
  m.qp_handle = ud2.qp_handle;
  EXPECT_EQ(call(a_, m), 0);
  EXPECT_EQ(res_->mcast_group_count(), 1u);
  auto unicast = m;
  std::memcpy(unicast.gid, device_->info().gids[1].data(), 16);
  EXPECT_EQ(call(a_, unicast), EINVAL);
  auto d = request<burst_ctl_handle_req>(BURST_CTL_OP_DESTROY_QP);
  d.handle = ud1.qp_handle;
  EXPECT_EQ(call(a_, d), EBUSY);  // attached
  auto det = request<burst_ctl_mcast_req>(BURST_CTL_OP_DETACH_MCAST);
  std::memcpy(det.gid, group, 16);
  det.qp_handle = rc.qp_handle;
  EXPECT_EQ(call(a_, det), EINVAL);  // never attached
  det.qp_handle = ud1.qp_handle;
  EXPECT_EQ(call(a_, det), 0);
  EXPECT_EQ(call(a_, det), EINVAL);
  EXPECT_EQ(call(a_, d), 0);
  EXPECT_EQ(res_->mcast_group_count(), 1u);  // ud2 is still in it
  disp_->close_session(a_, "closed");
  EXPECT_EQ(res_->mcast_group_count(), 0u);
  EXPECT_EQ(res_->qp_count(), 0u);
  disp_->open_session(a_);  // for TearDown
}

TEST_F(DispatchTest, MalformedRequestsGetErrorsNeverACrash) {
  hello(a_);
  bool close = false;
  auto st = request<burst_ctl_query_status_req>(BURST_CTL_OP_QUERY_STATUS);
  st.hdr.op = 999;
  EXPECT_EQ(send(a_, &st, sizeof(st), nullptr, &close), EOPNOTSUPP);
  EXPECT_FALSE(close);
  auto hr = request<burst_ctl_handle_req>(BURST_CTL_OP_DESTROY_QP);
  EXPECT_EQ(send(a_, &hr, sizeof(hr) - 8, nullptr, &close), EBADMSG);  // length field says more
  const uint8_t tiny[3] = {1, 2, 3};
  EXPECT_EQ(send(a_, tiny, sizeof(tiny), nullptr, &close), EPROTO);
  EXPECT_TRUE(close);

  // Random messages: half with a valid header for a random op and a random
  // length, half pure noise. Every one gets a well-formed response.
  std::mt19937_64 rng(42);
  Session fuzz;
  fuzz.id = 3;
  disp_->open_session(fuzz);
  hello(fuzz);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> m(rng() % 200);
    for (auto& byte : m) byte = static_cast<uint8_t>(rng());
    if ((i & 1) && m.size() >= sizeof(burst_ctl_hdr)) {
      static const uint16_t kOps[] = {1, 2, 3, 4, 5, 16, 17, 18, 19, 20, 21, 22, 23, 77};
      ctl::init_request(reinterpret_cast<burst_ctl_hdr*>(m.data()), kOps[rng() % 14],
                        static_cast<uint32_t>(m.size()), BURST_CTL_VERSION, i);
    }
    send(fuzz, m.data(), m.size());
  }
  // Exact-size requests with random bodies reach the handlers.
  const std::pair<uint16_t, size_t> sized[] = {
      {BURST_CTL_OP_CREATE_QP, sizeof(burst_ctl_create_qp_req)},
      {BURST_CTL_OP_MODIFY_QP, sizeof(burst_ctl_modify_qp_req)},
      {BURST_CTL_OP_QUERY_COUNTERS, sizeof(burst_ctl_query_counters_req)},
      {BURST_CTL_OP_QUERY_QPS, sizeof(burst_ctl_query_qps_req)},
      {BURST_CTL_OP_CREATE_CQ, sizeof(burst_ctl_create_cq_req)},
      {BURST_CTL_OP_DESTROY_QP, sizeof(burst_ctl_handle_req)},
      {BURST_CTL_OP_HELLO, sizeof(burst_ctl_hello_req)},
  };
  for (int i = 0; i < 5000; ++i) {
    const auto& [op, size] = sized[rng() % 7];
    std::vector<uint8_t> m(size);
    for (auto& byte : m) byte = static_cast<uint8_t>(rng() % 4);  // small handles hit objects
    ctl::init_request(reinterpret_cast<burst_ctl_hdr*>(m.data()), op, static_cast<uint32_t>(size),
                      BURST_CTL_VERSION, i);
    if (op == BURST_CTL_OP_HELLO) {
      reinterpret_cast<burst_ctl_hello_req*>(m.data())->version_max = 1;
    }
    send(fuzz, m.data(), m.size());
  }
  disp_->close_session(fuzz, "fuzz over");
}

TEST_F(DispatchTest, HandlesArePerClient) {
  hello(a_);
  hello(b_);
  const uint32_t pd = alloc_pd(a_);
  const uint32_t cq = create_cq(a_);
  burst_ctl_create_qp_resp q{};
  ASSERT_EQ(create_qp(a_, pd, cq, &q), 0);
  burst_ctl_create_qp_resp other{};
  EXPECT_EQ(create_qp(b_, pd, cq, &other), ENOENT);
  auto qq = request<burst_ctl_query_qp_req>(BURST_CTL_OP_QUERY_QP);
  qq.qp_handle = q.qp_handle;
  EXPECT_EQ(call(b_, qq), ENOENT);
  EXPECT_EQ(call(a_, qq), 0);
  auto d = request<burst_ctl_handle_req>(BURST_CTL_OP_DESTROY_QP);
  d.handle = q.qp_handle;
  EXPECT_EQ(call(b_, d), ENOENT);
  // A handle of one kind is not another kind.
  auto dp = request<burst_ctl_handle_req>(BURST_CTL_OP_DEALLOC_PD);
  dp.handle = cq;
  EXPECT_EQ(call(a_, dp), ENOENT);
  dp.handle = pd;
  EXPECT_EQ(call(a_, dp), EBUSY);
  EXPECT_EQ(res_->qp_count(), 1u);
  // Closing the owner releases everything.
  disp_->close_session(a_, "closed");
  EXPECT_EQ(res_->qp_count(), 0u);
  EXPECT_EQ(res_->cq_count(), 0u);
  EXPECT_EQ(res_->pd_count(), 0u);
  disp_->open_session(a_);  // for TearDown
}

// ALLOC_MW / DEALLOC_MW: types 1 and 2 only, the PD held, handles per client,
// windows released with their client. (No registration here: REG_MR needs
// ATTACH_MEMORY; REREG_MR of an unknown MR is ENOENT, an MR-less one too.)
TEST_F(DispatchTest, MemoryWindowsAndRereg) {
  hello(a_);
  hello(b_);
  const uint32_t pd = alloc_pd(a_);
  auto am = request<burst_ctl_alloc_mw_req>(BURST_CTL_OP_ALLOC_MW);
  am.pd_handle = pd;
  am.type = 3;
  EXPECT_EQ(call(a_, am), EINVAL);
  EXPECT_EQ(call(b_, am), ENOENT) << "another client's PD";
  std::vector<uint8_t> out;
  am.type = 2;
  ASSERT_EQ(call(a_, am, &out), 0);
  const auto mw2 = *reinterpret_cast<burst_ctl_alloc_mw_resp*>(out.data());
  am.type = 1;
  ASSERT_EQ(call(a_, am, &out), 0);
  const auto mw1 = *reinterpret_cast<burst_ctl_alloc_mw_resp*>(out.data());
  EXPECT_NE(mw1.rkey, 0u);
  EXPECT_NE(mw1.rkey >> 8, mw2.rkey >> 8);
  auto dp = request<burst_ctl_handle_req>(BURST_CTL_OP_DEALLOC_PD);
  dp.handle = pd;
  EXPECT_EQ(call(a_, dp), EBUSY) << "windows hold their PD";
  auto dm = request<burst_ctl_handle_req>(BURST_CTL_OP_DEALLOC_MW);
  dm.handle = mw2.mw_handle;
  EXPECT_EQ(call(b_, dm), ENOENT);
  EXPECT_EQ(call(a_, dm), 0);
  EXPECT_EQ(call(a_, dm), ENOENT);
  auto rr = request<burst_ctl_rereg_mr_req>(BURST_CTL_OP_REREG_MR);
  rr.mr_handle = mw1.mw_handle;  // not an MR
  rr.flags = 4;
  EXPECT_EQ(call(a_, rr), ENOENT);
  EXPECT_EQ(device_->mrs().mw_count(), 1u);
  disp_->close_session(a_, "closed");  // releases the type 1 window and the PD
  EXPECT_EQ(device_->mrs().mw_count(), 0u);
  EXPECT_EQ(res_->pd_count(), 0u);
  disp_->open_session(a_);  // for TearDown
}

// REG_DMABUF_MR without an exporter: no descriptor is EBADF (the consumers'
// fd -1 probe), a descriptor that is not a dma-buf (memfd, pipe) EINVAL, and
// the request's own checks (PD, access, reserved) as REG_MR's. The dispatcher
// closes what it was sent.
TEST_F(DispatchTest, RegDmabufMrRefusals) {
  hello(a_);
  hello(b_);
  const uint32_t pd = alloc_pd(a_);
  auto r = request<burst_ctl_reg_dmabuf_mr_req>(BURST_CTL_OP_REG_DMABUF_MR);
  r.pd_handle = pd;
  r.access = core::kAccessLocalWrite;
  r.length = 4096;
  r.iova = 0x10000;
  ctl::init_request(&r.hdr, r.hdr.op, sizeof(r), a_.version, 11);
  auto send_fd = [&](Session& s, const burst_ctl_reg_dmabuf_mr_req& req, int fd) {
    std::vector<uint8_t> resp;
    std::vector<int> out_fds;
    bool close = false;
    const int fds[1] = {fd};
    disp_->handle(s, reinterpret_cast<const uint8_t*>(&req), sizeof(req), fds, fd >= 0 ? 1 : 0,
                  &resp, &out_fds, &close);
    burst_ctl_hdr h;
    std::memcpy(&h, resp.data(), sizeof(h));
    return static_cast<int>(h.status);
  };
  EXPECT_EQ(send_fd(a_, r, -1), EBADF);
  const int mfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
  ASSERT_GE(mfd, 0);
  ASSERT_EQ(ftruncate(mfd, 65536), 0);
  EXPECT_EQ(send_fd(a_, r, dup(mfd)), EINVAL) << "a memfd";
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  EXPECT_EQ(send_fd(a_, r, p[0]), EINVAL) << "a pipe";
  close(p[1]);
  EXPECT_EQ(send_fd(b_, r, dup(mfd)), ENOENT) << "another client's PD";
  auto bad = r;
  bad.reserved = 1;
  EXPECT_EQ(send_fd(a_, bad, dup(mfd)), EINVAL);
  bad = r;
  bad.access = core::kAccessRemoteWrite;  // without LOCAL_WRITE
  EXPECT_EQ(send_fd(a_, bad, dup(mfd)), EINVAL);
  bad = r;
  bad.access |= 0x100000;  // unknown
  EXPECT_EQ(send_fd(a_, bad, dup(mfd)), EOPNOTSUPP);
  bad = r;
  bad.offset = UINT64_MAX - 10;  // wraps
  EXPECT_EQ(send_fd(a_, bad, dup(mfd)), EINVAL);
  close(mfd);
  EXPECT_EQ(device_->mrs().mr_count(), 0u);
}

// Native mode (abi/burst_kmod.h) asks for events through the kernel module: a
// burstd that registered no kernel device (this one) refuses both requests with
// EOPNOTSUPP; F_KMOD with F_CHANNEL is EINVAL, F_KMOD with a descriptor EBADF;
// the pipe-based requests still work.
TEST_F(DispatchTest, NativeModeEventsNeedARegistration) {
  hello(a_);
  ASSERT_EQ(device_->kmod(), nullptr);
  auto cq = request<burst_ctl_create_cq_req>(BURST_CTL_OP_CREATE_CQ);
  cq.cqe = 16;
  cq.flags = BURST_CTL_CQ_F_KMOD;
  EXPECT_EQ(call(a_, cq), EOPNOTSUPP);
  cq.flags = BURST_CTL_CQ_F_KMOD | BURST_CTL_CQ_F_CHANNEL;
  EXPECT_EQ(call(a_, cq), EINVAL);
  auto with_fd = [&](auto req, int fd) {
    ctl::init_request(&req.hdr, req.hdr.op, sizeof(req), a_.version, 11);
    std::vector<uint8_t> resp;
    std::vector<int> out_fds;
    bool close_it = false;
    const int fds[1] = {fd};
    disp_->handle(a_, reinterpret_cast<const uint8_t*>(&req), sizeof(req), fds, fd >= 0 ? 1 : 0,
                  &resp, &out_fds, &close_it);
    for (int f : out_fds) close(f);
    burst_ctl_hdr h;
    std::memcpy(&h, resp.data(), sizeof(h));
    return static_cast<int>(h.status);
  };
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  cq.flags = BURST_CTL_CQ_F_KMOD;
  EXPECT_EQ(with_fd(cq, dup(p[1])), EBADF);
  auto as = request<burst_ctl_set_async_fd_req>(BURST_CTL_OP_SET_ASYNC_FD);
  EXPECT_EQ(with_fd(as, -1), EOPNOTSUPP);
  EXPECT_EQ(with_fd(as, p[1]), 0);  // adopted: the pipe of burstctl run's mode
  close(p[0]);
  EXPECT_NE(create_cq(a_), 0u);
}

// RESIZE_CQ: EINVAL for 0 and above max_cqe, ENOENT for another client's or an
// unknown CQ; a CQ whose Engine shards exist (a QP uses it) resizes up and down.
TEST_F(DispatchTest, ResizeCq) {
  hello(a_);
  hello(b_);
  const uint32_t pd = alloc_pd(a_);
  const uint32_t cq = create_cq(a_);
  burst_ctl_create_qp_resp q{};
  ASSERT_EQ(create_qp(a_, pd, cq, &q), 0);
  auto r = request<burst_ctl_resize_cq_req>(BURST_CTL_OP_RESIZE_CQ);
  r.cq_handle = cq;
  r.cqe = 0;
  EXPECT_EQ(call(a_, r), EINVAL);
  r.cqe = BURST_MAX_CQE + 1;
  EXPECT_EQ(call(a_, r), EINVAL);
  r.cqe = 1000;
  EXPECT_EQ(call(b_, r), ENOENT);
  r.cq_handle = cq + 100;
  EXPECT_EQ(call(a_, r), ENOENT);
  r.cq_handle = cq;
  for (const uint32_t cqe : {1000u, 1u, BURST_MAX_CQE}) {
    r.cqe = cqe;
    std::vector<uint8_t> out;
    ASSERT_EQ(call(a_, r, &out), 0);
    const auto* resp = reinterpret_cast<const burst_ctl_resize_cq_resp*>(out.data());
    EXPECT_EQ(resp->cqe, cqe);
    EXPECT_GE(resp->region_size, uint64_t{cqe} * sizeof(burst_shm_cqe));
  }
  auto d = request<burst_ctl_handle_req>(BURST_CTL_OP_DESTROY_QP);
  d.handle = q.qp_handle;
  EXPECT_EQ(call(a_, d), 0);
}

TEST_F(DispatchTest, QueriesListWorkersCountersAndQps) {
  hello(a_);
  const uint32_t pd = alloc_pd(a_);
  const uint32_t cq = create_cq(a_);
  burst_ctl_create_qp_resp q1{}, q2{};
  ASSERT_EQ(create_qp(a_, pd, cq, &q1), 0);
  ASSERT_EQ(create_qp(a_, pd, cq, &q2), 0);
  EXPECT_NE(q1.worker, q2.worker);
  std::vector<uint8_t> out;
  ASSERT_EQ(call(a_, request<burst_ctl_query_workers_req>(BURST_CTL_OP_QUERY_WORKERS), &out), 0);
  const auto* w = reinterpret_cast<const burst_ctl_workers_resp*>(out.data());
  ASSERT_EQ(w->count, 2u);
  EXPECT_EQ(w->entries[0].qps + w->entries[1].qps, 2u);

  auto qc = request<burst_ctl_query_counters_req>(BURST_CTL_OP_QUERY_COUNTERS);
  qc.worker = BURST_CTL_ALL_WORKERS;
  ASSERT_EQ(call(a_, qc, &out), 0);
  const auto* c = reinterpret_cast<const burst_ctl_counters_resp*>(out.data());
  bool icrc = false, unknown_qp = false;
  for (uint32_t i = 0; i < c->count; ++i) {
    const std::string n = ctl::get_str(c->entries[i].name);
    icrc |= n == "rx_parse_drop.bad_icrc";
    unknown_qp |= n == "rx_drop.unknown_qp";
  }
  EXPECT_TRUE(icrc && unknown_qp);
  qc.worker = 5;
  EXPECT_EQ(call(a_, qc), EINVAL);

  auto qq = request<burst_ctl_query_qps_req>(BURST_CTL_OP_QUERY_QPS);
  qq.max = 1;  // pages of one
  ASSERT_EQ(call(a_, qq, &out), 0);
  const auto* p = reinterpret_cast<const burst_ctl_qps_resp*>(out.data());
  EXPECT_EQ(p->total, 2u);
  ASSERT_EQ(p->count, 1u);
  EXPECT_EQ(p->entries[0].qpn, std::min(q1.qpn, q2.qpn));
  EXPECT_EQ(p->entries[0].qp_state, 0);  // RESET
  EXPECT_EQ(p->next_qpn, std::max(q1.qpn, q2.qpn));
  qq.start_qpn = p->next_qpn;
  ASSERT_EQ(call(a_, qq, &out), 0);
  p = reinterpret_cast<const burst_ctl_qps_resp*>(out.data());
  ASSERT_EQ(p->count, 1u);
  EXPECT_EQ(p->next_qpn, 0u);
}

// Two QPs of one burstd on different workers, connected to each other over the
// loopback backend: a SEND from one arrives in the other's receive buffer.
TEST_F(DispatchTest, LoopbackCarriesTrafficBetweenWorkers) {
  hello(a_);
  const uint32_t pd = alloc_pd(a_);
  // A CQ without a ring (the control-path overload): the test polls the
  // Engine CQ shards itself instead of an application's ring.
  uint32_t cq = 0, cq_entries = 0;
  ASSERT_EQ(res_->create_cq(a_.id, 128, &cq, &cq_entries), 0);
  burst_ctl_create_qp_resp q1{}, q2{};
  ASSERT_EQ(create_qp(a_, pd, cq, &q1), 0);
  ASSERT_EQ(create_qp(a_, pd, cq, &q2), 0);
  ASSERT_NE(q1.worker, q2.worker);
  to_rts(a_, q1.qp_handle, q2.qpn);
  to_rts(a_, q2.qp_handle, q1.qpn);

  // Memory registration comes with the data path increment; register here, on
  // the control thread, as the MrTable contract allows before traffic.
  std::vector<uint8_t> src(3000), dst(3000, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7);
  uint32_t mr_pd = 0;
  for (uint32_t p = 1; p < 16 && mr_pd == 0; ++p) {
    if (device_->mrs().pd_valid(p)) mr_pd = p;
  }
  ASSERT_NE(mr_pd, 0u);
  uint32_t lkey_s, rkey_s, lkey_d, rkey_d;
  ASSERT_TRUE(device_->mrs()
                  .reg_mr(mr_pd, src.data(), reinterpret_cast<uint64_t>(src.data()), src.size(), 0,
                          &lkey_s, &rkey_s)
                  .ok());
  ASSERT_TRUE(device_->mrs()
                  .reg_mr(mr_pd, dst.data(), reinterpret_cast<uint64_t>(dst.data()), dst.size(),
                          core::kAccessLocalWrite, &lkey_d, &rkey_d)
                  .ok());
  core::RecvWr rwr;
  rwr.wr_id = 2;
  rwr.num_sge = 1;
  rwr.sg_list[0] = {reinterpret_cast<uint64_t>(dst.data()), static_cast<uint32_t>(dst.size()),
                    lkey_d};
  core::Status st;
  ASSERT_EQ(device_->worker(q2.worker).run(
                [&](WorkerBase& w) { st = w.engine().post_recv(q2.qpn, rwr); }, 5000),
            0);
  ASSERT_TRUE(st.ok());
  core::SendWr swr;
  swr.wr_id = 1;
  swr.opcode = core::WrOpcode::kSend;
  swr.send_flags = core::kSendSignaled;
  swr.num_sge = 1;
  swr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()), static_cast<uint32_t>(src.size()),
                    lkey_s};
  ASSERT_EQ(device_->worker(q1.worker).run(
                [&](WorkerBase& w) { st = w.engine().post_send(q1.qpn, swr); }, 5000),
            0);
  ASSERT_TRUE(st.ok());

  // Completions: the send on q1's worker, the receive on q2's (each worker
  // has its own shard of the CQ).
  bool sent = false, received = false;
  for (int i = 0; i < 500 && !(sent && received); ++i) {
    for (uint32_t w : {q1.worker, q2.worker}) {
      (void)device_->worker(w).run(
          [&](WorkerBase& wk) {
            core::Wc wc[4];
            for (uint32_t id = 1; id < 4; ++id) {
              const int n = wk.engine().poll_cq(id, wc, 4);
              for (int k = 0; k < n; ++k) {
                EXPECT_EQ(wc[k].status, core::WcStatus::kSuccess);
                sent |= wc[k].wr_id == 1;
                received |= wc[k].wr_id == 2 && wc[k].byte_len == src.size();
              }
            }
          },
          5000);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(sent);
  EXPECT_TRUE(received);
  EXPECT_EQ(dst, src);
  // Frames of q2 left worker q1.worker's port and came back there: handed over.
  std::vector<uint8_t> out;
  ASSERT_EQ(call(a_, request<burst_ctl_query_workers_req>(BURST_CTL_OP_QUERY_WORKERS), &out), 0);
  const auto* w = reinterpret_cast<const burst_ctl_workers_resp*>(out.data());
  EXPECT_GT(w->entries[0].handoff_out + w->entries[1].handoff_out, 0u);
  // Deregister before the buffers go away.
  EXPECT_TRUE(device_->mrs().dereg_mr(lkey_s).ok());
  EXPECT_TRUE(device_->mrs().dereg_mr(lkey_d).ok());
}

}  // namespace
}  // namespace burst::burstd
