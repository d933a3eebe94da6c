#!/bin/bash
# SPDX-License-Identifier: MIT
# Regression tests for rekey failures other MACsec stacks hit in the field (SONiC), on
# real kernels: one lab of two VMs applying tests/lab/profiles/lab-pair-rotation.yaml,
# `fabricctl agent` on both (mutual TLS, /metrics on loopback), fabricctl-keymgr on h1.
# Each case names the bug it would catch.
#
#  c/d. counters across a rekey (sonic-buildimage#19311) and a retirement that touches
#     only the old key: one rotation under a sequence-numbered stream, keymgr held
#     after the switch, before the retirement (hook retire:hold). Scrapes before, at the
#     hold and after the commit. Catches: a `_total` family of /metrics that goes
#     backwards or resets across the switch or the retirement (a total summed over SAs,
#     which the retirement deletes, instead of read from the SCs); a next-PN that
#     restarts; a retirement that deletes or deactivates the new SA (wrong AN), changes
#     its KEYID or drops the RX SC of the peer (the SC holding the new key); lost frames.
#     (d2, in phase a) a retirement naming another key than the SA on that AN holds (a
#     stale or repeated request after the AN came round again) must leave that SA alone:
#     catches an agent that retires by AN alone and deletes the live key's SA.
#  b. keymgr killed with -9 mid-rotation while the kernels still hold the old SAK
#     (sonic-swss#4571): (b1) kill -9 from outside while paused after the new SAs were
#     staged (held at confirm), (b2) killed when the switch was journaled but not sent. Before
#     the restart nobody may claim the new key (status from the kernels, the agents'
#     records); after `recover` keymgr's record, the agents' records and both kernels
#     agree on the AN and key version, one key on the wire, traffic flows, no frame
#     refused, and a further rotation works. Catches: a recovery that trusts the journal
#     over the kernels (claims a rekey that never reached them, or leaves the staged
#     SAs behind), keymgr's record out of step with the kernels, a journal left open.
#     (rotation.sh phase 2 has the rest: keymgr killed at install-rx and overlap, the
#     peer's agent killed before and at the switch.)
#  a. an SA delete and an install of the same AN arriving back to back
#     (sonic-swss#4235: DEL + SET within 0.3 ms coalesced, the old SAK stayed in the
#     ASIC): through the agent's request path (one hand-made sa-batch per host over the
#     Unix socket, tests/lab/sa_batch.c). (a1) an install over an AN still holding a
#     stale key must fail and leave the kernel as it was, never answer ok with the old
#     key in place (the coalesced SET alone); (a2) retire + install of the new key in
#     one frame: the kernel shows the new KEYID on both ends; after the switch and the
#     retirement of every other SA (each end holds only the new key) traffic flows and
#     nothing is refused; (a3) the oracle can fail: one end sends with a third key under
#     the KEYID its peer's RX SA names, frames are refused (the KEYID alone proves nothing).
#  The PN-threshold trigger on XPN ciphers (sonic-buildimage#11539) is rotation.sh
#  phase 5.
#
# FCTL_LAB_DIR picks the lab dir (default /var/tmp/fabricctl-lab-rekey). Prints
# PASS/FAIL per check and "rekey-regress: N passed, M failed"; exits non-zero on any
# failure, including a lab that cannot start (never skips).
set -uo pipefail

SUITE=rekey-regress
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-rekey
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
K=$BUILD/keymgr/fabricctl-keymgr
SEQ=$BUILD/tests/lab/seqstream
SAB=$BUILD/tests/lab/sa_batch
export FCTL_AUDIT_LOG=/var/lib/fabricctl/audit.log # guests: tmpfs
RATE=${RATE:-100}
T0=$SECONDS
check() { # name condition-rc detail
	[ "$2" = 0 ] && pass "$1" || fail "$1" "${3:-}"
}
stamp() { echo "   [$((SECONDS - T0)) s] $1"; }
suite_summary() { echo "($((SECONDS - T0)) s)"; }

for b in "$F" "$K" "$SEQ" "$SAB"; do [ -x "$b" ] || { fail "build" "$b is missing: build first"; exit 1; }; done
for t in jq openssl curl; do command -v "$t" >/dev/null || { fail "tools" "$t is missing"; exit 1; }; done

# --- material under the build dir (the guests see it read-only) -----------------
WORK=$BUILD/lab-rekey-work-${FCTL_LAB_DIR##*/}
rm -rf "$WORK"
mkdir -p "$WORK/keys"
"$ROOT/scripts/pki.sh" "$WORK/pki" h1=10.9.12.1 h2=10.9.12.2 >/dev/null || { fail "pki"; exit 1; }
chmod 644 "$WORK"/pki/*.key # guests read them as root over 9p; a test tree
(
	umask 077
	openssl rand -hex 16 >"$WORK/keys/rot.key"
	for v in $(seq 1 12); do openssl rand -hex 16 >"$WORK/keys/rot.key.v$v"; done
	for n in stale new third fourth; do openssl rand -hex 16 >"$WORK/keys/hand-$n.key"; done
)
chmod 644 "$WORK"/keys/hand-*.key # read by sa_batch in the guests
cp "$ROOT/tests/lab/profiles/lab-pair-rotation.yaml" "$WORK/rot.yaml"
P=$WORK/rot.yaml
ID=$WORK/pki
KS=/var/lib/fabricctl/keymgr
KA=/var/lib/fabricctl/keymgr-audit.log
AA=/var/lib/fabricctl/agent-audit.log
REC=/var/lib/fabricctl/rotation/ms100
KM=("$K" --state-dir "$KS" --audit-log "$KA" --timeout 20
	--cert "$ID/client-key-custodian.crt" --key "$ID/client-key-custodian.key" --ca "$ID/ca.crt")

# --- lab, profile, agents ----------------------------------------------------------
"$LAB" up --hosts 2 || { fail "lab-up" "the lab did not start"; exit 1; }
pass "lab-up"
rm -rf "$FCTL_LAB_DIR"/h1/snap "$FCTL_LAB_DIR"/h2/snap
on h1 sh -c 'ip addr add 10.9.12.1/24 dev eth0 && ip link set eth0 up'
on h2 sh -c 'ip addr add 10.9.12.2/24 dev eth0 && ip link set eth0 up'
for h in h1 h2; do
	o=$(on "$h" "$F" apply -q --host "$h" "$P" 2>&1)
	check "apply-$h" $? "$(tail -3 <<<"$o")"
done
declare -A AG
for h in h1 h2; do
	AG[$h]=$("$LAB" exec-bg "$h" -- "$F" agent --host "$h" --listen 0.0.0.0:7443 \
		--metrics 127.0.0.1:9100 --cert "$ID/server-$h.crt" --key "$ID/server-$h.key" \
		--ca "$ID/ca.crt" --audit-log "$AA" --drift-interval 30s)
done
up=1
for _ in $(seq 30); do on h1 "${KM[@]}" status "$P" >/dev/null 2>&1 && { up=0; break; }; sleep 1; done
check "agents-answer" $up
[ "$up" = 0 ] || exit 1

# --- what the kernels, the agents and keymgr say --------------------------------------
# A lab exec costs seconds on a loaded machine: every observation of a host is one exec
# (a shell in the guest writing files into the host's lab share), both hosts at once.
SNAP=$FCTL_LAB_DIR
GUEST_SNAP='d=$1 t=$2; ip -j -s macsec show ms100 >"$d/mj-$t"
	curl -sf http://127.0.0.1:9100/metrics >"$d/mx-$t"; "$3" show --json >"$d/show-$t"
	cat "$4" >"$d/rec-$t" 2>/dev/null; ls "$5"/journal-* >"$d/journal-$t" 2>/dev/null; true'
snap() { # tag: the kernel's JSON (iproute2), /metrics, show --json, the agent's rotation
	# record, keymgr's open journals; $SNAP/HOST/KIND-TAG
	local h
	for h in h1 h2; do
		mkdir -p "$SNAP/$h/snap"
		"$LAB" exec --timeout 120 "$h" -- sh -c "$GUEST_SNAP" snap "$SNAP/$h/snap" "$1" "$F" "$REC" "$KS" &
	done
	wait
}
sf() { echo "$SNAP/$1/snap/$2-$3"; } # host kind tag: a snapshot file
mj() { cat "$(sf "$1" mj "$2")"; }     # host tag: the kernel's view
enc() { jq -r '.[0].encoding_sa' <<<"$1"; }
# KEYID of the TX SA on AN $2, of the RX SA on AN $2 (of the one RX SC), "" when absent
txkey() { jq -r --argjson a "$2" '[.[0].sa_list[]? | select(.an == $a) | .key][0] // ""' <<<"$1"; }
rxkey() { jq -r --argjson a "$2" '[.[0].rx_sc[0].sa_list[]? | select(.an == $a) | .key][0] // ""' <<<"$1"; }
txans() { jq -r '[.[0].sa_list[]?.an] | sort | map(tostring) | join(",")' <<<"$1"; }
rxans() { jq -r '[.[0].rx_sc[0].sa_list[]?.an] | sort | map(tostring) | join(",")' <<<"$1"; }
sci() { jq -r '.[0].sci | ltrimstr("0x")' <<<"$1"; }
not_valid() { jq '[.[0].rx_sc[]? | .InPktsNotValid // 0] | add // 0' <<<"$1"; }
status_json() { on h1 "${KM[@]}" status --json "$P" 2>/dev/null; }
REFUSED='[.[0].h1, .[0].h2 | .not_valid + .not_using_sa + .unused_sa] | add'
rec_field() { sed -n "s/^$3 //p" "$(sf "$1" rec "$2")" 2>/dev/null; } # host tag field
journal_open() { [ -s "$(sf h1 journal "$1")" ]; }
ping_both() {
	local r1 r2
	on h1 ping -c 2 -W 3 10.100.0.2 >/dev/null & r1=$!
	on h2 ping -c 2 -W 3 10.100.0.1 >/dev/null & r2=$!
	wait $r1 && wait $r2
}
# waits (in the guest) for keymgr's pause marker of a step
paused() { on h1 sh -c 'for i in $(seq 480); do test -e "$1" && exit 0; sleep 0.25; done; exit 1' w "$KS/paused-$1"; }

# agree NAME AN VERSION: keymgr's record, the agents' records and both kernels on AN and
# VERSION, one key on the wire (only AN's SAs left, each end's TX KEYID its peer's RX
# KEYID, the agent's record naming it), no journal open, traffic both ways, no frame
# refused since BASE
agree() {
	local n=$1 an=$2 v=$3 js a b bad=
	js=$(status_json)
	snap "ag-$n"
	[ "$(jq -c '[.[0].recorded, .[0].an, .[0].version, .[0].h1.encoding_sa, .[0].h2.encoding_sa,
		.[0].h1.version, .[0].h2.version]' <<<"$js")" = "[true,$an,$v,$an,$an,$v,$v]" ] ||
		bad="$bad keymgr: $(jq -c '.[0] | {recorded, an, version, h1: .h1 | {encoding_sa, version}, h2: .h2 | {encoding_sa, version}}' <<<"$js");"
	a=$(mj h1 "ag-$n")
	b=$(mj h2 "ag-$n")
	for h in h1 h2; do
		[ "$(rec_field "$h" "ag-$n" an) $(rec_field "$h" "ag-$n" version)" = "$an $v" ] ||
			bad="$bad $h agent record: an $(rec_field "$h" "ag-$n" an) version $(rec_field "$h" "ag-$n" version);"
	done
	[ "$(enc "$a") $(enc "$b")" = "$an $an" ] || bad="$bad kernels encode on $(enc "$a") / $(enc "$b");"
	[ "$(txans "$a")/$(rxans "$a") $(txans "$b")/$(rxans "$b")" = "$an/$an $an/$an" ] ||
		bad="$bad SAs left: h1 tx/rx $(txans "$a")/$(rxans "$a"), h2 $(txans "$b")/$(rxans "$b");"
	[ -n "$(txkey "$a" "$an")" ] && [ "$(txkey "$a" "$an")" = "$(rxkey "$b" "$an")" ] &&
		[ "$(txkey "$b" "$an")" = "$(rxkey "$a" "$an")" ] && [ "$(txkey "$a" "$an")" = "$(txkey "$b" "$an")" ] ||
		bad="$bad keyids differ: h1 tx $(txkey "$a" "$an") rx $(rxkey "$a" "$an"), h2 tx $(txkey "$b" "$an") rx $(rxkey "$b" "$an");"
	for h in h1 h2; do
		[ "$(rec_field "$h" "ag-$n" keyid)" = "$(txkey "$a" "$an")" ] ||
			bad="$bad $h's record names keyid $(rec_field "$h" "ag-$n" keyid);"
	done
	journal_open "ag-$n" && bad="$bad a journal is still open: $(cat "$(sf h1 journal "ag-$n")");"
	check "$n-keymgr-agents-kernels-agree-an-$an-version-$v" "$([ -z "$bad" ]; echo $?)" "$bad"
	ping_both
	check "$n-traffic-both-ways" $?
	[ "$(jq "$REFUSED" <<<"$js")" = "$BASE" ]
	check "$n-no-frame-refused" $? "refused-frame counters $(jq "$REFUSED" <<<"$js"), baseline $BASE"
}

# --- streams (tests/lab/rotation.sh has the long form) ------------------------------
declare -A RX TX
bound() { on "$1" sh -c 'for i in $(seq 120); do [ -n "$(ss -Hlun "sport = :$1")" ] && exit 0; sleep 0.25; done; exit 1' w "$2"; }
stream_start() {
	RX[h2]=$("$LAB" exec-bg h2 -- "$SEQ" recv 5001 300 4)
	RX[h1]=$("$LAB" exec-bg h1 -- "$SEQ" recv 5002 300 4)
	bound h2 5001 & bound h1 5002 & wait
	TX[h1]=$("$LAB" exec-bg h1 -- "$SEQ" send 10.100.0.2 5001 "$RATE" 300)
	TX[h2]=$("$LAB" exec-bg h2 -- "$SEQ" send 10.100.0.1 5002 "$RATE" 300)
}
stream_stop() { # name
	local s r sent
	for pair in "h1 h2" "h2 h1"; do
		set -- $pair
		"$LAB" kill "$1" "${TX[$1]}" >/dev/null 2>&1
		s=$("$LAB" wait --timeout 30 "$1" "${TX[$1]}" 2>/dev/null | grep '^sent')
		r=$("$LAB" wait --timeout 30 "$2" "${RX[$2]}" 2>/dev/null | grep '^received')
		sent=$(awk '{print $2}' <<<"$s")
		echo "   stream $1->$2: $s; $r"
		[ -n "$sent" ] && [ "$sent" -gt 0 ] && [ "$(awk '{print $2, $4, $6, $8}' <<<"$r")" = "$sent 0 0 0" ]
		check "$NAME-stream-$1-$2-no-loss-no-reorder" $? "$s; $r"
	done
}

# every sample of every counter family (the _total ones) of host $3: tag $1 <= tag $2;
# prints the ones that went down (or vanished)
went_down() {
	LC_ALL=C join -a 1 -e MISSING -o 0,1.2,2.2 -t $'\t' \
		<(grep -E '^fabricctl_[a-z_]+_total(\{| )' "$(sf "$3" mx "$1")" | sed 's/ \([^ ]*\)$/\t\1/' | LC_ALL=C sort) \
		<(grep -E '^fabricctl_[a-z_]+_total(\{| )' "$(sf "$3" mx "$2")" | sed 's/ \([^ ]*\)$/\t\1/' | LC_ALL=C sort) |
		awk -F'\t' '$3 == "MISSING" || $3 + 0 < $2 + 0 {print $1 ": " $2 " -> " $3}'
}
mx() { # tag host family: the family's sample of the SecY (no per-SA labels)
	grep -E "^$3(\{| )" "$(sf "$2" mx "$1")" | grep -v 'an="' | awk '{print $NF}' | head -1
}
sa_stat() { # tag host dir(tx|rx) an field: a per-SA field of ip -j -s (or "")
	local sel='.[0].sa_list[]?'
	[ "$3" = rx ] && sel='.[0].rx_sc[0].sa_list[]?'
	jq -r --argjson a "$4" "[$sel | select(.an == \$a) | .$5][0] // \"\"" "$(sf "$2" mj "$1")"
}
completed() { # tag host: fabricctl_rotations_total{result="completed"} (0 before any record)
	grep -E '^fabricctl_rotations_total\{.*result="completed"' "$(sf "$2" mx "$1")" | awk '{print $NF}' |
		grep . || echo 0
}

BASE=$(status_json | jq "$REFUSED")
snap start
AN0=$(enc "$(mj h1 start)")
V0=$(status_json | jq '.[0].h1.version')
echo "   start: encoding sa $AN0, key version $V0, refused-frame counters $BASE"

# --- c/d. counters and the retirement across one rotation -------------------------------
stamp "c/d counters and retirement"
NAME=cd
stream_start
snap 0
job=$("$LAB" exec-bg --env FCTL_KEYMGR_TEST_HOOK=retire:hold h1 -- "${KM[@]}" rotate --all --overlap 1 "$P")
paused retire
check "cd-keymgr-held-after-switch-before-retire" $?
snap 1
on h1 rm -f "$KS/paused-retire" # keymgr goes on: the retirement
"$LAB" wait --timeout 120 h1 "$job" >"$WORK/cd-rotate.out" 2>&1
check "cd-rotation-committed" $? "$(tail -3 "$WORK/cd-rotate.out")"
snap 2
stream_stop
A1=$(( (AN0 + 1) % 4 ))
both="$(printf '%s\n' "$AN0" "$A1" | sort | paste -sd,)"
for h in h1 h2; do
	peer=h2
	[ "$h" = h2 ] && peer=h1
	m1=$(mj "$h" 1)
	m2=$(mj "$h" 2)
	# (c) the counter families never go backwards: before -> at the pause (switched) -> after
	d=$(went_down 0 1 "$h"; went_down 1 2 "$h")
	n=$(grep -cE '^fabricctl_macsec_[a-z_]+_total(\{| )' "$(sf "$h" mx 2)")
	[ -z "$d" ] && [ "${n:-0}" -ge 20 ]
	check "c-$h-metrics-totals-monotonic-across-switch-and-retire ($n samples)" $? "${d:-only $n samples}"
	ok0=$(mx 0 "$h" fabricctl_macsec_in_pkts_ok_total)
	ok1=$(mx 1 "$h" fabricctl_macsec_in_pkts_ok_total)
	ok2=$(mx 2 "$h" fabricctl_macsec_in_pkts_ok_total)
	enc0=$(mx 0 "$h" fabricctl_macsec_out_pkts_encrypted_total)
	enc2=$(mx 2 "$h" fabricctl_macsec_out_pkts_encrypted_total)
	[ -n "$ok0" ] && [ "$ok0" -lt "$ok1" ] && [ "$ok1" -lt "$ok2" ] && [ "$enc0" -lt "$enc2" ]
	check "c-$h-in-ok-and-out-encrypted-keep-counting" $? "in_pkts_ok $ok0 -> $ok1 -> $ok2, out_pkts_encrypted $enc0 -> $enc2"
	# the total is the RX SC's counter, not a sum over the SAs (which the retirement
	# deletes): after it, it still counts what both SAs had received at the pause
	sum1=$(jq '[.[0].rx_sc[]?.sa_list[]? | .InPktsOK // 0] | add' <<<"$m1")
	[ -n "$sum1" ] && [ "$sum1" -gt 0 ] && [ "$ok2" -ge "$sum1" ]
	check "c-$h-in-ok-total-counts-the-retired-sa" $? "metrics after $ok2, both RX SAs at the pause $sum1"
	c0=$(completed 0 "$h")
	c2=$(completed 2 "$h")
	[ "$c2" = $((c0 + 1)) ]
	check "c-$h-rotations-completed-counted-once" $? "$c0 -> $c2"
	# the new SA's next PN carries on across the retirement (kernel, show --json); PN
	# usage between 0 and 1
	p1=$(sa_stat 1 "$h" tx "$A1" pn)
	p2=$(sa_stat 2 "$h" tx "$A1" pn)
	[ -n "$p1" ] && [ -n "$p2" ] && [ "$p1" -gt 1 ] && [ "$p2" -gt "$p1" ]
	check "c-$h-new-tx-pn-carries-on ($p1 -> $p2)" $? "pn $p1 -> $p2"
	bad=$(grep -hE '^fabricctl_macsec_sa_pn_usage_ratio' "$(sf "$h" mx 1)" "$(sf "$h" mx 2)" | awk '$NF < 0 || $NF > 1')
	[ -z "$bad" ] && grep -q '^fabricctl_macsec_sa_pn_usage_ratio' "$(sf "$h" mx 2)"
	check "c-$h-pn-usage-ratio-in-0-1" $? "$bad"
	s1=$(jq --argjson a "$A1" '[.links[] | select(.name == "ms100") | .tx_sa[] | select(.an == $a) | .pn][0] // empty' "$(sf "$h" show 1)" 2>/dev/null)
	s2=$(jq --argjson a "$A1" '[.links[] | select(.name == "ms100") | .tx_sa[] | select(.an == $a) | .pn][0] // empty' "$(sf "$h" show 2)" 2>/dev/null)
	[ -n "$s1" ] && [ -n "$s2" ] && [ "$s2" -gt "$s1" ]
	check "c-$h-show-json-pn-carries-on ($s1 -> $s2)" $? "show --json pn $s1 -> $s2"
	# (d) at the pause both keys are there; after it only the old one is gone: the new TX
	# SA and the new RX SA (in the peer's SC) keep their KEYID, stay active, their
	# counters carry on, and the RX SC is the same one, still active
	[ "$(txans "$m1")/$(rxans "$m1")" = "$both/$both" ]
	check "d-$h-both-keys-at-the-pause" $? "tx/rx ans $(txans "$m1")/$(rxans "$m1")"
	[ "$(txans "$m2")/$(rxans "$m2")" = "$A1/$A1" ]
	check "d-$h-only-the-old-an-retired" $? "tx/rx ans $(txans "$m2")/$(rxans "$m2")"
	[ -n "$(txkey "$m1" "$A1")" ] && [ "$(txkey "$m1" "$A1")" = "$(txkey "$m2" "$A1")" ] &&
		[ -n "$(rxkey "$m1" "$A1")" ] && [ "$(rxkey "$m1" "$A1")" = "$(rxkey "$m2" "$A1")" ]
	check "d-$h-new-sas-keep-their-keyid" $? "tx $(txkey "$m1" "$A1") -> $(txkey "$m2" "$A1"), rx $(rxkey "$m1" "$A1") -> $(rxkey "$m2" "$A1")"
	[ "$(sa_stat 2 "$h" tx "$A1" active) $(sa_stat 2 "$h" rx "$A1" active)" = "true true" ]
	check "d-$h-new-sas-still-active" $? "tx $(sa_stat 2 "$h" tx "$A1" active), rx $(sa_stat 2 "$h" rx "$A1" active)"
	o1=$(sa_stat 1 "$h" rx "$A1" InPktsOK)
	o2=$(sa_stat 2 "$h" rx "$A1" InPktsOK)
	e1=$(sa_stat 1 "$h" tx "$A1" OutPktsEncrypted)
	e2=$(sa_stat 2 "$h" tx "$A1" OutPktsEncrypted)
	rp1=$(sa_stat 1 "$h" rx "$A1" pn)
	rp2=$(sa_stat 2 "$h" rx "$A1" pn)
	[ -n "$o1" ] && [ -n "$o2" ] && [ "$o1" -gt 0 ] && [ "$o2" -gt "$o1" ] && [ "$e2" -gt "$e1" ] && [ "$rp2" -gt "$rp1" ]
	check "d-$h-new-sa-counters-carry-on" $? "rx in_pkts_ok $o1 -> $o2, rx pn $rp1 -> $rp2, tx encrypted $e1 -> $e2"
	sc1=$(jq -r '[.[0].rx_sc[]? | "\(.sci) \(.active)"] | join(",")' <<<"$m1")
	sc2=$(jq -r '[.[0].rx_sc[]? | "\(.sci) \(.active)"] | join(",")' <<<"$m2")
	[ "$sc1" = "$sc2" ] && [ "$sc2" = "$(jq -r '.[0].sci' <<<"$(mj "$peer" 2)") true" ]
	check "d-$h-rx-sc-of-the-peer-stays" $? "rx scs '$sc1' -> '$sc2'"
done
V1=$((V0 + 1))
agree cd "$A1" "$V1"

# --- b. keymgr killed with -9 mid-rotation, the kernels on the old key ----------------
# before_restart NAME: nobody claims the new key: keymgr's status (from the kernels and
# the agents' records) and both records still on A1/V1, both kernels encoding on A1, a
# journal open
before_restart() {
	local js
	js=$(status_json)
	snap "$1"
	[ "$(jq -c '[.[0].an, .[0].version, .[0].h1.encoding_sa, .[0].h2.encoding_sa, .[0].h1.version, .[0].h2.version]' <<<"$js")" = "[$A1,$V1,$A1,$A1,$V1,$V1]" ] &&
		[ "$(rec_field h1 "$1" an)/$(rec_field h2 "$1" an) $(rec_field h1 "$1" version)/$(rec_field h2 "$1" version)" = "$A1/$A1 $V1/$V1" ] &&
		[ "$(enc "$(mj h1 "$1")")/$(enc "$(mj h2 "$1")")" = "$A1/$A1" ] && journal_open "$1"
	check "$1-after-kill-kernels-on-old-key-nobody-claims-the-new" $? \
		"$(jq -c '.[0]' <<<"$js"); records $(rec_field h1 "$1" an)/$(rec_field h2 "$1" an); journal '$(cat "$(sf h1 journal "$1")")'"
}
# b1: killed from outside while paused after the staging (at confirm): undone
stamp "b1 kill -9 after the staging"
job=$("$LAB" exec-bg --env FCTL_KEYMGR_TEST_HOOK=confirm:hold h1 -- "${KM[@]}" rotate --all --overlap 1 "$P")
paused confirm
check "b1-keymgr-held-at-confirm" $?
A2=$(( (A1 + 1) % 4 ))
snap b1-staged
[ -n "$(txkey "$(mj h1 b1-staged)" "$A2")" ] && [ -n "$(rxkey "$(mj h2 b1-staged)" "$A2")" ]
check "b1-new-sas-staged-before-the-kill" $? "h1 tx an $A2 '$(txkey "$(mj h1 b1-staged)" "$A2")', h2 rx '$(rxkey "$(mj h2 b1-staged)" "$A2")'"
on h1 sh -c 'kill -9 $(pidof fabricctl-keymgr)'
"$LAB" wait --timeout 30 h1 "$job" >/dev/null 2>&1
check "b1-keymgr-killed (exit 137)" "$([ $? = 137 ]; echo $?)"
before_restart b1
o=$(on h1 "${KM[@]}" recover "$P" 2>&1)
check "b1-recover" $? "$(tail -3 <<<"$o")"
agree b1 "$A1" "$V1"
on h1 sh -c "grep -q 'recovering.*after step confirm: undoing it' $KA && tail -1 $KS/rotations.log | grep -q ' rolled-back '"
check "b1-recovery-undid-it-and-said-so" $?

# b2: killed with the switch journaled but not sent: the recovery finishes the rotation
stamp "b2 kill -9 at the switch"
o=$("$LAB" exec --timeout 120 --env FCTL_KEYMGR_TEST_HOOK=switch:kill h1 -- "${KM[@]}" rotate --all --overlap 1 "$P" 2>&1)
check "b2-keymgr-killed-at-switch (exit 137)" "$([ $? = 137 ]; echo $?)" "$(tail -2 <<<"$o")"
before_restart b2
o=$(on h1 "${KM[@]}" recover "$P" 2>&1)
check "b2-recover" $? "$(tail -3 <<<"$o")"
V2=$((V1 + 1))
agree b2 "$A2" "$V2"
on h1 sh -c "grep -q 'recovering.*after step switch: finishing it' $KA && tail -1 $KS/rotations.log | grep -q ' committed '"
check "b2-recovery-finished-it-and-said-so" $?
# and keymgr's view holds: the next rotation runs from it
o=$(on h1 "${KM[@]}" rotate --all --overlap 1 "$P" 2>&1)
check "b-rotation-after-the-recoveries" $? "$(tail -3 <<<"$o")"
A3=$(( (A2 + 1) % 4 ))
V3=$((V2 + 1))
agree b3 "$A3" "$V3"

# --- a. retire and install of one AN back to back, through the agent ---------------------
stamp "a retire + install of one AN in one frame"
A4=$(( (A3 + 1) % 4 ))
SCI1=$(sci "$(mj h1 ag-b3)")
SCI2=$(sci "$(mj h2 ag-b3)")
KID_STALE=$(openssl rand -hex 16)
KID_NEW=$(openssl rand -hex 16)
KEYS=$WORK/keys
GUEST_SAB='"$1" unix:/run/fabricctl/agent.sock ms100 <"$2" >"$3/sab-$4" 2>&1; echo "exit $?" >>"$3/sab-$4"
	ip -j -s macsec show ms100 >"$3/mj-$4"'
sab() { # tag: $WORK/sab-TAG-HOST as one sa-batch to each host's agent (Unix socket, both
	# at once), then the kernel's view; $(sf HOST sab TAG) has the answer and "exit N"
	local h
	for h in h1 h2; do
		[ -e "$WORK/sab-$1-$h" ] || continue
		"$LAB" exec --timeout 60 "$h" -- sh -c "$GUEST_SAB" sab "$SAB" "$WORK/sab-$1-$h" "$SNAP/$h/snap" "$1" &
	done
	wait
}
sab_rc() { sed -n 's/^exit //p' "$(sf "$1" sab "$2")"; }
sab_out() { tr '\n' ' ' <"$(sf "$1" sab "$2")"; }
peer_sci() { [ "$1" = h1 ] && echo "$SCI2" || echo "$SCI1"; }
# a0: a stale key on the free AN (what an interrupted rotation that could not clean up
# leaves behind)
for h in h1 h2; do
	printf 'rx-install %s %s %s %s\ntx-stage %s %s %s\n' "$A4" "$(peer_sci $h)" "$KEYS/hand-stale.key" "$KID_STALE" \
		"$A4" "$KEYS/hand-stale.key" "$KID_STALE" >"$WORK/sab-a0-$h"
done
sab a0
for h in h1 h2; do
	m=$(mj "$h" a0)
	[ "$(sab_rc "$h" a0)" = 0 ] && [ "$(rxkey "$m" "$A4") $(txkey "$m" "$A4")" = "$KID_STALE $KID_STALE" ]
	check "a0-$h-stale-key-on-an-$A4" $? "$(sab_out "$h" a0)"
done
# a1: the install alone (the coalesced SET) over it: refused, the stale SA untouched
for h in h1 h2; do
	printf 'rx-install %s %s %s %s\ntx-stage %s %s %s\n' "$A4" "$(peer_sci $h)" "$KEYS/hand-new.key" "$KID_NEW" \
		"$A4" "$KEYS/hand-new.key" "$KID_NEW" >"$WORK/sab-a1-$h"
done
sab a1
for h in h1 h2; do
	m=$(mj "$h" a1)
	[ "$(sab_rc "$h" a1)" = 1 ] && grep -q '^op 0 failed' "$(sf "$h" sab a1)" && grep -q '^op 1 failed' "$(sf "$h" sab a1)" &&
		[ "$(rxkey "$m" "$A4") $(txkey "$m" "$A4")" = "$KID_STALE $KID_STALE" ]
	check "a1-$h-install-over-a-held-an-refused-kernel-unchanged" $? "$(sab_out "$h" a1); kernel rx $(rxkey "$m" "$A4") tx $(txkey "$m" "$A4")"
done
# a2: retire then install of the same AN in one frame, a dump after them
for h in h1 h2; do
	printf 'retire %s %s %s\nretire %s %s\nrx-install %s %s %s %s\ntx-stage %s %s %s\ndump\n' \
		"$A4" "$(peer_sci $h)" "$KID_STALE" "$A4" "$KID_STALE" "$A4" "$(peer_sci $h)" "$KEYS/hand-new.key" "$KID_NEW" \
		"$A4" "$KEYS/hand-new.key" "$KID_NEW" >"$WORK/sab-a2-$h"
done
sab a2
for h in h1 h2; do
	m=$(mj "$h" a2)
	check "a2-$h-retire-and-install-in-one-frame" "$([ "$(sab_rc "$h" a2)" = 0 ]; echo $?)" "$(sab_out "$h" a2)"
	[ "$(rxkey "$m" "$A4") $(txkey "$m" "$A4")" = "$KID_NEW $KID_NEW" ] &&
		grep -q "^rx sci .* an $A4 active 1 .*keyid $KID_NEW" "$(sf "$h" sab a2)"
	check "a2-$h-kernel-holds-the-new-keyid" $? "kernel rx $(rxkey "$m" "$A4") tx $(txkey "$m" "$A4")"
done
# how far apart the retire and the install reached each agent (its audit records): a
# figure, not a test
for h in h1 h2; do
	on "$h" cat "$AA" | jq -r 'select(.action == "sa-retire" or .action == "rxsa-install") | .time' | tail -2 |
		jq -Rrs --arg h "$h" 'split("\n")[:2] | map(capture("T(?<h>..):(?<m>..):(?<s>[0-9.]+)Z") | (.h|tonumber)*3600 + (.m|tonumber)*60 + (.s|tonumber)) |
			"   \($h): the tx retire and the rx install of an '"$A4"' reached the agent \(((.[1] - .[0]) * 1e6 | floor) / 1000) ms apart"'
done
# the switch to the new key, then every other SA retired: each end holds only the new key
for h in h1 h2; do
	printf 'switch %s 99 %s\nretire %s %s\nretire %s\n' "$A4" "$KID_NEW" "$A3" "$(peer_sci $h)" "$A3" >"$WORK/sab-a2s-$h"
done
sab a2s
a=$(mj h1 a2s)
b=$(mj h2 a2s)
check "a2-switch-and-retire-the-rest" "$([ "$(sab_rc h1 a2s) $(sab_rc h2 a2s)" = "0 0" ]; echo $?)" "$(sab_out h1 a2s) $(sab_out h2 a2s)"
[ "$(txans "$a")/$(rxans "$a") $(txans "$b")/$(rxans "$b") $(enc "$a") $(enc "$b")" = "$A4/$A4 $A4/$A4 $A4 $A4" ]
check "a2-only-the-new-key-left-on-both" $? "h1 $(txans "$a")/$(rxans "$a") h2 $(txans "$b")/$(rxans "$b")"
nv0=$(not_valid "$b")
ping_both
check "a2-traffic-on-the-new-key" $?
snap a2p
nv1=$(not_valid "$(mj h2 a2p)")
[ "$nv0" = "$nv1" ]
check "a2-nothing-refused-on-the-new-key" $? "h2 InPktsNotValid $nv0 -> $nv1"
# d2: a retirement that names another key (the stale one: a late or repeated request
# after the AN came round again) leaves the SA holding the new key alone
printf 'retire %s %s %s\n' "$A4" "$SCI1" "$KID_STALE" >"$WORK/sab-d2-h2"
sab d2
m=$(mj h2 d2)
[ "$(sab_rc h2 d2)" = 1 ] && grep -q '^op 0 failed: .*holds another key' "$(sf h2 sab d2)" &&
	[ "$(rxkey "$m" "$A4") $(sa_stat d2 h2 rx "$A4" active)" = "$KID_NEW true" ]
check "d2-h2-retire-naming-another-key-refused-new-sa-stays" $? "$(sab_out h2 d2); kernel rx $(rxkey "$m" "$A4")"
on h1 ping -c 2 -W 3 10.100.0.2 >/dev/null
check "d2-traffic-after-the-refused-retire" $?
# a3: the oracle can fail: h1 switches to a spare AN holding a third key under the new
# KEYID, h2's RX SA there holds a fourth key under that KEYID: same KEYIDs, different keys
# (not the new key itself: it is live on A4 for that SCI, and the packet-number ledger
# never puts a live key into a second SA, docs/keys-and-pn.md)
A5=$(( (A4 + 1) % 4 ))
printf 'tx-stage %s %s %s\nswitch %s 98 %s\n' "$A5" "$KEYS/hand-third.key" "$KID_NEW" "$A5" "$KID_NEW" >"$WORK/sab-a3-h1"
printf 'rx-install %s %s %s %s\n' "$A5" "$SCI1" "$KEYS/hand-fourth.key" "$KID_NEW" >"$WORK/sab-a3-h2"
sab a3
check "a3-h1-third-key-h2-new-key-same-keyid" "$([ "$(sab_rc h1 a3) $(sab_rc h2 a3)" = "0 0" ]; echo $?)" "$(sab_out h1 a3) $(sab_out h2 a3)"
on h1 ping -c 2 -W 2 10.100.0.2 >/dev/null 2>&1
check "a3-wrong-key-no-traffic" "$([ $? != 0 ]; echo $?)"
snap a3p
nv2=$(not_valid "$(mj h2 a3p)")
[ "$nv2" -gt "$nv1" ]
check "a3-wrong-key-refused-as-not-valid" $? "h2 InPktsNotValid $nv1 -> $nv2"

# no key bytes in any audit log or output of this suite
for h in h1 h2; do on "$h" sh -c "cat $KA $AA 2>/dev/null"; done >"$WORK/all-audit" 2>/dev/null
cat "$WORK"/*.out "$SNAP"/h?/snap/sab-* >>"$WORK/all-audit" 2>/dev/null
leak=0
for kf in "$KEYS"/*; do grep -qi -- "$(tr -d ' \n' <"$kf")" "$WORK/all-audit" && leak=$((leak + 1)); done
[ "$leak" = 0 ] && [ -s "$WORK/all-audit" ]
check "no-key-bytes-in-audit-or-output" $? "$leak key(s) found"
for h in h1 h2; do "$LAB" kill "$h" "${AG[$h]}" >/dev/null 2>&1; done
stamp "end"
