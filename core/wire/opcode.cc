// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/wire/opcode.h"

#include "core/wire/aeth.h"
#include "core/wire/atomic_eth.h"
#include "core/wire/bth.h"
#include "core/wire/deth.h"
#include "core/wire/ieth.h"
#include "core/wire/immdt.h"
#include "core/wire/reth.h"

namespace burst::wire {
namespace {

constexpr uint32_t kCnpReservedBytes = 16;

// Lays out the extension headers named by flags in IBA order (DETH, RETH,
// AtomicETH, AETH, AtomicAckETH, ImmDt, IETH) after the BTH.
constexpr OpcodeInfo make(const char* name, uint32_t flags) {
  OpcodeInfo e{name, flags | kValid, 0, 0, 0, 0, 0, 0, 0, 0};
  uint32_t off = sizeof(Bth);
  auto place = [&](uint32_t flag, uint32_t size, uint8_t& field) {
    if (flags & flag) {
      field = static_cast<uint8_t>(off);
      off += size;
    }
  };
  place(kHasDeth, sizeof(Deth), e.off_deth);
  place(kHasReth, sizeof(Reth), e.off_reth);
  place(kHasAtomicEth, sizeof(AtomicEth), e.off_atomic_eth);
  place(kHasAeth, sizeof(Aeth), e.off_aeth);
  place(kHasAtomicAckEth, sizeof(AtomicAckEth), e.off_atomic_ack);
  place(kHasImmDt, sizeof(ImmDt), e.off_immdt);
  place(kHasIeth, sizeof(Ieth), e.off_ieth);
  if (flags & kCnp) off += kCnpReservedBytes;
  e.hdr_len = static_cast<uint8_t>(off);
  return e;
}

// Flag groups shared by RC and UC.
constexpr uint32_t kOnlyPos = kFirst | kLast | kOnly | kCompletes;
constexpr uint32_t kFirstPos = kFirst;
constexpr uint32_t kMiddlePos = kMiddle;
constexpr uint32_t kLastPos = kLast | kCompletes;
constexpr uint32_t kSendReq = kRequest | kSend | kHasPayload | kNeedsRwqe;
constexpr uint32_t kWriteReq = kRequest | kWrite | kHasPayload;
constexpr uint32_t kImm = kHasImm | kHasImmDt;
constexpr uint32_t kInv = kHasInv | kHasIeth;
constexpr uint32_t kReadRespBase = kResponse | kReadResp | kHasPayload;

// The SEND and WRITE opcodes of one transport (RC base 0x00, UC base 0x20) share
// their low 5 bits.
constexpr void add_send_write(std::array<OpcodeInfo, 256>& t, uint8_t base, uint32_t tr,
                              const char* const names[12]) {
  t[base + 0x00] = make(names[0], tr | kSendReq | kFirstPos);
  t[base + 0x01] = make(names[1], tr | kSendReq | kMiddlePos);
  t[base + 0x02] = make(names[2], tr | kSendReq | kLastPos);
  t[base + 0x03] = make(names[3], tr | kSendReq | kLastPos | kImm);
  t[base + 0x04] = make(names[4], tr | kSendReq | kOnlyPos);
  t[base + 0x05] = make(names[5], tr | kSendReq | kOnlyPos | kImm);
  t[base + 0x06] = make(names[6], tr | kWriteReq | kFirstPos | kHasReth);
  t[base + 0x07] = make(names[7], tr | kWriteReq | kMiddlePos);
  t[base + 0x08] = make(names[8], tr | kWriteReq | kLastPos);
  t[base + 0x09] = make(names[9], tr | kWriteReq | kLastPos | kImm | kNeedsRwqe);
  t[base + 0x0a] = make(names[10], tr | kWriteReq | kOnlyPos | kHasReth);
  t[base + 0x0b] = make(names[11], tr | kWriteReq | kOnlyPos | kHasReth | kImm | kNeedsRwqe);
}

constexpr const char* kRcNames[12] = {
    "RC_SEND_FIRST",       "RC_SEND_MIDDLE",
    "RC_SEND_LAST",        "RC_SEND_LAST_WITH_IMMEDIATE",
    "RC_SEND_ONLY",        "RC_SEND_ONLY_WITH_IMMEDIATE",
    "RC_RDMA_WRITE_FIRST", "RC_RDMA_WRITE_MIDDLE",
    "RC_RDMA_WRITE_LAST",  "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
    "RC_RDMA_WRITE_ONLY",  "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
};
constexpr const char* kUcNames[12] = {
    "UC_SEND_FIRST",       "UC_SEND_MIDDLE",
    "UC_SEND_LAST",        "UC_SEND_LAST_WITH_IMMEDIATE",
    "UC_SEND_ONLY",        "UC_SEND_ONLY_WITH_IMMEDIATE",
    "UC_RDMA_WRITE_FIRST", "UC_RDMA_WRITE_MIDDLE",
    "UC_RDMA_WRITE_LAST",  "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
    "UC_RDMA_WRITE_ONLY",  "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
};

constexpr std::array<OpcodeInfo, 256> build_table() {
  std::array<OpcodeInfo, 256> t{};
  for (auto& e : t) e = OpcodeInfo{"UNKNOWN", 0, 0, 0, 0, 0, 0, 0, 0, 0};

  add_send_write(t, 0x00, kRc, kRcNames);
  t[op::kRcRdmaReadRequest] =
      make("RC_RDMA_READ_REQUEST", kRc | kRequest | kRead | kOnlyPos | kHasReth);
  t[op::kRcRdmaReadResponseFirst] =
      make("RC_RDMA_READ_RESPONSE_FIRST", kRc | kReadRespBase | kAck | kFirstPos | kHasAeth);
  t[op::kRcRdmaReadResponseMiddle] =
      make("RC_RDMA_READ_RESPONSE_MIDDLE", kRc | kReadRespBase | kMiddlePos);
  t[op::kRcRdmaReadResponseLast] =
      make("RC_RDMA_READ_RESPONSE_LAST", kRc | kReadRespBase | kAck | kLastPos | kHasAeth);
  t[op::kRcRdmaReadResponseOnly] =
      make("RC_RDMA_READ_RESPONSE_ONLY", kRc | kReadRespBase | kAck | kOnlyPos | kHasAeth);
  t[op::kRcAcknowledge] = make("RC_ACKNOWLEDGE", kRc | kResponse | kAck | kHasAeth);
  t[op::kRcAtomicAcknowledge] =
      make("RC_ATOMIC_ACKNOWLEDGE",
           kRc | kResponse | kAck | kAtomicAck | kOnlyPos | kHasAeth | kHasAtomicAckEth);
  t[op::kRcCompareSwap] =
      make("RC_COMPARE_SWAP", kRc | kRequest | kAtomic | kOnlyPos | kHasAtomicEth);
  t[op::kRcFetchAdd] = make("RC_FETCH_ADD", kRc | kRequest | kAtomic | kOnlyPos | kHasAtomicEth);
  t[op::kRcSendLastWithInvalidate] =
      make("RC_SEND_LAST_WITH_INVALIDATE", kRc | kSendReq | kLastPos | kInv);
  t[op::kRcSendOnlyWithInvalidate] =
      make("RC_SEND_ONLY_WITH_INVALIDATE", kRc | kSendReq | kOnlyPos | kInv);

  add_send_write(t, 0x20, kUc, kUcNames);

  t[op::kUdSendOnly] = make("UD_SEND_ONLY", kUd | kSendReq | kOnlyPos | kHasDeth);
  t[op::kUdSendOnlyWithImmediate] =
      make("UD_SEND_ONLY_WITH_IMMEDIATE", kUd | kSendReq | kOnlyPos | kHasDeth | kImm);

  t[op::kCnp] = make("CNP", kCnp);
  return t;
}

}  // namespace

constexpr std::array<OpcodeInfo, 256> kOpcodeTable = build_table();

// Layout facts checked at compile time (the unit tests check the rest).
static_assert(kOpcodeTable[op::kRcRdmaWriteFirst].hdr_len == 28);
static_assert(kOpcodeTable[op::kRcRdmaWriteOnlyWithImmediate].off_immdt == 28);
static_assert(kOpcodeTable[op::kRcAtomicAcknowledge].off_atomic_ack == 16);
static_assert(kOpcodeTable[op::kRcCompareSwap].hdr_len == 40);
static_assert(kOpcodeTable[op::kUdSendOnlyWithImmediate].off_immdt == 20);
static_assert(kOpcodeTable[op::kCnp].hdr_len == 28);
static_assert(!kOpcodeTable[0x15].valid() && !kOpcodeTable[0x2c].valid());

}  // namespace burst::wire
