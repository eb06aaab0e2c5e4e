// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/wire/frame.h"

#include <cassert>
#include <cstring>
#include <iterator>

#include "core/enum_names.h"

namespace burst::wire {
namespace {

constexpr uint32_t kEthBytes = sizeof(EthHdr);
constexpr uint32_t kVlanBytes = sizeof(VlanHdr);
constexpr uint32_t kUdpBytes = sizeof(UdpHdr);

uint32_t l3_offset(const PathHeaders& path) { return kEthBytes + (path.has_vlan ? kVlanBytes : 0); }
uint32_t ip_header_bytes(const PathHeaders& path) {
  return path.ipv6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr);
}

constexpr const char* kRxDropNames[] = {"none",        "too_short",  "not_ip",   "bad_ip_header",
                                        "ip_fragment", "not_udp",    "not_roce", "bad_length",
                                        "bad_tver",    "bad_opcode", "bad_pad",  "bad_icrc"};
static_assert(std::size(kRxDropNames) == static_cast<size_t>(RxDrop::kCount));

}  // namespace

const char* rx_drop_name(RxDrop d) { return enum_name(kRxDropNames, d, "unknown"); }

namespace detail {

RxDrop parse_frame_general(const uint8_t* frame, uint32_t len, PacketView* out, bool verify_icrc) {
  if (len < kEthBytes) return RxDrop::kTooShort;
  uint16_t ethertype = load_be16(frame + 12);
  uint32_t l3 = kEthBytes;
  uint16_t vlan_tci = 0;
  if (ethertype == kEtherTypeVlan) {
    if (len < kEthBytes + kVlanBytes) return RxDrop::kTooShort;
    const auto& vlan = *reinterpret_cast<const VlanHdr*>(frame + kEthBytes);
    vlan_tci = vlan.tci();
    ethertype = vlan.ethertype();
    l3 += kVlanBytes;
  }

  const uint32_t l3_avail = len - l3;
  uint32_t ip_hdr;
  uint32_t ip_len;
  uint8_t ecn;
  bool ipv6;
  if (ethertype == kEtherTypeIpv4) {
    if (l3_avail < sizeof(Ipv4Hdr)) return RxDrop::kTooShort;
    const auto& ip = *reinterpret_cast<const Ipv4Hdr*>(frame + l3);
    if (ip.version() != 4 || ip.ihl() < 5) return RxDrop::kBadIpHeader;
    ip_hdr = ip.header_bytes();
    ip_len = ip.total_len();
    if (ip_len < ip_hdr) return RxDrop::kBadIpHeader;
    if (l3_avail < ip_len) return RxDrop::kTooShort;  // Ethernet padding past ip_len is fine
    if (ip.is_fragment()) return RxDrop::kIpFragment;
    if (ip.protocol() != kIpProtoUdp) return RxDrop::kNotUdp;
    ipv6 = false;
    ecn = ip.ecn();
  } else if (ethertype == kEtherTypeIpv6) {
    if (l3_avail < sizeof(Ipv6Hdr)) return RxDrop::kTooShort;
    const auto& ip = *reinterpret_cast<const Ipv6Hdr*>(frame + l3);
    if (ip.version() != 6) return RxDrop::kBadIpHeader;
    ip_hdr = sizeof(Ipv6Hdr);
    ip_len = ip_hdr + ip.payload_len();
    if (l3_avail < ip_len) return RxDrop::kTooShort;
    if (ip.next_header() != kIpProtoUdp) return RxDrop::kNotUdp;
    ipv6 = true;
    ecn = ip.ecn();
  } else {
    return RxDrop::kNotIp;
  }

  // From here on everything is inside [l3, l3 + ip_len), which is inside the frame.
  const uint32_t udp_off = l3 + ip_hdr;
  const uint32_t l4_len = ip_len - ip_hdr;
  if (l4_len < kUdpBytes) return RxDrop::kBadLength;
  const auto& udp = *reinterpret_cast<const UdpHdr*>(frame + udp_off);
  if (udp.dport() != kRoceV2Port) return RxDrop::kNotRoce;
  if (udp.len() != l4_len) return RxDrop::kBadLength;
  if (l4_len < kUdpBytes + sizeof(Bth) + kIcrcBytes) return RxDrop::kBadLength;

  const uint32_t bth_off = udp_off + kUdpBytes;
  const auto& bth = *reinterpret_cast<const Bth*>(frame + bth_off);
  if (bth.tver() != 0) return RxDrop::kBadTver;
  const uint8_t opcode = bth.opcode();
  const OpcodeInfo& info = opcode_info(opcode);
  if (!info.valid()) return RxDrop::kBadOpcode;
  if (l4_len < kUdpBytes + info.hdr_len + kIcrcBytes) return RxDrop::kBadLength;
  const uint32_t payload_and_pad = l4_len - kUdpBytes - info.hdr_len - kIcrcBytes;
  const uint32_t pad = bth.pad_count();
  // IBA: headers, payload and pad end on a 4-byte boundary (PadCnt exists for that).
  if (pad > payload_and_pad || (payload_and_pad & 3) != 0) return RxDrop::kBadPad;
  if (!(info.flags & kHasPayload) && payload_and_pad != 0) return RxDrop::kBadLength;
  if (verify_icrc && !icrc_verify(frame + l3, ip_len, ipv6)) return RxDrop::kBadIcrc;

  out->frame = frame;
  out->frame_len = len;
  out->vlan_tci = vlan_tci;
  out->has_vlan = l3 != kEthBytes;
  out->ipv6 = ipv6;
  out->l3_off = static_cast<uint16_t>(l3);
  out->udp_off = static_cast<uint16_t>(udp_off);
  out->bth_off = static_cast<uint16_t>(bth_off);
  out->payload_off = static_cast<uint16_t>(bth_off + info.hdr_len);
  out->payload_len = payload_and_pad - pad;
  out->opcode = opcode;
  out->ecn = ecn;
  out->info = &info;
  return RxDrop::kNone;
}

}  // namespace detail

uint32_t header_bytes(const PathHeaders& path, uint8_t opcode) {
  const OpcodeInfo& info = opcode_info(opcode);
  if (!info.valid()) return 0;
  return l3_offset(path) + ip_header_bytes(path) + kUdpBytes + info.hdr_len;
}

uint32_t frame_bytes(const PathHeaders& path, uint8_t opcode, uint32_t payload_len) {
  const uint32_t hdr = header_bytes(path, opcode);
  if (hdr == 0) return 0;
  return hdr + payload_len + detail::pad_for(payload_len) + kIcrcBytes;
}

FrameWriter::FrameWriter(uint8_t* buf, uint32_t cap, const PathHeaders& path, uint8_t opcode,
                         uint32_t payload_len)
    : buf_(buf), info_(&opcode_info(opcode)), payload_len_(payload_len) {
  const uint32_t l3 = l3_offset(path);
  uint32_t l4_len;
  if (!layout(cap, l3, path.ipv6, &l4_len)) return;
  const uint32_t ip_hdr = ip_header_bytes(path);

  auto& eth = *reinterpret_cast<EthHdr*>(buf);
  eth.set_dmac(path.dmac);
  eth.set_smac(path.smac);
  if (path.has_vlan) {
    eth.set_ethertype(kEtherTypeVlan);
    auto& vlan = *reinterpret_cast<VlanHdr*>(buf + kEthBytes);
    vlan.set_tci(path.vlan_tci);
    vlan.set_ethertype(path.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
  } else {
    eth.set_ethertype(path.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
  }

  if (path.ipv6) {
    auto& ip = *reinterpret_cast<Ipv6Hdr*>(buf + l3);
    ip.set_vtf(6, path.traffic_class, path.flow_label);
    ip.set_payload_len(static_cast<uint16_t>(l4_len));
    ip.set_next_header(kIpProtoUdp);
    ip.set_hop_limit(path.hop_limit);
    ip.set_saddr(path.sgid.data());
    ip.set_daddr(path.dgid.data());
  } else {
    auto& ip = *reinterpret_cast<Ipv4Hdr*>(buf + l3);
    ip.set_version_ihl(4, 5);
    ip.set_tos(path.traffic_class);
    ip.set_total_len(static_cast<uint16_t>(ip_hdr + l4_len));
    ip.set_id(0);
    ip.set_frag(kIpv4FlagDf);
    ip.set_ttl(path.hop_limit);
    ip.set_protocol(kIpProtoUdp);
    ip.set_checksum(0);
    ip.set_saddr(load_be32(path.sgid.data() + 12));
    ip.set_daddr(load_be32(path.dgid.data() + 12));
    // Checksum of the fields that finish() does not change, from values rather
    // than from the bytes just stored (reading those back stalls on the stores).
    const uint32_t saddr = load_be32(path.sgid.data() + 12);
    const uint32_t daddr = load_be32(path.dgid.data() + 12);
    ipv4_sum_ = (0x45u << 8 | path.traffic_class) + kIpv4FlagDf +
                (uint32_t{path.hop_limit} << 8 | kIpProtoUdp) + (saddr >> 16) + (saddr & 0xFFFF) +
                (daddr >> 16) + (daddr & 0xFFFF);
  }

  auto& udp = *reinterpret_cast<UdpHdr*>(buf + l3 + ip_hdr);
  udp.set_sport(path.udp_sport);
  udp.set_dport(kRoceV2Port);
  udp.set_len(static_cast<uint16_t>(l4_len));
  udp.set_checksum(0);

  start_bth(opcode);
}

void build_template(const PathHeaders& path, HeaderTemplate* t) {
  // The headers a FrameWriter builds from the path, taken from a frame with no
  // payload; the length fields in them are overwritten by every finish().
  uint8_t scratch[HeaderTemplate::kMaxBytes + 64];
  FrameWriter w(scratch, sizeof(scratch), path, op::kRcAcknowledge, 0);
  *t = HeaderTemplate{};
  if (!w.ok()) return;
  std::memcpy(t->bytes, scratch, w.bth_off_);
  t->len = static_cast<uint8_t>(w.bth_off_);
  t->l3_off = static_cast<uint8_t>(w.l3_off_);
  t->ipv6 = path.ipv6;
  t->ipv4_sum = w.ipv4_sum_;
}

}  // namespace burst::wire
