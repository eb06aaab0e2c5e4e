/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Whole RoCEv2 frames: parse (RX) and build (TX).
//
// Frame layout: Ethernet [802.1Q] | IPv4 (IHL honoured) or IPv6 | UDP (dport 4791)
//               | BTH | extension headers (per opcode) | payload | pad (0-3) | ICRC (4)
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/wire/aeth.h"
#include "core/wire/atomic_eth.h"
#include "core/wire/bth.h"
#include "core/wire/deth.h"
#include "core/wire/eth.h"
#include "core/wire/icrc.h"
#include "core/wire/ieth.h"
#include "core/wire/immdt.h"
#include "core/wire/ipv4.h"
#include "core/wire/ipv6.h"
#include "core/wire/opcode.h"
#include "core/wire/reth.h"
#include "core/wire/udp.h"

namespace burst::wire {

using Gid = std::array<uint8_t, 16>;

// Every reason parse_frame() drops a frame; kCount sizes counter arrays.
enum class RxDrop : uint8_t {
  kNone = 0,
  kTooShort,     // the frame ends before a header (or the IP datagram) ends
  kNotIp,        // EtherType is neither IPv4 nor IPv6 (after at most one 802.1Q tag)
  kBadIpHeader,  // IP version, IHL or IP length field inconsistent
  kIpFragment,   // IPv4 MF set or fragment offset non-zero
  kNotUdp,       // IP protocol / next header is not UDP
  kNotRoce,      // UDP destination port is not 4791
  kBadLength,    // UDP length vs IP length, or opcode headers / ICRC do not fit
  kBadTver,      // BTH transport header version is not 0
  kBadOpcode,    // opcode not in the table (RD, XRC, reserved ...)
  kBadPad,       // pad count larger than the payload, or payload + pad not a multiple of 4
  kBadIcrc,      // ICRC mismatch
  kCount
};
const char* rx_drop_name(RxDrop d);

// A parsed frame. Offsets are from the start of the frame; pointers point into
// the frame, which must outlive the view. Valid only when parse_frame returned
// RxDrop::kNone (on a drop, the fields are unspecified).
//
// Only offsets and small scalars are stored: the addresses (MACs, source and
// destination IP as GIDs) and the UDP source port are read from the frame when
// asked for, so parsing does not copy them for every packet.
struct PacketView {
  const uint8_t* frame;
  uint32_t frame_len;  // bytes received (may include Ethernet padding past the IP datagram)
  uint16_t vlan_tci;
  bool has_vlan;
  bool ipv6;
  uint16_t l3_off, udp_off, bth_off, payload_off;
  uint32_t payload_len;  // excluding pad and ICRC
  uint8_t opcode;
  uint8_t ecn;  // 2-bit ECN from IPv4 TOS / IPv6 traffic class (CE = 3)
  const OpcodeInfo* info;

  // Source/destination IP as GIDs (IPv4 as ::ffff:a.b.c.d); copies.
  Gid sgid() const { return gid_at(ipv6 ? kIpv6SaddrOffset : kIpv4SaddrOffset); }
  Gid dgid() const { return gid_at(ipv6 ? kIpv6DaddrOffset : kIpv4DaddrOffset); }
  // True when the source address equals g (IPv4: g is ::ffff:a.b.c.d); compares
  // in place, without building a GID.
  bool sgid_is(const Gid& g) const;
  MacAddr dmac() const { return reinterpret_cast<const EthHdr*>(frame)->dmac(); }
  MacAddr smac() const { return reinterpret_cast<const EthHdr*>(frame)->smac(); }
  uint16_t udp_sport() const { return reinterpret_cast<const UdpHdr*>(frame + udp_off)->sport(); }

  // Untagged IPv4 without options (the layout same_ipv4_flow() expects).
  bool plain_ipv4() const {
    return l3_off == sizeof(EthHdr) && !ipv6 && udp_off == sizeof(EthHdr) + sizeof(Ipv4Hdr);
  }

  const Bth& bth() const { return *reinterpret_cast<const Bth*>(frame + bth_off); }
  // Extension headers: nullptr when the opcode does not carry them.
  const Reth* reth() const { return ext<Reth>(info->off_reth); }
  const Aeth* aeth() const { return ext<Aeth>(info->off_aeth); }
  const AtomicEth* atomic_eth() const { return ext<AtomicEth>(info->off_atomic_eth); }
  const AtomicAckEth* atomic_ack() const { return ext<AtomicAckEth>(info->off_atomic_ack); }
  const ImmDt* immdt() const { return ext<ImmDt>(info->off_immdt); }
  const Ieth* ieth() const { return ext<Ieth>(info->off_ieth); }
  const Deth* deth() const { return ext<Deth>(info->off_deth); }
  const uint8_t* payload() const { return frame + payload_off; }
  uint8_t pad_count() const { return bth().pad_count(); }
  // IP header through ICRC (what the ICRC covers, plus the ICRC).
  uint32_t l3_len() const {
    return bth_off + info->hdr_len + payload_len + pad_count() + kIcrcBytes - l3_off;
  }

 private:
  static constexpr uint32_t kIpv4SaddrOffset = 12;
  static constexpr uint32_t kIpv4DaddrOffset = 16;
  static constexpr uint32_t kIpv6SaddrOffset = 8;
  static constexpr uint32_t kIpv6DaddrOffset = 24;

  Gid gid_at(uint32_t ip_off) const {
    Gid g{};
    const uint8_t* a = frame + l3_off + ip_off;
    if (ipv6) {
      std::memcpy(g.data(), a, 16);
    } else {
      g[10] = 0xFF;
      g[11] = 0xFF;
      std::memcpy(g.data() + 12, a, 4);
    }
    return g;
  }
  template <class H>
  const H* ext(uint8_t off) const {
    return off == 0 ? nullptr : reinterpret_cast<const H*>(frame + bth_off + off);
  }
};

inline bool PacketView::sgid_is(const Gid& g) const {
  const uint8_t* a = frame + l3_off;
  uint64_t g_lo, g_hi, a_lo, a_hi;
  std::memcpy(&g_lo, g.data(), 8);
  std::memcpy(&g_hi, g.data() + 8, 8);
  if (ipv6) {
    std::memcpy(&a_lo, a + kIpv6SaddrOffset, 8);
    std::memcpy(&a_hi, a + kIpv6SaddrOffset + 8, 8);
    return ((g_lo ^ a_lo) | (g_hi ^ a_hi)) == 0;
  }
  // ::ffff:a.b.c.d: bytes 0..7 zero, then 00 00 FF FF and the address.
  uint8_t m[8] = {0, 0, 0xFF, 0xFF};
  std::memcpy(m + 4, a + kIpv4SaddrOffset, 4);
  uint64_t mapped;
  std::memcpy(&mapped, m, 8);
  return (g_lo | (g_hi ^ mapped)) == 0;
}

// Parses and validates a frame; reads only [frame, frame + len). On kNone, *out
// describes the packet. verify_icrc = false skips only the ICRC check.
inline RxDrop parse_frame(const uint8_t* frame, uint32_t len, PacketView* out,
                          bool verify_icrc = true);

namespace detail {
// Every frame layout, every drop reason.
RxDrop parse_frame_general(const uint8_t* frame, uint32_t len, PacketView* out, bool verify_icrc);
}  // namespace detail

// The common frame, untagged IPv4 without options, is checked with a few wide
// loads and a single branch on the combined result; any other frame, and any
// frame that fails a check, goes to the general parser, which makes the same
// checks one by one and names the drop reason. Both accept exactly the same
// frames and fill *out the same way (tests/unit/wire compares them).
[[gnu::always_inline]] inline RxDrop parse_frame(const uint8_t* frame, uint32_t len,
                                                 PacketView* out, bool verify_icrc) {
  constexpr uint32_t kL3 = sizeof(EthHdr);
  constexpr uint32_t kUdp = kL3 + sizeof(Ipv4Hdr);
  constexpr uint32_t kBth = kUdp + sizeof(UdpHdr);
  constexpr uint32_t kMin = kBth + sizeof(Bth) + kIcrcBytes;
  if (len < kMin) return detail::parse_frame_general(frame, len, out, verify_icrc);
  // EtherType | version, IHL | TOS
  const uint32_t eth_ip = load_be32(frame + 12);
  const uint32_t ip_len = load_be16(frame + kL3 + 2);
  // flags, fragment offset | TTL | protocol
  const uint32_t frag_proto = load_be32(frame + kL3 + 6);
  // destination port | UDP length
  const uint32_t port_len = load_be32(frame + kUdp + 2);
  const uint8_t opcode = frame[kBth];
  const uint32_t bth_flags = frame[kBth + 1];
  const OpcodeInfo& info = opcode_info(opcode);
  const uint32_t l4_len = ip_len - sizeof(Ipv4Hdr);
  const uint32_t pad = (bth_flags >> 4) & 3;
  // Underflows when l4_len is too short; the check on l4_len catches that.
  const uint32_t payload_and_pad = l4_len - sizeof(UdpHdr) - info.hdr_len - kIcrcBytes;
  const bool bad = ((eth_ip & 0xFFFFFF00u) != (uint32_t{kEtherTypeIpv4} << 16 | 0x4500u)) |
                   (ip_len > len - kL3) |
                   ((frag_proto & ((uint32_t{kIpv4FlagMf} | kIpv4FragOffsetMask) << 16 | 0xFFu)) !=
                    kIpProtoUdp) |
                   (port_len != (uint32_t{kRoceV2Port} << 16 | (l4_len & 0xFFFFu))) |
                   (ip_len < sizeof(Ipv4Hdr) + sizeof(UdpHdr) + info.hdr_len + kIcrcBytes) |
                   ((bth_flags & 0x0F) != 0) | !info.valid() | (pad > payload_and_pad) |
                   ((payload_and_pad & 3) != 0) |
                   (!(info.flags & kHasPayload) & (payload_and_pad != 0));
  if (bad) return detail::parse_frame_general(frame, len, out, verify_icrc);
  out->frame = frame;
  out->frame_len = len;
  out->vlan_tci = 0;
  out->has_vlan = false;
  out->ipv6 = false;
  out->l3_off = kL3;
  out->udp_off = kUdp;
  out->bth_off = kBth;
  out->payload_off = static_cast<uint16_t>(kBth + info.hdr_len);
  out->payload_len = payload_and_pad - pad;
  out->opcode = opcode;
  out->ecn = static_cast<uint8_t>(eth_ip & 3);
  out->info = &info;
  // Last, so that nothing else is live across the call (*out is unspecified on a drop).
  if (verify_icrc && !icrc_verify(frame + kL3, ip_len, false)) return RxDrop::kBadIcrc;
  return RxDrop::kNone;
}

// Header prediction for a run of frames of one flow. a is a frame that
// parse_frame accepted as untagged IPv4 without options (l3_off 14, udp_off 34);
// b is another frame of the same length. True when b has the same bytes as a in
// [0, kSameFlowBytes) except the fields that change from packet to packet of a
// flow: IPv4 identification and header checksum, BTH byte 4 (FECN/BECN), the
// AckReq byte and the PSN. Every byte parse_frame reads (up to the BTH
// flags), the source address, P_Key, destination QP and opcode are compared, so
// parse_frame(b) would accept b and describe it exactly as a (with frame = b),
// except for the ICRC, which the caller still checks. Reads kSameFlowBytes of
// each frame: parse_frame accepted only frames longer than that.
constexpr uint32_t kSameFlowBytes = 54;  // Ethernet, IPv4, UDP, BTH
bool same_ipv4_flow(const uint8_t* a, const uint8_t* b);

// Everything below the BTH for one destination (precomputed per QP / AH).
struct PathHeaders {
  MacAddr smac, dmac;
  uint16_t vlan_tci;
  bool has_vlan;
  bool ipv6;
  Gid sgid, dgid;         // IPv4 when ipv6 == false: bytes 12..15 are the address (::ffff:a.b.c.d)
  uint8_t traffic_class;  // IPv4 TOS / IPv6 traffic class, ECN bits included
  uint8_t hop_limit;      // IPv4 TTL / IPv6 hop limit
  uint32_t flow_label;    // IPv6 only (20 bits)
  uint16_t udp_sport;
};

// PathHeaders prebuilt as bytes, once per destination (per RC QP at modify_qp):
// the Ethernet (+802.1Q), IP and UDP headers with every field that does not
// depend on the packet. FrameWriter copies them instead of building them field
// by field; the lengths and the IPv4 checksum are filled in by finish(). The
// frames are byte for byte those built from the PathHeaders.
struct HeaderTemplate {
  static constexpr uint32_t kMaxBytes = 14 + 4 + 40 + 8;  // Ethernet, 802.1Q, IPv6, UDP
  uint8_t bytes[kMaxBytes];
  uint8_t len = 0;  // bytes before the BTH; 0 = not built
  uint8_t l3_off = 0;
  bool ipv6 = false;
  uint32_t ipv4_sum = 0;  // one's complement sum of the IPv4 fields finish() leaves alone
};
void build_template(const PathHeaders& path, HeaderTemplate* t);

// The headers of one kind of frame (destination, opcode, payload length) as a
// FrameWriter constructor leaves them, saved by FrameWriter::save() so that the
// next frame of that kind is started with a copy (a stream of RDMA WRITE
// MIDDLE packets is one kind). Empty (never matches) until saved.
struct FrameTemplate {
  static constexpr uint32_t kMaxBytes = 128;  // headers incl. BTH + extension headers, rounded
  uint8_t bytes[kMaxBytes];
  uint8_t hdr_len = 0;  // bytes from the Ethernet header to the payload; 0 = empty
  uint8_t opcode = 0;
  uint8_t pad = 0;
  bool ipv6 = false;
  uint32_t payload_len = 0;
  uint32_t frame_len = 0;
  uint16_t l3_off = 0, bth_off = 0;
  uint32_t ipv4_sum = 0;

  bool matches(uint8_t op, uint32_t len) const {
    return hdr_len != 0 && opcode == op && payload_len == len;
  }
};

// Bytes from the Ethernet header to the end of the extension headers; 0 for an
// invalid opcode.
uint32_t header_bytes(const PathHeaders& path, uint8_t opcode);

// Bytes of a whole frame with payload_len payload bytes (headers, payload, pad,
// ICRC); 0 for an invalid opcode.
uint32_t frame_bytes(const PathHeaders& path, uint8_t opcode, uint32_t payload_len);

// Two-phase build: the constructor writes Ethernet (+802.1Q), IP, UDP (dport
// 4791, sport from the path), a BTH with the opcode, TVer 0, P_Key 0xFFFF and
// every other field 0, and zeroes the extension headers (from a HeaderTemplate,
// the IP and UDP length fields and the IPv4 checksum are left to finish()). The
// caller then sets BTH fields (dest QPN, PSN, AckReq, SE ...) and extension
// headers, fills payload(), and calls finish().
//
// ok() is false (and nothing was written to buf) when the opcode is invalid, it
// carries no payload but payload_len > 0, the frame would exceed the IP length
// limit, or cap < headers + payload + pad + ICRC. Header accessors of a writer
// that is not ok(), or for a header the opcode lacks (asserted in debug builds),
// return a scratch object inside the writer, never memory outside the frame.
class FrameWriter {
 public:
  FrameWriter(uint8_t* buf, uint32_t cap, const PathHeaders& path, uint8_t opcode,
              uint32_t payload_len);
  // The same frame from a template built by build_template() (ok() is false for
  // a template that was not built).
  FrameWriter(uint8_t* buf, uint32_t cap, const HeaderTemplate& tmpl, uint8_t opcode,
              uint32_t payload_len);
  // The same frame as the writer that saved `tmpl` started (ok() is false for an
  // empty template or when cap is too small).
  FrameWriter(uint8_t* buf, uint32_t cap, const FrameTemplate& tmpl);
  // Saves the headers as the constructor wrote them; call before any edit.
  // Nothing is saved when !ok().
  void save(FrameTemplate* tmpl) const;

  bool ok() const { return ok_; }
  Bth& bth();
  Reth& reth() { return ext<Reth>(info_->off_reth); }
  Aeth& aeth() { return ext<Aeth>(info_->off_aeth); }
  AtomicEth& atomic_eth() { return ext<AtomicEth>(info_->off_atomic_eth); }
  AtomicAckEth& atomic_ack() { return ext<AtomicAckEth>(info_->off_atomic_ack); }
  ImmDt& immdt() { return ext<ImmDt>(info_->off_immdt); }
  Ieth& ieth() { return ext<Ieth>(info_->off_ieth); }
  Deth& deth() { return ext<Deth>(info_->off_deth); }
  uint8_t* payload() { return ok_ ? buf_ + payload_off_ : nullptr; }  // payload_len bytes
  uint32_t payload_len() const { return payload_len_; }
  uint32_t frame_len() const { return ok_ ? frame_len_ : 0; }
  // IPv4 identification (0 unless set; DF is always set). No effect for IPv6.
  void set_ipv4_id(uint16_t id);

  // Sets pad count, IP/UDP lengths, the IPv4 header checksum, UDP checksum 0,
  // zeroes the pad bytes and stores the ICRC. Returns the frame length (0 when
  // !ok()). May be called again after further edits.
  uint32_t finish();

 private:
  template <class H>
  H& ext(uint8_t off) {
    static_assert(sizeof(H) <= sizeof(scratch_));
    return *reinterpret_cast<H*>(ext_ptr(off));
  }
  uint8_t* ext_ptr(uint8_t off);
  // Checks shared by both constructors; sets the layout fields and ok_, or
  // leaves ok_ false.
  bool layout(uint32_t cap, uint32_t l3, bool ipv6, uint32_t* l4_len);
  void start_bth(uint8_t opcode);
  friend void build_template(const PathHeaders& path, HeaderTemplate* t);

  uint8_t* buf_;
  const OpcodeInfo* info_;
  uint32_t payload_len_;
  uint32_t frame_len_ = 0;
  uint16_t l3_off_ = 0;
  uint16_t bth_off_ = 0;
  uint16_t payload_off_ = 0;
  uint32_t ipv4_sum_ = 0;  // one's complement sum of the IPv4 fields finish() leaves alone
  uint16_t ipv4_id_ = 0;
  uint8_t pad_ = 0;
  bool ipv6_ = false;
  bool ok_ = false;
  uint8_t scratch_[32];  // sink for header accessors that have no place in the frame
};

// ---------------------------------------------------------------------------
// FrameWriter: the parts on the per-packet path, inline so that a caller's
// constants (opcode, payload length) fold into them.

namespace detail {

inline uint8_t pad_for(uint32_t payload_len) {
  return static_cast<uint8_t>((4 - (payload_len & 3)) & 3);
}

// Zeroes n bytes (n a multiple of 4, at most 64: the BTH and extension headers)
// with fixed-size stores. A variable-size memset here compiled to `rep stosq`,
// whose start-up cost was a third of the time to build an ACK.
inline void zero_headers(uint8_t* p, uint32_t n) {
  static constexpr uint8_t kZeros[32] = {};
  if (n >= 32) {
    std::memcpy(p, kZeros, 32);
    std::memcpy(p + n - 32, kZeros, 32);
  } else if (n >= 16) {
    std::memcpy(p, kZeros, 16);
    std::memcpy(p + n - 16, kZeros, 16);
  } else {
    for (uint32_t i = 0; i < n; i += 4) std::memcpy(p + i, kZeros, 4);
  }
}

}  // namespace detail

inline bool FrameWriter::layout(uint32_t cap, uint32_t l3, bool ipv6, uint32_t* l4_len) {
  constexpr uint32_t kMaxIpLen = 0xFFFF;  // IPv4 total length / IPv6 payload length field
  if (!info_->valid()) return false;
  if (payload_len_ > 0 && !(info_->flags & kHasPayload)) return false;
  const uint32_t ip_hdr = ipv6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr);
  const uint32_t pad = detail::pad_for(payload_len_);
  if (payload_len_ > kMaxIpLen) return false;  // keeps the sums below far from overflow
  const uint32_t l4 = sizeof(UdpHdr) + info_->hdr_len + payload_len_ + pad + kIcrcBytes;
  const uint32_t ip_len_field = ipv6 ? l4 : ip_hdr + l4;
  if (ip_len_field > kMaxIpLen) return false;
  const uint32_t frame_len = l3 + ip_hdr + l4;
  if (buf_ == nullptr || cap < frame_len) return false;
  ok_ = true;
  ipv6_ = ipv6;
  pad_ = static_cast<uint8_t>(pad);
  frame_len_ = frame_len;
  l3_off_ = static_cast<uint16_t>(l3);
  bth_off_ = static_cast<uint16_t>(l3 + ip_hdr + sizeof(UdpHdr));
  payload_off_ = static_cast<uint16_t>(bth_off_ + info_->hdr_len);
  *l4_len = l4;
  return true;
}

inline void FrameWriter::start_bth(uint8_t opcode) {
  detail::zero_headers(buf_ + bth_off_, info_->hdr_len);  // BTH + extension headers
  auto& bth = *reinterpret_cast<Bth*>(buf_ + bth_off_);
  bth.set_opcode(opcode);
  bth.set_pad_count(pad_);
  bth.set_pkey(kDefaultPkey);
}

inline FrameWriter::FrameWriter(uint8_t* buf, uint32_t cap, const HeaderTemplate& tmpl,
                                uint8_t opcode, uint32_t payload_len)
    : buf_(buf), info_(&opcode_info(opcode)), payload_len_(payload_len) {
  uint32_t l4_len;
  if (tmpl.len == 0 || !layout(cap, tmpl.l3_off, tmpl.ipv6, &l4_len)) return;
  // Fixed-size copies (no call, no `rep movs`): [0, 32) and [len - 32, len),
  // and [32, 64) when the headers are longer than 64 bytes. The frame holds at
  // least the headers, a BTH and the ICRC, so nothing is written past it.
  static_assert(HeaderTemplate::kMaxBytes <= 96);
  const uint32_t n = tmpl.len;
  std::memcpy(buf, tmpl.bytes, 32);
  if (n > 64) std::memcpy(buf + 32, tmpl.bytes + 32, 32);
  std::memcpy(buf + n - 32, tmpl.bytes + n - 32, 32);
  ipv4_sum_ = tmpl.ipv4_sum;
  start_bth(opcode);
}

inline FrameWriter::FrameWriter(uint8_t* buf, uint32_t cap, const FrameTemplate& tmpl)
    : buf_(buf), info_(&opcode_info(tmpl.opcode)), payload_len_(tmpl.payload_len) {
  if (tmpl.hdr_len == 0 || buf == nullptr || cap < tmpl.frame_len) return;
  ok_ = true;
  ipv6_ = tmpl.ipv6;
  pad_ = tmpl.pad;
  frame_len_ = tmpl.frame_len;
  l3_off_ = tmpl.l3_off;
  bth_off_ = tmpl.bth_off;
  payload_off_ = tmpl.hdr_len;
  ipv4_sum_ = tmpl.ipv4_sum;
  // Fixed-size copies covering [0, hdr_len): the headers are at least 54 bytes
  // (Ethernet, IPv4, UDP, BTH), and the frame holds them.
  static_assert(FrameTemplate::kMaxBytes == 128);
  const uint32_t n = tmpl.hdr_len;
  std::memcpy(buf, tmpl.bytes, 32);
  if (n > 64) std::memcpy(buf + 32, tmpl.bytes + 32, 32);
  if (n > 96) std::memcpy(buf + 64, tmpl.bytes + 64, 32);
  std::memcpy(buf + n - 32, tmpl.bytes + n - 32, 32);
}

inline void FrameWriter::save(FrameTemplate* tmpl) const {
  if (!ok_ || payload_off_ > FrameTemplate::kMaxBytes) return;
  std::memcpy(tmpl->bytes, buf_, payload_off_);
  tmpl->hdr_len = static_cast<uint8_t>(payload_off_);
  tmpl->opcode = reinterpret_cast<const Bth*>(buf_ + bth_off_)->opcode();
  tmpl->pad = pad_;
  tmpl->ipv6 = ipv6_;
  tmpl->payload_len = payload_len_;
  tmpl->frame_len = frame_len_;
  tmpl->l3_off = l3_off_;
  tmpl->bth_off = bth_off_;
  tmpl->ipv4_sum = ipv4_sum_;
}

inline Bth& FrameWriter::bth() { return *reinterpret_cast<Bth*>(ok_ ? buf_ + bth_off_ : scratch_); }

inline uint8_t* FrameWriter::ext_ptr(uint8_t off) {
  assert((!ok_ || off != 0) && "the opcode does not carry this extension header");
  if (!ok_ || off == 0) return scratch_;
  return buf_ + bth_off_ + off;
}

inline void FrameWriter::set_ipv4_id(uint16_t id) {
  if (!ok_ || ipv6_) return;
  ipv4_id_ = id;
  reinterpret_cast<Ipv4Hdr*>(buf_ + l3_off_)->set_id(id);
}

inline uint32_t FrameWriter::finish() {
  if (!ok_) return 0;
  const uint32_t ip_hdr = ipv6_ ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr);
  const uint32_t l4_len = frame_len_ - l3_off_ - ip_hdr;
  uint8_t* l3 = buf_ + l3_off_;
  if (ipv6_) {
    reinterpret_cast<Ipv6Hdr*>(l3)->set_payload_len(static_cast<uint16_t>(l4_len));
  } else {
    auto& ip = *reinterpret_cast<Ipv4Hdr*>(l3);
    const uint32_t total_len = ip_hdr + l4_len;
    ip.set_total_len(static_cast<uint16_t>(total_len));
    uint32_t sum = ipv4_sum_ + total_len + ipv4_id_;
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    ip.set_checksum(static_cast<uint16_t>(~sum));
  }
  auto& udp = *reinterpret_cast<UdpHdr*>(l3 + ip_hdr);
  udp.set_len(static_cast<uint16_t>(l4_len));
  udp.set_checksum(0);
  reinterpret_cast<Bth*>(buf_ + bth_off_)->set_pad_count(pad_);
  uint8_t* pad = buf_ + payload_off_ + payload_len_;
  for (uint32_t i = 0; i < pad_; ++i) pad[i] = 0;
  const uint32_t covered = frame_len_ - l3_off_ - kIcrcBytes;
  icrc_store(l3 + covered, icrc_compute(l3, covered, ipv6_));
  return frame_len_;
}

inline bool same_ipv4_flow(const uint8_t* a, const uint8_t* b) {
  // Bytes that may differ: 18-19 IPv4 id, 24-25 IPv4 checksum, 46 BTH FECN/BECN,
  // 50 AckReq, 51-53 PSN. Compared as [0,16) [16,32) [32,48) [38,54).
#if defined(__SSE2__)
  const auto ld = [](const uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  };
  const __m128i m1 = _mm_setr_epi8(-1, -1, 0, 0, -1, -1, -1, -1, 0, 0, -1, -1, -1, -1, -1, -1);
  const __m128i m2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, -1);
  const __m128i m3 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, 0, -1, -1, -1, 0, 0, 0, 0);
  const __m128i x0 = _mm_xor_si128(ld(a), ld(b));
  const __m128i x1 = _mm_and_si128(_mm_xor_si128(ld(a + 16), ld(b + 16)), m1);
  const __m128i x2 = _mm_and_si128(_mm_xor_si128(ld(a + 32), ld(b + 32)), m2);
  const __m128i x3 = _mm_and_si128(_mm_xor_si128(ld(a + 38), ld(b + 38)), m3);
  const __m128i x = _mm_or_si128(_mm_or_si128(x0, x1), _mm_or_si128(x2, x3));
  return _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_setzero_si128())) == 0xFFFF;
#else
  for (uint32_t i = 0; i < kSameFlowBytes; ++i) {
    const bool varies = i == 18 || i == 19 || i == 24 || i == 25 || i == 46 || i >= 50;
    if (!varies && a[i] != b[i]) return false;
  }
  return true;
#endif
}

}  // namespace burst::wire
