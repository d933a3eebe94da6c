/* SPDX-License-Identifier: MIT */
/* Shared between the engine's files (engine.c and engine_*.c); not installed. */
#ifndef FCTL_ENGINE_INT_H
#define FCTL_ENGINE_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/engine.h"
#include "fctl/engine_kernel.h"

struct fctl_key;
struct fctl_engi_pn;

/* A kernel session (fctl/engine_kernel.h): the table and what its open returned, and the
 * packet-number ledger its SA door keeps (engine_pn.c, docs/keys-and-pn.md). */
struct fctl_engine_kernel {
	const struct fctl_engine_ops *ops;
	void *sess; /* NULL: not open */
	char ledger_dir[PATH_MAX]; /* the state directory of the ledger; "": none attached */
	struct fctl_engi_pn *pn;   /* the ledger, loaded at the first SA op that needs it */
	bool pn_touched;           /* the door consulted it since the last anchor */
	/* SA adds withheld in this session: kind, ifname, sci, an; the first one's reason */
	struct fctl_op *withheld;
	size_t n_withheld, cap_withheld;
	char withheld_why[512];
};

/* One engine run: the options, the state directory, the host, the lock, the kernel. */
struct eng {
	const struct fctl_engine_opts *o;
	char dir[PATH_MAX];
	char host[64];
	int lock_fd;
	struct fctl_engine_kernel kern; /* every write goes through fctl_engine_kernel_exec */
	/* the confirmation record the apply writes before its journal (NULL: none) */
	const struct fctl_confirm_pending *arm;
	bool expiring; /* the rollback of a confirmed apply: pending records do not refuse it */
};

/* --- engine.c --- */

/* Opens one engine run: the state directory, the host, with lock the apply lock (without
 * waiting, -EBUSY), with need_nl a netlink session. err says why on failure. */
int fctl_engi_open(struct eng *e, const struct fctl_engine_opts *o, bool lock, bool need_nl,
		   char *err, size_t errlen);
void fctl_engi_close(struct eng *e);
/* fctl_engine_apply and fctl_engine_teardown with e open and locked (res zeroed by the
 * caller; counters and time are the caller's). */
int fctl_engi_apply_locked(struct eng *e, const struct fctl_profile *p,
			   struct fctl_apply_result *res);
int fctl_engi_teardown_locked(struct eng *e, struct fctl_apply_result *res);

/* --- engine_confirm.c --- */

/* STATE_DIR/confirm: written durably (replace + directory fsync), read (1 and *out, 0 when
 * there is none, -EINVAL when malformed), removed durably. */
int fctl_engi_confirm_write(const struct eng *e, const struct fctl_confirm_pending *c);
int fctl_engi_confirm_read(const char *dir, struct fctl_confirm_pending *out);
int fctl_engi_confirm_remove(const struct eng *e);
/* -EBUSY with err saying why when a confirmation is pending (a change must wait), else 0. */
int fctl_engi_confirm_refuse(const struct eng *e, char *err, size_t errlen);
/* fctl_engine_confirm_expire with e open and locked, its journal recovered. */
int fctl_engi_confirm_expire_locked(struct eng *e, const char *id, bool force,
				    struct fctl_confirm_pending *out, struct fctl_apply_result *res);

/* --- engine_history.c --- */

/* The history index of state directory dir (*out = NULL, *n = 0 when there is none). */
int fctl_engi_history_read(const char *dir, struct fctl_history_entry **out, size_t *n);
/* Loads history entry h's stored copy (validated; relative key ids resolve in h->dir). */
int fctl_engi_history_load(const struct fctl_history_entry *h, struct fctl_diags *d,
			   struct fctl_profile **out);
/* Records p in the history unless the last entry has its bytes. Returns 0, or a negative
 * errno with err saying the apply went through but the history was not written. */
int fctl_engi_history_record(struct eng *e, const struct fctl_profile *p, char *err,
			     size_t errlen);
/* Lays the rotation records over a rendered state (fctl_engi_render_host's second step;
 * alone for opts.desired, rendered before). */
int fctl_engi_desired_overlay(const struct eng *e, struct fctl_host_state *rendered);
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
/* What plan (live -> want, of profile p) was computed against: a parent-missing warning in
 * findings for each link it creates on a parent device the host does not have (want does
 * not hold it, the kernel has none of that name), and the seal (the live state's and the
 * plan's digests, the parents' presence in the former). Negative errno. */
int fctl_engi_plan_context(struct eng *e, const struct fctl_profile *p,
			   const struct fctl_host_state *live, const struct fctl_host_state *want,
			   const struct fctl_plan *plan, struct fctl_diags *findings,
			   struct fctl_plan_seal *seal);

/* --- engine_exec.c --- */

/* Runs plan through e->kern, keys[i] for op i (keys may be NULL), in windows of
 * independent ops (fctl_engine_kernel_exec_window); stops after the window of the first
 * failure. *done: ops that took effect (some may come after the failing one, in its
 * window); *failed: the failing op or -1. Returns 0 or the failing op's negative errno,
 * err naming the op and the kernel's message. hooks: the test hooks apply (builds with
 * FCTL_TEST_HOOKS only). */
int fctl_engi_run_plan(struct eng *e, const struct fctl_plan *plan, struct fctl_key **keys,
		       const char *phase, bool hooks, size_t *done, long *failed, char *err,
		       size_t errlen);

/* --- engine_pn.c: the packet-number ledger (docs/keys-and-pn.md), kept by the SA door of
 * a kernel session (engine_kernel.c); no ledger attached: every SA add is refused --- */

/* Before an SA add (op a copy the caller sends, key its SAK): 0 with op->sa.pn raised to
 * where the key may continue on op's SCI; 1 when the SA must be withheld (why says why
 * and what brings the link back); a negative errno when there is no ledger or it cannot
 * be read (why says so). The door then adds the SA inactive, fctl_engi_pn_live, and
 * activates it: an SA that no frame used is all a crash can leave unrecorded. */
int fctl_engi_pn_admit(struct fctl_engine_kernel *k, struct fctl_op *op,
		       const struct fctl_key *key, char *why, size_t whylen);
/* Records op's key durably as live on its SCI (its SA is in the kernel, not yet active). */
int fctl_engi_pn_live(struct fctl_engine_kernel *k, const struct fctl_op *op,
		      const struct fctl_key *key, char *err, size_t errlen);
/* fctl_engi_pn_live for n SA adds at once: one ledger write, one sync. */
int fctl_engi_pn_live_many(struct fctl_engine_kernel *k, const struct fctl_op *const *ops,
			   const struct fctl_key *const *keys, size_t n, char *err, size_t errlen);
/* Before an op that removes SAs (an SA or RX SC delete, a link delete: the link's SAs and
 * those of the links above it): deactivates them (through send, the door's, the one
 * caller of the table's exec), reads their PNs back and records them
 * durably as retired. 0 (also when nothing is removed, or no ledger is attached), or a
 * negative errno with err (or nerr, the kernel's text) saying why. */
typedef int (*fctl_engi_send_fn)(struct fctl_engine_kernel *k, const struct fctl_op *op,
				 struct fctl_nl_err *err);
int fctl_engi_pn_retire(struct fctl_engine_kernel *k, const struct fctl_op *op,
			fctl_engi_send_fn send, struct fctl_nl_err *nerr, char *err, size_t errlen);
/* How many ops of plan add an SA this session withheld (a fresh dump lacks them, rightly). */
size_t fctl_engi_pn_withheld_in(const struct fctl_engine_kernel *k, const struct fctl_plan *plan);
/* The ledger and the withheld list go (the session stays open). */
void fctl_engi_pn_release(struct fctl_engine_kernel *k);

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
