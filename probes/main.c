// SPDX-License-Identifier: MIT
/*
 * fabricctl-probe: RDMA latency and bandwidth probes over a link, with loss
 * proven from counters on both ends, the MACsec check and SLO verdicts.
 * `fabricctl probe ...` runs this program (docs/probes.md).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

const char *prog = "fabricctl-probe";

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis;
} cmds[] = {
	{ "serve", probe_serve,
	  "serve [--port P] [--dev DEV] [--ib-port N] [--gid-index N] [--once]\n"
	  "      [--idle-timeout S] [--netdev IF] [--pmtu MTU --pmtu-peer IP]" },
	{ "run", probe_run,
	  "run --peer HOST[:PORT] [--dev DEV] [--test T[,T...]] [--size N | --sweep]\n"
	  "      [--iters N | --duration S] [--profile FILE --link NAME] [--json | --junit]\n"
	  "      [--qp-timeout N] [--retry-count N] [--rnr-retry N] [--depth N]\n"
	  "      [--stall-timeout S] [--connect-timeout S] [--gid-index N] [--ib-port N]\n"
	  "      [--audit-log PATH] [--change ID] [--metrics-textfile PATH] [--state-dir DIR]\n"
	  "      [--netdev IF] [--wait-peer S] [--pmtu MTU] [--lines]\n"
	  "    every verdict is an audit record (action probe): --audit-log or FCTL_AUDIT_LOG,\n"
	  "    --change or FCTL_CHANGE_ID, as for apply\n"
	  "    the run for monitoring: STATE_DIR/probe/last (--state-dir, default\n"
	  "    /var/lib/fabricctl when it exists) for the agent's metrics, and with\n"
	  "    --metrics-textfile node_exporter's textfile format (written atomically)\n"
	  "    tests: send_lat write_lat read_lat send_bw write_bw read_bw" },
};

void perr(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int parse_u8_opt(const char *name, const char *v, unsigned max, uint8_t *out)
{
	uint64_t x;

	if (!v || fctl_parse_u64(v, &x) < 0 || x > max) {
		perr("%s takes a number 0..%u, not '%s'", name, max, v ? v : "");
		return -1;
	}
	*out = (uint8_t)x;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage:\n");
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %s %s\n", prog, cmds[i].synopsis);
	fprintf(f, "exit: 0 every probe passed, 1 a probe failed its SLO, 2 usage or environment "
		   "error\n");
}

int main(int argc, char **argv)
{
	/* run through fabricctl (argv[0] "fabricctl"): say what the user typed */
	if (argc > 0 && argv[0] && strcmp(argv[0], "fabricctl") == 0)
		prog = "fabricctl probe";
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? PROBE_EXIT_ERROR : PROBE_EXIT_PASS;
	}
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(cmds); i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		for (int a = 2; a < argc; a++) {
			if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
				printf("usage: %s %s\n", prog, cmds[i].synopsis);
				return PROBE_EXIT_PASS;
			}
		}
		return cmds[i].fn(argc - 1, argv + 1);
	}
	perr("unknown command '%s'", argv[1]);
	usage(stderr);
	return PROBE_EXIT_ERROR;
}
