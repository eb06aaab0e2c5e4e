// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// gsi_xdp_peer NETDEV PEER_IPV4 COUNT [REQ_PCAP]: burstd's Device on the AF_XDP backend
// (2 workers; GSI_PEER_WORKERS=n for n) sends COUNT MADs from QP1 to PEER_IPV4 (its MAC left to the
// Device: the kernel's neighbour table) and waits for them to come back
// (tests/netns/gsi_echo.py on the peer returns each with the addresses
// swapped); each must be intact, in order, from the peer's GID and MAC. Then one
// MAD to the port's own GID, delivered without the wire (one-host loopback).
// Prints one line per check; exit 0 when all hold, 1 otherwise.
// With REQ_PCAP: the interop mode of tests/interop/gsi.sh (kernel_answers).
#include <arpa/inet.h>
#include <poll.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "daemon/burstd/device.h"
#include "tests/unit/wire/pcap.h"

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

// Interop (tests/interop/gsi.sh): sends rxe's captured REQ (the first MAD to
// QP1 of `pcap`), readdressed as ours, to the peer, again every 3 s, until the
// REP of the peer's kernel CM comes back from the peer's GID, at most 60 s.
int kernel_answers(Gsi& gsi, uint8_t sgid, const net::Gid& own_gid, const net::Gid& dgid,
                   const std::string& pcap) {
  burst::test::PcapFile f;
  std::string error;
  if (!burst::test::read_pcap(pcap, &f, &error)) {
    std::printf("pcap: %s\n", error.c_str());
    return 2;
  }
  constexpr size_t kMadOff = 14 + 20 + 8 + 12 + 8;
  cm::Mad req = make_mad(sgid, dgid, 0);
  bool found = false;
  for (const auto& fr : f.frames) {
    if (fr.size() >= kMadOff + 256 + 4 && fr[42] == 0x64 && fr[47] == 0 && fr[48] == 0 &&
        fr[49] == 1) {
      std::memcpy(req.bytes.data(), fr.data() + kMadOff, 256);
      found = true;
      break;
    }
  }
  if (!found) return 2;
  // The REQ names its sender: the primary path's local port GID (MAD bytes
  // 80..95: offset 56 after the 24-byte MAD header, ibta_vol1_c12.h) and the
  // rdma_cm header's source address in the private data (at 164; IPv4: bytes
  // 180..183). Both become this port's, so that the kernel's answer comes here.
  std::memcpy(req.bytes.data() + 24 + 56, own_gid.data(), 16);
  std::memcpy(req.bytes.data() + 24 + 140 + 4 + 12, own_gid.data() + 12, 4);
  for (int t = 0; t < 20; ++t) {
    const int e = gsi.send(req);
    std::printf("REQ sent: %s\n", e == 0 ? "queued" : std::strerror(e));
    cm::Mad got[4];
    const size_t n = receive(gsi, got, 4, 3000);
    for (size_t i = 0; i < n; ++i) {
      const unsigned attr = unsigned(got[i].bytes[16]) << 8 | got[i].bytes[17];
      std::printf("MAD from the peer: class 0x%02x attribute 0x%04x (%s), source QP %u\n",
                  got[i].bytes[1], attr,
                  attr == 0x13   ? "REP"
                  : attr == 0x12 ? "REJ"
                  : attr == 0x11 ? "MRA"
                                 : "other",
                  got[i].peer.remote_qpn);
      if (attr == 0x12)  // the REJ's reason (IBA table 112)
        std::printf("REJ reason %u\n", unsigned(got[i].bytes[34]) << 8 | got[i].bytes[35]);
      if (got[i].bytes[1] == 0x07 && got[i].peer.gid == dgid && attr == 0x13) {
        std::printf("REP: the guest's QPN 0x%02x%02x%02x\n", got[i].bytes[24 + 8 + 4],
                    got[i].bytes[24 + 8 + 5], got[i].bytes[24 + 8 + 6]);
        return 0;
      }
    }
  }
  return 1;
}

int run(const std::string& netdev, const std::string& peer, uint32_t count,
        const std::string& pcap) {
  Config c;
  c.backend = BackendKind::kXdp;
  c.netdev = netdev;
  const char* workers = std::getenv("GSI_PEER_WORKERS");  // default 2
  c.workers = workers != nullptr ? static_cast<uint32_t>(std::atoi(workers)) : 2;
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
  if (!pcap.empty()) {
    const int rc = kernel_answers(gsi, static_cast<uint8_t>(sgid),
                                  d->info().gids[static_cast<size_t>(sgid)], dgid, pcap);
    d->stop();
    return rc;
  }
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
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: gsi_xdp_peer NETDEV PEER_IPV4 COUNT [REQ_PCAP]\n");
    return 2;
  }
  return burst::burstd::run(argv[1], argv[2], static_cast<uint32_t>(std::stoul(argv[3])),
                            argc == 5 ? argv[4] : "");
}
