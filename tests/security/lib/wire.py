# SPDX-License-Identifier: MIT
# The agent protocol (docs/protocol.md) spoken by hand, for the attack tests: frames
# fabricctl's own client never sends (several in one write, oversized, half sent).
import os
import socket
import ssl
import struct

HELLO, STATUS, PLAN, APPLY, RESPONSE = 1, 2, 3, 4, 0x80
T_VMIN, T_VMAX, T_HOST, T_PROFILE, T_OPTIONS = 0x8001, 0x8002, 0x8003, 0x8004, 0x8006
T_RESULT, T_ERROR, T_OUTPUT, T_ROLE = 0x8008, 0x0009, 0x000A, 0x000B
OPT_JSON = 2


def tlv(t, v):
    return struct.pack(">HI", t, len(v)) + v


def header(mtype, mid, length):
    return b"FCTL" + struct.pack(">BBHII", 1, mtype, 0, mid, length)


def frame(mtype, mid, *tlvs):
    p = b"".join(tlvs)
    return header(mtype, mid, len(p)) + p


def hello(mid=1, vmin=1, vmax=1):
    return frame(HELLO, mid, tlv(T_VMIN, struct.pack(">H", vmin)),
                 tlv(T_VMAX, struct.pack(">H", vmax)))


def request(mtype, mid, profile=None, options=0):
    t = []
    if profile is not None:
        t.append(tlv(T_PROFILE, profile))
    if options:
        t.append(tlv(T_OPTIONS, struct.pack(">I", options)))
    return frame(mtype, mid, *t)


def tls(port, pki, role, timeout=30):
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=pki + "/ca.crt")
    ctx.check_hostname = False
    ctx.load_cert_chain(pki + "/client-%s.crt" % role, pki + "/client-%s.key" % role)
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return ctx.wrap_socket(s)


def unix(path, timeout=30):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def _exact(s, n):
    b = b""
    while len(b) < n:
        k = s.recv(n - len(b))
        if not k:
            return None
        b += k
    return b


def recv(s):
    """One frame: (type, id, {tlv type: bytes}), or None at end of stream."""
    h = _exact(s, 16)
    if h is None or h[:4] != b"FCTL":
        return None
    _, mtype, _, mid, n = struct.unpack(">BBHII", h[4:])
    p = _exact(s, n)
    if p is None:
        return None
    t, off = {}, 0
    while off + 6 <= len(p):
        tt, ln = struct.unpack(">HI", p[off:off + 6])
        t[tt] = p[off + 6:off + 6 + ln]
        off += 6 + ln
    return mtype, mid, t


def result(r):
    """(result, output text, error text) of a response, or (None, '', '') for none."""
    if r is None:
        return None, "", ""
    t = r[2]
    res = struct.unpack(">I", t[T_RESULT])[0] if T_RESULT in t else None
    return res, t.get(T_OUTPUT, b"").decode(errors="replace"), \
        t.get(T_ERROR, b"").decode(errors="replace")


def vm_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError("no %s for pid %d" % (field, pid))


def report(ok, name, why=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok or not why else ": " + why),
          flush=True)
