// SPDX-License-Identifier: MIT
/*
 * The hidden forms of `fabricctl help` the build runs (scripts/gen-docs.sh): the
 * manual pages fabricctl(8) and fabricctl-COMMAND(8) in roff, and the bash
 * completion, all made from the command table of main.c, so that neither can say
 * something `fabricctl help COMMAND` does not; and `fabricctl __complete`, which the
 * completion runs: its options are the tables the parsers read (struct cmd's opts).
 *
 * How a command's help text becomes a page: the synopsis lines are SYNOPSIS; in
 * the help, a paragraph (lines at column 0, up to a blank line) is filled text, an
 * indented block is kept as it is (no fill, the option or subcommand in bold), and
 * a paragraph that starts with "Exit:" becomes EXIT STATUS.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_WORDS 160

struct words {
	const char *p[MAX_WORDS];
	size_t n[MAX_WORDS];
	size_t count;
};

static void words_add(struct words *w, const char *p, size_t n)
{
	for (size_t i = 0; i < w->count; i++)
		if (w->n[i] == n && memcmp(w->p[i], p, n) == 0)
			return;
	if (w->count < MAX_WORDS) {
		w->p[w->count] = p;
		w->n[w->count++] = n;
	}
}

/* Roff text: backslashes and minus signs escaped, a control character at the start
 * of a line (bol) made literal. */
static void put_esc(FILE *f, const char *s, size_t n, bool bol)
{
	for (size_t i = 0; i < n; i++) {
		if (bol && (s[i] == '.' || s[i] == '\''))
			fputs("\\&", f);
		bol = false;
		if (s[i] == '\\')
			fputs("\\e", f);
		else if (s[i] == '-')
			fputs("\\-", f);
		else
			fputc(s[i], f);
		bol = s[i] == '\n';
	}
}

static void put_str(FILE *f, const char *s, bool bol)
{
	put_esc(f, s, strlen(s), bol);
}

static size_t line_len(const char *s)
{
	const char *nl = strchr(s, '\n');

	return nl ? (size_t)(nl - s) : strlen(s);
}

static const char *next_line(const char *s, size_t n)
{
	return s[n] == '\n' ? s + n + 1 : s + n;
}

/* A line of an indented block: two columns of indentation dropped, a leading option's
 * name (up to the first two-space gap, else its first word) in bold. */
static void literal_line(FILE *f, const char *l, size_t n)
{
	size_t t = 0;

	for (int i = 0; i < 2 && n && *l == ' '; i++, l++, n--)
		;
	if (!n || *l != '-') {
		put_esc(f, l, n, true);
		fputc('\n', f);
		return;
	}
	while (t < n && !(l[t] == ' ' && (t + 1 == n || l[t + 1] == ' ')))
		t++;
	if (t == n)
		for (t = 0; t < n && l[t] != ' '; t++)
			;
	fputs("\\fB", f);
	put_esc(f, l, t, false);
	fputs("\\fR", f);
	put_esc(f, l + t, n - t, false);
	fputc('\n', f);
}

/* The help text as roff: the description (exit false) or only the "Exit:" paragraph,
 * without its "Exit: " (exit true). Returns whether anything was written. */
static bool put_help(FILE *f, const char *help, bool exit)
{
	enum { NONE, PARA, LIT, EXIT } st = NONE;
	bool any = false;

	for (const char *l = help; *l;) {
		size_t n = line_len(l);

		if (n == 0) {
			if (st == LIT && !exit)
				fputs(".fi\n.RE\n", f);
			st = NONE;
		} else if (st != LIT && n >= 5 && strncmp(l, "Exit:", 5) == 0) {
			st = EXIT;
			if (exit) {
				const char *t = l + 5;

				while (*t == ' ')
					t++;
				put_esc(f, t, n - (size_t)(t - l), true);
				fputc('\n', f);
				any = true;
			}
		} else if (st == EXIT) {
			if (exit) {
				put_esc(f, l, n, true);
				fputc('\n', f);
			}
		} else if (*l == ' ') {
			if (!exit) {
				if (st != LIT)
					fputs(".PP\n.RS 4\n.nf\n", f);
				literal_line(f, l, n);
				any = true;
			}
			st = LIT;
		} else {
			if (!exit) {
				if (st != PARA)
					fputs(".PP\n", f);
				put_esc(f, l, n, true);
				fputc('\n', f);
				any = true;
			}
			st = PARA;
		}
		l = next_line(l, n);
	}
	if (st == LIT && !exit)
		fputs(".fi\n.RE\n", f);
	return any;
}

static void put_th(FILE *f, const char *name)
{
	fputs(".TH \"", f);
	for (const char *s = name; *s; s++)
		if (*s == '-')
			fputs("\\-", f);
		else
			fputc(toupper((unsigned char)*s), f);
	fputs("\" 8 \"\" \"fabricctl " FCTL_VERSION "\" \"fabricctl manual\"\n.nh\n", f);
}

/* SYNOPSIS: a line naming the command is a form of it, the others continue one. */
static void put_synopsis(FILE *f, const struct cmd *c)
{
	size_t cl = strlen(c->name);

	fputs(".SH SYNOPSIS\n.nf\n", f);
	for (const char *l = c->synopsis; *l;) {
		size_t n = line_len(l);
		const char *t = l;

		while (*t == ' ' && (size_t)(t - l) < n)
			t++;
		if (strncmp(t, c->name, cl) == 0 && (t[cl] == ' ' || t[cl] == '\n' || !t[cl])) {
			fputs("\\fBfabricctl ", f);
			put_esc(f, t, cl, false);
			fputs("\\fR", f);
			put_esc(f, t + cl, n - (size_t)(t - l) - cl, false);
		} else {
			fputs("    ", f);
			put_esc(f, t, n - (size_t)(t - l), false);
		}
		fputc('\n', f);
		l = next_line(l, n);
	}
	fputs(".fi\n", f);
}

/* SEE ALSO: fabricctl(8) and every docs/NAME.md the help names, as installed. */
static void put_see_also(FILE *f, const char *help)
{
	struct words docs = { .count = 0 };

	for (const char *s = help; (s = strstr(s, "docs/")); s += 5) {
		const char *e = s + 5;

		while (isalnum((unsigned char)*e) || *e == '-' || *e == '_')
			e++;
		if (strncmp(e, ".md", 3) == 0)
			words_add(&docs, s + 5, (size_t)(e + 3 - (s + 5)));
	}
	fputs(".SH SEE ALSO\n.BR fabricctl (8)", f);
	for (size_t i = 0; i < docs.count; i++) {
		fputs(",\n.I " FCTL_DOCDIR "/", f);
		put_esc(f, docs.p[i], docs.n[i], false);
	}
	fputc('\n', f);
}

static void man_command(FILE *f, const struct cmd *c)
{
	char page[64];

	snprintf(page, sizeof(page), "fabricctl-%s", c->name);
	put_th(f, page);
	fputs(".SH NAME\n", f);
	put_str(f, page, true);
	fputs(" \\- ", f);
	put_str(f, c->summary, false);
	fputc('\n', f);
	put_synopsis(f, c);
	fputs(".SH DESCRIPTION\n", f);
	put_help(f, c->help, false);
	fputs(".PP\n\\fBfabricctl help ", f);
	put_str(f, c->name, false);
	fputs("\\fR and \\fBfabricctl ", f);
	put_str(f, c->name, false);
	fputs(" \\-\\-help\\fR print this text.\n", f);
	if (strstr(c->help, "\nExit:") || strncmp(c->help, "Exit:", 5) == 0) {
		fputs(".SH EXIT STATUS\n", f);
		put_help(f, c->help, true);
	}
	put_see_also(f, c->help);
}

static void man_main(FILE *f, const struct cli_doc *doc)
{
	const char *ec = doc->exit_codes;
	size_t tl = strlen(doc->tagline);

	put_th(f, "fabricctl");
	fputs(".SH NAME\nfabricctl \\- ", f);
	fputc(tolower((unsigned char)doc->tagline[0]), f);
	put_esc(f, doc->tagline + 1, tl - 1 - (tl > 1 && doc->tagline[tl - 1] == '.'), false);
	fputs("\n.SH SYNOPSIS\n.nf\n"
	      "\\fBfabricctl\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]\n"
	      "\\fBfabricctl help\\fR [\\fICOMMAND\\fR]\n"
	      "\\fBfabricctl \\-\\-version\\fR\n.fi\n.SH DESCRIPTION\n", f);
	put_str(f, doc->tagline, true);
	fputs("\n.PP\nEach command has its page, \\fBfabricctl\\-\\fR\\fICOMMAND\\fR(8), with the "
	      "text \\fBfabricctl help\\fR \\fICOMMAND\\fR prints. The profile format is "
	      "described in\n.IR " FCTL_DOCDIR "/profile.md .\n.SH COMMANDS\n", f);
	for (size_t i = 0; i < doc->n; i++) {
		fputs(".TP\n.BR fabricctl\\-", f);
		put_str(f, doc->cmds[i].name, false);
		fputs(" (8)\n", f);
		put_str(f, doc->cmds[i].summary, true);
		fputs(".\n", f);
	}
	fputs(".SH EXIT STATUS\n", f);
	if (strncmp(ec, "Exit codes: ", 12) == 0)
		ec += 12;
	put_str(f, ec, true);
	fputs(".SH ENVIRONMENT\n.TP\n.B NO_COLOR\nWhen set, output has no colour.\n"
	      ".SH FILES\n.TP\n.I /var/lib/fabricctl\n"
	      "State: the apply journal, the history of applied profiles, the audit log.\n"
	      ".TP\n.I /run/fabricctl/agent.sock\nThe agent's Unix socket.\n"
	      ".TP\n.I /etc/fabricctl/agent.conf\nThe agent's configuration "
	      "(fabricctl\\-agent.service).\n.SH SEE ALSO\n", f);
	for (size_t i = 0; i < doc->n; i++) {
		fputs(i ? ",\n.BR fabricctl\\-" : ".BR fabricctl\\-", f);
		put_str(f, doc->cmds[i].name, false);
		fputs(" (8)", f);
	}
	fputs("\n.PP\n.I " FCTL_DOCDIR "\n", f);
}

/* Every option a text names: --word, or -x (one letter), after a space or bracket. */
static void scan_options(struct words *w, const char *s)
{
	for (size_t i = 0; s[i]; i++) {
		size_t j = i + 1, k;

		if (s[i] != '-' || (i && !strchr(" \t\n[|('/,=", s[i - 1])))
			continue;
		if (s[j] == '-')
			j++;
		if (!isalpha((unsigned char)s[j]))
			continue;
		for (k = j; isalnum((unsigned char)s[k]) || s[k] == '-'; k++)
			;
		while (s[k - 1] == '-')
			k--;
		if (j == i + 1 && k - j != 1)
			continue;
		words_add(w, s + i, k - i);
		i = k - 1;
	}
}

/* Subcommands: the word after the command's name in a form of its synopsis, when it
 * is a list (a|b|c) or a lower-case word. `help` takes the command names. */
static void scan_subcommands(struct words *w, const struct cli_doc *doc, const struct cmd *c)
{
	size_t cl = strlen(c->name);

	if (strcmp(c->name, "help") == 0) {
		for (size_t i = 0; i < doc->n; i++)
			words_add(w, doc->cmds[i].name, strlen(doc->cmds[i].name));
		return;
	}
	for (const char *l = c->synopsis; *l;) {
		size_t n = line_len(l);
		const char *t = l, *e;

		while (*t == ' ')
			t++;
		if (strncmp(t, c->name, cl) == 0 && t[cl] == ' ' && islower((unsigned char)t[cl + 1]))
			for (t += cl + 1; islower((unsigned char)*t); t = *e == '|' ? e + 1 : e) {
				for (e = t; islower((unsigned char)*e) || *e == '-'; e++)
					;
				words_add(w, t, (size_t)(e - t));
			}
		l = next_line(l, n);
	}
}

/* The script asks the binary the user runs (`fabricctl __complete`, cli_complete), so it
 * offers what that binary's parsers take and nothing else. */
static void bash_completion(FILE *f)
{
	fputs("# bash completion for fabricctl(8): commands, their subcommands and options.\n"
	      "# Made by `fabricctl help --bash-completion`; the words come from\n"
	      "# `fabricctl __complete`, which reads the option tables the parsers use.\n"
	      "_fabricctl()\n{\n"
	      "\tlocal IFS=$'\\n'\n"
	      "\tCOMPREPLY=($(command \"${COMP_WORDS[0]}\" __complete "
	      "\"${COMP_WORDS[@]:1:COMP_CWORD}\" 2>/dev/null))\n"
	      "\treturn 0\n}\n"
	      "complete -o default -F _fabricctl fabricctl\n", f);
}

static void offer(const char *word, size_t n, const char *cur)
{
	if (n >= strlen(cur) && strncmp(word, cur, strlen(cur)) == 0)
		printf("%.*s\n", (int)n, word);
}

static void offer_words(const struct words *w, const char *cur)
{
	for (size_t i = 0; i < w->count; i++)
		offer(w->p[i], w->n[i], cur);
}

/* The long options of a parser's table, hidden ones left out. */
static void offer_table(const struct option *lo, const char *cur)
{
	char name[64];

	for (; lo->name; lo++) {
		if (lo->val & CLI_HIDDEN)
			continue;
		snprintf(name, sizeof(name), "--%s", lo->name);
		offer(name, strlen(name), cur);
	}
}

/* Whether word is a long option of lo that takes an argument (the next word is its value). */
static bool takes_value(const struct option *lo, const char *word)
{
	for (; lo && lo->name && word[0] == '-' && word[1] == '-'; lo++)
		if (strcmp(lo->name, word + 2) == 0)
			return lo->has_arg == required_argument;
	return false;
}

/* argv: the words after "fabricctl", the last the one being completed. The table is the
 * one the parser of that command (and subcommand) reads in the form the words ask for:
 * the remote one once --target or --fabric is on the line (cmd_fabric_dispatch's rule). */
int cli_complete(const struct cli_doc *doc, int argc, char **argv)
{
	const char *cur = argc ? argv[argc - 1] : "";
	const struct option *lo = NULL;
	const struct cmd *c = NULL;
	struct words subs = { .count = 0 }, opts = { .count = 0 };
	bool remote;

	for (size_t i = 0; argc > 1 && i < doc->n; i++)
		if (strcmp(doc->cmds[i].name, argv[0]) == 0)
			c = &doc->cmds[i];
	if (argc <= 1) {
		for (size_t i = 0; i < doc->n; i++)
			offer(doc->cmds[i].name, strlen(doc->cmds[i].name), cur);
		offer("--help", 6, cur);
		offer("--version", 9, cur);
		return EXIT_OK;
	}
	if (!c)
		return EXIT_OK;
	scan_subcommands(&subs, doc, c);
	if (argc == 2 && (cur[0] != '-' || subs.count)) {
		/* a command of subcommands takes its options after one (and --help) */
		offer_words(&subs, cur);
		if (subs.count)
			offer("--help", 6, cur);
		return EXIT_OK;
	}
	remote = cli_remote_form(c->name, argc - 1, argv);
	if (remote)
		lo = cli_opts_remote(c->name);
	else if (c->opts)
		lo = c->opts(c->name, subs.count && argc > 2 ? argv[1] : NULL);
	if (argc > 2 && takes_value(lo, argv[argc - 2]))
		return EXIT_OK; /* the value: bash's own (file names) */
	if (cur[0] != '-')
		return EXIT_OK;
	if (lo) {
		offer_table(lo, cur);
		if (!remote && cli_opts_remote(c->name)) {
			offer("--target", 8, cur); /* they switch to the remote form's table */
			offer("--fabric", 8, cur);
		}
	} else if (strcmp(c->name, "help") != 0) {
		/* parsed by another program (lab.sh, keymgr, the probe): what its help names */
		scan_options(&opts, c->synopsis);
		scan_options(&opts, c->help);
		words_add(&opts, "--help", 6);
		offer_words(&opts, cur);
	}
	return EXIT_OK;
}

int cli_help_gen(const struct cli_doc *doc, int argc, char **argv)
{
	if (strcmp(argv[1], "--commands") == 0 && argc == 2) {
		for (size_t i = 0; i < doc->n; i++)
			printf("%s\n", doc->cmds[i].name);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--bash-completion") == 0 && argc == 2) {
		bash_completion(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--man") != 0 || argc > 3)
		return -1;
	if (argc == 2) {
		man_main(stdout, doc);
		return EXIT_OK;
	}
	for (size_t i = 0; i < doc->n; i++)
		if (strcmp(doc->cmds[i].name, argv[2]) == 0) {
			man_command(stdout, &doc->cmds[i]);
			return EXIT_OK;
		}
	cli_err("unknown command '%s'", argv[2]);
	return EXIT_USAGE;
}
