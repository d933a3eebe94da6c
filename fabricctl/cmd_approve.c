// SPDX-License-Identifier: MIT
/* approve (sign a profile version) and approvals (who signed, is the policy met), and the
 * approval gate apply, rollback and confirm pass (docs/approvals.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fctl/approvals.h"
#include "fctl/profile.h"

#include "cli.h"

/* the host's policy file: $FCTL_APPROVALS_CONF, else /etc/fabricctl/approvals.conf */
const char *cli_approvals_conf(void)
{
	const char *e = getenv("FCTL_APPROVALS_CONF");

	return e && *e ? e : FCTL_APPROVALS_CONF;
}

static bool bytes_of(const struct fctl_profile *p, const struct fctl_buf *b)
{
	unsigned char md[32];

	return EVP_Digest(b->data ? b->data : "", b->len, md, NULL, EVP_sha256(), NULL) == 1 &&
	       CRYPTO_memcmp(md, p->sha256, 32) == 0;
}

int cli_approvals_gate(const struct fctl_profile *p, struct fctl_approvals *out, char *why,
		       size_t len)
{
	return fctl_host_approvals_gate(cli_approvals_conf(), p, out, why, len);
}

void cli_approvals_note(const struct fctl_profile *p, const char *cmd, bool dry_run,
			bool quiet)
{
	struct fctl_host_msgs m = { 0 };

	fctl_host_approvals_note(cli_approvals_conf(), p, cmd, dry_run, quiet, &m);
	cli_say(&m);
}

/* ---- approvals PROFILE ---- */

static const struct option approvals_opts[] = {
	{ "json", no_argument, NULL, 'j' },	       { "policy", required_argument, NULL, 'p' },
	{ "allowed-signers", required_argument, NULL, 'a' }, { "require", required_argument, NULL, 'r' },
	{ "help", no_argument, NULL, 'h' },	       { NULL, 0, NULL, 0 },
};

static const struct option approve_opts[] = {
	{ "key", required_argument, NULL, 'k' },  { "name", required_argument, NULL, 'n' },
	{ "ssh-keygen", no_argument, NULL, 's' }, { "force", no_argument, NULL, 'f' },
	{ "quiet", no_argument, NULL, 'q' },	  { "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

const struct option *cli_opts_approve(const char *cmd, const char *sub)
{
	(void)sub;
	return strcmp(cmd, "approve") == 0 ? approve_opts : approvals_opts;
}

/* the policy approvals checks: --allowed-signers FILE [--require N], else --policy FILE,
 * else the host's; 0 none, 1 one, EXIT_USAGE-style negative on error */
static int approvals_policy(const char *conf, const char *signers, const char *req,
			    struct fctl_approval_policy *pol)
{
	char err[512];
	uint64_t n = 1;
	int r;

	if (signers) {
		if (req && (fctl_parse_u64(req, &n) < 0 || n == 0 || n > 64)) {
			cli_err("approvals: --require takes 1..64, not '%s'", req);
			return -EINVAL;
		}
		*pol = (struct fctl_approval_policy){ .required = (unsigned int)n };
		snprintf(pol->signers, sizeof(pol->signers), "%s", signers);
		snprintf(pol->conf, sizeof(pol->conf), "--allowed-signers");
		return 1;
	}
	if (req) {
		cli_err("approvals: --require goes with --allowed-signers FILE");
		return -EINVAL;
	}
	r = fctl_approval_policy_load(conf ? conf : cli_approvals_conf(), pol, err, sizeof(err));
	if (r < 0)
		cli_err("approvals: %s", err);
	if (r == 0 && conf) {
		cli_err("approvals: %s: no such file", conf);
		return -ENOENT;
	}
	return r;
}

static int approvals_print(const struct fctl_profile *p, const struct fctl_approvals *a,
			   const struct fctl_approval_policy *pol, bool json)
{
	struct fctl_buf o = { 0 };

	if (json) {
		fctl_buf_puts(&o, "{\"profile\":");
		fctl_buf_json_str(&o, p->name ? p->name : "");
		fctl_buf_printf(&o, ",\"version\":%" PRIu64 ",\"file\":", p->version);
		fctl_buf_json_str(&o, p->file);
		fctl_buf_puts(&o, ",\"policy\":");
		if (pol) {
			fctl_buf_json_str(&o, pol->conf);
			fctl_buf_puts(&o, ",\"approvals\":");
			fctl_approvals_json(a, &o);
		} else {
			fctl_buf_puts(&o, "null,\"approvals\":null");
		}
		fctl_buf_puts(&o, "}\n");
	} else if (!pol) {
		fctl_buf_printf(&o, "%s version %" PRIu64 ": no approval policy on this host (%s "
				    "does not exist): approvals are not required\n",
				p->name, p->version, cli_approvals_conf());
	} else {
		fctl_buf_printf(&o, "%s version %" PRIu64 " (%s)\n", p->name, p->version, p->file);
		for (size_t i = 0; i < a->n; i++) {
			const struct fctl_approval_sig *s = &a->v[i];

			fctl_buf_printf(&o, "  %-8s %s  %s %s%s%s\n",
					s->state == FCTL_APPROVAL_COUNTED  ? "counted"
					: s->state == FCTL_APPROVAL_REPEAT ? "repeat"
									   : "refused",
					s->file, *s->principal ? s->principal : "-",
					*s->fp ? s->fp : "-", *s->reason ? ": " : "", s->reason);
		}
		fctl_approvals_text(a, &o);
		fctl_buf_printf(&o, " [policy %s]\n", pol->conf);
	}
	cli_write(stdout, &o);
	fctl_buf_release(&o);
	return !pol || a->met ? EXIT_OK : EXIT_INVALID;
}

int cmd_approvals(int argc, char **argv)
{
	const char *conf = NULL, *signers = NULL, *req = NULL;
	struct fctl_approval_policy pol;
	struct fctl_approvals a = { 0 };
	struct fctl_profile *p = NULL;
	struct fctl_buf b = { 0 };
	char err[512];
	bool json = false;
	int c, r, rc;

	optind = 1;
	while ((c = cli_getopt("approvals", argc, argv, "h", approvals_opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'p': conf = optarg; break;
		case 'a': signers = optarg; break;
		case 'r': req = optarg; break;
		case 'h': cli_usage_cmd("approvals"); return EXIT_OK;
		default: return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_err("approvals: expected exactly one PROFILE");
		return EXIT_USAGE;
	}
	rc = cli_load_profile(argv[optind], &p, true, json);
	if (rc != EXIT_OK)
		return rc;
	r = approvals_policy(conf, signers, req, &pol);
	if (r < 0) {
		fctl_profile_free(p);
		return EXIT_USAGE;
	}
	if (r == 0) {
		rc = approvals_print(p, &a, NULL, json);
		fctl_profile_free(p);
		return rc;
	}
	r = fctl_file_read(p->file, &b);
	if (r == 0 && !bytes_of(p, &b))
		r = -ESTALE;
	if (r == 0)
		r = fctl_approvals_check(p->file, b.data, b.len, &pol, time(NULL), &a, err,
					 sizeof(err));
	else
		snprintf(err, sizeof(err), "%s: %s", p->file,
			 r == -ESTALE ? "changed while it was read" : strerror(-r));
	if (r < 0) {
		cli_err("approvals: %s", err);
		rc = EXIT_USAGE;
	} else {
		rc = approvals_print(p, &a, &pol, json);
	}
	fctl_approvals_release(&a);
	fctl_buf_release(&b);
	fctl_profile_free(p);
	return rc;
}

/* ---- approve PROFILE ---- */

/* ssh-keygen -Y sign -n fabricctl-profile -f KEY, the profile on its stdin, the signature
 * from its stdout (it asks for a passphrase on the terminal, or uses ssh-agent) */
static int sign_ssh_keygen(const char *key, const struct fctl_buf *msg, struct fctl_buf *sig)
{
	char tmpl[] = "/tmp/fctl-approve-XXXXXX";
	int in = mkstemp(tmpl), out, st = 0, r = -EIO;
	char buf[4096];
	ssize_t n;
	pid_t pid;
	int pfd[2];

	if (in < 0)
		return -errno;
	unlink(tmpl);
	if (fctl_write_all(in, msg->data, msg->len) < 0 || lseek(in, 0, SEEK_SET) < 0 ||
	    pipe2(pfd, O_CLOEXEC) < 0) {
		close(in);
		return -EIO;
	}
	pid = fork();
	if (pid == 0) {
		dup2(in, 0);
		dup2(pfd[1], 1);
		execlp("ssh-keygen", "ssh-keygen", "-q", "-Y", "sign", "-n",
		       FCTL_APPROVALS_NAMESPACE, "-f", key, (char *)NULL);
		_exit(127);
	}
	close(in);
	close(pfd[1]);
	out = pfd[0];
	while (pid > 0 && (n = read(out, buf, sizeof(buf))) > 0)
		fctl_buf_append(sig, buf, (size_t)n);
	close(out);
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		r = 0;
	else if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127)
		r = -ENOENT;
	return r;
}

/* an unencrypted OpenSSH Ed25519 key, signed here; the key's bytes wiped after */
static int sign_here(const char *key, const struct fctl_buf *msg, struct fctl_buf *sig,
		     char *err, size_t errlen)
{
	struct fctl_buf k = { 0 };
	struct stat st;
	int fd = open(key, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), r;

	if (fd < 0) {
		fctl_set_err(err, errlen, "%s: %s", key, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		close(fd);
		fctl_set_err(err, errlen, "%s: a private key must be a regular file readable by "
			     "its owner only (chmod 600)", key);
		return -EPERM;
	}
	close(fd);
	r = fctl_file_read(key, &k);
	if (r < 0) {
		fctl_set_err(err, errlen, "%s: %s", key, strerror(-r));
	} else {
		r = fctl_sshsig_sign_ed25519(k.data, k.len, FCTL_APPROVALS_NAMESPACE, msg->data,
					     msg->len, sig, err, errlen);
	}
	fctl_memzero(k.data, k.cap);
	fctl_buf_release(&k);
	return r;
}

static const char *default_name(void)
{
	struct passwd *pw = getpwuid(getuid());

	return pw && pw->pw_name ? pw->pw_name : "approver";
}

int cmd_approve(int argc, char **argv)
{
	const char *key = NULL, *name = NULL;
	bool wrap = false, force = false, quiet = false;
	struct fctl_profile *p = NULL;
	struct fctl_buf msg = { 0 }, sig = { 0 };
	struct fctl_sshsig parsed;
	char dir[PATH_MAX + 16], out[PATH_MAX + 160], err[512];
	int c, r, rc = EXIT_USAGE;

	optind = 1;
	while ((c = cli_getopt("approve", argc, argv, "qh", approve_opts, NULL)) != -1) {
		switch (c) {
		case 'k': key = optarg; break;
		case 'n': name = optarg; break;
		case 's': wrap = true; break;
		case 'f': force = true; break;
		case 'q': quiet = true; break;
		case 'h': cli_usage_cmd("approve"); return EXIT_OK;
		default: return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || !key) {
		cli_err("approve: expected --key FILE and exactly one PROFILE");
		return EXIT_USAGE;
	}
	if (!name)
		name = default_name();
	if (!*name || strchr(name, '/') || name[0] == '.' || strlen(name) > 64) {
		cli_err("approve: --name '%s' must be a file name (no '/', not starting with '.')",
			name);
		return EXIT_USAGE;
	}
	rc = cli_load_profile(argv[optind], &p, true, false);
	if (rc != EXIT_OK)
		return rc;
	rc = EXIT_USAGE;
	r = fctl_file_read(p->file, &msg);
	if (r < 0 || !bytes_of(p, &msg)) {
		cli_err("approve: %s: %s", p->file, r < 0 ? strerror(-r) : "changed while it was read");
		goto out;
	}
	snprintf(dir, sizeof(dir), "%s.sig.d", p->file);
	snprintf(out, sizeof(out), "%s/%s.sig", dir, name);
	if (!force && access(out, F_OK) == 0) {
		cli_err("approve: %s exists (--force to replace it, --name NAME for another)", out);
		goto out;
	}
	r = wrap ? sign_ssh_keygen(key, &msg, &sig) : sign_here(key, &msg, &sig, err, sizeof(err));
	if (r == -ENOENT && wrap)
		snprintf(err, sizeof(err), "ssh-keygen is not installed (openssh-client)");
	else if (r < 0 && wrap)
		snprintf(err, sizeof(err), "ssh-keygen -Y sign failed with %s", key);
	if (r == 0 && fctl_sshsig_parse(sig.data, sig.len, &parsed, err, sizeof(err)) < 0)
		r = -EBADMSG;
	if (r == 0 && fctl_sshsig_verify(&parsed, FCTL_APPROVALS_NAMESPACE, msg.data, msg.len, err,
					 sizeof(err)) < 0)
		r = -EKEYREJECTED;
	if (r < 0) {
		cli_err("approve: %s", err);
		goto out;
	}
	if ((mkdir(dir, 0755) < 0 && errno != EEXIST) ||
	    fctl_file_replace(out, NULL, sig.data, sig.len, 0644, FCTL_FILE_SYNC_DIR) < 0) {
		cli_err("approve: cannot write %s: %s", out, strerror(errno));
		goto out;
	}
	if (!quiet)
		printf("approved %s version %" PRIu64 " (sha256 of its bytes) with key %s: %s\n",
		       p->name, p->version, parsed.key.fp, out);
	rc = EXIT_OK;
out:
	fctl_buf_release(&msg);
	fctl_buf_release(&sig);
	fctl_profile_free(p);
	return rc;
}
