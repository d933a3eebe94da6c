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

# A test build (-DFCTL_TEST_HOOKS=ON, what ctest runs) has `fabricctl __test-fork-server
# REQ REP`: each check_form starts one, and each run below is a fork of it running
# fabricctl's own dispatch on the words, instead of an exec paying the dynamic loading of
# libcrypto and libnl (about 10 ms of CPU each, thousands of times). Any other build: exec.
SRV=
if grep -qa __test-fork-server "$F"; then SRV=1; else
	echo "NOTE: $F has no __test-fork-server (a build without -DFCTL_TEST_HOOKS=ON): each run is an exec"
fi
# run OUT ARGS...: fabricctl ARGS, stdin /dev/null, stdout OUT, stderr OUT.err; rc: its exit
# status. A server that stops answering, or a word it cannot carry, is a failure of the form.
run() {
	ro=$1
	shift
	if [ -z "$SRV" ]; then
		"$F" "$@" >"$ro" 2>"$ro.err" </dev/null
		rc=$?
		return
	fi
	rl="$ro	$ro.err"
	for ra; do
		case $ra in *"	"*) echo " (a word with a tab: '$ra')" >>"$T/bad.$form_i" ;; esac
		rl="$rl	$ra"
	done
	printf '%s\n' "$rl" >&3
	read -r rc <&4
	case $rc in '' | *[!0-9]*)
		rc=255
		echo " (the fork server did not answer '$*')" >>"$T/bad.$form_i" ;;
	esac
}

# taken OUT WORDS...: whether the parser of the form WORDS takes option $opt (OUT: a
# scratch file). Builtins only but for fabricctl itself: this runs thousands of times.
taken() {
	o=$1
	shift
	run "$o" "$@" "$opt=1" --help
	e=
	[ $rc -eq 0 ] || IFS= read -r e <"$o.err"
	case $e in
	*"unknown option"*)
		# one that picks another parser (--fabric) is unknown to the first with a value:
		# tried without one, if it is one of those (pass 1 tries every offered option)
		case " $DISPATCH " in *" $opt "*) ;; *) [ -z "${PASS1:-}" ] && return 1 ;; esac
		run "$o" "$@" "$opt" --help
		[ -n "${PASS1:-}" ] && [ $rc -eq 0 ] && echo "$opt" >>"$T/dispatch.$form_i" ;;
	*"takes no argument"*) # a flag: without a value
		run "$o" "$@" "$opt" --help ;;
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
	if [ -n "$SRV" ]; then
		# the server's subshell holds both FIFOs open (so neither open below waits, and no
		# request is lost); should the server end before an empty line, the subshell takes
		# its place: one answer "x" for a request the server may have taken unanswered, then
		# "x" to each request. run counts "x" as a failure.
		q="$T/req.$1.${PASS1:-2}" r="$T/rep.$1.${PASS1:-2}"
		mkfifo "$q" "$r"
		(
			exec 5<>"$q" 6<>"$r"
			"$F" __test-fork-server "$q" "$r" </dev/null 2>>"$T/bad.$1" 5<&- 6>&- && exit 0
			echo " (the fork server exited $?)" >>"$T/bad.$1"
			echo x >&6
			while read -r l <&5 && [ -n "$l" ]; do echo x >&6; done
		) >/dev/null &
		srv=$!
		exec 3>"$q" 4<"$r"
	fi
	while read -r opt; do
		case $offered in *" $opt "*) want=taken ;; *) want=refused ;; esac
		if [ -n "${PASS1:-}" ]; then [ $want = taken ] || continue; else
			[ $want = refused ] || continue; fi
		# shellcheck disable=SC2086
		if taken "$T/run.$1" $words; then got=taken; else got=refused; fi
		[ $want = $got ] || bad="$bad $opt($got, offered: $([ $want = taken ] && echo yes || echo no))"
	done <"$T/universe"
	if [ -n "$SRV" ]; then
		# the end of the requests; then the subshell is stopped, had it taken the server's
		# place (every answer is in: how the server ends after them changes no result)
		echo >&3
		exec 3>&- 4<&-
		kill $srv 2>/dev/null
		wait $srv 2>/dev/null # (dash says "Terminated" when it was still waiting for the server)
	fi
	[ -z "$bad" ] || echo "$bad" >>"$T/bad.$1"
	: >"$T/ran.$1.${PASS1:-2}" # this pass of the form ran to its end
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
	if [ ! -e "$T/ran.$i.1" ] || [ ! -e "$T/ran.$i.2" ]; then
		no "completion = parser: $form" "a pass of its check did not run to its end"
	elif grep -q '^PASS' "$T/result.$i" 2>/dev/null; then ok "completion = parser: $form"; else
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
