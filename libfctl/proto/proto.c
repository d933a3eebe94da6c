// SPDX-License-Identifier: MIT
/* Agent protocol frames: strict decoder and encoder (docs/protocol.md). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fctl/proto.h"

enum kind { K_U16, K_U32, K_U64, K_STR, K_BYTES, K_TEXT };

struct tlv_desc {
	uint16_t type;
	uint32_t bit;
	enum kind kind;
	uint32_t max; /* value bytes, for K_STR/K_BYTES/K_TEXT */
	const char *name;
};

static const struct tlv_desc tlvs[] = {
	{ FCTL_TLV_VERSION_MIN, FCTL_HAS_VERSION_MIN, K_U16, 2, "version-min" },
	{ FCTL_TLV_VERSION_MAX, FCTL_HAS_VERSION_MAX, K_U16, 2, "version-max" },
	{ FCTL_TLV_HOST, FCTL_HAS_HOST, K_STR, FCTL_PROTO_MAX_STR, "host" },
	{ FCTL_TLV_PROFILE, FCTL_HAS_PROFILE, K_BYTES, FCTL_PROTO_MAX_PROFILE, "profile" },
	{ FCTL_TLV_PROFILE_NAME, FCTL_HAS_PROFILE_NAME, K_STR, FCTL_PROTO_MAX_STR, "profile-name" },
	{ FCTL_TLV_OPTIONS, FCTL_HAS_OPTIONS, K_U32, 4, "options" },
	{ FCTL_TLV_TO_VERSION, FCTL_HAS_TO_VERSION, K_U64, 8, "to-version" },
	{ FCTL_TLV_RESULT, FCTL_HAS_RESULT, K_U32, 4, "result" },
	{ FCTL_TLV_ERROR, FCTL_HAS_ERROR, K_TEXT, FCTL_PROTO_MAX_ERROR, "error" },
	{ FCTL_TLV_OUTPUT, FCTL_HAS_OUTPUT, K_BYTES, FCTL_PROTO_MAX_FRAME, "output" },
	{ FCTL_TLV_ROLE, FCTL_HAS_ROLE, K_STR, FCTL_PROTO_MAX_STR, "role" },
	{ FCTL_TLV_AGENT, FCTL_HAS_AGENT, K_STR, FCTL_PROTO_MAX_STR, "agent" },
	{ FCTL_TLV_IFNAME, FCTL_HAS_IFNAME, K_STR, 15, "ifname" },
	{ FCTL_TLV_SCI, FCTL_HAS_SCI, K_U64, 8, "sci" },
	{ FCTL_TLV_AN, FCTL_HAS_AN, K_U32, 4, "an" },
	{ FCTL_TLV_PN, FCTL_HAS_PN, K_U64, 8, "pn" },
	{ FCTL_TLV_KEY, FCTL_HAS_KEY, K_BYTES, 32, "key" },
	{ FCTL_TLV_KEYID, FCTL_HAS_KEYID, K_BYTES, 16, "keyid" },
	{ FCTL_TLV_KEY_VERSION, FCTL_HAS_KEY_VERSION, K_U32, 4, "key-version" },
	{ FCTL_TLV_SSCI, FCTL_HAS_SSCI, K_U32, 4, "ssci" },
	{ FCTL_TLV_SALT, FCTL_HAS_SALT, K_BYTES, 12, "salt" },
	{ FCTL_TLV_SA_OPS, FCTL_HAS_SA_OPS, K_BYTES, FCTL_SA_OPS_MAX * FCTL_SA_OP_LEN, "sa-ops" },
	{ FCTL_TLV_CONFIRM, FCTL_HAS_CONFIRM, K_U32, 4, "confirm" },
	{ FCTL_TLV_SIGS, FCTL_HAS_SIGS, K_BYTES, FCTL_PROTO_MAX_SIGS_LEN, "sigs" },
	{ FCTL_TLV_PROBE, FCTL_HAS_PROBE, K_STR, FCTL_PROTO_MAX_STR, "probe" },
};

#define PROFILE_TLVS (FCTL_HAS_HOST | FCTL_HAS_PROFILE | FCTL_HAS_PROFILE_NAME | FCTL_HAS_OPTIONS)

#define SA_ADD_REQ                                                                         \
	(FCTL_HAS_IFNAME | FCTL_HAS_AN | FCTL_HAS_PN | FCTL_HAS_KEY | FCTL_HAS_KEYID)
#define SA_ADD_TLVS (SA_ADD_REQ | FCTL_HAS_KEY_VERSION | FCTL_HAS_SSCI | FCTL_HAS_SALT | FCTL_HAS_HOST)
/* an SA request with every TLV at its largest: header, ifname, sci, an, pn, key, keyid,
 * key-version, ssci, salt, host (each TLV 6 bytes of type and length) */
#define SA_FRAME_MAX (FCTL_PROTO_HDR_LEN + 11 * 6 + 15 + 8 + 4 + 8 + 32 + 16 + 4 + 4 + 12 + \
		      FCTL_PROTO_MAX_STR)

struct type_desc {
	uint8_t type;
	const char *name;
	uint32_t allowed;
	uint32_t required;
};

static const struct type_desc types[] = {
	{ FCTL_MSG_HELLO, "hello", FCTL_HAS_VERSION_MIN | FCTL_HAS_VERSION_MAX | FCTL_HAS_AGENT,
	  FCTL_HAS_VERSION_MIN | FCTL_HAS_VERSION_MAX },
	{ FCTL_MSG_STATUS, "status", FCTL_HAS_HOST | FCTL_HAS_OPTIONS, 0 },
	{ FCTL_MSG_PLAN, "plan", PROFILE_TLVS, FCTL_HAS_PROFILE },
	{ FCTL_MSG_APPLY, "apply", PROFILE_TLVS | FCTL_HAS_CONFIRM | FCTL_HAS_SIGS,
	  FCTL_HAS_PROFILE },
	{ FCTL_MSG_SHOW, "show", FCTL_HAS_HOST | FCTL_HAS_OPTIONS, 0 },
	{ FCTL_MSG_DIFF, "diff", PROFILE_TLVS, FCTL_HAS_PROFILE },
	{ FCTL_MSG_ROLLBACK, "rollback", FCTL_HAS_HOST | FCTL_HAS_OPTIONS | FCTL_HAS_TO_VERSION,
	  FCTL_HAS_TO_VERSION },
	{ FCTL_MSG_HISTORY, "history", FCTL_HAS_HOST | FCTL_HAS_OPTIONS, 0 },
	{ FCTL_MSG_RECOVER, "recover", FCTL_HAS_HOST | FCTL_HAS_OPTIONS, 0 },
	{ FCTL_MSG_SA_DUMP, "sa-dump", FCTL_HAS_IFNAME | FCTL_HAS_HOST, FCTL_HAS_IFNAME },
	{ FCTL_MSG_RXSA_INSTALL, "rxsa-install", SA_ADD_TLVS | FCTL_HAS_SCI,
	  SA_ADD_REQ | FCTL_HAS_SCI },
	{ FCTL_MSG_TXSA_STAGE, "txsa-stage", SA_ADD_TLVS, SA_ADD_REQ },
	{ FCTL_MSG_TXSA_SWITCH, "txsa-switch",
	  FCTL_HAS_IFNAME | FCTL_HAS_AN | FCTL_HAS_KEY_VERSION | FCTL_HAS_KEYID | FCTL_HAS_HOST,
	  FCTL_HAS_IFNAME | FCTL_HAS_AN | FCTL_HAS_KEY_VERSION },
	{ FCTL_MSG_ENCODING_SA, "encoding-sa",
	  FCTL_HAS_IFNAME | FCTL_HAS_AN | FCTL_HAS_KEY_VERSION | FCTL_HAS_KEYID | FCTL_HAS_HOST,
	  FCTL_HAS_IFNAME | FCTL_HAS_AN | FCTL_HAS_KEY_VERSION },
	{ FCTL_MSG_SA_RETIRE, "sa-retire",
	  FCTL_HAS_IFNAME | FCTL_HAS_AN | FCTL_HAS_SCI | FCTL_HAS_KEYID | FCTL_HAS_HOST,
	  FCTL_HAS_IFNAME | FCTL_HAS_AN },
	{ FCTL_MSG_SA_BATCH, "sa-batch", FCTL_HAS_SA_OPS | FCTL_HAS_HOST, FCTL_HAS_SA_OPS },
	{ FCTL_MSG_CONFIRM, "confirm", FCTL_HAS_HOST | FCTL_HAS_OPTIONS, 0 },
	{ FCTL_MSG_PROBE_SERVE, "probe-serve", PROFILE_TLVS | FCTL_HAS_PROBE,
	  FCTL_HAS_PROFILE | FCTL_HAS_PROBE },
	{ FCTL_MSG_PROBE_RUN, "probe-run", PROFILE_TLVS | FCTL_HAS_PROBE,
	  FCTL_HAS_PROFILE | FCTL_HAS_PROBE },
	{ FCTL_MSG_RESPONSE, "response",
	  FCTL_HAS_RESULT | FCTL_HAS_ERROR | FCTL_HAS_OUTPUT | FCTL_HAS_ROLE | FCTL_HAS_AGENT |
		  FCTL_HAS_VERSION_MAX,
	  FCTL_HAS_RESULT },
};

static const struct type_desc *type_find(uint8_t t)
{
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(types); i++)
		if (types[i].type == t)
			return &types[i];
	return NULL;
}

static const struct tlv_desc *tlv_find(uint16_t t)
{
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(tlvs); i++)
		if (tlvs[i].type == t)
			return &tlvs[i];
	return NULL;
}

bool fctl_proto_is_sa_request(uint8_t type)
{
	return type >= FCTL_MSG_SA_DUMP && type <= FCTL_MSG_SA_BATCH;
}

bool fctl_proto_is_probe(uint8_t type)
{
	return type == FCTL_MSG_PROBE_SERVE || type == FCTL_MSG_PROBE_RUN;
}

const char *fctl_proto_type_name(uint8_t type)
{
	const struct type_desc *d = type_find(type);

	return d ? d->name : NULL;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

int fctl_proto_hdr_parse(const uint8_t *buf, size_t n, uint32_t max_frame,
			 struct fctl_proto_hdr *out)
{
	struct fctl_proto_hdr h;

	if (!max_frame || max_frame > FCTL_PROTO_MAX_FRAME)
		max_frame = FCTL_PROTO_MAX_FRAME;
	if (n < FCTL_PROTO_HDR_LEN || get32(buf) != FCTL_PROTO_MAGIC)
		return -EBADMSG;
	h.version = buf[4];
	h.type = buf[5];
	h.flags = get16(buf + 6);
	h.id = get32(buf + 8);
	h.length = get32(buf + 12);
	if (h.version < 1 || h.version > FCTL_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (!type_find(h.type) || h.flags)
		return -EBADMSG;
	if (h.length > max_frame - FCTL_PROTO_HDR_LEN)
		return -EMSGSIZE;
	*out = h;
	return 0;
}

static int bad(char *why, size_t len, int r, const char *fmt, ...) FCTL_PRINTF(4, 5);

static int bad(char *why, size_t len, int r, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return r;
}

static int set_str(char *dst, const uint8_t *v, uint32_t len)
{
	if (memchr(v, '\0', len))
		return -EPROTO;
	memcpy(dst, v, len);
	dst[len] = '\0';
	return 0;
}

/* --- sa-batch records (layout: fctl/proto.h) --------------------------------- */

#define OP_TYPE 0
#define OP_PAD1 1
#define OP_PRESENT 2
#define OP_IFNAME 4
#define OP_SCI 20
#define OP_PN 28
#define OP_AN 36
#define OP_KEY_LEN 37
#define OP_PAD2 38
#define OP_KEY_VERSION 40
#define OP_SSCI 44
#define OP_KEY 48
#define OP_KEYID 80
#define OP_SALT 96
#define OP_KNOWN 0xffu

static const struct {
	uint16_t op;
	uint32_t has;
} op_bits[] = {
	{ FCTL_SA_OP_SCI, FCTL_HAS_SCI },     { FCTL_SA_OP_AN, FCTL_HAS_AN },
	{ FCTL_SA_OP_PN, FCTL_HAS_PN },       { FCTL_SA_OP_KEY, FCTL_HAS_KEY },
	{ FCTL_SA_OP_KEYID, FCTL_HAS_KEYID }, { FCTL_SA_OP_KEY_VERSION, FCTL_HAS_KEY_VERSION },
	{ FCTL_SA_OP_SSCI, FCTL_HAS_SSCI },   { FCTL_SA_OP_SALT, FCTL_HAS_SALT },
};

static bool all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* A field the record does not carry must be zero: one spelling per request. */
static bool op_absent_zero(const uint8_t *r, uint16_t pres)
{
	static const struct {
		uint16_t bit;
		uint8_t off, len;
	} f[] = {
		{ FCTL_SA_OP_SCI, OP_SCI, 8 },	 { FCTL_SA_OP_PN, OP_PN, 8 },
		{ FCTL_SA_OP_AN, OP_AN, 1 },	 { FCTL_SA_OP_KEY, OP_KEY_LEN, 1 },
		{ FCTL_SA_OP_KEY, OP_KEY, 32 },	 { FCTL_SA_OP_KEYID, OP_KEYID, 16 },
		{ FCTL_SA_OP_KEY_VERSION, OP_KEY_VERSION, 4 },
		{ FCTL_SA_OP_SSCI, OP_SSCI, 4 }, { FCTL_SA_OP_SALT, OP_SALT, 12 },
	};

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(f); i++)
		if (!(pres & f[i].bit) && !all_zero(r + f[i].off, f[i].len))
			return false;
	return true;
}

/* One record: the rules of its single request. */
static int sa_op_check(const uint8_t *r, size_t i, char *why, size_t whylen)
{
	uint16_t pres = get16(r + OP_PRESENT);
	const struct type_desc *td = type_find(r[OP_TYPE]);
	size_t n = strnlen((const char *)r + OP_IFNAME, 16);
	uint32_t has = FCTL_HAS_IFNAME;
	unsigned kl = r[OP_KEY_LEN];

	if (!td || r[OP_TYPE] < FCTL_MSG_SA_DUMP || r[OP_TYPE] > FCTL_MSG_SA_RETIRE)
		return bad(why, whylen, -EPROTO, "sa-ops record %zu: type %u is not an SA request",
			   i, r[OP_TYPE]);
	if (r[OP_PAD1] || get16(r + OP_PAD2) || (pres & ~OP_KNOWN))
		return bad(why, whylen, -EPROTO, "sa-ops record %zu: reserved bits set", i);
	if (n == 0 || n > 15 || !all_zero(r + OP_IFNAME + n, 16 - n))
		return bad(why, whylen, -EPROTO, "sa-ops record %zu: bad ifname", i);
	if (!op_absent_zero(r, pres))
		return bad(why, whylen, -EPROTO, "sa-ops record %zu: a field it does not carry "
			   "is not zero", i);
	if ((pres & FCTL_SA_OP_AN) && r[OP_AN] > 3)
		return bad(why, whylen, -EPROTO, "sa-ops record %zu: AN %u out of 0..3", i,
			   r[OP_AN]);
	if ((pres & FCTL_SA_OP_KEY) && kl != 16 && kl != 32)
		return bad(why, whylen, -EBADMSG, "sa-ops record %zu: key of %u bytes, expected "
			   "16 or 32", i, kl);
	if ((pres & FCTL_SA_OP_KEY) && !all_zero(r + OP_KEY + kl, 32 - kl))
		return bad(why, whylen, -EPROTO, "sa-ops record %zu: bytes after the key", i);
	for (size_t b = 0; b < FCTL_ARRAY_SIZE(op_bits); b++)
		if (pres & op_bits[b].op)
			has |= op_bits[b].has;
	if ((has & ~td->allowed) || (has & td->required) != td->required)
		return bad(why, whylen, -EPROTO, "sa-ops record %zu: fields not allowed in %s, "
			   "or one required missing", i, td->name);
	return 0;
}

static int sa_ops_check(const uint8_t *v, uint32_t len, char *why, size_t whylen)
{
	if (!v || len == 0 || len % FCTL_SA_OP_LEN)
		return bad(why, whylen, -EBADMSG, "TLV sa-ops: %u bytes, not a whole number of "
			   "%u-byte records", len, FCTL_SA_OP_LEN);
	for (size_t i = 0; i < len / FCTL_SA_OP_LEN; i++) {
		int r = sa_op_check(v + i * FCTL_SA_OP_LEN, i, why, whylen);

		if (r < 0)
			return r;
	}
	return 0;
}

size_t fctl_proto_sa_ops_count(const struct fctl_msg *batch)
{
	return batch->type == FCTL_MSG_SA_BATCH ? batch->sa_ops_len / FCTL_SA_OP_LEN : 0;
}

void fctl_proto_sa_op_get(const struct fctl_msg *batch, size_t i, struct fctl_msg *op)
{
	const uint8_t *r = batch->sa_ops + i * FCTL_SA_OP_LEN;
	uint16_t pres = get16(r + OP_PRESENT);

	memset(op, 0, sizeof(*op));
	op->version = batch->version;
	op->type = r[OP_TYPE];
	op->id = batch->id;
	op->present = FCTL_HAS_IFNAME | (batch->present & FCTL_HAS_HOST);
	memcpy(op->host, batch->host, sizeof(op->host));
	memcpy(op->ifname, r + OP_IFNAME, 16);
	op->ifname[15] = '\0';
	for (size_t b = 0; b < FCTL_ARRAY_SIZE(op_bits); b++)
		if (pres & op_bits[b].op)
			op->present |= op_bits[b].has;
	op->sci = get64(r + OP_SCI);
	op->pn = get64(r + OP_PN);
	op->an = r[OP_AN];
	op->key_version = get32(r + OP_KEY_VERSION);
	op->ssci = get32(r + OP_SSCI);
	if (pres & FCTL_SA_OP_KEY) {
		op->key = r + OP_KEY;
		op->key_len = r[OP_KEY_LEN];
	}
	op->keyid = pres & FCTL_SA_OP_KEYID ? r + OP_KEYID : NULL;
	op->salt = pres & FCTL_SA_OP_SALT ? r + OP_SALT : NULL;
}

int fctl_proto_sa_op_put(const struct fctl_msg *op, struct fctl_buf *ops)
{
	uint8_t rec[FCTL_SA_OP_LEN] = { 0 };
	uint16_t pres = 0;
	size_t n = strnlen(op->ifname, sizeof(op->ifname));
	int r = 0;

	if (!fctl_proto_is_sa_request(op->type) || op->type == FCTL_MSG_SA_BATCH || n == 0 ||
	    n > 15 || op->an > 3 || (op->present & FCTL_HAS_KEY && op->key_len != 16 &&
				      op->key_len != 32))
		return -EINVAL;
	if (ops->len + FCTL_SA_OP_LEN > (size_t)FCTL_SA_OPS_MAX * FCTL_SA_OP_LEN)
		return -ENOSPC;
	for (size_t b = 0; b < FCTL_ARRAY_SIZE(op_bits); b++)
		if (op->present & op_bits[b].has)
			pres |= op_bits[b].op;
	rec[OP_TYPE] = op->type;
	put16(rec + OP_PRESENT, pres);
	memcpy(rec + OP_IFNAME, op->ifname, n);
	if (pres & FCTL_SA_OP_SCI)
		put64(rec + OP_SCI, op->sci);
	if (pres & FCTL_SA_OP_PN)
		put64(rec + OP_PN, op->pn);
	if (pres & FCTL_SA_OP_AN)
		rec[OP_AN] = (uint8_t)op->an;
	if (pres & FCTL_SA_OP_KEY_VERSION)
		put32(rec + OP_KEY_VERSION, op->key_version);
	if (pres & FCTL_SA_OP_SSCI)
		put32(rec + OP_SSCI, op->ssci);
	if (pres & FCTL_SA_OP_KEY) {
		rec[OP_KEY_LEN] = (uint8_t)op->key_len;
		memcpy(rec + OP_KEY, op->key, op->key_len);
	}
	if ((pres & FCTL_SA_OP_KEYID) && op->keyid)
		memcpy(rec + OP_KEYID, op->keyid, 16);
	if ((pres & FCTL_SA_OP_SALT) && op->salt)
		memcpy(rec + OP_SALT, op->salt, 12);
	if (((pres & FCTL_SA_OP_KEYID) && !op->keyid) || ((pres & FCTL_SA_OP_SALT) && !op->salt) ||
	    sa_op_check(rec, 0, NULL, 0) < 0)
		r = -EINVAL;
	else if (fctl_buf_append(ops, rec, sizeof(rec)) < 0)
		r = -ENOMEM;
	fctl_memzero(rec, sizeof(rec));
	return r;
}

/* Checks a known TLV's value length against its kind: exact for numbers, a ceiling for the
 * rest; refuses with the reason in why. */
static int tlv_check_len(const struct tlv_desc *d, uint32_t len, char *why, size_t whylen)
{
	switch (d->kind) {
	case K_U16:
	case K_U32:
	case K_U64:
		if (len != d->max)
			return bad(why, whylen, -EBADMSG, "TLV %s: %u bytes, expected %u",
				   d->name, len, d->max);
		break;
	default:
		if (len > d->max)
			return bad(why, whylen, -EMSGSIZE, "TLV %s: %u bytes over the limit %u",
				   d->name, len, d->max);
	}
	return 0;
}

bool fctl_proto_sig_name_ok(const char *name, size_t len)
{
	if (!name || len == 0 || len > FCTL_PROTO_MAX_SIG_NAME || name[0] == '.' || len < 5 ||
	    memcmp(name + len - 4, ".sig", 4) != 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-' ||
		      ch == '+' || ch == '@'))
			return false;
		if (ch == '.' && i + 1 < len && name[i + 1] == '.')
			return false;
	}
	return true;
}

/* One SIGS record at v[off..len): its name and data bounds; -EBADMSG when cut short or
 * over a limit, -EPROTO for a name that is not a plain signature file name. */
static int sig_record(const uint8_t *v, size_t len, size_t off, size_t *nl, size_t *dl,
		      char *why, size_t whylen, size_t i)
{
	if (len - off < 1 || (*nl = v[off]) == 0 || len - off - 1 < *nl + 4)
		return bad(why, whylen, -EBADMSG, "TLV sigs: record %zu cut short", i);
	if (!fctl_proto_sig_name_ok((const char *)v + off + 1, *nl))
		return bad(why, whylen, -EPROTO, "TLV sigs: record %zu: not a plain signature "
			   "file name (NAME.sig of [A-Za-z0-9._+@-], no '/', no '..')", i);
	*dl = get32(v + off + 1 + *nl);
	if (*dl > FCTL_PROTO_MAX_SIG)
		return bad(why, whylen, -EMSGSIZE, "TLV sigs: record %zu: %zu bytes over the "
			   "limit %u", i, *dl, FCTL_PROTO_MAX_SIG);
	if (len - off - 1 - *nl - 4 < *dl)
		return bad(why, whylen, -EBADMSG, "TLV sigs: record %zu cut short", i);
	return 0;
}

static int sigs_check(const uint8_t *v, uint32_t len, char *why, size_t whylen)
{
	size_t off = 0, i = 0, nl = 0, dl = 0;

	if (!v || len == 0)
		return bad(why, whylen, -EBADMSG, "TLV sigs: empty");
	for (; off < len; i++) {
		int r;

		if (i == FCTL_PROTO_MAX_SIGS)
			return bad(why, whylen, -EMSGSIZE, "TLV sigs: more than %u signature files",
				   FCTL_PROTO_MAX_SIGS);
		r = sig_record(v, len, off, &nl, &dl, why, whylen, i);
		if (r < 0)
			return r;
		off += 1 + nl + 4 + dl;
	}
	return 0;
}

int fctl_proto_sig_next(const struct fctl_msg *m, size_t *off, struct fctl_proto_sig *out)
{
	size_t nl = 0, dl = 0;

	if (!(m->present & FCTL_HAS_SIGS) || *off >= m->sigs_len ||
	    sig_record(m->sigs, m->sigs_len, *off, &nl, &dl, NULL, 0, 0) < 0)
		return 0;
	memcpy(out->name, m->sigs + *off + 1, nl);
	out->name[nl] = '\0';
	out->data = m->sigs + *off + 1 + nl + 4;
	out->len = (uint32_t)dl;
	*off += 1 + nl + 4 + dl;
	return 1;
}

int fctl_proto_sig_put(struct fctl_buf *sigs, size_t *n, const char *name, const void *data,
		       size_t len)
{
	size_t nl = name ? strlen(name) : 0;
	uint8_t h[4];

	if (!fctl_proto_sig_name_ok(name, nl))
		return -EINVAL;
	if (len > FCTL_PROTO_MAX_SIG)
		return -EFBIG;
	if (*n >= FCTL_PROTO_MAX_SIGS)
		return -ENOSPC;
	put32(h, (uint32_t)len);
	if (fctl_buf_append(sigs, (uint8_t[]){ (uint8_t)nl }, 1) < 0 ||
	    fctl_buf_append(sigs, name, nl) < 0 || fctl_buf_append(sigs, h, 4) < 0 ||
	    (len && fctl_buf_append(sigs, data, len) < 0))
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Stores one known, length-checked TLV value in m (pointers into the frame for byte values);
 * refuses out-of-range values with the reason in why. */
static int tlv_store(struct fctl_msg *m, const struct tlv_desc *d, const uint8_t *v, uint32_t len,
		     char *why, size_t whylen)
{
	int r = 0;

	switch (d->type) {
	case FCTL_TLV_VERSION_MIN:
		m->version_min = get16(v);
		break;
	case FCTL_TLV_VERSION_MAX:
		m->version_max = get16(v);
		break;
	case FCTL_TLV_HOST:
		r = len ? set_str(m->host, v, len) : -EPROTO;
		break;
	case FCTL_TLV_PROBE:
		r = len ? set_str(m->probe, v, len) : -EPROTO;
		break;
	case FCTL_TLV_PROFILE:
		m->profile = v;
		m->profile_len = len;
		break;
	case FCTL_TLV_PROFILE_NAME:
		r = set_str(m->profile_name, v, len);
		break;
	case FCTL_TLV_OPTIONS:
		m->options = get32(v);
		if (m->options & ~(uint32_t)FCTL_OPT_ALL)
			return bad(why, whylen, -EPROTO, "unknown option bits 0x%x",
				   m->options & ~(uint32_t)FCTL_OPT_ALL);
		break;
	case FCTL_TLV_TO_VERSION:
		m->to_version = get64(v);
		break;
	case FCTL_TLV_RESULT:
		m->result = get32(v);
		break;
	case FCTL_TLV_ERROR:
		m->error = (const char *)v;
		m->error_len = len;
		break;
	case FCTL_TLV_OUTPUT:
		m->output = v;
		m->output_len = len;
		break;
	case FCTL_TLV_ROLE:
		r = set_str(m->role, v, len);
		break;
	case FCTL_TLV_AGENT:
		r = set_str(m->agent, v, len);
		break;
	case FCTL_TLV_IFNAME:
		r = len ? set_str(m->ifname, v, len) : -EPROTO;
		break;
	case FCTL_TLV_SCI:
		m->sci = get64(v);
		break;
	case FCTL_TLV_AN:
		m->an = get32(v);
		if (m->an > 3)
			return bad(why, whylen, -EPROTO, "AN %u out of 0..3", m->an);
		break;
	case FCTL_TLV_PN:
		m->pn = get64(v);
		break;
	case FCTL_TLV_KEY:
		if (len != 16 && len != 32)
			return bad(why, whylen, -EBADMSG, "TLV key: %u bytes, expected 16 or 32",
				   len);
		m->key = v;
		m->key_len = len;
		break;
	case FCTL_TLV_KEYID:
		if (len != 16)
			return bad(why, whylen, -EBADMSG, "TLV keyid: %u bytes, expected 16", len);
		m->keyid = v;
		break;
	case FCTL_TLV_KEY_VERSION:
		m->key_version = get32(v);
		break;
	case FCTL_TLV_SSCI:
		m->ssci = get32(v);
		break;
	case FCTL_TLV_SALT:
		if (len != 12)
			return bad(why, whylen, -EBADMSG, "TLV salt: %u bytes, expected 12", len);
		m->salt = v;
		break;
	case FCTL_TLV_SA_OPS:
		r = sa_ops_check(v, len, why, whylen);
		if (r < 0)
			return r;
		m->sa_ops = v;
		m->sa_ops_len = len;
		break;
	case FCTL_TLV_SIGS:
		r = sigs_check(v, len, why, whylen);
		if (r < 0)
			return r;
		m->sigs = v;
		m->sigs_len = len;
		break;
	case FCTL_TLV_CONFIRM:
		m->confirm_seconds = get32(v);
		if (!m->confirm_seconds || m->confirm_seconds > FCTL_PROTO_MAX_CONFIRM)
			return bad(why, whylen, -EPROTO, "confirm %u s out of 1..%u",
				   m->confirm_seconds, FCTL_PROTO_MAX_CONFIRM);
		break;
	}
	if (r < 0)
		return bad(why, whylen, r, "TLV %s: empty or contains NUL", d->name);
	return 0;
}

int fctl_proto_decode(const uint8_t *buf, size_t n, uint32_t max_frame, struct fctl_msg *out,
		      char *why, size_t whylen)
{
	const struct type_desc *td;
	struct fctl_proto_hdr h;
	struct fctl_msg m;
	size_t off;
	int r;

	r = fctl_proto_hdr_parse(buf, n, max_frame, &h);
	if (r == -EBADMSG)
		return bad(why, whylen, r, "bad header (magic, type or flags)");
	if (r == -EPROTONOSUPPORT)
		return bad(why, whylen, r, "protocol version %u not supported (1..%u)",
			   n > 4 ? buf[4] : 0, FCTL_PROTO_VERSION);
	if (r == -EMSGSIZE)
		return bad(why, whylen, r, "frame of %u bytes over the limit", get32(buf + 12));
	if (n != FCTL_PROTO_HDR_LEN + (size_t)h.length)
		return bad(why, whylen, -EBADMSG, "frame length %zu does not match header %u", n,
			   h.length);
	td = type_find(h.type);
	memset(&m, 0, sizeof(m));
	m.version = h.version;
	m.type = h.type;
	m.flags = h.flags;
	m.id = h.id;
	off = FCTL_PROTO_HDR_LEN;
	while (off < n) {
		const struct tlv_desc *d;
		const uint8_t *v;
		uint16_t t;
		uint32_t len;

		if (n - off < 6)
			return bad(why, whylen, -EBADMSG, "truncated TLV header at offset %zu", off);
		t = get16(buf + off);
		len = get32(buf + off + 2);
		off += 6;
		if (len > n - off)
			return bad(why, whylen, -EBADMSG, "TLV 0x%04x of %u bytes overruns the frame",
				   t, len);
		v = buf + off;
		off += len;
		if (t & FCTL_TLV_CONTAINER)
			return bad(why, whylen, -EPROTO, "nested TLV 0x%04x not allowed", t);
		d = tlv_find(t);
		if (!d) {
			if (t & FCTL_TLV_CRITICAL)
				return bad(why, whylen, -EPROTO, "unknown critical TLV 0x%04x", t);
			continue;
		}
		if (!(td->allowed & d->bit))
			return bad(why, whylen, -EPROTO, "TLV %s not allowed in %s", d->name,
				   td->name);
		if (m.present & d->bit)
			return bad(why, whylen, -EPROTO, "duplicate TLV %s", d->name);
		m.present |= d->bit;
		r = tlv_check_len(d, len, why, whylen);
		if (r < 0)
			return r;
		r = tlv_store(&m, d, v, len, why, whylen);
		if (r < 0)
			return r;
	}
	if ((m.present & td->required) != td->required)
		return bad(why, whylen, -EPROTO, "%s without a required TLV", td->name);
	if ((m.present & FCTL_HAS_CONFIRM) && (m.options & FCTL_OPT_DRY_RUN))
		return bad(why, whylen, -EPROTO, "confirm with dry-run: a plan has nothing to "
			   "confirm");
	if ((m.present & FCTL_HAS_VERSION_MIN) && (m.present & FCTL_HAS_VERSION_MAX) &&
	    (!m.version_min || m.version_min > m.version_max))
		return bad(why, whylen, -EPROTO, "version range %u..%u is empty", m.version_min,
			   m.version_max);
	*out = m;
	return 0;
}

static int put_tlv(struct fctl_buf *b, uint16_t t, const void *v, size_t len)
{
	uint8_t h[6];

	put16(h, t);
	put32(h + 2, (uint32_t)len);
	if (fctl_buf_append(b, h, sizeof(h)) < 0)
		return -ENOMEM;
	return len ? fctl_buf_append(b, v, len) : 0;
}

/* Points v and len at the wire value of TLV d from m, numbers written big-endian into num
 * (8 bytes); refuses a value the decoder would refuse. */
static int tlv_value(const struct fctl_msg *m, const struct tlv_desc *d, uint8_t *num,
		     const void **v, size_t *len)
{
	*v = num;
	*len = d->max;
	switch (d->type) {
	case FCTL_TLV_VERSION_MIN:
		put16(num, m->version_min);
		break;
	case FCTL_TLV_VERSION_MAX:
		put16(num, m->version_max);
		break;
	case FCTL_TLV_OPTIONS:
		put32(num, m->options);
		if (m->options & ~(uint32_t)FCTL_OPT_ALL)
			return -EINVAL;
		break;
	case FCTL_TLV_TO_VERSION:
		put64(num, m->to_version);
		break;
	case FCTL_TLV_RESULT:
		put32(num, m->result);
		break;
	case FCTL_TLV_HOST:
		*v = m->host;
		*len = strnlen(m->host, sizeof(m->host));
		if (!*len)
			return -EINVAL;
		break;
	case FCTL_TLV_PROBE:
		*v = m->probe;
		*len = strnlen(m->probe, sizeof(m->probe));
		if (!*len)
			return -EINVAL;
		break;
	case FCTL_TLV_PROFILE_NAME:
		*v = m->profile_name;
		*len = strnlen(m->profile_name, sizeof(m->profile_name));
		break;
	case FCTL_TLV_ROLE:
		*v = m->role;
		*len = strnlen(m->role, sizeof(m->role));
		break;
	case FCTL_TLV_AGENT:
		*v = m->agent;
		*len = strnlen(m->agent, sizeof(m->agent));
		break;
	case FCTL_TLV_PROFILE:
		*v = m->profile;
		*len = m->profile_len;
		break;
	case FCTL_TLV_ERROR:
		*v = m->error;
		*len = m->error_len;
		break;
	case FCTL_TLV_OUTPUT:
		*v = m->output;
		*len = m->output_len;
		break;
	case FCTL_TLV_IFNAME:
		*v = m->ifname;
		*len = strnlen(m->ifname, sizeof(m->ifname));
		if (!*len)
			return -EINVAL;
		break;
	case FCTL_TLV_SCI:
		put64(num, m->sci);
		break;
	case FCTL_TLV_AN:
		put32(num, m->an);
		if (m->an > 3)
			return -EINVAL;
		break;
	case FCTL_TLV_PN:
		put64(num, m->pn);
		break;
	case FCTL_TLV_KEY:
		*v = m->key;
		*len = m->key_len;
		if (*len != 16 && *len != 32)
			return -EINVAL;
		break;
	case FCTL_TLV_KEYID:
		*v = m->keyid;
		*len = 16;
		break;
	case FCTL_TLV_KEY_VERSION:
		put32(num, m->key_version);
		break;
	case FCTL_TLV_SSCI:
		put32(num, m->ssci);
		break;
	case FCTL_TLV_SALT:
		*v = m->salt;
		*len = 12;
		break;
	case FCTL_TLV_SA_OPS:
		*v = m->sa_ops;
		*len = m->sa_ops_len;
		if (sa_ops_check(m->sa_ops, m->sa_ops_len, NULL, 0) < 0)
			return -EINVAL;
		break;
	case FCTL_TLV_SIGS:
		*v = m->sigs;
		*len = m->sigs_len;
		if (sigs_check(m->sigs, m->sigs_len, NULL, 0) < 0)
			return -EINVAL;
		break;
	case FCTL_TLV_CONFIRM:
		put32(num, m->confirm_seconds);
		if (!m->confirm_seconds || m->confirm_seconds > FCTL_PROTO_MAX_CONFIRM)
			return -EINVAL;
		break;
	}
	return 0;
}

int fctl_proto_encode(const struct fctl_msg *m, struct fctl_buf *out)
{
	const struct type_desc *td = type_find(m->type);
	struct fctl_buf b = { 0 };
	size_t start;
	int r = 0;

	if (!td || m->flags || (m->present & ~td->allowed) ||
	    (m->present & td->required) != td->required)
		return -EINVAL;
	if ((m->present & FCTL_HAS_CONFIRM) && (m->present & FCTL_HAS_OPTIONS) &&
	    (m->options & FCTL_OPT_DRY_RUN))
		return -EINVAL;
	if (m->present & (FCTL_HAS_KEY | FCTL_HAS_SA_OPS)) {
		/* the whole frame in one allocation: growing it would leave a copy of the SAK
		 * in the block realloc freed */
		static const uint8_t room[SA_FRAME_MAX];
		size_t need = m->present & FCTL_HAS_SA_OPS ? SA_FRAME_MAX + m->sa_ops_len : 0;

		if (fctl_buf_append(&b, room, sizeof(room)) < 0)
			return -ENOMEM;
		while (b.len < need && !b.oom)
			fctl_buf_append(&b, room, need - b.len < sizeof(room) ? need - b.len
									     : sizeof(room));
		if (b.oom) {
			fctl_buf_release(&b);
			return -ENOMEM;
		}
		fctl_buf_reset(&b);
	}
	if (fctl_buf_append(&b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", FCTL_PROTO_HDR_LEN) < 0)
		return -ENOMEM;
	start = b.len;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(tlvs) && r == 0; i++) {
		const struct tlv_desc *d = &tlvs[i];
		uint8_t num[8];
		const void *v;
		size_t len;

		if (!(m->present & d->bit))
			continue;
		r = tlv_value(m, d, num, &v, &len);
		if (r == 0 && len > d->max)
			r = -EINVAL;
		if (r == 0 && (d->kind == K_STR) && len > FCTL_PROTO_MAX_STR)
			r = -EINVAL;
		if (r == 0)
			r = put_tlv(&b, d->type, v, len);
	}
	if (r == 0 && b.len > FCTL_PROTO_MAX_FRAME)
		r = -EMSGSIZE;
	if (r == 0 && b.oom)
		r = -ENOMEM;
	if (r == 0) {
		uint8_t *h = (uint8_t *)b.data;

		put32(h, FCTL_PROTO_MAGIC);
		h[4] = FCTL_PROTO_VERSION;
		h[5] = m->type;
		put16(h + 6, m->flags);
		put32(h + 8, m->id);
		put32(h + 12, (uint32_t)(b.len - start));
		r = fctl_buf_append(out, b.data, b.len) < 0 ? -ENOMEM : 0;
	}
	if (b.data && (m->present & (FCTL_HAS_KEY | FCTL_HAS_SA_OPS)))
		fctl_memzero(b.data, b.len); /* the SAK was copied in */
	fctl_buf_release(&b);
	return r;
}

int fctl_proto_negotiate(uint16_t peer_min, uint16_t peer_max)
{
	if (peer_min > peer_max || peer_min > FCTL_PROTO_VERSION || peer_max < 1)
		return -EPROTONOSUPPORT;
	return peer_max < FCTL_PROTO_VERSION ? peer_max : FCTL_PROTO_VERSION;
}
