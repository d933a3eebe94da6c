#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding (issue #29, 4) "a compromised TLS front-end grows the root agent without bound":
# the agent queued every answer for the front-end with no limit (fe_respond ->
# fctl_chan_send appends), took the next request without checking max_buffered, and
# opened as many connections as the front-end named (no max_connections). The root agent
# must enforce every limit itself and treat a front-end past one as compromised: audited,
# killed, restarted. Here the front-end is stopped (SIGSTOP, by its PID) and its channel
# taken (pidfd_getfd of its fd 3, as privsep.sh forges messages):
#   A. max_connections + 1 connections opened: refused and audited, front-end replaced;
#   B. 16 viewer connections, STATUS requests flooded (15 s or 400,000 at most), no answer ever
#      read: the agent's peak RSS (VmHWM) grows by at most BOUND_MIB (24, 48 in an ASan
#      build), the front-end is refused and audited ("does not read its channel"), and
#      replaced; after each, TLS and the Unix socket serve again.
# Prints PASS/FAIL per check, "fe_flood: N passed, M failed"; needs root.
set -uo pipefail
NAME=fe_flood
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"
# an ASan build carries shadow memory and redzones, and keeps freed blocks in a quarantine
# (256 MB by default) that tens of thousands of answers would fill: kept small here, so the
# peak RSS measures what the agent holds
if grep -qa __asan_init "$F"; then
	BOUND_MIB=${BOUND_MIB:-48}
	export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=8"
else
	BOUND_MIB=${BOUND_MIB:-24}
fi
STOPPED=()
cleanup_fe() { # the front-ends this test stopped: killed by their PID (the agent may have already)
	local p
	for p in "${STOPPED[@]}"; do kill -KILL "$p" 2>/dev/null; done
}
trap 'rc0=$?; cleanup_fe; (exit $rc0); finish' EXIT

# shellcheck disable=SC2046
start_agent $(agent_args)
"$F" status --target "127.0.0.1:$PORT" $(tls_opts viewer) >/dev/null 2>&1 ||
	fail viewer-status-before "the agent does not serve the viewer over TLS"

cat >"$T/flood.py" <<'EOPY'
import ctypes, json, os, signal, socket, struct, subprocess, sys, time
import wire as w

agent, port, pki, audit, fab, bound, phase, stopped = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
    sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7], sys.argv[8])
CH_OPEN, CH_AUTH, CH_REQ = 1, 2, 3
VIEWER = 1 << 1
libc = ctypes.CDLL(None, use_errno=True)


def frontend():
    """The agent's child running `fabricctl agent --frontend`."""
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            st = open("/proc/%s/stat" % d).read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            if ppid == agent and b"--frontend" in open("/proc/%s/cmdline" % d, "rb").read():
                return int(d)
        except (OSError, ValueError):
            continue
    return None


def channel_of(pid):
    pidfd = os.pidfd_open(pid)
    try:
        fd = libc.syscall(438, pidfd, 3, 0)  # pidfd_getfd
        if fd < 0:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
        return socket.socket(fileno=fd)
    finally:
        os.close(pidfd)


def msg(t, cid, payload):
    return bytes([t, 0, 0, 0]) + struct.pack(">II", cid, len(payload)) + payload


def refused_frontend():
    out = []
    try:
        for line in open(audit):
            r = json.loads(line)
            if r.get("action") == "frontend" and r.get("result") == "refused":
                out.append(r.get("detail", ""))
    except OSError:
        pass
    return out


def replaced(old, wait=20):
    end = time.time() + wait
    while time.time() < end:
        p = frontend()
        if p and p != old:
            return p
        time.sleep(0.1)
    return None


def tls_ok():
    r = subprocess.run([fab, "status", "--target", "127.0.0.1:%d" % port, "--cert",
                        pki + "/client-viewer.crt", "--key", pki + "/client-viewer.key", "--ca",
                        pki + "/ca.crt", "--timeout", "10s"], capture_output=True, text=True)
    return r.returncode == 0 and "your role: viewer" in r.stdout


fe = frontend()
w.report(fe is not None, phase + "-frontend-found")
if fe is None:
    sys.exit(0)
before = len(refused_frontend())
hwm0 = w.vm_kib(agent, "VmHWM")
os.kill(fe, signal.SIGSTOP)  # the compromised front-end: it reads nothing of its channel now
open(stopped, "a").write("%d\n" % fe)
s = channel_of(fe)
s.settimeout(30)
base = 0x40000000 + (0x1000000 if phase == "flood" else 0)
sent, broken = 0, None
t0 = time.time()
try:
    if phase == "connections":
        # one connection more than max_connections (64 by default)
        for i in range(65):
            cid = base + i
            s.sendall(msg(CH_OPEN, cid, b"127.0.0.1\0tls peer 127.0.0.1 port %d" % (40000 + i)))
            sent += 1
    else:
        conns = [base + i for i in range(16)]
        s.sendall(b"".join(msg(CH_OPEN, c, b"127.0.0.1\0tls peer 127.0.0.1 port %d" % (50000 + i)) +
                           msg(CH_AUTH, c, struct.pack(">I", VIEWER) + b"CN=flood")
                           for i, c in enumerate(conns)))
        req = w.request(w.STATUS, 7)
        batch = b"".join(msg(CH_REQ, c, req) for c in conns) * 64
        while time.time() - t0 < 15 and sent < 400000:
            s.sendall(batch)
            sent += 16 * 64
except OSError as e:
    broken = e
time.sleep(1)  # the agent's side of what was sent
print("   %s: %d messages sent in %.1f s%s" % (phase, sent, time.time() - t0,
      ", then %s" % broken if broken else " (the channel stayed open)"))
new = replaced(fe)
hwm = w.vm_kib(agent, "VmHWM") if os.path.exists("/proc/%d" % agent) else None
grown = (hwm - hwm0) // 1024 if hwm else None
print("   %s: agent VmHWM %s KiB -> %s KiB" % (phase, hwm0, hwm))
w.report(grown is not None and grown <= bound, phase + "-agent-memory-bounded",
         "peak RSS grew by %s MiB (bound %d MiB)" % (grown, bound))
recs = refused_frontend()[before:]
want = "past max_connections" if phase == "connections" else "does not read its channel"
if recs:
    print("   %s: audited: %s" % (phase, recs[-1]))
w.report(any(want in r for r in recs), phase + "-refused-and-audited", "records %r" % recs)
w.report(new is not None, phase + "-frontend-killed-and-replaced", "front-end %r -> %r" % (fe, new))
try:
    os.kill(fe, signal.SIGKILL)  # stopped here: never left behind
except OSError:
    pass
w.report(new is not None and tls_ok(), phase + "-tls-serves-again")
EOPY
for phase in connections flood; do
	"$PY" "$T/flood.py" "$AGENT_PID" "$PORT" "$PKI" "$T/audit/agent.log" "$F" "$BOUND_MIB" "$phase" \
		"$T/stopped" >"$T/py.out" 2>&1
	rc=$?
	count <"$T/py.out"
	[ $rc -eq 0 ] || fail "$phase-client-ran" "python exit $rc"
	mapfile -t STOPPED <"$T/stopped" 2>/dev/null
done
agent_healthy fe-flood
