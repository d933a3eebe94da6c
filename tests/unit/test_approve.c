// SPDX-License-Identifier: MIT
/* Unit tests of approvals (fctl_approve): SSHSIG interop with Debian's OpenSSH both
 * ways, allowed_signers, the policy file, and every bad input of issue 30, each with
 * its own error. Fresh keys are made by ssh-keygen in a temporary folder; a machine
 * without ssh-keygen fails these tests (it does not skip them). */
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

#include "fctl/approvals.h"
#include "fctl/sshsig.h"

static char dir[64];
static char err[512];

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static void put(const char *name, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *path(const char *name)
{
	static char p[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static const char *pubkey(const char *who)
{
	static char line[4][512];
	static int i;
	char tmp[256];
	FILE *f;

	i = (i + 1) % 4;
	snprintf(tmp, sizeof(tmp), "%s/%s.pub", dir, who);
	f = fopen(tmp, "r");
	assert_non_null(f);
	assert_non_null(fgets(line[i], sizeof(line[i]), f));
	fclose(f);
	line[i][strcspn(line[i], "\n")] = '\0';
	/* keep "TYPE BASE64", drop the comment */
	{
		char *sp = strchr(line[i], ' ');

		if (sp && (sp = strchr(sp + 1, ' ')))
			*sp = '\0';
	}
	return line[i];
}

#define V7 "schema: 1\nprofile:\n  name: pod\n  version: 7\n"
#define V8 "schema: 1\nprofile:\n  name: pod\n  version: 8\n"

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/fctl-approve-XXXXXX");
	assert_non_null(mkdtemp(dir));
	sh("command -v ssh-keygen >/dev/null || { echo 'test_approve: ssh-keygen (openssh-client) "
	   "is required' >&2; exit 1; }");
	for (const char *const *w = (const char *const[]){ "alice", "bob", "carol", "eve", NULL };
	     *w; w++)
		sh("ssh-keygen -q -t ed25519 -N '' -C %s -f %s/%s", *w, dir, *w);
	sh("ssh-keygen -q -t ecdsa -b 256 -N '' -C dave -f %s/dave", dir);
	put("v7.yaml", V7);
	put("v8.yaml", V8);
	return 0;
}

static int teardown(void **state)
{
	sh("rm -rf %s", dir);
	return 0;
}

/* a fresh profile folder: p.yaml with text, no signatures */
static void fresh(const char *text)
{
	sh("rm -rf %s/p.yaml %s/p.yaml.sig %s/p.yaml.sig.d && mkdir %s/p.yaml.sig.d", dir, dir, dir,
	   dir);
	put("p.yaml", text);
}

static void ssh_sign(const char *who, const char *ns, const char *file, const char *as)
{
	sh("ssh-keygen -q -Y sign -f %s/%s -n %s %s 2>/dev/null && mv %s.sig %s/p.yaml.sig.d/%s.sig",
	   dir, who, ns, file, file, dir, as);
}

static void signers(const char *text)
{
	put("allowed_signers", text);
}

static struct fctl_approvals check(unsigned int n)
{
	struct fctl_approval_policy pol = { .required = n };
	struct fctl_approvals a = { 0 };
	struct fctl_buf b = { 0 };

	snprintf(pol.signers, sizeof(pol.signers), "%s", path("allowed_signers"));
	assert_int_equal(fctl_file_read(path("p.yaml"), &b), 0);
	assert_int_equal(fctl_approvals_check(path("p.yaml"), b.data, b.len, &pol, time(NULL), &a,
					      err, sizeof(err)),
			 0);
	fctl_buf_release(&b);
	return a;
}

static char *line(const char *principal, const char *opts, const char *who)
{
	static char l[8][700];
	static int i;

	i = (i + 1) % 8;
	snprintf(l[i], sizeof(l[i]), "%s %s%s%s\n", principal, opts, *opts ? " " : "", pubkey(who));
	return l[i];
}

static void three(void)
{
	char t[4096];

	snprintf(t, sizeof(t), "# the approvers\n%s%s%s%s", line("alice@example.org", "", "alice"),
		 line("bob@example.org", "", "bob"), line("carol@example.org", "", "carol"),
		 line("dave@example.org", "namespaces=\"fabricctl-*\"", "dave"));
	signers(t);
}

/* ssh-keygen signs (Ed25519, ECDSA P-256) → we verify; we sign → ssh-keygen verifies */
static void test_interop(void **state)
{
	struct fctl_buf key = { 0 }, sig = { 0 }, msg = { 0 };
	struct fctl_approvals a;
	FILE *f;

	fresh(V7);
	three();
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "alice");
	ssh_sign("dave", "fabricctl-profile", path("p.yaml"), "dave");
	assert_int_equal(fctl_file_read(path("bob"), &key), 0);
	assert_int_equal(fctl_file_read(path("p.yaml"), &msg), 0);
	assert_int_equal(fctl_sshsig_sign_ed25519(key.data, key.len, FCTL_APPROVALS_NAMESPACE,
						  msg.data, msg.len, &sig, err, sizeof(err)),
			 0);
	f = fopen(path("p.yaml.sig.d/bob.sig"), "w");
	fwrite(sig.data, 1, sig.len, f);
	fclose(f);
	sh("ssh-keygen -Y verify -f %s/allowed_signers -I bob@example.org -n fabricctl-profile "
	   "-s %s/p.yaml.sig.d/bob.sig < %s/p.yaml >/dev/null",
	   dir, dir, dir);
	a = check(3);
	assert_true(a.met);
	assert_int_equal(a.counted, 3);
	assert_int_equal(a.n, 3);
	for (size_t i = 0; i < a.n; i++) {
		assert_int_equal(a.v[i].state, FCTL_APPROVAL_COUNTED);
		assert_memory_equal(a.v[i].fp, "SHA256:", 7);
		assert_memory_equal(a.v[i].digest, "sha256:", 7);
	}
	assert_string_equal(a.v[0].principal, "alice@example.org");
	assert_string_equal(a.v[2].principal, "dave@example.org");
	assert_string_equal(a.missing, "carol@example.org");
	fctl_approvals_release(&a);
	fctl_buf_release(&key);
	fctl_buf_release(&sig);
	fctl_buf_release(&msg);
}

/* our fingerprint is ssh-keygen -l's */
static void test_fingerprint(void **state)
{
	struct fctl_sshkey k;
	char want[128], t[512];
	FILE *p;

	snprintf(t, sizeof(t), "ssh-keygen -l -E sha256 -f %s/dave.pub | cut -d' ' -f2", dir);
	p = popen(t, "r");
	assert_non_null(fgets(want, sizeof(want), p));
	pclose(p);
	want[strcspn(want, "\n")] = '\0';
	snprintf(t, sizeof(t), "%s", pubkey("dave"));
	*strchr(t, ' ') = '\0';
	assert_int_equal(fctl_sshkey_from_text(t, t + strlen(t) + 1, &k, err, sizeof(err)), 0);
	assert_string_equal(k.fp, want);
}

static void refused_one(const char *why)
{
	struct fctl_approvals a = check(1);

	assert_false(a.met);
	assert_int_equal(a.counted, 0);
	assert_int_equal(a.n, 1);
	assert_int_equal(a.v[0].state, FCTL_APPROVAL_REFUSED);
	if (!strstr(a.v[0].reason, why))
		fail_msg("reason '%s' does not say '%s'", a.v[0].reason, why);
	fctl_approvals_release(&a);
}

static void test_unsigned(void **state)
{
	struct fctl_approvals a;
	struct fctl_buf t = { 0 };

	fresh(V7);
	three();
	a = check(1);
	assert_false(a.met);
	assert_int_equal(a.n, 0);
	fctl_approvals_text(&a, &t);
	assert_non_null(strstr(t.data, "NOT approved: 0 of 1 required signed (signed by nobody)"));
	assert_non_null(strstr(t.data, "missing: alice@example.org, bob@example.org"));
	assert_non_null(strstr(t.data, path("allowed_signers")));
	assert_non_null(strstr(t.data, "no signature file"));
	fctl_buf_release(&t);
	fctl_approvals_release(&a);
}

static void test_unknown_key(void **state)
{
	fresh(V7);
	three();
	ssh_sign("eve", "fabricctl-profile", path("p.yaml"), "eve");
	refused_one("is not in");
}

static void test_expired(void **state)
{
	char t[2048];

	fresh(V7);
	snprintf(t, sizeof(t), "%s%s", line("alice@example.org", "valid-before=20200101Z", "alice"),
		 line("bob@example.org", "valid-after=\"20200101\",valid-before=\"20990101\"", "bob"));
	signers(t);
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "alice");
	refused_one("principal alice@example.org: its key expired (valid-before 2020-01-01T00:00:00Z)");
	ssh_sign("bob", "fabricctl-profile", path("p.yaml"), "bob");
	{
		struct fctl_approvals a = check(1);

		assert_true(a.met);
		assert_string_equal(a.v[1].principal, "bob@example.org");
		fctl_approvals_release(&a);
	}
	snprintf(t, sizeof(t), "%s", line("alice@example.org", "valid-after=20990101Z", "alice"));
	signers(t);
	sh("rm %s/p.yaml.sig.d/bob.sig", dir);
	refused_one("not valid yet");
}

static void test_namespace(void **state)
{
	char t[2048];

	fresh(V7);
	three();
	ssh_sign("alice", "git", path("p.yaml"), "alice");
	refused_one("signed in namespace 'git', not 'fabricctl-profile'");
	/* the key's own namespaces= leaves fabricctl-profile out */
	fresh(V7);
	snprintf(t, sizeof(t), "%s", line("alice@example.org", "namespaces=\"git,file\"", "alice"));
	signers(t);
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "alice");
	refused_one("does not include fabricctl-profile");
}

static void test_byte_changed(void **state)
{
	fresh(V7);
	three();
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "alice");
	put("p.yaml", "schema: 1\nprofile:\n  name: pod\n  version: 7\n#"); /* one byte more */
	refused_one("does not match these bytes");
	put("p.yaml", "schema: 1\nprofile:\n  name: pod\n  versioN: 7\n"); /* one byte changed */
	refused_one("does not match these bytes");
}

/* a signature of version 7 does not approve version 8 */
static void test_other_version(void **state)
{
	fresh(V8);
	three();
	ssh_sign("alice", "fabricctl-profile", path("v7.yaml"), "alice");
	refused_one("does not match these bytes");
}

static void test_malformed(void **state)
{
	struct fctl_buf b = { 0 };
	char t[8192];

	fresh(V7);
	three();
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "alice");
	assert_int_equal(fctl_file_read(path("p.yaml.sig.d/alice.sig"), &b), 0);
	/* truncated: the END line gone */
	snprintf(t, sizeof(t), "%.*s", (int)(b.len / 2), b.data);
	put("p.yaml.sig.d/alice.sig", t);
	refused_one("malformed signature: no complete");
	/* truncated inside the base64, the armor kept: fields cut short */
	{
		const char *end = strstr(b.data, "-----END");
		const char *nl = strchr(b.data, '\n');

		snprintf(t, sizeof(t), "%.*s\n%s", (int)(nl - b.data + 1 + 40), b.data, end);
		put("p.yaml.sig.d/alice.sig", t);
		refused_one("malformed signature");
	}
	put("p.yaml.sig.d/alice.sig", "-----BEGIN SSH SIGNATURE-----\n!!!!\n-----END SSH SIGNATURE-----\n");
	refused_one("malformed signature");
	put("p.yaml.sig.d/alice.sig", "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQ==\n"
				      "-----END SSH SIGNATURE-----\n");
	refused_one("truncated");
	put("p.yaml.sig.d/alice.sig", "");
	refused_one("malformed");
	/* a symlinked signature file is refused, not followed */
	sh("rm %s/p.yaml.sig.d/alice.sig && ln -s /etc/passwd %s/p.yaml.sig.d/alice.sig", dir, dir);
	refused_one("not a regular file");
	fctl_buf_release(&b);
}

/* one signer counted once: the same key twice, one key under two principals, one
 * principal with two keys */
static void test_one_signer_once(void **state)
{
	struct fctl_approvals a;
	char t[4096];

	fresh(V7);
	three();
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "a1");
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "a2");
	a = check(2);
	assert_false(a.met);
	assert_int_equal(a.counted, 1);
	assert_int_equal(a.v[1].state, FCTL_APPROVAL_REPEAT);
	assert_non_null(strstr(a.v[1].reason, "same key as"));
	fctl_approvals_release(&a);

	/* alice's key listed for two principals: one signer */
	fresh(V7);
	snprintf(t, sizeof(t), "%s%s", line("alice@example.org,ops@example.org", "", "alice"),
		 line("bob@example.org", "", "bob"));
	signers(t);
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "alice");
	a = check(2);
	assert_false(a.met);
	assert_int_equal(a.counted, 1);
	fctl_approvals_release(&a);

	/* two lines for one principal (two keys): both sign, one counted */
	fresh(V7);
	snprintf(t, sizeof(t), "%s%s%s", line("alice@example.org", "", "alice"),
		 line("alice@example.org", "", "carol"), line("bob@example.org", "", "bob"));
	signers(t);
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "k1");
	ssh_sign("carol", "fabricctl-profile", path("p.yaml"), "k2");
	a = check(2);
	assert_false(a.met);
	assert_int_equal(a.counted, 1);
	assert_int_equal(a.v[1].state, FCTL_APPROVAL_REPEAT);
	assert_non_null(strstr(a.v[1].reason, "counted already"));
	fctl_approvals_release(&a);

	/* the matching: carol's key may stand for ops or carol, alice's only for ops */
	fresh(V7);
	snprintf(t, sizeof(t), "%s%s", line("ops", "", "alice"), line("ops,carol", "", "carol"));
	signers(t);
	ssh_sign("carol", "fabricctl-profile", path("p.yaml"), "1-carol");
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "2-alice");
	a = check(2);
	assert_true(a.met);
	assert_int_equal(a.counted, 2);
	fctl_approvals_release(&a);
}

static void test_signers_file(void **state)
{
	struct fctl_signers s;
	char t[2048];
	static const char sk[] = "alice sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9w"
				 "ZW5zc2guY29tAAAAIBERERERERERERERERERERERERERERERERERERERERERAAAA"
				 "BHNzaDo=\n";

	snprintf(t, sizeof(t), "%s", line("ca@example.org", "cert-authority", "alice"));
	assert_int_equal(fctl_signers_parse("as", t, strlen(t), &s, err, sizeof(err)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "as:1: cert-authority is not supported"));
	assert_int_equal(fctl_signers_parse("as", sk, strlen(sk), &s, err, sizeof(err)),
			 -EOPNOTSUPP);
	assert_non_null(strstr(err, "as:1: FIDO (sk-) keys are not supported"));
	snprintf(t, sizeof(t), "\n\n%s", line("x", "valid-before=2020", "alice"));
	assert_int_equal(fctl_signers_parse("as", t, strlen(t), &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "as:3: valid-before='2020' is not YYYYMMDD"));
	snprintf(t, sizeof(t), "%s", line("x", "no-such-option", "alice"));
	assert_int_equal(fctl_signers_parse("as", t, strlen(t), &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown option 'no-such-option'"));
	snprintf(t, sizeof(t), "# c\n%s", line("\"a,b\"", "namespaces=\"x,fabricctl-profile\"", "dave"));
	assert_int_equal(fctl_signers_parse("as", t, strlen(t), &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.v[1].principal, "b");
	assert_string_equal(s.v[0].namespaces, "x,fabricctl-profile");
	assert_int_equal(s.v[0].key.type, FCTL_SSHKEY_ECDSA_P256);
	assert_int_equal(s.v[0].line, 2);
	fctl_signers_release(&s);
}

static void test_policy_file(void **state)
{
	struct fctl_approval_policy p;

	assert_int_equal(fctl_approval_policy_load(path("none.conf"), &p, err, sizeof(err)), 0);
	put("a.conf", "# two of three\nrequire: 2 of allowed_signers\n");
	assert_int_equal(fctl_approval_policy_load(path("a.conf"), &p, err, sizeof(err)), 1);
	assert_int_equal(p.required, 2);
	assert_string_equal(p.signers, path("allowed_signers"));
	put("a.conf", "require: 0 of /x\n");
	assert_int_equal(fctl_approval_policy_load(path("a.conf"), &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "a.conf:1: expected 'require: N of ALLOWED_SIGNERS'"));
	put("a.conf", "\nrequires: 2 of /x\n");
	assert_int_equal(fctl_approval_policy_load(path("a.conf"), &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "a.conf:2:"));
	put("a.conf", "# nothing\n");
	assert_int_equal(fctl_approval_policy_load(path("a.conf"), &p, err, sizeof(err)), -EINVAL);
}

/* the history keeps a version's signatures beside its copy, and they still count there */
static void test_keep(void **state)
{
	struct fctl_approval_policy pol = { .required = 1 };
	struct fctl_approvals a;

	fresh(V7);
	three();
	ssh_sign("alice", "fabricctl-profile", path("p.yaml"), "alice");
	sh("rm -rf %s/h && mkdir %s/h && cp %s/p.yaml %s/h/000001-v7.yaml", dir, dir, dir, dir);
	assert_int_equal(fctl_approvals_keep(path("p.yaml"), path("h/000001-v7.yaml")), 0);
	snprintf(pol.signers, sizeof(pol.signers), "%s", path("allowed_signers"));
	assert_int_equal(fctl_approvals_check(path("h/000001-v7.yaml"), V7, strlen(V7), &pol,
					      time(NULL), &a, err, sizeof(err)),
			 0);
	assert_true(a.met);
	assert_non_null(strstr(a.v[0].file, "000001-v7.yaml.sig.d/00-alice.sig"));
	fctl_approvals_release(&a);
}

/* an encrypted private key is not signed in-process: the caller is told to use ssh-keygen */
static void test_sign_encrypted(void **state)
{
	struct fctl_buf key = { 0 }, out = { 0 };

	sh("ssh-keygen -q -t ed25519 -N secret-pass -f %s/enc", dir);
	assert_int_equal(fctl_file_read(path("enc"), &key), 0);
	assert_int_equal(fctl_sshsig_sign_ed25519(key.data, key.len, "n", "m", 1, &out, err,
						  sizeof(err)),
			 -EOPNOTSUPP);
	assert_non_null(strstr(err, "encrypted"));
	assert_null(strstr(err, "secret"));
	fctl_buf_release(&key);
	fctl_buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interop),	       cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_unsigned),       cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_expired),	       cmocka_unit_test(test_namespace),
		cmocka_unit_test(test_byte_changed),   cmocka_unit_test(test_other_version),
		cmocka_unit_test(test_malformed),      cmocka_unit_test(test_one_signer_once),
		cmocka_unit_test(test_signers_file),   cmocka_unit_test(test_policy_file),
		cmocka_unit_test(test_keep),	       cmocka_unit_test(test_sign_encrypted),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
