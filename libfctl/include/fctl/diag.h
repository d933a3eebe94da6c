/* SPDX-License-Identifier: MIT */
/*
 * Diagnostics: findings about user input, each naming file:line:column, what
 * was found and what was expected. Collected, never fatal one by one, so that
 * a user sees every problem in one run.
 */
#ifndef FCTL_DIAG_H
#define FCTL_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/util.h"

enum fctl_severity {
	FCTL_SEV_ERROR,
	FCTL_SEV_WARNING,
};

struct fctl_diag {
	enum fctl_severity severity;
	char *file;
	uint32_t line; /* 1-based; 0 = whole file */
	uint32_t col;  /* 1-based */
	char *code;    /* stable identifier, e.g. "unknown-key", "icv-range" */
	char *msg;     /* what was found and what was expected */
	char *hint;    /* optional: "did you mean 'cipher'?" */
};

struct fctl_diags {
	struct fctl_diag *v;
	size_t n;
	size_t cap;
	size_t n_errors;
	size_t limit; /* stop recording after this many (0 = 1000); counts go on */
	size_t dropped;
};

void fctl_diags_release(struct fctl_diags *d);
void fctl_diag_add(struct fctl_diags *d, enum fctl_severity sev, const char *file, uint32_t line,
		   uint32_t col, const char *code, const char *hint, const char *fmt, ...)
	FCTL_PRINTF(8, 9);
/* Stable order: file, line, column, then insertion. */
void fctl_diags_sort(struct fctl_diags *d);

int fctl_diags_to_text(const struct fctl_diags *d, struct fctl_buf *out, bool color);
int fctl_diags_to_json(const struct fctl_diags *d, const char *const *files, size_t n_files,
		       struct fctl_buf *out);
/* Only the findings, as the JSON array fctl_diags_to_json has under "findings". */
int fctl_diags_findings_json(const struct fctl_diags *d, struct fctl_buf *out);
/* JUnit XML (docs/cli.md): one testsuite per file, one testcase per finding with file=
 * and line= (no line for a whole-file finding): an error finding is a <failure>, an I/O
 * finding (code io) an <error>, a warning a <skipped> with its message and <system-out>;
 * a file without error findings has a passing testcase "valid". */
int fctl_diags_to_junit(const struct fctl_diags *d, const char *const *files, size_t n_files,
			struct fctl_buf *out);

#endif
