// SPDX-License-Identifier: MIT
/* What the agent does with a decoded request: role check, HELLO, STATUS, or a worker; its connection hooks. */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agentd_int.h"
#include "fctl/rotation.h"

void fctl_agentd_count(struct agent *a, const struct conn *c, uint8_t type, unsigned result)
{
	unsigned role = (unsigned)c->role;

	if (role < FCTL_AGENT_ROLES && type <= FCTL_MSG_LAST && result < FCTL_REQ_RESULTS)
		a->st.requests[role][type][result]++;
}

static void status_output(struct agent *a, const struct conn *c, bool json, struct fctl_buf *o)
{
	const struct fctl_agent_stats *s = &a->st;
	struct fctl_confirm_pending cp;
	int pending = a->rops->confirm_pending(a, &cp);

	if (json) {
		fctl_buf_puts(o, "{\"host\":");
		fctl_buf_json_str(o, a->host);
		fctl_buf_printf(o, ",\"agent\":\"fabricctl %s\",\"protocol\":%d,\"role\":\"%s\"",
				FCTL_VERSION, FCTL_PROTO_VERSION, fctl_role_name(c->role));
		if (s->applied)
			fctl_buf_printf(o, ",\"applied_version\":%" PRIu64, s->applied_version);
		else
			fctl_buf_puts(o, ",\"applied_version\":null");
		if (s->drift_known)
			fctl_buf_printf(o, ",\"drift\":%s,\"drift_checked\":%.3f",
					s->drift ? "true" : "false", s->drift_last_check);
		else
			fctl_buf_puts(o, ",\"drift\":null");
		if (pending == 1) {
			fctl_buf_printf(o, ",\"confirm\":{\"pending\":true,\"version\":%" PRIu64
					   ",\"deadline_unix\":%" PRId64 ",\"rollback_to_version\":",
					cp.version, cp.deadline);
			if (cp.prev_seq)
				fctl_buf_printf(o, "%" PRIu64 "}", cp.prev_version);
			else
				fctl_buf_puts(o, "null}");
		} else {
			fctl_buf_puts(o, ",\"confirm\":null");
		}
		fctl_buf_printf(o, ",\"mka_restarts\":%" PRIu64 ",\"mka_restart_failures\":%" PRIu64,
				s->mka_restarts, s->mka_restart_failures);
		fctl_buf_printf(o, ",\"drift_repair\":%s,\"busy\":%s,\"uptime_seconds\":%.0f}\n",
				a->cfg.drift_repair ? "true" : "false",
				a->writers ? "true" : "false", fctl_agentd_wall() - s->start_time);
		return;
	}
	fctl_buf_printf(o, "agent on %s (fabricctl %s, protocol %d), your role: %s\n", a->host,
			FCTL_VERSION, FCTL_PROTO_VERSION, fctl_role_name(c->role));
	if (s->applied)
		fctl_buf_printf(o, "applied profile version: %" PRIu64 "\n", s->applied_version);
	else
		fctl_buf_puts(o, "applied profile version: none\n");
	if (s->drift_known)
		fctl_buf_printf(o, "drift: %s\n", s->drift ? "yes" : "no");
	if (s->mka_restarts || s->mka_restart_failures)
		fctl_buf_printf(o, "mka restarts: %" PRIu64 " (%" PRIu64 " failed)\n",
				s->mka_restarts, s->mka_restart_failures);
	if (pending == 1)
		fctl_buf_printf(o, "awaiting confirmation: version %" PRIu64 ", deadline %" PRId64
				   " (UNIX seconds)\n", cp.version, cp.deadline);
}

void fctl_agentd_handle_request(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	const char *tn = fctl_proto_type_name(m->type);
	struct aconn *ac = fctl_agentd_ac(c);
	int r;

	ac->req_id = m->id;
	ac->req_type = m->type;
	ac->req_options = m->options;
	ac->req_writes = m->type == FCTL_MSG_ROLLBACK || m->type == FCTL_MSG_RECOVER ||
			m->type == FCTL_MSG_CONFIRM ||
			(m->type == FCTL_MSG_APPLY && !(m->options & FCTL_OPT_DRY_RUN));
	if (fctl_proto_is_sa_request(m->type)) {
		a->rops->sa_request(a, c, m);
		return;
	}
	if (!fctl_roles_allow(c->roles, m->type, m->options)) {
		char d[128];

		a->st.refused[FCTL_REFUSED_ROLE]++;
		fctl_agentd_count(a, c, m->type, FCTL_REQ_REFUSED);
		snprintf(d, sizeof(d), "role %s may not %s", fctl_role_name(c->role), tn);
		fctl_agentd_audit_event(a, tn, "refused", c, d);
		fctl_agentd_respond_error(&a->ct, c, m->id, EXIT_REFUSED, "permission denied: %s", d);
		return;
	}
	if (m->type == FCTL_MSG_HELLO) {
		struct fctl_msg x = { 0 };
		int v = fctl_proto_negotiate(m->version_min, m->version_max);

		if (v < 0) {
			/* before responding: the response's write closes the connection */
			c->close_after = true;
			fctl_agentd_respond_error(&a->ct, c, m->id, 2,
						  "no common protocol version (agent speaks 1..%d)",
						  FCTL_PROTO_VERSION);
			return;
		}
		x.present = FCTL_HAS_ROLE | FCTL_HAS_AGENT | FCTL_HAS_VERSION_MAX;
		x.version_max = (uint16_t)v;
		snprintf(x.role, sizeof(x.role), "%s", fctl_role_name(c->role));
		snprintf(x.agent, sizeof(x.agent), "%s fabricctl %s", a->host, FCTL_VERSION);
		fctl_agentd_count(a, c, m->type, FCTL_REQ_OK);
		fctl_agentd_respond(&a->ct, c, m->id, 0, NULL, 0, NULL, 0, &x);
		return;
	}
	if (m->type == FCTL_MSG_STATUS) {
		struct fctl_buf o = { 0 };

		status_output(a, c, m->options & FCTL_OPT_JSON, &o);
		fctl_agentd_count(a, c, m->type, FCTL_REQ_OK);
		fctl_agentd_respond(&a->ct, c, m->id, 0, o.data, o.len, NULL, 0, NULL);
		fctl_buf_release(&o);
		return;
	}
	if (ac->req_writes) {
		char ifn[FCTL_IFNAMSIZ];

		if (a->rops->rotation_busy(a, ifn, sizeof(ifn))) {
			fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
			fctl_agentd_respond_error(&a->ct, c, m->id, 2, "a key rotation is in progress "
						  "on '%s': try again", ifn);
			return;
		}
	}
	if (a->workers >= a->cfg.max_workers) {
		a->st.refused[FCTL_REFUSED_WORKERS]++;
		fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
		fctl_agentd_respond_error(&a->ct, c, m->id, 2, "busy: %u requests are running "
					  "(max_workers %u): try again", a->workers,
					  a->cfg.max_workers);
		return;
	}
	r = a->rops->spawn(a, c, m);
	if (r < 0) {
		fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
		fctl_agentd_respond_error(&a->ct, c, m->id, 2, "cannot start the %s: %s", tn,
					  strerror(-r));
	}
}

/* --- the real request operations --- */

static int confirm_pending(struct agent *a, struct fctl_confirm_pending *cp)
{
	return fctl_engine_confirm_pending(&a->eo, cp);
}

static bool rotation_busy(struct agent *a, char *ifn, size_t len)
{
	char rdir[PATH_MAX];

	fctl_rotation_dir(a->cfg.state_dir, a->cfg.netns, rdir, sizeof(rdir));
	return fctl_rotation_busy(rdir, ifn, len);
}

const struct agentd_req_ops fctl_agentd_req_ops = {
	.spawn = fctl_agentd_spawn,
	.sa_request = fctl_agentd_sa_request,
	.confirm_pending = confirm_pending,
	.rotation_busy = rotation_busy,
};

/* --- the agent's hooks of the connection code --- */

static void on_request(struct conn_table *t, struct conn *c, const struct fctl_msg *m)
{
	fctl_agentd_handle_request(fctl_agentd_of(t), c, m);
}

static void on_refuse(struct conn_table *t, struct conn *c, enum fctl_refusal why,
		      const char *detail)
{
	fctl_agentd_refuse(fctl_agentd_of(t), c, why, detail);
}

static void on_event(struct conn_table *t, struct conn *c, enum fctl_refusal why, uint8_t what,
		     const char *detail)
{
	fctl_agentd_refusal_event(fctl_agentd_of(t), c, why, what, detail);
}

static void on_closing(struct conn_table *t, struct conn *c)
{
	struct aconn *ac = fctl_agentd_ac(c);

	/* a read-only worker's answer has no one to go to: stopped (reaped as usual); a
	 * writing worker finishes, its change and audit record whole */
	if (ac->child > 0 && !ac->req_writes) {
		kill(ac->child, SIGTERM);
		ac->abandoned = true;
	}
	if (ac->proxy)
		fctl_agentd_fe_close(fctl_agentd_of(t), c);
}

static void on_proxy_out(struct conn_table *t, struct conn *c)
{
	fctl_agentd_fe_respond(fctl_agentd_of(t), c);
}

/* The agent's connections are struct aconn: no worker, no memfds yet. */
static struct conn *on_alloc(struct conn_table *t)
{
	struct aconn *ac = fctl_calloc(1, sizeof(*ac));

	(void)t;
	if (!ac)
		return NULL;
	ac->fd_out = ac->fd_err = -1;
	return &ac->c;
}

static void on_release(struct conn_table *t, struct conn *c)
{
	struct aconn *ac = fctl_agentd_ac(c);

	(void)t;
	if (ac->fd_out >= 0)
		close(ac->fd_out);
	if (ac->fd_err >= 0)
		close(ac->fd_err);
	if (ac->spool[0])
		unlink(ac->spool);
	free(ac);
}

const struct conn_hooks fctl_agentd_conn_hooks = {
	.request = on_request,
	.refuse = on_refuse,
	.event = on_event,
	.closing = on_closing,
	.proxy_out = on_proxy_out,
	.alloc = on_alloc,
	.release = on_release,
};
