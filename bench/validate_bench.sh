#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark of `fabricctl validate` on generated profiles of 1,000 / 5,000 / 10,000
# links: wall time and CPU time (user+sys; best of 3 each) and peak RSS per size, and
# the memory slope per link, so that linear growth is visible. On a busy machine the
# CPU time is the steadier figure. Target: 10,000 links in under 1 s.
# A benchmark, not a test: it never fails on a slow machine.
#
# usage: bench/validate_bench.sh [FABRICCTL] [SIZES...]
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
FCTL=${1:-$SRC/build/fabricctl/fabricctl}
[ $# -gt 0 ] && shift
SIZES=${*:-1000 5000 10000}
[ -x "$FCTL" ] || { echo "bench: $FCTL not found; build first" >&2; exit 2; }
if [ ! -x /usr/bin/time ]; then
	echo "bench: /usr/bin/time is missing; installing it" >&2
	apt-get install -y time >/dev/null || { echo "bench: apt-get install time failed" >&2; exit 2; }
fi
TMP=$(mktemp -d /tmp/fctl-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT INT TERM

printf '%8s %10s %8s %8s %12s\n' links bytes wall_s cpu_s peak_rss_kb
first_n="" first_kb="" last_n="" last_kb=""
for n in $SIZES; do
	f="$TMP/bench-$n.yaml"
	python3 "$SRC/bench/gen_profile.py" "$n" "$f"
	best="" cpu="" kb=""
	for _ in 1 2 3; do
		/usr/bin/time -f '%e %U %S %M' -o "$TMP/time" "$FCTL" validate -q "$f" || {
			echo "bench: the generated profile does not validate:" >&2
			"$FCTL" validate "$f" | head -5 >&2
			exit 1
		}
		read -r t u sy m <"$TMP/time"
		if [ -z "$best" ] || awk "BEGIN { exit !($t < $best) }"; then best=$t; fi
		c=$(awk "BEGIN { printf \"%.2f\", $u + $sy }")
		if [ -z "$cpu" ] || awk "BEGIN { exit !($c < $cpu) }"; then cpu=$c; fi
		if [ -z "$kb" ] || [ "$m" -gt "$kb" ]; then kb=$m; fi
	done
	printf '%8d %10d %8s %8s %12d\n' "$n" "$(wc -c <"$f")" "$best" "$cpu" "$kb"
	[ -z "$first_n" ] && { first_n=$n; first_kb=$kb; }
	last_n=$n last_kb=$kb
	[ "$n" -eq 10000 ] && ten=$best
done
if [ "$last_n" != "$first_n" ]; then
	awk "BEGIN { printf \"memory slope: %.2f KB per link ($first_n -> $last_n links)\\n\", \
		($last_kb - $first_kb) / ($last_n - $first_n) }"
fi
if [ -n "${ten:-}" ]; then
	if awk "BEGIN { exit !($ten < 1) }"; then
		echo "target met: 10000 links in ${ten}s (< 1 s)"
	else
		echo "target missed: 10000 links in ${ten}s (>= 1 s)"
	fi
fi
