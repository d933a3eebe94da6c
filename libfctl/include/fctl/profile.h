/* SPDX-License-Identifier: MIT */
/*
 * Profiles: the versioned YAML description of a fabric (see docs/profile.md).
 * Loading never stops at the first problem: every finding lands in a
 * struct fctl_diags with file:line:column, and the model is built from what
 * could be read, so validation can report semantic problems in the same run.
 */
#ifndef FCTL_PROFILE_H
#define FCTL_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/diag.h"
#include "fctl/state.h"

#define FCTL_SCHEMA_VERSION 1

struct fctl_pos {
	uint32_t line;
	uint32_t col;
};

/* One MKA connectivity association key: the CAK from a key backend and its name (the
 * CKN, hex as written; validation checks it). */
struct fctl_mka_ca {
	struct fctl_keyref cak;
	struct fctl_pos cak_pos;
	char *ckn; /* hex digits, 2..64 of them (1..32 bytes) */
	struct fctl_pos ckn_pos;
};

#define FCTL_MKA_PRIORITY_DEFAULT 16

/* A policy's 'mka' block (docs/mka.md): the SAKs are MKA's, distributed by the key server
 * that wpa_supplicant elects; fabricctl supplies the CAK and supervises wpa_supplicant. */
struct fctl_mka {
	struct fctl_pos pos;
	struct fctl_mka_ca primary;
	struct fctl_mka_ca fallback;
	bool has_fallback;
	struct fctl_pos pos_fallback;
	uint8_t priority;
	struct fctl_pos pos_priority;
};

struct fctl_macsec_policy {
	char *name;
	struct fctl_pos pos;
	enum fctl_cipher cipher;
	uint8_t icv_len;
	bool encrypt;
	bool replay_protect;
	uint32_t replay_window;
	enum fctl_validate validate;
	bool send_sci;
	bool end_station;
	bool scb;
	enum fctl_offload offload;
	uint16_t port;
	struct fctl_keyref key; /* static SAKs: exactly one of 'key' and 'mka' */
	struct fctl_pos key_pos;
	bool has_key;
	bool has_mka;
	struct fctl_mka mka;
	uint64_t cryptoperiod_s;
	uint64_t overlap_s;
	uint64_t pn_rekey_threshold;
	bool has_pn_rekey_threshold;
	/* MUST_SECURE (default true): weak settings (encrypt false, replay protection off,
	 * validate not strict) are errors; an explicit 'must_secure: false' makes them warnings */
	bool must_secure;
	/* positions of fields for semantic findings */
	struct fctl_pos pos_icv, pos_window, pos_send_sci, pos_cipher, pos_overlap, pos_pn_thr;
	struct fctl_pos pos_encrypt, pos_replay, pos_validate, pos_must_secure;
	struct fctl_pos pos_offload, pos_es, pos_scb;
	struct fctl_pos pos_body; /* the policy's mapping */
};

struct fctl_port {
	char *name;
	struct fctl_pos pos;
	uint8_t mac[6];
	bool has_mac;
	uint32_t mtu;
	struct fctl_pos pos_mtu;
	uint64_t speed_mbps; /* the port's line rate ('speed: 400G'), 0 when not given */
	struct fctl_pos pos_speed;
	/* the port's kernel driver ('driver: mlx5_core'), "" when not given: its MACsec
	 * offload limits are checked at validate */
	char driver[FCTL_IFNAMSIZ];
	struct fctl_pos pos_driver;
};

struct fctl_host {
	char *name;
	struct fctl_pos pos;
	char *agent;
	struct fctl_port *ports;
	size_t n_ports;
	size_t cap_ports;
};

struct fctl_link_end {
	char *host;
	char *port;
	struct fctl_pos pos;
	uint8_t peer_mac[6]; /* optional cross-check of the far end's MAC */
	bool has_peer_mac;
	struct fctl_pos pos_peer_mac;
	/* resolved by validation; -1 when unresolved */
	long host_idx;
	long port_idx;
};

struct fctl_addr_entry {
	char *host;
	char *cidr;
	struct fctl_pos pos;
};

struct fctl_vlan {
	uint16_t id;
	struct fctl_pos pos;
	enum fctl_vlan_proto proto;
	uint32_t mtu; /* MTU of the interface that carries IP: the MACsec device when protected */
	bool has_mtu;
	struct fctl_pos pos_mtu;
	char *macsec; /* policy name, NULL = cleartext VLAN */
	struct fctl_pos pos_macsec;
	char *vlan_ifname;   /* optional override of "<port>.<id>" per host: same on both ends */
	char *macsec_ifname; /* optional override of "ms<id>" */
	struct fctl_pos pos_ifname;
	/* `qos:` the VLAN device's priority maps, the RoCE shorthand merged in (empty: none,
	 * which is also what a VLAN without the section wants) */
	struct fctl_vlan_qos qos;
	bool qos_roce;
	struct fctl_pos pos_qos;
	struct fctl_addr_entry *addrs;
	size_t n_addrs;
	size_t cap_addrs;
};

struct fctl_plink {
	char *name;
	struct fctl_pos pos;
	struct fctl_link_end end[2];
	char *macsec; /* default policy for the link's VLANs */
	struct fctl_pos pos_macsec;
	struct fctl_vlan *vlans;
	size_t n_vlans;
	size_t cap_vlans;
};

struct fctl_slo {
	bool present;
	struct fctl_pos pos;
	double latency_p99_us;
	bool has_latency_p99;
	double latency_p999_us;
	bool has_latency_p999;
	double bandwidth_gbps;
	bool has_bandwidth;
	uint64_t max_loss;
	uint64_t max_retransmissions;
	bool has_max_retransmissions;
};

struct fctl_profile {
	char *file;
	char *dir; /* directory of the file: relative key paths resolve against it */
	uint32_t schema;
	char *name;
	uint64_t version;
	char *description;
	struct fctl_host *hosts;
	size_t n_hosts;
	size_t cap_hosts;
	struct fctl_plink *links;
	size_t n_links;
	size_t cap_links;
	struct fctl_macsec_policy *policies;
	size_t n_policies;
	size_t cap_policies;
	struct fctl_slo slo;
	unsigned char sha256[32]; /* of the file's bytes */
};

/* Reads and parses file; findings go to d. Returns 0 with *out set when the file could
 * be read and parsed into a model (which may still carry findings: check d->n_errors),
 * or a negative errno when it could not be read or parsed at all (*out = NULL).
 * file "-" is standard input; a pipe (`<(...)`, /dev/fd/N) or a FIFO is read to its end
 * (at most 64 MiB): relative key ids of such a stream resolve from the current directory. */
int fctl_profile_load(const char *file, struct fctl_diags *d, struct fctl_profile **out);
/* The same, from memory; name is used in findings. */
int fctl_profile_parse(const char *name, const unsigned char *data, size_t len,
		       struct fctl_diags *d, struct fctl_profile **out);
void fctl_profile_free(struct fctl_profile *p);

/* Frees what a struct fctl_mka_ca holds (not the struct); NULL is accepted. */
void fctl_mka_ca_release(struct fctl_mka_ca *ca);

/* Lookups in the profile model (profile.c): NULL when there is no such name. */
const struct fctl_host *fctl_profile_find_host(const struct fctl_profile *p, const char *name);
const struct fctl_macsec_policy *fctl_profile_find_policy(const struct fctl_profile *p,
							  const char *name);
/* Interface names a VLAN gets on one end (names may be too long: validation says so). */
void fctl_vlan_ifnames(const struct fctl_vlan *v, const char *port, char vlan_if[FCTL_IFNAMSIZ + 8],
		       char macsec_if[FCTL_IFNAMSIZ + 8]);

/* Semantic checks (kernel rules, references, uniqueness, MTU). Adds findings to d. */
void fctl_profile_validate(struct fctl_profile *p, struct fctl_diags *d);

/* The desired state of one host. The profile must have validated without errors. */
int fctl_profile_render_host(const struct fctl_profile *p, const char *host,
			     struct fctl_host_state **out);

/* Writes a host state as a profile (YAML) that validates and would reproduce it:
 * the `fabricctl show` format. Peers are named after the MAC in their SCI. */
int fctl_state_to_profile(const struct fctl_host_state *hs, struct fctl_buf *out);


#endif
