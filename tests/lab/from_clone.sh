#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs one test script of this tree from a fresh clone of it under PARENT (/root, /tmp,
# ...), built there: a checkout path is never assumed. The newcomer's case: a root user
# who clones into /root or /tmp, where the lab guests have tmpfs of their own, builds and
# runs the suite from that clone with the clone's own binaries (their build-tree paths
# are compiled in, so nothing from the outer tree is used).
#
#   tests/lab/from_clone.sh PARENT SCRIPT [ARGS...]
#     PARENT  an existing directory the clone goes under (mktemp -d PARENT/fabricctl-clone.XXXX)
#     SCRIPT  a path inside the tree (e.g. tests/lab/ci_pipeline.sh), run from the clone
#             with FCTL_BUILD_DIR set to the clone's build
#
# The clone is of the committed tree (HEAD) when the tree is a git checkout, else a copy
# without build directories. It is removed at exit, whatever happened. Exits with the
# script's status; 2 for usage, 1 when the clone cannot be made or built (never a skip).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
usage() { echo "usage: tests/lab/from_clone.sh PARENT SCRIPT [ARGS...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
PARENT=$1 SCRIPT=$2
shift 2
[ -d "$PARENT" ] || { echo "from_clone: $PARENT: no such directory" >&2; exit 2; }
[ -f "$ROOT/$SCRIPT" ] || { echo "from_clone: $SCRIPT: not in $ROOT" >&2; exit 2; }

C=$(mktemp -d "$PARENT/fabricctl-clone.XXXXXX") || { echo "from_clone: mktemp in $PARENT failed" >&2; exit 1; }
cleanup() { rm -rf "$C"; }
trap cleanup EXIT
case $C in "$(realpath "$PARENT")"/* | "$PARENT"/*) ;; *)
	echo "from_clone: $C is not under $PARENT" >&2
	exit 1
	;;
esac

if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	git clone -q --no-hardlinks "$ROOT" "$C/src" || { echo "from_clone: git clone failed" >&2; exit 1; }
	echo "from_clone: $(git -C "$C/src" rev-parse --short HEAD) cloned into $C/src"
else
	mkdir "$C/src" && tar -C "$ROOT" --exclude='./build*' -cf - . | tar -C "$C/src" -xf - ||
		{ echo "from_clone: copying the tree failed" >&2; exit 1; }
	echo "from_clone: the tree copied into $C/src (not a git checkout)"
fi
cd "$C/src" || exit 1
# the programs the lab suites run, with the test hooks the lab's fault cases use; through
# scripts/test.sh's compiler cache when it gives one (FCTL_CCACHE_DIR: the same options as
# its main build, so only what differs by path is compiled again)
launcher=()
if [ -n "${FCTL_CCACHE_DIR:-}" ] && command -v ccache >/dev/null; then
	launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
	export CCACHE_DIR=$FCTL_CCACHE_DIR CCACHE_BASEDIR=$C/src CCACHE_NOHASHDIR=1
fi
if ! { cmake -S . -B build -DFCTL_WERROR=ON -DFCTL_TEST_HOOKS=ON "${launcher[@]}" >/dev/null &&
	cmake --build build -j "${FCTL_JOBS:-$(nproc)}" --target fabricctl fabricctl-keymgr fabricctl-probe >/dev/null; }; then
	echo "from_clone: building in $C/src failed" >&2
	exit 1
fi
[ ${#launcher[@]} -gt 0 ] && echo "from_clone: compiler cache: $(ccache --print-stats 2>/dev/null |
	awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
		$1 == "cache_miss" { m = $2 } END { printf "%d hits, %d misses (the whole run)", h, m }')"
echo "from_clone: built in $C/src/build; running $SCRIPT from there"
FCTL_BUILD_DIR=$C/src/build bash "$C/src/$SCRIPT" "$@"
