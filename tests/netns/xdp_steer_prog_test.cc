// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The roce_steer XDP program's parser, driven with BPF_PROG_TEST_RUN: every
// case checks the verdict and that exactly the expected per-CPU counter moved.
// No netdev is involved, so no socket is in the XSKMAP: RoCEv2 frames show up
// as XDP_PASS + pass_no_socket (the redirect was attempted), which is what
// tells them apart from frames the program decided not to steer.
// One case binds a real AF_XDP socket (to the loopback device of a private
// network namespace the test process moves into) to check the redirect itself.
// Needs root (CAP_BPF + CAP_SYS_ADMIN for BPF_PROG_TEST_RUN); skips otherwise.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bpf/roce_steer.h"

extern "C" const unsigned char burst_bpf_roce_steer_data[];
extern "C" const unsigned long burst_bpf_roce_steer_size;

namespace {

using Packet = std::vector<uint8_t>;
using Counters = std::array<uint64_t, BURST_STEER_NR_COUNTERS>;

void Put16(Packet& p, size_t off, uint16_t v) {
  p[off] = static_cast<uint8_t>(v >> 8);
  p[off + 1] = static_cast<uint8_t>(v);
}

// Ethernet header (+ optional tags) with `ethertype`; returns the L3 offset.
size_t Eth(Packet& p, uint16_t ethertype, std::vector<uint16_t> tags = {}) {
  p.assign(14 + 4 * tags.size(), 0);
  for (int i = 0; i < 6; ++i) p[i] = 0x02, p[6 + i] = 0x04;
  size_t off = 12;
  for (uint16_t tpid : tags) {
    Put16(p, off, tpid);
    Put16(p, off + 2, 0x0005);  // TCI: VLAN 5
    off += 4;
  }
  Put16(p, off, ethertype);
  return off + 2;
}

// IPv4 with `ihl` words, protocol, fragment field, then a UDP header (dport),
// then `payload` bytes.
Packet Ipv4(uint8_t proto, uint16_t dport, uint8_t ihl = 5, uint16_t frag = 0,
            std::vector<uint16_t> tags = {}, size_t payload = 64) {
  Packet p;
  const size_t l3 = Eth(p, 0x0800, tags);
  const size_t l4 = l3 + ihl * 4u;
  p.resize(l4 + 8 + payload, 0);
  p[l3] = static_cast<uint8_t>(0x40 | ihl);
  Put16(p, l3 + 2, static_cast<uint16_t>(p.size() - l3));
  Put16(p, l3 + 6, frag);
  p[l3 + 8] = 64;
  p[l3 + 9] = proto;
  Put16(p, l4, 50000);
  Put16(p, l4 + 2, dport);
  return p;
}

Packet Ipv6(uint8_t nexthdr, uint16_t dport) {
  Packet p;
  const size_t l3 = Eth(p, 0x86dd);
  p.resize(l3 + 40 + 8 + 64, 0);
  p[l3] = 0x60;
  Put16(p, l3 + 4, 8 + 64);
  p[l3 + 6] = nexthdr;
  p[l3 + 7] = 64;
  Put16(p, l3 + 40, 50000);
  Put16(p, l3 + 40 + 2, dport);
  return p;
}

class SteerProgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF_PROG_TEST_RUN)";
    LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "roce_steer");
    obj_ = bpf_object__open_mem(burst_bpf_roce_steer_data, burst_bpf_roce_steer_size, &opts);
    ASSERT_NE(obj_, nullptr);
    ASSERT_EQ(bpf_object__load(obj_), 0) << "cannot load roce_steer: errno " << errno;
    prog_fd_ = bpf_program__fd(bpf_object__find_program_by_name(obj_, BURST_STEER_PROG_NAME));
    counters_fd_ = bpf_object__find_map_fd_by_name(obj_, BURST_STEER_COUNTERS_MAP);
    ASSERT_GE(prog_fd_, 0);
    ASSERT_GE(counters_fd_, 0);
  }
  void TearDown() override {
    if (obj_ != nullptr) bpf_object__close(obj_);
  }

  Counters Read() {
    Counters c{};
    std::vector<uint64_t> per_cpu(static_cast<size_t>(libbpf_num_possible_cpus()));
    for (uint32_t i = 0; i < BURST_STEER_NR_COUNTERS; ++i) {
      EXPECT_EQ(bpf_map_lookup_elem(counters_fd_, &i, per_cpu.data()), 0);
      for (uint64_t v : per_cpu) c[i] += v;
    }
    return c;
  }

  // Runs `p` once; expects `verdict` and exactly counter `expect` incremented.
  // `ctx` (optional) sets the ingress device and rx queue.
  void Expect(const Packet& p, uint32_t expect, const std::string& what,
              uint32_t verdict = XDP_PASS, xdp_md* ctx = nullptr) {
    SCOPED_TRACE(what);
    const Counters before = Read();
    if (ctx != nullptr) ctx->data_end = static_cast<uint32_t>(p.size());  // all linear
    LIBBPF_OPTS(bpf_test_run_opts, run, .data_in = p.data(),
                .data_size_in = static_cast<uint32_t>(p.size()), .ctx_in = ctx,
                .ctx_size_in = ctx ? static_cast<uint32_t>(sizeof(*ctx)) : 0u, .repeat = 1);
    ASSERT_EQ(bpf_prog_test_run_opts(prog_fd_, &run), 0) << "errno " << errno;
    EXPECT_EQ(run.retval, verdict);
    const Counters after = Read();
    for (uint32_t i = 0; i < BURST_STEER_NR_COUNTERS; ++i) {
      EXPECT_EQ(after[i] - before[i], i == expect ? 1u : 0u) << "counter " << i;
    }
  }

  bpf_object* obj_ = nullptr;
  int prog_fd_ = -1;
  int counters_fd_ = -1;
};

constexpr uint8_t kUdp = 17;
constexpr uint8_t kTcp = 6;

TEST_F(SteerProgTest, RoceV2IsSteered) {
  Expect(Ipv4(kUdp, 4791), BURST_STEER_PASS_NO_SOCKET, "ipv4 udp 4791");
  Expect(Ipv6(kUdp, 4791), BURST_STEER_PASS_NO_SOCKET, "ipv6 udp 4791");
  Expect(Ipv4(kUdp, 4791, 5, 0, {0x8100}), BURST_STEER_PASS_NO_SOCKET, "802.1Q");
  Expect(Ipv4(kUdp, 4791, 5, 0, {0x88a8}), BURST_STEER_PASS_NO_SOCKET, "802.1ad");
  Expect(Ipv4(kUdp, 4791, 5, 0x4000), BURST_STEER_PASS_NO_SOCKET, "DF is not a fragment");
}

TEST_F(SteerProgTest, HonoursIhl) {
  // 8 bytes of options: the UDP header starts at 28; put 4791 where a parser
  // ignoring IHL would look (offset 20 + 2) and another port at the real one.
  Packet p = Ipv4(kUdp, 80, 7);
  Put16(p, 14 + 20 + 2, 4791);
  Expect(p, BURST_STEER_PASS_NOT_ROCE, "options, real port 80");
  Expect(Ipv4(kUdp, 4791, 15), BURST_STEER_PASS_NO_SOCKET, "60-byte header, port 4791");
}

TEST_F(SteerProgTest, OtherTrafficPasses) {
  Expect(Ipv4(kUdp, 4792), BURST_STEER_PASS_NOT_ROCE, "udp 4792");
  Expect(Ipv4(kTcp, 4791), BURST_STEER_PASS_NOT_ROCE, "tcp 4791");
  Expect(Ipv6(kTcp, 4791), BURST_STEER_PASS_NOT_ROCE, "ipv6 tcp");
  Packet arp;
  Eth(arp, 0x0806);
  arp.resize(60, 0);
  Expect(arp, BURST_STEER_PASS_NOT_ROCE, "arp");
  Expect(Ipv4(kUdp, 4791, 5, 0, {0x88a8, 0x8100}), BURST_STEER_PASS_NOT_ROCE,
         "two tags: only one is walked");
}

TEST_F(SteerProgTest, FragmentsAndExtensionHeadersPass) {
  Expect(Ipv4(kUdp, 4791, 5, 0x2000), BURST_STEER_PASS_IP_FRAGMENT, "first fragment (MF)");
  Expect(Ipv4(kUdp, 4791, 5, 0x0010), BURST_STEER_PASS_IP_FRAGMENT, "later fragment");
  Expect(Ipv6(0, 4791), BURST_STEER_PASS_IPV6_EXTHDR, "hop-by-hop");
  Expect(Ipv6(44, 4791), BURST_STEER_PASS_IPV6_EXTHDR, "ipv6 fragment header");
}

TEST_F(SteerProgTest, MalformedPasses) {
  Packet p = Ipv4(kUdp, 4791);
  p.resize(14 + 10);
  Expect(p, BURST_STEER_PASS_UNPARSABLE, "truncated ipv4");
  p = Ipv4(kUdp, 4791);
  p[14] = 0x44;
  Expect(p, BURST_STEER_PASS_UNPARSABLE, "ihl 4");
  p = Ipv4(kUdp, 4791);
  p[14] = 0x65;
  Expect(p, BURST_STEER_PASS_UNPARSABLE, "version 6 in an ipv4 frame");
  p = Ipv4(kUdp, 4791, 15, 0, {}, 0);
  p.resize(14 + 60 + 4);
  Expect(p, BURST_STEER_PASS_UNPARSABLE, "udp header cut");
  p = Ipv6(kUdp, 4791);
  p.resize(14 + 30);
  Expect(p, BURST_STEER_PASS_UNPARSABLE, "truncated ipv6");
  Packet tag;
  Eth(tag, 0x0800, {0x8100});
  tag.resize(16);
  Expect(tag, BURST_STEER_PASS_UNPARSABLE, "cut inside the vlan tag");
}

TEST_F(SteerProgTest, MultiBufferFrame) {
  // 9000 bytes: larger than a page, so the test run builds a multi-buffer
  // xdp_buff; the program is frags-aware and parses the first buffer.
  Expect(Ipv4(kUdp, 4791, 5, 0, {}, 9000 - 42), BURST_STEER_PASS_NO_SOCKET, "9000-byte frame");
}

TEST_F(SteerProgTest, RedirectsToTheSocketOfItsQueue) {
  // A private network namespace: its loopback device is ours to bind to.
  ASSERT_EQ(unshare(CLONE_NEWNET), 0) << "unshare(CLONE_NEWNET): errno " << errno;
  const unsigned lo = if_nametoindex("lo");
  ASSERT_NE(lo, 0u);
  {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::strcpy(ifr.ifr_name, "lo");
    ASSERT_EQ(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
    ifr.ifr_flags |= IFF_UP;
    ASSERT_EQ(ioctl(fd, SIOCSIFFLAGS, &ifr), 0) << "bringing lo up: errno " << errno;
    close(fd);
  }
  constexpr size_t kUmem = 64 * 4096;
  void* area = mmap(nullptr, kUmem, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(area, MAP_FAILED);
  xsk_ring_prod fill{};
  xsk_ring_cons comp{};
  xsk_ring_cons rx{};
  xsk_umem* umem = nullptr;
  ASSERT_EQ(xsk_umem__create(&umem, area, kUmem, &fill, &comp, nullptr), 0);
  xsk_socket_config cfg{};
  cfg.rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS;
  cfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
  cfg.bind_flags = XDP_COPY;
  xsk_socket* xsk = nullptr;
  ASSERT_EQ(xsk_socket__create(&xsk, "lo", 0, umem, &rx, nullptr, &cfg), 0);
  const int xsks_fd = bpf_object__find_map_fd_by_name(obj_, BURST_STEER_XSKS_MAP);
  const uint32_t queue = 0;
  const int sock_fd = xsk_socket__fd(xsk);
  ASSERT_EQ(bpf_map_update_elem(xsks_fd, &queue, &sock_fd, BPF_ANY), 0) << "errno " << errno;

  xdp_md ctx{};
  ctx.ingress_ifindex = lo;
  ctx.rx_queue_index = 0;
  Expect(Ipv4(kUdp, 4791), BURST_STEER_STEERED, "ipv4 roce, socket on queue 0", XDP_REDIRECT, &ctx);
  Expect(Ipv6(kUdp, 4791), BURST_STEER_STEERED, "ipv6 roce, socket on queue 0", XDP_REDIRECT, &ctx);
  Expect(Ipv4(kUdp, 53), BURST_STEER_PASS_NOT_ROCE, "dns", XDP_PASS, &ctx);

  ASSERT_EQ(bpf_map_delete_elem(xsks_fd, &queue), 0);
  Expect(Ipv4(kUdp, 4791), BURST_STEER_PASS_NO_SOCKET, "socket removed", XDP_PASS, &ctx);
  xsk_socket__delete(xsk);
  xsk_umem__delete(umem);
  munmap(area, kUmem);
}

TEST_F(SteerProgTest, CarriesVersion) {
  bpf_map* rodata = bpf_object__find_map_by_name(obj_, ".rodata");
  ASSERT_NE(rodata, nullptr);
  size_t size = 0;
  const void* data = bpf_map__initial_value(rodata, &size);
  ASSERT_NE(data, nullptr);
  ASSERT_GE(size, sizeof(uint32_t));
  uint32_t v = 0;
  std::memcpy(&v, data, sizeof(v));  // the only variable in .rodata
  EXPECT_EQ(v, static_cast<uint32_t>(BURST_STEER_VERSION));
}

}  // namespace
