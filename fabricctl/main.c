// SPDX-License-Identifier: MIT
/* fabricctl: apply and verify versioned VLAN/MACsec profiles. Dispatch only. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *prog_name = "fabricctl";

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct option version_opts[] = { { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };

static const struct option *opts_version(const char *cmd, const char *sub)
{
	(void)cmd;
	(void)sub;
	return version_opts;
}

/* The options of the remote form (--target, --fabric) of the host commands. */
#define REMOTE_HELP                                                                       \
	"Remote, through the agents (docs/agent.md), instead of this host's kernel:\n"      \
	"  --target HOST    one agent: a host of the inventory, or an endpoint ADDR:PORT,\n" \
	"                   [V6]:PORT or unix:PATH (an agent's Unix socket, e.g.\n"        \
	"                   unix:/run/fabricctl/agent.sock); prints what that host prints\n" \
	"  --fabric         every host of the inventory, in parallel\n"                     \
	"  --inventory FILE 'HOST ENDPOINT' lines (default: the profile's hosts[].agent)\n"  \
	"  --profile FILE   the profile that names the hosts (when no PROFILE is given)\n"  \
	"  --cert F --key F --ca F\n"                                                        \
	"                   mutual TLS identity (default $FCTL_CERT, $FCTL_KEY, $FCTL_CA)\n" \
	"  --parallel N     with --fabric: hosts at a time (1..1024; default 64, or one\n"  \
	"                   per 16 hosts above 1024 hosts)\n"                              \
	"  --timeout DUR    per host: connect, TLS handshake and answer (1s..1h,\n"        \
	"                   default 10s); a host over it is reported 'timed out after Ns'\n" \
	"  --whole-profile  plan, diff: send each host the whole profile, not its part\n"  \
	"                   (its entry, its links and their far ends' entries)\n"          \
	"  -q, --quiet      with --fabric: no progress lines\n"

static const struct cmd commands[] = {
	{ "validate", cmd_validate, "validate [--json|--junit] [--strict] FILE|DIR...",
	  "Check profiles: YAML structure, types and ranges, the kernel's MACsec rules,\n"
	  "references, uniqueness of VLANs, SCIs and interface names, link symmetry and\n"
	  "MTU budgets. Every finding is reported as FILE:LINE:COLUMN with what was found\n"
	  "and what was expected. A DIR is searched for *.yaml and *.yml files.\n"
	  "\n"
	  "FILE '-' is standard input; a pipe works as a file (validate <(git show ...)).\n"
	  "\n"
	  "  --json        one JSON object on stdout: {valid, errors, warnings, files, findings}\n"
	  "  --junit       JUnit XML on stdout, one testcase per finding (CI annotations)\n"
	  "                (--json and --junit exclude each other)\n"
	  "  --strict      treat warnings as errors (each finding is counted once)\n"
	  "  -q, --quiet   print nothing; use the exit code\n"
	  "\n"
	  "Exit: 0 all valid, 1 a profile is invalid, 2 usage or I/O error.\n",
	  "check profiles against the schema and the kernel's rules", cli_opts_validate },
	{ "plan", cmd_plan,
	  "plan [--json|--markdown] [--detailed-exitcode] [--out FILE] [--netns NAME] [--host HOST]\n"
	  "            PROFILE\n"
	  "       plan --offline [--json|--markdown] [--detailed-exitcode] [--host HOST]...\n"
	  "            NEW [--from OLD]",
	  "Compute the ordered operations that take a host to the state PROFILE\n"
	  "describes: create VLAN, create MACsec SecY (protect on), add RX channel, add\n"
	  "RX SA, add TX SA, bring up, add addresses, and the removals, in a safe order\n"
	  "(receive before transmit, removals first). Changes the kernel cannot make in\n"
	  "place (cipher, ICV length, SCI, port, VLAN id or parent) are shown as delete +\n"
	  "create and flagged [disruptive]; so is removing a protected link (a SecY or\n"
	  "the VLAN under it). Nothing is planned from an invalid profile.\n"
	  "\n"
	  "Live (default): from this host's kernel state, read over netlink; only links\n"
	  "the profile or the last applied profile manage are considered. A link the plan\n"
	  "creates on a device this host does not have (a VLAN on a missing port) is a\n"
	  "warning, FILE:LINE:COL of the profile's link end with code parent-missing (in\n"
	  "--json: findings); the plan is still printed and its exit is unchanged, and\n"
	  "apply refuses it.\n"
	  "Offline: between two profile files, without touching the kernel (for review\n"
	  "in CI); every host of the profiles is planned.\n"
	  "\n"
	  "  --offline        plan between profile files\n"
	  "  --from OLD       (offline) the version currently applied; default nothing\n"
	  "  --host HOST      live: the profile host this machine is (default: hostname);\n"
	  "                   offline: only this host (repeatable)\n"
	  "  --netns NAME     act inside network namespace NAME (/run/netns/NAME)\n"
	  "  --state-dir DIR  journal and history (default /var/lib/fabricctl)\n"
	  "  --json           machine-readable plan\n"
	  "  --markdown       the plan as Markdown, for a review comment (a section per\n"
	  "                   host, its operations in a diff block, disruptive called out)\n"
	  "  --detailed-exitcode  exit 0 only when there is nothing to do: 4 changes, 5 a\n"
	  "                   disruptive change (1 and 2 keep their meaning)\n"
	  "  --out FILE       live: also save the plan to FILE (written atomically; keys by\n"
	  "                   key id only) with what it binds: the profile's SHA-256, this\n"
	  "                   host, and a digest of the live state it was computed against;\n"
	  "                   'apply --plan FILE' applies exactly it\n"
	  "\n"
	  REMOTE_HELP
	  "\n"
	  "Exit: 0 planned, 1 a profile is invalid, 2 usage, I/O or netlink error; with\n"
	  "--detailed-exitcode 0 no changes, 4 changes, 5 disruptive changes.\n",
	  "show the ordered netlink operations a profile needs", cli_opts_plan },
	{ "apply", cmd_apply,
	  "apply [--json] [--dry-run [--detailed-exitcode]] [--confirm DURATION] [--netns NAME]\n"
	  "             [--host HOST] [--state-dir DIR] [--audit-log PATH] [--change ID] [-q]\n"
	  "             PROFILE\n"
	  "       apply --plan FILE [OPTIONS] [PROFILE]",
	  "Apply PROFILE to this host through netlink, all or nothing: live state is read,\n"
	  "planned against the profile, every key is fetched, the prior state is written\n"
	  "to a journal, then the plan runs. If any step fails (the kernel's extended-ACK\n"
	  "text is shown), the steps already made are undone and a fresh dump is checked\n"
	  "against the prior state. After success a fresh dump must match the profile\n"
	  "exactly, and the profile is recorded in the history for 'rollback --to'.\n"
	  "Applying the same profile again makes zero netlink writes. An apply that a\n"
	  "crash interrupted is rolled back first. MACsec devices are created with\n"
	  "protect on, receive SAs before transmit SAs, addresses last.\n"
	  "\n"
	  "  --dry-run        plan only (same as 'plan'); with --detailed-exitcode, plan's\n"
	  "                   exit: 0 no changes, 4 changes, 5 a disruptive change\n"
	  "  --confirm DURATION\n"
	  "                   a confirmed apply (as Junos 'commit confirmed'): unless\n"
	  "                   'fabricctl confirm' runs on this host within DURATION (1s to\n"
	  "                   7d: 90, 90s, 5m, 1h30m), the host goes back to the version\n"
	  "                   applied before (nothing applied before: teardown). A watchdog\n"
	  "                   process of its own session owns the deadline, so the rollback\n"
	  "                   happens when this command, its terminal or the path to the\n"
	  "                   host are gone; after a reboot, 'recover' (and the agent at its\n"
	  "                   start) makes it. Until then other changes are refused.\n"
	  "                   With --target HOST the deadline travels to the host's agent\n"
	  "                   and the watchdog runs there: confirm with 'confirm --target\n"
	  "                   HOST'; an agent too old for it refuses the apply (exit 2).\n"
	  "                   Not with --fabric or --dry-run.\n"
	  "  --plan FILE      apply exactly the plan 'plan --out FILE' saved (as terraform's\n"
	  "                   saved plans): refused, nothing changed, exit 1, when PROFILE's\n"
	  "                   bytes are not those it was made from, it was made for another\n"
	  "                   host or netns, the live state changed since (checked under the\n"
	  "                   apply lock), the plan computed now differs, or FILE was edited.\n"
	  "                   PROFILE defaults to the file the plan names\n"
	  "  --host HOST      the profile host this machine is (default: hostname)\n"
	  "  --netns NAME     act inside network namespace NAME\n"
	  "  --state-dir DIR  journal and history (default /var/lib/fabricctl)\n"
	  "  --audit-log PATH the audit log (default $FCTL_AUDIT_LOG, else\n"
	  "                   /var/lib/fabricctl/audit/audit.log); apply is refused when it\n"
	  "                   cannot be written\n"
	  "  --change ID      the change id the audit record names (default $FCTL_CHANGE_ID)\n"
	  "  --json           result as JSON: result, ops, netlink writes, error\n"
	  "  -q, --quiet      no output on success\n"
	  "\n"
	  REMOTE_HELP
	  "  --partial        with --fabric: keep the hosts that applied when others fail\n"
	  "\n"
	  "Exit: 0 applied or unchanged, 1 invalid profile or a stale or edited saved plan\n"
	  "(nothing written), 2 usage, I/O, key or environment error (a link's parent\n"
	  "device missing too), or a confirmation is pending (nothing written),\n"
	  "3 failed and rolled back (with --confirm: also when the watchdog cannot start).\n",
	  "apply a profile to this host, all or nothing", cli_opts_host },
	{ "confirm", cmd_confirm,
	  "confirm [--json] [--cancel] [--netns NAME] [--host HOST] [--state-dir DIR]\n"
	  "             [--audit-log PATH] [--change ID] [-q]\n"
	  "       fabricctl confirm --target HOST|--fabric [--json] [--cert F --key F --ca F]",
	  "Confirm the apply --confirm that awaits confirmation on this host: its version\n"
	  "stays, its watchdog ends, and the audit log records it (action confirm). Too\n"
	  "late once its deadline passed: the host goes back to the version before (audit\n"
	  "action confirm-rollback), which 'history' then shows as the latest entry.\n"
	  "'show --json' says what is pending (confirm: version, deadline,\n"
	  "rollback_to_version), and so does the agent's 'status'. With --target HOST the\n"
	  "host's agent confirms it (after 'apply --target HOST --confirm'); it needs an\n"
	  "operator certificate (a viewer's is refused: exit 2, permission denied).\n"
	  "\n"
	  "  --cancel         do not wait for the deadline: go back to the version before now\n"
	  "  --host HOST      the profile host this machine is (default: hostname)\n"
	  "  --netns NAME     act inside network namespace NAME\n"
	  "  --state-dir DIR  where the pending record is (default /var/lib/fabricctl)\n"
	  "  --audit-log PATH the audit log, as for apply\n"
	  "  --change ID      the change id the audit record names (default $FCTL_CHANGE_ID)\n"
	  "  --json           {host, result: confirmed, none or too-late, version, deadline}\n"
	  "  -q, --quiet      no output on success\n"
	  "\n"
	  REMOTE_HELP
	  "\n"
	  "Exit: 0 confirmed (or cancelled), 1 nothing is pending or its deadline passed,\n"
	  "2 usage, I/O or lock error (--target: also a role that may not confirm, no\n"
	  "answer from the agent), 3 the rollback of --cancel failed.\n",
	  "confirm a confirmed apply before its deadline", cli_opts_confirm },
	{ "rollback", cmd_rollback,
	  "rollback --to VERSION [--json] [--dry-run] [--netns NAME] [--host HOST]\n"
	  "             [--state-dir DIR] [--audit-log PATH] [--change ID] [-q]",
	  "Apply an earlier profile version again, from the copy stored in the history\n"
	  "when it was applied (see 'history'). Same guarantees as 'apply'. To remove\n"
	  "everything fabricctl made instead, 'teardown' ('--to 0' says so).\n"
	  "\n"
	  "  --to VERSION     the profile version to go back to (from 'history')\n"
	  "  --dry-run        plan only\n"
	  "  --host HOST      the profile host this machine is (default: hostname)\n"
	  "  --netns NAME     act inside network namespace NAME\n"
	  "  --state-dir DIR  journal and history (default /var/lib/fabricctl)\n"
	  "  --audit-log PATH the audit log, as for apply\n"
	  "  --change ID      the change id the audit record names (default $FCTL_CHANGE_ID)\n"
	  "  --json           result as JSON, as for apply\n"
	  "  -q, --quiet      no output on success\n"
	  "\n"
	  REMOTE_HELP
	  "\n"
	  "Exit: as 'apply'; 2 when VERSION was never applied on this host.\n",
	  "apply an earlier profile version again", cli_opts_host },
	{ "teardown", cmd_teardown,
	  "teardown [--dry-run] [--json] [--netns NAME] [--host HOST] [--state-dir DIR]\n"
	  "             [--audit-log PATH] [--change ID] [-q]",
	  "Remove every link fabricctl manages on this host (those of the last applied\n"
	  "profile: addresses, SAs, RX channels, MACsec and VLAN devices), back to nothing\n"
	  "fabricctl made. All or nothing, as apply: the prior state goes to the journal\n"
	  "first, a failed step rolls every removal back, a fresh dump must hold none of\n"
	  "them, and the result is an audit record (action teardown). Links fabricctl did\n"
	  "not make are left alone. The history is kept: 'rollback --to VERSION' applies\n"
	  "a version again.\n"
	  "\n"
	  "  --dry-run        the plan of the removals; nothing changed, nothing recorded\n"
	  "  --host HOST      the profile host this machine is (default: hostname)\n"
	  "  --netns NAME     act inside network namespace NAME\n"
	  "  --state-dir DIR  journal and history (default /var/lib/fabricctl)\n"
	  "  --audit-log PATH the audit log (default $FCTL_AUDIT_LOG, else\n"
	  "                   /var/lib/fabricctl/audit/audit.log); refused when it cannot\n"
	  "                   be written\n"
	  "  --change ID      the change id the audit record names (default $FCTL_CHANGE_ID)\n"
	  "  --json           result as JSON, as for apply (profile null, result removed,\n"
	  "                   unchanged, planned, rolled-back, failed or refused)\n"
	  "  -q, --quiet      no output on success\n"
	  "\n"
	  "Exit: 0 removed or nothing to remove, 2 usage, I/O or environment error\n"
	  "(nothing changed), 3 failed and rolled back.\n",
	  "remove every link fabricctl manages on this host", cli_opts_host },
	{ "recover", cmd_recover,
	  "recover [--json] [--netns NAME] [--state-dir DIR] [--audit-log PATH] [--change ID] [-q]",
	  "Finish an apply that a crash or kill interrupted: the host is returned to the\n"
	  "state recorded in the journal before that apply started. 'apply' does this by\n"
	  "itself first; 'recover' does only this. Then, when an 'apply --confirm' was not\n"
	  "confirmed by its deadline and its watchdog is gone (a reboot), the version\n"
	  "before is applied again (audit action confirm-rollback).\n"
	  "\n"
	  "  --netns NAME     act inside network namespace NAME\n"
	  "  --state-dir DIR  the journal (default /var/lib/fabricctl)\n"
	  "  --audit-log PATH the audit log (recovery goes ahead when it cannot be written)\n"
	  "  --change ID      the change id the audit record names (default $FCTL_CHANGE_ID)\n"
	  "  --json           {host, recovered, rolled_back, restored_exactly,\n"
	  "                   confirm_rolled_back}\n"
	  "  -q, --quiet      no output on success\n"
	  "\n"
	  REMOTE_HELP
	  "\n"
	  "Exit: 0 recovered or nothing to do, 2 environment error, 3 recovery failed.\n",
	  "finish an apply a crash interrupted", cli_opts_host },
	{ "show", cmd_show, "show [--json] [--netns NAME] [--host HOST] [--state-dir DIR]",
	  "Print the live VLAN/MACsec state of this host. Text output is a profile (YAML)\n"
	  "that validates and can be diffed or saved, like 'wg showconf'; peers are named\n"
	  "after the MAC in their SCI. Keys are never shown: SAs are named by key id.\n"
	  "Only links of the last applied profile are shown once one was applied.\n"
	  "\n"
	  "  --json           the host-state JSON (links, SAs with pn and key_id, addresses)\n"
	  "  --host HOST      the host name written in the output (default: hostname)\n"
	  "  --netns NAME     read inside network namespace NAME\n"
	  "  --state-dir DIR  where the last applied profile is (default /var/lib/fabricctl)\n"
	  "\n"
	  REMOTE_HELP,
	  "print the live VLAN/MACsec state of this host as a profile", cli_opts_host },
	{ "diff", cmd_diff,
	  "diff [--json] [--netns NAME] [--host HOST] [--audit] PROFILE\n"
	  "       diff [--json] [--host HOST]... OLD NEW",
	  "With one PROFILE: drift between the live state of this host (-) and the\n"
	  "profile (+). With OLD NEW: per host, how the state NEW describes differs from\n"
	  "OLD: links added (+), removed (-) and changed (~) with the differing lines.\n"
	  "diff writes nothing unless --audit asks it to record drift.\n"
	  "\n"
	  "  --json           {\"host\", \"drift\", \"changes\":[...]} or {\"hosts\":[...]}\n"
	  "  --host HOST      live: the profile host this machine is (default: hostname);\n"
	  "                   OLD NEW: only this host (repeatable)\n"
	  "  --netns NAME     live: read inside network namespace NAME\n"
	  "  --state-dir DIR  live: where the last applied profile is (default\n"
	  "                   /var/lib/fabricctl)\n"
	  "  --audit          live: record drift found as an audit record (action drift)\n"
	  "  --audit-log PATH the log --audit writes (implies --audit; else $FCTL_AUDIT_LOG,\n"
	  "                   else /var/lib/fabricctl/audit/audit.log)\n"
	  "  --change ID      the change id of that record (else $FCTL_CHANGE_ID)\n"
	  "\n"
	  REMOTE_HELP
	  "\n"
	  "Exit: 0 no differences, 1 differences found or a profile is invalid, 2 usage,\n"
	  "I/O or netlink error.\n",
	  "show drift of this host, or the changes between two profiles", cli_opts_diff },
	{ "approve", cmd_approve,
	  "approve --key FILE [--ssh-keygen] [--name NAME] [--force] [-q] PROFILE",
	  "Approve this version of PROFILE: sign its exact bytes with an OpenSSH key in\n"
	  "the namespace fabricctl-profile and write the signature to\n"
	  "PROFILE.sig.d/NAME.sig, the SSHSIG format of 'ssh-keygen -Y sign' (what git\n"
	  "uses for signed commits). The bytes hold the profile's name and version, so a\n"
	  "signature approves that version only: an edit or a new version needs new\n"
	  "signatures. Hosts with an approval policy refuse to apply a version without\n"
	  "the approvals it requires (docs/approvals.md). The signature is checked after\n"
	  "it is made; the key never leaves its file, and never reaches argv or a log.\n"
	  "\n"
	  "  --key FILE     the OpenSSH private key: an unencrypted Ed25519 key is signed\n"
	  "                 with here; any other (encrypted, ECDSA, in ssh-agent) needs\n"
	  "                 --ssh-keygen. The file must be readable by its owner only.\n"
	  "  --ssh-keygen   sign through 'ssh-keygen -Y sign -n fabricctl-profile -f FILE'\n"
	  "                 (asks for the passphrase; FILE may be a public key held by\n"
	  "                 ssh-agent)\n"
	  "  --name NAME    the signature's file name in PROFILE.sig.d (default: your\n"
	  "                 user name)\n"
	  "  --force        replace an existing PROFILE.sig.d/NAME.sig\n"
	  "  -q, --quiet    print nothing; use the exit code\n"
	  "\n"
	  "The same signature by hand: ssh-keygen -Y sign -n fabricctl-profile -f KEY\n"
	  "PROFILE, then move PROFILE.sig to PROFILE.sig.d/NAME.sig (PROFILE.sig is\n"
	  "read too).\n"
	  "\n"
	  "Exit: 0 signed, 1 the profile is invalid, 2 usage, key or I/O error.\n",
	  "sign a profile version with an OpenSSH key", cli_opts_approve },
	{ "approvals", cmd_approvals,
	  "approvals [--json] [--policy FILE | --allowed-signers FILE [--require N]] PROFILE",
	  "Show who approved this version of PROFILE: each signature file\n"
	  "(PROFILE.sig, PROFILE.sig.d/*.sig) with its signer's principal and key\n"
	  "fingerprint, counted, not counted (its signer is counted already: one signer\n"
	  "counts once, whatever keys or principals it has) or refused and why (not in\n"
	  "allowed_signers, expired, another namespace, over other bytes, malformed), who\n"
	  "is missing, and whether the policy is met. Nothing is written.\n"
	  "\n"
	  "  --json                 {profile, version, file, policy, approvals: {required,\n"
	  "                         counted, met, allowed_signers, missing, signatures}}\n"
	  "  --policy FILE          the policy file to check against (default\n"
	  "                         $FCTL_APPROVALS_CONF, else /etc/fabricctl/approvals.conf:\n"
	  "                         'require: N of ALLOWED_SIGNERS')\n"
	  "  --allowed-signers FILE check against this OpenSSH allowed_signers file\n"
	  "  --require N            with --allowed-signers: the approvals needed (default 1)\n"
	  "\n"
	  "Exit: 0 approved (or no policy on this host), 1 not approved or the profile is\n"
	  "invalid, 2 usage or I/O error (a policy or allowed_signers file that cannot be\n"
	  "read or parsed).\n",
	  "show who approved a profile version and whether the policy is met", cli_opts_approve },
	{ "history", cmd_history, "history [--json] [--netns NAME] [--state-dir DIR]",
	  "List the profile versions applied on this host, oldest first: sequence,\n"
	  "version, profile name, time applied (UTC) and the SHA-256 of the stored copy\n"
	  "('rollback --to VERSION' applies that copy again).\n"
	  "\n"
	  "  --json           [{seq, version, profile, applied, sha256, stored}]\n"
	  "  --netns NAME     the history of network namespace NAME\n"
	  "  --state-dir DIR  the history (default /var/lib/fabricctl)\n"
	  "\n"
	  REMOTE_HELP,
	  "list the profile versions applied on this host", cli_opts_host },
	{ "lab", cmd_lab, "lab up|exec|exec-bg|wait|kill|reboot|status|down|setup|keys|links [ARGS]",
	  "Run a lab of qemu VMs with Debian's stock kernel (MACsec, VLAN, soft-RoCE),\n"
	  "wired host to host over 127.0.0.1, each running this machine's binaries: a\n"
	  "place to test profile changes in CI before they reach real hosts. A wrapper\n"
	  "of scripts/lab.sh (needs root); see docs/lab.md.\n"
	  "\n"
	  "'lab up --profile FILE [--dry-run] [lab.sh up options]' boots one VM per host\n"
	  "that is an end of a link (h1..hN in file order, at most 8), wired as the\n"
	  "links say, each named after its profile host, its NICs carrying the profile's\n"
	  "port names, MACs and MTUs, so 'fabricctl apply FILE' runs unchanged inside.\n"
	  "It prints the mapping (profile host:port -> lab hN.ethK); --dry-run stops\n"
	  "there and shows the lab.sh command. Other uses go to lab.sh unchanged, but\n"
	  "two helpers for CI (examples/ci/pipeline.sh) that need no lab or root:\n"
	  "'lab keys PROFILE [--dir DIR]' writes a throwaway LAB-ONLY key (hex, 0600,\n"
	  "the cipher's length, never printed) for each missing file-backend key;\n"
	  "'lab links PROFILE' lists each link's first MACsec VLAN addressed on both\n"
	  "ends (link, a host, MACsec device, address, b host, device, address, VLAN).\n"
	  "\n"
	  "  fabricctl lab up --hosts 2\n"
	  "  fabricctl lab exec h1 -- fabricctl apply profiles/lab-pair.yaml\n"
	  "  fabricctl lab up --profile profiles/gpu-pod-a.yaml\n"
	  "  fabricctl lab exec gpu01 -- ip -br link\n"
	  "  fabricctl lab down\n",
	  "run a lab of qemu VMs with Debian's stock kernel", NULL },
	{ "rotate", cmd_rotate,
	  "rotate [LINK... | --all] [--compromised] [--dry-run] [--json] --cert F --key F --ca F\n"
	  "              [--agent HOST=ADDR:PORT]... [--state-dir DIR] [--audit-log PATH]\n"
	  "              [--overlap SEC] [--parallel N] PROFILE",
	  "Rotates MACsec keys make-before-break on both ends of each link, through the\n"
	  "agents (key-custodian certificate): new AN, RX SAs on both ends, TX SAs staged,\n"
	  "confirmed from the dumps, switched, old SAs retired after the overlap window,\n"
	  "then the old key version deactivated in the KMS. Several links go together,\n"
	  "phase by phase, one request per agent and phase: all are switched, one\n"
	  "overlap wait covers all, then all are retired.\n"
	  "--compromised: no overlap, the old version marked compromised. --json: a\n"
	  "result per link with each step's time, KMS operations and agent requests.\n"
	  "Runs fabricctl-keymgr; see docs/rotation.md.\n"
	  "  --all                    every protected link of the profile\n"
	  "  --compromised            no overlap; the old key version is marked compromised\n"
	  "  --dry-run                the plan only: links, order, requests per phase, waves,\n"
	  "                           expected time; nothing contacted, nothing written\n"
	  "  --parallel N             agents asked at once in each phase (default 8)\n"
	  "\n"
	  "  --cert F --key F --ca F  key-custodian identity for the agents\n"
	  "  --agent HOST=ADDR:PORT   an agent endpoint (default: the profile's hosts[].agent)\n"
	  "  --state-dir DIR          rotation journal (default /var/lib/fabricctl/keymgr)\n"
	  "  --audit-log PATH         the audit log (default $FCTL_AUDIT_LOG)\n"
	  "  --timeout SEC            per agent request (default 10)\n"
	  "  --cryptoperiod SEC, --overlap SEC  override the profile's key policy\n"
	  "  --json                   one JSON object (rotate) or array (status) on stdout\n"
	  "\n"
	  "Exit: 0 rotated, 1 rolled back (old key still in use), 2 usage, 3 failed\n"
	  "with the journal kept ('keys recover').\n",
	  "rotate MACsec keys make-before-break through the agents", NULL },
	{ "keys", cmd_keys,
	  "keys watch|recover|status [--count N] [--json] OPTIONS PROFILE",
	  "Key manager: 'watch' rotates on the profile's cryptoperiod and PN threshold,\n"
	  "'recover' finishes or undoes an interrupted rotation from its journal,\n"
	  "'status' shows each link's AN and key version on both ends. Runs\n"
	  "fabricctl-keymgr; see docs/rotation.md.\n"
	  "  --count N                watch: stop after N rotations\n"
	  "\n"
	  "  --cert F --key F --ca F  key-custodian identity for the agents\n"
	  "  --agent HOST=ADDR:PORT   an agent endpoint (default: the profile's hosts[].agent)\n"
	  "  --state-dir DIR          rotation journal (default /var/lib/fabricctl/keymgr)\n"
	  "  --audit-log PATH         the audit log (default $FCTL_AUDIT_LOG)\n"
	  "  --timeout SEC            per agent request (default 10)\n"
	  "  --cryptoperiod SEC, --overlap SEC  override the profile's key policy\n"
	  "  --json                   one JSON object (rotate) or array (status) on stdout\n",
	  "watch, recover and show key rotations (the key manager)", NULL },
	{ "probe", cmd_probe,
	  "probe serve [--port P] [--dev DEV] [--once]\n"
	  "       probe run --peer HOST[:PORT] [--test T,...] [--size N | --sweep]\n"
	  "                 [--iters N | --duration S] [--profile FILE --link NAME] [--json | --junit]\n"
	  "                 [--audit-log PATH] [--change ID]\n"
	  "       probe --fabric PROFILE [--link NAME]... [--json] [--junit FILE]\n"
	  "                 [--timeout DUR] [--deadline DUR] [--test T,...] [--iters N] [--size N]\n"
	  "                 [--qp-timeout N] [--inventory FILE] [--cert F --key F --ca F]\n"
	  "                 [--allow-cleartext] [--audit-log PATH] [--change ID] [--quiet]\n"
	  "                 [--matrix p50|p99]",
	  "RDMA probes over a link (RoCE, RC QP): latency (send_lat, write_lat, read_lat)\n"
	  "and bandwidth (send_bw, write_bw, read_bw), perftest-compatible and exact\n"
	  "statistics, loss and retransmissions from the RDMA counters of both ends, the\n"
	  "MACsec check (encrypting, nothing refused), verdicts against the profile's\n"
	  "slo section. 'serve' is the far end; 'run' measures. Runs the fabricctl-probe\n"
	  "program; 'fabricctl probe run --help' lists every option; see docs/probes.md.\n"
	  "Every verdict of 'run' is an audit record (action probe): --audit-log PATH or\n"
	  "FCTL_AUDIT_LOG, --change ID or FCTL_CHANGE_ID, as for apply (docs/audit.md).\n"
	  "\n"
	  "\n"
	  "'probe --fabric' probes every protected VLAN of every link of PROFILE (or the\n"
	  "--link ones) through the agents of both ends (end a serves, end b runs; both\n"
	  "need the operator role), in rounds in which no port carries two probes: a\n"
	  "table per link, the path MTU both ways with don't-fragment echoes, the fabric\n"
	  "verdict, a hosts x hosts latency matrix (p99, or --matrix p50). --timeout is\n"
	  "each link's deadline (60s), --deadline the whole run's;\n"
	  "an agent that does not answer fails its links by name. Each link's verdict is an\n"
	  "audit record (action probe-fabric) where the command runs. See docs/probes.md,\n"
	  "\"The whole fabric\".\n"
	  "\n"
	  "Exit: 0 every probe passed, 1 a probe failed its SLO, 2 usage or environment\n"
	  "error (no RDMA device, peer unreachable, peer gone; --fabric: a link could not\n"
	  "be probed).\n",
	  "run RDMA latency and bandwidth probes over a link", NULL },
	{ "audit", cmd_audit,
	  "audit keygen|verify|show|append|checkpoint|rotate|proof|note|witness [OPTIONS]",
	  "The tamper-evident audit log (docs/audit.md): one JSON record a line, each\n"
	  "chained to the previous by its hash, with signed checkpoints (Ed25519 over the\n"
	  "log size and its RFC 6962 Merkle root) in LOG.checkpoints.\n"
	  "\n"
	  "  keygen [--out DIR]        write DIR/audit.key (0600) and DIR/audit.pub\n"
	  "                            (default /var/lib/fabricctl/audit)\n"
	  "  verify [--json] [--log PATH] [--checkpoints PATH] --pubkey PATH\n"
	  "         [--trusted-checkpoint FILE] [--origin O] [--allow-unsigned-tail]\n"
	  "         [--witness-pub FILE]... [--witnesses K] [--cosignatures FILE]\n"
	  "                            names any modified, deleted or reordered record, a\n"
	  "                            non-canonical record, a cut-off tail, an unsigned\n"
	  "                            tail, a bad or missing signature, a checkpoint that\n"
	  "                            does not match or names another log, a torn last line.\n"
	  "                            A trust anchor is required: --pubkey (a copy kept off\n"
	  "                            the host) or --trusted-checkpoint (a note you kept);\n"
	  "                            --self-consistency-only instead proves nothing about\n"
	  "                            who wrote the log\n"
	  "  show [--json] [--since T] [--until T] [--change ID]\n"
	  "  append --action A --result R [--host H] [--change ID] [--kcv HEX6]...\n"
	  "         [--key-id HEX16]... [--key-state S] [--detail TEXT] [--count N]\n"
	  "                            record an action taken outside fabricctl: a manual\n"
	  "                            record (\"manual\":true); A is a name of a-z, 0-9, '-'\n"
	  "                            and never one of fabricctl's own (apply, probe, key-*)\n"
	  "  checkpoint                sign a checkpoint now (a key rotation commit)\n"
	  "  rotate                    start a new log file; the chain continues\n"
	  "  proof --inclusion SEQ [--size N] [--json]\n"
	  "  proof --consistency OLD_SIZE [--size N] [--json]\n"
	  "                            RFC 9162 audit path / consistency proof (hex hashes)\n"
	  "  note                      print the latest signed checkpoint\n"
	  "  witness --key F --name N --state F --checkpoint F [--log-pub F] [--proof F]\n"
	  "                            check a checkpoint against the last one cosigned and\n"
	  "                            print it cosigned (C2SP tlog-cosignature/v1)\n"
	  "\n"
	  "The log is --log PATH, else $FCTL_AUDIT_LOG, else\n"
	  "/var/lib/fabricctl/audit/audit.log; the key and public key are audit.key and\n"
	  "audit.pub beside it unless --key/--pubkey say otherwise.\n"
	  "\n"
	  "Exit: 0 verified (or done), 1 verification failed, 2 usage or I/O error (an\n"
	  "input that cannot be read: the log, --pubkey, a kept checkpoint; show: no log).\n",
	  "keep and verify the tamper-evident audit log", cli_opts_audit },
	{ "evidence", cmd_evidence,
	  "evidence --out FILE.tar --sign KEY [--sign KEY2] [--since T] [--until T] [--change ID]\n"
	  "         [--html FILE] [--whole-log] [--consistency-from SIZE]... [--allow-empty]\n"
	  "         [--ledger FILE] [--allowed-signers FILE]",
	  "Write one deterministic tar an auditor checks with openssl, jq, sha256sum and\n"
	  "tar alone (docs/audit.md): MANIFEST.json (every file and its SHA-256), a DSSE\n"
	  "envelope over it signed by every --sign key (two for dual control), in-toto v1\n"
	  "statements (profile applies, key lifecycle, probe results), each in a DSSE\n"
	  "envelope signed by every --sign key, SHA256SUMS, the window of the audit log\n"
	  "(every record from the first to the last of the time window or change) with an\n"
	  "RFC 9162 inclusion proof of each against the latest signed checkpoint, key\n"
	  "metadata (ids, check values, states, dates; no key material), the profiles\n"
	  "the records name, VERIFY.md and verify.sh, and report.html: the auditor's\n"
	  "report (timeline, MACsec counters, probe latency, key lifecycle, what was\n"
	  "verified), one self-contained page. The same inputs give the same bytes.\n"
	  "When the window holds sa-ledger records, the packet-number ledger they anchor\n"
	  "(pn/sa-ledger) and the PN ranges each key used per SCI (pn/ranges.json).\n"
	  "The audit log must verify first, and the ledger must match its records.\n"
	  "When selected apply or rollback records name approvals (docs/approvals.md),\n"
	  "the signature files they name (kept with the profile in the history) and the\n"
	  "allowed_signers file, under approvals/; verify.sh checks each with ssh-keygen.\n"
	  "\n"
	  "  --out FILE.tar    the bundle to write\n"
	  "  --sign KEY        Ed25519 private key (PEM, 'audit keygen' makes one); repeatable\n"
	  "  --since/--until T 2024-05-01, 2024-05-01T12:00:00Z or @EPOCH\n"
	  "  --change ID       only records of this change\n"
	  "  --log PATH        the audit log (default $FCTL_AUDIT_LOG or\n"
	  "                    /var/lib/fabricctl/audit/audit.log)\n"
	  "  --pubkey PATH     audit public key (default audit.pub beside the log)\n"
	  "  --profile FILE    a profile file to include when the records name its digest\n"
	  "                    (besides /var/lib/fabricctl/history, or --history DIR)\n"
	  "  --operator NAME   who assembled the bundle (default: the local user)\n"
	  "  --html FILE       also write report.html to FILE; without --out, only the\n"
	  "                    report (without --sign: nothing signed)\n"
	  "  --whole-log       also carry every record of the log (audit/log.jsonl)\n"
	  "  --consistency-from SIZE  also prove the checkpoint consistent with the log's\n"
	  "                    first SIZE records (the size of a checkpoint an auditor keeps);\n"
	  "                    repeatable\n"
	  "  --allow-empty     write the bundle even when no record is selected (without it,\n"
	  "                    a --since, --until or --change that matches nothing is refused)\n"
	  "  --ledger FILE     the host's packet-number ledger (default\n"
	  "                    /var/lib/fabricctl/sa-ledger; a log copied off its host needs\n"
	  "                    the ledger copied with it)\n"
	  "  --allowed-signers FILE  the allowed_signers file the approvals were checked\n"
	  "                    against (default: the one this host's approval policy names)\n"
	  "\n"
	  "Exit: 0 written, 1 the audit log does not verify or the ledger does not match\n"
	  "its records, 2 usage or I/O error (a ledger that cannot be read, a signature\n"
	  "file or allowed_signers an approval needs not found), or no record\n"
	  "selected (nothing written).\n",
	  "write a signed, deterministic evidence bundle for auditors", cli_opts_evidence },
	{ "node-check", cmd_node_check,
	  "node-check [--json] [-q] [--max-probe-age DUR] [--slurm [--node NAME]]\n"
	  "             [--timeout DUR] [--allow-never-applied [--audit-log PATH]]\n"
	  "             [--unhealthy REASON] [--netns NAME] [--host HOST] [--state-dir DIR]",
	  "Check that this node is fit for jobs (docs/slurm.md): a profile is applied;\n"
	  "every MACsec SecY it gives this host is present, up, protecting and encrypting\n"
	  "with an active encoding SA; the applied profile has no drift; the last probe\n"
	  "run (STATE_DIR/probe/last) passed its SLO; no key is older than its policy's\n"
	  "cryptoperiod. Reads only; with --slurm it also drains or resumes the node.\n"
	  "For Slurm's HealthCheckProgram and a prolog.\n"
	  "\n"
	  "  --max-probe-age DUR  a probe record is required and must be at most DUR old\n"
	  "                   (e.g. 30m); without it a missing record is fine\n"
	  "  --slurm          unhealthy: 'scontrol update nodename=NODE state=drain\n"
	  "                   reason=\"fabricctl: WHY\"' (a node someone else drained is left\n"
	  "                   alone); healthy: resume the node only when a reason starting\n"
	  "                   with 'fabricctl:' drained it\n"
	  "  --node NAME      the Slurm node name (default $SLURMD_NODENAME, else the short\n"
	  "                   hostname)\n"
	  "  --timeout DUR    the check and its scontrol calls end by DUR (default 30s; slurmd\n"
	  "                   kills its HealthCheckProgram at 60 s); past it the check is killed\n"
	  "                   and the node is unhealthy (--slurm: drained, 'fabricctl: node-check\n"
	  "                   did not finish within N s'). A check that cannot run at all is\n"
	  "                   unhealthy too ('fabricctl: node-check could not run: WHY')\n"
	  "  --allow-never-applied  a host whose history holds no apply at all passes the\n"
	  "                   profile check (rolling the check out before the first apply);\n"
	  "                   each such pass is audited, and is unhealthy when the record cannot\n"
	  "                   be written\n"
	  "  --audit-log PATH the log of those records (default $FCTL_AUDIT_LOG, else\n"
	  "                   /var/lib/fabricctl/audit/audit.log)\n"
	  "  --unhealthy REASON  check nothing: the node is unhealthy for REASON (--slurm:\n"
	  "                   drained 'fabricctl: REASON'); for a wrapper that cannot run the check\n"
	  "  --host HOST      the profile host this machine is (default: hostname)\n"
	  "  --netns NAME     the network namespace of the links\n"
	  "  --state-dir DIR  history, probe and rotation records (default /var/lib/fabricctl)\n"
	  "  --json           {host, healthy, failed, applied, profile, version, secys,\n"
	  "                   checks: [{check, ok, link, ifname, text}], slurm: {node, action}}\n"
	  "  -q, --quiet      no output unless the check could not run\n"
	  "\n"
	  "Exit: 0 healthy, 1 unhealthy, 2 the check could not run or finish (with --slurm the\n"
	  "node was drained all the same), usage error, or scontrol failed.\n",
	  "check this node's MACsec links for a job scheduler (Slurm)", cli_opts_node_check },
	{ "agent", cmd_agent,
	  "agent [--config FILE] [--socket PATH] [--listen ADDR:PORT] [--cert F --key F --ca F]\n"
	  "       [--policy FILE] [--crl FILE] [--metrics ADDR:PORT] [--group NAME]\n"
	  "       [--drift-interval DUR] [--drift-repair] [--state-dir DIR] [--host HOST]\n"
	  "       [--profile-dir DIR] [--pull-dir DIR [--pull-file NAME]]",
	  "Run the host's agent (docs/agent.md): it owns this host's applied state and\n"
	  "history and serves 'fabricctl --target/--fabric' over a Unix socket (root or\n"
	  "--group) and mutual TLS (roles viewer, operator, key-custodian from the client\n"
	  "certificate or --policy), checks drift on a timer and on link events, and\n"
	  "serves Prometheus metrics. SIGHUP reloads, SIGTERM stops.\n"
	  "\n"
	  "  --config FILE       'key: value' lines (keys as the options, '_' for '-')\n"
	  "  --socket PATH       Unix socket (default /run/fabricctl/agent.sock, '' = none)\n"
	  "  --listen ADDR:PORT  mutual TLS endpoint (needs --cert, --key, --ca)\n"
	  "  --policy FILE       role rules: allow, deny, pin (docs/agent.md)\n"
	  "  --crl FILE          PEM CRLs: revoked client certificates are refused\n"
	  "  --metrics ADDR:PORT HTTP endpoint for GET /metrics\n"
	  "  --drift-interval D  periodic drift check (default 60s, 0 = off)\n"
	  "  --drift-repair      re-apply the last applied profile when drift is found\n"
	  "  --profile-dir DIR   received profiles land here; relative key ids resolve here\n"
	  "                      (default /var/lib/fabricctl/agent)\n"
	  "  --cert F --key F --ca F  the agent's TLS identity and the fabric CA\n"
	  "  --group NAME        members of group NAME may use the Unix socket\n"
	  "  --state-dir DIR     journal and history (default /var/lib/fabricctl)\n"
	  "  --netns NAME        act inside network namespace NAME\n"
	  "  --host HOST         the profile host this machine is (default: hostname)\n"
	  "  --audit-log PATH    the agent's audit log (default $FCTL_AUDIT_LOG, else\n"
	  "                      /var/lib/fabricctl/audit/audit.log)\n"
	  "  --pull-dir DIR      pull mode: apply each new version of DIR/profile.yaml (a\n"
	  "                      mounted ConfigMap's symlink swap, a git checkout) as an\n"
	  "                      apply request would; refused and failed ones are audited\n"
	  "  --pull-file NAME    the profile's name in --pull-dir (default profile.yaml)\n"
	  "  --max-connections N, --max-workers N, --max-frame BYTES, --max-buffered BYTES\n"
	  "                      limits of the server; --timeout DUR per connection\n",
	  "run this host's agent (remote requests, drift, metrics)", cli_opts_agent },
	{ "status", cmd_status,
	  "status [--json] [--target HOST|ADDR:PORT|unix:PATH | --fabric] [--inventory FILE]\n"
	  "             [--cert F --key F --ca F] [--parallel N] [--timeout DUR] [-q]",
	  "Ask agents how they are: host, applied version, drift, your role. Without\n"
	  "--target or --fabric, the local agent's Unix socket\n"
	  "(unix:/run/fabricctl/agent.sock).\n"
	  "\n"
	  "  --json           the agents' answers as JSON\n"
	  "\n"
	  REMOTE_HELP
	  "\n"
	  "Exit: 0 every agent answered, 2 an agent could not be reached or refused.\n",
	  "ask agents how they are", NULL },
	{ "version", cmd_version, "version [--json]",
	  "Print the version ('fabricctl --version' and '-V' too).\n"
	  "\n"
	  "  --json           {\"name\":\"fabricctl\",\"version\":..., \"schema\":...}\n",
	  "print the version", opts_version },
	{ "help", cmd_help, "help [COMMAND]", "Show help for fabricctl or one command.\n",
	  "show help for fabricctl or one command", NULL },
};

/* usage()'s lines, shared with the manual page (help_gen.c) */
static const char tagline[] = "Apply and verify versioned VLAN/MACsec profiles on Linux hosts.";
static const char exit_codes[] =
	"Exit codes: 0 success, 1 invalid input or failed check, 2 usage, I/O or\n"
	"environment error, 3 an operation failed on a host and was rolled back,\n"
	"6 applied with SAs withheld for nonce safety (docs/keys-and-pn.md).\n";

/* what help_gen.c reads: the table and usage()'s lines */
static const struct cli_doc doc = { commands, FCTL_ARRAY_SIZE(commands), tagline, exit_codes };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s COMMAND [OPTIONS] [ARGS]\n"
		"\n"
		"%s\n"
		"\n"
		"Commands:\n",
		prog_name, tagline);
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %s\n", commands[i].synopsis);
	fprintf(f, "\n"
		   "Run '%s help COMMAND' or '%s COMMAND --help' for details.\n"
		   "%s"
		   "Profiles: docs/profile.md. Set NO_COLOR to disable colour.\n",
		prog_name, prog_name, exit_codes);
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

/* "unknown command", with the nearest command name when one is close */
static void unknown_command(const char *name)
{
	const char *names[FCTL_ARRAY_SIZE(commands)];
	const char *guess;

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(commands); i++)
		names[i] = commands[i].name;
	guess = fctl_did_you_mean(name, names, FCTL_ARRAY_SIZE(commands));
	if (guess)
		cli_err("unknown command '%s'; did you mean '%s'?", name, guess);
	else
		cli_err("unknown command '%s'; see '%s --help'", name, prog_name);
}

static int cmd_help(int argc, char **argv)
{
	int r;

	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
	/* hidden: the manual pages and the completion the build makes (help_gen.c) */
	r = cli_help_gen(&doc, argc, argv);
	if (r >= 0)
		return r;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(commands); i++) {
		if (strcmp(commands[i].name, argv[1]) == 0) {
			cli_usage_cmd(argv[1]);
			return EXIT_OK;
		}
	}
	unknown_command(argv[1]);
	return EXIT_USAGE;
}

static int cmd_version(int argc, char **argv)
{
	bool json = false;
	int ch;

	optind = 1;
	while ((ch = cli_getopt("version", argc, argv, "h", version_opts, NULL)) != -1) {
		if (ch == 'h') {
			cli_usage_cmd("version");
			return EXIT_OK;
		}
		if (ch != 'j')
			return EXIT_USAGE;
		json = true;
	}
	if (optind != argc) {
		cli_err("version: unknown argument '%s' (version [--json])", argv[optind]);
		return EXIT_USAGE;
	}
	if (json)
		printf("{\"name\":\"fabricctl\",\"version\":\"%s\",\"schema\":%d}\n", FCTL_VERSION,
		       FCTL_SCHEMA_VERSION);
	else
		printf("fabricctl %s (profile schema %d)\n", FCTL_VERSION, FCTL_SCHEMA_VERSION);
	return EXIT_OK;
}

static int dispatch(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
		return cmd_version(argc - 1, argv + 1);
	if (strcmp(argv[1], "__complete") == 0) {
		/* hidden: what the bash completion asks (help_gen.c, cli_complete) */
		return cli_complete(&doc, argc - 2, argv + 2);
	}
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(commands); i++) {
		if (strcmp(commands[i].name, argv[1]) == 0) {
			if (argc > 2 && (strcmp(argv[2], "--help") == 0 ||
					 strcmp(argv[2], "-h") == 0)) {
				cli_usage_cmd(argv[1]);
				return EXIT_OK;
			}
			return commands[i].fn(argc - 1, argv + 1);
		}
	}
	unknown_command(argv[1]);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
#ifdef FCTL_TEST_HOOKS
	/* hidden, test builds only: tests/cli/complete.sh runs the parsers thousands of times */
	if (argc == 4 && strcmp(argv[1], "__test-fork-server") == 0)
		return cli_test_fork_server(argv[0], argv[2], argv[3], dispatch);
#endif
	return dispatch(argc, argv);
}
