// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "net/rtnl.h"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cstring>

namespace burst::net {
namespace {

constexpr size_t kRxBufSize = 32768;  // the kernel fills dump skbs up to 32 KB
constexpr int kRecvTimeoutMs = 2000;

// Attribute table for one message: index by type, nullptr when absent.
template <size_t N>
struct Attrs {
  const nlattr* a[N] = {};
  const nlattr* operator[](size_t t) const { return t < N ? a[t] : nullptr; }
};

// Collects the attributes that start `offset` bytes into the payload. Unlike
// mnl_attr_parse, an attribute that overruns the message is an error, not the
// silent end of the list.
template <size_t N>
bool parse_attrs_at(const nlmsghdr* nlh, size_t offset, Attrs<N>* tb) {
  if (nlh->nlmsg_len < NLMSG_HDRLEN + offset) return false;
  const char* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(nlh));
  auto* attr = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(nlh, offset));
  for (; mnl_attr_ok(attr, static_cast<int>(tail - reinterpret_cast<const char*>(attr)));
       attr = mnl_attr_next(attr)) {
    uint16_t type = mnl_attr_get_type(attr);
    if (type < N) tb->a[type] = attr;
  }
  // What is left must not be able to hold an attribute header (padding only).
  return tail - reinterpret_cast<const char*>(attr) < static_cast<ptrdiff_t>(sizeof(nlattr));
}

template <size_t N>
bool parse_attrs(const nlmsghdr* nlh, size_t family_hdr_len, Attrs<N>* tb) {
  return parse_attrs_at(nlh, NLMSG_ALIGN(family_hdr_len), tb);
}

// The family header Hdr of a message of type `type` or `type2`, its attributes
// in *tb; nullptr for another type or malformed attributes.
template <typename Hdr, size_t N>
const Hdr* parse_msg(const nlmsghdr* nlh, uint16_t type, uint16_t type2, Attrs<N>* tb) {
  if (nlh->nlmsg_type != type && nlh->nlmsg_type != type2) return nullptr;
  if (!parse_attrs(nlh, sizeof(Hdr), tb)) return nullptr;
  return static_cast<const Hdr*>(mnl_nlmsg_get_payload(nlh));
}

bool ip_family(int family) { return family == AF_INET || family == AF_INET6; }

// An IPv4 (4 bytes) or IPv6 (16 bytes) address of the given family at p.
bool ip_from_bytes(const void* p, size_t len, int family, Gid* out) {
  if (family == AF_INET && len == 4) {
    in_addr a;
    std::memcpy(&a, p, 4);
    *out = gid_from_ipv4(a);
    return true;
  }
  if (family == AF_INET6 && len == 16) {
    in6_addr a;
    std::memcpy(&a, p, 16);
    *out = gid_from_ipv6(a);
    return true;
  }
  return false;
}

// IPv4 (4 bytes) or IPv6 (16 bytes) address attribute of the given family.
bool get_ip(const nlattr* attr, int family, Gid* out) {
  if (attr == nullptr) return false;
  return ip_from_bytes(mnl_attr_get_payload(attr), mnl_attr_get_payload_len(attr), family, out);
}

// An optional attribute: true when absent (*present false, *out unchanged) or
// well-formed (*present true); false when present and malformed.
bool opt_ip(const nlattr* attr, int family, Gid* out, bool* present = nullptr) {
  if (present != nullptr) *present = attr != nullptr;
  return attr == nullptr || get_ip(attr, family, out);
}

bool get_u32(const nlattr* attr, uint32_t* out) {
  if (attr == nullptr || mnl_attr_get_payload_len(attr) < 4) return false;
  *out = mnl_attr_get_u32(attr);
  return true;
}

bool opt_u32(const nlattr* attr, uint32_t* out) { return attr == nullptr || get_u32(attr, out); }

bool get_mac(const nlattr* attr, MacAddr* out) {
  if (attr == nullptr || mnl_attr_get_payload_len(attr) != 6) return false;
  std::memcpy(out->data(), mnl_attr_get_payload(attr), 6);
  return true;
}

void put_ip(nlmsghdr* nlh, uint16_t type, const Gid& g) {
  if (gid_is_ipv4_mapped(g)) {
    mnl_attr_put(nlh, type, 4, &g[12]);
  } else {
    mnl_attr_put(nlh, type, 16, g.data());
  }
}

// Extended-ack TLVs at `offset` bytes into the payload: the kernel's message.
std::string extack_message(const nlmsghdr* nlh, size_t offset) {
  if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS)) return {};
  if (nlh->nlmsg_len < NLMSG_HDRLEN + offset) return {};
  Attrs<NLMSGERR_ATTR_MAX + 1> tb;
  if (!parse_attrs_at(nlh, offset, &tb)) return {};
  const nlattr* msg = tb[NLMSGERR_ATTR_MSG];
  if (msg == nullptr || mnl_attr_validate(msg, MNL_TYPE_NUL_STRING) < 0) return {};
  return mnl_attr_get_str(msg);
}

int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

// ---- Parsers -------------------------------------------------------------

bool parse_link(const nlmsghdr* nlh, LinkRecord* out) {
  Attrs<IFLA_MAX + 1> tb;
  const auto* ifi = parse_msg<ifinfomsg>(nlh, RTM_NEWLINK, RTM_DELLINK, &tb);
  if (ifi == nullptr) return false;
  LinkRecord r;
  r.ifindex = static_cast<uint32_t>(ifi->ifi_index);
  r.type = ifi->ifi_type;
  r.flags = ifi->ifi_flags;
  if (const nlattr* name = tb[IFLA_IFNAME]) {
    if (mnl_attr_validate(name, MNL_TYPE_NUL_STRING) < 0) return false;
    r.name = mnl_attr_get_str(name);
  }
  if (tb[IFLA_ADDRESS] != nullptr) {
    // Non-Ethernet links carry other address sizes (none, 4, 20 bytes): no MAC then.
    r.has_mac = get_mac(tb[IFLA_ADDRESS], &r.mac);
  }
  if (!opt_u32(tb[IFLA_MTU], &r.mtu)) return false;
  if (const nlattr* op = tb[IFLA_OPERSTATE]) {
    if (mnl_attr_get_payload_len(op) < 1) return false;
    r.operstate = mnl_attr_get_u8(op);
  }
  if (!opt_u32(tb[IFLA_NUM_RX_QUEUES], &r.num_rx_queues)) return false;
  if (!opt_u32(tb[IFLA_NUM_TX_QUEUES], &r.num_tx_queues)) return false;
  *out = std::move(r);
  return true;
}

bool parse_addr(const nlmsghdr* nlh, AddrRecord* out) {
  Attrs<IFA_MAX + 1> tb;
  const auto* ifa = parse_msg<ifaddrmsg>(nlh, RTM_NEWADDR, RTM_DELADDR, &tb);
  if (ifa == nullptr || !ip_family(ifa->ifa_family)) return false;
  AddrRecord r;
  r.family = ifa->ifa_family;
  r.ifindex = ifa->ifa_index;
  r.prefix_len = ifa->ifa_prefixlen;
  r.scope = ifa->ifa_scope;
  r.flags = ifa->ifa_flags;
  if (!opt_u32(tb[IFA_FLAGS], &r.flags)) return false;
  // IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer on a
  // point-to-point link and equals IFA_LOCAL otherwise (IPv6 sends only IFA_ADDRESS).
  const nlattr* a = tb[IFA_LOCAL] != nullptr ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
  if (!get_ip(a, r.family, &r.addr)) return false;
  *out = r;
  return true;
}

bool parse_route(const nlmsghdr* nlh, RouteRecord* out) {
  Attrs<RTA_MAX + 1> tb;
  const auto* rtm = parse_msg<rtmsg>(nlh, RTM_NEWROUTE, RTM_NEWROUTE, &tb);
  if (rtm == nullptr || !ip_family(rtm->rtm_family)) return false;
  RouteRecord r;
  r.family = rtm->rtm_family;
  r.type = rtm->rtm_type;
  r.table = rtm->rtm_table;
  r.dst_len = rtm->rtm_dst_len;
  if (!opt_u32(tb[RTA_TABLE], &r.table) || !opt_u32(tb[RTA_OIF], &r.oif)) return false;
  if (!opt_ip(tb[RTA_DST], r.family, &r.dst)) return false;
  if (tb[RTA_GATEWAY] != nullptr) {
    if (!get_ip(tb[RTA_GATEWAY], r.family, &r.gateway)) return false;
    r.has_gateway = true;
  } else if (const nlattr* via = tb[RTA_VIA]) {
    uint16_t len = mnl_attr_get_payload_len(via);
    if (len < sizeof(rtvia)) return false;
    rtvia v;
    std::memcpy(&v, mnl_attr_get_payload(via), sizeof(v));
    const uint8_t* addr = static_cast<const uint8_t*>(mnl_attr_get_payload(via)) + sizeof(rtvia);
    if (!ip_from_bytes(addr, len - sizeof(rtvia), v.rtvia_family, &r.gateway)) return false;
    r.has_gateway = true;
  }
  if (!opt_ip(tb[RTA_PREFSRC], r.family, &r.prefsrc, &r.has_prefsrc)) return false;
  *out = r;
  return true;
}

bool parse_neigh(const nlmsghdr* nlh, NeighRecord* out) {
  Attrs<NDA_MAX + 1> tb;
  const auto* ndm = parse_msg<ndmsg>(nlh, RTM_NEWNEIGH, RTM_DELNEIGH, &tb);
  if (ndm == nullptr) return false;
  NeighRecord r;
  r.family = ndm->ndm_family;
  r.ifindex = static_cast<uint32_t>(ndm->ndm_ifindex);
  r.state = ndm->ndm_state;
  r.flags = ndm->ndm_flags;
  if (!opt_ip(tb[NDA_DST], r.family, &r.dst, &r.has_dst)) return false;
  if (tb[NDA_LLADDR] != nullptr) r.has_lladdr = get_mac(tb[NDA_LLADDR], &r.lladdr);
  *out = r;
  return true;
}

bool parse_error(const nlmsghdr* nlh, int* err, std::string* extack) {
  if (nlh->nlmsg_type != NLMSG_ERROR) return false;
  if (mnl_nlmsg_get_payload_len(nlh) < sizeof(nlmsgerr)) return false;
  const auto* e = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
  *err = -e->error;
  // The TLVs follow the echoed request: its header only when capped, else all of it.
  size_t offset = (nlh->nlmsg_flags & NLM_F_CAPPED)
                      ? sizeof(nlmsgerr)
                      : NLMSG_ALIGN(sizeof(int) + static_cast<size_t>(e->msg.nlmsg_len));
  extack->clear();
  if (offset < mnl_nlmsg_get_payload_len(nlh)) *extack = extack_message(nlh, offset);
  return true;
}

bool parse_done(const nlmsghdr* nlh, int* err, std::string* extack) {
  if (nlh->nlmsg_type != NLMSG_DONE) return false;
  *err = 0;
  extack->clear();
  if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int)) {
    int v;
    std::memcpy(&v, mnl_nlmsg_get_payload(nlh), sizeof(v));
    *err = v < 0 ? -v : 0;
    *extack = extack_message(nlh, NLMSG_ALIGN(sizeof(int)));
  }
  return true;
}

// ---- Builders ------------------------------------------------------------

nlmsghdr* build_getlink_by_name(void* buf, const std::string& ifname) {
  std::memset(buf, 0, kRequestBufSize);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz_check(nlh, kRequestBufSize, IFLA_IFNAME, ifname.c_str());
  // Skip statistics (RTEXT_FILTER_SKIP_STATS): smaller replies.
  mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  return nlh;
}

nlmsghdr* build_getlink_by_index(void* buf, uint32_t ifindex) {
  std::memset(buf, 0, kRequestBufSize);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = static_cast<int>(ifindex);
  mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  return nlh;
}

nlmsghdr* build_getaddr_dump(void* buf, int family, uint32_t ifindex) {
  std::memset(buf, 0, kRequestBufSize);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETADDR;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = static_cast<uint8_t>(family);
  ifa->ifa_index = ifindex;  // a filter with NETLINK_GET_STRICT_CHK; callers filter again
  return nlh;
}

nlmsghdr* build_getroute(void* buf, const Gid& dst, uint32_t oif) {
  std::memset(buf, 0, kRequestBufSize);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETROUTE;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  rtm->rtm_family = static_cast<uint8_t>(gid_family(dst));
  rtm->rtm_dst_len = gid_is_ipv4_mapped(dst) ? 32 : 128;
  put_ip(nlh, RTA_DST, dst);
  if (oif != 0) mnl_attr_put_u32(nlh, RTA_OIF, oif);
  return nlh;
}

nlmsghdr* build_getneigh(void* buf, uint32_t ifindex, const Gid& dst) {
  std::memset(buf, 0, kRequestBufSize);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETNEIGH;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = static_cast<uint8_t>(gid_family(dst));
  ndm->ndm_ifindex = static_cast<int>(ifindex);
  put_ip(nlh, NDA_DST, dst);
  return nlh;
}

nlmsghdr* build_neigh_use(void* buf, uint32_t ifindex, const Gid& dst) {
  std::memset(buf, 0, kRequestBufSize);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWNEIGH;
  // CREATE: make the entry when missing; no REPLACE/EXCL: an existing entry is
  // left as it is apart from the kick.
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = static_cast<uint8_t>(gid_family(dst));
  ndm->ndm_ifindex = static_cast<int>(ifindex);
  ndm->ndm_state = NUD_NONE;
  ndm->ndm_flags = NTF_USE;
  put_ip(nlh, NDA_DST, dst);
  return nlh;
}

// ---- Socket --------------------------------------------------------------

RtnlSocket::~RtnlSocket() {
  if (nl_ != nullptr) mnl_socket_close(nl_);
}

int RtnlSocket::fd() const { return nl_ != nullptr ? mnl_socket_get_fd(nl_) : -1; }

Status RtnlSocket::open(uint32_t groups, bool nonblocking) {
  if (nl_ != nullptr) return Status::Error(EBUSY, "rtnetlink socket already open");
  nl_ = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0));
  if (nl_ == nullptr) return Status::Error(errno, errno_message("socket(NETLINK_ROUTE)", errno));
  int one = 1;
  // Best effort, both: error strings from the kernel, and requests checked strictly
  // (kernel-side filtering of dumps). Older kernels lack them; we filter anyway.
  mnl_socket_setsockopt(nl_, NETLINK_EXT_ACK, &one, sizeof(one));
  mnl_socket_setsockopt(nl_, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
  mnl_socket_setsockopt(nl_, NETLINK_CAP_ACK, &one, sizeof(one));
  if (!nonblocking) {
    timeval tv{kRecvTimeoutMs / 1000, (kRecvTimeoutMs % 1000) * 1000};
    setsockopt(mnl_socket_get_fd(nl_), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  if (mnl_socket_bind(nl_, groups, MNL_SOCKET_AUTOPID) < 0) {
    int err = errno;
    mnl_socket_close(nl_);
    nl_ = nullptr;
    return Status::Error(err, errno_message("bind(NETLINK_ROUTE)", err));
  }
  portid_ = mnl_socket_get_portid(nl_);
  seq_ = static_cast<uint32_t>(now_ms());
  rx_.resize(kRxBufSize);
  return Status::Ok();
}

Status RtnlSocket::transact(nlmsghdr* req, const MsgFn& on_msg, const std::string& what) {
  if (nl_ == nullptr) return Status::Error(EBADF, what + ": rtnetlink socket not open");
  const bool dump = (req->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
  req->nlmsg_seq = ++seq_;
  req->nlmsg_pid = 0;
  const uint32_t seq = req->nlmsg_seq;
  if (mnl_socket_sendto(nl_, req, req->nlmsg_len) < 0) {
    return Status::Error(errno, errno_message(what + ": send", errno));
  }
  const int fd = mnl_socket_get_fd(nl_);
  const int64_t deadline = now_ms() + kRecvTimeoutMs;
  bool interrupted = false;
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) return Status::Error(ETIMEDOUT, what + ": no answer from the kernel");
    pollfd pfd{fd, POLLIN, 0};
    int pr = poll(&pfd, 1, static_cast<int>(left));
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) return Status::Error(errno, errno_message(what + ": poll", errno));
    if (pr == 0) continue;  // deadline check above
    ssize_t n = recv(fd, rx_.data(), rx_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::Error(errno, errno_message(what + ": receive", errno));
    }
    int len = static_cast<int>(n);
    for (auto* nlh = reinterpret_cast<const nlmsghdr*>(rx_.data()); mnl_nlmsg_ok(nlh, len);
         nlh = mnl_nlmsg_next(nlh, &len)) {
      // Leftovers of an earlier request that timed out, or foreign senders.
      if (nlh->nlmsg_seq != seq || !mnl_nlmsg_portid_ok(nlh, portid_)) continue;
      if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) interrupted = true;
      int err = 0;
      std::string ext;
      if (parse_error(nlh, &err, &ext)) {
        if (err == 0) {
          if (!dump) return Status::Ok();
          continue;  // a dump ends with NLMSG_DONE
        }
        std::string msg = errno_message(what, err);
        if (!ext.empty()) msg += " (kernel: " + ext + ")";
        return Status::Error(err, msg);
      }
      if (parse_done(nlh, &err, &ext)) {
        if (err != 0) {
          std::string msg = errno_message(what, err);
          if (!ext.empty()) msg += " (kernel: " + ext + ")";
          return Status::Error(err, msg);
        }
        if (interrupted) return Status::Error(EAGAIN, what + ": dump interrupted by a change");
        return Status::Ok();
      }
      if (nlh->nlmsg_type < NLMSG_MIN_TYPE) continue;  // NOOP, OVERRUN
      on_msg(nlh);
    }
  }
}

Status RtnlSocket::drain(const MsgFn& on_msg, bool* overrun) {
  if (nl_ == nullptr) return Status::Error(EBADF, "rtnetlink socket not open");
  *overrun = false;
  const int fd = mnl_socket_get_fd(nl_);
  // Bounded: at most 1024 reads per call; what is left stays queued for the next one.
  for (int i = 0; i < 1024; ++i) {
    ssize_t n = recv(fd, rx_.data(), rx_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN) return Status::Ok();
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {  // the kernel dropped notifications
        *overrun = true;
        continue;
      }
      return Status::Error(errno, errno_message("receive rtnetlink notifications", errno));
    }
    int len = static_cast<int>(n);
    for (auto* nlh = reinterpret_cast<const nlmsghdr*>(rx_.data()); mnl_nlmsg_ok(nlh, len);
         nlh = mnl_nlmsg_next(nlh, &len)) {
      if (nlh->nlmsg_type == NLMSG_OVERRUN) *overrun = true;
      if (nlh->nlmsg_type < NLMSG_MIN_TYPE) continue;
      on_msg(nlh);
    }
  }
  return Status::Ok();
}

}  // namespace burst::net
