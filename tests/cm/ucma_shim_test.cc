// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The rdma_cm half of libburst-shim.so (provider/shim/shim_rdma_cm.cc,
// shim_ucma.cc) against a fake burstd: the test links the shim, so its open(),
// fstat(), write() and close() interpose on libc's as under LD_PRELOAD, and a
// thread answers the control protocol on a temporary socket ($BURST_SOCKET):
// HELLO, CM_OPEN_CHANNEL (keeps the eventfd) and CM_COMMAND (records the
// command; GET_EVENT answers from a queue the test fills, keeping the eventfd
// readable exactly while it is not empty, as burstd does).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_cm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "abi/burst_ctl_proto.h"
#include "abi/burst_shim.h"

namespace {

struct Seen {
  uint32_t cmd = 0;
  std::vector<uint8_t> in;
  uint16_t out_len = 0;
  uint32_t channel = 0;
};

class FakeBurstd {
 public:
  FakeBurstd() {
    dir_ = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + "/ucma-shim-XXXXXX";
    if (mkdtemp(dir_.data()) == nullptr) abort();
    path_ = dir_ + "/burstd.sock";
    listen_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path_.c_str());
    if (bind(listen_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(listen_, 8)) {
      abort();
    }
    setenv(BURST_CTL_SOCKET_ENV, path_.c_str(), 1);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeBurstd() {
    stop_ = true;
    thread_.join();
    for (auto& c : conns_) close(c.fd);
    for (int fd : event_fds_) close(fd);
    for (int fd : push_fds_) close(fd);
    close(listen_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  // Queues one GET_EVENT answer for every channel (the eventfds become readable).
  void queue_event(uint32_t id) {
    std::lock_guard<std::mutex> g(mu_);
    events_.push_back(id);
    for (int fd : event_fds_) set_pending(fd, true);
  }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> g(mu_);
    return seen_;
  }
  int open_conns() {
    std::lock_guard<std::mutex> g(mu_);
    return static_cast<int>(conns_.size());
  }
  int answer_open = 0;  // errno for CM_OPEN_CHANNEL
  bool push = false;    // accept BURST_CTL_CM_OPEN_PUSH (else EINVAL, as a burstd without it)
  // Push mode: sends an event on every push channel's socket.
  void push_event(uint32_t id, uint32_t event = 9, uint64_t seq = 0, uint32_t flags = 0) {
    std::lock_guard<std::mutex> g(mu_);
    for (int fd : push_fds_) {
      burst_ctl_cm_event ev{};
      ev.seq = seq != 0 ? seq : ++pushed_;
      ev.flags = flags;
      ev.len = sizeof(rdma_ucm_event_resp);
      rdma_ucm_event_resp r{};
      r.id = id;
      r.event = event;
      memcpy(ev.resp, &r, sizeof(r));
      (void)!send(fd, &ev, sizeof(ev), MSG_DONTWAIT);
    }
  }
  std::vector<uint64_t> dead_on_destroy;  // listed in DESTROY_ID's response
  uint64_t last_consumed() {
    std::lock_guard<std::mutex> g(mu_);
    return consumed_;
  }
  int acks() {
    std::lock_guard<std::mutex> g(mu_);
    return acks_;
  }

 private:
  struct Conn {
    int fd;
    uint32_t channel;
  };
  static void set_pending(int fd, bool on) {
    uint64_t v = 1;
    pollfd p{fd, POLLIN, 0};
    const bool now = poll(&p, 1, 0) == 1;
    if (on && !now) (void)!write(fd, &v, sizeof(v));
    if (!on && now) (void)!read(fd, &v, sizeof(v));
  }
  void serve() {
    while (!stop_) {
      std::vector<pollfd> p{{listen_, POLLIN, 0}};
      {
        std::lock_guard<std::mutex> g(mu_);
        for (auto& c : conns_) p.push_back({c.fd, POLLIN, 0});
      }
      if (poll(p.data(), p.size(), 20) <= 0) continue;
      if (p[0].revents & POLLIN) {
        std::lock_guard<std::mutex> g(mu_);
        conns_.push_back({accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC), next_channel_++});
      }
      for (size_t i = 1; i < p.size(); ++i) {
        if (p[i].revents != 0) handle(p[i].fd);
      }
    }
  }
  void respond(int fd, const burst_ctl_hdr& req, void* resp, size_t len, int status) {
    auto* h = static_cast<burst_ctl_hdr*>(resp);
    if (status != 0) len = sizeof(burst_ctl_hdr);
    burst_ctl_init_response(h, &req, static_cast<uint32_t>(len), status);
    (void)!send(fd, resp, len, MSG_NOSIGNAL);
  }
  void handle(int fd) {
    alignas(8) uint8_t buf[8192];
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
    iovec iov{buf, sizeof(buf)};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    const ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    std::lock_guard<std::mutex> g(mu_);
    Conn* conn = nullptr;
    for (auto& c : conns_) conn = c.fd == fd ? &c : conn;
    if (n <= 0) {
      close(fd);
      for (size_t i = 0; i < conns_.size(); ++i) {
        if (conns_[i].fd == fd) conns_.erase(conns_.begin() + static_cast<long>(i));
      }
      return;
    }
    burst_ctl_hdr h;
    memcpy(&h, buf, sizeof(h));
    alignas(8) static uint8_t out[sizeof(burst_ctl_hello_resp)];
    memset(out, 0, sizeof(out));
    if (h.op == BURST_CTL_OP_HELLO) {
      reinterpret_cast<burst_ctl_hello_resp*>(out)->version = BURST_CTL_VERSION;
      respond(fd, h, out, sizeof(burst_ctl_hello_resp), 0);
    } else if (h.op == BURST_CTL_OP_CM_OPEN_CHANNEL) {
      cmsghdr* cm = CMSG_FIRSTHDR(&mh);
      int efd = -1;
      if (cm != nullptr) memcpy(&efd, CMSG_DATA(cm), sizeof(int));
      const auto* oreq = reinterpret_cast<const burst_ctl_cm_open_channel_req*>(buf);
      if (oreq->flags != 0 && !push) {
        if (efd >= 0) close(efd);
        return respond(fd, h, out, sizeof(burst_ctl_cm_open_channel_resp), EINVAL);
      }
      if (efd >= 0) (oreq->flags != 0 ? push_fds_ : event_fds_).push_back(efd);
      reinterpret_cast<burst_ctl_cm_open_channel_resp*>(out)->channel_id = conn->channel;
      respond(fd, h, out, sizeof(burst_ctl_cm_open_channel_resp), answer_open);
    } else if (h.op == BURST_CTL_OP_CM_COMMAND) {
      command(fd, h, reinterpret_cast<const burst_ctl_cm_command_req*>(buf), conn->channel, out);
    } else if (h.op == BURST_CTL_OP_CM_COMMAND_EX) {
      command_ex(fd, h, reinterpret_cast<const burst_ctl_cm_command_ex_req*>(buf), conn->channel);
    }
  }
  void command(int fd, const burst_ctl_hdr& h, const burst_ctl_cm_command_req* req,
               uint32_t channel, uint8_t* out) {
    seen_.push_back(
        {req->cmd, std::vector<uint8_t>(req->in, req->in + req->in_len), req->out_len, channel});
    auto* r = reinterpret_cast<burst_ctl_cm_command_resp*>(out);
    if (req->cmd == RDMA_USER_CM_CMD_GET_EVENT) {
      if (events_.empty()) return respond(fd, h, out, sizeof(*r), EAGAIN);
      rdma_ucm_event_resp ev{};
      ev.id = events_.front();
      ev.event = 9;  // RDMA_CM_EVENT_ESTABLISHED
      events_.erase(events_.begin());
      if (events_.empty()) {
        for (int e : event_fds_) set_pending(e, false);
      }
      memcpy(r->out, &ev, sizeof(ev));
      r->out_len = sizeof(ev);
    } else if (req->cmd == RDMA_USER_CM_CMD_CREATE_ID) {
      rdma_ucm_create_id_resp cr{77};
      memcpy(r->out, &cr, sizeof(cr));
      r->out_len = sizeof(cr);
    } else if (req->cmd == RDMA_USER_CM_CMD_LISTEN) {
      return respond(fd, h, out, sizeof(*r), EADDRINUSE);
    }
    respond(fd, h, out, sizeof(*r), 0);
  }

  void command_ex(int fd, const burst_ctl_hdr& h, const burst_ctl_cm_command_ex_req* req,
                  uint32_t channel) {
    consumed_ = req->consumed;
    if (req->cmd == BURST_CTL_CM_CMD_ACK) ++acks_;
    seen_.push_back(
        {req->cmd, std::vector<uint8_t>(req->in, req->in + req->in_len), req->out_len, channel});
    alignas(8) static burst_ctl_cm_command_ex_resp r;
    memset(&r, 0, sizeof(r));
    size_t len = offsetof(burst_ctl_cm_command_ex_resp, entries);
    if (req->cmd == RDMA_USER_CM_CMD_CREATE_ID) {
      rdma_ucm_create_id_resp cr{77};
      memcpy(r.out, &cr, sizeof(cr));
      r.out_len = sizeof(cr);
    } else if (req->cmd == BURST_CTL_CM_CMD_INIT_QP_ATTRS) {  // the state asked .. RTS
      rdma_ucm_init_qp_attr q;
      memcpy(&q, req->in, sizeof(q));
      for (uint32_t st = q.qp_state; st <= 3 && r.out_len + sizeof(ib_uverbs_qp_attr) <= req->out_len;
           ++st) {
        ib_uverbs_qp_attr a{};
        a.qp_state = st;
        a.sq_psn = 1000 * st + q.id + qp_attr_round_;
        memcpy(r.out + r.out_len, &a, sizeof(a));
        r.out_len += sizeof(a);
      }
      ++qp_attr_round_;
    } else if (req->cmd == RDMA_USER_CM_CMD_DESTROY_ID) {
      rdma_ucm_destroy_id_resp dr{5};
      memcpy(r.out, &dr, sizeof(dr));
      r.out_len = sizeof(dr);
      r.count = static_cast<uint32_t>(dead_on_destroy.size());
      for (size_t i = 0; i < dead_on_destroy.size(); ++i) r.entries[i] = dead_on_destroy[i];
      len += dead_on_destroy.size() * sizeof(uint64_t);
    }
    respond(fd, h, &r, len, 0);
  }

  std::vector<int> push_fds_;
  uint32_t qp_attr_round_ = 0;  // changes the INIT_QP_ATTRS answers each time
  uint64_t pushed_ = 0, consumed_ = 0;
  int acks_ = 0;
  std::string dir_, path_;
  int listen_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Conn> conns_;
  std::vector<int> event_fds_;
  std::vector<uint32_t> events_;
  std::vector<Seen> seen_;
  uint32_t next_channel_ = 100;
};

template <class Cmd>
ssize_t ucma_write(int fd, uint32_t cmd, const Cmd& body, uint16_t out) {
  struct {
    rdma_ucm_cmd_hdr hdr;
    Cmd body;
  } __attribute__((packed)) msg{{cmd, sizeof(Cmd), out}, body};
  return write(fd, &msg, sizeof(msg));
}

TEST(UcmaShim, OpenIsACharacterDeviceAndCloseHangsUp) {
  FakeBurstd d;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << strerror(errno);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(major(st.st_rdev), BURST_RDMA_CM_CDEV_MAJOR);
  EXPECT_EQ(minor(st.st_rdev), BURST_RDMA_CM_CDEV_MINOR);
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_EQ(d.open_conns(), 1);
  struct stat other;  // an ordinary fd is untouched
  ASSERT_EQ(fstat(0, &other), 0);
  EXPECT_FALSE(S_ISCHR(other.st_mode) && major(other.st_rdev) == BURST_RDMA_CM_CDEV_MAJOR &&
               minor(other.st_rdev) == BURST_RDMA_CM_CDEV_MINOR);
  EXPECT_EQ(close(fd), 0);
  for (int i = 0; i < 200 && d.open_conns() != 0; ++i) usleep(10000);
  EXPECT_EQ(d.open_conns(), 0);
}

TEST(UcmaShim, CommandResponseGoesToTheResponsePointer) {
  FakeBurstd d;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(fd, 0);
  rdma_ucm_create_id_resp resp{};
  rdma_ucm_create_id cmd{};
  cmd.uid = 0x1234;
  cmd.response = reinterpret_cast<uintptr_t>(&resp);
  cmd.ps = RDMA_PS_TCP;
  EXPECT_EQ(ucma_write(fd, RDMA_USER_CM_CMD_CREATE_ID, cmd, sizeof(resp)),
            static_cast<ssize_t>(sizeof(rdma_ucm_cmd_hdr) + sizeof(cmd)));
  EXPECT_EQ(resp.id, 77u);
  // An error is write()'s -1 with burstd's errno.
  rdma_ucm_listen l{1, 10};
  errno = 0;
  EXPECT_EQ(ucma_write(fd, RDMA_USER_CM_CMD_LISTEN, l, 0), -1);
  EXPECT_EQ(errno, EADDRINUSE);
  // A malformed header never reaches burstd.
  rdma_ucm_cmd_hdr bad{RDMA_USER_CM_CMD_LISTEN, 100, 0};
  EXPECT_EQ(write(fd, &bad, sizeof(bad)), -1);
  EXPECT_EQ(errno, EINVAL);
  rdma_ucm_cmd_hdr unknown{999, 0, 0};
  EXPECT_EQ(write(fd, &unknown, sizeof(unknown)), -1);
  EXPECT_EQ(errno, EINVAL);
  const auto seen = d.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].cmd, static_cast<uint32_t>(RDMA_USER_CM_CMD_CREATE_ID));
  EXPECT_EQ(seen[0].in.size(), sizeof(cmd));
  EXPECT_EQ(seen[0].out_len, sizeof(resp));
  close(fd);
}

TEST(UcmaShim, SetOptionValueAndMigrateTarget) {
  FakeBurstd d;
  const int a = open(BURST_RDMA_CM_PATH, O_RDWR);
  const int b = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  uint8_t tos = 0x28;
  rdma_ucm_set_option so{reinterpret_cast<uintptr_t>(&tos), 5, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
                         1};
  EXPECT_GT(ucma_write(a, RDMA_USER_CM_CMD_SET_OPTION, so, 0), 0);
  rdma_ucm_migrate_resp mr{};
  rdma_ucm_migrate_id m{reinterpret_cast<uintptr_t>(&mr), 5, static_cast<uint32_t>(b)};
  EXPECT_GT(ucma_write(a, RDMA_USER_CM_CMD_MIGRATE_ID, m, sizeof(mr)), 0);
  m.fd = 0;  // not a channel
  EXPECT_EQ(ucma_write(a, RDMA_USER_CM_CMD_MIGRATE_ID, m, sizeof(mr)), -1);
  EXPECT_EQ(errno, EBADF);
  const auto seen = d.seen();
  ASSERT_EQ(seen.size(), 2u);
  ASSERT_EQ(seen[0].in.size(), sizeof(so) + 1);
  EXPECT_EQ(seen[0].in[sizeof(so)], 0x28);
  rdma_ucm_migrate_id sent;
  ASSERT_EQ(seen[1].in.size(), sizeof(sent));
  memcpy(&sent, seen[1].in.data(), sizeof(sent));
  EXPECT_NE(sent.fd, static_cast<uint32_t>(b));
  EXPECT_NE(sent.fd, seen[1].channel);  // b's channel id, not a's
  EXPECT_GE(sent.fd, 100u);
  close(a);
  close(b);
}

TEST(UcmaShim, GetEventBlocksUntilTheChannelIsReadable) {
  FakeBurstd d;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  rdma_ucm_event_resp ev{};
  rdma_ucm_get_event ge{reinterpret_cast<uintptr_t>(&ev)};
  EXPECT_EQ(ucma_write(fd, RDMA_USER_CM_CMD_GET_EVENT, ge, sizeof(ev)), -1);
  EXPECT_EQ(errno, EAGAIN);
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);
  ASSERT_EQ(fcntl(fd, F_SETFL, 0), 0);  // blocking from now on
  std::atomic<bool> done{false};
  std::thread t([&] {
    EXPECT_GT(ucma_write(fd, RDMA_USER_CM_CMD_GET_EVENT, ge, sizeof(ev)), 0);
    done = true;
  });
  usleep(100000);
  EXPECT_FALSE(done);
  // Meanwhile other commands of the channel go through.
  rdma_ucm_create_id_resp resp{};
  rdma_ucm_create_id cmd{};
  cmd.response = reinterpret_cast<uintptr_t>(&resp);
  EXPECT_GT(ucma_write(fd, RDMA_USER_CM_CMD_CREATE_ID, cmd, sizeof(resp)), 0);
  d.queue_event(42);  // the eventfd becomes readable: the waiting thread takes the event
  for (int i = 0; i < 500 && !done; ++i) usleep(10000);
  if (!done) {  // the bug under test: do not hang the test on it
    t.detach();
    FAIL() << "GET_EVENT did not return once the event was queued";
  }
  t.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(ev.id, 42u);
  EXPECT_EQ(ev.event, 9u);
  EXPECT_EQ(poll(&p, 1, 0), 0);  // the queue is empty again
  close(fd);
}

TEST(UcmaShim, NoBurstdIsENODEV) {
  setenv(BURST_CTL_SOCKET_ENV, "/nonexistent/burstd.sock", 1);
  errno = 0;
  EXPECT_EQ(open(BURST_RDMA_CM_PATH, O_RDWR), -1);
  EXPECT_EQ(errno, ENODEV);
  FakeBurstd d;
  d.answer_open = EOPNOTSUPP;  // a burstd without a connection manager
  EXPECT_EQ(open(BURST_RDMA_CM_PATH, O_RDWR), -1);
  EXPECT_EQ(errno, ENODEV);
}

}  // namespace

namespace {

TEST(UcmaShim, BurstdGoneWakesABlockedGetEventWithEnodev) {
  auto d = std::make_unique<FakeBurstd>();
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(fd, 0);
  rdma_ucm_event_resp ev{};
  rdma_ucm_get_event ge{reinterpret_cast<uintptr_t>(&ev)};
  std::atomic<int> err{0};
  std::thread t([&] {
    if (ucma_write(fd, RDMA_USER_CM_CMD_GET_EVENT, ge, sizeof(ev)) < 0) err = errno;
  });
  usleep(100000);
  d.reset();  // burstd goes away: the hidden connection hangs up
  t.join();
  EXPECT_EQ(err, ENODEV);
  rdma_ucm_create_id cmd{};  // and every later command says so too
  EXPECT_EQ(ucma_write(fd, RDMA_USER_CM_CMD_CREATE_ID, cmd, 0), -1);
  EXPECT_EQ(errno, ENODEV);
  close(fd);
}

}  // namespace

namespace {

TEST(UcmaShim, AForkedChildDoesNotShareTheParentsConnection) {
  FakeBurstd d;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(fd, 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rdma_ucm_create_id cmd{};
    const bool enodev = ucma_write(fd, RDMA_USER_CM_CMD_CREATE_ID, cmd, 0) == -1 && errno == ENODEV;
    _exit(enodev ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(d.open_conns(), 1);  // the parent's connection is untouched
  rdma_ucm_create_id_resp resp{};
  rdma_ucm_create_id cmd{};
  cmd.response = reinterpret_cast<uintptr_t>(&resp);
  EXPECT_GT(ucma_write(fd, RDMA_USER_CM_CMD_CREATE_ID, cmd, sizeof(resp)), 0);
  EXPECT_EQ(resp.id, 77u);
  close(fd);
}

}  // namespace

// The channel table is kept by number through the shim's close and dup hooks
// (no fstat per write): a number reused by another file, duplicates, dup2
// over a channel, close_range, and exec's close-on-exec.
namespace {

bool is_channel(int fd) {  // a CREATE_ID that burstd answers
  rdma_ucm_create_id_resp resp{};
  rdma_ucm_create_id cmd{};
  cmd.response = reinterpret_cast<uintptr_t>(&resp);
  return ucma_write(fd, RDMA_USER_CM_CMD_CREATE_ID, cmd, sizeof(resp)) > 0 && resp.id == 77u;
}

bool wait_conns(FakeBurstd& d, int n) {
  for (int i = 0; i < 300 && d.open_conns() != n; ++i) usleep(10000);
  return d.open_conns() == n;
}

// A write to fd of 40 bytes lands in the pipe behind it (not taken for a command).
bool reaches_pipe(int fd, int pipe_r) {
  uint8_t buf[40];
  memset(buf, 0xab, sizeof(buf));
  rdma_ucm_cmd_hdr h{RDMA_USER_CM_CMD_CREATE_ID, 24, 8};  // looks like a command
  memcpy(buf, &h, sizeof(h));
  if (write(fd, buf, sizeof(buf)) != static_cast<ssize_t>(sizeof(buf))) return false;
  uint8_t got[64];
  return read(pipe_r, got, sizeof(got)) == static_cast<ssize_t>(sizeof(buf)) &&
         memcmp(got, buf, sizeof(buf)) == 0;
}

// A pipe whose write end is number fd (p[1] == fd; p[0] its read end).
bool pipe_at(int fd, int p[2]) {
  if (pipe(p) != 0) return false;
  if (p[0] == fd) {  // the read end took the number: move it away
    p[0] = fcntl(fd, F_DUPFD, fd + 1);
    close(fd);
  }
  if (p[1] != fd) {
    if (dup2(p[1], fd) != fd) return false;
    close(p[1]);
    p[1] = fd;
  }
  return p[0] >= 0;
}

TEST(UcmaShim, AClosedChannelsNumberReusedIsAnOrdinaryFile) {
  FakeBurstd d;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(is_channel(fd));
  ASSERT_EQ(close(fd), 0);
  int p[2];
  ASSERT_TRUE(pipe_at(fd, p));  // the channel's number, now a pipe
  EXPECT_TRUE(reaches_pipe(fd, p[0]));
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(wait_conns(d, 0));
  close(p[0]);
  close(fd);
}

TEST(UcmaShim, ADuplicateIsTheSameChannelUntilItsLastNumberCloses) {
  FakeBurstd d;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(fd, 0);
  const int d1 = dup(fd);
  const int d2 = fcntl(fd, F_DUPFD_CLOEXEC, 100);
  ASSERT_GE(d1, 0);
  ASSERT_GE(d2, 100);
  struct stat st;
  ASSERT_EQ(fstat(d2, &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(is_channel(d1));
  EXPECT_TRUE(is_channel(d2));
  close(fd);
  EXPECT_TRUE(is_channel(d1));  // the channel lives on through its other numbers
  EXPECT_EQ(d.open_conns(), 1);
  const auto seen = d.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].channel, seen[2].channel);  // one channel, one hidden connection
  close(d1);
  EXPECT_TRUE(is_channel(d2));
  close(d2);
  EXPECT_TRUE(wait_conns(d, 0));
}

TEST(UcmaShim, Dup2OverAChannelClosesIt) {
  FakeBurstd d;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(fd, 0);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_NE(p[0], fd);
  ASSERT_EQ(dup3(p[1], fd, O_CLOEXEC), fd);  // over the channel
  EXPECT_TRUE(reaches_pipe(fd, p[0]));
  EXPECT_TRUE(wait_conns(d, 0));
  // dup2 of a channel onto another number makes that number the channel.
  const int ch = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(ch, 0);
  ASSERT_EQ(dup2(ch, p[1]), p[1]);
  EXPECT_TRUE(is_channel(p[1]));
  close(ch);
  EXPECT_TRUE(is_channel(p[1]));
  close(p[1]);
  EXPECT_TRUE(wait_conns(d, 0));
  close(p[0]);
  close(fd);
}

TEST(UcmaShim, CloseRangeClosesChannels) {
  FakeBurstd d;
  const int fd = fcntl(open(BURST_RDMA_CM_PATH, O_RDWR), F_DUPFD, 200);  // dup at >= 200, then
  ASSERT_GE(fd, 200);
  for (int n = 3; n < 200; ++n) {  // the first number closed with close() (it is < 200)
    struct stat st;
    if (fstat(n, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == BURST_RDMA_CM_CDEV_MAJOR &&
        minor(st.st_rdev) == BURST_RDMA_CM_CDEV_MINOR) {
      close(n);
    }
  }
  ASSERT_TRUE(is_channel(fd));
  ASSERT_EQ(close_range(static_cast<unsigned>(fd), static_cast<unsigned>(fd) + 5, 0), 0);
  EXPECT_TRUE(wait_conns(d, 0));
  int p[2];
  ASSERT_TRUE(pipe_at(fd, p));
  EXPECT_TRUE(reaches_pipe(fd, p[0]));
  close(fd);
  close(p[0]);
}

TEST(UcmaShim, ExecClosesACloseOnExecChannel) {
  FakeBurstd d;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string test = "test ! -e /proc/self/fd/" + std::to_string(fd);
    execl("/bin/sh", "sh", "-c", test.c_str(), static_cast<char*>(nullptr));
    _exit(2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(d.open_conns(), 1);  // the parent's channel is untouched
  EXPECT_TRUE(is_channel(fd));
  close(fd);
  EXPECT_TRUE(wait_conns(d, 0));
}

}  // namespace

// Push channels (docs/cm.md "Relay fast path"): burstd sends each event on the
// channel's socket, GET_EVENT takes it with no round trip; the channel fd is
// readable exactly while events wait.
namespace {

ssize_t get_event(int fd, rdma_ucm_event_resp* ev) {
  rdma_ucm_get_event ge{reinterpret_cast<uintptr_t>(ev)};
  return ucma_write(fd, RDMA_USER_CM_CMD_GET_EVENT, ge, sizeof(*ev));
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

size_t commands_seen(FakeBurstd& d, uint32_t cmd) {
  size_t n = 0;
  for (const Seen& s : d.seen()) n += s.cmd == cmd;
  return n;
}

TEST(UcmaShimPush, GetEventTakesThePushedEventWithoutARoundTrip) {
  FakeBurstd d;
  d.push = true;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  rdma_ucm_event_resp ev{};
  EXPECT_EQ(get_event(fd, &ev), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_FALSE(readable(fd));
  d.push_event(42);
  d.push_event(43);
  for (int i = 0; i < 100 && !readable(fd); ++i) usleep(10000);
  EXPECT_TRUE(readable(fd));
  EXPECT_GT(get_event(fd, &ev), 0);
  EXPECT_EQ(ev.id, 42u);
  EXPECT_EQ(ev.event, 9u);
  EXPECT_TRUE(readable(fd));  // one more waits
  EXPECT_GT(get_event(fd, &ev), 0);
  EXPECT_EQ(ev.id, 43u);
  EXPECT_FALSE(readable(fd));
  EXPECT_EQ(commands_seen(d, RDMA_USER_CM_CMD_GET_EVENT), 0u);  // never a round trip
  EXPECT_TRUE(is_channel(fd));  // the next command acknowledges both
  EXPECT_EQ(d.last_consumed(), 2u);
  close(fd);
  EXPECT_TRUE(wait_conns(d, 0));
}

TEST(UcmaShimPush, ABlockedGetEventWakesWhileOtherThreadsIssueCommands) {
  FakeBurstd d;
  d.push = true;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(fd, 0);
  std::atomic<bool> done{false};
  rdma_ucm_event_resp ev{};
  std::thread t([&] {
    EXPECT_GT(get_event(fd, &ev), 0);
    done = true;
  });
  usleep(100000);
  EXPECT_FALSE(done);
  EXPECT_TRUE(is_channel(fd));  // commands go on meanwhile
  d.push_event(7);
  for (int i = 0; i < 500 && !done; ++i) usleep(10000);
  if (!done) {
    t.detach();
    FAIL() << "GET_EVENT did not return once the event was pushed";
  }
  t.join();
  EXPECT_EQ(ev.id, 7u);
  close(fd);
}

TEST(UcmaShimPush, DestroyIdDropsTheEventsBurstdLists) {
  FakeBurstd d;
  d.push = true;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  d.push_event(5, 9, 1);
  d.push_event(6, 9, 2);
  d.push_event(5, 10, 3);
  for (int i = 0; i < 100 && !readable(fd); ++i) usleep(10000);
  d.dead_on_destroy = {1, 3};  // id 5's events, not taken yet
  rdma_ucm_destroy_id_resp dr{};
  rdma_ucm_destroy_id di{reinterpret_cast<uintptr_t>(&dr), 5, 0};
  EXPECT_GT(ucma_write(fd, RDMA_USER_CM_CMD_DESTROY_ID, di, sizeof(dr)), 0);
  EXPECT_EQ(dr.events_reported, 5u);
  EXPECT_TRUE(readable(fd));  // id 6's event; the dead one at the head is gone already
  rdma_ucm_event_resp ev{};
  EXPECT_GT(get_event(fd, &ev), 0);
  EXPECT_EQ(ev.id, 6u);
  EXPECT_FALSE(readable(fd));  // the dead one behind it went with it
  EXPECT_EQ(get_event(fd, &ev), -1);
  EXPECT_EQ(errno, EAGAIN);
  close(fd);
}

TEST(UcmaShimPush, AnEventAskingForAnAcknowledgementGetsOne) {
  FakeBurstd d;
  d.push = true;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(fd, 0);
  d.push_event(9, 9, 1, BURST_CTL_CM_EVENT_ACK_ME);
  rdma_ucm_event_resp ev{};
  EXPECT_GT(get_event(fd, &ev), 0);
  EXPECT_EQ(d.acks(), 1);
  EXPECT_EQ(d.last_consumed(), 1u);
  close(fd);
}

TEST(UcmaShimPush, CloseWithEventsUnreadHangsUp) {
  FakeBurstd d;
  d.push = true;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  d.push_event(1);
  d.push_event(2);
  for (int i = 0; i < 100 && !readable(fd); ++i) usleep(10000);
  EXPECT_EQ(close(fd), 0);  // the events go with the socket; burstd sees the hang-up
  EXPECT_TRUE(wait_conns(d, 0));
}

TEST(UcmaShimPush, AForkedChildTakesNoEventOfTheParent) {
  FakeBurstd d;
  d.push = true;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  d.push_event(11);
  for (int i = 0; i < 100 && !readable(fd); ++i) usleep(10000);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rdma_ucm_event_resp ev{};
    _exit(get_event(fd, &ev) == -1 && errno == ENODEV ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  rdma_ucm_event_resp ev{};
  EXPECT_GT(get_event(fd, &ev), 0);  // still the parent's
  EXPECT_EQ(ev.id, 11u);
  close(fd);
}

TEST(UcmaShimPush, BurstdGoneIsEnodev) {
  auto d = std::make_unique<FakeBurstd>();
  d->push = true;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR);
  ASSERT_GE(fd, 0);
  std::atomic<int> err{0};
  rdma_ucm_event_resp ev{};
  std::thread t([&] {
    if (get_event(fd, &ev) < 0) err = errno;
  });
  usleep(100000);
  d.reset();
  t.join();
  EXPECT_EQ(err, ENODEV);
  close(fd);
}

}  // namespace

// INIT_QP_ATTR asks burstd for the later states too (BURST_CTL_CM_CMD_INIT_QP_ATTRS);
// they are answered without a round trip until a command that may change the id.
TEST(UcmaShimPush, InitQpAttrAnswersTheLaterStatesAheadUntilTheIdChanges) {
  FakeBurstd d;
  d.push = true;
  const int fd = open(BURST_RDMA_CM_PATH, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto attr = [&](uint32_t id, uint32_t state, ib_uverbs_qp_attr* a) {
    rdma_ucm_init_qp_attr q{reinterpret_cast<uintptr_t>(a), id, state};
    return ucma_write(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, q, sizeof(*a));
  };
  ib_uverbs_qp_attr a{};
  ASSERT_GT(attr(7, 1, &a), 0);  // INIT: relayed, with RTR and RTS
  EXPECT_EQ(a.qp_state, 1u);
  EXPECT_EQ(a.sq_psn, 1007u);
  EXPECT_EQ(commands_seen(d, BURST_CTL_CM_CMD_INIT_QP_ATTRS), 1u);
  EXPECT_EQ(commands_seen(d, RDMA_USER_CM_CMD_INIT_QP_ATTR), 0u);
  for (uint32_t st : {1u, 2u, 3u}) {  // librdmacm's rdma_accept: INIT, RTR, RTS
    a = {};
    ASSERT_GT(attr(7, st, &a), 0);
    EXPECT_EQ(a.qp_state, st);
    EXPECT_EQ(a.sq_psn, 1000 * st + 7);
  }
  EXPECT_EQ(commands_seen(d, BURST_CTL_CM_CMD_INIT_QP_ATTRS), 1u);  // no round trip
  ASSERT_GT(attr(8, 2, &a), 0);  // another id: its own answers
  EXPECT_EQ(a.sq_psn, 2009u);
  EXPECT_EQ(commands_seen(d, BURST_CTL_CM_CMD_INIT_QP_ATTRS), 2u);
  uint8_t tos = 1;  // a command on id 7: its answers are forgotten, id 8's kept
  rdma_ucm_set_option so{reinterpret_cast<uintptr_t>(&tos), 7, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
                         sizeof(tos)};
  EXPECT_GT(ucma_write(fd, RDMA_USER_CM_CMD_SET_OPTION, so, 0), 0);
  ASSERT_GT(attr(7, 3, &a), 0);
  EXPECT_EQ(a.sq_psn, 3009u);  // burstd's new answer
  EXPECT_EQ(commands_seen(d, BURST_CTL_CM_CMD_INIT_QP_ATTRS), 3u);
  ASSERT_GT(attr(8, 3, &a), 0);
  EXPECT_EQ(a.sq_psn, 3009u);  // kept from its first answer
  EXPECT_EQ(commands_seen(d, BURST_CTL_CM_CMD_INIT_QP_ATTRS), 3u);
  rdma_ucm_destroy_id_resp dr{};
  rdma_ucm_destroy_id di{reinterpret_cast<uintptr_t>(&dr), 8, 0};
  EXPECT_GT(ucma_write(fd, RDMA_USER_CM_CMD_DESTROY_ID, di, sizeof(dr)), 0);
  ASSERT_GT(attr(8, 3, &a), 0);  // a destroyed id's answers are gone
  EXPECT_EQ(commands_seen(d, BURST_CTL_CM_CMD_INIT_QP_ATTRS), 4u);
  close(fd);
  EXPECT_TRUE(wait_conns(d, 0));
}
