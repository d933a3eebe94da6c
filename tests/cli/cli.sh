#!/bin/sh
# SPDX-License-Identifier: MIT
# CLI tests of fabricctl: exit codes, output formats (text, --json checked with jq,
# --junit checked with an XML parser), findings of examples/invalid (each file lists
# the errors it must produce in "# expect: LINE:COL CODE" lines), plan and diff on
# examples/changes. Prints PASS/FAIL/SKIP per case; exits non-zero on any FAIL.
#
# usage: tests/cli/cli.sh [FABRICCTL [SOURCE_DIR]]
set -u
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start

FCTL=${1:-build/fabricctl/fabricctl}
SRC=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
case $FCTL in /*) ;; *) FCTL=$(pwd)/$FCTL ;; esac
cd "$SRC" || exit 2
export NO_COLOR=1

TMP=$(mktemp -d /tmp/fctl-cli.XXXXXX) || exit 2
AGENT_PID=
trap '[ -z "$AGENT_PID" ] || kill "$AGENT_PID" 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM
npass=0 nfail=0 nskip=0

pass() { npass=$((npass + 1)); echo "PASS: $1"; }
fail() {
	nfail=$((nfail + 1))
	echo "FAIL: $1${2:+: $2}"
	[ -s "$TMP/out" ] && sed 's/^/    | /' "$TMP/out" | head -20
	[ -s "$TMP/err" ] && sed 's/^/    ! /' "$TMP/err" | head -20
	return 0
}
skip() { nskip=$((nskip + 1)); echo "SKIP: $1: $2"; }

# run NAME EXPECTED_RC ARGS...: runs fabricctl, output in $TMP/out and $TMP/err
run() {
	name=$1 want=$2
	shift 2
	"$FCTL" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$name" "exit $rc, expected $want"
		return 1
	fi
	return 0
}

have_jq=0 have_py=0
command -v jq >/dev/null 2>&1 && have_jq=1
command -v "$PY" >/dev/null 2>&1 && have_py=1

# json NAME JQ_FILTER: the last output is valid JSON and the filter holds
json() {
	if [ $have_jq -eq 0 ]; then
		fail "$1" "cannot run: jq is not installed"
		return
	fi
	if ! jq -e . "$TMP/out" >/dev/null 2>&1; then
		fail "$1" "not valid JSON"
	elif ! jq -e "$2" "$TMP/out" >/dev/null 2>&1; then
		fail "$1" "jq '$2' does not hold"
	else
		pass "$1"
	fi
}

xml() {
	if [ $have_py -eq 0 ]; then
		fail "$1" "cannot run: python3 is not installed"
		return
	fi
	if "$PY" -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' \
		"$TMP/out" 2>"$TMP/err"; then
		pass "$1"
	else
		fail "$1" "not well-formed XML"
	fi
}

# junit_failures NAME N: the last output (JUnit) has N <failure>s, each in a testcase with
# file= and line= attributes
junit_failures() {
	if [ $have_py -eq 0 ]; then
		fail "$1" "cannot run: python3 is not installed"
		return
	fi
	if "$PY" - "$TMP/out" "$2" <<-'PY' 2>"$TMP/err"; then pass "$1"; else fail "$1"; fi
		import sys, xml.etree.ElementTree as ET
		cases = [c for c in ET.parse(sys.argv[1]).iter("testcase") if c.find("failure") is not None]
		assert len(cases) == int(sys.argv[2]), "%d failures" % len(cases)
		assert all(c.get("file") and int(c.get("line", "0")) > 0 for c in cases), "a failure without line"
	PY
}

# grep_out NAME PATTERN [FILE]: extended regexp must match the output
grep_out() {
	if grep -Eq -- "$2" "${3:-$TMP/out}"; then pass "$1"; else fail "$1" "no line matches /$2/"; fi
}

[ -x "$FCTL" ] || { echo "FAIL: $FCTL is not executable"; exit 1; }

# ---- usage and I/O: exit 2 ----
run "no arguments: usage, exit 2" 2 && pass "no arguments: usage, exit 2"
run "unknown command: exit 2" 2 valdate profiles/ && grep_out "unknown command has a hint" "did you mean 'validate'" "$TMP/err"
run "unknown option: exit 2" 2 validate --bogus profiles/ && pass "unknown option: exit 2"
run "validate without files: exit 2" 2 validate && pass "validate without files: exit 2"
run "validate a missing file: exit 2" 2 validate "$TMP/nope.yaml" && pass "validate a missing file: exit 2"
mkdir "$TMP/emptydir"
run "validate a directory without profiles: exit 2" 2 validate "$TMP/emptydir" &&
	pass "validate a directory without profiles: exit 2"
run "help: exit 0" 0 help && grep_out "help lists exit codes" "Exit codes: 0 success, 1 invalid"
run "validate --help: exit 0" 0 validate --help && grep_out "validate --help" "^usage: fabricctl validate"
run "version --json" 0 version --json && json "version --json" '.name == "fabricctl" and .schema == 1'

# ---- validate: the shipped profiles and examples are valid ----
run "validate profiles/: exit 0" 0 validate profiles/ && grep_out "validate profiles/ summary" "^2 files valid"
run "validate examples/changes: exit 0" 0 validate examples/changes && pass "validate examples/changes: exit 0"
run "validate -q prints nothing" 0 validate -q profiles/lab-pair.yaml &&
	if [ -s "$TMP/out" ]; then fail "validate -q prints nothing"; else pass "validate -q prints nothing"; fi
# a copy whose key file is not there: a warning, an error with --strict
cp profiles/lab-pair.yaml "$TMP/nokey.yaml"
run "validate: a missing key file is a warning: exit 0" 0 validate "$TMP/nokey.yaml" &&
	grep_out "missing key file warning" "^$TMP/nokey.yaml:[0-9]+:[0-9]+: warning: .*\[key-missing\]"
run "validate --strict makes warnings errors: exit 1" 1 validate --strict "$TMP/nokey.yaml" &&
	grep_out "--strict output" "key-missing"
run "validate --json profiles/" 0 validate --json profiles/ &&
	json "validate --json profiles/" '.valid == true and .errors == 0 and (.files | length) == 2'
run "validate --junit profiles/" 0 validate --junit profiles/ && xml "validate --junit profiles/ is XML"

# ---- validate: every invalid example gives exactly its expected findings ----
for f in examples/invalid/*.yaml; do
	n=$(grep -c '^# expect: ' "$f")
	run "validate $f: exit 1" 1 validate "$f" || continue
	ok=1
	# human output: FILE:LINE:COL: error: MESSAGE [CODE]
	while read -r _ _ pos code; do
		c=$(grep -cF -- "$f:$pos: error: " "$TMP/out")
		if ! grep -F -- "$f:$pos: error: " "$TMP/out" | grep -qF -- "[$code]"; then
			fail "$f: $pos $code" "not reported"
			ok=0
		fi
		: "$c"
	done <<-EOF
		$(grep '^# expect: ' "$f")
	EOF
	got=$(grep -c ": error: " "$TMP/out")
	if [ "$got" -ne "$n" ]; then
		fail "$f: error count" "$got errors, expected $n"
		ok=0
	fi
	bad=$(grep -vE '^(  hint: .*|[^ :]+:[0-9]+:[0-9]+: (error|warning): .* \[[a-z0-9-]+\]|[0-9]+ files? checked: .*)$' "$TMP/out")
	if [ -n "$bad" ]; then
		fail "$f: line format" "unexpected line: $(echo "$bad" | head -1)"
		ok=0
	fi
	[ $ok -eq 1 ] && pass "$f: $n findings at their places"

	run "validate --json $f: exit 1" 1 validate --json "$f" &&
		json "validate --json $f" ".valid == false and .errors == $n and
			([.findings[] | select(.severity == \"error\")] | length) == $n and
			(.findings | all(.file == \"$f\" and .line > 0 and .column > 0))"
	run "validate --junit $f: exit 1" 1 validate --junit "$f" &&
		xml "validate --junit $f is XML" &&
		junit_failures "validate --junit $f: one failure per finding, with its line" "$n"
done

# all findings in one run, over several files, sorted by file
run "validate all invalid examples at once: exit 1" 1 validate examples/invalid/ &&
	grep_out "one run reports every file" "^6 files checked: "
run "valid and invalid mixed: exit 1" 1 validate profiles/lab-pair.yaml examples/invalid/typos.yaml &&
	pass "valid and invalid mixed: exit 1"

# ---- must_secure: weak settings are errors unless a policy opts out ----
W=examples/invalid/weak-settings.yaml
run "weak settings are errors by default: exit 1" 1 validate "$W" &&
	grep_out "integrity-only is an error" "^$W:19:14: error: .*encrypt false.*\[integrity-only\]" &&
	grep_out "a defaulted replay_protect is an error" "^$W:27:3: error: .*\[replay-disabled\]" &&
	grep_out "validate check is an error" "^$W:33:15: error: .*validate check.*\[validate-not-strict\]" &&
	grep_out "the hint names the opt-out" "^  hint: .*'must_secure: false' in policy 'readable'"
run "plan refuses weak settings: exit 1" 1 plan --offline "$W" &&
	grep_out "plan: nothing done" "weak-settings.yaml: 5 errors; nothing done" "$TMP/err"
run "apply refuses weak settings: exit 1" 1 apply --dry-run "$W" &&
	grep_out "apply: nothing done" "weak-settings.yaml: 5 errors; nothing done" "$TMP/err"
O=examples/opt-out/integrity-only.yaml
run "must_secure: false keeps them warnings: exit 0" 0 validate "$O" &&
	grep_out "opt-out: a warning" "^$O:17:14: warning: .*\[integrity-only\]"
run "must_secure: false, --strict: exit 1" 1 validate --strict "$O" && pass "opt-out with --strict"
# the shipped profiles must secure without opting out
if grep -rn "must_secure: *false" profiles/ >"$TMP/out"; then
	fail "shipped profiles do not opt out of must_secure"
else
	pass "shipped profiles do not opt out of must_secure"
fi
# a copy of a shipped profile made weak: refused
sed 's/^    encrypt: true/    encrypt: false/' profiles/lab-pair.yaml >"$TMP/weak.yaml"
run "lab-pair with encrypt false: exit 1" 1 validate "$TMP/weak.yaml" &&
	grep_out "lab-pair weak copy" "error: .*\[integrity-only\]"

# ---- file key ids stay below the profile's directory; findings do not measure files ----
mkdir -p "$TMP/kid/p/keys"
printf 'not a key, 26 bytes long\n' >"$TMP/kid/outside.key"
chmod 600 "$TMP/kid/outside.key"
printf 'zzzz\n' >"$TMP/kid/p/keys/bad.key"
chmod 600 "$TMP/kid/p/keys/bad.key"
for id in ../outside.key "$TMP/kid/outside.key" keys/../../outside.key; do
	sed "s|id: keys/lab-pair.key|id: $id|" profiles/lab-pair.yaml >"$TMP/kid/p/k.yaml"
	run "key id $id is refused: exit 1" 1 validate "$TMP/kid/p/k.yaml" &&
		grep_out "key id $id: key-id" "^$TMP/kid/p/k.yaml:19:10: error: .*relative path below.*\[key-id\]" &&
		if grep -Eq "hex digits \(|offset|holds|key-length|key-format" "$TMP/out"; then
			fail "key id $id: the file was not read"
		else
			pass "key id $id: the file was not read"
		fi
	run "plan refuses key id $id: exit 1" 1 plan --offline "$TMP/kid/p/k.yaml" &&
		pass "plan refuses key id $id: exit 1"
done
sed "s|id: keys/lab-pair.key|id: keys/bad.key|" profiles/lab-pair.yaml >"$TMP/kid/p/k.yaml"
run "a bad key file: exit 1" 1 validate "$TMP/kid/p/k.yaml" &&
	grep_out "bad key file: not a valid N-byte key" "error: key file .* is not a valid 16-byte hex key" &&
	if grep -Eq "offset|holds|[^0-9]4 hex|2 bytes" "$TMP/out"; then
		fail "bad key file: its length and content offsets are not reported"
	else
		pass "bad key file: its length and content offsets are not reported"
	fi

# ---- bad input classes through the CLI: bounded, never a crash ----
for f in tests/data/bad/*.yaml; do
	run "validate $f: exit 1" 1 validate "$f" &&
		grep_out "$f: located finding" "^$f:[0-9]+:[0-9]+: error: "
done
head -c 4096 /dev/urandom >"$TMP/random.yaml"
run "validate random bytes: exit 1" 1 validate "$TMP/random.yaml" && pass "validate random bytes: exit 1"
truncate -s 65M "$TMP/huge.yaml"
run "validate a 65 MiB file: exit 1" 1 validate "$TMP/huge.yaml" && grep_out "huge file refused" "too-large"

# ---- plan --offline ----
run "plan from nothing: exit 0" 0 plan --offline profiles/lab-pair.yaml &&
	grep_out "plan from nothing: 16 ops" "^total: 16 operations on 2 hosts, 0 disruptive"
run "plan from nothing --json" 0 plan --offline --json profiles/lab-pair.yaml &&
	json "plan from nothing --json" '.from == null and .profile.version == 1 and
		.summary.ops == 16 and .hosts[0].ops[0].op == "create-link" and
		.hosts[0].ops[0].kind == "vlan" and .hosts[0].ops[1].kind == "macsec" and
		.hosts[0].ops[-1].op == "add-address"'
run "plan v1 -> v2 (replay window): exit 0" 0 plan --offline examples/changes/lab-pair-v2.yaml \
	--from profiles/lab-pair.yaml &&
	grep_out "plan v1 -> v2 is in place" "^total: 2 operations on 2 hosts, 0 disruptive" &&
	grep_out "plan v1 -> v2 detail" "change macsec ms100: window 0 -> 64"
run "plan v1 -> v2 --json" 0 plan --offline --json examples/changes/lab-pair-v2.yaml \
	--from profiles/lab-pair.yaml &&
	json "plan v1 -> v2 --json" '.from.version == 1 and .profile.version == 2 and
		.summary.disruptive == 0 and
		([.hosts[].ops[]] | length == 2 and all(.op == "change-link" and .disruptive == false))'
run "plan v2 -> v3 (cipher): exit 0" 0 plan --offline examples/changes/lab-pair-v3.yaml \
	--from examples/changes/lab-pair-v2.yaml &&
	grep_out "plan v2 -> v3 is disruptive" "delete macsec ms100: cipher gcm-aes-128 -> gcm-aes-256 \[disruptive\]" &&
	grep_out "plan v2 -> v3 total" "^total: [0-9]+ operations on 2 hosts, 2 disruptive"
run "plan v2 -> v3 --json" 0 plan --offline --json examples/changes/lab-pair-v3.yaml \
	--from examples/changes/lab-pair-v2.yaml &&
	json "plan v2 -> v3 --json" '.summary.disruptive == 2 and
		([.hosts[].ops[] | select(.op == "delete-link")] | length == 2 and all(.disruptive)) and
		([.hosts[].ops[] | select(.op == "create-link")][0].cipher == "gcm-aes-256")'
run "plan --host h2" 0 plan --offline --host h2 examples/changes/lab-pair-v2.yaml \
	--from profiles/lab-pair.yaml && grep_out "plan --host h2" "^total: 1 operation on 1 host"
run "plan --host unknown: exit 2" 2 plan --offline --host nope profiles/lab-pair.yaml &&
	pass "plan --host unknown: exit 2"
run "plan an invalid profile: exit 1" 1 plan --offline examples/invalid/typos.yaml &&
	grep_out "plan of an invalid profile shows findings" "typos.yaml:18:5: error: " "$TMP/err"
run "plan a missing profile: exit 2" 2 plan --offline "$TMP/nope.yaml" && pass "plan a missing profile: exit 2"
run "plan without a profile: exit 2" 2 plan --offline && pass "plan without a profile: exit 2"

# ---- diff OLD NEW ----
run "diff identical: exit 0" 0 diff profiles/lab-pair.yaml profiles/lab-pair.yaml &&
	grep_out "diff identical" "^no differences"
run "diff v1 v2: exit 1" 1 diff profiles/lab-pair.yaml examples/changes/lab-pair-v2.yaml &&
	grep_out "diff v1 v2 removed line" "^-   replay_window 0" &&
	grep_out "diff v1 v2 added line" "^\+   replay_window 64"
run "diff --json v2 v3: exit 1" 1 diff --json examples/changes/lab-pair-v2.yaml \
	examples/changes/lab-pair-v3.yaml &&
	json "diff --json v2 v3" '.old_version == 2 and .new_version == 3 and .links_changed == 2 and
		(.hosts[0].changes[0].added | index("cipher gcm-aes-256") != null)'
run "diff with one argument: exit 2" 2 diff --json profiles/lab-pair.yaml profiles/lab-pair.yaml extra &&
	pass "diff with three arguments: exit 2"

# ---- confirmed apply through the agent: options, and a real agent on a Unix socket ----
run "apply --fabric --confirm: exit 2" 2 apply --fabric --confirm 60s profiles/lab-pair.yaml &&
	grep_out "apply --fabric --confirm says why" "--confirm goes with --target HOST, not with --fabric" "$TMP/err"
run "apply --target --dry-run --confirm: exit 2" 2 apply --target unix:"$TMP/none.sock" --dry-run \
	--confirm 60s profiles/lab-pair.yaml &&
	grep_out "apply --target --dry-run --confirm says why" "not with --dry-run" "$TMP/err"
run "apply --target --confirm 0: exit 2" 2 apply --target unix:"$TMP/none.sock" --confirm 0 \
	profiles/lab-pair.yaml && grep_out "apply --target --confirm 0 says why" "from 1s to 7d" "$TMP/err"
run "apply --target --confirm 8d: exit 2" 2 apply --target unix:"$TMP/none.sock" --confirm 8d \
	profiles/lab-pair.yaml && pass "apply --target --confirm 8d: exit 2"
run "plan --target --confirm: exit 2" 2 plan --target unix:"$TMP/none.sock" --confirm 60s \
	profiles/lab-pair.yaml && grep_out "plan --target --confirm says why" "unknown option '--confirm'" "$TMP/err"
run "confirm --target --cancel: exit 2" 2 confirm --target unix:"$TMP/none.sock" --cancel &&
	pass "confirm --target --cancel: exit 2"
run "confirm --help names --target" 0 confirm --help && grep_out "confirm --help names --target" "confirm --target HOST"
if [ "$(id -u)" -ne 0 ]; then
	skip "confirm --target through an agent" "needs root (the agent's Unix socket serves root)"
else
	"$FCTL" agent --socket "$TMP/agent.sock" --state-dir "$TMP/astate" --host h1 \
		--audit-log "$TMP/aaudit.log" --profile-dir "$TMP/aprof" --drift-interval 0 \
		>"$TMP/agent.log" 2>&1 &
	AGENT_PID=$!
	i=0
	while [ ! -S "$TMP/agent.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	run "confirm --target, nothing pending: exit 1" 1 confirm --target unix:"$TMP/agent.sock" &&
		grep_out "confirm --target, nothing pending: says so" "confirm: no confirmation is pending on h1" "$TMP/err"
	run "confirm --target --json, nothing pending: exit 1" 1 confirm --target unix:"$TMP/agent.sock" --json &&
		json "confirm --target --json, nothing pending" '.host == "h1" and .result == "none"'
	run "confirm --fabric --json, nothing pending: exit 1" 1 confirm --fabric --json \
		--inventory /dev/stdin <<EOI &&
h1 unix:$TMP/agent.sock
EOI
		json "confirm --fabric --json, nothing pending" '.command == "confirm" and .hosts[0].exit == 1 and
			.hosts[0].output.result == "none"'
	kill "$AGENT_PID" 2>/dev/null
	wait "$AGENT_PID" 2>/dev/null
	AGENT_PID=
fi

echo "cli: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
