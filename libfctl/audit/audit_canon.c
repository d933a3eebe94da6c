// SPDX-License-Identifier: MIT
/* Audit records: the one canonical serialization, its string writer and its strict checker. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fctl/audit.h"

/* --- UTF-8 --- */

/* Length of the well-formed UTF-8 sequence at p (shortest form, no surrogates, at most
 * U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned long c;
	size_t len, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, c = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, c = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, c = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10ffff ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return len;
}

int fctl_audit_json_str(struct fctl_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	fctl_buf_putc(b, '"');
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		size_t l;

		if (c == '"' || c == '\\') {
			fctl_buf_putc(b, '\\');
			fctl_buf_putc(b, (char)c);
		} else if (c == '\n') {
			fctl_buf_puts(b, "\\n");
		} else if (c == '\t') {
			fctl_buf_puts(b, "\\t");
		} else if (c == '\r') {
			fctl_buf_puts(b, "\\r");
		} else if (c < 0x20 || c == 0x7f) {
			fctl_buf_printf(b, "\\u%04x", c);
		} else if (c < 0x80) {
			fctl_buf_putc(b, (char)c);
		} else if ((l = utf8_len(p + i, n - i)) > 0) {
			fctl_buf_append(b, p + i, l);
			i += l;
			continue;
		} else {
			fctl_buf_puts(b, "\xef\xbf\xbd"); /* not UTF-8: U+FFFD for that byte */
		}
		i++;
	}
	fctl_buf_putc(b, '"');
	return b->oom ? -ENOMEM : 0;
}

/* --- the checker: the line is walked along the writer's grammar, byte by byte --- */

struct cur {
	const char *s;
	size_t n, i;
	char *why;
	size_t wl;
};

static int bad(struct cur *c, const char *fmt, ...) FCTL_PRINTF(2, 3);
static int bad(struct cur *c, const char *fmt, ...)
{
	char m[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (c->why && c->wl)
		snprintf(c->why, c->wl, "byte %zu: %s", c->i, m);
	return -EINVAL;
}

static bool at(const struct cur *c, const char *t)
{
	size_t l = strlen(t);

	return c->n - c->i >= l && memcmp(c->s + c->i, t, l) == 0;
}

/* The key the line has at this point, for the reason text. */
static void key_here(const struct cur *c, char *out, size_t n)
{
	size_t i = c->i, k = 0;

	if (i < c->n && c->s[i] == ',')
		i++;
	if (i < c->n && c->s[i] == '"')
		i++;
	while (i < c->n && c->s[i] != '"' && k + 1 < n && k < 40)
		out[k++] = c->s[i++];
	out[k] = '\0';
}

/* ,"name": (or "name": first in an object) */
static bool opt_key(struct cur *c, const char *name, bool first)
{
	size_t l = strlen(name), i = c->i;

	if (!first) {
		if (i >= c->n || c->s[i] != ',')
			return false;
		i++;
	}
	if (c->n - i < l + 3 || c->s[i] != '"' || memcmp(c->s + i + 1, name, l) != 0 ||
	    c->s[i + 1 + l] != '"' || c->s[i + 2 + l] != ':')
		return false;
	c->i = i + l + 3;
	return true;
}

static int need_key(struct cur *c, const char *name, bool first)
{
	char k[48];

	if (opt_key(c, name, first))
		return 0;
	key_here(c, k, sizeof(k));
	return bad(c, "expected field \"%s\" here, found \"%s\" (fields are in one fixed order, "
		      "each once)", name, k);
}

static int u64v(struct cur *c, uint64_t max, uint64_t *out)
{
	size_t d0 = c->i;
	uint64_t v = 0;

	while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
		unsigned int dg = (unsigned int)(c->s[c->i] - '0');

		if (v > (max - dg) / 10)
			return bad(c, "number out of range");
		v = v * 10 + dg;
		c->i++;
	}
	if (c->i == d0)
		return bad(c, "expected a number (decimal digits only)");
	if (c->s[d0] == '0' && c->i - d0 > 1) {
		c->i = d0;
		return bad(c, "number with a leading zero");
	}
	if (out)
		*out = v;
	return 0;
}

/* A string in the writer's escaping; its raw bytes (escapes kept) in *p, *len. */
static int strv(struct cur *c, const char **p, size_t *len)
{
	static const char hex[] = "0123456789abcdef";
	size_t start;

	if (c->i >= c->n || c->s[c->i] != '"')
		return bad(c, "expected a string");
	start = ++c->i;
	while (c->i < c->n) {
		unsigned char ch = (unsigned char)c->s[c->i];
		size_t l;

		if (ch == '"') {
			if (p)
				*p = c->s + start;
			if (len)
				*len = c->i - start;
			c->i++;
			return 0;
		}
		if (ch == '\\') {
			char e = c->i + 1 < c->n ? c->s[c->i + 1] : 0;

			if (e == '"' || e == '\\' || e == 'n' || e == 't' || e == 'r') {
				c->i += 2;
				continue;
			}
			if (e == 'u' && c->n - c->i >= 6) {
				int v = 0;

				for (int k = 2; k < 6 && v >= 0; k++) {
					const char *h = strchr(hex, c->s[c->i + (size_t)k]);

					v = h && *h ? v * 16 + (int)(h - hex) : -1;
				}
				if ((v > 0 && v < 0x20 && v != '\t' && v != '\n' && v != '\r') ||
				    v == 0x7f) {
					c->i += 6;
					continue;
				}
			}
			return bad(c, "escape that the writer never makes (only \\\" \\\\ \\n \\t "
				      "\\r and \\u00xx, lowercase, for other control characters)");
		}
		if (ch < 0x20 || ch == 0x7f)
			return bad(c, "control character 0x%02x not escaped", ch);
		l = utf8_len((const unsigned char *)c->s + c->i, c->n - c->i);
		if (!l)
			return bad(c, "not UTF-8");
		c->i += l;
	}
	return bad(c, "unterminated string");
}

static int nonempty_str(struct cur *c, const char *what)
{
	size_t len = 0;
	int r = strv(c, NULL, &len);

	if (r == 0 && !len)
		return bad(c, "empty %s", what);
	return r;
}

/* value of a lowercase hex digit, or -1 */
static int hexdig(unsigned char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* "hex" of exactly digits lowercase hex digits, decoded into out when not NULL. */
static int hexv(struct cur *c, size_t digits, uint8_t *out)
{
	const unsigned char *p = (const unsigned char *)c->s + c->i + 1;

	if (c->n - c->i < digits + 2 || p[-1] != '"' || p[digits] != '"')
		return bad(c, "expected \"%zu lowercase hex digits\"", digits);
	for (size_t k = 0; k < digits; k += 2) {
		int hi = hexdig(p[k]), lo = k + 1 < digits ? hexdig(p[k + 1]) : 0;

		if (hi < 0 || lo < 0)
			return bad(c, "expected \"%zu lowercase hex digits\"", digits);
		if (out)
			out[k / 2] = (uint8_t)(hi << 4 | lo);
	}
	c->i += digits + 2;
	return 0;
}

static int dig(const char *s, int n)
{
	int v = 0;

	for (int k = 0; k < n; k++) {
		if (s[k] < '0' || s[k] > '9')
			return -1;
		v = v * 10 + (s[k] - '0');
	}
	return v;
}

/* days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DDTHH:MM:SS.uuuuuuZ", a real UTC time; microseconds since the epoch in *us. */
static int timev(struct cur *c, int64_t *us)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	const char *t = c->s + c->i + 1;
	int y, mo, d, h, mi, se, u, dim;

	if (c->n - c->i < 29 || c->s[c->i] != '"' || t[27] != '"' || t[4] != '-' || t[7] != '-' ||
	    t[10] != 'T' || t[13] != ':' || t[16] != ':' || t[19] != '.' || t[26] != 'Z')
		return bad(c, "time is not \"YYYY-MM-DDTHH:MM:SS.uuuuuuZ\"");
	y = dig(t, 4), mo = dig(t + 5, 2), d = dig(t + 8, 2), h = dig(t + 11, 2);
	mi = dig(t + 14, 2), se = dig(t + 17, 2), u = dig(t + 20, 6);
	if (y < 1970 || mo < 1 || d < 1 || h < 0 || mi < 0 || se < 0 || u < 0)
		return bad(c, "time is not \"YYYY-MM-DDTHH:MM:SS.uuuuuuZ\"");
	if (mo > 12)
		return bad(c, "time is not a real UTC time");
	dim = mdays[mo - 1] + (mo == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
	if (d > dim || h > 23 || mi > 59 || se > 59)
		return bad(c, "time is not a real UTC time");
	*us = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se) * 1000000) + u;
	c->i += 29;
	return 0;
}

static int actor(struct cur *c)
{
	int r;

	if (!at(c, "{"))
		return bad(c, "actor is not an object");
	c->i++;
	if (opt_key(c, "cert", true)) {
		r = strv(c, NULL, NULL);
	} else {
		r = need_key(c, "user", true);
		if (r == 0 && at(c, "null"))
			c->i += 4;
		else if (r == 0)
			r = strv(c, NULL, NULL);
		if (r == 0)
			r = need_key(c, "uid", false);
		if (r == 0)
			r = u64v(c, UINT32_MAX, NULL);
	}
	if (r == 0 && !at(c, "}"))
		return bad(c, "actor: unexpected content (\"cert\" alone, or \"user\" and \"uid\")");
	c->i++;
	return r;
}

static int profile(struct cur *c)
{
	int r;

	if (!at(c, "{"))
		return bad(c, "profile is not an object");
	c->i++;
	r = need_key(c, "name", true);
	if (r == 0)
		r = strv(c, NULL, NULL);
	if (r == 0)
		r = need_key(c, "version", false);
	if (r == 0)
		r = u64v(c, UINT64_MAX, NULL);
	if (r == 0 && opt_key(c, "sha256", false))
		r = hexv(c, 64, NULL);
	if (r == 0 && !at(c, "}"))
		return bad(c, "profile: unexpected content (\"name\", \"version\", \"sha256\")");
	c->i++;
	return r;
}

/* A non-empty array of at most FCTL_AUDIT_MAX_KEYS entries: strings of digits lowercase
 * hex digits each (key_ids, kcv), or with digits 0 any strings (approvals). */
static int hex_array(struct cur *c, size_t digits)
{
	size_t k = 0;
	int r;

	if (!at(c, "["))
		return bad(c, "expected an array");
	c->i++;
	do {
		if (k++ == FCTL_AUDIT_MAX_KEYS)
			return bad(c, "more than %d entries", FCTL_AUDIT_MAX_KEYS);
		r = digits ? hexv(c, digits, NULL) : strv(c, NULL, NULL);
		if (r < 0)
			return r;
	} while (at(c, ",") && ++c->i);
	if (!at(c, "]"))
		return bad(c, "expected ']'");
	c->i++;
	return 0;
}

/* The optional fields between "action" and "result", and after "result". */
static int middle(struct cur *c)
{
	static const char *const strs[] = { "change", "host", "link", "secy" };
	int r = 0;

	for (size_t k = 0; r == 0 && k < FCTL_ARRAY_SIZE(strs); k++)
		if (opt_key(c, strs[k], false))
			r = strv(c, NULL, NULL);
	if (r == 0 && opt_key(c, "profile", false))
		r = profile(c);
	if (r == 0)
		r = need_key(c, "result", false);
	if (r == 0)
		r = nonempty_str(c, "result");
	if (r == 0 && opt_key(c, "ops", false)) {
		r = u64v(c, UINT64_MAX, NULL);
		if (r == 0)
			r = need_key(c, "writes", false);
		if (r == 0)
			r = u64v(c, UINT64_MAX, NULL);
	}
	if (r == 0 && opt_key(c, "error", false))
		r = strv(c, NULL, NULL);
	if (r == 0 && opt_key(c, "detail", false))
		r = strv(c, NULL, NULL);
	if (r == 0 && opt_key(c, "key_ids", false))
		r = hex_array(c, FCTL_AUDIT_KEYID_LEN);
	if (r == 0 && opt_key(c, "kcv", false))
		r = hex_array(c, FCTL_AUDIT_KCV_LEN);
	if (r == 0 && opt_key(c, "key_state", false))
		r = strv(c, NULL, NULL);
	if (r == 0 && opt_key(c, "approvals", false))
		r = hex_array(c, 0); /* digits 0: strings */
	return r;
}

int fctl_audit_record_check(const char *line, size_t len, struct fctl_audit_record *rec,
			    char *why, size_t whylen)
{
	struct cur c = { .s = line, .n = len, .why = why, .wl = whylen };
	struct fctl_audit_record v = { 0 };
	char k[48];
	int r;

	if (!at(&c, "{"))
		return bad(&c, "a record is one JSON object");
	c.i++;
	r = need_key(&c, "seq", true);
	if (r == 0 && (r = u64v(&c, UINT64_MAX, &v.seq)) == 0 && !v.seq)
		r = bad(&c, "seq counts from 1");
	if (r == 0)
		r = need_key(&c, "prev", false);
	if (r == 0)
		r = hexv(&c, 64, v.prev);
	if (r == 0)
		r = need_key(&c, "time", false);
	if (r == 0)
		r = timev(&c, &v.time_us);
	if (r == 0)
		r = need_key(&c, "actor", false);
	if (r == 0)
		r = actor(&c);
	if (r == 0 && opt_key(&c, "manual", false)) { /* only ever true: absent means the tool's */
		if (at(&c, "true"))
			c.i += 4, v.manual = true;
		else
			r = bad(&c, "\"manual\" is true or absent");
	}
	if (r == 0)
		r = need_key(&c, "action", false);
	if (r == 0)
		r = nonempty_str(&c, "action");
	if (r == 0)
		r = middle(&c);
	if (r < 0)
		return r;
	if (!at(&c, "}")) {
		key_here(&c, k, sizeof(k));
		return bad(&c, "unexpected field \"%s\" (unknown, repeated or out of order)", k);
	}
	c.i++;
	if (c.i != c.n)
		return bad(&c, "bytes after the record's closing brace");
	if (rec)
		*rec = v;
	return 0;
}
