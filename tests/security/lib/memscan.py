# SPDX-License-Identifier: MIT
# A process's memory as the attack tests search it for key bytes (privsep.sh, frontend.py,
# key_residue.py): /proc/PID/maps, /proc/PID/pagemap and /proc/PID/mem, as root.
#
# Every readable mapping is searched (but [vvar], [vvar_vclock], [vsyscall], and what is
# at least `big` bytes: a sanitizer's reservations), each on its own. In an anonymous
# mapping (no file behind it) a page that is neither present nor swapped out has never
# been written since it was mapped or was dropped: the kernel reads it as zeros. Such
# pages are not read: an ASan process maps 256 MB of low shadow, which every scan read
# page by page (most of privsep.sh's CPU in the ASan lane). Each piece that is read
# carries up to len(longest needle) - 1 of the zero bytes around it, so a search finds
# exactly what it found in the whole mapping. File mappings are read whole, as before.
import os
import re

PAGE = os.sysconf("SC_PAGE_SIZE")
SKIP = ("[vvar]", "[vvar_vclock]", "[vsyscall]")
# the top byte of a little-endian pagemap entry: bit 63 present, bit 62 swapped
_IN_MEMORY = bytes(1 if b & 0xC0 else 0 for b in range(256))
_RUNS = re.compile(b"\x01+")


def _pieces(lo, hi, path, mem, pagemap, pad):
    """(address, bytes) pieces of one readable mapping, as described above."""
    if path.startswith("/") or pagemap is None:
        mem.seek(lo)
        yield lo, mem.read(hi - lo)
        return
    pagemap.seek(lo // PAGE * 8)
    flags = pagemap.read((hi - lo) // PAGE * 8)[7::8].translate(_IN_MEMORY)
    for m in _RUNS.finditer(flags):
        a, b = lo + m.start() * PAGE, lo + m.end() * PAGE
        mem.seek(a)
        data = mem.read(b - a)
        before = min(pad, a - lo)
        after = min(pad, hi - b)
        yield a - before, b"\0" * before + data + b"\0" * after


def search(pid, wanted, big=4 << 30):
    """({needle name: ["ADDR in RANGE PERMS PATH", ...]}, bytes read, [skipped big ranges]).
    wanted: [(name, bytes)]. Raises OSError when the process cannot be read at all."""
    found, scanned, skipped = {}, 0, []
    pad = max((len(n) for _name, n in wanted), default=1) - 1
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        try:
            pagemap = open(f"/proc/{pid}/pagemap", "rb", 0)
        except OSError:
            pagemap = None  # then every mapping is read whole
        try:
            for line in maps:
                f = line.split()
                lo, hi = (int(x, 16) for x in f[0].split("-"))
                path = f[5] if len(f) > 5 else ""
                if "r" not in f[1] or path in SKIP:
                    continue
                if hi - lo >= big:
                    skipped.append(f"{f[0]} {path or '[anon]'}")
                    continue
                try:
                    for at, data in _pieces(lo, hi, path, mem, pagemap, pad):
                        scanned += len(data)
                        for name, n in wanted:
                            i = data.find(n)
                            if i >= 0:
                                found.setdefault(name, []).append(
                                    f"{hex(at + i)} in {f[0]} {f[1]} {path or '[anon]'}")
                except OSError:
                    continue
        finally:
            if pagemap:
                pagemap.close()
    return found, scanned, skipped


def names(pid, wanted, big=4 << 30):
    """The set of needle names found, or None when the process cannot be read."""
    try:
        return set(search(pid, wanted, big)[0])
    except OSError:
        return None


def _selftest():
    """python3 memscan.py: this scanner against a process whose memory is known: a needle in
    a touched page of a 64 MB anonymous mapping whose other pages were never touched, one
    whose zero tail lies in the untouched page after, one in a file mapping; and that the
    untouched pages were not read. Prints PASS/FAIL lines; exit 1 on a failure."""
    import mmap
    import subprocess
    import sys
    import tempfile
    needle = os.urandom(24)
    straddle = os.urandom(8) + b"\0" * 8  # its last 8 bytes fall in the next, untouched page
    filed = os.urandom(24)
    with tempfile.NamedTemporaryFile() as tf:
        tf.write(b"x" * 100 + filed + b"y" * (PAGE - 124))
        tf.flush()
        child = subprocess.Popen([sys.executable, "-c", f"""
import mmap, sys
m = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
m[5 * {PAGE} + 100:5 * {PAGE} + 124] = bytes.fromhex("{needle.hex()}")
m[9 * {PAGE} - 8:9 * {PAGE}] = bytes.fromhex("{straddle[:8].hex()}")
f = open("{tf.name}", "rb")
fm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print(len(fm[:1]), flush=True)
sys.stdin.read()
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        child.stdout.readline()
        try:
            found, scanned, _ = search(child.pid, [("needle", needle), ("straddle", straddle),
                                                    ("filed", filed), ("absent", os.urandom(24))])
        finally:
            child.stdin.close()
            child.wait()
    ok = True
    for name, want in (("needle", True), ("straddle", True), ("filed", True), ("absent", False)):
        good = (name in found) == want
        ok &= good
        print(f"{'PASS' if good else 'FAIL'} memscan-{'finds' if want else 'does-not-find'}-{name}")
    good = scanned < (64 << 20)
    ok &= good
    print(f"{'PASS' if good else 'FAIL'} memscan-skips-untouched-pages ({scanned} bytes read)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_selftest())
