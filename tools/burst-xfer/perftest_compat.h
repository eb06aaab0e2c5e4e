/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The TCP side channel of stock perftest (linux-rdma/perftest, as shipped by
// Debian 12: perftest 4.5-0.17, which reports version "6.06"), so that
// burst-xfer can face an unmodified ib_write_bw on another host.
//
// perftest's out-of-band protocol (no RDMA-CM, Ethernet link, GID in use) is a
// strictly alternating exchange over one TCP connection: for every step the
// client writes its bytes first and then reads the server's, the server reads
// then writes. Binary fields are big endian. The steps of a one-sided BW test:
//   1. version strings, 16 bytes each (NUL padded)
//   2. if the peer's version >= 5.32: cycle buffer then cache line size (int32
//      each); both sides keep the maximum (the cycle buffer sizes the
//      responder's buffer, of which `cycle_buffer` bytes start at its VA)
//   3. if the peer's version >= 5.1: the active MTU as the decimal text of
//      enum ibv_mtu (2 bytes with NUL when the version >= 5.31, else 4); both
//      use the smaller
//   4. per QP, three rounds of the 108-byte text "key" message
//      LID:OUT_READS:QPN:PSN:RKEY:VADDR:GID[16 bytes]:SRQN: (hex fields,
//      NUL terminated): the exchange, a second one after the QPs reach RTR
//      (printed as "remote address"), then one more as a barrier
//   5. after the run: one key round (the client finished), then the client's
//      report: size (u64), iters (u64 when the version >= 5.33, else u32),
//      BW peak, BW average, message rate (IEEE doubles, byte-swapped to big
//      endian); the server prints the client's report as its result line
//   6. close: one more key round, then each side writes "done\0" and closes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace burst::tools {

constexpr size_t kPerftestKeyMsgSize = 108;  // KEY_MSG_SIZE_GID
constexpr size_t kPerftestVersionSize = 16;  // MAX_VERSION
// The version this implementation speaks (perftest 4.5-0.17 calls itself 6.06).
constexpr const char* kPerftestVersion = "6.06";

struct PerftestDest {
  uint32_t lid = 0;
  uint32_t out_reads = 0;
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // 24 bits
  uint32_t rkey = 0;
  uint64_t vaddr = 0;
  std::array<uint8_t, 16> gid{};
  uint32_t srqn = 0;
};

// The 108-byte key message (the text plus NUL padding).
std::string perftest_encode_dest(const PerftestDest& d);
// Parses a key message; false when it is malformed.
bool perftest_decode_dest(const char* msg, size_t n, PerftestDest* d);

// ibv_mtu enum <-> bytes (256 .. 4096); 0 when invalid.
uint32_t perftest_mtu_enum(uint32_t bytes);
uint32_t perftest_mtu_bytes(uint32_t e);

struct PerftestReport {
  uint64_t size = 0;
  uint64_t iters = 0;
  double bw_peak = 0;   // MB/s (2^20 bytes)
  double bw_avg = 0;    // MB/s (2^20 bytes)
  double msg_rate = 0;  // Mpps
};

// The client end of a perftest side channel (the server end is not written yet).
// Every wait is bounded; errors throw std::runtime_error naming the step.
class PerftestPeer {
 public:
  // Connects to host:port, retrying until timeout_ms (the server may be starting).
  static PerftestPeer connect_to(const std::string& host, uint16_t port, int timeout_ms);
  PerftestPeer(PerftestPeer&& o) noexcept
      : fd_(o.fd_), timeout_ms_(o.timeout_ms_), rem_version_(std::move(o.rem_version_)) {
    o.fd_ = -1;
  }
  PerftestPeer& operator=(PerftestPeer&&) = delete;
  ~PerftestPeer();

  // Steps 1-3. Returns the MTU (bytes) both sides use: min(ours, theirs).
  uint32_t negotiate(uint32_t mtu_bytes, uint32_t cycle_buffer, uint32_t cache_line);
  const std::string& remote_version() const { return rem_version_; }
  // One key round (steps 4, 5 and 6 are made of these).
  PerftestDest hand_shake(const PerftestDest& mine);
  // Step 5 after its key round: sends ours, returns the server's report.
  PerftestReport exchange_reports(const PerftestReport& mine);
  // Step 6.
  void close_connection(const PerftestDest& mine);

  std::string local_address() const;
  std::string peer_address() const;

 private:
  explicit PerftestPeer(int fd, int timeout_ms) : fd_(fd), timeout_ms_(timeout_ms) {}
  void xchg(const void* mine, void* rem, size_t n, const char* what);
  void write_all(const void* p, size_t n, const char* what);
  void read_exact(void* p, size_t n, const char* what);
  double rem_version_number() const;

  int fd_ = -1;
  int timeout_ms_ = 30'000;
  std::string rem_version_;
};

}  // namespace burst::tools
