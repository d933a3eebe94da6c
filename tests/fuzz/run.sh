#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the libFuzzer target (clang, ASan+UBSan) and runs it for a bounded time.
# Fails when the fuzzer finds a crash, a leak, a timeout or an out-of-memory input;
# the input is left under $BUILD/fuzz-artifacts/.
#
# usage: tests/fuzz/run.sh [SECONDS]        (default 60)
#   FCTL_FUZZ_BUILD   build directory (default: build-fuzz in the source tree)
#   FCTL_FUZZ_JOBS    parallel fuzzing processes (default 1)
set -eu

SECS=${1:-60}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${FCTL_FUZZ_BUILD:-$SRC/build-fuzz}
JOBS=${FCTL_FUZZ_JOBS:-1}

if ! command -v clang >/dev/null 2>&1; then
	echo "FAIL: fuzz_profile cannot run: clang is not installed (scripts/deps.sh installs it)"
	exit 1
fi
CC=clang cmake -S "$SRC" -B "$BUILD" -DFCTL_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" --target fuzz_profile -j2

# the seed corpus stays read-only; new inputs go to a work corpus that persists
mkdir -p "$BUILD/fuzz-corpus" "$BUILD/fuzz-artifacts"
echo "fuzz_profile: ${SECS}s, corpus $BUILD/fuzz-corpus + tests/fuzz/corpus"
par=""
[ "$JOBS" -gt 1 ] && par="-jobs=$JOBS -workers=$JOBS"
set +e
# shellcheck disable=SC2086 # $par is two options or none
"$BUILD/tests/fuzz_profile" $par \
	-max_total_time="$SECS" -max_len=65536 -rss_limit_mb=2048 -timeout=5 \
	-print_final_stats=1 \
	-dict="$SRC/tests/fuzz/profile.dict" \
	-artifact_prefix="$BUILD/fuzz-artifacts/" \
	"$BUILD/fuzz-corpus" "$SRC/tests/fuzz/corpus"
rc=$?
set -e
if [ $rc -ne 0 ]; then
	echo "FAIL: fuzz_profile exited $rc; reproduce with:"
	ls "$BUILD"/fuzz-artifacts/* 2>/dev/null | sed "s|^|  $BUILD/tests/fuzz_profile |"
	exit 1
fi
echo "PASS: fuzz_profile ran ${SECS}s without a finding"
