#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding 4: SIGHUP applied a new configuration field by field and missed two: a
# `group` removed from the file stayed in force (the group's members kept the Unix
# socket), and a reload without `listen` freed the TLS context while the TLS listener
# stayed open (every new TLS connection then failed). Here: an agent with a config
# file naming a group and a listener; the file rewritten without the group, SIGHUP;
# then without `listen`, SIGHUP.
# Prints PASS/FAIL per check, "reload: N passed, M failed"; needs root.
set -uo pipefail
NAME=reload
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"
GROUP=daemon
GID=$(getent group "$GROUP" | cut -d: -f3)
[ -n "$GID" ] && [ "$GID" != 0 ] || die "no group $GROUP"

conf() { # with-group with-listen
	{
		echo "socket: $SOCK"
		[ "$1" = 1 ] && echo "group: $GROUP"
		if [ "$2" = 1 ]; then
			echo "listen: 127.0.0.1:$PORT"
			echo "cert: $PKI/server-h1.crt"
			echo "key: $PKI/server-h1.key"
			echo "ca: $PKI/ca.crt"
		fi
		echo "netns: $NETNS"
		echo "state_dir: $T/state"
		echo "host: h1"
		echo "profile_dir: $T/profiles"
		echo "audit_log: $T/audit/agent.log"
		echo "drift_interval: 0"
	} >"$T/agent.conf"
}
reloads() { grep -c "reloaded" "$T/agent.err"; }
hup() { # waits for the reload's log line
	local before
	before=$(reloads)
	kill -HUP "$AGENT_PID"
	for _ in $(seq 50); do
		[ "$(reloads)" -gt "$before" ] && return 0
		sleep 0.1
	done
	fail "sighup-reloads" "$(tail -3 "$T/agent.err")"
}
# a hello over the Unix socket as uid 65534 with the group as its primary gid:
# "answered" or "refused"
cp "$ROOT/tests/security/lib/wire.py" "$T/wire.py" && chmod 0644 "$T/wire.py"
cat >"$T/member.py" <<'EOPY'
import sys
import wire as w
try:
    s = w.unix(sys.argv[1], timeout=5)
    s.sendall(w.hello(1))
    r = w.recv(s)
    print("answered" if r and w.result(r)[0] == 0 else "refused")
except OSError as e:
    print("refused (%s)" % e.strerror)
EOPY
chmod 0644 "$T/member.py"
member() { PYTHONPATH=$T setpriv --reuid 65534 --regid "$GID" --clear-groups "$PY" "$T/member.py" "$SOCK" 2>&1; }

conf 1 1
start_agent --config "$T/agent.conf"
out=$(member)
[ "$out" = answered ] && pass "group-member-admitted-at-start" || fail "group-member-admitted-at-start" "$out"

# 1. the group removed
conf 0 1
hup
out=$(member)
case $out in refused*) pass "group-removed-member-refused-after-sighup" ;;
*) fail "group-removed-member-refused-after-sighup" "$out" ;; esac
mode=$(stat -c '%a %g' "$SOCK")
[ "$mode" = "600 0" ] && pass "socket-back-to-0600-root" || fail "socket-back-to-0600-root" "$mode"
if "$F" status --target "127.0.0.1:$PORT" $(tls_opts viewer) >/dev/null 2>&1; then
	pass "tls-serves-after-first-sighup"
else
	fail "tls-serves-after-first-sighup"
fi

# 2. `listen` removed: the listener stays (until a restart), and it still works
conf 0 0
hup
for i in 1 2 3; do
	if out=$("$F" status --target "127.0.0.1:$PORT" $(tls_opts viewer) 2>&1) &&
		grep -q "your role: viewer" <<<"$out"; then
		pass "tls-serves-after-listen-removed-$i"
	else
		fail "tls-serves-after-listen-removed-$i" "$out"
	fi
done
# and the group put back takes effect again
conf 1 0
hup
out=$(member)
[ "$out" = answered ] && pass "group-readded-member-admitted" || fail "group-readded-member-admitted" "$out"
agent_healthy end
