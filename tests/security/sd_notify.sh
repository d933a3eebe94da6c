#!/bin/bash
# SPDX-License-Identifier: MIT
# The agent's unit is Type=notify: systemd starts the units after it, and reports it
# started, only when the agent says READY=1 (listening, the journal recovered); a
# SIGHUP is RELOADING=1 then READY=1; SIGTERM says STOPPING=1. Here: a real agent
# with $NOTIFY_SOCKET naming a datagram socket this test reads, as systemd's.
# Prints PASS/FAIL per check, "sd_notify: N passed, M failed"; needs root.
set -uo pipefail
NAME=sd_notify
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"

# the listener: every datagram, one line per assignment, appended to notify.log
"$PY" - "$T/notify.sock" "$T/notify.log" <<'EOPY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    f.write("bound\n")
    while True:
        f.write(s.recv(4096).decode().replace("\n", " ") + "\n")
EOPY
LISTENER=$!
trap 'r=$?; kill $LISTENER 2>/dev/null; wait $LISTENER 2>/dev/null; (exit $r); finish' EXIT
for _ in $(seq 50); do grep -q bound "$T/notify.log" 2>/dev/null && break; sleep 0.1; done
grep -q bound "$T/notify.log" 2>/dev/null || die "the notify listener did not start"
# waits until notify.log has at least N lines matching RE
wait_for() { # re n
	for _ in $(seq 50); do
		[ "$(grep -c -- "$1" "$T/notify.log")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

export NOTIFY_SOCKET=$T/notify.sock
# shellcheck disable=SC2046
start_agent $(agent_args)
if wait_for '^READY=1' 1; then pass "ready-after-start"; else fail "ready-after-start" "$(cat "$T/notify.log")"; fi
# READY=1 comes after the listeners: status answered before the wait ended, and the
# agent logs "serving" (listening, recovered) before it notifies
if grep -q "serving host" "$T/agent.err"; then pass "ready-when-serving"; else fail "ready-when-serving"; fi

kill -HUP "$AGENT_PID"
if wait_for '^READY=1' 2; then pass "ready-after-reload"; else fail "ready-after-reload" "$(cat "$T/notify.log")"; fi
if grep -q '^RELOADING=1 MONOTONIC_USEC=[0-9]' "$T/notify.log"; then
	pass "reloading-before-ready"
else
	fail "reloading-before-ready" "$(cat "$T/notify.log")"
fi
order=$(grep -E '^(READY|RELOADING)' "$T/notify.log" | cut -d= -f1 | tr '\n' ' ')
[ "$order" = "READY RELOADING READY " ] && pass "order-ready-reloading-ready" ||
	fail "order-ready-reloading-ready" "$order"
agent_healthy reload

stop_agent
if wait_for '^STOPPING=1' 1; then pass "stopping-on-sigterm"; else fail "stopping-on-sigterm" "$(cat "$T/notify.log")"; fi
