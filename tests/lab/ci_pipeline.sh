#!/bin/bash
# examples/ci/pipeline.sh end to end with --lab, as a CI runner runs it:
# profiles/lab-pair.yaml (TCG latency SLOs) against an earlier version (--from), two signing keys
# (dual control), the lab booted from the profile, apply on both hosts, the
# probes over RoCE on the MACsec device, each host's audit log collected, one
# evidence bundle per host. With the profile's slo section: an agent on every host (its
# management NIC forwarded from 127.0.0.1, a throwaway CA) and one fabric probe of every
# link through them, its verdicts in its own log and bundle. Then:
#
#  pipeline     exit 0, with --out under /tmp (a guest tmpfs the lab keeps visible)
#  junit        junit.xml is well-formed; the expected testcases, no failure, no
#               skipped step (every step applies here)
#  evidence     each host's bundle passes the bundled verify.sh (openssl, jq,
#               sha256sum, tar) with both signers and the host's audit key pinned;
#               the bundles hold the apply records (profile-apply statements) and
#               the PN ranges of the apply's SAs (the guest's ledger, anchored by its log);
#               the fabric probe's bundle its verdicts (test-result statements, PASSED,
#               figures: latency, loss, MACsec counters, the path MTU both ways)
#  failure      a second run with an SLO no link meets and no --sign: exit 1, the
#               probe-fabric step is a JUnit failure with the reason, only evidence is
#               skipped, the failed verdict is in the probe's audit log.
#               FCTL_CI_FAILURE_PATH=0 leaves it out, said in the output: scripts/test.sh
#               runs this suite from two clones (/root, /tmp) to prove the pipeline
#               assumes no checkout path, and the failure path once, in the /tmp clone
#  clean        no throwaway key left in OUT, the lab is down
#
# Prints PASS/FAIL per check and "ci_pipeline: N passed, M failed"; exits non-zero
# on any failure, a lab that cannot start included (never skips). Needs root.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
export FCTL_LAB_DIR=${FCTL_LAB_DIR:-/var/tmp/fabricctl-lab-ci}
CHANGE=CI-TEST-1
PASS=0
FAIL=0
T=$(mktemp -d /tmp/fctl-ci-pipeline.XXXXXX)
# OUT under /tmp, a lab guest's own tmpfs: the lab keeps it visible (FCTL_LAB_KEEP)
OUT=$T/out

pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }

finish() {
	local rc=$?
	"$F" lab down >/dev/null 2>&1 || bash "$ROOT/scripts/lab.sh" down >/dev/null 2>&1 || true
	rm -rf "$T"
	[ "$rc" -ne 0 ] && [ "$FAIL" -eq 0 ] && fail "script" "stopped early with status $rc"
	[ "$PASS" -eq 0 ] && [ "$FAIL" -eq 0 ] && fail "script" "no check ran"
	echo "ci_pipeline: $PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ] && exit 0
	exit 1
}
trap finish EXIT

for b in "$F" "$BUILD/probes/fabricctl-probe"; do
	[ -x "$b" ] || { fail "build" "$b is missing: build first (cmake --build $BUILD)"; exit 1; }
done
for t in jq openssl sha256sum tar python3; do
	command -v "$t" >/dev/null || { fail "tools" "$t is missing"; exit 1; }
done

# two signers: dual control
for k in alice bob; do
	"$F" audit keygen --out "$T/$k" >/dev/null || { fail "keygen" "$k"; exit 1; }
done
# The profile: profiles/lab-pair.yaml with the SLOs that software emulation meets
# (tests/lab/probe.sh's): on this shared 2-core machine a few percent of TCG round
# trips take 60-150 ms, over the file's 50 ms p99, and rxe retransmits on timers.
# Everything else is the file's.
mkdir -p "$T/p"
sed -e 's/^  latency_p99_us:.*/  latency_p99_us: 2000000/' -e 's/^  latency_p999_us:.*/  latency_p999_us: 4000000/' \
	-e 's/^  max_retransmissions:.*/  max_retransmissions: 200/' \
	"$ROOT/profiles/lab-pair.yaml" >"$T/p/lab-pair.yaml"
# the previous version: the same profile with a smaller MACsec MTU
sed -e 's/        mtu: 1468/        mtu: 1400/' "$T/p/lab-pair.yaml" >"$T/previous.yaml"
# and one whose SLO no link can meet, for the failure path
sed -e 's/^  latency_p99_us:.*/  latency_p99_us: 1/' "$T/p/lab-pair.yaml" >"$T/strict.yaml"

# --- the pipeline --------------------------------------------------------------------
run_pipeline() {
	rm -rf "$OUT"
	(cd "$ROOT" && FABRICCTL=$F bash examples/ci/pipeline.sh "$T/p/lab-pair.yaml" --from "$T/previous.yaml" \
		--out "$OUT" --lab --change "$CHANGE" --sign "$T/alice/audit.key" --sign "$T/bob/audit.key") 2>&1 |
		tee "$T/pipeline.out"
	return "${PIPESTATUS[0]}"
}
t0=$(date +%s)
run_pipeline
rc=$?
# One emulation fault gets one more run, said aloud: soft-RoCE on the lab's 6.1 kernel
# once stopped a write_bw for good under CI load (one timer retransmission, then no
# completion and no further retry for 60 s: docs/lab.md, Limitations). Only when the
# probe step is the one failed step and that is its reason; any other failure, or the
# same one twice, fails below.
if [ $rc != 0 ] && grep -q "no completion for .* during the write_bw run" "$T/pipeline.out" &&
	[ "$(grep -c '^--- .*: FAIL' "$T/pipeline.out")" = 1 ] && grep -q '^--- probe-fabric: FAIL' "$T/pipeline.out"; then
	echo "NOTE pipeline-rerun: the probe's write_bw stalled (soft-RoCE under emulation); the pipeline runs once more"
	run_pipeline
	rc=$?
fi
echo "  pipeline took $(($(date +%s) - t0)) s"
[ $rc = 0 ] && pass "pipeline-exit-0" || fail "pipeline-exit-0" "exit $rc"

# --- JUnit -------------------------------------------------------------------------------
J=$OUT/junit.xml
cases=$(python3 - "$J" <<'EOF' 2>&1
import sys, xml.dom.minidom as m
d = m.parse(sys.argv[1])
for tc in d.getElementsByTagName("testcase"):
    kind = "failure" if tc.getElementsByTagName("failure") else \
           "skipped" if tc.getElementsByTagName("skipped") else "ok"
    print(tc.getAttribute("name"), kind)
EOF
)
if [ $? = 0 ]; then pass "junit-well-formed"; else fail "junit-well-formed" "$cases"; fi
want="prepare validate plan lab-up apply-h1 apply-h2 agents probe-fabric audit-h1 audit-h2 audit-fabric-probe"
want+=" evidence-h1 evidence-h2 evidence-fabric-probe"
got=$(awk '{print $1}' <<<"$cases" | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] && pass "junit-expected-testcases" || fail "junit-expected-testcases" "got '$got', want '$want'"
bad=$(awk '$2 != "ok"' <<<"$cases")
[ -z "$bad" ] && grep -q 'failures="0"' "$J" && pass "junit-no-failure-no-skip" || fail "junit-no-failure-no-skip" "$bad"

# --- evidence bundles ----------------------------------------------------------------------
for h in h1 h2 fabric-probe; do
	b=$OUT/evidence-$CHANGE-$h.tar x=$T/x-$h
	mkdir -p "$x"
	if [ -f "$b" ] && tar -xf "$b" -C "$x"; then
		if (cd "$x" && bash verify.sh --signer-pub "$T/alice/audit.pub" --signer-pub "$T/bob/audit.pub" \
			--audit-pub "$OUT/audit/$h/audit.pub") >"$T/verify-$h.out" 2>&1; then
			pass "evidence-$h-verify-sh"
		else
			fail "evidence-$h-verify-sh" "$(grep -v '^ok' "$T/verify-$h.out" | head -5)"
		fi
	else
		fail "evidence-$h-verify-sh" "no bundle $b"
	fi
	# the statements (verify.sh checked their DSSE signatures), one JSON object a line
	jq -c '.payload | @base64d | fromjson' "$x/attestations.intoto.jsonl" >"$T/statements-$h.jsonl" 2>/dev/null
	[ "$h" = fabric-probe ] && continue # no SA, no apply: its verdicts are checked below
	# the packet-number evidence (docs/audit.md): the apply's SA door wrote the guest's ledger,
	# its sa-ledger record anchors it, the pipeline carried it; a TX and an RX range at least
	if grep -q "^PASS: pn: no two PN ranges of one key, SCI and direction overlap" "$T/verify-$h.out" &&
		jq -e '[.ranges[].dir] | index("tx") != null and index("rx") != null' "$x/pn/ranges.json" >/dev/null 2>&1; then
		pass "evidence-$h-pn-ranges"
	else
		fail "evidence-$h-pn-ranges" "$(grep 'pn:' "$T/verify-$h.out" | head -3) $(head -c 300 "$x/pn/ranges.json" 2>/dev/null)"
	fi
	# the apply record of this host, for this change, as a profile-apply statement
	if jq -se --arg h "$h" --arg c "$CHANGE" 'any(.[]; .predicateType == "https://fabricctl.dev/attestation/profile-apply/v1"
		and .predicate.host == $h and .predicate.change == $c and .predicate.result == "applied"
		and .predicate.profile.name == "lab-pair")' "$T/statements-$h.jsonl" >/dev/null 2>&1 &&
		jq -se 'any(.[]; .action == "apply" and .result == "applied")' "$x/audit/slice.jsonl" >/dev/null 2>&1; then
		pass "evidence-$h-apply-records"
	else
		fail "evidence-$h-apply-records"
	fi
done
# the fabric probe's bundle: one record a link and test (send_lat, write_bw, path_mtu),
# each a test-result statement, with its figures
x=$T/x-fabric-probe
n=$(jq -s '[.[] | select(.action == "probe-fabric")] | length' "$x/audit/slice.jsonl" 2>/dev/null)
P=$T/probe-statements.jsonl
jq -c 'select(.predicateType == "https://in-toto.io/attestation/test-result/v0.1")' \
	"$T/statements-fabric-probe.jsonl" >"$P" 2>/dev/null
if [ "${n:-0}" = 3 ] && jq -se --arg c "$CHANGE" 'all(.[]; .predicateType == "https://in-toto.io/attestation/test-result/v0.1"
	and .predicate.result == "PASSED" and (.predicate.passedTests | length) == 1
	and (.predicate.configuration[0].name | startswith("profiles/lab-pair-v1"))
	and .predicate.fabricctl.change == $c)' "$P" >/dev/null 2>&1 &&
	[ "$(wc -l <"$P")" = "$n" ]; then
	pass "evidence-fabric-probe-verdicts"
else
	fail "evidence-fabric-probe-verdicts" "$n probe-fabric records; $(head -c 600 "$P" 2>/dev/null)"
fi
# the figures: latency, no loss and nothing refused at either end, MACsec-encrypted
# packets counted at both ends, the VLAN's MTU passed both ways
if jq -se 'map(select(.action == "probe-fabric")) as $r | ($r | length) == 3
	and all($r[]; .result == "pass" and .profile.name == "lab-pair")
	and any($r[]; .detail | test("^send_lat size=2 link=h1-h2 vlan=100 a=h1 b=h2 .*latency_p99_us=[0-9].* loss=0/0 .*encrypted=[1-9][0-9]*/[1-9][0-9]* refused=0/0"))
	and any($r[]; .detail | test("^write_bw size=65536 link=h1-h2 vlan=100 .* loss=0/0 .*encrypted=[1-9][0-9]*/[1-9][0-9]* refused=0/0"))
	and any($r[]; .detail | test("^path_mtu link=h1-h2 vlan=100 .*mtu=1468 largest_a=1468 largest_b=1468"))' \
	"$x/audit/slice.jsonl" >/dev/null 2>&1; then
	pass "probe-records-carry-figures"
else
	fail "probe-records-carry-figures" "$(jq -c 'select(.action == "probe-fabric")' "$x/audit/slice.jsonl" 2>/dev/null | head -c 800)"
fi
# the fabric probe's JSON and JUnit beside the pipeline's
if jq -e '.pass == true and (.links | length) == 1 and .links[0].link == "h1-h2"' "$OUT/probe-fabric.json" >/dev/null 2>&1 &&
	grep -q '<testcase' "$OUT/probe-fabric.junit.xml" 2>/dev/null; then
	pass "probe-fabric-json-junit"
else
	fail "probe-fabric-json-junit" "$(head -c 400 "$OUT/probe-fabric.json" 2>/dev/null)"
fi

# --- a failed SLO is a failed step, never a skipped one ---------------------------------------
O2=$BUILD/ci-pipeline-test-fail
rm -rf "$O2"
if [ "${FCTL_CI_FAILURE_PATH:-1}" = 0 ]; then
	echo "NOTE failure-path: not run here (FCTL_CI_FAILURE_PATH=0: the run's other clone runs it)"
else
	(cd "$ROOT" && FABRICCTL=$F bash examples/ci/pipeline.sh "$T/strict.yaml" --out "$O2" --lab --change CI-TEST-2 \
		--probe-args "--test send_lat --iters 20 --qp-timeout 20") >"$T/fail.out" 2>&1
	rc=$?
	sed -n '/=== probe-fabric/,/--- probe-fabric/p' "$T/fail.out"
	if [ $rc = 1 ] && python3 - "$O2/junit.xml" <<-'EOF'
	import sys, xml.dom.minidom as m
	d = m.parse(sys.argv[1])
	tc = {t.getAttribute("name"): t for t in d.getElementsByTagName("testcase")}
	f = tc["probe-fabric"].getElementsByTagName("failure")
	assert f and "latency p99" in f[0].toxml(), "no latency failure"
	assert tc["evidence"].getElementsByTagName("skipped"), "evidence should be skipped (no --sign)"
	assert sum(1 for t in tc.values() if t.getElementsByTagName("skipped")) == 1
	assert d.getElementsByTagName("testsuite")[0].getAttribute("failures") == "1"
	EOF
	then
		pass "slo-failure-is-a-junit-failure"
	else
		fail "slo-failure-is-a-junit-failure" "exit $rc; $(tail -5 "$T/fail.out")"
	fi
	if jq -se 'map(select(.action == "probe-fabric" and (.detail | startswith("send_lat ")))) |
		length == 1 and .[0].result == "fail" and .[0].change == "CI-TEST-2"
		and (.[0].error | test("latency p99"))' "$O2/audit/fabric-probe/audit.log" >/dev/null 2>&1; then
		pass "slo-failure-audited"
	else
		fail "slo-failure-audited" "$(grep probe "$O2/audit/fabric-probe/audit.log" 2>/dev/null | head -c 600)"
	fi
fi

# --- nothing left behind ----------------------------------------------------------------------
left=$(find "$OUT" "$O2" -name '*.key' 2>/dev/null)
[ -z "$left" ] && pass "no-throwaway-keys-left" || fail "no-throwaway-keys-left" "$left"
"$F" lab status >/dev/null 2>&1 && fail "lab-down-after-pipeline" || pass "lab-down-after-pipeline"
