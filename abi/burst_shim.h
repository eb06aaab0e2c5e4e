/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libburst-shim.so: what libibverbs expects the kernel to do with completion
 * channels, done in the application's process. Shared by the shim, the
 * provider (which asks for a channel's peer end) and burstd (which writes the
 * events).
 *
 * `burstctl run` preloads the shim (LD_PRELOAD, ahead of the user's own
 * entries). On a kernel without RDMA, /dev/infiniband/uverbsN is a placeholder
 * character device 1:7 (as /dev/full, see burst_device.h) and libibverbs'
 * ibv_create_comp_channel() writes IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL to it.
 * The shim answers that one command the way the kernel does: it creates a
 * socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC), stores one end's number in
 * the response (resp.fd) and keeps the other end, the channel's *peer*.
 * Everything else goes to the real function:
 *
 *   write(fd, buf, 16)  fd is a 1:7 character device that is not /dev/full
 *                       itself (another inode: the node burstctl made), buf is
 *                       { command 17, in_words 4, out_words >= 1, response }:
 *                       the channel is created; any other write, on any fd,
 *                       goes to libc (so other commands on the node still fail
 *                       with /dev/full's ENOSPC, as without the shim).
 *   close(fd)           fd is a channel: its peer is closed too.
 *   ioctl               not intercepted: libibverbs probes RDMA_VERBS_IOCTL
 *                       once per context, gets ENOTTY from /dev/full and then
 *                       uses write() for every command.
 *
 * Events: burstd (or the provider) writes one record per completion event into
 * the peer, one record per write() (a datagram). ibv_get_cq_event() then reads
 * exactly sizeof(struct ib_uverbs_comp_event_desc) = 8 bytes from the channel
 * fd and takes the CQ from it:
 *
 *   offset 0, 8 bytes: cq_handle, host byte order: the value the provider gave
 *                      as the CQ's user handle, which must be the address of
 *                      the application's struct ibv_cq (libibverbs dereferences
 *                      it: cq_context, then ops->cq_event(cq)).
 *
 * The peer belongs to the shim: never close it. Send it to burstd with
 * SCM_RIGHTS (or dup() it); the shim closes its copy when the application
 * closes the channel (ibv_destroy_comp_channel). Writes into a peer whose
 * channel is gone fail with ECONNREFUSED. Each queued event costs about 1 KiB
 * of the peer's send buffer (SO_SNDBUF): write with MSG_DONTWAIT and treat
 * EAGAIN as "the application is not reading".
 *
 * rdma_cm event channels. librdmacm (rdma-core 44) opens
 * "/dev/infiniband/rdma_cm" (BURST_RDMA_CM_PATH) with open(O_RDWR|O_CLOEXEC),
 * requires fstat() to say S_ISCHR, then write()s UCMA commands to it
 * (<rdma/rdma_user_cm.h>: struct rdma_ucm_cmd_hdr {cmd, in, out} + the
 * command; the kernel copies the response to the command's `response`
 * pointer and write() returns the byte count) and polls it for events. The
 * shim serves that node from burstd (protocol: abi/burst_ctl_cm.h):
 *
 *   open / open64 / openat / openat64 of exactly BURST_RDMA_CM_PATH
 *                       a hidden control connection to burstd ($BURST_SOCKET or
 *                       the default path, HELLO first), and the channel fd: one
 *                       end of a socketpair(AF_UNIX, SOCK_SEQPACKET) (O_CLOEXEC /
 *                       O_NONBLOCK from the flags), whose other end goes to
 *                       burstd with CM_OPEN_CHANNEL (BURST_CTL_CM_OPEN_PUSH):
 *                       burstd sends every event there, so the fd is readable
 *                       exactly while events wait. A burstd that cannot push,
 *                       or BURST_CM_PUSH=0: an eventfd, which burstd keeps
 *                       readable while the channel has events queued. burstd
 *                       unreachable, or without a connection manager: -1 ENODEV.
 *   fstat / fstat64 / fstatat(fd, "", AT_EMPTY_PATH) / __fxstat(64) on a channel
 *                       S_IFCHR | 0666, st_rdev BURST_RDMA_CM_CDEV_MAJOR:MINOR
 *                       (the kernel's misc device); everything else as the kernel's.
 *   write(channel, cmd) the command relayed as CM_COMMAND (SET_OPTION's value
 *                       and MIGRATE_ID's fd resolved first, see burst_ctl_cm.h);
 *                       the response bytes copied to `response`; returns count,
 *                       or -1 with burstd's errno (EINVAL for a malformed
 *                       header, ENODEV once burstd is gone). GET_EVENT takes the
 *                       next pushed event from the socket (eventfd channel: a
 *                       round trip); none: waits (poll, together with the
 *                       hidden connection for burstd's hang-up) unless the fd
 *                       is O_NONBLOCK (then EAGAIN), without holding the
 *                       channel's locks: other threads' commands go on.
 *   close(channel)      the hidden connection is closed: burstd destroys the
 *                       channel's ids (DREQ for connections, REJ for pending
 *                       requests), as the kernel's ucma_close.
 *   read(channel)       not intercepted: librdmacm never reads the channel
 *                       (reading would take an event, or reset the eventfd).
 *   dup / dup2 / dup3 / fcntl(F_DUPFD*) / close_range / closefrom
 *                       a duplicate of a channel is the same channel; a channel
 *                       number closed or replaced is forgotten.
 *   fork()              the child closes its copies of the hidden connections
 *                       (pthread_atfork): its inherited channels answer ENODEV,
 *                       the parent's go on undisturbed.
 * Commands on one channel are serialised (a mutex per channel); a channel fd
 * is recognised by its number, in a table the hooks above keep (no system
 * call per write). class/misc/rdma_cm/abi_version in burstctl's sysfs tree says 4.
 *
 * C-compatible; needs no RDMA headers.
 */
#ifndef BURST_ABI_BURST_SHIM_H_
#define BURST_ABI_BURST_SHIM_H_

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The file name; `burstctl run` looks for it next to the provider. */
#define BURST_SHIM_LIBRARY_NAME "libburst-shim.so"
/* Overrides the path `burstctl run` preloads; set and empty: no shim. */
#define BURST_SHIM_ENV "BURST_SHIM"

/* The rdma_cm node librdmacm opens, and the device number its fstat() shows
 * (misc major 10; the kernel's minor is dynamic). */
#define BURST_RDMA_CM_PATH "/dev/infiniband/rdma_cm"
#define BURST_RDMA_CM_CDEV_MAJOR 10
#define BURST_RDMA_CM_CDEV_MINOR 58
/* class/misc/rdma_cm/abi_version: the UCMA ABI (RDMA_USER_CM_ABI_VERSION). */
#define BURST_RDMA_CM_ABI_VERSION 4

/* One completion event as read() returns it from a channel fd: the kernel
 * UAPI's struct ib_uverbs_comp_event_desc. */
#define BURST_SHIM_CQ_EVENT_SIZE 8

/* Writes the record for an event of the CQ whose user handle is
 * cq_user_handle ((uint64_t)(uintptr_t) of its struct ibv_cq *) into buf,
 * which has BURST_SHIM_CQ_EVENT_SIZE bytes. */
static inline void burst_shim_encode_cq_event(void *buf, uint64_t cq_user_handle) {
  memcpy(buf, &cq_user_handle, sizeof(cq_user_handle));
}

/* The peer end of a completion channel the shim created (see above), or -1
 * when channel_fd is not one (never created by the shim, closed, or the shim
 * is not loaded). Thread-safe and async-signal-safe. The provider does not
 * link the shim; it looks the function up at run time:
 *
 *   burst_shim_channel_peer_fn fn = (burst_shim_channel_peer_fn)
 *       dlsym(RTLD_DEFAULT, BURST_SHIM_CHANNEL_PEER_SYMBOL);
 *
 * (NULL: the application was not started by `burstctl run`.) */
int burst_shim_channel_peer(int channel_fd);
typedef int (*burst_shim_channel_peer_fn)(int channel_fd);
#define BURST_SHIM_CHANNEL_PEER_SYMBOL "burst_shim_channel_peer"

#ifdef __cplusplus
} /* extern "C" */
static_assert(sizeof(uint64_t) == BURST_SHIM_CQ_EVENT_SIZE, "one u64 per event");
#endif

#endif /* BURST_ABI_BURST_SHIM_H_ */
