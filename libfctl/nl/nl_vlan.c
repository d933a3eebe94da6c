// SPDX-License-Identifier: MIT
/*
 * A VLAN device's 802.1Q priority maps over rtnetlink: IFLA_VLAN_EGRESS_QOS and
 * IFLA_VLAN_INGRESS_QOS (lists of IFLA_VLAN_QOS_MAPPING {from, to}), in the VLAN's
 * IFLA_INFO_DATA of its create or change request, and read back from a dumped link.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>

#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <netlink/route/link/vlan.h>

#include "nl_int.h"

static int put_list(struct nl_msg *msg, int type, const struct ifla_vlan_qos_mapping *m, size_t n)
{
	struct nlattr *list = nla_nest_start(msg, type);

	if (!list)
		return -EMSGSIZE;
	for (size_t i = 0; i < n; i++)
		if (nla_put(msg, IFLA_VLAN_QOS_MAPPING, sizeof(m[i]), &m[i]) < 0)
			return -EMSGSIZE;
	nla_nest_end(msg, list);
	return 0;
}

int fctl_nli_put_vlan_data(struct nl_msg *msg, const struct fctl_link *l, bool create)
{
	const struct fctl_vlan_qos *q = &l->qos;
	struct ifla_vlan_qos_mapping m[FCTL_VLAN_QOS_MAX];
	struct nlattr *info, *data;
	size_t n = 0;
	int r;

	info = nla_nest_start(msg, IFLA_LINKINFO);
	if (!info || nla_put_string(msg, IFLA_INFO_KIND, "vlan") < 0)
		return -EMSGSIZE;
	data = nla_nest_start(msg, IFLA_INFO_DATA);
	if (!data)
		return -EMSGSIZE;
	if (create &&
	    (nla_put_u16(msg, IFLA_VLAN_ID, l->vid) < 0 ||
	     nla_put_u16(msg, IFLA_VLAN_PROTOCOL,
			 htons(l->proto == FCTL_VLAN_8021AD ? ETH_P_8021AD : ETH_P_8021Q)) < 0))
		return -EMSGSIZE;
	/* a change gives every PCP: a 0 takes a mapping the link has and the op has not away */
	for (unsigned p = 0; p < FCTL_VLAN_PCPS; p++) {
		if (create && !q->ingress[p])
			continue;
		m[n].from = p;
		m[n++].to = q->ingress[p];
	}
	if (n && (r = put_list(msg, IFLA_VLAN_INGRESS_QOS, m, n)) < 0)
		return r;
	for (size_t i = 0; i < q->n_egress; i++) {
		if (q->egress[i].pcp >= FCTL_VLAN_PCPS)
			return -EINVAL;
		m[i].from = q->egress[i].prio;
		m[i].to = q->egress[i].pcp;
	}
	if (q->n_egress && (r = put_list(msg, IFLA_VLAN_EGRESS_QOS, m, q->n_egress)) < 0)
		return r;
	nla_nest_end(msg, data);
	nla_nest_end(msg, info);
	return 0;
}

void fctl_nli_vlan_read_qos(struct rtnl_link *l, struct fctl_vlan_qos *q)
{
	const uint32_t *in = rtnl_link_vlan_get_ingress_map(l);
	struct vlan_map *eg;
	int n = 0;

	for (unsigned p = 0; in && p < FCTL_VLAN_PCPS; p++)
		q->ingress[p] = in[p];
	eg = rtnl_link_vlan_get_egress_map(l, &n);
	q->n_egress = 0;
	/* more than FCTL_VLAN_QOS_MAX mappings: the first ones are kept (docs/profile.md) */
	for (int i = 0; eg && i < n && q->n_egress < FCTL_VLAN_QOS_MAX; i++) {
		if (eg[i].vm_to >= FCTL_VLAN_PCPS)
			continue;
		q->egress[q->n_egress].prio = eg[i].vm_from;
		q->egress[q->n_egress++].pcp = (uint8_t)eg[i].vm_to;
	}
	fctl_vlan_qos_normalize(q);
}
