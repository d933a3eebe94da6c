// SPDX-License-Identifier: MIT
/*
 * The front-end channel's queue (agentd_chan.c) leaves no copy of a queued frame in
 * freed memory: free and realloc are wrapped at link time (-Wl,--wrap) and every block
 * they are handed is searched for a marker that only the queued "SAK" frames carry.
 * The peer reads nothing while 64 such frames are queued (its socket buffers are as
 * small as the kernel allows), so the queue must grow with frames in it; then every
 * frame must arrive intact, in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentd_int.h"

static const char marker[] = "\x5a\xa5SAK-MARKER-29-5\xa5\x5a";
static unsigned found; /* blocks freed or moved by realloc that held the marker */
static bool watching;

void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

static void search(void *p)
{
	size_t n;

	if (!watching || !p)
		return;
	n = malloc_usable_size(p);
	if (n >= sizeof(marker) - 1 && memmem(p, n, marker, sizeof(marker) - 1))
		found++;
}

void *__wrap_realloc(void *p, size_t n)
{
	search(p);
	return __real_realloc(p, n);
}

void __wrap_free(void *p)
{
	search(p);
	__real_free(p);
}

/* A frame of len bytes: index i in its first 4 bytes, the marker, then filler. */
static void frame(uint8_t *f, size_t len, uint32_t i)
{
	memset(f, (int)(0x20 + i % 64), len);
	memcpy(f, &i, sizeof(i));
	memcpy(f + 4, marker, sizeof(marker) - 1);
}

static void test_queue_grows_without_leaving_frames(void **state)
{
	struct fctl_chan tx = { .fd = -1 }, rx = { .fd = -1 };
	int sv[2], small = 1;
	uint8_t f[3000], g[3000];
	unsigned got = 0;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	tx.fd = sv[0];
	rx.fd = sv[1];
	rx.max_len = sizeof(f);
	watching = true;
	for (uint32_t i = 0; i < 64; i++) {
		size_t len = 1000 + (size_t)i * 30;

		frame(f, len, i);
		assert_int_equal(fctl_chan_send(&tx, CH_REQ, i + 1, f, len, NULL, 0), 0);
	}
	assert_true(fctl_chan_pending(&tx)); /* the peer read nothing: the queue holds frames */
	while (got < 64) {
		int r = fctl_chan_recv(&rx);

		if (r == 0) {
			r = fctl_chan_flush(&tx);
			assert_true(r == 0 || r == -EAGAIN);
			continue;
		}
		assert_int_equal(r, 1);
		frame(g, 1000 + (size_t)got * 30, got);
		assert_int_equal(rx.type, CH_REQ);
		assert_int_equal(rx.id, got + 1);
		assert_int_equal(rx.len, 1000 + got * 30);
		assert_memory_equal(rx.msg, g, rx.len);
		fctl_chan_done(&rx);
		got++;
	}
	assert_false(fctl_chan_pending(&tx));
	fctl_chan_release(&tx);
	fctl_chan_release(&rx);
	watching = false;
	assert_int_equal(found, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_grows_without_leaving_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
