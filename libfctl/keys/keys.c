// SPDX-License-Identifier: MIT
/* Key check values, key metadata, and the backend registry that
 * fctl_key_fetch() and friends dispatch through (fctl/key_backend.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

void fctl_key_kcv_hex(const struct fctl_key *k, char out[7])
{
	fctl_format_hex(k->kcv, 3, out);
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

/* --- the registry and the dispatch --- */

#define MAX_BACKENDS 8

/* the file backend is always there; the KMS backends come when a program registers them */
static const struct fctl_key_backend *backends[MAX_BACKENDS] = { &fctl_keys_file_backend };
static size_t n_backends = 1;

int fctl_key_backend_register(const struct fctl_key_backend *b)
{
	const struct fctl_key_backend *have;

	if (!b || !b->name || !b->fetch || !b->info)
		return -EINVAL;
	have = fctl_key_backend_find(b->name);
	if (have)
		return have == b ? 0 : -EEXIST;
	if (n_backends >= MAX_BACKENDS)
		return -ENOSPC;
	backends[n_backends++] = b;
	return 0;
}

const struct fctl_key_backend *fctl_key_backend_find(const char *name)
{
	for (size_t i = 0; name && i < n_backends; i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

static const struct fctl_key_backend *pick_backend(const struct fctl_keyref *ref, char *err,
						   size_t errlen)
{
	const struct fctl_key_backend *b;

	if (!ref || !ref->backend || !ref->id) {
		snprintf(err, errlen, "no key reference");
		return NULL;
	}
	b = fctl_key_backend_find(ref->backend);
	if (!b) {
		snprintf(err, errlen, "key backend '%s' is not available in this build", ref->backend);
		return NULL;
	}
	return b;
}

/* The backend of ref, or NULL with *r set: no reference, no such backend, or a backend
 * that needs a version and a reference without one (fails closed before any KMS). */
static const struct fctl_key_backend *backend_of(const struct fctl_keyref *ref, int *r, char *err,
						 size_t errlen)
{
	const struct fctl_key_backend *b = pick_backend(ref, err, errlen);

	if (!b) {
		*r = ref && ref->backend && ref->id ? -EOPNOTSUPP : -EINVAL;
		return NULL;
	}
	if (b->needs_version && ref->version == 0) {
		snprintf(err, errlen, "key '%s' of backend '%s' names no version; a %s key needs an "
			 "explicit version (>= 1)", ref->id, ref->backend, ref->backend);
		*r = -ENOKEY;
		return NULL;
	}
	*r = 0;
	return b;
}

int fctl_key_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		   struct fctl_key **out, char *err, size_t errlen)
{
	struct fctl_key_info info;
	struct fctl_key *k = NULL;
	const struct fctl_key_backend *b;
	int r;

	b = backend_of(ref, &r, err, errlen);
	if (!b)
		return r;
	if (want_len != 16 && want_len != 32) {
		snprintf(err, errlen, "unsupported key length %zu", want_len);
		return -EINVAL;
	}
	r = b->fetch(ref, base_dir, want_len, &k, &info, err, errlen);
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
	int r;
	const struct fctl_key_backend *b = backend_of(ref, &r, err, errlen);

	if (!b)
		return r;
	return b->info(ref, base_dir, out, err, errlen);
}

int fctl_key_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		    bool activate, struct fctl_key_info *out, char *err, size_t errlen)
{
	struct fctl_key_info tmp;
	int r;
	const struct fctl_key_backend *b = backend_of(ref, &r, err, errlen);

	if (!b)
		return r;
	if (len != 16 && len != 32) {
		snprintf(err, errlen, "unsupported key length %zu", len);
		return -EINVAL;
	}
	if (!b->create) {
		snprintf(err, errlen, "key backend '%s' does not create keys", b->name);
		return -EOPNOTSUPP;
	}
	r = b->create(ref, len, plan, activate, &tmp, err, errlen);
	if (r >= 0 && out)
		*out = tmp;
	return r;
}

int fctl_key_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			size_t errlen)
{
	int r;
	const struct fctl_key_backend *b = backend_of(ref, &r, err, errlen);

	if (!b)
		return r;
	if (!b->transition) {
		snprintf(err, errlen, "key backend '%s' keeps no key states", b->name);
		return -EOPNOTSUPP;
	}
	return b->transition(ref, t, err, errlen);
}
