#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding 5 (fail-open audit) and finding 9 (rotation and local apply not serialized):
#  A. with its audit log unwritable the agent served SA requests (keymgr refuses in the
#     same case): an SA change must be refused, saying why;
#  B. a remote apply's record went to the worker's default log and named uid 0: it must
#     go to the agent's --audit-log and name the client's certificate;
#  C. a local `fabricctl apply` ran in the middle of a rotation (a lease in the rotation
#     record): it must be refused while the lease lasts;
#  D. an SA request ran while a local apply held the host's lock: it must be refused.
# Prints PASS/FAIL per check, "audit_failsecure: N passed, M failed"; needs root.
set -uo pipefail
NAME=audit_failsecure
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"

# an SA request (sa-retire of AN 1 on ms0) over the Unix socket: prints "RESULT<TAB>ERROR"
cat >"$T/retire.py" <<'EOPY'
import struct, sys
import wire as w
s = w.unix(sys.argv[1])
s.sendall(w.hello(1))
w.recv(s)
s.sendall(w.frame(15, 2, w.tlv(0x800d, b"ms0"), w.tlv(0x800f, struct.pack(">I", 1))))
r, out, err = w.result(w.recv(s))
print("%s\t%s" % (r, err.strip().replace("\n", " ")))
EOPY

# A: the audit log cannot be opened (its directory is a regular file)
: >"$T/notadir"
start_agent $(agent_args | sed "s#$T/audit/agent.log#$T/notadir/agent.log#")
out=$("$PY" "$T/retire.py" "$SOCK" 2>&1)
if [[ $out != 0* ]] && grep -q "audit log is unavailable" <<<"$out"; then
	pass "sa-change-refused-without-audit-log"
else
	fail "sa-change-refused-without-audit-log" "$out"
fi
agent_healthy no-audit
stop_agent

# B: an operator's apply over TLS is recorded in the agent's log, under its certificate
start_agent $(agent_args)
profile remote-apply 7 >"$T/p.yaml"
out=$("$F" apply --target "127.0.0.1:$PORT" $(tls_opts operator) --json "$T/p.yaml" 2>&1)
rc=$?
[ $rc = 0 ] && pass "operator-apply-over-tls" || fail "operator-apply-over-tls" "exit $rc: $out"
# the apply's own record (the one with the profile and the op counts), not the agent's
# record of the request
rec=$(grep '"action":"apply"' "$T/audit/agent.log" 2>/dev/null | grep '"profile":{' | tail -1)
if grep -q '"cert":"[^"]*operator' <<<"$rec"; then
	pass "remote-apply-recorded-in-the-agents-log-under-the-client-cert"
else
	fail "remote-apply-recorded-in-the-agents-log-under-the-client-cert" \
		"agent log: ${rec:-no apply record}; worker log: $(grep -c '"action":"apply"' "$T/audit/worker.log" 2>/dev/null) apply records"
fi
if grep '"action":"apply"' "$T/audit/worker.log" 2>/dev/null | grep -q '"profile":{'; then
	fail "no-remote-apply-record-in-the-default-log"
else
	pass "no-remote-apply-record-in-the-default-log"
fi

# C: a rotation lease on ms0: a local apply of the same host is refused
mkdir -p "$T/state/rotation"
printf 'an 1\nversion 2\nbusy %s\n' "$(($(date +%s) + 600))" >"$T/state/rotation/ms0"
out=$("$F" apply --state-dir "$T/state" --netns "$NETNS" --host h1 "$T/p.yaml" 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "key rotation is in progress on 'ms0'" <<<"$out"; then
	pass "local-apply-refused-during-a-rotation-lease"
else
	fail "local-apply-refused-during-a-rotation-lease" "exit $rc: $out"
fi
rm -f "$T/state/rotation/ms0"
out=$("$F" apply --state-dir "$T/state" --netns "$NETNS" --host h1 "$T/p.yaml" 2>&1)
rc=$?
[ $rc = 0 ] && pass "local-apply-after-the-lease" || fail "local-apply-after-the-lease" "exit $rc: $out"

# D: the host's apply lock is held (as by a local apply): an SA request is refused
flock "$T/state/lock" sleep 20 &
LOCKER=$!
sleep 0.5
out=$("$PY" "$T/retire.py" "$SOCK" 2>&1)
kill "$LOCKER" 2>/dev/null
wait "$LOCKER" 2>/dev/null
if [[ $out != 0* ]] && grep -q "is held by an apply or a key rotation step" <<<"$out"; then
	pass "sa-request-refused-while-an-apply-holds-the-lock"
else
	fail "sa-request-refused-while-an-apply-holds-the-lock" "$out"
fi
agent_healthy end
