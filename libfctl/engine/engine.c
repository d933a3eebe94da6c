// SPDX-License-Identifier: MIT
/* The apply engine: its entry points, key fetching, rollback and recovery. See engine.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fctl/rotation.h"
#include "fctl/keys.h"
#include "fctl/keysrc.h"
#include "fctl/nl.h"

#include "engine_int.h"

void fctl_apply_result_release(struct fctl_apply_result *r)
{
	if (!r)
		return;
	fctl_plan_free(r->plan);
	r->plan = NULL;
	fctl_diags_release(&r->findings);
}

void fctl_live_plan_release(struct fctl_live_plan *lp)
{
	if (!lp)
		return;
	fctl_plan_free(lp->plan);
	fctl_host_state_free(lp->live);
	fctl_host_state_free(lp->want);
	fctl_diags_release(&lp->findings);
	memset(lp, 0, sizeof(*lp));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int fctl_engine_host_name(const struct fctl_engine_opts *o, char *out, size_t len)
{
	char h[256];

	if (o->host) {
		snprintf(out, len, "%s", o->host);
		return 0;
	}
	if (gethostname(h, sizeof(h)) < 0)
		return -errno;
	h[sizeof(h) - 1] = '\0';
	h[strcspn(h, ".")] = '\0'; /* short name */
	snprintf(out, len, "%s", h);
	return 0;
}

/* The host's apply lock, STATE_DIR/lock, without waiting: the fd, or -EBUSY when it is
 * held (err says by whom: an apply, or a rotation's SA request in the agent). */
static int take_lock(const char *dir, char *err, size_t errlen)
{
	char path[PATH_MAX + 16];
	int r;

	snprintf(path, sizeof(path), "%s/lock", dir);
	r = fctl_lockfile_take(path, 0, NULL);
	if (r == -EBUSY)
		snprintf(err, errlen,
			 "another fabricctl is changing this host (lock '%s' is held by an apply "
			 "or a key rotation step)", path);
	else if (r < 0)
		snprintf(err, errlen, "cannot lock '%s': %s", path, strerror(-r));
	return r;
}

int fctl_engine_lock(const struct fctl_engine_opts *o, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int r;

	fctl_state_dir_path(o->state_dir, o->netns, dir, sizeof(dir));
	r = fctl_mkdir_all(dir, 0700);
	if (r < 0) {
		snprintf(err, errlen, "cannot create state directory '%s': %s", dir, strerror(-r));
		return r;
	}
	return take_lock(dir, err, errlen);
}

void fctl_engine_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

int fctl_engi_open(struct eng *e, const struct fctl_engine_opts *o, bool lock, bool need_nl,
		   char *err, size_t errlen)
{
	char path[PATH_MAX + 16];
	int r;

	memset(e, 0, sizeof(*e));
	e->o = o;
	e->kern.ops = o->ops ? o->ops : &fctl_engine_nl_ops;
	e->lock_fd = -1;
	fctl_state_dir_path(o->state_dir, o->netns, e->dir, sizeof(e->dir));
	fctl_engine_kernel_ledger(&e->kern, e->dir); /* the SA door's ledger: this host's */
	r = fctl_engine_host_name(o, e->host, sizeof(e->host));
	if (r < 0) {
		snprintf(err, errlen, "cannot determine the host name: %s", strerror(-r));
		return r;
	}
	if (lock) {
		r = fctl_mkdir_all(e->dir, 0700);
		if (r == 0) {
			snprintf(path, sizeof(path), "%s/history", e->dir);
			r = fctl_mkdir_all(path, 0700);
		}
		if (r < 0) {
			snprintf(err, errlen, "cannot create state directory '%s': %s", e->dir,
				 strerror(-r));
			return r;
		}
		r = take_lock(e->dir, err, errlen);
		if (r < 0)
			return r;
		e->lock_fd = r;
	}
	if (need_nl) {
		r = e->kern.ops->open(o->ops_ctx, o->netns, &e->kern.sess);
		if (r < 0) {
			snprintf(err, errlen, "cannot open netlink%s%s: %s",
				 o->netns ? " in netns " : "", o->netns ? o->netns : "",
				 strerror(-r));
			if (e->lock_fd >= 0)
				close(e->lock_fd);
			e->lock_fd = -1;
			return r;
		}
	}
	return 0;
}

void fctl_engi_close(struct eng *e)
{
	fctl_engi_pn_release(&e->kern);
	if (e->kern.sess)
		e->kern.ops->close(e->kern.sess);
	e->kern.sess = NULL;
	if (e->lock_fd >= 0)
		close(e->lock_fd);
	e->lock_fd = -1;
}

int fctl_engine_history(const struct fctl_engine_opts *o, struct fctl_history_entry **out,
			size_t *n)
{
	struct eng e;
	char err[256];
	int r = fctl_engi_open(&e, o, false, false, err, sizeof(err));

	if (r < 0)
		return r;
	r = fctl_engi_history_read(e.dir, out, n);
	fctl_engi_close(&e);
	return r;
}

static size_t sa_key_len(const struct fctl_op *op)
{
	return fctl_cipher_key_len(op->link.macsec.cipher);
}

static bool op_needs_key(const struct fctl_op *op)
{
	return op->kind == FCTL_OP_TXSA_ADD || op->kind == FCTL_OP_RXSA_ADD;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return (x > y) - (x < y);
}

/* keys[i] may be shared by many ops: each distinct key is freed once. */
static void free_keys(struct fctl_key **keys, size_t n)
{
	if (keys && n > 1)
		qsort(keys, n, sizeof(*keys), cmp_ptr);
	for (size_t i = 0; keys && i < n; i++)
		if (keys[i] && (i == 0 || keys[i - 1] != keys[i]))
			fctl_key_free(keys[i]);
	free(keys);
}

/* Fetches every key the plan needs, before anything is written. keys[i] for op i. */
static int fetch_keys(const struct fctl_engine_opts *o, const struct fctl_plan *plan,
		      struct fctl_key ***out, char *err, size_t errlen)
{
	const struct fctl_key_source src = { .keymgr_path = o->keymgr_path };
	struct fctl_key **keys = calloc(plan->n_ops ? plan->n_ops : 1, sizeof(*keys));
	size_t last = SIZE_MAX; /* the op that fetched the last key: most SAs share it */
	int r = 0;

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < plan->n_ops && r == 0; i++) {
		const struct fctl_op *op = &plan->ops[i];
		char why[512];

		if (!op_needs_key(op))
			continue;
		/* the same reference is fetched once */
		for (size_t k = 0; k <= i; k++) {
			size_t j = k == 0 ? last : k - 1;
			const struct fctl_op *q;

			if (j >= i || (k > 0 && j == last))
				continue;
			q = &plan->ops[j];
			if (keys[j] && q->key.backend && op->key.backend && q->key.id && op->key.id &&
			    strcmp(q->key.backend, op->key.backend) == 0 &&
			    strcmp(q->key.id, op->key.id) == 0 && q->key.version == op->key.version &&
			    keys[j]->len == sa_key_len(op)) {
				keys[i] = keys[j];
				break;
			}
		}
		if (keys[i])
			continue;
		last = i;
		if (!op->key.backend) {
			snprintf(err, errlen,
				 "%s an %u on %s: no key reference is known for this SA (it was not "
				 "installed by a profile this host applied)",
				 fctl_op_kind_name(op->kind), op->an, op->ifname);
			r = -ENOKEY;
			break;
		}
		r = fctl_key_source_fetch(&src, &op->key, op->key.base, sa_key_len(op), &keys[i],
					  why, sizeof(why));
		if (r < 0)
			snprintf(err, errlen, "%s an %u on %s: %s", fctl_op_kind_name(op->kind),
				 op->an, op->ifname, why);
	}
	if (r < 0) {
		free_keys(keys, plan->n_ops);
		return r;
	}
	*out = keys;
	return 0;
}

/* Brings the host back to `before`: plan live -> before, execute, compare. The live
 * links looked at are those of before, want and extra (the links a plan touched). */
static int restore(struct eng *e, const struct fctl_host_state *before,
		   const struct fctl_host_state *want, const struct fctl_host_state *extra,
		   struct fctl_apply_result *res)
{
	struct fctl_host_state *live = NULL, *after = NULL;
	struct fctl_plan *undo = NULL, *check = NULL;
	struct fctl_key **keys = NULL;
	char err[512] = "";
	size_t done;
	long failed;
	int r;

	r = fctl_engi_read_live(e, before, want, extra, &live, err, sizeof(err));
	if (r == 0) {
		fctl_engi_restrict_live(live, before, want, extra);
		r = fctl_plan_compute(live, before, &undo);
	}
	if (r == 0)
		r = fetch_keys(e->o, undo, &keys, err, sizeof(err));
	if (r == 0)
		r = fctl_engi_run_plan(e, undo, keys, "rollback", false, &done, &failed, err, sizeof(err));
	if (r == 0)
		r = fctl_engi_read_live(e, before, want, extra, &after, err, sizeof(err));
	if (r == 0) {
		fctl_engi_restrict_live(after, before, want, extra);
		r = fctl_plan_compute(after, before, &check);
	}
	if (r == 0) {
		size_t left = check->n_ops - fctl_engi_pn_withheld_in(&e->kern, check);

		res->rolled_back = true;
		res->restored_exactly = left == 0;
		if (left)
			snprintf(err, sizeof(err), "%zu differences remain after rollback", left);
	}
	if (err[0]) {
		size_t l = strlen(res->error);

		snprintf(res->error + l, sizeof(res->error) - l, "%srollback: %s",
			 l ? "; " : "", err);
	}
	free_keys(keys, undo ? undo->n_ops : 0);
	fctl_plan_free(undo);
	fctl_plan_free(check);
	fctl_host_state_free(live);
	fctl_host_state_free(after);
	return r;
}

static int recover_locked(struct eng *e, const struct fctl_host_state *want,
			  struct fctl_apply_result *res)
{
	struct fctl_host_state *before = NULL, *touched = NULL;
	char err[512] = "";
	int r = fctl_engi_journal_read(e, &before, &touched, err, sizeof(err));

	if (r < 0) {
		snprintf(res->error, sizeof(res->error), "%s", err);
		return r;
	}
	if (!before)
		return 0;
	r = restore(e, before, want, touched, res);
	fctl_host_state_free(before);
	fctl_host_state_free(touched);
	if (r == 0 && res->restored_exactly) {
		struct fctl_confirm_pending c;

		res->recovered = true;
		/* a confirmed apply that was interrupted is undone: nothing awaits confirmation;
		 * an interrupted rollback of one (expiring) runs again */
		if (fctl_engi_confirm_read(e->dir, &c) == 1 && !c.expiring)
			fctl_engi_confirm_remove(e);
		fctl_engi_journal_end(e);
		return 1;
	}
	return r < 0 ? r : -EIO;
}

int fctl_engine_plan(const struct fctl_profile *p, const struct fctl_engine_opts *o,
		     struct fctl_live_plan *out, char *err, size_t errlen)
{
	struct fctl_host_state *prev_owned = NULL;
	const struct fctl_host_state *prev = NULL;
	struct fctl_live_plan lp = { 0 };
	struct eng e;
	int r;

	r = fctl_engi_open(&e, o, false, true, err, errlen);
	if (r < 0)
		return r;
	if (!fctl_profile_find_host(p, e.host)) {
		snprintf(err, errlen, "host '%s' is not in profile '%s' (use --host NAME)", e.host,
			 p->name);
		r = -ENOENT;
		goto out;
	}
	r = fctl_engi_render_host(&e, p, &lp.want);
	if (r == 0) {
		fctl_engi_last_applied(&e, p, lp.want, &prev, &prev_owned);
		r = fctl_engi_read_live(&e, lp.want, prev, NULL, &lp.live, err, errlen);
	}
	if (r == 0) {
		fctl_engi_restrict_live(lp.live, lp.want, prev, NULL);
		r = fctl_plan_compute(lp.live, lp.want, &lp.plan);
	}
	if (r == 0) {
		r = fctl_engi_plan_context(&e, p, lp.live, lp.want, lp.plan, &lp.findings,
					   &lp.seal);
		if (r < 0)
			snprintf(err, errlen, "cannot check the links' parents: %s", strerror(-r));
	}
out:
	fctl_host_state_free(prev_owned);
	fctl_engi_close(&e);
	if (r < 0) {
		fctl_live_plan_release(&lp);
		return r;
	}
	*out = lp;
	return 0;
}

int fctl_engine_show(const struct fctl_profile *p, const struct fctl_engine_opts *o,
		     struct fctl_host_state **live, char *err, size_t errlen)
{
	struct fctl_host_state *want = NULL, *prev_owned = NULL;
	const struct fctl_host_state *prev = NULL;
	struct eng e;
	int r = fctl_engi_open(&e, o, false, true, err, errlen);

	if (r < 0)
		return r;
	if (p && fctl_profile_find_host(p, e.host))
		fctl_engi_render_host(&e, p, &want);
	fctl_engi_last_applied(&e, p, want, &prev, &prev_owned);
	if (want || prev) {
		r = fctl_engi_read_live(&e, want, prev, NULL, live, err, errlen);
		if (r == 0)
			fctl_engi_restrict_live(*live, want, prev, NULL);
	} else {
		r = e.kern.ops->read_state(e.kern.sess, e.host, NULL, 0, live);
		if (r < 0)
			snprintf(err, errlen, "cannot read live state: %s", strerror(-r));
	}
	fctl_host_state_free(want);
	fctl_host_state_free(prev_owned);
	fctl_engi_close(&e);
	return r;
}

/* Verifies from a fresh dump that the kernel holds exactly what the profile says. */
static int verify(struct eng *e, const struct fctl_host_state *want,
		  const struct fctl_host_state *prev, struct fctl_apply_result *res)
{
	struct fctl_host_state *after = NULL;
	struct fctl_plan *check = NULL;
	int r = fctl_engi_read_live(e, want, prev, NULL, &after, res->error, sizeof(res->error));

	if (r == 0) {
		fctl_engi_restrict_live(after, want, prev, NULL);
		r = fctl_plan_compute(after, want, &check);
	}
	if (r == 0 && check->n_ops > fctl_engi_pn_withheld_in(&e->kern, check)) {
		snprintf(res->error, sizeof(res->error),
			 "verification failed: the live state differs from the profile in %zu "
			 "places after apply (first: %s %s)",
			 check->n_ops, fctl_op_kind_name(check->ops[0].kind), check->ops[0].ifname);
		r = -EIO;
	}
	fctl_plan_free(check);
	fctl_host_state_free(after);
	return r;
}

/* A rotation holds SAs of two keys until its lease ends: a change now would undo half of
 * it (the agent refuses its own requests the same way). -EBUSY with res->error. */
static int rotation_check(const struct fctl_engine_opts *o, struct fctl_apply_result *res)
{
	char rdir[PATH_MAX], ifn[FCTL_IFNAMSIZ];

	fctl_rotation_dir(o->state_dir, o->netns, rdir, sizeof(rdir));
	if (!fctl_rotation_busy(rdir, ifn, sizeof(ifn)))
		return 0;
	snprintf(res->error, sizeof(res->error), "a key rotation is in progress on '%s': try "
		 "again when it ends", ifn);
	return -EBUSY;
}

/*
 * Runs res->plan (live -> want; prev: the last applied profile's state) all or nothing:
 * every key first (a missing one refuses it, res->refused), the journal, the ops, a
 * fresh dump that must plan to nothing; on a failure the host goes back to live. p is
 * what the journal names (NULL: none). Returns 0 or a negative errno, res->error set.
 */
static int execute(struct eng *e, const struct fctl_profile *p, const struct fctl_host_state *live,
		   const struct fctl_host_state *want, const struct fctl_host_state *prev,
		   struct fctl_apply_result *res)
{
	struct fctl_key **keys = NULL;
	int r;

	/* every key first: a missing or bad key refuses the apply before any write */
	r = fetch_keys(e->o, res->plan, &keys, res->error, sizeof(res->error));
	if (r < 0) {
		res->refused = true;
		return r;
	}
	/* name the keys for the audit trail by check value, never by value */
	for (size_t i = 0; i < res->plan->n_ops && res->n_kcvs < FCTL_APPLY_MAX_KCVS; i++) {
		char kcv[7];
		bool dup = false;

		if (!keys[i])
			continue;
		fctl_key_kcv_hex(keys[i], kcv);
		for (size_t k = 0; k < res->n_kcvs && !dup; k++)
			dup = strcmp(res->kcvs[k], kcv) == 0;
		if (!dup)
			memcpy(res->kcvs[res->n_kcvs++], kcv, sizeof(kcv));
	}
	if (e->arm) {
		/* before the journal: a crash from here on leaves a record that recovery (or
		 * the deadline) resolves, never a confirmed apply without its deadline */
		r = fctl_engi_confirm_write(e, e->arm);
		if (r < 0) {
			snprintf(res->error, sizeof(res->error), "cannot write '%s/confirm': %s",
				 e->dir, strerror(-r));
			res->refused = true;
			goto out;
		}
	}
	r = fctl_engi_journal_begin(e, p, live, res->plan);
	if (r < 0) {
		snprintf(res->error, sizeof(res->error), "cannot write the journal in '%s': %s",
			 e->dir, strerror(-r));
		if (e->arm)
			fctl_engi_confirm_remove(e);
		goto out;
	}
	r = fctl_engi_run_plan(e, res->plan, keys, "apply", true, &res->ops_done, &res->failed_op,
		     res->error, sizeof(res->error));
	if (r == 0)
		r = verify(e, want, prev, res);
	if (r < 0) {
		res->failed = true;
		if (restore(e, live, want, NULL, res) == 0 && res->restored_exactly) {
			if (e->arm)
				fctl_engi_confirm_remove(e); /* nothing changed: nothing to confirm */
			fctl_engi_journal_end(e);
		}
		goto out;
	}
	fctl_engi_journal_end(e);
out:
	free_keys(keys, res->plan->n_ops);
	return r;
}

/* The ledger's anchor for the change's audit record, when its SA door consulted the
 * ledger (docs/audit.md "Packet-number evidence"); a ledger that cannot be read then
 * leaves it out (the next change's record anchors it). */
static void ledger_anchor(struct eng *e, struct fctl_apply_result *res)
{
	res->has_ledger = fctl_engine_kernel_ledger_anchor(&e->kern, &res->ledger) == 1;
}

/* What every change ends with: counters, time, and refused when nothing was written. */
static void finish(struct eng *e, struct fctl_apply_result *res, double t0, int r)
{
	struct fctl_nl_stats st;

	ledger_anchor(e, res);
	res->withheld = fctl_engine_kernel_withheld(&e->kern, res->withheld_why,
						    sizeof(res->withheld_why));
	if (e->kern.sess) {
		e->kern.ops->get_stats(e->kern.sess, &st);
		res->writes = st.writes;
		res->round_trips = st.round_trips;
	}
	res->seconds = now_s() - t0;
	fctl_engi_close(e);
	if (r < 0 && !res->failed)
		res->failed = true;
	if (r < 0 && res->writes == 0 && !res->recovered)
		res->refused = true;
}

/* The confirmation record an apply of p arms (o->confirm_seconds): its deadline and the
 * last history entry, the one the host goes back to. */
static int arm_record(struct eng *e, const struct fctl_profile *p, struct fctl_confirm_pending *c)
{
	struct fctl_history_entry *v = NULL;
	size_t n = 0;
	int r = fctl_engi_history_read(e->dir, &v, &n);

	if (r < 0)
		return r;
	memset(c, 0, sizeof(*c));
	c->started = (int64_t)time(NULL);
	c->deadline = c->started + (int64_t)e->o->confirm_seconds;
	c->version = p->version;
	snprintf(c->name, sizeof(c->name), "%s", p->name ? p->name : "-");
	snprintf(c->id, sizeof(c->id), "%s", e->o->confirm_id ? e->o->confirm_id : "-");
	if (n) {
		c->prev_seq = v[n - 1].seq;
		c->prev_version = v[n - 1].version;
	}
	free(v);
	return 0;
}

/* What an apply checks of its plan before anything is written: the parents of the links it
 * creates exist (else refused, res->findings says where the profile names them; the PFC
 * warnings are reported there too, and refuse nothing), and,
 * with o->expect, that the live state and the plan are the sealed ones (else -ESTALE). */
static int plan_checks(struct eng *e, const struct fctl_profile *p,
		       const struct fctl_host_state *live, const struct fctl_host_state *want,
		       struct fctl_apply_result *res)
{
	const struct fctl_plan_seal *x = e->o->expect;
	struct fctl_plan_seal seal;
	int r = fctl_engi_plan_context(e, p, live, want, res->plan, &res->findings, &seal);

	if (r < 0) {
		snprintf(res->error, sizeof(res->error), "cannot check the links' parents: %s",
			 strerror(-r));
		return r;
	}
	if (x && memcmp(x->live_sha256, seal.live_sha256, 32) != 0) {
		snprintf(res->error, sizeof(res->error),
			 "the saved plan is stale: the live state of host '%s' changed since it "
			 "was made (its links or their parents); nothing was changed: plan again",
			 e->host);
		r = -ESTALE;
	} else if (x && memcmp(x->plan_sha256, seal.plan_sha256, 32) != 0) {
		snprintf(res->error, sizeof(res->error),
			 "the saved plan is stale: the plan computed now for host '%s' differs "
			 "from it (the last applied profile or a key rotation changed); nothing "
			 "was changed: plan again", e->host);
		r = -ESTALE;
	} else if (!e->o->dry_run) {
		/* a missing parent refuses the apply; the PFC warnings (pfc-*) do not */
		for (size_t i = 0; i < res->findings.n && r == 0; i++) {
			if (strcmp(res->findings.v[i].code, "parent-missing") != 0)
				continue;
			snprintf(res->error, sizeof(res->error),
				 "refused: %s; nothing was changed", res->findings.v[i].msg);
			r = -ENODEV;
		}
	}
	res->refused = r < 0;
	return r;
}

int fctl_engi_apply_locked(struct eng *e, const struct fctl_profile *p,
			   struct fctl_apply_result *res)
{
	struct fctl_host_state *want = NULL, *want_owned = NULL, *prev_owned = NULL, *live = NULL;
	const struct fctl_host_state *prev = NULL;
	const struct fctl_engine_opts *o = e->o;
	struct fctl_confirm_pending arm;
	int r;

	snprintf(res->host, sizeof(res->host), "%s", e->host);
	if (!o->dry_run) {
		r = rotation_check(o, res);
		if (r < 0)
			goto out;
	}
	if (!fctl_profile_find_host(p, e->host)) {
		snprintf(res->error, sizeof(res->error),
			 "host '%s' is not in profile '%s' (use --host NAME)", e->host, p->name);
		r = -ENOENT;
		goto out;
	}
	if (o->desired)
		r = fctl_engi_desired_overlay(e, o->desired);
	else
		r = fctl_engi_render_host(e, p, &want_owned);
	if (r < 0)
		goto out;
	want = o->desired ? o->desired : want_owned;
	if (!o->dry_run) {
		r = recover_locked(e, want, res);
		if (r >= 0 && !e->expiring) {
			r = fctl_engi_confirm_refuse(e, res->error, sizeof(res->error));
			res->refused = r < 0;
		}
		if (r < 0)
			goto out;
	}
	fctl_engi_last_applied(e, p, want, &prev, &prev_owned);
	r = fctl_engi_read_live(e, want, prev, NULL, &live, res->error, sizeof(res->error));
	if (r < 0)
		goto out;
	fctl_engi_restrict_live(live, want, prev, NULL);
	r = fctl_plan_compute(live, want, &res->plan);
	if (r == 0)
		r = plan_checks(e, p, live, want, res);
	if (r < 0)
		goto out;
	if (o->dry_run || res->plan->n_ops == 0)
		goto record;
	if (o->confirm_seconds && !e->expiring) {
		r = arm_record(e, p, &arm);
		if (r < 0) {
			snprintf(res->error, sizeof(res->error), "cannot read the history: %s",
				 strerror(-r));
			goto out;
		}
		e->arm = &arm;
	}
	r = execute(e, p, live, want, prev, res);
	if (r < 0)
		goto out;
	res->confirm_pending = e->arm != NULL;
record:
	if (!o->dry_run)
		fctl_engi_history_record(e, p, res->error, sizeof(res->error));
out:
	e->arm = NULL;
	fctl_host_state_free(want_owned);
	fctl_host_state_free(prev_owned);
	fctl_host_state_free(live);
	return r;
}

/* The start of every changing entry point: a clean result, then the engine opened (and
 * locked when lock), its failure explained in res->error. */
static int open_for_result(struct eng *e, const struct fctl_engine_opts *o, bool lock,
			   struct fctl_apply_result *res)
{
	memset(res, 0, sizeof(*res));
	res->failed_op = -1;
	return fctl_engi_open(e, o, lock, true, res->error, sizeof(res->error));
}

int fctl_engine_apply(const struct fctl_profile *p, const struct fctl_engine_opts *o,
		      struct fctl_apply_result *res)
{
	double t0 = now_s();
	struct eng e;
	int r;

	r = open_for_result(&e, o, !o->dry_run, res);
	if (r < 0)
		return r;
	r = fctl_engi_apply_locked(&e, p, res);
	finish(&e, res, t0, r);
	return r;
}

int fctl_engi_teardown_locked(struct eng *e, struct fctl_apply_result *res)
{
	struct fctl_host_state *none = NULL, *prev_owned = NULL, *live = NULL;
	const struct fctl_host_state *prev = NULL;
	const struct fctl_engine_opts *o = e->o;
	int r;

	snprintf(res->host, sizeof(res->host), "%s", e->host);
	none = fctl_host_state_new(e->host); /* the state wanted: nothing fabricctl made */
	r = none ? 0 : -ENOMEM;
	if (r == 0 && !o->dry_run)
		r = rotation_check(o, res);
	if (r == 0 && !o->dry_run) {
		r = recover_locked(e, none, res);
		r = r > 0 ? 0 : r; /* 1: an interrupted apply was rolled back first */
		if (r == 0 && !e->expiring) {
			r = fctl_engi_confirm_refuse(e, res->error, sizeof(res->error));
			res->refused = r < 0;
		}
	}
	if (r < 0)
		goto out;
	/* what fabricctl manages: the links of the last applied profile (an apply removes
	 * those a new version drops, and recovery has just finished an interrupted one) */
	fctl_engi_last_applied(e, NULL, NULL, &prev, &prev_owned);
	r = fctl_engi_read_live(e, none, prev, NULL, &live, res->error, sizeof(res->error));
	if (r < 0)
		goto out;
	fctl_engi_restrict_live(live, none, prev, NULL);
	r = fctl_plan_compute(live, none, &res->plan);
	if (r == 0 && !o->dry_run && res->plan->n_ops)
		r = execute(e, NULL, live, none, prev, res);
out:
	fctl_host_state_free(none);
	fctl_host_state_free(prev_owned);
	fctl_host_state_free(live);
	return r;
}

int fctl_engine_teardown(const struct fctl_engine_opts *o, struct fctl_apply_result *res)
{
	double t0 = now_s();
	struct eng e;
	int r;

	r = open_for_result(&e, o, !o->dry_run, res);
	if (r < 0) {
		res->refused = true;
		return r;
	}
	r = fctl_engi_teardown_locked(&e, res);
	finish(&e, res, t0, r);
	return r;
}
int fctl_engine_recover(const struct fctl_engine_opts *o, struct fctl_apply_result *res)
{
	struct fctl_confirm_pending c;
	struct eng e;
	int r, x;

	r = open_for_result(&e, o, true, res);
	if (r < 0)
		return r;
	snprintf(res->host, sizeof(res->host), "%s", e.host);
	r = recover_locked(&e, NULL, res);
	/* then a confirmed apply whose deadline passed (a reboot, a dead watchdog) */
	if (r >= 0) {
		x = fctl_engi_confirm_expire_locked(&e, NULL, false, &c, res);
		if (x == 1)
			res->confirm_rolled_back = true;
		r = x < 0 ? x : r || x;
	}
	ledger_anchor(&e, res);
	fctl_engi_close(&e);
	return r;
}

int fctl_engine_confirm_expire(const struct fctl_engine_opts *o, const char *id, bool force,
			       struct fctl_confirm_pending *out, struct fctl_apply_result *res)
{
	double t0 = now_s();
	struct eng e;
	int r;

	r = open_for_result(&e, o, true, res);
	if (r < 0)
		return r;
	snprintf(res->host, sizeof(res->host), "%s", e.host);
	r = recover_locked(&e, NULL, res);
	if (r >= 0)
		r = fctl_engi_confirm_expire_locked(&e, id, force, out, res);
	finish(&e, res, t0, r);
	if (r >= 0)
		res->failed = res->refused = false;
	return r;
}

