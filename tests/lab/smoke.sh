#!/bin/bash
#
# Smoke test of the real-kernel lab (scripts/lab.sh): two guests on one wire,
# configured by hand with iproute2 -- no fabricctl code involved.  It proves
# the lab can do what fabricctl's live tests need:
#
#   lab-up           two hosts boot and answer commands
#   scratch-dirs     /var/lib/fabricctl, /root, /tmp, /run writable in a guest, whether
#                    or not the host has /var/lib/fabricctl (a purge removes it), and
#                    the rest of the host's /var/lib still visible beside it
#   macsec-ping      VLAN 100 on eth0, MACsec GCM-AES-128 (encrypt on) over
#                    it, 10.100.0.1/24 <-> 10.100.0.2/24 ping
#   macsec-counters  InPktsOK grew on both sides, InPktsNotValid stayed 0
#   rxe-devices      soft-RoCE rxe0 on macsec0, listed by ibv_devices
#   rdma-send-lat    ib_send_lat (RoCE v2 over MACsec over VLAN) completes
#   mgmt-forward     (lab up --mgmt-port) the build host's 127.0.0.1:N reaches a listener on
#                    each guest's mgmt0 port, and only that host's: status names the forwards
#   mgmt-isolated    a guest reaches nothing of the build host through mgmt0: a listener
#                    on the host's loopback (what slirp's 10.0.2.2 would be) sees no connection
#
# Needs root, qemu and a stock kernel (lab.sh installs them if it can).  A
# missing piece is a FAIL, never a silent skip.  Runs in its own lab dir so a
# developer's lab is left alone; the lab is torn down on exit.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB=$(cd "$HERE/../.." && pwd)/scripts/lab.sh
DIR=${FCTL_SMOKE_LAB_DIR:-/var/tmp/fabricctl-lab-smoke.$$}
export FCTL_LAB_DIR=$DIR

passed=0
failed=0
pass() {
	echo "PASS $1"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL $1${2:+: $2}"
	failed=$((failed + 1))
}
finished=0
finish() {
	finished=1
	echo "smoke: $passed passed, $failed failed"
	if ((failed > 0 || passed == 0)); then exit 1; fi
	exit 0
}
lab() { "$LAB" "$@"; }

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local rc=$?
	"$LAB" down --dir "$DIR" >/dev/null 2>&1 || :
	if ((!finished)); then
		echo "FAIL harness: smoke.sh stopped early (exit $rc)"
		echo "smoke: $passed passed, $((failed + 1)) failed"
		exit 1
	fi
}
trap cleanup EXIT

# 16 random bytes as 32 hex digits (test data only).
hexkey() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }

TESTS=(lab-up scratch-dirs macsec-ping macsec-counters rxe-devices rdma-send-lat)
fail_rest() {
	local from=$1 t on=0
	for t in "${TESTS[@]}"; do
		if [[ $t == "$from" ]]; then
			on=1
			fail "$t" "${2:-not run}"
		elif ((on)); then
			fail "$t" "not run ($from failed)"
		fi
	done
	finish
}

# --- lab-up -----------------------------------------------------------------
if [[ $(id -u) != 0 ]]; then
	fail_rest lab-up "must run as root"
fi
t0=$(date +%s)
if ! lab up --hosts 2 --dir "$DIR" --lifetime 900 --mgmt-port 7070; then
	fail_rest lab-up "lab.sh up failed (qemu or kernel missing? see above)"
fi
if [[ $(lab exec h1 hostname 2>&1) == h1 && $(lab exec h2 hostname 2>&1) == h2 ]]; then
	pass lab-up
else
	fail_rest lab-up "guests do not answer commands"
fi
echo "lab up in $(($(date +%s) - t0)) s"

# --- scratch-dirs -------------------------------------------------------------
if [[ -d /var/lib/fabricctl ]]; then how="the host has /var/lib/fabricctl"; else how="the host has no /var/lib/fabricctl"; fi
# shellcheck disable=SC2016 # expanded inside the guest
if out=$(lab exec h1 -- sh -c 'set -e
	for d in /var/lib/fabricctl /root /tmp /run; do echo x >"$d/.smoke"; rm "$d/.smoke"; done
	test -f /var/lib/dpkg/status' 2>&1); then
	pass "scratch-dirs ($how)"
else
	fail scratch-dirs "$how: $out"
fi

# --- guest-root: the guest's / is the host root's top level, read-only ------------
# (scripts/lab-guest-init.sh: a tmpfs with the host's top-level symlinks copied and its
# directories bound, then made read-only; the loader's cache a RAM copy of the host's)
hostlinks=
for l in /bin /lib /lib64 /sbin; do [[ -L $l ]] && hostlinks+="$l=$(readlink "$l") "; done
ldsum=$(sha256sum </etc/ld.so.cache | cut -d' ' -f1)
# shellcheck disable=SC2016 # expanded inside the guest
if out=$(lab exec h1 -- sh -c 'set -e
	t=$(stat -f -c %T /)
	[ "$t" = tmpfs ] || { echo "/ is $t, not the tmpfs root"; exit 1; }
	if touch /.smoke-root 2>/dev/null; then echo "/ is writable"; exit 1; fi
	for e in $1; do
		[ "$(readlink "${e%%=*}")" = "${e#*=}" ] || { echo "${e%%=*} is not ${e#*=}"; exit 1; }
	done
	awk "\$5 == \"/etc/ld.so.cache\" { f = 1 } END { exit !f }" /proc/self/mountinfo ||
		{ echo "/etc/ld.so.cache is not a mount of its own"; exit 1; }
	s=$(sha256sum </etc/ld.so.cache | cut -d" " -f1)
	[ "$s" = "$2" ] || { echo "/etc/ld.so.cache differs from the host'"'"'s"; exit 1; }
	test -f "$3/scripts/lab.sh" || { echo "$3/scripts/lab.sh not seen"; exit 1; }
	/usr/bin/true' sh "$hostlinks" "$ldsum" "${LAB%/scripts/lab.sh}" 2>&1); then
	pass "guest-root (${hostlinks% })"
else
	fail guest-root "$out"
fi

# --- macsec-ping ------------------------------------------------------------
status=$(lab status --json) || fail_rest macsec-ping "lab.sh status --json failed"
mac1=$(jq -r '.nics[] | select(.host == "h1" and .port == "eth0") | .mac' <<<"$status")
mac2=$(jq -r '.nics[] | select(.host == "h2" and .port == "eth0") | .mac' <<<"$status")
key1=$(hexkey)
key2=$(hexkey)

# $1 tx key, $2 rx key, $3 peer MAC (SCI address), $4 own address.
# The VLAN and the SecY inherit eth0's MAC, so the peer's SCI is its eth0 MAC
# with port 1.
# shellcheck disable=SC2016 # expanded inside the guest
CONF='set -e
ip link add link eth0 name eth0.100 type vlan id 100
ip link set eth0.100 up
ip link add link eth0.100 name macsec0 type macsec port 1 cipher gcm-aes-128 encrypt on
ip macsec add macsec0 tx sa 0 pn 1 on key 01 "$1"
ip macsec add macsec0 rx port 1 address "$3"
ip macsec add macsec0 rx port 1 address "$3" sa 0 pn 1 on key 02 "$2"
ip link set macsec0 up
ip addr add "$4" dev macsec0'

# Sum of a counter over every RX SC of macsec0 (jq reads `ip -j -s macsec show`).
counter() {
	lab exec "$1" -- ip -j -s macsec show macsec0 |
		jq --arg c "$2" '[.[0].rx_sc[]? | .[$c] // 0] | add // 0' || echo -1
}

ok=1
lab exec h1 -- sh -c "$CONF" conf "$key1" "$key2" "$mac2" 10.100.0.1/24 || ok=0
lab exec h2 -- sh -c "$CONF" conf "$key2" "$key1" "$mac1" 10.100.0.2/24 || ok=0
if ((ok)); then
	before1=$(counter h1 InPktsOK) before2=$(counter h2 InPktsOK)
	if lab exec --timeout 60 h1 -- ping -c 5 -i 0.2 -W 3 10.100.0.2 &&
		lab exec --timeout 60 h2 -- ping -c 3 -i 0.2 -W 3 10.100.0.1; then
		pass macsec-ping
	else
		fail macsec-ping "no ping over macsec0"
	fi
else
	fail macsec-ping "VLAN/MACsec configuration failed"
fi

# --- macsec-counters ------------------------------------------------------------
if ((ok)); then
	after1=$(counter h1 InPktsOK) after2=$(counter h2 InPktsOK)
	bad1=$(counter h1 InPktsNotValid) bad2=$(counter h2 InPktsNotValid)
	echo "InPktsOK h1 $before1 -> $after1, h2 $before2 -> $after2; InPktsNotValid h1 $bad1, h2 $bad2"
	if ((after1 > before1 && after2 > before2 && bad1 == 0 && bad2 == 0)); then
		pass macsec-counters
	else
		fail macsec-counters "InPktsOK did not grow or InPktsNotValid is not 0"
	fi
else
	fail macsec-counters "no MACsec link"
fi

# --- rxe-devices ------------------------------------------------------------
rxe=1
for h in h1 h2; do
	lab exec "$h" -- rdma link add rxe0 type rxe netdev macsec0 || rxe=0
done
if ((rxe)) && lab exec h1 ibv_devices | grep -qw rxe0 && lab exec h2 ibv_devices | grep -qw rxe0; then
	pass rxe-devices
else
	rxe=0
	fail rxe-devices "rxe0 over macsec0 missing from ibv_devices"
fi

# --- rdma-send-lat ----------------------------------------------------------
# -u 20: under TCG perftest's default QP timeout makes rxe retransmit a lot.
LAT=(ib_send_lat -d rxe0 -x 1 -u 20 -n 50)
if ((rxe)); then
	server=$(lab exec-bg --timeout 180 h2 -- "${LAT[@]}") || server=none
	# Wait until the server listens for perftest's TCP exchange (port 18515).
	for _ in $(seq 60); do
		lab exec h2 -- ss -Hltn 'sport = :18515' | grep -q . && break
		sleep 0.5
	done
	if out=$(lab exec --timeout 120 h1 -- "${LAT[@]}" 10.100.0.2 2>&1) &&
		lab wait --timeout 60 h2 "$server" >/dev/null 2>&1; then
		echo "$out" | grep -A1 't_typical' || :
		pass rdma-send-lat
	else
		echo "$out"
		lab kill h2 "$server" 2>/dev/null || :
		fail rdma-send-lat "ib_send_lat over rxe0 failed"
	fi
else
	fail rdma-send-lat "no rxe0"
fi

# --- mgmt-forward, mgmt-isolated ------------------------------------------------
status=$(lab status --json)
ok=1 why=
for h in h1 h2; do
	ep=$(jq -r --arg h "$h" '.hosts[] | select(.host == $h) | .mgmt // empty' <<<"$status")
	[[ $ep =~ ^127\.0\.0\.1:[0-9]+$ ]] || { ok=0 why+=" $h: no forward in status ('$ep')"; continue; }
	job=$(lab exec-bg --timeout 60 "$h" -- sh -c "echo i-am-$h | busybox nc -l -p 7070") || { ok=0; continue; }
	got=
	for _ in $(seq 40); do
		got=$(timeout 5 bash -c "exec 3<>/dev/tcp/${ep%:*}/${ep#*:}; cat <&3" 2>/dev/null) && [[ -n $got ]] && break
		sleep 0.5
	done
	[[ $got == "i-am-$h" ]] || { ok=0 why+=" $h: '$got' through $ep"; }
	lab kill "$h" "$job" >/dev/null 2>&1 || :
done
((ok)) && pass mgmt-forward || fail mgmt-forward "$why"
# restrict=on: the guest's packets go nowhere. A listener on the host's loopback, and the
# guest trying every way slirp would have mapped to it (the gateway 10.0.2.2, the DNS
# address 10.0.2.3); it must see no connection, and the guest's attempts must fail.
pyl=$(mktemp)
/usr/bin/python3 -c 'import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 0)); s.listen(4)
print(s.getsockname()[1], flush=True); s.settimeout(20)
try:
    c, a = s.accept(); print("CONNECTED", a, flush=True)
except socket.timeout:
    print("none", flush=True)' >"$pyl" &
pyp=$!
for _ in $(seq 50); do [[ -s $pyl ]] && break; sleep 0.1; done
hp=$(head -1 "$pyl")
if out=$(lab exec --timeout 30 h1 -- sh -c "for a in 10.0.2.2 10.0.2.3 127.0.0.1; do
	timeout 5 bash -c \"exec 3<>/dev/tcp/\$a/$hp\" 2>/dev/null && echo reached \$a; done; echo tried" 2>&1); then :; fi
wait "$pyp"
if [[ -n $hp && $out == *tried* && $out != *reached* ]] && grep -qx none "$pyl"; then
	pass mgmt-isolated
else
	fail mgmt-isolated "guest: $out; host listener on $hp: $(tail -1 "$pyl")"
fi
rm -f "$pyl"

finish
