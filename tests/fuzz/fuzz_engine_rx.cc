// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libFuzzer target for the transport's receive handlers. Parsing alone is
// covered by fuzz_parse_frame; here the fuzzer drives the responder, completer
// and UD receive paths with frames that pass parse_frame (valid ICRC), so the
// state machines see arbitrary opcode sequences, PSNs, RETH/AETH/AtomicETH
// contents and payloads, interleaved with the engine's own transmit and timers.
//
// Input: a sequence of records
//   [opcode][flags][psn_delta][len_lo][len_hi][28 bytes of extension headers][len payload bytes]
// flags bit 0..1: destination (RC QP, UD QP, GSI-less random QPN, the RC peer's QPN)
//       bit 2: point RETH/AtomicETH at the registered buffer (valid rkey, in-bounds va)
//       bit 3: feed the record raw, as a whole frame, instead of building it
//       bit 4: advance the clock by a retransmit timeout after the record
//       bit 5: post a send WR on the RC QP before the record (requester state)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/mr.h"
#include "core/wire/frame.h"
#include "core/wire/opcode.h"

namespace {

using namespace burst;

constexpr uint32_t kExtBytes = 28;
constexpr uint32_t kBufBytes = 1 << 16;

struct Harness {
  core::MrTable mrs;
  core::CopyEngine copier;
  core::Engine engine;
  uint32_t pd = 0, cq = 0, rc = 0, ud = 0;
  uint32_t lkey = 0, rkey = 0;
  alignas(64) uint8_t buf[kBufBytes];
  wire::PathHeaders path{};  // peer -> engine

  static core::EngineConfig config() {
    core::EngineConfig c;
    c.port.mac = {2, 0, 0, 0, 0, 1};
    c.port.gids = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}};
    c.port.l2_mtu = 9014;
    c.max_qps = 8;
    c.max_cqs = 4;
    return c;
  }

  Harness() : mrs(16, 4), engine(config(), mrs, copier) {
    pd = mrs.alloc_pd();
    (void)engine.create_cq(64, &cq);
    (void)mrs.reg_mr(pd, buf, reinterpret_cast<uint64_t>(buf), kBufBytes,
                     core::kAccessLocalWrite | core::kAccessRemoteWrite | core::kAccessRemoteRead |
                         core::kAccessRemoteAtomic,
                     &lkey, &rkey);
    core::QpInitAttr ia;
    ia.pd = pd;
    ia.send_cq = ia.recv_cq = cq;
    ia.cap.max_send_wr = 16;
    ia.cap.max_recv_wr = 16;
    ia.type = core::QpType::kRc;
    (void)engine.create_qp(ia, &rc);
    ia.type = core::QpType::kUd;
    (void)engine.create_qp(ia, &ud);

    core::QpAttr a;
    a.qp_state = core::QpState::kInit;
    a.port_num = 1;
    a.qp_access_flags =
        core::kAccessRemoteWrite | core::kAccessRemoteRead | core::kAccessRemoteAtomic;
    (void)engine.modify_qp(
        rc, a, core::kQpState | core::kQpPkeyIndex | core::kQpPort | core::kQpAccessFlags);
    a = {};
    a.qp_state = core::QpState::kRtr;
    a.path_mtu = core::Mtu::k1024;
    a.dest_qp_num = 0x77;
    a.rq_psn = 100;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 1;
    a.ah.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
    a.ah.dmac = {2, 0, 0, 0, 0, 2};
    (void)engine.modify_qp(rc, a,
                           core::kQpState | core::kQpAv | core::kQpPathMtu | core::kQpDestQpn |
                               core::kQpRqPsn | core::kQpMaxDestRdAtomic | core::kQpMinRnrTimer);
    a = {};
    a.qp_state = core::QpState::kRts;
    a.sq_psn = 500;
    a.timeout = 4;
    a.retry_cnt = 2;
    a.rnr_retry = 2;
    a.max_rd_atomic = 4;
    (void)engine.modify_qp(rc, a,
                           core::kQpState | core::kQpSqPsn | core::kQpQpTimeout |
                               core::kQpRetryCnt | core::kQpRnrRetry | core::kQpMaxQpRdAtomic);
    a = {};
    a.qp_state = core::QpState::kInit;
    a.qkey = 0x1234;
    a.port_num = 1;
    (void)engine.modify_qp(ud, a,
                           core::kQpState | core::kQpPkeyIndex | core::kQpPort | core::kQpQkey);
    a.qp_state = core::QpState::kRtr;
    (void)engine.modify_qp(ud, a, core::kQpState);
    a.qp_state = core::QpState::kRts;
    a.sq_psn = 1;
    (void)engine.modify_qp(ud, a, core::kQpState | core::kQpSqPsn);
    for (int i = 0; i < 8; ++i) {
      core::RecvWr rw;
      rw.wr_id = static_cast<uint64_t>(i);
      rw.num_sge = 1;
      rw.sg_list[0] = {reinterpret_cast<uint64_t>(buf) + 2048u * static_cast<unsigned>(i), 2048,
                       lkey};
      (void)engine.post_recv(rc, rw);
      (void)engine.post_recv(ud, rw);
    }
    path.smac = {2, 0, 0, 0, 0, 2};
    path.dmac = {2, 0, 0, 0, 0, 1};
    path.sgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
    path.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
    path.hop_limit = 64;
    path.udp_sport = 0xC000;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Harness h;
  static std::vector<uint8_t> frame(16384), out(16384 * 8);
  uint64_t now = 1'000'000;
  uint32_t psn_base[2] = {100, 500};
  size_t pos = 0;
  int records = 0;
  while (pos + 5 + kExtBytes <= size && records++ < 64) {
    const uint8_t opcode = data[pos];
    const uint8_t flags = data[pos + 1];
    const uint8_t psn_delta = data[pos + 2];
    uint32_t len = data[pos + 3] | (uint32_t{data[pos + 4]} << 8);
    const uint8_t* ext = data + pos + 5;
    pos += 5 + kExtBytes;
    len = static_cast<uint32_t>(std::min<size_t>({len, size - pos, 4200}));
    const uint8_t* payload = data + pos;
    pos += len;

    if (flags & 0x20) {
      core::SendWr wr;
      wr.wr_id = pos;
      wr.opcode = static_cast<core::WrOpcode>(ext[0] % 7);
      wr.send_flags = core::kSendSignaled;
      wr.num_sge = 1;
      const uint32_t off = ext[1] * 64u;
      wr.sg_list[0] = {reinterpret_cast<uint64_t>(h.buf) + off, ext[2] * 16u + 8u, h.lkey};
      wr.rdma = {0x1000u + ext[3], 0x99};
      wr.atomic = {0x2000u, 1, 2, 0x99};
      (void)h.engine.post_send(h.rc, wr);
    }

    uint32_t flen = 0;
    if (flags & 0x08) {
      flen = std::min<uint32_t>(len, static_cast<uint32_t>(frame.size()));
      std::memcpy(frame.data(), payload, flen);
    } else {
      wire::FrameWriter w(frame.data(), static_cast<uint32_t>(frame.size()), h.path, opcode, len);
      if (!w.ok()) continue;
      const wire::OpcodeInfo& info = wire::opcode_info(opcode);
      // Raw extension header bytes straight from the input.
      const uint32_t ext_len = info.hdr_len > 12 ? info.hdr_len - 12u : 0u;
      std::memcpy(reinterpret_cast<uint8_t*>(&w.bth()) + 12, ext, std::min(ext_len, kExtBytes));
      uint32_t qpn;
      switch (flags & 3) {
        case 0:
          qpn = h.rc;
          break;
        case 1:
          qpn = h.ud;
          break;
        case 2:
          qpn = (uint32_t{ext[4]} << 16) | (uint32_t{ext[5]} << 8) | ext[6];
          break;
        default:
          qpn = 1;
          break;
      }
      w.bth().set_dest_qpn(qpn);
      const bool response = info.flags & wire::kResponse;
      w.bth().set_psn(wire::Psn(psn_base[response ? 1 : 0] + psn_delta - 16));
      w.bth().set_ack_req(ext[7] & 1);
      if (flags & 0x04) {
        const uint64_t va = reinterpret_cast<uint64_t>(h.buf) + (ext[8] * 256u);
        if (info.off_reth) {
          w.reth().set_va(va);
          w.reth().set_rkey(h.rkey);
          w.reth().set_dma_len(std::min<uint32_t>(w.reth().dma_len(), 8192));
        }
        if (info.off_atomic_eth) {
          w.atomic_eth().set_va(va & ~uint64_t{7});
          w.atomic_eth().set_rkey(h.rkey);
        }
      }
      if (info.off_deth && (ext[9] & 1)) w.deth().set_qkey(0x1234);
      if (len) std::memcpy(w.payload(), payload, len);
      flen = w.finish();
      if (response && psn_delta == 16) ++psn_base[1];
      if (!response && psn_delta == 16) ++psn_base[0];
    }
    burst::datapath::Frame f{frame.data(), flen, static_cast<uint32_t>(frame.size()), 0};
    h.engine.rx_burst(&f, 1, now);
    if (flags & 0x10) now += 100'000;
    now += 1000;
    h.engine.tick(now);
    // Drain everything the engine wants to send.
    for (int round = 0; round < 8 && h.engine.tx_pending(); ++round) {
      burst::datapath::Frame bufs[8];
      for (int i = 0; i < 8; ++i) bufs[i] = {out.data() + 16384 * i, 0, 16384, 0};
      if (h.engine.tx_build(bufs, 8, now) == 0) break;
    }
    core::Wc wc[16];
    while (h.engine.poll_cq(h.cq, wc, 16) > 0) {
    }
  }
  return 0;
}
