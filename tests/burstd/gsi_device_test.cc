// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burstd's QP1 (daemon/burstd/gsi.h) on a loopback Device with running
// workers: a MAD sent to the port's own GID (MAC resolved by the Device) comes
// back through worker 0's datapath with its peer; the eventfd says when;
// bad sends are refused with their errno; a full ring is EAGAIN; a MAD for a
// GID the port does not have is dropped, counted; the gsi.* counters are among
// the Device's counters (burstctl counters).
#include <gtest/gtest.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/burstd/device.h"

namespace burst::burstd {
namespace {

std::unique_ptr<Device> open_loopback(uint32_t workers) {
  Config c;
  c.backend = BackendKind::kLoopback;
  c.workers = workers;
  c.idle_sleep_max_us = 20000;  // workers sleep: the sender must wake worker 0
  std::string error;
  std::unique_ptr<Device> d = Device::Open(c, &error);
  EXPECT_NE(d, nullptr) << error;
  return d;
}

// The index of the port's first IPv4 GID.
uint8_t ipv4_index(const Device& d) {
  for (size_t i = 0; i < d.info().gids.size(); ++i) {
    if (net::gid_is_ipv4_mapped(d.info().gids[i])) return static_cast<uint8_t>(i);
  }
  ADD_FAILURE() << "no IPv4 GID";
  return 0;
}

cm::Mad mad_to_self(const Device& d, uint32_t seq) {
  cm::Mad m;
  m.peer.sgid_index = ipv4_index(d);
  m.peer.gid = d.info().gids[m.peer.sgid_index];
  m.peer.remote_qpn = 1;
  m.bytes[0] = 1;
  m.bytes[1] = 0x07;
  m.bytes[2] = 2;
  std::memcpy(&m.bytes[8], &seq, sizeof(seq));
  for (size_t i = 24; i < m.bytes.size(); ++i) m.bytes[i] = static_cast<uint8_t>(i + seq);
  return m;
}

// Receives until `want` MADs came (each wait bounded), in order.
std::vector<cm::Mad> receive(Gsi& gsi, size_t want) {
  std::vector<cm::Mad> got;
  // Up to 50 quiet polls of 100 ms; each wake-up drains what is queued (the
  // ring holds GsiChannel::kDefaultSlots MADs).
  for (int quiet = 0; quiet < 50 && got.size() < want;) {
    pollfd p{gsi.event_fd(), POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) {
      ++quiet;
      continue;
    }
    cm::Mad m[64];
    size_t n;
    while (got.size() < want && (n = gsi.receive(m, 64)) > 0) got.insert(got.end(), m, m + n);
  }
  return got;
}

std::map<std::string, uint64_t> counters(const Device& d) {
  std::map<std::string, uint64_t> out;
  for (const auto& [name, v] : d.port_counters()) out[name] = v;
  return out;
}

void loop_to_self(uint32_t workers) {
  std::unique_ptr<Device> d = open_loopback(workers);
  ASSERT_NE(d, nullptr);
  d->start();
  Gsi& gsi = d->gsi();
  constexpr uint32_t kMads = 40;
  for (uint32_t i = 0; i < kMads; ++i) {
    ASSERT_EQ(gsi.send(mad_to_self(*d, i)), 0);
    if (i % 8 == 7) {  // give the worker time to fall asleep now and then
      pollfd p{gsi.event_fd(), POLLIN, 0};
      (void)poll(&p, 1, 30);
    }
  }
  const std::vector<cm::Mad> got = receive(gsi, kMads);
  ASSERT_EQ(got.size(), kMads);
  for (uint32_t i = 0; i < kMads; ++i) {
    const cm::Mad want = mad_to_self(*d, i);
    EXPECT_EQ(got[i].bytes, want.bytes) << i;
    EXPECT_EQ(got[i].peer.gid, want.peer.gid);
    EXPECT_EQ(got[i].peer.mac, d->info().mac) << "the port's own MAC, resolved by send()";
    EXPECT_EQ(got[i].peer.sgid_index, want.peer.sgid_index);
    EXPECT_EQ(got[i].peer.remote_qpn, 1u);
    EXPECT_EQ(got[i].peer.hop_limit, 64);
  }
  const auto c = counters(*d);
  EXPECT_EQ(c.at("gsi.tx"), kMads);
  EXPECT_EQ(c.at("gsi.rx"), kMads);
  for (const char* name :
       {"gsi.drop_qkey", "gsi.drop_len", "gsi.rx_ring_full", "gsi.tx_ring_full", "gsi.drop_dgid"}) {
    EXPECT_EQ(c.at(name), 0u) << name;
  }
  d->stop();
}

TEST(GsiDevice, MadsToTheOwnGidComeBackOneWorker) { loop_to_self(1); }
TEST(GsiDevice, MadsToTheOwnGidComeBackTwoWorkers) { loop_to_self(2); }

TEST(GsiDevice, BadSendsAndForeignGids) {
  std::unique_ptr<Device> d = open_loopback(1);
  ASSERT_NE(d, nullptr);
  Gsi& gsi = d->gsi();
  cm::Mad m = mad_to_self(*d, 0);
  m.peer.sgid_index = 250;
  EXPECT_EQ(gsi.send(m), EINVAL) << "no such GID index";
  m = mad_to_self(*d, 0);
  m.peer.remote_qpn = 1u << 24;
  EXPECT_EQ(gsi.send(m), EINVAL) << "QPN over 24 bits";
  m = mad_to_self(*d, 0);
  m.peer.gid = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(gsi.send(m), EINVAL) << "IPv4 source, IPv6 destination";

  // The workers do not run yet: the ring fills.
  uint32_t queued = 0;
  while (gsi.send(mad_to_self(*d, queued)) == 0) ++queued;
  EXPECT_EQ(queued, core::GsiChannel::kDefaultSlots);
  EXPECT_EQ(gsi.send(mad_to_self(*d, 0)), EAGAIN);
  EXPECT_EQ(counters(*d).at("gsi.tx_ring_full"), 2u) << "the send that found it full, and this one";
  d->start();
  const std::vector<cm::Mad> drained = receive(gsi, queued);
  EXPECT_EQ(drained.size(), queued) << "every queued MAD sent and received";

  // Another host's GID (the loopback wire reflects it here): not ours, dropped.
  m = mad_to_self(*d, 0);
  m.peer.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};
  m.peer.mac = {0x02, 0, 0, 0, 0, 0x77};
  ASSERT_EQ(gsi.send(m), 0);
  for (int i = 0; i < 50 && counters(*d).at("gsi.drop_dgid") == 0; ++i) {
    pollfd p{gsi.event_fd(), POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      cm::Mad out[8];
      EXPECT_EQ(gsi.receive(out, 8), 0u);
    }
  }
  EXPECT_EQ(counters(*d).at("gsi.drop_dgid"), 1u);
  d->stop();
}

}  // namespace
}  // namespace burst::burstd
