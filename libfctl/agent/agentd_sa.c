// SPDX-License-Identifier: MIT
/*
 * The SA-level requests of key rotation (docs/rotation.md, docs/protocol.md).
 *
 * Handled in the loop itself (each is one or two netlink round trips; a batch reads
 * the kernel once for all its records, struct sa_view): only a
 * key-custodian certificate (or root on the Unix socket) may send them. The SAK
 * arrives in a KEY TLV and moves at once into a locked key slot (fctl_keys_alloc), the
 * frame's copy wiped; from there it goes into one netlink message, wiped with it, and
 * the slot is wiped when the request is answered. Records and logs name it by its key
 * check value. Every SA change is written through the engine's kernel session
 * (fctl_engine_sa_write, fctl/engine_kernel.h); the reads use the same session's netlink.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentd_int.h"
#include "fctl/key_backend.h"
#include "fctl/rotation.h"
#include "fctl/sa_ledger.h"

#define ROTATION_LEASE_S 600 /* a rotation that dies leaves SAs of two keys this long at most */

/* One SA request on its way: what the steps of sa_request share. */
struct sa_req {
	struct agent *a;
	struct conn *c;
	const struct fctl_msg *m;
	const char *tn;                 /* the request's type name */
	struct fctl_engine_kernel *kern; /* the agent's SA session: the writes */
	struct fctl_nl *nl;             /* its netlink: the reads */
	char rdir[PATH_MAX];            /* the rotation records */
	struct fctl_rotation_cur cur;   /* the SecY's record (or what it would be) */
	struct fctl_macsec sec;         /* the SecY as it is (no RX SCs) */
	struct fctl_sa rx_sa;           /* the RX SA of sci/an the request names, if any */
	struct fctl_op op;
	struct fctl_key *sak;           /* the request's SAK, out of the frame */
	struct sa_view *v;              /* a batch's view of the kernel, or NULL */
	char err[600], detail[700];
};

/*
 * A batch's view of the kernel: every SecY its records name, read once at its start
 * under the apply lock (one link dump, one MACsec dump), and, when it has dumps, their
 * counters (one more MACsec dump), instead of a MACsec dump of every SecY per record.
 * A record that changes an ifname makes that part of its view stale: the RX part
 * (records with an SCI: RX install, RX retire), else the TX part (stage, switch,
 * encoding SA, TX retire); a failed record both. Every record reads the TX part (cipher,
 * encoding SA, TX SAs), those with an SCI also the RX part, a dump both and the
 * counters: a record that needs a stale part reads the kernel itself, as a single
 * request does. So each record's checks see the kernel as its predecessors left it.
 */
struct sa_view {
	struct fctl_host_state *hs;
	size_t n;
	char (*name)[FCTL_IFNAMSIZ];
	bool *stale_rx, *stale_tx, *has_st;
	struct fctl_macsec_stats *st;
};

/* After an SA request's record (not synced yet): an sa-ledger record with the ledger as
 * the requests left it, when their door consulted it (docs/audit.md "Packet-number
 * evidence"). 0, or -EIO when it could not be written. */
static int sa_ledger_audit(struct agent *a, const struct conn *c)
{
	struct fctl_sa_ledger_anchor an;
	char detail[FCTL_SA_LEDGER_ANCHOR_MAX];
	struct fctl_audit_entry e = {
		.action = FCTL_SA_LEDGER_ACTION,
		.result = "anchored",
		.actor_cert = c->kind == C_TLS ? c->who : NULL,
		.has_actor_uid = c->has_uid,
		.actor_uid = c->uid,
		.host = a->host,
		.detail = detail,
	};

	if (!a->audit || fctl_engine_kernel_ledger_anchor(a->sa_kern, &an) != 1)
		return 0;
	fctl_sa_ledger_anchor_format(&an, detail);
	if (fctl_audit_append(a->audit, &e) < 0) {
		fctl_agentd_log("audit: %s", fctl_audit_error(a->audit));
		return -EIO;
	}
	return 0;
}

/* 0, or -EIO when the record could not be written (the caller fails the request:
 * an SA change nobody can account for is not reported as done). */
static int sa_audit(struct agent *a, const struct conn *c, const char *action, bool ok,
		    const struct fctl_msg *m, const char *kcv, const char *detail, bool sync)
{
	char keyid[2 * FCTL_KEYID_LEN + 1] = "", line[900];
	const char *ids[1], *kcvs[1];

	if (m->keyid)
		fctl_format_hex(m->keyid, FCTL_KEYID_LEN, keyid);
	snprintf(line, sizeof(line), "%s an %u%s%s%s%s%s%s: %s", m->ifname, m->an,
		 kcv ? " kcv " : "", kcv ? kcv : "", keyid[0] ? " keyid " : "", keyid,
		 (m->present & FCTL_HAS_KEY_VERSION) ? " key-version " : "",
		 (m->present & FCTL_HAS_KEY_VERSION) ? "set" : "", detail);
	fctl_agentd_log("%s %s by %s: %s", action, ok ? "applied" : "failed", c->who, line);
	if (a->audit) {
		char kid[FCTL_AUDIT_KEYID_LEN + 1];
		struct fctl_audit_entry e = {
			.action = action,
			.result = ok ? "applied" : "failed",
			.actor_cert = c->kind == C_TLS ? c->who : NULL,
			.has_actor_uid = c->has_uid,
			.actor_uid = c->uid,
			.host = a->host,
			.secy = m->ifname,
			.detail = detail,
		};

		if (keyid[0]) {
			snprintf(kid, sizeof(kid), "%.*s", FCTL_AUDIT_KEYID_LEN, keyid);
			ids[0] = kid;
			e.key_ids = ids;
			e.n_key_ids = 1;
		}
		if (kcv) {
			kcvs[0] = kcv;
			e.kcvs = kcvs;
			e.n_kcvs = 1;
		}
		if (fctl_audit_append(a->audit, &e) < 0 ||
		    (sync && (sa_ledger_audit(a, c) < 0 || fctl_audit_sync(a->audit) < 0))) {
			fctl_agentd_log("audit: %s", fctl_audit_error(a->audit));
			return -EIO;
		}
		return 0;
	}
	return -EIO;
}

/* One SA write (key: the SAK's slot for an install, else NULL), err naming the op. */
static int sa_exec(struct fctl_engine_kernel *k, const struct fctl_op *op,
		   const struct fctl_key *key, char *err, size_t errlen)
{
	struct fctl_nl_err e;
	int r = fctl_engine_sa_write(k, op, key, &e);

	/* withheld by the packet-number ledger (docs/keys-and-pn.md): the key was used on
	 * this SCI before, up to a PN nobody recorded; the step fails, nothing was sent */
	if (r == 1)
		r = -EKEYREJECTED;
	if (r < 0)
		snprintf(err, errlen, "%s an %u on %s: %s", fctl_op_kind_name(op->kind), op->an,
			 op->ifname, e.msg[0] ? e.msg : strerror(-r));
	return r;
}

/* The SA requests' kernel session, opened by the first and kept for the next (a rotation
 * of N links sends ~7N): its netlink's name -> ifindex map is refilled by the read each
 * request starts with. 0 or a negative errno. */
static int sa_kernel(struct agent *a)
{
	char dir[PATH_MAX];
	int r;

	if (a->sa_kern)
		return 0;
	r = fctl_engine_kernel_open(NULL, NULL, a->cfg.netns, &a->sa_kern);
	if (r == 0) { /* the host's packet-number ledger, the one its applies keep */
		fctl_state_dir_path(a->cfg.state_dir, a->cfg.netns, dir, sizeof(dir));
		fctl_engine_kernel_ledger(a->sa_kern, dir);
	}
	return r;
}

/* The SecY ifname alone (the cost of a request must not grow with the host's links):
 * 0 with *l in *hs (the caller frees *hs), -ENODEV when it is missing or no SecY. */
static int read_secy(struct fctl_nl *nl, const char *ifname, struct fctl_host_state **hs,
		     const struct fctl_link **l)
{
	int r = fctl_nl_read_link(nl, ifname, hs);

	if (r == -EMEDIUMTYPE)
		r = -ENODEV;
	*l = r == 0 ? fctl_host_state_find(*hs, ifname) : NULL;
	if (r == 0 && (!*l || (*l)->kind != FCTL_LINK_MACSEC))
		r = -ENODEV;
	return r;
}

/* The index of ifname in the view, or -1. */
static ssize_t view_find(const struct sa_view *v, const char *ifname)
{
	for (size_t i = 0; v && v->hs && i < v->n; i++)
		if (strcmp(v->name[i], ifname) == 0)
			return (ssize_t)i;
	return -1;
}

/* The SecY ifname from the view when the parts the record needs are fresh (rx: also the
 * RX part; st: also the counters, into *st), else NULL. */
static const struct fctl_link *view_secy(const struct sa_view *v, const char *ifname, bool rx,
					 const struct fctl_macsec_stats **st)
{
	ssize_t i = view_find(v, ifname);
	const struct fctl_link *l;

	if (i < 0 || v->stale_tx[i] || (rx && v->stale_rx[i]) || (st && !v->has_st[i]))
		return NULL;
	l = fctl_host_state_find(v->hs, ifname);
	if (!l || l->kind != FCTL_LINK_MACSEC)
		return NULL;
	if (st)
		*st = &v->st[i];
	return l;
}

static void sa_dump(struct sa_req *q, struct fctl_buf *o, char *err, size_t errlen, int *rp)
{
	struct fctl_nl *nl = q->nl;
	const struct fctl_msg *m = q->m;
	struct fctl_host_state *hs = NULL;
	struct fctl_macsec_stats *own = NULL;
	const struct fctl_macsec_stats *st = NULL; /* the view's, or own */
	const struct fctl_link *l = view_secy(q->v, m->ifname, true, &st);
	char kid[2 * FCTL_KEYID_LEN + 1];
	int r = 0;

	if (!l) {
		st = own = calloc(1, sizeof(*own));
		r = own ? read_secy(nl, m->ifname, &hs, &l) : -ENOMEM;
		if (r == 0)
			r = fctl_nl_read_macsec_stats(nl, m->ifname, own);
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot read %s: %s", m->ifname, strerror(-r));
		goto out;
	}
	fctl_buf_printf(o, "secy %s sci %016" PRIx64 " encoding_sa %u cipher %s\n", l->name,
			l->macsec.sci, l->macsec.encoding_sa, fctl_cipher_name(l->macsec.cipher));
	for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
		const struct fctl_sa *s = &l->macsec.txsa[an];

		if (!s->present)
			continue;
		fctl_format_hex(s->keyid, FCTL_KEYID_LEN, kid);
		fctl_buf_printf(o, "tx an %u active %d pn %" PRIu64 " keyid %s out_pkts %u\n", an,
				s->active, s->pn, s->has_keyid ? kid : "-",
				st->txsa[an].out_pkts_encrypted + st->txsa[an].out_pkts_protected);
	}
	for (size_t i = 0; i < l->macsec.n_rxsc; i++) {
		const struct fctl_rxsc *sc = &l->macsec.rxsc[i];
		const struct fctl_macsec_rxsc_stats *rs = NULL;

		for (size_t j = 0; j < st->n_rxsc; j++)
			if (st->rxsc[j].sci == sc->sci)
				rs = &st->rxsc[j];
		fctl_buf_printf(o, "rxsc sci %016" PRIx64 " active %d not_valid %" PRIu64
				" not_using_sa %" PRIu64 " unused_sa %" PRIu64 " invalid %" PRIu64
				" late %" PRIu64 "\n", sc->sci, sc->active,
				rs ? rs->in_pkts_not_valid : 0, rs ? rs->in_pkts_not_using_sa : 0,
				rs ? rs->in_pkts_unused_sa : 0, rs ? rs->in_pkts_invalid : 0,
				rs ? rs->in_pkts_late : 0);
		for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
			const struct fctl_sa *s = &sc->sa[an];
			const struct fctl_macsec_sa_stats *ss = rs ? &rs->sa[an] : NULL;

			if (!s->present)
				continue;
			fctl_format_hex(s->keyid, FCTL_KEYID_LEN, kid);
			fctl_buf_printf(o, "rx sci %016" PRIx64 " an %u active %d pn %" PRIu64
					" keyid %s ok %u not_valid %u not_using_sa %u unused_sa %u"
					" invalid %u\n", sc->sci, an, s->active, s->pn,
					s->has_keyid ? kid : "-", ss ? ss->in_pkts_ok : 0,
					ss ? ss->in_pkts_not_valid : 0, ss ? ss->in_pkts_not_using_sa : 0,
					ss ? ss->in_pkts_unused_sa : 0, ss ? ss->in_pkts_invalid : 0);
		}
	}
out:
	fctl_host_state_free(hs);
	free(own);
	*rp = r;
}

/* The SecY's cipher, encoding SA and TX SAs into out; with an SCI, the RX SA on an of that
 * SC into rx (not present when there is none). */
static int sa_cipher(struct sa_req *q, struct fctl_macsec *out, struct fctl_sa *rx)
{
	const struct fctl_msg *m = q->m;
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *l = view_secy(q->v, m->ifname, m->present & FCTL_HAS_SCI, NULL);
	int r = l ? 0 : read_secy(q->nl, m->ifname, &hs, &l);

	memset(rx, 0, sizeof(*rx));
	if (r == 0) {
		const struct fctl_rxsc *sc = (m->present & FCTL_HAS_SCI) && m->an < FCTL_MAX_AN
					     ? fctl_macsec_find_rxsc(&l->macsec, m->sci) : NULL;

		out->cipher = l->macsec.cipher;
		out->encoding_sa = l->macsec.encoding_sa;
		out->sci = l->macsec.sci;
		memcpy(out->txsa, l->macsec.txsa, sizeof(out->txsa));
		if (sc)
			*rx = sc->sa[m->an];
	}
	fctl_host_state_free(hs);
	return r;
}

/* The SAK in the request frame: zeroed as soon as it went into the netlink message */
static void wipe_key(struct conn *c, const struct fctl_msg *m)
{
	if (m->key && c->frame)
		fctl_memzero(c->frame + (m->key - c->frame), m->key_len);
}

/* Refuses a request from a role other than key-custodian (or local), or one while an
 * apply runs: true when it may go on, false when it was answered. */
static bool sa_admitted(struct sa_req *q)
{
	struct agent *a = q->a;
	struct conn *c = q->c;
	const struct fctl_msg *m = q->m;

	if (!(c->roles &
	      (FCTL_ROLE_BIT(FCTL_ROLE_KEY_CUSTODIAN) | FCTL_ROLE_BIT(FCTL_ROLE_LOCAL)))) {
		char d[128];

		a->st.refused[FCTL_REFUSED_ROLE]++;
		fctl_agentd_count(a, c, m->type, FCTL_REQ_REFUSED);
		snprintf(d, sizeof(d), "role %s may not %s (key-custodian only)",
			 fctl_role_name(c->role), q->tn);
		fctl_agentd_audit_event(a, q->tn, "refused", c, d);
		wipe_key(c, m);
		fctl_agentd_respond_error(&a->ct, c, m->id, EXIT_REFUSED, "permission denied: %s", d);
		return false;
	}
	if (a->writers) {
		fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
		wipe_key(c, m);
		fctl_agentd_respond_error(&a->ct, c, m->id, 2,
					  "an apply is running on this host: try again");
		return false;
	}
	if (m->type != FCTL_MSG_SA_DUMP && !a->audit) {
		/* fail-secure, as keymgr: no SA change without its audit record */
		fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
		wipe_key(c, m);
		fctl_agentd_respond_error(&a->ct, c, m->id, 2, "the audit log is unavailable: SA "
					  "changes are refused until it can be written");
		return false;
	}
	return true;
}

/* SA_DUMP: the SecY's SAs and counters, then its rotation record when there is one. */
static int sa_dump_request(struct sa_req *q, bool has_cur, struct fctl_buf *o)
{
	int r;

	sa_dump(q, o, q->err, sizeof(q->err), &r);
	if (r == 0 && has_cur) {
		char kid[2 * FCTL_KEYID_LEN + 1] = "-";

		if (q->cur.has_keyid)
			fctl_format_hex(q->cur.keyid, FCTL_KEYID_LEN, kid);
		fctl_buf_printf(o, "rotation an %u version %" PRIu32 " busy %" PRIu64 " keyid %s\n",
				q->cur.an, q->cur.version, q->cur.busy_until, kid);
	}
	return r;
}

/* The record the state render gives before the first rotation. */
static void sa_first_cur(struct sa_req *q)
{
	const struct fctl_macsec *sec = &q->sec;

	q->cur.an = sec->encoding_sa;
	q->cur.version = 0;
	/* named by the key on the encoding SA, so it never passes for another key's */
	q->cur.has_keyid = sec->txsa[sec->encoding_sa].present &&
			   sec->txsa[sec->encoding_sa].has_keyid;
	if (q->cur.has_keyid)
		memcpy(q->cur.keyid, sec->txsa[sec->encoding_sa].keyid, FCTL_KEYID_LEN);
}

/* RXSA_INSTALL (an active RX SA) or TXSA_STAGE (an inactive TX SA), under a lease. */
static int sa_install(struct sa_req *q)
{
	const struct fctl_msg *m = q->m;
	struct fctl_op *op = &q->op;
	int r;

	if (m->key_len != fctl_cipher_key_len(q->sec.cipher) || !m->pn ||
	    (fctl_cipher_is_xpn(q->sec.cipher) && (!m->salt || !(m->present & FCTL_HAS_SSCI)))) {
		snprintf(q->err, sizeof(q->err), "%s: a %u-byte key, PN %" PRIu64 "%s for %s",
			 q->tn, m->key_len, m->pn,
			 fctl_cipher_is_xpn(q->sec.cipher) ? ", SSCI and salt" : "",
			 fctl_cipher_name(q->sec.cipher));
		return -EINVAL;
	}
	if (m->an == q->sec.encoding_sa) {
		snprintf(q->err, sizeof(q->err), "%s: AN %u is the encoding SA in use", q->tn,
			 m->an);
		return -EBUSY;
	}
	op->kind = m->type == FCTL_MSG_RXSA_INSTALL ? FCTL_OP_RXSA_ADD : FCTL_OP_TXSA_ADD;
	op->sa.present = true;
	op->sa.active = m->type == FCTL_MSG_RXSA_INSTALL;
	op->sa.pn = m->pn;
	memcpy(op->sa.keyid, m->keyid, FCTL_KEYID_LEN);
	op->sa.has_keyid = true;
	if (m->salt) {
		memcpy(op->sa.salt, m->salt, FCTL_SALT_LEN);
		op->sa.has_salt = true;
		op->sa.ssci = m->ssci;
	}
	/* a lease first: drift checks and applies keep off two-key SecYs */
	q->cur.busy_until = (uint64_t)time(NULL) + ROTATION_LEASE_S;
	r = fctl_rotation_write(q->rdir, m->ifname, &q->cur);
	if (r < 0) {
		snprintf(q->err, sizeof(q->err), "cannot write %s/%s: %s", q->rdir, m->ifname,
			 strerror(-r));
		return r;
	}
	r = sa_exec(q->kern, op, q->sak, q->err, sizeof(q->err));
	snprintf(q->detail, sizeof(q->detail), "tx sa staged inactive, pn %" PRIu64, m->pn);
	if (m->type == FCTL_MSG_RXSA_INSTALL) {
		char sci[24];

		fctl_sci_format(m->sci, sci);
		snprintf(q->detail, sizeof(q->detail), "rx sa active, peer sci %s, pn %" PRIu64,
			 sci, m->pn);
	}
	return r;
}

/* TXSA_SWITCH, first step: activates the staged TX SA (before the encoding SA moves to it:
 * the other order stops the SecY). */
static int sa_activate(struct sa_req *q)
{
	const struct fctl_msg *m = q->m;
	const struct fctl_sa *tx = &q->sec.txsa[m->an];

	/* the staged TX SA must hold the key the record will name */
	if (m->keyid && (!tx->present || !tx->has_keyid ||
			 memcmp(tx->keyid, m->keyid, FCTL_KEYID_LEN) != 0)) {
		snprintf(q->err, sizeof(q->err), "%s: the TX SA on AN %u %s", q->tn, m->an,
			 tx->present ? "holds another key (keyid differs)"
				     : "is not there (stage it first)");
		return -ESTALE;
	}
	q->op.kind = FCTL_OP_TXSA_UPD;
	q->op.sa.present = q->op.sa.active = true;
	return sa_exec(q->kern, &q->op, NULL, q->err, sizeof(q->err));
}

/* ENCODING_SA (a rollback), or TXSA_SWITCH after sa_activate: the SecY encodes with AN
 * m->an, and the rotation record says so. */
static int sa_encoding(struct sa_req *q)
{
	const struct fctl_msg *m = q->m;
	struct fctl_op *op = &q->op;
	int r;

	memset(op, 0, sizeof(*op));
	op->kind = FCTL_OP_LINK_CHANGE;
	snprintf(op->ifname, sizeof(op->ifname), "%s", m->ifname);
	op->link.kind = FCTL_LINK_MACSEC;
	snprintf(op->link.name, sizeof(op->link.name), "%s", m->ifname);
	op->link.macsec.encoding_sa = (uint8_t)m->an;
	op->link.macsec.cipher = q->sec.cipher;
	op->changes = FCTL_CHG_ENCODING_SA;
	r = sa_exec(q->kern, op, NULL, q->err, sizeof(q->err));
	if (r == 0) {
		/* for the metrics: when the key changed, and how often it went back */
		if (q->cur.an != (uint8_t)m->an && m->type == FCTL_MSG_TXSA_SWITCH)
			q->cur.switched_at = (uint64_t)time(NULL);
		else if (q->cur.an != (uint8_t)m->an)
			q->cur.n_rolled_back++;
		q->cur.an = (uint8_t)m->an;
		q->cur.version = m->key_version;
		/* the record names the key reference it belongs to (when told) */
		q->cur.has_keyid = m->keyid != NULL;
		if (m->keyid)
			memcpy(q->cur.keyid, m->keyid, FCTL_KEYID_LEN);
		r = fctl_rotation_write(q->rdir, m->ifname, &q->cur);
		if (r < 0)
			snprintf(q->err, sizeof(q->err),
				 "encoding SA set, but %s/%s not written: %s", q->rdir, m->ifname,
				 strerror(-r));
	}
	snprintf(q->detail, sizeof(q->detail), "%s encoding sa %u, key version %" PRIu32,
		 m->type == FCTL_MSG_TXSA_SWITCH ? "tx sa activated, then" : "rollback:", m->an,
		 m->key_version);
	return r;
}

/* SA_RETIRE: deactivates and deletes an RX SA (with SCI) or a TX SA; the TX SA ends the
 * lease. Idempotent. With a KEYID, only an SA holding that key. */
static int sa_retire(struct sa_req *q)
{
	const struct fctl_msg *m = q->m;
	bool rx = m->present & FCTL_HAS_SCI;
	int r;

	const struct fctl_sa *sa = rx ? &q->rx_sa : &q->sec.txsa[m->an % FCTL_MAX_AN];

	if (m->an == q->sec.encoding_sa && !rx) {
		snprintf(q->err, sizeof(q->err), "%s: AN %u is the encoding SA in use", q->tn,
			 m->an);
		return -EBUSY;
	}
	/* a retirement names the key it retires: an SA on that AN holding another key (a
	 * newer one, after the AN came round again, or a stale request) is not touched */
	if (m->keyid && sa->present &&
	    (!sa->has_keyid || memcmp(sa->keyid, m->keyid, FCTL_KEYID_LEN) != 0)) {
		snprintf(q->err, sizeof(q->err), "%s: the %s SA on AN %u holds another key "
			 "(keyid differs): not retired", q->tn, rx ? "RX" : "TX", m->an);
		return -ESTALE;
	}
	/* the SA door deactivates it first and records where its PN stopped */
	q->op.kind = rx ? FCTL_OP_RXSA_DEL : FCTL_OP_TXSA_DEL;
	q->op.sa = *sa;
	q->op.sa.present = true;
	r = sa_exec(q->kern, &q->op, NULL, q->err, sizeof(q->err));
	if (r == -ENODEV || r == -ENOENT || r == -ENXIO) {
		r = 0; /* gone already: retiring is idempotent */
		q->err[0] = '\0';
	}
	if (r == 0 && !rx && q->cur.busy_until) {
		/* the TX SA goes last in a retirement: the lease ends */
		q->cur.busy_until = 0;
		if (q->cur.version > q->cur.completed_version) { /* not a rollback's end */
			q->cur.completed_at = (uint64_t)time(NULL);
			q->cur.completed_version = q->cur.version;
			q->cur.n_completed++;
		}
		r = fctl_rotation_write(q->rdir, m->ifname, &q->cur);
	}
	if (rx) {
		char sci[24];

		fctl_sci_format(m->sci, sci);
		snprintf(q->detail, sizeof(q->detail), "rx sa of %s deactivated and deleted", sci);
	} else {
		snprintf(q->detail, sizeof(q->detail), "tx sa deactivated and deleted");
	}
	return r;
}

/* The change a request other than SA_DUMP makes to the SecY in q->sec. */
static int sa_change(struct sa_req *q)
{
	const struct fctl_msg *m = q->m;
	int r;

	memset(&q->op, 0, sizeof(q->op));
	snprintf(q->op.ifname, sizeof(q->op.ifname), "%s", m->ifname);
	q->op.an = (uint8_t)m->an;
	q->op.sci = m->sci;
	switch (m->type) {
	case FCTL_MSG_RXSA_INSTALL:
	case FCTL_MSG_TXSA_STAGE:
		return sa_install(q);
	case FCTL_MSG_TXSA_SWITCH:
		r = sa_activate(q);
		/* then set the encoding SA */
		return r < 0 ? r : sa_encoding(q);
	case FCTL_MSG_ENCODING_SA:
		return sa_encoding(q);
	case FCTL_MSG_SA_RETIRE:
		return sa_retire(q);
	default:
		return -EINVAL;
	}
}

/* After record m ran (r its result): the part of its SecY's view it changed is stale. */
static void view_touched(struct sa_view *v, const struct fctl_msg *m, int r)
{
	ssize_t i = view_find(v, m->ifname);
	bool rx = m->type == FCTL_MSG_RXSA_INSTALL ||
		  (m->type == FCTL_MSG_SA_RETIRE && (m->present & FCTL_HAS_SCI));

	if (i < 0 || (m->type == FCTL_MSG_SA_DUMP && r == 0))
		return;
	if (r < 0 || rx)
		v->stale_rx[i] = true;
	if (r < 0 || !rx)
		v->stale_tx[i] = true;
}

/* One SA request, the host's apply lock held by the caller for a change: the SAK (if any)
 * moves from the frame into a locked slot at once, the frame's copy wiped; a dump's text
 * goes to o. sync: the audit record is synced (and the checkpoint signed) now; a batch
 * syncs once, after its last request. v: the batch's view of the kernel (NULL: the
 * record reads it). 0, or negative errno with the reason in err. */
static int sa_one(struct agent *a, struct conn *c, const struct fctl_msg *m, bool sync,
		  struct sa_view *v, struct fctl_buf *o, char *err, size_t errlen)
{
	struct sa_req q = { .a = a, .c = c, .m = m, .tn = fctl_proto_type_name(m->type), .v = v };
	char kcv[7];
	bool has_cur;
	int r;

	if (m->key) {
		q.sak = fctl_keys_alloc();
		if (!q.sak) {
			wipe_key(c, m);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		memcpy(q.sak->bytes, m->key, m->key_len);
		q.sak->len = m->key_len;
		wipe_key(c, m);
		fctl_keys_kcv(q.sak);
		fctl_key_kcv_hex(q.sak, kcv);
	}
	fctl_rotation_dir(a->cfg.state_dir, a->cfg.netns, q.rdir, sizeof(q.rdir));
	has_cur = fctl_rotation_read(q.rdir, m->ifname, &q.cur) == 0;
	r = sa_kernel(a);
	if (r < 0) {
		snprintf(q.err, sizeof(q.err), "cannot open netlink: %s", strerror(-r));
		goto done;
	}
	q.kern = a->sa_kern;
	q.nl = fctl_engine_kernel_nl(q.kern);
	if (m->type == FCTL_MSG_SA_DUMP) {
		r = sa_dump_request(&q, has_cur, o);
		goto done;
	}
	r = sa_cipher(&q, &q.sec, &q.rx_sa);
	if (r < 0) {
		snprintf(q.err, sizeof(q.err), "%s: not a MACsec interface here (%s)", m->ifname,
			 strerror(-r));
		goto done;
	}
	if (!has_cur)
		sa_first_cur(&q);
	r = sa_change(&q);
	if (r < 0 && has_cur) { /* counted for the metrics, in the record that exists */
		q.cur.n_failed++;
		fctl_rotation_write(q.rdir, m->ifname, &q.cur);
	}
	if (sa_audit(a, c, q.tn, r == 0, m, m->key ? kcv : NULL, r == 0 ? q.detail : q.err,
		     sync) < 0 && r == 0) {
		snprintf(q.err, sizeof(q.err), "%s: the SA change was made but its audit record "
			 "could not be written: treat it as failed", m->ifname);
		r = -EIO;
	}
done:
	if (v)
		view_touched(v, m, r);
	wipe_key(c, m);
	fctl_key_free(q.sak);
	if (r < 0 && q.kern) { /* a fresh socket for the next request, whatever went wrong */
		fctl_engine_kernel_close(q.kern);
		a->sa_kern = NULL;
	}
	if (r < 0)
		snprintf(err, errlen, "%s", q.err[0] ? q.err : strerror(-r));
	return r;
}

static void view_free(struct sa_view *v)
{
	if (!v)
		return;
	fctl_host_state_free(v->hs);
	free(v->name);
	free(v->stale_rx);
	free(v->stale_tx);
	free(v->has_st);
	free(v->st);
	free(v);
}

/* The view of batch m's SecYs (struct sa_view), or NULL: then every record reads the
 * kernel itself (a batch of one record, no memory, a failed read). */
static struct sa_view *view_open(struct agent *a, const struct fctl_msg *m)
{
	size_t n = fctl_proto_sa_ops_count(m), nd = 0;
	struct sa_view *v = n > 1 ? calloc(1, sizeof(*v)) : NULL;
	const char **names = v ? calloc(n, sizeof(*names)) : NULL;
	struct fctl_nl *nl;
	bool dumps = false;

	if (!names || !(v->name = calloc(n, sizeof(*v->name))) ||
	    !(v->stale_rx = calloc(n, sizeof(bool))) || !(v->stale_tx = calloc(n, sizeof(bool))) ||
	    !(v->has_st = calloc(n, sizeof(bool))))
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct fctl_msg op;

		fctl_proto_sa_op_get(m, i, &op);
		dumps |= op.type == FCTL_MSG_SA_DUMP;
		size_t j = 0;

		while (j < v->n && strcmp(v->name[j], op.ifname) != 0)
			j++;
		if (j < v->n)
			continue; /* named before */
		snprintf(v->name[v->n], sizeof(v->name[v->n]), "%s", op.ifname);
		names[v->n] = v->name[v->n];
		v->n++;
	}
	if (sa_kernel(a) < 0)
		goto fail;
	nl = fctl_engine_kernel_nl(a->sa_kern);
	if (fctl_nl_read_state(nl, a->host, names, v->n, &v->hs) < 0) {
		v->hs = NULL;
		goto fail;
	}
	nd = v->n;
	if (dumps && ((v->st = calloc(nd, sizeof(*v->st))) == NULL ||
		      fctl_nl_read_macsec_stats_many(nl, names, nd, v->st, v->has_st) < 0))
		memset(v->has_st, 0, nd * sizeof(bool)); /* dumps read their own counters */
	free(names);
	return v;
fail:
	free(names);
	view_free(v);
	return NULL;
}

/* The SAKs of a batch's records in the frame, all of them (a refused or failed batch). */
static void wipe_batch(struct conn *c, const struct fctl_msg *m)
{
	for (size_t i = 0; i < fctl_proto_sa_ops_count(m); i++) {
		struct fctl_msg op;

		fctl_proto_sa_op_get(m, i, &op);
		wipe_key(c, &op);
	}
}

/*
 * SA_BATCH: the records in order, as that many single requests would run, under one
 * apply lock, with one audit sync (and checkpoint) at the end. The output has a line
 * "op I ok" or "op I failed: WHY" per record, a dump's text after its line. Result 0
 * when every record succeeded, else 1 with the first failure in error: the client reads
 * the lines to know which.
 */
static void sa_batch(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	size_t n = fctl_proto_sa_ops_count(m), failed = 0;
	struct fctl_buf o = { 0 };
	char first[700] = "", err[700];
	bool changes = false;
	struct sa_view *v;
	int lock = -1, r = 0;

	for (size_t i = 0; i < n; i++)
		changes |= m->sa_ops[i * FCTL_SA_OP_LEN] != FCTL_MSG_SA_DUMP;
	if (changes) {
		lock = fctl_engine_lock(&a->eo, err, sizeof(err));
		if (lock < 0) {
			wipe_batch(c, m);
			fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
			fctl_agentd_respond_error(&a->ct, c, m->id, 1, "%s", err);
			return;
		}
	}
	/* under the lock when the batch changes anything: no apply changes the SecYs
	 * meanwhile (a dump-only batch reads as its records would, without it) */
	v = view_open(a, m);
	for (size_t i = 0; i < n; i++) {
		struct fctl_msg op;
		size_t at;

		fctl_proto_sa_op_get(m, i, &op);
		fctl_buf_printf(&o, "op %zu ", i);
		at = o.len;
		fctl_buf_puts(&o, "ok\n");
		r = sa_one(a, c, &op, false, v, &o, err, sizeof(err));
		if (r < 0) {
			o.len = at; /* a failed dump's partial text goes too */
			fctl_buf_printf(&o, "failed: %s\n", err);
			if (!failed++)
				snprintf(first, sizeof(first), "record %zu (%s %s): %s", i,
					 fctl_proto_type_name(op.type), op.ifname, err);
		}
	}
	if (changes && a->audit && (sa_ledger_audit(a, c) < 0 || fctl_audit_sync(a->audit) < 0)) {
		fctl_agentd_log("audit: %s", fctl_audit_error(a->audit));
		snprintf(first, sizeof(first), "the SA changes were made but their audit records "
			 "could not be written: treat them as failed");
		failed = n;
	}
	fctl_engine_unlock(lock);
	view_free(v);
	wipe_batch(c, m);
	fctl_agentd_count(a, c, m->type, failed ? FCTL_REQ_FAILED : FCTL_REQ_OK);
	if (failed) {
		char e[900];
		int k = snprintf(e, sizeof(e), "fabricctl agent: %zu of %zu SA operations failed, "
				 "the first: %s\n", failed, n, first);

		fctl_agentd_respond(&a->ct, c, m->id, 1, o.data, o.len, e,
				    k < (int)sizeof(e) ? (size_t)k : sizeof(e) - 1, NULL);
	} else {
		fctl_agentd_respond(&a->ct, c, m->id, 0, o.data, o.len, NULL, 0, NULL);
	}
	fctl_buf_release(&o);
}

void fctl_agentd_sa_request(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	struct sa_req q = { .a = a, .c = c, .m = m, .tn = fctl_proto_type_name(m->type) };
	struct fctl_buf o = { 0 };
	int r, lock = -1;

	if (!sa_admitted(&q)) {
		wipe_batch(c, m);
		return;
	}
	if (m->type == FCTL_MSG_SA_BATCH) {
		sa_batch(a, c, m);
		return;
	}
	/* the host's apply lock, for this step: a local apply never interleaves with it */
	if (m->type != FCTL_MSG_SA_DUMP) {
		lock = fctl_engine_lock(&a->eo, q.err, sizeof(q.err));
		if (lock < 0) {
			wipe_key(c, m);
			fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
			fctl_agentd_respond_error(&a->ct, c, m->id, 1, "%s", q.err);
			return;
		}
	}
	r = sa_one(a, c, m, true, NULL, &o, q.err, sizeof(q.err));
	fctl_engine_unlock(lock);
	fctl_agentd_count(a, c, m->type, r < 0 ? FCTL_REQ_FAILED : FCTL_REQ_OK);
	if (r < 0)
		fctl_agentd_respond_error(&a->ct, c, m->id, 1, "%s", q.err);
	else
		fctl_agentd_respond(&a->ct, c, m->id, 0, o.data, o.len, NULL, 0, NULL);
	fctl_buf_release(&o);
}
