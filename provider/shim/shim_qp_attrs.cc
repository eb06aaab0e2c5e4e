// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libburst-shim.so: INIT_QP_ATTR answered ahead (abi/burst_ctl_cm.h,
// BURST_CTL_CM_CMD_INIT_QP_ATTRS; docs/cm.md "Fewer round trips"). librdmacm
// asks INIT_QP_ATTR four times per connection and side (INIT at
// rdma_create_qp, then INIT, RTR and RTS in rdma_accept or on the
// CONNECT_RESPONSE), each a round trip to burstd. A push channel's
// INIT_QP_ATTR asks burstd for the state and every later one up to RTS at
// once; the later answers are kept here and given for the id's next
// INIT_QP_ATTRs without a round trip, until a command that may change the id
// is written on any channel (CONNECT, ACCEPT, SET_OPTION, DISCONNECT,
// DESTROY_ID, ...: every command but INIT_QP_ATTR, QUERY and CREATE_ID).
// A change burstd makes on its own (a REJ, DREQ or timeout from the peer)
// does not reach this cache: the kernel would then fail the INIT_QP_ATTR,
// here the command after it fails (ACCEPT, or the RTU's) with the same errno.
// BURST_CM_QP_ATTRS=0 turns it off (every INIT_QP_ATTR relayed, as before).
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_cm.h>

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "abi/burst_ctl_proto.h"
#include "provider/shim/shim_qp_attrs.h"

namespace burst::shim {
namespace {

constexpr uint32_t kFirst = 1, kStates = 4;  // INIT .. RTS are kept
constexpr uint32_t kSlots = 1024;  // direct-mapped by id (rdma_cm ids are numbered in order)
constexpr size_t kAttr = BURST_CTL_CM_QP_ATTR_BYTES;
constexpr int kAll = -2;   // the command's id is not known: forget every entry
constexpr int kKeep = -1;  // the command changes no id

struct Entry {
  uint32_t id;
  uint32_t channel;
  uint32_t states;  // bit per qp_state held (0: empty)
  uint8_t attr[kStates - kFirst][kAttr];
};

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
Entry* g_cache;  // kSlots entries, allocated at the first store (no libstdc++ here)
uint32_t g_used;  // entries with states != 0
std::atomic<uint64_t> g_epoch{0};             // bumped by every command that may change an id
std::atomic<int> g_mode{-1};                  // -1 unknown, 0 off, 1 on

// Where a command names its id, kKeep for the ones that change none, kAll for
// the ones whose id is not an rdma_cm id's (LEAVE_MCAST) or not known here.
int id_offset(uint32_t cmd) {
  switch (cmd) {
    case RDMA_USER_CM_CMD_INIT_QP_ATTR:
    case RDMA_USER_CM_CMD_QUERY:
    case RDMA_USER_CM_CMD_QUERY_ROUTE:
    case RDMA_USER_CM_CMD_CREATE_ID:
    case RDMA_USER_CM_CMD_GET_EVENT: return kKeep;
    case RDMA_USER_CM_CMD_DESTROY_ID: return offsetof(rdma_ucm_destroy_id, id);
    case RDMA_USER_CM_CMD_BIND_IP: return offsetof(rdma_ucm_bind_ip, id);
    case RDMA_USER_CM_CMD_RESOLVE_IP: return offsetof(rdma_ucm_resolve_ip, id);
    case RDMA_USER_CM_CMD_RESOLVE_ROUTE: return offsetof(rdma_ucm_resolve_route, id);
    case RDMA_USER_CM_CMD_CONNECT: return offsetof(rdma_ucm_connect, id);
    case RDMA_USER_CM_CMD_LISTEN: return offsetof(rdma_ucm_listen, id);
    case RDMA_USER_CM_CMD_ACCEPT: return offsetof(rdma_ucm_accept, id);
    case RDMA_USER_CM_CMD_REJECT: return offsetof(rdma_ucm_reject, id);
    case RDMA_USER_CM_CMD_DISCONNECT: return offsetof(rdma_ucm_disconnect, id);
    case RDMA_USER_CM_CMD_SET_OPTION: return offsetof(rdma_ucm_set_option, id);
    case RDMA_USER_CM_CMD_NOTIFY: return offsetof(rdma_ucm_notify, id);
    case RDMA_USER_CM_CMD_MIGRATE_ID: return offsetof(rdma_ucm_migrate_id, id);
    case RDMA_USER_CM_CMD_BIND: return offsetof(rdma_ucm_bind, id);
    case RDMA_USER_CM_CMD_RESOLVE_ADDR: return offsetof(rdma_ucm_resolve_addr, id);
    case RDMA_USER_CM_CMD_JOIN_IP_MCAST: return offsetof(rdma_ucm_join_ip_mcast, id);
    case RDMA_USER_CM_CMD_JOIN_MCAST: return offsetof(rdma_ucm_join_mcast, id);
    default: return kAll;
  }
}

void drop(Entry& e) {
  if (e.states != 0) --g_used;
  e.states = 0;
}

void forget(uint32_t cmd, const uint8_t* body, size_t in) {
  const int off = id_offset(cmd);
  pthread_mutex_lock(&g_mu);
  if (g_used == 0) {
  } else if (off == kAll || in < static_cast<size_t>(off) + sizeof(uint32_t)) {
    for (uint32_t i = 0; i < kSlots; ++i) drop(g_cache[i]);
  } else {
    uint32_t id;
    memcpy(&id, body + off, sizeof(id));
    if (g_cache[id % kSlots].id == id) drop(g_cache[id % kSlots]);
  }
  pthread_mutex_unlock(&g_mu);
}

}  // namespace

bool qpa_enabled() {
  int m = g_mode.load(std::memory_order_relaxed);
  if (m < 0) {
    const char* v = getenv("BURST_CM_QP_ATTRS");
    m = v != nullptr && strcmp(v, "0") == 0 ? 0 : 1;
    g_mode.store(m, std::memory_order_relaxed);
  }
  return m == 1;
}

void qpa_disable() { g_mode.store(0, std::memory_order_relaxed); }

bool qpa_answer(uint32_t channel, const rdma_ucm_cmd_hdr& hdr, const uint8_t* body, void* out,
                size_t out_len, size_t* n) {
  if (hdr.cmd != RDMA_USER_CM_CMD_INIT_QP_ATTR || hdr.in < sizeof(rdma_ucm_init_qp_attr) ||
      !qpa_enabled()) {
    return false;
  }
  rdma_ucm_init_qp_attr q;
  memcpy(&q, body, sizeof(q));
  if (q.qp_state < kFirst || q.qp_state >= kStates) return false;
  pthread_mutex_lock(&g_mu);
  const Entry* e = g_cache != nullptr ? &g_cache[q.id % kSlots] : nullptr;
  const bool hit = e != nullptr && e->id == q.id && e->channel == channel &&
                   (e->states & (1u << q.qp_state)) != 0;
  if (hit) {
    *n = out_len < kAttr ? out_len : kAttr;
    memcpy(out, e->attr[q.qp_state - kFirst], *n);
  }
  pthread_mutex_unlock(&g_mu);
  return hit;
}

uint64_t qpa_before(uint32_t cmd, const uint8_t* body, size_t in) {
  if (id_offset(cmd) == kKeep) return g_epoch.load(std::memory_order_acquire);
  g_epoch.fetch_add(1, std::memory_order_acq_rel);
  forget(cmd, body, in);
  return 0;
}

void qpa_after(uint32_t cmd, const uint8_t* body, size_t in) {
  if (id_offset(cmd) != kKeep) forget(cmd, body, in);
}

void qpa_store(uint32_t channel, uint32_t id, uint64_t epoch, const uint8_t* attrs,
               size_t bytes) {
  pthread_mutex_lock(&g_mu);
  if (g_cache == nullptr) g_cache = static_cast<Entry*>(calloc(kSlots, sizeof(Entry)));
  // A command that may have changed an id went out meanwhile: this answer may
  // be older than that command's effect.
  if (g_cache != nullptr && g_epoch.load(std::memory_order_acquire) == epoch) {
    Entry& e = g_cache[id % kSlots];
    drop(e);
    e.id = id;
    e.channel = channel;
    for (size_t off = 0; off + kAttr <= bytes; off += kAttr) {
      ib_uverbs_qp_attr a;
      memcpy(&a, attrs + off, sizeof(a));
      if (a.qp_state < kFirst || a.qp_state >= kStates) continue;
      memcpy(e.attr[a.qp_state - kFirst], attrs + off, kAttr);
      e.states |= 1u << a.qp_state;
    }
    if (e.states != 0) ++g_used;
  }
  pthread_mutex_unlock(&g_mu);
}

}  // namespace burst::shim
