#!/bin/bash
# SPDX-License-Identifier: MIT
# The attack tests (docs/architecture.md, issue "Security"): every tests/security/*.sh
# but this one, each a reproduction of one finding that fails on the code before its
# fix. Usage: run.sh BUILD_DIR. FCTL_SECURITY_EXCLUDE="NAME ..." leaves the named tests
# out of this run, each named in the output as not run here (test.sh's ASan run leaves
# out the tests that start no program of this build: the four evidence_* tests attack
# verify.sh, which is bash, openssl and python whatever the build; lab_dir checks lab.sh;
# unit_hardening reads the unit file with systemd-analyze; the release build's run has
# them); FCTL_SECURITY_ONLY="NAME ..." runs only the named ones (test.sh runs the evidence_*
# tests as a suite of their own, so that the host lane's chain of suites is shorter). Prints each test's output and
# "security: N passed, M failed" (tests); exits non-zero on any failure. Needs root.
# FCTL_SECURITY_JOBS: how many tests run at once (default 3).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${1:?usage: run.sh BUILD_DIR}
export FCTL_BUILD_DIR=$BUILD
P=0 F=0 X=0
[ -n "${FCTL_SECURITY_ONLY:-}" ] && echo "security: only $FCTL_SECURITY_ONLY (FCTL_SECURITY_ONLY)"
for x in ${FCTL_SECURITY_EXCLUDE:-} ${FCTL_SECURITY_ONLY:-}; do # a name that is no test is a mistake, not a pass
	[ -f "$HERE/$x.sh" ] && [ "$x" != run ] || { echo "security: FCTL_SECURITY_EXCLUDE or _ONLY names no test '$x'" >&2; exit 2; }
done
# Most of these tests wait (deadlines of 8 to 45 s, a held profile parse, handshakes), so
# FCTL_SECURITY_JOBS of them (default 3) run at once: each has its own temporary
# directory, network namespace (named by its PID) and free ports. Each test's output is
# printed whole when it ends, then its time. The longest start first.
JOBS=${FCTL_SECURITY_JOBS:-3}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "security: FCTL_SECURITY_JOBS must be a positive number" >&2; exit 2; }
OUT=$(mktemp -d /tmp/fctl-security-run.XXXXXX) || exit 2
trap 'rm -rf "$OUT"' EXIT
LONG="privsep abandoned_worker audit_log fanout_deadline evidence_tamper evidence_consistency evidence_pn evidence_approvals unit_hardening"
order() {
	local n
	for n in $LONG; do [ -f "$HERE/$n.sh" ] && echo "$HERE/$n.sh"; done
	for t in "$HERE"/*.sh; do
		n=${t##*/}
		[[ " $LONG " == *" ${n%.sh} "* ]] || echo "$t"
	done
}
# one test: its output and its exit code in $OUT (a guard against a hang, not a speed
# limit: evidence_tamper ran past 600 s in a CI run beside two lab VMs)
one() {
	local t=$1 n=${1##*/} t0=$SECONDS rc=0
	timeout --kill-after=10 1200 bash "$t" >"$OUT/$n.out" 2>&1 || rc=$?
	echo "$rc $((SECONDS - t0))" >"$OUT/$n.rc"
}
# prints the tests that have ended since the last call and counts them
report() {
	local f n rc s
	for f in "$OUT"/*.rc; do
		[ -e "$f" ] || continue
		n=$(basename "$f" .rc)
		read -r rc s <"$f"
		echo "=== $n"
		cat "$OUT/$n.out"
		if [ "$rc" = 0 ]; then P=$((P + 1)); else
			F=$((F + 1))
			[ "$rc" = 124 ] && echo "FAIL $n: timed out after 1200 s"
			echo "--- $n: FAIL"
		fi
		echo "--- $n: $s s" # where the suite's time goes (no limit on it)
		rm -f "$f" "$OUT/$n.out"
	done
}
running=0
mapfile -t TESTS < <(order)
for t in "${TESTS[@]}"; do
	[ "$t" = "$HERE/run.sh" ] && continue
	n=${t##*/}
	if [[ -n ${FCTL_SECURITY_ONLY:-} && " $FCTL_SECURITY_ONLY " != *" ${n%.sh} "* ]]; then
		X=$((X + 1)) # the suite without FCTL_SECURITY_ONLY runs it
		continue
	fi
	if [[ " ${FCTL_SECURITY_EXCLUDE:-} " == *" ${n%.sh} "* ]]; then
		echo "=== $n: not run in this suite (FCTL_SECURITY_EXCLUDE)"
		X=$((X + 1))
		continue
	fi
	if [ $running -ge "$JOBS" ]; then
		wait -n
		running=$((running - 1))
		report
	fi
	one "$t" &
	running=$((running + 1))
done
wait
report
echo "security: $P passed, $F failed$([ $X -gt 0 ] && echo ", $X left out by FCTL_SECURITY_EXCLUDE or _ONLY")"
[ $F -eq 0 ] && [ $P -gt 0 ]
