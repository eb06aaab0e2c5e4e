// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "datapath/dpdk/dpdk_port.h"

#include <pthread.h>
#include <rte_alarm.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "datapath/arp_agent.h"
#include "datapath/dpdk/dpdk_queue.h"

#ifdef BURST_DPDK_STEER_PROGRAM
extern "C" const unsigned char burst_bpf_roce_steer_dpdk_data[];
extern "C" const unsigned long burst_bpf_roce_steer_dpdk_size;
#endif

namespace burst::datapath {
namespace {

constexpr uint16_t kRoceUdpPort = 4791;
constexpr uint32_t kPoolCache = 256;
constexpr uint32_t kControlMbufs = 512;
constexpr uint32_t kRoomSlack = 256;  // beyond the largest frame: PMDs that want a ring frame

// The mbuf data room: a whole frame, and a whole ring frame for PMDs that
// copy ring frames into mbufs (net_af_packet's framesz devarg).
uint32_t data_room(uint32_t frame_max, const std::string& devargs) {
  uint32_t room = std::max<uint32_t>(frame_max + kRoomSlack, RTE_MBUF_DEFAULT_DATAROOM);
  if (const size_t at = devargs.find("framesz="); at != std::string::npos)
    room = std::max<uint32_t>(room, static_cast<uint32_t>(std::strtoul(devargs.c_str() + at + 8, nullptr, 10)));
  return RTE_PKTMBUF_HEADROOM + room;
}

DpdkError make_error(int code, std::string message) { return DpdkError{code, std::move(message)}; }

// The EAL of this process: initialised once, by the first Open().
struct Eal {
  std::once_flag once;
  bool ok = false;
  bool huge = false;
  bool pci = false;
  std::string error;
  std::string notes;
};
Eal& eal() {
  static Eal e;
  return e;
}

bool is_pci_address(const std::string& devargs) {
  // dddd:bb:dd.f or bb:dd.f, optionally followed by ",args".
  const std::string name = devargs.substr(0, devargs.find(','));
  unsigned d, b, s, f;
  char tail;
  return std::sscanf(name.c_str(), "%x:%x:%x.%x%c", &d, &b, &s, &f, &tail) == 4 ||
         std::sscanf(name.c_str(), "%x:%x.%x%c", &b, &s, &f, &tail) == 3;
}

// Free 2 MB hugepages (0 if the size is different or unknown).
uint64_t free_hugepages_2m() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t value = 0, free = 0, size_kb = 0;
  while (in >> key >> value) {
    if (key == "HugePages_Free:") free = value;
    if (key == "Hugepagesize:") size_kb = value;
    in.ignore(1 << 10, '\n');
  }
  return size_kb == 2048 ? free : 0;
}

bool has_arg(const std::vector<std::string>& args, const char* a) {
  return std::find(args.begin(), args.end(), a) != args.end();
}

void init_eal(const DpdkConfig& c, uint64_t memory_mb) {
  Eal& e = eal();
  std::vector<std::string> args = {"burst"};
  // The EAL pins the calling thread to its main lcore and every thread created
  // afterwards would inherit that: keep the affinity we had.
  cpu_set_t saved;
  CPU_ZERO(&saved);
  const bool have_saved = pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;
  int first_cpu = 0;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &saved)) {
      first_cpu = i;
      break;
    }
  args.push_back("-l");
  args.push_back(std::to_string(first_cpu));
  args.push_back("--no-telemetry");
  args.push_back("--log-level=lib.eal:warning");
  const bool user_memory = has_arg(c.eal_args, "--no-huge") || has_arg(c.eal_args, "-m") ||
                           has_arg(c.eal_args, "--socket-mem") ||
                           has_arg(c.eal_args, "--in-memory");
  if (!user_memory) {
    const uint64_t pages = free_hugepages_2m();
    const uint64_t want_pages = (memory_mb + 1) / 2;
    const bool use_huge = c.hugepages == DpdkHugepages::kRequire ||
                          (c.hugepages == DpdkHugepages::kAuto && pages >= want_pages);
    if (c.hugepages == DpdkHugepages::kRequire && pages < want_pages) {
      e.error = "DPDK needs " + std::to_string(want_pages) + " free 2 MB hugepages, " +
                std::to_string(pages) + " are free: `echo " + std::to_string(want_pages) +
                " > /proc/sys/vm/nr_hugepages` (or set dpdk_hugepages = auto)";
      return;
    }
    if (use_huge) {
      args.insert(args.end(), {"--in-memory", "-m", std::to_string(memory_mb)});
      e.huge = true;
    } else {
      args.insert(args.end(), {"--no-huge", "--no-shconf", "-m", std::to_string(memory_mb)});
      if (c.hugepages == DpdkHugepages::kAuto)
        e.notes = "EAL on normal pages: " + std::to_string(pages) + " free 2 MB hugepages, " +
                  std::to_string(want_pages) + " wanted (`echo " + std::to_string(want_pages) +
                  " > /proc/sys/vm/nr_hugepages` for hugepage-backed mbufs)";
    }
  }
  e.pci = is_pci_address(c.port);
  if (e.pci) {
    args.push_back("-a");
    args.push_back(c.port);
  } else {
    args.push_back("--no-pci");
  }
  args.insert(args.end(), c.eal_args.begin(), c.eal_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = rte_eal_init(static_cast<int>(args.size()), argv.data());
  if (have_saved) pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  if (rc < 0) {
    std::string joined;
    for (size_t i = 1; i < args.size(); ++i) joined += (i > 1 ? " " : "") + args[i];
    e.error = "DPDK EAL initialisation failed (" + std::string(rte_strerror(rte_errno)) +
              ") with arguments: " + joined + " (check dpdk_eal in burstd.conf; the EAL's own " +
              "message is above)";
    return;
  }
  e.ok = true;
}

std::string port_name(const std::string& devargs) { return devargs.substr(0, devargs.find(',')); }

// Runs `fn` on the EAL interrupt thread (as an alarm callback, which that
// thread runs between its other callbacks) and waits for it. False, without
// running it, when no alarm can be set or the thread has not taken it within
// kWait (the alarm is then cancelled; rte_eal_alarm_cancel waits for a
// callback already running, so `call` is never used after we return).
template <typename Fn>
bool run_on_interrupt_thread(Fn& fn) {
  struct Call {
    Fn* fn = nullptr;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  } call;
  call.fn = &fn;
  const rte_eal_alarm_callback cb = [](void* arg) {
    Call* c = static_cast<Call*>(arg);
    (*c->fn)();
    std::lock_guard<std::mutex> lock(c->mu);
    c->done = true;
    c->cv.notify_one();
  };
  constexpr auto kWait = std::chrono::seconds(5);
  if (rte_eal_alarm_set(1, cb, &call) != 0) return false;
  std::unique_lock<std::mutex> lock(call.mu);
  if (call.cv.wait_for(lock, kWait, [&call] { return call.done; })) return true;
  lock.unlock();
  if (rte_eal_alarm_cancel(cb, &call) > 0) return false;  // never ran
  lock.lock();
  call.cv.wait(lock, [&call] { return call.done; });  // ran meanwhile: done is set
  return true;
}

}  // namespace

std::string AfPacketDevargs(const std::string& netdev, uint32_t queues, uint32_t mtu) {
  // A ring frame holds the tpacket header and the frame; the PMD addresses
  // frame i at i * framesz, so frames must tile the page-multiple blocks
  // exactly: 2048-byte frames two to a page, or one frame per block.
  const uint32_t need = mtu + 14 + 80;
  const uint32_t framesz = need <= 2048 ? 2048 : (need + 4095) & ~4095u;
  const uint32_t blocksz = std::max<uint32_t>(framesz, 4096);
  return "net_af_packet0,iface=" + netdev + ",qpairs=" + std::to_string(queues) +
         ",framesz=" + std::to_string(framesz) + ",blocksz=" + std::to_string(blocksz) +
         ",framecnt=" + std::to_string(framesz > 2048 ? 512 : 2048);
}

std::vector<std::string> SplitEalArgs(const std::string& line) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = line.find_first_not_of(" \t", pos)) != std::string::npos) {
    const size_t end = line.find_first_of(" \t", pos);
    out.push_back(line.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    pos = end;
  }
  return out;
}

std::unique_ptr<DpdkPort> DpdkPort::Open(const DpdkConfig& config, DpdkError* error) {
  if (config.port.empty()) {
    *error = make_error(EINVAL,
                        "no DPDK port: set dpdk_port (a vdev like net_af_packet0,iface=eth1 or a "
                        "PCI address bound to vfio-pci)");
    return nullptr;
  }
  if (config.queues == 0 || config.queues > RTE_MAX_QUEUES_PER_PORT - 1) {
    *error = make_error(EINVAL, "DPDK port: queue count out of range");
    return nullptr;
  }
  // Memory: per queue an RX and a TX pool of `mbufs` whole-frame buffers.
  const uint32_t frame_max = std::max<uint32_t>(config.mtu, 1500) + 14;
  const uint64_t room = data_room(frame_max, config.port);
  const uint64_t per_mbuf = room + sizeof(rte_mbuf) + 128;
  const uint64_t mbufs_per_pool =
      std::max<uint32_t>(config.mbufs, config.rx_desc + config.tx_desc + 2 * kPoolCache);
  const uint64_t pools_mb =
      ((per_mbuf * (mbufs_per_pool * 2 * config.queues + kControlMbufs)) >> 20) + 1;
  const uint64_t memory_mb = ((pools_mb + 96 + 1) / 2) * 2;  // + rings, EAL heap; even
  std::call_once(eal().once, [&] { init_eal(config, memory_mb); });
  if (!eal().ok) {
    *error = make_error(EINVAL, eal().error.empty() ? "DPDK EAL initialisation failed earlier"
                                                    : eal().error);
    return nullptr;
  }
  std::unique_ptr<DpdkPort> p(new DpdkPort());
  p->notes_ = eal().notes;
  p->name_ = port_name(config.port);
  if (is_pci_address(config.port) && !eal().pci) {
    *error = make_error(EINVAL, "DPDK port " + p->name_ +
                                    " is a PCI device but this process's EAL was started "
                                    "without PCI (one DPDK configuration per process)");
    return nullptr;
  }
  std::string devargs = config.port;
  if (devargs.rfind("net_memif", 0) == 0 && devargs.find("bsize=") == std::string::npos) {
    // memif chains frames larger than one buffer (2048 bytes by default); in
    // DPDK 22.11 chained frames arrived corrupted (bad ICRC, short frames) in
    // our runs, so every frame gets one buffer. Both ends append the same.
    uint32_t bsize = 2048;
    while (bsize < frame_max) bsize *= 2;
    if (bsize > 2048) {
      devargs += ",bsize=" + std::to_string(bsize);
      p->notes_ += std::string(p->notes_.empty() ? "" : "; ") + "memif buffers of " +
                   std::to_string(bsize) + " bytes (one frame per buffer)";
    }
  }
#ifdef BURST_DPDK_STEER_PROGRAM
  if (devargs.rfind("net_af_xdp", 0) == 0 && devargs.find("xdp_prog=") == std::string::npos) {
    // The PMD's default program takes every frame of its queues away from the
    // kernel (ARP, TCP...): hand it burst's steering program instead, from a
    // memfd it opens by path.
    const int fd = memfd_create("burst-roce-steer-dpdk.bpf.o", MFD_CLOEXEC);
    if (fd >= 0 && write(fd, burst_bpf_roce_steer_dpdk_data, burst_bpf_roce_steer_dpdk_size) ==
                       static_cast<ssize_t>(burst_bpf_roce_steer_dpdk_size)) {
      p->prog_fd_ = fd;
      devargs += ",xdp_prog=/proc/self/fd/" + std::to_string(fd);
      p->notes_ += std::string(p->notes_.empty() ? "" : "; ") +
                   "net_af_xdp runs burst's steering program (UDP 4791 to DPDK, the rest to the kernel)";
    } else if (fd >= 0) {
      close(fd);
    }
  }
#endif
  p->devargs_ = devargs;
  uint16_t pid = 0;
  if (rte_eth_dev_get_port_by_name(p->name_.c_str(), &pid) != 0) {
    const int rc = rte_dev_probe(devargs.c_str());
    if (rc < 0 || rte_eth_dev_get_port_by_name(p->name_.c_str(), &pid) != 0) {
      *error = make_error(
          ENODEV, "DPDK port '" + config.port + "' could not be created (" +
                      std::string(rc < 0 ? rte_strerror(-rc) : "no ethdev with that name") +
                      "): a vdev needs a known driver name and valid arguments " +
                      "(net_af_packet0,iface=IF / net_af_xdp0,iface=IF / net_memif0,role=...,"
                      "socket=PATH / net_tap0,iface=NAME), a PCI device must be bound to " +
                      "vfio-pci (dpdk-devbind.py -b vfio-pci ADDR)");
      return nullptr;
    }
    p->probed_vdev_ = !is_pci_address(config.port);
  }
  p->port_id_ = pid;
  p->have_port_ = true;
  if (DpdkError e = p->Configure(config)) {
    *error = e;
    return nullptr;
  }
  return p;
}

DpdkError DpdkPort::Configure(const DpdkConfig& c) {
  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(port_id_, &info); rc != 0)
    return make_error(-rc, "DPDK port " + name_ + ": cannot read device info");
  driver_ = info.driver_name != nullptr ? info.driver_name : "?";
  const uint32_t nq = c.queues;
  if (driver_ == "net_af_xdp" && !eal().huge)
    return make_error(ENOMEM, "DPDK port " + name_ +
                                  ": net_af_xdp uses the mbuf pool as its UMEM, which needs "
                                  "hugepages (on normal pages every receive fails): reserve them "
                                  "(`echo 256 > /proc/sys/vm/nr_hugepages`) or use net_af_packet");
  if (info.max_rx_queues < nq || info.max_tx_queues < nq)
    return make_error(EINVAL, "DPDK port " + name_ + " (" + driver_ + ") has " +
                                  std::to_string(info.max_rx_queues) + " RX / " +
                                  std::to_string(info.max_tx_queues) + " TX queues; " +
                                  std::to_string(nq) +
                                  " workers need one pair each (lower workers, or give the vdev "
                                  "more queues, e.g. qpairs=N for net_af_packet)");
  mtu_ = c.mtu;
  if (mtu_ == 0) {
    uint16_t m = 0;
    mtu_ = rte_eth_dev_get_mtu(port_id_, &m) == 0 && m != 0 ? m : 1500;
  }
  const uint32_t frame_max = mtu_ + 14;
  // Two PMDs report a 1518-byte maximum frame whatever they carry:
  // net_af_packet (its ring frames are sized by the framesz devarg,
  // AfPacketDevargs sizes them; the kernel netdev's MTU governs) and net_memif
  // (frames larger than a buffer are chained). They keep the ethdev's default
  // MTU and frames up to mtu_ pass.
  const bool mtu_unenforced = driver_ == "net_af_packet" || driver_ == "net_memif";
  const bool fits = mtu_ <= info.max_mtu && mtu_ >= info.min_mtu && frame_max <= info.max_rx_pktlen;
  if (!fits && !mtu_unenforced)
    return make_error(EINVAL, "DPDK port " + name_ + " (" + driver_ + "): MTU " +
                                  std::to_string(mtu_) + " is outside its range " +
                                  std::to_string(info.min_mtu) + ".." +
                                  std::to_string(std::min<uint32_t>(
                                      info.max_mtu, info.max_rx_pktlen - 14)) +
                                  " (lower the netdev's or the port's MTU)");
  if (!fits)
    notes_ += std::string(notes_.empty() ? "" : "; ") + driver_ +
              " reports a maximum frame of " + std::to_string(info.max_rx_pktlen) +
              " bytes: MTU " + std::to_string(mtu_) + " used anyway (" +
              (driver_ == "net_memif" ? "chained buffers" : "the kernel netdev's, ring frames sized for it") + ")";

  rte_eth_conf conf{};
  conf.rxmode.mtu = fits ? mtu_ : 0;  // 0: the PMD's default
  const uint64_t rss_udp = (RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP) &
                           info.flow_type_rss_offloads;
  if (nq > 1 && rss_udp != 0) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = rss_udp;
    rss_ = true;
  } else if (nq > 1) {
    notes_ += std::string(notes_.empty() ? "" : "; ") + driver_ +
              " does not hash UDP: frames reach the queues by the PMD's own spread";
  }
  const uint32_t room = data_room(frame_max, devargs_);
  if (frame_max > RTE_MBUF_DEFAULT_DATAROOM && (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER))
    conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  if (int rc = rte_eth_dev_configure(port_id_, static_cast<uint16_t>(nq), static_cast<uint16_t>(nq), &conf);
      rc != 0)
    return make_error(-rc, "DPDK port " + name_ + " (" + driver_ +
                               "): configure failed: " + rte_strerror(-rc));
  uint16_t rx_desc = static_cast<uint16_t>(c.rx_desc), tx_desc = static_cast<uint16_t>(c.tx_desc);
  rte_eth_dev_adjust_nb_rx_tx_desc(port_id_, &rx_desc, &tx_desc);
  const int socket = rte_eth_dev_socket_id(port_id_) < 0 ? 0 : rte_eth_dev_socket_id(port_id_);
  const uint32_t mbufs = std::max<uint32_t>(c.mbufs, rx_desc + tx_desc + kPoolCache * 2);
  auto make_pool = [&](const std::string& what, uint32_t n) -> rte_mempool* {
    const std::string pname = "b" + std::to_string(port_id_) + what;
    rte_mempool* mp = rte_pktmbuf_pool_create(pname.c_str(), n, kPoolCache, 0,
                                              static_cast<uint16_t>(room), socket);
    if (mp != nullptr) pools_.push_back(mp);
    return mp;
  };
  auto pool_error = [&](const std::string& what) {
    return make_error(ENOMEM, "DPDK port " + name_ + ": cannot create the " + what +
                                  " mbuf pool (" + rte_strerror(rte_errno) +
                                  "): raise the EAL memory (-m in dpdk_eal) or the hugepages");
  };
  for (uint32_t q = 0; q < nq; ++q) {
    rte_mempool* rxp = make_pool("r" + std::to_string(q), mbufs);
    if (rxp == nullptr) return pool_error("RX");
    rte_mempool* txp = make_pool("t" + std::to_string(q), mbufs);
    if (txp == nullptr) return pool_error("TX");
    if (int rc = rte_eth_rx_queue_setup(port_id_, static_cast<uint16_t>(q), rx_desc,
                                        static_cast<unsigned>(socket), nullptr, rxp);
        rc != 0)
      return make_error(-rc, "DPDK port " + name_ + ": RX queue " + std::to_string(q) +
                                 " setup failed: " + rte_strerror(-rc));
    if (int rc = rte_eth_tx_queue_setup(port_id_, static_cast<uint16_t>(q), tx_desc,
                                        static_cast<unsigned>(socket), nullptr);
        rc != 0)
      return make_error(-rc, "DPDK port " + name_ + ": TX queue " + std::to_string(q) +
                                 " setup failed: " + rte_strerror(-rc));
    std::unique_ptr<DpdkQueue> dq(new DpdkQueue());
    dq->port_id_ = port_id_;
    dq->queue_id_ = static_cast<uint16_t>(q);
    dq->queue_count_ = nq;
    dq->frame_max_ = frame_max;
    dq->headroom_ = RTE_PKTMBUF_HEADROOM;
    dq->tx_pool_ = txp;
    dq->scratch_ = std::make_unique<uint8_t[]>(size_t{DpdkQueue::kMaxBurst} * frame_max);
    queues_.push_back(std::move(dq));
  }
  control_pool_ = make_pool("c", kControlMbufs);
  if (control_pool_ == nullptr) return pool_error("control");
  if (int rc = fits ? rte_eth_dev_set_mtu(port_id_, static_cast<uint16_t>(mtu_)) : 0;
      rc != 0 && rc != -ENOTSUP)
    return make_error(-rc, "DPDK port " + name_ + " (" + driver_ + "): cannot set MTU " +
                               std::to_string(mtu_) + ": " + rte_strerror(-rc));
  if (int rc = rte_eth_dev_start(port_id_); rc != 0)
    return make_error(-rc, "DPDK port " + name_ + " (" + driver_ + "): start failed: " +
                               rte_strerror(-rc) +
                               (driver_ == "net_memif"
                                    ? " (a memif client starts after its server: is it up?)"
                                    : ""));
  started_ = true;
  // UD multicast (ibv_attach_mcast): take every multicast MAC, the engines keep
  // what a QP is attached to (no kernel stands behind the port to join groups).
  if (int rc = rte_eth_allmulticast_enable(port_id_); rc != 0)
    notes_ += std::string(notes_.empty() ? "" : "; ") + driver_ +
              " has no all-multicast mode (UD multicast receives only what it lets in)";
  rte_ether_addr mac{};
  rte_eth_macaddr_get(port_id_, &mac);
  std::memcpy(mac_.data(), mac.addr_bytes, 6);
  if (c.flow_steering) InstallFlows(c);
  return {};
}

void DpdkPort::InstallFlows(const DpdkConfig& c) {
  std::vector<uint16_t> queues(c.queues);
  for (uint32_t q = 0; q < c.queues; ++q) queues[q] = static_cast<uint16_t>(q);
  rte_flow_attr attr{};
  attr.ingress = 1;
  rte_flow_item_udp udp_spec{}, udp_mask{};
  udp_spec.hdr.dst_port = rte_cpu_to_be_16(kRoceUdpPort);
  udp_mask.hdr.dst_port = rte_cpu_to_be_16(0xffff);
  rte_flow_action_rss rss{};
  rss.types = RTE_ETH_RSS_UDP;
  rss.queue_num = static_cast<uint32_t>(queues.size());
  rss.queue = queues.data();
  rte_flow_action_queue one{};
  one.index = 0;
  rte_flow_action actions[2] = {};
  if (queues.size() > 1) {
    actions[0].type = RTE_FLOW_ACTION_TYPE_RSS;
    actions[0].conf = &rss;
  } else {
    actions[0].type = RTE_FLOW_ACTION_TYPE_QUEUE;
    actions[0].conf = &one;
  }
  actions[1].type = RTE_FLOW_ACTION_TYPE_END;
  std::string failure;
  for (rte_flow_item_type l3 : {RTE_FLOW_ITEM_TYPE_IPV4, RTE_FLOW_ITEM_TYPE_IPV6}) {
    rte_flow_item pattern[4] = {};
    pattern[0].type = RTE_FLOW_ITEM_TYPE_ETH;
    pattern[1].type = l3;
    pattern[2].type = RTE_FLOW_ITEM_TYPE_UDP;
    pattern[2].spec = &udp_spec;
    pattern[2].mask = &udp_mask;
    pattern[3].type = RTE_FLOW_ITEM_TYPE_END;
    rte_flow_error err{};
    rte_flow* f = rte_flow_create(port_id_, &attr, pattern, actions, &err);
    if (f != nullptr) {
      flows_.push_back(f);
    } else if (failure.empty()) {
      failure = err.message != nullptr ? err.message : rte_strerror(rte_errno);
    }
  }
  if (flows_.empty())
    notes_ += std::string(notes_.empty() ? "" : "; ") + driver_ + " has no rte_flow for UDP " +
              std::to_string(kRoceUdpPort) + " (" + failure +
              "): every frame of the port reaches burst's queues, non-RoCE frames are dropped "
              "and counted";
}

DpdkPort::~DpdkPort() {
  // Once the port is closed the PMD has let go of the program's file.
  struct CloseProg {
    int fd;
    ~CloseProg() {
      if (fd >= 0) close(fd);
    }
  } close_prog{prog_fd_};
  if (!have_port_) return;  // Open() failed before it found the port
  for (rte_flow* f : flows_) {
    rte_flow_error err{};
    rte_flow_destroy(port_id_, f, &err);
  }
  rte_eth_dev_info info{};
  const bool have_info = rte_eth_dev_info_get(port_id_, &info) == 0;
  auto stop_and_close = [this] {
    if (started_) rte_eth_dev_stop(port_id_);
    rte_eth_dev_close(port_id_);
  };
  // net_memif runs its control channel on the EAL interrupt thread: when the
  // peer goes away first (both ends of a run close at once), that thread's
  // memif_disconnect() races ours in stop and then dereferences the port's
  // private data that close has freed (a segfault in the interrupt thread).
  // Stopping and closing from that thread puts the two in sequence: the
  // control channel's callback is unregistered before it can run again.
  if (driver_ != "net_memif" || !run_on_interrupt_thread(stop_and_close)) stop_and_close();
  if (probed_vdev_ && have_info && info.device != nullptr) rte_dev_remove(info.device);
  queues_.clear();
  for (rte_mempool* mp : pools_) rte_mempool_free(mp);
}

bool DpdkPort::hugepages() const { return eal().huge; }

bool DpdkPort::link_up() const {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id_, &link) != 0) return false;
  return link.link_status == RTE_ETH_LINK_UP;
}

void DpdkPort::set_arp_agent(ArpAgent* agent) {
  for (auto& q : queues_) q->arp_ = agent;
}

bool DpdkPort::control_tx(const uint8_t* frame, uint32_t len) {
  if (control_pool_ == nullptr || queues_.empty()) return false;
  rte_mbuf* m = rte_pktmbuf_alloc(control_pool_);
  if (m == nullptr) return false;
  char* dst = rte_pktmbuf_append(m, static_cast<uint16_t>(len));
  if (dst == nullptr) {
    rte_pktmbuf_free(m);
    return false;
  }
  std::memcpy(dst, frame, len);
  return queues_.front()->queue_control(m);
}

DpdkPortStats DpdkPort::stats() const {
  DpdkPortStats s;
  rte_eth_stats st{};
  if (rte_eth_stats_get(port_id_, &st) != 0) return s;
  s.ipackets = st.ipackets;
  s.opackets = st.opackets;
  s.ibytes = st.ibytes;
  s.obytes = st.obytes;
  s.imissed = st.imissed;
  s.ierrors = st.ierrors;
  s.oerrors = st.oerrors;
  s.rx_nombuf = st.rx_nombuf;
  return s;
}

}  // namespace burst::datapath
