#!/bin/sh
# SPDX-License-Identifier: MIT
# The bash completion offers exactly the options each command's parser takes (issue #33).
# For every command fabricctl parses itself, each audit subcommand, and the remote form
# (--target) of the commands that have one, the options `fabricctl __complete` offers are
# tried against the parser one by one ('CMD OPTION=1 --help', or 'CMD OPTION --help' for
# one that takes no value: taken when the parser reaches --help and prints the usage). An
# offered option must be taken; an option any other form offers, which this one does not,
# must be refused. Then the script itself, in bash.
#
# usage: tests/cli/complete.sh FABRICCTL
set -u
F=${1:-build/fabricctl/fabricctl}
case $F in /*) ;; *) F=$(pwd)/$F ;; esac
T=$(mktemp -d /tmp/fctl-complete.XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT INT TERM
cd "$T" || exit 2
export NO_COLOR=1
P=0 N=0
ok() { echo "PASS: $1"; P=$((P + 1)); }
no() { echo "FAIL: $1${2:+: $2}"; N=$((N + 1)); }

# parsed by other programs (lab.sh, fabricctl-keymgr, fabricctl-probe): their completion is
# what their help names; help takes no options
EXTERNAL="lab rotate keys probe help"

# taken OUT WORDS...: whether the parser of the form WORDS takes option $opt (OUT: a
# scratch file). Builtins only but for fabricctl itself: this runs thousands of times.
taken() {
	o=$1
	shift
	"$F" "$@" "$opt=1" --help >"$o" 2>"$o.err" </dev/null
	rc=$?
	e=
	[ $rc -eq 0 ] || IFS= read -r e <"$o.err"
	case $e in
	*"unknown option"*)
		# one that picks another parser (--fabric) is unknown to the first with a value:
		# tried without one, if it is one of those (pass 1 tries every offered option)
		case " $DISPATCH " in *" $opt "*) ;; *) [ -z "${PASS1:-}" ] && return 1 ;; esac
		"$F" "$@" "$opt" --help >"$o" 2>"$o.err" </dev/null
		rc=$?
		[ -n "${PASS1:-}" ] && [ $rc -eq 0 ] && echo "$opt" >>"$T/dispatch.$form_i" ;;
	*"takes no argument"*) # a flag: without a value
		"$F" "$@" "$opt" --help >"$o" 2>"$o.err" </dev/null
		rc=$? ;;
	esac
	first=
	[ $rc -eq 0 ] && IFS= read -r first <"$o"
	case $first in "usage: "*) return 0 ;; esac
	return 1
}

# the forms: "CMD", "CMD SUB", "CMD --target x", one a line
: >"$T/forms"
for c in $("$F" help --commands); do
	case " $EXTERNAL " in *" $c "*) continue ;; esac
	if [ "$c" = audit ]; then
		# its options follow a subcommand ('audit --json' takes --json for one)
		for s in $("$F" __complete audit ""); do
			case $s in -*) ;; *) echo "audit $s" >>"$T/forms" ;; esac
		done
		continue
	fi
	echo "$c" >>"$T/forms"
	if "$F" "$c" --target=x --help >/dev/null 2>&1 </dev/null; then
		echo "$c --target x" >>"$T/forms"
	fi
done
[ "$(wc -l <"$T/forms")" -ge 25 ] && ok "forms found ($(wc -l <"$T/forms"))" ||
	no "forms found" "$(cat "$T/forms")"

# what each form offers, and every option any form offers
i=0
while read -r form; do
	i=$((i + 1))
	# shellcheck disable=SC2086
	"$F" __complete $form -- | sort -u >"$T/offer.$i"
done <"$T/forms"
cat "$T"/offer.* | sort -u >"$T/universe"
[ "$(wc -l <"$T/universe")" -ge 60 ] && ok "options offered ($(wc -l <"$T/universe"))" ||
	no "options offered" "$(wc -l <"$T/universe")"

# check_form I FORM: every option of the universe against the parser of FORM
# Pass 1 (PASS1 set): the options FORM offers, each must be taken; it also finds those
# that pick another parser (unknown with a value, taken without: --fabric) into
# dispatch.I. Pass 2: the options FORM does not offer, each must be refused; one run
# each (an unknown option is refused), two for the options pass 1 found.
check_form() {
	bad=""
	form_i=$1
	offered=" $(tr '\n' ' ' <"$T/offer.$1")"
	words=$(echo "$2" | sed 's/--target x/--target=x/')
	while read -r opt; do
		case $offered in *" $opt "*) want=taken ;; *) want=refused ;; esac
		if [ -n "${PASS1:-}" ]; then [ $want = taken ] || continue; else
			[ $want = refused ] || continue; fi
		# shellcheck disable=SC2086
		if taken "$T/run.$1" $words; then got=taken; else got=refused; fi
		[ $want = $got ] || bad="$bad $opt($got, offered: $([ $want = taken ] && echo yes || echo no))"
	done <"$T/universe"
	[ -z "$bad" ] || echo "$bad" >>"$T/bad.$1"
}
# two at a time (forms are independent)
each_form() {
	i=0
	while read -r form; do
		i=$((i + 1))
		check_form $i "$form" &
		[ $((i % 2)) -eq 0 ] && wait
	done <"$T/forms"
	wait
}
DISPATCH=
PASS1=1
each_form
PASS1=
DISPATCH=$(cat "$T"/dispatch.* 2>/dev/null | sort -u | tr '\n' ' ')
echo "options that pick another parser: ${DISPATCH:-none}"
each_form
i=0
while read -r form; do
	i=$((i + 1))
	if [ -s "$T/bad.$i" ]; then echo "FAIL: completion = parser: $form:$(tr '\n' ' ' <"$T/bad.$i")"
	else echo "PASS: completion = parser: $form"; fi >"$T/result.$i"
done <"$T/forms"
i=0
while read -r form; do
	i=$((i + 1))
	if grep -q '^PASS' "$T/result.$i" 2>/dev/null; then ok "completion = parser: $form"; else
		no "completion = parser: $form" "$(cut -d: -f3- "$T/result.$i" 2>/dev/null)"; fi
done <"$T/forms"

# the script in bash: it asks the binary it completes for
"$F" help --bash-completion >"$T/fabricctl.bash"
comp() {
	bash -c ". '$T/fabricctl.bash' && COMP_WORDS=($*) && COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)) &&
		_fabricctl && echo \"\${COMPREPLY[*]}\"" 2>&1
}
expect() {
	got=$(comp "$2")
	[ "$got" = "$3" ] && ok "$1" || no "$1" "got '$got', want '$3'"
}
expect "apply --t: only --target (no --to, no --timeout)" "'$F' apply --t" "--target"
expect "apply --target H --t: the remote form's" "'$F' apply --target h1 --t" \
	"--target --timeout"
expect "rollback --t: --to and --target" "'$F' rollback --t" "--to --target"
expect "audit verify --pr: not witness's --proof" "'$F' audit verify --pr" \
	"--profile-name --profile-version --profile-sha256"
expect "audit witness --pr: --proof" "'$F' audit witness --pr" "--proof"
expect "plan --o: --offline --out" "'$F' plan --o" "--offline --out"
expect "commands" "'$F' va" "validate"
expect "subcommands" "'$F' audit ver" "verify"
expect "a value: nothing (file names)" "'$F' apply --state-dir ''" ""
echo "complete: $P passed, $N failed"
[ $N -eq 0 ]
