#!/bin/bash
# SPDX-License-Identifier: MIT
# Key residue in the agent: after SA requests carrying a SAK (over mutual TLS as
# key-custodian, over TLS as a viewer, refused, and over the Unix socket; and two frames
# never handled: one malformed, one cut short; an sa-batch of two records, each with
# its SAK, and an sa-batch refused for a bad record) no copy of the SAK may stay in the
# agent's memory: not in OpenSSL's record buffers, not in a freed frame. A real agent on 127.0.0.1 with the test PKI, its netlink in a network
# namespace of its own (no MACsec there: each request fails at its interface, after
# the SAK reached the agent). Also: the agent is not dumpable, has no core limit, and
# its key page is locked. key_residue.py sends the requests and reads the memory.
# Prints PASS/FAIL per check and "key_residue: N passed, M failed"; needs root.
set -uo pipefail
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
die() { echo "key_residue: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (it reads the agent's memory)"
[ -x "$F" ] || die "no $F: build first"
for c in "$PY" ip setpriv openssl; do command -v $c >/dev/null || die "$c missing"; done
T=$(mktemp -d /var/tmp/fctl-sec-keyres.XXXXXX) || exit 2
NS=fctl-keyres-$$
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf -- "$T"
}
trap cleanup EXIT

"$ROOT/scripts/pki.sh" "$T/pki" kr=127.0.0.1 >/dev/null || die "scripts/pki.sh failed"
ip netns add "$NS" || die "cannot create network namespace $NS"
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# uid 0 with every capability, but a group of its own: /proc/PID/status then belongs to
# that group while the process is dumpable, and to root once it is not
setpriv --regid 65534 --clear-groups -- "$F" agent --host kr --listen "127.0.0.1:$PORT" \
	--cert "$T/pki/server-kr.crt" --key "$T/pki/server-kr.key" --ca "$T/pki/ca.crt" \
	--socket "$T/agent.sock" --state-dir "$T/state" --netns "$NS" \
	--audit-log "$T/audit/audit.log" --drift-interval 1h >"$T/agent.log" 2>&1 &
PID=$!
for _ in $(seq 50); do
	[ -S "$T/agent.sock" ] && grep -q serving "$T/agent.log" && break
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.2
done
grep -q serving "$T/agent.log" || { cat "$T/agent.log" >&2; die "the agent did not start"; }

# the memory scanner itself (lib/memscan.py, also privsep's): it finds what is there, next
# to pages it does not read, and reads no never-touched page
"$PY" "$ROOT/tests/security/lib/memscan.py" >"$T/memscan.out" 2>&1 || fail "memscan-selftest" "exit $?"
while read -r verdict rest; do
	case $verdict in PASS) pass "$rest" ;; FAIL) fail "$rest" ;; esac
done <"$T/memscan.out"
grep -q '^PASS memscan-skips-untouched-pages' "$T/memscan.out" || fail "memscan-selftest-ran" "$(tail -3 "$T/memscan.out")"

"$PY" "$ROOT/tests/security/key_residue.py" --pid "$PID" --listen "127.0.0.1:$PORT" \
	--socket "$T/agent.sock" --pki "$T/pki" >"$T/py.out" 2>"$T/py.err"
rc=$?
sed -n 's/^  /  /p' "$T/py.out"
while read -r verdict rest; do
	case $verdict in
	PASS) pass "$rest" ;;
	FAIL) name=${rest%%:*}; fail "$name" "${rest#*: }" ;;
	esac
done <"$T/py.out"
[ $rc -eq 0 ] || fail "key_residue.py" "exit $rc: $(cat "$T/py.err")"
grep -c '^PASS request-' "$T/py.out" | grep -qx 7 || fail "requests" "not all seven reached the agent"

# not dumpable: /proc/PID/status belongs to root (else to the agent's group, 65534)
g=$(stat -c %g "/proc/$PID/status" 2>/dev/null)
if [ "$g" = 0 ]; then pass "not-dumpable"; else fail "not-dumpable" "/proc/$PID/status group $g"; fi
core=$(awk '/^Max core file size/ { print $5 " " $6 }' "/proc/$PID/limits")
if [ "$core" = "0 0" ]; then pass "rlimit-core-0"; else fail "rlimit-core-0" "$core"; fi
# the custodian's SAK went through a key slot: its page stays locked for the next key
lck=$(awk '/^VmLck:/ { print $2 }' "/proc/$PID/status")
if [ "${lck:-0}" -gt 0 ]; then pass "key-page-locked (VmLck ${lck} kB)"; else fail "key-page-locked" "VmLck ${lck:-?} kB"; fi
# and the agent is still serving
if kill -0 "$PID" 2>/dev/null; then pass "agent-alive"; else fail "agent-alive" "$(tail -3 "$T/agent.log")"; fi

echo "key_residue: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ] && [ $PASS -gt 0 ]
