#!/bin/bash
# SPDX-License-Identifier: MIT
# The audit log review: each attack a log writer (or the holder of audit.key) can make,
# and what `audit verify` must say about it.
#   1. a record with a repeated key ("result":"ok","result":"failed"), chained and
#      covered by a checkpoint, verified, showed as ok and read as failed in jq; the same
#      for reordered or unknown fields, other escapes, other numbers, time going back
#   2. unsigned tails: dropping the last records with their notes, rewriting records past
#      the last signed checkpoint, re-signing a whole log under a new key pair
#   3. a checkpoint an auditor kept catches a rewrite or truncation by the key holder
#   4. witnesses cosign only consistent checkpoints; verify can require k of them
#   5. the checkpoint origin names the log (host and path) and verify checks it
# No root needed. Prints PASS/FAIL per check and "audit_log: N passed, M failed".
# FABRICCTL overrides the binary ($FCTL_BUILD_DIR/fabricctl/fabricctl).
set -uo pipefail
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=${FABRICCTL:-$BUILD/fabricctl/fabricctl}
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
check() { # name, condition (a command) ...
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "$(head -c 600 "$T/out" 2>/dev/null | tr '\n' ' ')"; fi
}
for t in jq "$PY" openssl; do
	command -v $t >/dev/null || { echo "audit_log: $t is missing" >&2; exit 2; }
done
[ -x "$F" ] || { echo "audit_log: no fabricctl at $F" >&2; exit 2; }
T=$(mktemp -d /tmp/fctl-sec-audit.XXXXXX) || exit 2
trap 'rm -rf -- "$T"' EXIT
export NO_COLOR=1 LC_ALL=C
unset FCTL_AUDIT_LOG FCTL_AUDIT_CHECKPOINT_EVERY

newlog() { D=$T/$1; mkdir -p "$D"; "$F" audit keygen --out "$D" >/dev/null; LOG=$D/audit.log; }
fill() { for i in $(seq "${2:-1}" "$1"); do "$F" audit append --log "$LOG" --action "act-$i" --result ok --host h1 >/dev/null 2>&1; done; }
verify() { "$F" audit verify --log "$LOG" "$@" >"$T/out" 2>&1; RC=$?; }
vjson() { "$F" audit verify --json --log "$LOG" "$@" >"$T/out" 2>"$T/err"; RC=$?; }
has_kind() { [ -s "$T/out" ] && jq -e --arg k "$1" --arg m "${2:-}" 'any(.findings[]; .kind == $k and .error and (.message | contains($m)))' "$T/out" >/dev/null 2>&1; }
rc_is() { [ "$RC" = "$1" ]; }
# the last note of a checkpoints file (what an auditor keeps): a note is two paragraphs,
# its body and its signature lines
last_note() { awk 'BEGIN{RS=""; ORS="\n\n"} {p[NR]=$0} END{print p[NR-1]; print p[NR]}' "$1"; }
# the first N notes of a checkpoints file
first_notes() { awk -v n="$1" 'BEGIN{RS=""; ORS="\n\n"} NR<=2*n' "$2"; }
jqt() { [ -s "${*: -1}" ] && jq -e "$@" >/dev/null 2>&1; }
# rechain LOG: recompute every prev (the attacker's tool); edits come before it
rechain() {
	"$PY" - "$1" <<'EOF'
import hashlib, re, sys
p = sys.argv[1]
lines = open(p, 'rb').read().split(b'\n')[:-1]
prev = b'0' * 64
out = []
for l in lines:
    l = re.sub(rb'"prev":"[0-9a-f]{64}"', b'"prev":"' + prev + b'"', l, count=1)
    out.append(l)
    prev = hashlib.sha256(b'\x00' + l).hexdigest().encode()
open(p, 'wb').write(b''.join(x + b'\n' for x in out))
EOF
}
# resign LOG: new checkpoints for every size with the key beside the log (key holder)
resign() { rm -f "$1.checkpoints"; "$F" audit checkpoint --log "$1" >/dev/null 2>&1; }
# forge NAME OLD NEW: record 4 made from record 3 by replacing OLD with NEW (OLD "@time-back":
# an hour earlier; "re:RE": a regex), chained correctly and signed: what a key holder (or a
# writer's bug) can put in the log
forge() {
	newlog "$1"
	fill 3
	"$PY" - "$LOG" "$2" "$3" <<'EOF'
import datetime, hashlib, re, sys
p, old, new = sys.argv[1:4]
lines = open(p, 'rb').read().decode().split('\n')[:-1]
s = lines[-1].replace('"seq":3,', '"seq":4,', 1)
h = hashlib.sha256(b'\x00' + lines[-1].encode()).hexdigest()
s = re.sub(r'"prev":"[0-9a-f]{64}"', '"prev":"' + h + '"', s, count=1)
if old == '@time-back':
    t = re.search(r'"time":"([^"]*)Z"', s).group(1)
    d = datetime.datetime.strptime(t, '%Y-%m-%dT%H:%M:%S.%f') - datetime.timedelta(hours=1)
    s = s.replace(t, d.strftime('%Y-%m-%dT%H:%M:%S.%f'), 1)
elif old.startswith('re:'):
    s = re.sub(old[3:], new, s, count=1)
else:
    assert old in s, (old, s)
    s = s.replace(old, new, 1)
open(p, 'a').write(s + '\n')
EOF
	"$F" audit checkpoint --log "$LOG" >/dev/null 2>&1
}

# --- 1. canonical records ---
forge dup '"result":"ok"' '"result":"ok","result":"failed"'
vjson --pubkey "$D/audit.pub"
check "1-dup-key-fails" rc_is 1
check "1-dup-key-named-with-line" has_kind non-canonical-record "audit.log:4"
check "1-dup-key-reason" has_kind non-canonical-record '"result"'
"$F" audit show --log "$LOG" >"$T/out" 2>"$T/err"
RC=$?
check "1-dup-key-show-refuses" eval '[ $RC -ne 0 ] && ! grep -q "^4 .* ok$" "$T/out" && grep -q "seq 4 is not a canonical record" "$T/err"'
forge reorder '"action":"act-3","host":"h1"' '"host":"h1","action":"act-3"'
vjson --pubkey "$D/audit.pub"
check "1-reordered-fields-fail" has_kind non-canonical-record "audit.log:4"
forge unknown '"result":"ok"}' '"result":"ok","approved_by":"ciso"}'
vjson --pubkey "$D/audit.pub"
check "1-unknown-field-fails" has_kind non-canonical-record "approved_by"
forge escape '"act-3"' '"act\u002d3"'
vjson --pubkey "$D/audit.pub"
check "1-other-escape-fails" has_kind non-canonical-record "escape"
forge number 're:"uid":([0-9]+)' '"uid":\g<1>.0'
vjson --pubkey "$D/audit.pub"
check "1-other-number-fails" has_kind non-canonical-record "audit.log:4"
forge space ',"actor"' ', "actor"'
vjson --pubkey "$D/audit.pub"
check "1-whitespace-fails" has_kind non-canonical-record "audit.log:4"
forge time @time-back ''
vjson --pubkey "$D/audit.pub"
check "1-time-backwards-fails" has_kind time-backwards "audit.log:4"
newlog good1 && fill 5
vjson --pubkey "$D/audit.pub"
check "1-writer-records-are-canonical" rc_is 0

# --- 2. unsigned tails and the trust anchor ---
# 2a. the last 2 records dropped with their notes: nothing in the log can tell; a kept
# checkpoint can
newlog drop && fill 6
last_note "$LOG.checkpoints" >"$T/kept-drop"
head -n 4 "$LOG" >"$T/l" && mv "$T/l" "$LOG"
first_notes 4 "$LOG.checkpoints" >"$T/c" && mv "$T/c" "$LOG.checkpoints"
verify --trusted-checkpoint "$T/kept-drop"
check "2a-dropped-tail-caught-by-kept-checkpoint" eval '[ $RC = 1 ] && grep -q "cut-off-tail" "$T/out"'
# 2b. records 5-6 written without a key, then rewritten and re-chained
newlog tail && fill 4
mv "$D/audit.key" "$T/tail.key"
fill 6 5
mv "$T/tail.key" "$D/audit.key"
sed -i '5,6s/"result":"ok"/"result":"never-happened"/' "$LOG" && rechain "$LOG"
vjson --pubkey "$D/audit.pub"
check "2b-unsigned-tail-fails" eval '[ $RC = 1 ] && jq -e ".unsigned == 2" "$T/out" >/dev/null'
check "2b-unsigned-tail-named" has_kind unsigned-tail "records 5..6"
verify --pubkey "$D/audit.pub"
check "2b-text-says-how-many-unsigned" grep -q "2 unsigned records" "$T/out"
vjson --pubkey "$D/audit.pub" --allow-unsigned-tail
check "2b-allow-unsigned-tail-accepts" eval '[ $RC = 0 ] && jq -e ".unsigned == 2 and any(.findings[]; .kind == \"warning\")" "$T/out" >/dev/null'
# 2c. the whole log rewritten under a new key pair
newlog rekey && fill 4
cp "$D/audit.pub" "$T/rekey-pinned.pub"
rm -f "$LOG"* "$D/audit.key" "$D/audit.pub"
"$F" audit keygen --out "$D" >/dev/null
fill 3
verify
check "2c-no-anchor-refused" eval '[ $RC -ne 0 ] && grep -q "no trust anchor" "$T/out"'
verify --pubkey "$T/rekey-pinned.pub"
check "2c-pinned-key-catches-new-key" eval '[ $RC = 1 ] && grep -q "missing-signature" "$T/out"'
vjson --self-consistency-only
check "2c-self-consistency-says-it-proves-nothing" eval '[ $RC = 0 ] && jq -e ".anchor == \"self-consistency-only\" and (.warning | contains(\"proves nothing\"))" "$T/out" >/dev/null'
verify --self-consistency-only
check "2c-self-consistency-text" grep -q "proves nothing about who wrote the log" "$T/out"

# --- 3. a kept checkpoint against the key holder ---
newlog keeper && fill 6
"$F" audit note --log "$LOG" >"$T/kept" 2>/dev/null || last_note "$LOG.checkpoints" >"$T/kept"
fill 8 7
verify --pubkey "$D/audit.pub" --trusted-checkpoint "$T/kept"
check "3-log-extends-kept-checkpoint" rc_is 0
sed -i '3s/"result":"ok"/"result":"rewritten"/' "$LOG" && rechain "$LOG" && resign "$LOG"
verify --pubkey "$D/audit.pub"
# (the key alone cannot see this: why an auditor keeps checkpoints)
check "3-key-holder-rewrite-passes-key-alone" rc_is 0
vjson --pubkey "$D/audit.pub" --trusted-checkpoint "$T/kept"
check "3-key-holder-rewrite-caught-by-kept-checkpoint" has_kind inconsistent-checkpoint "size 6"
newlog keeper2 && fill 6
last_note "$LOG.checkpoints" >"$T/kept2"
head -n 5 "$LOG" >"$T/l" && mv "$T/l" "$LOG" && resign "$LOG"
vjson --pubkey "$D/audit.pub" --trusted-checkpoint "$T/kept2"
check "3-key-holder-truncation-caught" has_kind cut-off-tail "trusted checkpoint"
"$F" audit proof --log "$LOG" --inclusion 2 --json >"$T/out" 2>&1
check "3-inclusion-proof-json" jqt '.leaf_index == 1 and .tree_size == 5 and (.path | length) == 3 and (.root | length) == 64' "$T/out"
"$F" audit proof --log "$LOG" --consistency 3 --json >"$T/out" 2>&1
check "3-consistency-proof-json" jqt '.old_size == 3 and .tree_size == 5 and (.old_root | length) == 64 and (.path | length) > 0' "$T/out"

# --- 4. witnesses ---
newlog wit && fill 3
for w in w1 w2 w3; do "$F" audit keygen --out "$T/$w" >/dev/null; done
cosign() { # witness, note file, [proof file]
	"$F" audit witness --key "$T/$1/audit.key" --name "$1.example" --state "$T/$1/state" \
		--log-pub "$D/audit.pub" --checkpoint "$2" ${3:+--proof "$3"} >"$T/cosig" 2>"$T/out"
}
"$F" audit note --log "$LOG" >"$T/n3" 2>/dev/null
cosign w1 "$T/n3" && cat "$T/cosig" >>"$LOG.cosignatures"
check "4-witness-cosigns-first-checkpoint" grep -q "^— w1.example " "$T/cosig"
fill 5 4
"$F" audit note --log "$LOG" >"$T/n5" 2>/dev/null
"$F" audit proof --log "$LOG" --consistency 3 --json >"$T/p35" 2>/dev/null
cosign w1 "$T/n5" "$T/p35" && cat "$T/cosig" >>"$LOG.cosignatures"
check "4-witness-cosigns-consistent-checkpoint" grep -q "^— w1.example " "$T/cosig"
cosign w2 "$T/n5" && cat "$T/cosig" >>"$LOG.cosignatures"
verify --pubkey "$D/audit.pub" --witness-pub "$T/w1/audit.pub" --witness-pub "$T/w2/audit.pub" --witnesses 2
check "4-two-of-two-witnesses-verify" rc_is 0
vjson --pubkey "$D/audit.pub" --witness-pub "$T/w1/audit.pub" --witness-pub "$T/w3/audit.pub" --witnesses 2
check "4-missing-cosignature-fails" has_kind missing-cosignatures
check "4-witness-refuses-older-checkpoint" eval '! cosign w1 "$T/n3" && grep -q "older" "$T/out"'
# the key holder rewrites record 2, re-signs, grows the log and asks the witness again
sed -i '2s/"result":"ok"/"result":"rewritten"/' "$LOG" && rechain "$LOG" && resign "$LOG"
fill 6 6
"$F" audit note --log "$LOG" >"$T/n6" 2>/dev/null
"$F" audit proof --log "$LOG" --consistency 5 --json >"$T/p56" 2>/dev/null
cosign w1 "$T/n6" "$T/p56"
RC=$?
check "4-witness-refuses-inconsistent-checkpoint" eval '[ $RC -ne 0 ] && grep -q "not consistent" "$T/out"'
vjson --pubkey "$D/audit.pub" --witness-pub "$T/w1/audit.pub" --witness-pub "$T/w2/audit.pub" --witnesses 2 --allow-unsigned-tail
check "4-rewrite-under-witnesses-fails" has_kind checkpoint-mismatch "rewritten"

# --- 5. origins ---
newlog origin && fill 2
want="$(hostname)$(realpath "$D")/audit.log"
check "5-origin-names-host-and-path" eval '[ "$(head -n 1 "$LOG.checkpoints")" = "$want" ]'
mkdir -p "$T/moved" && cp "$LOG" "$LOG.checkpoints" "$T/moved/"
"$F" audit verify --json --log "$T/moved/audit.log" --pubkey "$D/audit.pub" >"$T/out" 2>&1
check "5-copied-log-names-another-origin" has_kind wrong-origin "$want"
"$F" audit verify --log "$T/moved/audit.log" --pubkey "$D/audit.pub" --origin "$want" >"$T/out" 2>&1
RC=$?
check "5-pinned-origin-accepts-the-copy" rc_is 0
first=$(head -n 1 "$LOG.checkpoints")
newlog origin2 && fill 2
check "5-two-logs-two-origins" eval '[ "$(head -n 1 "$LOG.checkpoints")" != "$first" ]'

echo "audit_log: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
