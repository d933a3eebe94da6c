#!/bin/sh
# SPDX-License-Identifier: MIT
# Makes the manual pages and the bash completion from the command table of the
# fabricctl binary given (`fabricctl help --man`, `help --bash-completion`), so they
# always say what `fabricctl help` says. The build runs it (fabricctl/CMakeLists.txt).
#   gen-docs.sh FABRICCTL OUTDIR   -> OUTDIR/man8/fabricctl*.8, OUTDIR/fabricctl.bash
set -eu
F=$1 OUT=$2
mkdir -p "$OUT/man8"
rm -f "$OUT"/man8/fabricctl*.8
"$F" help --man >"$OUT/man8/fabricctl.8"
for c in $("$F" help --commands); do
	"$F" help --man "$c" >"$OUT/man8/fabricctl-$c.8"
done
"$F" help --bash-completion >"$OUT/fabricctl.bash"
