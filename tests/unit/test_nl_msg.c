// SPDX-License-Identifier: MIT
/*
 * Netlink message builders: build each message, parse it back in memory
 * against policies shaped like the kernel's, and check every attribute.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <linux/dcbnl.h>
#include <linux/if_addr.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_macsec.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "fctl/nl.h"

#define FAMILY 0x1d
#define IFINDEX 7
#define PARENT 3

static const uint8_t MAC[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
/* what the kernel's sci_t (__be64) looks like in memory: MAC, then port, big endian */
static const uint8_t SCI_WIRE[8] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x00, 0x01 };
static const uint8_t KEYID[16] = { 0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xaf };
static const uint8_t SALT[12] = { 0xc0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0xcb };
static const uint8_t KEY[32] = {
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a,
	0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25,
	0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,
};

/* Policies as the kernel's macsec.c declares them (top level and nested). */
static struct nla_policy genl_policy[MACSEC_ATTR_MAX + 1] = {
	[MACSEC_ATTR_IFINDEX] = { .type = NLA_U32 },
	[MACSEC_ATTR_RXSC_CONFIG] = { .type = NLA_NESTED },
	[MACSEC_ATTR_SA_CONFIG] = { .type = NLA_NESTED },
	[MACSEC_ATTR_OFFLOAD] = { .type = NLA_NESTED },
};
static struct nla_policy rxsc_policy[MACSEC_RXSC_ATTR_MAX + 1] = {
	[MACSEC_RXSC_ATTR_SCI] = { .type = NLA_U64 },
	[MACSEC_RXSC_ATTR_ACTIVE] = { .type = NLA_U8 },
};
static struct nla_policy sa_policy[MACSEC_SA_ATTR_MAX + 1] = {
	[MACSEC_SA_ATTR_AN] = { .type = NLA_U8 },
	[MACSEC_SA_ATTR_ACTIVE] = { .type = NLA_U8 },
	[MACSEC_SA_ATTR_PN] = { .minlen = 4 },
	[MACSEC_SA_ATTR_KEYID] = { .maxlen = MACSEC_KEYID_LEN },
	[MACSEC_SA_ATTR_KEY] = { .maxlen = MACSEC_MAX_KEY_LEN },
	[MACSEC_SA_ATTR_SSCI] = { .type = NLA_U32 },
	[MACSEC_SA_ATTR_SALT] = { .maxlen = MACSEC_SALT_LEN },
};
static struct nla_policy link_policy[IFLA_MAX + 1] = {
	[IFLA_IFNAME] = { .type = NLA_STRING, .maxlen = IFNAMSIZ },
	[IFLA_MTU] = { .type = NLA_U32 },
	[IFLA_LINK] = { .type = NLA_U32 },
	[IFLA_LINKINFO] = { .type = NLA_NESTED },
	[IFLA_AF_SPEC] = { .type = NLA_NESTED },
};
static struct nla_policy inet6_policy[IFLA_INET6_MAX + 1] = {
	[IFLA_INET6_ADDR_GEN_MODE] = { .type = NLA_U8 },
};
static struct nla_policy info_policy[IFLA_INFO_MAX + 1] = {
	[IFLA_INFO_KIND] = { .type = NLA_STRING },
	[IFLA_INFO_DATA] = { .type = NLA_NESTED },
};
static struct nla_policy macsec_link_policy[IFLA_MACSEC_MAX + 1] = {
	[IFLA_MACSEC_SCI] = { .type = NLA_U64 },
	[IFLA_MACSEC_PORT] = { .type = NLA_U16 },
	[IFLA_MACSEC_ICV_LEN] = { .type = NLA_U8 },
	[IFLA_MACSEC_CIPHER_SUITE] = { .type = NLA_U64 },
	[IFLA_MACSEC_WINDOW] = { .type = NLA_U32 },
	[IFLA_MACSEC_ENCODING_SA] = { .type = NLA_U8 },
	[IFLA_MACSEC_ENCRYPT] = { .type = NLA_U8 },
	[IFLA_MACSEC_PROTECT] = { .type = NLA_U8 },
	[IFLA_MACSEC_INC_SCI] = { .type = NLA_U8 },
	[IFLA_MACSEC_ES] = { .type = NLA_U8 },
	[IFLA_MACSEC_SCB] = { .type = NLA_U8 },
	[IFLA_MACSEC_REPLAY_PROTECT] = { .type = NLA_U8 },
	[IFLA_MACSEC_VALIDATION] = { .type = NLA_U8 },
	[IFLA_MACSEC_OFFLOAD] = { .type = NLA_U8 },
};
static struct nla_policy vlan_policy[IFLA_VLAN_MAX + 1] = {
	[IFLA_VLAN_ID] = { .type = NLA_U16 },
	[IFLA_VLAN_PROTOCOL] = { .type = NLA_U16 },
};

/* Attributes a nest holds, as a bit set of types: "exactly these, nothing else". */
static unsigned int attr_set(struct nlattr **tb, int max)
{
	unsigned int set = 0;

	for (int i = 1; i <= max; i++)
		if (tb[i])
			set |= 1u << i;
	return set;
}

#define BIT(x) (1u << (x))

/* ------------------------------------------------------------------ SAs */

struct sa_case {
	const char *name;
	enum fctl_op_kind kind;
	enum fctl_cipher cipher;
	uint8_t an;
	uint64_t pn;
	bool active;
	size_t key_len; /* taken from KEY; 0 = NULL key */
	bool has_keyid;
	bool has_salt;
	int rc; /* expected return */
	uint8_t cmd;
	unsigned int attrs; /* expected SA_CONFIG attributes */
	int pn_len;
};

#define SA_ADD_ATTRS                                                                            \
	(BIT(MACSEC_SA_ATTR_AN) | BIT(MACSEC_SA_ATTR_ACTIVE) | BIT(MACSEC_SA_ATTR_PN) |         \
	 BIT(MACSEC_SA_ATTR_KEY) | BIT(MACSEC_SA_ATTR_KEYID))
#define SA_XPN_ATTRS (SA_ADD_ATTRS | BIT(MACSEC_SA_ATTR_SSCI) | BIT(MACSEC_SA_ATTR_SALT))

static struct sa_case sa_cases[] = {
	{ "txsa add gcm-aes-128", FCTL_OP_TXSA_ADD, FCTL_CIPHER_GCM_AES_128, 0, 1, true, 16, true,
	  false, 0, MACSEC_CMD_ADD_TXSA, SA_ADD_ATTRS, 4 },
	{ "txsa add gcm-aes-256 inactive", FCTL_OP_TXSA_ADD, FCTL_CIPHER_GCM_AES_256, 3,
	  0xffffffffu, false, 32, true, false, 0, MACSEC_CMD_ADD_TXSA, SA_ADD_ATTRS, 4 },
	{ "txsa add xpn-128 (u64 pn, ssci, salt)", FCTL_OP_TXSA_ADD, FCTL_CIPHER_GCM_AES_XPN_128, 1,
	  0x100000002ull, true, 16, true, true, 0, MACSEC_CMD_ADD_TXSA, SA_XPN_ATTRS, 8 },
	{ "rxsa add xpn-256", FCTL_OP_RXSA_ADD, FCTL_CIPHER_GCM_AES_XPN_256, 2, 1, true, 32, true,
	  true, 0, MACSEC_CMD_ADD_RXSA, SA_XPN_ATTRS, 8 },
	{ "rxsa add gcm-aes-128", FCTL_OP_RXSA_ADD, FCTL_CIPHER_GCM_AES_128, 1, 7, true, 16, true,
	  false, 0, MACSEC_CMD_ADD_RXSA, SA_ADD_ATTRS, 4 },
	{ "txsa upd: an + active only, never a pn", FCTL_OP_TXSA_UPD, FCTL_CIPHER_GCM_AES_128, 2, 99,
	  true, 0, false, false, 0, MACSEC_CMD_UPD_TXSA,
	  BIT(MACSEC_SA_ATTR_AN) | BIT(MACSEC_SA_ATTR_ACTIVE), 0 },
	{ "rxsa upd deactivate", FCTL_OP_RXSA_UPD, FCTL_CIPHER_GCM_AES_XPN_128, 0, 0, false, 0, false,
	  false, 0, MACSEC_CMD_UPD_RXSA, BIT(MACSEC_SA_ATTR_AN) | BIT(MACSEC_SA_ATTR_ACTIVE), 0 },
	{ "txsa del", FCTL_OP_TXSA_DEL, FCTL_CIPHER_GCM_AES_128, 1, 0, false, 0, false, false, 0,
	  MACSEC_CMD_DEL_TXSA, BIT(MACSEC_SA_ATTR_AN), 0 },
	{ "rxsa del an 3", FCTL_OP_RXSA_DEL, FCTL_CIPHER_GCM_AES_256, 3, 0, false, 0, false, false, 0,
	  MACSEC_CMD_DEL_RXSA, BIT(MACSEC_SA_ATTR_AN), 0 },
	/* rejects */
	{ "reject: 16-byte key for gcm-aes-256", FCTL_OP_TXSA_ADD, FCTL_CIPHER_GCM_AES_256, 0, 1,
	  true, 16, true, false, -EINVAL, 0, 0, 0 },
	{ "reject: 32-byte key for gcm-aes-128", FCTL_OP_RXSA_ADD, FCTL_CIPHER_GCM_AES_128, 0, 1,
	  true, 32, true, false, -EINVAL, 0, 0, 0 },
	{ "reject: no key on add", FCTL_OP_TXSA_ADD, FCTL_CIPHER_GCM_AES_128, 0, 1, true, 0, true,
	  false, -EINVAL, 0, 0, 0 },
	{ "reject: an 4", FCTL_OP_TXSA_ADD, FCTL_CIPHER_GCM_AES_128, 4, 1, true, 16, true, false,
	  -EINVAL, 0, 0, 0 },
	{ "reject: an 4 on del", FCTL_OP_RXSA_DEL, FCTL_CIPHER_GCM_AES_128, 4, 0, false, 0, false,
	  false, -EINVAL, 0, 0, 0 },
	{ "reject: pn 0 on add", FCTL_OP_TXSA_ADD, FCTL_CIPHER_GCM_AES_128, 0, 0, true, 16, true,
	  false, -ERANGE, 0, 0, 0 },
	{ "reject: pn past 32 bits without xpn", FCTL_OP_RXSA_ADD, FCTL_CIPHER_GCM_AES_256, 0,
	  0x100000000ull, true, 32, true, false, -ERANGE, 0, 0, 0 },
	{ "reject: no keyid", FCTL_OP_TXSA_ADD, FCTL_CIPHER_GCM_AES_128, 0, 1, true, 16, false,
	  false, -EINVAL, 0, 0, 0 },
	{ "reject: xpn without salt", FCTL_OP_TXSA_ADD, FCTL_CIPHER_GCM_AES_XPN_128, 0, 1, true, 16,
	  true, false, -EINVAL, 0, 0, 0 },
};

static void sa_op(const struct sa_case *c, struct fctl_op *op)
{
	memset(op, 0, sizeof(*op));
	op->kind = c->kind;
	strcpy(op->ifname, "macsec0");
	op->an = c->an;
	op->sci = fctl_sci_make(MAC, 1);
	op->sa.present = true;
	op->sa.active = c->active;
	op->sa.pn = c->pn;
	if (c->has_keyid) {
		memcpy(op->sa.keyid, KEYID, sizeof(KEYID));
		op->sa.has_keyid = true;
	}
	op->sa.ssci = 0x01020304;
	if (c->has_salt) {
		memcpy(op->sa.salt, SALT, sizeof(SALT));
		op->sa.has_salt = true;
	}
}

static void test_sa(void **state)
{
	const struct sa_case *c = *state;
	struct nlattr *tb[MACSEC_ATTR_MAX + 1], *sa[MACSEC_SA_ATTR_MAX + 1];
	struct nl_msg *msg = NULL;
	struct nlmsghdr *nlh;
	struct fctl_op op;
	bool rx = c->kind == FCTL_OP_RXSA_ADD || c->kind == FCTL_OP_RXSA_UPD ||
		  c->kind == FCTL_OP_RXSA_DEL;
	int r;

	sa_op(c, &op);
	r = fctl_nl_build_sa_msg(FAMILY, &op, c->cipher, IFINDEX, c->key_len ? KEY : NULL,
				 c->key_len, &msg);
	assert_int_equal(r, c->rc);
	if (c->rc < 0) {
		assert_null(msg);
		return;
	}
	assert_non_null(msg);
	nlh = nlmsg_hdr(msg);
	assert_int_equal(nlh->nlmsg_type, FAMILY);
	assert_int_equal(genlmsg_hdr(nlh)->cmd, c->cmd);
	assert_int_equal(genlmsg_hdr(nlh)->version, MACSEC_GENL_VERSION);
	assert_int_equal(genlmsg_parse(nlh, 0, tb, MACSEC_ATTR_MAX, genl_policy), 0);
	assert_int_equal(nla_get_u32(tb[MACSEC_ATTR_IFINDEX]), IFINDEX);
	assert_int_equal(attr_set(tb, MACSEC_ATTR_MAX),
			 BIT(MACSEC_ATTR_IFINDEX) | BIT(MACSEC_ATTR_SA_CONFIG) |
				 (rx ? BIT(MACSEC_ATTR_RXSC_CONFIG) : 0));
	if (rx) {
		struct nlattr *sc[MACSEC_RXSC_ATTR_MAX + 1];

		assert_int_equal(nla_parse_nested(sc, MACSEC_RXSC_ATTR_MAX,
						  tb[MACSEC_ATTR_RXSC_CONFIG], rxsc_policy),
				 0);
		assert_int_equal(attr_set(sc, MACSEC_RXSC_ATTR_MAX), BIT(MACSEC_RXSC_ATTR_SCI));
		assert_memory_equal(nla_data(sc[MACSEC_RXSC_ATTR_SCI]), SCI_WIRE, 8);
	}
	assert_int_equal(
		nla_parse_nested(sa, MACSEC_SA_ATTR_MAX, tb[MACSEC_ATTR_SA_CONFIG], sa_policy), 0);
	assert_int_equal(attr_set(sa, MACSEC_SA_ATTR_MAX), c->attrs);
	assert_int_equal(nla_get_u8(sa[MACSEC_SA_ATTR_AN]), c->an);
	if (sa[MACSEC_SA_ATTR_ACTIVE])
		assert_int_equal(nla_get_u8(sa[MACSEC_SA_ATTR_ACTIVE]), c->active);
	if (sa[MACSEC_SA_ATTR_PN]) {
		assert_int_equal(nla_len(sa[MACSEC_SA_ATTR_PN]), c->pn_len);
		if (c->pn_len == 8)
			assert_true(nla_get_u64(sa[MACSEC_SA_ATTR_PN]) == c->pn);
		else
			assert_int_equal(nla_get_u32(sa[MACSEC_SA_ATTR_PN]), (uint32_t)c->pn);
	}
	if (sa[MACSEC_SA_ATTR_KEY]) {
		assert_int_equal(nla_len(sa[MACSEC_SA_ATTR_KEY]), fctl_cipher_key_len(c->cipher));
		assert_memory_equal(nla_data(sa[MACSEC_SA_ATTR_KEY]), KEY, c->key_len);
	}
	if (sa[MACSEC_SA_ATTR_KEYID]) {
		assert_int_equal(nla_len(sa[MACSEC_SA_ATTR_KEYID]), MACSEC_KEYID_LEN);
		assert_memory_equal(nla_data(sa[MACSEC_SA_ATTR_KEYID]), KEYID, 16);
	}
	if (sa[MACSEC_SA_ATTR_SSCI]) {
		static const uint8_t ssci_be[4] = { 1, 2, 3, 4 };

		assert_memory_equal(nla_data(sa[MACSEC_SA_ATTR_SSCI]), ssci_be, 4);
	}
	if (sa[MACSEC_SA_ATTR_SALT]) {
		assert_int_equal(nla_len(sa[MACSEC_SA_ATTR_SALT]), MACSEC_SALT_LEN);
		assert_memory_equal(nla_data(sa[MACSEC_SA_ATTR_SALT]), SALT, 12);
	}
	fctl_nl_msg_free(msg);
}

/* ------------------------------------------------------------------ RX SCs */

struct rxsc_case {
	const char *name;
	enum fctl_op_kind kind;
	bool active;
	int rc;
	uint8_t cmd;
	unsigned int attrs;
};

static struct rxsc_case rxsc_cases[] = {
	{ "rxsc add active", FCTL_OP_RXSC_ADD, true, 0, MACSEC_CMD_ADD_RXSC,
	  BIT(MACSEC_RXSC_ATTR_SCI) | BIT(MACSEC_RXSC_ATTR_ACTIVE) },
	{ "rxsc upd inactive", FCTL_OP_RXSC_UPD, false, 0, MACSEC_CMD_UPD_RXSC,
	  BIT(MACSEC_RXSC_ATTR_SCI) | BIT(MACSEC_RXSC_ATTR_ACTIVE) },
	{ "rxsc del: sci only", FCTL_OP_RXSC_DEL, false, 0, MACSEC_CMD_DEL_RXSC,
	  BIT(MACSEC_RXSC_ATTR_SCI) },
	{ "reject: rxsc builder given an sa op", FCTL_OP_RXSA_ADD, true, -EINVAL, 0, 0 },
};

static void test_rxsc(void **state)
{
	const struct rxsc_case *c = *state;
	struct nlattr *tb[MACSEC_ATTR_MAX + 1], *sc[MACSEC_RXSC_ATTR_MAX + 1];
	struct nl_msg *msg = NULL;
	struct nlmsghdr *nlh;
	struct fctl_op op = { .kind = c->kind, .rxsc_active = c->active };
	int r;

	strcpy(op.ifname, "macsec0");
	op.sci = fctl_sci_make(MAC, 1);
	r = fctl_nl_build_rxsc_msg(FAMILY, &op, IFINDEX, &msg);
	assert_int_equal(r, c->rc);
	if (r < 0)
		return;
	nlh = nlmsg_hdr(msg);
	assert_int_equal(nlh->nlmsg_type, FAMILY);
	assert_int_equal(genlmsg_hdr(nlh)->cmd, c->cmd);
	assert_int_equal(genlmsg_parse(nlh, 0, tb, MACSEC_ATTR_MAX, genl_policy), 0);
	assert_int_equal(attr_set(tb, MACSEC_ATTR_MAX),
			 BIT(MACSEC_ATTR_IFINDEX) | BIT(MACSEC_ATTR_RXSC_CONFIG));
	assert_int_equal(nla_get_u32(tb[MACSEC_ATTR_IFINDEX]), IFINDEX);
	/* the nest carries NLA_F_NESTED, as current kernels expect */
	assert_true(tb[MACSEC_ATTR_RXSC_CONFIG]->nla_type & NLA_F_NESTED);
	assert_int_equal(
		nla_parse_nested(sc, MACSEC_RXSC_ATTR_MAX, tb[MACSEC_ATTR_RXSC_CONFIG], rxsc_policy),
		0);
	assert_int_equal(attr_set(sc, MACSEC_RXSC_ATTR_MAX), c->attrs);
	/* SCI: big endian on the wire (sci_t is __be64), as iproute2 and hostap send it */
	assert_memory_equal(nla_data(sc[MACSEC_RXSC_ATTR_SCI]), SCI_WIRE, 8);
	if (sc[MACSEC_RXSC_ATTR_ACTIVE])
		assert_int_equal(nla_get_u8(sc[MACSEC_RXSC_ATTR_ACTIVE]), c->active);
	fctl_nl_msg_free(msg);
}

/* ------------------------------------------------------------------ links */

struct link_case {
	const char *name;
	void (*setup)(struct fctl_op *op);
	int ifindex;
	int parent;
	int rc;
	void (*check)(struct nlmsghdr *nlh, struct nlattr **tb);
};

static void macsec_link(struct fctl_op *op)
{
	struct fctl_macsec *m = &op->link.macsec;

	op->link.kind = FCTL_LINK_MACSEC;
	strcpy(op->link.name, "macsec0");
	strcpy(op->link.parent, "eth0.100");
	op->link.mtu = 1468;
	op->link.has_mtu = true;
	m->sci = fctl_sci_make(MAC, 1);
	m->port = 1;
	m->has_port = true;
	m->cipher = FCTL_CIPHER_GCM_AES_256;
	m->icv_len = 16;
	m->encrypt = true;
	m->protect = true;
	m->replay_protect = true;
	m->window = 64;
	m->validate = FCTL_VALIDATE_STRICT;
	m->send_sci = true;
	m->encoding_sa = 2;
}

static void setup_vlan_add(struct fctl_op *op)
{
	op->kind = FCTL_OP_LINK_ADD;
	strcpy(op->ifname, "eth0.100");
	op->link.kind = FCTL_LINK_VLAN;
	strcpy(op->link.name, "eth0.100");
	op->link.vid = 100;
	op->link.proto = FCTL_VLAN_8021Q;
	op->link.mtu = 1500;
	op->link.has_mtu = true;
}

static void setup_qinq_add(struct fctl_op *op)
{
	setup_vlan_add(op);
	op->link.proto = FCTL_VLAN_8021AD;
	op->link.has_mtu = false;
}

static void setup_macsec_add(struct fctl_op *op)
{
	op->kind = FCTL_OP_LINK_ADD;
	strcpy(op->ifname, "macsec0");
	macsec_link(op);
}

static void setup_macsec_add_offload_mac(struct fctl_op *op)
{
	setup_macsec_add(op);
	op->link.macsec.offload = FCTL_OFFLOAD_MAC;
	op->link.macsec.replay_protect = false;
	op->link.macsec.window = 0;
}

static void setup_change_window(struct fctl_op *op)
{
	op->kind = FCTL_OP_LINK_CHANGE;
	strcpy(op->ifname, "macsec0");
	macsec_link(op);
	op->changes = FCTL_CHG_WINDOW;
	op->link.macsec.window = 128;
}

static void setup_change_replay_on(struct fctl_op *op)
{
	setup_change_window(op);
	op->changes = FCTL_CHG_REPLAY | FCTL_CHG_ENCODING_SA;
	op->link.macsec.encoding_sa = 1;
}

static void setup_change_vlan_mtu(struct fctl_op *op)
{
	setup_vlan_add(op);
	op->kind = FCTL_OP_LINK_CHANGE;
	op->changes = FCTL_CHG_MTU;
	op->link.mtu = 9000;
}

static void setup_change_vlan_bad(struct fctl_op *op)
{
	setup_change_vlan_mtu(op);
	op->changes = FCTL_CHG_ENCRYPT;
}

static void setup_change_addrgen(struct fctl_op *op)
{
	setup_vlan_add(op);
	op->kind = FCTL_OP_LINK_CHANGE;
	op->changes = FCTL_CHG_ADDRGEN;
	op->link.addrgen = FCTL_ADDRGEN_NONE;
	op->link.has_addrgen = true;
}

static void setup_change_addrgen_mtu(struct fctl_op *op)
{
	setup_change_addrgen(op);
	op->changes |= FCTL_CHG_MTU;
	op->link.mtu = 9000;
}

static void setup_change_addrgen_unset(struct fctl_op *op)
{
	setup_change_addrgen(op);
	op->link.has_addrgen = false;
}

static void setup_change_addrgen_bad(struct fctl_op *op)
{
	setup_change_addrgen(op);
	op->link.addrgen = (enum fctl_addrgen)4;
}

/* a carrier's create request stays as it was: the mode follows in a change of its own */
static void setup_vlan_add_carrier(struct fctl_op *op)
{
	setup_change_addrgen(op);
	op->kind = FCTL_OP_LINK_ADD;
	op->changes = 0;
}

static void setup_qos(struct fctl_vlan_qos *q)
{
	q->egress[0].prio = 3;
	q->egress[0].pcp = 3;
	q->egress[1].prio = 7; /* a removal: the kernel drops a mapping set to PCP 0 */
	q->egress[1].pcp = 0;
	q->n_egress = 2;
	q->ingress[3] = 5;
}

static void setup_change_qos(struct fctl_op *op)
{
	setup_vlan_add(op);
	op->kind = FCTL_OP_LINK_CHANGE;
	op->changes = FCTL_CHG_QOS;
	setup_qos(&op->link.qos);
}

static void setup_vlan_add_qos(struct fctl_op *op)
{
	setup_vlan_add(op);
	setup_qos(&op->link.qos);
	op->link.qos.n_egress = 1;
}

static void setup_change_qos_macsec(struct fctl_op *op)
{
	setup_change_window(op);
	op->changes = FCTL_CHG_QOS;
}

static void setup_change_qos_pcp8(struct fctl_op *op)
{
	setup_change_qos(op);
	op->link.qos.egress[0].pcp = 8;
}

static void setup_up(struct fctl_op *op)
{
	op->kind = FCTL_OP_LINK_UP;
	strcpy(op->ifname, "macsec0");
}

static void setup_down(struct fctl_op *op)
{
	op->kind = FCTL_OP_LINK_DOWN;
	strcpy(op->ifname, "macsec0");
}

static void setup_del(struct fctl_op *op)
{
	op->kind = FCTL_OP_LINK_DEL;
	strcpy(op->ifname, "eth0.100");
}

static void setup_bad_encoding_sa(struct fctl_op *op)
{
	setup_macsec_add(op);
	op->link.macsec.encoding_sa = 4;
}

static void setup_long_name(struct fctl_op *op)
{
	setup_del(op);
	memset(op->ifname, 'x', sizeof(op->ifname));
}

static struct nlattr *linkinfo_data(struct nlattr **tb, const char *kind, struct nlattr **info)
{
	assert_non_null(tb[IFLA_LINKINFO]);
	assert_int_equal(nla_parse_nested(info, IFLA_INFO_MAX, tb[IFLA_LINKINFO], info_policy), 0);
	assert_string_equal(nla_get_string(info[IFLA_INFO_KIND]), kind);
	assert_non_null(info[IFLA_INFO_DATA]);
	return info[IFLA_INFO_DATA];
}

static void check_vlan_add(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct nlattr *info[IFLA_INFO_MAX + 1], *d[IFLA_VLAN_MAX + 1];

	assert_int_equal(nlh->nlmsg_type, RTM_NEWLINK);
	assert_true(nlh->nlmsg_flags & NLM_F_CREATE);
	assert_true(nlh->nlmsg_flags & NLM_F_EXCL);
	assert_false(((struct ifinfomsg *)nlmsg_data(nlh))->ifi_flags & IFF_UP);
	assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), "eth0.100");
	assert_int_equal(nla_get_u32(tb[IFLA_LINK]), PARENT);
	assert_int_equal(nla_get_u32(tb[IFLA_MTU]), 1500);
	assert_int_equal(nla_parse_nested(d, IFLA_VLAN_MAX, linkinfo_data(tb, "vlan", info),
					  vlan_policy),
			 0);
	assert_int_equal(nla_get_u16(d[IFLA_VLAN_ID]), 100);
	assert_int_equal(ntohs(nla_get_u16(d[IFLA_VLAN_PROTOCOL])), ETH_P_8021Q);
	assert_int_equal(attr_set(d, IFLA_VLAN_MAX), BIT(IFLA_VLAN_ID) | BIT(IFLA_VLAN_PROTOCOL));
}

static void check_qinq_add(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct nlattr *info[IFLA_INFO_MAX + 1], *d[IFLA_VLAN_MAX + 1];

	(void)nlh;
	assert_null(tb[IFLA_MTU]);
	assert_int_equal(nla_parse_nested(d, IFLA_VLAN_MAX, linkinfo_data(tb, "vlan", info),
					  vlan_policy),
			 0);
	assert_int_equal(ntohs(nla_get_u16(d[IFLA_VLAN_PROTOCOL])), ETH_P_8021AD);
}

static void parse_macsec(struct nlattr **tb, struct nlattr **d)
{
	struct nlattr *info[IFLA_INFO_MAX + 1];

	assert_int_equal(nla_parse_nested(d, IFLA_MACSEC_MAX, linkinfo_data(tb, "macsec", info),
					  macsec_link_policy),
			 0);
}

static void check_macsec_add(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct nlattr *d[IFLA_MACSEC_MAX + 1];

	assert_int_equal(nlh->nlmsg_type, RTM_NEWLINK);
	assert_true(nlh->nlmsg_flags & NLM_F_CREATE);
	assert_true(nlh->nlmsg_flags & NLM_F_EXCL);
	/* created administratively down */
	assert_false(((struct ifinfomsg *)nlmsg_data(nlh))->ifi_flags & IFF_UP);
	assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), "macsec0");
	assert_int_equal(nla_get_u32(tb[IFLA_LINK]), PARENT);
	assert_int_equal(nla_get_u32(tb[IFLA_MTU]), 1468);
	parse_macsec(tb, d);
	assert_memory_equal(nla_data(d[IFLA_MACSEC_SCI]), SCI_WIRE, 8);
	assert_true(nla_get_u64(d[IFLA_MACSEC_CIPHER_SUITE]) == MACSEC_CIPHER_ID_GCM_AES_256);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_ICV_LEN]), 16);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_ENCRYPT]), 1);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_PROTECT]), 1);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_REPLAY_PROTECT]), 1);
	assert_int_equal(nla_get_u32(d[IFLA_MACSEC_WINDOW]), 64);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_VALIDATION]), MACSEC_VALIDATE_STRICT);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_INC_SCI]), 1);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_ES]), 0);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_SCB]), 0);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_ENCODING_SA]), 2);
	/* SCI given: no PORT (the kernel would ignore it); offload off: not sent */
	assert_null(d[IFLA_MACSEC_PORT]);
	assert_null(d[IFLA_MACSEC_OFFLOAD]);
}

static void check_macsec_add_offload_mac(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct nlattr *d[IFLA_MACSEC_MAX + 1];

	(void)nlh;
	parse_macsec(tb, d);
	/* the value libnl 3.7's setter refuses */
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_OFFLOAD]), MACSEC_OFFLOAD_MAC);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_REPLAY_PROTECT]), 0);
	assert_null(d[IFLA_MACSEC_WINDOW]);
}

static void check_change_window(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct nlattr *d[IFLA_MACSEC_MAX + 1];

	assert_int_equal(nlh->nlmsg_type, RTM_NEWLINK);
	assert_false(nlh->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL));
	assert_int_equal(((struct ifinfomsg *)nlmsg_data(nlh))->ifi_index, IFINDEX);
	assert_null(tb[IFLA_MTU]);
	assert_null(tb[IFLA_LINK]);
	parse_macsec(tb, d);
	/* a fresh change: the window alone, never cipher/SCI/ICV/port */
	assert_int_equal(attr_set(d, IFLA_MACSEC_MAX), BIT(IFLA_MACSEC_WINDOW));
	assert_int_equal(nla_get_u32(d[IFLA_MACSEC_WINDOW]), 128);
}

static void check_change_replay_on(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct nlattr *d[IFLA_MACSEC_MAX + 1];

	(void)nlh;
	parse_macsec(tb, d);
	/* the kernel wants a window with replay on */
	assert_int_equal(attr_set(d, IFLA_MACSEC_MAX),
			 BIT(IFLA_MACSEC_REPLAY_PROTECT) | BIT(IFLA_MACSEC_WINDOW) |
				 BIT(IFLA_MACSEC_ENCODING_SA));
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_REPLAY_PROTECT]), 1);
	assert_int_equal(nla_get_u32(d[IFLA_MACSEC_WINDOW]), 128);
	assert_int_equal(nla_get_u8(d[IFLA_MACSEC_ENCODING_SA]), 1);
}

static void check_change_vlan_mtu(struct nlmsghdr *nlh, struct nlattr **tb)
{
	(void)nlh;
	assert_int_equal(nla_get_u32(tb[IFLA_MTU]), 9000);
	assert_null(tb[IFLA_LINKINFO]);
	assert_int_equal(attr_set(tb, IFLA_MAX), BIT(IFLA_MTU));
}

/* IFLA_AF_SPEC holds AF_INET6 alone, which holds IFLA_INET6_ADDR_GEN_MODE alone */
static void expect_addrgen(struct nlattr **tb, uint8_t mode)
{
	struct nlattr *af[AF_MAX + 1], *in6[IFLA_INET6_MAX + 1];

	assert_non_null(tb[IFLA_AF_SPEC]);
	assert_true(tb[IFLA_AF_SPEC]->nla_type & NLA_F_NESTED);
	assert_int_equal(nla_parse_nested(af, AF_MAX, tb[IFLA_AF_SPEC], NULL), 0);
	for (int i = 0; i <= AF_MAX; i++)
		if (i != AF_INET6)
			assert_null(af[i]);
	assert_non_null(af[AF_INET6]);
	assert_int_equal(nla_parse_nested(in6, IFLA_INET6_MAX, af[AF_INET6], inet6_policy), 0);
	assert_int_equal(attr_set(in6, IFLA_INET6_MAX), BIT(IFLA_INET6_ADDR_GEN_MODE));
	assert_int_equal(nla_get_u8(in6[IFLA_INET6_ADDR_GEN_MODE]), mode);
}

static void check_change_addrgen(struct nlmsghdr *nlh, struct nlattr **tb)
{
	assert_int_equal(nlh->nlmsg_type, RTM_NEWLINK);
	assert_false(nlh->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL));
	/* never touches the link's flags: it does not bring the link up */
	assert_int_equal(((struct ifinfomsg *)nlmsg_data(nlh))->ifi_change, 0);
	assert_int_equal(((struct ifinfomsg *)nlmsg_data(nlh))->ifi_flags, 0);
	assert_int_equal(((struct ifinfomsg *)nlmsg_data(nlh))->ifi_index, IFINDEX);
	assert_int_equal(attr_set(tb, IFLA_MAX), BIT(IFLA_AF_SPEC));
	expect_addrgen(tb, IN6_ADDR_GEN_MODE_NONE);
}

static void check_change_addrgen_mtu(struct nlmsghdr *nlh, struct nlattr **tb)
{
	(void)nlh;
	assert_int_equal(attr_set(tb, IFLA_MAX), BIT(IFLA_AF_SPEC) | BIT(IFLA_MTU));
	assert_int_equal(nla_get_u32(tb[IFLA_MTU]), 9000);
	expect_addrgen(tb, IN6_ADDR_GEN_MODE_NONE);
}

static void check_change_addrgen_by_name(struct nlmsghdr *nlh, struct nlattr **tb)
{
	assert_int_equal(((struct ifinfomsg *)nlmsg_data(nlh))->ifi_index, 0);
	assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), "eth0.100");
	assert_int_equal(attr_set(tb, IFLA_MAX), BIT(IFLA_AF_SPEC) | BIT(IFLA_IFNAME));
	expect_addrgen(tb, IN6_ADDR_GEN_MODE_NONE);
}

static void check_vlan_add_carrier(struct nlmsghdr *nlh, struct nlattr **tb)
{
	check_vlan_add(nlh, tb);
	assert_null(tb[IFLA_AF_SPEC]);
}

/* the mappings of one IFLA_VLAN_*_QOS list, as from:to pairs into out */
static size_t qos_list(const struct nlattr *list, uint32_t out[][2], size_t max)
{
	const struct nlattr *a;
	size_t n = 0;
	int rem;

	nla_for_each_nested(a, list, rem) {
		const struct ifla_vlan_qos_mapping *m = nla_data(a);

		assert_int_equal(nla_type(a), IFLA_VLAN_QOS_MAPPING);
		assert_int_equal(nla_len(a), sizeof(*m));
		assert_true(n < max);
		out[n][0] = m->from;
		out[n++][1] = m->to;
	}
	return n;
}

static void check_change_qos(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct nlattr *info[IFLA_INFO_MAX + 1], *d[IFLA_VLAN_MAX + 1];
	uint32_t m[16][2];

	(void)nlh;
	assert_int_equal(attr_set(tb, IFLA_MAX), BIT(IFLA_LINKINFO));
	assert_int_equal(nla_parse_nested(d, IFLA_VLAN_MAX, linkinfo_data(tb, "vlan", info), NULL),
			 0);
	assert_int_equal(attr_set(d, IFLA_VLAN_MAX),
			 BIT(IFLA_VLAN_EGRESS_QOS) | BIT(IFLA_VLAN_INGRESS_QOS));
	assert_int_equal(qos_list(d[IFLA_VLAN_EGRESS_QOS], m, 16), 2);
	assert_int_equal(m[0][0], 3);
	assert_int_equal(m[0][1], 3);
	assert_int_equal(m[1][0], 7);
	assert_int_equal(m[1][1], 0);
	/* all eight PCPs: the ones not mapped as 0, which clears them */
	assert_int_equal(qos_list(d[IFLA_VLAN_INGRESS_QOS], m, 16), 8);
	for (uint32_t p = 0; p < 8; p++) {
		assert_int_equal(m[p][0], p);
		assert_int_equal(m[p][1], p == 3 ? 5 : 0);
	}
}

static void check_vlan_add_qos(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct nlattr *info[IFLA_INFO_MAX + 1], *d[IFLA_VLAN_MAX + 1];
	uint32_t m[16][2];

	(void)nlh;
	assert_int_equal(nla_parse_nested(d, IFLA_VLAN_MAX, linkinfo_data(tb, "vlan", info), NULL),
			 0);
	assert_int_equal(nla_get_u16(d[IFLA_VLAN_ID]), 100);
	assert_non_null(d[IFLA_VLAN_EGRESS_QOS]);
	assert_int_equal(qos_list(d[IFLA_VLAN_EGRESS_QOS], m, 16), 1);
	assert_int_equal(m[0][0], 3);
	assert_int_equal(m[0][1], 3);
	assert_non_null(d[IFLA_VLAN_INGRESS_QOS]);
	assert_int_equal(qos_list(d[IFLA_VLAN_INGRESS_QOS], m, 16), 1);
	assert_int_equal(m[0][0], 3);
	assert_int_equal(m[0][1], 5);
}

static void check_up(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct ifinfomsg *ifi = nlmsg_data(nlh);

	assert_int_equal(nlh->nlmsg_type, RTM_NEWLINK);
	assert_int_equal(ifi->ifi_flags & IFF_UP, IFF_UP);
	assert_int_equal(ifi->ifi_change, IFF_UP);
	assert_int_equal(ifi->ifi_index, 0);
	/* addressed by name */
	assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), "macsec0");
	assert_int_equal(attr_set(tb, IFLA_MAX), BIT(IFLA_IFNAME));
}

static void check_down(struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct ifinfomsg *ifi = nlmsg_data(nlh);

	(void)tb;
	assert_int_equal(ifi->ifi_flags & IFF_UP, 0);
	assert_int_equal(ifi->ifi_change, IFF_UP);
	assert_int_equal(ifi->ifi_index, IFINDEX);
	assert_int_equal(attr_set(tb, IFLA_MAX), 0);
}

static void check_del(struct nlmsghdr *nlh, struct nlattr **tb)
{
	assert_int_equal(nlh->nlmsg_type, RTM_DELLINK);
	assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), "eth0.100");
}

static struct link_case link_cases[] = {
	{ "vlan add 802.1Q", setup_vlan_add, 0, PARENT, 0, check_vlan_add },
	{ "vlan add 802.1ad", setup_qinq_add, 0, PARENT, 0, check_qinq_add },
	{ "macsec add: every attribute", setup_macsec_add, 0, PARENT, 0, check_macsec_add },
	{ "macsec add offload mac", setup_macsec_add_offload_mac, 0, PARENT, 0,
	  check_macsec_add_offload_mac },
	{ "macsec change window only", setup_change_window, IFINDEX, 0, 0, check_change_window },
	{ "macsec change replay on brings the window", setup_change_replay_on, IFINDEX, 0, 0,
	  check_change_replay_on },
	{ "vlan change mtu", setup_change_vlan_mtu, IFINDEX, 0, 0, check_change_vlan_mtu },
	{ "vlan change addrgenmode none", setup_change_addrgen, IFINDEX, 0, 0,
	  check_change_addrgen },
	{ "vlan change addrgenmode none and mtu", setup_change_addrgen_mtu, IFINDEX, 0, 0,
	  check_change_addrgen_mtu },
	{ "vlan change addrgenmode by name", setup_change_addrgen, 0, 0, 0,
	  check_change_addrgen_by_name },
	{ "carrier vlan add: create request unchanged", setup_vlan_add_carrier, 0, PARENT, 0,
	  check_vlan_add_carrier },
	{ "reject: addrgen change without a mode", setup_change_addrgen_unset, IFINDEX, 0, -EINVAL,
	  NULL },
	{ "reject: addrgen mode 4", setup_change_addrgen_bad, IFINDEX, 0, -EINVAL, NULL },
	{ "vlan change qos maps", setup_change_qos, IFINDEX, 0, 0, check_change_qos },
	{ "vlan add with qos maps", setup_vlan_add_qos, 0, PARENT, 0, check_vlan_add_qos },
	{ "reject: qos change on a macsec link", setup_change_qos_macsec, IFINDEX, 0, -EINVAL,
	  NULL },
	{ "reject: qos pcp 8", setup_change_qos_pcp8, IFINDEX, 0, -EINVAL, NULL },
	{ "link up by name", setup_up, 0, 0, 0, check_up },
	{ "link down by index", setup_down, IFINDEX, 0, 0, check_down },
	{ "link del by name", setup_del, 0, 0, 0, check_del },
	{ "reject: macsec change on a vlan", setup_change_vlan_bad, IFINDEX, 0, -EINVAL, NULL },
	{ "reject: link add without parent", setup_vlan_add, 0, 0, -EINVAL, NULL },
	{ "reject: encoding sa 4", setup_bad_encoding_sa, 0, PARENT, -EINVAL, NULL },
	{ "reject: name too long", setup_long_name, 0, 0, -EINVAL, NULL },
};

static void test_link(void **state)
{
	const struct link_case *c = *state;
	struct nlattr *tb[IFLA_MAX + 1];
	struct nl_msg *msg = NULL;
	struct fctl_op op;
	int r;

	memset(&op, 0, sizeof(op));
	c->setup(&op);
	r = fctl_nl_build_link_msg(&op, c->ifindex, c->parent, &msg);
	assert_int_equal(r, c->rc);
	if (r < 0) {
		assert_null(msg);
		return;
	}
	assert_int_equal(nlmsg_parse(nlmsg_hdr(msg), sizeof(struct ifinfomsg), tb, IFLA_MAX,
				     link_policy),
			 0);
	c->check(nlmsg_hdr(msg), tb);
	fctl_nl_msg_free(msg);
}

/* ------------------------------------------------------------------ addresses */

struct addr_case {
	const char *name;
	enum fctl_op_kind kind;
	const char *addr;
	int rc;
	int family;
	int plen;
	const char *bytes_of; /* the address, as inet_pton reads it */
};

static struct addr_case addr_cases[] = {
	{ "ipv4 add", FCTL_OP_ADDR_ADD, "10.0.0.1/24", 0, AF_INET, 24, "10.0.0.1" },
	{ "ipv6 del", FCTL_OP_ADDR_DEL, "fd00::1/64", 0, AF_INET6, 64, "fd00::1" },
	{ "ipv4 host address", FCTL_OP_ADDR_ADD, "192.0.2.9", 0, AF_INET, 32, "192.0.2.9" },
	{ "reject: prefix 33", FCTL_OP_ADDR_ADD, "10.0.0.1/33", -EINVAL, 0, 0, NULL },
	{ "reject: not an address", FCTL_OP_ADDR_ADD, "ten.0.0.1/8", -EINVAL, 0, 0, NULL },
	{ "reject: hex prefix", FCTL_OP_ADDR_ADD, "10.0.0.1/0x8", -EINVAL, 0, 0, NULL },
};

static void test_addr(void **state)
{
	const struct addr_case *c = *state;
	struct nlattr *tb[IFA_MAX + 1];
	struct nl_msg *msg = NULL;
	struct fctl_op op = { .kind = c->kind };
	struct ifaddrmsg *ifa;
	uint8_t want[16];
	char addr[64];
	int alen;

	strcpy(op.ifname, "macsec0");
	snprintf(addr, sizeof(addr), "%s", c->addr);
	op.addr = addr;
	assert_int_equal(fctl_nl_build_addr_msg(&op, IFINDEX, &msg), c->rc);
	if (c->rc < 0)
		return;
	assert_int_equal(nlmsg_hdr(msg)->nlmsg_type,
			 c->kind == FCTL_OP_ADDR_ADD ? RTM_NEWADDR : RTM_DELADDR);
	ifa = nlmsg_data(nlmsg_hdr(msg));
	assert_int_equal(ifa->ifa_family, c->family);
	assert_int_equal(ifa->ifa_prefixlen, c->plen);
	assert_int_equal(ifa->ifa_index, IFINDEX);
	assert_int_equal(nlmsg_parse(nlmsg_hdr(msg), sizeof(*ifa), tb, IFA_MAX, NULL), 0);
	alen = c->family == AF_INET ? 4 : 16;
	assert_int_equal(inet_pton(c->family, c->bytes_of, want), 1);
	assert_int_equal(nla_len(tb[IFA_LOCAL]), alen);
	assert_memory_equal(nla_data(tb[IFA_LOCAL]), want, (size_t)alen);
	assert_memory_equal(nla_data(tb[IFA_ADDRESS]), want, (size_t)alen);
	fctl_nl_msg_free(msg);
}

/* ------------------------------------------------------------------ neigh */

/* A neighbour carried to a new SecY: created (never replacing one the kernel resolved),
 * STALE (used at once, then confirmed by the kernel), on the new link, with its address
 * and MAC; a bad family, address, MAC or ifindex refused before anything is built. */
static void test_neigh(void **state)
{
	const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0xfa, 0x02, 0x00 };
	uint8_t v4[4], v6[16];
	struct nlattr *tb[NDA_MAX + 1];
	struct nl_msg *msg = NULL;
	const struct ndmsg *nd;
	const int fam[2] = { AF_INET, AF_INET6 };

	(void)state;
	assert_int_equal(inet_pton(AF_INET, "10.100.0.2", v4), 1);
	assert_int_equal(inet_pton(AF_INET6, "fd00:100::2", v6), 1);
	for (int i = 0; i < 2; i++) {
		const uint8_t *dst = fam[i] == AF_INET ? v4 : v6;
		int alen = fam[i] == AF_INET ? 4 : 16;

		assert_int_equal(fctl_nl_build_neigh_msg(fam[i], dst, mac, IFINDEX, &msg), 0);
		assert_int_equal(nlmsg_hdr(msg)->nlmsg_type, RTM_NEWNEIGH);
		assert_int_equal(nlmsg_hdr(msg)->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL | NLM_F_REPLACE),
				 NLM_F_CREATE | NLM_F_EXCL);
		nd = nlmsg_data(nlmsg_hdr(msg));
		assert_int_equal(nd->ndm_family, fam[i]);
		assert_int_equal(nd->ndm_ifindex, IFINDEX);
		assert_int_equal(nd->ndm_state, NUD_STALE);
		assert_int_equal(nlmsg_parse(nlmsg_hdr(msg), sizeof(*nd), tb, NDA_MAX, NULL), 0);
		assert_non_null(tb[NDA_DST]);
		assert_int_equal(nla_len(tb[NDA_DST]), alen);
		assert_memory_equal(nla_data(tb[NDA_DST]), dst, (size_t)alen);
		assert_int_equal(nla_len(tb[NDA_LLADDR]), 6);
		assert_memory_equal(nla_data(tb[NDA_LLADDR]), mac, 6);
		fctl_nl_msg_free(msg);
		msg = NULL;
	}
	assert_int_equal(fctl_nl_build_neigh_msg(AF_PACKET, v4, mac, IFINDEX, &msg), -EINVAL);
	assert_int_equal(fctl_nl_build_neigh_msg(AF_INET, NULL, mac, IFINDEX, &msg), -EINVAL);
	assert_int_equal(fctl_nl_build_neigh_msg(AF_INET, v4, NULL, IFINDEX, &msg), -EINVAL);
	assert_int_equal(fctl_nl_build_neigh_msg(AF_INET, v4, mac, 0, &msg), -EINVAL);
	assert_null(msg);
	/* nothing to copy is no request at all; a NULL handle is refused */
	assert_int_equal(fctl_nl_neigh_copy(NULL, "a", "b", NULL, 0, NULL), -EINVAL);
}

/* ------------------------------------------------------------------ misc */

static void test_errno(void **state)
{
	(void)state;
	assert_int_equal(fctl_nl_errno(-NLE_NOMEM), -ENOMEM);
	assert_int_equal(fctl_nl_errno(-NLE_EXIST), -EEXIST);
	assert_int_equal(fctl_nl_errno(-NLE_BUSY), -EBUSY);
	assert_int_equal(fctl_nl_errno(-NLE_NODEV), -ENODEV);
	assert_int_equal(fctl_nl_errno(-NLE_PERM), -EPERM);
	assert_int_equal(fctl_nl_errno(-NLE_DUMP_INTR), -EINTR);
	assert_int_equal(fctl_nl_errno(-NLE_OBJ_NOTFOUND), -ENOENT);
	assert_int_equal(fctl_nl_errno(-9999), -EIO);
	assert_int_equal(fctl_nl_errno(0), 0);
}

/* ------------------------------------------------------------------ dcbnl */

/* An RTM_GETDCB answer to DCB_CMD_IEEE_GET as the kernel lays it out (dcbnl_ieee_fill,
 * net/dcb/dcbnl.c): dcbmsg, DCB_ATTR_IFNAME "p0", DCB_ATTR_IEEE { DCB_ATTR_IEEE_PFC
 * struct ieee_pfc { pfc_cap 8, pfc_en 0x08: PFC on priority 3 } }, DCB_ATTR_DCBX 0x09
 * (host, IEEE). Written byte by byte, little-endian, as a ConnectX port with
 * `mlnx_qos --pfc 0,0,0,1,0,0,0,0` answers (no DCB NIC on the build machine records one). */
static const uint8_t dcb_reply[] = {
	0xb4, 0x00, 0x00, 0x00, 0x4e, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x15, 0x00, 0x00, 0x07, 0x00, 0x01, 0x00,
	0x70, 0x30, 0x00, 0x00, 0x90, 0x00, 0x0d, 0x00, 0x8c, 0x00, 0x02, 0x00,
	0x08, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x0e, 0x00, 0x09, 0x00, 0x00, 0x00,
};

static void test_dcb(void **state)
{
	uint8_t buf[sizeof(dcb_reply)];
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct nlattr *tb[DCB_ATTR_MAX + 1];
	struct nl_msg *msg = NULL;
	struct fctl_dcb d;

	(void)state;
	memcpy(buf, dcb_reply, sizeof(buf));
	assert_int_equal(fctl_nl_dcb_parse(nlh, &d), 0);
	assert_true(d.has_pfc);
	assert_int_equal(d.pfc_cap, 8);
	assert_int_equal(d.pfc_en, 0x08);
	assert_int_equal(d.dcbx, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE);
	/* another command's answer, a PFC attribute cut short: not a DCB answer */
	((struct dcbmsg *)NLMSG_DATA(nlh))->cmd = DCB_CMD_GCAP;
	assert_int_equal(fctl_nl_dcb_parse(nlh, &d), -EBADMSG);
	memcpy(buf, dcb_reply, sizeof(buf));
	buf[32] = 4 + 8; /* DCB_ATTR_IEEE_PFC's nla_len: 8 bytes of struct ieee_pfc */
	assert_int_equal(fctl_nl_dcb_parse(nlh, &d), -EBADMSG);
	/* the request: RTM_GETDCB, DCB_CMD_IEEE_GET, the port's name */
	assert_int_equal(fctl_nl_dcb_build_get("p0", &msg), 0);
	nlh = nlmsg_hdr(msg);
	assert_int_equal(nlh->nlmsg_type, RTM_GETDCB);
	assert_int_equal(((struct dcbmsg *)nlmsg_data(nlh))->cmd, DCB_CMD_IEEE_GET);
	assert_int_equal(nlmsg_parse(nlh, sizeof(struct dcbmsg), tb, DCB_ATTR_MAX, NULL), 0);
	assert_string_equal(nla_get_string(tb[DCB_ATTR_IFNAME]), "p0");
	fctl_nl_msg_free(msg);
	assert_int_equal(fctl_nl_dcb_build_get("", &msg), -EINVAL);
}

static void test_msg_free_null(void **state)
{
	(void)state;
	fctl_nl_msg_free(NULL);
}

int main(void)
{
	struct CMUnitTest tests[FCTL_ARRAY_SIZE(sa_cases) + FCTL_ARRAY_SIZE(rxsc_cases) +
				FCTL_ARRAY_SIZE(link_cases) + FCTL_ARRAY_SIZE(addr_cases) + 4];
	size_t n = 0;

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(sa_cases); i++)
		tests[n++] = (struct CMUnitTest){ sa_cases[i].name, test_sa, NULL, NULL,
						  (void *)&sa_cases[i] };
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(rxsc_cases); i++)
		tests[n++] = (struct CMUnitTest){ rxsc_cases[i].name, test_rxsc, NULL, NULL,
						  (void *)&rxsc_cases[i] };
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(link_cases); i++)
		tests[n++] = (struct CMUnitTest){ link_cases[i].name, test_link, NULL, NULL,
						  (void *)&link_cases[i] };
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(addr_cases); i++)
		tests[n++] = (struct CMUnitTest){ addr_cases[i].name, test_addr, NULL, NULL,
						  (void *)&addr_cases[i] };
	tests[n++] = (struct CMUnitTest){ "neighbour carried to a new SecY", test_neigh, NULL, NULL,
					  NULL };
	tests[n++] = (struct CMUnitTest){ "nle to errno", test_errno, NULL, NULL, NULL };
	tests[n++] = (struct CMUnitTest){ "dcbnl answer parsed, request built", test_dcb, NULL, NULL,
					  NULL };
	tests[n++] = (struct CMUnitTest){ "msg free accepts NULL", test_msg_free_null, NULL, NULL,
					  NULL };
	return cmocka_run_group_tests_name("nl_msg", tests, NULL, NULL);
}
