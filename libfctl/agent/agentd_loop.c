// SPDX-License-Identifier: MIT
/* The agent's event loop (fctl_agent_run): set-up, dispatch of epoll events, timeouts, exit. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agentd_int.h"

static fctl_agent_log_fn log_sink;

void fctl_agent_log_set(fctl_agent_log_fn fn)
{
	log_sink = fn;
}

void fctl_agentd_log(const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	if (!log_sink)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_sink(line);
}

uint64_t fctl_agentd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

double fctl_agentd_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int fctl_agentd_ep_set(struct agent *a, int op, int fd, uint32_t events, void *ptr)
{
	return fctl_agentd_conn_ep(&a->ct, op, fd, events, ptr);
}

/* Blocks the signals the signalfd takes; the epoll, the signalfd and the three timerfds. */
static int loop_setup(struct agent *a, char *err, size_t errlen)
{
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	a->ct.ep = epoll_create1(EPOLL_CLOEXEC);
	a->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	a->drift_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	a->debounce_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	a->refusal_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (a->ct.ep < 0 || a->sfd < 0 || a->drift_tfd < 0 || a->debounce_tfd < 0 ||
	    a->refusal_tfd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot set up the event loop: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* Resumes from the apply journal before serving anyone. */
static void recover_at_start(struct agent *a)
{
	struct fctl_apply_result res;
	int r;

	r = fctl_engine_recover(&a->eo, &res);
	if (r == 1 && res.confirm_rolled_back)
		fctl_agentd_audit_event(a, "confirm-rollback", "rolled-back", NULL,
					"a confirmed apply not confirmed by its deadline (the "
					"host was down or its watchdog gone) went back to the "
					"version before");
	else if (r == 1)
		fctl_agentd_audit_event(a, "recover",
					res.rolled_back && res.restored_exactly ? "rolled-back"
										: "failed",
					NULL, "an apply interrupted before the agent started "
					      "was rolled back");
	else if (r < 0)
		fctl_agentd_log("recover at start failed: %s",
				res.error[0] ? res.error : strerror(-r));
	if (res.has_ledger) { /* the packet-number ledger as the recovery left it (docs/audit.md) */
		char d[FCTL_SA_LEDGER_ANCHOR_MAX];

		fctl_sa_ledger_anchor_format(&res.ledger, d);
		fctl_agentd_audit_event(a, FCTL_SA_LEDGER_ACTION, "anchored", NULL, d);
	}
	fctl_apply_result_release(&res);
}

/* The Unix socket, the mutual-TLS and the metrics listeners the configuration asks for. */
static int open_listeners(struct agent *a, char *err, size_t errlen)
{
	if (a->cfg.socket_path && *a->cfg.socket_path) {
		a->unix_fd = fctl_agentd_listen_unix(a, err, errlen);
		if (a->unix_fd < 0)
			return a->unix_fd;
	}
	if (a->cfg.listen) {
		a->tcp_fd = fctl_agentd_listen_tcp(a->cfg.listen, err, errlen);
		if (a->tcp_fd < 0)
			return a->tcp_fd;
	}
	if (a->cfg.metrics) {
		a->http_fd = fctl_agentd_listen_tcp(a->cfg.metrics, err, errlen);
		if (a->http_fd < 0)
			return a->http_fd;
	}
	return 0;
}

/* Link notifications (optional) and every fd of the loop into the epoll. */
static int watch_fds(struct agent *a, char *err, size_t errlen)
{
	/* not the TLS listener: the front-end accepts there */
	int *fds[] = { &a->sfd, &a->drift_tfd, &a->debounce_tfd, &a->refusal_tfd, &a->nl_fd,
		       &a->unix_fd, &a->http_fd };
	int r;

	a->nl_fd = fctl_agentd_open_netlink();
	if (a->nl_fd < 0)
		fctl_agentd_log("no link notifications (periodic drift checks only): %s",
				strerror(-a->nl_fd));
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0 &&
		    fctl_agentd_ep_set(a, EPOLL_CTL_ADD, *fds[i], EPOLLIN, fds[i]) < 0) {
			r = -errno;
			snprintf(err, errlen, "epoll: %s", strerror(-r));
			return r;
		}
	return 0;
}

static void on_signals(struct agent *a)
{
	struct signalfd_siginfo si;

	while (read(a->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			a->stop = true;
		else if (si.ssi_signo == SIGHUP)
			fctl_agentd_reload(a);
		else if (si.ssi_signo == SIGCHLD)
			fctl_agentd_reap(a);
	}
}

static void on_conn_event(struct agent *a, struct conn *c, uint32_t events)
{
	/* closed by an earlier event of this batch: still allocated (agentd_int.h) */
	if (c->closing)
		return;
	if (fctl_agentd_ac(c)->child) {
		fctl_agentd_conn_on_hangup(&a->ct, c, events);
		return;
	}
	if (c->handshake)
		fctl_agentd_tls_handshake(&a->ct, c);
	else if (c->writing)
		fctl_agentd_conn_flush(&a->ct, c);
	else if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN))
		fctl_agentd_conn_close(&a->ct, c);
	else if (c->kind == C_HTTP)
		fctl_agentd_http_readable(a, c);
	else
		fctl_agentd_conn_readable(&a->ct, c);
}

static void on_event(struct agent *a, const struct epoll_event *ev)
{
	void *p = ev->data.ptr;
	uint64_t ticks;

	if (p == &a->sfd) {
		on_signals(a);
	} else if (p == &a->drift_tfd) {
		if (read(a->drift_tfd, &ticks, sizeof(ticks)) > 0)
			fctl_agentd_drift_check(a, "timer");
	} else if (p == &a->debounce_tfd) {
		if (read(a->debounce_tfd, &ticks, sizeof(ticks)) > 0)
			fctl_agentd_drift_check(a, "link event");
	} else if (p == &a->refusal_tfd) {
		if (read(a->refusal_tfd, &ticks, sizeof(ticks)) > 0)
			fctl_agentd_refusals_flush(a);
	} else if (p == &a->nl_fd) {
		char buf[8192];

		while (recv(a->nl_fd, buf, sizeof(buf), 0) > 0 || errno == ENOBUFS)
			;
		fctl_agentd_drift_schedule(a, a->cfg.drift_debounce_ms);
	} else if (p == &a->unix_fd) {
		fctl_agentd_accept(&a->ct, a->unix_fd, C_UNIX);
	} else if (p == &a->fe) {
		fctl_agentd_fe_event(a, ev->events);
	} else if (p == &a->http_fd) {
		fctl_agentd_accept(&a->ct, a->http_fd, C_HTTP);
	} else if (fctl_agentd_pull_event(a, p)) {
		/* pull mode's inotify or debounce timer */
	} else if (fctl_agentd_mka_event(a, p)) {
		/* the MKA supervision's check timer */
	} else {
		on_conn_event(a, p, ev->events);
	}
}

/* Serves until SIGTERM or SIGINT: 0, or a negative errno with err filled. */
static int serve(struct agent *a, char *err, size_t errlen)
{
	int r;

	while (!a->stop) {
		struct epoll_event ev[32];
		int n = epoll_wait(a->ct.ep, ev, 32, fctl_agentd_next_timeout(&a->ct));

		if (n < 0 && errno != EINTR) {
			r = -errno;
			snprintf(err, errlen, "epoll_wait: %s", strerror(-r));
			return r;
		}
		for (int i = 0; i < n; i++)
			on_event(a, &ev[i]);
		fctl_agentd_sweep_timeouts(&a->ct);
		/* the only place connections are freed: no event of this batch is left */
		fctl_agentd_conn_collect(&a->ct);
	}
	if (a->fatal) {
		snprintf(err, errlen, "%s", a->fatal_err);
		return a->fatal;
	}
	return 0;
}

/* Stops the workers and the repair, frees the connections, closes every fd. */
static void teardown(struct agent *a)
{
	int fds[] = { a->tcp_fd, a->http_fd, a->nl_fd, a->debounce_tfd, a->drift_tfd,
		      a->refusal_tfd, a->sfd, a->ct.ep, a->exe_fd };

	fctl_agentd_fe_stop(a);

	while (a->ct.conns) {
		struct conn *c = a->ct.conns;
		struct aconn *ac = fctl_agentd_ac(c);

		if (ac->child) {
			kill(ac->child, SIGTERM);
			waitpid(ac->child, NULL, 0);
			if (ac->req_writes)
				a->writers--;
			a->workers--;
			ac->child = 0;
			c->busy = false;
		}
		fctl_agentd_conn_free(&a->ct, c);
	}
	fctl_agentd_pull_stop(a);
	fctl_agentd_mka_stop(a);
	if (a->repair_child > 0) {
		kill(a->repair_child, SIGTERM);
		waitpid(a->repair_child, NULL, 0);
	}
	if (a->unix_fd >= 0) {
		close(a->unix_fd);
		unlink(a->cfg.socket_path);
	}
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fctl_engine_kernel_close(a->sa_kern);
	fctl_agentd_refusals_release(a); /* the counts of the interval, before the log closes */
	fctl_agentd_audit_close(a);
	fctl_agent_config_release(&a->cfg);
}

int fctl_agent_run(const struct fctl_agent_start *s, char *err, size_t errlen)
{
	struct agent a = { .start = s, .rops = &fctl_agentd_req_ops,
			   .ct = { .hooks = &fctl_agentd_conn_hooks, .ep = -1 }, .sfd = -1,
			   .drift_tfd = -1, .debounce_tfd = -1, .nl_fd = -1, .unix_fd = -1,
			   .tcp_fd = -1, .http_fd = -1, .refusal_tfd = -1, .exe_fd = -1,
			   .fe.ch.fd = -1 };
	struct fctl_agent_config cfg;
	int r;

	a.ct.count = &a.st.connections;
	fctl_agent_config_init(&a.cfg);
	fctl_agent_config_init(&cfg);
	a.st.start_time = fctl_agentd_wall();
	fctl_agentd_harden();
	r = fctl_agentd_worker_init(&a, err, errlen);
	if (r == 0)
		r = loop_setup(&a, err, errlen);
	if (r < 0)
		goto out;
	r = fctl_agent_config_build(s, &cfg, err, errlen);
	if (r == 0)
		r = fctl_agentd_apply_config(&a, &cfg, err, errlen);
	if (r < 0)
		goto out;
	fctl_agentd_audit_open(&a);
	recover_at_start(&a);
	r = open_listeners(&a, err, errlen);
	if (r < 0)
		goto out;
	r = watch_fds(&a, err, errlen);
	if (r == 0 && a.tcp_fd >= 0)
		r = fctl_agentd_fe_start(&a, err, errlen);
	if (r == 0)
		r = fctl_agentd_pull_start(&a, err, errlen);
	if (r == 0)
		r = fctl_agentd_mka_start(&a, err, errlen);
	if (r < 0)
		goto out;
	{
		char drift[48] = "periodic drift checks off";

		if (a.cfg.drift_interval_s)
			snprintf(drift, sizeof(drift), "drift every %us", a.cfg.drift_interval_s);
		fctl_agentd_log("serving host %s: socket %s, mutual TLS %s, metrics %s, %s%s",
				a.host, a.unix_fd >= 0 ? a.cfg.socket_path : "off",
				a.cfg.listen ? a.cfg.listen : "off",
				a.cfg.metrics ? a.cfg.metrics : "off", drift,
				a.cfg.drift_repair ? " (repair on)" : "");
	}
	fctl_agentd_notify("READY=1");
	fctl_agentd_drift_check(&a, "start");
	r = serve(&a, err, errlen);
	fctl_agentd_notify("STOPPING=1");
	if (r < 0)
		goto out;
	fctl_agentd_log("shutting down (SIGTERM)");
out:
	teardown(&a);
	fctl_agent_config_release(&cfg);
	return r;
}
