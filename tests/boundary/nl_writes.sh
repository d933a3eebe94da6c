#!/bin/sh
# SPDX-License-Identifier: MIT
# The kernel-write boundary (docs/architecture.md): only libfctl/nl and libfctl/engine
# write netlink; everything else writes through the engine's kernel session
# (fctl/engine_kernel.h). An object writes netlink when nm lists among its undefined
# symbols a write of fctl_nl (fctl/nl.h: fctl_nl_exec, fctl_nl_neigh_copy; nl_int.h:
# fctl_nli_exec_*, fctl_nli_xact) or a send of libnl (nl_send*, genl_send_simple,
# rtnl_*_add|change|delete).
#   nl_writes.sh absent LIST        passes when no archive or object named in LIST (one
#                                   a line: every library outside nl and the engine, the
#                                   programs' objects) references one
#   nl_writes.sh present FILE...    passes when one of FILE does (the engine's archive:
#                                   the check can fail)
#   nl_writes.sh door ENGINE_ARCHIVE SOURCE_DIR
#                                   passes when, inside the engine, only engine_nl.c
#                                   references fctl_nl's writes and only engine_kernel.c
#                                   calls the operations table's writes (exec,
#                                   neigh_copy): fctl_engine_sa_write is the one door
set -u
mode=${1:-}
[ $# -gt 0 ] && shift
command -v nm >/dev/null || { echo "FAIL: nm is not installed" >&2; exit 1; }

WRITES='^(fctl_nl_exec|fctl_nl_neigh_copy|fctl_nli_exec_[a-z_]+|fctl_nli_xact|nl_send[a-z_]*|genl_send_simple|rtnl_[a-z]+_(add|change|delete))$'

# "FILE[:MEMBER] SYMBOL" for every netlink write FILE references
refs() {
	nm -A -u "$1" 2>/dev/null | awk -v re="$WRITES" '$NF ~ re { sub(/:$/, "", $1); print $1, $NF }'
}

case "$mode" in
absent)
	list=${1:-}
	if [ ! -s "$list" ]; then
		echo "FAIL: no list of objects to check ($list)"
		exit 1
	fi
	n=0
	while IFS= read -r f; do
		[ -n "$f" ] || continue
		if [ ! -f "$f" ]; then
			echo "FAIL: $f is listed but not built"
			exit 1
		fi
		n=$((n + 1))
	done <"$list"
	found=$(while IFS= read -r f; do [ -z "$f" ] || refs "$f"; done <"$list")
	if [ -n "$found" ]; then
		echo "FAIL: netlink written outside libfctl/nl and libfctl/engine:"
		echo "$found"
		exit 1
	fi
	echo "PASS: none of $n archives and objects outside libfctl/nl and libfctl/engine writes netlink"
	;;
present)
	if [ $# -eq 0 ]; then
		echo "usage: nl_writes.sh present FILE..." >&2
		exit 2
	fi
	found=$(for f in "$@"; do refs "$f"; done)
	if [ -z "$found" ]; then
		echo "FAIL: the check finds no netlink write in $*"
		exit 1
	fi
	echo "PASS: the check finds the netlink writes in $*:"
	echo "$found"
	;;
door)
	lib=${1:-}
	src=${2:-}
	if [ ! -f "$lib" ] || [ ! -d "$src/libfctl/engine" ]; then
		echo "usage: nl_writes.sh door ENGINE_ARCHIVE SOURCE_DIR" >&2
		exit 2
	fi
	bad=$(refs "$lib" | grep -v '[:/]engine_nl\.c\.o ')
	calls=$(grep -n -E -- '->(exec|neigh_copy)\(' "$src"/libfctl/engine/*.c | grep -v '/engine_kernel\.c:')
	if [ -n "$bad$calls" ]; then
		echo "FAIL: inside the engine, netlink written past its one door:"
		[ -n "$bad" ] && echo "$bad"
		[ -n "$calls" ] && echo "$calls"
		exit 1
	fi
	if [ -z "$(refs "$lib")" ] || ! grep -q -- '->exec(' "$src/libfctl/engine/engine_kernel.c"; then
		echo "FAIL: the engine's door is not where this check looks (engine_nl.c, engine_kernel.c)"
		exit 1
	fi
	echo "PASS: inside the engine only engine_nl.c calls fctl_nl's writes, only engine_kernel.c the table's"
	;;
*)
	echo "usage: nl_writes.sh absent LIST | present FILE... | door ENGINE_ARCHIVE SOURCE_DIR" >&2
	exit 2
	;;
esac
