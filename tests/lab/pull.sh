#!/bin/bash
# SPDX-License-Identifier: MIT
# The agent's pull mode against a real kernel, without Kubernetes: one lab VM, the agent
# started with --pull-dir on a directory laid out as the kubelet lays out a ConfigMap
# volume (..TIMESTAMP directories, the ..data symlink, profile.yaml -> ..data/profile.yaml),
# and new versions published by the kubelet's own move: a ..data_tmp symlink renamed
# over ..data.
#
#  1. the version there at start is applied (history v1, the SecY up, encrypting)
#  2. a swap to v2 (replay window 0 -> 64): applied in place, the kernel's window is 64
#  3. a swap to an invalid profile (icv_len 20): refused, audited with its finding
#     (FILE:LINE:COL names the pulled file), history and kernel still v2 (no drift)
#  4. a swap to a valid v4 whose apply fails midway (VLAN 200 made by hand first):
#     audited as failed and rolled back, the kernel still v2
#  5. a swap back to v2's content after the refusals: nothing to do, no new history entry;
#     then v1 again: applied (window 0)
#  6. the agent's audit log verifies
#  7. approvals: the agent again with a 2-of-3 policy: an unsigned version and one with one
#     approval refused and audited (who signed, who is missing, the allowed_signers file),
#     nothing applied; the version with two (ssh-keygen's, fabricctl approve's) applied, its
#     signatures kept in the history; a symlinked pulled file refused, not followed
#
# Prints PASS/FAIL per check and "pull: N passed, M failed"; exits non-zero on any
# failure, including a lab that cannot start (never skips).
set -uo pipefail

SUITE=pull
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-pull
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
WAIT=${FCTL_PULL_WAIT:-90} # seconds a wait for the agent may last (not an assertion)
JOB=

on() { "$LAB" exec --timeout 120 h1 -- "$@"; }

suite_cleanup() {
	[ -z "$JOB" ] || "$LAB" kill h1 "$JOB" >/dev/null 2>&1
}

[ -x "$F" ] || { fail "build" "$F is missing: build first"; exit 1; }

WORK=$BUILD/lab-pull-work
rm -rf "$WORK"
mkdir -p "$WORK"
cp "$ROOT/profiles/lab-pair.yaml" "$WORK/v1.yaml"
cp "$ROOT/tests/lab/profiles/lab-pair-v2.yaml" "$WORK/v2.yaml"
cp "$ROOT/tests/lab/profiles/lab-pair-invalid.yaml" "$WORK/bad.yaml"
cp "$ROOT/tests/lab/profiles/lab-pair-v4-fails.yaml" "$WORK/v4.yaml"
( umask 077; openssl rand -hex 16 >"$WORK/lab-pair.key" )
chmod 644 "$WORK/lab-pair.key" # the guest copies it (as root, over 9p) and makes it 0600

if ! "$LAB" up --hosts 1; then
	fail "lab-up" "the lab did not start"
	exit 1
fi
pass "lab-up"

CM=/run/fabricctl-pull   # the "volume": guest tmpfs, as a kubelet's is the node's
# publish NAME FILE: the kubelet's atomic writer, step by step
publish() {
	on sh -c "set -e; mkdir $CM/..$1; cp '$WORK/$2' $CM/..$1/profile.yaml
		ln -s ..$1 $CM/..data_tmp; mv -T $CM/..data_tmp $CM/..data
		[ -L $CM/profile.yaml ] || ln -s ..data/profile.yaml $CM/profile.yaml"
}
# until DESC CMD...: runs CMD in h1 until it succeeds, at most $WAIT s
until_ok() {
	local desc=$1 t=0
	shift
	while ! on "$@" >/dev/null 2>&1; do
		t=$((t + 1))
		[ $t -ge "$WAIT" ] && { echo "  (waited ${WAIT}s for: $desc)"; return 1; }
		sleep 1
	done
}
version() { on "$F" history --json | jq -r 'if length == 0 then 0 else (max_by(.seq) | .version) end'; }
nhist() { on "$F" history --json | jq length; }
window() { on ip -j macsec show ms100 | jq -r '.[0].window // "none"'; }
pulls() { on "$F" audit show --json | jq -c "[.[] | select(.action == \"pull\" and .result == \"$1\")]"; }

on sh -c "mkdir -p $CM /var/lib/fabricctl/agent/keys &&
	cp '$WORK/lab-pair.key' /var/lib/fabricctl/agent/keys/lab-pair.key &&
	chmod 600 /var/lib/fabricctl/agent/keys/lab-pair.key"
publish v1 v1.yaml
JOB=$("$LAB" exec-bg h1 -- "$F" agent --pull-dir "$CM" --drift-interval 0)

# 1. the version there at start
if until_ok "history v1" sh -c "'$F' history --json | grep -q '\"version\":1'"; then
	pass "1-start-applied"
else
	fail "1-start-applied" "$("$LAB" wait --timeout 1 h1 "$JOB" 2>&1 | tail -5)"
fi
st=$(on ip -j macsec show 2>/dev/null)
[ "$(window)" = 0 ] && pass "1-window-0" || fail "1-window-0" "window $(window)"
on "$F" node-check --json >"$WORK/nc.json"
jq -en 'input | [.checks[] | select(.check == "secy" and .ok)] | length == 1' "$WORK/nc.json" >/dev/null &&
	pass "1-secy-up-encrypting" || fail "1-secy-up-encrypting" "$(cat "$WORK/nc.json") $st"

# 2. a swap to v2
publish v2 v2.yaml
if until_ok "history v2" sh -c "'$F' history --json | grep -q '\"version\":2'"; then
	pass "2-swap-applied"
else
	fail "2-swap-applied" "version $(version)"
fi
[ "$(window)" = 64 ] && pass "2-window-64" || fail "2-window-64" "window $(window)"
until_ok "pull applied x2" sh -c "'$F' audit show --json | jq -en 'input | [.[] | select(.action == \"pull\" and .result == \"applied\")] | length == 2'" &&
	pass "2-audited-applied" || fail "2-audited-applied" "$(pulls applied)"
rec=$(on "$F" audit show --json | jq -c '[.[] | select(.action == "apply")] | last')
echo "$rec" | jq -en 'input | .actor.cert == "pull:'"$CM"'" or (.actor | tostring | contains("pull:'"$CM"'"))' >/dev/null &&
	pass "2-apply-record-names-pull" || fail "2-apply-record-names-pull" "$rec"

# 3. an invalid profile: refused, the running version stays
n=$(nhist)
publish bad bad.yaml
if until_ok "pull refused" sh -c "'$F' audit show --json | jq -en 'input | [.[] | select(.action == \"pull\" and .result == \"refused\")] | length == 1'"; then
	pass "3-refused-audited"
else
	fail "3-refused-audited" "$(pulls refused)"
fi
d=$(pulls refused | jq -r '.[0].detail')
case $d in *"$CM/profile.yaml:"*icv_len*) pass "3-finding-names-file" ;;
	*) fail "3-finding-names-file" "$d" ;; esac
[ "$(version)" = 2 ] && [ "$(nhist)" = "$n" ] && pass "3-history-still-v2" ||
	fail "3-history-still-v2" "version $(version), $(nhist) entries (was $n)"
[ "$(window)" = 64 ] && pass "3-kernel-still-v2" || fail "3-kernel-still-v2" "window $(window)"
on "$F" diff "$WORK/v2.yaml" >/dev/null && pass "3-no-drift" || fail "3-no-drift"

# 4. a valid profile whose apply fails midway: rolled back
on ip link add link eth0 name legacy200 type vlan id 200
publish v4 v4.yaml
if until_ok "pull failed" sh -c "'$F' audit show --json | jq -en 'input | [.[] | select(.action == \"pull\" and .result == \"failed\")] | length == 1'"; then
	pass "4-failed-audited"
else
	fail "4-failed-audited" "$(pulls failed)"
fi
d=$(pulls failed | jq -r '.[0].detail')
case $d in *"rolled back"*) pass "4-says-rolled-back" ;; *) fail "4-says-rolled-back" "$d" ;; esac
[ "$(version)" = 2 ] && pass "4-history-still-v2" || fail "4-history-still-v2" "version $(version)"
on "$F" diff "$WORK/v2.yaml" >/dev/null && pass "4-kernel-still-v2" || fail "4-kernel-still-v2"
on ip link del legacy200

# 5. v2's content again: applied as a new pull (a different content than the last seen),
# with no netlink write; then v1
publish v2b v2.yaml
until_ok "pull applied x3" sh -c "'$F' audit show --json | jq -en 'input | [.[] | select(.action == \"pull\" and .result == \"applied\")] | length == 3'" &&
	pass "5-v2-again-applied" || fail "5-v2-again-applied" "$(pulls applied)"
rec=$(on "$F" audit show --json | jq -c '[.[] | select(.action == "apply")] | last')
echo "$rec" | jq -en 'input | .writes == 0' >/dev/null &&
	pass "5-v2-again-no-write" || fail "5-v2-again-no-write" "$rec"
publish v1b v1.yaml
until_ok "window 0" sh -c "ip -j macsec show ms100 | grep -q '\"window\":0'" &&
	pass "5-back-to-v1" || fail "5-back-to-v1" "window $(window)"

# 6. the agent's audit log
on "$F" audit verify --pubkey /var/lib/fabricctl/audit/audit.pub >/dev/null &&
	pass "6-audit-verifies" || fail "6-audit-verifies"
"$LAB" kill h1 "$JOB" >/dev/null 2>&1
out=$("$LAB" wait --timeout 30 h1 "$JOB" 2>&1)
JOB=
case $out in *"pull: watching $CM/profile.yaml"*) pass "6-agent-log" ;;
	*) fail "6-agent-log" "$(echo "$out" | tail -5)" ;; esac

# 7. approvals (docs/approvals.md): the agent again, with a policy of 2 of 3; keys made
# here by ssh-keygen, signatures by ssh-keygen -Y sign and fabricctl approve, published as
# ConfigMap keys (profile.yaml.NAME.sig: a ConfigMap has no folders)
for w in alice bob carol; do ssh-keygen -q -t ed25519 -N '' -C $w -f "$WORK/$w" </dev/null; done
for w in alice bob carol; do echo "$w@lab $(cut -d' ' -f1,2 "$WORK/$w.pub")"; done >"$WORK/allowed_signers"
echo "require: 2 of $WORK/allowed_signers" >"$WORK/approvals.conf"
{ echo "# approved in review"; cat "$WORK/v2.yaml"; } >"$WORK/a2.yaml"
ssh-keygen -q -Y sign -n fabricctl-profile -f "$WORK/alice" "$WORK/a2.yaml" 2>/dev/null &&
	mv "$WORK/a2.yaml.sig" "$WORK/a2.alice.sig" || fail "7-ssh-keygen-sign"
"$F" approve -q --key "$WORK/bob" --name bob "$WORK/a2.yaml" &&
	mv "$WORK/a2.yaml.sig.d/bob.sig" "$WORK/a2.bob.sig" || fail "7-fabricctl-approve"
# publish_sig NAME FILE SIGNER...: as publish, with FILE's signatures as the keys
# profile.yaml.SIGNER.sig, all in the new folder before the swap (the kubelet's order)
publish_sig() {
	local name=$1 file=$2 s cp="" ln=""
	shift 2
	for s in "$@"; do
		cp="$cp cp '$WORK/${file%.yaml}.$s.sig' $CM/..$name/profile.yaml.$s.sig;"
		ln="$ln [ -L $CM/profile.yaml.$s.sig ] || ln -s ..data/profile.yaml.$s.sig $CM/profile.yaml.$s.sig;"
	done
	on sh -c "set -e; mkdir $CM/..$name; cp '$WORK/$file' $CM/..$name/profile.yaml; $cp
		ln -s ..$name $CM/..data_tmp; mv -T $CM/..data_tmp $CM/..data; $ln
		[ -L $CM/profile.yaml ] || ln -s ..data/profile.yaml $CM/profile.yaml"
}
# until_version V: the history's last entry is version V, within $WAIT s
until_version() {
	local t=0
	while [ "$(version)" != "$1" ]; do
		t=$((t + 1))
		[ $t -ge "$WAIT" ] && return 1
		sleep 1
	done
}
# refused_with TEXT: a pull refused whose detail holds TEXT
refused_with() {
	until_ok "pull refused: $1" sh -c "'$F' audit show --json | jq -en --arg t '$1' 'input | any(.[]; .action == \"pull\" and .result == \"refused\" and (.detail | contains(\$t)))'"
}
JOB=$("$LAB" exec-bg h1 -- env FCTL_APPROVALS_CONF="$WORK/approvals.conf" "$F" agent --pull-dir "$CM" --drift-interval 0)
refused_with "NOT approved: 0 of 2 required signed (signed by nobody); missing: alice@lab, bob@lab, carol@lab; checked against $WORK/allowed_signers" &&
	pass "7-unsigned-version-refused" || fail "7-unsigned-version-refused" "$(pulls refused)"
[ "$(version)" = 1 ] && pass "7-unsigned-nothing-applied" || fail "7-unsigned-nothing-applied" "version $(version)"
publish_sig a2one a2.yaml alice
refused_with "NOT approved: 1 of 2 required signed (signed by alice@lab SHA256:" &&
	pass "7-one-of-two-refused" || fail "7-one-of-two-refused" "$(pulls refused)"
[ "$(window)" = 0 ] && pass "7-kernel-still-v1" || fail "7-kernel-still-v1" "window $(window)"
publish_sig a2two a2.yaml alice bob
if until_version 2; then
	pass "7-approved-version-applied"
else
	fail "7-approved-version-applied" "version $(version); $(pulls refused | jq -r '.[-1].detail')"
fi
[ "$(window)" = 64 ] && pass "7-kernel-v2" || fail "7-kernel-v2" "window $(window)"
[ "$(on sh -c 'ls /var/lib/fabricctl/history/*-v2.yaml.sig.d/' | grep -c 'sig$')" = 2 ] &&
	pass "7-history-keeps-signatures" || fail "7-history-keeps-signatures"
# a pulled file that is a symlink (here inside the data folder): refused, not followed
on sh -c "mkdir $CM/..lnk && ln -s /etc/passwd $CM/..lnk/profile.yaml &&
	ln -s ..lnk $CM/..data_tmp && mv -T $CM/..data_tmp $CM/..data"
refused_with "profile.yaml is a symlink: refused" && pass "7-symlinked-file-refused" ||
	fail "7-symlinked-file-refused" "$(pulls refused)"
[ "$(window)" = 64 ] && pass "7-symlink-nothing-applied" || fail "7-symlink-nothing-applied"
on "$F" audit verify --pubkey /var/lib/fabricctl/audit/audit.pub >/dev/null &&
	pass "7-audit-verifies" || fail "7-audit-verifies"
"$LAB" kill h1 "$JOB" >/dev/null 2>&1
"$LAB" wait --timeout 30 h1 "$JOB" >/dev/null 2>&1
JOB=
