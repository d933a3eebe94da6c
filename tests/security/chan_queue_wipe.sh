#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding (issue #29, 5) "a SAK left in freed memory by the channel's queue": the queue of
# messages between the TLS front-end and the agent grew by realloc while frames were in
# it (fctl_chan_send only reset it when it was empty), so realloc could leave a copy of a
# queued request, which may carry a SAK, in freed memory. The check is the unit test
# test_chan (tests/unit/test_chan.c): free and realloc wrapped at link time, 64 frames
# with a marker queued to a peer that reads nothing, then every frame read back; no
# block handed to free or realloc may hold the marker. Run against FCTL_BUILD_DIR's
# build (release and ASan). The framing itself is fuzzed by tests/fuzz/fuzz_chan.c.
# Prints PASS/FAIL per check, "chan_queue_wipe: N passed, M failed".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
X=$BUILD/tests/test_chan
PASS=0 FAIL=0
[ -x "$X" ] || { echo "chan_queue_wipe: cannot run: no $X (build first)" >&2; exit 2; }
if out=$("$X" 2>&1) && grep -q "PASSED  \] 1 test" <<<"$out"; then
	echo "PASS queue-grows-without-leaving-frames-in-freed-memory"
	PASS=1
else
	echo "FAIL queue-grows-without-leaving-frames-in-freed-memory: $(grep -E 'ERROR|LINE|FAILED' <<<"$out" | head -3 | tr '\n' ' ')"
	FAIL=1
fi
echo "chan_queue_wipe: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
