/* SPDX-License-Identifier: MIT */
/* What the agent client asks of the TLS session cache (tls_cache.c) for one connection. */
#ifndef FCTL_TLS_INT_H
#define FCTL_TLS_INT_H

struct ssl_st;

/*
 * Before the handshake of ssl (a client of a context with a cache attached,
 * fctl_tls_cache_attach): names the connection's cache entry (endpoint), so that the
 * ticket the agent sends replaces it, and sets the entry's session when it may be offered:
 * TLS 1.3, resumable, not expired, and its server certificate verifies now against the
 * context's trust store (CRLs included) as a certificate of host, the name or address
 * dialled. Returns 1 (a session offered), 0 (none: a full handshake; also without a cache)
 * or -ENOMEM.
 */
int fctl_tls_cache_offer(struct ssl_st *ssl, const char *endpoint, const char *host);

#endif
