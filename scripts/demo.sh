#!/bin/bash
# SPDX-License-Identifier: MIT
# The whole story in one command, on a fresh Debian 12 machine (as root):
#   1. install what is missing (scripts/deps.sh) and build
#   2. a change under review: lab-pair version 2 (replay window 0 -> 64) validated
#      and planned offline against version 1, as CI shows it to the reviewer
#   3. two lab hosts booted from the profile (qemu, Debian's stock kernel)
#   4. version 2 applied on both hosts through netlink; a ping over MACsec
#   5. the agents started (mutual TLS); every protected link probed through them
#      (probe --fabric: RoCE over the MACsec device, soft-RoCE): verdict PASS
#   6. the MACsec key rotated make-before-break by keymgr through the same agents
#      (key-custodian) under a sequence-numbered UDP stream both
#      ways: 0 packets lost
#   7. the audit logs collected and verified, an evidence bundle signed by two
#      keys made for the demo, checked by the bundle's verify.sh with pinned keys
#   8. where each artefact is (all under build/demo/) and the time it took
# Exits non-zero when a step fails (a verdict that is not PASS, a lost packet, a
# bundle verify.sh refuses). The lab is torn down at the end, even on failure.
# Environment: FCTL_LAB_DIR (default /var/tmp/fabricctl-lab-demo), DEMO_ROTATIONS (2).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export FCTL_LAB_DIR=${FCTL_LAB_DIR:-/var/tmp/fabricctl-lab-demo}
F=$ROOT/build/fabricctl/fabricctl
SEQ=$ROOT/build/tests/lab/seqstream
# The guests see the host's root read-only at the same paths, except their own
# tmpfs (/tmp, /var/tmp, ...): everything they read lives under the project tree.
D=$ROOT/build/demo
P=$D/profiles
CHANGE=DEMO-1
ROTATIONS=${DEMO_ROTATIONS:-2}
RATE=200 # packets/s each way
T0=$(date +%s)
STEP= STEP_T0=$T0 TICK= LAB_UP=0
STEP_LOG=()
declare -A SHARE LOG RX TX AG

if [ "$(id -u)" -ne 0 ]; then
	echo "demo.sh: needs root (packages, the qemu lab, netlink); run as root" >&2
	exit 2
fi

# --- presentation ---------------------------------------------------------------
elapsed() { echo $(($(date +%s) - T0)); }
step_end() { [ -n "$STEP" ] && STEP_LOG+=("$(printf '%4d s  %s' $(($(date +%s) - STEP_T0)) "$STEP")"); STEP=; }
step() {
	step_end
	STEP=$1 STEP_T0=$(date +%s)
	printf '\n\033[1m== %s\033[0m   [%d s]\n' "$1" "$(elapsed)"
}
note() { echo "   $*"; }
# a command line as a user types it: fabricctl for the build's binary, paths relative
shown() {
	local s= a
	for a in "$@"; do
		a=${a//"$F"/fabricctl}
		a=${a//"$ROOT/"/}
		[[ $a =~ [[:space:]] ]] && a="'$a'"
		s+=" $a"
	done
	echo "${s# }"
}
run() { echo "\$ $(shown "$@")"; "$@"; }
# the same, its output into FILE (the command line is printed, not written there)
run_to() { local out=$1; shift; echo "\$ $(shown "$@") > $(shown "$out")"; "$@" >"$out" 2>&1; }
# in a lab host: 'fabricctl lab exec HOST -- CMD', with FCTL_AUDIT_LOG set to that
# host's log in its lab share (the host sees it too) and the change id
on() {
	local h=$1
	shift
	"$F" lab exec --timeout 600 ${LOG[$h]:+--env "FCTL_AUDIT_LOG=${LOG[$h]}"} \
		--env "FCTL_CHANGE_ID=$CHANGE" "$h" -- "$@"
}
guest_shown() { local h=$1; shift; echo "[$h]# $(shown "$@")"; }
guest() { guest_shown "$@"; on "$@"; }
die() { echo "demo: $*" >&2; exit 1; }

# a line every 15 s while something long runs; stopped by its PID (and its sleep by its)
tick_start() {
	local msg=$1 t=$(date +%s)
	(
		trap 'kill "$s" 2>/dev/null; exit 0' TERM
		while :; do
			sleep 15 &
			s=$!
			wait "$s"
			echo "   ... $msg ($(($(date +%s) - t)) s)"
		done
	) &
	TICK=$!
}
tick_stop() {
	[ -n "$TICK" ] || return 0
	kill "$TICK" 2>/dev/null || true
	wait "$TICK" 2>/dev/null || true
	TICK=
}

finish() {
	local rc=$?
	trap - EXIT INT TERM
	tick_stop
	if [ "$LAB_UP" = 1 ]; then
		echo
		echo "demo: tearing the lab down"
		"$F" lab down >/dev/null 2>&1 || bash "$ROOT/scripts/lab.sh" down >/dev/null 2>&1 || true
	fi
	if [ "$rc" -ne 0 ]; then
		echo
		echo "demo: FAILED in step '${STEP:-?}' (exit $rc) after $(elapsed) s; outputs so far in build/demo/" >&2
	fi
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

# --- 1 --------------------------------------------------------------------------
step "1. dependencies (Debian 12 packages) and build"
run scripts/deps.sh
rm -rf "$D"
mkdir -p "$D"
note "building with $(nproc) jobs (log: build/demo/build.log)"
tick_start "still building"
{ cmake -S "$ROOT" -B "$ROOT/build" && cmake --build "$ROOT/build" -j "$(nproc)"; } >"$D/build.log" 2>&1 ||
	{ tick_stop; tail -30 "$D/build.log"; die "the build failed (build/demo/build.log)"; }
tick_stop
for b in "$F" build/keymgr/fabricctl-keymgr build/probes/fabricctl-probe "$SEQ"; do
	[ -x "$b" ] || die "$b was not built"
done
run "$F" version

# --- 2 --------------------------------------------------------------------------
step "2. the change under review: validate, then plan version 2 against version 1 offline"
# Version 1 is profiles/lab-pair.yaml, version 2 examples/changes/lab-pair-v2.yaml,
# each copied with the SLOs that software emulation (qemu TCG) meets, as
# tests/lab/probe.sh and the CI pipeline test use: p99 2 s, p99.9 4 s, 200
# retransmissions (rxe retransmits on timers); zero loss does not bend.
mkdir -p "$P/keys"
lab_slo() {
	sed -e 's/^  latency_p99_us:.*/  latency_p99_us: 2000000/' \
		-e 's/^  latency_p999_us:.*/  latency_p999_us: 4000000/' \
		-e 's/^  max_retransmissions:.*/  max_retransmissions: 200/' "$1" >"$2"
}
lab_slo profiles/lab-pair.yaml "$P/lab-pair-v1.yaml"
lab_slo examples/changes/lab-pair-v2.yaml "$P/lab-pair-v2.yaml"
V1=$P/lab-pair-v1.yaml V2=$P/lab-pair-v2.yaml
# lab-only keys (never in git, mode 0600): keys/lab-pair.key for the apply, and
# keys/lab-pair.key.v1..vN, the versions keymgr rotates to (the file backend's
# NAME.vN convention, docs/rotation.md)
(
	umask 077
	openssl rand -hex 16 >"$P/keys/lab-pair.key"
	for v in $(seq 1 "$ROTATIONS"); do openssl rand -hex 16 >"$P/keys/lab-pair.key.v$v"; done
)
note "profiles: build/demo/profiles/lab-pair-v{1,2}.yaml (lab SLOs), lab-only keys in build/demo/profiles/keys/"
run "$F" validate --strict "$V1" "$V2"
note "an invalid profile is refused with every finding as file:line:column:"
rc=0
run "$F" validate tests/lab/profiles/lab-pair-invalid.yaml || rc=$?
[ "$rc" = 1 ] || die "validate of an invalid profile exited $rc, not 1"
note "(exit 1: invalid, as intended)"
echo "\$ $(shown "$F" plan --offline "$V2" --from "$V1")"
"$F" plan --offline "$V2" --from "$V1" | tee "$D/plan.txt"
"$F" plan --offline --markdown "$V2" --from "$V1" >"$D/plan.md"
"$F" plan --offline --json "$V2" --from "$V1" >"$D/plan.json"
note "(the same plan as Markdown for the review comment: build/demo/plan.md; JSON: build/demo/plan.json)"

# --- 3 --------------------------------------------------------------------------
step "3. the lab: two hosts with Debian's stock kernel under qemu, wired as the profile says"
note "booting (lab directory $FCTL_LAB_DIR; software emulation: tens of seconds on a busy machine)"
LAB_UP=1
tick_start "waiting for the lab hosts to boot"
run "$F" lab up --profile "$V2" --boot-timeout 300 || { tick_stop; die "the lab did not start"; }
tick_stop
for h in h1 h2; do
	SHARE[$h]=$("$F" lab status --json | jq -r --arg h "$h" '.hosts[] | select(.host == $h) | .share')
	[ -d "${SHARE[$h]}" ] || die "no lab share for $h"
	LOG[$h]=${SHARE[$h]}/audit.log
done
note "each host writes its audit log into its lab share (${SHARE[h1]}/audit.log, ...)"
note "'[h1]# CMD' below is 'fabricctl lab exec h1 -- CMD' with FCTL_AUDIT_LOG=<share>/audit.log FCTL_CHANGE_ID=$CHANGE"

# --- 4 --------------------------------------------------------------------------
step "4. apply version 2 on both hosts (VLAN, MACsec SecY, RX SAs, TX SA, addresses)"
for h in h1 h2; do
	guest "$h" "$F" apply --change "$CHANGE" "$V2"
done
guest h1 ping -c 3 -W 3 10.100.0.2
for h in h1 h2; do
	on "$h" ip -j -s macsec show ms100 | jq -r --arg h "$h" \
		'.[0] | "   \($h) ms100: cipher \(.cipher_suite), encrypt \(.encrypt), OutPktsEncrypted \(.OutPktsEncrypted), InPktsOK \([.rx_sc[].InPktsOK] | add), InPktsNotValid \([.rx_sc[].InPktsNotValid] | add)"'
done
guest h1 "$F" diff "$V2"

# --- 5 --------------------------------------------------------------------------
step "5. RDMA probes of every protected link through the agents: RoCE v2 over MACsec, judged by the profile's SLOs"
mkdir -p "$D/probe"
# a demo CA: server certificates for the agents on the lab wire's untagged addresses, an
# operator client certificate for the probe and a key-custodian one for keymgr (step 6)
run_to "$D/pki.log" scripts/pki.sh "$D/pki" h1=10.9.12.1 h2=10.9.12.2
chmod 644 "$D"/pki/*.key # a demo CA: the guests' sandboxed agent workers read them over 9p
ID=$D/pki
KC=(--cert "$ID/client-key-custodian.crt" --key "$ID/client-key-custodian.key" --ca "$ID/ca.crt")
OPC=(--cert "$ID/client-operator.crt" --key "$ID/client-operator.key" --ca "$ID/ca.crt")
AGENTS=(--agent h1=10.9.12.1:7443 --agent h2=10.9.12.2:7443)
printf 'h1 10.9.12.1:7443\nh2 10.9.12.2:7443\n' >"$D/inventory"
KS=/var/lib/fabricctl/keymgr # keymgr's journal and history, on h1
guest h1 ip addr add 10.9.12.1/24 dev eth0
guest h2 ip addr add 10.9.12.2/24 dev eth0
for h in h1 h2; do
	guest "$h" rdma link add rxe0 type rxe netdev ms100
	guest_shown "$h" "$F" agent --host "$h" --listen 0.0.0.0:7443 --cert "$ID/server-$h.crt" \
		--key "$ID/server-$h.key" --ca "$ID/ca.crt" --audit-log /var/lib/fabricctl/agent-audit.log "&"
	AG[$h]=$("$F" lab exec-bg "$h" -- "$F" agent --host "$h" --listen 0.0.0.0:7443 \
		--cert "$ID/server-$h.crt" --key "$ID/server-$h.key" --ca "$ID/ca.crt" \
		--audit-log /var/lib/fabricctl/agent-audit.log --drift-interval 30s)
done
note "waiting for both agents to answer over mutual TLS"
ok=0
for i in $(seq 60); do
	on h1 "$F" status --fabric --inventory "$D/inventory" "${OPC[@]}" --quiet >/dev/null 2>&1 && { ok=1; break; }
	[ $((i % 10)) = 0 ] && note "... agents not answering yet ($i s)"
	sleep 1
done
[ "$ok" = 1 ] || die "the agents do not answer (status --fabric)"
note "every protected link of the profile (here one, h1-h2 on VLAN 100): its two ends' agents"
note "serve and run send latency and write bandwidth (200 iterations each) on the RDMA device"
note "whose GID is on the SecY, after a don't-fragment check of the VLAN's MTU both ways"
PROBE=(probe --fabric "$V2" --inventory "$D/inventory" "${OPC[@]}" --test send_lat,write_bw
	--iters 200 --qp-timeout 20 --timeout 300s --deadline 600s --change "$CHANGE")
guest_shown h1 "$F" "${PROBE[@]}" --json ">" build/demo/probe/fabric-probe.json
tick_start "probing"
rc=0
on h1 "$F" "${PROBE[@]}" --json >"$D/probe/fabric-probe.json" || rc=$?
tick_stop
jq -r '.links[] | . as $l | .tests[] | "   \($l.link) VLAN \($l.vlan) \(.test) \(.size_bytes) B: p50 \(.latency_p50_us // "-") us, p99 \(.latency_p99_us // "-") us, \(.bandwidth_gbps // "-") Gb/s, loss \(.loss_packets.a + .loss_packets.b), retransmissions \(.retransmissions.a + .retransmissions.b), MACsec-encrypted packets a/b +\(.macsec_encrypted_delta.a)/+\(.macsec_encrypted_delta.b): \(if .pass then "pass" else "FAIL" end)"' \
	"$D/probe/fabric-probe.json" | tee "$D/probe/fabric-probe.txt" || true
jq -r '.links[] | select(.verdict != "pass") | "   \(.link): \(.verdict): \(.reasons | join("; "))"' \
	"$D/probe/fabric-probe.json" | tee -a "$D/probe/fabric-probe.txt" || true
VERDICT=$(jq -r 'if .pass == true then "PASS" else "FAIL" end' "$D/probe/fabric-probe.json" 2>/dev/null || echo "no report")
echo "   fabric probe verdict: $VERDICT (exit $rc)" | tee -a "$D/probe/fabric-probe.txt"
[ "$rc" = 0 ] && [ "$VERDICT" = PASS ] || die "the fabric probe verdict is $VERDICT (exit $rc)"

# --- 6 --------------------------------------------------------------------------
step "6. key rotation through the agents, under a sequence-numbered stream both ways"
R=$D/rotation
mkdir -p "$R"
KEYS=("${KC[@]}" "${AGENTS[@]}" --state-dir "$KS")
# keymgr writes its rotation records into h1's log, after apply's and the probe's
# (it reads no $FCTL_AUDIT_LOG: the log is named)
note "waiting for both agents to answer keymgr over mutual TLS"
ok=0
for i in $(seq 60); do
	on h1 "$F" keys status "${KEYS[@]}" "$V2" >/dev/null 2>&1 && { ok=1; break; }
	[ $((i % 10)) = 0 ] && note "... agents not answering yet ($i s)"
	sleep 1
done
[ "$ok" = 1 ] || die "the agents do not answer (keys status)"
guest h1 "$F" keys status "${KEYS[@]}" "$V2" | tee "$R/status-before.txt"
# frames either end refused (InPktsNotValid + NotUsingSA + UnusedSA), from the dumps
REFUSED='[.[0].h1, .[0].h2 | .not_valid + .not_using_sa + .unused_sa] | add'
refused0=$(on h1 "$F" keys status --json "${KEYS[@]}" "$V2" | jq "$REFUSED")

note "stream: tests/lab/seqstream, $RATE sequence-numbered UDP packets/s each way over VLAN 100 (MACsec)"
RX[h2]=$("$F" lab exec-bg h2 -- "$SEQ" recv 5001 900 4)
RX[h1]=$("$F" lab exec-bg h1 -- "$SEQ" recv 5002 900 4)
for h in h1 h2; do
	port=$([ "$h" = h2 ] && echo 5001 || echo 5002)
	ok=0
	for _ in $(seq 60); do
		on "$h" ss -Hlun "sport = :$port" | grep -q . && { ok=1; break; }
		sleep 0.5
	done
	[ "$ok" = 1 ] || die "the stream receiver on $h does not listen"
done
TX[h1]=$("$F" lab exec-bg h1 -- "$SEQ" send 10.100.0.2 5001 "$RATE" 900)
TX[h2]=$("$F" lab exec-bg h2 -- "$SEQ" send 10.100.0.1 5002 "$RATE" 900)
sleep 2
rot_rc=0
for i in $(seq 1 "$ROTATIONS"); do
	note "[$(elapsed) s] stream running both ways; rotation $i of $ROTATIONS (overlap 2 s)"
	rc=0
	guest h1 "$F" rotate --all --overlap 2 --audit-log "${LOG[h1]}" "${KEYS[@]}" "$V2" |
		tee "$R/rotate-$i.txt" || rc=$?
	[ "$rc" = 0 ] || { rot_rc=$rc; echo "   rotation $i: exit $rc"; break; }
	sleep 2
done
note "[$(elapsed) s] stopping the senders; waiting for the receivers (they end 4 s after the last packet)"
lost_any=0
for pair in "h1 h2" "h2 h1"; do
	set -- $pair
	"$F" lab kill "$1" "${TX[$1]}" >/dev/null 2>&1 || true
	s=$("$F" lab wait --timeout 60 "$1" "${TX[$1]}" 2>/dev/null | grep '^sent' || true)
	r=$("$F" lab wait --timeout 60 "$2" "${RX[$2]}" 2>/dev/null || true)
	printf '%s\n%s\n' "sender $1: $s" "$r" >"$R/stream-$1-$2.txt"
	sent=$(awk '{print $2}' <<<"$s")
	read -r _ recv _ lost _ reord _ dup _ <<<"$(grep '^received' <<<"$r" || echo)" || true
	echo "   stream $1 -> $2: sent ${sent:-?}, received ${recv:-?}, lost ${lost:-?}, reordered ${reord:-?}, duplicated ${dup:-?}"
	grep '^gap' <<<"$r" | sed 's/^/      /' || true
	[ -n "$sent" ] && [ "$sent" -gt 0 ] && [ "$sent" = "${recv:-}" ] && [ "${lost:-}" = 0 ] &&
		[ "${reord:-}" = 0 ] && [ "${dup:-}" = 0 ] || lost_any=1
done
[ "$rot_rc" = 0 ] || die "a rotation failed (exit $rot_rc; build/demo/rotation/)"
guest h1 "$F" keys status "${KEYS[@]}" "$V2" | tee "$R/status-after.txt"
js=$(on h1 "$F" keys status --json "${KEYS[@]}" "$V2")
refused1=$(jq "$REFUSED" <<<"$js")
note "frames refused by MACsec (NotValid + NotUsingSA + UnusedSA, both ends): $refused0 before, $refused1 after"
# keymgr's history and records, the agents' rotation records and logs, into the shares
on h1 sh -c "cp -r $KS ${SHARE[h1]}/keymgr"
for h in h1 h2; do
	"$F" lab kill "$h" "${AG[$h]}" >/dev/null 2>&1 || true
	"$F" lab wait --timeout 30 "$h" "${AG[$h]}" >/dev/null 2>&1 || true
	# the agent's rotation record (what it switched to) and its audit log with its public key
	on "$h" sh -c "mkdir -p ${SHARE[$h]}/agent; cp -r /var/lib/fabricctl/rotation ${SHARE[$h]}/agent/;
		cp /var/lib/fabricctl/agent-audit.log* /var/lib/fabricctl/audit.pub ${SHARE[$h]}/agent/" ||
		note "$h: some agent files were not there to copy"
done
cp -r "${SHARE[h1]}/keymgr" "$R/keymgr"
for h in h1 h2; do cp -r "${SHARE[$h]}/agent/rotation" "$R/agent-record-$h" 2>/dev/null || true; done
committed=$(grep -c ' committed ' "$R/keymgr/rotations.log" || true)
open=$(find "$R/keymgr" -name 'journal-*' | wc -l)
note "keymgr history (build/demo/rotation/keymgr/rotations.log): $committed committed, $open open journal(s)"
[ "$lost_any" = 0 ] || die "the stream lost, reordered or duplicated packets (build/demo/rotation/stream-*.txt)"
[ "$refused1" = "$refused0" ] || die "MACsec refused frames during the rotations ($refused0 -> $refused1)"
[ "$(jq --argjson n "$ROTATIONS" '.[0] | .h1.version == $n and .h2.version == $n and
	.h1.encoding_sa == .h2.encoding_sa' <<<"$js")" = true ] || die "the ends are not both on key version $ROTATIONS"
[ "$committed" = "$ROTATIONS" ] && [ "$open" = 0 ] || die "keymgr's history does not show $ROTATIONS committed rotations"
echo "   rotation: $ROTATIONS rotations committed, both ends on key version $ROTATIONS, 0 packets lost"

# --- 7 --------------------------------------------------------------------------
step "7. audit logs and the evidence bundle (two signers), checked by its verify.sh"
for h in h1 h2; do
	mkdir -p "$D/audit/$h"
	# the guest's packet-number ledger, which the log's sa-ledger records anchor
	on "$h" sh -c "[ ! -e /var/lib/fabricctl/sa-ledger ] || cp /var/lib/fabricctl/sa-ledger ${SHARE[$h]}/" ||
		die "$h: cannot copy its packet-number ledger"
	# the log, its checkpoints and public key; never the host's private checkpoint key
	cp "${SHARE[$h]}"/audit.log "${SHARE[$h]}"/audit.log.checkpoints "${SHARE[$h]}"/audit.pub "$D/audit/$h/"
	[ ! -e "${SHARE[$h]}/sa-ledger" ] || cp "${SHARE[$h]}/sa-ledger" "$D/audit/$h/"
	mkdir -p "$D/audit/$h/agent"
	cp "${SHARE[$h]}"/agent/agent-audit.log* "${SHARE[$h]}"/agent/audit.pub "$D/audit/$h/agent/" 2>/dev/null || true
done
run "$F" lab down
LAB_UP=0
for h in h1 h2; do
	note "$h: $(grep -c . "$D/audit/$h/audit.log") records ($(jq -r .action "$D/audit/$h/audit.log" | sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}'))"
	# the copy is not where the guest wrote it: its checkpoints name the guest's log (origin)
	run "$F" audit verify --log "$D/audit/$h/audit.log" --pubkey "$D/audit/$h/audit.pub" \
		--origin "$(head -n 1 "$D/audit/$h/audit.log.checkpoints")"
done
mkdir -p "$D/evidence" "$D/signers"
for k in alice bob; do
	run_to "$D/signers/$k.log" "$F" audit keygen --out "$D/signers/$k"
done
B=$D/evidence/evidence-$CHANGE-h1.tar
run "$F" evidence --log "$D/audit/h1/audit.log" --pubkey "$D/audit/h1/audit.pub" --profile "$V2" \
	--ledger "$D/audit/h1/sa-ledger" --sign "$D/signers/alice/audit.key" --sign "$D/signers/bob/audit.key" --out "$B"
note "signed statements in the bundle, by type (h1 applied, probed and ran keymgr):"
tar -xOf "$B" attestations.intoto.jsonl | jq -r '.payload | @base64d | fromjson | .predicateType' |
	sort | uniq -c | sed 's/^ */      /'
# the auditor's side: the bundle's verify.sh, the two signers and h1's audit key pinned
tar -xOf "$B" verify.sh >"$D/evidence/verify.sh"
rc=0
run_to "$D/evidence/verify.txt" bash "$D/evidence/verify.sh" --tar "$B" \
	--signer-pub "$D/signers/alice/audit.pub" --signer-pub "$D/signers/bob/audit.pub" \
	--audit-pub "$D/audit/h1/audit.pub" || rc=$?
sed 's/^/   /' "$D/evidence/verify.txt" | tail -12
[ "$rc" = 0 ] || die "verify.sh refused the bundle (exit $rc; build/demo/evidence/verify.txt)"
echo "   verify.sh: exit 0"

# --- 8 --------------------------------------------------------------------------
step "8. where everything is"
step_end
printf '   %-24s %s\n' \
	"profile (applied)" "build/demo/profiles/lab-pair-v2.yaml (version 1 beside it)" \
	"plan (v2 from v1)" "build/demo/plan.txt, plan.md, plan.json" \
	"probe report" "build/demo/probe/fabric-probe.json (summary: fabric-probe.txt)" \
	"rotation journal/record" "build/demo/rotation/keymgr/rotations.log, agent-record-h{1,2}/, rotate-*.txt, stream-*.txt" \
	"audit logs" "build/demo/audit/h{1,2}/audit.log (+ .checkpoints, audit.pub; agents' logs in agent/)" \
	"evidence bundle" "${B#"$ROOT/"}" \
	"verify output" "build/demo/evidence/verify.txt"
echo
echo "   time per step:"
printf '   %s\n' "${STEP_LOG[@]}"
echo
echo "demo: every step passed (probe PASS, $ROTATIONS rotations with 0 lost, verify.sh exit 0) in $(elapsed) s"
echo "demo: the lab is down ($(bash scripts/lab.sh status --dir "$FCTL_LAB_DIR" 2>&1 | head -1))"
