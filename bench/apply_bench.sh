#!/bin/bash
#
# Apply benchmark (bench/README.md): in one lab VM, the same 500 VLAN+MACsec
# ports (TX SA, one RX SC with one RX SA, one address each) are configured
#
#   1. by `fabricctl apply` from a clean host (first apply),
#   2. by `fabricctl apply` again, unchanged (re-apply: must make 0 writes),
#   3. by one `ip -batch` file holding the same configuration,
#
# each round from a fresh state, several rounds; the medians are printed as a
# table and as one line `BENCH {json}`. Then a breakdown of where the time
# goes (process start, profile load, state read, netlink round trips,
# kernel vs user time with perf) unless --no-breakdown.
#
#   bench/apply_bench.sh [--ports N] [--rounds R] [--hosts 1|2] [--dir LABDIR]
#                        [--round-timeout SEC] [--no-breakdown]
#
# Needs root, a build in build/ (cmake --build build; or FCTL_BUILD_DIR), python3 and jq, and
# what scripts/lab.sh needs. Starts its own lab in its own directory and
# always takes it down again (trap on EXIT). Fails loudly (exit 1) when the
# lab cannot start, an apply fails, the re-apply writes anything, or the
# ip-batch state differs from the fabricctl state. Missing a target is
# reported, not an error: this is a benchmark, not a test; keep it out of
# test runners.
#
# Absolute times under TCG mean little; the ratios are the result. The
# machine may be shared: the host's load average is printed with each round.

set -euo pipefail
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "${SELF%/*}/.." && pwd)
# FCTL_BUILD_DIR: the build to measure (default <repo>/build), passed on to the guest
BUILD=${FCTL_BUILD_DIR:-$REPO/build}
FCTL=$BUILD/fabricctl/fabricctl
LAB=$REPO/scripts/lab.sh

die() {
	printf 'apply_bench: FAILED: %s\n' "$*" >&2
	exit 1
}
say() { printf 'apply_bench: %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------
# Guest side: runs inside a lab host (`lab.sh exec h1 -- apply_bench.sh __guest ...`).
# Everything it needs is in SRC (the lab share); it works on a copy in the
# guest's private /tmp so that no timed command reads over 9p.

G_WORK=/tmp/fctl-bench
G_STATE=/tmp/fctl-bench-state

# Seconds since the epoch with microseconds, without a fork.
now() { printf '%s' "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }

g_links() { ip -o link show | wc -l; }

# Deletes every VLAN device (their MACsec uppers, SAs and addresses go with
# them) and fabricctl's state, then waits until the kernel is quiet again.
# Only existing names are deleted: `ip link del` of a missing name makes the
# kernel try to load a module "netdev-NAME", which costs ~0.6 s under TCG.
g_teardown() {
	local base=$1 n
	ip -j link show type vlan | jq -r '.[].ifname | "link del dev \(.)"' >"$G_WORK/del.batch"
	if [[ -s $G_WORK/del.batch ]]; then
		ip -batch "$G_WORK/del.batch" >/dev/null || {
			echo "teardown: ip -batch del failed" >&2
			return 1
		}
	fi
	rm -rf -- "$G_STATE"
	for _ in $(seq 300); do
		n=$(g_links)
		((n <= base)) && break
		sleep 0.2
	done
	((n <= base)) || {
		echo "teardown: $n links left, expected $base" >&2
		return 1
	}
	g_settle
}

# Lets deferred work (netdev unregistration, IPv6 DAD/MLD timers) finish so it
# is not billed to the next measurement.
g_settle() { sleep 3; }

# Canonical view of the managed configuration, from iproute2 (an oracle
# independent of fabricctl): links, MACsec SecYs/SCs/SAs, addresses.
g_snapshot() {
	{
		ip -j -d link show | jq -S '[.[] | select(.linkinfo.info_kind == "vlan" or .linkinfo.info_kind == "macsec")
			| {ifname, link, mtu, up: ((.flags // []) | index("UP") != null),
			   kind: .linkinfo.info_kind, data: .linkinfo.info_data}] | sort_by(.ifname)'
		ip -j macsec show | jq -S '[walk(if type == "object" then del(.ifindex, .pn) else . end)[]] | sort_by(.ifname)'
		ip -j addr show | jq -S '[.[] | select(.ifname | test("^ms[0-9]+$"))
			| {ifname, addrs: [.addr_info[] | select(.scope == "global") | "\(.local)/\(.prefixlen)"] | sort}]
			| sort_by(.ifname)'
	} >"$1"
}

# fabricctl apply, timed from outside; result JSON (plan dropped) to $2.
g_fctl_apply() {
	local t0 t1 rc=0
	t0=$(now)
	"$FCTL" apply --host h1 --json --state-dir "$G_STATE" "$G_WORK/ports.yaml" >"$G_WORK/apply.json" 2>"$G_WORK/apply.err" || rc=$?
	t1=$(now)
	if ((rc != 0)); then
		echo "fabricctl apply failed (exit $rc):" >&2
		cat "$G_WORK/apply.err" >&2
		jq -c 'del(.plan)' "$G_WORK/apply.json" >&2 2>/dev/null || :
		return 1
	fi
	jq -c --arg wall "$(elapsed "$t0" "$t1")" 'del(.plan) + {wall: ($wall | tonumber)}' "$G_WORK/apply.json" >"$1"
}

g_ipbatch() {
	local t0 t1 rc=0
	t0=$(now)
	ip -batch "$G_WORK/h1-add.batch" >"$G_WORK/ipb.out" 2>&1 || rc=$?
	t1=$(now)
	if ((rc != 0)); then
		echo "ip -batch failed (exit $rc):" >&2
		tail -5 "$G_WORK/ipb.out" >&2
		return 1
	fi
	elapsed "$t0" "$t1"
}

g_prepare() {
	local src=$1
	rm -rf -- "$G_WORK" "$G_STATE"
	mkdir -p "$G_WORK"
	cp -a "$src/." "$G_WORK/"
	[[ $(stat -c %a "$G_WORK/keys/bench.key") == 600 ]] || {
		echo "key file mode is not 0600" >&2
		return 1
	}
}

# One round: fresh state, fabricctl first apply, re-apply, teardown, ip -batch,
# teardown. ORDER "ip-first" runs the ip batch before fabricctl.
guest_round() {
	local src=$1 round=$2 order=$3 check=$4 base f1 f2 ipb
	g_prepare "$src"
	# the lab's NICs plus lo; a previous round must have left nothing
	base=$(ip -o link show | grep -cv -e '@' -e 'ms[0-9]' || :)
	g_teardown "$base"
	fctl_part() {
		g_fctl_apply "$G_WORK/f1.json"
		g_settle
		g_fctl_apply "$G_WORK/f2.json"
		if ((check)); then g_snapshot "$G_WORK/snap-fctl.json"; fi
		g_teardown "$base"
	}
	ip_part() {
		ipb=$(g_ipbatch)
		g_settle
		if ((check)); then
			g_snapshot "$G_WORK/snap-ip.json"
			# fabricctl must find nothing to do on the ip-built state
			"$FCTL" plan --json --host h1 --state-dir "$G_STATE" "$G_WORK/ports.yaml" |
				jq '.ops | length' >"$G_WORK/plan-on-ip.n"
		fi
		g_teardown "$base"
	}
	if [[ $order == ip-first ]]; then
		ip_part
		fctl_part
	else
		fctl_part
		ip_part
	fi
	f1=$(cat "$G_WORK/f1.json") f2=$(cat "$G_WORK/f2.json")
	local equiv=null plan_on_ip=null
	if ((check)); then
		if cmp -s "$G_WORK/snap-fctl.json" "$G_WORK/snap-ip.json"; then equiv=true; else
			equiv=false
			echo "state built by ip -batch differs from fabricctl's (- fabricctl, + ip):" >&2
			diff "$G_WORK/snap-fctl.json" "$G_WORK/snap-ip.json" | head -40 >&2 || :
		fi
		plan_on_ip=$(cat "$G_WORK/plan-on-ip.n")
	fi
	jq -cn --argjson round "$round" --arg order "$order" --argjson f1 "$f1" --argjson f2 "$f2" \
		--argjson ipb "$ipb" --argjson ipops "$(wc -l <"$G_WORK/h1-add.batch")" \
		--argjson equiv "$equiv" --argjson plan_on_ip "$plan_on_ip" \
		'{round: $round, order: $order, first: $f1, reapply: $f2,
		  ipbatch: {wall: $ipb, ops: $ipops}, same_state: $equiv, fabricctl_ops_on_ip_state: $plan_on_ip}' |
		sed 's/^/ROUND /'
}

# Where the time goes: not timed against anything, one run each.
guest_breakdown() {
	local src=$1 base t0 t1
	g_prepare "$src"
	base=$(ip -o link show | grep -cv -e '@' -e 'ms[0-9]' || :)
	g_teardown "$base"
	cd "$G_WORK"
	# min of 3 wall times of a command (stdout/stderr dropped)
	wall3() {
		local best='' t
		for _ in 1 2 3; do
			t0=$(now)
			"$@" >/dev/null 2>&1 || :
			t1=$(now)
			t=$(elapsed "$t0" "$t1")
			if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
		done
		printf '%s' "$best"
	}
	local st_fv st_ipv st_val st_dry
	st_fv=$(wall3 "$FCTL" version)
	st_ipv=$(wall3 ip -V)
	st_val=$(wall3 "$FCTL" validate ports.yaml)
	st_dry=$(wall3 "$FCTL" apply --dry-run --host h1 --state-dir /tmp/fctl-bench-dry ports.yaml)
	echo "BREAKDOWN startup fabricctl_version=$st_fv ip_V=$st_ipv"
	echo "BREAKDOWN profile fabricctl_validate=$st_val apply_dry_run_clean_host=$st_dry"

	# syscalls of each tool (strace slows everything down: counts only)
	if command -v strace >/dev/null; then
		strace -f -c -o "$G_WORK/strace-fctl.txt" "$FCTL" apply --host h1 --json --state-dir "$G_STATE" ports.yaml >"$G_WORK/s.json" 2>/dev/null || :
		g_settle
		strace -f -c -o "$G_WORK/strace-fctl-re.txt" "$FCTL" apply --host h1 --json --state-dir "$G_STATE" ports.yaml >/dev/null 2>&1 || :
		g_teardown "$base"
		strace -f -c -o "$G_WORK/strace-ip.txt" ip -batch h1-add.batch >/dev/null 2>&1 || :
		g_settle
		g_teardown "$base"
		local f
		for f in strace-fctl strace-fctl-re strace-ip; do
			# strace -c columns: % time, seconds, usecs/call, calls, [errors,] syscall
			awk -v tag="$f" '$4 ~ /^[0-9]+$/ && $NF ~ /^[a-z_0-9]+$/ && $NF != "syscall" { printf "%s=%s\n", $NF, $4 }' "$G_WORK/$f.txt" |
				sort -t= -k2,2nr | head -9 | paste -sd' ' | sed "s/^/BREAKDOWN syscalls $f (calls) /"
		done
	else
		echo "BREAKDOWN syscalls strace-not-installed"
	fi

	# kernel vs user time, system-wide (the guest has one vCPU)
	if command -v perf >/dev/null && perf record -q -o /dev/null -e cpu-clock true >/dev/null 2>&1; then
		local which
		for which in fctl ip; do
			if [[ $which == fctl ]]; then
				perf record -q -a -g -e cpu-clock -F 499 -o "$G_WORK/perf-$which.data" -- \
					"$FCTL" apply --host h1 --json --state-dir "$G_STATE" ports.yaml >/dev/null 2>&1 || :
			else
				perf record -q -a -g -e cpu-clock -F 499 -o "$G_WORK/perf-$which.data" -- \
					ip -batch h1-add.batch >/dev/null 2>&1 || :
			fi
			echo "BREAKDOWN perf $which: samples by comm,dso"
			perf report -i "$G_WORK/perf-$which.data" --stdio -n --no-children --sort comm,dso -g none 2>/dev/null |
				grep -v -e '^#' -e '^$' | head -12 | sed 's/^/BREAKDOWN   /'
			echo "BREAKDOWN perf $which: kernel entry points (inclusive) of the tool's process"
			perf report -i "$G_WORK/perf-$which.data" --stdio -n --children --comm "$([[ $which == fctl ]] && echo fabricctl || echo ip)" \
				--sort sym -g none 2>/dev/null | grep -v -e '^#' -e '^$' |
				grep -E 'rtnl_getlink|rtnl_newlink|rtnl_dellink|__rtnl_newlink|rtnl_setlink|do_setlink|inet_rtm_newaddr|genl_rcv_msg|macsec_add_rxsa|macsec_add_txsa|macsec_add_rxsc|macsec_newlink|register_netdevice|crypto_alloc|dev_open|netlink_sendmsg|netlink_recvmsg|netlink_dump|rtnl_dump_ifinfo|do_syscall_64|dev_ioctl|fsync' |
				head -24 | sed 's/^/BREAKDOWN   /'
			g_settle
			g_teardown "$base"
		done
	else
		echo "BREAKDOWN perf not-available"
	fi
}

# ---------------------------------------------------------------------------
# Host side.

median() { jq -s 'sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end'; }

main() {
	local ports=500 rounds=3 hosts=1 dir=/var/tmp/fctl-apply-bench.$$ round_timeout=900 breakdown=1
	while (($#)); do
		case "$1" in
		--ports) ports=${2:?} && shift 2 ;;
		--rounds) rounds=${2:?} && shift 2 ;;
		--hosts) hosts=${2:?} && shift 2 ;;
		--dir) dir=${2:?} && shift 2 ;;
		--round-timeout) round_timeout=${2:?} && shift 2 ;;
		--no-breakdown) breakdown=0 && shift ;;
		-h | --help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$SELF" && exit 0 ;;
		*) die "unknown argument '$1' (see --help)" ;;
		esac
	done
	in_range() { [[ $1 =~ ^[0-9]{1,6}$ ]] && (($1 >= $2 && $1 <= $3)); }
	in_range "$ports" 1 4094 || die "--ports must be 1..4094"
	in_range "$rounds" 1 15 || die "--rounds must be 1..15"
	in_range "$hosts" 1 2 || die "--hosts must be 1 or 2"
	in_range "$round_timeout" 30 86400 || die "--round-timeout must be 30..86400 (s)"
	[[ $(id -u) == 0 ]] || die "must run as root (the lab boots qemu guests)"
	[[ -x $FCTL ]] || die "no fabricctl build at $FCTL (cmake -S $REPO -B $REPO/build && cmake --build $REPO/build)"
	command -v jq >/dev/null || die "jq is missing"
	command -v python3 >/dev/null || die "python3 is missing"

	local lifetime=$(((rounds + 3) * round_timeout + 300))
	((lifetime > 604800)) && lifetime=604800
	# global: the EXIT trap runs after main has returned
	BENCH_LAB_DIR=$dir
	trap '"$LAB" down --dir "$BENCH_LAB_DIR" >/dev/null 2>&1 || :' EXIT
	trap 'say "interrupted"; exit 130' INT TERM
	say "starting a $hosts-host lab in $dir (lifetime ${lifetime}s)"
	if ! timeout 600 "$LAB" up --hosts "$hosts" --dir "$dir" --lifetime "$lifetime" >&2; then
		die "the lab could not start (see the messages above; scripts/lab.sh up --hosts $hosts, docs/lab.md)"
	fi
	local src=$dir/h1/bench
	python3 "$REPO/bench/gen_ports_profile.py" "$src" --ports "$ports" || die "profile generation failed"
	"$FCTL" validate "$src/ports.yaml" >/dev/null || die "the generated profile does not validate"
	local ops
	ops=$("$FCTL" plan --offline --json --host h1 "$src/ports.yaml" | jq '[.hosts[].ops | length] | add')
	say "profile: $ports ports, $ops operations for h1; ip batch: $(wc -l <"$src/h1-add.batch") lines"

	local gx=("$LAB" exec --dir "$dir" --timeout "$round_timeout" h1 -- env FCTL_BUILD_DIR="$BUILD" "$SELF")
	local results=() r order check out line
	for ((r = 1; r <= rounds; r++)); do
		order=fctl-first
		((r % 2 == 0)) && order=ip-first
		check=0
		((r == 1)) && check=1
		say "round $r/$rounds ($order), host load average $(cut -d' ' -f1-3 /proc/loadavg)"
		out=$("${gx[@]}" __guest "$src" "$r" "$order" "$check") || die "round $r failed (output above)"
		line=$(grep '^ROUND ' <<<"$out" | sed 's/^ROUND //') || die "round $r printed no result"
		jq -c --arg load "$(cut -d' ' -f1 /proc/loadavg)" '. + {host_load1: ($load | tonumber)}' <<<"$line" >&2
		results+=("$line")
	done

	local all
	all=$(printf '%s\n' "${results[@]}" | jq -s '.')
	# correctness first
	jq -e '.[0].same_state == true' <<<"$all" >/dev/null ||
		die "ip -batch did not build the same state as fabricctl: the comparison is void"
	jq -e '.[0].fabricctl_ops_on_ip_state == 0' <<<"$all" >/dev/null ||
		die "fabricctl plans $(jq '.[0].fabricctl_ops_on_ip_state' <<<"$all") operations on the ip-built state (expected 0)"
	jq -e 'all(.[]; .first.result == "applied" and .first.ops_done == .first.ops_planned)' <<<"$all" >/dev/null ||
		die "a first apply did not apply every operation"
	local reapply_writes_ok=1
	jq -e 'all(.[]; .reapply.netlink_writes == 0 and .reapply.result == "unchanged")' <<<"$all" >/dev/null || reapply_writes_ok=0

	m() { jq "[.[] | $1]" <<<"$all" | jq '.[]' | median; }
	local fw fe rw re iw fops fwr frt rwr rrt iops
	fw=$(m .first.wall) fe=$(m .first.seconds) rw=$(m .reapply.wall) re=$(m .reapply.seconds)
	iw=$(m .ipbatch.wall) iops=$(m .ipbatch.ops)
	fops=$(m .first.ops_planned) fwr=$(m .first.netlink_writes) frt=$(m .first.netlink_round_trips)
	rwr=$(m .reapply.netlink_writes) rrt=$(m .reapply.netlink_round_trips)
	# fabricctl/ip-batch of each round (same round, same load), and its round trips per op
	local byround
	byround=$(jq -c '[.[] | {round, ratio: (.first.wall / .ipbatch.wall * 10000 | round / 10000),
		round_trips_per_op: (.first.netlink_round_trips / .first.ops_planned * 10000 | round / 10000)}]' <<<"$all")
	local bench
	bench=$(jq -cn --argjson byround "$byround" --argjson ports "$ports" --argjson rounds "$rounds" --argjson fw "$fw" --argjson fe "$fe" \
		--argjson rw "$rw" --argjson re "$re" --argjson iw "$iw" --argjson iops "$iops" --argjson fops "$fops" \
		--argjson fwr "$fwr" --argjson frt "$frt" --argjson rwr "$rwr" --argjson rrt "$rrt" \
		--argjson walls "$(jq -c '{first: [.[].first.wall], reapply: [.[].reapply.wall], ipbatch: [.[].ipbatch.wall]}' <<<"$all")" \
		'def r4: . * 10000 | round / 10000;
		{ports: $ports, rounds: $rounds, stat: "median",
		 fabricctl_first_wall_s: ($fw | r4), fabricctl_first_engine_s: ($fe | r4),
		 fabricctl_reapply_wall_s: ($rw | r4), fabricctl_reapply_engine_s: ($re | r4),
		 ipbatch_wall_s: ($iw | r4),
		 ratio_fabricctl_over_ipbatch: ($fw / $iw | r4),
		 ratio_reapply_over_first_wall: ($rw / $fw | r4), ratio_reapply_over_first_engine: ($re / $fe | r4),
		 ops: $fops, ipbatch_ops: $iops, netlink_writes: $fwr, netlink_round_trips: $frt,
		 round_trips_per_op: ($frt / $fops | r4),
		 reapply_writes: $rwr, reapply_round_trips: $rrt,
		 target_ratio_le_0_8: ($fw / $iw <= 0.8), target_reapply_le_10pct: ($rw / $fw <= 0.10),
		 walls_s: $walls, ratio_by_round: $byround,
		 ratio_median_of_rounds: ([$byround[].ratio] | sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end | r4)}')

	echo
	echo "apply benchmark: $ports VLAN+MACsec ports on h1, median of $rounds rounds (wall seconds in the guest)"
	jq -r '
		def f: tostring;
		["what", "seconds", "ops", "netlink writes", "round trips", "round trips/op"],
		["fabricctl apply (first)", (.fabricctl_first_wall_s|f), (.ops|f), (.netlink_writes|f), (.netlink_round_trips|f), (.round_trips_per_op|f)],
		["  engine time (JSON)", (.fabricctl_first_engine_s|f), "", "", "", ""],
		["fabricctl apply (re-apply)", (.fabricctl_reapply_wall_s|f), "0", (.reapply_writes|f), (.reapply_round_trips|f), "-"],
		["  engine time (JSON)", (.fabricctl_reapply_engine_s|f), "", "", "", ""],
		["ip -batch (1 request/line)", (.ipbatch_wall_s|f), (.ipbatch_ops|f), (.ipbatch_ops|f), "see breakdown", ""]
		| @tsv' <<<"$bench" | column -t -s $'\t'
	jq -r '"ratio fabricctl/ip-batch      \(.ratio_fabricctl_over_ipbatch)  (target <= 0.8: \(if .target_ratio_le_0_8 then "met" else "MISSED by \(.ratio_fabricctl_over_ipbatch - 0.8 | . * 1000 | round / 1000)" end))",
	       "  by round                    \([.ratio_by_round[] | "\(.round): \(.ratio) (\(.round_trips_per_op) RT/op)"] | join(", ")); median \(.ratio_median_of_rounds)",
	       "ratio re-apply/first (wall)   \(.ratio_reapply_over_first_wall)  (target <= 0.10: \(if .target_reapply_le_10pct then "met" else "MISSED" end))",
	       "ratio re-apply/first (engine) \(.ratio_reapply_over_first_engine)"' <<<"$bench"
	echo "BENCH $bench"

	if ((breakdown)); then
		echo
		echo "breakdown (one run each; see bench/README.md for how to read it):"
		"$LAB" exec --dir "$dir" --timeout "$((round_timeout * 2))" h1 -- env FCTL_BUILD_DIR="$BUILD" "$SELF" __breakdown "$src" |
			grep '^BREAKDOWN' | sed 's/^BREAKDOWN //' || say "breakdown failed (the figures above stand)"
	fi
	((reapply_writes_ok)) || die "a re-apply made netlink writes (must be 0)"
}

# In the guest, fabricctl runs from a copy in its tmpfs, as the inputs do: the build
# directory is on the lab's uncached 9p mount, where every start read the binary from
# the host again (a host's own disk keeps it in the page cache); ip is in /usr, which
# the guests cache (docs/lab.md).
guest_binary() {
	mkdir -p /tmp/fctl-bench-bin && install -m 0755 "$FCTL" /tmp/fctl-bench-bin/fabricctl &&
		FCTL=/tmp/fctl-bench-bin/fabricctl
}
case "${1:-}" in
__guest)
	shift
	guest_binary || die "cannot copy $FCTL into the guest's /tmp"
	guest_round "$@"
	;;
__breakdown)
	shift
	guest_binary || die "cannot copy $FCTL into the guest's /tmp"
	guest_breakdown "$@"
	;;
*) main "$@" ;;
esac
