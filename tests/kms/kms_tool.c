// SPDX-License-Identifier: MIT
/*
 * kms_tool: drives the key API of libfctl (fctl_key_create/info/fetch/transition)
 * for tests/kms/kms.sh. Prints metadata and check values, never key bytes.
 *
 *   kms_tool create BACKEND ID VERSION LEN [--activate] [--DATE=UNIX]...
 *   kms_tool info BACKEND ID VERSION
 *   kms_tool fetch BACKEND ID VERSION LEN
 *   kms_tool activate|deactivate|compromise|destroy BACKEND ID VERSION
 * DATE: activation, process-start, protect-stop, deactivation.
 * Exit 0 on success; else 1 and "kms_tool: ERRNAME: reason" on stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/keys.h"
#include "fctl/keysrc.h"
#include "fctl/kms.h"

static int fail(int r, const char *err)
{
	fprintf(stderr, "kms_tool: %s: %s\n", strerrorname_np(-r) ? strerrorname_np(-r) : "?", err);
	return 1;
}

static void print_info(const struct fctl_key_info *in)
{
	printf("state=%s\nversion=%u\nlen=%zu\nobject=%s\n", fctl_key_state_name(in->state),
	       in->version, in->len, in->object);
	if (in->has_kcv)
		printf("kcv=%02x%02x%02x\n", in->kcv[0], in->kcv[1], in->kcv[2]);
	for (unsigned d = 0; d < FCTL_KEY_DATE_COUNT; d++)
		if (in->dates_set & (1u << d))
			printf("%s=%" PRId64 "\n", fctl_key_date_name((enum fctl_key_date)d),
			       in->dates[d]);
}

int main(int argc, char **argv)
{
	static const char *const trans[] = { "activate", "deactivate", "compromise", "destroy" };
	struct fctl_keyref ref = { 0 };
	struct fctl_key_info info = { 0 };
	char err[512] = "";
	uint64_t v;
	int r;

	r = fctl_kms_register();
	if (r < 0) {
		fprintf(stderr, "kms_tool: cannot register the KMS backends: %s\n", strerror(-r));
		return 2;
	}
	if (argc < 5 || fctl_parse_u64(argv[4], &v) < 0 || v > UINT32_MAX) {
		fprintf(stderr, "usage: kms_tool create|info|fetch|activate|deactivate|compromise|"
				"destroy|apply-fetch BACKEND ID VERSION [LEN] [--activate] [--DATE=UNIX]\n");
		return 2;
	}
	ref.backend = argv[2];
	ref.id = argv[3];
	ref.version = (uint32_t)v;
	if (strcmp(argv[1], "info") == 0) {
		r = fctl_key_info(&ref, NULL, &info, err, sizeof(err));
		if (r < 0)
			return fail(r, err);
		print_info(&info);
		return 0;
	}
	if (strcmp(argv[1], "create") == 0 || strcmp(argv[1], "fetch") == 0 ||
	    strcmp(argv[1], "apply-fetch") == 0) {
		struct fctl_key_info plan = { 0 };
		bool activate = false;
		struct fctl_key *k = NULL;
		uint64_t len;

		if (argc < 6 || fctl_parse_u64(argv[5], &len) < 0) {
			fprintf(stderr, "kms_tool: LEN missing\n");
			return 2;
		}
		for (int i = 6; i < argc; i++) {
			bool ok = false;

			if (strcmp(argv[i], "--activate") == 0) {
				activate = ok = true;
				continue;
			}
			for (unsigned d = 0; d < FCTL_KEY_DATE_COUNT; d++) {
				const char *n = fctl_key_date_name((enum fctl_key_date)d);
				size_t nl = strlen(n);
				uint64_t t;

				if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, n, nl) == 0 &&
				    argv[i][2 + nl] == '=' && fctl_parse_u64(argv[i] + 3 + nl, &t) == 0) {
					plan.dates[d] = (int64_t)t;
					plan.dates_set |= 1u << d;
					ok = true;
				}
			}
			if (!ok) {
				fprintf(stderr, "kms_tool: unknown option '%s'\n", argv[i]);
				return 2;
			}
		}
		if (argv[1][0] == 'c') {
			r = fctl_key_create(&ref, (size_t)len, &plan, activate, &info, err,
					    sizeof(err));
			if (r < 0)
				return fail(r, err);
			print_info(&info);
			return 0;
		}
		/* apply-fetch: as fabricctl's apply engine gets it, from $KMS_TOOL_KEYMGR
		 * fetch-sak over a socketpair */
		if (argv[1][0] == 'a')
			r = fctl_keymgr_fetch(getenv("KMS_TOOL_KEYMGR") ? getenv("KMS_TOOL_KEYMGR")
									: "fabricctl-keymgr",
					      &ref, NULL, (size_t)len, &k, err, sizeof(err));
		else
			r = fctl_key_fetch(&ref, NULL, (size_t)len, &k, err, sizeof(err));
		if (r < 0)
			return fail(r, err);
		{
			char kcv[7];

			fctl_key_kcv_hex(k, kcv);
			printf("fetched len=%zu kcv=%s\n", k->len, kcv);
		}
		fctl_key_free(k);
		return 0;
	}
	for (size_t i = 0; i < sizeof(trans) / sizeof(trans[0]); i++)
		if (strcmp(argv[1], trans[i]) == 0) {
			r = fctl_key_transition(&ref, (enum fctl_key_transition)i, err, sizeof(err));
			if (r < 0)
				return fail(r, err);
			printf("%s ok\n", trans[i]);
			return 0;
		}
	fprintf(stderr, "kms_tool: unknown command '%s'\n", argv[1]);
	return 2;
}
