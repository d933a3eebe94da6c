// SPDX-License-Identifier: MIT
/*
 * The agent's key hygiene: a process that cannot be dumped or traced by other users,
 * and request frames (an SA request's frame holds its SAK) wiped before they are freed.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "agentd_int.h"

void fctl_agentd_harden(void)
{
	struct rlimit no = { 0, 0 };

	/* no core file, and no /proc/PID/mem or ptrace for anyone without CAP_SYS_PTRACE */
	if (setrlimit(RLIMIT_CORE, &no) < 0)
		fctl_agentd_log("cannot turn core dumps off: %s", strerror(errno));
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fctl_agentd_log("cannot make the process non-dumpable: %s", strerror(errno));
}

void fctl_agentd_frame_free(struct conn *c)
{
	if (!c->frame)
		return;
	/* all of it, whatever part of the frame was read: the allocator's size, not the header's */
	fctl_memzero(c->frame, malloc_usable_size(c->frame));
	free(c->frame);
	c->frame = NULL;
}
