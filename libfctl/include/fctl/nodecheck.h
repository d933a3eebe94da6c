/* SPDX-License-Identifier: MIT */
/*
 * The node check (fabricctl node-check, docs/slurm.md): is every protected link of this
 * host healthy enough to run jobs on? Read only: the last applied profile (history
 * version 0), the live state over netlink, the drift plan, the last probe report
 * (STATE_DIR/probe/last, docs/probes.md) and the rotation records (fctl/rotation.h).
 *
 * Checks, one item each (per SecY where it says so):
 *   profile  a profile was applied on this host; with allow_never_applied, also a host
 *            whose history holds no apply at all (the roll-out of the check before the
 *            first apply: the caller audits it, report.never_applied says so)
 *   secy     per MACsec interface of the applied profile: present, up, protecting and
 *            encrypting with its encoding SA present and active
 *   drift    the applied profile plans to zero operations against the live state
 *   probe    the last probe run passed (exit 0); with max_probe_age_s, it exists and
 *            ended at most that many seconds ago
 *   key      per SecY whose policy has a cryptoperiod: the key in use is younger than
 *            it. Its age counts from the rotation record's last switch, else from the
 *            apply of the profile version in use (history), whichever is later.
 */
#ifndef FCTL_NODECHECK_H
#define FCTL_NODECHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/engine.h"

struct fctl_nodecheck_opts {
	const struct fctl_engine_opts *eo; /* state_dir, netns, host */
	double now;                        /* unix seconds, the clock every age uses */
	uint64_t max_probe_age_s;          /* 0: a probe record is not required */
	bool allow_never_applied;          /* a host that never had a profile applied passes */
};

struct fctl_nodecheck_item {
	char check[16];   /* profile, secy, drift, probe, key */
	char link[192];   /* "LINK.VLAN" of the profile, "" when none */
	char ifname[16];  /* the SecY, "" when none */
	bool ok;
	char text[320];   /* why (failed), or what was found (ok); no key material */
};

struct fctl_nodecheck_report {
	char host[256];
	bool applied;
	bool never_applied;   /* no profile applied, and the history holds no apply at all */
	uint64_t version;
	char profile[129];
	size_t n_secy;        /* MACsec interfaces the applied profile gives this host */
	struct fctl_nodecheck_item *v;
	size_t n;
	size_t failed;        /* items not ok */
};

/* Runs every check into out (released by the caller, also on failure). 0 when the checks
 * ran (out->failed says whether the node is healthy), or a negative errno when the state
 * could not be read at all (err says why): the history included, when no profile can be
 * read as applied (an unreadable history is never taken for a host without one). */
int fctl_nodecheck_run(const struct fctl_nodecheck_opts *o, struct fctl_nodecheck_report *out,
		       char *err, size_t errlen);
/* The first failed item's text, prefixed with its link or SecY: one line for a Slurm
 * reason; "" when none failed. */
void fctl_nodecheck_reason(const struct fctl_nodecheck_report *r, char *out, size_t len);
void fctl_nodecheck_release(struct fctl_nodecheck_report *r);

#endif
