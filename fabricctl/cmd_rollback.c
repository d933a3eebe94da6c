// SPDX-License-Identifier: MIT
/* fabricctl rollback --to VERSION: a version from the history applied again, as apply applies */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>

#include "host.h"

int cmd_rollback(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("rollback", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	const char *to = NULL;
	struct cli_host c;
	uint64_t ver;
	int rc = cli_host_parse("rollback", argc, argv, &c, &to);

	if (rc >= 0)
		return rc;
	if (to && fctl_parse_u64(to, &ver) == 0 && ver == 0) {
		cli_err("rollback: version 0 is the host before fabricctl made anything: that is "
			"'fabricctl teardown' (try 'fabricctl teardown --dry-run' first)");
		return EXIT_USAGE;
	}
	if (!to || optind != argc || fctl_parse_u64(to, &ver) < 0 || ver == 0) {
		cli_err("rollback: expected --to VERSION (a profile version from 'fabricctl "
			"history')");
		return EXIT_USAGE;
	}
	rc = fctl_engine_load_version(&c.eo, ver, &d, &p);
	if (rc < 0) {
		struct fctl_buf b = { 0 };

		fctl_diags_to_text(&d, &b, cli_color(stderr));
		cli_write(stderr, &b);
		fctl_buf_release(&b);
		cli_err("rollback: version %" PRIu64 " %s", ver,
			rc == -ENOENT ? "was never applied on this host (see 'fabricctl history')"
				      : "cannot be loaded from the history");
		fctl_diags_release(&d);
		return EXIT_USAGE;
	}
	fctl_diags_release(&d);
	rc = cli_apply_profile("rollback", &c, p);
	fctl_profile_free(p);
	return rc;
}
