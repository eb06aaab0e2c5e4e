/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstd's connection manager for its one port: the IB CM (cm/ib_cm.h) on QP1
// (Gsi, daemon/burstd/gsi.h) and the rdma_cm layer (cm/cma.h) in the kernel's
// UCMA ABI, served to the event channels librdmacm applications open through
// the preload shim (abi/burst_ctl_cm.h: CM_OPEN_CHANNEL, CM_COMMAND; handlers
// in resources_cm.cc). docs/cm.md.
//
//   application --UCMA command--> shim --CM_COMMAND--> Cma::command
//   Cma --REQ/REP/...--> IbCm --send_mad--> Gsi::send --> QP1 on the wire
//   QP1 --> Gsi::event_fd readable --> receive() --> IbCm::receive
//        --> cm_event --> Cma::cm_event --> the channel's queue
//        --> event_pending --> the channel's eventfd readable --> GET_EVENT
//   IbCm::next_deadline --> EventLoop::set_deadline --> IbCm::tick
//
// One channel per control connection: its id is the session's id, its client
// (the process owning the QPs it may name) the session's SO_PEERCRED pid.
//
// Threading: burstd's control thread only (every call, every callback).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "abi/burst_ctl_cm.h"
#include "cm/cma.h"
#include "cm/ib_cm.h"
#include "daemon/burstd/cm_route_cache.h"

namespace burst::burstd {

class Device;
class EventLoop;
class Gsi;
class Resources;

// What the control ops and the Dispatcher need of the connection manager
// (resources_cm.cc): the channels of the sessions.
class CmChannels {
 public:
  virtual ~CmChannels() = default;
  // CM_OPEN_CHANNEL of session `channel` (pid: its SO_PEERCRED process);
  // adopts event_fd (closed on failure). 0, EALREADY (the session has a
  // channel), EBADF (not an eventfd).
  virtual int open_channel(uint32_t channel, pid_t pid, int event_fd) = 0;
  // The session went away: its ids are destroyed (Cma::close_channel). No-op
  // for a session without a channel.
  virtual void close_channel(uint32_t channel) = 0;
  // CM_COMMAND: Cma::command's result (response bytes, or -errno; EBADF when
  // the session has no channel).
  virtual int command(uint32_t channel, uint32_t cmd, const void* in, size_t in_len, void* out,
                      size_t out_len) = 0;
  // CM_OPEN_CHANNEL with BURST_CTL_CM_OPEN_PUSH: sock is burstd's end of the
  // channel's SOCK_SEQPACKET pair, where events are pushed (abi/burst_ctl_cm.h).
  // Adopts sock. 0, EALREADY, EBADF (not a unix SOCK_SEQPACKET socket).
  virtual int open_push_channel(uint32_t channel, pid_t pid, int sock) = 0;
  // CM_COMMAND_EX of a push channel: `consumed` acknowledges its pushed events
  // (source_consumed: MIGRATE_ID's source channel); dead[] gets the sequence
  // numbers of pushed events the shim must drop (*n_dead, at most max_dead).
  struct ExResult {
    uint64_t* dead;
    size_t max_dead;
    size_t n_dead = 0;
  };
  virtual int command_ex(uint32_t channel, uint32_t cmd, uint64_t consumed,
                         uint64_t source_consumed, const void* in, size_t in_len, void* out,
                         size_t out_len, ExResult* ex) = 0;
  // burstctl counters: cm.* (the IB CM), cma.* (the rdma_cm layer), the live
  // ids and channels.
  virtual void counters(std::vector<std::pair<std::string, uint64_t>>* out) const = 0;
};

class CmService final : public CmChannels, public cm::IbCmHost, public cm::CmaHost {
 public:
  // Watches gsi's event fd on the loop from now on.
  CmService(Device& device, Gsi& gsi, Resources& resources, EventLoop& loop);
  ~CmService() override;  // unwatches; the channels' eventfds are closed
  CmService(const CmService&) = delete;
  CmService& operator=(const CmService&) = delete;

  // CmChannels
  int open_channel(uint32_t channel, pid_t pid, int event_fd) override;
  void close_channel(uint32_t channel) override;
  int command(uint32_t channel, uint32_t cmd, const void* in, size_t in_len, void* out,
              size_t out_len) override;
  int open_push_channel(uint32_t channel, pid_t pid, int sock) override;
  int command_ex(uint32_t channel, uint32_t cmd, uint64_t consumed, uint64_t source_consumed,
                 const void* in, size_t in_len, void* out, size_t out_len, ExResult* ex) override;
  void counters(std::vector<std::pair<std::string, uint64_t>>* out) const override;

  // IbCmHost
  bool send_mad(const cm::Mad& mad) override;
  void cm_event(cm::CmHandle handle, const cm::CmEvent& event) override;
  uint64_t now_ns() override;  // IbCmHost and CmaHost
  // CmaHost
  void event_pending(cm::ChannelId channel, bool pending) override;
  int local_address(const sockaddr* addr, uint8_t* sgid_index, cm::Gid* sgid) override;
  int resolve_route(const sockaddr* src, const sockaddr* dst, uint32_t timeout_ms,
                    cm::CmaRoute* out) override;
  uint64_t node_guid() override;
  bool qp_of_client(cm::ClientId client, uint32_t qpn, uint8_t* qp_type) override;

 private:
  // A pushed event not acknowledged yet (cm_push.cc).
  struct Pushed {
    uint64_t seq = 0;
    uint32_t owner = 0;   // the id it counts against (a CONNECT_REQUEST's listener)
    uint32_t mc = 0;      // a multicast event's join
    uint32_t new_id = 0;  // a CONNECT_REQUEST's new id
    bool sent = false;    // in the socket (false: its send found the socket full)
    bool ack_me = false;  // the shim acknowledges it once taken (a listen's backlog runs low)
    uint8_t resp[BURST_CTL_CM_EVENT_BYTES] = {};
  };
  struct Channel {
    int event_fd = -1;     // the eventfd, or the push socket
    bool pending = false;  // the eventfd's counter is 1 / (push) events wait in Cma's queue
    bool push = false;
    uint64_t next_seq = 1;
    std::deque<Pushed> unacked;         // push: in sequence order
    std::map<uint64_t, uint32_t> uids;  // push: the application's uid -> id (CREATE_ID)
    std::map<uint32_t, uint32_t> mcs;   // push: multicast join -> its id (JOIN_*)
  };
  // cm_push.cc
  void flush_pushes();  // pushes what waits in Cma's queues of push channels
  void push_channel(uint32_t id, Channel& c);
  bool send_pushed(Channel& c, Pushed& p);
  void acknowledge(Channel& c, uint64_t consumed);
  void note_command(uint32_t channel, Channel& c, uint32_t cmd, const void* in, size_t in_len,
                    const void* out, int r);
  int drop_unreported(uint32_t channel, Channel& c, uint32_t cmd, const void* in, size_t in_len,
                      void* out, int r, ExResult* ex);
  int init_qp_attrs(uint32_t channel, const void* in, size_t in_len, void* out, size_t out_len);
  int migrate_pushed(uint32_t to, uint64_t source_consumed, const void* in, size_t in_len,
                     void* out, size_t out_len, ExResult* ex);
  void on_gsi_readable();  // drains QP1's MADs into the IbCm
  void rearm();            // the loop's deadline := IbCm::next_deadline()
  void on_deadline();
  int resolve_uncached(const net::Gid& dgid, int* index, net::MacAddr* dmac, uint32_t timeout_ms);

  Device& device_;
  Gsi& gsi_;
  Resources& res_;
  EventLoop& loop_;
  uint64_t guid_ = 0;  // network order as a host integer
  std::unique_ptr<cm::IbCm> ib_cm_;
  std::unique_ptr<cm::Cma> cma_;
  std::map<uint32_t, Channel> channels_;  // by ChannelId (= session id)
  std::vector<uint32_t> to_push_;         // push channels whose Cma queue has events
  uint64_t armed_ = UINT64_MAX;           // the deadline set on the loop
  CmRouteCache routes_;                   // resolve_route's answers, per destination
};

}  // namespace burst::burstd
