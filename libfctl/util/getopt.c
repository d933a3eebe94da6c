// SPDX-License-Identifier: MIT
/* getopt_long by the rules of docs/cli.md, for every program: exact long names only, our
 * words for a mistake (with a did-you-mean), -j and -o json for --json. See fctl/getopt.h. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fctl/getopt.h"
#include "fctl/util.h"

/* The long option named by name[0..n), exactly; NULL when none is. */
static const struct option *long_named(const struct option *lo, const char *name, size_t n)
{
	for (; lo->name; lo++)
		if (strlen(lo->name) == n && strncmp(lo->name, name, n) == 0)
			return lo;
	return NULL;
}

/* "PROG CMD: unknown option '--word'", with the nearest of the command's own long options
 * (guess, else by edit distance) when one is close. */
static void unknown_long(const struct fctl_getopt *g, const char *arg, const struct option *lo,
			 const char *guess, char *err, size_t errlen)
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
		snprintf(err, errlen, "%s %s: unknown option '--%s'; did you mean '--%s'?",
			 g->prog, g->cmd, word, guess);
	else
		snprintf(err, errlen, "%s %s: unknown option '--%s'; see '%s'", g->prog, g->cmd,
			 word, g->help);
}

/* A getopt_long error ('?' or ':') said in our words. e is the last element getopt took. */
static void option_error(const struct fctl_getopt *g, int ch, const char *e,
			 const struct option *lo, char *err, size_t errlen)
{
	bool is_long = e && e[0] == '-' && e[1] == '-';
	const struct option *o = is_long ? long_named(lo, e + 2, strcspn(e + 2, "=")) : NULL;

	/* a short option's error after a long option: e is that long option, another val */
	if (o && optopt && o->val != optopt) {
		is_long = false;
		o = NULL;
	}
	if (is_long && (!optopt || !o))
		unknown_long(g, e, lo, NULL, err, errlen); /* unknown, or an abbreviation */
	else if (o && ch == ':')
		snprintf(err, errlen, "%s %s: option '--%s' needs an argument", g->prog, g->cmd,
			 o->name);
	else if (o)
		snprintf(err, errlen, "%s %s: option '--%s' takes no argument", g->prog, g->cmd,
			 o->name);
	else if (ch == ':')
		snprintf(err, errlen, "%s %s: option '-%c' needs an argument", g->prog, g->cmd,
			 optopt);
	else if (optopt > ' ' && optopt < 127)
		snprintf(err, errlen, "%s %s: unknown option '-%c'; see '%s'", g->prog, g->cmd,
			 optopt, g->help);
	else
		snprintf(err, errlen, "%s %s: unknown option; see '%s'", g->prog, g->cmd, g->help);
}

/* The element that named long option o, which getopt_long just returned. */
static const char *long_element(char **argv, const struct option *o)
{
	if (o->has_arg != no_argument && optarg && optind >= 2 && optarg == argv[optind - 1])
		return argv[optind - 2];
	return argv[optind - 1];
}

int fctl_getopt(const struct fctl_getopt *g, int argc, char **argv, const char *shortopts,
		const struct option *lo, int *longindex, char *err, size_t errlen)
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
		option_error(g, ch, optind > 0 ? argv[optind - 1] : NULL, lo, err, errlen);
		return '?';
	}
	if (idx >= 0) {
		/* getopt_long takes any unambiguous prefix; we take exact names only */
		e = long_element(argv, &lo[idx]);
		if (strncmp(e, "--", 2) != 0 || !long_named(lo, e + 2, strcspn(e + 2, "="))) {
			unknown_long(g, e, lo, lo[idx].name, err, errlen);
			return '?';
		}
		return ch;
	}
	if (json && (ch == 'j' || ch == 'o')) {
		if (ch == 'o' && strcmp(optarg, "json") != 0) {
			snprintf(err, errlen, "%s %s: -o takes 'json' (the output format), not '%s'",
				 g->prog, g->cmd, optarg);
			return '?';
		}
		if (longindex)
			*longindex = (int)(json - lo);
		return json->val;
	}
	return ch;
}
