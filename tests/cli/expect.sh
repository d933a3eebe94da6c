# SPDX-License-Identifier: MIT
# The checks of the CLI tests that run fabricctl and match its output, sourced (sh): the
# script sets F (fabricctl) and T (its scratch directory) first, and prints
# "NAME: $P passed, $N failed" at its end.
#   ok NAME | no NAME [WHY]: count a pass or a failure (a failure shows stderr)
#   run NAME WANT_RC ERE|- ARGS...: fabricctl ARGS; the exit code, and a line of its
#   stderr+stdout matching ERE (- for any)
P=0 N=0
ok() { echo "PASS: $1"; P=$((P + 1)); }
no() {
	echo "FAIL: $1${2:+: $2}"
	N=$((N + 1))
	sed 's/^/    ! /' "$T/err" | head -5
}
run() {
	name=$1 want=$2 pat=$3
	shift 3
	"$F" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	if [ $rc -ne "$want" ]; then
		no "$name" "exit $rc, expected $want"
	elif [ "$pat" != - ] && ! cat "$T/err" "$T/out" | grep -Eq -- "$pat"; then
		no "$name" "no line matches /$pat/"
	else
		ok "$name"
	fi
}
