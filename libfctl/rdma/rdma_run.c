// SPDX-License-Identifier: MIT
/*
 * The measurement loops. Latency: one message in flight, the time of every
 * post recorded (perftest's sample is the gap between consecutive posts).
 * Bandwidth: up to the QP's depth of work requests in flight. The timed path
 * neither allocates nor makes system calls of its own (the clock is read
 * through the vDSO; a provider's doorbell may still enter the kernel: rxe's
 * does) while completions come within SPIN_NS of the post or the last one:
 * after that a wait blocks (wait_step). The end of a run is marked in-band: a
 * send with immediate data (send tests) or the value 0xff in the last byte
 * (write latency).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "rdma_int.h"

#define STOP_IMM 0x46435450u /* "FCTP" */
#define DURATION_CAP (1u << 20) /* latency samples kept in --duration mode */
#define WR_RECV 1
#define WR_SEND 2
/* A wait spins (ibv_poll_cq, no system call) this long after the post or the
 * last completion, then blocks. Real RDMA completes in microseconds (a few tens
 * under load): 2 ms is a hundred times that, so a measurement on real hardware
 * never leaves the spin; past it the link is slow or stalled (soft-RoCE in an
 * emulated guest: 20-40 ms a sample) and the CPU is better given back. */
#define SPIN_NS 2000000u
#define BLOCK_MS 100	 /* longest block: the peer watch and stall timeout run between */
#define NAP_NS 500000	 /* memory waits (write_lat) after the spin: a 0.5 ms nap */

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

struct loop {
	struct fctl_rdma_ep *ep;
	const struct fctl_rdma_params *p;
	struct fctl_rdma_result *r;
	uint64_t last_progress;
	uint64_t spin_from; /* the first empty poll after the last post or completion */
	unsigned idle;	    /* empty polls since then */
	bool blocking;	    /* the spin is over: empty polls block */
	uint32_t sends_out; /* signalled sends not yet completed */
	uint64_t sends_done; /* send-queue completions */
	bool stop_seen;	    /* server: the client's end marker arrived */
	uint64_t recvs;	    /* receive completions (data) */
};

void fctl_rdma_result_release(struct fctl_rdma_result *r)
{
	if (!r)
		return;
	free(r->post_ns);
	r->post_ns = NULL;
}

/* 0: quiet (or only `ok` arrived), 1: the peer sent something (it gave up on the run),
 * 2: it hung up. */
static int peer_state(int fd, const char *ok)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLRDHUP };
	char c[16];
	ssize_t n;

	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	if (pfd.revents & (POLLHUP | POLLERR | POLLRDHUP))
		return 2;
	if (!(pfd.revents & POLLIN))
		return 0;
	n = recv(fd, c, ok && strlen(ok) < sizeof(c) ? strlen(ok) : 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return 2;
	if (n > 0 && ok && memcmp(c, ok, (size_t)n) == 0)
		return 0; /* the expected line (or its start) */
	return 1;
}

/* The duties of a wait at time t: the peer watch and the stall timeout, once no
 * completion came for 100 ms. */
static int idle_duties(struct loop *l, uint64_t t)
{
	if (t - l->last_progress < 100000000u)
		return 0;
	if (l->p->watch_fd >= 0) {
		int st = peer_state(l->p->watch_fd, l->p->watch_ok);

		if (st == 2) {
			snprintf(l->r->err, sizeof(l->r->err),
				 "the peer closed the control connection during the %s run",
				 fctl_rdma_test_name(l->p->test));
			return -ECONNRESET;
		}
		if (st == 1) {
			snprintf(l->r->err, sizeof(l->r->err), "the peer gave up the %s run",
				 fctl_rdma_test_name(l->p->test));
			return -ECONNABORTED;
		}
	}
	if (l->p->stall_ns && t - l->last_progress > l->p->stall_ns) {
		snprintf(l->r->err, sizeof(l->r->err),
			 "no completion for %.1f s during the %s run (peer gone or link down)",
			 (double)(t - l->last_progress) / 1e9, fctl_rdma_test_name(l->p->test));
		return -ETIMEDOUT;
	}
	return 0;
}

/* Blocks until the CQ's channel has an event, for at most BLOCK_MS. The first call
 * only arms the CQ and returns: the caller polls once more, as a completion queued
 * before the arming raises no event. An event is acked as soon as it is taken (the
 * CQ is destroyed with none unacked). A stale event (armed, then the completion was
 * reaped by polling) only wakes the wait once. */
static int block_cq(struct loop *l)
{
	struct fctl_rdma_ep *ep = l->ep;
	struct pollfd pfd = { .fd = ep->comp_ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_ctx;
	int ret;

	if (!ep->cq_armed) {
		ret = ibv_req_notify_cq(ep->cq, 0);
		if (ret) {
			ret = ret > 0 ? -ret : -EIO;
			snprintf(l->r->err, sizeof(l->r->err),
				 "arming the completion queue failed: %s", strerror(-ret));
			return ret;
		}
		ep->cq_armed = true;
		return 0;
	}
	ret = poll(&pfd, 1, BLOCK_MS);
	if (ret < 0 && errno != EINTR) {
		ret = -errno;
		snprintf(l->r->err, sizeof(l->r->err), "waiting for a completion failed: %s",
			 strerror(-ret));
		return ret;
	}
	if (ret > 0 && ibv_get_cq_event(ep->comp_ch, &cq, &cq_ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		ep->cq_armed = false;
	}
	return 0;
}

/* After an empty poll. Spins (returns at once, no system call) until SPIN_NS have
 * passed since the first empty poll after the last post or completion; then each
 * call blocks for at most BLOCK_MS: on the completion channel, or for a memory wait
 * (no completion announces the peer's RDMA write) in a NAP_NS sleep. The idle
 * duties run every 1024 spins and after every block. */
static int wait_step(struct loop *l, bool on_memory)
{
	uint64_t t;
	int ret;

	if (l->idle++ == 0) {
		l->spin_from = now_ns();
		l->blocking = false;
		return 0;
	}
	if (!l->blocking) {
		if (l->idle & 63)
			return 0;
		t = now_ns();
		if (t - l->spin_from < SPIN_NS)
			return (l->idle & 1023) ? 0 : idle_duties(l, t);
		l->blocking = true;
	}
	if (on_memory) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = NAP_NS };

		nanosleep(&ts, NULL);
	} else if ((ret = block_cq(l)) < 0) {
		return ret;
	}
	return idle_duties(l, now_ns());
}

static int bad_wc(struct loop *l, const struct ibv_wc *wc)
{
	if (!l->r->wc_status)
		l->r->wc_status = wc->status;
	snprintf(l->r->err, sizeof(l->r->err),
		 "%s completion failed: %s (status %d, vendor error 0x%x)",
		 wc->wr_id == WR_RECV ? "receive" : "send", ibv_wc_status_str(wc->status),
		 wc->status, wc->vendor_err);
	return -EIO;
}

static int post_recv(struct fctl_rdma_ep *ep)
{
	struct ibv_sge sge = { .addr = (uintptr_t)ep->buf,
			       .length = ep->opts.max_size,
			       .lkey = ep->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret = ibv_post_recv(ep->qp, &wr, &bad);

	return ret > 0 ? -ret : ret;
}

/* op on size bytes of this end's send area; RDMA ops address the peer's areas. */
static int post_send(struct loop *l, enum ibv_wr_opcode op, uint32_t size, bool stop)
{
	struct fctl_rdma_ep *ep = l->ep;
	struct ibv_sge sge = { .addr = (uintptr_t)(ep->buf + ep->opts.max_size),
			       .length = size,
			       .lkey = ep->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_SEND, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	int ret;

	if (op == IBV_WR_RDMA_READ) {
		sge.addr = (uintptr_t)ep->buf; /* into our receive area */
		wr.wr.rdma.remote_addr = ep->remote.vaddr + ep->opts.max_size;
		wr.wr.rdma.rkey = ep->remote.rkey;
	} else if (op == IBV_WR_RDMA_WRITE) {
		wr.wr.rdma.remote_addr = ep->remote.vaddr;
		wr.wr.rdma.rkey = ep->remote.rkey;
	}
	if (stop) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = STOP_IMM;
	}
	if (op != IBV_WR_RDMA_READ && size <= ep->max_inline && fctl_rdma_test_is_lat(l->p->test))
		wr.send_flags |= IBV_SEND_INLINE;
	l->idle = 0; /* a wait's spin starts afresh */
	ret = ibv_post_send(ep->qp, &wr, &bad);
	if (ret) {
		snprintf(l->r->err, sizeof(l->r->err), "posting a work request failed: %s",
			 strerror(ret > 0 ? ret : -ret));
		return ret > 0 ? -ret : ret;
	}
	l->sends_out++;
	return 0;
}

/* Polls once; returns the number of completions handled (>= 0) or an error.
 * *recvd counts receive completions; server loops repost receives and spot the stop. */
static int poll_once(struct loop *l, unsigned *recvd, bool repost)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(l->ep->cq, 16, wc);

	if (n < 0) {
		snprintf(l->r->err, sizeof(l->r->err), "polling the completion queue failed");
		return -EIO;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return bad_wc(l, &wc[i]);
		if (wc[i].opcode & IBV_WC_RECV) {
			if ((wc[i].wc_flags & IBV_WC_WITH_IMM) && wc[i].imm_data == STOP_IMM) {
				l->stop_seen = true;
				continue;
			}
			(*recvd)++;
			if (repost) {
				int ret = post_recv(l->ep);

				if (ret < 0) {
					snprintf(l->r->err, sizeof(l->r->err),
						 "posting a receive failed: %s", strerror(-ret));
					return ret;
				}
			}
		} else {
			l->sends_out--;
			l->sends_done++;
		}
	}
	if (n > 0) {
		l->idle = 0;
		l->last_progress = now_ns();
	}
	return n;
}

/* Waits until no signalled send is outstanding. */
static int drain_sends(struct loop *l)
{
	unsigned recvd = 0;

	while (l->sends_out) {
		int n = poll_once(l, &recvd, false);

		if (n < 0)
			return n;
		if (n == 0 && (n = wait_step(l, false)) < 0)
			return n;
	}
	return 0;
}

/* Keeps `depth` receives posted (they stay across runs of one session). */
static int top_up_recvs(struct fctl_rdma_ep *ep, uint32_t *posted)
{
	while (*posted < ep->depth) {
		int ret = post_recv(ep);

		if (ret < 0)
			return ret;
		(*posted)++;
	}
	return 0;
}

static int prepare(struct fctl_rdma_ep *ep, const struct fctl_rdma_params *p, struct fctl_rdma_result *r)
{
	int ret;

	memset(ep->buf, 0, ep->buf_len);
	if (p->size == 0 || p->size > ep->opts.max_size) {
		snprintf(r->err, sizeof(r->err), "message size %u is outside 1..%u", p->size,
			 ep->opts.max_size);
		return -EINVAL;
	}
	ret = top_up_recvs(ep, &ep->recvs_posted);
	if (ret < 0)
		snprintf(r->err, sizeof(r->err), "posting receives failed: %s", strerror(-ret));
	return ret;
}

int fctl_rdma_prepare(struct fctl_rdma_ep *ep, const struct fctl_rdma_params *p,
		      struct fctl_rdma_result *r)
{
	memset(r, 0, sizeof(*r));
	return prepare(ep, p, r);
}

static volatile uint8_t *last_byte(struct fctl_rdma_ep *ep, uint32_t size, bool send_area)
{
	return ep->buf + (send_area ? ep->opts.max_size : 0) + size - 1;
}

static int client_lat(struct loop *l, uint64_t target, uint64_t end)
{
	struct fctl_rdma_ep *ep = l->ep;
	const struct fctl_rdma_params *p = l->p;
	uint64_t *post = l->r->post_ns, i;
	volatile uint8_t *mine = last_byte(ep, p->size, false);
	int n;

	for (i = 0; i < target; i++) {
		unsigned recvd = 0;
		uint8_t v = (uint8_t)(i % 250 + 1);

		post[i] = now_ns();
		if (!p->iters && post[i] >= end)
			break;
		switch (p->test) {
		case FCTL_RDMA_SEND_LAT:
			if ((n = post_send(l, IBV_WR_SEND, p->size, false)) < 0)
				return n;
			while (!recvd) {
				if ((n = poll_once(l, &recvd, false)) < 0)
					return n;
				if (n == 0 && (n = wait_step(l, false)) < 0)
					return n;
			}
			ep->recvs_posted--;
			if ((n = post_recv(ep)) < 0)
				return n;
			ep->recvs_posted++;
			break;
		case FCTL_RDMA_WRITE_LAT:
			*last_byte(ep, p->size, true) = v;
			if ((n = post_send(l, IBV_WR_RDMA_WRITE, p->size, false)) < 0)
				return n;
			while (*mine != v) {
				if ((n = poll_once(l, &recvd, false)) < 0)
					return n;
				if (n == 0 && (n = wait_step(l, true)) < 0)
					return n;
			}
			l->last_progress = now_ns();
			break;
		default: /* read */
			if ((n = post_send(l, IBV_WR_RDMA_READ, p->size, false)) < 0)
				return n;
			while (l->sends_out) {
				if ((n = poll_once(l, &recvd, false)) < 0)
					return n;
				if (n == 0 && (n = wait_step(l, false)) < 0)
					return n;
			}
			break;
		}
		/* keep the send queue from filling with completions not yet reaped */
		if (l->sends_out + 2 >= ep->depth && (n = drain_sends(l)) < 0)
			return n;
	}
	l->r->elapsed_ns = now_ns() - post[0];
	l->r->iters = i;
	if (p->test == FCTL_RDMA_WRITE_LAT) {
		*last_byte(ep, p->size, true) = 0xff;
		if ((n = post_send(l, IBV_WR_RDMA_WRITE, p->size, false)) < 0)
			return n;
	} else if (p->test == FCTL_RDMA_SEND_LAT) {
		if ((n = post_send(l, IBV_WR_SEND, p->size, true)) < 0)
			return n;
	}
	return drain_sends(l);
}

/* Bandwidth: up to depth work requests in flight. Bidirectional send: receives are
 * reposted as they complete, and the loop ends when the peer's end marker came too. */
static int client_bw(struct loop *l, uint64_t target, uint64_t end)
{
	struct fctl_rdma_ep *ep = l->ep;
	const struct fctl_rdma_params *p = l->p;
	enum ibv_wr_opcode op = p->test == FCTL_RDMA_SEND_BW	 ? IBV_WR_SEND
				: p->test == FCTL_RDMA_WRITE_BW ? IBV_WR_RDMA_WRITE
								: IBV_WR_RDMA_READ;
	bool both_send = p->bidirectional && p->test == FCTL_RDMA_SEND_BW;
	uint64_t posted = 0, t0 = now_ns();
	int n;

	while (l->sends_done < target) {
		unsigned recvd = 0;

		while (posted < target && posted - l->sends_done < ep->depth) {
			if ((n = post_send(l, op, p->size, false)) < 0)
				return n;
			posted++;
		}
		if (!p->iters && now_ns() >= end)
			target = posted;
		n = poll_once(l, &recvd, both_send);
		if (n < 0)
			return n;
		if (n == 0 && (n = wait_step(l, false)) < 0)
			return n;
	}
	l->r->elapsed_ns = now_ns() - t0;
	l->r->iters = l->sends_done;
	if (p->test == FCTL_RDMA_SEND_BW && (n = post_send(l, IBV_WR_SEND, p->size, true)) < 0)
		return n;
	if ((n = drain_sends(l)) < 0)
		return n;
	while (both_send && !l->stop_seen) {
		unsigned recvd = 0;

		if ((n = poll_once(l, &recvd, true)) < 0)
			return n;
		if (n == 0 && (n = wait_step(l, false)) < 0)
			return n;
	}
	if (both_send)
		ep->recvs_posted--; /* the peer's end marker used one */
	return 0;
}

static int run_bw(struct loop *l)
{
	const struct fctl_rdma_params *p = l->p;
	struct fctl_rdma_result *r = l->r;
	uint64_t target = p->iters ? p->iters : UINT64_MAX, c0 = cpu_ns();
	int ret;

	l->last_progress = now_ns();
	ret = client_bw(l, target, l->last_progress + p->duration_ns);
	r->cpu_ns = cpu_ns() - c0;
	if (ret < 0)
		return ret;
	r->bytes = r->iters * p->size;
	if (r->elapsed_ns) {
		r->gbps = (double)r->bytes * 8 / (double)r->elapsed_ns;
		r->msg_rate_mpps = (double)r->iters * 1000 / (double)r->elapsed_ns;
	}
	return 0;
}

bool fctl_rdma_params_server_active(const struct fctl_rdma_params *p)
{
	return fctl_rdma_test_server_active(p->test) ||
	       (p->bidirectional && !fctl_rdma_test_is_lat(p->test));
}

int fctl_rdma_run_client(struct fctl_rdma_ep *ep, const struct fctl_rdma_params *p,
			 struct fctl_rdma_result *r)
{
	struct loop l = { .ep = ep, .p = p, .r = r };
	uint64_t target = p->iters ? p->iters : UINT64_MAX, end, c0;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!p->iters && !p->duration_ns) {
		snprintf(r->err, sizeof(r->err), "neither iterations nor a duration");
		return -EINVAL;
	}
	ret = prepare(ep, p, r);
	if (ret < 0)
		return ret;
	if (fctl_rdma_test_is_lat(p->test)) {
		if (!p->iters)
			target = DURATION_CAP;
		r->post_ns = calloc(target, sizeof(*r->post_ns)); /* zeroed: pages touched now */
		if (!r->post_ns) {
			snprintf(r->err, sizeof(r->err), "out of memory for %" PRIu64 " samples",
				 target);
			return -ENOMEM;
		}
		memset(r->post_ns, 0xff, target * sizeof(*r->post_ns));
	}
	if (!fctl_rdma_test_is_lat(p->test))
		return run_bw(&l);
	c0 = cpu_ns();
	l.last_progress = now_ns();
	end = l.last_progress + p->duration_ns;
	ret = client_lat(&l, target, end);
	r->cpu_ns = cpu_ns() - c0;
	if (ret < 0)
		return ret;
	r->bytes = r->iters * p->size;
	if (r->elapsed_ns) {
		r->gbps = (double)r->bytes * 8 / (double)r->elapsed_ns;
		r->msg_rate_mpps = (double)r->iters * 1000 / (double)r->elapsed_ns;
	}
	return 0;
}

int fctl_rdma_run_server(struct fctl_rdma_ep *ep, const struct fctl_rdma_params *p,
			 struct fctl_rdma_result *r)
{
	struct loop l = { .ep = ep, .p = p, .r = r };
	volatile uint8_t *mine = last_byte(ep, p->size, false);
	uint64_t i = 0, c0 = cpu_ns();
	int n = 0;

	if (p->bidirectional && !fctl_rdma_test_is_lat(p->test)) {
		if (!p->iters && !p->duration_ns) {
			snprintf(r->err, sizeof(r->err), "neither iterations nor a duration");
			return -EINVAL;
		}
		return run_bw(&l); /* the client's loop, towards the client */
	}
	l.last_progress = now_ns();
	switch (p->test) {
	case FCTL_RDMA_SEND_LAT:
	case FCTL_RDMA_SEND_BW:
		while (!l.stop_seen) {
			unsigned recvd = 0;

			n = poll_once(&l, &recvd, true);
			if (n < 0)
				break;
			if (n == 0 && (n = wait_step(&l, false)) < 0)
				break;
			for (unsigned k = 0; k < recvd && p->test == FCTL_RDMA_SEND_LAT; k++) {
				if ((n = post_send(&l, IBV_WR_SEND, p->size, false)) < 0)
					goto out;
				i++;
			}
			if (p->test == FCTL_RDMA_SEND_BW)
				i += recvd;
			if (l.sends_out + 2 >= ep->depth && (n = drain_sends(&l)) < 0)
				goto out;
		}
		if (n >= 0) {
			ep->recvs_posted--; /* the stop marker used one */
			n = drain_sends(&l);
		}
		break;
	case FCTL_RDMA_WRITE_LAT:
		for (;;) {
			uint8_t v = (uint8_t)(i % 250 + 1), seen;
			unsigned recvd = 0;

			while ((seen = *mine) != v && seen != 0xff) {
				if ((n = poll_once(&l, &recvd, false)) < 0)
					goto out;
				if (n == 0 && (n = wait_step(&l, true)) < 0)
					goto out;
			}
			if (seen == 0xff)
				break;
			l.last_progress = now_ns();
			*last_byte(ep, p->size, true) = v;
			if ((n = post_send(&l, IBV_WR_RDMA_WRITE, p->size, false)) < 0)
				goto out;
			i++;
			if (l.sends_out + 2 >= ep->depth && (n = drain_sends(&l)) < 0)
				goto out;
		}
		n = drain_sends(&l);
		break;
	default:
		break; /* the client reads and writes our memory; nothing to do */
	}
out:
	r->iters = i;
	r->cpu_ns = cpu_ns() - c0;
	return n < 0 ? n : 0;
}
