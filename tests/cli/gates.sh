#!/bin/sh
# SPDX-License-Identifier: MIT
# CLI tests of what a CI gate relies on (issue #33): exit codes that tell an input that
# cannot be read (2) from one that is invalid or fails (1), an empty evidence selection
# refused, every command of the command table giving 2 for a missing file and an unknown
# option; long options by exact name only, unknown ones said with a hint, -j and -o json
# for --json; apply --dry-run --detailed-exitcode as plan's; help and manual pages with
# each option on its own line. Table-driven: one line a case.
# Prints PASS/FAIL per case; exits 1 on any FAIL.
#
# usage: tests/cli/gates.sh FABRICCTL SOURCE_DIR
set -u

FCTL=${1:-build/fabricctl/fabricctl}
SRC=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
case $FCTL in /*) ;; *) FCTL=$(pwd)/$FCTL ;; esac
cd "$SRC" || exit 2
SRC=$(pwd)
export NO_COLOR=1
unset FCTL_AUDIT_LOG FCTL_CHANGE_ID FCTL_KEYMGR_BIN FCTL_PROBE_BIN

TMP=$(mktemp -d /tmp/fctl-gates.XXXXXX) || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM
npass=0 nfail=0

pass() { npass=$((npass + 1)); echo "PASS: $1"; }
fail() {
	nfail=$((nfail + 1))
	echo "FAIL: $1${2:+: $2}"
	[ -s "$TMP/out" ] && sed 's/^/    | /' "$TMP/out" | head -10
	[ -s "$TMP/err" ] && sed 's/^/    ! /' "$TMP/err" | head -10
	return 0
}

[ -x "$FCTL" ] || { echo "FAIL: $FCTL is not executable"; exit 1; }

# A scratch working directory: whatever a command writes lands there, and is checked.
mkdir "$TMP/cwd" "$TMP/keys"
seen=""
# check NAME WANT_RC STDERR_ERE|- ARGS...: runs fabricctl in $TMP/cwd; the exit code must be
# WANT_RC and (unless -) a line of stderr or stdout (validate's report) must match the
# extended regexp.
check() {
	name=$1 want=$2 pat=$3
	shift 3
	(cd "$TMP/cwd" && "$FCTL" "$@") >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$name" "exit $rc, expected $want"
	elif [ "$pat" != - ] && ! cat "$TMP/err" "$TMP/out" | grep -Eq -- "$pat"; then
		fail "$name" "no line matches /$pat/"
	else
		pass "$name"
	fi
}
# not_out NAME ERE: the last stdout must not match
not_out() {
	if grep -Eq -- "$2" "$TMP/out"; then fail "$1" "stdout matches /$2/"; else pass "$1"; fi
}

# An audit log of two records of change CHG-1, checkpointed, and its key pair.
"$FCTL" audit keygen --out "$TMP/keys" >/dev/null || fail "setup: audit keygen"
LOG=$TMP/keys/audit.log
for a in change-approved hand-check; do
	"$FCTL" audit append --log "$LOG" --action "$a" --result ok --host h1 --change CHG-1 \
		>/dev/null 2>&1 || fail "setup: audit append"
done
"$FCTL" audit checkpoint --log "$LOG" >/dev/null 2>&1 || fail "setup: audit checkpoint"
PUB=$TMP/keys/audit.pub K=$TMP/keys/audit.key N=$TMP/nothere

# ---- 1. an input that cannot be read is exit 2 with its path; invalid or failing is 1 ----
while IFS='|' read -r name want pat args; do
	[ -n "$name" ] || continue
	# shellcheck disable=SC2086 # args are words by design
	eval "check \"\$name\" \"\$want\" \"\$pat\" $args"
done <<EOF
audit verify: the log intact|0|-|audit verify --log "$LOG" --pubkey "$PUB"
audit verify: a missing log is I/O (2), named|2|nothere\.log|audit verify --log "$N.log" --pubkey "$PUB"
audit verify: a missing --pubkey is I/O (2), named|2|nothere\.pub|audit verify --log "$LOG" --pubkey "$N.pub"
audit verify: a directory as --pubkey is I/O (2)|2|$TMP/cwd|audit verify --log "$LOG" --pubkey "$TMP/cwd"
audit verify: a missing --trusted-checkpoint is I/O (2)|2|nothere\.note|audit verify --log "$LOG" --trusted-checkpoint "$N.note"
audit verify --json: a missing log is I/O (2)|2|nothere\.log|audit verify --json --log "$N.log" --pubkey "$PUB"
audit show: a missing log is I/O (2), named|2|nothere\.log|audit show --log "$N.log"
audit show --json: a missing log is I/O (2)|2|nothere\.log|audit show --json --log "$N.log"
audit show: a directory as log is I/O (2)|2|cwd|audit show --log "$TMP/cwd"
audit show: the log|0|-|audit show --log "$LOG"
plan --offline: a directory is I/O (2)|2|profiles.*not a regular file|plan --offline "$SRC/profiles"
plan --offline: a missing NEW is I/O (2)|2|nothere\.yaml|plan --offline "$N.yaml"
plan --offline: a directory as --from is I/O (2)|2|not a regular file|plan --offline "$SRC/profiles/lab-pair.yaml" --from "$SRC/profiles"
plan --offline: a missing --from is I/O (2)|2|nothere\.yaml|plan --offline "$SRC/profiles/lab-pair.yaml" --from "$N.yaml"
plan --offline --json: a directory is I/O (2)|2|-|plan --offline --json "$SRC/profiles"
diff: a directory is I/O (2)|2|not a regular file|diff "$SRC/profiles" "$SRC/profiles/lab-pair.yaml"
diff: a missing file is I/O (2)|2|nothere\.yaml|diff "$N.yaml" "$SRC/profiles/lab-pair.yaml"
plan --offline: an invalid profile is 1|1|-|plan --offline "$SRC/examples/invalid/typos.yaml"
evidence: a change with no record is refused|2|no record.*--allow-empty|evidence --log "$LOG" --change CHG-999 --sign "$K" --out "$TMP/cwd/chg.tar"
evidence: a window with no record is refused|2|no record|evidence --log "$LOG" --since 2030-01-01 --sign "$K" --out "$TMP/cwd/since.tar"
evidence --html: a report of no record is refused|2|no record|evidence --log "$LOG" --change CHG-999 --html "$TMP/cwd/r.html"
evidence --allow-empty: the empty bundle is written|0|-|evidence --log "$LOG" --change CHG-999 --allow-empty --sign "$K" --out "$TMP/empty.tar"
evidence: a change with records|0|-|evidence --log "$LOG" --change CHG-1 --sign "$K" --out "$TMP/chg1.tar"
EOF
if [ -z "$(ls -A "$TMP/cwd")" ]; then pass "refused evidence wrote nothing"; else
	fail "refused evidence wrote nothing" "$(ls -A "$TMP/cwd")"; fi
[ -s "$TMP/empty.tar" ] && pass "--allow-empty bundle exists" || fail "--allow-empty bundle exists"
# a log that fails stays 1, and says so
cp "$LOG" "$TMP/bad.log" && cp "$LOG.checkpoints" "$TMP/bad.log.checkpoints"
sed -i 's/"probe"/"prube"/' "$TMP/bad.log"
check "audit verify: a modified record is 1" 1 - audit verify --log "$TMP/bad.log" --pubkey "$PUB"
grep -q "FAILS verification" "$TMP/out" && pass "audit verify: FAILS verification said" ||
	fail "audit verify: FAILS verification said"
check "audit verify: a missing log does not read FAILS" 2 - audit verify --log "$N.log" --pubkey "$PUB"
not_out "audit verify: no FAILS verification for a missing log" "FAILS verification"

# ---- every command of the command table: a missing input file is 2, an unknown option 2 ----
export FCTL_LAB_DIR=$TMP/lab # fabricctl lab: where a lab would go (none must)
# COMMAND|ARGS WITH A MISSING INPUT FILE (- : the command reads no file)|ARGS WITH AN UNKNOWN OPTION
SD=$TMP/state
P=$SRC/profiles/lab-pair.yaml
while IFS='|' read -r cmd missing unknown; do
	[ -n "$cmd" ] || continue
	seen="$seen $cmd "
	[ "$missing" = - ] ||
		eval "check \"\$cmd: a missing input file is 2\" 2 nothere $cmd $missing"
	eval "check \"\$cmd: an unknown option is 2\" 2 - $cmd $unknown"
done <<EOF
validate|"$N.yaml"|--no-such-option "$P"
plan|--offline "$N.yaml"|--offline --no-such-option "$P"
apply|--dry-run "$N.yaml"|--dry-run --no-such-option "$P"
confirm|-|--no-such-option --state-dir "$SD"
rollback|-|--no-such-option --to 1 --state-dir "$SD"
teardown|-|--dry-run --no-such-option --state-dir "$SD"
recover|-|--no-such-option --state-dir "$SD"
show|-|--no-such-option --state-dir "$SD"
diff|"$N.yaml" "$P"|--no-such-option "$P" "$P"
history|-|--no-such-option --state-dir "$SD"
approve|--key "$N.key" "$N.yaml"|--no-such-option --key "$N.key" "$P"
approvals|"$N.yaml"|--no-such-option "$P"
rotate|--dry-run --all "$N.yaml"|--dry-run --no-such-option --all "$P"
keys|status "$N.yaml"|status --no-such-option "$P"
probe|-|run --no-such-option
audit|verify --log "$N.log" --pubkey "$PUB"|verify --no-such-option --log "$LOG" --pubkey "$PUB"
evidence|--log "$N.log" --pubkey "$PUB" --html "$TMP/x.html"|--no-such-option --log "$LOG" --html "$TMP/x.html"
node-check|-|--no-such-option --state-dir "$SD"
lab|-|up --no-such-option
agent|--config "$N.conf"|--no-such-option --socket ''
status|--fabric --inventory "$N.inv"|--no-such-option --target unix:$N.sock
version|-|--no-such-option
help|-|--no-such-option
EOF
# every command of the table is in the one above
for cmd in $("$FCTL" help --commands); do
	case "$seen" in *" $cmd "*) ;; *) fail "the table covers '$cmd'" ;; esac
done
if [ -e "$SD" ]; then fail "the table's commands wrote nothing" "$SD exists"; else
	pass "the table's commands wrote nothing"; fi

# ---- 2. options: exact names, our words, a hint from the command's own options ----
while IFS='|' read -r name pat args; do
	[ -n "$name" ] || continue
	eval "check \"\$name\" 2 \"\$pat\" $args"
done <<EOF
plan --off (an abbreviation) is refused|^fabricctl plan: unknown option '--off'; did you mean '--offline'\?$|plan --off "$P"
rollback --t 3 (an abbreviation) is refused|^fabricctl rollback: unknown option '--t'; did you mean '--to'\?$|rollback --t 3 --state-dir "$SD"
validate --jso (an abbreviation) is refused|did you mean '--json'|validate --jso "$P"
audit verify --pub (an abbreviation) is refused|^fabricctl audit verify: unknown option '--pub'; did you mean '--pubkey'|audit verify --pub "$PUB" --log "$LOG"
evidence --chan=X (an abbreviation with =) is refused|unknown option '--chan'; did you mean '--change'|evidence --chan=CHG-1 --html "$TMP/x.html" --log "$LOG"
validate --jsn: did you mean, with the fabricctl prefix|^fabricctl validate: unknown option '--jsn'; did you mean '--json'\?$|validate --jsn "$P"
diff --jsn: did you mean|^fabricctl diff: unknown option '--jsn'; did you mean '--json'\?$|diff --jsn "$P" "$P"
node-check --max-prob-age: did you mean|did you mean '--max-probe-age'|node-check --max-prob-age 1m --state-dir "$SD"
validate --zzzzzz: no guess, a pointer to help|unknown option '--zzzzzz'; see 'fabricctl help validate'|validate --zzzzzz "$P"
validate --jso=x (an abbreviation with a value) is refused|^fabricctl validate: unknown option '--jso'; did you mean '--json'\?$|validate --jso=x "$P"
validate --json=x: takes no argument|^fabricctl validate: option '--json' takes no argument$|validate --json=x "$P"
audit verify --log: needs an argument|^fabricctl audit verify: option '--log' needs an argument$|audit verify --pubkey "$PUB" --log
validate -Z: unknown short option|^fabricctl validate: unknown option '-Z'|validate -Z "$P"
validate -o yaml: -o takes json|-o takes 'json'|validate -o yaml "$P"
rotate --dry (fabricctl-keymgr: an abbreviation) is refused|^fabricctl rotate: unknown option '--dry'; did you mean '--dry-run'\?$|rotate --dry --all "$P"
keys status --stat (an abbreviation) is refused|^fabricctl keys status: unknown option '--stat'; did you mean '--state-dir'\?$|keys status --stat "$SD" "$P"
rotate --jsn: did you mean, no raw getopt text|^fabricctl rotate: unknown option '--jsn'; did you mean '--json'\?$|rotate --jsn --dry-run --all "$P"
EOF
check "validate --jsn" 2 - validate --jsn "$P"
if grep -Eq "unrecognized option|invalid option|requires an argument" "$TMP/err"; then
	fail "validate --jsn: no raw getopt text"; else pass "validate --jsn: no raw getopt text"; fi

# -j and -o json are --json on every command that has --json: the same output as --json's
while IFS='|' read -r jcmd want args; do
	[ -n "$jcmd" ] || continue
	for form in --json -j "-o json"; do
		eval "check \"\$jcmd \$form\" \$want - $jcmd $form $args"
		if [ "$form" = --json ]; then cp "$TMP/out" "$TMP/json.out"; continue; fi
		if cmp -s "$TMP/out" "$TMP/json.out"; then pass "$jcmd $form: as --json"; else
			fail "$jcmd $form: as --json" "stdout differs"; fi
	done
done <<EOF
validate|0|"$P"
rotate|0|--dry-run --all "$P"
plan|0|--offline "$P"
diff|0|"$P" "$P"
show|0|--state-dir "$SD"
history|0|--state-dir "$SD"
audit verify|0|--log "$LOG" --pubkey "$PUB"
audit show|0|--log "$LOG"
version|0|
EOF
rm -rf "$SD"

# ---- 3. apply --dry-run is plan, and takes plan's --detailed-exitcode ----
# live: nothing of lab-pair is on this machine, so everything is to be created (as ux.sh's
# live plan, a machine without netlink says so with 2)
(cd "$TMP/cwd" && "$FCTL" apply --dry-run --host h1 --state-dir "$SD" "$P") >"$TMP/out" 2>&1
if [ $? -eq 2 ]; then
	echo "SKIP: apply --dry-run --detailed-exitcode: no netlink here"
else
	check "apply --dry-run --detailed-exitcode: changes are 4" 4 - apply --dry-run \
		--detailed-exitcode --host h1 --state-dir "$SD" "$P"
	if grep -q "dry run: nothing changed" "$TMP/out"; then pass "apply --dry-run: the plan printed"
	else fail "apply --dry-run: the plan printed"; fi
	check "apply --dry-run --detailed-exitcode --json: 4" 4 - apply --dry-run --detailed-exitcode \
		--json --host h1 --state-dir "$SD" "$P"
	check "apply --dry-run without it: 0" 0 - apply --dry-run --host h1 --state-dir "$SD" "$P"
fi
check "apply --detailed-exitcode without --dry-run: usage" 2 "goes with --dry-run" apply \
	--detailed-exitcode --host h1 --state-dir "$SD" "$P"
check "apply --dry-run --markdown: still plan's only" 2 "unknown option '--markdown'" apply --dry-run \
	--markdown --host h1 --state-dir "$SD" "$P"
if [ -e "$SD" ]; then fail "apply --dry-run wrote nothing" "$SD exists"; else
	pass "apply --dry-run wrote nothing"; fi

# ---- audit append: a bad key check value is named as given, a key-sized one never echoed ----
check "audit append --kcv zz: says 'zz'" 2 "key check value 1 'zz' is not 6 lowercase hex digits" \
	audit append --log "$TMP/kcv.log" --action kms-note --result applied --host h1 --kcv zz
KEYLIKE=00112233445566778899aabbccddeeff
check "audit append --kcv KEY: not echoed" 2 "key check value 1 \(32 bytes, not shown" \
	audit append --log "$TMP/kcv.log" --action kms-note --result applied --host h1 --kcv "$KEYLIKE"
if cat "$TMP/out" "$TMP/err" | grep -q "$KEYLIKE"; then fail "audit append --kcv KEY: the value is in no output"
else pass "audit append --kcv KEY: the value is in no output"; fi

# ---- validate DIR: Kubernetes, Prometheus and CI files are named as skipped, not errors;
# anything that could be a profile is still checked (a gate must not be walked around) ----
check "validate examples/: the Kubernetes manifests skipped as such" 1 \
	"examples/kubernetes/daemonset.yaml: skipped: a Kubernetes manifest, not a profile" validate "$SRC/examples"
if grep -q "examples/prometheus/fabricctl.rules.yml: skipped: Prometheus rules" "$TMP/out" &&
	grep -q "examples/ci/gitlab-ci.yml: skipped: a GitLab CI pipeline" "$TMP/out" &&
	grep -q "11 files checked: .*; 8 other YAML files skipped" "$TMP/out" &&
	! grep -q "rules.yml:.*missing required key" "$TMP/out"; then
	pass "validate examples/: 11 profiles checked, 8 other files named as skipped"
else
	fail "validate examples/: 11 profiles checked, 8 other files named as skipped"
fi
mkdir "$TMP/pdir"
printf '{schema: 1, profile: {name: flow, version: 1}, hosts: []}\n' >"$TMP/pdir/flow.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nschema: 1\n' >"$TMP/pdir/mixed.yaml"
printf 'lol: 1\n' >"$TMP/pdir/nokeys.yaml"
check "validate DIR: a flow-style profile, one with a foreign key too, one with neither: all checked" 1 \
	"3 files checked" validate "$TMP/pdir"
not_out "validate DIR: nothing that may be a profile skipped" "skipped"

# ---- removing every protected link is disruptive: a gate never takes it for routine ----
printf 'schema: 1\nprofile:\n  name: lab-pair\n  version: 9\nhosts: []\n' >"$TMP/none.yaml"
check "plan: hosts: [] against lab-pair's MACsec is disruptive (5)" 5 \
	"delete macsec ms100: a protected link removed \[disruptive\]" \
	plan --offline --detailed-exitcode "$TMP/none.yaml" --from "$SRC/profiles/lab-pair.yaml"
if grep -q "total: 4 operations on 2 hosts, 4 disruptive" "$TMP/out"; then
	pass "plan: the SecYs and the VLANs under them, 4 of 4 counted"
else fail "plan: the SecYs and the VLANs under them, 4 of 4 counted"; fi

# ---- a plan or diff between profiles of different names says so (the wrong --from) ----
sed 's/^  name: lab-pair$/  name: gpu-pod-b/' "$SRC/profiles/lab-pair.yaml" >"$TMP/renamed.yaml"
cp -r "$SRC/profiles/keys" "$TMP/" 2>/dev/null
check "plan --from another profile's file: warned" 0 "warning: plan: the profile's name changes from 'gpu-pod-b'" \
	plan --offline "$SRC/examples/changes/lab-pair-v2.yaml" --from "$TMP/renamed.yaml"
check "diff of two profiles of other names: warned" 0 "warning: diff: the profile's name changes from 'lab-pair'" \
	diff "$SRC/profiles/lab-pair.yaml" "$TMP/renamed.yaml"
check "plan --from the same profile: no warning" 0 - plan --offline "$SRC/examples/changes/lab-pair-v2.yaml" \
	--from "$SRC/profiles/lab-pair.yaml"
if grep -q "name changes" "$TMP/err"; then fail "plan --from the same profile: nothing said" "$(head -1 "$TMP/err")"
else pass "plan --from the same profile: nothing said"; fi

# ---- 4. help and manual pages: an option entry starts its own line ----
# (a help string missing its "\n" ran "Not with --fabric or --dry-run" into "--host HOST")
for cmd in $("$FCTL" help --commands); do
	"$FCTL" help "$cmd" >"$TMP/out" 2>"$TMP/err"
	"$FCTL" help --man "$cmd" >"$TMP/man" 2>>"$TMP/err"
	if grep -nE '[^ ] {2,}-{1,2}[a-zA-Z]' "$TMP/out" >"$TMP/bad" ||
		grep -nE '[^ ] {2,}(\\-){1,2}[a-zA-Z]' "$TMP/man" >>"$TMP/bad"; then
		fail "help $cmd: each option entry on its own line" "$(head -1 "$TMP/bad")"
	else
		pass "help $cmd: each option entry on its own line"
	fi
done

# ---- fabricctl lab: a usage mistake is 2, as everywhere, before anything boots ----
for args in "up --hosts" "up --bogus" "up --hosts 99" "exec --timeout" "exec -x h1" "wait" \
	"frobnicate" "down --dir"; do
	# shellcheck disable=SC2086 # the words of each case
	check "lab $args: usage error, 2" 2 '^lab: ' lab $args
done
[ -e "$TMP/lab" ] && fail "lab usage errors: nothing made" "$TMP/lab exists" || pass "lab usage errors: nothing made"

echo "gates: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
