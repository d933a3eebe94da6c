#!/bin/bash
# SPDX-License-Identifier: MIT
# lab.sh runs as root and trusts its lab directory (lock, nics.tsv, lab.state, the
# guests' job queues). A directory another user can prepare must be refused before
# lab.sh opens anything in it: owned by another user, writable by others, a symlink.
# And a new directory is made 0700. No VM is booted: every case is refused first.
# Prints PASS/FAIL per check, "lab_dir: N passed, M failed"; needs root.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LAB=$ROOT/scripts/lab.sh
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
[ "$(id -u)" = 0 ] || { echo "lab_dir: needs root" >&2; exit 2; }
T=$(mktemp -d /var/tmp/fctl-sec-labdir.XXXXXX) || exit 2
trap 'rm -rf -- "$T"' EXIT
chmod 0755 "$T"

# refused: the command exits non-zero, names the reason, creates nothing inside
refused() { # name, dir, expected message part, lab.sh verb...
	local name=$1 dir=$2 want=$3 out rc
	shift 3
	out=$(bash "$LAB" "$@" --dir "$dir" 2>&1)
	rc=$?
	# a lab.sh that failed to refuse booted guests there: stop them (a lab.sh that
	# refuses the directory refuses this too)
	[ "$1" = up ] && bash "$LAB" down --dir "$dir" >/dev/null 2>&1
	if [ $rc -ne 0 ] && grep -q -- "$want" <<<"$out" && [ ! -e "$T/victim/.lock" ] &&
		{ [ -L "$dir" ] || [ ! -e "$dir/.lock" ]; }; then
		pass "$name"
	else
		fail "$name" "exit $rc: $out"
	fi
}

# 1. a directory a local user made first (the predictable /var/tmp/fabricctl-lab)
mkdir "$T/user-owned" && chown 65534:65534 "$T/user-owned"
refused owned-by-other-user "$T/user-owned" "belongs to uid 65534" down
refused owned-by-other-user-up "$T/user-owned" "belongs to uid 65534" up --hosts 1
# 2. root's, but writable by others
mkdir "$T/open" && chmod 0777 "$T/open"
refused writable-by-others "$T/open" "writable by group or others" down
# 3. a symlink to a directory the attacker chose
mkdir "$T/victim"
ln -s "$T/victim" "$T/link"
refused symlink "$T/link" "symbolic link" down
refused symlink-up "$T/link" "symbolic link" up --hosts 1
# 4. a new directory is root's, mode 0700 (lab.sh's own function, run alone: down
# would remove the empty directory again)
(
	die() { echo "$*" >&2; exit 1; }
	eval "$(sed -n '/^secure_lab_dir() {/,/^}/p' "$LAB")"
	secure_lab_dir "$T/fresh/lab"
)
if [ "$(stat -c '%u %a' "$T/fresh/lab" 2>/dev/null)" = "0 700" ]; then
	pass new-dir-is-0700
else
	fail new-dir-is-0700 "$(stat -c '%u %a' "$T/fresh/lab" 2>&1)"
fi
# 5. the accepted case still works: a root-owned 0700 directory
mkdir -m 0700 "$T/good"
if bash "$LAB" down --dir "$T/good" >/dev/null 2>&1; then pass root-0700-accepted; else fail root-0700-accepted; fi

echo "lab_dir: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
