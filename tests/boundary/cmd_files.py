#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One file per command noun (docs/architecture.md, "Programs and library"): every
command of fabricctl's table (fabricctl/main.c, struct cmd commands[]) is run by a
function defined in fabricctl/cmd_NOUN.c named after it (node-check: cmd_node_check.c),
and every fabricctl/cmd_*.c is a command's file or one of its parts (cmd_NOUN_PART.c:
cmd_audit_proof.c, cmd_plan_live.c), but for the exceptions named below with their reason.

  cmd_files.py check SOURCE_DIR
  cmd_files.py has-it SOURCE_DIR   the same check, with diff's function taken to live in
                                   cmd_plan.c, must fail: the check can fail
Exits 0 when it passes (has-it: when the check fails as it must), 1 otherwise."""
import glob
import os
import re
import sys

# command -> (file that runs it, why not its own cmd_NOUN.c)
COMMAND_EXCEPTIONS = {
    "help": ("main.c", "the program's own: the table it prints is main.c's"),
    "version": ("main.c", "the program's own, as help"),
    "approvals": ("cmd_approve.c", "one noun, approval: approve signs, approvals lists"),
    "status": ("cmd_fabric.c", "only a remote form: cmd_fabric.c runs every remote form"),
}
# cmd_*.c that is no command's file, and why
FILE_EXCEPTIONS = {
    "cmd_fabric.c": "the remote form (--target, --fabric) of apply, plan, show, diff, "
                    "rollback, history and status",
    "cmd_mka.c": "MKA start-up after apply and the KaY state show adds",
    "cmd_mkasup.c": "the agent's restart of one MKA port, run in its writing worker",
}
ENTRY = re.compile(r'^\s*\{\s*"([a-z][a-z-]*)",\s*(cmd_\w+),', re.M)


def check(src, moved=None):
    fails = []
    d = os.path.join(src, "fabricctl")
    with open(os.path.join(d, "main.c"), encoding="utf-8") as f:
        main = f.read()
    start = main.index("static const struct cmd commands[] = {")
    table = main[start:main.index("\n};", start)]
    entries = ENTRY.findall(table)
    if len(entries) < 20:
        return [f"only {len(entries)} commands read from fabricctl/main.c's table"], 0
    where = {}
    for path in sorted(glob.glob(os.path.join(d, "*.c"))):
        with open(path, encoding="utf-8") as f:
            for m in re.finditer(r"^(?:static )?int (cmd_\w+)\(int argc, char \*\*argv\)\n\{",
                                 f.read(), re.M):
                where[m.group(1)] = os.path.basename(path)
    if moved:
        where.update(moved)
    nouns = set()
    for name, fn in entries:
        file = where.get(fn)
        own = "cmd_" + name.replace("-", "_") + ".c"
        nouns.add(name.replace("-", "_"))
        if file is None:
            fails.append(f"{name}: its function {fn} is defined in no fabricctl/*.c")
        elif name in COMMAND_EXCEPTIONS:
            if file != COMMAND_EXCEPTIONS[name][0]:
                fails.append(f"{name}: {fn} is in {file}, the exception names "
                             f"{COMMAND_EXCEPTIONS[name][0]}: update it")
        elif file != own:
            fails.append(f"{name}: {fn} is in fabricctl/{file}, not in fabricctl/{own}")
    for path in sorted(glob.glob(os.path.join(d, "cmd_*.c"))):
        base = os.path.basename(path)
        stem = base[4:-2]
        if base in FILE_EXCEPTIONS:
            continue
        if stem in nouns or any(stem.startswith(n + "_") for n in nouns):
            continue
        fails.append(f"fabricctl/{base} is no command's file (cmd_NOUN.c or cmd_NOUN_PART.c)")
    for base in FILE_EXCEPTIONS:
        if not os.path.isfile(os.path.join(d, base)):
            fails.append(f"fabricctl/{base} is an exception but does not exist: delete it")
    return fails, len(entries)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("check", "has-it"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "has-it":
        fails, _ = check(argv[2], {"cmd_diff": "cmd_plan.c"})
        if any(f.startswith("diff: ") for f in fails):
            print("PASS: with diff's function in cmd_plan.c the check fails: " + fails[0])
            return 0
        print("FAIL: with diff's function in cmd_plan.c the check still passes")
        return 1
    fails, n = check(argv[2])
    for f in fails:
        print("FAIL: " + f)
    print(f"cli-files: {n} commands, " + ("each in its cmd_NOUN.c or a named exception"
                                          if not fails else f"{len(fails)} findings"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
