// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libburst-shim.so: the libc calls besides close() that close or duplicate a
// descriptor, interposed so that the rdma_cm channel table (shim_rdma_cm.cc:
// which slot each descriptor number names) stays exact without a system call
// per write(): dup, dup2, dup3, fcntl / fcntl64 (F_DUPFD, F_DUPFD_CLOEXEC),
// close_range, closefrom. Each calls the real function first and, only while
// the process has rdma_cm channels (one relaxed load otherwise), tells the
// table what happened. A duplicate of a channel is the same channel, as with
// the kernel's file: commands on either number go to it, and its hidden
// connection is closed with its last number. Not seen (and so not exact): a
// descriptor closed by a raw system call, behind libc's back.
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

#include "provider/shim/shim_rdma_cm.h"

#define BURST_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using DupFn = int (*)(int);
using Dup2Fn = int (*)(int, int);
using Dup3Fn = int (*)(int, int, int);
using FcntlFn = int (*)(int, int, ...);
using CloseRangeFn = int (*)(unsigned, unsigned, int);
using CloseFromFn = void (*)(int);
DupFn g_dup = nullptr;
Dup2Fn g_dup2 = nullptr;
Dup3Fn g_dup3 = nullptr;
FcntlFn g_fcntl = nullptr, g_fcntl64 = nullptr;
CloseRangeFn g_close_range = nullptr;
CloseFromFn g_closefrom = nullptr;

template <class T>
T next_fn(const char* name) {
  return reinterpret_cast<T>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor)) void resolve_fd_functions() {
  g_dup = next_fn<DupFn>("dup");
  g_dup2 = next_fn<Dup2Fn>("dup2");
  g_dup3 = next_fn<Dup3Fn>("dup3");
  g_fcntl = next_fn<FcntlFn>("fcntl");
  g_fcntl64 = next_fn<FcntlFn>("fcntl64");
  g_close_range = next_fn<CloseRangeFn>("close_range");
  g_closefrom = next_fn<CloseFromFn>("closefrom");
}

void note_dup(int old_fd, int new_fd) {
  if (new_fd >= 0 && burst::shim::cm_channels_exist()) burst::shim::cm_dup(old_fd, new_fd);
}

// fcntl's third argument is an int or a pointer; passed on as a pointer-sized value, as glibc reads it.
int fcntl_common(FcntlFn fn, int fd, int cmd, void* arg) {
  const int r = fn != nullptr ? fn(fd, cmd, arg) : static_cast<int>(syscall(SYS_fcntl, fd, cmd, arg));
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) note_dup(fd, r);
  return r;
}

}  // namespace

BURST_SHIM_EXPORT int dup(int fd) {
  const int r = g_dup != nullptr ? g_dup(fd) : static_cast<int>(syscall(SYS_dup, fd));
  note_dup(fd, r);
  return r;
}

BURST_SHIM_EXPORT int dup2(int old_fd, int new_fd) {
  const int r = g_dup2 != nullptr ? g_dup2(old_fd, new_fd)
                                  : static_cast<int>(syscall(SYS_dup2, old_fd, new_fd));
  note_dup(old_fd, r);
  return r;
}

BURST_SHIM_EXPORT int dup3(int old_fd, int new_fd, int flags) {
  const int r = g_dup3 != nullptr ? g_dup3(old_fd, new_fd, flags)
                                  : static_cast<int>(syscall(SYS_dup3, old_fd, new_fd, flags));
  note_dup(old_fd, r);
  return r;
}

BURST_SHIM_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntl_common(g_fcntl, fd, cmd, arg);
}

BURST_SHIM_EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntl_common(g_fcntl64 != nullptr ? g_fcntl64 : g_fcntl, fd, cmd, arg);
}

BURST_SHIM_EXPORT int close_range(unsigned first, unsigned last, int flags) {
  const int r = g_close_range != nullptr
                    ? g_close_range(first, last, flags)
                    : static_cast<int>(syscall(SYS_close_range, first, last, flags));
  // CLOSE_RANGE_CLOEXEC only marks them; CLOSE_RANGE_UNSHARE closes in a private table.
  if (r == 0 && (flags & CLOSE_RANGE_CLOEXEC) == 0 && burst::shim::cm_channels_exist()) {
    burst::shim::cm_close_range(first, last);
  }
  return r;
}

BURST_SHIM_EXPORT void closefrom(int first) {
  if (g_closefrom != nullptr) {
    g_closefrom(first);
  } else {
    syscall(SYS_close_range, static_cast<unsigned>(first), ~0u, 0);
  }
  if (first >= 0 && burst::shim::cm_channels_exist()) {
    burst::shim::cm_close_range(static_cast<unsigned>(first), UINT_MAX);
  }
}
