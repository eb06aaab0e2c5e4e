// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// UD as consumers read it, and UD multicast, through the burst provider (plain
// libibverbs, run under `burstctl run`). Each mode prints what it checked and
// exits 0 on success, 1 on a failed check.
//
//   wc                 (loopback burstd) a UD QP sends to another of the same
//                      process over GID index 1 (IPv4-mapped) and 0 (link-local
//                      IPv6): ibv_wc as a ConnectX fills it (IBV_WC_GRH, the GRH
//                      area, sl = RoCE v2 L3 type 0xA / 0x9, src_qp, pkey_index,
//                      slid, dlid_path_bits 0), through ibv_poll_cq and the
//                      ibv_cq_ex read functions
//   rules              (loopback burstd) attach/detach errnos: a non-UD QP and a
//                      unicast GID EINVAL, twice is a success, detaching what is
//                      not attached EINVAL, destroying an attached QP EBUSY; the
//                      limits in ibv_query_device
//   recv GROUP N DIR   N UD QPs attached to GROUP (an IPv4 or IPv6 address); DIR/ready
//                      once attached; each must receive a datagram (fields and
//                      bytes checked); DIR/received, then waits for DIR/go-detach,
//                      detaches, DIR/detached, waits for DIR/stop: no completion
//                      may have arrived after the detach
//   send GROUP DIR     sends a datagram to GROUP every 50 ms until DIR/stop (from
//                      GID 1 to an IPv4 group, GID 0 to an IPv6 one)
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/provider/probe_util.h"

namespace {

constexpr uint32_t kQkey = 0x11111111;
constexpr uint32_t kMcastQpn = 0xFFFFFF;
constexpr uint32_t kPayload = 256;
constexpr uint32_t kSlot = 40 + kPayload;
constexpr int kRecvs = 32;
constexpr int kWaitMs = 30000;

using Clock = std::chrono::steady_clock;

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void touch(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  CHECK(f != nullptr, "cannot create %s", path.c_str());
  std::fclose(f);
}

// Waits (bounded) for a file the other side creates.
void wait_file(const std::string& path) {
  const auto end = Clock::now() + std::chrono::milliseconds(kWaitMs);
  while (!exists(path)) {
    CHECK(Clock::now() < end, "timed out waiting for %s", path.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// An IPv4 address as ::ffff:a.b.c.d, or an IPv6 one.
ibv_gid parse_gid(const char* text) {
  ibv_gid g{};
  in_addr a{};
  if (inet_pton(AF_INET, text, &a) == 1) {
    g.raw[10] = g.raw[11] = 0xff;
    std::memcpy(g.raw + 12, &a, 4);
    return g;
  }
  CHECK(inet_pton(AF_INET6, text, g.raw) == 1, "not an IP address: %s", text);
  return g;
}

bool is_v4(const ibv_gid& g) {
  const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g.raw, mapped, 12) == 0;
}

struct Dev {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  std::vector<uint8_t> buf;
  ibv_mr* mr = nullptr;
};

Dev open_dev(size_t bytes) {
  Dev d;
  d.ctx = burst::test::open_burst0();
  d.pd = ibv_alloc_pd(d.ctx);
  CHECK(d.pd != nullptr, "ibv_alloc_pd: %s", std::strerror(errno));
  d.buf.assign(bytes, 0);
  d.mr = ibv_reg_mr(d.pd, d.buf.data(), d.buf.size(), IBV_ACCESS_LOCAL_WRITE);
  CHECK(d.mr != nullptr, "ibv_reg_mr: %s", std::strerror(errno));
  return d;
}

ibv_qp* make_qp(Dev& d, ibv_cq* cq, ibv_qp_type type) {
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = cq;
  a.qp_type = type;
  a.cap.max_send_wr = a.cap.max_recv_wr = kRecvs;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(d.pd, &a);
  CHECK(qp != nullptr, "ibv_create_qp: %s", std::strerror(errno));
  return qp;
}

void ud_ready(ibv_qp* qp) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = kQkey;
  CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0,
        "INIT");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "RTR");
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0, "RTS");
}

void post_recv(Dev& d, ibv_qp* qp, size_t slot_index) {
  ibv_sge s{reinterpret_cast<uintptr_t>(d.buf.data() + slot_index * kSlot), kSlot, d.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = slot_index;
  wr.sg_list = &s;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "ibv_post_recv");
}

// Sends kPayload bytes (from slot `slot_index`, filled with `fill`) to ah/qpn.
void post_send(Dev& d, ibv_qp* qp, ibv_ah* ah, uint32_t qpn, size_t slot_index, uint8_t fill) {
  uint8_t* p = d.buf.data() + slot_index * kSlot;
  std::memset(p, fill, kPayload);
  ibv_sge s{reinterpret_cast<uintptr_t>(p), kPayload, d.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 1000 + slot_index;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = qpn;
  wr.wr.ud.remote_qkey = kQkey;
  ibv_send_wr* bad = nullptr;
  CHECK(ibv_post_send(qp, &wr, &bad) == 0, "ibv_post_send");
}

ibv_ah* make_ah(Dev& d, const ibv_gid& dgid, uint8_t sgid_index) {
  ibv_ah_attr a{};
  a.is_global = 1;
  a.grh.dgid = dgid;
  a.grh.sgid_index = sgid_index;
  a.grh.hop_limit = 64;
  a.port_num = 1;
  ibv_ah* ah = ibv_create_ah(d.pd, &a);
  CHECK(ah != nullptr, "ibv_create_ah: %s", std::strerror(errno));
  return ah;
}

// One completion of the (non-extended) CQ, bounded.
ibv_wc poll_one(ibv_cq* cq) {
  ibv_wc wc{};
  const auto end = Clock::now() + std::chrono::milliseconds(kWaitMs);
  while (ibv_poll_cq(cq, 1, &wc) == 0) CHECK(Clock::now() < end, "no completion");
  return wc;
}

// wc: the receive completion of a datagram sent between two QPs of this
// process over GID `gid_index`; `ipv4` says which family that GID is.
void wc_over(Dev& d, int gid_index, bool ipv4) {
  ibv_gid gid{};
  CHECK(ibv_query_gid(d.ctx, 1, gid_index, &gid) == 0, "ibv_query_gid %d", gid_index);
  ibv_cq* scq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_cq_init_attr_ex cx{};
  cx.cqe = 64;
  cx.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SL |
                IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_QP_NUM;
  ibv_cq_ex* rcq = ibv_create_cq_ex(d.ctx, &cx);
  CHECK(scq != nullptr && rcq != nullptr, "CQs: %s", std::strerror(errno));
  ibv_qp* tx = make_qp(d, scq, IBV_QPT_UD);
  ibv_qp* rx = make_qp(d, ibv_cq_ex_to_cq(rcq), IBV_QPT_UD);
  ud_ready(tx);
  ud_ready(rx);
  post_recv(d, rx, 0);
  post_recv(d, rx, 1);
  ibv_ah* ah = make_ah(d, gid, static_cast<uint8_t>(gid_index));
  post_send(d, tx, ah, rx->qp_num, 2, 0x5a);
  post_send(d, tx, ah, rx->qp_num, 3, 0xa5);
  CHECK(poll_one(scq).status == IBV_WC_SUCCESS, "send completion");
  CHECK(poll_one(scq).status == IBV_WC_SUCCESS, "send completion");
  const uint8_t want_sl = ipv4 ? 0xA : 0x9;
  // The first datagram through ibv_poll_cq (on the extended CQ's ibv_cq).
  ibv_wc wc = poll_one(ibv_cq_ex_to_cq(rcq));
  CHECK(wc.status == IBV_WC_SUCCESS, "recv status %d", wc.status);
  CHECK(wc.opcode == IBV_WC_RECV && wc.byte_len == 40 + kPayload, "opcode/len %u", wc.byte_len);
  CHECK(wc.wc_flags == IBV_WC_GRH, "wc_flags 0x%x", wc.wc_flags);
  CHECK(wc.sl == want_sl && (wc.sl & 7) == (ipv4 ? 2 : 1), "sl 0x%x", wc.sl);
  CHECK(wc.src_qp == tx->qp_num && wc.qp_num == rx->qp_num, "src_qp %u", wc.src_qp);
  CHECK(wc.pkey_index == 0 && wc.slid == 0 && wc.dlid_path_bits == 0, "pkey/slid/path bits");
  const uint8_t* grh = d.buf.data();
  if (ipv4) {
    const uint8_t zeros[20] = {};
    CHECK(std::memcmp(grh, zeros, 20) == 0, "GRH area: first 20 bytes not zero");
    CHECK(grh[20] == 0x45, "GRH area: no IPv4 header in the last 20 bytes");
    CHECK(std::memcmp(grh + 20 + 16, gid.raw + 12, 4) == 0, "GRH area: IPv4 destination");
  } else {
    CHECK((grh[0] >> 4) == 6, "GRH area: no IPv6 header");
    CHECK(std::memcmp(grh + 24, gid.raw, 16) == 0, "GRH area: IPv6 destination");
  }
  CHECK(grh[40] == 0x5a, "payload");
  // The second through the ibv_cq_ex read functions.
  ibv_poll_cq_attr pa{};
  int rc;
  const auto end = Clock::now() + std::chrono::milliseconds(kWaitMs);
  while ((rc = ibv_start_poll(rcq, &pa)) == ENOENT)
    CHECK(Clock::now() < end, "no cq_ex completion");
  CHECK(rc == 0 && rcq->status == IBV_WC_SUCCESS, "cq_ex start_poll %d", rc);
  CHECK(ibv_wc_read_sl(rcq) == want_sl, "cq_ex sl 0x%x", ibv_wc_read_sl(rcq));
  CHECK(ibv_wc_read_src_qp(rcq) == tx->qp_num, "cq_ex src_qp");
  CHECK(ibv_wc_read_wc_flags(rcq) == IBV_WC_GRH, "cq_ex wc_flags");
  CHECK(ibv_wc_read_slid(rcq) == 0 && ibv_wc_read_dlid_path_bits(rcq) == 0, "cq_ex slid/bits");
  CHECK(ibv_wc_read_byte_len(rcq) == 40 + kPayload, "cq_ex byte_len");
  ibv_end_poll(rcq);
  CHECK(d.buf[kSlot + 40] == 0xa5, "payload 2");
  std::printf("ok: UD over GID %d (%s): IBV_WC_GRH, sl 0x%x, src_qp, GRH area, cq_ex reads\n",
              gid_index, ipv4 ? "IPv4-mapped" : "link-local IPv6", want_sl);
  ibv_destroy_ah(ah);
  ibv_destroy_qp(tx);
  ibv_destroy_qp(rx);
  ibv_destroy_cq(scq);
  ibv_destroy_cq(ibv_cq_ex_to_cq(rcq));
}

int mode_wc() {
  Dev d = open_dev(8 * kSlot);
  wc_over(d, 1, true);
  wc_over(d, 0, false);
  return 0;
}

int mode_rules() {
  Dev d = open_dev(kSlot);
  ibv_device_attr da{};
  CHECK(ibv_query_device(d.ctx, &da) == 0, "ibv_query_device");
  CHECK(da.max_mcast_grp > 0 && da.max_mcast_qp_attach > 0 &&
            da.max_total_mcast_qp_attach >= da.max_mcast_qp_attach,
        "multicast limits %d %d %d", da.max_mcast_grp, da.max_mcast_qp_attach,
        da.max_total_mcast_qp_attach);
  std::printf("ok: max_mcast_grp %d, max_mcast_qp_attach %d, max_total_mcast_qp_attach %d\n",
              da.max_mcast_grp, da.max_mcast_qp_attach, da.max_total_mcast_qp_attach);
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  CHECK(cq != nullptr, "ibv_create_cq");
  ibv_qp* ud = make_qp(d, cq, IBV_QPT_UD);
  ibv_qp* rc = make_qp(d, cq, IBV_QPT_RC);
  const ibv_gid g = parse_gid("239.7.7.7");
  ibv_gid unicast{};
  CHECK(ibv_query_gid(d.ctx, 1, 1, &unicast) == 0, "ibv_query_gid");
  CHECK(ibv_attach_mcast(rc, &g, 0) == EINVAL, "attach of an RC QP is not EINVAL");
  CHECK(ibv_attach_mcast(ud, &unicast, 0) == EINVAL, "attach to a unicast GID is not EINVAL");
  CHECK(ibv_detach_mcast(ud, &g, 0) == EINVAL, "detach of what is not attached is not EINVAL");
  CHECK(ibv_attach_mcast(ud, &g, 0) == 0, "attach: %s", std::strerror(errno));
  CHECK(ibv_attach_mcast(ud, &g, 0) == 0, "attach twice");
  CHECK(ibv_destroy_qp(ud) == EBUSY, "destroying an attached QP is not EBUSY");
  CHECK(ibv_detach_mcast(ud, &g, 0) == 0, "detach");
  CHECK(ibv_detach_mcast(ud, &g, 0) == EINVAL, "second detach is not EINVAL");
  CHECK(ibv_attach_mcast(ud, &g, 0) == 0, "attach again");  // left attached: the exit drops it
  CHECK(ibv_destroy_qp(rc) == 0, "destroy RC QP");
  std::printf("ok: attach/detach errnos (EINVAL, twice ok, EBUSY on destroy)\n");
  return 0;
}

int mode_recv(const char* group, int n, const std::string& dir) {
  Dev d = open_dev(size_t(n) * kRecvs * kSlot);
  const ibv_gid g = parse_gid(group);
  const bool v4 = is_v4(g);
  ibv_cq* cq = ibv_create_cq(d.ctx, n * kRecvs + 16, nullptr, nullptr, 0);
  CHECK(cq != nullptr, "ibv_create_cq");
  std::vector<ibv_qp*> qps;
  for (int i = 0; i < n; ++i) {
    qps.push_back(make_qp(d, cq, IBV_QPT_UD));
    ud_ready(qps.back());
    for (int k = 0; k < kRecvs; ++k) post_recv(d, qps.back(), size_t(i) * kRecvs + k);
    CHECK(ibv_attach_mcast(qps.back(), &g, 0) == 0, "attach: %s", std::strerror(errno));
  }
  touch(dir + "/ready");
  std::vector<int> got(n, 0);
  int missing = n;
  const auto end = Clock::now() + std::chrono::milliseconds(kWaitMs);
  while (missing > 0) {
    CHECK(Clock::now() < end, "%d QPs received nothing", missing);
    ibv_wc wc{};
    if (ibv_poll_cq(cq, 1, &wc) == 0) continue;
    CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV, "status %d", wc.status);
    int qi = -1;
    for (int i = 0; i < n; ++i) {
      if (qps[i]->qp_num == wc.qp_num) qi = i;
    }
    CHECK(qi >= 0, "completion of an unknown QP %u", wc.qp_num);
    const uint8_t* slot = d.buf.data() + wc.wr_id * kSlot;
    CHECK(wc.byte_len == 40 + kPayload && wc.wc_flags == IBV_WC_GRH && wc.sl == (v4 ? 0xA : 0x9),
          "len %u flags 0x%x sl 0x%x", wc.byte_len, wc.wc_flags, wc.sl);
    CHECK(wc.src_qp != 0 && wc.src_qp != kMcastQpn, "src_qp %u", wc.src_qp);
    if (v4) {
      CHECK(slot[20] == 0x45 && std::memcmp(slot + 36, g.raw + 12, 4) == 0, "GRH: destination");
    } else {
      CHECK((slot[0] >> 4) == 6 && std::memcmp(slot + 24, g.raw, 16) == 0, "GRH: destination");
    }
    CHECK(slot[40] == 0xc3 && slot[40 + kPayload - 1] == 0xc3, "payload");
    if (got[qi]++ == 0) --missing;
  }
  std::printf("ok: each of %d attached QPs received the group's datagram\n", n);
  touch(dir + "/received");
  wait_file(dir + "/go-detach");
  for (ibv_qp* qp : qps) CHECK(ibv_detach_mcast(qp, &g, 0) == 0, "detach");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // completions already on their way
  ibv_wc wcs[64];
  while (ibv_poll_cq(cq, 64, wcs) > 0) {
  }
  touch(dir + "/detached");
  wait_file(dir + "/stop");  // the script saw datagrams dropped as unattached meanwhile
  CHECK(ibv_poll_cq(cq, 64, wcs) == 0, "a completion after detach");
  std::printf("ok: nothing received after detach\n");
  for (ibv_qp* qp : qps) CHECK(ibv_destroy_qp(qp) == 0, "destroy");
  return 0;
}

int mode_send(const char* group, const std::string& dir) {
  Dev d = open_dev(4 * kSlot);
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  CHECK(cq != nullptr, "ibv_create_cq");
  ibv_qp* qp = make_qp(d, cq, IBV_QPT_UD);
  ud_ready(qp);
  const ibv_gid g = parse_gid(group);
  ibv_ah* ah = make_ah(d, g, is_v4(g) ? 1 : 0);  // GID 1: the IPv4 address, 0: link-local
  wait_file(dir + "/ready");
  const auto end = Clock::now() + std::chrono::milliseconds(3 * kWaitMs);
  int sent = 0;
  while (!exists(dir + "/stop")) {
    CHECK(Clock::now() < end, "never told to stop");
    post_send(d, qp, ah, kMcastQpn, 0, 0xc3);
    CHECK(poll_one(cq).status == IBV_WC_SUCCESS, "send completion");
    ++sent;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::printf("ok: sent %d datagrams to %s\n", sent, group);
  ibv_destroy_ah(ah);
  ibv_destroy_qp(qp);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "wc") return mode_wc();
  if (mode == "rules") return mode_rules();
  if (mode == "recv" && argc == 5) return mode_recv(argv[2], std::atoi(argv[3]), argv[4]);
  if (mode == "send" && argc == 4) return mode_send(argv[2], argv[3]);
  std::fprintf(stderr, "usage: verbs_ud_probe wc | rules | recv GROUP N DIR | send GROUP DIR\n");
  return 2;
}
