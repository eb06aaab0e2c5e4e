// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libburst-shim.so (provider/shim) without libibverbs: this test links the
// shim, so its write() and close() interpose on libc's exactly as under
// LD_PRELOAD, and issues the write() libibverbs 44 issues for
// ibv_create_comp_channel() on a burst uverbs node: a character device 1:7
// made with mknod (root only: the node tests skip otherwise) in a temporary
// directory (or under /dev when the temporary directory is mounted nodev).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "abi/burst_device.h"
#include "abi/burst_shim.h"

namespace {

// The request as libibverbs lays it out (struct ibv_create_comp_channel).
struct Cmd {
  ib_uverbs_cmd_hdr hdr;
  ib_uverbs_create_comp_channel core;
};
static_assert(sizeof(Cmd) == 16);

Cmd create_channel_cmd(void* resp, uint16_t out_words = 1) {
  Cmd c{};
  c.hdr.command = IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL;
  c.hdr.in_words = sizeof(Cmd) / 4;
  c.hdr.out_words = out_words;
  c.core.response = reinterpret_cast<uintptr_t>(resp);
  return c;
}

bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

int open_fd_count() {
  int n = 0;
  for (int fd = 0; fd < 4096; ++fd) n += fd_open(fd) ? 1 : 0;
  return n;
}

// A burst uverbs node: a fresh 1:7 character device (not /dev/full's inode).
class ShimNode : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TMPDIR");
    std::string templ =
        std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/burst-shim-test.XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) GTEST_SKIP() << "mkdtemp: " << strerror(errno);
    dir_ = templ;
    const dev_t dev = makedev(BURST_UVERBS_CDEV_MAJOR, BURST_UVERBS_CDEV_MINOR);
    for (const std::string& path :
         {dir_ + "/uverbs0", "/dev/burst-shim-test." + std::to_string(getpid())}) {
      if (mknod(path.c_str(), S_IFCHR | 0600, dev) != 0) {
        if (errno == EPERM) GTEST_SKIP() << "mknod needs CAP_MKNOD (run as root)";
        continue;
      }
      node_ = path;
      fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd_ >= 0) return;
      unlink(path.c_str());  // EACCES: a nodev mount; try /dev
      node_.clear();
    }
    GTEST_SKIP() << "cannot create and open a 1:7 node (nodev mounts?)";
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    if (!node_.empty()) unlink(node_.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
  }

  // ibv_create_comp_channel's write; the channel fd, or -1 with errno.
  int create_channel() {
    ib_uverbs_create_comp_channel_resp resp;
    memset(&resp, 0xff, sizeof(resp));
    const Cmd c = create_channel_cmd(&resp);
    if (write(fd_, &c, sizeof(c)) != static_cast<ssize_t>(sizeof(c))) return -1;
    return static_cast<int>(resp.fd);
  }

  std::string dir_;
  std::string node_;
  int fd_ = -1;
};

TEST_F(ShimNode, CreateCompChannelAnswersLikeTheKernel) {
  ib_uverbs_create_comp_channel_resp resp;
  memset(&resp, 0xff, sizeof(resp));
  const Cmd c = create_channel_cmd(&resp);
  errno = 1234;
  ASSERT_EQ(write(fd_, &c, sizeof(c)), static_cast<ssize_t>(sizeof(c)));
  EXPECT_EQ(errno, 1234);  // untouched on success
  const int ch = static_cast<int>(resp.fd);
  ASSERT_GE(ch, 0);

  struct stat st;
  ASSERT_EQ(fstat(ch, &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  int type = 0;
  socklen_t len = sizeof(type);
  ASSERT_EQ(getsockopt(ch, SOL_SOCKET, SO_TYPE, &type, &len), 0);
  EXPECT_EQ(type, SOCK_DGRAM);
  EXPECT_TRUE(fcntl(ch, F_GETFD) & FD_CLOEXEC);  // as the kernel's channel fd

  const int peer = burst_shim_channel_peer(ch);
  ASSERT_GE(peer, 0);
  EXPECT_NE(peer, ch);
  EXPECT_NE(peer, fd_);
  EXPECT_TRUE(fcntl(peer, F_GETFD) & FD_CLOEXEC);
  EXPECT_EQ(burst_shim_channel_peer(ch), peer);  // stable
  EXPECT_EQ(close(ch), 0);
  EXPECT_FALSE(fd_open(peer));
}

TEST_F(ShimNode, EventRecordsArriveOnePerRead) {
  const int ch = create_channel();
  ASSERT_GE(ch, 0) << strerror(errno);
  const int peer = burst_shim_channel_peer(ch);
  ASSERT_GE(peer, 0);

  const uint64_t handles[] = {0x1122334455667788ull, 0x00007f0012345678ull};
  for (uint64_t h : handles) {
    unsigned char rec[BURST_SHIM_CQ_EVENT_SIZE];
    burst_shim_encode_cq_event(rec, h);
    ASSERT_EQ(write(peer, rec, sizeof(rec)), static_cast<ssize_t>(sizeof(rec)));
  }
  for (uint64_t h : handles) {
    // What ibv_get_cq_event does: read(fd, &ev, sizeof ev) == sizeof ev.
    ib_uverbs_comp_event_desc ev{};
    ASSERT_EQ(read(ch, &ev, sizeof(ev)), static_cast<ssize_t>(sizeof(ev)));
    EXPECT_EQ(ev.cq_handle, h);
  }
  // A larger buffer still gets one record per read, as from the kernel.
  unsigned char rec[BURST_SHIM_CQ_EVENT_SIZE];
  burst_shim_encode_cq_event(rec, 7);
  ASSERT_EQ(write(peer, rec, sizeof(rec)), 8);
  ASSERT_EQ(write(peer, rec, sizeof(rec)), 8);
  unsigned char big[64];
  EXPECT_EQ(read(ch, big, sizeof(big)), 8);
  EXPECT_EQ(read(ch, big, sizeof(big)), 8);
  // Empty and non-blocking (as applications set it before poll()): EAGAIN.
  ASSERT_EQ(fcntl(ch, F_SETFL, fcntl(ch, F_GETFL) | O_NONBLOCK), 0);
  EXPECT_EQ(read(ch, big, sizeof(big)), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(close(ch), 0);
  EXPECT_FALSE(fd_open(peer));
  // burstd's copy of the peer would see the channel gone.
}

TEST_F(ShimNode, ResponseTailIsZeroedAndNullResponseIsEfault) {
  uint32_t resp[3];
  memset(resp, 0xff, sizeof(resp));
  Cmd c = create_channel_cmd(resp, 3);
  ASSERT_EQ(write(fd_, &c, sizeof(c)), 16);
  EXPECT_GE(static_cast<int>(resp[0]), 0);
  EXPECT_EQ(resp[1], 0u);
  EXPECT_EQ(resp[2], 0u);
  EXPECT_EQ(close(static_cast<int>(resp[0])), 0);

  c = create_channel_cmd(nullptr);
  EXPECT_EQ(write(fd_, &c, sizeof(c)), -1);
  EXPECT_EQ(errno, EFAULT);
}

TEST_F(ShimNode, EveryOtherCommandGetsDevFullsAnswer) {
  uint32_t resp = 0xffffffff;
  Cmd c = create_channel_cmd(&resp);
  c.hdr.command = IB_USER_VERBS_CMD_CREATE_CQ;  // another command, same size
  EXPECT_EQ(write(fd_, &c, sizeof(c)), -1);
  EXPECT_EQ(errno, ENOSPC);
  c = create_channel_cmd(&resp);
  c.hdr.in_words = 5;  // malformed
  EXPECT_EQ(write(fd_, &c, sizeof(c)), -1);
  EXPECT_EQ(errno, ENOSPC);
  c = create_channel_cmd(&resp, 0);  // no room for the response
  EXPECT_EQ(write(fd_, &c, sizeof(c)), -1);
  EXPECT_EQ(errno, ENOSPC);
  unsigned char longer[24] = {};
  memcpy(longer, &c, sizeof(c));
  EXPECT_EQ(write(fd_, longer, sizeof(longer)), -1);
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(resp, 0xffffffffu);
  // The ioctl libibverbs probes once per context stays ENOTTY, so it keeps
  // using write() for every command.
  ib_uverbs_ioctl_hdr ih{};
  ih.length = sizeof(ih);
  EXPECT_EQ(ioctl(fd_, RDMA_VERBS_IOCTL, &ih), -1);
  EXPECT_EQ(errno, ENOTTY);
}

TEST(ShimPassThrough, WritesToOtherFilesAreUntouched) {
  uint32_t resp = 0xffffffff;
  const Cmd c = create_channel_cmd(&resp);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  errno = 1234;
  ASSERT_EQ(write(p[1], &c, sizeof(c)), 16);
  EXPECT_EQ(errno, 1234);
  Cmd back{};
  ASSERT_EQ(read(p[0], &back, sizeof(back)), 16);
  EXPECT_EQ(memcmp(&back, &c, sizeof(c)), 0);
  EXPECT_EQ(burst_shim_channel_peer(p[0]), -1);
  EXPECT_EQ(burst_shim_channel_peer(p[1]), -1);
  EXPECT_EQ(close(p[0]), 0);
  EXPECT_EQ(close(p[1]), 0);

  // /dev/full itself is the same character device 1:7, but not a burst node.
  const int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (full >= 0) {
    EXPECT_EQ(write(full, &c, sizeof(c)), -1);
    EXPECT_EQ(errno, ENOSPC);
    close(full);
  }
  const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(null, 0);
  EXPECT_EQ(write(null, &c, sizeof(c)), 16);
  close(null);
  EXPECT_EQ(resp, 0xffffffffu);

  EXPECT_EQ(write(-1, &c, sizeof(c)), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(close(-1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(burst_shim_channel_peer(-1), -1);
  EXPECT_EQ(burst_shim_channel_peer(0), -1);
}

TEST_F(ShimNode, StaleEntriesNeverCloseSomeoneElsesDescriptor) {
  // The channel replaced behind the shim's back (dup2 is not intercepted).
  int ch = create_channel();
  ASSERT_GE(ch, 0);
  int peer = burst_shim_channel_peer(ch);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_EQ(dup2(p[0], ch), ch);
  EXPECT_EQ(burst_shim_channel_peer(ch), -1);  // not the shim's socket any more
  EXPECT_EQ(close(ch), 0);                     // the pipe's copy; drops the stale peer
  EXPECT_FALSE(fd_open(peer));
  close(p[0]);
  close(p[1]);

  // The application closes the peer and the number is reused: closing the
  // channel must leave the new file alone.
  ch = create_channel();
  ASSERT_GE(ch, 0);
  peer = burst_shim_channel_peer(ch);
  ASSERT_EQ(close(peer), 0);
  EXPECT_EQ(burst_shim_channel_peer(ch), -1);
  const int reuse = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(reuse, peer);  // lowest free number
  EXPECT_EQ(close(ch), 0);
  EXPECT_TRUE(fd_open(reuse));
  close(reuse);
}

TEST_F(ShimNode, ForkedChildHasItsOwnCopies) {
  const int ch = create_channel();
  ASSERT_GE(ch, 0);
  const int peer = burst_shim_channel_peer(ch);
  ASSERT_GE(peer, 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child inherits the table and both descriptors; closing its channel
    // closes its peer only. Then exec: both are close-on-exec.
    int ok = burst_shim_channel_peer(ch) == peer;
    ok &= close(ch) == 0 && !fd_open(peer);
    const int ch2 = create_channel();
    ok &= ch2 >= 0 && burst_shim_channel_peer(ch2) >= 0;
    if (!ok) _exit(1);
    const std::string script = "[ ! -e /proc/self/fd/" + std::to_string(ch2) +
                               " ] && [ ! -e /proc/self/fd/" +
                               std::to_string(burst_shim_channel_peer(ch2)) + " ]";
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  // The parent's channel is intact.
  EXPECT_EQ(burst_shim_channel_peer(ch), peer);
  unsigned char rec[BURST_SHIM_CQ_EVENT_SIZE];
  burst_shim_encode_cq_event(rec, 42);
  ASSERT_EQ(write(peer, rec, sizeof(rec)), 8);
  ib_uverbs_comp_event_desc ev{};
  ASSERT_EQ(read(ch, &ev, sizeof(ev)), 8);
  EXPECT_EQ(ev.cq_handle, 42u);
  EXPECT_EQ(close(ch), 0);
  EXPECT_FALSE(fd_open(peer));
}

TEST_F(ShimNode, ManyChannelsFromManyThreadsLeakNothing) {
  const int before = open_fd_count();
  std::vector<int> chans;
  for (int i = 0; i < 100; ++i) {
    const int ch = create_channel();
    ASSERT_GE(ch, 0) << strerror(errno);
    chans.push_back(ch);
  }
  for (int ch : chans) EXPECT_GE(burst_shim_channel_peer(ch), 0);
  for (int ch : chans) EXPECT_EQ(close(ch), 0);
  EXPECT_EQ(open_fd_count(), before);

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 300; ++i) {
        const int ch = create_channel();
        const int peer = ch >= 0 ? burst_shim_channel_peer(ch) : -1;
        unsigned char rec[BURST_SHIM_CQ_EVENT_SIZE];
        burst_shim_encode_cq_event(rec, static_cast<uint64_t>(ch));
        ib_uverbs_comp_event_desc ev{};
        if (peer < 0 || write(peer, rec, sizeof(rec)) != 8 || read(ch, &ev, sizeof(ev)) != 8 ||
            ev.cq_handle != static_cast<uint64_t>(ch) || close(ch) != 0) {
          failures.fetch_add(1);
        }
        // Unrelated files opened and closed in between.
        const int other = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (other < 0 || close(other) != 0) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(open_fd_count(), before);
}

}  // namespace
