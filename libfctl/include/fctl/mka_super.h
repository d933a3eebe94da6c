/* SPDX-License-Identifier: MIT */
/*
 * Supervision of the wpa_supplicant of one MKA port (docs/mka.md, "Supervision by the
 * agent"): how healthy it is (its process, its control interface) and, from a series of
 * such observations, when to restart it. The decision is pure (no clock, no I/O): the
 * caller passes the time, so the backoff can be tested without waiting.
 *
 * Backoff: the first failure is restarted at once; while the port keeps failing, each
 * further restart waits twice as long as the one before (FCTL_MKA_SUP_BACKOFF_MS,
 * doubling, at most FCTL_MKA_SUP_BACKOFF_MAX_MS): never a tight loop. A port that stays
 * healthy for FCTL_MKA_SUP_STABLE_MS starts over at the first step. A control interface
 * that does not answer is "hung" only when it did not answer at two checks in a row (a
 * busy wpa_supplicant may miss one).
 */
#ifndef FCTL_MKA_SUPER_H
#define FCTL_MKA_SUPER_H

#include <stdbool.h>
#include <stdint.h>

#define FCTL_MKA_SUP_BACKOFF_MS 2000u
#define FCTL_MKA_SUP_BACKOFF_MAX_MS 60000u
#define FCTL_MKA_SUP_STABLE_MS 60000u
#define FCTL_MKA_SUP_PING_MS 500 /* how long a check waits for PONG */

enum fctl_mka_health {
	FCTL_MKA_OK,   /* running, the control interface answers PING */
	FCTL_MKA_DEAD, /* no wpa_supplicant of this port (pid file, /proc) */
	FCTL_MKA_HUNG, /* running, the control interface does not answer */
};

enum fctl_mka_action {
	FCTL_MKA_NONE,    /* healthy, or not yet known to be hung */
	FCTL_MKA_WAIT,    /* unhealthy, the backoff has not run out */
	FCTL_MKA_RESTART, /* restart it now (a hung one: stop it first) */
};

/* What the supervisor remembers of one port; zero-initialised for a new port. */
struct fctl_mka_sup {
	unsigned streak;     /* restarts since the port was last stable */
	unsigned unanswered; /* checks in a row the control interface did not answer */
	uint64_t next_ms;    /* no restart before this time */
	uint64_t ok_since;   /* healthy since (0: not healthy at the last check) */
};

/* The wait after the streak-th restart in a row (1 = the first): 0 for streak 0. */
uint64_t fctl_mka_sup_backoff_ms(unsigned streak);

/* One observation h of the port at now_ms: updates *s, returns what to do. On
 * FCTL_MKA_RESTART the restart counts as done (streak, next_ms). */
enum fctl_mka_action fctl_mka_sup_decide(struct fctl_mka_sup *s, enum fctl_mka_health h,
					 uint64_t now_ms);

/* The health of ifname's wpa_supplicant (run_dir NULL = the default): OK, DEAD or HUNG
 * (its PING unanswered within FCTL_MKA_SUP_PING_MS). */
enum fctl_mka_health fctl_mka_health(const char *ifname, const char *run_dir);

/* "ok", "dead", "hung". */
const char *fctl_mka_health_name(enum fctl_mka_health h);

/* Kills (SIGKILL) ifname's wpa_supplicant, found by its pid file and checked against
 * /proc: for a hung one that SIGTERM may not end. 0, -ESRCH when none runs, or a
 * negative errno. Does not wait. */
int fctl_mka_kill(const char *ifname, const char *run_dir);

#endif
