/* SPDX-License-Identifier: MIT */
/* Neighbour entries carried from one link to another, so that an address moved between two SecYs of one port finds its peers resolved. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "fctl/util.h"
#include "nl_int.h"

/* The states in which an entry's link-layer address is known (the kernel's NUD_VALID) */
#define NEIGH_KNOWN (NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE | NUD_DELAY)

struct neigh_ent {
	uint8_t family;
	uint8_t dst[16];
	uint8_t mac[6];
};

struct neigh_dump {
	int ifindex;
	const uint8_t (*macs)[6];
	size_t n_macs;
	struct neigh_ent *v;
	size_t n, cap;
};

static bool mac_listed(const uint8_t (*macs)[6], size_t n, const uint8_t *mac)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(macs[i], mac, 6) == 0)
			return true;
	return false;
}

static int on_neigh(struct nl_msg *msg, void *arg)
{
	struct neigh_dump *d = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct nlattr *tb[NDA_MAX + 1];
	const struct ndmsg *nd;
	struct neigh_ent *e;
	int alen;

	if (h->nlmsg_type != RTM_NEWNEIGH || nlmsg_parse(h, sizeof(*nd), tb, NDA_MAX, NULL) < 0)
		return NL_OK;
	nd = nlmsg_data(h);
	if (nd->ndm_ifindex != d->ifindex || !(nd->ndm_state & NEIGH_KNOWN) ||
	    (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6) || !tb[NDA_DST] ||
	    !tb[NDA_LLADDR] || nla_len(tb[NDA_LLADDR]) != 6)
		return NL_OK;
	alen = nd->ndm_family == AF_INET ? 4 : 16;
	if (nla_len(tb[NDA_DST]) != alen || !mac_listed(d->macs, d->n_macs, nla_data(tb[NDA_LLADDR])))
		return NL_OK;
	e = fctl_array_grow(&d->v, &d->n, &d->cap, sizeof(*d->v));
	if (!e)
		return -ENOMEM;
	memset(e, 0, sizeof(*e));
	e->family = nd->ndm_family;
	memcpy(e->dst, nla_data(tb[NDA_DST]), (size_t)alen);
	memcpy(e->mac, nla_data(tb[NDA_LLADDR]), 6);
	return NL_OK;
}

int fctl_nl_build_neigh_msg(int family, const uint8_t *dst, const uint8_t mac[6], int ifindex,
			    struct nl_msg **out)
{
	struct ndmsg nd = { 0 };
	struct nl_msg *msg;

	if ((family != AF_INET && family != AF_INET6) || !dst || !mac || ifindex <= 0)
		return -EINVAL;
	nd.ndm_family = (uint8_t)family;
	nd.ndm_ifindex = ifindex;
	nd.ndm_state = NUD_STALE;
	/* EXCL: an entry the link has already (the kernel resolved it) is the better one */
	msg = nlmsg_alloc_simple(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_EXCL);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &nd, sizeof(nd), NLMSG_ALIGNTO) < 0 ||
	    nla_put(msg, NDA_DST, family == AF_INET ? 4 : 16, dst) < 0 ||
	    nla_put(msg, NDA_LLADDR, 6, mac) < 0) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	*out = msg;
	return 0;
}

int fctl_nl_neigh_copy(struct fctl_nl *nl, const char *from, const char *to,
		       const uint8_t (*macs)[6], size_t n_macs, struct fctl_nl_err *err)
{
	struct neigh_dump d = { .macs = macs, .n_macs = n_macs };
	struct ndmsg req = { .ndm_family = AF_UNSPEC };
	struct nl_msg *msg = NULL;
	struct fctl_nli_link_info from_info, to_info;
	char what[2 * FCTL_IFNAMSIZ + 32];
	int copied = 0, r;

	fctl_nli_err_clear(err);
	if (!nl || !from || !to || (n_macs && !macs))
		return -EINVAL;
	if (n_macs == 0)
		return 0;
	snprintf(what, sizeof(what), "copy-neighbours %s -> %s", from, to);
	/* both links asked of the kernel, not the ifindex map: SecYs come and go by
	 * wpa_supplicant's hand, which the map never hears of (one round trip each, once
	 * per rotation) */
	r = fctl_nli_link_get(nl, from, &from_info, err);
	if (r < 0)
		return r;
	r = fctl_nli_link_get(nl, to, &to_info, err);
	if (r < 0)
		return r;
	d.ifindex = from_info.ifindex;
	/* a dump of every neighbour (the kernel filters by ifindex only with strict checks
	 * on, which libnl's socket does not ask for): on_neigh keeps this link's */
	req.ndm_ifindex = d.ifindex;
	msg = nlmsg_alloc_simple(RTM_GETNEIGH, NLM_F_DUMP);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &req, sizeof(req), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	r = fctl_nli_xact(nl, nl->rt, msg, false, on_neigh, &d, err);
	nlmsg_free(msg);
	if (r < 0) {
		fctl_nli_err_set(err, r, what);
		goto out;
	}
	for (size_t i = 0; i < d.n; i++) {
		r = fctl_nl_build_neigh_msg(d.v[i].family, d.v[i].dst, d.v[i].mac, to_info.ifindex, &msg);
		if (r < 0) {
			fctl_nli_err_set(err, r, what);
			goto out;
		}
		r = fctl_nli_xact(nl, nl->rt, msg, true, NULL, NULL, err);
		fctl_nl_msg_free(msg);
		if (r == -EEXIST) {
			fctl_nli_err_clear(err);
			continue;
		}
		if (r < 0) {
			fctl_nli_err_set(err, r, what);
			goto out;
		}
		copied++;
	}
	r = copied;
out:
	free(d.v);
	return r;
}
