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

/* The long option named by name[0..n), exactly; NULL when none is. */
static const struct option *long_named(const struct option *lo, const char *name, size_t n)
{
	for (; lo->name; lo++)
		if (strlen(lo->name) == n && strncmp(lo->name, name, n) == 0)
			return lo;
	return NULL;
}

/* "fabricctl CMD: unknown option '--word'", with the nearest of the command's own long
 * options (guess, else by edit distance) when one is close. */
static void unknown_long(const char *cmd, const char *arg, const struct option *lo,
			 const char *guess)
{
	const char *names[128];
	char word[64];
	size_t n = 0, len = strcspn(arg + 2, "=");

	snprintf(word, sizeof(word), "%.*s", (int)len, arg + 2);
	for (; lo->name && n < FCTL_ARRAY_SIZE(names); lo++)
		names[n++] = lo->name;
	if (!guess)
		guess = fctl_did_you_mean(word, names, n);
	if (guess)
		fprintf(stderr, "%s %s: unknown option '--%s'; did you mean '--%s'?\n", prog_name,
			cmd, word, guess);
	else
		fprintf(stderr, "%s %s: unknown option '--%s'; see '%s help %s'\n", prog_name, cmd,
			word, prog_name, cmd);
}

/* A getopt_long error ('?' or ':') said in our words. e is the last element getopt took. */
static void option_error(const char *cmd, int ch, const char *e, const struct option *lo)
{
	bool is_long = e && e[0] == '-' && e[1] == '-';
	const struct option *o = is_long ? long_named(lo, e + 2, strcspn(e + 2, "=")) : NULL;

	/* a short option's error after a long option: e is that long option, another val */
	if (o && optopt && o->val != optopt) {
		is_long = false;
		o = NULL;
	}
	if (is_long && (!optopt || !o))
		unknown_long(cmd, e, lo, NULL); /* unknown, or an abbreviation getopt took */
	else if (o && ch == ':')
		fprintf(stderr, "%s %s: option '--%s' needs an argument\n", prog_name, cmd, o->name);
	else if (o)
		fprintf(stderr, "%s %s: option '--%s' takes no argument\n", prog_name, cmd, o->name);
	else if (ch == ':')
		fprintf(stderr, "%s %s: option '-%c' needs an argument\n", prog_name, cmd, optopt);
	else if (optopt > ' ' && optopt < 127)
		fprintf(stderr, "%s %s: unknown option '-%c'; see '%s help %s'\n", prog_name, cmd,
			optopt, prog_name, cmd);
	else
		fprintf(stderr, "%s %s: unknown option; see '%s help %s'\n", prog_name, cmd,
			prog_name, cmd);
}

/* The element that named long option o, which getopt_long just returned. */
static const char *long_element(char **argv, const struct option *o)
{
	if (o->has_arg != no_argument && optarg && optind >= 2 && optarg == argv[optind - 1])
		return argv[optind - 2];
	return argv[optind - 1];
}

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *lo, int *longindex)
{
	const struct option *json = long_named(lo, "json", 4);
	char sopts[64];
	const char *e;
	int idx = -1, ch;

	if (json && json->flag)
		json = NULL;
	/* ':' first: a missing argument is told from an unknown option */
	snprintf(sopts, sizeof(sopts), ":%s%s", shortopts, json ? "jo:" : "");
	opterr = 0;
	optopt = 0;
	ch = getopt_long(argc, argv, sopts, lo, &idx);
	if (longindex)
		*longindex = idx;
	if (ch == -1)
		return -1;
	if (ch == '?' || ch == ':') {
		option_error(cmd, ch, optind > 0 ? argv[optind - 1] : NULL, lo);
		return '?';
	}
	if (idx >= 0) {
		/* getopt_long takes any unambiguous prefix; fabricctl takes exact names only */
		e = long_element(argv, &lo[idx]);
		if (strncmp(e, "--", 2) != 0 || !long_named(lo, e + 2, strcspn(e + 2, "="))) {
			unknown_long(cmd, e, lo, lo[idx].name);
			return '?';
		}
		return ch;
	}
	if (json && (ch == 'j' || ch == 'o')) {
		if (ch == 'o' && strcmp(optarg, "json") != 0) {
			fprintf(stderr, "%s %s: -o takes 'json' (the output format), not '%s'\n",
				prog_name, cmd, optarg);
			return '?';
		}
		if (longindex)
			*longindex = (int)(json - lo);
		return json->val;
	}
	return ch;
}
