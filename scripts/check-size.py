#!/usr/bin/env python3
"""Size limits of docs/architecture.md: no C source file over 1,000 lines, no
function over 120 lines, in libfctl/, fabricctl/, keymgr/ and probes/; and every
such file opens with its SPDX line and a comment saying what it is for.

Prints every breach as FILE:LINE: what, exits 1 when there is one, 2 on usage.
A function is measured from the line of its name to its closing brace at column 0
(kernel style, as the tree is written)."""
import os
import re
import sys

FILE_MAX = 1000
FUNC_MAX = 120
DIRS = ("libfctl", "fabricctl", "keymgr", "probes")
# a function definition: a line at column 0 with NAME( that is not a statement
DEF = re.compile(r"^[A-Za-z_][\w \*]*?\b([A-Za-z_]\w*)\s*\(")


def functions(lines):
    """Yields (name, first line number, length) for each function definition."""
    name, start, i = None, 0, 0
    while i < len(lines):
        line = lines[i]
        m = DEF.match(line)
        if name is None and m and not line.rstrip().endswith(";") and not line.startswith(
                ("typedef", "struct", "enum", "union", "#", "static const", "return")):
            # the body opens on a line of its own at column 0 ("{") after the signature
            j = i
            while j < len(lines) and not lines[j].startswith("{"):
                if lines[j].rstrip().endswith(";") or lines[j].startswith("}"):
                    break
                j += 1
            if j < len(lines) and lines[j].startswith("{"):
                name, start = m.group(1), i
                i = j
        elif name is not None and line.startswith("}"):
            yield name, start + 1, i - start + 1
            name = None
        i += 1


def main(root):
    bad = 0
    for d in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, n)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
                if not (lines[0].startswith(("// SPDX-License-Identifier:",
                                             "/* SPDX-License-Identifier:"))
                        and len(lines) > 1 and lines[1].startswith(("/*", "//"))):
                    print(f"{rel}:1: no SPDX line and purpose comment on lines 1 and 2")
                    bad += 1
                if len(lines) - 1 > FILE_MAX:
                    print(f"{rel}:1: file has {len(lines) - 1} lines (limit {FILE_MAX})")
                    bad += 1
                for name, line, length in functions(lines):
                    if length > FUNC_MAX:
                        print(f"{rel}:{line}: function {name} has {length} lines (limit {FUNC_MAX})")
                        bad += 1
    print(f"check-size: {bad} over the limits")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: check-size.py SOURCE_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
