// SPDX-License-Identifier: MIT
/* fabricctl validate FILE|DIR... */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

struct files {
	char **v;
	size_t n;
	size_t cap;
	struct files *skipped; /* "PATH: skipped: KIND, not a profile" of a directory's others */
};

static int add_file(struct files *f, const char *path)
{
	char **slot = fctl_array_grow(&f->v, &f->n, &f->cap, sizeof(*slot));

	if (!slot || !(*slot = strdup(path)))
		return -ENOMEM;
	return 0;
}

static bool is_yaml(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
	       (n > 4 && strcmp(name + n - 4, ".yml") == 0);
}

static void files_release(struct files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
	free(f->v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * What a YAML file found in a directory is when it is not a profile: NULL for a profile
 * (and for anything that cannot be told apart from one, which the check then judges),
 * else the kind of file. A directory of examples or a repository also holds Kubernetes
 * manifests, Prometheus rules and CI files; a file is one of those when no line of its
 * first 64 KiB starts with a profile's "schema:" or "profile:" and one starts with a
 * top-level key that no profile may have (a profile's keys are a closed set). Such a
 * file is listed as skipped; a file named on the command line is always checked.
 */
static const char *other_kind(const char *path)
{
	static const struct {
		const char *key, *kind;
	} foreign[] = {
		{ "apiVersion:", "a Kubernetes manifest" },
		{ "groups:", "Prometheus rules" },
		{ "jobs:", "a GitHub Actions workflow" },
		{ "stages:", "a GitLab CI pipeline" },
	};
	const char *kind = NULL;
	char buf[65536];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL; /* the check reports what is wrong with it */
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, "schema:", 7) == 0 || strncmp(l, "profile:", 8) == 0)
			return NULL;
		for (size_t i = 0; !kind && i < FCTL_ARRAY_SIZE(foreign); i++)
			if (strncmp(l, foreign[i].key, strlen(foreign[i].key)) == 0)
				kind = foreign[i].kind;
	}
	return kind;
}

/* Collects *.yaml / *.yml under dir (recursively, hidden entries skipped), sorted. */
static int scan_dir(struct files *f, const char *dir, int depth)
{
	struct dirent **ents = NULL;
	int n, r = 0;

	if (depth > 16)
		return 0;
	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		char path[4096], line[4200];
		const char *kind;
		struct stat st;

		if (r == 0 && ents[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
				r = scan_dir(f, path, depth + 1);
			else if (is_yaml(ents[i]->d_name) && stat(path, &st) == 0 &&
				 S_ISREG(st.st_mode)) { /* a FIFO found in a scan would block */
				kind = other_kind(path);
				if (kind)
					snprintf(line, sizeof(line), "%s: skipped: %s, not a profile",
						 path, kind);
				r = kind ? add_file(f->skipped, line) : add_file(f, path);
			}
		}
		free(ents[i]);
	}
	free(ents);
	return r;
}

/*
 * Collects the files named by argv[first..argc-1]: a directory adds its *.yaml / *.yml
 * files (sorted; trailing slashes are cut from argv), anything else is added as named.
 * A directory that cannot be read or holds no profile sets *io_error, with a finding in d.
 * Returns EXIT_OK, or EXIT_USAGE when out of memory.
 */
static int collect_files(struct files *files, int argc, char **argv, int first,
			 struct fctl_diags *d, bool *io_error)
{
	for (int i = first; i < argc; i++) {
		struct stat st;
		size_t before = files->n;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			size_t len = strlen(argv[i]);
			int r;

			while (len > 1 && argv[i][len - 1] == '/')
				argv[i][--len] = '\0';
			r = scan_dir(files, argv[i], 0);

			/* findings of the directory: every format reports them */
			if (r < 0) {
				fctl_diag_add(d, FCTL_SEV_ERROR, argv[i], 0, 0, "io", NULL,
					      "cannot read directory: %s", strerror(-r));
				*io_error = true;
			} else if (files->n == before) {
				fctl_diag_add(d, FCTL_SEV_ERROR, argv[i], 0, 0, "io", NULL,
					      "no profile (*.yaml or *.yml) in this directory");
				*io_error = true;
			}
			if (files->n - before > 1)
				qsort(files->v + before, files->n - before, sizeof(*files->v),
				      cmp_str);
		} else if (add_file(files, argv[i]) < 0) {
			cli_err("out of memory");
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

/* Writes the diagnostics to stdout as JSON, JUnit or text (text ends with a summary line). */
static void print_report(enum out_format fmt, bool quiet, const struct fctl_diags *d,
			 const struct files *files, size_t warnings, struct fctl_buf *out)
{
	switch (fmt) {
	case OUT_JSON:
		fctl_diags_to_json(d, (const char *const *)files->v, files->n, out);
		cli_write(stdout, out);
		break;
	case OUT_JUNIT:
		fctl_diags_to_junit(d, (const char *const *)files->v, files->n, out);
		cli_write(stdout, out);
		break;
	case OUT_TEXT:
		if (quiet)
			break;
		fctl_diags_to_text(d, out, cli_color(stdout));
		for (size_t i = 0; i < files->skipped->n; i++)
			fctl_buf_printf(out, "%s\n", files->skipped->v[i]);
		if (d->n_errors)
			fctl_buf_printf(out, "%zu file%s checked: %zu error%s, %zu warning%s",
					files->n, files->n == 1 ? "" : "s", d->n_errors,
					d->n_errors == 1 ? "" : "s", warnings,
					warnings == 1 ? "" : "s");
		else
			fctl_buf_printf(out, "%zu file%s valid (%zu warning%s)", files->n,
					files->n == 1 ? "" : "s", warnings,
					warnings == 1 ? "" : "s");
		if (files->skipped->n)
			fctl_buf_printf(out, "; %zu other YAML file%s skipped", files->skipped->n,
					files->skipped->n == 1 ? "" : "s");
		fctl_buf_putc(out, '\n');
		cli_write(stdout, out);
		break;
	}
}

static const struct option opts[] = {
	{ "json", no_argument, NULL, 'j' },   { "junit", no_argument, NULL, 'J' },
	{ "strict", no_argument, NULL, 's' }, { "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },   { NULL, 0, NULL, 0 },
};

const struct option *cli_opts_validate(const char *cmd, const char *sub)
{
	(void)cmd;
	(void)sub;
	return opts;
}

int cmd_validate(int argc, char **argv)
{
	enum out_format fmt = OUT_TEXT;
	bool strict = false, quiet = false, io_error = false;
	struct files skipped = { 0 };
	struct files files = { .skipped = &skipped };
	struct fctl_diags d = { 0 };
	struct fctl_buf out = { 0 };
	size_t warnings = 0;
	int c, rc;

	optind = 1;
	while ((c = cli_getopt("validate", argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
		case 'J':
			if (fmt != OUT_TEXT && fmt != (c == 'j' ? OUT_JSON : OUT_JUNIT)) {
				cli_err("validate: --json and --junit go to the same stdout; "
					"give one");
				return EXIT_USAGE;
			}
			fmt = c == 'j' ? OUT_JSON : OUT_JUNIT;
			break;
		case 's':
			strict = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			cli_usage_cmd("validate");
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		cli_err("validate: expected at least one FILE or DIR");
		return EXIT_USAGE;
	}
	if (collect_files(&files, argc, argv, optind, &d, &io_error) != EXIT_OK)
		return EXIT_USAGE;

	for (size_t i = 0; i < files.n; i++) {
		struct fctl_profile *p = NULL;
		int r = fctl_profile_load(files.v[i], &d, &p);

		if (p) {
			size_t errors = d.n_errors;

			fctl_profile_validate(p, &d);
			/* the approval state under this machine's policy, when it has one */
			if (d.n_errors == errors && !quiet && strcmp(files.v[i], "-") != 0)
				cli_approvals_note(p, "validate", false, fmt != OUT_TEXT);
		} else if (r == -ENOENT || r == -EACCES || r == -EISDIR || r == -ENOTDIR)
			io_error = true;
		fctl_profile_free(p);
	}
	/* each finding counts once: under --strict a warning is an error, not both */
	for (size_t i = 0; i < d.n; i++) {
		if (d.v[i].severity != FCTL_SEV_WARNING)
			continue;
		if (strict) {
			d.v[i].severity = FCTL_SEV_ERROR;
			d.n_errors++;
		} else {
			warnings++;
		}
	}

	print_report(fmt, quiet, &d, &files, warnings, &out);
	rc = io_error ? EXIT_USAGE : d.n_errors ? EXIT_INVALID : EXIT_OK;
	fctl_buf_release(&out);
	fctl_diags_release(&d);
	files_release(&files);
	files_release(&skipped);
	return rc;
}
