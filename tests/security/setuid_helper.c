// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The victim of the security test (attack_test.sh): a stand-in for a setuid-root
 * program holding a secret in memory. The test copies this binary into a
 * root-owned directory and makes it setuid root; an unprivileged process that
 * opened burst0 execs it (see mem_attack.cc).
 *
 *   setuid_helper SECRET_FILE DIR ADDR
 *
 * Maps one private anonymous page at ADDR (MAP_FIXED_NOREPLACE), reads the
 * first page of SECRET_FILE (root only: mode 0600, owned by root) into it,
 * then gives up root for everything else (effective uid = real uid; the process
 * stays non-dumpable, as after any setuid exec), creates DIR/helper.ready
 * ("pid=N"), waits up to 60 s for DIR/done, and checks that the page still
 * holds exactly the secret. It never prints the secret.
 *
 * Prints "helper: memory intact" (exit 0) or "helper: memory MODIFIED ..."
 * (exit 1); 2: setup failed (not root, no secret, ADDR taken); 3: no DIR/done
 * within 60 s (the page is still checked and reported). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

enum { kPage = 4096, kWaitMs = 60 * 1000, kStepMs = 20 };

static int setup_failed(const char* what) {
  printf("helper: %s: %s\n", what, strerror(errno));
  fflush(stdout);
  return 2;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc != 4) {
    fprintf(stderr, "usage: setuid_helper SECRET_FILE DIR ADDR\n");
    return 2;
  }
  const char* secret_file = argv[1];
  const char* dir = argv[2];
  const uintptr_t addr = (uintptr_t)strtoull(argv[3], NULL, 0);
  const uid_t ruid = getuid();
  printf("helper: pid %d, real uid %u, effective uid %u\n", (int)getpid(), (unsigned)ruid,
         (unsigned)geteuid());
  if (geteuid() != 0) {
    printf("helper: not running as root (the setuid bit was not honoured)\n");
    return 2;
  }

  unsigned char* page = mmap((void*)addr, kPage, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (page == MAP_FAILED) return setup_failed("mmap of the secret page");
  if ((uintptr_t)page != addr) {
    errno = EEXIST;
    return setup_failed("the secret page landed elsewhere (old kernel)");
  }
  /* The reference copy lives elsewhere in this process (heap). */
  unsigned char* want = malloc(kPage);
  if (want == NULL) return setup_failed("malloc");

  const int fd = open(secret_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return setup_failed("open of the secret file");
  struct stat st;
  if (fstat(fd, &st) != 0) return setup_failed("fstat of the secret file");
  if (st.st_uid != 0 || (st.st_mode & 077) != 0) {
    errno = EPERM;
    return setup_failed("the secret file is not root-only (owner root, mode 0600)");
  }
  size_t got = 0;
  while (got < kPage) {
    const ssize_t n = read(fd, page + got, kPage - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return setup_failed("read of the secret file");
    if (n == 0) break;
    got += (size_t)n;
  }
  close(fd);
  if (got != kPage) {
    errno = EINVAL;
    return setup_failed("the secret file is shorter than a page");
  }
  memcpy(want, page, kPage);

  /* Root was needed for the secret only. */
  if (setresuid((uid_t)-1, ruid, (uid_t)-1) != 0) return setup_failed("seteuid");

  char path[4096];
  snprintf(path, sizeof(path), "%s/helper.ready.tmp", dir);
  char done[4096];
  snprintf(done, sizeof(done), "%s/done", dir);
  char ready[4096];
  snprintf(ready, sizeof(ready), "%s/helper.ready", dir);
  FILE* f = fopen(path, "w");
  if (f == NULL) return setup_failed("create helper.ready");
  fprintf(f, "pid=%d\n", (int)getpid());
  if (fclose(f) != 0 || rename(path, ready) != 0) return setup_failed("publish helper.ready");
  printf("helper: secret page at %#lx, ready\n", (unsigned long)addr);

  int waited_ms = 0;
  struct stat ds;
  while (stat(done, &ds) != 0 && waited_ms < kWaitMs) {
    const struct timespec step = {0, kStepMs * 1000000L};
    nanosleep(&step, NULL);
    waited_ms += kStepMs;
  }
  const int timed_out = waited_ms >= kWaitMs;
  if (timed_out) printf("helper: no %s within %d s\n", done, kWaitMs / 1000);

  size_t differ = 0, first = 0;
  for (size_t i = 0; i < kPage; ++i) {
    if (page[i] != want[i]) {
      if (differ == 0) first = i;
      ++differ;
    }
  }
  if (differ == 0) {
    printf("helper: memory intact\n");
    return timed_out ? 3 : 0;
  }
  printf("helper: memory MODIFIED: %zu of %d bytes differ, the first at offset %zu; now reads \"",
         differ, kPage, first);
  /* Only bytes that changed: the rest is still the secret. */
  for (size_t i = first; i < first + 32 && i < kPage && page[i] != want[i]; ++i) {
    putchar(page[i] >= 0x20 && page[i] < 0x7f ? page[i] : '.');
  }
  printf("\"\n");
  return 1;
}
