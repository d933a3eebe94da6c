// SPDX-License-Identifier: MIT
/*
 * A VLAN's `qos:` section: the 802.1Q priority maps of the VLAN device (egress: skb
 * priority -> PCP, ingress: PCP -> skb priority) and the RoCE shorthand, checked
 * (types, ranges, duplicates, a shorthand that contradicts a map) with file:line:col.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "profile_sections_int.h"

#define QERR(file, d, n, code, ...)                                                                \
	fctl_diag_add(d, FCTL_SEV_ERROR, file, (n)->line, (n)->col, code, NULL, __VA_ARGS__)

/* A plain whole number in min..max, or a finding. */
static int qos_num(const char *file, struct fctl_diags *d, const struct ynode *n, const char *what,
		   uint64_t max, uint64_t *out)
{
	uint64_t v;
	int r;

	if (n->type != YNODE_SCALAR || !n->plain) {
		QERR(file, d, n, "wrong-type", "'%s' is not a number; expected 0..%" PRIu64, what,
		     max);
		return -EINVAL;
	}
	r = fctl_parse_u64(n->str, &v);
	if (r < 0 || v > max) {
		QERR(file, d, n, r == -EINVAL ? "wrong-type" : "out-of-range",
		     "'%s' is %.32s; expected 0..%" PRIu64, what, n->str, max);
		return -ERANGE;
	}
	*out = v;
	return 0;
}

static void parse_map(const char *file, struct fctl_diags *d, const struct ynode *m, bool egress,
		      struct fctl_vlan_qos *q, bool seen[FCTL_VLAN_PCPS])
{
	const char *kwhat = egress ? "qos.egress key (skb priority)" : "qos.ingress key (PCP)";
	const char *vwhat = egress ? "qos.egress value (PCP)" : "qos.ingress value (skb priority)";

	if (m->type != YNODE_MAP) {
		QERR(file, d, m, "wrong-type", "'qos.%s' is %s; expected a map such as { 3: 3 }",
		     egress ? "egress" : "ingress", fctl_ynode_type_name(m->type));
		return;
	}
	for (size_t i = 0; i < ymap_len(m); i++) {
		const struct ynode *k = m->kids[2 * i], *v = m->kids[2 * i + 1];
		uint64_t a, b;
		bool dup = false;

		if (qos_num(file, d, k, kwhat, egress ? UINT32_MAX : FCTL_VLAN_PCPS - 1, &a) < 0 ||
		    qos_num(file, d, v, vwhat, egress ? FCTL_VLAN_PCPS - 1 : UINT32_MAX, &b) < 0)
			continue;
		if (!egress) {
			dup = seen[a];
			seen[a] = true;
		}
		for (size_t j = 0; egress && j < q->n_egress && !dup; j++)
			dup = q->egress[j].prio == a;
		if (dup) {
			QERR(file, d, k, "duplicate", "'qos.%s' maps %" PRIu64 " twice",
			     egress ? "egress" : "ingress", a);
			continue;
		}
		if (egress && q->n_egress >= FCTL_QOS_PROFILE_MAX) {
			QERR(file, d, k, "too-many", "'qos.egress' has more than %d mappings",
			     FCTL_QOS_PROFILE_MAX);
			return;
		}
		if (egress) {
			q->egress[q->n_egress].prio = (uint32_t)a;
			q->egress[q->n_egress++].pcp = (uint8_t)b;
		} else {
			q->ingress[a] = (uint32_t)b;
		}
	}
}

static bool parse_roce(const char *file, struct fctl_diags *d, const struct ynode *n)
{
	if (n->type == YNODE_SCALAR && n->plain && strcmp(n->str, "true") == 0)
		return true;
	if (n->type == YNODE_SCALAR && n->plain && strcmp(n->str, "false") == 0)
		return false;
	QERR(file, d, n, "wrong-type", "'qos.roce' is not true or false");
	return false;
}

/* The shorthand adds egress R -> R and ingress R -> R (R = PCP 3) unless a map says
 * otherwise, which is an error: the shorthand and the map would disagree. */
static void apply_roce(const char *file, struct fctl_diags *d, const struct ynode *n,
		       struct fctl_vlan *v, const bool seen[FCTL_VLAN_PCPS])
{
	struct fctl_vlan_qos *q = &v->qos;
	bool have = false;

	for (size_t i = 0; i < q->n_egress; i++) {
		if (q->egress[i].prio != FCTL_QOS_ROCE_PCP)
			continue;
		have = true;
		if (q->egress[i].pcp != FCTL_QOS_ROCE_PCP)
			QERR(file, d, n, "conflict",
			     "'qos.roce' maps skb priority %d to PCP %d; 'qos.egress' maps it to %u",
			     FCTL_QOS_ROCE_PCP, FCTL_QOS_ROCE_PCP, q->egress[i].pcp);
	}
	if (!have && q->n_egress < FCTL_QOS_PROFILE_MAX) {
		q->egress[q->n_egress].prio = FCTL_QOS_ROCE_PCP;
		q->egress[q->n_egress++].pcp = FCTL_QOS_ROCE_PCP;
	}
	if (!seen[FCTL_QOS_ROCE_PCP])
		q->ingress[FCTL_QOS_ROCE_PCP] = FCTL_QOS_ROCE_PCP;
	else if (q->ingress[FCTL_QOS_ROCE_PCP] != FCTL_QOS_ROCE_PCP)
		QERR(file, d, n, "conflict",
		     "'qos.roce' maps PCP %d to skb priority %d; 'qos.ingress' maps it to %" PRIu32,
		     FCTL_QOS_ROCE_PCP, FCTL_QOS_ROCE_PCP, q->ingress[FCTL_QOS_ROCE_PCP]);
}

void fctl_profile_qos_parse(const char *file, struct fctl_diags *d, const struct ynode *n,
			    struct fctl_vlan *v)
{
	static const char *const keys[] = { "egress", "ingress", "roce" };
	const struct ynode *roce = NULL;
	bool seen[FCTL_VLAN_PCPS] = { false };

	v->pos_qos.line = n->line;
	v->pos_qos.col = n->col;
	if (n->type != YNODE_MAP) {
		QERR(file, d, n, "wrong-type", "'qos' is %s; expected a map",
		     fctl_ynode_type_name(n->type));
		return;
	}
	for (size_t i = 0; i < ymap_len(n); i++) {
		const struct ynode *k = n->kids[2 * i], *val = n->kids[2 * i + 1];
		size_t j = 0;

		while (j < FCTL_ARRAY_SIZE(keys) &&
		       (k->type != YNODE_SCALAR || strcmp(k->str, keys[j]) != 0))
			j++;
		if (j == FCTL_ARRAY_SIZE(keys))
			fctl_diag_add(d, FCTL_SEV_ERROR, file, k->line, k->col, "unknown-key",
				      "qos takes egress, ingress and roce",
				      "unknown key '%.64s' in qos",
				      k->type == YNODE_SCALAR ? k->str : "?");
		else if (j == 2)
			roce = val;
		else
			parse_map(file, d, val, j == 0, &v->qos, seen);
	}
	if (roce && parse_roce(file, d, roce)) {
		v->qos_roce = true;
		apply_roce(file, d, roce, v, seen);
	}
	fctl_vlan_qos_normalize(&v->qos);
}
