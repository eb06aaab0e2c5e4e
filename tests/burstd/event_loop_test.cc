// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burstd's control loop, both implementations (event_loop = uring and epoll),
// run on the test's thread over a loopback device:
//   - watch_readable is level-triggered: fn runs again while the fd stays
//     readable, not after it was drained; unwatch and watch_readable work from
//     inside fn; watching an fd again replaces its fn;
//   - set_deadline: one deadline, replaced by the next call, UINT64_MAX clears it,
//     a new one may be set from inside the deadline's fn;
//   - K clients pipelining requests: one response per request, in order per
//     client (request ids);
//   - a response carries its descriptor (CREATE_CQ's ring memfd); descriptors
//     sent with a request that refuses them are closed, none leaked.
// The uring cases skip where io_uring cannot be set up.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "daemon/burstd/control_socket.h"
#include "daemon/burstd/device.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/event_loop.h"
#include "daemon/burstd/resources.h"
#include "daemon/ctl/ctl_client.h"

namespace burst::burstd {
namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

void PrintTo(EventLoopKind k, std::ostream* os) { *os << event_loop_name(k); }

namespace {

class EventLoopTest : public testing::TestWithParam<EventLoopKind> {
 protected:
  void SetUp() override {
    block_signals();
    config_.backend = BackendKind::kLoopback;
    config_.workers = 1;
    config_.event_loop = GetParam();
    char tmpl[] = "/tmp/burst-evloop-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::string err;
    sock_ = ControlSocket::Bind(dir_ + "/s", SocketAccess{}, &err);
    ASSERT_NE(sock_, nullptr) << err;
    device_ = Device::Open(config_, &err);
    ASSERT_NE(device_, nullptr) << err;
    res_ = std::make_unique<Resources>(*device_, 5000);
    disp_ = std::make_unique<Dispatcher>(config_, *device_, *res_);
    device_->start();
    loop_ = std::make_unique<EventLoop>(config_, *sock_, *disp_);
    if (GetParam() == EventLoopKind::kUring && std::string(loop_->kind()) != "io_uring") {
      loop_.reset();
      GTEST_SKIP() << "io_uring cannot be set up here";
    }
    // A safety net: no test runs the loop for more than 30 s.
    loop_->set_deadline(now_ns() + 30'000'000'000ull, [this] {
      ADD_FAILURE() << "the loop ran into the 30 s safety deadline";
      loop_->stop();
    });
  }
  void TearDown() override {
    loop_.reset();
    if (device_) device_->stop();
    disp_.reset();
    res_.reset();
    device_.reset();
    sock_.reset();
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  void run() {
    std::string err;
    ASSERT_TRUE(loop_->run(&err)) << err;
  }

  Config config_;
  std::string dir_;
  std::unique_ptr<ControlSocket> sock_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Resources> res_;
  std::unique_ptr<Dispatcher> disp_;
  std::unique_ptr<EventLoop> loop_;
};

TEST_P(EventLoopTest, WatchIsLevelTriggeredAndMayChangeFromInside) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  ASSERT_EQ(write(p[1], "abc", 3), 3);
  int pipe_calls = 0, efd_calls = 0;
  loop_->watch_readable(p[0], [&] { ADD_FAILURE() << "replaced fn ran"; });
  loop_->watch_readable(p[0], [&] {  // replaces the one above
    char c;
    ASSERT_EQ(read(p[0], &c, 1), 1);  // one byte a call: readable until the third
    if (++pipe_calls == 3) {
      loop_->unwatch(p[0]);  // from inside its own fn
      uint64_t one = 1;
      ASSERT_EQ(write(efd, &one, sizeof(one)), 8);
      loop_->watch_readable(efd, [&] {  // from inside a fn
        uint64_t v;
        ASSERT_EQ(read(efd, &v, sizeof(v)), 8);
        ++efd_calls;
        // Drained: no further call; stop a little later to see that.
        loop_->set_deadline(now_ns() + 20'000'000, [&] { loop_->stop(); });
      });
    }
  });
  run();
  EXPECT_EQ(pipe_calls, 3);
  EXPECT_EQ(efd_calls, 1);
  close(p[0]);
  close(p[1]);
  close(efd);
}

TEST_P(EventLoopTest, OneDeadlineReplacedByTheNext) {
  int fired = 0;
  loop_->set_deadline(now_ns() + 1'000'000, [&] { ADD_FAILURE() << "replaced deadline ran"; });
  loop_->set_deadline(UINT64_MAX, nullptr);  // cleared
  loop_->set_deadline(now_ns() + 2'000'000, [&] {
    ++fired;
    loop_->set_deadline(now_ns() + 1'000'000, [&] {  // set from inside
      ++fired;
      loop_->stop();
    });
  });
  run();
  EXPECT_EQ(fired, 2);
}

// A client: HELLO, then `depth` QUERY_STATUS / ALLOC_PD sent back to back
// before reading any response, `rounds` times; checks every response's id.
void pipelined_client(const std::string& path, int depth, int rounds, std::atomic<int>* bad) {
  std::string err;
  auto c = ctl::Client::Connect(path, &err);
  burst_ctl_hello_resp h{};
  if (!c || c->hello("evloop-test", &h) != 0) {
    ++*bad;
    return;
  }
  uint64_t id = 100;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < depth; ++i) {
      burst_ctl_alloc_pd_req q{};  // same size as a QUERY_STATUS request
      const uint16_t op = (i % 2) ? BURST_CTL_OP_ALLOC_PD : BURST_CTL_OP_QUERY_STATUS;
      burst_ctl_init_request(&q.hdr, op, sizeof(q), c->version(), id + i);
      if (send(c->fd(), &q, sizeof(q), MSG_NOSIGNAL) != sizeof(q)) ++*bad;
    }
    for (int i = 0; i < depth; ++i) {
      uint8_t buf[BURST_CTL_MAX_MSG];
      const ssize_t n = recv(c->fd(), buf, sizeof(buf), 0);
      burst_ctl_hdr rh{};
      if (n < static_cast<ssize_t>(sizeof(rh))) {
        ++*bad;
        return;
      }
      std::memcpy(&rh, buf, sizeof(rh));
      if (rh.request_id != id + i || rh.status != 0) ++*bad;
    }
    id += depth;
  }
}

TEST_P(EventLoopTest, PipelinedClientsGetTheirResponsesInOrder) {
  constexpr int kClients = 8, kDepth = 16, kRounds = 20;
  std::atomic<int> bad{0}, done{0};
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  loop_->watch_readable(efd, [&] {
    uint64_t v;
    (void)read(efd, &v, sizeof(v));
    if (done.load() == kClients) loop_->stop();
  });
  std::vector<std::thread> clients;
  for (int k = 0; k < kClients; ++k) {
    clients.emplace_back([&, k] {
      (void)k;
      pipelined_client(sock_->path(), kDepth, kRounds, &bad);
      ++done;
      uint64_t one = 1;
      (void)write(efd, &one, sizeof(one));
    });
  }
  run();
  for (auto& t : clients) t.join();
  EXPECT_EQ(bad.load(), 0);
  // Every session (and its PDs) closed by the time run() returns.
  EXPECT_EQ(disp_->sessions(), 0u);
  close(efd);
}

TEST_P(EventLoopTest, ResponsesCarryDescriptors) {
  std::atomic<int> bad{0};
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  loop_->watch_readable(efd, [&] { loop_->stop(); });
  std::thread client([&] {
    std::string err;
    auto c = ctl::Client::Connect(sock_->path(), &err);
    burst_ctl_hello_resp h{};
    if (!c || c->hello("evloop-fds", &h) != 0) {
      ++bad;
    } else {
      // CREATE_CQ answers with the CQ ring's memfd.
      burst_ctl_create_cq_req q{};
      q.cqe = 16;
      burst_ctl_init_request(&q.hdr, BURST_CTL_OP_CREATE_CQ, sizeof(q), c->version(), 7);
      if (send(c->fd(), &q, sizeof(q), MSG_NOSIGNAL) != sizeof(q)) ++bad;
      uint8_t buf[256];
      iovec iov{buf, sizeof(buf)};
      alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 2)];
      msghdr mh{};
      mh.msg_iov = &iov;
      mh.msg_iovlen = 1;
      mh.msg_control = cbuf;
      mh.msg_controllen = sizeof(cbuf);
      const ssize_t n = recvmsg(c->fd(), &mh, MSG_CMSG_CLOEXEC);
      burst_ctl_hdr rh{};
      if (n >= static_cast<ssize_t>(sizeof(rh))) std::memcpy(&rh, buf, sizeof(rh));
      cmsghdr* cm = CMSG_FIRSTHDR(&mh);
      if (rh.status != 0 || cm == nullptr || cm->cmsg_type != SCM_RIGHTS) {
        ADD_FAILURE() << "CREATE_CQ: status " << rh.status << ", no descriptor";
        ++bad;
      } else {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
        EXPECT_GT(lseek(fd, 0, SEEK_END), 0);  // the ring's region
        close(fd);
      }
    }
    uint64_t one = 1;
    (void)write(efd, &one, sizeof(one));
  });
  run();
  client.join();
  EXPECT_EQ(bad.load(), 0);
  close(efd);
}

size_t open_fds() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

// Sends QUERY_STATUS with `nfds` eventfds attached (closed here after sending).
bool send_status_with_fds(ctl::Client& c, int nfds, uint64_t id) {
  burst_ctl_query_status_req q{};
  burst_ctl_init_request(&q.hdr, BURST_CTL_OP_QUERY_STATUS, sizeof(q), c.version(), id);
  std::vector<int> fds;
  for (int i = 0; i < nfds; ++i) fds.push_back(eventfd(0, EFD_CLOEXEC));
  iovec iov{&q, sizeof(q)};
  std::vector<char> cbuf(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf.data();
  mh.msg_controllen = cbuf.size();
  cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  const bool sent = sendmsg(c.fd(), &mh, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(q));
  for (int fd : fds) close(fd);
  return sent;
}

// The next response's status if it answers request `id`, else -1.
int response_status(ctl::Client& c, uint64_t id) {
  burst_ctl_hdr rh{};
  if (recv(c.fd(), &rh, sizeof(rh), 0) != static_cast<ssize_t>(sizeof(rh))) return -1;
  return rh.request_id == id ? rh.status : -1;
}

// Descriptors that come with a request that takes none, or more than fit, are
// refused (EBADF) and closed in burstd, one request at a time and 40 pipelined;
// none is leaked.
TEST_P(EventLoopTest, RefusedDescriptorsAreClosed) {
  std::atomic<int> bad{0};
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  loop_->watch_readable(efd, [&] { loop_->stop(); });
  const size_t before = open_fds();
  std::thread client([&] {
    std::string err;
    auto c = ctl::Client::Connect(sock_->path(), &err);
    burst_ctl_hello_resp h{};
    if (!c || c->hello("evloop-fds-in", &h) != 0) {
      ++bad;
    } else {
      for (int round = 0; round < 10; ++round) {
        // QUERY_STATUS takes none; 6 is more than a message may carry.
        if (!send_status_with_fds(*c, 1, 10) || response_status(*c, 10) != EBADF) ++bad;
        if (!send_status_with_fds(*c, 6, 11) || response_status(*c, 11) != EBADF) ++bad;
      }
      for (uint64_t id = 100; id < 140; ++id) {
        if (!send_status_with_fds(*c, id % 2 ? 6 : 1, id)) ++bad;
      }
      for (uint64_t id = 100; id < 140; ++id) {
        if (response_status(*c, id) != EBADF) ++bad;
      }
    }
    c.reset();
    uint64_t one = 1;
    (void)write(efd, &one, sizeof(one));
  });
  run();
  client.join();
  EXPECT_EQ(bad.load(), 0);
  // The loop opened its signalfd in run(); everything else is closed again.
  EXPECT_EQ(open_fds(), before + 1);
  close(efd);
}

INSTANTIATE_TEST_SUITE_P(Loops, EventLoopTest,
                         testing::Values(EventLoopKind::kUring, EventLoopKind::kEpoll),
                         [](const testing::TestParamInfo<EventLoopKind>& i) {
                           return std::string(event_loop_name(i.param));
                         });

}  // namespace
}  // namespace burst::burstd
