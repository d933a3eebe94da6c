// SPDX-License-Identifier: MIT
/* What the agent does with a decoded request: role check, HELLO, STATUS, or a worker. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
	int pending = fctl_engine_confirm_pending(&a->eo, &cp);

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
	int r;

	if (a->frontend) { /* the front-end: the agent handles it */
		fctl_agentd_fr_forward(a, c);
		return;
	}
	c->req_id = m->id;
	c->req_type = m->type;
	c->req_options = m->options;
	c->req_writes = m->type == FCTL_MSG_ROLLBACK || m->type == FCTL_MSG_RECOVER ||
			m->type == FCTL_MSG_CONFIRM ||
			(m->type == FCTL_MSG_APPLY && !(m->options & FCTL_OPT_DRY_RUN));
	if (fctl_proto_is_sa_request(m->type)) {
		fctl_agentd_sa_request(a, c, m);
		return;
	}
	if (!fctl_roles_allow(c->roles, m->type, m->options)) {
		char d[128];

		a->st.refused[FCTL_REFUSED_ROLE]++;
		fctl_agentd_count(a, c, m->type, FCTL_REQ_REFUSED);
		snprintf(d, sizeof(d), "role %s may not %s", fctl_role_name(c->role), tn);
		fctl_agentd_audit_event(a, tn, "refused", c, d);
		fctl_agentd_respond_error(a, c, m->id, EXIT_REFUSED, "permission denied: %s", d);
		return;
	}
	if (m->type == FCTL_MSG_HELLO) {
		struct fctl_msg x = { 0 };
		int v = fctl_proto_negotiate(m->version_min, m->version_max);

		if (v < 0) {
			/* before responding: the response's write closes the connection */
			c->close_after = true;
			fctl_agentd_respond_error(a, c, m->id, 2,
						  "no common protocol version (agent speaks 1..%d)",
						  FCTL_PROTO_VERSION);
			return;
		}
		x.present = FCTL_HAS_ROLE | FCTL_HAS_AGENT | FCTL_HAS_VERSION_MAX;
		x.version_max = (uint16_t)v;
		snprintf(x.role, sizeof(x.role), "%s", fctl_role_name(c->role));
		snprintf(x.agent, sizeof(x.agent), "%s fabricctl %s", a->host, FCTL_VERSION);
		fctl_agentd_count(a, c, m->type, FCTL_REQ_OK);
		fctl_agentd_respond(a, c, m->id, 0, NULL, 0, NULL, 0, &x);
		return;
	}
	if (m->type == FCTL_MSG_STATUS) {
		struct fctl_buf o = { 0 };

		status_output(a, c, m->options & FCTL_OPT_JSON, &o);
		fctl_agentd_count(a, c, m->type, FCTL_REQ_OK);
		fctl_agentd_respond(a, c, m->id, 0, o.data, o.len, NULL, 0, NULL);
		fctl_buf_release(&o);
		return;
	}
	if (c->req_writes) {
		char rdir[PATH_MAX], ifn[FCTL_IFNAMSIZ];

		fctl_rotation_dir(a->cfg.state_dir, a->cfg.netns, rdir, sizeof(rdir));
		if (fctl_rotation_busy(rdir, ifn, sizeof(ifn))) {
			fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
			fctl_agentd_respond_error(a, c, m->id, 2, "a key rotation is in progress "
						  "on '%s': try again", ifn);
			return;
		}
	}
	if (a->workers >= a->cfg.max_workers) {
		a->st.refused[FCTL_REFUSED_WORKERS]++;
		fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
		fctl_agentd_respond_error(a, c, m->id, 2, "busy: %u requests are running "
					  "(max_workers %u): try again", a->workers,
					  a->cfg.max_workers);
		return;
	}
	r = fctl_agentd_spawn(a, c, m);
	if (r < 0) {
		fctl_agentd_count(a, c, m->type, FCTL_REQ_FAILED);
		fctl_agentd_respond_error(a, c, m->id, 2, "cannot start the %s: %s", tn,
					  strerror(-r));
	}
}
