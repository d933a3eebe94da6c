// SPDX-License-Identifier: MIT
/*
 * The agent's entry points that replaced the program's callbacks (issue 27): the
 * configuration built from the start parameters (file, then the options over it, in
 * order; a refused value named as the option), and the worker's request read back
 * from its memfd as the agent encodes it (fctl_agent_worker_open; a request that
 * changes something, so no sandbox is entered here), and a garbled one refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentd_int.h"

static char *conf_file(const char *text)
{
	static char path[] = "/tmp/fctl-test-agentd-start.XXXXXX";
	int fd;

	strcpy(path, "/tmp/fctl-test-agentd-start.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void build_file_then_options(void **state)
{
	const char *keys[] = { "max_frame", "host", "max_frame" };
	const char *vals[] = { "8192", "h9", "65536" };
	struct fctl_agent_start s = { .keys = keys, .vals = vals, .n = 3 };
	struct fctl_agent_config c;
	char err[256] = "";
	char *f = conf_file("host: h1\nmax_workers: 7\nmax_frame: 4096\n");

	(void)state;
	s.config = f;
	fctl_agent_config_init(&c);
	assert_int_equal(fctl_agent_config_build(&s, &c, err, sizeof(err)), 0);
	assert_string_equal(c.host, "h9");         /* the option over the file */
	assert_int_equal(c.max_workers, 7);        /* the file's, no option */
	assert_int_equal(c.max_frame, 65536);      /* the last option given */
	fctl_agent_config_release(&c);
	unlink(f);
}

static void build_bad_value_named(void **state)
{
	const char *keys[] = { "max_frame" };
	const char *vals[] = { "bogus" };
	struct fctl_agent_start s = { .keys = keys, .vals = vals, .n = 1 };
	struct fctl_agent_config c;
	char err[256] = "";

	(void)state;
	fctl_agent_config_init(&c);
	assert_true(fctl_agent_config_build(&s, &c, err, sizeof(err)) < 0);
	assert_string_equal(err, "bad value 'bogus' for --max_frame");
	fctl_agent_config_release(&c);
}

static void build_missing_file(void **state)
{
	struct fctl_agent_start s = { .config = "/proc/fctl-no-such/agent.conf" };
	struct fctl_agent_config c;
	char err[256] = "";

	(void)state;
	fctl_agent_config_init(&c);
	assert_int_equal(fctl_agent_config_build(&s, &c, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "'/proc/fctl-no-such/agent.conf': No such file or directory");
	fctl_agent_config_release(&c);
}

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("wreq", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	return fd;
}

static void worker_reads_its_request(void **state)
{
	struct fctl_agent_request rq = {
		.type = FCTL_MSG_APPLY, .options = FCTL_OPT_JSON, .host = "h2",
		.profile_path = "/var/lib/p.yaml", .confirm_seconds = 30, .state_dir = "/sd",
		.audit_log = "/a.log", .actor_cert = "CN=op", .has_actor_uid = true,
		.actor_uid = 1000, .to_version = 12,
	};
	struct fctl_wreq w = { .parent = getpid() }; /* no drop: a writing worker */
	struct fctl_agent_worker wk;
	struct fctl_buf b = { 0 };
	char err[256] = "";

	(void)state;
	assert_int_equal(fctl_agentd_wreq_encode(&rq, &w, &b), 0);
	assert_int_equal(fctl_agent_worker_open(&wk, memfd_with(b.data, b.len), err,
						sizeof(err)), 0);
	assert_int_equal(wk.rq.type, FCTL_MSG_APPLY);
	assert_int_equal(wk.rq.options, FCTL_OPT_JSON);
	assert_string_equal(wk.rq.host, "h2");
	assert_string_equal(wk.rq.profile_path, "/var/lib/p.yaml");
	assert_int_equal(wk.rq.confirm_seconds, 30);
	assert_string_equal(wk.rq.state_dir, "/sd");
	assert_string_equal(wk.rq.audit_log, "/a.log");
	assert_string_equal(wk.rq.actor_cert, "CN=op");
	assert_true(wk.rq.has_actor_uid);
	assert_int_equal(wk.rq.actor_uid, 1000);
	assert_int_equal(wk.rq.to_version, 12);
	assert_null(wk.rq.netns);
	fctl_agent_worker_release(&wk);
	fctl_buf_release(&b);
}

static void worker_refuses_garbage(void **state)
{
	static const char junk[] = "type=1\0options"; /* a string without '=' */
	struct fctl_agent_worker wk;
	char err[256] = "";

	(void)state;
	assert_true(fctl_agent_worker_open(&wk, memfd_with(junk, sizeof(junk)), err,
					   sizeof(err)) < 0);
	assert_string_equal(err, "the worker cannot read the request: Invalid argument");
	fctl_agent_worker_release(&wk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(build_file_then_options),
		cmocka_unit_test(build_bad_value_named),
		cmocka_unit_test(build_missing_file),
		cmocka_unit_test(worker_reads_its_request),
		cmocka_unit_test(worker_refuses_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
