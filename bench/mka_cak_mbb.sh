#!/bin/bash
# SPDX-License-Identifier: MIT
# The make-before-break CAK change of issue "MKA" measured on its own, with Debian's
# wpa_supplicant 2.10 and nothing of fabricctl's: what a fabricctl rotation will drive.
# wpa_supplicant 2.10 holds one CAK per KaY, so the new CAK gets a second
# wpa_supplicant on the same VLAN device, on the other SCI port (1 <-> 2); it creates
# its own SecY. Per rotation, on both lab hosts: start the new CA; wait until both
# ends' new CA is secured (a live peer, a SAK installed); move the address from the
# old SecY to the new one (h2 first, then h1); stop the old CA. A sequence-numbered
# UDP stream runs both ways through all of it (tests/lab/seqstream.c).
#
#   sudo bench/mka_cak_mbb.sh [--rotations N] [--rate PPS] [--hold SEC] [--load JOBS]
#
# --rotations (default 3): CAK changes in one stream; --rate (default 200) packets/s each
# way; --hold (default 10) seconds between the steps; --load JOBS busy loops on the
# host during the run (default 0), to see the mechanism under a loaded machine.
# Ends with one line BENCH {json}: rotations, sent and lost each way, the seconds each
# new CA took to be secured on both ends. Throwaway CAKs, written to the lab host
# directory (mode 0600) and the guests' /run (tmpfs), removed on exit. Boots its own
# 2-host lab (its own directory) and takes it down on exit, whatever happens.
set -uo pipefail
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin
SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "${SELF%/*}/.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$REPO/build}
LAB=$REPO/scripts/lab.sh
SEQ=$BUILD/tests/lab/seqstream
ROT=3 RATE=200 HOLD=10 LOAD=0
die() { printf 'mka_cak_mbb: FAILED: %s\n' "$*" >&2; exit 1; }
say() { printf 'mka_cak_mbb: %s\n' "$*" >&2; }
while [ $# -gt 0 ]; do
	case $1 in
	--rotations) ROT=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--hold) HOLD=$2; shift 2 ;;
	--load) LOAD=$2; shift 2 ;;
	-h | --help) sed -n '3,20p' "$SELF" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (--help)" ;;
	esac
done
[[ $ROT =~ ^[1-9][0-9]?$ && $RATE =~ ^[1-9][0-9]*$ && $HOLD =~ ^[1-9][0-9]*$ && $LOAD =~ ^[0-9]+$ ]] ||
	die "--rotations 1..99, --rate, --hold and --load take whole numbers"
[ "$(id -u)" = 0 ] || die "needs root (the lab)"
[ -x "$SEQ" ] || die "no $SEQ: build first (cmake --build build)"
command -v wpa_supplicant >/dev/null || [ -x /sbin/wpa_supplicant ] || die "no wpa_supplicant (apt-get install wpasupplicant)"

export FCTL_LAB_DIR=/var/tmp/fctl-mka-mbb.$$
# the CAKs: a host directory the guests see (their /var/tmp is their own tmpfs)
K=/var/tmp/fctl-mka-mbb-keys.$$
export FCTL_LAB_KEEP=$K
LOADP=() RX=() TX=()
cleanup() {
	local p
	for p in "${LOADP[@]}"; do kill "$p" 2>/dev/null; done
	"$LAB" down >/dev/null 2>&1
	rm -rf -- "$FCTL_LAB_DIR" "$K"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
on() { local h=$1; shift; "$LAB" exec --timeout 120 "$h" -- "$@"; }

secs=$((HOLD * (4 * ROT + 3) + 90 * ROT))
(umask 077 && mkdir -p "$K") || die "mkdir $K"
"$LAB" up --hosts 2 --lifetime $((secs + 900)) >/dev/null || die "the lab did not start"
hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
for ((r = 0; r <= ROT; r++)); do (umask 077 && hex 16 >"$K/cak$r" && hex 16 >"$K/ckn$r"); done

# CA R of host H on SCI port P (a wpa_supplicant of its own, run directory /run/caR)
ca_start() { # HOST R PORT
	on "$1" sh -c "mkdir -p -m 700 /run/ca$2 && umask 077 && cat >/run/ca$2/w.conf <<EOF
ctrl_interface=/run/ca$2/ctrl
eapol_version=3
ap_scan=0
network={
	key_mgmt=NONE
	eapol_flags=0
	macsec_policy=1
	macsec_replay_protect=1
	macsec_replay_window=0
	macsec_port=$3
	mka_cak=\$(cat $K/cak$2)
	mka_ckn=\$(cat $K/ckn$2)
}
EOF
wpa_supplicant -i eth0.100 -D macsec_linux -c /run/ca$2/w.conf -P /run/ca$2/pid -B >/dev/null"
}
ca_stop() { on "$1" sh -c "kill \$(cat /run/ca$2/pid) && rm -rf /run/ca$2"; }
# the SecY of CA R on HOST: the macsec device whose TX SCI ends in the port
secy() { # HOST PORT
	on "$1" sh -c "ip macsec show | awk -v p=\$(printf '%04x' $2) '/^[0-9]+: macsec/ { d = \$2 } /TXSC:/ && substr(\$2, 13) == p { sub(\":\", \"\", d); print d }'"
}
secured() { on "$1" sh -c "wpa_cli -p /run/ca$2/ctrl status 2>/dev/null | grep -q '^Secured=Yes'"; }

for h in h1 h2; do
	on $h sh -c "ip link add link eth0 name eth0.100 type vlan id 100 && ip link set eth0.100 up" ||
		die "$h: VLAN 100"
	ca_start $h 0 1 || die "$h: the first CA"
done
declare -A ADDR=([h1]=10.100.0.1 [h2]=10.100.0.2)
for h in h1 h2; do
	for i in $(seq 100); do d=$(secy $h 1) && [ -n "$d" ] && break; sleep 0.5; done
	[ -n "$d" ] && on $h ip addr add "${ADDR[$h]}/24" dev "$d" || die "$h: no SecY from the first CA"
done
for i in $(seq 30); do on h1 ping -c 1 -W 2 10.100.0.2 >/dev/null 2>&1 && break; sleep 2; done
on h1 ping -c 1 -W 2 10.100.0.2 >/dev/null 2>&1 || die "no traffic over the first CA"

for ((i = 0; i < LOAD; i++)); do
	sh -c 'while :; do :; done' &
	LOADP+=($!)
done
RX[0]=$("$LAB" exec-bg h2 -- "$SEQ" recv 5001 $((secs + 60)) 10) || die "h2: receiver"
RX[1]=$("$LAB" exec-bg h1 -- "$SEQ" recv 5002 $((secs + 60)) 10) || die "h1: receiver"
sleep 3
TX[0]=$("$LAB" exec-bg h1 -- "$SEQ" send 10.100.0.2 5001 "$RATE" "$secs") || die "h1: sender"
TX[1]=$("$LAB" exec-bg h2 -- "$SEQ" send 10.100.0.1 5002 "$RATE" "$secs") || die "h2: sender"
sleep "$HOLD"

WAITS=()
for ((r = 1; r <= ROT; r++)); do
	old=$(((r - 1) % 2 + 1)) new=$((r % 2 + 1))
	for h in h1 h2; do ca_start $h $r $new || die "rotation $r: $h: the new CA"; done
	t0=$SECONDS
	until secured h1 $r && secured h2 $r; do
		((SECONDS - t0 < 90)) || die "rotation $r: the new CA not secured on both ends in 90 s"
		sleep 1
	done
	WAITS+=($((SECONDS - t0)))
	say "rotation $r: CA $r secured on both ends after $((SECONDS - t0)) s (port $new)"
	sleep "$HOLD"
	for h in h2 h1; do
		o=$(secy $h $old) n=$(secy $h $new)
		[ -n "$o" ] && [ -n "$n" ] || die "rotation $r: $h: SecYs '$o' '$n'"
		on $h sh -c "ip addr add ${ADDR[$h]}/24 dev $n && ip addr del ${ADDR[$h]}/24 dev $o" ||
			die "rotation $r: $h: the address move"
	done
	say "rotation $r: addresses on the new SecYs"
	sleep "$HOLD"
	for h in h1 h2; do ca_stop $h $((r - 1)) || die "rotation $r: $h: stopping the old CA"; done
	say "rotation $r: old CA stopped"
	sleep "$HOLD"
done

"$LAB" kill h1 "${TX[0]}" >/dev/null 2>&1
"$LAB" kill h2 "${TX[1]}" >/dev/null 2>&1
s0=$("$LAB" wait --timeout 60 h1 "${TX[0]}" | sed -n 's/^sent \([0-9]*\).*/\1/p')
s1=$("$LAB" wait --timeout 60 h2 "${TX[1]}" | sed -n 's/^sent \([0-9]*\).*/\1/p')
r0=$("$LAB" wait --timeout 120 h2 "${RX[0]}" | grep '^received ')
r1=$("$LAB" wait --timeout 120 h1 "${RX[1]}" | grep '^received ')
[ -n "$s0" ] && [ -n "$s1" ] && [ -n "$r0" ] && [ -n "$r1" ] || die "a stream printed no result"
say "h1->h2: sent $s0, $r0"
say "h2->h1: sent $s1, $r1"
# lost = numbers never received up to the highest seen, plus the tail never seen
lost() { awk -v s="$1" '{ for (i = 1; i < NF; i++) { if ($i == "lost") l = $(i + 1); if ($i == "max_seq") m = $(i + 1) } }
	END { print l + (s - 1 - m) }' <<<"$2"; }
l0=$(lost "$s0" "$r0") l1=$(lost "$s1" "$r1")
printf 'BENCH {"rotations":%d,"rate_pps":%d,"load_jobs":%d,"h1_h2":{"sent":%d,"lost":%d},"h2_h1":{"sent":%d,"lost":%d},"secured_after_s":[%s]}\n' \
	"$ROT" "$RATE" "$LOAD" "$s0" "$l0" "$s1" "$l1" "$(IFS=,; echo "${WAITS[*]}")"
