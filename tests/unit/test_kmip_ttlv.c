// SPDX-License-Identifier: MIT
/*
 * Unit tests of the KMIP TTLV codec: the encoding examples of the KMIP 1.x
 * specification (section 9.1.2, "Examples") checked byte for byte, each value
 * converted to hex by hand (123456789000000000 = 0x01B69B4BA5749200; 2008-03-14
 * 11:56:40 UTC = 0x47DA67F8; 10 days = 864000 s = 0x000D2F00), round trips, and
 * every class of malformed input refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kmip_int.h"

#define T 0x420020 /* the tag the specification's examples use */

struct vec {
	const char *name;
	void (*put)(struct fctl_ttlv_enc *e);
	uint8_t want[48];
	size_t len;
};

static void put_int8(struct fctl_ttlv_enc *e)
{
	fctl_ttlv_put_int(e, T, 8);
}
static void put_long(struct fctl_ttlv_enc *e)
{
	fctl_ttlv_put_long(e, T, 123456789000000000LL);
}
static void put_bigint(struct fctl_ttlv_enc *e)
{
	static const uint8_t v[16] = { 0x00, 0x00, 0x00, 0x00, 0x03, 0xFD, 0x35, 0xEB,
				       0x6B, 0xC2, 0xDF, 0x46, 0x18, 0x08, 0x00, 0x00 };
	fctl_ttlv_put_bigint(e, T, v, sizeof(v));
}
static void put_enum(struct fctl_ttlv_enc *e)
{
	fctl_ttlv_put_enum(e, T, 255);
}
static void put_bool(struct fctl_ttlv_enc *e)
{
	fctl_ttlv_put_bool(e, T, true);
}
static void put_text(struct fctl_ttlv_enc *e)
{
	fctl_ttlv_put_text(e, T, "Hello World");
}
static void put_bytes(struct fctl_ttlv_enc *e)
{
	fctl_ttlv_put_bytes(e, T, "\x01\x02\x03", 3);
}
static void put_dt(struct fctl_ttlv_enc *e)
{
	fctl_ttlv_put_datetime(e, T, 0x47DA67F8);
}
static void put_interval(struct fctl_ttlv_enc *e)
{
	fctl_ttlv_put_interval(e, T, 10 * 86400);
}
static void put_struct(struct fctl_ttlv_enc *e)
{
	fctl_ttlv_begin(e, T);
	fctl_ttlv_put_enum(e, 0x420004, 254);
	fctl_ttlv_put_int(e, 0x420005, 255);
	fctl_ttlv_end(e);
}

static const struct vec vecs[] = {
	{ "integer 8", put_int8,
	  { 0x42, 0x00, 0x20, 0x02, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0, 0 }, 16 },
	{ "long 123456789000000000", put_long,
	  { 0x42, 0x00, 0x20, 0x03, 0, 0, 0, 8, 0x01, 0xB6, 0x9B, 0x4B, 0xA5, 0x74, 0x92, 0x00 },
	  16 },
	{ "big integer 1234567890000000000000000000", put_bigint,
	  { 0x42, 0x00, 0x20, 0x04, 0, 0, 0, 0x10, 0x00, 0x00, 0x00, 0x00, 0x03, 0xFD, 0x35, 0xEB,
	    0x6B, 0xC2, 0xDF, 0x46, 0x18, 0x08, 0x00, 0x00 },
	  24 },
	{ "enumeration 255", put_enum,
	  { 0x42, 0x00, 0x20, 0x05, 0, 0, 0, 4, 0, 0, 0, 0xFF, 0, 0, 0, 0 }, 16 },
	{ "boolean true", put_bool,
	  { 0x42, 0x00, 0x20, 0x06, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1 }, 16 },
	{ "text Hello World", put_text,
	  { 0x42, 0x00, 0x20, 0x07, 0, 0, 0, 0x0B, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x20, 0x57, 0x6F,
	    0x72, 0x6C, 0x64, 0, 0, 0, 0, 0 },
	  24 },
	{ "bytes 010203", put_bytes,
	  { 0x42, 0x00, 0x20, 0x08, 0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 0, 0 }, 16 },
	{ "date-time 2008-03-14T11:56:40Z", put_dt,
	  { 0x42, 0x00, 0x20, 0x09, 0, 0, 0, 8, 0, 0, 0, 0, 0x47, 0xDA, 0x67, 0xF8 }, 16 },
	{ "interval 10 days", put_interval,
	  { 0x42, 0x00, 0x20, 0x0A, 0, 0, 0, 4, 0x00, 0x0D, 0x2F, 0x00, 0, 0, 0, 0 }, 16 },
	{ "structure {enum 254, int 255}", put_struct,
	  { 0x42, 0x00, 0x20, 0x01, 0, 0, 0, 0x20, 0x42, 0x00, 0x04, 0x05, 0, 0, 0, 4,
	    0,    0,    0,    0xFE, 0, 0, 0, 0,    0x42, 0x00, 0x05, 0x02, 0, 0, 0, 4,
	    0,    0,    0,    0xFF, 0, 0, 0, 0 },
	  40 },
};

static void test_spec_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		struct fctl_ttlv_enc e;
		struct fctl_ttlv_doc doc;
		const uint8_t *out;
		size_t len;

		fctl_ttlv_enc_init(&e);
		vecs[i].put(&e);
		assert_int_equal(fctl_ttlv_enc_finish(&e, &out, &len), 0);
		if (len != vecs[i].len || memcmp(out, vecs[i].want, len) != 0)
			fail_msg("vector '%s' encodes differently", vecs[i].name);
		/* and the decoder takes the specification's bytes */
		assert_int_equal(fctl_ttlv_parse(vecs[i].want, vecs[i].len, &doc, NULL), 0);
		assert_int_equal(fctl_ttlv_root(&doc)->tag, T);
		fctl_ttlv_doc_release(&doc);
		fctl_ttlv_enc_release(&e);
	}
}

static void test_round_trip(void **state)
{
	struct fctl_ttlv_enc e;
	struct fctl_ttlv_doc doc;
	const struct fctl_ttlv *root, *s, *t, *t2;
	const uint8_t *out;
	size_t len;
	int32_t i32;
	int64_t i64;
	uint32_t en;
	bool b;
	char txt[32];

	(void)state;
	fctl_ttlv_enc_init(&e);
	fctl_ttlv_begin(&e, FCTL_KMIP_TAG_REQUEST_MESSAGE);
	fctl_ttlv_put_int(&e, FCTL_KMIP_TAG_BATCH_COUNT, -2);
	fctl_ttlv_begin(&e, FCTL_KMIP_TAG_BATCH_ITEM);
	fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_OPERATION, 10);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_NAME_VALUE, "sak.v1");
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_NAME_VALUE, "sak.v2");
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_RESULT_MESSAGE, "");
	fctl_ttlv_end(&e);
	fctl_ttlv_put_long(&e, FCTL_KMIP_TAG_CRYPTOGRAPHIC_LENGTH, INT64_MIN);
	fctl_ttlv_put_bool(&e, FCTL_KMIP_TAG_STATE, false);
	fctl_ttlv_put_datetime(&e, FCTL_KMIP_TAG_ACTIVATION_DATE, 1700000000);
	fctl_ttlv_put_bytes(&e, FCTL_KMIP_TAG_KEY_MATERIAL, "0123456789abcdef", 16);
	fctl_ttlv_end(&e);
	assert_int_equal(fctl_ttlv_enc_finish(&e, &out, &len), 0);
	assert_int_equal(len % 8, 0);
	assert_int_equal(fctl_ttlv_parse(out, len, &doc, NULL), 0);
	root = fctl_ttlv_root(&doc);
	assert_int_equal(root->tag, FCTL_KMIP_TAG_REQUEST_MESSAGE);
	assert_int_equal(fctl_ttlv_get_int(fctl_ttlv_child(&doc, root, FCTL_KMIP_TAG_BATCH_COUNT, NULL),
					   &i32), 0);
	assert_int_equal(i32, -2);
	s = fctl_ttlv_child(&doc, root, FCTL_KMIP_TAG_BATCH_ITEM, NULL);
	assert_non_null(s);
	assert_int_equal(fctl_ttlv_get_enum(fctl_ttlv_child(&doc, s, FCTL_KMIP_TAG_OPERATION, NULL), &en),
			 0);
	assert_int_equal(en, 10);
	t = fctl_ttlv_child(&doc, s, FCTL_KMIP_TAG_NAME_VALUE, NULL);
	t2 = fctl_ttlv_child(&doc, s, FCTL_KMIP_TAG_NAME_VALUE, t);
	assert_int_equal(fctl_ttlv_get_text(t, txt, sizeof(txt)), 0);
	assert_string_equal(txt, "sak.v1");
	assert_int_equal(fctl_ttlv_get_text(t2, txt, sizeof(txt)), 0);
	assert_string_equal(txt, "sak.v2");
	assert_null(fctl_ttlv_child(&doc, s, FCTL_KMIP_TAG_NAME_VALUE, t2));
	/* tag 0 walks every child in order (a KMIP 2.0 Attributes structure) */
	{
		static const uint32_t order[] = { FCTL_KMIP_TAG_OPERATION, FCTL_KMIP_TAG_NAME_VALUE,
						  FCTL_KMIP_TAG_NAME_VALUE,
						  FCTL_KMIP_TAG_RESULT_MESSAGE };
		const struct fctl_ttlv *c = NULL;
		size_t n = 0;

		while ((c = fctl_ttlv_child(&doc, s, 0, c))) {
			assert_true(n < FCTL_ARRAY_SIZE(order));
			assert_int_equal(c->tag, order[n++]);
		}
		assert_int_equal(n, FCTL_ARRAY_SIZE(order));
		assert_null(fctl_ttlv_child(&doc, t, 0, NULL)); /* not a structure */
	}
	assert_int_equal(fctl_ttlv_get_text(t, txt, 6), -ENOSPC); /* "sak.v1" needs 7 */
	assert_int_equal(
		fctl_ttlv_get_text(fctl_ttlv_child(&doc, s, FCTL_KMIP_TAG_RESULT_MESSAGE, NULL), txt, 1),
		0);
	assert_string_equal(txt, "");
	assert_int_equal(fctl_ttlv_get_long(fctl_ttlv_child(&doc, root,
							    FCTL_KMIP_TAG_CRYPTOGRAPHIC_LENGTH, NULL),
					    &i64), 0);
	assert_true(i64 == INT64_MIN);
	assert_int_equal(fctl_ttlv_get_bool(fctl_ttlv_child(&doc, root, FCTL_KMIP_TAG_STATE, NULL), &b),
			 0);
	assert_false(b);
	assert_int_equal(fctl_ttlv_get_datetime(
				 fctl_ttlv_child(&doc, root, FCTL_KMIP_TAG_ACTIVATION_DATE, NULL), &i64),
			 0);
	assert_int_equal(i64, 1700000000);
	t = fctl_ttlv_child(&doc, root, FCTL_KMIP_TAG_KEY_MATERIAL, NULL);
	assert_int_equal(t->type, FCTL_TTLV_BYTES);
	assert_int_equal(t->len, 16);
	assert_memory_equal(t->val, "0123456789abcdef", 16);
	/* wrong-type reads are refused */
	assert_int_equal(fctl_ttlv_get_enum(t, &en), -EBADMSG);
	assert_int_equal(fctl_ttlv_get_int(NULL, &i32), -EBADMSG);
	fctl_ttlv_doc_release(&doc);
	fctl_ttlv_enc_release(&e);
}

static void test_encoder_misuse(void **state)
{
	struct fctl_ttlv_enc e;
	const uint8_t *out;
	size_t len;

	(void)state;
	fctl_ttlv_enc_init(&e);
	fctl_ttlv_begin(&e, T);
	assert_int_equal(fctl_ttlv_enc_finish(&e, &out, &len), -EPROTO); /* left open */
	fctl_ttlv_enc_release(&e);

	fctl_ttlv_enc_init(&e);
	fctl_ttlv_end(&e);
	assert_int_equal(fctl_ttlv_enc_finish(&e, &out, &len), -EPROTO); /* closed twice */
	fctl_ttlv_enc_release(&e);

	fctl_ttlv_enc_init(&e);
	fctl_ttlv_put_int(&e, 0x123456, 1);
	assert_int_equal(fctl_ttlv_enc_finish(&e, &out, &len), -EINVAL); /* bad tag */
	fctl_ttlv_enc_release(&e);

	fctl_ttlv_enc_init(&e);
	fctl_ttlv_put_bigint(&e, T, "\1\2\3", 3);
	assert_int_equal(fctl_ttlv_enc_finish(&e, &out, &len), -EINVAL);
	fctl_ttlv_enc_release(&e);

	fctl_ttlv_enc_init(&e);
	for (int i = 0; i < FCTL_TTLV_MAX_DEPTH + 1; i++)
		fctl_ttlv_begin(&e, T);
	assert_int_equal(fctl_ttlv_enc_finish(&e, &out, &len), -EPROTO);
	fctl_ttlv_enc_release(&e);
}

struct bad {
	const char *name;
	uint8_t b[48];
	size_t len;
};

static const struct bad bads[] = {
	{ "empty", { 0 }, 0 },
	{ "truncated header", { 0x42, 0x00, 0x20, 0x02, 0, 0, 0 }, 7 },
	{ "truncated value", { 0x42, 0x00, 0x20, 0x02, 0, 0, 0, 4, 0, 0, 0, 8 }, 12 },
	{ "tag outside ranges", { 0x43, 0x00, 0x20, 0x02, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0, 0 }, 16 },
	{ "unknown type 0x00", { 0x42, 0x00, 0x20, 0x00, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0, 0 }, 16 },
	{ "unknown type 0x0C", { 0x42, 0x00, 0x20, 0x0C, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0, 0 }, 16 },
	{ "integer of length 8", { 0x42, 0x00, 0x20, 0x02, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0, 0 }, 16 },
	{ "enum of length 2", { 0x42, 0x00, 0x20, 0x05, 0, 0, 0, 2, 0, 8, 0, 0, 0, 0, 0, 0 }, 16 },
	{ "long of length 4", { 0x42, 0x00, 0x20, 0x03, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0, 0 }, 16 },
	{ "date-time of length 4", { 0x42, 0x00, 0x20, 0x09, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0, 0 },
	  16 },
	{ "boolean 2", { 0x42, 0x00, 0x20, 0x06, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 2 }, 16 },
	{ "non-zero padding", { 0x42, 0x00, 0x20, 0x02, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 1, 0 }, 16 },
	{ "text padding", { 0x42, 0x00, 0x20, 0x07, 0, 0, 0, 1, 'a', 'b', 0, 0, 0, 0, 0, 0 }, 16 },
	{ "text NUL", { 0x42, 0x00, 0x20, 0x07, 0, 0, 0, 2, 'a', 0, 0, 0, 0, 0, 0, 0 }, 16 },
	{ "unpadded item", { 0x42, 0x00, 0x20, 0x08, 0, 0, 0, 3, 1, 2, 3 }, 11 },
	{ "big integer of length 3",
	  { 0x42, 0x00, 0x20, 0x04, 0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 0, 0 }, 16 },
	{ "trailing bytes",
	  { 0x42, 0x00, 0x20, 0x02, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 24 },
	{ "structure length not a multiple of 8",
	  { 0x42, 0x00, 0x20, 0x01, 0, 0, 0, 0x0C, 0x42, 0x00, 0x04, 0x05, 0, 0, 0, 4,
	    0, 0, 0, 1, 0, 0, 0, 0 },
	  24 },
	{ "child longer than its structure",
	  { 0x42, 0x00, 0x20, 0x01, 0, 0, 0, 0x10, 0x42, 0x00, 0x04, 0x08, 0, 0, 0, 0x10,
	    1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8 },
	  32 },
	{ "structure longer than the message",
	  { 0x42, 0x00, 0x20, 0x01, 0, 0, 0, 0x18, 0x42, 0x00, 0x04, 0x05, 0, 0, 0, 4,
	    0, 0, 0, 1, 0, 0, 0, 0 },
	  24 },
	{ "huge length", { 0x42, 0x00, 0x20, 0x08, 0xFF, 0xFF, 0xFF, 0xF8, 0 }, 9 },
};

static void test_malformed(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct fctl_ttlv_doc doc = { 0 };
		const char *why = NULL;

		if (fctl_ttlv_parse(bads[i].len ? bads[i].b : NULL, bads[i].len, &doc, &why) !=
		    -EBADMSG)
			fail_msg("malformed '%s' was accepted", bads[i].name);
		assert_non_null(why);
		assert_null(doc.items); /* output untouched */
	}
}

/* Structures nested one level past the limit are refused; at the limit accepted. */
static void test_depth(void **state)
{
	(void)state;
	for (int depth = FCTL_TTLV_MAX_DEPTH; depth <= FCTL_TTLV_MAX_DEPTH + 1; depth++) {
		size_t len = (size_t)depth * 8;
		uint8_t *b = calloc(1, len);
		struct fctl_ttlv_doc doc;

		assert_non_null(b);
		for (size_t off = 0; off + 8 <= len; off += 8) {
			uint32_t inner = (uint32_t)(len - off - 8);
			const uint8_t h[8] = { 0x42, 0x00, 0x20, FCTL_TTLV_STRUCTURE,
					       (uint8_t)(inner >> 24), (uint8_t)(inner >> 16),
					       (uint8_t)(inner >> 8), (uint8_t)inner };

			memcpy(b + off, h, sizeof(h));
		}
		if (depth == FCTL_TTLV_MAX_DEPTH) {
			assert_int_equal(fctl_ttlv_parse(b, len, &doc, NULL), 0);
			assert_int_equal(doc.n, (size_t)depth);
			fctl_ttlv_doc_release(&doc);
		} else {
			assert_int_equal(fctl_ttlv_parse(b, len, &doc, NULL), -EBADMSG);
		}
		free(b);
	}
}

/* Too many items (empty structures side by side) are refused. */
static void test_item_count(void **state)
{
	size_t n = FCTL_TTLV_MAX_ITEMS, len = 8 + n * 8;
	uint8_t *b = calloc(1, len);
	struct fctl_ttlv_doc doc;

	(void)state;
	b[0] = 0x42;
	b[2] = 0x20;
	b[3] = FCTL_TTLV_STRUCTURE;
	b[4] = (uint8_t)((len - 8) >> 24);
	b[5] = (uint8_t)((len - 8) >> 16);
	b[6] = (uint8_t)((len - 8) >> 8);
	b[7] = (uint8_t)(len - 8);
	for (size_t i = 0; i < n; i++) {
		b[8 + i * 8] = 0x42;
		b[8 + i * 8 + 2] = 0x21;
		b[8 + i * 8 + 3] = FCTL_TTLV_STRUCTURE;
	}
	assert_int_equal(fctl_ttlv_parse(b, len, &doc, NULL), -EBADMSG);
	/* one fewer fits */
	len -= 8;
	b[6] = (uint8_t)((len - 8) >> 8);
	b[7] = (uint8_t)(len - 8);
	assert_int_equal(fctl_ttlv_parse(b, len, &doc, NULL), 0);
	fctl_ttlv_doc_release(&doc);
	free(b);
}

static void test_peek(void **state)
{
	static const uint8_t ok[8] = { 0x42, 0x00, 0x7B, 0x01, 0, 0, 0, 0x20 };
	static const uint8_t notstruct[8] = { 0x42, 0x00, 0x7B, 0x02, 0, 0, 0, 0x04 };
	static const uint8_t huge[8] = { 0x42, 0x00, 0x7B, 0x01, 0x7F, 0, 0, 0 };
	size_t total = 0;

	(void)state;
	assert_int_equal(fctl_ttlv_peek_size(ok, &total), 0);
	assert_int_equal(total, 0x28);
	assert_int_equal(fctl_ttlv_peek_size(notstruct, &total), -EBADMSG);
	assert_int_equal(fctl_ttlv_peek_size(huge, &total), -EBADMSG);
}

/* Every truncation of a valid message is refused, and byte flips (fixed seed) never
 * crash the decoder or make it read outside the buffer (run under ASan in CI). */
static void test_mutations(void **state)
{
	struct fctl_ttlv_enc e;
	struct fctl_ttlv_doc doc;
	const uint8_t *out;
	uint8_t *m;
	size_t len;
	unsigned seed = 42;

	(void)state;
	fctl_ttlv_enc_init(&e);
	fctl_ttlv_begin(&e, FCTL_KMIP_TAG_RESPONSE_MESSAGE);
	fctl_ttlv_begin(&e, FCTL_KMIP_TAG_BATCH_ITEM);
	fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_RESULT_STATUS, 0);
	fctl_ttlv_begin(&e, FCTL_KMIP_TAG_RESPONSE_PAYLOAD);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, "42");
	fctl_ttlv_put_bytes(&e, FCTL_KMIP_TAG_KEY_MATERIAL, "0123456789abcdef0123456789abcdef", 32);
	fctl_ttlv_put_datetime(&e, FCTL_KMIP_TAG_INITIAL_DATE, 1);
	fctl_ttlv_end(&e);
	fctl_ttlv_end(&e);
	fctl_ttlv_end(&e);
	assert_int_equal(fctl_ttlv_enc_finish(&e, &out, &len), 0);
	for (size_t cut = 0; cut < len; cut++) {
		m = malloc(cut ? cut : 1); /* exact size: ASan sees any overread */
		memcpy(m, out, cut);
		assert_int_equal(fctl_ttlv_parse(cut ? m : NULL, cut, &doc, NULL), -EBADMSG);
		free(m);
	}
	for (int i = 0; i < 20000; i++) {
		int flips = 1 + rand_r(&seed) % 3;

		m = malloc(len);
		memcpy(m, out, len);
		for (int f = 0; f < flips; f++)
			m[(size_t)rand_r(&seed) % len] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		if (fctl_ttlv_parse(m, len, &doc, NULL) == 0) {
			/* whatever parsed walks cleanly */
			for (size_t k = 0; k < doc.n; k++)
				assert_true(doc.items[k].val + doc.items[k].len <= m + len);
			fctl_ttlv_doc_release(&doc);
		}
		free(m);
	}
	fctl_ttlv_enc_release(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_vectors), cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_encoder_misuse), cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_depth),	     cmocka_unit_test(test_item_count),
		cmocka_unit_test(test_peek),	     cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
