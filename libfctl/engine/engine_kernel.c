// SPDX-License-Identifier: MIT
/* The engine's kernel session: every kernel write of fabricctl, and fctl_engine_sa_write,
 * the one place every SA write passes through (fctl/engine_kernel.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/keys.h"
#include "fctl/nl.h"
#include "fctl/util.h"

#include "engine_int.h"

int fctl_engine_kernel_open(const struct fctl_engine_ops *ops, void *ctx, const char *netns,
			    struct fctl_engine_kernel **out)
{
	struct fctl_engine_kernel *k = calloc(1, sizeof(*k));
	int r;

	if (!k)
		return -ENOMEM;
	k->ops = ops ? ops : &fctl_engine_nl_ops;
	r = k->ops->open(ctx, netns, &k->sess);
	if (r < 0) {
		free(k);
		return r;
	}
	*out = k;
	return 0;
}

void fctl_engine_kernel_close(struct fctl_engine_kernel *k)
{
	if (!k)
		return;
	if (k->sess)
		k->ops->close(k->sess);
	fctl_engi_pn_release(k);
	free(k);
}

void fctl_engine_kernel_ledger(struct fctl_engine_kernel *k, const char *state_dir)
{
	if (strcmp(k->ledger_dir, state_dir ? state_dir : "") == 0)
		return;
	fctl_engi_pn_release(k);
	snprintf(k->ledger_dir, sizeof(k->ledger_dir), "%s", state_dir ? state_dir : "");
}

size_t fctl_engine_kernel_withheld(const struct fctl_engine_kernel *k, char *why, size_t len)
{
	if (why && len)
		snprintf(why, len, "%s", k->withheld_why);
	return k->n_withheld;
}

struct fctl_nl *fctl_engine_kernel_nl(const struct fctl_engine_kernel *k)
{
	return k && k->ops == &fctl_engine_nl_ops ? k->sess : NULL;
}

bool fctl_engine_op_is_sa_write(const struct fctl_op *op)
{
	switch (op->kind) {
	case FCTL_OP_TXSA_ADD:
	case FCTL_OP_TXSA_UPD:
	case FCTL_OP_TXSA_DEL:
	case FCTL_OP_RXSA_ADD:
	case FCTL_OP_RXSA_UPD:
	case FCTL_OP_RXSA_DEL:
		return true;
	case FCTL_OP_LINK_CHANGE:
		return op->link.kind == FCTL_LINK_MACSEC && (op->changes & FCTL_CHG_ENCODING_SA);
	default:
		return false;
	}
}

static int say(struct fctl_nl_err *err, int r, const char *msg)
{
	if (err) {
		err->err = r;
		err->extack[0] = '\0';
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
	}
	return r;
}

/* An SA the ledger withheld: noted in the session, said in err; 1. */
static int withhold(struct fctl_engine_kernel *k, const struct fctl_op *op, const char *why,
		    struct fctl_nl_err *err)
{
	struct fctl_op *w = fctl_array_grow(&k->withheld, &k->n_withheld, &k->cap_withheld,
					    sizeof(*w));

	if (!w)
		return say(err, -ENOMEM, "out of memory");
	*w = (struct fctl_op){ .kind = op->kind, .sci = op->sci, .an = op->an };
	snprintf(w->ifname, sizeof(w->ifname), "%s", op->ifname);
	if (!k->withheld_why[0])
		snprintf(k->withheld_why, sizeof(k->withheld_why), "%s %s an %u withheld: %s",
			 fctl_op_kind_name(op->kind), op->ifname, op->an, why);
	say(err, 0, why);
	return 1;
}

/* An SA add in three steps (docs/keys-and-pn.md): added inactive, where the ledger says
 * the key may continue, so that no frame uses it; the key recorded as live; then made
 * active as the op says. */
static int sa_add(struct fctl_engine_kernel *k, const struct fctl_op *op,
		  const struct fctl_key *key, struct fctl_nl_err *err)
{
	struct fctl_op step = *op;
	char why[512] = "";
	int r;

	if (!key)
		return say(err, -EINVAL, "an SA add without its key");
	r = fctl_engi_pn_admit(k, &step, key, why, sizeof(why));
	if (r == 1)
		return withhold(k, op, why, err);
	if (r < 0)
		return say(err, r, why);
	step.sa.active = false;
	r = k->ops->exec(k->sess, &step, key->bytes, key->len, err);
	if (r == 0)
		r = fctl_engi_pn_live(k, &step, key, why, sizeof(why));
	if (r < 0 && why[0])
		return say(err, r, why);
	if (r < 0 || !op->sa.active)
		return r;
	step.kind = op->kind == FCTL_OP_TXSA_ADD ? FCTL_OP_TXSA_UPD : FCTL_OP_RXSA_UPD;
	step.sa.active = true;
	return k->ops->exec(k->sess, &step, NULL, 0, err);
}

/* What the ledger sends (an SA's deactivation before its PN is read): the table's exec */
static int send_op(struct fctl_engine_kernel *k, const struct fctl_op *op,
		   struct fctl_nl_err *err)
{
	return k->ops->exec(k->sess, op, NULL, 0, err);
}

/* Before an SA delete in a session without a ledger: the SA made inactive, as the op
 * says it is (gone already is no error: the delete reports it). */
static int sa_off(struct fctl_engine_kernel *k, const struct fctl_op *op,
		  struct fctl_nl_err *err)
{
	struct fctl_op off = *op;
	int r;

	if (!op->sa.active)
		return 0;
	off.kind = op->kind == FCTL_OP_TXSA_DEL ? FCTL_OP_TXSA_UPD : FCTL_OP_RXSA_UPD;
	off.sa.active = false;
	r = k->ops->exec(k->sess, &off, NULL, 0, err);
	return r == -ENOENT || r == -ENODEV ? 0 : r;
}

/* Before an op that takes SAs away: their packet numbers, stopped and recorded. */
static int sa_retire(struct fctl_engine_kernel *k, const struct fctl_op *op,
		     struct fctl_nl_err *err)
{
	struct fctl_nl_err nerr = { 0 };
	char why[512] = "";
	int r = fctl_engi_pn_retire(k, op, send_op, &nerr, why, sizeof(why));

	if (r < 0)
		return say(err, r, why[0] ? why : nerr.msg);
	return 0;
}

/* The packet-number checks (engine_pn.c) live here, before the table's exec: nothing else
 * reaches it for an SA write. */
int fctl_engine_sa_write(struct fctl_engine_kernel *k, const struct fctl_op *op,
			 const struct fctl_key *key, struct fctl_nl_err *err)
{
	char msg[160];
	int r;

	if (!fctl_engine_op_is_sa_write(op)) {
		snprintf(msg, sizeof(msg), "%s %s: not an SA write", fctl_op_kind_name(op->kind),
			 op->ifname);
		return say(err, -EINVAL, msg);
	}
	if (op->kind == FCTL_OP_TXSA_ADD || op->kind == FCTL_OP_RXSA_ADD)
		return sa_add(k, op, key, err);
	if (op->kind == FCTL_OP_TXSA_DEL || op->kind == FCTL_OP_RXSA_DEL) {
		/* the kernel refuses to delete an active SA: the ledger's retirement
		 * deactivates what it reads active; a session without one goes by the op */
		r = k->ledger_dir[0] ? sa_retire(k, op, err) : sa_off(k, op, err);
		if (r < 0)
			return r;
	}
	return k->ops->exec(k->sess, op, key ? key->bytes : NULL, key ? key->len : 0, err);
}

int fctl_engine_kernel_exec(struct fctl_engine_kernel *k, const struct fctl_op *op,
			    const struct fctl_key *key, struct fctl_nl_err *err)
{
	int r;

	if (fctl_engine_op_is_sa_write(op))
		return fctl_engine_sa_write(k, op, key, err);
	/* a link or an RX SC that goes takes its SAs with it */
	if (op->kind == FCTL_OP_LINK_DEL || op->kind == FCTL_OP_RXSC_DEL) {
		r = sa_retire(k, op, err);
		if (r < 0)
			return r;
	}
	return k->ops->exec(k->sess, op, key ? key->bytes : NULL, key ? key->len : 0, err);
}

int fctl_engine_kernel_neigh_copy(struct fctl_engine_kernel *k, const char *from,
				  const char *to, const uint8_t (*macs)[6], size_t n_macs,
				  struct fctl_nl_err *err)
{
	if (!k->ops->neigh_copy)
		return -EOPNOTSUPP;
	return k->ops->neigh_copy(k->sess, from, to, macs, n_macs, err);
}

/* --- windows (fctl_engine_kernel_exec_window) --- */

_Static_assert(FCTL_ENGINE_NOT_RUN == FCTL_NL_NOT_RUN, "one 'not run' for the table and the door");

bool fctl_engine_op_pipelines(const struct fctl_op *op)
{
	switch (op->kind) {
	case FCTL_OP_LINK_ADD:
	case FCTL_OP_LINK_UP:
	case FCTL_OP_LINK_DOWN:
	case FCTL_OP_LINK_CHANGE:
		return !fctl_engine_op_is_sa_write(op);
	case FCTL_OP_ADDR_ADD:
	case FCTL_OP_ADDR_DEL:
	case FCTL_OP_RXSC_ADD:
	case FCTL_OP_RXSC_UPD:
		return true;
	case FCTL_OP_TXSA_ADD:
	case FCTL_OP_RXSA_ADD:
		return op->sci != 0; /* the ledger's entry is per SCI: known before the send */
	default:
		return false;
	}
}

/* The table's window: exec_batch, else exec op by op up to the first failure. */
static int table_window(struct fctl_engine_kernel *k, const struct fctl_op *const *ops,
			const uint8_t *const *kb, const size_t *kl, size_t n, int *rc,
			struct fctl_nl_err *errs)
{
	int r = 0;

	if (k->ops->exec_batch && n > 1)
		return k->ops->exec_batch(k->sess, ops, kb, kl, n, rc, errs);
	for (size_t i = 0; i < n; i++)
		rc[i] = FCTL_ENGINE_NOT_RUN;
	for (size_t i = 0; i < n && r == 0; i++)
		r = rc[i] = k->ops->exec(k->sess, ops[i], kb ? kb[i] : NULL, kl ? kl[i] : 0, &errs[i]);
	return r;
}

struct sa_win {
	struct fctl_op *step;        /* per op: what is sent */
	const struct fctl_op **sent; /* per sent step */
	const struct fctl_key **skey;
	const uint8_t **kb;
	size_t *kl, *idx;
	int *src;
	struct fctl_nl_err *serr;
};

static void sa_win_free(struct sa_win *w, size_t n)
{
	free(w->step);
	free(w->sent);
	free(w->skey);
	free(w->kb);
	free(w->kl);
	free(w->idx);
	free(w->src);
	if (w->serr)
		fctl_memzero(w->serr, n * sizeof(*w->serr));
	free(w->serr);
}

/* Sends w->sent[0..m) (keys or not) and moves the answers to rc/errs of the ops they
 * are for; those that succeeded stay in w->sent[0..*left), the others leave. */
static void sa_win_send(struct fctl_engine_kernel *k, struct sa_win *w, size_t *m, bool keys,
			int *rc, struct fctl_nl_err *errs)
{
	size_t left = 0;

	if (*m)
		table_window(k, w->sent, keys ? w->kb : NULL, keys ? w->kl : NULL, *m, w->src,
			     w->serr);
	for (size_t j = 0; j < *m; j++) {
		size_t i = w->idx[j];

		if (w->src[j] != 0) {
			rc[i] = w->src[j];
			errs[i] = w->serr[j];
			continue;
		}
		w->sent[left] = w->sent[j];
		w->skey[left] = w->skey[j];
		w->idx[left++] = i;
	}
	*m = left;
}

/* A window of SA adds: sa_add's three steps, each for the whole window. */
static int sa_add_window(struct fctl_engine_kernel *k, const struct fctl_op *const *ops,
			 const struct fctl_key *const *keys, size_t n, int *rc,
			 struct fctl_nl_err *errs)
{
	struct sa_win w = {
		.step = calloc(n, sizeof(*w.step)), .sent = calloc(n, sizeof(*w.sent)),
		.skey = calloc(n, sizeof(*w.skey)), .kb = calloc(n, sizeof(*w.kb)),
		.kl = calloc(n, sizeof(*w.kl)), .idx = calloc(n, sizeof(*w.idx)),
		.src = calloc(n, sizeof(*w.src)), .serr = calloc(n, sizeof(*w.serr)),
	};
	char why[512] = "";
	size_t m = 0, act = 0, sent;
	bool failed;
	int r = 0;

	if (!w.step || !w.sent || !w.skey || !w.kb || !w.kl || !w.idx || !w.src || !w.serr) {
		sa_win_free(&w, n);
		rc[0] = say(&errs[0], -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	/* 1. the ledger's word on each: where its key may continue, or withheld */
	for (size_t i = 0; i < n && r >= 0; i++) {
		if (!keys[i]) {
			r = rc[i] = say(&errs[i], -EINVAL, "an SA add without its key");
			break;
		}
		w.step[i] = *ops[i];
		why[0] = '\0';
		r = fctl_engi_pn_admit(k, &w.step[i], keys[i], why, sizeof(why));
		if (r == 1) {
			r = rc[i] = withhold(k, ops[i], why, &errs[i]);
			continue;
		}
		if (r < 0) {
			rc[i] = say(&errs[i], r, why);
			break;
		}
		w.step[i].sa.active = false;
		w.sent[m] = &w.step[i];
		w.skey[m] = keys[i];
		w.kb[m] = keys[i]->bytes;
		w.kl[m] = keys[i]->len;
		w.idx[m++] = i;
	}
	/* 2. added inactive: no frame uses them yet */
	sent = m;
	sa_win_send(k, &w, &m, true, rc, errs);
	/* one of them failed (or the ledger stopped the window): the apply fails and rolls
	 * back, so the others, recorded below, are left inactive */
	failed = m < sent || r < 0;
	/* 3. their keys recorded as live, durably, in one write */
	why[0] = '\0';
	r = m ? fctl_engi_pn_live_many(k, w.sent, w.skey, m, why, sizeof(why)) : 0;
	for (size_t j = 0; j < m; j++) {
		size_t i = w.idx[j];

		if (r < 0) {
			rc[i] = say(&errs[i], r, why);
			continue;
		}
		rc[i] = 0;
		if (!ops[i]->sa.active || failed)
			continue;
		/* 4. made active as the op says */
		w.step[i].kind = ops[i]->kind == FCTL_OP_TXSA_ADD ? FCTL_OP_TXSA_UPD
								  : FCTL_OP_RXSA_UPD;
		w.step[i].sa.active = true;
		w.sent[act] = &w.step[i];
		w.skey[act] = keys[i];
		w.idx[act++] = i;
	}
	if (r >= 0)
		sa_win_send(k, &w, &act, false, rc, errs);
	sa_win_free(&w, n);
	for (size_t i = 0; i < n; i++)
		if (rc[i] < 0)
			return rc[i];
	return 0;
}

int fctl_engine_kernel_exec_window(struct fctl_engine_kernel *k, const struct fctl_op *const *ops,
				   const struct fctl_key *const *keys, size_t n, int *rc,
				   struct fctl_nl_err *errs)
{
	const uint8_t **kb;
	size_t *kl;
	int r;

	for (size_t i = 0; i < n; i++) {
		rc[i] = FCTL_ENGINE_NOT_RUN;
		errs[i] = (struct fctl_nl_err){ 0 };
	}
	if (n == 0)
		return 0;
	if (n == 1 || !fctl_engine_op_pipelines(ops[0]) ||
	    ((ops[0]->kind == FCTL_OP_TXSA_ADD || ops[0]->kind == FCTL_OP_RXSA_ADD) &&
	     !k->ledger_dir[0])) {
		/* op by op (an SA add with no ledger is refused as fctl_engine_sa_write does) */
		for (size_t i = 0; i < n; i++) {
			r = rc[i] = fctl_engine_kernel_exec(k, ops[i], keys ? keys[i] : NULL, &errs[i]);
			if (r < 0)
				return r;
		}
		return 0;
	}
	if (ops[0]->kind == FCTL_OP_TXSA_ADD || ops[0]->kind == FCTL_OP_RXSA_ADD)
		return sa_add_window(k, ops, keys, n, rc, errs);
	/* no SA write: links, addresses, RX SCs (keys play no part) */
	kb = calloc(n, sizeof(*kb));
	kl = calloc(n, sizeof(*kl));
	if (!kb || !kl) {
		free(kb);
		free(kl);
		return rc[0] = say(&errs[0], -ENOMEM, "out of memory");
	}
	r = table_window(k, ops, kb, kl, n, rc, errs);
	free(kb);
	free(kl);
	for (size_t i = 0; i < n && r == 0; i++)
		if (rc[i] < 0)
			r = rc[i];
	return r;
}
