#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding 7: the agent's workers were forked from the root agent without exec, uid drop
# or seccomp, and parsed a viewer's YAML with the agent's memory (its TLS private key,
# the SAKs and frames of other clients) and every capability it has. Here: a real
# agent; a SAK is sent to it first (an SA request as key-custodian), then a viewer's
# plan of a large (legal) profile, slow enough to catch its worker in /proc while it
# parses: that worker must run as worker_user (nobody), with CapEff 0, NoNewPrivs 1 and
# Seccomp 2 (a filter), and its memory must hold neither the TLS key's PEM text nor the
# SAK (each profile parse is held 3 s by FCTL_TEST_HOLD_PROFILE_MS, in test builds only,
# so the catch does not depend on the machine's speed). A writing worker (apply) is
# re-executed too (a fresh image without the key).
# Then the TLS front-end (frontend.py): TLS was terminated, its key held and frames
# decoded in the root agent with CAP_NET_ADMIN. The process with the TLS listener that
# is not the agent must exist and run as nobody, CapEff 0, NoNewPrivs 1, Seccomp 2 and
# hold the key; the agent must hold no line of the key's PEM and not its scalar, after
# start and after TLS requests; a front-end killed with SIGKILL is audited and
# restarted (TLS answers again); forged messages on its channel (taken from the
# front-end with pidfd_getfd, as a compromised front-end would write them) are refused
# by the agent: audited, the front-end killed and restarted, nothing granted.
# Prints PASS/FAIL per check, "privsep: N passed, M failed"; needs root.
set -uo pipefail
NAME=privsep
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"
NOBODY=$(id -u nobody 2>/dev/null) || die "no user nobody"

# every profile this agent or its workers parse is held in memory 3 s (a test hook, not in
# release builds): a worker is caught alive after its parse however slow the machine (an
# ASan build beside two lab VMs missed it six times in a row)
FCTL_TEST_HOLD_PROFILE_MS=3000 start_agent $(agent_args) --max-frame 16777216 --max-buffered 67108864
# the agent never loaded the TLS key: none of it in its memory before any TLS connection
"$PY" "$ROOT/tests/security/lib/frontend.py" "$AGENT_PID" "$PORT" "$PKI" "$NOBODY" \
	"$T/audit/agent.log" "$F" "$SOCK" start >"$T/frontend.out" 2>&1
count <"$T/frontend.out"
# an applied profile: the plan below reads the history, as nobody, through preopened files
profile privsep 1 >"$T/p1.yaml"
"$F" apply --target "unix:$SOCK" "$T/p1.yaml" >/dev/null 2>&1 || fail "apply-before" "the first apply failed"
# and a status right after says so: the agent reads the history's index when the writer
# ends (it said the last drift check's version until a check 200 ms later: a fabric
# apply's status of the hosts it had just applied failed in the lab under load)
v=$("$F" status --target "unix:$SOCK" --json 2>&1)
[ "$(jq -r .applied_version <<<"$v" 2>/dev/null)" = 1 ] && pass "status-right-after-apply-says-version-1" ||
	fail "status-right-after-apply-says-version-1" "$(head -c 300 <<<"$v")"

cat >"$T/catch.py" <<'EOPY'
import os, re, subprocess, sys, threading, time
import memscan
import wire as w
sys.path.insert(0, os.path.join(os.path.dirname(w.__file__), ".."))
import key_residue as kr

agent, port, pki, nobody, kind = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
BIG = 4 << 30
pem = open(pki + "/server-h1.key").read().split("\n")
body = [l for l in pem if l and not l.startswith("-----")]
# every line of the key's base64 text (up to 64 characters each): the PEM text the agent read
needles = [("tls-key-pem-line-%d" % (i + 1), l.encode()) for i, l in enumerate(body) if len(l) >= 24]
# the private key as the agent holds it parsed (an EC scalar; OpenSSL's BIGNUM keeps it
# in little-endian words: both byte orders)
txt = subprocess.run(["openssl", "pkey", "-in", pki + "/server-h1.key", "-noout", "-text"],
                     capture_output=True, text=True).stdout
m = re.search(r"priv:\s*((?:[0-9a-f]{2}:?\s*)+)", txt)
if not m:
    print("FAIL tls-key-readable: no private scalar in openssl pkey -text")
    sys.exit(0)
scalar = bytes.fromhex(re.sub(r"[^0-9a-f]", "", m.group(1)))
scalar = scalar[-32:] if len(scalar) > 32 and scalar[0] == 0 else scalar
needles += [("tls-key-scalar", scalar), ("tls-key-scalar-le", scalar[::-1])]
sak = b"PSk\x07" + os.urandom(28)
needles += [("sak", sak), ("sak-first-half", sak[:16])]
marker = ("privsep-marker-%s" % os.urandom(6).hex()).encode()

# the SAK reaches the agent (the request fails at its interface, after the agent had it)
s = w.tls(port, pki, "key-custodian")
s.sendall(w.hello(1)); w.recv(s)
s.sendall(kr.txsa_stage(2, "ms0", sak)); w.recv(s)
s.close()

def profile(n):
    p = ("schema: 1\nprofile:\n  name: %s\n  version: 2\nhosts:\n  - name: h1\n"
         "    ports: [{ name: eth0 }]\n" % marker.decode())
    return (p + "".join("  - name: x%06d\n    ports: [{ name: eth0 }]\n" % i
                        for i in range(n))).encode()

def status(pid):
    try:
        t = open("/proc/%d/status" % pid).read()
    except OSError:
        return None
    f = dict(l.split(":", 1) for l in t.splitlines() if ":" in l)
    return {k: f.get(k, "").split() for k in ("PPid", "Uid", "Gid", "CapEff", "CapPrm", "NoNewPrivs", "Seccomp")}

def scan(pid, wanted):  # lib/memscan.py: the readable memory, without never-touched pages
    return memscan.names(pid, wanted, BIG)

def workers():
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                st = open("/proc/%s/stat" % d).read()
            except OSError:
                continue
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            comm = st[st.index("(") + 1:st.rindex(")")]
            # workers, not the TLS front-end (its own checks: frontend.py)
            if ppid == agent and "fabricctl" in comm and comm != "fabricctl-tls":
                out.append(int(d))
    return out

# control: the TLS front-end holds the key (so a worker forked from it would too)
fes = [p for p in map(int, filter(str.isdigit, os.listdir("/proc")))
       if os.path.exists("/proc/%d/comm" % p) and open("/proc/%d/comm" % p).read().strip() == "fabricctl-tls"
       and status(p) and status(p)["PPid"] == [str(agent)]]
held = scan(fes[0], [("tls-key-scalar", scalar), ("tls-key-scalar-le", scalar[::-1])]) if fes else None
w.report(bool(held), "control-the-frontend-holds-the-tls-key", "front-ends %r, found %r" % (fes, held))

caught = None
for attempt in range(6):
    res = {}
    def run():
        v = w.tls(port, pki, "viewer", timeout=120)
        v.sendall(w.hello(1)); w.recv(v)
        mtype = w.PLAN if kind == "plan" else w.APPLY
        v.sendall(w.request(mtype, 2, profile(60000), w.OPT_JSON))
        res["r"] = w.result(w.recv(v))
        v.close()
    if kind == "apply":
        def run():  # an operator's apply: a writing worker
            v = w.tls(port, pki, "operator", timeout=120)
            v.sendall(w.hello(1)); w.recv(v)
            v.sendall(w.request(w.APPLY, 2, profile(60000), w.OPT_JSON))
            res["r"] = w.result(w.recv(v))
            v.close()
    t = threading.Thread(target=run); t.start()
    deadline = time.time() + 60
    while t.is_alive() and time.time() < deadline and not caught:
        for pid in workers():
            found = scan(pid, needles + [("marker", marker)])
            st = status(pid)
            if found is not None and st and "marker" in found:
                caught = (pid, st, found)
                break
        time.sleep(0.002)
    t.join()
    if caught:
        break
if not caught:
    print("FAIL %s-worker-caught: no worker with the profile in its memory in 6 attempts" % kind)
    sys.exit(0)
pid, st, found = caught
# The worker holds the request from its first read, before its sandbox (agentd_sandbox.c:
# read, decode, then drop), so the catch can come before the drop on a loaded machine
# (five false failures at load 23). Its parse is held 3 s after the drop: it is watched
# until it ends, the state checked is the last one read while it lived (inside the held
# parse, after the drop) and the memory scans of all its life count.
end = time.time() + 30
while time.time() < end:
    st2, f2 = status(pid), scan(pid, needles + [("marker", marker)])
    if st2 is None or not f2 or "marker" not in f2:
        break  # it ended (or the pid is another process's)
    st, found = st2, found | f2
    time.sleep(0.1)
print("PASS %s-worker-caught (pid %d, uid %s, CapEff %s, NoNewPrivs %s, Seccomp %s)"
      % (kind, pid, st["Uid"], st["CapEff"], st["NoNewPrivs"], st["Seccomp"]))
if kind == "plan":
    w.report(st["Uid"] == [nobody] * 4, "plan-worker-uid-is-nobody", "Uid %s" % st["Uid"])
    w.report(st["Gid"][0] != "0" and len(set(st["Gid"])) == 1, "plan-worker-gid-unprivileged", "Gid %s" % st["Gid"])
    w.report(st["CapEff"] == ["0000000000000000"] and st["CapPrm"] == ["0000000000000000"],
             "plan-worker-no-capabilities", "CapEff %s CapPrm %s" % (st["CapEff"], st["CapPrm"]))
    w.report(st["NoNewPrivs"] == ["1"], "plan-worker-no-new-privs", "NoNewPrivs %s" % st["NoNewPrivs"])
    w.report(st["Seccomp"] == ["2"], "plan-worker-seccomp-filter", "Seccomp %s" % st["Seccomp"])
for name, _n in needles:
    w.report(name not in found, "%s-worker-memory-has-no-%s" % (kind, name), "found in pid %d" % pid)
r = res.get("r")
w.report(r is not None and r[0] in (0, 1), "%s-request-succeeds" % kind, "response %r" % (r,))
EOPY
count < <("$PY" "$T/catch.py" "$AGENT_PID" "$PORT" "$PKI" "$NOBODY" plan 2>&1)
count < <("$PY" "$T/catch.py" "$AGENT_PID" "$PORT" "$PKI" "$NOBODY" apply 2>&1)

"$PY" "$ROOT/tests/security/lib/frontend.py" "$AGENT_PID" "$PORT" "$PKI" "$NOBODY" \
	"$T/audit/agent.log" "$F" "$SOCK" >"$T/frontend.out" 2>&1
count <"$T/frontend.out"

# a sandboxed worker still reads what plan reads: the history (as nobody, files of mode 0600)
out=$("$F" plan --target "127.0.0.1:$PORT" $(tls_opts viewer) --timeout 60s "$T/p1.yaml" 2>&1)
if grep -q "no changes" <<<"$out"; then pass "viewer-plan-sees-the-applied-state"; else fail "viewer-plan-sees-the-applied-state" "$out"; fi
out=$("$F" history --target "127.0.0.1:$PORT" $(tls_opts viewer) --timeout 60s --json 2>&1)
if [ "$(jq 'length' <<<"$out" 2>/dev/null)" -ge 2 ]; then pass "viewer-history-reads-the-index"; else fail "viewer-history-reads-the-index" "$out"; fi
agent_healthy end
