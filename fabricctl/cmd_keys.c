// SPDX-License-Identifier: MIT
/* fabricctl keys CMD ARGS: `fabricctl-keymgr CMD ARGS` (watch, recover, status), run as
 * rotate runs it (cli_keymgr_exec, cmd_rotate.c): fabricctl never talks to a KMS. */
#include "cli.h"

int cmd_keys(int argc, char **argv)
{
	if (argc < 2) {
		cli_err("keys: expected watch, recover or status");
		return EXIT_USAGE;
	}
	return cli_keymgr_exec(NULL, argc, argv);
}
