// SPDX-License-Identifier: MIT
/* Refused connections: counted, audited once per reason and source, then in counts and a summary. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>

#include "agentd_int.h"

/*
 * An unauthenticated peer can be refused as fast as it can connect, and every
 * audit record is appended and fsynced: one record per refusal would let it flood
 * the log and stall the loop. So, per interval (cfg.refusal_interval_s): the first
 * refusal of a reason, detail and source is audited at once, as it always was; the
 * next ones are counted and audited as one record with their count when the
 * interval ends ("refused N more times from SOURCE in the last T s: DETAIL"), and a
 * source refused again in the interval after keeps being counted, not audited one
 * by one. At most cfg.max_refusal_sources reasons and sources are tracked; the
 * refusals of any other one are counted in the summary only. The summary record
 * ("N connections refused from M addresses in the last T s (REASON N, ...)") closes
 * an interval in which any refusal was not audited one by one. So an interval holds
 * at most 2 * max_refusal_sources + 1 records of refusals, however many there were.
 */

/* The record's actor of a source: its address (TLS, metrics) or its uid (Unix). */
static const char *actor(const struct refusal_src *s, char *buf, size_t len)
{
	if (s->kind == C_UNIX)
		return NULL;
	snprintf(buf, len, "%s peer %s", s->kind == C_TLS ? "tls" : "metrics", s->source);
	return buf;
}

static void arm(struct agent *a)
{
	struct itimerspec its = { .it_value.tv_sec = a->cfg.refusal_interval_s };

	if (a->refusals.armed || a->refusal_tfd < 0)
		return;
	if (timerfd_settime(a->refusal_tfd, 0, &its, NULL) == 0) {
		a->refusals.armed = true;
		a->refusals.start_ms = fctl_agentd_now_ms();
	}
}

static struct refusal_src *find(struct refusals *r, enum fctl_refusal why, const char *source,
				const char *detail)
{
	for (size_t i = 0; i < r->n; i++) {
		struct refusal_src *s = &r->src[i];

		if (s->why == why && strcmp(s->source, source) == 0 &&
		    strncmp(s->detail, detail, sizeof(s->detail) - 1) == 0)
			return s;
	}
	return NULL;
}

/* A new entry for c's source, or NULL when the table is full (or out of memory). */
static struct refusal_src *add(struct agent *a, const struct conn *c, enum fctl_refusal why,
			       const char *detail)
{
	struct refusals *r = &a->refusals;
	struct refusal_src *s;

	if (r->n >= a->cfg.max_refusal_sources)
		return NULL;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 8;

		s = realloc(r->src, cap * sizeof(*s));
		if (!s)
			return NULL;
		r->src = s;
		r->cap = cap;
	}
	s = &r->src[r->n++];
	memset(s, 0, sizeof(*s));
	s->why = why;
	s->kind = c->kind;
	snprintf(s->source, sizeof(s->source), "%s", c->peer);
	snprintf(s->detail, sizeof(s->detail), "%s", detail);
	s->has_uid = c->has_uid;
	s->uid = c->uid;
	s->seen = 1;
	return s;
}

void fctl_agentd_refuse(struct agent *a, struct conn *c, enum fctl_refusal why,
			const char *detail)
{
	struct refusals *r = &a->refusals;
	struct refusal_src *s;
	bool recorded = false;

	if (!detail)
		detail = fctl_refusal_name(why);
	a->st.refused[why]++;
	r->total++;
	r->by_reason[why]++;
	arm(a);
	s = find(r, why, c->peer, detail);
	if (s) {
		s->repeats++;
		s->seen++;
	} else if (add(a, c, why, detail)) {
		recorded = true;
	} else {
		r->overflow++;
	}
	if (recorded) {
		fctl_agentd_audit_event(a, "connect", "refused", c, detail);
	} else {
		r->unrecorded++;
		a->st.refusals_aggregated++;
	}
	fctl_agentd_conn_close(&a->ct, c);
}

/* The sources of this interval's tracked refusals, each counted once. */
static size_t sources(const struct refusals *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++) {
		size_t j;

		if (!r->src[i].seen)
			continue;
		for (j = 0; j < i; j++)
			if (r->src[j].seen && strcmp(r->src[j].source, r->src[i].source) == 0)
				break;
		n += j == i;
	}
	return n;
}

static void summary(struct agent *a, unsigned secs)
{
	const struct refusals *r = &a->refusals;
	char d[512];
	size_t off;

	off = (size_t)snprintf(d, sizeof(d), "%" PRIu64 " connections refused from %s%zu "
			       "addresses in the last %u s (", r->total,
			       r->overflow ? "more than " : "", sources(r), secs);
	for (unsigned k = 0; k < FCTL_REFUSED_MAX && off < sizeof(d); k++)
		if (r->by_reason[k])
			off += (size_t)snprintf(d + off, sizeof(d) - off, "%s%s %" PRIu64,
						d[off - 1] == '(' ? "" : ", ",
						fctl_refusal_name((enum fctl_refusal)k),
						r->by_reason[k]);
	if (off < sizeof(d))
		snprintf(d + off, sizeof(d) - off, ")");
	fctl_agentd_audit_actor(a, "connect", "refused-summary", NULL, false, 0, d);
}

void fctl_agentd_refusals_flush(struct agent *a)
{
	struct refusals *r = &a->refusals;
	size_t keep = 0;
	/* the interval, or less at shutdown: to the nearest second, at least 1 */
	unsigned secs = (unsigned)((fctl_agentd_now_ms() - r->start_ms + 500) / 1000);

	if (!secs)
		secs = 1;
	r->armed = false;
	for (size_t i = 0; i < r->n; i++) {
		struct refusal_src *s = &r->src[i];
		char d[512], who[96];

		if (!s->repeats)
			continue; /* quiet for an interval: its next refusal is audited at once */
		snprintf(d, sizeof(d), "refused %" PRIu64 " more times from %s in the last %u s: %s",
			 s->repeats, s->source, secs, s->detail);
		fctl_agentd_audit_actor(a, "connect", "refused", actor(s, who, sizeof(who)),
					s->has_uid, s->uid, d);
		s->repeats = 0;
		r->src[keep++] = *s;
	}
	if (r->unrecorded)
		summary(a, secs);
	r->n = keep;
	for (size_t i = 0; i < r->n; i++)
		r->src[i].seen = 0;
	r->total = r->unrecorded = r->overflow = 0;
	memset(r->by_reason, 0, sizeof(r->by_reason));
	if (r->n)
		arm(a);
}

void fctl_agentd_refusal_event(struct agent *a, const struct conn *c, enum fctl_refusal why,
			       uint8_t what, const char *detail)
{
	a->st.refused[why]++;
	if (what)
		fctl_agentd_audit_event(a, "request", what == 1 ? "refused" : "timeout", c, detail);
}

void fctl_agentd_refusals_release(struct agent *a)
{
	fctl_agentd_refusals_flush(a);
	free(a->refusals.src);
	memset(&a->refusals, 0, sizeof(a->refusals));
}
