// SPDX-License-Identifier: MIT
/* The node check (fctl/nodecheck.h): SecYs, drift, the last probe, key age, read only. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fctl/nodecheck.h"
#include "fctl/rotation.h"
#include "metrics_int.h"

static int add(struct fctl_nodecheck_report *r, const char *check, const struct fctl_mx_link *k,
	       bool ok, const char *fmt, ...) FCTL_PRINTF(5, 6);

static int add(struct fctl_nodecheck_report *r, const char *check, const struct fctl_mx_link *k,
	       bool ok, const char *fmt, ...)
{
	struct fctl_nodecheck_item *v = realloc(r->v, (r->n + 1) * sizeof(*v));
	va_list ap;

	if (!v)
		return -ENOMEM;
	r->v = v;
	v = &r->v[r->n++];
	memset(v, 0, sizeof(*v));
	snprintf(v->check, sizeof(v->check), "%s", check);
	if (k) {
		snprintf(v->link, sizeof(v->link), "%s", k->link);
		snprintf(v->ifname, sizeof(v->ifname), "%s", k->ifname);
	}
	v->ok = ok;
	va_start(ap, fmt);
	vsnprintf(v->text, sizeof(v->text), fmt, ap);
	va_end(ap);
	if (!ok)
		r->failed++;
	return 0;
}

/* One SecY of the applied profile against the live state. */
static int check_secy(struct fctl_nodecheck_report *r, const struct fctl_mx_link *k,
		      const struct fctl_host_state *live)
{
	const struct fctl_link *l = live ? fctl_host_state_find(live, k->ifname) : NULL;
	const struct fctl_macsec *m;
	const struct fctl_sa *tx;

	if (!l || l->kind != FCTL_LINK_MACSEC)
		return add(r, "secy", k, false, "SecY %s is missing", k->ifname);
	m = &l->macsec;
	tx = &m->txsa[m->encoding_sa % FCTL_MAX_AN];
	if (!l->up)
		return add(r, "secy", k, false, "SecY %s is down", k->ifname);
	if (!m->protect || !m->encrypt)
		return add(r, "secy", k, false, "SecY %s does not %s", k->ifname,
			   m->protect ? "encrypt" : "protect");
	if (!tx->present || !tx->active)
		return add(r, "secy", k, false, "SecY %s has no active encoding SA (AN %u)",
			   k->ifname, (unsigned)m->encoding_sa);
	return add(r, "secy", k, true, "SecY %s up and encrypting (encoding SA %u)", k->ifname,
		   (unsigned)m->encoding_sa);
}

static int check_drift(struct fctl_nodecheck_report *r, const struct fctl_drift_report *d,
		       int e, const char *err)
{
	if (e < 0)
		return add(r, "drift", NULL, false, "drift check failed: %s", err);
	if (d->ops)
		return add(r, "drift", NULL, false, "drift: %zu operation%s to repair (%s)", d->ops,
			   d->ops == 1 ? "" : "s", d->summary);
	return add(r, "drift", NULL, true, "no drift");
}

static int check_probe(const struct fctl_nodecheck_opts *o, struct fctl_nodecheck_report *r)
{
	char path[4200], t[64] = "", ex[16] = "", link[192] = "-", peer[192] = "-";
	struct fctl_buf f = { 0 };
	double age;
	int e;

	fctl_probe_last_path(o->eo->state_dir, o->eo->netns, path, sizeof(path));
	e = fctl_file_read(path, &f);
	if (e < 0 || !f.len) {
		fctl_buf_release(&f);
		if (e < 0 && e != -ENOENT)
			return add(r, "probe", NULL, false, "cannot read %s: %s", path, strerror(-e));
		return add(r, "probe", NULL, !o->max_probe_age_s, "no probe record (%s)%s", path,
			   o->max_probe_age_s ? "" : ": not required");
	}
	fctl_buf_putc(&f, '\0');
	e = strncmp(f.data, "fabricctl-probe-last ", 21) != 0 ||
	    !fctl_kv_word(f.data, "time", t, sizeof(t)) ||
	    !fctl_kv_word(f.data, "exit", ex, sizeof(ex));
	fctl_kv_word(f.data, "link", link, sizeof(link));
	fctl_kv_word(f.data, "peer", peer, sizeof(peer));
	fctl_buf_release(&f);
	if (e)
		return add(r, "probe", NULL, false, "%s: not a probe record", path);
	age = o->now - strtod(t, NULL);
	if (strcmp(ex, "0") != 0)
		return add(r, "probe", NULL, false,
			   "last probe (link %s, peer %s) failed its SLO (exit %s, %.0f s ago)",
			   link, peer, ex, age);
	if (o->max_probe_age_s && age > (double)o->max_probe_age_s)
		return add(r, "probe", NULL, false, "last probe (link %s) is %.0f s old (max %" PRIu64
			   " s)", link, age, o->max_probe_age_s);
	return add(r, "probe", NULL, true, "last probe (link %s, peer %s) passed %.0f s ago", link,
		   peer, age);
}

/* Unix time the history's latest entry was applied ("%Y-%m-%dT%H:%M:%SZ"), 0 unknown. */
static uint64_t applied_at(const struct fctl_engine_opts *eo)
{
	struct fctl_history_entry *v = NULL;
	uint64_t best = 0, t = 0;
	size_t n = 0;

	if (fctl_engine_history(eo, &v, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct tm tm = { 0 };
		const char *end = strptime(v[i].time, "%Y-%m-%dT%H:%M:%SZ", &tm);

		if (end && !*end && v[i].seq >= best) {
			best = v[i].seq;
			t = (uint64_t)timegm(&tm);
		}
	}
	free(v);
	return t;
}

static int check_key(const struct fctl_nodecheck_opts *o, struct fctl_nodecheck_report *r,
		     const struct fctl_mx_link *k, uint64_t applied)
{
	struct fctl_rotation_cur c;
	uint64_t since = applied;
	char dir[4200];
	double age;

	fctl_rotation_dir(o->eo->state_dir, o->eo->netns, dir, sizeof(dir));
	if (fctl_rotation_read(dir, k->ifname, &c) == 0 && c.switched_at > since)
		since = c.switched_at;
	if (!since)
		return add(r, "key", k, false, "key age of %s unknown (no history time, no rotation "
			   "record)", k->ifname);
	age = o->now - (double)since;
	if (age > (double)k->cryptoperiod_s)
		return add(r, "key", k, false, "key of %s is %.0f s old, past its cryptoperiod "
			   "of %" PRIu64 " s", k->ifname, age, k->cryptoperiod_s);
	return add(r, "key", k, true, "key of %s is %.0f s old (cryptoperiod %" PRIu64 " s)",
		   k->ifname, age, k->cryptoperiod_s);
}

/* No profile can be read as applied. A host whose history holds no apply at all never had
 * one (its operators are rolling the check out): it passes only when the caller allows it;
 * any other host is unhealthy. An unreadable history is an error, not an empty one. */
static int check_unapplied(const struct fctl_nodecheck_opts *o, struct fctl_nodecheck_report *out,
			   char *err, size_t errlen)
{
	struct fctl_history_entry *h = NULL;
	size_t n = 0;
	int e = fctl_engine_history(o->eo, &h, &n);

	free(h);
	if (e < 0) {
		snprintf(err, errlen, "cannot read the history of applied profiles: %s", strerror(-e));
		return e;
	}
	out->never_applied = n == 0;
	if (n == 0 && o->allow_never_applied)
		return add(out, "profile", NULL, true,
			   "no profile ever applied on this host: allowed (--allow-never-applied)");
	if (n == 0)
		return add(out, "profile", NULL, false, "no profile applied on this host");
	return add(out, "profile", NULL, false,
		   "no profile applied on this host (its history holds %zu apply%s, the last one "
		   "cannot be read)", n, n == 1 ? "" : "s");
}

int fctl_nodecheck_run(const struct fctl_nodecheck_opts *o, struct fctl_nodecheck_report *out,
		       char *err, size_t errlen)
{
	struct fctl_host_state *live = NULL;
	struct fctl_drift_report d;
	struct fctl_mx_links links;
	char derr[512] = "";
	uint64_t applied = 0;
	int e, de;

	memset(out, 0, sizeof(*out));
	e = fctl_engine_host_name(o->eo, out->host, sizeof(out->host));
	if (e < 0) {
		snprintf(err, errlen, "cannot tell this host's name: %s", strerror(-e));
		return e;
	}
	e = fctl_mx_links_load(o->eo, out->host, &links);
	if (e < 0) {
		snprintf(err, errlen, "cannot read the applied profile: %s", strerror(-e));
		return e;
	}
	out->applied = links.applied;
	if (!links.applied) {
		fctl_mx_links_release(&links);
		e = check_unapplied(o, out, err, errlen);
		return e < 0 ? e : check_probe(o, out);
	}
	e = fctl_engine_show(NULL, o->eo, &live, err, errlen);
	if (e < 0) {
		fctl_mx_links_release(&links);
		return e;
	}
	de = fctl_drift_check(o->eo, &d, derr, sizeof(derr));
	if (de == 0) {
		out->version = d.version;
		snprintf(out->profile, sizeof(out->profile), "%s", d.profile);
	}
	e = add(out, "profile", NULL, true, "profile %s version %" PRIu64 " applied", out->profile,
		out->version);
	for (size_t i = 0; e == 0 && i < links.n; i++)
		if (links.v[i].macsec) {
			out->n_secy++;
			e = check_secy(out, &links.v[i], live);
		}
	if (e == 0)
		e = check_drift(out, &d, de, derr);
	/* PFC on the QoS maps' PCPs, as the ports' DCB says: a warning, not a failure */
	if (e == 0 && de == 0 && d.pfc[0])
		e = add(out, "pfc", NULL, true, "warning: %s", d.pfc);
	if (e == 0)
		e = check_probe(o, out);
	for (size_t i = 0; e == 0 && i < links.n; i++)
		if (links.v[i].macsec && links.v[i].cryptoperiod_s) {
			if (!applied)
				applied = applied_at(o->eo);
			e = check_key(o, out, &links.v[i], applied);
		}
	fctl_host_state_free(live);
	fctl_mx_links_release(&links);
	if (e < 0)
		snprintf(err, errlen, "%s", strerror(-e));
	return e;
}

void fctl_nodecheck_reason(const struct fctl_nodecheck_report *r, char *out, size_t len)
{
	out[0] = '\0';
	for (size_t i = 0; i < r->n; i++)
		if (!r->v[i].ok) {
			if (r->v[i].link[0])
				snprintf(out, len, "%s: %s", r->v[i].link, r->v[i].text);
			else
				snprintf(out, len, "%s", r->v[i].text);
			return;
		}
}

void fctl_nodecheck_release(struct fctl_nodecheck_report *r)
{
	if (!r)
		return;
	free(r->v);
	r->v = NULL;
	r->n = 0;
}
