#!/bin/bash
# SPDX-License-Identifier: MIT
# Audit log benchmark: append throughput with group commit (one write + one
# fdatasync per batch), verify throughput, and verify as a ratio to sha256sum over
# the same bytes in the same run (targets: >= 50,000 records/s, ratio >= 0.5), and the
# time of an inclusion and a consistency proof over the whole log.
#
# usage: bench/audit_bench.sh [FABRICCTL] [RECORDS] [BATCH]
set -euo pipefail

FCTL=${1:-build/fabricctl/fabricctl}
N=${2:-200000}
BATCH=${3:-1024}
TMP=$(mktemp -d /var/tmp/fctl-audit-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
LOG=$TMP/audit.log
now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

"$FCTL" audit keygen --out "$TMP" >/dev/null
t0=$(now)
"$FCTL" audit append --log "$LOG" --action bench-step --result applied --host gpu01 --link eth0.100 \
	--secy ms100 --change CHG-1234 --profile-name gpu-pod-a --profile-version 7 \
	--profile-sha256 9ed46e9bdc989a335a08e6d244aefffb15f24d80bcf6501fe4c22e58aef35ac9 \
	--key-id 0011223344556677 --kcv a1b2c3 --count "$N" --batch "$BATCH"
t1=$(now)
bytes=$(stat -c %s "$LOG")
app=$(secs "$t0" "$t1")

# verify reads the file cold from the page cache like sha256sum does: warm both once
cat "$LOG" >/dev/null
t0=$(now)
"$FCTL" audit verify --log "$LOG" --pubkey "$TMP/audit.pub" >/dev/null
t1=$(now)
ver=$(secs "$t0" "$t1")
t0=$(now)
sha256sum "$LOG" >/dev/null
t1=$(now)
sha=$(secs "$t0" "$t1")
# an RFC 9162 inclusion proof of the middle record, and a consistency proof from half
t0=$(now)
"$FCTL" audit proof --log "$LOG" --inclusion $((N / 2)) --json >/dev/null
t1=$(now)
incl=$(secs "$t0" "$t1")
t0=$(now)
"$FCTL" audit proof --log "$LOG" --consistency $((N / 2)) --json >/dev/null
t1=$(now)
cons=$(secs "$t0" "$t1")

awk -v n="$N" -v b="$BATCH" -v by="$bytes" -v app="$app" -v ver="$ver" -v sha="$sha" \
	-v incl="$incl" -v cons="$cons" 'BEGIN {
	printf "records:            %d (%.1f MB, %d bytes/record)\n", n, by / 1e6, by / n
	printf "append:             %.3f s  %.0f records/s  (group commit: %d records per fdatasync)\n", app, n / app, b
	printf "verify:             %.3f s  %.0f records/s  %.0f MB/s (chain + Merkle root + checkpoint)\n", ver, n / ver, by / 1e6 / ver
	printf "sha256sum:          %.3f s  %.0f MB/s (baseline, same bytes)\n", sha, by / 1e6 / sha
	printf "verify / sha256sum: %.2f (throughput ratio; target >= 0.5)\n", sha / ver
	printf "inclusion proof:    %.3f s (record %d of %d, reading the whole log)\n", incl, n / 2, n
	printf "consistency proof:  %.3f s (from %d to %d records)\n", cons, n / 2, n
	printf "append target:      %s (>= 50000 records/s)\n", ((n / app >= 50000) ? "met" : "MISSED")
}'
