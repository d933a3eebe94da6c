// SPDX-License-Identifier: MIT
/* audit/proofs.json: the range proof of a bundle's window against its checkpoint, and
 * RFC 9162 consistency proofs to it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/audit.h"
#include "evidence_int.h"

static void hash_hex(struct fctl_buf *b, const uint8_t h[32])
{
	char hex[65];

	fctl_format_hex(h, 32, hex);
	fctl_buf_printf(b, "\"%s\"", hex);
}

static void path_json(struct fctl_buf *b, const uint8_t (*path)[32], size_t plen)
{
	fctl_buf_putc(b, '[');
	for (size_t i = 0; i < plen; i++) {
		if (i)
			fctl_buf_putc(b, ',');
		hash_hex(b, path[i]);
	}
	fctl_buf_putc(b, ']');
}

static int consistency(const uint8_t (*leaves)[32], uint64_t size, const uint64_t *from,
		       size_t nfrom, struct fctl_buf *out, char *err, size_t errlen)
{
	uint8_t path[FCTL_AUDIT_PROOF_MAX][32], old[32];
	size_t plen;

	fctl_buf_puts(out, "\"consistency\":[");
	for (size_t i = 0; i < nfrom; i++) {
		if (fctl_audit_consistency_proof(leaves, size, from[i], path, &plen) < 0) {
			snprintf(err, errlen, "no consistency proof from size %" PRIu64 " to the "
				 "checkpoint's %" PRIu64 " (give 1 to %" PRIu64 ")", from[i], size, size);
			return -EINVAL;
		}
		fctl_audit_mth(leaves, from[i], old);
		fctl_buf_printf(out, "%s\n{\"old_size\":%" PRIu64 ",\"tree_size\":%" PRIu64
			       ",\"old_root\":", i ? "," : "", from[i], size);
		hash_hex(out, old);
		fctl_buf_puts(out, ",\"path\":");
		path_json(out, (const uint8_t(*)[32])path, plen);
		fctl_buf_putc(out, '}');
	}
	fctl_buf_puts(out, "]}\n");
	return 0;
}

int fctl_evidence_proofs(const uint8_t (*leaves)[32], uint64_t size, uint64_t first,
			 uint64_t last, const uint64_t *from, size_t nfrom, struct fctl_buf *out,
			 char *err, size_t errlen)
{
	struct fctl_audit_levels t;
	uint8_t nodes[FCTL_AUDIT_PROOF_MAX][32];
	uint64_t lo;
	int r;

	if (first && (first > last || last > size)) {
		snprintf(err, errlen, "records %" PRIu64 "..%" PRIu64 " of the window are past the "
			 "checkpoint (%" PRIu64 " records): sign a checkpoint first", first, last,
			 size);
		return -EINVAL;
	}
	if ((r = fctl_audit_levels_build(leaves, size, &t)) < 0) {
		snprintf(err, errlen, "cannot build the Merkle tree: %s", strerror(-r));
		return r;
	}
	fctl_buf_printf(out, "{\"tree_size\":%" PRIu64 ",\"root\":", size);
	hash_hex(out, t.lv[t.n - 1][0]);
	fctl_buf_printf(out, ",\"first_seq\":%" PRIu64 ",\"last_seq\":%" PRIu64 ",\n\"range\":",
			first, last);
	if (first) {
		/* the leaves from the one before the window (the first record's prev) to the
		 * window's last, and the nodes that close them into the root */
		lo = first > 1 ? first - 2 : 0;
		r = fctl_audit_levels_range(&t, lo, last - 1, nodes);
		fctl_buf_printf(out, "{\"first_index\":%" PRIu64 ",\"last_index\":%" PRIu64
			       ",\"nodes\":", lo, last - 1);
		path_json(out, (const uint8_t(*)[32])nodes, r < 0 ? 0 : (size_t)r);
		fctl_buf_putc(out, '}');
	} else {
		fctl_buf_puts(out, "null");
	}
	fctl_buf_puts(out, ",\n");
	fctl_audit_levels_release(&t);
	r = consistency(leaves, size, from, nfrom, out, err, errlen);
	if (r == 0 && out->oom) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
	}
	return r;
}
