// SPDX-License-Identifier: MIT
/* fabricctl history: the profile versions applied on this host */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "host.h"

int cmd_history(int argc, char **argv)
{
	return cli_host_cmd("history", argc, argv, false, cli_history_run);
}

int cli_history_run(const struct cli_host *c)
{
	struct fctl_history_entry *v = NULL;
	struct fctl_buf out = { 0 };
	size_t n = 0;
	int r;

	r = fctl_engine_history(&c->eo, &v, &n);
	if (r < 0)
		return cli_env_error("history", r, NULL);
	if (c->json)
		fctl_buf_puts(&out, "[");
	else if (!n)
		fctl_buf_puts(&out, "no profile has been applied on this host\n");
	else
		fctl_buf_printf(&out, "%-5s %-8s %-20s %-21s %s\n", "SEQ", "VERSION", "PROFILE",
				"APPLIED (UTC)", "SHA-256");
	for (size_t i = 0; i < n; i++) {
		if (c->json) {
			fctl_buf_printf(&out, "%s{\"seq\":%" PRIu64 ",\"version\":%" PRIu64 ",\"profile\":",
					i ? "," : "", v[i].seq, v[i].version);
			fctl_buf_json_str(&out, v[i].name);
			fctl_buf_printf(&out, ",\"applied\":\"%s\",\"sha256\":\"%s\",\"stored\":",
					v[i].time, v[i].sha256);
			fctl_buf_json_str(&out, v[i].file);
			fctl_buf_putc(&out, '}');
		} else {
			fctl_buf_printf(&out, "%-5" PRIu64 " %-8" PRIu64 " %-20s %-21s %.16s\n",
					v[i].seq, v[i].version, v[i].name, v[i].time, v[i].sha256);
		}
	}
	if (c->json)
		fctl_buf_puts(&out, "]\n");
	cli_write(stdout, &out);
	fctl_buf_release(&out);
	free(v);
	return EXIT_OK;
}
