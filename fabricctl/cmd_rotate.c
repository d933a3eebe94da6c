// SPDX-License-Identifier: MIT
/*
 * fabricctl rotate ...: run the key manager, fabricctl-keymgr (keymgr/), so that the
 * fabricctl binary never talks to a KMS. `rotate ARGS` is `fabricctl-keymgr rotate ARGS`
 * (`keys`, cmd_keys.c, runs it the same way: cli_keymgr_exec). The program is looked for where it is installed; a
 * fabricctl run from its build tree looks first in $FCTL_KEYMGR_BIN and next to this
 * build's binaries. apply finds it the same way to get the keys of KMS references
 * from it (fctl/keysrc.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char *cli_keymgr_path(void)
{
	return cli_helper_path("FCTL_KEYMGR_BIN", FCTL_KEYMGR_BUILD_PATH, FCTL_KEYMGR_INSTALL_PATH,
			       X_OK);
}

int cli_keymgr_exec(const char *verb, int argc, char **argv)
{
	const char *bin = cli_keymgr_path();
	char **args;
	int n = 0;

	if (!bin) {
		cli_helper_missing(argv[0], "fabricctl-keymgr", "FCTL_KEYMGR_BIN",
				   FCTL_KEYMGR_BUILD_PATH, FCTL_KEYMGR_INSTALL_PATH);
		return EXIT_USAGE;
	}
	args = calloc((size_t)argc + 2, sizeof(*args));
	if (!args)
		return EXIT_USAGE;
	/* argv[0] "fabricctl": keymgr names its commands 'fabricctl rotate', 'fabricctl keys' */
	args[n++] = (char *)(uintptr_t)"fabricctl"; /* execv's argv is not written */
	if (verb)
		args[n++] = (char *)(uintptr_t)verb;
	for (int a = 1; a < argc; a++)
		args[n++] = argv[a];
	fflush(stdout);
	fflush(stderr);
	execv(bin, args);
	cli_err("%s: cannot run %s: %s", argv[0], bin, strerror(errno));
	free(args);
	return EXIT_USAGE;
}

int cmd_rotate(int argc, char **argv)
{
	return cli_keymgr_exec("rotate", argc, argv);
}
