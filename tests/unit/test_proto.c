// SPDX-License-Identifier: MIT
/* Agent protocol: round trips of every message type, and every malformed class refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fctl/proto.h"

static const uint8_t yaml[] = "schema: 1\nprofile: {name: x, version: 3}\n";

static struct fctl_buf enc(const struct fctl_msg *m)
{
	struct fctl_buf b = { 0 };

	assert_int_equal(fctl_proto_encode(m, &b), 0);
	return b;
}

static void test_roundtrip(void **state)
{
	struct fctl_msg reqs[] = {
		{ .type = FCTL_MSG_HELLO, .id = 1, .present = FCTL_HAS_VERSION_MIN |
			FCTL_HAS_VERSION_MAX | FCTL_HAS_AGENT, .version_min = 1, .version_max = 7,
		  .agent = "fabricctl test" },
		{ .type = FCTL_MSG_STATUS, .id = 2 },
		{ .type = FCTL_MSG_PLAN, .id = 3, .present = FCTL_HAS_PROFILE | FCTL_HAS_HOST |
			FCTL_HAS_PROFILE_NAME | FCTL_HAS_OPTIONS, .profile = yaml,
		  .profile_len = sizeof(yaml) - 1, .host = "h1", .profile_name = "p.yaml",
		  .options = FCTL_OPT_JSON },
		{ .type = FCTL_MSG_APPLY, .id = 0xffffffffu, .present = FCTL_HAS_PROFILE |
			FCTL_HAS_OPTIONS, .profile = yaml, .profile_len = sizeof(yaml) - 1,
		  .options = FCTL_OPT_DRY_RUN | FCTL_OPT_JSON },
		{ .type = FCTL_MSG_SHOW, .id = 5, .present = FCTL_HAS_OPTIONS,
		  .options = FCTL_OPT_JSON },
		{ .type = FCTL_MSG_DIFF, .id = 6, .present = FCTL_HAS_PROFILE, .profile = yaml,
		  .profile_len = 0 },
		{ .type = FCTL_MSG_ROLLBACK, .id = 7, .present = FCTL_HAS_TO_VERSION,
		  .to_version = UINT64_MAX - 1 },
		{ .type = FCTL_MSG_HISTORY, .id = 8, .present = FCTL_HAS_HOST, .host = "node-a" },
		{ .type = FCTL_MSG_RECOVER, .id = 9 },
		{ .type = FCTL_MSG_RESPONSE, .id = 9, .present = FCTL_HAS_RESULT | FCTL_HAS_ERROR |
			FCTL_HAS_OUTPUT | FCTL_HAS_ROLE | FCTL_HAS_AGENT | FCTL_HAS_VERSION_MAX,
		  .result = 3, .error = "fabricctl: failed\n", .error_len = 18,
		  .output = (const uint8_t *)"{\"a\":1}\n", .output_len = 8, .role = "operator",
		  .agent = "h1 0.1", .version_max = 1 },
	};

	(void)state;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(reqs); i++) {
		struct fctl_buf b = enc(&reqs[i]), b2 = { 0 };
		struct fctl_msg m;
		char why[128] = "";

		assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, why, sizeof(why)), 0);
		assert_int_equal(m.type, reqs[i].type);
		assert_int_equal(m.id, reqs[i].id);
		assert_int_equal(m.present, reqs[i].present);
		assert_int_equal(m.version, FCTL_PROTO_VERSION);
		assert_string_equal(m.host, reqs[i].host);
		assert_string_equal(m.role, reqs[i].role);
		assert_string_equal(m.agent, reqs[i].agent);
		assert_string_equal(m.profile_name, reqs[i].profile_name);
		assert_int_equal(m.options, reqs[i].options);
		assert_true(m.to_version == reqs[i].to_version);
		assert_int_equal(m.result, reqs[i].result);
		assert_int_equal(m.profile_len, reqs[i].profile_len);
		if (m.profile_len)
			assert_memory_equal(m.profile, reqs[i].profile, m.profile_len);
		assert_int_equal(m.error_len, reqs[i].error_len);
		if (m.error_len)
			assert_memory_equal(m.error, reqs[i].error, m.error_len);
		assert_int_equal(m.output_len, reqs[i].output_len);
		/* re-encoding the decoded message gives the same bytes */
		assert_int_equal(fctl_proto_encode(&m, &b2), 0);
		assert_int_equal(b2.len, b.len);
		assert_memory_equal(b2.data, b.data, b.len);
		fctl_buf_release(&b);
		fctl_buf_release(&b2);
	}
}

/* --- malformed frames, built by hand --- */

struct frame {
	uint8_t b[1024];
	size_t n;
};

static void hdr(struct frame *f, uint8_t ver, uint8_t type, uint16_t flags)
{
	static const uint8_t magic[4] = { 'F', 'C', 'T', 'L' };

	memcpy(f->b, magic, 4);
	f->b[4] = ver;
	f->b[5] = type;
	f->b[6] = (uint8_t)(flags >> 8);
	f->b[7] = (uint8_t)flags;
	memset(f->b + 8, 0, 8);
	f->b[11] = 42;
	f->n = 16;
}

static void tlv(struct frame *f, uint16_t t, const void *v, uint32_t len)
{
	uint8_t *p = f->b + f->n;

	p[0] = (uint8_t)(t >> 8);
	p[1] = (uint8_t)t;
	p[2] = (uint8_t)(len >> 24);
	p[3] = (uint8_t)(len >> 16);
	p[4] = (uint8_t)(len >> 8);
	p[5] = (uint8_t)len;
	memcpy(p + 6, v, len);
	f->n += 6 + len;
}

static void fix_len(struct frame *f)
{
	uint32_t len = (uint32_t)(f->n - 16);

	f->b[12] = (uint8_t)(len >> 24);
	f->b[13] = (uint8_t)(len >> 16);
	f->b[14] = (uint8_t)(len >> 8);
	f->b[15] = (uint8_t)len;
}

enum mal {
	M_OK_STATUS,
	M_OK_UNKNOWN_NONCRIT,
	M_BAD_MAGIC,
	M_VERSION_0,
	M_VERSION_2,
	M_UNKNOWN_TYPE,
	M_FLAGS,
	M_OVERSIZED,
	M_SHORT_HDR,
	M_LEN_MISMATCH,
	M_TRUNC_TLV,
	M_TLV_OVERRUN,
	M_UNKNOWN_CRIT,
	M_CONTAINER,
	M_DUPLICATE,
	M_NOT_ALLOWED,
	M_MISSING_REQUIRED,
	M_INT_SIZE,
	M_NUL_IN_STRING,
	M_EMPTY_HOST,
	M_LONG_STRING,
	M_OPTION_BITS,
	M_EMPTY_RANGE,
	M_RESPONSE_NO_RESULT,
};

static const struct {
	enum mal m;
	int want;
	const char *name;
} cases[] = {
	{ M_OK_STATUS, 0, "status" },
	{ M_OK_UNKNOWN_NONCRIT, 0, "unknown non-critical skipped" },
	{ M_BAD_MAGIC, -EBADMSG, "magic" },
	{ M_VERSION_0, -EPROTONOSUPPORT, "version 0" },
	{ M_VERSION_2, -EPROTONOSUPPORT, "version 2" },
	{ M_UNKNOWN_TYPE, -EBADMSG, "type" },
	{ M_FLAGS, -EBADMSG, "flags" },
	{ M_OVERSIZED, -EMSGSIZE, "oversized" },
	{ M_SHORT_HDR, -EBADMSG, "short header" },
	{ M_LEN_MISMATCH, -EBADMSG, "length mismatch" },
	{ M_TRUNC_TLV, -EBADMSG, "truncated TLV" },
	{ M_TLV_OVERRUN, -EBADMSG, "TLV overrun" },
	{ M_UNKNOWN_CRIT, -EPROTO, "unknown critical" },
	{ M_CONTAINER, -EPROTO, "nesting" },
	{ M_DUPLICATE, -EPROTO, "duplicate" },
	{ M_NOT_ALLOWED, -EPROTO, "not allowed in type" },
	{ M_MISSING_REQUIRED, -EPROTO, "missing required" },
	{ M_INT_SIZE, -EBADMSG, "integer size" },
	{ M_NUL_IN_STRING, -EPROTO, "NUL in string" },
	{ M_EMPTY_HOST, -EPROTO, "empty host" },
	{ M_LONG_STRING, -EMSGSIZE, "string over limit" },
	{ M_OPTION_BITS, -EPROTO, "unknown option bits" },
	{ M_EMPTY_RANGE, -EPROTO, "empty version range" },
	{ M_RESPONSE_NO_RESULT, -EPROTO, "response without result" },
};

static void test_malformed(void **state)
{
	static const uint8_t one16[2] = { 0, 1 }, zero16[2] = { 0, 0 }, opt[4] = { 0, 0, 1, 0 };
	char longs[FCTL_PROTO_MAX_STR + 1];

	(void)state;
	memset(longs, 'a', sizeof(longs));
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(cases); i++) {
		struct frame f;
		struct fctl_msg m;
		char why[160] = "";
		int r;

		hdr(&f, 1, FCTL_MSG_STATUS, 0);
		switch (cases[i].m) {
		case M_OK_STATUS:
			break;
		case M_OK_UNKNOWN_NONCRIT:
			tlv(&f, 0x0123, "xyz", 3);
			break;
		case M_BAD_MAGIC:
			f.b[0] = 'X';
			break;
		case M_VERSION_0:
			f.b[4] = 0;
			break;
		case M_VERSION_2:
			f.b[4] = 2;
			break;
		case M_UNKNOWN_TYPE:
			f.b[5] = 0x42;
			break;
		case M_FLAGS:
			f.b[7] = 1;
			break;
		case M_OVERSIZED:
			break;
		case M_SHORT_HDR:
			f.n = 10;
			break;
		case M_LEN_MISMATCH:
			tlv(&f, FCTL_TLV_HOST, "h1", 2);
			fix_len(&f);
			f.n--;
			break;
		case M_TRUNC_TLV:
			f.b[f.n++] = 0x80;
			f.b[f.n++] = 0x03;
			break;
		case M_TLV_OVERRUN:
			tlv(&f, FCTL_TLV_HOST, "h1", 2);
			f.b[f.n - 3] = 9;
			break;
		case M_UNKNOWN_CRIT:
			tlv(&f, 0x8123, "xyz", 3);
			break;
		case M_CONTAINER:
			tlv(&f, 0x4003, "xyz", 3);
			break;
		case M_DUPLICATE:
			tlv(&f, FCTL_TLV_HOST, "h1", 2);
			tlv(&f, FCTL_TLV_HOST, "h2", 2);
			break;
		case M_NOT_ALLOWED:
			tlv(&f, FCTL_TLV_PROFILE, "x", 1);
			break;
		case M_MISSING_REQUIRED:
			f.b[5] = FCTL_MSG_APPLY;
			tlv(&f, FCTL_TLV_HOST, "h1", 2);
			break;
		case M_INT_SIZE:
			tlv(&f, FCTL_TLV_OPTIONS, "\0\0\0", 3);
			break;
		case M_NUL_IN_STRING:
			tlv(&f, FCTL_TLV_HOST, "h\0", 2);
			break;
		case M_EMPTY_HOST:
			tlv(&f, FCTL_TLV_HOST, "", 0);
			break;
		case M_LONG_STRING:
			tlv(&f, FCTL_TLV_HOST, longs, sizeof(longs));
			break;
		case M_OPTION_BITS:
			tlv(&f, FCTL_TLV_OPTIONS, opt, 4);
			break;
		case M_EMPTY_RANGE:
			f.b[5] = FCTL_MSG_HELLO;
			tlv(&f, FCTL_TLV_VERSION_MIN, one16, 2);
			tlv(&f, FCTL_TLV_VERSION_MAX, zero16, 2);
			break;
		case M_RESPONSE_NO_RESULT:
			f.b[5] = FCTL_MSG_RESPONSE;
			tlv(&f, FCTL_TLV_OUTPUT, "x", 1);
			break;
		}
		if (cases[i].m != M_LEN_MISMATCH && cases[i].m != M_TLV_OVERRUN &&
		    cases[i].m != M_SHORT_HDR)
			fix_len(&f);
		if (cases[i].m == M_TLV_OVERRUN)
			fix_len(&f);
		if (cases[i].m == M_OVERSIZED) {
			f.b[12] = 0x01; /* 16 MiB + header */
			f.b[13] = 0x00;
		}
		r = fctl_proto_decode(f.b, f.n, 0, &m, why, sizeof(why));
		if (r != cases[i].want)
			fail_msg("case '%s': got %d (%s), want %d", cases[i].name, r, why,
				 cases[i].want);
		if (r < 0)
			assert_true(why[0] != '\0' || cases[i].m == M_SHORT_HDR);
	}
}

static void test_header_limits(void **state)
{
	struct fctl_msg m = { .type = FCTL_MSG_STATUS };
	struct fctl_proto_hdr h;
	struct fctl_buf b = enc(&m);

	(void)state;
	assert_int_equal(fctl_proto_hdr_parse((uint8_t *)b.data, b.len, 0, &h), 0);
	assert_int_equal(h.length, 0);
	/* a tighter limit than the default is honoured before the payload is read */
	b.data[15] = 100;
	assert_int_equal(fctl_proto_hdr_parse((uint8_t *)b.data, b.len, 64, &h), -EMSGSIZE);
	assert_int_equal(fctl_proto_hdr_parse((uint8_t *)b.data, b.len, 4096, &h), 0);
	fctl_buf_release(&b);
}

static void test_encode_refuses(void **state)
{
	static uint8_t big[1];
	struct fctl_buf b = { 0 };
	struct fctl_msg bad[] = {
		{ .type = 0x42 },
		{ .type = FCTL_MSG_STATUS, .flags = 1 },
		{ .type = FCTL_MSG_APPLY },                                          /* no profile */
		{ .type = FCTL_MSG_STATUS, .present = FCTL_HAS_PROFILE, .profile = big },  /* not allowed */
		{ .type = FCTL_MSG_STATUS, .present = FCTL_HAS_HOST },              /* empty host */
		{ .type = FCTL_MSG_STATUS, .present = FCTL_HAS_OPTIONS, .options = 0x100 },
		{ .type = FCTL_MSG_APPLY, .present = FCTL_HAS_PROFILE, .profile = big,
		  .profile_len = FCTL_PROTO_MAX_PROFILE + 1 },
	};

	(void)state;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(bad); i++)
		assert_int_equal(fctl_proto_encode(&bad[i], &b), -EINVAL);
	assert_int_equal(b.len, 0);
	fctl_buf_release(&b);
}

/* apply --confirm and confirm: the deadline travels as a critical TLV (an agent that
 * does not know it refuses the apply whole), confirm is a type of its own */
static void test_confirm(void **state)
{
	static const uint8_t wire[] = { 0x80, 0x17, 0, 0, 0, 4, 0, 0, 0, 60 };
	struct fctl_msg apply = { .type = FCTL_MSG_APPLY, .id = 4, .present = FCTL_HAS_PROFILE |
				  FCTL_HAS_OPTIONS | FCTL_HAS_CONFIRM, .profile = yaml,
				  .profile_len = sizeof(yaml) - 1, .options = FCTL_OPT_JSON,
				  .confirm_seconds = 60 };
	struct fctl_msg conf = { .type = FCTL_MSG_CONFIRM, .id = 5, .present = FCTL_HAS_HOST |
				 FCTL_HAS_OPTIONS, .host = "h2", .options = FCTL_OPT_JSON };
	struct fctl_msg bad[] = {
		apply, apply, apply, conf, conf,
		{ .type = FCTL_MSG_SHOW, .present = FCTL_HAS_CONFIRM, .confirm_seconds = 60 },
	};
	struct fctl_buf b = enc(&apply), b2 = { 0 };
	struct fctl_msg m;
	struct fctl_proto_hdr h;
	char why[128] = "";
	uint8_t *p;

	(void)state;
	assert_true(FCTL_TLV_CONFIRM & FCTL_TLV_CRITICAL);
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, why, sizeof(why)), 0);
	assert_true(m.present & FCTL_HAS_CONFIRM);
	assert_int_equal(m.confirm_seconds, 60);
	assert_int_equal(m.options, FCTL_OPT_JSON);
	/* the TLV on the wire, last (type order): 0x8017, 4 bytes, 60 */
	assert_true(b.len > sizeof(wire));
	assert_memory_equal(b.data + b.len - sizeof(wire), wire, sizeof(wire));
	/* out of range on the wire: refused with the reason */
	p = (uint8_t *)b.data + b.len - 4;
	p[3] = 0;
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, why, sizeof(why)),
			 -EPROTO);
	assert_non_null(strstr(why, "confirm"));
	p[0] = 0xff;
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, NULL, 0), -EPROTO);
	fctl_buf_release(&b);

	b = enc(&conf);
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, why, sizeof(why)), 0);
	assert_int_equal(m.type, FCTL_MSG_CONFIRM);
	assert_string_equal(m.host, "h2");
	assert_string_equal(fctl_proto_type_name(FCTL_MSG_CONFIRM), "confirm");
	assert_false(fctl_proto_is_sa_request(FCTL_MSG_CONFIRM));
	/* a type after the last is refused from the header, as an older agent refuses confirm */
	b.data[5] = FCTL_MSG_LAST + 1;
	assert_int_equal(fctl_proto_hdr_parse((uint8_t *)b.data, b.len, 0, &h), -EBADMSG);
	fctl_buf_release(&b);

	bad[0].confirm_seconds = 0;
	bad[1].confirm_seconds = FCTL_PROTO_MAX_CONFIRM + 1;
	bad[2].options = FCTL_OPT_DRY_RUN; /* a plan has nothing to confirm */
	bad[3].present |= FCTL_HAS_CONFIRM; /* confirm carries no deadline */
	bad[3].confirm_seconds = 60;
	bad[4].present |= FCTL_HAS_PROFILE;
	bad[4].profile = yaml;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(bad); i++)
		assert_int_equal(fctl_proto_encode(&bad[i], &b2), -EINVAL);
	assert_int_equal(b2.len, 0);
	apply.confirm_seconds = FCTL_PROTO_MAX_CONFIRM; /* 7 days is the limit, inclusive */
	b = enc(&apply);
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, NULL, 0), 0);
	assert_int_equal(m.confirm_seconds, FCTL_PROTO_MAX_CONFIRM);
	fctl_buf_release(&b);
	fctl_buf_release(&b2);
}

static void test_negotiate(void **state)
{
	(void)state;
	assert_int_equal(fctl_proto_negotiate(1, 1), 1);
	assert_int_equal(fctl_proto_negotiate(1, 9), FCTL_PROTO_VERSION);
	assert_int_equal(fctl_proto_negotiate(2, 9), -EPROTONOSUPPORT);
	assert_int_equal(fctl_proto_negotiate(0, 0), -EPROTONOSUPPORT);
	assert_string_equal(fctl_proto_type_name(FCTL_MSG_APPLY), "apply");
	assert_null(fctl_proto_type_name(0x42));
}

/* --- sa-batch: records of SA requests --- */

static void batch_frame(const struct fctl_buf *recs, struct fctl_buf *out)
{
	struct fctl_msg b = { .type = FCTL_MSG_SA_BATCH, .id = 9, .present = FCTL_HAS_SA_OPS,
			      .sa_ops = (const uint8_t *)recs->data,
			      .sa_ops_len = (uint32_t)recs->len };

	assert_int_equal(fctl_proto_encode(&b, out), 0);
}

static void test_sa_batch(void **state)
{
	static const uint8_t key[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17 },
			     keyid[16] = { 0xaa, 0xbb }, salt[12] = { 7 };
	struct fctl_msg rx = { .type = FCTL_MSG_RXSA_INSTALL, .ifname = "ms100", .sci = 0x1122,
			       .an = 2, .pn = 1, .key = key, .key_len = 32, .keyid = keyid,
			       .key_version = 5, .ssci = 2, .salt = salt,
			       .present = FCTL_HAS_IFNAME | FCTL_HAS_SCI | FCTL_HAS_AN | FCTL_HAS_PN |
					  FCTL_HAS_KEY | FCTL_HAS_KEYID | FCTL_HAS_KEY_VERSION |
					  FCTL_HAS_SSCI | FCTL_HAS_SALT };
	struct fctl_msg dump = { .type = FCTL_MSG_SA_DUMP, .ifname = "ms101",
				 .present = FCTL_HAS_IFNAME };
	struct fctl_msg bad = dump, m, op;
	struct fctl_buf recs = { 0 }, f = { 0 };
	char why[200];

	(void)state;
	assert_int_equal(fctl_proto_sa_op_put(&rx, &recs), 0);
	assert_int_equal(fctl_proto_sa_op_put(&dump, &recs), 0);
	assert_int_equal(recs.len, 2 * FCTL_SA_OP_LEN);
	batch_frame(&recs, &f);
	assert_int_equal(fctl_proto_decode((uint8_t *)f.data, f.len, 0, &m, why, sizeof(why)), 0);
	assert_int_equal(m.type, FCTL_MSG_SA_BATCH);
	assert_true(fctl_proto_is_sa_request(m.type));
	assert_int_equal(fctl_proto_sa_ops_count(&m), 2);
	fctl_proto_sa_op_get(&m, 0, &op);
	assert_int_equal(op.type, FCTL_MSG_RXSA_INSTALL);
	assert_int_equal(op.id, 9);
	assert_string_equal(op.ifname, "ms100");
	assert_int_equal(op.sci, 0x1122);
	assert_int_equal(op.an, 2);
	assert_int_equal(op.pn, 1);
	assert_int_equal(op.key_len, 32);
	assert_memory_equal(op.key, key, 32);
	assert_memory_equal(op.keyid, keyid, 16);
	assert_memory_equal(op.salt, salt, 12);
	assert_int_equal(op.key_version, 5);
	assert_int_equal(op.ssci, 2);
	assert_int_equal(op.present, rx.present);
	/* the key points into the frame: the agent can wipe it there */
	assert_true(op.key > (const uint8_t *)f.data && op.key < (const uint8_t *)f.data + f.len);
	fctl_proto_sa_op_get(&m, 1, &op);
	assert_int_equal(op.type, FCTL_MSG_SA_DUMP);
	assert_string_equal(op.ifname, "ms101");
	assert_null(op.key);
	assert_int_equal(op.present, FCTL_HAS_IFNAME);

	/* a retirement may name the key it retires (the agent leaves an SA holding another
	 * alone); a key itself it never carries */
	struct fctl_msg ret = { .type = FCTL_MSG_SA_RETIRE, .ifname = "ms100", .sci = 0x1122,
				.an = 1, .keyid = keyid,
				.present = FCTL_HAS_IFNAME | FCTL_HAS_SCI | FCTL_HAS_AN |
					   FCTL_HAS_KEYID };
	struct fctl_buf one = { 0 }, f1 = { 0 };

	assert_int_equal(fctl_proto_sa_op_put(&ret, &one), 0);
	batch_frame(&one, &f1);
	assert_int_equal(fctl_proto_decode((uint8_t *)f1.data, f1.len, 0, &m, why, sizeof(why)), 0);
	fctl_proto_sa_op_get(&m, 0, &op);
	assert_int_equal(op.type, FCTL_MSG_SA_RETIRE);
	assert_int_equal(op.present, ret.present);
	assert_memory_equal(op.keyid, keyid, 16);
	ret.present |= FCTL_HAS_KEY;
	ret.key = key;
	ret.key_len = 16;
	assert_int_equal(fctl_proto_sa_op_put(&ret, &one), -EINVAL);
	fctl_buf_release(&one);
	fctl_buf_release(&f1);

	/* refused when put: a batch in a batch, an AN out of range, a missing required field */
	bad.type = FCTL_MSG_SA_BATCH;
	assert_int_equal(fctl_proto_sa_op_put(&bad, &recs), -EINVAL);
	bad = rx;
	bad.an = 4;
	assert_int_equal(fctl_proto_sa_op_put(&bad, &recs), -EINVAL);
	bad = rx;
	bad.present &= ~(uint32_t)FCTL_HAS_SCI; /* rxsa-install needs the SCI */
	assert_int_equal(fctl_proto_sa_op_put(&bad, &recs), -EINVAL);
	bad = dump;
	bad.present |= FCTL_HAS_KEY; /* a dump carries no key */
	bad.key = key;
	bad.key_len = 16;
	assert_int_equal(fctl_proto_sa_op_put(&bad, &recs), -EINVAL);
	assert_int_equal(recs.len, 2 * FCTL_SA_OP_LEN);

	/* refused when decoded: each byte rule of a record (offsets: fctl/proto.h) */
	struct {
		size_t off;
		uint8_t v;
	} mut[] = {
		{ FCTL_SA_OP_LEN + 0, 1 },	/* record 1: type hello */
		{ FCTL_SA_OP_LEN + 1, 1 },	/* pad */
		{ FCTL_SA_OP_LEN + 2, 0x80 },	/* unknown present bit */
		{ FCTL_SA_OP_LEN + 4, 0 },	/* empty ifname */
		{ FCTL_SA_OP_LEN + 19, 'x' },	/* ifname of 16 bytes */
		{ FCTL_SA_OP_LEN + 20, 1 },	/* an SCI the dump does not carry */
		{ 36, 9 },			/* record 0: AN 9 */
		{ 37, 20 },			/* key of 20 bytes */
	};
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(mut); i++) {
		struct fctl_buf c = { 0 }, g = { 0 };

		fctl_buf_append(&c, recs.data, recs.len);
		((uint8_t *)c.data)[mut[i].off] = mut[i].v;
		{
			/* encode refuses too: build the frame by hand */
			struct fctl_msg b = { .type = FCTL_MSG_SA_BATCH, .present = FCTL_HAS_SA_OPS,
					      .sa_ops = (const uint8_t *)c.data,
					      .sa_ops_len = (uint32_t)c.len };

			assert_int_equal(fctl_proto_encode(&b, &g), -EINVAL);
		}
		fctl_buf_reset(&g);
		fctl_buf_append(&g, f.data, f.len);
		memcpy((uint8_t *)g.data + f.len - recs.len, c.data, c.len);
		assert_true(fctl_proto_decode((uint8_t *)g.data, g.len, 0, &m, why, sizeof(why)) < 0);
		assert_non_null(strstr(why, "record"));
		fctl_buf_release(&c);
		fctl_buf_release(&g);
	}
	/* not a whole number of records */
	{
		struct fctl_buf c = { 0 }, g = { 0 };
		struct fctl_msg b = { .type = FCTL_MSG_SA_BATCH, .present = FCTL_HAS_SA_OPS };

		fctl_buf_append(&c, recs.data, recs.len - 1);
		b.sa_ops = (const uint8_t *)c.data;
		b.sa_ops_len = (uint32_t)c.len;
		assert_int_equal(fctl_proto_encode(&b, &g), -EINVAL);
		fctl_buf_release(&c);
		fctl_buf_release(&g);
	}
	/* an sa-batch without records is refused (required TLV) */
	{
		struct fctl_msg b = { .type = FCTL_MSG_SA_BATCH };

		assert_int_equal(fctl_proto_encode(&b, &f), -EINVAL);
	}
	fctl_buf_release(&recs);
	fctl_buf_release(&f);
}

/* Signature files with an apply (FCTL_TLV_SIGS): round trip, names that are paths refused
 * on the wire and by the encoder, counts and sizes over the limits refused. */
static void test_sigs(void **state)
{
	static const char *ok[] = { "p.yaml.sig", "alice.sig", "p.yaml.bob@example.org.sig",
				    "a_b-c+d.sig" };
	static const char *no[] = { "", ".sig", ".x.sig", "../x.sig", "a/b.sig", "x.txt",
				    "a..sig", "x.sig\n", "a b.sig", "x.sig/", "..", "/etc/x.sig" };
	struct fctl_buf sigs = { 0 }, b, b2 = { 0 };
	struct fctl_msg apply = { .type = FCTL_MSG_APPLY, .id = 9, .present = FCTL_HAS_PROFILE |
				  FCTL_HAS_SIGS, .profile = yaml, .profile_len = sizeof(yaml) - 1 };
	struct fctl_msg m, plan;
	struct fctl_proto_sig sg;
	char why[200] = "", name[FCTL_PROTO_MAX_SIG_NAME + 2];
	size_t n = 0, off = 0, i;
	uint8_t *p;
	char *big;

	(void)state;
	assert_false(FCTL_TLV_SIGS & FCTL_TLV_CRITICAL); /* an older agent skips it */
	for (i = 0; i < FCTL_ARRAY_SIZE(ok); i++)
		assert_true(fctl_proto_sig_name_ok(ok[i], strlen(ok[i])));
	for (i = 0; i < FCTL_ARRAY_SIZE(no); i++)
		assert_false(fctl_proto_sig_name_ok(no[i], strlen(no[i])));
	memset(name, 'a', sizeof(name));
	memcpy(name + FCTL_PROTO_MAX_SIG_NAME - 4, ".sig", 5);
	assert_true(fctl_proto_sig_name_ok(name, FCTL_PROTO_MAX_SIG_NAME));
	memset(name, 'a', sizeof(name));
	memcpy(name + FCTL_PROTO_MAX_SIG_NAME - 3, ".sig", 5);
	assert_false(fctl_proto_sig_name_ok(name, FCTL_PROTO_MAX_SIG_NAME + 1));

	assert_int_equal(fctl_proto_sig_put(&sigs, &n, "aa-b.sig", "SIG-A", 5), 0);
	assert_int_equal(fctl_proto_sig_put(&sigs, &n, "alice.sig", "", 0), 0);
	assert_int_equal(fctl_proto_sig_put(&sigs, &n, "../x.sig", "S", 1), -EINVAL);
	assert_int_equal(fctl_proto_sig_put(&sigs, &n, "a/b.sig", "S", 1), -EINVAL);
	assert_int_equal(n, 2);
	apply.sigs = (const uint8_t *)sigs.data;
	apply.sigs_len = (uint32_t)sigs.len;
	b = enc(&apply);
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, why, sizeof(why)), 0);
	assert_true(m.present & FCTL_HAS_SIGS);
	assert_int_equal(fctl_proto_sig_next(&m, &off, &sg), 1);
	assert_string_equal(sg.name, "aa-b.sig");
	assert_int_equal(sg.len, 5);
	assert_memory_equal(sg.data, "SIG-A", 5);
	assert_int_equal(fctl_proto_sig_next(&m, &off, &sg), 1);
	assert_string_equal(sg.name, "alice.sig");
	assert_int_equal(sg.len, 0);
	assert_int_equal(fctl_proto_sig_next(&m, &off, &sg), 0);

	/* a path for a name, written on the wire by a hostile client: refused */
	p = memmem(b.data, b.len, "aa-b.sig", 8);
	assert_non_null(p);
	memcpy(p, "../x.sig", 8);
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, why, sizeof(why)),
			 -EPROTO);
	assert_non_null(strstr(why, "not a plain signature file name"));
	memcpy(p, "a/bb.sig", 8);
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, NULL, 0), -EPROTO);
	memcpy(p, "aa-b.sig", 8);
	/* a data length past the TLV: cut short */
	p[8 + 3] = 6;
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, why, sizeof(why)),
			 -EBADMSG);
	assert_non_null(strstr(why, "cut short"));
	/* a name length of 0 */
	p[-1] = 0;
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, NULL, 0), -EBADMSG);
	fctl_buf_release(&b);

	/* only an apply carries signatures */
	plan = apply;
	plan.type = FCTL_MSG_PLAN;
	assert_int_equal(fctl_proto_encode(&plan, &b2), -EINVAL);
	apply.sigs_len = 0; /* an empty value is not sent: no TLV rather than an empty one */
	assert_int_equal(fctl_proto_encode(&apply, &b2), -EINVAL);
	assert_int_equal(b2.len, 0);

	/* limits: the size of one file, the number of files */
	big = calloc(1, FCTL_PROTO_MAX_SIG + 1);
	assert_non_null(big);
	assert_int_equal(fctl_proto_sig_put(&sigs, &n, "big.sig", big, FCTL_PROTO_MAX_SIG + 1),
			 -EFBIG);
	while (n < FCTL_PROTO_MAX_SIGS)
		assert_int_equal(fctl_proto_sig_put(&sigs, &n, "s.sig", "x", 1), 0);
	assert_int_equal(fctl_proto_sig_put(&sigs, &n, "s.sig", "x", 1), -ENOSPC);
	apply.sigs = (const uint8_t *)sigs.data;
	apply.sigs_len = (uint32_t)sigs.len;
	b = enc(&apply); /* 64 files: the limit, inclusive */
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &m, NULL, 0), 0);
	fctl_buf_release(&b);
	n = 0; /* a 65th record, forced past the counter */
	assert_int_equal(fctl_proto_sig_put(&sigs, &n, "s.sig", "x", 1), 0);
	apply.sigs = (const uint8_t *)sigs.data;
	apply.sigs_len = (uint32_t)sigs.len;
	assert_int_equal(fctl_proto_encode(&apply, &b2), -EINVAL);
	free(big);
	fctl_buf_release(&sigs);
	fctl_buf_release(&b2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),     cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_header_limits), cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test(test_negotiate),     cmocka_unit_test(test_sa_batch),
		cmocka_unit_test(test_confirm),       cmocka_unit_test(test_sigs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
