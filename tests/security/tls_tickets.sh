#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding "session tickets for nothing": the agent's TLS 1.3 server sent two session
# tickets after every handshake although no client of ours resumes a session, so each
# of a fan-out's thousands of connections paid on both ends for a session encoded with
# the client's chain, sealed, sent, parsed and kept; and a client that offered its
# ticket back got no resumption but a handshake the agent ended with an internal-error
# alert. Against a real agent on 127.0.0.1: a viewer's
# status request over TLS 1.3 (so any ticket has arrived), then a second connection
# offering that session.
# Prints PASS/FAIL per check, "tls_tickets: N passed, M failed"; needs root.
set -uo pipefail
NAME=tls_tickets
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"

# shellcheck disable=SC2046
start_agent $(agent_args)
"$PY" - "$PORT" "$PKI" >"$T/py.out" 2>&1 <<'EOPY'
import socket, ssl, sys
import wire as w
port, pki = int(sys.argv[1]), sys.argv[2]
s = w.tls(port, pki, "viewer")
s.sendall(w.hello() + w.request(w.STATUS, 2))
hello, resp = w.recv(s), w.recv(s)
res, out, err = w.result(resp)
w.report(s.version() == "TLSv1.3" and res == 0 and "your role: viewer" in out,
         "viewer-status-over-tls13", "%s result %r %r" % (s.version(), res, err))
sess = s.session
w.report(sess is not None and not sess.has_ticket, "no-session-ticket",
         "the agent sent a ticket (lifetime %s s)" % (sess.ticket_lifetime_hint if sess else "?"))
s.close()
# the same session offered again, from the same context: a full handshake, not a
# resumption
t = s.context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30), session=sess)
t.sendall(w.hello() + w.request(w.STATUS, 2))
w.recv(t)
res2, out2, _ = w.result(w.recv(t))
w.report(not t.session_reused and res2 == 0, "second-connection-full-handshake",
         "session_reused %r result %r" % (t.session_reused, res2))
t.close()
EOPY
rc=$?
count <"$T/py.out"
[ $rc -eq 0 ] || fail "client-ran" "python exit $rc"
agent_healthy tickets
