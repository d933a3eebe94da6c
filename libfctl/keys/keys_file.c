// SPDX-License-Identifier: MIT
/* The file backend (a local file of hex digits, mode 0600) and the secret files the
 * KMS backends read: both are owner-only regular files, opened without following links. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys_int.h"

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
	const char *why;
	size_t n = 0;
	ssize_t got;
	int fd, r = 0;

	/* the id comes from a profile, perhaps someone else's: it stays below the base */
	if (fctl_path_below_check(ref->id, &why) < 0) {
		snprintf(err, errlen, "key id '%.256s' %s; a file key id must be a relative path "
			 "below the profile's directory", ref->id ? ref->id : "", why);
		return -EINVAL;
	}
	if (!base_dir)
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
		snprintf(err, errlen, "key file '%s' is not a valid %zu-byte hex key (%zu hex "
			 "digits)", path, want_len, want_len * 2);
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
			snprintf(err, errlen, "key file '%s' is not a valid %zu-byte hex key (%zu "
				 "hex digits)", path, want_len, want_len * 2);
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

static int file_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		      struct fctl_key **out, struct fctl_key_info *info, char *err, size_t errlen)
{
	int r = fetch_file(ref, base_dir, want_len, out, err, errlen);

	if (r < 0)
		return r;
	/* a file key has no states or dates: always active */
	memset(info, 0, sizeof(*info));
	info->state = FCTL_KEY_ACTIVE;
	info->version = ref->version;
	info->len = (*out)->len;
	return 0;
}

static int file_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		       bool activate, struct fctl_key_info *out, char *err, size_t errlen)
{
	snprintf(err, errlen, "the file backend does not create keys (write the file)");
	return -EOPNOTSUPP;
}

static int file_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			   size_t errlen)
{
	snprintf(err, errlen, "the file backend keeps no key states");
	return -EOPNOTSUPP;
}

const struct fctl_key_backend fctl_keys_file_backend = {
	.name = "file",
	.needs_version = false,
	.fetch = file_fetch,
	.info = info_file,
	.create = file_create,
	.transition = file_transition,
};
