/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// What the control thread's two loops share (event_loop.h picks one): admitting
// a client, turning one received message into its response, signals, the
// client-check timer and the one deadline, and the readable-fd watches other
// parts register. The loops themselves (uring_loop.cc, epoll_loop.cc) only wait
// and move bytes.
//
// Threading: the control thread only.
#pragma once

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/burstd/config.h"
#include "daemon/burstd/control_socket.h"
#include "daemon/burstd/dispatch.h"

namespace burst::burstd {

// SIGTERM, SIGINT (stop) and SIGHUP (logged), read through a signalfd.
sigset_t control_signals();

// The wait's user data: a kind in the top byte, then the kind's own bits.
enum class LoopTag : uint8_t { kNone, kAccept, kRecv, kSend, kSignal, kWatch, kCancel };
inline uint64_t loop_tag(LoopTag kind, uint64_t bits) {
  return (static_cast<uint64_t>(kind) << 56) | (bits & ((1ull << 56) - 1));
}
inline LoopTag loop_tag_kind(uint64_t tag) { return static_cast<LoopTag>(tag >> 56); }
inline uint64_t loop_tag_bits(uint64_t tag) { return tag & ((1ull << 56) - 1); }

class LoopCore {
 public:
  static constexpr size_t kMaxFdsPerMessage = 2;  // sent with one response
  static constexpr size_t kMaxFdsReceived = 4;    // more than any op takes: refused
  static constexpr size_t kRxBytes = BURST_CTL_MAX_MSG + 1;  // larger: EMSGSIZE

  LoopCore(const Config& config, ControlSocket& socket, Dispatcher& dispatcher);
  virtual ~LoopCore() = default;
  LoopCore(const LoopCore&) = delete;
  LoopCore& operator=(const LoopCore&) = delete;

  virtual const char* name() const = 0;
  virtual bool run(std::string* error) = 0;
  void stop() { stop_ = true; }

  // The EventLoop API (event_loop.h).
  void watch_readable(int fd, std::function<void()> fn);
  void unwatch(int fd);
  void set_deadline(uint64_t deadline_ns, std::function<void()> fn);

 protected:
  // The backend starts / stops waiting for `fd` to be readable; `gen` tells
  // this watch from an older one of the same fd.
  virtual void arm_watch(int fd, uint32_t gen) = 0;
  virtual void disarm_watch(int fd, uint32_t gen) = 0;

  // A connection the listening socket accepted: false (fd closed, logged) if
  // it is refused; otherwise *s has its credentials and the dispatcher knows it.
  bool admit_client(int fd, size_t connected, Session* s);
  // One message of n > 0 bytes received with `mh` (its descriptors taken over):
  // the response in *out, the descriptors to send with it in *out_fds (owned
  // by burstd), *close_after for a peer that does not speak the protocol.
  void serve_message(Session& s, const uint8_t* msg, size_t n, msghdr& mh,
                     std::vector<uint8_t>* out, std::vector<int>* out_fds, bool* close_after);
  // Closes the descriptors a message carried (a message nobody will serve).
  static void close_received_fds(msghdr& mh);
  // A receive header over buf[kRxBytes] with room for kMaxFdsReceived descriptors.
  static void prepare_recv(msghdr* mh, iovec* iov, uint8_t* buf, char* cbuf, size_t cbuf_len);
  // A send header over out with fds attached (cbuf: CMSG_SPACE of kMaxFdsPerMessage ints).
  static void prepare_send(msghdr* mh, iovec* iov, std::vector<uint8_t>& out,
                           const std::vector<int>& fds, char* cbuf);

  // Returns true when the signal stops burstd.
  bool on_signal(const signalfd_siginfo& si);
  // The next timer (client check or deadline), CLOCK_MONOTONIC ns.
  uint64_t next_timer_ns() const;
  // Runs the timers that are due at now_ns.
  void run_timers(uint64_t now_ns);
  // Runs the watch (fd, gen) if it still exists: true if it still does after fn.
  bool run_watch(int fd, uint32_t gen);
  void announce_ready();

  static uint64_t now_ns();

  const Config& config_;
  ControlSocket& socket_;
  Dispatcher& dispatcher_;
  bool stop_ = false;
  uint32_t next_client_ = 1;

 private:
  struct Watch {
    uint32_t gen;
    std::function<void()> fn;
  };
  std::map<int, std::shared_ptr<Watch>> watches_;  // by fd
  uint32_t next_gen_ = 1;
  uint64_t next_check_ns_ = 0;
  uint64_t deadline_ns_ = UINT64_MAX;
  std::function<void()> deadline_fn_;
};

// The two loops (epoll_loop.cc, uring_loop.cc). make_uring_loop returns nullptr
// and why when io_uring cannot serve here.
std::unique_ptr<LoopCore> make_epoll_loop(const Config& config, ControlSocket& socket,
                                          Dispatcher& dispatcher);
std::unique_ptr<LoopCore> make_uring_loop(const Config& config, ControlSocket& socket,
                                          Dispatcher& dispatcher, std::string* why);
// Whether a ring can be set up here (false: why).
bool probe_uring(std::string* why);
// "CALL: strerror(err)" with a hint for EPERM / ENOSYS.
std::string uring_errno_text(const char* call, int err);

}  // namespace burst::burstd
