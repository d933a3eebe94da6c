// SPDX-License-Identifier: MIT
/* The KMS backends' tables and their registration with the key module (fctl/kms.h). */
#include <stddef.h>

#include "fctl/kms.h"
#include "kms_int.h"

/* a KMS resolves its own names: the profile directory means nothing to it */
static int pkcs11_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
			struct fctl_key **out, struct fctl_key_info *info, char *err, size_t errlen)
{
	return fctl_pkcs11_fetch(ref, want_len, out, info, err, errlen);
}

static int pkcs11_info(const struct fctl_keyref *ref, const char *base_dir,
		       struct fctl_key_info *out, char *err, size_t errlen)
{
	return fctl_pkcs11_info(ref, out, err, errlen);
}

static int kmip_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		      struct fctl_key **out, struct fctl_key_info *info, char *err, size_t errlen)
{
	return fctl_kmip_fetch(ref, want_len, out, info, err, errlen);
}

static int kmip_info(const struct fctl_keyref *ref, const char *base_dir, struct fctl_key_info *out,
		     char *err, size_t errlen)
{
	return fctl_kmip_info(ref, out, err, errlen);
}

static const struct fctl_key_backend pkcs11_backend = {
	.name = "pkcs11",
	.needs_version = true,
	.fetch = pkcs11_fetch,
	.info = pkcs11_info,
	.create = fctl_pkcs11_create,
	.transition = fctl_pkcs11_transition,
};

static const struct fctl_key_backend kmip_backend = {
	.name = "kmip",
	.needs_version = true,
	.fetch = kmip_fetch,
	.info = kmip_info,
	.create = fctl_kmip_create,
	.transition = fctl_kmip_transition,
};

int fctl_kms_register(void)
{
	int r = fctl_key_backend_register(&pkcs11_backend);

	return r < 0 ? r : fctl_key_backend_register(&kmip_backend);
}
