/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Who a client is and what it may use (docs/security.md).
//
// Credentials: burstd identifies a client by SO_PEERCRED at connect and keeps a
// snapshot of the connecting process's real/effective/saved/filesystem uids and
// gids (/proc/PID/status, world-readable: no capability needed, and nothing of
// the process's memory). A later snapshot that differs, or a process that is
// gone, revokes the client (Resources::check_clients).
//
// Limits: per-user object caps for non-root users (UserLimits, from
// burstd.conf), and registered bytes against the registering process's
// RLIMIT_MEMLOCK (/proc/PID/limits) unless it holds CAP_IPC_LOCK, as the
// kernel accounts pinned memory for RNICs (ib_umem_get).
//
// Threading: control thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace burst::burstd {

struct UserLimits {
  uint32_t max_qps = 0;  // per user, 0: no cap beyond the device limits
  uint32_t max_cqs = 0;
  uint32_t max_mrs = 0;
  uint32_t max_pds = 0;
};

struct ProcessCreds {
  bool valid = false;
  std::string uids;  // the "Uid:" line of /proc/PID/status (real, effective, saved, fs)
  std::string gids;  // the "Gid:" line
  std::string groups;
  uint64_t cap_eff = 0;
  bool operator==(const ProcessCreds& o) const {
    return valid == o.valid && uids == o.uids && gids == o.gids && groups == o.groups;
  }
};

// A user or group by name or numeric id (burstd.conf's socket_owner,
// socket_group, admin_group). False when there is no such user/group.
bool resolve_user(const std::string& name, uid_t* uid);
bool resolve_group(const std::string& name, gid_t* gid);

// Reads the credentials of process `pid`; valid = false when it is gone.
ProcessCreds read_creds(pid_t pid);

// The soft RLIMIT_MEMLOCK of process `pid` in bytes (UINT64_MAX: unlimited);
// false when it cannot be read (the process is gone).
bool read_memlock_limit(pid_t pid, uint64_t* bytes);

inline constexpr int kCapIpcLock = 14;  // CAP_IPC_LOCK
inline bool has_cap(const ProcessCreds& c, int cap) { return (c.cap_eff >> cap) & 1; }

// What a /proc descriptor a client sent names: ".../N/NAME" read through
// burstd's own /proc/self/fd. Returns false unless `fd` is a file of a procfs
// and its link ends that way; *pid_in_link is N as the client's procfs numbers
// it (another pid namespace may number it differently), *name NAME. A sanity
// check of what the client sent, not a security boundary: whatever it sent,
// it could open itself.
bool proc_file_of(int fd, long* pid_in_link, std::string* name);

}  // namespace burst::burstd
