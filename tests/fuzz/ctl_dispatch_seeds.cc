// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Writes the seed corpus of fuzz_ctl_dispatch (input format:
// ctl_dispatch_input.h): connections that do what the verbs provider does
// (HELLO, ATTACH_MEMORY, ALLOC_PD, CREATE_CQ, CREATE_QP, MODIFY_QP to RTS,
// REG_MR cross-memory and zero-copy, teardown), the same for UD on an SRQ,
// a client revoked halfway, the queries, wrong descriptors, requests before
// HELLO, broken framing and an unprivileged user over its caps.
//   ctl_dispatch_seeds OUT_DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/fuzz/ctl_dispatch_input.h"

namespace {

using namespace burst::fuzz_ctl;

constexpr uint8_t kAuto = kCtlAutoFds;
constexpr uint8_t fds(int n) { return static_cast<uint8_t>(n << kCtlFdShift); }
constexpr uint8_t kinds(uint8_t k0, uint8_t k1 = kFdDevNull) {
  return static_cast<uint8_t>(k0 | (k1 << 4));
}
constexpr uint8_t addr(AddrMode m) { return static_cast<uint8_t>(m << kAuxAddrShift); }
constexpr uint8_t corrupt(Corrupt c) { return static_cast<uint8_t>(c); }

// MODIFY_QP body: the first byte picks the target state.
const std::vector<uint8_t> kToInit = {0}, kToRtr = {1}, kToRts = {2}, kToErr = {3};

// RC: the provider's sequence from ibv_open_device to a QP in RTS with two MRs.
std::vector<uint8_t> verbs_rc() {
  InputWriter w(0);
  w.msg(BURST_CTL_OP_ATTACH_MEMORY, kAuto)
      .msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_CREATE_CQ, kAuto)
      .msg(BURST_CTL_OP_CREATE_QP)
      .msg(BURST_CTL_OP_MODIFY_QP, 0, 0, 0, kToInit)
      .msg(BURST_CTL_OP_MODIFY_QP, 0, 0, 0, kToRtr)
      .msg(BURST_CTL_OP_MODIFY_QP, 0, 0, 0, kToRts)
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrPrivate))
      .msg(BURST_CTL_OP_REG_MR, kAuto, 0, addr(kAddrShared))
      .msg(BURST_CTL_OP_QUERY_QP)
      .msg(BURST_CTL_OP_DEREG_MR)
      .msg(BURST_CTL_OP_DESTROY_QP)
      .msg(BURST_CTL_OP_DESTROY_CQ)
      .msg(BURST_CTL_OP_MODIFY_QP, 0, 0, 0, kToErr);  // a destroyed QP: ENOENT
  return w.bytes();
}

// UD on an SRQ, maps only (no /proc/self/mem: only the shared memfd registers).
std::vector<uint8_t> verbs_ud_srq() {
  InputWriter w(0);
  w.msg(BURST_CTL_OP_ATTACH_MEMORY, kAuto, 1 /* maps only */)
      .msg(BURST_CTL_OP_SET_ASYNC_FD, kAuto)
      .msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_CREATE_CQ)
      .msg(BURST_CTL_OP_CREATE_SRQ)
      .msg(BURST_CTL_OP_CREATE_QP, 0, 0, 0, {0, 0, 0, 0x09 /* UD, on the SRQ */})
      .msg(BURST_CTL_OP_MODIFY_QP, 0, 0, 0, kToInit)
      .msg(BURST_CTL_OP_MODIFY_QP, 0, 0, 0, kToRtr)
      .msg(BURST_CTL_OP_MODIFY_QP, 0, 0, 0, kToRts)
      .msg(BURST_CTL_OP_CREATE_AH)
      .msg(BURST_CTL_OP_REG_MR, kAuto, 0, addr(kAddrShared))
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrPrivate))  // EACCES: no mem descriptor
      .msg(BURST_CTL_OP_MODIFY_SRQ)
      .msg(BURST_CTL_OP_QUERY_SRQ)
      .msg(BURST_CTL_OP_DESTROY_AH)
      .msg(BURST_CTL_OP_DESTROY_SRQ);  // EBUSY: the QP uses it
  return w.bytes();
}

// Revoked after its setup: teardown and queries still work, the rest is EACCES.
std::vector<uint8_t> revoked() {
  InputWriter w(0);
  w.msg(BURST_CTL_OP_ATTACH_MEMORY, kAuto)
      .msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_CREATE_CQ, kAuto)
      .msg(BURST_CTL_OP_CREATE_QP)
      .msg(BURST_CTL_OP_MODIFY_QP, 0, 0, 0, kToInit)
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrPrivate))
      .msg(BURST_CTL_OP_REG_MR, kAuto, 0, addr(kAddrShared))
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrPrivate), {}, kEventRevoke)
      .msg(BURST_CTL_OP_MODIFY_QP, 0, 0, 0, kToRtr)
      .msg(BURST_CTL_OP_QUERY_QP)
      .msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_DEREG_MR)
      .msg(BURST_CTL_OP_DESTROY_QP)
      .msg(BURST_CTL_OP_QUERY_STATUS);
  return w.bytes();
}

std::vector<uint8_t> queries() {
  InputWriter w(0);
  w.msg(BURST_CTL_OP_QUERY_STATUS, 0, 0, 0, {}, kEventCheck)
      .msg(BURST_CTL_OP_QUERY_WORKERS)
      .msg(BURST_CTL_OP_QUERY_COUNTERS)
      .msg(BURST_CTL_OP_QUERY_COUNTERS, 0, 0, 0, {1})
      .msg(BURST_CTL_OP_QUERY_COUNTERS, 0, 0, 0, {2})
      .msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_CREATE_CQ)
      .msg(BURST_CTL_OP_CREATE_QP)
      .msg(BURST_CTL_OP_QUERY_QPS)
      .msg(BURST_CTL_OP_MAP_DOORBELL)
      .msg(BURST_CTL_OP_MAP_DOORBELL, 0, 0, 0, {1})
      .msg(BURST_CTL_OP_MAP_DOORBELL, 0, 0, 0, {2})
      .msg(BURST_CTL_OP_HELLO, 0, 0, 0, {}, kEventCheck);
  return w.bytes();
}

// Descriptors of the wrong kind, too many, closed numbers.
std::vector<uint8_t> wrong_fds() {
  InputWriter w(0);
  w.msg(BURST_CTL_OP_ATTACH_MEMORY, fds(1), kinds(kFdDeadMaps))
      .msg(BURST_CTL_OP_ATTACH_MEMORY, fds(2), kinds(kFdSelfMaps, kFdDeadMem))
      .msg(BURST_CTL_OP_ATTACH_MEMORY, fds(2), kinds(kFdSelfStatus, kFdSelfMem))
      .msg(BURST_CTL_OP_ATTACH_MEMORY, fds(1), kinds(kFdSelfMem))
      .msg(BURST_CTL_OP_ALLOC_PD, fds(1), kinds(kFdDevNull))
      .msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_CREATE_CQ, fds(1), kinds(kFdPipeRead))
      .msg(BURST_CTL_OP_CREATE_CQ, fds(2), kinds(kFdSocket, kFdSocket))
      .msg(BURST_CTL_OP_SET_ASYNC_FD, fds(1), kinds(kFdClosed))
      .msg(BURST_CTL_OP_SET_ASYNC_FD, fds(1), kinds(kFdMinusOne))
      .msg(BURST_CTL_OP_ATTACH_MEMORY, fds(2), kinds(kFdSelfMaps, kFdSelfMem))
      .msg(BURST_CTL_OP_REG_MR, fds(1), kinds(kFdOtherMemfd), addr(kAddrShared))
      .msg(BURST_CTL_OP_REG_MR, fds(1), kinds(kFdSharedPath), addr(kAddrShared))
      .msg(BURST_CTL_OP_REG_MR, fds(3), kinds(kFdSharedMemfd, kFdSharedMemfd), addr(kAddrShared))
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrStraddle))
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrReadOnly))
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrWrap))
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrEmpty))
      .msg(BURST_CTL_OP_HELLO, fds(1), kinds(kFdPipeWrite));
  return w.bytes();
}

std::vector<uint8_t> before_hello() {
  InputWriter w(kSessNoHello);
  w.msg(BURST_CTL_OP_QUERY_STATUS)
      .msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_HELLO)
      .msg(BURST_CTL_OP_ALLOC_PD);
  return w.bytes();
}

// Every corruption of a request, then noise, then bad magic (burstd closes).
std::vector<uint8_t> framing() {
  InputWriter w(0);
  for (Corrupt c : {kCorruptVersion, kCorruptLength, kCorruptTrailing, kCorruptShort,
                    kCorruptStatus, kCorruptRawBody, kCorruptResponse}) {
    w.msg(BURST_CTL_OP_CREATE_CQ, kCtlCorrupt, 0, corrupt(c));
  }
  std::vector<uint8_t> noise(40);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint8_t>(i * 37);
  w.raw(noise).raw({1, 2, 3});
  w.msg(BURST_CTL_OP_QUERY_STATUS, kCtlCorrupt, 0, corrupt(kCorruptMagic));
  w.msg(BURST_CTL_OP_QUERY_STATUS);  // not sent: the connection is closed
  return w.bytes();
}

// An unprivileged user: per-user caps (3 of each), its own QPs only.
std::vector<uint8_t> other_user() {
  InputWriter w(kSessOtherUid);
  w.msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_ALLOC_PD)
      .msg(BURST_CTL_OP_ALLOC_PD)  // EAGAIN
      .msg(BURST_CTL_OP_CREATE_CQ)
      .msg(BURST_CTL_OP_CREATE_QP)
      .msg(BURST_CTL_OP_QUERY_QPS)
      .msg(BURST_CTL_OP_ATTACH_MEMORY, kAuto)
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrPrivate))
      .msg(BURST_CTL_OP_REG_MR, kAuto, 0, addr(kAddrShared))
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrPrivate))  // memlock budget
      .msg(BURST_CTL_OP_REG_MR, 0, 0, addr(kAddrPrivate));
  return w.bytes();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out);
  const std::pair<const char*, std::vector<uint8_t>> seeds[] = {
      {"verbs_rc", verbs_rc()}, {"verbs_ud_srq", verbs_ud_srq()}, {"revoked", revoked()},
      {"queries", queries()},   {"wrong_fds", wrong_fds()},       {"before_hello", before_hello()},
      {"framing", framing()},   {"other_user", other_user()},
  };
  for (const auto& [name, bytes] : seeds) {
    std::ofstream f(out / name, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", (out / name).c_str());
      return 1;
    }
  }
  std::printf("%zu seeds in %s\n", std::size(seeds), out.c_str());
  return 0;
}
