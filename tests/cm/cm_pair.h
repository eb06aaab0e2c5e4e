/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Two IbCm back to back over an in-memory link (test harness): a fake clock,
// MADs queued and delivered in order, the k-th MAD or the first of an
// attribute from one side dropped or duplicated, every MAD recorded.
// Each side answers as cma would when auto_answer is on (REQ -> REP,
// REP -> RTU, DREQ -> DREP, SIDR_REQ -> SIDR_REP).
#pragma once

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "cm/ib_cm.h"
#include "cm/mad.h"

namespace burst::cm::test {

inline constexpr uint64_t kPsTcpService = 0x0000000001060000 | 7174;
inline constexpr uint64_t kPsUdpService = 0x0000000001110000 | 7174;
inline constexpr uint64_t kMaxFakeNs = 3600ull * 1000 * 1000 * 1000;

struct CmPair;

struct Sent {
  int from;
  uint16_t attr;
  Mad mad;
};

struct Side : IbCmHost {
  Side(CmPair* p, int i, uint64_t guid, uint8_t last_ip)
      : pair(p), index(i), cm(*this, guid, 0x1234 + i) {
    gid[10] = gid[11] = 0xFF;
    gid[12] = 10;
    gid[13] = 99;
    gid[15] = last_ip;
    mac = {0x52, 0x54, 0, 0x99, 0, static_cast<uint8_t>(i + 1)};
  }
  bool send_mad(const Mad& mad) override;
  void cm_event(CmHandle h, const CmEvent& e) override;
  uint64_t now_ns() override;

  int count(CmEventType t) const {
    int n = 0;
    for (const auto& [h, e] : events) n += e.type == t;
    return n;
  }
  const CmEvent* last(CmEventType t) const {
    for (auto it = events.rbegin(); it != events.rend(); ++it)
      if (it->second.type == t) return &it->second;
    return nullptr;
  }
  CmHandle handle_of(CmEventType t) const {
    for (const auto& [h, e] : events)
      if (e.type == t) return h;
    return kNoCmHandle;
  }

  CmPair* pair;
  int index;
  Gid gid{};
  Mac mac{};
  bool auto_answer = true;
  uint32_t qpn = 0;
  std::vector<std::pair<CmHandle, CmEvent>> events;
  std::function<void(Side&, CmHandle, const CmEvent&)> on_event;  // instead of auto_answer
  IbCm cm;
};

struct CmPair {
  CmPair() {
    a = std::make_unique<Side>(this, 0, 0x505400fffe990002, 12);
    b = std::make_unique<Side>(this, 1, 0x505400fffe990001, 11);
    a->qpn = 0x11;
    b->qpn = 0x22;
  }
  Side& side(int i) { return i == 0 ? *a : *b; }

  // The link: what a side sends reaches the other with the sender as its source.
  void carry(int from, const Mad& mad) {
    const int k = sent_count++;
    MadHeader h;
    decode_header(mad.bytes.data(), &h);
    sent.push_back({from, h.attr_id, mad});
    if (drop_k.count(k)) return;
    auto key = std::make_pair(from, h.attr_id);
    if (auto it = drop_first.find(key); it != drop_first.end() && it->second > 0) {
      --it->second;
      return;
    }
    if (cut) return;
    Side& src = side(from);
    Mad m = mad;
    m.peer.gid = src.gid;
    m.peer.mac = src.mac;
    m.peer.remote_qpn = kGsiQpn;
    m.peer.sgid_index = 1;
    queue.emplace_back(1 - from, m);
    if (dup_k.count(k)) queue.emplace_back(1 - from, m);
  }
  void deliver() {
    while (!queue.empty()) {
      auto [to, m] = queue.front();
      queue.pop_front();
      side(to).cm.receive(m);
    }
  }
  // Delivers and runs both sides' timers until nothing is due before `limit_ns`.
  void settle(uint64_t limit_ns = kMaxFakeNs) {
    for (;;) {
      deliver();
      uint64_t t = std::min(a->cm.next_deadline(), b->cm.next_deadline());
      if (t == UINT64_MAX || t > limit_ns) return;
      if (t > clock_ns) clock_ns = t;
      a->cm.tick();
      b->cm.tick();
    }
  }
  int sent_of(int from, CmAttr attr) const {
    int n = 0;
    for (const auto& s : sent) n += s.from == from && s.attr == static_cast<uint16_t>(attr);
    return n;
  }

  CmReqParams req_params(const Side& from, const Side& to) const {
    CmReqParams p;
    p.path.sgid = from.gid;
    p.path.dgid = to.gid;
    p.path.dmac = to.mac;
    p.path.sgid_index = 1;
    p.path.mtu = 3;
    p.path.packet_life_time = 18;
    p.path.flow_label = 0x9b38f;
    p.service_id = kPsTcpService;
    p.qpn = from.qpn;
    p.starting_psn = 0xbdf10e;
    p.responder_resources = 1;
    p.initiator_depth = 1;
    p.private_data_len = 4;
    p.private_data[1] = 0x40;
    return p;
  }
  // B listens on rping's service, A connects; returns A's handle.
  CmHandle connect() {
    listen_b = b->cm.create_id(0xB0);
    b->cm.listen(listen_b, kPsTcpService, 0);
    CmHandle h = a->cm.create_id(0xA0);
    a->cm.send_req(h, req_params(*a, *b));
    settle(clock_ns + 1);  // the handshake only (no timer runs)
    return h;
  }

  uint64_t clock_ns = 1000;
  std::unique_ptr<Side> a, b;
  CmHandle listen_b = kNoCmHandle;
  std::deque<std::pair<int, Mad>> queue;
  std::vector<Sent> sent;
  int sent_count = 0;
  std::set<int> drop_k, dup_k;
  std::map<std::pair<int, uint16_t>, int> drop_first;  // (from, attr) -> how many more to drop
  bool cut = false;                                    // drop everything
};

inline bool Side::send_mad(const Mad& mad) {
  pair->carry(index, mad);
  return true;
}
inline uint64_t Side::now_ns() { return pair->clock_ns; }

inline void Side::cm_event(CmHandle h, const CmEvent& e) {
  events.emplace_back(h, e);
  if (on_event) {
    on_event(*this, h, e);
    return;
  }
  if (!auto_answer) return;
  switch (e.type) {
    case CmEventType::kReqReceived: {
      CmRepParams rep;
      rep.qpn = qpn;
      rep.starting_psn = 0x219679;
      rep.target_ack_delay = 15;
      rep.responder_resources = 1;
      rep.initiator_depth = 1;
      cm.send_rep(h, rep);
      break;
    }
    case CmEventType::kRepReceived: cm.send_rtu(h, nullptr, 0); break;
    case CmEventType::kDreqReceived: cm.send_drep(h, nullptr, 0); break;
    case CmEventType::kSidrReqReceived: {
      CmSidrRepParams rep;
      rep.qpn = qpn;
      rep.qkey = 0x01234567;
      cm.send_sidr_rep(h, rep);
      break;
    }
    default: break;
  }
}

}  // namespace burst::cm::test
