/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The RoCEv2 opcode table: one entry per BTH opcode value with the headers the
// packet carries (and their offsets from the start of the BTH) and role flags.
// Parsing and building ask this table instead of switching on opcodes.
#pragma once

#include <array>
#include <cstdint>

namespace burst::wire {

namespace op {
// RC (IBA 9.2.1, transport 000)
constexpr uint8_t kRcSendFirst = 0x00;
constexpr uint8_t kRcSendMiddle = 0x01;
constexpr uint8_t kRcSendLast = 0x02;
constexpr uint8_t kRcSendLastWithImmediate = 0x03;
constexpr uint8_t kRcSendOnly = 0x04;
constexpr uint8_t kRcSendOnlyWithImmediate = 0x05;
constexpr uint8_t kRcRdmaWriteFirst = 0x06;
constexpr uint8_t kRcRdmaWriteMiddle = 0x07;
constexpr uint8_t kRcRdmaWriteLast = 0x08;
constexpr uint8_t kRcRdmaWriteLastWithImmediate = 0x09;
constexpr uint8_t kRcRdmaWriteOnly = 0x0a;
constexpr uint8_t kRcRdmaWriteOnlyWithImmediate = 0x0b;
constexpr uint8_t kRcRdmaReadRequest = 0x0c;
constexpr uint8_t kRcRdmaReadResponseFirst = 0x0d;
constexpr uint8_t kRcRdmaReadResponseMiddle = 0x0e;
constexpr uint8_t kRcRdmaReadResponseLast = 0x0f;
constexpr uint8_t kRcRdmaReadResponseOnly = 0x10;
constexpr uint8_t kRcAcknowledge = 0x11;
constexpr uint8_t kRcAtomicAcknowledge = 0x12;
constexpr uint8_t kRcCompareSwap = 0x13;
constexpr uint8_t kRcFetchAdd = 0x14;
constexpr uint8_t kRcSendLastWithInvalidate = 0x16;
constexpr uint8_t kRcSendOnlyWithInvalidate = 0x17;
// UC (transport 001)
constexpr uint8_t kUcSendFirst = 0x20;
constexpr uint8_t kUcSendMiddle = 0x21;
constexpr uint8_t kUcSendLast = 0x22;
constexpr uint8_t kUcSendLastWithImmediate = 0x23;
constexpr uint8_t kUcSendOnly = 0x24;
constexpr uint8_t kUcSendOnlyWithImmediate = 0x25;
constexpr uint8_t kUcRdmaWriteFirst = 0x26;
constexpr uint8_t kUcRdmaWriteMiddle = 0x27;
constexpr uint8_t kUcRdmaWriteLast = 0x28;
constexpr uint8_t kUcRdmaWriteLastWithImmediate = 0x29;
constexpr uint8_t kUcRdmaWriteOnly = 0x2a;
constexpr uint8_t kUcRdmaWriteOnlyWithImmediate = 0x2b;
// UD (transport 011)
constexpr uint8_t kUdSendOnly = 0x64;
constexpr uint8_t kUdSendOnlyWithImmediate = 0x65;
// RoCEv2 congestion notification packet (transport 100, CNP)
constexpr uint8_t kCnp = 0x81;
}  // namespace op

// Role and header flags of an opcode. kFirst/kLast say where the packet sits in
// its message; an ONLY packet (and a READ request, an atomic request, an atomic
// ACK, a UD send) has kFirst | kLast | kOnly.
enum OpFlag : uint32_t {
  kValid = 1u << 0,
  kRc = 1u << 1,
  kUc = 1u << 2,
  kUd = 1u << 3,
  kCnp = 1u << 4,
  kRequest = 1u << 5,   // requester -> responder (SEND, WRITE, READ request, atomic)
  kResponse = 1u << 6,  // responder -> requester (ACK, atomic ACK, READ responses)
  kAck = 1u << 7,       // carries an AETH: ACKNOWLEDGE, ATOMIC_ACK, READ_RESPONSE first/last/only
  kSend = 1u << 8,
  kWrite = 1u << 9,
  kRead = 1u << 10,      // RDMA READ request
  kReadResp = 1u << 11,  // RDMA READ response (any position)
  kAtomic = 1u << 12,    // COMPARE_SWAP / FETCH_ADD request
  kAtomicAck = 1u << 13,
  kFirst = 1u << 14,
  kMiddle = 1u << 15,
  kLast = 1u << 16,
  kOnly = 1u << 17,
  kHasPayload = 1u << 18,  // may carry payload bytes (zero-length messages are allowed)
  kHasImm = 1u << 19,
  kHasInv = 1u << 20,
  kNeedsRwqe = 1u << 21,  // consumes a receive WQE (SEND*, WRITE_*_WITH_IMMEDIATE last/only)
  kCompletes = 1u << 22,  // ends a message (LAST / ONLY, incl. single-packet requests and ACKs)
  kHasReth = 1u << 23,
  kHasAeth = 1u << 24,
  kHasDeth = 1u << 25,
  kHasAtomicEth = 1u << 26,
  kHasAtomicAckEth = 1u << 27,
  kHasImmDt = 1u << 28,
  kHasIeth = 1u << 29,
};

struct OpcodeInfo {
  const char* name;  // IBA name, e.g. "RC_RDMA_WRITE_FIRST"; "UNKNOWN" when !kValid
  uint32_t flags;    // OpFlag bits
  uint8_t hdr_len;   // BTH + all extension headers (CNP: BTH + 16 reserved bytes)
  // Offsets from the start of the BTH; 0 = header absent.
  uint8_t off_reth;
  uint8_t off_aeth;
  uint8_t off_atomic_eth;
  uint8_t off_atomic_ack;
  uint8_t off_immdt;
  uint8_t off_ieth;
  uint8_t off_deth;

  constexpr bool has(uint32_t f) const { return (flags & f) == f; }
  constexpr bool valid() const { return (flags & kValid) != 0; }
};

extern const std::array<OpcodeInfo, 256> kOpcodeTable;

inline const OpcodeInfo& opcode_info(uint8_t opcode) { return kOpcodeTable[opcode]; }

}  // namespace burst::wire
