#!/bin/sh
# SPDX-License-Identifier: MIT
# One keymgr per state directory: while another rotate, watch or recover holds
# STATE_DIR/lock, rotate and recover refuse (exit 2, the holder's pid named) and
# write nothing (no journal, no audit record); status still answers; once the holder
# is gone the lock is taken again.
#   keymgr_lock.sh KEYMGR REPO
set -eu
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
KM=$1
REPO=$2
T=$(mktemp -d)
HOLDER=
trap '[ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "keymgr_lock: FAIL: $*" >&2; exit 1; }

"$PY" "$REPO/bench/gen_rotation_profile.py" "$T/p" --links 2 --versions 2 >/dev/null
P=$T/p/rot.yaml
export FCTL_AUDIT_LOG="$T/audit.log"
mkdir -m 700 "$T/state"
# the holder: one process (flock --no-fork execs sleep, which holds the lock itself),
# as a running keymgr would; the pid in the file is what keymgr reports
echo 4242 >"$T/state/lock"
flock --no-fork "$T/state/lock" sleep 60 &
HOLDER=$!
held=0
for _ in $(seq 50); do
	flock -n "$T/state/lock" true || { held=1; break; }
	sleep 0.1
done
[ "$held" = 1 ] || fail "the holder did not take the lock"

for cmd in rotate recover; do
	rc=0
	if [ "$cmd" = rotate ]; then set -- --all; else set --; fi
	"$KM" "$cmd" "$@" --timeout 1 --state-dir "$T/state" "$P" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" = 2 ] || fail "$cmd under a held lock: exit $rc, expected 2: $(cat "$T/err")"
	grep -q "another keymgr (rotate, watch or recover) holds '$T/state/lock', pid 4242" "$T/err" ||
		fail "$cmd: the refusal does not name the lock and its holder: $(cat "$T/err")"
done
[ -z "$(find "$T/state" -name '*journal*')" ] || fail "a refused run wrote a journal"
[ ! -s "$T/audit.log" ] || fail "a refused run wrote an audit record"
# status takes no lock: it reads (its agents are unreachable here: exit 2, but a JSON answer)
"$KM" status --json --timeout 1 --state-dir "$T/state" "$P" >"$T/out" 2>"$T/err" || :
! grep -q "another keymgr" "$T/err" || fail "status refused by the lock"
jq -e 'length == 2' "$T/out" >/dev/null || fail "status printed no answer: $(cat "$T/out" "$T/err")"

kill "$HOLDER"
wait "$HOLDER" 2>/dev/null || :
HOLDER=
rc=0
"$KM" rotate --all --timeout 1 --state-dir "$T/state" "$P" >"$T/out" 2>"$T/err" || rc=$?
! grep -q "another keymgr" "$T/err" || fail "the lock was not free after its holder ended"
grep -qv '^4242$' "$T/state/lock" || fail "keymgr did not write its pid into the lock"
echo "keymgr_lock: ok (held: exit 2 for rotate and recover; free again: exit $rc)"
