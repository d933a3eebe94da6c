// SPDX-License-Identifier: MIT
/* KMIP TTLV encoder and strict decoder (see fctl/kmip.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kmip_int.h"

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static bool tag_ok(uint32_t tag)
{
	return (tag >> 16) == 0x42 || (tag >> 16) == 0x54;
}

void fctl_ttlv_enc_init(struct fctl_ttlv_enc *e)
{
	memset(e, 0, sizeof(*e));
}

void fctl_ttlv_enc_release(struct fctl_ttlv_enc *e)
{
	if (!e)
		return;
	if (e->buf.data)
		fctl_memzero(e->buf.data, e->buf.cap);
	fctl_buf_release(&e->buf);
	e->depth = 0;
	e->err = 0;
}

static void put_item(struct fctl_ttlv_enc *e, uint32_t tag, uint8_t type, const void *val,
		     size_t len)
{
	static const uint8_t zero[8];
	uint8_t hdr[8];

	if (e->err)
		return;
	if (!tag_ok(tag) || len > FCTL_TTLV_MAX_MESSAGE) {
		e->err = -EINVAL;
		return;
	}
	fctl_put_be(hdr, tag, 3);
	hdr[3] = type;
	fctl_put_be(hdr + 4, len, 4);
	if (fctl_buf_append(&e->buf, hdr, 8) < 0 || (len && fctl_buf_append(&e->buf, val, len) < 0) ||
	    fctl_buf_append(&e->buf, zero, pad8(len) - len) < 0)
		e->err = -ENOMEM;
}

void fctl_ttlv_begin(struct fctl_ttlv_enc *e, uint32_t tag)
{
	if (e->err)
		return;
	if (e->depth >= FCTL_TTLV_MAX_DEPTH) {
		e->err = -EPROTO;
		return;
	}
	e->open[e->depth] = e->buf.len;
	put_item(e, tag, FCTL_TTLV_STRUCTURE, NULL, 0);
	if (!e->err)
		e->depth++;
}

void fctl_ttlv_end(struct fctl_ttlv_enc *e)
{
	size_t at, len;

	if (e->err)
		return;
	if (!e->depth) {
		e->err = -EPROTO;
		return;
	}
	at = e->open[--e->depth];
	len = e->buf.len - at - 8;
	if (len > FCTL_TTLV_MAX_MESSAGE) {
		e->err = -EINVAL;
		return;
	}
	fctl_put_be((uint8_t *)e->buf.data + at + 4, len, 4);
}

void fctl_ttlv_put_int(struct fctl_ttlv_enc *e, uint32_t tag, int32_t v)
{
	uint8_t b[4];

	fctl_put_be(b, (uint32_t)v, 4);
	put_item(e, tag, FCTL_TTLV_INTEGER, b, 4);
}

void fctl_ttlv_put_long(struct fctl_ttlv_enc *e, uint32_t tag, int64_t v)
{
	uint8_t b[8];

	fctl_put_be(b, (uint64_t)v, 8);
	put_item(e, tag, FCTL_TTLV_LONG, b, 8);
}

void fctl_ttlv_put_enum(struct fctl_ttlv_enc *e, uint32_t tag, uint32_t v)
{
	uint8_t b[4];

	fctl_put_be(b, v, 4);
	put_item(e, tag, FCTL_TTLV_ENUM, b, 4);
}

void fctl_ttlv_put_bool(struct fctl_ttlv_enc *e, uint32_t tag, bool v)
{
	uint8_t b[8];

	fctl_put_be(b, v ? 1 : 0, 8);
	put_item(e, tag, FCTL_TTLV_BOOL, b, 8);
}

void fctl_ttlv_put_text(struct fctl_ttlv_enc *e, uint32_t tag, const char *s)
{
	put_item(e, tag, FCTL_TTLV_TEXT, s, s ? strlen(s) : 0);
}

void fctl_ttlv_put_bytes(struct fctl_ttlv_enc *e, uint32_t tag, const void *p, size_t n)
{
	put_item(e, tag, FCTL_TTLV_BYTES, p, n);
}

void fctl_ttlv_put_bigint(struct fctl_ttlv_enc *e, uint32_t tag, const void *p, size_t n)
{
	if (!e->err && (n == 0 || n % 8)) {
		e->err = -EINVAL;
		return;
	}
	put_item(e, tag, FCTL_TTLV_BIGINT, p, n);
}

void fctl_ttlv_put_datetime(struct fctl_ttlv_enc *e, uint32_t tag, int64_t unix_seconds)
{
	uint8_t b[8];

	fctl_put_be(b, (uint64_t)unix_seconds, 8);
	put_item(e, tag, FCTL_TTLV_DATETIME, b, 8);
}

void fctl_ttlv_put_interval(struct fctl_ttlv_enc *e, uint32_t tag, uint32_t seconds)
{
	uint8_t b[4];

	fctl_put_be(b, seconds, 4);
	put_item(e, tag, FCTL_TTLV_INTERVAL, b, 4);
}

int fctl_ttlv_enc_finish(struct fctl_ttlv_enc *e, const uint8_t **out, size_t *len)
{
	if (e->err)
		return e->err;
	if (e->depth)
		return -EPROTO;
	if (e->buf.oom)
		return -ENOMEM;
	*out = (const uint8_t *)e->buf.data;
	*len = e->buf.len;
	return 0;
}

/* --- decoder --- */

struct dec {
	struct fctl_ttlv_doc *doc;
	size_t cap;
	const char *why;
};

/* value length a fixed-size type must carry, 0 for variable */
static uint32_t fixed_len(uint8_t type)
{
	switch (type) {
	case FCTL_TTLV_INTEGER:
	case FCTL_TTLV_ENUM:
	case FCTL_TTLV_INTERVAL:
		return 4;
	case FCTL_TTLV_LONG:
	case FCTL_TTLV_BOOL:
	case FCTL_TTLV_DATETIME:
	case FCTL_TTLV_DATETIME_EXT:
		return 8;
	default:
		return 0;
	}
}

static int fail(struct dec *d, const char *why)
{
	d->why = why;
	return -EBADMSG;
}

/* Parses one item at p (avail bytes); returns its index via *idx and its encoded
 * size via *used. */
static int parse_item(struct dec *d, const uint8_t *p, size_t avail, unsigned depth, int *idx,
		      size_t *used)
{
	struct fctl_ttlv *t;
	uint32_t tag, len;
	uint8_t type;
	size_t total;
	int me;

	if (depth > FCTL_TTLV_MAX_DEPTH)
		return fail(d, "structures nested too deeply");
	if (avail < 8)
		return fail(d, "truncated item header");
	tag = (uint32_t)fctl_get_be(p, 3);
	type = p[3];
	len = (uint32_t)fctl_get_be(p + 4, 4);
	if (!tag_ok(tag))
		return fail(d, "tag outside the KMIP and extension ranges");
	if (type < FCTL_TTLV_STRUCTURE || type > FCTL_TTLV_DATETIME_EXT)
		return fail(d, "unknown item type");
	if (fixed_len(type) && len != fixed_len(type))
		return fail(d, "wrong length for a fixed-size type");
	if (type == FCTL_TTLV_BIGINT && (len == 0 || len % 8))
		return fail(d, "big integer length is not a non-zero multiple of 8");
	if (type == FCTL_TTLV_STRUCTURE && len % 8)
		return fail(d, "structure length is not a multiple of 8");
	total = 8 + pad8(len);
	if (len > FCTL_TTLV_MAX_MESSAGE || total > avail)
		return fail(d, "item longer than its container");
	for (size_t i = 8 + len; i < total; i++)
		if (p[i])
			return fail(d, "non-zero padding");
	if (type == FCTL_TTLV_BOOL && fctl_get_be(p + 8, 8) > 1)
		return fail(d, "boolean other than 0 or 1");
	if (type == FCTL_TTLV_TEXT && memchr(p + 8, 0, len))
		return fail(d, "text string holds a NUL byte");
	if (d->doc->n >= FCTL_TTLV_MAX_ITEMS)
		return fail(d, "too many items");
	if (d->doc->n == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 32;
		struct fctl_ttlv *ni = realloc(d->doc->items, ncap * sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		d->doc->items = ni;
		d->cap = ncap;
	}
	me = (int)d->doc->n++;
	t = &d->doc->items[me];
	t->tag = tag;
	t->type = type;
	t->len = len;
	t->val = p + 8;
	t->first_child = t->next = -1;
	if (type == FCTL_TTLV_STRUCTURE) {
		size_t off = 0;
		int prev = -1;

		while (off < len) {
			int child;
			size_t cu;
			int r = parse_item(d, p + 8 + off, len - off, depth + 1, &child, &cu);

			if (r < 0)
				return r;
			/* items may have moved: index, never pointer */
			if (prev < 0)
				d->doc->items[me].first_child = child;
			else
				d->doc->items[prev].next = child;
			prev = child;
			off += cu;
		}
	}
	*idx = me;
	*used = total;
	return 0;
}

int fctl_ttlv_parse(const uint8_t *buf, size_t len, struct fctl_ttlv_doc *doc, const char **why)
{
	struct fctl_ttlv_doc tmp = { 0 };
	struct dec d = { .doc = &tmp };
	size_t used = 0;
	int idx, r;

	if (!buf || len == 0) {
		if (why)
			*why = "empty message";
		return -EBADMSG;
	}
	if (len > FCTL_TTLV_MAX_MESSAGE + 8) {
		if (why)
			*why = "message too large";
		return -EBADMSG;
	}
	r = parse_item(&d, buf, len, 1, &idx, &used);
	if (r == 0 && used != len)
		r = fail(&d, "trailing bytes after the message");
	if (r < 0) {
		if (why)
			*why = r == -ENOMEM ? "out of memory" : d.why;
		free(tmp.items);
		return r;
	}
	*doc = tmp;
	return 0;
}

void fctl_ttlv_doc_release(struct fctl_ttlv_doc *doc)
{
	if (!doc)
		return;
	free(doc->items);
	doc->items = NULL;
	doc->n = 0;
}

const struct fctl_ttlv *fctl_ttlv_root(const struct fctl_ttlv_doc *doc)
{
	return doc && doc->n ? &doc->items[0] : NULL;
}

const struct fctl_ttlv *fctl_ttlv_child(const struct fctl_ttlv_doc *doc,
					const struct fctl_ttlv *parent, uint32_t tag,
					const struct fctl_ttlv *after)
{
	int i;

	if (!parent || parent->type != FCTL_TTLV_STRUCTURE)
		return NULL;
	i = after ? after->next : parent->first_child;
	for (; i >= 0; i = doc->items[i].next)
		if (!tag || doc->items[i].tag == tag)
			return &doc->items[i];
	return NULL;
}

int fctl_ttlv_get_int(const struct fctl_ttlv *t, int32_t *out)
{
	if (!t || t->type != FCTL_TTLV_INTEGER)
		return -EBADMSG;
	*out = (int32_t)(uint32_t)fctl_get_be(t->val, 4);
	return 0;
}

int fctl_ttlv_get_long(const struct fctl_ttlv *t, int64_t *out)
{
	if (!t || t->type != FCTL_TTLV_LONG)
		return -EBADMSG;
	*out = (int64_t)fctl_get_be(t->val, 8);
	return 0;
}

int fctl_ttlv_get_enum(const struct fctl_ttlv *t, uint32_t *out)
{
	if (!t || t->type != FCTL_TTLV_ENUM)
		return -EBADMSG;
	*out = (uint32_t)fctl_get_be(t->val, 4);
	return 0;
}

int fctl_ttlv_get_bool(const struct fctl_ttlv *t, bool *out)
{
	if (!t || t->type != FCTL_TTLV_BOOL)
		return -EBADMSG;
	*out = fctl_get_be(t->val, 8) != 0;
	return 0;
}

int fctl_ttlv_get_datetime(const struct fctl_ttlv *t, int64_t *out)
{
	if (!t || (t->type != FCTL_TTLV_DATETIME && t->type != FCTL_TTLV_DATETIME_EXT))
		return -EBADMSG;
	*out = (int64_t)fctl_get_be(t->val, 8);
	if (t->type == FCTL_TTLV_DATETIME_EXT)
		*out /= 1000000;
	return 0;
}

int fctl_ttlv_get_text(const struct fctl_ttlv *t, char *out, size_t outlen)
{
	if (!t || t->type != FCTL_TTLV_TEXT)
		return -EBADMSG;
	if (t->len >= outlen)
		return -ENOSPC;
	memcpy(out, t->val, t->len);
	out[t->len] = '\0';
	return 0;
}

int fctl_ttlv_peek_size(const uint8_t hdr[8], size_t *total)
{
	uint32_t tag = (uint32_t)fctl_get_be(hdr, 3), len = (uint32_t)fctl_get_be(hdr + 4, 4);

	if (!tag_ok(tag) || hdr[3] != FCTL_TTLV_STRUCTURE || len % 8 || len > FCTL_TTLV_MAX_MESSAGE)
		return -EBADMSG;
	*total = 8 + (size_t)len;
	return 0;
}
