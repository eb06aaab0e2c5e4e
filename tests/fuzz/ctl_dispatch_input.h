/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The input format of fuzz_ctl_dispatch, shared by the fuzzer and its seed
// generator (ctl_dispatch_seeds). One input is one client connection:
//
//   [session] [message]...            (at most kMaxMessages messages)
//
//   session   bits 0-1: 3 = no automatic HELLO first (else a valid HELLO opens
//             the session); bit 2: the session's uid is kOtherUid, not 0 (per-user
//             caps, unprivileged QUERY_QPS)
//   message   [ctl] [op] [fds] [aux] [event] [body...]
//     ctl     bits 0-1: form, 0 = raw bytes, else a request built for an op
//             bits 2-3: how many descriptors travel with it (0..3)
//             bit 4:    structured: attach the descriptors the op wants instead
//             bit 7:    structured: corrupt the request (aux bits 0-2 say how)
//     op      structured: index into kOps (modulo); raw: length, low 8 bits
//     fds     kind of descriptor 0 (low nibble) and 1 (high nibble), FdKind;
//             descriptor 2 is /dev/null
//     aux     bits 0-2: corruption (Corrupt); bits 3-5: REG_MR address (AddrMode);
//             bits 6-7: 3 = handles taken raw from the body, else one this
//             session created; raw: bits 0-1 length bits 8-9, bit 7 oversized
//     event   before the message: kEventRevoke revokes the client
//             (Resources::revoke_client), kEventCheck runs the periodic client
//             check; any other value nothing (rare on purpose: a revoked
//             client can do little)
//     body    structured: request size - header size bytes (zero-filled past the
//             end of the input), read as a stream of choices that shape a valid
//             request (all zeros: the common valid case, the newest handle);
//             Corrupt::kRawBody: the request body as is. The last kOps entry:
//             [op lo] [op hi] [n] and n body bytes, sent as they are.
//             raw: the whole message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "abi/burst_ctl_proto.h"
#include "daemon/ctl/ctl_codec.h"

namespace burst::fuzz_ctl {

inline constexpr size_t kMaxMessages = 64;
inline constexpr uint32_t kOtherUid = 4242;

inline constexpr uint8_t kSessNoHello = 0x03;
inline constexpr uint8_t kSessOtherUid = 0x04;

inline constexpr uint8_t kCtlStructured = 0x01;
inline constexpr uint8_t kCtlFdShift = 2;
inline constexpr uint8_t kCtlAutoFds = 0x10;
inline constexpr uint8_t kCtlCorrupt = 0x80;

inline constexpr uint8_t kEventRevoke = 'R';
inline constexpr uint8_t kEventCheck = 'C';

inline constexpr uint8_t kAuxAddrShift = 3;
inline constexpr uint8_t kAuxRawHandles = 0xc0;
inline constexpr uint8_t kAuxOversized = 0x80;

// The ops a structured message can carry (index = op byte % size); the last
// entry takes its op number from the body.
inline constexpr uint16_t kOps[] = {BURST_CTL_OP_HELLO,
                                    BURST_CTL_OP_QUERY_STATUS,
                                    BURST_CTL_OP_QUERY_WORKERS,
                                    BURST_CTL_OP_QUERY_COUNTERS,
                                    BURST_CTL_OP_QUERY_QPS,
                                    BURST_CTL_OP_ALLOC_PD,
                                    BURST_CTL_OP_DEALLOC_PD,
                                    BURST_CTL_OP_CREATE_CQ,
                                    BURST_CTL_OP_DESTROY_CQ,
                                    BURST_CTL_OP_CREATE_QP,
                                    BURST_CTL_OP_MODIFY_QP,
                                    BURST_CTL_OP_QUERY_QP,
                                    BURST_CTL_OP_DESTROY_QP,
                                    BURST_CTL_OP_REG_MR,
                                    BURST_CTL_OP_DEREG_MR,
                                    BURST_CTL_OP_MAP_DOORBELL,
                                    BURST_CTL_OP_CREATE_AH,
                                    BURST_CTL_OP_DESTROY_AH,
                                    BURST_CTL_OP_SET_ASYNC_FD,
                                    BURST_CTL_OP_CREATE_SRQ,
                                    BURST_CTL_OP_DESTROY_SRQ,
                                    BURST_CTL_OP_MODIFY_SRQ,
                                    BURST_CTL_OP_QUERY_SRQ,
                                    BURST_CTL_OP_ATTACH_MEMORY,
                                    BURST_CTL_OP_RESIZE_CQ,
                                    BURST_CTL_OP_REREG_MR,
                                    BURST_CTL_OP_ALLOC_MW,
                                    BURST_CTL_OP_DEALLOC_MW,
                                    0 /* from the body */};
inline constexpr size_t kNumOps = sizeof(kOps) / sizeof(kOps[0]);

inline uint8_t op_index(uint16_t op) {
  for (size_t i = 0; i < kNumOps; ++i) {
    if (kOps[i] == op) return static_cast<uint8_t>(i);
  }
  return static_cast<uint8_t>(kNumOps - 1);
}

// Descriptor kinds (fds byte nibbles).
enum FdKind : uint8_t {
  kFdPipeRead = 0,
  kFdPipeWrite = 1,    // non-blocking, as the provider's async pipe
  kFdSharedMemfd = 2,  // the memfd mapped MAP_SHARED at the fuzzer's shared buffer
  kFdSocket = 3,       // a SOCK_SEQPACKET socketpair end (completion channel)
  kFdSelfMaps = 4,     // this process's /proc/self/maps
  kFdSelfMem = 5,      // this process's /proc/self/mem (O_RDWR)
  kFdDevNull = 6,
  kFdClosed = 7,           // a number that names no open file
  kFdMinusOne = 8,         // -1 (a truncated descriptor set, as the event loop passes it)
  kFdOtherMemfd = 9,       // a fresh memfd mapped nowhere
  kFdSharedReadOnly = 10,  // the shared memfd reopened O_RDONLY
  kFdDeadMaps = 11,        // /proc/PID/maps of a process that has exited
  kFdDeadMem = 12,         // /proc/PID/mem of that process
  kFdSelfStatus = 13,      // /proc/self/status (a procfs file, not maps or mem)
  kFdPipeWriteBlocking = 14,
  kFdSharedPath = 15,  // the shared memfd reopened O_PATH
};

// How a structured request is corrupted (ctl bit 7, aux bits 0-2).
enum Corrupt : uint8_t {
  kCorruptVersion = 0,   // another protocol version than negotiated
  kCorruptLength = 1,    // length field != bytes sent
  kCorruptTrailing = 2,  // one byte more than the op's size (length adjusted)
  kCorruptShort = 3,     // one byte less (length adjusted)
  kCorruptStatus = 4,    // a nonzero status in a request
  kCorruptMagic = 5,     // not the protocol at all: burstd closes
  kCorruptRawBody = 6,   // the body bytes as they are, nothing shaped
  kCorruptResponse = 7,  // the op with BURST_CTL_RESPONSE set
};

// Where a structured REG_MR points (aux bits 3-5).
enum AddrMode : uint8_t {
  kAddrPrivate = 0,   // the fuzzer's private buffer: cross-memory through /proc/self/mem
  kAddrShared = 1,    // the fuzzer's memfd mapping: zero-copy with its file, else cross-memory
  kAddrReadOnly = 2,  // a read-only page (writable MRs: refused)
  kAddrGuard = 3,     // a PROT_NONE page
  kAddrStraddle = 4,  // from the private buffer into the guard page after it
  kAddrRaw = 5,       // address and length from the body
  kAddrEmpty = 6,     // length 0
  kAddrWrap = 7,      // addr + length wraps around
};

// Builds inputs (seed generator).
class InputWriter {
 public:
  explicit InputWriter(uint8_t session) { buf_.push_back(session); }
  // A structured request of a known op: the header bytes and the start of the
  // body stream (zero-filled to the op's body size).
  InputWriter& msg(uint16_t op, uint8_t ctl = 0, uint8_t fds = 0, uint8_t aux = 0,
                   std::vector<uint8_t> body = {}, uint8_t event = 0) {
    buf_.push_back(static_cast<uint8_t>(ctl | kCtlStructured));
    buf_.push_back(op_index(op));
    buf_.push_back(fds);
    buf_.push_back(aux);
    buf_.push_back(event);
    const ctl::OpSpec* spec = ctl::find_op(op);
    body.resize(spec != nullptr ? spec->request_size - sizeof(burst_ctl_hdr) : 0, 0);
    buf_.insert(buf_.end(), body.begin(), body.end());
    return *this;
  }
  // A raw message of `bytes` (at most 1023 bytes).
  InputWriter& raw(const std::vector<uint8_t>& bytes, uint8_t ctl = 0, uint8_t fds = 0) {
    buf_.push_back(static_cast<uint8_t>(ctl & ~3u));
    buf_.push_back(static_cast<uint8_t>(bytes.size() & 0xff));
    buf_.push_back(fds);
    buf_.push_back(static_cast<uint8_t>((bytes.size() >> 8) & 3));
    buf_.push_back(0);
    buf_.insert(buf_.end(), bytes.begin(), bytes.end());
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

}  // namespace burst::fuzz_ctl
