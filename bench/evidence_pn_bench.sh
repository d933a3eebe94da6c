#!/bin/bash
# SPDX-License-Identifier: MIT
# Evidence bundle benchmark with packet-number evidence (docs/audit.md "Packet-number
# evidence"): a log of RECORDS apply records around a window of change CHG-W of WINDOW
# records: WINDOW / 2 applies, each a key change on a host of LINKS links (its SA door
# retires the old key and starts the new one, TX and RX, on each link: 4 x LINKS ledger
# events) followed by its sa-ledger record, as apply writes them. Times fabricctl evidence
# and verify.sh (with its python3 helper, and --openssl-only) over it. With a FABRICCTL
# from before the packet-number evidence (no --ledger), the same log gives the bundle
# without it: the before/after comparison. Prints one line: BENCH {json}.
#
# usage: bench/evidence_pn_bench.sh [FABRICCTL] [RECORDS] [WINDOW] [LINKS]
set -euo pipefail

FCTL=${1:-build/fabricctl/fabricctl}
N=${2:-100000}
W=${3:-1000}
L=${4:-4}
TMP=$(mktemp -d /var/tmp/fctl-evidence-pn-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
LOG=$TMP/audit.log LED=$TMP/sa-ledger
export FCTL_TEST_AUDIT_APPEND_AS_TOOL=1 # a build with -DFCTL_TEST_HOOKS=ON (docs/audit.md)
now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
A=("$FCTL" audit append --log "$LOG" --host gpu01)
. "$(dirname "${BASH_SOURCE[0]}")/evidence_records.bash" # append CHANGE COUNT
"$FCTL" audit keygen --out "$TMP" >/dev/null
"$FCTL" audit keygen --out "$TMP/signer" >/dev/null
half=$(((N - W) / 2))
t0=$(now)
append CHG-A "$half"
printf 'fabricctl-sa-ledger 1\n' >"$LED"
for ((v = 1; v <= W / 2; v++)); do # version v's key replaces v-1's on every link
	printf -v new '%032x' $v
	printf -v kid '%032x' $((v + 1000000))
	for ((l = 1; l <= L; l++)); do
		printf -v sci '0x525400fa%04x0001' "$l"
		printf -v peer '0x525400fb%04x0001' "$l"
		[ $v -gt 1 ] && printf 'retired tx %s %s %s %d\nretired rx %s %s %s %d\n' \
			"$old" "$okid" "$sci" $((v * 1000)) "$old" "$okid" "$peer" $((v * 999)) >>"$LED"
		printf 'live tx %s %s %s 1\nlive rx %s %s %s 1\n' "$new" "$kid" "$sci" "$new" "$kid" "$peer" >>"$LED"
	done
	old=$new okid=$kid
	append CHG-W 1
	"${A[@]}" --action sa-ledger --result anchored --change CHG-W \
		--detail "bytes=$(stat -c %s "$LED") sha256=$(sha256sum "$LED" | cut -d' ' -f1)" >/dev/null
done
append CHG-B "$((N - W - half))"
t1=$(now)
gen=$(secs "$t0" "$t1")
LOPT=()
"$FCTL" evidence --help 2>&1 | grep -q -- --ledger && LOPT=(--ledger "$LED")
t0=$(now)
"$FCTL" evidence --log "$LOG" --change CHG-W "${LOPT[@]}" --sign "$TMP/signer/audit.key" --out "$TMP/b.tar" >/dev/null
t1=$(now)
build=$(secs "$t0" "$t1")
TIMEFORMAT='%R %U %S'
run() { # OUT ARGS...: wall, CPU
	local out=$1
	shift
	{ time bash "$TMP/verify.sh" "$@" --tar "$TMP/b.tar" --signer-pub "$TMP/signer/audit.pub" \
		--audit-pub "$TMP/audit.pub" >"$out" 2>&1; } 2>"$TMP/time" ||
		{ cat "$out" >&2; echo "evidence_pn_bench: FAILED: verify.sh rejected the bundle" >&2; exit 1; }
	awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$TMP/time"
}
tar -xOf "$TMP/b.tar" verify.sh >"$TMP/verify.sh"
read -r ver cpu < <(run "$TMP/out")
read -r over ocpu < <(run "$TMP/out2" --openssl-only)
pn=$(grep -c '^PASS: pn:' "$TMP/out" || true)
printf 'BENCH {"records":%s,"window":%s,"links":%s,"log_bytes":%s,"ledger_bytes":%s,"ledger_events":%s,' \
	"$(wc -l <"$LOG")" "$W" "$L" "$(stat -c %s "$LOG")" "$(stat -c %s "$LED")" "$(($(wc -l <"$LED") - 1))"
printf '"generate_s":%s,"build_s":%s,"bundle_bytes":%s,"pn_checks_passed":%s,' "$gen" "$build" "$(stat -c %s "$TMP/b.tar")" "$pn"
printf '"verify_s":%s,"verify_cpu_s":%s,"verify_openssl_only_s":%s,"verify_openssl_only_cpu_s":%s,"load":"%s"}\n' \
	"$ver" "$cpu" "$over" "$ocpu" "$(cut -d' ' -f1-3 /proc/loadavg)"
