// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burstd's CM ops (abi/burst_ctl_cm.h; handlers in daemon/burstd/resources_cm.cc)
// through the Dispatcher, on a loopback Device, with a fake CmChannels in place
// of the CmService: which channel and process a request names, the sizes
// relayed, errors as header-only responses, the eventfd's ownership, the
// session teardown, the counters; and without a connection manager, EOPNOTSUPP.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "abi/burst_ctl_proto.h"
#include "daemon/burstd/cm_service.h"
#include "daemon/burstd/config.h"
#include "daemon/burstd/device.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/resources.h"
#include "daemon/ctl/ctl_codec.h"

namespace burst::burstd {
namespace {

class FakeCm final : public CmChannels {
 public:
  int open_channel(uint32_t channel, pid_t pid, int event_fd) override {
    opened.emplace_back(channel, pid);
    if (event_fd < 0) return EBADF;
    close(event_fd);
    return 0;
  }
  void close_channel(uint32_t channel) override { closed.push_back(channel); }
  int command(uint32_t channel, uint32_t cmd, const void* in, size_t in_len, void* out,
              size_t out_len) override {
    last_channel = channel;
    last_cmd = cmd;
    last_in.assign(static_cast<const uint8_t*>(in), static_cast<const uint8_t*>(in) + in_len);
    last_out_len = out_len;
    if (cmd == 12) return -EAGAIN;  // GET_EVENT on an empty queue
    std::memset(out, 0xab, out_len);
    return static_cast<int>(out_len);
  }
  int open_push_channel(uint32_t channel, pid_t pid, int sock) override {
    opened.emplace_back(channel, pid);
    if (sock < 0) return EBADF;
    close(sock);
    return 0;
  }
  int command_ex(uint32_t channel, uint32_t cmd, uint64_t consumed, uint64_t, const void* in,
                 size_t in_len, void* out, size_t out_len, ExResult* ex) override {
    last_consumed = consumed;
    const int r = command(channel, cmd, in, in_len, out, out_len);
    for (uint64_t s = 1; s <= 3 && cmd == 1; ++s) ex->dead[ex->n_dead++] = s * 10;  // DESTROY_ID
    return r;
  }
  void counters(std::vector<std::pair<std::string, uint64_t>>* out) const override {
    out->emplace_back("cma.channels", 7);
  }
  uint64_t last_consumed = 0;
  std::vector<std::pair<uint32_t, pid_t>> opened;
  std::vector<uint32_t> closed;
  uint32_t last_channel = 0, last_cmd = 0;
  std::vector<uint8_t> last_in;
  size_t last_out_len = 0;
};

class UcmaDispatch : public testing::Test {
 protected:
  void SetUp() override {
    config_.backend = BackendKind::kLoopback;
    config_.workers = 1;
    config_.mtu = 1500;
    std::string err;
    device_ = Device::Open(config_, &err);
    ASSERT_NE(device_, nullptr) << err;
    res_ = std::make_unique<Resources>(*device_, 5000);
    disp_ = std::make_unique<Dispatcher>(config_, *device_, *res_);
    device_->start();
    s_.id = 5;
    s_.pid = 4242;
    disp_->open_session(s_);
    auto h = request<burst_ctl_hello_req>(BURST_CTL_OP_HELLO);
    h.version_min = 1;
    h.version_max = BURST_CTL_VERSION;
    ASSERT_EQ(call(h), 0);
  }
  void TearDown() override {
    disp_->close_session(s_, "test over");
    disp_->set_cm(nullptr);
    device_->stop();
  }
  template <class T>
  static T request(uint16_t op) {
    T r{};
    r.hdr.op = op;
    return r;
  }
  // The request (with fd, -1: none); the response's status. out: the response.
  template <class T>
  int call(T req, std::vector<uint8_t>* out = nullptr, int fd = -1) {
    ctl::init_request(&req.hdr, req.hdr.op, sizeof(T), s_.version ? s_.version : 1, 9);
    std::vector<uint8_t> resp;
    std::vector<int> out_fds;
    bool close_after = false;
    disp_->handle(s_, reinterpret_cast<const uint8_t*>(&req), sizeof(req), &fd, fd >= 0 ? 1 : 0,
                  &resp, &out_fds, &close_after);
    EXPECT_EQ(ctl::check_response(resp.data(), resp.size(), req.hdr.op, 9), 0);
    burst_ctl_hdr h;
    std::memcpy(&h, resp.data(), sizeof(h));
    if (out != nullptr) *out = resp;
    return h.status;
  }

  Config config_;
  FakeCm cm_;  // outlives the sessions (TearDown closes them)
  std::unique_ptr<Device> device_;
  std::unique_ptr<Resources> res_;
  std::unique_ptr<Dispatcher> disp_;
  Session s_;
};

TEST_F(UcmaDispatch, WithoutAConnectionManagerBothOpsAreEopnotsupp) {
  const int efd = eventfd(0, EFD_CLOEXEC);
  EXPECT_EQ(
      call(request<burst_ctl_cm_open_channel_req>(BURST_CTL_OP_CM_OPEN_CHANNEL), nullptr, efd),
      EOPNOTSUPP);
  EXPECT_EQ(fcntl(efd, F_GETFD), -1);  // the request's descriptor is closed, never kept
  EXPECT_EQ(call(request<burst_ctl_cm_command_req>(BURST_CTL_OP_CM_COMMAND)), EOPNOTSUPP);
}

TEST_F(UcmaDispatch, OpenChannelNamesTheSessionAndItsProcess) {
  FakeCm& cm = cm_;
  disp_->set_cm(&cm);
  const int efd = eventfd(0, EFD_CLOEXEC);
  std::vector<uint8_t> out;
  ASSERT_EQ(call(request<burst_ctl_cm_open_channel_req>(BURST_CTL_OP_CM_OPEN_CHANNEL), &out, efd),
            0);
  const auto* r = reinterpret_cast<const burst_ctl_cm_open_channel_resp*>(out.data());
  EXPECT_EQ(r->channel_id, 5u);
  EXPECT_EQ(r->abi_version, static_cast<uint32_t>(BURST_CTL_CM_ABI_VERSION));
  ASSERT_EQ(cm.opened.size(), 1u);
  EXPECT_EQ(cm.opened[0], std::make_pair(5u, static_cast<pid_t>(4242)));
  // No descriptor: the CM's answer (EBADF); flags must be 0.
  EXPECT_EQ(call(request<burst_ctl_cm_open_channel_req>(BURST_CTL_OP_CM_OPEN_CHANNEL)), EBADF);
  auto bad = request<burst_ctl_cm_open_channel_req>(BURST_CTL_OP_CM_OPEN_CHANNEL);
  bad.flags = 2;  // not a flag (1 is BURST_CTL_CM_OPEN_PUSH)
  EXPECT_EQ(call(bad, nullptr, eventfd(0, EFD_CLOEXEC)), EINVAL);
  disp_->close_session(s_, "closed");
  EXPECT_EQ(cm.closed, std::vector<uint32_t>{5u});
  disp_->open_session(s_);  // for TearDown
}

TEST_F(UcmaDispatch, CommandBytesAndErrors) {
  FakeCm& cm = cm_;
  disp_->set_cm(&cm);
  auto req = request<burst_ctl_cm_command_req>(BURST_CTL_OP_CM_COMMAND);
  req.cmd = 0;  // CREATE_ID
  req.in_len = 24;
  req.out_len = 4;
  req.in[3] = 0x5a;
  std::vector<uint8_t> out;
  ASSERT_EQ(call(req, &out), 0);
  EXPECT_EQ(cm.last_channel, 5u);
  EXPECT_EQ(cm.last_in.size(), 24u);
  EXPECT_EQ(cm.last_in[3], 0x5a);
  const auto* r = reinterpret_cast<const burst_ctl_cm_command_resp*>(out.data());
  ASSERT_EQ(out.size(), sizeof(burst_ctl_cm_command_resp));
  EXPECT_EQ(r->out_len, 4u);
  EXPECT_EQ(r->out[0], 0xab);
  // out_len is clamped to what a response can carry; in_len beyond in[] is refused.
  req.out_len = 60000;
  ASSERT_EQ(call(req, &out), 0);
  EXPECT_EQ(cm.last_out_len, static_cast<size_t>(BURST_CTL_CM_MAX_OUT));
  req.in_len = BURST_CTL_CM_MAX_IN + 1;
  EXPECT_EQ(call(req), EINVAL);
  // A negative errno from the CM is the response's status, the header alone.
  req.in_len = 8;
  req.cmd = 12;
  EXPECT_EQ(call(req, &out), EAGAIN);
  EXPECT_EQ(out.size(), sizeof(burst_ctl_hdr));
}

// CM_COMMAND_EX (a push channel's): the acknowledgement reaches the CM, and the
// response is a list: only the used entries (pushed events to drop) are sent.
TEST_F(UcmaDispatch, CommandExCarriesTheAcknowledgementAndAShortList) {
  FakeCm& cm = cm_;
  disp_->set_cm(&cm);
  auto req = request<burst_ctl_cm_command_ex_req>(BURST_CTL_OP_CM_COMMAND_EX);
  req.cmd = 1;  // DESTROY_ID: the fake lists three sequence numbers
  req.in_len = 16;
  req.out_len = 4;
  req.consumed = 77;
  std::vector<uint8_t> out;
  ASSERT_EQ(call(req, &out), 0);
  EXPECT_EQ(cm.last_consumed, 77u);
  ASSERT_EQ(out.size(), offsetof(burst_ctl_cm_command_ex_resp, entries) + 3 * sizeof(uint64_t));
  const auto* r = reinterpret_cast<const burst_ctl_cm_command_ex_resp*>(out.data());
  EXPECT_EQ(r->out_len, 4u);
  ASSERT_EQ(r->count, 3u);
  EXPECT_EQ(r->entries[2], 30u);
  req.cmd = 0;  // CREATE_ID: nothing to drop
  ASSERT_EQ(call(req, &out), 0);
  EXPECT_EQ(out.size(), offsetof(burst_ctl_cm_command_ex_resp, entries));
  // The push open: a descriptor and flag 1.
  auto open = request<burst_ctl_cm_open_channel_req>(BURST_CTL_OP_CM_OPEN_CHANNEL);
  open.flags = BURST_CTL_CM_OPEN_PUSH;
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  EXPECT_EQ(call(open, nullptr, sv[1]), 0);
  close(sv[0]);
}

TEST_F(UcmaDispatch, CountersIncludeTheConnectionManagers) {
  FakeCm& cm = cm_;
  disp_->set_cm(&cm);
  auto req = request<burst_ctl_query_counters_req>(BURST_CTL_OP_QUERY_COUNTERS);
  req.worker = BURST_CTL_ALL_WORKERS;
  std::vector<uint8_t> out;
  ASSERT_EQ(call(req, &out), 0);
  const auto* r = reinterpret_cast<const burst_ctl_counters_resp*>(out.data());
  bool found = false;
  for (uint32_t i = 0; i < r->count; ++i) {
    found |= std::strcmp(r->entries[i].name, "cma.channels") == 0 && r->entries[i].value == 7;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace burst::burstd
