// SPDX-License-Identifier: MIT
/* Executing a plan through the engine's kernel session (engine_kernel.c), op by op. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/keys.h"
#include "fctl/nl.h"

#include "engine_int.h"

#ifdef FCTL_TEST_HOOKS
/* The test hooks (docs/apply.md) exist only in builds configured with FCTL_TEST_HOOKS. */
static int env_int(const char *name)
{
	const char *v = getenv(name);
	uint64_t u;

	if (!v || fctl_parse_u64(v, &u) < 0 || u > INT_MAX)
		return -1;
	return (int)u;
}
#endif

static void op_words(const struct fctl_op *op, char *out, size_t len)
{
	char sci[24];

	fctl_sci_format(op->sci, sci);
	switch (op->kind) {
	case FCTL_OP_RXSC_ADD:
	case FCTL_OP_RXSC_DEL:
	case FCTL_OP_RXSC_UPD:
		snprintf(out, len, "%s %s sci %s", fctl_op_kind_name(op->kind), op->ifname, sci);
		break;
	case FCTL_OP_RXSA_ADD:
	case FCTL_OP_RXSA_DEL:
	case FCTL_OP_RXSA_UPD:
		snprintf(out, len, "%s %s sci %s an %u", fctl_op_kind_name(op->kind), op->ifname,
			 sci, op->an);
		break;
	case FCTL_OP_TXSA_ADD:
	case FCTL_OP_TXSA_DEL:
	case FCTL_OP_TXSA_UPD:
		snprintf(out, len, "%s %s an %u", fctl_op_kind_name(op->kind), op->ifname, op->an);
		break;
	case FCTL_OP_ADDR_ADD:
	case FCTL_OP_ADDR_DEL:
		snprintf(out, len, "%s %s %s", fctl_op_kind_name(op->kind), op->ifname, op->addr);
		break;
	default:
		snprintf(out, len, "%s %s", fctl_op_kind_name(op->kind), op->ifname);
	}
}

static const char *name_of(const struct fctl_op *op)
{
	return op->ifname[0] ? op->ifname : op->link.name;
}

/* Whether plan op `to` may join the window of ops [from, to): one kind, each op
 * pipelines (fctl_engine_op_pipelines), and none depends on another: not a link made
 * on a link the window makes (its ifindex is looked up before anything is sent), not a
 * link op on a link the window names already, not an SA add for an SCI the window adds
 * one for (the ledger admits each against what it holds before the window). */
static bool joins(const struct fctl_plan *plan, size_t from, size_t to)
{
	const struct fctl_op *op = &plan->ops[to];

	if (op->kind != plan->ops[from].kind || !fctl_engine_op_pipelines(op) ||
	    !fctl_engine_op_pipelines(&plan->ops[from]))
		return false;
	for (size_t j = from; j < to; j++) {
		const struct fctl_op *q = &plan->ops[j];

		switch (op->kind) {
		case FCTL_OP_TXSA_ADD:
		case FCTL_OP_RXSA_ADD:
			if (q->sci == op->sci)
				return false;
			break;
		case FCTL_OP_LINK_ADD:
			if (strcmp(op->link.parent, name_of(q)) == 0)
				return false;
			/* fall through */
		case FCTL_OP_LINK_UP:
		case FCTL_OP_LINK_DOWN:
		case FCTL_OP_LINK_CHANGE:
			if (strcmp(name_of(op), name_of(q)) == 0)
				return false;
			break;
		default:
			break;
		}
	}
	return true;
}

struct window {
	const struct fctl_op *ops[FCTL_NL_WINDOW_MAX];
	const struct fctl_key *keys[FCTL_NL_WINDOW_MAX];
	int rc[FCTL_NL_WINDOW_MAX];
	struct fctl_nl_err errs[FCTL_NL_WINDOW_MAX];
};

/* Says which op of window [i, i + n) failed first (err), and how many after it took
 * effect: those are rolled back with the rest (restore() reads the kernel, not a list). */
static int window_failed(const struct fctl_plan *plan, const struct window *w, size_t i,
			 size_t n, size_t *done, long *failed, char *err, size_t errlen)
{
	size_t first = n, ok = 0, after = 0;
	char words[160];
	int len;

	for (size_t k = 0; k < n; k++) {
		if (w->rc[k] < 0 && first == n)
			first = k;
		else if (w->rc[k] == 0 || w->rc[k] == 1) {
			ok++;
			after += first < n;
		}
	}
	op_words(&plan->ops[i + first], words, sizeof(words));
	len = snprintf(err, errlen, "op %zu (%s): %s", i + first + 1, words,
		       w->errs[first].msg[0] ? w->errs[first].msg : strerror(-w->rc[first]));
	if (after && len >= 0 && (size_t)len < errlen)
		snprintf(err + len, errlen - (size_t)len,
			 " (%zu later op%s sent with it took effect)", after, after == 1 ? "" : "s");
	*done = i + ok;
	*failed = (long)(i + first);
	return w->rc[first];
}

/*
 * Runs plan in windows (fctl_engine_kernel_exec_window): consecutive ops that joins()
 * admits, at most FCTL_NL_WINDOW_MAX, go to the kernel together; the kernel takes them in
 * plan order. On a failure it stops after that window: the first failing op is the one
 * named, and ops after it in its window may have taken effect (*done counts them). The
 * journal written before the first op names every link the plan touches, so a crash
 * anywhere in a window leaves nothing recovery does not look at. Returns 0 or the
 * failing errno.
 */
int fctl_engi_run_plan(struct eng *e, const struct fctl_plan *plan, struct fctl_key **keys,
		       const char *phase, bool hooks, size_t *done, long *failed, char *err,
		       size_t errlen)
{
#ifdef FCTL_TEST_HOOKS
	int fail_at = hooks ? env_int("FCTL_TEST_FAIL_AT_OP") : -1;
	int crash_after = hooks ? env_int("FCTL_TEST_CRASH_AFTER_OP") : -1;
#endif
	struct window *w = calloc(1, sizeof(*w));
	int r = 0;

	(void)hooks;
	*done = 0;
	*failed = -1;
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < plan->n_ops;) {
		size_t j = i + 1;

		while (j < plan->n_ops && j - i < FCTL_NL_WINDOW_MAX && joins(plan, i, j))
			j++;
#ifdef FCTL_TEST_HOOKS
		/* the hooks' op ends a window: failed alone, or the last one before the crash */
		if (fail_at >= 0 && (size_t)fail_at > i && (size_t)fail_at < j)
			j = (size_t)fail_at;
		if (crash_after >= 0 && (size_t)crash_after >= i && (size_t)crash_after + 1 < j)
			j = (size_t)crash_after + 1;
#endif
		for (size_t k = i; k < j; k++) {
			if (e->o->progress)
				e->o->progress(e->o->progress_ctx, phase, k, plan->n_ops, &plan->ops[k]);
			w->ops[k - i] = &plan->ops[k];
			w->keys[k - i] = keys ? keys[k] : NULL;
		}
#ifdef FCTL_TEST_HOOKS
		if ((int)i == fail_at) {
			char words[160];

			op_words(&plan->ops[i], words, sizeof(words));
			snprintf(err, errlen, "op %zu (%s): injected failure (FCTL_TEST_FAIL_AT_OP)",
				 i + 1, words);
			*failed = (long)i;
			r = -EIO;
			break;
		}
#endif
		/* 1 for an SA add: withheld by the packet-number ledger, the SecY protecting
		 * with no SA of that key (docs/keys-and-pn.md); the session counts it */
		if (fctl_engine_kernel_exec_window(&e->kern, w->ops, w->keys, j - i, w->rc,
						   w->errs) < 0) {
			r = window_failed(plan, w, i, j - i, done, failed, err, errlen);
			break;
		}
		*done = j;
#ifdef FCTL_TEST_HOOKS
		if (crash_after >= 0 && (size_t)crash_after + 1 == j)
			raise(SIGKILL);
#endif
		i = j;
	}
	free(w);
	return r;
}
