// SPDX-License-Identifier: MIT
/*
 * DCB over rtnetlink (dcbnl), read only: a port's IEEE 802.1Qaz/Qbb settings
 * (RTM_GETDCB, DCB_CMD_IEEE_GET), of which the PFC state is what a VLAN's QoS map
 * needs: whether PFC runs on the PCPs the map sends. A device whose driver has no DCB
 * (virtio, veth) answers -EOPNOTSUPP.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>

#include "nl_int.h"

int fctl_nl_dcb_build_get(const char *ifname, struct nl_msg **out)
{
	struct dcbmsg dm = { .dcb_family = AF_UNSPEC, .cmd = DCB_CMD_IEEE_GET };
	struct nl_msg *msg;

	if (!ifname || !ifname[0] || strnlen(ifname, FCTL_IFNAMSIZ) >= FCTL_IFNAMSIZ)
		return -EINVAL;
	msg = nlmsg_alloc_simple(RTM_GETDCB, 0);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &dm, sizeof(dm), NLMSG_ALIGNTO) < 0 ||
	    nla_put_string(msg, DCB_ATTR_IFNAME, ifname) < 0) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	*out = msg;
	return 0;
}

int fctl_nl_dcb_parse(struct nlmsghdr *nlh, struct fctl_dcb *out)
{
	struct nlattr *tb[DCB_ATTR_MAX + 1], *ieee[DCB_ATTR_IEEE_MAX + 1];
	struct fctl_dcb d = { 0 };
	const struct dcbmsg *dm;

	if (nlh->nlmsg_type != RTM_GETDCB || nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*dm)))
		return -EBADMSG;
	dm = nlmsg_data(nlh);
	if (dm->cmd != DCB_CMD_IEEE_GET)
		return -EBADMSG;
	if (nlmsg_parse(nlh, sizeof(*dm), tb, DCB_ATTR_MAX, NULL) < 0 ||
	    !tb[DCB_ATTR_IEEE])
		return -EBADMSG;
	if (nla_parse_nested(ieee, DCB_ATTR_IEEE_MAX, tb[DCB_ATTR_IEEE], NULL) < 0)
		return -EBADMSG;
	if (ieee[DCB_ATTR_IEEE_PFC]) {
		/* copied out: netlink aligns attributes to 4 bytes, struct ieee_pfc (its
		 * __u64 counters) wants 8, so reading it in place is misaligned */
		struct ieee_pfc pfc;

		if (nla_len(ieee[DCB_ATTR_IEEE_PFC]) < (int)sizeof(pfc))
			return -EBADMSG;
		memcpy(&pfc, nla_data(ieee[DCB_ATTR_IEEE_PFC]), sizeof(pfc));
		d.has_pfc = true;
		d.pfc_cap = pfc.pfc_cap;
		d.pfc_en = pfc.pfc_en;
	}
	if (tb[DCB_ATTR_DCBX] && nla_len(tb[DCB_ATTR_DCBX]) >= 1)
		d.dcbx = nla_get_u8(tb[DCB_ATTR_DCBX]);
	*out = d;
	return 0;
}

struct dcb_arg {
	struct fctl_dcb d;
	int r;
	bool seen;
};

static int on_dcb(struct nl_msg *msg, void *arg)
{
	struct dcb_arg *a = arg;

	a->seen = true;
	a->r = fctl_nl_dcb_parse(nlmsg_hdr(msg), &a->d);
	return 0;
}

int fctl_nl_dcb_get(struct fctl_nl *nl, const char *ifname, struct fctl_dcb *out)
{
	struct dcb_arg a = { .r = -EBADMSG };
	struct nl_msg *msg = NULL;
	int r = fctl_nl_dcb_build_get(ifname, &msg);

	if (r < 0)
		return r;
	r = fctl_nli_xact(nl, nl->rt, msg, false, on_dcb, &a, NULL);
	nlmsg_free(msg);
	if (r < 0)
		return r; /* -EOPNOTSUPP: the driver has no DCB; -ENODEV: no such device */
	if (!a.seen)
		return -EBADMSG;
	if (a.r < 0)
		return a.r;
	*out = a.d;
	return 0;
}
