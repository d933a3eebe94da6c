#!/bin/bash
# The apply engine against a real kernel: two lab VMs (Debian's stock kernel
# under qemu) on one wire, each applying the lab profile with fabricctl.
#
#  1. traffic crosses the MACsec link; OutPktsEncrypted grows on both ends,
#     InPktsNotValid and InPktsNoSCI stay 0
#  2. `ip -j macsec show` / `ip -j -d link show` agree with `fabricctl show --json`
#  3. the second apply is a no-op with zero netlink writes; drift is repaired, also
#     when the profile's state comes from the desired-state cache, and a tampered
#     cache entry is ignored
#  4. an in-place change (replay window) applies in place; a cipher change is
#     flagged disruptive and applied by recreate
#  5. a step the kernel rejects midway, and an injected failure late in a
#     recreate, roll everything back to the exact prior state
#  6. kill -9 during apply, then recover: old state, traffic still encrypted
#  7. bad profiles (invalid, missing key) are refused before any netlink write
#  8. the carrier VLAN under the SecY holds no IPv6 address of any scope and has
#     addrgenmode none; a carrier made by hand (link-local address and all) is
#     converged in place by the next apply
#  9. (kernel 6.12) MACsec offload on a netdevsim port: apply with offload mac,
#     idempotent re-apply, drift made by hand seen by diff and repaired, an in-place
#     change, an offload change planned as a
#     disruptive rebuild, a late failure in it rolled back, offload off and back;
#     then a key rotation's SA steps through the agent's SA door (RX install, TX
#     stage, switch, retire), each reaching netdevsim's callback, offload still mac
#
# Prints PASS/FAIL per check and "apply_lab: N passed, M failed"; exits non-zero
# on any failure, including a lab that cannot start (never skips).
set -uo pipefail

SUITE=apply_lab
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-apply
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

# The state that "exactly as before" compares: links, MACsec config and SAs (key
# ids), addresses; counters, packet numbers, ifindexes and operstate left out. The guest
# prints the three JSON documents (one program start each); jq reads them here, on the
# build host: a jq start costs ~0.3 s of CPU under TCG against ~0.04 s here.
dump() {
	local out
	out=$(on "$1" sh -c 'ip -j -d link show && ip -j macsec show && ip -j addr show') || return 1
	jq -S -s '
		(.[0] | [.[] | select(.linkinfo.info_kind == "vlan" or .linkinfo.info_kind == "macsec")
			| {ifname, link, mtu, up: (.flags | index("UP") != null), linkinfo}] | sort_by(.ifname)),
		(.[1] | [.[] | del(.ifindex) | walk(if type == "object"
			then with_entries(select(.key | test("^(In|Out)|^pn$") | not)) else . end)] | sort_by(.ifname)),
		(.[2] | [.[] | {ifname, a: [.addr_info[] | select(.scope != "link") | "\(.local)/\(.prefixlen)"]}
			| select(.a | length > 0)] | sort_by(.ifname))' <<<"$out"
}

ms_field() { # host, jq expression on ip -j -s macsec show for ms100
	on "$1" ip -j -s macsec show ms100 | jq -r ".[0] | $2"
}

encrypted() { # host: OutPktsEncrypted of ms100's TX SC
	ms_field "$1" '.OutPktsEncrypted'
}

rx_bad() { # host: InPktsNotValid over RX SCs + InPktsNoSCI
	on "$1" ip -j -s macsec show ms100 |
		jq '[.[0].rx_sc[]?.InPktsNotValid] + [.[0].InPktsNoSCI] | add // 0'
}

ping_ok() { on h1 ping -c 3 -i 0.3 -W 3 10.100.0.2 >/dev/null; }

addrs6() { # host [scope]: how many IPv6 addresses eth0.100 has (fails when it does not exist)
	local out
	out=$(on "$1" ip -j -6 addr show dev eth0.100 ${2:+scope "$2"}) || return 1
	jq -s 'map(.[]?.addr_info[]?) | length' <<<"$out"
}

# the carrier of the SecY: frames on it are cleartext, so no address of any scope
# (neighbour discovery, MLD, fe80::%eth0.100 would leave unprotected) and none made
carrier_clean() { # host
	local n mode
	n=$(addrs6 "$1") || return 1
	mode=$(on "$1" ip -j -d link show dev eth0.100 | jq -r '.[0].inet6_addr_gen_mode') || return 1
	[ "$n" = 0 ] && [ "$mode" = none ] && return 0
	echo "   $1 eth0.100: $n IPv6 addresses, addrgenmode $mode"
	return 1
}

# --- set up -----------------------------------------------------------------
[ -x "$F" ] || { fail "build" "$F is missing: build first (cmake --build build)"; exit 1; }
if ! "$LAB" up --hosts 2; then
	fail "lab-up" "the lab did not start (see the console tail above)"
	exit 1
fi
pass "lab-up"
# fabricctl from the guests' RAM, not read over 9p at every start (lib.bash, in_ram)
for h in h1 h2; do in_ram "$h" "$F" || fail "$h-fabricctl-in-ram"; done

# guests see the host root read-only (live), but not the host's /tmp or /var/tmp
# one work directory per lab: the suite runs on two kernels, maybe at once (test.sh lanes)
WORK=$BUILD/lab-apply-work-${FCTL_LAB_DIR##*/}
rm -rf "$WORK"
mkdir -p "$WORK/keys"
chmod 700 "$WORK/keys"
cp "$ROOT/profiles/lab-pair.yaml" "$WORK/v1.yaml"
cp "$ROOT/tests/lab/profiles/lab-pair-v2.yaml" "$WORK/v2.yaml"
cp "$ROOT/tests/lab/profiles/lab-pair-v3.yaml" "$WORK/v3.yaml"
cp "$ROOT/tests/lab/profiles/lab-pair-v4-fails.yaml" "$WORK/v4.yaml"
cp "$ROOT/tests/lab/profiles/lab-pair-invalid.yaml" "$WORK/invalid.yaml"
( umask 077; openssl rand -hex 16 >"$WORK/keys/lab-pair.key"; openssl rand -hex 32 >"$WORK/keys/lab-pair-256.key" )
# both hosts read the same key file: the lab shares this directory with them

# --- 1. apply, traffic encrypted ---------------------------------------------
for h in h1 h2; do
	if out=$(on "$h" "$F" apply --json "$WORK/v1.yaml"); then
		[ "$(jq -r .result <<<"$out")" = applied ] && pass "apply-v1-$h" ||
			fail "apply-v1-$h" "result $(jq -r .result <<<"$out")"
	else
		fail "apply-v1-$h" "exit $?: $out"
	fi
done
e1=$(encrypted h1)
e2=$(encrypted h2)
check "1-ping-over-macsec" ping_ok
e1b=$(encrypted h1)
e2b=$(encrypted h2)
[ "$e1b" -gt "$e1" ] && [ "$e2b" -gt "$e2" ] && pass "1-out-pkts-encrypted-grow" ||
	fail "1-out-pkts-encrypted-grow" "h1 $e1 -> $e1b, h2 $e2 -> $e2b"
[ "$(rx_bad h1)" = 0 ] && [ "$(rx_bad h2)" = 0 ] && pass "1-in-pkts-not-valid-no-sci-zero" ||
	fail "1-in-pkts-not-valid-no-sci-zero" "h1 $(rx_bad h1), h2 $(rx_bad h2)"
[ "$(ms_field h1 .encrypt)" = true ] && [ "$(ms_field h1 .protect)" = true ] &&
	[ "$(ms_field h1 .validate)" = strict ] && pass "1-fail-secure-settings" ||
	fail "1-fail-secure-settings" "encrypt/protect/validate not on/on/strict"
# addresses live only on the MACsec device, never on the VLAN underneath
[ "$(on h1 ip -j addr show eth0.100 | jq '[.[0].addr_info[] | select(.family == "inet")] | length')" = 0 ] &&
	pass "1-no-address-on-vlan" || fail "1-no-address-on-vlan"
check "8-carrier-no-ipv6-h1" carrier_clean h1
check "8-carrier-no-ipv6-h2" carrier_clean h2

# the apply is in the host's audit log, naming the key by its check value, never by value
kcv_for_zero=$(head -c 16 /dev/zero | openssl enc -aes-128-ecb -nopad -K "$(head -c 32 "$WORK/keys/lab-pair.key")" |
	head -c 3 | od -An -tx1 | tr -d ' \n')
rec=$(on h1 "$F" audit show --json | jq -c '[.[] | select(.action == "apply")] | last')
[ "$(jq -r '.result' <<<"$rec")" = applied ] && [ "$(jq -r '.kcv[0]' <<<"$rec")" = "$kcv_for_zero" ] &&
	pass "1-audit-record-with-kcv" || fail "1-audit-record-with-kcv" "want kcv $kcv_for_zero, record $rec"
on h1 grep -rqiF -f "$WORK/keys/lab-pair.key" /var/lib/fabricctl &&
	fail "1-key-never-in-state-or-audit" || pass "1-key-never-in-state-or-audit"
on h1 "$F" audit verify --pubkey /var/lib/fabricctl/audit/audit.pub >/dev/null && pass "1-audit-verifies" || fail "1-audit-verifies"

# --- 2. the independent oracle agrees with fabricctl show --json --------------
oracle() {
	local h=$1 show ipms iplink sci want_sci port
	show=$(on "$h" "$F" show --json) || return 1
	ipms=$(on "$h" ip -j macsec show ms100) || return 1
	iplink=$(on "$h" ip -j -d link show) || return 1
	local fs ms vl
	fs=$(jq -c '.links[] | select(.name == "ms100")' <<<"$show")
	vl=$(jq -c '.links[] | select(.name == "eth0.100")' <<<"$show")
	ms=$(jq -c '.[0]' <<<"$ipms")
	# SCI: ip prints 0x<mac><port>, fabricctl <mac>/<port>
	sci=$(jq -r .sci <<<"$fs")
	port=${sci#*/}
	want_sci=0x$(tr -d ':' <<<"${sci%/*}")$(printf '%04x' "$port")
	[ "$(jq -r .sci <<<"$ms")" = "$want_sci" ] || { echo "sci $sci vs $(jq -r .sci <<<"$ms")"; return 1; }
	[ "$(jq -r '.cipher_suite | ascii_downcase' <<<"$ms")" = "$(jq -r .cipher <<<"$fs")" ] || { echo cipher; return 1; }
	[ "$(jq -r .icv_length <<<"$ms")" = "$(jq -r .icv_len <<<"$fs")" ] || { echo icv; return 1; }
	for k in encrypt validate send_sci end_station scb encoding_sa protect; do
		[ "$(jq -r ".$k" <<<"$ms")" = "$(jq -r ".$k" <<<"$fs")" ] || { echo "$k"; return 1; }
	done
	[ "$(jq -r .replay <<<"$ms")" = "$(jq -r .replay_protect <<<"$fs")" ] || { echo replay; return 1; }
	[ "$(jq -r .window <<<"$ms")" = "$(jq -r .window <<<"$fs")" ] || { echo window; return 1; }
	[ "$(jq -c '[.sa_list[] | {an, active, key}]' <<<"$ms")" = \
		"$(jq -c '[.tx_sa[] | {an, active, key: .key_id}]' <<<"$fs")" ] || { echo tx_sa; return 1; }
	[ "$(jq -c '[.rx_sc[] | .sa_list[] | {an, active, key}]' <<<"$ms")" = \
		"$(jq -c '[.rx_sc[] | .sa[] | {an, active, key: .key_id}]' <<<"$fs")" ] || { echo rx_sa; return 1; }
	[ "$(jq -r '.rx_sc | length' <<<"$ms")" = "$(jq -r '.rx_sc | length' <<<"$fs")" ] || { echo rx_sc; return 1; }
	# links: parent, mtu, VLAN id and protocol
	[ "$(jq -r '.[] | select(.ifname == "ms100") | "\(.link) \(.mtu)"' <<<"$iplink")" = \
		"$(jq -r '"\(.parent) \(.mtu)"' <<<"$fs")" ] || { echo ms-link; return 1; }
	[ "$(jq -r '.[] | select(.ifname == "eth0.100") | "\(.link) \(.mtu) \(.linkinfo.info_data.id) \(.linkinfo.info_data.protocol | ascii_downcase)"' <<<"$iplink")" = \
		"$(jq -r '"\(.parent) \(.mtu) \(.vid) \(.protocol)"' <<<"$vl")" ] || { echo vlan; return 1; }
	return 0
}
check "2-oracle-h1" oracle h1
check "2-oracle-h2" oracle h2
# show's text output is a profile that validates
if on h1 "$F" show >"$WORK/show-h1.yaml" && "$F" validate -q "$WORK/show-h1.yaml"; then
	pass "2-show-is-a-valid-profile"
else
	fail "2-show-is-a-valid-profile"
fi
on h1 "$F" diff "$WORK/v1.yaml" >/dev/null && pass "2-no-drift" || fail "2-no-drift"

# --- 3. idempotence ------------------------------------------------------------
out=$(on h1 "$F" apply --json "$WORK/v1.yaml")
[ "$(jq -r '"\(.result) \(.netlink_writes) \(.ops_planned)"' <<<"$out")" = "unchanged 0 0" ] &&
	pass "3-second-apply-zero-writes" || fail "3-second-apply-zero-writes" "$(jq -c '{result,netlink_writes,ops_planned}' <<<"$out")"

# drift made behind fabricctl's back is seen and repaired
on h1 ip link set ms100 mtu 1400
on h1 "$F" diff "$WORK/v1.yaml" >/dev/null
[ $? -eq 1 ] && pass "3-drift-detected" || fail "3-drift-detected"
out=$(on h1 "$F" apply --json "$WORK/v1.yaml")
[ "$(jq -r '"\(.result) \(.netlink_writes)"' <<<"$out")" = "applied 1" ] && pass "3-drift-repaired-one-write" ||
	fail "3-drift-repaired-one-write" "$(jq -c '{result,netlink_writes}' <<<"$out")"

# the same bytes again come from the desired-state cache (STATE_DIR/desired), which
# stands for the profile's load only: the kernel is still read and repaired, and
# the apply still audited
[ "$(jq -r .desired_cache <<<"$out")" = hit ] && pass "3-drift-repaired-with-cache-hit" ||
	fail "3-drift-repaired-with-cache-hit" "desired_cache $(jq -r .desired_cache <<<"$out")"
on h1 ip addr del 10.100.0.1/24 dev ms100
out=$(on h1 "$F" apply --json "$WORK/v1.yaml")
[ "$(jq -r '"\(.desired_cache) \(.result) \(.netlink_writes)"' <<<"$out")" = "hit applied 1" ] &&
	[ "$(on h1 ip -j addr show dev ms100 | jq -r '[.[0].addr_info[] | select(.family == "inet") | .local] | join(",")')" = 10.100.0.1 ] &&
	pass "3-cache-hit-address-removed-by-hand-put-back" ||
	fail "3-cache-hit-address-removed-by-hand-put-back" "$(jq -c '{desired_cache,result,netlink_writes}' <<<"$out")"
out=$(on h1 "$F" apply --json "$WORK/v1.yaml")
rec=$(on h1 "$F" audit show --json | jq -c '[.[] | select(.action == "apply")] | last')
[ "$(jq -r '"\(.desired_cache) \(.result) \(.netlink_writes)"' <<<"$out")" = "hit unchanged 0" ] &&
	[ "$(jq -r .result <<<"$rec")" = unchanged ] && pass "3-cache-hit-unchanged-audited" ||
	fail "3-cache-hit-unchanged-audited" "$(jq -c '{desired_cache,result,netlink_writes}' <<<"$out") record $rec"
# a changed entry (here its state: another address for ms100) fails its MAC: it is
# ignored, the profile loaded, and nothing of the entry reaches the host
on h1 sed -i 's|^addr ms100 10.100.0.1/24$|addr ms100 10.100.0.9/24|' /var/lib/fabricctl/desired
on h1 grep -q '^addr ms100 10.100.0.9/24$' /var/lib/fabricctl/desired || fail "3-tamper-entry" "the entry was not changed"
out=$(on h1 "$F" apply --json "$WORK/v1.yaml")
[ "$(jq -r '"\(.desired_cache) \(.result) \(.netlink_writes)"' <<<"$out")" = "ignored unchanged 0" ] &&
	pass "3-tampered-cache-ignored" ||
	fail "3-tampered-cache-ignored" "$(jq -c '{desired_cache,result,netlink_writes}' <<<"$out")"
out=$(on h1 "$F" apply --json "$WORK/v1.yaml")
[ "$(jq -r '"\(.desired_cache) \(.result)"' <<<"$out")" = "hit unchanged" ] &&
	on h1 ip -j addr show dev ms100 | jq -en 'input | [.[0].addr_info[] | select(.local == "10.100.0.9")] | length == 0' >/dev/null &&
	pass "3-cache-rewritten-after-tamper" ||
	fail "3-cache-rewritten-after-tamper" "$(jq -c '{desired_cache,result}' <<<"$out")"
# a profile rewritten between the cache's read of its bytes and its load: the apply
# applies what it loaded (h1 at 10.100.0.7) and stores no entry under the first bytes,
# so those bytes again are a miss and bring 10.100.0.1 back (stored, they would hit
# and keep .7)
R=/tmp/fctl-apply-race
on h1 sh -c "rm -rf $R && mkdir -m 700 $R && cp -a '$WORK/keys' $R/ && cp '$WORK/v1.yaml' $R/p.yaml &&
	sed 's|h1: 10.100.0.1/24|h1: 10.100.0.7/24|' '$WORK/v1.yaml' >$R/alt.yaml"
out=$(on h1 env FCTL_TEST_SWAP_PROFILE=$R/alt.yaml "$F" apply --json $R/p.yaml)
inet() { on h1 ip -j addr show dev ms100 | jq -r '[.[0].addr_info[] | select(.family == "inet") | .local] | join(",")'; }
[ "$(jq -r '"\(.desired_cache) \(.result)"' <<<"$out")" = "miss applied" ] && [ "$(inet)" = 10.100.0.7 ] &&
	pass "3-rewritten-profile-applies-what-it-loaded" ||
	fail "3-rewritten-profile-applies-what-it-loaded" "$(jq -c '{desired_cache,result}' <<<"$out") inet $(inet)"
on h1 cp "$WORK/v1.yaml" $R/p.yaml
out=$(on h1 "$F" apply --json $R/p.yaml)
[ "$(jq -r .desired_cache <<<"$out")" = miss ] && [ "$(inet)" = 10.100.0.1 ] &&
	pass "3-rewritten-profile-not-cached" ||
	fail "3-rewritten-profile-not-cached" "$(jq -c '{desired_cache,result}' <<<"$out") inet $(inet)"
on h1 rm -rf $R

# --- 4. in place vs disruptive -------------------------------------------------
idx_before=$(on h1 ip -j link show ms100 | jq '.[0].ifindex')
plan=$(on h1 "$F" plan --json "$WORK/v2.yaml")
[ "$(jq -c '[.ops[] | {op, disruptive}]' <<<"$plan")" = '[{"op":"change-link","disruptive":false}]' ] &&
	pass "4-window-plan-in-place" || fail "4-window-plan-in-place" "$(jq -c '.ops' <<<"$plan")"
on h1 "$F" apply -q "$WORK/v2.yaml" && on h2 "$F" apply -q "$WORK/v2.yaml" && pass "4-apply-v2" || fail "4-apply-v2"
[ "$(ms_field h1 .window)" = 64 ] && [ "$(on h1 ip -j link show ms100 | jq '.[0].ifindex')" = "$idx_before" ] &&
	pass "4-window-changed-in-place" || fail "4-window-changed-in-place"
check "4-ping-after-v2" ping_ok

plan=$(on h1 "$F" plan --json "$WORK/v3.yaml")
[ "$(jq '[.ops[] | select(.disruptive)] | length' <<<"$plan")" -ge 2 ] &&
	[ "$(jq -r '[.ops[] | select(.op == "delete-link") | .ifname] | join(",")' <<<"$plan")" = ms100 ] &&
	pass "4-cipher-change-flagged-disruptive" || fail "4-cipher-change-flagged-disruptive" "$(jq -c .ops <<<"$plan")"
V2_H1=$(dump h1)
V2_H2=$(dump h2)

# --- 5. rollback to the exact prior state -------------------------------------
# an operator's hand-made VLAN 200 (not managed by fabricctl) makes the kernel refuse ours
on h1 ip link add link eth0 name legacy200 type vlan id 200
BEFORE5=$(dump h1)
out=$(on h1 "$F" apply --json "$WORK/v4.yaml")
rc=$?
[ $rc -eq 3 ] && [ "$(jq -r .result <<<"$out")" = rolled-back ] && [ "$(jq -r .restored_exactly <<<"$out")" = true ] &&
	pass "5-kernel-rejects-midway-rolls-back" || fail "5-kernel-rejects-midway-rolls-back" "exit $rc $(jq -c '{result,failed_op,error}' <<<"$out")"
[ "$(jq -r .failed_op <<<"$out")" -ge 1 ] && pass "5-failure-was-midway" || fail "5-failure-was-midway" "failed_op $(jq -r .failed_op <<<"$out")"
jq -r .error <<<"$out" | grep -q 'VLAN device already exists' && pass "5-kernel-extack-reaches-user" ||
	fail "5-kernel-extack-reaches-user" "$(jq -r .error <<<"$out")"
[ "$(dump h1)" = "$BEFORE5" ] && pass "5-exact-prior-state" || fail "5-exact-prior-state" "$(diff <(echo "$BEFORE5") <(dump h1) | head -20)"
on h1 ip link del legacy200

# injected failure at the last op of a recreate (cipher change): the old SecY, its SAs
# (keys fetched again from the key reference) and the address all come back
n=$(jq '.ops | length' <<<"$plan")
out=$("$LAB" exec --timeout 120 --env "FCTL_TEST_FAIL_AT_OP=$((n - 1))" h1 -- "$F" apply --json "$WORK/v3.yaml")
[ "$(jq -r '"\(.result) \(.restored_exactly)"' <<<"$out")" = "rolled-back true" ] &&
	pass "5-late-failure-in-recreate-rolls-back" || fail "5-late-failure-in-recreate-rolls-back" "$(jq -c '{result,failed_op,error}' <<<"$out")"
[ "$(dump h1)" = "$V2_H1" ] && pass "5-recreate-exact-prior-state" || fail "5-recreate-exact-prior-state" "$(diff <(echo "$V2_H1") <(dump h1) | head -20)"
check "5-ping-after-rollback" ping_ok

# --- 6. kill -9 mid-apply, then recover ------------------------------------------
"$LAB" exec --env FCTL_TEST_CRASH_AFTER_OP=2 h1 -- "$F" apply -q "$WORK/v3.yaml" >/dev/null 2>&1
rc=$?
[ $rc -eq 137 ] && pass "6-killed-mid-apply" || fail "6-killed-mid-apply" "exit $rc, expected 137 (SIGKILL)"
[ "$(dump h1)" != "$V2_H1" ] && pass "6-host-was-between-states" || fail "6-host-was-between-states"
# no cleartext while interrupted: no IPv4 address on the VLAN, so nothing leaves unprotected
[ "$(on h1 ip -j addr show eth0.100 | jq '[.[0].addr_info[] | select(.family == "inet")] | length')" = 0 ] &&
	pass "6-no-cleartext-path-while-interrupted" || fail "6-no-cleartext-path-while-interrupted"
out=$(on h1 "$F" recover --json)
[ "$(jq -r '"\(.recovered) \(.restored_exactly)"' <<<"$out")" = "true true" ] && pass "6-recover" || fail "6-recover" "$out"
[ "$(dump h1)" = "$V2_H1" ] && pass "6-old-state-after-recover" || fail "6-old-state-after-recover" "$(diff <(echo "$V2_H1") <(dump h1) | head -20)"
# recover re-created the SecY: frames h2 sent before its RX SC was back were dropped
# (InPktsNoSCI) and are no fault; after recovery nothing may be refused
e1=$(encrypted h1)
b1=$(rx_bad h1)
check "6-ping-after-recover" ping_ok
e2=$(encrypted h1)
b2=$(rx_bad h1)
echo "   h1 after recover: OutPktsEncrypted $e1 -> $e2, NotValid+NoSCI $b1 -> $b2"
[ "$e2" -gt "$e1" ] && [ "$b2" = "$b1" ] && pass "6-traffic-still-encrypted" ||
	fail "6-traffic-still-encrypted" "OutPktsEncrypted $e1 -> $e2, NotValid+NoSCI $b1 -> $b2"

# the disruptive change itself, on both ends
on h1 "$F" apply -q "$WORK/v3.yaml" && on h2 "$F" apply -q "$WORK/v3.yaml" && pass "4-apply-v3-recreate" || fail "4-apply-v3-recreate"
[ "$(ms_field h1 .cipher_suite)" = GCM-AES-256 ] && [ "$(ms_field h2 .cipher_suite)" = GCM-AES-256 ] &&
	pass "4-cipher-is-gcm-aes-256" || fail "4-cipher-is-gcm-aes-256"
check "4-ping-after-v3" ping_ok

# rollback --to an earlier version restores it from the history
on h1 "$F" rollback -q --to 2 && on h2 "$F" rollback -q --to 2 && pass "4-rollback-to-v2" || fail "4-rollback-to-v2"
[ "$(dump h1)" = "$V2_H1" ] && [ "$(dump h2)" = "$V2_H2" ] && pass "4-rollback-restores-v2-state" || fail "4-rollback-restores-v2-state"
check "4-ping-after-rollback" ping_ok

# --- 7. bad input refused before any netlink write --------------------------------
before=$(dump h1)
on h1 "$F" apply "$WORK/invalid.yaml" >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] && [ "$(dump h1)" = "$before" ] && pass "7-invalid-profile-refused" || fail "7-invalid-profile-refused" "exit $rc"
mv "$WORK/keys/lab-pair-256.key" "$WORK/keys/moved.key"
out=$(on h1 "$F" apply --json "$WORK/v3.yaml" 2>/dev/null)
rc=$?
mv "$WORK/keys/moved.key" "$WORK/keys/lab-pair-256.key"
[ $rc -eq 2 ] && [ "$(jq -r '"\(.result) \(.netlink_writes)"' <<<"$out")" = "refused 0" ] && [ "$(dump h1)" = "$before" ] &&
	pass "7-missing-key-refused-before-writes" || fail "7-missing-key-refused-before-writes" "exit $rc $(jq -c '{netlink_writes,error}' <<<"$out")"
chmod 644 "$WORK/keys/lab-pair-256.key"
msg=$(on h1 "$F" apply "$WORK/v3.yaml" 2>&1)
rc=$?
chmod 600 "$WORK/keys/lab-pair-256.key"
[ $rc -eq 1 ] && grep -q 'expected 0600' <<<"$msg" && [ "$(dump h1)" = "$before" ] &&
	pass "7-world-readable-key-refused" || fail "7-world-readable-key-refused" "exit $rc: $msg"

# --- --netns: the same engine inside a network namespace ---------------------------
# h2 gets a namespace whose "eth0" has h1's MAC; h1's part of the profile is applied there
on h2 sh -c 'ip netns add fab1 && ip link add vout type veth peer name eth0 netns fab1 &&
	ip -n fab1 link set eth0 address 52:54:00:fa:01:00 && ip -n fab1 link set eth0 up && ip link set vout up'
h2_before=$(dump h2)
out=$(on h2 "$F" apply --json --netns fab1 --host h1 "$WORK/v1.yaml")
[ "$(jq -r .result <<<"$out")" = applied ] && pass "netns-apply" || fail "netns-apply" "$(jq -c '{result,error}' <<<"$out")"
[ "$(on h2 ip -n fab1 -j macsec show ms100 | jq -r '.[0].sci')" = 0x525400fa01000001 ] &&
	pass "netns-secy-inside-namespace" || fail "netns-secy-inside-namespace"
[ "$(dump h2)" = "$h2_before" ] && pass "netns-host-namespace-untouched" || fail "netns-host-namespace-untouched"
out=$(on h2 "$F" apply --json --netns fab1 --host h1 "$WORK/v1.yaml")
[ "$(jq -r '"\(.result) \(.netlink_writes)"' <<<"$out")" = "unchanged 0" ] && pass "netns-second-apply-zero-writes" ||
	fail "netns-second-apply-zero-writes" "$(jq -c '{result,netlink_writes}' <<<"$out")"
[ "$(on h2 "$F" history --json --netns fab1 | jq length)" = 1 ] && pass "netns-own-history" || fail "netns-own-history"
on h2 ip netns del fab1

# --- 8. a carrier from before: made by hand, up, with the kernel's link-local address ---
# (fabricctl's teardown first: links removed by hand take their SAs' packet numbers with
# them, and the apply would then withhold the key, as tests/lab/nonce.sh checks)
on h1 "$F" teardown -q || fail "8-teardown-first"
on h1 sh -c 'ip link add link eth0 name eth0.100 type vlan id 100 &&
	ip link set eth0.100 up'
for _ in 1 2 3 4 5 6 7 8 9 10; do
	[ "$(addrs6 h1 link)" -gt 0 ] 2>/dev/null && break
	sleep 0.5
done
[ "$(addrs6 h1 link)" -gt 0 ] 2>/dev/null && pass "8-old-carrier-has-link-local" ||
	fail "8-old-carrier-has-link-local" "$(on h1 ip -6 addr show dev eth0.100)"
plan=$(on h1 "$F" plan --json "$WORK/v2.yaml")
[ "$(jq -c '[.ops[] | select(.ifname == "eth0.100") | {op, disruptive}]' <<<"$plan")" = \
	'[{"op":"change-link","disruptive":false}]' ] &&
	jq -en 'input | .ops[] | select(.ifname == "eth0.100") | .detail | test("addrgenmode eui64 -> none")' \
		<<<"$plan" >/dev/null && [ "$(jq '.summary.disruptive' <<<"$plan")" = 0 ] &&
	pass "8-old-carrier-plan-in-place" || fail "8-old-carrier-plan-in-place" "$(jq -c .ops <<<"$plan")"
out=$(on h1 "$F" apply --json "$WORK/v2.yaml")
[ "$(jq -r .result <<<"$out")" = applied ] && pass "8-old-carrier-apply" ||
	fail "8-old-carrier-apply" "$(jq -c '{result,failed_op,error}' <<<"$out")"
check "8-old-carrier-converged" carrier_clean h1
check "8-ping-after-convergence" ping_ok
out=$(on h1 "$F" apply --json "$WORK/v2.yaml")
[ "$(jq -r '"\(.result) \(.netlink_writes)"' <<<"$out")" = "unchanged 0" ] &&
	pass "8-converged-carrier-stays" || fail "8-converged-carrier-stays" "$(jq -c '{result,netlink_writes}' <<<"$out")"

# --- 9. MACsec offload on netdevsim (the 6.12 kernel only) ---------------------------
# netdevsim implements the MACsec offload API (v6.6+), Debian does not build it:
# scripts/lab-netdevsim.sh builds it from Debian's linux-source-6.12 and headers once
# and caches it (/var/cache/fabricctl-lab). h1 gets a netdevsim port, nsim0; the
# profile offloads VLAN 300's SecY on it (offload: mac). Its own state directory keeps
# it apart from the lab-pair profile's links. netdevsim moves no frame of an offloaded
# SecY: what is checked is what the kernel and the driver accept and report.
if [[ ${FCTL_LAB_KERNEL:-} == 6.12 ]]; then
	NS="--state-dir /run/fctl-nsim-state" # guest-local: the host root is read-only there
	nsim_offload() { # jq path on ip -d -j link show ms300's info_data: offload mode
		on h1 ip -d -j link show dev ms300 | jq -r '.[0].linkinfo.info_data.offload // "none"'
	}
	# The SA steps of a key rotation on the offloaded SecY, through the agent's SA door
	# as keymgr sends them (tests/lab/sa_batch.c on the agent's Unix socket; the writes
	# are fctl_engine_sa_write's): install an RX SA on the next AN, stage the TX SA
	# inactive, switch (UPD_TXSA active, then the encoding SA), retire the old RX and TX
	# SA. After each step: the kernel's view of ms300 (ip -j macsec show) has the SAs
	# on/off as the step leaves them, the SecY still says offload mac, and netdevsim's
	# own debug lines (dyndbg=+p at insmod) name the callback the step reached with its
	# AN. net/macsec.c has no software fallback for an SA of an offloaded SecY: a
	# refused mdo_* callback fails the request, the SA left as it was (macsec_add_rxsa &c.).
	nsim_rotation() {
		local sab=$BUILD/tests/lab/sa_batch sock=/run/fctl-nsim-agent.sock ag m old new peer kid
		[ -x "$sab" ] || { fail "9-rot-sa-batch" "$sab is missing: build first"; return; }
		on h1 mkdir -p /run/fctl-nsim-agent
		ag=$("$LAB" exec-bg h1 -- "$F" agent --host h1 --socket $sock $NS --drift-interval 0 \
			--audit-log /run/fctl-nsim-audit.log --profile-dir /run/fctl-nsim-agent)
		if ! on h1 sh -c "for i in \$(seq 100); do [ -S $sock ] && exit 0; sleep 0.2; done; exit 1"; then
			fail "9-rot-agent-up" "no socket $sock"
			"$LAB" kill h1 "$ag" >/dev/null 2>&1
			return
		fi
		m=$(on h1 ip -j macsec show ms300)
		old=$(jq -r '.[0].encoding_sa' <<<"$m")
		new=$(((old + 1) % 4))
		peer=$(jq -r '.[0].rx_sc[0].sci | ltrimstr("0x")' <<<"$m")
		kid=$(openssl rand -hex 16)
		(umask 022 && openssl rand -hex 16 >"$WORK/nsim-rot.key")
		nsim_step() { # name, sa_batch script, jq test on ms300's view, callback:AN lines netdevsim must log
			local name=$1 view out bad="" cb log re
			printf '%b' "$2" >"$WORK/nsim-sab-$name"
			out=$(on h1 sh -c 'dmesg -C; "$1" unix:"$2" ms300 <"$3" 2>&1; echo "exit $?"' sab "$sab" "$sock" "$WORK/nsim-sab-$name")
			view=$(on h1 ip -j macsec show ms300)
			grep -q '^exit 0$' <<<"$out" || bad="$bad agent: $(tr '\n' ' ' <<<"$out");"
			jq -e --argjson o "$old" --argjson n "$new" "$3" <<<"$view" >/dev/null || bad="$bad kernel: $(jq -c '.[0] | {encoding_sa, sa_list, rx: [.rx_sc[]?.sa_list]}' <<<"$view");"
			[ "$(nsim_offload)" = mac ] || bad="$bad offload $(nsim_offload);"
			log=$(on h1 dmesg)
			for cb in $4; do # add_rxsa:AN (the SA callbacks log their AN last), or upd_secy
				[[ $cb == *:* ]] && re="nsim_macsec_${cb%%:*}: .*AN ${cb##*:}\$" || re="nsim_macsec_$cb: "
				grep -q "$re" <<<"$log" || bad="$bad netdevsim logged no $cb;"
			done
			[ -z "$bad" ] && pass "9-rot-$name" || fail "9-rot-$name" "$bad"
		}
		local tx='[.[0].sa_list[]? | select(.an == $n)][0]' rx='[.[0].rx_sc[0].sa_list[]? | select(.an == $n)][0]'
		nsim_step rx-install "rx-install $new $peer $WORK/nsim-rot.key $kid\n" \
			"($rx | .active == true and .key == \"$kid\") and .[0].encoding_sa == \$o" "add_rxsa:$new"
		nsim_step tx-stage "tx-stage $new $WORK/nsim-rot.key $kid\n" \
			"($tx | .active == false and .key == \"$kid\") and .[0].encoding_sa == \$o" "add_txsa:$new"
		nsim_step switch "switch $new 2 $kid\n" \
			"($tx | .active == true) and .[0].encoding_sa == \$n" "upd_txsa:$new upd_secy"
		nsim_step retire-old "retire $old $peer\nretire $old\n" \
			"([.[0].sa_list[]?.an, .[0].rx_sc[0].sa_list[]?.an] | unique) == [\$n] and .[0].encoding_sa == \$n" \
			"del_rxsa:$old del_txsa:$old"
		"$LAB" kill h1 "$ag" >/dev/null 2>&1 || fail "9-rot-agent-stopped"
	}
	if ! ko=$(bash "$ROOT/scripts/lab-netdevsim.sh" 2>"$WORK/nsim-build.err"); then
		fail "9-netdevsim-built" "$(tail -n 5 "$WORK/nsim-build.err")"
	elif ! why=$(on h1 sh -c "modprobe psample && insmod '$ko' dyndbg=+p && echo '1 1' >/sys/bus/netdevsim/new_device &&
		for i in \$(seq 50); do [ -d /sys/bus/netdevsim/devices/netdevsim1/net ] && break; sleep 0.1; done &&
		n=\$(ls /sys/bus/netdevsim/devices/netdevsim1/net) && ip link set dev \"\$n\" name nsim0 &&
		ip link set dev nsim0 address 52:54:00:fa:01:99 && ip link set dev nsim0 up" 2>&1); then
		fail "9-netdevsim-port" "$why"
	else
		pass "9-netdevsim-port"
		cp "$ROOT/tests/lab/profiles/nsim-offload.yaml" "$WORK/nsim.yaml"
		sed 's/replay_window: 64/replay_window: 128/; s/version: 1/version: 2/' "$WORK/nsim.yaml" >"$WORK/nsim-w128.yaml"
		sed 's/offload: mac/offload: none/; s/version: 1/version: 3/' "$WORK/nsim.yaml" >"$WORK/nsim-off.yaml"
		out=$(on h1 "$F" apply --json $NS "$WORK/nsim.yaml")
		[ "$(jq -r .result <<<"$out")" = applied ] && [ "$(nsim_offload)" = mac ] &&
			pass "9-apply-offload-mac" || fail "9-apply-offload-mac" "$(jq -c '{result,failed_op,error}' <<<"$out") offload $(nsim_offload)"
		[ "$(on h1 "$F" show --json $NS | jq -r '[.links[] | select(.name == "ms300") | .offload][0]')" = mac ] &&
			pass "9-show-offload" || fail "9-show-offload"
		out=$(on h1 "$F" apply --json $NS "$WORK/nsim.yaml")
		[ "$(jq -r '"\(.result) \(.netlink_writes)"' <<<"$out")" = "unchanged 0" ] &&
			pass "9-reapply-idempotent" || fail "9-reapply-idempotent" "$(jq -c '{result,netlink_writes}' <<<"$out")"
		NSIM_V1=$(dump h1)
		# drift on the offloaded SecY: its replay window changed by hand (the driver's
		# mdo_upd_secy) is what diff reports, with the SecY's offload; apply repairs it
		# and the SecY is still offloaded
		out=$(on h1 ip link set dev ms300 type macsec replay on window 32 2>&1) || fail "9-drift-made" "ip link set ms300 type macsec replay on window 32: $out"
		out=$(on h1 "$F" diff --json $NS "$WORK/nsim.yaml")
		rc=$?
		[ "$rc" = 1 ] && jq -e '[.. | strings | select(test("ms300"))] | length > 0' <<<"$out" >/dev/null &&
			pass "9-drift-seen-by-diff" || fail "9-drift-seen-by-diff" "exit $rc: $(head -c 400 <<<"$out")"
		out=$(on h1 "$F" apply --json $NS "$WORK/nsim.yaml")
		[ "$(jq -r .result <<<"$out")" = applied ] && [ "$(nsim_offload)" = mac ] &&
			on h1 "$F" diff $NS "$WORK/nsim.yaml" >/dev/null &&
			pass "9-drift-repaired-offload-kept" || fail "9-drift-repaired-offload-kept" "$(jq -c '{result,error}' <<<"$out") offload $(nsim_offload)"
		# in place with offload on: the replay window (the driver's mdo_upd_secy)
		out=$(on h1 "$F" apply --json $NS "$WORK/nsim-w128.yaml")
		[ "$(jq -r '"\(.result) \([.plan.ops[].op] | join(","))"' <<<"$out")" = "applied change-link" ] &&
			pass "9-window-in-place" || fail "9-window-in-place" "$(jq -c '{result,ops: [.plan.ops[]?.op],error}' <<<"$out")"
		# offload off: the kernel refuses it on a live SecY (-EBUSY), so the plan rebuilds it
		plan=$(on h1 "$F" apply --dry-run --json $NS "$WORK/nsim-off.yaml")
		jq -en 'input | [.plan.ops[] | select(.ifname == "ms300" and .op == "delete-link")][0] |
			.disruptive and (.detail | test("offload mac -> off"))' <<<"$plan" >/dev/null &&
			pass "9-offload-change-planned-disruptive" || fail "9-offload-change-planned-disruptive" "$(jq -c .plan.ops <<<"$plan")"
		# a late failure in that rebuild: back to the offloaded SecY exactly
		n=$(jq '.plan.ops | length' <<<"$plan")
		out=$("$LAB" exec --timeout 120 --env "FCTL_TEST_FAIL_AT_OP=$((n - 1))" h1 -- "$F" apply --json $NS "$WORK/nsim-off.yaml")
		[ "$(jq -r '"\(.result) \(.restored_exactly)"' <<<"$out")" = "rolled-back true" ] && [ "$(nsim_offload)" = mac ] &&
			pass "9-rollback-keeps-offload" || fail "9-rollback-keeps-offload" "$(jq -c '{result,failed_op,error}' <<<"$out") offload $(nsim_offload)"
		out=$(on h1 "$F" apply --json $NS "$WORK/nsim-off.yaml")
		[ "$(jq -r .result <<<"$out")" = applied ] && [ "$(nsim_offload)" = off ] &&
			pass "9-offload-off-applied" || fail "9-offload-off-applied" "$(jq -c '{result,failed_op,error}' <<<"$out") offload $(nsim_offload)"
		# and back, then the version before by rollback
		out=$(on h1 "$F" apply --json $NS "$WORK/nsim.yaml")
		[ "$(jq -r .result <<<"$out")" = applied ] && [ "$(dump h1)" = "$NSIM_V1" ] &&
			pass "9-offload-back-exact" || fail "9-offload-back-exact" "$(jq -c '{result,error}' <<<"$out") $(diff <(echo "$NSIM_V1") <(dump h1) | head -10)"
		nsim_rotation
		on h1 "$F" teardown -q $NS || fail "9-teardown"
		on h1 sh -c 'echo 1 >/sys/bus/netdevsim/del_device' || fail "9-netdevsim-removed"
	fi
fi
