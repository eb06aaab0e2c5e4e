/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// A forked child process that owns some memory and waits: the "application" of
// the memory-space tests. The child runs `setup` (which maps or allocates what
// the test needs and returns up to kMaxValues numbers, usually addresses),
// sends the numbers to the parent together with its own /proc/self/mem and
// /proc/self/maps (opened by the child, passed with SCM_RIGHTS, as the provider
// hands them to burstd), and blocks until the parent closes the control pipe or
// kills it. The parent checks the child's memory with process_vm_readv/writev
// (read()/write() below: independent of the code under test).
#pragma once

#include <signal.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

namespace burst::test {

class ChildProcess {
 public:
  static constexpr int kMaxValues = 8;
  using Values = std::array<uint64_t, kMaxValues>;

  explicit ChildProcess(const std::function<Values()>& setup) {
    int up[2], ctl[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, up) != 0 || pipe(ctl) != 0)
      throw std::runtime_error("socketpair/pipe");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      close(up[0]);
      close(ctl[1]);
      Values v{};
      try {
        v = setup();
      } catch (...) {
        _exit(3);  // never return into the test runner
      }
      int fds[2] = {open("/proc/self/mem", O_RDWR | O_CLOEXEC),
                    open("/proc/self/maps", O_RDONLY | O_CLOEXEC)};
      if (fds[0] < 0 || fds[1] < 0) _exit(4);
      iovec iov{v.data(), sizeof(v)};
      alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(fds))];
      msghdr mh{};
      mh.msg_iov = &iov;
      mh.msg_iovlen = 1;
      mh.msg_control = cbuf;
      mh.msg_controllen = sizeof(cbuf);
      cmsghdr* cm = CMSG_FIRSTHDR(&mh);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(fds));
      std::memcpy(CMSG_DATA(cm), fds, sizeof(fds));
      if (sendmsg(up[1], &mh, 0) != static_cast<ssize_t>(sizeof(v))) _exit(2);
      close(fds[0]);
      close(fds[1]);
      char c;
      while (::read(ctl[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(up[1]);
    close(ctl[0]);
    ctl_ = ctl[1];
    iovec iov{values_.data(), sizeof(values_)};
    alignas(cmsghdr) char cbuf[CMSG_SPACE(2 * sizeof(int))];
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    const ssize_t got = recvmsg(up[0], &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
    close(up[0]);
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    if (got != static_cast<ssize_t>(sizeof(values_)) || cm == nullptr ||
        cm->cmsg_len != CMSG_LEN(2 * sizeof(int))) {
      throw std::runtime_error("child setup failed");
    }
    int fds[2];
    std::memcpy(fds, CMSG_DATA(cm), sizeof(fds));
    mem_fd_ = fds[0];
    maps_fd_ = fds[1];
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (ctl_ >= 0) close(ctl_);
    if (mem_fd_ >= 0) close(mem_fd_);
    if (maps_fd_ >= 0) close(maps_fd_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st;
      waitpid(pid_, &st, 0);
    }
  }

  pid_t pid() const { return pid_; }
  // New descriptors (owned by the caller) of the child's own /proc/self/mem
  // and /proc/self/maps, as it sent them: what MemSpaces::attach and
  // map_app_range take.
  int mem_fd() const { return fcntl(mem_fd_, F_DUPFD_CLOEXEC, 0); }
  int maps_fd() const { return fcntl(maps_fd_, F_DUPFD_CLOEXEC, 0); }
  uint64_t value(int i) const { return values_[i]; }
  uint8_t* addr(int i = 0) const { return reinterpret_cast<uint8_t*>(values_[i]); }

  // SIGKILL, then wait until the child is a zombie (not reaped, so its pid
  // cannot be reused while the test runs): every access to its memory fails.
  void kill_now() {
    ::kill(pid_, SIGKILL);
    siginfo_t si;
    waitid(P_PID, static_cast<id_t>(pid_), &si, WEXITED | WNOWAIT);
  }

  bool read(uint64_t addr, void* dst, size_t len) const {
    if (len == 0) return true;
    iovec l{dst, len}, r{reinterpret_cast<void*>(addr), len};
    return process_vm_readv(pid_, &l, 1, &r, 1, 0) == static_cast<ssize_t>(len);
  }
  bool write(uint64_t addr, const void* src, size_t len) const {
    if (len == 0) return true;
    iovec l{const_cast<void*>(src), len}, r{reinterpret_cast<void*>(addr), len};
    return process_vm_writev(pid_, &l, 1, &r, 1, 0) == static_cast<ssize_t>(len);
  }
  std::vector<uint8_t> bytes(uint64_t addr, size_t len) const {
    std::vector<uint8_t> v(len);
    if (!read(addr, v.data(), len)) throw std::runtime_error("process_vm_readv");
    return v;
  }

 private:
  pid_t pid_ = -1;
  int ctl_ = -1;
  int mem_fd_ = -1;
  int maps_fd_ = -1;
  Values values_{};
};

}  // namespace burst::test
