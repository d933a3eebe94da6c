// SPDX-License-Identifier: MIT
/*
 * fabricctl probe ...: runs the probe program, fabricctl-probe (probes/), so
 * that the fabricctl binary never links libibverbs. The program is looked for
 * where it is installed; a fabricctl run from its build tree looks first in
 * $FCTL_PROBE_BIN and next to this build's binaries (cli_helper_path).
 * `probe --fabric` is cmd_probe_fabric.c; the agent's probe-serve and probe-run workers
 * run cli_probe_request (below), which execs the probe for its end of the link.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <inttypes.h>

#include "cli.h"
#include "fctl/agent.h"
#include "fctl/fabric_probe.h"

static const char *find_probe(void)
{
	return cli_helper_path("FCTL_PROBE_BIN", FCTL_PROBE_BUILD_PATH, FCTL_PROBE_INSTALL_PATH,
			       X_OK);
}

int cmd_probe(int argc, char **argv)
{
	const char *bin = find_probe();
	char **args;

	for (int a = 1; a < argc; a++)
		if (strcmp(argv[a], "--fabric") == 0 || strncmp(argv[a], "--fabric=", 9) == 0)
			return cmd_probe_fabric(argc, argv);

	if (!bin) {
		cli_helper_missing("probe", "fabricctl-probe", "FCTL_PROBE_BIN", FCTL_PROBE_BUILD_PATH,
				   FCTL_PROBE_INSTALL_PATH);
		return EXIT_USAGE;
	}
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args)
		return EXIT_USAGE;
	/* argv[0] "fabricctl": the probe names itself 'fabricctl probe' in usage and errors */
	args[0] = (char *)(uintptr_t)"fabricctl"; /* execv's argv is not written */
	for (int a = 1; a < argc; a++)
		args[a] = argv[a];
	fflush(stdout);
	fflush(stderr);
	execv(bin, args);
	cli_err("probe: cannot run %s: %s", bin, strerror(errno));
	free(args);
	return EXIT_USAGE;
}

/* --- the agent's side of the fabric probe (probe-serve, probe-run) --- */

/* A spec word's value: [A-Za-z0-9._,-]+ of at most len-1 bytes; "" when absent. A value
 * with anything else is refused (-EINVAL): nothing from the wire reaches argv unchecked. */
static int spec_word(const char *spec, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);

	out[0] = '\0';
	for (const char *p = spec; (p = strstr(p, key)); p += kl) {
		size_t n;

		if ((p != spec && p[-1] != ' ') || p[kl] != '=')
			continue;
		p += kl + 1;
		n = strcspn(p, " ");
		if (!n || n >= len || strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
						"0123456789._,-") < n)
			return -EINVAL;
		memcpy(out, p, n);
		out[n] = '\0';
		return 0;
	}
	return 0;
}

struct probe_spec {
	char link[128], vlan[8], port[8], deadline[8], tests[64], iters[12], size[12], qpt[4];
};

static int spec_parse(const char *s, struct probe_spec *ps)
{
	uint64_t x;

	if (!s || spec_word(s, "link", ps->link, sizeof(ps->link)) < 0 ||
	    spec_word(s, "vlan", ps->vlan, sizeof(ps->vlan)) < 0 ||
	    spec_word(s, "port", ps->port, sizeof(ps->port)) < 0 ||
	    spec_word(s, "deadline", ps->deadline, sizeof(ps->deadline)) < 0 ||
	    spec_word(s, "tests", ps->tests, sizeof(ps->tests)) < 0 ||
	    spec_word(s, "iters", ps->iters, sizeof(ps->iters)) < 0 ||
	    spec_word(s, "size", ps->size, sizeof(ps->size)) < 0 ||
	    spec_word(s, "qp_timeout", ps->qpt, sizeof(ps->qpt)) < 0 || !ps->link[0] ||
	    fctl_parse_u64(ps->vlan, &x) < 0 || x > 4094 || fctl_parse_u64(ps->port, &x) < 0 ||
	    x < 1024 || x > 65535 || fctl_parse_u64(ps->deadline, &x) < 0 || !x || x > 3600)
		return -EINVAL;
	return 0;
}

/* end 0 serves, end 1 runs: the argv of fabricctl-probe for this host's end */
static void probe_argv(const struct fctl_agent_request *rq, const struct probe_spec *ps,
		       const struct fctl_probe_item *it, int end, char **av, char bufs[][300])
{
	int n = 0, b = 0;
	uint64_t dl = 0;

	fctl_parse_u64(ps->deadline, &dl);
#define ARG(...) (snprintf(bufs[b], sizeof(bufs[b]), __VA_ARGS__), av[n++] = bufs[b++])
	ARG("fabricctl-probe");
	if (end == 0) {
		ARG("serve");
		ARG("--once");
		ARG("--port");
		ARG("%s", ps->port);
		/* the client comes within a third (its --wait-peer): a dead one frees this
		 * end well before the deadline, so that this end's answer says so in time */
		ARG("--idle-timeout");
		ARG("%" PRIu64, dl * 2 / 3 ? dl * 2 / 3 : 1);
		ARG("--pmtu-peer");
		ARG("%s", it->addr[1]);
	} else {
		ARG("run");
		ARG("--peer");
		ARG("%s:%s", it->addr[0], ps->port);
		ARG("--wait-peer");
		ARG("%" PRIu64, dl / 3 ? dl / 3 : 1);
		ARG("--stall-timeout");
		ARG("%" PRIu64, dl);
		ARG("--profile");
		ARG("%s", rq->profile_path);
		ARG("--link");
		ARG("%s", ps->link);
		ARG("--lines");
		if (ps->tests[0]) {
			ARG("--test");
			ARG("%s", ps->tests);
		}
		if (ps->iters[0]) {
			ARG("--iters");
			ARG("%s", ps->iters);
		}
		if (ps->size[0]) {
			ARG("--size");
			ARG("%s", ps->size);
		}
		if (ps->qpt[0]) {
			ARG("--qp-timeout");
			ARG("%s", ps->qpt);
		}
		if (rq->audit_log) {
			ARG("--audit-log");
			ARG("%s", rq->audit_log);
		}
		if (rq->state_dir) {
			ARG("--state-dir");
			ARG("%s", rq->state_dir);
		}
	}
	ARG("--netdev");
	ARG("%s", it->ifname[end]);
	ARG("--pmtu");
	ARG("%u", it->mtu);
#undef ARG
	av[n] = NULL;
}

int cli_probe_request(const struct fctl_agent_request *rq)
{
	const char *bin = find_probe();
	struct fctl_profile *p = NULL;
	struct fctl_probe_item it;
	struct probe_spec ps = { 0 };
	char err[512], bufs[40][300], *av[41];
	uint64_t vlan = 0, dl = 0;
	int end, rc;

	if (spec_parse(rq->probe, &ps) < 0 || !rq->profile_path || !rq->host) {
		cli_err("probe: a bad probe spec, or no profile or host");
		return EXIT_USAGE;
	}
	if (!bin) {
		cli_helper_missing("probe", "fabricctl-probe", "FCTL_PROBE_BIN", FCTL_PROBE_BUILD_PATH,
				   FCTL_PROBE_INSTALL_PATH);
		return EXIT_USAGE;
	}
	rc = cli_load_profile(rq->profile_path, &p, true, false);
	if (rc != EXIT_OK)
		return EXIT_USAGE;
	fctl_parse_u64(ps.vlan, &vlan);
	fctl_parse_u64(ps.deadline, &dl);
	if (fctl_probe_item_find(p, ps.link, (unsigned)vlan, &it, err, sizeof(err)) < 0) {
		cli_err("probe: %s", err);
		fctl_profile_free(p);
		return EXIT_USAGE;
	}
	fctl_profile_free(p);
	end = rq->type == FCTL_MSG_PROBE_SERVE ? 0 : 1;
	if (strcmp(it.host[end], rq->host) != 0) {
		cli_err("probe: %s is not end %c of link '%s' (%s is): that end %s", rq->host,
			end ? 'b' : 'a', ps.link, it.host[end], end ? "runs" : "serves");
		return EXIT_USAGE;
	}
	probe_argv(rq, &ps, &it, end, av, bufs);
	fflush(stdout);
	fflush(stderr);
	/* the probe's own deadline: whatever it waits for, it is gone by then (SIGALRM
	 * survives the exec), and the agent answers before the client gives up */
	alarm((unsigned)dl + 1);
	execv(bin, av);
	cli_err("probe: cannot run %s: %s", bin, strerror(errno));
	return EXIT_USAGE;
}
