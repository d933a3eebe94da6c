/* SPDX-License-Identifier: MIT */
/* Inside the KMS module: the PKCS#11 and KMIP backends that kms.c registers. */
#ifndef FCTL_KMS_INT_H
#define FCTL_KMS_INT_H

#include "fctl/key_backend.h"

int fctl_pkcs11_fetch(const struct fctl_keyref *ref, size_t want_len, struct fctl_key **out,
		      struct fctl_key_info *info, char *err, size_t errlen);
int fctl_pkcs11_info(const struct fctl_keyref *ref, struct fctl_key_info *out, char *err,
		     size_t errlen);
int fctl_pkcs11_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		       bool activate, struct fctl_key_info *out, char *err, size_t errlen);
int fctl_pkcs11_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			   size_t errlen);

int fctl_kmip_fetch(const struct fctl_keyref *ref, size_t want_len, struct fctl_key **out,
		    struct fctl_key_info *info, char *err, size_t errlen);
int fctl_kmip_info(const struct fctl_keyref *ref, struct fctl_key_info *out, char *err,
		   size_t errlen);
int fctl_kmip_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		     bool activate, struct fctl_key_info *out, char *err, size_t errlen);
int fctl_kmip_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			 size_t errlen);

#endif
