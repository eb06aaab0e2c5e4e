// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// no_uring_exec CMD ARGS...: runs CMD where io_uring_setup(2) fails with EPERM,
// as under a container's seccomp profile: a filter (no_new_privs, no
// privilege needed) that answers io_uring_setup with EPERM and allows the rest.
// Exit: CMD's status, 77 when the filter cannot be installed, 2 for usage.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: no_uring_exec CMD [ARGS...]\n");
    return 2;
  }
#if defined(__x86_64__)
  constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
  std::fprintf(stderr, "no_uring_exec: no seccomp architecture for this build\n");
  return 77;
#endif
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    std::fprintf(stderr, "no_uring_exec: cannot install the seccomp filter: %s\n",
                 std::strerror(errno));
    return 77;
  }
  execvp(argv[1], argv + 1);
  std::fprintf(stderr, "no_uring_exec: %s: %s\n", argv[1], std::strerror(errno));
  return 127;
}
