// SPDX-License-Identifier: MIT
/* Plans: the ordered operations that turn one host state into another, their text, JSON, digest. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "fctl/plan.h"

static const char *const op_names[] = {
	[FCTL_OP_ADDR_DEL] = "delete-address", [FCTL_OP_LINK_DOWN] = "set-down",
	[FCTL_OP_TXSA_DEL] = "delete-txsa",    [FCTL_OP_RXSA_DEL] = "delete-rxsa",
	[FCTL_OP_RXSC_DEL] = "delete-rxsc",    [FCTL_OP_LINK_DEL] = "delete-link",
	[FCTL_OP_LINK_ADD] = "create-link",    [FCTL_OP_LINK_CHANGE] = "change-link",
	[FCTL_OP_RXSC_ADD] = "add-rxsc",       [FCTL_OP_RXSC_UPD] = "update-rxsc",
	[FCTL_OP_RXSA_ADD] = "add-rxsa",       [FCTL_OP_RXSA_UPD] = "update-rxsa",
	[FCTL_OP_TXSA_ADD] = "add-txsa",       [FCTL_OP_TXSA_UPD] = "update-txsa",
	[FCTL_OP_LINK_UP] = "set-up",          [FCTL_OP_ADDR_ADD] = "add-address",
};

const char *fctl_op_kind_name(enum fctl_op_kind k)
{
	return (size_t)k < FCTL_ARRAY_SIZE(op_names) ? op_names[k] : "?";
}

struct builder {
	struct fctl_plan *plan;
	int err;
};

static void op_release(struct fctl_op *op)
{
	free(op->detail);
	free(op->addr);
}

void fctl_plan_free(struct fctl_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_ops; i++)
		op_release(&p->ops[i]);
	free(p->ops);
	free(p->host);
	free(p);
}

static struct fctl_op *add_op(struct builder *b, enum fctl_op_kind kind, const struct fctl_link *l)
{
	struct fctl_plan *p = b->plan;
	struct fctl_op *op;

	if (b->err)
		return NULL;
	op = fctl_array_grow(&p->ops, &p->n_ops, &p->cap_ops, sizeof(*op));
	if (!op) {
		b->err = -ENOMEM;
		return NULL;
	}
	op->kind = kind;
	snprintf(op->ifname, sizeof(op->ifname), "%s", l->name);
	/* shallow copy of the link's own attributes; children and addresses are ops of their own */
	op->link = *l;
	op->link.macsec.rxsc = NULL;
	op->link.macsec.n_rxsc = op->link.macsec.cap_rxsc = 0;
	op->link.addrs = NULL;
	op->link.n_addrs = op->link.cap_addrs = 0;
	op->link.macsec.key.backend = op->link.macsec.key.id = op->link.macsec.key.base = NULL;
	op->key = l->macsec.key; /* borrowed from the state the plan was computed from */
	return op;
}

static void set_detail(struct builder *b, struct fctl_op *op, struct fctl_buf *d)
{
	if (!op || !d->len)
		return;
	op->detail = fctl_strdup(d->data);
	if (!op->detail)
		b->err = -ENOMEM;
}

static void add_sa_op(struct builder *b, enum fctl_op_kind kind, const struct fctl_link *l,
		      uint64_t sci, unsigned an, const struct fctl_sa *sa, bool rxsc_active,
		      const char *detail)
{
	struct fctl_op *op = add_op(b, kind, l);

	if (!op)
		return;
	op->sci = sci;
	op->an = (uint8_t)an;
	if (sa)
		op->sa = *sa;
	op->rxsc_active = rxsc_active;
	if (detail) {
		op->detail = fctl_strdup(detail);
		if (!op->detail)
			b->err = -ENOMEM;
	}
}

static void add_addr_op(struct builder *b, enum fctl_op_kind kind, const struct fctl_link *l,
			const char *addr)
{
	struct fctl_op *op = add_op(b, kind, l);

	if (!op)
		return;
	op->addr = fctl_strdup(addr);
	if (!op->addr)
		b->err = -ENOMEM;
}

/* Everything a freshly created link needs: SCs, SAs (RX before TX), up, addresses. */
static void create_link(struct builder *b, const struct fctl_link *l, bool disruptive,
			const char *why)
{
	struct fctl_op *op = add_op(b, FCTL_OP_LINK_ADD, l);

	if (op) {
		op->disruptive = disruptive;
		if (why && !(op->detail = fctl_strdup(why)))
			b->err = -ENOMEM;
	}
	if (l->kind == FCTL_LINK_MACSEC) {
		const struct fctl_macsec *m = &l->macsec;

		for (size_t i = 0; i < m->n_rxsc; i++) {
			const struct fctl_rxsc *sc = &m->rxsc[i];

			add_sa_op(b, FCTL_OP_RXSC_ADD, l, sc->sci, 0, NULL, sc->active, NULL);
			for (unsigned an = 0; an < FCTL_MAX_AN; an++)
				if (sc->sa[an].present)
					add_sa_op(b, FCTL_OP_RXSA_ADD, l, sc->sci, an, &sc->sa[an],
						  sc->active, NULL);
		}
		for (unsigned an = 0; an < FCTL_MAX_AN; an++)
			if (m->txsa[an].present)
				add_sa_op(b, FCTL_OP_TXSA_ADD, l, m->sci, an, &m->txsa[an], false,
					  NULL);
	}
	if (l->up)
		add_op(b, FCTL_OP_LINK_UP, l);
	for (size_t i = 0; i < l->n_addrs; i++)
		add_addr_op(b, FCTL_OP_ADDR_ADD, l, l->addrs[i]);
}

static void delete_link(struct builder *b, const struct fctl_link *l, bool disruptive,
			const char *why)
{
	struct fctl_op *op = add_op(b, FCTL_OP_LINK_DEL, l);

	if (op) {
		op->disruptive = disruptive;
		if (why && !(op->detail = fctl_strdup(why)))
			b->err = -ENOMEM;
	}
}

/* A SecY, or a link a SecY of the same host runs on. */
static bool is_protected(const struct fctl_host_state *s, const struct fctl_link *l)
{
	if (l->kind == FCTL_LINK_MACSEC)
		return true;
	for (size_t i = 0; i < s->n_links; i++)
		if (s->links[i].kind == FCTL_LINK_MACSEC && strcmp(s->links[i].parent, l->name) == 0)
			return true;
	return false;
}

static void onoff(struct fctl_buf *d, const char *what, bool from, bool to)
{
	fctl_buf_printf(d, "%s%s %s -> %s", d->len ? ", " : "", what, from ? "on" : "off",
			to ? "on" : "off");
}

/* Attributes the kernel cannot change in place: a difference means delete + recreate. */
static bool needs_recreate(const struct fctl_link *c, const struct fctl_link *w, struct fctl_buf *d)
{
	char a[24], z[24];

	if (c->kind != w->kind) {
		fctl_buf_printf(d, "kind %s -> %s", c->kind == FCTL_LINK_VLAN ? "vlan" : "macsec",
				w->kind == FCTL_LINK_VLAN ? "vlan" : "macsec");
		return true;
	}
	if (strcmp(c->parent, w->parent) != 0)
		fctl_buf_printf(d, "%sparent %s -> %s", d->len ? ", " : "", c->parent, w->parent);
	if (w->kind == FCTL_LINK_VLAN) {
		if (c->vid != w->vid)
			fctl_buf_printf(d, "%svid %u -> %u", d->len ? ", " : "", c->vid, w->vid);
		if (c->proto != w->proto)
			fctl_buf_printf(d, "%sprotocol %s -> %s", d->len ? ", " : "",
					fctl_vlan_proto_name(c->proto),
					fctl_vlan_proto_name(w->proto));
	} else {
		const struct fctl_macsec *cm = &c->macsec, *wm = &w->macsec;

		if (cm->cipher != wm->cipher)
			fctl_buf_printf(d, "%scipher %s -> %s", d->len ? ", " : "",
					fctl_cipher_name(cm->cipher), fctl_cipher_name(wm->cipher));
		if (cm->icv_len != wm->icv_len)
			fctl_buf_printf(d, "%sicv_len %u -> %u", d->len ? ", " : "", cm->icv_len,
					wm->icv_len);
		if (cm->sci != wm->sci) {
			fctl_sci_format(cm->sci, a);
			fctl_sci_format(wm->sci, z);
			fctl_buf_printf(d, "%ssci %s -> %s", d->len ? ", " : "", a, z);
		} else if (cm->has_port && wm->has_port && cm->port != wm->port) {
			fctl_buf_printf(d, "%sport %u -> %u", d->len ? ", " : "", cm->port,
					wm->port);
		}
		/* the kernel changes offload only on a SecY that is down and has no SC or
		 * SA (macsec_update_offload: -EBUSY), so a live SecY is rebuilt with it */
		if (cm->offload != wm->offload)
			fctl_buf_printf(d, "%soffload %s -> %s", d->len ? ", " : "",
					fctl_offload_name(cm->offload),
					fctl_offload_name(wm->offload));
	}
	return d->len > 0;
}

static unsigned link_changes(const struct fctl_link *c, const struct fctl_link *w,
			     struct fctl_buf *d)
{
	unsigned ch = 0;

	if (w->has_mtu && (!c->has_mtu || c->mtu != w->mtu)) {
		ch |= FCTL_CHG_MTU;
		fctl_buf_printf(d, "%smtu %" PRIu32 " -> %" PRIu32, d->len ? ", " : "", c->mtu,
				w->mtu);
	}
	/* compared only where both sides know it: a live link without IPv6 generates nothing */
	if (w->has_addrgen && c->has_addrgen && c->addrgen != w->addrgen) {
		ch |= FCTL_CHG_ADDRGEN;
		fctl_buf_printf(d, "%saddrgenmode %s -> %s", d->len ? ", " : "",
				fctl_addrgen_name(c->addrgen), fctl_addrgen_name(w->addrgen));
	}
	if (w->kind == FCTL_LINK_VLAN && !fctl_vlan_qos_equal(&c->qos, &w->qos)) {
		ch |= FCTL_CHG_QOS;
		fctl_buf_printf(d, "%sqos ", d->len ? ", " : "");
		fctl_vlan_qos_format(&c->qos, d);
		fctl_buf_puts(d, " -> ");
		fctl_vlan_qos_format(&w->qos, d);
	}
	if (w->kind == FCTL_LINK_MACSEC) {
		const struct fctl_macsec *cm = &c->macsec, *wm = &w->macsec;

		if (cm->replay_protect != wm->replay_protect) {
			ch |= FCTL_CHG_REPLAY;
			onoff(d, "replay_protect", cm->replay_protect, wm->replay_protect);
		}
		/* the kernel reports the window only while replay protection is on */
		if (wm->replay_protect && cm->window != wm->window) {
			ch |= FCTL_CHG_WINDOW;
			fctl_buf_printf(d, "%swindow %" PRIu32 " -> %" PRIu32, d->len ? ", " : "",
					cm->window, wm->window);
		}
		if (cm->validate != wm->validate) {
			ch |= FCTL_CHG_VALIDATE;
			fctl_buf_printf(d, "%svalidate %s -> %s", d->len ? ", " : "",
					fctl_validate_name(cm->validate),
					fctl_validate_name(wm->validate));
		}
		if (cm->encrypt != wm->encrypt) {
			ch |= FCTL_CHG_ENCRYPT;
			onoff(d, "encrypt", cm->encrypt, wm->encrypt);
		}
		if (cm->protect != wm->protect) {
			ch |= FCTL_CHG_PROTECT;
			onoff(d, "protect", cm->protect, wm->protect);
		}
		if (cm->send_sci != wm->send_sci) {
			ch |= FCTL_CHG_SEND_SCI;
			onoff(d, "send_sci", cm->send_sci, wm->send_sci);
		}
		if (cm->end_station != wm->end_station) {
			ch |= FCTL_CHG_END_STATION;
			onoff(d, "end_station", cm->end_station, wm->end_station);
		}
		if (cm->scb != wm->scb) {
			ch |= FCTL_CHG_SCB;
			onoff(d, "scb", cm->scb, wm->scb);
		}
		if (cm->encoding_sa != wm->encoding_sa) {
			ch |= FCTL_CHG_ENCODING_SA;
			fctl_buf_printf(d, "%sencoding_sa %u -> %u", d->len ? ", " : "",
					cm->encoding_sa, wm->encoding_sa);
		}
	}
	return ch;
}

static void keyid_hex(const struct fctl_sa *sa, char out[2 * FCTL_KEYID_LEN + 1])
{
	fctl_format_hex(sa->keyid, FCTL_KEYID_LEN, out);
}

/* Compares one SA slot; an SA whose key (or XPN SSCI) differs is replaced: neither
 * changes in place. */
static void diff_sa(struct builder *b, const struct fctl_link *w, bool tx, uint64_t sci,
		    unsigned an, const struct fctl_sa *cs, const struct fctl_sa *ws, bool sc_active)
{
	enum fctl_op_kind add = tx ? FCTL_OP_TXSA_ADD : FCTL_OP_RXSA_ADD;
	enum fctl_op_kind del = tx ? FCTL_OP_TXSA_DEL : FCTL_OP_RXSA_DEL;
	enum fctl_op_kind upd = tx ? FCTL_OP_TXSA_UPD : FCTL_OP_RXSA_UPD;
	char x[33], y[33], d[128];
	bool replace = false;

	if (!cs->present && !ws->present)
		return;
	if (!ws->present) {
		add_sa_op(b, del, w, sci, an, cs, sc_active, NULL);
		return;
	}
	if (!cs->present) {
		add_sa_op(b, add, w, sci, an, ws, sc_active, NULL);
		return;
	}
	if (ws->has_keyid && (!cs->has_keyid || memcmp(cs->keyid, ws->keyid, FCTL_KEYID_LEN))) {
		keyid_hex(cs, x);
		keyid_hex(ws, y);
		snprintf(d, sizeof(d), "key id %.8s -> %.8s (replace)", cs->has_keyid ? x : "none",
			 y);
		replace = true;
	} else if (ws->has_salt && cs->ssci != ws->ssci) {
		/* XPN: the SSCI is fixed at creation (no netlink update changes it) and the
		 * kernel dumps it; the salt is not dumped and cannot be compared */
		snprintf(d, sizeof(d), "ssci %" PRIu32 " -> %" PRIu32 " (replace)", cs->ssci,
			 ws->ssci);
		replace = true;
	}
	if (replace) {
		add_sa_op(b, del, w, sci, an, cs, sc_active, d);
		add_sa_op(b, add, w, sci, an, ws, sc_active, d);
		b->plan->ops[b->plan->n_ops - 1].disruptive = !b->err;
		b->plan->ops[b->plan->n_ops - 2].disruptive = !b->err;
		return;
	}
	if (cs->active != ws->active) {
		snprintf(d, sizeof(d), "active %s -> %s", cs->active ? "on" : "off",
			 ws->active ? "on" : "off");
		add_sa_op(b, upd, w, sci, an, ws, sc_active, d);
	}
}

static bool has_str(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

/* The kernel removes an egress mapping when it is set to PCP 0: the op lists the
 * mappings cur has and the op's link has not, with PCP 0. */
static void qos_removals(struct builder *b, struct fctl_op *op, const struct fctl_vlan_qos *cur)
{
	struct fctl_vlan_qos *q = &op->link.qos;
	size_t n = q->n_egress;

	for (size_t i = 0; i < cur->n_egress; i++) {
		bool kept = false;

		for (size_t j = 0; j < n && !kept; j++)
			kept = q->egress[j].prio == cur->egress[i].prio;
		if (kept)
			continue;
		if (q->n_egress >= FCTL_VLAN_QOS_MAX) {
			b->err = -E2BIG;
			return;
		}
		q->egress[q->n_egress].prio = cur->egress[i].prio;
		q->egress[q->n_egress++].pcp = 0;
	}
}

static void diff_link(struct builder *b, const struct fctl_link *c, const struct fctl_link *w)
{
	struct fctl_buf d = { 0 };
	struct fctl_op *op;
	unsigned ch;

	if (c->up && !w->up)
		add_op(b, FCTL_OP_LINK_DOWN, w);
	ch = link_changes(c, w, &d);
	if (ch) {
		op = add_op(b, FCTL_OP_LINK_CHANGE, w);
		if (op)
			op->changes = ch;
		if (op && (ch & FCTL_CHG_QOS))
			qos_removals(b, op, &c->qos);
		set_detail(b, op, &d);
	}
	fctl_buf_release(&d);

	if (w->kind == FCTL_LINK_MACSEC) {
		const struct fctl_macsec *cm = &c->macsec, *wm = &w->macsec;

		for (size_t i = 0; i < cm->n_rxsc; i++)
			if (!fctl_macsec_find_rxsc(wm, cm->rxsc[i].sci))
				add_sa_op(b, FCTL_OP_RXSC_DEL, w, cm->rxsc[i].sci, 0, NULL,
					  cm->rxsc[i].active, NULL);
		for (size_t i = 0; i < wm->n_rxsc; i++) {
			const struct fctl_rxsc *ws = &wm->rxsc[i];
			const struct fctl_rxsc *cs = fctl_macsec_find_rxsc(cm, ws->sci);
			static const struct fctl_rxsc none;

			if (!cs) {
				add_sa_op(b, FCTL_OP_RXSC_ADD, w, ws->sci, 0, NULL, ws->active,
					  NULL);
				cs = &none;
			} else if (cs->active != ws->active) {
				add_sa_op(b, FCTL_OP_RXSC_UPD, w, ws->sci, 0, NULL, ws->active,
					  ws->active ? "active off -> on" : "active on -> off");
			}
			for (unsigned an = 0; an < FCTL_MAX_AN; an++)
				diff_sa(b, w, false, ws->sci, an, &cs->sa[an], &ws->sa[an],
					ws->active);
		}
		for (unsigned an = 0; an < FCTL_MAX_AN; an++)
			diff_sa(b, w, true, wm->sci, an, &cm->txsa[an], &wm->txsa[an], false);
	}
	if (!c->up && w->up)
		add_op(b, FCTL_OP_LINK_UP, w);
	for (size_t i = 0; i < c->n_addrs; i++)
		if (!has_str(w->addrs, w->n_addrs, c->addrs[i]))
			add_addr_op(b, FCTL_OP_ADDR_DEL, w, c->addrs[i]);
	for (size_t i = 0; i < w->n_addrs; i++)
		if (!has_str(c->addrs, c->n_addrs, w->addrs[i]))
			add_addr_op(b, FCTL_OP_ADDR_ADD, w, w->addrs[i]);
}

struct sort_item {
	struct fctl_op op;
	size_t seq;
};

static int op_rank(const struct fctl_op *op)
{
	/* delete uppers (MACsec) before their VLANs, create VLANs before their uppers */
	if (op->kind == FCTL_OP_LINK_DEL)
		return op->link.kind == FCTL_LINK_MACSEC ? 0 : 1;
	if (op->kind == FCTL_OP_LINK_ADD)
		return op->link.kind == FCTL_LINK_VLAN ? 0 : 1;
	return 0;
}

static int cmp_ops(const void *a, const void *b)
{
	const struct sort_item *x = a, *y = b;

	if (x->op.kind != y->op.kind)
		return x->op.kind < y->op.kind ? -1 : 1;
	if (op_rank(&x->op) != op_rank(&y->op))
		return op_rank(&x->op) - op_rank(&y->op);
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int sort_ops(struct fctl_plan *p)
{
	struct sort_item *v;

	if (p->n_ops < 2)
		return 0;
	v = calloc(p->n_ops, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_ops; i++) {
		v[i].op = p->ops[i];
		v[i].seq = i;
	}
	qsort(v, p->n_ops, sizeof(*v), cmp_ops);
	for (size_t i = 0; i < p->n_ops; i++)
		p->ops[i] = v[i].op;
	free(v);
	return 0;
}

int fctl_plan_compute(const struct fctl_host_state *cur, const struct fctl_host_state *want,
		      struct fctl_plan **out)
{
	struct builder b = { 0 };
	bool *recreated = NULL;
	int r;

	b.plan = calloc(1, sizeof(*b.plan));
	if (!b.plan)
		return -ENOMEM;
	b.plan->host = strdup(want && want->host ? want->host : cur && cur->host ? cur->host : "");
	recreated = calloc(want && want->n_links ? want->n_links : 1, sizeof(*recreated));
	if (!b.plan->host || !recreated) {
		r = -ENOMEM;
		goto fail;
	}

	/* links that are gone; a protected one (a SecY, or the VLAN a SecY runs on) is
	 * disruptive: a gate must not take the end of a link's encryption, and its traffic,
	 * for a routine change (docs/cli.md, "plan") */
	for (size_t i = 0; cur && i < cur->n_links; i++) {
		bool prot;

		if (fctl_host_state_find(want, cur->links[i].name))
			continue;
		prot = is_protected(cur, &cur->links[i]);
		delete_link(&b, &cur->links[i], prot, prot ? "a protected link removed" : NULL);
	}

	/* links that change: VLANs first, so that a recreated VLAN drags its MACsec along */
	for (size_t i = 0; want && i < want->n_links; i++) {
		const struct fctl_link *w = &want->links[i];
		const struct fctl_link *c = fctl_host_state_find(cur, w->name);
		const struct fctl_link *parent = fctl_host_state_find(want, w->parent);
		struct fctl_buf d = { 0 };

		if (!c) {
			create_link(&b, w, false, NULL);
			continue;
		}
		if (parent && recreated[parent - want->links])
			fctl_buf_printf(&d, "parent %s is recreated", parent->name);
		if (d.len || needs_recreate(c, w, &d)) {
			recreated[i] = true;
			delete_link(&b, c, true, d.data);
			create_link(&b, w, true, d.data);
		} else {
			diff_link(&b, c, w);
		}
		fctl_buf_release(&d);
		if (d.oom)
			b.err = -ENOMEM;
	}
	if (b.err) {
		r = b.err;
		goto fail;
	}
	/* the loop above visited links in want's order; recreation of parents listed after
	 * their children is caught because want is sorted (VLANs first) by the renderer */
	r = sort_ops(b.plan);
	if (r < 0)
		goto fail;
	free(recreated);
	*out = b.plan;
	return 0;
fail:
	free(recreated);
	fctl_plan_free(b.plan);
	return r;
}

size_t fctl_plan_count_disruptive(const struct fctl_plan *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_ops; i++)
		n += p->ops[i].disruptive && p->ops[i].kind != FCTL_OP_LINK_ADD &&
		     p->ops[i].kind != FCTL_OP_TXSA_ADD && p->ops[i].kind != FCTL_OP_RXSA_ADD;
	return n;
}

static void text_link_attrs(struct fctl_buf *o, const struct fctl_link *l)
{
	char sci[24];

	if (l->kind == FCTL_LINK_VLAN) {
		fctl_buf_printf(o, "vlan %s on %s (%s id %u", l->name, l->parent,
				fctl_vlan_proto_name(l->proto), l->vid);
		if (!fctl_vlan_qos_empty(&l->qos)) {
			fctl_buf_puts(o, ", qos ");
			fctl_vlan_qos_format(&l->qos, o);
		}
	} else {
		const struct fctl_macsec *m = &l->macsec;

		fctl_sci_format(m->sci, sci);
		fctl_buf_printf(o, "macsec %s on %s (sci %s, %s, icv %u, encrypt %s, validate %s",
				l->name, l->parent, sci, fctl_cipher_name(m->cipher), m->icv_len,
				m->encrypt ? "on" : "off", fctl_validate_name(m->validate));
		if (m->replay_protect)
			fctl_buf_printf(o, ", replay window %" PRIu32, m->window);
		else
			fctl_buf_puts(o, ", replay off");
	}
	if (l->has_mtu)
		fctl_buf_printf(o, ", mtu %" PRIu32, l->mtu);
	if (l->has_addrgen)
		fctl_buf_printf(o, ", addrgenmode %s", fctl_addrgen_name(l->addrgen));
	fctl_buf_putc(o, ')');
}

int fctl_plan_to_text(const struct fctl_plan *p, struct fctl_buf *o, bool color)
{
	size_t n_add = 0, n_chg = 0, n_del = 0;
	const char *green = color ? "\033[32m" : "", *yellow = color ? "\033[33m" : "",
		   *red = color ? "\033[31m" : "", *reset = color ? "\033[0m" : "";
	char sci[24], kid[33];

	fctl_buf_printf(o, "host %s:\n", p->host);
	if (!p->n_ops)
		fctl_buf_puts(o, "  no changes\n");
	for (size_t i = 0; i < p->n_ops; i++) {
		const struct fctl_op *op = &p->ops[i];
		const char *mark, *col;

		switch (op->kind) {
		case FCTL_OP_LINK_ADD:
		case FCTL_OP_RXSC_ADD:
		case FCTL_OP_RXSA_ADD:
		case FCTL_OP_TXSA_ADD:
		case FCTL_OP_ADDR_ADD:
			mark = "+";
			col = green;
			n_add++;
			break;
		case FCTL_OP_LINK_DEL:
		case FCTL_OP_RXSC_DEL:
		case FCTL_OP_RXSA_DEL:
		case FCTL_OP_TXSA_DEL:
		case FCTL_OP_ADDR_DEL:
			mark = "-";
			col = red;
			n_del++;
			break;
		default:
			mark = "~";
			col = yellow;
			n_chg++;
		}
		if (op->disruptive)
			col = red;
		fctl_buf_printf(o, "  %s%s ", col, mark);
		fctl_sci_format(op->sci, sci);
		keyid_hex(&op->sa, kid);
		switch (op->kind) {
		case FCTL_OP_LINK_ADD:
			fctl_buf_puts(o, "create ");
			text_link_attrs(o, &op->link);
			break;
		case FCTL_OP_LINK_DEL:
			fctl_buf_printf(o, "delete %s %s",
					op->link.kind == FCTL_LINK_VLAN ? "vlan" : "macsec",
					op->ifname);
			break;
		case FCTL_OP_LINK_CHANGE:
			fctl_buf_printf(o, "change %s %s",
					op->link.kind == FCTL_LINK_VLAN ? "vlan" : "macsec",
					op->ifname);
			break;
		case FCTL_OP_LINK_UP:
			fctl_buf_printf(o, "set %s up", op->ifname);
			break;
		case FCTL_OP_LINK_DOWN:
			fctl_buf_printf(o, "set %s down", op->ifname);
			break;
		case FCTL_OP_RXSC_ADD:
		case FCTL_OP_RXSC_DEL:
		case FCTL_OP_RXSC_UPD:
			fctl_buf_printf(o, "%s rx-sc %s on %s",
					op->kind == FCTL_OP_RXSC_ADD	 ? "add"
					: op->kind == FCTL_OP_RXSC_DEL ? "delete"
								       : "update",
					sci, op->ifname);
			break;
		case FCTL_OP_RXSA_ADD:
		case FCTL_OP_RXSA_DEL:
		case FCTL_OP_RXSA_UPD:
			fctl_buf_printf(o, "%s rx-sa an %u of %s on %s (key id %.8s…)",
					op->kind == FCTL_OP_RXSA_ADD	 ? "add"
					: op->kind == FCTL_OP_RXSA_DEL ? "delete"
								       : "update",
					op->an, sci, op->ifname, kid);
			break;
		case FCTL_OP_TXSA_ADD:
		case FCTL_OP_TXSA_DEL:
		case FCTL_OP_TXSA_UPD:
			fctl_buf_printf(o, "%s tx-sa an %u on %s (key id %.8s…)",
					op->kind == FCTL_OP_TXSA_ADD	 ? "add"
					: op->kind == FCTL_OP_TXSA_DEL ? "delete"
								       : "update",
					op->an, op->ifname, kid);
			break;
		case FCTL_OP_ADDR_ADD:
			fctl_buf_printf(o, "add address %s on %s", op->addr, op->ifname);
			break;
		case FCTL_OP_ADDR_DEL:
			fctl_buf_printf(o, "delete address %s on %s", op->addr, op->ifname);
			break;
		}
		if (op->detail)
			fctl_buf_printf(o, ": %s", op->detail);
		if (op->disruptive)
			fctl_buf_puts(o, " [disruptive]");
		fctl_buf_printf(o, "%s\n", reset);
	}
	fctl_buf_printf(o, "  plan: %zu to add, %zu to change, %zu to delete, %zu disruptive\n",
			n_add, n_chg, n_del, fctl_plan_count_disruptive(p));
	return o->oom ? -ENOMEM : 0;
}

int fctl_plan_to_json(const struct fctl_plan *p, struct fctl_buf *o)
{
	char sci[24], kid[33];

	fctl_buf_puts(o, "{\"host\":");
	fctl_buf_json_str(o, p->host);
	fctl_buf_puts(o, ",\"ops\":[");
	for (size_t i = 0; i < p->n_ops; i++) {
		const struct fctl_op *op = &p->ops[i];

		fctl_buf_printf(o, "%s{\"op\":\"%s\",\"ifname\":", i ? "," : "",
				fctl_op_kind_name(op->kind));
		fctl_buf_json_str(o, op->ifname);
		fctl_buf_printf(o, ",\"disruptive\":%s", op->disruptive ? "true" : "false");
		switch (op->kind) {
		case FCTL_OP_LINK_ADD:
		case FCTL_OP_LINK_DEL:
		case FCTL_OP_LINK_CHANGE:
			fctl_buf_printf(o, ",\"kind\":\"%s\",\"parent\":",
					op->link.kind == FCTL_LINK_VLAN ? "vlan" : "macsec");
			fctl_buf_json_str(o, op->link.parent);
			if (op->link.kind == FCTL_LINK_VLAN) {
				fctl_buf_printf(o, ",\"vid\":%u,\"protocol\":\"%s\"", op->link.vid,
						fctl_vlan_proto_name(op->link.proto));
				if (!fctl_vlan_qos_empty(&op->link.qos))
					fctl_vlan_qos_to_json(&op->link.qos, o);
			} else {
				fctl_sci_format(op->link.macsec.sci, sci);
				fctl_buf_printf(o, ",\"sci\":\"%s\",\"cipher\":\"%s\",\"icv_len\":%u",
						sci, fctl_cipher_name(op->link.macsec.cipher),
						op->link.macsec.icv_len);
			}
			if (op->link.has_mtu)
				fctl_buf_printf(o, ",\"mtu\":%" PRIu32, op->link.mtu);
			if (op->link.has_addrgen && (op->kind == FCTL_OP_LINK_ADD ||
						     (op->changes & FCTL_CHG_ADDRGEN)))
				fctl_buf_printf(o, ",\"addrgenmode\":\"%s\"",
						fctl_addrgen_name(op->link.addrgen));
			break;
		case FCTL_OP_RXSC_ADD:
		case FCTL_OP_RXSC_DEL:
		case FCTL_OP_RXSC_UPD:
			fctl_sci_format(op->sci, sci);
			fctl_buf_printf(o, ",\"sci\":\"%s\",\"active\":%s", sci,
					op->rxsc_active ? "true" : "false");
			break;
		case FCTL_OP_RXSA_ADD:
		case FCTL_OP_RXSA_DEL:
		case FCTL_OP_RXSA_UPD:
		case FCTL_OP_TXSA_ADD:
		case FCTL_OP_TXSA_DEL:
		case FCTL_OP_TXSA_UPD:
			fctl_sci_format(op->sci, sci);
			keyid_hex(&op->sa, kid);
			fctl_buf_printf(o, ",\"sci\":\"%s\",\"an\":%u,\"active\":%s,\"key_id\":\"%s\"",
					sci, op->an, op->sa.active ? "true" : "false", kid);
			break;
		case FCTL_OP_ADDR_ADD:
		case FCTL_OP_ADDR_DEL:
			fctl_buf_puts(o, ",\"address\":");
			fctl_buf_json_str(o, op->addr);
			break;
		default:
			break;
		}
		if (op->detail) {
			fctl_buf_puts(o, ",\"detail\":");
			fctl_buf_json_str(o, op->detail);
		}
		fctl_buf_putc(o, '}');
	}
	fctl_buf_printf(o, "],\"summary\":{\"ops\":%zu,\"disruptive\":%zu}}", p->n_ops,
			fctl_plan_count_disruptive(p));
	return o->oom ? -ENOMEM : 0;
}

int fctl_plan_digest(const struct fctl_plan *p, uint8_t md[32])
{
	struct fctl_buf b = { 0 };
	unsigned int n = 0;
	int r = fctl_plan_to_json(p, &b);

	if (r == 0 && (EVP_Digest(b.data, b.len, md, &n, EVP_sha256(), NULL) != 1 || n != 32))
		r = -ENOMEM;
	fctl_buf_release(&b);
	return r;
}
