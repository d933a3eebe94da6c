#!/bin/sh
# SPDX-License-Identifier: MIT
# The live plan against a real kernel, in a network namespace of its own (unshare -rn): a
# VLAN on a port the host does not have is a parent-missing warning that names the port
# and the profile's file:line (text on stderr, --json's findings), plan's exit unchanged;
# apply refuses it (2) and creates nothing. Saved plans: plan --out writes the plan with
# key ids only; apply --plan applies it while the profile, the host and the live state are
# those it was made from, and refuses (1, nothing changed) a changed profile, another host,
# a changed live state (the port went away), an edited file; an unreadable one is 2.
# Fails (exit 1) when no network namespace can be made: a test that cannot run never
# passes by skipping.
#
# usage: tests/cli/live_plan.sh FABRICCTL
set -u
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
F=${1:-build/fabricctl/fabricctl}
case $F in /*) ;; *) F=$(pwd)/$F ;; esac
if [ "${FCTL_LIVE_PLAN_NETNS:-}" != 1 ]; then
	if ! unshare -rn true 2>/dev/null; then
		echo "FAIL: cannot make a network namespace (unshare -rn): this test cannot run"
		exit 1
	fi
	FCTL_LIVE_PLAN_NETNS=1 exec unshare -rn sh "$0" "$F"
fi
T=$(mktemp -d /tmp/fctl-live-plan.XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT INT TERM
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$T" || exit 2
export NO_COLOR=1
unset FCTL_AUDIT_LOG FCTL_CHANGE_ID
# ok, no, run: the checks (tests/cli/expect.sh)
. "$HERE/expect.sh"
json() { "$PY" -c "import json,sys; d=json.load(open('$T/out')); print($1)" 2>&1; }

KEY=00112233445566778899aabbccddeeff
mkdir keys && printf '%s\n' $KEY >keys/k.key && chmod 600 keys/k.key
cat >p.yaml <<'EOF'
schema: 1
profile: { name: live-test, version: 1 }
macsec:
  pol:
    cipher: gcm-aes-128
    icv_len: 16
    encrypt: true
    replay_protect: true
    replay_window: 0
    validate: strict
    send_sci: true
    port: 1
    key: { backend: file, id: keys/k.key }
hosts:
  - name: h1
    ports: [{ name: eth9, mac: "52:54:00:fa:01:00", mtu: 1500 }]
  - name: h2
    ports: [{ name: eth9, mac: "52:54:00:fa:02:00", mtu: 1500 }]
links:
  - name: h1-h2
    a: h1:eth9
    b: h2:eth9
    vlans:
      - id: 100
        mtu: 1468
        macsec: pol
        addresses: { h1: 10.100.0.1/24, h2: 10.100.0.2/24 }
EOF
H="--host h1 --state-dir $T/sd"
A="--audit-log $T/audit.log"

# ---- 1. no port eth9 here: a warning, not an error ----
# shellcheck disable=SC2086
run "plan: parent-missing warning at the link end's line" 0 \
	"^p\.yaml:21:[0-9]+: warning: host 'h1' has no device 'eth9': the plan creates VLAN 'eth9\.100' on it.*\[parent-missing\]$" \
	plan $H p.yaml
grep -q "create vlan eth9.100" "$T/out" && ok "plan: the plan is still printed" ||
	no "plan: the plan is still printed"
# shellcheck disable=SC2086
run "plan --detailed-exitcode: still 4 (changes)" 4 "parent-missing" plan --detailed-exitcode $H p.yaml
# shellcheck disable=SC2086
run "plan --json: exit 0" 0 - plan --json $H p.yaml
[ "$(json "d['findings'][0]['code'], d['findings'][0]['line'], d['findings'][0]['file'], len(d['ops']) > 0")" = \
	"parent-missing 21 p.yaml True" ] && ok "plan --json: the finding in findings" ||
	no "plan --json: the finding in findings" "$(json "d.get('findings')")"
[ -s "$T/err" ] && no "plan --json: stderr empty" || ok "plan --json: stderr empty"
# shellcheck disable=SC2086
run "diff: drift (1) and the warning" 1 "warning: host 'h1' has no device 'eth9'" diff $H p.yaml
# shellcheck disable=SC2086
run "diff --json: exit 1" 1 - diff --json $H p.yaml
[ "$(json "d['findings'][0]['code']")" = parent-missing ] && ok "diff --json: findings" ||
	no "diff --json: findings" "$(cat "$T/out")"
# shellcheck disable=SC2086
run "apply --dry-run: 0 with the warning" 0 "parent-missing" apply --dry-run $H p.yaml
# shellcheck disable=SC2086
run "apply: refused (2), nothing made" 2 \
	"apply: refused: host 'h1' has no device 'eth9'.*nothing was changed" apply $H $A p.yaml
ip -br link | grep -q eth9 && no "apply: nothing made" "$(ip -br link)" || ok "apply: nothing made"

# ---- 2. the port exists: no warning ----
ip link add eth9 type bridge || no "ip link add eth9"
# shellcheck disable=SC2086
run "plan: eth9 present, no warning" 0 - plan $H p.yaml
grep -q parent-missing "$T/err" && no "plan: no warning" || ok "plan: no warning"

# ---- 3. saved plans ----
# shellcheck disable=SC2086
run "plan --out: saved" 0 "plan saved to $T/p\.plan" plan --out "$T/p.plan" $H p.yaml
grep -q "create vlan eth9.100" "$T/out" && ok "plan --out: the plan printed" ||
	no "plan --out: the plan printed"
[ -f p.plan ] && ! ls "$T" | grep -q 'p\.plan\.tmp' && ok "plan --out: one file, no temporary" ||
	no "plan --out: one file" "$(ls "$T")"
grep -q "$KEY" p.plan && no "plan --out: no key material" || ok "plan --out: no key material"
grep -q '"key_id"' p.plan && ok "plan --out: keys by key id" || no "plan --out: keys by key id"
"$PY" -c "import json; d=json.load(open('$T/p.plan')); assert d['host']=='h1' and d['format']=='fabricctl-plan/1' and len(d['live_sha256'])==64 and d['plan']['ops']" 2>"$T/err" &&
	ok "plan --out: JSON a reader takes" || no "plan --out: JSON a reader takes"
# shellcheck disable=SC2086
run "apply --plan --dry-run: the plan holds" 0 "dry run: nothing changed" \
	apply --plan p.plan --dry-run $H p.yaml
# shellcheck disable=SC2086
run "apply --plan without PROFILE: the one it names" 0 "dry run" apply --plan p.plan --dry-run $H
sed 's/version: 1 }/version: 2 }/' p.yaml >p2.yaml
# shellcheck disable=SC2086
run "apply --plan, another profile: 1" 1 \
	"the profile changed since the plan was made: p2\.yaml is live-test version 2.*nothing was changed" \
	apply --plan p.plan $A $H p2.yaml
run "apply --plan, another host: 1" 1 "was made for host 'h1'.*not for 'h2'" \
	apply --plan p.plan --host h2 --state-dir "$T/sd" $A p.yaml
ip link del eth9
# shellcheck disable=SC2086
run "apply --plan, the port gone: stale (1)" 1 \
	"the saved plan is stale: the live state of host 'h1' changed" apply --plan p.plan $H $A p.yaml
grep -q '"result":"refused".*"error":"the saved plan is stale' audit.log && ok "apply --plan stale: audited as refused" ||
	no "apply --plan stale: audited as refused"
ip link add eth9 type bridge
# shellcheck disable=SC2086
run "apply --plan --dry-run: holds again" 0 - apply --plan p.plan --dry-run $H p.yaml
sed 's/"create-link"/"delete-link"/' p.plan >edited.plan
# shellcheck disable=SC2086
run "apply --plan, an edited file: 1" 1 "edited" apply --plan edited.plan --dry-run $H p.yaml
# shellcheck disable=SC2086
run "apply --plan, no such file: 2" 2 "cannot read" apply --plan nothere.plan --dry-run $H p.yaml
echo 'not a plan' >junk.plan
# shellcheck disable=SC2086
run "apply --plan, not a plan: 1" 1 "not a saved plan" apply --plan junk.plan --dry-run $H p.yaml
run "plan --offline --out: usage (2)" 2 "live plan" plan --offline --out x.plan p.yaml
run "plan --out, a pipe: usage (2)" 2 "regular file" plan --out x.plan --host h1 /dev/stdin
echo "live_plan: $P passed, $N failed"
[ $N -eq 0 ]
