// SPDX-License-Identifier: MIT
/*
 * RDMA endpoint: device, PD, CQ, RC QP and one buffer; the parameters the two
 * ends exchange and the QP state changes. libibverbs returns positive errno
 * values (or NULL with errno set): they become negative errnos here, once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "fctl/rdma.h"
#include "fctl/util.h"
#include "rdma_int.h"

static const char *const test_names[FCTL_RDMA_N_TESTS] = {
	[FCTL_RDMA_SEND_LAT] = "send_lat", [FCTL_RDMA_WRITE_LAT] = "write_lat",
	[FCTL_RDMA_READ_LAT] = "read_lat", [FCTL_RDMA_SEND_BW] = "send_bw",
	[FCTL_RDMA_WRITE_BW] = "write_bw", [FCTL_RDMA_READ_BW] = "read_bw",
};

const char *fctl_rdma_test_name(enum fctl_rdma_test t)
{
	return (unsigned)t < FCTL_RDMA_N_TESTS ? test_names[t] : "?";
}

int fctl_rdma_test_from_name(const char *s, enum fctl_rdma_test *out)
{
	for (int i = 0; i < FCTL_RDMA_N_TESTS; i++) {
		if (strcmp(s, test_names[i]) == 0) {
			*out = (enum fctl_rdma_test)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool fctl_rdma_test_is_lat(enum fctl_rdma_test t)
{
	return t == FCTL_RDMA_SEND_LAT || t == FCTL_RDMA_WRITE_LAT || t == FCTL_RDMA_READ_LAT;
}

unsigned fctl_rdma_test_rtt_factor(enum fctl_rdma_test t)
{
	return t == FCTL_RDMA_READ_LAT ? 1 : 2;
}

bool fctl_rdma_test_server_active(enum fctl_rdma_test t)
{
	return t == FCTL_RDMA_SEND_LAT || t == FCTL_RDMA_WRITE_LAT || t == FCTL_RDMA_SEND_BW;
}

void fctl_rdma_opts_default(struct fctl_rdma_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ib_port = 1;
	o->gid_index = -1;
	o->timeout = 14; /* perftest's default */
	o->retry_cnt = 7;
	o->rnr_retry = 7;
	o->tx_depth = 128;
	o->max_size = 65536;
}

int fctl_rdma_qpinfo_format(const struct fctl_rdma_qpinfo *q, char out[FCTL_RDMA_QPINFO_LEN])
{
	char gid[33];

	fctl_format_hex(q->gid, 16, gid);
	snprintf(out, FCTL_RDMA_QPINFO_LEN, "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":%08x:%s:%u",
		 q->lid, q->out_reads, q->qpn & 0xffffff, q->psn & 0xffffff, q->rkey, q->vaddr,
		 q->srqn, gid, q->mtu);
	return 0;
}

/* Exactly n lowercase hex digits, then sep (none when sep is NUL). */
static int hex_field(const char **s, unsigned n, char sep, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned i = 0; i < n; i++) {
		char c = (*s)[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (d < 0)
			return -EINVAL;
		x = x << 4 | (uint64_t)d;
	}
	if (sep && (*s)[n] != sep)
		return -EINVAL;
	*s += n + (sep ? 1 : 0);
	*v = x;
	return 0;
}

int fctl_rdma_qpinfo_parse(const char *s, struct fctl_rdma_qpinfo *out)
{
	struct fctl_rdma_qpinfo q = { 0 };
	uint64_t v[7], g;
	static const unsigned widths[7] = { 4, 4, 6, 6, 8, 16, 8 };
	char *end;
	unsigned long mtu;

	for (int i = 0; i < 7; i++)
		if (hex_field(&s, widths[i], ':', &v[i]) < 0)
			return -EINVAL;
	for (int i = 0; i < 16; i++) {
		if (hex_field(&s, 2, i == 15 ? ':' : '\0', &g) < 0)
			return -EINVAL;
		q.gid[i] = (uint8_t)g;
	}
	if (*s < '1' || *s > '5')
		return -EINVAL;
	errno = 0;
	mtu = strtoul(s, &end, 10);
	if (errno || *end || mtu < IBV_MTU_256 || mtu > IBV_MTU_4096)
		return -EINVAL;
	q.lid = (uint16_t)v[0];
	q.out_reads = (uint16_t)v[1];
	q.qpn = (uint32_t)v[2];
	q.psn = (uint32_t)v[3];
	q.rkey = (uint32_t)v[4];
	q.vaddr = v[5];
	q.srqn = (uint32_t)v[6];
	q.mtu = (uint32_t)mtu;
	*out = q;
	return 0;
}

/* libibverbs: a positive errno return, or 0. */
static int verbs_err(int ret)
{
	return ret > 0 ? -ret : ret < 0 ? ret : 0;
}

/* NULL-returning libibverbs calls set errno. */
static int verbs_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

static bool gid_is_ipv4(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g->raw, prefix, sizeof(prefix)) == 0;
}

static int pick_gid(struct fctl_rdma_ep *ep, int want, char *err, size_t errlen)
{
	struct ibv_gid_entry e;
	int first_v2 = -1, best = -1;

	if (want >= 0) {
		if (want >= ep->port_attr.gid_tbl_len ||
		    ibv_query_gid_ex(ep->ctx, ep->ib_port, (uint32_t)want, &e, 0) != 0) {
			fctl_set_err(err, errlen, "device '%s' port %u has no GID %d", ep->dev_name,
				ep->ib_port, want);
			return -ENOENT;
		}
		best = want;
	} else {
		for (int i = 0; i < ep->port_attr.gid_tbl_len; i++) {
			if (ibv_query_gid_ex(ep->ctx, ep->ib_port, (uint32_t)i, &e, 0) != 0)
				continue;
			if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
				continue;
			if (first_v2 < 0)
				first_v2 = i;
			if (gid_is_ipv4(&e.gid)) {
				best = i;
				break;
			}
		}
		if (best < 0)
			best = first_v2;
		if (best < 0 || ibv_query_gid_ex(ep->ctx, ep->ib_port, (uint32_t)best, &e, 0) != 0) {
			fctl_set_err(err, errlen,
				"device '%s' port %u has no RoCE v2 GID (no IP address on its network "
				"device?): give --gid-index",
				ep->dev_name, ep->ib_port);
			return -ENOENT;
		}
	}
	ep->gid_index = best;
	memcpy(ep->gid, e.gid.raw, 16);
	if (!e.ndev_ifindex || !if_indextoname(e.ndev_ifindex, ep->netdev))
		ep->netdev[0] = '\0';
	return 0;
}

struct fctl_rdma_ep *fctl_rdma_ep_alloc(const struct fctl_rdma_opts *o, char *err, size_t errlen)
{
	struct fctl_rdma_ep *ep;

	if (o->max_size == 0 || o->max_size > FCTL_RDMA_MAX_SIZE || o->tx_depth == 0 ||
	    o->tx_depth > 4096 || o->retry_cnt > 7 || o->rnr_retry > 7 || o->timeout > 31) {
		fctl_set_err(err, errlen, "invalid RDMA options");
		errno = EINVAL;
		return NULL;
	}
	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		fctl_set_err(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	ep->ib_port = o->ib_port ? o->ib_port : 1;
	ep->opts = *o;
	ep->buf = MAP_FAILED;
	return ep;
}

int fctl_rdma_ep_setup(struct fctl_rdma_ep *ep, char *err, size_t errlen)
{
	struct rdma_cm_id *cm_id = ep->cm_id;
	const struct fctl_rdma_opts *o = &ep->opts;
	struct ibv_device_attr attr;
	int ret;

	ret = verbs_err(ibv_query_device(ep->ctx, &attr));
	if (ret == 0)
		ret = verbs_err(ibv_query_port(ep->ctx, ep->ib_port, &ep->port_attr));
	if (ret < 0) {
		fctl_set_err(err, errlen, "cannot query RDMA device '%s' port %u: %s", ep->dev_name,
			ep->ib_port, strerror(-ret));
		return ret;
	}
	if (ep->port_attr.state != IBV_PORT_ACTIVE) {
		fctl_set_err(err, errlen, "RDMA device '%s' port %u is not active (%s)", ep->dev_name,
			ep->ib_port, ibv_port_state_str(ep->port_attr.state));
		return -ENETDOWN;
	}
	ret = pick_gid(ep, o->gid_index, err, errlen);
	if (ret < 0)
		return ret;
	ep->out_reads = attr.max_qp_rd_atom < 16 ? (uint16_t)attr.max_qp_rd_atom : 16;
	if (ep->out_reads == 0)
		ep->out_reads = 1;
	ep->depth = o->tx_depth;
	if ((int)ep->depth > attr.max_qp_wr)
		ep->depth = (uint32_t)attr.max_qp_wr;

	ep->buf_len = 2 * (size_t)o->max_size;
	ep->buf = mmap(NULL, ep->buf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ep->buf == MAP_FAILED) {
		ret = -errno;
		fctl_set_err(err, errlen, "cannot allocate %zu bytes: %s", ep->buf_len, strerror(-ret));
		return ret;
	}
	ep->pd = ibv_alloc_pd(ep->ctx);
	if (!ep->pd) {
		ret = verbs_errno();
		fctl_set_err(err, errlen, "cannot allocate a protection domain: %s", strerror(-ret));
		return ret;
	}
	ep->mr = ibv_reg_mr(ep->pd, ep->buf, ep->buf_len,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!ep->mr) {
		ret = verbs_errno();
		fctl_set_err(err, errlen, "cannot register %zu bytes of memory: %s", ep->buf_len,
			strerror(-ret));
		return ret;
	}
	ep->comp_ch = ibv_create_comp_channel(ep->ctx);
	if (!ep->comp_ch) {
		ret = verbs_errno();
		fctl_set_err(err, errlen, "cannot create a completion channel: %s", strerror(-ret));
		return ret;
	}
	ret = fcntl(ep->comp_ch->fd, F_GETFL);
	if (ret < 0 || fcntl(ep->comp_ch->fd, F_SETFL, ret | O_NONBLOCK) < 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "cannot make the completion channel non-blocking: %s",
			strerror(-ret));
		return ret;
	}
	/* the loops spin on the CQ first and only block on the channel after a while
	 * (rdma_run.c, wait_step) */
	ep->cq = ibv_create_cq(ep->ctx, (int)(2 * ep->depth + 2), NULL, ep->comp_ch, 0);
	if (!ep->cq) {
		ret = verbs_errno();
		fctl_set_err(err, errlen, "cannot create a completion queue: %s", strerror(-ret));
		return ret;
	}
	{
		struct ibv_qp_init_attr ia = {
			.send_cq = ep->cq,
			.recv_cq = ep->cq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = ep->depth,
				 .max_recv_wr = ep->depth,
				 .max_send_sge = 1,
				 .max_recv_sge = 1,
				 .max_inline_data = 220 },
		};
		struct ibv_qp_init_attr ia0 = ia;

		if (cm_id) { /* the id owns the QP (rdma_destroy_qp in fctl_rdma_ep_free) */
			if (rdma_create_qp(cm_id, ep->pd, &ia) != 0) {
				ia = ia0;
				ia.cap.max_inline_data = 0;
				rdma_create_qp(cm_id, ep->pd, &ia);
			}
			ep->qp = cm_id->qp;
		} else {
			ep->qp = ibv_create_qp(ep->pd, &ia);
			if (!ep->qp) {
				ia = ia0;
				ia.cap.max_inline_data = 0;
				ep->qp = ibv_create_qp(ep->pd, &ia);
			}
		}
		if (!ep->qp) {
			ret = verbs_errno();
			fctl_set_err(err, errlen, "cannot create an RC queue pair: %s", strerror(-ret));
			return ret;
		}
		ep->max_inline = ia.cap.max_inline_data;
	}
	ep->psn = (uint32_t)(((uint64_t)getpid() * 2654435761u) ^ (uintptr_t)ep) & 0xffffff;
	return 0;
}

int fctl_rdma_ep_new(const struct fctl_rdma_opts *o, struct fctl_rdma_ep **out, char *err,
		     size_t errlen)
{
	struct ibv_device **list = NULL;
	struct ibv_device *dev = NULL;
	struct fctl_rdma_ep *ep;
	int n = 0, ret;
	char names[128] = "";

	ep = fctl_rdma_ep_alloc(o, err, errlen);
	if (!ep)
		return -errno;
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		fctl_set_err(err, errlen,
			"no RDMA device (load rdma_rxe and run 'rdma link add rxe0 type rxe netdev "
			"DEV', or check the driver)");
		ret = -ENODEV;
		goto fail;
	}
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (strlen(names) + strlen(name) + 3 < sizeof(names))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", name);
		if (!dev && (!o->dev || strcmp(o->dev, name) == 0))
			dev = list[i];
	}
	if (!dev) {
		fctl_set_err(err, errlen, "no RDMA device '%s' (devices: %s)", o->dev, names);
		ret = -ENODEV;
		goto fail;
	}
	snprintf(ep->dev_name, sizeof(ep->dev_name), "%s", ibv_get_device_name(dev));
	ep->ctx = ibv_open_device(dev);
	if (!ep->ctx) {
		ret = verbs_errno();
		fctl_set_err(err, errlen, "cannot open RDMA device '%s': %s", ep->dev_name, strerror(-ret));
		goto fail;
	}
	ret = fctl_rdma_ep_setup(ep, err, errlen);
	if (ret < 0)
		goto fail;
	ibv_free_device_list(list);
	*out = ep;
	return 0;
fail:
	if (list)
		ibv_free_device_list(list);
	fctl_rdma_ep_free(ep);
	return ret;
}

void fctl_rdma_ep_free(struct fctl_rdma_ep *ep)
{
	if (!ep)
		return;
	if (ep->cm_id) {
		if (ep->cm_id->qp) {
			rdma_disconnect(ep->cm_id); /* tells the peer; harmless when not connected */
			rdma_destroy_qp(ep->cm_id);
		}
	} else if (ep->qp) {
		ibv_destroy_qp(ep->qp);
	}
	if (ep->cq)
		ibv_destroy_cq(ep->cq); /* every event taken was acked at once (rdma_run.c) */
	if (ep->comp_ch)
		ibv_destroy_comp_channel(ep->comp_ch); /* after its CQ: EBUSY before */
	if (ep->mr)
		ibv_dereg_mr(ep->mr);
	if (ep->pd)
		ibv_dealloc_pd(ep->pd);
	if (ep->buf != MAP_FAILED && ep->buf)
		munmap(ep->buf, ep->buf_len);
	if (ep->cm_id)
		rdma_destroy_id(ep->cm_id); /* its context belongs to librdmacm */
	else if (ep->ctx)
		ibv_close_device(ep->ctx);
	if (ep->cm_ch)
		rdma_destroy_event_channel(ep->cm_ch);
	free(ep);
}

void fctl_rdma_ep_info(const struct fctl_rdma_ep *ep, struct fctl_rdma_qpinfo *out)
{
	memset(out, 0, sizeof(*out));
	out->lid = ep->port_attr.lid;
	out->out_reads = ep->out_reads;
	out->qpn = ep->qp->qp_num;
	out->psn = ep->psn;
	out->rkey = ep->mr->rkey;
	out->vaddr = (uint64_t)(uintptr_t)ep->buf;
	out->srqn = 0;
	memcpy(out->gid, ep->gid, 16);
	out->mtu = ep->port_attr.active_mtu;
}

const char *fctl_rdma_ep_dev_name(const struct fctl_rdma_ep *ep)
{
	return ep->dev_name;
}

const char *fctl_rdma_ep_netdev(const struct fctl_rdma_ep *ep)
{
	return ep->netdev;
}

int fctl_rdma_ep_gid_index(const struct fctl_rdma_ep *ep)
{
	return ep->gid_index;
}

int fctl_rdma_ep_connect(struct fctl_rdma_ep *ep, const struct fctl_rdma_qpinfo *rem, char *err,
			 size_t errlen)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = ep->ib_port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	ret = verbs_err(ibv_modify_qp(ep->qp, &a,
				      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS));
	if (ret < 0) {
		fctl_set_err(err, errlen, "queue pair to INIT: %s", strerror(-ret));
		return ret;
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)(rem->mtu < ep->port_attr.active_mtu ? rem->mtu
									: ep->port_attr.active_mtu);
	a.dest_qp_num = rem->qpn;
	a.rq_psn = rem->psn;
	a.max_dest_rd_atomic = (uint8_t)(rem->out_reads < ep->out_reads ? rem->out_reads
									 : ep->out_reads);
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.dlid = rem->lid;
	a.ah_attr.port_num = ep->ib_port;
	memcpy(a.ah_attr.grh.dgid.raw, rem->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)ep->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	ret = verbs_err(ibv_modify_qp(ep->qp, &a,
				      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER));
	if (ret < 0) {
		fctl_set_err(err, errlen, "queue pair to RTR (ready to receive): %s", strerror(-ret));
		return ret;
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = ep->opts.timeout;
	a.retry_cnt = ep->opts.retry_cnt;
	a.rnr_retry = ep->opts.rnr_retry;
	a.sq_psn = ep->psn;
	a.max_rd_atomic = (uint8_t)(rem->out_reads < ep->out_reads ? rem->out_reads : ep->out_reads);
	ret = verbs_err(ibv_modify_qp(ep->qp, &a,
				      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					      IBV_QP_MAX_QP_RD_ATOMIC));
	if (ret < 0) {
		fctl_set_err(err, errlen, "queue pair to RTS (ready to send): %s", strerror(-ret));
		return ret;
	}
	ep->remote = *rem;
	return 0;
}
