/* SPDX-License-Identifier: MIT */
/* Private to approve/: the SSH wire reader and writer, base64, the signed bytes. */
#ifndef FCTL_APPROVE_INT_H
#define FCTL_APPROVE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/util.h"

/* a reader over SSH wire data: uint32 big-endian, string = uint32 length + bytes */
struct fctl_apri_rd {
	const uint8_t *p;
	size_t n;
};

int fctl_apri_get_u32(struct fctl_apri_rd *r, uint32_t *v);
int fctl_apri_get_str(struct fctl_apri_rd *r, const uint8_t **p, size_t *len);
void fctl_apri_put_str(struct fctl_buf *b, const void *p, size_t len);
/* base64 (whitespace ignored) into out (reset first); -EBADMSG when not base64 */
int fctl_apri_b64_decode(const char *in, size_t len, struct fctl_buf *out);
void fctl_apri_b64_encode(const uint8_t *p, size_t len, bool padded, struct fctl_buf *out);
/* the bytes an SSHSIG signature is made over (PROTOCOL.sshsig) */
int fctl_apri_signed_data(const char *ns, const char *hashalg, const void *msg, size_t len,
			  struct fctl_buf *out);

#endif
