// Whole RoCEv2 frames: parse (RX) and build (TX).
//
// Frame layout: Ethernet [802.1Q] | IPv4 (IHL honoured) or IPv6 | UDP (dport 4791)
//               | BTH | extension headers (per opcode) | payload | pad (0-3) | ICRC (4)
#pragma once

#include <array>
#include <cstdint>

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
struct PacketView {
  const uint8_t* frame;
  uint32_t frame_len;  // bytes received (may include Ethernet padding past the IP datagram)
  uint16_t vlan_tci;
  bool has_vlan;
  bool ipv6;
  uint16_t l3_off, udp_off, bth_off, payload_off;
  uint32_t payload_len;  // excluding pad and ICRC
  uint8_t opcode;
  const OpcodeInfo* info;
  uint8_t ecn;     // 2-bit ECN from IPv4 TOS / IPv6 traffic class (CE = 3)
  Gid sgid, dgid;  // source/dest IP as GIDs (IPv4 as ::ffff:a.b.c.d)
  MacAddr smac, dmac;
  uint16_t udp_sport;

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
  template <class H>
  const H* ext(uint8_t off) const {
    return off == 0 ? nullptr : reinterpret_cast<const H*>(frame + bth_off + off);
  }
};

// Parses and validates a frame; reads only [frame, frame + len). On kNone, *out
// describes the packet. verify_icrc = false skips only the ICRC check.
RxDrop parse_frame(const uint8_t* frame, uint32_t len, PacketView* out, bool verify_icrc = true);

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

// Bytes from the Ethernet header to the end of the extension headers; 0 for an
// invalid opcode.
uint32_t header_bytes(const PathHeaders& path, uint8_t opcode);

// Bytes of a whole frame with payload_len payload bytes (headers, payload, pad,
// ICRC); 0 for an invalid opcode.
uint32_t frame_bytes(const PathHeaders& path, uint8_t opcode, uint32_t payload_len);

// Two-phase build: the constructor writes Ethernet (+802.1Q), IP, UDP (dport
// 4791, sport from the path), a BTH with the opcode, TVer 0, P_Key 0xFFFF and
// every other field 0, and zeroes the extension headers. The caller then sets
// BTH fields (dest QPN, PSN, AckReq, SE ...) and extension headers, fills
// payload(), and calls finish().
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

}  // namespace burst::wire
