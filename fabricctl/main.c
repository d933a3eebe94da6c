// SPDX-License-Identifier: MIT
/* fabricctl: apply and verify versioned VLAN/MACsec profiles. Dispatch only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *prog_name = "fabricctl";

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct cmd commands[] = {
	{ "validate", cmd_validate, "validate [--json|--junit] [--strict] FILE|DIR...",
	  "Check profiles: YAML structure, types and ranges, the kernel's MACsec rules,\n"
	  "references, uniqueness of VLANs, SCIs and interface names, link symmetry and\n"
	  "MTU budgets. Every finding is reported as FILE:LINE:COLUMN with what was found\n"
	  "and what was expected. A DIR is searched for *.yaml and *.yml files.\n"
	  "\n"
	  "  --json        one JSON object on stdout: {valid, errors, warnings, files, findings}\n"
	  "  --junit       JUnit XML on stdout, one testcase per file (for CI annotations)\n"
	  "  --strict      treat warnings as errors\n"
	  "  -q, --quiet   print nothing; use the exit code\n"
	  "\n"
	  "Exit: 0 all valid, 1 a profile is invalid, 2 usage or I/O error.\n" },
	{ "plan", cmd_plan, "plan --offline NEW [--from OLD] [--host HOST] [--json]",
	  "Compute the ordered operations that take each host from OLD (or from nothing)\n"
	  "to NEW: create VLAN, create MACsec SecY, add RX channel, add RX SA, add TX SA,\n"
	  "bring up, add addresses, and the removals, in a safe order (receive before\n"
	  "transmit, removals first). Changes the kernel cannot make in place (cipher,\n"
	  "ICV length, SCI, port, VLAN id or parent) are shown as delete + create and\n"
	  "flagged [disruptive]. Both profiles are validated first; nothing is planned\n"
	  "from an invalid profile.\n"
	  "\n"
	  "  --offline     plan between profile files without touching the kernel\n"
	  "  --from OLD    the profile version currently applied (default: nothing)\n"
	  "  --host HOST   only this host (repeatable)\n"
	  "  --json        {\"profile\":..., \"hosts\":[{\"host\",\"ops\":[...]}]}\n"
	  "\n"
	  "Exit: 0 planned, 1 a profile is invalid, 2 usage or I/O error.\n" },
	{ "diff", cmd_diff, "diff [--json] [--host HOST] OLD NEW",
	  "Show, per host, how the state described by profile NEW differs from OLD:\n"
	  "links added (+), removed (-) and changed (~) with the attributes that differ.\n"
	  "\n"
	  "  --json        {\"hosts\":[{\"host\",\"changes\":[...]}]}\n"
	  "  --host HOST   only this host (repeatable)\n"
	  "\n"
	  "Exit: 0 no differences, 1 differences found or a profile is invalid, 2 usage\n"
	  "or I/O error.\n" },
	{ "version", cmd_version, "version [--json]", "Print the version.\n" },
	{ "help", cmd_help, "help [COMMAND]", "Show help for fabricctl or one command.\n" },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s COMMAND [OPTIONS] [ARGS]\n"
		"\n"
		"Apply and verify versioned VLAN/MACsec profiles on Linux hosts.\n"
		"\n"
		"Commands:\n",
		prog_name);
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %s\n", commands[i].synopsis);
	fprintf(f, "\n"
		   "Run '%s help COMMAND' or '%s COMMAND --help' for details.\n"
		   "Exit codes: 0 success, 1 invalid input or failed check, 2 usage, I/O or\n"
		   "environment error, 3 an operation failed on a host and was rolled back.\n"
		   "Profiles: docs/profile.md. Set NO_COLOR to disable colour.\n",
		prog_name, prog_name);
}

void cli_usage_cmd(const char *name)
{
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(commands); i++) {
		if (strcmp(commands[i].name, name) == 0) {
			printf("usage: %s %s\n\n%s", prog_name, commands[i].synopsis,
			       commands[i].help);
			return;
		}
	}
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(commands); i++) {
		if (strcmp(commands[i].name, argv[1]) == 0) {
			cli_usage_cmd(argv[1]);
			return EXIT_OK;
		}
	}
	cli_err("unknown command '%s'", argv[1]);
	return EXIT_USAGE;
}

static int cmd_version(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--json") == 0)
		printf("{\"name\":\"fabricctl\",\"version\":\"%s\",\"schema\":%d}\n", FCTL_VERSION,
		       FCTL_SCHEMA_VERSION);
	else
		printf("fabricctl %s (profile schema %d)\n", FCTL_VERSION, FCTL_SCHEMA_VERSION);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	const char *names[FCTL_ARRAY_SIZE(commands)];
	const char *guess;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version(1, argv);
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(commands); i++) {
		names[i] = commands[i].name;
		if (strcmp(commands[i].name, argv[1]) == 0) {
			if (argc > 2 && (strcmp(argv[2], "--help") == 0 ||
					 strcmp(argv[2], "-h") == 0)) {
				cli_usage_cmd(argv[1]);
				return EXIT_OK;
			}
			return commands[i].fn(argc - 1, argv + 1);
		}
	}
	guess = fctl_did_you_mean(argv[1], names, FCTL_ARRAY_SIZE(commands));
	if (guess)
		cli_err("unknown command '%s'; did you mean '%s'?", argv[1], guess);
	else
		cli_err("unknown command '%s'; see '%s --help'", argv[1], prog_name);
	return EXIT_USAGE;
}
