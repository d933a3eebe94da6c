#!/bin/sh
# SPDX-License-Identifier: MIT
# Exported names read fctl_<object>_<verb> (docs/architecture.md): every global function
# or variable a libfctl archive defines starts with fctl_, so no name of ours can clash
# with a program's or another library's.   lib_names.sh LIST (the archives, one a line)
set -u
list=${1:?usage: lib_names.sh LIST}
command -v nm >/dev/null || { echo "FAIL: nm is not installed"; exit 1; }
[ -s "$list" ] || { echo "FAIL: no list of archives ($list)"; exit 1; }
n=0 total=0 bad=0
while IFS= read -r a; do
	[ -n "$a" ] || continue
	[ -f "$a" ] || { echo "FAIL: $a is missing: build first"; exit 1; }
	n=$((n + 1))
done <"$list"
[ "$n" -ge 10 ] || { echo "FAIL: only $n archives listed"; exit 1; }
out=$(while IFS= read -r a; do
	[ -n "$a" ] && nm -A --defined-only -g "$a" 2>/dev/null
done <"$list" | awk '$(NF-1) ~ /^[TDBRGSVW]$/ { k = split($1, p, ":"); s = $NF
	# AddressSanitizer globals: __odr_asan.NAME stands for NAME; __asan_* are its own
	if (s ~ /^__odr_asan[.]/) s = substr(s, 12); else if (s ~ /^___?asan/) next
	print p[k - 1], s }')
total=$(printf '%s\n' "$out" | grep -c .)
[ "$total" -ge 100 ] || { echo "FAIL: only $total global symbols found: is nm reading the archives?"; exit 1; }
printf '%s\n' "$out" | awk '$2 !~ /^fctl_/' | while read -r o s; do
	echo "FAIL: $o defines $s: a global name of libfctl starts with fctl_ (or make it static)"
done | tee /dev/stderr | grep -q . && bad=1
echo "lib-names: $n archives, $total global symbols, all fctl_*: $([ $bad = 0 ] && echo yes || echo no)"
exit $bad
