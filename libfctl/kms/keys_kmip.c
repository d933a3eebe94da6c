// SPDX-License-Identifier: MIT
/*
 * The "kmip" key backend: KMIP 1.0 .. 1.4 and 2.0 over TLS 1.2 with a client
 * certificate, our own TTLV encoding (kmip_ttlv.c) over OpenSSL. This file holds the
 * operations (Locate, Get Attributes, Get, Create, Activate, Revoke, Destroy);
 * kmip_conn.c the configuration, the TLS connection and the request exchange.
 *
 * Reference: id "NAME" ([A-Za-z0-9._-], at most 64), version N >= 1: the managed
 * object whose Name attribute is "NAME.vN" (Locate by Name; two answers = refused).
 * Configuration from the environment (docs/kms.md): FCTL_KMIP_SERVER (host:port,
 * default 127.0.0.1:5696), FCTL_KMIP_CA, FCTL_KMIP_CERT, FCTL_KMIP_KEY (the client
 * key must be owner-only), FCTL_KMIP_TIMEOUT_MS (default 5000, each exchange),
 * FCTL_KMIP_VERSION (1.0 .. 1.4 or 2.0, default 1.2).
 *
 * The operations are the same in both major versions; what differs is how
 * attributes travel. KMIP 1.x wraps each one as Attribute{Attribute Name, Attribute
 * Value} (inside a Template-Attribute for Create) and asks for them by name in Get
 * Attributes. KMIP 2.0 tags each value with the attribute's own tag inside one
 * Attributes structure, and asks for them by Attribute Reference (the tag as an
 * enumeration). attr_begin()/attr_end() and attr_of() hide the difference.
 *
 * Key hygiene: the only response holding key bytes (Get) is read into one locked
 * buffer, copied into a struct fctl_key and cleansed; OpenSSL is asked to cleanse
 * its plaintext record buffer too (SSL_OP_CLEANSE_PLAINTEXT).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "kmip_conn_int.h"
#include "kms_int.h"

#define OBJ_SYMMETRIC_KEY 2
#define ALG_AES 3
#define KEY_FORMAT_RAW 1
#define NAME_TYPE_TEXT 1
#define USAGE_ENCRYPT_DECRYPT 0x0C
#define REVOKE_KEY_COMPROMISE 2
#define REVOKE_CESSATION 6
#define APP_NAMESPACE "fabricctl"

static bool v2(const struct kmip_cfg *cfg)
{
	return cfg->major >= 2;
}

/* Opens one attribute of a request and returns the tag its value must carry:
 * KMIP 1.x Attribute{Attribute Name, Attribute Value}, KMIP 2.0 the value alone
 * under the attribute's own tag. */
static uint32_t attr_begin(struct fctl_ttlv_enc *e, const struct kmip_cfg *cfg, const char *name,
			   uint32_t tag)
{
	if (v2(cfg))
		return tag;
	fctl_ttlv_begin(e, FCTL_KMIP_TAG_ATTRIBUTE);
	fctl_ttlv_put_text(e, FCTL_KMIP_TAG_ATTRIBUTE_NAME, name);
	return FCTL_KMIP_TAG_ATTRIBUTE_VALUE;
}

static void attr_end(struct fctl_ttlv_enc *e, const struct kmip_cfg *cfg)
{
	if (!v2(cfg))
		fctl_ttlv_end(e);
}

static void put_name_attr(struct fctl_ttlv_enc *e, const struct kmip_cfg *cfg, const char *name)
{
	fctl_ttlv_begin(e, attr_begin(e, cfg, "Name", FCTL_KMIP_TAG_NAME));
	fctl_ttlv_put_text(e, FCTL_KMIP_TAG_NAME_VALUE, name);
	fctl_ttlv_put_enum(e, FCTL_KMIP_TAG_NAME_TYPE, NAME_TYPE_TEXT);
	fctl_ttlv_end(e);
	attr_end(e, cfg);
}

static int ref_name(const struct fctl_keyref *ref, char *out, size_t outlen, char *err,
		    size_t errlen)
{
	if (!fctl_keys_name_ok(ref->id, 64)) {
		snprintf(err, errlen, "kmip key id '%s' is not a name of 1..64 characters "
			 "[A-Za-z0-9._-]", ref->id);
		return -EINVAL;
	}
	snprintf(out, outlen, "%s.v%u", ref->id, ref->version);
	return 0;
}

/* Unique Identifier of the object named name: -ENOKEY none, -ENOTUNIQ several. */
static int locate(struct kmip_conn *c, const char *name, char *uid, size_t uidlen, char *err,
		  size_t errlen)
{
	struct fctl_ttlv_enc e;
	struct kmip_resp rs;
	const struct fctl_ttlv *t;
	int r;

	fctl_kmip_req_begin(&e, c->cfg, OP_LOCATE);
	if (v2(c->cfg)) /* 2.0: the match criteria are one Attributes structure */
		fctl_ttlv_begin(&e, FCTL_KMIP_TAG_ATTRIBUTES);
	put_name_attr(&e, c->cfg, name);
	if (v2(c->cfg))
		fctl_ttlv_end(&e);
	r = fctl_kmip_exchange(c, &e, OP_LOCATE, &rs, err, errlen);
	if (r < 0)
		return r;
	t = fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, NULL);
	if (!t) {
		snprintf(err, errlen, "kmip: no key named '%s' (unknown key or version)", name);
		r = -ENOKEY;
	} else if (fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, t)) {
		snprintf(err, errlen, "kmip: several objects are named '%s'; refusing to pick one",
			 name);
		r = -ENOTUNIQ;
	} else if (fctl_ttlv_get_text(t, uid, uidlen) < 0) {
		snprintf(err, errlen, "kmip Locate: bad unique identifier in the response");
		r = -EPROTO;
	}
	fctl_kmip_resp_release(&rs);
	return r;
}

enum attr_kind { ATTR_STATE, ATTR_LENGTH, ATTR_ALGORITHM, ATTR_APP_INFO, ATTR_DATE };

/* What Get Attributes asks for: by name in KMIP 1.x, by tag in 2.0. */
static const struct {
	const char *name;
	uint32_t tag;
	enum attr_kind kind;
	enum fctl_key_date date; /* ATTR_DATE only */
} attrs[] = {
	{ "State", FCTL_KMIP_TAG_STATE, ATTR_STATE, 0 },
	{ "Cryptographic Length", FCTL_KMIP_TAG_CRYPTOGRAPHIC_LENGTH, ATTR_LENGTH, 0 },
	{ "Cryptographic Algorithm", FCTL_KMIP_TAG_CRYPTOGRAPHIC_ALGORITHM, ATTR_ALGORITHM, 0 },
	{ "Application Specific Information", FCTL_KMIP_TAG_APPLICATION_SPECIFIC_INFORMATION,
	  ATTR_APP_INFO, 0 },
	{ "Initial Date", FCTL_KMIP_TAG_INITIAL_DATE, ATTR_DATE, FCTL_KEY_DATE_INITIAL },
	{ "Activation Date", FCTL_KMIP_TAG_ACTIVATION_DATE, ATTR_DATE, FCTL_KEY_DATE_ACTIVATION },
	{ "Process Start Date", FCTL_KMIP_TAG_PROCESS_START_DATE, ATTR_DATE,
	  FCTL_KEY_DATE_PROCESS_START },
	{ "Protect Stop Date", FCTL_KMIP_TAG_PROTECT_STOP_DATE, ATTR_DATE,
	  FCTL_KEY_DATE_PROTECT_STOP },
	{ "Deactivation Date", FCTL_KMIP_TAG_DEACTIVATION_DATE, ATTR_DATE,
	  FCTL_KEY_DATE_DEACTIVATION },
	{ "Compromise Date", FCTL_KMIP_TAG_COMPROMISE_DATE, ATTR_DATE, FCTL_KEY_DATE_COMPROMISE },
	{ "Destroy Date", FCTL_KMIP_TAG_DESTROY_DATE, ATTR_DATE, FCTL_KEY_DATE_DESTROY },
};

/* One attribute of a Get Attributes response: its index in attrs[] (-1: not one we
 * asked for) and its value item. Returns -EBADMSG for a malformed 1.x Attribute. */
static int attr_of(const struct kmip_cfg *cfg, const struct fctl_ttlv_doc *doc,
		   const struct fctl_ttlv *a, const struct fctl_ttlv **val)
{
	char name[64];

	if (v2(cfg)) {
		*val = a;
		for (size_t i = 0; i < FCTL_ARRAY_SIZE(attrs); i++)
			if (attrs[i].tag == a->tag)
				return (int)i;
		return -1;
	}
	*val = fctl_ttlv_child(doc, a, FCTL_KMIP_TAG_ATTRIBUTE_VALUE, NULL);
	if (a->tag != FCTL_KMIP_TAG_ATTRIBUTE)
		return -1;
	if (fctl_ttlv_get_text(fctl_ttlv_child(doc, a, FCTL_KMIP_TAG_ATTRIBUTE_NAME, NULL), name,
			       sizeof(name)) < 0 ||
	    !*val)
		return -EBADMSG;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(attrs); i++)
		if (strcmp(attrs[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int get_attributes(struct kmip_conn *c, const char *uid, struct fctl_key_info *info,
			  char *err, size_t errlen)
{
	struct fctl_key_info rec = { 0 }, tmp = { 0 };
	const struct fctl_ttlv *list, *a = NULL;
	struct fctl_ttlv_enc e;
	bool have_state = false, have_rec = false;
	uint32_t server_dates = 0;
	struct kmip_resp rs;
	int r;

	fctl_kmip_req_begin(&e, c->cfg, OP_GET_ATTRIBUTES);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, uid);
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(attrs); i++)
		if (v2(c->cfg))
			fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_ATTRIBUTE_REFERENCE, attrs[i].tag);
		else
			fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_ATTRIBUTE_NAME, attrs[i].name);
	r = fctl_kmip_exchange(c, &e, OP_GET_ATTRIBUTES, &rs, err, errlen);
	if (r < 0)
		return r;
	/* 1.x: Attribute items in the payload; 2.0: one Attributes structure */
	list = v2(c->cfg) ? fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_ATTRIBUTES, NULL)
			  : rs.payload;
	while (list && (a = fctl_ttlv_child(&rs.doc, list, 0, a))) {
		const struct fctl_ttlv *val;
		int i = attr_of(c->cfg, &rs.doc, a, &val);
		uint32_t en;
		int32_t i32;
		int64_t dt;

		if (i == -EBADMSG)
			goto bad;
		if (i < 0)
			continue;
		switch (attrs[i].kind) {
		case ATTR_STATE:
			if (fctl_ttlv_get_enum(val, &en) < 0 || en < 1 || en > 6)
				goto bad;
			tmp.state = (enum fctl_key_state)en;
			have_state = true;
			break;
		case ATTR_LENGTH:
			if (fctl_ttlv_get_int(val, &i32) < 0 || i32 <= 0 || i32 % 8)
				goto bad;
			tmp.len = (size_t)i32 / 8;
			break;
		case ATTR_ALGORITHM:
			if (fctl_ttlv_get_enum(val, &en) < 0)
				goto bad;
			if (en != ALG_AES) {
				snprintf(err, errlen, "kmip object %s is not an AES key", uid);
				r = -EINVAL;
				goto out;
			}
			break;
		case ATTR_APP_INFO: {
			char ns[32];
			const struct fctl_ttlv *d = fctl_ttlv_child(&rs.doc, val,
								    FCTL_KMIP_TAG_APPLICATION_DATA, NULL);

			if (fctl_ttlv_get_text(fctl_ttlv_child(&rs.doc, val,
							       FCTL_KMIP_TAG_APPLICATION_NAMESPACE, NULL),
					       ns, sizeof(ns)) < 0 ||
			    strcmp(ns, APP_NAMESPACE) != 0)
				continue; /* someone else's */
			if (!d || d->type != FCTL_TTLV_TEXT ||
			    fctl_keys_info_parse((const char *)d->val, d->len, &rec) < 0)
				goto bad;
			have_rec = true;
			break;
		}
		case ATTR_DATE:
			if (fctl_ttlv_get_datetime(val, &dt) < 0)
				goto bad;
			tmp.dates[attrs[i].date] = dt;
			server_dates |= 1u << attrs[i].date;
			break;
		}
	}
	if (!have_state) {
		snprintf(err, errlen, "kmip object %s: the server reported no State", uid);
		r = -EPROTO;
		goto out;
	}
	/* fabricctl's record fills the dates the server does not keep; the server's own
	 * dates win (PyKMIP keeps only Initial Date) */
	if (have_rec)
		for (unsigned d = 0; d < FCTL_KEY_DATE_COUNT; d++)
			if ((rec.dates_set & (1u << d)) && !(server_dates & (1u << d))) {
				tmp.dates[d] = rec.dates[d];
				server_dates |= 1u << d;
			}
	tmp.dates_set = server_dates;
	info->state = tmp.state;
	info->len = tmp.len;
	info->dates_set = tmp.dates_set;
	memcpy(info->dates, tmp.dates, sizeof(tmp.dates));
	snprintf(info->object, sizeof(info->object), "kmip:%s", uid);
	r = 0;
	goto out;
bad:
	snprintf(err, errlen, "kmip Get Attributes: malformed attribute in the response");
	r = -EPROTO;
out:
	fctl_kmip_resp_release(&rs);
	return r;
}

/* Get: the raw key bytes into a locked struct fctl_key. */
static int get_key(struct kmip_conn *c, const char *uid, size_t want_len, struct fctl_key **out,
		   char *err, size_t errlen)
{
	const struct fctl_ttlv *sk, *kb, *kv, *km;
	struct fctl_ttlv_enc e;
	struct fctl_key *k;
	struct kmip_resp rs;
	uint32_t fmt;
	int r;

	fctl_kmip_req_begin(&e, c->cfg, OP_GET);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, uid);
	fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_KEY_FORMAT_TYPE, KEY_FORMAT_RAW);
	r = fctl_kmip_exchange(c, &e, OP_GET, &rs, err, errlen);
	if (r < 0)
		return r;
	sk = fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_SYMMETRIC_KEY, NULL);
	kb = fctl_ttlv_child(&rs.doc, sk, FCTL_KMIP_TAG_KEY_BLOCK, NULL);
	kv = fctl_ttlv_child(&rs.doc, kb, FCTL_KMIP_TAG_KEY_VALUE, NULL);
	km = fctl_ttlv_child(&rs.doc, kv, FCTL_KMIP_TAG_KEY_MATERIAL, NULL);
	if (!sk || !km || km->type != FCTL_TTLV_BYTES ||
	    fctl_ttlv_get_enum(fctl_ttlv_child(&rs.doc, kb, FCTL_KMIP_TAG_KEY_FORMAT_TYPE, NULL),
			       &fmt) < 0 || fmt != KEY_FORMAT_RAW) {
		snprintf(err, errlen, "kmip Get: object %s is not a raw symmetric key", uid);
		r = -EPROTO;
		goto out;
	}
	if (km->len != want_len) {
		snprintf(err, errlen, "kmip object %s holds a %u-byte key; the cipher needs %zu", uid,
			 km->len, want_len);
		r = -EINVAL;
		goto out;
	}
	k = fctl_keys_alloc();
	if (!k) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(k->bytes, km->val, km->len);
	k->len = km->len;
	fctl_keys_kcv(k);
	*out = k;
	r = 0;
out:
	fctl_kmip_resp_release(&rs); /* cleanses the key bytes of the response */
	return r;
}

static int simple_op(struct kmip_conn *c, uint32_t op, const char *uid, uint32_t revoke_code,
		     char *err, size_t errlen)
{
	struct fctl_ttlv_enc e;
	struct kmip_resp rs;
	int r;

	fctl_kmip_req_begin(&e, c->cfg, op);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, uid);
	if (op == OP_REVOKE) {
		fctl_ttlv_begin(&e, FCTL_KMIP_TAG_REVOCATION_REASON);
		fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_REVOCATION_REASON_CODE, revoke_code);
		fctl_ttlv_end(&e);
		if (revoke_code == REVOKE_KEY_COMPROMISE)
			fctl_ttlv_put_datetime(&e, FCTL_KMIP_TAG_COMPROMISE_OCCURRENCE_DATE,
					       (int64_t)time(NULL));
	}
	r = fctl_kmip_exchange(c, &e, op, &rs, err, errlen);
	if (r == 0)
		fctl_kmip_resp_release(&rs);
	return r;
}

/* Opens a connection and finds the object of ref. */
static int start(const struct fctl_keyref *ref, struct kmip_cfg *cfg, struct kmip_conn *c,
		 char *uid, size_t uidlen, char *err, size_t errlen)
{
	char name[80];
	int r;

	r = ref_name(ref, name, sizeof(name), err, errlen);
	if (r < 0)
		return r;
	r = fctl_kmip_cfg_load(cfg, err, errlen);
	if (r < 0)
		return r;
	r = fctl_kmip_conn_open(c, cfg, err, errlen);
	if (r < 0)
		return r;
	r = locate(c, name, uid, uidlen, err, errlen);
	if (r < 0)
		fctl_kmip_conn_close(c);
	return r;
}

int fctl_kmip_info(const struct fctl_keyref *ref, struct fctl_key_info *out, char *err,
		   size_t errlen)
{
	struct fctl_key_info info = { .version = ref->version };
	struct fctl_key *k = NULL;
	char uid[128];
	struct kmip_conn c;
	struct kmip_cfg cfg;
	int r;

	r = start(ref, &cfg, &c, uid, sizeof(uid), err, errlen);
	if (r < 0)
		return r;
	r = get_attributes(&c, uid, &info, err, errlen);
	/* the KCV needs the key: fetched into locked memory, wiped at once */
	if (r == 0 && info.state != FCTL_KEY_DESTROYED &&
	    info.state != FCTL_KEY_DESTROYED_COMPROMISED && (info.len == 16 || info.len == 32)) {
		r = get_key(&c, uid, info.len, &k, err, errlen);
		if (r == 0) {
			memcpy(info.kcv, k->kcv, sizeof(info.kcv));
			info.has_kcv = true;
		}
		fctl_key_free(k);
	}
	fctl_kmip_conn_close(&c);
	if (r == 0)
		*out = info;
	return r;
}

int fctl_kmip_fetch(const struct fctl_keyref *ref, size_t want_len, struct fctl_key **out,
		    struct fctl_key_info *info, char *err, size_t errlen)
{
	struct fctl_key_info in = { .version = ref->version };
	struct fctl_key *k = NULL;
	char uid[128];
	struct kmip_conn c;
	struct kmip_cfg cfg;
	int r;

	r = start(ref, &cfg, &c, uid, sizeof(uid), err, errlen);
	if (r < 0)
		return r;
	/* PyKMIP serves Get in any state: check state and dates before asking */
	r = get_attributes(&c, uid, &in, err, errlen);
	if (r == 0)
		r = fctl_key_check_usable(&in, (int64_t)time(NULL), err, errlen);
	if (r == 0 && in.len && in.len != want_len) {
		snprintf(err, errlen, "kmip key '%s' version %u is %zu bytes; the cipher needs %zu",
			 ref->id, ref->version, in.len, want_len);
		r = -EINVAL;
	}
	if (r == 0)
		r = get_key(&c, uid, want_len, &k, err, errlen);
	fctl_kmip_conn_close(&c);
	if (r < 0)
		return r;
	memcpy(in.kcv, k->kcv, sizeof(in.kcv));
	in.has_kcv = true;
	*info = in;
	*out = k;
	return 0;
}

int fctl_kmip_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		     bool activate, struct fctl_key_info *out, char *err, size_t errlen)
{
	struct fctl_key_info rec = { .state = FCTL_KEY_PRE_ACTIVE };
	struct fctl_ttlv_enc e;
	char name[80], uid[128], recs[400];
	struct kmip_resp rs;
	struct kmip_conn c;
	struct kmip_cfg cfg;
	int r;

	r = ref_name(ref, name, sizeof(name), err, errlen);
	if (r < 0)
		return r;
	r = fctl_kmip_cfg_load(&cfg, err, errlen);
	if (r < 0)
		return r;
	r = fctl_kmip_conn_open(&c, &cfg, err, errlen);
	if (r < 0)
		return r;
	r = locate(&c, name, uid, sizeof(uid), err, errlen);
	if (r != -ENOKEY) {
		if (r >= 0 || r == -ENOTUNIQ) {
			snprintf(err, errlen, "kmip key '%s' version %u exists already", ref->id,
				 ref->version);
			r = -EEXIST;
		}
		goto out;
	}
	if (plan)
		for (unsigned d = FCTL_KEY_DATE_ACTIVATION; d <= FCTL_KEY_DATE_DEACTIVATION; d++)
			if (plan->dates_set & (1u << d)) {
				rec.dates[d] = plan->dates[d];
				rec.dates_set |= 1u << d;
			}
	fctl_keys_info_format(&rec, recs, sizeof(recs));
	fctl_kmip_req_begin(&e, &cfg, OP_CREATE);
	fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_OBJECT_TYPE, OBJ_SYMMETRIC_KEY);
	fctl_ttlv_begin(&e, v2(&cfg) ? FCTL_KMIP_TAG_ATTRIBUTES : FCTL_KMIP_TAG_TEMPLATE_ATTRIBUTE);
	fctl_ttlv_put_enum(&e, attr_begin(&e, &cfg, "Cryptographic Algorithm",
					  FCTL_KMIP_TAG_CRYPTOGRAPHIC_ALGORITHM), ALG_AES);
	attr_end(&e, &cfg);
	fctl_ttlv_put_int(&e, attr_begin(&e, &cfg, "Cryptographic Length",
					 FCTL_KMIP_TAG_CRYPTOGRAPHIC_LENGTH), (int32_t)(len * 8));
	attr_end(&e, &cfg);
	fctl_ttlv_put_int(&e, attr_begin(&e, &cfg, "Cryptographic Usage Mask",
					 FCTL_KMIP_TAG_CRYPTOGRAPHIC_USAGE_MASK), USAGE_ENCRYPT_DECRYPT);
	attr_end(&e, &cfg);
	put_name_attr(&e, &cfg, name);
	fctl_ttlv_begin(&e, attr_begin(&e, &cfg, "Application Specific Information",
				       FCTL_KMIP_TAG_APPLICATION_SPECIFIC_INFORMATION));
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_APPLICATION_NAMESPACE, APP_NAMESPACE);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_APPLICATION_DATA, recs);
	fctl_ttlv_end(&e);
	attr_end(&e, &cfg);
	fctl_ttlv_end(&e); /* template-attribute (1.x) / attributes (2.0) */
	r = fctl_kmip_exchange(&c, &e, OP_CREATE, &rs, err, errlen);
	if (r < 0)
		goto out;
	r = fctl_ttlv_get_text(fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER,
					       NULL), uid, sizeof(uid));
	fctl_kmip_resp_release(&rs);
	if (r < 0) {
		snprintf(err, errlen, "kmip Create: no unique identifier in the response");
		r = -EPROTO;
		goto out;
	}
	if (activate) {
		r = simple_op(&c, OP_ACTIVATE, uid, 0, err, errlen);
		if (r < 0)
			goto out;
	}
	if (out) {
		struct fctl_key_info info = { .version = ref->version };
		struct fctl_key *k = NULL;

		r = get_attributes(&c, uid, &info, err, errlen);
		if (r == 0)
			r = get_key(&c, uid, len, &k, err, errlen);
		if (r == 0) {
			memcpy(info.kcv, k->kcv, sizeof(info.kcv));
			info.has_kcv = true;
			*out = info;
		}
		fctl_key_free(k);
	}
out:
	fctl_kmip_conn_close(&c);
	return r;
}

int fctl_kmip_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			 size_t errlen)
{
	char uid[128];
	struct kmip_conn c;
	struct kmip_cfg cfg;
	int r;

	r = start(ref, &cfg, &c, uid, sizeof(uid), err, errlen);
	if (r < 0)
		return r;
	switch (t) {
	case FCTL_KEY_DO_ACTIVATE:
		r = simple_op(&c, OP_ACTIVATE, uid, 0, err, errlen);
		break;
	case FCTL_KEY_DO_DEACTIVATE:
		r = simple_op(&c, OP_REVOKE, uid, REVOKE_CESSATION, err, errlen);
		break;
	case FCTL_KEY_DO_COMPROMISE:
		r = simple_op(&c, OP_REVOKE, uid, REVOKE_KEY_COMPROMISE, err, errlen);
		break;
	case FCTL_KEY_DO_DESTROY:
		r = simple_op(&c, OP_DESTROY, uid, 0, err, errlen);
		break;
	}
	fctl_kmip_conn_close(&c);
	return r;
}
