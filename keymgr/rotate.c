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

#include "fctl/audit.h"
#include "fctl/keys.h"
#include "fctl/rotation.h"
#include "keymgr.h"

static const char *const step_name[KM_N_STEPS] = {
	"prepare", "install-rx", "stage-tx", "confirm", "switch", "overlap", "retire", "rollback",
};

const char *km_step_name(enum km_step s)
{
	return s < KM_N_STEPS ? step_name[s] : "?";
}

struct rot {
	unsigned old_an, new_an;
	uint32_t old_version, new_version;
	char kcv[7];
	enum km_step last;
	char steps[256];
	/* the report: step times and counters at the start of the rotation */
	double step_ms[KM_N_STEPS];
	struct timespec t_step;
	unsigned kms_ops, agent_requests; /* this link's own, in a batch too */
	/* after the switch: counters at the start of the overlap, when they could be read */
	bool have_base;
	struct km_dump base[2];
};

static double ms_since(const struct timespec *t)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return (double)(n.tv_sec - t->tv_sec) * 1e3 + (double)(n.tv_nsec - t->tv_nsec) / 1e6;
}

/* Charges the time since the last mark to step s (the report's per-step figures). */
static void mark(struct rot *rt, enum km_step s)
{
	if (rt->t_step.tv_sec || rt->t_step.tv_nsec)
		rt->step_ms[s] += ms_since(&rt->t_step);
	clock_gettime(CLOCK_MONOTONIC, &rt->t_step);
}

/* A new mark without charging anyone (after the overlap wait). */
static void mark_reset(struct rot *rt)
{
	clock_gettime(CLOCK_MONOTONIC, &rt->t_step);
}

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

static void test_hook(const struct km *k, enum km_step s)
{
#ifdef FCTL_TEST_HOOKS /* test builds only */
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
#endif
}

/* Written (and synced) before the step is taken. */
static int journal_step(struct km *k, const struct km_link *l, struct rot *rt, enum km_step s)
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
			rt->last = KM_PREPARE;
		} else if (sscanf(line, "step %31s", name) == 1) {
			for (int s = 0; s < KM_N_STEPS; s++)
				if (strcmp(name, step_name[s]) == 0)
					rt->last = (enum km_step)s;
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

/* STATE/current-LINK: "an A version V time T [kcv K keyid ID]". The check value of the
 * key in use (ID: the KEYID of the reference it came from) lets the next rotation refuse a
 * KMS that hands out the same key again without fetching the old key a second time. */
static int read_current(struct km *k, const struct km_link *l, unsigned *an, uint32_t *version,
			uint64_t *when, char kcv[7], uint8_t keyid[FCTL_KEYID_LEN])
{
	char path[4200], line[256], kc[16] = "", kid[64] = "";
	unsigned a;
	uint32_t v;
	uint64_t t;
	FILE *f;
	int n;

	jpath(k, l, "current", path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fgets(line, sizeof(line), f) ? sscanf(line, "an %u version %" SCNu32 " time %" SCNu64
						   " kcv %15s keyid %63s", &a, &v, &t, kc, kid) : 0;
	fclose(f);
	if (n < 3 || a >= FCTL_MAX_AN)
		return -EBADMSG;
	*an = a;
	*version = v;
	*when = t;
	if (kcv) {
		kcv[0] = 0;
		if (n == 5 && strlen(kc) == 6 && fctl_parse_hex(kid, keyid, FCTL_KEYID_LEN) == 0)
			snprintf(kcv, 7, "%s", kc);
	}
	return 0;
}

int km_current(struct km *k, const struct km_link *l, unsigned *an, uint32_t *version,
	       uint64_t *when)
{
	return read_current(k, l, an, version, when, NULL, NULL);
}

static void ref_keyid(const struct km_link *l, uint32_t version, uint8_t out[FCTL_KEYID_LEN]);

static void set_current(struct km *k, const struct km_link *l, unsigned an, uint32_t version,
			const char *kcv)
{
	char path[4200], tmp[4300], line[200], kid[2 * FCTL_KEYID_LEN + 1];
	uint8_t id[FCTL_KEYID_LEN];
	int n;

	jpath(k, l, "current", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ref_keyid(l, version, id);
	fctl_format_hex(id, FCTL_KEYID_LEN, kid);
	n = snprintf(line, sizeof(line), "an %u version %" PRIu32 " time %ld", an, version,
		     (long)time(NULL));
	if (kcv && kcv[0])
		n += snprintf(line + n, sizeof(line) - (size_t)n, " kcv %s keyid %s", kcv, kid);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	/* best effort: the journal, not this summary, is what recovery trusts */
	(void)fctl_file_replace(path, tmp, line, (size_t)n, 0600, 0);
}

static void ref_keyid(const struct km_link *l, uint32_t version, uint8_t out[FCTL_KEYID_LEN])
{
	struct fctl_keyref r = l->ref;

	r.version = version;
	fctl_keyid_from_ref(&r, out);
}

/* An AN-only request; switch and encoding-sa also name the key (version + KEYID), which
 * the agent keeps in its rotation record. */
static int req_an(struct km *k, const struct km_link *l, struct km_end *e, uint8_t type,
		  unsigned an, uint32_t version, const uint64_t *sci, char *err, size_t errlen)
{
	struct fctl_msg m = { .type = type, .an = an, .present = FCTL_HAS_AN };
	uint8_t keyid[FCTL_KEYID_LEN];

	if (type != FCTL_MSG_SA_RETIRE) {
		m.key_version = version;
		ref_keyid(l, version, keyid);
		m.keyid = keyid;
		m.present |= FCTL_HAS_KEY_VERSION | FCTL_HAS_KEYID;
	}
	if (sci) {
		m.sci = *sci;
		m.present |= FCTL_HAS_SCI;
	}
	return km_call(k, e, &m, NULL, err, errlen);
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

		if (req_an(k, l, e, FCTL_MSG_SA_RETIRE, rt->new_an, 0, &e->peer_sci, why,
			   sizeof(why)) < 0 ||
		    req_an(k, l, e, FCTL_MSG_SA_RETIRE, rt->new_an, 0, NULL, why, sizeof(why)) < 0) {
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

	if (journal_step(k, l, rt, KM_ROLLBACK) < 0)
		return -EIO;
	if (switched)
		for (int i = 0; i < 2; i++)
			if (req_an(k, l, &l->end[i], FCTL_MSG_ENCODING_SA, rt->old_an,
				   rt->old_version, NULL, err, sizeof(err)) < 0)
				r = -EIO;
	if (remove_new(k, l, rt, err, sizeof(err)) < 0)
		r = -EIO;
	mark(rt, KM_ROLLBACK);
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

static int fetch(struct km *k, const struct km_link *l, uint32_t version, struct fctl_key **out,
		 char *err, size_t errlen)
{
	struct fctl_keyref r = l->ref;

	r.version = version;
	k->kms_ops++;
	return fctl_rotation_key_fetch(&r, l->base, fctl_cipher_key_len(l->cipher), out, err,
				       errlen);
}

/* The next version may wait pre-active in the KMS: a custodian stages it ahead, with
 * or without an activation date. Once that date has come (or when it has none),
 * keymgr makes the transition itself, dated by the KMS and audited. Asked only after
 * a refused fetch, so a rotation in steady state still costs one KMS operation.
 * 0: activated, fetch again; <0: the refusal stands (not pre-active, not due, or the
 * KMS refused the transition; the fetch's own error says why). */
static int activate_due(struct km *k, struct km_link *l, uint32_t version)
{
	struct fctl_keyref r = l->ref;
	struct fctl_key_info info;
	char why[400];
	int t;

	r.version = version;
	k->kms_ops++;
	if (fctl_key_info(&r, l->base, &info, why, sizeof(why)) < 0 ||
	    info.state != FCTL_KEY_PRE_ACTIVE)
		return -EKEYREJECTED;
	if ((info.dates_set & (1u << FCTL_KEY_DATE_ACTIVATION)) &&
	    (int64_t)time(NULL) < info.dates[FCTL_KEY_DATE_ACTIVATION])
		return -EKEYREJECTED;
	k->kms_ops++;
	t = fctl_key_transition(&r, FCTL_KEY_DO_ACTIVATE, why, sizeof(why));
	km_audit(k, l, "key-state", t == 0 ? "applied" : "failed", NULL, t == 0 ? "active" : NULL,
		 "%s:%s version %" PRIu32 " %s in the KMS%s%s", l->ref.backend, l->ref.id, version,
		 t == 0 ? "activated (was pre-active, its activation date has come)"
			: "pre-active and due, but could not be activated",
		 t == 0 ? "" : ": ", t == 0 ? "" : why);
	return t;
}

static int install(struct km *k, struct km_link *l, struct rot *rt, const struct fctl_key *key,
		   bool rx, char *err, size_t errlen)
{
	uint8_t keyid[FCTL_KEYID_LEN], salt[FCTL_SALT_LEN];
	struct fctl_keyref ref = l->ref;

	ref.version = rt->new_version;
	fctl_keyid_from_ref(&ref, keyid);
	fctl_salt_from_ref(&ref, salt);
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
		r = km_call(k, e, &m, NULL, err, errlen);
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

/* The old version leaves service in the KMS (NIST SP 800-57: active -> deactivated, or
 * compromised): dated there and audited. The file backend keeps no states. */
static void kms_retire(struct km *k, struct km_link *l, const struct rot *rt)
{
	enum fctl_key_transition tr = k->compromised ? FCTL_KEY_DO_COMPROMISE
						     : FCTL_KEY_DO_DEACTIVATE;
	const char *state = k->compromised ? "compromised" : "deactivated";
	struct fctl_keyref old = l->ref;
	char why[400] = "";
	int t;

	if (k->compromised) {
		char path[4200], line[300];

		snprintf(path, sizeof(path), "%s/compromised", k->state_dir);
		snprintf(line, sizeof(line), "%ld %s %s %" PRIu32 "\n", (long)time(NULL),
			 l->ref.backend, l->ref.id, rt->old_version);
		append_sync(path, line);
	}
	old.version = rt->old_version;
	t = fctl_key_transition(&old, tr, why, sizeof(why));
	if (t == -EOPNOTSUPP)
		return; /* STATE/ and the audit log are the record */
	k->kms_ops++;
	km_audit(k, l, "key-state", t == 0 ? "applied" : "failed", NULL, t == 0 ? state : NULL,
		 "%s:%s version %" PRIu32 " %s in the KMS%s%s", l->ref.backend, l->ref.id,
		 rt->old_version, t == 0 ? (k->compromised ? "marked compromised" : "deactivated")
					 : (k->compromised ? "could not be marked compromised"
							   : "could not be deactivated"),
		 t == 0 ? "" : ": ", t == 0 ? "" : why);
}

/* After the switch on both ends: the overlap starts; its counters when they can be read. */
static int overlap_begin(struct km *k, struct km_link *l, struct rot *rt, bool check)
{
	char err[700];

	if (journal_step(k, l, rt, KM_OVERLAP) < 0)
		return -EIO;
	rt->have_base = check && !k->compromised && km_dump_link(k, l, rt->base, err, sizeof(err)) == 0;
	mark(rt, KM_OVERLAP);
	return 0;
}

/* The overlap has passed: any frame refused on either end during it takes the link back
 * to the old key; otherwise the old SAs go and the rotation commits. 0 committed, 1
 * rolled back, <0 failed (journal kept). */
static int overlap_end(struct km *k, struct km_link *l, struct rot *rt)
{
	char err[700] = "";
	struct km_dump d[2];
	uint64_t old_ok = 0, new_ok = 0;

	mark_reset(rt); /* the wait is not the step's work */
	if (rt->have_base && km_dump_link(k, l, d, err, sizeof(err)) == 0) {
		for (int i = 0; i < 2; i++) {
			const struct km_dump *b = &rt->base[i];

			if (d[i].sc_not_valid > b->sc_not_valid ||
			    d[i].sc_not_using_sa > b->sc_not_using_sa ||
			    d[i].sc_unused_sa > b->sc_unused_sa || d[i].sc_invalid > b->sc_invalid) {
				char why[300];

				snprintf(why, sizeof(why),
					 "%s: frames refused during the overlap (not_valid +%" PRIu64
					 ", not_using_sa +%" PRIu64 ", unused_sa +%" PRIu64 ")",
					 l->end[i].host, d[i].sc_not_valid - b->sc_not_valid,
					 d[i].sc_not_using_sa - b->sc_not_using_sa,
					 d[i].sc_unused_sa - b->sc_unused_sa);
				mark(rt, KM_OVERLAP);
				return rollback(k, l, rt, true, why) == 0 ? 1 : -EIO;
			}
			old_ok += d[i].rx[rt->old_an].ok - b->rx[rt->old_an].ok;
			new_ok += d[i].rx[rt->new_an].ok - b->rx[rt->new_an].ok;
		}
	}
	mark(rt, KM_OVERLAP);
	if (journal_step(k, l, rt, KM_RETIRE) < 0)
		return -EIO;
	for (int i = 0; i < 2; i++) {
		struct km_end *e = &l->end[i];

		if (req_an(k, l, e, FCTL_MSG_SA_RETIRE, rt->old_an, 0, &e->peer_sci, err,
			   sizeof(err)) < 0 ||
		    req_an(k, l, e, FCTL_MSG_SA_RETIRE, rt->old_an, 0, NULL, err, sizeof(err)) < 0) {
			km_audit(k, l, "key-rotation", "failed", rt->kcv[0] ? rt->kcv : NULL, NULL,
				 "new key in use on both ends, old SAs not retired yet (journal kept): %s",
				 err);
			mark(rt, KM_RETIRE);
			return -EIO;
		}
	}
	journal_end(k, l, rt, "committed");
	set_current(k, l, rt->new_an, rt->new_version, rt->kcv);
	km_audit(k, l, "key-rotation", "committed", rt->kcv[0] ? rt->kcv : NULL, NULL,
		 "an %u -> %u, key version %" PRIu32 " -> %" PRIu32 "%s; steps %s; overlap rx ok "
		 "old an %" PRIu64 ", new an %" PRIu64, rt->old_an, rt->new_an, rt->old_version,
		 rt->new_version, k->compromised ? " (compromised: no overlap)" : "", rt->steps,
		 old_ok, new_ok);
	km_audit(k, l, "key-state", "recorded", rt->kcv[0] ? rt->kcv : NULL, "active",
		 "%s:%s version %" PRIu32 " active on %s", l->ref.backend, l->ref.id,
		 rt->new_version, l->name);
	km_audit(k, l, "key-state", "recorded", NULL, k->compromised ? "compromised" : "deactivated",
		 "%s:%s version %" PRIu32 " %s on %s", l->ref.backend, l->ref.id, rt->old_version,
		 k->compromised ? "compromised, removed without overlap" : "retired after the overlap",
		 l->name);
	kms_retire(k, l, rt);
	mark(rt, KM_RETIRE);
	return 0;
}

static int do_switch(struct km *k, struct km_link *l, struct rot *rt)
{
	char err[700];

	if (journal_step(k, l, rt, KM_SWITCH) < 0)
		return -EIO;
	for (int i = 0; i < 2; i++)
		if (req_an(k, l, &l->end[i], FCTL_MSG_TXSA_SWITCH, rt->new_an, rt->new_version, NULL,
			   err, sizeof(err)) < 0) {
			mark(rt, KM_SWITCH);
			return rollback(k, l, rt, true, err) == 0 ? 1 : -EIO;
		}
	mark(rt, KM_SWITCH);
	return 0;
}

static void result_of(struct km *k, const struct km_link *l, const struct rot *rt, int r,
		      struct km_result *res)
{
	if (!res)
		return;
	memset(res, 0, sizeof(*res));
	res->link = l;
	res->r = r;
	res->old_an = rt->old_an;
	res->new_an = rt->new_an;
	res->old_version = rt->old_version;
	res->new_version = rt->new_version;
	memcpy(res->kcv, rt->kcv, sizeof(res->kcv));
	memcpy(res->step_ms, rt->step_ms, sizeof(res->step_ms));
	res->kms_ops = rt->kms_ops;
	res->agent_requests = rt->agent_requests;
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
		 rt.last >= KM_SWITCH && rt.last != KM_ROLLBACK ? "finishing it" : "undoing it");
	if (rt.last == KM_ROLLBACK)
		return rollback(k, l, &rt, true, "resumed after an interruption") == 0 ? 0 : -EIO;
	if (rt.last < KM_SWITCH)
		return rollback(k, l, &rt, false, "interrupted before the switch") == 0 ? 0 : -EIO;
	/* the switch may have happened on one end: complete it on both, then retire (the
	 * overlap has long passed: no counter check) */
	r = do_switch(k, l, &rt);
	if (r != 0)
		return r < 0 ? r : 0;
	if (overlap_begin(k, l, &rt, false) < 0)
		return -EIO;
	return overlap_end(k, l, &rt) < 0 ? -EIO : 0;
}

/* Everything up to and including the switch on both ends. 0: switched (the overlap is
 * journaled and its counters read); 1: rolled back; <0: failed. */
static int rotate_begin(struct km *k, struct km_link *l, struct rot *rt)
{
	struct fctl_key *key = NULL, *old = NULL;
	uint8_t keyid[FCTL_KEYID_LEN];
	struct km_dump d[2];
	char err[700] = "", cur_kcv[7] = "";
	uint8_t cur_keyid[FCTL_KEYID_LEN];
	unsigned cur_an;
	uint32_t cur_v;
	uint64_t when;
	int r;

	memset(rt, 0, sizeof(*rt));
	mark(rt, KM_PREPARE);
	r = km_recover(k, l);
	if (r < 0)
		return r;
	r = km_dump_link(k, l, d, err, sizeof(err));
	if (r < 0) {
		km_audit(k, l, "key-rotation", "failed", NULL, NULL,
			 "nothing changed, an end cannot be read: %s", err);
		return r;
	}
	rt->old_an = d[0].encoding_sa;
	rt->old_version = km_end_version(l, &d[0]);
	ref_keyid(l, rt->old_version, keyid);
	for (int i = 0; i < 2; i++) {
		uint32_t v = km_end_version(l, &d[i]);

		if (d[i].encoding_sa != rt->old_an || v != rt->old_version ||
		    !d[i].tx[rt->old_an].present || !d[i].tx[rt->old_an].active ||
		    !keyid_eq(d[i].tx[rt->old_an].keyid, keyid)) {
			km_audit(k, l, "key-rotation", "failed", NULL, NULL,
				 "nothing changed: the ends disagree with each other or with the key "
				 "reference (%s: encoding sa %u, key version %" PRIu32 "; expected %u, %" PRIu32
				 ")", l->end[i].host, d[i].encoding_sa, v, rt->old_an, rt->old_version);
			return -EPROTO;
		}
	}
	rt->new_an = (rt->old_an + 1) % FCTL_MAX_AN;
	rt->new_version = rt->old_version + 1;
	r = journal_begin(k, l, rt);
	if (r < 0) {
		km_audit(k, l, "key-rotation", "failed", NULL, NULL, "cannot write the journal: %s",
			 strerror(-r));
		return r;
	}
	km_audit(k, l, "key-rotation", "started", NULL, NULL,
		 "an %u -> %u, key version %" PRIu32 " -> %" PRIu32 "%s", rt->old_an, rt->new_an,
		 rt->old_version, rt->new_version, k->compromised ? " (compromised)" : "");
	if (journal_step(k, l, rt, KM_PREPARE) < 0)
		return -EIO;
	/* only keymgr talks to the KMS; a bad answer changes nothing. The new key must not
	 * be the one in use (a new AN with PN 1 and the same key would reuse nonces): its
	 * check value is compared with the one recorded at the last commit, or, without one,
	 * with the old key's, fetched for that */
	if (read_current(k, l, &cur_an, &cur_v, &when, cur_kcv, cur_keyid) < 0 ||
	    cur_v != rt->old_version || cur_an != rt->old_an || !keyid_eq(cur_keyid, keyid))
		cur_kcv[0] = 0; /* not the key in use now: fetch that one */
	r = fetch(k, l, rt->new_version, &key, err, sizeof(err));
	if (r == -EKEYREJECTED && activate_due(k, l, rt->new_version) == 0)
		r = fetch(k, l, rt->new_version, &key, err, sizeof(err));
	if (r == 0 && !cur_kcv[0] && fetch(k, l, rt->old_version, &old, err, sizeof(err)) == 0)
		fctl_key_kcv_hex(old, cur_kcv);
	fctl_key_free(old);
	if (r == 0) {
		char kcv[7];

		fctl_key_kcv_hex(key, kcv);
		if (strcmp(kcv, cur_kcv) == 0) {
			snprintf(err, sizeof(err), "the KMS returned the key in use for version %" PRIu32
				 " (same check value): a new AN with PN 1 would reuse nonces",
				 rt->new_version);
			r = -EINVAL;
		}
	}
	if (r < 0) {
		fctl_key_free(key);
		mark(rt, KM_PREPARE);
		rollback(k, l, rt, false, err);
		return 1;
	}
	fctl_key_kcv_hex(key, rt->kcv);
	mark(rt, KM_PREPARE);
	r = journal_step(k, l, rt, KM_INSTALL_RX);
	if (r == 0)
		r = install(k, l, rt, key, true, err, sizeof(err));
	mark(rt, KM_INSTALL_RX);
	if (r == 0)
		r = journal_step(k, l, rt, KM_STAGE_TX);
	if (r == 0)
		r = install(k, l, rt, key, false, err, sizeof(err));
	fctl_key_free(key); /* wiped: the kernels have it now */
	mark(rt, KM_STAGE_TX);
	if (r == 0)
		r = journal_step(k, l, rt, KM_CONFIRM);
	if (r == 0)
		r = confirm(k, l, rt, err, sizeof(err));
	mark(rt, KM_CONFIRM);
	if (r < 0) {
		r = rollback(k, l, rt, false, err);
		return r == 0 ? 1 : r;
	}
	km_audit(k, l, "key-rotation", "confirmed", rt->kcv, NULL,
		 "new SAs on an %u present on both ends with key version %" PRIu32, rt->new_an,
		 rt->new_version);
	r = do_switch(k, l, rt);
	if (r != 0)
		return r;
	return overlap_begin(k, l, rt, true);
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int km_rotate_batch(struct km *k, struct km_link **links, size_t n, struct km_result *res,
		    bool progress)
{
	struct rot *rt = calloc(n ? n : 1, sizeof(*rt));
	struct timespec t_end = { 0 }, now;
	size_t switched = 0;
	int worst = 0;

	if (!rt)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned kms0 = k->kms_ops, req0 = k->agent_requests;
		int r = rotate_begin(k, links[i], &rt[i]);

		rt[i].kms_ops += k->kms_ops - kms0;
		rt[i].agent_requests += k->agent_requests - req0;
		res[i].r = r;
		if (r == 0) {
			struct timespec e;

			switched++;
			clock_gettime(CLOCK_MONOTONIC, &e);
			e.tv_sec += (time_t)(k->compromised ? 0 : links[i]->overlap_s);
			if (e.tv_sec > t_end.tv_sec ||
			    (e.tv_sec == t_end.tv_sec && e.tv_nsec > t_end.tv_nsec))
				t_end = e;
		} else {
			result_of(k, links[i], &rt[i], r, &res[i]);
		}
		if (progress)
			fprintf(stderr, "\rkeymgr: %zu/%zu links switched to the new key", switched, n);
	}
	if (progress)
		fputc('\n', stderr);
	/* one overlap for the whole batch: each link keeps its old RX SA at least its own
	 * overlap after its own switch. Idle connections would time out at the agents. */
	if (switched) {
		km_close_conns(k);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (t_end.tv_sec > now.tv_sec ||
		    (t_end.tv_sec == now.tv_sec && t_end.tv_nsec > now.tv_nsec)) {
			double ms = (double)(t_end.tv_sec - now.tv_sec) * 1e3 +
				    (double)(t_end.tv_nsec - now.tv_nsec) / 1e6;

			if (progress)
				fprintf(stderr, "keymgr: overlap: old keys still accepted for %.1f s\n",
					ms / 1e3);
			sleep_ms((uint64_t)ms + 1);
			k->overlap_wait_ms += ms;
		}
	}
	for (size_t i = 0; i < n; i++) {
		unsigned kms0 = k->kms_ops, req0 = k->agent_requests;

		if (res[i].r != 0)
			continue;
		res[i].r = overlap_end(k, links[i], &rt[i]);
		rt[i].kms_ops += k->kms_ops - kms0;
		rt[i].agent_requests += k->agent_requests - req0;
		result_of(k, links[i], &rt[i], res[i].r, &res[i]);
	}
	for (size_t i = 0; i < n; i++) /* a failure over a rollback over success */
		if (res[i].r < 0 ? worst >= 0 : res[i].r > 0 && worst == 0)
			worst = res[i].r;
	free(rt);
	return worst;
}
