/* SPDX-License-Identifier: MIT */
/* Shared between the metrics files (metrics*.c): family heads, labels, the link map. */
#ifndef FCTL_METRICS_INT_H
#define FCTL_METRICS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/agent.h"
#include "fctl/engine.h"
#include "fctl/state.h"
#include "fctl/util.h"

/*
 * The text exposition format wants every family as one group: "# HELP", "# TYPE",
 * then all its samples, with no other family in between. So the files below collect
 * what a scrape reads first (the link map, the SecYs, the records) and then write
 * family by family, each looping over the links.
 */

/* "# HELP name help" and "# TYPE name type". */
void fctl_mx_head(struct fctl_buf *o, const char *name, const char *type, const char *help);
/* Appends key="value" to a label set of len bytes (a ',' first when it is not empty),
 * escaping '\\', '"' and newlines as the format asks. */
void fctl_mx_label(char *set, size_t len, const char *key, const char *value);
/* "name{set} value\n" ("name value\n" for an empty set); a double, %.17g, as the format
 * spells it (NaN, +Inf). */
void fctl_mx_sample(struct fctl_buf *o, const char *name, const char *set, double v);
void fctl_mx_sample_u64(struct fctl_buf *o, const char *name, const char *set, uint64_t v);

/* One interface the last applied profile gives this host, and the link it belongs to. */
struct fctl_mx_link {
	char ifname[FCTL_IFNAMSIZ];
	char link[192];           /* "LINK.VLAN" as keymgr names it (h1-h2.100) */
	bool macsec;              /* the VLAN's MACsec SecY (else the VLAN device) */
	uint64_t cryptoperiod_s;  /* the policy's, 0 = none */
};

struct fctl_mx_links {
	struct fctl_mx_link *v;
	size_t n;
	bool applied; /* a profile was applied (the map may still be empty) */
};

/* The interfaces of host in the last applied profile (history version 0); an empty map
 * when none was applied or it cannot be read. 0 or -ENOMEM. */
int fctl_mx_links_load(const struct fctl_engine_opts *eo, const char *host,
		       struct fctl_mx_links *out);
void fctl_mx_links_release(struct fctl_mx_links *l);
/* The entry of ifname, or NULL. */
const struct fctl_mx_link *fctl_mx_links_find(const struct fctl_mx_links *l, const char *ifname);
/* The label set host, link (the map's name, or "" when the profile does not name it)
 * and ifname. */
void fctl_mx_link_labels(const struct fctl_metrics_src *src, const struct fctl_mx_links *l,
			 const char *ifname, char *set, size_t len);

/* metrics_macsec.c: the SecY, SA and counter families of the live MACsec links. */
int fctl_mx_macsec(const struct fctl_metrics_src *src, const struct fctl_mx_links *l,
		   const struct fctl_host_state *live, struct fctl_buf *o);
/* metrics_state.c: drift per link, rotation records, audit. */
void fctl_mx_drift_links(const struct fctl_metrics_src *src, const struct fctl_mx_links *l,
			 struct fctl_buf *o);
void fctl_mx_rotation(const struct fctl_metrics_src *src, const struct fctl_mx_links *l,
		      struct fctl_buf *o);
void fctl_mx_audit(const struct fctl_metrics_src *src, struct fctl_buf *o);
/* metrics_probe.c: the last probe run (STATE_DIR/probe/last, the fabricctl_probe_*
 * families) and each link's last run (STATE_DIR/probe/links/LINK@NETDEV, written by
 * the fabric probe's runs: the fabricctl_probe_link_* families, labelled by netdev). */
void fctl_mx_probe(const struct fctl_metrics_src *src, struct fctl_buf *o);

#endif
