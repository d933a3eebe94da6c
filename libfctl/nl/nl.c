// SPDX-License-Identifier: MIT
/*
 * Netlink core: sockets (optionally inside a named network namespace), the one
 * request/answer loop with extended-ACK capture, NLE_* -> errno, counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

#include <linux/if_link.h>
#include <linux/if_macsec.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/socket.h>

#include "nl_int.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef RTEXT_FILTER_SKIP_STATS
#define RTEXT_FILTER_SKIP_STATS (1 << 3)
#endif

#define RECV_BUF_SIZE 65536
#define DUMP_TRIES 5

static const struct {
	int nle;
	int err;
} nle_map[] = {
	{ NLE_SUCCESS, 0 },
	{ NLE_FAILURE, EIO },
	{ NLE_INTR, EINTR },
	{ NLE_BAD_SOCK, EBADF },
	{ NLE_AGAIN, EAGAIN },
	{ NLE_NOMEM, ENOMEM },
	{ NLE_EXIST, EEXIST },
	{ NLE_INVAL, EINVAL },
	{ NLE_RANGE, ERANGE },
	{ NLE_MSGSIZE, EMSGSIZE },
	{ NLE_OPNOTSUPP, EOPNOTSUPP },
	{ NLE_AF_NOSUPPORT, EAFNOSUPPORT },
	{ NLE_OBJ_NOTFOUND, ENOENT },
	{ NLE_NOATTR, ENODATA },
	{ NLE_MISSING_ATTR, EINVAL },
	{ NLE_AF_MISMATCH, EINVAL },
	{ NLE_SEQ_MISMATCH, EPROTO },
	{ NLE_MSG_OVERFLOW, EOVERFLOW },
	{ NLE_MSG_TRUNC, EMSGSIZE },
	{ NLE_NOADDR, EADDRNOTAVAIL },
	{ NLE_SRCRT_NOSUPPORT, EOPNOTSUPP },
	{ NLE_MSG_TOOSHORT, EPROTO },
	{ NLE_MSGTYPE_NOSUPPORT, EOPNOTSUPP },
	{ NLE_OBJ_MISMATCH, EINVAL },
	{ NLE_NOCACHE, ENOENT },
	{ NLE_BUSY, EBUSY },
	{ NLE_PROTO_MISMATCH, EPROTONOSUPPORT },
	{ NLE_NOACCESS, EACCES },
	{ NLE_PERM, EPERM },
	{ NLE_PKTLOC_FILE, ENOENT },
	{ NLE_PARSE_ERR, EINVAL },
	{ NLE_NODEV, ENODEV },
	{ NLE_IMMUTABLE, EROFS },
	{ NLE_DUMP_INTR, EINTR },
	{ NLE_ATTRSIZE, ERANGE },
};

int fctl_nl_errno(int nle)
{
	int code = nle < 0 ? -nle : nle;

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(nle_map); i++)
		if (nle_map[i].nle == code)
			return -nle_map[i].err;
	return -EIO;
}

uint64_t fctl_nli_sci_to_wire(uint64_t sci)
{
	return htobe64(sci);
}

uint64_t fctl_nli_sci_from_wire(uint64_t wire)
{
	return be64toh(wire);
}

void fctl_nli_err_clear(struct fctl_nl_err *err)
{
	if (!err)
		return;
	err->err = 0;
	err->extack[0] = '\0';
	err->msg[0] = '\0';
}

void fctl_nli_err_set(struct fctl_nl_err *err, int e, const char *what)
{
	if (!err)
		return;
	err->err = e;
	if (err->extack[0])
		snprintf(err->msg, sizeof(err->msg), "%.96s: %.120s (%.32s)", what, err->extack,
			 strerror(-e));
	else
		snprintf(err->msg, sizeof(err->msg), "%.150s: %.64s", what, strerror(-e));
}

/* --- sockets --- */

static int sock_new(int protocol, struct nl_sock **out)
{
	struct nl_sock *sk;
	struct nl_cb *cb;
	int one = 1;
	int r;

	/* Explicit default callbacks: nl_socket_alloc() honours NLCB=debug from the
	 * environment, which would print outgoing messages (keys included). */
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		return -ENOMEM;
	sk = nl_socket_alloc_cb(cb);
	nl_cb_put(cb);
	if (!sk)
		return -ENOMEM;
	r = nl_connect(sk, protocol);
	if (r < 0) {
		r = fctl_nl_errno(r);
		goto fail;
	}
	/* The kernel's error text, and ACKs that do not echo our request back
	 * (the request may carry a key). */
	if (setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one)) < 0 ||
	    setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one)) < 0) {
		r = -errno;
		goto fail;
	}
	/* One recvmsg per answer: no MSG_PEEK to size each message first. The
	 * kernel caps a dump part at 32 KiB (it follows our buffer size up to
	 * that), so a part always fits; a message that did not would fail loudly
	 * (NLE_MSG_TRUNC), never be cut silently. */
	nl_socket_disable_msg_peek(sk);
	r = nl_socket_set_msg_buf_size(sk, RECV_BUF_SIZE);
	if (r < 0) {
		r = fctl_nl_errno(r);
		goto fail;
	}
	*out = sk;
	return 0;
fail:
	nl_socket_free(sk);
	return r;
}

static int open_sockets(struct fctl_nl *nl)
{
	int r;

	r = sock_new(NETLINK_ROUTE, &nl->rt);
	if (r < 0)
		return r;
	r = sock_new(NETLINK_GENERIC, &nl->gen);
	if (r < 0)
		return r;
	/* here, in the namespace: a socket belongs to the one it was made in */
	nl->pipe_rt = fctl_nli_pipe_socket(NETLINK_ROUTE);
	if (nl->pipe_rt < 0)
		return nl->pipe_rt;
	nl->pipe_gen = fctl_nli_pipe_socket(NETLINK_GENERIC);
	if (nl->pipe_gen < 0)
		return nl->pipe_gen;
	/* Absent until the macsec module is loaded: resolved again on first use. */
	r = genl_ctrl_resolve(nl->gen, MACSEC_GENL_NAME);
	if (r > 0)
		nl->macsec_family = r;
	return 0;
}

int fctl_nl_open(const char *netns, struct fctl_nl **out)
{
	struct fctl_nl *nl;
	int orig_fd = -1, ns_fd = -1;
	bool switched = false;
	int r;

	nl = fctl_calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->pipe_rt = nl->pipe_gen = -1;
	nl->pipe_seq = 1u << 31; /* apart from libnl's numbers, though on sockets of their own */

	if (netns) {
		char path[256];

		if (!netns[0] || strchr(netns, '/') || strcmp(netns, ".") == 0 ||
		    strcmp(netns, "..") == 0) {
			r = -EINVAL;
			goto out;
		}
		snprintf(path, sizeof(path), "/run/netns/%s", netns);
		orig_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (orig_fd < 0) {
			r = -errno;
			goto out;
		}
		ns_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (ns_fd < 0) {
			r = -errno;
			goto out;
		}
		if (setns(ns_fd, CLONE_NEWNET) < 0) {
			r = -errno;
			goto out;
		}
		switched = true;
	}

	r = open_sockets(nl);

out:
	if (switched && setns(orig_fd, CLONE_NEWNET) < 0) {
		/* Cannot return to the caller's namespace: nothing is safe now. */
		if (r >= 0)
			r = -errno;
	}
	if (ns_fd >= 0)
		close(ns_fd);
	if (orig_fd >= 0)
		close(orig_fd);
	if (r < 0) {
		fctl_nl_close(nl);
		return r;
	}
	*out = nl;
	return 0;
}

void fctl_nl_close(struct fctl_nl *nl)
{
	if (!nl)
		return;
	nl_socket_free(nl->rt);
	nl_socket_free(nl->gen);
	if (nl->pipe_rt >= 0)
		close(nl->pipe_rt);
	if (nl->pipe_gen >= 0)
		close(nl->pipe_gen);
	free(nl->ifmap.slot);
	free(nl);
}

void fctl_nl_get_stats(const struct fctl_nl *nl, struct fctl_nl_stats *out)
{
	*out = nl->stats;
}

void fctl_nl_reset_stats(struct fctl_nl *nl)
{
	memset(&nl->stats, 0, sizeof(nl->stats));
}

int fctl_nli_macsec_family(struct fctl_nl *nl, struct fctl_nl_err *err)
{
	int r;

	if (nl->macsec_family > 0)
		return nl->macsec_family;
	nl->stats.round_trips++;
	r = genl_ctrl_resolve(nl->gen, MACSEC_GENL_NAME);
	if (r < 0) {
		r = -EOPNOTSUPP;
		fctl_nli_err_set(err, r, "generic netlink family \"macsec\" not found (no macsec module?)");
		return r;
	}
	nl->macsec_family = r;
	return r;
}

/* --- one request, its answers --- */

struct xact {
	int (*valid)(struct nl_msg *msg, void *arg);
	void *arg;
	struct fctl_nl_err *err;
	int result; /* first error: kernel errno or the parser's */
	bool done;
};

void fctl_nli_extack_copy(struct nlmsgerr *e, struct fctl_nl_err *err)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t ack_len, total;

	if (!err || !(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	total = nlh->nlmsg_len;
	ack_len = sizeof(*e);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		ack_len += e->msg.nlmsg_len - NLMSG_HDRLEN;
	ack_len = NLMSG_ALIGN(ack_len);
	if (total <= NLMSG_HDRLEN + ack_len)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)e + ack_len),
		      (int)(total - NLMSG_HDRLEN - ack_len), NULL) < 0)
		return;
	if (tb[NLMSGERR_ATTR_MSG] && nla_len(tb[NLMSGERR_ATTR_MSG]) > 0) {
		size_t n = (size_t)nla_len(tb[NLMSGERR_ATTR_MSG]);

		if (n > sizeof(err->extack) - 1)
			n = sizeof(err->extack) - 1;
		memcpy(err->extack, nla_data(tb[NLMSGERR_ATTR_MSG]), n);
		err->extack[n] = '\0';
		/* strip a trailing NUL or newline that is part of the attribute */
		n = strlen(err->extack);
		while (n && err->extack[n - 1] == '\n')
			err->extack[--n] = '\0';
	}
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct xact *x = arg;

	(void)who;
	if (x->result == 0)
		x->result = e->error < 0 ? e->error : -e->error;
	fctl_nli_extack_copy(e, x->err);
	x->done = true;
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	struct xact *x = arg;

	(void)msg;
	x->done = true;
	return NL_STOP;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct xact *x = arg;
	int r;

	if (!x->valid || x->result < 0)
		return NL_OK;
	r = x->valid(msg, x->arg);
	if (r < 0)
		x->result = r; /* keep reading to the end of the answer */
	return NL_OK;
}

int fctl_nli_xact(struct fctl_nl *nl, struct nl_sock *sk, struct nl_msg *msg, bool write,
		  int (*valid)(struct nl_msg *msg, void *arg), void *arg, struct fctl_nl_err *err)
{
	struct xact x = { .valid = valid, .arg = arg, .err = err };
	struct nl_cb *cb;
	int r;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		return -ENOMEM;
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &x);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &x);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_ack, &x);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &x);

	if (err)
		err->extack[0] = '\0';
	if (write)
		nl->stats.writes++;
	nl->stats.round_trips++;

	/* Sets NLM_F_REQUEST | NLM_F_ACK, seq, port. Every request asks for the ACK,
	 * reads included: libnl's sequence check (the one its own cache fills use on
	 * these sockets) only moves on at an ACK or NLMSG_DONE, so a request without
	 * one would put every later answer out of step. */
	r = nl_send_auto(sk, msg);
	if (r < 0) {
		r = fctl_nl_errno(r);
		goto out;
	}
	while (!x.done) {
		r = nl_recvmsgs(sk, cb);
		if (r == -NLE_DUMP_INTR) {
			r = -EINTR;
			goto out;
		}
		if (r < 0 && x.result == 0) {
			x.result = fctl_nl_errno(r);
			break;
		}
		if (r < 0)
			break;
	}
	r = x.result;
out:
	nl_cb_put(cb);
	return r;
}

/* --- name -> ifindex map --- */

static size_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static struct fctl_nli_ifent *ifmap_slot(struct fctl_nli_ifent *v, size_t cap, const char *name)
{
	size_t i = name_hash(name) & (cap - 1);

	while (v[i].ifindex && strcmp(v[i].name, name) != 0)
		i = (i + 1) & (cap - 1);
	return &v[i];
}

static int ifmap_get(const struct fctl_nl *nl, const char *name)
{
	if (!nl->ifmap.cap)
		return 0;
	return ifmap_slot(nl->ifmap.slot, nl->ifmap.cap, name)->ifindex;
}

void fctl_nli_ifmap_clear(struct fctl_nl *nl)
{
	if (nl->ifmap.cap)
		memset(nl->ifmap.slot, 0, nl->ifmap.cap * sizeof(*nl->ifmap.slot));
	nl->ifmap.n = 0;
	nl->ifmap.added = 0;
	nl->ifmap.refill = false;
}

void fctl_nli_ifmap_invalidate(struct fctl_nl *nl)
{
	bool used = nl->ifmap.n > 0 || nl->ifmap.added > 0 || nl->ifmap.refill;

	fctl_nli_ifmap_clear(nl);
	nl->ifmap.refill = used;
}

void fctl_nli_ifmap_fill_done(struct fctl_nl *nl)
{
	nl->ifmap.added = 0;
	nl->ifmap.refill = false;
}

void fctl_nli_ifmap_link_added(struct fctl_nl *nl, const char *name)
{
	/* a name the map holds is being made again: what it says is stale */
	if (ifmap_get(nl, name))
		fctl_nli_ifmap_invalidate(nl);
	nl->ifmap.added++;
}

int fctl_nli_ifmap_put(struct fctl_nl *nl, const char *name, int ifindex)
{
	struct fctl_nli_ifmap *m = &nl->ifmap;
	struct fctl_nli_ifent *e;

	if (ifindex <= 0 || !name || strlen(name) >= FCTL_IFNAMSIZ)
		return -EINVAL;
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct fctl_nli_ifent *v = calloc(cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->slot[i].ifindex)
				*ifmap_slot(v, cap, m->slot[i].name) = m->slot[i];
		free(m->slot);
		m->slot = v;
		m->cap = cap;
	}
	e = ifmap_slot(m->slot, m->cap, name);
	if (!e->ifindex) {
		m->n++;
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	e->ifindex = ifindex;
	return 0;
}

/* --- lookups --- */

static int link_msg(int flags, const char *name, struct nl_msg **out)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct nl_msg *msg = nlmsg_alloc_simple(RTM_GETLINK, flags);

	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    nla_put_u32(msg, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0 ||
	    (name && nla_put_string(msg, IFLA_IFNAME, name) < 0)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	*out = msg;
	return 0;
}

static int parse_link(struct nl_msg *msg, const char **name, struct fctl_nli_link_info *info)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];
	const struct ifinfomsg *ifi;

	if (nlh->nlmsg_type != RTM_NEWLINK || !nlmsg_valid_hdr(nlh, sizeof(*ifi)))
		return 0; /* not a link */
	ifi = nlmsg_data(nlh);
	if (nlmsg_parse(nlh, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0 || !tb[IFLA_IFNAME] ||
	    ifi->ifi_index <= 0)
		return -EPROTO;
	*name = nla_get_string(tb[IFLA_IFNAME]);
	if (!memchr(*name, '\0', (size_t)nla_len(tb[IFLA_IFNAME])))
		return -EPROTO;
	memset(info, 0, sizeof(*info));
	info->ifindex = ifi->ifi_index;
	if (!tb[IFLA_LINKINFO] || nla_parse_nested(li, IFLA_INFO_MAX, tb[IFLA_LINKINFO], NULL) < 0)
		return 1;
	if (li[IFLA_INFO_KIND] && nla_len(li[IFLA_INFO_KIND]) >= 7 &&
	    strncmp(nla_data(li[IFLA_INFO_KIND]), "macsec", 7) == 0) {
		struct nlattr *md[IFLA_MACSEC_MAX + 1];

		info->macsec = true;
		if (li[IFLA_INFO_DATA] &&
		    nla_parse_nested(md, IFLA_MACSEC_MAX, li[IFLA_INFO_DATA], NULL) == 0 &&
		    md[IFLA_MACSEC_CIPHER_SUITE] && nla_len(md[IFLA_MACSEC_CIPHER_SUITE]) == 8 &&
		    fctl_cipher_from_kernel_id(nla_get_u64(md[IFLA_MACSEC_CIPHER_SUITE]),
					       &info->cipher) == 0)
			info->has_cipher = true;
	}
	return 1;
}

struct get_ctx {
	struct fctl_nli_link_info info;
	bool found;
};

static int on_get(struct nl_msg *msg, void *arg)
{
	struct get_ctx *g = arg;
	const char *name;
	int r = parse_link(msg, &name, &g->info);

	if (r > 0)
		g->found = true;
	return r < 0 ? r : 0;
}

int fctl_nli_link_get(struct fctl_nl *nl, const char *name, struct fctl_nli_link_info *info,
		      struct fctl_nl_err *err)
{
	struct get_ctx g = { 0 };
	struct nl_msg *msg = NULL;
	char what[64];
	int r;

	snprintf(what, sizeof(what), "link \"%s\"", name);
	if (!name[0] || strlen(name) >= FCTL_IFNAMSIZ) {
		fctl_nli_err_set(err, -EINVAL, what);
		return -EINVAL;
	}
	r = link_msg(0, name, &msg);
	if (r == 0) {
		r = fctl_nli_xact(nl, nl->rt, msg, false, on_get, &g, err);
		nlmsg_free(msg);
	}
	if (r == 0 && !g.found)
		r = -EPROTO;
	if (r < 0) {
		if (r == -ENOENT)
			r = -ENODEV;
		fctl_nli_err_set(err, r, what);
		return r;
	}
	if (fctl_nli_ifmap_put(nl, name, g.info.ifindex) < 0)
		fctl_nli_ifmap_invalidate(nl);
	*info = g.info;
	return 0;
}

static int on_dump_link(struct nl_msg *msg, void *arg)
{
	struct fctl_nl *nl = arg;
	struct fctl_nli_link_info info;
	const char *name;
	int r = parse_link(msg, &name, &info);

	if (r <= 0)
		return r;
	return fctl_nli_ifmap_put(nl, name, info.ifindex);
}

/* One RTM_GETLINK dump (no statistics) into the map. */
static int ifmap_refill(struct fctl_nl *nl)
{
	int r = -EINTR;

	for (int tries = 0; tries < DUMP_TRIES && r == -EINTR; tries++) {
		struct nl_msg *msg = NULL;

		fctl_nli_ifmap_clear(nl);
		r = link_msg(NLM_F_DUMP, NULL, &msg);
		if (r < 0)
			break;
		r = fctl_nli_xact(nl, nl->rt, msg, false, on_dump_link, nl, NULL);
		nlmsg_free(msg);
	}
	if (r < 0) {
		fctl_nli_ifmap_invalidate(nl);
		return r;
	}
	fctl_nli_ifmap_fill_done(nl);
	return 0;
}

int fctl_nli_ifindex(struct fctl_nl *nl, const char *name, int *ifindex, bool *cached,
		     struct fctl_nl_err *err)
{
	struct fctl_nli_link_info info;
	int idx = ifmap_get(nl, name);
	int r;

	*cached = idx > 0;
	if (idx > 0) {
		*ifindex = idx;
		return 0;
	}
	/* links were made or removed since the map was filled: one dump answers
	 * for all of them, where a lookup each would cost a round trip each */
	if ((nl->ifmap.refill || nl->ifmap.added >= 2) && ifmap_refill(nl) == 0) {
		char what[64];

		idx = ifmap_get(nl, name);
		if (idx > 0) {
			*ifindex = idx;
			return 0;
		}
		snprintf(what, sizeof(what), "link \"%s\"", name);
		if (err)
			err->extack[0] = '\0';
		fctl_nli_err_set(err, -ENODEV, what);
		return -ENODEV;
	}
	r = fctl_nli_link_get(nl, name, &info, err);
	if (r < 0)
		return r;
	*ifindex = info.ifindex;
	return 0;
}

int fctl_nl_link_exists(struct fctl_nl *nl, const char *ifname)
{
	struct fctl_nl_err err = { 0 };
	bool cached;
	int idx, r;

	if (!ifname[0] || strlen(ifname) >= FCTL_IFNAMSIZ)
		return 0; /* no link can have that name */
	r = fctl_nli_ifindex(nl, ifname, &idx, &cached, &err);
	if (r == -ENODEV || r == -ENOENT)
		return 0;
	return r < 0 ? r : 1;
}

/* --- exec dispatch --- */

int fctl_nl_exec(struct fctl_nl *nl, const struct fctl_op *op, const uint8_t *key,
		 size_t key_len, struct fctl_nl_err *err)
{
	fctl_nli_err_clear(err);
	switch (op->kind) {
	case FCTL_OP_RXSC_ADD:
	case FCTL_OP_RXSC_UPD:
	case FCTL_OP_RXSC_DEL:
	case FCTL_OP_RXSA_ADD:
	case FCTL_OP_RXSA_UPD:
	case FCTL_OP_RXSA_DEL:
	case FCTL_OP_TXSA_ADD:
	case FCTL_OP_TXSA_UPD:
	case FCTL_OP_TXSA_DEL:
		return fctl_nli_exec_macsec(nl, op, key, key_len, err);
	case FCTL_OP_LINK_ADD:
	case FCTL_OP_LINK_CHANGE:
	case FCTL_OP_LINK_UP:
	case FCTL_OP_LINK_DOWN:
	case FCTL_OP_LINK_DEL:
	case FCTL_OP_ADDR_ADD:
	case FCTL_OP_ADDR_DEL:
		return fctl_nli_exec_link(nl, op, err);
	}
	fctl_nli_err_set(err, -EINVAL, "unknown operation");
	return -EINVAL;
}

void fctl_nl_msg_free(struct nl_msg *msg)
{
	if (!msg)
		return;
	fctl_memzero(nlmsg_hdr(msg), nlmsg_get_max_size(msg));
	nlmsg_free(msg);
}
