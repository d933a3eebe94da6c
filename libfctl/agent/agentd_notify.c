// SPDX-License-Identifier: MIT
/* The agent's readiness protocol with systemd (sd_notify): ready, reloading, stopping. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agentd_int.h"

#ifdef FCTL_HAVE_SYSTEMD
/* One datagram to $NOTIFY_SOCKET, as systemd's notify protocol has it (sd_notify(3)): a
 * path, or an abstract name written with a leading '@'. The protocol is this small, so
 * the agent speaks it itself: linking libsystemd would load it and its six libraries
 * into every fabricctl command, the unchanged re-apply included. */
static void notify_send(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return; /* not under a Type=notify unit (or vsock, which the unit does not use) */
	n = strlen(path);
	if (n < 2 || n >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* best effort, as sd_notify: a lost notification is systemd's timeout to report */
	(void)sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (const struct sockaddr *)&sa,
		     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
	close(fd);
}

void fctl_agentd_notify(const char *state)
{
	struct timespec ts;
	char msg[96];

	/* a no-op outside a Type=notify unit (no $NOTIFY_SOCKET); the environment is kept
	 * so that a reload can say RELOADING=1 and READY=1 again */
	if (strcmp(state, "RELOADING=1") != 0) {
		notify_send(state);
		return;
	}
	/* systemd >= 253 matches a reload by this time stamp; older ones ignore it */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
		 (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000);
	notify_send(msg);
}
#else
void fctl_agentd_notify(const char *state)
{
	(void)state;
}
#endif
