/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Encoding and validation helpers of the burst control protocol
// (abi/burst_ctl_proto.h) for burstd, burstctl and tests: the op table (kOps,
// from the rows of daemon/ctl/ctl_ops.h), request checks and the C++ face of
// the header framing in abi/burst_ctl_proto.h (which the verbs provider uses
// directly). No dependencies beyond libc; nothing here
// allocates except the string helpers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "abi/burst_ctl_proto.h"
#include "daemon/ctl/ctl_ops.h"

namespace burst::ctl {

// Who may send an op (the NEEDS column of daemon/ctl/ctl_ops.h).
enum class Needs : uint8_t {
  kNothing,  // before HELLO (HELLO itself)
  kSession,  // after HELLO, also once the client is revoked (tear down and look)
  kLive,     // after HELLO, not once the client is revoked
};

// What the protocol knows about one op: the wire facts of its row in
// daemon/ctl/ctl_ops.h (burstd's dispatcher pairs the row with its handler).
struct OpSpec {
  uint16_t op;
  const char* name;           // "CREATE_QP"
  uint32_t request_size;      // exact size of a request
  uint32_t response_size;     // size of a successful response (list ops: the largest)
  uint32_t response_entries;  // list ops: offset of entries[] (0 for fixed responses)
  uint32_t entry_size;        // list ops: size of one entry
  uint32_t count_offset;      // list ops: offset of the count field
  uint8_t max_fds_in;         // descriptors a request may carry
  uint8_t max_fds_out;        // descriptors a response carries
  Needs needs;
};

// The one table of ops (daemon/ctl/ctl_ops.h); burstd's dispatcher pairs each
// row with its handler (daemon/burstd/ctl_handlers.cc).
#define BURST_CTL_SPEC_ROW(OP, REQ, RESP, SHAPE, FDS_IN, FDS_OUT, NEEDS, HANDLER) \
  BURST_CTL_OP_SPEC(OP, REQ, RESP, SHAPE, FDS_IN, FDS_OUT, NEEDS),
inline constexpr OpSpec kOps[] = {BURST_CTL_OPS(BURST_CTL_SPEC_ROW)};
#undef BURST_CTL_SPEC_ROW

// The row of an op in kOps, nullptr for an unknown op.
const OpSpec* find_op(uint16_t op);
const char* op_name(uint16_t op);  // "unknown" for an unknown op

// The result of checking the framing of one received request. `error` is 0 or an
// errno value for the response; `close` says the peer does not speak this
// protocol at all (bad magic, shorter than a header) and the connection should
// be closed after the error response. Version and HELLO state are the server's.
struct RequestCheck {
  int error = 0;
  bool close = false;
  uint16_t op = 0;
  uint16_t version = 0;
  uint64_t request_id = 0;
};
// The header (size, magic, length field), then the request against its op's
// row (known op, exact size, status 0).
RequestCheck check_request(const void* msg, size_t len);

// Checks a response to the request (op, request_id) in msg[0, len): the header
// (burst_ctl_check_response_hdr) and the size for the op (list ops: count *
// entry). Returns 0 or EBADMSG / EPROTO. The status field is not interpreted here.
int check_response(const void* msg, size_t len, uint16_t op, uint64_t request_id);

// burst_ctl_init_request / burst_ctl_init_response.
void init_request(burst_ctl_hdr* h, uint16_t op, uint32_t length, uint16_t version,
                  uint64_t request_id);
// A response header for `req` (op | BURST_CTL_RESPONSE, its id and version).
void init_response(burst_ctl_hdr* h, const burst_ctl_hdr& req, uint32_t length, int status);

// The highest version in [client_min, client_max] that burstd speaks, 0 if none.
uint16_t negotiate_version(uint16_t client_min, uint16_t client_max);

// Bytes of a list response with `count` entries.
uint32_t list_length(uint16_t op, uint32_t count);

// Fixed-size string fields: copies at most cap - 1 bytes and NUL-terminates
// (zero-filling the rest); reading stops at the first NUL or at cap.
void set_str(char* dst, size_t cap, std::string_view s);
std::string get_str(const char* src, size_t cap);
template <size_t N>
void set_str(char (&dst)[N], std::string_view s) {
  set_str(dst, N, s);
}
template <size_t N>
std::string get_str(const char (&src)[N]) {
  return get_str(src, N);
}

// Names for tables and JSON.
const char* backend_name(uint16_t backend);  // "loopback", "xdp", "dpdk", "unknown"
const char* xdp_mode_name(uint8_t mode);     // "none", "native", "generic"
const char* memory_mode_name(uint8_t mode);  // "cma", "shm", "kmod"
const char* port_state_name(uint8_t state);  // "ACTIVE", "DOWN"
const char* qp_type_name(uint8_t type);      // "RC", "UC", "UD"
const char* qp_state_name(uint8_t state);    // "RESET", "INIT", ... "ERR"
uint32_t mtu_bytes(uint8_t ibv_mtu);         // IBV_MTU_* -> bytes, 0 if invalid

}  // namespace burst::ctl
