// SPDX-License-Identifier: MIT
/* OpenSSH allowed_signers files: principals, options (namespaces=, valid-after=,
 * valid-before=), key; cert-authority and FIDO keys refused. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fctl/approvals.h"

#define MAX_TOK 8

/* splits a line into whitespace-separated tokens, a double-quoted run staying inside
 * its token (quotes kept); returns the count or -1 on an unterminated quote */
static int tokenize(char *s, char **tok, int max)
{
	int n = 0;

	while (*s) {
		bool q = false;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		if (n == max)
			return n + 1;
		tok[n++] = s;
		while (*s && (q || (*s != ' ' && *s != '\t'))) {
			if (*s == '"')
				q = !q;
			s++;
		}
		if (q)
			return -1;
		if (*s)
			*s++ = '\0';
	}
	return n;
}

/* removes the double quotes of a token in place */
static void unquote(char *s)
{
	char *d = s;

	for (; *s; s++)
		if (*s != '"')
			*d++ = *s;
	*d = '\0';
}

/* YYYYMMDD[HHMM[SS]][Z]: UTC with Z, local time without, as OpenSSH reads it */
static int parse_time(const char *s, time_t *out)
{
	struct tm tm = { 0 };
	size_t n = strlen(s);
	bool utc = n && s[n - 1] == 'Z';
	char d[16];
	time_t t;

	if (utc)
		n--;
	if ((n != 8 && n != 12 && n != 14) || n >= sizeof(d))
		return -EINVAL;
	memcpy(d, s, n);
	d[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)d[i]))
			return -EINVAL;
	if (sscanf(d, "%4d%2d%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) != 3)
		return -EINVAL;
	if (n >= 12 && sscanf(d + 8, "%2d%2d", &tm.tm_hour, &tm.tm_min) != 2)
		return -EINVAL;
	if (n == 14 && sscanf(d + 12, "%2d", &tm.tm_sec) != 1)
		return -EINVAL;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -EINVAL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	tm.tm_isdst = -1;
	t = utc ? timegm(&tm) : mktime(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*out = t;
	return 0;
}

/* the options token: comma-separated, values possibly quoted (commas inside quotes) */
static int parse_options(char *opts, struct fctl_signer *tmpl, const char *file,
			 unsigned int line, char *err, size_t errlen)
{
	char *s = opts;

	while (*s) {
		char *o = s, *v;
		bool q = false;

		while (*s && (q || *s != ',')) {
			if (*s == '"')
				q = !q;
			s++;
		}
		if (*s)
			*s++ = '\0';
		v = strchr(o, '=');
		if (v)
			*v++ = '\0';
		if (v)
			unquote(v);
		if (strcasecmp(o, "cert-authority") == 0 && !v) {
			fctl_set_err(err, errlen,
				     "%s:%u: cert-authority is not supported: list each approver's "
				     "own key",
				     file, line);
			return -EOPNOTSUPP;
		} else if (strcasecmp(o, "namespaces") == 0 && v) {
			snprintf(tmpl->namespaces, sizeof(tmpl->namespaces), "%s", v);
		} else if (strcasecmp(o, "valid-after") == 0 && v) {
			if (parse_time(v, &tmpl->after) < 0)
				goto bad_time;
			tmpl->has_after = true;
		} else if (strcasecmp(o, "valid-before") == 0 && v) {
			if (parse_time(v, &tmpl->before) < 0)
				goto bad_time;
			tmpl->has_before = true;
		} else {
			fctl_set_err(err, errlen,
				     "%s:%u: unknown option '%s' (namespaces=, valid-after=, "
				     "valid-before=)",
				     file, line, o);
			return -EINVAL;
		}
		continue;
bad_time:
		fctl_set_err(err, errlen, "%s:%u: %s='%s' is not YYYYMMDD[HHMM[SS]][Z]", file,
			     line, o, v);
		return -EINVAL;
	}
	return 0;
}

static bool is_keytype(const char *s)
{
	return strncmp(s, "ssh-", 4) == 0 || strncmp(s, "ecdsa-", 6) == 0 ||
	       strncmp(s, "sk-", 3) == 0;
}

static int parse_line(char *l, unsigned int line, const char *file, struct fctl_signers *out,
		      size_t *cap, char *err, size_t errlen)
{
	struct fctl_signer tmpl = { .line = line };
	char *tok[MAX_TOK], *save = NULL, *kt, *kb, *p;
	int n = tokenize(l, tok, MAX_TOK), i = 1, r;

	if (n == 0)
		return 0;
	if (n < 0 || n > MAX_TOK) {
		fctl_set_err(err, errlen, "%s:%u: %s", file, line,
			     n < 0 ? "unterminated quote" : "too many fields");
		return -EINVAL;
	}
	if (n >= 2 && !is_keytype(tok[1])) {
		r = parse_options(tok[1], &tmpl, file, line, err, errlen);
		if (r < 0)
			return r;
		i = 2;
	}
	if (n < i + 2) {
		fctl_set_err(err, errlen, "%s:%u: expected 'PRINCIPALS [OPTIONS] KEYTYPE BASE64'",
			     file, line);
		return -EINVAL;
	}
	kt = tok[i];
	kb = tok[i + 1];
	r = fctl_sshkey_from_text(kt, kb, &tmpl.key, err, errlen);
	if (r < 0) {
		char why[200];

		snprintf(why, sizeof(why), "%s", err);
		fctl_set_err(err, errlen, "%s:%u: %s", file, line, why);
		return r;
	}
	unquote(tok[0]);
	for (p = strtok_r(tok[0], ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		struct fctl_signer *s;

		if (strlen(p) >= sizeof(tmpl.principal)) {
			fctl_set_err(err, errlen, "%s:%u: principal too long", file, line);
			return -EINVAL;
		}
		s = fctl_array_grow(&out->v, &out->n, cap, sizeof(*s));
		if (!s)
			return -ENOMEM;
		*s = tmpl;
		snprintf(s->principal, sizeof(s->principal), "%s", p);
	}
	return 0;
}

int fctl_signers_parse(const char *file, const char *text, size_t len, struct fctl_signers *out,
		       char *err, size_t errlen)
{
	struct fctl_signers s = { 0 };
	size_t cap = 0;
	unsigned int line = 0;
	const char *p = text, *end = text + len;
	int r = 0;

	snprintf(s.file, sizeof(s.file), "%s", file);
	while (p < end && r == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *buf = strndup(p, l), *b;

		line++;
		p += l + 1;
		if (!buf)
			return -ENOMEM;
		for (b = buf; *b == ' ' || *b == '\t'; b++)
			;
		b[strcspn(b, "\r")] = '\0';
		if (*b && *b != '#')
			r = parse_line(b, line, file, &s, &cap, err, errlen);
		free(buf);
	}
	if (r < 0) {
		fctl_signers_release(&s);
		return r;
	}
	*out = s;
	return 0;
}

int fctl_signers_load(const char *file, struct fctl_signers *out, char *err, size_t errlen)
{
	struct fctl_buf b = { 0 };
	int r = fctl_file_read(file, &b);

	if (r < 0)
		fctl_set_err(err, errlen, "%s: %s", file, strerror(-r));
	else
		r = fctl_signers_parse(file, b.data ? b.data : "", b.len, out, err, errlen);
	fctl_buf_release(&b);
	return r;
}

void fctl_signers_release(struct fctl_signers *s)
{
	if (!s)
		return;
	free(s->v);
	s->v = NULL;
	s->n = 0;
}
