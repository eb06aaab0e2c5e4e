// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libFuzzer target: parse_frame on arbitrary bytes, with and without ICRC
// verification. Every accessor of an accepted PacketView is exercised, its
// invariants are checked, and the packet is rebuilt with FrameWriter and parsed
// again: the rebuilt frame must parse to the same fields.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/wire/frame.h"

namespace burst::wire {
namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// Reads every field so ASan/UBSan see every access; returns a digest.
uint64_t touch(const PacketView& v) {
  uint64_t h = v.frame_len ^ v.vlan_tci ^ v.has_vlan ^ v.ipv6 ^ v.ecn ^ v.udp_sport() ^ v.opcode;
  const Bth& b = v.bth();
  h += b.opcode() + b.se() + b.mig_req() + b.pad_count() + b.tver() + b.pkey() + b.fecn() +
       b.becn() + b.dest_qpn() + b.ack_req() + b.psn().value();
  if (const Reth* r = v.reth()) h += r->va() + r->rkey() + r->dma_len();
  if (const Aeth* a = v.aeth()) h += a->syndrome() + a->msn() + a->syn().value();
  if (const AtomicEth* a = v.atomic_eth()) h += a->va() + a->rkey() + a->swap_add() + a->compare();
  if (const AtomicAckEth* a = v.atomic_ack()) h += a->orig();
  if (const ImmDt* i = v.immdt()) h += i->imm();
  if (const Ieth* i = v.ieth()) h += i->rkey();
  if (const Deth* d = v.deth()) h += d->qkey() + d->src_qpn();
  for (uint8_t x : v.sgid()) h = h * 31 + x;
  for (uint8_t x : v.dgid()) h = h * 31 + x;
  for (uint8_t x : v.smac()) h = h * 31 + x;
  for (uint8_t x : v.dmac()) h = h * 31 + x;
  const uint8_t* p = v.payload();
  for (uint32_t i = 0; i < v.payload_len + v.pad_count() + kIcrcBytes; ++i) h = h * 31 + p[i];
  return h;
}

void check_invariants(const PacketView& v, const uint8_t* data, uint32_t size, bool verified) {
  check(v.frame == data && v.frame_len == size);
  check(v.info != nullptr && v.info->valid() && v.info == &opcode_info(v.opcode));
  check(v.bth().opcode() == v.opcode && v.bth().tver() == 0);
  check(v.l3_off == (v.has_vlan ? 18 : 14));
  check(v.udp_off > v.l3_off && v.bth_off == v.udp_off + 8);
  check(v.payload_off == v.bth_off + v.info->hdr_len);
  check(uint64_t{v.payload_off} + v.payload_len + v.pad_count() + kIcrcBytes ==
        uint64_t{v.l3_off} + v.l3_len());
  check(uint64_t{v.l3_off} + v.l3_len() <= size);
  check(v.ecn <= 3);
  if (!(v.info->flags & kHasPayload)) check(v.payload_len == 0);
  if (verified) check(icrc_verify(data + v.l3_off, v.l3_len(), v.ipv6));
}

// Rebuilds the packet from the parsed fields and checks that it parses back to
// the same packet.
void check_rebuild(const PacketView& v) {
  PathHeaders path{};
  path.smac = v.smac();
  path.dmac = v.dmac();
  path.has_vlan = v.has_vlan;
  path.vlan_tci = v.vlan_tci;
  path.ipv6 = v.ipv6;
  path.sgid = v.sgid();
  path.dgid = v.dgid();
  path.udp_sport = v.udp_sport();
  const uint8_t* l3 = v.frame + v.l3_off;
  if (v.ipv6) {
    const auto& ip = *reinterpret_cast<const Ipv6Hdr*>(l3);
    path.traffic_class = ip.traffic_class();
    path.hop_limit = ip.hop_limit();
    path.flow_label = ip.flow_label();
  } else {
    const auto& ip = *reinterpret_cast<const Ipv4Hdr*>(l3);
    path.traffic_class = ip.tos();
    path.hop_limit = ip.ttl();
  }
  const uint32_t n = frame_bytes(path, v.opcode, v.payload_len);
  check(n != 0);
  std::vector<uint8_t> out(n);
  FrameWriter w(out.data(), n, path, v.opcode, v.payload_len);
  check(w.ok());
  const Bth& s = v.bth();
  Bth& b = w.bth();
  b.set_se(s.se());
  b.set_mig_req(s.mig_req());
  b.set_pkey(s.pkey());
  b.set_fecn(s.fecn());
  b.set_becn(s.becn());
  b.set_dest_qpn(s.dest_qpn());
  b.set_ack_req(s.ack_req());
  b.set_psn(s.psn());
  // Extension headers and payload: copied as bytes (their field accessors are
  // covered by touch()).
  const uint32_t ext_len = v.info->hdr_len - sizeof(Bth);
  std::memcpy(w.payload() - ext_len, v.frame + v.bth_off + sizeof(Bth), ext_len);
  std::memcpy(w.payload(), v.payload(), v.payload_len);
  check(w.finish() == n);

  PacketView r{};
  check(parse_frame(out.data(), n, &r, true) == RxDrop::kNone);
  check(r.opcode == v.opcode && r.payload_len == v.payload_len && r.ipv6 == v.ipv6 &&
        r.has_vlan == v.has_vlan && r.vlan_tci == v.vlan_tci && r.sgid() == v.sgid() &&
        r.dgid() == v.dgid() && r.smac() == v.smac() && r.dmac() == v.dmac() &&
        r.udp_sport() == v.udp_sport() && r.ecn == v.ecn);
  check(r.bth().psn() == s.psn() && r.bth().dest_qpn() == s.dest_qpn() &&
        r.bth().pad_count() == s.pad_count());
  check(std::memcmp(r.frame + r.bth_off + sizeof(Bth), v.frame + v.bth_off + sizeof(Bth),
                    ext_len + v.payload_len) == 0);
}

}  // namespace
}  // namespace burst::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace burst::wire;
  if (size > 0x20000) return -1;  // larger than any frame; keeps runs fast
  const auto len = static_cast<uint32_t>(size);
  static volatile uint64_t sink;
  for (bool verify : {true, false}) {
    PacketView v{};
    const RxDrop r = parse_frame(data, len, &v, verify);
    check(static_cast<int>(r) < static_cast<int>(RxDrop::kCount));
    check(rx_drop_name(r) != nullptr);
    if (r != RxDrop::kNone) continue;
    check_invariants(v, data, len, verify);
    sink = sink + touch(v);
    check_rebuild(v);
  }
  return 0;
}
