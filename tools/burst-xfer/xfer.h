/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burst-xfer building blocks shared by the loopback and network modes: the
// options, the data patterns, and the per-QP requester and responder that post
// work requests and check completions on one Engine.
//
// Threading: a QpRequester / QpResponder is used by the thread that owns its
// Engine (the worker of its QP).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/engine.h"

namespace burst::tools {

enum class Op : uint8_t { kWrite = 0, kWriteImm = 1, kRead = 2, kSend = 3 };
const char* op_name(Op op);
bool parse_op(const std::string& s, Op* op);

struct Options {
  std::string backend = "loopback";
  std::string op = "write";
  uint64_t size = 65536;
  uint32_t qps = 1;
  uint32_t depth = 16;    // outstanding messages per QP
  uint32_t window = 256;  // unacknowledged packets per QP (requester window)
  uint64_t iters = 0;
  double duration_s = 0;
  uint32_t mtu = 4096;
  bool verify = false;
  std::string lat_out;  // requester: latency samples (ns), one per line
  double loss = 0;      // --loss: loopback drop probability (BURST_TEST_HOOKS builds only)
  // Network backends.
  std::string netdev;
  uint32_t workers = 1;
  bool spin = false;  // network backends: never yield the CPU when idle
  uint16_t port = 18515;
  std::string server;  // client mode when set
  std::string xdp_mode = "auto";
  uint32_t frames = 16384;  // UMEM frames per queue (half receive, half transmit)
  // DPDK (--backend dpdk).
  std::string dpdk_port;  // devargs; default net_af_packet on --netdev
  std::string eal;        // extra EAL arguments
  std::string address;    // A.B.C.D/LEN of a port with no kernel netdev
  uint32_t port_mtu = 0;  // L3 MTU of such a port; 0: 1500, or 9000 for --mtu above 1024
};

uint64_t now_ns();

// Set by SIGINT / SIGTERM: every loop of burst-xfer checks it and unwinds, so
// the XDP program is detached and the memory released on the way out.
bool interrupted();
void install_signal_handlers();

// Pattern of message `seq` of QP `qp`: cheap to generate and check, and
// different for every message so that stale bytes are caught.
void fill_pattern(uint8_t* p, uint64_t n, uint64_t qp, uint64_t seq);
bool check_pattern(const uint8_t* p, uint64_t n, uint64_t qp, uint64_t seq,
                   std::vector<uint8_t>* tmp);

struct Params {
  Op op = Op::kWrite;
  uint32_t size = 0;
  uint32_t depth = 16;
  bool verify = false;
};

// The peer's buffer for one QP: `depth` slots of max(size, 1) bytes.
struct RemoteRegion {
  uint64_t va = 0;
  uint32_t rkey = 0;
};

// Latency samples and totals of one thread.
struct Results {
  uint64_t completed = 0;
  uint64_t verify_failures = 0;
  std::vector<uint64_t> latency_ns;
  std::string error;  // first error, empty when none
};

// What both ends of one QP's traffic hold: the engine that owns the QP (called
// on its worker's thread only), the QP and its index, the parameters, the local
// slots (registered with lkey) and their spacing.
class QpEnd {
 public:
  uint32_t qpn() const { return qpn_; }

 protected:
  QpEnd(core::Engine& engine, uint32_t qpn, uint32_t qp_index, const Params& p, uint8_t* local,
        uint32_t lkey)
      : engine_(engine),
        qpn_(qpn),
        qp_index_(qp_index),
        p_(p),
        local_(local),
        lkey_(lkey),
        slot_bytes_(p.size > 0 ? p.size : 1) {}

  core::Engine& engine_;
  uint32_t qpn_, qp_index_;
  Params p_;
  uint8_t* local_;
  uint32_t lkey_;
  uint64_t slot_bytes_;
};

// Keeps `depth` messages in flight on one RC QP.
//   write / write_imm: WRITE from the local slot to the remote slot; with
//     verify, followed on the same QP by a READ of that remote slot into the
//     check slot, compared with what was written (the READ sees the WRITE:
//     the responder executes requests in order).
//   read: READ of the remote slot (filled by the responder with pattern
//     (qp, slot)) into the local slot; verify compares.
//   send: SEND of the local slot; the responder verifies.
class QpRequester : public QpEnd {
 public:
  QpRequester(core::Engine& engine, uint32_t qpn, uint32_t qp_index, const Params& p,
              uint8_t* local, uint32_t lkey, uint8_t* check, uint32_t check_lkey,
              RemoteRegion remote);
  // Posts into free slots; `budget` limits the number of new messages.
  // Returns the number posted; false in *ok on a post error.
  uint32_t post(uint64_t now, uint64_t budget, Results* r);
  // A completion of this QP (wr_id low 32 bits = slot).
  void complete(const core::Wc& wc, uint64_t now, Results* r);
  bool idle() const { return inflight_ == 0; }

 private:
  struct Slot {
    uint64_t seq = 0;
    uint64_t posted_ns = 0;
    bool busy = false;
  };
  uint8_t* check_;
  uint32_t check_lkey_;
  RemoteRegion remote_;
  std::vector<Slot> slots_;
  std::deque<uint32_t> order_;  // busy slots in posting order: RC completes in order
  uint64_t next_seq_ = 0;
  uint32_t inflight_ = 0;
  std::vector<uint8_t> tmp_;
};

// The passive side of one QP: for send and write_imm keeps 2 x `depth`
// receives posted (`local` holds 2 x depth slots) (SEND payloads verified, immediate data checked
// to count up in order); for read fills the slots with their patterns once.
class QpResponder : public QpEnd {
 public:
  QpResponder(core::Engine& engine, uint32_t qpn, uint32_t qp_index, const Params& p,
              uint8_t* local, uint32_t lkey);
  core::Status start();
  void complete(const core::Wc& wc, Results* r);
  uint64_t received() const { return received_; }

 private:
  core::Status post_recv(uint32_t slot);
  uint64_t received_ = 0;
  std::vector<uint8_t> tmp_;
};

// RoCE path MTU of a byte count (256 ... 4096; anything else is 1024).
core::Mtu path_mtu_of(uint32_t bytes);

// --lat-out: the samples of `r` (ns, in completion order), one per line.
// Returns false (and says why on stderr) when the file cannot be written.
bool write_latency_samples(const std::string& path, const Results& r);

// Drops of the given engines, total and by reason ("reason=count ...").
struct DropReport {
  uint64_t total = 0;
  std::string by_reason;
};
DropReport drop_report(const std::vector<const core::EngineCounters*>& engines);

// Summary line printed at the end of a run.
std::string summary_line(const Options& o, Results* r, double secs, const DropReport& drops,
                         const std::string& extra);

}  // namespace burst::tools
