// SPDX-License-Identifier: MIT
/* Saved plans (plan --out FILE, apply --plan FILE): the file, written atomically and read back. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fctl/engine.h"

#define SAVED_FORMAT "fabricctl-plan/1"

static void put_str(struct fctl_buf *b, const char *key, const char *val)
{
	fctl_buf_printf(b, "\"%s\": ", key);
	fctl_buf_json_str(b, val);
	fctl_buf_puts(b, ",\n");
}

static void put_hex(struct fctl_buf *b, const char *key, const uint8_t md[32])
{
	fctl_buf_printf(b, "\"%s\": \"", key);
	fctl_buf_put_hex(b, md, 32);
	fctl_buf_puts(b, "\",\n");
}

int fctl_engine_plan_save(const char *path, const struct fctl_saved_plan *sp,
			  const struct fctl_plan *plan, char *err, size_t errlen)
{
	struct fctl_buf b = { 0 };
	int r;

	fctl_buf_puts(&b, "{\n");
	put_str(&b, "format", SAVED_FORMAT);
	put_str(&b, "host", sp->host);
	put_str(&b, "netns", sp->netns);
	put_str(&b, "profile_file", sp->profile_file);
	put_str(&b, "profile_name", sp->profile_name);
	fctl_buf_printf(&b, "\"profile_version\": %" PRIu64 ",\n", sp->profile_version);
	put_hex(&b, "profile_sha256", sp->profile_sha256);
	put_hex(&b, "live_sha256", sp->seal.live_sha256);
	put_hex(&b, "plan_sha256", sp->seal.plan_sha256);
	fctl_buf_printf(&b, "\"ops\": %" PRIu64 ",\n\"disruptive\": %" PRIu64 ",\n\"plan\": ",
			sp->ops, sp->disruptive);
	/* the operations as plan --json prints them: key ids, never keys */
	r = fctl_plan_to_json(plan, &b);
	fctl_buf_puts(&b, "\n}\n");
	if (r == 0 && b.oom)
		r = -ENOMEM;
	if (r == 0)
		r = fctl_file_replace(path, NULL, b.data, b.len, 0644, FCTL_FILE_SYNC_DIR);
	if (r < 0)
		snprintf(err, errlen, "cannot write '%s': %s", path, strerror(-r));
	fctl_buf_release(&b);
	return r;
}

/* A JSON string at s (after its opening quote) into out; the end in *end. -EINVAL when it
 * is not one this writer makes (fctl_buf_json_str: ASCII escapes only). */
static int get_str(const char *s, char *out, size_t len, const char **end)
{
	static const char escs[] = "\"\\/bfnrt", map[] = "\"\\/\b\f\n\r\t";
	size_t n = 0;

	for (; *s && *s != '"'; s++) {
		char c = *s;

		if (c == '\\') {
			const char *esc;
			unsigned int u;

			if (!*++s)
				return -EINVAL;
			if (*s == 'u') {
				if (sscanf(s + 1, "%4x", &u) != 1 || u == 0 || u > 0x7f)
					return -EINVAL;
				c = (char)u;
				s += 4;
			} else if ((esc = strchr(escs, *s))) {
				c = map[esc - escs];
			} else {
				return -EINVAL;
			}
		}
		if (n + 1 >= len)
			return -EINVAL;
		out[n++] = c;
	}
	if (*s != '"')
		return -EINVAL;
	out[n] = '\0';
	*end = s + 1;
	return 0;
}

/* One line "KEY": VALUE[,] into sp; the plan's value is checked against plan_sha256 by the
 * caller (*plan, *plan_len). Returns 1 for a known key, 0 for another, -EINVAL. */
static int parse_line(const char *l, struct fctl_saved_plan *sp, char *format, size_t flen,
		      const char **plan, size_t *plan_len)
{
	static const struct {
		const char *key;
		size_t off, len; /* a string field of sp; len 0: see below */
	} strs[] = {
		{ "host", offsetof(struct fctl_saved_plan, host), sizeof(sp->host) },
		{ "netns", offsetof(struct fctl_saved_plan, netns), sizeof(sp->netns) },
		{ "profile_file", offsetof(struct fctl_saved_plan, profile_file),
		  sizeof(sp->profile_file) },
		{ "profile_name", offsetof(struct fctl_saved_plan, profile_name),
		  sizeof(sp->profile_name) },
	};
	static const struct {
		const char *key;
		size_t off;
	} hexes[] = {
		{ "profile_sha256", offsetof(struct fctl_saved_plan, profile_sha256) },
		{ "live_sha256", offsetof(struct fctl_saved_plan, seal.live_sha256) },
		{ "plan_sha256", offsetof(struct fctl_saved_plan, seal.plan_sha256) },
	};
	char key[32], hex[80];
	const char *v, *end;

	if (*l != '"' || get_str(l + 1, key, sizeof(key), &v) < 0 || strncmp(v, ": ", 2) != 0)
		return -EINVAL;
	v += 2;
	if (strcmp(key, "format") == 0)
		return *v == '"' ? (get_str(v + 1, format, flen, &end) < 0 ? -EINVAL : 1) : -EINVAL;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(strs); i++)
		if (strcmp(key, strs[i].key) == 0)
			return *v == '"' && get_str(v + 1, (char *)sp + strs[i].off, strs[i].len,
						    &end) == 0 ? 1 : -EINVAL;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(hexes); i++)
		if (strcmp(key, hexes[i].key) == 0)
			return *v == '"' && get_str(v + 1, hex, sizeof(hex), &end) == 0 &&
			       strlen(hex) == 64 &&
			       fctl_parse_hex(hex, (uint8_t *)sp + hexes[i].off, 32) == 0 ? 1 : -EINVAL;
	if (strcmp(key, "profile_version") == 0 || strcmp(key, "ops") == 0 ||
	    strcmp(key, "disruptive") == 0) {
		uint64_t *n = key[0] == 'o' ? &sp->ops : key[0] == 'd' ? &sp->disruptive
								   : &sp->profile_version;
		char num[24];
		size_t k = strspn(v, "0123456789");

		snprintf(num, sizeof(num), "%.*s", (int)(k < 23 ? k : 23), v);
		return k && k < 21 && fctl_parse_u64(num, n) == 0 ? 1 : -EINVAL;
	}
	if (strcmp(key, "plan") == 0) {
		*plan = v;
		*plan_len = strcspn(v, "\n");
		return 1;
	}
	return 0;
}

/* The text of a saved plan into out: every line parsed, the format this one, the plan's
 * operations those its plan_sha256 names. */
static int parse_saved(char *text, struct fctl_saved_plan *out, char *err, size_t errlen)
{
	char format[64] = "";
	const char *plan = NULL;
	size_t plan_len = 0, line = 1;
	uint8_t md[32];
	unsigned int n = 0;

	if (strncmp(text, "{\n", 2) != 0)
		goto bad;
	line = 2;
	for (char *l = text + 2; *l && strcmp(l, "}\n") != 0; line++) {
		char *nl = strchr(l, '\n');

		if (!nl)
			goto bad;
		*nl = '\0';
		if (parse_line(l, out, format, sizeof(format), &plan, &plan_len) < 0)
			goto bad;
		l = nl + 1;
	}
	if (strcmp(format, SAVED_FORMAT) != 0 || !plan) {
		snprintf(err, errlen, "not a saved plan of this fabricctl (format '%s', expected '%s')",
			 format, SAVED_FORMAT);
		return -EINVAL;
	}
	if (EVP_Digest(plan, plan_len, md, &n, EVP_sha256(), NULL) != 1 || n != 32 ||
	    CRYPTO_memcmp(md, out->seal.plan_sha256, 32) != 0) {
		snprintf(err, errlen, "its operations are not those its plan_sha256 names: the file "
			 "was edited after plan --out wrote it");
		return -EINVAL;
	}
	return 0;
bad:
	snprintf(err, errlen, "line %zu: not a saved plan as plan --out writes it", line);
	return -EINVAL;
}

int fctl_engine_plan_load(const char *path, struct fctl_saved_plan *out, char *err,
			  size_t errlen)
{
	struct fctl_saved_plan sp = { 0 };
	struct fctl_buf b = { 0 };
	char why[256] = "";
	int r = fctl_file_read(path, &b);

	if (r < 0) {
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(-r));
		fctl_buf_release(&b);
		return r;
	}
	if (fctl_buf_putc(&b, '\0') < 0 || memchr(b.data, '\0', b.len - 1)) {
		snprintf(why, sizeof(why), "not a text file");
		r = -EINVAL;
	} else {
		r = parse_saved(b.data, &sp, why, sizeof(why));
	}
	fctl_buf_release(&b);
	if (r < 0) {
		snprintf(err, errlen, "'%s': %s", path, why);
		return r;
	}
	*out = sp;
	return 0;
}
