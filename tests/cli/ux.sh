#!/bin/sh
# SPDX-License-Identifier: MIT
# CLI tests of what a new user meets first: read commands that write nothing,
# exit codes of help and standard input, JSON on invalid input, help text that
# names the commands a user types, JUnit per finding, teardown's arguments,
# plan's detailed exit codes, and helper programs found only where the running
# binary belongs. Prints PASS/FAIL/SKIP per case; exits non-zero on any FAIL.
#
# usage: tests/cli/ux.sh FABRICCTL SOURCE_DIR
set -u
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start

FCTL=${1:-build/fabricctl/fabricctl}
SRC=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
case $FCTL in /*) ;; *) FCTL=$(pwd)/$FCTL ;; esac
cd "$SRC" || exit 2
export NO_COLOR=1
unset FCTL_AUDIT_LOG FCTL_CHANGE_ID FCTL_KEYMGR_BIN FCTL_PROBE_BIN

TMP=$(mktemp -d /tmp/fctl-ux.XXXXXX) || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM
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

# run NAME EXPECTED_RC ARGS...: runs fabricctl in a scratch directory (whatever a broken
# build writes lands there, not in the source tree; paths given are absolute), output in
# $TMP/out and $TMP/err
mkdir "$TMP/cwd"
run() {
	name=$1 want=$2
	shift 2
	(cd "$TMP/cwd" && "$FCTL" "$@") >"$TMP/out" 2>"$TMP/err"
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
	elif ! jq -e . "$TMP/out" >/dev/null 2>&1; then
		fail "$1" "not valid JSON"
	elif ! jq -e "$2" "$TMP/out" >/dev/null 2>&1; then
		fail "$1" "jq '$2' does not hold"
	else
		pass "$1"
	fi
}

# grep_out NAME PATTERN [FILE]: extended regexp must match the output
grep_out() {
	if grep -Eq -- "$2" "${3:-$TMP/out}"; then pass "$1"; else fail "$1" "no line matches /$2/"; fi
}
# no_out NAME PATTERN [FILE]: extended regexp must not match
no_out() {
	if grep -Eq -- "$2" "${3:-$TMP/out}"; then fail "$1" "a line matches /$2/"; else pass "$1"; fi
}
empty_out() {
	if [ -s "$TMP/out" ]; then fail "$1" "stdout is not empty"; else pass "$1"; fi
}

[ -x "$FCTL" ] || { echo "FAIL: $FCTL is not executable"; exit 1; }

# ---- read commands change nothing on disk unless asked ----
RO=$TMP/ro
mkdir -p "$RO/cwd"
snap() { (cd "$RO" && find . | LC_ALL=C sort); }
# ro NAME RC ARGS...: runs fabricctl in $RO/cwd with the state and the audit log under $RO
ro() {
	name=$1 want=$2
	shift 2
	(cd "$RO/cwd" && FCTL_AUDIT_LOG=$RO/audit/audit.log "$FCTL" "$@") >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$name" "exit $rc, expected $want"
		return 1
	fi
	return 0
}
snap >"$TMP/before"
SD="--state-dir $RO/state"
P=$SRC/profiles/lab-pair.yaml
# shellcheck disable=SC2086 # $SD is two words
{
	ro "read-only: show" 0 show $SD
	ro "read-only: show --json" 0 show --json $SD
	ro "read-only: history" 0 history $SD
	ro "read-only: plan (live)" 0 plan --host h1 $SD "$P"
	ro "read-only: plan --offline" 0 plan --offline "$P"
	ro "read-only: validate" 0 validate "$P"
	ro "read-only: diff OLD NEW" 0 diff "$P" "$P"
	# the links of lab-pair are not on this machine: drift, the second time too
	ro "read-only: diff PROFILE finds drift" 1 diff --host h1 $SD "$P"
	ro "read-only: diff PROFILE again" 1 diff --host h1 $SD "$P"
	ro "read-only: diff --json PROFILE" 1 diff --json --host h1 $SD "$P"
	ro "read-only: status (no agent)" 2 status --target "unix:$RO/agent.sock"
	ro "read-only: status --json (no agent)" 2 status --json --target "unix:$RO/agent.sock"
	# evidence refuses (1 or 2, which is its own business) and makes nothing
	(cd "$RO/cwd" && FCTL_AUDIT_LOG=$RO/audit/audit.log "$FCTL" evidence --out "$RO/x.tar" \
		--sign "$RO/none.key") >/dev/null 2>&1 && fail "read-only: evidence without a log fails"
} && :
snap >"$TMP/after"
if cmp -s "$TMP/before" "$TMP/after"; then
	pass "read commands wrote nothing"
else
	fail "read commands wrote nothing" "$(diff "$TMP/before" "$TMP/after" | grep '^>' | head -5 | tr '\n' ' ')"
fi
# shellcheck disable=SC2086
ro "diff --audit records drift" 1 diff --audit --host h1 $SD "$P" &&
	grep_out "diff --audit: one drift record" '"action":"drift"' "$RO/audit/audit.log"
# shellcheck disable=SC2086
run "diff --audit of two files: usage" 2 diff --audit "$P" "$P" && pass "diff --audit of two files: usage"
# (an older getopt build takes --audit for --audit-log and PROFILE for its value: usage)
run "apply --audit: unknown option" 2 apply --dry-run --host no-such-host --state-dir "$TMP/sd" \
	--audit "$P" && pass "apply --audit: unknown option"
# the default state directory is not made by a read command
if [ ! -e /var/lib/fabricctl ]; then
	"$FCTL" show >/dev/null 2>&1
	"$FCTL" history >/dev/null 2>&1
	"$FCTL" plan --host h1 "$P" >/dev/null 2>&1
	if [ -e /var/lib/fabricctl ]; then
		fail "read commands do not make /var/lib/fabricctl"
	else
		pass "read commands do not make /var/lib/fabricctl"
	fi
else
	skip "read commands do not make /var/lib/fabricctl" "it exists already"
fi

# ---- standard input and pipes; --help exits 0; --json keeps stdout JSON ----
I=$SRC/examples/invalid/typos.yaml
"$FCTL" validate - <"$P" >"$TMP/out" 2>"$TMP/err" && pass "validate - (a file on stdin): exit 0" ||
	fail "validate - (a file on stdin): exit 0"
cat "$P" | "$FCTL" validate - >"$TMP/out" 2>"$TMP/err" && pass "validate - (a pipe): exit 0" ||
	fail "validate - (a pipe): exit 0"
cat "$I" | "$FCTL" validate - >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep_out "validate - names findings '-'" "^-:18:5: error: .*\[unknown-key\]" ||
	fail "validate - of an invalid profile: exit 1"
if command -v bash >/dev/null 2>&1; then
	bash -c '"$0" validate <(cat "$1")' "$FCTL" "$P" >"$TMP/out" 2>"$TMP/err" &&
		pass "validate <(cat FILE): exit 0" || fail "validate <(cat FILE): exit 0"
	bash -c '"$0" plan --offline <(cat "$1")' "$FCTL" "$P" >"$TMP/out" 2>"$TMP/err" &&
		pass "plan --offline <(cat FILE): exit 0" || fail "plan --offline <(cat FILE): exit 0"
	bash -c '"$0" apply --dry-run <(cat "$1")' "$FCTL" "$P" >"$TMP/out" 2>"$TMP/err"
	[ $? -eq 2 ] && grep_out "apply of a pipe: a usage error that says why" "regular file" "$TMP/err" ||
		fail "apply of a pipe: exit 2"
else
	fail "validate <(cat FILE)" "cannot run: bash is not installed"
fi
mkdir "$TMP/nofiles"
run "validate --json of a directory without profiles: exit 2" 2 validate --json "$TMP/nofiles" &&
	json "validate --json of a directory without profiles" '.valid == false and .errors == 1 and
		.findings[0].code == "io" and .findings[0].file == "'"$TMP/nofiles"'"'
run "plan --offline --json of an invalid profile: exit 1" 1 plan --offline --json "$I" &&
	json "plan --offline --json of an invalid profile: findings as JSON" '.valid == false and
		.errors == 4 and (.findings | length) >= 4 and .findings[0].file == "'"$I"'"'
run "plan --offline --json of an invalid FROM: exit 1" 1 plan --offline --json "$P" --from "$I" &&
	json "plan --offline --json --from invalid: findings as JSON" '.valid == false'
run "diff --json of an invalid profile: exit 1" 1 diff --json "$P" "$I" &&
	json "diff --json of an invalid profile: findings as JSON" '.valid == false'
run "apply --dry-run --json of an invalid profile: exit 1" 1 apply --dry-run --json "$I" &&
	json "apply --json of an invalid profile: findings as JSON" '.valid == false'

run "lab up --help: exit 0" 0 lab up --help &&
	grep_out "lab up --help on stdout, as 'fabricctl lab'" "^  fabricctl lab up " &&
	no_out "lab help does not say lab.sh" "lab\.sh"
run "lab up --profile F --help: exit 0" 0 lab up --profile "$P" --help && pass "lab up --profile F --help: exit 0"
cmds=$("$FCTL" help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$cmds" ] || fail "help lists the commands"
for c in $cmds; do
	run "$c --help: exit 0" 0 "$c" --help && [ -s "$TMP/out" ] && pass "$c --help: exit 0, on stdout"
	run "help $c: exit 0" 0 help "$c" && pass "help $c: exit 0"
done
for sc in "lab down" "lab status" "lab exec" "lab exec-bg" "lab wait" "lab kill" "lab reboot" \
	"lab keys" "lab links" "probe run" "probe serve" "keys watch" "keys recover" "keys status"; do
	# shellcheck disable=SC2086 # two words
	run "$sc --help: exit 0" 0 $sc --help && [ -s "$TMP/out" ] && pass "$sc --help: exit 0, on stdout"
done

# ---- help and names the user types ----
run "-V: exit 0" 0 -V && grep_out "-V prints the version" "^fabricctl [0-9]+\.[0-9]+"
run "--version --json" 0 --version --json && json "--version --json" '.name == "fabricctl"'
run "help with a typo: exit 2" 2 help valdate &&
	grep_out "help with a typo has a hint" "did you mean 'validate'" "$TMP/err"
run "validate --json --junit: usage" 2 validate --json --junit "$P" && empty_out "validate --json --junit prints nothing"
run "validate --junit --json: usage" 2 validate --junit --json "$P" && pass "validate --junit --json: usage"
cp "$P" "$TMP/nokey.yaml"
run "--strict: exit 1" 1 validate --strict "$TMP/nokey.yaml" &&
	grep_out "--strict counts a warning once, as an error" "^1 file checked: 1 error, 0 warnings$"
run "--strict --json" 1 validate --strict --json "$TMP/nokey.yaml" &&
	json "--strict --json counts once" '.errors == 1 and .warnings == 0'
run "keys status --help" 0 keys status --help &&
	grep_out "keymgr's usage says 'fabricctl keys status'" "fabricctl keys status " &&
	grep_out "keymgr's usage says 'fabricctl rotate'" "usage: fabricctl rotate " &&
	no_out "keymgr's usage does not say fabricctl-keymgr" "fabricctl-keymgr (rotate|watch|recover|status)"
run "keys status without a profile: exit 2" 2 keys status &&
	grep_out "keymgr's errors say fabricctl" "^fabricctl: status: no profile given" "$TMP/err"
run "probe run --help" 0 probe run --help &&
	grep_out "probe's usage says 'fabricctl probe run'" "^usage: fabricctl probe run " &&
	no_out "probe's usage does not say fabricctl-probe" "fabricctl-probe (run|serve)"
for c in plan apply rollback recover show diff history status; do
	run "help $c" 0 help "$c" &&
		grep_out "help $c: --target" "^  --target HOST " &&
		grep_out "help $c: unix:PATH" "unix:PATH" &&
		grep_out "help $c: --json" "^  --json "
done
run "help history" 0 help history && grep_out "help history: --state-dir" "^  --state-dir DIR"
run "help rollback" 0 help rollback && grep_out "help rollback: --to" "^  --to VERSION"
run "help status" 0 help status && grep_out "help status: the default socket" "unix:/run/fabricctl/agent.sock"
# every option a command's synopsis names is explained in its help (probe's are in
# 'fabricctl probe run --help', which the probe program prints)
for c in $cmds; do
	[ "$c" = probe ] && continue
	"$FCTL" help "$c" >"$TMP/h" 2>/dev/null
	syn=$(sed -n '1,/^$/p' "$TMP/h" | grep -oE -- '--[a-z][a-z-]*' | sort -u)
	missing=
	for o in $syn; do
		sed '1,/^$/d' "$TMP/h" | grep -qE -- "(^|[ ,'/])$o([ =,'/]|$)" || missing="$missing $o"
	done
	if [ -n "$missing" ]; then fail "help $c explains every option of its synopsis" "missing:$missing"
	else pass "help $c explains every option of its synopsis"; fi
done

# ---- an installed fabricctl runs only installed helpers ----
# A copy outside the build tree must not run the build tree's keymgr, probe or lab.sh,
# nor what the environment names: a package built under /tmp would otherwise run
# whatever is later put at that path, as root.
mkdir -p "$TMP/inst"
cp "$FCTL" "$TMP/inst/fabricctl"
printf '#!/bin/sh\ntouch "%s/evil-ran"\n' "$TMP" >"$TMP/evil"
chmod +x "$TMP/evil"
FI=$TMP/inst/fabricctl
# the build tree's binary does use them (so the checks below can fail)
FCTL_PROBE_BIN=$TMP/evil "$FCTL" probe run --help >/dev/null 2>&1
if [ -e "$TMP/evil-ran" ]; then pass "build tree: FCTL_PROBE_BIN is used"; else fail "build tree: FCTL_PROBE_BIN is used"; fi
rm -f "$TMP/evil-ran"
"$FCTL" probe run --help >"$TMP/out" 2>&1 && grep_out "build tree: its probe runs" "^usage: fabricctl probe run"
installed_helper=0
for h in /usr/libexec/fabricctl /usr/local/libexec/fabricctl; do
	[ -e "$h/fabricctl-probe" ] || [ -e "$h/fabricctl-keymgr" ] && installed_helper=1
done
for args in "probe run --help" "keys status --help" "rotate --help-me" "lab status"; do
	# shellcheck disable=SC2086 # words
	FCTL_PROBE_BIN=$TMP/evil FCTL_KEYMGR_BIN=$TMP/evil FCTL_LAB_SCRIPT=$TMP/evil \
		"$FI" $args >"$TMP/out" 2>"$TMP/err"
	if [ -e "$TMP/evil-ran" ]; then
		fail "installed: '$args' ignores the helper the environment names"
	else
		pass "installed: '$args' ignores the helper the environment names"
	fi
	rm -f "$TMP/evil-ran"
	if [ $installed_helper -eq 1 ]; then
		skip "installed: '$args' does not run the build tree's helper" "helpers are installed here"
	else
		grep_out "installed: '$args' does not run the build tree's helper" \
			"not found \(looked in [^ ]+, where it is installed\)" "$TMP/err"
	fi
done

# ---- validate --junit: one testcase per finding, with file and line ----
junit_check() {
	name=$1
	shift
	if [ $have_py -eq 0 ]; then
		fail "$name" "cannot run: python3 is not installed"
	elif "$PY" "$SRC/tests/cli/junit_check.py" "$TMP/out" "$@" >"$TMP/py" 2>&1; then
		pass "$name"
	else
		fail "$name" "$(tail -1 "$TMP/py")"
	fi
}
run "junit: findings of typos.yaml" 1 validate --junit "$I" &&
	junit_check "junit: one failure per error, a skipped per warning, each with line=" \
		failure=4 error=0 skipped=1 lines=1 valid=0
run "junit: a valid file" 0 validate --junit "$TMP/nokey.yaml" &&
	junit_check "junit: a valid file has a passing testcase, its warning is visible" \
		failure=0 skipped=1 valid=1 lines=1
run "junit: --strict" 1 validate --junit --strict "$TMP/nokey.yaml" &&
	junit_check "junit: --strict makes the warning a failure" failure=1 skipped=0 valid=0
run "junit: I/O errors are errors" 2 validate --junit "$TMP/missing.yaml" "$TMP/nofiles" "$P" &&
	junit_check "junit: I/O errors are <error>s without a line" error=2 failure=0 valid=1
head -c 4096 /dev/urandom >"$TMP/random.yaml"
run "junit: random bytes" 1 validate --junit "$TMP/random.yaml" &&
	junit_check "junit: random bytes still give well-formed XML"

# ---- teardown: arguments (the engine's removals are in tests/unit/test_engine.c) ----
TD=$TMP/td
run "teardown PROFILE: usage" 2 teardown "$P" && grep_out "teardown takes no PROFILE" "takes no PROFILE" "$TMP/err"
run "teardown --to: usage" 2 teardown --to 1 && pass "teardown --to: usage"
run "rollback --to 0 points to teardown" 2 rollback --to 0 &&
	grep_out "rollback --to 0 names teardown" "fabricctl teardown" "$TMP/err"
run "teardown --dry-run on a host with nothing applied" 0 teardown --dry-run --host h1 --state-dir "$TD/state" &&
	grep_out "teardown --dry-run: nothing to remove" "nothing to remove"
[ -e "$TD" ] && fail "teardown --dry-run writes nothing" || pass "teardown --dry-run writes nothing"
run "teardown --dry-run --json" 0 teardown --dry-run --json --host h1 --state-dir "$TD/state" &&
	json "teardown --dry-run --json" '.result == "planned" and .profile == null and .plan.summary.ops == 0'
# nothing was applied under this state directory: nothing is managed, the kernel is not touched
FCTL_AUDIT_LOG=$TD/audit/audit.log "$FCTL" teardown --json --host h1 --state-dir "$TD/state" \
	>"$TMP/out" 2>"$TMP/err"
if [ $? -eq 0 ]; then
	json "teardown with nothing managed: unchanged" '.result == "unchanged" and .ops_done == 0'
	grep_out "teardown is audited" '"action":"teardown".*"result":"unchanged"' "$TD/audit/audit.log"
elif grep -q "CAP_NET_ADMIN\|netlink" "$TMP/err"; then
	skip "teardown with nothing managed" "no netlink here"
else
	fail "teardown with nothing managed: exit 0"
fi

# ---- plan --detailed-exitcode and --markdown; the shipped CI installs fabricctl ----
V2=$SRC/examples/changes/lab-pair-v2.yaml V3=$SRC/examples/changes/lab-pair-v3.yaml
run "plan --detailed-exitcode: no changes: 0" 0 plan --offline --detailed-exitcode "$P" --from "$P" &&
	pass "plan --detailed-exitcode: no changes: 0"
run "plan --detailed-exitcode: changes: 4" 4 plan --offline --detailed-exitcode "$V2" --from "$P" &&
	grep_out "plan --detailed-exitcode prints the plan" "^total: 2 operations"
run "plan --detailed-exitcode: disruptive: 5" 5 plan --offline --detailed-exitcode "$V3" --from "$V2" &&
	pass "plan --detailed-exitcode: disruptive: 5"
run "plan --detailed-exitcode --json: 5" 5 plan --offline --detailed-exitcode --json "$V3" --from "$V2" &&
	json "plan --detailed-exitcode --json" '.summary.disruptive == 2'
run "plan --detailed-exitcode of an invalid profile: 1" 1 plan --offline --detailed-exitcode "$I" &&
	pass "plan --detailed-exitcode of an invalid profile: 1"
run "plan without --detailed-exitcode: 0 with changes" 0 plan --offline "$V3" --from "$V2" &&
	pass "plan without --detailed-exitcode: 0 with changes"
run "plan --markdown" 0 plan --offline --markdown "$V3" --from "$V2" &&
	grep_out "markdown: a heading per host" '^#### host `h1`$' &&
	grep_out "markdown: ops in a diff block" '^```diff$' &&
	grep_out "markdown: op lines" '^- delete macsec ms100: .*\[disruptive\]$' &&
	grep_out "markdown: disruptive called out" '^> \*\*Disruptive\*\*' &&
	grep_out "markdown: total" '^\*\*total: 14 operations on 2 hosts, 2 disruptive\*\*$' &&
	if [ "$(grep -c '^```' "$TMP/out")" -eq 4 ]; then pass "markdown: fences balance"; else fail "markdown: fences balance"; fi
run "plan --markdown of no changes" 0 plan --offline --markdown "$P" --from "$P" &&
	grep_out "markdown: no changes" "^No changes\.$" && no_out "markdown: no empty diff block" '^```'
run "plan --markdown --json: usage" 2 plan --offline --markdown --json "$P" && pass "plan --markdown --json: usage"
run "apply --markdown: unknown" 2 apply --dry-run --markdown "$P" && pass "apply --markdown: unknown"
# apply --dry-run is a plan and takes its --detailed-exitcode (tests/cli/gates.sh); a real
# apply does not
run "apply --detailed-exitcode without --dry-run: usage" 2 apply --detailed-exitcode "$P" &&
	grep_out "apply --detailed-exitcode: goes with --dry-run" "goes with --dry-run" "$TMP/err"
# live: nothing of lab-pair is on this machine, so everything is to be created
"$FCTL" plan --detailed-exitcode --markdown --host h1 --state-dir "$TMP/live-state" "$P" >"$TMP/out" 2>"$TMP/err"
case $? in
4) grep_out "live plan --markdown --detailed-exitcode: 4" '^\+ create vlan eth0\.100' ;;
2) skip "live plan --detailed-exitcode" "no netlink here" ;;
*) fail "live plan --detailed-exitcode: 4" ;;
esac

if [ $have_py -eq 1 ] && "$PY" -c 'import yaml' 2>/dev/null; then
	if "$PY" - "$SRC/examples/ci" <<-'PY' >"$TMP/py" 2>&1; then
		import sys, yaml
		d = sys.argv[1]
		gh = yaml.safe_load(open(d + "/github-actions.yml"))
		for job in ("check", "lab"):
		    runs = [s.get("run", "") for s in gh["jobs"][job]["steps"]]
		    inst = [i for i, r in enumerate(runs) if "cmake --install" in r or "make install" in r]
		    pipe = [i for i, r in enumerate(runs) if "pipeline.sh" in r]
		    assert inst and pipe and inst[0] < pipe[0], "github %s: no install before pipeline.sh" % job
		gl = yaml.safe_load(open(d + "/gitlab-ci.yml"))
		for job in ("check", "lab", "approvals"):
		    before = "\n".join(gl[job].get("before_script", []))
		    assert "cmake --install" in before, "gitlab %s: no install before the script" % job
		# the merge gate of docs/approvals.md: two approvals after the install
		runs = [s.get("run", "") for s in gh["jobs"]["approvals"]["steps"]]
		gate = [i for i, r in enumerate(runs) if "fabricctl approvals" in r and "--require 2" in r]
		inst = [i for i, r in enumerate(runs) if "cmake --install" in r]
		assert gate and inst and inst[0] < gate[0], "github: no approvals gate after the install"
		assert any("fabricctl approvals" in x and "--require 2" in x
		           for x in gl["approvals"]["script"]), "gitlab: no approvals gate"
	PY
		pass "the shipped CI workflows install fabricctl before pipeline.sh, and gate on two approvals"
	else
		fail "the shipped CI workflows install fabricctl before pipeline.sh" "$(tail -1 "$TMP/py")"
	fi
else
	skip "the shipped CI workflows install fabricctl" "python3 yaml is not installed"
fi

echo "ux: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
