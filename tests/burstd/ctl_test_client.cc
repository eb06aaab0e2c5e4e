// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// A small client of burstd's control protocol for the shell tests.
//
//   ctl_test_client scenario SOCK [--dgid GID]
//       HELLO, ALLOC_PD, CREATE_CQ, two RC QPs taken to RTS connected to each
//       other (or to --dgid with the MAC left for burstd to resolve), QUERY_QP,
//       a UD QP to RTS, per-client isolation (a second connection cannot use the
//       first one's handles), bad requests answered with errors on a connection
//       that keeps working, a bad magic closing it, destroy order (EBUSY).
//   ctl_test_client hold SOCK N FILE
//       creates N RC QPs (to RTS), writes their QPNs to FILE, then waits to be killed.
//   ctl_test_client json-get POINTER      (stdin: JSON) prints the value at POINTER
//   ctl_test_client json-count POINTER    (stdin: JSON) prints the size of the array
//   ctl_test_client notify-listen PATH MS prints the first datagram sent to PATH
// Exit 0 on success; failures print "FAIL: ..." and exit 1.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/ctl/ctl_client.h"
#include "daemon/ctl/ctl_codec.h"
#include "net/addr.h"

namespace {

using burst::ctl::Client;

[[noreturn]] void fail(const std::string& m) {
  std::fprintf(stderr, "FAIL: %s\n", m.c_str());
  std::exit(1);
}

void expect(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

void expect_errno(int got, int want, const std::string& what) {
  if (got != want) {
    fail(what + ": got " + std::to_string(got) + " (" + std::strerror(got) + "), want " +
         std::to_string(want) + " (" + std::strerror(want) + ")");
  }
}

std::unique_ptr<Client> connect_hello(const std::string& sock, burst_ctl_hello_resp* h) {
  std::string err;
  auto c = Client::Connect(sock, &err);
  if (!c) fail(err);
  if (int e = c->hello("ctl_test_client", h); e != 0) fail("HELLO: " + c->error());
  return c;
}

template <class Req, class Resp>
int call(Client& c, uint16_t op, Req* req, Resp* resp) {
  return c.call(op, req, sizeof(*req), resp, sizeof(*resp));
}

uint32_t alloc_pd(Client& c) {
  burst_ctl_alloc_pd_req req{};
  burst_ctl_alloc_pd_resp resp{};
  if (call(c, BURST_CTL_OP_ALLOC_PD, &req, &resp) != 0) fail("ALLOC_PD: " + c.error());
  return resp.pd_handle;
}

uint32_t create_cq(Client& c, uint32_t cqe) {
  burst_ctl_create_cq_req req{};
  req.cqe = cqe;
  burst_ctl_create_cq_resp resp{};
  if (call(c, BURST_CTL_OP_CREATE_CQ, &req, &resp) != 0) fail("CREATE_CQ: " + c.error());
  expect(resp.cqe >= cqe, "CREATE_CQ gives at least the entries asked for");
  return resp.cq_handle;
}

int create_qp(Client& c, uint32_t pd, uint32_t cq, uint8_t type, burst_ctl_create_qp_resp* resp) {
  burst_ctl_create_qp_req req{};
  req.pd_handle = pd;
  req.send_cq_handle = cq;
  req.recv_cq_handle = cq;
  req.qp_type = type;
  req.cap.max_send_wr = 64;
  req.cap.max_recv_wr = 64;
  req.cap.max_send_sge = 2;
  req.cap.max_recv_sge = 2;
  return call(c, BURST_CTL_OP_CREATE_QP, &req, resp);
}

int modify(Client& c, uint32_t qp, uint32_t mask, const burst_ctl_qp_attr& a) {
  burst_ctl_modify_qp_req req{};
  req.qp_handle = qp;
  req.attr_mask = mask;
  req.attr = a;
  burst_ctl_empty_resp resp{};
  return call(c, BURST_CTL_OP_MODIFY_QP, &req, &resp);
}

int query(Client& c, uint32_t qp, burst_ctl_query_qp_resp* resp) {
  burst_ctl_query_qp_req req{};
  req.qp_handle = qp;
  return call(c, BURST_CTL_OP_QUERY_QP, &req, resp);
}

int destroy(Client& c, uint16_t op, uint32_t handle) {
  burst_ctl_handle_req req{};
  req.handle = handle;
  burst_ctl_empty_resp resp{};
  return call(c, op, &req, &resp);
}

// IBV_QP_* bits (the same values as burst::core::QpAttrMask).
constexpr uint32_t kState = 1u << 0, kAccess = 1u << 3, kPkey = 1u << 4, kPort = 1u << 5,
                   kQkey = 1u << 6, kAv = 1u << 7, kPathMtu = 1u << 8, kTimeout = 1u << 9,
                   kRetry = 1u << 10, kRnrRetry = 1u << 11, kRqPsn = 1u << 12,
                   kMaxRdAtomic = 1u << 13, kMinRnr = 1u << 15, kSqPsn = 1u << 16,
                   kMaxDestRdAtomic = 1u << 17, kDestQpn = 1u << 20;
constexpr uint8_t kRc = 2, kUd = 4;
constexpr uint8_t kInit = 1, kRtr = 2, kRts = 3;

// RESET -> INIT -> RTR -> RTS for an RC QP towards (dgid, dest_qpn), dmac left zero.
void rc_to_rts(Client& c, uint32_t qp, const uint8_t* dgid, uint8_t sgid_index, uint32_t dest_qpn,
               uint32_t rq_psn, uint32_t sq_psn) {
  burst_ctl_qp_attr a{};
  a.qp_state = kInit;
  a.port_num = 1;
  a.qp_access_flags = 0x7;
  if (int e = modify(c, qp, kState | kPkey | kPort | kAccess, a); e != 0) {
    fail("MODIFY_QP INIT: " + c.error());
  }
  a = {};
  a.qp_state = kRtr;
  a.path_mtu = 3;  // 1024
  a.dest_qp_num = dest_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  std::memcpy(a.ah.dgid, dgid, 16);
  a.ah.sgid_index = sgid_index;
  a.ah.hop_limit = 64;
  a.ah.vlan_id = 0xffff;
  if (int e = modify(c, qp,
                     kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic | kMinRnr, a);
      e != 0) {
    fail("MODIFY_QP RTR: " + c.error());
  }
  a = {};
  a.qp_state = kRts;
  a.sq_psn = sq_psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  if (int e = modify(c, qp, kState | kSqPsn | kTimeout | kRetry | kRnrRetry | kMaxRdAtomic, a);
      e != 0) {
    fail("MODIFY_QP RTS: " + c.error());
  }
}

// Sends raw bytes; returns the response status (or the transport errno with *closed).
int raw_status(Client& c, const void* msg, size_t len, bool* closed) {
  std::vector<uint8_t> buf(BURST_CTL_MAX_MSG);
  size_t n = 0;
  *closed = false;
  const int e = c.raw(msg, len, buf.data(), buf.size(), &n, 5000);
  if (e != 0) {
    *closed = true;
    return e;
  }
  if (n < sizeof(burst_ctl_hdr)) fail("short error response");
  burst_ctl_hdr h;
  std::memcpy(&h, buf.data(), sizeof(h));
  if (h.magic != BURST_CTL_MAGIC || h.length != n) fail("malformed error response");
  return h.status;
}

int scenario(const std::string& sock, const std::string& dgid_text) {
  burst_ctl_hello_resp hello{};
  auto a = connect_hello(sock, &hello);
  expect(hello.version == BURST_CTL_VERSION, "negotiated version");
  expect(hello.gid_count >= 1, "GID table");
  expect(hello.workers >= 1, "workers");
  std::printf("hello: %s backend %s, %u workers, %u GIDs\n",
              burst::ctl::get_str(hello.ibdev).c_str(), burst::ctl::backend_name(hello.backend),
              hello.workers, hello.gid_count);

  const uint32_t pd = alloc_pd(*a);
  const uint32_t cq = create_cq(*a, 256);
  burst_ctl_create_qp_resp q1{}, q2{};
  if (create_qp(*a, pd, cq, kRc, &q1) != 0) fail("CREATE_QP 1: " + a->error());
  if (create_qp(*a, pd, cq, kRc, &q2) != 0) fail("CREATE_QP 2: " + a->error());
  expect(q1.qpn != q2.qpn && q1.qp_handle != q2.qp_handle, "distinct QPs");
  expect(q1.cap.max_send_wr >= 64, "cap rounded up");
  if (hello.workers > 1) expect(q1.worker != q2.worker, "round-robin over the workers");
  std::printf("qps: 0x%06x on worker %u, 0x%06x on worker %u\n", q1.qpn, q1.worker, q2.qpn,
              q2.worker);

  // The GID: the one given (a peer: burstd resolves its MAC), else our own (loopback).
  uint8_t dgid[16];
  uint8_t sgid_index = 0;
  if (!dgid_text.empty()) {
    burst::net::Gid g;
    if (!burst::net::parse_gid(dgid_text, &g)) fail("bad --dgid " + dgid_text);
    std::memcpy(dgid, g.data(), 16);
    // The sgid of the same family: the first IPv4-mapped entry for an IPv4 peer.
    for (uint16_t i = 0; i < hello.gid_count; ++i) {
      burst::net::Gid mine;
      std::memcpy(mine.data(), hello.gids[i], 16);
      if (burst::net::gid_is_ipv4_mapped(mine) == burst::net::gid_is_ipv4_mapped(g)) {
        sgid_index = static_cast<uint8_t>(i);
        break;
      }
    }
  } else {
    std::memcpy(dgid, hello.gids[0], 16);
  }
  rc_to_rts(*a, q1.qp_handle, dgid, sgid_index, q2.qpn, 100, 200);
  rc_to_rts(*a, q2.qp_handle, dgid, sgid_index, q1.qpn, 200, 100);
  burst_ctl_query_qp_resp qr{};
  if (query(*a, q1.qp_handle, &qr) != 0) fail("QUERY_QP: " + a->error());
  expect(qr.attr.qp_state == kRts, "QP 1 in RTS");
  expect(qr.attr.sq_psn == 200 && qr.attr.rq_psn == 100, "PSNs as set");
  expect(qr.attr.dest_qp_num == q2.qpn, "destination QPN as set");
  expect(qr.qpn == q1.qpn && qr.qp_type == kRc, "QUERY_QP qpn/type");
  static const uint8_t kZeroMac[6] = {};
  expect(std::memcmp(qr.attr.ah.dmac, kZeroMac, 6) != 0, "burstd filled in the destination MAC");
  std::printf("query: state %s sq_psn %u rq_psn %u dmac %02x:%02x:%02x:%02x:%02x:%02x\n",
              burst::ctl::qp_state_name(qr.attr.qp_state), qr.attr.sq_psn, qr.attr.rq_psn,
              qr.attr.ah.dmac[0], qr.attr.ah.dmac[1], qr.attr.ah.dmac[2], qr.attr.ah.dmac[3],
              qr.attr.ah.dmac[4], qr.attr.ah.dmac[5]);

  // A bad transition is refused by the transport (EINVAL), the QP is unchanged.
  burst_ctl_qp_attr bad{};
  bad.qp_state = kRtr;
  expect_errno(modify(*a, q1.qp_handle, kState, bad), EINVAL, "RTS -> RTR refused");
  expect_errno(modify(*a, q1.qp_handle, 1u << 25, bad), EOPNOTSUPP, "unknown attribute bits");

  // UD QP to RTS.
  burst_ctl_create_qp_resp ud{};
  if (create_qp(*a, pd, cq, kUd, &ud) != 0) fail("CREATE_QP UD: " + a->error());
  burst_ctl_qp_attr u{};
  u.qp_state = kInit;
  u.port_num = 1;
  u.qkey = 0x11111111;
  if (modify(*a, ud.qp_handle, kState | kPkey | kPort | kQkey, u) != 0)
    fail("UD INIT: " + a->error());
  u = {};
  u.qp_state = kRtr;
  if (modify(*a, ud.qp_handle, kState, u) != 0) fail("UD RTR: " + a->error());
  u.qp_state = kRts;
  u.sq_psn = 7;
  if (modify(*a, ud.qp_handle, kState | kSqPsn, u) != 0) fail("UD RTS: " + a->error());
  burst_ctl_create_qp_resp uc{};
  expect_errno(create_qp(*a, pd, cq, 3, &uc), EOPNOTSUPP, "UC QPs");
  expect_errno(create_qp(*a, pd, cq, 9, &uc), EINVAL, "unknown QP type");

  // Isolation: a second client names nothing of the first one's.
  burst_ctl_hello_resp hello_b{};
  auto b = connect_hello(sock, &hello_b);
  expect(hello_b.client_id != hello.client_id, "distinct client ids");
  burst_ctl_query_qp_resp qb{};
  expect_errno(query(*b, q1.qp_handle, &qb), ENOENT, "QUERY_QP of another client's QP");
  expect_errno(modify(*b, q1.qp_handle, kState, bad), ENOENT, "MODIFY_QP of another client's QP");
  expect_errno(destroy(*b, BURST_CTL_OP_DESTROY_QP, q1.qp_handle), ENOENT,
               "DESTROY_QP of another client's QP");
  expect_errno(destroy(*b, BURST_CTL_OP_DESTROY_CQ, cq), ENOENT,
               "DESTROY_CQ of another client's CQ");
  expect_errno(destroy(*b, BURST_CTL_OP_DEALLOC_PD, pd), ENOENT,
               "DEALLOC_PD of another client's PD");
  burst_ctl_create_qp_resp qx{};
  expect_errno(create_qp(*b, pd, cq, kRc, &qx), ENOENT, "CREATE_QP with another client's PD/CQ");
  const uint32_t pd_b = alloc_pd(*b);
  expect_errno(create_qp(*b, pd_b, cq, kRc, &qx), ENOENT, "CREATE_QP with another client's CQ");
  // The first client's QP is untouched.
  if (query(*a, q1.qp_handle, &qr) != 0 || qr.attr.qp_state != kRts) fail("QP 1 changed");

  // Bad requests: error responses, the connection keeps working.
  bool closed = false;
  burst_ctl_query_status_req st{};
  burst::ctl::init_request(&st.hdr, BURST_CTL_OP_QUERY_STATUS, sizeof(st), 99, 1000);
  expect_errno(raw_status(*b, &st, sizeof(st), &closed), EPROTONOSUPPORT, "wrong version");
  burst::ctl::init_request(&st.hdr, 0x7777, sizeof(st), BURST_CTL_VERSION, 1001);
  expect_errno(raw_status(*b, &st, sizeof(st), &closed), EOPNOTSUPP, "unknown op");
  burst_ctl_handle_req shorty{};
  burst::ctl::init_request(&shorty.hdr, BURST_CTL_OP_DESTROY_QP, sizeof(shorty) - 4,
                           BURST_CTL_VERSION, 1002);
  expect_errno(raw_status(*b, &shorty, sizeof(shorty) - 4, &closed), EBADMSG, "short DESTROY_QP");
  burst::ctl::init_request(&shorty.hdr, BURST_CTL_OP_DESTROY_QP, sizeof(shorty) + 8,
                           BURST_CTL_VERSION, 1003);
  expect_errno(raw_status(*b, &shorty, sizeof(shorty), &closed), EBADMSG, "length field mismatch");
  expect(!closed, "connection kept after bad requests");
  expect(alloc_pd(*b) != 0, "connection works after bad requests");
  // Not the protocol at all: error, then the connection is closed.
  const char garbage[32] = "GET / HTTP/1.0\r\n\r\n";
  expect_errno(raw_status(*b, garbage, sizeof(garbage), &closed), EPROTO, "bad magic");
  std::vector<uint8_t> buf(64);
  size_t n = 0;
  expect(b->raw(&st, sizeof(st), buf.data(), buf.size(), &n, 2000) != 0,
         "connection closed after bad magic");
  b.reset();

  // Destroy order: objects in use are busy.
  expect_errno(destroy(*a, BURST_CTL_OP_DEALLOC_PD, pd), EBUSY, "DEALLOC_PD while QPs use it");
  expect_errno(destroy(*a, BURST_CTL_OP_DESTROY_CQ, cq), EBUSY, "DESTROY_CQ while QPs use it");
  for (uint32_t h : {q1.qp_handle, q2.qp_handle, ud.qp_handle}) {
    if (destroy(*a, BURST_CTL_OP_DESTROY_QP, h) != 0) fail("DESTROY_QP: " + a->error());
  }
  expect_errno(query(*a, q1.qp_handle, &qr), ENOENT, "destroyed QP is gone");
  if (destroy(*a, BURST_CTL_OP_DESTROY_CQ, cq) != 0) fail("DESTROY_CQ: " + a->error());
  if (destroy(*a, BURST_CTL_OP_DEALLOC_PD, pd) != 0) fail("DEALLOC_PD: " + a->error());
  std::printf("scenario: ok\n");
  return 0;
}

int hold(const std::string& sock, int n, const std::string& file) {
  burst_ctl_hello_resp hello{};
  auto c = connect_hello(sock, &hello);
  const uint32_t pd = alloc_pd(*c);
  const uint32_t cq = create_cq(*c, 1024);
  std::vector<burst_ctl_create_qp_resp> qps(static_cast<size_t>(n));
  for (auto& q : qps) {
    if (create_qp(*c, pd, cq, kRc, &q) != 0) fail("CREATE_QP: " + c->error());
  }
  for (int i = 0; i < n; ++i) {
    rc_to_rts(*c, qps[i].qp_handle, hello.gids[0], 0, qps[(i + 1) % n].qpn, 1, 1);
  }
  {
    std::ofstream f(file + ".tmp");
    for (const auto& q : qps) f << q.qpn << "\n";
  }
  std::rename((file + ".tmp").c_str(), file.c_str());
  for (;;) pause();
}

nlohmann::json read_json() {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    fail(std::string("not JSON: ") + e.what());
  }
}

int json_get(const std::string& ptr, bool count) {
  nlohmann::json j = read_json();
  try {
    const nlohmann::json& v = j.at(nlohmann::json::json_pointer(ptr));
    if (count) {
      std::printf("%zu\n", v.size());
    } else if (v.is_string()) {
      std::printf("%s\n", v.get<std::string>().c_str());
    } else {
      std::printf("%s\n", v.dump().c_str());
    }
  } catch (const std::exception& e) {
    fail("no " + ptr + " in the JSON: " + e.what());
  }
  return 0;
}

int notify_listen(const std::string& path, int timeout_ms) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path.c_str());
  unlink(path.c_str());
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) fail("bind " + path);
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1)
    fail("no notification within " + std::to_string(timeout_ms) + " ms");
  char buf[4096];
  const ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
  if (n < 0) fail("recv");
  buf[n] = '\0';
  std::printf("%s\n", buf);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() >= 2 && a[0] == "scenario") {
    std::string dgid;
    if (a.size() == 4 && a[2] == "--dgid") dgid = a[3];
    return scenario(a[1], dgid);
  }
  if (a.size() == 4 && a[0] == "hold") return hold(a[1], std::atoi(a[2].c_str()), a[3]);
  if (a.size() == 2 && a[0] == "json-get") return json_get(a[1], false);
  if (a.size() == 2 && a[0] == "json-count") return json_get(a[1], true);
  if (a.size() == 3 && a[0] == "notify-listen") return notify_listen(a[1], std::atoi(a[2].c_str()));
  std::fprintf(stderr,
               "usage: ctl_test_client scenario SOCK [--dgid GID] | hold SOCK N FILE | "
               "json-get PTR | json-count PTR | notify-listen PATH MS\n");
  return 2;
}
