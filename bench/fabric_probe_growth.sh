#!/bin/bash
# How the fabric probe grows with links: labs of 4, 8 and 16 MACsec links (a ring of 4
# hosts; a ring of 8; the ring of 8 plus chords i->i+2, every host then on 4 links,
# each on a port of its own, so still one round),
# soft-RoCE on each link's SecY, an agent on every guest reached through the lab's
# management forwards (lab up --mgmt-port), and from this machine one `probe --fabric`
# of every link (one test, send_lat, 8 iterations) against the same links one by one
# (`--link NAME`). Prints per size:
#   BENCH growth N links, H hosts: R rounds, fabric A s; one by one B s (ratio B/A)
# Not a test: a lab that cannot start or a probe that does not pass exits 1 with the
# reason; figures are the command's own wall_seconds (--json).
#
#   sudo bench/fabric_probe_growth.sh [--links "4 8 16"] [--iters 8] [--no-alone]
# Environment: FCTL_BUILD_DIR (default build), FCTL_LAB_DIR (default
# /var/tmp/fctl-fabric-growth.PID), FCTL_LAB_KERNEL as for the lab.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
export FCTL_LAB_DIR=${FCTL_LAB_DIR:-/var/tmp/fctl-fabric-growth.$$}
export FCTL_TLS_CACHE=off
SIZES="4 8 16" ITERS=8 ALONE=1
while [ $# -gt 0 ]; do
	case $1 in
	--links) SIZES=$2; shift 2 ;;
	--iters) ITERS=$2; shift 2 ;;
	--no-alone) ALONE=0; shift ;;
	*) echo "usage: $0 [--links \"4 8 16\"] [--iters N] [--no-alone]" >&2; exit 2 ;;
	esac
done
[ -x "$F" ] || { echo "fabric_probe_growth: FAILED: $F missing (build first)"; exit 1; }
W=$(mktemp -d "$BUILD/fabric-growth.XXXXXX")
JOBS=()
cleanup() {
	"$F" lab down >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "fabric_probe_growth: FAILED: $*"; exit 1; }
on() { "$F" lab exec --timeout 300 "$@"; }

"$ROOT/scripts/pki.sh" "$W/pki" h1=127.0.0.1 h2=127.0.0.1 h3=127.0.0.1 h4=127.0.0.1 \
	h5=127.0.0.1 h6=127.0.0.1 h7=127.0.0.1 h8=127.0.0.1 >/dev/null || die "pki"
chmod 644 "$W"/pki/*.key # a bench CA: the guests' agents read them over 9p
mkdir -p "$W/keys" && (umask 077 && openssl rand -hex 16 >"$W/keys/ring.key")
OP=(--cert "$W/pki/client-operator.crt" --key "$W/pki/client-operator.key" --ca "$W/pki/ca.crt")
PROBE=(--test send_lat --iters "$ITERS" --qp-timeout 21 --timeout 120s --deadline 1200s --json --quiet)

# profile N H: N links over H hosts, "NAME A:PORT B:PORT VLAN" in $W/links
profile() {
	local n=$1 h=$2 k=0 i a b pa pb
	local -A nport=()
	: >"$W/links"
	for step in 1 2; do
		for ((i = 1; i <= h && k < n; i++)); do
			a=$i b=$(((i - 1 + step) % h + 1))
			pa=${nport[$a]:-0} pb=${nport[$b]:-0}
			nport[$a]=$((pa + 1)) nport[$b]=$((pb + 1))
			echo "h$a-h$b h$a:eth$pa h$b:eth$pb $((100 + k))" >>"$W/links"
			k=$((k + 1))
		done
	done
	cat <<EOP
schema: 1
profile: { name: fabric-growth, version: 1 }
macsec:
  edge:
    cipher: gcm-aes-128
    icv_len: 16
    encrypt: true
    replay_protect: true
    replay_window: 0
    validate: strict
    send_sci: true
    port: 1
    key: { backend: file, id: keys/ring.key }
hosts:
EOP
	for ((i = 1; i <= h; i++)); do
		echo "  - name: h$i"
		echo "    ports:"
		for ((p = 0; p < ${nport[$i]:-0}; p++)); do
			printf '      - { name: eth%d, mac: "52:54:00:fa:%02x:%02x" }\n' "$p" "$i" "$p"
		done
	done
	echo "links:"
	while read -r name a b vlan; do
		echo "  - { name: $name, a: \"$a\", b: \"$b\", macsec: edge,"
		echo "      vlans: [ { id: $vlan, mtu: 1400, addresses: { ${a%%:*}: 10.$vlan.0.${a:1:1}/24, ${b%%:*}: 10.$vlan.0.${b:1:1}/24 } } ] }"
	done <"$W/links"
	cat <<EOP
slo:
  latency_p99_us: 5000000
  max_loss: 0
EOP
}

for n in $SIZES; do
	h=8
	[ "$n" -le 4 ] && h=4
	[ "$n" -le $((2 * h)) ] || die "$n links need more than 8 hosts"
	profile "$n" "$h" >"$W/fabric-$n.yaml"
	"$F" validate -q "$W/fabric-$n.yaml" || die "the $n-link profile does not validate"
	"$F" lab up --profile "$W/fabric-$n.yaml" --mgmt-port 7443 --lifetime 3600 >"$W/up.log" 2>&1 ||
		{ tail -20 "$W/up.log"; die "lab up ($n links)"; }
	: >"$W/inventory"
	while read -r name ep; do echo "$name $ep" >>"$W/inventory"; done < <("$F" lab status --json |
		jq -r '.hosts[] | "\(.name) \(.mgmt)"')
	for ((i = 1; i <= h; i++)); do
		on "h$i" "$F" apply --host "h$i" "$W/fabric-$n.yaml" >/dev/null || die "apply on h$i"
		# as tests/lab/fabric_probe.sh: the agent's workers read the profile's key there
		on "h$i" sh -c "mkdir -p /var/lib/fabricctl/agent/keys && cp '$W/keys/ring.key' /var/lib/fabricctl/agent/keys/" ||
			die "key on h$i"
		on "h$i" sh -c "for d in \$(ip -o link show type macsec | awk -F': ' '{print \$2}' | cut -d@ -f1); do
			rdma link add rxe_\$d type rxe netdev \$d || exit 1; done" || die "rxe on h$i"
		"$F" lab exec-bg --timeout 3600 "h$i" -- "$F" agent --host "h$i" --listen 0.0.0.0:7443 \
			--cert "$W/pki/server-h$i.crt" --key "$W/pki/server-h$i.key" --ca "$W/pki/ca.crt" \
			--drift-interval 3600s >/dev/null || die "agent on h$i"
	done
	ok=0
	for _ in $(seq 90); do
		"$F" status --fabric --inventory "$W/inventory" "${OP[@]}" --profile "$W/fabric-$n.yaml" --quiet \
			>/dev/null 2>&1 && { ok=1; break; }
		sleep 1
	done
	[ $ok = 1 ] || die "the agents of the $n-link lab do not answer"
	"$F" probe --fabric "$W/fabric-$n.yaml" --inventory "$W/inventory" "${OP[@]}" "${PROBE[@]}" \
		--audit-log "$W/audit-$n.log" >"$W/fab-$n.json"
	rc=$?
	[ $rc = 0 ] || { jq -c '.links[] | select(.verdict != "pass")' "$W/fab-$n.json" | head -5; die "the $n-link fabric probe exit $rc"; }
	fab=$(jq -r .wall_seconds "$W/fab-$n.json") rounds=$(jq -r .rounds "$W/fab-$n.json")
	sum=0 line=
	if [ $ALONE = 1 ]; then
		while read -r name _; do
			"$F" probe --fabric "$W/fabric-$n.yaml" --inventory "$W/inventory" "${OP[@]}" "${PROBE[@]}" \
				--audit-log "$W/audit-$n.log" --link "$name" >"$W/one.json" || die "$name alone"
			w=$(jq -r .wall_seconds "$W/one.json")
			sum=$(awk -v a="$sum" -v b="$w" 'BEGIN { printf "%.3f", a + b }')
		done <"$W/links"
		line="; one by one $sum s (ratio $(awk -v a="$sum" -v b="$fab" 'BEGIN { printf "%.2f", a / b }'))"
	fi
	echo "BENCH growth $n links, $h hosts: $rounds rounds, fabric $fab s$line (load $(cut -d' ' -f1 /proc/loadavg))"
	"$F" lab down >/dev/null 2>&1
done
