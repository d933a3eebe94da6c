// SPDX-License-Identifier: MIT
/* One host's part of a profile, cut by lines from its text (contract in fctl/profile_slice.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "fctl/profile_slice.h"
#include "host_index_int.h"
#include "yaml_tree_int.h"

struct span {
	size_t off, len;
};

enum section_kind { SEC_FIXED, SEC_HOSTS, SEC_LINKS };

/* A top-level key and its value: the lines kept whole (`head`: the key and, for
 * hosts and links, what comes before their first entry), then its entries. */
struct section {
	enum section_kind kind;
	struct span head;
	struct span *items; /* SEC_HOSTS: one per profile host, SEC_LINKS: per link */
	size_t n_items;
};

struct fctl_profile_slicer {
	const unsigned char *data;
	size_t len;
	const struct fctl_profile *p;
	struct section *sec;
	size_t n_sec;
	struct name_idx *by_name; /* p's hosts sorted by name (fctl_prof_host_index) */
	size_t n_by_name;
	size_t *link_start;        /* host i's links: links[link_start[i] .. link_start[i + 1]) */
	size_t *links;
};

/* A line break libyaml counts besides "\n" and "\r\n": a lone "\r", NEL (U+0085), LS
 * (U+2028) or PS (U+2029). Lines counted by "\n" alone would be off after one. */
static bool other_break(const unsigned char *d, size_t len, size_t i)
{
	if (d[i] == '\r')
		return i + 1 == len || d[i + 1] != '\n';
	if (d[i] == 0xC2)
		return i + 1 < len && d[i + 1] == 0x85;
	if (d[i] == 0xE2)
		return i + 2 < len && d[i + 1] == 0x80 && (d[i + 2] == 0xA8 || d[i + 2] == 0xA9);
	return false;
}

/* Byte offsets of the lines' starts: v[k] is where line k + 1 begins. -ENOTSUP when
 * the text has a line break other than "\n" (see other_break). */
static int line_starts(const unsigned char *d, size_t len, uint32_t **out, size_t *n)
{
	size_t cnt = 1, k = 1;
	uint32_t *v;

	if (len > UINT32_MAX)
		return -ENOTSUP;
	for (size_t i = 0; i < len; i++) {
		if (other_break(d, len, i))
			return -ENOTSUP;
		cnt += d[i] == '\n';
	}
	v = malloc(cnt * sizeof(*v));
	if (!v)
		return -ENOMEM;
	v[0] = 0;
	for (size_t i = 0; i < len; i++)
		if (d[i] == '\n')
			v[k++] = (uint32_t)(i + 1);
	*out = v;
	*n = cnt;
	return 0;
}

/* Where 1-based line `line` begins; len past the last line. */
static size_t line_off(const uint32_t *ls, size_t nls, size_t len, uint32_t line)
{
	return line >= 1 && line <= nls ? ls[line - 1] : len;
}

/* Whether the bytes of node's line before it are blanks, and (item) one "-" among them
 * followed by a blank: the node begins its line, or begins a block sequence entry. */
static bool begins_line(const unsigned char *d, size_t len, const uint32_t *ls, size_t nls,
			const struct ynode *node, bool item)
{
	size_t off = line_off(ls, nls, len, node->line), end = off + node->col - 1;
	bool dash = false, blank_after = false;

	if (node->col < 1 || end > len)
		return false;
	for (size_t i = off; i < end; i++) {
		if (d[i] == ' ' || d[i] == '\t') {
			blank_after = dash;
		} else if (d[i] == '-' && item && !dash) {
			dash = true;
		} else {
			return false;
		}
	}
	return item ? dash && blank_after : true;
}

static const struct ynode *map_get(const struct ynode *m, const char *key)
{
	for (size_t i = 0; m->type == YNODE_MAP && i + 1 < m->n; i += 2)
		if (m->kids[i]->type == YNODE_SCALAR && strcmp(m->kids[i]->str, key) == 0)
			return m->kids[i + 1];
	return NULL;
}

/* The entries of a hosts or links sequence spanning lines [from, to): one span each. */
static int cut_items(struct fctl_profile_slicer *s, struct section *sec, const struct ynode *key,
		     const struct ynode *seq, size_t from, size_t to, const uint32_t *ls, size_t nls)
{
	size_t want = sec->kind == SEC_HOSTS ? s->p->n_hosts : s->p->n_links;

	if (seq->type != YNODE_SEQ || seq->n != want)
		return -ENOTSUP;
	sec->items = calloc(seq->n, sizeof(*sec->items));
	if (!sec->items)
		return -ENOMEM;
	sec->n_items = seq->n;
	for (size_t i = 0; i < seq->n; i++) {
		const struct ynode *it = seq->kids[i], *name;
		uint32_t prev = i ? seq->kids[i - 1]->line : key->line;
		size_t a, b;

		if (it->type != YNODE_MAP || it->line <= prev ||
		    !begins_line(s->data, s->len, ls, nls, it, true))
			return -ENOTSUP;
		if (sec->kind == SEC_HOSTS &&
		    (!(name = map_get(it, "name")) || name->type != YNODE_SCALAR ||
		     !s->p->hosts[i].name || strcmp(name->str, s->p->hosts[i].name) != 0))
			return -EINVAL;
		a = line_off(ls, nls, s->len, it->line);
		b = i + 1 < seq->n ? line_off(ls, nls, s->len, seq->kids[i + 1]->line) : to;
		if (a < from || b > to || a >= b)
			return -ENOTSUP;
		sec->items[i] = (struct span){ a, b - a };
	}
	sec->head.len = sec->items[0].off - sec->head.off;
	return 0;
}

static int cut_sections(struct fctl_profile_slicer *s, const struct ynode *root)
{
	size_t nls = 0, nk = root->n / 2;
	uint32_t *ls = NULL;
	int r = line_starts(s->data, s->len, &ls, &nls);

	if (r < 0)
		return r;
	/* the lines before the first key (comments, "---"), then one section per key */
	s->sec = calloc(nk + 1, sizeof(*s->sec));
	if (!s->sec) {
		free(ls);
		return -ENOMEM;
	}
	s->n_sec = nk + 1;
	for (size_t k = 0; k < nk && r == 0; k++) {
		const struct ynode *key = root->kids[2 * k], *val = root->kids[2 * k + 1];
		struct section *sec = &s->sec[k + 1];
		size_t from = line_off(ls, nls, s->len, key->line), to;

		if (key->type != YNODE_SCALAR || !begins_line(s->data, s->len, ls, nls, key, false) ||
		    (k && key->line <= root->kids[2 * k - 2]->line)) {
			r = -ENOTSUP;
			break;
		}
		to = k + 1 < nk ? line_off(ls, nls, s->len, root->kids[2 * k + 2]->line) : s->len;
		sec->head = (struct span){ from, to - from };
		if (k == 0)
			s->sec[0].head = (struct span){ 0, from };
		if (strcmp(key->str, "hosts") == 0 && val->type == YNODE_SEQ && val->n)
			sec->kind = SEC_HOSTS;
		else if (strcmp(key->str, "links") == 0 && val->type == YNODE_SEQ && val->n)
			sec->kind = SEC_LINKS;
		if (sec->kind != SEC_FIXED)
			r = cut_items(s, sec, key, val, from, to, ls, nls);
	}
	free(ls);
	return r;
}

/* The hosts by name, and each host's links. */
static int index_hosts(struct fctl_profile_slicer *s)
{
	const struct fctl_profile *p = s->p;
	size_t nh = p->n_hosts, *fill;

	s->by_name = fctl_prof_host_index(p, &s->n_by_name);
	s->link_start = calloc(nh + 1, sizeof(*s->link_start));
	s->links = calloc(2 * p->n_links + 1, sizeof(*s->links));
	fill = calloc(nh + 1, sizeof(*fill));
	if (!s->by_name || !s->link_start || !s->links || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t l = 0; l < p->n_links; l++) {
			long a = p->links[l].end[0].host_idx, b = p->links[l].end[1].host_idx;

			if (a < 0 || b < 0 || (size_t)a >= nh || (size_t)b >= nh) {
				free(fill);
				return -EINVAL; /* not validated: the ends are not resolved */
			}
			for (int e = 0; e < 2 && (e == 0 || b != a); e++) {
				size_t h = (size_t)(e ? b : a);

				if (pass == 0)
					s->link_start[h + 1]++;
				else
					s->links[s->link_start[h] + fill[h]++] = l;
			}
		}
		if (pass == 0)
			for (size_t i = 0; i < nh; i++)
				s->link_start[i + 1] += s->link_start[i];
	}
	free(fill);
	return 0;
}

int fctl_profile_slicer_new(const unsigned char *data, size_t len, const struct fctl_profile *p,
			    struct fctl_profile_slicer **out)
{
	struct fctl_diags d = { 0 };
	struct ynode *root = NULL;
	struct fctl_profile_slicer *s;
	unsigned char md[32];
	unsigned int mdlen = 0;
	int r;

	if (!data || !p || !out)
		return -EINVAL;
	/* the very bytes p was parsed from: entries are matched to p's by their index */
	if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != sizeof(md) ||
	    memcmp(md, p->sha256, sizeof(md)) != 0)
		return -EINVAL;
	r = fctl_ynode_parse(p->file ? p->file : "profile", data, len, &d, &root);
	fctl_diags_release(&d);
	if (r < 0 || !root || root->type != YNODE_MAP) {
		fctl_ynode_free(root);
		return r == -ENOMEM ? r : -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		fctl_ynode_free(root);
		return -ENOMEM;
	}
	*s = (struct fctl_profile_slicer){ .data = data, .len = len, .p = p };
	r = index_hosts(s);
	if (r == 0)
		r = cut_sections(s, root);
	fctl_ynode_free(root);
	if (r < 0) {
		fctl_profile_slicer_free(s);
		return r;
	}
	*out = s;
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v[0..*n) and drops repeats. */
static void sort_unique(size_t *v, size_t *n)
{
	size_t k = 0;

	qsort(v, *n, sizeof(*v), cmp_size);
	for (size_t i = 0; i < *n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	*n = k;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* q's links[j] is p's links[k]: the same name, ends, policy and VLANs. */
static bool same_link(const struct fctl_plink *a, const struct fctl_plink *b)
{
	if (!same_str(a->name, b->name) || !same_str(a->macsec, b->macsec) ||
	    a->n_vlans != b->n_vlans)
		return false;
	for (int e = 0; e < 2; e++)
		if (!same_str(a->end[e].host, b->end[e].host) ||
		    !same_str(a->end[e].port, b->end[e].port))
			return false;
	for (size_t i = 0; i < a->n_vlans; i++)
		if (a->vlans[i].id != b->vlans[i].id || a->vlans[i].n_addrs != b->vlans[i].n_addrs ||
		    !same_str(a->vlans[i].macsec, b->vlans[i].macsec))
			return false;
	return true;
}

/* The slice parses, validates and holds exactly the entries it was cut for: p's
 * hosts[hosts[i]] and links[links[j]], in that order. */
static bool slice_checks(const struct fctl_profile *p, const char *text, size_t len,
			 const size_t *hosts, size_t nh, const size_t *links, size_t nl)
{
	struct fctl_diags d = { 0 };
	struct fctl_profile *q = NULL;
	bool ok = false;

	if (fctl_profile_parse(p->file ? p->file : "profile", (const unsigned char *)text, len, &d,
			       &q) == 0 &&
	    d.n_errors == 0) {
		fctl_profile_validate(q, &d);
		ok = d.n_errors == 0 && q->n_hosts == nh && q->n_links == nl &&
		     q->n_policies == p->n_policies && q->version == p->version &&
		     same_str(q->name, p->name);
		for (size_t i = 0; ok && i < nh; i++)
			ok = same_str(q->hosts[i].name, p->hosts[hosts[i]].name) &&
			     q->hosts[i].n_ports == p->hosts[hosts[i]].n_ports;
		for (size_t j = 0; ok && j < nl; j++)
			ok = same_link(&q->links[j], &p->links[links[j]]);
	}
	fctl_profile_free(q);
	fctl_diags_release(&d);
	return ok;
}

int fctl_profile_slicer_host(const struct fctl_profile_slicer *s, const char *host,
			     struct fctl_buf *out)
{
	const struct fctl_host *hit;
	size_t h, nl, nh = 0, *hosts, given;
	bool oom;
	const size_t *links;
	int r = 0;

	if (!s || !host || !out)
		return -EINVAL;
	hit = fctl_prof_find_host(s->p, s->by_name, s->n_by_name, host);
	if (!hit)
		return -ENOENT;
	h = (size_t)(hit - s->p->hosts);
	links = s->links + s->link_start[h];
	nl = s->link_start[h + 1] - s->link_start[h];
	hosts = malloc((nl + 1) * sizeof(*hosts));
	if (!hosts)
		return -ENOMEM;
	hosts[nh++] = h;
	for (size_t i = 0; i < nl; i++)
		for (int e = 0; e < 2; e++) {
			size_t x = (size_t)s->p->links[links[i]].end[e].host_idx;

			if (x != h) /* at most one end of a link is another host */
				hosts[nh++] = x;
		}
	sort_unique(hosts, &nh);
	given = out->len;
	oom = out->oom;
	for (size_t k = 0; k < s->n_sec; k++) {
		const struct section *sec = &s->sec[k];

		fctl_buf_append(out, s->data + sec->head.off, sec->head.len);
		if (sec->kind == SEC_HOSTS)
			for (size_t i = 0; i < nh; i++)
				fctl_buf_append(out, s->data + sec->items[hosts[i]].off,
						sec->items[hosts[i]].len);
		else if (sec->kind == SEC_LINKS)
			for (size_t i = 0; i < nl; i++) /* links[] is in link order */
				fctl_buf_append(out, s->data + sec->items[links[i]].off,
						sec->items[links[i]].len);
	}
	if (out->oom)
		r = -ENOMEM;
	else if (!slice_checks(s->p, out->data + given, out->len - given, hosts, nh, links, nl))
		r = -EPROTO;
	if (r < 0) {
		out->len = given;
		out->oom = oom;
		if (out->data)
			out->data[given] = '\0';
	}
	free(hosts);
	return r < 0 ? r : (int)(nl > INT32_MAX ? INT32_MAX : nl);
}

void fctl_profile_slicer_free(struct fctl_profile_slicer *s)
{
	if (!s)
		return;
	for (size_t k = 0; k < s->n_sec; k++)
		free(s->sec[k].items);
	free(s->sec);
	free(s->by_name);
	free(s->link_start);
	free(s->links);
	free(s);
}
