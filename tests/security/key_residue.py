#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The client and the memory scan of key_residue.sh: sends TXSA_STAGE requests, each
# carrying its own SAK, to a running agent (over mutual TLS as key-custodian, as viewer,
# and over the Unix socket), checks each reached the agent (the answer it got), then
# reads the agent's whole memory (/proc/PID/maps + /proc/PID/mem, as root) and looks for
# every SAK: while the connections are still open, and again after they closed. Two more
# frames on the Unix socket carry a SAK the agent never uses: one refused as malformed
# (AN 7), one cut short (its connection closes mid-frame: checked after the close only).
# Two sa-batch frames carry SAKs in their records: one handled (both records fail at
# the interface), one refused by the decoder.
# Prints "PASS name" / "FAIL name: why" lines; key_residue.sh counts them. Exit 2 when it
# cannot run at all.
import argparse
import os
import socket
import ssl
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import memscan  # noqa: E402

MAGIC = 0x4643544C
MSG_TXSA_STAGE = 12
MSG_RESPONSE = 0x80
TLV_RESULT, TLV_ERROR = 0x8008, 0x0009
TLV_IFNAME, TLV_AN, TLV_PN, TLV_KEY, TLV_KEYID = 0x800D, 0x800F, 0x8010, 0x8011, 0x8012
BIG_REGION = 4 << 30  # a sanitizer's shadow: reserved, never holds our data


def tlv(t, v):
    return struct.pack(">HI", t, len(v)) + v


def txsa_stage(req_id, ifname, sak, an=1):
    body = (tlv(TLV_IFNAME, ifname.encode()) + tlv(TLV_AN, struct.pack(">I", an)) +
            tlv(TLV_PN, struct.pack(">Q", 1)) + tlv(TLV_KEY, sak) +
            tlv(TLV_KEYID, bytes(range(16))))
    return struct.pack(">IBBHII", MAGIC, 1, MSG_TXSA_STAGE, 0, req_id, len(body)) + body


MSG_SA_BATCH, TLV_SA_OPS, OP_LEN = 16, 0x8016, 108


def sa_op_stage(ifname, sak, an=1):
    """One sa-batch record (docs/protocol.md): a txsa-stage with an, pn, key, keyid."""
    present = 0x02 | 0x04 | 0x08 | 0x10
    rec = struct.pack(">BBH16sQQBBHII", MSG_TXSA_STAGE, 0, present, ifname.encode(), 0, 1,
                      an, len(sak), 0, 0, 0)
    rec += sak.ljust(32, b"\0") + bytes(range(16)) + bytes(12)
    assert len(rec) == OP_LEN
    return rec


def sa_batch(req_id, records):
    body = tlv(TLV_SA_OPS, b"".join(records))
    return struct.pack(">IBBHII", MAGIC, 1, MSG_SA_BATCH, 0, req_id, len(body)) + body


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        b = s.recv(n - len(out))
        if not b:
            raise ConnectionError("the agent closed the connection")
        out += b
    return out


def response(s):
    magic, _ver, typ, _fl, _id, length = struct.unpack(">IBBHII", recv_exact(s, 16))
    if magic != MAGIC or typ != MSG_RESPONSE:
        raise ValueError("not a response frame")
    body, res, err = recv_exact(s, length), None, ""
    while body:
        t, n = struct.unpack(">HI", body[:6])
        v, body = body[6:6 + n], body[6 + n:]
        if t == TLV_RESULT:
            res = struct.unpack(">I", v)[0]
        elif t == TLV_ERROR:
            err = v.decode(errors="replace").strip()
    return res, err


def tls_conn(addr, cert, key, ca):
    host, port = addr.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False  # the CA check is what matters here, not the name
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    raw = socket.create_connection((host, int(port)), timeout=10)
    return ctx.wrap_socket(raw)


def unix_conn(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


def needles(name, sak):
    """The SAK and each of its 16-byte halves (a partial copy, an AES round key)."""
    out = [(name, sak)]
    if len(sak) == 32:
        out += [(name + " (first half)", sak[:16]), (name + " (second half)", sak[16:])]
    return out


def scan(pid, wanted):
    """({needle name: [where]}, bytes read, [skipped regions]): lib/memscan.py, which
    reads every readable mapping but the pages never touched (zeros)."""
    return memscan.search(pid, wanted, BIG_REGION)


def check_scan(pid, wanted, control, phase):
    """control: bytes the agent holds for sure (its socket path): proves the scan sees them."""
    wanted = [(n, b) for n, b in wanted if phase == "closed" or not n.startswith("sak-unix-cut")]
    found, scanned, skipped = scan(pid, wanted + [("control", control)])
    print(f"  scanned {scanned} bytes of agent {pid} memory ({phase})"
          + (f", skipped {len(skipped)} reserved regions >= 4 GiB" if skipped else ""))
    if scanned < (1 << 20) or "control" not in found:
        print(f"FAIL memory-readable-{phase}: {scanned} bytes read, the agent's socket path "
              f"{'found' if 'control' in found else 'not found'} in them")
        return
    print(f"PASS memory-readable-{phase} (the agent's socket path found: the scan sees its heap)")
    for name, _n in wanted:
        if name in found:
            print(f"FAIL no-residue-{phase} {name}: found at {'; '.join(found[name][:3])}")
        else:
            print(f"PASS no-residue-{phase} {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--listen", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--pki", required=True)
    ap.add_argument("--ifname", default="macsec0")
    a = ap.parse_args()
    ca = os.path.join(a.pki, "ca.crt")
    role = lambda r: (os.path.join(a.pki, f"client-{r}.crt"), os.path.join(a.pki, f"client-{r}.key"))
    saks = {  # distinctive and new every run: no other copy can be in the agent
        "sak-tls-key-custodian": b"KRc\x01" + os.urandom(28),
        "sak-tls-viewer": b"KRv\x02" + os.urandom(28),
        "sak-unix": b"KRu\x03" + os.urandom(28),
        "sak-unix-malformed": b"KRm\x04" + os.urandom(28),
        "sak-unix-cut-short": b"KRs\x05" + os.urandom(28),
        "sak-batch-a": b"KRa\x06" + os.urandom(28),
        "sak-batch-b": b"KRb\x07" + os.urandom(28),
        "sak-batch-malformed": b"KRx\x08" + os.urandom(28),
    }
    wanted = [x for name, sak in saks.items() for x in needles(name, sak)]
    conns = []
    cases = [
        ("sak-tls-key-custodian", lambda: tls_conn(a.listen, *role("key-custodian"), ca),
         lambda res, err: res == 1 and "not a MACsec interface" in err),
        ("sak-tls-viewer", lambda: tls_conn(a.listen, *role("viewer"), ca),
         lambda res, err: res == 13 and "permission denied" in err),
        ("sak-unix", lambda: unix_conn(a.socket),
         lambda res, err: res == 1 and "not a MACsec interface" in err),
    ]
    cases.append(("sak-unix-malformed", lambda: unix_conn(a.socket),
                  lambda res, err: res == 2 and "AN 7" in err))
    for i, (name, conn, ok) in enumerate(cases):
        try:
            s = conn()
            s.sendall(txsa_stage(i + 1, a.ifname, saks[name], 7 if "malformed" in name else 1))
            res, err = response(s)
            conns.append(s)
        except (OSError, ValueError, ssl.SSLError) as e:
            print(f"FAIL request-{name}: {e}")
            continue
        if ok(res, err):
            print(f"PASS request-{name}: result {res}: {err}")
        else:
            print(f"FAIL request-{name}: result {res}: {err}")
    # sa-batch: two records, each with its SAK, both failing at the interface; then a
    # batch refused by the decoder (its second record has AN 9), its first record's SAK
    # never used
    batches = [
        ("sak-batch-a", [sa_op_stage(a.ifname, saks["sak-batch-a"]),
                         sa_op_stage(a.ifname, saks["sak-batch-b"])],
         lambda res, err: res == 1 and "2 of 2 SA operations failed" in err
         and "not a MACsec interface" in err),
        ("sak-batch-malformed", [sa_op_stage(a.ifname, saks["sak-batch-malformed"]),
                                 sa_op_stage(a.ifname, b"\0" * 32, an=9)],
         lambda res, err: res == 2 and "sa-ops record 1" in err),
    ]
    for i, (name, recs, ok) in enumerate(batches):
        try:
            s = unix_conn(a.socket)
            s.sendall(sa_batch(20 + i, recs))
            res, err = response(s)
            conns.append(s)
        except (OSError, ValueError) as e:
            print(f"FAIL request-{name}: {e}")
            continue
        print(f"{'PASS' if ok(res, err) else 'FAIL'} request-{name}: result {res}: {err}")
    try:  # the header and the SAK, not the rest: the agent waits for the frame's end
        s = unix_conn(a.socket)
        frame = txsa_stage(9, a.ifname, saks["sak-unix-cut-short"])
        s.sendall(frame[:frame.index(saks["sak-unix-cut-short"]) + 32])
        conns.append(s)
        print("PASS request-sak-unix-cut-short: sent, left unfinished")
    except OSError as e:
        print(f"FAIL request-sak-unix-cut-short: {e}")
    time.sleep(0.3)
    check_scan(a.pid, wanted, a.socket.encode(), "open")
    for s in conns:
        s.close()
    time.sleep(0.5)  # the agent sees the closes and frees the connections
    check_scan(a.pid, wanted, a.socket.encode(), "closed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:
        print(f"key_residue.py: {e}", file=sys.stderr)
        sys.exit(2)
