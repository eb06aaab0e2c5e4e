// A forked child process that owns some memory and waits: the "application" of
// the memory-space tests. The child runs `setup` (which maps or allocates what
// the test needs and returns up to kMaxValues numbers, usually addresses),
// sends the numbers to the parent and blocks until the parent closes the
// control pipe or kills it. The parent reads and writes the child's memory with
// process_vm_readv/writev (read()/write() below: independent of the code under
// test).
#pragma once

#include <signal.h>
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
    if (pipe(up) != 0 || pipe(ctl) != 0) throw std::runtime_error("pipe");
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
      if (::write(up[1], v.data(), sizeof(v)) != static_cast<ssize_t>(sizeof(v))) _exit(2);
      char c;
      while (::read(ctl[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(up[1]);
    close(ctl[0]);
    ctl_ = ctl[1];
    size_t got = 0;
    while (got < sizeof(values_)) {
      const ssize_t n =
          ::read(up[0], reinterpret_cast<char*>(values_.data()) + got, sizeof(values_) - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    close(up[0]);
    if (got != sizeof(values_)) throw std::runtime_error("child setup failed");
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (ctl_ >= 0) close(ctl_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st;
      waitpid(pid_, &st, 0);
    }
  }

  pid_t pid() const { return pid_; }
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
  Values values_{};
};

}  // namespace burst::test
