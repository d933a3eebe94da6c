// SPDX-License-Identifier: MIT
/* keymgr's approval gate: a rotation names keys from a profile version, which must carry
 * the approvals this machine's policy requires (docs/approvals.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fctl/approvals.h"
#include "fctl/audit.h"
#include "keymgr.h"

/* whether b are the bytes the profile was parsed from */
static bool parsed_from(const struct fctl_profile *p, const struct fctl_buf *b)
{
	unsigned char md[32];

	return EVP_Digest(b->data ? b->data : "", b->len, md, NULL, EVP_sha256(), NULL) == 1 &&
	       CRYPTO_memcmp(md, p->sha256, 32) == 0;
}

int km_approvals_gate(struct km *k, const char *cmd)
{
	struct fctl_approval_policy pol = { 0 };
	struct fctl_approvals ap = { 0 };
	struct fctl_buf b = { 0 }, t = { 0 };
	const struct fctl_profile *p = k->profile;
	const char *conf = getenv("FCTL_APPROVALS_CONF");
	char err[1024] = "", why[1536];
	int r = fctl_approval_policy_load(conf && *conf ? conf : NULL, &pol, err, sizeof(err));

	if (r == 0)
		return 0; /* no policy on this machine */
	if (r > 0) {
		r = fctl_file_read(p->file, &b);
		if (r < 0)
			snprintf(err, sizeof(err), "%s: %s", p->file, strerror(-r));
		else if (!parsed_from(p, &b)) {
			snprintf(err, sizeof(err), "%s changed while it was read", p->file);
			r = -ESTALE;
		}
	}
	if (r >= 0)
		r = fctl_approvals_check(p->file, b.data, b.len, &pol, time(NULL), &ap, err,
					 sizeof(err));
	if (r >= 0 && !ap.met) {
		fctl_approvals_text(&ap, &t);
		snprintf(err, sizeof(err), "%s", t.data ? t.data : "NOT approved");
		r = -EACCES;
	}
	if (r < 0) {
		snprintf(why, sizeof(why), "%s version %" PRIu64 " (%s): %s", p->name ? p->name : "?",
			 p->version, p->file, err);
		fprintf(stderr, "fabricctl-keymgr: %s: refused: %s; nothing rotated\n", cmd, why);
		if (k->audit) {
			struct fctl_audit_entry e = { .action = "key-rotation", .result = "refused",
						      .profile_name = p->name ? p->name : "unnamed",
						      .profile_version = p->version, .error = why };

			if (fctl_audit_append(k->audit, &e) < 0 || fctl_audit_sync(k->audit) < 0)
				fprintf(stderr, "fabricctl-keymgr: audit: %s\n",
					fctl_audit_error(k->audit));
		}
	}
	fctl_approvals_release(&ap);
	fctl_buf_release(&b);
	fctl_buf_release(&t);
	return r < 0 ? r : 0;
}
