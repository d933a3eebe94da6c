// SPDX-License-Identifier: MIT
/* The text files every evidence bundle carries: verify.sh and VERIFY.md, embedded from the
 * files beside this one (CMakeLists.txt). verify.sh needs only openssl, jq, sha256sum, tar and
 * bash (docs/audit.md). */
#include "fctl/evidence.h"

const char fctl_evidence_verify_sh[] = {
#include "verify_sh.inc"
	0
};

const char fctl_evidence_verify_md[] = {
#include "verify_md.inc"
	0
};
