// SPDX-License-Identifier: MIT
/* The fabric probe: the probes of a profile, their rounds, the requests to both ends'
 * agents and the verdict of each link (contract in fctl/fabric_probe.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fctl/fabric_probe.h"

static const struct fctl_plink *find_link(const struct fctl_profile *p, const char *name)
{
	for (size_t i = 0; i < p->n_links; i++)
		if (strcmp(p->links[i].name, name) == 0)
			return &p->links[i];
	return NULL;
}

/* host's IPv4 address on VLAN v, without its prefix length: 0, or -ENOENT */
static int vlan_addr(const struct fctl_vlan *v, const char *host, char out[64])
{
	for (size_t i = 0; i < v->n_addrs; i++) {
		const char *c = v->addrs[i].cidr;
		size_t k;

		if (!v->addrs[i].host || !c || strcmp(v->addrs[i].host, host) != 0 ||
		    strchr(c, ':'))
			continue;
		k = strcspn(c, "/");
		if (k >= 64)
			continue;
		memcpy(out, c, k);
		out[k] = '\0';
		return 0;
	}
	return -ENOENT;
}

static unsigned port_mtu(const struct fctl_profile *p, const char *host, const char *port)
{
	const struct fctl_host *h = fctl_profile_find_host(p, host);

	for (size_t i = 0; h && i < h->n_ports; i++)
		if (strcmp(h->ports[i].name, port) == 0)
			return h->ports[i].mtu;
	return 0;
}

static int item_fill(const struct fctl_profile *p, const struct fctl_plink *l,
		     const struct fctl_vlan *v, struct fctl_probe_item *it, char *err,
		     size_t errlen)
{
	memset(it, 0, sizeof(*it));
	snprintf(it->link, sizeof(it->link), "%s", l->name);
	it->vlan = v->id;
	it->protected_ = v->macsec != NULL; /* the link's default is resolved at parse time */
	for (int e = 0; e < 2; e++) {
		char vif[FCTL_IFNAMSIZ + 8], mif[FCTL_IFNAMSIZ + 8];

		snprintf(it->host[e], sizeof(it->host[e]), "%s", l->end[e].host);
		snprintf(it->port[e], sizeof(it->port[e]), "%s", l->end[e].port);
		fctl_vlan_ifnames(v, l->end[e].port, vif, mif);
		snprintf(it->ifname[e], sizeof(it->ifname[e]), "%s", it->protected_ ? mif : vif);
		if (vlan_addr(v, it->host[e], it->addr[e]) < 0) {
			snprintf(err, errlen, "link '%s' VLAN %u: %s has no IPv4 address on it "
				 "(the probe's control connection needs one)", l->name, v->id,
				 it->host[e]);
			return -EINVAL;
		}
	}
	if (v->has_mtu) {
		it->mtu = v->mtu;
	} else {
		/* the profile's default: the port's MTU, less MACsec's 32 bytes when protected */
		unsigned a = port_mtu(p, it->host[0], it->port[0]);
		unsigned b = port_mtu(p, it->host[1], it->port[1]);
		unsigned m = a && b ? (a < b ? a : b) : a ? a : b ? b : 1500;

		it->mtu = it->protected_ ? m - 32 : m;
	}
	return 0;
}

int fctl_probe_item_find(const struct fctl_profile *p, const char *link, unsigned vlan,
			 struct fctl_probe_item *out, char *err, size_t errlen)
{
	const struct fctl_plink *l = find_link(p, link);

	if (!l) {
		snprintf(err, errlen, "no link '%s' in the profile", link);
		return -ENOENT;
	}
	for (size_t i = 0; i < l->n_vlans; i++)
		if (l->vlans[i].id == vlan)
			return item_fill(p, l, &l->vlans[i], out, err, errlen);
	snprintf(err, errlen, "link '%s' has no VLAN %u", link, vlan);
	return -ENOENT;
}

static int plan_link(const struct fctl_profile *p, const struct fctl_plink *l, bool named,
		     bool require_macsec, struct fctl_probe_item **v, size_t *n, char *err,
		     size_t errlen)
{
	for (size_t k = 0; k < l->n_vlans; k++) {
		const struct fctl_vlan *vl = &l->vlans[k];
		struct fctl_probe_item it, *nv;
		int r;

		if (vl->n_addrs == 0 && !named)
			continue; /* no IP on it: nothing to probe over */
		r = item_fill(p, l, vl, &it, err, errlen);
		if (r == -EINVAL && !named)
			continue; /* an IPv6-only VLAN of a link not asked for by name */
		if (r < 0)
			return r;
		if (!it.protected_ && require_macsec) {
			snprintf(err, errlen, "link '%s' VLAN %u has no MACsec: the fabric probe "
				 "proves encrypted traffic (give --allow-cleartext to probe it "
				 "anyway)", l->name, vl->id);
			return -EPERM;
		}
		nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		nv[(*n)++] = it;
	}
	return 0;
}

int fctl_probe_plan(const struct fctl_profile *p, const char *const *names, size_t n_names,
		    bool require_macsec, struct fctl_probe_item **out, size_t *n, char *err,
		    size_t errlen)
{
	struct fctl_probe_item *v = NULL;
	size_t k = 0;
	int r = 0;

	for (size_t i = 0; i < n_names && r == 0; i++) {
		const struct fctl_plink *l = find_link(p, names[i]);

		if (!l) {
			snprintf(err, errlen, "no link '%s' in the profile", names[i]);
			r = -ENOENT;
		} else {
			r = plan_link(p, l, true, require_macsec, &v, &k, err, errlen);
		}
	}
	for (size_t i = 0; i < p->n_links && !n_names && r == 0; i++)
		r = plan_link(p, &p->links[i], false, require_macsec, &v, &k, err, errlen);
	if (r == 0 && k == 0) {
		snprintf(err, errlen, "nothing to probe: no link with an IPv4 address on both ends");
		r = -ENOENT;
	}
	if (r < 0) {
		free(v);
		return r;
	}
	for (size_t i = 0; i < k; i++)
		v[i].ctl_port = FCTL_PROBE_BASE_PORT + (unsigned)i;
	*out = v;
	*n = k;
	return 0;
}

static bool same_port(const struct fctl_probe_item *a, int ea, const struct fctl_probe_item *b,
		      int eb)
{
	return strcmp(a->host[ea], b->host[eb]) == 0 && strcmp(a->port[ea], b->port[eb]) == 0;
}

unsigned fctl_probe_schedule(struct fctl_probe_item *v, size_t n)
{
	unsigned rounds = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned r = 0;

		for (bool clash = true; clash; r += clash) {
			clash = false;
			for (size_t j = 0; j < i && !clash; j++)
				for (int a = 0; a < 2 && v[j].round == r && !clash; a++)
					for (int b = 0; b < 2 && !clash; b++)
						clash = same_port(&v[i], a, &v[j], b);
		}
		v[i].round = r;
		if (r + 1 > rounds)
			rounds = r + 1;
	}
	return rounds;
}
