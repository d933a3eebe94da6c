// SPDX-License-Identifier: MIT
/* fabricctl history: the profile versions applied on this host */
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
	fctl_engine_history_format(v, n, c->json, &out);
	cli_write(stdout, &out);
	fctl_buf_release(&out);
	free(v);
	return EXIT_OK;
}
