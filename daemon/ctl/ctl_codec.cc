// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/ctl/ctl_codec.h"

#include <cerrno>
#include <cstring>

namespace burst::ctl {
namespace {

constexpr uint32_t kHdr = sizeof(burst_ctl_hdr);

#define BURST_CTL_FIXED(OP, NAME, REQ, RESP) \
  OpSpec { OP, NAME, sizeof(REQ), sizeof(RESP), 0, 0 }
#define BURST_CTL_LIST(OP, NAME, REQ, RESP)                       \
  OpSpec {                                                        \
    OP, NAME, sizeof(REQ), sizeof(RESP), offsetof(RESP, entries), \
        sizeof(static_cast<RESP*>(nullptr)->entries[0])           \
  }

constexpr OpSpec kOps[] = {
    BURST_CTL_FIXED(BURST_CTL_OP_HELLO, "HELLO", burst_ctl_hello_req, burst_ctl_hello_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_QUERY_STATUS, "QUERY_STATUS", burst_ctl_query_status_req,
                    burst_ctl_status_resp),
    BURST_CTL_LIST(BURST_CTL_OP_QUERY_WORKERS, "QUERY_WORKERS", burst_ctl_query_workers_req,
                   burst_ctl_workers_resp),
    BURST_CTL_LIST(BURST_CTL_OP_QUERY_COUNTERS, "QUERY_COUNTERS", burst_ctl_query_counters_req,
                   burst_ctl_counters_resp),
    BURST_CTL_LIST(BURST_CTL_OP_QUERY_QPS, "QUERY_QPS", burst_ctl_query_qps_req,
                   burst_ctl_qps_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_ALLOC_PD, "ALLOC_PD", burst_ctl_alloc_pd_req,
                    burst_ctl_alloc_pd_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_DEALLOC_PD, "DEALLOC_PD", burst_ctl_handle_req,
                    burst_ctl_empty_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_CREATE_CQ, "CREATE_CQ", burst_ctl_create_cq_req,
                    burst_ctl_create_cq_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_DESTROY_CQ, "DESTROY_CQ", burst_ctl_handle_req,
                    burst_ctl_empty_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_CREATE_QP, "CREATE_QP", burst_ctl_create_qp_req,
                    burst_ctl_create_qp_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_MODIFY_QP, "MODIFY_QP", burst_ctl_modify_qp_req,
                    burst_ctl_empty_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_QUERY_QP, "QUERY_QP", burst_ctl_query_qp_req,
                    burst_ctl_query_qp_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_DESTROY_QP, "DESTROY_QP", burst_ctl_handle_req,
                    burst_ctl_empty_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_REG_MR, "REG_MR", burst_ctl_reg_mr_req, burst_ctl_reg_mr_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_DEREG_MR, "DEREG_MR", burst_ctl_handle_req,
                    burst_ctl_empty_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_MAP_DOORBELL, "MAP_DOORBELL", burst_ctl_map_doorbell_req,
                    burst_ctl_map_doorbell_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_CREATE_AH, "CREATE_AH", burst_ctl_create_ah_req,
                    burst_ctl_create_ah_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_DESTROY_AH, "DESTROY_AH", burst_ctl_handle_req,
                    burst_ctl_empty_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_SET_ASYNC_FD, "SET_ASYNC_FD", burst_ctl_set_async_fd_req,
                    burst_ctl_empty_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_CREATE_SRQ, "CREATE_SRQ", burst_ctl_create_srq_req,
                    burst_ctl_create_srq_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_DESTROY_SRQ, "DESTROY_SRQ", burst_ctl_handle_req,
                    burst_ctl_empty_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_MODIFY_SRQ, "MODIFY_SRQ", burst_ctl_modify_srq_req,
                    burst_ctl_empty_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_QUERY_SRQ, "QUERY_SRQ", burst_ctl_handle_req,
                    burst_ctl_query_srq_resp),
    BURST_CTL_FIXED(BURST_CTL_OP_ATTACH_MEMORY, "ATTACH_MEMORY", burst_ctl_attach_memory_req,
                    burst_ctl_empty_resp),
};

#undef BURST_CTL_FIXED
#undef BURST_CTL_LIST

// The count field of a list response (at a fixed place per op).
uint32_t list_count(uint16_t op, const uint8_t* msg) {
  size_t off = 0;
  switch (op) {
    case BURST_CTL_OP_QUERY_WORKERS:
      off = offsetof(burst_ctl_workers_resp, count);
      break;
    case BURST_CTL_OP_QUERY_COUNTERS:
      off = offsetof(burst_ctl_counters_resp, count);
      break;
    case BURST_CTL_OP_QUERY_QPS:
      off = offsetof(burst_ctl_qps_resp, count);
      break;
    default:
      return 0;
  }
  uint32_t count;
  std::memcpy(&count, msg + off, sizeof(count));
  return count;
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
    return r;
  }
  if (len > BURST_CTL_MAX_MSG) {
    r.error = EMSGSIZE;
    return r;
  }
  if (h.length != len) {
    r.error = EBADMSG;
    return r;
  }
  const OpSpec* spec = find_op(h.op);
  if (spec == nullptr) {
    r.error = EOPNOTSUPP;
    return r;
  }
  if (len != spec->request_size) {
    r.error = EBADMSG;
    return r;
  }
  if (h.status != 0) {
    r.error = EINVAL;
    return r;
  }
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
  const uint32_t count = list_count(op, static_cast<const uint8_t*>(msg));
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
  switch (backend) {
    case BURST_CTL_BACKEND_LOOPBACK:
      return "loopback";
    case BURST_CTL_BACKEND_XDP:
      return "xdp";
    case BURST_CTL_BACKEND_DPDK:
      return "dpdk";
    default:
      return "unknown";
  }
}

const char* xdp_mode_name(uint8_t mode) {
  switch (mode) {
    case BURST_CTL_XDP_NONE:
      return "none";
    case BURST_CTL_XDP_NATIVE:
      return "native";
    case BURST_CTL_XDP_GENERIC:
      return "generic";
    default:
      return "unknown";
  }
}

const char* memory_mode_name(uint8_t mode) {
  switch (mode) {
    case BURST_CTL_MEM_CMA:
      return "cma";
    case BURST_CTL_MEM_SHM:
      return "shm";
    case BURST_CTL_MEM_KMOD:
      return "kmod";
    default:
      return "unknown";
  }
}

const char* port_state_name(uint8_t state) {
  switch (state) {
    case BURST_CTL_PORT_ACTIVE:
      return "ACTIVE";
    case BURST_CTL_PORT_DOWN:
      return "DOWN";
    default:
      return "unknown";
  }
}

const char* qp_type_name(uint8_t type) {
  switch (type) {
    case 2:
      return "RC";
    case 3:
      return "UC";
    case 4:
      return "UD";
    default:
      return "unknown";
  }
}

const char* qp_state_name(uint8_t state) {
  static constexpr const char* kNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return state < sizeof(kNames) / sizeof(kNames[0]) ? kNames[state] : "unknown";
}

uint32_t mtu_bytes(uint8_t ibv_mtu) { return ibv_mtu >= 1 && ibv_mtu <= 5 ? 128u << ibv_mtu : 0; }

}  // namespace burst::ctl
