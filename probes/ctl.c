// SPDX-License-Identifier: MIT
/*
 * The probe's control connection: TCP, one line per message, every wait
 * bounded. It carries the out-of-band QP exchange, the start and end of each
 * run and the server's counters back to the client.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ctl_connect(const char *host, const char *port, int timeout_ms, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int fd = -1, ret, one = 1;
	int64_t deadline = mono_ms() + timeout_ms;

	ret = getaddrinfo(host, port, &hints, &ai);
	if (ret != 0) {
		fctl_set_err(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	ret = -ETIMEDOUT;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		struct pollfd pfd;
		int soerr = 0, left;
		socklen_t sl = sizeof(soerr);

		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
			ret = -errno;
			goto next;
		}
		left = (int)(deadline - mono_ms());
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (left <= 0 || poll(&pfd, 1, left) <= 0) {
			ret = -ETIMEDOUT;
			goto next;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
			ret = soerr ? -soerr : -errno;
			goto next;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		freeaddrinfo(ai);
		return fd;
next:
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (ret == -ETIMEDOUT)
		fctl_set_err(err, errlen, "cannot reach '%s' port %s: no answer in %d ms", host, port,
			timeout_ms);
	else
		fctl_set_err(err, errlen, "cannot connect to '%s' port %s: %s", host, port, strerror(-ret));
	return ret;
}

int ctl_listen(const char *port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_INET6,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE },
			*ai = NULL;
	int fd, one = 1, zero = 0, ret;

	ret = getaddrinfo(NULL, port, &hints, &ai);
	if (ret != 0) {
		hints.ai_family = AF_INET;
		ret = getaddrinfo(NULL, port, &hints, &ai);
	}
	if (ret != 0) {
		fctl_set_err(err, errlen, "bad port '%s': %s", port, gai_strerror(ret));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 && ai->ai_family == AF_INET6) { /* no IPv6 in this kernel */
		freeaddrinfo(ai);
		hints.ai_family = AF_INET;
		if (getaddrinfo(NULL, port, &hints, &ai) != 0)
			return -EINVAL;
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	}
	if (fd < 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "cannot create a socket: %s", strerror(-ret));
		freeaddrinfo(ai);
		return ret;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 4) < 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "cannot listen on port %s: %s", port, strerror(-ret));
		close(fd);
		freeaddrinfo(ai);
		return ret;
	}
	freeaddrinfo(ai);
	return fd;
}

int ctl_send_buf(int fd, const struct fctl_buf *b)
{
	size_t off = 0;

	if (b->oom)
		return -ENOMEM;
	while (off < b->len) {
		ssize_t n = send(fd, b->data + off, b->len - off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	return 0;
}

int ctl_send(int fd, const char *fmt, ...)
{
	struct fctl_buf b = { 0 };
	va_list ap;
	int ret;

	va_start(ap, fmt);
	fctl_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	fctl_buf_putc(&b, '\n');
	ret = ctl_send_buf(fd, &b);
	fctl_buf_release(&b);
	return ret;
}

int ctl_recv_line(int fd, char *buf, size_t len, int timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	size_t n = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int left = (int)(deadline - mono_ms()), r;
		ssize_t got;
		char c;

		if (left < 0)
			left = 0;
		r = poll(&pfd, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		got = recv(fd, &c, 1, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -ECONNRESET;
		if (c == '\n') {
			buf[n] = '\0';
			return (int)n;
		}
		if (n + 1 >= len)
			return -EMSGSIZE;
		buf[n++] = c;
	}
}

bool ctl_field_u64(const char *line, const char *key, uint64_t *out)
{
	char v[32];

	return fctl_kv_word(line, key, v, sizeof(v)) && fctl_parse_u64(v, out) == 0;
}
