#!/bin/bash
# SPDX-License-Identifier: MIT
# The auditor's report (report.html, docs/audit.md): a real bundle from a log holding an
# apply, the steps of a key rotation with its overlap, key states and probe verdicts (one
# detail carrying <script> and quotes), built with the fabricctl under test. Checks that
# report.html is in the bundle and in the signed manifest, that verify.sh still passes, that
# --html gives the same bytes, that record strings come out escaped, that the page is self-
# contained (no script, no external reference), and renders it in headless Chromium with
# every host unresolvable: the DOM must hold every section, the screenshot must not be blank.
# Every page of the suite is rendered by one Chromium, started once, at the end (a start
# costs several seconds of CPU, a page in a running browser a fraction): report_chromium.py
# drives it over the DevTools protocol on a pipe (no port), writes each page's DOM or
# screenshot as --dump-dom / --screenshot would, and ends it by its PID, on failure too. The
# checks on what Chromium rendered therefore come last, in the order of the pages.
# A manual record (audit append) is marked, not green, not counted as the tool's, has no
# statement; the checkpoint root is audit verify's hex in MANIFEST.json, the page and verify.sh.
# The timeline as a picture (report_picture.py): the whole log's page measured by Chromium in
# an instrumented copy, and its screenshot checked region by region: each change label drawn
# whole and clear of the SVG's edge, each mark painted and background between neighbours (no
# overlap), a key id after an error on a line of its own.
# The fabric probe's records: a test-result statement each, the heatmap in report.html.
# Then a 301-record window: the compact page (time slices, a summary of the changes, every
# record once in a compact row, escaped), small, read by Chromium.
# usage: report.sh [FABRICCTL] (default $FCTL_BUILD_DIR/fabricctl/fabricctl)
# Prints PASS/FAIL per check and "report: N passed, M failed"; exit 1 on a failure, 2 when
# it cannot run (a missing tool, chromium included, is a failure, never a skip).
set -uo pipefail
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
F=${1:-${FCTL_BUILD_DIR:-$ROOT/build}/fabricctl/fabricctl}
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
cannot() { echo "report: cannot run: $*" >&2; echo "report: $PASS passed, $((FAIL + 1)) failed"; exit 2; }
[ -x "$F" ] || cannot "no fabricctl at $F (build first, or give its path)"
for t in openssl jq sha256sum tar "$PY"; do command -v $t >/dev/null || cannot "needs $t"; done
CHROMIUM=${FCTL_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || cannot "needs chromium (Debian's package 'chromium': scripts/deps.sh)"
export NO_COLOR=1 LC_ALL=C
# the log's applies, rotations and probes as the tool writes them (audit append stands in for
# the programs in a build with -DFCTL_TEST_HOOKS=ON: docs/audit.md "Manual records")
export FCTL_TEST_AUDIT_APPEND_AS_TOOL=1
unset FCTL_AUDIT_LOG
T=$(mktemp -d /tmp/fctl-report.XXXXXX) || cannot "no temporary directory"
trap 'rm -rf -- "$T"' EXIT
OUT_PNG=${FCTL_REPORT_PNG:-$T/report.png} # keep it (and the page beside it): FCTL_REPORT_PNG=/path/report.png

# --- the log: apply, rotation (started, confirmed, overlap, committed), states, probes ---------
for k in host alice bob; do "$F" audit keygen --out "$T/$k" >/dev/null || cannot "audit keygen"; done
printf 'name: lab-pair\nversion: 2\n' >"$T/prof.yaml"
SHA=$(sha256sum "$T/prof.yaml" | cut -d' ' -f1)
A=("$F" audit append --log "$T/host/audit.log" --change CHG-7)
ends() { # WHO DEV ENCRYPTED: the MACsec figures probe run records for one end
	echo "$1.loss_packets=0 $1.retransmissions=0 $1.macsec=$2 $1.encrypt=on $1.tx_sa_active=yes" \
		"$1.out_pkts_encrypted_delta=$3 $1.in_pkts_not_valid_delta=0 $1.in_pkts_invalid_delta=0" \
		"$1.in_pkts_no_sci_delta=0 $1.in_pkts_unknown_sci_delta=0 $1.in_pkts_late_delta=0"
}
lat() { # P50 P99 P999 MAX
	echo "iterations=1000 ran=yes t_typical_us=$1 latency_p50_us=$1 latency_p99_us=$2" \
		"latency_p999_us=$3 latency_max_us=$4 loss_packets=0 retransmissions=0 error_events=0"
}
EVIL='evil<script>alert(1)</script> "quoted" & <img src=x onerror=alert(2)>'
{
	"${A[@]}" --action apply --result applied --host h1 --link h1-h2 --secy ms100 \
		--profile-name lab-pair --profile-version 2 --profile-sha256 "$SHA" \
		--key-id 0011223344556677 --kcv a1b2c3 &&
		"${A[@]}" --action probe --result pass --host h1 --link h1-h2 --secy ms100 \
			--detail "send_lat size=2 link=h1-h2: $(lat 4.100 9.800 14.100 31.700) $(ends h1 ms100 2004) $(ends h2 ms100 1996) macsec=ok" &&
		sleep 1 &&
		"${A[@]}" --action key-rotation --result started --host h1 --link h1-h2 --secy ms100 \
			--detail "an 0 -> 1, key version 2 -> 3" &&
		"${A[@]}" --action key-state --result applied --host h1 --link h1-h2 --key-state pre-active \
			--kcv d4e5f6 --detail "file:lab/h1-h2 version 3 pre-active in the KMS" &&
		"${A[@]}" --action key-rotation --result confirmed --host h1 --link h1-h2 --secy ms100 \
			--kcv d4e5f6 --detail "new SAs on an 1 present on both ends with key version 3" &&
		sleep 2 &&
		"${A[@]}" --action key-rotation --result committed --host h1 --link h1-h2 --secy ms100 \
			--kcv d4e5f6 --detail "an 0 -> 1, key version 2 -> 3; steps prepare,install-rx,stage-tx,confirm,switch,overlap,retire; overlap rx ok old an 311, new an 4820" &&
		"${A[@]}" --action key-state --result recorded --host h1 --link h1-h2 --key-state active \
			--kcv d4e5f6 --detail "file:lab/h1-h2 version 3 active on h1-h2" &&
		"${A[@]}" --action key-state --result recorded --host h1 --link h1-h2 --key-state deactivated \
			--detail "file:lab/h1-h2 version 2 retired after the overlap on h1-h2" &&
		sleep 1 &&
		"${A[@]}" --action probe --result pass --host h1 --link h1-h2 --secy ms100 \
			--detail "send_lat size=2 link=h1-h2: $(lat 4.300 10.200 15.900 44.000) $(ends h1 ms100 2010) $(ends h2 ms100 2001) macsec=ok" &&
		"${A[@]}" --action probe --result fail --host h1 --link h1-h2 --secy ms100 \
			--error "latency p99 120.000 us > 50.000 us; $EVIL" \
			--detail "write_lat size=4096 link=h1-h2: $(lat 35.000 120.000 180.000 260.000) $(ends h1 ms100 5120) $(ends h2 ms100 5077) macsec=ok" &&
		"${A[@]}" --action key-state --result recorded --host h1 --link "$EVIL" --key-state compromised \
			--detail "$EVIL version 9 marked compromised in the KMS" &&
		"${A[@]}" --action apply --result failed --host h2 --link h1-h2 --error "No such device" \
			--key-id 8a09aa3011223344 &&
		env -u FCTL_TEST_AUDIT_APPEND_AS_TOOL "${A[@]}" --action kms-rotate --result applied --host h1 \
			--link h1-h2 --key-state active --kcv 0a0b0c --detail "file:lab/h1-h2 version 4 rotated by hand" &&
		"$F" audit append --log "$T/host/audit.log" --change CHG-8 --action apply --result applied --host h2
} >"$T/append.err" 2>&1 || cannot "audit append: $(head -c 400 "$T/append.err")"

# --- the bundle, and the report alone ----------------------------------------------------------
S=(--sign "$T/alice/audit.key" --sign "$T/bob/audit.key")
if "$F" evidence --log "$T/host/audit.log" --change CHG-7 --profile "$T/prof.yaml" --operator auditor \
	"${S[@]}" --out "$T/b.tar" --html "$T/side.html" >"$T/out" 2>&1; then
	pass "evidence --out --html writes the bundle and the report"
else
	fail "evidence --out --html writes the bundle and the report" "$(head -c 300 "$T/out")"
	echo "report: $PASS passed, $FAIL failed"
	exit 1
fi
mkdir "$T/b" && tar -xf "$T/b.tar" -C "$T/b" || cannot "tar -xf"
H=$T/b/report.html
[ -n "${FCTL_REPORT_PNG:-}" ] && cp "$H" "${OUT_PNG%.png}.html"
if [ -s "$H" ] && jq -e --arg s "$(sha256sum "$H" | cut -d' ' -f1)" \
	'any(.files[]; .name == "report.html" and .sha256 == $s)' "$T/b/MANIFEST.json" >/dev/null; then
	pass "report.html is in the bundle and listed, with its digest, in MANIFEST.json"
else
	fail "report.html is in the bundle and listed, with its digest, in MANIFEST.json"
fi
if cmp -s "$H" "$T/side.html"; then pass "--html FILE holds the bundle's report.html byte for byte"
else fail "--html FILE holds the bundle's report.html byte for byte"; fi
V=(--signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" --audit-pub "$T/host/audit.pub")
if (cd "$T/b" && bash ./verify.sh "${V[@]}") >"$T/verify.out" 2>&1 &&
	grep -q "verify.sh: [0-9]* passed, 0 failed" "$T/verify.out"; then
	pass "verify.sh passes on the bundle with report.html (pinned keys)"
else
	fail "verify.sh passes on the bundle with report.html (pinned keys)" "$(grep -E '^FAIL' "$T/verify.out" | head -3 | tr '\n' ' ')"
fi
cp -a "$T/b" "$T/x" && echo '<p>forged</p>' >>"$T/x/report.html"
if (cd "$T/x" && bash "$T/b/verify.sh" "${V[@]}") >"$T/verify2.out" 2>&1; then
	fail "a changed report.html fails verify.sh" "ACCEPTED"
else
	pass "a changed report.html fails verify.sh"
fi
"$F" evidence --log "$T/host/audit.log" --change CHG-7 --profile "$T/prof.yaml" --operator auditor \
	"${S[@]}" --out "$T/b2.tar" >/dev/null 2>&1
if cmp -s "$T/b.tar" "$T/b2.tar"; then pass "the bundle with its report is deterministic"
else fail "the bundle with its report is deterministic"; fi
if "$F" evidence --log "$T/host/audit.log" --change CHG-7 --operator auditor --html "$T/alone.html" \
	>"$T/out" 2>&1 && grep -q "nothing signs it" "$T/alone.html" && grep -q 'id="timeline"' "$T/alone.html"; then
	pass "evidence --html alone writes the report, saying nothing signs it"
else
	fail "evidence --html alone writes the report, saying nothing signs it" "$(head -c 300 "$T/out")"
fi

# --- manual records (audit append): marked, never green, counted as no rotation ----------------
if grep -q 'kms-rotate <span class="chip manual"' "$H" && grep -q '<span class="chip manual">applied</span>' "$H" &&
	grep -q '<b>3</b><span>key rotation records' "$H" && grep -q '<b>1</b><span>manual records' "$H" &&
	! grep -q 'kms-rotate</td><td><span class="chip good"' "$H" && grep -q 'manual record</span>' "$H"; then
	pass "a manual record is marked manual, its result not green, counted apart from the 3 rotation records"
else
	fail "a manual record is marked manual, its result not green, counted apart from the 3 rotation records"
fi
MLINE=$(grep '"manual":true' "$T/b/audit/slice.jsonl")
MSHA=$(printf %s "$MLINE" | sha256sum | cut -d' ' -f1)
if [ -n "$MLINE" ] && [ "$(jq -r '.payload | @base64d' "$T/b/attestations.intoto.jsonl" | grep -c "$MSHA")" = 0 ] &&
	[ "$(jq -r '.payload | @base64d' "$T/b/attestations.intoto.jsonl" | grep -c '"key-rotation"')" = 3 ]; then
	pass "no statement names the manual record (the 3 rotation records have theirs)"
else
	fail "no statement names the manual record (the 3 rotation records have theirs)"
fi

# --- the checkpoint root: hex wherever a person compares it -------------------------------------
ROOTHEX=$("$F" audit verify --json --log "$T/host/audit.log" --pubkey "$T/host/audit.pub" 2>/dev/null | jq -r .root)
ROOTB64=$(sed -n 3p "$T/b/audit/checkpoint.txt")
if [[ $ROOTHEX =~ ^[0-9a-f]{64}$ ]] && [ "$(jq -r .audit.checkpoint_root "$T/b/MANIFEST.json")" = "$ROOTHEX" ] &&
	[ "$(printf %s "$ROOTB64" | openssl base64 -d -A | od -An -v -tx1 | tr -d ' \n')" = "$ROOTHEX" ] &&
	grep -q "root <code>$ROOTHEX</code>" "$H" && grep -q "root $ROOTHEX" "$T/verify.out" &&
	! grep -qF -- "$ROOTB64" "$H" && ! grep -qF -- "$ROOTB64" "$T/b/MANIFEST.json"; then
	pass "the checkpoint root is the hex of audit verify in MANIFEST.json, report.html and verify.sh's output"
else
	fail "the checkpoint root is the hex of audit verify in MANIFEST.json, report.html and verify.sh's output" \
		"verify $ROOTHEX, manifest $(jq -r .audit.checkpoint_root "$T/b/MANIFEST.json")"
fi

# --- escaping and self-containment, in the bytes -----------------------------------------------
if ! grep -q '<script' "$H" && ! grep -q '<img' "$H" && grep -q 'evil&lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot; &amp; &lt;img' "$H"; then
	pass "record strings are escaped (no <script>, no <img>, quotes as &quot;)"
else
	fail "record strings are escaped (no <script>, no <img>, quotes as &quot;)"
fi
if grep -Eiq '(src|href)="(https?:)?//|@import|url\(' "$H"; then
	fail "the page references nothing outside itself" "$(grep -Eio '(src|href)="[^"]*"|@import|url\([^)]*\)' "$H" | head -3 | tr '\n' ' ')"
else
	pass "the page references nothing outside itself"
fi

# --- the timeline as a picture: the screenshot's regions against the page's own positions -------
# The whole log's report (no --change): change CHG-8's band, one record, ends the timeline on
# the right, where its label was cut ("change CHC"); the rotation's steps, the key states and
# the probes come in bursts milliseconds apart, whose marks overlapped; the failed apply has
# an error and a key id and no detail ("No such device" ran into "key id").
ALL=$T/all.html
"$F" evidence --log "$T/host/audit.log" --operator auditor --html "$ALL" >"$T/out" 2>&1 ||
	fail "evidence --html of the whole log" "$(head -c 300 "$T/out")"
# what Chromium laid out, measured in a copy with a script (the page itself allows none)
"$PY" - "$ALL" "$T/geom.html" <<'EOF'
import re, sys
h = open(sys.argv[1], encoding="utf-8").read()
h = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", h, count=1)
js = """<script>(function () {
  var o = {}, svg = document.querySelector('svg[aria-label="change timeline"]');
  var r = svg.getBoundingClientRect();
  o.svg = {left: r.left + scrollX, top: r.top + scrollY, width: r.width, height: r.height,
           vb: svg.viewBox.baseVal.width};
  o.texts = [].map.call(svg.querySelectorAll("text"), function (t) {
    var b = t.getBBox();
    return {text: t.textContent, cls: t.getAttribute("class"), x: b.x, y: b.y,
            width: b.width, height: b.height};
  });
  o.cells = [];
  [].forEach.call(document.querySelectorAll("td.detail"), function (td) {
    if (td.textContent.indexOf("No such device") < 0) return;
    var c = {}, w = document.createTreeWalker(td, NodeFilter.SHOW_TEXT), n;
    while ((n = w.nextNode())) {
      var g = document.createRange();
      g.selectNodeContents(n);
      if (n.textContent.indexOf("No such device") >= 0) c.error = g.getBoundingClientRect().top;
      if (n.textContent.indexOf("key id") >= 0) c.keyid = g.getBoundingClientRect().top;
    }
    o.cells.push(c);
  });
  var p = document.createElement("pre");
  p.id = "fctl-geom";
  p.style.display = "none";
  p.textContent = JSON.stringify(o);
  document.body.appendChild(p);
})();</script>"""
open(sys.argv[2], "w", encoding="utf-8").write(h.replace("</body>", js + "</body>", 1))
EOF
if grep -q '<b>error:</b> No such device<br>key id <code>8a09aa3011223344</code>' "$ALL"; then
	pass "an error and the key id after it are two lines of the cell"
else
	fail "an error and the key id after it are two lines of the cell"
fi

# --- the fabric probe: a test-result statement per link and test, the latency heatmap ---------
FL=$T/fab/audit.log
mkdir -p "$T/fab" && "$F" audit keygen --out "$T/fab" >/dev/null || cannot "audit keygen"
pf() { # RESULT HOST DETAIL: one probe-fabric record as probe --fabric writes it
	"$F" audit append --log "$FL" --change CHG-F --action probe-fabric --result "$1" --host "$2" --detail "$3"
}
fl() { echo "ran=1 latency_p50_us=$1 latency_p99_us=$2 latency_p999_us=$2 loss=0/0 retrans=0/0 encrypted=900/901 refused=0/0"; }
{ pf pass h2 "send_lat size=2 link=l1 vlan=101 a=h1 b=h2 round=1: $(fl 4.000 9.500)" &&
	pf fail h3 "send_lat size=2 link=l2 vlan=102 a=h2 b=h3 round=1: $(fl 40.000 88.000)" &&
	pf pass h4 "send_lat size=2 link=l3 vlan=103 a=h3 b=h4 round=1: $(fl 5.000 12.000)" &&
	pf pass h1 "write_bw size=65536 link=l4 vlan=104 a=h4 b=h1 round=1: ran=1 bandwidth_gbps=9.100000 loss=0/0 retrans=0/0 encrypted=9/9 refused=0/0" &&
	pf error h3 "run link=l5 vlan=105 a=h1 b=h3 round=1: could not be measured"; } >"$T/append.err" 2>&1 ||
	cannot "audit append (fabric probe): $(head -c 300 "$T/append.err")"
"$F" evidence --log "$FL" --change CHG-F --operator auditor "${S[@]}" --out "$T/fab.tar" >"$T/out" 2>&1 ||
	fail "evidence of the fabric probe's records" "$(head -c 300 "$T/out")"
mkdir "$T/fb" && tar -xf "$T/fab.tar" -C "$T/fb" || cannot "tar -xf (fabric probe)"
if (cd "$T/fb" && bash ./verify.sh --signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" \
	--audit-pub "$T/fab/audit.pub") >"$T/verify.out" 2>&1 && grep -q "verify.sh: [0-9]* passed, 0 failed" "$T/verify.out"; then
	pass "verify.sh passes on the fabric probe's bundle"
else
	fail "verify.sh passes on the fabric probe's bundle" "$(grep -E '^FAIL' "$T/verify.out" | head -3 | tr '\n' ' ')"
fi
st=$(jq -c '.payload | @base64d | fromjson | select(.predicateType == "https://in-toto.io/attestation/test-result/v0.1"
	and .predicate.fabricctl.action == "probe-fabric") | [.predicate.result, (.predicate.passedTests + .predicate.failedTests)[0]]' \
	"$T/fb/attestations.intoto.jsonl" 2>/dev/null)
if [ "$(grep -c . <<<"$st")" = 5 ] && grep -qF '["FAILED","send_lat size=2 link=l2 vlan=102 a=h2 b=h3 round=1"]' <<<"$st" &&
	grep -qF '["PASSED","write_bw size=65536 link=l4 vlan=104 a=h4 b=h1 round=1"]' <<<"$st" &&
	grep -qF '["FAILED","run link=l5 vlan=105 a=h1 b=h3 round=1"]' <<<"$st"; then
	pass "a test-result statement per probe-fabric record, PASSED/FAILED, naming the link and test"
else
	fail "a test-result statement per probe-fabric record, PASSED/FAILED, naming the link and test" "$(tr '\n' ' ' <<<"$st" | head -c 400)"
fi
FH=$T/fb/report.html
heat=$(sed -n '/aria-label="fabric latency heatmap/,/<\/svg>/p' "$FH")
if [ "$(grep -o '<rect ' <<<"$heat" | wc -l)" = 16 ] && grep -qF '>88.0</text>' <<<"$heat" &&
	grep -qF 'h2 - h3: p99 88.000 us' <<<"$heat" && grep -qF 'h1 - h3: no link probed' <<<"$heat" &&
	[ "$(grep -o 'class="rowlbl"[^>]*>h[1-4]</text>' <<<"$heat" | wc -l)" = 8 ] && ! grep -q '<script' "$FH"; then
	pass "report.html: an inline SVG heatmap of 4 x 4 hosts, the p99 of each link, labelled"
else
	fail "report.html: an inline SVG heatmap of 4 x 4 hosts, the p99 of each link, labelled" "$(head -c 300 <<<"$heat")"
fi
# --- a large window: the compact page (docs/audit.md "The report") -----------------------------
# 300 applies and one failed: more than 200 records, so the timeline shows time slices, the
# changes a summary, and every record comes once, in a compact row
L=$T/big/audit.log
mkdir -p "$T/big" && "$F" audit keygen --out "$T/big" >/dev/null || cannot "audit keygen"
{ "$F" audit append --log "$L" --change CHG-B --action apply --result applied --host h1 --link h1-h2 \
	--profile-name lab-pair --profile-version 2 --profile-sha256 "$SHA" --count 150 &&
	"$F" audit append --log "$L" --change CHG-B --action apply --result failed --host h1 --link h1-h2 \
		--error "netlink: $EVIL" &&
	"$F" audit append --log "$L" --change CHG-B --action apply --result applied --host h1 --link h1-h2 \
		--profile-name lab-pair --profile-version 2 --profile-sha256 "$SHA" --count 150; } >"$T/append.err" 2>&1 ||
	cannot "audit append (large window): $(head -c 300 "$T/append.err")"
BIG=$T/big/report.html
"$F" evidence --log "$L" --change CHG-B --operator auditor --html "$BIG" >"$T/out" 2>&1 ||
	fail "evidence --html of a 301-record window" "$(head -c 300 "$T/out")"
rows=$(grep -c '^<tr><td>[0-9]*<td>' "$BIG")
dups=$(grep -o '^<tr><td>[0-9]*<td>' "$BIG" | sort | uniq -d | wc -l)
if grep -q 'This window holds 301 records, more than 200' "$BIG" && ! grep -q '<circle' "$BIG" &&
	[ "$rows" = 301 ] && [ "$dups" = 0 ] && grep -q '^<tr><td>151<td>[^<]*<td>apply<td class=bad>failed<td>' "$BIG" &&
	grep -q 'fill="#cf222e"><title>[0-9]* records\?, #[0-9]* to #[0-9]*, 1 failed or refused</title>' "$BIG" &&
	grep -q '<td class="num">300</td><td class="t">1 to 301</td>' "$BIG"; then
	pass "a 301-record window: time slices, a summary of the changes, each record once in a compact row"
else
	fail "a 301-record window: time slices, a summary of the changes, each record once in a compact row" \
		"rows $rows, repeated $dups; $(grep -c '<circle' "$BIG") marks"
fi
size=$(wc -c <"$BIG")
if [ "$size" -lt $((301 * 250 + 40000)) ]; then pass "the compact page stays small ($size bytes for 301 records)"
else fail "the compact page stays small" "$size bytes for 301 records"; fi
if ! grep -q '<script\|<img' "$BIG" && grep -q 'netlink: evil&lt;script&gt;' "$BIG"; then
	pass "the compact rows escape record strings"
else
	fail "the compact rows escape record strings"
fi
# --- every page rendered in one headless Chromium, every host name unresolvable -----------------
# Starting Chromium costs several seconds of CPU, a page in a running one a fraction: one
# browser (report_chromium.py: the DevTools protocol on a pipe, no port; started and ended by
# its PID, failure too) loads each page in turn at the window size given and writes what
# chromium --dump-dom and --screenshot would: report.html's DOM and 1280x4000 screenshot, the
# instrumented copy's DOM (the measurements) and the whole log's 1280x2000 screenshot, the
# fabric probe's DOM (the heatmap), the compact page's DOM. A page it could not render leaves
# no file: its checks below fail, naming it.
C=("$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
	--disable-background-networking --disable-component-update --disable-sync
	"--host-resolver-rules=MAP * ~NOTFOUND" --hide-scrollbars --force-device-scale-factor=1)
: >"$T/chromium.err"
timeout 600 "$PY" "$ROOT/tests/evidence/report_chromium.py" "$T/chromium.err" \
	dom 1280 4000 "$H" "$T/dom.html" \
	shot 1280 4000 "$H" "$OUT_PNG" \
	dom 1280 2000 "$T/geom.html" "$T/geom.dom" \
	shot 1280 2000 "$ALL" "$T/all.png" \
	dom 1280 4000 "$FH" "$T/dom3.html" \
	dom 1280 4000 "$BIG" "$T/dom2.html" \
	-- "${C[@]}"
# a page not rendered: an empty DOM file, as the shell's redirection to chromium --dump-dom left it
for f in dom.html geom.dom dom3.html dom2.html; do [ -e "$T/$f" ] || : >"$T/$f"; done
# what went wrong, for a failure's message: the driver's lines, else Chromium's last words
chromerr() { { grep -a '^report_chromium.py: ' "$T/chromium.err" || cat "$T/chromium.err"; } | tail -c 300; }

# report.html (the bundle's)
missing=()
for h in "Change timeline" "MACsec counters across each change window" \
	"Probe latency, loss and retransmissions" "Key lifecycle" "Verification" \
	"All records of the slice" "Encryption stayed on" "verify.sh --tar BUNDLE.tar" \
	"overlap 2." "compromised" "pre-active" "d4e5f6" "not recorded" "</html>"; do
	grep -qF -- "$h" "$T/dom.html" || missing+=("$h")
done
if [ ${#missing[@]} = 0 ]; then
	pass "Chromium's DOM holds every section and the figures (loaded to </html>)"
else
	fail "Chromium's DOM holds every section and the figures (loaded to </html>)" "missing: ${missing[*]}; $(chromerr)"
fi
if grep -q '<script' "$T/dom.html"; then fail "no script element in the rendered DOM"
else pass "no script element in the rendered DOM"; fi
# the PNG's size from its IHDR; not blank: a one-colour page has a handful of byte values
if "$PY" - "$OUT_PNG" "$ROOT/tests/evidence" <<'EOF'; then
import sys, zlib
sys.path.insert(0, sys.argv[2])
from report_picture import png_chunks
w, h, _, _, _, idat = png_chunks(sys.argv[1])
assert (w, h) == (1280, 4000), f"size {w}x{h}"
raw = zlib.decompress(idat)
assert len(set(raw)) > 32, f"blank: {len(set(raw))} distinct byte values"
EOF
	pass "Chromium renders a 1280x4000 screenshot that is not blank ($OUT_PNG)"
else
	fail "Chromium renders a 1280x4000 screenshot that is not blank" "$(chromerr)"
fi

# the timeline as a picture: the instrumented copy's measurements, the whole log's screenshot
"$PY" -c 'import html, re, sys
m = re.search(r"<pre id=\"fctl-geom\"[^>]*>(.*?)</pre>", open(sys.argv[1], encoding="utf-8").read(), re.S)
sys.exit(1) if not m else print(html.unescape(m.group(1)))' "$T/geom.dom" >"$T/geom.json" ||
	fail "Chromium measured the timeline (an instrumented copy)" "$(chromerr)"
[ -n "${FCTL_REPORT_PNG:-}" ] && cp "$T/all.png" "${OUT_PNG%.png}-timeline.png" && cp "$ALL" "${OUT_PNG%.png}-timeline.html"
if [ -s "$T/all.png" ] && [ -s "$T/geom.json" ]; then
	"$PY" "$ROOT/tests/evidence/report_picture.py" "$T/all.png" "$T/geom.json" "$ALL" >"$T/pic.out" 2>&1
	while read -r verdict rest; do
		case $verdict in PASS) pass "picture: $rest" ;; FAIL) fail "picture: $rest" ;; esac
	done <"$T/pic.out"
	grep -qE '^(PASS|FAIL) ' "$T/pic.out" || fail "picture: report_picture.py ran" "$(tail -c 300 "$T/pic.out")"
else
	fail "picture: Chromium took the screenshot and the measurements" "$(chromerr)"
fi

# the fabric probe's heatmap
if grep -qF 'fabric latency heatmap' "$T/dom3.html" && grep -qF '>88.0</text>' "$T/dom3.html" &&
	grep -qF '</html>' "$T/dom3.html"; then
	pass "Chromium renders the heatmap"
else
	fail "Chromium renders the heatmap" "$(chromerr)"
fi

# the compact page
if [ "$(grep -c '<tr><td>[0-9]*</td><td>' "$T/dom2.html")" = 301 ] && grep -qF 'All records of the slice' "$T/dom2.html" &&
	grep -qF '</html>' "$T/dom2.html"; then
	pass "Chromium reads the compact page: 301 record rows, every section"
else
	fail "Chromium reads the compact page: 301 record rows, every section" "$(grep -c '<tr><td>[0-9]*</td><td>' "$T/dom2.html") rows; $(chromerr)"
fi

echo "report: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
