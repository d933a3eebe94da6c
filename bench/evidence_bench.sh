#!/bin/bash
# SPDX-License-Identifier: MIT
# Evidence bundle benchmark: a log of RECORDS records (default 1,000,000; written by
# `audit append --count` with group commit) with a window of WINDOW records (default 1,000,
# change CHG-W, in the middle of the log): the bundle's size (target <= 2 MB, without the
# whole log) and the time of verify.sh over it (target <= 10 s): wall and CPU seconds, as
# auditors run it (with its python3 helper when python3 is there) and with --openssl-only
# (the openssl tool alone, one process per signature). Prints one line: BENCH {json}.
#
# usage: bench/evidence_bench.sh [FABRICCTL] [RECORDS] [WINDOW]
set -euo pipefail

FCTL=${1:-build/fabricctl/fabricctl}
N=${2:-1000000}
W=${3:-1000}
TMP=$(mktemp -d /var/tmp/fctl-evidence-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
LOG=$TMP/audit.log
now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
. "$(dirname "${BASH_SOURCE[0]}")/evidence_records.bash" # append CHANGE COUNT

"$FCTL" audit keygen --out "$TMP" >/dev/null
"$FCTL" audit keygen --out "$TMP/signer" >/dev/null
half=$(((N - W) / 2))
t0=$(now)
append CHG-A "$half"
append CHG-W "$W"
append CHG-B "$((N - W - half))"
t1=$(now)
gen=$(secs "$t0" "$t1")
logbytes=$(stat -c %s "$LOG")
t0=$(now)
"$FCTL" evidence --log "$LOG" --change CHG-W --sign "$TMP/signer/audit.key" --out "$TMP/b.tar" >/dev/null
t1=$(now)
build=$(secs "$t0" "$t1")
mkdir "$TMP/b" && tar -xf "$TMP/b.tar" -C "$TMP/b"
fsize() { stat -c %s "$TMP/b/$1"; }
# wall seconds, and the CPU seconds (user + system, verify.sh and every process it starts),
# which a shared machine's load does not inflate as much
TIMEFORMAT='%R %U %S'
{ time bash "$TMP/b/verify.sh" --tar "$TMP/b.tar" --signer-pub "$TMP/signer/audit.pub" --audit-pub "$TMP/audit.pub" \
	>"$TMP/out" 2>&1; } 2>"$TMP/time" || { cat "$TMP/out" >&2; echo "evidence_bench: FAILED: verify.sh rejected the bundle" >&2; exit 1; }
read -r ver vu vs <"$TMP/time"
cpu=$(awk -v u="$vu" -v s="$vs" 'BEGIN { printf "%.3f", u + s }')
! grep -q "no python3 with OpenSSL's libcrypto 3" "$TMP/out" ||
	{ echo "evidence_bench: FAILED: verify.sh could not use its python3 helper here" >&2; exit 1; }
{ time bash "$TMP/b/verify.sh" --openssl-only --tar "$TMP/b.tar" --signer-pub "$TMP/signer/audit.pub" \
	--audit-pub "$TMP/audit.pub" >"$TMP/out2" 2>&1; } 2>"$TMP/time" ||
	{ cat "$TMP/out2" >&2; echo "evidence_bench: FAILED: verify.sh --openssl-only rejected the bundle" >&2; exit 1; }
read -r over ou os <"$TMP/time"
ocpu=$(awk -v u="$ou" -v s="$os" 'BEGIN { printf "%.3f", u + s }')
grep -q "the window's $W records and the leaf before it with the range proof's [0-9]* nodes give the checkpoint's root" "$TMP/out" ||
	{ cat "$TMP/out" >&2; echo "evidence_bench: FAILED: no proof check in the output" >&2; exit 1; }
printf 'BENCH {"records":%s,"window":%s,"log_bytes":%s,"generate_s":%s,"build_s":%s,"bundle_bytes":%s,' \
	"$N" "$W" "$logbytes" "$gen" "$build" "$(stat -c %s "$TMP/b.tar")"
printf '"slice_bytes":%s,"proofs_bytes":%s,"attestations_bytes":%s,"report_bytes":%s,"kms_metadata_bytes":%s,' \
	"$(fsize audit/slice.jsonl)" "$(fsize audit/proofs.json)" "$(fsize attestations.intoto.jsonl)" \
	"$(fsize report.html)" "$(fsize keys/kms-metadata.json)"
printf '"verify_s":%s,"verify_cpu_s":%s,"verify_openssl_only_s":%s,"verify_openssl_only_cpu_s":%s,"load":"%s","target_bundle_bytes":2097152,"target_verify_s":10}\n' \
	"$ver" "$cpu" "$over" "$ocpu" "$(cut -d' ' -f1-3 /proc/loadavg)"
