// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// gsi_xdp_peer NETDEV PEER_IPV4 COUNT: burstd's Device on the AF_XDP backend
// (2 workers) sends COUNT MADs from QP1 to PEER_IPV4 (its MAC left to the
// Device: the kernel's neighbour table) and waits for them to come back
// (tests/netns/gsi_echo.py on the peer returns each with the addresses
// swapped); each must be intact, in order, from the peer's GID and MAC. Then one
// MAD to the port's own GID, delivered without the wire (one-host loopback).
// Prints one line per check; exit 0 when all hold, 1 otherwise.
#include <arpa/inet.h>
#include <poll.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "daemon/burstd/device.h"

namespace burst::burstd {
namespace {

cm::Mad make_mad(uint8_t sgid_index, const net::Gid& dgid, uint32_t seq) {
  cm::Mad m;
  m.peer.sgid_index = sgid_index;
  m.peer.gid = dgid;
  m.peer.remote_qpn = 1;
  m.bytes[0] = 1;
  m.bytes[1] = 0x07;
  m.bytes[2] = 2;
  std::memcpy(&m.bytes[8], &seq, sizeof(seq));
  for (size_t i = 24; i < m.bytes.size(); ++i) m.bytes[i] = static_cast<uint8_t>(i * 3 + seq);
  return m;
}

// Receives up to `want` MADs within about timeout_ms.
size_t receive(Gsi& gsi, cm::Mad* out, size_t want, int timeout_ms) {
  size_t n = 0;
  for (int waited = 0; n < want && waited < timeout_ms; waited += 100) {
    pollfd p{gsi.event_fd(), POLLIN, 0};
    if (poll(&p, 1, 100) > 0) n += gsi.receive(out + n, want - n);
  }
  return n;
}

int run(const std::string& netdev, const std::string& peer, uint32_t count) {
  Config c;
  c.backend = BackendKind::kXdp;
  c.netdev = netdev;
  c.workers = 2;
  std::string error;
  std::unique_ptr<Device> d = Device::Open(c, &error);
  if (!d) {
    std::printf("open: %s\n", error.c_str());
    return 2;
  }
  d->start();
  in_addr a{};
  if (inet_pton(AF_INET, peer.c_str(), &a) != 1) return 2;
  const net::Gid dgid = net::gid_from_ipv4(a);
  int sgid = -1;
  for (size_t i = 0; i < d->info().gids.size(); ++i) {
    if (net::gid_is_ipv4_mapped(d->info().gids[i])) sgid = static_cast<int>(i);
  }
  if (sgid < 0) return 2;
  Gsi& gsi = d->gsi();
  int failures = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const int e = gsi.send(make_mad(static_cast<uint8_t>(sgid), dgid, i));
    if (e != 0) {
      std::printf("send %u: %s\n", i, std::strerror(e));
      ++failures;
    }
  }
  auto back = std::make_unique<cm::Mad[]>(count + 1);
  const size_t n = receive(gsi, back.get(), count, 10000);
  std::printf("echo: %zu of %u MADs came back\n", n, count);
  if (n != count) ++failures;
  for (size_t i = 0; i < n; ++i) {
    const cm::Mad want = make_mad(static_cast<uint8_t>(sgid), dgid, static_cast<uint32_t>(i));
    if (back[i].bytes != want.bytes || back[i].peer.gid != dgid || back[i].peer.remote_qpn != 1 ||
        back[i].peer.sgid_index != sgid || back[i].peer.mac == net::MacAddr{}) {
      std::printf("echo: MAD %zu differs (bytes, order or peer)\n", i);
      ++failures;
    }
  }
  const net::Gid own = d->info().gids[static_cast<size_t>(sgid)];
  const int e = gsi.send(make_mad(static_cast<uint8_t>(sgid), own, 777));
  cm::Mad self;
  const bool self_ok = e == 0 && receive(gsi, &self, 1, 5000) == 1 &&
                       self.bytes == make_mad(static_cast<uint8_t>(sgid), own, 777).bytes &&
                       self.peer.gid == own && self.peer.mac == d->info().mac;
  std::printf("self: %s\n", self_ok ? "the MAD to the own GID came back" : "FAILED");
  if (!self_ok) ++failures;
  for (const auto& [name, v] : d->port_counters()) {
    if (name.rfind("gsi.", 0) == 0) std::printf("%s %llu\n", name.c_str(), (unsigned long long)v);
  }
  d->stop();
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace burst::burstd

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: gsi_xdp_peer NETDEV PEER_IPV4 COUNT\n");
    return 2;
  }
  return burst::burstd::run(argv[1], argv[2], static_cast<uint32_t>(std::stoul(argv[3])));
}
