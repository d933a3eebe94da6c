// SPDX-License-Identifier: MIT
/* The agent's running configuration: built from its start parameters (file and
 * options) and applied at start and again on SIGHUP. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "agentd_int.h"

int fctl_agent_config_build(const struct fctl_agent_start *s, struct fctl_agent_config *out,
			    char *err, size_t errlen)
{
	int r;

	if (s->config) {
		r = fctl_agent_config_load(out, s->config, err, errlen);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < s->n; i++) {
		r = fctl_agent_config_set(out, s->keys[i], s->vals[i]);
		if (r < 0) {
			snprintf(err, errlen, "bad value '%s' for --%s", s->vals[i], s->keys[i]);
			return r;
		}
	}
	return 0;
}

/* A reload without `listen` while the TLS listener is open (it stays open until a
 * restart): the listener keeps its endpoint and its TLS material, so cfg takes
 * them over from the running configuration. */
static int keep_listener(struct agent *a, struct fctl_agent_config *cfg)
{
	char **mine[] = { &a->cfg.listen, &a->cfg.cert, &a->cfg.key, &a->cfg.ca };
	char **theirs[] = { &cfg->listen, &cfg->cert, &cfg->key, &cfg->ca };

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(mine); i++) {
		char *v = *mine[i] ? fctl_strdup(*mine[i]) : NULL;

		if (*mine[i] && !v)
			return -ENOMEM;
		free(*theirs[i]);
		*theirs[i] = v;
	}
	fctl_agentd_log("reload: 'listen' removed, but the TLS listener on %s stays open until "
			"a restart, with its certificates", a->cfg.listen);
	return 0;
}

/* The Unix socket's mode and group follow `group` on a reload. */
static void socket_mode(const struct agent *a)
{
	if (a->unix_fd < 0 || !a->cfg.socket_path || !*a->cfg.socket_path)
		return;
	if (chown(a->cfg.socket_path, 0, a->ct.lim.has_gid ? a->ct.lim.gid : 0) < 0 ||
	    chmod(a->cfg.socket_path, a->ct.lim.has_gid ? 0660 : 0600) < 0)
		fctl_agentd_log("cannot set the mode of '%s': %s", a->cfg.socket_path,
				strerror(errno));
}

int fctl_agentd_apply_config(struct agent *a, struct fctl_agent_config *cfg, char *err,
			     size_t errlen)
{
	struct fctl_tls_policy *pol = NULL;
	bool has_gid = false;
	gid_t gid = 0, wgid = 0;
	uid_t wuid = 0;
	int r = 0;

	if (!cfg->listen && a->tcp_fd >= 0) {
		r = keep_listener(a, cfg);
		if (r < 0)
			snprintf(err, errlen, "out of memory");
	}
	if (r == 0 && cfg->max_buffered < cfg->max_frame) {
		snprintf(err, errlen, "max_buffered (%u) is below max_frame (%u)",
			 cfg->max_buffered, (unsigned)cfg->max_frame);
		r = -EINVAL;
	}
	if (r == 0 && cfg->unix_root_reserve >= cfg->max_unix_connections) {
		snprintf(err, errlen, "unix_root_reserve (%u) must be below max_unix_connections "
			 "(%u)", cfg->unix_root_reserve, cfg->max_unix_connections);
		r = -EINVAL;
	}
	if (r == 0 && cfg->listen && (!cfg->cert || !cfg->key || !cfg->ca)) {
		snprintf(err, errlen, "a certificate, its key and the fabric CA are all needed "
				      "(--cert, --key, --ca)");
		r = -EINVAL;
	}
	if (r == 0 && cfg->crl && !cfg->listen) {
		snprintf(err, errlen, "'crl' needs 'listen' (it checks TLS clients)");
		r = -EINVAL;
	}
	/* the policy is checked here (its findings at once), used by the front-end */
	if (r == 0 && cfg->policy)
		r = fctl_tls_policy_load(cfg->policy, &pol, err, errlen);
	fctl_tls_policy_free(pol);
	if (r == 0 && cfg->group && *cfg->group) {
		struct group *g = getgrnam(cfg->group);

		if (!g) {
			snprintf(err, errlen, "group '%s' does not exist", cfg->group);
			r = -ENOENT;
		} else {
			gid = g->gr_gid;
			has_gid = true;
		}
	}
	if (r == 0) {
		struct passwd *pw = cfg->worker_user ? getpwnam(cfg->worker_user) : NULL;

		if (!pw || pw->pw_uid == 0 || pw->pw_gid == 0) {
			snprintf(err, errlen, "worker_user '%s' %s", cfg->worker_user ? cfg->worker_user : "",
				 pw ? "is root: read-only workers must run unprivileged"
				    : "does not exist");
			r = -EINVAL;
		} else {
			wuid = pw->pw_uid;
			wgid = pw->pw_gid;
		}
	}
	/* last: the running front-end takes the TLS files (the agent never reads the key)
	 * and keeps what it had when they fail; nothing below fails */
	if (r == 0 && cfg->listen && a->fe.pid > 0) {
		r = fctl_agentd_fe_configure(a, cfg, err, errlen);
		if (r > 0)
			fctl_agentd_log("warning: a CRL of '%s' is past its next update: every "
					"client it covers is refused until a fresh one is loaded "
					"(SIGHUP)", cfg->crl);
		r = r < 0 ? r : 0;
	}
	if (r < 0)
		return r;
	/* every field from the new configuration, a removed group included */
	a->worker_uid = wuid;
	a->worker_gid = wgid;
	fctl_agent_config_release(&a->cfg);
	a->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	fctl_agentd_conn_limits(&a->ct.lim, &a->cfg);
	a->ct.lim.gid = gid;
	a->ct.lim.has_gid = has_gid;
	socket_mode(a);
	a->eo.state_dir = a->cfg.state_dir;
	a->eo.netns = a->cfg.netns;
	a->eo.host = a->cfg.host;
	a->eo.keymgr_path = a->start->keymgr_path;
	if (fctl_engine_host_name(&a->eo, a->host, sizeof(a->host)) < 0)
		snprintf(a->host, sizeof(a->host), "unknown");
	{
		struct itimerspec its = { 0 };

		its.it_value.tv_sec = its.it_interval.tv_sec = a->cfg.drift_interval_s;
		timerfd_settime(a->drift_tfd, 0, &its, NULL);
	}
	return 0;
}

void fctl_agentd_reload(struct agent *a)
{
	struct fctl_agent_config cfg;
	char err[512] = "";
	int r;

	fctl_agentd_notify("RELOADING=1");
	fctl_agent_config_init(&cfg);
	r = fctl_agent_config_build(a->start, &cfg, err, sizeof(err));
	if (r == 0)
		r = fctl_agentd_apply_config(a, &cfg, err, sizeof(err));
	fctl_agent_config_release(&cfg);
	if (r < 0)
		fctl_agentd_log("reload failed, keeping the running configuration: %s", err);
	else
		fctl_agentd_log("configuration, certificates and policy reloaded (listen addresses "
				"change on restart)");
	fctl_agentd_notify("READY=1");
}
