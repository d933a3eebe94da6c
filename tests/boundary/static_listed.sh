#!/bin/sh
# SPDX-License-Identifier: MIT
# The static checks (tests/CMakeLists.txt, fctl_static_check) run in the release build's
# ctest only: the sanitizer build leaves them out. This fails when one of them is not a
# test of BUILD_DIR's ctest, or when BUILD_DIR is a sanitizer build (then none runs).
#   static_listed.sh CTEST BUILD_DIR NAME...
ctest=$1 build=$2
shift 2
[ $# -gt 0 ] || { echo "FAIL: no static check named"; exit 1; }
if grep -q '^FCTL_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
	echo "FAIL: $build is a sanitizer build: its ctest runs no static check"
	exit 1
fi
list=$("$ctest" --test-dir "$build" -N) || { echo "FAIL: ctest -N in $build"; exit 1; }
bad=0
for n in "$@"; do
	if printf '%s\n' "$list" | grep -qE "Test +#[0-9]+: $n\$"; then
		echo "PASS: $n is a test of this ctest"
	else
		echo "FAIL: static check $n is not a test of $build's ctest"
		bad=1
	fi
done
exit $bad
