// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/access.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace burst::burstd {
namespace {

bool read_file(const char* path, std::string* out) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return !out->empty();
}

// The rest of the line that starts with `key` ("Uid:"), trimmed; empty if none.
std::string field(const std::string& text, const char* key) {
  const size_t klen = std::strlen(key);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    if (text.compare(pos, klen, key) == 0) {
      size_t b = pos + klen;
      while (b < nl && (text[b] == ' ' || text[b] == '\t')) ++b;
      return text.substr(b, nl - b);
    }
    pos = nl + 1;
  }
  return {};
}

bool parse_id(const std::string& s, uint32_t* id) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 10)
    return false;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (v >= UINT32_MAX) return false;
  *id = static_cast<uint32_t>(v);
  return true;
}

// A numeric id, or the id of the named entry of the user or group database
// (lookup: getpwnam_r or getgrnam_r; field: its id).
template <class Entry, class Id>
bool resolve_id(const std::string& name, int (*lookup)(const char*, Entry*, char*, size_t, Entry**),
                Id Entry::*field, Id* out) {
  uint32_t id;
  if (parse_id(name, &id)) {
    *out = id;
    return true;
  }
  Entry e{}, *res = nullptr;
  std::vector<char> buf(16384);
  if (lookup(name.c_str(), &e, buf.data(), buf.size(), &res) != 0 || res == nullptr) return false;
  *out = e.*field;
  return true;
}

}  // namespace

bool resolve_user(const std::string& name, uid_t* uid) {
  return resolve_id(name, getpwnam_r, &passwd::pw_uid, uid);
}

bool resolve_group(const std::string& name, gid_t* gid) {
  return resolve_id(name, getgrnam_r, &group::gr_gid, gid);
}

ProcessCreds read_creds(pid_t pid) {
  ProcessCreds c;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/status", static_cast<int>(pid));
  std::string text;
  if (pid <= 0 || !read_file(path, &text)) return c;
  c.uids = field(text, "Uid:");
  c.gids = field(text, "Gid:");
  c.groups = field(text, "Groups:");
  c.cap_eff = std::strtoull(field(text, "CapEff:").c_str(), nullptr, 16);
  c.valid = !c.uids.empty() && !c.gids.empty();
  return c;
}

bool read_memlock_limit(pid_t pid, uint64_t* bytes) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/limits", static_cast<int>(pid));
  std::string text;
  if (pid <= 0 || !read_file(path, &text)) return false;
  // "Max locked memory         8388608              8388608              bytes"
  const std::string rest = field(text, "Max locked memory");
  if (rest.empty()) return false;
  if (rest.compare(0, 9, "unlimited") == 0) {
    *bytes = UINT64_MAX;
    return true;
  }
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(rest.c_str(), &end, 10);
  if (errno != 0 || end == rest.c_str()) return false;
  *bytes = v;
  return true;
}

bool proc_file_of(int fd, long* pid_in_link, std::string* name) {
  struct statfs fs;
  if (fd < 0 || fstatfs(fd, &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC) return false;
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char target[256];
  const ssize_t n = readlink(link, target, sizeof(target) - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  // The last two components: "N/NAME" (the prefix depends on where the
  // client's procfs is mounted as seen from burstd).
  const char* slash = std::strrchr(target, '/');
  if (slash == nullptr || slash == target) return false;
  const char* prev = slash - 1;
  while (prev > target && *prev != '/') --prev;
  if (*prev == '/') ++prev;
  char* end = nullptr;
  const long pid = std::strtol(prev, &end, 10);
  if (end != slash || pid <= 0) return false;
  const std::string tail(slash + 1);
  if (tail.empty() || tail.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
    return false;
  *pid_in_link = pid;
  *name = tail;
  return true;
}

}  // namespace burst::burstd
