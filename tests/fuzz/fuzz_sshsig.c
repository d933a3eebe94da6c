// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: what approvals read from files anyone may write (a pulled
 * ConfigMap, a repository): an armored SSHSIG signature and an allowed_signers file.
 * A signature that parses is verified over a fixed message (it must fail, and not
 * crash); the input is also read as allowed_signers text.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fctl/approvals.h"
#include "fctl/sshsig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fctl_signers ss;
	struct fctl_sshsig s;
	char err[512];

	if (fctl_sshsig_parse((const char *)data, size, &s, err, sizeof(err)) == 0 &&
	    fctl_sshsig_verify(&s, FCTL_APPROVALS_NAMESPACE, "m", 1, err, sizeof(err)) == 0)
		abort(); /* a forgery over "m" from fuzzed bytes: impossible */
	if (fctl_signers_parse("fuzz", (const char *)data, size, &ss, err, sizeof(err)) == 0)
		fctl_signers_release(&ss);
	return 0;
}
