/* SPDX-License-Identifier: MIT */
/* Shared between nl.c, nl_link.c and nl_macsec.c; not installed. */
#ifndef FCTL_NL_INT_H
#define FCTL_NL_INT_H

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "fctl/nl.h"

/*
 * Link name -> ifindex, so that an operation does not ask the kernel for the
 * ifindex of a device it was just told about. Filled from every full link dump
 * (fctl_nl_read_state, or fctl_nli_ifmap_refill after a batch of link adds).
 * The kernel reuses ifindexes, so the map is emptied on every link delete
 * (a delete also takes the MACsec uppers of a VLAN with it), whenever a name
 * it holds is created again, and when an operation that used a cached ifindex
 * fails with ENODEV (then the operation is retried once with a fresh lookup).
 */
struct fctl_nli_ifent {
	int ifindex; /* 0: empty slot */
	char name[FCTL_IFNAMSIZ];
};

struct fctl_nli_ifmap {
	struct fctl_nli_ifent *slot;
	size_t cap; /* 0 or a power of two */
	size_t n;
	unsigned int added; /* links created since the last fill: ifindex unknown */
	bool refill;        /* the map was emptied while in use: refill it on a miss */
};

struct fctl_nl {
	struct nl_sock *rt;  /* NETLINK_ROUTE */
	struct nl_sock *gen; /* NETLINK_GENERIC */
	int macsec_family;   /* 0 until resolved */
	struct fctl_nl_stats stats;
	struct fctl_nli_ifmap ifmap;
	/* pipelined writes (nl_pipe.c): raw sockets of their own, so that libnl's sequence
	 * bookkeeping on rt and gen never sees their answers; -1 when not open */
	int pipe_rt, pipe_gen;
	uint32_t pipe_seq; /* the next window's first sequence number */
};

/* --- nl_pipe.c --- */

/* One request of a window: its answer (rc: 0, the kernel's negative errno, or, when
 * unknown, -EPROTO / -ENOBUFS), whether one came, and where its extended ACK goes. */
struct fctl_nli_slot {
	int rc;
	bool answered;
	bool unknown; /* no answer came: the request may or may not have been applied */
	struct fctl_nl_err *err; /* may be NULL */
};

/* A window in flight: request i was sent with sequence number seq0 + i. */
struct fctl_nli_pipe {
	uint32_t seq0;
	size_t n;
	struct fctl_nli_slot *slot;
	size_t stray; /* answers that matched no request, or a request answered already */
};

/* A raw netlink socket of protocol for pipelined writes: bound, extended and capped
 * ACKs on. The fd or a negative errno. */
int fctl_nli_pipe_socket(int protocol);
/* Sends msgs[0..n) in one sendmsg, as requests with ACKs, sequence numbers seq0.. (the
 * messages themselves are not changed). The copy is wiped. 0 or a negative errno. */
int fctl_nli_pipe_send(int fd, struct nl_msg *const *msgs, size_t n, uint32_t seq0);
/* Matches the answers in buf (one datagram) to p's requests by sequence number: an ACK
 * or error answers its request (its extended ACK into slot->err); anything else, or a
 * second answer, is not an answer (p->stray counts those that match no request). */
void fctl_nli_pipe_take(struct fctl_nli_pipe *p, const void *buf, size_t len);
/* Reads fd's queue to its end without waiting (nl_pipe.c says why that is all there is)
 * and matches what it holds; every request still unanswered gets unknown = true and an
 * rc of -EPROTO (-ENOBUFS when the queue overran). 0, or a negative errno of recvmmsg. */
int fctl_nli_pipe_collect(int fd, struct fctl_nli_pipe *p);

/* The extended ACK's text of an error answer into err->extack. */
void fctl_nli_extack_copy(struct nlmsgerr *e, struct fctl_nl_err *err);

/* How fctl_nl_exec would send op: the message (*msg, the caller frees it with
 * fctl_nl_msg_free), after the lookups it needs (fresh: from the kernel, not the ifindex
 * map; *cached: an ifindex came from the map), on which socket (*gen: generic netlink).
 * what: op in words for errors. A negative errno with err set when it cannot be built. */
int fctl_nli_link_prepare(struct fctl_nl *nl, const struct fctl_op *op, const char *what,
			  bool fresh, bool *cached, struct nl_msg **msg, struct fctl_nl_err *err);
int fctl_nli_macsec_prepare(struct fctl_nl *nl, int family, const struct fctl_op *op,
			    const char *what, const uint8_t *key, size_t key_len, bool fresh,
			    bool *cached, struct nl_msg **msg, struct fctl_nl_err *err);
/* op in words, as fctl_nl_exec's errors name it */
void fctl_nli_link_what(const struct fctl_op *op, char *buf, size_t n);
void fctl_nli_macsec_what(const struct fctl_op *op, char *buf, size_t n);
/* The address generation request that follows a LINK_ADD of a link that has one. */
int fctl_nli_addrgen_msg(const struct fctl_op *op, struct nl_msg **msg);

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

/* What one RTM_GETLINK answer says about a link. */
struct fctl_nli_link_info {
	int ifindex;
	bool macsec;      /* IFLA_INFO_KIND "macsec" */
	bool has_cipher;  /* macsec: IFLA_MACSEC_CIPHER_SUITE was known */
	enum fctl_cipher cipher;
};

/* Looks a link up by name in the kernel (one round trip, no statistics asked).
 * -ENODEV with err set when there is no such link. Adds it to the ifindex map. */
int fctl_nli_link_get(struct fctl_nl *nl, const char *name, struct fctl_nli_link_info *info,
		      struct fctl_nl_err *err);

/* The ifindex of a link by name: from the map, else from the kernel (a single
 * lookup, or one dump that refills the map when links were created or deleted
 * since it was filled). *cached tells whether the answer came from the map
 * without asking the kernel: an op that then fails with ENODEV must call
 * fctl_nli_ifmap_invalidate and retry once with a fresh lookup. */
int fctl_nli_ifindex(struct fctl_nl *nl, const char *name, int *ifindex, bool *cached,
		     struct fctl_nl_err *err);

/* Map upkeep. clear: empty, as before any fill. put: one name (during a fill).
 * fill_done: the map now holds every link of a full dump. invalidate: empty it
 * because what it holds may be wrong (delete, ENODEV). link_added: a link of
 * this name was (or may have been) created. */
void fctl_nli_ifmap_clear(struct fctl_nl *nl);
int fctl_nli_ifmap_put(struct fctl_nl *nl, const char *name, int ifindex);
void fctl_nli_ifmap_fill_done(struct fctl_nl *nl);
void fctl_nli_ifmap_invalidate(struct fctl_nl *nl);
void fctl_nli_ifmap_link_added(struct fctl_nl *nl, const char *name);

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
/* nl_vlan.c: a VLAN's IFLA_LINKINFO {kind vlan, data {...}}. create: ID, PROTOCOL and the
 * QoS maps it has (a list only when not empty); change: INGRESS_QOS of all 8 PCPs and
 * EGRESS_QOS as the op lists it (PCP 0 entries included). read: the maps of a dumped
 * link, in normal form. */
struct rtnl_link;
int fctl_nli_put_vlan_data(struct nl_msg *msg, const struct fctl_link *l, bool create);
void fctl_nli_vlan_read_qos(struct rtnl_link *l, struct fctl_vlan_qos *q);

uint64_t fctl_nli_sci_to_wire(uint64_t sci);
uint64_t fctl_nli_sci_from_wire(uint64_t wire);

#endif
