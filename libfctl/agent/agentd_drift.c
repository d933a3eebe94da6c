// SPDX-License-Identifier: MIT
/* The agent's drift scheduling: debounced and periodic checks, the repair worker. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "agentd_int.h"
#include "fctl/rotation.h"

void fctl_agentd_drift_schedule(struct agent *a, unsigned ms)
{
	struct itimerspec its = { .it_value = { .tv_sec = ms / 1000,
						.tv_nsec = (long)(ms % 1000) * 1000000 + 1 } };

	timerfd_settime(a->debounce_tfd, 0, &its, NULL);
}

void fctl_agentd_after_write(struct agent *a)
{
	struct fctl_history_entry *v = NULL;
	size_t n = 0;

	if (fctl_engine_history(&a->eo, &v, &n) == 0) { /* else the drift check says what it can */
		a->st.applied = n > 0;
		a->st.applied_version = n ? v[n - 1].version : 0;
		free(v);
	}
	fctl_agentd_drift_schedule(a, 200);
}

static void spawn_repair(struct agent *a, uint64_t version)
{
	pid_t pid;

	fflush(NULL); /* the program's buffered output, written once: not again by a child */
	pid = fork();
	if (pid == 0) {
		struct fctl_agent_request rq = { .type = FCTL_MSG_ROLLBACK, .to_version = version,
						 .host = a->cfg.host, .state_dir = a->cfg.state_dir,
						 .netns = a->cfg.netns, .options = FCTL_OPT_JSON };

		/* output to /dev/null, errors to the agent's log; a writer: not sandboxed */
		fctl_agentd_exec_worker(a, open("/dev/null", O_WRONLY | O_CLOEXEC), 2, &rq, false);
	}
	if (pid > 0) {
		a->repair_child = pid;
		a->writers++;
	}
}

void fctl_agentd_drift_check(struct agent *a, const char *why)
{
	struct fctl_drift_report rep;
	char err[512] = "";
	bool was;

	if (a->writers) {
		fctl_agentd_drift_schedule(a, 1000); /* after the apply in progress */
		return;
	}
	{
		char rdir[PATH_MAX];

		fctl_rotation_dir(a->cfg.state_dir, a->cfg.netns, rdir, sizeof(rdir));
		if (fctl_rotation_busy(rdir, NULL, 0)) {
			/* SAs of two keys are live: after the rotation */
			fctl_agentd_drift_schedule(a, 2000);
			return;
		}
	}
	if (fctl_drift_check(&a->eo, &rep, err, sizeof(err)) < 0) {
		fctl_agentd_log("drift check (%s) failed: %s", why, err);
		return;
	}
	was = a->st.drift_known && a->st.drift;
	a->st.drift_checks++;
	a->st.drift_known = true;
	a->st.drift = rep.ops > 0;
	snprintf(a->st.drift_ifnames, sizeof(a->st.drift_ifnames), "%s", rep.ifnames);
	a->st.drift_last_check = fctl_agentd_wall();
	a->st.applied = rep.applied;
	a->st.applied_version = rep.version;
	if (rep.ops) {
		char d[700];

		a->st.drift_detected++;
		snprintf(d, sizeof(d), "%s version %" PRIu64 ": %zu operation%s to repair (%s)",
			 rep.profile, rep.version, rep.ops, rep.ops == 1 ? "" : "s", rep.summary);
		if (!was || a->cfg.drift_repair)
			fctl_agentd_audit_event(a, "drift", "detected", NULL, d);
		if (a->cfg.drift_repair && !a->repair_child)
			spawn_repair(a, rep.version);
	} else if (was) {
		fctl_agentd_audit_event(a, "drift", "cleared", NULL, NULL);
	}
}
