#!/bin/bash
# SPDX-License-Identifier: MIT
# Audit log and evidence bundle tests through the fabricctl binary:
#   - audit verify names each attack (flip, delete, swap, cut tail, signature,
#     checkpoint, torn line), exit codes, --json
#   - concurrent writers: two processes x 1000 records -> 2000 intact records
#   - crash: kill -9 of a writer mid-append; verify reports the torn tail at its
#     exact line and byte offset; the next writer repairs and records it
#   - evidence: two bundles from the same inputs are byte-identical; the bundle's
#     verify.sh (openssl, jq, sha256sum) accepts it and rejects each tampered variant
# Prints PASS/FAIL per case and "audit.sh: N passed, M failed"; skips (and says so)
# only the crash cases, on a binary built without -DFCTL_TEST_HOOKS=ON.
#
# usage: tests/audit/audit.sh [FABRICCTL]
set -u

FCTL=${1:-build/fabricctl/fabricctl}
case $FCTL in /*) ;; *) FCTL=$(pwd)/$FCTL ;; esac
export NO_COLOR=1 LC_ALL=C
unset FCTL_AUDIT_LOG FCTL_AUDIT_TEST_TEAR

TMP=$(mktemp -d /tmp/fctl-audit.XXXXXX) || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM
npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "PASS: $1"; }
fail() {
	nfail=$((nfail + 1))
	echo "FAIL: $1${2:+: $2}"
	[ -s "$TMP/out" ] && sed 's/^/    | /' "$TMP/out" | head -15
	[ -s "$TMP/err" ] && sed 's/^/    ! /' "$TMP/err" | head -15
	return 0
}
for t in jq openssl sha256sum tar; do
	command -v $t >/dev/null || { fail "prerequisite" "$t is not installed"; }
done

# a fresh log dir with a key pair: $D/audit.log
newlog() {
	D=$TMP/$1
	rm -rf "$D"
	mkdir -p "$D"
	"$FCTL" audit keygen --out "$D" >/dev/null || fail "$1: keygen"
	LOG=$D/audit.log
}
append() { "$FCTL" audit append --log "$LOG" "$@" >/dev/null 2>"$TMP/err"; }
# a record as the tool writes it (apply, key-*, probe): the test builds' stand-in for the
# programs that write them (docs/audit.md "Manual records"); a release build refuses it
tool_append() { FCTL_TEST_AUDIT_APPEND_AS_TOOL=1 append "$@"; }
fill() { # n records act-1..act-n, checkpoint at close
	for i in $(seq 1 "$1"); do append --action "act-$i" --result applied --host h1 || return 1; done
}
# verify_kind NAME KIND [MESSAGE-SUBSTRING]: verify exits 1 and names KIND
verify_kind() {
	"$FCTL" audit verify --json --log "$LOG" --pubkey "$D/audit.pub" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ $rc -ne 1 ]; then
		fail "$1" "exit $rc, expected 1"
	elif ! jq -e --arg k "$2" --arg m "${3:-}" \
		'.ok == false and any(.findings[]; .kind == $k and (.message | contains($m)))' "$TMP/out" >/dev/null; then
		fail "$1" "no finding of kind $2${3:+ with '$3'}"
	else
		pass "$1"
	fi
}
# line N of the log replaced by the output of a sed expression
sedlog() { sed -i "$1" "$LOG"; }

# --- keygen ---
newlog keygen
if [ "$(stat -c %a "$D/audit.key")" = 600 ] && [ -s "$D/audit.pub" ]; then
	pass "keygen writes audit.key with mode 0600 and audit.pub"
else
	fail "keygen writes audit.key with mode 0600 and audit.pub"
fi
if "$FCTL" audit keygen --out "$D" >/dev/null 2>"$TMP/err"; then
	fail "keygen refuses to overwrite a key"
else
	pass "keygen refuses to overwrite a key"
fi

# --- a good log ---
newlog good
fill 10
"$FCTL" audit verify --log "$LOG" --pubkey "$D/audit.pub" >"$TMP/out" 2>"$TMP/err"
if [ $? -eq 0 ] && grep -q "verified: 10 records" "$TMP/out"; then pass "good log verifies (exit 0)"; else fail "good log verifies (exit 0)"; fi
"$FCTL" audit verify --json --log "$LOG" --pubkey "$D/audit.pub" >"$TMP/out" 2>"$TMP/err"
if jq -e '.ok and .records == 10 and .checkpoint_size == 10 and .errors == 0' "$TMP/out" >/dev/null; then
	pass "verify --json"
else
	fail "verify --json"
fi
if append --action kms-note --result applied --kcv 00112233445566778899aabbccddeeff; then
	fail "a key-sized value in --kcv is refused"
else
	pass "a key-sized value in --kcv is refused"
fi
if grep -q 00112233445566778899 "$LOG"; then fail "refused value never reaches the log"; else pass "refused value never reaches the log"; fi

# --- one test per attack ---
newlog flip && fill 10
sedlog '5s/"act-5"/"act-X"/'
verify_kind "flip a byte: modified record named" modified-record "modified record: seq 5 at $LOG:5"

newlog delete && fill 10
sedlog '5d'
verify_kind "delete a line: deleted record named" deleted-record "deleted record: seq 5 is missing"

newlog swap && fill 10
sedlog '4{h;d};5{G}'
verify_kind "swap two lines: reordered records named" reordered-records "reordered records: seq 4 at $LOG:5"

newlog cut && fill 10
sedlog '8,$d'
verify_kind "cut the tail: cut-off tail named" cut-off-tail "the log holds 7 records"

newlog sig && fill 5
append --action x --result y
# the signature line of the second checkpoint replaced by the first one's
first=$(grep -m1 '^— ' "$LOG.checkpoints")
awk -v s="$first" 'BEGIN{n=0} /^— /{n++; if(n==2){print s; next}} {print}' "$LOG.checkpoints" >"$TMP/cp" && cp "$TMP/cp" "$LOG.checkpoints"
verify_kind "replace a signature: bad signature named" bad-signature "does not verify"

newlog nosig && fill 3
sed -i '/^— /d' "$LOG.checkpoints"
verify_kind "strip the signatures: missing signature named" missing-signature "no signature by the audit key"

newlog other && fill 3
cp "$D/audit.key" "$TMP/samekey" && cp "$D/audit.pub" "$TMP/samepub"
newlog cpreplace
cp "$TMP/samekey" "$D/audit.key" && cp "$TMP/samepub" "$D/audit.pub"
fill 3
cp "$TMP/other/audit.log.checkpoints" "$LOG.checkpoints"
verify_kind "replace a checkpoint (same key, other log): its origin names the other log" wrong-origin "names the log '$(hostname)$(realpath "$TMP")/other/audit.log'"
# the same, with the other log's checkpoints naming this log: the roots differ
ORIGIN=$(hostname)$(realpath "$D")/audit.log
newlog other2
cp "$TMP/samekey" "$D/audit.key" && cp "$TMP/samepub" "$D/audit.pub"
for i in 1 2 3; do append --action "other-$i" --result applied --origin "$ORIGIN"; done
newlog cpreplace
cp "$TMP/samekey" "$D/audit.key" && cp "$TMP/samepub" "$D/audit.pub"
fill 3
cp "$TMP/other2/audit.log.checkpoints" "$LOG.checkpoints"
verify_kind "replace a checkpoint (same key, same origin, other records): mismatch named" checkpoint-mismatch "does not match the recomputed root of the first 3"

newlog nocp && fill 2
rm -f "$LOG.checkpoints"
verify_kind "no checkpoint file: missing signature named" missing-signature "not anchored"

newlog torn && fill 3
size=$(stat -c %s "$LOG")
printf '{"seq":4,"prev":"00' >>"$LOG"
verify_kind "torn last line: named with line and offset" torn-last-line "audit.log:4, byte offset $size: 19 bytes"

# --- concurrent writers ---
newlog concurrent
"$FCTL" audit append --log "$LOG" --action a --result ok --count 1000 --batch 7 2>"$TMP/err" &
p1=$!
"$FCTL" audit append --log "$LOG" --action b --result ok --count 1000 --batch 11 2>"$TMP/err2" &
p2=$!
wait $p1 && wait $p2 || fail "concurrent writers exit 0"
"$FCTL" audit verify --json --log "$LOG" --pubkey "$D/audit.pub" >"$TMP/out" 2>"$TMP/err"
if [ $? -eq 0 ] && jq -e '.ok and .records == 2000' "$TMP/out" >/dev/null &&
	[ "$(grep -c '"action":"a"' "$LOG")" = 1000 ] && [ "$(grep -c '"action":"b"' "$LOG")" = 1000 ] &&
	[ "$(jq -s 'map(.seq) == [range(1;2001)]' "$LOG")" = true ]; then
	pass "two concurrent writers x 1000: 2000 intact records, seq 1..2000, chain verifies"
else
	fail "two concurrent writers x 1000: 2000 intact records, seq 1..2000, chain verifies"
fi

# --- crash: kill -9 mid-append ---
# needs the tear hook, which only a build configured with -DFCTL_TEST_HOOKS=ON has
if ! grep -qa FCTL_AUDIT_TEST_TEAR "$FCTL"; then
	fail "kill -9 mid-append" "cannot run: $FCTL was built without -DFCTL_TEST_HOOKS=ON (the tear hook)"
else
	newlog crash
	fill 2
	# the hook writes the first half of its first batch, creates $TMP/tear-ready and waits: the
	# kill lands mid-record however slow the machine (a 200 ms pause raced a loaded one)
	FCTL_AUDIT_TEST_TEAR=$TMP/tear-ready "$FCTL" audit append --log "$LOG" --action crash --result ok --count 100000 --batch 20 \
		>/dev/null 2>&1 &
	wpid=$!
	for _ in $(seq 1 600); do
		[ -e "$TMP/tear-ready" ] && break
		sleep 0.05
	done
	kill -9 $wpid
	wait $wpid 2>/dev/null
	size=$(stat -c %s "$LOG")
	complete=$(($(grep -c '' "$LOG")))           # lines, the torn one included
	frag=$(tail -c +1 "$LOG" | awk 'END{printf "%d", length($0)}')
	offset=$((size - frag))
	if [ "$frag" -gt 0 ]; then
		verify_kind "kill -9 mid-append: torn tail at its exact line and offset" torn-last-line \
			"audit.log:$complete, byte offset $offset: $frag bytes"
	else
		fail "kill -9 mid-append: torn tail at its exact line and offset" "the writer was not caught mid-record"
	fi
	append --action after-crash --result ok
	"$FCTL" audit verify --json --log "$LOG" --pubkey "$D/audit.pub" >"$TMP/out" 2>"$TMP/err"
	if [ $? -eq 0 ] && jq -e --arg o "byte offset $offset" 'any(.findings[]; .kind == "warning" and (.message | contains($o)))' "$TMP/out" >/dev/null &&
		grep -q '"action":"log-repair"' "$LOG"; then
		pass "the next writer terminates the torn record and records a log-repair naming it"
	else
		fail "the next writer terminates the torn record and records a log-repair naming it"
	fi
fi

# --- rotation ---
newlog rotate
fill 3
"$FCTL" audit rotate --log "$LOG" 2>"$TMP/err" || fail "audit rotate"
fill 2
"$FCTL" audit verify --json --log "$LOG" --pubkey "$D/audit.pub" >"$TMP/out" 2>"$TMP/err"
if [ $? -eq 0 ] && jq -e '.files == 2 and .records == 5' "$TMP/out" >/dev/null && head -c 9 "$LOG" | grep -q '"seq":4'; then
	pass "rotation: the new file continues the chain; verify follows both files"
else
	fail "rotation: the new file continues the chain; verify follows both files"
fi

# --- show ---
newlog show
append --action change-approved --result applied --host h1 --change CHG-7
append --action change-approved --result applied --host h2 --change CHG-8
"$FCTL" audit show --json --log "$LOG" --change CHG-7 >"$TMP/out" 2>"$TMP/err"
if jq -e 'length == 1 and .[0].change == "CHG-7" and .[0].seq == 1' "$TMP/out" >/dev/null; then
	pass "show --json --change"
else
	fail "show --json --change"
fi
"$FCTL" audit show --json --log "$LOG" --since 2000-01-01 --until 2000-12-31 >"$TMP/out" 2>"$TMP/err"
if jq -e 'length == 0' "$TMP/out" >/dev/null; then pass "show --since/--until"; else fail "show --since/--until"; fi

# --- manual records (docs/audit.md "Manual records"): marked in the record, names checked ---
newlog manual
append --action kms-rotate --result applied --host h1 --key-state active --kcv a1b2c3 ||
	fail "audit append --action kms-rotate" "$(cat "$TMP/err")"
if head -1 "$LOG" | grep -q '"actor":{[^}]*},"manual":true,"action":"kms-rotate"'; then
	pass "a manual record says \"manual\":true, right after the actor"
else
	fail "a manual record says \"manual\":true, right after the actor" "$(head -1 "$LOG")"
fi
for a in apply rollback probe drift key-rotation key-state key-rotate mka-state status teardown; do
	if append --action "$a" --result applied --host h1; then
		fail "audit append --action $a (the tool's own) is refused" "written"
	elif grep -q "action '$a' is one fabricctl writes itself" "$TMP/err"; then
		pass "audit append --action $a (the tool's own) is refused, named"
	else
		fail "audit append --action $a (the tool's own) is refused, named" "$(cat "$TMP/err")"
	fi
done
for a in Apply "kms rotate" -x a_b; do
	if append --action "$a" --result applied; then fail "audit append --action '$a' (not a name) is refused"
	else pass "audit append --action '$a' (not a name) is refused"; fi
done
[ "$(wc -l <"$LOG")" = 1 ] && pass "no refused record reached the log" || fail "no refused record reached the log"
tool_append --action apply --result applied --host h1 && append --action change-approved --result ok ||
	fail "manual and tool records" "$(cat "$TMP/err")"
"$FCTL" audit verify --json --log "$LOG" --pubkey "$D/audit.pub" >"$TMP/out" 2>"$TMP/err"
if [ $? -eq 0 ] && jq -e '.ok and .records == 3' "$TMP/out" >/dev/null; then
	pass "a log of manual and tool records verifies"
else
	fail "a log of manual and tool records verifies"
fi
"$FCTL" audit show --log "$LOG" >"$TMP/out" 2>"$TMP/err"
if [ "$(grep -c '(manual record: written by audit append)$' "$TMP/out")" = 2 ] &&
	grep -E '^2 ' "$TMP/out" | grep -vq manual; then
	pass "audit show marks the manual records, and only them"
else
	fail "audit show marks the manual records, and only them"
fi
"$FCTL" audit show --json --log "$LOG" >"$TMP/out" 2>"$TMP/err"
if jq -e '[.[] | .manual == true] == [true, false, true]' "$TMP/out" >/dev/null; then
	pass "audit show --json: \"manual\":true on the manual records, absent on the tool's"
else
	fail "audit show --json: \"manual\":true on the manual records, absent on the tool's"
fi
cp "$LOG" "$TMP/manual.keep"
sedlog '1s/,"manual":true//'
verify_kind "the manual mark taken out of a record" modified-record
cp "$TMP/manual.keep" "$LOG"
sedlog '2s/"actor":\({[^}]*}\),/"actor":\1,"manual":true,/'
verify_kind "a manual mark put on a tool's record" modified-record
cp "$TMP/manual.keep" "$LOG"
sedlog '3s/"manual":true/"manual":false/'
verify_kind "\"manual\":false" non-canonical-record
cp "$TMP/manual.keep" "$LOG"

# --- evidence bundles ---
newlog ev
for k in alice bob mallory; do "$FCTL" audit keygen --out "$TMP/$k" >/dev/null; done
printf 'name: lab-pair\nversion: 2\n' >"$TMP/prof.yaml"
SHA=$(sha256sum "$TMP/prof.yaml" | cut -d' ' -f1)
tool_append --action apply --result applied --host h1 --change CHG-1 --profile-name lab-pair \
	--profile-version 2 --profile-sha256 "$SHA" --key-id 0011223344556677 --kcv a1b2c3
tool_append --action key-rotate --result committed --host h1 --change CHG-1 --key-id 0011223344556677 \
	--kcv a1b2c3 --key-state active
tool_append --action probe --result pass --host h1 --change CHG-1 --detail "macsec ping h1 h2"
tool_append --action apply --result applied --host h2 --change CHG-2 ||
	fail "evidence: the tool's records" "$(cat "$TMP/err") (a build without -DFCTL_TEST_HOOKS=ON?)"
bundle() { "$FCTL" evidence --log "$LOG" --change CHG-1 --profile "$TMP/prof.yaml" --operator auditor \
	--sign "$TMP/alice/audit.key" --sign "$TMP/bob/audit.key" --out "$1" >/dev/null 2>"$TMP/err"; }
bundle "$TMP/b1.tar" && bundle "$TMP/b2.tar"
if cmp -s "$TMP/b1.tar" "$TMP/b2.tar"; then pass "two bundles from the same inputs are byte-identical"; else fail "two bundles from the same inputs are byte-identical"; fi
if tar -tf "$TMP/b1.tar" | sort -c 2>/dev/null && [ "$(tar -tvf "$TMP/b1.tar" | awk '{print $1, $2, $4, $5}' | sort -u)" = "-rw-r--r-- root/root 1970-01-01 00:00" ]; then
	pass "tar entries sorted, mode 0644, root/root, fixed mtime"
else
	fail "tar entries sorted, mode 0644, root/root, fixed mtime"
fi
PIN=(--signer-pub "$TMP/alice/audit.pub" --signer-pub "$TMP/bob/audit.pub" --audit-pub "$D/audit.pub")
unpack() { rm -rf "$TMP/x" && mkdir "$TMP/x" && tar -xf "$1" -C "$TMP/x"; }
# verify.sh with the system's programs first in PATH, as on an auditor's Debian machine (a
# version manager's python3 shim, pyenv on the build machines, costs six programs a call)
VPATH=/usr/bin:/bin:$PATH
runverify() { (cd "$TMP/x" && PATH=$VPATH bash verify.sh "$@") >"$TMP/out" 2>"$TMP/err"; }
unpack "$TMP/b1.tar"
if runverify "${PIN[@]}" && grep -q "verify.sh: [0-9]* passed, 0 failed" "$TMP/out"; then
	pass "verify.sh accepts a good bundle (two pinned signers)"
else
	fail "verify.sh accepts a good bundle (two pinned signers)"
fi
# FCTL_AUDIT_SHELL_VERIFIER=0 (the ASan build's ctest, tests/CMakeLists.txt): the bundle
# above is this build's and verify.sh accepted it; the cases below exercise verify.sh
# alone (bash, openssl, jq, python3: no code of this build), which the release build's
# run of this test checks, so they are not run twice. Said, and counted as not run.
if [ "${FCTL_AUDIT_SHELL_VERIFIER:-1}" = 0 ]; then
	echo "NOTE: verify.sh's own cases (14) are the release build's audit test's:" \
		"FCTL_AUDIT_SHELL_VERIFIER=0 (no code of this build runs in them)"
else
runverify
if [ $? -eq 2 ] && grep -q "no trust anchor" "$TMP/err"; then pass "verify.sh refuses to run without pinned keys (exit 2)"; else fail "verify.sh refuses to run without pinned keys (exit 2)"; fi
if runverify --self-consistency-only && grep -q "proves nothing about who wrote" "$TMP/out"; then
	pass "verify.sh --self-consistency-only (shipped keys) says it proves nothing"
else
	fail "verify.sh --self-consistency-only (shipped keys) says it proves nothing"
fi
if (cd "$TMP" && PATH=$VPATH bash x/verify.sh --tar b1.tar "${PIN[@]}") >"$TMP/out" 2>"$TMP/err"; then
	pass "verify.sh --tar checks and unpacks the bundle itself"
else
	fail "verify.sh --tar checks and unpacks the bundle itself"
fi

# rejected NAME COMMANDS: tamper the unpacked bundle, verify.sh must fail
resum() { (cd "$TMP/x" && for f in $(awk '{print $2}' SHA256SUMS); do sha256sum "$f"; done >SHA256SUMS.new && mv SHA256SUMS.new SHA256SUMS); }
rejected() {
	local name=$1
	shift
	unpack "$TMP/b1.tar"
	(cd "$TMP/x" && eval "$@")
	if runverify "${PIN[@]}"; then fail "verify.sh rejects: $name"; else pass "verify.sh rejects: $name"; fi
}
rejected "a flipped byte in a profile" "sed -i 's/lab-pair/lab-pain/' profiles/lab-pair-v2.yaml"
rejected "a modified audit record, SHA256SUMS recomputed" "sed -i '1s/\"h1\"/\"h9\"/' audit/slice.jsonl; $(declare -f resum); resum"
rejected "a deleted audit record, sums recomputed" "sed -i '2d' audit/slice.jsonl; $(declare -f resum); resum"
rejected "an edited MANIFEST.json, sums recomputed" "sed -i 's/\"auditor\"/\"someone\"/' MANIFEST.json; $(declare -f resum); resum"
rejected "a swapped DSSE signature" "jq -c '.signatures[1].sig = .signatures[0].sig' MANIFEST.dsse.json >t && mv t MANIFEST.dsse.json"
rejected "one of two signatures removed (dual control)" "jq -c '.signatures |= .[:1]' MANIFEST.dsse.json >t && mv t MANIFEST.dsse.json"
rejected "a checkpoint from another log" "cp '$TMP/other/audit.log.checkpoints' audit/checkpoint.txt; $(declare -f resum); resum"
rejected "an unlisted file added" "echo extra >profiles/extra.yaml"
rejected "a statement subject changed" "p=\$(head -1 attestations.intoto.jsonl | jq -r '.payload | @base64d' | sed 's/$SHA/$(printf 0%.0s {1..64})/' | base64 -w0); jq -c --arg p \"\$p\" 'if input_line_number == 1 then .payload = \$p else . end' attestations.intoto.jsonl >t && mv t attestations.intoto.jsonl; $(declare -f resum); resum"
rejected "a dotfile added" "echo PASSED >.note"
# signed by someone who is not pinned
"$FCTL" evidence --log "$LOG" --change CHG-1 --sign "$TMP/mallory/audit.key" --sign "$TMP/bob/audit.key" \
	--out "$TMP/m.tar" >/dev/null 2>"$TMP/err"
unpack "$TMP/m.tar"
if runverify "${PIN[@]}"; then fail "verify.sh rejects: a bundle not signed by a pinned signer"; else pass "verify.sh rejects: a bundle not signed by a pinned signer"; fi
fi
# the bundle refuses a log that does not verify
sed -i '1s/"h1"/"h9"/' "$LOG"
"$FCTL" evidence --log "$LOG" --sign "$TMP/alice/audit.key" --out "$TMP/bad.tar" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "does not verify" "$TMP/err" && [ ! -e "$TMP/bad.tar" ]; then
	pass "evidence refuses a log that does not verify (exit 1)"
else
	fail "evidence refuses a log that does not verify (exit 1)" "exit $rc"
fi

echo "audit.sh: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
