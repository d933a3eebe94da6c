/* SPDX-License-Identifier: MIT */
/*
 * The MKA ports of one host of a profile (docs/mka.md): a VLAN whose policy has an
 * 'mka' block gets its VLAN device from the apply engine (address generation none: it
 * carries only MACsec frames) and a supervised wpa_supplicant from here, which creates
 * the SecY (macsecN) on it. The SecY and its SAs are MKA's: the engine never names
 * them, so plan, diff and drift leave them alone; the end's addresses go on that SecY.
 * What MKA changes in the kernel (the end's addresses, a SecY left behind, neighbour
 * entries) it writes through the engine's kernel session (fctl/engine_kernel.h), never
 * through fctl_nl itself; it reads through that session's netlink.
 */
#ifndef FCTL_MKA_HOST_H
#define FCTL_MKA_HOST_H

#include "fctl/engine_kernel.h"
#include "fctl/keysrc.h"
#include "fctl/mka.h"
#include "fctl/nl.h"
#include "fctl/plan.h"
#include "fctl/profile.h"

struct fctl_mka_port {
	const struct fctl_profile *profile;
	const char *host;
	const struct fctl_vlan *vlan;
	const struct fctl_macsec_policy *pol;
	char ifname[FCTL_IFNAMSIZ + 8]; /* the VLAN device */
};

struct fctl_mka_host_opts {
	struct fctl_engine_kernel *kern;    /* borrowed: fctl_engine_nl_ops' (reads its netlink) */
	const struct fctl_key_source *keys; /* where the CAK comes from (NULL: file keys only) */
	const char *wpa_supplicant;	     /* NULL = the default */
	const char *only_port;		     /* non-NULL: this VLAN device only (the agent's restart) */
};

/* Calls fn for every MKA VLAN end of host of a validated profile, in profile order;
 * stops at and returns fn's first negative result. */
int fctl_mka_host_each(const struct fctl_profile *p, const char *host,
		       int (*fn)(const struct fctl_mka_port *port, void *arg), void *arg);

/* Starts (or reconfigures) wpa_supplicant on every MKA port of host and puts the end's
 * addresses on the SecY it creates. Run after the engine created the VLAN devices.
 * A port whose running CA is secured and differs from the profile's in its CAK or CKN
 * only gets an incoming CA beside it instead (a make-before-break rotation,
 * fctl/mka_rotate.h);
 * any other change reconfigures the running CA and gives up a rotation under way.
 * *n_ports (may be NULL): how many ports were configured; *n_rotating (may be NULL):
 * how many of them have an incoming CA. */
int fctl_mka_host_up(const struct fctl_profile *p, const char *host,
		     const struct fctl_mka_host_opts *o, unsigned *n_ports, unsigned *n_rotating,
		     char *err, size_t errlen);

/* Stops every wpa_supplicant fabricctl runs (FCTL_MKA_RUN_DIR) for a port that is no
 * MKA port of host in p any more, and wipes its run directory. */
int fctl_mka_host_prune(const struct fctl_profile *p, const char *host, unsigned *n_stopped,
			char *err, size_t errlen);

/* The SecY a wpa_supplicant created on vlan_if, the one on SCI port sci_port (0: the
 * first): *state holds it (the caller frees), *secy points into it. -ENODEV when there
 * is none. */
int fctl_mka_find_secy(struct fctl_nl *nl, const char *host, const char *vlan_if,
		       uint16_t sci_port, struct fctl_host_state **state,
		       const struct fctl_link **secy);
/* Deletes the SecY on vlan_if's SCI port sci_port (0: the first) that a wpa_supplicant
 * left behind (one killed with SIGKILL does), through kern (borrowed, fctl_engine_nl_ops'):
 * 0, also when there is none, or a negative errno with err saying why (the kernel's
 * extended ACK when it gave one). */
int fctl_mka_drop_secy(struct fctl_engine_kernel *kern, const char *host, const char *vlan_if,
		       uint16_t sci_port, char *err, size_t errlen);

#endif
