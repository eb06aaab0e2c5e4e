// Internal types of the burst verbs provider (libburst-rdmav34.so), loaded by
// libibverbs into the application's process. Error convention: errno values,
// as libibverbs expects (an int verb returns it, a pointer verb sets errno and
// returns NULL); nothing here throws (the library builds with -fno-exceptions).
#pragma once

#include <net/if.h>

#include <cstddef>
#include <cstdint>

#include "provider/burst_verbs_abi.h"

namespace burst::provider {

// One burst device as libibverbs sees it. Allocated by alloc_device,
// freed by uninit_device when libibverbs drops its last reference.
struct Device {
  verbs_device vdev;         // must be first: libibverbs hands back &vdev.device
  char netdev[IF_NAMESIZE];  // the port's netdev (sysfs ports/1/gid_attrs/ndevs/0), may be empty
  uint64_t node_guid_be;     // as ibv_device_attr carries them (network order)
  uint64_t sys_image_guid_be;
};
static_assert(offsetof(Device, vdev) == 0);

// One ibv_open_device(). Allocated by libibverbs (_verbs_init_and_alloc_context)
// at our size, freed by free_context.
struct Context {
  verbs_context vctx;  // must be first
  // The async-event pipe: context.async_fd is the read end (libibverbs reads
  // 16-byte burst_async_event_desc records from it and closes it); this is the
  // write end, kept for the events burstd will report (QP fatal, device fatal).
  int async_write_fd;
};
static_assert(offsetof(Context, vctx) == 0);

inline Device* to_device(ibv_device* dev) { return reinterpret_cast<Device*>(dev); }
inline Context* to_context(ibv_context* ctx) {
  return reinterpret_cast<Context*>(reinterpret_cast<char*>(ctx) -
                                    offsetof(verbs_context, context));
}

// What the port reports, read from the netdev at query time (in the caller's
// network namespace).
struct NetdevState {
  bool exists = false;
  bool up = false;          // IFF_UP
  bool running = false;     // IFF_RUNNING (carrier)
  uint32_t mtu = 0;         // L3 MTU
  uint32_t speed_mbps = 0;  // 0 when the driver does not say
};
NetdevState query_netdev_state(const char* ifname);

// context.cc
verbs_context* alloc_context(ibv_device* device, int cmd_fd, void* private_data);

// Writes a line to stderr when BURST_PROVIDER_DEBUG is set in the environment.
void debug_log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace burst::provider
