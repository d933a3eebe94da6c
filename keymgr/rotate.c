// SPDX-License-Identifier: MIT
/*
 * Make-before-break rotation of one MACsec link through the agents of both ends
 * (docs/rotation.md). Every step is written to the link's journal before it is
 * taken; an interrupted rotation is finished (after the switch) or undone (before
 * it) by km_recover().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef FCTL_HAVE_AUDIT
#include "fctl/audit.h"
#endif
#include "fctl/keys.h"
#include "fctl/rotation.h"
#include "keymgr.h"

enum step { S_PREPARE, S_INSTALL_RX, S_STAGE_TX, S_CONFIRM, S_SWITCH, S_OVERLAP, S_RETIRE,
	    S_ROLLBACK, S_N };
static const char *const step_name[S_N] = { "prepare", "install-rx", "stage-tx", "confirm",
					     "switch", "overlap", "retire", "rollback" };

struct rot {
	unsigned old_an, new_an;
	uint32_t old_version, new_version;
	char kcv[7];
	enum step last;
	char steps[256];
};

/* --- audit ---------------------------------------------------------------- */

void km_audit(struct km *k, const struct km_link *l, const char *action, const char *result,
	      const char *kcv, const char *key_state, const char *fmt, ...)
{
	char detail[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	fprintf(stderr, "keymgr: %s %s %s: %s\n", l ? l->name : "-", action, result, detail);
#ifdef FCTL_HAVE_AUDIT
	if (k->audit) {
		const char *kcvs[1] = { kcv };
		struct fctl_audit_entry e = {
			.action = action,
			.result = result,
			.link = l ? l->name : NULL,
			.secy = l ? l->end[0].ifname : NULL,
			.detail = detail,
			.kcvs = kcv ? kcvs : NULL,
			.n_kcvs = kcv ? 1 : 0,
			.key_state = key_state,
		};

		if (fctl_audit_append(k->audit, &e) < 0 || fctl_audit_sync(k->audit) < 0)
			fprintf(stderr, "keymgr: audit: %s\n", fctl_audit_error(k->audit));
	}
#else
	(void)k;
	(void)kcv;
	(void)key_state;
#endif
}

/* --- journal -------------------------------------------------------------- */

static void jpath(const struct km *k, const struct km_link *l, const char *what, char *out,
		  size_t len)
{
	snprintf(out, len, "%s/%s-%s", k->state_dir, what, l->name);
}

static int append_sync(const char *path, const char *line)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t n = strlen(line);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, line, n) != (ssize_t)n || fdatasync(fd) < 0)
		r = errno ? -errno : -EIO;
	close(fd);
	return r;
}

static void test_hook(const struct km *k, enum step s)
{
	const char *h = getenv("FCTL_KEYMGR_TEST_HOOK"); /* "STEP:kill" or "STEP:pause:SEC" */
	size_t n = strlen(step_name[s]);
	char marker[4200];

	if (!h || strncmp(h, step_name[s], n) != 0 || h[n] != ':')
		return;
	if (strcmp(h + n + 1, "kill") == 0)
		raise(SIGKILL);
	if (strncmp(h + n + 1, "pause:", 6) == 0) {
		snprintf(marker, sizeof(marker), "%s/paused-%s", k->state_dir, step_name[s]);
		close(open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
		sleep((unsigned)atoi(h + n + 7));
		unlink(marker);
	}
}

/* Written (and synced) before the step is taken. */
static int journal_step(struct km *k, const struct km_link *l, struct rot *rt, enum step s)
{
	char path[4200], line[128];
	int r;

	jpath(k, l, "journal", path, sizeof(path));
	snprintf(line, sizeof(line), "step %s %ld\n", step_name[s], (long)time(NULL));
	r = append_sync(path, line);
	if (r < 0) {
		km_audit(k, l, "key-rotation", "failed", NULL, NULL,
			 "cannot write the journal %s: %s", path, strerror(-r));
		return r;
	}
	rt->last = s;
	if (strlen(rt->steps) + 16 < sizeof(rt->steps))
		snprintf(rt->steps + strlen(rt->steps), sizeof(rt->steps) - strlen(rt->steps),
			 "%s%s", rt->steps[0] ? "," : "", step_name[s]);
	test_hook(k, s);
	return 0;
}

static int journal_begin(struct km *k, const struct km_link *l, struct rot *rt)
{
	char path[4200], line[256];

	if (mkdir(k->state_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	jpath(k, l, "journal", path, sizeof(path));
	snprintf(line, sizeof(line),
		 "begin old_an %u old_version %" PRIu32 " new_an %u new_version %" PRIu32
		 " time %ld\n", rt->old_an, rt->old_version, rt->new_an, rt->new_version,
		 (long)time(NULL));
	unlink(path);
	return append_sync(path, line);
}

static int journal_read(struct km *k, const struct km_link *l, struct rot *rt)
{
	char path[4200], line[256], name[32];
	bool begun = false;
	FILE *f;

	jpath(k, l, "journal", path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(rt, 0, sizeof(*rt));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "begin old_an %u old_version %" SCNu32 " new_an %u new_version %" SCNu32,
			   &rt->old_an, &rt->old_version, &rt->new_an, &rt->new_version) == 4) {
			begun = true;
			rt->last = S_PREPARE;
		} else if (sscanf(line, "step %31s", name) == 1) {
			for (int s = 0; s < S_N; s++)
				if (strcmp(name, step_name[s]) == 0)
					rt->last = (enum step)s;
			if (strlen(rt->steps) + strlen(name) + 2 < sizeof(rt->steps))
				snprintf(rt->steps + strlen(rt->steps),
					 sizeof(rt->steps) - strlen(rt->steps), "%s%s",
					 rt->steps[0] ? "," : "", name);
		}
	}
	fclose(f);
	return begun && rt->old_an < FCTL_MAX_AN && rt->new_an < FCTL_MAX_AN ? 0 : -EBADMSG;
}

/* The journal ends: one history line, then the journal goes. */
static void journal_end(struct km *k, const struct km_link *l, const struct rot *rt,
			const char *result)
{
	char path[4200], line[600];

	snprintf(line, sizeof(line),
		 "%ld %s %s old_an %u old_version %" PRIu32 " new_an %u new_version %" PRIu32
		 " kcv %s steps %s\n", (long)time(NULL), l->name, result, rt->old_an,
		 rt->old_version, rt->new_an, rt->new_version, rt->kcv[0] ? rt->kcv : "-",
		 rt->steps[0] ? rt->steps : "-");
	snprintf(path, sizeof(path), "%s/rotations.log", k->state_dir);
	append_sync(path, line);
	jpath(k, l, "journal", path, sizeof(path));
	unlink(path);
}

/* --- keymgr's record of the current key per link ---------------------------- */

int km_current(struct km *k, const struct km_link *l, unsigned *an, uint32_t *version,
	       uint64_t *when)
{
	char path[4200];
	unsigned a;
	uint32_t v;
	uint64_t t;
	FILE *f;
	int n;

	jpath(k, l, "current", path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fscanf(f, "an %u version %" SCNu32 " time %" SCNu64, &a, &v, &t);
	fclose(f);
	if (n != 3 || a >= FCTL_MAX_AN)
		return -EBADMSG;
	*an = a;
	*version = v;
	*when = t;
	return 0;
}

static void set_current(struct km *k, const struct km_link *l, unsigned an, uint32_t version)
{
	char path[4200], tmp[4300], line[128];
	int fd, n;

	jpath(k, l, "current", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	n = snprintf(line, sizeof(line), "an %u version %" PRIu32 " time %ld\n", an, version,
		     (long)time(NULL));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) == n && fsync(fd) == 0) {
		close(fd);
		rename(tmp, path);
		return;
	}
	close(fd);
	unlink(tmp);
}

/* --- agent requests --------------------------------------------------------- */

void km_close_conns(struct km_link *l)
{
	for (int i = 0; i < 2; i++) {
		fctl_agent_conn_free(l->end[i].conn);
		l->end[i].conn = NULL;
	}
}

static int call(struct km *k, struct km_end *e, struct fctl_msg *req, struct fctl_buf *out,
		char *err, size_t errlen)
{
	struct fctl_buf frame = { 0 };
	struct fctl_msg resp;
	char why[512];
	int r;

	if (!e->conn) {
		r = fctl_agent_connect(e->endpoint, k->tls, k->timeout_s, &e->conn, why,
				       sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "%s (%s): %s", e->host, e->endpoint, why);
			return r;
		}
	}
	snprintf(req->ifname, sizeof(req->ifname), "%s", e->ifname);
	req->present |= FCTL_HAS_IFNAME;
	r = fctl_agent_call(e->conn, req, &resp, &frame, why, sizeof(why));
	if (r < 0) {
		fctl_agent_conn_free(e->conn);
		e->conn = NULL;
		snprintf(err, errlen, "%s (%s): %s", e->host, e->endpoint, why);
	} else if (resp.result != 0) {
		int n = resp.error_len > 400 ? 400 : (int)resp.error_len;

		while (n && (resp.error[n - 1] == '\n'))
			n--;
		snprintf(err, errlen, "%s: %.*s", e->host, n, resp.error ? resp.error : "");
		r = -EIO;
	} else if (out && resp.output_len) {
		fctl_buf_append(out, resp.output, resp.output_len);
		fctl_buf_append(out, "", 1);
		out->len--;
	}
	fctl_buf_release(&frame);
	return r;
}

static int parse_hex16(const char *s, uint8_t out[FCTL_KEYID_LEN])
{
	return fctl_parse_hex(s, out, FCTL_KEYID_LEN);
}

static int parse_dump(const char *text, uint64_t peer_sci, struct km_dump *d)
{
	const char *p = text;

	memset(d, 0, sizeof(*d));
	while (p && *p) {
		char line[512], kid[64];
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		unsigned an, act, u;
		uint64_t sci, pn, a1, a2, a3, a4, a5;
		uint32_t v;

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), p);
		p = nl ? nl + 1 : NULL;
		if (sscanf(line, "secy %*s sci %*x encoding_sa %u", &u) == 1) {
			d->encoding_sa = u;
		} else if (sscanf(line, "tx an %u active %u pn %" SCNu64 " keyid %63s", &an, &act, &pn,
				  kid) == 4 && an < FCTL_MAX_AN) {
			d->tx[an].present = true;
			d->tx[an].active = act;
			d->tx[an].pn = pn;
			parse_hex16(kid, d->tx[an].keyid);
		} else if (sscanf(line, "rxsc sci %" SCNx64 " active %u not_valid %" SCNu64
				  " not_using_sa %" SCNu64 " unused_sa %" SCNu64 " invalid %" SCNu64,
				  &sci, &act, &a1, &a2, &a3, &a4) == 6 && sci == peer_sci) {
			d->sc_not_valid = a1;
			d->sc_not_using_sa = a2;
			d->sc_unused_sa = a3;
			d->sc_invalid = a4;
		} else if (sscanf(line, "rx sci %" SCNx64 " an %u active %u pn %" SCNu64
				  " keyid %63s ok %" SCNu64 " not_valid %" SCNu64 " not_using_sa %" SCNu64
				  " unused_sa %" SCNu64 " invalid %" SCNu64, &sci, &an, &act, &pn, kid,
				  &a1, &a2, &a3, &a4, &a5) == 10 && an < FCTL_MAX_AN && sci == peer_sci) {
			struct km_sa *s = &d->rx[an];

			s->present = true;
			s->active = act;
			s->pn = pn;
			parse_hex16(kid, s->keyid);
			s->ok = a1;
			s->not_valid = a2;
			s->not_using_sa = a3;
			s->unused_sa = a4;
			s->invalid = a5;
		} else if (sscanf(line, "rotation an %u version %" SCNu32 " busy %" SCNu64, &an, &v,
				  &pn) == 3) {
			d->has_rotation = true;
			d->rot_an = an;
			d->rot_version = v;
			d->rot_busy = pn;
		}
	}
	return 0;
}

uint32_t km_end_version(const struct km_link *l, const struct km_dump *d)
{
	return d->has_rotation && d->rot_version > l->ref.version ? d->rot_version : l->ref.version;
}

int km_dump_link(struct km *k, struct km_link *l, struct km_dump d[2], char *err, size_t errlen)
{
	for (int i = 0; i < 2; i++) {
		struct fctl_msg m = { .type = FCTL_MSG_SA_DUMP };
		struct fctl_buf o = { 0 };
		int r = call(k, &l->end[i], &m, &o, err, errlen);

		if (r == 0)
			parse_dump(o.data ? o.data : "", l->end[i].peer_sci, &d[i]);
		fctl_buf_release(&o);
		if (r < 0)
			return r;
	}
	return 0;
}

static int req_an(struct km *k, struct km_end *e, uint8_t type, unsigned an, uint32_t version,
		  const uint64_t *sci, char *err, size_t errlen)
{
	struct fctl_msg m = { .type = type, .an = an, .present = FCTL_HAS_AN };

	if (type != FCTL_MSG_SA_RETIRE) {
		m.key_version = version;
		m.present |= FCTL_HAS_KEY_VERSION;
	}
	if (sci) {
		m.sci = *sci;
		m.present |= FCTL_HAS_SCI;
	}
	return call(k, e, &m, NULL, err, errlen);
}

/* --- rollback ----------------------------------------------------------------- */

/* Removes the new SAs on both ends (before or after a switch that was undone). */
static int remove_new(struct km *k, struct km_link *l, const struct rot *rt, char *err,
		      size_t errlen)
{
	int bad = 0;

	for (int i = 0; i < 2; i++) {
		struct km_end *e = &l->end[i];
		char why[600];

		if (req_an(k, e, FCTL_MSG_SA_RETIRE, rt->new_an, 0, &e->peer_sci, why,
			   sizeof(why)) < 0 ||
		    req_an(k, e, FCTL_MSG_SA_RETIRE, rt->new_an, 0, NULL, why, sizeof(why)) < 0) {
			bad = -EIO;
			snprintf(err, errlen, "%s", why);
		}
	}
	return bad;
}

/* Back to the old key: the encoding SA first (after a switch), then the new SAs go.
 * Returns 0 when both ends are clean; the journal stays otherwise. */
static int rollback(struct km *k, struct km_link *l, struct rot *rt, bool switched,
		    const char *why)
{
	char err[700] = "";
	int r = 0;

	if (journal_step(k, l, rt, S_ROLLBACK) < 0)
		return -EIO;
	if (switched)
		for (int i = 0; i < 2; i++)
			if (req_an(k, &l->end[i], FCTL_MSG_ENCODING_SA, rt->old_an, rt->old_version,
				   NULL, err, sizeof(err)) < 0)
				r = -EIO;
	if (remove_new(k, l, rt, err, sizeof(err)) < 0)
		r = -EIO;
	if (r == 0) {
		journal_end(k, l, rt, "rolled-back");
		km_audit(k, l, "key-rotation", "rolled-back", rt->kcv[0] ? rt->kcv : NULL, NULL,
			 "an %u -> %u, version %" PRIu32 " -> %" PRIu32 " undone (%s); old key in use: %s",
			 rt->old_an, rt->new_an, rt->old_version, rt->new_version,
			 switched ? "after the switch" : "before the switch", why);
		return 0;
	}
	km_audit(k, l, "key-rotation", "failed", rt->kcv[0] ? rt->kcv : NULL, NULL,
		 "rollback incomplete (%s), journal kept for the next run: %s", why, err);
	return -EIO;
}

/* --- the rotation ------------------------------------------------------------- */

static bool keyid_eq(const uint8_t *a, const uint8_t *b)
{
	return memcmp(a, b, FCTL_KEYID_LEN) == 0;
}

static void ref_keyid(const struct km_link *l, uint32_t version, uint8_t out[FCTL_KEYID_LEN])
{
	struct fctl_keyref r = l->ref;

	r.version = version;
	fctl_keyid_from_ref(&r, out);
}

static int fetch(const struct km_link *l, uint32_t version, struct fctl_key **out, char *err,
		 size_t errlen)
{
	struct fctl_keyref r = l->ref;

	r.version = version;
	return fctl_rotation_key_fetch(&r, l->base, fctl_cipher_key_len(l->cipher), out, err,
				       errlen);
}

static int install(struct km *k, struct km_link *l, struct rot *rt, const struct fctl_key *key,
		   bool rx, char *err, size_t errlen)
{
	uint8_t keyid[FCTL_KEYID_LEN], salt[FCTL_SALT_LEN];
	struct fctl_keyref ref = l->ref;

	ref.version = rt->new_version;
	fctl_keyid_from_ref(&ref, keyid);
	fctl_rotation_salt(&ref, salt);
	for (int i = 0; i < 2; i++) {
		struct km_end *e = &l->end[i];
		struct fctl_msg m = {
			.type = rx ? FCTL_MSG_RXSA_INSTALL : FCTL_MSG_TXSA_STAGE,
			.an = rt->new_an,
			.pn = 1,
			.key = key->bytes,
			.key_len = (uint32_t)key->len,
			.keyid = keyid,
			.key_version = rt->new_version,
			.present = FCTL_HAS_AN | FCTL_HAS_PN | FCTL_HAS_KEY | FCTL_HAS_KEYID |
				   FCTL_HAS_KEY_VERSION,
		};
		int r;

		if (rx) {
			m.sci = e->peer_sci;
			m.present |= FCTL_HAS_SCI;
		}
		if (fctl_cipher_is_xpn(l->cipher)) {
			m.ssci = rx ? 3 - e->ssci : e->ssci;
			m.salt = salt;
			m.present |= FCTL_HAS_SSCI | FCTL_HAS_SALT;
		}
		r = call(k, e, &m, NULL, err, errlen);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Both ends show the new RX SA active and the new TX SA staged, with the new KEYID. */
static int confirm(struct km *k, struct km_link *l, const struct rot *rt, char *err,
		   size_t errlen)
{
	struct km_dump d[2];
	uint8_t keyid[FCTL_KEYID_LEN];
	int r = km_dump_link(k, l, d, err, errlen);

	if (r < 0)
		return r;
	ref_keyid(l, rt->new_version, keyid);
	for (int i = 0; i < 2; i++) {
		const struct km_sa *rx = &d[i].rx[rt->new_an], *tx = &d[i].tx[rt->new_an];

		if (!rx->present || !rx->active || !keyid_eq(rx->keyid, keyid) || !tx->present ||
		    !keyid_eq(tx->keyid, keyid)) {
			snprintf(err, errlen, "%s: the dump does not show the new SAs (an %u: rx %s%s, "
				 "tx %s)", l->end[i].host, rt->new_an,
				 rx->present ? "present" : "missing",
				 rx->present && !keyid_eq(rx->keyid, keyid) ? " with a wrong keyid" : "",
				 tx->present ? "present" : "missing");
			return -EPROTO;
		}
	}
	return 0;
}

/* Switch done on both ends: overlap, then the old SAs go. */
static int finish(struct km *k, struct km_link *l, struct rot *rt, bool watch)
{
	char err[700] = "";
	struct km_dump base[2], d[2];
	bool have_base = false;
	uint64_t old_ok = 0, new_ok = 0;

	if (journal_step(k, l, rt, S_OVERLAP) < 0)
		return -EIO;
	if (watch && !k->compromised) {
		have_base = km_dump_link(k, l, base, err, sizeof(err)) == 0;
		for (uint64_t ms = 0; ms < l->overlap_s * 1000; ms += 250) {
			struct timespec ts = { 0, 250 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
		if (have_base && km_dump_link(k, l, d, err, sizeof(err)) == 0) {
			for (int i = 0; i < 2; i++) {
				if (d[i].sc_not_valid > base[i].sc_not_valid ||
				    d[i].sc_not_using_sa > base[i].sc_not_using_sa ||
				    d[i].sc_unused_sa > base[i].sc_unused_sa ||
				    d[i].sc_invalid > base[i].sc_invalid) {
					char why[300];

					snprintf(why, sizeof(why),
						 "%s: frames refused during the overlap (not_valid +%" PRIu64
						 ", not_using_sa +%" PRIu64 ", unused_sa +%" PRIu64 ")",
						 l->end[i].host, d[i].sc_not_valid - base[i].sc_not_valid,
						 d[i].sc_not_using_sa - base[i].sc_not_using_sa,
						 d[i].sc_unused_sa - base[i].sc_unused_sa);
					return rollback(k, l, rt, true, why) == 0 ? 1 : -EIO;
				}
				old_ok += d[i].rx[rt->old_an].ok - base[i].rx[rt->old_an].ok;
				new_ok += d[i].rx[rt->new_an].ok - base[i].rx[rt->new_an].ok;
			}
		}
	}
	if (journal_step(k, l, rt, S_RETIRE) < 0)
		return -EIO;
	for (int i = 0; i < 2; i++) {
		struct km_end *e = &l->end[i];

		if (req_an(k, e, FCTL_MSG_SA_RETIRE, rt->old_an, 0, &e->peer_sci, err,
			   sizeof(err)) < 0 ||
		    req_an(k, e, FCTL_MSG_SA_RETIRE, rt->old_an, 0, NULL, err, sizeof(err)) < 0) {
			km_audit(k, l, "key-rotation", "failed", rt->kcv[0] ? rt->kcv : NULL, NULL,
				 "new key in use on both ends, old SAs not retired yet (journal kept): %s",
				 err);
			return -EIO;
		}
	}
	journal_end(k, l, rt, "committed");
	set_current(k, l, rt->new_an, rt->new_version);
	km_audit(k, l, "key-rotation", "committed", rt->kcv[0] ? rt->kcv : NULL, NULL,
		 "an %u -> %u, key version %" PRIu32 " -> %" PRIu32 "%s; steps %s; overlap rx ok "
		 "old an %" PRIu64 ", new an %" PRIu64, rt->old_an, rt->new_an, rt->old_version,
		 rt->new_version, k->compromised ? " (compromised: no overlap)" : "", rt->steps,
		 old_ok, new_ok);
	km_audit(k, l, "key-state", "recorded", rt->kcv[0] ? rt->kcv : NULL, "active",
		 "%s:%s version %" PRIu32 " active on %s", l->ref.backend, l->ref.id,
		 rt->new_version, l->name);
	km_audit(k, l, "key-state", "recorded", NULL, k->compromised ? "compromised" : "retired",
		 "%s:%s version %" PRIu32 " %s on %s", l->ref.backend, l->ref.id, rt->old_version,
		 k->compromised ? "compromised, removed without overlap" : "retired", l->name);
	if (k->compromised) {
		struct fctl_keyref old = l->ref;
		char path[4200], line[300], why[400] = "";
		int t;

		snprintf(path, sizeof(path), "%s/compromised", k->state_dir);
		snprintf(line, sizeof(line), "%ld %s %s %" PRIu32 "\n", (long)time(NULL),
			 l->ref.backend, l->ref.id, rt->old_version);
		append_sync(path, line);
		/* the KMS keeps the state where it has one (pkcs11, kmip): dated there; the
		 * file backend keeps none, STATE/compromised and the audit log are the record */
		old.version = rt->old_version;
		t = fctl_key_transition(&old, FCTL_KEY_DO_COMPROMISE, why, sizeof(why));
		if (t != -EOPNOTSUPP)
			km_audit(k, l, "key-state", t == 0 ? "applied" : "failed", NULL,
				 t == 0 ? "compromised" : NULL,
				 "%s:%s version %" PRIu32 " %s in the KMS%s%s", l->ref.backend, l->ref.id,
				 rt->old_version, t == 0 ? "marked compromised" :
				 "could not be marked compromised", t == 0 ? "" : ": ", t == 0 ? "" : why);
	}
	return 0;
}

static int do_switch(struct km *k, struct km_link *l, struct rot *rt)
{
	char err[700];

	if (journal_step(k, l, rt, S_SWITCH) < 0)
		return -EIO;
	for (int i = 0; i < 2; i++)
		if (req_an(k, &l->end[i], FCTL_MSG_TXSA_SWITCH, rt->new_an, rt->new_version, NULL,
			   err, sizeof(err)) < 0)
			return rollback(k, l, rt, true, err) == 0 ? 1 : -EIO;
	return 0;
}

int km_recover(struct km *k, struct km_link *l)
{
	struct rot rt;
	int r = journal_read(k, l, &rt);

	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		km_audit(k, l, "key-rotation", "failed", NULL, NULL, "unreadable journal: %s",
			 strerror(-r));
		return r;
	}
	km_audit(k, l, "key-rotation", "recovering", NULL, NULL,
		 "interrupted rotation an %u -> %u (version %" PRIu32 " -> %" PRIu32
		 ") after step %s: %s", rt.old_an, rt.new_an, rt.old_version, rt.new_version,
		 step_name[rt.last],
		 rt.last >= S_SWITCH && rt.last != S_ROLLBACK ? "finishing it" : "undoing it");
	if (rt.last == S_ROLLBACK)
		return rollback(k, l, &rt, true, "resumed after an interruption") == 0 ? 0 : -EIO;
	if (rt.last < S_SWITCH)
		return rollback(k, l, &rt, false, "interrupted before the switch") == 0 ? 0 : -EIO;
	/* the switch may have happened on one end: complete it on both, then retire */
	r = do_switch(k, l, &rt);
	if (r != 0)
		return r < 0 ? r : 0;
	return finish(k, l, &rt, false) < 0 ? -EIO : 0;
}

int km_rotate(struct km *k, struct km_link *l)
{
	struct fctl_key *key = NULL, *old = NULL;
	uint8_t keyid[FCTL_KEYID_LEN];
	struct km_dump d[2];
	struct rot rt;
	char err[700] = "";
	int r;

	r = km_recover(k, l);
	if (r < 0)
		return r;
	r = km_dump_link(k, l, d, err, sizeof(err));
	if (r < 0) {
		km_audit(k, l, "key-rotation", "failed", NULL, NULL,
			 "nothing changed, an end cannot be read: %s", err);
		return r;
	}
	memset(&rt, 0, sizeof(rt));
	rt.old_an = d[0].encoding_sa;
	rt.old_version = km_end_version(l, &d[0]);
	ref_keyid(l, rt.old_version, keyid);
	for (int i = 0; i < 2; i++) {
		uint32_t v = km_end_version(l, &d[i]);

		if (d[i].encoding_sa != rt.old_an || v != rt.old_version ||
		    !d[i].tx[rt.old_an].present || !d[i].tx[rt.old_an].active ||
		    !keyid_eq(d[i].tx[rt.old_an].keyid, keyid)) {
			km_audit(k, l, "key-rotation", "failed", NULL, NULL,
				 "nothing changed: the ends disagree with each other or with the key "
				 "reference (%s: encoding sa %u, key version %" PRIu32 "; expected %u, %" PRIu32
				 ")", l->end[i].host, d[i].encoding_sa, v, rt.old_an, rt.old_version);
			return -EPROTO;
		}
	}
	rt.new_an = (rt.old_an + 1) % FCTL_MAX_AN;
	rt.new_version = rt.old_version + 1;
	r = journal_begin(k, l, &rt);
	if (r < 0) {
		km_audit(k, l, "key-rotation", "failed", NULL, NULL, "cannot write the journal: %s",
			 strerror(-r));
		return r;
	}
	km_audit(k, l, "key-rotation", "started", NULL, NULL,
		 "an %u -> %u, key version %" PRIu32 " -> %" PRIu32 "%s", rt.old_an, rt.new_an,
		 rt.old_version, rt.new_version, k->compromised ? " (compromised)" : "");
	if (journal_step(k, l, &rt, S_PREPARE) < 0)
		return -EIO;
	/* only keymgr talks to the KMS; a bad answer changes nothing */
	r = fetch(l, rt.new_version, &key, err, sizeof(err));
	if (r == 0 && fetch(l, rt.old_version, &old, err, sizeof(err)) == 0 &&
	    memcmp(old->kcv, key->kcv, sizeof(key->kcv)) == 0) {
		snprintf(err, sizeof(err), "the KMS returned the key in use for version %" PRIu32
			 " (same check value): a new AN with PN 1 would reuse nonces", rt.new_version);
		r = -EINVAL;
	}
	fctl_key_free(old);
	if (r < 0) {
		fctl_key_free(key);
		rollback(k, l, &rt, false, err);
		return 1;
	}
	fctl_key_kcv_hex(key, rt.kcv);
	r = journal_step(k, l, &rt, S_INSTALL_RX);
	if (r == 0)
		r = install(k, l, &rt, key, true, err, sizeof(err));
	if (r == 0)
		r = journal_step(k, l, &rt, S_STAGE_TX);
	if (r == 0)
		r = install(k, l, &rt, key, false, err, sizeof(err));
	fctl_key_free(key); /* wiped: the kernels have it now */
	if (r == 0)
		r = journal_step(k, l, &rt, S_CONFIRM);
	if (r == 0)
		r = confirm(k, l, &rt, err, sizeof(err));
	if (r < 0) {
		r = rollback(k, l, &rt, false, err);
		return r == 0 ? 1 : r;
	}
	km_audit(k, l, "key-rotation", "confirmed", rt.kcv, NULL,
		 "new SAs on an %u present on both ends with key version %" PRIu32, rt.new_an,
		 rt.new_version);
	r = do_switch(k, l, &rt);
	if (r != 0)
		return r;
	return finish(k, l, &rt, true);
}
