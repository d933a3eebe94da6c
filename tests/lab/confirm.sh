#!/bin/bash
# Confirmed apply (apply --confirm, confirm) against real kernels: two lab VMs on one
# wire, the lab profile applied on both, h1 reaching h2 over the MACsec VLAN.
#
#  1. apply --confirm on h2, then confirm in time: the new version stays, every other
#     change waits while it is pending, the watchdog ends, the audit log says so; before,
#     under an approval policy the unapproved version's confirm is refused (audited),
#     and it stays pending
#  2. an apply --confirm that moves h2's address on the MACsec VLAN cuts the path h1
#     reaches it by; the CLI has exited; after the deadline h2 restores itself: ping
#     over the old path works again, history and the audit log show the rollback
#  3. on h1, while h2 waits for its deadline: the CLI stopped right after its apply
#     --confirm and killed with kill -9; the watchdog still rolls h1 back at the
#     deadline
#  4. through h2's agent (mutual TLS, from h1, over the MACsec VLAN):
#     b. apply --target h2 --confirm, then confirm --target h2 in time: the version
#        stays, the watchdog on h2 ends, the audit log records the confirm; a second
#        confirm --target exits 1
#     c. meanwhile a viewer certificate's confirm --target is refused (exit 2,
#        "permission denied", audited) and changes nothing
#     a. apply --target h2 --confirm 75s of a change that cuts the path h1 reaches
#        h2's agent by: the CLI loses its connection (it never gets the answer); h2
#        restores itself at the deadline: ping, history, audit
#
# No timed assertions: every wait is a poll with a generous deadline. Prints PASS/FAIL
# per check and "confirm_lab: N passed, M failed"; exits non-zero on any failure,
# including a lab that cannot start (never skips).
set -uo pipefail

SUITE=confirm_lab
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-confirm
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

poll() { # seconds, command...: until it succeeds (0) or the seconds have passed (1)
	local until=$((SECONDS + $1))
	shift
	while :; do
		"$@" && return 0
		[ "$SECONDS" -ge "$until" ] && return 1
		sleep 2
	done
}

ping_ok() { on h1 ping -c 2 -i 0.3 -W 2 10.100.0.2 >/dev/null 2>&1; }
pending() { on "${1:-h2}" "$F" show --json | jq -en 'input | .confirm.pending == true' >/dev/null; }
not_pending() { on "${1:-h2}" "$F" show --json | jq -en 'input | .confirm == null' >/dev/null; }
restored() { ping_ok && not_pending h2; }
versions() { on "${1:-h2}" "$F" history --json | jq -r '[.[].version] | map(tostring) | join(",")'; }
audit_count() { # host action [result]
	on "$1" "$F" audit show --json |
		jq --arg a "$2" --arg r "${3:-}" '[.[] | select(.action == $a and ($r == "" or .result == $r))] | length'
}
window() { on "$1" ip -j macsec show ms100 | jq -r '.[0].window'; }
watchdog_gone() {
	local pid
	pid=$(on h2 cat /var/lib/fabricctl/confirm.pid) || return 1
	[ -n "$pid" ] && ! on h2 sh -c 'kill -0 "$1"' _ "$pid" 2>/dev/null
}
h2_addr() { on h2 ip -j -4 addr show dev ms100 | jq -r '[.[0].addr_info[].local] | join(",")'; }
watchdog_alive() {
	local pid
	pid=$(on h2 cat /var/lib/fabricctl/confirm.pid) || return 1
	[ -n "$pid" ] && on h2 sh -c 'kill -0 "$1"' _ "$pid" 2>/dev/null
}
# The deadlines the suite waits out: most of its time. Each is what the checks between
# the apply and the deadline need on a loaded machine (a few `on` calls of 1 to 5 s each)
# with room to spare, not more: 2 and 3 check the cut, stop the CLI and look at h1
# before h2's and h1's deadlines pass; in 4a the CLI must give up (CLI_WAIT after its
# last answer) well before the agent's host restores itself, or the answer it waits
# for could still arrive once the path is back. (90 s and 120 s before: 85 s more.)
CUT_DEADLINE=50s
CLI_WAIT=30s
AGENT_DEADLINE=75s
AGENT_JOB=
suite_cleanup() { [ -z "$AGENT_JOB" ] || "$LAB" kill h2 "$AGENT_JOB" >/dev/null 2>&1; }

# --- set up -----------------------------------------------------------------
[ -x "$F" ] || { fail "build" "$F is missing: build first (cmake --build build)"; exit 1; }
if ! "$LAB" up --hosts 2 --lifetime 3000 --boot-timeout 420; then
	fail "lab-up" "the lab did not start (see the console tail above)"
	exit 1
fi
pass "lab-up"

# guests see the host root read-only: one work directory per lab, under the build
WORK=$BUILD/lab-confirm-work-${FCTL_LAB_DIR##*/}
rm -rf "$WORK"
mkdir -p "$WORK/keys"
chmod 700 "$WORK/keys"
cp "$ROOT/profiles/lab-pair.yaml" "$WORK/v1.yaml"
cp "$ROOT/tests/lab/profiles/lab-pair-v2.yaml" "$WORK/v2.yaml"
# v3: h2's address on the protected VLAN moves: h1's path to 10.100.0.2 is cut
sed -e 's/^  version: 2$/  version: 3/' -e 's|h2: 10.100.0.2/24|h2: 10.100.0.9/24|' \
	"$WORK/v2.yaml" >"$WORK/v3-cut.yaml"
grep -q 'h2: 10.100.0.9/24' "$WORK/v3-cut.yaml" && grep -q '^  version: 3$' "$WORK/v3-cut.yaml" ||
	{ fail "setup" "v3-cut.yaml was not made from v2"; exit 1; }
( umask 077; openssl rand -hex 16 >"$WORK/keys/lab-pair.key" )
# v4: the replay window 64 -> 128 (through the agent); v5-cut: v4 with h2's address moved
sed -e 's/^  version: 2$/  version: 4/' -e 's/replay_window: 64$/replay_window: 128/' \
	"$WORK/v2.yaml" >"$WORK/v4.yaml"
sed -e 's/^  version: 4$/  version: 5/' -e 's|h2: 10.100.0.2/24|h2: 10.100.0.9/24|' \
	"$WORK/v4.yaml" >"$WORK/v5-cut.yaml"
grep -q 'replay_window: 128$' "$WORK/v4.yaml" && grep -q '^  version: 5$' "$WORK/v5-cut.yaml" &&
	grep -q 'h2: 10.100.0.9/24' "$WORK/v5-cut.yaml" || { fail "setup" "v4/v5-cut were not made"; exit 1; }
"$ROOT/scripts/pki.sh" "$WORK/pki" h2=10.100.0.2 >/dev/null || { fail "setup" "scripts/pki.sh failed"; exit 1; }
chmod 644 "$WORK"/pki/*.key # guests read them as root over 9p; this tree is a test tree
ID=$WORK/pki
# the lab may run under emulation on a loaded machine: generous TLS deadlines, both sides
OP=(--cert "$ID/client-operator.crt" --key "$ID/client-operator.key" --ca "$ID/ca.crt" --timeout 60s)
VIEW=(--cert "$ID/client-viewer.crt" --key "$ID/client-viewer.key" --ca "$ID/ca.crt" --timeout 60s)
EP=10.100.0.2:7443 # h2's agent, over the MACsec VLAN

for h in h1 h2; do
	on "$h" "$F" apply -q "$WORK/v1.yaml" && pass "apply-v1-$h" || fail "apply-v1-$h"
done
check "ping-over-macsec" poll 60 ping_ok

# --- 1. confirmed in time ----------------------------------------------------
out=$(on h2 "$F" apply --json --confirm 10m "$WORK/v2.yaml")
rc=$?
[ $rc -eq 0 ] && [ "$(jq -r '"\(.result) \(.confirm.pending) \(.confirm.version) \(.confirm.rollback_to_version)"' <<<"$out")" = \
	"applied true 2 1" ] && pass "1-apply-confirm-pending" || fail "1-apply-confirm-pending" "exit $rc: $out"
show=$(on h2 "$F" show --json)
dl=$(jq -r '.confirm.deadline_unix' <<<"$show")
now=$(on h2 date +%s)
[ "$dl" -gt "$now" ] && [ "$dl" -le $((now + 600)) ] && pass "1-show-json-deadline" ||
	fail "1-show-json-deadline" "deadline $dl, guest clock $now: $(jq -c .confirm <<<"$show")"
err=$(on h2 "$F" apply -q "$WORK/v1.yaml" 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] && grep -q 'awaits confirmation' <<<"$err" && pass "1-other-apply-refused-while-pending" ||
	fail "1-other-apply-refused-while-pending" "exit $rc: $err"
# approvals (docs/approvals.md): under a policy (1 of allowed_signers) v2, applied without
# one, has no approvals: confirm is refused (exit 1, audited) and v2 stays pending
ssh-keygen -q -t ed25519 -N '' -C alice -f "$WORK/alice" </dev/null
echo "alice@lab $(cut -d' ' -f1,2 "$WORK/alice.pub")" >"$WORK/allowed_signers"
echo "require: 1 of allowed_signers" >"$WORK/approvals.conf"
err=$(on h2 env FCTL_APPROVALS_CONF="$WORK/approvals.conf" "$F" confirm 2>&1 >/dev/null)
rc=$?
[ $rc -eq 1 ] && grep -q "confirm: refused: lab-pair version 2 .* is NOT approved: 0 of 1 required signed.*missing: alice@lab; checked against $WORK/allowed_signers.*version 2 is not confirmed" <<<"$err" &&
	pass "1-unapproved-confirm-refused" || fail "1-unapproved-confirm-refused" "exit $rc: $err"
check "1-still-pending-after-refused-confirm" pending
[ "$(audit_count h2 confirm refused)" = 1 ] && pass "1-refused-confirm-audited" ||
	fail "1-refused-confirm-audited" "$(audit_count h2 confirm refused)"
out=$(on h2 "$F" confirm --json)
[ "$(jq -r '"\(.result) \(.version)"' <<<"$out")" = "confirmed 2" ] && pass "1-confirm" || fail "1-confirm" "$out"
check "1-nothing-pending-after-confirm" not_pending
check "1-watchdog-ends" poll 60 watchdog_gone
[ "$(versions)" = "1,2" ] && pass "1-version-2-stays" || fail "1-version-2-stays" "history $(versions)"
[ "$(window h2)" = 64 ] && pass "1-kernel-has-v2" || fail "1-kernel-has-v2"
check "1-ping-after-confirm" ping_ok
on h2 "$F" confirm -q 2>/dev/null
[ $? -eq 1 ] && pass "1-second-confirm-exit-1" || fail "1-second-confirm-exit-1"
[ "$(audit_count h2 confirm confirmed)" = 1 ] && pass "1-audit-confirm" || fail "1-audit-confirm"
rec=$(on h2 "$F" audit show --json | jq -c '[.[] | select(.action == "apply")] | last')
grep -q 'awaits confirmation until' <<<"$rec" && pass "1-audit-apply-names-deadline" ||
	fail "1-audit-apply-names-deadline" "$rec"

# --- 2. the change cuts the operator's path; the host restores itself ----------
on h2 "$F" apply -q --confirm "$CUT_DEADLINE" "$WORK/v3-cut.yaml"
rc=$?
[ $rc -eq 0 ] && pass "2-apply-confirm-cut" || fail "2-apply-confirm-cut" "exit $rc"
# the CLI has exited: only the watchdog is left on h2
[ "$(h2_addr)" = 10.100.0.9 ] && pass "2-address-moved" || fail "2-address-moved" "ms100 has $(h2_addr)"
if ping_ok; then
	fail "2-path-cut" "h1 still reaches 10.100.0.2 (pending: $(pending h2 && echo yes || echo no))"
else
	pass "2-path-cut"
fi

# --- 3. meanwhile on h1: the CLI killed with kill -9 after its apply --confirm ---
on h1 rm -f /run/fctl-stop.pid
job=$("$LAB" exec-bg --timeout 600 --env FCTL_TEST_STOP_AFTER_APPLY=/run/fctl-stop.pid h1 -- \
	"$F" apply -q --confirm "$CUT_DEADLINE" "$WORK/v2.yaml")
killed=0
if poll 120 on h1 test -s /run/fctl-stop.pid; then
	pid=$(on h1 cat /run/fctl-stop.pid)
	on h1 grep -q '^State:.*T' "/proc/$pid/status" && pass "3-cli-stopped-after-apply" ||
		fail "3-cli-stopped-after-apply" "pid $pid"
	[ "$(window h1)" = 64 ] && pass "3-h1-has-v2" || fail "3-h1-has-v2"
	check "3-pending-while-cli-lives" pending h1
	on h1 sh -c 'kill -9 "$1"' _ "$pid"
	"$LAB" wait --timeout 120 h1 "$job" >/dev/null 2>&1
	rc=$?
	[ $rc -eq 137 ] && pass "3-cli-killed" || fail "3-cli-killed" "job exit $rc"
	killed=1
else
	fail "3-cli-stopped-after-apply" "no pid file (a build without -DFCTL_TEST_HOOKS=ON?)"
	"$LAB" kill h1 "$job" >/dev/null 2>&1
fi

# --- 2, then 3: both deadlines pass ------------------------------------------
check "2-host-restores-itself" poll 300 restored
[ "$(h2_addr)" = 10.100.0.2 ] && pass "2-address-back" || fail "2-address-back" "ms100 has $(h2_addr)"
[ "$(versions h2)" = "1,2,3,2" ] && pass "2-history-shows-rollback" || fail "2-history-shows-rollback" "history $(versions h2)"
[ "$(audit_count h2 confirm-rollback rolled-back)" = 1 ] && pass "2-audit-rollback" || fail "2-audit-rollback"
on h2 "$F" diff "$WORK/v2.yaml" >/dev/null && pass "2-no-drift-from-v2" || fail "2-no-drift-from-v2"

if [ $killed = 1 ]; then
	check "3-h1-restores-after-kill-9" poll 300 not_pending h1
	[ "$(window h1)" = 0 ] && pass "3-h1-back-on-v1" || fail "3-h1-back-on-v1" "window $(window h1)"
	[ "$(versions h1)" = "1,2,1" ] && pass "3-history-shows-rollback" ||
		fail "3-history-shows-rollback" "history $(versions h1)"
	[ "$(audit_count h1 confirm-rollback rolled-back)" = 1 ] && pass "3-audit-rollback" || fail "3-audit-rollback"
	check "3-ping-after-both" ping_ok
fi
# --- 4. through h2's agent ----------------------------------------------------
on h2 sh -c "mkdir -p /var/lib/fabricctl/agent/keys && cp '$WORK/keys/lab-pair.key' /var/lib/fabricctl/agent/keys/ && chmod 600 /var/lib/fabricctl/agent/keys/lab-pair.key"
AGENT_JOB=$("$LAB" exec-bg --timeout 1200 h2 -- "$F" agent --host h2 --listen 0.0.0.0:7443 \
	--cert "$ID/server-h2.crt" --key "$ID/server-h2.key" --ca "$ID/ca.crt" --drift-interval 0 \
	--handshake-timeout 60s --timeout 120s)
agent_up() { on h1 "$F" status --json --target "$EP" "${OP[@]}" --timeout 30s >/dev/null 2>&1; }
check "4-agent-answers-over-macsec" poll 60 agent_up

# b. confirmed in time, through the agent
out=$(on h1 "$F" apply --target "$EP" "${OP[@]}" --json --confirm 10m "$WORK/v4.yaml")
rc=$?
[ $rc -eq 0 ] && [ "$(jq -r '"\(.result) \(.confirm.pending) \(.confirm.version) \(.confirm.rollback_to_version)"' <<<"$out")" = \
	"applied true 4 2" ] && pass "4b-remote-apply-confirm-pending" || fail "4b-remote-apply-confirm-pending" "exit $rc: $out"
check "4b-pending-on-h2" pending h2
check "4b-watchdog-on-h2" poll 30 watchdog_alive
[ "$(window h2)" = 128 ] && pass "4b-kernel-has-v4" || fail "4b-kernel-has-v4" "window $(window h2)"

# c. a viewer may not confirm (one refused confirm is section 1's, under the policy)
nref=$(audit_count h2 confirm refused)
err=$(on h1 "$F" confirm --target "$EP" "${VIEW[@]}" 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] && grep -q 'permission denied: role viewer may not confirm' <<<"$err" &&
	pass "4c-viewer-confirm-refused" || fail "4c-viewer-confirm-refused" "exit $rc: $err"
check "4c-viewer-changed-nothing" pending h2
check "4c-watchdog-still-watches" watchdog_alive
[ "$(audit_count h2 confirm refused)" = $((nref + 1)) ] && pass "4c-refusal-audited" ||
	fail "4c-refusal-audited" "$(audit_count h2 confirm refused) refused confirms, $nref before"

# b. the operator confirms
out=$(on h1 "$F" confirm --target "$EP" "${OP[@]}" --json)
rc=$?
[ $rc -eq 0 ] && [ "$(jq -r '"\(.host) \(.result) \(.version)"' <<<"$out")" = "h2 confirmed 4" ] &&
	pass "4b-remote-confirm" || fail "4b-remote-confirm" "exit $rc: $out"
check "4b-nothing-pending-after-confirm" not_pending h2
check "4b-watchdog-ends" poll 60 watchdog_gone
[ "$(versions h2)" = "1,2,3,2,4" ] && pass "4b-version-4-stays" || fail "4b-version-4-stays" "history $(versions h2)"
[ "$(audit_count h2 confirm confirmed)" = 2 ] && pass "4b-audit-confirm" || fail "4b-audit-confirm"
err=$(on h1 "$F" confirm --target "$EP" "${OP[@]}" 2>&1 >/dev/null)
rc=$?
[ $rc -eq 1 ] && grep -q 'no confirmation is pending on h2' <<<"$err" && pass "4b-second-remote-confirm-exit-1" ||
	fail "4b-second-remote-confirm-exit-1" "exit $rc: $err"

# a. the change cuts the path to the agent: the CLI never gets its answer
out=$(on h1 "$F" apply --target "$EP" "${OP[@]}" --timeout "$CLI_WAIT" --confirm "$AGENT_DEADLINE" "$WORK/v5-cut.yaml" 2>&1)
rc=$?
[ $rc -ne 0 ] && grep -qi 'timed out\|no answer\|closed' <<<"$out" && pass "4a-cli-loses-its-connection" ||
	fail "4a-cli-loses-its-connection" "exit $rc: $out"
[ "$(h2_addr)" = 10.100.0.9 ] && pass "4a-address-moved" || fail "4a-address-moved" "ms100 has $(h2_addr)"
if ping_ok; then
	fail "4a-path-cut" "h1 still reaches 10.100.0.2 (pending: $(pending h2 && echo yes || echo no))"
else
	pass "4a-path-cut"
fi
check "4a-host-restores-itself" poll 300 restored
[ "$(h2_addr)" = 10.100.0.2 ] && pass "4a-address-back" || fail "4a-address-back" "ms100 has $(h2_addr)"
[ "$(versions h2)" = "1,2,3,2,4,5,4" ] && pass "4a-history-shows-rollback" ||
	fail "4a-history-shows-rollback" "history $(versions h2)"
[ "$(audit_count h2 confirm-rollback rolled-back)" = 2 ] && pass "4a-audit-rollback" || fail "4a-audit-rollback"
[ "$(window h2)" = 128 ] && pass "4a-back-on-v4" || fail "4a-back-on-v4" "window $(window h2)"
check "4a-agent-answers-again" poll 60 agent_up

for h in h1 h2; do
	on "$h" "$F" audit verify --pubkey /var/lib/fabricctl/audit/audit.pub >/dev/null && pass "audit-verifies-$h" ||
		fail "audit-verifies-$h"
done
