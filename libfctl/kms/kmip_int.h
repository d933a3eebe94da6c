/* SPDX-License-Identifier: MIT */
/*
 * KMIP TTLV (tag, type, length, value) codec: the binary encoding of KMIP 1.x and 2.0.
 *
 * Every item is a 3-byte tag, a 1-byte type, a 4-byte big-endian length and a value
 * padded with zeros to a multiple of 8 bytes. The decoder is strict: fixed lengths
 * for fixed types, zero padding, a structure's children fill it exactly, known types,
 * tags in the KMIP (0x42xxxx) or extension (0x54xxxx) ranges, bounded nesting depth
 * and item count. Decoded byte strings point into the caller's buffer: a response
 * holding key material is wiped by its owner, never copied here.
 */
#ifndef FCTL_KMIP_H
#define FCTL_KMIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/util.h"

enum fctl_ttlv_type {
	FCTL_TTLV_STRUCTURE = 0x01,
	FCTL_TTLV_INTEGER = 0x02,
	FCTL_TTLV_LONG = 0x03,
	FCTL_TTLV_BIGINT = 0x04,
	FCTL_TTLV_ENUM = 0x05,
	FCTL_TTLV_BOOL = 0x06,
	FCTL_TTLV_TEXT = 0x07,
	FCTL_TTLV_BYTES = 0x08,
	FCTL_TTLV_DATETIME = 0x09,
	FCTL_TTLV_INTERVAL = 0x0A,
	FCTL_TTLV_DATETIME_EXT = 0x0B, /* KMIP 2.0: microseconds */
};

#define FCTL_TTLV_MAX_DEPTH 16
#define FCTL_TTLV_MAX_ITEMS 4096
#define FCTL_TTLV_MAX_MESSAGE (1u << 20)

/* Tags used by fabricctl (KMIP 1.x/2.0 specification, section "Tags"). */
#define FCTL_KMIP_TAG_ACTIVATION_DATE 0x420001
#define FCTL_KMIP_TAG_APPLICATION_DATA 0x420002
#define FCTL_KMIP_TAG_APPLICATION_NAMESPACE 0x420003
#define FCTL_KMIP_TAG_APPLICATION_SPECIFIC_INFORMATION 0x420004
#define FCTL_KMIP_TAG_ATTRIBUTE 0x420008
#define FCTL_KMIP_TAG_ATTRIBUTE_INDEX 0x420009
#define FCTL_KMIP_TAG_ATTRIBUTE_NAME 0x42000A
#define FCTL_KMIP_TAG_ATTRIBUTE_VALUE 0x42000B
#define FCTL_KMIP_TAG_BATCH_COUNT 0x42000D
#define FCTL_KMIP_TAG_BATCH_ITEM 0x42000F
#define FCTL_KMIP_TAG_COMPROMISE_DATE 0x420020
#define FCTL_KMIP_TAG_COMPROMISE_OCCURRENCE_DATE 0x420021
#define FCTL_KMIP_TAG_CRYPTOGRAPHIC_ALGORITHM 0x420028
#define FCTL_KMIP_TAG_CRYPTOGRAPHIC_LENGTH 0x42002A
#define FCTL_KMIP_TAG_CRYPTOGRAPHIC_USAGE_MASK 0x42002C
#define FCTL_KMIP_TAG_DEACTIVATION_DATE 0x42002F
#define FCTL_KMIP_TAG_DESTROY_DATE 0x420033
#define FCTL_KMIP_TAG_INITIAL_DATE 0x420039
#define FCTL_KMIP_TAG_KEY_BLOCK 0x420040
#define FCTL_KMIP_TAG_KEY_FORMAT_TYPE 0x420042
#define FCTL_KMIP_TAG_KEY_MATERIAL 0x420043
#define FCTL_KMIP_TAG_KEY_VALUE 0x420045
#define FCTL_KMIP_TAG_NAME 0x420053
#define FCTL_KMIP_TAG_NAME_TYPE 0x420054
#define FCTL_KMIP_TAG_NAME_VALUE 0x420055
#define FCTL_KMIP_TAG_OBJECT_TYPE 0x420057
#define FCTL_KMIP_TAG_OPERATION 0x42005C
#define FCTL_KMIP_TAG_PROCESS_START_DATE 0x420067
#define FCTL_KMIP_TAG_PROTECT_STOP_DATE 0x420068
#define FCTL_KMIP_TAG_PROTOCOL_VERSION 0x420069
#define FCTL_KMIP_TAG_PROTOCOL_VERSION_MAJOR 0x42006A
#define FCTL_KMIP_TAG_PROTOCOL_VERSION_MINOR 0x42006B
#define FCTL_KMIP_TAG_REQUEST_HEADER 0x420077
#define FCTL_KMIP_TAG_REQUEST_MESSAGE 0x420078
#define FCTL_KMIP_TAG_REQUEST_PAYLOAD 0x420079
#define FCTL_KMIP_TAG_RESPONSE_HEADER 0x42007A
#define FCTL_KMIP_TAG_RESPONSE_MESSAGE 0x42007B
#define FCTL_KMIP_TAG_RESPONSE_PAYLOAD 0x42007C
#define FCTL_KMIP_TAG_RESULT_MESSAGE 0x42007D
#define FCTL_KMIP_TAG_RESULT_REASON 0x42007E
#define FCTL_KMIP_TAG_RESULT_STATUS 0x42007F
#define FCTL_KMIP_TAG_REVOCATION_MESSAGE 0x420080
#define FCTL_KMIP_TAG_REVOCATION_REASON 0x420081
#define FCTL_KMIP_TAG_REVOCATION_REASON_CODE 0x420082
#define FCTL_KMIP_TAG_STATE 0x42008D
#define FCTL_KMIP_TAG_SYMMETRIC_KEY 0x42008F
#define FCTL_KMIP_TAG_TEMPLATE_ATTRIBUTE 0x420091
#define FCTL_KMIP_TAG_TIME_STAMP 0x420092
#define FCTL_KMIP_TAG_UNIQUE_IDENTIFIER 0x420094
/* KMIP 2.0 */
#define FCTL_KMIP_TAG_ATTRIBUTES 0x420125
#define FCTL_KMIP_TAG_ATTRIBUTE_REFERENCE 0x42013B

/* Encoder: appends items to a buffer; structures are opened and closed, their
 * lengths patched on close. Errors are sticky: check fctl_ttlv_enc_finish(). */
struct fctl_ttlv_enc {
	struct fctl_buf buf;
	size_t open[FCTL_TTLV_MAX_DEPTH];
	unsigned depth;
	int err;
};

void fctl_ttlv_enc_init(struct fctl_ttlv_enc *e);
void fctl_ttlv_enc_release(struct fctl_ttlv_enc *e); /* wipes the bytes */
void fctl_ttlv_begin(struct fctl_ttlv_enc *e, uint32_t tag);
void fctl_ttlv_end(struct fctl_ttlv_enc *e);
void fctl_ttlv_put_int(struct fctl_ttlv_enc *e, uint32_t tag, int32_t v);
void fctl_ttlv_put_long(struct fctl_ttlv_enc *e, uint32_t tag, int64_t v);
void fctl_ttlv_put_enum(struct fctl_ttlv_enc *e, uint32_t tag, uint32_t v);
void fctl_ttlv_put_bool(struct fctl_ttlv_enc *e, uint32_t tag, bool v);
void fctl_ttlv_put_text(struct fctl_ttlv_enc *e, uint32_t tag, const char *s);
void fctl_ttlv_put_bytes(struct fctl_ttlv_enc *e, uint32_t tag, const void *p, size_t n);
/* Big Integer: two's complement, big-endian, n a non-zero multiple of 8. */
void fctl_ttlv_put_bigint(struct fctl_ttlv_enc *e, uint32_t tag, const void *p, size_t n);
void fctl_ttlv_put_datetime(struct fctl_ttlv_enc *e, uint32_t tag, int64_t unix_seconds);
void fctl_ttlv_put_interval(struct fctl_ttlv_enc *e, uint32_t tag, uint32_t seconds);
/* 0 with out and len set to the encoding (owned by e), or the first error: -ENOMEM,
 * -EINVAL (bad tag/length), -EPROTO (structures left open or closed twice). */
int fctl_ttlv_enc_finish(struct fctl_ttlv_enc *e, const uint8_t **out, size_t *len);

/* Decoded item. Children of a structure are first_child, then next, ...; indexes
 * into the document's array, -1 for none. */
struct fctl_ttlv {
	uint32_t tag;
	uint8_t type;
	uint32_t len;       /* value length before padding */
	const uint8_t *val; /* into the parsed buffer */
	int first_child;
	int next;
};

struct fctl_ttlv_doc {
	struct fctl_ttlv *items;
	size_t n;
};

/* Parses exactly one top-level item filling buf. -EBADMSG for any malformed input
 * (why, if non-NULL, gets a static reason), -ENOMEM. */
int fctl_ttlv_parse(const uint8_t *buf, size_t len, struct fctl_ttlv_doc *doc, const char **why);
void fctl_ttlv_doc_release(struct fctl_ttlv_doc *doc);
const struct fctl_ttlv *fctl_ttlv_root(const struct fctl_ttlv_doc *doc);
/* The first child of parent with tag, or of any tag when tag is 0 (after `after`
 * when non-NULL), or NULL. */
const struct fctl_ttlv *fctl_ttlv_child(const struct fctl_ttlv_doc *doc,
					const struct fctl_ttlv *parent, uint32_t tag,
					const struct fctl_ttlv *after);
/* Typed reads: -EBADMSG when the item is NULL or of another type. */
int fctl_ttlv_get_int(const struct fctl_ttlv *t, int32_t *out);
int fctl_ttlv_get_long(const struct fctl_ttlv *t, int64_t *out);
int fctl_ttlv_get_enum(const struct fctl_ttlv *t, uint32_t *out);
int fctl_ttlv_get_bool(const struct fctl_ttlv *t, bool *out);
int fctl_ttlv_get_datetime(const struct fctl_ttlv *t, int64_t *out); /* 2.0 extended: seconds */
/* Text: copied NUL-terminated into out (-ENOSPC when it does not fit). */
int fctl_ttlv_get_text(const struct fctl_ttlv *t, char *out, size_t outlen);

/* Reads the 8-byte header of an item: total encoded size (header + padded value). */
int fctl_ttlv_peek_size(const uint8_t hdr[8], size_t *total);

#endif
