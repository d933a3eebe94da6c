/* SPDX-License-Identifier: MIT */
/* Inside fctl_rdma: the endpoint, shared by rdma.c and rdma_run.c. */
#ifndef FCTL_RDMA_INT_H
#define FCTL_RDMA_INT_H

#include <net/if.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "fctl/rdma.h"

struct fctl_rdma_ep {
	struct fctl_rdma_opts opts;
	char dev_name[64];
	char netdev[IF_NAMESIZE];
	uint8_t ib_port;
	int gid_index;
	uint8_t gid[16];
	uint16_t out_reads;
	uint32_t depth;
	uint32_t max_inline;
	uint32_t psn;
	uint32_t recvs_posted; /* receives posted and not yet completed */
	struct ibv_port_attr port_attr;
	struct ibv_context *ctx; /* owned unless cm_id (then cm_id->verbs) */
	struct rdma_cm_id *cm_id; /* rdma_cm: the connected id (owns the QP) */
	struct rdma_event_channel *cm_ch;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *comp_ch; /* the CQ's completion events; fd non-blocking */
	struct ibv_cq *cq;
	bool cq_armed; /* ibv_req_notify_cq called and its event not yet taken */
	struct ibv_qp *qp;
	/* [0, max_size): the peer writes here and receives land here;
	 * [max_size, 2 * max_size): what this end sends, writes and lets the peer read */
	uint8_t *buf;
	size_t buf_len;
	struct fctl_rdma_qpinfo remote;
};

/* rdma.c: the resources on ep->ctx; with ep->cm_id (set by the caller, owned by the
 * endpoint from then on) the QP is created through the id. */
int fctl_rdma_ep_setup(struct fctl_rdma_ep *ep, char *err, size_t errlen);
struct fctl_rdma_ep *fctl_rdma_ep_alloc(const struct fctl_rdma_opts *o, char *err, size_t errlen);

#endif
