#!/bin/bash
# SPDX-License-Identifier: MIT
# The agent's metrics seen by a real Prometheus in the lab (docs/agent.md, "Metrics"):
# two lab VMs apply tests/lab/profiles/lab-pair-rotation.yaml, `fabricctl agent` on
# both (mutual TLS on the lab wire's untagged addresses 10.9.12.x, metrics on the
# management NIC, mgmt0 10.0.2.15:9443, that `lab.sh up --mgmt-port 9443` forwards from
# a port of the build host's 127.0.0.1), and Debian's prometheus on the build host
# (127.0.0.1 only, its TSDB under the build dir) scraping both agents through those
# forwards every second with examples/prometheus/fabricctl.rules.yml loaded. Every
# assertion is PromQL over Prometheus's HTTP API, asked on the build host with the
# helpers of tests/metrics/prom.bash (as the metrics suite does).
#
# Why on the build host: the guests run under TCG, where a guest's CPU cycle costs about
# ten of the host's. Prometheus (a Go program scraping and evaluating rules every
# second) inside h1, and a lab.sh exec, bash, curl and jq inside h1 for every query,
# were most of this suite's CPU. What is proved is the same: the agents' series as a
# Prometheus scrapes them, the rules evaluated over them; only `instance` names a
# forward (127.0.0.1:N, from `lab.sh status --json`) instead of 10.9.12.x:9443.
#
#  1. both targets up, the rule groups loaded
#  2. after apply: fabricctl_macsec_secy_encrypting == 1 for ms100 with
#     link="h1-h2.100" on both hosts, its fabricctl_macsec_secy_offload_info says offload
#     off (joined on the SecY's labels), fabricctl_profile_version == 1
#  3. a probe run (soft-RoCE on ms100, --state-dir the agent's) on h1: the seven
#     fabricctl_probe_* families of link h1-h2 appear, fabricctl_probe_pass is its verdict
#  4. drift made with `ip` on h2 (encrypt off): fabricctl_link_drift == 1 for
#     h1-h2.100 on h2, encrypting 0, FabricctlSecYNotEncrypting pending; undone: 0
#  5. a wrong key on h2 (re-applied as version 2 with another key file) while h1
#     pings: rate(fabricctl_macsec_in_pkts_not_valid_total[...]) > 0 on h2,
#     FabricctlInPktsNotValidRising firing, profile_version 2; rolled back to 1
#  6. two keymgr rotations: fabricctl_rotations_total{result="completed"} and
#     fabricctl_rotation_key_version went up on both hosts; traffic on the new key
#  7. `promtool check metrics` on a real scrape of each agent is clean; an excerpt of
#     h1's scrape is printed for the record
#
# Prints PASS/FAIL per check and "lab-metrics: N passed, M failed"; exits non-zero on
# any failure, including a lab or a Prometheus that cannot start (never skips);
# Prometheus is stopped by its PID at the exit, whatever happened.
# FCTL_LAB_DIR picks the lab dir, FCTL_BUILD_DIR the build tree. Needs root.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../metrics/prom.bash
source "$ROOT/tests/metrics/prom.bash"
MPORT=9443 # the agents' metrics port on mgmt0, forwarded by lab.sh up --mgmt-port

BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
K=$BUILD/keymgr/fabricctl-keymgr
P=$BUILD/probes/fabricctl-probe
LAB=$ROOT/scripts/lab.sh
export FCTL_LAB_DIR=${FCTL_LAB_DIR:-/var/tmp/fabricctl-lab-metrics}
export FCTL_AUDIT_LOG=/var/lib/fabricctl/audit.log # guests: tmpfs
LINK=h1-h2.100
PASS=0
FAIL=0
T0=$SECONDS
SERVE_JOB=""
declare -A AG MG # lab host -> agent job; lab host -> its metrics forward 127.0.0.1:N

pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
stamp() { echo "   [$((SECONDS - T0)) s] $1"; }

on() { local h=$1; shift; "$LAB" exec --timeout 300 "$h" -- "$@"; }
# PromQL on the build host (tests/metrics/prom.bash): prom_wait EXPR SECONDS, prom_value
# EXPR, prom_query EXPR. pv EXPR: its first value; asked again when a loaded machine
# lets a query time out
pv() {
	local v i
	for i in 1 2 3 4 5; do
		v=$(prom_value "$1")
		[ -n "$v" ] && break
		sleep 1
	done
	echo "$v"
}

finish() {
	local rc=$? h
	prom_stop # by its PID (prom.bash), and waits for it
	[ -n "$SERVE_JOB" ] && "$LAB" kill h2 "$SERVE_JOB" >/dev/null 2>&1
	for h in "${!AG[@]}"; do "$LAB" kill "$h" "${AG[$h]}" >/dev/null 2>&1; done
	"$LAB" down --dir "$FCTL_LAB_DIR" >/dev/null 2>&1 || true
	[ "$rc" -ne 0 ] && [ "$FAIL" -eq 0 ] && fail "script" "stopped early with status $rc"
	[ "$PASS" -eq 0 ] && [ "$FAIL" -eq 0 ] && fail "script" "no check ran"
	echo "   lab time: $((SECONDS - T0)) s"
	echo "lab-metrics: $PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ] && exit 0
	exit 1
}
trap finish EXIT
trap 'exit 130' INT TERM

for b in "$F" "$K" "$P"; do [ -x "$b" ] || { fail "build" "$b is missing: build first"; exit 1; }; done
for t in prometheus promtool curl jq openssl; do
	command -v "$t" >/dev/null || { fail "tools" "no $t (scripts/deps.sh installs it)"; exit 1; }
done

# --- material under the build dir (the guests see it read-only) -------------------
WORK=$BUILD/lab-metrics-work
rm -rf "$WORK"
mkdir -p "$WORK/keys"
"$ROOT/scripts/pki.sh" "$WORK/pki" h1=10.9.12.1 h2=10.9.12.2 >/dev/null || { fail "pki"; exit 1; }
chmod 644 "$WORK"/pki/*.key # guests read them as root over 9p; this tree is a test tree
(
	umask 077
	openssl rand -hex 16 >"$WORK/keys/rot.key"
	for v in 1 2 3 4; do openssl rand -hex 16 >"$WORK/keys/rot.key.v$v"; done
	openssl rand -hex 16 >"$WORK/keys/wrong.key"
)
# the rotation pair, with the SLOs of profiles/lab-pair.yaml so a probe may name the link
{
	cat "$ROOT/tests/lab/profiles/lab-pair-rotation.yaml"
	sed -n '/^slo:/,$p' "$ROOT/profiles/lab-pair.yaml"
} >"$WORK/rot.yaml"
# one end's key replaced: version 2 with another key file
sed -e 's|key: { backend: file, id: keys/rot.key }|key: { backend: file, id: keys/wrong.key }|' \
	-e 's/^  version: 1$/  version: 2/' "$WORK/rot.yaml" >"$WORK/wrong.yaml"
for p in rot wrong; do
	"$F" validate -q "$WORK/$p.yaml" || { fail "profile-$p" "does not validate"; exit 1; }
done
grep -q 'wrong.key' "$WORK/wrong.yaml" && grep -q '^  version: 2$' "$WORK/wrong.yaml" ||
	{ fail "profile-wrong" "the key or version substitution did not apply"; exit 1; }
ID=$WORK/pki
KC=(--cert "$ID/client-key-custodian.crt" --key "$ID/client-key-custodian.key" --ca "$ID/ca.crt")
KM=("$K" --state-dir /var/lib/fabricctl/keymgr --audit-log /var/lib/fabricctl/keymgr-audit.log
	--timeout 10 "${KC[@]}")

# --- lab, profile, agents -------------------------------------------------------------
stamp "lab up"
if ! "$LAB" up --hosts 2 --mem 768 --lifetime 1500 --boot-timeout 300 --mgmt-port "$MPORT"; then
	fail "lab-up" "the lab did not start"
	exit 1
fi
pass "lab-up"
lst=$("$LAB" status --json)
for h in h1 h2; do
	MG[$h]=$(jq -r --arg h "$h" '.hosts[] | select(.host == $h) | .mgmt // empty' <<<"$lst")
	[[ ${MG[$h]} == 127.0.0.1:* ]] || { fail "lab-up" "no management forward for $h in lab.sh status --json"; exit 1; }
done
on h1 sh -c 'ip addr add 10.9.12.1/24 dev eth0 && ip link set eth0 up'
on h2 sh -c 'ip addr add 10.9.12.2/24 dev eth0 && ip link set eth0 up'
for h in h1 h2; do
	o=$(on "$h" "$F" apply -q --host "$h" "$WORK/rot.yaml" 2>&1) && pass "apply-$h" ||
		fail "apply-$h" "$(tail -3 <<<"$o")"
done
start_agent() { # host: TLS on its lab address, metrics on mgmt0, drift checked every 10 s
	AG[$1]=$("$LAB" exec-bg "$1" -- "$F" agent --host "$1" --listen "$2:7443" \
		--cert "$ID/server-$1.crt" --key "$ID/server-$1.key" --ca "$ID/ca.crt" \
		--metrics "10.0.2.15:$MPORT" --audit-log /var/lib/fabricctl/agent-audit.log --drift-interval 10s)
}
start_agent h1 10.9.12.1
start_agent h2 10.9.12.2
ok=0
for _ in $(seq 60); do
	curl -sf --max-time 10 -o /dev/null "http://${MG[h1]}/metrics" &&
		curl -sf --max-time 10 -o /dev/null "http://${MG[h2]}/metrics" && { ok=1; break; }
	sleep 1
done
[ "$ok" = 1 ] && pass "agents-serve-metrics" ||
	{ fail "agents-serve-metrics" "no answer on mgmt0:$MPORT (h1 ${MG[h1]}, h2 ${MG[h2]}) within 60 s"; exit 1; }

# --- Prometheus on the build host ------------------------------------------------------
stamp "prometheus"
# the config of the metrics suite (tests/metrics/prom.bash): job fabricctl-agent, 1 s
# scrapes and rule evaluation, the rules file; its TSDB and log in $WORK/prom
if PROM_START_SECONDS=180 prom_start "$WORK/prom" "$ROOT/examples/prometheus/fabricctl.rules.yml" \
	"${MG[h1]}" "${MG[h2]}" 2>/dev/null; then
	pass "prometheus-up-on-the-build-host (pid $PROM_PID, $((SECONDS - T0)) s)"
else
	fail "prometheus-up-on-the-build-host" "not ready: $(grep -v '^\s' "$WORK/prom/prometheus.log" 2>/dev/null | tail -4)"
	exit 1
fi
# --- 1. targets, rules ----------------------------------------------------------------------
prom_wait 'count(up{job="fabricctl-agent"} == 1) == 2' 90 && pass "1-both-targets-up" ||
	fail "1-both-targets-up" "$(prom_query 'up' | head -c 600)"
rules=$(curl -sf --max-time 10 "$PROM_URL/api/v1/rules")
groups=$(jq -r '[.data.groups[].name] | sort | join(",")' <<<"$rules")
n=$(grep -c -- '- alert:' "$ROOT/examples/prometheus/fabricctl.rules.yml")
got=$(jq '[.data.groups[].rules[] | select(.type == "alerting")] | length' <<<"$rules")
[ "$groups" = fabricctl-agent,fabricctl-macsec,fabricctl-rotation ] && [ "$got" = "$n" ] &&
	pass "1-alert-rules-loaded ($got rules)" || fail "1-alert-rules-loaded" "groups '$groups', $got of $n rules"

# --- 2. after apply --------------------------------------------------------------------------
for h in h1 h2; do
	prom_wait "fabricctl_macsec_secy_encrypting{host=\"$h\",link=\"$LINK\",ifname=\"ms100\"} == 1" 60 &&
		pass "2-$h-encrypting-$LINK" ||
		fail "2-$h-encrypting-$LINK" "$(prom_query "fabricctl_macsec_secy_encrypting{host=\"$h\"}" | head -c 400)"
	# the offload of the SecY, joined on its labels as docs/agent.md shows (software here)
	prom_wait "fabricctl_macsec_secy_encrypting{host=\"$h\",ifname=\"ms100\"} * on(host, link, ifname) group_left(offload) fabricctl_macsec_secy_offload_info{offload=\"off\"} == 1" 30 &&
		pass "2-$h-offload-info-off" ||
		fail "2-$h-offload-info-off" "$(prom_query "fabricctl_macsec_secy_offload_info{host=\"$h\"}" | head -c 400)"
	prom_wait "fabricctl_profile_version{instance=\"${MG[$h]}\"} == 1" 30 && # the series of $h's agent
		pass "2-$h-profile-version-1" ||
		fail "2-$h-profile-version-1" "$(prom_query 'fabricctl_profile_version' | head -c 400)"
done
on h1 ping -c 3 -W 3 10.100.0.2 >/dev/null && pass "2-traffic-over-macsec" || fail "2-traffic-over-macsec"
prom_wait "increase(fabricctl_macsec_out_pkts_encrypted_total{host=\"h1\",link=\"$LINK\"}[1m]) > 0" 30 &&
	pass "2-out-pkts-encrypted-moved" || fail "2-out-pkts-encrypted-moved"

# --- 3. a probe run into the agent's state dir ------------------------------------------------
stamp "probe"
ok=1
for h in h1 h2; do on "$h" rdma link add rxe0 type rxe netdev ms100 || ok=0; done
[ "$ok" = 1 ] && pass "3-rxe-on-ms100" || fail "3-rxe-on-ms100"
SERVE_JOB=$("$LAB" exec-bg --timeout 900 h2 -- "$P" serve --dev rxe0)
# the wait inside h2: one lab.sh exec, not one per look
on h2 sh -c 'for i in $(seq 60); do ss -Hltn "sport = :18516" | grep -q . && exit 0; sleep 0.5; done; exit 1' ||
	fail "3-probe-server-listens"
o=$(on h1 "$F" probe run --peer 10.100.0.2 --dev rxe0 --qp-timeout 20 --test send_lat,write_bw \
	--iters 30 --profile "$WORK/rot.yaml" --link h1-h2 --state-dir /var/lib/fabricctl 2>&1)
rc=$?
echo "   probe: exit $rc (its SLO verdict is the probe's business here: TCG under load)"
grep -E '^(probe|  )' <<<"$o" | head -6 | sed 's/^/      /'
on h1 test -s /var/lib/fabricctl/probe/last && pass "3-probe-left-its-run-in-the-state-dir" ||
	fail "3-probe-left-its-run-in-the-state-dir" "exit $rc: $(tail -3 <<<"$o")"
PROBE_FAMS="last_run_timestamp_seconds|pass|test_pass|latency_seconds|bandwidth_bytes_per_second|loss_packets|retransmissions"
sel='host="h1",link="h1-h2",peer="10.100.0.2:18516"'
if prom_wait "count(count by (__name__) ({__name__=~\"fabricctl_probe_($PROBE_FAMS)\",$sel})) == 7" 60; then
	pass "3-probe-series-of-h1-h2 (fabricctl_probe_{${PROBE_FAMS//|/,}})"
else
	fail "3-probe-series-of-h1-h2" "$(prom_query "count by (__name__) ({__name__=~\"fabricctl_probe_.*\"})" | head -c 600)"
fi
prom_wait "fabricctl_probe_latency_seconds{$sel,test=\"send_lat\",percentile=\"99\"} > 0 and on() fabricctl_probe_bandwidth_bytes_per_second{$sel,test=\"write_bw\"} > 0" 30 &&
	pass "3-probe-latency-and-bandwidth-measured" || fail "3-probe-latency-and-bandwidth-measured"
want=0
[ "$rc" = 0 ] && want=1
v=$(pv "fabricctl_probe_pass{$sel}")
[ "$v" = "$want" ] && pass "3-probe-pass-is-the-verdict (exit $rc, fabricctl_probe_pass $v)" ||
	fail "3-probe-pass-is-the-verdict" "exit $rc, fabricctl_probe_pass '$v'"
"$LAB" kill h2 "$SERVE_JOB" >/dev/null 2>&1
SERVE_JOB=""

# --- 4. drift made with ip on h2 ---------------------------------------------------------------
stamp "drift"
prom_wait "fabricctl_link_drift{host=\"h2\",link=\"$LINK\",ifname=\"ms100\"} == 0" 30 &&
	pass "4-no-drift-before" || fail "4-no-drift-before" "$(prom_query 'fabricctl_link_drift' | head -c 400)"
on h2 ip link set ms100 type macsec encrypt off
t0=$SECONDS
if prom_wait "fabricctl_link_drift{host=\"h2\",link=\"$LINK\",ifname=\"ms100\"} == 1" 60; then
	pass "4-link-drift-1-for-$LINK ($((SECONDS - t0)) s)"
else
	fail "4-link-drift-1-for-$LINK" "$(prom_query 'fabricctl_link_drift' | head -c 400)"
fi
prom_wait "fabricctl_drift{instance=\"${MG[h2]}\"} == 1" 30 && pass "4-drift-1-on-h2" || fail "4-drift-1-on-h2"
prom_wait "fabricctl_link_drift{host=\"h1\",link=\"$LINK\"} == 0" 10 && pass "4-h1-no-drift" || fail "4-h1-no-drift"
prom_wait "fabricctl_macsec_secy_encrypting{host=\"h2\",link=\"$LINK\"} == 0" 30 &&
	pass "4-h2-not-encrypting" || fail "4-h2-not-encrypting"
if prom_wait "ALERTS{alertname=\"FabricctlSecYNotEncrypting\",host=\"h2\",link=\"$LINK\"}" 30; then
	st=$(prom_query "ALERTS{alertname=\"FabricctlSecYNotEncrypting\",host=\"h2\"}" | jq -r '.data.result[0].metric.alertstate')
	pass "4-alert-secy-not-encrypting-$st"
else
	fail "4-alert-secy-not-encrypting" "$(prom_query 'ALERTS' | head -c 400)"
fi
on h2 ip link set ms100 type macsec encrypt on
prom_wait "fabricctl_link_drift{host=\"h2\",link=\"$LINK\",ifname=\"ms100\"} == 0 and on() fabricctl_macsec_secy_encrypting{host=\"h2\",link=\"$LINK\"} == 1" 60 &&
	pass "4-drift-cleared-when-undone" || fail "4-drift-cleared-when-undone" "$(prom_query 'fabricctl_link_drift' | head -c 400)"

# --- 5. a wrong key on h2 ------------------------------------------------------------------------
stamp "wrong key"
o=$(on h2 "$F" apply -q --host h2 "$WORK/wrong.yaml" 2>&1) && pass "5-h2-reapplied-with-another-key" ||
	fail "5-h2-reapplied-with-another-key" "$(tail -3 <<<"$o")"
prom_wait "fabricctl_profile_version{instance=\"${MG[h2]}\"} == 2" 30 && pass "5-h2-profile-version-2" ||
	fail "5-h2-profile-version-2" "$(prom_query 'fabricctl_profile_version' | head -c 400)"
PING=$("$LAB" exec-bg --timeout 120 h1 -- ping -c 120 -i 0.5 -W 1 10.100.0.2)
if prom_wait "rate(fabricctl_macsec_in_pkts_not_valid_total{host=\"h2\",link=\"$LINK\",ifname=\"ms100\"}[15s]) > 0" 60; then
	pass "5-h2-in-pkts-not-valid-rate-above-0 ($(pv "fabricctl_macsec_in_pkts_not_valid_total{host=\"h2\",link=\"$LINK\"}") so far)"
else
	fail "5-h2-in-pkts-not-valid-rate-above-0" "$(prom_query "fabricctl_macsec_in_pkts_not_valid_total" | head -c 400)"
fi
prom_wait "ALERTS{alertname=\"FabricctlInPktsNotValidRising\",alertstate=\"firing\",host=\"h2\",link=\"$LINK\"}" 30 &&
	pass "5-alert-in-pkts-not-valid-firing" || fail "5-alert-in-pkts-not-valid-firing" "$(prom_query 'ALERTS' | head -c 400)"
"$LAB" kill h1 "$PING" >/dev/null 2>&1
"$LAB" wait --timeout 30 h1 "$PING" >/dev/null 2>&1
echo "   h1's in_pkts_not_valid meanwhile: $(pv "fabricctl_macsec_in_pkts_not_valid_total{host=\"h1\",link=\"$LINK\"}")"
o=$(on h2 "$F" rollback -q --to 1 --host h2 2>&1) && pass "5-h2-rolled-back-to-1" || fail "5-h2-rolled-back-to-1" "$(tail -3 <<<"$o")"
prom_wait "fabricctl_profile_version{instance=\"${MG[h2]}\"} == 1" 30 && pass "5-h2-profile-version-1-again" ||
	fail "5-h2-profile-version-1-again"
# h2's SAs are new (PNs from 1) while h1's RX SA remembers h2's higher PNs: with
# replay_window 0, h1 drops h2's frames as late until the next rotation (new SAs on both
# ends); traffic is checked after the rotations
on h1 ping -c 2 -W 2 10.100.0.2 >/dev/null 2>&1
echo "   after the rollback: h1's in_pkts_late $(pv "fabricctl_macsec_in_pkts_late_total{host=\"h1\",link=\"$LINK\"}"), h2's in_pkts_not_valid $(pv "fabricctl_macsec_in_pkts_not_valid_total{host=\"h2\",link=\"$LINK\"}")"

# --- 6. key rotations --------------------------------------------------------------------------
stamp "rotations"
rotate() {
	local o
	o=$(on h1 "${KM[@]}" rotate --all --overlap 1 "$WORK/rot.yaml" 2>&1) && pass "6-keymgr-rotate-$1" ||
		fail "6-keymgr-rotate-$1" "$(tail -3 <<<"$o")"
}
rotate 1
declare -A V1 C1
for h in h1 h2; do
	sel="host=\"$h\",link=\"$LINK\",ifname=\"ms100\""
	prom_wait "fabricctl_rotations_total{$sel,result=\"completed\"} >= 1 and on() fabricctl_rotation_in_progress{$sel} == 0" 60 ||
		fail "6-$h-first-rotation-completed" "$(prom_query "fabricctl_rotations_total{host=\"$h\"}" | head -c 400)"
	V1[$h]=$(pv "fabricctl_rotation_key_version{$sel}")
	C1[$h]=$(pv "fabricctl_rotations_total{$sel,result=\"completed\"}")
done
echo "   after the first rotation: key version h1 ${V1[h1]:-none}, h2 ${V1[h2]:-none}; completed h1 ${C1[h1]:-none}, h2 ${C1[h2]:-none}"
rotate 2
for h in h1 h2; do
	sel="host=\"$h\",link=\"$LINK\",ifname=\"ms100\""
	prom_wait "fabricctl_rotations_total{$sel,result=\"completed\"} > ${C1[$h]:-0}" 60 &&
		pass "6-$h-rotations-completed-increased (${C1[$h]:-?} -> $(pv "fabricctl_rotations_total{$sel,result=\"completed\"}"))" ||
		fail "6-$h-rotations-completed-increased" "$(prom_query "fabricctl_rotations_total{host=\"$h\"}" | head -c 400)"
	prom_wait "fabricctl_rotation_key_version{$sel} > ${V1[$h]:-0}" 60 &&
		pass "6-$h-key-version-went-up (${V1[$h]:-?} -> $(pv "fabricctl_rotation_key_version{$sel}"))" ||
		fail "6-$h-key-version-went-up" "$(prom_query "fabricctl_rotation_key_version" | head -c 400)"
done
prom_wait "increase(fabricctl_rotations_total{result=\"completed\",link=\"$LINK\"}[2m]) > 0" 30 &&
	pass "6-increase-rotations-completed" || fail "6-increase-rotations-completed"
prom_wait "count(fabricctl_macsec_secy_encrypting{link=\"$LINK\"} == 1) == 2" 30 &&
	pass "6-both-still-encrypting" || fail "6-both-still-encrypting"
on h1 ping -c 5 -W 3 10.100.0.2 >/dev/null && pass "6-traffic-on-the-rotated-key" || fail "6-traffic-on-the-rotated-key"

# --- 7. promtool on real scrapes, one for the record ------------------------------------------
stamp "scrapes"
for h in h1 h2; do
	curl -sf --max-time 10 "http://${MG[$h]}/metrics" >"$WORK/scrape-$h.txt" 2>/dev/null
	o=$(promtool check metrics <"$WORK/scrape-$h.txt" 2>&1)
	rc=$?
	[ -s "$WORK/scrape-$h.txt" ] && [ $rc = 0 ] && [ -z "$o" ] &&
		pass "7-promtool-check-metrics-$h ($(grep -vc '^#' "$WORK/scrape-$h.txt") samples)" ||
		fail "7-promtool-check-metrics-$h" "exit $rc: $(head -c 600 <<<"$o")"
done
echo "   one scrape of h1's agent (mgmt0:$MPORT through ${MG[h1]}), an excerpt:"
grep -E '^fabricctl_(build_info|profile_version|macsec_secy_encrypting|macsec_out_pkts_encrypted_total|macsec_in_pkts_not_valid_total|link_drift|rotation_key_version|rotations_total\{.*completed|probe_pass|probe_latency_seconds\{.*percentile="99")' \
	"$WORK/scrape-h1.txt" | head -14 | sed 's/^/      /'
stamp "end"
