// SPDX-License-Identifier: MIT
/* MKA in the host transaction: the wpa_supplicants of a host's MKA ports started after an
 * apply, and the check values of the CAKs in use for its record. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fctl/engine_kernel.h"
#include "fctl/host_apply.h"
#include "fctl/keysrc.h"
#include "fctl/mka_host.h"
#include "fctl/mka_rotate.h"
#include "host_int.h"

static int count_port(const struct fctl_mka_port *port, void *arg)
{
	(void)port;
	(*(unsigned *)arg)++;
	return 0;
}

/* Prune and up under the lock of the MKA run directory (the agent's restarts and
 * rotation steps take it too). */
static int mka_up_locked(const struct fctl_profile *p, const char *host, unsigned n_ports,
			 const char *netns, const char *keymgr_path, bool quiet,
			 struct fctl_host_msgs *m)
{
	struct fctl_key_source src = { .keymgr_path = keymgr_path };
	struct fctl_mka_host_opts o = { .keys = &src };
	char err[768] = "";
	unsigned n = 0, rot = 0;
	int r;

	/* ports the profile no longer runs MKA on: their wpa_supplicant stops with the link */
	r = fctl_mka_host_prune(p, host, &n, err, sizeof(err));
	if (r < 0) {
		fctl_hosti_say(m, "apply: mka on %s: %s", host, err);
		return FCTL_HOST_FAILED;
	}
	if (n && !quiet)
		fctl_hosti_plain(m, "mka: stopped %u wpa_supplicant%s of %s", n, n == 1 ? "" : "s",
				 host);
	if (!n_ports)
		return FCTL_HOST_OK;
	n = 0;
	r = fctl_engine_kernel_open(NULL, NULL, netns, &o.kern);
	if (r < 0) {
		fctl_hosti_say(m, "apply: mka: netlink: %s", strerror(-r));
		return FCTL_HOST_USAGE;
	}
	r = fctl_mka_host_up(p, host, &o, &n, &rot, err, sizeof(err));
	fctl_engine_kernel_close(o.kern);
	if (r < 0) {
		/* fail-secure: the VLAN device carries no address, so nothing flows in clear */
		fctl_hosti_say(m, "apply: mka on %s: %s", host, err[0] ? err : strerror(-r));
		return FCTL_HOST_FAILED;
	}
	if (n && !quiet)
		fctl_hosti_plain(m, "mka: %u port%s of %s handed to wpa_supplicant", n,
				 n == 1 ? "" : "s", host);
	if (rot && !quiet)
		fctl_hosti_plain(m, "mka: %u port%s of %s rotating to a new CAK: the old one "
				 "carries the traffic until the peer has the new one (the agent "
				 "moves it, docs/mka.md)", rot, rot == 1 ? "" : "s", host);
	return FCTL_HOST_OK;
}

int fctl_host_mka_up(const struct fctl_profile *p, const char *host, const char *netns,
		     const char *keymgr_path, bool quiet, struct fctl_host_msgs *m)
{
	struct stat st;
	unsigned n = 0;
	int fd, rc;

	fctl_mka_host_each(p, host, count_port, &n);
	/* nothing to start, nothing ever started: no run directory made for nothing */
	if (!n && stat(FCTL_MKA_RUN_DIR, &st) < 0)
		return FCTL_HOST_OK;
	fd = fctl_mka_lock();
	if (fd < 0) {
		fctl_hosti_say(m, "apply: mka: cannot lock %s: %s", FCTL_MKA_RUN_DIR, strerror(-fd));
		return FCTL_HOST_USAGE;
	}
	rc = mka_up_locked(p, host, n, netns, keymgr_path, quiet, m);
	close(fd);
	return rc;
}

static void put_kcv(struct fctl_apply_result *res, const char *kcv)
{
	for (size_t i = 0; i < res->n_kcvs; i++)
		if (strcmp(res->kcvs[i], kcv) == 0)
			return;
	if (res->n_kcvs < FCTL_APPLY_MAX_KCVS)
		snprintf(res->kcvs[res->n_kcvs++], sizeof(res->kcvs[0]), "%s", kcv);
}

/* The CAK of the current CA and, during a rotation, the incoming one's: both by their
 * check values. */
static int add_kcv(const struct fctl_mka_port *port, void *arg)
{
	struct fctl_apply_result *res = arg;
	char ckn[65], kcv[7], dir[PATH_MAX];

	if (fctl_mka_given(port->ifname, NULL, ckn, kcv) == 0)
		put_kcv(res, kcv);
	if (fctl_mka_incoming(port->ifname, dir, sizeof(dir), NULL) == 0 &&
	    fctl_mka_given(port->ifname, dir, ckn, kcv) == 0)
		put_kcv(res, kcv);
	return 0;
}

void fctl_host_mka_kcvs(const struct fctl_profile *p, const char *host,
			struct fctl_apply_result *res)
{
	fctl_mka_host_each(p, host, add_kcv, res);
}
