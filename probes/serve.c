// SPDX-License-Identifier: MIT
/*
 * fabricctl-probe serve: the far end. One client session at a time: the QP
 * exchange, then for every run the client asks for: counters and MACsec state
 * before, the answering loop, counters after, sent back to the client.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

#define HELLO_MS 10000
#define IDLE_MS (600 * 1000)
#define CM_ACCEPT_MS 20000

struct serve_opts {
	const char *port;
	struct fctl_rdma_opts rdma;
	bool once;
	int idle_ms;	      /* --idle-timeout: --once gives up when no client came */
	const char *netdev;   /* --netdev: the device and GID of this interface's GID */
	unsigned pmtu;	      /* --pmtu: after the session, echoes of this size ... */
	const char *pmtu_peer; /* ... to this address (--pmtu-peer) */
};

/* Takes the client's QP parameters from its HELLO line where they are in range. */
static void apply_hello(const char *line, struct fctl_rdma_opts *o)
{
	uint64_t v;

	if (ctl_field_u64(line, "max_size", &v) && v && v <= FCTL_RDMA_MAX_SIZE)
		o->max_size = (uint32_t)v;
	if (ctl_field_u64(line, "depth", &v) && v && v <= 4096)
		o->tx_depth = (uint32_t)v;
	if (ctl_field_u64(line, "timeout", &v) && v <= 31)
		o->timeout = (uint8_t)v;
	if (ctl_field_u64(line, "retry", &v) && v <= 7)
		o->retry_cnt = (uint8_t)v;
	if (ctl_field_u64(line, "rnr", &v) && v <= 7)
		o->rnr_retry = (uint8_t)v;
}

/*
 * rdma_cm: listen on the control port's number (its own port space), tell the client to
 * connect, accept; the buffers travel in the private data. hello is the client's HELLO
 * line. On success *ep is the connected endpoint and RTS is sent; returns 0 or a negative
 * errno (said to the client and on stderr).
 */
static int cm_setup(int fd, const struct serve_opts *so, const char *hello,
		    const struct fctl_rdma_opts *o, struct fctl_rdma_ep **ep)
{
	struct fctl_rdma_cm_listener *l = NULL;
	uint64_t port = 0, wait_ms = CM_ACCEPT_MS;
	char err[200] = "";
	int ret;

	/* a little longer than the client tries, so a failed attempt frees us soon */
	if (ctl_field_u64(hello, "cm_ms", &wait_ms) && wait_ms <= 600000)
		wait_ms += 2000;
	else
		wait_ms = CM_ACCEPT_MS;
	fctl_parse_u64(so->port, &port);
	ret = fctl_rdma_cm_listen((uint16_t)port, &l, err, sizeof(err));
	if (ret == 0) {
		ctl_send(fd, "CM port=%" PRIu64, port);
		ret = fctl_rdma_cm_accept(l, o, (int)wait_ms, ep, err, sizeof(err));
	}
	fctl_rdma_cm_listener_free(l);
	if (ret < 0) {
		perr("session: %s", err);
		ctl_send(fd, "ERR %s", err);
		return ret;
	}
	printf("probe: rdma_cm connection on device %s, network device %s\n",
	       fctl_rdma_ep_dev_name(*ep),
	       fctl_rdma_ep_netdev(*ep)[0] ? fctl_rdma_ep_netdev(*ep) : "?");
	fflush(stdout);
	ctl_send(fd, "RTS");
	return ret;
}

/*
 * The TCP exchange: a new endpoint, OK with our QP, the client's QP, connect, RTS.
 * *ep is set as soon as the endpoint exists and stays the caller's to free, also on
 * failure; returns 0 or a negative errno (said to the client and on stderr).
 */
static int qp_setup(int fd, const struct fctl_rdma_opts *o, struct fctl_rdma_ep **ep)
{
	char line[512], info[FCTL_RDMA_QPINFO_LEN], err[200] = "";
	struct fctl_rdma_qpinfo me, peer;
	int ret;

	ret = fctl_rdma_ep_new(o, ep, err, sizeof(err));
	if (ret < 0) {
		perr("%s", err);
		ctl_send(fd, "ERR %s", err);
		return ret;
	}
	fctl_rdma_ep_info(*ep, &me);
	fctl_rdma_qpinfo_format(&me, info);
	ctl_send(fd, "OK %s", info);
	ret = ctl_recv_line(fd, line, sizeof(line), HELLO_MS);
	if (ret < 0 || strncmp(line, "QP ", 3) != 0 || fctl_rdma_qpinfo_parse(line + 3, &peer) < 0) {
		perr("session: bad queue pair parameters from the client");
		ctl_send(fd, "ERR bad queue pair parameters");
		return -EPROTO;
	}
	ret = fctl_rdma_ep_connect(*ep, &peer, err, sizeof(err));
	if (ret < 0) {
		perr("%s", err);
		ctl_send(fd, "ERR %s", err);
		return ret;
	}
	ctl_send(fd, "RTS");
	return ret;
}

static int session(int fd, const struct serve_opts *so, struct fctl_nl *nl)
{
	char line[512];
	struct fctl_rdma_opts o = so->rdma;
	struct fctl_rdma_ep *ep = NULL;
	uint64_t v;
	int ret;

	ret = ctl_recv_line(fd, line, sizeof(line), HELLO_MS);
	if (ret < 0 || strncmp(line, "HELLO 1 ", 8) != 0) {
		perr("session: no greeting from the client (%s)", ret < 0 ? strerror(-ret) : line);
		ctl_send(fd, "ERR expected 'HELLO %d'", PROBE_PROTO);
		return -EPROTO;
	}
	apply_hello(line, &o);
	if (ctl_field_u64(line, "cm", &v) && v == 1) {
		ret = cm_setup(fd, so, line, &o, &ep);
		if (ret < 0)
			return ret;
	} else {
		ret = qp_setup(fd, &o, &ep);
		if (ret < 0)
			goto out;
	}
	for (;;) {
		struct fctl_rdma_params p = { .watch_fd = fd };
		struct fctl_rdma_result r = { 0 };
		struct evidence ev;
		struct probe_end pe = { .role = "server" };
		struct fctl_buf b = { 0 };
		char test[32];
		uint64_t size = 0, wait_ms;

		ret = ctl_recv_line(fd, line, sizeof(line), IDLE_MS);
		if (ret < 0 || strcmp(line, "BYE") == 0) {
			ret = ret == -ECONNRESET ? 0 : ret;
			break;
		}
		if (strncmp(line, "TEST ", 5) != 0 || !fctl_kv_word(line, "test", test, sizeof(test)) ||
		    fctl_rdma_test_from_name(test, &p.test) < 0 || !ctl_field_u64(line, "size", &size) ||
		    size == 0 || size > o.max_size) {
			ctl_send(fd, "ERR bad request '%s'", line);
			ret = -EPROTO;
			break;
		}
		p.size = (uint32_t)size;
		ctl_field_u64(line, "iters", &p.iters);
		ctl_field_u64(line, "duration_ns", &p.duration_ns);
		ctl_field_u64(line, "stall_ns", &p.stall_ns);
		/* the client's DONE may come before our loop ends, in every test: its last
		 * message answered, ours still waits for the completion of its answer (over a
		 * slow link, more than the 100 ms after which the loop looks at the control
		 * connection); only ABORT, or anything else, stops it */
		p.watch_ok = "DONE";
		if (ctl_field_u64(line, "bidir", &v) && v == 1 && !fctl_rdma_test_is_lat(p.test))
			p.bidirectional = true;
		ret = fctl_rdma_prepare(ep, &p, &r);
		if (ret < 0) {
			ctl_send(fd, "ERR %s", r.err);
			break;
		}
		evidence_begin(&ev, nl, fctl_rdma_ep_dev_name(ep), o.ib_port, fctl_rdma_ep_netdev(ep));
		ctl_send(fd, "GO");
		if (fctl_rdma_params_server_active(&p))
			ret = fctl_rdma_run_server(ep, &p, &r);
		/* the client says DONE when its run is over (ABORT when it failed) */
		wait_ms = (p.duration_ns + 2 * p.stall_ns) / 1000000 + 60000;
		if (ret >= 0 || ret == -ECONNABORTED) {
			int rl = ctl_recv_line(fd, line, sizeof(line),
					       wait_ms > INT32_MAX ? INT32_MAX : (int)wait_ms);

			if (rl < 0) {
				perr("session: the client went away during the %s run", test);
				ret = rl;
				break;
			}
		}
		pe.iters = r.iters;
		pe.cpu_ns = r.cpu_ns;
		if (p.bidirectional) {
			pe.bytes = r.bytes;
			pe.elapsed_ns = r.elapsed_ns;
		}
		evidence_end(&ev, nl, &pe);
		if (ret < 0 && r.err[0])
			fctl_buf_printf(&b, "FAIL %s\n", r.err);
		probe_end_to_wire(&pe, &b);
		if (ctl_send_buf(fd, &b) < 0)
			ret = -EPIPE;
		fctl_buf_release(&b);
		if (ret < 0) {
			perr("session: %s", r.err[0] ? r.err : strerror(-ret));
			break;
		}
	}
out:
	fctl_rdma_ep_free(ep);
	return ret;
}

int probe_serve(int argc, char **argv)
{
	struct serve_opts so = { .port = NULL };
	char err[400] = "", portbuf[16];
	struct fctl_rdma_ep *ep = NULL;
	struct fctl_nl *nl = NULL;
	int lfd, ret;

	fctl_rdma_opts_default(&so.rdma);
	snprintf(portbuf, sizeof(portbuf), "%d", FCTL_RDMA_DEFAULT_PORT);
	so.port = portbuf;
	for (int a = 1; a < argc; a++) {
		const char *v = a + 1 < argc ? argv[a + 1] : NULL;

		if (strcmp(argv[a], "--port") == 0 && v) {
			so.port = v;
			a++;
		} else if (strcmp(argv[a], "--dev") == 0 && v) {
			so.rdma.dev = v;
			a++;
		} else if (strcmp(argv[a], "--ib-port") == 0) {
			if (parse_u8_opt("--ib-port", v, 255, &so.rdma.ib_port) < 0)
				return PROBE_EXIT_ERROR;
			a++;
		} else if (strcmp(argv[a], "--gid-index") == 0) {
			uint8_t g;

			if (parse_u8_opt("--gid-index", v, 255, &g) < 0)
				return PROBE_EXIT_ERROR;
			so.rdma.gid_index = g;
			a++;
		} else if (strcmp(argv[a], "--once") == 0) {
			so.once = true;
		} else if (strcmp(argv[a], "--netdev") == 0 && v) {
			so.netdev = v;
			a++;
		} else if (strcmp(argv[a], "--pmtu-peer") == 0 && v) {
			so.pmtu_peer = v;
			a++;
		} else if ((strcmp(argv[a], "--idle-timeout") == 0 ||
			    strcmp(argv[a], "--pmtu") == 0) && v) {
			uint64_t x;

			if (fctl_parse_u64(v, &x) < 0 || !x || x > 65535) {
				perr("serve: %s takes 1..65535, not '%s'", argv[a], v);
				return PROBE_EXIT_ERROR;
			}
			if (argv[a][2] == 'i')
				so.idle_ms = (int)x * 1000;
			else
				so.pmtu = (unsigned)x;
			a++;
		} else {
			perr("serve: unknown option '%s'", argv[a]);
			return PROBE_EXIT_ERROR;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (so.netdev && probe_netdev_pick(so.netdev, &so.rdma, err, sizeof(err)) < 0) {
		perr("serve: %s", err);
		return PROBE_EXIT_ERROR;
	}
	/* the device must be there before we listen: say so now, not to the first client */
	so.rdma.max_size = 4096;
	ret = fctl_rdma_ep_new(&so.rdma, &ep, err, sizeof(err));
	if (ret < 0) {
		perr("serve: %s", err);
		return PROBE_EXIT_ERROR;
	}
	printf("probe: serving on port %s, device %s, network device %s\n", so.port,
	       fctl_rdma_ep_dev_name(ep),
	       fctl_rdma_ep_netdev(ep)[0] ? fctl_rdma_ep_netdev(ep) : "?");
	fflush(stdout);
	fctl_rdma_ep_free(ep);
	so.rdma.max_size = 65536;

	lfd = ctl_listen(so.port, err, sizeof(err));
	if (lfd < 0) {
		perr("serve: %s", err);
		return PROBE_EXIT_ERROR;
	}
	if (fctl_nl_open(NULL, &nl) < 0)
		nl = NULL; /* the MACsec check reports it */
	for (;;) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		int fd;

		if (so.once && so.idle_ms && poll(&pfd, 1, so.idle_ms) == 0) {
			perr("serve: no client within %d s", so.idle_ms / 1000);
			ret = -ETIMEDOUT;
			break;
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			perr("serve: accept: %s", strerror(errno));
			ret = -errno;
			break;
		}
		ret = session(fd, &so, nl);
		close(fd);
		if (so.once)
			break;
	}
	fctl_nl_close(nl);
	close(lfd);
	/* the other direction of the path MTU, after the session: it never delays one */
	if (so.pmtu && so.pmtu_peer && so.netdev)
		probe_pmtu_line("server", so.pmtu_peer, so.netdev, so.pmtu);
	return ret < 0 && so.once ? PROBE_EXIT_ERROR : PROBE_EXIT_PASS;
}
