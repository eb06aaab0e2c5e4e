// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Opcode table invariants, against an independent list written from the IBA
// specification (vol. 1, table 35 "OpCodeField" and the header diagrams of 9.3).
#include "core/wire/opcode.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace burst::wire {
namespace {

// Header sets used in the expectation list.
enum Hdr : uint32_t {
  R = kHasReth,
  A = kHasAeth,
  D = kHasDeth,
  X = kHasAtomicEth,
  K = kHasAtomicAckEth,
  I = kHasImmDt,
  V = kHasIeth,
};
constexpr uint32_t kAllHdrs = R | A | D | X | K | I | V;

struct Expected {
  uint8_t opcode;
  const char* name;
  uint32_t hdrs;
  uint8_t hdr_len;
};

// Every opcode that RC, UC, UD and RoCEv2 CNP define.
const Expected kExpected[] = {
    {0x00, "RC_SEND_FIRST", 0, 12},
    {0x01, "RC_SEND_MIDDLE", 0, 12},
    {0x02, "RC_SEND_LAST", 0, 12},
    {0x03, "RC_SEND_LAST_WITH_IMMEDIATE", I, 16},
    {0x04, "RC_SEND_ONLY", 0, 12},
    {0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", I, 16},
    {0x06, "RC_RDMA_WRITE_FIRST", R, 28},
    {0x07, "RC_RDMA_WRITE_MIDDLE", 0, 12},
    {0x08, "RC_RDMA_WRITE_LAST", 0, 12},
    {0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", I, 16},
    {0x0a, "RC_RDMA_WRITE_ONLY", R, 28},
    {0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", R | I, 32},
    {0x0c, "RC_RDMA_READ_REQUEST", R, 28},
    {0x0d, "RC_RDMA_READ_RESPONSE_FIRST", A, 16},
    {0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 0, 12},
    {0x0f, "RC_RDMA_READ_RESPONSE_LAST", A, 16},
    {0x10, "RC_RDMA_READ_RESPONSE_ONLY", A, 16},
    {0x11, "RC_ACKNOWLEDGE", A, 16},
    {0x12, "RC_ATOMIC_ACKNOWLEDGE", A | K, 24},
    {0x13, "RC_COMPARE_SWAP", X, 40},
    {0x14, "RC_FETCH_ADD", X, 40},
    {0x16, "RC_SEND_LAST_WITH_INVALIDATE", V, 16},
    {0x17, "RC_SEND_ONLY_WITH_INVALIDATE", V, 16},
    {0x20, "UC_SEND_FIRST", 0, 12},
    {0x21, "UC_SEND_MIDDLE", 0, 12},
    {0x22, "UC_SEND_LAST", 0, 12},
    {0x23, "UC_SEND_LAST_WITH_IMMEDIATE", I, 16},
    {0x24, "UC_SEND_ONLY", 0, 12},
    {0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", I, 16},
    {0x26, "UC_RDMA_WRITE_FIRST", R, 28},
    {0x27, "UC_RDMA_WRITE_MIDDLE", 0, 12},
    {0x28, "UC_RDMA_WRITE_LAST", 0, 12},
    {0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", I, 16},
    {0x2a, "UC_RDMA_WRITE_ONLY", R, 28},
    {0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", R | I, 32},
    {0x64, "UD_SEND_ONLY", D, 20},
    {0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", D | I, 24},
    {0x81, "CNP", 0, 28},  // BTH + 16 reserved bytes
};

const Expected* find_expected(int opcode) {
  for (const auto& e : kExpected) {
    if (e.opcode == opcode) return &e;
  }
  return nullptr;
}

bool has(const OpcodeInfo& i, uint32_t f) { return (i.flags & f) != 0; }
bool name_has(const OpcodeInfo& i, const char* s) {
  return std::string(i.name).find(s) != std::string::npos;
}

TEST(OpcodeTable, ValidExactlyForTheIbaList) {
  int valid = 0;
  for (int op = 0; op < 256; ++op) {
    const OpcodeInfo& i = opcode_info(static_cast<uint8_t>(op));
    EXPECT_EQ(&i, &kOpcodeTable[op]);
    const Expected* e = find_expected(op);
    SCOPED_TRACE(op);
    if (e == nullptr) {
      EXPECT_FALSE(i.valid());
      EXPECT_EQ(i.flags, 0u);
      EXPECT_STREQ(i.name, "UNKNOWN");
      continue;
    }
    ++valid;
    EXPECT_TRUE(i.valid());
    EXPECT_STREQ(i.name, e->name);
    EXPECT_EQ(i.flags & kAllHdrs, e->hdrs);
    EXPECT_EQ(i.hdr_len, e->hdr_len);
  }
  EXPECT_EQ(valid, 38);
  // RD (0x40-0x5f), XRC (0xa0-0xbf), reserved RC 0x15 and the top of each range.
  for (int op : {0x15, 0x18, 0x1f, 0x2c, 0x3f, 0x40, 0x4c, 0x60, 0x63, 0x66, 0x80, 0x82, 0xa0, 0xa4,
                 0xc0, 0xff}) {
    EXPECT_FALSE(opcode_info(static_cast<uint8_t>(op)).valid()) << op;
  }
}

TEST(OpcodeTable, OffsetsFollowIbaOrderAndMatchFlags) {
  for (const auto& e : kExpected) {
    const OpcodeInfo& i = opcode_info(e.opcode);
    SCOPED_TRACE(i.name);
    const struct {
      uint32_t flag;
      uint8_t off;
      uint8_t size;
    } order[] = {{D, i.off_deth, 8}, {R, i.off_reth, 16},      {X, i.off_atomic_eth, 28},
                 {A, i.off_aeth, 4}, {K, i.off_atomic_ack, 8}, {I, i.off_immdt, 4},
                 {V, i.off_ieth, 4}};
    uint32_t next = 12;  // right after the BTH
    for (const auto& h : order) {
      if (e.hdrs & h.flag) {
        EXPECT_EQ(h.off, next);
        next += h.size;
      } else {
        EXPECT_EQ(h.off, 0);
      }
    }
    EXPECT_EQ(i.hdr_len, next + (e.opcode == 0x81 ? 16 : 0));
  }
  // The examples named in the design brief.
  EXPECT_EQ(opcode_info(op::kRcRdmaWriteFirst).off_reth, 12);
  EXPECT_EQ(opcode_info(op::kRcSendOnlyWithImmediate).off_immdt, 12);
  EXPECT_EQ(opcode_info(op::kRcRdmaReadResponseMiddle).off_aeth, 0);
  EXPECT_EQ(opcode_info(op::kRcAcknowledge).off_aeth, 12);
  EXPECT_EQ(opcode_info(op::kRcAtomicAcknowledge).off_aeth, 12);
  EXPECT_EQ(opcode_info(op::kRcAtomicAcknowledge).off_atomic_ack, 16);
  EXPECT_EQ(opcode_info(op::kUdSendOnly).off_deth, 12);
  EXPECT_EQ(opcode_info(op::kUdSendOnlyWithImmediate).off_immdt, 20);
  EXPECT_EQ(opcode_info(op::kRcRdmaWriteOnlyWithImmediate).off_immdt, 28);
  EXPECT_EQ(opcode_info(op::kRcSendLastWithInvalidate).off_ieth, 12);
}

TEST(OpcodeTable, TransportMatchesOpcodeRange) {
  for (const auto& e : kExpected) {
    const OpcodeInfo& i = opcode_info(e.opcode);
    SCOPED_TRACE(i.name);
    const uint32_t transports = i.flags & (kRc | kUc | kUd | kCnp);
    EXPECT_EQ(__builtin_popcount(transports), 1);
    switch (e.opcode >> 5) {  // the top 3 bits select the transport
      case 0:
        EXPECT_EQ(transports, kRc);
        break;
      case 1:
        EXPECT_EQ(transports, kUc);
        break;
      case 3:
        EXPECT_EQ(transports, kUd);
        break;
      case 4:
        EXPECT_EQ(transports, kCnp);
        break;
      default:
        ADD_FAILURE();
    }
    if (transports == kRc) {
      EXPECT_EQ(std::string(i.name).rfind("RC_", 0), 0u);
    }
    if (transports == kUc) {
      EXPECT_EQ(std::string(i.name).rfind("UC_", 0), 0u);
    }
    if (transports == kUd) {
      EXPECT_EQ(std::string(i.name).rfind("UD_", 0), 0u);
    }
  }
}

TEST(OpcodeTable, RoleFlagsAgreeWithNames) {
  std::set<std::string> names;
  for (const auto& e : kExpected) {
    const OpcodeInfo& i = opcode_info(e.opcode);
    SCOPED_TRACE(i.name);
    EXPECT_TRUE(names.insert(i.name).second);

    const bool cnp = e.opcode == op::kCnp;
    EXPECT_EQ(has(i, kRequest) + has(i, kResponse), cnp ? 0 : 1);
    EXPECT_EQ(has(i, kSend), name_has(i, "_SEND_"));
    EXPECT_EQ(has(i, kWrite), name_has(i, "_RDMA_WRITE_"));
    EXPECT_EQ(has(i, kRead), name_has(i, "READ_REQUEST"));
    EXPECT_EQ(has(i, kReadResp), name_has(i, "READ_RESPONSE"));
    EXPECT_EQ(has(i, kAtomic), name_has(i, "COMPARE_SWAP") || name_has(i, "FETCH_ADD"));
    EXPECT_EQ(has(i, kAtomicAck), name_has(i, "ATOMIC_ACKNOWLEDGE"));
    EXPECT_EQ(has(i, kRequest),
              has(i, kSend) || has(i, kWrite) || has(i, kRead) || has(i, kAtomic));
    EXPECT_EQ(has(i, kResponse), has(i, kReadResp) || name_has(i, "ACKNOWLEDGE"));
    EXPECT_EQ(has(i, kAck), has(i, kHasAeth));
    EXPECT_EQ(has(i, kHasImm), name_has(i, "WITH_IMMEDIATE"));
    EXPECT_EQ(has(i, kHasImm), has(i, kHasImmDt));
    EXPECT_EQ(has(i, kHasInv), name_has(i, "WITH_INVALIDATE"));
    EXPECT_EQ(has(i, kHasInv), has(i, kHasIeth));
    EXPECT_EQ(has(i, kHasDeth), has(i, kUd));
    EXPECT_EQ(has(i, kHasAtomicEth), has(i, kAtomic));
    EXPECT_EQ(has(i, kHasAtomicAckEth), has(i, kAtomicAck));
    EXPECT_EQ(has(i, kHasPayload), has(i, kSend) || has(i, kWrite) || has(i, kReadResp));

    // Position in the message.
    const bool first = name_has(i, "_FIRST");
    const bool middle = name_has(i, "_MIDDLE");
    const bool last = name_has(i, "_LAST");
    const bool only =
        name_has(i, "_ONLY") || has(i, kRead) || has(i, kAtomic) || has(i, kAtomicAck);
    EXPECT_EQ(has(i, kOnly), only);
    EXPECT_EQ(has(i, kFirst), first || only);
    EXPECT_EQ(has(i, kMiddle), middle);
    EXPECT_EQ(has(i, kLast), last || only);
    EXPECT_EQ(has(i, kCompletes), has(i, kLast));
    EXPECT_FALSE(has(i, kMiddle) && (has(i, kFirst) || has(i, kLast)));
    if (has(i, kOnly)) {
      EXPECT_TRUE(i.has(kFirst | kLast));
    }

    // Receive WQE: every SEND packet, and WRITE with immediate (LAST / ONLY).
    EXPECT_EQ(has(i, kNeedsRwqe),
              has(i, kSend) || (has(i, kWrite) && has(i, kHasImm) && has(i, kLast)));
  }
  // Spot checks with the names the design brief uses.
  EXPECT_TRUE(opcode_info(op::kRcRdmaWriteFirst).has(kHasReth | kWrite | kFirst | kRequest));
  EXPECT_TRUE(opcode_info(op::kRcSendOnlyWithImmediate).has(kHasImmDt | kNeedsRwqe | kCompletes));
  EXPECT_FALSE(opcode_info(op::kRcRdmaReadResponseMiddle).has(kHasAeth));
  EXPECT_FALSE(opcode_info(op::kRcRdmaReadResponseMiddle).has(kAck));
  EXPECT_TRUE(opcode_info(op::kRcAcknowledge).has(kAck | kHasAeth | kResponse));
  EXPECT_FALSE(opcode_info(op::kRcAcknowledge).has(kHasPayload));
  EXPECT_TRUE(opcode_info(op::kRcAtomicAcknowledge).has(kHasAeth | kHasAtomicAckEth));
  EXPECT_TRUE(opcode_info(op::kUdSendOnly).has(kHasDeth | kUd | kNeedsRwqe | kOnly));
  EXPECT_TRUE(opcode_info(op::kCnp).has(kValid | kCnp));
  EXPECT_FALSE(opcode_info(op::kCnp).has(kHasPayload));
  EXPECT_FALSE(opcode_info(op::kRcRdmaWriteMiddle).has(kNeedsRwqe));
  EXPECT_FALSE(opcode_info(op::kRcRdmaWriteOnly).has(kNeedsRwqe));
  EXPECT_TRUE(opcode_info(op::kUcRdmaWriteLastWithImmediate).has(kNeedsRwqe | kHasImmDt));
}

TEST(OpcodeTable, UcMirrorsRcSendAndWrite) {
  for (uint8_t low = 0; low <= 0x0b; ++low) {
    const OpcodeInfo& rc = opcode_info(low);
    const OpcodeInfo& uc = opcode_info(static_cast<uint8_t>(0x20 | low));
    SCOPED_TRACE(uc.name);
    EXPECT_EQ(rc.flags & ~kRc, uc.flags & ~kUc);
    EXPECT_EQ(rc.hdr_len, uc.hdr_len);
    EXPECT_STREQ(rc.name + 2, uc.name + 2);
  }
}

}  // namespace
}  // namespace burst::wire
