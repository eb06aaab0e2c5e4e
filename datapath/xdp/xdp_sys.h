/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// System helpers of the AF_XDP backend: capabilities, process identity, UMEM
// memory, libbpf log capture. Control plane only. (The netdev is queried by the
// caller through net/ and handed over in XdpConfig::netdev_info.)
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "datapath/xdp/xdp_config.h"

struct btf;

namespace burst::datapath::xdp_sys {

// Names of required capabilities the process lacks ("" when it has all).
std::string MissingCapabilities();

// 0 when the kernel can create AF_XDP sockets, else the errno value.
int ProbeAfXdp();

// Start time of `pid` in clock ticks after boot (/proc/PID/stat field 22); 0 if gone.
uint64_t ProcessStartTime(pid_t pid);

// Best effort: lift RLIMIT_MEMLOCK (UMEM and maps are charged to it on some kernels).
void RaiseMemlockLimit();

// Anonymous memory for a UMEM, on 2 MB hugepages if `mode` allows and they are free.
struct Region {
  uint8_t* addr = nullptr;
  size_t len = 0;  // mapped length (rounded up to the page size used)
  bool huge = false;
};
XdpError MapRegion(size_t bytes, HugepageMode mode, Region* out);
void UnmapRegion(Region* r);

// Offset of variable `var` inside the data section type `datasec_id` of `b`.
bool DatasecVarOffset(const btf* b, int datasec_id, const char* var, uint32_t* off);

// libbpf and libxdp print through process-wide callbacks; these keep the last
// lines (warnings, errors, libxdp's info) so a failure message can quote the
// kernel's reason, and nothing reaches stderr unasked.
// Set BURST_LIBBPF_DEBUG=1 to also print everything (debug included) to stderr.
void InstallLibbpfLogger();
void ClearLibbpfLog();
std::string LibbpfLog();  // captured lines, "" when none
// The last line in which libxdp said why its dispatcher cannot be used ("" if
// it never did). Kept across ClearLibbpfLog(): libxdp checks the kernel once per
// process and says so only then.
std::string DispatcherUnavailableReason();

// `message`, with the captured libbpf/libxdp lines appended when there are any.
XdpError FailWithLog(int code, std::string message);

}  // namespace burst::datapath::xdp_sys
