// SPDX-License-Identifier: MIT
/* The host transaction (fctl/host_apply.h): its refusals before the engine (the audit log
 * that cannot be written, the approvals gate and its audited refusal, a policy that cannot
 * be read), a dry run's note, its records and the withheld SAs' exit. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "fctl/host_apply.h"
#include "fctl/profile.h"
#include "fctl/util.h"

static char dir[] = "/tmp/fctl-test-host.XXXXXX";
static char buf[4096];

static const char *path(const char *name)
{
	static char p[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static void put(const char *name, const char *text)
{
	FILE *f = fopen(path(name), "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* p: the profile file's name, version and SHA-256 as a parse would give them */
static void profile_of(struct fctl_profile *p, const char *file)
{
	static char files[4][512], name[] = "pod";
	static int k;
	struct fctl_buf b = { 0 };

	memset(p, 0, sizeof(*p));
	assert_int_equal(fctl_file_read(file, &b), 0);
	assert_int_equal(EVP_Digest(b.data, b.len, p->sha256, NULL, EVP_sha256(), NULL), 1);
	fctl_buf_release(&b);
	k = (k + 1) % 4;
	snprintf(files[k], sizeof(files[k]), "%s", file);
	p->file = files[k];
	p->name = name;
	p->version = 7;
}

static const char *read_log(const char *name)
{
	FILE *f = fopen(path(name), "r");
	size_t n;

	buf[0] = 0;
	if (!f)
		return buf;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	sh("command -v ssh-keygen >/dev/null || { echo 'test_host: ssh-keygen (openssh-client) "
	   "is needed' >&2; exit 1; }");
	sh("ssh-keygen -q -t ed25519 -N '' -C alice -f %s/alice", dir);
	sh("printf 'alice@example.org %%s\\n' \"$(cut -d' ' -f1,2 %s/alice.pub)\" > %s/allowed_signers",
	   dir, dir);
	put("approvals.conf", "require: 1 of allowed_signers\n");
	put("p.yaml", "name: pod\nversion: 7\n");
	put("not-a-dir", "");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sh("rm -rf %s", dir);
	return 0;
}

static bool has_msg(const struct fctl_host_msgs *m, const char *prefix, const char *suffix)
{
	for (size_t i = 0; i < m->n; i++) {
		size_t l = strlen(m->v[i].text), s = suffix ? strlen(suffix) : 0;

		if (strncmp(m->v[i].text, prefix, strlen(prefix)) == 0 &&
		    (!suffix || (l >= s && strcmp(m->v[i].text + l - s, suffix) == 0)))
			return true;
	}
	return false;
}

/* the audit log cannot be written: refused, said in order, nothing else done */
static void audit_unwritable(void **state)
{
	struct fctl_engine_opts eo = { .host = "h1", .state_dir = path("state") };
	struct fctl_host_apply_opts o = { .cmd = "apply", .audit_log = path("not-a-dir/audit.log"),
					  .approvals_conf = path("none.conf") };
	struct fctl_profile p;
	struct fctl_host_apply h;

	(void)state;
	profile_of(&p, path("p.yaml"));
	assert_int_equal(fctl_host_apply_open(&h, &o, &eo, &p), FCTL_HOST_USAGE);
	assert_int_equal(h.msgs.n, 2);
	assert_false(h.msgs.v[0].plain);
	assert_true(has_msg(&h.msgs, "AUDIT LOG UNAVAILABLE: ", NULL));
	assert_string_equal(h.msgs.v[1].text,
			    "apply: refused: the audit log cannot be written, nothing was changed "
			    "(--audit-log PATH or FCTL_AUDIT_LOG to use another)");
	assert_null(h.audit);
	assert_false(h.ran);
	fctl_host_apply_release(&h);
}

/* a version without the approvals the host's policy requires: refused before the engine,
 * the refusal audited (action, result, the reason) and the log closed */
static void approvals_refused(void **state)
{
	struct fctl_engine_opts eo = { .host = "h1", .state_dir = path("state") };
	struct fctl_host_apply_opts o = { .cmd = "rollback", .audit_log = path("a1/audit.log"),
					  .approvals_conf = path("approvals.conf"),
					  .change_id = "CHG-1" };
	struct fctl_profile p;
	struct fctl_host_apply h;
	const char *log;

	(void)state;
	sh("mkdir -p %s/a1", dir);
	profile_of(&p, path("p.yaml"));
	assert_int_equal(fctl_host_apply_open(&h, &o, &eo, &p), FCTL_HOST_INVALID);
	assert_true(has_msg(&h.msgs, "rollback: refused: pod version 7 (", "; nothing was changed"));
	assert_null(h.audit); /* closed */
	assert_false(h.ran);
	log = read_log("a1/audit.log");
	assert_non_null(strstr(log, "\"rollback\""));
	assert_non_null(strstr(log, "\"refused\""));
	assert_non_null(strstr(log, "CHG-1"));
	assert_non_null(strstr(log, "NOT approved"));
	fctl_host_apply_release(&h);
}

/* the policy file cannot be read: refused (exit 2), audited */
static void approvals_policy_unreadable(void **state)
{
	struct fctl_engine_opts eo = { .host = "h1", .state_dir = path("state") };
	struct fctl_host_apply_opts o = { .cmd = "apply", .audit_log = path("a2/audit.log"),
					  .approvals_conf = dir /* a directory */ };
	struct fctl_profile p;
	struct fctl_host_apply h;

	(void)state;
	sh("mkdir -p %s/a2", dir);
	profile_of(&p, path("p.yaml"));
	assert_int_equal(fctl_host_apply_open(&h, &o, &eo, &p), FCTL_HOST_USAGE);
	assert_true(has_msg(&h.msgs, "apply: refused: the approval policy cannot be read: ",
			    "; nothing was changed"));
	assert_non_null(strstr(read_log("a2/audit.log"), "\"refused\""));
	fctl_host_apply_release(&h);
}

/* a dry run opens no log and is not refused: it only says what an apply would meet */
static void dry_run_notes(void **state)
{
	struct fctl_engine_opts eo = { .host = "h1", .state_dir = path("state"), .dry_run = true };
	struct fctl_host_apply_opts o = { .cmd = "apply", .audit_log = path("a3/audit.log"),
					  .approvals_conf = path("approvals.conf") };
	struct fctl_profile p;
	struct fctl_host_apply h;
	struct stat st;

	(void)state;
	profile_of(&p, path("p.yaml"));
	assert_int_equal(fctl_host_apply_open(&h, &o, &eo, &p), -1);
	assert_int_equal(h.msgs.n, 1);
	assert_true(has_msg(&h.msgs, "apply: pod version 7 (", ": an apply of it would be refused"));
	assert_null(h.audit);
	assert_int_not_equal(stat(path("a3"), &st), 0);
	fctl_host_apply_release(&h);
}

/* a record without a log fails without a word; the withheld SAs' exit and sentence */
static void record_and_withheld(void **state)
{
	struct fctl_host_event ev = { .action = "apply", .result = "applied" };
	struct fctl_host_msgs m = { 0 };
	struct fctl_apply_result res;

	(void)state;
	assert_int_equal(fctl_host_audit_record(NULL, &ev, &m), -EBADF);
	assert_int_equal(m.n, 0);
	memset(&res, 0, sizeof(res));
	snprintf(res.host, sizeof(res.host), "h1");
	assert_int_equal(fctl_host_withheld(&res, FCTL_HOST_OK, &m), FCTL_HOST_OK);
	res.withheld = 2;
	snprintf(res.withheld_why, sizeof(res.withheld_why), "packet numbers unknown");
	assert_int_equal(fctl_host_withheld(&res, FCTL_HOST_OK, &m), FCTL_HOST_WITHHELD);
	assert_int_equal(fctl_host_withheld(&res, FCTL_HOST_FAILED, &m), FCTL_HOST_FAILED);
	assert_int_equal(m.n, 2);
	assert_true(has_msg(&m, "2 SAs WITHHELD on h1, fail-secure", ": packet numbers unknown"));
	assert_string_equal(res.error, "2 SAs withheld: packet numbers unknown");
	fctl_host_msgs_release(&m);
	assert_int_equal(m.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(audit_unwritable),
		cmocka_unit_test(approvals_refused),
		cmocka_unit_test(approvals_policy_unreadable),
		cmocka_unit_test(dry_run_notes),
		cmocka_unit_test(record_and_withheld),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
