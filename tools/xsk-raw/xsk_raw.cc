// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// xsk-raw: sends or receives raw RoCEv2-shaped frames (Ethernet / IPv4 /
// UDP 4791 / dummy BTH / payload / zero ICRC) through the AF_XDP backend for a
// bounded time and prints frames, pps and Gbit/s (L2 bytes without FCS,
// preamble and inter-frame gap). One thread per queue.
//
//   xsk-raw --netdev veth1 --mode tx --queues 0 --size 1024 --duration 5
//           --dst-mac 02:00:00:00:00:02 [--src-mac ..] [--dst-ip ..] [--src-ip ..]
//   xsk-raw --netdev veth2 --mode rx --queues 0-3 --duration 6 [--verify]
//   xsk-raw --mode probe        exit 0 if AF_XDP can be used here, 77 if not
//
// Exit codes: 0 ok, 1 runtime failure, 2 usage error, 77 AF_XDP unavailable.
#include <arpa/inet.h>
#include <getopt.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "datapath/xdp/xdp_port.h"
#include "datapath/xdp/xdp_queue.h"
#include "datapath/xdp/xdp_sys.h"
#include "net/netdev.h"

namespace {

using burst::datapath::Frame;
using burst::datapath::XdpConfig;
using burst::datapath::XdpError;
using burst::datapath::XdpPort;
using burst::datapath::XdpQueue;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kHdrBytes = 14 + 20 + 8 + 12;  // Ethernet, IPv4, UDP, BTH
constexpr uint32_t kMagicOff = kHdrBytes;         // payload: magic, seq, queue
constexpr uint32_t kSeqOff = kMagicOff + 8;
constexpr uint32_t kQueueOff = kSeqOff + 8;
constexpr uint32_t kPatternOff = kQueueOff + 4;
constexpr uint32_t kMinFrame = kPatternOff + 4;     // + ICRC
constexpr uint64_t kMagic = 0x5752545352554221ull;  // "!BURSTRW" little-endian

std::atomic<bool> g_stop{false};

struct Options {
  std::string mode;
  XdpConfig cfg;
  uint32_t size = 1024;
  double duration_s = 5.0;
  uint8_t dst_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  uint8_t src_mac[6] = {};
  bool have_src_mac = false;
  in_addr dst_ip{htonl(0x0a000002)};
  in_addr src_ip{htonl(0x0a000001)};
  bool verify = false;        // rx: check every payload byte
  bool headers_only = false;  // tx: write only headers + sequence (payload left as is)
  uint32_t backoff_us = 0;    // rx: sleep after 1000 idle polls (0: pure busy poll)
};

struct Result {
  uint64_t frames = 0;
  uint64_t bytes = 0;
  uint64_t bad = 0;
  uint64_t rate_frames = 0;  // frames and bytes the rate is computed from
  uint64_t rate_bytes = 0;
  double seconds = 0;  // tx: run time; rx: first to last received frame
  burst::datapath::XdpQueueCounters counters;
  xdp_statistics kstats{};
  bool have_kstats = false;
};

uint8_t PatternByte(uint32_t i) { return static_cast<uint8_t>(i * 31u + 7u); }

uint16_t IpChecksum(const uint8_t* p, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += (uint32_t{p[i]} << 8) | p[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

void Put16(uint8_t* p, uint16_t v) {
  p[0] = v >> 8;
  p[1] = v & 0xff;
}

// Ethernet / IPv4 / UDP 4791 / BTH (RC SEND ONLY, dest QP 0x11) / payload / ICRC 0.
void BuildTemplate(const Options& o, uint32_t queue, std::vector<uint8_t>* t) {
  t->assign(std::max(o.size, kMinFrame), 0);
  uint8_t* p = t->data();
  std::memcpy(p, o.dst_mac, 6);
  std::memcpy(p + 6, o.src_mac, 6);
  Put16(p + 12, 0x0800);
  uint8_t* ip = p + 14;
  ip[0] = 0x45;
  Put16(ip + 2, static_cast<uint16_t>(o.size - 14));
  ip[6] = 0x40;  // DF
  ip[8] = 64;
  ip[9] = 17;
  std::memcpy(ip + 12, &o.src_ip, 4);
  std::memcpy(ip + 16, &o.dst_ip, 4);
  Put16(ip + 10, IpChecksum(ip, 20));
  uint8_t* udp = ip + 20;
  Put16(udp, static_cast<uint16_t>(49152 + queue));
  Put16(udp + 2, 4791);
  Put16(udp + 4, static_cast<uint16_t>(o.size - 14 - 20));
  uint8_t* bth = udp + 8;
  bth[0] = 0x04;           // RC SEND ONLY
  Put16(bth + 2, 0xffff);  // P_Key
  bth[7] = 0x11;           // dest QP
  std::memcpy(p + kMagicOff, &kMagic, 8);
  std::memcpy(p + kQueueOff, &queue, 4);
  for (uint32_t i = kPatternOff; i + 4 < o.size; ++i) p[i] = PatternByte(i);
}

Result RunTx(XdpQueue& q, const Options& o) {
  Result r;
  std::vector<uint8_t> tmpl;
  BuildTemplate(o, q.queue_id(), &tmpl);
  const uint32_t hdr_copy = std::min<uint32_t>(o.size, kPatternOff);
  Frame f[XdpQueue::kMaxBurst];
  uint64_t seq = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(o.duration_s));
  uint32_t iter = 0;
  uint32_t held = 0;  // frames allocated and filled but not yet accepted
  while (!g_stop.load(std::memory_order_relaxed)) {
    if ((++iter & 63) == 0 && Clock::now() >= end) break;
    if (held == 0) {
      held = q.tx_alloc(f, XdpQueue::kMaxBurst);
      for (uint32_t i = 0; i < held; ++i) {
        std::memcpy(f[i].data, tmpl.data(), o.headers_only ? hdr_copy : o.size);
        std::memcpy(f[i].data + kSeqOff, &seq, 8);
        ++seq;
        f[i].len = o.size;
      }
    }
    if (held > 0) {
      const uint32_t sent = q.tx_burst(f, held);
      if (sent < held) std::memmove(f, f + sent, (held - sent) * sizeof(Frame));
      held -= sent;
    }
    q.flush();
  }
  if (held > 0) q.tx_free(f, held);
  // Drain: wait (bounded) for the kernel to complete what was submitted.
  const auto drain_end = Clock::now() + std::chrono::seconds(1);
  while (q.tx_slots_free() < q.tx_slots() && Clock::now() < drain_end) q.flush();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.counters = q.counters();
  r.frames = r.counters.tx_frames;
  r.bytes = r.counters.tx_bytes;
  r.rate_frames = r.frames;
  r.rate_bytes = r.bytes;
  r.have_kstats = q.KernelStats(&r.kstats);
  return r;
}

bool CheckFrame(const Frame& f, const Options& o) {
  if (f.len < kMinFrame) return false;
  const uint8_t* p = f.data;
  uint32_t l3 = 14;
  uint16_t et = static_cast<uint16_t>(p[12] << 8 | p[13]);
  if (et == 0x8100) {
    l3 = 18;
    et = static_cast<uint16_t>(p[16] << 8 | p[17]);
  }
  if (et != 0x0800 || p[l3 + 9] != 17) return false;
  const uint32_t ip_len = static_cast<uint32_t>(p[l3 + 2] << 8 | p[l3 + 3]);
  if (l3 + ip_len > f.len) return false;
  const uint8_t* udp = p + l3 + (p[l3] & 0xf) * 4;
  if ((udp[2] << 8 | udp[3]) != 4791) return false;
  uint64_t magic;
  std::memcpy(&magic, p + kMagicOff, 8);
  if (magic != kMagic) return false;
  if (o.verify) {
    const uint32_t end = l3 + ip_len - 4;
    for (uint32_t i = kPatternOff; i < end; ++i) {
      if (p[i] != PatternByte(i)) return false;
    }
  }
  return true;
}

Result RunRx(XdpQueue& q, const Options& o) {
  Result r;
  Frame f[XdpQueue::kMaxBurst];
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(o.duration_s));
  uint32_t iter = 0;
  uint32_t idle = 0;
  Clock::time_point first{};
  Clock::time_point last{};
  uint64_t first_frames = 0;  // frames of the first burst (not covered by the interval)
  while (!g_stop.load(std::memory_order_relaxed)) {
    if ((++iter & 63) == 0 && Clock::now() >= end) break;
    const uint32_t n = q.rx_burst(f, XdpQueue::kMaxBurst);
    for (uint32_t i = 0; i < n; ++i) {
      if (!CheckFrame(f[i], o)) ++r.bad;
    }
    if (n > 0) {
      last = Clock::now();
      if (first_frames == 0) {
        first = last;
        first_frames = n;
      }
      q.rx_release(f, n);
      idle = 0;
    } else if (o.backoff_us > 0 && ++idle >= 1000) {
      std::this_thread::sleep_for(std::chrono::microseconds(o.backoff_us));
    }
    q.refill();
    q.flush();
  }
  r.counters = q.counters();
  r.frames = r.counters.rx_frames;
  r.bytes = r.counters.rx_bytes;
  // Rate over the receiving interval: the frames after the first burst.
  r.seconds = std::chrono::duration<double>(last - first).count();
  r.rate_frames = r.frames > first_frames ? r.frames - first_frames : 0;
  r.rate_bytes = r.frames > 0 ? r.bytes * r.rate_frames / r.frames : 0;
  r.have_kstats = q.KernelStats(&r.kstats);
  return r;
}

bool ParseMac(const char* s, uint8_t* mac) {
  unsigned v[6];
  if (std::sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) {
    return false;
  }
  for (int i = 0; i < 6; ++i) {
    if (v[i] > 255) return false;
    mac[i] = static_cast<uint8_t>(v[i]);
  }
  return true;
}

bool ParseQueues(const char* s, std::vector<uint32_t>* out) {
  std::string str(s);
  size_t pos = 0;
  while (pos <= str.size()) {
    const size_t comma = str.find(',', pos);
    const std::string item =
        str.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    unsigned a = 0, b = 0;
    if (std::sscanf(item.c_str(), "%u-%u", &a, &b) == 2 && a <= b && b < 1024) {
      for (unsigned i = a; i <= b; ++i) out->push_back(i);
    } else if (std::sscanf(item.c_str(), "%u", &a) == 1 && a < 1024) {
      out->push_back(a);
    } else {
      return false;
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return !out->empty();
}

void Usage() {
  std::fprintf(stderr,
               "usage: xsk-raw --netdev DEV --mode tx|rx [--queues 0|0,1|0-3] [--size BYTES]\n"
               "               [--duration SEC] [--dst-mac MAC] [--src-mac MAC] [--dst-ip IP]\n"
               "               [--src-ip IP] [--xdp-mode auto|native|generic]\n"
               "               [--zero-copy auto|off|require] [--hugepages auto|off|require]\n"
               "               [--frames N] [--frame-size 2048|4096] [--no-multi-buffer]\n"
               "               [--verify] [--headers-only] [--backoff-us N] [--bpf-object FILE]\n"
               "       xsk-raw --mode probe\n");
}

int ParseArgs(int argc, char** argv, Options* o) {
  enum {
    kNetdev = 256,
    kQueues,
    kMode,
    kSize,
    kDuration,
    kDstMac,
    kSrcMac,
    kDstIp,
    kSrcIp,
    kXdpMode,
    kZeroCopy,
    kHuge,
    kFrames,
    kFrameSize,
    kNoMb,
    kVerify,
    kHdrOnly,
    kBackoff,
    kBpfObj,
    kHelp
  };
  static const option longopts[] = {{"netdev", required_argument, nullptr, kNetdev},
                                    {"queues", required_argument, nullptr, kQueues},
                                    {"queue", required_argument, nullptr, kQueues},
                                    {"mode", required_argument, nullptr, kMode},
                                    {"size", required_argument, nullptr, kSize},
                                    {"duration", required_argument, nullptr, kDuration},
                                    {"dst-mac", required_argument, nullptr, kDstMac},
                                    {"src-mac", required_argument, nullptr, kSrcMac},
                                    {"dst-ip", required_argument, nullptr, kDstIp},
                                    {"src-ip", required_argument, nullptr, kSrcIp},
                                    {"xdp-mode", required_argument, nullptr, kXdpMode},
                                    {"zero-copy", required_argument, nullptr, kZeroCopy},
                                    {"hugepages", required_argument, nullptr, kHuge},
                                    {"frames", required_argument, nullptr, kFrames},
                                    {"frame-size", required_argument, nullptr, kFrameSize},
                                    {"no-multi-buffer", no_argument, nullptr, kNoMb},
                                    {"verify", no_argument, nullptr, kVerify},
                                    {"headers-only", no_argument, nullptr, kHdrOnly},
                                    {"backoff-us", required_argument, nullptr, kBackoff},
                                    {"bpf-object", required_argument, nullptr, kBpfObj},
                                    {"help", no_argument, nullptr, kHelp},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
    bool ok = true;
    switch (c) {
      case kNetdev:
        o->cfg.netdev = optarg;
        break;
      case kQueues:
        o->cfg.queues.clear();
        ok = ParseQueues(optarg, &o->cfg.queues);
        break;
      case kMode:
        o->mode = optarg;
        break;
      case kSize:
        o->size = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0));
        break;
      case kDuration:
        o->duration_s = std::strtod(optarg, nullptr);
        break;
      case kDstMac:
        ok = ParseMac(optarg, o->dst_mac);
        break;
      case kSrcMac:
        ok = ParseMac(optarg, o->src_mac);
        o->have_src_mac = true;
        break;
      case kDstIp:
        ok = inet_pton(AF_INET, optarg, &o->dst_ip) == 1;
        break;
      case kSrcIp:
        ok = inet_pton(AF_INET, optarg, &o->src_ip) == 1;
        break;
      case kXdpMode:
        ok = burst::datapath::FromString(optarg, &o->cfg.xdp_mode);
        break;
      case kZeroCopy:
        ok = burst::datapath::FromString(optarg, &o->cfg.zero_copy);
        break;
      case kHuge:
        ok = burst::datapath::FromString(optarg, &o->cfg.hugepages);
        break;
      case kFrames:
        o->cfg.num_frames = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0));
        break;
      case kFrameSize:
        o->cfg.frame_size = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0));
        break;
      case kNoMb:
        o->cfg.multi_buffer = false;
        break;
      case kVerify:
        o->verify = true;
        break;
      case kHdrOnly:
        o->headers_only = true;
        break;
      case kBackoff:
        o->backoff_us = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0));
        break;
      case kBpfObj:
        o->cfg.bpf_object = optarg;
        break;
      case kHelp:
        Usage();
        std::exit(0);
      default:
        ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "xsk-raw: bad value for option %s\n", argv[optind - 1]);
      return 2;
    }
  }
  if (o->mode == "probe") return 0;
  if (o->cfg.netdev.empty() || (o->mode != "tx" && o->mode != "rx")) {
    Usage();
    return 2;
  }
  if (o->cfg.queues.empty()) o->cfg.queues.push_back(0);
  if (o->duration_s <= 0 || o->duration_s > 3600) {
    std::fprintf(stderr, "xsk-raw: --duration must be in (0, 3600] seconds\n");
    return 2;
  }
  if (o->mode == "tx" && o->size < kMinFrame) {
    std::fprintf(stderr, "xsk-raw: --size must be at least %u\n", kMinFrame);
    return 2;
  }
  return 0;
}

int Probe() {
  const std::string missing = burst::datapath::xdp_sys::MissingCapabilities();
  if (!missing.empty()) {
    std::printf("xsk-raw probe: missing %s (run as root)\n", missing.c_str());
    return 77;
  }
  if (const int e = burst::datapath::xdp_sys::ProbeAfXdp(); e != 0) {
    std::printf("xsk-raw probe: no AF_XDP sockets in this kernel (%s)\n", std::strerror(e));
    return 77;
  }
  std::printf("xsk-raw probe: AF_XDP available\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const int rc = ParseArgs(argc, argv, &o); rc != 0) return rc;
  if (o.mode == "probe") return Probe();

  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop.store(true); };
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  // The netdev's facts (index, MTU, queues, MAC) come from net/, as for burstd.
  burst::net::NetdevInfo nd;
  if (const burst::net::Status s = burst::net::query_netdev(o.cfg.netdev, &nd); !s.ok()) {
    std::fprintf(stderr, "xsk-raw: %s\n", s.message().c_str());
    return 1;
  }
  o.cfg.netdev_info = {static_cast<int>(nd.ifindex), nd.mtu, nd.rx_queues, nd.max_queues};
  XdpError err;
  std::unique_ptr<XdpPort> port = XdpPort::Open(o.cfg, &err);
  if (!port) {
    std::fprintf(stderr, "xsk-raw: %s\n", err.message.c_str());
    return err.code == EPERM ? 77 : 1;
  }
  if (!o.have_src_mac) std::memcpy(o.src_mac, nd.mac.data(), 6);
  std::vector<std::unique_ptr<XdpQueue>> queues;
  for (uint32_t qid : o.cfg.queues) {
    auto q = XdpQueue::Open(*port, qid, &err);
    if (!q) {
      std::fprintf(stderr, "xsk-raw: %s\n", err.message.c_str());
      return 1;
    }
    queues.push_back(std::move(q));
  }
  if (o.mode == "tx" && o.size > queues[0]->mtu()) {
    std::fprintf(stderr, "xsk-raw: --size %u exceeds the largest frame %u of %s (MTU %u)\n", o.size,
                 queues[0]->mtu(), o.cfg.netdev.c_str(), port->netdev_mtu());
    return 2;
  }
  std::printf(
      "xsk-raw: %s %s queues=%zu xdp=%s prog_id=%u %s multi_buffer=%s hugepages=%s "
      "mtu=%u%s%s\n",
      o.mode.c_str(), o.cfg.netdev.c_str(), queues.size(), port->attach_mode_name(),
      port->prog_id(), queues[0]->zero_copy() ? "zero-copy" : "copy",
      queues[0]->multi_buffer() ? "yes" : "no", queues[0]->hugepages() ? "yes" : "no",
      port->netdev_mtu(), port->notes().empty() ? "" : " note: ", port->notes().c_str());
  std::fflush(stdout);

  std::vector<Result> results(queues.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < queues.size(); ++i) {
    threads.emplace_back(
        [&, i] { results[i] = o.mode == "tx" ? RunTx(*queues[i], o) : RunRx(*queues[i], o); });
  }
  for (auto& t : threads) t.join();

  Result total;
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    const auto& c = r.counters;
    std::printf("xsk-raw queue %u: frames=%" PRIu64 " bytes=%" PRIu64 " bad=%" PRIu64
                " multibuf=%" PRIu64 " tx_kicks=%" PRIu64 " tx_kick_busy=%" PRIu64
                " tx_completed_descs=%" PRIu64 " tx_ring_full=%" PRIu64 " scratch_waits=%" PRIu64
                " fill_wakeups=%" PRIu64,
                queues[i]->queue_id(), r.frames, r.bytes, r.bad, c.rx_multibuf, c.tx_kicks,
                c.tx_kick_busy, c.tx_completed, c.tx_ring_full, c.rx_scratch_waits, c.fill_wakeups);
    if (r.have_kstats) {
      std::printf(" k_rx_dropped=%llu k_rx_ring_full=%llu k_fill_empty=%llu k_tx_invalid=%llu",
                  static_cast<unsigned long long>(r.kstats.rx_dropped),
                  static_cast<unsigned long long>(r.kstats.rx_ring_full),
                  static_cast<unsigned long long>(r.kstats.rx_fill_ring_empty_descs),
                  static_cast<unsigned long long>(r.kstats.tx_invalid_descs));
    }
    std::printf("\n");
    total.frames += r.frames;
    total.bytes += r.bytes;
    total.bad += r.bad;
    total.rate_frames += r.rate_frames;
    total.rate_bytes += r.rate_bytes;
    total.seconds = std::max(total.seconds, r.seconds);
  }
  const double s = total.seconds > 0 ? total.seconds : 1;
  std::printf("xsk-raw %s total: frames=%" PRIu64 " bytes=%" PRIu64 " bad=%" PRIu64
              " seconds=%.3f pps=%.0f gbps=%.3f\n",
              o.mode.c_str(), total.frames, total.bytes, total.bad, s, total.rate_frames / s,
              total.rate_bytes * 8.0 / s / 1e9);
  burst::datapath::XdpSteerCounters sc{};
  if (port->ReadCounters(&sc)) {
    std::printf("xsk-raw steer:");
    for (uint32_t i = 0; i < sc.size(); ++i) {
      std::printf(" %s=%" PRIu64, burst::datapath::SteerCounterName(i), sc[i]);
    }
    std::printf("\n");
  }
  queues.clear();  // sockets before the port (detach last)
  port.reset();
  return 0;
}
