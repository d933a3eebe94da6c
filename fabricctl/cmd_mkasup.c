// SPDX-License-Identifier: MIT
/* The agent's writing workers for one MKA port: restart its wpa_supplicant, step its CAK rotation. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fctl/agent.h"
#include "fctl/engine.h"
#include "fctl/engine_kernel.h"
#include "fctl/mka_host.h"
#include "fctl/mka_rotate.h"
#include "fctl/mka_super.h"

struct find {
	const char *ifname;
	bool found;
};

static int is_port(const struct fctl_mka_port *port, void *arg)
{
	struct find *f = arg;

	f->found |= strcmp(port->ifname, f->ifname) == 0;
	return 0;
}

/* The host's name and the last applied profile, for the port of rq: EXIT_OK, or an exit
 * status after saying why. */
static int load_applied(const struct fctl_agent_request *rq, char host[256],
			struct fctl_profile **p)
{
	struct fctl_engine_opts eo = { .netns = rq->netns, .state_dir = rq->state_dir,
				       .host = rq->host };
	struct fctl_diags d = { 0 };
	int r;

	if (!rq->mka_port || fctl_engine_host_name(&eo, host, 256) < 0)
		return EXIT_USAGE;
	r = fctl_engine_load_version(&eo, 0, &d, p);
	fctl_diags_release(&d);
	if (r < 0) {
		cli_err("mka: %s: cannot load the last applied profile: %s", rq->mka_port,
			strerror(-r));
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

static int restart_locked(const struct fctl_agent_request *rq, const struct fctl_profile *p,
			  const char *host, struct fctl_mka_host_opts *o, unsigned *n, char *err,
			  size_t errlen);

int cli_mka_restart(const struct fctl_agent_request *rq, const char *keymgr_path)
{
	struct fctl_key_source src = { .keymgr_path = keymgr_path };
	struct fctl_mka_host_opts o = { .keys = &src, .only_port = rq->mka_port };
	struct fctl_profile *p = NULL;
	char host[256], err[768] = "";
	unsigned n = 0;
	int r, lk;

	r = load_applied(rq, host, &p);
	if (r != EXIT_OK)
		return r;
	lk = fctl_mka_lock();
	if (lk < 0) {
		cli_err("mka: cannot lock %s: %s", FCTL_MKA_RUN_DIR, strerror(-lk));
		fctl_profile_free(p);
		return EXIT_USAGE;
	}
	r = restart_locked(rq, p, host, &o, &n, err, sizeof(err));
	close(lk);
	fctl_profile_free(p);
	if (r == -ENOENT)
		return EXIT_FAILED;
	if (r < 0 || n != 1) {
		cli_err("mka: restart of %s: %s", rq->mka_port,
			err[0] ? err : r < 0 ? strerror(-r) : "the port was not started");
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

static int restart_locked(const struct fctl_agent_request *rq, const struct fctl_profile *p,
			  const char *host, struct fctl_mka_host_opts *o, unsigned *n, char *err,
			  size_t errlen)
{
	struct find f = { .ifname = rq->mka_port };
	char line[512];
	uint16_t sci_port = 0;
	int r;

	/* the agent decided on what it read a moment ago: a port the applied profile no
	 * longer has is never started again */
	fctl_mka_host_each(p, host, is_port, &f);
	if (!f.found) {
		cli_err("mka: %s is no MKA port of %s in the applied profile: not restarted",
			rq->mka_port, host);
		return -ENOENT;
	}
	if (fctl_mka_settings_read(rq->mka_port, NULL, line, &sci_port) < 0)
		sci_port = 0;
	if (rq->mka_kill)
		fctl_mka_kill(rq->mka_port, NULL);
	/* waits for a killed one to be gone, wipes what the old one left; a rotation's
	 * incoming CA goes too (the agent restarts only when it is gone or not there) */
	fctl_mka_stop(rq->mka_port, NULL, err, errlen);
	fctl_mka_incoming_stop(rq->mka_port, err, errlen);
	err[0] = '\0';
	r = fctl_engine_kernel_open(NULL, NULL, rq->netns, &o->kern);
	if (r < 0) {
		snprintf(err, errlen, "netlink: %s", strerror(-r));
		return r;
	}
	/* a wpa_supplicant killed with SIGKILL leaves its SecY behind: only the dead one's
	 * (by its SCI port), so the new one can create its own; the VLAN device below
	 * carries no address, nothing flows in clear meanwhile */
	r = fctl_mka_drop_secy(o->kern, host, rq->mka_port, sci_port, err, errlen);
	if (r == 0)
		r = fctl_mka_host_up(p, host, o, n, NULL, err, errlen);
	fctl_engine_kernel_close(o->kern);
	o->kern = NULL;
	return r;
}

struct step {
	struct fctl_engine_kernel *kern;
	const char *ifname;
	char err[512];
	int r;
	bool found;
};

static int step_port(const struct fctl_mka_port *port, void *arg)
{
	struct step *s = arg;

	if (strcmp(port->ifname, s->ifname) != 0)
		return 0;
	s->found = true;
	s->r = fctl_mka_rotation_step(s->kern, port, s->err, sizeof(s->err));
	return 0;
}

int cli_mka_step(const struct fctl_agent_request *rq)
{
	struct step s = { .ifname = rq->mka_port };
	struct fctl_profile *p = NULL;
	char host[256];
	int r, lk;

	r = load_applied(rq, host, &p);
	if (r != EXIT_OK)
		return r;
	r = fctl_engine_kernel_open(NULL, NULL, rq->netns, &s.kern);
	if (r < 0) {
		cli_err("mka: netlink: %s", strerror(-r));
		fctl_profile_free(p);
		return EXIT_USAGE;
	}
	lk = fctl_mka_lock();
	if (lk < 0) {
		cli_err("mka: cannot lock %s: %s", FCTL_MKA_RUN_DIR, strerror(-lk));
		fctl_engine_kernel_close(s.kern);
		fctl_profile_free(p);
		return EXIT_USAGE;
	}
	fctl_mka_host_each(p, host, step_port, &s);
	close(lk);
	fctl_engine_kernel_close(s.kern);
	fctl_profile_free(p);
	if (!s.found) /* the port left the profile: the next apply's prune stops it */
		return EXIT_OK;
	if (s.r < 0) {
		cli_err("mka: rotation of %s: %s", rq->mka_port, s.err[0] ? s.err : strerror(-s.r));
		return EXIT_FAILED;
	}
	return s.r == FCTL_MKA_ROT_MOVED ? FCTL_AGENT_MKA_STEP_MOVED
	       : s.r == FCTL_MKA_ROT_DONE ? FCTL_AGENT_MKA_STEP_DONE
					   : EXIT_OK;
}
