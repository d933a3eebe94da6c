// SPDX-License-Identifier: MIT
/*
 * The packet-number ledger (docs/keys-and-pn.md): no (SAK, SCI, PN) is used twice.
 *
 * STATE_DIR/sa-ledger remembers every key the engine put into an SA, per direction and
 * SCI, by a hash of its bytes (and its KEYID): either "live" (in the kernel, or it was;
 * how far its packet number went is not known) or "retired" at the next PN it may use.
 * An SA is added inactive (no frame uses it: its PN stays), starting where the retired
 * entry says (never below), then written durably as live, then activated; an entry that
 * is live, yet its SA is gone (a
 * reboot, a crash, a hand-made change), means the key's packet numbers are unknown: the
 * SA is withheld (the SecY stays up, protecting, with no SA of that key: no cleartext,
 * no reuse) until a new key comes. Before an SA goes (its delete, or its SecY's or a
 * lower link's), it is deactivated, so its PN stops, read back and recorded as retired.
 *
 * The file is append-only text, one event per line, fdatasync'd per event (the last one
 * for a key and SCI wins); a line cut short by a crash at the end is ignored, and cut off
 * before the next append.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "fctl/keys.h"
#include "fctl/nl.h"
#include "fctl/sa_ledger.h"
#include "fctl/util.h"

#include "engine_int.h"

#define LEDGER_HEAD FCTL_SA_LEDGER_HEAD
#define HASH_LEN FCTL_SA_LEDGER_HASH_LEN

_Static_assert(FCTL_KEYID_LEN == FCTL_SA_LEDGER_KEYID_LEN, "the ledger's KEYID is the model's");

struct pn_entry {
	bool tx;
	bool has_hash;
	bool retired;
	uint8_t hash[HASH_LEN];
	uint8_t keyid[FCTL_KEYID_LEN];
	uint64_t sci;
	uint64_t pn; /* retired: the next PN the key may use on this SCI */
};

struct fctl_engi_pn {
	struct pn_entry *v;
	size_t n, cap;
	int fd;
	off_t valid; /* the file's bytes up to its last whole line */
	char path[PATH_MAX];
};

/* SHA-256("fabricctl sa-ledger 1" NUL key)[0..15]: names a key, reveals nothing of it */
static int key_hash(const struct fctl_key *k, uint8_t out[HASH_LEN])
{
	static const char label[] = "fabricctl sa-ledger 1";
	uint8_t md[32];
	unsigned int len = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) &&
		 EVP_DigestUpdate(c, label, sizeof(label)) &&
		 EVP_DigestUpdate(c, k->bytes, k->len) && EVP_DigestFinal_ex(c, md, &len);

	EVP_MD_CTX_free(c);
	if (!ok || len != sizeof(md))
		return -EIO;
	memcpy(out, md, HASH_LEN);
	return 0;
}

/* the entry of (tx, sci) with this key: by hash, else an entry known by KEYID only */
static struct pn_entry *find(struct fctl_engi_pn *l, bool tx, uint64_t sci, const uint8_t *hash,
			     const uint8_t *keyid)
{
	for (size_t i = 0; hash && i < l->n; i++)
		if (l->v[i].tx == tx && l->v[i].sci == sci && l->v[i].has_hash &&
		    memcmp(l->v[i].hash, hash, HASH_LEN) == 0)
			return &l->v[i];
	for (size_t i = 0; keyid && i < l->n; i++)
		if (l->v[i].tx == tx && l->v[i].sci == sci &&
		    memcmp(l->v[i].keyid, keyid, FCTL_KEYID_LEN) == 0 && (!hash || !l->v[i].has_hash))
			return &l->v[i];
	return NULL;
}

/* the entry an SA of this KEYID leaves: a live one first (a key file rewritten under the
 * same reference has the KEYID of the key it replaced) */
static const struct pn_entry *find_retiring(const struct fctl_engi_pn *l, bool tx, uint64_t sci,
					    const uint8_t *keyid)
{
	const struct pn_entry *any = NULL;

	for (size_t i = 0; i < l->n; i++) {
		const struct pn_entry *x = &l->v[i];

		if (x->tx != tx || x->sci != sci || memcmp(x->keyid, keyid, FCTL_KEYID_LEN) != 0)
			continue;
		if (!x->retired)
			return x;
		any = any ? any : x;
	}
	return any;
}

static struct pn_entry *upsert(struct fctl_engi_pn *l, const struct pn_entry *ev)
{
	struct pn_entry *x = find(l, ev->tx, ev->sci, ev->has_hash ? ev->hash : NULL, ev->keyid);

	if (!x) {
		x = fctl_array_grow(&l->v, &l->n, &l->cap, sizeof(*x));
		if (!x)
			return NULL;
	}
	*x = *ev;
	return x;
}

/* "live|retired tx|rx HASH|- KEYID SCI PN": 0, or -EINVAL (fctl/sa_ledger.h) */
static int parse_line(char *s, struct pn_entry *ev)
{
	struct fctl_sa_ledger_event x;
	int r = fctl_sa_ledger_parse(s, &x);

	memset(ev, 0, sizeof(*ev));
	if (r < 0)
		return r;
	*ev = (struct pn_entry){ .tx = x.tx, .has_hash = x.has_hash, .retired = x.retired,
				 .sci = x.sci, .pn = x.pn };
	memcpy(ev->hash, x.hash, HASH_LEN);
	memcpy(ev->keyid, x.keyid, FCTL_KEYID_LEN);
	return 0;
}

static int load(struct fctl_engi_pn *l, char *err, size_t errlen)
{
	struct fctl_buf b = { 0 };
	char *p, *nl;
	size_t line = 1;
	int r = fctl_file_read(l->path, &b);

	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		fctl_set_err(err, errlen, "cannot read '%s': %s", l->path, strerror(-r));
		return r;
	}
	p = (char *)b.data;
	if (b.len < sizeof(LEDGER_HEAD) - 1 && memcmp(p, LEDGER_HEAD, b.len) == 0)
		goto out; /* its first write was cut short: nothing recorded yet (valid 0) */
	if (b.len < sizeof(LEDGER_HEAD) - 1 || memcmp(p, LEDGER_HEAD, sizeof(LEDGER_HEAD) - 1) != 0) {
		r = -EBADMSG;
		fctl_set_err(err, errlen, "'%s' is not a packet-number ledger", l->path);
		goto out;
	}
	p += sizeof(LEDGER_HEAD) - 1;
	/* a last line without its newline is an event a crash cut short: it never counted */
	while (r == 0 && (nl = memchr(p, '\n', b.len - (size_t)(p - (char *)b.data)))) {
		struct pn_entry ev;

		*nl = '\0';
		line++;
		if (parse_line(p, &ev) < 0) {
			r = -EBADMSG;
			fctl_set_err(err, errlen, "%s:%zu: not a ledger event", l->path, line);
		} else if (!upsert(l, &ev)) {
			r = -ENOMEM;
		}
		p = nl + 1;
	}
	l->valid = (off_t)(p - (char *)b.data);
out:
	fctl_buf_release(&b);
	return r;
}

static void pn_free(struct fctl_engi_pn *l);

/* Reads the file again when it is not the length this process last saw: the CLI's applies
 * and the agent's SA requests keep one ledger per host. */
static int refresh(struct fctl_engi_pn *l, char *err, size_t errlen)
{
	struct stat st;

	if (stat(l->path, &st) < 0 || st.st_size == l->valid)
		return 0;
	l->n = 0;
	l->valid = 0;
	return load(l, err, errlen);
}

/* The ledger of k's state directory, loaded once per session; -EPERM with err when no
 * ledger is attached (an SA add without one would be unaccounted for). */
static int ledger(struct fctl_engine_kernel *k, struct fctl_engi_pn **out, char *err,
		  size_t errlen)
{
	struct fctl_engi_pn *l = k->pn;
	int r;

	if (l) { /* another process (an apply, the agent) may have appended since */
		r = refresh(l, err, errlen);
		if (r < 0)
			return r;
	} else {
		if (!k->ledger_dir[0]) {
			fctl_set_err(err, errlen, "no packet-number ledger: an SA is never added "
				     "without one (docs/keys-and-pn.md)");
			return -EPERM;
		}
		l = fctl_calloc(1, sizeof(*l));
		if (!l)
			return -ENOMEM;
		l->fd = -1;
		snprintf(l->path, sizeof(l->path), "%s/sa-ledger", k->ledger_dir);
		r = load(l, err, errlen);
		if (r < 0) {
			pn_free(l);
			return r;
		}
		k->pn = l;
	}
	k->pn_touched = true;
	*out = l;
	return 0;
}

static void pn_free(struct fctl_engi_pn *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	free(l->v);
	free(l);
}

/* Appends the events durably (one write, one fdatasync), then takes them in. */
static int record(struct fctl_engi_pn *l, const struct pn_entry *ev, size_t n, char *err,
		  size_t errlen)
{
	struct fctl_buf b = { 0 };
	bool fresh = false;
	struct stat st;
	int r = 0;

	if (l->fd < 0) {
		fresh = access(l->path, F_OK) != 0;
		l->fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (l->fd < 0)
			r = -errno;
	}
	/* one writer at a time; what others appended is read first, and only a line a crash
	 * cut short goes before anything is appended after it */
	if (r == 0 && flock(l->fd, LOCK_EX) < 0)
		r = -errno;
	if (r == 0)
		r = refresh(l, err, errlen);
	if (r == 0 && fstat(l->fd, &st) == 0 && st.st_size > l->valid &&
	    ftruncate(l->fd, l->valid) < 0)
		r = -errno;
	if (r == 0 && l->valid == 0)
		r = fctl_buf_puts(&b, LEDGER_HEAD);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct fctl_sa_ledger_event x = { .tx = ev[i].tx, .has_hash = ev[i].has_hash,
						  .retired = ev[i].retired, .sci = ev[i].sci,
						  .pn = ev[i].pn };

		memcpy(x.hash, ev[i].hash, HASH_LEN);
		memcpy(x.keyid, ev[i].keyid, FCTL_KEYID_LEN);
		r = fctl_sa_ledger_format(&b, &x);
	}
	if (r == 0)
		r = fctl_write_all(l->fd, b.data, b.len);
	if (r == 0)
		l->valid += (off_t)b.len;
	if (r == 0 && fdatasync(l->fd) < 0)
		r = -errno;
	if (r == 0 && fresh)
		r = fctl_fsync_parent(l->path);
	if (l->fd >= 0)
		flock(l->fd, LOCK_UN);
	fctl_buf_release(&b);
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!upsert(l, &ev[i]))
			r = -ENOMEM;
	if (r < 0)
		fctl_set_err(err, errlen, "cannot record in '%s': %s", l->path, strerror(-r));
	return r;
}

/* The SCI of SecY ifname, as the kernel has it. */
static int secy_sci(struct fctl_engine_kernel *k, const char *ifname, uint64_t *sci)
{
	const char *names[1] = { ifname };
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *l;
	int r = k->ops->read_state(k->sess, "local", names, 1, &hs);

	l = r == 0 ? fctl_host_state_find(hs, ifname) : NULL;
	if (r == 0 && (!l || l->kind != FCTL_LINK_MACSEC))
		r = -ENODEV;
	if (r == 0)
		*sci = l->macsec.sci;
	fctl_host_state_free(hs);
	return r;
}

int fctl_engi_pn_admit(struct fctl_engine_kernel *k, struct fctl_op *op,
		       const struct fctl_key *key, char *why, size_t whylen)
{
	bool tx = op->kind == FCTL_OP_TXSA_ADD, xpn = op->sa.has_salt; /* a salt: XPN */
	/* room to run: a key that resumes past 3/4 of its PN space is rotated instead */
	uint64_t limit = xpn ? UINT64_MAX / 4 * 3 : (uint64_t)UINT32_MAX / 4 * 3;
	struct pn_entry ev = { .tx = tx, .has_hash = true, .sci = op->sci, .pn = op->sa.pn };
	struct fctl_engi_pn *l;
	const struct pn_entry *x;
	char sci[24], kid[2 * FCTL_KEYID_LEN + 1];
	int r;

	if (!key || (op->kind != FCTL_OP_TXSA_ADD && op->kind != FCTL_OP_RXSA_ADD))
		return 0;
	if (tx && !op->sci) { /* a TX SA op names no SCI (the agent's do not): the SecY's */
		r = secy_sci(k, op->ifname, &op->sci);
		if (r < 0) {
			snprintf(why, whylen, "cannot read the SCI of %s: %s", op->ifname, strerror(-r));
			return r;
		}
		ev.sci = op->sci;
	}
	r = ledger(k, &l, why, whylen);
	if (r == 0)
		r = key_hash(key, ev.hash);
	if (r < 0)
		return r;
	memcpy(ev.keyid, op->sa.keyid, FCTL_KEYID_LEN);
	x = find(l, tx, op->sci, ev.hash, op->sa.keyid);
	fctl_sci_format(op->sci, sci);
	fctl_format_hex(op->sa.keyid, 8, kid);
	if (x && !x->retired) {
		snprintf(why, whylen, "the key (KEYID %s...) was in %s SA for SCI %s before and how "
			 "far its packet numbers went is not known (a reboot, a crash or a hand-made "
			 "change removed it): it is never installed again; bring the link back with a "
			 "new key on both ends (docs/keys-and-pn.md)", kid, tx ? "a TX" : "an RX", sci);
		return 1;
	}
	if (x && x->pn > ev.pn)
		ev.pn = x->pn;
	if (ev.pn > limit) {
		snprintf(why, whylen, "the key (KEYID %s...) would continue at PN %" PRIu64 " on SCI %s, "
			 "past 3/4 of its packet numbers: rotate to a new key (docs/keys-and-pn.md)",
			 kid, ev.pn, sci);
		return 1;
	}
	op->sa.pn = ev.pn;
	return 0;
}

int fctl_engi_pn_live(struct fctl_engine_kernel *k, const struct fctl_op *op,
		      const struct fctl_key *key, char *err, size_t errlen)
{
	struct pn_entry ev = { .tx = op->kind == FCTL_OP_TXSA_ADD, .has_hash = true, .sci = op->sci,
			       .pn = op->sa.pn };
	struct fctl_engi_pn *l;
	int r = ledger(k, &l, err, errlen);

	if (r == 0)
		r = key_hash(key, ev.hash);
	if (r < 0)
		return r;
	memcpy(ev.keyid, op->sa.keyid, FCTL_KEYID_LEN);
	return record(l, &ev, 1, err, errlen);
}

int fctl_engi_pn_live_many(struct fctl_engine_kernel *k, const struct fctl_op *const *ops,
			   const struct fctl_key *const *keys, size_t n, char *err, size_t errlen)
{
	struct pn_entry *ev;
	struct fctl_engi_pn *l;
	int r = ledger(k, &l, err, errlen);

	if (r < 0 || n == 0)
		return r;
	ev = calloc(n, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	for (size_t i = 0; i < n && r == 0; i++) {
		ev[i] = (struct pn_entry){ .tx = ops[i]->kind == FCTL_OP_TXSA_ADD, .has_hash = true,
					   .sci = ops[i]->sci, .pn = ops[i]->sa.pn };
		r = key_hash(keys[i], ev[i].hash);
		memcpy(ev[i].keyid, ops[i]->sa.keyid, FCTL_KEYID_LEN);
	}
	if (r == 0)
		r = record(l, ev, n, err, errlen);
	free(ev);
	return r;
}

static bool removes_sas(const struct fctl_op *op)
{
	return op->kind == FCTL_OP_TXSA_DEL || op->kind == FCTL_OP_RXSA_DEL ||
	       op->kind == FCTL_OP_RXSC_DEL || op->kind == FCTL_OP_LINK_DEL;
}

/* The SAs op removes, of the SecY m: all (link delete), one RX SC's, or one SA. */
static bool op_takes(const struct fctl_op *op, const struct fctl_link *l, bool tx, uint64_t sci,
		     unsigned an)
{
	if (op->kind == FCTL_OP_LINK_DEL)
		return true; /* the link itself, or one below it: its uppers go with it */
	if (strcmp(op->ifname, l->name) != 0)
		return false;
	if (op->kind == FCTL_OP_TXSA_DEL)
		return tx && op->an == an;
	if (op->kind == FCTL_OP_RXSA_DEL)
		return !tx && op->sci == sci && op->an == an;
	return !tx && op->sci == sci; /* RXSC_DEL */
}

/* Deactivates each active SA op takes (its PN stops); 1 when some were. */
static int deactivate(struct fctl_engine_kernel *k, const struct fctl_op *op,
		      const struct fctl_host_state *hs, fctl_engi_send_fn send,
		      struct fctl_nl_err *nerr)
{
	int n = 0;

	for (size_t i = 0; i < hs->n_links; i++) {
		const struct fctl_link *l = &hs->links[i];
		const struct fctl_macsec *m = &l->macsec;

		if (l->kind != FCTL_LINK_MACSEC)
			continue;
		for (size_t s = 0; s <= m->n_rxsc; s++) {
			for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
				bool tx = s == m->n_rxsc;
				const struct fctl_sa *sa = tx ? &m->txsa[an] : &m->rxsc[s].sa[an];
				uint64_t sci = tx ? m->sci : m->rxsc[s].sci;
				struct fctl_op off = { .an = (uint8_t)an, .sci = sci };
				int r;

				if (!sa->present || !sa->active || !op_takes(op, l, tx, sci, an))
					continue;
				off.kind = tx ? FCTL_OP_TXSA_UPD : FCTL_OP_RXSA_UPD;
				snprintf(off.ifname, sizeof(off.ifname), "%s", l->name);
				off.sa = *sa;
				off.sa.active = false;
				r = send(k, &off, nerr);
				if (r < 0 && r != -ENOENT && r != -ENODEV)
					return r;
				n = 1;
			}
		}
	}
	return n;
}

/* The retirement events of the SAs op takes in hs (their PNs as they stopped). */
static int retire_events(const struct fctl_op *op, const struct fctl_host_state *hs,
			 struct fctl_engi_pn *l, struct pn_entry **out, size_t *n)
{
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < hs->n_links; i++) {
		const struct fctl_link *k = &hs->links[i];
		const struct fctl_macsec *m = &k->macsec;

		for (size_t s = 0; k->kind == FCTL_LINK_MACSEC && s <= m->n_rxsc; s++) {
			for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
				bool tx = s == m->n_rxsc;
				const struct fctl_sa *sa = tx ? &m->txsa[an] : &m->rxsc[s].sa[an];
				uint64_t sci = tx ? m->sci : m->rxsc[s].sci;
				const struct pn_entry *x;
				struct pn_entry *ev;

				if (!sa->present || !sa->has_keyid || !op_takes(op, k, tx, sci, an))
					continue;
				ev = fctl_array_grow(out, n, &cap, sizeof(*ev));
				if (!ev)
					return -ENOMEM;
				x = find_retiring(l, tx, sci, sa->keyid);
				*ev = (struct pn_entry){ .tx = tx, .retired = true, .sci = sci };
				if (x && x->has_hash) {
					ev->has_hash = true;
					memcpy(ev->hash, x->hash, HASH_LEN);
				}
				memcpy(ev->keyid, sa->keyid, FCTL_KEYID_LEN);
				ev->pn = x && x->pn > sa->pn ? x->pn : sa->pn;
			}
		}
	}
	return 0;
}

int fctl_engi_pn_retire(struct fctl_engine_kernel *k, const struct fctl_op *op,
			fctl_engi_send_fn send, struct fctl_nl_err *nerr, char *err, size_t errlen)
{
	const char *names[1] = { op->ifname };
	struct fctl_host_state *hs = NULL;
	struct fctl_engi_pn *l;
	struct pn_entry *ev = NULL;
	size_t n = 0;
	int r;

	if (!removes_sas(op) || !k->ledger_dir[0])
		return 0; /* without a ledger no SA is added either */
	r = ledger(k, &l, err, errlen);
	if (r == -EBADMSG) { /* unreadable: every add is refused; a removal may go on */
		err[0] = '\0';
		return 0;
	}
	if (r < 0)
		return r;
	r = k->ops->read_state(k->sess, "local", names, 1, &hs);
	if (r == -ENODEV || r == -ENOENT)
		return 0; /* gone already: nothing sends with it */
	if (r == 0)
		r = deactivate(k, op, hs, send, nerr);
	if (r == 1) { /* read again: the PNs where they stopped */
		fctl_host_state_free(hs);
		hs = NULL;
		r = k->ops->read_state(k->sess, "local", names, 1, &hs);
	}
	if (r == 0)
		r = retire_events(op, hs, l, &ev, &n);
	if (r == 0 && n)
		r = record(l, ev, n, err, errlen);
	else if (r < 0 && !err[0])
		fctl_set_err(err, errlen, "cannot retire the SAs of %s: %s", op->ifname,
			     nerr->msg[0] ? nerr->msg : strerror(-r));
	free(ev);
	fctl_host_state_free(hs);
	return r;
}

int fctl_engine_kernel_ledger_anchor(struct fctl_engine_kernel *k,
				     struct fctl_sa_ledger_anchor *out)
{
	struct fctl_buf b = { 0 };
	unsigned int hl = 32;
	char path[PATH_MAX + 16];
	int fd, r = 0;

	if (!k || !k->pn_touched || !k->ledger_dir[0])
		return 0;
	snprintf(path, sizeof(path), "%s/sa-ledger", k->ledger_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* under the writers' lock: no line half-appended by another process is read */
	if (flock(fd, LOCK_SH) < 0)
		r = -errno;
	if (r == 0)
		r = fctl_file_read(path, &b);
	close(fd);
	if (r == 0) {
		out->size = fctl_sa_ledger_whole(b.data ? b.data : "", b.len);
		if (EVP_Digest(b.data ? b.data : "", (size_t)out->size, out->sha256, &hl, EVP_sha256(),
			       NULL) != 1)
			r = -EIO;
	}
	fctl_buf_release(&b);
	if (r < 0)
		return r;
	k->pn_touched = false;
	return out->size ? 1 : 0;
}

size_t fctl_engi_pn_withheld_in(const struct fctl_engine_kernel *k, const struct fctl_plan *plan)
{
	size_t n = 0;

	for (size_t i = 0; i < plan->n_ops; i++) {
		const struct fctl_op *op = &plan->ops[i];

		for (size_t w = 0; w < k->n_withheld; w++) {
			const struct fctl_op *x = &k->withheld[w];

			if (x->kind == op->kind && x->an == op->an && strcmp(x->ifname, op->ifname) == 0 &&
			    (op->kind == FCTL_OP_TXSA_ADD || x->sci == op->sci)) {
				n++;
				break;
			}
		}
	}
	return n;
}

void fctl_engi_pn_release(struct fctl_engine_kernel *k)
{
	pn_free(k->pn);
	k->pn = NULL;
	free(k->withheld);
	k->withheld = NULL;
	k->n_withheld = k->cap_withheld = 0;
	k->withheld_why[0] = '\0';
}
