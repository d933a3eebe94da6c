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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fctl/audit.h"
#include "fctl/keys.h"
#include "fctl/rotation.h"
#include "rot.h"

static const char *const step_name[KM_N_STEPS] = {
	"prepare", "install-rx", "stage-tx", "confirm", "switch", "overlap", "retire", "rollback",
};

const char *km_step_name(enum km_step s)
{
	return s < KM_N_STEPS ? step_name[s] : "?";
}

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

/* An AN request naming the key of version by its KEYID: switch and encoding-sa also by
 * the version, which the agent keeps in its rotation record; a retirement touches only an
 * SA holding that key. */
static int req_an(struct km *k, const struct km_link *l, struct km_end *e, uint8_t type,
		  unsigned an, uint32_t version, const uint64_t *sci, char *err, size_t errlen)
{
	struct fctl_msg m = { .type = type, .an = an, .present = FCTL_HAS_AN | FCTL_HAS_KEYID };
	uint8_t keyid[FCTL_KEYID_LEN];

	km_ref_keyid(l, version, keyid);
	m.keyid = keyid;
	if (type != FCTL_MSG_SA_RETIRE) {
		m.key_version = version;
		m.present |= FCTL_HAS_KEY_VERSION;
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

		if (req_an(k, l, e, FCTL_MSG_SA_RETIRE, rt->new_an, rt->new_version, &e->peer_sci,
			   why, sizeof(why)) < 0 ||
		    req_an(k, l, e, FCTL_MSG_SA_RETIRE, rt->new_an, rt->new_version, NULL, why,
			   sizeof(why)) < 0) {
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

	if (km_journal_step(k, l, rt, KM_ROLLBACK) < 0)
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
		km_journal_end(k, l, rt, "rolled-back");
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
	double t0 = km_now_ms();
	int rc;

	r.version = version;
	k->kms_ops++;
	rc = fctl_rotation_key_fetch(&r, l->base, fctl_cipher_key_len(l->cipher), out, err,
				     errlen);
	k->self_ms[KS_KMS] += km_now_ms() - t0;
	return rc;
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
	km_audit_flush(k); /* the records so far are on disk before the KMS changes a state */
	t = fctl_key_transition(&r, FCTL_KEY_DO_ACTIVATE, why, sizeof(why));
	km_audit(k, l, "key-state", t == 0 ? "applied" : "failed", NULL, t == 0 ? "active" : NULL,
		 "%s:%s version %" PRIu32 " %s in the KMS%s%s", l->ref.backend, l->ref.id, version,
		 t == 0 ? "activated (was pre-active, its activation date has come)"
			: "pre-active and due, but could not be activated",
		 t == 0 ? "" : ": ", t == 0 ? "" : why);
	return t;
}

/* The install (rx) or stage request of the new key for end i; keyid and salt in rt. */
static void install_msg(const struct km_link *l, struct rot *rt, const struct fctl_key *key,
			bool rx, int i, struct fctl_msg *m)
{
	const struct km_end *e = &l->end[i];
	struct fctl_keyref ref = l->ref;

	ref.version = rt->new_version;
	fctl_keyid_from_ref(&ref, rt->new_keyid);
	fctl_salt_from_ref(&ref, rt->salt);
	memset(m, 0, sizeof(*m));
	m->type = rx ? FCTL_MSG_RXSA_INSTALL : FCTL_MSG_TXSA_STAGE;
	m->an = rt->new_an;
	m->pn = 1;
	m->key = key->bytes;
	m->key_len = (uint32_t)key->len;
	m->keyid = rt->new_keyid;
	m->key_version = rt->new_version;
	m->present = FCTL_HAS_AN | FCTL_HAS_PN | FCTL_HAS_KEY | FCTL_HAS_KEYID |
		     FCTL_HAS_KEY_VERSION;
	if (rx) {
		m->sci = e->peer_sci;
		m->present |= FCTL_HAS_SCI;
	}
	if (fctl_cipher_is_xpn(l->cipher)) {
		m->ssci = rx ? 3 - e->ssci : e->ssci;
		m->salt = rt->salt;
		m->present |= FCTL_HAS_SSCI | FCTL_HAS_SALT;
	}
}

/* Both ends show the new RX SA active and the new TX SA staged, with the new KEYID. */
static int confirm_check(const struct km_link *l, const struct rot *rt, const struct km_dump *d,
			 char *err, size_t errlen)
{
	uint8_t keyid[FCTL_KEYID_LEN];

	km_ref_keyid(l, rt->new_version, keyid);
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
		km_append_sync(path, line);
	}
	old.version = rt->old_version;
	double t0;
	/* the records so far (the commit) are on disk before the KMS changes a state; the
	 * file backend keeps none (-EOPNOTSUPP below), so its rotations need no sync here */
	if (strcmp(l->ref.backend, "file") != 0)
		km_audit_flush(k);
	t0 = km_now_ms();
	t = fctl_key_transition(&old, tr, why, sizeof(why));
	k->self_ms[KS_KMS] += km_now_ms() - t0;
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

	if (km_journal_step(k, l, rt, KM_OVERLAP) < 0)
		return -EIO;
	rt->have_base = check && !k->compromised && km_dump_link(k, l, rt->base, err, sizeof(err)) == 0;
	mark(rt, KM_OVERLAP);
	return 0;
}

/* The overlap has passed: any frame refused on either end during it (d: the dumps after
 * it, NULL when they could not be read) takes the link back to the old key. 0 go on to
 * retire (old/new ok: the RX SAs' packets during the overlap), 1 rolled back, <0 failed. */
static int overlap_judge(struct km *k, struct km_link *l, struct rot *rt, const struct km_dump *d,
			 uint64_t *old_ok, uint64_t *new_ok)
{
	*old_ok = *new_ok = 0;
	for (int i = 0; rt->have_base && d && i < 2; i++) {
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
		*old_ok += d[i].rx[rt->old_an].ok - b->rx[rt->old_an].ok;
		*new_ok += d[i].rx[rt->new_an].ok - b->rx[rt->new_an].ok;
	}
	mark(rt, KM_OVERLAP);
	return km_journal_step(k, l, rt, KM_RETIRE) < 0 ? -EIO : 0;
}

/* The retire requests of end i: the old RX SA (of the peer's SC), then the old TX SA;
 * each names the old key (an SA holding another key is not touched). */
static void retire_msgs(struct rot *rt, const struct km_link *l, const struct km_end *e,
			struct fctl_msg m[2])
{
	km_ref_keyid(l, rt->old_version, rt->old_keyid);
	memset(m, 0, 2 * sizeof(*m));
	for (int j = 0; j < 2; j++) {
		m[j].type = FCTL_MSG_SA_RETIRE;
		m[j].an = rt->old_an;
		m[j].keyid = rt->old_keyid;
		m[j].present = FCTL_HAS_AN | FCTL_HAS_KEYID;
	}
	m[0].sci = e->peer_sci;
	m[0].present |= FCTL_HAS_SCI;
}

/* Both ends retired the old SAs (err: why not, when retired is false): the rotation
 * commits. 0 committed, <0 failed (journal kept). */
static int commit(struct km *k, struct km_link *l, struct rot *rt, bool retired, const char *err,
		  uint64_t old_ok, uint64_t new_ok)
{
	if (!retired) {
		km_audit(k, l, "key-rotation", "failed", rt->kcv[0] ? rt->kcv : NULL, NULL,
			 "new key in use on both ends, old SAs not retired yet (journal kept): %s",
			 err);
		mark(rt, KM_RETIRE);
		return -EIO;
	}
	km_journal_end(k, l, rt, "committed");
	km_set_current(k, l, rt, rt->new_an, rt->new_version, rt->kcv);
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
	if (!rt->end_pending) /* else after the batch's km_commit_flush (retire_flush) */
		kms_retire(k, l, rt);
	mark(rt, KM_RETIRE);
	return 0;
}

/* overlap_judge and commit for one link, with its own requests (recovery). */
static int overlap_end(struct km *k, struct km_link *l, struct rot *rt)
{
	char err[700] = "";
	struct km_dump d[2];
	uint64_t old_ok, new_ok;
	bool ok = true;
	int r;

	mark_reset(rt); /* the wait is not the step's work */
	r = overlap_judge(k, l, rt,
			  rt->have_base && km_dump_link(k, l, d, err, sizeof(err)) == 0 ? d : NULL,
			  &old_ok, &new_ok);
	if (r != 0)
		return r;
	for (int i = 0; i < 2 && ok; i++) {
		struct fctl_msg m[2];

		retire_msgs(rt, l, &l->end[i], m);
		ok = km_call(k, &l->end[i], &m[0], NULL, err, sizeof(err)) == 0 &&
		     km_call(k, &l->end[i], &m[1], NULL, err, sizeof(err)) == 0;
	}
	return commit(k, l, rt, ok, err, old_ok, new_ok);
}

static int do_switch(struct km *k, struct km_link *l, struct rot *rt)
{
	char err[700];

	if (km_journal_step(k, l, rt, KM_SWITCH) < 0)
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
	int r = km_journal_read(k, l, &rt);

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

/* Prepare, after the dumps d of both ends, until the KMS: the ends agree on the key in
 * use, the journal begins (its prepare step written), and the check value of the key in
 * use is taken from the last commit's record when it is that key's (else cur_kcv is
 * empty: the KMS gives the old key too). 0 go on to the fetches, <0 failed (nothing
 * changed). */
static int prepare_begin(struct km *k, struct km_link *l, struct rot *rt, const struct km_dump *d,
			 char cur_kcv[7])
{
	uint8_t keyid[FCTL_KEYID_LEN], cur_keyid[FCTL_KEYID_LEN];
	unsigned cur_an;
	uint32_t cur_v;
	uint64_t when;
	int r;

	cur_kcv[0] = 0;
	rt->old_an = d[0].encoding_sa;
	rt->old_version = km_end_version(l, &d[0]);
	km_ref_keyid(l, rt->old_version, keyid);
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
	r = km_journal_begin(k, l, rt);
	if (r < 0) {
		km_audit(k, l, "key-rotation", "failed", NULL, NULL, "cannot write the journal: %s",
			 strerror(-r));
		return r;
	}
	km_audit(k, l, "key-rotation", "started", NULL, NULL,
		 "an %u -> %u, key version %" PRIu32 " -> %" PRIu32 "%s", rt->old_an, rt->new_an,
		 rt->old_version, rt->new_version, k->compromised ? " (compromised)" : "");
	if (km_journal_step(k, l, rt, KM_PREPARE) < 0)
		return -EIO;
	/* only keymgr talks to the KMS; a bad answer changes nothing. The new key must not
	 * be the one in use (a new AN with PN 1 and the same key would reuse nonces): its
	 * check value is compared with the one recorded at the last commit, or, without one,
	 * with the old key's, fetched for that */
	if (km_read_current(k, l, &cur_an, &cur_v, &when, cur_kcv, cur_keyid) < 0 ||
	    cur_v != rt->old_version || cur_an != rt->old_an || !keyid_eq(cur_keyid, keyid))
		cur_kcv[0] = 0; /* not the key in use now: fetch that one */
	mark(rt, KM_PREPARE);
	return 0;
}

/* Prepare, after the KMS's answers (fetched for the batch): r/key the new version's
 * (err: why not), old the key in use when cur_kcv was empty (NULL when not fetched or
 * not given). A new version the KMS refused as pre-active is activated when due and
 * fetched again, here. The new key must differ from the key in use. 0 with *out (the
 * caller frees it), 1 rolled back (nothing changed). Frees key and old. */
static int prepare_finish(struct km *k, struct km_link *l, struct rot *rt, const char *cur_kcv_in,
			  int r, struct fctl_key *key, struct fctl_key *old, const char *why,
			  struct fctl_key **out)
{
	char err[700], cur_kcv[7];

	snprintf(err, sizeof(err), "%s", why);
	snprintf(cur_kcv, sizeof(cur_kcv), "%s", cur_kcv_in);
	if (r == -EKEYREJECTED && activate_due(k, l, rt->new_version) == 0)
		r = fetch(k, l, rt->new_version, &key, err, sizeof(err));
	if (r == 0 && !cur_kcv[0] && old)
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
	*out = key;
	return 0;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A rotation of the batch on its way: the link, its state, its result so far. */
struct lk {
	struct km_link *l;
	struct rot rt;
	struct fctl_key *key;
	int r;       /* 0 while it goes on; then 1 rolled back, <0 failed (final) */
	bool done;   /* r is final */
	bool in_phase; /* went into the phase running now (its share of the audit sync) */
	bool begun;    /* prepare_begin done, the KMS's answers to come */
	bool kms_due;  /* committed in a batch commit: the old key's KMS retirement to come */
	char cur_kcv[7];
	uint64_t old_ok, new_ok; /* RX packets on the old and new SAs during the overlap */
};

/* One phase's requests: per_link (1 or 2 per end) messages of every link still going,
 * as one sa-batch per agent; the phase's time shared among them. fill(lk, end, j, m)
 * writes message j of an end. Links whose requests failed: err in their op. */
static struct km_op *phase_call(struct km *k, struct lk *v, size_t n, int per_end,
				void (*fill)(struct lk *x, int end, int j, struct fctl_msg *m),
				size_t *n_ops)
{
	struct km_op *ops = calloc(n * 2 * (size_t)per_end + 1, sizeof(*ops));
	size_t m = 0;

	if (!ops)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (int e = 0; !v[i].done && e < 2; e++)
			for (int j = 0; j < per_end; j++) {
				ops[m].e = &v[i].l->end[e];
				fill(&v[i], e, j, &ops[m].m);
				m++;
			}
	km_call_ops(k, ops, m);
	*n_ops = m;
	return ops;
}

/* Walks a phase's ops back to their links: the first failure of a link in *err. */
static bool link_ops_ok(struct km_op *ops, size_t *at, int per_link, struct lk *x, char *err,
			size_t errlen, struct km_dump *d)
{
	bool ok = true;

	for (int j = 0; j < per_link; j++) {
		struct km_op *o = &ops[(*at)++];

		x->rt.agent_requests += o->requests;
		if (o->r < 0 && ok) {
			snprintf(err, errlen, "%s", o->err);
			ok = false;
		} else if (d && o->r == 0) {
			km_parse_dump(o->out.data ? o->out.data : "", o->e->peer_sci,
				      &d[j * 2 / per_link]);
		}
	}
	return ok;
}

static void fill_dump(struct lk *x, int end, int j, struct fctl_msg *m)
{
	(void)x, (void)end, (void)j;
	memset(m, 0, sizeof(*m));
	m->type = FCTL_MSG_SA_DUMP;
}

static void fill_rx(struct lk *x, int end, int j, struct fctl_msg *m)
{
	(void)j;
	install_msg(x->l, &x->rt, x->key, true, end, m);
}

static void fill_tx(struct lk *x, int end, int j, struct fctl_msg *m)
{
	(void)j;
	install_msg(x->l, &x->rt, x->key, false, end, m);
}

static void fill_switch(struct lk *x, int end, int j, struct fctl_msg *m)
{
	(void)end, (void)j;
	memset(m, 0, sizeof(*m));
	m->type = FCTL_MSG_TXSA_SWITCH;
	m->an = x->rt.new_an;
	m->key_version = x->rt.new_version;
	km_ref_keyid(x->l, x->rt.new_version, x->rt.new_keyid);
	m->keyid = x->rt.new_keyid;
	m->present = FCTL_HAS_AN | FCTL_HAS_KEY_VERSION | FCTL_HAS_KEYID;
}

static void fill_retire(struct lk *x, int end, int j, struct fctl_msg *m)
{
	struct fctl_msg two[2];

	retire_msgs(&x->rt, x->l, &x->l->end[end], two);
	*m = two[j];
}

enum phase { PH_DUMP, PH_RX, PH_TX, PH_CONFIRM, PH_SWITCH, PH_BASE, PH_END, PH_RETIRE };

/* What a link does with its part of a phase (ok: its requests succeeded, d: its dumps). */
static void phase_after(struct km *k, struct lk *x, enum phase ph, bool ok, const struct km_dump *d,
			char *err)
{
	struct rot *rt = &x->rt;
	int r = 0;

	switch (ph) {
	case PH_DUMP:
		if (!ok)
			km_audit(k, x->l, "key-rotation", "failed", NULL, NULL,
				 "nothing changed, an end cannot be read: %s", err);
		r = ok ? prepare_begin(k, x->l, rt, d, x->cur_kcv) : -EIO;
		x->begun = r == 0;
		break;
	case PH_RX:
	case PH_TX:
	case PH_CONFIRM:
		if (ok && ph == PH_CONFIRM)
			ok = confirm_check(x->l, rt, d, err, 700) == 0;
		if (!ok || ph == PH_TX) {
			fctl_key_free(x->key); /* wiped: the kernels have it now */
			x->key = NULL;
		}
		if (!ok)
			r = rollback(k, x->l, rt, false, err) == 0 ? 1 : -EIO;
		else if (ph == PH_CONFIRM)
			km_audit(k, x->l, "key-rotation", "confirmed", rt->kcv, NULL,
				 "new SAs on an %u present on both ends with key version %" PRIu32,
				 rt->new_an, rt->new_version);
		break;
	case PH_SWITCH:
		if (!ok)
			r = rollback(k, x->l, rt, true, err) == 0 ? 1 : -EIO;
		break;
	case PH_BASE:
		rt->have_base = ok && !k->compromised;
		if (rt->have_base)
			memcpy(rt->base, d, sizeof(rt->base));
		break;
	case PH_END:
		r = overlap_judge(k, x->l, rt, ok && rt->have_base ? d : NULL, &x->old_ok,
				  &x->new_ok);
		break;
	case PH_RETIRE:
		r = commit(k, x->l, rt, ok, err, x->old_ok, x->new_ok);
		x->done = true;
		break;
	}
	if (r != 0) {
		x->r = r;
		x->done = true;
	}
}

/* The prepare phase's KMS part for every link prepare_begin let through: all their
 * fetches at once (km_fetch_keys: the new key, and the key in use when its check value is
 * not on record), then each link's prepare_finish. The fetches' time is shared among
 * their links. */
static void prepare_fetches(struct km *k, struct lk *v, size_t n)
{
	struct km_fetch *jobs;
	size_t nb = 0, m = 0;
	double t0, share;

	for (size_t i = 0; i < n; i++)
		nb += !v[i].done && v[i].begun;
	if (!nb)
		return;
	jobs = calloc(2 * nb, sizeof(*jobs));
	for (size_t i = 0; jobs && i < n; i++) {
		if (v[i].done || !v[i].begun)
			continue;
		jobs[m++] = (struct km_fetch){ .l = v[i].l, .version = v[i].rt.new_version };
		if (!v[i].cur_kcv[0])
			jobs[m++] = (struct km_fetch){ .l = v[i].l, .version = v[i].rt.old_version };
	}
	t0 = km_now_ms();
	if (jobs)
		km_fetch_keys(k, jobs, m);
	share = (km_now_ms() - t0) / (double)nb;
	m = 0;
	for (size_t i = 0; i < n; i++) {
		struct lk *x = &v[i];
		struct km_fetch none = { .r = -ENOMEM }, *nj = &none, *oj = NULL;
		unsigned kms0 = k->kms_ops;
		int r;

		if (x->done || !x->begun)
			continue;
		x->begun = false;
		snprintf(none.err, sizeof(none.err), "out of memory");
		if (jobs) {
			nj = &jobs[m++];
			oj = x->cur_kcv[0] ? NULL : &jobs[m++];
			x->rt.kms_ops += oj ? 2 : 1;
		}
		x->rt.step_ms[KM_PREPARE] += share;
		mark_reset(&x->rt);
		r = prepare_finish(k, x->l, &x->rt, x->cur_kcv, nj->r, nj->key,
				   oj && oj->r == 0 ? oj->key : NULL, nj->err, &x->key);
		x->rt.kms_ops += k->kms_ops - kms0;
		if (r != 0) {
			x->r = r;
			x->done = true;
		}
	}
	free(jobs);
}

/* The retire phase's commits, queued by commit() (k->commit_defer), made durable together:
 * the phase's audit records (committed, key states) first, then km_commit_flush (the
 * history, the records of the keys in use, the journals' ends), then each link's old key
 * leaves service in the KMS, as a single link's commit does it. */
static void retire_flush(struct km *k, struct lk *v, size_t n)
{
	struct km_link **ls = calloc(n ? n : 1, sizeof(*ls));
	struct rot **rts = calloc(n ? n : 1, sizeof(*rts));
	size_t m = 0;

	km_audit_flush(k);
	for (size_t i = 0; i < n; i++) {
		if (!v[i].in_phase || !v[i].rt.end_pending)
			continue;
		v[i].kms_due = true;
		if (ls && rts) {
			ls[m] = v[i].l;
			rts[m++] = &v[i].rt;
		} else { /* out of memory: one link at a time, in the same order */
			struct rot *rt = &v[i].rt;

			km_commit_flush(k, &v[i].l, &rt, 1);
		}
	}
	if (m)
		km_commit_flush(k, ls, rts, m);
	free(ls);
	free(rts);
	for (size_t i = 0; i < n; i++) {
		unsigned kms0 = k->kms_ops;

		if (!v[i].kms_due)
			continue;
		v[i].kms_due = false;
		kms_retire(k, v[i].l, &v[i].rt);
		v[i].rt.kms_ops += k->kms_ops - kms0;
	}
}

/* Runs one phase over the links still going; each link's result of it goes through
 * after(). The time of the phase is charged in equal shares to its links' step. */
static void phase(struct km *k, struct lk *v, size_t n, enum phase ph, enum km_step step)
{
	static void (*const fills[])(struct lk *, int, int, struct fctl_msg *) = {
		[PH_DUMP] = fill_dump, [PH_RX] = fill_rx,	 [PH_TX] = fill_tx,
		[PH_CONFIRM] = fill_dump, [PH_SWITCH] = fill_switch, [PH_BASE] = fill_dump,
		[PH_END] = fill_dump, [PH_RETIRE] = fill_retire,
	};
	int per_end = ph == PH_RETIRE ? 2 : 1;
	bool dump = fills[ph] == fill_dump;
	struct timespec t0;
	size_t n_ops = 0, at = 0, live = 0;
	struct km_op *ops;
	double share;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < n; i++)
		if (!v[i].done) {
			live++;
			if (ph != PH_DUMP && ph != PH_END && ph != PH_RETIRE &&
			    km_journal_step(k, v[i].l, &v[i].rt, step) < 0) {
				v[i].r = -EIO;
				v[i].done = true;
				live--;
			}
		}
	if (!live)
		return;
	for (size_t i = 0; i < n; i++)
		v[i].in_phase = !v[i].done;
	ops = phase_call(k, v, n, per_end, fills[ph], &n_ops);
	share = ms_since(&t0) / (double)live;
	for (size_t i = 0; i < n; i++) {
		struct lk *x = &v[i];
		struct km_dump d[2];
		char err[700] = "";
		bool ok;

		if (x->done)
			continue;
		memset(d, 0, sizeof(d));
		if (!ops) {
			ok = false;
			snprintf(err, sizeof(err), "out of memory");
		} else {
			ok = link_ops_ok(ops, &at, 2 * per_end, x, err, sizeof(err),
					 dump ? d : NULL);
		}
		unsigned kms0 = k->kms_ops, req0 = k->agent_requests;

		x->rt.step_ms[step] += share;
		mark_reset(&x->rt);
		k->commit_defer = ph == PH_RETIRE;
		phase_after(k, x, ph, ok, d, err);
		k->commit_defer = false;
		x->rt.kms_ops += k->kms_ops - kms0;
		x->rt.agent_requests += k->agent_requests - req0;
	}
	km_ops_release(ops, n_ops);
	free(ops);
	if (ph == PH_DUMP)
		prepare_fetches(k, v, n);
	if (ph == PH_RETIRE) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		retire_flush(k, v, n);
		share = ms_since(&t0) / (double)live;
		for (size_t i = 0; i < n; i++)
			if (v[i].in_phase)
				v[i].rt.step_ms[step] += share;
	}
	/* the phase's records: one sync, one checkpoint, its time shared as the requests' */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	km_audit_flush(k);
	share = ms_since(&t0) / (double)live;
	for (size_t i = 0; i < n; i++)
		if (v[i].in_phase)
			v[i].rt.step_ms[step] += share;
}

static const char *const phase_name[] = { "prepare", "install-rx", "stage-tx", "confirm",
					  "switch", "overlap", "overlap-end", "retire" };

static void progress_line(const struct lk *v, size_t n, enum phase ph, bool on)
{
	size_t going = 0;

	if (!on)
		return;
	for (size_t i = 0; i < n; i++)
		going += !v[i].done || (ph == PH_RETIRE && v[i].r == 0);
	fprintf(stderr, "keymgr: %-11s %zu/%zu links\n", phase_name[ph], going, n);
}

/* Waits until the last switch + the longest overlap of the links still going. */
static void overlap_wait(struct km *k, const struct lk *v, size_t n, const struct timespec *sw,
			 bool progress)
{
	uint64_t over = 0;
	double ms;

	for (size_t i = 0; i < n; i++)
		if (!v[i].done && !k->compromised && v[i].l->overlap_s > over)
			over = v[i].l->overlap_s;
	ms = (double)over * 1e3 - ms_since(sw);
	if (ms <= 0)
		return;
	if (progress)
		fprintf(stderr, "keymgr: overlap: old keys still accepted for %.1f s\n", ms / 1e3);
	sleep_ms((uint64_t)ms + 1);
	k->overlap_wait_ms += ms;
}

int km_rotate_batch(struct km *k, struct km_link **links, size_t n, struct km_result *res,
		    bool progress)
{
	struct lk *v = calloc(n ? n : 1, sizeof(*v));
	struct timespec sw;
	int worst = 0;

	if (!v)
		return -ENOMEM;
	/* the journal lines and audit records of a phase are synced together, before the
	 * next agent request (km_flush_before_request), KMS state change or phase, not one
	 * by one */
	k->audit_defer = k->journal_defer = true;
	for (size_t i = 0; i < n; i++) {
		unsigned req0 = k->agent_requests;

		v[i].l = links[i];
		mark(&v[i].rt, KM_PREPARE);
		v[i].r = km_recover(k, links[i]); /* an interrupted rotation first */
		v[i].done = v[i].r < 0;
		v[i].rt.agent_requests += k->agent_requests - req0;
	}
	/* every phase is one sa-batch request per agent for all the links */
	phase(k, v, n, PH_DUMP, KM_PREPARE);
	progress_line(v, n, PH_DUMP, progress);
	phase(k, v, n, PH_RX, KM_INSTALL_RX);
	progress_line(v, n, PH_RX, progress);
	phase(k, v, n, PH_TX, KM_STAGE_TX);
	progress_line(v, n, PH_TX, progress);
	phase(k, v, n, PH_CONFIRM, KM_CONFIRM);
	progress_line(v, n, PH_CONFIRM, progress);
	phase(k, v, n, PH_SWITCH, KM_SWITCH);
	clock_gettime(CLOCK_MONOTONIC, &sw);
	progress_line(v, n, PH_SWITCH, progress);
	phase(k, v, n, PH_BASE, KM_OVERLAP);
	/* one overlap for the whole batch: each link keeps its old RX SA at least its own
	 * overlap after the switch. The connections stay open (reopened if an agent's idle
	 * timeout closed them). */
	overlap_wait(k, v, n, &sw, progress);
	phase(k, v, n, PH_END, KM_OVERLAP);
	phase(k, v, n, PH_RETIRE, KM_RETIRE);
	progress_line(v, n, PH_RETIRE, progress);
	km_journal_flush(k); /* the journals of rolled-back links are gone; the rest synced */
	km_audit_flush(k);
	fctl_buf_release(&k->hist);
	fctl_buf_release(&k->errlines);
	k->audit_defer = k->journal_defer = false;
	for (size_t i = 0; i < n; i++) {
		fctl_key_free(v[i].key);
		km_journal_close(k, &v[i].rt); /* a failure's journal stays for recover */
		result_of(k, links[i], &v[i].rt, v[i].r, &res[i]);
	}
	for (size_t i = 0; i < n; i++) /* a failure over a rollback over success */
		if (res[i].r < 0 ? worst >= 0 : res[i].r > 0 && worst == 0)
			worst = res[i].r;
	free(v);
	return worst;
}
