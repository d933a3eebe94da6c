// SPDX-License-Identifier: MIT
/* Audit checkpoints: Ed25519 keys, C2SP signed-note text, base64. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "audit_int.h"
#include "fctl/audit.h"

static const char em_dash[] = "\xe2\x80\x94 "; /* "— " starts a signature line */

/* --- base64 --- */

int fctl_audit_b64_encode(const void *p, size_t n, struct fctl_buf *out)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *s = p;
	size_t i;

	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		char q[4] = { tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63], tab[v & 63] };

		fctl_buf_append(out, q, 4);
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)s[i] << 16;
		char q[4] = { tab[v >> 18], tab[(v >> 12) & 63], '=', '=' };

		fctl_buf_append(out, q, 4);
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
		char q[4] = { tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63], '=' };

		fctl_buf_append(out, q, 4);
	}
	return out->oom ? -ENOMEM : 0;
}

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int fctl_audit_b64_decode(const char *s, size_t len, uint8_t *out, size_t cap)
{
	size_t o = 0;

	if (len % 4)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 4) {
		int v[4], pad = 0;
		uint32_t w;

		for (int k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == len && k >= 2) {
				v[k] = 0;
				pad++;
			} else if (pad || (v[k] = b64val(s[i + k])) < 0) {
				return -EINVAL;
			}
		}
		w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		if (o + 3 - (size_t)pad > cap)
			return -ENOSPC;
		out[o++] = (uint8_t)(w >> 16);
		if (pad < 2)
			out[o++] = (uint8_t)(w >> 8);
		if (pad < 1)
			out[o++] = (uint8_t)w;
	}
	return (int)o;
}

/* --- Ed25519 --- */

static int load_private(const char *path, EVP_PKEY **out, char *err, size_t errlen)
{
	struct stat st;
	EVP_PKEY *k = NULL;
	FILE *f = fopen(path, "re");

	if (!f) {
		snprintf(err, errlen, "cannot open key '%s': %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fileno(f), &st) < 0 || (st.st_mode & 077)) {
		snprintf(err, errlen, "key '%s' is readable by group or others (mode %03o); chmod 600",
			 path, (unsigned int)(st.st_mode & 0777));
		fclose(f);
		return -EPERM;
	}
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (!k || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
		snprintf(err, errlen, "'%s' is not an Ed25519 private key (PEM)", path);
		EVP_PKEY_free(k);
		return -EINVAL;
	}
	*out = k;
	return 0;
}

int fctl_audit_ed25519_sign(const char *key_path, const void *msg, size_t len, uint8_t sig[64],
			    uint8_t pub[32], char *err, size_t errlen)
{
	EVP_PKEY *k = NULL;
	EVP_MD_CTX *ctx = NULL;
	size_t siglen = 64, publen = 32;
	uint8_t s[64], p[32];
	int r = load_private(key_path, &k, err, errlen);

	if (r < 0)
		return r;
	ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) != 1 ||
	    EVP_DigestSign(ctx, s, &siglen, msg, len) != 1 || siglen != 64 ||
	    EVP_PKEY_get_raw_public_key(k, p, &publen) != 1 || publen != 32) {
		snprintf(err, errlen, "signing with '%s' failed", key_path);
		r = -EIO;
		goto out;
	}
	memcpy(sig, s, 64);
	if (pub)
		memcpy(pub, p, 32);
out:
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	return r;
}

int fctl_audit_ed25519_pub(const char *path, uint8_t pub[32], char *err, size_t errlen)
{
	EVP_PKEY *k = NULL;
	size_t publen = 32;
	uint8_t p[32];
	FILE *f = fopen(path, "re");
	int r = 0;

	if (!f) {
		r = -errno;
		snprintf(err, errlen, "cannot open public key '%s': %s", path, strerror(errno));
		return r;
	}
	k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
	if (!k) {
		rewind(f);
		k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	}
	fclose(f);
	if (!k || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519 ||
	    EVP_PKEY_get_raw_public_key(k, p, &publen) != 1 || publen != 32) {
		snprintf(err, errlen, "'%s' is not an Ed25519 public key (PEM)", path);
		r = -EINVAL;
	} else {
		memcpy(pub, p, 32);
	}
	EVP_PKEY_free(k);
	return r;
}

int fctl_audit_ed25519_verify(const uint8_t pub[32], const void *msg, size_t len,
			      const uint8_t sig[64])
{
	EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, 32);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int r = -ENOMEM;

	if (k && ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1)
		r = EVP_DigestVerify(ctx, sig, 64, msg, len) == 1 ? 1 : 0;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	return r;
}

void fctl_audit_keyid_alg(const char *name, uint8_t alg, const uint8_t pub[32], uint8_t id[4])
{
	uint8_t h[32];
	unsigned int n = 32;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const uint8_t nl_alg[2] = { '\n', alg };

	if (!ctx || EVP_DigestInit_ex2(ctx, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, name, strlen(name)) != 1 ||
	    EVP_DigestUpdate(ctx, nl_alg, 2) != 1 || EVP_DigestUpdate(ctx, pub, 32) != 1 ||
	    EVP_DigestFinal_ex(ctx, h, &n) != 1)
		abort();
	EVP_MD_CTX_free(ctx);
	memcpy(id, h, 4);
}

void fctl_audit_note_keyid(const char *name, const uint8_t pub[32], uint8_t id[4])
{
	fctl_audit_keyid_alg(name, 0x01, pub, id); /* 0x01: Ed25519 */
}

int fctl_audit_keygen(const char *dir, char *err, size_t errlen)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	char *priv = NULL, *pub = NULL;
	FILE *f = NULL;
	int fd = -1, r = 0;

	if (!k) {
		snprintf(err, errlen, "cannot generate an Ed25519 key");
		return -EIO;
	}
	if (asprintf(&priv, "%s/audit.key", dir) < 0 || asprintf(&pub, "%s/audit.pub", dir) < 0) {
		r = -ENOMEM;
		goto out;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, errlen, "cannot create '%s': %s", dir, strerror(errno));
		goto out;
	}
	fd = open(priv, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		r = -errno;
		snprintf(err, errlen, "cannot create '%s': %s", priv, strerror(errno));
		goto out;
	}
	fd = -1;
	if (PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) != 1 || fflush(f) != 0 ||
	    fsync(fileno(f)) < 0) {
		r = -EIO;
		snprintf(err, errlen, "cannot write '%s'", priv);
		goto out;
	}
	fclose(f);
	fd = open(pub, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		r = -errno;
		f = NULL;
		snprintf(err, errlen, "cannot create '%s': %s", pub, strerror(errno));
		unlink(priv);
		goto out;
	}
	fd = -1;
	if (PEM_write_PUBKEY(f, k) != 1 || fflush(f) != 0 || fsync(fileno(f)) < 0) {
		r = -EIO;
		snprintf(err, errlen, "cannot write '%s'", pub);
	}
out:
	if (f)
		fclose(f);
	if (fd >= 0)
		close(fd);
	free(priv);
	free(pub);
	EVP_PKEY_free(k);
	return r;
}

/* --- notes --- */

int fctl_audit_checkpoint_sign(const char *key_path, const char *origin, uint64_t size,
			       const uint8_t root[32], struct fctl_buf *out, char *err,
			       size_t errlen)
{
	struct fctl_buf body = { 0 };
	uint8_t sig[64], pub[32], blob[68];
	int r;

	if (strchr(origin, '\n') || strchr(origin, ' ') || !*origin) {
		snprintf(err, errlen, "origin '%s' must be one word", origin);
		return -EINVAL;
	}
	fctl_buf_printf(&body, "%s\n%" PRIu64 "\n", origin, size);
	fctl_audit_b64_encode(root, 32, &body);
	fctl_buf_putc(&body, '\n');
	if (body.oom) {
		r = -ENOMEM;
		goto out;
	}
	r = fctl_audit_ed25519_sign(key_path, body.data, body.len, sig, pub, err, errlen);
	if (r < 0)
		goto out;
	fctl_audit_note_keyid(origin, pub, blob);
	memcpy(blob + 4, sig, 64);
	fctl_buf_append(out, body.data, body.len);
	fctl_buf_printf(out, "\n%s%s ", em_dash, origin);
	fctl_audit_b64_encode(blob, sizeof(blob), out);
	fctl_buf_putc(out, '\n');
	r = out->oom ? -ENOMEM : 0;
out:
	fctl_buf_release(&body);
	return r;
}

struct lines {
	char *p;
	size_t len;
	size_t pos;
	uint64_t no;
};

static bool next_line(struct lines *l, const char **s, size_t *n)
{
	char *nl;

	if (l->pos >= l->len)
		return false;
	nl = memchr(l->p + l->pos, '\n', l->len - l->pos);
	*s = l->p + l->pos;
	*n = nl ? (size_t)(nl - *s) : l->len - l->pos;
	l->pos += *n + (nl ? 1 : 0);
	l->no++;
	return true;
}

static void parse_note(struct lines *l, const uint8_t *pub, struct fctl_audit_checkpoint *c)
{
	const char *s, *body = NULL;
	size_t n, body_len = 0;
	int field = 0;
	bool sigs = false, found = false;
	char num[32];

	c->sig = -2;
	while (next_line(l, &s, &n)) {
		if (!sigs) {
			if (!body)
				body = s;
			if (n == 0) { /* end of the body */
				body_len = (size_t)(s - body);
				sigs = true;
				continue;
			}
			if (field == 0) {
				snprintf(c->origin, sizeof(c->origin), "%.*s", (int)n, s);
			} else if (field == 1) {
				uint64_t v;

				snprintf(num, sizeof(num), "%.*s", (int)n, s);
				if (n >= sizeof(num) || fctl_parse_u64(num, &v) < 0 ||
				    (num[0] == '0' && num[1])) {
					snprintf(c->why, sizeof(c->why), "line %" PRIu64 ": bad size '%s'",
						 l->no, num);
					goto skip;
				}
				c->size = v;
			} else if (field == 2) {
				if (fctl_audit_b64_decode(s, n, c->root, 32) != 32) {
					snprintf(c->why, sizeof(c->why),
						 "line %" PRIu64 ": root hash is not base64 of 32 bytes",
						 l->no);
					goto skip;
				}
			}
			field++;
			continue;
		}
		if (n == 0)
			break; /* a blank line after the signatures ends the note */
		if (n < sizeof(em_dash) - 1 || memcmp(s, em_dash, sizeof(em_dash) - 1) != 0) {
			snprintf(c->why, sizeof(c->why), "line %" PRIu64 ": expected a signature line",
				 l->no);
			goto skip;
		}
		{
			const char *name = s + sizeof(em_dash) - 1, *sp;
			uint8_t blob[128], id[4];
			char nm[256];
			int bl;

			sp = memchr(name, ' ', n - (size_t)(name - s));
			if (!sp || (size_t)(sp - name) >= sizeof(nm)) {
				snprintf(c->why, sizeof(c->why), "line %" PRIu64 ": bad signature line",
					 l->no);
				goto skip;
			}
			snprintf(nm, sizeof(nm), "%.*s", (int)(sp - name), name);
			bl = fctl_audit_b64_decode(sp + 1, n - (size_t)(sp + 1 - s), blob, sizeof(blob));
			if (bl < 5) {
				snprintf(c->why, sizeof(c->why),
					 "line %" PRIu64 ": signature is not base64", l->no);
				goto skip;
			}
			if (!pub)
				continue;
			fctl_audit_note_keyid(nm, pub, id);
			if (memcmp(id, blob, 4) != 0)
				continue; /* another key's signature */
			found = true;
			if (bl != 68 || fctl_audit_ed25519_verify(pub, body, body_len, blob + 4) != 1) {
				c->sig = -1;
				snprintf(c->why, sizeof(c->why),
					 "line %" PRIu64 ": the signature by '%s' does not verify", l->no,
					 nm);
				/* keep reading: the note ends at the blank line */
				while (next_line(l, &s, &n) && n)
					;
				return;
			}
		}
	}
	if (field < 3 || !sigs) {
		snprintf(c->why, sizeof(c->why), "incomplete note (origin, size, root, blank line, "
						 "signatures expected)");
		c->sig = -2;
		return;
	}
	if (found) {
		c->sig = 1;
	} else {
		c->sig = 0;
		snprintf(c->why, sizeof(c->why), "no signature by the audit key");
	}
	return;
skip:
	c->sig = -2;
	while (next_line(l, &s, &n) && n)
		;
	if (sigs)
		return;
	/* a malformed body: skip its signature block too */
	while (next_line(l, &s, &n) && n)
		;
}

int fctl_audit_checkpoints_load(const char *path, const char *pubkey_path,
				struct fctl_audit_checkpoint **out, size_t *n, char *err,
				size_t errlen)
{
	struct fctl_buf b = { 0 };
	struct fctl_audit_checkpoint *v = NULL;
	size_t nv = 0, cap = 0;
	uint8_t pub[32];
	bool have_pub = false;
	struct lines l;
	int r;

	if (pubkey_path) {
		r = fctl_audit_ed25519_pub(pubkey_path, pub, err, errlen);
		if (r < 0)
			return r;
		have_pub = true;
	}
	r = fctl_file_read(path, &b);
	if (r < 0) {
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(-r));
		goto out;
	}
	l = (struct lines){ .p = b.data, .len = b.len };
	for (;;) {
		struct fctl_audit_checkpoint *c;

		/* skip blank lines between notes */
		while (l.pos < l.len && l.p[l.pos] == '\n') {
			l.pos++;
			l.no++;
		}
		if (l.pos >= l.len)
			break;
		c = fctl_array_grow(&v, &nv, &cap, sizeof(*v));
		if (!c) {
			r = -ENOMEM;
			goto out;
		}
		c->line = l.no + 1;
		parse_note(&l, have_pub ? pub : NULL, c);
	}
	*out = v;
	*n = nv;
	v = NULL;
out:
	free(v);
	fctl_buf_release(&b);
	return r;
}

int fctl_audit_latest_checkpoint(const char *checkpoint_path, struct fctl_buf *out,
				 uint64_t *size)
{
	struct fctl_buf b = { 0 };
	size_t start = 0, best = 0, best_len = 0;
	uint64_t best_size = 0;
	bool any = false;
	int r = fctl_file_read(checkpoint_path, &b);

	if (r < 0)
		goto out;
	/* notes are separated by an empty line after their signature lines */
	while (start < b.len) {
		size_t end;
		char *body_end = b.data ? strstr(b.data + start, "\n\n") : NULL;
		char *note_end;
		uint64_t sz;

		if (!body_end)
			break;
		note_end = strstr(body_end + 2, "\n\n");
		end = note_end ? (size_t)(note_end - b.data) + 1 : b.len;
		{
			const char *nl1 = memchr(b.data + start, '\n', end - start);

			if (nl1 && sscanf(nl1 + 1, "%" SCNu64, &sz) == 1 && (!any || sz >= best_size)) {
				best = start;
				best_len = end - start;
				best_size = sz;
				any = true;
			}
		}
		start = end;
		while (start < b.len && b.data[start] == '\n')
			start++;
	}
	if (!any) {
		r = -ENOENT;
		goto out;
	}
	fctl_buf_append(out, b.data + best, best_len);
	*size = best_size;
	r = out->oom ? -ENOMEM : 0;
out:
	fctl_buf_release(&b);
	return r;
}
