# SPDX-License-Identifier: MIT
# Sourced by the attack tests on evidence bundles (evidence_tamper.sh, evidence_pn.sh; not a
# test itself): verify.sh runs with expected outcomes, DSSE envelopes signed by a test key,
# and a bundle re-signed by both pinned signers. The caller sets T (its temporary directory,
# holding the alice and bob key pairs), V (the auditor's verify.sh) and pass/fail.
# verify_in DIR ARGS...: verify.sh inside DIR, output in $T/out, its exit status. Its
# python3 is the system's, as on an auditor's Debian machine: a version manager's shim
# first in PATH (pyenv on the build machines) costs a shell script and five programs
# per call, and this test runs verify.sh about 75 times
VPATH=/usr/bin:/bin:$PATH
verify_in() { (cd "$1" && shift && PATH=$VPATH bash "$V" "$@") >"$T/out" 2>&1; }
# expect_ok NAME DIR ARGS... / expect_fail NAME REASON-REGEX DIR ARGS...
expect_ok() {
	local name=$1 dir=$2
	shift 2
	if verify_in "$dir" "$@" && grep -q "verify.sh: [0-9]* passed, 0 failed" "$T/out"; then
		pass "$name"
	else
		fail "$name" "$(grep -E '^FAIL|verify.sh' "$T/out" | head -4 | tr '\n' ' ')"
	fi
}
expect_fail() {
	local name=$1 why=$2 dir=$3 rc
	shift 3
	verify_in "$dir" "$@"
	rc=$?
	if [ $rc = 0 ]; then
		fail "$name" "ACCEPTED (verify.sh exit 0)"
	elif ! grep -Eq -- "$why" "$T/out"; then
		fail "$name" "rejected (exit $rc) but not because '$why': $(grep -E '^FAIL|verify.sh' "$T/out" | head -3 | tr '\n' ' ')"
	else
		pass "$name"
	fi
}

# sign_env KEY TYPE PAYLOAD-FILE KEYID: a DSSE envelope (compact JSON) signed by KEY's key
sign_env() {
	local t=$2
	{ printf 'DSSEv1 %d %s %d ' ${#t} "$t" "$(wc -c <"$3")"; cat "$3"; } >"$T/pae"
	openssl pkeyutl -sign -inkey "$1" -rawin -in "$T/pae" -out "$T/sig" || return 1
	jq -cn --arg t "$t" --arg p "$(base64 -w0 <"$3")" --arg k "$4" --arg s "$(base64 -w0 <"$T/sig")" \
		'{payloadType: $t, payload: $p, signatures: [{keyid: $k, sig: $s}]}'
}
kid() { openssl pkey -pubin -in "$1" -outform DER | sha256sum | cut -d' ' -f1; }
# resign (inside an unpacked bundle): SHA256SUMS, the manifest's file list and both signatures
# made again after an edit, as an insider holding both signer keys would (the sizes and
# digests of all files in one stat and one sha256sum: this runs about 35 times a suite)
resign() {
	local f=()
	mapfile -t f < <(awk '{print $2}' SHA256SUMS)
	sha256sum -- "${f[@]}" >SHA256SUMS.new && mv SHA256SUMS.new SHA256SUMS
	mapfile -t f < <(jq -r '.files[].name' MANIFEST.json)
	paste <(stat --printf '%n\t%s\n' -- "${f[@]}") <(sha256sum -- "${f[@]}" | cut -d' ' -f1) >"$T/list.tsv"
	jq --indent 2 --rawfile l "$T/list.tsv" '($l | split("\n") | map(select(length > 0) | split("\t") |
		{key: .[0], value: {size: (.[1] | tonumber), sha256: .[2]}}) | from_entries) as $m |
		.files |= map(. + $m[.name])' MANIFEST.json >"$T/m.new" && mv "$T/m.new" MANIFEST.json
	sign_env "$T/alice/audit.key" application/vnd.fabricctl.evidence-manifest+json MANIFEST.json "$(kid "$T/alice/audit.pub")" >"$T/e1" &&
		sign_env "$T/bob/audit.key" application/vnd.fabricctl.evidence-manifest+json MANIFEST.json "$(kid "$T/bob/audit.pub")" >"$T/e2" &&
		jq -c --slurpfile b "$T/e2" '.signatures += $b[0].signatures' "$T/e1" >MANIFEST.dsse.json
}
