/* SPDX-License-Identifier: MIT */
/*
 * Host state: the VLAN and MACsec objects of one host, as a profile wants them
 * (desired, rendered from a profile) or as the kernel has them (live, read over
 * netlink). Plans are computed between two host states, so the offline plan
 * (old profile -> new profile) and the live plan (kernel -> profile) share one
 * representation.
 *
 * Key bytes never live here: SAs carry the 16-byte KEYID and, in desired state,
 * the key reference the bytes are fetched from at apply time.
 */
#ifndef FCTL_STATE_H
#define FCTL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/util.h"

#define FCTL_IFNAMSIZ 16 /* IFNAMSIZ, including the NUL */
#define FCTL_KEYID_LEN 16
#define FCTL_SALT_LEN 12
#define FCTL_MAX_AN 4

enum fctl_cipher {
	FCTL_CIPHER_GCM_AES_128,
	FCTL_CIPHER_GCM_AES_256,
	FCTL_CIPHER_GCM_AES_XPN_128,
	FCTL_CIPHER_GCM_AES_XPN_256,
};

enum fctl_validate {
	FCTL_VALIDATE_DISABLED,
	FCTL_VALIDATE_CHECK,
	FCTL_VALIDATE_STRICT,
};

enum fctl_offload {
	FCTL_OFFLOAD_OFF,
	FCTL_OFFLOAD_PHY,
	FCTL_OFFLOAD_MAC,
};

enum fctl_vlan_proto {
	FCTL_VLAN_8021Q,
	FCTL_VLAN_8021AD,
};

/* IPv6 address generation of a link: the kernel's IN6_ADDR_GEN_MODE_* (same values).
 * NONE: the kernel makes no address on the link, link-local included. */
enum fctl_addrgen {
	FCTL_ADDRGEN_EUI64 = 0,
	FCTL_ADDRGEN_NONE = 1,
	FCTL_ADDRGEN_STABLE_PRIVACY = 2,
	FCTL_ADDRGEN_RANDOM = 3,
};

const char *fctl_cipher_name(enum fctl_cipher c);
int fctl_cipher_from_name(const char *s, enum fctl_cipher *out);
size_t fctl_cipher_key_len(enum fctl_cipher c); /* 16 or 32 */
bool fctl_cipher_is_xpn(enum fctl_cipher c);
uint64_t fctl_cipher_kernel_id(enum fctl_cipher c); /* MACSEC_CIPHER_ID_* */
int fctl_cipher_from_kernel_id(uint64_t id, enum fctl_cipher *out); /* accepts legacy default id */
const char *fctl_validate_name(enum fctl_validate v);
int fctl_validate_from_name(const char *s, enum fctl_validate *out);
const char *fctl_offload_name(enum fctl_offload o);
int fctl_offload_from_name(const char *s, enum fctl_offload *out);
const char *fctl_vlan_proto_name(enum fctl_vlan_proto p);
int fctl_vlan_proto_from_name(const char *s, enum fctl_vlan_proto *out);
/* "eui64", "none", "stable_secret", "random": the names iproute2 prints */
const char *fctl_addrgen_name(enum fctl_addrgen g);
int fctl_addrgen_from_name(const char *s, enum fctl_addrgen *out);

/* Where a key comes from. version 0 means "the backend's current version". */
struct fctl_keyref {
	char *backend;
	char *id;
	uint32_t version;
	char *base; /* file backend: directory relative ids resolve against (not part of KEYID) */
};

/* One secure association (TX or RX). */
struct fctl_sa {
	bool present;
	bool active;
	uint64_t pn; /* desired: initial PN; live: next PN as the kernel reports */
	uint8_t keyid[FCTL_KEYID_LEN];
	bool has_keyid;
	/* XPN only */
	uint32_t ssci;
	uint8_t salt[FCTL_SALT_LEN];
	bool has_salt;
};

struct fctl_rxsc {
	uint64_t sci; /* host byte order: MAC in the top 48 bits, port in the low 16 */
	bool active;
	struct fctl_sa sa[FCTL_MAX_AN];
};

struct fctl_macsec {
	uint64_t sci;
	uint16_t port;
	bool has_port; /* the kernel never reports PORT: live state derives it from the SCI */
	enum fctl_cipher cipher;
	uint8_t icv_len;
	bool encrypt;
	bool protect;
	bool replay_protect;
	uint32_t window;
	enum fctl_validate validate;
	bool send_sci;
	bool end_station;
	bool scb;
	enum fctl_offload offload;
	uint8_t encoding_sa;
	struct fctl_sa txsa[FCTL_MAX_AN];
	struct fctl_rxsc *rxsc;
	size_t n_rxsc;
	size_t cap_rxsc;
	/* desired state only: where the SAK comes from (shared by TX and RX SAs) */
	struct fctl_keyref key;
};

/* A VLAN's 802.1Q priority maps (the kernel's egress-qos-map and ingress-qos-map,
 * IFLA_VLAN_EGRESS_QOS / IFLA_VLAN_INGRESS_QOS). egress: skb priority -> PCP, sorted by
 * skb priority, PCPs 1..7 only: the kernel neither keeps nor reports a mapping to PCP 0
 * (its default), so a state never holds one (a LINK_CHANGE op does: to remove a mapping
 * it sends it with PCP 0). ingress: PCP -> skb priority; 0 is "not mapped" (the kernel's
 * default, not reported either). */
#define FCTL_VLAN_QOS_MAX 64 /* egress mappings a state holds; a profile gives at most 16 */
#define FCTL_VLAN_PCPS 8

struct fctl_vlan_qos_map {
	uint32_t prio; /* skb priority (SO_PRIORITY) */
	uint8_t pcp;   /* 0..7 */
};

struct fctl_vlan_qos {
	struct fctl_vlan_qos_map egress[FCTL_VLAN_QOS_MAX];
	uint8_t n_egress;
	uint32_t ingress[FCTL_VLAN_PCPS]; /* by PCP */
};

/* Sorts a map's egress entries by skb priority; a later entry of the same priority wins. */
void fctl_vlan_qos_normalize(struct fctl_vlan_qos *q);
bool fctl_vlan_qos_equal(const struct fctl_vlan_qos *a, const struct fctl_vlan_qos *b);
bool fctl_vlan_qos_empty(const struct fctl_vlan_qos *q);
/* The PCP the egress map gives skb priority prio (0 when it has no mapping). */
uint8_t fctl_vlan_qos_pcp(const struct fctl_vlan_qos *q, uint32_t prio);
/* "egress 3:3 5:5, ingress 3:3" style text ("none" when empty); for diffs and plans. */
void fctl_vlan_qos_format(const struct fctl_vlan_qos *q, struct fctl_buf *out);
/* The state file's tokens: " egress=P:C,P:C ingress=C:P" (each only when not empty). */
void fctl_vlan_qos_put_tokens(const struct fctl_vlan_qos *q, struct fctl_buf *out);
/* Parses one token's value ("3:3,5:5") into q's egress (egress) or ingress map, adding to
 * what q holds; 0 or -EINVAL. */
/* Appends ,"qos":{"egress":[{"priority":P,"pcp":C}..],"ingress":[{"pcp":C,"priority":P}..]} */
void fctl_vlan_qos_to_json(const struct fctl_vlan_qos *q, struct fctl_buf *out);
int fctl_vlan_qos_parse_list(const char *s, bool egress, struct fctl_vlan_qos *q);

enum fctl_link_kind {
	FCTL_LINK_VLAN,
	FCTL_LINK_MACSEC,
};

struct fctl_link {
	enum fctl_link_kind kind;
	char name[FCTL_IFNAMSIZ];
	char parent[FCTL_IFNAMSIZ];
	int ifindex; /* live only */
	uint32_t mtu;
	bool has_mtu;
	bool up;
	/* IPv6 address generation. Desired: set, to NONE, only on the carrier of a SecY (the
	 * VLAN under a MACsec link), which must hold no address of any scope: its frames are
	 * cleartext. Live: the mode the kernel reports; not set when the link has no IPv6
	 * (then nothing generates an address on it either). */
	enum fctl_addrgen addrgen;
	bool has_addrgen;
	/* VLAN */
	uint16_t vid;
	enum fctl_vlan_proto proto;
	struct fctl_vlan_qos qos;
	/* MACsec */
	struct fctl_macsec macsec;
	/* addresses ("10.0.0.1/24", "fd00::1/64"), sorted */
	char **addrs;
	size_t n_addrs;
	size_t cap_addrs;
};

struct fctl_host_state {
	char *host;
	struct fctl_link *links;
	size_t n_links;
	size_t cap_links;
	/* set by fctl_host_state_sort, cleared by fctl_host_state_add_link: links are
	 * in canonical order, so fctl_host_state_find can search by halves. Code that
	 * renames or reorders links itself must clear it. */
	bool sorted;
};

struct fctl_host_state *fctl_host_state_new(const char *host);
void fctl_host_state_free(struct fctl_host_state *hs);
/* Appends a zeroed link named name; returns it or NULL on ENOMEM. */
struct fctl_link *fctl_host_state_add_link(struct fctl_host_state *hs, enum fctl_link_kind kind,
					   const char *name);
/* The first link named name (VLANs before MACsec links), or NULL. O(log n) on a
 * sorted state, a scan otherwise. */
struct fctl_link *fctl_host_state_find(const struct fctl_host_state *hs, const char *name);
struct fctl_rxsc *fctl_macsec_add_rxsc(struct fctl_macsec *m, uint64_t sci);
struct fctl_rxsc *fctl_macsec_find_rxsc(const struct fctl_macsec *m, uint64_t sci);
int fctl_link_add_addr(struct fctl_link *l, const char *cidr);
/* Sorts links (VLANs before MACsec, then by name), RX SCs and addresses: canonical order. */
void fctl_host_state_sort(struct fctl_host_state *hs);
void fctl_link_release(struct fctl_link *l);

/* SCI helpers: sci = mac(6 bytes, big endian) << 16 | port */
uint64_t fctl_sci_make(const uint8_t mac[6], uint16_t port);
void fctl_sci_format(uint64_t sci, char out[24]); /* "52:54:00:fa:01:00/1" */
int fctl_sci_parse(const char *s, uint64_t *sci);  /* same format, or 16 hex digits */

/* KEYID of a key reference: SHA-256("fabricctl-keyid\0" backend "\0" id "\0" version)[0..15].
 * Deterministic and key-free, so an offline plan can compare SAs without the key. */
void fctl_keyid_from_ref(const struct fctl_keyref *ref, uint8_t keyid[FCTL_KEYID_LEN]);

/* XPN salt of a key reference: SHA-256(KEYID)[0..11]. Not secret (802.1AEbw); derived
 * so both ends agree without exchanging it. Render, rotation and keymgr all use this. */
void fctl_salt_from_ref(const struct fctl_keyref *ref, uint8_t salt[FCTL_SALT_LEN]);
void fctl_salt_from_keyid(const uint8_t keyid[FCTL_KEYID_LEN], uint8_t salt[FCTL_SALT_LEN]);

/* MACsec overhead on the wire, for MTU checks: SecTAG with SCI + ICV. */
uint32_t fctl_macsec_overhead(uint8_t icv_len);

/* JSON rendering of a host state (the format `fabricctl show --json` prints). */
int fctl_host_state_to_json(const struct fctl_host_state *hs, struct fctl_buf *out);

/* A line-based text form of a host state that round-trips exactly (key references
 * included, keys never): the apply journal keeps the prior state in it. */
int fctl_host_state_save(const struct fctl_host_state *hs, struct fctl_buf *out);
/* Parses lines until "state-end" or the end of text; *consumed = bytes read. */
int fctl_host_state_load(const char *text, size_t *consumed, struct fctl_host_state **out);

/* Where a host's state lives (apply journal, history, lock, rotation records). */
#define FCTL_STATE_DIR "/var/lib/fabricctl"
/* The state directory of one host or netns: state_dir when given, else FCTL_STATE_DIR,
 * with "/netns/NAME" for a netns. The apply engine and the rotation records share it. */
void fctl_state_dir_path(const char *state_dir, const char *netns, char *out, size_t len);

#endif
