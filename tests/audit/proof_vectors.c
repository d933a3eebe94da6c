// SPDX-License-Identifier: MIT
/* Prints the library's RFC 9162 proofs over a log's leaves, for tests/audit/proofs.py. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "fctl/audit.h"

static void hashes(const uint8_t (*p)[32], size_t n)
{
	char hex[65];

	for (size_t i = 0; i < n; i++) {
		fctl_format_hex(p[i], 32, hex);
		printf("%s\"%s\"", i ? "," : "", hex);
	}
}

/* usage: proof_vectors LOG MAXSIZE: one JSON line per proof; consistency pairs every
 * (m, n) with n <= 64, and for larger n the m the python side names by its rule */
int main(int argc, char **argv)
{
	uint8_t (*leaves)[32] = NULL, path[FCTL_AUDIT_PROOF_MAX][32], root[32], old[32];
	uint64_t n = 0, max;
	size_t plen;
	char hex[65];

	if (argc != 3 || fctl_audit_leaves(argv[1], &leaves, &n) < 0)
		return 2;
	max = strtoull(argv[2], NULL, 10);
	if (max > n)
		return 2;
	const uint8_t (*lv)[32] = (const uint8_t(*)[32])leaves;

	for (uint64_t size = 1; size <= max; size++) {
		fctl_audit_mth(lv, size, root);
		fctl_format_hex(root, 32, hex);
		for (uint64_t i = 0; i < size; i++) {
			if (fctl_audit_inclusion_proof(lv, size, i, path, &plen) < 0)
				return 1;
			printf("{\"t\":\"i\",\"leaf_index\":%" PRIu64 ",\"tree_size\":%" PRIu64
			       ",\"root\":\"%s\",\"ok\":%d,\"path\":[", i, size, hex,
			       fctl_audit_inclusion_check(i, size, lv[i], (const uint8_t(*)[32])path,
							  plen, root));
			hashes((const uint8_t(*)[32])path, plen);
			puts("]}");
		}
		for (uint64_t m = 1; m <= size; m++) {
			char ohex[65];

			if (!(size <= 64 || m <= 3 || m + 2 >= size || !(m & (m - 1)) ||
			      (m * 7 + size) % 29 == 0))
				continue;
			if (fctl_audit_consistency_proof(lv, size, m, path, &plen) < 0)
				return 1;
			fctl_audit_mth(lv, m, old);
			fctl_format_hex(old, 32, ohex);
			printf("{\"t\":\"c\",\"old_size\":%" PRIu64 ",\"tree_size\":%" PRIu64
			       ",\"old_root\":\"%s\",\"root\":\"%s\",\"ok\":%d,\"path\":[", m, size, ohex,
			       hex, fctl_audit_consistency_check(m, size, old, root,
								 (const uint8_t(*)[32])path, plen));
			hashes((const uint8_t(*)[32])path, plen);
			puts("]}");
		}
	}
	free(leaves);
	return 0;
}
