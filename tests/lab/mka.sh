#!/bin/bash
# SPDX-License-Identifier: MIT
# MKA in the real-kernel lab (docs/mka.md): Debian 12's wpa_supplicant 2.10, driver
# macsec_linux, run by fabricctl apply; one lab boot, two hosts on one wire.
#
#   both-apply        fabricctl apply on h1 and h2 (a profile whose policy has 'mka')
#   both-ping         ping over the SecY wpa_supplicant created, both ways
#   both-no-clear     on the VLAN device during the pings: only MACsec and EAPOL frames
#   both-show         show --json names the peer (live), the CKN, the key server, a SAK
#   both-apply-record-cak-kcv  h1's apply record names the CAK by its check value
#   both-audit-no-cak the CAK's hex appears nowhere in h1's audit log
#   both-plan-quiet   plan and diff on h1 find nothing to do: MKA's SecY and SAs are not ours
#   both-roce         ib_send_lat over rxe on the MKA SecY (RoCE v2 over MACsec over VLAN)
#   wrong-cak-rotation-*  h2 applies another CAK under the same CKN over its running CA:
#                     a rotation whose incoming CA never gets secured; the old CA keeps
#                     the traffic; the old CAK applied again gives the rotation up
#   wrong-cak         h2 starts with another CAK under the same CKN: no traffic, no
#                     cleartext, show on h1 says not secured / no live peer
#   wrong-cak-heal    the right CAK again: traffic again
#   peer-killed       h2's wpa_supplicant killed: no traffic, no cleartext on h1's wire
#   peer-restarted    apply on h2 starts it again: traffic again
#   interop-ping      h2 without fabricctl: wpa_supplicant from a plain configuration
#                     file written here (priority 1), traffic both ways
#   interop-show      show on h1 names h2's SCI as live peer and as key server (priority 1)
#   key-server-moves  h2's wpa_supplicant again with priority 255: h1 becomes key server
#   agent-*           the agent restarts a killed wpa_supplicant (tests/lab/mka_agent.bash)
#   rotate-*          a new CAK and CKN, make-before-break, driven by the agents on both
#                     ends under a sequence-numbered stream (tests/lab/mka_rotate.bash)
# Needs root; a missing piece is a FAIL. FCTL_LAB_DIR (default /var/tmp/fabricctl-lab-mka),
# FCTL_BUILD_DIR (default build/). The lab is torn down on exit, even on failure.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LAB=$ROOT/scripts/lab.sh
BUILD=$(cd "${FCTL_BUILD_DIR:-$ROOT/build}" && pwd)
F=$BUILD/fabricctl/fabricctl
SNIFF=$HERE/mka_sniff.py
export FCTL_LAB_DIR=${FCTL_LAB_DIR:-/var/tmp/fabricctl-lab-mka}
WORK=$BUILD/mka-lab.$$ # the guests see the host's tree read-only: profile and keys here
RUN=/run/fabricctl/mka/eth0.100
SCI1=52:54:00:fa:01:00@1
SCI2=52:54:00:fa:02:00@1

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; failed=$((failed + 1)); }
check() { # NAME DETAIL CMD...
	local n=$1 d=$2
	shift 2
	if "$@"; then pass "$n"; else fail "$n" "$d"; fi
}
finished=0
# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	local rc=$?
	"$LAB" down --dir "$FCTL_LAB_DIR" >/dev/null 2>&1 || :
	rm -rf "$WORK"
	if ((!finished)); then
		echo "FAIL harness: mka.sh stopped early (exit $rc)"
		echo "mka: $passed passed, $((failed + 1)) failed"
		exit 1
	fi
}
trap cleanup EXIT
lab() { "$LAB" "$@"; }
on() { # HOST CMD...: fabricctl's audit log in the guest's own /var/lib/fabricctl
	local h=$1
	shift
	lab exec --timeout 180 --env FCTL_AUDIT_LOG=/var/lib/fabricctl/audit.log "$h" -- "$@"
}
done_() {
	finished=1
	echo "mka: $passed passed, $failed failed"
	((failed == 0 && passed > 0))
	exit $?
}

[[ $(id -u) == 0 ]] || { fail setup "must run as root"; done_; }
[[ -x $F ]] || { fail setup "no $F (build first)"; done_; }
command -v wpa_supplicant >/dev/null || [[ -x /sbin/wpa_supplicant ]] ||
	{ fail setup "wpa_supplicant missing (apt-get install wpasupplicant; scripts/deps.sh)"; done_; }

# --- the profile: one VLAN under an mka policy, its CAK in a file key ---
mkdir -p "$WORK/keys"
hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
(
	umask 077
	hex 16 >"$WORK/keys/cak.key"
	hex 16 >"$WORK/keys/wrong.key"
)
CKN=$(hex 16)
# shellcheck source=mka_profile.bash
source "$HERE/mka_profile.bash"
profile() { mka_profile "$1" mka-lab 1 "$2" "$CKN"; } # FILE CAKFILE
profile "$WORK/p.yaml" cak.key
profile "$WORK/wrong.yaml" wrong.key
"$F" validate -q "$WORK/p.yaml" || { fail setup "the lab profile does not validate"; done_; }

lab up --hosts 2 --lifetime 2400 --boot-timeout 400 >/dev/null || { fail setup "lab.sh up failed"; done_; }

# ping FROM_HOST TO_ADDR: 0 when replies came (bounded: MKA needs a few hellos)
# up to about 60 s: ten tries 2 s apart. Without the pause, a SecY not there yet ("Network
# is unreachable": ping fails at once) used all ten tries in a second or two, and a CI run
# beside a busy lab failed agent-setup that way while MKA was still coming up.
ping_ok() { on "$1" sh -c "for i in 1 2 3 4 5 6 7 8 9 10; do ping -c 2 -W 2 -q $2 >/dev/null 2>&1 && exit 0; sleep 2; done; exit 1"; }
ping_fails() { ! on "$1" ping -c 3 -W 2 -q "$2" >/dev/null 2>&1; }
mka_json() { on "$1" sh -c "$F show --json | jq -c '.mka[0]'"; }
# jq -e on INPUT, which must not be empty (jq 1.6 -e exits 0 on no input at all)
jq_ok() { # INPUT JQ-ARGS...
	local in=$1
	shift
	[[ -n $in ]] && jq -e "$@" <<<"$in" >/dev/null
}
# poll h1's KaY view (bounded: the MKA life time is 6 s) until the jq test holds
wait_mka() { # HOST JQ-TEST
	local i
	for i in $(seq 40); do
		jq_ok "$(mka_json "$1")" "$2" 2>/dev/null && return 0
		sleep 1
	done
	return 1
}
# frames on HOST's eth0.100 while HOST pings ADDR: prints the sniffer's JSON
sniff_ping() { # HOST ADDR
	local j
	j=$(lab exec-bg --timeout 60 "$1" -- python3 "$SNIFF" eth0.100 8 /run/sniff.ready) || return 1
	on "$1" sh -c "for i in \$(seq 200); do [ -e /run/sniff.ready ] && break; sleep 0.1; done
		rm -f /run/sniff.ready; ping -c 6 -i 0.5 -W 1 $2 >/dev/null 2>&1; exit 0"
	lab wait --timeout 60 "$1" "$j" | tail -1
}
no_clear() { jq_ok "$1" '.other == 0 and .total > 0'; }

# --- (a) both ends fabricctl ---
ok=1
on h1 "$F" apply -q "$WORK/p.yaml" || ok=0
on h2 "$F" apply -q "$WORK/p.yaml" || ok=0
check both-apply "apply failed" test $ok = 1
both_ways() { ping_ok h1 10.100.0.2 && ping_ok h2 10.100.0.1; }
check both-ping "no ping h1 -> h2 -> h1 over the MKA SecY" both_ways
s=$(sniff_ping h1 10.100.0.2)
check both-no-clear "frames on eth0.100: $s" jq_ok "$s" '.other == 0 and .macsec > 0'
j=$(mka_json h1)
check both-show "show --json .mka[0]: $j" jq_ok "$j" --arg ckn "$CKN" --arg sci "$SCI2" \
	'.secured and .ckn == $ckn and .live_peers == 1 and (.peers | map(select(.live)) | .[0].sci) == $sci
	 and .key_server_sci != "" and .tx_sa and .cipher == "gcm-aes-128" and .encrypt'
# the apply record names the CAK in use by its check value (AES-ECB(CAK, 0^128), first 3
# bytes, computed here with openssl from the key file), never by its bytes
cak=$(tr -d ' \n' <"$WORK/keys/cak.key")
want_kcv=$(head -c 16 /dev/zero | openssl enc -aes-128-ecb -nopad -K "$cak" | od -An -tx1 | tr -d ' \n' | head -c 6)
rec=$(on h1 sh -c "grep '\"action\":\"apply\"' /var/lib/fabricctl/audit.log | tail -1")
check both-apply-record-cak-kcv "the last apply record on h1: $rec (want kcv $want_kcv)" \
	jq_ok "$rec" --arg k "$want_kcv" '.kcv | index($k) != null'
check both-audit-no-cak "the CAK's hex is in h1's audit log" \
	on h1 sh -c "! grep -qi '$cak' /var/lib/fabricctl/audit.log"
check both-plan-quiet "plan/diff want to change the MKA SecY" \
	on h1 sh -c "$F plan --detailed-exitcode $WORK/p.yaml >/dev/null && $F diff $WORK/p.yaml >/dev/null"
roce() {
	on h1 sh -c 'rdma link add rxe0 type rxe netdev macsec0 2>/dev/null || :' &&
		on h2 sh -c 'rdma link add rxe0 type rxe netdev macsec0 2>/dev/null || :' || return 1
	local job
	job=$(lab exec-bg --timeout 120 h2 -- ib_send_lat -d rxe0 -x 1 -u 20 -n 20) || return 1
	# the server listens once it has started: the client tries again until then (bounded)
	on h1 sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 2
		ib_send_lat -d rxe0 -x 1 -u 20 -n 20 10.100.0.2 >/dev/null 2>&1 && exit 0; done; exit 1' ||
		{ lab kill h2 "$job"; return 1; }
	lab wait --timeout 120 h2 "$job" >/dev/null
}
check both-roce "ib_send_lat over rxe on macsec0 failed" roce

# --- (d) a wrong CAK on one end ---
# over a running CA, a new CAK is a make-before-break rotation: the wrong one never gets
# secured, so the old CA keeps the traffic and the rotation waits
on h2 "$F" apply -q "$WORK/wrong.yaml" >/dev/null 2>&1
incoming_waits() {
	local j
	j=$(on h2 "$F" show --json | jq -c '.mka')
	jq_ok "$j" '(map(select(.ca == "incoming" and (.secured | not) and .live_peers == 0)) | length) == 1 and
		(map(select(.ca == "current" and .secured and .tx_sa)) | length) == 1' || { echo "$j"; return 1; }
}
sleep 8 # four MKA hellos: long enough for a CAK the peer had to be secured
check wrong-cak-rotation-waits "h2: not one waiting incoming CA beside a secured current one" incoming_waits
check wrong-cak-rotation-keeps-traffic "no traffic over the old CA while the wrong CAK waits" ping_ok h1 10.100.0.2
on h2 "$F" apply -q "$WORK/p.yaml" >/dev/null 2>&1
check wrong-cak-rotation-given-up "the incoming CA is still there after the old CAK came back" \
	on h2 sh -c "! ls -d $RUN:* 2>/dev/null && ip link show type macsec | grep -c '^[0-9]' | grep -qx 1"
# a wrong CAK from the start: h2's wpa_supplicant stopped first
on h2 sh -c "kill \$(cat $RUN/pid); for i in \$(seq 100); do ip link show type macsec | grep -q . || break; sleep 0.1; done"
on h2 "$F" apply -q "$WORK/wrong.yaml" >/dev/null 2>&1 # its SecY may not come up: that is the point
check wrong-cak "h1 still sees a live peer" wait_mka h1 '.live_peers == 0'
check wrong-cak-no-traffic "ping crossed with a wrong CAK" ping_fails h1 10.100.0.2
s=$(sniff_ping h1 10.100.0.2)
check wrong-cak-no-clear "frames on eth0.100: $s" no_clear "$s"
j=$(mka_json h1)
check wrong-cak-status "show says nothing of it: $j" jq_ok "$j" '(.secured | not) or (.tx_sa | not) or .live_peers == 0'
on h2 "$F" apply -q "$WORK/p.yaml" >/dev/null
check wrong-cak-heal "no traffic with the right CAK again" ping_ok h1 10.100.0.2

# --- (e) the peer's wpa_supplicant killed, then restarted ---
on h2 sh -c "kill \$(cat $RUN/pid)"
check peer-killed "h1 still sees a live peer" wait_mka h1 '.live_peers == 0'
s=$(sniff_ping h1 10.100.0.2)
check peer-killed-no-clear "frames on eth0.100: $s" no_clear "$s"
check peer-killed-no-traffic "ping crossed without the peer's MKA" ping_fails h1 10.100.0.2
on h2 "$F" apply -q "$WORK/p.yaml" >/dev/null
check peer-restarted "no traffic after the restart" ping_ok h1 10.100.0.2

# --- (b) interop: h2 without fabricctl, (f) the key server follows the priorities ---
hand_peer() { # PRIORITY: a plain wpa_supplicant configuration, the CAK in h2's /run (tmpfs)
	on h2 sh -c "[ -e $RUN/pid ] && kill \$(cat $RUN/pid); [ -e /run/hand/pid ] && kill \$(cat /run/hand/pid)
		for i in \$(seq 100); do ip link show type macsec | grep -q . || break; sleep 0.1; done
		mkdir -p -m 700 /run/hand && umask 077 && cat >/run/hand/w.conf <<EOF
ctrl_interface=/run/hand/ctrl
eapol_version=3
ap_scan=0
network={
	key_mgmt=NONE
	eapol_flags=0
	macsec_policy=1
	macsec_replay_protect=1
	macsec_replay_window=0
	mka_cak=\$(cat $WORK/keys/cak.key)
	mka_ckn=$CKN
	mka_priority=$1
}
EOF
		wpa_supplicant -i eth0.100 -D macsec_linux -c /run/hand/w.conf -P /run/hand/pid -B >/dev/null &&
		for i in \$(seq 100); do ip link show macsec0 >/dev/null 2>&1 && break; sleep 0.1; done &&
		ip addr add 10.100.0.2/24 dev macsec0"
}
hand_peer 1
check interop-ping "no traffic with a hand-configured wpa_supplicant" both_ways
check interop-show "h1 does not name h2 as live peer and key server" \
	wait_mka h1 ".live_peers == 1 and .peers[0].sci == \"$SCI2\" and .key_server_sci == \"$SCI2\" and (.is_key_server | not)"
hand_peer 255
check key-server-moves "h1 did not become key server against priority 255" \
	wait_mka h1 ".is_key_server and .key_server_sci == \"$SCI1\" and .live_peers == 1"
check key-server-moves-ping "no traffic after the key server moved" ping_ok h1 10.100.0.2
on h2 sh -c 'kill $(cat /run/hand/pid)' || :

# --- (g) the agent supervises wpa_supplicant (tests/lab/mka_agent.bash) ---
# shellcheck source=mka_agent.bash
source "$HERE/mka_agent.bash"
# --- (c) CAK rotation under a sequence-numbered stream (tests/lab/mka_rotate.bash) ---
# shellcheck source=mka_rotate.bash
source "$HERE/mka_rotate.bash"
done_
