/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The rdma_cm layer of burstd (the role of Linux drivers/infiniband/core/cma.c
// and ucma.c together): rdma_cm ids, their addresses, port spaces and RDMA-CM IP
// service IDs, the private-data header kernel rdma_cm peers expect, the QP
// attributes librdmacm asks for (INIT_QP_ATTR), and the rdma_cm events, all in
// the kernel's UCMA ABI (<rdma/rdma_user_cm.h>), so that burstd can serve the
// commands stock librdmacm writes to /dev/infiniband/rdma_cm.
//
// How a command reaches it: the application's librdmacm writes a UCMA command
// to its event channel fd; the preload shim (provider/shim) forwards the bytes
// to burstd over the control socket (one channel = one control connection,
// abi/burst_ctl_cm.h); burstd's handler calls Cma::command with them and sends
// the response bytes back, which the shim copies to the command's `response`
// pointer. GET_EVENT is a command too and never blocks here: an empty queue
// answers EAGAIN; the shim waits on the channel fd, which burstd keeps
// readable exactly while the channel has queued events (CmaHost::event_pending).
//
// Pure logic over two interfaces: IbCm (cm/ib_cm.h) for the wire and CmaHost
// for what only burstd knows (addresses, GIDs, routes, QPs). No I/O, no
// threads. Threading: burstd's control thread calls everything.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "cm/ib_cm.h"

namespace burst::cm {

using ChannelId = uint32_t;  // burstd's id for one event channel (one control connection)
using ClientId = uint32_t;   // burstd's id for the process behind it (QP ownership)

// A route from a local address to a destination, as burstd's addressing (net/)
// resolves it for this port (neighbour resolution included).
struct CmaRoute {
  sockaddr_storage src{};  // the local address used (port 0)
  uint8_t sgid_index = 0;  // the port GID of src (RoCE v2)
  Gid sgid{};
  Gid dgid{};
  Mac smac{};
  Mac dmac{};
  uint32_t ifindex = 0;
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
  uint8_t mtu = 3;  // enum ibv_mtu of the port (active MTU)
};

class CmaHost {
 public:
  virtual ~CmaHost() = default;
  // The channel has events queued (true) or its queue became empty (false):
  // burstd makes the application's channel fd readable / not readable.
  virtual void event_pending(ChannelId channel, bool pending) = 0;
  // Is `addr` (port ignored; any-address allowed) an address of this port's
  // netdev? Fills the GID index and GID it maps to. 0, or EADDRNOTAVAIL.
  virtual int local_address(const sockaddr* addr, uint8_t* sgid_index, Gid* sgid) = 0;
  // Resolves a route and the neighbour of dst, from src when given (family
  // AF_UNSPEC: the kernel's choice). 0 or an errno (EHOSTUNREACH, ENETUNREACH,
  // ETIMEDOUT). May take up to timeout_ms (synchronous for now).
  virtual int resolve_route(const sockaddr* src, const sockaddr* dst, uint32_t timeout_ms,
                            CmaRoute* out) = 0;
  // The port's node GUID (network order as a host integer) and its device
  // index as the shim's libibverbs sees it (0), for the responses that name them.
  virtual uint64_t node_guid() = 0;
  // Does QP `qpn` belong to `client` (CONNECT / ACCEPT name a QP by number)?
  // Fills its type (IBV_QPT_*) when it does.
  virtual bool qp_of_client(ClientId client, uint32_t qpn, uint8_t* qp_type) = 0;
  // Monotonic nanoseconds.
  virtual uint64_t now_ns() = 0;
};

// Counters for burstctl (drops and refusals have a reason each).
struct CmaCounters {
  uint64_t ids_created = 0;
  uint64_t ids_destroyed = 0;
  uint64_t connections_established = 0;
  uint64_t events_queued = 0;
  uint64_t events_dropped_queue_full = 0;  // a channel's queue at its limit (the id gets an error)
  uint64_t commands_refused = 0;           // EINVAL/EPERM/... answers
  // A REQ for a listen whose backlog was full (or whose channel's event queue
  // was): dropped without a REJ, as ucma's -ENOMEM; the peer's CM retries it.
  uint64_t requests_dropped_backlog = 0;
};

class Cma {
 public:
  Cma(CmaHost& host, IbCm& ib_cm);
  ~Cma();
  Cma(const Cma&) = delete;
  Cma& operator=(const Cma&) = delete;

  // A new event channel of `client` (a ctl connection that opened the rdma_cm
  // node). Its ids live until destroyed or close_channel.
  void open_channel(ChannelId channel, ClientId client);
  // The channel's connection went away (close of the fd, or the process died):
  // every id it owns is destroyed as ucma_close does (connections are
  // disconnected with DREQ, pending requests rejected, listens removed).
  void close_channel(ChannelId channel);

  // One UCMA command: `cmd` is rdma_ucm_cmd_hdr.cmd, `in` the bytes after the
  // header (in_len = hdr.in), `out` the response buffer of out_len = hdr.out
  // bytes (the kernel's response struct for the command). Returns the number
  // of response bytes written (0 for commands without a response), or
  // -errno as the kernel's ucma_write would fail (EINVAL, ENOSYS for an unknown
  // command, EAGAIN for GET_EVENT on an empty queue, ENOENT for an unknown id,
  // ...). Ids are only reachable from the channel (and client, after
  // MIGRATE_ID) that owns them. MIGRATE_ID's `fd` field carries the target
  // ChannelId here (the shim translates the application's fd).
  // MIGRATE_ID is written to the channel the id moves to, and `fd` names the
  // channel it is on (as the kernel's), both of one client (else EPERM).
  // SET_OPTION's value (optval) follows the struct: in_len = 24 + optlen.
  int command(ChannelId channel, uint32_t cmd, const void* in, size_t in_len, void* out,
              size_t out_len);

  // Hooks for the IbCm events (burstd forwards IbCmHost::cm_event here).
  void cm_event(CmHandle handle, const CmEvent& event);

  // A CONNECT_REQUEST counts against its listen's backlog until the application
  // has taken it (ucma: until GET_EVENT). A channel whose events burstd pushes
  // before the application reads them takes each from the queue with GET_EVENT,
  // then holds the backlog again until the application acknowledges it. Both
  // ignore an id that is gone; hold returns what is left of the backlog.
  uint32_t hold_backlog(uint32_t listen_id);
  void release_backlog(uint32_t listen_id);

  const CmaCounters& counters() const;
  size_t id_count() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace burst::cm
