// SPDX-License-Identifier: MIT
/* The engine's kernel session: every kernel write of fabricctl, and fctl_engine_sa_write,
 * the one place every SA write passes through (fctl/engine_kernel.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "fctl/keys.h"
#include "fctl/nl.h"

#include "engine_int.h"

int fctl_engine_kernel_open(const struct fctl_engine_ops *ops, void *ctx, const char *netns,
			    struct fctl_engine_kernel **out)
{
	struct fctl_engine_kernel *k = calloc(1, sizeof(*k));
	int r;

	if (!k)
		return -ENOMEM;
	k->ops = ops ? ops : &fctl_engine_nl_ops;
	r = k->ops->open(ctx, netns, &k->sess);
	if (r < 0) {
		free(k);
		return r;
	}
	*out = k;
	return 0;
}

void fctl_engine_kernel_close(struct fctl_engine_kernel *k)
{
	if (!k)
		return;
	if (k->sess)
		k->ops->close(k->sess);
	free(k);
}

struct fctl_nl *fctl_engine_kernel_nl(const struct fctl_engine_kernel *k)
{
	return k && k->ops == &fctl_engine_nl_ops ? k->sess : NULL;
}

bool fctl_engine_op_is_sa_write(const struct fctl_op *op)
{
	switch (op->kind) {
	case FCTL_OP_TXSA_ADD:
	case FCTL_OP_TXSA_UPD:
	case FCTL_OP_TXSA_DEL:
	case FCTL_OP_RXSA_ADD:
	case FCTL_OP_RXSA_UPD:
	case FCTL_OP_RXSA_DEL:
		return true;
	case FCTL_OP_LINK_CHANGE:
		return op->link.kind == FCTL_LINK_MACSEC && (op->changes & FCTL_CHG_ENCODING_SA);
	default:
		return false;
	}
}

/* Issue 28's packet-number checks belong here, before the table's exec: nothing else
 * reaches it for an SA write. */
int fctl_engine_sa_write(struct fctl_engine_kernel *k, const struct fctl_op *op,
			 const struct fctl_key *key, struct fctl_nl_err *err)
{
	if (!fctl_engine_op_is_sa_write(op)) {
		if (err) {
			err->err = -EINVAL;
			err->extack[0] = '\0';
			snprintf(err->msg, sizeof(err->msg), "%s %s: not an SA write",
				 fctl_op_kind_name(op->kind), op->ifname);
		}
		return -EINVAL;
	}
	return k->ops->exec(k->sess, op, key ? key->bytes : NULL, key ? key->len : 0, err);
}

int fctl_engine_kernel_exec(struct fctl_engine_kernel *k, const struct fctl_op *op,
			    const struct fctl_key *key, struct fctl_nl_err *err)
{
	if (fctl_engine_op_is_sa_write(op))
		return fctl_engine_sa_write(k, op, key, err);
	return k->ops->exec(k->sess, op, key ? key->bytes : NULL, key ? key->len : 0, err);
}

int fctl_engine_kernel_neigh_copy(struct fctl_engine_kernel *k, const char *from,
				  const char *to, const uint8_t (*macs)[6], size_t n_macs,
				  struct fctl_nl_err *err)
{
	if (!k->ops->neigh_copy)
		return -EOPNOTSUPP;
	return k->ops->neigh_copy(k->sess, from, to, macs, n_macs, err);
}
