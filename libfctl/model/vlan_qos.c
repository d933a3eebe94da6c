// SPDX-License-Identifier: MIT
/* A VLAN's 802.1Q priority maps (struct fctl_vlan_qos): normal form, comparison, text. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/state.h"

static int cmp_map(const void *a, const void *b)
{
	const struct fctl_vlan_qos_map *x = a, *y = b;

	return (x->prio > y->prio) - (x->prio < y->prio);
}

void fctl_vlan_qos_normalize(struct fctl_vlan_qos *q)
{
	size_t n = 0;

	/* a later entry of the same priority wins, as in the kernel: keep the last one */
	for (size_t i = 0; i < q->n_egress; i++) {
		bool later = false;

		for (size_t j = i + 1; j < q->n_egress && !later; j++)
			later = q->egress[j].prio == q->egress[i].prio;
		if (!later && q->egress[i].pcp != 0)
			q->egress[n++] = q->egress[i];
	}
	q->n_egress = (uint8_t)n;
	qsort(q->egress, n, sizeof(q->egress[0]), cmp_map);
}

bool fctl_vlan_qos_equal(const struct fctl_vlan_qos *a, const struct fctl_vlan_qos *b)
{
	if (a->n_egress != b->n_egress || memcmp(a->ingress, b->ingress, sizeof(a->ingress)))
		return false;
	for (size_t i = 0; i < a->n_egress; i++)
		if (a->egress[i].prio != b->egress[i].prio || a->egress[i].pcp != b->egress[i].pcp)
			return false;
	return true;
}

bool fctl_vlan_qos_empty(const struct fctl_vlan_qos *q)
{
	static const uint32_t none[FCTL_VLAN_PCPS];

	return q->n_egress == 0 && memcmp(q->ingress, none, sizeof(none)) == 0;
}

uint8_t fctl_vlan_qos_pcp(const struct fctl_vlan_qos *q, uint32_t prio)
{
	for (size_t i = 0; i < q->n_egress; i++)
		if (q->egress[i].prio == prio)
			return q->egress[i].pcp;
	return 0;
}

void fctl_vlan_qos_format(const struct fctl_vlan_qos *q, struct fctl_buf *out)
{
	bool any = false;

	if (fctl_vlan_qos_empty(q)) {
		fctl_buf_puts(out, "none");
		return;
	}
	if (q->n_egress) {
		fctl_buf_puts(out, "egress");
		for (size_t i = 0; i < q->n_egress; i++)
			fctl_buf_printf(out, " %" PRIu32 ":%u", q->egress[i].prio, q->egress[i].pcp);
	}
	for (unsigned p = 0; p < FCTL_VLAN_PCPS; p++) {
		if (!q->ingress[p])
			continue;
		fctl_buf_printf(out, "%s %u:%" PRIu32, any ? "" : q->n_egress ? ", ingress" : "ingress",
				p, q->ingress[p]);
		any = true;
	}
}

void fctl_vlan_qos_put_tokens(const struct fctl_vlan_qos *q, struct fctl_buf *out)
{
	bool any = false;

	for (size_t i = 0; i < q->n_egress; i++)
		fctl_buf_printf(out, "%s%" PRIu32 ":%u", i ? "," : " egress=", q->egress[i].prio,
				q->egress[i].pcp);
	for (unsigned p = 0; p < FCTL_VLAN_PCPS; p++) {
		if (!q->ingress[p])
			continue;
		fctl_buf_printf(out, "%s%u:%" PRIu32, any ? "," : " ingress=", p, q->ingress[p]);
		any = true;
	}
}

int fctl_vlan_qos_parse_list(const char *s, bool egress, struct fctl_vlan_qos *q)
{
	while (s && *s) {
		char *end;
		unsigned long long a, b;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		a = strtoull(s, &end, 10);
		if (*end != ':' || end[1] < '0' || end[1] > '9')
			return -EINVAL;
		b = strtoull(end + 1, &end, 10);
		if ((*end != ',' && *end != '\0') || a > UINT32_MAX || b > UINT32_MAX)
			return -EINVAL;
		if (egress) {
			if (b >= FCTL_VLAN_PCPS || q->n_egress >= FCTL_VLAN_QOS_MAX)
				return -EINVAL;
			q->egress[q->n_egress].prio = (uint32_t)a;
			q->egress[q->n_egress++].pcp = (uint8_t)b;
		} else {
			if (a >= FCTL_VLAN_PCPS)
				return -EINVAL;
			q->ingress[a] = (uint32_t)b;
		}
		s = *end ? end + 1 : end;
	}
	return 0;
}

void fctl_vlan_qos_to_json(const struct fctl_vlan_qos *q, struct fctl_buf *out)
{
	bool any = false;

	fctl_buf_puts(out, ",\"qos\":{\"egress\":[");
	for (size_t i = 0; i < q->n_egress; i++)
		fctl_buf_printf(out, "%s{\"priority\":%" PRIu32 ",\"pcp\":%u}", i ? "," : "",
				q->egress[i].prio, q->egress[i].pcp);
	fctl_buf_puts(out, "],\"ingress\":[");
	for (unsigned p = 0; p < FCTL_VLAN_PCPS; p++) {
		if (!q->ingress[p])
			continue;
		fctl_buf_printf(out, "%s{\"pcp\":%u,\"priority\":%" PRIu32 "}", any ? "," : "", p,
				q->ingress[p]);
		any = true;
	}
	fctl_buf_puts(out, "]}");
}
