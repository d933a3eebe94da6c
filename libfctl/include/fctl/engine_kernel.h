/* SPDX-License-Identifier: MIT */
/*
 * The engine's kernel session: the one door through which anything in fabricctl
 * writes to the kernel (docs/architecture.md, "The kernel-write boundary").
 *
 * An apply executes its plan through it; outside an apply, the agent's SA steps of a
 * key rotation (single and sa-batch requests) and MKA's SecY and address changes open
 * a session of their own and hand it plan operations (struct fctl_op). Every operation
 * goes through the engine's operations table (struct fctl_engine_ops, fctl/engine.h):
 * fctl_engine_nl_ops on a real kernel, a test's in-memory kernel otherwise. Nothing
 * outside libfctl/nl and libfctl/engine references fctl_nl_exec or another netlink
 * write (ctest nl-write-boundary checks the objects).
 *
 * Every SA write (fctl_engine_op_is_sa_write) passes through fctl_engine_sa_write, and
 * nothing else reaches the table's exec for one: the single place where the invariant
 * that must hold for every SA change, no SAK at a packet number it already used, is
 * enforced (the session's packet-number ledger, docs/keys-and-pn.md).
 *
 * Reads (dumps, counters) may stay on fctl_nl: fctl_engine_kernel_nl gives the
 * session's handle for them, so a caller that reads and writes (the agent, per SA
 * request) keeps one netlink session for both.
 *
 * Conventions as fctl/nl.h: int >= 0 or a negative errno; err (may be NULL) is filled
 * on failure, the kernel's extended-ACK text in err->msg when it sent one. A session is
 * not thread-safe: use one per thread.
 */
#ifndef FCTL_ENGINE_KERNEL_H
#define FCTL_ENGINE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/engine.h"
#include "fctl/plan.h"

struct fctl_engine_kernel;
struct fctl_key;
struct fctl_nl;
struct fctl_nl_err;

/* Opens a session on ops (NULL: fctl_engine_nl_ops; ctx goes to ops->open) in netns
 * (NULL: the current network namespace). *out is freed with fctl_engine_kernel_close. */
int fctl_engine_kernel_open(const struct fctl_engine_ops *ops, void *ctx, const char *netns,
			    struct fctl_engine_kernel **out);
/* Closes the session; accepts NULL. */
void fctl_engine_kernel_close(struct fctl_engine_kernel *k);

/* Attaches the packet-number ledger of state directory state_dir (as resolved by
 * fctl_state_dir_path) to the session's SA door (docs/keys-and-pn.md). Without one, every
 * SA add is refused (-EPERM): a key never goes into the kernel unaccounted for. */
void fctl_engine_kernel_ledger(struct fctl_engine_kernel *k, const char *state_dir);
/* The ledger's anchor for the audit log (docs/audit.md "Packet-number evidence"): when the
 * session's SA door consulted the ledger since the last call, its whole lines' length and
 * SHA-256 into out and 1 (the caller writes an sa-ledger record with it); 0 when there is
 * nothing to anchor (no ledger attached, not consulted, no file); a negative errno when it
 * cannot be read. */
struct fctl_sa_ledger_anchor;
int fctl_engine_kernel_ledger_anchor(struct fctl_engine_kernel *k,
				     struct fctl_sa_ledger_anchor *out);
/* How many SA adds this session withheld for nonce safety; why (may be NULL) gets the
 * first one's op, link and reason. */
size_t fctl_engine_kernel_withheld(const struct fctl_engine_kernel *k, char *why, size_t len);

/* The session's netlink handle for read-only calls (fctl_nl_read_*), borrowed for the
 * session's life; NULL when its table is not fctl_engine_nl_ops (a test's kernel). */
struct fctl_nl *fctl_engine_kernel_nl(const struct fctl_engine_kernel *k);

/* Whether op writes an SA: creates, changes or deletes a TX or RX SA, or moves a SecY's
 * encoding SA (which TX SA transmits). */
bool fctl_engine_op_is_sa_write(const struct fctl_op *op);

/* THE SA WRITE: every SA write of fabricctl (an apply's, its rollback's and recovery's,
 * the agent's rotation steps) is executed here and only here, through the session's
 * packet-number ledger (docs/keys-and-pn.md): an add starts where its key was retired on
 * that SCI, never below, is sent inactive, recorded, then activated as the op says; a
 * delete is preceded by the SA's PN, stopped and recorded. key: the SAK, in its locked
 * slot (borrowed), for TXSA_ADD and RXSA_ADD; NULL otherwise. Returns 0, 1 when the add
 * was WITHHELD (its key was in an SA that went away unrecorded, or nearly spent: nothing
 * sent, err->msg says why and the session counts it), or a negative errno: -EINVAL (err
 * says so) for an op that is no SA write, -EPERM for an add with no ledger attached. */
int fctl_engine_sa_write(struct fctl_engine_kernel *k, const struct fctl_op *op,
			 const struct fctl_key *key, struct fctl_nl_err *err);

/* Executes one plan operation of any kind: SA writes through fctl_engine_sa_write (so 1
 * means withheld, as there), the others (links, RX SCs, addresses) through the table's
 * exec, a link or RX SC delete after the ledger has the PNs of the SAs it takes. key as
 * for fctl_engine_sa_write. */
int fctl_engine_kernel_exec(struct fctl_engine_kernel *k, const struct fctl_op *op,
			    const struct fctl_key *key, struct fctl_nl_err *err);

/* rc of an op fctl_engine_kernel_exec_window did not run (one before it failed first) */
#define FCTL_ENGINE_NOT_RUN 2

/* Whether op may share a window (fctl_engine_kernel_exec_window) with other ops of its
 * kind: link adds, changes and up/down that are no SA write, address adds and deletes,
 * RX SC adds and updates, SA adds that name their SCI. Deletes (whose SAs the ledger
 * retires first, one by one) and SA updates go alone. */
bool fctl_engine_op_pipelines(const struct fctl_op *op);

/*
 * Executes ops[0..n), a window: ops of one kind that fctl_engine_op_pipelines admits,
 * none depending on another's outcome or on a link another one creates, and no two SA
 * adds for the same SCI. With a table that pipelines (exec_batch) the kernel gets them
 * all at once and handles each whether or not one before it failed, so an op after a
 * failing one may have been executed: rc[i] says, for each, what
 * fctl_engine_kernel_exec would have returned (0, 1 withheld, a negative errno with
 * errs[i] saying why) or FCTL_ENGINE_NOT_RUN. Without exec_batch the ops go one by one up
 * to the first failure. SA adds keep their three steps, each a window: all added
 * inactive, all recorded live in one durable ledger write, then activated, so no SA is
 * active before its key is in the ledger. keys[i] as fctl_engine_kernel_exec's key.
 * Returns 0 or the first negative rc (by index).
 */
int fctl_engine_kernel_exec_window(struct fctl_engine_kernel *k, const struct fctl_op *const *ops,
				   const struct fctl_key *const *keys, size_t n, int *rc,
				   struct fctl_nl_err *errs);

/* fctl_nl_neigh_copy through the session (fctl/nl.h): the neighbour entries of link from
 * whose MAC is one of macs[0..n_macs) copied to link to. The number created, or a
 * negative errno (-EOPNOTSUPP when the table has no neigh_copy). */
int fctl_engine_kernel_neigh_copy(struct fctl_engine_kernel *k, const char *from,
				  const char *to, const uint8_t (*macs)[6], size_t n_macs,
				  struct fctl_nl_err *err);

#endif
