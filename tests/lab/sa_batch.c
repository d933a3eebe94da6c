// SPDX-License-Identifier: MIT
/*
 * Sends one hand-made sa-batch request to an agent (tests/lab/rekey_regress.sh): the SA
 * operations a test wants, back to back in one frame, as keymgr never sends them.
 *
 *   sa_batch ENDPOINT IFNAME < SCRIPT
 *
 * ENDPOINT: "unix:PATH" (root on the agent's Unix socket: the local role). SCRIPT has
 * one operation a line, all sent in order as one sa-batch:
 *
 *   dump
 *   rx-install AN SCI KEYFILE KEYID      (PN 1, active)
 *   tx-stage AN KEYFILE KEYID            (PN 1, inactive)
 *   switch AN VERSION KEYID
 *   encoding AN VERSION KEYID
 *   retire AN [SCI] [KEYID]              (with SCI: the RX SA of that SC, else the TX SA;
 *                                         with KEYID: only an SA holding that key)
 *
 * SCI and KEYID in hex (16 and 32 digits); KEYFILE holds the key in hex (keys never in
 * argv). Prints the agent's output ("op I ok" / "op I failed: WHY" lines, dumps), its
 * error text on stderr. Exit: the response's result (0 all ok, 1 some failed), 2 when
 * the request could not be made.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/agent.h"
#include "fctl/proto.h"
#include "fctl/util.h"

#define MAX_OPS 64

struct rec {
	struct fctl_msg m;
	uint8_t key[32], keyid[16];
};

static int read_key(const char *path, struct rec *r)
{
	char hex[80] = "";
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(hex, 1, sizeof(hex) - 1, f);
	fclose(f);
	while (n && (hex[n - 1] == '\n' || hex[n - 1] == ' '))
		hex[--n] = 0;
	if ((n != 32 && n != 64) || fctl_parse_hex(hex, r->key, n / 2) < 0) {
		fctl_memzero(hex, sizeof(hex));
		return -EINVAL;
	}
	fctl_memzero(hex, sizeof(hex));
	r->m.key = r->key;
	r->m.key_len = (uint32_t)(n / 2);
	r->m.pn = 1;
	r->m.present |= FCTL_HAS_KEY | FCTL_HAS_PN;
	return 0;
}

static int keyid(const char *s, struct rec *r)
{
	if (strlen(s) != 32 || fctl_parse_hex(s, r->keyid, 16) < 0)
		return -EINVAL;
	r->m.keyid = r->keyid;
	r->m.present |= FCTL_HAS_KEYID;
	return 0;
}

static int sci(const char *s, struct rec *r)
{
	char *end;

	r->m.sci = strtoull(s, &end, 16);
	r->m.present |= FCTL_HAS_SCI;
	return strlen(s) == 16 && !*end ? 0 : -EINVAL;
}

/* One script line into r: 0, or -EINVAL. */
static int parse_line(char *line, struct rec *r)
{
	char *w[6] = { 0 }, *save = NULL;
	int n = 0;

	for (char *t = strtok_r(line, " \t\n", &save); t && n < 6; t = strtok_r(NULL, " \t\n", &save))
		w[n++] = t;
	if (n == 0)
		return 1; /* blank */
	memset(r, 0, sizeof(*r));
	if (n >= 2) {
		r->m.an = (uint32_t)atoi(w[1]);
		r->m.present |= FCTL_HAS_AN;
	}
	if (strcmp(w[0], "dump") == 0 && n == 1) {
		r->m.type = FCTL_MSG_SA_DUMP;
		return 0;
	}
	if (strcmp(w[0], "rx-install") == 0 && n == 5) {
		r->m.type = FCTL_MSG_RXSA_INSTALL;
		return sci(w[2], r) || read_key(w[3], r) || keyid(w[4], r) ? -EINVAL : 0;
	}
	if (strcmp(w[0], "tx-stage") == 0 && n == 4) {
		r->m.type = FCTL_MSG_TXSA_STAGE;
		return read_key(w[2], r) || keyid(w[3], r) ? -EINVAL : 0;
	}
	if ((strcmp(w[0], "switch") == 0 || strcmp(w[0], "encoding") == 0) && n == 4) {
		r->m.type = w[0][0] == 's' ? FCTL_MSG_TXSA_SWITCH : FCTL_MSG_ENCODING_SA;
		r->m.key_version = (uint32_t)strtoul(w[2], NULL, 10);
		r->m.present |= FCTL_HAS_KEY_VERSION;
		return keyid(w[3], r);
	}
	if (strcmp(w[0], "retire") == 0 && n >= 2 && n <= 4) {
		r->m.type = FCTL_MSG_SA_RETIRE;
		for (int i = 2; i < n; i++)
			if ((strlen(w[i]) == 16 ? sci(w[i], r) : keyid(w[i], r)) < 0)
				return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

int main(int argc, char **argv)
{
	static struct rec recs[MAX_OPS];
	struct fctl_msg req = { .type = FCTL_MSG_SA_BATCH, .present = FCTL_HAS_SA_OPS }, resp;
	struct fctl_buf ops = { 0 }, frame = { 0 };
	struct fctl_agent_conn *c = NULL;
	char line[512], err[512] = "";
	size_t n = 0;
	int r, rc = 2, lno = 0;

	if (argc != 3 || strlen(argv[2]) > 15) {
		fprintf(stderr, "usage: sa_batch ENDPOINT IFNAME < SCRIPT\n");
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		lno++;
		if (n == MAX_OPS) {
			fprintf(stderr, "sa_batch: stdin:%d: more than %d operations\n", lno, MAX_OPS);
			goto out;
		}
		r = parse_line(line, &recs[n]);
		if (r < 0) {
			fprintf(stderr, "sa_batch: stdin:%d: cannot parse this operation\n", lno);
			goto out;
		}
		if (r > 0)
			continue;
		snprintf(recs[n].m.ifname, sizeof(recs[n].m.ifname), "%s", argv[2]);
		recs[n].m.present |= FCTL_HAS_IFNAME;
		r = fctl_proto_sa_op_put(&recs[n].m, &ops);
		if (r < 0) {
			fprintf(stderr, "sa_batch: stdin:%d: cannot encode: %s\n", lno, strerror(-r));
			goto out;
		}
		n++;
	}
	if (!n) {
		fprintf(stderr, "sa_batch: no operations on stdin\n");
		goto out;
	}
	r = fctl_agent_connect(argv[1], NULL, 30, &c, err, sizeof(err));
	if (r == 0) {
		req.sa_ops = (const uint8_t *)ops.data;
		req.sa_ops_len = (uint32_t)ops.len;
		r = fctl_agent_call(c, &req, &resp, &frame, err, sizeof(err));
	}
	if (r < 0) {
		fprintf(stderr, "sa_batch: %s: %s\n", argv[1], err);
		goto out;
	}
	fwrite(resp.output, 1, resp.output_len, stdout);
	if (resp.error_len)
		fprintf(stderr, "%.*s", (int)resp.error_len, resp.error);
	rc = resp.result == 0 ? 0 : 1;
out:
	fctl_agent_conn_free(c);
	if (ops.data)
		fctl_memzero(ops.data, ops.len);
	fctl_buf_release(&ops);
	fctl_buf_release(&frame);
	fctl_memzero(recs, sizeof(recs));
	return rc;
}
