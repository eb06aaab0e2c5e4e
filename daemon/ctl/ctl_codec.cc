// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/ctl/ctl_codec.h"

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace burst::ctl {
namespace {

constexpr uint32_t kHdr = sizeof(burst_ctl_hdr);

// The count field of a list response (at the offset its row gives).
uint32_t list_count(const OpSpec& spec, const uint8_t* msg) {
  uint32_t count;
  std::memcpy(&count, msg + spec.count_offset, sizeof(count));
  return count;
}

// names[v], "unknown" past the end or where the table has no name.
template <size_t N>
const char* name_of(const char* const (&names)[N], unsigned v) {
  return v < N && names[v] != nullptr ? names[v] : "unknown";
}

// Size, magic and length field of a received message (any op).
RequestCheck check_frame(const void* msg, size_t len) {
  RequestCheck r;
  if (len < kHdr) {
    r.error = EPROTO;
    r.close = true;
    return r;
  }
  burst_ctl_hdr h;
  std::memcpy(&h, msg, kHdr);
  r.op = h.op;
  r.version = h.version;
  r.request_id = h.request_id;
  if (h.magic != BURST_CTL_MAGIC) {
    r.error = EPROTO;
    r.close = true;
  } else if (len > BURST_CTL_MAX_MSG) {
    r.error = EMSGSIZE;
  } else if (h.length != len) {
    r.error = EBADMSG;
  }
  return r;
}

// The request against its op's row (nullptr: unknown op): exact size, status 0.
int check_body(const burst_ctl_hdr& h, size_t len, const OpSpec* spec) {
  if (spec == nullptr) return EOPNOTSUPP;
  if (len != spec->request_size) return EBADMSG;
  return h.status != 0 ? EINVAL : 0;
}

}  // namespace

const OpSpec* find_op(uint16_t op) {
  for (const OpSpec& s : kOps) {
    if (s.op == op) return &s;
  }
  return nullptr;
}

const char* op_name(uint16_t op) {
  const OpSpec* s = find_op(op);
  return s != nullptr ? s->name : "unknown";
}

RequestCheck check_request(const void* msg, size_t len) {
  RequestCheck r = check_frame(msg, len);
  if (r.error != 0) return r;
  burst_ctl_hdr h;
  std::memcpy(&h, msg, kHdr);
  r.error = check_body(h, len, find_op(h.op));
  return r;
}

int check_response(const void* msg, size_t len, uint16_t op, uint64_t request_id) {
  if (int e = burst_ctl_check_response_hdr(msg, len, op, request_id); e != 0) return e;
  burst_ctl_hdr h;
  std::memcpy(&h, msg, kHdr);
  const OpSpec* spec = find_op(op);
  if (spec == nullptr) return EPROTO;
  // An error response is the header alone (checked above), except HELLO's.
  if (h.status != 0 && op != BURST_CTL_OP_HELLO) return 0;
  if (spec->response_entries == 0) return len == spec->response_size ? 0 : EBADMSG;
  if (len < spec->response_entries) return EBADMSG;
  const uint32_t count = list_count(*spec, static_cast<const uint8_t*>(msg));
  const uint32_t max = (spec->response_size - spec->response_entries) / spec->entry_size;
  if (count > max) return EBADMSG;
  return len == spec->response_entries + size_t{count} * spec->entry_size ? 0 : EBADMSG;
}

void init_request(burst_ctl_hdr* h, uint16_t op, uint32_t length, uint16_t version,
                  uint64_t request_id) {
  burst_ctl_init_request(h, op, length, version, request_id);
}

void init_response(burst_ctl_hdr* h, const burst_ctl_hdr& req, uint32_t length, int status) {
  burst_ctl_init_response(h, &req, length, status);
}

uint16_t negotiate_version(uint16_t client_min, uint16_t client_max) {
  if (client_min > client_max) return 0;
  const uint16_t hi = client_max < BURST_CTL_VERSION ? client_max : BURST_CTL_VERSION;
  const uint16_t lo = client_min > BURST_CTL_VERSION_MIN ? client_min : BURST_CTL_VERSION_MIN;
  return lo <= hi ? hi : 0;
}

uint32_t list_length(uint16_t op, uint32_t count) {
  const OpSpec* spec = find_op(op);
  if (spec == nullptr || spec->response_entries == 0) return 0;
  return spec->response_entries + count * spec->entry_size;
}

void set_str(char* dst, size_t cap, std::string_view s) {
  if (cap == 0) return;
  const size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
  std::memcpy(dst, s.data(), n);
  std::memset(dst + n, 0, cap - n);
}

std::string get_str(const char* src, size_t cap) {
  size_t n = 0;
  while (n < cap && src[n] != '\0') ++n;
  return std::string(src, n);
}

const char* backend_name(uint16_t backend) {
  static constexpr const char* kNames[] = {nullptr, "loopback", "xdp", "dpdk"};
  static_assert(BURST_CTL_BACKEND_LOOPBACK == 1 && BURST_CTL_BACKEND_DPDK == 3);
  return name_of(kNames, backend);
}

const char* xdp_mode_name(uint8_t mode) {
  static constexpr const char* kNames[] = {"none", "native", "generic"};
  static_assert(BURST_CTL_XDP_NONE == 0 && BURST_CTL_XDP_GENERIC == 2);
  return name_of(kNames, mode);
}

const char* memory_mode_name(uint8_t mode) {
  static constexpr const char* kNames[] = {nullptr, "cma", "shm", "kmod"};
  static_assert(BURST_CTL_MEM_CMA == 1 && BURST_CTL_MEM_KMOD == 3);
  return name_of(kNames, mode);
}

const char* port_state_name(uint8_t state) {
  static constexpr const char* kNames[] = {nullptr, "DOWN", nullptr, nullptr, "ACTIVE"};
  static_assert(BURST_CTL_PORT_DOWN == 1 && BURST_CTL_PORT_ACTIVE == 4);
  return name_of(kNames, state);
}

const char* qp_type_name(uint8_t type) {
  static constexpr const char* kNames[] = {nullptr, nullptr, "RC", "UC", "UD"};  // IBV_QPT_*
  return name_of(kNames, type);
}

const char* qp_state_name(uint8_t state) {
  static constexpr const char* kNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return name_of(kNames, state);
}

uint32_t mtu_bytes(uint8_t ibv_mtu) { return ibv_mtu >= 1 && ibv_mtu <= 5 ? 128u << ibv_mtu : 0; }

}  // namespace burst::ctl
