// SPDX-License-Identifier: MIT
/*
 * The agent daemon's request handling (agentd_request.c) against a fake engine: role
 * checks and refusals, HELLO and STATUS answered by the agent, SA requests handed to the
 * SA code, the rest to a worker (whether it writes), the max_workers and key-rotation
 * refusals, a worker that cannot start. The fake (struct agentd_req_ops) starts no
 * worker, touches no kernel and no state directory; responses are read as frames from
 * the other end of the connection's socketpair, audit events from the agent's log sink.
 * The connection code runs for real, with the agent's hooks (fctl_agentd_conn_hooks).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentd_int.h"

/* --- the fake engine --- */

static struct {
	unsigned spawns, sa;
	int spawn_ret;          /* < 0: spawn fails */
	uint8_t spawn_type;
	bool spawn_writes;      /* c->req_writes when the worker was started */
	const char *busy_ifn;   /* a rotation holds it; NULL: none */
	int pending;            /* confirm_pending's answer */
} fk;

static int fake_spawn(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	fk.spawns++;
	fk.spawn_type = m->type;
	fk.spawn_writes = fctl_agentd_ac(c)->req_writes;
	if (fk.spawn_ret < 0)
		return fk.spawn_ret;
	a->workers++;
	if (fctl_agentd_ac(c)->req_writes)
		a->writers++;
	return 0;
}

static void fake_sa(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	(void)a, (void)c, (void)m;
	fk.sa++;
}

static int fake_confirm_pending(struct agent *a, struct fctl_confirm_pending *cp)
{
	(void)a;
	memset(cp, 0, sizeof(*cp));
	if (fk.pending == 1) {
		cp->version = 7;
		cp->deadline = 1700000000;
		cp->prev_seq = 3;
		cp->prev_version = 6;
	}
	return fk.pending;
}

static bool fake_busy(struct agent *a, char *ifn, size_t len)
{
	(void)a;
	if (!fk.busy_ifn)
		return false;
	snprintf(ifn, len, "%s", fk.busy_ifn);
	return true;
}

static const struct agentd_req_ops fake_ops = {
	.spawn = fake_spawn,
	.sa_request = fake_sa,
	.confirm_pending = fake_confirm_pending,
	.rotation_busy = fake_busy,
};

/* --- the agent's log: its audit events --- */

static char logbuf[8192];

static void log_sink(const char *line)
{
	size_t n = strlen(logbuf);

	snprintf(logbuf + n, sizeof(logbuf) - n, "%s\n", line);
}

/* --- an agent, a connection, frames --- */

struct fx {
	struct agent a;
	struct conn *c;
	int peer; /* the client's end */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int sv[2];

	assert_non_null(f);
	memset(&fk, 0, sizeof(fk));
	logbuf[0] = '\0';
	fctl_agent_log_set(log_sink);
	f->a.rops = &fake_ops;
	f->a.ct.hooks = &fctl_agentd_conn_hooks;
	f->a.ct.ep = -1; /* no loop: the connection code's epoll calls fail, unheeded */
	f->a.ct.count = &f->a.st.connections;
	f->a.fe.ch.fd = -1;
	f->a.sfd = f->a.drift_tfd = f->a.debounce_tfd = f->a.nl_fd = -1;
	f->a.unix_fd = f->a.tcp_fd = f->a.http_fd = f->a.refusal_tfd = f->a.exe_fd = -1;
	fctl_agent_config_init(&f->a.cfg);
	f->a.cfg.max_workers = 2;
	fctl_agentd_conn_limits(&f->a.ct.lim, &f->a.cfg);
	snprintf(f->a.host, sizeof(f->a.host), "leaf1");
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	f->c = fctl_agentd_conn_hooks.alloc(&f->a.ct); /* the agent's own: a struct aconn */
	assert_non_null(f->c);
	f->c->fd = sv[0];
	f->peer = sv[1];
	f->a.ct.conns = f->c;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	while (f->a.ct.conns)
		fctl_agentd_conn_free(&f->a.ct, f->a.ct.conns);
	close(f->peer);
	fctl_agent_config_release(&f->a.cfg);
	fctl_agent_log_set(NULL);
	free(f);
	return 0;
}

/* c as the Unix socket's root, or a TLS peer with roles (one role bit). */
static void as_local(struct conn *c)
{
	c->kind = C_UNIX;
	c->role = FCTL_ROLE_LOCAL;
	c->roles = FCTL_ROLE_BIT(FCTL_ROLE_LOCAL);
	c->has_uid = true;
	c->uid = 0;
	snprintf(c->who, sizeof(c->who), "uid 0 (pid 1)");
	snprintf(c->peer, sizeof(c->peer), "uid 0");
}

static void as_tls(struct conn *c, enum fctl_role role)
{
	c->kind = C_TLS;
	c->role = role;
	c->roles = FCTL_ROLE_BIT(role);
	snprintf(c->who, sizeof(c->who), "CN=alice,OU=%s", fctl_role_name(role));
	snprintf(c->peer, sizeof(c->peer), "127.0.0.1");
}

/* The response waiting on the client's end: 1 (decoded into m; its bytes in buf), 0 none. */
static int response(struct fx *f, uint8_t *buf, size_t len, struct fctl_msg *m)
{
	char why[200];
	ssize_t k = recv(f->peer, buf, len, 0);

	if (k < 0 && errno == EAGAIN)
		return 0;
	assert_true(k >= FCTL_PROTO_HDR_LEN);
	assert_int_equal(fctl_proto_decode(buf, (size_t)k, 0, m, why, sizeof(why)), 0);
	assert_int_equal(m->type, FCTL_MSG_RESPONSE);
	return 1;
}

/* A response: its RESULT, and its ERROR as a string (NUL-terminated copy in err). */
static uint32_t result_of(struct fx *f, char *err, size_t errlen)
{
	static uint8_t buf[1 << 16];
	struct fctl_msg m;

	assert_int_equal(response(f, buf, sizeof(buf), &m), 1);
	snprintf(err, errlen, "%.*s", (int)m.error_len, m.error ? m.error : "");
	return m.result;
}

static void no_response(struct fx *f)
{
	uint8_t buf[64];
	struct fctl_msg m;

	assert_int_equal(response(f, buf, sizeof(buf), &m), 0);
}

static void request(struct fx *f, uint8_t type, uint32_t options)
{
	struct fctl_msg m = { .type = type, .id = 41, .options = options,
			      .present = FCTL_HAS_OPTIONS };

	fctl_agentd_handle_request(&f->a, f->c, &m);
}

static uint64_t counted(struct fx *f, enum fctl_role role, uint8_t type, unsigned result)
{
	return f->a.st.requests[role][type][result];
}

/* --- HELLO and STATUS: answered by the agent --- */

static void hello_answered(void **state)
{
	struct fx *f = *state;
	struct fctl_msg m = { .type = FCTL_MSG_HELLO, .id = 9, .version_min = 1,
			      .version_max = FCTL_PROTO_VERSION,
			      .present = FCTL_HAS_VERSION_MIN | FCTL_HAS_VERSION_MAX };
	static uint8_t buf[4096];
	struct fctl_msg r;
	char agent[128];

	as_tls(f->c, FCTL_ROLE_VIEWER);
	fctl_agentd_handle_request(&f->a, f->c, &m);
	assert_int_equal(response(f, buf, sizeof(buf), &r), 1);
	assert_int_equal(r.id, 9);
	assert_int_equal(r.result, 0);
	assert_string_equal(r.role, "viewer");
	snprintf(agent, sizeof(agent), "leaf1 fabricctl %s", FCTL_VERSION);
	assert_string_equal(r.agent, agent);
	assert_int_equal(r.version_max, FCTL_PROTO_VERSION);
	assert_int_equal(counted(f, FCTL_ROLE_VIEWER, FCTL_MSG_HELLO, FCTL_REQ_OK), 1);
	assert_int_equal(fk.spawns + fk.sa, 0);
	assert_false(f->c->closing);
}

static void hello_no_common_version_closes(void **state)
{
	struct fx *f = *state;
	struct fctl_msg m = { .type = FCTL_MSG_HELLO, .id = 9,
			      .version_min = FCTL_PROTO_VERSION + 1,
			      .version_max = FCTL_PROTO_VERSION + 1,
			      .present = FCTL_HAS_VERSION_MIN | FCTL_HAS_VERSION_MAX };
	char err[512], want[128];

	as_local(f->c);
	fctl_agentd_handle_request(&f->a, f->c, &m);
	assert_int_equal(result_of(f, err, sizeof(err)), 2);
	snprintf(want, sizeof(want), "fabricctl agent: no common protocol version (agent speaks "
		 "1..%d)\n", FCTL_PROTO_VERSION);
	assert_string_equal(err, want);
	assert_true(f->c->closing); /* closed after the answer */
	assert_int_equal(fk.spawns, 0);
}

static void status_text(void **state)
{
	struct fx *f = *state;
	static uint8_t buf[1 << 16];
	struct fctl_msg r;
	char out[4096], want[256];

	as_tls(f->c, FCTL_ROLE_OPERATOR);
	f->a.st.applied = true;
	f->a.st.applied_version = 6;
	fk.pending = 1;
	request(f, FCTL_MSG_STATUS, 0);
	assert_int_equal(response(f, buf, sizeof(buf), &r), 1);
	assert_int_equal(r.result, 0);
	snprintf(out, sizeof(out), "%.*s", (int)r.output_len, (const char *)r.output);
	snprintf(want, sizeof(want), "agent on leaf1 (fabricctl %s, protocol %d), your role: "
		 "operator\n", FCTL_VERSION, FCTL_PROTO_VERSION);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "applied profile version: 6\n"));
	assert_non_null(strstr(out, "awaiting confirmation: version 7, deadline 1700000000 "
				    "(UNIX seconds)\n"));
	assert_int_equal(counted(f, FCTL_ROLE_OPERATOR, FCTL_MSG_STATUS, FCTL_REQ_OK), 1);
	assert_int_equal(fk.spawns, 0);
}

static void status_json(void **state)
{
	struct fx *f = *state;
	static uint8_t buf[1 << 16];
	struct fctl_msg r;
	char out[4096];

	as_local(f->c);
	f->a.writers = 1;
	request(f, FCTL_MSG_STATUS, FCTL_OPT_JSON);
	assert_int_equal(response(f, buf, sizeof(buf), &r), 1);
	snprintf(out, sizeof(out), "%.*s", (int)r.output_len, (const char *)r.output);
	assert_non_null(strstr(out, "{\"host\":\"leaf1\""));
	assert_non_null(strstr(out, "\"role\":\"local\""));
	assert_non_null(strstr(out, "\"applied_version\":null"));
	assert_non_null(strstr(out, "\"confirm\":null"));
	assert_non_null(strstr(out, "\"busy\":true"));
	assert_int_equal(fk.spawns, 0);
}

/* --- roles --- */

static void viewer_may_not_apply(void **state)
{
	struct fx *f = *state;
	char err[512];

	as_tls(f->c, FCTL_ROLE_VIEWER);
	request(f, FCTL_MSG_APPLY, 0);
	assert_int_equal(result_of(f, err, sizeof(err)), EXIT_REFUSED);
	assert_string_equal(err, "fabricctl agent: permission denied: role viewer may not "
				 "apply\n");
	assert_int_equal(f->a.st.refused[FCTL_REFUSED_ROLE], 1);
	assert_int_equal(counted(f, FCTL_ROLE_VIEWER, FCTL_MSG_APPLY, FCTL_REQ_REFUSED), 1);
	/* audited: action, result, the certificate subject, why */
	assert_non_null(strstr(logbuf, "apply refused by CN=alice,OU=viewer: role viewer may "
				       "not apply\n"));
	assert_int_equal(fk.spawns, 0);
	assert_false(f->c->closing); /* the connection stays for the next request */
}

static void viewer_rollback_and_confirm_refused(void **state)
{
	struct fx *f = *state;
	char err[512];

	as_tls(f->c, FCTL_ROLE_VIEWER);
	request(f, FCTL_MSG_ROLLBACK, 0);
	assert_int_equal(result_of(f, err, sizeof(err)), EXIT_REFUSED);
	request(f, FCTL_MSG_CONFIRM, 0);
	assert_int_equal(result_of(f, err, sizeof(err)), EXIT_REFUSED);
	assert_int_equal(f->a.st.refused[FCTL_REFUSED_ROLE], 2);
	assert_int_equal(fk.spawns, 0);
}

static void viewer_dry_run_goes_to_a_reader(void **state)
{
	struct fx *f = *state;

	as_tls(f->c, FCTL_ROLE_VIEWER);
	request(f, FCTL_MSG_APPLY, FCTL_OPT_DRY_RUN);
	assert_int_equal(fk.spawns, 1);
	assert_int_equal(fk.spawn_type, FCTL_MSG_APPLY);
	assert_false(fk.spawn_writes);
	assert_int_equal(f->a.workers, 1);
	assert_int_equal(f->a.writers, 0);
	no_response(f); /* the worker answers */
	assert_int_equal(fctl_agentd_ac(f->c)->req_id, 41);
}

static void operator_apply_is_a_writer(void **state)
{
	struct fx *f = *state;

	as_tls(f->c, FCTL_ROLE_OPERATOR);
	request(f, FCTL_MSG_APPLY, 0);
	assert_int_equal(fk.spawns, 1);
	assert_true(fk.spawn_writes);
	assert_int_equal(f->a.writers, 1);
	no_response(f);
}

static void read_requests_go_to_workers(void **state)
{
	struct fx *f = *state;
	const uint8_t types[] = { FCTL_MSG_PLAN, FCTL_MSG_SHOW, FCTL_MSG_DIFF, FCTL_MSG_HISTORY };

	as_tls(f->c, FCTL_ROLE_VIEWER);
	f->a.cfg.max_workers = 8;
	for (size_t i = 0; i < sizeof(types); i++) {
		request(f, types[i], 0);
		assert_int_equal(fk.spawns, i + 1);
		assert_int_equal(fk.spawn_type, types[i]);
		assert_false(fk.spawn_writes);
	}
	no_response(f);
}

/* --- SA requests: the SA code's, whatever the role (it checks its own) --- */

static void sa_requests_go_to_the_sa_code(void **state)
{
	struct fx *f = *state;

	as_tls(f->c, FCTL_ROLE_VIEWER);
	request(f, FCTL_MSG_SA_DUMP, 0);
	request(f, FCTL_MSG_TXSA_STAGE, 0);
	request(f, FCTL_MSG_SA_BATCH, 0);
	assert_int_equal(fk.sa, 3);
	assert_int_equal(fk.spawns, 0);
	assert_int_equal(f->a.st.refused[FCTL_REFUSED_ROLE], 0);
	no_response(f);
}

/* --- refusals of the agent's own --- */

static void max_workers_refused(void **state)
{
	struct fx *f = *state;
	char err[512];

	as_local(f->c);
	f->a.workers = 2;
	request(f, FCTL_MSG_PLAN, 0);
	assert_int_equal(result_of(f, err, sizeof(err)), 2);
	assert_string_equal(err, "fabricctl agent: busy: 2 requests are running (max_workers 2): "
				 "try again\n");
	assert_int_equal(f->a.st.refused[FCTL_REFUSED_WORKERS], 1);
	assert_int_equal(counted(f, FCTL_ROLE_LOCAL, FCTL_MSG_PLAN, FCTL_REQ_FAILED), 1);
	assert_int_equal(fk.spawns, 0);
}

static void writer_during_rotation_refused(void **state)
{
	struct fx *f = *state;
	char err[512];

	as_tls(f->c, FCTL_ROLE_OPERATOR);
	fk.busy_ifn = "eth1";
	request(f, FCTL_MSG_ROLLBACK, 0);
	assert_int_equal(result_of(f, err, sizeof(err)), 2);
	assert_string_equal(err, "fabricctl agent: a key rotation is in progress on 'eth1': try "
				 "again\n");
	assert_int_equal(counted(f, FCTL_ROLE_OPERATOR, FCTL_MSG_ROLLBACK, FCTL_REQ_FAILED), 1);
	assert_int_equal(fk.spawns, 0);
	/* a read-only request is not held up by the rotation */
	request(f, FCTL_MSG_PLAN, 0);
	assert_int_equal(fk.spawns, 1);
}

static void spawn_failure_answered(void **state)
{
	struct fx *f = *state;
	char err[512], want[128];

	as_local(f->c);
	fk.spawn_ret = -EMFILE;
	request(f, FCTL_MSG_RECOVER, 0);
	assert_int_equal(result_of(f, err, sizeof(err)), 2);
	snprintf(want, sizeof(want), "fabricctl agent: cannot start the recover: %s\n",
		 strerror(EMFILE));
	assert_string_equal(err, want);
	assert_int_equal(counted(f, FCTL_ROLE_LOCAL, FCTL_MSG_RECOVER, FCTL_REQ_FAILED), 1);
	assert_int_equal(f->a.workers, 0);
}

/* --- through the connection code: frames in, the agent's hooks --- */

static void frame_in_answered(void **state)
{
	struct fx *f = *state;
	struct fctl_msg m = { .type = FCTL_MSG_HELLO, .id = 5, .version_min = 1,
			      .version_max = FCTL_PROTO_VERSION,
			      .present = FCTL_HAS_VERSION_MIN | FCTL_HAS_VERSION_MAX };
	struct fctl_buf b = { 0 };
	static uint8_t buf[4096];
	struct fctl_msg r;

	as_local(f->c);
	assert_int_equal(fctl_proto_encode(&m, &b), 0);
	assert_int_equal(send(f->peer, b.data, b.len, 0), (ssize_t)b.len);
	fctl_buf_release(&b);
	fctl_agentd_conn_readable(&f->a.ct, f->c);
	assert_int_equal(response(f, buf, sizeof(buf), &r), 1);
	assert_int_equal(r.id, 5);
	assert_string_equal(r.role, "local");
	assert_int_equal(f->a.ct.buffered, 0); /* the frame released after its answer */
}

static void oversized_frame_refused_and_audited(void **state)
{
	struct fx *f = *state;
	struct fctl_msg m = { .type = FCTL_MSG_STATUS, .id = 5 };
	struct fctl_buf b = { 0 };
	char err[512], want[160];

	as_local(f->c);
	f->a.ct.lim.max_frame = 64;
	assert_int_equal(fctl_proto_encode(&m, &b), 0);
	/* the header claims 1000 bytes of payload */
	b.data[12] = 0, b.data[13] = 0, b.data[14] = 0x03, b.data[15] = (char)0xe8;
	assert_int_equal(send(f->peer, b.data, FCTL_PROTO_HDR_LEN, 0), FCTL_PROTO_HDR_LEN);
	fctl_buf_release(&b);
	fctl_agentd_conn_readable(&f->a.ct, f->c);
	assert_int_equal(result_of(f, err, sizeof(err)), 2);
	snprintf(want, sizeof(want), "fabricctl agent: frame of 1000 bytes exceeds the limit of "
		 "%u\n", 64 - FCTL_PROTO_HDR_LEN);
	assert_string_equal(err, want);
	assert_int_equal(f->a.st.refused[FCTL_REFUSED_OVERSIZED], 1);
	assert_non_null(strstr(logbuf, "request refused by uid 0 (pid 1): frame of 1000 bytes"));
	assert_true(f->c->closing);
	assert_int_equal(f->a.ct.buffered, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(hello_answered, setup, teardown),
		cmocka_unit_test_setup_teardown(hello_no_common_version_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(status_text, setup, teardown),
		cmocka_unit_test_setup_teardown(status_json, setup, teardown),
		cmocka_unit_test_setup_teardown(viewer_may_not_apply, setup, teardown),
		cmocka_unit_test_setup_teardown(viewer_rollback_and_confirm_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(viewer_dry_run_goes_to_a_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(operator_apply_is_a_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(read_requests_go_to_workers, setup, teardown),
		cmocka_unit_test_setup_teardown(sa_requests_go_to_the_sa_code, setup, teardown),
		cmocka_unit_test_setup_teardown(max_workers_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(writer_during_rotation_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(spawn_failure_answered, setup, teardown),
		cmocka_unit_test_setup_teardown(frame_in_answered, setup, teardown),
		cmocka_unit_test_setup_teardown(oversized_frame_refused_and_audited, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
