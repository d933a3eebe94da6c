#!/bin/bash
# Key rotation against real kernels (docs/rotation.md): two lab VMs apply
# tests/lab/profiles/lab-pair-rotation.yaml, `fabricctl agent` on both (mutual TLS on
# the untagged lab wire), fabricctl-keymgr on h1 with a key-custodian certificate.
#
#  1. a sequence-numbered UDP stream both ways over the MACsec VLAN across N (8: each of
#     the 4 ANs installed, switched to and retired twice, the AN wrap crossed twice)
#     consecutive rotations triggered by the cryptoperiod (keymgr watch): nothing
#     lost or reordered; InPktsNotValid/NotUsingSA/UnusedSA stay 0; every rotation
#     committed in the journal history and the audit log; apply/diff see no drift
#  2. faults, with one stream across all of them: KMS key missing, wrong-length key,
#     peer agent killed before the switch, peer agent killed at the switch, keymgr
#     killed with -9 before and after the switch; each run ends with both ends on
#     one key, traffic flowing, and the audit log saying what happened
#  3, 4. KMS backends: a SoftHSM2 token (PKCS#11) in h1's RAM (a copy for h2's
#     apply), then a PyKMIP server (KMIP over TLS) on the build host's 127.0.0.1, which
#     the guests reach as 10.0.2.100:5696 (lab.sh up --guestfwd; why, below); each:
#     the profile pinned at version 1, three rotations under a stream, the last with
#     --compromised: the KMS's record of the old version says compromised, the audit
#     KCVs are the KMS's check values. In phase 4 h1 (kms_tool, keymgr) speaks KMIP
#     2.0 and h2's apply speaks 1.2, to the same server and the same objects
#  5. PN use as the trigger, on GCM-AES-XPN-128: an hour's cryptoperiod, a threshold of
#     2000 packets; `keys watch --count 2` under the stream rotates twice, both times
#     for PN use, with nothing lost, nothing refused and the kernel still on XPN
#
# Evidence for any loss (docs/rotation.md, "what a lost packet means"): the receivers
# report their own socket drops and each gap with the sender's send times; MACsec, link,
# ARP and SNMP counters of both hosts are kept before/after phase 1 in $WORK/snap-*,
# and each gap is printed beside the agents' SA steps around it.
# ROTATION_PHASES="1 3" runs only those phases (diagnosis; default "1 2 3 4 5"). FCTL_LAB_DIR picks the lab dir.
#
# Prints PASS/FAIL per check and "rotation: N passed, M failed"; exits non-zero on
# any failure, including a lab that cannot start (never skips).
set -uo pipefail

SUITE=rotation
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-rotation
SUITE_EXEC_TIMEOUT=300
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
K=$BUILD/keymgr/fabricctl-keymgr
SEQ=$BUILD/tests/lab/seqstream
export FCTL_AUDIT_LOG=/var/lib/fabricctl/audit.log # guests: tmpfs
N=${ROTATIONS:-8}
RATE=${RATE:-200}

T0=$SECONDS
stamp() { echo "   [$((SECONDS - T0)) s] $1"; }

for b in "$F" "$K" "$SEQ"; do [ -x "$b" ] || { fail "build" "$b is missing: build first"; exit 1; }; done

# --- material under the build dir (the guests see it read-only) -----------------
# one work directory per lab: the suite runs on two kernels, maybe at once (test.sh lanes)
WORK=$BUILD/lab-rotation-work-${FCTL_LAB_DIR##*/}
rm -rf "$WORK"
mkdir -p "$WORK/keys"
"$ROOT/scripts/pki.sh" "$WORK/pki" h1=10.9.12.1 h2=10.9.12.2 >/dev/null || { fail "pki"; exit 1; }
chmod 644 "$WORK"/pki/*.key # guests read them as root over 9p; this tree is a test tree
(
	umask 077
	openssl rand -hex 16 >"$WORK/keys/rot.key"
	for v in $(seq 1 60); do openssl rand -hex 16 >"$WORK/keys/rot.key.v$v"; done
)
cp "$ROOT/tests/lab/profiles/lab-pair-rotation.yaml" "$WORK/rot.yaml"
ID=$WORK/pki
KC=(--cert "$ID/client-key-custodian.crt" --key "$ID/client-key-custodian.key" --ca "$ID/ca.crt")
KS=/var/lib/fabricctl/keymgr
KA=/var/lib/fabricctl/keymgr-audit.log
# --timeout: one deadline per agent call (connect, TLS, answer); CI runs two labs side
# by side on two cores, where a state dump under a loaded guest has taken over 5 s
KM=("$K" --state-dir "$KS" --audit-log "$KA" --timeout 20 "${KC[@]}")

want() { [[ " ${ROTATION_PHASES:-1 2 3 4 5} " == *" $1 "* ]]; }

# phase 4's PyKMIP runs on this host (not in a guest: Python under TCG is ~10x slower,
# its start cost ~35 s of CPU and a request took over 10 s on a loaded machine): a free
# port of 127.0.0.1 below the lab's wire ports and the ephemeral range, which the guests
# reach as 10.0.2.100:5696 on their management NIC (qemu's guestfwd); stopped by PID
# in suite_cleanup, even on a failure
KMIP_PID=
KMIP_ADDR=10.0.2.100:5696
LAB_FWD=()
if want 4; then
	while KMIP_PORT=$((10000 + RANDOM % 10000)); [ -n "$(ss -Hatn "sport = :$KMIP_PORT")" ]; do :; done
	LAB_FWD=(--guestfwd "${KMIP_ADDR#*:}=$KMIP_PORT")
fi
suite_cleanup() {
	[ -z "$KMIP_PID" ] || { kill "$KMIP_PID" 2>/dev/null && wait "$KMIP_PID" 2>/dev/null; }
	KMIP_PID=
}

# --- lab, profile, agents ----------------------------------------------------------
if ! "$LAB" up --hosts 2 --lifetime 2400 "${LAB_FWD[@]}"; then
	fail "lab-up" "the lab did not start"
	exit 1
fi
pass "lab-up"
on h1 sh -c 'ip addr add 10.9.12.1/24 dev eth0 && ip link set eth0 up'
on h2 sh -c 'ip addr add 10.9.12.2/24 dev eth0 && ip link set eth0 up'
for h in h1 h2; do
	on "$h" "$F" apply -q --host "$h" "$WORK/rot.yaml" >/dev/null 2>&1 && pass "apply-$h" ||
		fail "apply-$h" "$(on "$h" "$F" apply --host "$h" "$WORK/rot.yaml" 2>&1 | tail -3)"
done
declare -A AG
start_agent() {
	AG[$1]=$("$LAB" exec-bg "$1" -- "$F" agent --host "$1" --listen 0.0.0.0:7443 \
		--cert "$ID/server-$1.crt" --key "$ID/server-$1.key" --ca "$ID/ca.crt" \
		--audit-log /var/lib/fabricctl/agent-audit.log --drift-interval 30s)
}
wait_agent() {
	for _ in $(seq 30); do
		on h1 "${KM[@]}" status "$WORK/rot.yaml" >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}
start_agent h1
start_agent h2
wait_agent && pass "agents-answer-key-custodian" || fail "agents-answer-key-custodian"
on h1 ping -c 3 -W 3 10.100.0.2 >/dev/null && pass "traffic-over-macsec" || fail "traffic-over-macsec"

# a viewer may not touch SAs
out=$(on h1 "$K" status --state-dir "$KS" --cert "$ID/client-viewer.crt" --key "$ID/client-viewer.key" --ca "$ID/ca.crt" "$WORK/rot.yaml" 2>&1)
grep -q "permission denied" <<<"$out" && pass "viewer-refused-sa-requests" || fail "viewer-refused-sa-requests" "$(head -c 300 <<<"$out")"

# --- evidence for any loss: counters on both ends and what the agents did when ---------
snap() { # tag: MACsec SA/SC counters, link drops, ARP table stats, SNMP counters
	for h in h1 h2; do
		on "$h" sh -c 'ip -s macsec show; echo "== link"; ip -s -s link show;
			echo "== ntable"; ip -s ntable show name arp_cache; echo "== neigh"; ip -s neigh show;
			echo "== nstat"; nstat -asz' >"$WORK/snap-$1-$h" 2>&1
	done
}
snap_diff() { # before after: counters that moved in ways that lose packets
	local h
	for h in h1 h2; do
		echo "   $h macsec (after):"; sed -n '/RXSC/,/== link/p' "$WORK/snap-$2-$h" | grep -v '== link' | sed 's/^/      /'
		echo "   $h: $(grep -E 'unresolved_discards|res_failed' "$WORK/snap-$2-$h" | tr -s ' ' | head -2 | tr '\n' ' ')"
		echo "   $h: $(grep -E '^(UdpInErrors|UdpRcvbufErrors|UdpSndbufErrors|IpOutNoRoutes|IpOutDiscards|IpInDiscards|IpExtInNoRoutes)' "$WORK/snap-$2-$h" | awk '$2 != 0 {printf "%s %s, ", $1, $2}')"
	done
}
explain_gaps() { # sender receiver gapfile: agent audit records within 1.5 s of each gap
	local ev=$WORK/events-$1-$2 a b t0 t1
	for h in h1 h2; do
		on "$h" cat /var/lib/fabricctl/agent-audit.log 2>/dev/null |
			jq -r --arg h "$h" 'select(.action|test("^(rxsa-install|txsa-stage|txsa-switch|encoding-sa|sa-retire)$")) |
				((.time|sub("\\.[0-9]+Z$";"Z")|fromdateiso8601) + (.time|capture("(?<f>\\.[0-9]+)Z").f|tonumber)) as $t |
				"\($t) \($h) \(.action) \(.detail)"' 2>/dev/null
	done | sort -n >"$ev"
	while read -r _ a b _ t0 _ t1; do
		echo "   gap $1->$2: seq $a..$b ($((b - a + 1)) packets) sent between $t0 and $t1 (sender's clock); agent steps near it:"
		awk -v t0="$t0" -v t1="$t1" '$1 >= t0 - 1.5 && $1 <= t1 + 1.5 {printf "      %s\n", $0}' "$ev"
	done <"$3"
}

# --- streams ---------------------------------------------------------------------------
declare -A RX TX
# whether HOST's UDP PORT is bound (a receiver the guest runner started is listening)
udp_bound() { [ -n "$(on "$1" ss -Hlun "sport = :$2" 2>/dev/null)" ]; }
stream_start() { # both ways
	local i
	RX[h2]=$("$LAB" exec-bg h2 -- "$SEQ" recv 5001 900 4)
	RX[h1]=$("$LAB" exec-bg h1 -- "$SEQ" recv 5002 900 4)
	# senders only once both receivers listen: a sleep was not enough on a loaded machine
	# (the first packets of a stream hit a port not yet bound and counted as lost)
	for i in $(seq 60); do
		udp_bound h2 5001 && udp_bound h1 5002 && break
		sleep 0.5
	done
	TX[h1]=$("$LAB" exec-bg h1 -- "$SEQ" send 10.100.0.2 5001 "$RATE" 900)
	TX[h2]=$("$LAB" exec-bg h2 -- "$SEQ" send 10.100.0.1 5002 "$RATE" 900)
}
stream_stop() { # name: checks both directions
	local name=$1 s r sent recv lost reord dup rall
	for pair in "h1 h2" "h2 h1"; do
		set -- $pair
		"$LAB" kill "$1" "${TX[$1]}" >/dev/null 2>&1
		s=$("$LAB" wait --timeout 30 "$1" "${TX[$1]}" 2>/dev/null | grep '^sent')
		rall=$("$LAB" wait --timeout 30 "$2" "${RX[$2]}" 2>/dev/null)
		r=$(grep '^received' <<<"$rall")
		grep '^gap' <<<"$rall" >"$WORK/gaps-$name-$1-$2"
		[ -s "$WORK/gaps-$name-$1-$2" ] && explain_gaps "$1" "$2" "$WORK/gaps-$name-$1-$2"
		echo "   sender $1: $s"
		sent=$(awk '{print $2}' <<<"$s")
		recv=$(awk '{print $2}' <<<"$r")
		lost=$(awk '{print $4}' <<<"$r")
		reord=$(awk '{print $6}' <<<"$r")
		dup=$(awk '{print $8}' <<<"$r")
		echo "   stream $1->$2: sent ${sent:-?} received ${recv:-?} lost ${lost:-?} reordered ${reord:-?} duplicated ${dup:-?} (receiver's socket dropped $(awk '{print $12}' <<<"$r"), rcvbuf $(awk '{print $14}' <<<"$r"))"
		[ -n "$sent" ] && [ "$sent" -gt 0 ] && [ "$sent" = "$recv" ] && [ "$lost" = 0 ] &&
			[ "$reord" = 0 ] && [ "$dup" = 0 ] && pass "$name-stream-$1-$2-no-loss-no-reorder" ||
			fail "$name-stream-$1-$2-no-loss-no-reorder" "sent $sent, $r"
	done
}
# refused-frame counters of the link on both ends (InPktsNotValid + NotUsingSA + UnusedSA
# over the RX SCs, which live through rotations): their sum, from keymgr status --json
REFUSED_SUM='[.[0].h1, .[0].h2 | .not_valid + .not_using_sa + .unused_sa] | add'
counters_refused() {
	on h1 "${KM[@]}" status --json "$WORK/rot.yaml" 2>/dev/null | jq "$REFUSED_SUM" 2>/dev/null
}
counters_zero() { # name [baseline]: no frame refused (since the baseline), ends on one key
	local js base=${2:-0} now
	js=$(on h1 "${KM[@]}" status --json "$WORK/rot.yaml" 2>/dev/null)
	now=$(jq "$REFUSED_SUM" <<<"$js" 2>/dev/null)
	[ "$base" != 0 ] && echo "   refused-frame counters: $base at the baseline, ${now:-unreadable} now"
	[ -n "$now" ] && [ "$now" = "$base" ] &&
		pass "$1-not-valid-not-using-unused-0" || {
		fail "$1-not-valid-not-using-unused-0" "baseline $base: $js"
		for h in h1 h2; do echo "   $h:"; on "$h" ip -s macsec show 2>&1 | sed 's/^/     /'; done
	}
	[ "$(jq '.[0].h1.encoding_sa == .[0].h2.encoding_sa and .[0].h1.version == .[0].h2.version' <<<"$js")" = true ] &&
		pass "$1-ends-agree-on-key" || fail "$1-ends-agree-on-key" "$js"
}
committed() { on h1 sh -c "grep -c ' committed ' $KS/rotations.log 2>/dev/null || echo 0"; }
audit_count() { # result
	on h1 sh -c "grep '\"action\":\"key-rotation\"' $KA | grep -c '\"result\":\"$1\"' || true"
}

if want 1; then
# --- 1. N rotations by the cryptoperiod under a stream --------------------------------
stamp "phase 1"
snap 1-before
stream_start
t0=$(date +%s)
out=$(on h1 "${KM[@]}" watch --count "$N" --cryptoperiod 5 --overlap 2 "$WORK/rot.yaml" 2>&1)
rc=$?
t1=$(date +%s)
sleep 1
snap 1-after
stream_stop "1"
snap_diff 1-before 1-after
[ $rc = 0 ] && pass "1-watch-$N-rotations ($((t1 - t0)) s)" || fail "1-watch-$N-rotations" "exit $rc: $(tail -5 <<<"$out")"
c=$(committed)
[ "$c" = "$N" ] && pass "1-journal-history-$N-committed" || fail "1-journal-history-$N-committed" "$c"
c=$(audit_count committed)
[ "$c" = "$N" ] && pass "1-audit-$N-committed" || fail "1-audit-$N-committed" "$c"
on h1 sh -c "ls $KS/journal-* 2>/dev/null" | grep -q . && fail "1-no-open-journal" || pass "1-no-open-journal"
n=$(on h2 sh -c "grep -c '\"action\":\"txsa-switch\".*\"result\":\"applied\"' /var/lib/fabricctl/agent-audit.log")
[ "${n:-0}" -ge "$N" ] && pass "1-peer-agent-audited-switches ($n)" || fail "1-peer-agent-audited-switches" "$n"
# every committed record names its new key by a KCV (docs/audit.md: "kcv":[...]) that is
# the check value of the key file of that version (computed here, independently), and
# no audit log or keymgr output holds any key's bytes
kcv_of() { printf '%032d' 0 | xxd -r -p | openssl enc -aes-128-ecb -nopad -K "$(tr -d ' \n' <"$1")" | xxd -p | head -c 6; }
on h1 cat "$KA" >"$WORK/keymgr-audit-1.jsonl" 2>/dev/null
bad=$(jq -r 'select(.action == "key-rotation" and .result == "committed") |
	(.detail | capture("key version [0-9]+ -> (?<v>[0-9]+)").v) as $v | "\($v) \((.kcv // []) | join(","))"' \
	"$WORK/keymgr-audit-1.jsonl" 2>&1 | while read -r v k; do
	[[ $k =~ ^[0-9a-f]{6}$ ]] && [ "$k" = "$(kcv_of "$WORK/keys/rot.key.v$v")" ] || echo "v$v:'$k'"
done)
n=$(jq -s '[.[] | select(.action == "key-rotation" and .result == "committed")] | length' "$WORK/keymgr-audit-1.jsonl")
[ "$n" = "$N" ] && [ -z "$bad" ] && pass "1-audit-names-keys-by-kcv" || fail "1-audit-names-keys-by-kcv" "$n committed records; wrong or missing kcv: $bad"
leak=0
for h in h1 h2; do on "$h" sh -c "cat $KA /var/lib/fabricctl/agent-audit.log 2>/dev/null"; done >"$WORK/all-audit-1" 2>/dev/null
for kf in "$WORK"/keys/rot.key*; do
	kh=$(tr -d ' \n' <"$kf")
	grep -qi -- "$kh" "$WORK/all-audit-1" && leak=$((leak + 1))
	grep -qi -- "$kh" <<<"$out" && leak=$((leak + 1))
done
[ "$leak" = 0 ] && [ -s "$WORK/all-audit-1" ] && pass "1-no-key-bytes-in-audit-or-output" || fail "1-no-key-bytes-in-audit-or-output" "$leak key(s) found"
counters_zero "1"
for h in h1 h2; do
	on "$h" "$F" diff --host "$h" "$WORK/rot.yaml" >/dev/null 2>&1 && pass "1-$h-rotated-is-not-drift" ||
		fail "1-$h-rotated-is-not-drift" "$(on "$h" "$F" diff --host "$h" "$WORK/rot.yaml" 2>&1 | head -8)"
done

fi

if want 2; then
# --- 2. faults, one stream across them ----------------------------------------------
stream_start
ver() { on h1 "${KM[@]}" status --json "$WORK/rot.yaml" 2>/dev/null | jq '.[0].h1.version'; }
next_key() { echo "$WORK/keys/rot.key.v$(($(ver) + 1))"; }
expect_rc() { # name want-rc [env...] -- rotate
	local name=$1 want=$2 rc
	shift 2
	out=$("$LAB" exec --timeout 120 "$@" h1 -- "${KM[@]}" rotate --all --overlap 1 "$WORK/rot.yaml" 2>&1)
	rc=$?
	[ "$rc" = "$want" ] && pass "$name-exit-$want" || fail "$name-exit-$want" "exit $rc: $(tail -3 <<<"$out")"
}
audit_has() { # name pattern
	on h1 sh -c "grep -q '$2' $KA" && pass "$1-audited" || fail "$1-audited" "no record matching $2"
}

# 2a. KMS unavailable: the next version's key is gone
stamp "2a"
nk=$(next_key)
mv "$nk" "$nk.off"
v0=$(ver)
expect_rc "2a-kms-unavailable" 1
mv "$nk.off" "$nk"
[ "$(ver)" = "$v0" ] && pass "2a-old-key-stays" || fail "2a-old-key-stays"
audit_has "2a-kms-unavailable" 'rolled-back.*No such file'

# 2b. a key of the wrong length from the KMS
stamp "2b"
nk=$(next_key)
cp "$nk" "$nk.good"
(umask 077; openssl rand -hex 10 >"$nk")
expect_rc "2b-wrong-length-key" 1
mv "$nk.good" "$nk"
audit_has "2b-wrong-length-key" 'rolled-back.*hex digits'

# the peer's agent killed -9 while keymgr holds at a step (the test hook's "hold", released
# by removing its marker once the agent is gone: no fixed pause under the stream)
kill_agent_h2() {
	on h2 sh -c 'kill -9 $(pidof fabricctl); for i in $(seq 100); do pidof fabricctl || exit 0; sleep 0.1; done; exit 1' \
		>/dev/null 2>&1 || echo "   h2's agent still running after kill -9"
}

# 2c. peer agent killed before the switch (keymgr held at stage-tx)
stamp "2c"
job=$("$LAB" exec-bg --env FCTL_KEYMGR_TEST_HOOK=stage-tx:hold h1 -- "${KM[@]}" rotate --all --overlap 1 "$WORK/rot.yaml")
for _ in $(seq 40); do on h1 test -e "$KS/paused-stage-tx" && break; sleep 0.5; done
kill_agent_h2
on h1 rm -f "$KS/paused-stage-tx" # keymgr goes on (the hold), to a peer that is gone
"$LAB" wait --timeout 60 h1 "$job" >/dev/null 2>&1
rc=$?
[ "$rc" = 3 ] && pass "2c-peer-killed-before-switch-journal-kept" || fail "2c-peer-killed-before-switch-journal-kept" "exit $rc"
start_agent h2
wait_agent || fail "2c-agent-restart"
on h1 "${KM[@]}" recover "$WORK/rot.yaml" >/dev/null 2>&1 && pass "2c-recover-rolls-back" || fail "2c-recover-rolls-back"
audit_has "2c-peer-killed" 'rolled-back.*before the switch'
counters_zero "2c"

# 2d. peer agent killed at the switch (after h1 may have switched): back to the old AN
stamp "2d"
job=$("$LAB" exec-bg --env FCTL_KEYMGR_TEST_HOOK=switch:hold h1 -- "${KM[@]}" rotate --all --overlap 1 "$WORK/rot.yaml")
for _ in $(seq 40); do on h1 test -e "$KS/paused-switch" && break; sleep 0.5; done
kill_agent_h2
on h1 rm -f "$KS/paused-switch" # keymgr goes on (the hold), to a peer that is gone
"$LAB" wait --timeout 60 h1 "$job" >/dev/null 2>&1
rc=$?
[ "$rc" = 3 ] || [ "$rc" = 1 ] && pass "2d-peer-killed-at-switch-not-committed (exit $rc)" || fail "2d-peer-killed-at-switch-not-committed" "exit $rc"
start_agent h2
wait_agent || fail "2d-agent-restart"
on h1 "${KM[@]}" recover "$WORK/rot.yaml" >/dev/null 2>&1 && pass "2d-recover" || fail "2d-recover"
audit_has "2d-peer-killed" 'rolled-back.*after the switch'
counters_zero "2d"

# 2e/2f. keymgr killed with -9 before the switch (rolled back) and after it (finished)
stamp "2e/2f"
for hook in install-rx:kill overlap:kill; do
	step=${hook%%:*}
	expect_rc "2-keymgr-kill9-at-$step" 137 --env FCTL_KEYMGR_TEST_HOOK=$hook
	on h1 sh -c "ls $KS/journal-*" >/dev/null 2>&1 && pass "2-kill9-at-$step-journal-left" || fail "2-kill9-at-$step-journal-left"
	on h1 "${KM[@]}" recover "$WORK/rot.yaml" >/dev/null 2>&1 && pass "2-kill9-at-$step-recovered" || fail "2-kill9-at-$step-recovered"
	on h1 sh -c "ls $KS/journal-* 2>/dev/null" | grep -q . && fail "2-kill9-at-$step-journal-closed" || pass "2-kill9-at-$step-journal-closed"
	counters_zero "2-kill9-$step"
done
audit_has "2-kill9" 'recovering.*after step overlap: finishing it'

# 2g. a clean rotation, then a compromised key: no overlap, old key marked compromised
stamp "2g"
expect_rc "2g-clean-rotation-between-faults" 0
on h1 "${KM[@]}" rotate --all --compromised "$WORK/rot.yaml" >/dev/null 2>&1 && pass "2g-compromised-rotation" || fail "2g-compromised-rotation"
audit_has "2g-compromised" '"key_state":"compromised"'

# 2h. one link by name, --json: the report; the old key is not fetched again (its check
# value was recorded at the last commit), so one KMS operation: the new key
stamp "2h"
out=$(on h1 "${KM[@]}" rotate --json --overlap 1 h1-h2.100 "$WORK/rot.yaml" 2>/dev/null)
jq -en 'input | .links | length == 1 and .[0].result == "committed" and .[0].new_version == .[0].old_version + 1 and
	.[0].kms_ops == 1 and (.[0].kcv | test("^[0-9a-f]{6}$")) and
	([.[0].steps_ms | keys[]] | contains(["prepare","install-rx","stage-tx","confirm","switch","overlap","retire"]))' \
	<<<"$out" >/dev/null && pass "2h-rotate-json-one-kms-op" || fail "2h-rotate-json-one-kms-op" "$(head -c 400 <<<"$out")"
on h1 sh -c "grep -q 'kcv [0-9a-f]\{6\} keyid [0-9a-f]\{32\}' $KS/current-h1-h2.100" &&
	pass "2h-current-record-has-kcv-and-keyid" || fail "2h-current-record-has-kcv-and-keyid"
sleep 1
stream_stop "2"
counters_zero "2-end"
for h in h1 h2; do
	on "$h" "$F" diff --host "$h" "$WORK/rot.yaml" >/dev/null 2>&1 && pass "2-$h-no-drift-after-faults" || fail "2-$h-no-drift-after-faults"
done

# 2i. a batch: two more protected VLANs (their own file keys) next to the rotated one;
# `rotate --all` takes the three through prepare..switch, waits one overlap for all,
# then retires each: every link confirmed before the first commit, 2 agent connections
# before the wait and 2 after, traffic on every VLAN on the new keys, no drift
stamp "2i batch"
(
	umask 077
	for v in 101 102; do
		openssl rand -hex 16 >"$WORK/keys/b$v.key"
		for i in 1 2 3; do openssl rand -hex 16 >"$WORK/keys/b$v.key.v$i"; done
	done
)
{
	sed -n '1,/^hosts:/p' "$WORK/rot.yaml" | sed '$d'
	for v in 101 102; do
		printf '  rot-b%s:\n    cipher: gcm-aes-128\n    icv_len: 16\n    encrypt: true\n    replay_protect: true\n    replay_window: 0\n    validate: strict\n    send_sci: true\n    port: 1\n    key: { backend: file, id: keys/b%s.key }\n    overlap: 2s\n' "$v" "$v"
	done
	sed -n '/^hosts:/,$p' "$WORK/rot.yaml"
	for v in 101 102; do
		printf '      - id: %s\n        protocol: 802.1q\n        mtu: 1468\n        macsec: rot-b%s\n        addresses:\n          h1: 10.%s.0.1/24\n          h2: 10.%s.0.2/24\n' "$v" "$v" "$v" "$v"
	done
} >"$WORK/rot-batch.yaml"
"$F" validate "$WORK/rot-batch.yaml" >"$WORK/rot-batch.validate" 2>&1 && pass "2i-batch-profile-valid" ||
	fail "2i-batch-profile-valid" "$(tail -3 "$WORK/rot-batch.validate")"
for h in h1 h2; do
	o=$(on "$h" "$F" apply -q --host "$h" "$WORK/rot-batch.yaml" 2>&1) && pass "2i-apply-$h" || fail "2i-apply-$h" "$(tail -3 <<<"$o")"
done
na=$(on h1 sh -c "wc -l <$KA")
out=$(on h1 "${KM[@]}" rotate --all --json "$WORK/rot-batch.yaml" 2>/dev/null)
# one connection per agent, kept open across phases (sa-batch); per link its own counters: 18 agent requests (2 each for the prepare dumps, install,
# stage, confirm dumps, switch, the two overlap dumps; 4 for retire); KMS: the new key,
# and the current one where no check value was recorded yet (101, 102: first rotation)
jq -en 'input | .total.links == 3 and .total.committed == 3 and .total.agent_connections == 2 and
	.total.overlap_s == 2 and .total.overlap_wait_ms > 0 and ([.links[].link] | sort == ["h1-h2.100","h1-h2.101","h1-h2.102"]) and
	all(.links[]; .agent_requests == 18) and ([.links[] | select(.link == "h1-h2.100") | .kms_ops] == [1]) and
	([.links[] | select(.link != "h1-h2.100") | .kms_ops] == [2, 2]) and .total.kms_ops == 5' \
	<<<"$out" >/dev/null && pass "2i-batch-3-links-committed-one-overlap" || fail "2i-batch-3-links-committed-one-overlap" "$(head -c 600 <<<"$out")"
order=$(on h1 sh -c "tail -n +$((na + 1)) $KA" | jq -r 'select(.action == "key-rotation" and (.result == "confirmed" or .result == "committed")) | .result' | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')
[ "$order" = "3confirmed 3committed " ] && pass "2i-all-switched-before-any-retired" || fail "2i-all-switched-before-any-retired" "$order"
for v in 101 102; do
	on h1 ping -c 2 -W 3 "10.$v.0.2" >/dev/null && pass "2i-traffic-vlan-$v-new-key" || fail "2i-traffic-vlan-$v-new-key"
done
for h in h1 h2; do
	on "$h" "$F" diff --host "$h" "$WORK/rot-batch.yaml" >/dev/null 2>&1 && pass "2i-$h-batch-rotated-is-not-drift" ||
		fail "2i-$h-batch-rotated-is-not-drift" "$(on "$h" "$F" diff --host "$h" "$WORK/rot-batch.yaml" 2>&1 | head -5)"
done
# back to the one-VLAN profile for the phases after (the extra VLANs go)
for h in h1 h2; do
	on "$h" "$F" apply -q --host "$h" "$WORK/rot.yaml" >/dev/null 2>&1 || fail "2i-$h-back-to-one-vlan"
done
for h in h1 h2; do "$LAB" kill "$h" "${AG[$h]}" >/dev/null 2>&1; done
fi

# --- 3, 4. KMS backends: PKCS#11 (SoftHSM2) in h1, KMIP (PyKMIP) on the build host --------
# The profile pins version 1 (a KMS reference must name one); keymgr on h1 rotates it to
# 2, 3, then 4 with --compromised, under a stream: the KMS's record must then say 1 and 2
# deactivated (each after its overlap) and 3 compromised, and the audit KCVs must be the
# KMS's check values. The agents' rotation records of the phases before belong to the
# file key (version ~30): they stay, and must be ignored for the new reference (they
# name their key by KEYID), or apply would look for version ~30 in the KMS.
KT=$BUILD/tests/kms/kms_tool
declare -A KENV # host -> "--env K=V ..." for lab.sh exec
# kms_tool create options of version v in phases 3 and 4: v1..v3 active; v4 pre-active
# without a date (keymgr activates it for the third rotation); v5 pre-active until an
# hour from now (a fourth rotation is refused)
kms_create_opts() {
	case $1 in
	4) ;;
	5) echo "--activation=$(($(date +%s) + 3600))" ;;
	*) echo --activate ;;
	esac
}
kms_phase() { # n backend id
	local n=$1 be=$2 id=$3 o h i extra js bad want got st base
	sed "s|key: { backend: file, id: keys/rot.key }|key: { backend: $be, id: \"$id\", version: 1 }|" \
		"$WORK/rot.yaml" >"$WORK/rot-$be.yaml"
	for h in h1 h2; do "$LAB" kill "$h" "${AG[$h]}" >/dev/null 2>&1; done
	if want 1 || want 2; then
		on h1 sh -c 'grep -l "^keyid " /var/lib/fabricctl/rotation/* 2>/dev/null' | grep -q . &&
			pass "$n-stale-record-of-another-key-present" || fail "$n-stale-record-of-another-key-present"
	fi
	for h in h1 h2; do
		o=$("$LAB" exec --timeout 300 ${KENV[$h]} "$h" -- "$F" apply -q --host "$h" "$WORK/rot-$be.yaml" 2>&1) &&
			pass "$n-apply-$be-$h" || fail "$n-apply-$be-$h" "$(tail -3 <<<"$o")"
	done
	start_agent h1
	start_agent h2
	wait_agent || fail "$n-agents"
	# the move to this key was one apply per host, one after the other: frames either
	# end sent in between were refused by the other (different keys on the same AN).
	# That is apply's window, not a rotation's; the rotations are counted from here
	base=$(counters_refused)
	echo "   refused-frame counters after the two applies: ${base:-unreadable}"
	stream_start
	sleep 1
	for i in 1 2 3; do
		extra=
		[ "$i" = 3 ] && extra=--compromised
		o=$("$LAB" exec --timeout 120 ${KENV[h1]} h1 -- "${KM[@]}" rotate --all --overlap 1 $extra "$WORK/rot-$be.yaml" 2>&1) &&
			pass "$n-$be-rotation-$i$extra" || fail "$n-$be-rotation-$i$extra" "$(tail -3 <<<"$o")"
	done
	# v5 is pre-active until an hour from now: refused, rolled back, the ends stay on v4
	o=$("$LAB" exec --timeout 120 ${KENV[h1]} h1 -- "${KM[@]}" rotate --all --overlap 1 "$WORK/rot-$be.yaml" 2>&1)
	[ $? = 1 ] && grep -q "pre-active" <<<"$o" && pass "$n-$be-not-yet-due-version-refused" ||
		fail "$n-$be-not-yet-due-version-refused" "$(tail -3 <<<"$o")"
	sleep 1
	stream_stop "$n"
	counters_zero "$n" "${base:-unknown}"
	js=$(on h1 "${KM[@]}" status --json "$WORK/rot-$be.yaml" 2>/dev/null)
	[ "$(jq '.[0].h1.version' <<<"$js")" = 4 ] && pass "$n-$be-at-version-4" || fail "$n-$be-at-version-4" "$js"
	on h1 cat "$KA" >"$WORK/keymgr-audit-$n.jsonl" 2>/dev/null
	bad=
	for v in 2 3 4; do
		want=$("$LAB" exec ${KENV[h1]} h1 -- "$KT" info "$be" "$id" "$v" 2>/dev/null | sed -n 's/^kcv=//p')
		got=$(jq -r --arg v "$v" 'select(.action == "key-rotation" and .result == "committed" and
			(.detail | test("key version [0-9]+ -> " + $v + "[^0-9]"))) | .kcv[0]' "$WORK/keymgr-audit-$n.jsonl" | tail -1)
		[ -n "$want" ] && [ "$want" = "$got" ] || bad="$bad v$v:$got/$want"
	done
	[ -z "$bad" ] && pass "$n-$be-audit-kcv-is-kms-kcv" || fail "$n-$be-audit-kcv-is-kms-kcv" "$bad"
	st=$("$LAB" exec ${KENV[h1]} h1 -- "$KT" info "$be" "$id" 3 2>&1 | sed -n 's/^state=//p')
	[ "$st" = compromised ] && pass "$n-$be-old-key-compromised-in-kms" || fail "$n-$be-old-key-compromised-in-kms" "state $st"
	for v in 1 2; do
		st=$("$LAB" exec ${KENV[h1]} h1 -- "$KT" info "$be" "$id" "$v" 2>&1 | sed -n 's/^state=//p')
		[ "$st" = deactivated ] && pass "$n-$be-v$v-deactivated-in-kms-after-overlap" ||
			fail "$n-$be-v$v-deactivated-in-kms-after-overlap" "state $st"
	done
	st=$("$LAB" exec ${KENV[h1]} h1 -- "$KT" info "$be" "$id" 4 2>&1 | sed -n 's/^state=//p')
	[ "$st" = active ] && pass "$n-$be-v4-active-in-kms" || fail "$n-$be-v4-active-in-kms" "state $st"
	[ "$(jq -s --arg be "$be" '[.[] | select(.action == "key-state" and .result == "applied" and
		.key_state == "active" and (.detail | startswith($be + ":") and contains("version 4 activated")))] | length' \
		"$WORK/keymgr-audit-$n.jsonl")" = 1 ] &&
		pass "$n-$be-v4-activated-by-keymgr-audited" || fail "$n-$be-v4-activated-by-keymgr-audited"
	st=$("$LAB" exec ${KENV[h1]} h1 -- "$KT" info "$be" "$id" 5 2>&1 | sed -n 's/^state=//p')
	[ "$st" = pre-active ] && pass "$n-$be-v5-still-pre-active" || fail "$n-$be-v5-still-pre-active" "state $st"
	[ "$(jq -s --arg be "$be" '[.[] | select(.action == "key-state" and .result == "applied" and
		.key_state == "deactivated" and (.detail | startswith($be + ":")))] | length' "$WORK/keymgr-audit-$n.jsonl")" = 2 ] &&
		pass "$n-$be-deactivations-audited" || fail "$n-$be-deactivations-audited"
	[ "$(jq -s --arg be "$be" '[.[] | select(.action == "key-state" and .result == "applied" and
		.key_state == "compromised" and (.detail | startswith($be + ":")))] | length' "$WORK/keymgr-audit-$n.jsonl")" -ge 1 ] &&
		pass "$n-$be-compromise-audited" || fail "$n-$be-compromise-audited"
	for h in h1 h2; do
		"$LAB" exec ${KENV[$h]} "$h" -- "$F" diff --host "$h" "$WORK/rot-$be.yaml" >/dev/null 2>&1 &&
			pass "$n-$h-$be-rotated-is-not-drift" || fail "$n-$h-$be-rotated-is-not-drift"
	done
	for h in h1 h2; do "$LAB" kill "$h" "${AG[$h]}" >/dev/null 2>&1; done
}

if want 3; then
	# a SoftHSM2 token made in h1's lab share, then copied into h1's RAM; h2 gets a copy
	# for its own apply
	stamp "3 pkcs11"
	P11MOD=${FCTL_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}
	if [ ! -x "$KT" ] || ! command -v softhsm2-util >/dev/null || [ ! -e "$P11MOD" ]; then
		fail "3-pkcs11-setup" "kms_tool, softhsm2-util or $P11MOD missing (apt-get install softhsm2; build tests)"
		exit 1
	fi
	ok=1
	for h in h1 h2; do
		d=$FCTL_LAB_DIR/$h/hsm
		rm -rf "$d"
		mkdir -p "$d/tokens"
		printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' "$d/tokens" >"$d/softhsm2.conf"
	done
	H1HSM=$FCTL_LAB_DIR/h1/hsm
	(umask 077; openssl rand -hex 8 >"$H1HSM/pin")
	P11ENV=(SOFTHSM2_CONF="$H1HSM/softhsm2.conf" FCTL_PKCS11_MODULE="$P11MOD" FCTL_PKCS11_PIN_FILE="$H1HSM/pin")
	env "${P11ENV[@]}" softhsm2-util --init-token --free --label fab-rot --so-pin "$(cat "$H1HSM/pin")" \
		--pin "$(cat "$H1HSM/pin")" >"$WORK/hsm-init.log" 2>&1 || ok=0
	for v in 1 2 3 4 5; do
		env "${P11ENV[@]}" "$KT" create pkcs11 "token=fab-rot;object=rot" "$v" 16 $(kms_create_opts "$v") \
			>"$WORK/hsm-v$v" 2>&1 || ok=0
	done
	cp -a "$H1HSM/tokens/." "$FCTL_LAB_DIR/h2/hsm/tokens/" && cp -p "$H1HSM/pin" "$FCTL_LAB_DIR/h2/hsm/pin" || ok=0
	# each guest works on its token from its RAM (/run): SoftHSM2 reads the token's
	# object files at every session, and over the 9p share, which has no cache, one
	# kms_tool info took 1.0 s of the guest's CPU under TCG, 0.3 s from RAM; so did each
	# of keymgr's sessions in the rotations below. The copies go with the guest.
	for h in h1 h2; do
		on "$h" sh -c 'umask 077 && mkdir -p /run/fctl-hsm && cp -a "$1/tokens" "$1/pin" /run/fctl-hsm/ &&
			printf "directories.tokendir = /run/fctl-hsm/tokens\nobjectstore.backend = file\nlog.level = ERROR\n" \
				>/run/fctl-hsm/softhsm2.conf' sh "$FCTL_LAB_DIR/$h/hsm" || ok=0
		KENV[$h]="--env SOFTHSM2_CONF=/run/fctl-hsm/softhsm2.conf --env FCTL_PKCS11_MODULE=$P11MOD --env FCTL_PKCS11_PIN_FILE=/run/fctl-hsm/pin"
	done
	[ "$ok" = 1 ] && pass "3-pkcs11-token-fab-rot-v1-v5" ||
		fail "3-pkcs11-token-fab-rot-v1-v5" "$(cat "$WORK/hsm-init.log" "$WORK"/hsm-v* | tail -3)"
	kms_phase 3 pkcs11 "token=fab-rot;object=rot"
fi

if want 4; then
	# PyKMIP on the build host's 127.0.0.1:$KMIP_PORT (TLS 1.2, client certificates), its
	# certificate for 10.0.2.100, the address the guests reach it at (lab.sh --guestfwd);
	# its PKI and database in $WORK/kmip; keys created from h1 with kms_tool (why on this
	# host: KMIP_PID's comment, at the top)
	stamp "4 kmip"
	if [ ! -x "$KT" ] || [ ! -x /usr/bin/pykmip-server ]; then
		fail "4-kmip-setup" "kms_tool or /usr/bin/pykmip-server missing (apt-get install python3-pykmip; build tests)"
		exit 1
	fi
	KD=$WORK/kmip
	rm -rf "$KD"
	mkdir -p "$KD/policies"
	(
		cd "$KD" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=rot-kmip-ca \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
		openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=${KMIP_ADDR%:*}"
		printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\n' "${KMIP_ADDR%:*}" >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile server.ext
		openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=keymgr
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 1 -extfile client.ext
		chmod 600 ./*.key
	) >"$WORK/kmip-pki.log" 2>&1
	printf '%s\n' "[server]" "hostname=127.0.0.1" "port=$KMIP_PORT" "certificate_path=$KD/server.pem" \
		"key_path=$KD/server.key" "ca_path=$KD/ca.pem" "auth_suite=TLS1.2" "policy_path=$KD/policies" \
		"enable_tls_client_auth=True" "logging_level=INFO" "database_path=$KD/pykmip.db" >"$KD/server.conf"
	for h in h1 h2; do
		KENV[$h]="--env FCTL_KMIP_SERVER=$KMIP_ADDR --env FCTL_KMIP_CA=$KD/ca.pem --env FCTL_KMIP_CERT=$KD/client.pem --env FCTL_KMIP_KEY=$KD/client.key --env FCTL_KMIP_TIMEOUT_MS=10000"
	done
	# keys created, rotated and retired over KMIP 2.0; h2 applies v1 over 1.2
	KENV[h1]+=" --env FCTL_KMIP_VERSION=2.0"
	KENV[h2]+=" --env FCTL_KMIP_VERSION=1.2"
	/usr/bin/pykmip-server -f "$KD/server.conf" -l "$KD/server.log" >"$KD/stdout" 2>&1 &
	KMIP_PID=$!
	# up once its socket listens (ss on this host, 5 times a second, at most 60 s; a
	# server that died is not waited for)
	up=0
	for _ in $(seq 300); do
		[ -n "$(ss -Hltn "sport = :$KMIP_PORT")" ] && up=1 && break
		kill -0 "$KMIP_PID" 2>/dev/null || break
		sleep 0.2
	done
	ok=$up
	for v in 1 2 3 4 5; do
		[ "$up" = 1 ] && "$LAB" exec --timeout 120 ${KENV[h1]} h1 -- "$KT" create kmip rot "$v" 16 \
			$(kms_create_opts "$v") >"$WORK/kmip-v$v" 2>&1 || ok=0
	done
	[ "$ok" = 1 ] && pass "4-kmip-server-up-rot-v1-v5" ||
		fail "4-kmip-server-up-rot-v1-v5" "up $up (127.0.0.1:$KMIP_PORT, pid $KMIP_PID): $(cat "$WORK"/kmip-v* "$KD/stdout" "$KD/server.log" 2>/dev/null | tail -3)"
	[ "$ok" = 1 ] && kms_phase 4 kmip rot
	suite_cleanup # stops PyKMIP
fi

if want 5; then
	# PN use as the trigger, on an XPN cipher (64-bit PNs read from the dump): the
	# cryptoperiod is an hour, the threshold 2000 packets; at 200 packets/s each way the
	# TX PN of either end crosses it in about 10 s, and watch checks PN use at least
	# every 10 s. Two rotations under the stream, both triggered by PN use.
	stamp "5 pn threshold, xpn"
	sed -e 's/cipher: gcm-aes-128/cipher: gcm-aes-xpn-128/' -e 's/cryptoperiod: 5s/cryptoperiod: 1h/' \
		-e 's/pn_rekey_threshold: 0xC0000000/pn_rekey_threshold: 2000/' "$WORK/rot.yaml" >"$WORK/rot-xpn.yaml"
	for h in h1 h2; do "$LAB" kill "$h" "${AG[$h]}" >/dev/null 2>&1; done
	for h in h1 h2; do
		o=$(on "$h" "$F" apply -q --host "$h" "$WORK/rot-xpn.yaml" 2>&1) &&
			pass "5-apply-xpn-$h" || fail "5-apply-xpn-$h" "$(tail -3 <<<"$o")"
	done
	for h in h1 h2; do
		c=$(on "$h" ip -j macsec show ms100 2>/dev/null | jq -r '.[0].cipher_suite')
		[ "$c" = GCM-AES-XPN-128 ] && pass "5-$h-kernel-runs-gcm-aes-xpn-128" ||
			fail "5-$h-kernel-runs-gcm-aes-xpn-128" "cipher_suite '$c'"
		o=$(on "$h" "$F" diff --host "$h" "$WORK/rot-xpn.yaml" 2>&1) && pass "5-$h-xpn-applied-no-drift" ||
			fail "5-$h-xpn-applied-no-drift" "$(head -c 1500 <<<"$o")"
	done
	start_agent h1
	start_agent h2
	wait_agent || fail "5-agents"
	base=$(counters_refused)
	echo "   refused-frame counters after the two applies: ${base:-unreadable}"
	an0=$(on h1 "${KM[@]}" status --json "$WORK/rot-xpn.yaml" 2>/dev/null | jq '.[0].h1.encoding_sa')
	trig0=$(on h1 sh -c "cat $KA 2>/dev/null | grep -c '\"result\":\"triggered\"'")
	stream_start
	o=$("$LAB" exec --timeout 180 h1 -- "${KM[@]}" watch --count 2 "$WORK/rot-xpn.yaml" 2>&1) &&
		pass "5-watch-two-rotations" || fail "5-watch-two-rotations" "$(tail -3 <<<"$o")"
	sleep 1
	stream_stop 5
	counters_zero 5 "${base:-unknown}"
	on h1 cat "$KA" >"$WORK/keymgr-audit-5.jsonl" 2>/dev/null
	why=$(tail -n +$((${trig0:-0} + 1)) <(jq -r 'select(.action == "key-rotation" and .result == "triggered") | .detail' \
		"$WORK/keymgr-audit-5.jsonl") | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	[ "$why" = " 2 pn-threshold;" ] && pass "5-both-triggered-by-pn-use" || fail "5-both-triggered-by-pn-use" "triggers:$why"
	an1=$(on h1 "${KM[@]}" status --json "$WORK/rot-xpn.yaml" 2>/dev/null | jq '.[0].h1.encoding_sa')
	[ -n "$an0" ] && [ -n "$an1" ] && [ "$an1" = $(((an0 + 2) % 4)) ] &&
		pass "5-two-ans-on" || fail "5-two-ans-on" "encoding sa $an0 -> $an1"
	for h in h1 h2; do
		c=$(on "$h" ip -j macsec show ms100 2>/dev/null | jq -r '.[0].cipher_suite')
		o=$(on "$h" "$F" diff --host "$h" "$WORK/rot-xpn.yaml" 2>&1) && [ "$c" = GCM-AES-XPN-128 ] &&
			pass "5-$h-still-xpn-no-drift" || fail "5-$h-still-xpn-no-drift" "cipher_suite '$c'; $(head -c 1500 <<<"$o")"
		# and apply agrees: the SSCIs it reads back equal the profile's, the missing salt
		# (the kernel does not dump it) is no change
		o=$(on "$h" "$F" apply --json --host "$h" "$WORK/rot-xpn.yaml" 2>&1)
		[ "$(jq -r '"\(.result) \(.netlink_writes) \(.ops_planned)"' <<<"$o" 2>/dev/null)" = "unchanged 0 0" ] &&
			pass "5-$h-xpn-reapply-zero-writes" || fail "5-$h-xpn-reapply-zero-writes" "$(head -c 600 <<<"$o")"
	done
	on h1 ping -c 2 -W 3 10.100.0.2 >/dev/null && pass "5-ping-on-the-new-key" || fail "5-ping-on-the-new-key"
	# all-or-nothing on XPN: a key change fails at its last op; the rollback re-installs
	# the rotated SAs, whose salt the kernel never dumps (derived again from their KEYID)
	sed 's|key: { backend: file, id: keys/rot.key }|key: { backend: file, id: keys/rot.key.v60 }|' \
		"$WORK/rot-xpn.yaml" >"$WORK/rot-xpn-k60.yaml"
	n=$(on h1 "$F" plan --json --host h1 "$WORK/rot-xpn-k60.yaml" 2>/dev/null | jq '.ops | length')
	o=$("$LAB" exec --timeout 120 --env "FCTL_TEST_FAIL_AT_OP=$((${n:-1} - 1))" h1 -- \
		"$F" apply --json --host h1 "$WORK/rot-xpn-k60.yaml" 2>"$WORK/xpn-k60.err")
	# the JSON alone: the report on stderr would come before or after it, as it lands
	[ "$(jq -r '"\(.result) \(.restored_exactly)"' <<<"$o" 2>/dev/null)" = "rolled-back true" ] &&
		on h1 "$F" diff --host h1 "$WORK/rot-xpn.yaml" >/dev/null 2>&1 &&
		pass "5-xpn-key-change-fails-late-rolls-back-exactly" ||
		fail "5-xpn-key-change-fails-late-rolls-back-exactly" "$n ops: $(jq -c '{result,restored_exactly,failed_op,error}' <<<"$o" 2>/dev/null || head -c 600 <<<"$o") $(head -c 300 "$WORK/xpn-k60.err")"
	on h1 ping -c 2 -W 3 10.100.0.2 >/dev/null && pass "5-ping-after-xpn-rollback" || fail "5-ping-after-xpn-rollback"
	for h in h1 h2; do "$LAB" kill "$h" "${AG[$h]}" >/dev/null 2>&1; done
fi

stamp "end"
echo "   rotations committed on h1: $(committed); keymgr audit: $(audit_count committed) committed, $(audit_count rolled-back) rolled back"
