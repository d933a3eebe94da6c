// SPDX-License-Identifier: MIT
/* The fabric probe's rounds: both ends' requests of every probe of a round at once, then
 * each link's verdict from the two answers (contract in fctl/fabric_probe.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fctl/fabric_probe.h"

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void reason(struct fctl_probe_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void reason(struct fctl_probe_result *r, const char *fmt, ...)
{
	va_list ap;

	if (r->n_reasons == FCTL_PROBE_MAX_REASONS)
		return;
	va_start(ap, fmt);
	vsnprintf(r->reasons[r->n_reasons++], sizeof(r->reasons[0]), fmt, ap);
	va_end(ap);
}

/* The value of key=VALUE among a line's words ("" when absent). */
static void word(const char *line, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);

	out[0] = '\0';
	for (const char *p = line; (p = strstr(p, key)); p += kl) {
		if ((p == line || p[-1] == ' ') && p[kl] == '=') {
			size_t n = strcspn(p + kl + 1, " \n");

			snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p + kl + 1);
			return;
		}
	}
}

static uint64_t wu64(const char *line, const char *key)
{
	char v[32];

	word(line, key, v, sizeof(v));
	return strtoull(v, NULL, 10);
}

static bool wdbl(const char *line, const char *key, double *out)
{
	char v[32];

	word(line, key, v, sizeof(v));
	if (!v[0] || strcmp(v, "-") == 0)
		return false;
	*out = strtod(v, NULL);
	return true;
}

static void parse_result(struct fctl_probe_result *r, const char *line)
{
	struct fctl_probe_test *t;
	char v[16];

	if (r->n_tests == FCTL_PROBE_MAX_TESTS)
		return;
	t = &r->tests[r->n_tests++];
	word(line, "test", t->test, sizeof(t->test));
	t->size = (uint32_t)wu64(line, "size");
	t->ran = wu64(line, "ran") == 1;
	t->pass = wu64(line, "pass") == 1;
	t->has_lat = wdbl(line, "p99_us", &t->p99_us);
	wdbl(line, "p50_us", &t->p50_us);
	wdbl(line, "p999_us", &t->p999_us);
	t->has_bw = wdbl(line, "gbps", &t->gbps);
	for (int e = 0; e < 2; e++) {
		const char *s = e ? "server" : "client";
		char k[32];

		snprintf(k, sizeof(k), "loss_%s", s);
		t->loss[e] = wu64(line, k);
		snprintf(k, sizeof(k), "retrans_%s", s);
		t->retrans[e] = wu64(line, k);
		snprintf(k, sizeof(k), "encrypted_%s", s);
		t->encrypted[e] = wu64(line, k);
		snprintf(k, sizeof(k), "macsec_bad_%s", s);
		t->macsec_bad[e] = wu64(line, k);
		snprintf(k, sizeof(k), "macsec_%s", s);
		word(line, k, v, sizeof(v));
		t->macsec[e] = strcmp(v, "1") == 0;
	}
}

static void parse_pmtu(struct fctl_probe_result *r, const char *line)
{
	char end[16];
	struct fctl_probe_pmtu *m;
	const char *e;

	word(line, "end", end, sizeof(end));
	m = &r->pmtu[strcmp(end, "client") == 0 ? 1 : 0];
	m->checked = true;
	m->ok = wu64(line, "ok") == 1;
	m->mtu = (unsigned)wu64(line, "mtu");
	m->largest = (unsigned)wu64(line, "largest");
	word(line, "ifname", m->ifname, sizeof(m->ifname));
	e = strstr(line, " error=");
	if (e)
		snprintf(m->error, sizeof(m->error), "%s", e + 7);
}

static void parse_output(struct fctl_probe_result *r, const char *out)
{
	char line[1024];

	while (out && *out) {
		size_t n = strcspn(out, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1),
			 out);
		out += n + (out[n] == '\n');
		if (strncmp(line, "result ", 7) == 0)
			parse_result(r, line);
		else if (strncmp(line, "pmtu ", 5) == 0)
			parse_pmtu(r, line);
		else if (strncmp(line, "reason ", 7) == 0) {
			char t[16];

			word(line, "test", t, sizeof(t));
			reason(r, "%s: %s", t, line + 7 + 6 + strlen(t));
		}
	}
}

/* The first line of an agent's stderr, without the program's name. */
static void first_line(const char *s, char *out, size_t len)
{
	const char *p;
	size_t n;

	out[0] = '\0';
	if (!s)
		return;
	while (*s == '\n')
		s++;
	n = strcspn(s, "\n");
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), s);
	if ((p = strstr(out, "probe: ")) && p - out < 24)
		memmove(out, p + 7, strlen(p + 7) + 1);
}

static bool no_answer(struct fctl_probe_result *r, const struct fctl_fabric_result *a,
		      const char *host, const char *what, unsigned deadline_s)
{
	char e[360];

	if (a->status == 0)
		return false;
	first_line(a->error, e, sizeof(e));
	if (a->status == -ETIMEDOUT || strstr(e, "timed out") || strstr(e, "no answer"))
		reason(r, "agent: %s did not answer its %s request within %u s (agent stopped "
			  "or hung?): %s", host, what, deadline_s, e);
	else
		reason(r, "agent: %s could not be asked to %s: %s", host, what, e);
	return true;
}

void fctl_probe_judge(struct fctl_probe_result *r, unsigned link_deadline_s)
{
	const struct fctl_probe_item *it = r->item;
	char e[360];
	bool failed = false;

	r->n_tests = 0;
	r->n_reasons = 0;
	memset(r->pmtu, 0, sizeof(r->pmtu));
	bool dead_a = no_answer(r, &r->serve, it->host[0], "serve", link_deadline_s);
	bool dead_b = no_answer(r, &r->run, it->host[1], "run", link_deadline_s);

	if (!dead_b)
		parse_output(r, r->run.output);
	if (!dead_a)
		parse_output(r, r->serve.output);
	if (dead_a || dead_b) {
		r->verdict = FCTL_PROBE_ERROR;
		return;
	}
	for (size_t i = 0; i < r->n_tests; i++)
		failed |= r->tests[i].ran && !r->tests[i].pass;
	/* a test that ran and missed its SLO is the verdict even when a later one could not
	 * run (a link slow enough to fail is often too slow to finish in its deadline) */
	if (!failed && (r->run.exit >= 2 || r->n_tests == 0)) {
		first_line(r->run.error, e, sizeof(e));
		reason(r, "could not run on %s: %s", it->host[1], e[0] ? e : "no result");
		if (r->serve.exit >= 2) {
			first_line(r->serve.error, e, sizeof(e));
			if (e[0])
				reason(r, "serve on %s: %s", it->host[0], e);
		}
		r->verdict = FCTL_PROBE_ERROR;
		return;
	}
	for (size_t i = 0; i < r->n_tests; i++)
		failed |= !r->tests[i].pass;
	if (r->run.exit >= 2) {
		first_line(r->run.error, e, sizeof(e));
		if (e[0])
			reason(r, "run on %s: %s", it->host[1], e);
	}
	for (int end = 0; end < 2; end++) {
		const struct fctl_probe_pmtu *m = &r->pmtu[end];

		if (m->checked && !m->ok) {
			failed = true;
			if (m->error[0])
				reason(r, "path MTU: %s: %s", it->host[end], m->error);
			else
				reason(r, "path MTU: %s port %s (%s): don't-fragment %u bytes to %s "
					  "failed; largest that passed: %u", it->host[end],
				       it->port[end], m->ifname, m->mtu, it->host[!end], m->largest);
		}
	}
	if (r->run.exit == 1)
		failed = true;
	r->verdict = failed ? FCTL_PROBE_FAIL : FCTL_PROBE_PASS;
}

struct call {
	struct fctl_fabric_opts fo;
	uint8_t type;
	struct fctl_fabric_result *res;
	pthread_t t;
	bool started;
	double end; /* when its answer came (monotonic seconds) */
};

static void *call_thread(void *arg)
{
	struct call *c = arg;

	fctl_fabric_call(&c->fo, c->type, c->res);
	c->end = mono_s();
	return NULL;
}

static void start(struct call *c, const struct fctl_fabric_opts *fo, unsigned timeout,
		  uint8_t type, struct fctl_fabric_result *res)
{
	c->fo = *fo;
	c->fo.timeout_s = timeout;
	c->type = type;
	c->res = res;
	c->started = pthread_create(&c->t, NULL, call_thread, c) == 0;
	if (!c->started)
		call_thread(c); /* no thread: this request alone, in this thread */
}

/* One round: both requests of every probe in it at once; waits for all of them. */
static void run_round(const struct fctl_probe_run_opts *o, const struct fctl_probe_item *v,
		      size_t n, unsigned round, unsigned timeout, struct fctl_probe_result *res,
		      struct call *calls)
{
	for (size_t i = 0; i < n; i++) {
		const struct fctl_inventory_host *h[2];

		if (v[i].round != round)
			continue;
		res[i].item = &v[i];
		h[0] = fctl_inventory_find(o->inv, v[i].host[0]);
		h[1] = fctl_inventory_find(o->inv, v[i].host[1]);
		res[i].serve.host = h[0];
		res[i].run.host = h[1];
		if (!h[0] || !h[1])
			continue;
		start(&calls[2 * i], o->fo, timeout, FCTL_MSG_PROBE_SERVE, &res[i].serve);
		start(&calls[2 * i + 1], o->fo, timeout, FCTL_MSG_PROBE_RUN, &res[i].run);
	}
	for (size_t i = 0; i < 2 * n; i++)
		if (calls[i].started) {
			pthread_join(calls[i].t, NULL);
			calls[i].started = false;
		}
}

int fctl_probe_fabric_run(const struct fctl_probe_run_opts *o, const struct fctl_probe_item *v,
			  size_t n, struct fctl_probe_result *res)
{
	unsigned link_s = o->fo->timeout_s ? o->fo->timeout_s : FCTL_FABRIC_DEFAULT_TIMEOUT;
	unsigned rounds = 0;
	struct call *calls = calloc(2 * n + 1, sizeof(*calls));
	char (*spec)[FCTL_PROTO_MAX_STR + 1] = calloc(n + 1, sizeof(*spec));
	double t0 = mono_s();

	if (!calls || !spec) {
		free(calls);
		free(spec);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].round + 1 > rounds)
			rounds = v[i].round + 1;
		/* the agents' probe stops (is killed 1 s after this) 4 s before the link's
		 * deadline: its answer comes back in time */
		snprintf(spec[i], sizeof(spec[i]), "link=%s vlan=%u port=%u deadline=%u%s%s",
			 v[i].link, v[i].vlan, v[i].ctl_port, link_s > 8 ? link_s - 5 : link_s,
			 o->spec_extra ? " " : "", o->spec_extra ? o->spec_extra : "");
		res[i].serve.probe = res[i].run.probe = spec[i];
	}
	for (unsigned r = 0; r < rounds; r++) {
		double left = o->deadline_s ? o->deadline_s - (mono_s() - t0) : link_s;
		unsigned timeout = left <= 0 ? 0 : left < link_s ? (unsigned)left : link_s;
		double rt0 = mono_s();

		if (timeout >= 3)
			run_round(o, v, n, r, timeout, res, calls);
		for (size_t i = 0; i < n; i++) {
			if (v[i].round != r)
				continue;
			res[i].item = &v[i];
			/* the link's own time: until the later of its two answers */
			res[i].wall_s = (calls[2 * i].end > calls[2 * i + 1].end ? calls[2 * i].end
										 : calls[2 * i + 1].end) - rt0;
			if (res[i].wall_s < 0)
				res[i].wall_s = 0;
			if (timeout < 3) {
				res[i].verdict = FCTL_PROBE_ERROR;
				reason(&res[i], "not run: the whole run's deadline (%u s) came before "
					  "its round", o->deadline_s);
			} else if (!res[i].serve.host || !res[i].run.host) {
				res[i].verdict = FCTL_PROBE_ERROR;
				reason(&res[i], "no agent known for %s (inventory or the profile's "
					  "hosts[].agent)", res[i].serve.host ? v[i].host[1]
									      : v[i].host[0]);
			} else {
				fctl_probe_judge(&res[i], timeout);
			}
			if (o->done)
				o->done(o->ctx, &res[i]);
		}
	}
	free(calls);
	free(spec);
	return 0;
}

void fctl_probe_results_release(struct fctl_probe_result *res, size_t n)
{
	if (!res)
		return;
	for (size_t i = 0; i < n; i++) {
		fctl_fabric_results_release(&res[i].serve, 1);
		fctl_fabric_results_release(&res[i].run, 1);
	}
}
