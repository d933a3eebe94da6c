// SPDX-License-Identifier: MIT
/* The MKA ports of one host of a profile: start their wpa_supplicants with the CAK from
 * the key source, address the SecY wpa_supplicant creates, report its state. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fctl/mka_host.h"
#include "fctl/mka_rotate.h"
#include "fctl/mka_super.h"

/* Calls fn for every MKA VLAN end of host (in profile order) until fn returns < 0. */
int fctl_mka_host_each(const struct fctl_profile *p, const char *host,
		       int (*fn)(const struct fctl_mka_port *port, void *arg), void *arg)
{
	for (size_t i = 0; i < p->n_links; i++) {
		const struct fctl_plink *l = &p->links[i];

		for (int e = 0; e < 2; e++) {
			const struct fctl_link_end *me = &l->end[e];

			if (!me->host || strcmp(me->host, host) != 0 || me->host_idx < 0 ||
			    me->port_idx < 0)
				continue;
			for (size_t j = 0; j < l->n_vlans; j++) {
				const struct fctl_vlan *v = &l->vlans[j];
				const struct fctl_macsec_policy *pol =
					fctl_profile_find_policy(p, v->macsec);
				struct fctl_mka_port port = { .profile = p, .vlan = v, .pol = pol };
				char mif[FCTL_IFNAMSIZ + 8];
				int r;

				if (!pol || !pol->has_mka)
					continue;
				fctl_vlan_ifnames(v, p->hosts[me->host_idx].ports[me->port_idx].name,
						  port.ifname, mif);
				port.host = p->hosts[me->host_idx].name;
				r = fn(&port, arg);
				if (r < 0)
					return r;
			}
		}
	}
	return 0;
}

/* The CAK is 16 or 32 bytes: the file backend says which by its length. */
static int fetch_cak(const struct fctl_key_source *src, const struct fctl_mka_ca *ca,
		     const char *base, struct fctl_key **out, char *err, size_t errlen)
{
	int r = fctl_key_source_fetch(src, &ca->cak, base, 16, out, err, errlen);

	if (r == -EINVAL)
		r = fctl_key_source_fetch(src, &ca->cak, base, 32, out, err, errlen);
	return r;
}

int fctl_mka_find_secy(struct fctl_nl *nl, const char *host, const char *vlan_if,
		       uint16_t sci_port, struct fctl_host_state **state,
		       const struct fctl_link **secy)
{
	struct fctl_host_state *hs = NULL;
	/* every VLAN and MACsec link: a name filter reads the links under a name, and the
	 * SecY sits above the VLAN device */
	int r = fctl_nl_read_state(nl, host, NULL, 0, &hs);

	if (r < 0)
		return r;
	for (size_t i = 0; i < hs->n_links; i++)
		if (hs->links[i].kind == FCTL_LINK_MACSEC &&
		    strcmp(hs->links[i].parent, vlan_if) == 0 &&
		    (!sci_port || (hs->links[i].macsec.sci & 0xffff) == sci_port)) {
			*state = hs;
			*secy = &hs->links[i];
			return 0;
		}
	fctl_host_state_free(hs);
	return -ENODEV;
}

int fctl_mka_drop_secy(struct fctl_engine_kernel *kern, const char *host, const char *vlan_if,
		       uint16_t sci_port, char *err, size_t errlen)
{
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *secy = NULL;
	struct fctl_op op = { .kind = FCTL_OP_LINK_DEL };
	struct fctl_nl_err ne = { 0 };
	int r;

	if (fctl_mka_find_secy(fctl_engine_kernel_nl(kern), host, vlan_if, sci_port, &hs,
			       &secy) < 0)
		return 0;
	snprintf(op.ifname, sizeof(op.ifname), "%s", secy->name);
	fctl_host_state_free(hs);
	r = fctl_engine_kernel_exec(kern, &op, NULL, &ne);
	if (r < 0)
		snprintf(err, errlen, "%s: cannot delete the orphaned %s: %s", vlan_if, op.ifname,
			 ne.msg[0] ? ne.msg : strerror(-r));
	return r;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct up_arg {
	const struct fctl_mka_host_opts *o;
	char *err;
	size_t errlen;
	unsigned started, rotating;
};

/* The addresses of this end go on the SecY wpa_supplicant created on the VLAN device. */
static int address_secy(const struct fctl_mka_port *port, struct up_arg *a, uint16_t sci_port,
			int old_ifindex)
{
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *secy = NULL;
	int r = -ENODEV;

	/* wpa_supplicant creates it once its KaY runs (a second or so), a new one after a
	 * reconfiguration: wait for one that is not old_ifindex; bounded, not timed */
	for (int i = 0; i < 400 && r == -ENODEV; i++) {
		r = fctl_mka_find_secy(fctl_engine_kernel_nl(a->o->kern), port->host, port->ifname,
				       sci_port, &hs, &secy);
		if (r == 0 && secy->ifindex == old_ifindex) {
			fctl_host_state_free(hs);
			hs = NULL;
			r = -ENODEV;
		}
		if (r == -ENODEV)
			sleep_ms(50);
	}
	if (r < 0) {
		snprintf(a->err, a->errlen, "%s: wpa_supplicant created no MACsec device on it (%s)",
			 port->ifname, strerror(-r));
		return r;
	}
	for (size_t i = 0; i < port->vlan->n_addrs && r == 0; i++) {
		const struct fctl_addr_entry *ae = &port->vlan->addrs[i];
		struct fctl_op op = { .kind = FCTL_OP_ADDR_ADD };
		struct fctl_nl_err ne = { 0 };
		bool have = false;

		if (!ae->host || !ae->cidr || strcmp(ae->host, port->host) != 0)
			continue;
		for (size_t k = 0; k < secy->n_addrs; k++)
			have |= strcmp(secy->addrs[k], ae->cidr) == 0;
		if (have)
			continue;
		snprintf(op.ifname, sizeof(op.ifname), "%s", secy->name);
		op.addr = ae->cidr;
		r = fctl_engine_kernel_exec(a->o->kern, &op, NULL, &ne);
		if (r < 0)
			snprintf(a->err, a->errlen, "%s: address %s: %s", secy->name, ae->cidr,
				 ne.msg[0] ? ne.msg : strerror(-r));
	}
	fctl_host_state_free(hs);
	return r;
}

/* A new CAK for a port whose CA runs: a second wpa_supplicant on the other SCI port, the
 * addresses left where they are (fctl_mka_rotation_step moves them once it is secured). */
static int rotate_in(const struct fctl_mka_port *port, struct up_arg *a,
		     struct fctl_mka_params *mp, uint16_t cur_port)
{
	char idir[PATH_MAX], have[PATH_MAX + 16];
	uint16_t in_port;
	int r;

	mp->sci_port = fctl_mka_alt_port(cur_port);
	fctl_mka_incoming_dir(port->ifname, mp->sci_port, idir, sizeof(idir));
	/* an incoming CA on another port is not this rotation's (never expected) */
	if (fctl_mka_incoming(port->ifname, have, sizeof(have), &in_port) == 0 &&
	    in_port != mp->sci_port && (r = fctl_mka_incoming_stop(port->ifname, a->err,
								    a->errlen)) < 0)
		return r;
	mp->run_dir = idir;
	r = fctl_mka_start(mp, a->err, a->errlen);
	if (r < 0)
		return r;
	if (r == 1) { /* a new SecY: its wait starts again */
		snprintf(have, sizeof(have), "%s/rotation", idir);
		unlink(have);
	}
	a->started++;
	a->rotating++;
	return 0;
}

/* The policy's port a settings line records (0 when it records none). */
static unsigned policy_port(const char *line)
{
	const char *p = strstr(line, " port=");
	unsigned port = 0;

	return p && sscanf(p, " port=%u", &port) == 1 ? port : 0;
}

/* An incoming CA of a rotation on port: 0 when it already has what the profile wants
 * (the rotation goes on, nothing to do), -EBUSY when the rotation has moved the traffic
 * to it and the profile wants something else (apply again once it is done), 1 when the
 * apply goes on as if there were none (nothing incoming, or it is still waiting). */
static int rotation_under_way(const struct fctl_mka_port *port, struct up_arg *a,
			      const char *want)
{
	char idir[PATH_MAX], ihave[512];

	if (fctl_mka_incoming(port->ifname, idir, sizeof(idir), NULL) < 0)
		return 1;
	/* a CA too busy to answer one PING runs all the same (up_one) */
	if (fctl_mka_health(port->ifname, idir) != FCTL_MKA_DEAD &&
	    fctl_mka_settings_read(port->ifname, idir, ihave, NULL) == 0 &&
	    strcmp(ihave, want) == 0) {
		a->started++;
		/* the current CA died: the incoming one takes over now (a step does it) */
		if (fctl_mka_health(port->ifname, NULL) == FCTL_MKA_DEAD) {
			int r = fctl_mka_rotation_step(a->o->kern, port, a->err, a->errlen);

			return r < 0 ? r : 0;
		}
		a->rotating++;
		return 0;
	}
	if (!fctl_mka_rotation_moved(port->ifname))
		return 1;
	snprintf(a->err, a->errlen, "%s: a CAK rotation is switching it (its traffic is on the "
		 "new CA already): apply again once it is done (fabricctl show lists one CA)",
		 port->ifname);
	return -EBUSY;
}

static int up_one(const struct fctl_mka_port *port, void *arg)
{
	struct up_arg *a = arg;
	const struct fctl_macsec_policy *pol = port->pol;
	struct fctl_key *cak = NULL;
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *secy = NULL;
	char base[PATH_MAX], *abs, have[512] = "", want[512];
	uint16_t cur_port = pol->port;
	bool running;
	int r, old;

	if (a->o->only_port && strcmp(a->o->only_port, port->ifname) != 0)
		return 0;
	abs = port->profile->dir ? realpath(port->profile->dir, NULL) : NULL;
	snprintf(base, sizeof(base), "%s", abs ? abs : (port->profile->dir ? port->profile->dir : "."));
	free(abs);
	r = fetch_cak(a->o->keys, &pol->mka.primary, base, &cak, a->err, a->errlen);
	if (r < 0)
		return r;
	struct fctl_mka_params mp = {
		.ifname = port->ifname,
		.run_dir = NULL,
		.wpa_supplicant = a->o->wpa_supplicant,
		.cak = cak,
		.ckn = pol->mka.primary.ckn,
		.priority = pol->mka.priority,
		.must_secure = pol->must_secure,
		.integrity_only = !pol->encrypt,
		.replay_protect = pol->replay_protect,
		.replay_window = pol->replay_window,
		.port = pol->port,
	};
	/* a CA too busy to answer one PING (a loaded machine) still runs: taken for gone, a
	 * new CAK would reconfigure it in place (a new MKA session, a gap) instead of
	 * rotating */
	running = fctl_mka_health(port->ifname, NULL) != FCTL_MKA_DEAD &&
		  fctl_mka_settings_read(port->ifname, NULL, have, &cur_port) == 0;
	/* the SCI port a rotation moved to is kept, unless the policy's port changed */
	if (!running || policy_port(have) != pol->port)
		cur_port = pol->port;
	fctl_mka_settings_line(&mp, want, sizeof(want));
	r = rotation_under_way(port, a, want);
	if (r != 1) {
		fctl_key_free(cak);
		return r;
	}
	/* make-before-break only where something is made: a CA that is not secured carries
	 * nothing, and is reconfigured in place (a wrong CAK mended at once) */
	if (running && fctl_mka_settings_ca_only(have, want) &&
	    fctl_mka_secured(port->ifname, NULL)) {
		r = rotate_in(port, a, &mp, cur_port);
		fctl_key_free(cak);
		return r;
	}
	/* the current CA keeps (or gets) these settings: a rotation under way is given up */
	r = fctl_mka_incoming_stop(port->ifname, a->err, a->errlen);
	if (r < 0) {
		fctl_key_free(cak);
		return r;
	}
	mp.sci_port = cur_port;
	old = fctl_mka_find_secy(fctl_engine_kernel_nl(a->o->kern), port->host, port->ifname,
				 cur_port, &hs, &secy) == 0
		      ? secy->ifindex
		      : -1;
	fctl_host_state_free(hs);
	r = fctl_mka_start(&mp, a->err, a->errlen);
	fctl_key_free(cak);
	if (r < 0)
		return r;
	a->started++;
	/* unchanged: the SecY stays; a (re)start removed the old one */
	return address_secy(port, a, cur_port, r == 0 ? -1 : old);
}

int fctl_mka_host_up(const struct fctl_profile *p, const char *host,
		     const struct fctl_mka_host_opts *o, unsigned *n_ports, unsigned *n_rotating,
		     char *err, size_t errlen)
{
	struct up_arg a = { .o = o, .err = err, .errlen = errlen };
	int r = fctl_mka_host_each(p, host, up_one, &a);

	if (n_ports)
		*n_ports = a.started;
	if (n_rotating)
		*n_rotating = a.rotating;
	return r;
}

struct want_arg {
	const char *name;
	bool found;
};

static int is_port(const struct fctl_mka_port *port, void *arg)
{
	struct want_arg *w = arg;

	if (strcmp(port->ifname, w->name) == 0)
		w->found = true;
	return 0;
}

int fctl_mka_host_prune(const struct fctl_profile *p, const char *host, unsigned *n_stopped,
			char *err, size_t errlen)
{
	DIR *d = opendir(FCTL_MKA_RUN_DIR);
	struct dirent *de;
	unsigned n = 0;
	int r = 0;

	while (d && (de = readdir(d))) {
		char name[NAME_MAX + 1], dir[PATH_MAX + NAME_MAX + 2];
		struct want_arg w = { .name = name };
		int kind;

		/* IFNAME:N is the incoming CA of a rotation on IFNAME */
		if (de->d_name[0] == '.' ||
		    (kind = fctl_mka_dir_name(de->d_name, name, sizeof(name), NULL)) < 0)
			continue;
		fctl_mka_host_each(p, host, is_port, &w);
		if (w.found)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", FCTL_MKA_RUN_DIR, de->d_name);
		r = fctl_mka_stop(name, kind == 1 ? dir : NULL, err, errlen);
		if (r < 0)
			break;
		n++;
	}
	if (d)
		closedir(d);
	if (n_stopped)
		*n_stopped = n;
	return r;
}
