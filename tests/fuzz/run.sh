#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for the same bounded
# time: fuzz_profile (profile parser, validation, render, plan), fuzz_proto (the
# agent protocol decoder), fuzz_chan (the framing of the agent <-> TLS front-end
# channel, and its queue) and fuzz_sshsig (approvals: SSHSIG and allowed_signers).
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
	echo "FAIL: fuzz_profile, fuzz_proto, fuzz_chan and fuzz_sshsig cannot run: clang is not installed (scripts/deps.sh installs it)"
	exit 1
fi
CC=clang cmake -S "$SRC" -B "$BUILD" -DFCTL_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" --target fuzz_profile fuzz_proto fuzz_chan fuzz_sshsig -j2

mkdir -p "$BUILD/fuzz-artifacts"
par=""
[ "$JOBS" -gt 1 ] && par="-jobs=$JOBS -workers=$JOBS"
failed=0
# run TARGET CORPUS_NAME [extra libFuzzer args...]: the seed corpus stays read-only;
# new inputs go to a work corpus under $BUILD that persists
run() {
	t=$1
	c=$2
	shift 2
	mkdir -p "$BUILD/$c"
	echo "$t: ${SECS}s, corpus $BUILD/$c"
	set +e
	# shellcheck disable=SC2086 # $par is two options or none
	"$BUILD/tests/$t" $par \
		-max_total_time="$SECS" -rss_limit_mb=2048 -timeout=5 \
		-print_final_stats=1 \
		-artifact_prefix="$BUILD/fuzz-artifacts/$t-" \
		"$@"
	rc=$?
	set -e
	if [ $rc -ne 0 ]; then
		echo "FAIL: $t exited $rc; reproduce with:"
		ls "$BUILD"/fuzz-artifacts/"$t"-* 2>/dev/null | sed "s|^|  $BUILD/tests/$t |"
		failed=1
	else
		echo "PASS: $t ran ${SECS}s without a finding"
	fi
}
run fuzz_profile fuzz-corpus -max_len=65536 -dict="$SRC/tests/fuzz/profile.dict" \
	"$BUILD/fuzz-corpus" "$SRC/tests/fuzz/corpus"
# frames up to 64 KiB: the size limits themselves are checked from the header
run fuzz_proto fuzz-corpus-proto -max_len=65536 "$BUILD/fuzz-corpus-proto"
# channel streams up to 64 KiB: messages of up to 16 KiB (the first byte sets the limit)
run fuzz_chan fuzz-corpus-chan -max_len=65536 "$BUILD/fuzz-corpus-chan"
# approvals: signatures and allowed_signers up to 16 KiB (a signature is under 1 KiB)
run fuzz_sshsig fuzz-corpus-sshsig -max_len=16384 "$BUILD/fuzz-corpus-sshsig"
exit $failed
