// SPDX-License-Identifier: MIT
/* The MACsec encryption counter of a probe run, across changes of the encoding SA. */
#include "probe.h"

uint64_t probe_encrypted_delta(const struct fctl_macsec_stats *before,
			       const struct fctl_macsec_stats *after)
{
	uint64_t sum = 0;
	bool any = false;

	for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
		const struct fctl_macsec_sa_stats *b = &before->txsa[an], *a = &after->txsa[an];

		if (!a->present)
			continue;
		any = true;
		/* installed during the run (new, or the AN reused for a new key): from zero */
		if (!b->present || a->out_pkts_encrypted < b->out_pkts_encrypted)
			sum += a->out_pkts_encrypted;
		else
			sum += a->out_pkts_encrypted - b->out_pkts_encrypted;
	}
	if (any)
		return sum;
	/* no transmit SA left to read: the TX SC's counter (0 when it went backwards: the
	 * SecY was created again) */
	return after->out_pkts_encrypted >= before->out_pkts_encrypted
		       ? after->out_pkts_encrypted - before->out_pkts_encrypted
		       : 0;
}
