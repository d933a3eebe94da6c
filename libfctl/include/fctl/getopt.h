/* SPDX-License-Identifier: MIT */
/* getopt_long by the rules of docs/cli.md, shared by fabricctl, fabricctl-keymgr and the
 * probes: long options by their exact names only (getopt_long's abbreviations are
 * refused), -j and -o json for --json where a command has it, and a mistake said in our
 * words ("fabricctl validate: unknown option '--jsn'; did you mean '--json'?"). */
#ifndef FCTL_GETOPT_H
#define FCTL_GETOPT_H

#include <stddef.h>

struct option;

/* Who parses: the words of a message. */
struct fctl_getopt {
	const char *prog; /* "fabricctl" */
	const char *cmd;  /* "validate", "audit verify", "rotate" */
	const char *help; /* where the options are told: "fabricctl help validate" */
};

/* As getopt_long (optind, optarg; *longindex may be NULL), but an unknown, abbreviated or
 * malformed option returns '?' with err (one line, no newline) saying which and, when one
 * is close, the option meant; the caller prints it and exits 2. Never prints. */
int fctl_getopt(const struct fctl_getopt *g, int argc, char **argv, const char *shortopts,
		const struct option *lo, int *longindex, char *err, size_t errlen);

#endif
