/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* What the kernel does with events an application has not read yet, checked
 * against burstd's pushed events (docs/cm.md "Relay fast path";
 * tests/cm/ucma_test.sh case "push"):
 *   cm_pushcheck DEST_ADDR
 *   migrate: an id's unread ADDR_RESOLVED on channel A, rdma_migrate_id to B:
 *            A is no longer readable, B is, the event is read from B, and
 *            rdma_destroy_id returns (events_reported matches what was read).
 *   destroy: an id's unread ADDR_RESOLVED, rdma_destroy_id: it returns (the
 *            unread event is not counted) and the channel is not readable.
 * Prints "PASS name" or "FAIL name: why"; exit 0 when every case passed.
 * A hang (librdmacm waiting for an event it will never get) ends in SIGALRM. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int readable(struct rdma_event_channel *ch, int ms) {
  struct pollfd p = {ch->fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static int fail(const char *name, const char *why) {
  printf("FAIL %s: %s\n", name, why);
  return 1;
}

/* An id on ch with its ADDR_RESOLVED queued and not read. */
static struct rdma_cm_id *unread_resolved(struct rdma_event_channel *ch, struct sockaddr_in *dst) {
  struct rdma_cm_id *id;
  if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) return NULL;
  if (rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, 2000) || !readable(ch, 5000)) {
    rdma_destroy_id(id);
    return NULL;
  }
  return id;
}

static int migrate(struct sockaddr_in *dst) {
  struct rdma_event_channel *a = rdma_create_event_channel(), *b = rdma_create_event_channel();
  struct rdma_cm_event *ev;
  if (!a || !b) return fail("migrate", "rdma_create_event_channel");
  struct rdma_cm_id *id = unread_resolved(a, dst);
  if (!id) return fail("migrate", "no ADDR_RESOLVED on A");
  if (readable(b, 0)) return fail("migrate", "B readable before the migration");
  if (rdma_migrate_id(id, b)) return fail("migrate", "rdma_migrate_id");
  if (readable(a, 0)) return fail("migrate", "A still readable after the migration");
  if (!readable(b, 2000)) return fail("migrate", "B not readable after the migration");
  if (rdma_get_cm_event(b, &ev)) return fail("migrate", "rdma_get_cm_event on B");
  int ok = ev->id == id && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED;
  rdma_ack_cm_event(ev);
  if (!ok) return fail("migrate", "not the id's ADDR_RESOLVED");
  if (readable(b, 0)) return fail("migrate", "B readable with nothing queued");
  rdma_destroy_id(id); /* hangs if events_reported counts more than was read */
  rdma_destroy_event_channel(a);
  rdma_destroy_event_channel(b);
  printf("PASS migrate\n");
  return 0;
}

static int destroy(struct sockaddr_in *dst) {
  struct rdma_event_channel *a = rdma_create_event_channel();
  if (!a) return fail("destroy", "rdma_create_event_channel");
  struct rdma_cm_id *id = unread_resolved(a, dst);
  if (!id) return fail("destroy", "no ADDR_RESOLVED");
  struct rdma_cm_id *other = unread_resolved(a, dst); /* behind it, stays */
  if (!other) return fail("destroy", "no second ADDR_RESOLVED");
  rdma_destroy_id(id); /* hangs if the unread event were counted as reported */
  struct rdma_cm_event *ev;
  if (!readable(a, 0) || rdma_get_cm_event(a, &ev)) return fail("destroy", "the other id's event is gone");
  int ok = ev->id == other;
  rdma_ack_cm_event(ev);
  if (!ok) return fail("destroy", "the destroyed id's event was delivered");
  if (readable(a, 100)) return fail("destroy", "readable with nothing queued");
  rdma_destroy_id(other);
  rdma_destroy_event_channel(a);
  printf("PASS destroy\n");
  return 0;
}

int main(int argc, char **argv) {
  struct sockaddr_in dst;
  memset(&dst, 0, sizeof(dst));
  dst.sin_family = AF_INET;
  if (argc != 2 || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) {
    fprintf(stderr, "usage: cm_pushcheck DEST_IPV4\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(30);
  int failed = migrate(&dst);
  failed += destroy(&dst);
  return failed ? 1 : 0;
}
