#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian package in the lab: tests/package/package.sh --keep builds, checks and
# installs build/fabricctl_*.deb, then the CI pipeline (examples/ci/pipeline.sh --lab)
# runs with the INSTALLED programs only: /usr/sbin/fabricctl boots the lab with the
# installed lab scripts (/usr/share/fabricctl), applies the lab profile on both hosts,
# starts the installed agent on both and probes RoCE over MACsec through them (probe
# --fabric: the agents run /usr/libexec/fabricctl/fabricctl-probe), and signs one
# evidence bundle per host and one for the probe's log, which verify.sh checks with the
# signers and audit keys pinned. The package is purged at the end, even on failure, and must leave nothing.
# Prints PASS/FAIL per check and "package_lab: N passed, M failed"; needs root.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
F=/usr/sbin/fabricctl
export FCTL_LAB_DIR=${FCTL_LAB_DIR:-/var/tmp/fabricctl-lab-package}
CHANGE=PKG-LAB-1
PASS=0 FAIL=0 INSTALLED=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
T=$(mktemp -d /tmp/fctl-package-lab.XXXXXX) || exit 2
OUT=$T/out

finish() {
	local rc=$?
	[ -x "$F" ] && "$F" lab down >/dev/null 2>&1
	bash "$ROOT/scripts/lab.sh" down --dir "$FCTL_LAB_DIR" >/dev/null 2>&1
	if [ "$INSTALLED" = 1 ]; then
		if dpkg --purge fabricctl >"$T/purge.log" 2>&1 && [ ! -e "$F" ] &&
			! dpkg-query -W fabricctl >/dev/null 2>&1; then
			pass purged-nothing-left
		else
			fail purged-nothing-left "$(tail -3 "$T/purge.log")"
		fi
	fi
	rm -rf "$T"
	[ "$rc" -ne 0 ] && [ "$FAIL" -eq 0 ] && fail script "stopped early with status $rc"
	echo "package_lab: $PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ] && [ "$PASS" -gt 0 ] && exit 0
	exit 1
}
trap finish EXIT

# package.sh's own checks, printed whole: scripts/test.sh runs this instead of package.sh
# when it runs the lab (the same build, lintian and installed-file checks; the purge is
# checked at the end here)
bash "$ROOT/tests/package/package.sh" --keep >"$T/package.log" 2>&1
rc=$?
sed 's/^/  | /' "$T/package.log"
if [ $rc -eq 0 ]; then
	INSTALLED=1
	pass package-built-checked-installed
else
	fail package-built-checked-installed "$(grep -E '^FAIL|cannot run' "$T/package.log" | head -5)"
	exit 1
fi
[ "$(readlink -f "$F")" = "$F" ] && [ -x /usr/libexec/fabricctl/fabricctl-probe ] &&
	pass installed-programs || fail installed-programs "$(ls -l "$F" /usr/libexec/fabricctl 2>&1)"

for k in alice bob; do
	"$F" audit keygen --out "$T/$k" >/dev/null || { fail keygen "$k"; exit 1; }
done
# profiles/lab-pair.yaml with the SLOs software emulation meets (as tests/lab/ci_pipeline.sh)
mkdir -p "$T/p"
sed -e 's/^  latency_p99_us:.*/  latency_p99_us: 2000000/' -e 's/^  latency_p999_us:.*/  latency_p999_us: 4000000/' \
	-e 's/^  max_retransmissions:.*/  max_retransmissions: 200/' \
	"$ROOT/profiles/lab-pair.yaml" >"$T/p/lab-pair.yaml"
sed -e 's/        mtu: 1468/        mtu: 1400/' "$T/p/lab-pair.yaml" >"$T/previous.yaml"

t0=$(date +%s)
(cd "$ROOT" && FABRICCTL=$F bash examples/ci/pipeline.sh "$T/p/lab-pair.yaml" --from "$T/previous.yaml" \
	--out "$OUT" --lab --change "$CHANGE" --sign "$T/alice/audit.key" --sign "$T/bob/audit.key") \
	>"$T/pipeline.log" 2>&1
rc=$?
echo "  pipeline with the installed programs took $(($(date +%s) - t0)) s"
[ $rc = 0 ] && pass pipeline-exit-0 || fail pipeline-exit-0 "exit $rc: $(grep -E '^--- .*FAIL|error' "$T/pipeline.log" | head -5)"
for s in apply-h1 apply-h2 agents probe-fabric; do
	grep -q "^--- $s: PASS" "$T/pipeline.log" && pass "$s-with-the-installed-fabricctl" ||
		fail "$s-with-the-installed-fabricctl" "$(grep -A3 "^=== $s" "$T/pipeline.log" | head -6)"
done
# the guests ran the installed binaries, not a build tree's
grep -q "/usr/sbin/fabricctl apply" "$T/pipeline.log" && ! grep -q '/build/fabricctl/fabricctl' "$T/pipeline.log" &&
	pass ran-the-installed-binary || fail ran-the-installed-binary "$(grep -m3 'fabricctl apply' "$T/pipeline.log")"
for h in h1 h2 fabric-probe; do
	b=$OUT/evidence-$CHANGE-$h.tar x=$T/x-$h
	mkdir -p "$x"
	if [ -f "$b" ] && tar -xf "$b" -C "$x" && (cd "$x" && bash verify.sh --signer-pub "$T/alice/audit.pub" \
		--signer-pub "$T/bob/audit.pub" --audit-pub "$OUT/audit/$h/audit.pub") >"$T/verify-$h.out" 2>&1; then
		pass "evidence-$h-verifies-pinned"
	else
		fail "evidence-$h-verifies-pinned" "$(tail -3 "$T/verify-$h.out" 2>/dev/null)"
	fi
done
