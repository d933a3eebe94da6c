/* SPDX-License-Identifier: MIT */
/*
 * Netlink layer: reads the VLAN and MACsec state of a host and executes plan
 * operations, over rtnetlink (libnl-route) and the "macsec" generic netlink
 * family (messages built by hand: libnl has no SA/RX SC support).
 *
 * Conventions: int >= 0 on success, negative errno on failure; output
 * parameters are written only on success. Every error that reached the kernel
 * carries the kernel's extended-ACK text in struct fctl_nl_err when the kernel
 * sent one. Key bytes are never logged, never copied except into the netlink
 * message, and that message is wiped before it is freed.
 *
 * A struct fctl_nl is not thread-safe: use one per thread.
 */
#ifndef FCTL_NL_H
#define FCTL_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/plan.h"
#include "fctl/state.h"

struct fctl_nl;
struct nl_msg;
struct nlmsghdr;

/* What went wrong, for the user. */
struct fctl_nl_err {
	int err;          /* negative errno, 0 = no error */
	char extack[256]; /* the kernel's extended-ACK message, "" when none */
	char msg[256];    /* one line: "<what>: <extack or errno text>" */
};

/* Counters since open (or the last reset). */
struct fctl_nl_stats {
	uint64_t writes;      /* requests that ask the kernel to change something */
	uint64_t round_trips; /* every request sent and answered (reads, dumps, writes) */
};

/*
 * Opens an rtnetlink socket and a generic netlink socket, with extended ACK and
 * capped ACKs on. netns: NULL for the current network namespace, or a name under
 * /run/netns: the sockets are created inside it and the caller's namespace is
 * restored before returning. The "macsec" family is resolved now if the kernel
 * has it, or on first use otherwise.
 */
int fctl_nl_open(const char *netns, struct fctl_nl **out);
void fctl_nl_close(struct fctl_nl *nl);

void fctl_nl_get_stats(const struct fctl_nl *nl, struct fctl_nl_stats *out);
void fctl_nl_reset_stats(struct fctl_nl *nl);

/*
 * Reads the live state: every VLAN and MACsec link, or (names != NULL) only the
 * named ones and the VLAN/MACsec links under them; their MACsec channels and
 * SAs (generic netlink dump), their IPv6 address generation mode, and addresses
 * (IPv6 link-local addresses, which the kernel manages, are left out, except on
 * a link a MACsec link sits on and on a link whose address generation is none:
 * those must hold no address at all). The result is sorted (fctl_host_state_sort).
 */
int fctl_nl_read_state(struct fctl_nl *nl, const char *host, const char *const *names,
		       size_t n_names, struct fctl_host_state **out);

/*
 * Reads one VLAN or MACsec link by name (RTM_GETLINK, no dump of the other
 * links) and, for MACsec, its channels and SAs: what the SA requests of a key
 * rotation need, at a cost that does not grow with the links of the host. No
 * addresses; parent left empty. -ENODEV when there is no such link, -EMEDIUMTYPE
 * when it is neither VLAN nor MACsec.
 */
int fctl_nl_read_link(struct fctl_nl *nl, const char *ifname, struct fctl_host_state **out);

/* A port's DCB settings as dcbnl reports them (IEEE 802.1Qaz/Qbb; nl_dcb.c), read only. */
struct fctl_dcb {
	bool has_pfc;
	uint8_t pfc_cap; /* traffic classes that can run PFC */
	uint8_t pfc_en;  /* bit N: PFC on priority N */
	uint8_t dcbx;    /* DCB_CAP_DCBX_* of the device, 0 when not reported */
};
/* RTM_GETDCB DCB_CMD_IEEE_GET of ifname: 0 with *out, -EOPNOTSUPP when the device's
 * driver has no DCB (virtio_net, veth), -ENODEV without the device, or a negative errno. */
int fctl_nl_dcb_get(struct fctl_nl *nl, const char *ifname, struct fctl_dcb *out);
/* The request, and the parser of its answer (one RTM_GETDCB message): -EBADMSG when it
 * is not a DCB_CMD_IEEE_GET answer with DCB_ATTR_IEEE. */
int fctl_nl_dcb_build_get(const char *ifname, struct nl_msg **out);
int fctl_nl_dcb_parse(struct nlmsghdr *nlh, struct fctl_dcb *out);

/* Whether a link (of any kind: a port, a bond, a VLAN) of that name exists: 1, 0 when
 * none does, or a negative errno when the kernel could not be asked. */
int fctl_nl_link_exists(struct fctl_nl *nl, const char *ifname);

/* Executes one plan operation. key/key_len: the SAK for TXSA_ADD and RXSA_ADD,
 * NULL/0 otherwise. err (may be NULL) is filled on failure. A LINK_ADD whose link
 * has an address generation mode sets it with a second request before anything
 * brings the link up (a kernel without IPv6 on the link satisfies "none"). A
 * LINK_CHANGE that turns address generation to none then removes every IPv6
 * address the link still has, the kernel's link-local one included. */
int fctl_nl_exec(struct fctl_nl *nl, const struct fctl_op *op, const uint8_t *key,
		 size_t key_len, struct fctl_nl_err *err);

/* rc of an op fctl_nl_exec_batch did not run (an op before it could not be built) */
#define FCTL_NL_NOT_RUN 2
/* The most ops a caller should give fctl_nl_exec_batch at once: their ACKs must fit the
 * socket's receive queue (the kernel drops what does not, ENOBUFS). */
#define FCTL_NL_WINDOW_MAX 64

/*
 * Executes ops[0..n) as fctl_nl_exec would, pipelined: the requests of a window go in one
 * sendmsg on a socket of their own, the answers are matched to them by sequence number.
 * The kernel handles them in order, each whether or not one before it failed, so the ops
 * must not depend on each other's outcome, and none may need the ifindex of a link an
 * earlier one creates (it is looked up when the messages are built, before any is sent).
 * Ops of one kind family (links and addresses, or MACsec) only; a window with a link
 * delete or an address generation turned to none (more than one request) runs op by op,
 * up to its first failure. keys/key_lens (either may be NULL) as fctl_nl_exec's, per op.
 * rc[i]: 0, a negative errno (errs[i], errs may be NULL, says why: an answer that never
 * came is -EPROTO or -ENOBUFS with "no answer from the kernel: the request may have been
 * applied"), or FCTL_NL_NOT_RUN. A LINK_ADD's address generation follows in a second
 * window (its failure is the LINK_ADD's). One round trip per window. Returns 0 or the
 * first negative rc (by index).
 */
int fctl_nl_exec_batch(struct fctl_nl *nl, const struct fctl_op *const *ops,
		       const uint8_t *const *keys, const size_t *key_lens, size_t n, int *rc,
		       struct fctl_nl_err *errs);

/*
 * Copies to link `to` the IPv4 and IPv6 neighbour entries of link `from` whose
 * link-layer address is known and is one of macs[0..n_macs), each as STALE: used at
 * once, and confirmed by the kernel's own probe a few seconds later. An entry `to`
 * has already stays as it is. For an address moved from one SecY of a port to
 * another: the peer's new SecY has its old one's MAC (its SCI says so, and the caller
 * passes the MACs of the new SecY's receive channels), and without the copy every
 * packet to the peer waits in the resolution queue, which overflows and drops under a
 * stream. Returns the number of entries created, or a negative errno with err filled.
 */
int fctl_nl_neigh_copy(struct fctl_nl *nl, const char *from, const char *to,
		       const uint8_t (*macs)[6], size_t n_macs, struct fctl_nl_err *err);

/* Statistics of one MACsec device. */
struct fctl_macsec_sa_stats {
	bool present;
	uint8_t an;
	/* RX SA */
	uint32_t in_pkts_ok;
	uint32_t in_pkts_invalid;
	uint32_t in_pkts_not_valid;
	uint32_t in_pkts_not_using_sa;
	uint32_t in_pkts_unused_sa;
	/* TX SA */
	uint32_t out_pkts_protected;
	uint32_t out_pkts_encrypted;
};

struct fctl_macsec_rxsc_stats {
	uint64_t sci; /* host order, as in struct fctl_rxsc */
	uint64_t in_octets_validated;
	uint64_t in_octets_decrypted;
	uint64_t in_pkts_unchecked;
	uint64_t in_pkts_delayed;
	uint64_t in_pkts_ok;
	uint64_t in_pkts_invalid;
	uint64_t in_pkts_late;
	uint64_t in_pkts_not_valid;
	uint64_t in_pkts_not_using_sa;
	uint64_t in_pkts_unused_sa;
	struct fctl_macsec_sa_stats sa[FCTL_MAX_AN];
};

#define FCTL_NL_STATS_MAX_RXSC 16

struct fctl_macsec_stats {
	/* SecY */
	uint64_t out_pkts_untagged;
	uint64_t in_pkts_untagged;
	uint64_t out_pkts_too_long;
	uint64_t in_pkts_no_tag;
	uint64_t in_pkts_bad_tag;
	uint64_t in_pkts_unknown_sci;
	uint64_t in_pkts_no_sci;
	uint64_t in_pkts_overrun;
	/* TX SC */
	uint64_t out_pkts_protected;
	uint64_t out_pkts_encrypted;
	uint64_t out_octets_protected;
	uint64_t out_octets_encrypted;
	struct fctl_macsec_sa_stats txsa[FCTL_MAX_AN];
	/* RX SCs: totals over all of them, then each (the first FCTL_NL_STATS_MAX_RXSC) */
	struct fctl_macsec_rxsc_stats rx_total; /* sci 0; sa[] summed per AN */
	struct fctl_macsec_rxsc_stats rxsc[FCTL_NL_STATS_MAX_RXSC];
	size_t n_rxsc;
	bool rxsc_truncated; /* the device has more RX SCs than rxsc[] holds */
};

int fctl_nl_read_macsec_stats(struct fctl_nl *nl, const char *ifname, struct fctl_macsec_stats *out);
/* The statistics of ifnames[0..n) from one MACsec dump: out[i] and found[i] = true for
 * each that is a SecY (out[i] zeroed and found[i] false for the others). 0, or negative
 * errno when the dump failed (out and found then say nothing). */
int fctl_nl_read_macsec_stats_many(struct fctl_nl *nl, const char *const *ifnames, size_t n,
				   struct fctl_macsec_stats *out, bool *found);

/*
 * Message builders, separated from sending so they can be tested in memory.
 * The caller frees *out with fctl_nl_msg_free (which wipes it).
 */

/* LINK_ADD (VLAN or MACsec), LINK_CHANGE, LINK_UP, LINK_DOWN, LINK_DEL.
 * ifindex: the link's own (CHANGE/UP/DOWN); parent_ifindex: for LINK_ADD.
 * FCTL_CHG_ADDRGEN puts IFLA_AF_SPEC / AF_INET6 / IFLA_INET6_ADDR_GEN_MODE. */
int fctl_nl_build_link_msg(const struct fctl_op *op, int ifindex, int parent_ifindex,
			   struct nl_msg **out);
/* RXSC_ADD/UPD/DEL on the generic netlink family id family. */
int fctl_nl_build_rxsc_msg(int family, const struct fctl_op *op, int ifindex, struct nl_msg **out);
/* TXSA_* and RXSA_*. cipher: the SecY's cipher suite (key length, PN width, XPN
 * attributes). Rejects AN > 3, PN 0 or a PN wider than the cipher allows on add,
 * a key of the wrong length, a missing KEYID, and a missing salt for XPN. UPD
 * sends AN and ACTIVE only: it never rewinds the PN of a live SA. */
int fctl_nl_build_sa_msg(int family, const struct fctl_op *op, enum fctl_cipher cipher,
			 int ifindex, const uint8_t *key, size_t key_len, struct nl_msg **out);
/* ADDR_ADD / ADDR_DEL: op->addr ("a.b.c.d/len" or "x::y/len") on ifindex. */
int fctl_nl_build_addr_msg(const struct fctl_op *op, int ifindex, struct nl_msg **out);
/* RTM_NEWNEIGH (create, never replace) of dst (4 or 16 bytes by family) at mac on
 * ifindex, in state STALE. */
int fctl_nl_build_neigh_msg(int family, const uint8_t *dst, const uint8_t mac[6], int ifindex,
			    struct nl_msg **out);
/* Wipes the whole message buffer, then frees it. Accepts NULL. */
void fctl_nl_msg_free(struct nl_msg *msg);

/* libnl's negative NLE_* code as a negative errno (the one translation point). */
int fctl_nl_errno(int nle);

#endif
