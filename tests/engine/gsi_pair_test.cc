// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// QP1 in the datapath between two ports over the loopback wire (core/gsi_channel.h):
// MADs queued on one port's GsiChannel leave as UD SEND_ONLY frames from QP1
// and reach the other port's channel with their peer (GID, MAC, QPN), both
// ways, in order. With two workers per port the wires are crossed (port A's
// worker 0 faces port B's worker 1 and the other way round), so every QP1 frame
// arrives at a worker that does not own QPN 1 and reaches the owner (worker 0)
// through the Handoff ring, as any other QP's frame does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/gsi_channel.h"
#include "core/mr.h"
#include "core/worker.h"
#include "datapath/loopback/loopback.h"

namespace burst::test {
namespace {

using Gid = std::array<uint8_t, 16>;
using Mac = std::array<uint8_t, 6>;
using LoopWorker = core::Worker<datapath::LoopbackPort>;

Gid gid_of(uint8_t host) { return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, host}; }
Mac mac_of(uint8_t host) { return {0x02, 0, 0, 0, 0, host}; }

// One port: `workers` engines with striped QPNs, their handoff rings, and QP1
// on worker 0.
struct Port {
  Port(uint8_t host, uint32_t workers) : id(host), mrs(64, 8), handoff(workers, 64, 2048) {
    for (uint32_t w = 0; w < workers; ++w) {
      core::EngineConfig c;
      c.port.mac = mac_of(id);
      c.port.gids = {gid_of(id)};
      c.max_qps = 16;
      c.qpn_stride = workers;
      c.qpn_offset = w;
      copiers.push_back(std::make_unique<core::CopyEngine>());
      engines.push_back(std::make_unique<core::Engine>(c, mrs, *copiers.back()));
    }
    EXPECT_TRUE(engines[core::kGsiOwner]->attach_gsi(&gsi).ok());
    handoff.add_inbound(core::kGsiOwner, &gsi.tx_ring());
  }
  void join(uint32_t w, datapath::LoopbackPort& queue) {
    if (loops.size() <= w) loops.resize(w + 1);
    loops[w] = std::make_unique<LoopWorker>(*engines[w], queue, &handoff, w);
  }
  // A MAD to port `to` whose bytes say (sender, sequence number).
  core::GsiMad mad_to(const Port& to, uint32_t seq) const {
    core::GsiMad m;
    m.remote_gid = gid_of(to.id);
    m.local_gid = gid_of(id);
    m.remote_mac = mac_of(to.id);
    m.remote_qpn = core::kGsiQpn;
    m.mad[0] = 1;     // base version
    m.mad[1] = 0x07;  // CM class
    m.mad[2] = 2;
    m.mad[8] = id;
    std::memcpy(&m.mad[12], &seq, sizeof(seq));
    for (uint32_t i = 24; i < core::kGsiMadBytes; ++i) m.mad[i] = static_cast<uint8_t>(i ^ seq);
    return m;
  }

  uint8_t id;
  core::MrTable mrs;
  core::Handoff handoff;
  core::GsiChannel gsi;
  std::vector<std::unique_ptr<core::CopyEngine>> copiers;
  std::vector<std::unique_ptr<core::Engine>> engines;
  std::vector<std::unique_ptr<LoopWorker>> loops;
};

struct Net {
  explicit Net(uint32_t workers) : a(1, workers), b(2, workers) {
    if (workers == 1) {
      wires.push_back(std::make_unique<datapath::LoopbackWire>(2048));
      a.join(0, wires[0]->port(0));
      b.join(0, wires[0]->port(1));
      return;
    }
    // Crossed: A.w0 <-> B.w1, A.w1 <-> B.w0.
    wires.push_back(std::make_unique<datapath::LoopbackWire>(2048));
    wires.push_back(std::make_unique<datapath::LoopbackWire>(2048));
    a.join(0, wires[0]->port(0));
    b.join(1, wires[0]->port(1));
    a.join(1, wires[1]->port(0));
    b.join(0, wires[1]->port(1));
  }
  void poll() {
    now_ns += 1000;
    for (Port* p : {&a, &b}) {
      for (auto& l : p->loops) l->poll_once(now_ns);
    }
  }
  // Polls until `to` received `want` MADs (bounded), appending them to *got.
  void run_until(Port& to, size_t want, std::vector<core::GsiMad>* got) {
    for (int i = 0; i < 1000 && got->size() < want; ++i) {
      poll();
      core::GsiMad m[16];
      const uint32_t n = to.gsi.receive(m, 16);
      got->insert(got->end(), m, m + n);
    }
  }

  std::vector<std::unique_ptr<datapath::LoopbackWire>> wires;
  Port a, b;
  uint64_t now_ns = 1000;
};

void expect_from(const std::vector<core::GsiMad>& got, const Port& from, const Port& to,
                 uint32_t first_seq) {
  for (size_t i = 0; i < got.size(); ++i) {
    const core::GsiMad want = from.mad_to(to, first_seq + static_cast<uint32_t>(i));
    EXPECT_EQ(got[i].mad, want.mad) << "MAD " << i << " (in order, intact)";
    EXPECT_EQ(got[i].remote_gid, gid_of(from.id));
    EXPECT_EQ(got[i].local_gid, gid_of(to.id));
    EXPECT_EQ(got[i].remote_mac, mac_of(from.id));
    EXPECT_EQ(got[i].remote_qpn, core::kGsiQpn);
    EXPECT_EQ(got[i].hop_limit, 64);
  }
}

void exchange(uint32_t workers) {
  Net net(workers);
  constexpr uint32_t kMads = 100;  // more than a burst, fewer than the rings hold
  // A -> B, then B answers each, then both at once.
  for (uint32_t i = 0; i < kMads; ++i) ASSERT_TRUE(net.a.gsi.send(net.a.mad_to(net.b, i)));
  std::vector<core::GsiMad> at_b;
  net.run_until(net.b, kMads, &at_b);
  ASSERT_EQ(at_b.size(), kMads);
  expect_from(at_b, net.a, net.b, 0);

  std::vector<core::GsiMad> at_a;
  for (uint32_t i = 0; i < kMads; ++i) ASSERT_TRUE(net.b.gsi.send(net.b.mad_to(net.a, i)));
  net.run_until(net.a, kMads, &at_a);
  ASSERT_EQ(at_a.size(), kMads);
  expect_from(at_a, net.b, net.a, 0);

  at_a.clear();
  at_b.clear();
  for (uint32_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(net.a.gsi.send(net.a.mad_to(net.b, 1000 + i)));
    ASSERT_TRUE(net.b.gsi.send(net.b.mad_to(net.a, 2000 + i)));
  }
  net.run_until(net.b, 10, &at_b);
  net.run_until(net.a, 10, &at_a);
  ASSERT_EQ(at_b.size(), 10u);
  ASSERT_EQ(at_a.size(), 10u);
  expect_from(at_b, net.a, net.b, 1000);
  expect_from(at_a, net.b, net.a, 2000);

  for (Port* p : {&net.a, &net.b}) {
    const core::GsiCounters c = p->gsi.counters();
    EXPECT_EQ(c.tx, kMads + 10);
    EXPECT_EQ(c.rx, kMads + 10);
    EXPECT_EQ(c.drop_qkey + c.drop_len + c.drop_opcode + c.rx_ring_full + c.tx_ring_full, 0u);
    if (workers > 1) {
      // Every QP1 frame arrived at worker 1 and was handed to worker 0.
      EXPECT_EQ(p->loops[1]->counters().handoff_out, kMads + 10);
      EXPECT_EQ(p->loops[0]->counters().handoff_in, kMads + 10);
      EXPECT_EQ(p->engines[1]->counters().tx_packets, 0u) << "only QPN 1's owner sends MADs";
    }
    for (auto& e : p->engines) {
      EXPECT_EQ(e->counters().rx_drop[static_cast<size_t>(core::Drop::kUnknownQp)], 0u);
    }
  }
}

TEST(GsiPair, MadsBothWaysOneWorker) { exchange(1); }

TEST(GsiPair, MadsBothWaysTwoWorkersArriveAtTheNonOwner) { exchange(2); }

// Without a channel, a frame for QP1 is an unknown QP's (and counted so).
TEST(GsiPair, NoChannelNoQp1) {
  Net net(1);
  ASSERT_TRUE(net.b.engines[0]->attach_gsi(nullptr).ok());
  ASSERT_TRUE(net.a.gsi.send(net.a.mad_to(net.b, 7)));
  for (int i = 0; i < 10; ++i) net.poll();
  EXPECT_EQ(net.b.engines[0]->counters().rx_drop[static_cast<size_t>(core::Drop::kUnknownQp)], 1u);
  EXPECT_EQ(net.b.gsi.counters().rx, 0u);
}

}  // namespace
}  // namespace burst::test
