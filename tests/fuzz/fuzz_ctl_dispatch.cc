// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libFuzzer target for burstd's control plane: the Dispatcher (framing,
// HELLO-first, versions, descriptor rules, revocation) and the Resources
// handlers behind it, over one loopback Device kept across inputs. Each input
// is one client connection (ctl_dispatch_input.h: a session byte, then
// messages, each raw bytes or a request shaped for an op with descriptors of
// chosen kinds). The fuzzer plays both sides in one process: the "client"
// memory REG_MR points at is this process's own (a private buffer reached
// through /proc/self/mem, a memfd mapping reached zero-copy), which it also
// reads back through the registered MR.
//
// Checked (abort() on a violation, so libFuzzer reports it):
//   - every message gets a response: magic, op | RESPONSE, request_id echoed,
//     length == size, status >= 0; an error is the header alone (HELLO: its
//     body); a success passes ctl::check_response; descriptors only with a
//     success, as many as the op sends, all open;
//   - framing order: HELLO first (EPROTO), descriptor limits (EBADF), revoked
//     clients (EACCES for everything but teardown and queries);
//   - descriptors: a request's descriptors are closed after it unless the op
//     keeps them on success (CREATE_CQ's channel, SET_ASYNC_FD, ATTACH_MEMORY);
//     after the connection closes nothing it kept is open and the process has
//     exactly the descriptors it had before the input;
//   - memory: a registered MR reads (and writes) exactly the client's bytes;
//     zero-copy only for the fuzzer's memfd mapping; after a revocation the
//     MRs' keys resolve to nothing and every QP is in ERR; the periodic check
//     never revokes this (unchanged, living) client;
//   - after the connection closes: no PD, CQ, QP, MR or memory space is left.
//
// The Device's workers are not started: commands run inline on this thread
// (Worker::run), which keeps runs deterministic and fast on a small machine.
// This process drops CAP_IPC_LOCK from its effective set and lowers
// RLIMIT_MEMLOCK so the memlock accounting runs; sessions of uid kOtherUid
// meet the per-user caps.
//
// Environment: BURST_FUZZ_LOG=debug (burstd's log level, default error),
// BURST_FUZZ_TRACE=1 (one line per message: op, descriptors, status),
// BURST_FUZZ_STATS=1 (responses per op and status at exit). A reproducer:
// fuzz_ctl_dispatch FILE.
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/verbs.h"
#include "daemon/burstd/config.h"
#include "daemon/burstd/device.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/log.h"
#include "daemon/burstd/resources.h"
#include "abi/burst_ctl_proto.h"
#include "abi/burst_limits.h"
#include "daemon/ctl/ctl_codec.h"
#include "tests/fuzz/ctl_dispatch_input.h"

namespace {

using namespace burst;
using namespace burst::burstd;
using namespace burst::fuzz_ctl;

constexpr size_t kBufBytes = 64 * 1024;         // private and shared client buffers
constexpr uint64_t kMemlockBytes = 192 * 1024;  // soft RLIMIT_MEMLOCK of this process
constexpr int kClosedFd = 1000;                 // a descriptor number never open here
constexpr size_t kHdr = sizeof(burst_ctl_hdr);

#define FUZZ_CHECK(cond, ...)                                               \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "fuzz_ctl_dispatch: check failed: %s: ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                    \
      std::fprintf(stderr, "\n");                                           \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

// Everything kept across inputs.
struct Env {
  Config config;
  std::unique_ptr<Device> device;
  std::unique_ptr<Resources> res;
  std::unique_ptr<Dispatcher> disp;
  size_t page = 4096;
  uint8_t* priv = nullptr;  // kBufBytes, then a PROT_NONE guard page
  uint8_t* guard = nullptr;
  uint8_t* shared = nullptr;  // kBufBytes of shared_fd, MAP_SHARED
  int shared_fd = -1;
  uint8_t* ro = nullptr;  // one read-only page
  int dead_maps = -1;     // /proc/PID/maps and mem of a process that has exited
  int dead_mem = -1;
  uint32_t next_client = 1;
  bool trace = false;  // BURST_FUZZ_TRACE: one line per message on stderr
  // BURST_FUZZ_STATS: responses per op and status, printed at exit.
  std::map<std::pair<uint16_t, int>, uint64_t>* stats = nullptr;
  uint64_t mrs_verified[2] = {0, 0};  // cross-memory, zero-copy
  uint64_t revocations = 0;
};
Env* g = nullptr;

// ---------------------------------------------------------------------------
// Descriptors

int count_open_fds() {
  DIR* d = opendir("/proc/self/fd");
  FUZZ_CHECK(d != nullptr, "opendir /proc/self/fd: %s", std::strerror(errno));
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;  // the directory's own descriptor
}

bool is_open(int fd) { return fd >= 0 && fcntl(fd, F_GETFD) >= 0; }

struct FdId {
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
};

// Whether fd still names the file it named when `id` was taken.
bool same_file(const FdId& id) {
  struct stat st;
  return is_open(id.fd) && fstat(id.fd, &st) == 0 && st.st_dev == id.dev && st.st_ino == id.ino;
}

// ---------------------------------------------------------------------------
// The body stream of a structured message: zeros past its end.

struct Stream {
  const uint8_t* p;
  size_t n;
  size_t i = 0;
  uint8_t u8() { return i < n ? p[i++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return u16() | (static_cast<uint32_t>(u16()) << 16); }
  uint64_t u64() { return u32() | (static_cast<uint64_t>(u32()) << 32); }
  void bytes(void* dst, size_t len) {
    auto* d = static_cast<uint8_t*>(dst);
    for (size_t k = 0; k < len; ++k) d[k] = u8();
  }
};

// ---------------------------------------------------------------------------
// One input: one connection.

struct MrRec {
  uint32_t handle = 0;
  uint32_t lkey = 0;
  uint64_t addr = 0;
  uint64_t iova = 0;
  uint64_t len = 0;
  uint32_t access = 0;
  uint8_t memory_mode = 0;
};

struct Conn {
  Session s;
  bool open = true;  // false once the dispatcher asked to close
  bool revoked = false;
  uint64_t next_id = 1;
  // Handles this connection was given (kept after destruction: stale handles).
  std::vector<uint32_t> pds, cqs, qps, mrs, ahs, srqs, qpns;
  std::map<uint32_t, uint8_t> qp_type;
  std::vector<MrRec> mr_recs;
  std::vector<FdId> kept;  // descriptors burstd kept (must be closed by close_session)
  std::vector<int> ours;   // the fuzzer's own ends (pipes, sockets), closed at the end
};

// Allowed when revoked (dispatch.cc) and the descriptors an op may carry.
bool allowed_when_revoked(uint16_t op) {
  switch (op) {
    case BURST_CTL_OP_DEALLOC_PD:
    case BURST_CTL_OP_DESTROY_CQ:
    case BURST_CTL_OP_DESTROY_QP:
    case BURST_CTL_OP_DEREG_MR:
    case BURST_CTL_OP_DESTROY_AH:
    case BURST_CTL_OP_DESTROY_SRQ:
    case BURST_CTL_OP_QUERY_QP:
    case BURST_CTL_OP_QUERY_SRQ:
    case BURST_CTL_OP_QUERY_STATUS:
    case BURST_CTL_OP_QUERY_WORKERS:
    case BURST_CTL_OP_QUERY_COUNTERS:
    case BURST_CTL_OP_QUERY_QPS:
      return true;
    default:
      return false;
  }
}

size_t max_fds_in(uint16_t op) {
  switch (op) {
    case BURST_CTL_OP_CREATE_CQ:
    case BURST_CTL_OP_SET_ASYNC_FD:
    case BURST_CTL_OP_REG_MR:
      return 1;
    case BURST_CTL_OP_ATTACH_MEMORY:
      return 2;
    default:
      return 0;
  }
}

// Descriptors of a successful response, by op (CREATE_QP: 0 or 1).
bool out_fd_count_ok(uint16_t op, size_t n) {
  switch (op) {
    case BURST_CTL_OP_CREATE_CQ:
    case BURST_CTL_OP_CREATE_SRQ:
    case BURST_CTL_OP_RESIZE_CQ:
      return n == 1;
    case BURST_CTL_OP_CREATE_QP:
      return n <= 1;
    case BURST_CTL_OP_MAP_DOORBELL:
      return n == 2;
    default:
      return n == 0;
  }
}

int open_fd(Conn& c, uint8_t kind) {
  int p[2];
  switch (kind & 0xf) {
    case kFdPipeRead:
      if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
      c.ours.push_back(p[1]);
      return p[0];
    case kFdPipeWrite:
    case kFdPipeWriteBlocking:
      if (pipe2(p, O_CLOEXEC | ((kind & 0xf) == kFdPipeWrite ? O_NONBLOCK : 0)) != 0) return -1;
      c.ours.push_back(p[0]);
      return p[1];
    case kFdSharedMemfd:
      return fcntl(g->shared_fd, F_DUPFD_CLOEXEC, 0);
    case kFdSocket:
      if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, p) != 0) return -1;
      c.ours.push_back(p[1]);
      return p[0];
    case kFdSelfMaps:
      return open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    case kFdSelfMem:
      return open("/proc/self/mem", O_RDWR | O_CLOEXEC);
    case kFdDevNull:
      return open("/dev/null", O_RDWR | O_CLOEXEC);
    case kFdClosed:
      return kClosedFd;
    case kFdMinusOne:
      return -1;
    case kFdOtherMemfd: {
      const int fd = memfd_create("fuzz-other", MFD_CLOEXEC);
      if (fd >= 0 && ftruncate(fd, kBufBytes) != 0) {
        close(fd);
        return -1;
      }
      return fd;
    }
    case kFdSharedReadOnly:
    case kFdSharedPath: {
      char path[64];
      std::snprintf(path, sizeof(path), "/proc/self/fd/%d", g->shared_fd);
      return open(path, ((kind & 0xf) == kFdSharedPath ? O_PATH : O_RDONLY) | O_CLOEXEC);
    }
    case kFdDeadMaps:
      return g->dead_maps >= 0 ? fcntl(g->dead_maps, F_DUPFD_CLOEXEC, 0) : -1;
    case kFdDeadMem:
      return g->dead_mem >= 0 ? fcntl(g->dead_mem, F_DUPFD_CLOEXEC, 0) : -1;
    case kFdSelfStatus:
      return open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  }
  return -1;
}

// ---------------------------------------------------------------------------
// Shaping requests

uint32_t pick(Stream& st, const std::vector<uint32_t>& v, bool raw) {
  if (raw) return st.u32();
  const uint8_t b = st.u8();
  if (v.empty()) return 1u + b % 8u;
  return v[v.size() - 1 - b % v.size()];  // 0: the newest
}

template <class T>
T* as(std::vector<uint8_t>& m) {
  return reinterpret_cast<T*>(m.data());
}
// A copy of a message as T (a successful response or request: at least that long).
template <class T>
T read_as(const std::vector<uint8_t>& m) {
  T t{};
  std::memcpy(&t, m.data(), std::min(sizeof(T), m.size()));
  return t;
}

struct Shaped {
  std::vector<uint8_t> msg;
  uint16_t op = 0;
  // For the read-back of a REG_MR.
  uint64_t mr_addr = 0, mr_len = 0, mr_iova = 0;
  uint8_t addr_mode = 0;
};

void shape_reg_mr(Conn& c, Stream& st, uint8_t addr_mode, bool raw_handles, size_t n_fds,
                  Shaped* out) {
  auto* r = as<burst_ctl_reg_mr_req>(out->msg);
  r->pd_handle = pick(st, c.pds, raw_handles);
  r->access = (st.u8() ^ 0x07u) & 0x3fu;  // 0: local write, remote write + read; 0x20: unknown
  const uint32_t off = st.u16() % kBufBytes;
  const uint64_t len = kBufBytes - off - st.u16() % (kBufBytes - off);
  const uint64_t base = reinterpret_cast<uintptr_t>(addr_mode == kAddrShared ? g->shared : g->priv);
  switch (addr_mode) {
    case kAddrPrivate:
    case kAddrShared:
      r->addr = base + off;
      r->length = len;
      break;
    case kAddrReadOnly:
      r->addr = reinterpret_cast<uintptr_t>(g->ro) + off % g->page;
      r->length = std::min<uint64_t>(len, g->page - off % g->page);
      break;
    case kAddrGuard:
      r->addr = reinterpret_cast<uintptr_t>(g->guard) + off % g->page;
      r->length = 1 + len % g->page;
      break;
    case kAddrStraddle:
      r->addr = reinterpret_cast<uintptr_t>(g->guard) - 1 - off % 256;
      r->length = 2 + off % 256 + len % g->page;
      break;
    case kAddrRaw:
      r->addr = st.u64();
      r->length = st.u64();
      break;
    case kAddrEmpty:
      r->addr = base + off;
      r->length = 0;
      break;
    default:  // kAddrWrap
      r->addr = base + off;
      r->length = UINT64_MAX - len;
      break;
  }
  const uint8_t b = st.u8();
  r->iova = (b & 1) ? st.u64() : r->addr;
  r->flags = (n_fds >= 1 ? BURST_CTL_MR_F_FILE : 0u) ^ ((b & 2) ? BURST_CTL_MR_F_FILE : 0u) ^
             ((b & 4) ? 0x10u : 0u);
  r->reserved = (b & 8) ? 1 : 0;
  out->mr_addr = r->addr;
  out->mr_len = r->length;
  out->mr_iova = r->iova;
  out->addr_mode = addr_mode;
}

void shape_modify_qp(Conn& c, Stream& st, bool raw_handles, Shaped* out) {
  auto* r = as<burst_ctl_modify_qp_req>(out->msg);
  const uint8_t target = st.u8();
  r->qp_handle = pick(st, c.qps, raw_handles);
  auto it = c.qp_type.find(r->qp_handle);
  const bool ud = it != c.qp_type.end() && it->second == static_cast<uint8_t>(core::QpType::kUd);
  burst_ctl_qp_attr& a = r->attr;
  const std::vector<net::Gid>& gids = g->device->info().gids;
  switch (target % 8) {
    case 0:  // -> INIT
      a.qp_state = 1;
      a.port_num = 1 + st.u8() % 2;  // 2: no such port
      a.pkey_index = st.u8() % 2;
      a.qp_access_flags = (st.u8() ^ 0x06u) & 0x1fu;
      a.qkey = st.u32();
      r->attr_mask = core::kQpState | core::kQpPkeyIndex | core::kQpPort |
                     (ud ? core::kQpQkey : core::kQpAccessFlags);
      break;
    case 1:  // -> RTR
      a.qp_state = 2;
      if (ud) {
        r->attr_mask = core::kQpState;
        break;
      }
      a.path_mtu = 3 + st.u8() % 4;  // 1024 .. 4096 and one past
      a.dest_qp_num = pick(st, c.qpns, false) & 0xffffffu;
      a.rq_psn = st.u32() & 0xffffffu;
      a.max_dest_rd_atomic = st.u8() % 20;
      a.min_rnr_timer = st.u8() % 32;
      {
        // The port's GIDs (0: the newest, the IPv4 one) as source and destination,
        // or any bytes; dmac zero: burstd resolves it.
        const uint8_t b = st.u8();
        const size_t idx = gids.empty() ? 0 : gids.size() - 1 - b % gids.size();
        if (!gids.empty()) std::memcpy(a.ah.dgid, gids[idx].data(), 16);
        a.ah.sgid_index = static_cast<uint8_t>((b & 0x80) ? st.u8() % 4 : idx);
        if (b & 0x40) st.bytes(a.ah.dgid, 16);
        if (b & 0x20) st.bytes(a.ah.dmac, 6);
      }
      a.ah.hop_limit = 64;
      a.ah.vlan_id = 0xffff;
      r->attr_mask = core::kQpState | core::kQpAv | core::kQpPathMtu | core::kQpDestQpn |
                     core::kQpRqPsn | core::kQpMaxDestRdAtomic | core::kQpMinRnrTimer;
      break;
    case 2:  // -> RTS
      a.qp_state = 3;
      a.sq_psn = st.u32() & 0xffffffu;
      if (ud) {
        r->attr_mask = core::kQpState | core::kQpSqPsn;
        break;
      }
      a.timeout = st.u8() % 32;
      a.retry_cnt = st.u8() % 8;
      a.rnr_retry = st.u8() % 8;
      a.max_rd_atomic = st.u8() % 20;
      r->attr_mask = core::kQpState | core::kQpSqPsn | core::kQpQpTimeout | core::kQpRetryCnt |
                     core::kQpRnrRetry | core::kQpMaxQpRdAtomic;
      break;
    case 3:  // -> ERR
      a.qp_state = 6;
      r->attr_mask = core::kQpState;
      break;
    case 4:  // -> RESET
      a.qp_state = 0;
      r->attr_mask = core::kQpState;
      break;
    case 5:  // -> SQD / SQE, or a state out of range
      a.qp_state = 4 + st.u8() % 4;
      r->attr_mask = core::kQpState | (st.u8() & 1 ? core::kQpCurState : 0u);
      a.cur_qp_state = st.u8() % 8;
      break;
    default: {  // anything
      const uint32_t mask = st.u32();
      st.bytes(&a, sizeof(a));
      r->attr_mask = target & 1 ? mask : mask & ((core::kQpDestQpn << 1) - 1);
      break;
    }
  }
}

// Builds message `op` from the body stream.
void shape(Conn& c, uint16_t op, Stream& st, uint8_t aux, size_t n_fds, Shaped* out) {
  const bool raw_handles = (aux & kAuxRawHandles) == kAuxRawHandles;
  switch (op) {
    case BURST_CTL_OP_HELLO: {
      auto* r = as<burst_ctl_hello_req>(out->msg);
      static constexpr uint16_t kMin[] = {BURST_CTL_VERSION_MIN, 1, BURST_CTL_VERSION + 1, 0};
      static constexpr uint16_t kMax[] = {BURST_CTL_VERSION, 2, 9, 0};
      const uint8_t b = st.u8();
      r->version_min = b % 4 == 3 ? st.u16() : kMin[b % 4];
      r->version_max = (b >> 2) % 4 == 3 ? st.u16() : kMax[(b >> 2) % 4];
      r->flags = (b & 0x10) ? st.u32() : 0;
      st.bytes(r->client_name, sizeof(r->client_name));
      break;
    }
    case BURST_CTL_OP_QUERY_COUNTERS: {
      auto* r = as<burst_ctl_query_counters_req>(out->msg);
      const uint8_t b = st.u8();
      r->worker = b % 4 == 0 ? BURST_CTL_ALL_WORKERS : b % 4 == 3 ? st.u32() : b % 4 - 1u;
      r->reserved = (b & 4) ? 1 : 0;
      break;
    }
    case BURST_CTL_OP_QUERY_QPS: {
      auto* r = as<burst_ctl_query_qps_req>(out->msg);
      const uint8_t b = st.u8();
      r->start_qpn = (b & 1) ? pick(st, c.qpns, false) : (b & 2) ? st.u32() : 0;
      r->max = st.u8() % 4 == 3 ? st.u32() : st.u8() % 4;
      break;
    }
    case BURST_CTL_OP_DEALLOC_PD:
    case BURST_CTL_OP_DESTROY_CQ:
    case BURST_CTL_OP_DESTROY_QP:
    case BURST_CTL_OP_DEREG_MR:
    case BURST_CTL_OP_DESTROY_AH:
    case BURST_CTL_OP_DESTROY_SRQ:
    case BURST_CTL_OP_QUERY_SRQ: {
      auto* r = as<burst_ctl_handle_req>(out->msg);
      const std::vector<uint32_t>& v = op == BURST_CTL_OP_DEALLOC_PD   ? c.pds
                                       : op == BURST_CTL_OP_DESTROY_CQ ? c.cqs
                                       : op == BURST_CTL_OP_DESTROY_QP ? c.qps
                                       : op == BURST_CTL_OP_DEREG_MR   ? c.mrs
                                       : op == BURST_CTL_OP_DESTROY_AH ? c.ahs
                                                                       : c.srqs;
      r->handle = pick(st, v, raw_handles);
      r->reserved = st.u8() == 0xff ? 1 : 0;
      break;
    }
    case BURST_CTL_OP_CREATE_CQ: {
      auto* r = as<burst_ctl_create_cq_req>(out->msg);
      const uint8_t b = st.u8();
      r->cqe = b < 0x80 ? 1u + b * 4u : b < 0xf0 ? st.u32() % (1u << 21) : st.u32();
      const uint8_t f = st.u8();
      r->flags = (n_fds >= 1 ? BURST_CTL_CQ_F_CHANNEL : 0u) ^
                 ((f & 1) ? BURST_CTL_CQ_F_CHANNEL : 0u) ^ ((f & 2) ? 0x100u : 0u);
      r->user_handle = st.u64();
      break;
    }
    case BURST_CTL_OP_RESIZE_CQ: {
      auto* r = as<burst_ctl_resize_cq_req>(out->msg);
      r->cq_handle = pick(st, c.cqs, raw_handles);
      const uint8_t b = st.u8();
      r->cqe = b < 0x80 ? b * 4u : b < 0xf0 ? st.u32() % (1u << 21) : st.u32();
      break;
    }
    case BURST_CTL_OP_CREATE_QP: {
      auto* r = as<burst_ctl_create_qp_req>(out->msg);
      r->pd_handle = pick(st, c.pds, raw_handles);
      r->send_cq_handle = pick(st, c.cqs, raw_handles);
      r->recv_cq_handle = pick(st, c.cqs, raw_handles);
      const uint8_t t = st.u8();
      static constexpr uint8_t kTypes[] = {2, 4, 3};  // RC, UD, UC
      r->qp_type = t % 4 == 3 ? st.u8() : kTypes[t % 4];
      r->sq_sig_all = (t & 4) ? 1 : 0;
      const uint8_t b = st.u8();
      if (b & 0x80) {
        r->cap.max_send_wr = st.u32();
        r->cap.max_recv_wr = st.u32();
        r->cap.max_send_sge = st.u32();
        r->cap.max_recv_sge = st.u32();
        r->cap.max_inline_data = st.u32();
      } else {
        r->cap.max_send_wr = 1u + (b & 0x3f);
        r->cap.max_recv_wr = 1u + st.u8() % 64;
        r->cap.max_send_sge = 1u + st.u8() % 4;
        r->cap.max_recv_sge = 1u + st.u8() % 4;
        r->cap.max_inline_data = (b & 0x40) ? 64 : 0;
      }
      r->user_handle = st.u64();
      r->srq_handle = (t & 8) ? pick(st, c.srqs, raw_handles) : 0;
      break;
    }
    case BURST_CTL_OP_MODIFY_QP:
      shape_modify_qp(c, st, raw_handles, out);
      break;
    case BURST_CTL_OP_QUERY_QP: {
      auto* r = as<burst_ctl_query_qp_req>(out->msg);
      r->qp_handle = pick(st, c.qps, raw_handles);
      r->attr_mask = st.u32();
      break;
    }
    case BURST_CTL_OP_REG_MR:
      shape_reg_mr(c, st, (aux >> kAuxAddrShift) & 7, raw_handles, n_fds, out);
      break;
    case BURST_CTL_OP_MAP_DOORBELL: {
      auto* r = as<burst_ctl_map_doorbell_req>(out->msg);
      const uint8_t b = st.u8();
      r->worker = b % 4 == 3 ? st.u32() : b % 4 == 2 ? g->device->workers() : b % 4;
      break;
    }
    case BURST_CTL_OP_CREATE_AH: {
      auto* r = as<burst_ctl_create_ah_req>(out->msg);
      r->pd_handle = pick(st, c.pds, raw_handles);
      const std::vector<net::Gid>& gids = g->device->info().gids;
      const uint8_t b = st.u8();
      const size_t idx = gids.empty() ? 0 : gids.size() - 1 - b % gids.size();
      if (b % 3 == 2 || gids.empty()) {
        st.bytes(r->ah.dgid, 16);
      } else {
        std::memcpy(r->ah.dgid, gids[idx].data(), 16);
      }
      if (b & 4) st.bytes(r->ah.dmac, 6);
      r->ah.sgid_index = static_cast<uint8_t>((b & 0x20) ? st.u8() % 4 : idx);
      r->ah.hop_limit = 64;
      r->ah.flow_label = st.u32() & ((b & 8) ? ~0u : 0xfffffu);
      r->ah.traffic_class = st.u8();
      r->ah.vlan_id = (b & 16) ? st.u16() : 0xffff;
      break;
    }
    case BURST_CTL_OP_CREATE_SRQ: {
      auto* r = as<burst_ctl_create_srq_req>(out->msg);
      r->pd_handle = pick(st, c.pds, raw_handles);
      const uint8_t b = st.u8();
      r->attr.max_wr = (b & 0x80) ? st.u32() : 1u + (b & 0x7f);
      r->attr.max_sge = 1u + st.u8() % 4;
      r->attr.srq_limit = st.u8() % 8;
      r->user_handle = st.u64();
      break;
    }
    case BURST_CTL_OP_MODIFY_SRQ: {
      auto* r = as<burst_ctl_modify_srq_req>(out->msg);
      r->srq_handle = pick(st, c.srqs, raw_handles);
      const uint8_t b = st.u8();
      static constexpr uint32_t kMasks[] = {BURST_CTL_SRQ_LIMIT, 0, BURST_CTL_SRQ_MAX_WR};
      r->attr_mask = b % 4 == 3 ? st.u32() : kMasks[b % 4];
      r->attr.max_wr = st.u8();
      r->attr.srq_limit = st.u8();
      break;
    }
    case BURST_CTL_OP_ATTACH_MEMORY: {
      auto* r = as<burst_ctl_attach_memory_req>(out->msg);
      const uint8_t b = st.u8();
      r->flags = (n_fds >= 2 ? BURST_CTL_ATTACH_F_MEM : 0u) ^
                 ((b & 1) ? BURST_CTL_ATTACH_F_MEM : 0u) ^ ((b & 2) ? 0x100u : 0u);
      r->reserved = (b & 4) ? 1 : 0;
      break;
    }
    default:  // QUERY_STATUS, QUERY_WORKERS, ALLOC_PD, SET_ASYNC_FD: the header alone
      break;
  }
}

// The descriptors an op wants (ctl bit 4).
void auto_fds(uint16_t op, uint8_t fds_byte, uint8_t aux, size_t* n, uint8_t kinds[3]) {
  *n = 0;
  switch (op) {
    case BURST_CTL_OP_CREATE_CQ:
      *n = 1;
      kinds[0] = kFdSocket;
      break;
    case BURST_CTL_OP_SET_ASYNC_FD:
      *n = 1;
      kinds[0] = kFdPipeWrite;
      break;
    case BURST_CTL_OP_ATTACH_MEMORY:
      *n = (fds_byte & 1) ? 1 : 2;  // maps only, or maps + mem
      kinds[0] = kFdSelfMaps;
      kinds[1] = kFdSelfMem;
      break;
    case BURST_CTL_OP_REG_MR:
      if (((aux >> kAuxAddrShift) & 7) == kAddrShared) {
        *n = 1;
        kinds[0] = (fds_byte & 1) ? kFdSharedReadOnly : kFdSharedMemfd;
      }
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------------------
// Checks

core::MrTable& mrs() { return g->device->mrs(); }

// The host address an lkey resolves to for [iova, iova + len), and its space;
// nullptr when no PD of the table accepts the key.
uint8_t* resolve(uint32_t lkey, uint64_t iova, uint32_t len, uint32_t* space) {
  const uint32_t max_pd = BURST_MAX_PD;
  for (uint32_t pd = 1; pd <= max_pd; ++pd) {
    if (!mrs().pd_valid(pd)) continue;
    core::WcStatus err;
    if (uint8_t* h = mrs().local(pd, lkey, iova, len, 0, &err, space)) return h;
  }
  return nullptr;
}

// A registered MR over the fuzzer's buffers reaches exactly those bytes.
void verify_mr(const MrRec& r, Stream& st) {
  if (r.len == 0) return;
  const uint64_t n = std::min<uint64_t>(r.len, 64);
  const uint64_t off = (st.u16() % (r.len - n + 1));
  uint32_t space = 0;
  uint8_t* host = resolve(r.lkey, r.iova + off, static_cast<uint32_t>(n), &space);
  FUZZ_CHECK(host != nullptr, "registered MR lkey 0x%x does not resolve", r.lkey);
  FUZZ_CHECK((space == core::MemSpaces::kLocal) == (r.memory_mode == BURST_CTL_MEM_SHM),
             "MR memory mode %u but space %u", r.memory_mode, space);
  auto* client = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(r.addr + off));
  uint8_t got[64];
  if (space == core::MemSpaces::kLocal) {
    std::memcpy(got, host, n);
  } else {
    FUZZ_CHECK(mrs().spaces().read(space, got, host, n), "cross-memory read of MR 0x%x failed",
               r.lkey);
  }
  FUZZ_CHECK(std::memcmp(got, client, n) == 0, "MR 0x%x reads other bytes than the client's",
             r.lkey);
  if ((r.access & core::kAccessLocalWrite) == 0) return;
  uint8_t pattern[64];
  for (uint64_t i = 0; i < n; ++i) pattern[i] = static_cast<uint8_t>(~got[i] ^ i);
  if (space == core::MemSpaces::kLocal) {
    std::memcpy(host, pattern, n);
  } else {
    FUZZ_CHECK(mrs().spaces().write(space, host, pattern, n), "cross-memory write of MR 0x%x",
               r.lkey);
  }
  FUZZ_CHECK(std::memcmp(client, pattern, n) == 0, "a write through MR 0x%x missed the client",
             r.lkey);
  std::memcpy(client, got, n);
}

// What the response to message `msg` (as sent) must look like.
void check_response(const std::vector<uint8_t>& msg, const std::vector<uint8_t>& out,
                    const std::vector<int>& out_fds, bool close) {
  burst_ctl_hdr req{};
  if (msg.size() >= kHdr) std::memcpy(&req, msg.data(), kHdr);
  FUZZ_CHECK(out.size() >= kHdr, "response of %zu bytes", out.size());
  burst_ctl_hdr h;
  std::memcpy(&h, out.data(), kHdr);
  FUZZ_CHECK(h.magic == BURST_CTL_MAGIC, "response magic 0x%x", h.magic);
  FUZZ_CHECK(h.op == (req.op | BURST_CTL_RESPONSE), "response op 0x%x to op 0x%x", h.op, req.op);
  FUZZ_CHECK(h.request_id == req.request_id, "request id not echoed");
  FUZZ_CHECK(h.length == out.size(), "length field %u, %zu bytes", h.length, out.size());
  FUZZ_CHECK(h.status >= 0, "negative status %d", h.status);
  if (h.status != 0) {
    FUZZ_CHECK(out.size() == kHdr ||
                   (req.op == BURST_CTL_OP_HELLO && out.size() == sizeof(burst_ctl_hello_resp)),
               "error response (op %u status %d) of %zu bytes", req.op, h.status, out.size());
    FUZZ_CHECK(out_fds.empty(), "descriptors with an error response (op %u)", req.op);
  } else {
    FUZZ_CHECK(ctl::check_response(out.data(), out.size(), req.op, req.request_id) == 0,
               "malformed success response to op %u", req.op);
    FUZZ_CHECK(out_fd_count_ok(req.op, out_fds.size()), "%zu descriptors with op %u",
               out_fds.size(), req.op);
  }
  for (int fd : out_fds) FUZZ_CHECK(is_open(fd), "response descriptor %d is not open", fd);
  FUZZ_CHECK(!close || h.status == EPROTO, "close with status %d", h.status);
}

// Records what a successful response created.
void record(Conn& c, const Shaped& sh, const std::vector<uint8_t>& out, Stream& st) {
  burst_ctl_hdr h;
  std::memcpy(&h, out.data(), kHdr);
  if (h.status != 0) return;
  switch (sh.op) {
    case BURST_CTL_OP_ALLOC_PD:
      c.pds.push_back(read_as<burst_ctl_alloc_pd_resp>(out).pd_handle);
      break;
    case BURST_CTL_OP_CREATE_CQ:
      c.cqs.push_back(read_as<burst_ctl_create_cq_resp>(out).cq_handle);
      break;
    case BURST_CTL_OP_CREATE_QP: {
      const auto r = read_as<burst_ctl_create_qp_resp>(out);
      c.qps.push_back(r.qp_handle);
      c.qpns.push_back(r.qpn);
      c.qp_type[r.qp_handle] = read_as<burst_ctl_create_qp_req>(sh.msg).qp_type;
      break;
    }
    case BURST_CTL_OP_CREATE_AH:
      c.ahs.push_back(read_as<burst_ctl_create_ah_resp>(out).ah_handle);
      break;
    case BURST_CTL_OP_CREATE_SRQ:
      c.srqs.push_back(read_as<burst_ctl_create_srq_resp>(out).srq_handle);
      break;
    case BURST_CTL_OP_REG_MR: {
      const auto r = read_as<burst_ctl_reg_mr_resp>(out);
      const auto q = read_as<burst_ctl_reg_mr_req>(sh.msg);
      FUZZ_CHECK(!c.revoked, "REG_MR succeeded for a revoked client");
      MrRec m;
      m.handle = r.mr_handle;
      m.lkey = r.lkey;
      m.addr = q.addr;
      m.iova = q.iova;
      m.len = q.length;
      m.access = q.access;
      m.memory_mode = r.memory_mode;
      c.mrs.push_back(m.handle);
      c.mr_recs.push_back(m);
      const uint64_t shared = reinterpret_cast<uintptr_t>(g->shared);
      const bool in_shared = m.addr >= shared && m.addr + m.len <= shared + kBufBytes;
      // Zero-copy only for the memfd the client mapped and sent.
      FUZZ_CHECK(m.memory_mode != BURST_CTL_MEM_SHM || in_shared || m.len == 0,
                 "zero-copy MR outside the shared mapping (addr 0x%llx)",
                 static_cast<unsigned long long>(m.addr));
      const uint64_t priv = reinterpret_cast<uintptr_t>(g->priv);
      const bool in_priv = m.addr >= priv && m.addr + m.len <= priv + kBufBytes;
      if (in_shared || in_priv) {
        verify_mr(m, st);
        ++g->mrs_verified[m.memory_mode == BURST_CTL_MEM_SHM ? 1 : 0];
      }
      break;
    }
    case BURST_CTL_OP_DEREG_MR: {
      const auto q = read_as<burst_ctl_handle_req>(sh.msg);
      for (const MrRec& m : c.mr_recs) {
        if (m.handle != q.handle || m.len == 0) continue;
        uint32_t space;
        FUZZ_CHECK(resolve(m.lkey, m.iova, 1, &space) == nullptr,
                   "lkey 0x%x still resolves after DEREG_MR", m.lkey);
      }
      break;
    }
    default:
      break;
  }
}

// Whether the response is the one a request that passed framing must get.
void check_order(const Conn& c, bool hello_before, bool revoked_before, uint16_t op, size_t n_in,
                 const int* fds, int status) {
  if (op == BURST_CTL_OP_HELLO) return;
  if (!hello_before) {
    FUZZ_CHECK(status == EPROTO, "op %u before HELLO: status %d", op, status);
    return;
  }
  size_t eff = 0;
  for (size_t i = 0; i < std::min<size_t>(n_in, 2); ++i) {
    if (fds[i] >= 0) eff = i + 1;
  }
  if (n_in > 2 || eff > max_fds_in(op)) {
    FUZZ_CHECK(status == EBADF, "op %u with %zu descriptors: status %d", op, n_in, status);
    return;
  }
  if (revoked_before && !allowed_when_revoked(op)) {
    FUZZ_CHECK(status == EACCES, "op %u of a revoked client: status %d", op, status);
  }
  (void)c;
}

// After a revocation: no MR key resolves, every QP is in ERR.
void check_revoked(Conn& c) {
  for (const MrRec& m : c.mr_recs) {
    if (m.len == 0) continue;
    uint32_t space;
    FUZZ_CHECK(resolve(m.lkey, m.iova, 1, &space) == nullptr,
               "lkey 0x%x of a revoked client still resolves", m.lkey);
  }
  for (uint32_t qp : c.qps) {
    burst_ctl_query_qp_resp q{};
    if (g->res->query_qp(c.s.id, qp, &q) != 0) continue;
    FUZZ_CHECK(q.attr.qp_state == static_cast<uint8_t>(core::QpState::kErr),
               "QP %u of a revoked client in state %u", q.qpn, q.attr.qp_state);
  }
}

// ---------------------------------------------------------------------------
// Sending

// Sends one message with descriptors of `kinds`; checks the response and the
// descriptors; returns the response status.
int send(Conn& c, const Shaped& sh, size_t n_fds, const uint8_t* kinds, bool clean, Stream& st) {
  int fds[3] = {-1, -1, -1};
  FdId ids[3];
  bool real[3] = {false, false, false};
  for (size_t i = 0; i < n_fds; ++i) {
    fds[i] = i < 2 ? open_fd(c, kinds[i]) : open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct stat stt;
    if (fds[i] >= 0 && fds[i] != kClosedFd && fstat(fds[i], &stt) == 0) {
      real[i] = true;
      ids[i] = FdId{fds[i], stt.st_dev, stt.st_ino};
    }
  }
  const bool hello_before = c.s.hello;
  const bool revoked_before = c.revoked;
  std::vector<uint8_t> out;
  std::vector<int> out_fds;
  bool close = false;
  g->disp->handle(c.s, sh.msg.data(), sh.msg.size(), fds, n_fds, &out, &out_fds, &close);
  check_response(sh.msg, out, out_fds, close);
  burst_ctl_hdr h;
  std::memcpy(&h, out.data(), kHdr);
  if (g->stats != nullptr) ++(*g->stats)[{sh.op, h.status}];
  if (g->trace) {
    std::fprintf(stderr, "client %u: %s (%zu bytes, %zu fds%s%s) -> %s\n", c.s.id,
                 ctl::op_name(sh.op), sh.msg.size(), n_fds, clean ? "" : ", not clean",
                 c.revoked ? ", revoked" : "", h.status ? std::strerror(h.status) : "ok");
  }

  // Which descriptors burstd kept: only on success, only those the op keeps.
  bool may_keep[3] = {false, false, false};
  if (h.status == 0 && sh.msg.size() >= kHdr) {
    burst_ctl_hdr rq;
    std::memcpy(&rq, sh.msg.data(), kHdr);
    if (rq.op == BURST_CTL_OP_CREATE_CQ) {
      may_keep[0] = (read_as<burst_ctl_create_cq_req>(sh.msg).flags & BURST_CTL_CQ_F_CHANNEL) != 0;
    } else if (rq.op == BURST_CTL_OP_SET_ASYNC_FD) {
      may_keep[0] = true;
    } else if (rq.op == BURST_CTL_OP_ATTACH_MEMORY) {
      may_keep[0] = true;
      may_keep[1] =
          (read_as<burst_ctl_attach_memory_req>(sh.msg).flags & BURST_CTL_ATTACH_F_MEM) != 0;
    }
  }
  for (size_t i = 0; i < n_fds; ++i) {
    if (!real[i]) continue;
    const bool kept = same_file(ids[i]);
    FUZZ_CHECK(kept == may_keep[i], "descriptor %zu (kind %u) of op %u (status %d) %s", i,
               i < 2 ? kinds[i] : kFdDevNull, sh.op, h.status,
               kept ? "was kept" : "was closed though the op keeps it");
    if (kept) c.kept.push_back(ids[i]);
  }
  if (clean) check_order(c, hello_before, revoked_before, sh.op, n_fds, fds, h.status);
  if (clean) record(c, sh, out, st);
  if (close) c.open = false;
  return h.status;
}

void hello(Conn& c) {
  Shaped sh;
  sh.op = BURST_CTL_OP_HELLO;
  sh.msg.assign(sizeof(burst_ctl_hello_req), 0);
  auto* r = as<burst_ctl_hello_req>(sh.msg);
  ctl::init_request(&r->hdr, BURST_CTL_OP_HELLO, sizeof(*r), BURST_CTL_VERSION, c.next_id++);
  r->version_min = BURST_CTL_VERSION_MIN;
  r->version_max = BURST_CTL_VERSION;
  ctl::set_str(r->client_name, "fuzz_ctl_dispatch");
  Stream none{nullptr, 0};
  const int st = send(c, sh, 0, nullptr, true, none);
  FUZZ_CHECK(st == 0 && c.s.hello, "a valid HELLO failed: %d", st);
}

// ---------------------------------------------------------------------------
// Setup

void drop_ipc_lock() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return;
  data[0].effective &= ~(1u << CAP_IPC_LOCK);
  (void)syscall(SYS_capset, &hdr, data);
  rlimit rl;
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, kMemlockBytes);
    (void)setrlimit(RLIMIT_MEMLOCK, &rl);
  }
}

// /proc/PID/maps and mem of a child that has exited (and been reaped).
void open_dead_process() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[1]);
    char b;
    (void)!read(p[0], &b, 1);  // until the parent has opened our files
    _exit(0);
  }
  close(p[0]);
  if (pid < 0) {
    close(p[1]);
    return;
  }
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/maps", static_cast<int>(pid));
  g->dead_maps = open(path, O_RDONLY | O_CLOEXEC);
  std::snprintf(path, sizeof(path), "/proc/%d/mem", static_cast<int>(pid));
  g->dead_mem = open(path, O_RDWR | O_CLOEXEC);
  close(p[1]);
  int status;
  (void)waitpid(pid, &status, 0);
}

void print_stats() {
  std::fprintf(stderr, "fuzz_ctl_dispatch: responses by op and status:\n");
  for (const auto& [k, n] : *g->stats) {
    std::fprintf(stderr, "  %-14s %-24s %llu\n", ctl::op_name(k.first),
                 k.second == 0 ? "ok" : std::strerror(k.second),
                 static_cast<unsigned long long>(n));
  }
  std::fprintf(stderr, "  MRs read back: %llu cross-memory, %llu zero-copy; %llu revocations\n",
               static_cast<unsigned long long>(g->mrs_verified[0]),
               static_cast<unsigned long long>(g->mrs_verified[1]),
               static_cast<unsigned long long>(g->revocations));
}

void setup() {
  g = new Env;
  LogLevel level = LogLevel::kError;
  if (const char* l = std::getenv("BURST_FUZZ_LOG")) (void)parse_log_level(l, &level);
  set_log_level(level);
  g->trace = std::getenv("BURST_FUZZ_TRACE") != nullptr;
  if (std::getenv("BURST_FUZZ_STATS") != nullptr) {
    g->stats = new std::map<std::pair<uint16_t, int>, uint64_t>;
    std::atexit(print_stats);
  }
  signal(SIGPIPE, SIG_IGN);  // as burstd's event loop does
  g->page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  drop_ipc_lock();

  // The client's memory.
  void* p = mmap(nullptr, kBufBytes + g->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  FUZZ_CHECK(p != MAP_FAILED, "mmap private buffer");
  g->priv = static_cast<uint8_t*>(p);
  g->guard = g->priv + kBufBytes;
  FUZZ_CHECK(mprotect(g->guard, g->page, PROT_NONE) == 0, "mprotect guard");
  g->shared_fd = memfd_create("fuzz-shared", MFD_CLOEXEC);
  FUZZ_CHECK(g->shared_fd >= 0 && ftruncate(g->shared_fd, kBufBytes) == 0, "memfd");
  p = mmap(nullptr, kBufBytes, PROT_READ | PROT_WRITE, MAP_SHARED, g->shared_fd, 0);
  FUZZ_CHECK(p != MAP_FAILED, "mmap shared buffer");
  g->shared = static_cast<uint8_t*>(p);
  p = mmap(nullptr, g->page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  FUZZ_CHECK(p != MAP_FAILED, "mmap read-only page");
  g->ro = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < kBufBytes; ++i) {
    g->priv[i] = static_cast<uint8_t>(i * 7 + 1);
    g->shared[i] = static_cast<uint8_t>(i * 13 + 5);
  }
  FUZZ_CHECK(!is_open(kClosedFd), "descriptor %d is open", kClosedFd);
  open_dead_process();

  g->config.backend = BackendKind::kLoopback;
  g->config.workers = 2;
  g->config.mtu = 1500;
  std::string err;
  g->device = Device::Open(g->config, &err);
  FUZZ_CHECK(g->device != nullptr, "Device::Open: %s", err.c_str());
  UserLimits limits;
  limits.max_qps = limits.max_cqs = limits.max_mrs = limits.max_pds = 3;
  g->res = std::make_unique<Resources>(*g->device, 2000, limits);
  g->disp = std::make_unique<Dispatcher>(g->config, *g->device, *g->res);

  // The doorbell regions are created on first use and kept by the device:
  // create them now, so an input's descriptor balance does not see them.
  Conn warm;
  warm.s.id = g->next_client++;
  warm.s.pid = getpid();
  g->disp->open_session(warm.s);
  hello(warm);
  for (uint32_t w = 0; w < g->device->workers(); ++w) {
    Shaped sh;
    sh.op = BURST_CTL_OP_MAP_DOORBELL;
    sh.msg.assign(sizeof(burst_ctl_map_doorbell_req), 0);
    auto* r = as<burst_ctl_map_doorbell_req>(sh.msg);
    ctl::init_request(&r->hdr, sh.op, sizeof(*r), warm.s.version, warm.next_id++);
    r->worker = w;
    Stream none{nullptr, 0};
    FUZZ_CHECK(send(warm, sh, 0, nullptr, true, none) == 0, "MAP_DOORBELL %u", w);
  }
  g->disp->close_session(warm.s, "warm-up over");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setup();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int fds_before = count_open_fds();
  Conn c;
  c.s.id = g->next_client++;
  c.s.pid = getpid();
  c.s.uid = (data[0] & kSessOtherUid) ? kOtherUid : 0;
  c.s.gid = c.s.uid;
  g->disp->open_session(c.s);
  if ((data[0] & kSessNoHello) != kSessNoHello) hello(c);

  size_t pos = 1;
  for (size_t m = 0; m < kMaxMessages && c.open && pos + 5 <= size; ++m) {
    const uint8_t ctl_b = data[pos], op_b = data[pos + 1], fds_b = data[pos + 2],
                  aux = data[pos + 3], event = data[pos + 4];
    pos += 5;
    if (event == kEventRevoke) {
      g->res->revoke_client(c.s.id, "fuzz");
      c.revoked = true;
      ++g->revocations;
      check_revoked(c);
    }
    if (event == kEventCheck) {
      FUZZ_CHECK(g->res->check_clients() == 0, "the client check revoked a living client");
    }
    size_t n_fds = (ctl_b >> kCtlFdShift) & 3;
    uint8_t kinds[3] = {static_cast<uint8_t>(fds_b & 0xf), static_cast<uint8_t>(fds_b >> 4),
                        kFdDevNull};
    Shaped sh;
    bool clean = false;
    if ((ctl_b & 3) == 0) {  // raw bytes
      size_t len = op_b | ((aux & 3u) << 8);
      if (aux & kAuxOversized) len += BURST_CTL_MAX_MSG + 1;
      sh.msg.assign(len, 0);
      const size_t take = std::min(len, size - pos);
      if (take > 0) std::memcpy(sh.msg.data(), data + pos, take);
      pos += take;
      if (len >= kHdr) std::memcpy(&sh.op, sh.msg.data() + offsetof(burst_ctl_hdr, op), 2);
    } else if (op_b % kNumOps == kNumOps - 1) {  // an op number and body from the input
      Stream st{data + pos, size - pos};
      sh.op = st.u16();
      const size_t len = kHdr + st.u8();
      sh.msg.assign(len, 0);
      ctl::init_request(as<burst_ctl_hdr>(sh.msg), sh.op, static_cast<uint32_t>(len),
                        c.s.hello ? c.s.version : BURST_CTL_VERSION, c.next_id++);
      st.bytes(sh.msg.data() + kHdr, len - kHdr);
      pos += st.i;
    } else {
      sh.op = kOps[op_b % kNumOps];
      const ctl::OpSpec* spec = ctl::find_op(sh.op);
      FUZZ_CHECK(spec != nullptr, "op %u not in the codec's table", sh.op);
      if (ctl_b & kCtlAutoFds) auto_fds(sh.op, fds_b, aux, &n_fds, kinds);
      sh.msg.assign(spec->request_size, 0);
      ctl::init_request(as<burst_ctl_hdr>(sh.msg), sh.op, spec->request_size,
                        c.s.hello ? c.s.version : BURST_CTL_VERSION, c.next_id++);
      const size_t body = spec->request_size - kHdr;
      Stream st{data + pos, std::min(body, size - pos)};
      const bool corrupt = (ctl_b & kCtlCorrupt) != 0;
      const uint8_t how = aux & 7;
      if (corrupt && how == kCorruptRawBody) {
        st.bytes(sh.msg.data() + kHdr, body);
      } else {
        shape(c, sh.op, st, aux, n_fds, &sh);
      }
      pos += std::min(body, size - pos);
      clean = !corrupt || how == kCorruptRawBody;
      if (corrupt) {
        auto* h = as<burst_ctl_hdr>(sh.msg);
        switch (how) {
          case kCorruptVersion:
            h->version = static_cast<uint16_t>(h->version + 1 + (op_b >> 5));
            break;
          case kCorruptLength:
            h->length += 1 + (op_b >> 5);
            break;
          case kCorruptTrailing:
            sh.msg.push_back(op_b);
            as<burst_ctl_hdr>(sh.msg)->length = static_cast<uint32_t>(sh.msg.size());
            break;
          case kCorruptShort:
            sh.msg.pop_back();
            if (sh.msg.size() >= kHdr) {
              as<burst_ctl_hdr>(sh.msg)->length = static_cast<uint32_t>(sh.msg.size());
            }
            break;
          case kCorruptStatus:
            h->status = 1 + (op_b >> 5);
            break;
          case kCorruptMagic:
            h->magic ^= 1u << (op_b >> 5);
            break;
          case kCorruptResponse:
            h->op |= BURST_CTL_RESPONSE;
            break;
          default:
            break;
        }
      }
    }
    // Shaping reads its choices from the body; the read-back of an MR gets
    // its offset from the bytes after the message (zeros at the end).
    Stream after{data + pos, size - pos};
    send(c, sh, n_fds, kinds, clean, after);
  }

  if (c.revoked) check_revoked(c);
  g->disp->close_session(c.s, "input over");
  FUZZ_CHECK(g->res->pd_count() == 0 && g->res->cq_count() == 0 && g->res->qp_count() == 0,
             "objects left after close_session: %u PDs %u CQs %u QPs", g->res->pd_count(),
             g->res->cq_count(), g->res->qp_count());
  FUZZ_CHECK(mrs().mr_count() == 0, "%u MRs left after close_session", mrs().mr_count());
  FUZZ_CHECK(mrs().spaces().attached() == 0, "%u memory spaces left after close_session",
             mrs().spaces().attached());
  for (uint32_t pd = 1; pd <= BURST_MAX_PD; ++pd) {
    FUZZ_CHECK(!mrs().pd_valid(pd), "table PD %u left after close_session", pd);
  }
  for (const FdId& id : c.kept) {
    FUZZ_CHECK(!same_file(id), "descriptor %d kept by burstd is open after close_session", id.fd);
  }
  for (int fd : c.ours) close(fd);
  const int fds_after = count_open_fds();
  FUZZ_CHECK(fds_after == fds_before, "%d descriptors before the input, %d after", fds_before,
             fds_after);
  return 0;
}
