#!/bin/bash
# The RDMA probes against a real kernel: two lab VMs (Debian's stock kernel under
# qemu), profiles/lab-pair.yaml applied on both with fabricctl, soft-RoCE rxe0 on
# the MACsec device ms100 (RoCE v2 over MACsec over VLAN 100), then:
#
#  healthy    every test (send/write/read latency, send/write/read bandwidth)
#             passes the SLO; counters and MACsec evidence from both ends; the
#             JSON is valid and JUnit parses
#  loss       an XDP program on h2's ms100 drops 5% of UDP 4791 frames (the lab
#             loads no tc/nftables modules; generic XDP is built in): the probe
#             reports loss from the counters and fails the SLO with that reason,
#             while MACsec stays clean
#  perftest   ib_send_lat and ib_write_bw on the same link in the same run: the
#             ratios are printed, not asserted (t_typical within +-15%, bandwidth >= 90% is the
#             goal, see bench/probe_bench.sh); asserted: both tools measured a value
#  bidir      write_bw --bidirectional over MACsec: both directions moved data,
#             counters clean and the MACsec evidence holds on both ends
#  rdma_cm    --cm over ms100 fails in bounded time with the clear message (rdma_cm
#             does not connect over MACsec in this lab: kernel-lab.md, docs/probes.md);
#             --cm send_lat and write_bw over a second rxe device on plain eth0
#             (rxe_eth0, 192.168.77.x on the guests' eth0 only) pass; no cm_id left
#  bad input  unreachable peer, refused connection, wrong device name, peer
#             killed mid-probe, no RDMA device: exit 2 with a clear message in
#             bounded time, and no QP, MR, cm_id, socket or process left behind
#
# Prints PASS/FAIL per check and "probe: N passed, M failed"; exits non-zero on
# any failure, a lab that cannot start included (never skips). Needs root.
set -uo pipefail

SUITE=probe
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-probe
SUITE_EXEC_TIMEOUT=240
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
P=$BUILD/probes/fabricctl-probe
DROP=$BUILD/tests/lab/fctl_lab_drop
SERVER=

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }'; }

start_server() { # host
	SERVER=$("$LAB" exec-bg --timeout 1500 "$1" -- "$P" serve --dev rxe0) || return 1
	for _ in $(seq 60); do
		on "$1" ss -Hltn 'sport = :18516' | grep -q . && return 0
		sleep 0.5
	done
	return 1
}

# QPs, MRs, sockets or processes of the probe still there on a host: prints them.
leftovers() {
	on "$1" sh -c '
		rdma -j resource show qp | jq -r ".[] | select(.comm == \"fabricctl-probe\") | \"qp \(.lqpn)\""
		rdma -j resource show mr | jq -r ".[] | select(.comm == \"fabricctl-probe\") | \"mr \(.mrn)\""
		rdma -j resource show cm_id | jq -r ".[] | select(.comm == \"fabricctl-probe\") | \"cm_id \(.\"cm-idn\") \(.state)\""
		ss -Htanp | grep -F fabricctl-probe || true
		pgrep -x fabricctl-probe | sed "s/^/process /" || true'
}

# --- set up -------------------------------------------------------------------
for b in "$F" "$P" "$DROP"; do
	[ -x "$b" ] || { fail "build" "$b is missing: build first (cmake --build $BUILD)"; exit 1; }
done
if ! "$LAB" up --hosts 2 --lifetime 1800; then
	fail "lab-up" "the lab did not start (see the console tail above)"
	exit 1
fi
pass "lab-up"

# guests see the host root read-only, but not the host's /tmp or /var/tmp
WORK=$BUILD/lab-probe-work
rm -rf "$WORK"
mkdir -p "$WORK/keys"
chmod 700 "$WORK/keys"
cp "$ROOT/profiles/lab-pair.yaml" "$WORK/lab-pair.yaml"
(umask 077 && openssl rand -hex 16 >"$WORK/keys/lab-pair.key")
# The same profile with SLOs that TCG can meet: the untrimmed p99 of a few hundred
# samples under emulation reaches ~100 ms; timer retransmissions happen with -u 20.
sed -e 's/^  latency_p99_us:.*/  latency_p99_us: 2000000/' \
	-e 's/^  latency_p999_us:.*/  latency_p999_us: 4000000/' \
	-e 's/^  max_retransmissions:.*/  max_retransmissions: 200/' \
	"$ROOT/profiles/lab-pair.yaml" >"$WORK/lab-slo.yaml"

ok=1
for h in h1 h2; do
	out=$(on "$h" "$F" apply --json "$WORK/lab-pair.yaml") &&
		[ "$(jq -r .result <<<"$out")" = applied ] || { ok=0; echo "$out"; }
	on "$h" rdma link add rxe0 type rxe netdev ms100 || ok=0
done
if [ "$ok" = 1 ] && on h1 ping -c 2 -W 3 10.100.0.2 >/dev/null; then
	pass "setup-macsec-rxe"
else
	fail "setup-macsec-rxe" "apply, rxe0 on ms100 or ping failed"
	exit 1
fi
start_server h2 && pass "serve-listens" || { fail "serve-listens"; exit 1; }

RUN=(probe run --peer 10.100.0.2 --dev rxe0 --qp-timeout 20)

# --- healthy link: every test passes ----------------------------------------------
out=$(on h1 "$F" "${RUN[@]}" --test send_lat,write_lat,read_lat,send_bw,write_bw,read_bw \
	--iters 100 --size 4096 --profile "$WORK/lab-slo.yaml" --link h1-h2 --json)
rc=$?
echo "$out" | jq -r '.results[] | "  \(.test) \(.size_bytes) B: t_typical \(.perftest.t_typical_us // "-") us, p99 \(.latency_p99_us // "-") us, \(.bandwidth_gbps // "-") Gb/s, retrans \([.ends[].retransmissions] | add), \(if .pass then "pass" else "FAIL \(.reasons)" end)"' 2>/dev/null
if [ "$rc" = 0 ] && jq -en 'input | .pass == true and (.results | length) == 6' <<<"$out" >/dev/null; then
	pass "healthy-all-tests-pass"
else
	fail "healthy-all-tests-pass" "exit $rc"
fi
jq -en input <<<"$out" >/dev/null 2>&1 && pass "healthy-json-valid" || fail "healthy-json-valid"
jq -en 'input | [.results[].ends | length == 2 and all(.[]; .counters_read and .macsec.checked and .macsec.is_macsec
	and .macsec.encrypt and .macsec.tx_sa_active and .macsec.out_pkts_encrypted_delta > 0
	and .macsec.in_pkts_not_valid_delta == 0 and .loss_packets == 0)] | all' <<<"$out" >/dev/null &&
	pass "healthy-evidence-both-ends" || fail "healthy-evidence-both-ends" "counters or MACsec evidence missing"
jq -en 'input | .results[0] | .latency_p50_us > 0 and .perftest.t_typical_us > 0 and (.latency_histogram | length) > 0
	and .perftest.samples == 99 and .perftest.samples_used == 97' <<<"$out" >/dev/null &&
	pass "healthy-stats-fields" || fail "healthy-stats-fields"
xml=$(on h1 "$F" "${RUN[@]}" --test send_lat --iters 20 --profile "$WORK/lab-slo.yaml" --link h1-h2 --junit)
if python3 -c 'import sys, xml.dom.minidom as m; d = m.parseString(sys.stdin.read()); assert d.getElementsByTagName("testcase")' <<<"$xml"; then
	pass "healthy-junit-parses"
else
	fail "healthy-junit-parses"
fi
txt=$(on h1 "$F" "${RUN[@]}" --test write_lat --iters 20)
[ $? = 0 ] && grep -q '^probe: pass' <<<"$txt" && pass "healthy-text-no-profile" || fail "healthy-text-no-profile" "$txt"

# --- injected loss -------------------------------------------------------------------
if on h2 "$DROP" ms100 50; then
	out=$(on h1 "$F" "${RUN[@]}" --qp-timeout 17 --test write_bw --size 4096 --iters 300 \
		--profile "$WORK/lab-slo.yaml" --link h1-h2 --json)
	rc=$?
	on h2 "$DROP" ms100 off >/dev/null
	echo "  $(jq -c '.results[0] | {reasons, loss: [.ends[] | {host, loss_packets, retransmissions}]}' <<<"$out")"
	[ "$rc" = 1 ] && jq -en 'input | .pass == false and (.results[0].reasons | any(startswith("loss:")))' <<<"$out" >/dev/null &&
		pass "loss-fails-slo-with-reason" || fail "loss-fails-slo-with-reason" "exit $rc"
	jq -en 'input | .results[0].ends | any(.counter_deltas.out_of_seq_request.delta > 0 or .counter_deltas.rcvd_seq_err.delta > 0)' \
		<<<"$out" >/dev/null && pass "loss-from-counters" || fail "loss-from-counters"
	jq -en 'input | .results[0].reasons | all(startswith("macsec") | not)' <<<"$out" >/dev/null &&
		pass "loss-macsec-still-clean" || fail "loss-macsec-still-clean"
else
	fail "loss-fails-slo-with-reason" "cannot attach the XDP dropper"
	fail "loss-from-counters" "not run"
	fail "loss-macsec-still-clean" "not run"
fi
out=$(on h1 "$F" "${RUN[@]}" --test write_bw --size 4096 --iters 100 --profile "$WORK/lab-slo.yaml" --link h1-h2 --json)
[ $? = 0 ] && pass "loss-gone-after-detach" || fail "loss-gone-after-detach" "$(jq -c '.results[0].reasons' <<<"$out")"

# --- side by side with perftest ------------------------------------------------------
perftest() { # tool args...: server on h2, client on h1; prints the client's output
	local job out
	job=$("$LAB" exec-bg --timeout 300 h2 -- "$@") || return 1
	for _ in $(seq 60); do
		on h2 ss -Hltn 'sport = :18515' | grep -q . && break
		sleep 0.5
	done
	out=$(on h1 "$@" 10.100.0.2) || { "$LAB" kill h2 "$job" >/dev/null 2>&1; return 1; }
	"$LAB" wait --timeout 60 h2 "$job" >/dev/null 2>&1
	echo "$out"
}
N=200
pt=$(perftest ib_send_lat -d rxe0 -x 1 -u 20 -n "$N")
pt_typ=$(awk '/t_typical/ { getline; print $5 }' <<<"$pt")
our=$(on h1 "$F" "${RUN[@]}" --test send_lat --iters "$N" --json)
our_typ=$(jq -r '.results[0].perftest.t_typical_us' <<<"$our")
r=$(ratio "$our_typ" "$pt_typ")
echo "  send_lat t_typical: fabricctl probe $our_typ us, ib_send_lat $pt_typ us, ratio $r (goal 0.85..1.15)"
# the ratio is a benchmark figure (bench/probe_bench.sh), not an assertion: timing on a shared
# machine under emulation is too noisy to gate CI on; both tools must have measured something
positive() { awk -v x="$1" 'BEGIN { exit !(x + 0 > 0) }'; }
positive "$our_typ" && positive "$pt_typ" && pass "perftest-send-lat-side-by-side" ||
	fail "perftest-send-lat-side-by-side" "probe '$our_typ' us, ib_send_lat '$pt_typ' us"
pt=$(perftest ib_write_bw -d rxe0 -x 1 -u 20 -n "$N" -s 65536 --report_gbits)
pt_bw=$(awk '/BW average/ { getline; print $4 }' <<<"$pt")
our=$(on h1 "$F" "${RUN[@]}" --test write_bw --size 65536 --iters "$N" --json)
our_bw=$(jq -r '.results[0].bandwidth_gbps' <<<"$our")
r=$(ratio "$our_bw" "$pt_bw")
echo "  write_bw 64 KiB: fabricctl probe $our_bw Gb/s, ib_write_bw $pt_bw Gb/s, ratio $r (goal >= 0.90)"
positive "$our_bw" && positive "$pt_bw" && pass "perftest-write-bw-side-by-side" ||
	fail "perftest-write-bw-side-by-side" "probe '$our_bw' Gb/s, ib_write_bw '$pt_bw' Gb/s"

# --- bidirectional bandwidth over MACsec ----------------------------------------------
out=$(on h1 "$F" "${RUN[@]}" --test write_bw --bidirectional --size 4096 --iters 100 \
	--profile "$WORK/lab-slo.yaml" --link h1-h2 --json)
rc=$?
echo "  write_bw bidirectional: $(jq -c '.results[0] | {bandwidth_gbps, bandwidth_by_client_gbps, bandwidth_by_server_gbps, reasons}' <<<"$out" 2>/dev/null)"
if [ "$rc" = 0 ] && jq -en 'input | .pass and (.results[0] | .bidirectional and .bandwidth_by_client_gbps > 0
	and .bandwidth_by_server_gbps > 0 and (.ends | length == 2 and all(.[]; .counters_read
	and .loss_packets == 0 and .macsec.is_macsec and .macsec.encrypt
	and .macsec.out_pkts_encrypted_delta > 0 and .macsec.in_pkts_not_valid_delta == 0)))' \
	<<<"$out" >/dev/null; then
	pass "bidir-write-bw-macsec"
else
	fail "bidir-write-bw-macsec" "exit $rc: $(jq -c '.results[0].reasons' <<<"$out" 2>/dev/null)"
fi

# --- rdma_cm ---------------------------------------------------------------------------
# over MACsec: the connect request never reaches the peer's listener (observed and
# documented in docs/probes.md); the probe must say so within --cm-timeout
t0=$(date +%s)
out=$(on h1 "$F" "${RUN[@]}" --cm --cm-timeout 5 --test send_lat --iters 20 2>&1)
rc=$?
dt=$(($(date +%s) - t0))
# (the message names the probe's own 5 s deadline; the wall clock is not judged: this
# machine may be loaded, and `on` bounds a hang)
if [ "$rc" = 2 ] && grep -q "rdma_cm: no connection to 10.100.0.2 port 18516 within 5.0 s" <<<"$out" &&
	grep -q "over MACsec it does not connect" <<<"$out"; then
	pass "cm-over-macsec-fails-clearly"
else
	fail "cm-over-macsec-fails-clearly" "exit $rc after ${dt}s: $out"
fi
# over plain eth0: a second rxe device, addresses on the guests' eth0 only
ok=1
for i in 1 2; do
	on "h$i" ip addr add "192.168.77.$i/24" dev eth0 || ok=0
	on "h$i" rdma link add rxe_eth0 type rxe netdev eth0 || ok=0
done
CM_SERVER=$("$LAB" exec-bg --timeout 600 h2 -- "$P" serve --dev rxe_eth0 --port 18517) || ok=0
for _ in $(seq 60); do
	on h2 ss -Hltn 'sport = :18517' | grep -q . && break
	sleep 0.5
done
if [ "$ok" = 1 ]; then
	out=$(on h1 "$F" probe run --peer 192.168.77.2:18517 --cm --dev rxe_eth0 --qp-timeout 20 \
		--test send_lat,write_bw --size 4096 --iters 100 --json)
	rc=$?
	echo "$out" | jq -r '.results[] | "  --cm \(.test): t_typical \(.perftest.t_typical_us // "-") us, \(.bandwidth_gbps // "-") Gb/s, \(if .pass then "pass" else "FAIL \(.reasons)" end)"' 2>/dev/null
	jq -en 'input | .results[] | select(.test == "send_lat") | .pass and .perftest.t_typical_us > 0
		and (.ends | length == 2 and all(.[]; .device == "rxe_eth0" and .loss_packets == 0))' \
		<<<"$out" >/dev/null && pass "cm-send-lat-eth0" || fail "cm-send-lat-eth0" "exit $rc: $out"
	[ "$rc" = 0 ] && jq -en 'input | .results[] | select(.test == "write_bw") | .pass and .bandwidth_gbps > 0
		and (.ends | length == 2 and all(.[]; .device == "rxe_eth0" and .loss_packets == 0))' \
		<<<"$out" >/dev/null && pass "cm-write-bw-eth0" || fail "cm-write-bw-eth0" "exit $rc"
else
	fail "cm-send-lat-eth0" "rxe_eth0 or its server could not be set up"
	fail "cm-write-bw-eth0" "not run"
fi
"$LAB" kill h2 "$CM_SERVER" >/dev/null 2>&1
"$LAB" wait --timeout 30 h2 "$CM_SERVER" >/dev/null 2>&1
for i in 1 2; do
	on "h$i" rdma link delete rxe_eth0 >/dev/null 2>&1
	on "h$i" ip addr del "192.168.77.$i/24" dev eth0 >/dev/null 2>&1
done
# h2's rxe0 server still runs (a process and a listening socket): only RDMA objects count there
left="$(leftovers h1)$(leftovers h2 | grep -E '^(qp|mr|cm_id) ')"
[ -z "$left" ] && pass "cm-nothing-left-behind" || fail "cm-nothing-left-behind" "$left"

# --- bad inputs ------------------------------------------------------------------------
# Each must fail with exit 2 and its message; the time it takes is printed, not judged
# (a loaded machine stretches it), and `on` bounds a hang.
bad() { # name, expected text, command...
	local name=$1 want=$2 t0 out rc dt
	shift 2
	t0=$(date +%s)
	out=$(on h1 "$@" 2>&1)
	rc=$?
	dt=$(($(date +%s) - t0))
	echo "   $name: exit $rc after ${dt}s"
	if [ "$rc" = 2 ] && grep -q -- "$want" <<<"$out"; then
		pass "$name"
	else
		fail "$name" "exit $rc after ${dt}s: $out"
	fi
}
bad "bad-unreachable-peer" "cannot reach" "$F" probe run --peer 10.100.0.99 --dev rxe0 --connect-timeout 3
bad "bad-refused-connection" "Connection refused" "$F" probe run --peer 10.100.0.2:18999 --dev rxe0
bad "bad-wrong-device" "no RDMA device 'rxe9' (devices: rxe0)" "$F" probe run --peer 10.100.0.2 --dev rxe9
bad "bad-serve-wrong-device" "no RDMA device 'rxe9'" "$F" probe serve --dev rxe9 --port 18999

# the peer dies mid-probe: the client notices the control connection drop
# (killed once the run is under way, seen from h2: an established control connection;
# a fixed sleep killed it before the client connected on a loaded machine). Exit 2 with
# a message about the peer: a run that went on to its 60 s would exit 0.
job=$("$LAB" exec-bg --timeout 120 h1 -- "$F" "${RUN[@]}" --test send_lat --duration 60)
for _ in $(seq 120); do
	on h2 ss -Htn state established '( sport = :18516 )' 2>/dev/null | grep -q . && break
	sleep 0.5
done
sleep 2
t0=$(date +%s)
"$LAB" kill h2 "$SERVER" >/dev/null 2>&1
out=$("$LAB" wait --timeout 90 h1 "$job" 2>&1)
rc=$?
dt=$(($(date +%s) - t0))
echo "   bad-peer-dies-mid-probe: exit $rc ${dt}s after the kill"
if [ "$rc" = 2 ] && grep -q "peer" <<<"$out"; then
	pass "bad-peer-dies-mid-probe"
else
	fail "bad-peer-dies-mid-probe" "exit $rc after ${dt}s: $out"
fi
sleep 1
left="$(leftovers h1)$(leftovers h2)"
[ -z "$left" ] && pass "bad-nothing-left-behind" || fail "bad-nothing-left-behind" "$left"

# no RDMA device at all
on h1 rdma link delete rxe0
bad "bad-no-rdma-device" "no RDMA device" "$F" probe run --peer 10.100.0.2
