// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "datapath/arp_agent.h"

#include <arpa/inet.h>

#include <chrono>
#include <cstring>

namespace burst::datapath {
namespace {

constexpr uint16_t kOpRequest = 1;
constexpr uint16_t kOpReply = 2;
constexpr auto kRetryInterval = std::chrono::milliseconds(200);
constexpr ArpAgent::Mac kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t rd_ip(const uint8_t* p) {  // keeps network byte order
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::string ip_string(uint32_t ip) {
  char buf[INET_ADDRSTRLEN] = {};
  in_addr a{ip};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

}  // namespace

ArpAgent::ArpAgent(const Mac& mac, std::vector<Address> addresses, Transmit tx)
    : mac_(mac), addresses_(std::move(addresses)), tx_(std::move(tx)) {}

bool ArpAgent::ours(uint32_t ip) const {
  for (const Address& a : addresses_)
    if (a.ip == ip) return true;
  return false;
}

// The local address on the target's subnet, else the first one.
uint32_t ArpAgent::source_for(uint32_t target) const {
  for (const Address& a : addresses_) {
    const uint32_t mask = a.prefix_len == 0 ? 0 : htonl(~uint32_t{0} << (32 - a.prefix_len));
    if ((a.ip & mask) == (target & mask)) return a.ip;
  }
  return addresses_.empty() ? 0 : addresses_.front().ip;
}

void ArpAgent::send_locked(uint16_t op, const Mac& eth_dst, const Mac& tha, uint32_t spa,
                           uint32_t tpa) {
  uint8_t f[kFrameLen] = {};
  std::memcpy(f, eth_dst.data(), 6);
  std::memcpy(f + 6, mac_.data(), 6);
  f[12] = 0x08;
  f[13] = 0x06;
  uint8_t* a = f + 14;
  a[1] = 1;     // htype Ethernet
  a[2] = 0x08;  // ptype IPv4
  a[4] = 6;
  a[5] = 4;
  a[7] = static_cast<uint8_t>(op);
  std::memcpy(a + 8, mac_.data(), 6);
  std::memcpy(a + 14, &spa, 4);
  std::memcpy(a + 18, tha.data(), 6);
  std::memcpy(a + 24, &tpa, 4);
  if (!tx_ || !tx_(f, kFrameLen)) ++counters_.tx_failures;
}

bool ArpAgent::on_frame(const uint8_t* frame, uint32_t len) {
  if (!is_arp(frame, len)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  const uint8_t* a = frame + 14;
  if (len < 14 + 28 || rd16(a) != 1 || rd16(a + 2) != 0x0800 || a[4] != 6 || a[5] != 4) {
    ++counters_.ignored;
    return true;
  }
  const uint16_t op = rd16(a + 6);
  Mac sha;
  std::memcpy(sha.data(), a + 8, 6);
  const uint32_t spa = rd_ip(a + 14);
  const uint32_t tpa = rd_ip(a + 24);
  const bool for_us = ours(tpa);
  const bool gratuitous = spa == tpa;
  if (!for_us && !(gratuitous && cache_.count(spa))) {
    ++counters_.ignored;
    return true;
  }
  if (spa != 0 && (op == kOpRequest || op == kOpReply)) {
    cache_.insert_or_assign(spa, sha);
    ++counters_.learned;
    learned_cv_.notify_all();
  }
  if (op == kOpRequest && for_us) {
    send_locked(kOpReply, sha, sha, tpa, spa);
    ++counters_.requests_answered;
  }
  return true;
}

bool ArpAgent::resolve(uint32_t ip, Mac* out, int timeout_ms, std::string* error) {
  std::unique_lock<std::mutex> lock(mu_);
  if (ours(ip)) {
    *error = ip_string(ip) + " is an address of this port";
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (auto it = cache_.find(ip); it != cache_.end()) {
      *out = it->second;
      return true;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    request_locked(ip);
    learned_cv_.wait_until(lock, std::min(deadline, now + kRetryInterval));
  }
  *error = "no ARP answer from " + ip_string(ip) + " within " + std::to_string(timeout_ms) +
           " ms (is the peer up and on this port's subnet?)";
  return false;
}

bool ArpAgent::lookup(uint32_t ip, Mac* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(ip);
  if (it == cache_.end()) return false;
  *out = it->second;
  return true;
}

void ArpAgent::request(uint32_t ip) {
  std::lock_guard<std::mutex> lock(mu_);
  request_locked(ip);
}

void ArpAgent::request_locked(uint32_t ip) {
  send_locked(kOpRequest, kBroadcast, Mac{}, source_for(ip), ip);
  ++counters_.requests_sent;
}

void ArpAgent::announce() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Address& a : addresses_) send_locked(kOpRequest, kBroadcast, Mac{}, a.ip, a.ip);
}

ArpAgent::Counters ArpAgent::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace burst::datapath
