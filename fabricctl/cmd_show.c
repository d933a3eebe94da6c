// SPDX-License-Identifier: MIT
/* fabricctl show: this host's live state as a profile (or JSON), with its MKA ports and a pending confirm */
#include <stdio.h>

#include "host.h"

int cmd_show(int argc, char **argv)
{
	return cli_host_cmd("show", argc, argv, true, cli_show_run);
}

int cli_show_run(const struct cli_host *c)
{
	struct fctl_host_state *live = NULL;
	struct fctl_buf out = { 0 };
	char err[768] = "";
	int r, rc;

	r = fctl_engine_show(NULL, &c->eo, &live, err, sizeof(err));
	if (r < 0)
		return cli_env_error("show", r, err);
	if (c->json) {
		fctl_host_state_to_json(live, &out);
		if (out.len && out.data[out.len - 1] == '}') {
			out.len--;
			fctl_buf_puts(&out, ",\"mka\":");
			cli_mka_show(c->eo.netns, &out, true);
			fctl_buf_puts(&out, ",\"confirm\":");
			cli_confirm_show(&c->eo, &out);
			fctl_buf_putc(&out, '}');
		}
		fctl_buf_putc(&out, '\n');
	} else {
		r = fctl_state_to_profile(live, &out);
		if (r >= 0)
			cli_mka_show(c->eo.netns, &out, false);
		cli_confirm_show(&c->eo, NULL);
	}
	rc = r < 0 || cli_write(stdout, &out) < 0 ? EXIT_USAGE : EXIT_OK;
	fctl_buf_release(&out);
	fctl_host_state_free(live);
	return rc;
}
