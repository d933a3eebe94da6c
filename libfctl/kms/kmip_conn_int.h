/* SPDX-License-Identifier: MIT */
/* KMIP transport shared by the kmip key backend: configuration, TLS connection, exchange. */
#ifndef FCTL_KMIP_CONN_INT_H
#define FCTL_KMIP_CONN_INT_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "kmip_int.h"

/* KMIP Operation enumeration values of the operations fabricctl sends. */
enum {
	OP_CREATE = 0x01,
	OP_LOCATE = 0x08,
	OP_GET = 0x0A,
	OP_GET_ATTRIBUTES = 0x0B,
	OP_ACTIVATE = 0x12,
	OP_REVOKE = 0x13,
	OP_DESTROY = 0x14,
};

struct kmip_cfg {
	char host[256];
	char port[16];
	char ca[1024], cert[1024], key[1024];
	int timeout_ms;
	int major, minor;
};

struct kmip_conn {
	const struct kmip_cfg *cfg;
	SSL_CTX *ctx;
	SSL *ssl;
	int fd;
};

/* A parsed response; buf may hold key bytes: fctl_keys_secure_alloc() pages, wiped on release. */
struct kmip_resp {
	uint8_t *buf;
	size_t len;
	struct fctl_ttlv_doc doc;
	const struct fctl_ttlv *payload;
};

/* Wipes and unmaps the response buffer, and zeroes r. */
void fctl_kmip_resp_release(struct kmip_resp *r);

/* Fills c from FCTL_KMIP_SERVER, _CA, _CERT, _KEY, _TIMEOUT_MS and _VERSION (defaults for
 * those unset); -EINVAL with the reason in err for a value out of range. */
int fctl_kmip_cfg_load(struct kmip_cfg *c, char *err, size_t errlen);

/* Connects to the server of cfg (kept by pointer: it must outlive c) within its timeout:
 * TCP, then a TLS 1.2+ handshake with the client certificate, the server's certificate
 * checked against the CA and the host name or address. On failure c is closed and err
 * says why. */
int fctl_kmip_conn_open(struct kmip_conn *c, const struct kmip_cfg *cfg, char *err,
			size_t errlen);
/* Best-effort TLS shutdown, never waits; frees the session and closes the socket. Safe on
 * a connection already closed. */
void fctl_kmip_conn_close(struct kmip_conn *c);

/* Starts a request of one batch item for operation op in e, opened down to its Request
 * Payload: the caller adds the payload, fctl_kmip_exchange() closes it. */
void fctl_kmip_req_begin(struct fctl_ttlv_enc *e, const struct kmip_cfg *cfg, uint32_t op);

/* Sends the request in e (closing it, then releasing e) and reads, parses and checks the
 * response within the timeout: one batch item answering op with a success status. 0 with
 * *out the response (release it with fctl_kmip_resp_release()). A refusal by the server is
 * mapped from its Result Reason (-ENOKEY, -EACCES, -EOPNOTSUPP, -EPERM, -EINVAL, -EPROTO), a
 * malformed answer is -EPROTO, a transport failure keeps its errno; err says why. */
int fctl_kmip_exchange(struct kmip_conn *c, struct fctl_ttlv_enc *e, uint32_t op,
		       struct kmip_resp *out, char *err, size_t errlen);

#endif
