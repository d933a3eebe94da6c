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
# check NAME CMD... (PASS when CMD succeeds), on HOST CMD..., in_ram HOST FILE... The exit trap takes
# the lab down even when the suite fails or is stopped by a signal, counts an early
# stop and a suite that ran no check as failures, and exits 1 on any failure: a
# suite never passes by skipping. On a failure it first prints what the guests' kernels
# and NICs say (lab_guest_trouble) and keeps their console logs under BUILD/lab-consoles.
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

# in_ram HOST FILE...: the guest runs these files (the build's programs) from a copy in its
# RAM, bound over their own paths, so nothing about them changes but where their pages
# come from. The guests read the host's tree over 9p without a cache, page by page at
# every start: an ASan fabricctl (15 MB) cost 1.4 s of CPU a start under TCG that way,
# 0.3 s from RAM (docs/testing.md). Until the guest powers off; a file the host
# rebuilds meanwhile is not seen (the suites do not rebuild).
in_ram() {
	local h=$1
	shift
	on "$h" sh -c 'for f; do c=/run/fctl-in-ram$f; mkdir -p "${c%/*}" && cp "$f" "$c" &&
		mount --bind "$c" "$f" || exit 1; done' in_ram "$@"
}

# On a failed suite, before the lab goes: what each guest's kernel said that a test
# cannot see from outside. A panic reboots the guest at once (panic=-1), so a guest
# whose addresses and agents vanished mid-suite shows here as two boots. Its console
# log is kept under $BUILD/lab-consoles/ for whoever reads the CI log next.
KERNEL_TROUBLE='Kernel panic|BUG:|Oops|WARNING:|general protection|soft lockup|hung_task|Out of memory|rcu_.*stall|Call Trace'
lab_guest_trouble() {
	local c h n boots kept
	for c in "$FCTL_LAB_DIR"/h[0-9]*/console.log; do
		[ -s "$c" ] || continue
		h=$(basename "$(dirname "$c")")
		boots=$(grep -c "Linux version" "$c")
		n=$(grep -cE "$KERNEL_TROUBLE" "$c")
		kept=$BUILD/lab-consoles/$SUITE-${FCTL_LAB_DIR##*/}-$h.log
		mkdir -p "${kept%/*}" && cp "$c" "$kept" 2>/dev/null
		# the wire as the guest sees it (through the lab share, not the network, which
		# may be what failed): a TX queue that stopped, a NIC whose interrupts stopped
		echo "   $h: eth0 and its queue:"
		"$LAB" exec --timeout 30 "$h" -- sh -c 'ip -s -s link show dev eth0; tc -s qdisc show dev eth0;
			grep -i virtio /proc/interrupts' 2>&1 | head -n 30 | sed 's/^/     /'
		[ "$boots" -le 1 ] && [ "$n" -eq 0 ] && continue
		echo "   $h: its kernel booted $boots times, $n trouble lines (whole log: $kept):"
		if [ "$n" -gt 0 ]; then
			grep -m1 -B5 -A40 -E "$KERNEL_TROUBLE" "$c" | tr -d '\r' | sed 's/^/     /'
		else
			grep -B30 -m2 "Linux version" "$c" | tail -n 31 | tr -d '\r' | sed 's/^/     /'
		fi
	done
}

lab_finish() {
	local rc=$?
	trap - EXIT
	if declare -F suite_cleanup >/dev/null; then suite_cleanup || true; fi
	{ [ "$rc" -ne 0 ] || [ "$FAIL" -ne 0 ]; } && lab_guest_trouble
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
