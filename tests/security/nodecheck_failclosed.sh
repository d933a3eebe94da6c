#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding (issue #29, 3) "the Slurm gate fails open": when fctl_nodecheck_run returned an
# error, node-check --slurm exited 2 before acting, so scontrol was never called and the
# node stayed IDLE; a check that hung was killed by slurmd at 60 s, never drained, and the
# documented wrapper (flock -n ... || exit 0) then skipped every later round; a node that
# never had a profile drained a fleet that was rolling the check out, with no way to say
# so. Here, without Slurm, against a stand-in scontrol first in PATH that records its
# arguments (as tests/cli/node_check.sh does):
#   - an error (netlink in a namespace that does not exist) drains, the reason says so;
#   - a probe record that blocks (a FIFO) is killed at --timeout and drains; a check
#     that crashes (SIGSEGV) drains;
#   - docs/slurm.md's wrapper, its lock held by a hung check, drains;
#   - a host that never had a profile drains by default; --allow-never-applied passes it
#     with an audit record, not a host whose history has applies, and not when the record
#     cannot be written.
# Prints PASS/FAIL per check, "nodecheck_failclosed: N passed, M failed".
set -uo pipefail
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
die() { echo "nodecheck_failclosed: cannot run: $*" >&2; exit 2; }
[ -x "$F" ] || die "no $F (build first)"
command -v flock >/dev/null || die "no flock"
command -v "$PY" >/dev/null || die "no python3"
unset FCTL_AUDIT_LOG SLURMD_NODENAME
export NO_COLOR=1
T=$(mktemp -d /tmp/fctl-sec-nodecheck.XXXXXX) || die "mktemp"
HOLDER=
cleanup() {
	[ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null && wait "$HOLDER" 2>/dev/null
	rm -rf -- "$T"
}
trap cleanup EXIT

# the stand-in scontrol: "show node" prints an idle node, every call is recorded
mkdir "$T/bin"
cat >"$T/bin/scontrol" <<SH
#!/bin/sh
echo "\$*" >>"$T/calls"
[ "\$1" = show ] && printf 'NodeName=n1 Arch=x86_64\n   State=IDLE ThreadsPerCore=1\n'
exit 0
SH
chmod +x "$T/bin/scontrol"
ln -s "$(readlink -f "$F")" "$T/bin/fabricctl"
# nc NAME ARGS...: node-check --slurm --node n1 ARGS with the stand-in, at most 60 s;
# output in $T/out, exit code in RC, scontrol's calls in $T/calls
nc() {
	: >"$T/calls"
	PATH="$T/bin:$PATH" timeout -k 5 60 "$F" node-check --slurm --node n1 "$@" >"$T/out" 2>&1
	RC=$?
}
drained() { # NAME REASON-PREFIX: the last call drained n1 with a reason starting so
	if grep -q "^update nodename=n1 state=drain reason=fabricctl: $2" "$T/calls"; then pass "$1"; else
		fail "$1" "exit $RC, calls: $(tr '\n' '|' <"$T/calls") out: $(head -c 300 "$T/out")"
	fi
}
not_drained() {
	if ! grep -q "update" "$T/calls"; then pass "$1"; else fail "$1" "calls: $(tr '\n' '|' <"$T/calls")"; fi
}

# a profile whose host h3 has a port but no link: it applies with no netlink write
"$PY" - "$ROOT/profiles/lab-pair.yaml" "$T/p.yaml" <<'PY'
import sys
s = open(sys.argv[1]).read()
s = s.replace("  - name: h2\n", "  - name: h3\n    ports:\n      - { name: eth0, mac: \"52:54:00:fa:03:00\", mtu: 1500 }\n  - name: h2\n", 1)
open(sys.argv[2], "w").write(s)
PY
mkdir -p "$T/keys" && (umask 077 && od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$T/keys/lab-pair.key")
S=$T/state
"$F" apply --host h3 --state-dir "$S" --audit-log "$T/apply-audit/audit.log" "$T/p.yaml" >"$T/out" 2>&1 ||
	die "apply: $(cat "$T/out")"
nc --host h3 --state-dir "$S"
[ $RC = 0 ] && not_drained healthy-control-not-drained || fail healthy-control-not-drained "exit $RC: $(cat "$T/out")"

# --- an error drains -------------------------------------------------------------------------
nc --host h3 --state-dir "$S" --netns fctl-no-such-netns-$$
drained error-drains "node-check could not run: "
if [ $RC -ne 0 ]; then pass error-exit-non-zero; else fail error-exit-non-zero "exit 0"; fi

# --- a hang is bounded by a deadline that drains ----------------------------------------------
mkdir -p "$S/probe" && mkfifo "$S/probe/last" # reading the probe record blocks for good
t0=$SECONDS
nc --host h3 --state-dir "$S" --timeout 2s
if [ $((SECONDS - t0)) -le 20 ] && [ $RC != 124 ] && [ $RC != 137 ]; then pass hang-ends-at-deadline; else
	fail hang-ends-at-deadline "$((SECONDS - t0)) s, exit $RC"
fi
drained hang-drains "node-check did not finish within 2 s"
# the hung child was killed: nobody reads the FIFO any more (a writer would block)
if timeout 2 sh -c "echo x >'$S/probe/last'"; then fail hung-child-killed "the FIFO still has a reader"; else
	pass hung-child-killed
fi
# a check that crashes gives no verdict either: the check's process (the supervisor's
# child, under timeout(1)) killed by SIGSEGV, by its PID
: >"$T/calls"
PATH="$T/bin:$PATH" timeout -k 5 40 "$F" node-check --slurm --node n1 --host h3 --state-dir "$S" \
	--timeout 30s >"$T/out" 2>&1 &
TO=$!
CHECK=
for _ in $(seq 50); do
	SUP=$(pgrep -P "$TO" | head -1)
	[ -n "$SUP" ] && CHECK=$(pgrep -P "$SUP" | head -1)
	[ -n "$CHECK" ] && break
	sleep 0.1
done
sleep 0.5
[ -n "$CHECK" ] && kill -SEGV "$CHECK"
wait "$TO"
RC=$?
drained crash-drains "node-check \\(was killed by signal\\|ended without a verdict\\)" # SIGSEGV, or ASan's report
rm -f "$S/probe/last"

# --- docs/slurm.md's wrapper, its lock held by a hung check --------------------------------
awk '/^```sh$/ { p = 1; next } p && /^```$/ { exit } p { print }' "$ROOT/docs/slurm.md" >"$T/wrapper.sh"
grep -q "fabricctl-healthcheck" "$T/wrapper.sh" || fail wrapper-found "no wrapper in docs/slurm.md"
# here: its PATH with the stand-in, its lock in $T, a 1 s wait for the lock
sed -i -e "s|^export PATH=.*|export PATH=$T/bin:\$PATH|" -e "s|/run/fabricctl-nodecheck.lock|$T/lock|" \
	-e 's/flock -w [0-9]* 9/flock -w 1 9/' "$T/wrapper.sh"
# the hung check: a process that holds the lock (its PID is the one holding it)
(exec 9>"$T/lock" && flock 9 && exec sleep 120) >/dev/null 2>&1 &
HOLDER=$!
sleep 0.5
: >"$T/calls"
SLURMD_NODENAME=n1 timeout -k 5 60 sh "$T/wrapper.sh" >"$T/out" 2>&1
RC=$?
drained wrapper-lock-held-drains ""
kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
HOLDER=

# --- a host that never had a profile ----------------------------------------------------------
nc --host h3 --state-dir "$T/never"
drained never-applied-drains-by-default "no profile applied on this host"
nc --host h3 --state-dir "$T/never" --allow-never-applied --audit-log "$T/audit/audit.log"
if [ $RC = 0 ]; then pass never-applied-allowed-healthy; else fail never-applied-allowed-healthy "exit $RC: $(head -c 300 "$T/out")"; fi
not_drained never-applied-allowed-not-drained
if grep -q '"action":"node-check".*"result":"allowed".*passed by --allow-never-applied' "$T/audit/audit.log" 2>/dev/null; then
	pass never-applied-allowed-audited
else
	fail never-applied-allowed-audited "$(cat "$T/audit/audit.log" 2>&1 | tail -2)"
fi
# the audit record cannot be written: the pass does not hold
: >"$T/not-a-dir"
nc --host h3 --state-dir "$T/never" --allow-never-applied --audit-log "$T/not-a-dir/audit.log"
drained never-applied-unaudited-drains "no profile ever applied, and --allow-never-applied cannot be audited"
# a host that had profiles applied, its profile now unreadable: not "never applied"
"$F" apply --host h3 --state-dir "$T/lost" --audit-log "$T/apply-audit/audit.log" "$T/p.yaml" >"$T/out" 2>&1 ||
	die "apply: $(cat "$T/out")"
rm -f "$T/lost/history/"*.yaml # the index (one apply) stays, its stored copy is gone
nc --host h3 --state-dir "$T/lost" --allow-never-applied --audit-log "$T/audit/audit.log"
drained history-with-applies-still-drains "no profile applied on this host"

echo "nodecheck_failclosed: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ] && [ $PASS -gt 0 ]
