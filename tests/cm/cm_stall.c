/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* An rdma_cm application that stops where a test wants it (tests/cm/robust_test.sh):
 *   cm_stall server ADDR PORT BACKLOG GO_FILE  listen; print "REQ n" per CONNECT_REQUEST;
 *       accept the oldest pending request once GO_FILE exists; print every other event
 *       as "EVENT name status" and exit 0 on the first one (1 on ACCEPT_ERR).
 *   cm_stall client ADDR PORT                  connect; print "CONNECTING" once the REQ is
 *       out, then "EVENT name status" for the first event after it; exit 0.
 *   cm_stall flood ADDR PORT N                 N connects on one channel; count the events
 *       by name ("COUNT name n") until all N ended or 60 s passed; exit 0.
 *   cm_stall lazy ADDR PORT BACKLOG GO_FILE N  listen, read no event until GO_FILE exists
 *       (the backlog fills), then accept every request; exit 0 once N are ESTABLISHED.
 * Every wait is bounded (20 s): "TIMEOUT" and exit 2. */
#include <errno.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct rdma_event_channel *ch;

static int wait_event(int ms, struct rdma_cm_event **ev) {
  struct pollfd p = {ch->fd, POLLIN, 0};
  if (poll(&p, 1, ms) != 1) return -1;
  return rdma_get_cm_event(ch, ev);
}

static int addr_of(const char *a, const char *port, struct rdma_addrinfo **rai, int passive) {
  struct rdma_addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_port_space = RDMA_PS_TCP;
  if (passive) hints.ai_flags = RAI_PASSIVE;
  return rdma_getaddrinfo(a, port, &hints, rai);
}

static int make_qp(struct rdma_cm_id *id) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 4;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  return rdma_create_qp(id, NULL, &a);
}

static int counts[RDMA_CM_EVENT_ADDR_CHANGE + 2];

/* The next event of `id` of type `want`; the other ids' events on the channel
 * (a flood's earlier connects) are counted and acknowledged. */
static int wait_for(struct rdma_cm_id *id, enum rdma_cm_event_type want) {
  struct rdma_cm_event *ev;
  while (!wait_event(20000, &ev)) {
    int mine = ev->id == id, type = ev->event;
    if (!mine && type <= RDMA_CM_EVENT_ADDR_CHANGE) counts[type]++;
    rdma_ack_cm_event(ev);
    if (mine) return type == (int)want ? 0 : -1;
  }
  return -1;
}

/* resolve address and route, create the QP, connect. */
static int start_connect(struct rdma_cm_id *id, struct rdma_addrinfo *rai) {
  if (rdma_resolve_addr(id, NULL, rai->ai_dst_addr, 5000)) return -1;
  if (wait_for(id, RDMA_CM_EVENT_ADDR_RESOLVED)) return -1;
  if (rdma_resolve_route(id, 5000)) return -1;
  if (wait_for(id, RDMA_CM_EVENT_ROUTE_RESOLVED)) return -1;
  if (make_qp(id)) return -1;
  struct rdma_conn_param cp;
  memset(&cp, 0, sizeof(cp));
  cp.retry_count = 3;
  return rdma_connect(id, &cp);
}

static int server(char **argv) {
  struct rdma_addrinfo *rai;
  struct rdma_cm_id *lid, *pending[64];
  int n = 0, reqs = 0;
  if (addr_of(argv[0], argv[1], &rai, 1) || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
      rdma_bind_addr(lid, rai->ai_src_addr) || rdma_listen(lid, atoi(argv[2]))) {
    perror("listen");
    return 1;
  }
  printf("LISTENING\n");
  for (int waited = 0; waited < 60000; waited += 100) {
    struct rdma_cm_event *ev;
    if (n > 0 && access(argv[3], F_OK) == 0) {
      struct rdma_cm_id *id = pending[0];
      memmove(pending, pending + 1, --n * sizeof(pending[0]));
      if (make_qp(id) || rdma_accept(id, NULL)) {
        printf("ACCEPT_ERR %d\n", errno);
        return 1;
      }
      printf("ACCEPTED\n");
      unlink(argv[3]);
    }
    if (wait_event(100, &ev)) continue;
    if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
      printf("REQ %d\n", ++reqs);
      if (n < 64) pending[n++] = ev->id;
      rdma_ack_cm_event(ev);
      continue;
    }
    printf("EVENT %s %d\n", rdma_event_str(ev->event), ev->status);
    return 0;
  }
  printf("TIMEOUT\n");
  return 2;
}

static int client(char **argv) {
  struct rdma_addrinfo *rai;
  struct rdma_cm_id *id;
  struct rdma_cm_event *ev;
  if (addr_of(argv[0], argv[1], &rai, 0) || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
      start_connect(id, rai)) {
    perror("connect");
    return 1;
  }
  printf("CONNECTING\n");
  if (wait_event(20000, &ev)) {
    printf("TIMEOUT\n");
    return 2;
  }
  printf("EVENT %s %d\n", rdma_event_str(ev->event), ev->status);
  return 0;
}

static int flood(char **argv) {
  struct rdma_addrinfo *rai;
  int n = atoi(argv[2]);
  if (addr_of(argv[0], argv[1], &rai, 0)) return 1;
  for (int i = 0; i < n; ++i) {
    struct rdma_cm_id *id;
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) || start_connect(id, rai)) {
      printf("CONNECT_ERR after %d\n", i);
      break;
    }
  }
  printf("CONNECTING %d\n", n);
  /* Until every connect has ended (established or an error) or 60 s passed. */
  time_t end = time(NULL) + 60;
  int ended = counts[RDMA_CM_EVENT_REJECTED] + counts[RDMA_CM_EVENT_UNREACHABLE] +
              counts[RDMA_CM_EVENT_CONNECT_ERROR] + counts[RDMA_CM_EVENT_ESTABLISHED];
  while (ended < n && time(NULL) < end) {
    struct rdma_cm_event *ev;
    if (wait_event(200, &ev)) continue;
    if ((int)ev->event <= RDMA_CM_EVENT_ADDR_CHANGE) counts[ev->event]++;
    if (ev->event == RDMA_CM_EVENT_REJECTED || ev->event == RDMA_CM_EVENT_UNREACHABLE ||
        ev->event == RDMA_CM_EVENT_CONNECT_ERROR || ev->event == RDMA_CM_EVENT_ESTABLISHED)
      ended++;
    rdma_ack_cm_event(ev);
  }
  for (int e = 0; e <= RDMA_CM_EVENT_ADDR_CHANGE; ++e)
    if (counts[e]) printf("COUNT %s %d\n", rdma_event_str(e), counts[e]);
  return 0;
}

static int lazy(char **argv) {
  struct rdma_addrinfo *rai;
  struct rdma_cm_id *lid;
  int n = atoi(argv[4]), accepted = 0, established = 0;
  if (addr_of(argv[0], argv[1], &rai, 1) || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
      rdma_bind_addr(lid, rai->ai_src_addr) || rdma_listen(lid, atoi(argv[2]))) {
    perror("listen");
    return 1;
  }
  printf("LISTENING\n");
  for (int waited = 0; access(argv[3], F_OK) != 0; waited += 100) {
    if (waited >= 60000) {
      printf("TIMEOUT\n");
      return 2;
    }
    usleep(100000);
  }
  time_t end = time(NULL) + 60;
  while (established < n && time(NULL) < end) {
    struct rdma_cm_event *ev;
    if (wait_event(200, &ev)) continue;
    int type = ev->event;
    struct rdma_cm_id *id = ev->id;
    rdma_ack_cm_event(ev);
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      if (make_qp(id) || rdma_accept(id, NULL)) {
        printf("ACCEPT_ERR %d\n", errno);
        return 1;
      }
      printf("ACCEPTED %d\n", ++accepted);
    } else if (type == RDMA_CM_EVENT_ESTABLISHED) {
      printf("ESTABLISHED %d\n", ++established);
    } else {
      printf("EVENT %s\n", rdma_event_str(type));
    }
  }
  if (established < n) printf("TIMEOUT\n");
  return established < n ? 2 : 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("PID %d\n", (int)getpid());
  if (argc < 4) {
    fprintf(stderr, "usage: cm_stall server|client|flood ADDR PORT [...]\n");
    return 1;
  }
  ch = rdma_create_event_channel();
  if (!ch) {
    perror("rdma_create_event_channel");
    return 1;
  }
  if (!strcmp(argv[1], "server") && argc == 6) return server(argv + 2);
  if (!strcmp(argv[1], "client")) return client(argv + 2);
  if (!strcmp(argv[1], "flood") && argc == 5) return flood(argv + 2);
  if (!strcmp(argv[1], "lazy") && argc == 7) return lazy(argv + 2);
  fprintf(stderr, "usage: cm_stall server|client|flood ADDR PORT [...]\n");
  return 1;
}
