#!/bin/sh
# SPDX-License-Identifier: MIT
# The library neither prints, logs nor exits (docs/architecture.md, "Rules"): an object of
# a libfctl archive that references stdout, stderr, printf, dprintf, puts, perror, syslog, exit,
# err/warn, _exit or abort must be named, with its symbol and the reason, in
# lib_io.allow; every other reference fails, and so does an entry of the list that no
# object references any more (the list only shrinks: delete the line).
#   lib_io.sh LIST ALLOW   LIST: the archives, one a line; ALLOW: "OBJECT SYMBOL reason"
set -u
list=${1:?usage: lib_io.sh LIST ALLOW}
allow=${2:?usage: lib_io.sh LIST ALLOW}
command -v nm >/dev/null || { echo "FAIL: nm is not installed"; exit 1; }
[ -s "$list" ] || { echo "FAIL: no list of archives ($list)"; exit 1; }
[ -s "$allow" ] || { echo "FAIL: no allow list ($allow)"; exit 1; }
# the C library's printing, logging and exiting, and _FORTIFY_SOURCE's names of them
SYMS='^(stdout|stderr|printf|__printf_chk|vprintf|__vprintf_chk|dprintf|__dprintf_chk|vdprintf|__vdprintf_chk|puts|putchar|perror|syslog|__syslog_chk|vsyslog|__vsyslog_chk|openlog|exit|_exit|_Exit|abort|err|errx|verr|verrx|warn|warnx|vwarn|vwarnx)$'
T=$(mktemp -d /tmp/fctl-lib-io.XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT
: >"$T/refs"
n=0
while IFS= read -r a; do
	[ -n "$a" ] || continue
	[ -f "$a" ] || { echo "FAIL: $a is missing: build first"; exit 1; }
	n=$((n + 1))
	# _FORTIFY_SOURCE's names (__syslog_chk, __printf_chk) are the plain ones: a build
	# without it (the ASan build) references those instead
	nm -A -u "$a" 2>/dev/null | awk -v re="$SYMS" '$NF ~ re {
		k = split($1, p, ":"); s = $NF
		if (s ~ /^__.*_chk$/) s = substr(s, 3, length(s) - 6)
		print p[k - 1], s }' >>"$T/refs"
done <"$list"
sort -u "$T/refs" >"$T/found" 2>/dev/null || : >"$T/found"
[ "$n" -ge 10 ] || { echo "FAIL: only $n archives listed"; exit 1; }
grep -v '^[[:space:]]*\(#\|$\)' "$allow" | awk '{ print $1, $2 }' | sort -u >"$T/allowed"
bad=0
comm -23 "$T/found" "$T/allowed" >"$T/new"
comm -13 "$T/found" "$T/allowed" >"$T/stale"
while read -r o s; do
	echo "FAIL: $o references $s: library code returns errors; the program prints, logs and exits (or name it in lib_io.allow, with the reason)"
	bad=1
done <"$T/new"
while read -r o s; do
	echo "FAIL: lib_io.allow names $o $s, which no object references now: delete the line"
	bad=1
done <"$T/stale"
echo "lib-io: $n archives, $(wc -l <"$T/found") references, each named in lib_io.allow: $([ $bad = 0 ] && echo yes || echo no)"
exit $bad
