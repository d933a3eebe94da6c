// SPDX-License-Identifier: MIT
/*
 * rdma_cm connection setup (librdmacm): the alternative to the TCP exchange.
 * Each end's buffer (rkey, vaddr, size) travels in the connection's private
 * data (fctl_rdma_cm_pdata, 24 bytes: RC private data over RoCE holds 56).
 * Every event is waited for with poll() on the channel's descriptor and a
 * deadline; every error path destroys the QP, the ids and the channel.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fctl/util.h"
#include "rdma_int.h"

#define PDATA_MAGIC "FCM1"

void fctl_rdma_cm_pdata_encode(const struct fctl_rdma_cm_pdata *d,
			       uint8_t out[FCTL_RDMA_CM_PDATA_LEN])
{
	memset(out, 0, FCTL_RDMA_CM_PDATA_LEN);
	memcpy(out, PDATA_MAGIC, 4);
	fctl_put_be(out + 4, d->rkey, 4);
	fctl_put_be(out + 8, d->vaddr, 8);
	fctl_put_be(out + 16, d->size, 4);
	fctl_put_be(out + 20, d->out_reads, 2);
}

int fctl_rdma_cm_pdata_decode(const void *buf, size_t len, struct fctl_rdma_cm_pdata *out)
{
	const uint8_t *p = buf;
	struct fctl_rdma_cm_pdata d;

	if (!buf || len < FCTL_RDMA_CM_PDATA_LEN || memcmp(p, PDATA_MAGIC, 4) != 0 ||
	    p[22] || p[23])
		return -EINVAL;
	d.rkey = (uint32_t)fctl_get_be(p + 4, 4);
	d.vaddr = fctl_get_be(p + 8, 8);
	d.size = (uint32_t)fctl_get_be(p + 16, 4);
	d.out_reads = (uint16_t)fctl_get_be(p + 20, 2);
	if (d.size < 2 || d.size > 2 * (uint64_t)FCTL_RDMA_MAX_SIZE || d.out_reads == 0)
		return -EINVAL;
	*out = d;
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct rdma_event_channel *channel_new(char *err, size_t errlen)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch) {
		fctl_set_err(err, errlen,
			"rdma_cm: cannot create an event channel: %s (is rdma_ucm loaded?)",
			strerror(errno));
		return NULL;
	}
	if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) < 0) {
		fctl_set_err(err, errlen, "rdma_cm: %s", strerror(errno));
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	return ch;
}

/*
 * Waits for the next event until deadline; it must be `want`. The private data
 * of a matching event is copied into pdata (when not NULL). A connection request
 * hands its new id to *req_id. Returns 0, -ETIMEDOUT or -ECONNREFUSED (another event).
 */
static int wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		      int64_t deadline, struct fctl_rdma_cm_pdata *pdata, bool *pdata_ok,
		      struct rdma_cm_id **req_id, char *what, size_t whatlen)
{
	struct rdma_cm_event *ev;
	int ret;

	for (;;) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		int64_t left = deadline - mono_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		ret = poll(&pfd, 1, (int)left);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		if (ret == 0)
			return -ETIMEDOUT;
		if (rdma_get_cm_event(ch, &ev) != 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		break;
	}
	if (ev->event != want) {
		snprintf(what, whatlen, "%s (status %d)", rdma_event_str(ev->event), ev->status);
		/* a rejected request's new id is ours to destroy */
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_cm_id *id = ev->id;

			rdma_ack_cm_event(ev);
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			return -ECONNREFUSED;
		}
		rdma_ack_cm_event(ev);
		return -ECONNREFUSED;
	}
	if (pdata && pdata_ok)
		*pdata_ok = fctl_rdma_cm_pdata_decode(ev->param.conn.private_data,
						      ev->param.conn.private_data_len, pdata) == 0;
	if (req_id)
		*req_id = ev->id;
	rdma_ack_cm_event(ev);
	return 0;
}

static void conn_param(const struct fctl_rdma_ep *ep, uint8_t pd[FCTL_RDMA_CM_PDATA_LEN],
		       struct rdma_conn_param *cp)
{
	struct fctl_rdma_cm_pdata d = { .rkey = ep->mr->rkey,
					.vaddr = (uint64_t)(uintptr_t)ep->buf,
					.size = (uint32_t)ep->buf_len,
					.out_reads = ep->out_reads };

	fctl_rdma_cm_pdata_encode(&d, pd);
	memset(cp, 0, sizeof(*cp));
	cp->private_data = pd;
	cp->private_data_len = FCTL_RDMA_CM_PDATA_LEN;
	cp->responder_resources = (uint8_t)ep->out_reads;
	cp->initiator_depth = (uint8_t)ep->out_reads;
	cp->retry_count = ep->opts.retry_cnt;
	cp->rnr_retry_count = ep->opts.rnr_retry;
}

/* The endpoint on the device the id is bound to; the id belongs to ep from here on. */
static int ep_on_id(const struct fctl_rdma_opts *o, struct rdma_cm_id *id,
		    struct fctl_rdma_ep **out, char *err, size_t errlen)
{
	struct fctl_rdma_ep *ep;
	const char *name;
	uint8_t t = o->timeout;
	int ret;

	if (!id->verbs) {
		fctl_set_err(err, errlen, "rdma_cm: the address is on no RDMA device");
		rdma_destroy_id(id);
		return -ENODEV;
	}
	name = ibv_get_device_name(id->verbs->device);
	if (o->dev && strcmp(o->dev, name) != 0) {
		fctl_set_err(err, errlen, "rdma_cm: the address is on RDMA device '%s', not '%s'", name,
			o->dev);
		rdma_destroy_id(id);
		return -ENODEV;
	}
	ep = fctl_rdma_ep_alloc(o, err, errlen);
	if (!ep) {
		ret = -errno;
		rdma_destroy_id(id);
		return ret;
	}
	ep->cm_id = id;
	ep->ctx = id->verbs;
	ep->ib_port = id->port_num ? id->port_num : ep->ib_port;
	snprintf(ep->dev_name, sizeof(ep->dev_name), "%s", name);
	/* --qp-timeout: the CM computes its own from the path otherwise */
	rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t));
	ret = fctl_rdma_ep_setup(ep, err, errlen);
	if (ret < 0) {
		fctl_rdma_ep_free(ep);
		return ret;
	}
	*out = ep;
	return 0;
}

static void set_remote(struct fctl_rdma_ep *ep, const struct fctl_rdma_cm_pdata *d)
{
	memset(&ep->remote, 0, sizeof(ep->remote));
	ep->remote.rkey = d->rkey;
	ep->remote.vaddr = d->vaddr;
	ep->remote.out_reads = d->out_reads;
}

static const char *timeout_hint(void)
{
	return "(no answer from the peer's rdma_cm: over MACsec it does not connect in the "
	       "lab, see docs/probes.md; the default TCP exchange does)";
}

int fctl_rdma_cm_connect(const struct fctl_rdma_opts *o, const char *host, uint16_t port,
			 int timeout_ms, struct fctl_rdma_ep **out, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = NULL;
	struct fctl_rdma_ep *ep = NULL;
	struct rdma_conn_param cp;
	struct fctl_rdma_cm_pdata peer;
	uint8_t pd[FCTL_RDMA_CM_PDATA_LEN];
	int64_t deadline = mono_ms() + timeout_ms;
	char what[96] = "", portstr[8];
	bool pdata_ok = false;
	int ret;

	snprintf(portstr, sizeof(portstr), "%u", port);
	ret = getaddrinfo(host, portstr, &hints, &ai);
	if (ret != 0) {
		fctl_set_err(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	ch = channel_new(err, errlen);
	if (!ch) {
		freeaddrinfo(ai);
		return -ENODEV;
	}
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "rdma_cm: cannot create an id: %s", strerror(-ret));
		goto fail;
	}
	/* step 1: address -> RDMA device and port */
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, timeout_ms) != 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "rdma_cm: cannot resolve the address %s: %s", host,
			strerror(-ret));
		goto fail;
	}
	ret = wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, deadline, NULL, NULL, NULL, what,
			 sizeof(what));
	if (ret < 0) {
		fctl_set_err(err, errlen, "rdma_cm: address resolution of %s failed: %s", host,
			ret == -ETIMEDOUT ? "timed out" : what);
		goto fail;
	}
	/* step 2: route */
	if (rdma_resolve_route(id, timeout_ms) != 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "rdma_cm: cannot resolve the route to %s: %s", host,
			strerror(-ret));
		goto fail;
	}
	ret = wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, NULL, NULL, NULL, what,
			 sizeof(what));
	if (ret < 0) {
		fctl_set_err(err, errlen, "rdma_cm: route resolution to %s failed: %s", host,
			ret == -ETIMEDOUT ? "timed out" : what);
		goto fail;
	}
	/* step 3: the endpoint on the resolved device, then connect */
	ret = ep_on_id(o, id, &ep, err, errlen);
	id = NULL; /* ep_on_id took it, or destroyed it */
	if (ret < 0)
		goto fail;
	ep->cm_ch = ch;
	ch = NULL;
	conn_param(ep, pd, &cp);
	if (rdma_connect(ep->cm_id, &cp) != 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "rdma_cm: connect to %s port %u failed: %s", host, port,
			strerror(-ret));
		goto fail;
	}
	ret = wait_event(ep->cm_ch, RDMA_CM_EVENT_ESTABLISHED, deadline, &peer, &pdata_ok, NULL,
			 what, sizeof(what));
	if (ret == -ETIMEDOUT) {
		fctl_set_err(err, errlen, "rdma_cm: no connection to %s port %u within %.1f s %s", host,
			port, timeout_ms / 1000.0, timeout_hint());
		goto fail;
	}
	if (ret < 0) {
		fctl_set_err(err, errlen, "rdma_cm: connect to %s port %u failed: %s%s", host, port, what,
			strstr(what, "REJECTED") ? " (no probe listening with --cm there?)" : "");
		goto fail;
	}
	if (!pdata_ok) {
		fctl_set_err(err, errlen, "rdma_cm: the peer's private data is not a probe's");
		ret = -EPROTO;
		goto fail;
	}
	if (peer.size < ep->buf_len) {
		fctl_set_err(err, errlen, "rdma_cm: the peer's buffer (%u bytes) is smaller than ours",
			peer.size);
		ret = -EPROTO;
		goto fail;
	}
	set_remote(ep, &peer);
	freeaddrinfo(ai);
	*out = ep;
	return 0;
fail:
	freeaddrinfo(ai);
	if (id)
		rdma_destroy_id(id);
	fctl_rdma_ep_free(ep); /* QP, id and channel */
	if (ch)
		rdma_destroy_event_channel(ch);
	return ret < 0 ? ret : -EIO;
}

struct fctl_rdma_cm_listener {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	uint16_t port;
};

void fctl_rdma_cm_listener_free(struct fctl_rdma_cm_listener *l)
{
	if (!l)
		return;
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->ch)
		rdma_destroy_event_channel(l->ch);
	free(l);
}

int fctl_rdma_cm_listen(uint16_t port, struct fctl_rdma_cm_listener **out, char *err,
			size_t errlen)
{
	struct fctl_rdma_cm_listener *l = calloc(1, sizeof(*l));
	struct sockaddr_in6 any = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	int ret;

	if (!l) {
		fctl_set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	l->port = port;
	l->ch = channel_new(err, errlen);
	if (!l->ch) {
		free(l);
		return -ENODEV;
	}
	if (rdma_create_id(l->ch, &l->id, NULL, RDMA_PS_TCP) != 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "rdma_cm: cannot create an id: %s", strerror(-ret));
		goto fail;
	}
	/* :: with IPv6-only off also takes IPv4 requests */
	{
		int off = 0;

		rdma_set_option(l->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &off, sizeof(off));
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)&any) != 0 || rdma_listen(l->id, 1) != 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "rdma_cm: cannot listen on port %u: %s", port, strerror(-ret));
		goto fail;
	}
	*out = l;
	return 0;
fail:
	fctl_rdma_cm_listener_free(l);
	return ret;
}

int fctl_rdma_cm_accept(struct fctl_rdma_cm_listener *l, const struct fctl_rdma_opts *o,
			int timeout_ms, struct fctl_rdma_ep **out, char *err, size_t errlen)
{
	struct rdma_cm_id *id = NULL;
	struct fctl_rdma_ep *ep = NULL;
	struct fctl_rdma_cm_pdata peer;
	struct rdma_conn_param cp;
	uint8_t pd[FCTL_RDMA_CM_PDATA_LEN];
	int64_t deadline = mono_ms() + timeout_ms;
	char what[96] = "";
	bool pdata_ok = false;
	int ret;

	ret = wait_event(l->ch, RDMA_CM_EVENT_CONNECT_REQUEST, deadline, &peer, &pdata_ok, &id,
			 what, sizeof(what));
	if (ret < 0) {
		fctl_set_err(err, errlen, "rdma_cm: no connection request on port %u %s", l->port,
			ret == -ETIMEDOUT ? "in time" : what);
		return ret;
	}
	if (!pdata_ok) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		fctl_set_err(err, errlen, "rdma_cm: a connection request without a probe's private data");
		return -EPROTO;
	}
	/* the new id reports on the listener's channel: give it its own */
	ret = ep_on_id(o, id, &ep, err, errlen);
	if (ret < 0)
		return ret; /* the id is destroyed: the client sees a rejection or a timeout */
	ep->cm_ch = channel_new(err, errlen);
	if (!ep->cm_ch || rdma_migrate_id(ep->cm_id, ep->cm_ch) != 0) {
		if (ep->cm_ch)
			fctl_set_err(err, errlen, "rdma_cm: %s", strerror(errno));
		ret = -EIO;
		goto fail;
	}
	if (peer.size < ep->buf_len) {
		fctl_set_err(err, errlen, "rdma_cm: the client's buffer (%u bytes) is smaller than ours",
			peer.size);
		ret = -EPROTO;
		goto fail;
	}
	conn_param(ep, pd, &cp);
	if (rdma_accept(ep->cm_id, &cp) != 0) {
		ret = -errno;
		fctl_set_err(err, errlen, "rdma_cm: accept failed: %s", strerror(-ret));
		goto fail;
	}
	ret = wait_event(ep->cm_ch, RDMA_CM_EVENT_ESTABLISHED, deadline, NULL, NULL, NULL, what,
			 sizeof(what));
	if (ret < 0) {
		fctl_set_err(err, errlen, "rdma_cm: the connection was not established: %s",
			ret == -ETIMEDOUT ? "timed out" : what);
		goto fail;
	}
	set_remote(ep, &peer);
	*out = ep;
	return 0;
fail:
	fctl_rdma_ep_free(ep);
	return ret;
}
