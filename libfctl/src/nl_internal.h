/* SPDX-License-Identifier: MIT */
/* Shared between nl.c, nl_link.c and nl_macsec.c; not installed. */
#ifndef FCTL_NL_INTERNAL_H
#define FCTL_NL_INTERNAL_H

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "fctl/nl.h"

struct fctl_nl {
	struct nl_sock *rt;  /* NETLINK_ROUTE */
	struct nl_sock *gen; /* NETLINK_GENERIC */
	int macsec_family;   /* 0 until resolved */
	struct fctl_nl_stats stats;
};

/* Sends msg on sk and reads until the ACK (write or plain request) or NLMSG_DONE
 * (dump). valid (may be NULL) sees every reply message; a negative return from
 * it aborts with that errno. Counts one round trip, and one write when write.
 * Returns 0, -EINTR for an interrupted dump, or a negative errno with err
 * filled (extended ACK included). Does not free msg. */
int fctl_nli_xact(struct fctl_nl *nl, struct nl_sock *sk, struct nl_msg *msg, bool write,
		  int (*valid)(struct nl_msg *msg, void *arg), void *arg, struct fctl_nl_err *err);

/* Sets err (if not NULL): err->err = e, err->msg = "<what>: <extack or strerror>". */
void fctl_nli_err_set(struct fctl_nl_err *err, int e, const char *what);
void fctl_nli_err_clear(struct fctl_nl_err *err);

/* Looks a link up by name in the kernel (one round trip). *link (optional) gets a
 * reference the caller puts with rtnl_link_put. */
int fctl_nli_link_get(struct fctl_nl *nl, const char *name, int *ifindex, struct rtnl_link **link,
		      struct fctl_nl_err *err);

/* Resolves the "macsec" generic netlink family on first use. */
int fctl_nli_macsec_family(struct fctl_nl *nl, struct fctl_nl_err *err);

/* MACsec part of fctl_nl_exec (RXSC_* / RXSA_* / TXSA_*). */
int fctl_nli_exec_macsec(struct fctl_nl *nl, const struct fctl_op *op, const uint8_t *key,
			 size_t key_len, struct fctl_nl_err *err);
/* Link and address part of fctl_nl_exec. */
int fctl_nli_exec_link(struct fctl_nl *nl, const struct fctl_op *op, struct fctl_nl_err *err);

/* Fills the channels and SAs of the MACsec links of hs from a GET_TXSC dump. */
int fctl_nli_read_macsec_sas(struct fctl_nl *nl, struct fctl_host_state *hs);

/* Host order SCI <-> the big-endian u64 the kernel carries in its attributes. */
uint64_t fctl_nli_sci_to_wire(uint64_t sci);
uint64_t fctl_nli_sci_from_wire(uint64_t wire);

#endif
