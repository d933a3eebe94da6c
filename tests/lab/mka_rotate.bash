# SPDX-License-Identifier: MIT
# Sourced by tests/lab/mka.sh, in its lab boot, after mka_agent.bash: a make-before-break
# CAK rotation driven by fabricctl (docs/mka.md, "CAK rotation"), under a
# sequence-numbered UDP stream both ways (tests/lab/seqstream.c), agents on both ends.
#
#   rotate-setup              both ends back on the first CAK, agents answering, streams on
#   rotate-one-end-waits      the new CAK and CKN applied on h1 only: h1's incoming CA not
#                             secured, h1's addresses still on the old SecY
#   rotate-reapply-during     h1 applies the same profile again 4 times while it rotates
#                             (the rotation goes on; the stream checks below cover it)
#   rotate-done               applied on h2 too: on both ends one CA left, the new CKN,
#                             secured, a SAK installed, one SecY, the address on it
#   rotate-lost-0-h1-h2       the stream h1 -> h2 through all of it: 0 lost
#   rotate-lost-0-h2-h1       the stream h2 -> h1: 0 lost
#   rotate-audit              each agent's log: mka-rotate moved and done for eth0.100, an
#                             mka-state record with the new CKN and the new CAK's check
#                             value; neither CAK's hex anywhere in it
#   rotate-again-back         a second rotation back to the first CAK (the SCI port
#                             alternates 1 -> 2 -> 1): done on both ends, stream still 0 lost
#
# Uses mka.sh's helpers (on, lab, check, ping_ok, jq_ok, F, WORK, RUN, CKN, BUILD).

SEQ=$BUILD/tests/lab/seqstream
(umask 077 && hex 16 >"$WORK/keys/cak2.key")
CKN2=$(hex 16)
mkdir -p "$WORK/rot"
sed -e "s/$CKN/$CKN2/" -e 's|keys/cak.key|keys/cak2.key|' -e 's/version: 1 }/version: 3 }/' \
	"$WORK/p.yaml" >"$WORK/p2.yaml"
RAGENT=()
rot_cleanup() {
	local i
	for i in 1 2; do [[ -n ${RAGENT[$i]:-} ]] && lab kill "h$i" "${RAGENT[$i]}" >/dev/null 2>&1; done
	return 0
}
ok=1
on h1 "$F" apply -q "$WORK/p.yaml" >/dev/null || ok=0
on h2 "$F" apply -q "$WORK/p.yaml" >/dev/null || ok=0
for i in 1 2; do
	RAGENT[i]=$(lab exec-bg --timeout 900 "h$i" -- "$F" agent --host "h$i" --socket /run/fabricctl/agent.sock \
		--audit-log /var/lib/fabricctl/audit.log --drift-interval 0) || ok=0
done
ragent_ok() { on "$1" "$F" status --json --target unix:/run/fabricctl/agent.sock >/dev/null 2>&1; }
for h in h1 h2; do
	for _ in $(seq 60); do ragent_ok $h && break; sleep 1; done
	ragent_ok $h || ok=0
done
ping_ok h1 10.100.0.2 || ok=0
# one CA per end, the current one (the JSON of the port, or nothing)
cas() { on "$1" "$F" show --json | jq -c '.mka'; }
# the streams: 200 packets/s each way, at most 10 minutes, stopped when the test is done
RX1=$(lab exec-bg --timeout 700 h2 -- "$SEQ" recv 5101 660 20) || ok=0
RX2=$(lab exec-bg --timeout 700 h1 -- "$SEQ" recv 5102 660 20) || ok=0
# the senders start once both receivers are bound (polled, bounded at 60 s): exec-bg
# returns before the guest runs the command, and a number sent before the receiver's
# bind is lost above MACsec (no socket: the receiving kernel's UdpNoPorts grows), not by
# any rotation; a fixed 2 s was not always enough on a loaded machine (docs/mka.md,
# "What lost frames")
bound() { on "$1" sh -c "for i in \$(seq 300); do ss -Hlun 'sport = :$2' | grep -q . && exit 0; sleep 0.2; done; exit 1"; }
bound h2 5101 && bound h1 5102 || ok=0
TX1=$(lab exec-bg --timeout 700 h1 -- "$SEQ" send 10.100.0.2 5101 200 600) || ok=0
TX2=$(lab exec-bg --timeout 700 h2 -- "$SEQ" send 10.100.0.1 5102 200 600) || ok=0
check rotate-setup "apply, the agents or the streams did not start" test $ok = 1

# the new CAK on h1 only: h2 does not have it, so nothing may move
on h1 "$F" apply -q "$WORK/p2.yaml" >/dev/null
sleep 12 # six MKA hellos and six agent checks
j=$(cas h1)
check rotate-one-end-waits "h1: $j" jq_ok "$j" --arg c "$CKN" \
	'(map(select(.ca == "incoming" and (.secured | not))) | length) == 1 and
	 (map(select(.ca == "current" and .ckn == $c and .secured)) | length) == 1'
addr_on() { # HOST ADDR: the SecY holding ADDR
	on "$1" sh -c "ip -j addr show | jq -r '.[] | select(any(.addr_info[]; .local == \"$2\")) | .ifname'"
}
a1=$(addr_on h1 10.100.0.1)
old1=$(jq -r '.[] | select(.ca == "current") | .secy' <<<"$j")
check rotate-one-end-keeps-address "h1's address on '$a1', the current CA's SecY '$old1'" \
	bash -c '[[ -n $1 && $1 == "$2" ]]' _ "$a1" "$old1"

# the new CAK on h2: the agents move the traffic and stop the old CAs; meanwhile h1
# applies the same profile again (a CI re-apply): the rotation goes on, nothing restarts
on h2 "$F" apply -q "$WORK/p2.yaml" >/dev/null
reapplied=0
for _ in 1 2 3 4; do
	sleep 3
	on h1 "$F" apply -q "$WORK/p2.yaml" >/dev/null && reapplied=$((reapplied + 1))
done
check rotate-reapply-during "h1's re-applies of the same profile during the rotation: $reapplied of 4 passed" \
	test "$reapplied" = 4
rotated() { # CKN: on both ends one CA, current, with CKN, secured, a SAK, one SecY holding the address
	local h j n a i
	for i in 1 2; do
		h=h$i
		j=$(cas $h)
		jq_ok "$j" --arg c "$1" 'length == 1 and .[0].ca == "current" and .[0].ckn == $c and .[0].secured and .[0].tx_sa' || return 1
		n=$(on $h sh -c "ip -o link show type macsec | wc -l")
		a=$(addr_on $h "10.100.0.$i")
		[[ $n == 1 && $a == "$(jq -r '.[0].secy' <<<"$j")" ]] || return 1
	done
}
wait_rotated() { # CKN: bounded, 120 s
	local t0=$SECONDS
	while ((SECONDS - t0 < 120)); do
		rotated "$1" && { echo "NOTE rotate: both ends on CKN ${1:0:8}.. after $((SECONDS - t0)) s"; return 0; }
		sleep 2
	done
	rotated "$1"
}
check rotate-done "not rotated on both ends within 120 s: h1 $(cas h1) h2 $(cas h2)" wait_rotated "$CKN2"
k2=$(head -c 16 /dev/zero | openssl enc -aes-128-ecb -nopad -K "$(cat "$WORK/keys/cak2.key")" | od -An -tx1 -N3 | tr -d ' \n')
cak1=$(cat "$WORK/keys/cak.key") cak2=$(cat "$WORK/keys/cak2.key")
audit_ok() { # HOST
	local log
	log=$(on "$1" cat /var/lib/fabricctl/audit.log)
	[[ $log != *"$cak1"* && $log != *"$cak2"* ]] || { echo "a CAK in $1's audit log"; return 1; }
	jq -s -e --arg c "$CKN2" --arg k "$k2" '
		(map(select(.action == "mka-rotate" and .result == "moved" and (.detail | test("port=eth0.100")))) | length) >= 1 and
		(map(select(.action == "mka-rotate" and .result == "done" and (.detail | test("port=eth0.100")))) | length) >= 1 and
		(map(select(.action == "mka-state" and .result == "secured" and (.detail | test("ckn=" + $c)) and .kcv == [$k])) | length) >= 1' \
		<<<"$log" >/dev/null || { echo "$1: $(grep -E 'mka-(rotate|state)' <<<"$log" | tail -4)"; return 1; }
}
why=""
for _ in $(seq 10); do why=$(audit_ok h1 && audit_ok h2) && break; sleep 2; done
check rotate-audit "$why" test -z "$why"
# back to the first CAK and CKN: the SCI port alternates back to 1
sed -e 's/version: 1 }/version: 4 }/' "$WORK/p.yaml" >"$WORK/p4.yaml"
on h2 "$F" apply -q "$WORK/p4.yaml" >/dev/null
on h1 "$F" apply -q "$WORK/p4.yaml" >/dev/null
check rotate-again-back "not rotated back within 120 s: h1 $(cas h1) h2 $(cas h2)" wait_rotated "$CKN"
sleep 3
lab kill h1 "$TX1" >/dev/null 2>&1
lab kill h2 "$TX2" >/dev/null 2>&1
t1=$(lab wait --timeout 60 h1 "$TX1") t2=$(lab wait --timeout 60 h2 "$TX2")
s1=$(sed -n 's/^sent \([0-9]*\).*/\1/p' <<<"$t1") s2=$(sed -n 's/^sent \([0-9]*\).*/\1/p' <<<"$t2")
# a number the sender's sendto refused never left it: counted lost, said apart
e1=$(sed -n 's/.*send_errors \([0-9]*\).*/\1/p' <<<"$t1") e2=$(sed -n 's/.*send_errors \([0-9]*\).*/\1/p' <<<"$t2")
o1=$(lab wait --timeout 120 h2 "$RX1")
o2=$(lab wait --timeout 120 h1 "$RX2")
r1=$(grep '^received ' <<<"$o1") r2=$(grep '^received ' <<<"$o2")
# lost = numbers never received up to the highest seen, plus the tail never seen
lost() { awk -v s="$1" '{ for (i = 1; i < NF; i++) { if ($i == "lost") l = $(i + 1); if ($i == "max_seq") m = $(i + 1) } }
	END { if (s == "" || m == "") print "none"; else print l + (s - 1 - m) }' <<<"$2"; }
l1=$(lost "$s1" "$r1") l2=$(lost "$s2" "$r2")
echo "NOTE rotate-stream h1->h2: sent $s1 (send errors ${e1:-?}), $r1"
echo "NOTE rotate-stream h2->h1: sent $s2 (send errors ${e2:-?}), $r2"
# a loss says where it went: the numbers missing (with the sender's clock around them, to
# set beside the agents' mka-rotate records) and both ends' MACsec counters (docs/mka.md,
# "What lost frames"); the old SecYs are gone by now, their counters with them
if [[ $l1 != 0 || $l2 != 0 ]]; then
	grep '^gap ' <<<"$o1" | sed 's/^/NOTE rotate-gap h1->h2 /'
	grep '^gap ' <<<"$o2" | sed 's/^/NOTE rotate-gap h2->h1 /'
	for h in h1 h2; do
		echo "NOTE rotate-counters $h: $(on $h ip -s -j macsec show | jq -c '[.[] | {dev: .ifname, sci: .sci,
			NoSCI: .InPktsNoSCI, rx: [.rx_sc[]? | {sci, InPktsOK, InPktsLate, InPktsNotValid, InPktsNotUsingSA,
			InPktsUnusedSA}]}]')"
		echo "NOTE rotate-audit $h: $(on $h sh -c 'grep -E "mka-rotate" /var/lib/fabricctl/audit.log' |
			jq -r '"\(.time) \(.result)"' | tr '\n' ' ')"
	done
fi
check rotate-lost-0-h1-h2 "sent '$s1', lost $l1: $r1" bash -c '[[ $1 == 0 && $2 -gt 1000 ]]' _ "$l1" "${s1:-0}"
check rotate-lost-0-h2-h1 "sent '$s2', lost $l2: $r2" bash -c '[[ $1 == 0 && $2 -gt 1000 ]]' _ "$l2" "${s2:-0}"
rot_cleanup
