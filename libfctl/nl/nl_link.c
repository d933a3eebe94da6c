// SPDX-License-Identifier: MIT
/*
 * Links and addresses over rtnetlink: message builders, their execution, and
 * the live-state reader (libnl-route link and address caches).
 *
 * MACsec link messages are built by hand: libnl 3.7's macsec link module sends
 * WINDOW only together with REPLAY_PROTECT, refuses offload 2, and resends the
 * cipher and SCI when a read-back object is used for a change; a message holding
 * exactly the fields of the op avoids all three.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/if_addr.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_macsec.h>
#include <linux/rtnetlink.h>
#include <netlink/cache.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/inet6.h>
#include <netlink/route/link/macsec.h>
#include <netlink/route/link/vlan.h>

#include "nl_int.h"

/* --- builders --- */

static const char *op_ifname(const struct fctl_op *op)
{
	return op->ifname[0] ? op->ifname : op->link.name;
}

static int link_msg_new(int type, int flags, int ifindex, unsigned int iff, unsigned int change,
			struct nl_msg **out)
{
	struct ifinfomsg ifi = {
		.ifi_family = AF_UNSPEC,
		.ifi_index = ifindex,
		.ifi_flags = iff,
		.ifi_change = change,
	};
	struct nl_msg *msg;

	msg = nlmsg_alloc_simple(type, flags);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	*out = msg;
	return 0;
}

/* Names the link: by index when known, else by IFLA_IFNAME (the kernel looks
 * RTM_NEWLINK/RTM_DELLINK targets up by name when ifi_index is 0). */
static int put_target(struct nl_msg *msg, const struct fctl_op *op, int ifindex)
{
	if (ifindex > 0)
		return 0;
	return nla_put_string(msg, IFLA_IFNAME, op_ifname(op)) < 0 ? -EMSGSIZE : 0;
}

#define MACSEC_ALL_CHG                                                                          \
	(FCTL_CHG_WINDOW | FCTL_CHG_REPLAY | FCTL_CHG_VALIDATE | FCTL_CHG_ENCRYPT |             \
	 FCTL_CHG_PROTECT | FCTL_CHG_SEND_SCI | FCTL_CHG_END_STATION | FCTL_CHG_SCB |           \
	 FCTL_CHG_ENCODING_SA | FCTL_CHG_OFFLOAD)

/* IFLA_INFO_DATA for a MACsec link: on add everything (identity included), on
 * change only the fields in chg. */
static int put_macsec_data(struct nl_msg *msg, const struct fctl_macsec *m, unsigned int chg,
			   bool add)
{
	struct nlattr *data;
	int r = -EMSGSIZE;

	if (m->encoding_sa >= FCTL_MAX_AN || m->validate > FCTL_VALIDATE_STRICT ||
	    m->offload > FCTL_OFFLOAD_MAC)
		return -EINVAL;
	data = nla_nest_start(msg, IFLA_INFO_DATA);
	if (!data)
		return -EMSGSIZE;
	if (add) {
		if (m->sci) {
			if (nla_put_u64(msg, IFLA_MACSEC_SCI, fctl_nli_sci_to_wire(m->sci)) < 0)
				goto out;
		} else if (m->has_port) {
			/* the kernel takes the port in network order */
			if (nla_put_u16(msg, IFLA_MACSEC_PORT, htons(m->port)) < 0)
				goto out;
		}
		if (nla_put_u64(msg, IFLA_MACSEC_CIPHER_SUITE, fctl_cipher_kernel_id(m->cipher)) < 0)
			goto out;
		if (m->icv_len && nla_put_u8(msg, IFLA_MACSEC_ICV_LEN, m->icv_len) < 0)
			goto out;
		chg = MACSEC_ALL_CHG;
		if (m->offload == FCTL_OFFLOAD_OFF)
			chg &= ~(unsigned int)FCTL_CHG_OFFLOAD; /* off is the default */
		if (!m->replay_protect && !m->window)
			chg &= ~(unsigned int)FCTL_CHG_WINDOW;
	}
	/* The kernel refuses replay protection on without a window in the same message. */
	if ((chg & FCTL_CHG_REPLAY) && m->replay_protect)
		chg |= FCTL_CHG_WINDOW;

	if ((chg & FCTL_CHG_ENCRYPT) && nla_put_u8(msg, IFLA_MACSEC_ENCRYPT, m->encrypt) < 0)
		goto out;
	if ((chg & FCTL_CHG_PROTECT) && nla_put_u8(msg, IFLA_MACSEC_PROTECT, m->protect) < 0)
		goto out;
	if ((chg & FCTL_CHG_SEND_SCI) && nla_put_u8(msg, IFLA_MACSEC_INC_SCI, m->send_sci) < 0)
		goto out;
	if ((chg & FCTL_CHG_END_STATION) && nla_put_u8(msg, IFLA_MACSEC_ES, m->end_station) < 0)
		goto out;
	if ((chg & FCTL_CHG_SCB) && nla_put_u8(msg, IFLA_MACSEC_SCB, m->scb) < 0)
		goto out;
	if ((chg & FCTL_CHG_REPLAY) &&
	    nla_put_u8(msg, IFLA_MACSEC_REPLAY_PROTECT, m->replay_protect) < 0)
		goto out;
	if ((chg & FCTL_CHG_WINDOW) && nla_put_u32(msg, IFLA_MACSEC_WINDOW, m->window) < 0)
		goto out;
	if ((chg & FCTL_CHG_VALIDATE) && nla_put_u8(msg, IFLA_MACSEC_VALIDATION, m->validate) < 0)
		goto out;
	if ((chg & FCTL_CHG_ENCODING_SA) &&
	    nla_put_u8(msg, IFLA_MACSEC_ENCODING_SA, m->encoding_sa) < 0)
		goto out;
	if ((chg & FCTL_CHG_OFFLOAD) && nla_put_u8(msg, IFLA_MACSEC_OFFLOAD, m->offload) < 0)
		goto out;
	nla_nest_end(msg, data);
	r = 0;
out:
	return r;
}

/* Built by hand, as the MACsec link's: the QoS lists exactly as the op holds them. */
static int build_vlan_add(const struct fctl_op *op, int parent_ifindex, struct nl_msg **out)
{
	struct nl_msg *msg = NULL;
	int r;

	r = link_msg_new(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0, 0, 0, &msg);
	if (r < 0)
		return r;
	r = -EMSGSIZE;
	if (nla_put_string(msg, IFLA_IFNAME, op_ifname(op)) < 0 ||
	    nla_put_u32(msg, IFLA_LINK, (uint32_t)parent_ifindex) < 0 ||
	    (op->link.has_mtu && nla_put_u32(msg, IFLA_MTU, op->link.mtu) < 0))
		goto fail;
	r = fctl_nli_put_vlan_data(msg, &op->link, true);
	if (r < 0)
		goto fail;
	*out = msg;
	return 0;
fail:
	fctl_nl_msg_free(msg);
	return r;
}

static int build_macsec_add(const struct fctl_op *op, int parent_ifindex, struct nl_msg **out)
{
	struct nl_msg *msg = NULL;
	struct nlattr *info;
	int r;

	r = link_msg_new(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0, 0, 0, &msg);
	if (r < 0)
		return r;
	r = -EMSGSIZE;
	if (nla_put_string(msg, IFLA_IFNAME, op_ifname(op)) < 0 ||
	    nla_put_u32(msg, IFLA_LINK, (uint32_t)parent_ifindex) < 0)
		goto fail;
	if (op->link.has_mtu && nla_put_u32(msg, IFLA_MTU, op->link.mtu) < 0)
		goto fail;
	info = nla_nest_start(msg, IFLA_LINKINFO);
	if (!info || nla_put_string(msg, IFLA_INFO_KIND, "macsec") < 0)
		goto fail;
	r = put_macsec_data(msg, &op->link.macsec, 0, true);
	if (r < 0)
		goto fail;
	nla_nest_end(msg, info);
	*out = msg;
	return 0;
fail:
	fctl_nl_msg_free(msg);
	return r;
}

/* IFLA_AF_SPEC { AF_INET6 { IFLA_INET6_ADDR_GEN_MODE } }: how the kernel makes the
 * link's IPv6 addresses (none: not even the link-local one). */
static int put_addrgen(struct nl_msg *msg, enum fctl_addrgen mode)
{
	struct nlattr *spec, *in6;

	spec = nla_nest_start(msg, IFLA_AF_SPEC);
	if (!spec)
		return -EMSGSIZE;
	in6 = nla_nest_start(msg, AF_INET6);
	if (!in6 || nla_put_u8(msg, IFLA_INET6_ADDR_GEN_MODE, (uint8_t)mode) < 0)
		return -EMSGSIZE;
	nla_nest_end(msg, in6);
	nla_nest_end(msg, spec);
	return 0;
}

static int build_link_change(const struct fctl_op *op, int ifindex, struct nl_msg **out)
{
	struct nl_msg *msg = NULL;
	unsigned int macsec_chg = op->changes & MACSEC_ALL_CHG;
	int r;

	if (op->changes & ~(MACSEC_ALL_CHG | FCTL_CHG_MTU | FCTL_CHG_ADDRGEN | FCTL_CHG_QOS))
		return -EINVAL;
	if ((macsec_chg && op->link.kind != FCTL_LINK_MACSEC) ||
	    ((op->changes & FCTL_CHG_QOS) && op->link.kind != FCTL_LINK_VLAN))
		return -EINVAL;
	if (!op->changes)
		return -EINVAL;
	if ((op->changes & FCTL_CHG_ADDRGEN) &&
	    (!op->link.has_addrgen || op->link.addrgen > FCTL_ADDRGEN_RANDOM))
		return -EINVAL;
	r = link_msg_new(RTM_NEWLINK, 0, ifindex, 0, 0, &msg);
	if (r < 0)
		return r;
	r = put_target(msg, op, ifindex);
	if (r < 0)
		goto fail;
	r = -EMSGSIZE;
	if ((op->changes & FCTL_CHG_MTU) && nla_put_u32(msg, IFLA_MTU, op->link.mtu) < 0)
		goto fail;
	if (macsec_chg) {
		struct nlattr *info = nla_nest_start(msg, IFLA_LINKINFO);

		if (!info || nla_put_string(msg, IFLA_INFO_KIND, "macsec") < 0)
			goto fail;
		r = put_macsec_data(msg, &op->link.macsec, macsec_chg, false);
		if (r < 0)
			goto fail;
		nla_nest_end(msg, info);
	}
	if (op->changes & FCTL_CHG_QOS) {
		r = fctl_nli_put_vlan_data(msg, &op->link, false);
		if (r < 0)
			goto fail;
	}
	if (op->changes & FCTL_CHG_ADDRGEN) {
		r = put_addrgen(msg, op->link.addrgen);
		if (r < 0)
			goto fail;
	}
	*out = msg;
	return 0;
fail:
	fctl_nl_msg_free(msg);
	return r;
}

int fctl_nl_build_link_msg(const struct fctl_op *op, int ifindex, int parent_ifindex,
			   struct nl_msg **out)
{
	struct nl_msg *msg = NULL;
	int r;

	if (!op_ifname(op)[0] || strnlen(op_ifname(op), FCTL_IFNAMSIZ) >= FCTL_IFNAMSIZ)
		return -EINVAL;
	switch (op->kind) {
	case FCTL_OP_LINK_ADD:
		if (parent_ifindex <= 0)
			return -EINVAL;
		if (op->link.kind == FCTL_LINK_VLAN)
			return build_vlan_add(op, parent_ifindex, out);
		return build_macsec_add(op, parent_ifindex, out);
	case FCTL_OP_LINK_CHANGE:
		return build_link_change(op, ifindex, out);
	case FCTL_OP_LINK_UP:
	case FCTL_OP_LINK_DOWN:
		r = link_msg_new(RTM_NEWLINK, 0, ifindex, op->kind == FCTL_OP_LINK_UP ? IFF_UP : 0,
				 IFF_UP, &msg);
		break;
	case FCTL_OP_LINK_DEL:
		r = link_msg_new(RTM_DELLINK, 0, ifindex, 0, 0, &msg);
		break;
	default:
		return -EINVAL;
	}
	if (r < 0)
		return r;
	r = put_target(msg, op, ifindex);
	if (r < 0) {
		fctl_nl_msg_free(msg);
		return r;
	}
	*out = msg;
	return 0;
}

/* "10.0.0.1/24", "fd00::1/64"; a missing /len means a host address. */
static int parse_cidr(const char *s, int *family, uint8_t addr[16], unsigned int *plen)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	uint64_t len;
	int fam;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	fam = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(fam, buf, addr) != 1)
		return -EINVAL;
	len = fam == AF_INET ? 32 : 128;
	if (slash) {
		uint64_t v;

		if (fctl_parse_u64(slash + 1, &v) < 0 || v > len || (slash[1] == '0' && slash[2]))
			return -EINVAL;
		len = v;
	}
	*family = fam;
	*plen = (unsigned int)len;
	return 0;
}

int fctl_nl_build_addr_msg(const struct fctl_op *op, int ifindex, struct nl_msg **out)
{
	struct ifaddrmsg ifa = { 0 };
	struct nl_msg *msg;
	uint8_t addr[16];
	unsigned int plen;
	int family, alen, r;

	if ((op->kind != FCTL_OP_ADDR_ADD && op->kind != FCTL_OP_ADDR_DEL) || !op->addr ||
	    ifindex <= 0)
		return -EINVAL;
	r = parse_cidr(op->addr, &family, addr, &plen);
	if (r < 0)
		return r;
	alen = family == AF_INET ? 4 : 16;
	ifa.ifa_family = (uint8_t)family;
	ifa.ifa_prefixlen = (uint8_t)plen;
	ifa.ifa_scope = RT_SCOPE_UNIVERSE;
	ifa.ifa_index = (uint32_t)ifindex;
	if (op->kind == FCTL_OP_ADDR_ADD && op->addr_nodad)
		ifa.ifa_flags = IFA_F_NODAD;
	msg = nlmsg_alloc_simple(op->kind == FCTL_OP_ADDR_ADD ? RTM_NEWADDR : RTM_DELADDR,
				 op->kind == FCTL_OP_ADDR_ADD ? NLM_F_CREATE | NLM_F_EXCL : 0);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0 ||
	    nla_put(msg, IFA_LOCAL, alen, addr) < 0 || nla_put(msg, IFA_ADDRESS, alen, addr) < 0) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	*out = msg;
	return 0;
}

/* --- execution --- */

void fctl_nli_link_what(const struct fctl_op *op, char *buf, size_t n)
{
	if (op->addr)
		snprintf(buf, n, "%s %s %s", fctl_op_kind_name(op->kind), op_ifname(op), op->addr);
	else
		snprintf(buf, n, "%s %s", fctl_op_kind_name(op->kind), op_ifname(op));
}

/* Builds op's message; ifindex is the link's own (ADDR) or its parent's (LINK_ADD),
 * found by name in the ifindex map or the kernel. */
int fctl_nli_link_prepare(struct fctl_nl *nl, const struct fctl_op *op, const char *what,
			  bool fresh, bool *cached, struct nl_msg **out, struct fctl_nl_err *err)
{
	struct fctl_nli_link_info info;
	struct nl_msg *msg = NULL;
	const char *target = NULL;
	int ifindex = 0, r;

	*cached = false;
	if (op->kind == FCTL_OP_LINK_ADD)
		target = op->link.parent;
	else if (op->kind == FCTL_OP_ADDR_ADD || op->kind == FCTL_OP_ADDR_DEL)
		target = op_ifname(op);
	if (target && fresh) {
		r = fctl_nli_link_get(nl, target, &info, err);
		if (r < 0)
			return r;
		ifindex = info.ifindex;
	} else if (target) {
		r = fctl_nli_ifindex(nl, target, &ifindex, cached, err);
		if (r < 0)
			return r;
	}
	switch (op->kind) {
	case FCTL_OP_LINK_ADD:
		r = fctl_nl_build_link_msg(op, 0, ifindex, &msg);
		break;
	case FCTL_OP_LINK_CHANGE:
	case FCTL_OP_LINK_UP:
	case FCTL_OP_LINK_DOWN:
	case FCTL_OP_LINK_DEL:
		/* by name (IFLA_IFNAME): no ifindex to look up */
		r = fctl_nl_build_link_msg(op, 0, 0, &msg);
		break;
	case FCTL_OP_ADDR_ADD:
	case FCTL_OP_ADDR_DEL:
		r = fctl_nl_build_addr_msg(op, ifindex, &msg);
		break;
	default:
		r = -EINVAL;
		break;
	}
	if (r < 0) {
		fctl_nli_err_set(err, r, what);
		return r;
	}
	if (op->kind == FCTL_OP_LINK_ADD)
		fctl_nli_ifmap_link_added(nl, op_ifname(op));
	*out = msg;
	return 0;
}

/* Builds and sends op's message. */
static int exec_link_once(struct fctl_nl *nl, const struct fctl_op *op, const char *what,
			  bool fresh, bool *cached, struct fctl_nl_err *err)
{
	struct nl_msg *msg = NULL;
	int r = fctl_nli_link_prepare(nl, op, what, fresh, cached, &msg, err);

	if (r < 0)
		return r;
	r = fctl_nli_xact(nl, nl->rt, msg, true, NULL, NULL, err);
	fctl_nl_msg_free(msg);
	/* a delete frees an ifindex the kernel may hand out again, and takes the
	 * MACsec links above a VLAN with it: forget every cached ifindex */
	if (op->kind == FCTL_OP_LINK_DEL)
		fctl_nli_ifmap_invalidate(nl);
	if (r < 0)
		fctl_nli_err_set(err, r, what);
	return r;
}

int fctl_nli_addrgen_msg(const struct fctl_op *op, struct nl_msg **msg)
{
	struct fctl_op chg = *op; /* shallow: nothing of it is freed here */

	chg.kind = FCTL_OP_LINK_CHANGE;
	chg.changes = FCTL_CHG_ADDRGEN;
	return fctl_nl_build_link_msg(&chg, 0, 0, msg);
}

/* The IPv6 address generation of a link just created. The kernel ignores IFLA_AF_SPEC in
 * a create request, so a change of its own sets it, while the link is still down: the
 * kernel makes the link-local address only when the link comes up. */
static int set_new_addrgen(struct fctl_nl *nl, const struct fctl_op *op, const char *what,
			   struct fctl_nl_err *err)
{
	struct nl_msg *msg = NULL;
	char w[128];
	int r;

	snprintf(w, sizeof(w), "%s: addrgenmode %s", what, fctl_addrgen_name(op->link.addrgen));
	r = fctl_nli_addrgen_msg(op, &msg);
	if (r == 0) {
		r = fctl_nli_xact(nl, nl->rt, msg, true, NULL, NULL, err);
		fctl_nl_msg_free(msg);
	}
	/* no IPv6 on the link (disabled, or an MTU below 1280): no address can be made on it,
	 * which is what "none" asks for */
	if (r == -EAFNOSUPPORT && op->link.addrgen == FCTL_ADDRGEN_NONE)
		return 0;
	if (r < 0)
		fctl_nli_err_set(err, r, w);
	return r;
}

/* After a link's address generation went to none: removes every IPv6 address it still
 * has, the link-local one the kernel made before included (a mode change removes none).
 * The live state does not hold the link-local address of a link that was no carrier. */
static int flush_addrs6(struct fctl_nl *nl, const struct fctl_op *op, const char *what,
			struct fctl_nl_err *err)
{
	struct fctl_nli_link_info info;
	struct nl_cache *cache = NULL;
	struct nl_object *o;
	char w[128];
	int r;

	snprintf(w, sizeof(w), "%s: removing its IPv6 addresses", what);
	r = fctl_nli_link_get(nl, op_ifname(op), &info, err);
	if (r < 0)
		return r;
	nl->stats.round_trips++;
	r = rtnl_addr_alloc_cache(nl->rt, &cache);
	if (r < 0) {
		r = fctl_nl_errno(r);
		fctl_nli_err_set(err, r, w);
		return r;
	}
	for (o = nl_cache_get_first(cache); o && r == 0; o = nl_cache_get_next(o)) {
		struct rtnl_addr *a = (struct rtnl_addr *)o;
		struct nl_msg *msg = NULL;

		if (rtnl_addr_get_ifindex(a) != info.ifindex || rtnl_addr_get_family(a) != AF_INET6)
			continue;
		r = rtnl_addr_build_delete_request(a, 0, &msg);
		if (r < 0) {
			r = fctl_nl_errno(r);
			break;
		}
		r = fctl_nli_xact(nl, nl->rt, msg, true, NULL, NULL, err);
		nlmsg_free(msg);
		if (r == -EADDRNOTAVAIL)
			r = 0; /* gone meanwhile (a failed DAD) */
	}
	nl_cache_free(cache);
	if (r < 0)
		fctl_nli_err_set(err, r, w);
	return r;
}

int fctl_nli_exec_link(struct fctl_nl *nl, const struct fctl_op *op, struct fctl_nl_err *err)
{
	char what[96];
	bool cached;
	int r;

	fctl_nli_link_what(op, what, sizeof(what));
	r = exec_link_once(nl, op, what, false, &cached, err);
	if (r == -ENODEV && cached) {
		/* the cached ifindex may be stale: drop the map, ask the kernel, once */
		fctl_nli_ifmap_invalidate(nl);
		fctl_nli_err_clear(err);
		r = exec_link_once(nl, op, what, true, &cached, err);
	}
	if (r == 0 && op->kind == FCTL_OP_LINK_ADD && op->link.has_addrgen)
		r = set_new_addrgen(nl, op, what, err);
	if (r == 0 && op->kind == FCTL_OP_LINK_CHANGE && (op->changes & FCTL_CHG_ADDRGEN) &&
	    op->link.addrgen == FCTL_ADDRGEN_NONE)
		r = flush_addrs6(nl, op, what, err);
	return r < 0 ? r : 0;
}

/* --- live state --- */

struct cand {
	struct rtnl_link *l;
	enum fctl_link_kind kind;
	bool want;
};

/* Link index of a dump, by ifindex: parents and addresses find their link
 * without a scan of every link each (thousands of links make that O(n^2)). */
struct ixent {
	int ifindex;
	const char *name;
	size_t cand; /* index into cands, or SIZE_MAX */
};

static int cmp_ixent(const void *a, const void *b)
{
	const struct ixent *x = a, *y = b;

	return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

static const struct ixent *ix_find(const struct ixent *v, size_t n, int ifindex)
{
	struct ixent key = { .ifindex = ifindex };

	return n ? bsearch(&key, v, n, sizeof(*v), cmp_ixent) : NULL;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool name_listed(const char *name, const char *const *sorted, size_t n)
{
	return n && bsearch(&name, sorted, n, sizeof(*sorted), cmp_strp) != NULL;
}

static void copy_name(char dst[FCTL_IFNAMSIZ], const char *src)
{
	snprintf(dst, FCTL_IFNAMSIZ, "%s", src ? src : "");
}

static int fill_macsec(struct rtnl_link *l, struct fctl_macsec *m)
{
	uint64_t u64;
	uint32_t u32;
	uint16_t u16;
	uint8_t u8;
	enum macsec_validation_type v;
	int r;

	if (rtnl_link_macsec_get_sci(l, &u64) == 0) {
		m->sci = fctl_nli_sci_from_wire(u64);
		/* PORT is never reported: it is the low 16 bits of the SCI */
		m->port = (uint16_t)(m->sci & 0xffff);
		m->has_port = true;
	}
	if (rtnl_link_macsec_get_cipher_suite(l, &u64) == 0) {
		/* GCM-AES-128 comes back as the legacy id 0x0080020001000001 */
		r = fctl_cipher_from_kernel_id(u64, &m->cipher);
		if (r < 0)
			return r;
	}
	if (rtnl_link_macsec_get_icv_len(l, &u16) == 0)
		m->icv_len = (uint8_t)u16;
	if (rtnl_link_macsec_get_encrypt(l, &u8) == 0)
		m->encrypt = u8;
	if (rtnl_link_macsec_get_protect(l, &u8) == 0)
		m->protect = u8;
	if (rtnl_link_macsec_get_replay_protect(l, &u8) == 0)
		m->replay_protect = u8;
	/* WINDOW is only reported with replay protection on */
	if (m->replay_protect && rtnl_link_macsec_get_window(l, &u32) == 0)
		m->window = u32;
	if (rtnl_link_macsec_get_validation_type(l, &v) == 0)
		m->validate = v == MACSEC_VALIDATE_STRICT	? FCTL_VALIDATE_STRICT
			      : v == MACSEC_VALIDATE_CHECK ? FCTL_VALIDATE_CHECK
							   : FCTL_VALIDATE_DISABLED;
	if (rtnl_link_macsec_get_send_sci(l, &u8) == 0)
		m->send_sci = u8;
	if (rtnl_link_macsec_get_end_station(l, &u8) == 0)
		m->end_station = u8;
	if (rtnl_link_macsec_get_scb(l, &u8) == 0)
		m->scb = u8;
	if (rtnl_link_macsec_get_offload(l, &u8) == 0)
		m->offload = u8 == MACSEC_OFFLOAD_PHY	? FCTL_OFFLOAD_PHY
			     : u8 == MACSEC_OFFLOAD_MAC ? FCTL_OFFLOAD_MAC
							: FCTL_OFFLOAD_OFF;
	if (rtnl_link_macsec_get_encoding_sa(l, &u8) == 0)
		m->encoding_sa = u8;
	return 0;
}

static int fill_link(struct fctl_host_state *hs, const struct ixent *ix, size_t n_ix,
		     const struct cand *c)
{
	const struct ixent *p;
	struct fctl_link *fl;
	uint8_t mode;
	int pidx;

	fl = fctl_host_state_add_link(hs, c->kind, rtnl_link_get_name(c->l));
	if (!fl)
		return -ENOMEM;
	copy_name(fl->name, rtnl_link_get_name(c->l));
	fl->kind = c->kind;
	fl->ifindex = rtnl_link_get_ifindex(c->l);
	fl->mtu = rtnl_link_get_mtu(c->l);
	fl->has_mtu = true;
	fl->up = (rtnl_link_get_flags(c->l) & IFF_UP) != 0;
	/* absent when the link has no IPv6 (no inet6 data in the dump) */
	if (rtnl_link_inet6_get_addr_gen_mode(c->l, &mode) == 0 && mode <= FCTL_ADDRGEN_RANDOM) {
		fl->addrgen = (enum fctl_addrgen)mode;
		fl->has_addrgen = true;
	}
	pidx = rtnl_link_get_link(c->l);
	if (pidx > 0 && (p = ix_find(ix, n_ix, pidx)) && p->name)
		copy_name(fl->parent, p->name);
	if (c->kind == FCTL_LINK_VLAN) {
		int proto = rtnl_link_vlan_get_protocol(c->l);

		fl->vid = (uint16_t)rtnl_link_vlan_get_id(c->l);
		fl->proto = proto > 0 && ntohs((uint16_t)proto) == ETH_P_8021AD ? FCTL_VLAN_8021AD
										 : FCTL_VLAN_8021Q;
		fctl_nli_vlan_read_qos(c->l, &fl->qos);
		return 0;
	}
	return fill_macsec(c->l, &fl->macsec);
}

struct lent {
	int ifindex;
	struct fctl_link *l;
};

static int cmp_lent(const void *a, const void *b)
{
	const struct lent *x = a, *y = b;

	return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

static struct fctl_link *link_by_ifindex(const struct lent *v, size_t n, int ifindex)
{
	struct lent key = { .ifindex = ifindex };
	const struct lent *e = n ? bsearch(&key, v, n, sizeof(*v), cmp_lent) : NULL;

	return e ? e->l : NULL;
}

static bool addr_is_link_local6(struct rtnl_addr *a)
{
	return rtnl_addr_get_family(a) == AF_INET6 && rtnl_addr_get_scope(a) == RT_SCOPE_LINK;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Whether the IPv6 link-local addresses of fl are part of its state. Elsewhere they come
 * and go with the link, not ours to manage; but a carrier (a VLAN under a SecY, listed in
 * carriers, sorted) and a link that generates no addresses must have none, so any it has
 * is read, and a plan removes it. */
static bool keeps_link_local(const struct fctl_link *fl, const int *carriers, size_t n_carriers)
{
	if (fl->has_addrgen && fl->addrgen == FCTL_ADDRGEN_NONE)
		return true;
	return n_carriers &&
	       bsearch(&fl->ifindex, carriers, n_carriers, sizeof(*carriers), cmp_int) != NULL;
}

static int read_addrs(struct fctl_nl *nl, struct fctl_host_state *hs, const int *carriers,
		      size_t n_carriers)
{
	struct nl_cache *cache = NULL;
	struct nl_object *o;
	struct lent *ix;
	int r;

	ix = calloc(hs->n_links, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < hs->n_links; i++)
		ix[i] = (struct lent){ hs->links[i].ifindex, &hs->links[i] };
	qsort(ix, hs->n_links, sizeof(*ix), cmp_lent);
	nl->stats.round_trips++;
	r = rtnl_addr_alloc_cache(nl->rt, &cache);
	if (r < 0) {
		free(ix);
		return fctl_nl_errno(r);
	}
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_addr *a = (struct rtnl_addr *)o;
		struct nl_addr *local = rtnl_addr_get_local(a);
		struct fctl_link *fl = link_by_ifindex(ix, hs->n_links, rtnl_addr_get_ifindex(a));
		char ip[INET6_ADDRSTRLEN], cidr[INET6_ADDRSTRLEN + 8];
		int fam = rtnl_addr_get_family(a);

		if (!fl || !local || (fam != AF_INET && fam != AF_INET6) ||
		    (addr_is_link_local6(a) && !keeps_link_local(fl, carriers, n_carriers)))
			continue;
		if (!inet_ntop(fam, nl_addr_get_binary_addr(local), ip, sizeof(ip)))
			continue;
		snprintf(cidr, sizeof(cidr), "%s/%u", ip, rtnl_addr_get_prefixlen(a));
		r = fctl_link_add_addr(fl, cidr);
		if (r < 0)
			break;
	}
	nl_cache_free(cache);
	free(ix);
	return r < 0 ? r : 0;
}

int fctl_nl_read_link(struct fctl_nl *nl, const char *ifname, struct fctl_host_state **out)
{
	struct fctl_host_state *hs = NULL;
	struct rtnl_link *l = NULL;
	const char *type;
	struct cand c;
	int r;

	if (!ifname || !ifname[0] || strlen(ifname) >= FCTL_IFNAMSIZ)
		return -EINVAL;
	nl->stats.round_trips++;
	r = rtnl_link_get_kernel(nl->rt, 0, ifname, &l);
	if (r < 0) {
		r = fctl_nl_errno(r);
		return r == -ENOENT || r == -ENODEV ? -ENODEV : r;
	}
	type = rtnl_link_get_type(l);
	if (!type || (strcmp(type, "vlan") != 0 && strcmp(type, "macsec") != 0)) {
		rtnl_link_put(l);
		return -EMEDIUMTYPE;
	}
	/* the map is this one name now: whatever else it held may be stale */
	fctl_nli_ifmap_clear(nl);
	if (fctl_nli_ifmap_put(nl, ifname, rtnl_link_get_ifindex(l)) < 0) {
		r = -ENOMEM;
		goto out;
	}
	hs = fctl_host_state_new(NULL);
	if (!hs) {
		r = -ENOMEM;
		goto out;
	}
	c.l = l;
	c.kind = strcmp(type, "vlan") == 0 ? FCTL_LINK_VLAN : FCTL_LINK_MACSEC;
	c.want = true;
	r = fill_link(hs, NULL, 0, &c);
	if (r == 0 && c.kind == FCTL_LINK_MACSEC)
		r = fctl_nli_read_macsec_sas(nl, hs);
	if (r == 0) {
		*out = hs;
		hs = NULL;
	}
out:
	if (r < 0)
		fctl_nli_ifmap_invalidate(nl);
	fctl_host_state_free(hs);
	rtnl_link_put(l);
	return r;
}

/* The ifindexes MACsec links of the dump sit on (wanted or not), sorted; NULL on ENOMEM. */
static int *carrier_ifindexes(const struct cand *cands, size_t n, size_t *n_out)
{
	int *v = calloc(n ? n : 1, sizeof(*v));

	*n_out = 0;
	for (size_t i = 0; v && i < n; i++) {
		int pidx = cands[i].kind == FCTL_LINK_MACSEC ? rtnl_link_get_link(cands[i].l) : 0;

		if (pidx > 0)
			v[(*n_out)++] = pidx;
	}
	if (v && *n_out > 1)
		qsort(v, *n_out, sizeof(*v), cmp_int);
	return v;
}

int fctl_nl_read_state(struct fctl_nl *nl, const char *host, const char *const *names,
		       size_t n_names, struct fctl_host_state **out)
{
	struct fctl_host_state *hs = NULL;
	struct nl_cache *cache = NULL;
	struct cand *cands = NULL;
	struct ixent *ix = NULL;
	const char **sorted = NULL;
	size_t n = 0, cap = 0, n_ix = 0, cap_ix = 0, n_sorted = 0;
	bool any_macsec = false;
	struct nl_object *o;
	int r;

	hs = fctl_host_state_new(host);
	if (!hs)
		return -ENOMEM;
	if (names && n_names) {
		sorted = calloc(n_names, sizeof(*sorted));
		if (!sorted) {
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n_names; i++)
			if (names[i])
				sorted[n_sorted++] = names[i];
		qsort(sorted, n_sorted, sizeof(*sorted), cmp_strp);
	}
	nl->stats.round_trips++;
	r = rtnl_link_alloc_cache(nl->rt, AF_UNSPEC, &cache);
	if (r < 0) {
		r = fctl_nl_errno(r);
		goto out;
	}
	/* a full dump: every name -> ifindex, for the operations that follow */
	fctl_nli_ifmap_clear(nl);
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_link *l = (struct rtnl_link *)o;
		const char *type = rtnl_link_get_type(l);
		struct ixent *e;
		struct cand *c;

		e = fctl_array_grow(&ix, &n_ix, &cap_ix, sizeof(*ix));
		if (!e) {
			r = -ENOMEM;
			goto out;
		}
		e->ifindex = rtnl_link_get_ifindex(l);
		e->name = rtnl_link_get_name(l);
		e->cand = SIZE_MAX;
		if (e->name && fctl_nli_ifmap_put(nl, e->name, e->ifindex) < 0) {
			r = -ENOMEM;
			goto out;
		}
		if (!type || (strcmp(type, "vlan") != 0 && strcmp(type, "macsec") != 0))
			continue;
		c = fctl_array_grow(&cands, &n, &cap, sizeof(*cands));
		if (!c) {
			r = -ENOMEM;
			goto out;
		}
		c->l = l;
		c->kind = strcmp(type, "vlan") == 0 ? FCTL_LINK_VLAN : FCTL_LINK_MACSEC;
		c->want = !names || name_listed(rtnl_link_get_name(l), sorted, n_sorted);
		e->cand = n - 1;
	}
	fctl_nli_ifmap_fill_done(nl);
	if (n_ix > 1)
		qsort(ix, n_ix, sizeof(*ix), cmp_ixent);
	/* the VLAN/MACsec links under a wanted one are wanted too */
	for (bool grew = true; grew && names;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			int pidx = cands[i].want ? rtnl_link_get_link(cands[i].l) : 0;
			const struct ixent *p = pidx > 0 ? ix_find(ix, n_ix, pidx) : NULL;

			if (p && p->cand != SIZE_MAX && !cands[p->cand].want) {
				cands[p->cand].want = true;
				grew = true;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!cands[i].want)
			continue;
		r = fill_link(hs, ix, n_ix, &cands[i]);
		if (r < 0)
			goto out;
		any_macsec |= cands[i].kind == FCTL_LINK_MACSEC;
	}
	if (any_macsec) {
		r = fctl_nli_read_macsec_sas(nl, hs);
		if (r < 0)
			goto out;
	}
	if (hs->n_links) {
		size_t n_car;
		int *car = carrier_ifindexes(cands, n, &n_car);

		r = car ? read_addrs(nl, hs, car, n_car) : -ENOMEM;
		free(car);
		if (r < 0)
			goto out;
	}
	fctl_host_state_sort(hs);
	*out = hs;
	hs = NULL;
	r = 0;
out:
	if (r < 0)
		fctl_nli_ifmap_invalidate(nl);
	free(sorted);
	free(ix);
	free(cands);
	nl_cache_free(cache);
	fctl_host_state_free(hs);
	return r;
}
