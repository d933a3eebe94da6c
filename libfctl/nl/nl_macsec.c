// SPDX-License-Identifier: MIT
/*
 * MACsec channels and SAs over the "macsec" generic netlink family: message
 * builders, their execution, and the GET_TXSC dump (state and statistics).
 *
 * On the wire the SCI is the kernel's sci_t, a big-endian u64 (MAC address
 * bytes, then the port); SSCI is a big-endian u32; PN is a u32, or a u64 with an
 * XPN cipher. The kernel never dumps keys: SAs are recognised by KEYID.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/if_macsec.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/route/link/macsec.h>

#include "nl_int.h"

#define DUMP_TRIES 5

/* --- builders --- */

static int genl_msg_new(int family, uint8_t cmd, int flags, struct nl_msg **out)
{
	struct nl_msg *msg;

	if (family <= 0)
		return -EINVAL;
	msg = nlmsg_alloc();
	if (!msg)
		return -ENOMEM;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, cmd,
			 MACSEC_GENL_VERSION)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	*out = msg;
	return 0;
}

static int put_rxsc(struct nl_msg *msg, uint64_t sci, bool with_active, bool active)
{
	struct nlattr *nest = nla_nest_start(msg, MACSEC_ATTR_RXSC_CONFIG);

	if (!nest || nla_put_u64(msg, MACSEC_RXSC_ATTR_SCI, fctl_nli_sci_to_wire(sci)) < 0)
		return -EMSGSIZE;
	if (with_active && nla_put_u8(msg, MACSEC_RXSC_ATTR_ACTIVE, active) < 0)
		return -EMSGSIZE;
	nla_nest_end(msg, nest);
	return 0;
}

int fctl_nl_build_rxsc_msg(int family, const struct fctl_op *op, int ifindex, struct nl_msg **out)
{
	struct nl_msg *msg = NULL;
	uint8_t cmd;
	int r;

	switch (op->kind) {
	case FCTL_OP_RXSC_ADD:
		cmd = MACSEC_CMD_ADD_RXSC;
		break;
	case FCTL_OP_RXSC_UPD:
		cmd = MACSEC_CMD_UPD_RXSC;
		break;
	case FCTL_OP_RXSC_DEL:
		cmd = MACSEC_CMD_DEL_RXSC;
		break;
	default:
		return -EINVAL;
	}
	if (ifindex <= 0)
		return -EINVAL;
	r = genl_msg_new(family, cmd, 0, &msg);
	if (r < 0)
		return r;
	r = -EMSGSIZE;
	if (nla_put_u32(msg, MACSEC_ATTR_IFINDEX, (uint32_t)ifindex) < 0)
		goto fail;
	r = put_rxsc(msg, op->sci, op->kind != FCTL_OP_RXSC_DEL, op->rxsc_active);
	if (r < 0)
		goto fail;
	*out = msg;
	return 0;
fail:
	fctl_nl_msg_free(msg);
	return r;
}

static bool sa_cmd(enum fctl_op_kind k, uint8_t *cmd, bool *rx)
{
	static const struct {
		enum fctl_op_kind kind;
		uint8_t cmd;
		bool rx;
	} map[] = {
		{ FCTL_OP_TXSA_ADD, MACSEC_CMD_ADD_TXSA, false },
		{ FCTL_OP_TXSA_UPD, MACSEC_CMD_UPD_TXSA, false },
		{ FCTL_OP_TXSA_DEL, MACSEC_CMD_DEL_TXSA, false },
		{ FCTL_OP_RXSA_ADD, MACSEC_CMD_ADD_RXSA, true },
		{ FCTL_OP_RXSA_UPD, MACSEC_CMD_UPD_RXSA, true },
		{ FCTL_OP_RXSA_DEL, MACSEC_CMD_DEL_RXSA, true },
	};

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(map); i++) {
		if (map[i].kind == k) {
			*cmd = map[i].cmd;
			*rx = map[i].rx;
			return true;
		}
	}
	return false;
}

static int check_sa_add(const struct fctl_op *op, enum fctl_cipher cipher, const uint8_t *key,
			size_t key_len)
{
	bool xpn = fctl_cipher_is_xpn(cipher);

	if (op->sa.pn == 0 || (!xpn && op->sa.pn > UINT32_MAX))
		return -ERANGE;
	if (!key || key_len != fctl_cipher_key_len(cipher))
		return -EINVAL;
	if (!op->sa.has_keyid)
		return -EINVAL;
	if (xpn && !op->sa.has_salt)
		return -EINVAL;
	return 0;
}

int fctl_nl_build_sa_msg(int family, const struct fctl_op *op, enum fctl_cipher cipher,
			 int ifindex, const uint8_t *key, size_t key_len, struct nl_msg **out)
{
	struct nl_msg *msg = NULL;
	struct nlattr *nest;
	bool rx, add, upd;
	uint8_t cmd;
	int r;

	if (!sa_cmd(op->kind, &cmd, &rx) || ifindex <= 0 || op->an >= FCTL_MAX_AN ||
	    cipher > FCTL_CIPHER_GCM_AES_XPN_256)
		return -EINVAL;
	add = op->kind == FCTL_OP_TXSA_ADD || op->kind == FCTL_OP_RXSA_ADD;
	upd = op->kind == FCTL_OP_TXSA_UPD || op->kind == FCTL_OP_RXSA_UPD;
	if (add) {
		r = check_sa_add(op, cipher, key, key_len);
		if (r < 0)
			return r;
	}
	r = genl_msg_new(family, cmd, 0, &msg);
	if (r < 0)
		return r;
	r = -EMSGSIZE;
	if (nla_put_u32(msg, MACSEC_ATTR_IFINDEX, (uint32_t)ifindex) < 0)
		goto fail;
	if (rx) {
		r = put_rxsc(msg, op->sci, false, false);
		if (r < 0)
			goto fail;
		r = -EMSGSIZE;
	}
	nest = nla_nest_start(msg, MACSEC_ATTR_SA_CONFIG);
	if (!nest || nla_put_u8(msg, MACSEC_SA_ATTR_AN, op->an) < 0)
		goto fail;
	if ((add || upd) && nla_put_u8(msg, MACSEC_SA_ATTR_ACTIVE, op->sa.active) < 0)
		goto fail;
	if (add) {
		if (fctl_cipher_is_xpn(cipher)) {
			if (nla_put_u64(msg, MACSEC_SA_ATTR_PN, op->sa.pn) < 0 ||
			    nla_put_u32(msg, MACSEC_SA_ATTR_SSCI, htonl(op->sa.ssci)) < 0 ||
			    nla_put(msg, MACSEC_SA_ATTR_SALT, FCTL_SALT_LEN, op->sa.salt) < 0)
				goto fail;
		} else if (nla_put_u32(msg, MACSEC_SA_ATTR_PN, (uint32_t)op->sa.pn) < 0) {
			goto fail;
		}
		if (nla_put(msg, MACSEC_SA_ATTR_KEYID, FCTL_KEYID_LEN, op->sa.keyid) < 0 ||
		    nla_put(msg, MACSEC_SA_ATTR_KEY, (int)key_len, key) < 0)
			goto fail;
	}
	nla_nest_end(msg, nest);
	*out = msg;
	return 0;
fail:
	fctl_nl_msg_free(msg); /* wipes a key already in it */
	return r;
}

/* --- execution --- */

/* ifindex and cipher of a MACsec link, asked of the kernel by name (one round trip). */
static int macsec_link(struct fctl_nl *nl, const char *name, int *ifindex,
		       enum fctl_cipher *cipher, struct fctl_nl_err *err)
{
	struct fctl_nli_link_info info;
	char what[64];
	int r;

	r = fctl_nli_link_get(nl, name, &info, err);
	if (r < 0)
		return r;
	if (!info.macsec) {
		r = -EINVAL;
		snprintf(what, sizeof(what), "link \"%s\" is not a macsec link", name);
		fctl_nli_err_set(err, r, what);
		return r;
	}
	if (!info.has_cipher) {
		r = -EPROTO;
		snprintf(what, sizeof(what), "link \"%s\": unknown cipher suite", name);
		fctl_nli_err_set(err, r, what);
		return r;
	}
	*ifindex = info.ifindex;
	*cipher = info.cipher;
	return 0;
}

static bool is_rxsc_op(enum fctl_op_kind k)
{
	return k == FCTL_OP_RXSC_ADD || k == FCTL_OP_RXSC_UPD || k == FCTL_OP_RXSC_DEL;
}

/* One attempt. An op computed by the planner carries its SecY in op->link
 * (kind MACSEC, with the cipher the key length and PN width depend on): the
 * ifindex then comes from the map, and the kernel checks the rest (a SecY of
 * another cipher refuses the key length, the PN width and the XPN attributes;
 * a device that is not a SecY is ENODEV). Other ops (built by hand) read the
 * link from the kernel as before. */
int fctl_nli_macsec_prepare(struct fctl_nl *nl, int family, const struct fctl_op *op,
			    const char *what, const uint8_t *key, size_t key_len, bool fresh,
			    bool *cached, struct nl_msg **out, struct fctl_nl_err *err)
{
	const char *name = op->ifname[0] ? op->ifname : op->link.name;
	struct nl_msg *msg = NULL;
	enum fctl_cipher cipher = FCTL_CIPHER_GCM_AES_128;
	int ifindex = 0, r;

	*cached = false;
	if (op->link.kind == FCTL_LINK_MACSEC && !fresh) {
		cipher = op->link.macsec.cipher;
		r = fctl_nli_ifindex(nl, name, &ifindex, cached, err);
	} else {
		r = macsec_link(nl, name, &ifindex, &cipher, err);
	}
	if (r < 0)
		return r;
	if (is_rxsc_op(op->kind))
		r = fctl_nl_build_rxsc_msg(family, op, ifindex, &msg);
	else
		r = fctl_nl_build_sa_msg(family, op, cipher, ifindex, key, key_len, &msg);
	if (r < 0) {
		fctl_nli_err_set(err, r, what);
		return r;
	}
	*out = msg;
	return 0;
}

static int exec_macsec_once(struct fctl_nl *nl, int family, const struct fctl_op *op,
			    const char *what, const uint8_t *key, size_t key_len, bool fresh,
			    bool *cached, struct fctl_nl_err *err)
{
	struct nl_msg *msg = NULL;
	int r = fctl_nli_macsec_prepare(nl, family, op, what, key, key_len, fresh, cached, &msg,
					err);

	if (r < 0)
		return r;
	r = fctl_nli_xact(nl, nl->gen, msg, true, NULL, NULL, err);
	fctl_nl_msg_free(msg);
	if (r < 0)
		fctl_nli_err_set(err, r, what);
	return r;
}

void fctl_nli_macsec_what(const struct fctl_op *op, char *what, size_t n)
{
	const char *name = op->ifname[0] ? op->ifname : op->link.name;
	char sci[24];

	fctl_sci_format(op->sci, sci);
	switch (op->kind) {
	case FCTL_OP_RXSC_ADD:
	case FCTL_OP_RXSC_UPD:
	case FCTL_OP_RXSC_DEL:
		snprintf(what, n, "%s %s sci %s", fctl_op_kind_name(op->kind), name, sci);
		break;
	case FCTL_OP_RXSA_ADD:
	case FCTL_OP_RXSA_UPD:
	case FCTL_OP_RXSA_DEL:
		snprintf(what, n, "%s %s sci %s an %u", fctl_op_kind_name(op->kind), name,
			 sci, op->an);
		break;
	default:
		snprintf(what, n, "%s %s an %u", fctl_op_kind_name(op->kind), name, op->an);
		break;
	}
}

int fctl_nli_exec_macsec(struct fctl_nl *nl, const struct fctl_op *op, const uint8_t *key,
			 size_t key_len, struct fctl_nl_err *err)
{
	char what[96];
	bool cached;
	int family, r;

	fctl_nli_macsec_what(op, what, sizeof(what));
	family = fctl_nli_macsec_family(nl, err);
	if (family < 0)
		return family;
	r = exec_macsec_once(nl, family, op, what, key, key_len, false, &cached, err);
	if (r == -ENODEV && cached) {
		/* ENODEV is also a missing RX SC or SA; with a cached ifindex it may be
		 * a stale one: drop the map and try once more with the kernel's answer */
		fctl_nli_ifmap_invalidate(nl);
		fctl_nli_err_clear(err);
		r = exec_macsec_once(nl, family, op, what, key, key_len, true, &cached, err);
	}
	return r < 0 ? r : 0;
}

/* --- the GET_TXSC dump --- */

static struct nla_policy attr_policy[MACSEC_ATTR_MAX + 1] = {
	[MACSEC_ATTR_IFINDEX] = { .type = NLA_U32 },
	[MACSEC_ATTR_SECY] = { .type = NLA_NESTED },
	[MACSEC_ATTR_TXSA_LIST] = { .type = NLA_NESTED },
	[MACSEC_ATTR_RXSC_LIST] = { .type = NLA_NESTED },
	[MACSEC_ATTR_TXSC_STATS] = { .type = NLA_NESTED },
	[MACSEC_ATTR_SECY_STATS] = { .type = NLA_NESTED },
};

static struct nla_policy sa_policy[MACSEC_SA_ATTR_MAX + 1] = {
	[MACSEC_SA_ATTR_AN] = { .type = NLA_U8 },
	[MACSEC_SA_ATTR_ACTIVE] = { .type = NLA_U8 },
	[MACSEC_SA_ATTR_SSCI] = { .type = NLA_U32 },
	[MACSEC_SA_ATTR_STATS] = { .type = NLA_NESTED },
	/* PN: 4 or 8 bytes, KEYID: 16 bytes, checked by hand */
};

static struct nla_policy rxsc_policy[MACSEC_RXSC_ATTR_MAX + 1] = {
	[MACSEC_RXSC_ATTR_SCI] = { .type = NLA_U64 },
	[MACSEC_RXSC_ATTR_ACTIVE] = { .type = NLA_U8 },
	[MACSEC_RXSC_ATTR_SA_LIST] = { .type = NLA_NESTED },
	[MACSEC_RXSC_ATTR_STATS] = { .type = NLA_NESTED },
};

struct dump_ctx {
	int (*secy)(int ifindex, struct nlattr **tb, void *arg);
	void *arg;
};

static int on_secy(struct nl_msg *msg, void *arg)
{
	struct dump_ctx *d = arg;
	struct nlattr *tb[MACSEC_ATTR_MAX + 1];

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, MACSEC_ATTR_MAX, attr_policy) < 0)
		return -EPROTO;
	if (!tb[MACSEC_ATTR_IFINDEX])
		return 0;
	return d->secy((int)nla_get_u32(tb[MACSEC_ATTR_IFINDEX]), tb, d->arg);
}

/* Runs the dump, restarting it when the kernel reports it interrupted.
 * reset (may be NULL) undoes what a partial run collected. */
static int macsec_dump(struct fctl_nl *nl, int (*secy)(int, struct nlattr **, void *),
		       void (*reset)(void *), void *arg)
{
	struct dump_ctx d = { .secy = secy, .arg = arg };
	int family, r = -EINTR;

	family = fctl_nli_macsec_family(nl, NULL);
	if (family < 0)
		return family;
	for (int tries = 0; tries < DUMP_TRIES && r == -EINTR; tries++) {
		struct nl_msg *msg = NULL;

		if (tries && reset)
			reset(arg);
		r = genl_msg_new(family, MACSEC_CMD_GET_TXSC, NLM_F_DUMP, &msg);
		if (r < 0)
			return r;
		r = fctl_nli_xact(nl, nl->gen, msg, false, on_secy, &d, NULL);
		nlmsg_free(msg);
	}
	return r;
}

static uint64_t get_uint(const struct nlattr *a)
{
	switch (nla_len(a)) {
	case 1:
		return nla_get_u8(a);
	case 2:
		return nla_get_u16(a);
	case 4:
		return nla_get_u32(a);
	case 8:
		return nla_get_u64(a);
	default:
		return 0;
	}
}

/* One SA of a TXSA_LIST or SA_LIST: its AN, or -EPROTO. */
static int parse_sa(struct nlattr *a, struct nlattr **tb)
{
	uint8_t an;

	if (nla_parse_nested(tb, MACSEC_SA_ATTR_MAX, a, sa_policy) < 0 || !tb[MACSEC_SA_ATTR_AN])
		return -EPROTO;
	an = nla_get_u8(tb[MACSEC_SA_ATTR_AN]);
	if (an >= FCTL_MAX_AN)
		return -EPROTO;
	return an;
}

static void fill_sa(struct nlattr **tb, struct fctl_sa *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->present = true;
	if (tb[MACSEC_SA_ATTR_ACTIVE])
		sa->active = nla_get_u8(tb[MACSEC_SA_ATTR_ACTIVE]);
	/* PN: u32 without XPN, u64 with it */
	if (tb[MACSEC_SA_ATTR_PN] &&
	    (nla_len(tb[MACSEC_SA_ATTR_PN]) == 4 || nla_len(tb[MACSEC_SA_ATTR_PN]) == 8))
		sa->pn = get_uint(tb[MACSEC_SA_ATTR_PN]);
	if (tb[MACSEC_SA_ATTR_KEYID] && nla_len(tb[MACSEC_SA_ATTR_KEYID]) == FCTL_KEYID_LEN) {
		memcpy(sa->keyid, nla_data(tb[MACSEC_SA_ATTR_KEYID]), FCTL_KEYID_LEN);
		sa->has_keyid = true;
	}
	if (tb[MACSEC_SA_ATTR_SSCI])
		sa->ssci = ntohl(nla_get_u32(tb[MACSEC_SA_ATTR_SSCI]));
}

struct state_ctx {
	struct fctl_host_state *hs;
};

static void state_reset(void *arg)
{
	struct state_ctx *s = arg;

	for (size_t i = 0; i < s->hs->n_links; i++) {
		struct fctl_macsec *m = &s->hs->links[i].macsec;

		memset(m->txsa, 0, sizeof(m->txsa));
		m->n_rxsc = 0;
	}
}

static int state_secy(int ifindex, struct nlattr **tb, void *arg)
{
	struct state_ctx *s = arg;
	struct fctl_macsec *m = NULL;
	struct nlattr *a, *b;
	int rem, rem2, an;

	for (size_t i = 0; i < s->hs->n_links; i++)
		if (s->hs->links[i].kind == FCTL_LINK_MACSEC && s->hs->links[i].ifindex == ifindex)
			m = &s->hs->links[i].macsec;
	if (!m)
		return 0; /* not a link we read */

	if (tb[MACSEC_ATTR_TXSA_LIST]) {
		nla_for_each_nested(a, tb[MACSEC_ATTR_TXSA_LIST], rem) {
			struct nlattr *sa[MACSEC_SA_ATTR_MAX + 1];

			an = parse_sa(a, sa);
			if (an < 0)
				return an;
			fill_sa(sa, &m->txsa[an]);
		}
	}
	if (!tb[MACSEC_ATTR_RXSC_LIST])
		return 0;
	nla_for_each_nested(a, tb[MACSEC_ATTR_RXSC_LIST], rem) {
		struct nlattr *sc[MACSEC_RXSC_ATTR_MAX + 1];
		struct fctl_rxsc *rx;
		uint64_t sci;

		if (nla_parse_nested(sc, MACSEC_RXSC_ATTR_MAX, a, rxsc_policy) < 0 ||
		    !sc[MACSEC_RXSC_ATTR_SCI])
			return -EPROTO;
		sci = fctl_nli_sci_from_wire(nla_get_u64(sc[MACSEC_RXSC_ATTR_SCI]));
		rx = fctl_macsec_find_rxsc(m, sci);
		if (!rx)
			rx = fctl_macsec_add_rxsc(m, sci);
		if (!rx)
			return -ENOMEM;
		memset(rx->sa, 0, sizeof(rx->sa));
		rx->sci = sci;
		rx->active = sc[MACSEC_RXSC_ATTR_ACTIVE] && nla_get_u8(sc[MACSEC_RXSC_ATTR_ACTIVE]);
		if (!sc[MACSEC_RXSC_ATTR_SA_LIST])
			continue;
		nla_for_each_nested(b, sc[MACSEC_RXSC_ATTR_SA_LIST], rem2) {
			struct nlattr *sa[MACSEC_SA_ATTR_MAX + 1];

			an = parse_sa(b, sa);
			if (an < 0)
				return an;
			fill_sa(sa, &rx->sa[an]);
		}
	}
	return 0;
}

int fctl_nli_read_macsec_sas(struct fctl_nl *nl, struct fctl_host_state *hs)
{
	struct state_ctx s = { .hs = hs };

	return macsec_dump(nl, state_secy, state_reset, &s);
}

/* --- statistics --- */

struct stats_ctx {
	int ifindex;
	bool found;
	struct fctl_macsec_stats st;
};

static void stats_reset(void *arg)
{
	struct stats_ctx *s = arg;

	s->found = false;
	memset(&s->st, 0, sizeof(s->st));
}

#define STAT(field, attr)                                                                       \
	case attr:                                                                              \
		(field) = get_uint(a);                                                          \
		break

static void parse_secy_stats(struct nlattr *nest, struct fctl_macsec_stats *st)
{
	struct nlattr *a;
	int rem;

	nla_for_each_nested(a, nest, rem) {
		switch (nla_type(a)) {
			STAT(st->out_pkts_untagged, MACSEC_SECY_STATS_ATTR_OUT_PKTS_UNTAGGED);
			STAT(st->in_pkts_untagged, MACSEC_SECY_STATS_ATTR_IN_PKTS_UNTAGGED);
			STAT(st->out_pkts_too_long, MACSEC_SECY_STATS_ATTR_OUT_PKTS_TOO_LONG);
			STAT(st->in_pkts_no_tag, MACSEC_SECY_STATS_ATTR_IN_PKTS_NO_TAG);
			STAT(st->in_pkts_bad_tag, MACSEC_SECY_STATS_ATTR_IN_PKTS_BAD_TAG);
			STAT(st->in_pkts_unknown_sci, MACSEC_SECY_STATS_ATTR_IN_PKTS_UNKNOWN_SCI);
			STAT(st->in_pkts_no_sci, MACSEC_SECY_STATS_ATTR_IN_PKTS_NO_SCI);
			STAT(st->in_pkts_overrun, MACSEC_SECY_STATS_ATTR_IN_PKTS_OVERRUN);
		default:
			break;
		}
	}
}

static void parse_txsc_stats(struct nlattr *nest, struct fctl_macsec_stats *st)
{
	struct nlattr *a;
	int rem;

	nla_for_each_nested(a, nest, rem) {
		switch (nla_type(a)) {
			STAT(st->out_pkts_protected, MACSEC_TXSC_STATS_ATTR_OUT_PKTS_PROTECTED);
			STAT(st->out_pkts_encrypted, MACSEC_TXSC_STATS_ATTR_OUT_PKTS_ENCRYPTED);
			STAT(st->out_octets_protected, MACSEC_TXSC_STATS_ATTR_OUT_OCTETS_PROTECTED);
			STAT(st->out_octets_encrypted, MACSEC_TXSC_STATS_ATTR_OUT_OCTETS_ENCRYPTED);
		default:
			break;
		}
	}
}

static void parse_sa_stats(struct nlattr *nest, struct fctl_macsec_sa_stats *st)
{
	struct nlattr *a;
	int rem;

	nla_for_each_nested(a, nest, rem) {
		switch (nla_type(a)) {
			STAT(st->in_pkts_ok, MACSEC_SA_STATS_ATTR_IN_PKTS_OK);
			STAT(st->in_pkts_invalid, MACSEC_SA_STATS_ATTR_IN_PKTS_INVALID);
			STAT(st->in_pkts_not_valid, MACSEC_SA_STATS_ATTR_IN_PKTS_NOT_VALID);
			STAT(st->in_pkts_not_using_sa, MACSEC_SA_STATS_ATTR_IN_PKTS_NOT_USING_SA);
			STAT(st->in_pkts_unused_sa, MACSEC_SA_STATS_ATTR_IN_PKTS_UNUSED_SA);
			STAT(st->out_pkts_protected, MACSEC_SA_STATS_ATTR_OUT_PKTS_PROTECTED);
			STAT(st->out_pkts_encrypted, MACSEC_SA_STATS_ATTR_OUT_PKTS_ENCRYPTED);
		default:
			break;
		}
	}
}

static void parse_rxsc_stats(struct nlattr *nest, struct fctl_macsec_rxsc_stats *st)
{
	struct nlattr *a;
	int rem;

	nla_for_each_nested(a, nest, rem) {
		switch (nla_type(a)) {
			STAT(st->in_octets_validated, MACSEC_RXSC_STATS_ATTR_IN_OCTETS_VALIDATED);
			STAT(st->in_octets_decrypted, MACSEC_RXSC_STATS_ATTR_IN_OCTETS_DECRYPTED);
			STAT(st->in_pkts_unchecked, MACSEC_RXSC_STATS_ATTR_IN_PKTS_UNCHECKED);
			STAT(st->in_pkts_delayed, MACSEC_RXSC_STATS_ATTR_IN_PKTS_DELAYED);
			STAT(st->in_pkts_ok, MACSEC_RXSC_STATS_ATTR_IN_PKTS_OK);
			STAT(st->in_pkts_invalid, MACSEC_RXSC_STATS_ATTR_IN_PKTS_INVALID);
			STAT(st->in_pkts_late, MACSEC_RXSC_STATS_ATTR_IN_PKTS_LATE);
			STAT(st->in_pkts_not_valid, MACSEC_RXSC_STATS_ATTR_IN_PKTS_NOT_VALID);
			STAT(st->in_pkts_not_using_sa, MACSEC_RXSC_STATS_ATTR_IN_PKTS_NOT_USING_SA);
			STAT(st->in_pkts_unused_sa, MACSEC_RXSC_STATS_ATTR_IN_PKTS_UNUSED_SA);
		default:
			break;
		}
	}
}

#undef STAT

static void add_rxsc_total(struct fctl_macsec_rxsc_stats *t, const struct fctl_macsec_rxsc_stats *s)
{
	t->in_octets_validated += s->in_octets_validated;
	t->in_octets_decrypted += s->in_octets_decrypted;
	t->in_pkts_unchecked += s->in_pkts_unchecked;
	t->in_pkts_delayed += s->in_pkts_delayed;
	t->in_pkts_ok += s->in_pkts_ok;
	t->in_pkts_invalid += s->in_pkts_invalid;
	t->in_pkts_late += s->in_pkts_late;
	t->in_pkts_not_valid += s->in_pkts_not_valid;
	t->in_pkts_not_using_sa += s->in_pkts_not_using_sa;
	t->in_pkts_unused_sa += s->in_pkts_unused_sa;
	for (int an = 0; an < FCTL_MAX_AN; an++) {
		const struct fctl_macsec_sa_stats *a = &s->sa[an];
		struct fctl_macsec_sa_stats *b = &t->sa[an];

		if (!a->present)
			continue;
		b->present = true;
		b->an = (uint8_t)an;
		b->in_pkts_ok += a->in_pkts_ok;
		b->in_pkts_invalid += a->in_pkts_invalid;
		b->in_pkts_not_valid += a->in_pkts_not_valid;
		b->in_pkts_not_using_sa += a->in_pkts_not_using_sa;
		b->in_pkts_unused_sa += a->in_pkts_unused_sa;
	}
}

static int stats_fill(struct nlattr **tb, struct fctl_macsec_stats *st)
{
	struct nlattr *a, *b;
	int rem, rem2, an;

	if (tb[MACSEC_ATTR_SECY_STATS])
		parse_secy_stats(tb[MACSEC_ATTR_SECY_STATS], st);
	if (tb[MACSEC_ATTR_TXSC_STATS])
		parse_txsc_stats(tb[MACSEC_ATTR_TXSC_STATS], st);
	if (tb[MACSEC_ATTR_TXSA_LIST]) {
		nla_for_each_nested(a, tb[MACSEC_ATTR_TXSA_LIST], rem) {
			struct nlattr *sa[MACSEC_SA_ATTR_MAX + 1];

			an = parse_sa(a, sa);
			if (an < 0)
				return an;
			st->txsa[an].present = true;
			st->txsa[an].an = (uint8_t)an;
			if (sa[MACSEC_SA_ATTR_STATS])
				parse_sa_stats(sa[MACSEC_SA_ATTR_STATS], &st->txsa[an]);
		}
	}
	if (!tb[MACSEC_ATTR_RXSC_LIST])
		return 0;
	nla_for_each_nested(a, tb[MACSEC_ATTR_RXSC_LIST], rem) {
		struct nlattr *sc[MACSEC_RXSC_ATTR_MAX + 1];
		struct fctl_macsec_rxsc_stats one = { 0 };

		if (nla_parse_nested(sc, MACSEC_RXSC_ATTR_MAX, a, rxsc_policy) < 0 ||
		    !sc[MACSEC_RXSC_ATTR_SCI])
			return -EPROTO;
		one.sci = fctl_nli_sci_from_wire(nla_get_u64(sc[MACSEC_RXSC_ATTR_SCI]));
		if (sc[MACSEC_RXSC_ATTR_STATS])
			parse_rxsc_stats(sc[MACSEC_RXSC_ATTR_STATS], &one);
		if (sc[MACSEC_RXSC_ATTR_SA_LIST]) {
			nla_for_each_nested(b, sc[MACSEC_RXSC_ATTR_SA_LIST], rem2) {
				struct nlattr *sa[MACSEC_SA_ATTR_MAX + 1];

				an = parse_sa(b, sa);
				if (an < 0)
					return an;
				one.sa[an].present = true;
				one.sa[an].an = (uint8_t)an;
				if (sa[MACSEC_SA_ATTR_STATS])
					parse_sa_stats(sa[MACSEC_SA_ATTR_STATS], &one.sa[an]);
			}
		}
		add_rxsc_total(&st->rx_total, &one);
		if (st->n_rxsc < FCTL_NL_STATS_MAX_RXSC)
			st->rxsc[st->n_rxsc++] = one;
		else
			st->rxsc_truncated = true;
	}
	return 0;
}

static int stats_secy(int ifindex, struct nlattr **tb, void *arg)
{
	struct stats_ctx *s = arg;

	if (ifindex != s->ifindex)
		return 0;
	s->found = true;
	return stats_fill(tb, &s->st);
}

struct stats_many_ctx {
	size_t n;
	const int *ifindex;
	struct fctl_macsec_stats *out;
	bool *found;
};

static void stats_many_reset(void *arg)
{
	struct stats_many_ctx *s = arg;

	memset(s->out, 0, s->n * sizeof(*s->out));
	memset(s->found, 0, s->n * sizeof(*s->found));
}

static int stats_many_secy(int ifindex, struct nlattr **tb, void *arg)
{
	struct stats_many_ctx *s = arg;

	for (size_t i = 0; i < s->n; i++)
		if (s->ifindex[i] == ifindex && !s->found[i]) {
			int r = stats_fill(tb, &s->out[i]);

			if (r < 0)
				return r;
			s->found[i] = true;
			/* the same name twice: the same counters */
			for (size_t j = i + 1; j < s->n; j++)
				if (s->ifindex[j] == ifindex) {
					s->out[j] = s->out[i];
					s->found[j] = true;
				}
			break;
		}
	return 0;
}

int fctl_nl_read_macsec_stats_many(struct fctl_nl *nl, const char *const *ifnames, size_t n,
				   struct fctl_macsec_stats *out, bool *found)
{
	struct stats_many_ctx s = { .n = n, .out = out, .found = found };
	int *ifx = fctl_calloc(n ? n : 1, sizeof(*ifx));
	enum fctl_cipher cipher;
	int r = 0;

	if (!ifx)
		return -ENOMEM;
	s.ifindex = ifx;
	stats_many_reset(&s);
	for (size_t i = 0; i < n; i++) /* a name that is not a SecY matches nothing */
		if (macsec_link(nl, ifnames[i], &ifx[i], &cipher, NULL) < 0)
			ifx[i] = -1;
	r = macsec_dump(nl, stats_many_secy, stats_many_reset, &s);
	free(ifx);
	return r < 0 ? r : 0;
}

int fctl_nl_read_macsec_stats(struct fctl_nl *nl, const char *ifname, struct fctl_macsec_stats *out)
{
	struct stats_ctx *s;
	enum fctl_cipher cipher;
	int r;

	s = fctl_calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = macsec_link(nl, ifname, &s->ifindex, &cipher, NULL);
	if (r < 0)
		goto out;
	r = macsec_dump(nl, stats_secy, stats_reset, s);
	if (r < 0)
		goto out;
	if (!s->found) {
		r = -ENODEV;
		goto out;
	}
	*out = s->st;
	r = 0;
out:
	free(s);
	return r;
}
