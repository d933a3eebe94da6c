// SPDX-License-Identifier: MIT
/* Fabric-wide requests over the agent client: the thread pool and the two-phase
 * apply with its rollback (contract in fctl/fabric.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/fabric.h"

static char *dupn(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		if (n)
			memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

static void result_reset(struct fctl_fabric_result *r)
{
	free(r->output);
	free(r->error);
	r->output = r->error = NULL;
	r->status = 0;
	r->exit = 0;
	r->profile_sent = 0;
	r->tls_resumed = false;
}

static void no_answer(struct fctl_fabric_result *r, int status, const char *why)
{
	r->status = status;
	r->exit = FCTL_FABRIC_EXIT_NO_ANSWER;
	r->error = dupn(why, strlen(why));
}

/* The request of one phase (r->type, with `options`) to one host, on its own connection. */
static void call_host(const struct fctl_fabric_opts *o, uint32_t options,
		      struct fctl_fabric_result *r)
{
	const struct fctl_inventory_host *h = r->host;
	struct fctl_agent_conn *c = NULL;
	struct fctl_buf frame = { 0 };
	struct fctl_msg req = { .type = r->type }, resp;
	unsigned char *part = NULL;
	char err[768] = "";
	int e;

	result_reset(r);
	if (!h->endpoint[0]) {
		no_answer(r, -EDESTADDRREQ, "");
		return;
	}
	e = fctl_agent_connect(h->endpoint, o->tls, o->timeout_s ? o->timeout_s
								 : FCTL_FABRIC_DEFAULT_TIMEOUT,
			       &c, err, sizeof(err));
	if (e == 0) {
		r->tls_resumed = fctl_agent_conn_tls_resumed(c);
		req.options = options;
		req.present = FCTL_HAS_OPTIONS;
		if (strcmp(h->name, h->endpoint) != 0) {
			/* an inventory host: the agent acts as that profile host */
			req.present |= FCTL_HAS_HOST;
			snprintf(req.host, sizeof(req.host), "%s", h->name);
		}
		if (fctl_proto_is_probe(r->type)) {
			req.present |= FCTL_HAS_PROBE;
			snprintf(req.probe, sizeof(req.probe), "%s", r->probe ? r->probe : "");
		}
		if (r->type == FCTL_MSG_PLAN || r->type == FCTL_MSG_APPLY ||
		    r->type == FCTL_MSG_DIFF || fctl_proto_is_probe(r->type)) {
			size_t n = 0;

			req.present |= FCTL_HAS_PROFILE | FCTL_HAS_PROFILE_NAME;
			req.profile = o->profile;
			req.profile_len = (uint32_t)o->profile_len;
			if ((r->type == FCTL_MSG_PLAN || r->type == FCTL_MSG_DIFF) && o->profile_for &&
			    (part = o->profile_for(o->profile_for_ctx, h, &n))) {
				req.profile = part;
				req.profile_len = (uint32_t)n;
			}
			r->profile_sent = req.profile_len;
			snprintf(req.profile_name, sizeof(req.profile_name), "%s",
				 o->profile_name ? o->profile_name : "");
		}
		if (r->type == FCTL_MSG_APPLY && o->sigs_len) {
			req.present |= FCTL_HAS_SIGS;
			req.sigs = o->sigs;
			req.sigs_len = (uint32_t)o->sigs_len;
		}
		if (r->type == FCTL_MSG_APPLY && o->confirm_seconds) {
			req.present |= FCTL_HAS_CONFIRM;
			req.confirm_seconds = o->confirm_seconds;
		}
		if (r->type == FCTL_MSG_ROLLBACK) {
			req.present |= FCTL_HAS_TO_VERSION;
			req.to_version = r->to;
		}
		e = fctl_agent_call(c, &req, &resp, &frame, err, sizeof(err));
	}
	if (e < 0) {
		no_answer(r, e, err);
	} else {
		r->exit = (int)resp.result;
		r->output = dupn(resp.output, resp.output_len);
		r->error = dupn(resp.error, resp.error_len);
	}
	fctl_buf_release(&frame);
	fctl_agent_conn_free(c);
	free(part);
}

struct pool {
	const struct fctl_fabric_opts *o;
	uint8_t phase;
	uint32_t options;
	struct fctl_fabric_result *v;
	size_t n;
	pthread_mutex_t lock;
	size_t next, done, total;
};

static void *pool_worker(void *arg)
{
	struct pool *p = arg;

	for (;;) {
		struct fctl_fabric_progress ev = { .event = FCTL_FABRIC_HOST_DONE };
		size_t i;

		pthread_mutex_lock(&p->lock);
		i = p->next++;
		pthread_mutex_unlock(&p->lock);
		if (i >= p->n)
			break;
		if (!p->v[i].type)
			continue;
		call_host(p->o, p->options, &p->v[i]);
		pthread_mutex_lock(&p->lock);
		ev.done = ++p->done;
		ev.phase = p->phase;
		ev.total = p->total;
		ev.r = &p->v[i];
		if (p->o->progress)
			p->o->progress(p->o->progress_ctx, &ev);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

unsigned fctl_fabric_default_parallel(size_t hosts)
{
	size_t p = hosts / FCTL_FABRIC_HOSTS_PER_SLOT;

	if (p < FCTL_FABRIC_DEFAULT_PARALLEL)
		return FCTL_FABRIC_DEFAULT_PARALLEL;
	return p > FCTL_FABRIC_MAX_PARALLEL ? FCTL_FABRIC_MAX_PARALLEL : (unsigned)p;
}

/* A pool thread's stack: a request needs far less than the 8 MiB default, and a
 * large pool would reserve gigabytes of address space. */
#define POOL_STACK (256u << 10)

/* Runs the requests set in v[] (type != 0) with at most o->parallel at once. */
static void run_phase(const struct fctl_fabric_opts *o, uint8_t phase, uint32_t options,
		      struct fctl_fabric_result *v, size_t n)
{
	struct pool p = { .o = o, .phase = phase, .options = options, .v = v, .n = n };
	size_t nt, started = 0;
	pthread_attr_t attr;
	pthread_t *th;

	for (size_t i = 0; i < n; i++)
		p.total += v[i].type != 0;
	nt = o->parallel ? o->parallel : fctl_fabric_default_parallel(p.total);
	if (nt > p.total)
		nt = p.total;
	if (nt > FCTL_FABRIC_MAX_PARALLEL)
		nt = FCTL_FABRIC_MAX_PARALLEL;
	th = nt ? calloc(nt, sizeof(*th)) : NULL;
	if (!th)
		nt = 0;
	pthread_mutex_init(&p.lock, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, POOL_STACK);
	for (size_t i = 0; i < nt; i++)
		if (pthread_create(&th[started], &attr, pool_worker, &p) == 0)
			started++;
	pthread_attr_destroy(&attr);
	if (!started)
		pool_worker(&p);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	pthread_mutex_destroy(&p.lock);
}

static void set_phase(struct fctl_fabric_result *v, size_t n, uint8_t type)
{
	for (size_t i = 0; i < n; i++)
		v[i].type = type;
}

const char *fctl_fabric_verdict_name(enum fctl_fabric_verdict v)
{
	static const char *const names[] = {
		[FCTL_FABRIC_OK] = "ok",
		[FCTL_FABRIC_FAILED] = "failed",
		[FCTL_FABRIC_PLANNED] = "planned",
		[FCTL_FABRIC_PLAN_FAILED] = "plan-failed",
		[FCTL_FABRIC_APPLIED] = "applied",
		[FCTL_FABRIC_PARTIAL] = "partial",
		[FCTL_FABRIC_ROLLED_BACK] = "rolled-back",
		[FCTL_FABRIC_ROLLBACK_INCOMPLETE] = "rollback-incomplete",
	};

	return (size_t)v < FCTL_ARRAY_SIZE(names) ? names[v] : "unknown";
}

int fctl_fabric_call(const struct fctl_fabric_opts *o, uint8_t type,
		     struct fctl_fabric_result *r)
{
	if (!o || !r || !r->host || !type)
		return -EINVAL;
	r->type = type;
	r->to = o->to_version;
	call_host(o, o->options, r);
	return 0;
}

static bool valid_phase(const struct fctl_fabric_opts *o, const struct fctl_fabric_result *v,
			size_t n)
{
	if (!o || (n && !v) || o->parallel > FCTL_FABRIC_MAX_PARALLEL)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!v[i].host)
			return false;
	return true;
}

int fctl_fabric_run(const struct fctl_fabric_opts *o, uint8_t type, struct fctl_fabric_result *v,
		    size_t n, struct fctl_fabric_outcome *out)
{
	int worst = 0;

	if (!valid_phase(o, v, n) || !type || !out)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		v[i].type = type;
		v[i].to = o->to_version;
	}
	run_phase(o, type, o->options, v, n);
	for (size_t i = 0; i < n; i++)
		worst = v[i].exit > worst ? v[i].exit : worst;
	out->verdict = worst ? FCTL_FABRIC_FAILED : FCTL_FABRIC_OK;
	out->worst = worst;
	return 0;
}

/* "...\"applied_version\":N..." of a status --json output */
static bool parse_prev(const char *s, uint64_t *v)
{
	const char *p = s ? strstr(s, "\"applied_version\":") : NULL;

	if (!p)
		return false;
	p += strlen("\"applied_version\":");
	if (*p < '0' || *p > '9')
		return false;
	*v = strtoull(p, NULL, 10);
	return true;
}

/* Phase 1: status, then plan; true when every host answered 0 to both. */
static bool status_and_plan(const struct fctl_fabric_opts *o, struct fctl_fabric_result *v,
			    size_t n, int *worst)
{
	bool ok = true;

	set_phase(v, n, FCTL_MSG_STATUS);
	run_phase(o, FCTL_MSG_STATUS, FCTL_OPT_JSON, v, n);
	for (size_t i = 0; i < n; i++) {
		if (v[i].exit) {
			ok = false;
			*worst = *worst > v[i].exit ? *worst : v[i].exit;
		}
		v[i].has_prev = parse_prev(v[i].output, &v[i].prev);
		v[i].type = FCTL_MSG_PLAN;
	}
	if (!ok)
		return false;
	run_phase(o, FCTL_MSG_PLAN, FCTL_OPT_JSON, v, n);
	for (size_t i = 0; i < n; i++)
		if (v[i].exit) {
			ok = false;
			*worst = *worst > v[i].exit ? *worst : v[i].exit;
		}
	return ok;
}

/* The rollback decision after a failed apply phase: a rollback to its previous
 * version for each host changed that has one; the others take no part (type 0).
 * False when a changed host cannot be rolled back. */
static bool mark_rollback(const struct fctl_fabric_opts *o, struct fctl_fabric_result *v,
			  size_t n)
{
	bool all = true;

	for (size_t i = 0; i < n; i++) {
		v[i].type = 0;
		if (!v[i].changed)
			continue;
		if (!v[i].has_prev) {
			struct fctl_fabric_progress ev = {
				.event = FCTL_FABRIC_NOT_ROLLED_BACK,
				.phase = FCTL_MSG_ROLLBACK,
				.r = &v[i],
			};

			if (o->progress)
				o->progress(o->progress_ctx, &ev);
			all = false;
			continue;
		}
		v[i].type = FCTL_MSG_ROLLBACK;
		v[i].to = v[i].prev;
	}
	return all;
}

int fctl_fabric_apply(const struct fctl_fabric_opts *opts, struct fctl_fabric_result *v,
		      size_t n, struct fctl_fabric_outcome *out)
{
	struct fctl_fabric_opts whole;
	const struct fctl_fabric_opts *o = &whole;
	bool failed = false, rb_ok;
	size_t changed = 0;
	int worst = 0;

	if (!valid_phase(opts, v, n) || !out || opts->confirm_seconds)
		return -EINVAL;
	/* every phase sends the whole profile: the plan checks what the apply sends */
	whole = *opts;
	whole.profile_for = NULL;
	if (!status_and_plan(o, v, n, &worst)) {
		*out = (struct fctl_fabric_outcome){ FCTL_FABRIC_PLAN_FAILED, worst };
		return 0;
	}
	if (o->options & FCTL_OPT_DRY_RUN) {
		*out = (struct fctl_fabric_outcome){ FCTL_FABRIC_PLANNED, 0 };
		return 0;
	}
	/* phase 2: apply everywhere */
	set_phase(v, n, FCTL_MSG_APPLY);
	run_phase(o, FCTL_MSG_APPLY, FCTL_OPT_JSON, v, n);
	for (size_t i = 0; i < n; i++) {
		/* a host whose answer did not come in time may have applied */
		v[i].changed = (v[i].exit == 0 && v[i].output &&
				strstr(v[i].output, "\"result\":\"applied\"")) ||
			       v[i].status == -ETIMEDOUT;
		changed += v[i].changed;
		failed |= v[i].exit != 0;
	}
	if (!failed || o->partial) {
		*out = (struct fctl_fabric_outcome){
			failed ? FCTL_FABRIC_PARTIAL : FCTL_FABRIC_APPLIED, 0
		};
		return 0;
	}
	/* phase 3: put the hosts already changed back to the version they had; the
	 * rollback's answers replace the apply's only for the hosts rolled back */
	rb_ok = mark_rollback(o, v, n);
	if (changed)
		run_phase(o, FCTL_MSG_ROLLBACK, FCTL_OPT_JSON, v, n);
	for (size_t i = 0; i < n; i++)
		if (v[i].type == FCTL_MSG_ROLLBACK && v[i].exit)
			rb_ok = false;
	*out = (struct fctl_fabric_outcome){
		rb_ok ? FCTL_FABRIC_ROLLED_BACK : FCTL_FABRIC_ROLLBACK_INCOMPLETE, 0
	};
	return 0;
}

void fctl_fabric_results_release(struct fctl_fabric_result *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct fctl_inventory_host *h = v[i].host;

		free(v[i].output);
		free(v[i].error);
		v[i] = (struct fctl_fabric_result){ .host = h };
	}
}
