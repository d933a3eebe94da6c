# SPDX-License-Identifier: MIT
# tests/lab/lib.bash: the frame every lab suite shares: paths, PASS/FAIL counting, the exit trap that takes the lab down, `on HOST CMD`.
#
# A suite sets, then sources this file:
#   SUITE=name                  printed in "NAME: N passed, M failed"
#   SUITE_LAB_DIR=/var/tmp/...  the lab directory unless FCTL_LAB_DIR names one
#   SUITE_EXEC_TIMEOUT=120      optional: `lab.sh exec --timeout` for on()
# and may define, before the end:
#   suite_cleanup               run first by the exit trap (stop the suite's own
#                               processes, wipe its test keys); must not fail
#   suite_summary               optional: extra words after the count line
#
# What it gives: ROOT, BUILD (FCTL_BUILD_DIR or ROOT/build), F (the fabricctl
# binary), LAB (scripts/lab.sh), PASS, FAIL, pass NAME, fail NAME [DETAIL],
# check NAME CMD... (PASS when CMD succeeds), on HOST CMD... The exit trap takes
# the lab down even when the suite fails or is stopped by a signal, counts an early
# stop and a suite that ran no check as failures, and exits 1 on any failure: a
# suite never passes by skipping.
#
# JSON checks: Debian 12's jq 1.6 exits 0 for `jq -e EXPR` on EMPTY input, so a
# command that printed nothing would pass. Write `jq -en 'input | EXPR'` (exit 5
# on empty input), also inside `on HOST sh -c "..."` where no shell function exists.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
LAB=$ROOT/scripts/lab.sh
export FCTL_LAB_DIR=${FCTL_LAB_DIR:-${SUITE_LAB_DIR:?the suite sets SUITE_LAB_DIR}}
: "${SUITE:?the suite sets SUITE}"
PASS=0
FAIL=0

pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
check() { # name, then a command: PASS when it succeeds
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

on() { # host, command...: run in a lab guest
	local h=$1
	shift
	"$LAB" exec --timeout "${SUITE_EXEC_TIMEOUT:-120}" "$h" -- "$@"
}

lab_finish() {
	local rc=$?
	trap - EXIT
	if declare -F suite_cleanup >/dev/null; then suite_cleanup || true; fi
	"$LAB" down >/dev/null 2>&1 || true
	[ "$rc" -ne 0 ] && [ "$FAIL" -eq 0 ] && fail "script" "stopped early with status $rc"
	[ "$PASS" -eq 0 ] && [ "$FAIL" -eq 0 ] && fail "script" "no check ran"
	local extra=
	if declare -F suite_summary >/dev/null; then extra=" $(suite_summary)"; fi
	echo "$SUITE: $PASS passed, $FAIL failed$extra"
	[ "$FAIL" -eq 0 ] && exit 0
	exit 1
}
trap lab_finish EXIT
trap 'fail "signal" "stopped by a signal before the end"; exit 1' TERM INT HUP
