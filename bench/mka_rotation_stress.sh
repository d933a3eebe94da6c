#!/bin/bash
# SPDX-License-Identifier: MIT
# Stress of fabricctl's make-before-break CAK rotation (docs/mka.md, "CAK rotation"):
# one 2-host lab boot, fabricctl apply and agents on both ends, a sequence-numbered UDP
# stream both ways (tests/lab/seqstream.c), then N CAK rotations one after the other
# (the profile alternating between two CAKs and CKNs, applied on one end then the other,
# the first end alternating), each waited for until done on both ends. Not part of CI.
#
#   sudo bench/mka_rotation_stress.sh [--rotations N] [--rate PPS] [--load JOBS]
#                                     [--evidence DIR] [--dir LABDIR] [--budget SECS]
#
# --rotations (default 50); --rate (default 200) packets/s each way; --load JOBS busy
# loops on the host beside the lab (default 0), started and stopped by this script;
# --evidence DIR: wpa_supplicant runs with -dd -t (no -K: keys stay out of its log),
# each guest samples its MACsec counters (ip -s macsec, ip -s link) every second, the
# receivers log every packet; DIR gets the samples, the wpa_supplicant lines of the CP
# state machine and SA installs, the agents' audit records and the packets around each
# gap. --dir: the lab directory (default /var/tmp/fctl-mka-stress.PID). --budget SECS: no
# rotation starts once SECS have passed since the streams started (a loaded machine: the
# summary then says how many were done).
# Prints one line per rotation (ROT i first-end secs lost_h1_h2 lost_h2_h1 load1) and a
# summary line BENCH {json}; exits 1 when a rotation did not complete or a packet was lost.
# Throwaway CAKs under the build tree (mode 0600; the guests see it read-only), removed
# on exit with the lab, whatever happens. Needs root and a build with tests/lab/seqstream.
set -uo pipefail
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin
SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "${SELF%/*}/.." && pwd)
BUILD=$(cd "${FCTL_BUILD_DIR:-$REPO/build}" && pwd)
LAB=$REPO/scripts/lab.sh
F=${FCTL_STRESS_FABRICCTL:-$BUILD/fabricctl/fabricctl} # another binary to compare with
SEQ=$BUILD/tests/lab/seqstream
ROT=50 RATE=200 LOAD=0 EVID="" LABDIR=/var/tmp/fctl-mka-stress.$$ BUDGET=0
die() { printf 'mka_rotation_stress: FAILED: %s\n' "$*" >&2; exit 1; }
say() { printf 'mka_rotation_stress: %s\n' "$*" >&2; }
while [ $# -gt 0 ]; do
	case $1 in
	--rotations) ROT=${2:-}; shift 2 ;;
	--rate) RATE=${2:-}; shift 2 ;;
	--load) LOAD=${2:-}; shift 2 ;;
	--evidence) EVID=${2:-}; shift 2 ;;
	--dir) LABDIR=${2:-}; shift 2 ;;
	--budget) BUDGET=${2:-}; shift 2 ;;
	-h | --help) sed -n '3,22p' "$SELF" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (--help)" ;;
	esac
done
[[ $ROT =~ ^[1-9][0-9]{0,2}$ && $RATE =~ ^[1-9][0-9]*$ && $LOAD =~ ^[0-9]+$ && $BUDGET =~ ^[0-9]+$ ]] ||
	die "--rotations 1..999, --rate, --load and --budget take whole numbers"
[ "$(id -u)" = 0 ] || die "needs root (the lab)"
[ -x "$F" ] && [ -x "$SEQ" ] || die "no $F or $SEQ: build first"
[ -x /sbin/wpa_supplicant ] || die "no /sbin/wpa_supplicant (apt-get install wpasupplicant)"
[ -z "$EVID" ] || mkdir -p "$EVID" || die "cannot create $EVID"

export FCTL_LAB_DIR=$LABDIR
WORK=$BUILD/mka-stress.$$ # the guests see the host's tree read-only: profiles, keys
LOADP=() RAG=() RX=() TX=() SAMP=()
cleanup() {
	local p
	for p in "${LOADP[@]}"; do kill "$p" 2>/dev/null; done
	"$LAB" down --dir "$LABDIR" >/dev/null 2>&1
	rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
lab() { "$LAB" "$@"; }
on() { local h=$1; shift; lab exec --timeout 180 --env FCTL_AUDIT_LOG=/var/lib/fabricctl/audit.log "$h" -- "$@"; }
hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

mkdir -p "$WORK/keys" || die "mkdir $WORK"
(umask 077 && hex 16 >"$WORK/keys/a.key" && hex 16 >"$WORK/keys/b.key") || die "keys"
CKN_A=$(hex 16) CKN_B=$(hex 16)
# the lab profile of tests/lab/mka.sh under this bench's name
# shellcheck source=../tests/lab/mka_profile.bash
. "$REPO/tests/lab/mka_profile.bash"
profile() { mka_profile "$1" mka-stress "$2" "$3" "$4"; } # FILE VERSION KEY CKN
profile "$WORK/p1.yaml" 1 a.key "$CKN_A"
"$F" validate -q "$WORK/p1.yaml" || die "the profile does not validate"
if [ -n "$EVID" ]; then
	# wpa_supplicant's debug log in the guest's /run (a tmpfs), one file per process,
	# named after its run directory; -dd without -K prints no key
	cat >"$WORK/wpa-debug.sh" <<'EOF'
#!/bin/sh
mkdir -p -m 700 /run/wpadbg
d=$(dirname "$6")
exec /sbin/wpa_supplicant -dd -t -f "/run/wpadbg/$(basename "$d").$(date +%s%N).log" "$@"
EOF
	chmod 755 "$WORK/wpa-debug.sh"
	export FCTL_MKA_WPA_SUPPLICANT=$WORK/wpa-debug.sh
fi

per_rot=40
lab up --hosts 2 --lifetime $((ROT * per_rot * 3 + 1200)) --boot-timeout 400 >/dev/null ||
	die "the lab did not start"
for h in h1 h2; do on $h "$F" apply -q "$WORK/p1.yaml" >/dev/null || die "$h: the first apply"; done
on h1 sh -c 'for i in $(seq 30); do ping -c 1 -W 2 -q 10.100.0.2 >/dev/null 2>&1 && exit 0; sleep 2; done; exit 1' ||
	die "no traffic over the first CA"
for i in 1 2; do
	RAG[i]=$(lab exec-bg "h$i" -- "$F" agent --host "h$i" --socket /run/fabricctl/agent.sock \
		--audit-log /var/lib/fabricctl/audit.log --drift-interval 0) || die "h$i: agent"
done
for h in h1 h2; do
	for _ in $(seq 60); do
		on $h "$F" status --json --target unix:/run/fabricctl/agent.sock >/dev/null 2>&1 && continue 2
		sleep 1
	done
	die "$h: the agent does not answer"
done
if [ -n "$EVID" ]; then
	for i in 1 2; do
		SAMP[i]=$(lab exec-bg "h$i" -- sh -c 'while :; do echo "T $(date +%s.%N)"
			ip -s -j macsec show; echo; ip -s -j link show type macsec; echo; sleep 1; done >/run/samples') ||
			die "h$i: sampler"
	done
fi
secs=$((ROT * per_rot * 3 + 600))
rlog() { [ -n "$EVID" ] && echo "/run/recv.log"; }
RX[1]=$(lab exec-bg h2 -- "$SEQ" recv 5101 $((secs + 60)) 60 $(rlog)) || die "h2: receiver"
RX[2]=$(lab exec-bg h1 -- "$SEQ" recv 5102 $((secs + 60)) 60 $(rlog)) || die "h1: receiver"
# the senders once both receivers are bound (a number sent before is lost above MACsec)
bound() { on "$1" sh -c "for i in \$(seq 300); do ss -Hlun 'sport = :$2' | grep -q . && exit 0; sleep 0.2; done; exit 1"; }
bound h2 5101 && bound h1 5102 || die "a receiver did not bind"
TX[1]=$(lab exec-bg h1 -- "$SEQ" send 10.100.0.2 5101 "$RATE" "$secs") || die "h1: sender"
TX[2]=$(lab exec-bg h2 -- "$SEQ" send 10.100.0.1 5102 "$RATE" "$secs") || die "h2: sender"
for ((i = 0; i < LOAD; i++)); do
	sh -c 'while :; do :; done' &
	LOADP+=($!)
done
sleep 3

# the guests' clocks against the host's (the gaps carry the sender's time)
goff() { local a b g; a=$(date +%s.%N); g=$(on "$1" date +%s.%N); b=$(date +%s.%N)
	awk -v a="$a" -v b="$b" -v g="$g" 'BEGIN { printf "%.3f", g - (a + b) / 2 }'; }
OFF1=$(goff h1) OFF2=$(goff h2)
cas() { on "$1" "$F" show --json | jq -c '.mka'; }
# below MACsec and above it: the ports, softnet, ARP (unresolved_discards), the
# neighbours, the IP/UDP counters, per host
snap() { # LABEL
	local i
	for i in 1 2; do
		on "h$i" sh -c "echo \"S $1 \$(date +%s.%N)\"; ip -s -j link show dev eth0; ip -s -j link show dev eth0.100
			cat /proc/net/softnet_stat /proc/net/stat/arp_cache; ip -s neigh show; nstat -az 2>/dev/null | grep -E 'Udp|IpIn|IpOut|IpExt' | grep -v ' 0 '" >>"$EVID/h$i.snaps" 2>&1
	done
}
rotated() { # CKN: one CA on each end, current, the CKN, secured, a SAK
	local i
	for i in 1 2; do
		jq -e --arg c "$1" 'length == 1 and .[0].ca == "current" and .[0].ckn == $c and .[0].secured and .[0].tx_sa' \
			<<<"$(cas h$i)" >/dev/null 2>&1 || return 1
	done
}
START=() DUR=() FIRST=() LOADAVG=() STUCK=0
ok=1
T0=$SECONDS
for ((r = 1; r <= ROT; r++)); do
	if ((BUDGET && SECONDS - T0 >= BUDGET)); then
		say "budget of $BUDGET s spent: $((r - 1)) rotations done"
		break
	fi
	if ((r % 2)); then key=b.key ckn=$CKN_B; else key=a.key ckn=$CKN_A; fi
	if ((r % 2)); then first=h1 second=h2; else first=h2 second=h1; fi
	profile "$WORK/p$((r + 1)).yaml" $((r + 1)) $key "$ckn"
	START[r]=$(date +%s.%N) FIRST[r]=$first
	[ -z "$EVID" ] || snap "start $r"
	on $first "$F" apply -q "$WORK/p$((r + 1)).yaml" >/dev/null || say "rotation $r: apply on $first failed"
	on $second "$F" apply -q "$WORK/p$((r + 1)).yaml" >/dev/null || say "rotation $r: apply on $second failed"
	t0=$SECONDS
	until rotated "$ckn"; do
		((SECONDS - t0 < 180)) || break
		sleep 1
	done
	if ! rotated "$ckn"; then
		# one more chance, counted: the same profile applied again on both ends
		say "rotation $r: not done on both ends in 180 s, applied again: h1 $(cas h1) h2 $(cas h2)"
		STUCK=$((STUCK + 1))
		for h in $first $second; do on $h "$F" apply -q "$WORK/p$((r + 1)).yaml" >/dev/null; done
		t0=$SECONDS
		until rotated "$ckn" || ((SECONDS - t0 >= 180)); do sleep 1; done
	fi
	if ! rotated "$ckn"; then
		say "rotation $r: not done on both ends in 180 s: h1 $(cas h1) h2 $(cas h2)"
		ok=0
		break
	fi
	DUR[r]=$(awk -v a="${START[r]}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
	LOADAVG[r]=$(cut -d' ' -f1 /proc/loadavg)
	say "rotation $r: done in ${DUR[r]} s (first $first, load ${LOADAVG[r]})"
done
done_rot=$((r - 1))
[ -z "$EVID" ] || snap "end"
sleep 3
for p in "${LOADP[@]}"; do kill "$p" 2>/dev/null; done
LOADP=()
lab kill h1 "${TX[1]}" >/dev/null 2>&1
lab kill h2 "${TX[2]}" >/dev/null 2>&1
s1=$(lab wait --timeout 60 h1 "${TX[1]}" | sed -n 's/^sent \([0-9]*\).*/\1/p')
s2=$(lab wait --timeout 60 h2 "${TX[2]}" | sed -n 's/^sent \([0-9]*\).*/\1/p')
o1=$(lab wait --timeout 180 h2 "${RX[1]}")
o2=$(lab wait --timeout 180 h1 "${RX[2]}")
r1=$(grep '^received ' <<<"$o1") r2=$(grep '^received ' <<<"$o2")
[ -n "$s1" ] && [ -n "$s2" ] && [ -n "$r1" ] && [ -n "$r2" ] || die "a stream printed no result"
say "h1->h2: sent $s1, $r1"
say "h2->h1: sent $s2, $r2"
# a gap's rotation: the last rotation started before the gap's sender time (host clock)
rot_of() { # SENDER_TIME GUEST_OFFSET
	local i best=0
	for ((i = 1; i <= done_rot; i++)); do
		awk -v t="$1" -v o="$2" -v s="${START[i]}" 'BEGIN { exit !(t - o >= s - 2) }' && best=$i
	done
	echo $best
}
declare -A L12 L21
while read -r _ a b _ t _; do
	n=$((b - a + 1)) k=$(rot_of "$t" "$OFF1")
	L12[$k]=$((${L12[$k]:-0} + n))
	echo "GAP h1->h2 seq $a..$b sent before $t rotation $k"
done < <(grep '^gap ' <<<"$o1")
while read -r _ a b _ t _; do
	n=$((b - a + 1)) k=$(rot_of "$t" "$OFF2")
	L21[$k]=$((${L21[$k]:-0} + n))
	echo "GAP h2->h1 seq $a..$b sent before $t rotation $k"
done < <(grep '^gap ' <<<"$o2")
lost() { awk -v s="$1" '{ for (i = 1; i < NF; i++) { if ($i == "lost") l = $(i + 1); if ($i == "max_seq") m = $(i + 1) } }
	END { print l + (s - 1 - m) }' <<<"$2"; }
l1=$(lost "$s1" "$r1") l2=$(lost "$s2" "$r2")
for ((i = 1; i <= done_rot; i++)); do
	echo "ROT $i first=${FIRST[i]} secs=${DUR[i]} lost_h1_h2=${L12[$i]:-0} lost_h2_h1=${L21[$i]:-0} load1=${LOADAVG[i]}"
done
if [ -n "$EVID" ]; then
	cak_a=$(cat "$WORK/keys/a.key") cak_b=$(cat "$WORK/keys/b.key")
	for i in 1 2; do
		lab kill "h$i" "${SAMP[i]}" >/dev/null 2>&1
		lab kill "h$i" "${RAG[i]}" >/dev/null 2>&1
		lab wait --timeout 30 "h$i" "${RAG[i]}" >"$EVID/h$i.agent" 2>&1
		on "h$i" cat /run/samples >"$EVID/h$i.samples" 2>/dev/null
		on "h$i" cat /var/lib/fabricctl/audit.log >"$EVID/h$i.audit" 2>/dev/null
		on "h$i" sh -c 'for f in /run/wpadbg/*.log; do echo "== $f"; grep -E "CP: |KaY: (Create|Enable|Disable|Delete|delete|The|Update|Lowest|Participant|Peer|New)|secy_|EAPOL-MKA|Selected|live peer|Key Server|SAK" "$f"; done' \
			>"$EVID/h$i.wpa" 2>/dev/null
		# the packets around each gap this host received
		o=$o2
		((i == 2)) && o=$o1
		while read -r _ a b _; do
			on "h$i" awk -v a="$a" -v b="$b" '$1 >= a - 40 && $1 <= b + 40' /run/recv.log
		done < <(grep '^gap ' <<<"$o") >"$EVID/h$i.recv-around-gaps"
	done
	# never a CAK in what is kept
	if grep -rqiF -e "$cak_a" -e "$cak_b" "$EVID"; then
		rm -f "$EVID"/h?.wpa
		say "a CAK appeared in the wpa_supplicant log: not kept"
	fi
	{ printf 'START'; printf ' %s' "${START[@]}"; printf '\nOFFSETS h1 %s h2 %s\n' "$OFF1" "$OFF2"; } >"$EVID/times"
fi
printf 'BENCH {"rotations":%d,"rotations_done":%d,"applied_again":%d,"rate_pps":%d,"load_jobs":%d,"h1_h2":{"sent":%d,"lost":%d},"h2_h1":{"sent":%d,"lost":%d}}\n' \
	"$ROT" "$done_rot" "$STUCK" "$RATE" "$LOAD" "$s1" "$l1" "$s2" "$l2"
[[ $ok == 1 && $STUCK == 0 && $l1 == 0 && $l2 == 0 ]]
