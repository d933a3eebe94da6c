#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding 1: the agent spooled a received profile to profile_dir/.remote-PID-ID.yaml,
# ID the client's request id (every client's first request after hello is 2), with
# O_TRUNC and no O_EXCL: an operator's apply and a viewer's plan sent together shared
# one file, and the operator's apply applied the viewer's profile (recorded as the
# operator's) or failed with ENOENT when the other worker removed it first.
# Here: ROUNDS rounds of an operator apply and a viewer plan, both id 2, sent back to
# back on two TLS connections. Every apply must apply the operator's profile (its
# output, the history), no request may fail, no spool file may be left behind.
# Prints PASS/FAIL per check, "spool_collision: N passed, M failed"; needs root.
set -uo pipefail
NAME=spool_collision
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"
ROUNDS=${ROUNDS:-20}

start_agent $(agent_args)

cat >"$T/race.py" <<'EOPY'
import json, sys, threading
import wire as w

port, pki, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def prof(name, v):
    return ("schema: 1\nprofile:\n  name: %s\n  version: %d\nhosts:\n  - name: h1\n"
            "    ports: [{ name: eth0 }]\n" % (name, v)).encode()
bad_apply, bad_plan = [], []
for i in range(1, rounds + 1):
    op, vw = w.tls(port, pki, "operator"), w.tls(port, pki, "viewer")
    for s in (op, vw):
        s.sendall(w.hello(1))
        w.recv(s)
    # the same request id on both connections, in one burst
    op.sendall(w.request(w.APPLY, 2, prof("operator-profile", 100 + i), w.OPT_JSON))
    vw.sendall(w.request(w.PLAN, 2, prof("viewer-profile", 9000 + i), w.OPT_JSON))
    ra, oa, ea = w.result(w.recv(op))
    rp, op_, ep = w.result(w.recv(vw))
    try:
        j = json.loads(oa)
        got = (j.get("profile"), j.get("version"))
    except ValueError:
        got = None
    if ra != 0 or got != ("operator-profile", 100 + i):
        bad_apply.append("round %d: exit %s, applied %s, error %r" % (i, ra, got, ea.strip()[:160]))
    if rp not in (0, 1) or "No such file" in ep:
        bad_plan.append("round %d: exit %s, error %r" % (i, rp, ep.strip()[:160]))
    op.close()
    vw.close()
w.report(not bad_apply, "operator-apply-applies-the-operators-profile-%d-rounds" % rounds,
         "; ".join(bad_apply[:3]) + (" (%d rounds)" % len(bad_apply)))
w.report(not bad_plan, "viewer-plan-never-fails-%d-rounds" % rounds,
         "; ".join(bad_plan[:3]) + (" (%d rounds)" % len(bad_plan)))
EOPY
count < <("$PY" "$T/race.py" "$PORT" "$PKI" "$ROUNDS" 2>&1)

# the history: only the operator's profile, one version per round
h=$("$F" history --target "unix:$SOCK" --json 2>&1)
others=$(jq -r '[.[] | select(.profile != "operator-profile")] | length' <<<"$h" 2>/dev/null)
n=$(jq -r 'length' <<<"$h" 2>/dev/null)
if [ "$others" = 0 ] && [ "$n" = "$ROUNDS" ]; then
	pass "history-holds-only-the-operators-profile"
else
	fail "history-holds-only-the-operators-profile" "$n entries, $others of another profile: $(jq -c '[.[] | [.version, .profile]]' <<<"$h" 2>/dev/null | head -c 300)"
fi
left=$(find "$T/profiles" -name '.remote-*' | wc -l)
[ "$left" = 0 ] && pass "no-spool-file-left" || fail "no-spool-file-left" "$left files"
agent_healthy end
