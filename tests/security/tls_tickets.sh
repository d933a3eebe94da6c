#!/bin/bash
# SPDX-License-Identifier: MIT
# The agent's TLS 1.3 session tickets (docs/agent.md, "Session resumption"), attacked from
# the client's side with real agents on 127.0.0.1. History: the agent once sent two
# tickets a handshake that no client used, and a client offering one back got an
# internal-error alert (no session id context); then none at all. Now one ticket, and a
# resumption must authenticate exactly what a full handshake would:
#   - one ticket a handshake; the next connection resumes it and is the same viewer;
#   - a viewer's resumed session cannot write (the role comes from the certificate the
#     ticket carries, evaluated again), even offered by a client that now holds an
#     operator's certificate;
#   - the ticket of agent A offered to agent B: no resumption, a full handshake;
#   - after a reload (SIGHUP: a new TLS context, new ticket keys) the old ticket is
#     refused (a full handshake: the certificate meets the CRL again);
#   - a TLS 1.2 session is never resumed.
# Prints PASS/FAIL per check, "tls_tickets: N passed, M failed"; needs root.
set -uo pipefail
NAME=tls_tickets
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"

# shellcheck disable=SC2046
start_agent $(agent_args)
fleet_start 1 # agent B: the same CA and server certificate, its own ticket keys
"$PY" - "$PORT" "${FLEET_PORTS[0]}" "$PKI" "$T" "$AGENT_PID" >"$T/py.out" 2>&1 <<'EOPY'
import os, signal, socket, ssl, sys, time
import wire as w
port, port_b, pki, t = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
agent_pid = int(sys.argv[5])
ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=pki + "/ca.crt")
ctx.check_hostname = False
ctx.load_cert_chain(pki + "/client-viewer.crt", pki + "/client-viewer.key")
def conn(p, sess=None, c=ctx):
    return c.wrap_socket(socket.create_connection(("127.0.0.1", p), timeout=30), session=sess)
def status(s):
    s.sendall(w.hello() + w.request(w.STATUS, 2))
    w.recv(s)
    return w.result(w.recv(s))
s = conn(port)
res, out, err = status(s)
sess = s.session
w.report(s.version() == "TLSv1.3" and res == 0 and "your role: viewer" in out,
         "viewer-status-over-tls13", "%s result %r %r" % (s.version(), res, err))
w.report(sess is not None and sess.has_ticket and 0 < sess.ticket_lifetime_hint <= 3600,
         "one-ticket-at-most-an-hour", "ticket %r lifetime %r" % (
             sess.has_ticket if sess else None, sess.ticket_lifetime_hint if sess else None))
s.close()
# resumed: the same viewer, and still unable to write
r = conn(port, sess)
res2, out2, _ = status(r)
w.report(r.session_reused and res2 == 0 and "your role: viewer" in out2,
         "resumed-as-the-same-viewer", "reused %r result %r %r" % (r.session_reused, res2, out2[-60:]))
r.sendall(w.request(w.APPLY, 3, profile=b"schema: 1\n"))
res3, _, err3 = w.result(w.recv(r))
w.report(res3 != 0 and "role" in (err3 or ""), "resumed-viewer-cannot-apply",
         "result %r %r" % (res3, err3))
sess2 = r.session
r.close()
# agent A's ticket offered to agent B: B cannot open it, a full handshake
b = conn(port_b, sess2)
resb, outb, _ = status(b)
w.report(not b.session_reused and resb == 0 and "your role: viewer" in outb,
         "ticket-of-agent-a-not-resumed-by-agent-b", "reused %r result %r" % (b.session_reused, resb))
b.close()
# a TLS 1.2 session is not resumed
c12 = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=pki + "/ca.crt")
c12.check_hostname = False
c12.maximum_version = ssl.TLSVersion.TLSv1_2
c12.load_cert_chain(pki + "/client-viewer.crt", pki + "/client-viewer.key")
x = conn(port, c=c12)
status(x)
s12 = x.session
x.close()
y = conn(port, s12, c12)
res12, _, _ = status(y)
w.report(y.version() == "TLSv1.2" and not y.session_reused and res12 == 0,
         "tls12-session-not-resumed", "%s reused %r result %r" % (y.version(), y.session_reused, res12))
y.close()
# the viewer's session offered by a client that now holds the operator's certificate
# (the same context, its certificate replaced): the ticket names the viewer
ctx.load_cert_chain(pki + "/client-operator.crt", pki + "/client-operator.key")
o = conn(port, sess2)
reso, outo, _ = status(o)
o.sendall(w.request(w.APPLY, 3, profile=b"schema: 1\n"))
reso2, _, erro2 = w.result(w.recv(o))
w.report(o.session_reused and "your role: viewer" in outo and reso2 != 0 and "role" in (erro2 or ""),
         "viewer-ticket-with-operator-cert-cannot-apply",
         "reused %r %r apply result %r %r" % (o.session_reused, outo[-40:], reso2, erro2))
sess3 = o.session
o.close()
# after a reload (a new TLS context: new ticket keys), the old ticket is not resumed
err_path = t + "/agent.err"
before = open(err_path).read().count("reloaded")
os.kill(agent_pid, signal.SIGHUP)
for _ in range(100):
    if open(err_path).read().count("reloaded") > before:
        break
    time.sleep(0.1)
h = conn(port, sess3)
resh, outh, _ = status(h)
w.report(not h.session_reused and resh == 0 and "your role: operator" in outh,
         "old-ticket-refused-after-reload", "reused %r result %r %r" % (h.session_reused, resh, outh[-40:]))
sess4 = h.session
h.close()
# the control: the new context's ticket is resumed (the check above can fail)
g = conn(port, sess4)
status(g)
w.report(g.session_reused, "new-ticket-resumed-after-reload", "reused %r" % g.session_reused)
g.close()
EOPY
rc=$?
count <"$T/py.out"
[ $rc -eq 0 ] || fail "client-ran" "python exit $rc"

agent_healthy tickets
