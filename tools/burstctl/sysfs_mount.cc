// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "tools/burstctl/sysfs_mount.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

namespace burst::tools {
namespace {

using net::Status;

constexpr char kSysClass[] = "/sys/class";
// The classes burst adds entries to; every other class is bound as it is.
constexpr const char* kMergedClasses[] = {"infiniband", "infiniband_verbs"};

Status sys_error(const std::string& what) {
  const int e = errno;
  return Status::Error(e, net::errno_message(what, e));
}

Status write_file(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
  if (fd < 0) return sys_error("open " + path);
  const ssize_t n = write(fd, text.data(), text.size());
  const int e = n < 0 ? errno : (static_cast<size_t>(n) == text.size() ? 0 : EIO);
  close(fd);
  if (e != 0) return Status::Error(e, net::errno_message("write " + path, e));
  return Status::Ok();
}

// A private mount namespace; a user namespace (own uid and gid only) when the
// caller may not create one by itself.
Status enter_mount_ns(SysfsMountMode* mode) {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWNS) == 0) {
    *mode = SysfsMountMode::kPrivateNs;
  } else {
    if (errno != EPERM) return sys_error("unshare(CLONE_NEWNS)");
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      const int e = errno;
      return Status::Error(
          e, net::errno_message("unshare(CLONE_NEWNS) needs CAP_SYS_ADMIN, and a user namespace "
                                "is not allowed either: unshare(CLONE_NEWUSER)",
                                e) +
                 (e == ENOSPC ? " (the user.max_user_namespaces limit)" : ""));
    }
    // setgroups first: an unprivileged gid_map needs it denied (missing before Linux 3.19).
    if (Status s = write_file("/proc/self/setgroups", "deny"); !s.ok() && s.code() != ENOENT) {
      return s;
    }
    if (Status s = write_file("/proc/self/uid_map",
                              std::to_string(uid) + " " + std::to_string(uid) + " 1\n");
        !s.ok()) {
      return s;
    }
    if (Status s = write_file("/proc/self/gid_map",
                              std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
        !s.ok()) {
      return s;
    }
    *mode = SysfsMountMode::kUserNs;
  }
  // Slave: mounts made outside later still propagate in; ours never leak out.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    return sys_error("make / a slave mount");
  }
  return Status::Ok();
}

struct Entry {
  std::string name;
  unsigned char type;  // DT_DIR, DT_LNK, DT_REG (DT_UNKNOWN resolved with fstatat)
};

Status list_dir(const std::string& path, std::vector<Entry>* out) {
  out->clear();
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return sys_error("opendir " + path);
  errno = 0;
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
    }
    out->push_back({e->d_name, type});
    errno = 0;
  }
  const int e = errno;
  closedir(d);
  if (e != 0) return Status::Error(e, net::errno_message("readdir " + path, e));
  return Status::Ok();
}

Status copy_link(const std::string& from, const std::string& to) {
  char target[PATH_MAX];
  const ssize_t n = readlink(from.c_str(), target, sizeof(target) - 1);
  if (n < 0) return sys_error("readlink " + from);
  target[n] = '\0';
  if (symlink(target, to.c_str()) != 0) return sys_error("symlink " + to);
  return Status::Ok();
}

Status copy_small_file(const std::string& from, const std::string& to) {
  int fd = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_error("open " + from);
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof(buf));
  const int e = errno;
  close(fd);
  if (n < 0) return Status::Error(e, net::errno_message("read " + from, e));
  return write_file(to, std::string(buf, static_cast<size_t>(n)));
}

// One entry of a merged class directory, at `to`: links are copied (relative
// ones resolve as before: the directory is at the same path), files copied,
// directories (burst's uverbsN) linked to by absolute path.
Status merge_entry(const std::string& dir, const Entry& e, const std::string& to) {
  const std::string from = dir + "/" + e.name;
  if (e.type == DT_LNK) return copy_link(from, to);
  if (e.type == DT_DIR) {
    if (symlink(from.c_str(), to.c_str()) != 0) return sys_error("symlink " + to);
    return Status::Ok();
  }
  return copy_small_file(from, to);
}

// /sys/class/<name> as a directory of burst's entries and the original
// class's (the kernel's devices, or an enclosing burstctl run's). Burst's win a
// name clash: the kernel's uverbsN never clash (burstctl picks a free N), an
// enclosing run's burst0 or uverbsN would hide the device this run describes.
Status merge_class(const std::string& orig_class, bool orig_exists, const std::string& ours,
                   const std::string& name) {
  const std::string at = std::string(kSysClass) + "/" + name;
  if (mkdir(at.c_str(), 0755) != 0) return sys_error("mkdir " + at);
  std::vector<Entry> entries;
  if (Status s = list_dir(ours, &entries); !s.ok()) return s;
  for (const Entry& e : entries) {
    if (Status s = merge_entry(ours, e, at + "/" + e.name); !s.ok()) return s;
  }
  if (!orig_exists) return Status::Ok();
  if (Status s = list_dir(orig_class + "/" + name, &entries); !s.ok()) return s;
  for (const Entry& e : entries) {
    struct stat st;
    if (lstat((at + "/" + e.name).c_str(), &st) == 0) continue;  // burst's
    if (Status s = merge_entry(orig_class + "/" + name, e, at + "/" + e.name); !s.ok()) return s;
  }
  return Status::Ok();
}

bool is_merged(const std::string& name) {
  for (const char* m : kMergedClasses) {
    if (name == m) return true;
  }
  return false;
}

// Fills the tmpfs over /sys/class. orig_class names the original directory
// through a descriptor opened before the tmpfs covered it.
Status fill_class(const std::string& orig_class, const std::vector<Entry>& entries,
                  const std::string& root) {
  for (const Entry& e : entries) {
    if (is_merged(e.name)) continue;
    const std::string at = std::string(kSysClass) + "/" + e.name;
    const std::string from = orig_class + "/" + e.name;
    if (e.type == DT_LNK) {
      if (Status s = copy_link(from, at); !s.ok()) return s;
      continue;
    }
    if (e.type != DT_DIR) continue;  // sysfs has only directories there
    if (mkdir(at.c_str(), 0755) != 0) return sys_error("mkdir " + at);
    if (mount(from.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return sys_error("bind " + at);
    }
  }
  for (const char* name : kMergedClasses) {
    bool orig_exists = false;
    for (const Entry& e : entries) orig_exists |= e.name == name && e.type == DT_DIR;
    if (Status s = merge_class(orig_class, orig_exists, root + "/class/" + name, name); !s.ok()) {
      return s;
    }
  }
  if (mount(nullptr, kSysClass, nullptr,
            MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return sys_error("remount /sys/class read-only");
  }
  return Status::Ok();
}

}  // namespace

Status show_tree_at_sys_class(const std::string& root, SysfsMountMode* mode) {
  if (Status s = enter_mount_ns(mode); !s.ok()) return s;
  // Opened in the new namespace (a bind source must belong to it), before the
  // tmpfs hides the original entries; reached afterwards through /proc.
  const int fd = open(kSysClass, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sys_error(std::string("open ") + kSysClass);
  const std::string orig_class = "/proc/self/fd/" + std::to_string(fd);
  std::vector<Entry> entries;
  Status s = list_dir(orig_class, &entries);
  if (s.ok() && mount("burst-sysfs", kSysClass, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "mode=0755,size=1m") != 0) {
    s = sys_error("mount a tmpfs on /sys/class");
  } else if (s.ok()) {
    s = fill_class(orig_class, entries, root);
    // Undone as a whole: the command then sees /sys/class as it was.
    if (!s.ok()) umount2(kSysClass, MNT_DETACH);
  }
  close(fd);
  return s;
}

}  // namespace burst::tools
