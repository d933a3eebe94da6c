#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding 2: the agent freed a connection in the middle of handling it (respond ->
# flush -> close -> free) and then read it again: a hello and a malformed frame in one
# TLS write (the second read from TLS's buffer inside the first response's flush),
# a Unix-socket client that shut its read side (EPIPE on the response), a hello with
# no common version on such a socket (close_after written after the free). Each is
# sent REPEAT times; then the agent must be alive, serve root and a viewer, and its
# stderr hold no sanitizer report. Run with FCTL_BUILD_DIR=build-asan (cmake
# -DFCTL_SANITIZE=ON) to see the use-after-free itself; a plain build shows only a
# crash, if any.
# Prints PASS/FAIL per check, "conn_uaf: N passed, M failed"; needs root.
set -uo pipefail
NAME=conn_uaf
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"
REPEAT=${REPEAT:-5}

cat >"$T/uaf.py" <<'EOPY'
import socket, sys, time
import wire as w

port, pki, sock, what, repeat = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
garbage = b"\x00\xffthis is no frame"  # 16 bytes: a header with a bad magic
for _ in range(repeat):
    if what == "tls-hello-and-garbage":
        s = w.tls(port, pki, "viewer", timeout=5)
        s.sendall(w.hello(1) + garbage)   # one TLS record
        answers = []
        try:
            while True:
                r = w.recv(s)
                if r is None:
                    break
                answers.append(r)
        except OSError:
            pass
        s.close()
        # the hello answered, the garbage refused (or the connection closed)
        if not answers or w.result(answers[0])[0] != 0:
            print("FAIL %s: the hello got %r" % (what, answers[:1]))
            sys.exit(0)
    elif what == "tls-two-hellos-and-garbage":
        s = w.tls(port, pki, "viewer", timeout=5)
        s.sendall(w.hello(1) + w.hello(2) + w.request(w.STATUS, 3) + garbage)
        try:
            while w.recv(s) is not None:
                pass
        except OSError:
            pass
        s.close()
    else:  # unix-shut-rd-hello, unix-shut-rd-bad-version
        s = w.unix(sock, timeout=5)
        s.shutdown(socket.SHUT_RD)
        if what == "unix-shut-rd-hello":
            s.sendall(w.hello(1) + w.request(w.STATUS, 2))
        else:
            s.sendall(w.hello(1, vmin=7, vmax=9) + w.request(w.STATUS, 2))
        time.sleep(0.2)
        s.close()
    time.sleep(0.05)
print("sent")
EOPY

# each trigger against an agent of its own: one crash does not hide the next
for what in tls-hello-and-garbage tls-two-hellos-and-garbage unix-shut-rd-hello unix-shut-rd-bad-version; do
	start_agent $(agent_args)
	out=$("$PY" "$T/uaf.py" "$PORT" "$PKI" "$SOCK" "$what" "$REPEAT" 2>&1)
	sleep 0.3
	if [ "$out" = sent ]; then pass "$what-sent"; else fail "$what-sent" "$(tail -c 300 <<<"$out")"; fi
	# still serving: a viewer over TLS and root over the Unix socket
	if out=$("$F" status --target "127.0.0.1:$PORT" $(tls_opts viewer) 2>&1) &&
		grep -q "your role: viewer" <<<"$out"; then
		pass "$what-viewer-status-afterwards"
	else
		fail "$what-viewer-status-afterwards" "$out"
	fi
	agent_healthy "$what"
	stop_agent
done
