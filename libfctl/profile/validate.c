// SPDX-License-Identifier: MIT
/*
 * Semantic checks of a profile: the kernel's own MACsec rules, references,
 * uniqueness, link symmetry and MTU budgets. Every finding names the place in
 * the file it is about.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fctl/profile.h"
#include "host_index_int.h"
#include "profile_sections_int.h"

#define XPN_MAX_WINDOW ((1u << 30) - 1)

struct vctx {
	struct fctl_profile *p;
	struct fctl_diags *d;
};

#define AT(vc, pos, code, hint, ...)                                                               \
	fctl_diag_add((vc)->d, FCTL_SEV_ERROR, (vc)->p->file, (pos).line, (pos).col, code, hint,   \
		      __VA_ARGS__)
#define WARN(vc, pos, code, hint, ...)                                                             \
	fctl_diag_add((vc)->d, FCTL_SEV_WARNING, (vc)->p->file, (pos).line, (pos).col, code, hint, \
		      __VA_ARGS__)

/* A key file of the file backend: hex, owner-only. Checked when it exists here. */
/* A key file of the file backend: hex, owner-only, 'want' bytes (or 'alt' bytes when alt is
 * not 0: a CAK is 16 or 32). Checked when it exists here. */
static void check_key_file(struct vctx *vc, const struct fctl_keyref *ref, struct fctl_pos key_pos,
			   const struct fctl_macsec_policy *pol, size_t want, size_t alt)
{
	char path[4096], buf[160], need[64];
	struct stat st;
	size_t n = 0;
	const char *why;
	ssize_t got;
	int fd;

	if (!ref->id)
		return;
	if (alt)
		snprintf(need, sizeof(need), "%zu- or %zu-byte hex CAK (%zu or %zu hex digits)",
			 want, alt, want * 2, alt * 2);
	else
		snprintf(need, sizeof(need), "%zu-byte hex key (%zu hex digits for %s)", want,
			 want * 2, fctl_cipher_name(pol->cipher));
	if (fctl_path_below_check(ref->id, &why) < 0) {
		/* refused before anything is opened: a profile names no file outside its tree */
		AT(vc, key_pos, "key-id", "name the key by a path below the profile's "
		   "directory, e.g. keys/NAME.key",
		   "key id '%.256s' of policy '%s' %s; a file key id must be a relative path below "
		   "the profile's directory", ref->id, pol->name, why);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", vc->p->dir, ref->id);
	/* O_NONBLOCK: a FIFO or a terminal named as a key must not hang validation */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		WARN(vc, key_pos, "key-missing", NULL,
		     "key file '%s' of policy '%s' is not readable here (%s); it is checked again "
		     "at apply",
		     path, pol->name, strerror(errno));
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		AT(vc, key_pos, "key-format", NULL,
		   "key file '%s' of policy '%s' is not a regular file", path, pol->name);
		close(fd);
		return;
	}
	if (st.st_mode & 077) {
		AT(vc, key_pos, "key-permissions", "chmod 600 the key file",
		   "key file '%s' is readable by group or others (mode %04o); expected 0600", path,
		   (unsigned)(st.st_mode & 07777));
	}
	while (n < sizeof(buf) && (got = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)got;
	close(fd);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	/* what the file holds is not reported (no length, no offset): validation may run as
	 * root on someone else's profile, and must not measure files for them */
	for (size_t i = 0; i < n; i++) {
		char ch = buf[i];

		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
		      (ch >= 'A' && ch <= 'F'))) {
			AT(vc, key_pos, "key-format", NULL,
			   "key file '%s' of policy '%s' is not a valid %s", path,
			   pol->name, need);
			fctl_memzero(buf, sizeof(buf));
			return;
		}
	}
	if (n != want * 2 && (!alt || n != alt * 2))
		AT(vc, key_pos, "key-length", NULL,
		   "key file '%s' of policy '%s' is not a valid %s", path, pol->name,
		   need);
	fctl_memzero(buf, sizeof(buf));
}

static void check_keyref(struct vctx *vc, const struct fctl_keyref *ref, struct fctl_pos at,
			 const struct fctl_macsec_policy *pol, size_t want, size_t alt)
{
	if (ref->backend && strcmp(ref->backend, "file") == 0)
		check_key_file(vc, ref, at, pol, want, alt);
	else if (ref->backend && ref->version == 0)
		AT(vc, at, "key-version", "add 'version: 1' (or the version to use)",
		   "key of policy '%s' (backend %s) names no version; a KMS key needs an explicit "
		   "version, an absent one fails closed at apply",
		   pol->name, ref->backend);
}

/* A CKN: 1..32 bytes written as an even number of hex digits. */
static void check_ckn(struct vctx *vc, const struct fctl_mka_ca *ca, const char *polname)
{
	size_t n;

	if (!ca->ckn)
		return;
	n = strlen(ca->ckn);
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)ca->ckn[i])) {
			AT(vc, ca->ckn_pos, "ckn-format", "write the CKN as hex digits, e.g. "
			   "\"00112233\"",
			   "ckn of policy '%s' has a character that is not a hex digit at offset %zu",
			   polname, i);
			return;
		}
	if (n < 2 || n > 64 || n % 2)
		AT(vc, ca->ckn_pos, "ckn-length", NULL,
		   "ckn of policy '%s' has %zu hex digits; expected an even number from 2 to 64 "
		   "(1..32 bytes)",
		   polname, n);
}

/* What Debian 12's wpa_supplicant (2.10) cannot do for an MKA SecY is refused, not ignored. */
static void mka_fixed(struct vctx *vc, const struct fctl_macsec_policy *pol, bool bad,
		      struct fctl_pos at, const char *what)
{
	if (bad)
		AT(vc, at.line ? at : pol->mka.pos, "mka-unsupported", "remove it: wpa_supplicant "
		   "2.10 fixes this setting for MKA (docs/mka.md)",
		   "policy '%s' uses mka with %s; wpa_supplicant 2.10 creates the SecY with "
		   "icv_len 16, validate strict, send_sci true, offload off and rekeys itself",
		   pol->name, what);
}

static void check_mka(struct vctx *vc, const struct fctl_macsec_policy *pol)
{
	const struct fctl_mka *m = &pol->mka;

	if (pol->cipher != FCTL_CIPHER_GCM_AES_128)
		AT(vc, pol->pos_cipher.line ? pol->pos_cipher : m->pos, "mka-cipher",
		   "write 'cipher: gcm-aes-128'",
		   "policy '%s' uses mka with cipher %s; Debian 12's wpa_supplicant (2.10) "
		   "negotiates gcm-aes-128 only",
		   pol->name, fctl_cipher_name(pol->cipher));
	mka_fixed(vc, pol, pol->icv_len != 16, pol->pos_icv, "an icv_len other than 16");
	mka_fixed(vc, pol, pol->validate != FCTL_VALIDATE_STRICT, pol->pos_validate,
		  "validate other than strict");
	mka_fixed(vc, pol, !pol->send_sci, pol->pos_send_sci, "send_sci false");
	mka_fixed(vc, pol, pol->end_station, pol->pos_es, "end_station true");
	mka_fixed(vc, pol, pol->scb, pol->pos_scb, "scb true");
	mka_fixed(vc, pol, pol->offload != FCTL_OFFLOAD_OFF, pol->pos_offload, "offload");
	mka_fixed(vc, pol, pol->has_pn_rekey_threshold, pol->pos_pn_thr, "pn_rekey_threshold");
	if (pol->port > 65534)
		AT(vc, m->pos, "out-of-range", "use a port from 1 to 65534",
		   "policy '%s' uses mka with port %u; wpa_supplicant takes 1..65534 (and a CAK "
		   "rotation runs the new CA on the port beside it)",
		   pol->name, (unsigned)pol->port);
	check_ckn(vc, &m->primary, pol->name);
	check_keyref(vc, &m->primary.cak, m->primary.cak_pos, pol, 16, 32);
	if (!m->has_fallback)
		return;
	check_ckn(vc, &m->fallback, pol->name);
	check_keyref(vc, &m->fallback.cak, m->fallback.cak_pos, pol, 16, 32);
	if (m->primary.ckn && m->fallback.ckn && strcasecmp(m->primary.ckn, m->fallback.ckn) == 0)
		AT(vc, m->fallback.ckn_pos, "ckn-duplicate", "give the fallback CAK its own CKN",
		   "the fallback ckn of policy '%s' is the primary's; a CKN names one CAK",
		   pol->name);
}

/* A weak setting: an error while the policy must secure (the default), a warning once it
 * says 'must_secure: false'. what says what is weak and what it costs; fix how to mend it. */
static void weak(struct vctx *vc, const struct fctl_macsec_policy *pol, struct fctl_pos at,
		 const char *code, const char *what, const char *fix)
{
	char hint[192];

	at = at.line ? at : pol->pos;
	if (!pol->must_secure) {
		WARN(vc, at, code, NULL, "policy '%s' has %s", pol->name, what);
		return;
	}
	snprintf(hint, sizeof(hint), "%s, or write 'must_secure: false' in policy '%.64s' to "
		 "accept it", fix, pol->name);
	AT(vc, at, code, hint,
	   "policy '%s' has %s; refused while must_secure is true (the default)",
	   pol->name, what);
}

/* MUST_SECURE: encryption, replay protection and strict validation, or an explicit opt-out. */
static void check_weak(struct vctx *vc, const struct fctl_macsec_policy *pol)
{
	char what[128];

	if (!pol->encrypt)
		weak(vc, pol, pol->pos_encrypt, "integrity-only",
		     "encrypt false: frames are authenticated but travel readable",
		     "write 'encrypt: true'");
	if (!pol->replay_protect)
		weak(vc, pol, pol->pos_replay, "replay-disabled",
		     pol->pos_replay.line ? "replay_protect false: replayed frames are accepted"
					  : "replay_protect false (the default): replayed frames "
					    "are accepted",
		     "write 'replay_protect: true' and a replay_window");
	if (pol->validate != FCTL_VALIDATE_STRICT) {
		snprintf(what, sizeof(what),
			 "validate %s: frames failing validation may be delivered",
			 fctl_validate_name(pol->validate));
		weak(vc, pol, pol->pos_validate, "validate-not-strict", what,
		     "write 'validate: strict'");
	}
}

static void check_policy(struct vctx *vc, const struct fctl_macsec_policy *pol)
{
	bool xpn = fctl_cipher_is_xpn(pol->cipher);
	struct fctl_pos at = pol->pos_icv.line ? pol->pos_icv : pol->pos;

	for (const struct fctl_macsec_policy *q = vc->p->policies; q < pol; q++)
		if (q->name && pol->name && strcmp(q->name, pol->name) == 0)
			AT(vc, pol->pos, "duplicate", NULL, "duplicate macsec policy '%s'",
			   pol->name);
	if (pol->icv_len < 8 || pol->icv_len > 16)
		AT(vc, at, "icv-range", NULL, "icv_len %u is out of range; the kernel accepts 8..16",
		   pol->icv_len);
	at = pol->pos_window.line ? pol->pos_window : pol->pos;
	if (pol->replay_protect && !pol->pos_window.line)
		AT(vc, pol->pos, "replay-window", "add 'replay_window: 0' for strict ordering",
		   "policy '%s' turns replay_protect on without a replay_window; the kernel needs "
		   "both",
		   pol->name);
	if (!pol->replay_protect && pol->pos_window.line && pol->replay_window)
		WARN(vc, at, "replay-window", NULL,
		     "replay_window %" PRIu32 " has no effect while replay_protect is false",
		     pol->replay_window);
	if (xpn && pol->replay_window > XPN_MAX_WINDOW)
		AT(vc, at, "window-range", NULL,
		   "replay_window %" PRIu32 " is too large for %s; expected at most %u (2^30-1)",
		   pol->replay_window, fctl_cipher_name(pol->cipher), XPN_MAX_WINDOW);
	at = pol->pos_send_sci.line ? pol->pos_send_sci : pol->pos;
	if (pol->send_sci && pol->scb)
		AT(vc, at, "sci-flags", NULL,
		   "send_sci and scb are both true; the kernel accepts at most one of send_sci, "
		   "end_station, scb");
	if (pol->send_sci && pol->end_station)
		AT(vc, at, "sci-flags", NULL,
		   "send_sci and end_station are both true; the kernel accepts at most one of "
		   "send_sci, end_station, scb");
	if (pol->scb && pol->end_station)
		AT(vc, pol->pos, "sci-flags", NULL,
		   "scb and end_station are both true; the kernel accepts at most one of them");
	check_weak(vc, pol);
	if (pol->overlap_s >= pol->cryptoperiod_s)
		AT(vc, pol->pos_overlap.line ? pol->pos_overlap : pol->pos, "overlap", NULL,
		   "overlap %" PRIu64 "s is not shorter than cryptoperiod %" PRIu64 "s",
		   pol->overlap_s, pol->cryptoperiod_s);
	if (pol->has_pn_rekey_threshold && !xpn && pol->pn_rekey_threshold > UINT32_MAX)
		AT(vc, pol->pos_pn_thr, "pn-threshold", "use a gcm-aes-xpn cipher for 64-bit PNs",
		   "pn_rekey_threshold 0x%" PRIx64 " exceeds the 32-bit PN space of %s",
		   pol->pn_rekey_threshold, fctl_cipher_name(pol->cipher));
	if (pol->has_key && pol->has_mka)
		AT(vc, pol->mka.pos, "key-and-mka", "keep 'key' for static SAKs or 'mka' for "
		   "key agreement, not both",
		   "policy '%s' has both 'key' and 'mka'; a policy has exactly one of them",
		   pol->name);
	else if (!pol->has_key && !pol->has_mka)
		AT(vc, pol->pos_body.line ? pol->pos_body : pol->pos, "missing-key", "add 'key: { backend: file, id: keys/NAME.key }' or "
		   "an 'mka' block",
		   "missing required key 'key' (or 'mka') in macsec policy '%s'", pol->name);
	if (pol->has_key)
		check_keyref(vc, &pol->key, pol->key_pos, pol, fctl_cipher_key_len(pol->cipher), 0);
	if (pol->has_mka)
		check_mka(vc, pol);
}

int fctl_prof_cmp_name_idx(const void *a, const void *b)
{
	const struct name_idx *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct name_idx *fctl_prof_host_index(const struct fctl_profile *p, size_t *n)
{
	struct name_idx *v = calloc(p->n_hosts ? p->n_hosts : 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < p->n_hosts; i++)
		if (p->hosts[i].name)
			v[(*n)++] = (struct name_idx){ p->hosts[i].name, i };
	if (v && *n > 1)
		qsort(v, *n, sizeof(*v), fctl_prof_cmp_name_idx);
	return v;
}

const struct fctl_host *fctl_prof_find_host(const struct fctl_profile *p,
					    const struct name_idx *hx, size_t nhx,
					    const char *name)
{
	size_t lo = 0, hi = nhx;

	if (!hx)
		return fctl_profile_find_host(p, name);
	while (lo < hi) { /* lower bound */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(hx[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nhx && strcmp(hx[lo].name, name) == 0 ? &p->hosts[hx[lo].idx] : NULL;
}

static void check_hosts(struct vctx *vc, const struct name_idx *hx, size_t nhx)
{
	struct fctl_profile *p = vc->p;

	for (size_t i = 1, first = 0; hx && i < nhx; i++) {
		if (strcmp(hx[i].name, hx[first].name) != 0) {
			first = i;
			continue;
		}
		AT(vc, p->hosts[hx[i].idx].pos, "duplicate", NULL,
		   "duplicate host '%s' (first at line %u)", hx[i].name,
		   p->hosts[hx[first].idx].pos.line);
	}
	for (size_t i = 0; i < p->n_hosts; i++) {
		const struct fctl_host *h = &p->hosts[i];

		if (!h->name)
			continue;
		for (size_t a = 0; a < h->n_ports; a++) {
			const struct fctl_port *pa = &h->ports[a];

			for (size_t b = 0; b < a; b++)
				if (pa->name && h->ports[b].name &&
				    strcmp(pa->name, h->ports[b].name) == 0)
					AT(vc, pa->pos, "duplicate", NULL,
					   "duplicate port '%s' on host '%s'", pa->name, h->name);
		}
	}
}

/* Duplicate link names, reported at the later link. */
static void check_link_names(struct vctx *vc)
{
	struct fctl_profile *p = vc->p;
	struct name_idx *v = calloc(p->n_links ? p->n_links : 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return;
	for (size_t i = 0; i < p->n_links; i++)
		if (p->links[i].name)
			v[n++] = (struct name_idx){ p->links[i].name, i };
	if (n > 1)
		qsort(v, n, sizeof(*v), fctl_prof_cmp_name_idx);
	for (size_t i = 1; i < n; i++)
		if (strcmp(v[i].name, v[i - 1].name) == 0)
			AT(vc, p->links[v[i].idx].pos, "duplicate", NULL,
			   "duplicate link name '%s'", v[i].name);
	free(v);
}

static const char **host_names(const struct fctl_profile *p, size_t *n)
{
	const char **v = calloc(p->n_hosts ? p->n_hosts : 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < p->n_hosts; i++)
		if (p->hosts[i].name)
			v[(*n)++] = p->hosts[i].name;
	return v;
}

static void resolve_end(struct vctx *vc, struct fctl_link_end *e, const char **hn,
			size_t nhn, const struct name_idx *hx, size_t nhx)
{
	const struct fctl_host *h;
	char hint[96];
	const char *g;

	if (!e->host || !e->port)
		return;
	h = fctl_prof_find_host(vc->p, hx, nhx, e->host);
	if (!h) {
		g = fctl_did_you_mean(e->host, hn, nhn);
		if (g)
			snprintf(hint, sizeof(hint), "did you mean '%s'?", g);
		AT(vc, e->pos, "unknown-host", g ? hint : NULL,
		   "link end refers to host '%s', which is not in 'hosts'", e->host);
		return;
	}
	e->host_idx = h - vc->p->hosts;
	for (size_t i = 0; i < h->n_ports; i++) {
		if (h->ports[i].name && strcmp(h->ports[i].name, e->port) == 0) {
			e->port_idx = (long)i;
			return;
		}
	}
	{
		const char **pn = calloc(h->n_ports ? h->n_ports : 1, sizeof(*pn));
		size_t n = 0;

		for (size_t i = 0; pn && i < h->n_ports; i++)
			if (h->ports[i].name)
				pn[n++] = h->ports[i].name;
		g = pn ? fctl_did_you_mean(e->port, pn, n) : NULL;
		if (g)
			snprintf(hint, sizeof(hint), "did you mean '%s'?", g);
		AT(vc, e->pos, "unknown-port", g ? hint : NULL,
		   "link end refers to port '%s', which host '%s' does not list", e->port, e->host);
		free(pn);
	}
}

static const struct fctl_port *end_port(const struct fctl_profile *p, const struct fctl_link_end *e)
{
	if (e->host_idx < 0 || e->port_idx < 0)
		return NULL;
	return &p->hosts[e->host_idx].ports[e->port_idx];
}

static bool end_mac(const struct fctl_profile *p, const struct fctl_link_end *e, uint8_t mac[6])
{
	const struct fctl_port *pt = end_port(p, e);

	if (pt && pt->has_mac) {
		memcpy(mac, pt->mac, 6);
		return true;
	}
	if (e->has_peer_mac) {
		memcpy(mac, e->peer_mac, 6);
		return true;
	}
	return false;
}

static bool valid_cidr(const char *s)
{
	char addr[64];
	const char *slash = strchr(s, '/');
	unsigned char buf[16];
	uint64_t plen;
	int fam;

	if (!slash || (size_t)(slash - s) >= sizeof(addr))
		return false;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	fam = strchr(addr, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(fam, addr, buf) != 1)
		return false;
	if (fctl_parse_u64(slash + 1, &plen) < 0 || (slash[1] == '0' && slash[2]))
		return false;
	return plen <= (fam == AF_INET ? 32u : 128u);
}

struct sci_seen {
	uint64_t sci;
	uint16_t vid;
	struct fctl_pos pos;
	bool has_key; /* a static key (not MKA): its KEYID */
	uint8_t keyid[FCTL_KEYID_LEN];
	struct fctl_pos vpos; /* the VLAN's */
};

struct ifn_seen {
	long host;
	char name[FCTL_IFNAMSIZ + 8];
	struct fctl_pos pos;
};

static int cmp_sci(const void *a, const void *b)
{
	const struct sci_seen *x = a, *y = b;

	if (x->vid != y->vid)
		return x->vid < y->vid ? -1 : 1;
	if (x->sci != y->sci)
		return x->sci < y->sci ? -1 : 1;
	return x->pos.line < y->pos.line ? -1 : x->pos.line > y->pos.line;
}

/* by SCI, then key: the SecYs that would send under one key with one SCI sit together */
static int cmp_sci_key(const void *a, const void *b)
{
	const struct sci_seen *x = a, *y = b;
	int c;

	if (x->sci != y->sci)
		return x->sci < y->sci ? -1 : 1;
	if (x->has_key != y->has_key)
		return x->has_key ? 1 : -1;
	c = memcmp(x->keyid, y->keyid, FCTL_KEYID_LEN);
	if (c)
		return c;
	if (x->vid != y->vid)
		return x->vid < y->vid ? -1 : 1;
	return x->pos.line < y->pos.line ? -1 : x->pos.line > y->pos.line;
}

/* One key, one SCI, two VLANs (two SecYs on one port's VLANs, whose MAC they share): both
 * would send from PN 1 under the same key and SCI, so AES-GCM nonces repeat across them
 * (docs/keys-and-pn.md). */
static void check_sci_keys(struct vctx *vc, struct sci_seen *scis, size_t n)
{
	if (n > 1)
		qsort(scis, n, sizeof(*scis), cmp_sci_key);
	for (size_t i = 1; i < n; i++) {
		const struct sci_seen *x = &scis[i - 1], *y = &scis[i];
		char s[24];

		if (!y->has_key || !x->has_key || x->sci != y->sci || x->vid == y->vid ||
		    memcmp(x->keyid, y->keyid, FCTL_KEYID_LEN) != 0)
			continue;
		fctl_sci_format(y->sci, s);
		AT(vc, y->vpos, "nonce-reuse", "give each VLAN its own key, or its own SCI port (a "
		   "second policy with another 'port')",
		   "vlan %u and vlan %u (line %u) would both send under one key with SCI %s: "
		   "AES-GCM nonces (SCI and packet number) would repeat across the two SecYs",
		   y->vid, x->vid, x->vpos.line, s);
	}
}

static int cmp_ifn(const void *a, const void *b)
{
	const struct ifn_seen *x = a, *y = b;
	int c;

	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->pos.line < y->pos.line ? -1 : x->pos.line > y->pos.line;
}

struct port_use {
	long host, port;
	struct fctl_pos pos;
};

static int cmp_use(const void *a, const void *b)
{
	const struct port_use *x = a, *y = b;

	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return x->pos.line < y->pos.line ? -1 : x->pos.line > y->pos.line;
}

static void unknown_policy(struct vctx *vc, const char *name, struct fctl_pos pos)
{
	const struct fctl_profile *p = vc->p;
	const char **names = calloc(p->n_policies + 1, sizeof(*names));
	const char *g = NULL;
	char hint[96];

	for (size_t i = 0; names && i < p->n_policies; i++)
		names[i] = p->policies[i].name ? p->policies[i].name : "";
	if (names)
		g = fctl_did_you_mean(name, names, p->n_policies);
	if (g)
		snprintf(hint, sizeof(hint), "did you mean '%s'?", g);
	AT(vc, pos, "unknown-policy", g ? hint : NULL,
	   "macsec policy '%s' is not defined under 'macsec'", name);
	free(names);
}

/* Packet-number room of a 32-bit-PN cipher on a fast port (docs/keys-and-pn.md): at
 * 40 Gb/s and above, 802.1AEbw's reason for XPN, the PNs up to the rekey threshold last
 * minutes or seconds at line rate, and the quarter left after it must cover keymgr's
 * poll and a whole rotation. A warning: the traffic may never come near line rate. */
#define PN_FAST_MBPS 40000u
#define WIRE_BYTES_MIN 84u   /* a 64-byte frame, its preamble and gap */
#define WIRE_BYTES_1500 1538u /* a 1,500-byte payload's frame, preamble and gap */

static void fmt_secs(char *out, size_t n, double s)
{
	if (s < 120)
		snprintf(out, n, "%.1f s", s);
	else
		snprintf(out, n, "%.0f min", s / 60);
}

static void check_pn_room(struct vctx *vc, const struct fctl_vlan *v,
			  const struct fctl_macsec_policy *pol, const struct fctl_link_end *end,
			  const struct fctl_port *pt)
{
	double thr = pol->has_pn_rekey_threshold ? (double)pol->pn_rekey_threshold
						 : (double)0xC0000000u;
	double bps = (double)pt->speed_mbps * 1e6;
	char t_min[24], t_1500[24], rest[24];

	if (pol->has_mka || fctl_cipher_is_xpn(pol->cipher) || pt->speed_mbps < PN_FAST_MBPS)
		return;
	fmt_secs(t_min, sizeof(t_min), thr / (bps / (WIRE_BYTES_MIN * 8)));
	fmt_secs(t_1500, sizeof(t_1500), thr / (bps / (WIRE_BYTES_1500 * 8)));
	fmt_secs(rest, sizeof(rest), ((double)UINT32_MAX + 1 - thr) / (bps / (WIRE_BYTES_MIN * 8)));
	WARN(vc, v->pos, "pn-exhaustion", "use gcm-aes-xpn-128 or gcm-aes-xpn-256 (64-bit PNs)",
	     "vlan %u uses %s (32-bit packet numbers) on %s:%s at %" PRIu64 " Mb/s: at line "
	     "rate its rekey threshold comes in %s with 64-byte frames (%s with 1,500-byte), "
	     "and the PNs left after it last %s",
	     v->id, fctl_cipher_name(pol->cipher), end->host, end->port, pt->speed_mbps, t_min,
	     t_1500, rest);
}

static void check_vlan(struct vctx *vc, const struct fctl_plink *l, const struct fctl_vlan *v,
		       struct sci_seen **scis, size_t *n_sci, size_t *cap_sci,
		       struct ifn_seen **ifns, size_t *n_ifn, size_t *cap_ifn)
{
	const struct fctl_profile *p = vc->p;
	const struct fctl_macsec_policy *pol = NULL;
	char vif[FCTL_IFNAMSIZ + 8], mif[FCTL_IFNAMSIZ + 8];
	uint32_t overhead = 0;
	bool dup = false;

	for (const struct fctl_vlan *w = l->vlans; w < v && !dup; w++) {
		if (w->id && w->id == v->id) {
			AT(vc, v->pos, "duplicate-vlan", NULL,
			   "vlan %u appears twice on link '%s' (first at line %u): one parent port "
			   "carries each VLAN once",
			   v->id, l->name ? l->name : "?", w->pos.line);
			dup = true;
		}
	}
	if (v->macsec) {
		pol = fctl_profile_find_policy(p, v->macsec);
		if (!pol && v->pos_macsec.line == l->pos_macsec.line &&
		    v->pos_macsec.col == l->pos_macsec.col) {
			/* inherited from the link: reported once, at the link */
		} else if (!pol) {
			unknown_policy(vc, v->macsec, v->pos_macsec);
		} else {
			overhead = fctl_macsec_overhead(pol->icv_len);
		}
	}
	for (int e = 0; e < 2; e++) {
		const struct fctl_link_end *end = &l->end[e];
		const struct fctl_port *pt = end_port(p, end);

		if (!pt)
			continue;
		if (pol)
			check_pn_room(vc, v, pol, end, pt);
		if (v->has_mtu && v->mtu + overhead > pt->mtu)
			AT(vc, v->pos_mtu, "mtu", NULL,
			   "vlan %u mtu %" PRIu32 " plus MACsec overhead %" PRIu32 " = %" PRIu32
			   " exceeds the mtu %" PRIu32 " of port %s:%s",
			   v->id, v->mtu, overhead, v->mtu + overhead, pt->mtu, end->host, end->port);
		else if (!v->has_mtu && pol && pt->mtu < overhead + 1280)
			WARN(vc, v->pos, "mtu", NULL,
			     "vlan %u leaves %" PRIu32 " bytes on %s:%s after MACsec overhead; IPv6 "
			     "needs 1280",
			     v->id, pt->mtu - overhead, end->host, end->port);
		fctl_vlan_ifnames(v, pt->name, vif, mif);
		if (strlen(vif) >= FCTL_IFNAMSIZ)
			AT(vc, v->pos, "ifname", "set ifname.vlan",
			   "interface name '%s' is longer than 15 characters", vif);
		if (pol && strlen(mif) >= FCTL_IFNAMSIZ)
			AT(vc, v->pos, "ifname", "set ifname.macsec",
			   "interface name '%s' is longer than 15 characters", mif);
		if (!dup) { /* a duplicate VLAN's names collide by construction: said above */
			struct ifn_seen *s = fctl_array_grow(ifns, n_ifn, cap_ifn, sizeof(*s));

			if (s) {
				s->host = end->host_idx;
				snprintf(s->name, sizeof(s->name), "%s", vif);
				s->pos = v->pos;
			}
			if (pol && (s = fctl_array_grow(ifns, n_ifn, cap_ifn, sizeof(*s)))) {
				s->host = end->host_idx;
				snprintf(s->name, sizeof(s->name), "%s", mif);
				s->pos = v->pos;
			}
		}
		if (pol) {
			uint8_t mac[6];

			if (!end_mac(p, end, mac)) {
				AT(vc, end->pos, "missing-mac", NULL,
				   "port %s:%s carries MACsec but has no MAC address; set 'mac' on "
				   "the port (the SCI is derived from it)",
				   end->host, end->port);
			} else {
				struct sci_seen *s = fctl_array_grow(scis, n_sci, cap_sci, sizeof(*s));

				if (s) {
					s->sci = fctl_sci_make(mac, pol->port);
					s->vid = v->id;
					s->pos = end->pos;
					s->vpos = v->pos;
					s->has_key = !pol->has_mka && pol->key.backend;
					if (s->has_key)
						fctl_keyid_from_ref(&pol->key, s->keyid);
				}
			}
		}
	}
	for (size_t i = 0; i < v->n_addrs; i++) {
		const struct fctl_addr_entry *a = &v->addrs[i];

		if (a->host && (!l->end[0].host || strcmp(a->host, l->end[0].host)) &&
		    (!l->end[1].host || strcmp(a->host, l->end[1].host)))
			AT(vc, a->pos, "unknown-host", NULL,
			   "address for host '%s', which is not an end of this link", a->host);
		if (a->cidr && !valid_cidr(a->cidr))
			AT(vc, a->pos, "bad-address", NULL,
			   "address \"%s\" is not ADDRESS/PREFIX (e.g. 10.100.0.1/24 or fd00::1/64)",
			   a->cidr);
	}
}

void fctl_profile_validate(struct fctl_profile *p, struct fctl_diags *d)
{
	struct vctx vc = { p, d };
	struct sci_seen *scis = NULL;
	struct ifn_seen *ifns = NULL;
	struct port_use *uses = NULL;
	size_t n_sci = 0, cap_sci = 0, n_ifn = 0, cap_ifn = 0, n_use = 0, cap_use = 0, nhn, nhx;
	const char **hn = host_names(p, &nhn);
	struct name_idx *hx = fctl_prof_host_index(p, &nhx);

	check_hosts(&vc, hx, nhx);
	check_link_names(&vc);
	for (size_t i = 0; i < p->n_policies; i++)
		check_policy(&vc, &p->policies[i]);

	for (size_t i = 0; i < p->n_links; i++) {
		struct fctl_plink *l = &p->links[i];

		for (int e = 0; e < 2; e++) {
			resolve_end(&vc, &l->end[e], hn, nhn, hx, nhx);
			if (l->end[e].port_idx >= 0) {
				struct port_use *u = fctl_array_grow(&uses, &n_use, &cap_use,
								     sizeof(*u));
				if (u) {
					u->host = l->end[e].host_idx;
					u->port = l->end[e].port_idx;
					u->pos = l->end[e].pos;
				}
			}
		}
		if (l->end[0].host_idx >= 0 && l->end[0].host_idx == l->end[1].host_idx)
			AT(&vc, l->end[1].pos, "self-link", NULL,
			   "both ends of link '%s' are on host '%s'; a link joins two hosts",
			   l->name ? l->name : "?", l->end[0].host);
		/* both ends agree: a MAC given on a link end must match the port's own */
		for (int e = 0; e < 2; e++) {
			const struct fctl_port *pt = end_port(p, &l->end[e]);
			char a[18], b[18];

			if (pt && pt->has_mac && l->end[e].has_peer_mac &&
			    memcmp(pt->mac, l->end[e].peer_mac, 6) != 0) {
				fctl_format_mac(l->end[e].peer_mac, a);
				fctl_format_mac(pt->mac, b);
				AT(&vc, l->end[e].pos_peer_mac, "mac-mismatch", NULL,
				   "link end %s:%s says mac %s but the port lists %s", l->end[e].host,
				   l->end[e].port, a, b);
			}
		}
		if (l->macsec && !fctl_profile_find_policy(p, l->macsec))
			unknown_policy(&vc, l->macsec, l->pos_macsec);
		for (size_t j = 0; j < l->n_vlans; j++)
			check_vlan(&vc, l, &l->vlans[j], &scis, &n_sci, &cap_sci, &ifns, &n_ifn,
				   &cap_ifn);
	}

	/* each port faces one peer */
	if (n_use > 1)
		qsort(uses, n_use, sizeof(*uses), cmp_use);
	for (size_t i = 1; i < n_use; i++)
		if (uses[i].host == uses[i - 1].host && uses[i].port == uses[i - 1].port)
			AT(&vc, uses[i].pos, "port-reused", NULL,
			   "port %s:%s is already an end of the link at line %u; a port faces one "
			   "peer",
			   p->hosts[uses[i].host].name, p->hosts[uses[i].host].ports[uses[i].port].name,
			   uses[i - 1].pos.line);
	/* SCIs are unique within one VLAN (one secure connectivity association) */
	if (n_sci > 1)
		qsort(scis, n_sci, sizeof(*scis), cmp_sci);
	for (size_t i = 1; i < n_sci; i++) {
		char s[24];

		if (scis[i].vid != scis[i - 1].vid || scis[i].sci != scis[i - 1].sci)
			continue;
		fctl_sci_format(scis[i].sci, s);
		AT(&vc, scis[i].pos, "duplicate-sci", "give every port its own MAC",
		   "SCI %s on vlan %u is already used at line %u", s, scis[i].vid,
		   scis[i - 1].pos.line);
	}
	check_sci_keys(&vc, scis, n_sci);
	fctl_profile_offload_check(p, d);
	/* interface names are unique per host */
	if (n_ifn > 1)
		qsort(ifns, n_ifn, sizeof(*ifns), cmp_ifn);
	for (size_t i = 1; i < n_ifn; i++)
		if (ifns[i].host == ifns[i - 1].host && strcmp(ifns[i].name, ifns[i - 1].name) == 0)
			AT(&vc, ifns[i].pos, "duplicate-ifname", "set ifname.vlan / ifname.macsec",
			   "interface '%s' on host '%s' is also made by the vlan at line %u",
			   ifns[i].name, p->hosts[ifns[i].host].name, ifns[i - 1].pos.line);

	free(scis);
	free(ifns);
	free(uses);
	free(hx);
	free(hn);
	fctl_diags_sort(d);
}
