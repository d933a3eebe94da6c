#!/bin/bash
# SPDX-License-Identifier: MIT
# The compiler and linker hardening of the build, read off the binaries with readelf:
# full RELRO and BIND_NOW, PIE, a stack protector, CET landing pads (IBT, SHSTK) in
# every object of ours, stack clash probes and _FORTIFY_SOURCE=3 on every compile
# (compile_commands.json; fortification is off in a sanitizer build, which replaces
# those functions, and that build is linked without PIE: both said, not checked there).
# Prints PASS/FAIL per check.
set -uo pipefail
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
command -v readelf >/dev/null || { echo "build_hardening: readelf missing (binutils)" >&2; exit 2; }
CC_JSON=$BUILD/compile_commands.json
[ -f "$CC_JSON" ] || { echo "build_hardening: no $CC_JSON" >&2; exit 2; }

# A sanitizer build is linked without PIE (CMakeLists.txt: ASan's relocations at every
# start); it is never shipped, so PIE is checked on the other builds only, and said
SANITIZED=
grep -q -- '-fsanitize=address' "$CC_JSON" && SANITIZED=1
for b in fabricctl/fabricctl keymgr/fabricctl-keymgr probes/fabricctl-probe; do
	f=$BUILD/$b
	[ -x "$f" ] || { fail "$b exists"; continue; }
	dyn=$(readelf -d "$f") segs=$(readelf -lW "$f") syms=$(readelf -sW --dyn-syms "$f")
	if [ -n "$SANITIZED" ]; then
		grep -q 'FLAGS_1.*NOW' <<<"$dyn" && pass "$b: now (pie: not checked in a sanitizer build)" ||
			fail "$b: now"
	else
		grep -q 'FLAGS_1.*NOW.*PIE' <<<"$dyn" && pass "$b: now, pie" || fail "$b: now, pie"
	fi
	grep -q GNU_RELRO <<<"$segs" && pass "$b: relro" || fail "$b: relro"
	grep -q '__stack_chk_fail' <<<"$syms" && pass "$b: stack protector" || fail "$b: stack protector"
done
# CET: every object file of ours carries IBT and SHSTK (the final link drops the
# property when a system object lacks it, so the objects are what we can vouch for)
n=0 bad=0
while IFS= read -r -d '' o; do
	n=$((n + 1))
	notes=$(readelf -n "$o" 2>/dev/null)
	grep -q 'x86 feature: IBT, SHSTK' <<<"$notes" || { bad=$((bad + 1)); echo "  no IBT/SHSTK: $o"; }
done < <("$PY" -c '
import json, os, shlex, sys
for e in json.load(open(sys.argv[1])):
    a = shlex.split(e["command"])
    if "-o" in a and e["file"].endswith(".c") and "/tests/" not in e["file"]:
        sys.stdout.write(os.path.join(e["directory"], a[a.index("-o") + 1]) + "\0")
' "$CC_JSON")
[ $n -gt 0 ] && [ $bad -eq 0 ] && pass "cet in $n objects" || fail "cet" "$bad of $n objects lack it"

compiles=$(grep -c '"command"' "$CC_JSON")
clash=$(grep -c -- '-fstack-clash-protection' "$CC_JSON")
[ "$clash" = "$compiles" ] && pass "stack clash probes on $compiles compiles" || fail "stack clash" "$clash of $compiles"
if [ -n "$SANITIZED" ]; then
	echo "  fortify: not checked in a sanitizer build (ASan replaces the fortified functions)"
else
	fort=$(grep -c -- '-D_FORTIFY_SOURCE=3' "$CC_JSON")
	[ "$fort" = "$compiles" ] && pass "_FORTIFY_SOURCE=3 on $compiles compiles" || fail "_FORTIFY_SOURCE=3" "$fort of $compiles"
	# and in force: a later -U_FORTIFY_SOURCE once undid it without a trace in the count
	for b in fabricctl/fabricctl keymgr/fabricctl-keymgr probes/fabricctl-probe; do
		chk=$(readelf -sW --dyn-syms "$BUILD/$b" 2>/dev/null | grep -c '__[a-z0-9_]*_chk@' || true)
		chk=$((chk - $(readelf -sW --dyn-syms "$BUILD/$b" 2>/dev/null | grep -c '__stack_chk_fail@' || true)))
		[ "$chk" -gt 0 ] && pass "$b: fortified calls ($chk)" || fail "$b: fortified calls" "none"
	done
fi
echo "build_hardening: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
