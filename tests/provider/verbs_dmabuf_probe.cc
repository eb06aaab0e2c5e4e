// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// ibv_reg_dmabuf_mr through the public libibverbs API. Run under `burstctl run
// --socket SOCK` with burstd running (dmabuf_test.sh on the host,
// tests/interop/dmabuf_guest.sh in the Debian guest):
//
//   always (no exporter needed):
//   - the consumers' probe ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0) (NCCL, UCX):
//     NULL with errno EBADF;
//   - descriptors that are not dma-bufs: a memfd, a pipe, a regular file:
//     EINVAL;
//   with --vgem (a DRM device whose dumb buffers PRIME exports: vgem):
//   - a 64 KiB dumb buffer exported with DRM_CLOEXEC | DRM_RDWR, filled through
//     its own mmap; a range past its end and a wrapping range: EINVAL; a
//     read-only export of a second buffer (no DRM_RDWR): EACCES with
//     LOCAL_WRITE, registered for REMOTE_READ alone;
//   - an MR over [4 KiB, 60 KiB) of it at an iova of our choosing;
//     ibv_rereg_mr on it: EOPNOTSUPP;
//   - one RC QP connected to itself: RDMA WRITE from a malloc MR into the
//     dma-buf MR, READ back from it, SEND into a receive whose SGE is the
//     dma-buf MR; bytes checked through the dma-buf's mmap (and nothing
//     outside the written ranges touched); then dereg and close.
// Prints "PASS" and exits 0; "FAIL: ..." and 1 on a failed check; "SKIP: ..."
// and 77 with --vgem when no DRM device exports dumb buffers.
#include <fcntl.h>
#include <glob.h>
#include <infiniband/verbs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "tests/provider/probe_util.h"

namespace {

// The DRM uapi (include/uapi/drm/drm.h, drm_mode.h): the two structs and
// ioctls used here, stable kernel ABI (Debian ships the headers only in
// libdrm-dev).
struct DrmModeCreateDumb {
  uint32_t height, width, bpp, flags;
  uint32_t handle, pitch;  // out
  uint64_t size;           // out
};
struct DrmPrimeHandle {
  uint32_t handle;
  uint32_t flags;  // DRM_CLOEXEC | DRM_RDWR
  int32_t fd;      // out
};
constexpr unsigned long kIoctlCreateDumb = _IOWR('d', 0xB2, DrmModeCreateDumb);
constexpr unsigned long kIoctlPrimeHandleToFd = _IOWR('d', 0x2d, DrmPrimeHandle);
constexpr uint32_t kDrmCloexec = O_CLOEXEC;
constexpr uint32_t kDrmRdwr = O_RDWR;

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
constexpr size_t kBufLen = 64 * 1024;    // the dumb buffer: 128 x 128 x 32 bpp
constexpr uint64_t kOff = 4096;          // the MR: [kOff, kOff + kMrLen) of it
constexpr size_t kMrLen = kBufLen - 2 * 4096;
constexpr uint64_t kIova = 0x7e0000001000ull;
constexpr size_t kMsg = 10000;           // spans pages; not a multiple of the MTU

void expect_refused(ibv_pd* pd, uint64_t off, size_t len, int fd, int want, const char* what) {
  errno = 0;
  ibv_mr* mr = ibv_reg_dmabuf_mr(pd, off, len, kIova, fd, kAccess);
  CHECK(mr == nullptr, "%s: registered", what);
  CHECK(errno == want, "%s: errno %d (%s), want %d (%s)", what, errno, std::strerror(errno), want,
        std::strerror(want));
  std::printf("ok: %s -> %s\n", what, std::strerror(want));
}

void negatives(ibv_pd* pd) {
  errno = 0;
  CHECK(ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0) == nullptr && errno == EBADF,
        "consumers' probe (fd -1): errno %d, want EBADF", errno);
  std::printf("ok: probe fd -1 -> EBADF\n");
  const int mfd = memfd_create("burst-not-a-dmabuf", MFD_CLOEXEC);
  CHECK(mfd >= 0 && ftruncate(mfd, kBufLen) == 0, "memfd: %s", std::strerror(errno));
  expect_refused(pd, 0, 4096, mfd, EINVAL, "memfd");
  close(mfd);
  int p[2];
  CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe: %s", std::strerror(errno));
  expect_refused(pd, 0, 4096, p[0], EINVAL, "pipe");
  close(p[0]);
  close(p[1]);
  const char* dir = std::getenv("TMPDIR");
  char path[512];
  std::snprintf(path, sizeof(path), "%s/burst-dmabuf-XXXXXX", dir != nullptr ? dir : "/tmp");
  const int ffd = mkstemp(path);
  CHECK(ffd >= 0 && ftruncate(ffd, kBufLen) == 0, "regular file: %s", std::strerror(errno));
  unlink(path);
  expect_refused(pd, 0, 4096, ffd, EINVAL, "regular file");
  close(ffd);
}

// A dma-buf of kBufLen bytes exported by the first /dev/dri/card* that makes
// dumb buffers, read-write; *ro another such buffer exported read-only.
// -1 when no device does.
int vgem_dmabuf(int* ro) {
  glob_t g{};
  if (glob("/dev/dri/card*", 0, nullptr, &g) != 0) return -1;
  int out = -1;
  for (size_t i = 0; i < g.gl_pathc && out < 0; ++i) {
    const int card = open(g.gl_pathv[i], O_RDWR | O_CLOEXEC);
    if (card < 0) continue;
    DrmModeCreateDumb d{};
    d.width = 128;
    d.height = 128;
    d.bpp = 32;
    DrmPrimeHandle ph{};
    if (ioctl(card, kIoctlCreateDumb, &d) == 0 && d.size >= kBufLen) {
      ph.handle = d.handle;
      ph.flags = kDrmCloexec | kDrmRdwr;
      ph.fd = -1;
      if (ioctl(card, kIoctlPrimeHandleToFd, &ph) == 0) out = ph.fd;
      // Another buffer: a second export of the same one is the first's file.
      DrmModeCreateDumb d2 = d;
      d2.handle = 0;
      DrmPrimeHandle ph2{};
      ph2.flags = kDrmCloexec;
      ph2.fd = -1;
      if (out >= 0 && ioctl(card, kIoctlCreateDumb, &d2) == 0) {
        ph2.handle = d2.handle;
        if (ioctl(card, kIoctlPrimeHandleToFd, &ph2) == 0) *ro = ph2.fd;
      }
    }
    std::printf("%s: dumb buffer %llu bytes, dma-buf fd %d\n", g.gl_pathv[i],
                static_cast<unsigned long long>(d.size), out);
    close(card);  // the dma-buf keeps the buffer
  }
  globfree(&g);
  return out;
}

void modify(ibv_qp* qp, ibv_qp_attr* a, int mask, const char* what) {
  const int e = ibv_modify_qp(qp, a, mask);
  CHECK(e == 0, "modify_qp %s: %s", what, std::strerror(e));
}

// The QP connected to itself through the port's own GID 1.
void connect_self(ibv_context* ctx, ibv_qp* qp) {
  ibv_gid gid;
  CHECK(ibv_query_gid(ctx, 1, 1, &gid) == 0, "query_gid 1");
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = kAccess;
  modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = qp->qp_num;
  a.rq_psn = 77;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.grh.sgid_index = 1;
  a.ah_attr.grh.hop_limit = 64;
  modify(qp, &a,
         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
         "RTR");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = 77;
  a.max_rd_atomic = 4;
  modify(qp, &a,
         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
             IBV_QP_MAX_QP_RD_ATOMIC,
         "RTS");
}

// One completion from cq (10 s at most).
ibv_wc poll_one(ibv_cq* cq, const char* what) {
  ibv_wc wc{};
  timespec start{}, now{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    const int r = ibv_poll_cq(cq, 1, &wc);
    CHECK(r >= 0, "poll_cq: %d", r);
    if (r == 1) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    CHECK(now.tv_sec - start.tv_sec < 10, "%s: no completion", what);
  }
  return wc;
}

// One successful completion of `opcode` from cq.
void expect_ok(ibv_cq* cq, uint64_t wr_id, ibv_wc_opcode opcode, const char* what) {
  const ibv_wc wc = poll_one(cq, what);
  CHECK(wc.wr_id == wr_id && wc.status == IBV_WC_SUCCESS && wc.opcode == opcode,
        "%s: wr_id %llu status %s opcode %d", what, static_cast<unsigned long long>(wc.wr_id),
        ibv_wc_status_str(wc.status), wc.opcode);
  std::printf("ok: %s\n", what);
}

void post_send(ibv_qp* qp, ibv_wr_opcode op, uint64_t wr_id, ibv_sge sge, uint64_t raddr,
               uint32_t rkey) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  const int e = ibv_post_send(qp, &wr, &bad);
  CHECK(e == 0, "post_send: %s", std::strerror(e));
}

void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
}

// Whether buf[0, n) is the fill of `seed`.
bool filled(const uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != static_cast<uint8_t>(seed + i * 7 + (i >> 8))) return false;
  }
  return true;
}

// Whether view[from, to) still holds the initial fill (seed 0x11 from view[0]).
bool untouched(const uint8_t* view, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) {
    if (view[i] != static_cast<uint8_t>(0x11 + i * 7 + (i >> 8))) return false;
  }
  return true;
}

void data_path(ibv_context* ctx, ibv_pd* pd, int dfd, int ro) {
  auto* view = static_cast<uint8_t*>(
      mmap(nullptr, kBufLen, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0));
  CHECK(view != MAP_FAILED, "mmap of the dma-buf: %s", std::strerror(errno));
  fill(view, kBufLen, 0x11);
  expect_refused(pd, kOff, kBufLen, dfd, EINVAL, "range past the buffer's end");
  expect_refused(pd, UINT64_MAX - 100, 4096, dfd, EINVAL, "wrapping range");
  // A read-only export: no local write (EACCES), remote read only is fine.
  CHECK(ro >= 0, "no read-only export of the buffer");
  expect_refused(pd, kOff, kMrLen, ro, EACCES, "writable MR over a read-only export");
  ibv_mr* rmr = ibv_reg_dmabuf_mr(pd, 0, kBufLen, kIova, ro, IBV_ACCESS_REMOTE_READ);
  CHECK(rmr != nullptr, "read-only dma-buf MR: %s", std::strerror(errno));
  CHECK(ibv_dereg_mr(rmr) == 0, "dereg of the read-only dma-buf MR");
  std::printf("ok: read-only export registered for remote read\n");
  ibv_mr* dmr = ibv_reg_dmabuf_mr(pd, kOff, kMrLen, kIova, dfd, kAccess);
  CHECK(dmr != nullptr, "ibv_reg_dmabuf_mr: %s", std::strerror(errno));
  std::printf("ok: dma-buf MR %llu+%zu at iova 0x%llx lkey 0x%x rkey 0x%x\n",
              static_cast<unsigned long long>(kOff), kMrLen,
              static_cast<unsigned long long>(kIova), dmr->lkey, dmr->rkey);
  CHECK(ibv_rereg_mr(dmr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                     IBV_ACCESS_LOCAL_WRITE) != 0,
        "ibv_rereg_mr of a dma-buf MR succeeded");
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  CHECK(cq != nullptr, "create_cq: %s", std::strerror(errno));
  ibv_qp_init_attr ia{};
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap = {8, 8, 1, 1, 0};
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  CHECK(qp != nullptr, "create_qp: %s", std::strerror(errno));
  connect_self(ctx, qp);
  auto* host = static_cast<uint8_t*>(std::aligned_alloc(4096, 3 * kMsg + 4096));
  ibv_mr* hmr = ibv_reg_mr(pd, host, 3 * kMsg + 4096, kAccess);
  CHECK(hmr != nullptr, "reg_mr: %s", std::strerror(errno));
  uint8_t* src = host;
  uint8_t* dst = host + kMsg;
  fill(src, kMsg, 0x5a);
  // RDMA WRITE into the dma-buf at MR offset 100.
  post_send(qp, IBV_WR_RDMA_WRITE, 1, {reinterpret_cast<uintptr_t>(src), kMsg, hmr->lkey},
            kIova + 100, dmr->rkey);
  expect_ok(cq, 1, IBV_WC_RDMA_WRITE, "RDMA WRITE into the dma-buf MR");
  CHECK(filled(view + kOff + 100, kMsg, 0x5a), "WRITE: bytes in the dma-buf differ");
  CHECK(untouched(view, 0, kOff + 100), "WRITE touched bytes before its range");
  CHECK(untouched(view, kOff + 100 + kMsg, kBufLen), "WRITE touched bytes after its range");
  // RDMA READ back from the same place.
  std::memset(dst, 0, kMsg);
  post_send(qp, IBV_WR_RDMA_READ, 2, {reinterpret_cast<uintptr_t>(dst), kMsg, hmr->lkey},
            kIova + 100, dmr->rkey);
  expect_ok(cq, 2, IBV_WC_RDMA_READ, "RDMA READ from the dma-buf MR");
  CHECK(filled(dst, kMsg, 0x5a), "READ: bytes differ");
  // SEND into a receive on the dma-buf MR (its SGE addresses are iovas).
  const uint64_t at = kMrLen - kMsg - 8;
  ibv_sge rsge{kIova + at, kMsg, dmr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 3;
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0, "post_recv");
  fill(src, kMsg, 0xc3);
  post_send(qp, IBV_WR_SEND, 4, {reinterpret_cast<uintptr_t>(src), kMsg, hmr->lkey}, 0, 0);
  // The send and the receive complete on one CQ in either order.
  bool sent = false, received = false;
  for (int i = 0; i < 2; ++i) {
    const ibv_wc wc = poll_one(cq, "SEND");
    CHECK(wc.status == IBV_WC_SUCCESS, "SEND: wr_id %llu status %s",
          static_cast<unsigned long long>(wc.wr_id), ibv_wc_status_str(wc.status));
    if (wc.wr_id == 4 && wc.opcode == IBV_WC_SEND) sent = true;
    if (wc.wr_id == 3 && wc.opcode == IBV_WC_RECV) {
      CHECK(wc.byte_len == kMsg, "receive: byte_len %u", wc.byte_len);
      received = true;
    }
  }
  CHECK(sent && received, "SEND: completions of the send %d and the receive %d", sent, received);
  std::printf("ok: SEND into a receive on the dma-buf MR\n");
  CHECK(filled(view + kOff + at, kMsg, 0xc3), "SEND: bytes in the dma-buf differ");
  CHECK(untouched(view, kOff + at + kMsg, kBufLen), "SEND touched bytes after its range");
  CHECK(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(cq) == 0, "destroy qp/cq");
  CHECK(ibv_dereg_mr(dmr) == 0, "dereg of the dma-buf MR");
  CHECK(ibv_dereg_mr(hmr) == 0, "dereg");
  std::free(host);
  munmap(view, kBufLen);
}

}  // namespace

int main(int argc, char** argv) {
  const bool vgem = argc > 1 && std::strcmp(argv[1], "--vgem") == 0;
  int dfd = -1, ro = -1;
  if (vgem) {
    dfd = vgem_dmabuf(&ro);
    if (dfd < 0) {
      std::printf("SKIP: no /dev/dri/card* exports dumb buffers (modprobe vgem)\n");
      return 77;
    }
  }
  ibv_context* ctx = burst::test::open_burst0();
  ibv_pd* pd = ibv_alloc_pd(ctx);
  CHECK(pd != nullptr, "alloc_pd: %s", std::strerror(errno));
  negatives(pd);
  if (vgem) {
    data_path(ctx, pd, dfd, ro);
    close(dfd);
    close(ro);
  }
  CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
  CHECK(ibv_close_device(ctx) == 0, "close_device");
  std::printf("PASS\n");
  return 0;
}
