#!/bin/bash
# SPDX-License-Identifier: MIT
# verify.sh's proofs against a trusted checkpoint (issue #29, 1). The finding: the
# trusted-checkpoint path called consistency_ok with the proof's first node in the place of
# the new root, so the bundle checkpoint's root was never compared: root on the host rewrote
# the log after the auditor's checkpoint, built the bundle with --consistency-from and put
# [X, c] in the proof, X = SHA-256(0x01 || trusted_root || c), and verify.sh said
# "consistent with your trusted checkpoint"; a genuine --consistency-from bundle failed.
# Here, in about a minute: verify.sh's own functions (its python3 helper in one process:
# evidence_consistency.py, every consistency proof of sizes 1..300; its bash functions, the
# --openssl-only path, on a few vectors the script writes) against an independent tree, and
# end to end a genuine --consistency-from bundle that must verify and rewritten ones that
# must not, both ways (helper and --openssl-only).
# usage: evidence_consistency.sh [FABRICCTL] (default $FCTL_BUILD_DIR/fabricctl/fabricctl)
# Prints PASS/FAIL per check, "evidence_consistency: N passed, M failed"; exit 1 on a
# failure, 2 when it cannot run.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
F=${1:-${FCTL_BUILD_DIR:-$ROOT/build}/fabricctl/fabricctl}
PY=${FCTL_PYTHON:-/usr/bin/python3}
VSH=$ROOT/libfctl/evidence/verify.sh
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
cannot() { echo "evidence_consistency: cannot run: $*" >&2; echo "evidence_consistency: $PASS passed, $((FAIL + 1)) failed"; exit 2; }
count() {
	local l
	while IFS= read -r l; do
		case $l in
		"PASS "*) echo "$l"; PASS=$((PASS + 1)) ;;
		"FAIL "*) echo "$l"; FAIL=$((FAIL + 1)) ;;
		*) echo "   $l" ;;
		esac
	done
}
[ -x "$F" ] || cannot "no fabricctl at $F (build first, or give its path)"
[ -x "$PY" ] || cannot "no $PY"
for t in openssl jq sha256sum tar; do command -v $t >/dev/null || cannot "needs $t"; done
export NO_COLOR=1 LC_ALL=C
# the log's applies, rotations and probes as the tool writes them (audit append stands in for
# the programs in a build with -DFCTL_TEST_HOOKS=ON: docs/audit.md "Manual records")
export FCTL_TEST_AUDIT_APPEND_AS_TOOL=1
unset FCTL_AUDIT_LOG
T=$(mktemp -d /tmp/fctl-sec-consistency.XXXXXX) || cannot "no temporary directory"
trap 'rm -rf -- "$T"' EXIT

# --- 1. the python3 helper, every proof of sizes 1..300 (one process) ------------------------
count < <("$PY" "$ROOT/tests/security/evidence_consistency.py" "$VSH" "$T" 2>&1)

# --- 2. the bash functions (--openssl-only, or no python3): a few vectors each ---------------
# verify.sh's own functions, cut out of it by name (it runs its checks when sourced whole)
fn_of() { awk -v f="$1" '$0 ~ "^" f "\\(\\) \\{" { p = 1 } p { print } p && /^}/ { exit }' "$VSH"; }
for f in hex2bin sha node nodes_hash consistency_ok range_nodes range_root; do
	fn_of $f | grep -q . || { fail "bash-function-$f" "verify.sh has no function $f"; continue; }
	fn_of $f >>"$T/fns.sh"
done
bash_checks() {
	local TMP=$T/b BATCH=0 want m n old new lo hi root got cb=() fb=() rb=() tot=0 l
	mkdir -p "$TMP"
	batch() { return 3; } # the helper cannot run: the bash path
	# shellcheck source=/dev/null
	. "$T/fns.sh"
	while read -r want m n old new l; do
		tot=$((tot + 1))
		# shellcheck disable=SC2086
		if consistency_ok "$m" "$n" "$old" "$new" $l; then got=1; else got=0; fi
		[ "$got" = "$want" ] || { [ "$want" = 1 ] && cb+=("$m->$n") || fb+=("$m->$n"); }
	done <"$T/consistency.vec"
	if [ $tot -gt 0 ] && [ ${#cb[@]} = 0 ]; then pass "bash-consistency_ok-accepts-genuine-proofs"; else
		fail "bash-consistency_ok-accepts-genuine-proofs" "${cb[*]:-no vectors}"; fi
	if [ $tot -gt 0 ] && [ ${#fb[@]} = 0 ]; then pass "bash-consistency_ok-refuses-forged-proofs (incl. [X, c])"; else
		fail "bash-consistency_ok-refuses-forged-proofs" "accepted: ${fb[*]:-no vectors}"; fi
	tot=0
	while read -r root n lo hi l; do
		tot=$((tot + 1))
		read -r -a CUR <<<"${l%%--*}"
		read -r -a NODES <<<"${l#*--}"
		got=$(range_root "$n" "$lo" "$hi")
		if [ "$root" = - ]; then [ -z "$got" ] || [ "$got" != "$(grep -m1 " $n $lo $hi " "$T/range.vec" | cut -d' ' -f1)" ] || rb+=("forged $lo..$hi/$n"); else
			[ "$got" = "$root" ] && [ "$(range_nodes "$n" "$lo" "$hi")" = "${#NODES[@]}" ] || rb+=("$lo..$hi/$n")
		fi
	done <"$T/range.vec"
	if [ $tot -gt 0 ] && [ ${#rb[@]} = 0 ]; then pass "bash-range_root-genuine-and-forged ($tot vectors)"; else
		fail "bash-range_root-genuine-and-forged" "${rb[*]:-no vectors}"; fi
}
[ -s "$T/consistency.vec" ] && [ -s "$T/range.vec" ] || fail bash-vectors "evidence_consistency.py wrote none"
bash_checks

# --- 3. end to end: a trusted checkpoint at 4 records, the bundle's at 6 ---------------------
cd "$T" || exit 2
for k in alice bob; do "$F" audit keygen --out "$T/$k" >/dev/null || cannot "audit keygen"; done
"$F" audit keygen --out "$T/host" >/dev/null || cannot "audit keygen" # the key beside the log: append signs
L=$T/host/audit.log
append() { # FIRST LAST [TAG]: records FIRST..LAST of change CHG-1
	local i
	for ((i = $1; i <= $2; i++)); do
		"$F" audit append --log "$L" --action apply --result applied --host h1 --change CHG-1 \
			--detail "step $i${3:-}" >/dev/null 2>&1 || return 1
	done
}
append 1 4 || cannot "audit append"
cp "$L.checkpoints" "$T/trusted.cp" # what the auditor kept: the log at 4 records
[ "$("$F" audit note --log "$L" | sed -n 2p)" = 4 ] || cannot "the trusted checkpoint is not of 4 records"
append 5 6 || cannot "audit append"
bundle() { # OUT: the bundle of $L with --consistency-from 4, unpacked into OUT
	"$F" evidence --log "$L" --change CHG-1 --operator auditor --consistency-from 4 \
		--sign "$T/alice/audit.key" --sign "$T/bob/audit.key" --out "$1.tar" >/dev/null 2>"$T/err" &&
		mkdir "$1" && tar -xf "$1.tar" -C "$1"
}
bundle "$T/good" || cannot "fabricctl evidence: $(cat "$T/err")"
V=$T/verify.sh
cp "$VSH" "$V" # the auditor's copy: this tree's
PIN=(--signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" --trusted-checkpoint "$T/trusted.cp")
verify_in() { (cd "$1" && shift && PATH=/usr/bin:/bin:$PATH bash "$V" "$@") >"$T/out" 2>&1; }
expect() { # NAME WANT(ok|fail) REASON-REGEX DIR [MODES]: with the helper (""), and with
	# --openssl-only when MODES says so (each verify.sh run takes seconds: the two paths only
	# where the consistency proof itself is checked)
	local name=$1 want=$2 why=$3 dir=$4 mode rc
	for mode in ${5:-helper}; do
		[ "$mode" = helper ] && mode=
		verify_in "$dir" "${PIN[@]}" $mode
		rc=$?
		if [ "$want" = ok ] && [ $rc = 0 ] && grep -Eq -- "$why" "$T/out"; then
			pass "$name${mode:+-openssl-only}"
		elif [ "$want" = fail ] && [ $rc = 1 ] && grep -Eq -- "$why" "$T/out"; then
			pass "$name${mode:+-openssl-only}"
		else
			fail "$name${mode:+-openssl-only}" "exit $rc: $(grep -E '^FAIL|consistent|verify.sh' "$T/out" | head -3 | tr '\n' ' ')"
		fi
	done
}
expect genuine-consistency-from-bundle-verifies ok "PASS: audit: the checkpoint is consistent with your trusted checkpoint" "$T/good" "helper --openssl-only"

# root rewrites the log after the auditor's checkpoint: same path (so the same origin), same
# audit key, record 2 changed, and builds a bundle with --consistency-from 4
mkdir "$T/keep" && mv "$L" "$L.checkpoints" "$T/keep/"
append 1 1 && append 2 2 " (rewritten)" && append 3 6 || cannot "audit append (rewritten log)"
bundle "$T/rw" || cannot "fabricctl evidence (rewritten): $(cat "$T/err")"
expect rewritten-log-genuine-proof-refused fail "FAIL: audit: the checkpoint is not consistent with your trusted checkpoint" "$T/rw" helper

# the finding: the proof replaced by [X, c], X = SHA-256(0x01 || trusted_root || c), the
# manifest re-signed by both signers (an insider, or signers fooled into signing)
kid() { openssl pkey -pubin -in "$1" -outform DER | sha256sum | cut -d' ' -f1; }
sign_env() { # KEY PAYLOAD-FILE: a DSSE envelope of the manifest signed by KEY
	local t=application/vnd.fabricctl.evidence-manifest+json
	{ printf 'DSSEv1 %d %s %d ' ${#t} "$t" "$(wc -c <"$2")"; cat "$2"; } >"$T/pae"
	openssl pkeyutl -sign -inkey "$1" -rawin -in "$T/pae" -out "$T/sig" || return 1
	jq -cn --arg t "$t" --arg p "$(base64 -w0 <"$2")" --arg k "$(kid "${1%.key}.pub")" --arg s "$(base64 -w0 <"$T/sig")" \
		'{payloadType: $t, payload: $p, signatures: [{keyid: $k, sig: $s}]}'
}
resign() { # in a bundle directory: SHA256SUMS and every size and digest of the manifest again, re-signed
	local f=()
	mapfile -t f < <(awk '{print $2}' SHA256SUMS)
	sha256sum -- "${f[@]}" >"$T/sums" && mv "$T/sums" SHA256SUMS
	mapfile -t f < <(jq -r '.files[].name' MANIFEST.json)
	paste <(stat --printf '%n\t%s\n' -- "${f[@]}") <(sha256sum -- "${f[@]}" | cut -d' ' -f1) >"$T/list.tsv"
	jq --indent 2 --rawfile l "$T/list.tsv" '($l | split("\n") | map(select(length > 0) | split("\t") |
		{key: .[0], value: {size: (.[1] | tonumber), sha256: .[2]}}) | from_entries) as $m |
		.files |= map(. + $m[.name])' MANIFEST.json >"$T/m.new" && mv "$T/m.new" MANIFEST.json &&
		sign_env "$T/alice/audit.key" MANIFEST.json >"$T/e1" && sign_env "$T/bob/audit.key" MANIFEST.json >"$T/e2" &&
		jq -c --slurpfile b "$T/e2" '.signatures += $b[0].signatures' "$T/e1" >MANIFEST.dsse.json
}
# the last note's root (a note: its text, a blank line, its signature lines)
TROOT=$(awk -v RS= '{ p[NR] = $0 } END { print p[NR - 1] }' "$T/trusted.cp" | sed -n 3p)
TRHEX=$(printf '%s' "$TROOT" | openssl base64 -d -A | od -An -v -tx1 | tr -d ' \n')
C=$(printf 'c%.0s' {1..64})
X=$("$PY" -c 'import hashlib, sys; print(hashlib.sha256(b"\1" + bytes.fromhex(sys.argv[1] + sys.argv[2])).hexdigest())' "$TRHEX" "$C")
forge() { # DIR NODES-JSON
	rm -rf "$1" && cp -a "$T/rw" "$1" && (cd "$1" &&
		jq -c --arg r "$TRHEX" --argjson p "$2" '.consistency |= map(.old_root = $r | .path = $p)' audit/proofs.json >p &&
		mv p audit/proofs.json && resign)
}
if [ ${#TRHEX} = 64 ] && forge "$T/xc" "[\"$X\",\"$C\"]"; then
	expect forged-X-c-proof-refused fail "FAIL: audit: the checkpoint is not consistent with your trusted checkpoint" "$T/xc" "helper --openssl-only"
else
	fail forged-X-c-proof-refused "could not build the forgery (trusted root '$TROOT')"
fi
# the control: the genuine bundle re-signed the same way still verifies (the forgery fails by
# the consistency check, not by the re-signing)
rm -rf "$T/gr" && cp -a "$T/good" "$T/gr" && (cd "$T/gr" && resign)
verify_in "$T/gr" "${PIN[@]}" && pass resigned-genuine-still-verifies ||
	fail resigned-genuine-still-verifies "$(grep -E '^FAIL' "$T/out" | head -3 | tr '\n' ' ')"
# a path node that is no SHA-256 in hex is refused, never handed to printf
if forge "$T/bad" "[\"%n%n\",\"$C\"]"; then
	expect path-node-not-hex-refused fail "FAIL: audit: .*consisten" "$T/bad" helper
fi

echo "evidence_consistency: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ] && [ $PASS -gt 0 ]
