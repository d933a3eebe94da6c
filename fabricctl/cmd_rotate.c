// SPDX-License-Identifier: MIT
/*
 * fabricctl rotate ... / fabricctl keys ...: run the key manager, fabricctl-keymgr
 * (keymgr/), so that the fabricctl binary never talks to a KMS. `rotate ARGS` is
 * `fabricctl-keymgr rotate ARGS`; `keys CMD ARGS` is `fabricctl-keymgr CMD ARGS`
 * (watch, recover, status). The program is looked for in $FCTL_KEYMGR_BIN, next to
 * this build's binaries, then where it is installed; apply finds it the same way to
 * get the keys of KMS references from it (fctl/keysrc.h).
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
	static char build[] = FCTL_KEYMGR_BUILD_PATH, inst[] = FCTL_KEYMGR_INSTALL_PATH;
	const char *candidates[] = { getenv("FCTL_KEYMGR_BIN"), build, inst };

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(candidates); i++)
		if (candidates[i] && *candidates[i] && access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

static int run_keymgr(const char *verb, int argc, char **argv)
{
	const char *bin = cli_keymgr_path();
	char **args;
	int n = 0;

	if (!bin) {
		cli_err("%s: fabricctl-keymgr not found (looked in %s and %s; set FCTL_KEYMGR_BIN)",
			argv[0], FCTL_KEYMGR_BUILD_PATH, FCTL_KEYMGR_INSTALL_PATH);
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
	return run_keymgr("rotate", argc, argv);
}

int cmd_keys(int argc, char **argv)
{
	if (argc < 2) {
		cli_err("keys: expected watch, recover or status");
		return EXIT_USAGE;
	}
	return run_keymgr(NULL, argc, argv);
}
