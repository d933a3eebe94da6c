// SPDX-License-Identifier: MIT
/* fabricctl rollback --to VERSION: a version from the history applied again, as apply applies */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "host.h"

int cmd_rollback(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("rollback", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	const char *to = NULL;
	struct cli_host c;
	uint64_t ver = 0;
	int rc = cli_host_parse("rollback", argc, argv, &c, &to);
	bool ok;

	if (rc >= 0)
		return rc;
	ok = to && fctl_parse_u64(to, &ver) == 0;
	if (!(ok && ver == 0) && (!ok || optind != argc)) { /* --to 0 is said as teardown */
		cli_err("rollback: expected --to VERSION (a profile version from 'fabricctl "
			"history')");
		return EXIT_USAGE;
	}
	return cli_rollback_run(&c, ver);
}

int cli_rollback_run(struct cli_host *c, uint64_t ver)
{
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	int rc;

	if (ver == 0) {
		cli_err("rollback: version 0 is the host before fabricctl made anything: that is "
			"'fabricctl teardown' (try 'fabricctl teardown --dry-run' first)");
		return EXIT_USAGE;
	}
	rc = fctl_engine_load_version(&c->eo, ver, &d, &p);
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
	rc = cli_apply_profile("rollback", c, p);
	fctl_profile_free(p);
	return rc;
}
