// SPDX-License-Identifier: MIT
/* Profile -> desired host state. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/profile.h"

/* base: the profile's directory, made absolute once per render (relative file ids) */
static int copy_keyref(struct fctl_keyref *dst, const struct fctl_keyref *src, const char *base)
{
	dst->backend = fctl_strdup(src->backend);
	dst->id = fctl_strdup(src->id);
	dst->version = src->version;
	dst->base = fctl_strdup(base);
	return (src->backend && !dst->backend) || (src->id && !dst->id) ||
			       (base && !dst->base) ? -ENOMEM : 0;
}

static void end_mac(const struct fctl_profile *p, const struct fctl_link_end *e, uint8_t mac[6])
{
	const struct fctl_port *pt = &p->hosts[e->host_idx].ports[e->port_idx];

	memcpy(mac, pt->has_mac ? pt->mac : e->peer_mac, 6);
}

static int render_vlan(const struct fctl_profile *p, const char *base, const struct fctl_plink *l,
		       int me, const struct fctl_vlan *v, struct fctl_host_state *hs)
{
	const struct fctl_link_end *mine = &l->end[me], *peer = &l->end[!me];
	const struct fctl_port *pt = &p->hosts[mine->host_idx].ports[mine->port_idx];
	const struct fctl_macsec_policy *pol = fctl_profile_find_policy(p, v->macsec);
	char vif[FCTL_IFNAMSIZ + 8], mif[FCTL_IFNAMSIZ + 8];
	uint32_t overhead = pol ? fctl_macsec_overhead(pol->icv_len) : 0;
	uint32_t top_mtu = v->has_mtu ? v->mtu : pt->mtu - overhead;
	struct fctl_link *vl, *ml, *top;
	int r;

	fctl_vlan_ifnames(v, pt->name, vif, mif);
	vl = fctl_host_state_add_link(hs, FCTL_LINK_VLAN, vif);
	if (!vl)
		return -ENOMEM;
	snprintf(vl->parent, sizeof(vl->parent), "%s", pt->name);
	vl->vid = v->id;
	vl->proto = v->proto;
	vl->qos = v->qos;
	vl->mtu = top_mtu + overhead;
	vl->has_mtu = true;
	vl->up = true;
	top = vl;
	if (pol && pol->has_mka) {
		/* MKA (docs/mka.md): wpa_supplicant creates the SecY on this VLAN device and MKA
		 * owns its SAs; the state names neither, so plans never touch them. The carrier
		 * holds no address; the end's addresses go on the SecY (fctl_mka_host_up). */
		vl->addrgen = FCTL_ADDRGEN_NONE;
		vl->has_addrgen = true;
		return 0;
	}
	if (pol) {
		struct fctl_macsec *m;
		struct fctl_rxsc *sc;
		uint8_t mac[6], peer_mac[6], keyid[FCTL_KEYID_LEN], salt[FCTL_SALT_LEN];
		uint64_t peer_sci;
		bool xpn = fctl_cipher_is_xpn(pol->cipher);

		/* the carrier: its frames are cleartext, so it holds no address of any scope
		 * (no link-local either: neighbour discovery and MLD would leave in clear) */
		vl->addrgen = FCTL_ADDRGEN_NONE;
		vl->has_addrgen = true;
		ml = fctl_host_state_add_link(hs, FCTL_LINK_MACSEC, mif);
		if (!ml)
			return -ENOMEM;
		vl = &hs->links[hs->n_links - 2]; /* the array may have moved */
		snprintf(ml->parent, sizeof(ml->parent), "%s", vl->name);
		ml->mtu = top_mtu;
		ml->has_mtu = true;
		ml->up = true;
		m = &ml->macsec;
		end_mac(p, mine, mac);
		end_mac(p, peer, peer_mac);
		m->sci = fctl_sci_make(mac, pol->port);
		m->port = pol->port;
		m->has_port = true;
		m->cipher = pol->cipher;
		m->icv_len = pol->icv_len;
		m->encrypt = pol->encrypt;
		m->protect = true; /* fail-secure: never a SecY that sends cleartext */
		m->replay_protect = pol->replay_protect;
		m->window = pol->replay_protect ? pol->replay_window : 0;
		m->validate = pol->validate;
		m->send_sci = pol->send_sci;
		m->end_station = pol->end_station;
		m->scb = pol->scb;
		m->offload = pol->offload;
		m->encoding_sa = 0;
		r = copy_keyref(&m->key, &pol->key, base);
		if (r < 0)
			return r;
		fctl_keyid_from_ref(&pol->key, keyid);
		fctl_salt_from_ref(&pol->key, salt);
		/* peers use the same policy port; the SCI of the peer is its MAC + that port */
		peer_sci = fctl_sci_make(peer_mac, pol->port);

		m->txsa[0].present = true;
		m->txsa[0].active = true;
		m->txsa[0].pn = 1;
		memcpy(m->txsa[0].keyid, keyid, sizeof(keyid));
		m->txsa[0].has_keyid = true;
		sc = fctl_macsec_add_rxsc(m, peer_sci);
		if (!sc)
			return -ENOMEM;
		sc->active = true;
		sc->sa[0] = m->txsa[0];
		if (xpn) {
			/* SSCI by SCI order within the pair: 1 for the lower, 2 for the higher */
			m->txsa[0].ssci = m->sci < peer_sci ? 1 : 2;
			sc->sa[0].ssci = m->sci < peer_sci ? 2 : 1;
			memcpy(m->txsa[0].salt, salt, sizeof(salt));
			memcpy(sc->sa[0].salt, salt, sizeof(salt));
			m->txsa[0].has_salt = sc->sa[0].has_salt = true;
		}
		top = ml;
	}
	for (size_t i = 0; i < v->n_addrs; i++) {
		if (v->addrs[i].host && v->addrs[i].cidr &&
		    strcmp(v->addrs[i].host, p->hosts[mine->host_idx].name) == 0) {
			r = fctl_link_add_addr(top, v->addrs[i].cidr);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int fctl_profile_render_host(const struct fctl_profile *p, const char *host,
			     struct fctl_host_state **out)
{
	const struct fctl_host *h = fctl_profile_find_host(p, host);
	struct fctl_host_state *hs;
	char *abs;
	int r = 0;

	if (!h)
		return -ENOENT;
	hs = fctl_host_state_new(host);
	if (!hs)
		return -ENOMEM;
	abs = p->dir ? realpath(p->dir, NULL) : NULL; /* once, not once per SecY */
	for (size_t i = 0; i < p->n_links && r == 0; i++) {
		const struct fctl_plink *l = &p->links[i];

		for (int e = 0; e < 2 && r == 0; e++) {
			if (l->end[e].host_idx != h - p->hosts)
				continue;
			if (l->end[e].port_idx < 0 || l->end[!e].port_idx < 0) {
				r = -EINVAL; /* unvalidated profile */
				break;
			}
			for (size_t j = 0; j < l->n_vlans && r == 0; j++)
				r = render_vlan(p, abs ? abs : p->dir, l, e, &l->vlans[j], hs);
		}
	}
	free(abs);
	if (r < 0) {
		fctl_host_state_free(hs);
		return r;
	}
	fctl_host_state_sort(hs);
	*out = hs;
	return 0;
}
