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

static int exec_op(struct eng *e, const struct fctl_op *op, const struct fctl_key *key,
		   struct fctl_nl_err *nerr)
{
	/* an SA delete's deactivation is the kernel session's (fctl_engine_sa_write) */
	return fctl_engine_kernel_exec(&e->kern, op, key, nerr);
}

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

/* Runs plan; on failure stops at the failing op. Returns 0 or the failing errno. */
int fctl_engi_run_plan(struct eng *e, const struct fctl_plan *plan, struct fctl_key **keys,
		       const char *phase, bool hooks, size_t *done, long *failed, char *err,
		       size_t errlen)
{
#ifdef FCTL_TEST_HOOKS
	int fail_at = hooks ? env_int("FCTL_TEST_FAIL_AT_OP") : -1;
	int crash_after = hooks ? env_int("FCTL_TEST_CRASH_AFTER_OP") : -1;
#endif

	*done = 0;
	*failed = -1;
	for (size_t i = 0; i < plan->n_ops; i++) {
		const struct fctl_op *op = &plan->ops[i];
		struct fctl_nl_err nerr = { 0 };
		char words[160];
		int r;

		if (e->o->progress)
			e->o->progress(e->o->progress_ctx, phase, i, plan->n_ops, op);
		op_words(op, words, sizeof(words));
#ifdef FCTL_TEST_HOOKS
		if ((int)i == fail_at) {
			snprintf(err, errlen, "op %zu (%s): injected failure (FCTL_TEST_FAIL_AT_OP)",
				 i + 1, words);
			*failed = (long)i;
			return -EIO;
		}
#endif
		/* 1: withheld by the packet-number ledger, the SecY protecting with no SA of
		 * that key (docs/keys-and-pn.md); the session counts it */
		r = exec_op(e, op, keys ? keys[i] : NULL, &nerr);
		if (r < 0) {
			snprintf(err, errlen, "op %zu (%s): %s", i + 1, words,
				 nerr.msg[0] ? nerr.msg : strerror(-r));
			*failed = (long)i;
			return r;
		}
		*done = i + 1;
#ifdef FCTL_TEST_HOOKS
		if ((int)i == crash_after)
			raise(SIGKILL);
#endif
	}
	return 0;
}
