// SPDX-License-Identifier: MIT
/* Host state -> profile YAML (`fabricctl show`), like `wg showconf`. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/profile.h"

static void mac_of_sci(uint64_t sci, char out[18])
{
	uint8_t mac[6];

	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)(sci >> (56 - 8 * i));
	fctl_format_mac(mac, out);
}

static void peer_name(uint64_t sci, char out[40])
{
	char mac[18];

	mac_of_sci(sci, mac);
	for (char *p = mac; *p; p++)
		if (*p == ':')
			*p = '-';
	snprintf(out, 40, "peer-%s", mac);
}

static const struct fctl_link *upper_of(const struct fctl_host_state *hs, const char *name)
{
	for (size_t i = 0; i < hs->n_links; i++)
		if (hs->links[i].kind == FCTL_LINK_MACSEC && strcmp(hs->links[i].parent, name) == 0)
			return &hs->links[i];
	return NULL;
}

/* The first VLAN on its parent port stands for the port (one port, one link). */
static bool first_on_parent(const struct fctl_host_state *hs, size_t i)
{
	const struct fctl_link *v = &hs->links[i];

	if (v->kind != FCTL_LINK_VLAN)
		return false;
	for (size_t j = 0; j < i; j++)
		if (hs->links[j].kind == FCTL_LINK_VLAN && strcmp(hs->links[j].parent, v->parent) == 0)
			return false;
	return true;
}

static void policy(struct fctl_buf *o, const struct fctl_link *m)
{
	const struct fctl_macsec *s = &m->macsec;

	fctl_buf_printf(o, "  live-%s:\n", m->name);
	if (!s->encrypt || !s->replay_protect || s->validate != FCTL_VALIDATE_STRICT)
		fctl_buf_puts(o, "    # the live SecY has weak settings: written as they are, so this\n"
				 "    # policy opts out of must_secure and they validate as warnings\n"
				 "    must_secure: false\n");
	fctl_buf_printf(o, "    cipher: %s\n    icv_len: %u\n    encrypt: %s\n",
			fctl_cipher_name(s->cipher), s->icv_len, s->encrypt ? "true" : "false");
	fctl_buf_printf(o, "    replay_protect: %s\n", s->replay_protect ? "true" : "false");
	if (s->replay_protect)
		fctl_buf_printf(o, "    replay_window: %" PRIu32 "\n", s->window);
	fctl_buf_printf(o, "    validate: %s\n    send_sci: %s\n    end_station: %s\n    scb: %s\n",
			fctl_validate_name(s->validate), s->send_sci ? "true" : "false",
			s->end_station ? "true" : "false", s->scb ? "true" : "false");
	/* "none", not "off": YAML 1.1 readers take "off" for the boolean false */
	fctl_buf_printf(o, "    offload: %s\n    port: %u\n",
			s->offload == FCTL_OFFLOAD_OFF ? "none" : fctl_offload_name(s->offload),
			s->port ? s->port : 1);
	if (s->key.backend && s->key.id) {
		/* a file key id stays relative (an absolute one would not validate): the
		 * comment says where the applied profile's key file was */
		if (s->key.id[0] != '/' && s->key.base) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", s->key.base, s->key.id);
			fctl_buf_puts(o, "    # key file when applied: ");
			fctl_buf_json_str(o, path);
			fctl_buf_puts(o, "; ids resolve against this file's directory\n");
		}
		fctl_buf_printf(o, "    key: { backend: %s, id: ", s->key.backend);
		fctl_buf_json_str(o, s->key.id);
		if (s->key.version)
			fctl_buf_printf(o, ", version: %" PRIu32, s->key.version);
		fctl_buf_puts(o, " }\n");
	} else {
		const struct fctl_sa *sa = NULL;

		for (unsigned an = 0; an < FCTL_MAX_AN && !sa; an++)
			if (s->txsa[an].present)
				sa = &s->txsa[an];
		fctl_buf_puts(o, "    # the key reference is unknown: the SAs were not installed by a\n"
				 "    # profile this host applied");
		if (sa && sa->has_keyid) {
			fctl_buf_puts(o, " (tx key id ");
			fctl_buf_put_hex(o, sa->keyid, FCTL_KEYID_LEN);
			fctl_buf_putc(o, ')');
		}
		fctl_buf_puts(o, "\n    key: { backend: file, id: UNKNOWN }\n");
	}
}

/* A VLAN device's priority maps, as the profile's `qos:` section. */
static void show_qos(struct fctl_buf *o, const struct fctl_vlan_qos *q)
{
	bool any = false;

	if (fctl_vlan_qos_empty(q))
		return;
	fctl_buf_puts(o, "        qos:\n");
	for (size_t i = 0; i < q->n_egress; i++)
		fctl_buf_printf(o, "%s%" PRIu32 ": %u", i ? ", " : "          egress: { ",
				q->egress[i].prio, q->egress[i].pcp);
	if (q->n_egress)
		fctl_buf_puts(o, " }\n");
	for (unsigned p = 0; p < FCTL_VLAN_PCPS; p++) {
		if (!q->ingress[p])
			continue;
		fctl_buf_printf(o, "%s%u: %" PRIu32, any ? ", " : "          ingress: { ", p,
				q->ingress[p]);
		any = true;
	}
	if (any)
		fctl_buf_puts(o, " }\n");
}

int fctl_state_to_profile(const struct fctl_host_state *hs, struct fctl_buf *o)
{
	const char *host = hs->host && *hs->host ? hs->host : "localhost";
	bool any_macsec = false, any_port = false;

	fctl_buf_printf(o, "# live state of host %s, read from the kernel by fabricctl %s\n", host,
			FCTL_VERSION);
	fctl_buf_printf(o, "schema: %d\nprofile:\n  name: live-%s\n  version: 1\n",
			FCTL_SCHEMA_VERSION, host);
	for (size_t i = 0; i < hs->n_links; i++) {
		any_macsec |= hs->links[i].kind == FCTL_LINK_MACSEC;
		any_port |= first_on_parent(hs, i);
	}
	if (any_macsec) {
		fctl_buf_puts(o, "macsec:\n");
		for (size_t i = 0; i < hs->n_links; i++)
			if (hs->links[i].kind == FCTL_LINK_MACSEC)
				policy(o, &hs->links[i]);
	}
	/* this host: one port per VLAN parent; peers: one host per RX SC MAC */
	/* no managed link: empty lists, written as such (a bare key is a null scalar) */
	fctl_buf_printf(o, "hosts:\n  - name: %s\n    ports:%s\n", host, any_port ? "" : " []");
	for (size_t i = 0; i < hs->n_links; i++) {
		const struct fctl_link *v = &hs->links[i], *m;
		char mac[18];

		if (!first_on_parent(hs, i))
			continue;
		m = upper_of(hs, v->name);
		fctl_buf_printf(o, "      - { name: %s", v->parent);
		if (m) {
			mac_of_sci(m->macsec.sci, mac);
			fctl_buf_printf(o, ", mac: \"%s\"", mac);
		}
		fctl_buf_printf(o, ", mtu: %" PRIu32 " }\n",
				v->has_mtu ? v->mtu : 1500);
	}
	for (size_t i = 0; i < hs->n_links; i++) {
		const struct fctl_link *v = &hs->links[i], *m;
		char name[40], mac[18];

		if (!first_on_parent(hs, i))
			continue;
		m = upper_of(hs, v->name);
		if (m && m->macsec.n_rxsc) {
			peer_name(m->macsec.rxsc[0].sci, name);
			mac_of_sci(m->macsec.rxsc[0].sci, mac);
			fctl_buf_printf(o, "  - name: %s\n    ports:\n      - { name: p0, mac: \"%s\", "
					   "mtu: %" PRIu32 " }\n",
					name, mac, v->has_mtu ? v->mtu : 1500);
		} else {
			fctl_buf_printf(o, "  - name: peer-of-%s\n    ports:\n      - { name: p0, mtu: "
					   "%" PRIu32 " }\n",
					v->parent, v->has_mtu ? v->mtu : 1500);
		}
	}
	fctl_buf_puts(o, any_port ? "links:\n" : "links: []\n");
	for (size_t i = 0; i < hs->n_links; i++) {
		const struct fctl_link *v = &hs->links[i], *m, *top;
		char name[40];

		if (!first_on_parent(hs, i))
			continue;
		m = upper_of(hs, v->name);
		if (m && m->macsec.n_rxsc)
			peer_name(m->macsec.rxsc[0].sci, name);
		else
			snprintf(name, sizeof(name), "peer-of-%s", v->parent);
		fctl_buf_printf(o, "  - name: %s-%s\n    a: { host: %s, port: %s }\n"
				   "    b: { host: %s, port: p0 }\n    vlans:\n",
				host, v->parent, host, v->parent, name);
		for (size_t j = i; j < hs->n_links; j++) {
			const struct fctl_link *w = &hs->links[j];

			if (w->kind != FCTL_LINK_VLAN || strcmp(w->parent, v->parent) != 0)
				continue;
			m = upper_of(hs, w->name);
			top = m ? m : w;
			fctl_buf_printf(o, "      - id: %u\n        protocol: %s\n", w->vid,
					fctl_vlan_proto_name(w->proto));
			if (top->has_mtu)
				fctl_buf_printf(o, "        mtu: %" PRIu32 "\n", top->mtu);
			if (m)
				fctl_buf_printf(o, "        macsec: live-%s\n", m->name);
			fctl_buf_printf(o, "        ifname: { vlan: %s", w->name);
			if (m)
				fctl_buf_printf(o, ", macsec: %s", m->name);
			fctl_buf_puts(o, " }\n");
			show_qos(o, &w->qos);
			if (top->n_addrs > 1)
				fctl_buf_printf(o, "        # %zu addresses live; a profile holds one "
						   "per host and VLAN\n",
						top->n_addrs);
			if (top->n_addrs)
				fctl_buf_printf(o, "        addresses: { %s: %s }\n", host,
						top->addrs[0]);
		}
	}
	return o->oom ? -ENOMEM : 0;
}
