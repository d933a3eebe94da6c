# SPDX-License-Identifier: MIT
# The TLS front-end checks of tests/security/privsep.sh (not a test by itself).
# Usage: frontend.py AGENT_PID PORT PKI NOBODY_UID AUDIT_LOG FABRICCTL SOCKET
# Prints PASS/FAIL lines.
import ctypes, json, os, re, socket, struct, subprocess, sys, time
import memscan
import wire as w

agent, port, pki, nobody, audit, fab, sock = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                             sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7])
BIG = 4 << 30


def status(pid):
    try:
        t = open("/proc/%d/status" % pid).read()
    except OSError:
        return None
    f = dict(l.split(":", 1) for l in t.splitlines() if ":" in l)
    return {k: f.get(k, "").split() for k in ("PPid", "Uid", "Gid", "CapEff", "CapPrm", "NoNewPrivs", "Seccomp")}


def listen_inodes():
    """Socket inodes of the TCP listeners on 127.0.0.1:port."""
    out = set()
    want = "0100007F:%04X" % port
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        if f[1] == want and f[3] == "0A":
            out.add(f[9])
    return out


def holders(inodes):
    """Processes with a descriptor on one of the socket inodes."""
    pids = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir("/proc/%s/fd" % d):
                m = re.match(r"socket:\[(\d+)\]", os.readlink("/proc/%s/fd/%s" % (d, fd)))
                if m and m.group(1) in inodes:
                    pids.append(int(d))
                    break
        except OSError:
            continue
    return pids


def frontend():
    """The process terminating TLS: it holds the listener and is not the agent."""
    p = [x for x in holders(listen_inodes()) if x != agent]
    return p[0] if len(p) == 1 else None


def scan(pid, wanted):
    """The needles found in the process's memory (lib/memscan.py), None if unreadable."""
    return memscan.names(pid, wanted, BIG)


def records(action):
    out = []
    try:
        for line in open(audit):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if action is None or r.get("action") == action:
                out.append(r)
    except OSError:
        pass
    return out


def wait_for(pred, tries=600):  # polls for up to 60 s: an ASan agent on a loaded machine is slow
    for _ in range(tries):
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    return None


def tls_status(role="viewer"):
    r = subprocess.run([fab, "status", "--target", "127.0.0.1:%d" % port, "--cert",
                        "%s/client-%s.crt" % (pki, role), "--key", "%s/client-%s.key" % (pki, role),
                        "--ca", pki + "/ca.crt", "--timeout", "60s"], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


# the key as text (every base64 line of its PEM) and as the scalar OpenSSL holds
pem = open(pki + "/server-h1.key").read().split("\n")
needles = [("pem-line-%d" % (i + 1), l.encode()) for i, l in
           enumerate(x for x in pem if x and not x.startswith("-----")) if len(l) >= 24]
txt = subprocess.run(["openssl", "pkey", "-in", pki + "/server-h1.key", "-noout", "-text"],
                     capture_output=True, text=True).stdout
m = re.search(r"priv:\s*((?:[0-9a-f]{2}:?\s*)+)", txt)
scalar = bytes.fromhex(re.sub(r"[^0-9a-f]", "", m.group(1))) if m else b""
scalar = scalar[-32:] if len(scalar) > 32 and scalar[0] == 0 else scalar
needles += [("scalar", scalar), ("scalar-le", scalar[::-1])]
w.report(len(scalar) == 32 and len(needles) > 3, "tls-key-needles", "scalar %d bytes" % len(scalar))

if len(sys.argv) > 8 and sys.argv[8] == "start":
    # right after the agent started: before any TLS connection
    found = scan(agent, needles)
    w.report(found is not None and not found, "agent-memory-has-no-tls-key-after-start",
             "found %r in pid %d" % (found, agent))
    sys.exit(0)

# 1. the process that terminates TLS
fe = frontend()
w.report(fe is not None, "frontend-holds-the-listener",
         "holders of the listener: %r (agent %d)" % (holders(listen_inodes()), agent))
st = status(fe) if fe else None
if st:
    print("   front-end pid %d: Uid %s CapEff %s NoNewPrivs %s Seccomp %s" %
          (fe, st["Uid"], st["CapEff"], st["NoNewPrivs"], st["Seccomp"]))
w.report(bool(st) and st["PPid"] == [str(agent)], "frontend-is-the-agents-child", "%r" % st)
w.report(bool(st) and st["Uid"] == [nobody] * 4, "frontend-uid-is-nobody", "%r" % st)
w.report(bool(st) and st["Gid"][0] != "0" and len(set(st["Gid"])) == 1, "frontend-gid-unprivileged", "%r" % st)
w.report(bool(st) and st["CapEff"] == ["0000000000000000"] and st["CapPrm"] == ["0000000000000000"],
         "frontend-no-capabilities", "%r" % st)
w.report(bool(st) and st["NoNewPrivs"] == ["1"], "frontend-no-new-privs", "%r" % st)
w.report(bool(st) and st["Seccomp"] == ["2"], "frontend-seccomp-filter", "%r" % st)
rc, out = tls_status()
w.report(fe is not None and rc == 0 and "your role: viewer" in out, "tls-status-through-the-frontend",
         "front-end %r: %s" % (fe, out))
held = scan(fe, needles) if fe else None
w.report(bool(held) and ("scalar" in held or "scalar-le" in held), "control-frontend-holds-the-tls-key",
         "found %r in pid %r" % (held, fe))

# 2. the agent holds none of the key, after start and after TLS requests
found = scan(agent, needles)
w.report(found is not None and not found, "agent-memory-has-no-tls-key-after-requests",
         "found %r in pid %d" % (found, agent))

# 3. a front-end killed with SIGKILL: audited, restarted, TLS answers again
def restarted(old, n):
    if old is None:  # there was none to replace
        return None

    def ok():
        f = frontend()
        return f if f and f != old and len(records("frontend")) >= n else None
    return wait_for(ok)

before = len(records("frontend"))
if fe:
    os.kill(fe, 9)
new = restarted(fe, before + 1)
recs = records("frontend")[before:]
w.report(any(r.get("result") == "restarted" and "signal 9" in json.dumps(r) for r in recs),
         "frontend-sigkill-audited", "records %r" % recs)
w.report(new is not None, "frontend-sigkill-restarted", "front-end %r -> %r" % (fe, new))
rc, out = tls_status()
w.report(new is not None and rc == 0 and "your role: viewer" in out, "tls-answers-after-sigkill",
         "front-end %r: %s" % (new, out))
st = status(new) if new else None
w.report(bool(st) and st["Uid"] == [nobody] * 4 and st["Seccomp"] == ["2"] and st["CapEff"] == ["0" * 16],
         "restarted-frontend-sandboxed", "%r" % st)
found = scan(agent, needles)
w.report(found is not None and not found, "agent-memory-has-no-tls-key-after-restart", "found %r" % found)

# 4. forged messages on the channel, written on the front-end's own end (fd 3)
libc = ctypes.CDLL(None, use_errno=True)


def channel_of(pid):
    pidfd = os.pidfd_open(pid)
    try:
        fd = libc.syscall(438, pidfd, 3, 0)  # pidfd_getfd
        if fd < 0:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
        return socket.socket(fileno=fd)
    finally:
        os.close(pidfd)


def hdr(t, cid, payload, pad=b"\0\0\0"):
    return bytes([t]) + pad + struct.pack(">II", cid, len(payload)) + payload


forged = [
    ("unknown-type", hdr(0xEE, 1, b"")),
    ("oversized", hdr(3, 1, b"")[:8] + struct.pack(">I", 0x7FFFFFF0)),
    ("local-role", hdr(1, 0x7FFFFF00, b"127.0.0.1\0tls peer 127.0.0.1 port 1") +
     hdr(2, 0x7FFFFF00, struct.pack(">I", 1 << 4) + b"CN=forged")),
    ("response-as-request", hdr(1, 0x7FFFFF01, b"127.0.0.1\0tls peer 127.0.0.1 port 2") +
     hdr(2, 0x7FFFFF01, struct.pack(">I", 1 << 2) + b"CN=forged") +
     hdr(3, 0x7FFFFF01, w.frame(w.RESPONSE, 9))),
]
for name, data in forged:
    fe = new
    before_refused = len([r for r in records("frontend") if r.get("result") == "refused"])
    before = len(records("frontend"))
    sent = False
    if fe:
        try:
            s = channel_of(fe)
            s.sendall(data)
            s.close()
            sent = True
        except OSError as e:
            print("   %s: %s" % (name, e))
    w.report(sent, "forged-%s-sent" % name)
    new = restarted(fe, before + 2)
    recs = records("frontend")[before:]
    refused = [r for r in records("frontend") if r.get("result") == "refused"]
    if len(refused) > before_refused:
        print("   %s: %s" % (name, refused[-1].get("detail")))
    w.report(len(refused) > before_refused, "forged-%s-refused-and-audited" % name, "records %r" % recs)
    w.report(new is not None, "forged-%s-frontend-replaced" % name, "front-end %r -> %r" % (fe, new))
    rc, out = tls_status()
    w.report(new is not None and rc == 0 and "your role: viewer" in out,
             "forged-%s-tls-answers-again" % name, "front-end %r: %s" % (new, out))
    # nothing granted: no record has the forged identity as its actor
    w.report(sent and not [r for r in records(None) if r.get("actor", {}).get("cert") == "CN=forged"],
             "forged-%s-nothing-granted" % name, "sent %r" % sent)
r = subprocess.run([fab, "status", "--target", "unix:" + sock], capture_output=True, text=True)
w.report(new is not None and r.returncode == 0 and "your role: local" in r.stdout, "agent-serves-after-forgeries", r.stdout + r.stderr)
