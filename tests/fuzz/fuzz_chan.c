// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the framing of the channel between the agent and its TLS front-end
 * (agentd_chan.c), which each side reads from a process it does not trust. The input is
 * the byte stream one side receives (first byte: the request/response length limit,
 * second: the size of the writes that deliver it). Every message fctl_chan_recv
 * completes must have a known type, zero padding, a length within its type's limit and
 * a NUL after it; sent on through fctl_chan_send to a peer that reads only when the
 * sender's socket is full (so the queue grows with messages in it), it must arrive byte
 * for byte. A stream the reader refuses ends it, as the agent ends a front-end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agentd_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int pair(struct fctl_chan *tx, struct fctl_chan *rx, uint32_t max_len)
{
	int sv[2], small = 1;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	memset(tx, 0, sizeof(*tx));
	memset(rx, 0, sizeof(*rx));
	tx->fd = sv[0];
	rx->fd = sv[1];
	tx->max_len = rx->max_len = max_len;
	return 0;
}

/* The message rx holds, checked, then sent through the second channel and read back. */
static void relay(const struct fctl_chan *in, struct fctl_chan *tx, struct fctl_chan *rx)
{
	uint32_t max = in->type == CH_REQ || in->type == CH_RESP ? in->max_len : FCTL_CHAN_SMALL;
	int r;

	if (!in->type || in->type >= CH_MAX || in->hdr[1] || in->hdr[2] || in->hdr[3] ||
	    in->len > max || !in->msg || in->msg[in->len] != '\0')
		abort();
	if (fctl_chan_send(tx, in->type, in->id, in->msg, in->len / 2, in->msg + in->len / 2,
			   in->len - in->len / 2) < 0)
		abort();
	while ((r = fctl_chan_recv(rx)) == 0)
		if ((r = fctl_chan_flush(tx)) < 0 && r != -EAGAIN)
			abort();
	if (r != 1 || rx->type != in->type || rx->id != in->id || rx->len != in->len ||
	    memcmp(rx->msg, in->msg, in->len) != 0)
		abort();
	fctl_chan_done(rx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fctl_chan src, in, tx, rx;
	size_t chunk, off = 2;
	uint32_t max_len;
	int r = 0;

	if (size < 2)
		return 0;
	max_len = 16 + (uint32_t)data[0] * 64;
	chunk = 1 + (size_t)data[1];
	if (pair(&src, &in, max_len) < 0)
		return 0;
	if (pair(&tx, &rx, max_len) < 0) {
		fctl_chan_release(&src);
		fctl_chan_release(&in);
		return 0;
	}
	while (off < size && r >= 0) {
		size_t n = size - off < chunk ? size - off : chunk;
		ssize_t k = write(src.fd, data + off, n);

		if (k <= 0)
			abort(); /* the reader drains after every write: room for one chunk */
		off += (size_t)k;
		while ((r = fctl_chan_recv(&in)) == 1) {
			relay(&in, &tx, &rx);
			fctl_chan_done(&in);
		}
		if (r < 0 && r != -EPROTO && r != -ENOMEM)
			abort();
	}
	fctl_chan_release(&src);
	fctl_chan_release(&in);
	fctl_chan_release(&tx);
	fctl_chan_release(&rx);
	return 0;
}
