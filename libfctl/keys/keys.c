// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "keys_int.h"

void fctl_keys_kcv(struct fctl_key *k)
{
	static const uint8_t zero[16];
	uint8_t out[32];
	int n = 0;
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	const EVP_CIPHER *c = k->len == 32 ? EVP_aes_256_ecb() : EVP_aes_128_ecb();

	memset(k->kcv, 0, sizeof(k->kcv));
	if (ctx && EVP_EncryptInit_ex(ctx, c, NULL, k->bytes, NULL) == 1 &&
	    EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 &&
	    EVP_EncryptUpdate(ctx, out, &n, zero, sizeof(zero)) == 1 && n >= 3)
		memcpy(k->kcv, out, 3);
	EVP_CIPHER_CTX_free(ctx);
	fctl_memzero(out, sizeof(out));
}

struct fctl_key *fctl_keys_alloc(void)
{
	struct fctl_key *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	/* best effort: an unprivileged caller may have no memlock budget */
	(void)mlock(k, sizeof(*k));
	(void)madvise(k, sizeof(*k), MADV_DONTDUMP);
	return k;
}

void fctl_key_free(struct fctl_key *k)
{
	if (!k)
		return;
	fctl_memzero(k, sizeof(*k));
	munlock(k, sizeof(*k));
	free(k);
}

void fctl_key_kcv_hex(const struct fctl_key *k, char out[7])
{
	snprintf(out, 7, "%02x%02x%02x", k->kcv[0], k->kcv[1], k->kcv[2]);
}

/* Opens an owner-only regular file without blocking on a FIFO; what names it in errors. */
static int open_owner_only(const char *what, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s '%s': %s", what, path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s '%s' is not a regular file", what, path);
		close(fd);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "%s '%s' is accessible by group or others (mode %04o); "
			 "refusing it, expected 0600", what, path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int fetch_file(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		      struct fctl_key **out, char *err, size_t errlen)
{
	char path[4096], buf[130];
	struct fctl_key *k = NULL;
	size_t n = 0;
	ssize_t got;
	int fd, r = 0;

	if (ref->id[0] == '/' || !base_dir)
		snprintf(path, sizeof(path), "%s", ref->id);
	else
		snprintf(path, sizeof(path), "%s/%s", base_dir, ref->id);
	fd = open_owner_only("key file", path, err, errlen);
	if (fd < 0)
		return fd;
	while (n < sizeof(buf) && (got = read(fd, buf + n, sizeof(buf) - n)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		n += (size_t)got;
	}
	close(fd);
	if (r < 0) {
		snprintf(err, errlen, "key file '%s': %s", path, strerror(-r));
		goto out;
	}
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	if (n != want_len * 2) {
		snprintf(err, errlen, "key file '%s' holds %zu hex digits; the cipher needs %zu",
			 path, n, want_len * 2);
		r = -EINVAL;
		goto out;
	}
	k = fctl_keys_alloc();
	if (!k) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < want_len; i++) {
		int hi = fctl_hexval(buf[2 * i]), lo = fctl_hexval(buf[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			snprintf(err, errlen, "key file '%s' holds a non-hex character", path);
			r = -EINVAL;
			goto out;
		}
		k->bytes[i] = (uint8_t)(hi << 4 | lo);
	}
	k->len = want_len;
	fctl_keys_kcv(k);
	*out = k;
	k = NULL;
out:
	fctl_memzero(buf, sizeof(buf));
	fctl_key_free(k);
	return r;
}

/* --- shared helpers of the backends --- */

int fctl_keys_id_field(const char *id, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name);
	const char *p = id;

	while (p && *p) {
		const char *end = strchr(p, ';');
		size_t fl = end ? (size_t)(end - p) : strlen(p);

		if (fl > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
			size_t vl = fl - nl - 1;

			if (vl == 0 || vl >= outlen)
				return -EINVAL;
			memcpy(out, p + nl + 1, vl);
			out[vl] = '\0';
			return 0;
		}
		p = end ? end + 1 : NULL;
	}
	return -EINVAL;
}

bool fctl_keys_name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

int fctl_keys_check_secret_file(const char *path, char *err, size_t errlen)
{
	int fd = open_owner_only("secret file", path, err, errlen);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int fctl_keys_read_secret_file(const char *path, char *out, size_t outlen, char *err,
			       size_t errlen)
{
	size_t n = 0;
	ssize_t got;
	int fd, r = 0;

	fd = open_owner_only("secret file", path, err, errlen);
	if (fd < 0)
		return fd;
	while (n + 1 < outlen && (got = read(fd, out + n, outlen - 1 - n)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		n += (size_t)got;
	}
	close(fd);
	if (r < 0 || n + 1 >= outlen) {
		fctl_memzero(out, outlen);
		snprintf(err, errlen, "secret file '%s': %s", path,
			 r < 0 ? strerror(-r) : "too long");
		return r < 0 ? r : -EINVAL;
	}
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	out[n] = '\0';
	if (n == 0) {
		snprintf(err, errlen, "secret file '%s' is empty", path);
		return -EINVAL;
	}
	return 0;
}

static const char *const state_names[] = {
	[FCTL_KEY_STATE_UNKNOWN] = "unknown",
	[FCTL_KEY_PRE_ACTIVE] = "pre-active",
	[FCTL_KEY_ACTIVE] = "active",
	[FCTL_KEY_DEACTIVATED] = "deactivated",
	[FCTL_KEY_COMPROMISED] = "compromised",
	[FCTL_KEY_DESTROYED] = "destroyed",
	[FCTL_KEY_DESTROYED_COMPROMISED] = "destroyed-compromised",
};

static const char *const date_names[] = {
	[FCTL_KEY_DATE_INITIAL] = "initial",
	[FCTL_KEY_DATE_ACTIVATION] = "activation",
	[FCTL_KEY_DATE_PROCESS_START] = "process-start",
	[FCTL_KEY_DATE_PROTECT_STOP] = "protect-stop",
	[FCTL_KEY_DATE_DEACTIVATION] = "deactivation",
	[FCTL_KEY_DATE_COMPROMISE] = "compromise",
	[FCTL_KEY_DATE_DESTROY] = "destroy",
};

const char *fctl_key_state_name(enum fctl_key_state s)
{
	return (unsigned)s < FCTL_ARRAY_SIZE(state_names) ? state_names[s] : "unknown";
}

const char *fctl_key_date_name(enum fctl_key_date d)
{
	return (unsigned)d < FCTL_ARRAY_SIZE(date_names) ? date_names[d] : "?";
}

const char *fctl_key_transition_name(enum fctl_key_transition t)
{
	switch (t) {
	case FCTL_KEY_DO_ACTIVATE:
		return "activate";
	case FCTL_KEY_DO_DEACTIVATE:
		return "deactivate";
	case FCTL_KEY_DO_COMPROMISE:
		return "compromise";
	case FCTL_KEY_DO_DESTROY:
		return "destroy";
	}
	return "?";
}

void fctl_keys_info_format(const struct fctl_key_info *in, char *out, size_t outlen)
{
	size_t n = 0;

	n += (size_t)snprintf(out, outlen, "fabricctl-key 1 state=%s", fctl_key_state_name(in->state));
	for (unsigned d = 0; d < FCTL_KEY_DATE_COUNT && n < outlen; d++)
		if (in->dates_set & (1u << d))
			n += (size_t)snprintf(out + n, outlen - n, " %s=%lld", date_names[d],
					      (long long)in->dates[d]);
}

int fctl_keys_info_parse(const char *s, size_t len, struct fctl_key_info *info)
{
	char buf[512], *save = NULL, *tok;
	struct fctl_key_info tmp = { 0 };
	bool have_state = false;

	if (len >= sizeof(buf))
		return -EBADMSG;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (strncmp(buf, "fabricctl-key 1 ", 16) != 0)
		return -EBADMSG;
	for (tok = strtok_r(buf + 16, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		bool known = false;

		if (!eq)
			return -EBADMSG;
		*eq++ = '\0';
		if (strcmp(tok, "state") == 0) {
			for (unsigned i = 1; i < FCTL_ARRAY_SIZE(state_names); i++)
				if (strcmp(eq, state_names[i]) == 0) {
					tmp.state = (enum fctl_key_state)i;
					known = have_state = true;
				}
		} else {
			for (unsigned d = 0; d < FCTL_KEY_DATE_COUNT; d++) {
				uint64_t v;

				if (strcmp(tok, date_names[d]) != 0)
					continue;
				if (fctl_parse_u64(eq, &v) < 0 || v > INT64_MAX)
					return -EBADMSG;
				tmp.dates[d] = (int64_t)v;
				tmp.dates_set |= 1u << d;
				known = true;
			}
		}
		if (!known)
			return -EBADMSG;
	}
	if (!have_state)
		return -EBADMSG;
	info->state = tmp.state;
	info->dates_set = tmp.dates_set;
	memcpy(info->dates, tmp.dates, sizeof(tmp.dates));
	return 0;
}

int fctl_key_check_usable(const struct fctl_key_info *info, int64_t now, char *err, size_t errlen)
{
	static const struct {
		enum fctl_key_date d;
		bool before; /* refused when now < date (else when now >= date) */
		const char *what;
	} lim[] = {
		{ FCTL_KEY_DATE_ACTIVATION, true, "its activation date is still to come" },
		{ FCTL_KEY_DATE_PROTECT_STOP, false, "its protect stop date has passed" },
		{ FCTL_KEY_DATE_DEACTIVATION, false, "its deactivation date has passed" },
	};

	if (info->state != FCTL_KEY_ACTIVE) {
		snprintf(err, errlen, "key version %u is %s, not active: refused for a new SA",
			 info->version, fctl_key_state_name(info->state));
		return -EKEYREJECTED;
	}
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(lim); i++) {
		int64_t at = info->dates[lim[i].d];

		if (!(info->dates_set & (1u << lim[i].d)))
			continue;
		if (lim[i].before ? now < at : now >= at) {
			snprintf(err, errlen, "key version %u is active but %s (%s %lld, now %lld): "
				 "refused for a new SA", info->version, lim[i].what,
				 date_names[lim[i].d], (long long)at, (long long)now);
			return -EKEYREJECTED;
		}
	}
	return 0;
}

/* --- the file backend's metadata: always active, no dates --- */

static int info_file(const struct fctl_keyref *ref, const char *base_dir, struct fctl_key_info *out,
		     char *err, size_t errlen)
{
	struct fctl_key *k = NULL;
	int r = fetch_file(ref, base_dir, 32, &k, err, errlen);

	if (r == -EINVAL)
		r = fetch_file(ref, base_dir, 16, &k, err, errlen);
	if (r < 0)
		return r;
	memset(out, 0, sizeof(*out));
	out->state = FCTL_KEY_ACTIVE;
	out->version = ref->version;
	out->len = k->len;
	out->has_kcv = true;
	memcpy(out->kcv, k->kcv, sizeof(out->kcv));
	snprintf(out->object, sizeof(out->object), "%s", ref->id);
	fctl_key_free(k);
	return 0;
}

/* --- dispatch --- */

enum backend { B_FILE, B_PKCS11, B_KMIP };

static int pick_backend(const struct fctl_keyref *ref, enum backend *b, char *err, size_t errlen)
{
	if (!ref || !ref->backend || !ref->id) {
		snprintf(err, errlen, "no key reference");
		return -EINVAL;
	}
	if (strcmp(ref->backend, "file") == 0) {
		*b = B_FILE;
		return 0;
	}
	if (strcmp(ref->backend, "pkcs11") == 0)
		*b = B_PKCS11;
	else if (strcmp(ref->backend, "kmip") == 0)
		*b = B_KMIP;
	else {
		snprintf(err, errlen, "key backend '%s' is not available in this build", ref->backend);
		return -EOPNOTSUPP;
	}
	if (ref->version == 0) {
		snprintf(err, errlen, "key '%s' of backend '%s' names no version; a %s key needs an "
			 "explicit version (>= 1)", ref->id, ref->backend, ref->backend);
		return -ENOKEY;
	}
	return 0;
}

int fctl_key_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		   struct fctl_key **out, char *err, size_t errlen)
{
	struct fctl_key_info info;
	struct fctl_key *k = NULL;
	enum backend b;
	int r;

	r = pick_backend(ref, &b, err, errlen);
	if (r < 0)
		return r;
	if (want_len != 16 && want_len != 32) {
		snprintf(err, errlen, "unsupported key length %zu", want_len);
		return -EINVAL;
	}
	switch (b) {
	case B_FILE:
		return fetch_file(ref, base_dir, want_len, out, err, errlen);
	case B_PKCS11:
		r = fctl_pkcs11_fetch(ref, want_len, &k, &info, err, errlen);
		break;
	case B_KMIP:
		r = fctl_kmip_fetch(ref, want_len, &k, &info, err, errlen);
		break;
	}
	if (r < 0)
		return r;
	/* the backends checked already; a second look costs nothing and fails closed */
	if (k->len != want_len) {
		snprintf(err, errlen, "key is %zu bytes; the cipher needs %zu", k->len, want_len);
		fctl_key_free(k);
		return -EINVAL;
	}
	r = fctl_key_check_usable(&info, (int64_t)time(NULL), err, errlen);
	if (r < 0) {
		fctl_key_free(k);
		return r;
	}
	*out = k;
	return 0;
}

int fctl_key_info(const struct fctl_keyref *ref, const char *base_dir, struct fctl_key_info *out,
		  char *err, size_t errlen)
{
	enum backend b;
	int r = pick_backend(ref, &b, err, errlen);

	if (r < 0)
		return r;
	switch (b) {
	case B_FILE:
		return info_file(ref, base_dir, out, err, errlen);
	case B_PKCS11:
		return fctl_pkcs11_info(ref, out, err, errlen);
	case B_KMIP:
		return fctl_kmip_info(ref, out, err, errlen);
	}
	return -EINVAL;
}

int fctl_key_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		    bool activate, struct fctl_key_info *out, char *err, size_t errlen)
{
	struct fctl_key_info tmp;
	enum backend b;
	int r = pick_backend(ref, &b, err, errlen);

	if (r < 0)
		return r;
	if (len != 16 && len != 32) {
		snprintf(err, errlen, "unsupported key length %zu", len);
		return -EINVAL;
	}
	switch (b) {
	case B_FILE:
		snprintf(err, errlen, "the file backend does not create keys (write the file)");
		return -EOPNOTSUPP;
	case B_PKCS11:
		r = fctl_pkcs11_create(ref, len, plan, activate, &tmp, err, errlen);
		break;
	case B_KMIP:
		r = fctl_kmip_create(ref, len, plan, activate, &tmp, err, errlen);
		break;
	}
	if (r >= 0 && out)
		*out = tmp;
	return r;
}

int fctl_key_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			size_t errlen)
{
	enum backend b;
	int r = pick_backend(ref, &b, err, errlen);

	if (r < 0)
		return r;
	switch (b) {
	case B_FILE:
		snprintf(err, errlen, "the file backend keeps no key states");
		return -EOPNOTSUPP;
	case B_PKCS11:
		return fctl_pkcs11_transition(ref, t, err, errlen);
	case B_KMIP:
		return fctl_kmip_transition(ref, t, err, errlen);
	}
	return -EINVAL;
}
