/* SPDX-License-Identifier: MIT */
/*
 * The agent protocol (docs/protocol.md): versioned, length-prefixed frames of
 * TLVs between `fabricctl` and `fabricctl agent`.
 *
 *   frame  = header(16) payload(length)
 *   header = magic "FCTL" | version u8 | type u8 | flags u16 | id u32 | length u32
 *   payload = TLV*, TLV = type u16 | length u32 | value   (all big endian)
 *
 * TLV type bit 15 marks a critical TLV (an unknown one is refused, an unknown
 * non-critical one is skipped); bit 14 would mark a container and is refused
 * (v1 has no nesting). Duplicates, TLVs not allowed in the message type,
 * missing required TLVs, bad lengths, NULs inside strings, and frames over the
 * size limit are all refused. Decoding never allocates: byte and text values
 * point into the frame, which must outlive the message.
 */
#ifndef FCTL_PROTO_H
#define FCTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/util.h"

#define FCTL_PROTO_MAGIC 0x4643544cu /* "FCTL" */
#define FCTL_PROTO_VERSION 1
#define FCTL_PROTO_HDR_LEN 16
#define FCTL_PROTO_MAX_FRAME (16u << 20)  /* header + payload */
#define FCTL_PROTO_MAX_PROFILE (4u << 20) /* PROFILE value */
#define FCTL_PROTO_MAX_STR 255            /* HOST, PROFILE_NAME, ROLE, AGENT */
#define FCTL_PROTO_MAX_ERROR (64u << 10)  /* ERROR value */
#define FCTL_PROTO_MAX_CONFIRM (7u * 86400) /* CONFIRM value: seconds, 7 days */
/* SIGS value (apply): at most FCTL_PROTO_MAX_SIGS signature files of at most
 * FCTL_PROTO_MAX_SIG bytes each, names of 1..FCTL_PROTO_MAX_SIG_NAME bytes */
#define FCTL_PROTO_MAX_SIGS 64
#define FCTL_PROTO_MAX_SIG (64u << 10)
#define FCTL_PROTO_MAX_SIG_NAME 128
#define FCTL_PROTO_MAX_SIGS_LEN \
	(FCTL_PROTO_MAX_SIGS * (1u + FCTL_PROTO_MAX_SIG_NAME + 4u + FCTL_PROTO_MAX_SIG))
/* The last request type; counters and metrics size their tables by it. */
#define FCTL_MSG_LAST FCTL_MSG_PROBE_RUN

enum fctl_msg_type {
	FCTL_MSG_HELLO = 1,
	FCTL_MSG_STATUS = 2,
	FCTL_MSG_PLAN = 3,
	FCTL_MSG_APPLY = 4,
	FCTL_MSG_SHOW = 5,
	FCTL_MSG_DIFF = 6,
	FCTL_MSG_ROLLBACK = 7,
	FCTL_MSG_HISTORY = 8,
	FCTL_MSG_RECOVER = 9,
	/* SA-level requests for key rotation (docs/rotation.md): key-custodian only */
	FCTL_MSG_SA_DUMP = 10,     /* ifname: SAs (AN, active, KEYID, PN) and counters */
	FCTL_MSG_RXSA_INSTALL = 11, /* ifname, sci, an, pn, key, keyid [, ssci, salt]: active */
	FCTL_MSG_TXSA_STAGE = 12,  /* ifname, an, pn, key, keyid [, ssci, salt]: inactive */
	FCTL_MSG_TXSA_SWITCH = 13, /* ifname, an, key-version: TX SA active, then encoding SA */
	FCTL_MSG_ENCODING_SA = 14, /* ifname, an, key-version: encoding SA only (rollback) */
	FCTL_MSG_SA_RETIRE = 15,   /* ifname, an [, sci: RX SA of that SC, else TX SA] */
	FCTL_MSG_SA_BATCH = 16,    /* sa-ops: N of the requests 10..15 (one phase, one host) */
	FCTL_MSG_CONFIRM = 17,     /* host, options: confirm the pending apply --confirm */
	/* the fabric probe (docs/probes.md, "The whole fabric"): profile, probe spec; operator */
	FCTL_MSG_PROBE_SERVE = 18, /* serve one probe of a link's VLAN, then answer */
	FCTL_MSG_PROBE_RUN = 19,   /* run it towards the link's other end, answer its lines */
	FCTL_MSG_RESPONSE = 0x80,
};

#define FCTL_TLV_CRITICAL 0x8000u
#define FCTL_TLV_CONTAINER 0x4000u

enum fctl_tlv_type {
	FCTL_TLV_VERSION_MIN = 0x8001, /* u16 */
	FCTL_TLV_VERSION_MAX = 0x8002, /* u16 */
	FCTL_TLV_HOST = 0x8003,        /* string: the profile host to act as */
	FCTL_TLV_PROFILE = 0x8004,     /* bytes: profile YAML */
	FCTL_TLV_PROFILE_NAME = 0x0005, /* string: the client's file name (messages only) */
	FCTL_TLV_OPTIONS = 0x8006,     /* u32: FCTL_OPT_* */
	FCTL_TLV_TO_VERSION = 0x8007,  /* u64 */
	FCTL_TLV_RESULT = 0x8008,      /* u32: the CLI's exit code */
	FCTL_TLV_ERROR = 0x0009,       /* text: what the command wrote to stderr */
	FCTL_TLV_OUTPUT = 0x000a,      /* bytes: what the command wrote to stdout */
	FCTL_TLV_ROLE = 0x000b,        /* string: role granted (hello response) */
	FCTL_TLV_AGENT = 0x000c,       /* string: agent host and software version */
	FCTL_TLV_IFNAME = 0x800d,      /* string: a MACsec interface (SA requests) */
	FCTL_TLV_SCI = 0x800e,         /* u64: an RX SC's SCI */
	FCTL_TLV_AN = 0x800f,          /* u32: association number 0..3 */
	FCTL_TLV_PN = 0x8010,          /* u64: initial packet number */
	FCTL_TLV_KEY = 0x8011,         /* bytes: the SAK (16 or 32); wiped after use */
	FCTL_TLV_KEYID = 0x8012,       /* bytes: exactly 16 */
	FCTL_TLV_KEY_VERSION = 0x8013, /* u32: key version (rotation state) */
	FCTL_TLV_SSCI = 0x8014,        /* u32: XPN short SCI */
	FCTL_TLV_SALT = 0x8015,        /* bytes: XPN salt, exactly 12 */
	FCTL_TLV_SA_OPS = 0x8016,      /* bytes: N records of FCTL_SA_OP_LEN (sa-batch) */
	FCTL_TLV_CONFIRM = 0x8017,     /* u32: apply --confirm, seconds 1..FCTL_PROTO_MAX_CONFIRM */
	/* bytes (apply): the profile's signature files, N records of
	 * name_len u8 | name | data_len u32 | data (names: fctl_proto_sig_name_ok).
	 * Not critical: an agent that predates it skips it, and its host's policy (if any)
	 * then finds no signature and refuses, as before. */
	FCTL_TLV_SIGS = 0x0018,
	/* string (probe-serve, probe-run): the probe spec, space-separated key=value words
	 * (link, vlan, port, tests, iters, size, deadline): what the agent checks and runs */
	FCTL_TLV_PROBE = 0x8019,
};

enum {
	FCTL_OPT_DRY_RUN = 1u << 0,
	FCTL_OPT_JSON = 1u << 1,
	FCTL_OPT_ALL = FCTL_OPT_DRY_RUN | FCTL_OPT_JSON,
};

/* Bits of struct fctl_msg.present. */
enum {
	FCTL_HAS_VERSION_MIN = 1u << 0,
	FCTL_HAS_VERSION_MAX = 1u << 1,
	FCTL_HAS_HOST = 1u << 2,
	FCTL_HAS_PROFILE = 1u << 3,
	FCTL_HAS_PROFILE_NAME = 1u << 4,
	FCTL_HAS_OPTIONS = 1u << 5,
	FCTL_HAS_TO_VERSION = 1u << 6,
	FCTL_HAS_RESULT = 1u << 7,
	FCTL_HAS_ERROR = 1u << 8,
	FCTL_HAS_OUTPUT = 1u << 9,
	FCTL_HAS_ROLE = 1u << 10,
	FCTL_HAS_AGENT = 1u << 11,
	FCTL_HAS_IFNAME = 1u << 12,
	FCTL_HAS_SCI = 1u << 13,
	FCTL_HAS_AN = 1u << 14,
	FCTL_HAS_PN = 1u << 15,
	FCTL_HAS_KEY = 1u << 16,
	FCTL_HAS_KEYID = 1u << 17,
	FCTL_HAS_KEY_VERSION = 1u << 18,
	FCTL_HAS_SSCI = 1u << 19,
	FCTL_HAS_SALT = 1u << 20,
	FCTL_HAS_SA_OPS = 1u << 21,
	FCTL_HAS_CONFIRM = 1u << 22,
	FCTL_HAS_SIGS = 1u << 23,
	FCTL_HAS_PROBE = 1u << 24,
};

/*
 * An SA-OPS record (sa-batch): one SA request of types 10..15 in a fixed layout,
 * FCTL_SA_OP_LEN bytes, big endian:
 *
 *   0 type u8 (10..15) | 1 pad u8 | 2 present u16 (bits: below) | 4 ifname[16] (NUL padded,
 *   1..15 bytes) | 20 sci u64 | 28 pn u64 | 36 an u8 | 37 key_len u8 (0, 16, 32) | 38 pad u16 |
 *   40 key-version u32 | 44 ssci u32 | 48 key[32] | 80 keyid[16] | 96 salt[12]
 *
 * present names the optional fields the record carries, as the TLVs of the single request
 * would: the same rules apply (allowed, required, limits), and fields not present must be
 * zero. At most FCTL_SA_OPS_MAX records.
 */
#define FCTL_SA_OP_LEN 108
#define FCTL_SA_OPS_MAX 8192
enum {
	FCTL_SA_OP_SCI = 1u << 0,
	FCTL_SA_OP_AN = 1u << 1,
	FCTL_SA_OP_PN = 1u << 2,
	FCTL_SA_OP_KEY = 1u << 3,
	FCTL_SA_OP_KEYID = 1u << 4,
	FCTL_SA_OP_KEY_VERSION = 1u << 5,
	FCTL_SA_OP_SSCI = 1u << 6,
	FCTL_SA_OP_SALT = 1u << 7,
};

/* Whether type is one of the SA-level (key-custodian) requests. */
bool fctl_proto_is_sa_request(uint8_t type);
/* Whether type is probe-serve or probe-run: requests that start RDMA traffic. */
bool fctl_proto_is_probe(uint8_t type);

struct fctl_msg {
	uint8_t version; /* header version (decode); encode always writes FCTL_PROTO_VERSION */
	uint8_t type;    /* enum fctl_msg_type */
	uint16_t flags;  /* must be 0 in version 1 */
	uint32_t id;     /* request id; a response carries its request's id */
	uint32_t present; /* FCTL_HAS_* */
	uint16_t version_min, version_max;
	char host[FCTL_PROTO_MAX_STR + 1];
	const uint8_t *profile;
	uint32_t profile_len;
	char profile_name[FCTL_PROTO_MAX_STR + 1];
	uint32_t options;
	uint64_t to_version;
	uint32_t result;
	const char *error; /* not NUL-terminated */
	uint32_t error_len;
	const uint8_t *output;
	uint32_t output_len;
	char role[FCTL_PROTO_MAX_STR + 1];
	char agent[FCTL_PROTO_MAX_STR + 1];
	/* SA requests; key points into the frame: the owner wipes the frame after use */
	char ifname[16];
	uint64_t sci;
	uint32_t an;
	uint64_t pn;
	const uint8_t *key;
	uint32_t key_len;
	const uint8_t *keyid; /* 16 bytes */
	uint32_t key_version;
	uint32_t ssci;
	const uint8_t *salt; /* 12 bytes */
	/* sa-batch: the records, in the frame (n = sa_ops_len / FCTL_SA_OP_LEN, checked) */
	const uint8_t *sa_ops;
	uint32_t sa_ops_len;
	/* apply: the confirmation deadline, seconds after the apply (FCTL_HAS_CONFIRM) */
	uint32_t confirm_seconds;
	/* apply: the signature records, in the frame (checked: fctl_proto_sig_next) */
	const uint8_t *sigs;
	uint32_t sigs_len;
	/* probe-serve, probe-run: the probe spec (FCTL_HAS_PROBE) */
	char probe[FCTL_PROTO_MAX_STR + 1];
};

struct fctl_proto_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t flags;
	uint32_t id;
	uint32_t length; /* payload bytes after the header */
};

const char *fctl_proto_type_name(uint8_t type); /* "apply", ..., NULL when unknown */

/* Checks a header (the first FCTL_PROTO_HDR_LEN bytes) before the payload is read:
 * magic, version, type, flags, and header + length <= max_frame (0: the default).
 * -EBADMSG bad magic or type or flags, -EPROTONOSUPPORT version, -EMSGSIZE too long. */
int fctl_proto_hdr_parse(const uint8_t *buf, size_t n, uint32_t max_frame,
			 struct fctl_proto_hdr *out);

/* Decodes one whole frame (n must be exactly header + length). On failure returns a
 * negative errno and, if why is not NULL, one line saying what was wrong. */
int fctl_proto_decode(const uint8_t *buf, size_t n, uint32_t max_frame, struct fctl_msg *out,
		      char *why, size_t whylen);

/* Appends the frame of m (TLVs for the bits in m->present, in type order). -EINVAL when
 * m would not decode (a field over its limit, a TLV not allowed in the type, ...). */
int fctl_proto_encode(const struct fctl_msg *m, struct fctl_buf *out);

/* sa-batch: the number of records of a decoded batch. */
size_t fctl_proto_sa_ops_count(const struct fctl_msg *batch);

/* Record i of a decoded batch as the single request it stands for (type 10..15, the
 * batch's id and host; key, keyid and salt point into the frame, like a decoded
 * request's). The decoder has checked every record: this cannot fail for i < count. */
void fctl_proto_sa_op_get(const struct fctl_msg *batch, size_t i, struct fctl_msg *op);

/* Appends the record of op (an SA request of type 10..15 that would encode on its own,
 * its ifname included; host is not carried) to ops. The caller wipes ops after use when
 * it holds keys, and sizes it ahead (FCTL_SA_OP_LEN per record appended, then
 * fctl_buf_reset) so that no realloc leaves a key behind. -EINVAL when op would not
 * decode, -ENOSPC when ops is full (FCTL_SA_OPS_MAX). */
int fctl_proto_sa_op_put(const struct fctl_msg *op, struct fctl_buf *ops);

/* Whether name may name a signature file on the agent's host: 1..FCTL_PROTO_MAX_SIG_NAME
 * bytes of [A-Za-z0-9._+@-], not starting with '.', ending in ".sig", no "..": a plain
 * file name, never a path. */
bool fctl_proto_sig_name_ok(const char *name, size_t len);

struct fctl_proto_sig {
	char name[FCTL_PROTO_MAX_SIG_NAME + 1];
	const uint8_t *data; /* into the frame */
	uint32_t len;
};

/* The signature record at *off of a decoded message's SIGS (start with *off = 0):
 * 1 and *off advanced, 0 at the end. The decoder has checked every record. */
int fctl_proto_sig_next(const struct fctl_msg *m, size_t *off, struct fctl_proto_sig *out);

/* Appends a signature record to sigs (a SIGS value being built). -EINVAL bad name,
 * -EFBIG data over FCTL_PROTO_MAX_SIG, -ENOSPC already FCTL_PROTO_MAX_SIGS records
 * (count them in *n, start at 0), -ENOMEM. */
int fctl_proto_sig_put(struct fctl_buf *sigs, size_t *n, const char *name, const void *data,
		       size_t len);

/* The highest version both sides speak, or -EPROTONOSUPPORT. */
int fctl_proto_negotiate(uint16_t peer_min, uint16_t peer_max);

#endif
