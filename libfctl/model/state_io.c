// SPDX-License-Identifier: MIT
/*
 * Text form of a host state, one object per line:
 *   state HOST
 *   link vlan NAME parent=P mtu=N up=0|1 [addrgen=M] vid=N proto=802.1q [egress=P:C,..]
 *        [ingress=C:P,..]
 *   link macsec NAME parent=P mtu=N up=0|1 [addrgen=M] sci=HEX port=N cipher=C icv=N ...
 *   key NAME backend=B id=ID version=N
 *   txsa NAME an=N active=0|1 pn=N keyid=HEX [ssci=N salt=HEX]
 *   rxsc NAME sci=HEX active=0|1
 *   rxsa NAME sci=HEX an=N active=0|1 pn=N keyid=HEX [ssci=N salt=HEX]
 *   addr NAME CIDR
 *   state-end
 * Values are %-escaped (space, %, newline, '=' and control bytes).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/state.h"

static void put_esc(struct fctl_buf *o, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= 0x20 || c == '%' || c == '=' || c >= 0x7f)
			fctl_buf_printf(o, "%%%02x", c);
		else
			fctl_buf_putc(o, (char)c);
	}
}

static void put_sa(struct fctl_buf *o, const struct fctl_sa *sa, unsigned an)
{
	fctl_buf_printf(o, " an=%u active=%d pn=%" PRIu64, an, sa->active, sa->pn);
	if (sa->has_keyid) {
		fctl_buf_puts(o, " keyid=");
		fctl_buf_put_hex(o, sa->keyid, FCTL_KEYID_LEN);
	}
	if (sa->has_salt) {
		fctl_buf_printf(o, " ssci=%" PRIu32 " salt=", sa->ssci);
		fctl_buf_put_hex(o, sa->salt, FCTL_SALT_LEN);
	}
	fctl_buf_putc(o, '\n');
}

int fctl_host_state_save(const struct fctl_host_state *hs, struct fctl_buf *o)
{
	fctl_buf_puts(o, "state ");
	put_esc(o, hs->host);
	fctl_buf_putc(o, '\n');
	for (size_t i = 0; i < hs->n_links; i++) {
		const struct fctl_link *l = &hs->links[i];
		const struct fctl_macsec *m = &l->macsec;

		fctl_buf_printf(o, "link %s %s parent=%s", l->kind == FCTL_LINK_VLAN ? "vlan" : "macsec",
				l->name, l->parent);
		if (l->has_mtu)
			fctl_buf_printf(o, " mtu=%" PRIu32, l->mtu);
		fctl_buf_printf(o, " up=%d", l->up);
		if (l->has_addrgen)
			fctl_buf_printf(o, " addrgen=%s", fctl_addrgen_name(l->addrgen));
		if (l->kind == FCTL_LINK_VLAN) {
			fctl_buf_printf(o, " vid=%u proto=%s", l->vid, fctl_vlan_proto_name(l->proto));
			fctl_vlan_qos_put_tokens(&l->qos, o);
			fctl_buf_putc(o, '\n');
		} else {
			fctl_buf_printf(o,
					" sci=%016" PRIx64 " port=%u cipher=%s icv=%u encrypt=%d protect=%d"
					" replay=%d window=%" PRIu32 " validate=%s send_sci=%d es=%d scb=%d"
					" offload=%s encoding_sa=%u\n",
					m->sci, m->port, fctl_cipher_name(m->cipher), m->icv_len,
					m->encrypt, m->protect, m->replay_protect, m->window,
					fctl_validate_name(m->validate), m->send_sci, m->end_station,
					m->scb, fctl_offload_name(m->offload), m->encoding_sa);
			if (m->key.backend) {
				fctl_buf_printf(o, "key %s backend=", l->name);
				put_esc(o, m->key.backend);
				fctl_buf_puts(o, " id=");
				put_esc(o, m->key.id);
				fctl_buf_printf(o, " version=%" PRIu32, m->key.version);
				if (m->key.base) {
					fctl_buf_puts(o, " base=");
					put_esc(o, m->key.base);
				}
				fctl_buf_putc(o, '\n');
			}
			for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
				if (!m->txsa[an].present)
					continue;
				fctl_buf_printf(o, "txsa %s", l->name);
				put_sa(o, &m->txsa[an], an);
			}
			for (size_t s = 0; s < m->n_rxsc; s++) {
				fctl_buf_printf(o, "rxsc %s sci=%016" PRIx64 " active=%d\n", l->name,
						m->rxsc[s].sci, m->rxsc[s].active);
				for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
					if (!m->rxsc[s].sa[an].present)
						continue;
					fctl_buf_printf(o, "rxsa %s sci=%016" PRIx64, l->name,
							m->rxsc[s].sci);
					put_sa(o, &m->rxsc[s].sa[an], an);
				}
			}
		}
		for (size_t a = 0; a < l->n_addrs; a++)
			fctl_buf_printf(o, "addr %s %s\n", l->name, l->addrs[a]);
	}
	fctl_buf_puts(o, "state-end\n");
	return o->oom ? -ENOMEM : 0;
}

/* --- parsing --- */

#define MAX_TOK 40

struct line {
	char *tok[MAX_TOK];
	int n;
};

static int unesc(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r == '%') {
			uint8_t b;
			char h[3] = { r[1], r[1] ? r[2] : 0, 0 };

			if (!r[1] || !r[2] || fctl_parse_hex(h, &b, 1) < 0)
				return -EINVAL;
			*w++ = (char)b;
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return 0;
}

static const char *val(const struct line *l, const char *key)
{
	size_t kl = strlen(key);

	for (int i = 0; i < l->n; i++)
		if (strncmp(l->tok[i], key, kl) == 0 && l->tok[i][kl] == '=')
			return l->tok[i] + kl + 1;
	return NULL;
}

static int num(const struct line *l, const char *key, uint64_t max, uint64_t *out)
{
	const char *v = val(l, key);
	uint64_t u;

	if (!v || fctl_parse_u64(v, &u) < 0 || u > max)
		return -EINVAL;
	*out = u;
	return 0;
}

static int flag(const struct line *l, const char *key, bool *out)
{
	uint64_t u;
	int r = num(l, key, 1, &u);

	if (r == 0)
		*out = u != 0;
	return r;
}

static int hex64(const char *v, uint64_t *out)
{
	uint8_t b[8];
	uint64_t x = 0;

	if (!v || fctl_parse_hex(v, b, 8) < 0)
		return -EINVAL;
	for (int i = 0; i < 8; i++)
		x = x << 8 | b[i];
	*out = x;
	return 0;
}

static int parse_sa(const struct line *l, struct fctl_sa *sas, unsigned *an_out)
{
	uint64_t an, pn, ssci;
	struct fctl_sa *sa;
	const char *v;

	if (num(l, "an", 3, &an) < 0 || num(l, "pn", UINT64_MAX, &pn) < 0)
		return -EINVAL;
	sa = &sas[an];
	memset(sa, 0, sizeof(*sa));
	sa->present = true;
	sa->pn = pn;
	if (flag(l, "active", &sa->active) < 0)
		return -EINVAL;
	if ((v = val(l, "keyid"))) {
		if (fctl_parse_hex(v, sa->keyid, FCTL_KEYID_LEN) < 0)
			return -EINVAL;
		sa->has_keyid = true;
	}
	if ((v = val(l, "salt"))) {
		if (fctl_parse_hex(v, sa->salt, FCTL_SALT_LEN) < 0 ||
		    num(l, "ssci", UINT32_MAX, &ssci) < 0)
			return -EINVAL;
		sa->ssci = (uint32_t)ssci;
		sa->has_salt = true;
	}
	*an_out = (unsigned)an;
	return 0;
}

static int parse_link(struct fctl_host_state *hs, const struct line *ln)
{
	struct fctl_link *l;
	const char *v;
	uint64_t u;
	bool macsec;

	if (ln->n < 4)
		return -EINVAL;
	macsec = strcmp(ln->tok[1], "macsec") == 0;
	if (!macsec && strcmp(ln->tok[1], "vlan") != 0)
		return -EINVAL;
	l = fctl_host_state_add_link(hs, macsec ? FCTL_LINK_MACSEC : FCTL_LINK_VLAN, ln->tok[2]);
	if (!l)
		return -EINVAL;
	v = val(ln, "parent");
	if (!v || strlen(v) >= sizeof(l->parent))
		return -EINVAL;
	snprintf(l->parent, sizeof(l->parent), "%s", v);
	if (val(ln, "mtu")) {
		if (num(ln, "mtu", UINT32_MAX, &u) < 0)
			return -EINVAL;
		l->mtu = (uint32_t)u;
		l->has_mtu = true;
	}
	if (flag(ln, "up", &l->up) < 0)
		return -EINVAL;
	/* absent in journals written before the carrier's address generation was kept */
	if ((v = val(ln, "addrgen"))) {
		if (fctl_addrgen_from_name(v, &l->addrgen) < 0)
			return -EINVAL;
		l->has_addrgen = true;
	}
	if (!macsec) {
		if (num(ln, "vid", 4095, &u) < 0 ||
		    fctl_vlan_proto_from_name(val(ln, "proto"), &l->proto) < 0)
			return -EINVAL;
		l->vid = (uint16_t)u;
		/* the QoS maps: absent when empty, and in journals written before they were kept */
		if (fctl_vlan_qos_parse_list(val(ln, "egress"), true, &l->qos) < 0 ||
		    fctl_vlan_qos_parse_list(val(ln, "ingress"), false, &l->qos) < 0)
			return -EINVAL;
		fctl_vlan_qos_normalize(&l->qos);
		return 0;
	} else {
		struct fctl_macsec *m = &l->macsec;

		if (hex64(val(ln, "sci"), &m->sci) < 0 || num(ln, "port", 0xffff, &u) < 0)
			return -EINVAL;
		m->port = (uint16_t)u;
		m->has_port = true;
		if (fctl_cipher_from_name(val(ln, "cipher"), &m->cipher) < 0 ||
		    num(ln, "icv", 255, &u) < 0)
			return -EINVAL;
		m->icv_len = (uint8_t)u;
		if (flag(ln, "encrypt", &m->encrypt) < 0 || flag(ln, "protect", &m->protect) < 0 ||
		    flag(ln, "replay", &m->replay_protect) < 0 || flag(ln, "send_sci", &m->send_sci) < 0 ||
		    flag(ln, "es", &m->end_station) < 0 || flag(ln, "scb", &m->scb) < 0)
			return -EINVAL;
		if (num(ln, "window", UINT32_MAX, &u) < 0)
			return -EINVAL;
		m->window = (uint32_t)u;
		if (fctl_validate_from_name(val(ln, "validate"), &m->validate) < 0 ||
		    fctl_offload_from_name(val(ln, "offload"), &m->offload) < 0 ||
		    num(ln, "encoding_sa", 3, &u) < 0)
			return -EINVAL;
		m->encoding_sa = (uint8_t)u;
	}
	return 0;
}

static int parse_line(struct fctl_host_state *hs, struct line *ln)
{
	struct fctl_link *l;
	uint64_t sci;
	unsigned an;

	if (strcmp(ln->tok[0], "link") == 0)
		return parse_link(hs, ln);
	if (ln->n < 2 || !(l = fctl_host_state_find(hs, ln->tok[1])))
		return -EINVAL;
	if (strcmp(ln->tok[0], "addr") == 0)
		return ln->n == 3 ? fctl_link_add_addr(l, ln->tok[2]) : -EINVAL;
	if (l->kind != FCTL_LINK_MACSEC)
		return -EINVAL;
	if (strcmp(ln->tok[0], "key") == 0) {
		struct fctl_keyref *k = &l->macsec.key;
		uint64_t ver;

		if (!val(ln, "backend") || !val(ln, "id") || num(ln, "version", UINT32_MAX, &ver) < 0)
			return -EINVAL;
		free(k->backend);
		free(k->id);
		k->backend = strdup(val(ln, "backend"));
		k->id = strdup(val(ln, "id"));
		k->version = (uint32_t)ver;
		free(k->base);
		k->base = val(ln, "base") ? strdup(val(ln, "base")) : NULL;
		return k->backend && k->id ? 0 : -ENOMEM;
	}
	if (strcmp(ln->tok[0], "txsa") == 0)
		return parse_sa(ln, l->macsec.txsa, &an);
	if (hex64(val(ln, "sci"), &sci) < 0)
		return -EINVAL;
	if (strcmp(ln->tok[0], "rxsc") == 0) {
		struct fctl_rxsc *sc = fctl_macsec_add_rxsc(&l->macsec, sci);

		return sc ? flag(ln, "active", &sc->active) : -ENOMEM;
	}
	if (strcmp(ln->tok[0], "rxsa") == 0) {
		struct fctl_rxsc *sc = fctl_macsec_find_rxsc(&l->macsec, sci);

		return sc ? parse_sa(ln, sc->sa, &an) : -EINVAL;
	}
	return -EINVAL;
}

int fctl_host_state_load(const char *text, size_t *consumed, struct fctl_host_state **out)
{
	struct fctl_host_state *hs = NULL;
	const char *p = text;
	int r = -EINVAL;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *copy = strndup(p, len), *save = NULL, *t;
		struct line ln = { .n = 0 };

		if (!copy) {
			r = -ENOMEM;
			break;
		}
		p += len + (nl ? 1 : 0);
		for (t = strtok_r(copy, " ", &save); t && ln.n < MAX_TOK;
		     t = strtok_r(NULL, " ", &save))
			ln.tok[ln.n++] = t;
		for (int i = 0; i < ln.n; i++)
			if (unesc(ln.tok[i]) < 0)
				ln.n = 0;
		if (!ln.n) {
			free(copy);
			r = -EINVAL;
			break;
		}
		if (!hs) {
			if (strcmp(ln.tok[0], "state") != 0 || ln.n > 2) {
				free(copy);
				break;
			}
			hs = fctl_host_state_new(ln.n == 2 ? ln.tok[1] : "");
			free(copy);
			if (!hs) {
				r = -ENOMEM;
				break;
			}
			continue;
		}
		if (strcmp(ln.tok[0], "state-end") == 0) {
			free(copy);
			fctl_host_state_sort(hs);
			*consumed = (size_t)(p - text);
			*out = hs;
			return 0;
		}
		r = parse_line(hs, &ln);
		free(copy);
		if (r < 0)
			break;
		r = -EINVAL;
	}
	fctl_host_state_free(hs);
	return r < 0 ? r : -EINVAL;
}
