// SPDX-License-Identifier: MIT
/* Supervision of one MKA port's wpa_supplicant: its health, the restart decision and backoff. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>

#include "fctl/mka.h"
#include "fctl/mka_super.h"

uint64_t fctl_mka_sup_backoff_ms(unsigned streak)
{
	uint64_t ms = FCTL_MKA_SUP_BACKOFF_MS;

	if (streak == 0)
		return 0;
	for (unsigned i = 1; i < streak && ms < FCTL_MKA_SUP_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms > FCTL_MKA_SUP_BACKOFF_MAX_MS ? FCTL_MKA_SUP_BACKOFF_MAX_MS : ms;
}

enum fctl_mka_action fctl_mka_sup_decide(struct fctl_mka_sup *s, enum fctl_mka_health h,
					 uint64_t now_ms)
{
	if (h == FCTL_MKA_OK) {
		s->unanswered = 0;
		if (!s->ok_since)
			s->ok_since = now_ms ? now_ms : 1;
		if (now_ms - s->ok_since >= FCTL_MKA_SUP_STABLE_MS)
			s->streak = 0;
		return FCTL_MKA_NONE;
	}
	s->ok_since = 0;
	if (h == FCTL_MKA_HUNG && ++s->unanswered < 2)
		return FCTL_MKA_NONE;
	if (now_ms < s->next_ms)
		return FCTL_MKA_WAIT;
	s->streak++;
	s->unanswered = 0;
	s->next_ms = now_ms + fctl_mka_sup_backoff_ms(s->streak);
	return FCTL_MKA_RESTART;
}

enum fctl_mka_health fctl_mka_health(const char *ifname, const char *run_dir)
{
	char ctrl[PATH_MAX + 16], reply[16];
	pid_t pid;

	if (fctl_mka_pid(ifname, run_dir, &pid) < 0)
		return FCTL_MKA_DEAD;
	fctl_mka_ctrl_path(ifname, run_dir, ctrl, sizeof(ctrl));
	if (fctl_mka_ctrl_request(ctrl, "PING", reply, sizeof(reply), FCTL_MKA_SUP_PING_MS) < 4 ||
	    reply[0] != 'P')
		return FCTL_MKA_HUNG;
	return FCTL_MKA_OK;
}

const char *fctl_mka_health_name(enum fctl_mka_health h)
{
	return h == FCTL_MKA_OK ? "ok" : h == FCTL_MKA_DEAD ? "dead" : "hung";
}

int fctl_mka_kill(const char *ifname, const char *run_dir)
{
	pid_t pid;
	int r = fctl_mka_pid(ifname, run_dir, &pid);

	if (r < 0)
		return r;
	return kill(pid, SIGKILL) < 0 ? -errno : 0;
}
