#!/bin/bash
# SPDX-License-Identifier: MIT
# Approvals in the evidence bundle (issue 30, "In the audit log and the evidence"; docs/audit.md
# "Approvals"): a host with `require: 2 of allowed_signers` applies two approved versions
# (fresh ssh-keygen keys, signatures by ssh-keygen -Y sign and fabricctl approve), in a
# network namespace of its own (unshare -rn) whose port eth9 is a bridge, as tests/cli/
# approvals.sh does. fabricctl evidence carries the signature files the records name (from the
# history) and the allowed_signers file; verify.sh accepts the genuine bundle with
# ssh-keygen -Y verify. Forged copies re-signed by both pinned bundle signers (so only the
# approval checks can catch them) are refused: a signature swapped for another key's, a
# signature over other bytes, allowed_signers edited to add a key (the forger's, under an
# approver's name, with the forger's signature), allowed_signers with an approver's key
# replaced, the approvals dropped; fabricctl evidence refuses without the signatures or the
# allowed_signers file.
# usage: evidence_approvals.sh [FABRICCTL] (default $FCTL_BUILD_DIR/fabricctl/fabricctl)
# Prints PASS/FAIL per check and "evidence_approvals: N passed, M failed"; exit 1 on a
# failure, 2 when it cannot run (a missing tool is a failure, never a skip).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
F=${1:-${FCTL_BUILD_DIR:-$ROOT/build}/fabricctl/fabricctl}
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
cannot() { echo "evidence_approvals: cannot run: $*" >&2; echo "evidence_approvals: $PASS passed, $((FAIL + 1)) failed"; exit 2; }
[ -x "$F" ] || cannot "no fabricctl at $F (build first, or give its path)"
F=$(cd "$(dirname "$F")" && pwd)/$(basename "$F")
for t in openssl jq sha256sum tar base64 python3 ssh-keygen unshare; do command -v $t >/dev/null || cannot "needs $t"; done
unshare -rn true 2>/dev/null || cannot "cannot make a network namespace (unshare -rn)"
export NO_COLOR=1 LC_ALL=C
unset FCTL_AUDIT_LOG FCTL_CHANGE_ID
T=$(mktemp -d /tmp/fctl-sec-evidence-appr.XXXXXX) || cannot "no temporary directory"
trap 'rm -rf -- "$T"' EXIT
cd "$T" || exit 2
for k in alice bob host; do "$F" audit keygen --out "$T/$k" >/dev/null || cannot "audit keygen"; done
# approvers: ann and ben in allowed_signers; eve is not
for w in ann ben eve; do ssh-keygen -q -t ed25519 -N '' -C $w -f $w || cannot "ssh-keygen"; done
chmod 600 ann ben eve
for w in ann ben; do echo "$w@example.org $(cut -d' ' -f1,2 $w.pub)"; done >allowed_signers
echo "require: 2 of allowed_signers" >approvals.conf
mk() { # FILE VERSION
	printf 'schema: 1\nprofile: { name: appr, version: %s }\nhosts:\n  - name: h1\n    ports: [{ name: eth9, mac: "52:54:00:fa:01:00", mtu: 1500 }]\n' "$2" >"$1"
}
mk p7.yaml 7 && mk p8.yaml 8 && mk p9.yaml 9
mkdir -p p7.yaml.sig.d && ssh-keygen -q -Y sign -f ann -n fabricctl-profile p7.yaml 2>/dev/null &&
	mv p7.yaml.sig p7.yaml.sig.d/ann.sig && "$F" approve -q --key ben --name ben p7.yaml &&
	"$F" approve -q --key ann --name ann p8.yaml && "$F" approve -q --key ben --name ben p8.yaml ||
	cannot "signing the profiles"
# the host: v7 then v8 applied (change CHG-1), each approved by ann and ben
export FCTL_APPROVALS_CONF=$T/approvals.conf
H="--host h1 --state-dir $T/sd --audit-log $T/host/audit.log --change CHG-1"
# shellcheck disable=SC2086
unshare -rn sh -c "ip link add eth9 type bridge && '$F' apply $H p7.yaml && '$F' apply $H p8.yaml" \
	>"$T/apply.out" 2>&1 || cannot "apply in a namespace: $(tail -3 "$T/apply.out")"
[ "$(grep -c '"approvals":\["' "$T/host/audit.log")" = 2 ] ||
	cannot "the apply records do not name approvals: $(tail -2 "$T/host/audit.log")"

evidence() { # OUT [ARGS...]: two signers; stderr in $T/err
	local out=$1
	shift
	"$F" evidence --log "$T/host/audit.log" --change CHG-1 --operator auditor --history "$T/sd/history" \
		--sign "$T/alice/audit.key" --sign "$T/bob/audit.key" --out "$out" "$@" >/dev/null 2>"$T/err"
}
evidence "$T/good.tar" || cannot "fabricctl evidence: $(cat "$T/err")"
mkdir "$T/good" && tar -xf "$T/good.tar" -C "$T/good" || cannot "tar -xf"
V=$T/verify.sh
cp "$T/good/verify.sh" "$V"
PIN=(--signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" --audit-pub "$T/host/audit.pub")
. "$ROOT/tests/security/lib/bundle.bash"

# --- the genuine bundle ------------------------------------------------------------------------
expect_ok genuine-verifies "$T/good" "${PIN[@]}"
grep -q "PASS: approvals: ssh-keygen -Y verify accepts each of the 4 approvals" "$T/out" &&
	pass genuine-approvals-checked || fail genuine-approvals-checked "$(grep 'approvals' "$T/out" | head -3 | tr '\n' ' ')"
expect_ok genuine-verifies-openssl-only "$T/good" "${PIN[@]}" --openssl-only
cmp -s "$T/good/approvals/allowed_signers" allowed_signers && pass carries-the-allowed-signers || fail carries-the-allowed-signers
jq -e '.format == 6 and .approvals == "approvals/approvals.json"' "$T/good/MANIFEST.json" >/dev/null &&
	pass manifest-format-6-names-approvals || fail manifest-format-6-names-approvals "$(jq -c '{format, approvals}' "$T/good/MANIFEST.json")"
GOT=$(jq -c '[.records[] | [.profile, [.approvals[].principal]]]' "$T/good/approvals/approvals.json" 2>/dev/null)
WANT='[["profiles/appr-v7.yaml",["ann@example.org","ben@example.org"]],["profiles/appr-v8.yaml",["ann@example.org","ben@example.org"]]]'
[ "$GOT" = "$WANT" ] && pass approvals-per-version || fail approvals-per-version "got $GOT"
# each carried signature is the file the record names, and OpenSSH accepts it by hand too
S=$(jq -r '.records[0].approvals[0].signature' "$T/good/approvals/approvals.json")
(cd "$T/good" && ssh-keygen -Y verify -n fabricctl-profile -f approvals/allowed_signers -I ann@example.org \
	-s "$S" <profiles/appr-v7.yaml) >/dev/null 2>&1 && pass ssh-keygen-by-hand || fail ssh-keygen-by-hand "$S"

# --- forged copies, re-signed by both pinned signers ----------------------------------------
export -f kid sign_env resign
export T
tampered() { # NAME REASON-REGEX SHELL-COMMANDS
	rm -rf "$T/x" && cp -a "$T/good" "$T/x"
	if ! (cd "$T/x" && eval "$3") >"$T/tamper.err" 2>&1; then
		fail "$1" "the tampering itself failed: $(head -c 300 "$T/tamper.err")"
		return
	fi
	expect_fail "$1" "$2" "$T/x" "${PIN[@]}"
}
rm -rf "$T/x" && cp -a "$T/good" "$T/x" && (cd "$T/x" && resign) && expect_ok resigned-unchanged-verifies "$T/x" "${PIN[@]}"
# replace_sig FILE: ann's signature of version 7 replaced by FILE's bytes under its name
replace_sig() { cp "$1" "$(jq -r '.records[0].approvals[0].signature' approvals/approvals.json)" && resign; }
# ann's signature of version 7 taken out of approvals.json and replaced by FILE's, named by its digest
rename_sig() {
	local old new
	old=$(jq -r '.records[0].approvals[0].signature' approvals/approvals.json)
	new=approvals/$(sha256sum <"$1" | cut -d' ' -f1).sig
	cp "$1" "$new" && rm "$old" &&
		jq --arg o "$old" --arg n "$new" '(.records[].approvals[] | select(.signature == $o)) |=
			(.signature = $n | .sha256 = ($n | ltrimstr("approvals/") | rtrimstr(".sig")))' approvals/approvals.json >a &&
		mv a approvals/approvals.json &&
		sed -i "s# $old\$# $new#" SHA256SUMS &&
		jq --indent 2 --arg o "$old" --arg n "$new" '.files |= map(if .name == $o then .name = $n else . end) | .files |= sort_by(.name)' MANIFEST.json >m &&
		mv m MANIFEST.json && resign
}
export -f replace_sig rename_sig
cp p7.yaml "$T/e7.yaml" && ssh-keygen -q -Y sign -f eve -n fabricctl-profile "$T/e7.yaml" 2>/dev/null || cannot "eve signs"
cp p9.yaml "$T/a9.yaml" && ssh-keygen -q -Y sign -f ann -n fabricctl-profile "$T/a9.yaml" 2>/dev/null || cannot "ann signs v9"
SSHNO="ssh-keygen -Y verify refuses the signature of ann@example.org over profiles/appr-v7.yaml"
NOTREC="the signature of ann@example.org \(approvals/[0-9a-f]{64}\.sig\) is not the file whose SHA-256 the record names"
# two findings each: the file is not the one the record names, and OpenSSH refuses it
bothfail() { grep -Eq "FAIL: approvals: .*$SSHNO" "$T/out" && grep -Eq "FAIL: approvals: .*$NOTREC" "$T/out" &&
	[ "$(grep -c '^FAIL' "$T/out")" = 2 ] && pass "$1" || fail "$1" "$(grep '^FAIL' "$T/out" | head -3 | tr '\n' ' ')"; }
tampered signature-of-another-key-resealed "$SSHNO" 'replace_sig "$T/e7.yaml.sig"'
bothfail signature-of-another-key-not-the-recorded-file
tampered signature-over-other-bytes-resealed "$SSHNO" 'replace_sig "$T/a9.yaml.sig"'
bothfail signature-over-other-bytes-not-the-recorded-file
# the swapped signature named by its own digest in approvals.json: not what the record names
tampered signature-renamed-resealed "names the approval 'ann@example.org SHA256:.* which approvals/approvals.json does not carry" \
	'rename_sig "$T/e7.yaml.sig"'
grep -q "approvals/approvals.json carries '1 ann@example.org .*', which no selected record names" "$T/out" &&
	pass signature-renamed-extra-entry-named || fail signature-renamed-extra-entry-named "$(grep '^FAIL' "$T/out" | head -3 | tr '\n' ' ')"
# the forger's key added under ann's name, and the forger's signature in place of ann's:
# OpenSSH accepts it, the record's key fingerprint and signature digest do not match
tampered allowed-signers-key-added-resealed "is signed by another key than the record's SHA256:" \
	'echo "ann@example.org $(cut -d" " -f1,2 "$T/eve.pub")" >>approvals/allowed_signers && replace_sig "$T/e7.yaml.sig"'
grep -Eq "FAIL: approvals: .*$NOTREC" "$T/out" && ! grep -q "ssh-keygen -Y verify refuses" "$T/out" &&
	pass allowed-signers-key-added-openssh-accepts-record-refuses || fail allowed-signers-key-added-openssh-accepts-record-refuses "$(grep '^FAIL' "$T/out" | head -3 | tr '\n' ' ')"
# the genuine signatures, allowed_signers with ann's key replaced by eve's: OpenSSH refuses
tampered allowed-signers-key-replaced-resealed "ssh-keygen -Y verify refuses the signature of ann@example.org" \
	'sed -i "s#^ann@example.org .*#ann@example.org $(cut -d" " -f1,2 "$T/eve.pub")#" approvals/allowed_signers && resign'
tampered approvals-dropped-resealed "names approvals, yet the bundle carries none" \
	'rm -r approvals && jq --indent 2 ".approvals = null | .files |= map(select(.name | startswith(\"approvals/\") | not))" MANIFEST.json >m &&
	 mv m MANIFEST.json && grep -v " approvals/" SHA256SUMS >s; mv s SHA256SUMS && resign'

# --- fabricctl evidence: what it needs --------------------------------------------------------
(export -n FCTL_APPROVALS_CONF; FCTL_APPROVALS_CONF=$T/none.conf evidence "$T/no.tar")
rc=$?
[ $rc = 2 ] && grep -q -- "--allowed-signers FILE" "$T/err" && [ ! -e "$T/no.tar" ] &&
	pass evidence-refuses-without-allowed-signers || fail evidence-refuses-without-allowed-signers "exit $rc: $(cat "$T/err")"
FCTL_APPROVALS_CONF=$T/none.conf evidence "$T/as.tar" --allowed-signers "$T/allowed_signers" &&
	cmp -s "$T/as.tar" "$T/good.tar" && pass evidence-allowed-signers-option || fail evidence-allowed-signers-option "$(cat "$T/err")"
cp -a "$T/sd/history" "$T/h2" && rm -r "$T"/h2/*.sig.d
evidence "$T/no.tar" --history "$T/h2"
rc=$?
[ $rc = 2 ] && grep -q "names the approval of ann@example.org (signature sha256:[0-9a-f]*), but no signature file" "$T/err" && [ ! -e "$T/no.tar" ] &&
	pass evidence-refuses-without-the-signatures || fail evidence-refuses-without-the-signatures "exit $rc: $(cat "$T/err")"

echo "evidence_approvals: $PASS passed, $FAIL failed"
[ $FAIL = 0 ]
