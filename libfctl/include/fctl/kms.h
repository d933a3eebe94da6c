/* SPDX-License-Identifier: MIT */
/*
 * The KMS backends (fctl_kms): "pkcs11" (a dlopen'd PKCS#11 module) and "kmip" (KMIP
 * over TLS with client certificates), configured from the environment (docs/kms.md).
 *
 * Only fabricctl-keymgr and the KMS tests link this module and call
 * fctl_kms_register(): the KMS credentials stay with keymgr, and the apply path of
 * fabricctl and the agent gets its keys from keymgr (fctl/keysrc.h). The build checks
 * that the fabricctl binary holds none of this (tests/boundary/kms_boundary.sh).
 */
#ifndef FCTL_KMS_H
#define FCTL_KMS_H

/* Registers both backends with the key module (fctl/key_backend.h), after which
 * fctl_key_fetch() and friends reach the KMS for pkcs11/kmip references. Call it at
 * the start of main. 0, also on a second call; negative errno. */
int fctl_kms_register(void);

#endif
