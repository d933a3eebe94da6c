// SPDX-License-Identifier: MIT
/*
 * Sequence-numbered UDP stream for the rotation lab test (tests/lab/rotation.sh).
 *
 *   seqstream send ADDR PORT RATE SECONDS   u64 sequence numbers (big endian) at RATE
 *                                           packets/s; prints "sent N" at the end
 *   seqstream recv PORT SECONDS [IDLE [LOG]]  counts until SECONDS passed, or IDLE seconds
 *                                           without a packet after the first one; prints
 *                                           "received R lost L reordered O duplicated D
 *                                           max_seq M socket_drops S rcvbuf B", then one "gap FIRST LAST
 *                                           before T after T" line per run of missing
 *                                           numbers (the first 64): T = the sender's
 *                                           CLOCK_REALTIME of the packets around the gap,
 *                                           to set beside the agents' audit timestamps;
 *                                           with LOG, one line "SEQ SENT_NS RECV_NS" per
 *                                           packet received (duplicates too), in arrival
 *                                           order, RECV_NS the receiver's CLOCK_REALTIME
 *                                           (the bench's receive gaps around a switch)
 * Without LOG the receiver reads in batches while packets flow: it sleeps BATCH_MS, then
 * reads what the socket holds (before the first packet and after a pause of 0.2 s it
 * waits in poll() as before). In a TCG guest each wakeup of a process costs about half a millisecond
 * of the host's CPU (qemu's threads hand the wakeup over several times); at 200
 * packets/s both ways, batching took a stream's cost from 1,451 to 1,025 ticks per 20
 * s (mean of four pairs, docs/lab.md). What is counted is the same: the socket keeps
 * every packet until it is read (SO_RCVBUFFORCE: 8 MiB) and counts any it
 * drops (SO_RXQ_OVFL), reported as socket_drops, and at the end (SECONDS or IDLE) what it
 * still holds is read and counted before the summary. With LOG each packet is read as
 * it arrives, so that RECV_NS is its arrival.
 * Lost = sequence numbers never received up to the highest one seen (plus the tail the
 * sender reports, compared by the test); reordered = a packet below the highest already
 * seen that was not seen before; duplicated = seen twice.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define NS_CAP (1u << 20) /* send times kept for the first NS_CAP numbers */
#define BATCH_MS 50	   /* without LOG: one read of the socket's backlog per BATCH_MS */

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int do_send(const char *addr, int port, double rate, double secs)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	double t0 = now();
	uint64_t seq = 0, fails = 0;
	uint8_t pkt[64] = { 0 };

	if (fd < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 || rate <= 0) {
		fprintf(stderr, "seqstream: bad address or rate\n");
		return 2;
	}
	signal(SIGTERM, on_term); /* ends the stream early: still prints what was sent */
	while (!stop) {
		double due = t0 + (double)seq / rate, t = now();
		struct timespec ts;

		if (due > t0 + secs)
			break;
		if (due > t) {
			double d = due - t;

			ts.tv_sec = (time_t)d;
			ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
		}
		{
			struct timespec rt;
			uint64_t ns;

			clock_gettime(CLOCK_REALTIME, &rt);
			ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
			for (int i = 0; i < 8; i++) {
				pkt[i] = (uint8_t)(seq >> (56 - 8 * i));
				pkt[8 + i] = (uint8_t)(ns >> (56 - 8 * i));
			}
		}
		/* a send error (no neighbour yet, ENOBUFS) is a packet lost: counted by the peer */
		if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			fails++;
		seq++;
	}
	printf("sent %llu send_errors %llu\n", (unsigned long long)seq, (unsigned long long)fails);
	close(fd);
	return 0;
}

static uint64_t realtime_ns(void)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
}

static int do_recv(int port, double secs, double idle, const char *logpath)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), rcv = 4 << 20, one = 1;
	socklen_t rcvlen = sizeof(rcv);
	uint32_t drops = 0; /* SO_RXQ_OVFL: packets this socket dropped, cumulative */
	size_t cap = 1 << 20;
	uint8_t *seen = calloc(cap, 1);
	uint64_t *sent_ns = calloc(NS_CAP, sizeof(uint64_t)); /* sender's time per seq */
	uint64_t received = 0, reordered = 0, dup = 0, max = 0;
	bool any = false, backlog = false;
	double t0 = now(), last = t0;
	FILE *log = NULL;

	if (fd < 0 || !seen || !sent_ns || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "seqstream: cannot bind port %d: %s\n", port, strerror(errno));
		return 2;
	}
	if (logpath && !(log = fopen(logpath, "we"))) {
		fprintf(stderr, "seqstream: cannot write %s: %s\n", logpath, strerror(errno));
		return 2;
	}
	/* The stream's own socket must not be where packets go missing: a sender that was
	 * starved of CPU (TCG guests, keymgr's TLS handshakes) catches up in a burst, and
	 * SO_RCVBUF is capped by net.core.rmem_max (208 KiB: ~90 small MACsec-decrypted
	 * skbs). SO_RCVBUFFORCE (root, as in the lab) gets the 4 MiB asked for (the kernel
	 * doubles it: rcvbuf 8388608 in the summary); overflow
	 * drops are still counted (SO_RXQ_OVFL) and reported, never hidden. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &rcvlen);
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint8_t pkt[128];
		uint64_t s = 0;
		ssize_t n;
		/* over: SECONDS passed, or IDLE without a packet; then what the socket still
		 * holds (arrived before) is read and counted, and the loop ends when it is empty */
		bool over = now() - t0 >= secs || (any && now() - last > idle);
		/* packets flowing (one in the last 0.2 s) and none left to read: sleep, then
		 * read the batch; otherwise wait in poll for the next one */
		bool batch = !log && !over && any && now() - last < 0.2;

		if (batch && !backlog) {
			struct timespec nap = { 0, BATCH_MS * 1000000L };

			nanosleep(&nap, NULL);
		}
		backlog = poll(&p, 1, over || batch ? 0 : 200) > 0;
		if (!backlog) {
			if (over)
				break;
			continue;
		}
		{
			union {
				struct cmsghdr h;
				char b[CMSG_SPACE(sizeof(uint32_t))];
			} cb;
			struct iovec iov = { .iov_base = pkt, .iov_len = sizeof(pkt) };
			struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b,
					     .msg_controllen = sizeof(cb.b) };
			struct cmsghdr *c;

			n = recvmsg(fd, &mh, 0);
			for (c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
				if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
					memcpy(&drops, CMSG_DATA(c), sizeof(drops));
		}
		if (n < 8)
			continue;
		for (int i = 0; i < 8; i++)
			s = s << 8 | pkt[i];
		last = now();
		if (log) {
			uint64_t sns = 0;

			for (int i = 8; i < 16 && n >= 16; i++)
				sns = sns << 8 | pkt[i];
			fprintf(log, "%llu %llu %llu\n", (unsigned long long)s,
				(unsigned long long)sns, (unsigned long long)realtime_ns());
		}
		if (s >= cap * 8)
			continue; /* beyond any test's stream: ignored */
		received++;
		if (seen[s / 8] & (1u << (s % 8))) {
			dup++;
			continue;
		}
		seen[s / 8] |= (uint8_t)(1u << (s % 8));
		if (n >= 16 && s < NS_CAP)
			for (int i = 8; i < 16; i++)
				sent_ns[s] = sent_ns[s] << 8 | pkt[i];
		if (any && s < max)
			reordered++;
		if (!any || s > max)
			max = s;
		any = true;
	}
	{
		uint64_t lost = 0;

		for (uint64_t s = 0; any && s <= max; s++)
			lost += !(seen[s / 8] & (1u << (s % 8)));
		printf("received %llu lost %llu reordered %llu duplicated %llu max_seq %llu "
		       "socket_drops %u rcvbuf %d\n",
		       (unsigned long long)(received - dup), (unsigned long long)lost,
		       (unsigned long long)reordered, (unsigned long long)dup,
		       (unsigned long long)max, drops, rcv);
		for (uint64_t s = 0, gaps = 0; any && s <= max && gaps < 64; s++) {
			uint64_t e = s;

			if (seen[s / 8] & (1u << (s % 8)))
				continue;
			while (e + 1 <= max && !(seen[(e + 1) / 8] & (1u << ((e + 1) % 8))))
				e++;
			printf("gap %llu %llu before %.3f after %.3f\n", (unsigned long long)s,
			       (unsigned long long)e, s && s - 1 < NS_CAP ? (double)sent_ns[s - 1] / 1e9 : 0.0,
			       e + 1 < NS_CAP ? (double)sent_ns[e + 1] / 1e9 : 0.0);
			gaps++;
			s = e;
		}
	}
	free(sent_ns);
	free(seen);
	close(fd);
	if (log && fclose(log) != 0) {
		fprintf(stderr, "seqstream: cannot write %s: %s\n", logpath, strerror(errno));
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "send") == 0)
		return do_send(argv[2], atoi(argv[3]), atof(argv[4]), atof(argv[5]));
	if (argc >= 4 && argc <= 6 && strcmp(argv[1], "recv") == 0)
		return do_recv(atoi(argv[2]), atof(argv[3]), argc >= 5 ? atof(argv[4]) : 3,
			       argc == 6 ? argv[5] : NULL);
	fprintf(stderr, "usage: seqstream send ADDR PORT RATE SECONDS | "
		"recv PORT SECONDS [IDLE [LOG]]\n");
	return 2;
}
