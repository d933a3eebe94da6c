// SPDX-License-Identifier: MIT
/* The engine's real kernel: its operations table on fctl_nl, the only caller of fctl_nl's
 * writes (fctl_nl_exec, fctl_nl_neigh_copy). See struct fctl_engine_ops. */
#include "fctl/engine.h"
#include "fctl/nl.h"

static int nl_open(void *ctx, const char *netns, void **sess)
{
	struct fctl_nl *nl;
	int r = fctl_nl_open(netns, &nl);

	if (r < 0)
		return r;
	*sess = nl;
	return r;
}

static void nl_close(void *sess)
{
	fctl_nl_close(sess);
}

static int nl_read_state(void *sess, const char *host, const char *const *names, size_t n_names,
			 struct fctl_host_state **out)
{
	return fctl_nl_read_state(sess, host, names, n_names, out);
}

static int nl_exec(void *sess, const struct fctl_op *op, const uint8_t *key, size_t key_len,
		   struct fctl_nl_err *err)
{
	return fctl_nl_exec(sess, op, key, key_len, err);
}

static int nl_exec_batch(void *sess, const struct fctl_op *const *ops, const uint8_t *const *keys,
			 const size_t *key_lens, size_t n, int *rc, struct fctl_nl_err *errs)
{
	return fctl_nl_exec_batch(sess, ops, keys, key_lens, n, rc, errs);
}

static void nl_get_stats(const void *sess, struct fctl_nl_stats *out)
{
	fctl_nl_get_stats(sess, out);
}

static int nl_link_exists(void *sess, const char *name)
{
	return fctl_nl_link_exists(sess, name);
}

static int nl_neigh_copy(void *sess, const char *from, const char *to, const uint8_t (*macs)[6],
			 size_t n_macs, struct fctl_nl_err *err)
{
	return fctl_nl_neigh_copy(sess, from, to, macs, n_macs, err);
}

static int nl_dcb_get(void *sess, const char *port, struct fctl_dcb *out)
{
	return fctl_nl_dcb_get(sess, port, out);
}

const struct fctl_engine_ops fctl_engine_nl_ops = {
	.open = nl_open,
	.close = nl_close,
	.read_state = nl_read_state,
	.exec = nl_exec,
	.exec_batch = nl_exec_batch,
	.get_stats = nl_get_stats,
	.link_exists = nl_link_exists,
	.neigh_copy = nl_neigh_copy,
	.dcb_get = nl_dcb_get,
};
