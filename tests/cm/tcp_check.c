/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A plain POSIX TCP program for rsockets' preload (tests/cm/ucma_test.sh, case rspreload): no RDMA
 * code, only socket/bind/listen/accept/connect/read/write/shutdown/close, so that under
 * LD_PRELOAD=librspreload.so every call runs on rsockets over rdma_cm.
 *
 *   tcp_check serve ADDR PORT        accept one connection, read to EOF, answer "BYTES HASH\n"
 *   tcp_check send PORT MIB ADDR     send MIB MiB of a pattern, half-close, compare the answer
 *
 * The hash is 64-bit FNV-1a over every byte; the client computes it over what it sent.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static struct sockaddr_in address(const char *ip, const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", ip);
		exit(2);
	}
	return a;
}

static int serve(const char *ip, const char *port)
{
	struct sockaddr_in a = address(ip, port);
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	static unsigned char buf[1 << 16];
	uint64_t h = 0xcbf29ce484222325ULL, total = 0;
	char reply[64];
	ssize_t n;
	int c;

	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1)) {
		perror("server: socket/bind/listen");
		return 1;
	}
	c = accept(ls, NULL, NULL);
	if (c < 0) {
		perror("server: accept");
		return 1;
	}
	while ((n = read(c, buf, sizeof(buf))) > 0) {
		h = fnv(h, buf, (size_t)n);
		total += (uint64_t)n;
	}
	if (n < 0) {
		perror("server: read");
		return 1;
	}
	n = snprintf(reply, sizeof(reply), "%" PRIu64 " %016" PRIx64 "\n", total, h);
	if (write(c, reply, (size_t)n) != n) {
		perror("server: write");
		return 1;
	}
	close(c);
	close(ls);
	printf("server: received %" PRIu64 " bytes\n", total);
	return 0;
}

static int send_data(const char *port, long mib, const char *ip)
{
	struct sockaddr_in a = address(ip, port);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	static unsigned char buf[1 << 16];
	uint64_t h = 0xcbf29ce484222325ULL, total = 0;
	char reply[64] = "", want[64];
	size_t got = 0;
	ssize_t n;

	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("client: socket/connect");
		return 1;
	}
	for (long block = 0; block < mib * 16; block++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (unsigned char)(block * 131 + i * 7 + (i >> 8));
		for (size_t off = 0; off < sizeof(buf); off += (size_t)n) {
			n = write(s, buf + off, sizeof(buf) - off);
			if (n <= 0) {
				perror("client: write");
				return 1;
			}
		}
		h = fnv(h, buf, sizeof(buf));
		total += sizeof(buf);
	}
	if (shutdown(s, SHUT_WR)) {
		perror("client: shutdown");
		return 1;
	}
	while (got < sizeof(reply) - 1 && (n = read(s, reply + got, sizeof(reply) - 1 - got)) > 0)
		got += (size_t)n;
	close(s);
	snprintf(want, sizeof(want), "%" PRIu64 " %016" PRIx64 "\n", total, h);
	if (strcmp(reply, want)) {
		fprintf(stderr, "client: the server saw \"%s\", sent %s", reply, want);
		return 1;
	}
	printf("client: %" PRIu64 " bytes sent and checked\n", total);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "serve"))
		return serve(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "send"))
		return send_data(argv[2], atol(argv[3]), argv[4]);
	fprintf(stderr, "usage: tcp_check serve ADDR PORT | send PORT MIB ADDR\n");
	return 2;
}
