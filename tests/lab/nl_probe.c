// SPDX-License-Identifier: MIT
/*
 * Lab probe for the netlink layer, run inside a lab guest by tests/lab/nl_live.sh.
 *
 *   fctl_nl_probe setup    DATAFILE   create eth0.100 + macsec0 + RX SC/SA + TX SA + addresses
 *   fctl_nl_probe check    DATAFILE   read state back and compare with what setup asked for
 *   fctl_nl_probe dump                print fctl_nl_read_state as JSON (for the ip -j oracle)
 *   fctl_nl_probe stats    DATAFILE   MACsec statistics after traffic
 *   fctl_nl_probe badops   DATAFILE   injected bad operations: errno and extended ACK
 *   fctl_nl_probe netns    NAME       sockets inside another network namespace
 *   fctl_nl_probe teardown DATAFILE   delete everything, check it is gone
 *
 * DATAFILE (mode 0600, made by the test): lines "key HEX", "keyid HEX",
 * "peer_mac MAC", "addr4 CIDR", "addr6 CIDR". Prints PASS/FAIL lines; exits 1
 * when anything failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fctl/nl.h"

#define VLAN "eth0.100"
#define MACSEC "macsec0"
#define PORT 1
#define WINDOW 32

struct data {
	uint8_t key[16];
	uint8_t keyid[16];
	uint8_t peer_mac[6];
	uint8_t mac[6];
	char addr4[64];
	char addr6[64];
};

static int failed;
static int passed;

static void check(bool ok, const char *name, const char *fmt, ...) FCTL_PRINTF(3, 4);

static void check(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s", ok ? "PASS" : "FAIL", name);
	if (fmt) {
		printf(": ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

/* The same SA read twice: equal in every field except the PN, which is a live
 * counter (any frame on the link between the reads moves it, e.g. IPv6
 * neighbour discovery), so the later read may only be ahead. Field by field
 * rather than memcmp: the struct has padding. */
static bool sa_same_later(const struct fctl_sa *first, const struct fctl_sa *later)
{
	return first->present == later->present && first->active == later->active &&
	       first->has_keyid == later->has_keyid &&
	       memcmp(first->keyid, later->keyid, sizeof(first->keyid)) == 0 &&
	       first->ssci == later->ssci && first->has_salt == later->has_salt &&
	       memcmp(first->salt, later->salt, sizeof(first->salt)) == 0 &&
	       later->pn >= first->pn;
}

static bool sas_same_later(const struct fctl_sa *first, const struct fctl_sa *later)
{
	for (size_t an = 0; an < FCTL_MAX_AN; an++)
		if (!sa_same_later(&first[an], &later[an]))
			return false;
	return true;
}

static int read_mac(const char *ifname, uint8_t mac[6])
{
	char path[128], buf[32] = "";
	FILE *f;
	int r = -EIO;

	snprintf(path, sizeof(path), "/sys/class/net/%s/address", ifname);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		r = fctl_parse_mac(buf, mac);
	}
	fclose(f);
	return r;
}

static int load(const char *path, struct data *d)
{
	char line[256];
	struct stat st;
	int got = 0, r = 0;
	FILE *f;

	memset(d, 0, sizeof(*d));
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) < 0 || (st.st_mode & 077)) {
		fprintf(stderr, "nl_probe: %s: key file readable by others\n", path);
		fclose(f);
		return -EPERM;
	}
	while (r >= 0 && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ' ');

		if (!v)
			continue;
		*v++ = '\0';
		v[strcspn(v, "\n")] = '\0';
		if (strcmp(line, "key") == 0)
			r = fctl_parse_hex(v, d->key, sizeof(d->key)), got |= 1;
		else if (strcmp(line, "keyid") == 0)
			r = fctl_parse_hex(v, d->keyid, sizeof(d->keyid)), got |= 2;
		else if (strcmp(line, "peer_mac") == 0)
			r = fctl_parse_mac(v, d->peer_mac), got |= 4;
		else if (strcmp(line, "addr4") == 0)
			snprintf(d->addr4, sizeof(d->addr4), "%s", v), got |= 8;
		else if (strcmp(line, "addr6") == 0)
			snprintf(d->addr6, sizeof(d->addr6), "%s", v), got |= 16;
	}
	fctl_memzero(line, sizeof(line));
	fclose(f);
	if (r >= 0 && got != 31)
		r = -EINVAL;
	if (r >= 0)
		r = read_mac("eth0", d->mac);
	if (r < 0)
		fctl_memzero(d, sizeof(*d));
	return r;
}

static struct fctl_nl *open_nl(void)
{
	struct fctl_nl *nl = NULL;
	int r = fctl_nl_open(NULL, &nl);

	check(r == 0, "open", r ? "%s" : NULL, strerror(-r));
	return r == 0 ? nl : NULL;
}

static void vlan_link(struct fctl_link *l)
{
	memset(l, 0, sizeof(*l));
	l->kind = FCTL_LINK_VLAN;
	strcpy(l->name, VLAN);
	strcpy(l->parent, "eth0");
	l->vid = 100;
	l->proto = FCTL_VLAN_8021Q;
	l->mtu = 1500;
	l->has_mtu = true;
}

static void macsec_link(const struct data *d, struct fctl_link *l)
{
	struct fctl_macsec *m = &l->macsec;

	memset(l, 0, sizeof(*l));
	l->kind = FCTL_LINK_MACSEC;
	strcpy(l->name, MACSEC);
	strcpy(l->parent, VLAN);
	l->mtu = 1468;
	l->has_mtu = true;
	m->sci = fctl_sci_make(d->mac, PORT);
	m->port = PORT;
	m->has_port = true;
	m->cipher = FCTL_CIPHER_GCM_AES_128;
	m->icv_len = 16;
	m->encrypt = true;
	m->protect = true;
	m->replay_protect = true;
	m->window = WINDOW;
	m->validate = FCTL_VALIDATE_STRICT;
	m->send_sci = true;
	m->encoding_sa = 0;
}

static void sa(const struct data *d, struct fctl_sa *s, bool active)
{
	memset(s, 0, sizeof(*s));
	s->present = true;
	s->active = active;
	s->pn = 1;
	memcpy(s->keyid, d->keyid, 16);
	s->has_keyid = true;
}

static int run(struct fctl_nl *nl, const struct fctl_op *op, const uint8_t *key, size_t key_len,
	       const char *name)
{
	struct fctl_nl_err err = { 0 };
	int r = fctl_nl_exec(nl, op, key, key_len, &err);

	check(r == 0, name, r ? "%s" : NULL, err.msg);
	return r;
}

static void op_init(struct fctl_op *op, enum fctl_op_kind kind, const char *ifname)
{
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	snprintf(op->ifname, sizeof(op->ifname), "%s", ifname);
}

static int cmd_setup(struct fctl_nl *nl, const struct data *d)
{
	struct fctl_op op;
	uint64_t peer = fctl_sci_make(d->peer_mac, PORT);

	op_init(&op, FCTL_OP_LINK_ADD, VLAN);
	vlan_link(&op.link);
	run(nl, &op, NULL, 0, "add vlan " VLAN);
	op_init(&op, FCTL_OP_LINK_ADD, MACSEC);
	macsec_link(d, &op.link);
	run(nl, &op, NULL, 0, "add macsec " MACSEC);
	op_init(&op, FCTL_OP_RXSC_ADD, MACSEC);
	op.sci = peer;
	op.rxsc_active = true;
	run(nl, &op, NULL, 0, "add rxsc");
	op_init(&op, FCTL_OP_RXSA_ADD, MACSEC);
	op.sci = peer;
	op.an = 0;
	sa(d, &op.sa, true);
	run(nl, &op, d->key, sizeof(d->key), "add rxsa an 0");
	/* TX SA inactive first, then activated: the engine's order */
	op_init(&op, FCTL_OP_TXSA_ADD, MACSEC);
	op.an = 0;
	sa(d, &op.sa, false);
	run(nl, &op, d->key, sizeof(d->key), "add txsa an 0 (inactive)");
	op.kind = FCTL_OP_TXSA_UPD;
	op.sa.active = true;
	run(nl, &op, NULL, 0, "activate txsa an 0");
	op_init(&op, FCTL_OP_LINK_UP, VLAN);
	run(nl, &op, NULL, 0, "up " VLAN);
	op_init(&op, FCTL_OP_LINK_UP, MACSEC);
	run(nl, &op, NULL, 0, "up " MACSEC);
	op_init(&op, FCTL_OP_ADDR_ADD, MACSEC);
	op.addr = (char *)(uintptr_t)d->addr4;
	run(nl, &op, NULL, 0, "add ipv4 address");
	op.addr = (char *)(uintptr_t)d->addr6;
	run(nl, &op, NULL, 0, "add ipv6 address");
	/* LINK_CHANGE: a fresh change object; window 32 -> 64 -> 32 */
	op_init(&op, FCTL_OP_LINK_CHANGE, MACSEC);
	macsec_link(d, &op.link);
	op.changes = FCTL_CHG_WINDOW;
	op.link.macsec.window = 64;
	run(nl, &op, NULL, 0, "change window alone (no cipher/sci resent)");
	op.link.macsec.window = WINDOW;
	run(nl, &op, NULL, 0, "change window back");
	return 0;
}

static bool has_addr(const struct fctl_link *l, const char *a)
{
	for (size_t i = 0; i < l->n_addrs; i++)
		if (strcmp(l->addrs[i], a) == 0)
			return true;
	return false;
}

static int cmd_check(struct fctl_nl *nl, const struct data *d)
{
	static const char *const names[] = { MACSEC };
	struct fctl_host_state *hs = NULL;
	struct fctl_link want;
	const struct fctl_link *v, *l;
	const struct fctl_macsec *m;
	const struct fctl_rxsc *rx;
	struct fctl_nl_stats st;
	char sci[24];
	int r;

	r = fctl_nl_read_state(nl, "h", names, 1, &hs);
	check(r == 0, "read state (named macsec0 + parents)", r ? "%s" : NULL, strerror(-r));
	if (r < 0)
		return r;
	check(hs->n_links == 2, "two links read", "%zu", hs->n_links);
	v = fctl_host_state_find(hs, VLAN);
	l = fctl_host_state_find(hs, MACSEC);
	check(v && l, "vlan and macsec found", NULL);
	if (!v || !l)
		goto out;
	vlan_link(&want);
	check(v->kind == FCTL_LINK_VLAN && v->vid == 100 && v->proto == FCTL_VLAN_8021Q,
	      "vlan id 100 802.1Q", "vid %u proto %d", v->vid, v->proto);
	check(strcmp(v->parent, "eth0") == 0 && v->mtu == 1500 && v->up && v->ifindex > 0,
	      "vlan parent/mtu/up", "parent %s mtu %u up %d", v->parent, v->mtu, v->up);
	macsec_link(d, &want);
	m = &l->macsec;
	fctl_sci_format(m->sci, sci);
	check(m->sci == want.macsec.sci, "macsec sci", "%s", sci);
	check(m->has_port && m->port == PORT, "macsec port derived from the sci", "%u", m->port);
	check(m->cipher == FCTL_CIPHER_GCM_AES_128, "macsec cipher (legacy id read back)", "%d",
	      m->cipher);
	check(m->icv_len == 16 && m->encrypt && m->protect && m->replay_protect &&
		      m->window == WINDOW && m->validate == FCTL_VALIDATE_STRICT && m->send_sci &&
		      !m->end_station && !m->scb && m->encoding_sa == 0 &&
		      m->offload == FCTL_OFFLOAD_OFF,
	      "macsec flags", "icv %u enc %d prot %d replay %d window %u validate %d sci %d es %d "
			      "scb %d esa %u offload %d",
	      m->icv_len, m->encrypt, m->protect, m->replay_protect, m->window, m->validate,
	      m->send_sci, m->end_station, m->scb, m->encoding_sa, m->offload);
	check(strcmp(l->parent, VLAN) == 0 && l->mtu == 1468 && l->up, "macsec parent/mtu/up",
	      "parent %s mtu %u up %d", l->parent, l->mtu, l->up);
	check(m->txsa[0].present && m->txsa[0].active && m->txsa[0].has_keyid &&
		      memcmp(m->txsa[0].keyid, d->keyid, 16) == 0 && m->txsa[0].pn >= 1,
	      "tx sa 0 active, keyid, pn", "present %d active %d pn %" PRIu64, m->txsa[0].present,
	      m->txsa[0].active, m->txsa[0].pn);
	check(!m->txsa[1].present && !m->txsa[2].present && !m->txsa[3].present,
	      "no other tx sa", NULL);
	rx = fctl_macsec_find_rxsc(m, fctl_sci_make(d->peer_mac, PORT));
	check(m->n_rxsc == 1 && rx && rx->active, "rx sc of the peer, active", "n %zu", m->n_rxsc);
	if (rx)
		check(rx->sa[0].present && rx->sa[0].active && rx->sa[0].has_keyid &&
			      memcmp(rx->sa[0].keyid, d->keyid, 16) == 0 && rx->sa[0].pn >= 1,
		      "rx sa 0 active, keyid", "pn %" PRIu64, rx->sa[0].pn);
	check(l->n_addrs == 2 && has_addr(l, d->addr4) && has_addr(l, d->addr6),
	      "addresses (no link-local)", "n %zu", l->n_addrs);
	/* one link by name (what the agent's SA requests read): the same SecY as the
	 * dump gives, without the other links, addresses or parent */
	{
		struct fctl_host_state *one = NULL;
		const struct fctl_link *o;
		bool same;

		r = fctl_nl_read_link(nl, MACSEC, &one);
		o = r == 0 ? fctl_host_state_find(one, MACSEC) : NULL;
		check(r == 0 && one->n_links == 1 && o, "read_link: the one macsec link",
		      r ? "%s" : NULL, strerror(-r));
		if (o) {
			const struct fctl_macsec *a = &o->macsec;

			same = o->ifindex == l->ifindex && o->mtu == l->mtu && a->sci == m->sci &&
			       a->cipher == m->cipher && a->encoding_sa == m->encoding_sa &&
			       a->window == m->window && a->n_rxsc == m->n_rxsc &&
			       sas_same_later(m->txsa, a->txsa) &&
			       (!a->n_rxsc || (a->rxsc[0].sci == m->rxsc[0].sci &&
					       sas_same_later(m->rxsc[0].sa, a->rxsc[0].sa)));
			check(same, "read_link: secy, tx sas, rx sc and sas as in the dump",
			      "tx pn %" PRIu64 " -> %" PRIu64 ", rx sc %zu -> %zu",
			      m->txsa[0].pn, a->txsa[0].pn, m->n_rxsc, a->n_rxsc);
			check(o->n_addrs == 0 && !o->parent[0], "read_link: no addresses, no parent",
			      "n %zu parent '%s'", o->n_addrs, o->parent);
		}
		fctl_host_state_free(one);
		one = NULL;
		r = fctl_nl_read_link(nl, VLAN, &one);
		o = r == 0 ? fctl_host_state_find(one, VLAN) : NULL;
		check(o && o->kind == FCTL_LINK_VLAN && o->vid == 100, "read_link: the vlan",
		      r ? "%s" : NULL, strerror(-r));
		fctl_host_state_free(one);
		one = NULL;
		r = fctl_nl_read_link(nl, "eth0", &one);
		check(r == -EMEDIUMTYPE && !one, "read_link: eth0 is neither vlan nor macsec", "%s",
		      strerror(-r));
		r = fctl_nl_read_link(nl, "nosuch0", &one);
		check(r == -ENODEV && !one, "read_link: no such link", "%s", strerror(-r));
		r = 0;
	}
	/* a read costs no writes: what "second apply = zero writes" rests on */
	fctl_nl_reset_stats(nl);
	fctl_host_state_free(hs);
	hs = NULL;
	r = fctl_nl_read_state(nl, "h", NULL, 0, &hs);
	fctl_nl_get_stats(nl, &st);
	check(r == 0 && st.writes == 0 && st.round_trips >= 3, "full read: zero writes",
	      "writes %" PRIu64 " round trips %" PRIu64, st.writes, st.round_trips);
out:
	fctl_host_state_free(hs);
	return 0;
}

static int cmd_dump(struct fctl_nl *nl)
{
	struct fctl_host_state *hs = NULL;
	struct fctl_buf b = { 0 };
	int r;

	r = fctl_nl_read_state(nl, "h", NULL, 0, &hs);
	if (r < 0) {
		fprintf(stderr, "nl_probe: read state: %s\n", strerror(-r));
		return r;
	}
	r = fctl_host_state_to_json(hs, &b);
	if (r >= 0)
		printf("%s\n", b.data);
	fctl_buf_release(&b);
	fctl_host_state_free(hs);
	return r;
}

static int cmd_stats(struct fctl_nl *nl, const struct data *d)
{
	struct fctl_macsec_stats *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	r = fctl_nl_read_macsec_stats(nl, MACSEC, s);
	check(r == 0, "read macsec stats", r ? "%s" : NULL, strerror(-r));
	if (r == 0) {
		check(s->txsa[0].present && s->txsa[0].out_pkts_encrypted > 0 &&
			      s->out_pkts_encrypted >= s->txsa[0].out_pkts_encrypted,
		      "tx sa 0 encrypted packets", "sa %" PRIu32 " sc %" PRIu64,
		      s->txsa[0].out_pkts_encrypted, s->out_pkts_encrypted);
		check(s->n_rxsc == 1 && s->rxsc[0].sci == fctl_sci_make(d->peer_mac, PORT) &&
			      !s->rxsc_truncated,
		      "rx sc in stats", "n %zu", s->n_rxsc);
		check(s->rxsc[0].sa[0].present && s->rxsc[0].sa[0].in_pkts_ok > 0 &&
			      s->rx_total.in_pkts_ok >= s->rxsc[0].sa[0].in_pkts_ok,
		      "rx sa 0 InPktsOK grew", "sa %" PRIu32 " sc %" PRIu64,
		      s->rxsc[0].sa[0].in_pkts_ok, s->rx_total.in_pkts_ok);
		check(s->rx_total.in_pkts_not_valid == 0 && s->rx_total.in_pkts_invalid == 0 &&
			      s->rx_total.in_pkts_not_using_sa == 0 &&
			      s->rx_total.in_pkts_unused_sa == 0 && s->in_pkts_no_sci == 0 &&
			      s->in_pkts_unknown_sci == 0 && s->rx_total.in_pkts_late == 0,
		      "no bad packets",
		      "notvalid %" PRIu64 " invalid %" PRIu64 " notusingsa %" PRIu64
		      " unusedsa %" PRIu64 " nosci %" PRIu64 " unknownsci %" PRIu64 " late %" PRIu64,
		      s->rx_total.in_pkts_not_valid, s->rx_total.in_pkts_invalid,
		      s->rx_total.in_pkts_not_using_sa, s->rx_total.in_pkts_unused_sa,
		      s->in_pkts_no_sci, s->in_pkts_unknown_sci, s->rx_total.in_pkts_late);
		/* machine-readable line for the ip -s oracle */
		printf("STATS txsa0_encrypted=%" PRIu32 " rxsa0_ok=%" PRIu32 "\n",
		       s->txsa[0].out_pkts_encrypted, s->rxsc[0].sa[0].in_pkts_ok);
	}
	free(s);
	return r;
}

/* An op that must fail: its errno, and the kernel's text when want_extack. */
static void bad(struct fctl_nl *nl, const struct fctl_op *op, const uint8_t *key, size_t key_len,
		int want, const char *want_extack, const char *name)
{
	struct fctl_nl_err err = { 0 };
	int r = fctl_nl_exec(nl, op, key, key_len, &err);

	check(r == want && err.err == want, name, "got %d (%s) want %d; msg \"%s\"", r,
	      r ? strerror(-r) : "ok", want, err.msg);
	if (want_extack)
		check(strstr(err.extack, want_extack) != NULL, "extended ack text", "\"%s\"",
		      err.extack);
	else if (r < 0)
		printf("INFO %s: extack \"%s\"\n", name, err.extack);
}

static int cmd_badops(struct fctl_nl *nl, const struct data *d)
{
	struct fctl_nl_stats before, after;
	uint8_t key32[32];
	struct fctl_op op;

	memset(key32, 0x5a, sizeof(key32));
	/* refused before anything is sent: a 32-byte key on a GCM-AES-128 SecY */
	fctl_nl_get_stats(nl, &before);
	op_init(&op, FCTL_OP_TXSA_ADD, MACSEC);
	op.an = 1;
	sa(d, &op.sa, false);
	bad(nl, &op, key32, sizeof(key32), -EINVAL, NULL, "txsa with a wrong-length key");
	fctl_nl_get_stats(nl, &after);
	check(after.writes == before.writes, "wrong-length key never sent", NULL);

	/* refused by the kernel: an RX SA on a channel that does not exist */
	op_init(&op, FCTL_OP_RXSA_ADD, MACSEC);
	op.sci = fctl_sci_make(d->peer_mac, 77);
	op.an = 1;
	sa(d, &op.sa, true);
	bad(nl, &op, d->key, sizeof(d->key), -ENODEV, NULL, "rxsa on a missing rx sc");

	/* deleting an active SA is EBUSY: the engine deactivates first */
	op_init(&op, FCTL_OP_TXSA_DEL, MACSEC);
	op.an = 0;
	bad(nl, &op, NULL, 0, -EBUSY, NULL, "delete active txsa");

	/* duplicate channel */
	op_init(&op, FCTL_OP_RXSC_ADD, MACSEC);
	op.sci = fctl_sci_make(d->peer_mac, PORT);
	op.rxsc_active = true;
	bad(nl, &op, NULL, 0, -EEXIST, NULL, "duplicate rxsc");

	/* extended ACK from the kernel: VLAN id 4095 */
	op_init(&op, FCTL_OP_LINK_ADD, "eth0.4095");
	vlan_link(&op.link);
	strcpy(op.link.name, "eth0.4095");
	op.link.vid = 4095;
	bad(nl, &op, NULL, 0, -ERANGE, "Invalid VLAN id", "vlan id 4095");

	/* extended ACK from the core: an MTU above the device maximum */
	op_init(&op, FCTL_OP_LINK_ADD, "eth0.101");
	vlan_link(&op.link);
	strcpy(op.link.name, "eth0.101");
	op.link.vid = 101;
	op.link.mtu = 70000;
	bad(nl, &op, NULL, 0, -EINVAL, "greater than", "vlan mtu 70000");

	/* a missing parent is named */
	op_init(&op, FCTL_OP_LINK_ADD, "nope.5");
	vlan_link(&op.link);
	strcpy(op.link.name, "nope.5");
	strcpy(op.link.parent, "nope");
	bad(nl, &op, NULL, 0, -ENODEV, NULL, "vlan on a missing parent");

	/* a changelink naming the cipher is refused by the kernel; ours never sends it */
	op_init(&op, FCTL_OP_LINK_DEL, "nope0");
	bad(nl, &op, NULL, 0, -ENODEV, NULL, "delete a missing link");
	fctl_memzero(key32, sizeof(key32));
	return 0;
}

static int cmd_netns(const char *name)
{
	struct fctl_nl *nl = NULL;
	struct fctl_host_state *hs = NULL;
	char before[64] = "", after[64] = "";
	ssize_t n;
	int r;

	n = readlink("/proc/self/ns/net", before, sizeof(before) - 1);
	if (n > 0)
		before[n] = '\0';
	r = fctl_nl_open(name, &nl);
	n = readlink("/proc/self/ns/net", after, sizeof(after) - 1);
	if (n > 0)
		after[n] = '\0';
	check(r == 0, "open in netns", r ? "%s" : NULL, strerror(-r));
	check(before[0] && strcmp(before, after) == 0, "caller's netns restored", "%s -> %s",
	      before, after);
	if (r == 0) {
		r = fctl_nl_read_state(nl, "h", NULL, 0, &hs);
		check(r == 0 && hs->n_links == 0, "netns sees its own (empty) links",
		      "r %d n %zu", r, hs ? hs->n_links : 0);
	}
	fctl_host_state_free(hs);
	fctl_nl_close(nl);
	r = fctl_nl_open("does-not-exist", &nl);
	check(r == -ENOENT, "missing netns refused", "%d", r);
	return 0;
}

static int cmd_teardown(struct fctl_nl *nl, const struct data *d)
{
	struct fctl_host_state *hs = NULL;
	uint64_t peer = fctl_sci_make(d->peer_mac, PORT);
	struct fctl_op op;
	int r;

	op_init(&op, FCTL_OP_ADDR_DEL, MACSEC);
	op.addr = (char *)(uintptr_t)d->addr4;
	run(nl, &op, NULL, 0, "delete ipv4 address");
	op.addr = (char *)(uintptr_t)d->addr6;
	run(nl, &op, NULL, 0, "delete ipv6 address");
	op_init(&op, FCTL_OP_LINK_DOWN, MACSEC);
	run(nl, &op, NULL, 0, "down " MACSEC);
	op_init(&op, FCTL_OP_TXSA_UPD, MACSEC);
	op.an = 0;
	sa(d, &op.sa, false);
	run(nl, &op, NULL, 0, "deactivate txsa");
	op.kind = FCTL_OP_TXSA_DEL;
	run(nl, &op, NULL, 0, "delete txsa");
	op_init(&op, FCTL_OP_RXSA_UPD, MACSEC);
	op.sci = peer;
	sa(d, &op.sa, false);
	run(nl, &op, NULL, 0, "deactivate rxsa");
	op.kind = FCTL_OP_RXSA_DEL;
	run(nl, &op, NULL, 0, "delete rxsa");
	op_init(&op, FCTL_OP_RXSC_DEL, MACSEC);
	op.sci = peer;
	run(nl, &op, NULL, 0, "delete rxsc");
	op_init(&op, FCTL_OP_LINK_DEL, MACSEC);
	run(nl, &op, NULL, 0, "delete " MACSEC);
	op_init(&op, FCTL_OP_LINK_DEL, VLAN);
	run(nl, &op, NULL, 0, "delete " VLAN);
	r = fctl_nl_read_state(nl, "h", NULL, 0, &hs);
	check(r == 0 && hs->n_links == 0, "nothing left", "r %d n %zu", r, hs ? hs->n_links : 0);
	fctl_host_state_free(hs);
	return 0;
}

/* neigh FROM TO MAC...: fctl_nl_neigh_copy FROM -> TO for those MACs; prints
 * "COPIED N" for the shell, which reads the result back with ip neigh. */
static int cmd_neigh(struct fctl_nl *nl, int argc, char **argv)
{
	uint8_t macs[8][6];
	struct fctl_nl_err ne = { 0 };
	size_t n = 0;
	int r;

	for (int i = 4; i < argc && n < 8; i++, n++)
		if (sscanf(argv[i], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &macs[n][0], &macs[n][1],
			   &macs[n][2], &macs[n][3], &macs[n][4], &macs[n][5]) != 6)
			return -EINVAL;
	r = fctl_nl_neigh_copy(nl, argv[2], argv[3], (const uint8_t(*)[6])macs, n, &ne);
	check(r >= 0, "neighbour copy", "%s", r >= 0 ? "done" : ne.msg);
	if (r >= 0)
		printf("COPIED %d\n", r);
	return 0;
}

int main(int argc, char **argv)
{
	struct fctl_nl *nl = NULL;
	struct data d;
	const char *cmd = argc > 1 ? argv[1] : "";
	bool needs_data = strcmp(cmd, "dump") != 0 && strcmp(cmd, "netns") != 0 &&
			  strcmp(cmd, "neigh") != 0;
	int r = 0;

	if (argc < 2 || (needs_data && argc < 3) || (strcmp(cmd, "netns") == 0 && argc < 3) ||
	    (strcmp(cmd, "neigh") == 0 && argc < 4)) {
		fprintf(stderr, "usage: fctl_nl_probe setup|check|dump|stats|badops|teardown DATAFILE"
				" | netns NAME | neigh FROM TO MAC...\n");
		return 2;
	}
	if (strcmp(cmd, "netns") == 0) {
		cmd_netns(argv[2]);
		goto done;
	}
	if (needs_data) {
		r = load(argv[2], &d);
		if (r < 0) {
			check(false, "load test data", "%s", strerror(-r));
			goto done;
		}
	}
	nl = open_nl();
	if (!nl)
		goto done;
	if (strcmp(cmd, "setup") == 0)
		r = cmd_setup(nl, &d);
	else if (strcmp(cmd, "check") == 0)
		r = cmd_check(nl, &d);
	else if (strcmp(cmd, "dump") == 0)
		r = cmd_dump(nl);
	else if (strcmp(cmd, "stats") == 0)
		r = cmd_stats(nl, &d);
	else if (strcmp(cmd, "badops") == 0)
		r = cmd_badops(nl, &d);
	else if (strcmp(cmd, "teardown") == 0)
		r = cmd_teardown(nl, &d);
	else if (strcmp(cmd, "neigh") == 0)
		r = cmd_neigh(nl, argc, argv);
	else
		r = -EINVAL;
	if (r < 0)
		check(false, cmd, "%s", strerror(-r));
done:
	fctl_nl_close(nl);
	if (needs_data)
		fctl_memzero(&d, sizeof(d));
	return failed ? 1 : 0;
}
