#!/bin/bash
# Probe benchmark in the lab (root): two VMs, profiles/lab-pair.yaml applied,
# rxe0 on ms100, then REPS rounds of, side by side on the same link:
#   ib_send_lat vs fabricctl probe send_lat   (t_typical ratio, goal 0.85..1.15)
#   ib_write_bw vs fabricctl probe write_bw   (bandwidth ratio, goal >= 0.90)
# and the CPU time (user + system) each client spent, per message: the probe's
# overhead next to perftest's. Prints figures; asserts nothing (timing on a
# shared, emulated machine). Usage: bench/probe_bench.sh [REPS] [ITERS]
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
LAB=$ROOT/scripts/lab.sh
export FCTL_LAB_DIR=/var/tmp/fabricctl-lab-probe-bench
REPS=${1:-3}
N=${2:-200}

trap '"$LAB" down >/dev/null 2>&1' EXIT
on() { local h=$1; shift; "$LAB" exec --timeout 600 "$h" -- "$@"; }

[ -x "$F" ] && [ -x "$BUILD/probes/fabricctl-probe" ] || { echo "build first: $BUILD" >&2; exit 2; }
"$LAB" up --hosts 2 --lifetime 3600 >/dev/null || { echo "lab did not start" >&2; exit 2; }
WORK=$BUILD/lab-probe-bench
rm -rf "$WORK" && mkdir -p "$WORK/keys" && chmod 700 "$WORK/keys"
cp "$ROOT/profiles/lab-pair.yaml" "$WORK/"
(umask 077 && openssl rand -hex 16 >"$WORK/keys/lab-pair.key")
for h in h1 h2; do
	on "$h" "$F" apply "$WORK/lab-pair.yaml" >/dev/null || { echo "apply on $h failed" >&2; exit 2; }
	on "$h" rdma link add rxe0 type rxe netdev ms100 || exit 2
done
server=$("$LAB" exec-bg h2 -- "$F" probe serve --dev rxe0)
sleep 2

# perftest client under /usr/bin/time: prints the output, then "CPU <seconds>"
perftest() {
	local job
	job=$("$LAB" exec-bg --timeout 600 h2 -- "$@")
	for _ in $(seq 60); do
		on h2 ss -Hltn 'sport = :18515' | grep -q . && break
		sleep 0.5
	done
	on h1 /usr/bin/time -f 'CPU %U %S' "$@" 10.100.0.2 2>&1
	"$LAB" wait --timeout 120 h2 "$job" >/dev/null 2>&1
}
probe() { on h1 "$F" probe run --peer 10.100.0.2 --dev rxe0 --qp-timeout 20 --json "$@"; }

printf '%-4s %-10s %14s %14s %7s %16s %16s\n' rep test perftest probe ratio "perftest_cpu_us/msg" "probe_cpu_us/msg"
for r in $(seq "$REPS"); do
	pt=$(perftest ib_send_lat -d rxe0 -x 1 -u 20 -n "$N")
	a=$(awk '/t_typical/ { getline; print $5 }' <<<"$pt")
	ac=$(awk -v n="$N" '/^CPU/ { printf "%.1f", ($2 + $3) * 1e6 / n }' <<<"$pt")
	o=$(probe --test send_lat --iters "$N")
	b=$(jq -r '.results[0].perftest.t_typical_us' <<<"$o")
	bc=$(jq -r --arg n "$N" '.results[0].ends[0].cpu_s * 1e6 / ($n | tonumber) | . * 10 | round / 10' <<<"$o")
	printf '%-4s %-10s %14s %14s %7s %16s %16s\n' "$r" send_lat "$a" "$b" \
		"$(awk -v x="$b" -v y="$a" 'BEGIN { printf "%.3f", x / y }')" "$ac" "$bc"

	pt=$(perftest ib_write_bw -d rxe0 -x 1 -u 20 -n "$N" -s 65536 --report_gbits)
	a=$(awk '/BW average/ { getline; print $4 }' <<<"$pt")
	ac=$(awk -v n="$N" '/^CPU/ { printf "%.1f", ($2 + $3) * 1e6 / n }' <<<"$pt")
	o=$(probe --test write_bw --size 65536 --iters "$N")
	b=$(jq -r '.results[0].bandwidth_gbps' <<<"$o")
	bc=$(jq -r --arg n "$N" '.results[0].ends[0].cpu_s * 1e6 / ($n | tonumber) | . * 10 | round / 10' <<<"$o")
	printf '%-4s %-10s %14s %14.6f %7s %16s %16s\n' "$r" write_bw "$a" "$b" \
		"$(awk -v x="$b" -v y="$a" 'BEGIN { printf "%.3f", x / y }')" "$ac" "$bc"
done
echo "(t_typical in us, bandwidth in Gb/s; perftest CPU covers its whole process, the probe's only its measuring loop)"
"$LAB" kill h2 "$server" >/dev/null 2>&1
