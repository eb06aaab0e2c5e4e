// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// ArpAgent: answers requests for its addresses, learns senders, resolves by
// broadcasting requests, and ignores what is not its business.
#include "datapath/arp_agent.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace burst::datapath {
namespace {

using Mac = ArpAgent::Mac;
constexpr Mac kOurs = {0x02, 0, 0, 0, 0, 0x01};
constexpr Mac kPeer = {0x02, 0, 0, 0, 0, 0x02};

uint32_t ip(const char* s) {
  in_addr a{};
  EXPECT_EQ(inet_pton(AF_INET, s, &a), 1);
  return a.s_addr;
}

std::vector<uint8_t> arp_frame(uint16_t op, const Mac& sha, uint32_t spa, const Mac& tha,
                               uint32_t tpa, const Mac& eth_dst) {
  std::vector<uint8_t> f(60, 0);
  std::memcpy(f.data(), eth_dst.data(), 6);
  std::memcpy(f.data() + 6, sha.data(), 6);
  f[12] = 0x08;
  f[13] = 0x06;
  uint8_t* a = f.data() + 14;
  a[1] = 1;
  a[2] = 0x08;
  a[4] = 6;
  a[5] = 4;
  a[7] = static_cast<uint8_t>(op);
  std::memcpy(a + 8, sha.data(), 6);
  std::memcpy(a + 14, &spa, 4);
  std::memcpy(a + 18, tha.data(), 6);
  std::memcpy(a + 24, &tpa, 4);
  return f;
}

struct Sent {
  std::vector<std::vector<uint8_t>> frames;
};

TEST(ArpAgent, AnswersARequestForItsAddressAndLearnsTheSender) {
  Sent sent;
  ArpAgent agent(kOurs, {{ip("10.9.0.1"), 24}}, [&](const uint8_t* f, uint32_t n) {
    sent.frames.emplace_back(f, f + n);
    return true;
  });
  auto req = arp_frame(1, kPeer, ip("10.9.0.2"), Mac{}, ip("10.9.0.1"), Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  ASSERT_TRUE(agent.on_frame(req.data(), static_cast<uint32_t>(req.size())));
  ASSERT_EQ(sent.frames.size(), 1u);
  const auto& r = sent.frames[0];
  ASSERT_EQ(r.size(), ArpAgent::kFrameLen);
  EXPECT_EQ(std::memcmp(r.data(), kPeer.data(), 6), 0);        // unicast to the asker
  EXPECT_EQ(std::memcmp(r.data() + 6, kOurs.data(), 6), 0);
  EXPECT_EQ(r[14 + 7], 2);                                      // reply
  EXPECT_EQ(std::memcmp(r.data() + 14 + 8, kOurs.data(), 6), 0);  // sha: us
  uint32_t spa, tpa;
  std::memcpy(&spa, r.data() + 14 + 14, 4);
  std::memcpy(&tpa, r.data() + 14 + 24, 4);
  EXPECT_EQ(spa, ip("10.9.0.1"));
  EXPECT_EQ(tpa, ip("10.9.0.2"));
  // The asker was learned: resolving it needs no request.
  Mac m{};
  std::string err;
  ASSERT_TRUE(agent.resolve(ip("10.9.0.2"), &m, 0, &err)) << err;
  EXPECT_EQ(m, kPeer);
  EXPECT_EQ(agent.counters().requests_answered, 1u);
  EXPECT_EQ(agent.counters().requests_sent, 0u);
}

TEST(ArpAgent, IgnoresOtherTargetsAndNonArp) {
  int sent = 0;
  ArpAgent agent(kOurs, {{ip("10.9.0.1"), 24}}, [&](const uint8_t*, uint32_t) {
    ++sent;
    return true;
  });
  auto other = arp_frame(1, kPeer, ip("10.9.0.2"), Mac{}, ip("10.9.0.3"), Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  EXPECT_TRUE(agent.on_frame(other.data(), 60));  // ARP: consumed, but not answered
  std::vector<uint8_t> ipv4(60, 0);
  ipv4[12] = 0x08;
  EXPECT_FALSE(agent.on_frame(ipv4.data(), 60));  // not ARP
  auto truncated = other;
  EXPECT_TRUE(agent.on_frame(truncated.data(), 30));  // too short: consumed, ignored
  EXPECT_EQ(sent, 0);
  EXPECT_EQ(agent.counters().ignored, 2u);
  Mac m{};
  std::string err;
  EXPECT_FALSE(agent.resolve(ip("10.9.0.2"), &m, 0, &err));  // not learned from a foreign request
}

TEST(ArpAgent, ResolveBroadcastsUntilTheReplyArrives) {
  std::atomic<int> requests{0};
  ArpAgent* self = nullptr;
  std::vector<uint8_t> last;
  ArpAgent agent(kOurs, {{ip("10.9.0.1"), 24}, {ip("192.168.5.1"), 16}},
                 [&](const uint8_t* f, uint32_t n) {
                   last.assign(f, f + n);
                   ++requests;
                   return true;
                 });
  self = &agent;
  std::thread peer([&] {
    while (requests.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto rep = arp_frame(2, kPeer, ip("192.168.7.7"), kOurs, ip("192.168.5.1"), kOurs);
    self->on_frame(rep.data(), 60);
  });
  Mac m{};
  std::string err;
  ASSERT_TRUE(agent.resolve(ip("192.168.7.7"), &m, 5000, &err)) << err;
  peer.join();
  EXPECT_EQ(m, kPeer);
  EXPECT_GE(agent.counters().requests_sent, 2u);
  // The request was a broadcast from the address on the target's subnet.
  ASSERT_EQ(last.size(), 60u);
  EXPECT_EQ(last[0], 0xff);
  uint32_t spa, tpa;
  std::memcpy(&spa, last.data() + 14 + 14, 4);
  std::memcpy(&tpa, last.data() + 14 + 24, 4);
  EXPECT_EQ(spa, ip("192.168.5.1"));
  EXPECT_EQ(tpa, ip("192.168.7.7"));
}

TEST(ArpAgent, ResolveTimesOutWithAMessageAndRefusesOwnAddress) {
  ArpAgent agent(kOurs, {{ip("10.9.0.1"), 24}}, [](const uint8_t*, uint32_t) { return false; });
  Mac m{};
  std::string err;
  EXPECT_FALSE(agent.resolve(ip("10.9.0.9"), &m, 250, &err));
  EXPECT_NE(err.find("10.9.0.9"), std::string::npos) << err;
  EXPECT_GE(agent.counters().tx_failures, 1u);
  EXPECT_FALSE(agent.resolve(ip("10.9.0.1"), &m, 250, &err));
  EXPECT_NE(err.find("address of this port"), std::string::npos) << err;
}

TEST(ArpAgent, GratuitousArpUpdatesAKnownPeer) {
  ArpAgent agent(kOurs, {{ip("10.9.0.1"), 24}}, [](const uint8_t*, uint32_t) { return true; });
  auto req = arp_frame(1, kPeer, ip("10.9.0.2"), Mac{}, ip("10.9.0.1"), kOurs);
  agent.on_frame(req.data(), 60);
  constexpr Mac kMoved = {0x02, 0, 0, 0, 0, 0x22};
  auto grat = arp_frame(1, kMoved, ip("10.9.0.2"), Mac{}, ip("10.9.0.2"),
                        Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  agent.on_frame(grat.data(), 60);
  Mac m{};
  std::string err;
  ASSERT_TRUE(agent.resolve(ip("10.9.0.2"), &m, 0, &err));
  EXPECT_EQ(m, kMoved);
}

}  // namespace
}  // namespace burst::datapath
