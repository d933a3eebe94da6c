#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue "Fleet", 3: a client that gave up on a request (the CLI's per-host deadline of a
# fan-out, a person's Ctrl-C) left its worker running to the end: the agent stopped
# watching a connection while its worker ran, so it never saw the hang-up, and the TLS
# front-end did the same with a request it had forwarded. At 10,000 agents on one
# machine the abandoned plan workers piled up past any pool until the OOM killer came.
# Now the agent and its front-end watch for the hang-up, and the agent stops a
# read-only worker whose client left; a writing worker (apply) finishes, its change
# and audit record whole.
# Here: one real agent whose every profile parse is held 45 s (FCTL_TEST_HOLD_PROFILE_MS,
# test builds only). plan with --timeout 8s over TLS (through the front-end) and over
# the Unix socket: the CLI gives up after 8 s (room for a slow handshake beside busy
# labs), and the worker must be gone within 12 s after that (before the fix it lived
# the whole 45 s). apply with --timeout 8s: the CLI gives up, the apply must still
# finish and be audited as done (its agent's parses held 15 s). No timing is
# asserted beyond the bound that tells "stopped" from "ran to its end". The agent counts the two plans as abandoned
# (fabricctl_agent_requests_total{result="abandoned"}), not as failed.
# Prints PASS/FAIL per check, "abandoned_worker: N passed, M failed"; needs root.
set -uo pipefail
NAME=abandoned_worker
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"
HOLD_MS=45000

# the agent's workers: its children other than the TLS front-end
workers() {
	local p
	for p in $(pgrep -P "$AGENT_PID"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = fabricctl-tls ] && continue
		echo "$p"
	done
}

# waits up to $2 s for the number of workers to be $1
wait_workers() { # count seconds (by the clock: each look costs a few processes)
	local end=$((SECONDS + $2))
	while ((SECONDS < end)); do
		[ "$(workers | wc -l)" -eq "$1" ] && return 0
		sleep 0.1
	done
	[ "$(workers | wc -l)" -eq "$1" ]
}

MPORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') ||
	die "no free port"
FCTL_TEST_HOLD_PROFILE_MS=$HOLD_MS start_agent $(agent_args) --metrics "127.0.0.1:$MPORT"
# a sample of the agent's request counter: role type result
requests() {
	curl -sf "http://127.0.0.1:$MPORT/metrics" |
		awk -v k="fabricctl_agent_requests_total{role=\"$1\",type=\"$2\",result=\"$3\"}" '$1 == k { print $2 }'
}
profile abandoned 1 >"$T/p1.yaml"

# plan, the client gone after 8 s: TLS through the front-end, then the Unix socket
for via in tls unix; do
	if [ $via = tls ]; then
		target=(--target "127.0.0.1:$PORT" $(tls_opts operator))
	else
		target=(--target "unix:$SOCK")
	fi
	"$F" plan "${target[@]}" --timeout 8s "$T/p1.yaml" >"$T/out" 2>&1 &
	cli=$!
	# the worker is there while the client waits (else the check below proves nothing)
	wait_workers 1 10 && pass "$via-plan-worker-running" || fail "$via-plan-worker-running" "none seen"
	wait "$cli"
	rc=$?
	if [ $rc != 0 ] && grep -q "timed out after 8s" "$T/out"; then
		pass "$via-plan-client-gave-up"
	else
		fail "$via-plan-client-gave-up" "exit $rc: $(tail -c 300 "$T/out")"
	fi
	if wait_workers 0 12; then
		pass "$via-plan-worker-stopped"
	else
		fail "$via-plan-worker-stopped" "still running: $(workers | tr '\n' ' ')"
	fi
	wait_workers 0 $((HOLD_MS / 1000 + 10)) # the next case starts from none
done
# counted as abandoned, not as failed
for rt in "operator abandoned" "local abandoned" "operator failed" "local failed"; do
	set -- $rt
	want=0
	[ "$2" = abandoned ] && want=1
	got=$(requests "$1" plan "$2")
	[ "$got" = "$want" ] && pass "metric-$1-plan-$2-$want" || fail "metric-$1-plan-$2-$want" "got '$got'"
done
agent_healthy plan

# apply, the client gone after 8 s: the change still happens, audited as done. An
# apply parses more than once: an agent whose parses are held 15 s (over the CLI's 8 s)
stop_agent
FCTL_TEST_HOLD_PROFILE_MS=15000 start_agent $(agent_args)
out=$("$F" apply --target "unix:$SOCK" --timeout 8s "$T/p1.yaml" 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "timed out after 8s" <<<"$out" && pass "apply-client-gave-up" ||
	fail "apply-client-gave-up" "exit $rc: $(tail -c 300 <<<"$out")"
if wait_workers 0 $((HOLD_MS / 1000 + 30)); then
	pass "apply-worker-ended"
else
	fail "apply-worker-ended" "still running after $((HOLD_MS / 1000 + 30)) s"
fi
if grep -q '"action":"apply".*"result":"done"' "$T/audit/agent.log" 2>/dev/null ||
	jq -e 'select(.action == "apply" and .result == "done")' "$T/audit/agent.log" >/dev/null 2>&1; then
	pass "apply-finished-and-audited"
else
	fail "apply-finished-and-audited" "$(tail -n 3 "$T/audit/agent.log" 2>/dev/null | cut -c1-300)"
fi
# alive, no sanitizer report (every parse is held: nothing more is asked of it)
kill -0 "$AGENT_PID" 2>/dev/null && pass "apply-agent-alive" || fail "apply-agent-alive"
if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: " "$T/agent.err"; then
	fail "apply-no-sanitizer-report" "$(grep -m3 -E "ERROR|SUMMARY|runtime error" "$T/agent.err")"
else
	pass "apply-no-sanitizer-report"
fi
