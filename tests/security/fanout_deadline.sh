#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue "Fleet", 3: a fabric fan-out waited on agents that accept TCP but never answer
# TLS (a stopped process: the kernel completes the connect, nobody reads) for the
# socket timeouts of every blocking read (120 s each, slot after slot), and called
# them "TLS error". Now each host has one deadline (--timeout, default 10 s) for its
# connect, handshake and answer, and the result names why a host did not answer.
# Here: 8 real agents on 127.0.0.1 (own port, state dir, audit log; one network
# namespace), 2 stopped with SIGSTOP, 2 killed. status --fabric (the default
# deadline), plan --fabric --timeout 6s and apply --fabric --partial --timeout 6s must
# each finish (the suite's timeout catches a hang), the stopped hosts named "timed
# out after Ns" (at the TLS handshake when the whole agent is stopped, waiting for the
# answer when only the privileged agent behind its TLS front-end is), the killed ones
# "connection refused", the others
# answered; apply must not apply anywhere (its status phase failed). No timing is
# asserted. Prints PASS/FAIL per check, "fanout_deadline: N passed, M failed"; root.
set -uo pipefail
NAME=fanout_deadline
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"
N=8
STOPPED=()

cleanup() {
	local p
	# a stopped agent acts on SIGTERM only once continued
	for p in "${STOPPED[@]}"; do kill -CONT "$p" 2>/dev/null; done
	fleet_stop
	[ -n "$NETNS" ] && ip netns del "$NETNS" 2>/dev/null
	rm -rf -- "$T"
}

fleet_start "$N"
{
	printf 'schema: 1\nprofile:\n  name: fleet\n  version: 1\nhosts:\n'
	for i in $(seq 0 $((N - 1))); do printf '  - name: h%s\n    ports: [{ name: eth0 }]\n' "$i"; done
} >"$T/fleet.yaml"
"$F" status --fabric --inventory "$T/inventory" $(tls_opts viewer) -q >/dev/null 2>&1 ||
	fail "all-up" "status --fabric fails with every agent up"

# h2 hung whole (the agent and its TLS front-end stopped: the kernel accepts, TLS never
# answers); h3's agent stopped behind a live front-end (the handshake completes, no answer
# comes); h4, h5 dead (nothing listens)
for c in $(pgrep -P "${FLEET_PIDS[2]}"); do kill -STOP "$c" && STOPPED+=("$c"); done
for i in 2 3; do kill -STOP "${FLEET_PIDS[$i]}" && STOPPED+=("${FLEET_PIDS[$i]}"); done
[ -n "$(pgrep -P "${FLEET_PIDS[2]}")" ] || fail "h2-front-end" "h2's agent has no child process (its TLS front-end) to stop"
# reaped, a dead agent's PID is no longer ours: out of the list fleet_stop kills
for i in 4 5; do kill "${FLEET_PIDS[$i]}"; wait "${FLEET_PIDS[$i]}" 2>/dev/null; unset "FLEET_PIDS[$i]"; done

# check LABEL JSONFILE EXIT WANT_EXIT DEADLINE: each host's error names its fault
check() {
	local label=$1 out=$2 rc=$3 want=$4 dl=$5
	if [ "$rc" = "$want" ]; then echo "PASS $label-exit-$want"; else echo "FAIL $label-exit-$want: exit $rc"; fi
	"$PY" - "$out" "$dl" "$label" <<'EOPY'
import json, sys
out, dl, label = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    doc = json.load(open(out))
except ValueError as e:
    print("FAIL %s-json %s" % (label, e)); sys.exit()
hosts = {h["host"]: h for h in doc["hosts"]}
def want(name, cond, what):
    h = hosts.get(name)
    ok = h is not None and cond(h)
    print("%s %s-%s-%s%s" % ("PASS" if ok else "FAIL", label, name, what,
                             "" if ok else ": %r" % (h,)))
for n in ("h0", "h1", "h6", "h7"):
    want(n, lambda h: h["exit"] == 0 and not h["error"], "answered")
want("h2", lambda h: h["exit"] == 2 and "timed out after %s" % dl in h["error"]
     and "TLS" in h["error"] and "refused" not in h["error"], "timed-out")
want("h3", lambda h: h["exit"] == 2 and "timed out after %s" % dl in h["error"]
     and "no answer" in h["error"] and "refused" not in h["error"], "timed-out")
for n in ("h4", "h5"):
    want(n, lambda h: h["exit"] == 2 and "connection refused" in h["error"]
         and "timed out" not in h["error"], "refused")
print("%s %s-every-host %d" % ("PASS" if len(hosts) == 8 else "FAIL", label, len(hosts)))
EOPY
}

"$F" status --fabric --inventory "$T/inventory" $(tls_opts viewer) --json -q >"$T/status.json" 2>"$T/status.err"
rc=$?
count < <(check status "$T/status.json" $rc 2 10s)

# plan and apply take a shorter deadline than status' default, to keep the test short,
# but not so short that a healthy agent's plan worker (a fork and re-execution, its
# netlink dump) misses it on a CI machine whose two cores also run two emulated guests
# (2 s did not leave that margin)
DL=6s
"$F" plan --fabric --inventory "$T/inventory" $(tls_opts viewer) --timeout "$DL" --json -q \
	"$T/fleet.yaml" >"$T/plan.json" 2>"$T/plan.err"
rc=$?
count < <(check plan "$T/plan.json" $rc 2 "$DL")

"$F" apply --fabric --partial --inventory "$T/inventory" $(tls_opts operator) --timeout "$DL" \
	--json -q "$T/fleet.yaml" >"$T/apply.json" 2>"$T/apply.err"
rc=$?
count < <(check apply "$T/apply.json" $rc 2 "$DL")
if grep -q '"result":"plan-failed"' "$T/apply.json"; then pass apply-plan-failed; else
	fail apply-plan-failed "$(head -c 300 "$T/apply.json")"; fi
applied=0
for i in 0 1 6 7; do
	[ -s "$T/s$i/history/index" ] && applied=$((applied + 1))
done
if [ $applied -eq 0 ]; then pass apply-nothing-applied; else fail apply-nothing-applied "$applied hosts"; fi

# continued, the stopped agents answer again: nothing was left wedged
for p in "${STOPPED[@]}"; do kill -CONT "$p"; done
STOPPED=()
"$F" status --target "unix:$T/sock2" >/dev/null 2>&1 && pass stopped-agent-serves-after ||
	fail stopped-agent-serves-after
