// SPDX-License-Identifier: MIT
/* Differences between two host states, link by link. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/plan.h"

static void sa_line(struct fctl_buf *o, const char *prefix, unsigned an, const struct fctl_sa *sa)
{
	fctl_buf_printf(o, "%s an %u %s key-id ", prefix, an, sa->active ? "active" : "inactive");
	fctl_buf_put_hex(o, sa->keyid, FCTL_KEYID_LEN);
	/* XPN: the SSCI, which the kernel dumps. Not has_salt: the kernel never dumps the
	 * salt, so a state read back has one only where the engine derived it */
	if (sa->ssci)
		fctl_buf_printf(o, " ssci %" PRIu32, sa->ssci);
	fctl_buf_putc(o, '\n');
}

int fctl_link_to_lines(const struct fctl_link *l, struct fctl_buf *o)
{
	char sci[24];

	fctl_buf_printf(o, "%s %s\n", l->kind == FCTL_LINK_VLAN ? "vlan" : "macsec", l->name);
	fctl_buf_printf(o, "  parent %s\n", l->parent);
	if (l->has_mtu)
		fctl_buf_printf(o, "  mtu %" PRIu32 "\n", l->mtu);
	fctl_buf_printf(o, "  state %s\n", l->up ? "up" : "down");
	/* only "none" is a line: a desired state leaves other links' address generation to
	 * the kernel, so a live link that generates addresses differs from it in nothing */
	if (l->has_addrgen && l->addrgen == FCTL_ADDRGEN_NONE)
		fctl_buf_puts(o, "  addrgenmode none\n");
	if (l->kind == FCTL_LINK_VLAN) {
		fctl_buf_printf(o, "  vid %u\n  protocol %s\n", l->vid,
				fctl_vlan_proto_name(l->proto));
		if (l->qos.n_egress) {
			fctl_buf_puts(o, "  egress-qos-map");
			for (size_t i = 0; i < l->qos.n_egress; i++)
				fctl_buf_printf(o, " %" PRIu32 ":%u", l->qos.egress[i].prio,
						l->qos.egress[i].pcp);
			fctl_buf_putc(o, '\n');
		}
		unsigned any = 0;

		for (unsigned p = 0; p < FCTL_VLAN_PCPS; p++)
			if (l->qos.ingress[p])
				fctl_buf_printf(o, "%s %u:%" PRIu32, any++ ? "" : "  ingress-qos-map",
						p, l->qos.ingress[p]);
		if (any)
			fctl_buf_putc(o, '\n');
	} else {
		const struct fctl_macsec *m = &l->macsec;

		fctl_sci_format(m->sci, sci);
		fctl_buf_printf(o, "  sci %s\n  cipher %s\n  icv_len %u\n  encrypt %s\n",
				sci, fctl_cipher_name(m->cipher), m->icv_len,
				m->encrypt ? "on" : "off");
		fctl_buf_printf(o, "  protect %s\n  replay_protect %s\n", m->protect ? "on" : "off",
				m->replay_protect ? "on" : "off");
		if (m->replay_protect)
			fctl_buf_printf(o, "  replay_window %" PRIu32 "\n", m->window);
		fctl_buf_printf(o, "  validate %s\n  send_sci %s\n  end_station %s\n  scb %s\n",
				fctl_validate_name(m->validate), m->send_sci ? "on" : "off",
				m->end_station ? "on" : "off", m->scb ? "on" : "off");
		fctl_buf_printf(o, "  offload %s\n  encoding_sa %u\n", fctl_offload_name(m->offload),
				m->encoding_sa);
		for (unsigned an = 0; an < FCTL_MAX_AN; an++)
			if (m->txsa[an].present)
				sa_line(o, "  tx-sa", an, &m->txsa[an]);
		for (size_t i = 0; i < m->n_rxsc; i++) {
			fctl_sci_format(m->rxsc[i].sci, sci);
			fctl_buf_printf(o, "  rx-sc %s %s\n", sci,
					m->rxsc[i].active ? "active" : "inactive");
			for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
				if (m->rxsc[i].sa[an].present) {
					char pre[48];

					snprintf(pre, sizeof(pre), "  rx-sa %s", sci);
					sa_line(o, pre, an, &m->rxsc[i].sa[an]);
				}
			}
		}
	}
	for (size_t i = 0; i < l->n_addrs; i++)
		fctl_buf_printf(o, "  address %s\n", l->addrs[i]);
	return o->oom ? -ENOMEM : 0;
}

/* Splits a NUL-terminated text into lines in place. */
static size_t split(char *s, char ***out)
{
	size_t n = 0, cap = 0;
	char **v = NULL, **slot;

	for (char *p = s; p && *p;) {
		char *nl = strchr(p, '\n');

		if (nl)
			*nl = '\0';
		slot = fctl_array_grow(&v, &n, &cap, sizeof(*slot));
		if (!slot)
			break;
		*slot = p;
		p = nl ? nl + 1 : NULL;
	}
	*out = v;
	return n;
}

static bool contains(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

struct pair {
	const struct fctl_link *a, *b;
};

static size_t pairs(const struct fctl_host_state *a, const struct fctl_host_state *b,
		    struct pair **out)
{
	size_t n = 0, cap = 0;
	struct pair *v = NULL, *p;

	for (size_t i = 0; a && i < a->n_links; i++) {
		p = fctl_array_grow(&v, &n, &cap, sizeof(*p));
		if (!p)
			break;
		p->a = &a->links[i];
		p->b = fctl_host_state_find(b, a->links[i].name);
	}
	for (size_t i = 0; b && i < b->n_links; i++) {
		if (fctl_host_state_find(a, b->links[i].name))
			continue;
		p = fctl_array_grow(&v, &n, &cap, sizeof(*p));
		if (!p)
			break;
		p->b = &b->links[i];
	}
	*out = v;
	return n;
}

typedef void (*emit_fn)(struct fctl_buf *o, const char *name, char **la, size_t na, char **lb,
			size_t nb, bool color, size_t idx);

static int walk(const struct fctl_host_state *a, const struct fctl_host_state *b,
		struct fctl_buf *o, bool color, emit_fn emit)
{
	struct pair *pv = NULL;
	size_t np = pairs(a, b, &pv), ndiff = 0;

	for (size_t i = 0; i < np; i++) {
		struct fctl_buf ta = { 0 }, tb = { 0 };
		char **la = NULL, **lb = NULL;
		size_t na = 0, nb = 0;

		if (pv[i].a)
			fctl_link_to_lines(pv[i].a, &ta);
		if (pv[i].b)
			fctl_link_to_lines(pv[i].b, &tb);
		if (!ta.data || !tb.data || strcmp(ta.data, tb.data) != 0) {
			na = split(ta.data, &la);
			nb = split(tb.data, &lb);
			emit(o, pv[i].a ? pv[i].a->name : pv[i].b->name, la, na, lb, nb, color,
			     ndiff++);
		}
		free(la);
		free(lb);
		fctl_buf_release(&ta);
		fctl_buf_release(&tb);
	}
	free(pv);
	return o->oom ? -ENOMEM : (int)ndiff;
}

static void emit_text(struct fctl_buf *o, const char *name, char **la, size_t na, char **lb,
		      size_t nb, bool color, size_t idx)
{
	const char *red = color ? "\033[31m" : "", *green = color ? "\033[32m" : "",
		   *yellow = color ? "\033[33m" : "", *reset = color ? "\033[0m" : "";

	if (!na) {
		for (size_t i = 0; i < nb; i++)
			fctl_buf_printf(o, "%s+ %s%s\n", green, lb[i], reset);
		return;
	}
	if (!nb) {
		for (size_t i = 0; i < na; i++)
			fctl_buf_printf(o, "%s- %s%s\n", red, la[i], reset);
		return;
	}
	fctl_buf_printf(o, "%s~ %s%s\n", yellow, la[0], reset);
	for (size_t i = 1; i < na; i++)
		if (!contains(lb, nb, la[i]))
			fctl_buf_printf(o, "%s- %s%s\n", red, la[i], reset);
	for (size_t i = 1; i < nb; i++)
		if (!contains(la, na, lb[i]))
			fctl_buf_printf(o, "%s+ %s%s\n", green, lb[i], reset);
}

static void json_lines(struct fctl_buf *o, char **v, size_t n, char **other, size_t no)
{
	size_t k = 0;

	fctl_buf_putc(o, '[');
	for (size_t i = 1; i < n; i++) {
		const char *s = v[i];

		if (other && contains(other, no, s))
			continue;
		while (*s == ' ')
			s++;
		if (k++)
			fctl_buf_putc(o, ',');
		fctl_buf_json_str(o, s);
	}
	fctl_buf_putc(o, ']');
}

static void emit_json(struct fctl_buf *o, const char *name, char **la, size_t na, char **lb,
		      size_t nb, bool color, size_t idx)
{
	fctl_buf_printf(o, "%s{\"link\":", idx ? "," : "");
	fctl_buf_json_str(o, name);
	fctl_buf_printf(o, ",\"change\":\"%s\",\"removed\":",
			!na ? "added" : !nb ? "removed" : "changed");
	json_lines(o, la, na, nb ? lb : NULL, nb);
	fctl_buf_puts(o, ",\"added\":");
	json_lines(o, lb, nb, na ? la : NULL, na);
	fctl_buf_putc(o, '}');
}

int fctl_state_diff_text(const struct fctl_host_state *a, const struct fctl_host_state *b,
			 struct fctl_buf *o, bool color)
{
	return walk(a, b, o, color, emit_text);
}

int fctl_state_diff_json(const struct fctl_host_state *a, const struct fctl_host_state *b,
			 struct fctl_buf *o)
{
	int r;

	fctl_buf_puts(o, "[");
	r = walk(a, b, o, false, emit_json);
	fctl_buf_puts(o, "]");
	return o->oom ? -ENOMEM : r;
}
