#!/bin/bash
# SPDX-License-Identifier: MIT
# Evidence bundles an attacker changed must not verify. The finding: a forged test-result
# statement added to a genuine dual-signed bundle, plus its line in SHA256SUMS (signed by
# nothing), passed verify.sh with both signers and the audit key pinned; dotfiles and
# look-alike names were never flagged; without pins the keys inside the bundle were trusted.
# Here: a genuine bundle (fabricctl evidence, two --sign keys) verifies with pins, and each
# tampered copy fails with its stated reason, using the genuine bundle's verify.sh (the
# auditor's own copy, not the one in the tampered bundle); every DSSE envelope also verifies
# with securesystemslib (tests/security/evidence_dsse_check.py), which rejects a modified one.
# usage: evidence_tamper.sh [FABRICCTL] (default $FCTL_BUILD_DIR/fabricctl/fabricctl)
# Prints PASS/FAIL per check, "evidence_tamper: N passed, M failed"; exit 1 on a failure,
# 2 when it cannot run (a missing tool is a failure, never a skip).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
F=${1:-${FCTL_BUILD_DIR:-$ROOT/build}/fabricctl/fabricctl}
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's, where python3-securesystemslib is
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
cannot() { echo "evidence_tamper: cannot run: $*" >&2; echo "evidence_tamper: $PASS passed, $((FAIL + 1)) failed"; exit 2; }
[ -x "$F" ] || cannot "no fabricctl at $F (build first, or give its path)"
for t in openssl jq sha256sum tar base64; do command -v $t >/dev/null || cannot "needs $t"; done
"$PY" -c 'import securesystemslib.signer' 2>/dev/null || cannot "needs python3-securesystemslib for $PY (scripts/deps.sh)"
export NO_COLOR=1 LC_ALL=C
# the log's applies, rotations and probes as the tool writes them (audit append stands in for
# the programs in a build with -DFCTL_TEST_HOOKS=ON: docs/audit.md "Manual records")
export FCTL_TEST_AUDIT_APPEND_AS_TOOL=1
unset FCTL_AUDIT_LOG
T=$(mktemp -d /tmp/fctl-sec-evidence.XXXXXX) || cannot "no temporary directory"
trap 'rm -rf -- "$T"' EXIT

# --- the genuine bundle: one host log, two signers -------------------------------------------
cd "$T" || exit 2
for k in alice bob mallory eve host other; do "$F" audit keygen --out "$T/$k" >/dev/null || cannot "audit keygen"; done
printf 'name: lab-pair\nversion: 2\n' >"$T/prof.yaml"
SHA=$(sha256sum "$T/prof.yaml" | cut -d' ' -f1)
records() { # LOGDIR [FIRST-HOST]: the records of change CHG-1 and one of another change
	local A=("$F" audit append --log "$1/audit.log")
	"${A[@]}" --action apply --result applied --host "${2:-h1}" --change CHG-1 --profile-name lab-pair \
		--profile-version 2 --profile-sha256 "$SHA" --key-id 0011223344556677 --kcv a1b2c3 &&
		"${A[@]}" --action key-rotate --result committed --host h1 --change CHG-1 \
			--key-id 0011223344556677 --kcv a1b2c3 --key-state active &&
		"${A[@]}" --action probe --result pass --host h1 --change CHG-1 \
			--detail "send_lat size=2 link=h1-h2: latency_p99_us=40 macsec=ok" &&
		"${A[@]}" --action probe --result fail --host h1 --change CHG-1 \
			--detail "write_bw size=65536 link=h1-h2: bw_gbps=1 macsec=ok" &&
		"${A[@]}" --action apply --result applied --host h2 --change CHG-2
} >/dev/null 2>&1
records "$T/host" || cannot "audit append (a build without -DFCTL_TEST_HOOKS=ON refuses the tool's actions)"
cp "$T/host/audit.log.checkpoints" "$T/trusted.cp" # what an auditor kept of this log
records "$T/other" || cannot "audit append (other log)"
evidence() { # OUT LOGDIR SIGNKEY... -> OUT
	local out=$1 log=$2
	shift 2
	local s=() k
	for k in "$@"; do s+=(--sign "$T/$k/audit.key"); done
	"$F" evidence --log "$log/audit.log" --change CHG-1 --profile "$T/prof.yaml" --operator auditor \
		"${s[@]}" --out "$out" >/dev/null 2>"$T/err"
}
evidence "$T/good.tar" "$T/host" alice bob || cannot "fabricctl evidence: $(cat "$T/err")"
mkdir "$T/good" && tar -xf "$T/good.tar" -C "$T/good" || cannot "tar -xf"
V=$T/verify.sh # the auditor's copy: the genuine bundle's
cp "$T/good/verify.sh" "$V"
PIN=(--signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" --audit-pub "$T/host/audit.pub")
ATT=attestations.intoto.jsonl
# verify_in, expect_ok, expect_fail, sign_env, kid, resign (re-signing by alice and bob)
. "$ROOT/tests/security/lib/bundle.bash"

# tampered NAME REASON-REGEX SHELL-COMMANDS: a copy of the genuine bundle, changed by the
# commands (run inside it), must fail with the reason (with the pins of the genuine bundle)
tampered() {
	local name=$1 why=$2
	rm -rf "$T/x" && cp -a "$T/good" "$T/x"
	if ! (cd "$T/x" && eval "$3") >"$T/tamper.err" 2>&1; then
		fail "$name" "the tampering itself failed: $(head -c 300 "$T/tamper.err")"
		return
	fi
	expect_fail "$name" "$why" "$T/x" "${PIN[@]}" "${MODE[@]}"
}
# both NAME REASON-REGEX SHELL-COMMANDS: tampered, with verify.sh's python3 helper (the
# default: hashes and signatures in one process) and again with --openssl-only (the openssl
# tool alone, one process per signature): each path must catch it
MODE=()
both() {
	tampered "$@"
	MODE=(--openssl-only)
	tampered "$1-openssl-only" "${@:2}"
	MODE=()
}
# stmt_edit LINE SED-EXPR: envelope LINE of attestations.intoto.jsonl with its statement edited
stmt_edit() {
	local p
	p=$(sed -n "$1p" $ATT | jq -r '.payload | @base64d' | sed "$2" | base64 -w0)
	jq -c --arg p "$p" "if input_line_number == $1 then .payload = \$p else . end" $ATT >t && mv t $ATT
}
export -f sign_env stmt_edit kid
export T ATT F

# --- the genuine bundle verifies, and only with a trust anchor --------------------------------
expect_ok genuine-with-pins "$T/good" "${PIN[@]}"
if grep -q "no python3 with OpenSSL's libcrypto 3" "$T/out"; then
	fail genuine-checked-by-the-python3-helper "verify.sh fell back to the openssl tool: $(grep 'no python3' "$T/out")"
else
	pass genuine-checked-by-the-python3-helper
fi
expect_ok genuine-with-pins-openssl-only "$T/good" "${PIN[@]}" --openssl-only
expect_ok genuine-from-tar "$T" --tar "$T/good.tar" "${PIN[@]}"
expect_ok genuine-with-trusted-checkpoint "$T/good" --signer-pub "$T/alice/audit.pub" \
	--signer-pub "$T/bob/audit.pub" --trusted-checkpoint "$T/trusted.cp"
expect_fail unpinned-run-refused "no trust anchor" "$T/good"
expect_fail signers-pinned-no-audit-anchor "no audit trust anchor" "$T/good" \
	--signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub"
expect_fail one-pin-for-two-required-signatures "the bundle requires 2" "$T/good" \
	--signer-pub "$T/alice/audit.pub" --audit-pub "$T/host/audit.pub"
if verify_in "$T/good" --self-consistency-only && grep -q "proves nothing about who wrote" "$T/out"; then
	pass self-consistency-only-says-it-proves-nothing
else
	fail self-consistency-only-says-it-proves-nothing "$(tail -2 "$T/out" | tr '\n' ' ')"
fi

# --- the finding: a forged test-result statement plus its SHA256SUMS line --------------------
# record 4 is the failed write_bw probe; the forgery says it passed, naming the record's real digest
R4=$(sed -n 4p "$T/good/audit/slice.jsonl" | tr -d '\n' | sha256sum | cut -d' ' -f1)
FORGED='{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"audit/slice.jsonl#seq=4","digest":{"sha256":"'$R4'"}}],"predicateType":"https://in-toto.io/attestation/test-result/v0.1","predicate":{"result":"PASSED","passedTests":["write_bw size=65536 link=h1-h2"],"failedTests":[],"warnedTests":[]}}'
export FORGED
tampered forged-attestation-file-plus-sums-line "'attestations/00000099-probe.json' is not listed in the signed manifest" \
	'mkdir -p attestations && printf "%s\n" "$FORGED" >attestations/00000099-probe.json &&
	 sha256sum attestations/00000099-probe.json >>SHA256SUMS'
tampered forged-envelope-signed-by-unpinned-key-plus-sums "in-toto: envelope 5: 0 signatures by .*alice" \
	'printf "%s" "$FORGED" >"$T/forged.json" &&
	 sign_env "$T/mallory/audit.key" application/vnd.in-toto+json "$T/forged.json" "$(kid "$T/mallory/audit.pub")" >>$ATT &&
	 sed -i "/  $ATT\$/d" SHA256SUMS && sha256sum $ATT >>SHA256SUMS'
both forged-envelope-claiming-alice-keyid "in-toto: envelope 5: the signature by .*alice.* does NOT verify" \
	'printf "%s" "$FORGED" >"$T/forged.json" &&
	 sign_env "$T/mallory/audit.key" application/vnd.in-toto+json "$T/forged.json" "$(kid "$T/alice/audit.pub")" >>$ATT'
# --- files the signed manifest does not list ---------------------------------------------------
tampered dotfile "'.evidence' is not listed in the signed manifest" 'echo "PASSED" >.evidence'
tampered dotfile-in-subdirectory "'keys/.x.json' is not listed in the signed manifest" \
	'echo "{}" >keys/.x.json'
tampered look-alike-MANIFEST.jso. "'MANIFEST.jso.' is not listed in the signed manifest" 'cp MANIFEST.json MANIFEST.jso.'
tampered empty-unlisted-directory "directory 'extra' holds no listed file" 'mkdir extra'
tampered SHA256SUMS-edited "SHA256SUMS does not match its size and SHA-256 in the signed manifest" \
	'sed -i "1s/^./0/" SHA256SUMS'
tampered MANIFEST.json-edited "MANIFEST.json is not the payload of the signed envelope" \
	'sed -i "s/\"auditor\"/\"someone\"/" MANIFEST.json'
tampered bundled-verify.sh-replaced "verify.sh does not match its size and SHA-256" 'printf "exit 0\n" >verify.sh'
# --- the statements ------------------------------------------------------------------------------
both statement-modified "in-toto: envelope 4: the signature by .* does NOT verify" \
	'stmt_edit 4 "s/\"FAILED\"/\"PASSED\"/"'
tampered statement-dropped "in-toto: 3 envelopes, the signed manifest says 4" 'sed -i 4d $ATT'
tampered envelopes-reordered "in-toto: envelope 4: record 3 comes after record 4" \
	'sed -n 1,2p $ATT >t && sed -n 4p $ATT >>t && sed -n 3p $ATT >>t && mv t $ATT'
tampered envelope-duplicated "in-toto: envelope 2: record 1 comes after record 1 \(reordered or repeated\)" \
	'sed -i 1p $ATT'
tampered statement-payload-type-changed "in-toto: envelope 1: payloadType" \
	'jq -c "if input_line_number == 1 then .payloadType = \"application/json\" else . end" $ATT >t && mv t $ATT'
both statement-signature-removed "in-toto: envelope 2: 0 signatures by .*bob" \
	'jq -c "if input_line_number == 2 then .signatures |= .[:1] else . end" $ATT >t && mv t $ATT'
# each signature valid, but over another envelope's statement
both signatures-swapped-between-envelopes "in-toto: envelope 1: the signature by .*alice.* does NOT verify" \
	'jq -c -s ".[0].signatures as \$a | .[1].signatures as \$b | .[0].signatures = \$b | .[1].signatures = \$a | .[]" $ATT >t && mv t $ATT'
# --- the signatures on the manifest --------------------------------------------------------------
tampered one-of-two-manifest-signatures-removed "manifest envelope: 0 signatures by .*bob" \
	'jq -c ".signatures |= .[:1]" MANIFEST.dsse.json >t && mv t MANIFEST.dsse.json'
tampered manifest-signature-swapped "manifest envelope: the signature by .*bob.* does NOT verify" \
	'jq -c ".signatures[1].sig = .signatures[0].sig" MANIFEST.dsse.json >t && mv t MANIFEST.dsse.json'
tampered keys-swapped-inside-bundle "keys/signers/signer-1.pub does not match its size and SHA-256" \
	'cp "$T/mallory/audit.pub" keys/signers/signer-1.pub'
evidence "$T/m.tar" "$T/host" mallory bob || cannot "fabricctl evidence (mallory): $(cat "$T/err")"
mkdir "$T/m" && tar -xf "$T/m.tar" -C "$T/m"
expect_fail signed-by-an-unpinned-key "manifest envelope: 0 signatures by .*alice" "$T/m" "${PIN[@]}"
# the same signer pinned twice: one signature must not count as the two an auditor asked for
evidence "$T/one.tar" "$T/host" alice || cannot "fabricctl evidence (alice alone): $(cat "$T/err")"
mkdir "$T/one" && tar -xf "$T/one.tar" -C "$T/one"
expect_fail one-signer-pinned-twice "signer key .*the same key as one pinned before" "$T/one" \
	--signer-pub "$T/alice/audit.pub" --signer-pub "$T/alice/audit.pub" --audit-pub "$T/host/audit.pub"
expect_fail one-signer-pinned-twice-openssl-only "signer key .*the same key as one pinned before" "$T/one" \
	--signer-pub "$T/alice/audit.pub" --signer-pub "$T/alice/audit.pub" --audit-pub "$T/host/audit.pub" --openssl-only
evidence "$T/forged.tar" "$T/other" mallory eve || cannot "fabricctl evidence (forged): $(cat "$T/err")"
mkdir "$T/forged" && tar -xf "$T/forged.tar" -C "$T/forged"
expect_fail forged-end-to-end "manifest envelope: 0 signatures by .*alice.*|the checkpoint is not signed by" "$T/forged" "${PIN[@]}"
if verify_in "$T/forged" --self-consistency-only && grep -q "proves nothing about who wrote" "$T/out"; then
	pass forged-end-to-end-self-consistent-says-proves-nothing
else
	fail forged-end-to-end-self-consistent-says-proves-nothing "$(tail -2 "$T/out" | tr '\n' ' ')"
fi
# --- the audit log --------------------------------------------------------------------------------
# the window and its proofs; resum: SHA256SUMS and the manifest's file list are signed, so a
# changed file fails there anyway. Each case below also rewrites MANIFEST.json's list and
# re-signs the manifest with the pinned signers' keys (an insider holding both signer keys,
# or a signer fooled into signing: resign, lib/bundle.bash), so the check named must catch it
# on its own.
# canon_edit LINE JQ: record LINE of the slice replaced by a spelling jq gives it (the other
# records kept byte for byte)
canon_edit() { awk -v n="$1" -v r="$2" 'NR == n { print r; next } { print }' audit/slice.jsonl >s && mv s audit/slice.jsonl; }
# note_of SIZE FILE: the signed note of that size from a checkpoints file
note_of() {
	awk -v RS= -v want="$1" '{ p[NR] = $0 } END { for (i = 1; i < NR; i++) if (split(p[i], l, "\n") == 3 && l[2] == want) {
		print p[i] "\n"; print p[i + 1]; exit } }' "$2"
}
export -f resign canon_edit note_of
# the control: re-signing alone (nothing changed) still verifies, so each case below fails by
# the check it names, not by the re-signing
rm -rf "$T/x" && cp -a "$T/good" "$T/x" && (cd "$T/x" && resign) && expect_ok resigned-unchanged-verifies "$T/x" "${PIN[@]}"
tampered audit-slice-modified "a record of slice.jsonl is not in log.jsonl|audit/slice.jsonl does not match its size" 'sed -i "1s/\"h1\"/\"h9\"/" audit/slice.jsonl'
ROOTFAIL="the window's records and the range proof do not give the checkpoint's root"
both window-record-altered-resigned "$ROOTFAIL" \
	'sed -i "3s/\"h1\"/\"h9\"/" audit/slice.jsonl && resign'
tampered window-last-record-altered-resigned "$ROOTFAIL" \
	'sed -i "4s/\"fail\"/\"pass\"/" audit/slice.jsonl && resign'
both proof-node-flipped-resigned "$ROOTFAIL" \
	'jq -c ".range.nodes[0] |= (.[0:63] + (if .[63:] == \"0\" then \"1\" else \"0\" end))" audit/proofs.json >p && mv p audit/proofs.json && resign'
tampered proof-node-dropped-resigned "holds 0 range proof nodes, the proof of leaves 0..3 of 5 needs 1" \
	'jq -c ".range.nodes = []" audit/proofs.json >p && mv p audit/proofs.json && resign'
both proof-node-added-resigned "holds 2 range proof nodes, the proof of leaves 0..3 of 5 needs 1" \
	'jq -c ".range.nodes += [.root]" audit/proofs.json >p && mv p audit/proofs.json && resign'
tampered proof-of-another-range-resigned "proves leaves 1..3, not 0..3" \
	'jq -c ".range.first_index = 1" audit/proofs.json >p && mv p audit/proofs.json && resign'
both record-dropped-from-window-resigned "has seq 3, expected 2 \(the window must be consecutive" \
	'sed -i 2d audit/slice.jsonl && jq --indent 2 ".audit.slice_records = 3" MANIFEST.json >m && mv m MANIFEST.json && resign'
# the last record dropped and everything that names the window's end made to agree: the chain
# and the seqs hold, the range proof does not
tampered window-end-dropped-resigned "range proof|the window's records and the range proof" \
	'sed -i 4d audit/slice.jsonl && jq -c ".last_seq = 3 | .range.last_index = 2" audit/proofs.json >p && mv p audit/proofs.json &&
	 jq --indent 2 ".audit.slice_records = 3 | .audit.slice_last_seq = 3" MANIFEST.json >m && mv m MANIFEST.json && resign'
# a genuine record from outside the window (seq 5, CHG-2) inserted in the middle of it
tampered record-from-outside-inserted-resigned "audit/slice.jsonl:3 has seq 5, expected 3" \
	'r5=$(sed -n 5p "$T/host/audit.log") && awk -v r="$r5" "{ print } NR == 2 { print r }" audit/slice.jsonl >s && mv s audit/slice.jsonl &&
	 jq --indent 2 ".audit.slice_records = 5" MANIFEST.json >m && mv m MANIFEST.json && resign'
# the window claims another checkpoint: the genuine, host-signed note of size 4 (it covers the
# whole window), named in the re-signed manifest; the proofs are against size 5
tampered window-claims-other-checkpoint-resigned "is not the proof of the window \(1..4\) against the checkpoint \(4 records\)" \
	'note_of 4 "$T/host/audit.log.checkpoints" >audit/checkpoint.txt &&
	 sz=$(sed -n 2p audit/checkpoint.txt) && rt=$(sed -n 3p audit/checkpoint.txt | openssl base64 -d -A | od -An -v -tx1 | tr -d " \n") && [ "$sz" = 4 ] &&
	 jq --indent 2 --arg r "$rt" ".audit.checkpoint_size = 4 | .audit.checkpoint_root = \$r" MANIFEST.json >m && mv m MANIFEST.json && resign'
tampered proofs-root-of-another-tree-resigned "the checkpoint is not the one the signed manifest names" \
	'jq -c ".root = .range.nodes[0]" audit/proofs.json >p && mv p audit/proofs.json && resign'
tampered duplicate-key-record-resigned "audit/slice.jsonl:2 repeats the key result \(non-canonical" \
	'canon_edit 2 "$(sed -n 2p audit/slice.jsonl | sed "s/}\$/,\"result\":\"rolled-back\"}/")" && resign'
tampered reordered-keys-record-resigned "audit/slice.jsonl:2 has its keys out of the canonical order" \
	'canon_edit 2 "$(sed -n 2p audit/slice.jsonl | jq -c "{prev, seq} + .")" && resign'
# seq 5 (CHG-2, proven by "audit proof") and a seq 6 chained to it that no checkpoint covers
tampered record-beyond-checkpoint-resigned "audit/slice.jsonl:6 \\(seq 6\\) is beyond the checkpoint, which covers 5 records" \
	'r5=$(sed -n 5p "$T/host/audit.log") &&
	 l5=$(printf "\\0%s" "$r5" | sha256sum | cut -d" " -f1) && printf "%s\\n" "$r5" >>audit/slice.jsonl &&
	 printf "%s\\n" "$r5" | sed "s/^{\"seq\":5,\"prev\":\"[0-9a-f]*\"/{\"seq\":6,\"prev\":\"$l5\"/" >>audit/slice.jsonl &&
	 jq ".range.last_index = 5 | .last_seq = 6" audit/proofs.json >p && mv p audit/proofs.json &&
	 jq --indent 2 ".audit.slice_records = 6 | .audit.slice_last_seq = 6" MANIFEST.json >m && mv m MANIFEST.json && resign'
tampered origin-in-manifest-changed-resigned "the checkpoint's origin .* is not the one the signed manifest records" \
	'jq --indent 2 ".audit.origin = \"vm/elsewhere/audit.log\"" MANIFEST.json >m && mv m MANIFEST.json && resign'
tampered whole-log-added-unlisted "'audit/log.jsonl' is not listed in the signed manifest" 'cp "$T/host/audit.log" audit/log.jsonl'
tampered checkpoint-from-another-log "the checkpoint is not signed by" 'cp "$T/other/audit.log.checkpoints" audit/checkpoint.txt'
tampered profile-modified "profiles/lab-pair-v2.yaml does not match its size and SHA-256" \
	'sed -i "s/lab-pair/lab-pain/" profiles/lab-pair-v2.yaml'
expect_fail wrong-audit-key-pinned "the checkpoint is not signed by .*other" "$T/good" \
	--signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" --audit-pub "$T/other/audit.pub"
expect_fail trusted-checkpoint-of-another-log "your trusted checkpoint is not signed by the bundle's audit key" "$T/good" \
	--signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" --trusted-checkpoint "$T/other/audit.log.checkpoints"
# history rewritten in place (same host, same path, so the same origin) by someone
# holding the host's audit key, then signed by both (honest) signers
mv "$T/host" "$T/host.orig" && mkdir "$T/host" && cp "$T/host.orig/audit.key" "$T/host.orig/audit.pub" "$T/host/" &&
	records "$T/host" h7 && evidence "$T/rw.tar" "$T/host" alice bob &&
	mkdir "$T/rw" && tar -xf "$T/rw.tar" -C "$T/rw" || cannot "the rewritten log"
rm -rf "$T/host" && mv "$T/host.orig" "$T/host" || cannot "restore the genuine log"
expect_fail history-rewritten-vs-trusted-checkpoint "differ from the ones your trusted checkpoint covers" "$T/rw" \
	"${PIN[@]}" --trusted-checkpoint "$T/trusted.cp"
# --- the tar itself ----------------------------------------------------------------------------
# tar_plus NAME OUT PYTHON-STATEMENTS: the genuine tar with members added by python's tarfile
tar_plus() {
	"$PY" - "$T/good.tar" "$2" <<EOF || { fail "$1" "cannot build the tar"; return 1; }
import io, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
with tarfile.open(src) as a, tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as b:
    for m in a.getmembers():
        b.addfile(m, a.extractfile(m))
    def add(name, data=b"", type=tarfile.REGTYPE, link=""):
        i = tarfile.TarInfo(name); i.size = len(data); i.type = type; i.linkname = link
        b.addfile(i, io.BytesIO(data) if data else None)
    $3
EOF
}
tar_case() { # NAME REASON PYTHON
	tar_plus "$1" "$T/t-$1.tar" "$3" && expect_fail "$1" "$2" "$T" --tar "$T/t-$1.tar" "${PIN[@]}"
}
tar_case tar-dotdot-path "unsafe entry name '../evil.json'" 'add("../evil.json", b"{}\n")'
tar_case tar-dotdot-inside-path "unsafe entry name 'attestations/../../x'" 'add("attestations/../../x", b"x")'
tar_case tar-symlink "an entry that is not a regular file: l" 'add("profiles/passwd.yaml", type=tarfile.SYMTYPE, link="/etc/passwd")'
tar_case tar-hardlink "an entry that is not a regular file: h" 'add("profiles/v.sh", type=tarfile.LNKTYPE, link="verify.sh")'
tar_case tar-duplicate-member "entries given more than once: SHA256SUMS" 'add("SHA256SUMS", b"0  x\n")'
tar_case tar-dotfile "unsafe entry name '.hidden'" 'add(".hidden", b"x")'
# a symlink in the tar, unpacked by the auditor's tar and checked in the directory
if tar_plus tar-symlink-unpacked "$T/t-sym.tar" 'add("profiles/passwd.yaml", type=tarfile.SYMTYPE, link="/etc/passwd")'; then
	rm -rf "$T/s" && mkdir "$T/s" && tar -xf "$T/t-sym.tar" -C "$T/s"
	expect_fail tar-symlink-unpacked "'profiles/passwd.yaml' is not a regular file" "$T/s" "${PIN[@]}"
fi

# --- an implementation not written here: securesystemslib over every DSSE envelope ---------------
if "$PY" "$ROOT/tests/security/evidence_dsse_check.py" "$T/good" "$T/alice/audit.pub" "$T/bob/audit.pub" \
	>"$T/out" 2>&1 && grep -q "^evidence_dsse_check: 5 envelopes, 0 bad, 2 keys" "$T/out"; then
	pass securesystemslib-verifies-every-envelope
else
	fail securesystemslib-verifies-every-envelope "$(tail -3 "$T/out" | tr '\n' ' ')"
fi
rm -rf "$T/x" && cp -a "$T/good" "$T/x"
(cd "$T/x" && stmt_edit 4 's/"FAILED"/"PASSED"/')
if ! "$PY" "$ROOT/tests/security/evidence_dsse_check.py" "$T/x" "$T/alice/audit.pub" "$T/bob/audit.pub" \
	>"$T/out" 2>&1 && grep -q "^BAD attestations.intoto.jsonl:4: signature by" "$T/out" &&
	[ "$(grep -c '^BAD' "$T/out")" = 1 ]; then
	pass securesystemslib-rejects-modified-envelope
else
	fail securesystemslib-rejects-modified-envelope "$(grep -v '^ok' "$T/out" | head -3 | tr '\n' ' ')"
fi
if ! "$PY" "$ROOT/tests/security/evidence_dsse_check.py" "$T/m" "$T/alice/audit.pub" "$T/bob/audit.pub" >"$T/out" 2>&1 &&
	grep -q "^BAD MANIFEST.dsse.json: 0 signatures" "$T/out"; then
	pass securesystemslib-rejects-unpinned-signer
else
	fail securesystemslib-rejects-unpinned-signer "$(grep -v '^ok' "$T/out" | head -3 | tr '\n' ' ')"
fi

echo "evidence_tamper: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
