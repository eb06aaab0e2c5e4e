// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The DPDK backend's Backend contract on a net_ring vdev (its TX queue i feeds
// its RX queue i: a port that hears itself), plus the control-plane errors.
// One EAL per process: every test shares it. Exit 77 (skip) when not root.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "datapath/arp_agent.h"
#include "datapath/dpdk/dpdk_port.h"
#include "datapath/dpdk/dpdk_queue.h"

namespace burst::datapath {
namespace {

DpdkConfig ring_config(const char* name) {
  DpdkConfig c;
  c.port = name;
  c.queues = 1;
  c.mtu = 1500;
  c.mbufs = 1024;
  c.hugepages = DpdkHugepages::kOff;  // no hugepages needed, none left behind
  c.eal_args = {"--log-level=*:error"};
  return c;
}

class DpdkRing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cpu_set_t before;
    CPU_ZERO(&before);
    sched_getaffinity(0, sizeof before, &before);
    DpdkError err;
    port_ = DpdkPort::Open(ring_config("net_ring0"), &err).release();
    ASSERT_NE(port_, nullptr) << err.message;
    cpu_set_t after;
    CPU_ZERO(&after);
    sched_getaffinity(0, sizeof after, &after);
    affinity_kept_ = CPU_EQUAL(&before, &after);
    port_->queue(0).on_thread_start();
  }
  static void TearDownTestSuite() {
    delete port_;
    port_ = nullptr;
  }
  static DpdkPort* port_;
  static bool affinity_kept_;
};
DpdkPort* DpdkRing::port_ = nullptr;
bool DpdkRing::affinity_kept_ = false;

TEST_F(DpdkRing, OpensWithoutPinningTheCaller) {
  EXPECT_TRUE(affinity_kept_) << "rte_eal_init's main-lcore pinning leaked to the caller";
  EXPECT_EQ(port_->driver(), "net_ring");
  EXPECT_EQ(port_->queue_count(), 1u);
  EXPECT_EQ(port_->mtu(), 1500u);
  EXPECT_FALSE(port_->hugepages());
  // net_ring has no rte_flow: the fallback is said, not silent.
  EXPECT_NE(port_->notes().find("no rte_flow"), std::string::npos) << port_->notes();
  DpdkQueue& q = port_->queue(0);
  EXPECT_EQ(q.mtu(), 1514u);
  EXPECT_FALSE(q.zero_copy());
}

TEST_F(DpdkRing, FramesSentComeBackIntact) {
  DpdkQueue& q = port_->queue(0);
  Frame f[3];
  ASSERT_EQ(q.tx_alloc(f, 3), 3u);
  const uint32_t lens[3] = {60, 1514, 777};
  for (int i = 0; i < 3; ++i) {
    ASSERT_GE(f[i].cap, q.mtu());
    for (uint32_t b = 0; b < lens[i]; ++b) f[i].data[b] = static_cast<uint8_t>(b * 7 + i);
    f[i].data[12] = 0x08;  // IPv4 EtherType: not ARP
    f[i].data[13] = 0x00;
    f[i].len = lens[i];
  }
  ASSERT_EQ(q.tx_burst(f, 3), 3u);
  Frame r[DpdkQueue::kMaxBurst];
  const uint32_t got = q.rx_burst(r, DpdkQueue::kMaxBurst);
  ASSERT_EQ(got, 3u);
  for (uint32_t i = 0; i < got; ++i) {
    ASSERT_EQ(r[i].len, lens[i]);
    for (uint32_t b = 14; b < lens[i]; ++b)
      ASSERT_EQ(r[i].data[b], static_cast<uint8_t>(b * 7 + i)) << "frame " << i << " byte " << b;
  }
  q.rx_release(r, got);
  EXPECT_EQ(q.rx_burst(r, DpdkQueue::kMaxBurst), 0u);
  EXPECT_GE(q.counters().tx_frames, 3u);
  EXPECT_GE(q.counters().rx_frames, 3u);
}

TEST_F(DpdkRing, ABadLengthIsConsumedAndCountedTheRestStaysWithTheCaller) {
  DpdkQueue& q = port_->queue(0);
  Frame f[2];
  ASSERT_EQ(q.tx_alloc(f, 2), 2u);
  f[0].len = f[0].cap + 1;  // too long
  f[1].len = 0;             // empty
  const uint64_t invalid = q.counters().tx_invalid;
  EXPECT_EQ(q.tx_burst(f, 2), 2u);  // both consumed (freed), none sent
  EXPECT_EQ(q.counters().tx_invalid, invalid + 2);
  Frame r[4];
  EXPECT_EQ(q.rx_burst(r, 4), 0u);
  // Frames not handed to tx_burst go back with tx_free (pool not leaking:
  // many rounds of alloc/free must keep succeeding).
  for (int round = 0; round < 5000; ++round) {
    ASSERT_EQ(q.tx_alloc(f, 2), 2u) << "round " << round;
    q.tx_free(f, 2);
  }
}

TEST_F(DpdkRing, ArpIsAnsweredByTheAgentAndNeverReachesTheTransport) {
  uint32_t ours = 0, peer = 0;
  inet_pton(AF_INET, "10.77.0.1", &ours);
  inet_pton(AF_INET, "10.77.0.2", &peer);
  ArpAgent::Mac mac{};
  std::copy(port_->mac().begin(), port_->mac().end(), mac.begin());
  std::vector<std::vector<uint8_t>> replies;
  ArpAgent agent(mac, {{ours, 24}}, [&](const uint8_t* f, uint32_t n) {
    replies.emplace_back(f, f + n);
    return true;
  });
  port_->set_arp_agent(&agent);
  DpdkQueue& q = port_->queue(0);
  Frame f[1];
  ASSERT_EQ(q.tx_alloc(f, 1), 1u);
  uint8_t* p = f[0].data;
  std::memset(p, 0, 60);
  std::memset(p, 0xff, 6);
  const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0x77, 0x02};
  std::memcpy(p + 6, peer_mac, 6);
  p[12] = 0x08;
  p[13] = 0x06;
  p[15] = 1;
  p[16] = 0x08;
  p[18] = 6;
  p[19] = 4;
  p[21] = 1;  // request
  std::memcpy(p + 22, peer_mac, 6);
  std::memcpy(p + 28, &peer, 4);
  std::memcpy(p + 38, &ours, 4);
  f[0].len = 60;
  ASSERT_EQ(q.tx_burst(f, 1), 1u);
  Frame r[4];
  EXPECT_EQ(q.rx_burst(r, 4), 0u);  // consumed by the agent
  port_->set_arp_agent(nullptr);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(std::memcmp(replies[0].data(), peer_mac, 6), 0);
  EXPECT_EQ(q.counters().rx_arp, 1u);
  // Control frames (the agent's path on a real port) ride on queue 0 and go
  // out with its owner's next flush(): here they come straight back.
  EXPECT_TRUE(port_->control_tx(replies[0].data(), static_cast<uint32_t>(replies[0].size())));
  EXPECT_EQ(q.rx_burst(r, 4), 0u);  // not sent before flush()
  q.flush();
  const uint32_t got = q.rx_burst(r, 4);
  ASSERT_EQ(got, 1u);  // no agent attached now: it reaches the caller
  EXPECT_EQ(r[0].len, replies[0].size());
  EXPECT_EQ(std::memcmp(r[0].data, replies[0].data(), replies[0].size()), 0);
  q.rx_release(r, got);
}

TEST_F(DpdkRing, BadPortsFailWithOneClearMessage) {
  DpdkError err;
  EXPECT_EQ(DpdkPort::Open(ring_config("net_nosuchpmd0,foo=1"), &err), nullptr);
  EXPECT_NE(err.message.find("could not be created"), std::string::npos) << err.message;
  EXPECT_EQ(DpdkPort::Open(ring_config(""), &err), nullptr);
  EXPECT_NE(err.message.find("dpdk_port"), std::string::npos) << err.message;
  DpdkConfig many = ring_config("net_ring1");
  many.queues = 64;  // net_ring has 16
  EXPECT_EQ(DpdkPort::Open(many, &err), nullptr);
  EXPECT_NE(err.message.find("queues"), std::string::npos) << err.message;
  DpdkConfig pci = ring_config("0000:00:1f.6");
  EXPECT_EQ(DpdkPort::Open(pci, &err), nullptr);  // this EAL runs without PCI
  EXPECT_NE(err.message.find("PCI"), std::string::npos) << err.message;
}

}  // namespace
}  // namespace burst::datapath

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::printf("SKIP: the DPDK EAL needs root here\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
