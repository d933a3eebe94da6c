#!/bin/bash
# SPDX-License-Identifier: MIT
# Nonce safety on real kernels (docs/keys-and-pn.md): no (SAK, SCI, PN) is sent twice, no
# receiver accepts a frame twice, and where fabricctl cannot know a key's packet numbers
# it withholds the key and sends nothing in clear. Two lab VMs, the lab profile (GCM-AES-128,
# replay protection, window 0), a file key; the wire read on h1's carrier (eth0.100) by
# tests/lab/pn_sniff.py, which records the SecTAG (SCI, PN, AN) of every frame h1 sends
# and receives.
#
#  a. key A; a new profile version with key B on both ends; `rollback --to 1` on h1, then
#     on h2 (key A again): h1 continues key A where it stopped (its TX PN), no (SCI, PN)
#     that key A sent before is sent again, the link carries traffic
#  b. the frames of key A captured before the rollback, sent again on the wire: h2
#     refuses every one (InPktsLate grows by their number)
#  c. teardown and apply on h1 alone: key A continues, the link carries traffic at once
#  d. the links removed behind fabricctl (what a reboot does to the kernel; the state
#     directory stays): the apply withholds both SAs of key A (exit 6, sas_withheld 2),
#     the SecY protects, h1 sends nothing on the wire, neither MACsec nor clear; a
#     profile with key C on both ends brings the link back
#  e. over all of it: no (SCI, PN) repeats under key A
#  f. h1's key change C -> D killed with -9 after op 0 and 2 (under a stream of pings)
#     and 3 (FCTL_TEST_CRASH_AFTER_OP, a test build's hook), then `recover`: key C
#     continues where it stopped, h2 (still on C) takes the frames, the ends' SAs agree,
#     no (SCI, PN) repeats under key C
#  g. h1's TX SA deleted by hand, then the same version applied (drift repair): the TX
#     SA withheld (exit 6), nothing on the wire; a new key (E) on both ends brings it back
#  h. agents and fabricctl-keymgr: a rotation held at the switch, h2's agent stopped, h1
#     switched to the new key, the rotation rolled back; h2's agent killed and started
#     again, `keymgr recover`: key R continues past its last PN; a second rotation to the
#     same version continues the new key, no (SCI, PN) repeats under either key
#  i. a power cycle of h2 (`lab.sh reboot h2`) with its state directory on its lab share:
#     the apply after boot withholds both SAs (exit 6), h1's pre-reboot frames replayed
#     are refused, h2 sends nothing, no repeat of h2's (SCI, PN); a new key (G) on both
#     ends brings the link back with nothing in clear
# After each: `ip macsec show` on both ends (agree) and a counter read after traffic is
# read until it settles (settle: a deadline, not a sleep).
#
# Prints PASS/FAIL per check and "nonce_lab: N passed, M failed"; exits non-zero on any
# failure, a lab that cannot start included (never skips). Needs root.
set -uo pipefail

SUITE=nonce_lab
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-nonce
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
SNIFF=$ROOT/tests/lab/pn_sniff.py
T0=$SECONDS
stamp() { echo "   [$((SECONDS - T0)) s] $1"; } # where the suite's time goes, in CI's log

ms() { on "$1" ip -j -s macsec show ms100; } # host
txpn() { ms "$1" | jq -r '.[0].sa_list[0].pn // .[0].tx_sc.sa_list[0].pn // empty'; }
ping_ok() { on h1 ping -c 4 -i 0.3 -W 2 10.100.0.2 >/dev/null; }
late() { ms h2 | jq '[.[0].rx_sc[]?.InPktsLate] | add // 0'; }
rx_ok() { ms h2 | jq '[.[0].rx_sc[]?.InPktsOK] | add // 0'; }

# sniff_on HOST NAME CMD...: CMD (here) while the sniffer records HOST's carrier into HOST's
# /run/NAME, for SNIFF_MAX seconds at most (default 60); sniff NAME CMD...: on h1
sniff_on() {
	local h=$1 name=$2 max=${SNIFF_MAX:-60} job
	shift 2
	on "$h" rm -f /run/sniff.ready /run/sniff.stop
	job=$("$LAB" exec-bg --timeout $((max + 30)) "$h" -- python3 "$SNIFF" capture eth0.100 "/run/$name" \
		/run/sniff.ready /run/sniff.stop "$max") || return 1
	on "$h" sh -c 'for i in $(seq 300); do [ -e /run/sniff.ready ] && exit 0; sleep 0.1; done; exit 1' ||
		{ echo "   the sniffer did not start"; return 1; }
	"$@"
	local rc=$?
	on "$h" touch /run/sniff.stop
	"$LAB" wait --timeout $((max + 30)) "$h" "$job" >/dev/null
	return $rc
}
sniff() { sniff_on h1 "$@"; }
frames_out() { on "${2:-h1}" sh -c "grep -c '^out ' /run/$1 || true"; } # capture name [host]
clear_out() { on "${2:-h1}" sh -c "grep -c '^clear-out' /run/$1 || true"; }
max_pn() { on h1 sh -c "awk '\$1 == \"out\" && \$3 > m { m = \$3 } END { print m + 0 }' /run/$1"; }

# settle FUNC MIN: FUNC's value once it is at least MIN, read again and again for 15 s
# at most (a counter read right after traffic: the frames cross qemu's wire and the
# peer's softirq after the sender returns); the last value read when the deadline passed
settle() {
	local v end=$((SECONDS + 15))
	while :; do
		v=$($1)
		[ "${v:-0}" -ge "$2" ] || [ $SECONDS -ge $end ] && break
		sleep 0.2
	done
	echo "${v:-0}"
}
# flows NAME: a ping over the SecY gets through and h2 counts its 4 frames as OK, none late
flows() {
	local ok0 ok1 l0 l1
	ok0=$(rx_ok)
	l0=$(late)
	ping_ok || { fail "$1" "the ping did not get through"; return 1; }
	ok1=$(settle rx_ok $((ok0 + 4)))
	l1=$(late)
	[ "$ok1" -ge $((ok0 + 4)) ] && [ "$l1" = "$l0" ] && pass "$1" ||
		fail "$1" "h2 InPktsOK $ok0 -> $ok1, InPktsLate $l0 -> $l1"
}
# one_way TX-JSON RX-JSON: the sender's encoding TX SA is active and the receiver has an
# active RX SA on that AN, for the sender's SCI, with the same KEYID, that accepts the
# sender's next PN (its lowest acceptable PN is not above it)
one_way() {
	jq -en --argjson t "$1" --argjson r "$2" '$t[0] as $s | [($s.sa_list // $s.tx_sc.sa_list)[] |
		select(.an == $s.encoding_sa and .active)] | .[0] as $tx | $tx != null and
		([$r[0].rx_sc[]? | select(.sci == $s.sci) | .sa_list[] |
		  select(.an == $tx.an and .active and .key == $tx.key and .pn <= $tx.pn)] | length == 1)' >/dev/null
}
# agree NAME: `ip macsec show` on both ends: each end's TX SA is one the other accepts.
# Each receiver is read before its sender: a frame sent between the two reads then
# moves only the sender's PN, which the check allows (a receiver read after the sender
# could have taken a frame the sender had not yet sent at its read)
agree() {
	local m1 m2 m2a
	m2a=$(ms h2)
	m1=$(ms h1)
	m2=$(ms h2)
	for m in "$m1" "$m2"; do
		jq -r '.[0] | "   \(.ifname) sci \(.sci) encoding an \(.encoding_sa): tx " +
			([(.sa_list // .tx_sc.sa_list)[]? | "an \(.an) pn \(.pn) key \(.key[0:8])"] | join(", ")) + "; rx " +
			([.rx_sc[]?.sa_list[]? | "an \(.an) pn \(.pn) key \(.key[0:8])"] | join(", "))' <<<"$m"
	done
	one_way "$m1" "$m2a" && one_way "$m2" "$m1" && pass "$1" || fail "$1" "the ends' SAs do not match (above)"
}
# withheld NAME HOST N ARGS...: `fabricctl apply --json ARGS` on HOST exits 6, N SAs withheld
withheld() {
	local name=$1 h=$2 want=$3 out rc
	shift 3
	out=$(on "$h" "$F" apply --json "$@")
	rc=$?
	[ $rc = 6 ] && [ "$(jq -r '"\(.result) \(.sas_withheld)"' <<<"$out")" = "withheld $want" ] &&
		pass "$name" || fail "$name" "exit $rc $(jq -c '{result,sas_withheld,withheld}' <<<"$out")"
}
# bare NAME HOST [rx]: HOST's SecY protects and has no TX SA (with rx: and no RX SA either)
bare() {
	local m sas='.[0].sa_list[]?, .[0].tx_sc.sa_list[]?'
	[ "${3:-}" = rx ] && sas="$sas, .[0].rx_sc[]?.sa_list[]?"
	m=$(ms "$2")
	[ "$(jq -r '.[0].protect' <<<"$m")" = true ] && [ "$(jq "[$sas] | length" <<<"$m")" = 0 ] &&
		pass "$1" || fail "$1" "$(jq -c '.[0] | {protect, sa_list, rx_sc}' <<<"$m" | head -c 400)"
}

# no_repeats NAME [--in] [--an N] CAPTURE...: no (SCI, PN) twice across h1's captures
no_repeats() {
	local name=$1 out rc
	shift
	out=$(on h1 python3 "$SNIFF" repeats "$@")
	rc=$?
	echo "   $name: $(tail -1 <<<"$out")"
	[ $rc = 0 ] && pass "$name" || fail "$name" "$out"
}

[ -x "$F" ] || { fail "build" "$F is missing: build first"; exit 1; }
"$LAB" up --hosts 2 || { fail "lab-up" "the lab did not start"; exit 1; }
pass "lab-up"

WORK=$BUILD/lab-nonce-work-${FCTL_LAB_DIR##*/}
rm -rf "$WORK"
mkdir -p "$WORK/keys"
chmod 700 "$WORK/keys"
( umask 077; for k in a b c d e f g; do openssl rand -hex 16 >"$WORK/keys/$k.key"; done )
# versions 1 (key A), 2 (key B), ... 7 (key G) of the lab profile
for v in 1:a 2:b 3:c 4:d 5:e 6:f 7:g; do
	sed -e "s|^  version: 1$|  version: ${v%%:*}|" \
		-e "s|key: { backend: file, id: keys/lab-pair.key }|key: { backend: file, id: keys/${v#*:}.key }|" \
		"$ROOT/profiles/lab-pair.yaml" >"$WORK/v${v%%:*}.yaml"
	grep -q "keys/${v#*:}.key" "$WORK/v${v%%:*}.yaml" || { fail "profiles" "v${v%%:*}: the key line was not found"; exit 1; }
done

both() { on h1 "$F" "$@" && on h2 "$F" "$@"; }

# --- a. a key used before, back by rollback -------------------------------------
stamp "a"
check "a-apply-v1" both apply -q "$WORK/v1.yaml"
check "a-ping-key-a" sniff capA1 ping_ok
pn_a1=$(max_pn capA1)
n_a1=$(frames_out capA1)
[ "$n_a1" -gt 0 ] && pass "a-frames-captured" || fail "a-frames-captured" "no MACsec frame seen"
check "a-apply-v2-key-b" both apply -q "$WORK/v2.yaml"
check "a-ping-key-b" ping_ok
on h1 "$F" rollback -q --to 1
rc=$?
[ $rc = 0 ] && pass "a-rollback-h1" || fail "a-rollback-h1" "exit $rc"
on h2 "$F" rollback -q --to 1
rc=$?
[ $rc = 0 ] && pass "a-rollback-h2" || fail "a-rollback-h2" "exit $rc"
tx=$(txpn h1)
[ -n "$tx" ] && [ "$tx" -gt "$pn_a1" ] && pass "a-key-a-continues-past-its-last-pn" ||
	fail "a-key-a-continues-past-its-last-pn" "h1 TX PN now '$tx', key A sent up to $pn_a1"
check "a-ping-key-a-again" sniff capA2 ping_ok

# --- b. the frames of key A, replayed ---------------------------------------------
stamp "b"
l0=$(late)
ok0=$(rx_ok)
n=$(on h1 python3 "$SNIFF" replay eth0.100 /run/capA1.raw)
# the frames cross qemu's wire and h2's softirq after the sender returns: the counter
# is read until it has them all (settle's deadline; CI once read 5 of 6 at once)
l1=$(settle late $((l0 + ${n:-0})))
ok1=$(rx_ok)
echo "   replayed $n frames of key A: h2 InPktsLate $l0 -> $l1, InPktsOK $ok0 -> $ok1"
[ "${n:-0}" -gt 0 ] && [ $((l1 - l0)) -ge "$n" ] && pass "b-replays-refused" ||
	fail "b-replays-refused" "replayed $n, InPktsLate $l0 -> $l1"

# --- c. one end torn down and applied again ------------------------------------------
stamp "c"
check "c-teardown-h1" on h1 "$F" teardown -q
check "c-apply-h1" on h1 "$F" apply -q "$WORK/v1.yaml"
check "c-ping-after-one-sided-reapply" sniff capA3 ping_ok

# --- d. the kernel's links gone behind fabricctl (a reboot) ---------------------------
stamp "d"
on h1 ip link del eth0.100
withheld "d-withheld-after-reboot" h1 2 "$WORK/v1.yaml"
bare "d-secy-protects-with-no-tx-sa" h1
sniff capD on h1 ping -c 4 -i 0.3 -W 1 10.100.0.2 >/dev/null
[ $? != 0 ] && pass "d-no-traffic-while-withheld" || fail "d-no-traffic-while-withheld" "ping got through"
[ "$(frames_out capD)" = 0 ] && [ "$(clear_out capD)" = 0 ] && pass "d-nothing-on-the-wire" ||
	fail "d-nothing-on-the-wire" "MACsec $(frames_out capD), clear $(clear_out capD) frames sent"
check "d-new-key-on-both-ends" both apply -q "$WORK/v3.yaml"
check "d-ping-with-key-c" ping_ok

# --- e. no repeats under key A -----------------------------------------------------
stamp "e"
no_repeats "e-no-sci-pn-repeats-under-key-a" /run/capA1 /run/capA2 /run/capA3

# --- f. kill -9 of an apply at several moments, then `recover` ------------------------
stamp "f"
# Both ends on key C (v3). h1's key change to D (v4) is four ops (checked below); the
# apply is killed after op 0 (key C's TX SA deleted), after op 2 (key D's RX SA added)
# and after op 3 (all of key D in, nothing committed), and `recover` brings key C back
# each time. h2 stays on key C, with replay protection and window 0: it takes h1's
# frames only if key C continues past the PNs it sent.
ops=$(on h1 "$F" plan --json "$WORK/v4.yaml" | jq -r '[.ops[] | .op] | join(" ")')
[ "$ops" = "delete-txsa delete-rxsa add-rxsa add-txsa" ] && pass "f-key-change-is-four-sa-ops" ||
	fail "f-key-change-is-four-sa-ops" "the plan is '$ops'"
# The apply reads the kernel's state (its journal's "before", PNs included) some time
# before op 0 deletes key C's TX SA: a stream of pings (100/s) runs from before the apply
# until it was killed, so key C sends frames in between, which a recovery that put back
# the PN read at the start would number again. Not at op 3: key D's TX SA is in and
# active from op 3 until the recovery, and its frames (same SCI, same AN, PNs from 1)
# cannot be told from key C's on the wire
stream() { # start | stop
	if [ "$1" = start ]; then
		local p0 end=$((SECONDS + 20))
		p0=$(txpn h1)
		PJ=$("$LAB" exec-bg --timeout 60 h1 -- ping -q -i 0.01 -w 40 10.100.0.2)
		until [ "$(txpn h1)" -ge $((${p0:-0} + 20)) ] || [ $SECONDS -ge $end ]; do sleep 0.1; done
	else
		"$LAB" kill h1 "$PJ" >/dev/null 2>&1
		"$LAB" wait --timeout 30 h1 "$PJ" >/dev/null 2>&1
	fi
}
crash_recover() { # op [stream]
	local rc out
	[ -z "${2:-}" ] || stream start
	"$LAB" exec --env "FCTL_TEST_CRASH_AFTER_OP=$1" h1 -- "$F" apply -q "$WORK/v4.yaml" >/dev/null 2>&1
	rc=$?
	[ -z "${2:-}" ] || stream stop
	[ $rc = 137 ] && pass "f-killed-after-op-$1" || fail "f-killed-after-op-$1" "exit $rc, expected 137 (SIGKILL)"
	out=$(on h1 "$F" recover --json)
	rc=$?
	[ $rc = 0 ] && [ "$(jq -r .recovered <<<"$out")" = true ] && pass "f-recover-after-op-$1" ||
		fail "f-recover-after-op-$1" "exit $rc $(jq -c '{recovered,restored_exactly,sas_withheld,error}' <<<"$out")"
	agree "f-ends-agree-after-op-$1"
	flows "f-traffic-after-op-$1"
}
f_all() { ping_ok; crash_recover 0 stream; crash_recover 2 stream; crash_recover 3; true; }
SNIFF_MAX=120 sniff capF f_all
n=$(frames_out capF)
[ "$n" -gt 0 ] && [ "$(clear_out capF)" = 0 ] && pass "f-key-c-on-the-wire-nothing-in-clear" ||
	fail "f-key-c-on-the-wire-nothing-in-clear" "MACsec $n, clear $(clear_out capF) frames"
no_repeats "f-no-sci-pn-repeats-under-key-c" /run/capF

# --- g. the TX SA removed by hand, then drift repair -------------------------------------
stamp "g"
# what an operator's `ip macsec del` does: the key's last PN is known to nobody. The
# repair (an apply of the same version, as the agent's drift repair runs it) must not put
# key C back at PN 1: it withholds the TX SA (exit 6), h1 sends nothing, neither MACsec
# nor clear; the documented recovery, a new key version on both ends (E, v5), brings the
# link back
on h1 sh -c 'ip macsec set ms100 tx sa 0 off && ip macsec del ms100 tx sa 0'
withheld "g-repair-withholds-the-tx-sa" h1 1 "$WORK/v3.yaml"
bare "g-secy-protects-with-no-tx-sa" h1
sniff capG on h1 ping -c 3 -i 0.3 -W 1 10.100.0.2 >/dev/null
[ $? != 0 ] && [ "$(frames_out capG)" = 0 ] && [ "$(clear_out capG)" = 0 ] && pass "g-nothing-on-the-wire" ||
	fail "g-nothing-on-the-wire" "MACsec $(frames_out capG), clear $(clear_out capG) frames sent"
no_repeats "g-no-sci-pn-repeats-under-key-c" /run/capF /run/capG
check "g-new-key-on-both-ends" both apply -q "$WORK/v5.yaml"
agree "g-ends-agree-with-key-e"
sniff capG2 flows "g-traffic-with-key-e"
[ "$(clear_out capG2)" = 0 ] && pass "g-recovery-nothing-in-clear" || fail "g-recovery-nothing-in-clear" "$(clear_out capG2) clear frames"

# --- h. a keymgr rotation rolled back, h2's agent stopped and restarted ----------------
stamp "h"
# Agents on both hosts (mutual TLS on the untagged wire), fabricctl-keymgr on h1, the
# rotation profile (key R, versions in keys/rot.key.vN). Pings run h1 -> h2 throughout.
# keymgr holds at the switch; h2's agent is stopped (SIGSTOP: the kernel goes on
# sending, the agent answers nothing); keymgr switches h1 to the new key (AN 1), waits
# out h2, rolls back: h1 back on key R (AN 0), the new SAs retired. h2's agent is killed
# and started again, `keymgr recover` finishes the rollback. Then: key R continued past
# the PNs it had sent; a second rotation to the same new version continues that key
# where the rolled-back one left it, so no (SCI, PN) repeats under it.
K=$BUILD/keymgr/fabricctl-keymgr
[ -x "$K" ] || fail "h-keymgr-built" "$K is missing"
"$ROOT/scripts/pki.sh" "$WORK/pki" h1=10.9.12.1 h2=10.9.12.2 >/dev/null || fail "h-pki"
chmod 644 "$WORK"/pki/*.key # guests read them as root over 9p; this tree is a test tree
( umask 077; for v in "" .v1 .v2 .v3; do openssl rand -hex 16 >"$WORK/keys/rot.key$v"; done )
cp "$ROOT/tests/lab/profiles/lab-pair-rotation.yaml" "$WORK/rot.yaml"
ID=$WORK/pki
KS=/var/lib/fabricctl/keymgr
KM0=("$K" --state-dir "$KS" --audit-log /var/lib/fabricctl/keymgr-audit.log
	--cert "$ID/client-key-custodian.crt" --key "$ID/client-key-custodian.key" --ca "$ID/ca.crt")
KM=("${KM0[@]}" --timeout 5)
declare -A AG=()
start_agent() {
	AG[$1]=$("$LAB" exec-bg "$1" -- "$F" agent --host "$1" --listen 0.0.0.0:7443 \
		--cert "$ID/server-$1.crt" --key "$ID/server-$1.key" --ca "$ID/ca.crt" \
		--audit-log /var/lib/fabricctl/agent-audit.log)
}
stop_agent() {
	[ -n "${AG[$1]:-}" ] || return 0
	"$LAB" kill "$1" "${AG[$1]}" >/dev/null 2>&1
	"$LAB" wait --timeout 30 "$1" "${AG[$1]}" >/dev/null 2>&1
	AG[$1]=
}
suite_cleanup() { stop_agent h1; stop_agent h2; }
wait_agents() {
	local end=$((SECONDS + 30))
	until on h1 "${KM[@]}" status "$WORK/rot.yaml" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.5
	done
}
on h1 ip addr add 10.9.12.1/24 dev eth0
on h2 ip addr add 10.9.12.2/24 dev eth0
check "h-apply-rotation-profile" both apply -q "$WORK/rot.yaml"
start_agent h1
start_agent h2
check "h-agents-answer" wait_agents
h_rollback() {
	local pj job rc end out
	pj=$("$LAB" exec-bg --timeout 150 h1 -- ping -q -i 0.1 -W 1 -w 120 10.100.0.2)
	job=$("$LAB" exec-bg --timeout 150 --env FCTL_KEYMGR_TEST_HOOK=switch:hold h1 -- \
		"${KM0[@]}" --timeout 10 rotate --all --overlap 1 "$WORK/rot.yaml")
	end=$((SECONDS + 60))
	until on h1 test -e "$KS/paused-switch"; do
		[ $SECONDS -lt $end ] || { fail "h-keymgr-at-the-switch" "never paused"; break; }
		sleep 0.3
	done
	on h2 sh -c 'kill -STOP $(pidof fabricctl)'
	on h1 rm -f "$KS/paused-switch"
	# h1 switched and sent 5 frames of the new key while keymgr waits for h2 (its
	# --timeout, 10 s): then h2's agent dies, keymgr's request fails and it rolls back
	end=$((SECONDS + 30))
	until ms h1 | jq -e '.[0] | .encoding_sa == 1 and ([.sa_list[] | select(.an == 1)][0].pn >= 6)' >/dev/null; do
		[ $SECONDS -lt $end ] || { fail "h-h1-switched" "h1 did not send on the new key"; break; }
		sleep 0.2
	done
	on h2 sh -c 'kill -KILL $(pidof fabricctl)'
	out=$("$LAB" wait --timeout 150 h1 "$job" 2>&1)
	rc=$?
	[ $rc = 3 ] || [ $rc = 1 ] && pass "h-rotation-not-committed (exit $rc)" || fail "h-rotation-not-committed" "exit $rc: $(tail -3 <<<"$out")"
	"$LAB" wait --timeout 30 h2 "${AG[h2]}" >/dev/null 2>&1
	start_agent h2
	check "h-agent-restarted" wait_agents
	out=$(on h1 "${KM[@]}" recover "$WORK/rot.yaml" 2>&1)
	rc=$?
	[ $rc = 0 ] && pass "h-recover-finishes-the-rollback" || fail "h-recover-finishes-the-rollback" "exit $rc: $(tail -3 <<<"$out")"
	on h1 sh -c "grep -q 'rolled-back' /var/lib/fabricctl/keymgr-audit.log" && pass "h-rollback-audited" ||
		fail "h-rollback-audited" "no rolled-back record"
	flows "h-traffic-on-key-r-after-rollback"
	"$LAB" kill h1 "$pj" >/dev/null 2>&1
	"$LAB" wait --timeout 30 h1 "$pj" >/dev/null 2>&1
	true
}
SNIFF_MAX=150 sniff capH1 h_rollback
m=$(ms h1)
[ "$(jq -r '.[0].encoding_sa' <<<"$m")" = 0 ] && pass "h-h1-back-on-an-0" || fail "h-h1-back-on-an-0" "encoding SA $(jq -r '.[0].encoding_sa' <<<"$m")"
agree "h-ends-agree-after-rollback"
# on the wire, in order: key R (AN 0) up to PN p0, the new key (AN 1), key R again from p1
read -r n1 p0 p1 < <(on h1 awk '$1 == "out" && $4 == 1 { n1++; next }
	$1 == "out" && $4 == 0 { if (n1) { if (!p1) p1 = $3 } else p0 = $3 }
	END { print n1 + 0, p0 + 0, p1 + 0 }' /run/capH1)
echo "   h1 on the wire: key R to PN $p0, $n1 frames of the new key (AN 1), key R again from PN $p1"
[ "$n1" -gt 0 ] && pass "h-new-key-carried-frames-before-the-rollback" || fail "h-new-key-carried-frames-before-the-rollback" "none seen"
[ "$p1" -gt "$p0" ] && pass "h-key-r-continues-past-its-last-pn" || fail "h-key-r-continues-past-its-last-pn" "PN $p0 then $p1"
[ "$(clear_out capH1)" = 0 ] && pass "h-nothing-in-clear" || fail "h-nothing-in-clear" "$(clear_out capH1) clear frames"
h_again() {
	local out rc
	out=$(on h1 "${KM[@]}" rotate --all --json --overlap 1 "$WORK/rot.yaml" 2>&1)
	rc=$?
	[ $rc = 0 ] && pass "h-second-rotation-commits" || fail "h-second-rotation-commits" "exit $rc: $(tail -c 300 <<<"$out")"
	flows "h-traffic-on-the-new-key"
}
SNIFF_MAX=90 sniff capH2 h_again
m=$(ms h1)
[ "$(jq -r '.[0].encoding_sa' <<<"$m")" = 1 ] && pass "h-h1-on-an-1" || fail "h-h1-on-an-1" "encoding SA $(jq -r '.[0].encoding_sa' <<<"$m")"
agree "h-ends-agree-after-second-rotation"
read -r q0 q1 < <(on h1 sh -c "awk '\$1 == \"out\" && \$4 == 1 && \$3 > m { m = \$3 } END { print m + 0 }' /run/capH1;
	awk '\$1 == \"out\" && \$4 == 1 && (!m || \$3 < m) { m = \$3 } END { print m + 0 }' /run/capH2" | tr '\n' ' ')
echo "   the new key (AN 1): to PN $q0 before the rollback, from PN $q1 in the second rotation"
[ "$q1" -gt "$q0" ] && pass "h-new-key-continues-where-it-stopped" || fail "h-new-key-continues-where-it-stopped" "PN $q0, then from $q1"
no_repeats "h-no-sci-pn-repeats-under-the-new-key" --an 1 /run/capH1 /run/capH2
no_repeats "h-no-sci-pn-repeats-under-key-r" --an 0 /run/capH1 /run/capH2
stop_agent h1
stop_agent h2

# --- i. a power cycle of h2, its state directory kept on its share -------------------
stamp "i"
# h2's state directory moves to its lab share (kept across `lab.sh reboot`; the guest's
# /var/lib/fabricctl is a tmpfs). After the reboot, the apply that a boot unit would run
# withholds key F's SAs (exit 6); h1's frames of key F captured before the reboot and
# sent again are refused; h2 sends nothing; a new key on both ends (G) brings it back.
S2=$FCTL_LAB_DIR/h2/fabricctl-state
in_from_h2() { on h1 sh -c "grep -c '^in 525400fa02000001 ' /run/$1 || true"; }
clear_in() { on h1 sh -c "grep -c '^clear-in' /run/$1 || true"; }
refused() { ms h2 | jq '[.[0].rx_sc[]? | .InPktsNotUsingSA + .InPktsLate + .InPktsNotValid + .InPktsInvalid] + [.[0].InPktsNoSCI, .[0].InPktsUnknownSCI] | add // 0'; }
check "i-teardown-h2" on h2 "$F" teardown -q
check "i-apply-h1-key-f" on h1 "$F" apply -q "$WORK/v6.yaml"
# captured from h2's first frame of key F on: every PN it sent under it is in capI1
i_start() {
	check "i-apply-h2-state-on-share" on h2 "$F" apply -q --state-dir "$S2" "$WORK/v6.yaml"
	flows "i-traffic-with-key-f"
}
sniff capI1 i_start
[ "$(in_from_h2 capI1)" -gt 0 ] && pass "i-h2-frames-captured" || fail "i-h2-frames-captured" "none from h2"
check "i-power-cycle-h2" "$LAB" reboot h2
on h2 ip link show ms100 >/dev/null 2>&1 && fail "i-h2-booted-without-its-links" "ms100 is there" ||
	pass "i-h2-booted-without-its-links"
# read on h1's wire from before h2's first apply after the boot: whatever h2 sends
# under key F from then on is in capI2
i_after() {
	local r0 r1 ok0 ok1 n
	withheld "i-withheld-after-power-cycle" h2 2 --state-dir "$S2" "$WORK/v6.yaml"
	bare "i-secy-protects-with-no-sa" h2 rx
	r0=$(refused)
	ok0=$(rx_ok)
	n=$(on h1 python3 "$SNIFF" replay eth0.100 /run/capI1.raw)
	r1=$(settle refused $((r0 + ${n:-0})))
	ok1=$(rx_ok)
	echo "   replayed $n pre-reboot frames of key F: h2 refused $r0 -> $r1, InPktsOK $ok0 -> $ok1"
	[ "${n:-0}" -gt 0 ] && [ $((r1 - r0)) -ge "$n" ] && [ "$ok1" = "$ok0" ] && pass "i-pre-reboot-replays-refused" ||
		fail "i-pre-reboot-replays-refused" "replayed $n, refused $r0 -> $r1, InPktsOK $ok0 -> $ok1"
	on h2 ping -c 3 -i 0.3 -W 1 10.100.0.1 >/dev/null && fail "i-h2-ping-fails" "it got through" || pass "i-h2-ping-fails"
}
sniff capI2 i_after
[ "$(in_from_h2 capI2)" = 0 ] && [ "$(clear_in capI2)" = 0 ] && pass "i-h2-sends-nothing" ||
	fail "i-h2-sends-nothing" "MACsec $(in_from_h2 capI2), clear $(clear_in capI2) frames from h2"
no_repeats "i-no-sci-pn-repeats-under-key-f-from-h2" --in /run/capI1 /run/capI2
check "i-new-key-on-both-ends" sh -c "'$LAB' exec h1 -- '$F' apply -q '$WORK/v7.yaml' &&
	'$LAB' exec h2 -- '$F' apply -q --state-dir '$S2' '$WORK/v7.yaml'"
agree "i-ends-agree-with-key-g"
sniff capI3 flows "i-traffic-with-key-g"
[ "$(in_from_h2 capI3)" -gt 0 ] && [ "$(clear_in capI3)" = 0 ] && [ "$(clear_out capI3)" = 0 ] &&
	pass "i-recovery-nothing-in-clear" || fail "i-recovery-nothing-in-clear" "h2 MACsec $(in_from_h2 capI3), clear in $(clear_in capI3), out $(clear_out capI3)"
stamp "end"
