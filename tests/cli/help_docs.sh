#!/bin/sh
# SPDX-License-Identifier: MIT
# fabricctl help --man / --bash-completion (fabricctl/help_gen.c): every command has a
# page groff reads without a warning, whose text is the help text (each option the
# help names is on the page), and the completion loads in bash and offers the
# commands and a command's options. Usage: help_docs.sh FABRICCTL
set -u
F=$1
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
P=0 N=0
ok() { echo "PASS $1"; P=$((P + 1)); }
no() { echo "FAIL $1${2:+: $2}"; N=$((N + 1)); }
sh "$(dirname "$0")/../../scripts/gen-docs.sh" "$F" "$T/doc" || { echo "gen-docs failed"; exit 1; }
cmds=$("$F" help --commands)
[ "$(echo "$cmds" | wc -l)" -ge 10 ] && ok commands-listed || no commands-listed "$cmds"
for c in "" $cmds; do
	page=$T/doc/man8/fabricctl${c:+-$c}.8
	w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
	[ -z "$w" ] && ok "groff-clean ${c:-main}" || no "groff-clean ${c:-main}" "$w"
	[ -z "$c" ] && continue
	text=$(MANWIDTH=200 man -l "$page" 2>/dev/null | col -b)
	miss=
	for o in $("$F" help "$c" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		# (an option is letters and dashes: the same as grep -q, without two processes each)
		case $text in *"$o"*) ;; *) miss="$miss $o" ;; esac
	done
	[ -z "$miss" ] && ok "page-has-options $c" || no "page-has-options $c" "$miss"
done
"$F" help --man nosuch >/dev/null 2>&1
[ $? -eq 2 ] && ok man-unknown-command-usage || no man-unknown-command-usage
# the script runs the binary it completes for (COMP_WORDS[0]: here $F, not on PATH);
# tests/cli/complete.sh checks its options against the parsers
out=$(bash -c ". '$T/doc/fabricctl.bash' && complete -p fabricctl &&
	COMP_WORDS=('$F' va) COMP_CWORD=1 && _fabricctl && echo \"\${COMPREPLY[*]}\" &&
	COMP_WORDS=('$F' apply --dr) COMP_CWORD=2 && _fabricctl && echo \"\${COMPREPLY[*]}\" &&
	COMP_WORDS=('$F' audit ver) COMP_CWORD=2 && _fabricctl && echo \"\${COMPREPLY[*]}\"" 2>&1)
[ "$out" = "complete -o default -F _fabricctl fabricctl
validate
--dry-run
verify" ] && ok completion || no completion "$out"
echo "help_docs: $P passed, $N failed"
[ $N -eq 0 ]
