// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libFuzzer target for the IB CM (cm/ib_cm.h): arbitrary MADs into an IbCm
// that listens on the RDMA-CM TCP and UDP services of port 7174 and answers as
// cma would (REQ -> REP, REP -> RTU, DREQ -> DREP, SIDR_REQ -> SIDR_REP), with
// an active connection of its own and timers running between MADs, so the
// state machines see any order of REQ/MRA/REJ/REP/RTU/DREQ/DREP/SIDR/LAP.
//
// Input: a captured RoCEv2 frame (the seed corpus: its MAD is the 256 bytes
// after BTH + DETH) or raw bytes, cut into 256-byte MADs (the last one padded
// with zeros). After each MAD the clock advances by (its last byte & 15) s.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cm/ib_cm.h"

namespace {

using namespace burst::cm;

struct Host : IbCmHost {
  IbCm* cm = nullptr;
  uint64_t clock_ns = 1;
  std::vector<CmHandle> ids;
  bool send_mad(const Mad&) override { return true; }
  uint64_t now_ns() override { return clock_ns; }
  void cm_event(CmHandle h, const CmEvent& e) override {
    switch (e.type) {
      case CmEventType::kReqReceived: {
        ids.push_back(h);
        CmRepParams rep;
        rep.qpn = 0x22;
        cm->send_rep(h, rep);
        break;
      }
      case CmEventType::kRepReceived: cm->send_rtu(h, nullptr, 0); break;
      case CmEventType::kDreqReceived: cm->send_drep(h, nullptr, 0); break;
      case CmEventType::kSidrReqReceived: {
        ids.push_back(h);
        CmSidrRepParams rep;
        rep.qpn = 0x23;
        cm->send_sidr_rep(h, rep);
        break;
      }
      case CmEventType::kRejReceived:
        if (h % 3 == 0) cm->destroy_id(h);  // destroy from inside an event, sometimes
        break;
      default: break;
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t kFrameMad = 14 + 20 + 8 + 12 + 8;
  if (size >= kFrameMad + kMadSize + 4 && data[12] == 0x08 && data[13] == 0x00 &&
      data[14 + 20 + 8] == 0x64) {
    data += kFrameMad;  // a seed frame: its MAD
    size -= kFrameMad + 4;
  }
  Host host;
  IbCm cm(host, 0x505400fffe990001, 1);
  host.cm = &cm;
  Gid peer{};
  peer[10] = peer[11] = 0xFF;
  peer[12] = 10;
  peer[13] = 99;
  peer[15] = 12;
  CmHandle l1 = cm.create_id(1), l2 = cm.create_id(2), a = cm.create_id(3);
  cm.listen(l1, 0x0000000001061c06, 0);
  cm.listen(l2, 0x0000000001111c06, 0);
  CmReqParams req;
  req.path.dgid = peer;
  req.path.packet_life_time = 18;
  req.service_id = 0x0000000001061c06;
  req.qpn = 0x11;
  cm.send_req(a, req);
  for (size_t off = 0; off < size; off += kMadSize) {
    Mad m;
    std::memcpy(m.bytes.data(), data + off, size - off < kMadSize ? size - off : kMadSize);
    m.peer.gid = peer;
    cm.receive(m);
    host.clock_ns += static_cast<uint64_t>(m.bytes[kMadSize - 1] & 15) * 1000000000;
    cm.tick();
  }
  host.clock_ns += 3600ull * 1000000000;
  for (int i = 0; i < 40 && cm.next_deadline() != UINT64_MAX; ++i) {
    host.clock_ns = cm.next_deadline();
    cm.tick();
  }
  for (CmHandle h : host.ids) cm.destroy_id(h);
  for (CmHandle h : {l1, l2, a}) cm.destroy_id(h);
  return 0;
}
