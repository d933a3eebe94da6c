#!/bin/bash
# SPDX-License-Identifier: MIT
# The attack tests (docs/architecture.md, issue "Security"): every tests/security/*.sh
# but this one, each a reproduction of one finding that fails on the code before its
# fix. Usage: run.sh BUILD_DIR. FCTL_SECURITY_EXCLUDE="NAME ..." leaves the named tests
# out of this run, each named in the output as not run here (test.sh's ASan run leaves
# out evidence_tamper and evidence_consistency: they attack verify.sh, which is bash, openssl
# and python whatever the build, and the release build's run has them); FCTL_SECURITY_ONLY
# ="NAME ..." runs only the named ones (test.sh runs those two as a suite of their own, so
# that the host lane's chain of suites is shorter). Prints each test's output and
# "security: N passed, M failed" (tests); exits non-zero on any failure. Needs root.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${1:?usage: run.sh BUILD_DIR}
export FCTL_BUILD_DIR=$BUILD
P=0 F=0 X=0
[ -n "${FCTL_SECURITY_ONLY:-}" ] && echo "security: only $FCTL_SECURITY_ONLY (FCTL_SECURITY_ONLY)"
for x in ${FCTL_SECURITY_EXCLUDE:-} ${FCTL_SECURITY_ONLY:-}; do # a name that is no test is a mistake, not a pass
	[ -f "$HERE/$x.sh" ] && [ "$x" != run ] || { echo "security: FCTL_SECURITY_EXCLUDE or _ONLY names no test '$x'" >&2; exit 2; }
done
for t in "$HERE"/*.sh; do
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
	echo "=== ${t##*/}"
	t0=$SECONDS
	# a guard against a hang, not a speed limit: evidence_tamper ran past 600 s in a CI run
	# beside two lab VMs (about 75 runs of verify.sh, 2 to 3 s each on a quiet machine)
	if timeout --kill-after=10 1200 bash "$t"; then P=$((P + 1)); else
		rc=$?
		F=$((F + 1))
		[ $rc = 124 ] && echo "FAIL ${t##*/}: timed out after 1200 s"
		echo "--- ${t##*/}: FAIL"
	fi
	echo "--- ${t##*/}: $((SECONDS - t0)) s" # where the suite's time goes (no limit on it)
done
echo "security: $P passed, $F failed$([ $X -gt 0 ] && echo ", $X left out by FCTL_SECURITY_EXCLUDE or _ONLY")"
[ $F -eq 0 ] && [ $P -gt 0 ]
