#!/bin/sh
# SPDX-License-Identifier: MIT
# rotate --dry-run: the plan of a fabric-wide rotation from the profile alone (requests
# per phase and agent, KM_BATCH_MAX records per request, waves of --parallel), and that
# it contacts nobody and writes nothing (no state dir, no audit log, no textfile).
#   keymgr_plan.sh KEYMGR REPO
set -eu
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
KM=$1
REPO=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "keymgr_plan: FAIL: $*" >&2; exit 1; }

"$PY" "$REPO/bench/gen_rotation_profile.py" "$T/p" --links 1500 --versions 1 >/dev/null
P=$T/p/rot.yaml
export FCTL_AUDIT_LOG="$T/audit.log"

"$KM" rotate --dry-run --json --all --state-dir "$T/state" --metrics-textfile "$T/tf.prom" \
	"$P" >"$T/plan.json" || fail "dry-run exit $?"
[ ! -e "$T/state" ] || fail "the dry run made the state dir"
[ ! -e "$T/audit.log" ] || fail "the dry run opened the audit log"
[ ! -e "$T/tf.prom" ] || fail "the dry run wrote the metrics textfile"
jq -e '.plan.links | length == 1500' "$T/plan.json" >/dev/null || fail "not 1500 links"
jq -e '.plan.links[0] == "h1-h2.100" and .plan.links[1499] == "h1-h2.1599"' "$T/plan.json" \
	>/dev/null || fail "links not in profile order"
jq -e '[.plan.agents[].link_ends] == [1500, 1500]' "$T/plan.json" >/dev/null ||
	fail "agents: $(jq -c .plan.agents "$T/plan.json")"
# 1500 records per agent = 2 requests of at most 1024 each, per phase; retire has 3000
jq -e '[.plan.phases[].phase] == ["prepare","install-rx","stage-tx","confirm","switch",
	"overlap","overlap-end","retire"]' "$T/plan.json" >/dev/null || fail "phases"
jq -e '.plan.phases[0].requests == 4 and .plan.phases[0].records == 3000 and
	.plan.phases[7].requests == 6 and .plan.phases[7].records == 6000' "$T/plan.json" \
	>/dev/null || fail "requests: $(jq -c .plan.phases "$T/plan.json")"
jq -e '.plan.parallel == 8 and ([.plan.phases[].waves] | all(. == 1))' "$T/plan.json" \
	>/dev/null || fail "waves at parallel 8"
jq -e '.plan.expected_ms.total == .plan.expected_ms.steps + .plan.expected_ms.overlap and
	.plan.expected_ms.overlap == 2000 and .plan.expected_ms.steps > 0' "$T/plan.json" \
	>/dev/null || fail "expected time"
"$KM" rotate --dry-run --json --all --parallel 1 "$P" >"$T/p1.json" || fail "parallel 1"
jq -e '.plan.phases[0].waves == 4 and .plan.phases[7].waves == 6' "$T/p1.json" >/dev/null ||
	fail "waves at parallel 1"
jq -e --slurpfile a "$T/plan.json" '.plan.expected_ms.steps > $a[0].plan.expected_ms.steps' \
	"$T/p1.json" >/dev/null || fail "fewer agents at once must not plan a shorter rotation"
"$KM" rotate --dry-run h1-h2.100 "$P" >"$T/one.txt" || fail "one link"
grep -q '^1 links on 2 agents' "$T/one.txt" || fail "text: $(head -3 "$T/one.txt")"
grep -q '^expected: ' "$T/one.txt" || fail "text without the expected time"
rc=0
"$KM" rotate --dry-run --all --parallel 0 "$P" >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--parallel 0: exit $rc, expected 2"
rc=0
"$KM" rotate --dry-run no-such.1 "$P" >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "unknown link: exit $rc, expected 2"
# options after a LINK, as the usage line has them: still a dry run (it used to stop
# parsing options at the first LINK, and the dry run took the state-dir lock and the audit log)
"$KM" rotate h1-h2.100 --dry-run --state-dir "$T/state2" --audit-log "$T/a2.log" "$P" \
	>"$T/late.txt" || fail "rotate LINK --dry-run: exit $?"
grep -q '^1 links on 2 agents' "$T/late.txt" || fail "rotate LINK --dry-run: $(head -3 "$T/late.txt")"
[ ! -e "$T/state2" ] && [ ! -e "$T/a2.log" ] || fail "rotate LINK --dry-run wrote its state or audit log"

# MKA links: keymgr never installs an SA on an MKA SecY. They are named and left alone.
M=$REPO/examples/mka/lab-pair-mka.yaml
AG="--agent h1=127.0.0.1:9 --agent h2=127.0.0.1:9"
rc=0
# shellcheck disable=SC2086
"$KM" rotate h1-h2.100 $AG --state-dir "$T/mstate" "$M" >/dev/null 2>"$T/mka.err" || rc=$?
[ "$rc" = 2 ] || fail "rotate of an MKA link: exit $rc, expected 2"
grep -q "'h1-h2.100' is an MKA link" "$T/mka.err" || fail "MKA link refusal: $(cat "$T/mka.err")"
! grep -q "connect" "$T/mka.err" || fail "rotate of an MKA link asked an agent"
# shellcheck disable=SC2086
"$KM" rotate --all --dry-run --json $AG "$M" >"$T/mka.json" 2>"$T/mka.err" ||
	fail "rotate --all over MKA links only: exit $?"
[ ! -s "$T/mka.json" ] || fail "rotate --all over MKA links planned: $(cat "$T/mka.json")"
grep -q "h1-h2.100: an MKA link, left to MKA" "$T/mka.err" || fail "--all did not name the MKA link"
# shellcheck disable=SC2086
"$KM" status --json $AG --state-dir "$T/mstate" "$M" >"$T/mst.json" || fail "status of MKA links: exit $?"
[ -s "$T/mst.json" ] && jq -e '. == [{"link":"h1-h2.100","mka":true}]' "$T/mst.json" >/dev/null ||
	fail "status of MKA links: $(cat "$T/mst.json")"
# shellcheck disable=SC2086
"$KM" watch $AG --state-dir "$T/mstate" --audit-log "$T/mw.log" "$M" 2>"$T/mw.err" ||
	fail "watch over MKA links only: exit $?"
grep -q "nothing to watch" "$T/mw.err" || fail "watch over MKA links only: $(cat "$T/mw.err")"
echo "keymgr_plan: ok"
