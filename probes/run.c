// SPDX-License-Identifier: MIT
/*
 * fabricctl-probe run: the measuring end. Connects to a `serve`, sets up one
 * RC QP, runs each test at each size, gathers the evidence of both ends,
 * judges it against the profile's SLO and prints the report.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "fctl/audit.h"
#include "fctl/profile.h"
#include "fctl/state.h"
#include "prog.h"

#define CTL_MS 30000
#define MAX_RUNS 64

enum out_fmt { OUT_TEXT, OUT_JSON, OUT_JUNIT, OUT_LINES };

struct run_opts {
	char host[128];
	char port[16];
	struct fctl_rdma_opts rdma;
	enum fctl_rdma_test tests[FCTL_RDMA_N_TESTS];
	size_t n_tests;
	uint32_t size; /* 0: perftest's default per test */
	bool sweep;
	uint32_t sweep_max;
	uint64_t iters; /* 0: default per test */
	uint64_t duration_ns;
	const char *profile;
	const char *link;
	enum out_fmt out;
	uint64_t stall_ns;
	int connect_ms;
	int cm_ms;	    /* --cm-timeout */
	bool cm;	    /* --cm: rdma_cm connection setup */
	bool bidir;	    /* --bidirectional */
	const char *audit_log; /* --audit-log (else $FCTL_AUDIT_LOG, else the default) */
	const char *change;    /* --change (else $FCTL_CHANGE_ID) */
	const char *textfile;  /* --metrics-textfile: node_exporter's textfile format */
	const char *state_dir; /* --state-dir: STATE_DIR/probe/last for the agent */
	char profile_sha256[65];
	const char *netdev; /* --netdev: the device and GID of this interface's GID */
	int wait_peer_ms;   /* --wait-peer: a refused connection is tried again this long */
	unsigned pmtu;      /* --pmtu: don't-fragment echoes of this size to the peer first */
};

static int parse_peer(const char *s, struct run_opts *o)
{
	const char *colon = strrchr(s, ':');
	const char *host = s;
	size_t hl;

	if (s[0] == '[') { /* [v6]:port */
		const char *rb = strchr(s, ']');

		if (!rb)
			return -EINVAL;
		host = s + 1;
		hl = (size_t)(rb - host);
		colon = rb[1] == ':' ? rb + 1 : NULL;
	} else if (colon && strchr(s, ':') != colon) {
		colon = NULL; /* a bare IPv6 address */
		hl = strlen(s);
	} else {
		hl = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (hl == 0 || hl >= sizeof(o->host))
		return -EINVAL;
	memcpy(o->host, host, hl);
	o->host[hl] = '\0';
	if (colon) {
		uint64_t p;

		if (fctl_parse_u64(colon + 1, &p) < 0 || p == 0 || p > 65535)
			return -EINVAL;
		snprintf(o->port, sizeof(o->port), "%" PRIu64, p);
	}
	return 0;
}

static int parse_tests(const char *s, struct run_opts *o)
{
	char buf[128], *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	o->n_tests = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		enum fctl_rdma_test x;

		if (fctl_rdma_test_from_name(t, &x) < 0 || o->n_tests == FCTL_RDMA_N_TESTS) {
			perr("run: unknown test '%s' (send_lat, write_lat, read_lat, send_bw, "
			     "write_bw, read_bw)",
			     t);
			return -EINVAL;
		}
		o->tests[o->n_tests++] = x;
	}
	return o->n_tests ? 0 : -EINVAL;
}

static int parse_seconds(const char *name, const char *v, uint64_t *ns)
{
	char *end;
	double d;

	if (!v) {
		perr("run: %s needs a number of seconds", name);
		return -EINVAL;
	}
	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end || d <= 0 || d > 86400) {
		perr("run: %s takes seconds (0 < S <= 86400), not '%s'", name, v);
		return -EINVAL;
	}
	*ns = (uint64_t)(d * 1e9);
	return 0;
}

/* One option that takes a value (v, not NULL); returns 0 or -EINVAL after saying why. */
static int parse_value_opt(const char *opt, const char *v, struct run_opts *o)
{
	uint64_t x;

	if (strcmp(opt, "--peer") == 0) {
		if (parse_peer(v, o) < 0) {
			perr("run: --peer takes HOST[:PORT], not '%s'", v);
			return -EINVAL;
		}
	} else if (strcmp(opt, "--dev") == 0) {
		o->rdma.dev = v;
	} else if (strcmp(opt, "--test") == 0) {
		if (parse_tests(v, o) < 0)
			return -EINVAL;
	} else if (strcmp(opt, "--size") == 0 || strcmp(opt, "--sweep-max") == 0) {
		if (fctl_parse_u64(v, &x) < 0 || x == 0 || x > FCTL_RDMA_MAX_SIZE) {
			perr("run: %s takes 1..%u bytes, not '%s'", opt, FCTL_RDMA_MAX_SIZE, v);
			return -EINVAL;
		}
		*(opt[2] == 's' && opt[3] == 'i' ? &o->size : &o->sweep_max) = (uint32_t)x;
	} else if (strcmp(opt, "--iters") == 0) {
		if (fctl_parse_u64(v, &x) < 0 || x < 5 || x > 100000000) {
			perr("run: --iters takes 5..100000000, not '%s'", v);
			return -EINVAL;
		}
		o->iters = x;
	} else if (strcmp(opt, "--duration") == 0) {
		if (parse_seconds(opt, v, &o->duration_ns) < 0)
			return -EINVAL;
	} else if (strcmp(opt, "--stall-timeout") == 0) {
		if (parse_seconds(opt, v, &o->stall_ns) < 0)
			return -EINVAL;
	} else if (strcmp(opt, "--connect-timeout") == 0) {
		uint64_t ns;

		if (parse_seconds(opt, v, &ns) < 0)
			return -EINVAL;
		o->connect_ms = (int)(ns / 1000000) + 1;
	} else if (strcmp(opt, "--cm-timeout") == 0) {
		uint64_t ns;

		if (parse_seconds(opt, v, &ns) < 0)
			return -EINVAL;
		o->cm_ms = (int)(ns / 1000000) + 1;
	} else if (strcmp(opt, "--wait-peer") == 0) {
		uint64_t ns;

		if (parse_seconds(opt, v, &ns) < 0)
			return -EINVAL;
		o->wait_peer_ms = (int)(ns / 1000000) + 1;
	} else if (strcmp(opt, "--netdev") == 0) {
		o->netdev = v;
	} else if (strcmp(opt, "--pmtu") == 0) {
		if (fctl_parse_u64(v, &x) < 0 || x < 68 || x > 65535) {
			perr("run: --pmtu takes 68..65535 bytes, not '%s'", v);
			return -EINVAL;
		}
		o->pmtu = (unsigned)x;
	} else if (strcmp(opt, "--profile") == 0) {
		o->profile = v;
	} else if (strcmp(opt, "--link") == 0) {
		o->link = v;
	} else if (strcmp(opt, "--audit-log") == 0) {
		o->audit_log = v;
	} else if (strcmp(opt, "--metrics-textfile") == 0) {
		o->textfile = v;
	} else if (strcmp(opt, "--state-dir") == 0) {
		o->state_dir = v;
	} else if (strcmp(opt, "--change") == 0) {
		o->change = v;
	} else if (strcmp(opt, "--qp-timeout") == 0) {
		if (parse_u8_opt(opt, v, 31, &o->rdma.timeout) < 0)
			return -EINVAL;
	} else if (strcmp(opt, "--retry-count") == 0) {
		if (parse_u8_opt(opt, v, 7, &o->rdma.retry_cnt) < 0)
			return -EINVAL;
	} else if (strcmp(opt, "--rnr-retry") == 0) {
		if (parse_u8_opt(opt, v, 7, &o->rdma.rnr_retry) < 0)
			return -EINVAL;
	} else if (strcmp(opt, "--ib-port") == 0) {
		if (parse_u8_opt(opt, v, 255, &o->rdma.ib_port) < 0)
			return -EINVAL;
	} else if (strcmp(opt, "--gid-index") == 0) {
		uint8_t g;

		if (parse_u8_opt(opt, v, 255, &g) < 0)
			return -EINVAL;
		o->rdma.gid_index = g;
	} else if (strcmp(opt, "--depth") == 0) {
		if (fctl_parse_u64(v, &x) < 0 || x == 0 || x > 4096) {
			perr("run: --depth takes 1..4096, not '%s'", v);
			return -EINVAL;
		}
		o->rdma.tx_depth = (uint32_t)x;
	} else {
		perr("run: unknown option '%s'", opt);
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct run_opts *o)
{
	for (int a = 1; a < argc; a++) {
		const char *opt = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;

		if (strcmp(opt, "--sweep") == 0) {
			o->sweep = true;
			continue;
		}
		if (strcmp(opt, "--cm") == 0) {
			o->cm = true;
			continue;
		}
		if (strcmp(opt, "--bidirectional") == 0) {
			o->bidir = true;
			continue;
		}
		if (strcmp(opt, "--json") == 0) {
			o->out = OUT_JSON;
			continue;
		}
		if (strcmp(opt, "--junit") == 0) {
			o->out = OUT_JUNIT;
			continue;
		}
		if (strcmp(opt, "--lines") == 0) {
			o->out = OUT_LINES;
			continue;
		}
		if (!v || strncmp(opt, "--", 2) != 0) {
			perr("run: %s '%s'", strncmp(opt, "--", 2) ? "unexpected argument" : "missing value for", opt);
			return -EINVAL;
		}
		a++;
		if (parse_value_opt(opt, v, o) < 0)
			return -EINVAL;
	}
	if (!o->host[0]) {
		perr("run: --peer HOST[:PORT] is required");
		return -EINVAL;
	}
	if (o->iters && o->duration_ns) {
		perr("run: give --iters or --duration, not both");
		return -EINVAL;
	}
	if (o->size && o->sweep) {
		perr("run: give --size or --sweep, not both");
		return -EINVAL;
	}
	if (!o->profile != !o->link) {
		perr("run: --profile and --link go together");
		return -EINVAL;
	}
	return 0;
}

static int load_slo(struct run_opts *o, struct probe_report *rep)
{
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	const struct fctl_plink *l = NULL;
	int ret = fctl_profile_load(o->profile, &d, &p);

	if (ret == 0)
		fctl_profile_validate(p, &d);
	if (ret < 0 || d.n_errors) {
		struct fctl_buf b = { 0 };

		fctl_diags_to_text(&d, &b, false);
		perr("run: profile %s is not valid%s\n%s", o->profile,
		     ret < 0 ? "" : ":", b.data ? b.data : strerror(-ret));
		fctl_buf_release(&b);
		fctl_diags_release(&d);
		fctl_profile_free(p);
		return -EINVAL;
	}
	for (size_t i = 0; i < p->n_links; i++)
		if (strcmp(p->links[i].name, o->link) == 0)
			l = &p->links[i];
	if (!l) {
		perr("run: profile %s has no link '%s'", o->profile, o->link);
		fctl_diags_release(&d);
		fctl_profile_free(p);
		return -ENOENT;
	}
	snprintf(rep->link, sizeof(rep->link), "%s", l->name);
	snprintf(rep->profile, sizeof(rep->profile), "%s", o->profile);
	snprintf(rep->profile_name, sizeof(rep->profile_name), "%s", p->name);
	rep->profile_version = p->version;
	fctl_format_hex(p->sha256, 32, o->profile_sha256);
	rep->slo.present = p->slo.present;
	rep->slo.has_p99 = p->slo.has_latency_p99;
	rep->slo.p99_us = p->slo.latency_p99_us;
	rep->slo.has_p999 = p->slo.has_latency_p999;
	rep->slo.p999_us = p->slo.latency_p999_us;
	rep->slo.has_bw = p->slo.has_bandwidth;
	rep->slo.bw_gbps = p->slo.bandwidth_gbps;
	rep->slo.max_loss = p->slo.max_loss;
	rep->slo.has_max_retrans = p->slo.has_max_retransmissions;
	rep->slo.max_retrans = p->slo.max_retransmissions;
	rep->slo.require_macsec = l->macsec != NULL;
	for (size_t v = 0; v < l->n_vlans; v++)
		if (l->vlans[v].macsec)
			rep->slo.require_macsec = true;
	fctl_diags_release(&d);
	fctl_profile_free(p);
	return 0;
}

/* The runs in order: every test at every size. */
static size_t plan_runs(const struct run_opts *o, struct probe_result *res, size_t cap)
{
	size_t n = 0;

	for (size_t t = 0; t < o->n_tests; t++) {
		bool lat = fctl_rdma_test_is_lat(o->tests[t]);
		uint32_t def = lat ? 2 : 65536; /* perftest's defaults */

		if (o->sweep) {
			for (uint64_t s = 2; s <= o->sweep_max && n < cap; s *= 2) {
				snprintf(res[n].test, sizeof(res[n].test), "%s",
					 fctl_rdma_test_name(o->tests[t]));
				res[n++].size = (uint32_t)s;
			}
		} else if (n < cap) {
			snprintf(res[n].test, sizeof(res[n].test), "%s", fctl_rdma_test_name(o->tests[t]));
			res[n++].size = o->size ? o->size : def;
		}
	}
	return n;
}

struct conn {
	int fd;
	struct fctl_rdma_ep *ep;
	struct fctl_nl *nl;
	bool broken; /* the session cannot go on */
};

/* One run; returns 0, or < 0 when the control connection is lost (env error). */
static int one_run(struct conn *c, const struct run_opts *o, struct probe_result *res)
{
	struct fctl_rdma_params p = { .watch_fd = c->fd, .stall_ns = o->stall_ns };
	struct fctl_rdma_result r = { 0 };
	struct evidence ev;
	char line[600];
	uint64_t *samples = NULL;
	int ret, rl;

	fctl_rdma_test_from_name(res->test, &p.test);
	res->has_lat = fctl_rdma_test_is_lat(p.test);
	p.size = res->size;
	p.duration_ns = o->duration_ns;
	p.iters = o->duration_ns ? 0 : o->iters ? o->iters : res->has_lat ? 1000 : 5000;
	p.bidirectional = o->bidir && !res->has_lat;
	res->bidirectional = p.bidirectional;
	snprintf(res->end[0].role, sizeof(res->end[0].role), "client");
	snprintf(res->end[1].role, sizeof(res->end[1].role), "server");

	evidence_begin(&ev, c->nl, fctl_rdma_ep_dev_name(c->ep), o->rdma.ib_port,
		       fctl_rdma_ep_netdev(c->ep));
	ctl_send(c->fd, "TEST test=%s size=%" PRIu32 " iters=%" PRIu64 " duration_ns=%" PRIu64
			" stall_ns=%" PRIu64 "%s",
		 res->test, p.size, p.iters, p.duration_ns, p.stall_ns,
		 p.bidirectional ? " bidir=1" : "");
	rl = ctl_recv_line(c->fd, line, sizeof(line), CTL_MS);
	if (rl < 0 || strcmp(line, "GO") != 0) {
		snprintf(res->error, sizeof(res->error), "the peer did not start the run: %s",
			 rl < 0 ? strerror(-rl) : line);
		c->broken = true;
		return -EPROTO;
	}
	ret = fctl_rdma_run_client(c->ep, &p, &r);
	ctl_send(c->fd, ret < 0 ? "ABORT" : "DONE");
	res->end[0].iters = r.iters;
	res->end[0].cpu_ns = r.cpu_ns;
	/* bidirectional: the server's loop may still run; its counters come after it ends */
	if (!p.bidirectional)
		evidence_end(&ev, c->nl, &res->end[0]);
	res->iters = r.iters;
	res->elapsed_ns = r.elapsed_ns;
	res->gbps = r.gbps;
	res->msg_rate_mpps = r.msg_rate_mpps;
	if (ret < 0) {
		snprintf(res->error, sizeof(res->error), "%s", r.err);
		if (r.wc_status) {
			res->wc_status = r.wc_status;
			snprintf(res->wc_status_str, sizeof(res->wc_status_str), "%s",
				 ibv_wc_status_str((enum ibv_wc_status)r.wc_status));
		}
		c->broken = true; /* the QP is in the error state now */
	}
	/* the server's end */
	for (;;) {
		rl = ctl_recv_line(c->fd, line, sizeof(line), CTL_MS);
		if (rl < 0) {
			if (!res->error[0])
				snprintf(res->error, sizeof(res->error),
					 "the peer's counters did not arrive: %s",
					 rl == -ECONNRESET ? "the peer closed the connection"
							   : strerror(-rl));
			c->broken = true;
			break;
		}
		if (strncmp(line, "FAIL ", 5) == 0) {
			if (!res->error[0])
				snprintf(res->error, sizeof(res->error), "peer: %s", line + 5);
			continue;
		}
		rl = probe_end_from_wire(line, &res->end[1]);
		if (rl == 1) {
			res->has_peer = true;
			break;
		}
	}
	snprintf(res->end[1].role, sizeof(res->end[1].role), "server");
	if (p.bidirectional) {
		evidence_end(&ev, c->nl, &res->end[0]);
		res->end[0].bytes = r.bytes;
		res->end[0].elapsed_ns = r.elapsed_ns;
		res->gbps_client = r.gbps;
		if (res->end[1].elapsed_ns)
			res->gbps_server = (double)res->end[1].bytes * 8 / (double)res->end[1].elapsed_ns;
		res->gbps = res->gbps_client + res->gbps_server;
	}
	if (ret == 0 && res->has_lat) {
		size_t n = r.iters > 1 ? r.iters - 1 : 0;

		samples = n ? calloc(n, sizeof(*samples)) : NULL;
		if (n < 3 || !samples) {
			snprintf(res->error, sizeof(res->error), "%" PRIu64 " iterations: too few for "
				 "statistics (at least 4)", r.iters);
			ret = -EINVAL;
		} else {
			fctl_stats_deltas(r.post_ns, r.iters, samples);
			fctl_stats_compute(samples, n, fctl_rdma_test_rtt_factor(p.test), &res->pt,
					   &res->ex);
		}
		free(samples);
	}
	res->ran = ret == 0;
	fctl_rdma_result_release(&r);
	return c->broken && !res->has_peer ? -ECONNRESET : 0;
}

/*
 * Connects to the peer and brings the queue pair to RTS: the TCP exchange builds the
 * endpoint first (a wrong device fails before the peer is asked); rdma_cm finds the device
 * from the route to the peer. What it opens is stored in c, also on failure, for the
 * caller to close. Returns 0, or a negative errno after saying why.
 */
static int open_session(struct conn *c, const struct run_opts *o,
			const struct probe_report *rep, uint32_t max_size)
{
	char err[200] = "", line[600], info[FCTL_RDMA_QPINFO_LEN];
	struct fctl_rdma_qpinfo me, peer;
	int ret;

	if (!o->cm) {
		ret = fctl_rdma_ep_new(&o->rdma, &c->ep, err, sizeof(err));
		if (ret < 0) {
			perr("run: %s", err);
			return ret;
		}
	}
	if (fctl_nl_open(NULL, &c->nl) < 0)
		c->nl = NULL;
	c->fd = ctl_connect(o->host, o->port, o->connect_ms, err, sizeof(err));
	/* --wait-peer: the serving end may still be starting (a fabric probe starts both) */
	for (int waited = 0; c->fd == -ECONNREFUSED && waited < o->wait_peer_ms; waited += 200) {
		usleep(200000);
		c->fd = ctl_connect(o->host, o->port, o->connect_ms, err, sizeof(err));
	}
	if (c->fd < 0) {
		perr("run: %s (is 'fabricctl probe serve' running there?)", err);
		return c->fd;
	}
	ctl_send(c->fd, "HELLO %d test=%s max_size=%" PRIu32 " depth=%" PRIu32
		       " timeout=%u retry=%u rnr=%u%s%d",
		 PROBE_PROTO, rep->res[0].test, max_size, o->rdma.tx_depth, o->rdma.timeout,
		 o->rdma.retry_cnt, o->rdma.rnr_retry, o->cm ? " cm=1 cm_ms=" : " cm=0 cm_ms=",
		 o->cm_ms);
	ret = ctl_recv_line(c->fd, line, sizeof(line), CTL_MS);
	if (o->cm) {
		uint64_t cm_port = 0;

		if (ret < 0 || strncmp(line, "CM ", 3) != 0 || !ctl_field_u64(line, "port", &cm_port) ||
		    !cm_port || cm_port > 65535) {
			perr("run: the peer %s refused the rdma_cm session: %s", rep->peer,
			     ret < 0 ? (ret == -ECONNRESET ? "it closed the connection" : strerror(-ret))
			     : strncmp(line, "ERR ", 4) == 0 ? line + 4 : line);
			return ret < 0 ? ret : -EPROTO;
		}
		ret = fctl_rdma_cm_connect(&o->rdma, o->host, (uint16_t)cm_port, o->cm_ms, &c->ep,
					   err, sizeof(err));
		if (ret < 0) {
			perr("run: %s", err);
			return ret;
		}
	} else {
		if (ret < 0 || strncmp(line, "OK ", 3) != 0 ||
		    fctl_rdma_qpinfo_parse(line + 3, &peer) < 0) {
			perr("run: the peer %s refused the session: %s", rep->peer,
			     ret < 0 ? (ret == -ECONNRESET ? "it closed the connection" : strerror(-ret))
			     : strncmp(line, "ERR ", 4) == 0 ? line + 4 : line);
			return ret < 0 ? ret : -EPROTO;
		}
		ret = fctl_rdma_ep_connect(c->ep, &peer, err, sizeof(err));
		if (ret < 0) {
			perr("run: %s", err);
			return ret;
		}
		fctl_rdma_ep_info(c->ep, &me);
		fctl_rdma_qpinfo_format(&me, info);
		ctl_send(c->fd, "QP %s", info);
	}
	ret = ctl_recv_line(c->fd, line, sizeof(line), CTL_MS);
	if (ret < 0 || strcmp(line, "RTS") != 0) {
		perr("run: the peer could not connect its queue pair: %s",
		     ret < 0 ? strerror(-ret) : strncmp(line, "ERR ", 4) == 0 ? line + 4 : line);
		return ret < 0 ? ret : -EPROTO;
	}
	return 0;
}

/* Runs every planned run in order (none after a broken one), then says BYE if it can.
 * Returns whether any run failed for a reason of the environment, not of the fabric. */
static bool run_all(struct conn *c, const struct run_opts *o, struct probe_report *rep)
{
	bool env_error = false;

	for (size_t i = 0; i < rep->n_res; i++) {
		if (c->broken) {
			snprintf(rep->res[i].error, sizeof(rep->res[i].error),
				 "not run: an earlier run failed");
			snprintf(rep->res[i].end[0].role, 8, "client");
			continue;
		}
		if (one_run(c, o, &rep->res[i]) < 0)
			env_error = true;
		if (!rep->res[i].ran && !rep->res[i].wc_status)
			env_error = true;
		if (o->out == OUT_TEXT && !rep->res[i].ran)
			perr("run: %s size %" PRIu32 ": %s", rep->res[i].test, rep->res[i].size,
			     rep->res[i].error);
	}
	if (!c->broken)
		ctl_send(c->fd, "BYE");
	return env_error;
}

/* The same report as STATE_DIR/probe/links/LINK@NETDEV, a link's own last run, kept
 * beside the other links' (the fabric probe runs each link of a host in turn): the
 * agent's per-link metrics. Only for a run of a profile's link over a named device. */
static void write_link(const char *state_dir, const struct probe_report *rep,
		       const struct fctl_buf *b)
{
	char path[4200];
	int r;

	if (!rep->link[0] || !rep->netdev[0])
		return;
	/* a link name is a profile's identifier, an interface name has no '/' */
	if (strchr(rep->link, '/') || rep->link[0] == '.' || strchr(rep->netdev, '/'))
		return;
	snprintf(path, sizeof(path), "%s/probe/links/%s@%s", state_dir, rep->link, rep->netdev);
	r = fctl_mkdir_parents(path, 0755);
	if (r == 0)
		r = probe_write_atomic(path, b);
	if (r < 0)
		perr("run: %s not written: %s", path, strerror(-r));
}

/*
 * The run for monitoring, whatever its result: STATE_DIR/probe/last for the agent (with
 * --state-dir, or FCTL_STATE_DIR when that directory exists: a managed host), a run of
 * a profile's link also as that link's (write_link), and the textfile with
 * --metrics-textfile. A file that cannot be written is said on stderr; the exit code
 * stays the run's.
 */
static void write_last(const struct run_opts *o, const struct probe_report *rep, int rc)
{
	struct fctl_buf b = { 0 };
	struct timespec ts;
	const char *sd = o->state_dir ? o->state_dir : FCTL_STATE_DIR;
	char path[4200];
	struct stat sb;
	double now;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (o->state_dir || (stat(FCTL_STATE_DIR, &sb) == 0 && S_ISDIR(sb.st_mode))) {
		snprintf(path, sizeof(path), "%s/probe/last", sd);
		r = fctl_mkdir_parents(path, 0755);
		if (r == 0)
			r = probe_report_last(rep, rc, now, &b);
		if (r == 0)
			r = probe_write_atomic(path, &b);
		if (r < 0)
			perr("run: %s not written: %s", path, strerror(-r));
		else
			write_link(sd, rep, &b);
	}
	if (o->textfile) {
		fctl_buf_reset(&b);
		r = probe_report_textfile(rep, rc, now, &b);
		if (r == 0)
			r = probe_write_atomic(o->textfile, &b);
		if (r < 0)
			perr("run: --metrics-textfile %s not written: %s", o->textfile,
			     strerror(-r));
	}
	fctl_buf_release(&b);
}

int probe_run(int argc, char **argv)
{
	struct run_opts o = { .out = OUT_TEXT, .connect_ms = 5000, .cm_ms = 10000,
			      .stall_ns = 60000000000ull,
			      .sweep_max = 65536 };
	struct probe_report rep = { 0 };
	struct conn c = { .fd = -1 };
	struct fctl_buf b = { 0 };
	struct fctl_audit *audit = NULL;
	uint32_t max_size = 0;
	int rc = PROBE_EXIT_ERROR, ret;
	bool env_error = false;

	fctl_rdma_opts_default(&o.rdma);
	snprintf(o.port, sizeof(o.port), "%d", FCTL_RDMA_DEFAULT_PORT);
	o.tests[0] = FCTL_RDMA_SEND_LAT;
	o.tests[1] = FCTL_RDMA_WRITE_BW;
	o.n_tests = 2;
	if (parse_args(argc, argv, &o) < 0)
		return PROBE_EXIT_ERROR;
	signal(SIGPIPE, SIG_IGN);
	if (o.profile && load_slo(&o, &rep) < 0)
		return PROBE_EXIT_ERROR;
	if (o.netdev) {
		char err[400];

		if (probe_netdev_pick(o.netdev, &o.rdma, err, sizeof(err)) < 0) {
			perr("run: %s", err);
			return PROBE_EXIT_ERROR;
		}
	}
	if (o.pmtu && o.netdev)
		probe_pmtu_line("client", o.host, o.netdev, o.pmtu);
	/* verdicts are audited: no run whose verdict could not be recorded */
	if (probe_audit_open(o.audit_log, &audit) < 0) {
		perr("run: refused: the audit log %s cannot be written (--audit-log PATH or "
		     "FCTL_AUDIT_LOG to use another)",
		     probe_audit_log_path(o.audit_log));
		return PROBE_EXIT_ERROR;
	}
	snprintf(rep.peer, sizeof(rep.peer), "%s:%s", o.host, o.port);
	if (o.netdev)
		snprintf(rep.netdev, sizeof(rep.netdev), "%s", o.netdev);
	rep.res = calloc(MAX_RUNS, sizeof(*rep.res));
	if (!rep.res) {
		perr("run: out of memory");
		fctl_audit_close(audit);
		return PROBE_EXIT_ERROR;
	}
	rep.n_res = plan_runs(&o, rep.res, MAX_RUNS);
	for (size_t i = 0; i < rep.n_res; i++)
		if (rep.res[i].size > max_size)
			max_size = rep.res[i].size;
	o.rdma.max_size = max_size;

	if (open_session(&c, &o, &rep, max_size) < 0)
		goto out;
	env_error = run_all(&c, &o, &rep);

	probe_report_verdict(&rep);
	if (o.out == OUT_JSON)
		probe_report_json(&rep, &b);
	else if (o.out == OUT_JUNIT)
		probe_report_junit(&rep, &b);
	else if (o.out == OUT_LINES)
		probe_report_lines(&rep, &b);
	else
		probe_report_text(&rep, &b);
	fwrite(b.data ? b.data : "", 1, b.len, stdout);
	fflush(stdout);
	rc = env_error ? PROBE_EXIT_ERROR : rep.pass ? PROBE_EXIT_PASS : PROBE_EXIT_FAIL;
	ret = probe_audit_report(audit, &rep, o.change, o.profile_sha256[0] ? o.profile_sha256 : NULL);
	if (ret >= 0)
		ret = fctl_audit_close(audit);
	else
		fctl_audit_close(audit);
	audit = NULL;
	if (ret < 0) {
		perr("run: AUDIT RECORD NOT WRITTEN: the verdicts above are not in the audit log "
		     "%s: %s",
		     probe_audit_log_path(o.audit_log), strerror(-ret));
		rc = PROBE_EXIT_ERROR;
	}
out:
	write_last(&o, &rep, rc);
	fctl_audit_close(audit);
	fctl_buf_release(&b);
	if (c.fd >= 0)
		close(c.fd);
	fctl_rdma_ep_free(c.ep);
	fctl_nl_close(c.nl);
	free(rep.res);
	return rc;
}
