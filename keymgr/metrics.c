// SPDX-License-Identifier: MIT
/* keymgr's last run for monitoring: node_exporter's textfile format (--metrics-textfile),
 * written atomically. Families: docs/rotation.md, "Metrics". */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "keymgr.h"

static void head(struct fctl_buf *b, const char *name, const char *help)
{
	fctl_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* Link names are LINK.VID of the profile; a quote or backslash is escaped all the same. */
static void quoted(struct fctl_buf *b, const char *s)
{
	fctl_buf_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\' || *s == '\n')
			fctl_buf_putc(b, '\\');
		fctl_buf_putc(b, *s == '\n' ? 'n' : *s);
	}
	fctl_buf_putc(b, '"');
}

static void link_family(struct fctl_buf *b, const char *name, const char *help,
			const struct km_result *res, size_t n, bool committed_only, bool version)
{
	head(b, name, help);
	for (size_t i = 0; i < n; i++) {
		if (committed_only && res[i].r != 0)
			continue;
		fctl_buf_printf(b, "%s{link=", name);
		quoted(b, res[i].link->name);
		if (version)
			fctl_buf_printf(b, "} %" PRIu32 "\n", res[i].new_version);
		else
			fctl_buf_printf(b, "} %d\n", res[i].r == 0);
	}
}

int km_metrics_textfile(const char *path, const char *cmd, const struct km_result *res,
			size_t n, int rc, double wall_s)
{
	static const char *const results[3] = { "committed", "rolled_back", "failed" };
	unsigned count[3] = { 0 };
	struct fctl_buf b = { 0 };
	struct timespec ts;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	for (size_t i = 0; i < n; i++)
		count[res[i].r == 0 ? 0 : res[i].r == 1 ? 1 : 2]++;
	head(&b, "fabricctl_keymgr_last_run_timestamp_seconds", "Unix time the last run ended.");
	fctl_buf_printf(&b, "fabricctl_keymgr_last_run_timestamp_seconds{command=\"%s\"} %.3f\n",
			cmd, (double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
	head(&b, "fabricctl_keymgr_last_run_exit_code",
	     "Exit code of the last run: 0 rotated, 1 rolled back, 2 usage or environment, "
	     "3 failed with the journal kept.");
	fctl_buf_printf(&b, "fabricctl_keymgr_last_run_exit_code{command=\"%s\"} %d\n", cmd, rc);
	head(&b, "fabricctl_keymgr_last_run_duration_seconds", "Wall time of the last run.");
	fctl_buf_printf(&b, "fabricctl_keymgr_last_run_duration_seconds{command=\"%s\"} %.6f\n",
			cmd, wall_s);
	head(&b, "fabricctl_keymgr_last_run_links", "Links of the last run, by result.");
	for (int k = 0; k < 3; k++)
		fctl_buf_printf(&b, "fabricctl_keymgr_last_run_links{command=\"%s\","
				    "result=\"%s\"} %u\n", cmd, results[k], count[k]);
	link_family(&b, "fabricctl_keymgr_link_committed",
		    "1 when the link's rotation in the last run committed, 0 when it rolled back "
		    "or failed.", res, n, false, false);
	link_family(&b, "fabricctl_keymgr_link_key_version",
		    "The key version a committed rotation of the last run installed.", res, n, true,
		    true);
	r = b.oom ? -ENOMEM : fctl_file_replace(path, NULL, b.data, b.len, 0644, 0);
	fctl_buf_release(&b);
	return r;
}
