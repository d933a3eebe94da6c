// SPDX-License-Identifier: MIT
/* Audit log: listing and reading the files, record fields, times. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit_int.h"
#include "fctl/audit.h"

/* --- files --- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int fctl_audit_files(const char *log_path, char ***files, size_t *n)
{
	char *dir = fctl_strdup(log_path), *slash, **v = NULL;
	const char *base;
	size_t nv = 0, cap = 0, blen;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		base = slash + 1;
	} else {
		base = dir;
	}
	blen = strlen(base);
	d = opendir(slash ? (*dir ? dir : "/") : ".");
	if (!d) {
		r = errno == ENOENT ? 0 : -errno;
		goto done;
	}
	/* rotated files: BASE.NNNNNN (six or more digits), sorted by name = by number */
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		char **slot;
		size_t k;

		if (strncmp(s, base, blen) != 0 || s[blen] != '.')
			continue;
		for (k = blen + 1; s[k] >= '0' && s[k] <= '9'; k++)
			;
		if (s[k] || k - blen - 1 != 6)
			continue;
		slot = fctl_array_grow(&v, &nv, &cap, sizeof(*v));
		if (!slot || asprintf(slot, "%s%s%s", slash ? dir : "", slash ? "/" : "", s) < 0) {
			if (slot)
				*slot = NULL;
			r = -ENOMEM;
			break;
		}
	}
	closedir(d);
	if (r < 0)
		goto done;
	if (nv > 1)
		qsort(v, nv, sizeof(*v), cmp_str);
done:
	if (r == 0) {
		char **slot = fctl_array_grow(&v, &nv, &cap, sizeof(*v));

		if (!slot || !(*slot = fctl_strdup(log_path)))
			r = -ENOMEM;
	}
	free(dir);
	if (r < 0) {
		fctl_audit_files_free(v, nv);
		return r;
	}
	*files = v;
	*n = nv;
	return 0;
}

void fctl_audit_files_free(char **files, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
}

int fctl_audit_map(const char *path, struct fctl_audit_map *m)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	m->p = NULL;
	m->base = NULL;
	m->len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	if (st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED) {
			close(fd);
			return -errno;
		}
		madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
		m->p = p;
		m->base = p;
		m->len = (size_t)st.st_size;
	}
	close(fd);
	return 0;
}

void fctl_audit_unmap(struct fctl_audit_map *m)
{
	if (m->base)
		munmap(m->base, m->len);
}

int fctl_audit_read(const char *log_path, int (*fn)(void *ctx, const char *line, size_t len),
		    void *ctx)
{
	char **files = NULL;
	size_t n = 0;
	int r = fctl_audit_files(log_path, &files, &n);

	for (size_t i = 0; r >= 0 && i < n; i++) {
		struct fctl_audit_map m;
		size_t pos = 0;

		r = fctl_audit_map(files[i], &m);
		if (r == -ENOENT && i + 1 == n) {
			r = 0;
			break;
		}
		while (r >= 0 && pos < m.len) {
			const char *nl = memchr(m.p + pos, '\n', m.len - pos);
			size_t len;
			uint64_t seq;
			uint8_t prev[32];

			if (!nl)
				break; /* torn: not a record */
			len = (size_t)(nl - (m.p + pos));
			if (fctl_audit_parse_head(m.p + pos, len, &seq, prev) == 0)
				r = fn(ctx, m.p + pos, len);
			pos += len + 1;
		}
		fctl_audit_unmap(&m);
	}
	fctl_audit_files_free(files, n);
	return r;
}

/* --- fields --- */

static size_t skip_ws(const char *s, size_t i, size_t n)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	return i;
}

/* index just past the JSON string starting at s[i] == '"', or 0 */
static size_t skip_string(const char *s, size_t i, size_t n)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

static size_t skip_value(const char *s, size_t i, size_t n)
{
	int depth = 0;

	i = skip_ws(s, i, n);
	if (i >= n)
		return 0;
	if (s[i] == '"')
		return skip_string(s, i, n);
	if (s[i] != '{' && s[i] != '[') {
		while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']')
			i++;
		return i;
	}
	for (; i < n; i++) {
		if (s[i] == '"') {
			i = skip_string(s, i, n);
			if (!i)
				return 0;
			i--;
		} else if (s[i] == '{' || s[i] == '[') {
			depth++;
		} else if (s[i] == '}' || s[i] == ']') {
			if (--depth == 0)
				return i + 1;
		}
	}
	return 0;
}

int fctl_audit_field_raw(const char *line, size_t len, const char *key, const char **v,
			 size_t *vlen)
{
	size_t klen = strlen(key), i = skip_ws(line, 0, len);

	if (i >= len || line[i] != '{')
		return -EINVAL;
	i++;
	for (;;) {
		size_t ks, ke, vs, ve;

		i = skip_ws(line, i, len);
		if (i >= len || line[i] != '"')
			return -ENOENT;
		ks = i + 1;
		ke = skip_string(line, i, len);
		if (!ke)
			return -EINVAL;
		i = skip_ws(line, ke, len);
		if (i >= len || line[i] != ':')
			return -EINVAL;
		vs = skip_ws(line, i + 1, len);
		ve = skip_value(line, vs, len);
		if (!ve)
			return -EINVAL;
		if (ke - 1 - ks == klen && memcmp(line + ks, key, klen) == 0) {
			*v = line + vs;
			*vlen = ve - vs;
			return 0;
		}
		i = skip_ws(line, ve, len);
		if (i >= len || line[i] != ',')
			return -ENOENT;
		i++;
	}
}

static void put_utf8(struct fctl_buf *b, unsigned long c)
{
	char u[4];

	if (c < 0x80) {
		fctl_buf_putc(b, (char)c);
	} else if (c < 0x800) {
		u[0] = (char)(0xc0 | c >> 6);
		u[1] = (char)(0x80 | (c & 63));
		fctl_buf_append(b, u, 2);
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | c >> 12);
		u[1] = (char)(0x80 | ((c >> 6) & 63));
		u[2] = (char)(0x80 | (c & 63));
		fctl_buf_append(b, u, 3);
	} else {
		u[0] = (char)(0xf0 | c >> 18);
		u[1] = (char)(0x80 | ((c >> 12) & 63));
		u[2] = (char)(0x80 | ((c >> 6) & 63));
		u[3] = (char)(0x80 | (c & 63));
		fctl_buf_append(b, u, 4);
	}
}

int fctl_audit_field(const char *line, size_t len, const char *key, char **out)
{
	struct fctl_buf b = { 0 };
	const char *v;
	size_t n;
	int r = fctl_audit_field_raw(line, len, key, &v, &n);

	if (r < 0)
		return r;
	if (n >= 2 && v[0] == '"') {
		for (size_t i = 1; i + 1 < n; i++) {
			if (v[i] != '\\') {
				fctl_buf_putc(&b, v[i]);
				continue;
			}
			i++;
			switch (v[i]) {
			case 'n':
				fctl_buf_putc(&b, '\n');
				break;
			case 't':
				fctl_buf_putc(&b, '\t');
				break;
			case 'r':
				fctl_buf_putc(&b, '\r');
				break;
			case 'b':
				fctl_buf_putc(&b, '\b');
				break;
			case 'f':
				fctl_buf_putc(&b, '\f');
				break;
			case 'u': {
				unsigned long c = 0;

				if (i + 4 >= n || sscanf(v + i + 1, "%4lx", &c) != 1)
					break;
				i += 4;
				if (c >= 0xd800 && c < 0xdc00 && i + 6 < n && v[i + 1] == '\\' &&
				    v[i + 2] == 'u') {
					unsigned long lo = 0;

					if (sscanf(v + i + 3, "%4lx", &lo) == 1 && lo >= 0xdc00 &&
					    lo < 0xe000) {
						c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
						i += 6;
					}
				}
				put_utf8(&b, c);
				break;
			}
			default:
				fctl_buf_putc(&b, v[i]);
			}
		}
		if (!b.data)
			fctl_buf_puts(&b, "");
	} else {
		fctl_buf_append(&b, v, n);
	}
	if (b.oom) {
		fctl_buf_release(&b);
		return -ENOMEM;
	}
	*out = fctl_buf_steal(&b);
	return 0;
}

int fctl_audit_parse_time(const char *s, char out[32])
{
	struct tm tm = { 0 };
	const char *e;
	long usec = 0;
	time_t t;
	char buf[24];

	if (s[0] == '@') {
		uint64_t v;

		if (fctl_parse_u64(s + 1, &v) < 0)
			return -EINVAL;
		t = (time_t)v;
	} else {
		e = strptime(s, "%Y-%m-%d", &tm);
		if (!e)
			return -EINVAL;
		if (*e == 'T' || *e == ' ') {
			e = strptime(e + 1, "%H:%M:%S", &tm);
			if (!e)
				return -EINVAL;
			if (*e == '.') {
				int digits = 0;

				for (e++; *e >= '0' && *e <= '9'; e++, digits++)
					if (digits < 6)
						usec = usec * 10 + (*e - '0');
				for (; digits < 6; digits++)
					usec *= 10;
			}
		}
		t = timegm(&tm);
		if (*e == 'Z' && !e[1]) {
			;
		} else if ((*e == '+' || *e == '-') && strlen(e) == 6 && e[3] == ':') {
			int hh = atoi(e + 1), mm = atoi(e + 4);
			long off = (hh * 60L + mm) * 60L;

			t -= *e == '+' ? off : -off;
		} else if (*e) {
			return -EINVAL;
		}
	}
	if (!gmtime_r(&t, &tm))
		return -EINVAL;
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%s.%06ldZ", buf, usec);
	return 0;
}
