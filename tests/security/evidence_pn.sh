#!/bin/bash
# SPDX-License-Identifier: MIT
# The evidence bundle's packet-number ranges (issue 28, "Evidence"; docs/audit.md
# "Packet-number evidence"): an auditor is shown, per key, SCI and direction, the PN ranges
# the host's packet-number ledger recorded, the ledger anchored in the hash-chained, signed
# audit log by sa-ledger records, and verify.sh refuses overlapping ranges (a nonce used
# twice). Here, with logs and ledgers written as the tool writes them (audit append in a
# -DFCTL_TEST_HOOKS=ON build): a genuine bundle verifies and carries the expected ranges; a
# bundle whose ranges were edited to overlap, or to disagree with the ledger, or whose ledger
# was edited, then re-signed by both pinned signers (so only the PN checks can catch it), is
# refused naming the key, SCI and ranges; so is a genuine bundle of a host whose ledger
# records a reuse; fabricctl evidence refuses a ledger that is not the one the log anchors.
# usage: evidence_pn.sh [FABRICCTL] (default $FCTL_BUILD_DIR/fabricctl/fabricctl)
# Prints PASS/FAIL per check and "evidence_pn: N passed, M failed"; exit 1 on a failure, 2
# when it cannot run (a missing tool is a failure, never a skip).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
F=${1:-${FCTL_BUILD_DIR:-$ROOT/build}/fabricctl/fabricctl}
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
cannot() { echo "evidence_pn: cannot run: $*" >&2; echo "evidence_pn: $PASS passed, $((FAIL + 1)) failed"; exit 2; }
[ -x "$F" ] || cannot "no fabricctl at $F (build first, or give its path)"
F=$(cd "$(dirname "$F")" && pwd)/$(basename "$F") # the test works in its own directory
for t in openssl jq sha256sum tar base64 python3; do command -v $t >/dev/null || cannot "needs $t"; done
export NO_COLOR=1 LC_ALL=C FCTL_TEST_AUDIT_APPEND_AS_TOOL=1
unset FCTL_AUDIT_LOG
T=$(mktemp -d /tmp/fctl-sec-evidence-pn.XXXXXX) || cannot "no temporary directory"
trap 'rm -rf -- "$T"' EXIT
cd "$T" || exit 2
for k in alice bob host reuse; do "$F" audit keygen --out "$T/$k" >/dev/null || cannot "audit keygen"; done

# keys by their ledger names (never key bytes) and KEYIDs; our SCI (TX) and the peer's (RX)
H1=11111111111111111111111111111111 K1=a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1
H2=22222222222222222222222222222222 K2=b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2
H3=33333333333333333333333333333333 K3=c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3
H9=99999999999999999999999999999999 K9=f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9
SCI=0x525400fa01000001 PEER=0x525400fa02000001
# a host's life, as its SA door writes it: version 1's key K1 from PN 1; version 2's K2
# replaces it (K1 retired at 38); a rollback to version 1 (K2 retired at 1000, K1 continues
# at 38); the peer's key K3 received from 1, never retired (still live); then K2 retired
# again where it stopped (an SA added inactive, a crash before it was recorded, recovery
# removed it: no PN used), and K9, in an SA from before the ledger existed, first seen
# when it was retired at 500 (known by KEYID only), installed again from there
LIFE=("live tx $H1 $K1 $SCI 1" "live rx $H3 $K3 $PEER 1" @
	"retired tx $H1 $K1 $SCI 38" "live tx $H2 $K2 $SCI 1" @
	"retired tx $H2 $K2 $SCI 1000" "live tx $H1 $K1 $SCI 38" @
	"retired tx $H2 $K2 $SCI 1000" "retired tx - $K9 $SCI 500" "live tx $H9 $K9 $SCI 500" @)
# host LOGDIR LEDGER LINES...: the ledger written line by line; at each "@" an apply record
# of change CHG-1 and its sa-ledger record (the ledger's length and SHA-256 then), as apply
# writes them; then a record of another change
host() {
	local dir=$1 led=$2 l n=0
	shift 2
	local A=("$F" audit append --log "$dir/audit.log" --host h1)
	printf 'fabricctl-sa-ledger 1\n' >"$led"
	for l; do
		if [ "$l" != @ ]; then printf '%s\n' "$l" >>"$led"; continue; fi
		n=$((n + 1))
		"${A[@]}" --action apply --result applied --change CHG-1 --profile-name lab-pair \
			--profile-version $n --key-id 0011223344556677 || return 1
		"${A[@]}" --action sa-ledger --result anchored --change CHG-1 \
			--detail "bytes=$(wc -c <"$led") sha256=$(sha256sum "$led" | cut -d' ' -f1)" || return 1
	done
	"${A[@]}" --action drift --result found --change CHG-2
} >/dev/null 2>&1
host "$T/host" "$T/sa-ledger" "${LIFE[@]}" || cannot "audit append (a build without -DFCTL_TEST_HOOKS=ON refuses the tool's actions)"
"$F" evidence --help 2>&1 | grep -q -- --ledger || fail evidence-has-ledger-option "fabricctl evidence has no --ledger"
evidence() { # OUT LOGDIR LEDGER -> OUT (two signers); stderr in $T/err
	"$F" evidence --log "$2/audit.log" --change CHG-1 --operator auditor --ledger "$3" \
		--sign "$T/alice/audit.key" --sign "$T/bob/audit.key" --out "$1" >/dev/null 2>"$T/err"
}
evidence "$T/good.tar" "$T/host" "$T/sa-ledger" || cannot "fabricctl evidence: $(cat "$T/err")"
mkdir "$T/good" && tar -xf "$T/good.tar" -C "$T/good" || cannot "tar -xf"
V=$T/verify.sh # the auditor's copy: the genuine bundle's
cp "$T/good/verify.sh" "$V"
PIN=(--signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" --audit-pub "$T/host/audit.pub")
# verify_in, expect_ok, expect_fail, sign_env, kid, resign (re-signing by alice and bob)
. "$ROOT/tests/security/lib/bundle.bash"

# --- the genuine bundle ---------------------------------------------------------------------
expect_ok genuine-verifies "$T/good" "${PIN[@]}"
expect_ok genuine-verifies-openssl-only "$T/good" "${PIN[@]}" --openssl-only
grep -q "PASS: pn: no two PN ranges of one key, SCI and direction overlap" "$T/out" &&
	pass genuine-pn-check-ran || fail genuine-pn-check-ran "$(grep 'pn:' "$T/out" | head -3 | tr '\n' ' ')"
if cmp -s "$T/good/pn/sa-ledger" "$T/sa-ledger"; then pass genuine-carries-the-anchored-ledger; else fail genuine-carries-the-anchored-ledger; fi
# the ranges, as the life above gives them: K1 [1, 38) and [38, open), K2 [1, 1000), K3 [1, open),
# K9 [unknown, 500) and [500, open)
WANT='[["'$H1'","tx","1","38"],["'$H3'","rx","1",null],["'$H2'","tx","1","1000"],["'$H1'","tx","38",null],'
WANT+='["-","tx",null,"500"],["'$H9'","tx","500",null]]'
GOT=$(jq -c '[.ranges[] | [.key, .dir, .first, .next]]' "$T/good/pn/ranges.json" 2>/dev/null)
[ "$GOT" = "$WANT" ] && pass genuine-ranges-as-recorded || fail genuine-ranges-as-recorded "got $GOT"
jq -e '.pn.anchor_seq == 8 and .pn.bytes == '"$(wc -c <"$T/sa-ledger")"' and .format == 6' "$T/good/MANIFEST.json" >/dev/null &&
	pass manifest-names-the-anchor || fail manifest-names-the-anchor "$(jq -c .pn "$T/good/MANIFEST.json" 2>/dev/null)"

# --- forged copies, re-signed by both pinned signers: only the PN checks can catch them ------
# the ledger's new length and digest into the manifest (so that only the anchors disagree)
manifest_pn() { jq --indent 2 --argjson b "$(wc -c <pn/sa-ledger)" --arg h "$(sha256sum pn/sa-ledger | cut -d' ' -f1)" \
	'.pn.bytes = $b | .pn.sha256 = $h' MANIFEST.json >"$T/m.new" && mv "$T/m.new" MANIFEST.json; }
export -f kid sign_env resign manifest_pn
export T H1 H2 SCI
tampered() { # NAME REASON-REGEX SHELL-COMMANDS [verify.sh mode]
	local name=$1 why=$2
	rm -rf "$T/x" && cp -a "$T/good" "$T/x"
	if ! (cd "$T/x" && eval "$3") >"$T/tamper.err" 2>&1; then
		fail "$name" "the tampering itself failed: $(head -c 300 "$T/tamper.err")"
		return
	fi
	expect_fail "$name" "$why" "$T/x" "${PIN[@]}" ${4:+"$4"}
}
# the control: re-signing alone verifies, so each case below fails by the check it names
rm -rf "$T/x" && cp -a "$T/good" "$T/x" && (cd "$T/x" && resign) && expect_ok resigned-unchanged-verifies "$T/x" "${PIN[@]}"
OVER="pn: key $H1 \(KEYID $K1\) SCI $SCI tx: PN ranges \[1, 38\) .* and \[20, unknown\) .* overlap"
# the rollback's K1 said to restart at 20, below where it stopped (38): ranges that overlap
tampered ranges-edited-to-overlap-resealed "$OVER" \
	'jq -c ".ranges[3].first = \"20\"" pn/ranges.json >r && mv r pn/ranges.json && resign'
grep -q "FAIL: pn: pn/ranges.json disagrees with the ledger .*range 4: the ledger gives .*\"38\".* says .*\"20\"" "$T/out" &&
	pass ranges-edited-to-overlap-resealed-disagrees || fail ranges-edited-to-overlap-resealed-disagrees "$(grep '^FAIL' "$T/out" | head -3 | tr '\n' ' ')"
# K2 said to have stopped at 900 (no overlap): not what the ledger's lines give
tampered ranges-disagree-with-ledger-resealed "pn/ranges.json disagrees with the ledger .*range 3: the ledger gives .*\"1000\".* says .*\"900\"" \
	'jq -c ".ranges[2].next = \"900\"" pn/ranges.json >r && mv r pn/ranges.json && resign'
# the ledger edited (K2's retirement 1000 -> 999) and its ranges to match: its anchors do not
for m in "" --openssl-only; do
	tampered "ledger-edited-ranges-to-match-resealed${m:+-openssl-only}" "pn/sa-ledger is not the ledger audit record 6 anchors" \
		'sed -i "s/ 1000\$/ 999/" pn/sa-ledger && jq -c ".ranges[2].next = \"999\"" pn/ranges.json >r &&
		 mv r pn/ranges.json && manifest_pn && resign' "$m"
done
# the ledger cut back to an earlier anchor (hiding what came after), the manifest to match
tampered ledger-cut-to-earlier-anchor-resealed "pn/sa-ledger is not the ledger audit record 6 anchors" \
	'head -n 5 pn/sa-ledger >l && mv l pn/sa-ledger && jq -c ".ranges |= .[:3] | .ranges[2].next = null" pn/ranges.json >r &&
	 mv r pn/ranges.json && manifest_pn && resign'
# the PN evidence dropped altogether while the window's records anchor a ledger
tampered pn-evidence-dropped-resealed "anchors the packet-number ledger, yet the bundle carries none" \
	'rm -r pn && jq --indent 2 ".pn = null | .files |= map(select(.name | startswith(\"pn/\") | not))" MANIFEST.json >m &&
	 mv m MANIFEST.json && grep -v " pn/" SHA256SUMS >s; mv s SHA256SUMS && resign'

# --- a host that used a nonce twice: its genuine records say so, and verify.sh refuses -------
# K1 back at PN 1 after it stopped at 38 (what a static-key reinstall without the ledger does),
# and K2 installed again while its first SA's end was never recorded (an open range)
REUSE=("live tx $H1 $K1 $SCI 1" @ "retired tx $H1 $K1 $SCI 38" @ "live tx $H1 $K1 $SCI 1"
	"live tx $H2 $K2 $SCI 5" @ "live tx $H2 $K2 $SCI 100" @)
host "$T/reuse" "$T/reuse-ledger" "${REUSE[@]}" || cannot "audit append (reuse log)"
if evidence "$T/reuse.tar" "$T/reuse" "$T/reuse-ledger"; then
	mkdir "$T/re" && tar -xf "$T/reuse.tar" -C "$T/re"
	PINR=(--signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" --audit-pub "$T/reuse/audit.pub")
	expect_fail reuse-recorded-refused "pn: key $H1 \(KEYID $K1\) SCI $SCI tx: PN ranges \[1, 38\) .* and \[1, unknown\) .* overlap: a nonce used twice" "$T/re" "${PINR[@]}"
	grep -Eq "pn: key $H2 \(KEYID $K2\) SCI $SCI tx: PN ranges \[5, unknown\) .* and \[100, unknown\) .* overlap" "$T/out" &&
		pass reuse-open-ended-range-overlaps-later-start || fail reuse-open-ended-range-overlaps-later-start "$(grep '^FAIL' "$T/out" | head -3 | tr '\n' ' ')"
	[ "$(grep -c '^FAIL' "$T/out")" = 2 ] && pass reuse-only-the-pn-check-fails || fail reuse-only-the-pn-check-fails "$(grep '^FAIL' "$T/out" | tr '\n' ' ')"
else
	fail reuse-recorded-refused "fabricctl evidence: $(cat "$T/err")"
fi

# --- fabricctl evidence: the ledger must be the one the log anchors ---------------------------
cp "$T/sa-ledger" "$T/edited" && sed -i "s/ 1000\$/ 999/" "$T/edited"
evidence "$T/no.tar" "$T/host" "$T/edited"
rc=$?
[ $rc = 1 ] && grep -q "is not the one audit record 6 anchors" "$T/err" && [ ! -e "$T/no.tar" ] &&
	pass evidence-refuses-an-edited-ledger || fail evidence-refuses-an-edited-ledger "exit $rc: $(cat "$T/err")"
evidence "$T/no.tar" "$T/host" "$T/nonexistent"
rc=$?
[ $rc = 2 ] && grep -q -- "--ledger FILE" "$T/err" && [ ! -e "$T/no.tar" ] &&
	pass evidence-refuses-without-the-ledger || fail evidence-refuses-without-the-ledger "exit $rc: $(cat "$T/err")"
# a ledger that went on after the window's last anchor: the bundle shows what the log vouches for
cp "$T/sa-ledger" "$T/longer" && echo "retired rx $H3 $K3 $PEER 77" >>"$T/longer"
if evidence "$T/longer.tar" "$T/host" "$T/longer" && tar -xOf "$T/longer.tar" pn/sa-ledger | cmp -s - "$T/sa-ledger"; then
	pass evidence-carries-the-anchored-prefix
else
	fail evidence-carries-the-anchored-prefix "$(cat "$T/err")"
fi
# a manual record cannot pose as an anchor
mkdir "$T/manual"
if env -u FCTL_TEST_AUDIT_APPEND_AS_TOOL "$F" audit append --log "$T/manual/audit.log" --action sa-ledger \
	--result anchored --detail "bytes=22 sha256=$(printf 'fabricctl-sa-ledger 1\n' | sha256sum | cut -d' ' -f1)" >/dev/null 2>"$T/err"; then
	fail manual-sa-ledger-refused "audit append wrote a manual sa-ledger record"
else
	grep -q "'sa-ledger'" "$T/err" && pass manual-sa-ledger-refused || fail manual-sa-ledger-refused "$(cat "$T/err")"
fi

echo "evidence_pn: $PASS passed, $FAIL failed"
[ $FAIL = 0 ]
