// SPDX-License-Identifier: MIT
/*
 * MACsec offload and the drivers that do it: a port's `driver:` and, at validate, the
 * limits of the drivers whose kernel code refuses a SecY fabricctl would create, so a
 * profile is refused with the reason instead of an apply failing in the kernel. The
 * kernel source lines behind each rule are cited in docs/profile.md ("driver").
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "profile_sections_int.h"

#define OERR(d, file, pos, code, hint, ...)                                                         \
	fctl_diag_add(d, FCTL_SEV_ERROR, file, (pos).line, (pos).col, code, hint, __VA_ARGS__)

/* netdevsim's NSIM_MACSEC_MAX_SECY_COUNT */
#define NSIM_MAX_SECY 3

void fctl_profile_driver_parse(const char *file, struct fctl_diags *d, const struct ynode *n,
			       struct fctl_port *pt)
{
	bool ok = n->type == YNODE_SCALAR && n->len > 0 && n->len < sizeof(pt->driver) &&
		  strlen(n->str) == n->len;

	for (size_t i = 0; ok && i < n->len; i++) {
		char ch = n->str[i];

		ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
	}
	if (!ok) {
		fctl_diag_add(d, FCTL_SEV_ERROR, file, n->line, n->col, "bad-value",
			      "the name `ethtool -i PORT` prints, e.g. mlx5_core, atlantic, netdevsim",
			      "'driver' is not a kernel driver name");
		return;
	}
	snprintf(pt->driver, sizeof(pt->driver), "%s", n->str);
	pt->pos_driver.line = n->line;
	pt->pos_driver.col = n->col;
}

static struct fctl_pos at(struct fctl_pos field, struct fctl_pos fallback)
{
	return field.line ? field : fallback;
}

/* mlx5e_macsec_secy_features_validate, macsec_set_replay_protection (mlx5 en_accel/macsec.c) */
static void check_mlx5(struct fctl_diags *d, const char *file, const struct fctl_macsec_policy *pol,
		       const char *where)
{
	static const char hint[] = "mlx5 offloads validate strict, icv_len 16, encrypt on, replay "
				   "windows 32, 64, 128 or 256 (docs/profile.md, \"driver\")";
	struct fctl_pos p = pol->pos_offload;

	if (pol->validate != FCTL_VALIDATE_STRICT)
		OERR(d, file, at(pol->pos_validate, p), "offload-driver", hint,
		     "policy '%s' is offloaded on %s (mlx5_core), which needs validate strict",
		     pol->name, where);
	if (pol->icv_len != 16)
		OERR(d, file, at(pol->pos_icv, p), "offload-driver", hint,
		     "policy '%s' is offloaded on %s (mlx5_core), which needs icv_len 16, not %u",
		     pol->name, where, pol->icv_len);
	if (!pol->encrypt)
		OERR(d, file, at(pol->pos_encrypt, p), "offload-driver", hint,
		     "policy '%s' is offloaded on %s (mlx5_core), which refuses encrypt false",
		     pol->name, where);
	if (pol->replay_protect && pol->replay_window != 32 && pol->replay_window != 64 &&
	    pol->replay_window != 128 && pol->replay_window != 256)
		OERR(d, file, at(pol->pos_window, p), "offload-driver", hint,
		     "policy '%s' is offloaded on %s (mlx5_core), whose replay window is 32, 64, "
		     "128 or 256, not %" PRIu32,
		     pol->name, where, pol->replay_window);
}

static void check_end(struct fctl_diags *d, const char *file, const struct fctl_macsec_policy *pol,
		      const struct fctl_host *h, const struct fctl_port *pt)
{
	char where[96];

	snprintf(where, sizeof(where), "%s:%s", h->name ? h->name : "?", pt->name ? pt->name : "?");
	if (strcmp(pt->driver, "mlx5_core") == 0)
		check_mlx5(d, file, pol, where);
	else if (strcmp(pt->driver, "atlantic") == 0 && fctl_cipher_is_xpn(pol->cipher))
		OERR(d, file, at(pol->pos_cipher, pol->pos_offload), "offload-driver",
		     "atlantic offloads gcm-aes-128 and gcm-aes-256 only (aq_mdo_add_secy)",
		     "policy '%s' is offloaded on %s (atlantic), which refuses XPN ciphers",
		     pol->name, where);
}

/* SecYs offloaded on one port: netdevsim holds at most NSIM_MAX_SECY */
static void check_counts(const struct fctl_profile *p, struct fctl_diags *d, const struct fctl_host *h,
			 const struct fctl_port *pt)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_links; i++) {
		const struct fctl_plink *l = &p->links[i];

		for (int e = 0; e < 2; e++) {
			if (l->end[e].host_idx < 0 || l->end[e].port_idx < 0 ||
			    &p->hosts[l->end[e].host_idx] != h ||
			    &h->ports[l->end[e].port_idx] != pt)
				continue;
			for (size_t j = 0; j < l->n_vlans; j++) {
				const struct fctl_macsec_policy *pol =
					l->vlans[j].macsec
						? fctl_profile_find_policy(p, l->vlans[j].macsec)
						: NULL;

				if (pol && pol->offload != FCTL_OFFLOAD_OFF && ++n == NSIM_MAX_SECY + 1)
					OERR(d, p->file, l->vlans[j].pos, "offload-limit",
					     "netdevsim offloads at most 3 SecYs per port "
					     "(NSIM_MACSEC_MAX_SECY_COUNT)",
					     "vlan %u is the 4th offloaded SecY on %s:%s (netdevsim)",
					     l->vlans[j].id, h->name ? h->name : "?",
					     pt->name ? pt->name : "?");
			}
		}
	}
}

void fctl_profile_offload_check(const struct fctl_profile *p, struct fctl_diags *d)
{
	for (size_t i = 0; i < p->n_links; i++) {
		const struct fctl_plink *l = &p->links[i];

		for (size_t j = 0; j < l->n_vlans; j++) {
			const struct fctl_macsec_policy *pol =
				l->vlans[j].macsec ? fctl_profile_find_policy(p, l->vlans[j].macsec)
						   : NULL;

			if (!pol || pol->offload == FCTL_OFFLOAD_OFF)
				continue;
			for (int e = 0; e < 2; e++) {
				const struct fctl_link_end *end = &l->end[e];

				if (end->host_idx < 0 || end->port_idx < 0)
					continue;
				check_end(d, p->file, pol, &p->hosts[end->host_idx],
					  &p->hosts[end->host_idx].ports[end->port_idx]);
			}
		}
	}
	for (size_t i = 0; i < p->n_hosts; i++)
		for (size_t j = 0; j < p->hosts[i].n_ports; j++)
			if (strcmp(p->hosts[i].ports[j].driver, "netdevsim") == 0)
				check_counts(p, d, &p->hosts[i], &p->hosts[i].ports[j]);
}
