// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "shm/region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

namespace burst::shm {
namespace {

constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

core::Status FromErrno(int e) { return e == ENOMEM ? core::Errc::kNoMemory : core::Errc::kInvalid; }

}  // namespace

ShmRegion::~ShmRegion() { Reset(); }

ShmRegion::ShmRegion(ShmRegion&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)) {}

ShmRegion& ShmRegion::operator=(ShmRegion&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void ShmRegion::Reset() {
  if (data_ != nullptr) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

core::Status ShmRegion::Create(const char* name, uint64_t size, ShmRegion* out) {
  const long page = sysconf(_SC_PAGESIZE);
  if (size == 0 || page <= 0 || size % static_cast<uint64_t>(page) != 0) {
    return core::Errc::kInvalid;
  }
  ShmRegion r;
  r.fd_ = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (r.fd_ < 0) return FromErrno(errno);
  if (ftruncate(r.fd_, static_cast<off_t>(size)) != 0) return FromErrno(errno);
  if (fcntl(r.fd_, F_ADD_SEALS, kSizeSeals) != 0) return FromErrno(errno);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd_, 0);
  if (p == MAP_FAILED) return FromErrno(errno);
  r.data_ = static_cast<uint8_t*>(p);
  r.size_ = size;
  *out = std::move(r);
  return core::Status::Ok();
}

core::Status ShmRegion::Map(int fd, ShmRegion* out) {
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
    return core::Errc::kInvalid;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return core::Errc::kInvalid;
  ShmRegion r;
  r.fd_ = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (r.fd_ < 0) return FromErrno(errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd_, 0);
  if (p == MAP_FAILED) return FromErrno(errno);
  r.data_ = static_cast<uint8_t*>(p);
  r.size_ = size;
  *out = std::move(r);
  return core::Status::Ok();
}

}  // namespace burst::shm
