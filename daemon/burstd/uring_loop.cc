// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The control thread's loop on io_uring (liburing). One ring, waited on with
// io_uring_submit_and_wait_timeout: every request prepared during a pass (the
// responses as sendmsg, the receives re-armed, watches re-armed) goes to the
// kernel in the one io_uring_enter that also waits for the next completions,
// so N requests that arrived together cost one system call for their replies.
//   - the listening socket: one multishot accept (re-armed when it ends);
//   - each client: one multishot recvmsg (Linux 6.0) into the provided-buffer
//     ring every client shares (uring_buffers.h): one request per client keeps
//     its messages in order, each completion carries one message with its
//     SCM_RIGHTS descriptors (installed by the kernel as it receives: every
//     completion is looked at, and the descriptors of a message nobody serves
//     are closed); the buffer goes back to the ring once the message is served.
//     When the ring runs dry the receive ends (ENOBUFS) and is re-armed after
//     the pass has given its buffers back;
//   - responses: sendmsg with MSG_DONTWAIT, so each is tried when submitted and a
//     client that does not read its responses is dropped as with epoll (no
//     queueing); a response that carries descriptors is submitted at once, while
//     the descriptors are still the ones the dispatcher named;
//   - the signalfd: a read; watched fds (watch_readable): a one-shot poll re-armed
//     after fn (level semantics); timers (client check, the deadline): the wait's
//     timeout.
// A client's socket is closed only when none of its requests is in flight, so
// a descriptor number is never reused under a pending request.
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "daemon/burstd/log.h"
#include "daemon/burstd/loop_core.h"
#include "daemon/burstd/notify.h"
#include "daemon/burstd/uring_buffers.h"

namespace burst::burstd {
namespace {

constexpr unsigned kRingEntries = 256;
constexpr unsigned kCqeBatch = 64;
constexpr uint64_t kDrainTimeoutNs = 2'000'000'000;

class UringLoop final : public LoopCore {
 public:
  UringLoop(const Config& config, ControlSocket& socket, Dispatcher& dispatcher)
      : LoopCore(config, socket, dispatcher) {}
  ~UringLoop() override;
  bool init(std::string* why);  // false: why io_uring cannot serve here
  const char* name() const override { return "io_uring"; }
  bool run(std::string* error) override;

 private:
  struct SendSlot {
    std::vector<uint8_t> buf;
    msghdr mh;
    iovec iov;
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
    bool busy = false;
  };
  struct Conn {
    int fd = -1;
    uint32_t id = 0;
    Session session;
    std::vector<std::unique_ptr<SendSlot>> slots;
    unsigned inflight = 0;  // requests in the ring naming fd (and these buffers)
    bool recv_armed = false;
    bool closing = false;
  };

  void arm_watch(int fd, uint32_t gen) override;
  void disarm_watch(int fd, uint32_t gen) override;
  io_uring_sqe* sqe(uint64_t tag);
  void arm_accept();
  void arm_signal();
  void arm_recv(Conn& c);
  void cancel_recv(Conn& c);
  void reap();
  void complete(uint64_t tag, int res, uint32_t flags);
  void on_accept(int res, uint32_t flags);
  void on_signal_read(int res);
  void on_watch(uint64_t bits, int res);
  void on_recv(uint32_t id, int res, uint32_t flags);
  void on_send(Conn& c, uint32_t slot, int res);
  bool respond(Conn& c, const uint8_t* msg, size_t n, msghdr& mh);
  SendSlot& free_slot(Conn& c, uint32_t* index);
  void drop(Conn& c, const char* why);
  void release_if_done(Conn& c);
  bool wait_pass(std::string* error);
  void drain();

  io_uring ring_{};
  bool ring_ok_ = false;
  bool finished_ = false;  // run() returned
  UringBuffers bufs_;
  std::vector<uint32_t> rearm_;  // clients whose receive ended (ENOBUFS): armed after the pass
  int signal_fd_ = -1;
  signalfd_siginfo sig_{};
  bool accept_armed_ = false;
  bool accept_retry_ = false;  // the accept ended with an error: re-armed on the next timer
  bool multishot_accept_ = true;  // false on kernels before 5.19 (EINVAL): one accept a time
  std::map<uint32_t, std::unique_ptr<Conn>> conns_;  // by client id
  size_t live_ = 0;                                  // conns_ not closing
  uint64_t inflight_ = 0;                            // every request in the ring
  std::vector<int> out_fds_;
  // Completions due without waiting and not reaped yet: sendmsg (MSG_DONTWAIT)
  // and cancellations complete when submitted. The wait asks for one more, so
  // that their completions alone do not end it.
  unsigned due_ = 0;
  uint64_t served_ = 0;  // statistics, logged at the end
  uint64_t enters_ = 0;
};

// Multishot recvmsg (and the provided-buffer ring it receives into) came with
// Linux 6.0; io_uring_queue_init alone does not tell.
bool kernel_has_multishot_recvmsg(std::string* why) {
  utsname u{};
  int major = 0, minor = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return true;
  if (major >= 6) return true;
  *why = std::string("multishot recvmsg needs Linux 6.0, this is ") + u.release;
  return false;
}

bool UringLoop::init(std::string* why) {
  if (!kernel_has_multishot_recvmsg(why)) return false;
  io_uring_params p{};
  // One thread submits and reaps: completions run when it waits.
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int rc = io_uring_queue_init_params(kRingEntries, &ring_, &p);
  if (rc == -EINVAL) {  // Linux 6.0
    p = io_uring_params{};
    rc = io_uring_queue_init_params(kRingEntries, &ring_, &p);
  }
  if (rc < 0) {
    *why = uring_errno_text("io_uring_queue_init", -rc);
    return false;
  }
  ring_ok_ = true;
  rc = bufs_.init(&ring_);
  if (rc != 0) {
    *why = uring_errno_text("io_uring_register_buf_ring", rc);
    return false;
  }
  return true;
}

UringLoop::~UringLoop() {
  if (ring_ok_) drain();
  for (auto& [id, c] : conns_) {
    if (!c->closing) dispatcher_.close_session(c->session, "disconnected: burstd is stopping");
    if (c->inflight != 0) {
      (void)c.release();  // the kernel may still name its buffers: never freed
      continue;
    }
    close(c->fd);
  }
  if (inflight_ > 0) bufs_.abandon();  // the kernel may still name them: never unmapped
  if (ring_ok_) io_uring_queue_exit(&ring_);
  if (signal_fd_ >= 0) close(signal_fd_);
}

io_uring_sqe* UringLoop::sqe(uint64_t tag) {
  io_uring_sqe* s = io_uring_get_sqe(&ring_);
  if (s == nullptr) {  // the ring is full: hand it to the kernel now
    ++enters_;
    io_uring_submit(&ring_);
    s = io_uring_get_sqe(&ring_);
  }
  if (s == nullptr) return nullptr;
  ++inflight_;
  io_uring_sqe_set_data64(s, tag);
  return s;
}

void UringLoop::arm_accept() {
  io_uring_sqe* s = sqe(loop_tag(LoopTag::kAccept, 0));
  if (s == nullptr) return;
  if (multishot_accept_) {
    io_uring_prep_multishot_accept(s, socket_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
  } else {
    io_uring_prep_accept(s, socket_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
  }
  io_uring_sqe_set_data64(s, loop_tag(LoopTag::kAccept, 0));
  accept_armed_ = true;
}

void UringLoop::arm_signal() {
  io_uring_sqe* s = sqe(loop_tag(LoopTag::kSignal, 0));
  if (s == nullptr) return;
  io_uring_prep_read(s, signal_fd_, &sig_, sizeof(sig_), 0);
  io_uring_sqe_set_data64(s, loop_tag(LoopTag::kSignal, 0));
}

void UringLoop::arm_recv(Conn& c) {
  const uint64_t tag = loop_tag(LoopTag::kRecv, c.id);
  io_uring_sqe* s = sqe(tag);
  if (s == nullptr) {  // cannot happen (sqe() submits a full ring): try again next pass
    rearm_.push_back(c.id);
    return;
  }
  io_uring_prep_recvmsg_multishot(s, c.fd, bufs_.templ(), MSG_CMSG_CLOEXEC);
  s->flags |= IOSQE_BUFFER_SELECT;
  s->buf_group = UringBuffers::kGroup;
  io_uring_sqe_set_data64(s, tag);
  ++c.inflight;
  c.recv_armed = true;
}

// Cancels c's receive if it is in the ring.
void UringLoop::cancel_recv(Conn& c) {
  if (!c.recv_armed) return;
  io_uring_sqe* s = sqe(loop_tag(LoopTag::kCancel, 0));
  if (s == nullptr) return;
  io_uring_prep_cancel_fd(s, c.fd, IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(s, loop_tag(LoopTag::kCancel, 0));
  ++due_;
}

void UringLoop::arm_watch(int fd, uint32_t gen) {
  const uint64_t tag = loop_tag(LoopTag::kWatch, (uint64_t{gen} << 32) | static_cast<uint32_t>(fd));
  io_uring_sqe* s = sqe(tag);
  if (s == nullptr) return;
  io_uring_prep_poll_add(s, fd, POLLIN);
  io_uring_sqe_set_data64(s, tag);
}

void UringLoop::disarm_watch(int fd, uint32_t gen) {
  const uint64_t tag = loop_tag(LoopTag::kWatch, (uint64_t{gen} << 32) | static_cast<uint32_t>(fd));
  io_uring_sqe* s = sqe(loop_tag(LoopTag::kCancel, 0));
  if (s == nullptr) return;
  // ENOENT when its poll already completed (fn is running, or its CQE waits):
  // that completion finds no watch of this generation and is ignored.
  io_uring_prep_poll_remove(s, tag);
  io_uring_sqe_set_data64(s, loop_tag(LoopTag::kCancel, 0));
  ++due_;
}

bool UringLoop::run(std::string* error) {
  sigset_t set = control_signals();
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC);  // blocking: the ring polls it
  if (signal_fd_ < 0) {
    *error = std::string("cannot set up the event loop: signalfd: ") + std::strerror(errno);
    return false;
  }
  // The ring waits for connections; a blocking socket keeps the accept armed.
  const int fl = fcntl(socket_.fd(), F_GETFL);
  if (fl >= 0) fcntl(socket_.fd(), F_SETFL, fl & ~O_NONBLOCK);
  arm_accept();
  arm_signal();
  announce_ready();
  while (!stop_) {
    if (!wait_pass(error)) return false;
  }
  finished_ = true;  // no watch fn runs after run() (their owners may be gone)
  notify("STOPPING=1\nSTATUS=stopping");
  BURSTD_INFO("io_uring: %llu requests served in %llu io_uring_enter calls",
              static_cast<unsigned long long>(served_), static_cast<unsigned long long>(enters_));
  std::vector<uint32_t> ids;
  for (const auto& [id, c] : conns_) ids.push_back(id);
  for (uint32_t id : ids) {
    auto it = conns_.find(id);  // drop() may erase it
    if (it != conns_.end()) drop(*it->second, "disconnected: burstd is stopping");
  }
  return true;
}

// One pass: submit what was prepared, wait for a completion or the next
// timer, handle every completion, run the timers that are due.
bool UringLoop::wait_pass(std::string* error) {
  const uint64_t next = next_timer_ns();
  const uint64_t now = now_ns();
  const uint64_t rel = next > now ? next - now : 0;
  __kernel_timespec ts{};
  ts.tv_sec = static_cast<long long>(rel / 1'000'000'000);
  ts.tv_nsec = static_cast<long long>(rel % 1'000'000'000);
  io_uring_cqe* cqe = nullptr;
  ++enters_;
  const int rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, due_ + 1, &ts, nullptr);
  if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
    *error = std::string("io_uring_submit_and_wait_timeout: ") + std::strerror(-rc);
    return false;
  }
  reap();
  for (uint32_t id : rearm_) {
    auto it = conns_.find(id);
    if (it != conns_.end() && !it->second->closing && !it->second->recv_armed) arm_recv(*it->second);
  }
  rearm_.clear();
  run_timers(now_ns());
  if (accept_retry_ && !accept_armed_ && !stop_) {
    accept_retry_ = false;
    arm_accept();
  }
  return true;
}

void UringLoop::reap() {
  struct Done {
    uint64_t tag;
    int res;
    uint32_t flags;
  };
  io_uring_cqe* cqes[kCqeBatch];
  Done done[kCqeBatch];
  for (;;) {
    const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, kCqeBatch);
    if (n == 0) return;
    for (unsigned i = 0; i < n; ++i) done[i] = {cqes[i]->user_data, cqes[i]->res, cqes[i]->flags};
    io_uring_cq_advance(&ring_, n);  // handlers may submit (and complete) more
    for (unsigned i = 0; i < n; ++i) complete(done[i].tag, done[i].res, done[i].flags);
  }
}

void UringLoop::complete(uint64_t tag, int res, uint32_t flags) {
  if (tag == LIBURING_UDATA_TIMEOUT) return;  // liburing's own wait timeout (old kernels)
  if (!(flags & IORING_CQE_F_MORE)) --inflight_;
  const LoopTag kind = loop_tag_kind(tag);
  if ((kind == LoopTag::kSend || kind == LoopTag::kCancel) && due_ > 0) --due_;
  const uint64_t bits = loop_tag_bits(tag);
  switch (loop_tag_kind(tag)) {
    case LoopTag::kAccept:
      on_accept(res, flags);
      return;
    case LoopTag::kSignal:
      on_signal_read(res);
      return;
    case LoopTag::kWatch:
      on_watch(bits, res);
      return;
    case LoopTag::kRecv:
    case LoopTag::kSend: {
      if (loop_tag_kind(tag) == LoopTag::kRecv) {
        on_recv(static_cast<uint32_t>(bits), res, flags);  // also for a client gone
        return;
      }
      auto it = conns_.find(static_cast<uint32_t>(bits));
      if (it != conns_.end()) on_send(*it->second, static_cast<uint32_t>(bits >> 32), res);
      return;
    }
    default:
      return;  // cancellations
  }
}

void UringLoop::on_accept(int res, uint32_t flags) {
  if (!(flags & IORING_CQE_F_MORE)) accept_armed_ = false;
  if (res >= 0 && stop_) {  // accepted while stopping: not served
    close(res);
    return;
  }
  if (res >= 0) {
    auto c = std::make_unique<Conn>();
    c->fd = res;
    if (admit_client(res, live_, &c->session)) {
      c->id = c->session.id;
      Conn& ref = *c;
      conns_[c->id] = std::move(c);
      ++live_;
      arm_recv(ref);
    }
  } else if (res == -EINVAL && multishot_accept_) {
    multishot_accept_ = false;  // no multishot accept before Linux 5.19
    res = -ECANCELED;           // re-armed at once, single-shot
  } else if (res != -ECANCELED) {
    BURSTD_WARN("accept on %s: %s", socket_.path().c_str(), std::strerror(-res));
  }
  if (!accept_armed_ && !stop_) {
    if (res >= 0 || res == -ECANCELED) {
      arm_accept();
    } else {
      accept_retry_ = true;  // EMFILE and the like: not in a tight loop
    }
  }
}

void UringLoop::on_signal_read(int res) {
  if (res == static_cast<int>(sizeof(sig_)) && on_signal(sig_)) stop_ = true;
  if (res < 0 && res != -EINTR && res != -ECANCELED) {
    BURSTD_WARN("reading the signalfd: %s", std::strerror(-res));
    return;
  }
  if (!stop_) arm_signal();
}

void UringLoop::on_watch(uint64_t bits, int res) {
  const int fd = static_cast<int>(static_cast<uint32_t>(bits));
  const uint32_t gen = static_cast<uint32_t>(bits >> 32);
  if (finished_) return;
  if (res < 0) {
    if (res != -ECANCELED) BURSTD_WARN("watching fd %d: %s", fd, std::strerror(-res));
    return;
  }
  // One-shot poll: re-armed while the watch lasts, so fn runs again while the
  // fd stays readable (the poll completes at once on a readable fd).
  if (run_watch(fd, gen) && !stop_) arm_watch(fd, gen);
}

// One completion of a client's multishot receive: a message in a provided
// buffer, the end of the receive (no IORING_CQE_F_MORE), or both.
void UringLoop::on_recv(uint32_t id, int res, uint32_t flags) {
  const bool more = (flags & IORING_CQE_F_MORE) != 0;
  const bool has_buf = (flags & IORING_CQE_F_BUFFER) != 0;
  const auto bid = static_cast<uint16_t>(flags >> IORING_CQE_BUFFER_SHIFT);
  const uint8_t* msg = nullptr;
  size_t len = 0;
  msghdr mh{};
  const bool ok = has_buf && bufs_.message(bid, res, &msg, &len, &mh);
  auto it = conns_.find(id);
  Conn* c = it == conns_.end() ? nullptr : it->second.get();
  if (c != nullptr && !more) {
    --c->inflight;
    c->recv_armed = false;
  }
  if (c == nullptr || c->closing || !ok || len == 0) {
    if (ok) close_received_fds(mh);  // a message nobody serves
    if (has_buf) bufs_.recycle(bid);
    if (c == nullptr) return;
    if (c->closing) {
      release_if_done(*c);
    } else if (res == -ENOBUFS && !more) {
      rearm_.push_back(id);  // the ring ran dry: again once the pass gave buffers back
    } else if (ok) {
      drop(*c, "disconnected");  // zero bytes: the client hung up
    } else {
      drop(*c, "disconnected (receive error)");
    }
    return;
  }
  const bool serving = respond(*c, msg, len, mh);
  bufs_.recycle(bid);
  if (serving && !more) rearm_.push_back(id);
}

UringLoop::SendSlot& UringLoop::free_slot(Conn& c, uint32_t* index) {
  for (uint32_t i = 0; i < c.slots.size(); ++i) {
    if (!c.slots[i]->busy) {
      *index = i;
      return *c.slots[i];
    }
  }
  *index = static_cast<uint32_t>(c.slots.size());
  c.slots.push_back(std::make_unique<SendSlot>());
  return *c.slots.back();
}

// Serves one message and queues its response: false when c was dropped (and
// may be gone).
bool UringLoop::respond(Conn& c, const uint8_t* msg, size_t n, msghdr& mh) {
  uint32_t index = 0;
  SendSlot& slot = free_slot(c, &index);
  bool close_after = false;
  serve_message(c.session, msg, n, mh, &slot.buf, &out_fds_, &close_after);
  ++served_;
  const uint64_t tag = loop_tag(LoopTag::kSend, (uint64_t{index} << 32) | c.id);
  io_uring_sqe* s = sqe(tag);
  if (s == nullptr) {
    drop(c, "disconnected (submission queue full)");
    return false;
  }
  prepare_send(&slot.mh, &slot.iov, slot.buf, out_fds_, slot.cbuf);
  io_uring_prep_sendmsg(s, c.fd, &slot.mh, MSG_NOSIGNAL | MSG_DONTWAIT);
  io_uring_sqe_set_data64(s, tag);
  slot.busy = true;
  ++c.inflight;
  ++due_;
  // The descriptors are burstd's: a later request of this pass may close one.
  if (!out_fds_.empty()) {
    ++enters_;
    io_uring_submit(&ring_);
  }
  if (close_after) {
    drop(c, "disconnected (protocol violation)");
    return false;
  }
  return true;
}

void UringLoop::on_send(Conn& c, uint32_t slot, int res) {
  --c.inflight;
  if (slot < c.slots.size()) c.slots[slot]->busy = false;
  if (c.closing) {
    release_if_done(c);
    return;
  }
  const size_t want = slot < c.slots.size() ? c.slots[slot]->buf.size() : 0;
  if (res < 0 || static_cast<size_t>(res) != want) {
    // A client that does not read its responses is not served further.
    drop(c, res == -EAGAIN ? "disconnected (not reading its responses)"
                           : "disconnected (send failed)");
  }
}

void UringLoop::drop(Conn& c, const char* why) {
  if (c.closing) return;
  c.closing = true;
  --live_;
  dispatcher_.close_session(c.session, why);
  cancel_recv(c);
  release_if_done(c);
}

void UringLoop::release_if_done(Conn& c) {
  if (!c.closing || c.inflight != 0) return;
  close(c.fd);
  conns_.erase(c.id);  // c is gone
}

// Stopping: every request in the ring is cancelled and its completion reaped
// (bounded), so that no buffer is freed while the kernel may still write it.
void UringLoop::drain() {
  stop_ = true;
  io_uring_sqe* s = sqe(loop_tag(LoopTag::kCancel, 0));
  if (s != nullptr) {
    io_uring_prep_cancel64(s, 0, IORING_ASYNC_CANCEL_ANY);
    io_uring_sqe_set_data64(s, loop_tag(LoopTag::kCancel, 0));
    ++due_;
  }
  const uint64_t until = now_ns() + kDrainTimeoutNs;
  while (inflight_ > 0 && now_ns() < until) {
    __kernel_timespec ts{0, 100'000'000};
    io_uring_cqe* cqe = nullptr;
    io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
    reap();
  }
  if (inflight_ > 0) {
    BURSTD_WARN("io_uring: %llu requests still in flight at exit",
                static_cast<unsigned long long>(inflight_));
  }
}

}  // namespace

std::string uring_errno_text(const char* call, int err) {
  std::string s = std::string(call) + ": " + std::strerror(err);
  if (err == EPERM || err == EACCES)
    s += " - a seccomp profile or kernel.io_uring_disabled forbids it";
  if (err == ENOSYS) s += " - the kernel was built without io_uring";
  return s;
}

std::unique_ptr<LoopCore> make_uring_loop(const Config& config, ControlSocket& socket,
                                          Dispatcher& dispatcher, std::string* why) {
  auto loop = std::make_unique<UringLoop>(config, socket, dispatcher);
  if (!loop->init(why)) return nullptr;
  return loop;
}

bool probe_uring(std::string* why) {
  if (!kernel_has_multishot_recvmsg(why)) return false;
  io_uring ring;
  const int rc = io_uring_queue_init(4, &ring, 0);
  if (rc < 0) {
    *why = uring_errno_text("io_uring_queue_init", -rc);
    return false;
  }
  io_uring_queue_exit(&ring);
  return true;
}

}  // namespace burst::burstd
