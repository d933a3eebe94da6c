#!/bin/bash
# SPDX-License-Identifier: MIT
# Where a frame goes in fabricctl's CAK rotation (docs/mka.md, "CAK rotation: what lost
# frames"): two rotations on one 2-host lab boot under a sequence-numbered UDP stream both
# ways, each with h2's agent held (SIGSTOP) so that h2 has not moved its addresses when h1
# judges the switch, and one of the two things a loaded TCG machine does by itself made
# to happen on purpose:
#   silent-peer  h2's sender stopped for 4.5 s after h1's move (a starved guest):
#                nothing arrives on h1's old SecY, though h2 has not moved
#   busy-ca      h1's current wpa_supplicant stopped for 3 s after h1's move: its PING
#                unanswered (a busy process)
# then h2's agent released. Prints per case the packets lost each way and both ends' MACsec
# counters (InPktsNoSCI, InPktsNotUsingSA, InPktsUnusedSA, InPktsLate, InPktsNotValid per
# SecY and receive channel) before and after, and whether h1 stopped its old CA while h2
# still sent through it. Not part of CI.
#
#   sudo bench/mka_rotation_faults.sh [--dir LABDIR]
#
# FCTL_STRESS_FABRICCTL: another fabricctl binary to run (e.g. one built from an older
# commit, to compare). Throwaway CAKs under the build tree, removed on exit with the lab.
set -uo pipefail
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin
SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "${SELF%/*}/.." && pwd)
BUILD=$(cd "${FCTL_BUILD_DIR:-$REPO/build}" && pwd)
LAB=$REPO/scripts/lab.sh
F=${FCTL_STRESS_FABRICCTL:-$BUILD/fabricctl/fabricctl}
SEQ=$BUILD/tests/lab/seqstream
LABDIR=/var/tmp/fctl-mka-faults.$$
die() { printf 'mka_rotation_faults: FAILED: %s\n' "$*" >&2; exit 1; }
say() { printf 'mka_rotation_faults: %s\n' "$*" >&2; }
while [ $# -gt 0 ]; do
	case $1 in
	--dir) LABDIR=${2:-}; shift 2 ;;
	-h | --help) sed -n '3,21p' "$SELF" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (--help)" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "needs root (the lab)"
[ -x "$F" ] && [ -x "$SEQ" ] || die "no $F or $SEQ: build first"
export FCTL_LAB_DIR=$LABDIR
WORK=$BUILD/mka-faults.$$
cleanup() { "$LAB" down --dir "$LABDIR" >/dev/null 2>&1; rm -rf -- "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
lab() { "$LAB" "$@"; }
on() { local h=$1; shift; lab exec --timeout 180 --env FCTL_AUDIT_LOG=/var/lib/fabricctl/audit.log "$h" -- "$@"; }
hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
mkdir -p "$WORK/keys" && (umask 077 && hex 16 >"$WORK/keys/a.key" && hex 16 >"$WORK/keys/b.key") || die "keys"
CKN_A=$(hex 16) CKN_B=$(hex 16)
# the lab profile of tests/lab/mka.sh under this bench's name
# shellcheck source=../tests/lab/mka_profile.bash
. "$REPO/tests/lab/mka_profile.bash"
profile() { mka_profile "$1" mka-faults "$2" "$3" "$4"; } # FILE VERSION KEY CKN
profile "$WORK/p1.yaml" 1 a.key "$CKN_A"
profile "$WORK/p2.yaml" 2 b.key "$CKN_B"
profile "$WORK/p3.yaml" 3 a.key "$CKN_A"
lab up --hosts 2 --lifetime 3600 --boot-timeout 400 >/dev/null || die "the lab did not start"
for h in h1 h2; do on $h "$F" apply -q "$WORK/p1.yaml" >/dev/null || die "$h: the first apply"; done
on h1 sh -c 'for i in $(seq 30); do ping -c 1 -W 2 -q 10.100.0.2 >/dev/null 2>&1 && exit 0; sleep 2; done; exit 1' ||
	die "no traffic over the first CA"
# every process this script signals writes its pid first, and is signalled by that pid
for i in 1 2; do
	lab exec-bg "h$i" -- sh -c "echo \$\$ >/run/agent.pid; exec $F agent --host h$i \
		--socket /run/fabricctl/agent.sock --audit-log /var/lib/fabricctl/audit.log --drift-interval 0" \
		>/dev/null || die "h$i: agent"
done
for h in h1 h2; do
	for _ in $(seq 60); do
		on $h "$F" status --json --target unix:/run/fabricctl/agent.sock >/dev/null 2>&1 && continue 2
		sleep 1
	done
	die "$h: the agent does not answer"
done
RX1=$(lab exec-bg h2 -- "$SEQ" recv 5101 3000 120) || die "h2: receiver"
RX2=$(lab exec-bg h1 -- "$SEQ" recv 5102 3000 120) || die "h1: receiver"
# the senders once both receivers are bound (a number sent before is lost above MACsec)
bound() { on "$1" sh -c "for i in \$(seq 300); do ss -Hlun 'sport = :$2' | grep -q . && exit 0; sleep 0.2; done; exit 1"; }
bound h2 5101 && bound h1 5102 || die "a receiver did not bind"
TX1=$(lab exec-bg h1 -- sh -c "echo \$\$ >/run/tx.pid; exec $SEQ send 10.100.0.2 5101 200 2900") || die "h1: sender"
TX2=$(lab exec-bg h2 -- sh -c "echo \$\$ >/run/tx.pid; exec $SEQ send 10.100.0.1 5102 200 2900") || die "h2: sender"
sleep 3

# the MACsec counters that say where a frame went, per SecY and receive channel
counters() { # HOST
	on "$1" sh -c "ip -s -j macsec show" | jq -c '[.[] | {dev: .ifname, sci: .sci[-4:],
		NoSCI: .InPktsNoSCI, UnknownSCI: .InPktsUnknownSCI, out: .OutPktsEncrypted,
		rx: [.rx_sc[]? | {sci: .sci[-4:], ok: .InPktsOK, Late: .InPktsLate, NotValid: .InPktsNotValid,
			NotUsingSA: .InPktsNotUsingSA, UnusedSA: .InPktsUnusedSA}]}]'
}
moved() { on "$1" sh -c 'for d in /run/fabricctl/mka/eth0.100:*; do grep -q "moved_at=[1-9]" "$d/rotation" 2>/dev/null && exit 0; done; exit 1'; }
incoming() { on "$1" sh -c 'ls -d /run/fabricctl/mka/eth0.100:* >/dev/null 2>&1'; }
cas() { on "$1" "$F" show --json | jq -c '.mka'; }
rotated() { # CKN
	local i
	for i in 1 2; do
		jq -e --arg c "$1" 'length == 1 and .[0].ca == "current" and .[0].ckn == $c and .[0].secured and .[0].tx_sa' \
			<<<"$(cas h$i)" >/dev/null 2>&1 || return 1
	done
}
# one case: h2's agent held, the profile applied on both ends, h1 moves, the fault, then
# h2's agent released; the fault is a shell command for h1 or h2 (FHOST FCMD)
run_case() { # NAME PROFILE CKN FHOST FCMD
	local name=$1 prof=$2 ckn=$3 fh=$4 fcmd=$5 t0 early=no
	on h2 sh -c 'kill -STOP $(cat /run/agent.pid)' || die "$name: holding h2's agent"
	on h1 "$F" apply -q "$prof" >/dev/null || die "$name: apply on h1"
	on h2 "$F" apply -q "$prof" >/dev/null || die "$name: apply on h2"
	t0=$SECONDS
	until moved h1; do ((SECONDS - t0 < 300)) || die "$name: h1 did not move in 300 s"; sleep 1; done
	echo "CASE $name: h1 moved after $((SECONDS - t0)) s; before the fault: h1 $(counters h1) h2 $(counters h2)"
	on "$fh" sh -c "$fcmd" || die "$name: the fault"
	sleep 8 # four of h1's agent checks while h2 still sends through the old CA
	incoming h1 || early=yes
	echo "CASE $name: h1 stopped its old CA before h2 moved: $early; h1 $(counters h1) h2 $(counters h2)"
	on h2 sh -c 'kill -CONT $(cat /run/agent.pid)' || die "$name: releasing h2's agent"
	t0=$SECONDS
	until rotated "$ckn"; do ((SECONDS - t0 < 300)) || die "$name: not rotated in 300 s"; sleep 2; done
	echo "CASE $name: rotated on both ends $((SECONDS - t0)) s after h2's agent was released"
}
run_case silent-peer "$WORK/p2.yaml" "$CKN_B" h2 'kill -STOP $(cat /run/tx.pid); sleep 4.5; kill -CONT $(cat /run/tx.pid)'
run_case busy-ca "$WORK/p3.yaml" "$CKN_A" h1 'p=$(cat /run/fabricctl/mka/eth0.100/pid); kill -STOP $p; sleep 3; kill -CONT $p'
sleep 3
lab kill h1 "$TX1" >/dev/null 2>&1
lab kill h2 "$TX2" >/dev/null 2>&1
s1=$(lab wait --timeout 60 h1 "$TX1" | sed -n 's/^sent \([0-9]*\).*/\1/p')
s2=$(lab wait --timeout 60 h2 "$TX2" | sed -n 's/^sent \([0-9]*\).*/\1/p')
o1=$(lab wait --timeout 200 h2 "$RX1")
o2=$(lab wait --timeout 200 h1 "$RX2")
echo "h1->h2: sent $s1, $(grep '^received ' <<<"$o1")"
grep '^gap ' <<<"$o1" | sed 's/^/h1->h2 /'
echo "h2->h1: sent $s2, $(grep '^received ' <<<"$o2")"
grep '^gap ' <<<"$o2" | sed 's/^/h2->h1 /'
for h in h1 h2; do
	echo "AUDIT $h:"
	on $h sh -c 'grep -E "mka-(rotate|state)" /var/lib/fabricctl/audit.log' | jq -r '[.time, .action, .result] | @tsv'
done
