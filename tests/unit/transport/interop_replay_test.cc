// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Golden sessions with Linux rxe replayed through the transport handlers
// (tests/fixtures/interop: the first frames of live perftest sessions between
// burstd and rxe, captured by tests/interop/matrix.sh; README there). The wire
// tests (tests/unit/wire/interop_golden_test.cc) only parse these frames; here a
// fresh Engine takes burst's place in the session:
//
//   r2b (rxe is the requester): an Engine whose QP has burst's QPN, expected PSN,
//   path MTU and an MR with burst's rkey over the VA range rxe targeted receives
//   rxe's request frames (rx_burst) in capture order; what it transmits
//   (tx_build) must be what burst answered: READ responses and atomic ACKs
//   exactly (opcode, PSN, QPN, syndrome, payload / original value), plain ACKs by
//   the invariants below; WRITE and SEND payloads must land in the MR / the
//   receive buffers, atomics must update memory.
//
//   b2r (burst is the requester): an Engine posts the work requests burst's
//   captured requests describe; each request burst sent must come out of
//   tx_build identical (opcode, PSN, QPN, AckReq, RETH / AtomicETH, payload),
//   rxe's responses are fed to rx_burst where the capture has them, and the
//   completions must be those the responses allow (status, opcode, byte_len),
//   with READ data and atomic original values placed in the local buffers.
//
// What cannot be reproduced from a capture, and is checked as invariants
// instead: how burstd's receive polls grouped rxe's frames. A coalesced ACK
// carries ePSN - 1 at the time it was built, and every AETH carries the
// responder's MSN at build time (burst does not keep a per-request MSN for READ
// responses and atomic ACKs), so both depend on how many requests burstd had
// taken when it built the frame, which the capture order (taken on the bridge,
// with frames of both sides in flight) does not tell. For every AETH, captured
// and replayed: MSN >= the MSN after the request it answers (plain ACK: exactly
// the messages completed up to its PSN) and MSN <= the messages completed among
// the requests received before it; a plain ACK never acknowledges a PSN not yet
// received, and at the end every PSN that asked for an acknowledgement (AckReq
// or the last packet of a message) and every PSN burst acknowledged in the
// capture is acknowledged by the replay.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tests/unit/transport/transport_test_util.h"
#include "tests/unit/wire/pcap.h"

namespace burst::core::test {
namespace {

using wire::Psn;

struct Capture {
  const char* file;
  Mtu mtu;              // RoCE path MTU of the session
  uint32_t msg_bytes;   // perftest's message size (-s; 8 for atomics): SEND lengths
  bool burst_requests;  // b2r: burst is the requester
};
void PrintTo(const Capture& c, std::ostream* os) { *os << c.file; }

constexpr Capture kCaptures[] = {
    {"ib_write_bw_b2r_mtu1024.pcap", Mtu::k1024, 65536, true},
    {"ib_write_bw_r2b_mtu1024.pcap", Mtu::k1024, 65536, false},
    {"ib_read_bw_b2r_mtu1024.pcap", Mtu::k1024, 65536, true},
    {"ib_read_bw_r2b_mtu1024.pcap", Mtu::k1024, 65536, false},
    {"ib_send_bw_b2r_mtu1024.pcap", Mtu::k1024, 65536, true},
    {"ib_send_bw_r2b_mtu1024.pcap", Mtu::k1024, 65536, false},
    {"ib_atomic_bw_b2r_mtu1024.pcap", Mtu::k1024, 8, true},
    {"ib_atomic_bw_r2b_mtu1024.pcap", Mtu::k1024, 8, false},
    {"ib_write_bw_b2r_mtu4096.pcap", Mtu::k4096, 65536, true},
    {"ib_write_bw_r2b_mtu4096.pcap", Mtu::k4096, 65536, false},
    {"ib_read_bw_b2r_mtu4096.pcap", Mtu::k4096, 65536, true},
    {"ib_read_bw_r2b_mtu4096.pcap", Mtu::k4096, 65536, false},
    {"ib_send_bw_b2r_mtu4096.pcap", Mtu::k4096, 65536, true},
    {"ib_send_bw_r2b_mtu4096.pcap", Mtu::k4096, 65536, false},
    {"ib_atomic_bw_b2r_mtu4096.pcap", Mtu::k4096, 8, true},
    {"ib_atomic_bw_r2b_mtu4096.pcap", Mtu::k4096, 8, false},
};

// burst is 10.99.0.1 and rxe 10.99.0.11 in every session (tests/interop/lib/guest.sh).
constexpr std::array<uint8_t, 16> ipv4_gid(uint8_t last) {  // ::ffff:10.99.0.<last>
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, last};
}
constexpr std::array<uint8_t, 16> kBurstGid = ipv4_gid(1);
constexpr std::array<uint8_t, 16> kRxeGid = ipv4_gid(11);
constexpr uint64_t kNow = 1'000'000'000;
constexpr uint32_t kNoQpn = ~0u;

// One frame, decoded into plain values (nothing points into the frame).
struct Pkt {
  bool from_burst = false;
  uint8_t opcode = 0;
  uint32_t flags = 0;  // wire::OpFlag bits of the opcode
  uint32_t dest_qpn = 0;
  Psn psn;
  bool ack_req = false;
  bool solicited = false;
  bool has_aeth = false;
  uint8_t syndrome = 0;
  uint32_t msn = 0;
  bool has_reth = false;
  bool has_atomic = false;
  uint64_t va = 0;  // RETH or AtomicETH
  uint32_t rkey = 0;
  uint32_t dma_len = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  bool has_orig = false;
  uint64_t orig = 0;
  Bytes payload;
  std::array<uint8_t, 6> smac{};
  std::array<uint8_t, 6> dmac{};

  bool has(uint32_t f) const { return (flags & f) == f; }
  bool plain_ack() const { return opcode == wire::op::kRcAcknowledge; }
};

Pkt decode(const Bytes& f) {
  Pkt p;
  wire::PacketView v{};
  EXPECT_EQ(wire::parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v), wire::RxDrop::kNone);
  if (v.info == nullptr) return p;
  p.from_burst = v.sgid_is(kBurstGid);
  p.opcode = v.opcode;
  p.flags = v.info->flags;
  p.dest_qpn = v.bth().dest_qpn();
  p.psn = v.bth().psn();
  p.ack_req = v.bth().ack_req();
  p.solicited = v.bth().se();
  if (const wire::Aeth* a = v.aeth()) {
    p.has_aeth = true;
    p.syndrome = a->syndrome();
    p.msn = a->msn();
  }
  if (const wire::Reth* r = v.reth()) {
    p.has_reth = true;
    p.va = r->va();
    p.rkey = r->rkey();
    p.dma_len = r->dma_len();
  }
  if (const wire::AtomicEth* a = v.atomic_eth()) {
    p.has_atomic = true;
    p.va = a->va();
    p.rkey = a->rkey();
    p.dma_len = 8;
    p.swap_add = a->swap_add();
    p.compare = a->compare();
  }
  if (const wire::AtomicAckEth* a = v.atomic_ack()) {
    p.has_orig = true;
    p.orig = a->orig();
  }
  p.payload.assign(v.payload(), v.payload() + v.payload_len);
  p.smac = v.smac();
  p.dmac = v.dmac();
  return p;
}

struct Session {
  std::vector<Bytes> frames;
  std::vector<Pkt> pkts;
};

Session load(const Capture& c) {
  Session s;
  burst::test::PcapFile pcap;
  std::string error;
  const std::string path = std::string(BURST_INTEROP_FIXTURES_DIR) + "/" + c.file;
  EXPECT_TRUE(burst::test::read_pcap(path, &pcap, &error)) << error;
  s.frames = std::move(pcap.frames);
  for (const Bytes& f : s.frames) s.pkts.push_back(decode(f));
  return s;
}

std::string describe(const Pkt& p) {
  const wire::OpcodeInfo& info = wire::kOpcodeTable[p.opcode];
  return std::string(info.name) + " psn " + std::to_string(p.psn.value());
}

// One request message of the session, from its first request packet.
struct Message {
  uint8_t opcode = 0;  // of its first packet
  Psn first_psn;
  Psn last_psn;  // READ: its last response packet
  uint32_t length = 0;
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  uint32_t rwqe = 0;  // SEND: index among the SEND messages
};

uint32_t npkts(uint32_t len, uint32_t mtu) { return len == 0 ? 1 : (len + mtu - 1) / mtu; }

// The request messages of the session, in PSN order (the requester's packets
// carry consecutive PSNs; a READ request reserves one PSN per response packet).
std::vector<Message> messages_of(const Session& s, bool requester_is_burst, uint32_t mtu,
                                 uint32_t send_bytes) {
  std::vector<Message> out;
  uint32_t sends = 0;
  Psn next;
  bool started = false;
  for (const Pkt& p : s.pkts) {
    if (p.from_burst != requester_is_burst) continue;
    EXPECT_TRUE(p.has(wire::kRequest)) << describe(p);
    if (started) {
      EXPECT_EQ(p.psn.value(), next.value()) << "requests are not consecutive at " << describe(p);
    }
    if (p.has(wire::kFirst)) {
      EXPECT_TRUE(out.empty() || !started || p.psn == out.back().last_psn + 1) << describe(p);
      Message m;
      m.opcode = p.opcode;
      m.first_psn = p.psn;
      m.va = p.va;
      m.rkey = p.rkey;
      m.swap_add = p.swap_add;
      m.compare = p.compare;
      if (p.has(wire::kSend)) {
        m.length = send_bytes;
        m.rwqe = sends++;
      } else {
        m.length = p.dma_len;
      }
      m.last_psn = p.psn + (p.has(wire::kAtomic) ? 0 : npkts(m.length, mtu) - 1);
      out.push_back(m);
    } else {
      EXPECT_FALSE(out.empty()) << "the capture starts inside a message: " << describe(p);
    }
    // A READ request stands for its response packets' PSNs.
    next = p.has(wire::kRead) ? out.back().last_psn + 1 : p.psn + 1;
    started = true;
  }
  return out;
}

// The message a PSN belongs to (nullptr: none).
const Message* message_at(const std::vector<Message>& msgs, Psn p) {
  for (const Message& m : msgs) {
    if (wire::psn_diff(p, m.first_psn) >= 0 && wire::psn_diff(p, m.last_psn) <= 0) return &m;
  }
  return nullptr;
}

// Messages completed up to and including PSN p (the MSN a responder reports once
// everything up to p was executed).
uint32_t msn_through(const std::vector<Message>& msgs, Psn p) {
  uint32_t n = 0;
  for (const Message& m : msgs) n += wire::psn_diff(m.last_psn, p) <= 0 ? 1 : 0;
  return n;
}

// Messages whose last request packet is among `received` request packets (the
// most a responder can have counted after taking them).
uint32_t msn_received(const std::vector<Message>& msgs, const std::vector<Pkt>& received) {
  uint32_t n = 0;
  for (const Pkt& p : received) {
    if (!p.has(wire::kLast)) continue;  // READ/atomic requests are LAST (and ONLY) too
    n += message_at(msgs, p.psn) != nullptr ? 1 : 0;
  }
  return n;
}

// burst's side of a session: an Engine with one RC QP, its own MR table.
class Burst {
 public:
  Burst(const Session& s, uint32_t burst_qpn) {
    EngineConfig c;
    for (const Pkt& p : s.pkts) c.port.mac = p.from_burst ? p.smac : p.dmac;
    c.port.gids = {kBurstGid};
    c.port.l2_mtu = 9014;
    c.max_qps = 4;
    c.first_qpn = burst_qpn;  // the first QP created gets burst's QPN
    eng = std::make_unique<Engine>(c, mrs, copier);
    pd = mrs.alloc_pd();
    EXPECT_TRUE(eng->create_cq(8192, &cq).ok());
  }

  uint32_t create_qp(uint32_t max_recv_wr) {
    QpInitAttr init;
    init.pd = pd;
    init.send_cq = cq;
    init.recv_cq = cq;
    init.cap.max_send_wr = 256;
    init.cap.max_recv_wr = std::max<uint32_t>(max_recv_wr, 1);
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.sq_sig_all = true;
    EXPECT_TRUE(eng->create_qp(init, &qpn).ok());
    return qpn;
  }

  // RESET -> INIT -> RTR -> RTS toward rxe; perftest's settings as burst ends up
  // with them (max_rd_atomic: rxe's 128 clamped to burst's 16).
  void connect(const Session& s, Mtu mtu, uint32_t rxe_qpn, Psn rq_psn, Psn sq_psn) {
    QpAttr a;
    a.qp_state = QpState::kInit;
    a.port_num = 1;
    a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    ASSERT_TRUE(eng->modify_qp(qpn, a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags).ok());
    a.qp_state = QpState::kRtr;
    a.path_mtu = mtu;
    a.dest_qp_num = rxe_qpn;
    a.rq_psn = rq_psn.value();
    a.max_dest_rd_atomic = kMaxRdAtomic;
    a.min_rnr_timer = 12;
    a.ah.dgid = kRxeGid;
    for (const Pkt& p : s.pkts) a.ah.dmac = p.from_burst ? p.dmac : p.smac;
    ASSERT_TRUE(eng->modify_qp(qpn, a,
                               kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                   kQpMaxDestRdAtomic | kQpMinRnrTimer)
                    .ok());
    a.qp_state = QpState::kRts;
    a.sq_psn = sq_psn.value();
    a.max_rd_atomic = kMaxRdAtomic;
    ASSERT_TRUE(eng->modify_qp(qpn, a,
                               kQpState | kQpSqPsn | kQpQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                   kQpMaxQpRdAtomic)
                    .ok());
  }

  // Registers [host, host + len) at iova with exactly `key` as lkey/rkey. Keys are
  // (entry index << 8) | generation (core/mr.h), entries are handed out lowest
  // first and each registration of an entry bumps its generation: fill the
  // entries below with empty MRs, then register the entry until its generation
  // comes round.
  void reg_with_key(uint8_t* host, uint64_t iova, uint64_t len, uint32_t key) {
    const uint32_t index = key >> 8;
    ASSERT_NE(index, 0u);
    ASSERT_LT(index, 4096u) << "rkey 0x" << std::hex << key << " needs too many fillers";
    uint32_t lkey = 0, rkey = 0;
    while (next_index_ < index) {
      ASSERT_TRUE(mrs.reg_mr(pd, nullptr, 0, 0, 0, &lkey, &rkey).ok());
      ASSERT_EQ(lkey >> 8, next_index_);
      ++next_index_;
    }
    constexpr uint32_t kAll =
        kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    for (int i = 0; i < 256; ++i) {
      ASSERT_TRUE(mrs.reg_mr(pd, host, iova, len, kAll, &lkey, &rkey).ok());
      if (rkey == key) {
        ++next_index_;
        return;
      }
      ASSERT_TRUE(mrs.dereg_mr(lkey).ok());
    }
    FAIL() << "no registration gave key 0x" << std::hex << key;
  }
  // A local buffer (its own MR, iova = its address) for work requests.
  uint32_t reg_local(Bytes& b) {
    uint32_t lkey = 0, rkey = 0;
    EXPECT_TRUE(
        mrs.reg_mr(pd, b.data(), Node::addr(b), b.size(), kAccessLocalWrite, &lkey, &rkey).ok());
    ++next_index_;
    return lkey;
  }

  void deliver_one(const Bytes& f) {
    const datapath::Frame fr{const_cast<uint8_t*>(f.data()), static_cast<uint32_t>(f.size()),
                             static_cast<uint32_t>(f.size()), 0};
    eng->rx_burst(&fr, 1, kNow);
  }
  // The next frame burst transmits, or false when it has none.
  bool pull_one(Bytes* out) {
    Bytes buf(9216);
    datapath::Frame fr{buf.data(), 0, static_cast<uint32_t>(buf.size()), 0};
    if (eng->tx_build(&fr, 1, kNow) != 1) return false;
    buf.resize(fr.len);
    *out = std::move(buf);
    return true;
  }
  std::vector<Wc> poll() {
    std::vector<Wc> wc(8192);
    wc.resize(static_cast<size_t>(eng->poll_cq(cq, wc.data(), static_cast<int>(wc.size()))));
    return wc;
  }
  void expect_no_drops() const {
    const EngineCounters& k = eng->counters();
    for (size_t i = 0; i < k.rx_parse_drop.size(); ++i) EXPECT_EQ(k.rx_parse_drop[i], 0u) << i;
    for (size_t i = 0; i < k.rx_drop.size(); ++i) EXPECT_EQ(k.rx_drop[i], 0u) << i;
  }

  MrTable mrs;
  CopyEngine copier;
  std::unique_ptr<Engine> eng;
  uint32_t pd = 0;
  uint32_t cq = 0;
  uint32_t qpn = 0;

 private:
  uint32_t next_index_ = 1;  // MR entry the next registration takes
};

// Checks an AETH burst sent (captured or replayed) against the invariants in the
// comment at the top. `received`: the request packets burst had been given
// before it.
// `exact_response_msn`: a READ response / atomic ACK must carry exactly the
// MSN after its own request (burst since it keeps it per response; captures
// made before that carried the MSN when the response left, which the loose
// bound accepts).
void check_aeth(const Pkt& p, const std::vector<Message>& msgs, const std::vector<Pkt>& received,
                const char* who, bool exact_response_msn) {
  SCOPED_TRACE(std::string(who) + " " + describe(p));
  EXPECT_EQ(p.syndrome, wire::AethSyndrome::ack().raw());  // ACK, credit field invalid
  ASSERT_FALSE(received.empty());
  const Psn newest = received.back().has(wire::kRead)
                         ? message_at(msgs, received.back().psn)->last_psn
                         : received.back().psn;
  EXPECT_LE(wire::psn_diff(p.psn, newest), 0) << "acknowledges a PSN not received yet";
  const uint32_t upper = msn_received(msgs, received);
  if (p.plain_ack()) {
    EXPECT_EQ(p.msn, msn_through(msgs, p.psn));
  } else {
    const Message* m = message_at(msgs, p.psn);
    ASSERT_NE(m, nullptr);
    if (exact_response_msn) {
      EXPECT_EQ(p.msn, msn_through(msgs, m->last_psn));
    } else {
      EXPECT_GE(p.msn, msn_through(msgs, m->last_psn));
    }
  }
  EXPECT_LE(p.msn, upper);
}

// ---------------------------------------------------------------------------
// r2b: rxe requests, burst (a fresh Engine) responds.

void replay_responder(const Capture& c) {
  const Session s = load(c);
  const uint32_t mtu = mtu_bytes(c.mtu);
  const std::vector<Message> msgs = messages_of(s, false, mtu, c.msg_bytes);
  ASSERT_FALSE(msgs.empty());

  // burst's QPN from rxe's requests, rxe's from burst's responses (if any).
  uint32_t burst_qpn = kNoQpn, rxe_qpn = kNoQpn;
  for (const Pkt& p : s.pkts) (p.from_burst ? rxe_qpn : burst_qpn) = p.dest_qpn;
  ASSERT_NE(burst_qpn, kNoQpn);
  const bool know_rxe_qpn = rxe_qpn != kNoQpn;
  if (!know_rxe_qpn) rxe_qpn = 0x11;  // burst never answered within the capture

  Burst b(s, burst_qpn);
  uint32_t sends = 0;
  for (const Message& m : msgs) sends += wire::kOpcodeTable[m.opcode].has(wire::kSend) ? 1 : 0;
  ASSERT_EQ(b.create_qp(sends + 1), burst_qpn);
  ASSERT_NO_FATAL_FAILURE(b.connect(s, c.mtu, rxe_qpn, msgs.front().first_psn, Psn(0)));

  // The MR: every VA the requests target, with the rkey they carry.
  uint64_t lo = ~uint64_t{0}, hi = 0;
  uint32_t rkey = 0;
  for (const Message& m : msgs) {
    if (wire::kOpcodeTable[m.opcode].has(wire::kSend)) continue;
    lo = std::min(lo, m.va);
    hi = std::max(hi, m.va + (m.opcode >= wire::op::kRcCompareSwap ? 8 : m.length));
    if (rkey != 0) {
      EXPECT_EQ(m.rkey, rkey);
    }
    rkey = m.rkey;
  }
  const uint64_t base = lo == ~uint64_t{0} ? 0x10000 : lo & ~uint64_t{4095};
  const uint64_t span = hi > base ? hi - base : 4096;
  std::vector<uint64_t> mem_words((span + 7) / 8 + 1);
  uint8_t* mem = reinterpret_cast<uint8_t*>(mem_words.data());
  for (size_t i = 0; i < span; ++i) mem[i] = static_cast<uint8_t>(i * 13 + 5);
  auto host = [&](uint64_t va) { return mem + (va - base); };
  if (rkey != 0) {
    ASSERT_NO_FATAL_FAILURE(b.reg_with_key(mem, base, span, rkey));
  }

  // Memory as burst's was where the capture shows it: READ response payloads and
  // atomic original values come from there.
  for (const Pkt& p : s.pkts) {
    if (!p.from_burst) continue;
    const Message* m = message_at(msgs, p.psn);
    ASSERT_NE(m, nullptr) << describe(p);
    if (p.has(wire::kReadResp)) {
      const uint64_t off =
          uint64_t{static_cast<uint32_t>(wire::psn_diff(p.psn, m->first_psn))} * mtu;
      std::memcpy(host(m->va + off), p.payload.data(), p.payload.size());
    } else if (p.has_orig) {
      std::memcpy(host(m->va), &p.orig, 8);
    }
  }
  // Atomic targets before the replay (to check what the atomics leave there).
  std::vector<uint64_t> before;
  for (const Message& m : msgs) {
    uint64_t v = 0;
    if (m.opcode >= wire::op::kRcCompareSwap) std::memcpy(&v, host(m.va), 8);
    before.push_back(v);
  }

  // Receive buffers for the SENDs.
  std::vector<Bytes> rbufs(sends, Bytes(c.msg_bytes, 0));
  for (uint32_t i = 0; i < sends; ++i) {
    const uint32_t lkey = b.reg_local(rbufs[i]);
    ASSERT_TRUE(b.eng->post_recv(b.qpn, make_recv(100 + i, rbufs[i], lkey, c.msg_bytes)).ok());
  }

  // Replay: rxe's frames one by one; wherever the capture shows burst's frames,
  // take everything burst has to send (then, and once more at the end).
  std::vector<Pkt> received;        // rxe's requests given to burst so far
  std::vector<Pkt> captured;        // burst's frames in the capture
  std::vector<size_t> captured_at;  // ... and how many requests preceded each
  std::vector<Pkt> replayed;        // what the Engine sent
  std::vector<size_t> replayed_at;
  auto drain = [&] {
    Bytes f;
    while (b.pull_one(&f)) {
      replayed.push_back(decode(f));
      replayed_at.push_back(received.size());
      ASSERT_LT(replayed.size(), 100000u);
    }
  };
  for (size_t i = 0; i < s.pkts.size(); ++i) {
    const Pkt& p = s.pkts[i];
    if (p.from_burst) {
      if (i == 0 || !s.pkts[i - 1].from_burst) drain();
      captured.push_back(p);
      captured_at.push_back(received.size());
    } else {
      b.deliver_one(s.frames[i]);
      received.push_back(p);
    }
  }
  drain();
  b.expect_no_drops();

  // READ responses and atomic ACKs: exactly what burst sent, in order (the replay
  // may go further: the capture stops after its first frames).
  auto responses = [](const std::vector<Pkt>& v) {
    std::vector<const Pkt*> out;
    for (const Pkt& p : v) {
      if (!p.plain_ack()) out.push_back(&p);
    }
    return out;
  };
  const auto cap_resp = responses(captured);
  const auto rep_resp = responses(replayed);
  ASSERT_GE(rep_resp.size(), cap_resp.size()) << "burst answered more in the capture";
  for (size_t i = 0; i < cap_resp.size(); ++i) {
    const Pkt& want = *cap_resp[i];
    const Pkt& got = *rep_resp[i];
    SCOPED_TRACE("response " + std::to_string(i) + ": captured " + describe(want));
    EXPECT_EQ(got.opcode, want.opcode);
    EXPECT_EQ(got.psn.value(), want.psn.value());
    EXPECT_EQ(got.dest_qpn, want.dest_qpn);
    EXPECT_EQ(got.has_aeth, want.has_aeth);
    EXPECT_EQ(got.syndrome, want.syndrome);
    EXPECT_EQ(got.payload.size(), want.payload.size());
    EXPECT_TRUE(got.payload == want.payload) << "READ response data differ";
    EXPECT_EQ(got.has_orig, want.has_orig);
    EXPECT_EQ(got.orig, want.orig) << "atomic original value";
  }
  // Every response the replay sent answers a request, at the right place in it.
  for (const Pkt* r : rep_resp) {
    const Message* m = message_at(msgs, r->psn);
    ASSERT_NE(m, nullptr) << describe(*r);
    if (r->has(wire::kReadResp)) {
      ASSERT_EQ(m->opcode, wire::op::kRcRdmaReadRequest) << describe(*r);
      const uint32_t k = static_cast<uint32_t>(wire::psn_diff(r->psn, m->first_psn));
      const uint32_t n = npkts(m->length, mtu);
      const uint8_t want_op = n == 1       ? wire::op::kRcRdmaReadResponseOnly
                              : k == 0     ? wire::op::kRcRdmaReadResponseFirst
                              : k + 1 == n ? wire::op::kRcRdmaReadResponseLast
                                           : wire::op::kRcRdmaReadResponseMiddle;
      EXPECT_EQ(r->opcode, want_op) << describe(*r);
      const uint32_t len = std::min(mtu, m->length - k * mtu);
      ASSERT_EQ(r->payload.size(), len) << describe(*r);
      EXPECT_EQ(std::memcmp(r->payload.data(), host(m->va + uint64_t{k} * mtu), len), 0)
          << describe(*r);
    } else {
      EXPECT_EQ(r->opcode, wire::op::kRcAtomicAcknowledge) << describe(*r);
      EXPECT_EQ(r->psn.value(), m->first_psn.value());
    }
    if (know_rxe_qpn) {
      EXPECT_EQ(r->dest_qpn, rxe_qpn);
    }
  }

  // AETH invariants, captured and replayed alike.
  for (size_t i = 0; i < captured.size(); ++i) {
    if (captured[i].has_aeth) {
      const std::vector<Pkt> before_it(received.begin(), received.begin() + captured_at[i]);
      check_aeth(captured[i], msgs, before_it, "captured", false);
    }
  }
  for (size_t i = 0; i < replayed.size(); ++i) {
    if (replayed[i].has_aeth) {
      const std::vector<Pkt> before_it(received.begin(), received.begin() + replayed_at[i]);
      check_aeth(replayed[i], msgs, before_it, "replayed", true);
    }
    EXPECT_FALSE(replayed[i].has(wire::kRequest)) << describe(replayed[i]);
  }
  // Acknowledged in the end: every PSN that asked for it (AckReq, the end of a
  // SEND/WRITE message), and everything burst acknowledged in the capture.
  auto acked = [&](const std::vector<Pkt>& v) {
    Psn top = msgs.front().first_psn - 1;
    for (const Pkt& p : v) {
      if (!p.has_aeth) continue;
      const Psn upto = p.plain_ack() || p.has(wire::kLast) || p.has(wire::kAtomicAck)
                           ? p.psn
                           : p.psn - 1;  // READ response FIRST: the READ is not done yet
      if (wire::psn_diff(upto, top) > 0) top = upto;
    }
    for (const Pkt& p : v) {  // READ MIDDLE responses carry no AETH but complete PSNs too
      if (p.has(wire::kReadResp) && wire::psn_diff(p.psn - 1, top) > 0) top = p.psn - 1;
    }
    return top;
  };
  const Psn rep_top = acked(replayed);
  for (const Pkt& p : received) {
    if (p.ack_req || (p.has(wire::kLast) && !p.has(wire::kRead))) {
      EXPECT_GE(wire::psn_diff(rep_top, p.psn), 0) << "not acknowledged: " << describe(p);
    }
  }
  if (!captured.empty()) {
    EXPECT_GE(wire::psn_diff(rep_top, acked(captured)), 0);
  }

  // Data: WRITE payloads in the MR, SEND payloads in the receive buffers.
  for (const Pkt& p : received) {
    const Message* m = message_at(msgs, p.psn);
    ASSERT_NE(m, nullptr);
    if (p.payload.empty()) continue;
    const uint64_t off = uint64_t{static_cast<uint32_t>(wire::psn_diff(p.psn, m->first_psn))} * mtu;
    const uint8_t* at = p.has(wire::kSend) ? rbufs[m->rwqe].data() + off : host(m->va + off);
    EXPECT_EQ(std::memcmp(at, p.payload.data(), p.payload.size()), 0)
        << "payload not placed: " << describe(p);
  }
  // Atomics: each target holds what the operation left.
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Message& m = msgs[i];
    if (m.opcode < wire::op::kRcCompareSwap) continue;
    uint64_t now = 0;
    std::memcpy(&now, host(m.va), 8);
    const uint64_t want = m.opcode == wire::op::kRcFetchAdd ? before[i] + m.swap_add
                          : before[i] == m.compare          ? m.swap_add
                                                            : before[i];
    EXPECT_EQ(now, want) << "atomic at psn " << m.first_psn.value();
  }
  // Receive completions: one per SEND message that ended within the capture.
  const std::vector<Wc> wcs = b.poll();
  std::vector<const Message*> done_sends;
  for (const Message& m : msgs) {
    if (!wire::kOpcodeTable[m.opcode].has(wire::kSend)) continue;
    for (const Pkt& p : received) {
      if (p.psn == m.last_psn) done_sends.push_back(&m);
    }
  }
  ASSERT_EQ(wcs.size(), done_sends.size());
  for (size_t i = 0; i < wcs.size(); ++i) {
    EXPECT_EQ(wcs[i].status, WcStatus::kSuccess);
    EXPECT_EQ(wcs[i].opcode, WcOpcode::kRecv);
    EXPECT_EQ(wcs[i].wr_id, 100u + done_sends[i]->rwqe);
    EXPECT_EQ(wcs[i].byte_len, done_sends[i]->length);
  }
}

// ---------------------------------------------------------------------------
// b2r: burst (a fresh Engine) requests, rxe responds.

WrOpcode wr_opcode(uint8_t op) {
  switch (op) {
    case wire::op::kRcRdmaWriteFirst:
    case wire::op::kRcRdmaWriteOnly:
      return WrOpcode::kRdmaWrite;
    case wire::op::kRcRdmaReadRequest:
      return WrOpcode::kRdmaRead;
    case wire::op::kRcCompareSwap:
      return WrOpcode::kAtomicCmpAndSwp;
    case wire::op::kRcFetchAdd:
      return WrOpcode::kAtomicFetchAndAdd;
    default:
      return WrOpcode::kSend;
  }
}

void replay_requester(const Capture& c) {
  const Session s = load(c);
  const uint32_t mtu = mtu_bytes(c.mtu);
  const std::vector<Message> msgs = messages_of(s, true, mtu, c.msg_bytes);
  ASSERT_FALSE(msgs.empty());
  uint32_t burst_qpn = kNoQpn, rxe_qpn = kNoQpn;
  for (const Pkt& p : s.pkts) (p.from_burst ? rxe_qpn : burst_qpn) = p.dest_qpn;
  ASSERT_NE(rxe_qpn, kNoQpn);
  if (burst_qpn == kNoQpn) burst_qpn = 0x11;  // rxe never answered within the capture

  Burst b(s, burst_qpn);
  ASSERT_EQ(b.create_qp(1), burst_qpn);
  ASSERT_NO_FATAL_FAILURE(b.connect(s, c.mtu, rxe_qpn, Psn(0), msgs.front().first_psn));

  // One local buffer per work request: the bytes burst sent (where the capture
  // shows them), or a fill the READ data / atomic result must overwrite.
  std::vector<Bytes> bufs;
  for (const Message& m : msgs) bufs.emplace_back(std::max<uint32_t>(m.length, 8), 0xEE);
  for (const Pkt& p : s.pkts) {
    if (!p.from_burst || p.payload.empty()) continue;
    const Message* m = message_at(msgs, p.psn);
    const uint64_t off = uint64_t{static_cast<uint32_t>(wire::psn_diff(p.psn, m->first_psn))} * mtu;
    std::memcpy(bufs[static_cast<size_t>(m - msgs.data())].data() + off, p.payload.data(),
                p.payload.size());
  }
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Message& m = msgs[i];
    const uint32_t lkey = b.reg_local(bufs[i]);
    SendWr wr = make_wr(wr_opcode(m.opcode), 1000 + i, bufs[i], lkey, m.length);
    wr.rdma.remote_addr = m.va;
    wr.rdma.rkey = m.rkey;
    wr.atomic.remote_addr = m.va;
    wr.atomic.rkey = m.rkey;
    wr.atomic.compare_add = m.opcode == wire::op::kRcCompareSwap ? m.compare : m.swap_add;
    wr.atomic.swap = m.swap_add;
    ASSERT_TRUE(b.eng->post_send(b.qpn, wr).ok()) << i;
  }

  // Replay: each request burst sent must be the next frame the Engine builds
  // (taken one at a time, where the capture has it); rxe's responses go in where
  // the capture has them.
  for (size_t i = 0; i < s.pkts.size(); ++i) {
    const Pkt& want = s.pkts[i];
    if (!want.from_burst) {
      b.deliver_one(s.frames[i]);
      continue;
    }
    SCOPED_TRACE("frame " + std::to_string(i + 1) + ": captured " + describe(want));
    Bytes f;
    ASSERT_TRUE(b.pull_one(&f)) << "the Engine has nothing to send";
    const Pkt got = decode(f);
    EXPECT_EQ(got.opcode, want.opcode);
    EXPECT_EQ(got.psn.value(), want.psn.value());
    EXPECT_EQ(got.dest_qpn, want.dest_qpn);
    EXPECT_EQ(got.ack_req, want.ack_req);
    EXPECT_EQ(got.solicited, want.solicited);
    EXPECT_EQ(got.has_reth, want.has_reth);
    EXPECT_EQ(got.has_atomic, want.has_atomic);
    EXPECT_EQ(got.va, want.va);
    EXPECT_EQ(got.rkey, want.rkey);
    EXPECT_EQ(got.dma_len, want.dma_len);
    EXPECT_EQ(got.swap_add, want.swap_add);
    EXPECT_EQ(got.compare, want.compare);
    EXPECT_TRUE(got.payload == want.payload) << "payload differs";
  }
  b.expect_no_drops();

  // Completions: the work requests rxe's responses finished, in order.
  Psn acked = msgs.front().first_psn - 1;
  for (const Pkt& p : s.pkts) {
    if (p.from_burst) continue;
    EXPECT_TRUE(p.has(wire::kResponse)) << describe(p);
    if (p.has_aeth) {
      EXPECT_TRUE(wire::AethSyndrome(p.syndrome).is_ack()) << describe(p);
    }
    const Psn upto =
        p.plain_ack() || p.has(wire::kLast) || p.has(wire::kAtomicAck) ? p.psn : p.psn - 1;
    if (wire::psn_diff(upto, acked) > 0) acked = upto;
  }
  size_t done = 0;
  while (done < msgs.size() && wire::psn_diff(msgs[done].last_psn, acked) <= 0) ++done;
  const std::vector<Wc> wcs = b.poll();
  ASSERT_EQ(wcs.size(), done) << "responses up to psn " << acked.value();
  for (size_t i = 0; i < wcs.size(); ++i) {
    const Message& m = msgs[i];
    SCOPED_TRACE("work request " + std::to_string(i));
    EXPECT_EQ(wcs[i].status, WcStatus::kSuccess);
    EXPECT_EQ(wcs[i].wr_id, 1000u + i);
    EXPECT_EQ(wcs[i].opcode, wc_opcode(wr_opcode(m.opcode)));
    if (m.opcode == wire::op::kRcRdmaReadRequest) {
      EXPECT_EQ(wcs[i].byte_len, m.length);
    }
    if (m.opcode >= wire::op::kRcCompareSwap) {
      EXPECT_EQ(wcs[i].byte_len, 8u);
    }
  }
  // READ data and atomic original values where the work requests pointed.
  for (const Pkt& p : s.pkts) {
    if (p.from_burst) continue;
    const Message* m = message_at(msgs, p.psn);
    ASSERT_NE(m, nullptr) << describe(p);
    const Bytes& buf = bufs[static_cast<size_t>(m - msgs.data())];
    if (p.has(wire::kReadResp)) {
      const uint64_t off =
          uint64_t{static_cast<uint32_t>(wire::psn_diff(p.psn, m->first_psn))} * mtu;
      EXPECT_EQ(std::memcmp(buf.data() + off, p.payload.data(), p.payload.size()), 0)
          << "READ data not placed: " << describe(p);
    } else if (p.has_orig) {
      uint64_t v = 0;
      std::memcpy(&v, buf.data(), 8);
      EXPECT_EQ(v, p.orig) << "atomic original value not placed: " << describe(p);
    }
  }
}

class InteropReplay : public ::testing::TestWithParam<Capture> {};

TEST_P(InteropReplay, BurstAnswersAsInTheCapture) {
  const Capture& c = GetParam();
  if (c.burst_requests) {
    replay_requester(c);
  } else {
    replay_responder(c);
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, InteropReplay, ::testing::ValuesIn(kCaptures),
                         [](const ::testing::TestParamInfo<Capture>& param_info) {
                           std::string n = param_info.param.file;
                           n = n.substr(0, n.find('.'));
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace burst::core::test
