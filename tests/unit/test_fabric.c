// SPDX-License-Identifier: MIT
/* Fabric fan-out without agents: the agent client is replaced at link time
 * (-Wl,--wrap) by scripted hosts; the pool's bound, the order of results, the
 * requests sent, and which hosts the two-phase apply rolls back. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/fabric.h"

#define MAXH 16

/* What one scripted host answers. Zero: a host at version 7 that plans, applies
 * ("applied") and rolls back with exit 0. */
struct fake_host {
	bool no_prev;       /* status: no profile applied */
	int status_exit, plan_exit, apply_exit, rollback_exit;
	bool unchanged;     /* apply: "unchanged" instead of "applied" */
	bool apply_hangup;  /* apply: the connection drops (no answer) */
	bool apply_timeout; /* apply: no answer before the deadline */
	bool unreachable;   /* connect fails */
	unsigned delay_ms;  /* before answering */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fake_host h[MAXH];
	/* what was sent */
	uint32_t sent[FCTL_MSG_LAST + 1]; /* per type: bit i = host i */
	uint64_t to[MAXH];
	uint32_t options[MAXH];
	uint32_t confirm[MAXH]; /* the confirm TLV's seconds, 0: none */
	uint32_t apply_sigs[MAXH]; /* the sigs TLV's length in the apply, 0: none */
	bool other_sigs;           /* a request other than apply carried sigs */
	char host_tlv[MAXH][64];
	bool has_host[MAXH], has_profile[MAXH];
	/* phases: a stamp at each request's start and end */
	unsigned stamp, first_start[FCTL_MSG_LAST + 1], last_end[FCTL_MSG_LAST + 1];
	/* concurrency: requests in flight, the most seen; the first `hold` requests wait
	 * until `hold` are in flight at once */
	unsigned in_flight, max_in_flight, hold;
	bool held;
	/* when gate: the other hosts answer only once gate_host's answer was reported */
	bool gate, gate_open;
	size_t gate_host;
	bool bad; /* a worker saw something wrong (cmocka asserts only in the main thread) */
	unsigned connects, frees;
} fk = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static struct fctl_inventory_host hosts[MAXH];

static void fake_reset(size_t n)
{
	memset(fk.h, 0, sizeof(fk.h));
	memset(fk.sent, 0, sizeof(fk.sent));
	memset(fk.to, 0, sizeof(fk.to));
	memset(fk.options, 0, sizeof(fk.options));
	memset(fk.confirm, 0, sizeof(fk.confirm));
	memset(fk.apply_sigs, 0, sizeof(fk.apply_sigs));
	fk.other_sigs = false;
	memset(fk.host_tlv, 0, sizeof(fk.host_tlv));
	memset(fk.has_host, 0, sizeof(fk.has_host));
	memset(fk.has_profile, 0, sizeof(fk.has_profile));
	memset(fk.first_start, 0, sizeof(fk.first_start));
	memset(fk.last_end, 0, sizeof(fk.last_end));
	fk.stamp = fk.in_flight = fk.max_in_flight = fk.hold = 0;
	fk.held = fk.bad = fk.gate = fk.gate_open = false;
	fk.connects = fk.frees = 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(hosts[i].name, sizeof(hosts[i].name), "h%zu", i);
		snprintf(hosts[i].endpoint, sizeof(hosts[i].endpoint), "unix:/fake/%zu", i);
	}
}

int __wrap_fctl_agent_connect(const char *endpoint, struct ssl_ctx_st *ctx, unsigned timeout_s,
			      struct fctl_agent_conn **out, char *err, size_t errlen);
int __wrap_fctl_agent_call(struct fctl_agent_conn *c, struct fctl_msg *req,
			   struct fctl_msg *resp, struct fctl_buf *frame, char *err, size_t errlen);
void __wrap_fctl_agent_conn_free(struct fctl_agent_conn *c);
bool __wrap_fctl_agent_conn_tls_resumed(const struct fctl_agent_conn *c);

/* the fake connections are numbers, not connections: none resumed a TLS session */
bool __wrap_fctl_agent_conn_tls_resumed(const struct fctl_agent_conn *c)
{
	(void)c;
	return false;
}

int __wrap_fctl_agent_connect(const char *endpoint, struct ssl_ctx_st *ctx, unsigned timeout_s,
			      struct fctl_agent_conn **out, char *err, size_t errlen)
{
	unsigned long i;

	if (strncmp(endpoint, "unix:/fake/", 11) != 0)
		return -EINVAL;
	i = strtoul(endpoint + 11, NULL, 10);
	pthread_mutex_lock(&fk.lock);
	fk.connects++;
	pthread_mutex_unlock(&fk.lock);
	if (i >= MAXH || fk.h[i].unreachable) {
		snprintf(err, errlen, "cannot connect to %s: Connection refused", endpoint);
		return -ECONNREFUSED;
	}
	*out = (struct fctl_agent_conn *)(uintptr_t)(i + 1);
	return 0;
}

void __wrap_fctl_agent_conn_free(struct fctl_agent_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&fk.lock);
	fk.frees++;
	pthread_mutex_unlock(&fk.lock);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Concurrency bookkeeping at a request's start: the first fk.hold requests wait
 * (up to 5 s) until fk.hold are in flight together. */
static void enter(uint8_t type)
{
	struct timespec dl;

	pthread_mutex_lock(&fk.lock);
	if (!fk.first_start[type])
		fk.first_start[type] = ++fk.stamp;
	fk.in_flight++;
	if (fk.in_flight > fk.max_in_flight)
		fk.max_in_flight = fk.in_flight;
	if (fk.hold && fk.in_flight >= fk.hold) {
		fk.held = true;
		pthread_cond_broadcast(&fk.cond);
	}
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	while (fk.hold && !fk.held)
		if (pthread_cond_timedwait(&fk.cond, &fk.lock, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&fk.lock);
}

static void wait_gate(void)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	pthread_mutex_lock(&fk.lock);
	while (!fk.gate_open)
		if (pthread_cond_timedwait(&fk.cond, &fk.lock, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&fk.lock);
}

static void leave(uint8_t type)
{
	pthread_mutex_lock(&fk.lock);
	fk.in_flight--;
	fk.last_end[type] = ++fk.stamp;
	pthread_mutex_unlock(&fk.lock);
}

static int answer(size_t i, const struct fctl_msg *req, char *out, size_t outlen)
{
	const struct fake_host *h = &fk.h[i];

	switch (req->type) {
	case FCTL_MSG_STATUS:
		if (h->no_prev)
			snprintf(out, outlen, "{\"applied\":false}\n");
		else
			snprintf(out, outlen, "{\"applied\":true,\"applied_version\":7}\n");
		return h->status_exit;
	case FCTL_MSG_PLAN:
		snprintf(out, outlen, "{\"result\":\"planned\"}\n");
		return h->plan_exit;
	case FCTL_MSG_APPLY:
		snprintf(out, outlen, "{\"result\":\"%s\"}\n",
			 h->apply_exit ? "failed" : h->unchanged ? "unchanged" : "applied");
		return h->apply_exit;
	case FCTL_MSG_ROLLBACK:
		snprintf(out, outlen, "{\"result\":\"rolled-back\"}\n");
		return h->rollback_exit;
	default:
		snprintf(out, outlen, "%s of %s\n", fctl_proto_type_name(req->type), hosts[i].name);
		return 0;
	}
}

int __wrap_fctl_agent_call(struct fctl_agent_conn *c, struct fctl_msg *req,
			   struct fctl_msg *resp, struct fctl_buf *frame, char *err, size_t errlen)
{
	size_t i = (size_t)(uintptr_t)c - 1;
	char out[256], e[64];
	int ex;

	if (i >= MAXH || req->type > FCTL_MSG_LAST || fctl_proto_is_sa_request(req->type)) {
		fk.bad = true;
		return -EINVAL;
	}
	enter(req->type);
	pthread_mutex_lock(&fk.lock);
	if (fk.sent[req->type] & (1u << i))
		fk.bad = true; /* one request per host and phase */
	fk.sent[req->type] |= 1u << i;
	fk.to[i] = req->to_version;
	fk.options[i] = req->options;
	fk.has_host[i] = req->present & FCTL_HAS_HOST;
	fk.has_profile[i] = req->present & FCTL_HAS_PROFILE;
	fk.confirm[i] = (req->present & FCTL_HAS_CONFIRM) ? req->confirm_seconds : 0;
	if (req->type == FCTL_MSG_APPLY)
		fk.apply_sigs[i] = (req->present & FCTL_HAS_SIGS) ? req->sigs_len : 0;
	else if (req->present & FCTL_HAS_SIGS)
		fk.other_sigs = true;
	snprintf(fk.host_tlv[i], sizeof(fk.host_tlv[i]), "%s", req->host);
	pthread_mutex_unlock(&fk.lock);
	if (fk.gate && i != fk.gate_host)
		wait_gate();
	if (fk.h[i].delay_ms)
		sleep_ms(fk.h[i].delay_ms);
	if (req->type == FCTL_MSG_APPLY && fk.h[i].apply_hangup) {
		leave(req->type);
		snprintf(err, errlen, "the agent closed the connection");
		return -ECONNRESET;
	}
	if (req->type == FCTL_MSG_APPLY && fk.h[i].apply_timeout) {
		leave(req->type);
		snprintf(err, errlen, "no answer from the agent: timed out after 10s");
		return -ETIMEDOUT;
	}
	ex = answer(i, req, out, sizeof(out));
	snprintf(e, sizeof(e), ex ? "%s failed on %s\n" : "", fctl_proto_type_name(req->type),
		 hosts[i].name);
	/* the answer points into frame, as the real client's does */
	fctl_buf_reset(frame);
	fctl_buf_puts(frame, out);
	fctl_buf_puts(frame, e);
	memset(resp, 0, sizeof(*resp));
	resp->type = FCTL_MSG_RESPONSE;
	resp->result = (uint32_t)ex;
	resp->output = (const uint8_t *)frame->data;
	resp->output_len = (uint32_t)strlen(out);
	resp->error = frame->data + strlen(out);
	resp->error_len = (uint32_t)strlen(e);
	leave(req->type);
	return 0;
}

/* --- progress events --- */

static struct {
	unsigned host_done[FCTL_MSG_RECOVER + 1];
	size_t last_done[FCTL_MSG_RECOVER + 1];
	uint32_t seen[FCTL_MSG_RECOVER + 1];
	uint32_t not_rolled_back;
	bool inside, bad;
	size_t order[MAXH], n_order; /* hosts in the order their answer was reported */
} ev;

static void progress(void *ctx, const struct fctl_fabric_progress *p)
{
	size_t i = (size_t)(p->r->host - hosts);

	if (ev.inside || i >= MAXH)
		ev.bad = true; /* two callbacks at once, or a host not ours */
	ev.inside = true;
	if (p->event == FCTL_FABRIC_NOT_ROLLED_BACK) {
		ev.not_rolled_back |= 1u << i;
	} else {
		/* done counts 1, 2, ... total within a phase, one event per host */
		if (p->done != ev.last_done[p->phase] + 1 || p->done > p->total ||
		    (ev.seen[p->phase] & (1u << i)) || p->r->type != p->phase)
			ev.bad = true;
		ev.last_done[p->phase] = p->done;
		ev.seen[p->phase] |= 1u << i;
		ev.host_done[p->phase]++;
		if (ev.n_order < MAXH)
			ev.order[ev.n_order++] = i;
		pthread_mutex_lock(&fk.lock);
		if (fk.gate && i == fk.gate_host) {
			fk.gate_open = true;
			pthread_cond_broadcast(&fk.cond);
		}
		pthread_mutex_unlock(&fk.lock);
		sleep_ms(1); /* widen the window in which a second call would overlap */
	}
	ev.inside = false;
}

static void ev_reset(void)
{
	memset(&ev, 0, sizeof(ev));
}

static struct fctl_fabric_result *results(size_t n)
{
	struct fctl_fabric_result *v = calloc(n, sizeof(*v));

	assert_non_null(v);
	for (size_t i = 0; i < n; i++)
		v[i].host = &hosts[i];
	return v;
}

static void results_free(struct fctl_fabric_result *v, size_t n)
{
	fctl_fabric_results_release(v, n);
	free(v);
}

static uint32_t all(size_t n)
{
	return n >= 32 ? ~0u : (1u << n) - 1;
}

/* --- the pool --- */

/* At most `parallel` requests in flight, and exactly that many when there is work
 * for them: the first min(parallel, n) requests wait until all of them are in
 * flight together, so a pool that ran fewer would stall them (and be seen). */
static void test_pool_bound(void **state)
{
	static const struct {
		size_t n;
		unsigned parallel, expect;
	} cases[] = {
		{ 16, 4, 4 }, { 16, 1, 1 }, { 3, 8, 3 }, { 12, 0, 12 }, /* 0: the default, 64 */
		{ 9, 9, 9 },  { 16, 64, 16 },
	};

	for (size_t c = 0; c < FCTL_ARRAY_SIZE(cases); c++) {
		struct fctl_fabric_opts o = { .parallel = cases[c].parallel };
		struct fctl_fabric_outcome oc;
		struct fctl_fabric_result *v;

		fake_reset(cases[c].n);
		fk.hold = cases[c].expect;
		for (size_t i = 0; i < cases[c].n; i++)
			fk.h[i].delay_ms = 2;
		v = results(cases[c].n);
		assert_int_equal(fctl_fabric_run(&o, FCTL_MSG_SHOW, v, cases[c].n, &oc), 0);
		assert_false(fk.bad);
		assert_true(fk.held);
		assert_int_equal(fk.max_in_flight, cases[c].expect);
		assert_int_equal(fk.in_flight, 0); /* every request done on return */
		assert_int_equal(fk.sent[FCTL_MSG_SHOW], all(cases[c].n));
		assert_int_equal(fk.connects, cases[c].n);
		assert_int_equal(fk.frees, cases[c].n); /* one connection per request, closed */
		assert_int_equal(oc.verdict, FCTL_FABRIC_OK);
		results_free(v, cases[c].n);
	}
}

/* Hosts answer out of order (h5 first, the others only once h5's answer was
 * reported, then the later the host the sooner); the results stay in the caller's
 * order, and the progress callback is called once per host, one call at a time,
 * as the hosts answer, counting up. */
static void test_pool_order(void **state)
{
	struct fctl_fabric_opts o = { .parallel = 8, .progress = progress };
	struct fctl_fabric_outcome oc;
	struct fctl_fabric_result *v;
	const size_t n = 8;
	char want[64];

	fake_reset(n);
	ev_reset();
	for (size_t i = 0; i < n; i++)
		fk.h[i].delay_ms = (unsigned)(n - i) * 5;
	fk.gate = true;
	fk.gate_host = 5;
	v = results(n);
	assert_int_equal(fctl_fabric_run(&o, FCTL_MSG_HISTORY, v, n, &oc), 0);
	assert_false(fk.bad);
	assert_false(ev.bad);
	assert_int_equal(ev.host_done[FCTL_MSG_HISTORY], n);
	assert_int_equal(ev.seen[FCTL_MSG_HISTORY], all(n));
	assert_int_equal(ev.n_order, n);
	assert_true(fk.gate_open);
	assert_int_equal(ev.order[0], 5); /* reported as it answered, first */
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "history of h%zu\n", i);
		assert_ptr_equal(v[i].host, &hosts[i]);
		assert_int_equal(v[i].type, FCTL_MSG_HISTORY);
		assert_int_equal(v[i].status, 0);
		assert_string_equal(v[i].output, want);
		assert_string_equal(v[i].error, "");
	}
	results_free(v, n);
}

/* fctl_fabric_run's verdict is the highest exit; a host that cannot be reached
 * counts as FCTL_FABRIC_EXIT_NO_ANSWER with the reason as its error. */
static void test_run_worst(void **state)
{
	struct fctl_fabric_opts o = { .parallel = 2 };
	struct fctl_fabric_outcome oc;
	struct fctl_fabric_result *v;

	fake_reset(4);
	fk.h[1].unreachable = true;
	v = results(4);
	hosts[3].endpoint[0] = '\0';
	assert_int_equal(fctl_fabric_run(&o, FCTL_MSG_STATUS, v, 4, &oc), 0);
	assert_int_equal(oc.verdict, FCTL_FABRIC_FAILED);
	assert_int_equal(oc.worst, FCTL_FABRIC_EXIT_NO_ANSWER);
	assert_int_equal(v[0].status, 0);
	assert_int_equal(v[1].status, -ECONNREFUSED);
	assert_int_equal(v[1].exit, FCTL_FABRIC_EXIT_NO_ANSWER);
	assert_null(v[1].output);
	assert_string_equal(v[1].error, "cannot connect to unix:/fake/1: Connection refused");
	assert_int_equal(v[3].status, -EDESTADDRREQ); /* no endpoint: nothing dialled */
	assert_int_equal(v[3].exit, FCTL_FABRIC_EXIT_NO_ANSWER);
	assert_int_equal(fk.connects, 3);
	assert_int_equal(fk.sent[FCTL_MSG_STATUS], 1u << 0 | 1u << 2);
	assert_int_equal(fctl_fabric_run(&o, 0, v, 4, &oc), -EINVAL);
	assert_int_equal(fctl_fabric_run(&o, FCTL_MSG_STATUS, v, 4, NULL), -EINVAL);
	o.parallel = FCTL_FABRIC_MAX_PARALLEL + 1;
	assert_int_equal(fctl_fabric_run(&o, FCTL_MSG_STATUS, v, 4, &oc), -EINVAL);
	assert_int_equal(fctl_fabric_apply(&o, v, 4, &oc), -EINVAL);
	results_free(v, 4);
}

/* What a request carries: the host name only for an inventory host (name differs
 * from the endpoint), the profile only for plan/apply/diff, the version for
 * rollback, the command's options. */
static void test_call_request(void **state)
{
	static const unsigned char prof[] = "schema: 1\n";
	struct fctl_fabric_opts o = { .options = FCTL_OPT_JSON, .to_version = 4,
				      .profile = prof, .profile_len = sizeof(prof) - 1,
				      .profile_name = "p.yaml" };
	struct fctl_fabric_result r = { 0 };
	struct fctl_inventory_host direct = { .name = "unix:/fake/2", .endpoint = "unix:/fake/2" };

	fake_reset(3);
	r.host = &hosts[1];
	assert_int_equal(fctl_fabric_call(&o, FCTL_MSG_PLAN, &r), 0);
	assert_true(fk.has_host[1]);
	assert_string_equal(fk.host_tlv[1], "h1");
	assert_true(fk.has_profile[1]);
	assert_int_equal(fk.options[1], FCTL_OPT_JSON);
	assert_string_equal(r.output, "{\"result\":\"planned\"}\n");
	assert_int_equal(fctl_fabric_call(&o, FCTL_MSG_ROLLBACK, &r), 0); /* replaces r */
	assert_false(fk.has_profile[1]);
	assert_int_equal(fk.to[1], 4);
	assert_int_equal(r.type, FCTL_MSG_ROLLBACK);
	assert_string_equal(r.output, "{\"result\":\"rolled-back\"}\n");
	fctl_fabric_results_release(&r, 1);
	assert_null(r.output);
	assert_ptr_equal(r.host, &hosts[1]);
	r.host = &direct;
	assert_int_equal(fctl_fabric_call(&o, FCTL_MSG_SHOW, &r), 0);
	assert_false(fk.has_host[2]);
	assert_false(fk.has_profile[2]);
	fctl_fabric_results_release(&r, 1);
	fctl_fabric_results_release(NULL, 3);
	r.host = NULL;
	assert_int_equal(fctl_fabric_call(&o, FCTL_MSG_SHOW, &r), -EINVAL);
}

/* apply --target --confirm: the deadline rides only on apply; confirm is a request of its
 * own; a fabric apply refuses a deadline (its rollback would be refused while pending). */
static void test_call_confirm(void **state)
{
	static const unsigned char prof[] = "schema: 1\n";
	struct fctl_fabric_opts o = { .options = FCTL_OPT_JSON, .profile = prof,
				      .profile_len = sizeof(prof) - 1, .confirm_seconds = 90 };
	struct fctl_fabric_result r = { 0 }, *v;
	struct fctl_fabric_outcome oc;

	(void)state;
	fake_reset(3);
	r.host = &hosts[1];
	assert_int_equal(fctl_fabric_call(&o, FCTL_MSG_APPLY, &r), 0);
	assert_int_equal(fk.confirm[1], 90);
	assert_true(fk.has_profile[1]);
	assert_int_equal(fctl_fabric_call(&o, FCTL_MSG_PLAN, &r), 0);
	assert_int_equal(fk.confirm[1], 0);
	assert_int_equal(fctl_fabric_call(&o, FCTL_MSG_CONFIRM, &r), 0);
	assert_int_equal(fk.confirm[1], 0);
	assert_false(fk.has_profile[1]);
	assert_int_equal(fk.options[1], FCTL_OPT_JSON);
	assert_int_equal(fk.sent[FCTL_MSG_CONFIRM], 1u << 1);
	assert_string_equal(r.output, "confirm of h1\n");
	fctl_fabric_results_release(&r, 1);
	fake_reset(3);
	v = results(3);
	assert_int_equal(fctl_fabric_apply(&o, v, 3, &oc), -EINVAL);
	assert_int_equal(fk.connects, 0);
	results_free(v, 3);
}

/* --- the two-phase apply --- */

static void run_apply(const struct fctl_fabric_opts *o, size_t n, struct fctl_fabric_outcome *oc,
		      struct fctl_fabric_result **out)
{
	struct fctl_fabric_result *v = results(n);

	ev_reset();
	assert_int_equal(fctl_fabric_apply(o, v, n, oc), 0);
	assert_false(fk.bad);
	assert_false(ev.bad);
	*out = v;
}

/* apply --fabric with signature files: every host's apply carries them (the sigs TLV),
 * its plan does not; without them no apply carries the TLV. */
static void test_apply_sigs(void **state)
{
	static const unsigned char prof[] = "schema: 1\n";
	struct fctl_fabric_opts o = { .parallel = 2, .progress = progress, .profile = prof,
				      .profile_len = sizeof(prof) - 1 };
	struct fctl_buf sigs = { 0 };
	struct fctl_fabric_outcome oc;
	struct fctl_fabric_result *v;
	size_t n = 0;

	(void)state;
	assert_int_equal(fctl_proto_sig_put(&sigs, &n, "p.yaml.sig", "SIG-A", 5), 0);
	assert_int_equal(fctl_proto_sig_put(&sigs, &n, "bob.sig", "SIG-B", 5), 0);
	o.sigs = (const unsigned char *)sigs.data;
	o.sigs_len = sigs.len;
	fake_reset(3);
	run_apply(&o, 3, &oc, &v);
	assert_int_equal(fk.sent[FCTL_MSG_APPLY], all(3));
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(fk.apply_sigs[i], sigs.len);
	assert_false(fk.other_sigs);
	results_free(v, 3);
	o.sigs = NULL;
	o.sigs_len = 0;
	fake_reset(3);
	run_apply(&o, 3, &oc, &v);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(fk.apply_sigs[i], 0);
	results_free(v, 3);
	fctl_buf_release(&sigs);
}

/* Host k of n fails in phase 2, for every k and n up to 6: the others, which all
 * applied, and only they, are rolled back to the version they had; the failed
 * host is left to its own rollback. */
static void test_apply_host_k_fails(void **state)
{
	struct fctl_fabric_opts o = { .parallel = 3, .progress = progress };

	for (size_t n = 1; n <= 6; n++) {
		for (size_t k = 0; k < n; k++) {
			struct fctl_fabric_outcome oc;
			struct fctl_fabric_result *v;
			uint32_t others = all(n) & ~(1u << k);
			char want[64];

			fake_reset(n);
			fk.h[k].apply_exit = 3;
			run_apply(&o, n, &oc, &v);
			assert_int_equal(oc.verdict, FCTL_FABRIC_ROLLED_BACK);
			assert_int_equal(fk.sent[FCTL_MSG_STATUS], all(n));
			assert_int_equal(fk.sent[FCTL_MSG_PLAN], all(n));
			assert_int_equal(fk.sent[FCTL_MSG_APPLY], all(n));
			assert_int_equal(fk.sent[FCTL_MSG_ROLLBACK], others);
			assert_int_equal(ev.seen[FCTL_MSG_ROLLBACK], others);
			assert_int_equal(ev.not_rolled_back, 0);
			for (size_t i = 0; i < n; i++) {
				assert_true(v[i].has_prev);
				assert_int_equal(v[i].prev, 7);
				if (i == k) {
					/* not rolled back: the apply's answer stays, type 0 */
					assert_int_equal(v[i].type, 0);
					assert_false(v[i].changed);
					assert_int_equal(v[i].exit, 3);
					snprintf(want, sizeof(want), "apply failed on h%zu\n", k);
					assert_string_equal(v[i].error, want);
				} else {
					assert_int_equal(fk.to[i], 7);
					assert_int_equal(v[i].type, FCTL_MSG_ROLLBACK);
					assert_true(v[i].changed);
					assert_string_equal(v[i].output,
							    "{\"result\":\"rolled-back\"}\n");
				}
			}
			/* each phase ends on every host before the next starts */
			assert_true(fk.last_end[FCTL_MSG_STATUS] < fk.first_start[FCTL_MSG_PLAN]);
			assert_true(fk.last_end[FCTL_MSG_PLAN] < fk.first_start[FCTL_MSG_APPLY]);
			if (others)
				assert_true(fk.last_end[FCTL_MSG_APPLY] <
					    fk.first_start[FCTL_MSG_ROLLBACK]);
			results_free(v, n);
		}
	}
}

struct apply_case {
	const char *name;
	size_t n;
	struct fake_host h[6];
	bool partial, dry_run;
	enum fctl_fabric_verdict verdict;
	int worst;
	uint32_t plan, apply, rollback; /* hosts sent each request */
	uint32_t not_rolled_back;       /* NOT_ROLLED_BACK events */
};

static const struct apply_case apply_cases[] = {
	{ "every host applies", 4, { { 0 } }, false, false, FCTL_FABRIC_APPLIED, 0, 0xf, 0xf, 0,
	  0 },
	{ "dry run: plans only", 4, { { 0 } }, false, true, FCTL_FABRIC_PLANNED, 0, 0xf, 0, 0, 0 },
	{ "a plan fails: no apply anywhere", 4, { [2] = { .plan_exit = 1 } }, false, false,
	  FCTL_FABRIC_PLAN_FAILED, 1, 0xf, 0, 0, 0 },
	{ "plans fail: worst exit", 3, { [0] = { .plan_exit = 1 }, [2] = { .plan_exit = 13 } },
	  false, false, FCTL_FABRIC_PLAN_FAILED, 13, 0x7, 0, 0, 0 },
	{ "a status fails: no plan either", 3, { [1] = { .status_exit = 13 } }, false, false,
	  FCTL_FABRIC_PLAN_FAILED, 13, 0, 0, 0, 0 },
	{ "unreachable at status", 3, { [1] = { .unreachable = true } }, false, false,
	  FCTL_FABRIC_PLAN_FAILED, FCTL_FABRIC_EXIT_NO_ANSWER, 0, 0, 0, 0 },
	{ "--partial: no rollback", 4, { [1] = { .apply_exit = 3 } }, true, false,
	  FCTL_FABRIC_PARTIAL, 0, 0xf, 0xf, 0, 0 },
	{ "an unchanged host is not rolled back", 4,
	  { [0] = { .apply_exit = 3 }, [2] = { .unchanged = true } }, false, false,
	  FCTL_FABRIC_ROLLED_BACK, 0, 0xf, 0xf, 0xa, 0 },
	{ "a changed host without history keeps the profile", 4,
	  { [1] = { .apply_exit = 3 }, [3] = { .no_prev = true } }, false, false,
	  FCTL_FABRIC_ROLLBACK_INCOMPLETE, 0, 0xf, 0xf, 0x5, 0x8 },
	{ "a rollback fails", 4, { [0] = { .apply_exit = 3 }, [2] = { .rollback_exit = 2 } }, false,
	  false, FCTL_FABRIC_ROLLBACK_INCOMPLETE, 0, 0xf, 0xf, 0xe, 0 },
	{ "no answer to an apply counts as a failure", 3, { [2] = { .apply_hangup = true } }, false,
	  false, FCTL_FABRIC_ROLLED_BACK, 0, 0x7, 0x7, 0x3, 0 },
	/* a host whose apply answer did not come in time may have applied */
	{ "a timed-out apply is rolled back too", 3,
	  { [0] = { .apply_exit = 3 }, [2] = { .apply_timeout = true } }, false, false,
	  FCTL_FABRIC_ROLLED_BACK, 0, 0x7, 0x7, 0x6, 0 },
	{ "a timed-out apply without history: incomplete", 3,
	  { [0] = { .apply_exit = 3 }, [1] = { .apply_timeout = true, .no_prev = true } }, false,
	  false, FCTL_FABRIC_ROLLBACK_INCOMPLETE, 0, 0x7, 0x7, 0x4, 0x2 },
	{ "--partial: a timed-out apply is left alone", 3, { [1] = { .apply_timeout = true } },
	  true, false, FCTL_FABRIC_PARTIAL, 0, 0x7, 0x7, 0, 0 },
	{ "every apply fails: nothing to roll back", 3,
	  { [0] = { .apply_exit = 3 }, [1] = { .apply_exit = 3 }, [2] = { .apply_exit = 1 } },
	  false, false, FCTL_FABRIC_ROLLED_BACK, 0, 0x7, 0x7, 0, 0 },
};

static void test_apply_cases(void **state)
{
	for (size_t c = 0; c < FCTL_ARRAY_SIZE(apply_cases); c++) {
		const struct apply_case *t = &apply_cases[c];
		struct fctl_fabric_opts o = { .parallel = 2, .partial = t->partial,
					      .options = t->dry_run ? FCTL_OPT_DRY_RUN : 0,
					      .progress = progress };
		struct fctl_fabric_outcome oc;
		struct fctl_fabric_result *v;

		print_message("apply: %s\n", t->name);
		fake_reset(t->n);
		memcpy(fk.h, t->h, sizeof(t->h));
		run_apply(&o, t->n, &oc, &v);
		assert_string_equal(fctl_fabric_verdict_name(oc.verdict),
				    fctl_fabric_verdict_name(t->verdict));
		assert_int_equal(oc.worst, t->worst);
		assert_int_equal(fk.sent[FCTL_MSG_PLAN], t->plan);
		assert_int_equal(fk.sent[FCTL_MSG_APPLY], t->apply);
		assert_int_equal(fk.sent[FCTL_MSG_ROLLBACK], t->rollback);
		assert_int_equal(ev.not_rolled_back, t->not_rolled_back);
		for (size_t i = 0; i < t->n; i++) {
			bool rb_phase = oc.verdict == FCTL_FABRIC_ROLLED_BACK ||
					oc.verdict == FCTL_FABRIC_ROLLBACK_INCOMPLETE;
			uint8_t want = t->rollback & (1u << i) ? FCTL_MSG_ROLLBACK
				       : rb_phase		 ? 0
				       : t->apply		 ? FCTL_MSG_APPLY
								 : FCTL_MSG_PLAN;

			/* every phase asks for JSON, the command's options aside */
			if (fk.sent[FCTL_MSG_STATUS] & (1u << i))
				assert_int_equal(fk.options[i], FCTL_OPT_JSON);
			assert_int_equal(v[i].type, want);
		}
		results_free(v, t->n);
	}
}

/* The default pool: 64, one slot per 16 hosts above 1,024, at most the maximum. */
static void test_default_parallel(void **state)
{
	(void)state;
	assert_int_equal(fctl_fabric_default_parallel(0), 64);
	assert_int_equal(fctl_fabric_default_parallel(1000), 64);
	assert_int_equal(fctl_fabric_default_parallel(1024), 64);
	assert_int_equal(fctl_fabric_default_parallel(3000), 187);
	assert_int_equal(fctl_fabric_default_parallel(10000), 625);
	assert_int_equal(fctl_fabric_default_parallel(1000000), FCTL_FABRIC_MAX_PARALLEL);
}

static void test_verdict_names(void **state)
{
	assert_string_equal(fctl_fabric_verdict_name(FCTL_FABRIC_OK), "ok");
	assert_string_equal(fctl_fabric_verdict_name(FCTL_FABRIC_FAILED), "failed");
	assert_string_equal(fctl_fabric_verdict_name(FCTL_FABRIC_PLANNED), "planned");
	assert_string_equal(fctl_fabric_verdict_name(FCTL_FABRIC_PLAN_FAILED), "plan-failed");
	assert_string_equal(fctl_fabric_verdict_name(FCTL_FABRIC_APPLIED), "applied");
	assert_string_equal(fctl_fabric_verdict_name(FCTL_FABRIC_PARTIAL), "partial");
	assert_string_equal(fctl_fabric_verdict_name(FCTL_FABRIC_ROLLED_BACK), "rolled-back");
	assert_string_equal(fctl_fabric_verdict_name(FCTL_FABRIC_ROLLBACK_INCOMPLETE),
			    "rollback-incomplete");
}

/* ---- an agent's output inside the fabric JSON ---- */

struct out_case {
	const char *name;
	const char *output;
	const char *want; /* exactly what is appended */
};

static const struct out_case out_cases[] = {
	{ "no output", NULL, "null" },
	{ "an object, its newline dropped", "{\"result\":\"applied\",\"n\":[1,2.5e3,-0]}\n",
	  "{\"result\":\"applied\",\"n\":[1,2.5e3,-0]}" },
	{ "an array", "[true, false, null, \"\\u00e9\"]", "[true, false, null, \"\\u00e9\"]" },
	{ "text is a string", "plan: 2 ops\n", "\"plan: 2 ops\\n\"" },
	/* a hostile agent closes the output and adds a key of its own */
	{ "injection after an object", "{\"a\":1},\"result\":\"ok\",\"x\":{",
	  "\"{\\\"a\\\":1},\\\"result\\\":\\\"ok\\\",\\\"x\\\":{\"" },
	/* ... or one that keeps the document valid and adds a host that "succeeded" */
	{ "injection of a host", "{\"a\":1},\"error\":null},{\"host\":\"evil\",\"exit\":0,\"output\":null",
	  "\"{\\\"a\\\":1},\\\"error\\\":null},{\\\"host\\\":\\\"evil\\\",\\\"exit\\\":0,"
	  "\\\"output\\\":null\"" },
	{ "a truncated object", "{\"result\":\"appl", "\"{\\\"result\\\":\\\"appl\"" },
	{ "an unclosed array", "[1,2", "\"[1,2\"" },
	{ "a trailing comma", "{\"a\":1,}", "\"{\\\"a\\\":1,}\"" },
	{ "two values", "{} {}", "\"{} {}\"" },
	{ "a bare word inside", "{\"a\":tru}", "\"{\\\"a\\\":tru}\"" },
	{ "a raw control character in a string", "{\"a\":\"x\ty\"}", "\"{\\\"a\\\":\\\"x\\ty\\\"}\"" },
	{ "a bad escape", "{\"a\":\"\\q\"}", "\"{\\\"a\\\":\\\"\\\\q\\\"}\"" },
	{ "a leading zero", "[01]", "\"[01]\"" },
	{ "a single quote string", "{'a':1}", "\"{'a':1}\"" },
	{ "invalid UTF-8 in an object: a string, the byte replaced", "{\"a\":\"\xff\"}",
	  "\"{\\\"a\\\":\\\"\\ufffd\\\"}\"" },
	{ "an overlong encoding", "[\"\xc0\xaf\"]", "\"[\\\"\\ufffd\\ufffd\\\"]\"" },
	{ "valid UTF-8 stays", "{\"h\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91\"}",
	  "{\"h\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91\"}" },
	{ "a surrogate in UTF-8 is not valid", "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
	{ "a string with a quote and a backslash", "say \"hi\" \\o/",
	  "\"say \\\"hi\\\" \\\\o/\"" },
};

static void test_output_json(void **state)
{
	struct fctl_buf b = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(out_cases) / sizeof(out_cases[0]); i++) {
		const struct out_case *c = &out_cases[i];

		fctl_buf_reset(&b);
		assert_int_equal(fctl_fabric_json_output(&b, c->output), 0);
		if (!b.data || strcmp(b.data, c->want) != 0)
			fail_msg("case '%s': got %s, want %s", c->name, b.data ? b.data : "(none)",
				 c->want);
		/* whatever the agent said, the result is one valid JSON value */
		if (!fctl_fabric_json_valid(b.data, b.len))
			fail_msg("case '%s': %s is not valid JSON", c->name, b.data);
	}
	fctl_buf_release(&b);
}

static void test_json_depth(void **state)
{
	struct fctl_buf in = { 0 }, out = { 0 };

	(void)state;
	/* 64 levels are a value; 65 are text (bounded recursion on a hostile agent) */
	for (int i = 0; i < 64; i++)
		fctl_buf_putc(&in, '[');
	for (int i = 0; i < 64; i++)
		fctl_buf_putc(&in, ']');
	assert_true(fctl_fabric_json_valid(in.data, in.len));
	fctl_buf_reset(&in);
	for (int i = 0; i < 100000; i++)
		fctl_buf_putc(&in, '[');
	for (int i = 0; i < 100000; i++)
		fctl_buf_putc(&in, ']');
	assert_false(fctl_fabric_json_valid(in.data, in.len));
	assert_int_equal(fctl_fabric_json_output(&out, in.data), 0);
	assert_int_equal(out.data[0], '"');
	assert_true(fctl_fabric_json_valid(out.data, out.len));
	fctl_buf_release(&in);
	fctl_buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_bound),
		cmocka_unit_test(test_pool_order),
		cmocka_unit_test(test_run_worst),
		cmocka_unit_test(test_call_request),
		cmocka_unit_test(test_call_confirm),
		cmocka_unit_test(test_apply_sigs),
		cmocka_unit_test(test_apply_host_k_fails),
		cmocka_unit_test(test_apply_cases),
		cmocka_unit_test(test_default_parallel),
		cmocka_unit_test(test_verdict_names),
		cmocka_unit_test(test_output_json),
		cmocka_unit_test(test_json_depth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
