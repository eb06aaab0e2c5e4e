/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Shared helpers of the transport tests: an engine with its MR table and copy
// engine (a "node"), QP bring-up, frame capture from tx_build, delivery into
// rx_burst, crafted frames built with the wire builders, and white-box access
// through EngineTestPeer (a friend of Engine, defined only here).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/mr.h"
#include "core/wire/frame.h"

namespace burst::core {

class EngineTestPeer {
 public:
  static const Qp& qp(const Engine& e, uint32_t qpn) { return *e.find_qp(qpn); }
  static Qp& qp(Engine& e, uint32_t qpn) { return *e.find_qp(qpn); }
};

namespace test {

using Bytes = std::vector<uint8_t>;
using Frames = std::vector<Bytes>;

inline std::array<uint8_t, 16> v4_gid(uint8_t last) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, last};
}
inline std::array<uint8_t, 6> mac_of(uint8_t last) { return {0x02, 0, 0, 0, 0, last}; }
inline std::array<uint8_t, 16> v6_gid(uint8_t last) {
  return {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, last};
}
// A node whose only GID is the IPv6 address fd00::12xx.
inline EngineConfig node_config_v6(uint8_t id, uint32_t l2_mtu = 9014) {
  EngineConfig c;
  c.port.mac = mac_of(id);
  c.port.gids = {v6_gid(id)};
  c.port.l2_mtu = l2_mtu;
  c.max_qps = 64;
  c.first_qpn = 0x11 + id * 0x100;
  return c;
}

inline EngineConfig node_config(uint8_t id, uint32_t l2_mtu) {
  EngineConfig c;
  c.port.mac = mac_of(id);
  c.port.gids = {v4_gid(id)};
  c.port.l2_mtu = l2_mtu;
  c.max_qps = 64;
  c.first_qpn = 0x11 + id * 0x100;
  return c;
}

// One engine with its device tables: one PD and one CQ for everything.
struct Node {
  explicit Node(uint8_t node_id, uint32_t l2_mtu = 9014, uint32_t cq_depth = 4096)
      : Node(node_id, node_config(node_id, l2_mtu), cq_depth) {}
  Node(uint8_t node_id, const EngineConfig& config, uint32_t cq_depth = 4096)
      : id(node_id), eng(config, mrs, copier) {
    pd = mrs.alloc_pd();
    EXPECT_TRUE(eng.create_cq(cq_depth, &cq).ok());
  }

  uint32_t create_qp(QpType type = QpType::kRc, QpCap cap = {}, bool sig_all = true) {
    QpInitAttr init;
    init.type = type;
    init.pd = pd;
    init.send_cq = cq;
    init.recv_cq = cq;
    init.cap = cap;
    init.sq_sig_all = sig_all;
    uint32_t qpn = 0;
    EXPECT_TRUE(eng.create_qp(init, &qpn).ok());
    return qpn;
  }

  // Registers `buf` (iova = its address) and returns the key (lkey == rkey).
  uint32_t reg(Bytes& buf, uint32_t access = kAccessLocalWrite | kAccessRemoteWrite |
                                             kAccessRemoteRead | kAccessRemoteAtomic) {
    uint32_t lkey = 0, rkey = 0;
    EXPECT_TRUE(mrs.reg_mr(pd, buf.data(), addr(buf), buf.size(), access, &lkey, &rkey).ok());
    return lkey;
  }
  static uint64_t addr(const Bytes& b) { return reinterpret_cast<uintptr_t>(b.data()); }

  std::vector<Wc> poll(int max = 4096) {
    std::vector<Wc> out(static_cast<size_t>(max));
    out.resize(static_cast<size_t>(eng.poll_cq(cq, out.data(), max)));
    return out;
  }
  QpState state(uint32_t qpn) const {
    QpAttr a;
    EXPECT_TRUE(eng.query_qp(qpn, &a, nullptr).ok());
    return a.qp_state;
  }

  uint8_t id;
  MrTable mrs;
  CopyEngine copier;
  Engine eng;
  uint32_t pd = 0;
  uint32_t cq = 0;
};

struct RcOpts {
  Mtu mtu = Mtu::k1024;
  uint32_t sq_psn = 0x100;
  uint32_t rq_psn = 0x200;
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;
  uint8_t max_rd_atomic = 4;
  uint8_t max_dest_rd_atomic = 4;
  uint32_t access = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
};

// RESET -> INIT -> RTR -> RTS toward a peer with GID/MAC of node `peer_id`.
inline void bring_up_rc(Node& n, uint32_t qpn, uint8_t peer_id, uint32_t dest_qpn,
                        const RcOpts& o = {}, bool ipv6 = false) {
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = o.access;
  ASSERT_TRUE(n.eng.modify_qp(qpn, a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags).ok());
  a.qp_state = QpState::kRtr;
  a.path_mtu = o.mtu;
  a.dest_qp_num = dest_qpn;
  a.rq_psn = o.rq_psn;
  a.max_dest_rd_atomic = o.max_dest_rd_atomic;
  a.min_rnr_timer = o.min_rnr_timer;
  a.ah.dgid = ipv6 ? v6_gid(peer_id) : v4_gid(peer_id);
  a.ah.dmac = mac_of(peer_id);
  a.ah.hop_limit = 32;
  a.ah.traffic_class = 0x68;
  a.ah.flow_label = 0x12345;
  ASSERT_TRUE(n.eng
                  .modify_qp(qpn, a,
                             kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                 kQpMaxDestRdAtomic | kQpMinRnrTimer)
                  .ok());
  a.qp_state = QpState::kRts;
  a.sq_psn = o.sq_psn;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.max_rd_atomic = o.max_rd_atomic;
  ASSERT_TRUE(n.eng
                  .modify_qp(qpn, a,
                             kQpState | kQpSqPsn | kQpQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                 kQpMaxQpRdAtomic)
                  .ok());
}

inline void bring_up_ud(Node& n, uint32_t qpn, uint32_t qkey, uint32_t sq_psn = 0) {
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.qkey = qkey;
  ASSERT_TRUE(n.eng.modify_qp(qpn, a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey).ok());
  a.qp_state = QpState::kRtr;
  ASSERT_TRUE(n.eng.modify_qp(qpn, a, kQpState).ok());
  a.qp_state = QpState::kRts;
  a.sq_psn = sq_psn;
  ASSERT_TRUE(n.eng.modify_qp(qpn, a, kQpState | kQpSqPsn).ok());
}

// Everything tx_build produces now (bounded).
inline Frames capture(Engine& e, uint64_t now, uint32_t max_frames = 100000) {
  constexpr uint32_t kBurst = 32;
  constexpr uint32_t kCap = 9216;
  Frames out;
  std::vector<uint8_t> storage(size_t{kBurst} * kCap);
  while (out.size() < max_frames) {
    datapath::Frame bufs[kBurst];
    for (uint32_t i = 0; i < kBurst; ++i) bufs[i] = {storage.data() + size_t{i} * kCap, 0, kCap, i};
    const uint32_t n = e.tx_build(bufs, std::min<uint32_t>(kBurst, max_frames - out.size()), now);
    for (uint32_t i = 0; i < n; ++i) out.emplace_back(bufs[i].data, bufs[i].data + bufs[i].len);
    if (n == 0) break;
  }
  return out;
}

inline void deliver(Engine& e, const Frames& frames, uint64_t now) {
  std::vector<datapath::Frame> fs;
  for (const Bytes& f : frames) {
    fs.push_back({const_cast<uint8_t*>(f.data()), static_cast<uint32_t>(f.size()),
                  static_cast<uint32_t>(f.size()), 0});
  }
  e.rx_burst(fs.data(), static_cast<uint32_t>(fs.size()), now);
}
inline void deliver(Engine& e, const Bytes& frame, uint64_t now) { deliver(e, Frames{frame}, now); }

inline wire::PacketView parse(const Bytes& f) {
  wire::PacketView pv{};
  EXPECT_EQ(wire::parse_frame(f.data(), static_cast<uint32_t>(f.size()), &pv), wire::RxDrop::kNone);
  return pv;
}
inline uint8_t opcode_of(const Bytes& f) { return parse(f).opcode; }
inline uint32_t psn_of(const Bytes& f) { return parse(f).bth().psn().value(); }
inline uint8_t syndrome_of(const Bytes& f) { return parse(f).aeth()->syndrome(); }

// Moves frames between two engines until both are quiet (or max_rounds).
inline void pump(Node& a, Node& b, uint64_t now, int max_rounds = 1000) {
  for (int i = 0; i < max_rounds; ++i) {
    Frames fa = capture(a.eng, now);
    Frames fb = capture(b.eng, now);
    if (fa.empty() && fb.empty()) return;
    deliver(b.eng, fa, now);
    deliver(a.eng, fb, now);
  }
}

// Crafted frames from node `from_id` toward node `to_id`.
inline wire::PathHeaders path_between(uint8_t from_id, uint8_t to_id) {
  wire::PathHeaders p{};
  p.smac = mac_of(from_id);
  p.dmac = mac_of(to_id);
  p.sgid = v4_gid(from_id);
  p.dgid = v4_gid(to_id);
  p.ipv6 = false;
  p.hop_limit = 64;
  p.udp_sport = 0xC123;
  return p;
}

inline Bytes craft(uint8_t from_id, uint8_t to_id, uint8_t opcode, uint32_t dest_qpn, uint32_t psn,
                   const Bytes& payload = {},
                   const std::function<void(wire::FrameWriter&)>& ext = {}, bool ack_req = false) {
  Bytes buf(9216);
  wire::FrameWriter fw(buf.data(), static_cast<uint32_t>(buf.size()), path_between(from_id, to_id),
                       opcode, static_cast<uint32_t>(payload.size()));
  EXPECT_TRUE(fw.ok());
  fw.bth().set_dest_qpn(dest_qpn);
  fw.bth().set_psn(wire::Psn(psn));
  fw.bth().set_ack_req(ack_req);
  if (!payload.empty()) std::memcpy(fw.payload(), payload.data(), payload.size());
  if (ext) ext(fw);
  buf.resize(fw.finish());
  return buf;
}

inline Bytes ack_frame(uint8_t from_id, uint8_t to_id, uint32_t dest_qpn, uint32_t psn,
                       uint8_t syndrome = 0x1f, uint32_t msn = 0) {
  return craft(from_id, to_id, wire::op::kRcAcknowledge, dest_qpn, psn, {},
               [&](wire::FrameWriter& fw) {
                 fw.aeth().set_syndrome(syndrome);
                 fw.aeth().set_msn(msn);
               });
}

inline Bytes pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  return b;
}

inline SendWr make_wr(WrOpcode op, uint64_t wr_id, const Bytes& buf, uint32_t lkey, uint32_t len,
                      uint32_t off = 0) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.num_sge = 1;
  wr.sg_list[0] = {Node::addr(buf) + off, len, lkey};
  return wr;
}

inline RecvWr make_recv(uint64_t wr_id, const Bytes& buf, uint32_t lkey, uint32_t len,
                        uint32_t off = 0) {
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.num_sge = 1;
  wr.sg_list[0] = {Node::addr(buf) + off, len, lkey};
  return wr;
}

}  // namespace test
}  // namespace burst::core
