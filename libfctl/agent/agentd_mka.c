// SPDX-License-Identifier: MIT
/* The agent's supervision of the MKA ports' wpa_supplicants: checks, restarts, backoff. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentd_int.h"
#include "fctl/audit.h"
#include "fctl/mka_host.h"
#include "fctl/mka_rotate.h"
#include "fctl/mka_super.h"

#define MAX_PORTS 64

/* What the last mka-state record of a port said (audited again when it changes). */
struct seen_state {
	bool recorded, secured;
	char ckn[65], kcv[FCTL_AUDIT_KCV_LEN + 1], key_server[32];
};

struct port {
	char ifname[FCTL_IFNAMSIZ + 8];
	struct fctl_mka_sup sup;
	bool seen; /* in the applied profile at this check */
	bool step; /* its CAK rotation has a step to take at this check */
	bool step_failed; /* the last step failed (audited once until one succeeds) */
	struct seen_state last;
};

struct fctl_agentd_mka {
	int tfd;
	unsigned every_ms; /* the timer's interval now: CHECK_MS, or IDLE_MS without ports */
	struct port ports[MAX_PORTS];
	size_t n;
	/* the applied profile as of the newest history entry (seq, sha256): reloaded only
	 * when that entry changes, not at every check */
	struct fctl_profile *prof;
	uint64_t prof_seq;
	char prof_sha[65];
	size_t next_step; /* where the next check's search for a rotation step starts */
	pid_t child;	/* the restart (or rotation step) worker running, 0 = none */
	char child_port[FCTL_IFNAMSIZ + 8];
	enum fctl_mka_health child_why;
	bool child_step; /* a step of the port's CAK rotation, not a restart */
};

/* The next check in ms, then every ms: 0 or a negative errno. */
static int arm(struct fctl_agentd_mka *m, unsigned ms)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 + 1 },
		.it_interval = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 },
	};

	if (timerfd_settime(m->tfd, 0, &its, NULL) < 0)
		return -errno;
	m->every_ms = ms;
	return 0;
}

int fctl_agentd_mka_start(struct agent *a, char *err, size_t errlen)
{
	struct fctl_agentd_mka *m = calloc(1, sizeof(*m));
	int r;

	if (!m) {
		snprintf(err, errlen, "mka supervision: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	/* the first check soon: the interval follows from what it finds */
	m->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (m->tfd < 0 || arm(m, FCTL_AGENTD_MKA_CHECK_MS) < 0 ||
	    fctl_agentd_ep_set(a, EPOLL_CTL_ADD, m->tfd, EPOLLIN, m) < 0) {
		r = -errno;
		snprintf(err, errlen, "mka supervision: timer: %s", strerror(-r));
		if (m->tfd >= 0)
			close(m->tfd);
		free(m);
		return r;
	}
	a->mka = m;
	return 0;
}

static void spawn(struct agent *a, struct fctl_agentd_mka *m, const char *ifname,
		  enum fctl_mka_health why, bool step)
{
	pid_t pid;

	fflush(NULL); /* the program's buffered output, written once: not again by a child */
	pid = fork();
	if (pid == 0) {
		struct fctl_agent_request rq = { .type = FCTL_AGENT_MKA_RESTART,
						 .host = a->cfg.host, .state_dir = a->cfg.state_dir,
						 .netns = a->cfg.netns, .mka_port = ifname,
						 .mka_kill = why == FCTL_MKA_HUNG, .mka_step = step };

		/* a writer: it starts wpa_supplicant and changes links, so not sandboxed;
		 * output to /dev/null, errors to the agent's log */
		fctl_agentd_exec_worker(a, open("/dev/null", O_WRONLY | O_CLOEXEC), 2, &rq, false);
	}
	if (pid < 0) {
		fctl_agentd_log("mka: cannot start the restart of %s: %s", ifname, strerror(errno));
		return;
	}
	m->child = pid;
	m->child_why = why;
	m->child_step = step;
	snprintf(m->child_port, sizeof(m->child_port), "%s", ifname);
	a->writers++;
}

static struct port *port_of(struct fctl_agentd_mka *m, const char *ifname)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->ports[i].ifname, ifname) == 0)
			return &m->ports[i];
	if (m->n == MAX_PORTS)
		return NULL;
	memset(&m->ports[m->n], 0, sizeof(m->ports[m->n]));
	snprintf(m->ports[m->n].ifname, sizeof(m->ports[m->n].ifname), "%s", ifname);
	return &m->ports[m->n++];
}

/* A healthy port: its KaY state; an mka-state record when secured, the key server, the
 * CKN or the CAK's check value changed since the last record (the evidence bundle lists
 * the MKA ports from these, docs/audit.md). */
static void observe(struct agent *a, struct port *p)
{
	struct fctl_mka_status ks;
	struct seen_state now = { .recorded = true };
	char err[256], d[400];

	if (fctl_mka_status_read(p->ifname, NULL, &ks, err, sizeof(err)) < 0)
		return;
	fctl_mka_given(p->ifname, NULL, now.ckn, now.kcv); /* the CAK by its check value only */
	now.secured = ks.secured;
	snprintf(now.key_server, sizeof(now.key_server), "%s", ks.key_server_sci);
	if (!now.ckn[0])
		snprintf(now.ckn, sizeof(now.ckn), "%s", ks.ckn);
	if (p->last.recorded && p->last.secured == now.secured &&
	    !strcmp(p->last.key_server, now.key_server) && !strcmp(p->last.ckn, now.ckn) &&
	    !strcmp(p->last.kcv, now.kcv))
		return;
	p->last = now;
	snprintf(d, sizeof(d), "port=%s ckn=%s key_server=%s is_key_server=%s live_peers=%u",
		 p->ifname, now.ckn[0] ? now.ckn : "-", now.key_server[0] ? now.key_server : "-",
		 ks.is_key_server ? "yes" : "no", ks.live_peers);
	fctl_agentd_audit_kcv(a, "mka-state", now.secured ? "secured" : "not-secured", d,
			      now.kcv);
}

struct visit {
	struct agent *a;
	struct fctl_agentd_mka *m;
	uint64_t now;
};

/* Whether a CAK rotation on ifname has something for a step to do: the addresses moved
 * (the switch to wait for), the incoming CA secured (the move), or gone (give up). A
 * rotation waiting for the peer forks nothing. */
static bool rotation_due(const char *ifname, const char *idir)
{
	return fctl_mka_rotation_moved(ifname) || fctl_mka_health(ifname, idir) != FCTL_MKA_OK ||
	       fctl_mka_secured(ifname, idir);
}

static int visit(const struct fctl_mka_port *mp, void *arg)
{
	struct visit *v = arg;
	struct port *p = port_of(v->m, mp->ifname);
	enum fctl_mka_health h;
	char idir[PATH_MAX];
	bool rotating;

	if (!p)
		return 0;
	p->seen = true;
	p->step = false;
	if (v->m->child) /* one restart at a time: the others at the next check */
		return 0;
	h = fctl_mka_health(mp->ifname, NULL);
	rotating = fctl_mka_incoming(mp->ifname, idir, sizeof(idir), NULL) == 0;
	/* a current CA that died during a rotation whose incoming CA runs: not restarted, the
	 * incoming one takes over (a step) */
	if (h != FCTL_MKA_OK && rotating && fctl_mka_health(mp->ifname, idir) == FCTL_MKA_OK) {
		p->step = true;
		return 0;
	}
	if (fctl_mka_sup_decide(&p->sup, h, v->now) == FCTL_MKA_RESTART) {
		spawn(v->a, v->m, mp->ifname, h, false);
	} else if (h == FCTL_MKA_OK) {
		observe(v->a, p);
		/* a CAK rotation under way: a step when there is one to take (docs/mka.md,
		 * "CAK rotation"); started after every port's health was checked */
		p->step = rotating && rotation_due(mp->ifname, idir);
	}
	return 0;
}

/* One rotation step for the ports that have one, in turns (one worker at a time). */
static void step_one(struct agent *a, struct fctl_agentd_mka *m)
{
	for (size_t k = 0; k < m->n && !m->child; k++) {
		size_t i = (m->next_step + k) % m->n;

		if (!m->ports[i].step)
			continue;
		m->next_step = i + 1;
		spawn(a, m, m->ports[i].ifname, FCTL_MKA_OK, true);
	}
}

/* Forgets the ports the applied profile no longer has (their state with them). */
static void forget_unseen(struct fctl_agentd_mka *m)
{
	size_t k = 0;

	for (size_t i = 0; i < m->n; i++)
		if (m->ports[i].seen)
			m->ports[k++] = m->ports[i];
	m->n = k;
}

static void drop_profile(struct fctl_agentd_mka *m)
{
	fctl_profile_free(m->prof);
	m->prof = NULL;
	m->prof_seq = 0;
	m->prof_sha[0] = '\0';
}

/* The last applied profile into m->prof, loaded (and validated) again only when the
 * newest history entry is not the one it came from: 0, -ENOENT (nothing applied) or
 * another negative errno. */
static int applied_profile(struct agent *a, struct fctl_agentd_mka *m)
{
	struct fctl_history_entry *v = NULL;
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	size_t n = 0;
	int r = fctl_engine_history(&a->eo, &v, &n);

	if (r < 0 || n == 0) {
		free(v);
		drop_profile(m);
		return r < 0 ? r : -ENOENT;
	}
	if (m->prof && m->prof_seq == v[n - 1].seq && !strcmp(m->prof_sha, v[n - 1].sha256)) {
		free(v);
		return 0;
	}
	drop_profile(m);
	/* the newest entry again: an entry added since is seen (and loaded) at the next
	 * check, its seq differing from the one kept here */
	r = fctl_engine_load_version(&a->eo, 0, &d, &p);
	fctl_diags_release(&d);
	if (r == 0) {
		m->prof = p;
		m->prof_seq = v[n - 1].seq;
		snprintf(m->prof_sha, sizeof(m->prof_sha), "%s", v[n - 1].sha256);
	}
	free(v);
	return r;
}

static void check(struct agent *a, struct fctl_agentd_mka *m)
{
	struct visit v = { .a = a, .m = m, .now = fctl_agentd_now_ms() };
	char rdir[PATH_MAX];
	int r;

	/* an apply starts and stops them itself; a rotation may be reconfiguring one */
	if (m->child || a->writers)
		return;
	fctl_rotation_dir(a->cfg.state_dir, a->cfg.netns, rdir, sizeof(rdir));
	if (fctl_rotation_busy(rdir, NULL, 0))
		return;
	r = applied_profile(a, m);
	for (size_t i = 0; i < m->n; i++)
		m->ports[i].seen = false;
	if (r == 0)
		fctl_mka_host_each(m->prof, a->host, visit, &v);
	else if (r != -ENOENT)
		fctl_agentd_log("mka: cannot load the last applied profile: %s", strerror(-r));
	forget_unseen(m);
	step_one(a, m);
	/* ports to watch: every 2 s; none: slowly (an unreadable profile counts as ports:
	 * its error is logged at the check's pace, as before) */
	unsigned want = m->n || (r < 0 && r != -ENOENT) ? FCTL_AGENTD_MKA_CHECK_MS
							  : FCTL_AGENTD_MKA_IDLE_MS;
	if (want != m->every_ms && (r = arm(m, want)) < 0)
		fctl_agentd_log("mka: check timer: %s", strerror(-r));
}

void fctl_agentd_mka_soon(struct agent *a)
{
	struct fctl_agentd_mka *m = a->mka;
	int r;

	if (m && m->every_ms != FCTL_AGENTD_MKA_CHECK_MS && (r = arm(m, FCTL_AGENTD_MKA_CHECK_MS)) < 0)
		fctl_agentd_log("mka: check timer: %s", strerror(-r));
}

bool fctl_agentd_mka_event(struct agent *a, void *ptr)
{
	struct fctl_agentd_mka *m = a->mka;
	uint64_t ticks;

	if (!m || ptr != m)
		return false;
	if (read(m->tfd, &ticks, sizeof(ticks)) > 0)
		check(a, m);
	return true;
}

/* A rotation step: the address move and the switch are audited (the new CAK's check value
 * follows in the mka-state record of the next check), a failure too; waiting is not. */
static void reaped_step(struct agent *a, struct fctl_agentd_mka *m, int status)
{
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	bool failed = code != 0 && code != FCTL_AGENT_MKA_STEP_MOVED &&
		      code != FCTL_AGENT_MKA_STEP_DONE;
	struct port *p = port_of(m, m->child_port);
	char d[160];

	/* a step that keeps failing is audited once, until one succeeds */
	if (p) {
		bool again = failed && p->step_failed;

		p->step_failed = failed;
		if (again)
			return;
	}
	if (code == 0)
		return;
	snprintf(d, sizeof(d), "port=%s %s", m->child_port,
		 code == FCTL_AGENT_MKA_STEP_MOVED  ? "addresses moved to the new CA's SecY"
		 : code == FCTL_AGENT_MKA_STEP_DONE ? "old CA stopped, the new CA is current"
					     : "the step failed (the agent's log says why)");
	fctl_agentd_audit_event(a, "mka-rotate",
				code == FCTL_AGENT_MKA_STEP_MOVED  ? "moved"
				: code == FCTL_AGENT_MKA_STEP_DONE ? "done"
							    : "failed",
				NULL, d);
}

bool fctl_agentd_mka_reaped(struct agent *a, pid_t pid, int status)
{
	struct fctl_agentd_mka *m = a->mka;
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	char d[160];

	if (!m || !m->child || pid != m->child)
		return false;
	m->child = 0;
	a->writers--;
	if (m->child_step) {
		reaped_step(a, m, status);
		return true;
	}
	if (ok)
		a->st.mka_restarts++;
	else
		a->st.mka_restart_failures++;
	/* the port and why; the worker's reason for a failure is in the agent's log */
	snprintf(d, sizeof(d), "port=%s reason=%s (wpa_supplicant %s)%s", m->child_port,
		 fctl_mka_health_name(m->child_why),
		 m->child_why == FCTL_MKA_HUNG ? "running, its control interface not answering"
					       : "not running",
		 ok ? "" : WIFEXITED(status) ? ": the restart failed" : ": the restart was killed");
	fctl_agentd_audit_event(a, "mka-restart", ok ? "restarted" : "failed", NULL, d);
	return true;
}

void fctl_agentd_mka_stop(struct agent *a)
{
	struct fctl_agentd_mka *m = a->mka;

	if (!m)
		return;
	if (m->child > 0) {
		kill(m->child, SIGTERM);
		waitpid(m->child, NULL, 0);
		a->writers--;
	}
	if (m->tfd >= 0)
		close(m->tfd);
	drop_profile(m);
	free(m);
	a->mka = NULL;
}
