// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Device discovery: the provider's registration with libibverbs, how a burst
// device is recognised, and the per-device state read from its sysfs directory.
#include <dlfcn.h>
#include <endian.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "abi/burst_device.h"
#include "provider/ibverbs_release.h"
#include "provider/provider.h"

namespace burst::provider {
namespace {

// Devices named burst<N> (libibverbs offers the name as "rdma_device:N<name>"
// when the device has no device/modalias file, which is the case for burst).
const verbs_match_ent kMatchTable[] = {
    {.driver_data = nullptr,
     .u = {.modalias = BURST_VERBS_NAME_MODALIAS_PREFIX BURST_IBDEV_PREFIX "*"},
     .vendor = 0,
     .device = 0,
     .kind = BURST_VERBS_MATCH_MODALIAS},
    {.driver_data = nullptr,
     .u = {.modalias = nullptr},
     .vendor = 0,
     .device = 0,
     .kind = BURST_VERBS_MATCH_SENTINEL},
};

// Reads DIR/NAME into buf (NUL-terminated, trailing newline removed).
// Returns the length, or -1 with errno.
ssize_t read_attr(const char* dir, const char* name, char* buf, size_t size) {
  char path[IBV_SYSFS_PATH_MAX + 64];
  if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= static_cast<int>(sizeof(path))) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size - 1);
  int saved = errno;
  close(fd);
  errno = saved;
  if (n < 0) return -1;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) --n;
  buf[n] = '\0';
  return n;
}

// "0211:22ff:fe33:4455" -> 0x021122fffe334455 (host order); false if malformed.
bool parse_guid(const char* text, uint64_t* out) {
  unsigned int g[4];
  int consumed = 0;
  if (sscanf(text, "%4x:%4x:%4x:%4x%n", &g[0], &g[1], &g[2], &g[3], &consumed) != 4 ||
      text[consumed] != '\0') {
    return false;
  }
  *out = (uint64_t{g[0]} << 48) | (uint64_t{g[1]} << 32) | (uint64_t{g[2]} << 16) | g[3];
  return true;
}

uint64_t read_guid_be(const char* dir, const char* name) {
  char buf[64];
  uint64_t guid = 0;
  if (read_attr(dir, name, buf, sizeof(buf)) <= 0 || !parse_guid(buf, &guid)) {
    debug_log("burst: %s/%s missing or malformed; reporting GUID 0", dir, name);
    return 0;
  }
  return htobe64(guid);
}

bool match_device(verbs_sysfs_dev* sysfs_dev) {
  if (sysfs_dev->match == nullptr) return false;  // not named burst<N>
  if (sysfs_dev->abi_ver != BURST_UVERBS_ABI_VERSION) {
    debug_log("burst: %s has uverbs ABI %u, expected %u: not a burst device", sysfs_dev->ibdev_name,
              sysfs_dev->abi_ver, BURST_UVERBS_ABI_VERSION);
    return false;
  }
  return true;
}

verbs_device* alloc_device(verbs_sysfs_dev* sysfs_dev) {
  auto* dev = static_cast<Device*>(calloc(1, sizeof(Device)));
  if (dev == nullptr) return nullptr;
  const char* dir = sysfs_dev->ibdev_path;
  if (read_attr(dir, BURST_NETDEV_FILE, dev->netdev, sizeof(dev->netdev)) <= 0) {
    dev->netdev[0] = '\0';
    debug_log("burst: %s/%s missing: the port reports DOWN", dir, BURST_NETDEV_FILE);
  }
  if (read_attr(dir, BURST_SOCKET_FILE, dev->socket, sizeof(dev->socket)) <= 0) {
    dev->socket[0] = '\0';  // $BURST_SOCKET, else the default socket
  }
  dev->node_guid_be = read_guid_be(dir, "node_guid");
  dev->sys_image_guid_be = read_guid_be(dir, "sys_image_guid");
  debug_log("burst: device %s (%s) on netdev '%s', burstd at '%s'", sysfs_dev->ibdev_name,
            sysfs_dev->sysfs_name, dev->netdev, dev->socket);
  return &dev->vdev;
}

void uninit_device(verbs_device* vdev) { free(to_device(&vdev->device)); }

const verbs_device_ops kDeviceOps = {
    .name = BURST_PROVIDER_NAME,
    .match_min_abi_version = BURST_UVERBS_ABI_VERSION,
    .match_max_abi_version = BURST_UVERBS_ABI_VERSION,
    .match_table = kMatchTable,
    .static_providers = nullptr,
    .match_device = match_device,
    .alloc_context = alloc_context,
    .import_context = nullptr,  // ibv_import_device: EOPNOTSUPP (libibverbs checks for NULL)
    .alloc_device = alloc_device,
    .uninit_device = uninit_device,
};

// Whether the libibverbs that loaded us is the release burst_verbs_abi.h is
// written for (ibverbs_release.h). Another one gets a message and no provider:
// its devices stay unclaimed instead of being driven with wrong layouts. A
// library whose file name does not say its release is trusted (a build of
// rdma-core's own tree names it the same way).
bool ibverbs_release_matches() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&verbs_register_driver_34), &info) == 0 ||
      info.dli_fname == nullptr)
    return true;
  char real[PATH_MAX];
  const char* path = realpath(info.dli_fname, real) != nullptr ? real : info.dli_fname;
  const int release = ibverbs_release_from_path(path);
  if (release < 0 || release == kIbverbsRelease) return true;
  fprintf(stderr,
          "burst: %s is rdma-core %d's libibverbs; this burst provider is built for rdma-core %d "
          "(IBVERBS_PRIVATE_34 with its layouts): not registering, burst devices are unavailable "
          "(install the burst package built for this rdma-core)\n",
          path, release, kIbverbsRelease);
  return false;
}

// libibverbs dlopen()s the provider (RTLD_NOW) and expects it to register itself.
// (A libibverbs without IBVERBS_PRIVATE_34 fails the dlopen itself: libibverbs
// prints the loader's "version `IBVERBS_PRIVATE_34' not found".)
__attribute__((constructor)) void register_provider() {
  if (ibverbs_release_matches()) verbs_register_driver_34(&kDeviceOps);
}

}  // namespace

void debug_log(const char* fmt, ...) {
  if (getenv("BURST_PROVIDER_DEBUG") == nullptr) return;  // control path only: no caching
  int saved = errno;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  errno = saved;
}

}  // namespace burst::provider
