// SPDX-License-Identifier: MIT
/* The packet-number ledger's lines and its audit anchor, as text (fctl/sa_ledger.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fctl/sa_ledger.h"

/* n lowercase hex digits exactly into out (n / 2 bytes) */
static bool lower_hex(const char *s, size_t n, uint8_t *out)
{
	if (strlen(s) != n || strspn(s, "0123456789abcdef") != n)
		return false;
	return fctl_parse_hex(s, out, n / 2) == 0;
}

/* decimal, no sign, no leading zero, at most 2^64 - 1 */
static bool canon_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 20 || strspn(s, "0123456789") != n || (n > 1 && s[0] == '0'))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

int fctl_sa_ledger_parse(char *s, struct fctl_sa_ledger_event *ev)
{
	char *f[7];
	size_t n = 0;
	uint8_t sci[8];

	memset(ev, 0, sizeof(*ev));
	/* words split by one space each: no empty word, nothing after the sixth */
	for (char *p = s; n < 7; n++) {
		f[n] = p;
		p = strchr(p, ' ');
		if (!p) {
			n++;
			break;
		}
		*p++ = '\0';
	}
	if (n != 6 || (strcmp(f[0], "live") && strcmp(f[0], "retired")) ||
	    (strcmp(f[1], "tx") && strcmp(f[1], "rx")))
		return -EINVAL;
	ev->retired = f[0][0] == 'r';
	ev->tx = f[1][0] == 't';
	ev->has_hash = strcmp(f[2], "-") != 0;
	if ((ev->has_hash && !lower_hex(f[2], 2 * FCTL_SA_LEDGER_HASH_LEN, ev->hash)) ||
	    !lower_hex(f[3], 2 * FCTL_SA_LEDGER_KEYID_LEN, ev->keyid) ||
	    strncmp(f[4], "0x", 2) != 0 || !lower_hex(f[4] + 2, 16, sci) || !canon_u64(f[5], &ev->pn))
		return -EINVAL;
	for (size_t i = 0; i < 8; i++)
		ev->sci = ev->sci << 8 | sci[i];
	return 0;
}

int fctl_sa_ledger_format(struct fctl_buf *b, const struct fctl_sa_ledger_event *ev)
{
	char hash[2 * FCTL_SA_LEDGER_HASH_LEN + 1] = "-", keyid[2 * FCTL_SA_LEDGER_KEYID_LEN + 1];

	if (ev->has_hash)
		fctl_format_hex(ev->hash, FCTL_SA_LEDGER_HASH_LEN, hash);
	fctl_format_hex(ev->keyid, FCTL_SA_LEDGER_KEYID_LEN, keyid);
	return fctl_buf_printf(b, "%s %s %s %s 0x%016" PRIx64 " %" PRIu64 "\n",
			       ev->retired ? "retired" : "live", ev->tx ? "tx" : "rx", hash, keyid,
			       ev->sci, ev->pn);
}

void fctl_sa_ledger_anchor_format(const struct fctl_sa_ledger_anchor *a, char *out)
{
	char hex[65];

	fctl_format_hex(a->sha256, 32, hex);
	snprintf(out, FCTL_SA_LEDGER_ANCHOR_MAX, "bytes=%" PRIu64 " sha256=%s", a->size, hex);
}

int fctl_sa_ledger_anchor_parse(const char *detail, struct fctl_sa_ledger_anchor *a)
{
	char buf[FCTL_SA_LEDGER_ANCHOR_MAX], *sp;
	struct fctl_sa_ledger_anchor x;

	if (!detail || strncmp(detail, "bytes=", 6) != 0 || strlen(detail) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", detail + 6);
	sp = strchr(buf, ' ');
	if (!sp)
		return -EINVAL;
	*sp = '\0';
	if (!canon_u64(buf, &x.size) || strncmp(sp + 1, "sha256=", 7) != 0 ||
	    !lower_hex(sp + 8, 64, x.sha256))
		return -EINVAL;
	*a = x;
	return 0;
}

size_t fctl_sa_ledger_whole(const char *data, size_t len)
{
	while (len && data[len - 1] != '\n')
		len--;
	return len;
}
