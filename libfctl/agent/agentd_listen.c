// SPDX-License-Identifier: MIT
/* The sockets the agent's loop watches: TCP and Unix listeners, link notifications. */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agentd_int.h"

static int split_addr(const char *s, char *host, size_t hl, char *port, size_t pl)
{
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= hl || !colon[1] || strlen(colon + 1) >= pl)
		return -EINVAL;
	if (s[0] == '[' && colon > s + 1 && colon[-1] == ']')
		snprintf(host, hl, "%.*s", (int)(colon - s - 2), s + 1);
	else
		snprintf(host, hl, "%.*s", (int)(colon - s), s);
	snprintf(port, pl, "%s", colon + 1);
	return 0;
}

int fctl_agentd_listen_tcp(const char *addr, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	char host[256], port[16];
	int fd = -1, one = 1, r;

	if (split_addr(addr, host, sizeof(host), port, sizeof(port)) < 0) {
		snprintf(err, errlen, "'%s': expected ADDR:PORT", addr);
		return -EINVAL;
	}
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (r) {
		snprintf(err, errlen, "'%s': %s", addr, gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(-r));
		if (fd >= 0)
			close(fd);
		fd = r;
	}
	freeaddrinfo(ai);
	return fd;
}

int fctl_agentd_listen_unix(struct agent *a, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *path = a->cfg.socket_path;
	char dir[PATH_MAX];
	char *slash;
	int fd, r;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "socket path '%s' is too long", path);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			snprintf(err, errlen, "cannot create '%s': %s", dir, strerror(-r));
			return r;
		}
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(path, a->ct.lim.has_gid ? 0660 : 0600) < 0 ||
	    (a->ct.lim.has_gid && chown(path, 0, a->ct.lim.gid) < 0) || listen(fd, 64) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on '%s': %s", path, strerror(-r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

int fctl_agentd_open_netlink(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}
