// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "fctl/keys.h"

static void compute_kcv(struct fctl_key *k)
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

static struct fctl_key *key_alloc(void)
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

static int fetch_file(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		      struct fctl_key **out, char *err, size_t errlen)
{
	char path[4096], buf[130];
	struct fctl_key *k = NULL;
	struct stat st;
	size_t n = 0;
	ssize_t got;
	int fd, r = 0;

	if (ref->id[0] == '/' || !base_dir)
		snprintf(path, sizeof(path), "%s", ref->id);
	else
		snprintf(path, sizeof(path), "%s/%s", base_dir, ref->id);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "key file '%s': %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "key file '%s' is not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "key file '%s' is accessible by group or others (mode %04o); "
			 "refusing it, expected 0600", path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
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
	k = key_alloc();
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
	compute_kcv(k);
	*out = k;
	k = NULL;
out:
	fctl_memzero(buf, sizeof(buf));
	fctl_key_free(k);
	return r;
}

int fctl_key_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		   struct fctl_key **out, char *err, size_t errlen)
{
	if (!ref || !ref->backend || !ref->id) {
		snprintf(err, errlen, "no key reference");
		return -EINVAL;
	}
	if (want_len != 16 && want_len != 32) {
		snprintf(err, errlen, "unsupported key length %zu", want_len);
		return -EINVAL;
	}
	if (strcmp(ref->backend, "file") == 0)
		return fetch_file(ref, base_dir, want_len, out, err, errlen);
	snprintf(err, errlen, "key backend '%s' is not available in this build", ref->backend);
	return -EOPNOTSUPP;
}
