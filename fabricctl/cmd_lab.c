// SPDX-License-Identifier: MIT
/* fabricctl lab ...: runs scripts/lab.sh (installed as FCTL_DATADIR/lab.sh). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_lab(int argc, char **argv)
{
	static char bash[] = "bash", src[] = FCTL_SOURCE_DIR "/scripts/lab.sh",
		    inst[] = FCTL_DATADIR "/lab.sh";
	char *candidates[] = { getenv("FCTL_LAB_SCRIPT"), src, inst };
	char **args;

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(candidates); i++) {
		if (!candidates[i] || access(candidates[i], R_OK) != 0)
			continue;
		args = calloc((size_t)argc + 2, sizeof(*args));
		if (!args)
			return EXIT_USAGE;
		args[0] = bash;
		args[1] = candidates[i];
		for (int a = 1; a < argc; a++)
			args[a + 1] = argv[a];
		execv("/bin/bash", args);
		cli_err("lab: cannot run /bin/bash: %s", strerror(errno));
		free(args);
		return EXIT_USAGE;
	}
	cli_err("lab: scripts/lab.sh not found (set FCTL_LAB_SCRIPT)");
	return EXIT_USAGE;
}
