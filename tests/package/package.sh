#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian package end to end, on this machine (needs root): scripts/package.sh
# builds it, lintian reports no error, dpkg -i installs it, the installed programs,
# manual pages, completion, units, tmpfiles.d directories and schema work, then
# dpkg --purge leaves nothing of it behind. A failure purges too (trap).
#   tests/package/package.sh [--keep]
#     --keep   on success, leave the package installed (for the lab's apply and probe
#              with /usr/sbin/fabricctl); the caller purges it: dpkg --purge fabricctl
# Prints PASS/FAIL per check and "package: N passed, M failed".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${FCTL_PYTHON:-/usr/bin/python3}
KEEP=0
[ "${1:-}" = --keep ] && KEEP=1
PASS=0 FAIL=0 INSTALLED=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
check() { # name command...: PASS when the command succeeds
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$(head -5 <<<"$out")"; fi
}
die() { echo "package: cannot run: $*" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "needs root (dpkg -i)"
for t in lintian dpkg-deb fakeroot systemd-analyze man bash "$PY"; do
	command -v "$t" >/dev/null || die "$t is missing (scripts/deps.sh)"
done
# an unpackaged fabricctl would be overwritten by dpkg -i, then removed by the purge
if ! dpkg-query -W -f='${Status}' fabricctl 2>/dev/null | grep -q "install ok installed" &&
	[ -e /usr/sbin/fabricctl ]; then
	die "/usr/sbin/fabricctl exists and is not from the package: remove it first"
fi
STATE_BEFORE=0 STATE_MODE=
if [ -e /var/lib/fabricctl ]; then
	STATE_BEFORE=1
	STATE_MODE=$(stat -c %a /var/lib/fabricctl)
fi
T=$(mktemp -d /tmp/fctl-package.XXXXXX) || die "mktemp"

purge() {
	dpkg --purge fabricctl >"$T/purge.log" 2>&1
}
finish() {
	local rc=$?
	[ "$rc" -ne 0 ] && [ "$FAIL" -eq 0 ] && fail script "stopped early with status $rc"
	if [ "$INSTALLED" = 1 ] && { [ "$KEEP" = 0 ] || [ "$FAIL" -gt 0 ]; }; then
		purge || echo "package: dpkg --purge fabricctl failed: $(cat "$T/purge.log")" >&2
	fi
	[ "$INSTALLED" = 1 ] && [ "$KEEP" = 1 ] && [ "$FAIL" -eq 0 ] &&
		echo "package: kept installed (--keep): dpkg --purge fabricctl removes it"
	# a state directory that was here before keeps its mode (tmpfiles.d made it 0700)
	[ -n "$STATE_MODE" ] && [ "$INSTALLED" = 0 ] && chmod "$STATE_MODE" /var/lib/fabricctl
	rm -rf -- "$T"
	echo "package: $PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ] && [ "$PASS" -gt 0 ] && exit 0
	exit 1
}
trap finish EXIT

# 1. build
VERSION=$(sed -n 's/^project(fabricctl VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
if "$ROOT/scripts/package.sh" --jobs "${FCTL_JOBS:-$(nproc)}" >"$T/build.log" 2>&1; then
	DEB=$(tail -1 "$T/build.log")
	pass "package-builds $(basename "$DEB")"
else
	fail "package-builds" "$(tail -20 "$T/build.log")"
	exit 1
fi
[ "$(basename "$DEB")" = "fabricctl_${VERSION}_$(dpkg --print-architecture).deb" ] &&
	pass "deb-name" || fail "deb-name" "$DEB"
check "deb-version" test "$(dpkg-deb -f "$DEB" Version)" = "$VERSION"

# 2. lintian: no error (warnings are listed, not failed; packaging/debian/lintian-overrides
# says why the one override is right)
lintian --tag-display-limit 0 "$DEB" >"$T/lintian.log" 2>&1
sed 's/^/  lintian: /' "$T/lintian.log" | grep -v "running with root privileges" || true
if grep -q '^E:' "$T/lintian.log"; then
	fail "lintian-no-errors" "$(grep '^E:' "$T/lintian.log" | head -5)"
else
	pass "lintian-no-errors"
fi

# 3. install
if dpkg -i "$DEB" >"$T/install.log" 2>&1; then
	INSTALLED=1
	pass "dpkg-install"
else
	INSTALLED=1 # half-configured: the trap purges it
	fail "dpkg-install" "$(tail -10 "$T/install.log")"
	exit 1
fi
check "dpkg-verify" dpkg --verify fabricctl
out=$(/usr/sbin/fabricctl --version 2>&1)
[ "$out" = "fabricctl $VERSION (profile schema 1)" ] && pass "fabricctl-version" ||
	fail "fabricctl-version" "$out"
for h in fabricctl-keymgr fabricctl-probe; do
	check "helper $h" test -x "/usr/libexec/fabricctl/$h"
done
check "keymgr-help" /usr/libexec/fabricctl/fabricctl-keymgr --help
check "lab-script" test -x /usr/share/fabricctl/lab.sh
hooks=$(grep -laE 'FCTL_TEST_FAIL_AT_OP|FCTL_TEST_CRASH_AFTER_OP|FCTL_AUDIT_TEST_TEAR|FCTL_KEYMGR_TEST_HOOK' \
	/usr/sbin/fabricctl /usr/libexec/fabricctl/fabricctl-keymgr /usr/libexec/fabricctl/fabricctl-probe)
[ -z "$hooks" ] && pass "no-test-hooks" || fail "no-test-hooks" "$hooks"
# no path of the tree the package was built in: its programs find their installed helpers
# only, and the source file names OpenSSL's macros record are relative
leaks=$(grep -laF -e "$ROOT/" /usr/sbin/fabricctl /usr/libexec/fabricctl/fabricctl-keymgr \
	/usr/libexec/fabricctl/fabricctl-probe)
[ -z "$leaks" ] && pass "no-build-tree-paths" ||
	fail "no-build-tree-paths" "$leaks: $(strings $leaks | grep -F "$ROOT/" | head -3 | tr '\n' ' ')"

# manual pages: found by man, one per command, rendered
page=$(man -w fabricctl 2>&1)
[ "$page" = /usr/share/man/man8/fabricctl.8.gz ] && pass "man-w-fabricctl" || fail "man-w-fabricctl" "$page"
missing=
for c in $(/usr/sbin/fabricctl help --commands); do
	man -w "fabricctl-$c" >/dev/null 2>&1 || missing="$missing fabricctl-$c"
done
[ -z "$missing" ] && pass "man-page-per-command" || fail "man-page-per-command" "$missing"
out=$(MANWIDTH=100 man fabricctl-apply 2>/dev/null | col -b)
grep -q "fabricctl apply \[--json\]" <<<"$out" && grep -q -- "--dry-run" <<<"$out" &&
	pass "man-fabricctl-apply-renders" || fail "man-fabricctl-apply-renders" "$(head -5 <<<"$out")"

# bash completion
out=$(bash -c '. /usr/share/bash-completion/completions/fabricctl && complete -p fabricctl' 2>&1)
[ "$out" = "complete -o default -F _fabricctl fabricctl" ] && pass "completion-loads" ||
	fail "completion-loads" "$out"

# systemd units and tmpfiles.d
for u in fabricctl-agent.service fabricctl-keys-watch.service; do
	if out=$(systemd-analyze verify "/lib/systemd/system/$u" 2>&1) && [ -z "$out" ]; then
		pass "systemd-analyze-verify $u"
	else
		fail "systemd-analyze-verify $u" "$out"
	fi
done
check "agent-type-notify" grep -qx Type=notify /lib/systemd/system/fabricctl-agent.service
check "tmpfiles-conf" test -f /usr/lib/tmpfiles.d/fabricctl.conf
[ "$(stat -c %a /var/lib/fabricctl 2>&1)" = 700 ] && pass "state-dir-0700" ||
	fail "state-dir-0700" "$(stat -c %a /var/lib/fabricctl 2>&1)"
check "run-dir" test -d /run/fabricctl
check "conffile-keys-watch" grep -q /etc/default/fabricctl-keys-watch /var/lib/dpkg/info/fabricctl.conffiles

# the schema: there, and an installed example validates with it and with fabricctl
SCHEMA=/usr/share/fabricctl/profile.schema.json
EX=/usr/share/doc/fabricctl/examples/profiles/lab-pair.yaml
check "schema-installed" test -f "$SCHEMA"
check "schema-validates-example" env PYTHONPATH="$ROOT/tests/schema" "$PY" -c '
import json, sys, jsonschema, yaml, check_schema as c
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
errs = list(v.iter_errors(yaml.load(open(sys.argv[2]).read(), Loader=c.ProfileLoader)))
sys.exit("; ".join(e.message for e in errs[:3]) if errs else 0)' "$SCHEMA" "$EX"
check "fabricctl-validates-example" /usr/sbin/fabricctl validate -q "$EX"
check "docs-installed" test -f /usr/share/doc/fabricctl/profile.md
check "copyright" grep -q "^License: Expat" /usr/share/doc/fabricctl/copyright
check "changelog" test -f /usr/share/doc/fabricctl/changelog.gz

if [ "$KEEP" = 1 ]; then
	exit 0
fi

# 4. purge: nothing left
dpkg -L fabricctl 2>/dev/null | while IFS= read -r f; do [ -d "$f" ] || echo "$f"; done >"$T/files"
if purge; then
	INSTALLED=0
	pass "dpkg-purge"
else
	fail "dpkg-purge" "$(tail -5 "$T/purge.log")"
	exit 1
fi
if dpkg -L fabricctl >/dev/null 2>&1; then fail "dpkg-L-gone"; else pass "dpkg-L-gone"; fi
check "fabricctl-gone" test ! -e /usr/sbin/fabricctl
left=$(while IFS= read -r f; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done <"$T/files")
[ -z "$left" ] && pass "no-file-left ($(wc -l <"$T/files") files)" || fail "no-file-left" "$left"
check "conffile-gone" test ! -e /etc/default/fabricctl-keys-watch
for d in /usr/libexec/fabricctl /usr/share/fabricctl /usr/share/doc/fabricctl; do
	check "dir-gone $d" test ! -e "$d"
done
if [ "$STATE_BEFORE" = 0 ]; then
	check "state-dir-gone" test ! -e /var/lib/fabricctl
fi
exit 0
