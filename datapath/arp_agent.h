/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// ArpAgent: IPv4 neighbour handling for a port that no kernel stands behind
// (DPDK with a PCI device bound to vfio-pci, net_memif, the user side of
// net_tap). With AF_XDP, or DPDK on a kernel netdev (net_af_xdp, net_af_packet),
// the kernel answers ARP and burst reads its neighbour table instead.
//
//   on_frame()  every received frame whose EtherType is ARP goes here (workers
//               check `is_arp()` first, one 16-bit compare per frame): a request
//               for one of our addresses is answered; the sender of any request
//               or reply that names one of our addresses as target is learned.
//   resolve()   control plane: the MAC of an IPv4 next hop, from the cache or by
//               broadcasting requests (every 200 ms) until an answer arrives or
//               the timeout expires.
//
// Entries never age (a moved peer needs a gratuitous ARP or a restart of this
// port); IPv6 neighbour discovery is not implemented. Frames go out through the
// `Transmit` callback, always called with the agent's mutex held (so one
// callback at a time: it may use a non-thread-safe control TX queue).
//
// Threading: every member is thread-safe (one mutex; ARP is rare traffic).
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace burst::datapath {

class ArpAgent {
 public:
  using Mac = std::array<uint8_t, 6>;
  struct Address {
    uint32_t ip = 0;  // network byte order
    uint8_t prefix_len = 32;
  };
  using Transmit = std::function<bool(const uint8_t* frame, uint32_t len)>;

  struct Counters {
    uint64_t requests_answered = 0;
    uint64_t requests_sent = 0;
    uint64_t learned = 0;
    uint64_t ignored = 0;  // ARP for someone else, or malformed
    uint64_t tx_failures = 0;
  };

  static constexpr uint32_t kFrameLen = 60;  // 14 + 28, padded to the Ethernet minimum

  ArpAgent(const Mac& mac, std::vector<Address> addresses, Transmit tx);

  static bool is_arp(const uint8_t* frame, uint32_t len) {
    return len >= 14 && frame[12] == 0x08 && frame[13] == 0x06;
  }

  // Any thread. Returns true when the frame was ARP (and so consumed).
  bool on_frame(const uint8_t* frame, uint32_t len);

  // Control plane; blocks up to timeout_ms. On failure *error names the address.
  bool resolve(uint32_t ip, Mac* out, int timeout_ms, std::string* error);

  // Non-blocking pieces of resolve() for a caller that must poll the port's
  // queues itself while it waits (no worker running yet): the cache, and one
  // broadcast request.
  bool lookup(uint32_t ip, Mac* out) const;
  void request(uint32_t ip);

  // Broadcasts a gratuitous ARP for every address (when the port comes up).
  void announce();

  Counters counters() const;

 private:
  bool ours(uint32_t ip) const;
  uint32_t source_for(uint32_t target) const;
  void request_locked(uint32_t ip);
  void send_locked(uint16_t op, const Mac& eth_dst, const Mac& tha, uint32_t spa, uint32_t tpa);

  const Mac mac_;
  const std::vector<Address> addresses_;
  const Transmit tx_;
  mutable std::mutex mu_;
  std::condition_variable learned_cv_;
  std::unordered_map<uint32_t, Mac> cache_;
  Counters counters_;
};

}  // namespace burst::datapath
