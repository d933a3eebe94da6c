#!/bin/bash
# SPDX-License-Identifier: MIT
# The attack tests (docs/architecture.md, issue "Security"): every tests/security/*.sh
# but this one, each a reproduction of one finding that fails on the code before its
# fix. Usage: run.sh BUILD_DIR. Prints each test's output and
# "security: N passed, M failed" (tests); exits non-zero on any failure. Needs root.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${1:?usage: run.sh BUILD_DIR}
export FCTL_BUILD_DIR=$BUILD
P=0 F=0
for t in "$HERE"/*.sh; do
	[ "$t" = "$HERE/run.sh" ] && continue
	echo "=== ${t##*/}"
	t0=$SECONDS
	if timeout --kill-after=10 600 bash "$t"; then P=$((P + 1)); else F=$((F + 1)); echo "--- ${t##*/}: FAIL"; fi
	echo "--- ${t##*/}: $((SECONDS - t0)) s" # where the suite's time goes (no limit on it)
done
echo "security: $P passed, $F failed"
[ $F -eq 0 ] && [ $P -gt 0 ]
