#!/usr/bin/env python3
"""Figures of the architecture for a note: C files, functions over 100 lines, and the
circles between files and between modules, of the production code (libfctl/,
fabricctl/, keymgr/, probes/).

  arch-figures.py SOURCE_DIR [BUILD_DIR]

Circles are strongly connected components of two graphs:
- includes: a unit is a file stem (foo.c with foo.h, fctl/foo.h); unit A points to
  unit B when a file of A includes B's header. Private headers without a .c of the
  same stem (agentd_int.h) are units of their own, so a circle through one needs
  real two-way includes.
- calls (with BUILD_DIR): an object of a libfctl archive or of a program (fabricctl/,
  keymgr/, probes/) points to the object that defines a global symbol it references
  (nm), inside one archive or program or across them.
Prints the figures; exits 0."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

size = import_module("check-size")
DIRS = ("libfctl", "fabricctl", "keymgr", "probes")
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(root):
    for d in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, n), root)


def module_of(rel):
    parts = rel.split("/")
    if parts[0] == "libfctl":
        if parts[1] == "include":
            return "include"
        return parts[1]
    return parts[0]


def sccs(nodes, edges):
    """Tarjan's strongly connected components with more than one node."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def report(title, comps, modof):
    inside = [c for c in comps if len({modof(n) for n in c}) == 1]
    across = [c for c in comps if len({modof(n) for n in c}) > 1]
    print(f"{title}: {len(comps)} circles ({len(inside)} inside one module, {len(across)} across modules)")
    for c in comps:
        mods = sorted({modof(n) for n in c})
        names = ", ".join(c) if len(c) <= 12 else ", ".join(c[:12]) + f", ... ({len(c)} files)"
        print(f"  [{'/'.join(mods)}] {names}")


def include_graph(root, files):
    unit = {}
    for rel in files:
        stem = os.path.splitext(os.path.basename(rel))[0]
        d = os.path.dirname(rel)
        if d == "libfctl/include/fctl":
            unit[rel] = ("fctl", stem)
        else:
            unit[rel] = (d, stem)
    # a public header fctl/foo.h is the unit of the libfctl source foo.c that exists
    by_stem = {}
    for rel, (d, stem) in unit.items():
        if rel.endswith(".c") and d.startswith("libfctl/"):
            by_stem.setdefault(stem, []).append((d, stem))
    for rel, (d, stem) in list(unit.items()):
        if d == "fctl" and len(by_stem.get(stem, [])) == 1:
            unit[rel] = by_stem[stem][0]
    edges = {}
    for rel in files:
        here = os.path.dirname(rel)
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for line in f:
                m = INC.match(line)
                if not m:
                    continue
                name = m.group(1)
                cands = [os.path.normpath(os.path.join(here, name)),
                         os.path.normpath(os.path.join("libfctl/include", name))]
                tgt = next((c for c in cands if c in unit), None)
                if tgt and unit[tgt] != unit[rel]:
                    edges.setdefault(unit[rel], set()).add(unit[tgt])
    nodes = set(unit.values())
    comps = sccs(nodes, edges)
    named = [[f"{d}/{s}" for d, s in c] for c in comps]
    # a public header no .c of its stem pairs with belongs to the module whose files
    # include it most
    includers = {}
    for u, targets in edges.items():
        for t in targets:
            if t[0] == "fctl" and u[0].startswith("libfctl/"):
                includers.setdefault(f"fctl/{t[1]}", []).append(module_of(u[0] + "/x.c"))

    def modof(n):
        if n in includers:
            v = includers[n]
            return max(sorted(set(v)), key=v.count)
        return module_of(n + ".c")
    return named, modof


def call_graph(build):
    archives = []
    for dirpath, _, names in os.walk(os.path.join(build, "libfctl")):
        archives += [os.path.join(dirpath, n) for n in names if n.endswith(".a")]
    defined, refs = {}, {}
    for a in sorted(archives):
        lib = os.path.basename(a)[3:-2]
        out = subprocess.run(["nm", "-A", "-P", a], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            # POSIX format: ARCHIVE[MEMBER]: SYMBOL TYPE [VALUE SIZE]
            m = re.match(r"^.*\[([^\]]+)\]: (\S+) (\S)", line)
            if not m:
                continue
            member, sym, typ = m.groups()
            node = f"{lib}:{member.replace('.c.o', '.c')}"
            refs.setdefault(node, set())
            if typ == "U":
                refs[node].add(sym)
            elif typ in "TDBRCVWGS":
                defined.setdefault(sym, node)
    # the programs' objects: one node a source file, the program its module
    for prog in ("fabricctl", "keymgr", "probes"):
        for dirpath, _, names in os.walk(os.path.join(build, prog, "CMakeFiles")):
            for n in sorted(names):
                if not n.endswith(".c.o"):
                    continue
                out = subprocess.run(["nm", "-P", os.path.join(dirpath, n)],
                                     capture_output=True, text=True, check=True).stdout
                node = f"{prog}:{n[:-2]}"
                refs.setdefault(node, set())
                for line in out.splitlines():
                    f = line.split()
                    if len(f) >= 2 and f[1] == "U":
                        refs[node].add(f[0])
                    elif len(f) >= 2 and f[1] in "TDBRGSVWC":
                        defined.setdefault(f[0], node)
    edges = {}
    for node, syms in refs.items():
        for s in syms:
            t = defined.get(s)
            if t and t != node:
                edges.setdefault(node, set()).add(t)
    comps = sccs(set(refs), edges)
    modedges = {}
    for a, bs in edges.items():
        for b in bs:
            la, lb = a.split(":")[0], b.split(":")[0]
            if la != lb:
                modedges.setdefault(la, set()).add(lb)
    modcomps = sccs({n.split(":")[0] for n in refs}, modedges)
    return comps, modcomps


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    files = list(sources(root))
    cfiles = [f for f in files if f.endswith(".c")]
    print(f"C files: {len(cfiles)} (.h: {len(files) - len(cfiles)}); by folder: " + ", ".join(
        f"{d} {sum(1 for f in cfiles if f.startswith(d + '/'))}" for d in DIRS))
    over = []
    for rel in cfiles:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            lines = f.read().split("\n")
        over += [(rel, name, n) for name, _, n in size.functions(lines) if n > 100]
    print(f"functions over 100 lines: {len(over)}")
    for rel, name, n in sorted(over):
        print(f"  {rel}: {name} {n}")
    comps, modof = include_graph(root, files)
    report("include circles between file units", comps, modof)
    if len(argv) == 3:
        comps, modcomps = call_graph(argv[2])
        report("call circles between objects (libfctl archives, programs)", comps,
               lambda n: n.split(":")[0])
        print(f"call circles between libfctl archives and programs: {len(modcomps)}")
        for c in modcomps:
            print("  " + ", ".join(c))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
