#!/bin/sh
# SPDX-License-Identifier: MIT
# fabricctl node-check without a kernel that has MACsec: usage and exit codes, no profile
# applied (unhealthy), an applied profile that gives this host no SecY (healthy), the probe
# record (failed, too old, fresh, missing with --max-probe-age), --json, and --slurm
# against a stand-in scontrol first in PATH that records its arguments and answers from a
# node state file: drain with a "fabricctl:" reason, no drain over an admin's drain,
# resume only a node this check drained. The SecY checks and real Slurm run in the lab
# (tests/lab/slurm.sh). Prints PASS/FAIL per case; exits non-zero on any FAIL.
# usage: tests/cli/node_check.sh FABRICCTL SOURCE_DIR
set -u
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
FCTL=$1
SRC=$2
case $FCTL in /*) ;; *) FCTL=$(pwd)/$FCTL ;; esac
unset FCTL_AUDIT_LOG SLURMD_NODENAME
T=$(mktemp -d /tmp/fctl-nodecheck.XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT INT TERM
np=0 nf=0
ok() { np=$((np + 1)); echo "PASS: $1"; }
no() {
	nf=$((nf + 1))
	echo "FAIL: $1${2:+: $2}"
	sed 's/^/    | /' "$T/out" "$T/err" 2>/dev/null | head -20
}
# check NAME WANT_RC ARGS...
check() {
	name=$1 want=$2
	shift 2
	"$FCTL" node-check "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq "$want" ] && ok "$name (exit $rc)" || no "$name" "exit $rc, want $want"
}
has() { grep -q -- "$2" "$T/out" && ok "$1" || no "$1" "no '$2' in the output"; }

check usage-unknown-option 2 --nosuch
check usage-argument 2 extra
check usage-node-without-slurm 2 --node n1
check usage-bad-age 2 --max-probe-age soon
check none-applied 1 --state-dir "$T/empty"
has none-applied-says "no profile applied on this host"

# a profile whose host h3 has ports but no link: it applies here with no netlink write
"$PY" - "$SRC/profiles/lab-pair.yaml" "$T/p.yaml" <<'PY'
import sys
s = open(sys.argv[1]).read()
s = s.replace("  - name: h2\n", "  - name: h3\n    ports:\n      - { name: eth0, mac: \"52:54:00:fa:03:00\", mtu: 1500 }\n  - name: h2\n", 1)
open(sys.argv[2], "w").write(s)
PY
mkdir -p "$T/keys" && (umask 077 && od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$T/keys/lab-pair.key")
S=$T/state
if "$FCTL" apply --host h3 --state-dir "$S" --audit-log "$T/audit.log" "$T/p.yaml" >"$T/out" 2>"$T/err"; then
	ok applied-h3
else
	no applied-h3
fi
check healthy 0 --host h3 --state-dir "$S"
has healthy-names-profile "profile lab-pair version 1 applied"
has healthy-no-drift "no drift"
"$FCTL" node-check --host h3 --state-dir "$S" --json >"$T/out" 2>"$T/err"
jq -e '.healthy == true and .failed == 0 and .applied == true and .version == 1 and .secys == 0
	and ([.checks[].check] | index("drift") != null)' "$T/out" >/dev/null &&
	ok json-healthy || no json-healthy
check no-record-required 1 --host h3 --state-dir "$S" --max-probe-age 10m
has no-record-says "no probe record"

mkdir -p "$S/probe"
now=$(date +%s)
echo "fabricctl-probe-last format=1 time=$now.000 exit=1 peer=10.100.0.2:18515 link=h1-h2" >"$S/probe/last"
check probe-failed 1 --host h3 --state-dir "$S"
has probe-failed-says "failed its SLO (exit 1"
echo "fabricctl-probe-last format=1 time=$((now - 7200)).000 exit=0 peer=10.100.0.2:18515 link=h1-h2" >"$S/probe/last"
check probe-old 1 --host h3 --state-dir "$S" --max-probe-age 1h
has probe-old-says "s old (max 3600 s)"
check probe-old-no-limit 0 --host h3 --state-dir "$S"
echo "fabricctl-probe-last format=1 time=$now.000 exit=0 peer=10.100.0.2:18515 link=h1-h2" >"$S/probe/last"
check probe-fresh 0 --host h3 --state-dir "$S" --max-probe-age 1h
echo "garbage" >"$S/probe/last"
check probe-garbage 1 --host h3 --state-dir "$S"
rm -f "$S/probe/last"

# Slurm through a stand-in scontrol: "show node" prints $T/node, "update" is recorded
mkdir "$T/bin"
cat >"$T/bin/scontrol" <<SH
#!/bin/sh
echo "\$*" >>"$T/calls"
[ "\$1" = show ] && cat "$T/node"
exit 0
SH
chmod +x "$T/bin/scontrol"
node() { printf 'NodeName=n1 Arch=x86_64\n   State=%s ThreadsPerCore=1\n%s' "$1" "${2:+   Reason=$2
}" >"$T/node"; : >"$T/calls"; }
slurm() { PATH="$T/bin:$PATH" check "$@"; }
called() { grep -qx -- "$2" "$T/calls" && ok "$1" || no "$1" "calls: $(cat "$T/calls")"; }
none() { grep -q update "$T/calls" && no "$1" "calls: $(cat "$T/calls")" || ok "$1"; }

node IDLE
slurm slurm-drain 1 --slurm --node n1 --state-dir "$T/empty"
called slurm-drain-call "update nodename=n1 state=drain reason=fabricctl: no profile applied on this host"
has slurm-drain-says "slurm node n1: drained"
node IDLE+DRAIN "maintenance [admin@2026-12-01T10:00:00]"
slurm slurm-admin-drain-kept 1 --slurm --node n1 --state-dir "$T/empty"
none slurm-admin-drain-no-update
node IDLE+DRAIN "maintenance [admin@2026-12-01T10:00:00]"
slurm slurm-admin-drain-not-resumed 0 --slurm --node n1 --host h3 --state-dir "$S"
none slurm-admin-drain-no-resume
has slurm-admin-drain-says "none: drained by someone else (maintenance"
node IDLE+DRAIN "fabricctl: SecY ms100 is down [root@2026-12-01T10:00:00]"
slurm slurm-resume 0 --slurm --node n1 --host h3 --state-dir "$S"
called slurm-resume-call "update nodename=n1 state=resume"
node IDLE
slurm slurm-healthy-idle 0 --slurm --node n1 --host h3 --state-dir "$S"
none slurm-healthy-idle-no-update
node IDLE
SLURMD_NODENAME=n7 slurm slurm-node-from-env 1 --slurm --state-dir "$T/empty" --json
called slurm-node-from-env-call "update nodename=n7 state=drain reason=fabricctl: no profile applied on this host"
jq -e '.slurm.node == "n7" and .slurm.action == "drained" and .healthy == false' "$T/out" >/dev/null &&
	ok slurm-json || no slurm-json
cat >"$T/bin/scontrol" <<SH
#!/bin/sh
exit 1
SH
slurm slurm-scontrol-fails 2 --slurm --node n1 --state-dir "$T/empty"
echo "node_check: $np passed, $nf failed"
[ "$nf" -eq 0 ]
