// SPDX-License-Identifier: MIT
/* Audit witnesses: C2SP tlog-cosignature/v1 (Ed25519) and the witness's state. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "audit_int.h"
#include "fctl/audit.h"

static const char em_dash[] = "\xe2\x80\x94 ";

void fctl_audit_cosig_keyid(const char *name, const uint8_t pub[32], uint8_t id[4])
{
	fctl_audit_keyid_alg(name, 0x04, pub, id); /* 0x04: cosignature/v1 */
}

/* "cosignature/v1\ntime T\n" || body */
static int cosig_message(uint64_t ts, const char *body, size_t blen, struct fctl_buf *m)
{
	fctl_buf_printf(m, "cosignature/v1\ntime %" PRIu64 "\n", ts);
	fctl_buf_append(m, body, blen);
	return m->oom ? -ENOMEM : 0;
}

int fctl_audit_cosig_check(const uint8_t pub[32], const char *line, size_t len,
			   const char *body, size_t blen, uint64_t *ts)
{
	const size_t dl = sizeof(em_dash) - 1;
	const char *name, *sp;
	struct fctl_buf m = { 0 };
	uint8_t blob[96], id[4];
	char nm[256];
	int bl, r;

	if (len < dl || memcmp(line, em_dash, dl) != 0)
		return 0;
	name = line + dl;
	sp = memchr(name, ' ', len - dl);
	if (!sp || (size_t)(sp - name) >= sizeof(nm) || sp == name)
		return 0;
	snprintf(nm, sizeof(nm), "%.*s", (int)(sp - name), name);
	bl = fctl_audit_b64_decode(sp + 1, len - (size_t)(sp + 1 - line), blob, sizeof(blob));
	fctl_audit_cosig_keyid(nm, pub, id);
	if (bl != 76 || memcmp(blob, id, 4) != 0)
		return 0;
	if (cosig_message(fctl_get_be(blob + 4, 8), body, blen, &m) < 0)
		return -ENOMEM;
	r = fctl_audit_ed25519_verify(pub, m.data, m.len, blob + 12);
	fctl_buf_release(&m);
	if (r == 1 && ts)
		*ts = fctl_get_be(blob + 4, 8);
	return r;
}

int fctl_audit_note_parse(const char *note, size_t len, size_t *blen, char *origin, size_t on,
			  uint64_t *size, uint8_t root[32])
{
	const char *end = NULL, *l2, *l3, *l4;
	char num[24];

	for (size_t i = 0; i + 1 < len; i++)
		if (note[i] == '\n' && note[i + 1] == '\n') {
			end = note + i + 1;
			break;
		}
	if (!end || !(l2 = memchr(note, '\n', (size_t)(end - note))) ||
	    !(l3 = memchr(l2 + 1, '\n', (size_t)(end - l2 - 1))) ||
	    !(l4 = memchr(l3 + 1, '\n', (size_t)(end - l3 - 1))) || l4 + 1 != end)
		return -EINVAL;
	if ((size_t)(l2 - note) >= on || (size_t)(l3 - l2 - 1) >= sizeof(num) || l3 == l2 + 1)
		return -EINVAL;
	snprintf(origin, on, "%.*s", (int)(l2 - note), note);
	snprintf(num, sizeof(num), "%.*s", (int)(l3 - l2 - 1), l2 + 1);
	if (strspn(num, "0123456789") != strlen(num) || (num[0] == '0' && num[1]) ||
	    fctl_parse_u64(num, size) < 0)
		return -EINVAL;
	if (fctl_audit_b64_decode(l3 + 1, (size_t)(l4 - l3 - 1), root, 32) != 32)
		return -EINVAL;
	*blen = (size_t)(end - note);
	return 0;
}

/* 1 when a signature line of the note is the log key's (C2SP note, Ed25519) and verifies */
static int log_signed(const uint8_t pub[32], const char *note, size_t len, size_t blen)
{
	const size_t dl = sizeof(em_dash) - 1;
	size_t pos = blen + 1;

	while (pos < len) {
		const char *s = note + pos, *nl = memchr(s, '\n', len - pos), *sp;
		size_t n = nl ? (size_t)(nl - s) : len - pos;
		uint8_t blob[80], id[4];
		char nm[FCTL_AUDIT_ORIGIN_MAX];

		pos += n + 1;
		if (n < dl || memcmp(s, em_dash, dl) != 0 || !(sp = memchr(s + dl, ' ', n - dl)) ||
		    (size_t)(sp - s - dl) >= sizeof(nm))
			continue;
		snprintf(nm, sizeof(nm), "%.*s", (int)(sp - s - dl), s + dl);
		fctl_audit_note_keyid(nm, pub, id);
		if (fctl_audit_b64_decode(sp + 1, n - (size_t)(sp + 1 - s), blob, sizeof(blob)) == 68 &&
		    memcmp(blob, id, 4) == 0 && fctl_audit_ed25519_verify(pub, note, blen, blob + 4) == 1)
			return 1;
	}
	return 0;
}

struct wstate {
	char origin[FCTL_AUDIT_ORIGIN_MAX];
	uint8_t log_key[32];
	uint64_t size;
	uint8_t root[32];
	bool have;
};

static int state_read(const char *path, struct wstate *w, char *err, size_t errlen)
{
	struct fctl_buf b = { 0 };
	char key[64] = "", root[64] = "";
	int r = fctl_file_read(path, &b), got;

	memset(w, 0, sizeof(*w));
	if (r == -ENOENT)
		return 0; /* a new witness: it has cosigned nothing */
	if (r < 0) {
		snprintf(err, errlen, "cannot read the witness state '%s': %s", path, strerror(-r));
		return r;
	}
	got = b.data ? sscanf(b.data, "fabricctl-witness v1\norigin %511s\nlog-key %63s\nsize %" SCNu64
				       "\nroot %63s\n", w->origin, key, &w->size, root) : 0;
	fctl_buf_release(&b);
	if (got != 4 || fctl_audit_b64_decode(key, strlen(key), w->log_key, 32) != 32 ||
	    fctl_audit_b64_decode(root, strlen(root), w->root, 32) != 32) {
		snprintf(err, errlen, "the witness state '%s' is damaged", path);
		return -EINVAL;
	}
	w->have = true;
	return 0;
}

static int state_write(const char *path, const struct wstate *w, char *err, size_t errlen)
{
	struct fctl_buf b = { 0 };
	int r;

	fctl_buf_printf(&b, "fabricctl-witness v1\norigin %s\nlog-key ", w->origin);
	fctl_audit_b64_encode(w->log_key, 32, &b);
	fctl_buf_printf(&b, "\nsize %" PRIu64 "\nroot ", w->size);
	fctl_audit_b64_encode(w->root, 32, &b);
	fctl_buf_putc(&b, '\n');
	if (b.oom) {
		fctl_buf_release(&b);
		return -ENOMEM;
	}
	r = fctl_file_replace(path, NULL, b.data, b.len, 0600, FCTL_FILE_SYNC_DIR);
	if (r < 0)
		snprintf(err, errlen, "cannot write the witness state '%s': %s", path, strerror(-r));
	fctl_buf_release(&b);
	return r;
}

/* Whether the new checkpoint extends the one the witness cosigned last. */
static int consistent(const struct fctl_audit_witness_req *q, const struct wstate *w,
		      uint64_t size, const uint8_t root[32], char *err, size_t errlen)
{
	if (!w->have || w->size == 0)
		return 0;
	if (size < w->size) {
		snprintf(err, errlen, "refused: the checkpoint (size %" PRIu64 ") is older than the "
			 "one this witness cosigned (size %" PRIu64 ")", size, w->size);
		return -ESTALE;
	}
	if (size == w->size) {
		if (memcmp(root, w->root, 32) != 0) {
			snprintf(err, errlen, "refused: size %" PRIu64 " with another root than the "
				 "one this witness cosigned: the log forked or was rewritten", size);
			return -ESTALE;
		}
		return 0;
	}
	if (q->old_size != w->size || q->new_size != size) {
		snprintf(err, errlen, "refused: a consistency proof from size %" PRIu64 " (the "
			 "witness's) to %" PRIu64 " is needed ('audit proof --consistency %" PRIu64
			 " --size %" PRIu64 "')", w->size, size, w->size, size);
		return -EINVAL;
	}
	if (fctl_audit_consistency_check(w->size, size, w->root, root, q->path, q->plen) != 1) {
		snprintf(err, errlen, "refused: the checkpoint (size %" PRIu64 ") is not consistent "
			 "with the one this witness cosigned (size %" PRIu64 "): the log was "
			 "rewritten or forked", size, w->size);
		return -ESTALE;
	}
	return 0;
}

static int witness_check(const struct fctl_audit_witness_req *q, struct wstate *w,
			 uint64_t *size, uint8_t root[32], size_t *blen, char *err, size_t errlen)
{
	char origin[FCTL_AUDIT_ORIGIN_MAX];
	uint8_t pub[32];
	int r;

	r = state_read(q->state_path, w, err, errlen);
	if (r < 0)
		return r;
	if (q->log_pub) {
		r = fctl_audit_ed25519_pub(q->log_pub, pub, err, errlen);
		if (r < 0)
			return r;
		if (w->have && memcmp(pub, w->log_key, 32) != 0) {
			snprintf(err, errlen, "refused: '%s' is not the log key this witness pinned",
				 q->log_pub);
			return -EINVAL;
		}
		memcpy(w->log_key, pub, 32);
	} else if (!w->have) {
		snprintf(err, errlen, "a new witness needs the log's public key (--log-pub)");
		return -EINVAL;
	}
	if (fctl_audit_note_parse(q->note, q->note_len, blen, origin, sizeof(origin), size, root) < 0) {
		snprintf(err, errlen, "refused: not a checkpoint (origin, size, root, blank line, "
			 "signatures)");
		return -EINVAL;
	}
	if (w->have && strcmp(origin, w->origin) != 0) {
		snprintf(err, errlen, "refused: origin '%s' is not the log this witness follows "
			 "('%s')", origin, w->origin);
		return -EINVAL;
	}
	snprintf(w->origin, sizeof(w->origin), "%s", origin);
	if (log_signed(w->log_key, q->note, q->note_len, *blen) != 1) {
		snprintf(err, errlen, "refused: the checkpoint has no valid signature by the log key");
		return -EINVAL;
	}
	return consistent(q, w, *size, root, err, errlen);
}

int fctl_audit_witness_cosign(const struct fctl_audit_witness_req *q, struct fctl_buf *out,
			      char *err, size_t errlen)
{
	struct fctl_buf m = { 0 };
	struct wstate w;
	uint8_t root[32], sig[64], pub[32], blob[76];
	uint64_t size, ts = (uint64_t)time(NULL);
	size_t blen, end;
	int r;

	if (!q->name || !*q->name || strchr(q->name, ' ') || strchr(q->name, '+') ||
	    strchr(q->name, '\n')) {
		snprintf(err, errlen, "the witness name must be one word without '+'");
		return -EINVAL;
	}
	r = witness_check(q, &w, &size, root, &blen, err, errlen);
	if (r < 0)
		return r;
	r = cosig_message(ts, q->note, blen, &m);
	if (r == 0)
		r = fctl_audit_ed25519_sign(q->key_path, m.data, m.len, sig, pub, err, errlen);
	fctl_buf_release(&m);
	if (r < 0)
		return r;
	fctl_audit_cosig_keyid(q->name, pub, blob);
	fctl_put_be(blob + 4, ts, 8);
	memcpy(blob + 12, sig, 64);
	/* the note as it came (its signature lines, without the blank line ending it) */
	end = q->note_len;
	while (end > blen + 1 && q->note[end - 1] == '\n')
		end--;
	fctl_buf_append(out, q->note, end);
	fctl_buf_printf(out, "\n%s%s ", em_dash, q->name);
	fctl_audit_b64_encode(blob, sizeof(blob), out);
	fctl_buf_puts(out, "\n\n");
	if (out->oom)
		return -ENOMEM;
	w.size = size;
	memcpy(w.root, root, 32);
	return state_write(q->state_path, &w, err, errlen);
}
