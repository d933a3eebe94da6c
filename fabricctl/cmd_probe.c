// SPDX-License-Identifier: MIT
/*
 * fabricctl probe ...: runs the probe program, fabricctl-probe (probes/), so
 * that the fabricctl binary never links libibverbs. The program is looked for
 * where it is installed; a fabricctl run from its build tree looks first in
 * $FCTL_PROBE_BIN and next to this build's binaries (cli_helper_path).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char *find_probe(void)
{
	return cli_helper_path("FCTL_PROBE_BIN", FCTL_PROBE_BUILD_PATH, FCTL_PROBE_INSTALL_PATH,
			       X_OK);
}

int cmd_probe(int argc, char **argv)
{
	const char *bin = find_probe();
	char **args;

	if (!bin) {
		cli_helper_missing("probe", "fabricctl-probe", "FCTL_PROBE_BIN", FCTL_PROBE_BUILD_PATH,
				   FCTL_PROBE_INSTALL_PATH);
		return EXIT_USAGE;
	}
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args)
		return EXIT_USAGE;
	/* argv[0] "fabricctl": the probe names itself 'fabricctl probe' in usage and errors */
	args[0] = (char *)(uintptr_t)"fabricctl"; /* execv's argv is not written */
	for (int a = 1; a < argc; a++)
		args[a] = argv[a];
	fflush(stdout);
	fflush(stderr);
	execv(bin, args);
	cli_err("probe: cannot run %s: %s", bin, strerror(errno));
	free(args);
	return EXIT_USAGE;
}
