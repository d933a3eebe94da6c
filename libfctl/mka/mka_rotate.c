// SPDX-License-Identifier: MIT
/* Make-before-break CAK rotation of an MKA port: the incoming CA, the address move, the switch. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fctl/mka_rotate.h"

uint16_t fctl_mka_alt_port(uint16_t port)
{
	return port & 1 ? (uint16_t)(port + 1) : (uint16_t)(port - 1);
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
		char *end;
		unsigned long port;

		if (strncmp(de->d_name, ifname, n) != 0 || de->d_name[n] != ':')
			continue;
		port = strtoul(de->d_name + n + 1, &end, 10);
		if (*end || !port || port > 0xffff)
			continue;
		snprintf(dir, len, "%s/%s", FCTL_MKA_RUN_DIR, de->d_name);
		if (sci_port)
			*sci_port = (uint16_t)port;
		r = 0;
	}
	if (d)
		closedir(d);
	return r;
}

int fctl_mka_incoming_stop(const char *ifname, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	int r = 0;

	while (r == 0 && fctl_mka_incoming(ifname, dir, sizeof(dir), NULL) == 0) {
		snprintf(path, sizeof(path), "%s/rotation", dir);
		unlink(path);
		r = fctl_mka_stop(ifname, dir, err, errlen);
	}
	return r;
}

const char *fctl_mka_rot_stage_name(enum fctl_mka_rot_stage s)
{
	switch (s) {
	case FCTL_MKA_ROT_WAITING:
		return "waiting";
	case FCTL_MKA_ROT_MOVED:
		return "moved";
	case FCTL_MKA_ROT_DONE:
		return "done";
	default:
		return "none";
	}
}

/* The step's memory, in the incoming directory (a tmpfs): when the incoming CA was first
 * seen secured, when the addresses moved, the current SecY's received count then. */
struct rot_state {
	uint64_t secured_since, moved_at, rx;
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
	if (fscanf(f, "secured_since=%" SCNu64 " moved_at=%" SCNu64 " rx=%" SCNu64,
		   &st->secured_since, &st->moved_at, &st->rx) != 3)
		memset(st, 0, sizeof(*st));
	fclose(f);
}

static int state_save(const char *dir, const struct rot_state *st)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/rotation", dir);
	snprintf(tmp, sizeof(tmp), "%s/rotation.new", dir);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "secured_since=%" PRIu64 " moved_at=%" PRIu64 " rx=%" PRIu64 "\n",
		st->secured_since, st->moved_at, st->rx);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return -errno;
	return 0;
}

/* The end's addresses (the profile's, for this host) added to the SecY named to, then
 * deleted from the one named from (NULL: none left): the connected route is never gone. */
static int move_addrs(struct fctl_nl *nl, const struct fctl_mka_port *port, const char *to,
		      const char *from, char *err, size_t errlen)
{
	int r = 0;

	for (int pass = 0; pass < 2 && r == 0; pass++) {
		const char *dev = pass == 0 ? to : from;

		if (!dev)
			continue;
		for (size_t i = 0; i < port->vlan->n_addrs && r == 0; i++) {
			const struct fctl_addr_entry *ae = &port->vlan->addrs[i];
			struct fctl_op op = { .kind = pass == 0 ? FCTL_OP_ADDR_ADD : FCTL_OP_ADDR_DEL };
			struct fctl_nl_err ne = { 0 };

			if (!ae->host || !ae->cidr || strcmp(ae->host, port->host) != 0)
				continue;
			snprintf(op.ifname, sizeof(op.ifname), "%s", dev);
			op.addr = ae->cidr;
			r = fctl_nl_exec(nl, &op, NULL, 0, &ne);
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

/* The SecY of the CA on sci_port, its name into name ("" when there is none) and whether
 * MKA installed a transmit SA on it. */
static void secy_of(struct fctl_nl *nl, const struct fctl_mka_port *port, uint16_t sci_port,
		    char name[FCTL_IFNAMSIZ], bool *tx_sa)
{
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *secy = NULL;

	name[0] = '\0';
	*tx_sa = false;
	if (fctl_mka_find_secy_port(nl, port->host, port->ifname, sci_port, &hs, &secy) < 0)
		return;
	snprintf(name, FCTL_IFNAMSIZ, "%s", secy->name);
	*tx_sa = secy->macsec.txsa[secy->macsec.encoding_sa & 3].present;
	fctl_host_state_free(hs);
}

/* The incoming CA becomes the current one: the old one stopped (it deletes its SecY),
 * the incoming directory renamed to the port's. The incoming wpa_supplicant keeps its
 * sockets and pid file through the rename (they move with the directory); the paths it
 * was started with ('IFNAME:N') are never used again while it runs: the next rotation's
 * incoming CA takes the other SCI port. */
static int promote(const struct fctl_mka_port *port, const char *idir, char *err, size_t errlen)
{
	char cur[PATH_MAX], path[PATH_MAX + 16];
	int r;

	r = fctl_mka_stop(port->ifname, NULL, err, errlen);
	if (r < 0)
		return r;
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

int fctl_mka_rotation_step(struct fctl_nl *nl, const struct fctl_mka_port *port, uint64_t now_ms,
			   char *err, size_t errlen)
{
	char idir[PATH_MAX], line[512], in_secy[FCTL_IFNAMSIZ], cur_secy[FCTL_IFNAMSIZ];
	struct fctl_mka_status ks;
	struct fctl_macsec_stats ms;
	struct rot_state st;
	uint16_t in_port, cur_port;
	bool in_tx, cur_tx;
	int r;

	if (fctl_mka_incoming(port->ifname, idir, sizeof(idir), &in_port) < 0)
		return FCTL_MKA_ROT_NONE;
	if (fctl_mka_settings_read(port->ifname, NULL, line, &cur_port) < 0)
		cur_port = fctl_mka_alt_port(in_port);
	state_load(idir, &st);
	secy_of(nl, port, in_port, in_secy, &in_tx);
	secy_of(nl, port, cur_port, cur_secy, &cur_tx);
	if (!st.moved_at) {
		bool secured = fctl_mka_status_read(port->ifname, idir, &ks, err, errlen) == 0 &&
			       ks.secured && ks.live_peers > 0 && in_secy[0] && in_tx;

		err[0] = '\0';
		if (!secured || !st.secured_since) {
			st.secured_since = secured ? (now_ms ? now_ms : 1) : 0;
			r = state_save(idir, &st);
			if (r < 0)
				snprintf(err, errlen, "%s: rotation state: %s", idir, strerror(-r));
			return r < 0 ? r : FCTL_MKA_ROT_WAITING;
		}
		if (now_ms - st.secured_since < FCTL_MKA_ROT_SETTLE_MS)
			return FCTL_MKA_ROT_WAITING;
		r = move_addrs(nl, port, in_secy, cur_secy[0] ? cur_secy : NULL, err, errlen);
		if (r < 0)
			return r;
		st.moved_at = now_ms ? now_ms : 1;
		st.rx = cur_secy[0] && fctl_nl_read_macsec_stats(nl, cur_secy, &ms) == 0
				? ms.rx_total.in_pkts_ok
				: 0;
		r = state_save(idir, &st);
		if (r < 0)
			snprintf(err, errlen, "%s: rotation state: %s", idir, strerror(-r));
		return r < 0 ? r : FCTL_MKA_ROT_MOVED;
	}
	/* moved: the old CA goes once the peer no longer sends through it */
	uint64_t rx = st.rx;

	if (cur_secy[0] && fctl_nl_read_macsec_stats(nl, cur_secy, &ms) == 0)
		rx = ms.rx_total.in_pkts_ok;
	if ((now_ms - st.moved_at >= FCTL_MKA_ROT_QUIET_MS && rx == st.rx) ||
	    now_ms - st.moved_at >= FCTL_MKA_ROT_MAX_MS) {
		r = promote(port, idir, err, errlen);
		return r < 0 ? r : FCTL_MKA_ROT_DONE;
	}
	st.rx = rx;
	r = state_save(idir, &st);
	if (r < 0)
		snprintf(err, errlen, "%s: rotation state: %s", idir, strerror(-r));
	return r < 0 ? r : FCTL_MKA_ROT_MOVED;
}
