// SPDX-License-Identifier: MIT
/* DSSE envelopes with Ed25519 signatures: the signed manifest and every in-toto statement. */
#include <errno.h>
#include <string.h>

#include "fctl/audit.h"
#include "evidence_int.h"

int fctl_evidence_dsse(const char *type, const void *payload, size_t len,
		       const char *const *keys, const char (*keyids)[65], size_t nkeys,
		       struct fctl_buf *env, char *err, size_t errlen)
{
	struct fctl_buf pae = { 0 };
	int r = 0;

	fctl_buf_printf(&pae, "DSSEv1 %zu %s %zu ", strlen(type), type, len);
	fctl_buf_append(&pae, payload, len);
	if (pae.oom) {
		fctl_set_err(err, errlen, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	fctl_buf_printf(env, "{\"payloadType\":\"%s\",\"payload\":\"", type); /* a constant */
	fctl_audit_b64_encode(payload, len, env);
	fctl_buf_puts(env, "\",\"signatures\":[");
	for (size_t k = 0; k < nkeys; k++) {
		uint8_t sig[64];

		r = fctl_audit_ed25519_sign(keys[k], pae.data, pae.len, sig, NULL, err, errlen);
		if (r < 0)
			goto out;
		fctl_buf_printf(env, "%s{\"keyid\":\"%s\",\"sig\":\"", k ? "," : "", keyids[k]);
		fctl_audit_b64_encode(sig, sizeof(sig), env);
		fctl_buf_puts(env, "\"}");
	}
	fctl_buf_puts(env, "]}");
	if (env->oom) {
		fctl_set_err(err, errlen, "out of memory");
		r = -ENOMEM;
	}
out:
	fctl_buf_release(&pae);
	return r;
}
