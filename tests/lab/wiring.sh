#!/bin/bash
# The lab wired as a profile says: `fabricctl lab up --profile` of a three-host
# triangle (tests/lab/profiles/triangle.yaml: host names node-a/b/c, ports p0
# and p1, custom MACs, one jumbo edge), then in each guest:
#
#   - the hostname is the profile host's name, and exec takes it as well as hN
#   - the NICs carry the profile's port names, MACs and MTUs
#   - each link carries traffic (IPv6 link-local ping between its two ends)
#   - `fabricctl apply` of that same profile succeeds without --host, and a
#     ping over each MACsec VLAN succeeds, encrypted (counters)
#   - VLAN 101's QoS map (`qos: { roce: true }`): the kernel's maps, no drift, drift
#     set by hand found and repaired, and SO_PRIORITY 3 traffic leaving with PCP 3 in
#     the clear 802.1Q tag in front of the MACsec frame, as tcpdump on the peer sees it
#   - soft-RoCE (rxe on VLAN 101's SecY) with traffic class 104: TOS 104 inside, PCP 0
#     in the clear tag (rxe leaves skb->priority 0); PCP 3 once a tc skbedit on the
#     SecY's egress turns DSCP 26 into skb priority 3
#
# Before any VM: `lab up --profile --dry-run` gives the expected wiring, and
# lab.sh refuses bad --wiring/--mac/--name/--ifname up front.
#
# Prints PASS/FAIL per check and "wiring: N passed, M failed"; exits non-zero
# on any failure, including a lab that cannot start (never skips).
#
#   FCTL_BUILD_DIR   build tree with fabricctl (default: build/)
#   FCTL_LAB_DIR     lab directory (default /var/tmp/fabricctl-lab-wiring)
set -uo pipefail

SUITE=wiring
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-wiring
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PROFILE_SRC=$ROOT/tests/lab/profiles/triangle.yaml
# Guests see the host root read-only (live), but not the host's /tmp or
# /var/tmp: the key and a copy of the profile live under the build tree.
WORK=$BUILD/lab-wiring-work
export FCTL_LAB_SCRIPT=$LAB
same() { # name, want, got
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "want '$2', got '$3'"; fi
}

suite_cleanup() {
	rm -rf "$WORK" # test key material
}

# The profile, as the guests must see it: host name, then per port
# "NAME MAC MTU", in profile order (kept in step with triangle.yaml).
HOSTS=(node-a node-b node-c)
declare -A PORTS=(
	[node-a]="p0 0c:42:a1:00:0a:00 1500 p1 0c:42:a1:00:0a:01 9000"
	[node-b]="p0 0c:42:a1:00:0b:00 1500 p1 0c:42:a1:00:0b:01 1500"
	[node-c]="p0 0c:42:a1:00:0c:00 1500 p1 0c:42:a1:00:0c:01 9000"
)
# Links: "HOST:PORT HOST:PORT VLAN ADDR_A ADDR_B"
LINKS=(
	"node-a:p0 node-b:p0 101 10.101.0.1 10.101.0.2"
	"node-b:p1 node-c:p0 102 10.102.0.2 10.102.0.3"
	"node-c:p1 node-a:p1 103 10.103.0.3 10.103.0.1"
)
WIRING="h1.eth0=h2.eth0,h1.eth1=h3.eth1,h2.eth1=h3.eth0"

# --- before any VM ------------------------------------------------------------
if [ ! -x "$F" ]; then
	fail "build" "$F is missing: build first (cmake --build build)"
	exit 1
fi

if out=$("$F" lab up --profile "$PROFILE_SRC" --dry-run 2>&1) && grep -q -- "--wiring h1.eth0=h2.eth0,h2.eth1=h3.eth0,h3.eth1=h1.eth1 " <<<"$out" &&
	grep -q -- "--name h1=node-a " <<<"$out" && grep -q -- "--ifname h3.eth1=p1 " <<<"$out" &&
	grep -q -- "--mac h2.eth1=0c:42:a1:00:0b:01 " <<<"$out" && grep -q -- "--mtu h1.eth1=9000 " <<<"$out" &&
	grep -Eq "node-c:p1 +-> h3.eth1 +p1 +0c:42:a1:00:0c:01 +9000 +node-a:p1" <<<"$out"; then
	pass "dry-run-mapping"
else
	fail "dry-run-mapping" "$out"
fi

refused() { # name, expected message (grep -E), lab.sh up args...
	local name=$1 want=$2 o
	shift 2
	if o=$("$LAB" up --dir /var/tmp/fabricctl-lab-wiring-never "$@" 2>&1); then
		fail "$name" "accepted: $*"
		"$LAB" down --dir /var/tmp/fabricctl-lab-wiring-never >/dev/null 2>&1
	elif grep -Eq -- "$want" <<<"$o"; then
		pass "$name"
	else
		fail "$name" "wrong message: $o"
	fi
}
refused "refuse-self-link" "links h1 to itself" --wiring h1.eth0=h1.eth1
refused "refuse-port-twice" "h2.eth0 is used twice" --wiring h1.eth0=h2.eth0,h3.eth0=h2.eth0
refused "refuse-host-above-hosts" "names h4 but --hosts is 3" --hosts 3 --wiring h1.eth0=h4.eth0
refused "refuse-bad-mac" "not a MAC address" --wiring h1.eth0=h2.eth0 --mac h1.eth0=0c:42:a1:00:01
refused "refuse-multicast-mac" "multicast" --wiring h1.eth0=h2.eth0 --mac h1.eth0=01:00:5e:00:00:01
refused "refuse-duplicate-mac" "is on both h1.eth0 and h2.eth0" --wiring h1.eth0=h2.eth0 \
	--mac h1.eth0=0c:42:a1:00:01:00 --mac h2.eth0=0c:42:a1:00:01:00
refused "refuse-mac-unknown-nic" "h1 has no eth3" --wiring h1.eth0=h2.eth0 --mac h1.eth3=0c:42:a1:00:01:00
refused "refuse-name-is-other-id" "another lab host's id" --wiring h1.eth0=h2.eth0 --name h1=h2
refused "refuse-duplicate-ifname" "interface name p0 is on both" --wiring h1.eth0=h2.eth0,h1.eth1=h2.eth1 \
	--ifname h1.eth0=p0 --ifname h1.eth1=p0
refused "refuse-long-ifname" "not an interface name" --wiring h1.eth0=h2.eth0 --ifname h1.eth0=ens1f0np0abcdefg

# --- the lab, from the profile --------------------------------------------------
if ! "$F" lab up --profile "$PROFILE_SRC" --lifetime 1200; then
	fail "lab-up-profile" "the lab did not start (see the console tail above)"
	exit 1
fi
pass "lab-up-profile"

st=$("$LAB" status --json)
if [ "$(jq -r '[.hosts[] | "\(.host)=\(.name)"] | join(",")' <<<"$st")" = "h1=node-a,h2=node-b,h3=node-c" ] &&
	[ "$(jq -r .wiring <<<"$st")" = "$WIRING" ] &&
	[ "$(jq -r '[.nics[] | "\(.host).\(.port)=\(.ifname)/\(.mac)/\(.mtu)"] | join(",")' <<<"$st")" = \
		"h1.eth0=p0/0c:42:a1:00:0a:00/1500,h1.eth1=p1/0c:42:a1:00:0a:01/9000,h2.eth0=p0/0c:42:a1:00:0b:00/1500,h2.eth1=p1/0c:42:a1:00:0b:01/1500,h3.eth0=p0/0c:42:a1:00:0c:00/1500,h3.eth1=p1/0c:42:a1:00:0c:01/9000" ] &&
	[ "$(jq '.links | length' <<<"$st")" = 3 ]; then
	pass "status-json-names-wiring-macs"
else
	fail "status-json-names-wiring-macs" "$(jq -c '{hosts: [.hosts[] | {host, name}], wiring, nics, links}' <<<"$st")"
fi

i=0
for h in "${HOSTS[@]}"; do
	i=$((i + 1))
	same "hostname-$h" "$h" "$(on "$h" hostname 2>&1)"
	same "exec-by-id-h$i" "$h" "$(on "h$i" hostname 2>&1)"
	# the physical NICs, in the order of the profile: "NAME MAC MTU ..."
	want=${PORTS[$h]}
	got=$(on "$h" ip -j link show | jq -r '[.[] | select(.link_type == "ether") |
		"\(.ifname) \(.address) \(.mtu)"] | sort | join(" ")')
	same "nics-$h" "$want" "$got"
done

# IPv6 link-local address of HOST's PORT (empty until DAD is done).
ll_addr() {
	on "$1" ip -j -6 addr show dev "$2" scope link |
		jq -r '[.[0].addr_info[]? | select((.tentative // false) | not) | .local][0] // empty'
}

# --- every link carries traffic -----------------------------------------------
for l in "${LINKS[@]}"; do
	read -r ea eb _ _ _ <<<"$l"
	ha=${ea%%:*} pa=${ea#*:} hb=${eb%%:*} pb=${eb#*:}
	ok=0 why=
	for _ in 1 2 3 4 5; do
		addr=$(ll_addr "$hb" "$pb")
		if [ -n "$addr" ] && why=$(on "$ha" ping -c 2 -i 0.3 -W 3 "$addr%$pa" 2>&1); then
			ok=1
			break
		fi
		sleep 1
	done
	if ((ok)); then
		pass "link-$ea-$eb"
	else
		fail "link-$ea-$eb" "no IPv6 link-local ping from $ea to $eb (${addr:-no address}): $why"
	fi
done

# --- fabricctl apply of the same profile, in each guest ---------------------------
rm -rf "$WORK"
mkdir -p "$WORK/keys"
chmod 700 "$WORK/keys"
cp "$PROFILE_SRC" "$WORK/triangle.yaml"
(umask 077 && od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$WORK/keys/triangle.key")
chmod 600 "$WORK/keys/triangle.key"

for h in "${HOSTS[@]}"; do
	# JSON on stdout; stderr (notices such as the audit key pair being created) apart
	if out=$(on "$h" "$F" apply --json "$WORK/triangle.yaml" 2>"$WORK/apply-$h.err"); then
		res=$(jq -r .result <<<"$out" 2>/dev/null)
		if [ "$res" = applied ]; then pass "apply-$h"; else fail "apply-$h" "result '$res': $out $(cat "$WORK/apply-$h.err")"; fi
	else
		fail "apply-$h" "exit $?: $out $(cat "$WORK/apply-$h.err")"
	fi
done

enc() { # host, macsec device: OutPktsEncrypted
	on "$1" ip -j -s macsec show "$2" | jq -r '.[0].OutPktsEncrypted // 0'
}
bad() { # host, macsec device: InPktsNotValid over RX SCs + InPktsNoSCI
	on "$1" ip -j -s macsec show "$2" | jq '[.[0].rx_sc[]?.InPktsNotValid] + [.[0].InPktsNoSCI] | add // 0'
}
for l in "${LINKS[@]}"; do
	read -r ea eb vid aa ab <<<"$l"
	ha=${ea%%:*} hb=${eb%%:*}
	ms=ms$vid
	e0a=$(enc "$ha" "$ms") e0b=$(enc "$hb" "$ms")
	if why=$(on "$ha" ping -c 3 -i 0.3 -W 3 "$ab" 2>&1) && why=$(on "$hb" ping -c 3 -i 0.3 -W 3 "$aa" 2>&1); then
		pass "macsec-ping-vlan$vid-$ha-$hb"
	else
		fail "macsec-ping-vlan$vid-$ha-$hb" "$why"
	fi
	e1a=$(enc "$ha" "$ms") e1b=$(enc "$hb" "$ms")
	if [ "${e1a:-0}" -gt "${e0a:-0}" ] && [ "${e1b:-0}" -gt "${e0b:-0}" ] &&
		[ "$(bad "$ha" "$ms")" = 0 ] && [ "$(bad "$hb" "$ms")" = 0 ]; then
		pass "macsec-encrypted-vlan$vid"
	else
		fail "macsec-encrypted-vlan$vid" "OutPktsEncrypted $ha $e0a -> $e1a, $hb $e0b -> $e1b; not-valid/no-sci $(bad "$ha" "$ms")/$(bad "$hb" "$ms")"
	fi
done

# The jumbo edge: a 7000-byte ping over ms103 (MTU 8000) must not fragment.
if why=$(on node-c ping -c 2 -i 0.3 -W 3 -M 'do' -s 7000 10.103.0.1 2>&1); then
	pass "macsec-jumbo-vlan103"
else
	fail "macsec-jumbo-vlan103" "$why"
fi

# --- VLAN 101's priority map: the PCP a switch reads, in front of the SecTAG -------
# The profile's `qos: { roce: true }` on VLAN 101: the kernel holds egress 3:3 and
# ingress 3:3 on node-a's p0.101, which `diff` finds in step with the profile.
qos_of() { # host, vlan device: "egress F:T,...;ingress F:T,..." as the kernel reports
	on "$1" ip -d -j link show dev "$2" | jq -r '.[0].linkinfo.info_data |
		"egress \([.egress_qos[]? | "\(.from):\(.to)"] | join(",")); ingress \([.ingress_qos[]? | "\(.from):\(.to)"] | join(","))"'
}
same "qos-kernel-maps" "egress 3:3; ingress 3:3" "$(qos_of node-a p0.101)"
if out=$(on node-a "$F" diff "$WORK/triangle.yaml" 2>&1); then
	pass "qos-diff-clean"
else
	fail "qos-diff-clean" "$out"
fi
# DCB, read only: the lab's virtio NIC has none, which the plan says (no DCB, PFC unchecked)
if out=$(on node-a "$F" plan --json "$WORK/triangle.yaml" 2>/dev/null) &&
	jq -en 'input | [.findings[] | select(.code == "pfc-unknown" and .severity == "warning"
		and (.message | test("port .p0. has no DCB")))] | length == 1' <<<"$out" >/dev/null; then
	pass "qos-pfc-no-dcb"
else
	fail "qos-pfc-no-dcb" "$out"
fi
# and node-check carries it as a warning that fails nothing
if out=$(on node-a "$F" node-check --json 2>/dev/null) &&
	jq -en 'input | .healthy and ([.checks[] | select(.check == "pfc" and .ok
		and (.text | test("^warning: port .p0. has no DCB")))] | length == 1)' <<<"$out" >/dev/null; then
	pass "qos-pfc-node-check"
else
	fail "qos-pfc-node-check" "$out"
fi
# drift: a mapping set by hand is found, and apply takes it away in place
on node-a ip link set dev p0.101 type vlan egress-qos-map 6:2 >/dev/null 2>&1
if out=$(on node-a "$F" diff "$WORK/triangle.yaml" 2>&1); then
	fail "qos-drift-found" "diff found nothing: $out"
elif grep -q "egress-qos-map 3:3 6:2" <<<"$out"; then
	pass "qos-drift-found"
else
	fail "qos-drift-found" "$out"
fi
if out=$(on node-a "$F" apply --json "$WORK/triangle.yaml" 2>&1) &&
	[ "$(jq -r '[.plan.ops[]? | .op] | join(",")' <<<"$out" 2>/dev/null)" = change-link ]; then
	same "qos-drift-repaired" "egress 3:3; ingress 3:3" "$(qos_of node-a p0.101)"
else
	fail "qos-drift-repaired" "$out"
fi

# Traffic with SO_PRIORITY 3 leaves node-a with PCP 3 in the clear tag, SO_PRIORITY 5
# (not mapped) with PCP 0; the payload behind the tag is MACsec (EtherType 0x88e5).
# tcpdump on node-b's p0 (the peer's lower device) sees the frames as a switch would.
QOS_SEND='import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for prio, size in ((3, 1000), (5, 1200)):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, prio)
    for _ in range(3):
        s.sendto(b"q" * size, ("10.101.0.2", 9))'
on node-b rm -f /run/qos.cap /run/qos.err
job=$("$LAB" exec-bg --timeout 90 node-b -- sh -c 'exec timeout 60 tcpdump -Z root -l -c 6 -e -nn -i p0 \
	"ether src 0c:42:a1:00:0a:00 and greater 1000 and vlan 101" >/run/qos.cap 2>/run/qos.err')
if on node-b sh -c 'for i in $(seq 300); do grep -q listening /run/qos.err 2>/dev/null && exit 0; sleep 0.1; done; exit 1'; then
	on node-a python3 -c "$QOS_SEND"
	"$LAB" wait --timeout 90 node-b "$job" >/dev/null
	# "LENGTH PCP ETHERTYPE" per frame, e.g. "1082 3 0x88e5"
	got=$(on node-b cat /run/qos.cap | sed -nE 's/.*length ([0-9]+): vlan 101, p ([0-7]), ethertype [^(]*\((0x[0-9a-f]+)\).*/\1 \2 \3/p' | sort -n | uniq -c | awk '{ print $1 "x" $2 "/p" $3 "/" $4 }' | paste -sd' ')
	# three small frames (SO_PRIORITY 3) with PCP 3, three 200 bytes larger with PCP 0
	if [[ $got =~ ^3x([0-9]+)/p3/0x88e5\ 3x([0-9]+)/p0/0x88e5$ ]] &&
		((BASH_REMATCH[2] - BASH_REMATCH[1] == 200)); then
		pass "qos-pcp-on-the-wire"
	else
		fail "qos-pcp-on-the-wire" "frames (count x length/pcp/ethertype): '$got'; capture: $(on node-b cat /run/qos.cap /run/qos.err | head -n 12)"
	fi
else
	fail "qos-pcp-on-the-wire" "tcpdump did not start: $(on node-b cat /run/qos.err)"
	"$LAB" wait --timeout 90 node-b "$job" >/dev/null 2>&1
fi

# Soft-RoCE with the profile's traffic class: rxe on both ends of VLAN 101's SecY, an
# ib_send_bw from node-a with --tclass 104 (DSCP 26, RoCE's class in the RoCE
# shorthand's sources). rxe writes the traffic class into the IPv4 TOS of the packet it
# builds itself and hands it to ip_local_out with skb->priority never set (0): no socket
# priority, no TOS -> priority (docs/profile.md, "qos", soft-RoCE). So what holds and is
# checked: node-b's MACsec device (decrypted) sees RoCEv2 (UDP 4791) with TOS 104,
# and node-b's p0 sees those frames with the clear VLAN 101 tag, PCP 0 (skb priority 0
# has no mapping) and MACsec behind it. With a tc skbedit on ms101's egress (DSCP 26 ->
# skb priority 3, the documented fix), the same traffic leaves with PCP 3.
ROCE_SNIFF='exec timeout 60 tcpdump -Z root -l -c 5 -e -nn -i "$1" "$2" >"/run/roce-$3.cap" 2>"/run/roce-$3.err"'
roce_round() { # tag: ib_send_bw node-a -> node-b over rxe101 under two captures on node-b;
	# prints "PCPS|TOS-FRAMES": the PCPs seen on p0 (sorted, unique) and how many RoCE
	# frames with TOS 104 ms101 saw
	local j1 j2 srv
	on node-b rm -f /run/roce-"$1"-*.cap /run/roce-"$1"-*.err
	j1=$("$LAB" exec-bg --timeout 90 node-b -- sh -c "$ROCE_SNIFF" s p0 \
		"ether src 0c:42:a1:00:0a:00 and vlan 101 and greater 1000" "$1-wire")
	j2=$("$LAB" exec-bg --timeout 90 node-b -- sh -c "$ROCE_SNIFF" s ms101 \
		"udp dst port 4791 and ip[1] == 104 and greater 1000" "$1-in")
	on node-b sh -c "for i in \$(seq 300); do grep -q listening /run/roce-$1-wire.err 2>/dev/null &&
		grep -q listening /run/roce-$1-in.err 2>/dev/null && exit 0; sleep 0.1; done; exit 1" || return 1
	srv=$("$LAB" exec-bg --timeout 120 node-b -- ib_send_bw -d rxe101 -x 1 -n 50 -s 4096 --tclass 104)
	for _ in $(seq 60); do on node-b ss -Hltn 'sport = :18515' | grep -q . && break; sleep 0.5; done
	on node-a ib_send_bw -d rxe101 -x 1 -n 50 -s 4096 --tclass 104 10.101.0.2 >"$WORK/roce-$1.out" 2>&1
	"$LAB" wait --timeout 120 node-b "$srv" >/dev/null 2>&1
	"$LAB" wait --timeout 90 node-b "$j1" >/dev/null 2>&1
	"$LAB" wait --timeout 90 node-b "$j2" >/dev/null 2>&1
	echo "$(on node-b cat /run/roce-"$1"-wire.cap | sed -nE 's/.*vlan 101, p ([0-7]), ethertype [^(]*\((0x[0-9a-f]+)\).*/p\1\/\2/p' |
		sort -u | paste -sd,)|$(on node-b cat /run/roce-"$1"-in.cap | grep -c 'length')"
}
roce_ok=1
for h in node-a node-b; do on "$h" rdma link add rxe101 type rxe netdev ms101 || roce_ok=0; done
if [ "$roce_ok" = 1 ] && got=$(roce_round plain); then
	same "roce-tclass-pcp-0-tos-104" "p0/0x88e5|5" "$got"
	if on node-a sh -c 'tc qdisc add dev ms101 clsact &&
		tc filter add dev ms101 egress protocol ip flower ip_tos 0x68/0xfc action skbedit priority 3'; then
		got=$(roce_round skbedit) && same "roce-dscp-skbedit-pcp-3" "p3/0x88e5|5" "$got" ||
			fail "roce-dscp-skbedit-pcp-3" "tcpdump did not start: $(on node-b cat /run/roce-skbedit-*.err)"
	else
		fail "roce-dscp-skbedit-pcp-3" "tc clsact/flower/skbedit on ms101 refused"
	fi
	on node-a tc qdisc del dev ms101 clsact >/dev/null 2>&1
else
	fail "roce-tclass-pcp-0-tos-104" "rxe101 or tcpdump did not start: $(on node-b cat /run/roce-plain-*.err 2>&1)"
fi
[ -s "$WORK/roce-plain.out" ] && grep -q 'BW average' "$WORK/roce-plain.out" ||
	fail "roce-send-bw-ran" "$(tail -n 5 "$WORK/roce-plain.out" 2>/dev/null)"
for h in node-a node-b; do on "$h" rdma link delete rxe101 >/dev/null 2>&1; done
