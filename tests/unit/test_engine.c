// SPDX-License-Identifier: MIT
/* The apply engine against an in-memory kernel: all or nothing, rollback, recovery, order. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/engine.h"
#include "fctl/engine_kernel.h"
#include "fctl/keys.h"
#include "fctl/nl.h"
#include "fctl/util.h"

/* --- the fake kernel --- */

#define LOG_MAX 256

struct logent {
	enum fctl_op_kind kind;
	char ifname[FCTL_IFNAMSIZ];
	bool protect;    /* the op's link payload (LINK_ADD) */
	enum fctl_validate validate;
	bool addrgen_none; /* LINK_ADD: made with IPv6 address generation off */
};

struct fkey {
	uint8_t keyid[FCTL_KEYID_LEN];
	uint8_t bytes[32];
	size_t len;
};

struct fake {
	struct fctl_host_state *hs; /* the kernel's VLAN and MACsec links; eth0 is implicit */
	long calls;                 /* exec calls so far */
	long fail_at;               /* the exec call that fails, once (-1: none) */
	long crash_at;              /* the process dies at this exec call, or at the read after
				     * that many calls when no such call comes (-1: never) */
	char crash_file[512];       /* where the dying process leaves the kernel's state */
	struct logent log[LOG_MAX];
	size_t n_log;
	struct fkey keys[4]; /* what each KEYID's SAK must be */
	size_t n_keys;
	char violation[512]; /* the first fail-secure rule broken, "" when none */
	uint64_t writes, round_trips;
	/* traffic: after every exec call each active TX SA sends a frame and each active RX
	 * SA accepts one, at its PN, written to the file wire (it survives a crash) */
	bool traffic;
	char wire[600];
	bool withheld_ok; /* an address on a SecY with no TX SA is the expected fail-secure state */
	/* eth0's DCB as dcbnl answers: dcb_r < 0 is the answer's error (-EOPNOTSUPP: no DCB) */
	int dcb_r;
	uint8_t pfc_en;
	long dcb_asks;
	/* windows (exec_batch): the largest one seen; unknown_at: the exec call that takes
	 * effect but is answered as a lost ACK is (-EPROTO, outcome unknown), once */
	size_t max_batch;
	long unknown_at;
	bool no_batch; /* the table has no exec_batch: op by op */
};

static char tmp[] = "/tmp/fctl-test-engine-XXXXXX";
static int n_state_dirs;

static void violate(struct fake *f, const char *fmt, ...)
{
	va_list ap;

	if (f->violation[0])
		return;
	va_start(ap, fmt);
	vsnprintf(f->violation, sizeof(f->violation), fmt, ap);
	va_end(ap);
}

static char *state_text(struct fctl_host_state *hs)
{
	struct fctl_buf b = { 0 };

	fctl_host_state_sort(hs);
	if (fctl_host_state_save(hs, &b) < 0)
		return NULL;
	return b.data;
}

static struct fctl_host_state *state_from_text(const char *text)
{
	struct fctl_host_state *hs = NULL;
	size_t used;

	return fctl_host_state_load(text, &used, &hs) == 0 ? hs : NULL;
}

static struct fctl_host_state *state_copy(struct fctl_host_state *hs)
{
	char *t = state_text(hs);
	struct fctl_host_state *c = t ? state_from_text(t) : NULL;

	free(t);
	return c;
}

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->hs = fctl_host_state_new("h1");
	f->fail_at = f->crash_at = f->unknown_at = -1;
	f->pfc_en = 0xff; /* PFC on every priority: no finding */
	assert_non_null(f->hs);
}

static void fake_release(struct fake *f)
{
	fctl_host_state_free(f->hs);
	f->hs = NULL;
}

static void fake_add_key(struct fake *f, const char *id, uint32_t version, const char *hex)
{
	struct fctl_keyref ref = { .backend = (char *)(uintptr_t) "file", .id = (char *)(uintptr_t)id,
				   .version = version };
	struct fkey *k = &f->keys[f->n_keys++];

	fctl_keyid_from_ref(&ref, k->keyid);
	k->len = strlen(hex) / 2;
	for (size_t i = 0; i < k->len; i++)
		sscanf(hex + 2 * i, "%2hhx", &k->bytes[i]);
}

/* The kernel dies here: what it holds survives, the process does not. */
static void die(struct fake *f)
{
	char *t = state_text(f->hs);
	int fd = open(f->crash_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (t && fd >= 0 && write(fd, t, strlen(t)) == (ssize_t)strlen(t) &&
	    (!f->violation[0] || write(fd, f->violation, strlen(f->violation)) >= 0))
		fsync(fd);
	raise(SIGKILL);
}

static bool listed(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 0; name[0] && i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* As fctl_nl_read_state: the named links and the links under them, no key references,
 * no salts, the window only while replay protection is on. */
static int fake_read_state(void *sess, const char *host, const char *const *names, size_t n_names,
			   struct fctl_host_state **out)
{
	struct fake *f = sess;
	struct fctl_host_state *hs;
	size_t w = 0;

	if (f->crash_at >= 0 && f->calls > 0 && f->calls == f->crash_at)
		die(f);
	f->round_trips++;
	hs = state_copy(f->hs);
	if (!hs)
		return -ENOMEM;
	for (size_t i = 0; i < hs->n_links; i++) {
		struct fctl_link *l = &hs->links[i];
		const struct fctl_link *p = fctl_host_state_find(f->hs, l->parent);

		if (names && !listed(l->name, names, n_names) && !listed(l->parent, names, n_names) &&
		    !(p && listed(p->parent, names, n_names))) {
			fctl_link_release(l);
			continue;
		}
		if (!l->macsec.replay_protect)
			l->macsec.window = 0;
		hs->links[w++] = *l;
	}
	hs->n_links = w;
	hs->sorted = false;
	fctl_host_state_sort(hs);
	*out = hs;
	return 0;
}

static bool secy_safe(const struct fctl_link *l)
{
	return l->macsec.protect && l->macsec.validate != FCTL_VALIDATE_DISABLED;
}

static bool has_active_rxsa(const struct fctl_rxsc *sc)
{
	for (unsigned an = 0; an < FCTL_MAX_AN; an++)
		if (sc->sa[an].present && sc->sa[an].active)
			return true;
	return false;
}

/* Rules that must hold after every op, rollbacks and recoveries included. */
static void check_state(struct fake *f, const struct fctl_op *op)
{
	for (size_t i = 0; i < f->hs->n_links; i++) {
		const struct fctl_link *l = &f->hs->links[i];
		const struct fctl_link *p = fctl_host_state_find(f->hs, l->parent);

		if (l->kind != FCTL_LINK_MACSEC)
			continue;
		if ((l->up || l->n_addrs) && !secy_safe(l))
			violate(f, "after %s %s: %s carries traffic unprotected",
				fctl_op_kind_name(op->kind), op->ifname, l->name);
		if (p && p->n_addrs)
			violate(f, "after %s %s: %s, the VLAN under %s, has an address",
				fctl_op_kind_name(op->kind), op->ifname, p->name, l->name);
	}
}

/* Whether l is the carrier of a SecY: a MACsec link sits on it. */
static bool is_carrier(const struct fake *f, const struct fctl_link *l)
{
	for (size_t i = 0; i < f->hs->n_links; i++)
		if (f->hs->links[i].kind == FCTL_LINK_MACSEC &&
		    strcmp(f->hs->links[i].parent, l->name) == 0)
			return true;
	return false;
}

/* Rules of the op itself, against the state it meets. */
static void check_op(struct fake *f, const struct fctl_op *op, const struct fctl_link *l,
		     const uint8_t *key, size_t key_len)
{
	const struct fctl_macsec *m = &l->macsec;
	const struct fkey *k = NULL;

	switch (op->kind) {
	case FCTL_OP_TXSA_ADD:
	case FCTL_OP_TXSA_UPD:
		if (!op->sa.active)
			break;
		if (!m->n_rxsc)
			violate(f, "%s on %s: a TX SA goes live before any RX SC",
				fctl_op_kind_name(op->kind), l->name);
		for (size_t s = 0; s < m->n_rxsc; s++)
			if (m->rxsc[s].active && !has_active_rxsa(&m->rxsc[s]))
				violate(f, "%s on %s: a TX SA goes live before the RX SAs",
					fctl_op_kind_name(op->kind), l->name);
		break;
	case FCTL_OP_ADDR_ADD:
		if (l->kind == FCTL_LINK_MACSEC && !f->withheld_ok &&
		    (!m->txsa[m->encoding_sa].present || !m->txsa[m->encoding_sa].active))
			violate(f, "address %s on %s before its TX SA", op->addr, l->name);
		break;
	case FCTL_OP_LINK_UP:
		/* the kernel makes a link-local address when a link comes up */
		if (is_carrier(f, l) && (!l->has_addrgen || l->addrgen != FCTL_ADDRGEN_NONE))
			violate(f, "set-up %s: the carrier of a SecY comes up making IPv6 addresses",
				l->name);
		break;
	default:
		break;
	}
	if (op->kind != FCTL_OP_TXSA_ADD && op->kind != FCTL_OP_RXSA_ADD)
		return;
	if (!secy_safe(l))
		violate(f, "%s on %s while protect/validation is off", fctl_op_kind_name(op->kind),
			l->name);
	for (size_t i = 0; i < f->n_keys && !k; i++)
		if (memcmp(f->keys[i].keyid, op->sa.keyid, FCTL_KEYID_LEN) == 0)
			k = &f->keys[i];
	if (!k || !key || key_len != k->len || memcmp(key, k->bytes, k->len) != 0)
		violate(f, "%s on %s: not the SAK of its KEYID", fctl_op_kind_name(op->kind),
			l->name);
}

static int link_add(struct fake *f, const struct fctl_op *op)
{
	struct fctl_link *l;

	if (fctl_host_state_find(f->hs, op->ifname))
		return -EEXIST;
	if (strcmp(op->link.parent, "eth0") != 0 && !fctl_host_state_find(f->hs, op->link.parent))
		return -ENODEV;
	l = fctl_host_state_add_link(f->hs, op->link.kind, op->ifname);
	if (!l)
		return -ENOMEM;
	*l = op->link;
	l->up = false;
	if (!l->has_mtu) {
		l->mtu = 1500;
		l->has_mtu = true;
	}
	memset(l->macsec.txsa, 0, sizeof(l->macsec.txsa));
	if (!l->has_addrgen) { /* the kernel's default, which it reports for every link */
		l->addrgen = FCTL_ADDRGEN_EUI64;
		l->has_addrgen = true;
	}
	l->macsec.port = (uint16_t)(l->macsec.sci & 0xffff);
	l->macsec.has_port = l->kind == FCTL_LINK_MACSEC;
	return 0;
}

/* As the kernel's vlan_changelink: every ingress mapping given is set; an egress
 * mapping to PCP 0 is removed (neither kept nor dumped), the others are set. */
static void qos_change(struct fctl_vlan_qos *l, const struct fctl_vlan_qos *op)
{
	memcpy(l->ingress, op->ingress, sizeof(l->ingress));
	for (size_t i = 0; i < op->n_egress; i++) {
		size_t j = 0;

		while (j < l->n_egress && l->egress[j].prio != op->egress[i].prio)
			j++;
		if (j == l->n_egress) {
			assert_true(l->n_egress < FCTL_VLAN_QOS_MAX);
			l->n_egress++;
		}
		l->egress[j] = op->egress[i];
	}
	fctl_vlan_qos_normalize(l); /* drops the PCP 0 ones, sorts */
}

static void link_change(struct fctl_link *l, const struct fctl_op *op)
{
	struct fctl_macsec *m = &l->macsec;
	const struct fctl_macsec *w = &op->link.macsec;
	unsigned c = op->changes;

	if (c & FCTL_CHG_MTU)
		l->mtu = op->link.mtu;
	if (c & FCTL_CHG_WINDOW)
		m->window = w->window;
	if (c & FCTL_CHG_REPLAY)
		m->replay_protect = w->replay_protect;
	if (c & FCTL_CHG_VALIDATE)
		m->validate = w->validate;
	if (c & FCTL_CHG_ENCRYPT)
		m->encrypt = w->encrypt;
	if (c & FCTL_CHG_PROTECT)
		m->protect = w->protect;
	if (c & FCTL_CHG_SEND_SCI)
		m->send_sci = w->send_sci;
	if (c & FCTL_CHG_END_STATION)
		m->end_station = w->end_station;
	if (c & FCTL_CHG_SCB)
		m->scb = w->scb;
	if (c & FCTL_CHG_ENCODING_SA)
		m->encoding_sa = w->encoding_sa;
	if (c & FCTL_CHG_OFFLOAD)
		m->offload = w->offload;
	if (c & FCTL_CHG_QOS)
		qos_change(&l->qos, &op->link.qos);
	if (c & FCTL_CHG_ADDRGEN) {
		l->addrgen = op->link.addrgen;
		l->has_addrgen = true;
	}
	/* as fctl_nl_exec does: none then removes the link's IPv6 addresses */
	if ((c & FCTL_CHG_ADDRGEN) && l->addrgen == FCTL_ADDRGEN_NONE) {
		size_t kept = 0;

		for (size_t i = 0; i < l->n_addrs; i++) {
			if (strchr(l->addrs[i], ':'))
				free(l->addrs[i]);
			else
				l->addrs[kept++] = l->addrs[i];
		}
		l->n_addrs = kept;
	}
}

/* Deleting a VLAN takes its MACsec uppers with it, as the kernel does. */
static void link_del(struct fake *f, const char *name)
{
	size_t w = 0;

	for (size_t i = 0; i < f->hs->n_links; i++) {
		struct fctl_link *l = &f->hs->links[i];

		if (strcmp(l->name, name) == 0 || strcmp(l->parent, name) == 0) {
			fctl_link_release(l);
			continue;
		}
		f->hs->links[w++] = *l;
	}
	f->hs->n_links = w;
	f->hs->sorted = false;
}

static struct fctl_sa *sa_slot(struct fctl_link *l, const struct fctl_op *op, bool tx)
{
	struct fctl_rxsc *sc;

	if (l->kind != FCTL_LINK_MACSEC || op->an >= FCTL_MAX_AN)
		return NULL;
	if (tx)
		return &l->macsec.txsa[op->an];
	sc = fctl_macsec_find_rxsc(&l->macsec, op->sci);
	return sc ? &sc->sa[op->an] : NULL;
}

static int sa_op(struct fctl_link *l, const struct fctl_op *op, bool tx, int what)
{
	struct fctl_sa *sa = sa_slot(l, op, tx);

	if (!sa)
		return -ENODEV;
	if (what == 0) { /* add */
		if (sa->present)
			return -EEXIST;
		*sa = op->sa;
		sa->present = true;
		sa->has_salt = false;
		memset(sa->salt, 0, sizeof(sa->salt));
		return 0;
	}
	if (!sa->present)
		return -ENOENT;
	if (what == 1) { /* update */
		sa->active = op->sa.active;
		return 0;
	}
	if (sa->active)
		return -EBUSY; /* the kernel refuses to delete an active SA */
	memset(sa, 0, sizeof(*sa));
	return 0;
}

static int rxsc_op(struct fctl_link *l, const struct fctl_op *op)
{
	struct fctl_macsec *m = &l->macsec;
	struct fctl_rxsc *sc;

	if (l->kind != FCTL_LINK_MACSEC)
		return -EINVAL;
	sc = fctl_macsec_find_rxsc(m, op->sci);
	if (op->kind == FCTL_OP_RXSC_ADD) {
		if (sc)
			return -EEXIST;
		sc = fctl_macsec_add_rxsc(m, op->sci);
		if (!sc)
			return -ENOMEM;
		sc->active = op->rxsc_active;
		return 0;
	}
	if (!sc)
		return -ENODEV;
	if (op->kind == FCTL_OP_RXSC_UPD) {
		sc->active = op->rxsc_active;
		return 0;
	}
	m->rxsc[sc - m->rxsc] = m->rxsc[--m->n_rxsc];
	return 0;
}

static int addr_op(struct fctl_link *l, const struct fctl_op *op)
{
	for (size_t i = 0; i < l->n_addrs; i++) {
		if (strcmp(l->addrs[i], op->addr) != 0)
			continue;
		if (op->kind == FCTL_OP_ADDR_ADD)
			return -EEXIST;
		free(l->addrs[i]);
		l->addrs[i] = l->addrs[--l->n_addrs];
		return 0;
	}
	return op->kind == FCTL_OP_ADDR_ADD ? fctl_link_add_addr(l, op->addr) : -EADDRNOTAVAIL;
}

static int apply_op(struct fake *f, const struct fctl_op *op, const uint8_t *key, size_t key_len)
{
	struct fctl_link *l;

	if (op->kind == FCTL_OP_LINK_ADD)
		return link_add(f, op);
	l = fctl_host_state_find(f->hs, op->ifname);
	if (!l)
		return -ENODEV;
	check_op(f, op, l, key, key_len);
	switch (op->kind) {
	case FCTL_OP_LINK_DEL:
		link_del(f, op->ifname);
		return 0;
	case FCTL_OP_LINK_CHANGE:
		link_change(l, op);
		return 0;
	case FCTL_OP_LINK_UP:
	case FCTL_OP_LINK_DOWN:
		l->up = op->kind == FCTL_OP_LINK_UP;
		return 0;
	case FCTL_OP_RXSC_ADD:
	case FCTL_OP_RXSC_UPD:
	case FCTL_OP_RXSC_DEL:
		return rxsc_op(l, op);
	case FCTL_OP_TXSA_ADD:
	case FCTL_OP_RXSA_ADD:
		return sa_op(l, op, op->kind == FCTL_OP_TXSA_ADD, 0);
	case FCTL_OP_TXSA_UPD:
	case FCTL_OP_RXSA_UPD:
		return sa_op(l, op, op->kind == FCTL_OP_TXSA_UPD, 1);
	case FCTL_OP_TXSA_DEL:
	case FCTL_OP_RXSA_DEL:
		return sa_op(l, op, op->kind == FCTL_OP_TXSA_DEL, 2);
	case FCTL_OP_ADDR_ADD:
	case FCTL_OP_ADDR_DEL:
		return addr_op(l, op);
	default:
		return -EOPNOTSUPP;
	}
}

/* One frame each way on every active SA: "tx|rx KEYID SCI PN" lines in f->wire. */
static void fake_tick(struct fake *f, int frames)
{
	int fd = open(f->wire, O_WRONLY | O_APPEND | O_CREAT, 0600);

	assert_true(fd >= 0);
	for (int k = 0; k < frames; k++) {
		for (size_t i = 0; i < f->hs->n_links; i++) {
			struct fctl_macsec *m = &f->hs->links[i].macsec;

			for (size_t s = 0; f->hs->links[i].kind == FCTL_LINK_MACSEC && s <= m->n_rxsc;
			     s++) {
				for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
					bool tx = s == m->n_rxsc;
					struct fctl_sa *sa = tx ? &m->txsa[an] : &m->rxsc[s].sa[an];
					char kid[2 * FCTL_KEYID_LEN + 1], line[128];
					int n;

					if (!sa->present || !sa->active)
						continue;
					fctl_format_hex(sa->keyid, FCTL_KEYID_LEN, kid);
					n = snprintf(line, sizeof(line), "%s %s %016llx %llu\n",
						     tx ? "tx" : "rx", kid,
						     (unsigned long long)(tx ? m->sci : m->rxsc[s].sci),
						     (unsigned long long)sa->pn++);
					assert_int_equal(write(fd, line, (size_t)n), n);
				}
			}
		}
	}
	close(fd);
}

static int fake_exec(void *sess, const struct fctl_op *op, const uint8_t *key, size_t key_len,
		     struct fctl_nl_err *err)
{
	struct fake *f = sess;
	long call = f->calls++;
	int r;

	if (call == f->crash_at)
		die(f);
	f->round_trips++;
	if (call == f->fail_at) {
		r = -EIO;
	} else {
		if (f->n_log < LOG_MAX) {
			struct logent *e = &f->log[f->n_log++];

			e->kind = op->kind;
			snprintf(e->ifname, sizeof(e->ifname), "%s", op->ifname);
			e->protect = op->link.macsec.protect;
			e->validate = op->link.macsec.validate;
			e->addrgen_none = op->kind == FCTL_OP_LINK_ADD && op->link.has_addrgen &&
					  op->link.addrgen == FCTL_ADDRGEN_NONE;
		}
		r = apply_op(f, op, key, key_len);
		fctl_host_state_sort(f->hs);
		if (r == 0) {
			f->writes++;
			check_state(f, op);
		}
		if (f->traffic)
			fake_tick(f, 1);
	}
	if (r < 0 && err) {
		err->err = r;
		snprintf(err->msg, sizeof(err->msg), "fake kernel: %s", strerror(-r));
	}
	return r;
}

/* A window as the kernel takes one (fctl_nl_exec_batch): every op in order, each whether
 * or not one before it failed. */
static int fake_exec_batch(void *sess, const struct fctl_op *const *ops, const uint8_t *const *keys,
			   const size_t *key_lens, size_t n, int *rc, struct fctl_nl_err *errs)
{
	struct fake *f = sess;
	uint64_t rt = f->round_trips;
	int first = 0;

	if (n > f->max_batch)
		f->max_batch = n;
	for (size_t i = 0; i < n; i++) {
		long call = f->calls;

		rc[i] = fake_exec(sess, ops[i], keys ? keys[i] : NULL, key_lens ? key_lens[i] : 0,
				  errs ? &errs[i] : NULL);
		if (call == f->unknown_at && rc[i] == 0) {
			rc[i] = -EPROTO;
			if (errs)
				snprintf(errs[i].msg, sizeof(errs[i].msg),
					 "fake kernel: no answer (the request may have been applied)");
		}
		if (rc[i] < 0 && first == 0)
			first = rc[i];
	}
	f->round_trips = rt + 1; /* one send, one read of the answers */
	return first;
}

static int fake_exec_one(void *sess, const struct fctl_op *op, const uint8_t *key, size_t key_len,
			 struct fctl_nl_err *err)
{
	return fake_exec_batch(sess, &op, &key, &key_len, 1, (int[1]){ 0 }, err);
}

static int fake_open(void *ctx, const char *netns, void **sess)
{
	*sess = ctx;
	return 0;
}

static void fake_close(void *sess)
{
}

static void fake_get_stats(const void *sess, struct fctl_nl_stats *out)
{
	const struct fake *f = sess;

	out->writes = f->writes;
	out->round_trips = f->round_trips;
}

/* eth0 is the host's one port; the links the kernel holds exist too */
static int fake_link_exists(void *sess, const char *name)
{
	const struct fake *f = sess;

	return strcmp(name, "eth0") == 0 || fctl_host_state_find(f->hs, name) != NULL;
}

static int fake_dcb_get(void *sess, const char *port, struct fctl_dcb *out)
{
	struct fake *f = sess;

	f->dcb_asks++;
	if (strcmp(port, "eth0") != 0)
		return -ENODEV;
	if (f->dcb_r < 0)
		return f->dcb_r;
	memset(out, 0, sizeof(*out));
	out->has_pfc = true;
	out->pfc_cap = 8;
	out->pfc_en = f->pfc_en;
	return 0;
}

static const struct fctl_engine_ops fake_ops = {
	.open = fake_open,
	.close = fake_close,
	.read_state = fake_read_state,
	.exec = fake_exec_one,
	.exec_batch = fake_exec_batch,
	.get_stats = fake_get_stats,
	.link_exists = fake_link_exists,
	.dcb_get = fake_dcb_get,
};

/* the same kernel without exec_batch: every op alone */
static const struct fctl_engine_ops fake_ops_single = {
	.open = fake_open,
	.close = fake_close,
	.read_state = fake_read_state,
	.exec = fake_exec_one,
	.get_stats = fake_get_stats,
	.link_exists = fake_link_exists,
	.dcb_get = fake_dcb_get,
};

/* --- profiles, keys, state directories --- */

#define KEY_V0 "00112233445566778899aabbccddeeff"
#define KEY_V1 "ffeeddccbbaa99887766554433221100"

static const char profile_head[] = "schema: 1\n"
				   "profile: { name: engine-test, version: %d }\n"
				   "macsec:\n"
				   "  pol:\n"
				   "    cipher: gcm-aes-128\n"
				   "    icv_len: 16\n"
				   "    encrypt: true\n"
				   "    replay_protect: true\n"
				   "    replay_window: %d\n"
				   "    validate: strict\n"
				   "    send_sci: true\n"
				   "    port: 1\n"
				   "    key: { backend: file, id: keys/k%s }\n"
				   "  pol3:\n" /* VLAN 300's: the same key on the same port needs its own SCI */
				   "    cipher: gcm-aes-128\n"
				   "    icv_len: 16\n"
				   "    encrypt: true\n"
				   "    replay_protect: true\n"
				   "    replay_window: 0\n"
				   "    validate: strict\n"
				   "    send_sci: true\n"
				   "    port: 3\n"
				   "    key: { backend: file, id: keys/k, version: 1 }\n"
				   "hosts:\n"
				   "  - name: h1\n"
				   "    ports: [{ name: eth0, mac: \"52:54:00:fa:01:00\", mtu: 1500 }]\n"
				   "  - name: h2\n"
				   "    ports: [{ name: eth0, mac: \"52:54:00:fa:02:00\", mtu: 1500 }]\n"
				   "links:\n"
				   "  - name: h1-h2\n"
				   "    a: h1:eth0\n"
				   "    b: h2:eth0\n"
				   "    vlans:\n"
				   "      - id: 100\n"
				   "        mtu: 1468\n"
				   "        macsec: pol\n"
				   "        addresses: { h1: %s, h2: 10.100.0.2/24 }\n"
				   "      - id: 200\n"
				   "        addresses: { h1: 10.200.0.1/24, h2: 10.200.0.2/24 }\n";

/* v2: the key's next version (every SA replaced), a replay window, VLAN 100's
 * address moved, and a new protected VLAN 300 */
static const char profile_v2_tail[] = "      - id: 300\n"
				      "        mtu: 1468\n"
				      "        macsec: pol3\n"
				      "        addresses: { h1: 10.30.0.1/24, h2: 10.30.0.2/24 }\n";

static struct fctl_profile *v1, *v2, *q1, *q2;

/* q1, q2: v1 with QoS maps on VLAN 100's device (docs/profile.md, "qos"); q2 changes
 * one egress mapping, removes another and the ingress one */
static const char qos_q1[] = "        qos: { egress: { 3: 3, 5: 5 }, ingress: { 3: 3 } }\n";
static const char qos_q2[] = "        qos: { egress: { 5: 4, 7: 1 } }\n";

/* text with line inserted after its first "macsec: pol\n" */
static void insert_after_pol(char *text, size_t size, const char *line)
{
	char *at = strstr(text, "macsec: pol\n");
	size_t tail;

	assert_non_null(at);
	at += strlen("macsec: pol\n");
	tail = strlen(at);
	assert_true(strlen(text) + strlen(line) < size);
	memmove(at + strlen(line), at, tail + 1);
	memcpy(at, line, strlen(line));
}

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static struct fctl_profile *load(const char *name)
{
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	assert_int_equal(fctl_profile_load(path, &d, &p), 0);
	fctl_profile_validate(p, &d);
	for (size_t i = 0; i < d.n; i++)
		fprintf(stderr, "%s\n", d.v[i].msg);
	assert_int_equal(d.n_errors, 0);
	fctl_diags_release(&d);
	return p;
}

static int setup(void **st)
{
	char text[4096];

	(void)st;
	if (!mkdtemp(tmp))
		return -1;
	snprintf(text, sizeof(text), "%s/keys", tmp);
	mkdir(text, 0700);
	write_file("keys/k", KEY_V0 "\n", 0600);
	write_file("keys/k.v1", KEY_V1 "\n", 0600);
	snprintf(text, sizeof(text), profile_head, 1, 0, "", "10.100.0.1/24");
	write_file("v1.yaml", text, 0644);
	snprintf(text, sizeof(text), profile_head, 2, 64, ", version: 1", "10.100.1.1/24");
	strcat(text, profile_v2_tail);
	write_file("v2.yaml", text, 0644);
	snprintf(text, sizeof(text), profile_head, 3, 0, "", "10.100.0.1/24");
	insert_after_pol(text, sizeof(text), qos_q1);
	write_file("q1.yaml", text, 0644);
	snprintf(text, sizeof(text), profile_head, 4, 0, "", "10.100.0.1/24");
	insert_after_pol(text, sizeof(text), qos_q2);
	write_file("q2.yaml", text, 0644);
	v1 = load("v1.yaml");
	v2 = load("v2.yaml");
	q1 = load("q1.yaml");
	q2 = load("q2.yaml");
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int teardown(void **st)
{
	(void)st;
	fctl_profile_free(v1);
	fctl_profile_free(v2);
	fctl_profile_free(q1);
	fctl_profile_free(q2);
	return nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

struct run {
	struct fake f;
	struct fctl_engine_opts o;
	char dir[512];
};

/* A fresh host: an empty kernel and an empty state directory. */
static void run_init(struct run *r)
{
	fake_init(&r->f);
	fake_add_key(&r->f, "keys/k", 0, KEY_V0);
	fake_add_key(&r->f, "keys/k", 1, KEY_V1);
	snprintf(r->dir, sizeof(r->dir), "%s/state-%d", tmp, n_state_dirs++);
	snprintf(r->f.crash_file, sizeof(r->f.crash_file), "%s.crash", r->dir);
	snprintf(r->f.wire, sizeof(r->f.wire), "%s.wire", r->dir);
	memset(&r->o, 0, sizeof(r->o));
	r->o.state_dir = r->dir;
	r->o.host = "h1";
	r->o.ops = &fake_ops;
	r->o.ops_ctx = &r->f;
}

static int apply(struct run *r, const struct fctl_profile *p, struct fctl_apply_result *res)
{
	return fctl_engine_apply(p, &r->o, res);
}

static bool journal_exists(const struct run *r)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/journal", r->dir);
	return access(path, F_OK) == 0;
}

/* The host is in p's state: a fresh plan against p is empty. */
static void assert_converged(struct run *r, const struct fctl_profile *p)
{
	struct fctl_live_plan lp;
	char err[512];

	assert_int_equal(fctl_engine_plan(p, &r->o, &lp, err, sizeof(err)), 0);
	assert_int_equal(lp.plan->n_ops, 0);
	assert_int_equal(lp.findings.n, 0);
	fctl_live_plan_release(&lp);
}

static void assert_no_violation(const struct fake *f)
{
	if (f->violation[0])
		fail_msg("fail-secure rule broken: %s", f->violation);
}

/* Exec calls the forward pass of an apply of `to` makes (from `from`, or an empty host). */
static long forward_calls(const struct fctl_profile *from, const struct fctl_profile *to,
			  size_t *n_ops)
{
	struct fctl_apply_result res;
	struct run r;
	long calls;

	run_init(&r);
	if (from) {
		assert_int_equal(apply(&r, from, &res), 0);
		fctl_apply_result_release(&res);
	}
	r.f.calls = 0;
	assert_int_equal(apply(&r, to, &res), 0);
	calls = r.f.calls;
	*n_ops = res.plan->n_ops;
	fctl_apply_result_release(&res);
	fake_release(&r.f);
	return calls;
}

/* --- tests --- */

static void test_apply_then_reapply(void **st)
{
	struct fctl_apply_result res;
	struct run r;

	(void)st;
	run_init(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_false(res.failed);
	/* two VLANs, a SecY, its RX SC and RX SA, its TX SA, three links up, two addresses;
	 * each SA added inactive, then activated once the ledger has it: two calls more */
	assert_int_equal(res.plan->n_ops, 11);
	assert_int_equal(r.f.calls, 13);
	assert_int_equal(res.writes, 13);
	assert_int_equal(res.n_kcvs, 1);
	assert_false(journal_exists(&r));
	fctl_apply_result_release(&res);
	assert_converged(&r, v1);
	assert_no_violation(&r.f);
	/* the same profile again: nothing to do, nothing sent */
	r.f.calls = 0;
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_int_equal(res.plan->n_ops, 0);
	assert_int_equal(r.f.calls, 0);
	fctl_apply_result_release(&res);
	/* and on to v2 */
	assert_int_equal(apply(&r, v2, &res), 0);
	fctl_apply_result_release(&res);
	assert_converged(&r, v2);
	assert_no_violation(&r.f);
	fake_release(&r.f);
}

static long first(const struct fake *f, enum fctl_op_kind k, const char *ifname)
{
	for (size_t i = 0; i < f->n_log; i++)
		if (f->log[i].kind == k && strcmp(f->log[i].ifname, ifname) == 0)
			return (long)i;
	return -1;
}

static long last(const struct fake *f, enum fctl_op_kind k, const char *ifname)
{
	for (size_t i = f->n_log; i-- > 0;)
		if (f->log[i].kind == k && strcmp(f->log[i].ifname, ifname) == 0)
			return (long)i;
	return -1;
}

/* The order a protected VLAN is built in: SecY with protect and strict validation, RX SC,
 * RX SAs, then the TX SA, then up, then addresses; the fake checked every op's state too. */
static void assert_secy_order(const struct fake *f, const char *ms)
{
	long add = first(f, FCTL_OP_LINK_ADD, ms);
	long rxsc = first(f, FCTL_OP_RXSC_ADD, ms);
	long rxsa_first = first(f, FCTL_OP_RXSA_ADD, ms), rxsa_last = last(f, FCTL_OP_RXSA_ADD, ms);
	long txsa_first = first(f, FCTL_OP_TXSA_ADD, ms), txsa_last = last(f, FCTL_OP_TXSA_ADD, ms);
	long up = first(f, FCTL_OP_LINK_UP, ms), addr = first(f, FCTL_OP_ADDR_ADD, ms);

	assert_true(add >= 0 && rxsc > add && rxsa_first > rxsc);
	assert_true(f->log[add].protect);
	assert_int_equal(f->log[add].validate, FCTL_VALIDATE_STRICT);
	assert_true(txsa_first > rxsa_last);
	assert_true(up > txsa_last);
	assert_true(addr > up);
}

static void test_fail_secure_order(void **st)
{
	struct fctl_apply_result res;
	struct run r;

	(void)st;
	run_init(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	assert_secy_order(&r.f, "ms100");
	/* the cleartext VLAN under the SecY never had an address, and was made without
	 * IPv6 address generation (before it came up: the fake checks that at set-up) */
	assert_int_equal(first(&r.f, FCTL_OP_ADDR_ADD, "eth0.100"), -1);
	assert_true(r.f.log[first(&r.f, FCTL_OP_LINK_ADD, "eth0.100")].addrgen_none);
	assert_false(r.f.log[first(&r.f, FCTL_OP_LINK_ADD, "eth0.200")].addrgen_none);
	assert_false(r.f.log[first(&r.f, FCTL_OP_LINK_ADD, "ms100")].addrgen_none);
	assert_true(first(&r.f, FCTL_OP_LINK_UP, "eth0.100") > first(&r.f, FCTL_OP_LINK_ADD,
								      "eth0.100"));
	assert_int_equal(fctl_host_state_find(r.f.hs, "eth0.100")->addrgen, FCTL_ADDRGEN_NONE);
	assert_int_equal(fctl_host_state_find(r.f.hs, "eth0.200")->addrgen, FCTL_ADDRGEN_EUI64);
	assert_no_violation(&r.f);

	/* v2: every SA replaced under a live SecY, a new SecY built */
	r.f.n_log = 0;
	assert_int_equal(apply(&r, v2, &res), 0);
	fctl_apply_result_release(&res);
	assert_secy_order(&r.f, "ms300");
	assert_true(first(&r.f, FCTL_OP_TXSA_ADD, "ms100") > last(&r.f, FCTL_OP_RXSA_ADD, "ms100"));
	assert_true(first(&r.f, FCTL_OP_RXSA_ADD, "ms100") > last(&r.f, FCTL_OP_TXSA_DEL, "ms100"));
	assert_no_violation(&r.f);
	fake_release(&r.f);
}

/* A key that cannot be fetched refuses the apply before anything is sent. */
static void test_missing_key_refuses(void **st)
{
	struct fctl_apply_result res;
	char path[600];
	struct run r;
	char *before, *after;

	(void)st;
	run_init(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	before = state_text(r.f.hs);
	snprintf(path, sizeof(path), "%s/keys/k.v1", tmp);
	assert_int_equal(chmod(path, 0644), 0); /* the file backend refuses readable keys */
	r.f.calls = 0;
	assert_true(apply(&r, v2, &res) < 0);
	assert_true(res.refused);
	assert_int_equal(r.f.calls, 0);
	assert_false(journal_exists(&r));
	fctl_apply_result_release(&res);
	assert_int_equal(chmod(path, 0600), 0);
	after = state_text(r.f.hs);
	assert_string_equal(after, before);
	free(after);
	free(before);
	fake_release(&r.f);
}

/* Fails exec call k of the apply of `to` (after `from`), for every k: the host must be
 * back in the state before, exactly, every time. */
static void rollback_every_op(const struct fctl_profile *from, const struct fctl_profile *to)
{
	size_t n_ops;
	long n = forward_calls(from, to, &n_ops);

	assert_true(n >= (long)n_ops && n_ops > 5);
	for (long k = 0; k < n; k++) {
		struct fctl_apply_result res;
		struct run r;
		char *before, *after;

		run_init(&r);
		if (from) {
			assert_int_equal(apply(&r, from, &res), 0);
			fctl_apply_result_release(&res);
		}
		before = state_text(r.f.hs);
		r.f.calls = 0;
		r.f.fail_at = k;
		assert_true(apply(&r, to, &res) < 0);
		assert_true(res.failed);
		assert_true(res.failed_op >= 0 && res.failed_op <= k);
		assert_true(res.rolled_back);
		assert_true(res.restored_exactly);
		assert_false(journal_exists(&r));
		fctl_apply_result_release(&res);
		after = state_text(r.f.hs);
		if (strcmp(before, after) != 0)
			fail_msg("failure at exec %ld: state before\n%s\nstate after\n%s", k, before,
				 after);
		assert_no_violation(&r.f);
		free(before);
		free(after);
		fake_release(&r.f);
	}
}

static void test_rollback_every_op_first_apply(void **st)
{
	(void)st;
	rollback_every_op(NULL, v1);
}

static void test_rollback_every_op_change(void **st)
{
	(void)st;
	rollback_every_op(v1, v2);
}

/* The apply of `to` dies (SIGKILL) at crash point k, for every k from before the first
 * op to after the last one; recovery from the journal must restore the state before. */
static void crash_every_point(const struct fctl_profile *from, const struct fctl_profile *to)
{
	size_t n_ops;
	long n = forward_calls(from, to, &n_ops);

	for (long k = 0; k <= n; k++) {
		struct fctl_apply_result res;
		struct fctl_buf text = { 0 };
		struct run r;
		char *before, *after;
		int status, fd;
		pid_t pid;
		ssize_t got;
		char chunk[4096];

		run_init(&r);
		if (from) {
			assert_int_equal(apply(&r, from, &res), 0);
			fctl_apply_result_release(&res);
		}
		before = state_text(r.f.hs);
		r.f.calls = 0;
		r.f.crash_at = k;
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			apply(&r, to, &res);
			_exit(3); /* not reached: the fake kills the process */
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		assert_true(journal_exists(&r));
		/* the kernel as the crash left it */
		fd = open(r.f.crash_file, O_RDONLY);
		assert_true(fd >= 0);
		while ((got = read(fd, chunk, sizeof(chunk))) > 0)
			fctl_buf_append(&text, chunk, (size_t)got);
		close(fd);
		fake_release(&r.f);
		fctl_buf_putc(&text, '\0');
		r.f.hs = state_from_text(text.data);
		assert_non_null(r.f.hs);
		if (strstr(text.data, "state-end\n")[10])
			fail_msg("crash at %ld: %s", k, strstr(text.data, "state-end\n") + 10);
		fctl_buf_release(&text);
		r.f.crash_at = -1;

		assert_int_equal(fctl_engine_recover(&r.o, &res), 1);
		assert_true(res.recovered && res.rolled_back && res.restored_exactly);
		assert_false(journal_exists(&r));
		after = state_text(r.f.hs);
		if (strcmp(before, after) != 0)
			fail_msg("crash at %ld: state before\n%s\nstate after recovery\n%s", k,
				 before, after);
		assert_no_violation(&r.f);
		/* nothing left to recover; the apply then goes through */
		assert_int_equal(fctl_engine_recover(&r.o, &res), 0);
		assert_int_equal(apply(&r, to, &res), 0);
		fctl_apply_result_release(&res);
		assert_converged(&r, to);
		free(before);
		free(after);
		fake_release(&r.f);
	}
}

/* --- windows: ops pipelined to the kernel (fctl_engine_kernel_exec_window) --- */

/* A failure in the middle of a window names exactly the failing op; the ops after it in
 * the window, which the kernel took anyway, are rolled back with the rest. v1's first
 * window is its two VLAN adds (eth0.100, eth0.200; ms100 sits on eth0.100: a window of
 * its own). */
static void test_window_failure_names_op(void **st)
{
	struct fctl_apply_result res;
	struct run r;

	(void)st;
	run_init(&r);
	r.f.fail_at = 0; /* the first exec call: eth0.100's create */
	assert_true(apply(&r, v1, &res) < 0);
	assert_true(res.failed);
	assert_int_equal(res.failed_op, 0);
	assert_int_equal(res.plan->ops[0].kind, FCTL_OP_LINK_ADD);
	assert_string_equal(res.plan->ops[0].ifname, "eth0.100");
	assert_non_null(strstr(res.error, "op 1 (create-link eth0.100)"));
	assert_non_null(strstr(res.error, "1 later op sent with it took effect"));
	assert_int_equal(res.ops_done, 1); /* eth0.200, after the failing op */
	/* the kernel made eth0.200 after the failure (same window), and nothing after it */
	assert_int_equal(r.f.max_batch, 2);
	assert_true(first(&r.f, FCTL_OP_LINK_ADD, "eth0.200") >= 0);
	assert_int_equal(first(&r.f, FCTL_OP_LINK_ADD, "ms100"), -1);
	assert_true(res.rolled_back && res.restored_exactly);
	assert_int_equal(r.f.hs->n_links, 0);
	assert_false(journal_exists(&r));
	assert_no_violation(&r.f);
	fctl_apply_result_release(&res);
	fake_release(&r.f);
}

/* Without exec_batch the same failure stops at the failing op: nothing after it is sent. */
static void test_window_failure_op_by_op(void **st)
{
	struct fctl_apply_result res;
	struct run r;

	(void)st;
	run_init(&r);
	r.o.ops = &fake_ops_single;
	r.f.fail_at = 0;
	assert_true(apply(&r, v1, &res) < 0);
	assert_int_equal(res.failed_op, 0);
	assert_null(strstr(res.error, "took effect"));
	assert_int_equal(res.ops_done, 0);
	assert_int_equal(first(&r.f, FCTL_OP_LINK_ADD, "eth0.200"), -1);
	assert_true(res.rolled_back && res.restored_exactly);
	fctl_apply_result_release(&res);
	/* and the apply goes through op by op */
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_int_equal(r.f.max_batch, 1); /* exec alone: one op a call */
	fctl_apply_result_release(&res);
	assert_converged(&r, v1);
	assert_no_violation(&r.f);
	fake_release(&r.f);
}

/* An answer that never came (the kernel took the request, its ACK was lost): the op is
 * the failing one, and what it did is rolled back like the rest; at every exec call. */
static void test_window_ackless_every_op(void **st)
{
	size_t n_ops;
	long n = forward_calls(v1, v2, &n_ops);

	(void)st;
	for (long k = 0; k < n; k++) {
		struct fctl_apply_result res;
		struct run r;
		char *before, *after;

		run_init(&r);
		assert_int_equal(apply(&r, v1, &res), 0);
		fctl_apply_result_release(&res);
		before = state_text(r.f.hs);
		r.f.calls = 0;
		r.f.unknown_at = k;
		assert_int_equal(apply(&r, v2, &res), -EPROTO);
		assert_true(res.failed_op >= 0 && res.failed_op <= k);
		assert_non_null(strstr(res.error, "no answer"));
		assert_true(res.rolled_back && res.restored_exactly);
		assert_false(journal_exists(&r));
		fctl_apply_result_release(&res);
		after = state_text(r.f.hs);
		if (strcmp(before, after) != 0)
			fail_msg("no answer at exec %ld: state before\n%s\nstate after\n%s", k,
				 before, after);
		assert_no_violation(&r.f);
		free(before);
		free(after);
		fake_release(&r.f);
	}
}

/* The applies the every-op tests run do go in windows of more than one op (so their
 * failures and crash points fall inside windows), and the windows keep the plan's order. */
static void test_windows_used(void **st)
{
	struct fctl_apply_result res;
	struct run r;

	(void)st;
	run_init(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_true(r.f.max_batch >= 2);
	/* a round trip per window, not per op */
	assert_true(res.round_trips < res.writes);
	fctl_apply_result_release(&res);
	r.f.max_batch = 0;
	assert_int_equal(apply(&r, v2, &res), 0);
	assert_true(r.f.max_batch >= 2);
	fctl_apply_result_release(&res);
	assert_converged(&r, v2);
	assert_no_violation(&r.f);
	fake_release(&r.f);
}

/* QoS maps: created with the VLAN, changed in place (one non-disruptive change-link op,
 * mappings removed), gone again; every failure and crash restores the state exactly. */
static void test_qos_maps(void **st)
{
	struct fctl_apply_result res;
	struct fctl_link *l;
	struct run r;

	(void)st;
	run_init(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	assert_int_equal(apply(&r, q1, &res), 0);
	assert_int_equal(res.plan->n_ops, 1);
	assert_int_equal(res.plan->ops[0].kind, FCTL_OP_LINK_CHANGE);
	assert_int_equal(res.plan->ops[0].changes, FCTL_CHG_QOS);
	assert_false(res.plan->ops[0].disruptive);
	assert_string_equal(res.plan->ops[0].ifname, "eth0.100");
	fctl_apply_result_release(&res);
	l = fctl_host_state_find(r.f.hs, "eth0.100");
	assert_non_null(l);
	assert_int_equal(l->qos.n_egress, 2);
	assert_int_equal(fctl_vlan_qos_pcp(&l->qos, 3), 3);
	assert_int_equal(fctl_vlan_qos_pcp(&l->qos, 5), 5);
	assert_int_equal(l->qos.ingress[3], 3);
	assert_converged(&r, q1);
	/* 3 removed (sent as 3 -> 0), 5 changed, 7 added, the ingress map emptied */
	assert_int_equal(apply(&r, q2, &res), 0);
	assert_int_equal(res.plan->n_ops, 1);
	assert_int_equal(res.plan->ops[0].link.qos.n_egress, 3);
	assert_int_equal(fctl_vlan_qos_pcp(&res.plan->ops[0].link.qos, 3), 0);
	fctl_apply_result_release(&res);
	l = fctl_host_state_find(r.f.hs, "eth0.100");
	assert_int_equal(l->qos.n_egress, 2);
	assert_int_equal(fctl_vlan_qos_pcp(&l->qos, 3), 0);
	assert_int_equal(fctl_vlan_qos_pcp(&l->qos, 5), 4);
	assert_int_equal(fctl_vlan_qos_pcp(&l->qos, 7), 1);
	assert_int_equal(l->qos.ingress[3], 0);
	assert_converged(&r, q2);
	/* drift: someone maps priority 6 by hand; the plan puts it back */
	l->qos.egress[l->qos.n_egress].prio = 6;
	l->qos.egress[l->qos.n_egress].pcp = 2;
	l->qos.n_egress++;
	fctl_vlan_qos_normalize(&l->qos);
	assert_int_equal(apply(&r, q2, &res), 0);
	assert_int_equal(res.plan->n_ops, 1);
	fctl_apply_result_release(&res);
	assert_converged(&r, q2);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	assert_true(fctl_vlan_qos_empty(&fctl_host_state_find(r.f.hs, "eth0.100")->qos));
	assert_converged(&r, v1);
	assert_no_violation(&r.f);
	fake_release(&r.f);
	rollback_every_op(NULL, q1);
	crash_every_point(q1, q2);
}

/* The plan reads the port's DCB (read only) and warns when PFC is not on a PCP a VLAN's
 * egress map sends (q1: PCPs 3 and 5), or when the port has no DCB to ask. */
static const struct fctl_diag *pfc_finding(struct run *r, const struct fctl_profile *p,
					   struct fctl_live_plan *lp)
{
	char err[512];
	uint64_t writes = r->f.writes;

	assert_int_equal(fctl_engine_plan(p, &r->o, lp, err, sizeof(err)), 0);
	assert_int_equal(r->f.writes, writes); /* a plan writes nothing */
	for (size_t i = 0; i < lp->findings.n; i++)
		if (strncmp(lp->findings.v[i].code, "pfc-", 4) == 0) {
			assert_int_equal(lp->findings.v[i].severity, FCTL_SEV_WARNING);
			return &lp->findings.v[i];
		}
	return NULL;
}

static void test_qos_pfc(void **st)
{
	struct fctl_live_plan lp;
	const struct fctl_diag *g;
	struct run r;

	(void)st;
	run_init(&r);
	assert_null(pfc_finding(&r, q1, &lp)); /* PFC on all eight */
	assert_true(r.f.dcb_asks > 0);
	fctl_live_plan_release(&lp);
	r.f.pfc_en = 0x08; /* on 3 only: 5 is not */
	g = pfc_finding(&r, q1, &lp);
	assert_non_null(g);
	assert_string_equal(g->code, "pfc-off");
	assert_non_null(strstr(g->msg, "PCP 5 of port 'eth0'"));
	fctl_live_plan_release(&lp);
	r.f.dcb_r = -EOPNOTSUPP; /* virtio_net: no DCB */
	g = pfc_finding(&r, q1, &lp);
	assert_non_null(g);
	assert_string_equal(g->code, "pfc-unknown");
	assert_non_null(strstr(g->msg, "has no DCB"));
	assert_non_null(strstr(g->msg, "PCP 3,5"));
	fctl_live_plan_release(&lp);
	/* a warning, not a refusal: the apply goes through and reports it */
	{
		struct fctl_apply_result res;

		assert_int_equal(apply(&r, q1, &res), 0);
		assert_false(res.refused);
		assert_int_equal(res.findings.n, 1);
		assert_string_equal(res.findings.v[0].code, "pfc-unknown");
		fctl_apply_result_release(&res);
	}
	/* no QoS map: nothing asked */
	r.f.dcb_asks = 0;
	assert_null(pfc_finding(&r, v1, &lp));
	assert_int_equal(r.f.dcb_asks, 0);
	fctl_live_plan_release(&lp);
	fake_release(&r.f);
}

/* A carrier from before the fix: up, generating addresses, its link-local one in place. */
static void make_old_carrier(struct run *r)
{
	struct fctl_apply_result res;
	struct fctl_link *c;

	run_init(r);
	assert_int_equal(apply(r, v1, &res), 0);
	fctl_apply_result_release(&res);
	c = (struct fctl_link *)fctl_host_state_find(r->f.hs, "eth0.100");
	c->addrgen = FCTL_ADDRGEN_EUI64;
	assert_int_equal(fctl_link_add_addr(c, "fe80::5054:ff:fefa:100/64"), 0);
	r->f.n_log = 0;
	r->f.calls = 0;
	r->f.writes = 0;
}

/* The next apply converges it in place: the mode set, the address gone, nothing recreated;
 * a failure on the way restores it exactly. */
static void test_old_carrier_converges(void **st)
{
	struct fctl_apply_result res;
	struct run r;
	char *before, *after;

	(void)st;
	make_old_carrier(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_int_equal(res.plan->n_ops, 2);
	assert_int_equal(res.plan->ops[0].kind, FCTL_OP_ADDR_DEL);
	assert_string_equal(res.plan->ops[0].addr, "fe80::5054:ff:fefa:100/64");
	assert_int_equal(res.plan->ops[1].kind, FCTL_OP_LINK_CHANGE);
	assert_int_equal(res.plan->ops[1].changes, FCTL_CHG_ADDRGEN);
	assert_int_equal(fctl_plan_count_disruptive(res.plan), 0);
	assert_int_equal(res.writes, 2);
	fctl_apply_result_release(&res);
	assert_int_equal(first(&r.f, FCTL_OP_LINK_DEL, "eth0.100"), -1);
	assert_int_equal(first(&r.f, FCTL_OP_LINK_DEL, "ms100"), -1);
	assert_int_equal(fctl_host_state_find(r.f.hs, "eth0.100")->addrgen, FCTL_ADDRGEN_NONE);
	assert_int_equal(fctl_host_state_find(r.f.hs, "eth0.100")->n_addrs, 0);
	assert_converged(&r, v1);
	assert_no_violation(&r.f);
	fake_release(&r.f);

	for (long k = 0; k < 2; k++) {
		make_old_carrier(&r);
		before = state_text(r.f.hs);
		r.f.fail_at = k;
		assert_true(apply(&r, v1, &res) < 0);
		assert_true(res.rolled_back && res.restored_exactly);
		fctl_apply_result_release(&res);
		after = state_text(r.f.hs);
		assert_string_equal(before, after);
		free(before);
		free(after);
		fake_release(&r.f);
	}
}

/* --- the packet-number ledger (docs/keys-and-pn.md) --- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* No (key, SCI, direction, PN) twice on the wire: sent twice is a reused AES-GCM nonce,
 * accepted twice a replay. Returns the number of frames checked. */
static size_t assert_wire_unique(const struct fake *f)
{
	struct fctl_buf b = { 0 };
	char **v = NULL, *save = NULL;
	size_t n = 0, cap = 0;

	assert_int_equal(fctl_file_read(f->wire, &b), 0);
	fctl_buf_putc(&b, '\0');
	for (char *t = strtok_r((char *)b.data, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		char **slot = fctl_array_grow(&v, &n, &cap, sizeof(*slot));

		assert_non_null(slot);
		*slot = t;
	}
	qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 1; i < n; i++)
		if (strcmp(v[i - 1], v[i]) == 0)
			fail_msg("used twice on the wire: %s", v[i]);
	free(v);
	fctl_buf_release(&b);
	return n;
}

static const struct fctl_macsec *secy(const struct fake *f)
{
	const struct fctl_link *l = fctl_host_state_find(f->hs, "ms100");

	assert_non_null(l);
	return &l->macsec;
}

/* A TX SA deleted by hand (ip macsec del), behind fabricctl */
static void secy_txsa_drop(struct fake *f, unsigned an)
{
	struct fctl_link *l = (struct fctl_link *)fctl_host_state_find(f->hs, "ms100");

	assert_non_null(l);
	memset(&l->macsec.txsa[an], 0, sizeof(l->macsec.txsa[an]));
}

/* The power goes: the kernel's links are gone, the state directory stays. */
static void fake_reboot(struct fake *f)
{
	fctl_host_state_free(f->hs);
	f->hs = fctl_host_state_new("h1");
	assert_non_null(f->hs);
}

static struct run *pn_run(struct run *r)
{
	run_init(r);
	r->f.traffic = true;
	return r;
}

/* A host under traffic on v1, its SAs some frames along. */
static void pn_start(struct run *r, int frames)
{
	struct fctl_apply_result res;

	pn_run(r);
	assert_int_equal(apply(r, v1, &res), 0);
	fctl_apply_result_release(&res);
	fake_tick(&r->f, frames);
}

/* Some frames more, then the wire and the fail-secure rules checked; the host goes. */
static void pn_finish(struct run *r, int frames)
{
	fake_tick(&r->f, frames);
	assert_wire_unique(&r->f);
	assert_no_violation(&r->f);
	fake_release(&r->f);
}

/* Links removed by fabricctl (teardown, a key change) leave their keys retired at the PN
 * they stopped at: applied again, each key continues there, never below. */
static void test_pn_resumes_where_it_stopped(void **st)
{
	struct fctl_apply_result res;
	struct run r;
	uint64_t tx, rx;

	(void)st;
	pn_run(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	fake_tick(&r.f, 40);
	tx = secy(&r.f)->txsa[0].pn;
	rx = secy(&r.f)->rxsc[0].sa[0].pn;
	assert_int_equal(fctl_engine_teardown(&r.o, &res), 0);
	fctl_apply_result_release(&res);
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_int_equal(res.withheld, 0);
	fctl_apply_result_release(&res);
	assert_true(secy(&r.f)->txsa[0].pn >= tx && secy(&r.f)->rxsc[0].sa[0].pn >= rx);
	fake_tick(&r.f, 10);
	/* v2 (the key's next version) and back to v1's key */
	assert_int_equal(apply(&r, v2, &res), 0);
	fctl_apply_result_release(&res);
	fake_tick(&r.f, 10);
	tx = secy(&r.f)->txsa[0].pn;
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_int_equal(res.withheld, 0);
	fctl_apply_result_release(&res);
	assert_true(secy(&r.f)->txsa[0].pn > 50);
	fake_tick(&r.f, 10);
	assert_true(assert_wire_unique(&r.f) > 100);
	assert_converged(&r, v1);
	assert_no_violation(&r.f);
	fake_release(&r.f);
}

/* v2 applied with nothing withheld, and converged under traffic */
static void pn_apply_v2_whole(struct run *r)
{
	struct fctl_apply_result res;

	r->f.withheld_ok = false;
	assert_int_equal(apply(r, v2, &res), 0);
	assert_int_equal(res.withheld, 0);
	fctl_apply_result_release(&res);
	fake_tick(&r->f, 5);
	assert_converged(r, v2);
}

/* A reboot takes SAs away unrecorded: their keys are never installed again (the SecY
 * protects with no SA, nothing leaves in clear), until a key nobody used comes. */
static void test_pn_reboot_withholds(void **st)
{
	struct fctl_apply_result res;
	struct fctl_buf ledger = { 0 };
	char path[700];
	struct run r;

	(void)st;
	pn_run(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	fake_tick(&r.f, 25);
	fake_reboot(&r.f);
	r.f.withheld_ok = true;
	for (int again = 0; again < 2; again++) {
		assert_int_equal(apply(&r, v1, &res), 0);
		assert_int_equal(res.withheld, 2); /* the TX SA and the RX SA */
		assert_non_null(strstr(res.withheld_why, "new key"));
		fctl_apply_result_release(&res);
		assert_true(secy(&r.f)->protect);
		assert_false(secy(&r.f)->txsa[0].present);
		assert_false(secy(&r.f)->rxsc[0].sa[0].present);
	}
	/* the ledger names keys by a hash, never by value */
	snprintf(path, sizeof(path), "%s/sa-ledger", r.dir);
	assert_int_equal(fctl_file_read(path, &ledger), 0);
	fctl_buf_putc(&ledger, '\0');
	assert_null(strstr((char *)ledger.data, KEY_V0));
	assert_null(strstr((char *)ledger.data, KEY_V1));
	fctl_buf_release(&ledger);
	/* a new key (v2's) brings the link back */
	pn_apply_v2_whole(&r);
	/* a key retired before a reboot (v2's, removed by v1, whose own key stays withheld)
	 * continues where it stopped after it */
	r.f.withheld_ok = true;
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_int_equal(res.withheld, 2);
	fctl_apply_result_release(&res);
	fake_reboot(&r.f);
	pn_apply_v2_whole(&r);
	pn_finish(&r, 0);
}

/* A key that would continue past 3/4 of its PN space (2^32 without XPN) is withheld: it
 * has too little room left to run until a rotation; a new key brings the link back. */
static void test_pn_room(void **st)
{
	struct fctl_apply_result res;
	struct fctl_link *l;
	struct run r;

	(void)st;
	pn_start(&r, 10);
	l = (struct fctl_link *)fctl_host_state_find(r.f.hs, "ms100");
	assert_non_null(l);
	l->macsec.txsa[0].pn = 0xC0000001ull; /* as if 3.2 billion frames had gone */
	assert_int_equal(fctl_engine_teardown(&r.o, &res), 0);
	fctl_apply_result_release(&res);
	r.f.withheld_ok = true;
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_int_equal(res.withheld, 1); /* the TX SA; the RX SA's key has room */
	assert_non_null(strstr(res.withheld_why, "past 3/4 of its packet numbers"));
	fctl_apply_result_release(&res);
	assert_false(secy(&r.f)->txsa[0].present);
	assert_true(secy(&r.f)->rxsc[0].sa[0].present);
	pn_apply_v2_whole(&r);
	pn_finish(&r, 5);
}

/* A failed apply's rollback puts the old key back where it stopped, at every failing op. */
static void test_pn_rollback_every_op(void **st)
{
	size_t n_ops;
	long n = forward_calls(v1, v2, &n_ops);

	(void)st;
	for (long k = 0; k < n; k++) {
		struct fctl_apply_result res;
		struct run r;

		pn_start(&r, 30);
		r.f.calls = 0;
		r.f.fail_at = k;
		assert_true(apply(&r, v2, &res) < 0);
		if (!res.rolled_back || !res.restored_exactly || res.withheld)
			fail_msg("failure at call %ld: %s", k, res.error);
		fctl_apply_result_release(&res);
		pn_finish(&r, 5);
	}
}

/* A ledger cut short at its end (a crash mid-append) is read without its last line; one
 * that is corrupt elsewhere refuses every SA add: what it would have said is unknown. */
static void test_pn_ledger_damage(void **st)
{
	struct fctl_apply_result res;
	char path[700];
	struct run r;
	FILE *f;

	(void)st;
	pn_run(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	assert_int_equal(fctl_engine_teardown(&r.o, &res), 0);
	fctl_apply_result_release(&res);
	snprintf(path, sizeof(path), "%s/sa-ledger", r.dir);
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("live tx 00", f); /* no newline: the crash came mid-line */
	fclose(f);
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_int_equal(res.withheld, 0);
	fctl_apply_result_release(&res);
	assert_int_equal(fctl_engine_teardown(&r.o, &res), 0);
	fctl_apply_result_release(&res);
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("\nnot a ledger line\n", f);
	fclose(f);
	assert_true(apply(&r, v1, &res) < 0);
	assert_non_null(strstr(res.error, "not a ledger event"));
	assert_true(res.rolled_back && res.restored_exactly);
	fctl_apply_result_release(&res);
	assert_false(fctl_host_state_find(r.f.hs, "ms100"));
	assert_wire_unique(&r.f);
	fake_release(&r.f);
}

static bool crash_child(struct run *r, long k, void (*fn)(struct run *));

static void child_apply_v2(struct run *r)
{
	struct fctl_apply_result res;

	apply(r, v2, &res);
}

/* kill -9 at every point of a key change under traffic: recovery and the apply after it
 * never send or accept a PN twice, and withhold nothing (no SA vanished). */
static void test_pn_crash_every_point(void **st)
{
	size_t n_ops;
	long n = forward_calls(v1, v2, &n_ops);

	(void)st;
	for (long k = 0; k <= n; k++) {
		struct fctl_apply_result res;
		struct run r;

		pn_start(&r, 20);
		assert_true(crash_child(&r, k, child_apply_v2));
		assert_int_equal(fctl_engine_recover(&r.o, &res), 1);
		if (!res.restored_exactly || res.withheld)
			fail_msg("crash at %ld: recovery %s", k, res.error);
		fake_tick(&r.f, 3);
		assert_int_equal(apply(&r, v2, &res), 0);
		if (res.withheld)
			fail_msg("crash at %ld: %s", k, res.withheld_why);
		fctl_apply_result_release(&res);
		pn_finish(&r, 3);
	}
}

static void test_crash_every_point_first_apply(void **st)
{
	(void)st;
	crash_every_point(NULL, v1);
}

static void test_crash_every_point_change(void **st)
{
	(void)st;
	crash_every_point(v1, v2);
}

/* A link fabricctl did not make: teardown must leave it alone. */
static void add_foreign_vlan(struct fake *f)
{
	struct fctl_link *l = fctl_host_state_add_link(f->hs, FCTL_LINK_VLAN, "eth0.999");

	assert_non_null(l);
	snprintf(l->parent, sizeof(l->parent), "eth0");
	l->vid = 999;
}

static void test_teardown(void **st)
{
	struct fctl_apply_result res;
	struct run r;
	char *only_foreign;

	(void)st;
	run_init(&r);
	add_foreign_vlan(&r.f);
	only_foreign = state_text(r.f.hs);
	/* nothing applied yet: nothing to remove, nothing sent */
	assert_int_equal(fctl_engine_teardown(&r.o, &res), 0);
	assert_int_equal(res.plan->n_ops, 0);
	assert_int_equal(r.f.calls, 0);
	fctl_apply_result_release(&res);

	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	/* --dry-run: the plan of the removals, nothing sent */
	r.f.calls = 0;
	r.o.dry_run = true;
	assert_int_equal(fctl_engine_teardown(&r.o, &res), 0);
	assert_true(res.plan->n_ops >= 3);
	for (size_t i = 0; i < res.plan->n_ops; i++)
		assert_true(res.plan->ops[i].kind == FCTL_OP_LINK_DEL ||
			    res.plan->ops[i].kind == FCTL_OP_ADDR_DEL ||
			    res.plan->ops[i].kind == FCTL_OP_LINK_DOWN ||
			    res.plan->ops[i].kind == FCTL_OP_TXSA_DEL ||
			    res.plan->ops[i].kind == FCTL_OP_RXSA_DEL ||
			    res.plan->ops[i].kind == FCTL_OP_RXSC_DEL);
	assert_int_equal(r.f.calls, 0);
	fctl_apply_result_release(&res);
	r.o.dry_run = false;

	/* the removals: every link of v1 goes, the foreign one stays */
	assert_int_equal(fctl_engine_teardown(&r.o, &res), 0);
	assert_false(res.failed);
	assert_true(res.ops_done == res.plan->n_ops && res.ops_done > 0);
	assert_false(journal_exists(&r));
	fctl_apply_result_release(&res);
	{
		char *now = state_text(r.f.hs);

		assert_string_equal(now, only_foreign);
		free(now);
	}
	assert_no_violation(&r.f);
	/* again: nothing left */
	r.f.calls = 0;
	assert_int_equal(fctl_engine_teardown(&r.o, &res), 0);
	assert_int_equal(res.plan->n_ops, 0);
	assert_int_equal(r.f.calls, 0);
	fctl_apply_result_release(&res);
	/* the history is kept: the profile applies again */
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	assert_converged(&r, v1);
	free(only_foreign);
	fake_release(&r.f);
}

/* Teardown fails at exec call k, for every k: the host is back as it was, exactly. */
static void test_teardown_rollback_every_op(void **st)
{
	long n;

	(void)st;
	{
		struct fctl_apply_result res;
		struct run r;

		run_init(&r);
		assert_int_equal(apply(&r, v2, &res), 0);
		fctl_apply_result_release(&res);
		r.f.calls = 0;
		assert_int_equal(fctl_engine_teardown(&r.o, &res), 0);
		n = r.f.calls;
		fctl_apply_result_release(&res);
		fake_release(&r.f);
	}
	assert_true(n > 3);
	for (long k = 0; k < n; k++) {
		struct fctl_apply_result res;
		struct run r;
		char *before, *after;

		run_init(&r);
		add_foreign_vlan(&r.f);
		assert_int_equal(apply(&r, v2, &res), 0);
		fctl_apply_result_release(&res);
		before = state_text(r.f.hs);
		r.f.calls = 0;
		r.f.fail_at = k;
		assert_true(fctl_engine_teardown(&r.o, &res) < 0);
		assert_true(res.failed && res.rolled_back && res.restored_exactly);
		assert_false(journal_exists(&r));
		fctl_apply_result_release(&res);
		after = state_text(r.f.hs);
		if (strcmp(before, after) != 0)
			fail_msg("teardown failing at exec %ld: state before\n%s\nstate after\n%s", k,
				 before, after);
		assert_no_violation(&r.f);
		free(before);
		free(after);
		fake_release(&r.f);
	}
}

/* --- confirmed apply --- */

/* Moves the pending record's deadline to the past, as if its time ran out. */
static void expire_deadline(const struct run *r)
{
	char path[600], line[512];
	struct fctl_buf b = { 0 };
	FILE *f;

	snprintf(path, sizeof(path), "%s/confirm", r->dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		fctl_buf_puts(&b, strncmp(line, "deadline ", 9) == 0 ? "deadline 1\n" : line);
	fclose(f);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(b.data, f);
	fclose(f);
	fctl_buf_release(&b);
}

static int apply_confirmed(struct run *r, const struct fctl_profile *p,
			   struct fctl_apply_result *res)
{
	int rc;

	r->o.confirm_seconds = 3600;
	r->o.confirm_id = "test-id";
	rc = apply(r, p, res);
	r->o.confirm_seconds = 0;
	r->o.confirm_id = NULL;
	return rc;
}

static size_t history_len(const struct run *r, uint64_t *last_version)
{
	struct fctl_history_entry *v = NULL;
	size_t n = 0;

	assert_int_equal(fctl_engine_history(&r->o, &v, &n), 0);
	if (n && last_version)
		*last_version = v[n - 1].version;
	free(v);
	return n;
}

/* Confirmed in time: the new version stays; while pending every other change waits. */
static void test_confirm_in_time(void **st)
{
	struct fctl_confirm_pending c;
	struct fctl_apply_result res;
	char err[512];
	struct run r;
	char *pending_state;

	(void)st;
	run_init(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	assert_false(res.confirm_pending);
	fctl_apply_result_release(&res);
	assert_int_equal(fctl_engine_confirm_pending(&r.o, &c), 0);
	assert_int_equal(apply_confirmed(&r, v2, &res), 0);
	assert_true(res.confirm_pending);
	fctl_apply_result_release(&res);
	assert_converged(&r, v2);
	assert_int_equal(fctl_engine_confirm_pending(&r.o, &c), 1);
	assert_int_equal(c.version, 2);
	assert_int_equal(c.prev_version, 1);
	assert_int_equal(c.prev_seq, 1);
	assert_false(c.expiring);
	assert_string_equal(c.id, "test-id");
	assert_true(c.deadline >= c.started + 3600);
	/* another apply, a rollback, a teardown: refused, nothing sent */
	pending_state = state_text(r.f.hs);
	r.f.calls = 0;
	assert_int_equal(apply(&r, v1, &res), -EBUSY);
	assert_true(res.refused);
	assert_non_null(strstr(res.error, "awaits confirmation"));
	fctl_apply_result_release(&res);
	assert_int_equal(fctl_engine_teardown(&r.o, &res), -EBUSY);
	fctl_apply_result_release(&res);
	assert_int_equal(r.f.calls, 0);
	/* before the deadline nothing is due: not even for the right id */
	assert_int_equal(fctl_engine_confirm_expire(&r.o, "test-id", false, &c, &res), 0);
	fctl_apply_result_release(&res);
	assert_int_equal(fctl_engine_recover(&r.o, &res), 0);
	fctl_apply_result_release(&res);
	assert_int_equal(r.f.calls, 0);
	{
		char *now = state_text(r.f.hs);

		assert_string_equal(now, pending_state);
		free(now);
	}
	free(pending_state);
	assert_int_equal(fctl_engine_confirm(&r.o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.version, 2);
	assert_int_equal(fctl_engine_confirm_pending(&r.o, &c), 0);
	assert_int_equal(fctl_engine_confirm(&r.o, &c, err, sizeof(err)), -ENOENT);
	/* confirmed: a later deadline does nothing, the host stays on v2, changes go ahead */
	assert_int_equal(fctl_engine_confirm_expire(&r.o, NULL, true, &c, &res), 0);
	fctl_apply_result_release(&res);
	assert_converged(&r, v2);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	assert_no_violation(&r.f);
	fake_release(&r.f);
}

/* Not confirmed: past the deadline confirm is too late, and the expiry (the watchdog's,
 * recover's) applies the version before again, recorded in the history. */
static void test_confirm_deadline_rolls_back(void **st)
{
	struct fctl_confirm_pending c;
	struct fctl_apply_result res;
	uint64_t last = 0;
	char err[512];
	struct run r;
	char *v1_state;

	(void)st;
	run_init(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	v1_state = state_text(r.f.hs);
	assert_int_equal(apply_confirmed(&r, v2, &res), 0);
	fctl_apply_result_release(&res);
	expire_deadline(&r);
	assert_int_equal(fctl_engine_confirm(&r.o, &c, err, sizeof(err)), -ETIMEDOUT);
	assert_non_null(strstr(err, "too late"));
	assert_int_equal(apply(&r, v1, &res), -EBUSY);
	assert_non_null(strstr(res.error, "rollback is due"));
	fctl_apply_result_release(&res);
	/* another watchdog's id: not its record */
	assert_int_equal(fctl_engine_confirm_expire(&r.o, "other", false, &c, &res), 0);
	fctl_apply_result_release(&res);
	if (fctl_engine_confirm_expire(&r.o, "test-id", false, &c, &res) != 1)
		fail_msg("expire: %s", res.error);
	assert_false(res.failed);
	assert_true(res.plan && res.plan->n_ops > 0);
	assert_int_equal(c.version, 2);
	fctl_apply_result_release(&res);
	{
		char *now = state_text(r.f.hs);

		assert_string_equal(now, v1_state);
		free(now);
	}
	assert_converged(&r, v1);
	assert_int_equal(fctl_engine_confirm_pending(&r.o, &c), 0);
	assert_int_equal(history_len(&r, &last), 3);
	assert_int_equal(last, 1);
	/* recover finds the same when the watchdog is gone (a reboot): here nothing is left */
	assert_int_equal(apply_confirmed(&r, v2, &res), 0);
	fctl_apply_result_release(&res);
	expire_deadline(&r);
	assert_int_equal(fctl_engine_recover(&r.o, &res), 1);
	assert_true(res.confirm_rolled_back);
	fctl_apply_result_release(&res);
	assert_converged(&r, v1);
	free(v1_state);
	assert_no_violation(&r.f);
	fake_release(&r.f);
}

/* A confirmed first apply has no version before it: the expiry tears it down. A failed
 * confirmed apply is rolled back at once and leaves nothing pending. */
static void test_confirm_first_apply_and_failure(void **st)
{
	struct fctl_confirm_pending c;
	struct fctl_apply_result res;
	struct run r;
	char *empty;

	(void)st;
	run_init(&r);
	add_foreign_vlan(&r.f);
	empty = state_text(r.f.hs);
	assert_int_equal(apply_confirmed(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	assert_int_equal(fctl_engine_confirm_pending(&r.o, &c), 1);
	assert_int_equal(c.prev_seq, 0);
	assert_int_equal(fctl_engine_confirm_expire(&r.o, NULL, true, &c, &res), 1);
	fctl_apply_result_release(&res);
	{
		char *now = state_text(r.f.hs);

		assert_string_equal(now, empty);
		free(now);
	}
	free(empty);
	assert_int_equal(fctl_engine_confirm_pending(&r.o, &c), 0);

	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	r.f.calls = 0;
	r.f.fail_at = 3;
	assert_true(apply_confirmed(&r, v2, &res) < 0);
	assert_true(res.rolled_back && res.restored_exactly);
	assert_false(res.confirm_pending);
	fctl_apply_result_release(&res);
	assert_int_equal(fctl_engine_confirm_pending(&r.o, &c), 0);
	assert_converged(&r, v1);
	/* a record that cannot be read refuses changes rather than dropping a deadline */
	{
		char path[600];
		FILE *f;

		snprintf(path, sizeof(path), "%s/confirm", r.dir);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs("fabricctl-confirm 1\nid x\ndeadline soon\n", f);
		fclose(f);
		assert_int_equal(fctl_engine_confirm_pending(&r.o, &c), -EINVAL);
		r.f.calls = 0;
		assert_true(apply(&r, v2, &res) < 0);
		assert_non_null(strstr(res.error, "pending confirmation"));
		fctl_apply_result_release(&res);
		assert_int_equal(r.f.calls, 0);
		unlink(path);
	}
	fake_release(&r.f);
}

/* Runs fn in a child the fake kills at exec call k; the kernel state it left is loaded
 * back. Returns false when the child was not killed (fn finished before call k). */
static bool crash_child(struct run *r, long k, void (*fn)(struct run *))
{
	struct fctl_buf text = { 0 };
	char chunk[4096];
	int status, fd;
	ssize_t got;
	pid_t pid;

	r->f.calls = 0;
	r->f.crash_at = k;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn(r);
		_exit(3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	r->f.crash_at = -1;
	if (!WIFSIGNALED(status))
		return false;
	assert_int_equal(WTERMSIG(status), SIGKILL);
	fd = open(r->f.crash_file, O_RDONLY);
	assert_true(fd >= 0);
	while ((got = read(fd, chunk, sizeof(chunk))) > 0)
		fctl_buf_append(&text, chunk, (size_t)got);
	close(fd);
	fctl_buf_putc(&text, '\0');
	fctl_host_state_free(r->f.hs);
	r->f.hs = state_from_text(text.data);
	assert_non_null(r->f.hs);
	fctl_buf_release(&text);
	return true;
}

static void child_apply_confirmed(struct run *r)
{
	struct fctl_apply_result res;

	apply_confirmed(r, v2, &res);
}

static void child_expire(struct run *r)
{
	struct fctl_confirm_pending c;
	struct fctl_apply_result res;

	fctl_engine_confirm_expire(&r->o, NULL, false, &c, &res);
}

/* A crash at every point of a confirmed apply: recovery restores v1 and nothing is left
 * pending. A crash at every point of its rollback: recovery ends on v1 as well. */
static void test_confirm_crash_every_point(void **st)
{
	(void)st;
	for (int phase = 0; phase < 2; phase++) {
		for (long k = 0;; k++) {
			struct fctl_confirm_pending c;
			struct fctl_apply_result res;
			struct run r;
			char *v1_state, *after;

			run_init(&r);
			assert_int_equal(apply(&r, v1, &res), 0);
			fctl_apply_result_release(&res);
			v1_state = state_text(r.f.hs);
			if (phase == 1) {
				assert_int_equal(apply_confirmed(&r, v2, &res), 0);
				fctl_apply_result_release(&res);
				expire_deadline(&r);
			}
			if (!crash_child(&r, k, phase ? child_expire : child_apply_confirmed)) {
				free(v1_state);
				fake_release(&r.f);
				assert_true(k > 3);
				break;
			}
			assert_true(fctl_engine_recover(&r.o, &res) == 1);
			fctl_apply_result_release(&res);
			assert_int_equal(fctl_engine_confirm_pending(&r.o, &c), 0);
			assert_false(journal_exists(&r));
			after = state_text(r.f.hs);
			if (strcmp(v1_state, after) != 0)
				fail_msg("phase %d, crash at %ld: v1\n%s\nafter recovery\n%s", phase, k,
					 v1_state, after);
			assert_no_violation(&r.f);
			free(v1_state);
			free(after);
			fake_release(&r.f);
		}
	}
}

/* --- the desired-state cache (engine_cache.c) --- */

static void read_bytes(const char *name, struct fctl_buf *b)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	assert_int_equal(fctl_file_read(path, b), 0);
}

/* One apply with the cache's entry for v1.yaml as its desired state: 1 and *res, or the
 * lookup's own result when it was no hit. */
static int cached_apply(struct run *r, struct fctl_apply_result *res)
{
	struct fctl_host_state *want = NULL;
	struct fctl_profile *p = NULL;
	struct fctl_buf b = { 0 };
	char path[512];
	int h;

	snprintf(path, sizeof(path), "%s/v1.yaml", tmp);
	read_bytes("v1.yaml", &b);
	h = fctl_engine_desired_load(&r->o, path, (const unsigned char *)b.data, b.len, &p,
				     &want);
	fctl_buf_release(&b);
	if (h != 1)
		return h;
	assert_string_equal(p->name, v1->name);
	assert_int_equal(p->version, v1->version);
	assert_memory_equal(p->sha256, v1->sha256, 32);
	r->o.desired = want;
	assert_int_equal(apply(r, p, res), 0);
	r->o.desired = NULL;
	fctl_host_state_free(want);
	fctl_profile_free(p);
	return 1;
}

static void flip_byte(const char *path, long off)
{
	FILE *f = fopen(path, "r+");
	int c;

	assert_non_null(f);
	assert_int_equal(fseek(f, off, off < 0 ? SEEK_END : SEEK_SET), 0);
	c = fgetc(f);
	assert_int_equal(fseek(f, -1, SEEK_CUR), 0);
	fputc(c == '1' ? '2' : '1', f);
	fclose(f);
}

static void test_desired_cache(void **st)
{
	struct fctl_apply_result res;
	struct fctl_buf b1 = { 0 }, b2 = { 0 };
	char path[512], entry[600], saved[600];
	struct run r;

	(void)st;
	run_init(&r);
	snprintf(path, sizeof(path), "%s/v1.yaml", tmp);
	snprintf(entry, sizeof(entry), "%s/desired", r.dir);
	snprintf(saved, sizeof(saved), "%s/desired.saved", r.dir);
	read_bytes("v1.yaml", &b1);
	read_bytes("v2.yaml", &b2);
	/* nothing stored yet: a miss, and an empty host */
	assert_int_equal(cached_apply(&r, &res), 0);
	assert_int_equal(mkdir(r.dir, 0700), 0);
	/* another file's bytes are never stored as v1's */
	assert_int_equal(fctl_engine_desired_store(&r.o, path, (const unsigned char *)b2.data,
						   b2.len, v1), -ESTALE);
	assert_int_equal(fctl_engine_desired_store(&r.o, path, (const unsigned char *)b1.data,
						   b1.len, v1), 0);
	/* a hit on an empty kernel: the whole host is built from the cached state */
	assert_int_equal(cached_apply(&r, &res), 1);
	assert_int_equal(res.plan->n_ops, 11);
	fctl_apply_result_release(&res);
	assert_converged(&r, v1);
	/* unchanged: nothing to do */
	r.f.calls = 0;
	assert_int_equal(cached_apply(&r, &res), 1);
	assert_int_equal(res.plan->n_ops, 0);
	assert_int_equal(r.f.calls, 0);
	fctl_apply_result_release(&res);
	/* the kernel changed under the unchanged profile (here: v2 applied): the cached
	 * apply still reads it and repairs it */
	assert_int_equal(apply(&r, v2, &res), 0);
	fctl_apply_result_release(&res);
	assert_int_equal(cached_apply(&r, &res), 1);
	assert_true(res.plan->n_ops > 0);
	fctl_apply_result_release(&res);
	assert_converged(&r, v1);
	/* the lookup of other bytes is a miss */
	assert_int_equal(fctl_engine_desired_load(&r.o, path, (const unsigned char *)b2.data,
						  b2.len, &(struct fctl_profile *){ NULL },
						  &(struct fctl_host_state *){ NULL }), 0);
	/* an entry changed anywhere (its state, its MAC), writable by others, or without
	 * its key is not trusted */
	assert_int_equal(link(entry, saved), 0);
	assert_int_equal(fctl_engine_desired_store(&r.o, path, (const unsigned char *)b1.data,
						   b1.len, v1), 0);
	flip_byte(entry, 200);
	assert_int_equal(cached_apply(&r, &res), -EBADMSG);
	assert_int_equal(fctl_engine_desired_store(&r.o, path, (const unsigned char *)b1.data,
						   b1.len, v1), 0);
	flip_byte(entry, -5);
	assert_int_equal(cached_apply(&r, &res), -EBADMSG);
	assert_int_equal(rename(saved, entry), 0);
	assert_int_equal(cached_apply(&r, &res), 1);
	fctl_apply_result_release(&res);
	assert_int_equal(chmod(entry, 0622), 0);
	assert_int_equal(cached_apply(&r, &res), -EBADMSG);
	assert_int_equal(chmod(entry, 0600), 0);
	snprintf(saved, sizeof(saved), "%s/desired.key", r.dir);
	assert_int_equal(unlink(saved), 0);
	assert_int_equal(cached_apply(&r, &res), -EBADMSG);
	/* a new key with the next store */
	assert_int_equal(fctl_engine_desired_store(&r.o, path, (const unsigned char *)b1.data,
						   b1.len, v1), 0);
	assert_int_equal(cached_apply(&r, &res), 1);
	fctl_apply_result_release(&res);
	/* a key file whose inode changed (here its mode) is validated again: a miss, until
	 * the next store */
	snprintf(saved, sizeof(saved), "%s/keys/k", tmp);
	assert_int_equal(chmod(saved, 0644), 0);
	assert_int_equal(cached_apply(&r, &res), 0);
	assert_int_equal(chmod(saved, 0600), 0);
	assert_int_equal(cached_apply(&r, &res), 0);
	assert_int_equal(fctl_engine_desired_store(&r.o, path, (const unsigned char *)b1.data,
						   b1.len, v1), 0);
	assert_int_equal(cached_apply(&r, &res), 1);
	fctl_apply_result_release(&res);
	fctl_buf_release(&b1);
	fctl_buf_release(&b2);
	fake_release(&r.f);
}

/* A VLAN on a port the host does not have: the live plan warns, naming the port and the
 * profile's line of the link end that puts it there; apply refuses before any write; a
 * dry run plans with the same warning. */
static void test_parent_missing(void **st)
{
	char text[4096], *t;
	struct fctl_apply_result res;
	struct fctl_live_plan lp;
	struct fctl_profile *p;
	struct run r;
	char err[512];

	(void)st;
	snprintf(text, sizeof(text), profile_head, 1, 0, "", "10.100.0.1/24");
	while ((t = strstr(text, "eth0")))
		t[3] = '9';
	write_file("eth9.yaml", text, 0644);
	p = load("eth9.yaml");
	run_init(&r);
	assert_int_equal(fctl_engine_plan(p, &r.o, &lp, err, sizeof(err)), 0);
	assert_true(lp.plan->n_ops > 0);
	assert_int_equal(lp.findings.n, 1);
	assert_string_equal(lp.findings.v[0].code, "parent-missing");
	assert_int_equal(lp.findings.v[0].severity, FCTL_SEV_WARNING);
	assert_int_equal(lp.findings.v[0].line, 31); /* "    a: h1:eth9" (after pol and pol3) */
	assert_non_null(strstr(lp.findings.v[0].msg, "'eth9'"));
	assert_non_null(strstr(lp.findings.v[0].msg, "eth9.100"));
	fctl_live_plan_release(&lp);

	r.o.dry_run = true;
	assert_int_equal(apply(&r, p, &res), 0);
	assert_int_equal(res.findings.n, 1);
	fctl_apply_result_release(&res);
	r.o.dry_run = false;
	assert_int_equal(apply(&r, p, &res), -ENODEV);
	assert_true(res.refused);
	assert_int_equal(r.f.calls, 0);
	assert_non_null(strstr(res.error, "no device 'eth9'"));
	fctl_apply_result_release(&res);

	/* the port on eth0: no finding */
	assert_int_equal(fctl_engine_plan(v1, &r.o, &lp, err, sizeof(err)), 0);
	assert_int_equal(lp.findings.n, 0);
	fctl_live_plan_release(&lp);
	fake_release(&r.f);
	fctl_profile_free(p);
}

/* A saved plan: the file round-trips and refuses an edit of its operations; an apply
 * sealed with a live plan goes through while the host is as planned, and is refused
 * (-ESTALE, nothing written) once the live state changed or the plan would differ. */
static void test_saved_plan(void **st)
{
	struct fctl_saved_plan sp = { .profile_version = 2 }, back;
	struct fctl_apply_result res;
	struct fctl_live_plan lp, lp1;
	struct fctl_buf b = { 0 };
	char err[1400], path[600], *t;
	struct run r;

	(void)st;
	run_init(&r);
	assert_int_equal(fctl_engine_plan(v2, &r.o, &lp, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/saved.plan", tmp);
	snprintf(sp.host, sizeof(sp.host), "h1");
	snprintf(sp.profile_file, sizeof(sp.profile_file), "%s/v2.yaml", tmp);
	snprintf(sp.profile_name, sizeof(sp.profile_name), "engine \"test\"");
	memcpy(sp.profile_sha256, v2->sha256, 32);
	sp.seal = lp.seal;
	sp.ops = lp.plan->n_ops;
	assert_int_equal(fctl_engine_plan_save(path, &sp, lp.plan, err, sizeof(err)), 0);
	assert_int_equal(fctl_engine_plan_load(path, &back, err, sizeof(err)), 0);
	assert_string_equal(back.host, "h1");
	assert_string_equal(back.netns, "");
	assert_string_equal(back.profile_file, sp.profile_file);
	assert_string_equal(back.profile_name, "engine \"test\"");
	assert_int_equal(back.profile_version, 2);
	assert_int_equal(back.ops, sp.ops);
	assert_memory_equal(back.profile_sha256, v2->sha256, 32);
	assert_memory_equal(&back.seal, &lp.seal, sizeof(lp.seal));
	/* no key bytes in the file: key ids only */
	assert_int_equal(fctl_file_read(path, &b), 0);
	assert_int_equal(fctl_buf_putc(&b, '\0'), 0);
	assert_null(strstr(b.data, KEY_V0));
	assert_null(strstr(b.data, KEY_V1));
	assert_non_null((t = strstr(b.data, "\"create-link\"")));
	memcpy(t + 1, "delete", 6);
	write_file("saved.plan", b.data, 0644);
	assert_int_equal(fctl_engine_plan_load(path, &back, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "edited"));
	fctl_buf_release(&b);

	/* the host changed since the plan (v1 applied): refused, nothing written */
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	r.f.calls = 0;
	r.o.expect = &lp.seal;
	assert_int_equal(apply(&r, v2, &res), -ESTALE);
	assert_true(res.refused);
	assert_int_equal(r.f.calls, 0);
	assert_non_null(strstr(res.error, "live state"));
	fctl_apply_result_release(&res);
	/* a plan made now holds, and is applied */
	r.o.expect = NULL;
	assert_int_equal(fctl_engine_plan(v2, &r.o, &lp1, err, sizeof(err)), 0);
	r.o.expect = &lp1.seal;
	assert_int_equal(apply(&r, v2, &res), 0);
	assert_true(r.f.calls > 0);
	fctl_apply_result_release(&res);
	r.o.expect = NULL;
	assert_converged(&r, v2);
	/* the same live state, another plan (v2's, nothing to do, sealing an apply of v1) */
	fctl_live_plan_release(&lp1);
	assert_int_equal(fctl_engine_plan(v2, &r.o, &lp1, err, sizeof(err)), 0);
	r.f.calls = 0;
	r.o.expect = &lp1.seal;
	assert_int_equal(apply(&r, v1, &res), -ESTALE);
	assert_non_null(strstr(res.error, "differs"));
	assert_int_equal(r.f.calls, 0);
	fctl_apply_result_release(&res);
	fctl_live_plan_release(&lp);
	fctl_live_plan_release(&lp1);
	fake_release(&r.f);
}

/* The kernel session of the writes outside an apply (the agent's SA steps, MKA) reaches
 * the same table as an apply, and its SA door, fctl_engine_sa_write, takes SA writes
 * only. */
static void test_kernel_session(void **st)
{
	static const enum fctl_op_kind sa_kinds[] = {
		FCTL_OP_TXSA_ADD, FCTL_OP_TXSA_UPD, FCTL_OP_TXSA_DEL,
		FCTL_OP_RXSA_ADD, FCTL_OP_RXSA_UPD, FCTL_OP_RXSA_DEL,
	};
	static const enum fctl_op_kind other_kinds[] = {
		FCTL_OP_LINK_ADD, FCTL_OP_LINK_DEL, FCTL_OP_LINK_UP, FCTL_OP_LINK_DOWN,
		FCTL_OP_RXSC_ADD, FCTL_OP_RXSC_UPD, FCTL_OP_RXSC_DEL, FCTL_OP_ADDR_ADD,
		FCTL_OP_ADDR_DEL,
	};
	struct fctl_engine_kernel *k = NULL;
	struct fctl_nl_err err = { 0 };
	struct fctl_apply_result res;
	struct fctl_op op = { 0 };
	uint8_t enc = 0;
	struct run r;
	long calls;

	(void)st;
	run_init(&r);
	assert_int_equal(apply(&r, v1, &res), 0);
	fctl_apply_result_release(&res);
	/* the fake sorts its links after every op: the SecY by name, not by pointer */
	for (size_t i = 0; i < r.f.hs->n_links; i++)
		if (r.f.hs->links[i].kind == FCTL_LINK_MACSEC) {
			snprintf(op.ifname, sizeof(op.ifname), "%s", r.f.hs->links[i].name);
			enc = r.f.hs->links[i].macsec.encoding_sa;
		}
	assert_true(op.ifname[0] != '\0');
	for (size_t i = 0; i < sizeof(sa_kinds) / sizeof(sa_kinds[0]); i++) {
		op.kind = sa_kinds[i];
		assert_true(fctl_engine_op_is_sa_write(&op));
	}
	for (size_t i = 0; i < sizeof(other_kinds) / sizeof(other_kinds[0]); i++) {
		op.kind = other_kinds[i];
		assert_false(fctl_engine_op_is_sa_write(&op));
	}
	assert_int_equal(fctl_engine_kernel_open(&fake_ops, &r.f, NULL, &k), 0);
	assert_null(fctl_engine_kernel_nl(k)); /* no fctl_nl under a test's table */
	calls = r.f.calls;
	/* no SA write: refused at the SA door, nothing sent; executed as a plan op */
	op.kind = FCTL_OP_LINK_UP;
	assert_int_equal(fctl_engine_sa_write(k, &op, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not an SA write"));
	assert_int_equal(r.f.calls, calls);
	assert_int_equal(fctl_engine_kernel_exec(k, &op, NULL, &err), 0);
	assert_int_equal(r.f.calls, calls + 1);
	/* the encoding SA says which TX SA transmits: an SA write; another change is not */
	op.kind = FCTL_OP_LINK_CHANGE;
	op.link.kind = FCTL_LINK_MACSEC;
	op.link.macsec.encoding_sa = enc;
	op.changes = FCTL_CHG_MTU;
	assert_false(fctl_engine_op_is_sa_write(&op));
	op.changes = FCTL_CHG_ENCODING_SA;
	assert_true(fctl_engine_op_is_sa_write(&op));
	assert_int_equal(fctl_engine_sa_write(k, &op, NULL, &err), 0);
	assert_int_equal(r.f.calls, calls + 2);
	assert_int_equal(r.f.log[r.f.n_log - 1].kind, FCTL_OP_LINK_CHANGE);
	/* a table without a neighbour copy says so */
	assert_int_equal(fctl_engine_kernel_neigh_copy(k, "a", "b", NULL, 0, &err), -EOPNOTSUPP);
	fctl_engine_kernel_close(k);
	fctl_engine_kernel_close(NULL);
	assert_converged(&r, v1);
	assert_no_violation(&r.f);
	fake_release(&r.f);
}

/* The agent's door (a kernel session of its own, as its rotation steps use it): no ledger,
 * no SA add; with the host's ledger, a key retired by a rotation step continues where it
 * stopped when it comes back, and a key whose SA vanished is withheld (1). */
static void test_pn_session(void **st)
{
	struct fctl_engine_kernel *k = NULL;
	struct fctl_nl_err err = { 0 };
	struct fctl_key *key = NULL;
	struct fctl_keyref ref = { .backend = (char *)(uintptr_t) "file",
				   .id = (char *)(uintptr_t) "keys/kr" }; /* a rotation's new key */
	struct fctl_op op = { .kind = FCTL_OP_TXSA_ADD, .an = 1 };
	const struct fctl_macsec *m;
	char why[600];
	struct run r;

	(void)st;
	write_file("keys/kr", "0f1e2d3c4b5a69788796a5b4c3d2e1f0\n", 0600);
	pn_start(&r, 10);
	fake_add_key(&r.f, "keys/kr", 0, "0f1e2d3c4b5a69788796a5b4c3d2e1f0");
	m = secy(&r.f);
	assert_true(m->sci != 0); /* the agent's TX ops name no SCI (op.sci 0): the SecY's */
	snprintf(op.ifname, sizeof(op.ifname), "ms100");
	op.sa.present = true;
	op.sa.pn = 1;
	fctl_keyid_from_ref(&ref, op.sa.keyid);
	op.sa.has_keyid = true;
	assert_int_equal(fctl_key_fetch(&ref, tmp, 16, &key, why, sizeof(why)), 0);
	assert_int_equal(fctl_engine_kernel_open(&fake_ops, &r.f, NULL, &k), 0);
	assert_int_equal(fctl_engine_sa_write(k, &op, key, &err), -EPERM);
	fctl_engine_kernel_ledger(k, r.dir);
	/* staged inactive (a rotation's TX stage), made active, some frames, retired */
	assert_int_equal(fctl_engine_sa_write(k, &op, key, &err), 0);
	op.kind = FCTL_OP_TXSA_UPD;
	op.sa.active = true;
	assert_int_equal(fctl_engine_sa_write(k, &op, NULL, &err), 0);
	fake_tick(&r.f, 7);
	op.sa.active = false;
	assert_int_equal(fctl_engine_sa_write(k, &op, NULL, &err), 0);
	op.kind = FCTL_OP_TXSA_DEL;
	assert_int_equal(fctl_engine_sa_write(k, &op, NULL, &err), 0);
	/* back: where it stopped */
	op.kind = FCTL_OP_TXSA_ADD;
	assert_int_equal(fctl_engine_sa_write(k, &op, key, &err), 0);
	assert_true(secy(&r.f)->txsa[1].pn >= 8);
	/* gone behind the ledger's back: withheld, nothing sent */
	secy_txsa_drop(&r.f, 1);
	assert_int_equal(fctl_engine_sa_write(k, &op, key, &err), 1);
	assert_non_null(strstr(err.msg, "new key"));
	assert_false(secy(&r.f)->txsa[1].present);
	assert_int_equal(fctl_engine_kernel_withheld(k, why, sizeof(why)), 1);
	fctl_engine_kernel_close(k);
	fctl_key_free(key);
	pn_finish(&r, 3);
}

/* history's text and JSON (fctl_engine_history_format): what `fabricctl history` prints,
 * locally and through the agent */
static void expect_history(const struct fctl_history_entry *v, size_t n, bool json,
			   const char *want)
{
	struct fctl_buf b = { 0 };

	fctl_engine_history_format(v, n, json, &b);
	fctl_buf_putc(&b, 0);
	assert_string_equal(b.data, want);
	fctl_buf_release(&b);
}

static void test_history_format(void **st)
{
	struct fctl_history_entry v[2] = {
		{ .seq = 1, .version = 7, .name = "lab", .time = "2026-12-05T01:00:00Z",
		  .sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		  .file = "/s/history/000001-v7.yaml" },
		{ .seq = 2, .version = 8, .name = "l\"b", .time = "2026-12-05T02:00:00Z",
		  .sha256 = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
		  .file = "/s/history/000002-v8.yaml" },
	};

	(void)st;
	expect_history(v, 0, false, "no profile has been applied on this host\n");
	expect_history(v, 0, true, "[]\n");
	expect_history(v, 2, false,
		       "SEQ   VERSION  PROFILE              APPLIED (UTC)         SHA-256\n"
		       "1     7        lab                  2026-12-05T01:00:00Z  0123456789abcdef\n"
		       "2     8        l\"b                  2026-12-05T02:00:00Z  fedcba9876543210\n");
	expect_history(v, 2, true,
		       "[{\"seq\":1,\"version\":7,\"profile\":\"lab\",\"applied\":"
		       "\"2026-12-05T01:00:00Z\",\"sha256\":\"0123456789abcdef0123456789abcdef"
		       "0123456789abcdef0123456789abcdef\",\"stored\":\"/s/history/000001-v7.yaml\"},"
		       "{\"seq\":2,\"version\":8,\"profile\":\"l\\\"b\",\"applied\":"
		       "\"2026-12-05T02:00:00Z\",\"sha256\":\"fedcba9876543210fedcba9876543210"
		       "fedcba9876543210fedcba9876543210\",\"stored\":\"/s/history/000002-v8.yaml\"}]\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_then_reapply),
		cmocka_unit_test(test_desired_cache),
		cmocka_unit_test(test_parent_missing),
		cmocka_unit_test(test_saved_plan),
		cmocka_unit_test(test_fail_secure_order),
		cmocka_unit_test(test_missing_key_refuses),
		cmocka_unit_test(test_old_carrier_converges),
		cmocka_unit_test(test_qos_maps),
		cmocka_unit_test(test_qos_pfc),
		cmocka_unit_test(test_rollback_every_op_first_apply),
		cmocka_unit_test(test_rollback_every_op_change),
		cmocka_unit_test(test_crash_every_point_first_apply),
		cmocka_unit_test(test_crash_every_point_change),
		cmocka_unit_test(test_window_failure_names_op),
		cmocka_unit_test(test_window_failure_op_by_op),
		cmocka_unit_test(test_window_ackless_every_op),
		cmocka_unit_test(test_windows_used),
		cmocka_unit_test(test_teardown),
		cmocka_unit_test(test_teardown_rollback_every_op),
		cmocka_unit_test(test_confirm_in_time),
		cmocka_unit_test(test_confirm_deadline_rolls_back),
		cmocka_unit_test(test_confirm_first_apply_and_failure),
		cmocka_unit_test(test_confirm_crash_every_point),
		cmocka_unit_test(test_pn_resumes_where_it_stopped),
		cmocka_unit_test(test_pn_reboot_withholds),
		cmocka_unit_test(test_pn_room),
		cmocka_unit_test(test_pn_rollback_every_op),
		cmocka_unit_test(test_pn_crash_every_point),
		cmocka_unit_test(test_pn_ledger_damage),
		cmocka_unit_test(test_pn_session),
		cmocka_unit_test(test_kernel_session),
		cmocka_unit_test(test_history_format),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
