// SPDX-License-Identifier: MIT
/*
 * keymgr's side of the agents: one connection per agent endpoint, shared by every link
 * with an end there; requests never resent (the journal decides); SA dumps parsed into
 * struct km_dump.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/rotation.h"
#include "keymgr.h"

/* --- agent requests: one connection per agent, shared by all links ------------ */

void km_close_conns(struct km *k)
{
	for (size_t i = 0; i < k->n_conns; i++)
		fctl_agent_conn_free(k->conns[i].conn);
	free(k->conns);
	k->conns = NULL;
	k->n_conns = 0;
}

static struct km_conn *conn_of(struct km *k, const char *endpoint)
{
	struct km_conn *c;

	for (size_t i = 0; i < k->n_conns; i++)
		if (strcmp(k->conns[i].endpoint, endpoint) == 0)
			return &k->conns[i];
	c = realloc(k->conns, (k->n_conns + 1) * sizeof(*c));
	if (!c)
		return NULL;
	k->conns = c;
	c = &k->conns[k->n_conns++];
	c->endpoint = endpoint;
	c->conn = NULL;
	return c;
}

int km_call(struct km *k, struct km_end *e, struct fctl_msg *req, struct fctl_buf *out, char *err,
	    size_t errlen)
{
	struct km_conn *c = conn_of(k, e->endpoint);
	struct fctl_buf frame = { 0 };
	struct fctl_msg resp;
	char why[512];
	int r;

	if (!c) {
		snprintf(err, errlen, "%s: out of memory", e->host);
		return -ENOMEM;
	}
	if (!c->conn) {
		r = fctl_agent_connect(e->endpoint, k->tls, k->timeout_s, &c->conn, why,
				       sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "%s (%s): %s", e->host, e->endpoint, why);
			return r;
		}
		k->agent_connects++;
	}
	snprintf(req->ifname, sizeof(req->ifname), "%s", e->ifname);
	req->present |= FCTL_HAS_IFNAME;
	k->agent_requests++;
	r = fctl_agent_call(c->conn, req, &resp, &frame, why, sizeof(why));
	if (r < 0) {
		/* never resent: whether the agent acted is unknown, the journal decides */
		fctl_agent_conn_free(c->conn);
		c->conn = NULL;
		snprintf(err, errlen, "%s (%s): %s", e->host, e->endpoint, why);
	} else if (resp.result != 0) {
		int n = resp.error_len > 400 ? 400 : (int)resp.error_len;

		while (n && (resp.error[n - 1] == '\n'))
			n--;
		snprintf(err, errlen, "%s: %.*s", e->host, n, resp.error ? resp.error : "");
		r = -EIO;
	} else if (out && resp.output_len) {
		fctl_buf_append(out, resp.output, resp.output_len);
		fctl_buf_append(out, "", 1);
		out->len--;
	}
	fctl_buf_release(&frame);
	return r;
}

static int parse_hex16(const char *s, uint8_t out[FCTL_KEYID_LEN])
{
	return fctl_parse_hex(s, out, FCTL_KEYID_LEN);
}

static int parse_dump(const char *text, uint64_t peer_sci, struct km_dump *d)
{
	const char *p = text;

	memset(d, 0, sizeof(*d));
	while (p && *p) {
		char line[512], kid[64];
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		unsigned an, act, u;
		uint64_t sci, pn, a1, a2, a3, a4, a5;
		uint32_t v;
		int got;

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), p);
		p = nl ? nl + 1 : NULL;
		if (sscanf(line, "secy %*s sci %*x encoding_sa %u", &u) == 1) {
			d->encoding_sa = u;
		} else if (sscanf(line, "tx an %u active %u pn %" SCNu64 " keyid %63s", &an, &act, &pn,
				  kid) == 4 && an < FCTL_MAX_AN) {
			d->tx[an].present = true;
			d->tx[an].active = act;
			d->tx[an].pn = pn;
			parse_hex16(kid, d->tx[an].keyid);
		} else if (sscanf(line, "rxsc sci %" SCNx64 " active %u not_valid %" SCNu64
				  " not_using_sa %" SCNu64 " unused_sa %" SCNu64 " invalid %" SCNu64,
				  &sci, &act, &a1, &a2, &a3, &a4) == 6 && sci == peer_sci) {
			d->sc_not_valid = a1;
			d->sc_not_using_sa = a2;
			d->sc_unused_sa = a3;
			d->sc_invalid = a4;
		} else if (sscanf(line, "rx sci %" SCNx64 " an %u active %u pn %" SCNu64
				  " keyid %63s ok %" SCNu64 " not_valid %" SCNu64 " not_using_sa %" SCNu64
				  " unused_sa %" SCNu64 " invalid %" SCNu64, &sci, &an, &act, &pn, kid,
				  &a1, &a2, &a3, &a4, &a5) == 10 && an < FCTL_MAX_AN && sci == peer_sci) {
			struct km_sa *s = &d->rx[an];

			s->present = true;
			s->active = act;
			s->pn = pn;
			parse_hex16(kid, s->keyid);
			s->ok = a1;
			s->not_valid = a2;
			s->not_using_sa = a3;
			s->unused_sa = a4;
			s->invalid = a5;
		} else if ((got = sscanf(line, "rotation an %u version %" SCNu32 " busy %" SCNu64
					 " keyid %63s", &an, &v, &pn, kid)) >= 3 && an < FCTL_MAX_AN) {
			d->has_rotation = true;
			d->rot.an = (uint8_t)an;
			d->rot.version = v;
			d->rot.busy_until = pn;
			d->rot.has_keyid = got == 4 && parse_hex16(kid, d->rot.keyid) == 0;
		}
	}
	return 0;
}

uint32_t km_end_version(const struct km_link *l, const struct km_dump *d)
{
	/* the agent's record only when it belongs to this key reference (docs/rotation.md) */
	return d->has_rotation && fctl_rotation_applies(&l->ref, &d->rot) ? d->rot.version
									 : l->ref.version;
}

int km_dump_link(struct km *k, struct km_link *l, struct km_dump d[2], char *err, size_t errlen)
{
	for (int i = 0; i < 2; i++) {
		struct fctl_msg m = { .type = FCTL_MSG_SA_DUMP };
		struct fctl_buf o = { 0 };
		int r = km_call(k, &l->end[i], &m, &o, err, errlen);

		if (r == 0)
			parse_dump(o.data ? o.data : "", l->end[i].peer_sci, &d[i]);
		fctl_buf_release(&o);
		if (r < 0)
			return r;
	}
	return 0;
}
