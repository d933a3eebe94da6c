/* SPDX-License-Identifier: MIT */
/*
 * Plans: the ordered operations that take one host from a current state to a
 * desired state. Computed from two struct fctl_host_state, so the offline plan
 * (old profile -> new) and the live plan (kernel -> profile) are one thing.
 *
 * Order is the safe order: removals first (addresses, TX SAs, RX SAs, RX SCs,
 * MACsec links, VLAN links), then creations bottom-up (VLAN, MACsec link with
 * protect on and validate strict, RX SCs, RX SAs, TX SAs inactive-then-active,
 * link up, addresses last). A receive SA always exists before the peer-facing
 * transmit SA, and addresses only ever sit on a MACsec device once its SAs are in.
 */
#ifndef FCTL_PLAN_H
#define FCTL_PLAN_H

#include "fctl/state.h"

enum fctl_op_kind {
	FCTL_OP_ADDR_DEL,
	FCTL_OP_LINK_DOWN,
	FCTL_OP_TXSA_DEL,
	FCTL_OP_RXSA_DEL,
	FCTL_OP_RXSC_DEL,
	FCTL_OP_LINK_DEL,
	FCTL_OP_LINK_ADD,
	FCTL_OP_LINK_CHANGE,
	FCTL_OP_RXSC_ADD,
	FCTL_OP_RXSC_UPD,
	FCTL_OP_RXSA_ADD,
	FCTL_OP_RXSA_UPD,
	FCTL_OP_TXSA_ADD,
	FCTL_OP_TXSA_UPD,
	FCTL_OP_LINK_UP,
	FCTL_OP_ADDR_ADD,
};

const char *fctl_op_kind_name(enum fctl_op_kind k); /* "create-link", "add-rxsa", ... */

/* Which fields of a link a LINK_CHANGE op sets (a fresh change object carries only these). */
enum {
	FCTL_CHG_MTU = 1u << 0,
	FCTL_CHG_WINDOW = 1u << 1,
	FCTL_CHG_REPLAY = 1u << 2,
	FCTL_CHG_VALIDATE = 1u << 3,
	FCTL_CHG_ENCRYPT = 1u << 4,
	FCTL_CHG_PROTECT = 1u << 5,
	FCTL_CHG_SEND_SCI = 1u << 6,
	FCTL_CHG_END_STATION = 1u << 7,
	FCTL_CHG_SCB = 1u << 8,
	FCTL_CHG_ENCODING_SA = 1u << 9,
	FCTL_CHG_OFFLOAD = 1u << 10,
	FCTL_CHG_ADDRGEN = 1u << 11, /* IPv6 address generation (link.addrgen) */
	/* a VLAN's QoS maps (link.qos): the op's egress map also lists, with PCP 0, each
	 * mapping the link has and should not, which is how the kernel removes one */
	FCTL_CHG_QOS = 1u << 12,
};

struct fctl_op {
	enum fctl_op_kind kind;
	char ifname[FCTL_IFNAMSIZ];
	uint64_t sci; /* RX SC / RX SA ops */
	uint8_t an;   /* SA ops */
	unsigned int changes; /* FCTL_CHG_* for LINK_CHANGE */
	bool disruptive;      /* traffic on this link stops while the op runs */
	char *detail;         /* human text: "window 0 -> 64", "cipher gcm-aes-128 -> gcm-aes-256" */
	/* Payload: a copy of the object in the state the op establishes (for ADD/UPD/CHANGE),
	 * or as it was (for DEL, so the op can be undone). */
	struct fctl_link link; /* LINK_* ops: without rxsc/addrs */
	struct fctl_sa sa;     /* SA ops */
	struct fctl_keyref key; /* SA add ops: where the key comes from (borrowed) */
	bool rxsc_active;
	char *addr; /* ADDR ops */
	bool addr_nodad; /* ADDR_ADD: IFA_F_NODAD (an address the host holds already, moved) */
};

struct fctl_plan {
	char *host;
	struct fctl_op *ops;
	size_t n_ops;
	size_t cap_ops;
};

/* Computes the plan from cur (NULL = nothing) to want. */
int fctl_plan_compute(const struct fctl_host_state *cur, const struct fctl_host_state *want,
		      struct fctl_plan **out);
void fctl_plan_free(struct fctl_plan *p);
size_t fctl_plan_count_disruptive(const struct fctl_plan *p);

/* Render. The JSON form is one object: {"host":..., "ops":[...], "summary":{...}} */
int fctl_plan_to_text(const struct fctl_plan *p, struct fctl_buf *out, bool color);
int fctl_plan_to_json(const struct fctl_plan *p, struct fctl_buf *out);
/* SHA-256 of the plan's JSON form (fctl_plan_to_json): its host and operations, key ids
 * and not keys. 0 or -ENOMEM. */
int fctl_plan_digest(const struct fctl_plan *p, uint8_t md[32]);

/* State diff: what differs between two host states, per link, as canonical lines.
 * Returns the number of links that differ (>= 0) or a negative errno. */
int fctl_state_diff_text(const struct fctl_host_state *a, const struct fctl_host_state *b,
			 struct fctl_buf *out, bool color);
int fctl_state_diff_json(const struct fctl_host_state *a, const struct fctl_host_state *b,
			 struct fctl_buf *out);
/* Canonical one-attribute-per-line text of one link (used by diff and show). */
int fctl_link_to_lines(const struct fctl_link *l, struct fctl_buf *out);

#endif
