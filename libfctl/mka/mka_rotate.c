// SPDX-License-Identifier: MIT
/* Make-before-break CAK rotation of an MKA port: the incoming CA, the address move, the switch. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fctl/mka_rotate.h"
#include "fctl/mka_super.h"

uint16_t fctl_mka_alt_port(uint16_t port)
{
	if (port >= 0xffff) /* never 0: wpa_supplicant takes 1..65534 */
		return 0xfffe;
	return port & 1 ? (uint16_t)(port + 1) : (uint16_t)(port - 1);
}

int fctl_mka_dir_name(const char *name, char *port, size_t len, uint16_t *sci_port)
{
	const char *colon = strchr(name, ':');
	unsigned long n = 0;
	char *end = NULL;

	if (colon) {
		n = strtoul(colon + 1, &end, 10);
		if (colon == name || !colon[1] || *end || !n || n > 0xffff)
			return -EINVAL;
	}
	if (!*name || (size_t)(colon ? colon - name : (long)strlen(name)) >= len)
		return -EINVAL;
	snprintf(port, len, "%.*s", (int)(colon ? colon - name : (long)strlen(name)), name);
	if (sci_port)
		*sci_port = (uint16_t)n;
	return colon ? 1 : 0;
}

bool fctl_mka_settings_ca_only(const char *have, const char *want)
{
	const char *h = strstr(have, " priority="), *w = strstr(want, " priority=");

	return h && w && strcmp(h, w) == 0 && strcmp(have, want) != 0;
}

void fctl_mka_incoming_dir(const char *ifname, uint16_t sci_port, char *out, size_t len)
{
	snprintf(out, len, "%s/%s:%u", FCTL_MKA_RUN_DIR, ifname, sci_port);
}

int fctl_mka_incoming(const char *ifname, char *dir, size_t len, uint16_t *sci_port)
{
	DIR *d = opendir(FCTL_MKA_RUN_DIR);
	size_t n = strlen(ifname);
	struct dirent *de;
	int r = -ENOENT;

	while (d && r == -ENOENT && (de = readdir(d))) {
		char name[NAME_MAX + 1];
		uint16_t port;

		if (strncmp(de->d_name, ifname, n) != 0 || de->d_name[n] != ':' ||
		    fctl_mka_dir_name(de->d_name, name, sizeof(name), &port) != 1)
			continue;
		snprintf(dir, len, "%s/%s", FCTL_MKA_RUN_DIR, de->d_name);
		if (sci_port)
			*sci_port = port;
		r = 0;
	}
	if (d)
		closedir(d);
	return r;
}

int fctl_mka_incoming_stop(const char *ifname, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int r = 0;

	while (r == 0 && fctl_mka_incoming(ifname, dir, sizeof(dir), NULL) == 0)
		r = fctl_mka_stop(ifname, dir, err, errlen);
	return r;
}

/* The step's memory, in the incoming directory (a tmpfs): when the incoming CA was first
 * seen secured; when the addresses moved and, then, what the old and the new SecY had
 * received (rx0, nrx0); what both had received at the last reading (rx, nrx) and when
 * (rx_at), the start of the window the switch judges. */
struct rot_state {
	uint64_t secured_since, moved_at, rx, rx0, nrx0, nrx, rx_at;
};

static void state_load(const char *dir, struct rot_state *st)
{
	char path[PATH_MAX + 16];
	FILE *f;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "%s/rotation", dir);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fscanf(f, "secured_since=%" SCNu64 " moved_at=%" SCNu64 " rx=%" SCNu64 " rx0=%" SCNu64
		      " nrx0=%" SCNu64 " nrx=%" SCNu64 " rx_at=%" SCNu64,
		   &st->secured_since, &st->moved_at, &st->rx, &st->rx0, &st->nrx0, &st->nrx,
		   &st->rx_at) != 7)
		memset(st, 0, sizeof(*st));
	fclose(f);
}

static int state_save(const char *dir, const struct rot_state *st, char *err, size_t errlen)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 16];
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "%s/rotation", dir);
	snprintf(tmp, sizeof(tmp), "%s/rotation.new", dir);
	f = fopen(tmp, "we");
	if (!f) {
		r = -errno;
	} else {
		fprintf(f, "secured_since=%" PRIu64 " moved_at=%" PRIu64 " rx=%" PRIu64
			   " rx0=%" PRIu64 " nrx0=%" PRIu64 " nrx=%" PRIu64 " rx_at=%" PRIu64 "\n",
			st->secured_since, st->moved_at, st->rx, st->rx0, st->nrx0, st->nrx, st->rx_at);
		if (fclose(f) != 0 || rename(tmp, path) < 0)
			r = -errno;
	}
	if (r < 0) {
		unlink(tmp);
		snprintf(err, errlen, "%s: rotation state: %s", dir, strerror(-r));
	}
	return r;
}

bool fctl_mka_rotation_moved(const char *ifname)
{
	char dir[PATH_MAX];
	struct rot_state st;

	if (fctl_mka_incoming(ifname, dir, sizeof(dir), NULL) < 0)
		return false;
	state_load(dir, &st);
	return st.moved_at != 0;
}

/* The end's addresses (the profile's, for this host) added to the SecY named to, then
 * deleted from the one named from (NULL: none): the connected route is never gone.
 * Added without duplicate address detection: the address is this host's already, on
 * the SecY beside it; a tentative IPv6 copy would leave the host without a usable one
 * for a second or two. */
static int move_addrs(struct fctl_engine_kernel *kern, const struct fctl_mka_port *port,
		      const char *to, const char *from, char *err, size_t errlen)
{
	int r = 0;

	for (int pass = 0; pass < 2 && r == 0; pass++) {
		const char *dev = pass == 0 ? to : from;

		if (!dev)
			continue;
		for (size_t i = 0; i < port->vlan->n_addrs && r == 0; i++) {
			const struct fctl_addr_entry *ae = &port->vlan->addrs[i];
			struct fctl_op op = { .kind = pass == 0 ? FCTL_OP_ADDR_ADD : FCTL_OP_ADDR_DEL,
					      .addr_nodad = pass == 0 };
			struct fctl_nl_err ne = { 0 };

			if (!ae->host || !ae->cidr || strcmp(ae->host, port->host) != 0)
				continue;
			snprintf(op.ifname, sizeof(op.ifname), "%s", dev);
			op.addr = ae->cidr;
			r = fctl_engine_kernel_exec(kern, &op, NULL, &ne);
			/* already there (a step repeated after a crash), already gone */
			if ((pass == 0 && r == -EEXIST) || (pass == 1 && r == -EADDRNOTAVAIL))
				r = 0;
			if (r < 0)
				snprintf(err, errlen, "%s: %s %s: %s", dev,
					 pass == 0 ? "adding" : "deleting", ae->cidr,
					 ne.msg[0] ? ne.msg : strerror(-r));
		}
	}
	return r;
}

/* One CA as the step sees it: its process, its KaY, its SecY (by SCI port). */
struct ca_view {
	bool alive;	/* its process runs (it may be too busy to answer: see answers) */
	bool answers;	/* its control interface answered PING */
	bool secured, has_rx;
	bool tx_sa; /* its SecY transmits: the encoding SA installed and active */
	bool rx_sa; /* its SecY receives: an active receive SA on an active channel */
	unsigned live_peers;
	uint64_t rx; /* InPktsOK over its SecY's receive channels */
	char secy[FCTL_IFNAMSIZ];
	/* the MACs of its SecY's receive channels (an SCI is the sender's MAC and port) */
	uint8_t peer_mac[FCTL_NL_STATS_MAX_RXSC][6];
	size_t n_peer_mac;
};

/* What the SecY's SAs say. MKA's KaY installs the SAK's receive SA and an inactive
 * transmit SA first, and activates the transmit SA only once the peers receive with it
 * (802.1X-2010 12.5, the key server's 'all receiving'; the others follow the key server):
 * a transmit SA merely present does not mean the peer can read what this end sends. */
static void sas_of(const struct fctl_macsec *m, struct ca_view *v)
{
	const struct fctl_sa *tx = &m->txsa[m->encoding_sa & 3];

	v->tx_sa = tx->present && tx->active;
	for (size_t i = 0; i < m->n_rxsc; i++) {
		for (int an = 0; an < FCTL_MAX_AN && m->rxsc[i].active; an++)
			v->rx_sa |= m->rxsc[i].sa[an].present && m->rxsc[i].sa[an].active;
		if (v->n_peer_mac < FCTL_NL_STATS_MAX_RXSC) {
			for (int b = 0; b < 6; b++)
				v->peer_mac[v->n_peer_mac][b] = (uint8_t)(m->rxsc[i].sci >> (56 - 8 * b));
			v->n_peer_mac++;
		}
	}
}

static void view_of(struct fctl_engine_kernel *kern, const struct fctl_mka_port *port,
		    const char *run_dir, uint16_t sci_port, struct ca_view *v)
{
	struct fctl_nl *nl = fctl_engine_kernel_nl(kern);
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *secy = NULL;
	struct fctl_macsec_stats ms;
	struct fctl_mka_status ks;
	enum fctl_mka_health h;
	char err[256];

	memset(v, 0, sizeof(*v));
	h = fctl_mka_health(port->ifname, run_dir);
	v->alive = h != FCTL_MKA_DEAD;
	v->answers = h == FCTL_MKA_OK;
	if (v->answers && fctl_mka_status_read(port->ifname, run_dir, &ks, err, sizeof(err)) == 0) {
		v->secured = ks.secured;
		v->live_peers = ks.live_peers;
	}
	if (fctl_mka_find_secy(nl, port->host, port->ifname, sci_port, &hs, &secy) < 0)
		return;
	snprintf(v->secy, sizeof(v->secy), "%s", secy->name);
	sas_of(&secy->macsec, v);
	fctl_host_state_free(hs);
	if (fctl_nl_read_macsec_stats(nl, v->secy, &ms) == 0) {
		v->rx = ms.rx_total.in_pkts_ok;
		v->has_rx = true;
	}
}

/* The incoming CA becomes the current one: the old one stopped (it deletes its SecY; one
 * it left behind is deleted here, failing or not), the incoming directory renamed to the port's. The
 * incoming wpa_supplicant keeps its sockets and pid file through the rename (they move
 * with the directory); the paths it was started with ('IFNAME:N') are never used again
 * while it runs: the next rotation's incoming CA takes the other SCI port, and every
 * change under /run/fabricctl/mka holds its lock (fctl_mka_lock). */
static int promote(struct fctl_engine_kernel *kern, const struct fctl_mka_port *port,
		   const char *idir, uint16_t cur_port, char *err, size_t errlen)
{
	char cur[PATH_MAX], path[PATH_MAX + 16];
	int r;

	r = fctl_mka_stop(port->ifname, NULL, err, errlen);
	if (r < 0)
		return r;
	/* one it left behind (killed) */
	fctl_mka_drop_secy(kern, port->host, port->ifname, cur_port, err, errlen);
	err[0] = '\0';
	snprintf(path, sizeof(path), "%s/rotation", idir);
	unlink(path);
	fctl_mka_run_dir(port->ifname, cur, sizeof(cur));
	if (rename(idir, cur) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot make %s current (%s): %s", idir, cur, strerror(-r));
		return r;
	}
	return 0;
}

/* Before the move: wait for the incoming CA. */
static int step_waiting(struct fctl_engine_kernel *kern, const struct fctl_mka_port *port,
			const char *idir, struct rot_state *st, const struct ca_view *in,
			const struct ca_view *cur, uint16_t cur_port, uint64_t now_ms, char *err,
			size_t errlen)
{
	bool secured = in->alive && in->secured && in->live_peers > 0 && in->secy[0] && in->tx_sa &&
		       in->rx_sa;
	int r;

	if (!in->alive) {
		r = fctl_mka_incoming_stop(port->ifname, err, errlen);
		if (r == 0)
			snprintf(err, errlen, "the new CA's wpa_supplicant on %s is gone: rotation given "
				 "up, the old CA keeps the traffic (apply again to retry)", port->ifname);
		return r < 0 ? r : -ESRCH;
	}
	if (!cur->alive) /* the old CA is gone: nothing left to keep, the new one takes over */
		goto move;
	/* too busy to answer (a loaded machine): neither secured nor gone; ask again at the
	 * next step, its settle time kept */
	if (!in->answers)
		return FCTL_MKA_ROT_WAITING;
	if (!secured || !st->secured_since) {
		st->secured_since = secured ? (now_ms ? now_ms : 1) : 0;
		r = state_save(idir, st, err, errlen);
		return r < 0 ? r : FCTL_MKA_ROT_WAITING;
	}
	/* secured long enough, or the old CA is gone anyway */
	if (now_ms - st->secured_since < FCTL_MKA_ROT_SETTLE_MS)
		return FCTL_MKA_ROT_WAITING;
move:
	if (!in->secy[0]) /* its SecY not there yet */
		return FCTL_MKA_ROT_WAITING;
	/* the peers this end reached through the old SecY, resolved on the new one before the
	 * addresses move (docs/mka.md, "What lost frames"): without it every packet to a peer
	 * waits for ARP or ND through the new SecY, and a stream overflows the queue that
	 * holds them. Best effort: a copy that fails leaves resolution to the kernel, as before */
	if (cur->alive && cur->secy[0]) {
		struct fctl_nl_err ne = { 0 };

		fctl_engine_kernel_neigh_copy(kern, cur->secy, in->secy,
					      (const uint8_t(*)[6])in->peer_mac, in->n_peer_mac, &ne);
	}
	r = move_addrs(kern, port, in->secy, cur->secy[0] ? cur->secy : NULL, err, errlen);
	if (r < 0)
		return r;
	if (!cur->alive) {
		r = promote(kern, port, idir, cur_port, err, errlen);
		return r < 0 ? r : FCTL_MKA_ROT_DONE;
	}
	st->moved_at = now_ms ? now_ms : 1;
	st->rx = st->rx0 = cur->rx;
	st->nrx = st->nrx0 = in->rx;
	st->rx_at = st->moved_at;
	r = state_save(idir, st, err, errlen);
	return r < 0 ? r : FCTL_MKA_ROT_MOVED;
}

/* Whether the old CA may go (after the move, both CAs answering). The peer has left the
 * old SA when, over the window since the last reading (at least FCTL_MKA_ROT_WINDOW_MS),
 * the old SecY received nothing while the new one received: the peer was sending then,
 * and only through the new SA. The new SecY's growth is what tells a peer that moved
 * from one that was silent (a guest starved of CPU, a sender between bursts) and would
 * send through the old SA again. Or the peer's old CA is gone (no live peer left on the
 * old one). And at least FCTL_MKA_ROT_QUIET_MS after the move. A link where the old SecY
 * received nothing at all since the move switches after FCTL_MKA_ROT_MAX_MS. */
static bool switch_due(const struct rot_state *st, const struct ca_view *in,
		       const struct ca_view *cur, uint64_t now_ms)
{
	bool quiet = !cur->has_rx || cur->rx == st->rx;
	bool new_rx = in->has_rx && in->rx > st->nrx;
	bool idle = !cur->has_rx || cur->rx == st->rx0;
	uint64_t since = now_ms - st->moved_at;

	if (cur->live_peers == 0 && since >= FCTL_MKA_ROT_QUIET_MS)
		return true;
	if (quiet && new_rx && since >= FCTL_MKA_ROT_QUIET_MS)
		return true;
	return idle && since >= FCTL_MKA_ROT_MAX_MS;
}

int fctl_mka_rotation_step(struct fctl_engine_kernel *kern, const struct fctl_mka_port *port,
			   char *err, size_t errlen)
{
	struct timespec ts;
	uint64_t now_ms;
	char idir[PATH_MAX], line[512];
	struct ca_view in, cur;
	struct rot_state st;
	uint16_t in_port, cur_port;
	int r;

	err[0] = '\0';
	/* CLOCK_BOOTTIME: the times in the state file are compared across processes */
	clock_gettime(CLOCK_BOOTTIME, &ts);
	now_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (fctl_mka_incoming(port->ifname, idir, sizeof(idir), &in_port) < 0)
		return FCTL_MKA_ROT_NONE;
	if (fctl_mka_settings_read(port->ifname, NULL, line, &cur_port) < 0)
		cur_port = fctl_mka_alt_port(in_port);
	if (cur_port == in_port) {
		snprintf(err, errlen, "%s: the new CA and the current one on one SCI port (%u)",
			 port->ifname, in_port);
		return -EINVAL;
	}
	state_load(idir, &st);
	view_of(kern, port, idir, in_port, &in);
	view_of(kern, port, NULL, cur_port, &cur);
	if (!st.moved_at)
		return step_waiting(kern, port, idir, &st, &in, &cur, cur_port, now_ms, err, errlen);
	if (!in.alive) {
		/* the CA that carries this end's traffic died: back to the old one, if it runs */
		if (cur.alive && cur.secy[0])
			move_addrs(kern, port, cur.secy, NULL, err, errlen);
		r = fctl_mka_incoming_stop(port->ifname, err, errlen);
		if (r == 0)
			snprintf(err, errlen, "the new CA's wpa_supplicant on %s died after the move: "
				 "rotation rolled back to the old CA%s (apply again to retry)",
				 port->ifname, cur.alive ? "" : ", which is not running either");
		return r < 0 ? r : -ESRCH;
	}
	if (!cur.alive) { /* the old CA is gone: nothing to wait for */
		r = promote(kern, port, idir, cur_port, err, errlen);
		return r < 0 ? r : FCTL_MKA_ROT_DONE;
	}
	if (!in.answers || !cur.answers) /* busy: nothing judged from a missing answer */
		return FCTL_MKA_ROT_MOVED;
	/* idempotent: addresses a reconfiguration of the new SecY dropped come back */
	if (in.secy[0] && (r = move_addrs(kern, port, in.secy, cur.secy[0] ? cur.secy : NULL, err,
					  errlen)) < 0)
		return r;
	/* a reading too soon after the last one (an apply's step beside the agent's) proves
	 * nothing about the peer: the window stays open */
	if (now_ms - st.rx_at < FCTL_MKA_ROT_WINDOW_MS)
		return FCTL_MKA_ROT_MOVED;
	if (switch_due(&st, &in, &cur, now_ms)) {
		r = promote(kern, port, idir, cur_port, err, errlen);
		return r < 0 ? r : FCTL_MKA_ROT_DONE;
	}
	st.rx = cur.rx;
	st.nrx = in.rx;
	st.rx_at = now_ms;
	r = state_save(idir, &st, err, errlen);
	return r < 0 ? r : FCTL_MKA_ROT_MOVED;
}
