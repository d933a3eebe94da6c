// SPDX-License-Identifier: MIT
/* What the commands share: messages, output, loading a profile, option parsing, helpers. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fctl/getopt.h"

#include "cli.h"

bool cli_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");

	return isatty(fileno(f)) && !(nc && *nc);
}

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_say(struct fctl_host_msgs *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].plain)
			fprintf(stderr, "%s\n", m->v[i].text);
		else
			cli_err("%s", m->v[i].text);
	}
	if (m->oom)
		cli_err("out of memory");
	fctl_host_msgs_release(m);
}

int cli_write(FILE *f, const struct fctl_buf *b)
{
	if (b->oom) {
		cli_err("out of memory");
		return -1;
	}
	if (b->len && fwrite(b->data, 1, b->len, f) != b->len)
		return -1;
	return fflush(f) == 0 ? 0 : -1;
}

int cli_load_valid_profile(const char *file, struct fctl_profile **out, bool quiet_ok)
{
	return cli_load_profile(file, out, quiet_ok, false);
}

/* A finding of code "io": the file could not be read as a profile (missing, unreadable, a
 * directory), which is an I/O error (exit 2), not an invalid profile (exit 1). */
static bool io_finding(const struct fctl_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].code && strcmp(d->v[i].code, "io") == 0)
			return true;
	return false;
}

int cli_load_profile(const char *file, struct fctl_profile **out, bool quiet_ok, bool json)
{
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	struct fctl_buf b = { 0 };
	int r, rc;

	r = fctl_profile_load(file, &d, &p);
	if (p)
		fctl_profile_validate(p, &d);
	if (json && d.n_errors) {
		/* --json: the findings are the document on stdout, as validate --json has them */
		fctl_diags_to_json(&d, &file, 1, &b);
		cli_write(stdout, &b);
	} else if (d.n && (d.n_errors || !quiet_ok)) {
		fctl_diags_to_text(&d, &b, cli_color(stderr));
		cli_write(stderr, &b);
	}
	if (r < 0 && !p)
		rc = d.n_errors && !io_finding(&d) ? EXIT_INVALID : EXIT_USAGE;
	else
		rc = d.n_errors ? EXIT_INVALID : EXIT_OK;
	if (rc == EXIT_INVALID)
		cli_err("%s: %zu error%s; nothing done", file, d.n_errors,
			d.n_errors == 1 ? "" : "s");
	fctl_buf_release(&b);
	fctl_diags_release(&d);
	if (rc != EXIT_OK) {
		fctl_profile_free(p);
		return rc;
	}
	*out = p;
	return EXIT_OK;
}

int cli_need_regular(const char *cmd, const char *file)
{
	struct stat st;

	if (strcmp(file, "-") != 0 && (stat(file, &st) < 0 || S_ISREG(st.st_mode)))
		return EXIT_OK; /* a missing file is said by the load */
	cli_err("%s: '%s': PROFILE must be a regular file here (it is read again to be "
		"stored or sent); standard input and pipes are for validate, plan and diff",
		cmd, file);
	return EXIT_USAGE;
}

bool cli_in_build_tree(void)
{
	static int cached = -1;
	char exe[PATH_MAX], build[PATH_MAX];
	size_t n;

	if (cached >= 0)
		return cached;
	cached = 0;
	/* a package's build knows no build tree (FCTL_BUILD_TREE_PATHS off) */
	if (!*FCTL_BUILD_DIR || !realpath("/proc/self/exe", exe) || !realpath(FCTL_BUILD_DIR, build))
		return false;
	n = strlen(build);
	cached = strncmp(exe, build, n) == 0 && exe[n] == '/';
	return cached;
}

const char *cli_helper_path(const char *env, const char *build, const char *inst, int mode)
{
	const char *e = env ? getenv(env) : NULL;

	if (cli_in_build_tree()) {
		if (e && *e && access(e, mode) == 0)
			return e;
		if (access(build, mode) == 0)
			return build;
	}
	return access(inst, mode) == 0 ? inst : NULL;
}

void cli_helper_missing(const char *cmd, const char *name, const char *env, const char *build,
			const char *inst)
{
	if (cli_in_build_tree())
		cli_err("%s: %s not found (looked in %s and %s; set %s)", cmd, name, build, inst,
			env);
	else
		cli_err("%s: %s not found (looked in %s, where it is installed)", cmd, name, inst);
}

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *lo, int *longindex)
{
	char help[96], err[320];
	struct fctl_getopt g = { prog_name, cmd, help };
	int ch;

	snprintf(help, sizeof(help), "%s help %s", prog_name, cmd);
	ch = fctl_getopt(&g, argc, argv, shortopts, lo, longindex, err, sizeof(err));
	if (ch == '?')
		fprintf(stderr, "%s\n", err);
	return ch;
}
