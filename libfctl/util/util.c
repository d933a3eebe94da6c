// SPDX-License-Identifier: MIT
/* Dependency-free utilities: buffers, escaping, parsing, byte order and whole-file I/O. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fctl/util.h"

void fctl_buf_release(struct fctl_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}

void fctl_buf_reset(struct fctl_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static int buf_reserve(struct fctl_buf *b, size_t extra)
{
	size_t need, ncap;
	char *p;

	if (b->oom)
		return -ENOMEM;
	if (extra > SIZE_MAX - b->len - 1)
		goto oom;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 64;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	p = realloc(b->data, ncap);
	if (!p)
		goto oom;
	b->data = p;
	b->cap = ncap;
	return 0;
oom:
	b->oom = true;
	return -ENOMEM;
}

int fctl_buf_append(struct fctl_buf *b, const void *p, size_t n)
{
	int r = buf_reserve(b, n);

	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int fctl_buf_puts(struct fctl_buf *b, const char *s)
{
	return fctl_buf_append(b, s, strlen(s));
}

int fctl_buf_putc(struct fctl_buf *b, char c)
{
	return fctl_buf_append(b, &c, 1);
}

static const char hex_digit[] = "0123456789abcdef";

int fctl_buf_put_hex(struct fctl_buf *b, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char two[2] = { hex_digit[p[i] >> 4], hex_digit[p[i] & 0xf] };

		if (fctl_buf_append(b, two, sizeof(two)) < 0)
			return -ENOMEM;
	}
	return 0;
}

int fctl_buf_vprintf(struct fctl_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n, r;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return -EINVAL;
	r = buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int fctl_buf_printf(struct fctl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = fctl_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

char *fctl_buf_steal(struct fctl_buf *b)
{
	char *p = b->data;

	if (!p)
		p = calloc(1, 1);
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

int fctl_buf_json_str(struct fctl_buf *b, const char *s)
{
	const unsigned char *p;
	int r = 0;

	if (!s)
		return fctl_buf_puts(b, "null");
	r |= fctl_buf_putc(b, '"');
	for (p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			r |= fctl_buf_puts(b, "\\\"");
			break;
		case '\\':
			r |= fctl_buf_puts(b, "\\\\");
			break;
		case '\n':
			r |= fctl_buf_puts(b, "\\n");
			break;
		case '\t':
			r |= fctl_buf_puts(b, "\\t");
			break;
		case '\r':
			r |= fctl_buf_puts(b, "\\r");
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				r |= fctl_buf_printf(b, "\\u%04x", *p);
			else
				r |= fctl_buf_putc(b, (char)*p);
		}
	}
	r |= fctl_buf_putc(b, '"');
	return r < 0 ? -ENOMEM : 0;
}

int fctl_buf_xml_str(struct fctl_buf *b, const char *s)
{
	int r = 0;

	for (; s && *s; s++) {
		switch (*s) {
		case '&':
			r |= fctl_buf_puts(b, "&amp;");
			break;
		case '<':
			r |= fctl_buf_puts(b, "&lt;");
			break;
		case '>':
			r |= fctl_buf_puts(b, "&gt;");
			break;
		case '"':
			r |= fctl_buf_puts(b, "&quot;");
			break;
		case '\'':
			r |= fctl_buf_puts(b, "&apos;");
			break;
		default:
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				r |= fctl_buf_putc(b, '?');
			else
				r |= fctl_buf_putc(b, *s);
		}
	}
	return r < 0 ? -ENOMEM : 0;
}

void fctl_memzero(void *p, size_t n)
{
	if (p && n)
		explicit_bzero(p, n);
}

bool fctl_memeq_ct(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

int fctl_parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int base = 10;

	if (!s || !*s || !(isdigit((unsigned char)s[0])))
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		if (!isxdigit((unsigned char)s[2]))
			return -EINVAL;
	}
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int fctl_parse_duration(const char *s, uint64_t *seconds)
{
	uint64_t total = 0;
	bool any = false;

	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		uint64_t v = 0, mul;

		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		while (isdigit((unsigned char)*s)) {
			uint64_t digit = (uint64_t)(*s++ - '0');

			if (v > (UINT64_MAX - digit) / 10)
				return -ERANGE;
			v = v * 10 + digit;
		}
		switch (*s) {
		case '\0':
			if (any)
				return -EINVAL; /* "1h30" is ambiguous */
			mul = 1;
			break;
		case 's':
			mul = 1;
			s++;
			break;
		case 'm':
			mul = 60;
			s++;
			break;
		case 'h':
			mul = 3600;
			s++;
			break;
		case 'd':
			mul = 86400;
			s++;
			break;
		case 'w':
			mul = 7 * 86400;
			s++;
			break;
		default:
			return -EINVAL;
		}
		if (v > UINT64_MAX / mul || total > UINT64_MAX - v * mul)
			return -ERANGE;
		total += v * mul;
		any = true;
	}
	*seconds = total;
	return 0;
}

int fctl_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int fctl_parse_mac(const char *s, uint8_t mac[6])
{
	uint8_t m[6];

	if (!s || strlen(s) != 17)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		int hi = fctl_hexval(s[i * 3]), lo = fctl_hexval(s[i * 3 + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[i * 3 + 2] != ':'))
			return -EINVAL;
		m[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(mac, m, 6);
	return 0;
}

int fctl_format_mac(const uint8_t mac[6], char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
		 mac[5]);
	return 0;
}

bool fctl_kv_word(const char *line, const char *key, char *out, size_t len)
{
	size_t k = strlen(key);

	if (!k)
		return false;
	for (const char *p = line; (p = strstr(p, key)); p++) {
		if ((p == line || p[-1] == ' ') && p[k] == '=') {
			size_t n = strcspn(p + k + 1, " \n");

			if (n >= len)
				return false;
			memcpy(out, p + k + 1, n);
			out[n] = '\0';
			return true;
		}
	}
	return false;
}

int fctl_parse_hex(const char *s, uint8_t *out, size_t len)
{
	size_t n = s ? strlen(s) : 0;

	if (n != len * 2)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		int hi = fctl_hexval(s[2 * i]), lo = fctl_hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
	}
	for (size_t i = 0; i < len; i++)
		out[i] = (uint8_t)(fctl_hexval(s[2 * i]) << 4 | fctl_hexval(s[2 * i + 1]));
	return 0;
}

void fctl_format_hex(const uint8_t *p, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hex_digit[p[i] >> 4];
		out[2 * i + 1] = hex_digit[p[i] & 0xf];
	}
	out[2 * len] = 0;
}

size_t fctl_edit_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[65];

	if (la > 64 || lb > 64)
		return cap + 1;
	if ((la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j];
			size_t sub = prev + (a[i - 1] != b[j - 1]);
			size_t best = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;

			row[j] = sub < best ? sub : best;
			prev = cur;
		}
	}
	return row[lb] > cap ? cap + 1 : row[lb];
}

const char *fctl_did_you_mean(const char *word, const char *const *candidates, size_t n)
{
	const char *best = NULL;
	size_t best_d = 3, wl = strlen(word);

	for (size_t i = 0; i < n; i++) {
		size_t d = fctl_edit_distance(word, candidates[i], 2);

		if (d < best_d) {
			best = candidates[i];
			best_d = d;
		}
	}
	if (!best && wl >= 3) {
		for (size_t i = 0; i < n; i++)
			if (strncmp(candidates[i], word, wl) == 0)
				return candidates[i];
	}
	return best;
}

char *fctl_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

void *fctl_calloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size ? size : 1);
}

void *fctl_array_grow(void *arr_ptr, size_t *n, size_t *cap, size_t size)
{
	char **arr = arr_ptr;

	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 4;
		char *p;

		if (ncap > SIZE_MAX / size)
			return NULL;
		p = realloc(*arr, ncap * size);
		if (!p)
			return NULL;
		*arr = p;
		*cap = ncap;
	}
	memset(*arr + *n * size, 0, size);
	return *arr + (*n)++ * size;
}

void fctl_set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

void fctl_put_be(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

uint64_t fctl_get_be(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* --- files --- */

int fctl_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int fctl_file_read(const char *path, struct fctl_buf *b)
{
	char chunk[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			close(fd);
			return r;
		}
		fctl_buf_append(b, chunk, (size_t)n);
	}
	close(fd);
	return b->oom ? -ENOMEM : 0;
}

int fctl_fsync_parent(const char *path)
{
	char *dir = fctl_strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
	int fd, r = 0;

	if (!dir)
		return -ENOMEM;
	if (slash)
		*slash = '\0';
	fd = open(slash ? (*dir ? dir : "/") : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	free(dir);
	return r;
}

int fctl_file_replace(const char *path, const char *tmp, const void *data, size_t len,
		      mode_t mode, unsigned int flags)
{
	char *own = NULL;
	int fd, r;

	if (!tmp) {
		if (asprintf(&own, "%s.tmp.%d", path, (int)getpid()) < 0)
			return -ENOMEM;
		tmp = own;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = fctl_write_all(fd, data, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	else if (flags & FCTL_FILE_SYNC_DIR)
		fctl_fsync_parent(path); /* the rename is durable; a failure here loses nothing */
out:
	free(own);
	return r;
}

int fctl_mkdir_parents(const char *path, mode_t mode)
{
	char *p = fctl_strdup(path);
	int r = 0;

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		*s = '/';
	}
	free(p);
	return r;
}

int fctl_mkdir_all(const char *path, mode_t mode)
{
	int r = fctl_mkdir_parents(path, mode);

	if (r < 0)
		return r;
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int fctl_lockfile_take(const char *path, unsigned int flags, long *holder)
{
	char pid[32] = "";
	ssize_t n;
	int fd, r;

	if (holder)
		*holder = 0;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (r == -EBUSY && holder) {
			n = pread(fd, pid, sizeof(pid) - 1, 0);
			pid[n > 0 ? n : 0] = '\0';
			*holder = strtol(pid, NULL, 10);
		}
		close(fd);
		return r;
	}
	if (flags & FCTL_LOCK_WRITE_PID) {
		n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
		if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
			r = -errno;
			close(fd);
			return r ? r : -EIO;
		}
	}
	return fd;
}

int fctl_path_below_check(const char *id, const char **why)
{
	const char *c;

	if (!id || !*id) {
		*why = "is empty";
		return -EINVAL;
	}
	if (id[0] == '/') {
		*why = "is an absolute path";
		return -EINVAL;
	}
	for (c = id; c; c = strchr(c, '/') ? strchr(c, '/') + 1 : NULL) {
		/* c starts a component */
		if (c[0] == '.' && c[1] == '.' && (c[2] == '/' || c[2] == '\0')) {
			*why = "has a '..' component";
			return -EINVAL;
		}
	}
	return 0;
}
