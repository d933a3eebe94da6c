#!/bin/sh
# SPDX-License-Identifier: MIT
# CLI tests of what a CI gate relies on (issue #33): exit codes that tell an input that
# cannot be read (2) from one that is invalid or fails (1), an empty evidence selection
# refused, every command of the command table giving 2 for a missing file and an unknown
# option. Table-driven: one line a case. Prints PASS/FAIL per case; exits 1 on any FAIL.
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
# check NAME WANT_RC STDERR_ERE|- ARGS...: runs fabricctl in $TMP/cwd; the exit code must be
# WANT_RC and (unless -) stderr must match the extended regexp.
check() {
	name=$1 want=$2 pat=$3
	shift 3
	(cd "$TMP/cwd" && "$FCTL" "$@") >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$name" "exit $rc, expected $want"
	elif [ "$pat" != - ] && ! grep -Eq -- "$pat" "$TMP/err"; then
		fail "$name" "stderr does not match /$pat/"
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
for a in apply probe; do
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

echo "gates: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
