#!/bin/sh
# SPDX-License-Identifier: MIT
# Approvals on one host (docs/approvals.md), in a network namespace of its own (unshare
# -rn) whose port eth9 is a bridge: fresh keys made by ssh-keygen here; with no policy an
# apply is as before; with 'require: 2 of allowed_signers' apply and rollback refuse (exit
# 1, nothing applied, audited as refused, the error naming who signed, who is missing and
# the allowed_signers file) an unsigned version, one signer twice, a key not in the file,
# an expired principal, another namespace, one byte changed, another version's signatures,
# a truncated signature, a symlinked signature; apply takes a version approved by
# ssh-keygen -Y sign and fabricctl approve, whose signature ssh-keygen -Y verify accepts;
# the history keeps a version's signatures for its rollback; a remote apply through an agent
# (Unix socket) carries the signature files and the agent's host decides by its policy
# (unsigned, once signed: refused; 2 of 3: applied), a signature file name that is a path
# ("../x.sig", "a/b.sig", sent raw) is refused by the agent; a keymgr
# rotation of an unapproved profile is refused before any agent is asked; approvals --json; validate
# and plan say the state; the records of applies and rollbacks name the approvers (principal,
# key fingerprint, signature digest); the log still verifies. The build machine's kernel has no VLAN: the profiles here hold a
# host and its port only, which an apply records in the history without a kernel write.
# Fails (exit 1) when no network namespace can be made or ssh-keygen is missing.
#
# usage: tests/cli/approvals.sh FABRICCTL
set -u
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
F=${1:-build/fabricctl/fabricctl}
case $F in /*) ;; *) F=$(pwd)/$F ;; esac
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# keymgr: a rotation names keys from the profile: an unapproved version is refused before
# any agent is asked, audited; an approved one passes the gate (and then finds no agent:
# --agent points both hosts at a socket that does not exist). In this namespace: keymgr
# makes itself undumpable, which a user namespace's /proc does not let it read through.
keymgr_part() {
	K=$(mktemp -d /tmp/fctl-approvals-km.XXXXXX) || return 1
	kp=0 kn=0
	(
		cd "$K" || exit 1
		for w in alice bob carol; do ssh-keygen -q -t ed25519 -N '' -C $w -f $w || exit 1; done
		for w in alice bob carol; do echo "$w@example.org $(cut -d' ' -f1,2 $w.pub)"; done >allowed_signers
		echo "require: 2 of allowed_signers" >approvals.conf
		cp "$SRC/profiles/lab-pair.yaml" lp.yaml
	) || { echo "FAIL: keymgr: setup"; rm -rf "$K"; return 1; }
	A="--agent h1=unix:$K/none.sock --agent h2=unix:$K/none.sock --timeout 2"
	# shellcheck disable=SC2086
	(cd "$K" && FCTL_APPROVALS_CONF=$K/approvals.conf "$F" rotate --all $A --state-dir "$K/km" \
		--audit-log "$K/km.log" lp.yaml) >"$K/out" 2>"$K/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -Eq "fabricctl-keymgr: rotate: refused: lab-pair version 1 \(lp\.yaml\): NOT approved: 0 of 2 required signed.*checked against $K/allowed_signers.*nothing rotated" "$K/err"; then
		echo "PASS: keymgr rotate: an unapproved profile refused (2)"; kp=$((kp + 1))
	else
		echo "FAIL: keymgr rotate: an unapproved profile refused (2): exit $rc"; sed 's/^/    ! /' "$K/err" | head -3; kn=$((kn + 1))
	fi
	if grep -q '"action":"key-rotation","profile":{"name":"lab-pair","version":1},"result":"refused","error":"lab-pair version 1 (lp.yaml): NOT approved' "$K/km.log"; then
		echo "PASS: keymgr refusal: audited"; kp=$((kp + 1))
	else
		echo "FAIL: keymgr refusal: audited"; kn=$((kn + 1))
	fi
	(cd "$K" && "$F" approve -q --key alice --name alice lp.yaml && "$F" approve -q --key bob --name bob lp.yaml) ||
		{ echo "FAIL: keymgr: approve lp.yaml"; kn=$((kn + 1)); }
	# shellcheck disable=SC2086
	(cd "$K" && FCTL_APPROVALS_CONF=$K/approvals.conf "$F" rotate --all $A --state-dir "$K/km" \
		--audit-log "$K/km.log" lp.yaml) >"$K/out" 2>"$K/err"
	if grep -q "refused" "$K/err" || [ "$(grep -c '"result":"refused"' "$K/km.log")" != 1 ] ||
		! grep -q "none.sock" "$K/err"; then
		echo "FAIL: keymgr rotate: an approved profile passes the gate"; sed 's/^/    ! /' "$K/err" | head -3; kn=$((kn + 1))
	else
		echo "PASS: keymgr rotate: an approved profile passes the gate (then finds no agent)"; kp=$((kp + 1))
	fi
	rm -rf "$K"
	echo "approvals (keymgr): $kp passed, $kn failed"
	[ $kn -eq 0 ]
}
if [ "${FCTL_APPROVALS_NETNS:-}" != 1 ]; then
	if ! unshare -rn true 2>/dev/null; then
		echo "FAIL: cannot make a network namespace (unshare -rn): this test cannot run"
		exit 1
	fi
	command -v ssh-keygen >/dev/null || { echo "FAIL: ssh-keygen (openssh-client) is missing"; exit 1; }
	FCTL_APPROVALS_NETNS=1 unshare -rn sh "$0" "$F"
	inner=$?
	keymgr_part
	outer=$?
	[ $inner -eq 0 ] && [ $outer -eq 0 ]
	exit
fi
T=$(mktemp -d /tmp/fctl-approvals.XXXXXX) || exit 2
AGENT_PID=
trap '[ -z "$AGENT_PID" ] || kill "$AGENT_PID" 2>/dev/null; rm -rf "$T"' EXIT INT TERM
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$T" || exit 2
export NO_COLOR=1
unset FCTL_AUDIT_LOG FCTL_CHANGE_ID
# ok, no, run: the checks (tests/cli/expect.sh)
. "$HERE/expect.sh"
H="--host h1 --state-dir $T/sd --audit-log $T/audit.log"
# history_has VERSION: the history lists it
history_n() { "$F" history --json --state-dir "$T/sd" 2>/dev/null | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
last_audit() { tail -1 "$T/audit.log"; }

ip link add eth9 type bridge || no "ip link add eth9"
for w in alice bob carol eve; do ssh-keygen -q -t ed25519 -N '' -C $w -f $w || no "keygen $w"; done
ssh-keygen -q -t ecdsa -b 256 -N '' -C dave -f dave || no "keygen dave"
chmod 600 alice bob carol eve dave
{
	for w in alice bob; do echo "$w@example.org $(cut -d' ' -f1,2 $w.pub)"; done
	echo "carol@example.org valid-before=20200101Z $(cut -d' ' -f1,2 carol.pub)"
	echo "dave@example.org namespaces=\"fabricctl-profile\" $(cut -d' ' -f1,2 dave.pub)"
} >allowed_signers
mk() { # FILE VERSION
	printf 'schema: 1\nprofile: { name: appr, version: %s }\nhosts:\n  - name: h1\n    ports: [{ name: eth9, mac: "52:54:00:fa:01:00", mtu: 1500 }]\n' "$2" >"$1"
}
sig() { # KEY NAMESPACE PROFILE NAME: ssh-keygen's signature as PROFILE.sig.d/NAME.sig
	mkdir -p "$3.sig.d" && ssh-keygen -q -Y sign -f "$1" -n "$2" "$3" 2>/dev/null &&
		mv "$3.sig" "$3.sig.d/$4.sig" || no "ssh-keygen -Y sign $1 $3"
}
mk p7.yaml 7

# ---- 1. no policy on this host: as before ----
export FCTL_APPROVALS_CONF=$T/approvals.conf
run "no policy: an unsigned version applies" 0 "already matches appr version 7" apply $H p7.yaml
run "no policy: approvals says approvals are not required" 0 "no approval policy on this host" approvals p7.yaml
run "no policy: approvals --json, policy null" 0 '"policy":null' approvals --json p7.yaml

# ---- 2. require 2 of allowed_signers ----
echo "require: 2 of allowed_signers   # two-person rule" >approvals.conf
mk p8.yaml 8
run "unsigned: refused (1)" 1 "apply: refused: appr version 8 \(p8\.yaml\) is NOT approved: 0 of 2 required signed \(signed by nobody\); missing: alice@example.org, bob@example.org, carol@example.org, dave@example.org; checked against $T/allowed_signers; no signature file.*nothing was changed" apply $H p8.yaml
last_audit | grep -q '"action":"apply".*"version":8.*"result":"refused","error":"appr version 8 (p8.yaml) is NOT approved' &&
	ok "unsigned: audited as refused" || no "unsigned: audited as refused" "$(last_audit)"
[ "$(history_n)" = 1 ] && ok "unsigned: nothing applied" || no "unsigned: nothing applied" "$(history_n)"
sig alice fabricctl-profile p8.yaml alice
run "one of two: refused, names the signer and the missing" 1 "1 of 2 required signed \(signed by alice@example.org SHA256:[A-Za-z0-9+/]{43}\); missing: bob@example.org" apply $H p8.yaml
sig alice fabricctl-profile p8.yaml alice-again
run "one signer twice (same key): counted once" 1 "1 of 2 required.*alice(-again)?\.sig not counted: same key as" apply $H p8.yaml
rm p8.yaml.sig.d/alice-again.sig
sig eve fabricctl-profile p8.yaml eve
run "a key not in allowed_signers: refused" 1 "eve\.sig refused: key SHA256:.* is not in $T/allowed_signers" apply $H p8.yaml
rm p8.yaml.sig.d/eve.sig
sig carol fabricctl-profile p8.yaml carol
run "valid-before passed: refused" 1 "carol\.sig refused: principal carol@example.org: its key expired \(valid-before 2020-01-01T00:00:00Z\)" apply $H p8.yaml
rm p8.yaml.sig.d/carol.sig
sig bob git p8.yaml bob
run "another namespace: refused" 1 "bob\.sig refused: signed in namespace 'git', not 'fabricctl-profile'" apply $H p8.yaml
sig bob fabricctl-profile p8.yaml bob
head -c 200 p8.yaml.sig.d/bob.sig >p8.yaml.sig.d/bob-cut.sig
mv p8.yaml.sig.d/bob.sig bob.sig.keep
run "a truncated signature: refused" 1 "bob-cut\.sig refused: malformed signature" apply $H p8.yaml
rm p8.yaml.sig.d/bob-cut.sig
ln -s "$T/bob.sig.keep" p8.yaml.sig.d/bob.sig
run "a symlinked signature: refused" 1 "bob\.sig refused: cannot be read: not a regular file" apply $H p8.yaml
rm p8.yaml.sig.d/bob.sig && cp bob.sig.keep p8.yaml.sig.d/bob.sig
cp p8.yaml p8.orig && printf '#' >>p8.yaml
run "one byte added: refused" 1 "alice\.sig refused: the signature does not match these bytes" apply $H p8.yaml
cp p8.orig p8.yaml
echo 'require: 3 of allowed_signers' >three.conf
export FCTL_APPROVALS_CONF=$T/three.conf
run "validate says NOT approved under a 3-of policy" 0 "validate: .*NOT approved: 2 of 3" validate p8.yaml
run "plan says an apply would be refused" 0 "plan: .*NOT approved: 2 of 3.*an apply of it would be refused" plan --offline p8.yaml
export FCTL_APPROVALS_CONF=$T/approvals.conf
run "plan --offline says approved" 0 "plan: appr version 8 is approved: 2 of 2" plan --offline p8.yaml
[ "$(history_n)" = 1 ] && ok "refusals: nothing applied" || no "refusals: nothing applied" "$(history_n)"
n_ref=$(grep -c '"result":"refused"' audit.log)
[ "$n_ref" -ge 9 ] && ok "refusals: each audited ($n_ref)" || no "refusals: each audited" "$n_ref"

# ---- 3. approved: ssh-keygen's and fabricctl approve's signatures ----
rm p8.yaml.sig.d/bob.sig
run "approve: bob signs with fabricctl" 0 "approved appr version 8 .* with key SHA256:.*p8\.yaml\.sig\.d/bob\.sig" approve --key bob --name bob p8.yaml
ssh-keygen -Y verify -f allowed_signers -I bob@example.org -n fabricctl-profile -s p8.yaml.sig.d/bob.sig <p8.yaml >/dev/null 2>&1 &&
	ok "ssh-keygen -Y verify accepts fabricctl's signature" || no "ssh-keygen -Y verify accepts fabricctl's signature"
run "approve: an existing NAME is not replaced" 2 "bob\.sig exists" approve --key bob --name bob p8.yaml
chmod 644 eve
run "approve: a key readable by others is refused" 2 "readable by its owner only" approve --key eve --name eve p8.yaml
chmod 600 eve
run "approve: a name with a slash is refused" 2 "must be a file name" approve --key bob --name ../x p8.yaml
run "approvals: met (0)" 0 "approved: 2 of 2 required signed \(alice@example.org SHA256:.*, bob@example.org SHA256:" approvals p8.yaml
run "approvals --json" 0 - approvals --json p8.yaml
"$PY" -c "import json; d=json.load(open('$T/out'))['approvals']; assert d['met'] and d['counted']==2 and d['required']==2 and d['missing']==['carol@example.org','dave@example.org'] and all(s['digest'].startswith('sha256:') and s['fingerprint'].startswith('SHA256:') for s in d['signatures'])" 2>"$T/err" &&
	ok "approvals --json: counted, missing, digests" || no "approvals --json: counted, missing, digests"
run "approved: applies" 0 "already matches appr version 8" apply $H p8.yaml
last_audit | grep -Eq '"result":"unchanged",.*"approvals":\["alice@example.org SHA256:[A-Za-z0-9+/]{43} sha256:[0-9a-f]{64}","bob@example.org SHA256:[A-Za-z0-9+/]{43} sha256:[0-9a-f]{64}"\]\}$' &&
	ok "the apply's record names the approvers, keys and signature digests" ||
	no "the apply's record names the approvers, keys and signature digests" "$(last_audit)"
d=$(sha256sum p8.yaml.sig.d/bob.sig | cut -c1-64)
last_audit | grep -q "bob@example.org SHA256:[^ ]* sha256:$d" && ok "the record's digest is the signature file's" ||
	no "the record's digest is the signature file's" "$(last_audit)"
[ -s sd/history/000002-v8.yaml.sig.d/00-alice.sig ] && [ -s sd/history/000002-v8.yaml.sig.d/01-bob.sig ] &&
	ok "the history keeps version 8's signatures" || no "the history keeps version 8's signatures" "$(ls -R sd/history)"
# an ECDSA P-256 key through ssh-keygen (fabricctl approve --ssh-keygen)
mk p9.yaml 9
run "approve --ssh-keygen: an ECDSA key" 0 "with key SHA256:" approve --ssh-keygen --key dave --name dave p9.yaml
sig alice fabricctl-profile p9.yaml alice
run "approvals: ECDSA and Ed25519 counted" 0 "approved: 2 of 2 required signed \(alice@example.org .*dave@example.org" approvals p9.yaml

# ---- 4. another version, and rollback ----
mk p10.yaml 10
cp -r p8.yaml.sig.d p10.yaml.sig.d
run "version 8's signatures do not approve version 10" 1 "appr version 10 .*NOT approved: 0 of 2.*alice\.sig refused: the signature does not match these bytes" apply $H p10.yaml
FCTL_APPROVALS_CONF=$T/none.conf "$F" apply $H p10.yaml >/dev/null 2>&1 || no "apply 10 without a policy"
run "rollback to an approved version: its kept signatures" 0 "already matches appr version 8" rollback --to 8 $H
last_audit | grep -q '"action":"rollback".*"approvals":\["alice@example.org ' && ok "the rollback's record names its approvers" ||
	no "the rollback's record names its approvers" "$(last_audit)"
run "rollback to a version applied unapproved: refused" 1 "rollback: refused: appr version 10 \(.*000003-v10\.yaml\) is NOT approved: 0 of 2" rollback --to 10 $H
last_audit | grep -q '"action":"rollback".*"result":"refused"' && ok "rollback refused: audited" ||
	no "rollback refused: audited" "$(last_audit)"

# ---- 5. through the agent: the signature files travel with a remote apply and the agent's
# host decides by its own policy, as for a local apply; a signature file name that is a
# path is refused by the agent; without a policy the agent applies as before ----
echo "require: 2 of allowed_signers" >approvals.conf
agent_start() { # POLICY
	FCTL_APPROVALS_CONF=$1 "$F" agent --socket "$T/agent.sock" --state-dir "$T/asd" --host h1 \
		--audit-log "$T/aaudit.log" --profile-dir "$T/aprof" --drift-interval 0 >"$T/agent.log" 2>&1 &
	AGENT_PID=$!
	i=0
	while [ ! -S "$T/agent.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}
agent_stop() {
	kill "$AGENT_PID" 2>/dev/null
	wait "$AGENT_PID" 2>/dev/null
	AGENT_PID=
	rm -f "$T/agent.sock"
}
# raw_sig NAME: an apply of p8.yaml whose one signature file is called NAME, sent as raw
# frames (the CLI sends only plain names); prints the agent's exit code and its error
raw_sig() {
	"$PY" - "$T/agent.sock" "$T/p8.yaml" "$1" <<'PY'
import socket, struct, sys
sock, prof, name = sys.argv[1], open(sys.argv[2], 'rb').read(), sys.argv[3].encode()
data = open(sys.argv[2] + '.sig.d/alice.sig', 'rb').read()
rec = bytes([len(name)]) + name + struct.pack('>I', len(data)) + data
tlv = lambda t, v: struct.pack('>HI', t, len(v)) + v
body = tlv(0x8004, prof) + tlv(0x0018, rec)
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
s.sendall(b'FCTL' + struct.pack('>BBHII', 1, 4, 0, 7, len(body)) + body)
buf = b''
while len(buf) < 16 or len(buf) < 16 + struct.unpack('>I', buf[12:16])[0]:
	k = s.recv(65536)
	if not k:
		break
	buf += k
off, rc, err = 16, None, ''
while off + 6 <= len(buf):
	t, n = struct.unpack('>HI', buf[off:off + 6])
	v = buf[off + 6:off + 6 + n]
	if t == 0x8008:
		rc = struct.unpack('>I', v)[0]
	if t == 0x0009:
		err = v.decode(errors='replace')
	off += 6 + n
print(rc, err)
PY
}
mk r20.yaml 20
agent_start "$T/approvals.conf"
run "remote apply, agent with a policy: refused for missing approvals" 1 \
	"apply: refused: appr version 20 .* is NOT approved: 0 of 2 required signed" apply --target unix:"$T/agent.sock" r20.yaml
grep -q '"action":"apply".*"result":"refused","error":"appr version 20' aaudit.log &&
	ok "remote apply refused: audited by the agent's host" || no "remote apply refused: audited" "$(cat aaudit.log)"
ssh-keygen -q -Y sign -f alice -n fabricctl-profile r20.yaml 2>/dev/null || no "ssh-keygen -Y sign alice r20.yaml"
run "remote apply with one signature (r20.yaml.sig): refused, names who is missing" 1 \
	"apply: refused: appr version 20 .* is NOT approved: 1 of 2 required signed \(signed by alice@example.org SHA256:[A-Za-z0-9+/]{43}\); missing: bob@example.org" \
	apply --target unix:"$T/agent.sock" r20.yaml
cp r20.yaml d20.yaml && mkdir -p r20.yaml.sig.d && # r20.yaml.sig is alice's: sign a copy
	ssh-keygen -q -Y sign -f dave -n fabricctl-profile d20.yaml 2>/dev/null &&
	mv d20.yaml.sig r20.yaml.sig.d/dave.sig || no "ssh-keygen -Y sign dave r20.yaml"
run "remote apply approved by 2 of 3 signers (alice, dave; not bob): applied by the agent" 0 \
	"appr version 20" apply --target unix:"$T/agent.sock" r20.yaml
grep '"action":"apply".*"version":20' aaudit.log | tail -1 | grep -v '"result":"refused"' |
	grep '"approvals":\["alice@example.org SHA256:' | grep -q '"dave@example.org SHA256:' &&
	ok "remote apply approved: the agent's record names alice and dave" ||
	no "remote apply approved: the agent's record names the approvers" "$(tail -2 aaudit.log)"
n_spool=$(find "$T/aprof" -mindepth 1 | wc -l)
[ "$n_spool" -eq 0 ] && ok "remote apply: the agent leaves no spooled profile or signature" ||
	no "remote apply: spool left behind" "$(find "$T/aprof")"
for bad in "../x.sig" "a/b.sig"; do
	out=$(raw_sig "$bad" 2>&1)
	case $out in
	"2 "*"not a plain signature file name"*) ok "a signature file named '$bad': refused by the agent" ;;
	*) no "a signature file named '$bad': refused by the agent" "$out" ;;
	esac
done
[ ! -e "$T/x.sig" ] && [ ! -e "$T/aprof/a" ] && ok "no file written outside the agent's spool" ||
	no "a file written outside the spool" "$(ls "$T" "$T/aprof")"
grep -q '"action":"request".*"result":"refused".*not a plain signature file name' aaudit.log &&
	ok "the refused signature file name: audited by the agent's host" ||
	no "the refused signature file name: audited" "$(tail -2 aaudit.log)"
out=$(raw_sig "alice.sig" 2>&1)
case $out in
"1 "*"1 of 2 required signed (signed by alice@example.org"*) ok "the raw client's plain name: accepted and checked (1 of 2)" ;;
*) no "the raw client's plain name: accepted and checked" "$out" ;;
esac
agent_stop
agent_start "$T/none.conf"
run "remote apply, agent without a policy: applies as before" 0 "already matches appr version 8" \
	apply --target unix:"$T/agent.sock" p8.yaml
agent_stop

# ---- 6. a policy that cannot be read is not a policy met ----
echo "require: two of allowed_signers" >approvals.conf
run "a malformed policy: 2, file:line" 2 "approvals\.conf:1: expected 'require: N of ALLOWED_SIGNERS'" apply $H p8.yaml
echo "require: 1 of nothere" >approvals.conf
run "a missing allowed_signers: 2" 2 "nothere: No such file" apply $H p8.yaml
echo "require: 1 of allowed_signers" >approvals.conf
echo "ca@example.org cert-authority $(cut -d' ' -f1,2 alice.pub)" >>allowed_signers
run "cert-authority: 2, file:line" 2 "allowed_signers:5: cert-authority is not supported" apply $H p8.yaml
"$F" audit verify --log "$T/audit.log" --pubkey "$T/audit.pub" >"$T/err" 2>&1 && ok "the audit log verifies" ||
	no "the audit log verifies"
echo "approvals: $P passed, $N failed"
[ $N -eq 0 ]
