// SPDX-License-Identifier: MIT
/* The agent's readiness protocol with systemd (sd_notify): ready, reloading, stopping. */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "agentd_int.h"

#ifdef FCTL_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

void fctl_agentd_notify(const char *state)
{
	struct timespec ts;

	/* a no-op outside a Type=notify unit (no $NOTIFY_SOCKET); the environment is kept
	 * so that a reload can say RELOADING=1 and READY=1 again */
	if (strcmp(state, "RELOADING=1") != 0) {
		sd_notify(0, state);
		return;
	}
	/* systemd >= 253 matches a reload by this time stamp; older ones ignore it */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
		   (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000);
}
#else
void fctl_agentd_notify(const char *state)
{
	(void)state;
}
#endif
