// SPDX-License-Identifier: MIT
/* An agent's output inside the fabric JSON: copied only when it is one valid JSON value,
 * as a JSON string otherwise, so no agent can break or inject into the document. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "fctl/fabric.h"

#define MAX_DEPTH 64

struct jp {
	const unsigned char *s;
	size_t n, i;
};

static void ws(struct jp *p)
{
	while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
			       p->s[p->i] == '\r'))
		p->i++;
}

static bool lit(struct jp *p, const char *w)
{
	size_t l = strlen(w);

	if (p->n - p->i < l || memcmp(p->s + p->i, w, l) != 0)
		return false;
	p->i += l;
	return true;
}

static bool digits(struct jp *p)
{
	size_t start = p->i;

	while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
		p->i++;
	return p->i > start;
}

static bool number(struct jp *p)
{
	if (p->i < p->n && p->s[p->i] == '-')
		p->i++;
	if (p->i < p->n && p->s[p->i] == '0')
		p->i++;
	else if (!digits(p))
		return false;
	if (p->i < p->n && p->s[p->i] == '.') {
		p->i++;
		if (!digits(p))
			return false;
	}
	if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		p->i++;
		if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
			p->i++;
		if (!digits(p))
			return false;
	}
	return true;
}

static bool is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* One UTF-8 sequence at p->i (RFC 3629: shortest form, no surrogates, up to U+10FFFF). */
static bool utf8(struct jp *p)
{
	unsigned char c = p->s[p->i];
	size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0xc2 || c > 0xf4 || p->n - p->i < len)
		return false;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (p->s[p->i + 1] < lo || p->s[p->i + 1] > hi)
		return false;
	for (size_t k = 2; k < len; k++)
		if ((p->s[p->i + k] & 0xc0) != 0x80)
			return false;
	p->i += len;
	return true;
}

static bool string(struct jp *p)
{
	if (p->i >= p->n || p->s[p->i] != '"')
		return false;
	p->i++;
	while (p->i < p->n) {
		unsigned char c = p->s[p->i];

		if (c == '"') {
			p->i++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\') {
			if (++p->i >= p->n)
				return false;
			c = p->s[p->i];
			if (c == 'u') {
				if (p->n - p->i < 5)
					return false;
				for (size_t k = 1; k <= 4; k++)
					if (!is_hex(p->s[p->i + k]))
						return false;
				p->i += 5;
			} else if (c && strchr("\"\\/bfnrt", c)) {
				p->i++;
			} else {
				return false;
			}
		} else if (c < 0x80) {
			p->i++;
		} else if (!utf8(p)) {
			return false;
		}
	}
	return false;
}

static bool value(struct jp *p, unsigned depth);

/* An object or an array at p->i: '{' or '['. */
static bool container(struct jp *p, unsigned depth)
{
	bool obj = p->s[p->i] == '{';
	unsigned char close = obj ? '}' : ']';

	if (depth >= MAX_DEPTH)
		return false;
	p->i++;
	ws(p);
	if (p->i < p->n && p->s[p->i] == close) {
		p->i++;
		return true;
	}
	for (;;) {
		if (obj) {
			if (!string(p))
				return false;
			ws(p);
			if (p->i >= p->n || p->s[p->i] != ':')
				return false;
			p->i++;
			ws(p);
		}
		if (!value(p, depth + 1))
			return false;
		ws(p);
		if (p->i >= p->n)
			return false;
		if (p->s[p->i] == close) {
			p->i++;
			return true;
		}
		if (p->s[p->i] != ',')
			return false;
		p->i++;
		ws(p);
	}
}

static bool value(struct jp *p, unsigned depth)
{
	if (p->i >= p->n)
		return false;
	switch (p->s[p->i]) {
	case '{':
	case '[':
		return container(p, depth);
	case '"':
		return string(p);
	case 't':
		return lit(p, "true");
	case 'f':
		return lit(p, "false");
	case 'n':
		return lit(p, "null");
	default:
		return number(p);
	}
}

bool fctl_fabric_json_valid(const char *s, size_t n)
{
	struct jp p = { (const unsigned char *)s, n, 0 };

	if (!s)
		return false;
	ws(&p);
	if (!value(&p, 0))
		return false;
	ws(&p);
	return p.i == n;
}

/* s as a JSON string: escapes as fctl_buf_json_str does, and a byte that does not start a
 * valid UTF-8 sequence becomes U+FFFD, so the document stays valid UTF-8 */
static int put_string(struct fctl_buf *o, const char *s)
{
	struct jp p = { (const unsigned char *)s, strlen(s), 0 };
	int r = fctl_buf_putc(o, '"');

	while (p.i < p.n) {
		unsigned char c = p.s[p.i];
		size_t at = p.i;

		if (c >= 0x80) {
			if (utf8(&p)) {
				r |= fctl_buf_append(o, s + at, p.i - at);
			} else {
				r |= fctl_buf_puts(o, "\\ufffd");
				p.i++;
			}
			continue;
		}
		p.i++;
		if (c == '"')
			r |= fctl_buf_puts(o, "\\\"");
		else if (c == '\\')
			r |= fctl_buf_puts(o, "\\\\");
		else if (c == '\n')
			r |= fctl_buf_puts(o, "\\n");
		else if (c == '\t')
			r |= fctl_buf_puts(o, "\\t");
		else if (c == '\r')
			r |= fctl_buf_puts(o, "\\r");
		else if (c < 0x20 || c == 0x7f)
			r |= fctl_buf_printf(o, "\\u%04x", c);
		else
			r |= fctl_buf_putc(o, (char)c);
	}
	r |= fctl_buf_putc(o, '"');
	return r < 0 ? -ENOMEM : 0;
}

int fctl_fabric_json_output(struct fctl_buf *o, const char *output)
{
	size_t len = output ? strlen(output) : 0;

	if (!output)
		return fctl_buf_puts(o, "null");
	while (len && output[len - 1] == '\n')
		len--;
	/* an object or array the agent printed with --json, checked whole: anything else
	 * (text, a truncated or hostile document) becomes a string */
	if (len && (output[0] == '{' || output[0] == '[') && fctl_fabric_json_valid(output, len))
		return fctl_buf_append(o, output, len);
	return put_string(o, output);
}
