#!/bin/bash
# The fabric probe against real kernels (docs/probes.md, "The whole fabric"): five lab
# VMs, six links (a ring h1-h2-h3-h4-h1, a chord h1-h3, a leaf h1-h5), each with one
# MACsec VLAN carrying soft-RoCE (rxe on the SecY), `fabricctl agent` on every host
# (mutual TLS on untagged addresses of h1's wires), `probe --fabric` run from h1:
#
#  1. degraded: netem delay on h1-h2 above the SLO, XDP loss on h2-h3, h3's SecY MTU
#     on h3-h4 below the profile's, h5's agent stopped (SIGSTOP): exactly those four
#     links fail with the right reason (latency, loss, path MTU naming h3's port and
#     the largest size that passed, h5 not answering), the other two pass, exit 2,
#     within the run's deadline; JSON and JUnit agree; the latency matrix holds the delay
#  2. nothing degraded: every link passes, exit 0
#  3. bad input, no traffic: an unknown link name, a VLAN without an RDMA device, a
#     VLAN without MACsec (the fabric probe requires encryption), a VLAN whose only RDMA
#     device is on its cleartext carrier: exit 2, named
#
# Prints PASS/FAIL per check and "fabric-probe: N passed, M failed"; exits non-zero on
# any failure, a lab that cannot start included (never skips). Needs root.
set -uo pipefail

SUITE=fabric-probe
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-fabric-probe
SUITE_EXEC_TIMEOUT=300
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
P=$BUILD/probes/fabricctl-probe
DROP=$BUILD/tests/lab/fctl_lab_drop
# The run's bounds: each link 120 s (the delayed link's 4 s round trips), the whole run
# 300 s. Emulated RDMA: 8 iterations; QP ACK timeout 2^21 x 4.096 us = 8.6 s, above
# that link's round trip.
LINK_S=120
DEADLINE_S=300
PROBE_OPTS=(--timeout ${LINK_S}s --deadline ${DEADLINE_S}s --test send_lat,write_bw --iters 8
	--qp-timeout 21)

for b in "$F" "$P" "$DROP"; do
	[ -x "$b" ] || { fail "build" "$b is missing: build first (cmake --build $BUILD)"; exit 1; }
done

# --- material, in a directory the guests see (read-only) ----------------------
WORK=$BUILD/lab-fabric-probe-work
rm -rf "$WORK"
mkdir -p "$WORK/keys"
suite_cleanup() { rm -rf "$WORK/keys" "$WORK/pki"; }
"$ROOT/scripts/pki.sh" "$WORK/pki" h1=10.9.1.1 h2=10.9.1.2 h3=10.9.3.3 h4=10.9.4.4 \
	h5=10.9.5.5 >/dev/null || { fail "pki"; exit 1; }
chmod 644 "$WORK"/pki/*.key # guests read them as root over 9p; this tree is a test tree
( umask 077; openssl rand -hex 16 >"$WORK/keys/ring.key" )
OP=(--cert "$WORK/pki/client-operator.crt" --key "$WORK/pki/client-operator.key"
	--ca "$WORK/pki/ca.crt")

# LINK A:PORT B:PORT VLAN
LINKS=("h1-h2 h1:eth0 h2:eth0 101" "h2-h3 h2:eth1 h3:eth0 102" "h3-h4 h3:eth1 h4:eth0 103"
	"h4-h1 h4:eth1 h1:eth1 104" "h1-h5 h1:eth2 h5:eth0 105" "h1-h3 h1:eth3 h3:eth2 106")
WIRING=h1.eth0=h2.eth0,h2.eth1=h3.eth0,h3.eth1=h4.eth0,h4.eth1=h1.eth1,h1.eth2=h5.eth0,h1.eth3=h3.eth2
declare -A AGENT=([h1]=10.9.1.1 [h2]=10.9.1.2 [h3]=10.9.3.3 [h4]=10.9.4.4 [h5]=10.9.5.5)

profile() {
	local l name a b vlan ha hb
	cat <<EOP
schema: 1
profile: { name: lab-fabric-probe, version: 1 }
macsec:
  edge:
    cipher: gcm-aes-128
    icv_len: 16
    encrypt: true
    replay_protect: true
    replay_window: 0
    validate: strict
    send_sci: true
    port: 1
    key: { backend: file, id: keys/ring.key }
  edge2: # a second VLAN of one link under the same key needs its own SCI port
    cipher: gcm-aes-128
    icv_len: 16
    encrypt: true
    replay_protect: true
    replay_window: 0
    validate: strict
    send_sci: true
    port: 2
    key: { backend: file, id: keys/ring.key }
hosts:
EOP
	for h in h1 h2 h3 h4 h5; do
		echo "  - name: $h"
		echo "    agent: ${AGENT[$h]}:7443"
		echo "    ports:"
		for p in eth0 eth1 eth2 eth3; do
			grep -q " $h:$p " <<<" ${LINKS[*]} " &&
				echo "      - { name: $p, mac: \"52:54:00:fa:0${h#h}:0${p#eth}\" }"
		done
	done
	echo "links:"
	for l in "${LINKS[@]}"; do
		read -r name a b vlan <<<"$l"
		ha=${a%%:*} hb=${b%%:*}
		echo "  - { name: $name, a: \"$a\", b: \"$b\", macsec: edge,"
		echo "      vlans: [ { id: $vlan, mtu: 1400, addresses: { $ha: 10.$vlan.0.${ha#h}/24, $hb: 10.$vlan.0.${hb#h}/24 } } ] }"
	done
	cat <<EOP
slo:
  latency_p99_us: 1500000
  max_loss: 0
EOP
}
profile >"$WORK/fabric.yaml"
# bad input: h4-h1 with a second VLAN nobody created (so no RDMA device on it), and
# with a cleartext one
sed 's/^\(      vlans: \[ { id: 104, .*\) \] }$/\1,\n        { id: 250, mtu: 1400, macsec: edge2, addresses: { h4: 10.250.0.4\/24, h1: 10.250.0.1\/24 } } ] }/' \
	"$WORK/fabric.yaml" >"$WORK/bad-nordma.yaml"
sed 's/^\(      vlans: \[ { id: 104, .*\) \] }$/\1,\n        { id: 251, macsec: ~, addresses: { h4: 10.251.0.4\/24, h1: 10.251.0.1\/24 } } ] }/' \
	"$WORK/fabric.yaml" >"$WORK/bad-clear.yaml"
for y in fabric bad-nordma bad-clear; do
	"$F" validate -q "$WORK/$y.yaml" || { fail "profile" "$y.yaml does not validate"; exit 1; }
done

# --- lab, control addresses, apply, rxe, agents ---------------------------------
if ! "$LAB" up --hosts 5 --wiring "$WIRING" --lifetime 1800; then
	fail "lab-up" "the lab did not start"
	exit 1
fi
pass "lab-up"
on h1 sh -c 'for a in eth0:10.9.1.1 eth1:10.9.4.1 eth2:10.9.5.1 eth3:10.9.3.1; do
	ip link set ${a%%:*} up && ip addr add ${a#*:}/24 dev ${a%%:*} || exit 1; done'
on h2 sh -c 'ip link set eth0 up && ip link set eth1 up && ip addr add 10.9.1.2/24 dev eth0'
on h3 sh -c 'for i in eth0 eth1 eth2; do ip link set $i up; done; ip addr add 10.9.3.3/24 dev eth2'
on h4 sh -c 'ip link set eth0 up && ip link set eth1 up && ip addr add 10.9.4.4/24 dev eth1'
on h5 sh -c 'ip link set eth0 up && ip addr add 10.9.5.5/24 dev eth0'

declare -A AGJOB=()
# an agent's own log (its job's stderr in the lab share), for a failed check
agent_log() { tail -n "${2:-15}" "$FCTL_LAB_DIR/$1/jobs/${AGJOB[$1]:-none}.err" 2>/dev/null | sed "s/^/   $1 agent: /"; }
ok=1
for h in h1 h2 h3 h4 h5; do
	out=$(on "$h" "$F" apply --host "$h" --json "$WORK/fabric.yaml") &&
		[ "$(jq -r .result <<<"$out")" = applied ] || { ok=0; echo "$h: $out"; }
	for l in "${LINKS[@]}"; do
		read -r _ a b vlan <<<"$l"
		[ "${a%%:*}" = "$h" ] || [ "${b%%:*}" = "$h" ] || continue
		on "$h" rdma link add "rxe$vlan" type rxe netdev "ms$vlan" || ok=0
	done
	on "$h" sh -c "mkdir -p /var/lib/fabricctl/agent/keys && cp '$WORK/keys/ring.key' /var/lib/fabricctl/agent/keys/"
	AGJOB[$h]=$("$LAB" exec-bg --timeout 1500 "$h" -- "$F" agent --host "$h" --listen 0.0.0.0:7443 \
		--cert "$WORK/pki/server-$h.crt" --key "$WORK/pki/server-$h.key" \
		--ca "$WORK/pki/ca.crt" --drift-interval 600s --metrics 127.0.0.1:9469) || ok=0
done
[ $ok = 1 ] && pass "setup-apply-rxe-agents" || { fail "setup-apply-rxe-agents"; exit 1; }
for h in h1 h2 h3 h4 h5; do
	for _ in $(seq 40); do
		on h1 "$F" status --target "${AGENT[$h]}:7443" "${OP[@]}" >/dev/null 2>&1 && break
		sleep 1
	done
done
check "agents-answer" on h1 "$F" status --fabric "${OP[@]}" --profile "$WORK/fabric.yaml" --quiet

# --- 1. degraded ------------------------------------------------------------------
# 4 s of delay one way puts every send_lat sample (half a round trip) at 2 s or more,
# above the 1.5 s SLO whatever the load (a floor, not a speed); healthy links measured up
# to 0.31 s with six probes at once at load 15-23, and 0.77 s in a whole test.sh run,
# where 1.6 s of delay against a 0.7 s SLO failed a healthy link: the SLO is twice the
# worst healthy figure seen
# the dropper on h2, the serving end of h2-h3: write_bw's data arrives there, and a frame
# dropped there is a sequence gap (loss); dropped on the running end it would only be a
# lost ACK (a timer retransmission)
sysmod=/lib/modules/$(on h2 uname -r)/kernel/net/sched/sch_netem.ko
on h2 sh -c "modprobe sch_netem 2>/dev/null || insmod $sysmod" &&
	on h2 tc qdisc add dev ms101 root netem delay 4000ms &&
	on h2 "$DROP" ms102 10 >/dev/null &&
	on h3 ip link set ms103 mtu 1300 &&
	H5_AGENT=$(on h5 pgrep -o -f "agent --host h5 --listen") &&
	on h5 kill -STOP "$H5_AGENT" && pass "1-degrade" || fail "1-degrade" "netem, XDP, mtu or SIGSTOP"

t0=$(date +%s)
out=$(on h1 "$F" probe --fabric "$WORK/fabric.yaml" "${OP[@]}" "${PROBE_OPTS[@]}" --json \
	--junit /tmp/run1.xml --quiet)
rc=$?
t1=$(date +%s)
on h1 cat /tmp/run1.xml >"$WORK/run1.xml" # the guests see this tree read-only
echo "$out" | jq -r '.links[] | "   \(.link): \(.verdict) \(.reasons)"' 2>/dev/null
echo "   degraded run: exit $rc, $((t1 - t0)) s wall (deadline $DEADLINE_S s), $(jq -r .rounds <<<"$out" 2>/dev/null) round(s)"
verdict() { jq -r --arg l "$1" '.links[] | select(.link == $l) | .verdict' <<<"$out" 2>/dev/null; }
reasons() { jq -r --arg l "$1" '.links[] | select(.link == $l) | .reasons | join("; ")' <<<"$out" 2>/dev/null; }
[ "$rc" = 2 ] && pass "1-exit-2" || fail "1-exit-2" "exit $rc"
[ "$(verdict h1-h2)" = fail ] && grep -q "latency p99" <<<"$(reasons h1-h2)" &&
	pass "1-netem-link-fails-latency" || fail "1-netem-link-fails-latency" "$(verdict h1-h2): $(reasons h1-h2)"
[ "$(verdict h2-h3)" = fail ] && grep -q "loss" <<<"$(reasons h2-h3)" &&
	pass "1-lossy-link-fails-loss" || fail "1-lossy-link-fails-loss" "$(verdict h2-h3): $(reasons h2-h3)"
[ "$(verdict h3-h4)" = fail ] && grep -q "path MTU: h3 port eth1 (ms103).*largest that passed: 1300" <<<"$(reasons h3-h4)" &&
	pass "1-mtu-link-names-port-and-size" || fail "1-mtu-link-names-port-and-size" "$(verdict h3-h4): $(reasons h3-h4)"
[ "$(verdict h1-h5)" = error ] && grep -q "h5 did not answer" <<<"$(reasons h1-h5)" &&
	pass "1-stopped-agent-fails-its-link" || fail "1-stopped-agent-fails-its-link" "$(verdict h1-h5): $(reasons h1-h5)"
[ "$(verdict h4-h1)" = pass ] && [ "$(verdict h1-h3)" = pass ] &&
	pass "1-others-pass" || fail "1-others-pass" "h4-h1 $(verdict h4-h1): $(reasons h4-h1); h1-h3 $(verdict h1-h3): $(reasons h1-h3)"
[ "$(jq '[.links[] | select(.verdict != "pass")] | length' <<<"$out" 2>/dev/null)" = 4 ] &&
	pass "1-exactly-four-named" || fail "1-exactly-four-named"
# the deadline is the feature: the run ends by it whatever hangs (a bound, not a speed;
# the command's own clock, not the lab's exec)
jq -en --argjson d "$DEADLINE_S" 'input | .wall_seconds <= $d' <<<"$out" >/dev/null &&
	pass "1-ends-within-deadline" || fail "1-ends-within-deadline" "$(jq .wall_seconds <<<"$out")"
jq -en 'input | [.links[] | select(.verdict == "pass") | .tests[] | .macsec_encrypted_delta.a > 0 and
	.macsec_encrypted_delta.b > 0 and .macsec_refused_delta.a == 0] | length > 0 and all' <<<"$out" >/dev/null &&
	pass "1-passing-links-encrypted-both-ends" || fail "1-passing-links-encrypted-both-ends"
# the latency matrix: h1-h2's p99 holds the netem delay, both ways; h1-h5 a link with no
# figure, h2-h5 no link
jq -en 'input | .latency_matrix as $m | ($m.hosts | index("h1")) as $a | ($m.hosts | index("h2")) as $b |
	($m.hosts | index("h5")) as $e | $m.percentile == "p99" and $m.us[$a][$b] > 100000 and
	$m.us[$a][$b] == $m.us[$b][$a] and $m.us[$a][$e] == null and $m.links[$a][$e] and
	($m.links[$b][$e] | not)' <<<"$out" >/dev/null &&
	pass "1-latency-matrix" || fail "1-latency-matrix" "$(jq -c .latency_matrix <<<"$out")"
if python3 - "$WORK/run1.xml" <<'EOPY'; then pass "1-junit-one-case-per-link-and-test"; else fail "1-junit-one-case-per-link-and-test"; fi
import sys, xml.dom.minidom as m
d = m.parse(sys.argv[1])
cases = d.getElementsByTagName("testcase")
names = {(c.getAttribute("classname"), c.getAttribute("name")) for c in cases}
assert ("fabric-probe.h4-h1/104", "send_lat") in names and ("fabric-probe.h4-h1/104", "path_mtu") in names, names
assert ("fabric-probe.h1-h5/105", "run") in names, names
bad = {c.getAttribute("classname") for c in cases if c.getElementsByTagName("failure") or c.getElementsByTagName("error")}
assert bad == {"fabric-probe.h1-h2/101", "fabric-probe.h2-h3/102", "fabric-probe.h3-h4/103", "fabric-probe.h1-h5/105"}, bad
EOPY

# --- 2. nothing degraded -------------------------------------------------------------
on h5 kill -CONT "$H5_AGENT"
on h2 tc qdisc del dev ms101 root
on h2 "$DROP" ms102 off >/dev/null
on h3 ip link set ms103 mtu 1400
out=$(on h1 "$F" probe --fabric "$WORK/fabric.yaml" "${OP[@]}" "${PROBE_OPTS[@]}")
rc=$?
echo "$out" | sed 's/^/   /'
[ "$rc" = 0 ] && grep -q "6 passed, 0 failed, 0 could not run" <<<"$out" &&
	grep -q "^latency p99 (us), hosts x hosts:" <<<"$out" &&
	pass "2-clean-run-passes-all" || { fail "2-clean-run-passes-all" "exit $rc"; for h in h1 h2 h3 h4 h5; do agent_log "$h"; done; }

# --- 2b. each link's last run in its running end's agent metrics -----------------------
# end b runs (and keeps STATE_DIR/probe/links/LINK@NETDEV): after the clean run every
# link's fabricctl_probe_link_pass is 1 there, labelled with its SecY, and each agent's
# page passes promtool's check (no family twice: the single probe/last families beside)
ok=1 why=
: >"$WORK/metrics.all"
for l in "${LINKS[@]}"; do
	read -r name _ b vlan <<<"$l"
	m=$(on "${b%%:*}" curl -sf http://127.0.0.1:9469/metrics) || { ok=0 why+=" ${b%%:*}: no scrape"; continue; }
	grep -Eq "^fabricctl_probe_link_pass\{host=\"${b%%:*}\",link=\"$name\",peer=\"[^\"]+\",netdev=\"ms$vlan\"\} 1\$" <<<"$m" &&
		grep -Eq "^fabricctl_probe_link_latency_seconds\{host=\"${b%%:*}\",link=\"$name\",.*test=\"send_lat\".*percentile=\"99\"\} [0-9]" <<<"$m" ||
		{ ok=0 why+=" $name: $(grep '^fabricctl_probe_link_pass' <<<"$m" | tr '\n' ' ')"; }
	printf '%s\n' "$m" >"$WORK/metrics-${b%%:*}.txt"
done
for f in "$WORK"/metrics-h*.txt; do
	promtool check metrics <"$f" >"$WORK/promtool.out" 2>&1 || { ok=0 why+=" promtool ${f##*/}: $(head -c 300 "$WORK/promtool.out")"; }
done
[ $ok = 1 ] && pass "2b-per-link-metrics-on-running-ends" || fail "2b-per-link-metrics-on-running-ends" "$why"

# --- bench (bench/fabric_probe_bench.sh sets FCTL_FABRIC_PROBE_BENCH=1): the fabric run
# against the same links probed one by one ------------------------------------------------
if [ "${FCTL_FABRIC_PROBE_BENCH:-0}" = 1 ]; then
	fab=$(on h1 "$F" probe --fabric "$WORK/fabric.yaml" "${OP[@]}" "${PROBE_OPTS[@]}" --json --quiet |
		jq -r .wall_seconds)
	sum=0
	for l in "${LINKS[@]}"; do
		read -r name _ <<<"$l"
		w=$(on h1 "$F" probe --fabric "$WORK/fabric.yaml" "${OP[@]}" "${PROBE_OPTS[@]}" --json --quiet \
			--link "$name" | jq -r .wall_seconds)
		echo "   $name alone: $w s"
		sum=$(awk -v a="$sum" -v b="$w" 'BEGIN { printf "%.3f", a + b }')
	done
	echo "BENCH fabric probe of ${#LINKS[@]} links: $fab s in one run; one by one: $sum s (ratio $(awk -v a="$sum" -v b="$fab" 'BEGIN { printf "%.2f", a / b }'))"
fi

# --- 3. bad input ------------------------------------------------------------------------
bad() { # name, profile, want (grep -E), probe args...
	local name=$1 y=$2 want=$3 o r
	shift 3
	o=$(on h1 "$F" probe --fabric "$WORK/$y.yaml" "${OP[@]}" "${PROBE_OPTS[@]}" "$@" 2>&1)
	r=$?
	if [ $r = 2 ] && grep -Eq -- "$want" <<<"$o"; then pass "$name"; else fail "$name" "exit $r: $o"; fi
}
bad "3-unknown-link" fabric "no link 'nope' in the profile" --link nope
# h4-h1/104 passes, /250 cannot run: named, with the interface that has no device
bad "3-no-rdma-device" bad-nordma "no RDMA device on ms250" --link h4-h1
bad "3-vlan-without-macsec" bad-clear "link 'h4-h1' VLAN 251 has no MACsec" --link h4-h1
# h4-h1/104 with soft-RoCE only on the cleartext carrier: moved from the SecY ms104 to
# the port under VLAN 104's device (rxe takes no VLAN device), and ms104's address taken
# away (with it the GID the kernel gives the port's device for the SecY above it: that
# one the probe would take, its traffic leaving through the SecY, encrypted). The
# carrier's GIDs remain: RDMA there would leave the host unencrypted, so the probe
# refuses it, naming the SecY's (none) and the carrier's. The last check: the link
# stays so.
ok=1
for h in h4 h1; do
	pd=$(on "$h" ip -d -j link show type vlan | jq -r '.[] | select(.linkinfo.info_data.id == 104) | .link') &&
		[ -n "$pd" ] && on "$h" rdma link delete rxe104 && on "$h" rdma link add "rxec$h" type rxe netdev "$pd" &&
		on "$h" ip addr flush dev ms104 || { ok=0; echo "   $h: the port under VLAN 104: '$pd'"; }
done
if [ $ok = 1 ]; then
	bad "3-gid-on-cleartext-carrier" fabric \
		"no RDMA GID on ms104 \(its GID would be none \(no IPv4 address on ms104\)\); device rxech[14] port 1 GID [0-9]+ [0-9a-f:]+ is on eth1, the cleartext carrier of ms104: RDMA there would not be encrypted" \
		--link h4-h1
else
	fail "3-gid-on-cleartext-carrier" "could not move soft-RoCE to VLAN 104's carrier"
fi
