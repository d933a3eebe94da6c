#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The module layers of docs/architecture.md, checked against the tree.

The doc's module table ("The modules of libfctl": module, target, holds, uses) is
the rule; this reads it and checks, for every static library built under libfctl/
(TARGETS: "name<TAB>source dir<TAB>archive<TAB>sources<TAB>link libraries", lists
'|'-separated, written by tests/CMakeLists.txt):

  rows     every libfctl target has one row and every row one target, in the
           folder the row names; a folder's only target is named fctl_FOLDER (a
           target not built here, fctl_rdma without libibverbs, is named, not
           skipped silently); the uses graph has no circle
  links    the target's direct link libraries (CMake) are exactly its "uses",
           the libraries outside libfctl included (OpenSSL, libyaml, ...)
  includes every #include "fctl/X.h" of the target's sources and private headers
           names a header of the target itself or of a module below it (the
           closure of "uses"); a header belongs to the targets that define the
           functions it declares; a private header is named NAME_int.h and is
           included only from its folder
  symbols  every libfctl symbol the archive references (nm) is defined by the
           archive itself or by a module below it: no arrow points up or sideways
  units    every target is linked directly by at least one cmocka executable of
           tests/unit/ (UNITS: "test<TAB>link libraries" a line)
  programs each program of "Which program links what" links exactly the targets and
           libraries its line names up to its first full stop, and has no folder of
           libfctl/ but include/ among its include directories: a program never
           includes a module's private header (PROGRAMS: "program<TAB>link
           libraries<TAB>include directories" a line)

  layers.py check SOURCE_DIR TARGETS UNITS PROGRAMS
  layers.py has-it SOURCE_DIR TARGETS UNITS PROGRAMS   the same check against the table
           with "nl" taken from the engine's "uses" and "engine" from fabricctl's line
           must fail in links, includes, symbols and programs: the check can fail
Exits 0 when the check passes (has-it: when it fails as it must), 1 otherwise."""
import os
import re
import subprocess
import sys

# the doc's names for libraries outside libfctl -> CMake's link items
EXTERNAL = {
    "OpenSSL": {"OpenSSL::SSL", "OpenSSL::Crypto"},
    "libyaml": {"PkgConfig::YAML"},
    "libnl": {"PkgConfig::LIBNL"},
    "threads": {"Threads::Threads"},
    "libm": {"m"},
    "dlopen": {"dl"},
    "libibverbs": {"PkgConfig::IBVERBS"},
    "librdmacm": {"PkgConfig::RDMACM"},
    "libc": set(),
}
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def fail_list():
    out = []

    def add(arm, text):
        out.append((arm, text))
    return out, add


def read_table(doc):
    """{target: (folder, [uses])} from the module table of docs/architecture.md."""
    rows = {}
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    start = text.index("## The modules of libfctl")
    end = text.index("\n## ", start + 1)
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        folder = cells[0].strip("`").rstrip("/")
        target = cells[1].strip("`")
        uses = cells[3]
        # "(libc)": a cell that is one parenthesis names the library; otherwise a
        # parenthesis says why and is not a name
        if re.fullmatch(r"\([^()]*\)", uses):
            uses = uses[1:-1]
        uses = re.sub(r"\s*\([^()]*\)", "", uses)
        names = [u.strip() for u in uses.split(",") if u.strip()]
        if target in rows:
            raise SystemExit(f"FAIL: {doc}: two rows for {target}")
        rows[target] = (folder, names)
    if len(rows) < 10:
        raise SystemExit(f"FAIL: {doc}: only {len(rows)} rows read from the module table")
    return rows


def read_programs(doc):
    """{program: [names]} from the lines of "Which program links what"."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    start = text.index("Which program links what")
    end = text.index("\n## ", start)
    progs = {}
    for m in re.finditer(r"^- `([a-z-]+)`: (.*?)(?=^- `|\Z)", text[start:end], re.M | re.S):
        body = re.sub(r"\s*\([^()]*\)", "", " ".join(m.group(2).split()))
        first = body.split(". ")[0].rstrip(".")
        first = first.replace(" and its own ", ", ")
        progs[m.group(1)] = [n.strip() for n in first.split(",") if n.strip()]
    if len(progs) < 3:
        raise SystemExit(f"FAIL: {doc}: only {len(progs)} programs read from \"Which program links what\"")
    return progs


def read_targets(path):
    targets = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            name, sdir, archive, srcs, libs = line.rstrip("\n").split("\t")
            targets[name] = {
                "dir": sdir, "archive": archive,
                "sources": [s if os.path.isabs(s) else os.path.join(sdir, s)
                            for s in srcs.split("|") if s],
                "links": [x for x in libs.split("|") if x],
            }
    return targets


def nm(archive):
    """(defined globals, referenced symbols with the referring object) of an archive."""
    out = subprocess.run(["nm", "-A", "-P", archive], capture_output=True, text=True,
                         check=True).stdout
    defined, refs = set(), []
    for line in out.splitlines():
        m = re.match(r"^.*\[([^\]]+)\]: (\S+) (\S)", line)
        if not m:
            continue
        member, sym, typ = m.groups()
        if sym.startswith("__odr_asan."):
            sym = sym[len("__odr_asan."):]
        if typ == "U":
            refs.append((member, sym))
        elif typ in "TDBRGSVWC":
            defined.add(sym)
    return defined, refs


def strip_comments(s):
    s = re.sub(r"/\*.*?\*/", "", s, flags=re.S)
    return re.sub(r"//[^\n]*", "", s)


def check(src, rows, targets, units, programs=None, plinks=None):
    fails, add = fail_list()
    by_folder = {}
    for t, (folder, _) in rows.items():
        by_folder.setdefault(folder, []).append(t)
    names = set(rows)
    # a row's "uses" names modules by folder (util) or target (agent_client)
    def resolve(name):
        if "fctl_" + name in names:
            return "fctl_" + name
        if name in by_folder and len(by_folder[name]) == 1:
            return by_folder[name][0]
        return None

    uses, ext = {}, {}
    for t, (folder, items) in rows.items():
        uses[t], ext[t] = set(), set()
        for u in items:
            r = resolve(u)
            if r:
                uses[t].add(r)
            elif u in EXTERNAL:
                ext[t].add(u)
            else:
                add("rows", f"{t}: \"{u}\" in its uses is neither a module nor a library "
                    f"the check knows ({', '.join(sorted(EXTERNAL))})")
    # rows <-> targets
    for t in sorted(set(targets) - names):
        add("rows", f"{t} is built under libfctl/ but has no row in the module table")
    for t in sorted(names - set(targets)):
        if t == "fctl_rdma":
            print(f"NOTE: {t} is not built here (libibverbs or librdmacm missing): its row is not checked")
        else:
            add("rows", f"{t} has a row in the module table but is not built")
    for t in sorted(names):
        folder = rows[t][0]
        if len(by_folder[folder]) == 1 and t != "fctl_" + folder:
            add("rows", f"{t}: the one target of libfctl/{folder}/ is named fctl_{folder}")
    for t in sorted(set(targets) & names):
        want = os.path.join(src, "libfctl", rows[t][0])
        if os.path.realpath(targets[t]["dir"]) != os.path.realpath(want):
            add("rows", f"{t}: its row names libfctl/{rows[t][0]}/, CMake builds it in {targets[t]['dir']}")
    # closure of uses; a circle in it is a failure
    below = {}

    def close(t, path):
        if t in below:
            return below[t]
        if t in path:
            add("rows", "the uses column has a circle: " + " -> ".join(path + [t]))
            return set()
        acc = set()
        for u in uses.get(t, ()):
            acc |= {u} | close(u, path + [t])
        below[t] = acc
        return acc
    for t in sorted(rows):
        close(t, [])
    built = sorted(set(targets) & names)
    # links: exactly the uses (a library outside libfctl: one of its CMake names)
    for t in built:
        have = set(targets[t]["links"])
        for x in sorted(have):
            if x in names:
                ok = x in uses[t]
            else:
                ok = any(x in EXTERNAL[e] for e in ext[t])
            if not ok:
                add("links", f"{t} links {x}, which its row's uses does not name")
        for x in sorted(uses[t] - have):
            add("links", f"{t}: its row's uses names {x}, which it does not link")
        for e in sorted(ext[t]):
            if EXTERNAL[e] and not EXTERNAL[e] & have:
                add("links", f"{t}: its row's uses names {e}, which it does not link")
    # symbols and header owners
    defs, refs = {}, {}
    for t in list(built):
        if not os.path.isfile(targets[t]["archive"]):
            add("rows", f"{t}: {targets[t]['archive']} is missing: build first")
            built.remove(t)
            continue
        defs[t], refs[t] = nm(targets[t]["archive"])
    owner = {}
    for s_t in built:
        for s in defs[s_t]:
            owner.setdefault(s, set()).add(s_t)
    nrefs = 0
    for t in built:
        bad = {}
        for member, sym in refs[t]:
            o = owner.get(sym)
            if not o or sym in defs[t]:
                continue
            nrefs += 1
            if not (o & (below[t] | {t})):
                bad.setdefault((member, "/".join(sorted(o))), []).append(sym)
        for (member, o), syms in sorted(bad.items()):
            add("symbols", f"{t}: {member} calls {o} ({', '.join(sorted(syms)[:4])}), "
                "not a module below it")
    inc_dir = os.path.join(src, "libfctl", "include", "fctl")
    header_owner = {}
    for h in sorted(os.listdir(inc_dir)):
        if not h.endswith(".h"):
            continue
        with open(os.path.join(inc_dir, h), encoding="utf-8") as f:
            body = strip_comments(f.read())
        declared = set(re.findall(r"\b(fctl_\w+)\s*\(", body))
        o = set()
        for d in declared:
            o |= owner.get(d, set())
        if not o:
            add("includes", f"fctl/{h}: no libfctl target defines a function it declares, "
                "so its module is unknown")
        header_owner[h] = o
    nincs = 0
    for t in built:
        # the target's sources and the private headers they include, at any depth
        files, seen = list(targets[t]["sources"]), set()
        while files:
            path = files.pop(0)
            if path in seen:
                continue
            seen.add(path)
            if not path.endswith((".c", ".h")) or not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
            rel = os.path.relpath(path, src)
            for i, line in enumerate(lines, 1):
                m = INC.match(line)
                if not m:
                    continue
                name = m.group(1)
                nincs += 1
                if name.startswith("fctl/"):
                    o = header_owner.get(name[5:])
                    if o is None:
                        add("includes", f"{rel}:{i}: includes {name}, not in libfctl/include/fctl/")
                    elif o and not (o & (below[t] | {t})):
                        add("includes", f"{rel}:{i}: includes {name} of {'/'.join(sorted(o))}, "
                            f"not a module below {t}")
                elif "/" in name or not os.path.isfile(os.path.join(os.path.dirname(path), name)):
                    if not name.endswith(".inc"):
                        add("includes", f"{rel}:{i}: includes \"{name}\": a private header is "
                            "included from its own folder only")
                elif not name.endswith("_int.h"):
                    add("includes", f"{rel}:{i}: includes \"{name}\": a private header is "
                        "named NAME_int.h")
                else:
                    files.append(os.path.join(os.path.dirname(path), name))
    # units
    linked = {}
    for test, libs in units.items():
        for x in libs:
            linked.setdefault(x, []).append(test)
    for t in built:
        if not linked.get(t):
            add("units", f"{t}: no cmocka executable in tests/unit/ links it")
    # programs
    for prog, items in sorted((programs or {}).items()):
        if prog not in plinks:
            if prog == "fabricctl-probe":
                print(f"NOTE: {prog} is not built here (libibverbs missing): its line is not checked")
            else:
                add("programs", f"{prog} is in \"Which program links what\" but not built")
            continue
        have, incs = plinks[prog]
        want_t, want_e = set(), set()
        for u in items:
            r = resolve(u) or (u if u.startswith("fctl_") else None)
            if r:
                want_t.add(r)
            elif u in EXTERNAL:
                want_e.add(u)
            else:
                add("programs", f"{prog}: \"{u}\" is neither a module nor a library the check knows")
        for x in sorted(set(have)):
            ok = x in want_t if (x in names or x.startswith("fctl_")) else \
                any(x in EXTERNAL[e] for e in want_e)
            if not ok:
                add("programs", f"{prog} links {x}, which its line does not name")
        for x in sorted(want_t - set(have)):
            add("programs", f"{prog}: its line names {x}, which it does not link")
        for e in sorted(want_e):
            if EXTERNAL[e] and not EXTERNAL[e] & set(have):
                add("programs", f"{prog}: its line names {e}, which it does not link")
        lib = os.path.realpath(os.path.join(src, "libfctl"))
        for d in incs:
            rd = os.path.realpath(d)
            if rd.startswith(lib + os.sep) and rd != os.path.join(lib, "include"):
                add("programs", f"{prog} has {d} among its include directories: a module's "
                    "private headers are its own")
    for prog in sorted(set(plinks or {}) - set(programs or {})):
        add("programs", f"{prog} is built but has no line in \"Which program links what\"")
    return fails, {"targets": len(built), "refs": nrefs, "includes": nincs,
                   "units": sum(1 for t in built if linked.get(t))}


def read_units(path):
    units = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                test, libs = line.rstrip("\n").split("\t")
                units[test] = [x for x in libs.split("|") if x]
    return units


def main(argv):
    if len(argv) != 6 or argv[1] not in ("check", "has-it"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, src, tpath, upath, ppath = argv[1:]
    doc = os.path.join(src, "docs", "architecture.md")
    rows = read_table(doc)
    programs = read_programs(doc)
    targets = read_targets(tpath)
    units = read_units(upath)
    plinks = {}
    with open(ppath, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                prog, libs, incs = line.rstrip("\n").split("\t")
                plinks[prog] = ([x for x in libs.split("|") if x], [x for x in incs.split("|") if x])
    if len(targets) < 10:
        print(f"FAIL: only {len(targets)} libfctl targets listed in {tpath}")
        return 1
    if mode == "has-it":
        base, _ = check(src, rows, targets, units, programs, plinks)
        folder, items = rows["fctl_engine"]
        if "nl" not in items:
            print("FAIL: the engine's row no longer uses nl: pick another edge for has-it")
            return 1
        rows = dict(rows)
        rows["fctl_engine"] = (folder, [u for u in items if u != "nl"])
        programs = dict(programs)
        programs["fabricctl"] = [u for u in programs.get("fabricctl", []) if u != "engine"]
        fails, _ = check(src, rows, targets, units, programs, plinks)
        fails = [f for f in fails if f not in base]
        arms = {a for a, _ in fails}
        want = {"links", "includes", "symbols", "programs"}
        if want <= arms:
            print("PASS: with nl taken from the engine's uses and the engine from fabricctl's "
                  "line the check fails in "
                  + ", ".join(sorted(want)) + f" ({len(fails)} new findings), e.g.:")
            for arm in sorted(want):
                print("  " + next(t for a, t in fails if a == arm))
            return 0
        print(f"FAIL: with nl taken from the engine's uses and the engine from fabricctl's line "
              f"the check fails only in "
              f"{', '.join(sorted(arms)) or 'nothing'}")
        return 1
    fails, n = check(src, rows, targets, units, programs, plinks)
    for arm, text in fails:
        print(f"FAIL [{arm}]: {text}")
    print(f"lib-layers: {n['targets']} targets, {n['includes']} includes, "
          f"{n['refs']} references between objects, {n['units']} targets with a unit test, "
          f"{len(plinks)} programs: "
          + ("all below their module" if not fails else f"{len(fails)} findings"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
