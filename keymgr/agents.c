// SPDX-License-Identifier: MIT
/*
 * keymgr's side of the agents: one connection per agent endpoint, shared by every link
 * with an end there; requests never resent (the journal decides); SA dumps parsed into
 * struct km_dump.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/rotation.h"
#include "keymgr.h"

static int parse_dump(const char *text, uint64_t peer_sci, struct km_dump *d);

/* --- agent requests: one connection per agent, shared by all links ------------ */

void km_close_conns(struct km *k)
{
	for (size_t i = 0; i < k->n_conns; i++)
		fctl_agent_conn_free(k->conns[i].conn);
	free(k->conns);
	k->conns = NULL;
	k->n_conns = 0;
}

static struct km_conn *conn_of(struct km *k, const char *endpoint)
{
	struct km_conn *c;

	for (size_t i = 0; i < k->n_conns; i++)
		if (strcmp(k->conns[i].endpoint, endpoint) == 0)
			return &k->conns[i];
	c = realloc(k->conns, (k->n_conns + 1) * sizeof(*c));
	if (!c)
		return NULL;
	k->conns = c;
	c = &k->conns[k->n_conns++];
	c->endpoint = endpoint;
	c->conn = NULL;
	return c;
}

int km_call(struct km *k, struct km_end *e, struct fctl_msg *req, struct fctl_buf *out, char *err,
	    size_t errlen)
{
	struct km_conn *c = conn_of(k, e->endpoint);
	struct fctl_buf frame = { 0 };
	struct fctl_msg resp;
	char why[512];
	int r;

	if (!c) {
		snprintf(err, errlen, "%s: out of memory", e->host);
		return -ENOMEM;
	}
	/* the journal's step and keymgr's records are on disk before the agent acts */
	r = km_flush_before_request(k, err, errlen);
	if (r < 0)
		return r;
	double t0 = km_now_ms();

	if (c->conn && !fctl_agent_conn_idle_ok(c->conn)) {
		/* closed by the agent while idle (its timeout): nothing was in flight */
		fctl_agent_conn_free(c->conn);
		c->conn = NULL;
	}
	if (!c->conn) {
		r = fctl_agent_connect(e->endpoint, k->tls, k->timeout_s, &c->conn, why,
				       sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "%s (%s): %s", e->host, e->endpoint, why);
			return r;
		}
		k->agent_connects++;
	}
	snprintf(req->ifname, sizeof(req->ifname), "%s", e->ifname);
	req->present |= FCTL_HAS_IFNAME;
	k->agent_requests++;
	r = fctl_agent_call(c->conn, req, &resp, &frame, why, sizeof(why));
	if (r < 0) {
		/* never resent: whether the agent acted is unknown, the journal decides */
		fctl_agent_conn_free(c->conn);
		c->conn = NULL;
		snprintf(err, errlen, "%s (%s): %s", e->host, e->endpoint, why);
	} else if (resp.result != 0) {
		int n = resp.error_len > 400 ? 400 : (int)resp.error_len;

		while (n && (resp.error[n - 1] == '\n'))
			n--;
		snprintf(err, errlen, "%s: %.*s", e->host, n, resp.error ? resp.error : "");
		r = -EIO;
	} else if (out && resp.output_len) {
		fctl_buf_append(out, resp.output, resp.output_len);
		fctl_buf_append(out, "", 1);
		out->len--;
	}
	fctl_buf_release(&frame);
	k->self_ms[KS_AGENTS] += km_now_ms() - t0;
	return r;
}

/* The response of one batch: "op I ok" / "op I failed: WHY" lines, a dump's text after
 * its line, into ops[idx[I]]. A record the response does not mention failed. */
static void batch_results(struct km_op *ops, const size_t *idx, size_t n, const char *text)
{
	const char *p = text;
	struct km_op *cur = NULL;

	for (size_t i = 0; i < n; i++) {
		ops[idx[i]].r = -EPROTO;
		snprintf(ops[idx[i]].err, sizeof(ops[idx[i]].err), "%s: no answer for this SA "
			 "operation in the agent's response", ops[idx[i]].e->host);
	}
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
		size_t i;
		int at = 0;

		if (sscanf(p, "op %zu %n", &i, &at) == 1 && at && i < n) {
			cur = &ops[idx[i]];
			if (strncmp(p + at, "ok\n", 3) == 0) {
				cur->r = 0;
				cur->err[0] = 0;
			} else {
				int m = (int)(len - (size_t)at - (nl ? 1 : 0));

				cur->r = -EIO;
				snprintf(cur->err, sizeof(cur->err), "%s: %.*s", cur->e->host,
					 m > 400 ? 400 : m, p + at);
				cur = NULL;
			}
		} else if (cur) {
			fctl_buf_append(&cur->out, p, len);
		}
		p = nl ? nl + 1 : NULL;
	}
	for (size_t i = 0; i < n; i++) {
		fctl_buf_append(&ops[idx[i]].out, "", 1);
		ops[idx[i]].out.len--;
	}
}

/* One sa-batch to the agent of endpoint ep with the records of ops[idx[0..n)]. */
static void call_batch(struct km *k, struct km_op *ops, const size_t *idx, size_t n)
{
	static const uint8_t zero[FCTL_SA_OP_LEN];
	struct km_end *e = ops[idx[0]].e;
	struct km_conn *c = conn_of(k, e->endpoint);
	struct fctl_msg req = { .type = FCTL_MSG_SA_BATCH, .present = FCTL_HAS_SA_OPS };
	struct fctl_buf recs = { 0 }, frame = { 0 };
	struct fctl_msg resp;
	char why[512] = "";
	int r = c ? 0 : -ENOMEM;

	/* sized once: no realloc leaves a SAK behind */
	for (size_t i = 0; i < n && r == 0; i++)
		r = fctl_buf_append(&recs, zero, sizeof(zero)) < 0 ? -ENOMEM : 0;
	fctl_buf_reset(&recs);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct km_op *o = &ops[idx[i]];

		snprintf(o->m.ifname, sizeof(o->m.ifname), "%s", o->e->ifname);
		o->m.present |= FCTL_HAS_IFNAME;
		r = fctl_proto_sa_op_put(&o->m, &recs);
		if (r < 0)
			snprintf(why, sizeof(why), "cannot encode an SA operation: %s", strerror(-r));
	}
	if (r == 0 && c->conn && !fctl_agent_conn_idle_ok(c->conn)) {
		fctl_agent_conn_free(c->conn);
		c->conn = NULL;
	}
	if (r == 0 && !c->conn) {
		r = fctl_agent_connect(e->endpoint, k->tls, k->timeout_s, &c->conn, why, sizeof(why));
		if (r == 0)
			__atomic_fetch_add(&k->agent_connects, 1, __ATOMIC_RELAXED);
	}
	if (r == 0) {
		req.sa_ops = (const uint8_t *)recs.data;
		req.sa_ops_len = (uint32_t)recs.len;
		__atomic_fetch_add(&k->agent_requests, 1, __ATOMIC_RELAXED);
		/* --timeout is per KM_TIMEOUT_RECORDS records: the agent runs them one by one */
		fctl_agent_conn_set_timeout(c->conn, k->timeout_s *
					    (unsigned)(1 + n / KM_TIMEOUT_RECORDS));
		r = fctl_agent_call(c->conn, &req, &resp, &frame, why, sizeof(why));
		if (r == 0)
			fctl_agent_conn_set_timeout(c->conn, k->timeout_s);
		if (r < 0) { /* never resent: the journal decides */
			fctl_agent_conn_free(c->conn);
			c->conn = NULL;
		}
	}
	if (recs.data)
		fctl_memzero(recs.data, recs.len);
	fctl_buf_release(&recs);
	for (size_t i = 0; i < n; i++)
		ops[idx[i]].requests++;
	if (r == 0 && (resp.result == 0 || resp.result == 1) && resp.output_len) {
		struct fctl_buf t = { 0 };

		fctl_buf_append(&t, resp.output, resp.output_len);
		fctl_buf_append(&t, "", 1);
		batch_results(ops, idx, n, t.data ? t.data : "");
		fctl_buf_release(&t);
	} else {
		if (r == 0) {
			int m = resp.error_len > 400 ? 400 : (int)resp.error_len;

			while (m && resp.error[m - 1] == '\n')
				m--;
			snprintf(why, sizeof(why), "%.*s", m, resp.error ? resp.error : "");
			r = -EIO;
		}
		for (size_t i = 0; i < n; i++) {
			ops[idx[i]].r = r;
			snprintf(ops[idx[i]].err, sizeof(ops[idx[i]].err), "%s (%s): %s", e->host,
				 e->endpoint, why);
		}
	}
	fctl_buf_release(&frame);
}

/* One request of a phase: records idx[0..n) of ops, all to one endpoint. */
struct km_group {
	struct km *k;
	struct km_op *ops;
	size_t *idx, n;
};

/* The pool's threads take the next group until none is left. */
struct km_pool {
	struct km_group *g;
	size_t n, next;
	pthread_mutex_t mu;
};

static void *pool_worker(void *arg)
{
	struct km_pool *p = arg;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&p->mu);
		i = p->next++;
		pthread_mutex_unlock(&p->mu);
		if (i >= p->n)
			return NULL;
		call_batch(p->g[i].k, p->g[i].ops, p->g[i].idx, p->g[i].n);
	}
}

/* The groups at most k->parallel at once (each endpoint's connection is its own). */
static void run_groups(struct km *k, struct km_group *g, size_t n)
{
	struct km_pool p = { .g = g, .n = n };
	unsigned want = k->parallel ? k->parallel : 1;
	pthread_t th[KM_MAX_PARALLEL];
	unsigned started = 0;

	if (want > KM_MAX_PARALLEL)
		want = KM_MAX_PARALLEL;
	if (want > n)
		want = (unsigned)n;
	pthread_mutex_init(&p.mu, NULL);
	for (unsigned t = 1; t < want; t++)
		if (pthread_create(&th[started], NULL, pool_worker, &p) == 0)
			started++;
	pool_worker(&p); /* this thread too (alone when no thread could start) */
	for (unsigned t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&p.mu);
}

int km_call_ops(struct km *k, struct km_op *ops, size_t n)
{
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	struct km_group *g = calloc(n ? n : 1, sizeof(*g));
	bool *done = calloc(n ? n : 1, sizeof(*done));
	size_t m = 0, ng = 0;
	int worst = 0;

	if (!idx || !done || !g) {
		free(idx);
		free(done);
		free(g);
		return -ENOMEM;
	}
	/* the journals' steps and keymgr's records are on disk before the agents act */
	{
		char why[512];

		if (km_flush_before_request(k, why, sizeof(why)) < 0) {
			for (size_t i = 0; i < n; i++) {
				ops[i].r = -EIO;
				snprintf(ops[i].err, sizeof(ops[i].err), "%s", why);
			}
			free(idx);
			free(done);
			free(g);
			return -EIO;
		}
	}
	/* one request per endpoint (in chunks of KM_BATCH_MAX), records in the given order;
	 * every connection slot made here, before the pool's threads share k->conns */
	for (size_t i = 0; i < n; i++) {
		if (done[i])
			continue;
		if (!conn_of(k, ops[i].e->endpoint)) {
			worst = -ENOMEM;
			break;
		}
		for (size_t j = i; j < n; j++) {
			if (done[j] || strcmp(ops[j].e->endpoint, ops[i].e->endpoint) != 0)
				continue;
			done[j] = true;
			if (!ng || g[ng - 1].n == KM_BATCH_MAX || j == i)
				g[ng++] = (struct km_group){ k, ops, idx + m, 0 };
			idx[m++] = j;
			g[ng - 1].n++;
		}
	}
	double t0 = km_now_ms();

	if (worst == 0)
		run_groups(k, g, ng);
	k->self_ms[KS_AGENTS] += km_now_ms() - t0;
	for (size_t i = 0; i < n && worst == 0; i++)
		if (ops[i].r < 0)
			worst = ops[i].r;
	free(idx);
	free(done);
	free(g);
	return worst;
}

void km_ops_release(struct km_op *ops, size_t n)
{
	for (size_t i = 0; ops && i < n; i++)
		fctl_buf_release(&ops[i].out);
}

void km_parse_dump(const char *text, uint64_t peer_sci, struct km_dump *d)
{
	parse_dump(text, peer_sci, d);
}

static int parse_hex16(const char *s, uint8_t out[FCTL_KEYID_LEN])
{
	return fctl_parse_hex(s, out, FCTL_KEYID_LEN);
}

static int parse_dump(const char *text, uint64_t peer_sci, struct km_dump *d)
{
	const char *p = text;

	memset(d, 0, sizeof(*d));
	while (p && *p) {
		char line[512], kid[64];
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		unsigned an, act, u;
		uint64_t sci, pn, a1, a2, a3, a4, a5;
		uint32_t v;
		int got;

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), p);
		p = nl ? nl + 1 : NULL;
		if (sscanf(line, "secy %*s sci %*x encoding_sa %u", &u) == 1) {
			d->encoding_sa = u;
		} else if (sscanf(line, "tx an %u active %u pn %" SCNu64 " keyid %63s", &an, &act, &pn,
				  kid) == 4 && an < FCTL_MAX_AN) {
			d->tx[an].present = true;
			d->tx[an].active = act;
			d->tx[an].pn = pn;
			parse_hex16(kid, d->tx[an].keyid);
		} else if (sscanf(line, "rxsc sci %" SCNx64 " active %u not_valid %" SCNu64
				  " not_using_sa %" SCNu64 " unused_sa %" SCNu64 " invalid %" SCNu64,
				  &sci, &act, &a1, &a2, &a3, &a4) == 6 && sci == peer_sci) {
			d->sc_not_valid = a1;
			d->sc_not_using_sa = a2;
			d->sc_unused_sa = a3;
			d->sc_invalid = a4;
		} else if (sscanf(line, "rx sci %" SCNx64 " an %u active %u pn %" SCNu64
				  " keyid %63s ok %" SCNu64 " not_valid %" SCNu64 " not_using_sa %" SCNu64
				  " unused_sa %" SCNu64 " invalid %" SCNu64, &sci, &an, &act, &pn, kid,
				  &a1, &a2, &a3, &a4, &a5) == 10 && an < FCTL_MAX_AN && sci == peer_sci) {
			struct km_sa *s = &d->rx[an];

			s->present = true;
			s->active = act;
			s->pn = pn;
			parse_hex16(kid, s->keyid);
			s->ok = a1;
			s->not_valid = a2;
			s->not_using_sa = a3;
			s->unused_sa = a4;
			s->invalid = a5;
		} else if ((got = sscanf(line, "rotation an %u version %" SCNu32 " busy %" SCNu64
					 " keyid %63s", &an, &v, &pn, kid)) >= 3 && an < FCTL_MAX_AN) {
			d->has_rotation = true;
			d->rot.an = (uint8_t)an;
			d->rot.version = v;
			d->rot.busy_until = pn;
			d->rot.has_keyid = got == 4 && parse_hex16(kid, d->rot.keyid) == 0;
		}
	}
	return 0;
}

uint32_t km_end_version(const struct km_link *l, const struct km_dump *d)
{
	/* the agent's record only when it belongs to this key reference (docs/rotation.md) */
	return d->has_rotation && fctl_rotation_applies(&l->ref, &d->rot) ? d->rot.version
									 : l->ref.version;
}

int km_dump_link(struct km *k, struct km_link *l, struct km_dump d[2], char *err, size_t errlen)
{
	for (int i = 0; i < 2; i++) {
		struct fctl_msg m = { .type = FCTL_MSG_SA_DUMP };
		struct fctl_buf o = { 0 };
		int r = km_call(k, &l->end[i], &m, &o, err, errlen);

		if (r == 0)
			parse_dump(o.data ? o.data : "", l->end[i].peer_sci, &d[i]);
		fctl_buf_release(&o);
		if (r < 0)
			return r;
	}
	return 0;
}
