// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a profile from untrusted bytes through every stage a CI run
 * takes it: parse, validate, all three finding formats, and, when it validates,
 * render of every host, plans (from nothing, to itself, to nothing) and diffs.
 * Built with -DFCTL_FUZZ=ON and clang; run with tests/fuzz/run.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/plan.h"
#include "fctl/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_host(const struct fctl_profile *p, const char *host, struct fctl_buf *o)
{
	struct fctl_host_state *hs = NULL, *again = NULL;
	struct fctl_plan *pl = NULL;

	if (fctl_profile_render_host(p, host, &hs) < 0)
		return;
	fctl_host_state_to_json(hs, o);
	if (fctl_plan_compute(NULL, hs, &pl) == 0) {
		fctl_plan_to_text(pl, o, false);
		fctl_plan_to_json(pl, o);
		fctl_plan_count_disruptive(pl);
		fctl_plan_free(pl);
		pl = NULL;
	}
	if (fctl_profile_render_host(p, host, &again) == 0) {
		/* rendering is deterministic: a profile planned against itself is a no-op */
		if (fctl_plan_compute(hs, again, &pl) == 0) {
			if (pl->n_ops != 0)
				abort();
			fctl_plan_free(pl);
			pl = NULL;
		}
		if (fctl_state_diff_text(hs, again, o, false) != 0)
			abort();
		fctl_host_state_free(again);
	}
	if (fctl_plan_compute(hs, NULL, &pl) == 0) {
		fctl_plan_to_json(pl, o);
		fctl_plan_free(pl);
	}
	{
		struct fctl_host_state *none = fctl_host_state_new(host);

		if (none) {
			fctl_state_diff_json(none, hs, o);
			fctl_host_state_free(none);
		}
	}
	fctl_host_state_free(hs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a directory that does not exist: relative key ids resolve to nothing */
	static const char name[] = "/nonexistent-fabricctl-fuzz/profile.yaml";
	const char *files[] = { name };
	struct fctl_profile *p = NULL;
	struct fctl_diags d = { 0 };
	struct fctl_buf o = { 0 };

	if (fctl_profile_parse(name, data, size, &d, &p) == 0) {
		fctl_profile_validate(p, &d);
		if (d.n_errors == 0)
			for (size_t i = 0; i < p->n_hosts; i++)
				check_host(p, p->hosts[i].name, &o);
	}
	fctl_diags_sort(&d);
	fctl_diags_to_text(&d, &o, true);
	fctl_diags_to_json(&d, files, 1, &o);
	fctl_diags_to_junit(&d, files, 1, &o);
	fctl_buf_release(&o);
	fctl_profile_free(p);
	fctl_diags_release(&d);
	return 0;
}
