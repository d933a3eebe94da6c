// SPDX-License-Identifier: MIT
/*
 * Pipelined writes (fctl_nl_exec_batch): a window of requests sent in one sendmsg on a
 * raw netlink socket of their own, the answers read back in as few recvmmsg calls as
 * they fit and matched to their requests by sequence number (nl_int.h, fctl_nli_pipe).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>

#include "nl_int.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

/* answers read per recvmmsg, and the room of each (an ACK with its extended-ACK text is
 * well under 1 KiB: the request is never echoed, NETLINK_CAP_ACK) */
#define RECV_VEC 16
#define RECV_ONE 8192

int fctl_nli_pipe_socket(int protocol)
{
	/* bound: the kernel chooses the port; not connected: an unconnected netlink socket
	 * sends to the kernel already, and connect(2) is not in the read-only worker's
	 * seccomp list (every session opens these sockets, a plan's too) */
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1, rcvbuf = 1 << 20;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	/* room for a window's ACKs (FCTL_NL_WINDOW_MAX of them fit the default too); the
	 * kernel caps it at its rmem_max, which is no error */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	return fd;
}

int fctl_nli_pipe_send(int fd, struct nl_msg *const *msgs, size_t n, uint32_t seq0)
{
	size_t total = 0, at = 0;
	uint8_t *buf;
	ssize_t w;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		total += NLMSG_ALIGN(nlmsg_hdr(msgs[i])->nlmsg_len);
	buf = calloc(1, total ? total : 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct nlmsghdr *h = (struct nlmsghdr *)(buf + at);

		memcpy(h, nlmsg_hdr(msgs[i]), nlmsg_hdr(msgs[i])->nlmsg_len);
		h->nlmsg_seq = seq0 + (uint32_t)i;
		h->nlmsg_pid = 0;
		h->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
		at += NLMSG_ALIGN(h->nlmsg_len);
	}
	do
		w = send(fd, buf, total, 0); /* no address: to the kernel */
	while (w < 0 && errno == EINTR);
	if (w < 0)
		r = -errno;
	else if ((size_t)w != total)
		r = -EMSGSIZE;
	fctl_memzero(buf, total); /* SA adds carry their keys */
	free(buf);
	return r;
}

void fctl_nli_pipe_take(struct fctl_nli_pipe *p, const void *buf, size_t len)
{
	int left = len > INT32_MAX ? INT32_MAX : (int)len;

	for (const struct nlmsghdr *h = (const struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
		uint32_t i = h->nlmsg_seq - p->seq0;
		struct fctl_nli_slot *s;
		struct nlmsgerr *e;

		if (i >= p->n || p->slot[i].answered) {
			p->stray++; /* not ours, or a second answer: the first one stands */
			continue;
		}
		if (h->nlmsg_type != NLMSG_ERROR)
			continue; /* a write is answered by its ACK or error alone */
		s = &p->slot[i];
		s->answered = true;
		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e))) {
			s->rc = -EPROTO;
			continue;
		}
		e = NLMSG_DATA(h);
		s->rc = e->error <= 0 ? e->error : -e->error;
		if (s->rc < 0 && s->err)
			fctl_nli_extack_copy(e, s->err);
	}
}

static size_t unanswered(const struct fctl_nli_pipe *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++)
		n += !p->slot[i].answered;
	return n;
}

/*
 * rtnetlink and generic netlink handle a request inside the sendmsg that carries it
 * (netlink_unicast_kernel calls the family's input at once, which walks every message of
 * the buffer in order, netlink_rcv_skb, and queues each one's ACK or error before the
 * next is looked at): when fctl_nli_pipe_send returns, every answer the window will ever
 * get is in the socket's queue. So the queue is read without waiting, to its end; a
 * request still unanswered then (its ACK lost to a full queue, ENOBUFS, or never sent by
 * the kernel) has an unknown outcome: -EPROTO (-ENOBUFS after an overrun) with err saying
 * so. Reading stops early once every request has its answer.
 */
int fctl_nli_pipe_collect(int fd, struct fctl_nli_pipe *p)
{
	struct mmsghdr mv[RECV_VEC];
	struct iovec iov[RECV_VEC];
	struct sockaddr_nl from[RECV_VEC];
	bool overrun = false;
	uint8_t *buf = malloc((size_t)RECV_VEC * RECV_ONE);
	int r = 0;

	if (!buf)
		return -ENOMEM;
	while (unanswered(p)) {
		int m;

		memset(mv, 0, sizeof(mv));
		for (int k = 0; k < RECV_VEC; k++) {
			iov[k] = (struct iovec){ .iov_base = buf + (size_t)k * RECV_ONE,
						 .iov_len = RECV_ONE };
			mv[k].msg_hdr.msg_iov = &iov[k];
			mv[k].msg_hdr.msg_iovlen = 1;
			mv[k].msg_hdr.msg_name = &from[k];
			mv[k].msg_hdr.msg_namelen = sizeof(from[k]);
		}
		m = recvmmsg(fd, mv, RECV_VEC, MSG_DONTWAIT, NULL);
		if (m < 0 && errno == EINTR)
			continue;
		if (m < 0 && errno == ENOBUFS) {
			overrun = true;
			continue;
		}
		if (m < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (m < 0) {
			r = -errno;
			break;
		}
		if (m == 0)
			break;
		/* the socket is not connected: only the kernel's (port 0) answers count, as
		 * a connected socket would have let through nothing else */
		for (int k = 0; k < m; k++)
			if (mv[k].msg_hdr.msg_namelen < sizeof(from[k]) ||
			    from[k].nl_family != AF_NETLINK || from[k].nl_pid == 0)
				fctl_nli_pipe_take(p, iov[k].iov_base, mv[k].msg_len);
	}
	free(buf);
	for (size_t i = 0; i < p->n; i++) {
		struct fctl_nli_slot *s = &p->slot[i];

		if (s->answered)
			continue;
		s->rc = overrun ? -ENOBUFS : r < 0 ? r : -EPROTO;
		s->unknown = true;
		if (s->err) {
			s->err->extack[0] = '\0';
			snprintf(s->err->extack, sizeof(s->err->extack),
				 "no answer from the kernel: the request may have been applied");
		}
	}
	return r;
}

/* --- fctl_nl_exec_batch --- */

static bool is_macsec_kind(enum fctl_op_kind k)
{
	switch (k) {
	case FCTL_OP_RXSC_ADD:
	case FCTL_OP_RXSC_UPD:
	case FCTL_OP_RXSC_DEL:
	case FCTL_OP_RXSA_ADD:
	case FCTL_OP_RXSA_UPD:
	case FCTL_OP_RXSA_DEL:
	case FCTL_OP_TXSA_ADD:
	case FCTL_OP_TXSA_UPD:
	case FCTL_OP_TXSA_DEL:
		return true;
	default:
		return false;
	}
}

/* One request and its answer is all op takes: no follow-up fctl_nl_exec makes after it
 * depends on the answer in a way a window cannot keep (a link delete empties the ifindex
 * map; address generation turned to none removes addresses read after it). A LINK_ADD's
 * address generation follows in a window of its own. */
static bool one_request(const struct fctl_op *op)
{
	if (op->kind == FCTL_OP_LINK_DEL)
		return false;
	if (op->kind == FCTL_OP_LINK_CHANGE && (op->changes & FCTL_CHG_ADDRGEN) &&
	    op->link.addrgen == FCTL_ADDRGEN_NONE)
		return false;
	return true;
}

/* Sends the n messages as one window on fd and collects the answers into rc/errs
 * (errs may be NULL). Counts n writes and one round trip. */
static int window(struct fctl_nl *nl, int fd, struct nl_msg *const *msgs, size_t n, int *rc,
		  bool *unknown, struct fctl_nl_err *errs)
{
	struct fctl_nli_slot *slot = calloc(n, sizeof(*slot));
	struct fctl_nli_pipe p = { .seq0 = nl->pipe_seq, .n = n, .slot = slot };
	int r;

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		slot[i].err = errs ? &errs[i] : NULL;
	nl->pipe_seq += (uint32_t)n;
	nl->stats.writes += n;
	nl->stats.round_trips++;
	r = fctl_nli_pipe_send(fd, msgs, n, p.seq0);
	if (r == 0)
		r = fctl_nli_pipe_collect(fd, &p);
	for (size_t i = 0; i < n; i++) {
		/* a send that failed sent nothing: every request fails with its errno */
		rc[i] = r < 0 && !slot[i].answered ? r : slot[i].rc;
		unknown[i] = slot[i].unknown || (r < 0 && !slot[i].answered);
	}
	free(slot);
	return 0;
}

static void what_of(const struct fctl_op *op, char *what, size_t n)
{
	if (is_macsec_kind(op->kind))
		fctl_nli_macsec_what(op, what, n);
	else
		fctl_nli_link_what(op, what, n);
}

/* The address generation of the links ops[i] created (rc[i] == 0, has_addrgen), in one
 * window, before anything brings them up: fctl_nl_exec's second request. A failure is
 * the LINK_ADD's (rc[i], errs[i]). */
static void addrgen_window(struct fctl_nl *nl, const struct fctl_op *const *ops, size_t n,
			   int *rc, struct fctl_nl_err *errs)
{
	struct nl_msg **msgs = calloc(n, sizeof(*msgs));
	size_t *idx = calloc(n, sizeof(*idx));
	int *arc = calloc(n, sizeof(*arc));
	bool *unk = calloc(n, sizeof(*unk));
	size_t m = 0;
	int r = 0;

	if (!msgs || !idx || !arc || !unk)
		r = -ENOMEM;
	for (size_t i = 0; i < n && r == 0; i++) {
		if (ops[i]->kind != FCTL_OP_LINK_ADD || !ops[i]->link.has_addrgen || rc[i] != 0)
			continue;
		r = fctl_nli_addrgen_msg(ops[i], &msgs[m]);
		if (r < 0) {
			rc[i] = r; /* and the links after it keep theirs unset: failed too */
			if (errs)
				fctl_nli_err_set(&errs[i], r, "addrgenmode request");
			for (size_t j = i + 1; j < n; j++)
				if (ops[j]->kind == FCTL_OP_LINK_ADD && ops[j]->link.has_addrgen &&
				    rc[j] == 0)
					rc[j] = r;
			break;
		}
		idx[m++] = i;
	}
	if (m && window(nl, nl->pipe_rt, msgs, m, arc, unk, NULL) < 0)
		r = -ENOMEM;
	for (size_t k = 0; k < m; k++) {
		const struct fctl_op *op = ops[idx[k]];
		char what[96], w[128];
		int a = r < 0 ? r : arc[k];

		fctl_nl_msg_free(msgs[k]);
		/* no IPv6 on the link: no address can be made on it, as "none" asks */
		if (a == 0 || (a == -EAFNOSUPPORT && op->link.addrgen == FCTL_ADDRGEN_NONE))
			continue;
		rc[idx[k]] = a;
		if (!errs)
			continue;
		fctl_nli_link_what(op, what, sizeof(what));
		snprintf(w, sizeof(w), "%s: addrgenmode %s", what, fctl_addrgen_name(op->link.addrgen));
		if (unk[k])
			snprintf(errs[idx[k]].extack, sizeof(errs[idx[k]].extack),
				 "no answer from the kernel: the request may have been applied");
		else
			errs[idx[k]].extack[0] = '\0';
		fctl_nli_err_set(&errs[idx[k]], a, w);
	}
	if (!msgs || !idx || !arc || !unk) {
		for (size_t i = 0; i < n; i++)
			if (ops[i]->kind == FCTL_OP_LINK_ADD && ops[i]->link.has_addrgen && rc[i] == 0)
				rc[i] = -ENOMEM;
	}
	free(msgs);
	free(idx);
	free(arc);
	free(unk);
}

int fctl_nl_exec_batch(struct fctl_nl *nl, const struct fctl_op *const *ops,
		       const uint8_t *const *keys, const size_t *key_lens, size_t n, int *rc,
		       struct fctl_nl_err *errs)
{
	struct nl_msg **msgs = calloc(n ? n : 1, sizeof(*msgs));
	bool *cached = calloc(n ? n : 1, sizeof(*cached)), *unk = calloc(n ? n : 1, sizeof(*unk));
	bool gen = n && is_macsec_kind(ops[0]->kind), simple = true;
	size_t built = 0;
	int family = 0, r = 0;

	for (size_t i = 0; i < n; i++) {
		rc[i] = FCTL_NL_NOT_RUN;
		if (errs)
			fctl_nli_err_clear(&errs[i]);
		simple = simple && one_request(ops[i]) && is_macsec_kind(ops[i]->kind) == gen;
	}
	if (n && (!msgs || !cached || !unk)) {
		r = rc[0] = -ENOMEM;
		goto out;
	}
	if (n < 2 || !simple || nl->pipe_rt < 0 || nl->pipe_gen < 0) {
		/* op by op, as fctl_nl_exec, up to the first failure */
		for (size_t i = 0; i < n && r == 0; i++)
			r = rc[i] = fctl_nl_exec(nl, ops[i], keys ? keys[i] : NULL,
						 key_lens ? key_lens[i] : 0, errs ? &errs[i] : NULL);
		goto out;
	}
	if (gen) {
		family = fctl_nli_macsec_family(nl, errs);
		if (family < 0) {
			rc[0] = r = family;
			goto out;
		}
	}
	/* every message first (the lookups they need are reads); one that cannot be built
	 * ends the window before it: what was built goes, the rest is not run */
	for (; built < n; built++) {
		const struct fctl_op *op = ops[built];
		struct fctl_nl_err *e = errs ? &errs[built] : NULL;
		char what[96];

		what_of(op, what, sizeof(what));
		if (gen)
			r = fctl_nli_macsec_prepare(nl, family, op, what, keys ? keys[built] : NULL,
						    key_lens ? key_lens[built] : 0, false,
						    &cached[built], &msgs[built], e);
		else
			r = fctl_nli_link_prepare(nl, op, what, false, &cached[built], &msgs[built],
						  e);
		if (r < 0) {
			rc[built] = r;
			break;
		}
	}
	if (built) {
		int w = window(nl, gen ? nl->pipe_gen : nl->pipe_rt, msgs, built, rc, unk, errs);

		if (w < 0) {
			for (size_t i = 0; i < built; i++)
				rc[i] = w;
		}
	}
	for (size_t i = 0; i < built; i++) {
		char what[96];

		fctl_nl_msg_free(msgs[i]);
		msgs[i] = NULL;
		if (rc[i] == 0)
			continue;
		if (rc[i] == -ENODEV && cached[i] && !unk[i]) {
			/* the cached ifindex may be stale: drop the map, this op again alone
			 * (the others of the window do not depend on it) */
			fctl_nli_ifmap_invalidate(nl);
			rc[i] = fctl_nl_exec(nl, ops[i], keys ? keys[i] : NULL,
					     key_lens ? key_lens[i] : 0, errs ? &errs[i] : NULL);
			continue;
		}
		what_of(ops[i], what, sizeof(what));
		if (errs)
			fctl_nli_err_set(&errs[i], rc[i], what);
	}
	if (!gen)
		addrgen_window(nl, ops, built, rc, errs);
	r = 0;
out:
	for (size_t i = 0; i < n && !r; i++)
		if (rc[i] < 0)
			r = rc[i];
	free(msgs);
	free(cached);
	free(unk);
	return r;
}
