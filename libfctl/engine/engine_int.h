/* SPDX-License-Identifier: MIT */
/* Shared between the engine's files (engine.c and engine_*.c); not installed. */
#ifndef FCTL_ENGINE_INT_H
#define FCTL_ENGINE_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/engine.h"

struct fctl_key;

/* One engine run: the options, the state directory, the host, the lock, the kernel. */
struct eng {
	const struct fctl_engine_opts *o;
	char dir[PATH_MAX];
	char host[64];
	int lock_fd;
	const struct fctl_engine_ops *ops;
	void *nl; /* the ops' session */
};

/* --- engine_history.c --- */

/* The history index of state directory dir (*out = NULL, *n = 0 when there is none). */
int fctl_engi_history_read(const char *dir, struct fctl_history_entry **out, size_t *n);
/* Records p in the history unless the last entry has its bytes. Returns 0, or a negative
 * errno with err saying the apply went through but the history was not written. */
int fctl_engi_history_record(struct eng *e, const struct fctl_profile *p, char *err,
			     size_t errlen);
/* Desired state of e->host: p rendered, with the SAs key rotation moved where they live. */
int fctl_engi_render_host(const struct eng *e, const struct fctl_profile *p,
			  struct fctl_host_state **out);
/* The last applied profile's desired state: *prev (NULL when nothing was applied; want
 * itself when that profile has p's bytes), *owned what the caller frees. */
void fctl_engi_last_applied(struct eng *e, const struct fctl_profile *p,
			    const struct fctl_host_state *want, const struct fctl_host_state **prev,
			    struct fctl_host_state **owned);

/* --- engine_live.c --- */

/* Live state of the links named in want, prev and extra (any may be NULL), their key
 * references matched from those states by KEYID. err says why on failure. */
int fctl_engi_read_live(struct eng *e, const struct fctl_host_state *want,
			const struct fctl_host_state *prev, const struct fctl_host_state *extra,
			struct fctl_host_state **out, char *err, size_t errlen);
/* Drops the live links not named in want, prev or extra: those the engine must not touch. */
void fctl_engi_restrict_live(struct fctl_host_state *live, const struct fctl_host_state *want,
			     const struct fctl_host_state *prev, const struct fctl_host_state *extra);

/* --- engine_exec.c --- */

/* Runs plan through e->ops, keys[i] for op i (keys may be NULL); stops at the first
 * failure. *done: ops finished; *failed: the failing op or -1. Returns 0 or the failing
 * op's negative errno, err naming the op and the kernel's message. hooks: the test hooks
 * apply (builds with FCTL_TEST_HOOKS only). */
int fctl_engi_run_plan(struct eng *e, const struct fctl_plan *plan, struct fctl_key **keys,
		       const char *phase, bool hooks, size_t *done, long *failed, char *err,
		       size_t errlen);

/* --- engine_journal.c --- */

/* Writes STATE_DIR/journal (the prior state, the plan's size and the links it touches)
 * durably before the first op. */
int fctl_engi_journal_begin(struct eng *e, const struct fctl_profile *p,
			    const struct fctl_host_state *before, const struct fctl_plan *plan);
/* Removes the journal durably. */
int fctl_engi_journal_end(struct eng *e);
/* The prior state of an interrupted apply (*before = NULL when there is no journal) and
 * the links its plan touched (*touched, names only). err says why on failure. */
int fctl_engi_journal_read(struct eng *e, struct fctl_host_state **before,
			   struct fctl_host_state **touched, char *err, size_t errlen);

#endif
