#!/bin/bash
# SPDX-License-Identifier: MIT
# The CI pipeline for profile changes, as fabricctl commands (docs/audit.md):
#   validate -> plan --offline against the previous version -> apply in the lab
#   -> (probe: when it lands) -> evidence bundle
# Writes JUnit XML (one testcase per step) for the CI system to display, and the
# step outputs under OUT. Exit 0 only when every step passed.
#
# usage: examples/ci/pipeline.sh PROFILE [--from OLD | --git-base REV] [--out DIR]
#            [--lab] [--sign KEY]... [--change ID]
#   --from OLD      the previous version as a file; default: PROFILE at REV via git show
#   --git-base REV  default HEAD~1 (the commit before this change)
#   --lab           boot the lab from the profile (fabricctl lab up --profile) and apply
#                   it on every host (needs root and qemu; see docs/lab.md)
#   --sign KEY      sign the evidence bundle (repeat for dual control); without it the
#                   bundle step is skipped and says so
set -uo pipefail

FCTL=${FABRICCTL:-fabricctl}
PROFILE= FROM= BASE=HEAD~1 OUT=ci-out LAB=0 CHANGE=${CI_COMMIT_SHORT_SHA:-${GITHUB_SHA:-local}}
SIGN=()
while [ $# -gt 0 ]; do
	case $1 in
	--from) FROM=$2; shift 2 ;;
	--git-base) BASE=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--lab) LAB=1; shift ;;
	--sign) SIGN+=(--sign "$2"); shift 2 ;;
	--change) CHANGE=$2; shift 2 ;;
	-*) echo "pipeline.sh: unknown option '$1'" >&2; exit 2 ;;
	*) PROFILE=$1; shift ;;
	esac
done
[ -n "$PROFILE" ] || { echo "usage: pipeline.sh PROFILE [--from OLD] [--lab] [--sign KEY]..." >&2; exit 2; }
mkdir -p "$OUT"
export FCTL_AUDIT_LOG=${FCTL_AUDIT_LOG:-$PWD/$OUT/audit/audit.log} FCTL_CHANGE_ID=$CHANGE
CASES=() FAILED=0 T0=$(date +%s)

xml() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'; }
step() { # name, command...: runs it, output in OUT/name.log, records a testcase
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	echo "=== $name: $*"
	"$@" >"$OUT/$name.log" 2>&1
	rc=$?
	sed 's/^/    /' "$OUT/$name.log" | head -40
	local tc="<testcase classname=\"fabricctl.ci\" name=\"$name\" time=\"$(($(date +%s) - t0))\">"
	if [ $rc -ne 0 ]; then
		FAILED=$((FAILED + 1))
		tc+="<failure message=\"exit $rc\">$(tail -c 4000 "$OUT/$name.log" | xml)</failure>"
		echo "--- $name: FAIL (exit $rc)"
	else
		echo "--- $name: PASS"
	fi
	CASES+=("$tc<system-out>$(tail -c 4000 "$OUT/$name.log" | xml)</system-out></testcase>")
	return $rc
}
skipped() { # name, reason
	echo "--- $1: SKIPPED ($2)"
	CASES+=("<testcase classname=\"fabricctl.ci\" name=\"$1\"><skipped message=\"$(printf '%s' "$2" | xml)\"/></testcase>")
}

# 1. validate
step validate "$FCTL" validate --strict "$PROFILE"
"$FCTL" validate --junit "$PROFILE" >"$OUT/validate.junit.xml" 2>/dev/null

# 2. plan against the previous version
if [ -z "$FROM" ] && git rev-parse --verify -q "$BASE" >/dev/null 2>&1 &&
	git cat-file -e "$BASE:$PROFILE" 2>/dev/null; then
	FROM=$OUT/previous.yaml
	git show "$BASE:$PROFILE" >"$FROM"
	# relative key paths resolve against the profile's directory
	cp "$FROM" "$(dirname "$PROFILE")/.ci-previous.yaml" && FROM=$(dirname "$PROFILE")/.ci-previous.yaml
fi
if [ -n "$FROM" ]; then
	step plan "$FCTL" plan --offline "$PROFILE" --from "$FROM"
	"$FCTL" plan --offline --json "$PROFILE" --from "$FROM" >"$OUT/plan.json" 2>/dev/null
else
	step plan "$FCTL" plan --offline "$PROFILE"
fi
[ "${FROM##*/}" = .ci-previous.yaml ] && rm -f "$FROM"

# 3. apply in the lab
if [ $LAB = 1 ]; then
	if step lab-up "$FCTL" lab up --profile "$PROFILE"; then
		for h in $("$FCTL" lab status --json 2>/dev/null | jq -r '.hosts[].name // empty' 2>/dev/null); do
			step "apply-$h" "$FCTL" lab exec "$h" -- fabricctl apply --change "$CHANGE" "$PROFILE"
			# the guest's audit records come back with the guest's log (docs/lab.md)
		done
		"$FCTL" lab down >/dev/null 2>&1
	fi
else
	skipped apply-lab "--lab not given (needs root and qemu)"
fi

# 4. probe
skipped probe "the probe issue has not landed yet"

# 5. evidence bundle of this change
if [ ${#SIGN[@]} -gt 0 ] && [ -s "$FCTL_AUDIT_LOG" ]; then
	step evidence "$FCTL" evidence --change "$CHANGE" --profile "$PROFILE" "${SIGN[@]}" \
		--out "$OUT/evidence-$CHANGE.tar"
else
	skipped evidence "no --sign key or no audit records for change $CHANGE"
fi

{
	echo '<?xml version="1.0" encoding="UTF-8"?>'
	echo "<testsuites><testsuite name=\"fabricctl ci\" tests=\"${#CASES[@]}\" failures=\"$FAILED\" time=\"$(($(date +%s) - T0))\">"
	printf '%s\n' "${CASES[@]}"
	echo '</testsuite></testsuites>'
} >"$OUT/junit.xml"
echo "pipeline: ${#CASES[@]} steps, $FAILED failed; JUnit in $OUT/junit.xml"
[ $FAILED -eq 0 ]
