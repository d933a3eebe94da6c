// SPDX-License-Identifier: MIT
/* The MACsec families of a scrape: SecY up and encrypting, SA packet numbers and the
 * used fraction of the PN space, the SecY counters; each family one group. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/nl.h"
#include "metrics_int.h"

struct secy {
	const struct fctl_link *l;
	char set[384]; /* host, link, ifname */
	struct fctl_macsec_stats s;
	bool has_stats;
};

/* The SecY counter families: name (without fabricctl_macsec_ and _total), where in the
 * statistics, help. Octets are bytes in the names, as the naming guide asks. */
struct counter {
	const char *name;
	size_t off;
	const char *help;
};

#define SECY(f) offsetof(struct fctl_macsec_stats, f)
#define RXT(f) (offsetof(struct fctl_macsec_stats, rx_total) + \
		offsetof(struct fctl_macsec_rxsc_stats, f))

static const struct counter counters[] = {
	{ "out_pkts_untagged", SECY(out_pkts_untagged), "OutPktsUntagged: sent without a SecTAG." },
	{ "in_pkts_untagged", SECY(in_pkts_untagged),
	  "InPktsUntagged: received without a SecTAG." },
	{ "out_pkts_too_long", SECY(out_pkts_too_long), "OutPktsTooLong: too long to send." },
	{ "in_pkts_no_tag", SECY(in_pkts_no_tag), "InPktsNoTag: dropped, no SecTAG (strict)." },
	{ "in_pkts_bad_tag", SECY(in_pkts_bad_tag), "InPktsBadTag: invalid SecTAG." },
	{ "in_pkts_unknown_sci", SECY(in_pkts_unknown_sci), "InPktsUnknownSCI: SCI of no RX SC." },
	{ "in_pkts_no_sci", SECY(in_pkts_no_sci), "InPktsNoSCI: dropped, SCI of no RX SC." },
	{ "in_pkts_overrun", SECY(in_pkts_overrun), "InPktsOverrun: dropped, crypto too slow." },
	{ "out_pkts_protected", SECY(out_pkts_protected), "OutPktsProtected: integrity only." },
	{ "out_pkts_encrypted", SECY(out_pkts_encrypted), "OutPktsEncrypted: sent encrypted." },
	{ "out_bytes_protected", SECY(out_octets_protected),
	  "OutOctetsProtected: bytes sent with integrity only." },
	{ "out_bytes_encrypted", SECY(out_octets_encrypted),
	  "OutOctetsEncrypted: bytes sent encrypted." },
	{ "in_bytes_validated", RXT(in_octets_validated),
	  "InOctetsValidated: bytes received with integrity only, over every RX SC." },
	{ "in_bytes_decrypted", RXT(in_octets_decrypted),
	  "InOctetsDecrypted: bytes received and decrypted, over every RX SC." },
	{ "in_pkts_unchecked", RXT(in_pkts_unchecked), "InPktsUnchecked, over every RX SC." },
	{ "in_pkts_delayed", RXT(in_pkts_delayed), "InPktsDelayed, over every RX SC." },
	{ "in_pkts_ok", RXT(in_pkts_ok), "InPktsOK: validated, over every RX SC." },
	{ "in_pkts_invalid", RXT(in_pkts_invalid), "InPktsInvalid, over every RX SC." },
	{ "in_pkts_late", RXT(in_pkts_late), "InPktsLate: replayed or late, over every RX SC." },
	{ "in_pkts_not_valid", RXT(in_pkts_not_valid),
	  "InPktsNotValid: failed validation (strict), over every RX SC." },
	{ "in_pkts_not_using_sa", RXT(in_pkts_not_using_sa),
	  "InPktsNotUsingSA: for an AN with no active SA, over every RX SC." },
	{ "in_pkts_unused_sa", RXT(in_pkts_unused_sa),
	  "InPktsUnusedSA: for an AN with no SA (not strict), over every RX SC." },
};

static bool encrypting(const struct fctl_link *l)
{
	const struct fctl_macsec *m = &l->macsec;
	const struct fctl_sa *tx = &m->txsa[m->encoding_sa % FCTL_MAX_AN];

	return l->up && m->encrypt && m->protect && tx->present && tx->active;
}

static void secy_gauges(const struct secy *v, size_t n, struct fctl_buf *o)
{
	fctl_mx_head(o, "fabricctl_macsec_secy_up", "gauge", "1 when the SecY is up.");
	for (size_t i = 0; i < n; i++)
		fctl_mx_sample_u64(o, "fabricctl_macsec_secy_up", v[i].set, v[i].l->up);
	fctl_mx_head(o, "fabricctl_macsec_secy_encrypting", "gauge",
		     "1 when the SecY is up, protects and encrypts, and its encoding SA is "
		     "present and active.");
	for (size_t i = 0; i < n; i++)
		fctl_mx_sample_u64(o, "fabricctl_macsec_secy_encrypting", v[i].set,
				   encrypting(v[i].l));
	fctl_mx_head(o, "fabricctl_macsec_encoding_sa", "gauge",
		     "The AN of the SecY's encoding (transmit) SA.");
	for (size_t i = 0; i < n; i++)
		fctl_mx_sample_u64(o, "fabricctl_macsec_encoding_sa", v[i].set,
				   v[i].l->macsec.encoding_sa);
	/* an info series (always 1): the offload in its label, to join on the SecY's labels
	 * rather than adding a label to every SecY series */
	fctl_mx_head(o, "fabricctl_macsec_secy_offload_info", "gauge",
		     "Always 1; offload: where the kernel runs the SecY's MACsec (off: in "
		     "software, mac or phy: the NIC).");
	for (size_t i = 0; i < n; i++) {
		char set[512];

		snprintf(set, sizeof(set), "%s", v[i].set);
		fctl_mx_label(set, sizeof(set), "offload",
			      fctl_offload_name(v[i].l->macsec.offload));
		fctl_mx_sample_u64(o, "fabricctl_macsec_secy_offload_info", set, 1);
	}
}

enum sa_what { SA_ACTIVE, SA_NEXT_PN, SA_USED };

static void sa_one(struct fctl_buf *o, const char *name, enum sa_what w, const struct secy *v,
		   const char *dir, uint64_t sci, unsigned an, const struct fctl_sa *sa)
{
	char set[512], s[24], a[4];
	/* the kernel reports the next PN to use: pn - 1 of the space is gone */
	double used = sa->pn ? (double)(sa->pn - 1) : 0.0;
	double space = fctl_cipher_is_xpn(v->l->macsec.cipher) ? 18446744073709551616.0
							       : 4294967296.0;

	snprintf(set, sizeof(set), "%s", v->set);
	fctl_sci_format(sci, s);
	snprintf(a, sizeof(a), "%u", an);
	fctl_mx_label(set, sizeof(set), "dir", dir);
	fctl_mx_label(set, sizeof(set), "sci", s);
	fctl_mx_label(set, sizeof(set), "an", a);
	if (w == SA_ACTIVE)
		fctl_mx_sample_u64(o, name, set, sa->active);
	else if (w == SA_NEXT_PN)
		fctl_mx_sample_u64(o, name, set, sa->pn);
	else
		fctl_mx_sample(o, name, set, used / space);
}

static void sa_family(const struct secy *v, size_t n, enum sa_what w, const char *name,
		      const char *help, struct fctl_buf *o)
{
	fctl_mx_head(o, name, "gauge", help);
	for (size_t i = 0; i < n; i++) {
		const struct fctl_macsec *m = &v[i].l->macsec;

		for (unsigned an = 0; an < FCTL_MAX_AN; an++)
			if (m->txsa[an].present)
				sa_one(o, name, w, &v[i], "tx", m->sci, an, &m->txsa[an]);
		for (size_t k = 0; k < m->n_rxsc; k++)
			for (unsigned an = 0; an < FCTL_MAX_AN; an++)
				if (m->rxsc[k].sa[an].present)
					sa_one(o, name, w, &v[i], "rx", m->rxsc[k].sci, an,
					       &m->rxsc[k].sa[an]);
	}
}

static void counter_families(const struct secy *v, size_t n, struct fctl_buf *o)
{
	for (size_t c = 0; c < FCTL_ARRAY_SIZE(counters); c++) {
		char name[96];

		snprintf(name, sizeof(name), "fabricctl_macsec_%s_total", counters[c].name);
		fctl_mx_head(o, name, "counter", counters[c].help);
		for (size_t i = 0; i < n; i++) {
			uint64_t x;

			if (!v[i].has_stats)
				continue;
			memcpy(&x, (const char *)&v[i].s + counters[c].off, sizeof(x));
			fctl_mx_sample_u64(o, name, v[i].set, x);
		}
	}
}

int fctl_mx_macsec(const struct fctl_metrics_src *src, const struct fctl_mx_links *l,
		   const struct fctl_host_state *live, struct fctl_buf *o)
{
	struct fctl_nl *nl = NULL;
	struct secy *v;
	size_t n = 0;

	v = calloc(live->n_links ? live->n_links : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (fctl_nl_open(src->eo->netns, &nl) < 0)
		nl = NULL;
	for (size_t i = 0; i < live->n_links; i++) {
		const struct fctl_link *k = &live->links[i];

		if (k->kind != FCTL_LINK_MACSEC)
			continue;
		v[n].l = k;
		fctl_mx_link_labels(src, l, k->name, v[n].set, sizeof(v[n].set));
		v[n].has_stats = nl && fctl_nl_read_macsec_stats(nl, k->name, &v[n].s) == 0;
		n++;
	}
	fctl_nl_close(nl);
	secy_gauges(v, n, o);
	sa_family(v, n, SA_ACTIVE, "fabricctl_macsec_sa_active", "1 when the SA is active.", o);
	sa_family(v, n, SA_NEXT_PN, "fabricctl_macsec_sa_next_pn",
		  "The next packet number the SA uses (64-bit with XPN).", o);
	sa_family(v, n, SA_USED, "fabricctl_macsec_sa_pn_usage_ratio",
		  "Fraction of the packet-number space used: (next PN - 1) / 2^32, or 2^64 "
		  "for XPN.", o);
	counter_families(v, n, o);
	free(v);
	return 0;
}
