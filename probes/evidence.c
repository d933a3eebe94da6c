// SPDX-License-Identifier: MIT
/*
 * The evidence a probe gathers on its own end: RDMA counter deltas (hw_counters)
 * and the MACsec SecY under the RDMA device: configured and up, encrypting, an
 * active transmit SA, OutPktsEncrypted growing, nothing refused on receive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog.h"

static int read_config(struct evidence *ev, struct fctl_nl *nl)
{
	const char *names[1] = { ev->netdev };
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *l;
	int ret;

	ret = fctl_nl_read_state(nl, "local", names, 1, &hs);
	if (ret < 0) {
		snprintf(ev->ms.err, sizeof(ev->ms.err), "cannot read '%s': %s", ev->netdev,
			 strerror(-ret));
		return ret;
	}
	l = fctl_host_state_find(hs, ev->netdev);
	ev->ms.checked = true;
	if (l && l->kind == FCTL_LINK_MACSEC) {
		ev->ms.is_macsec = true;
		ev->ms.up = l->up;
		ev->ms.encrypt = l->macsec.encrypt;
		ev->encoding_sa = l->macsec.encoding_sa;
		ev->ms.tx_sa_active = ev->encoding_sa < FCTL_MAX_AN &&
				      l->macsec.txsa[ev->encoding_sa].present &&
				      l->macsec.txsa[ev->encoding_sa].active;
	}
	fctl_host_state_free(hs);
	return 0;
}

void evidence_begin(struct evidence *ev, struct fctl_nl *nl, const char *dev, uint8_t port,
		    const char *netdev)
{
	int ret;

	memset(ev, 0, sizeof(*ev));
	snprintf(ev->dev, sizeof(ev->dev), "%s", dev);
	snprintf(ev->netdev, sizeof(ev->netdev), "%s", netdev);
	snprintf(ev->ms.ifname, sizeof(ev->ms.ifname), "%s", netdev);
	ev->port = port;
	ret = fctl_rdma_counters_read(dev, port, &ev->before);
	ev->ctr_ok = ret >= 0;
	if (ret < 0)
		snprintf(ev->ctr_err, sizeof(ev->ctr_err), "cannot read the hw_counters of '%s': %s",
			 dev, strerror(-ret));
	if (!netdev[0]) {
		snprintf(ev->ms.err, sizeof(ev->ms.err), "no network device under '%s'", dev);
		return;
	}
	if (!nl) {
		snprintf(ev->ms.err, sizeof(ev->ms.err), "no netlink socket");
		return;
	}
	if (read_config(ev, nl) < 0 || !ev->ms.is_macsec)
		return;
	ret = fctl_nl_read_macsec_stats(nl, netdev, &ev->ms_before);
	if (ret < 0) {
		ev->ms.checked = false;
		snprintf(ev->ms.err, sizeof(ev->ms.err), "cannot read the MACsec counters of '%s': %s",
			 netdev, strerror(-ret));
	}
}

static uint64_t d64(uint64_t a, uint64_t b)
{
	return a >= b ? a - b : 0;
}

void evidence_end(struct evidence *ev, struct fctl_nl *nl, struct probe_end *out)
{
	struct fctl_rdma_counters *after, *delta;
	char host[64] = "";

	gethostname(host, sizeof(host) - 1);
	snprintf(out->host, sizeof(out->host), "%s", host);
	snprintf(out->dev, sizeof(out->dev), "%s", ev->dev);
	snprintf(out->netdev, sizeof(out->netdev), "%s", ev->netdev);
	out->counters_ok = ev->ctr_ok;
	snprintf(out->counters_err, sizeof(out->counters_err), "%s", ev->ctr_err);
	after = calloc(1, sizeof(*after));
	delta = calloc(1, sizeof(*delta));
	if (ev->ctr_ok && after && delta) {
		int ret = fctl_rdma_counters_read(ev->dev, ev->port, after);

		if (ret < 0) {
			out->counters_ok = false;
			snprintf(out->counters_err, sizeof(out->counters_err),
				 "cannot read the hw_counters of '%s': %s", ev->dev, strerror(-ret));
		} else {
			fctl_rdma_counters_delta(&ev->before, after, delta);
			for (size_t i = 0; i < delta->n; i++)
				probe_end_add_counter(out, delta->c[i].name, delta->c[i].value);
		}
	} else if (ev->ctr_ok) {
		out->counters_ok = false;
		snprintf(out->counters_err, sizeof(out->counters_err), "out of memory");
	}
	free(after);
	free(delta);

	out->ms = ev->ms;
	if (ev->ms.checked && ev->ms.is_macsec && nl) {
		struct fctl_macsec_stats *s = calloc(1, sizeof(*s));
		const struct fctl_macsec_stats *b = &ev->ms_before;
		int ret = s ? fctl_nl_read_macsec_stats(nl, ev->netdev, s) : -ENOMEM;

		if (ret < 0) {
			out->ms.checked = false;
			snprintf(out->ms.err, sizeof(out->ms.err),
				 "cannot read the MACsec counters of '%s': %s", ev->netdev,
				 strerror(-ret));
		} else {
			/* every transmit SA: the encoding one may have changed during the run */
			out->ms.out_pkts_encrypted = probe_encrypted_delta(b, s);
			out->ms.in_pkts_not_valid = d64(s->rx_total.in_pkts_not_valid,
							b->rx_total.in_pkts_not_valid);
			out->ms.in_pkts_invalid = d64(s->rx_total.in_pkts_invalid,
						      b->rx_total.in_pkts_invalid);
			out->ms.in_pkts_late = d64(s->rx_total.in_pkts_late, b->rx_total.in_pkts_late);
			out->ms.in_pkts_no_sci = d64(s->in_pkts_no_sci, b->in_pkts_no_sci);
			out->ms.in_pkts_unknown_sci = d64(s->in_pkts_unknown_sci, b->in_pkts_unknown_sci);
		}
		free(s);
	}
}
