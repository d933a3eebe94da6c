// SPDX-License-Identifier: MIT
/* Live state as the engine reads it: the managed links, with their key references. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "fctl/nl.h"

#include "engine_int.h"

struct names {
	const char **v;
	size_t n, cap;
};

static void names_add_state(struct names *nm, const struct fctl_host_state *hs)
{
	for (size_t i = 0; hs && i < hs->n_links; i++) {
		const char **slot = fctl_array_grow(&nm->v, &nm->n, &nm->cap, sizeof(*slot));

		if (slot)
			*slot = hs->links[i].name;
	}
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts the names and drops duplicates: one sort, not a scan of all names per name. */
static void names_finish(struct names *nm)
{
	size_t w = 0;

	if (nm->n > 1)
		qsort(nm->v, nm->n, sizeof(*nm->v), cmp_name);
	for (size_t i = 0; i < nm->n; i++)
		if (!w || strcmp(nm->v[w - 1], nm->v[i]) != 0)
			nm->v[w++] = nm->v[i];
	nm->n = w;
}

/* An XPN SA read from the kernel has its SSCI but not its salt (never dumped). On a link
 * fabricctl made (its KEYID matched a profile's reference) the salt is the one derived
 * from that SA's KEYID, which is what re-installing it on a rollback needs. */
static void salt_from_keyids(struct fctl_macsec *m)
{
	struct fctl_sa *sa;

	if (!fctl_cipher_is_xpn(m->cipher))
		return;
	for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
		for (size_t s = 0; s <= m->n_rxsc; s++) {
			sa = s < m->n_rxsc ? &m->rxsc[s].sa[an] : &m->txsa[an];
			if (sa->present && sa->has_keyid && !sa->has_salt) {
				fctl_salt_from_keyid(sa->keyid, sa->salt);
				sa->has_salt = true;
			}
		}
	}
}

/* Gives live MACsec links the key references of the profiles that made them, matched
 * by KEYID (keys are never read back): rollback can then re-install their SAs. */
static int annotate_keys(struct fctl_host_state *live, const struct fctl_host_state *const *srcs,
			 size_t nsrc)
{
	for (size_t i = 0; i < live->n_links; i++) {
		struct fctl_macsec *m = &live->links[i].macsec;
		const struct fctl_sa *sa = NULL;

		if (live->links[i].kind != FCTL_LINK_MACSEC || m->key.backend)
			continue;
		for (unsigned an = 0; an < FCTL_MAX_AN && !sa; an++)
			if (m->txsa[an].present && m->txsa[an].has_keyid)
				sa = &m->txsa[an];
		for (size_t s = 0; s < m->n_rxsc && !sa; s++)
			for (unsigned an = 0; an < FCTL_MAX_AN && !sa; an++)
				if (m->rxsc[s].sa[an].present && m->rxsc[s].sa[an].has_keyid)
					sa = &m->rxsc[s].sa[an];
		if (!sa)
			continue;
		for (size_t k = 0; k < nsrc; k++) {
			const struct fctl_host_state *src = srcs[k];

			for (size_t j = 0; src && j < src->n_links; j++) {
				const struct fctl_macsec *sm = &src->links[j].macsec;
				uint8_t id[FCTL_KEYID_LEN];

				if (src->links[j].kind != FCTL_LINK_MACSEC || !sm->key.backend)
					continue;
				fctl_keyid_from_ref(&sm->key, id);
				if (memcmp(id, sa->keyid, sizeof(id)) != 0)
					continue;
				m->key.backend = fctl_strdup(sm->key.backend);
				m->key.id = fctl_strdup(sm->key.id);
				m->key.base = fctl_strdup(sm->key.base);
				m->key.version = sm->key.version;
				if (!m->key.backend || !m->key.id)
					return -ENOMEM;
				salt_from_keyids(m);
				goto next;
			}
		}
next:;
	}
	return 0;
}

int fctl_engi_read_live(struct eng *e, const struct fctl_host_state *want,
			const struct fctl_host_state *prev, const struct fctl_host_state *extra,
			struct fctl_host_state **out, char *err, size_t errlen)
{
	struct names nm = { 0 };
	const struct fctl_host_state *srcs[] = { want, prev, extra };
	int r;

	names_add_state(&nm, want);
	if (prev != want)
		names_add_state(&nm, prev);
	if (extra != want && extra != prev)
		names_add_state(&nm, extra);
	names_finish(&nm);
	if (!nm.n && (want || prev || extra)) {
		/* nothing managed: an empty state, without asking the kernel for everything */
		free(nm.v);
		*out = fctl_host_state_new(e->host);
		return *out ? 0 : -ENOMEM;
	}
	r = e->kern.ops->read_state(e->kern.sess, e->host, nm.n ? nm.v : NULL, nm.n, out);
	free(nm.v);
	if (r < 0) {
		snprintf(err, errlen, "cannot read live state: %s", strerror(-r));
		return r;
	}
	r = annotate_keys(*out, srcs, FCTL_ARRAY_SIZE(srcs));
	if (r < 0) {
		fctl_host_state_free(*out);
		*out = NULL;
	}
	return r;
}

/* Links whose names the plan compares but that the profile does not manage must not
 * be touched: keep only live links named in want, prev or extra. */
void fctl_engi_restrict_live(struct fctl_host_state *live, const struct fctl_host_state *want,
			     const struct fctl_host_state *prev, const struct fctl_host_state *extra)
{
	size_t w = 0;

	for (size_t i = 0; i < live->n_links; i++) {
		const char *nm = live->links[i].name;

		if (fctl_host_state_find(want, nm) || fctl_host_state_find(prev, nm) ||
		    fctl_host_state_find(extra, nm)) {
			if (w != i)
				live->links[w] = live->links[i];
			w++;
		} else {
			fctl_link_release(&live->links[i]);
		}
	}
	live->n_links = w;
}

/* Where the profile puts a link on host's port: the link end that names it, else the
 * port's own entry (0:0 when neither is found: a profile of the desired-state cache). */
static struct fctl_pos port_pos(const struct fctl_profile *p, const char *host, const char *port)
{
	const struct fctl_host *h = p ? fctl_profile_find_host(p, host) : NULL;
	struct fctl_pos none = { 0, 0 };

	for (size_t i = 0; p && i < p->n_links; i++)
		for (int k = 0; k < 2; k++) {
			const struct fctl_link_end *end = &p->links[i].end[k];

			if (end->host && end->port && strcmp(end->host, host) == 0 &&
			    strcmp(end->port, port) == 0)
				return end->pos;
		}
	for (size_t i = 0; h && i < h->n_ports; i++)
		if (strcmp(h->ports[i].name, port) == 0)
			return h->ports[i].pos;
	return none;
}

/* The first link plan creates on parent, or NULL. */
static const struct fctl_op *created_on(const struct fctl_plan *plan, const char *parent)
{
	for (size_t i = 0; i < plan->n_ops; i++)
		if (plan->ops[i].kind == FCTL_OP_LINK_ADD &&
		    strcmp(plan->ops[i].link.parent, parent) == 0)
			return &plan->ops[i];
	return NULL;
}

/* The parents of the links plan creates that want does not hold itself (ports, links of
 * other tools), sorted, each once. */
static int created_parents(const struct fctl_plan *plan, const struct fctl_host_state *want,
			   struct names *nm)
{
	for (size_t i = 0; i < plan->n_ops; i++) {
		const char *parent = plan->ops[i].link.parent, **slot;

		if (plan->ops[i].kind != FCTL_OP_LINK_ADD || !parent[0] ||
		    fctl_host_state_find(want, parent))
			continue;
		slot = fctl_array_grow(&nm->v, &nm->n, &nm->cap, sizeof(*slot));
		if (!slot)
			return -ENOMEM;
		*slot = parent;
	}
	names_finish(nm);
	return 0;
}

static int cmp_link(const void *a, const void *b)
{
	const struct fctl_link *x = *(const struct fctl_link *const *)a;
	const struct fctl_link *y = *(const struct fctl_link *const *)b;

	if (x->kind != y->kind)
		return x->kind == FCTL_LINK_VLAN ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The live state's canonical lines (links in canonical order, no packet numbers or
 * ifindexes: what a plan depends on), host and netns first. */
static int live_lines(const struct eng *e, const struct fctl_host_state *live, struct fctl_buf *b)
{
	const struct fctl_link **v = calloc(live->n_links + 1, sizeof(*v));
	int r = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < live->n_links; i++)
		v[i] = &live->links[i];
	qsort(v, live->n_links, sizeof(*v), cmp_link);
	fctl_buf_printf(b, "fabricctl-live-state 1\nhost %s\nnetns %s\n", e->host,
			e->o->netns ? e->o->netns : "-");
	for (size_t i = 0; i < live->n_links && r == 0; i++)
		r = fctl_link_to_lines(v[i], b);
	free(v);
	return r;
}

/* PFC on the PCPs the VLANs' egress maps send, per port, as the port's DCB says (read
 * only): warnings, never part of the seal (docs/profile.md, "qos"). */
static void pfc_findings(struct eng *e, const struct fctl_profile *p,
			 const struct fctl_host_state *want, struct fctl_diags *findings)
{
	const struct fctl_engine_ops *ops = e->kern.ops;
	const char *file = p && p->file ? p->file : "-";

	for (size_t i = 0; ops->dcb_get && want && i < want->n_links; i++) {
		const struct fctl_link *l = &want->links[i];
		struct fctl_pos pos = port_pos(p, e->host, l->parent);
		struct fctl_dcb dcb;
		unsigned int pcps = 0, off;
		char list[32] = "";
		int r;

		for (size_t j = 0; l->kind == FCTL_LINK_VLAN && j < l->qos.n_egress; j++)
			pcps |= 1u << l->qos.egress[j].pcp;
		if (!pcps)
			continue;
		r = ops->dcb_get(e->kern.sess, l->parent, &dcb);
		off = r == 0 && dcb.has_pfc ? pcps & ~(unsigned int)dcb.pfc_en : pcps;
		for (unsigned int b = 0; b < FCTL_VLAN_PCPS; b++)
			if (off & (1u << b))
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%u",
					 list[0] ? "," : "", b);
		if (r < 0)
			fctl_diag_add(findings, FCTL_SEV_WARNING, file, pos.line, pos.col,
				      "pfc-unknown",
				      "PFC on those priorities is the NIC's and the switch's to run",
				      "port '%s' %s: whether PFC runs on PCP %s, which VLAN '%s' "
				      "sends, is not checked",
				      l->parent, r == -EOPNOTSUPP ? "has no DCB (dcbnl)"
								: "did not answer dcbnl",
				      list, l->name);
		else if (off)
			fctl_diag_add(findings, FCTL_SEV_WARNING, file, pos.line, pos.col, "pfc-off",
				      "enable PFC on them (dcb pfc set dev PORT prio-pfc N:on, or the "
				      "NIC's own tool) and on the switch",
				      "PFC is off on PCP %s of port '%s' (dcbnl pfc_en 0x%02x), to which "
				      "VLAN '%s' maps traffic: frames there can be dropped, not paused",
				      list, l->parent, dcb.pfc_en, l->name);
	}
}

int fctl_engi_plan_context(struct eng *e, const struct fctl_profile *p,
			   const struct fctl_host_state *live, const struct fctl_host_state *want,
			   const struct fctl_plan *plan, struct fctl_diags *findings,
			   struct fctl_plan_seal *seal)
{
	struct names nm = { 0 };
	struct fctl_buf b = { 0 };
	unsigned int n = 0;
	int r = live_lines(e, live, &b);

	if (r == 0)
		r = created_parents(plan, want, &nm);
	for (size_t i = 0; r == 0 && i < nm.n; i++) {
		const struct fctl_engine_ops *ops = e->kern.ops;
		int ex = ops->link_exists ? ops->link_exists(e->kern.sess, nm.v[i]) : 1;
		const struct fctl_op *op = created_on(plan, nm.v[i]);
		struct fctl_pos pos = port_pos(p, e->host, nm.v[i]);

		if (ex < 0) {
			r = ex;
			break;
		}
		fctl_buf_printf(&b, "parent %s %s\n", nm.v[i], ex ? "present" : "absent");
		if (!ex)
			fctl_diag_add(findings, FCTL_SEV_WARNING, p && p->file ? p->file : "-",
				      pos.line, pos.col, "parent-missing",
				      "apply refuses such a plan; check the port's name against "
				      "'ip -br link' on the host",
				      "host '%s' has no device '%s': the plan creates %s '%s' on it, "
				      "which the kernel refuses",
				      e->host, nm.v[i],
				      op->link.kind == FCTL_LINK_VLAN ? "VLAN" : "MACsec link",
				      op->ifname);
	}
	if (r == 0)
		pfc_findings(e, p, want, findings);
	if (r == 0 && b.oom)
		r = -ENOMEM;
	if (r == 0 && (EVP_Digest(b.data, b.len, seal->live_sha256, &n, EVP_sha256(), NULL) != 1 ||
		       n != 32))
		r = -ENOMEM;
	if (r == 0)
		r = fctl_plan_digest(plan, seal->plan_sha256);
	free(nm.v);
	fctl_buf_release(&b);
	return r;
}
