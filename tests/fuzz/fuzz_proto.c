// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the agent protocol decoder (untrusted bytes from the network).
 * Whatever decodes must re-encode, and the re-encoded frame must decode to the
 * same message (the decoder accepts nothing the encoder cannot produce).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fctl_proto_hdr h;
	struct fctl_msg m, m2;
	struct fctl_buf b = { 0 };
	char why[160];

	(void)fctl_proto_hdr_parse(data, size, 0, &h);
	if (fctl_proto_decode(data, size, 0, &m, why, sizeof(why)) < 0)
		return 0;
	if (fctl_proto_encode(&m, &b) < 0)
		abort();
	if (fctl_proto_decode((const uint8_t *)b.data, b.len, 0, &m2, why, sizeof(why)) < 0)
		abort();
	if (m2.type != m.type || m2.id != m.id || m2.present != m.present ||
	    m2.profile_len != m.profile_len || m2.output_len != m.output_len ||
	    m2.error_len != m.error_len || strcmp(m2.host, m.host) != 0 ||
	    m2.sigs_len != m.sigs_len)
		abort();
	/* signature records: each one a plain file name, together exactly the value */
	if (m.present & FCTL_HAS_SIGS) {
		struct fctl_proto_sig sg;
		size_t off = 0;

		while (fctl_proto_sig_next(&m, &off, &sg) == 1)
			if (!fctl_proto_sig_name_ok(sg.name, strlen(sg.name)) || strchr(sg.name, '/'))
				abort();
		if (off != m.sigs_len)
			abort();
	}
	fctl_buf_release(&b);
	return 0;
}
