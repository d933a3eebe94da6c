// SPDX-License-Identifier: MIT
/* The messages between the agent and its TLS front-end: framing, queue, descriptors. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "agentd_int.h"

uint32_t fctl_chan_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void header(uint8_t *h, uint8_t type, uint32_t id, size_t len)
{
	memset(h, 0, FCTL_CHAN_HDR);
	h[0] = type;
	put_u32(h + 4, id);
	put_u32(h + 8, (uint32_t)len);
}

bool fctl_chan_pending(const struct fctl_chan *ch)
{
	return ch->out_off < ch->out.len;
}

/* The queue emptied: wiped (requests carry SAKs) and its memory kept for the next. */
static void queue_wipe(struct fctl_chan *ch)
{
	if (ch->out.data)
		OPENSSL_cleanse(ch->out.data, ch->out.cap);
	ch->out.len = 0;
	ch->out_off = 0;
}

int fctl_chan_flush(struct fctl_chan *ch)
{
	while (fctl_chan_pending(ch)) {
		ssize_t k = send(ch->fd, ch->out.data + ch->out_off, ch->out.len - ch->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EAGAIN ? -EAGAIN : -errno;
		ch->out_off += (size_t)k;
	}
	queue_wipe(ch);
	return 0;
}

/* Room for n more bytes in the queue, so the appends that follow never realloc. When it
 * must grow, the bytes still to send move to a new buffer and the old one is wiped before
 * it is freed: a realloc would leave a copy of a queued frame (a request may carry a SAK)
 * in freed memory. 0 or -ENOMEM. */
static int queue_room(struct fctl_chan *ch, size_t n)
{
	struct fctl_buf *q = &ch->out;
	size_t pend = q->len - ch->out_off, cap;
	char *p;

	if (q->oom || n > SIZE_MAX / 4 - pend)
		return -ENOMEM;
	if (q->len + n + 1 <= q->cap)
		return 0;
	for (cap = q->cap ? q->cap : 4096; cap < pend + n + 1; cap *= 2)
		;
	p = malloc(cap);
	if (!p)
		return -ENOMEM;
	if (pend)
		memcpy(p, q->data + ch->out_off, pend);
	p[pend] = '\0';
	if (q->data) {
		OPENSSL_cleanse(q->data, q->cap);
		free(q->data);
	}
	q->data = p;
	q->len = pend;
	q->cap = cap;
	ch->out_off = 0;
	return 0;
}

int fctl_chan_send(struct fctl_chan *ch, uint8_t type, uint32_t id, const void *p1, size_t l1,
		   const void *p2, size_t l2)
{
	uint8_t h[FCTL_CHAN_HDR];
	int r;

	if (ch->fd < 0)
		return -EPIPE;
	if (l1 + l2 > UINT32_MAX)
		return -EMSGSIZE;
	r = queue_room(ch, FCTL_CHAN_HDR + l1 + l2);
	if (r < 0)
		return r;
	header(h, type, id, l1 + l2);
	fctl_buf_append(&ch->out, h, sizeof(h));
	if (l1)
		fctl_buf_append(&ch->out, p1, l1);
	if (l2)
		fctl_buf_append(&ch->out, p2, l2);
	if (ch->out.oom)
		return -ENOMEM;
	r = fctl_chan_flush(ch);
	return r == -EAGAIN ? 0 : r;
}

/* Waits until fd is writable (blocking sends on a non-blocking socket). */
static int wait_out(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	if (poll(&p, 1, -1) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

int fctl_chan_send_fds(struct fctl_chan *ch, uint8_t type, uint32_t id, const void *p, size_t l,
		       const int *fds, unsigned nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FCTL_CHAN_FDS)];
		struct cmsghdr align;
	} u;
	uint8_t m[FCTL_CHAN_HDR + FCTL_CHAN_SMALL];
	struct iovec iov = { m, FCTL_CHAN_HDR + l };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t off = 0;
	int r;

	if (nfds > FCTL_CHAN_FDS || l > FCTL_CHAN_SMALL)
		return -EINVAL;
	while ((r = fctl_chan_flush(ch)) == -EAGAIN)
		if ((r = wait_out(ch->fd)) < 0)
			return r;
	if (r < 0)
		return r;
	header(m, type, id, l);
	if (l)
		memcpy(m + FCTL_CHAN_HDR, p, l);
	if (nfds) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	/* the descriptors go with the first byte; the rest as the socket takes it */
	while (off < FCTL_CHAN_HDR + l) {
		ssize_t k;

		iov.iov_base = m + off;
		iov.iov_len = FCTL_CHAN_HDR + l - off;
		k = sendmsg(ch->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			if ((r = wait_out(ch->fd)) < 0)
				return r;
			continue;
		}
		if (k < 0)
			return -errno;
		off += (size_t)k;
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	}
	return 0;
}

/* recvmsg, keeping the descriptors that come with the bytes. */
static ssize_t recv_some(struct fctl_chan *ch, void *p, size_t n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FCTL_CHAN_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { p, n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	ssize_t k = recvmsg(ch->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t nf;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nf = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nf; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (ch->nfds < FCTL_ARRAY_SIZE(ch->fds))
				ch->fds[ch->nfds++] = fd;
			else
				close(fd);
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		return -EPROTO;
	return k;
}

/* The header is in: its type, zero bytes and length checked; the payload allocated. */
static int start_msg(struct fctl_chan *ch)
{
	uint32_t max;

	ch->type = ch->hdr[0];
	ch->id = fctl_chan_u32(ch->hdr + 4);
	ch->len = fctl_chan_u32(ch->hdr + 8);
	if (!ch->type || ch->type >= CH_MAX || ch->hdr[1] || ch->hdr[2] || ch->hdr[3])
		return -EPROTO;
	max = ch->type == CH_REQ || ch->type == CH_RESP ? ch->max_len : FCTL_CHAN_SMALL;
	if (ch->len > max)
		return -EPROTO;
	ch->msg = malloc((size_t)ch->len + 1);
	if (!ch->msg)
		return -ENOMEM;
	ch->msg[ch->len] = '\0';
	ch->msg_got = 0;
	return 0;
}

int fctl_chan_recv(struct fctl_chan *ch)
{
	for (;;) {
		ssize_t k;
		int r;

		if (ch->msg && ch->msg_got == ch->len)
			return 1;
		if (ch->hdr_got < FCTL_CHAN_HDR)
			k = recv_some(ch, ch->hdr + ch->hdr_got, FCTL_CHAN_HDR - ch->hdr_got);
		else
			k = recv_some(ch, ch->msg + ch->msg_got, ch->len - ch->msg_got);
		if (k == -EAGAIN)
			return 0;
		if (k == 0)
			return -EPIPE;
		if (k < 0)
			return (int)k;
		if (ch->hdr_got < FCTL_CHAN_HDR) {
			ch->hdr_got += (size_t)k;
			if (ch->hdr_got == FCTL_CHAN_HDR && (r = start_msg(ch)) < 0)
				return r;
		} else {
			ch->msg_got += (size_t)k;
		}
	}
}

void fctl_chan_done(struct fctl_chan *ch)
{
	if (ch->msg) {
		OPENSSL_cleanse(ch->msg, (size_t)ch->len + 1);
		free(ch->msg);
	}
	ch->msg = NULL;
	ch->hdr_got = ch->msg_got = 0;
}

void fctl_chan_release(struct fctl_chan *ch)
{
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
	fctl_chan_done(ch);
	queue_wipe(ch);
	fctl_buf_release(&ch->out);
	for (unsigned i = 0; i < ch->nfds; i++)
		close(ch->fds[i]);
	ch->nfds = 0;
}
