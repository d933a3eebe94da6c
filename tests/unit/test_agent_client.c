// SPDX-License-Identifier: MIT
/* The agent client over real TLS on 127.0.0.1: a kept-open connection survives an error
 * another library left on OpenSSL's error queue between two calls. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "fctl/agent.h"
#include "fctl/proto.h"

struct server {
	int lfd;
	SSL_CTX *ctx;
	int answered;
};

/* A self-signed certificate for IP 127.0.0.1 (the client checks the address). */
static X509 *make_cert(EVP_PKEY **keyp)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509V3_CTX v3;
	X509_EXTENSION *ext;

	assert_non_null(key);
	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
				   (const unsigned char *)"test-agent", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	X509_set_pubkey(x, key);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
	assert_non_null(ext);
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	*keyp = key;
	return x;
}

/* One connection: every request answered with result 0 until the client closes. */
static void *serve(void *arg)
{
	struct server *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	SSL *ssl;

	if (fd < 0)
		return NULL;
	ssl = SSL_new(s->ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) == 1) {
		for (;;) {
			uint8_t hdr[FCTL_PROTO_HDR_LEN], payload[4096];
			struct fctl_proto_hdr h;
			struct fctl_msg m = { .type = FCTL_MSG_RESPONSE, .result = 0,
					      .present = FCTL_HAS_RESULT };
			struct fctl_buf out = { 0 };
			size_t got = 0;

			if (SSL_read_ex(ssl, hdr, sizeof(hdr), &got) != 1 || got != sizeof(hdr) ||
			    fctl_proto_hdr_parse(hdr, sizeof(hdr), 0, &h) < 0 ||
			    h.length > sizeof(payload))
				break;
			if (h.length && (SSL_read_ex(ssl, payload, h.length, &got) != 1 ||
					 got != h.length))
				break;
			m.id = h.id;
			if (fctl_proto_encode(&m, &out) < 0 ||
			    SSL_write_ex(ssl, out.data, out.len, &got) != 1) {
				fctl_buf_release(&out);
				break;
			}
			fctl_buf_release(&out);
			s->answered++;
		}
	}
	SSL_free(ssl);
	close(fd);
	return NULL;
}

static void test_call_after_foreign_error(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	struct server s = { 0 };
	struct fctl_agent_conn *c = NULL;
	EVP_PKEY *key = NULL;
	X509 *cert = make_cert(&key);
	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	char endpoint[64], err[512] = "";
	pthread_t th;

	(void)state;
	s.ctx = SSL_CTX_new(TLS_server_method());
	assert_true(SSL_CTX_use_certificate(s.ctx, cert) == 1);
	assert_true(SSL_CTX_use_PrivateKey(s.ctx, key) == 1);
	assert_true(X509_STORE_add_cert(SSL_CTX_get_cert_store(cctx), cert) == 1);
	SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
	s.lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s.lfd >= 0);
	assert_int_equal(bind(s.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s.lfd, 1), 0);
	assert_int_equal(getsockname(s.lfd, (struct sockaddr *)&a, &al), 0);
	snprintf(endpoint, sizeof(endpoint), "127.0.0.1:%u", ntohs(a.sin_port));
	assert_int_equal(pthread_create(&th, NULL, serve, &s), 0);

	assert_int_equal(fctl_agent_connect(endpoint, cctx, 10, &c, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++) {
		struct fctl_msg req = { .type = FCTL_MSG_STATUS }, resp;
		struct fctl_buf frame = { 0 };
		int r;

		/* what a PKCS#11 module's own OpenSSL calls may leave behind between two
		 * requests on a kept-open connection (keymgr's KMS fetch between phases) */
		if (i > 0)
			ERR_raise_data(ERR_LIB_EVP, EVP_R_BAD_DECRYPT, "left by another library");
		r = fctl_agent_call(c, &req, &resp, &frame, err, sizeof(err));
		if (r != 0)
			fail_msg("call %d: %s (%d)", i, err, r);
		assert_int_equal(resp.type, FCTL_MSG_RESPONSE);
		assert_int_equal(resp.result, 0);
		fctl_buf_release(&frame);
	}
	fctl_agent_conn_free(c);
	pthread_join(th, NULL);
	assert_int_equal(s.answered, 3);
	close(s.lfd);
	SSL_CTX_free(s.ctx);
	SSL_CTX_free(cctx);
	X509_free(cert);
	EVP_PKEY_free(key);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call_after_foreign_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
