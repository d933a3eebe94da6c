#!/bin/bash
# SPDX-License-Identifier: MIT
# The CLI's TLS session cache (docs/agent.md, "Session resumption") under attack: a
# resumed session skips the server's certificate, so a session offered to the wrong
# endpoint would let one agent pass for another. Two agents of the same CA: A's
# certificate names DNS:localhost only, B's (h1) the address 127.0.0.1.
#   - status resumes from the cache (0600 in a 0700 directory) on the second run;
#   - impersonation: the attacker points B's address (127.0.0.1:PORT_A) at agent A and
#     plants A's genuine session under B's endpoint in the cache: the CLI must not offer
#     it (A's certificate does not name 127.0.0.1) and refuse A on the certificate, as a
#     full handshake does; the same session under A's own endpoint resumes (the control);
#   - a cache written under the viewer's certificate is not used with the operator's;
#   - a cache readable by others, one in a directory others may write, a symbolic link,
#     one of another user: refused, not used, not rewritten; garbage: ignored, replaced.
# Prints PASS/FAIL per check, "tls_session_cache: N passed, M failed"; needs root.
set -uo pipefail
NAME=tls_session_cache
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"

sh "$ROOT/scripts/pki.sh" "$PKI" localhost >/dev/null || die "pki.sh localhost failed"
PORT_B=$PORT
# agent B (h1: the library's agent), agent A (localhost) on a port of its own
# shellcheck disable=SC2046
start_agent $(agent_args)
PORT_A=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$T/sa" "$T/pa" "$T/aa"
"$F" agent --socket "$T/socka" --listen "127.0.0.1:$PORT_A" --cert "$PKI/server-localhost.crt" \
	--key "$PKI/server-localhost.key" --ca "$PKI/ca.crt" --netns "$NETNS" --state-dir "$T/sa" \
	--host a --profile-dir "$T/pa" --audit-log "$T/aa/agent.log" --drift-interval 0 \
	2>"$T/agenta.err" &
FLEET_PIDS=($!) # stopped by the library's cleanup, by PID
for _ in $(seq 100); do
	"$F" status --target "unix:$T/socka" >/dev/null 2>&1 && break
	sleep 0.1
done

CACHE=$T/cache/fabricctl/tls-sessions
export XDG_CACHE_HOME=$T/cache
# st INVENTORY ROLE: status --fabric --json into $T/st.json, stderr $T/st.err; "exit resumed"
st() {
	"$F" status --fabric --inventory "$1" $(tls_opts "$2") --json -q >"$T/st.json" 2>"$T/st.err"
	echo "$? $("$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(bool(h.get("tls_resumed")) for h in d["hosts"]))' "$T/st.json" 2>/dev/null || echo none)"
}
err_of() { # HOST: the error the JSON gives it
	"$PY" -c 'import json, sys
print([h.get("error") or "" for h in json.load(open(sys.argv[1]))["hosts"] if h["host"] == sys.argv[2]][0])' "$T/st.json" "$1" 2>/dev/null
}
printf 'a localhost:%s\nb 127.0.0.1:%s\n' "$PORT_A" "$PORT_B" >"$T/inv"

got=$(st "$T/inv" viewer)
[ "$got" = "0 0" ] && pass "first-run-full-handshakes" || fail "first-run-full-handshakes" "$got $(cat "$T/st.err")"
mode=$(stat -c %a "$CACHE" 2>/dev/null) dmode=$(stat -c %a "$(dirname "$CACHE")" 2>/dev/null)
[ "$mode" = 600 ] && [ "$dmode" = 700 ] && pass "cache-0600-in-0700" || fail "cache-0600-in-0700" "file $mode dir $dmode"
got=$(st "$T/inv" viewer)
[ "$got" = "0 2" ] && pass "second-run-resumes-both" || fail "second-run-resumes-both" "$got $(cat "$T/st.err")"

# the cache file's entries, rewritten by the attacker: (endpoint, session) pairs
edit() { # OUT FROM-ENDPOINT TO-ENDPOINT: OUT holds FROM's session of $T/good under TO's endpoint only
	"$PY" - "$T/good" "$@" <<'EOPY'
import struct, sys
src, out, frm, to = sys.argv[1:5]
b = open(src, "rb").read()
head, n, off, ents = b[:40], struct.unpack(">I", b[40:44])[0], 44, {}
for _ in range(n):
    el = struct.unpack(">H", b[off:off + 2])[0]; ep = b[off + 2:off + 2 + el].decode(); off += 2 + el
    dl = struct.unpack(">I", b[off:off + 4])[0]; ents[ep] = b[off + 4:off + 4 + dl]; off += 4 + dl
sess, to = ents[frm], to.encode()
open(out, "wb").write(head + struct.pack(">I", 1) + struct.pack(">H", len(to)) + to +
                      struct.pack(">I", len(sess)) + sess)
EOPY
}
cp "$CACHE" "$T/good"
# impersonation: B's address now reaches agent A, B's cache entry holds A's session
printf 'b 127.0.0.1:%s\n' "$PORT_A" >"$T/inv-hijacked"
if edit "$T/planted" "localhost:$PORT_A" "127.0.0.1:$PORT_A"; then
	cp "$T/planted" "$CACHE"
	got=$(st "$T/inv-hijacked" viewer)
	e=$(err_of b)
	if [ "$got" = "2 0" ] && grep -qi "certificate" <<<"$e"; then
		pass "agent-a-session-not-offered-as-b"
	else
		fail "agent-a-session-not-offered-as-b" "exit/resumed $got: $e"
	fi
	# the control: A's session under A's own endpoint resumes
	edit "$T/own" "localhost:$PORT_A" "localhost:$PORT_A" && cp "$T/own" "$CACHE"
	printf 'a localhost:%s\n' "$PORT_A" >"$T/inv-a"
	got=$(st "$T/inv-a" viewer)
	[ "$got" = "0 1" ] && pass "control-own-session-resumes" || fail "control-own-session-resumes" "$got"
else
	fail "agent-a-session-not-offered-as-b" "the cache holds no session of localhost:$PORT_A"
fi

# another identity: the viewer's cache is not used with the operator's certificate
cp "$T/good" "$CACHE"
got=$(st "$T/inv" operator)
[ "$got" = "0 0" ] && pass "viewer-cache-not-used-by-operator" || fail "viewer-cache-not-used-by-operator" "$got"

# refused files: not used, not rewritten
refused() { # LABEL
	local sum got
	sum=$(sha256sum <"$CACHE" 2>/dev/null)
	got=$(st "$T/inv" viewer)
	if [ "$got" = "0 0" ] && grep -q "refused" "$T/st.err" && [ "$(sha256sum <"$CACHE" 2>/dev/null)" = "$sum" ]; then
		pass "$1"
	else
		fail "$1" "$got, $(cat "$T/st.err")"
	fi
}
st "$T/inv" viewer >/dev/null # a cache of the viewer again
cp "$CACHE" "$T/good"
chmod 0644 "$CACHE"
refused "world-readable-cache-refused"
chmod 0600 "$CACHE"
chmod 0777 "$(dirname "$CACHE")"
refused "cache-in-world-writable-dir-refused"
chmod 0700 "$(dirname "$CACHE")"
chown 65534 "$CACHE"
refused "cache-of-another-user-refused"
chown 0 "$CACHE"
mv "$CACHE" "$T/target"
ln -s "$T/target" "$CACHE"
sum=$(sha256sum <"$T/target")
got=$(st "$T/inv" viewer)
if [ "$got" = "0 0" ] && grep -q "symbolic link" "$T/st.err" && [ -L "$CACHE" ] && [ "$(sha256sum <"$T/target")" = "$sum" ]; then
	pass "symlinked-cache-refused"
else
	fail "symlinked-cache-refused" "$got, $(cat "$T/st.err")"
fi
rm -f "$CACHE"

# garbage (and a truncated cache): ignored with a warning, the command works, replaced
for kind in garbage truncated; do
	if [ $kind = garbage ]; then
		head -c 5000 /dev/urandom >"$CACHE"
	else
		head -c $(($(stat -c %s "$T/good") - 7)) "$T/good" >"$CACHE"
	fi
	chmod 0600 "$CACHE"
	got=$(st "$T/inv" viewer)
	if [ "$got" = "0 0" ] && grep -q "not a session cache" "$T/st.err" && [ "$(st "$T/inv" viewer)" = "0 2" ]; then
		pass "$kind-cache-ignored-and-replaced"
	else
		fail "$kind-cache-ignored-and-replaced" "$got, $(cat "$T/st.err")"
	fi
done

# an agent restarted (its ticket keys gone): a full handshake, not an error
stop_agent
# shellcheck disable=SC2046
start_agent $(agent_args)
got=$(st "$T/inv" viewer)
[ "$got" = "0 1" ] && pass "restarted-agent-full-handshake" || fail "restarted-agent-full-handshake" "$got $(cat "$T/st.err")"
agent_healthy cache
