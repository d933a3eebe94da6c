#!/bin/bash
# SPDX-License-Identifier: MIT
# The agent's systemd unit, read by systemd's own tools: `systemd-analyze verify`
# accepts it (with ExecStart pointed at this build's fabricctl), and `systemd-analyze
# security --offline` finds every sandboxing setting the agent's review asked for
# in force, with an overall exposure of at most 3.0 (it was 6.1 before).
# Prints PASS/FAIL per check and "unit_hardening: N passed, M failed".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(realpath -m -- "${FCTL_BUILD_DIR:-$ROOT/build}")
UNIT=$ROOT/scripts/fabricctl-agent.service
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
command -v systemd-analyze >/dev/null || { echo "unit_hardening: systemd-analyze missing" >&2; exit 2; }
[ -x "$BUILD/fabricctl/fabricctl" ] || { echo "unit_hardening: no $BUILD/fabricctl/fabricctl" >&2; exit 2; }
T=$(mktemp -d) || exit 2
trap 'rm -rf -- "$T"' EXIT

sed "s#^ExecStart=/usr/sbin/fabricctl#ExecStart=$BUILD/fabricctl/fabricctl#" "$UNIT" >"$T/fabricctl-agent.service"
if out=$(systemd-analyze verify "$T/fabricctl-agent.service" 2>&1) && [ -z "$out" ]; then
	pass verify
else
	fail verify "$out"
fi

systemd-analyze security --offline=true --json=short "$UNIT" >"$T/sec.json" 2>"$T/sec.err" ||
	fail security-json "$(cat "$T/sec.err")"
for want in SystemCallFilter=~@clock SystemCallFilter=~@module SystemCallFilter=~@mount \
	SystemCallFilter=~@reboot SystemCallFilter=~@swap SystemCallFilter=~@debug \
	SystemCallArchitectures= MemoryDenyWriteExecute= RestrictNamespaces=~user \
	RestrictNamespaces=~net RestrictNamespaces=~mnt ProtectKernelTunables= ProtectKernelLogs= \
	ProtectClock= PrivateDevices= RestrictSUIDSGID= LockPersonality= ProtectProc= UMask= \
	NoNewPrivileges= ProtectSystem= ProtectHome= PrivateTmp= ProtectKernelModules=; do
	echo "$want"
done >"$T/want"
# one pass of Debian's python3 over the JSON for all of them ("WANT SET" a line, in order;
# a pyenv shim first in PATH costs about 0.6 s of CPU a start, and this ran once per setting)
"${FCTL_PYTHON:-/usr/bin/python3}" -c 'import json,sys
d = {x["name"]: x["set"] for x in json.load(open(sys.argv[1]))}
for w in open(sys.argv[2]).read().split(): print(w, d.get(w, "missing"))' "$T/sec.json" "$T/want" >"$T/set" 2>&1 ||
	fail security-json-read "$(head -3 "$T/set")"
while read -r want; do
	set=$(awk -v w="$want" '$1 == w { print $2; exit }' "$T/set")
	[ "$set" = True ] && pass "set $want" || fail "set $want" "${set:-missing}"
done <"$T/want"
if grep -qx 'LimitCORE=0' "$UNIT"; then pass "LimitCORE=0"; else fail "LimitCORE=0"; fi
level=$(systemd-analyze security --offline=true "$UNIT" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
echo "  overall exposure: $level"
if [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l <= 3.0) }'; then
	pass "exposure <= 3.0"
else
	fail "exposure <= 3.0" "$level"
fi
echo "unit_hardening: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
