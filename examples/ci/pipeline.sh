#!/bin/bash
# SPDX-License-Identifier: MIT
# The CI pipeline for profile changes, as fabricctl commands (docs/audit.md, "CI"):
#   prepare -> validate -> plan --offline against the previous version
#   -> (--lab) lab up from the profile, apply on every lab host, probe every link
#      when the profile has an slo section, collect each host's audit log
#   -> (--sign) one signed evidence bundle per lab host
# Writes JUnit XML (one testcase per step) for the CI system to display, and the
# step outputs under OUT. Exit 0 only when every step passed.
#
# usage: examples/ci/pipeline.sh PROFILE [--from OLD | --git-base REV] [--out DIR]
#            [--lab] [--sign KEY]... [--change ID] [--probe-args "ARGS"]
#   --from OLD        the previous version as a file; default: PROFILE at REV via git show
#   --git-base REV    default HEAD~1 (the commit before this change)
#   --out DIR         default ci-out; any path (the lab keeps it visible in the guests,
#                     FCTL_LAB_KEEP, docs/lab.md)
#   --lab             boot the lab from the profile (fabricctl lab up --profile), apply it
#                     on every host, probe every link (needs root and qemu; docs/lab.md)
#   --sign KEY        sign the evidence bundles (repeat for dual control); without it the
#                     evidence step is skipped and says so
#   --probe-args A    options for 'probe run' (default: $FCTL_CI_PROBE_ARGS or
#                     "--test send_lat,write_bw --iters 200 --qp-timeout 20")
# Environment: FABRICCTL (the fabricctl binary; default: fabricctl on PATH), FCTL_LAB_DIR
# (the lab's directory, as for 'fabricctl lab').
#
# Key files: the profile is copied into OUT/work with throwaway LAB-ONLY keys for its
# file-backend key references (fabricctl lab keys); validate and plan read that copy, the
# lab applies it. The keys are deleted when the pipeline ends. Real keys never enter CI.
set -uo pipefail

FCTL=${FABRICCTL:-fabricctl}
PROFILE='' FROM='' BASE=HEAD~1 OUT=ci-out LAB=0 CHANGE=${CI_COMMIT_SHORT_SHA:-${GITHUB_SHA:-local}}
PROBE_ARGS=${FCTL_CI_PROBE_ARGS:---test send_lat,write_bw --iters 200 --qp-timeout 20}
SIGN=()
while [ $# -gt 0 ]; do
	case $1 in
	--from) FROM=$2; shift 2 ;;
	--git-base) BASE=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--lab) LAB=1; shift ;;
	--sign) SIGN+=(--sign "$(realpath -m -- "$2")"); shift 2 ;;
	--change) CHANGE=$2; shift 2 ;;
	--probe-args) PROBE_ARGS=$2; shift 2 ;;
	-*) echo "pipeline.sh: unknown option '$1'" >&2; exit 2 ;;
	*) PROFILE=$1; shift ;;
	esac
done
[ -n "$PROFILE" ] || { echo "usage: pipeline.sh PROFILE [--from OLD] [--out DIR] [--lab] [--sign KEY]..." >&2; exit 2; }
[ -f "$PROFILE" ] || { echo "pipeline.sh: no profile '$PROFILE'" >&2; exit 2; }
[[ $CHANGE =~ ^[A-Za-z0-9._-]{1,64}$ ]] || { echo "pipeline.sh: --change takes 1..64 of A-Z a-z 0-9 . _ -, not '$CHANGE'" >&2; exit 2; }

# The guests run the host's binaries and read host files by the same absolute paths.
FCTL=$(command -v "$FCTL") && FCTL=$(realpath -- "$FCTL") ||
	{ echo "pipeline.sh: fabricctl not found (set FABRICCTL)" >&2; exit 2; }
OUT=$(realpath -m -- "$OUT")
# The guests see the host's files at the same paths, but for their own tmpfs (/tmp,
# /var/tmp, /run, /root, /dev/shm): the lab keeps OUT visible there too.
export FCTL_LAB_KEEP=${FCTL_LAB_KEEP:+$FCTL_LAB_KEEP:}$OUT
mkdir -p "$OUT" || exit 2
WORK=$OUT/work
rm -rf "$WORK" "$OUT/audit" "$OUT"/evidence-*.tar
mkdir -p "$WORK" "$OUT/audit" || exit 2
NAME=$(basename "$PROFILE")
NEW=$WORK/$NAME
export FCTL_CHANGE_ID=$CHANGE
unset FCTL_AUDIT_LOG # each lab host writes its own log, into its share
CASES=() FAILED=0 T0=$(date +%s) LAB_UP=0

xml() { tr -d '\000-\010\013\014\016-\037' | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'; }
step() { # name, command...: runs it, output in OUT/name.log, records a testcase
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	echo "=== $name: $*"
	"$@" >"$OUT/$name.log" 2>&1 </dev/null
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
failed() { # name, reason: a step that could not even start
	echo "--- $1: FAIL ($2)"
	FAILED=$((FAILED + 1))
	CASES+=("<testcase classname=\"fabricctl.ci\" name=\"$1\"><failure message=\"$(printf '%s' "$2" | xml)\"/></testcase>")
}
skipped() { # name, reason: only for steps that do not apply
	echo "--- $1: SKIPPED ($2)"
	CASES+=("<testcase classname=\"fabricctl.ci\" name=\"$1\"><skipped message=\"$(printf '%s' "$2" | xml)\"/></testcase>")
}
write_junit() {
	{
		echo '<?xml version="1.0" encoding="UTF-8"?>'
		echo "<testsuites><testsuite name=\"fabricctl ci\" tests=\"${#CASES[@]}\" failures=\"$FAILED\" time=\"$(($(date +%s) - T0))\">"
		printf '%s\n' "${CASES[@]}"
		echo '</testsuite></testsuites>'
	} >"$OUT/junit.xml"
}
cleanup() {
	[ $LAB_UP = 1 ] && "$FCTL" lab down >/dev/null 2>&1
	LAB_UP=0
	# the throwaway keys never leave the run (OUT is uploaded as an artifact)
	rm -rf "$WORK/keys" "$WORK/.keys"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 0. prepare: the profile and its previous version side by side in WORK, lab keys for both
prepare() {
	cp -- "$PROFILE" "$NEW" || return 1
	if [ -n "$FROM" ]; then
		cp -- "$FROM" "$WORK/previous.yaml" || return 1
	elif git rev-parse --verify -q "$BASE" >/dev/null 2>&1 && git cat-file -e "$BASE:$PROFILE" 2>/dev/null; then
		git show "$BASE:$PROFILE" >"$WORK/previous.yaml" || return 1
	fi
	echo "profile $PROFILE -> $NEW ($(sha256sum <"$NEW" | cut -c1-16)...)"
	[ -f "$WORK/previous.yaml" ] && echo "previous version -> $WORK/previous.yaml" ||
		echo "no previous version (--from, or $PROFILE at $BASE): planning from nothing"
	# relative key ids resolve against WORK; keys the copy names get throwaway lab keys
	"$FCTL" lab keys "$NEW" --dir "$WORK" || return 1
	[ ! -f "$WORK/previous.yaml" ] || "$FCTL" lab keys "$WORK/previous.yaml" --dir "$WORK"
}
step prepare prepare || { write_junit; exit 1; }

# 1. validate
step validate "$FCTL" validate --strict "$NEW"
"$FCTL" validate --junit "$NEW" >"$OUT/validate.junit.xml" 2>/dev/null

# 2. plan against the previous version
if [ -f "$WORK/previous.yaml" ]; then
	step plan "$FCTL" plan --offline "$NEW" --from "$WORK/previous.yaml"
	"$FCTL" plan --offline --json "$NEW" --from "$WORK/previous.yaml" >"$OUT/plan.json" 2>/dev/null
	# for a review comment: the plan as Markdown, disruptive changes called out
	"$FCTL" plan --offline --markdown "$NEW" --from "$WORK/previous.yaml" >"$OUT/plan.md" 2>/dev/null
else
	step plan "$FCTL" plan --offline "$NEW"
	"$FCTL" plan --offline --markdown "$NEW" >"$OUT/plan.md" 2>/dev/null
fi

# 3. the lab: apply on every host, probe every link, collect the audit logs
HOSTS=() # "name share" of each lab host
lab_exec() { # host, env K=V..., --, command...
	local h=$1 envs=()
	shift
	while [ "$1" != -- ]; do envs+=(--env "$1"); shift; done
	shift
	"$FCTL" lab exec --timeout 600 "${envs[@]}" "$h" -- "$@"
}
share_of() { local x; for x in "${HOSTS[@]}"; do [ "${x%% *}" = "$1" ] && echo "${x#* }"; done; }

probe_link() { # link, a-host, a-macsec, a-addr, b-host, b-macsec, b-addr
	local link=$1 ah=$2 am=$3 bh=$5 bm=$6 baddr=$7 job rc ok=0 args
	local ashare bshare
	ashare=$(share_of "$ah") bshare=$(share_of "$bh")
	[ -n "$ashare" ] && [ -n "$bshare" ] || { echo "$ah or $bh is not a lab host"; return 2; }
	# soft-RoCE on the MACsec device of each end: RoCE v2 over MACsec over the VLAN
	for e in "$ah $am" "$bh $bm"; do
		set -- $e
		lab_exec "$1" -- sh -c "rdma link show rxe_$2 >/dev/null 2>&1 || rdma link add rxe_$2 type rxe netdev $2" ||
			{ echo "cannot add rxe_$2 on $1"; return 2; }
	done
	job=$("$FCTL" lab exec-bg --timeout 900 "$bh" -- "$FCTL" probe serve --once --dev "rxe_$bm") ||
		{ echo "cannot start 'probe serve' on $bh"; return 2; }
	for _ in $(seq 60); do
		lab_exec "$bh" -- ss -Hltn 'sport = :18516' 2>/dev/null | grep -q . && { ok=1; break; }
		sleep 0.5
	done
	[ $ok = 1 ] || { echo "'probe serve' on $bh does not listen"; "$FCTL" lab kill "$bh" "$job"; return 2; }
	read -ra args <<<"$PROBE_ARGS"
	lab_exec "$ah" "FCTL_AUDIT_LOG=$ashare/audit.log" "FCTL_CHANGE_ID=$CHANGE" -- \
		"$FCTL" probe run --peer "$baddr" --dev "rxe_$am" "${args[@]}" --profile "$NEW" --link "$link" \
		--change "$CHANGE" --json >"$OUT/probe-$link.json"
	rc=$?
	jq -r '.results[] | "  \(.test) \(.size_bytes) B: p99 \(.latency_p99_us // "-") us, \(.bandwidth_gbps // "-") Gb/s, loss \([.ends[].loss_packets] | add), retrans \([.ends[].retransmissions] | add), macsec \([.ends[].macsec | .is_macsec and .encrypt] | all): \(if .pass then "pass" else "FAIL: \(.reasons | join("; "))" end)"' \
		"$OUT/probe-$link.json" 2>/dev/null
	"$FCTL" lab wait --timeout 60 "$bh" "$job" >/dev/null 2>&1 || "$FCTL" lab kill "$bh" "$job" >/dev/null 2>&1
	echo "probe run exit $rc (0 pass, 1 an SLO failed, 2 error); verdicts audited in $ah's log"
	return $rc
}

collect() { # name share: the host's audit log (not its private checkpoint key) and ledger
	local d=$OUT/audit/$1 f
	mkdir -p "$d" || return 1
	for f in "$2"/audit.log "$2"/audit.log.[0-9]* "$2"/audit.log.checkpoints "$2"/audit.pub "$2"/sa-ledger; do
		[ -f "$f" ] && cp -- "$f" "$d/"
	done
	[ -s "$d/audit.log" ] || { echo "no audit log in $2"; return 1; }
	echo "$(grep -c . "$d/audit.log") records from $2/audit.log -> $d"
	# the copy is not where the guest wrote it: its checkpoints name the guest's host and
	# path (the origin), which this pipeline just collected; every checkpoint must name it
	"$FCTL" audit verify --log "$d/audit.log" --pubkey "$d/audit.pub" \
		--origin "$(head -n 1 "$d/audit.log.checkpoints" 2>/dev/null)"
}

if [ $LAB = 1 ]; then
	if step lab-up "$FCTL" lab up --profile "$NEW" --lifetime 1800; then
		LAB_UP=1
		while read -r n s; do HOSTS+=("$n $s"); done < <("$FCTL" lab status --json 2>/dev/null |
			jq -r '.hosts[] | "\(.name // .host) \(.share)"' 2>/dev/null)
		[ ${#HOSTS[@]} -gt 0 ] || failed lab-status "'lab status --json' names no hosts"
		for x in "${HOSTS[@]}"; do
			n=${x%% *} s=${x#* }
			step "apply-$n" lab_exec "$n" "FCTL_AUDIT_LOG=$s/audit.log" "FCTL_CHANGE_ID=$CHANGE" -- \
				"$FCTL" apply --change "$CHANGE" "$NEW"
			# the guest's packet-number ledger beside its log: the log's sa-ledger records
			# anchor it and the evidence bundle shows its PN ranges (docs/audit.md)
			lab_exec "$n" -- sh -c '[ ! -e /var/lib/fabricctl/sa-ledger ] || cp /var/lib/fabricctl/sa-ledger "$0"' \
				"$s/sa-ledger" >/dev/null 2>&1
		done
		if grep -Eq '^slo:' "$NEW"; then
			LINKS=$("$FCTL" lab links "$NEW" 2>"$OUT/links.err")
			[ -s "$OUT/links.err" ] && cat "$OUT/links.err"
			if [ -z "$LINKS" ]; then
				failed probe "the profile has an slo section but no link with a MACsec VLAN addressed on both ends"
			fi
			while IFS=$'\t' read -r l ah am aa bh bm ba _; do
				[ -n "$l" ] && step "probe-$l" probe_link "$l" "$ah" "$am" "$aa" "$bh" "$bm" "$ba"
			done <<<"$LINKS"
		else
			skipped probe "the profile has no slo section"
		fi
		for x in "${HOSTS[@]}"; do
			step "audit-${x%% *}" collect "${x%% *}" "${x#* }"
		done
		"$FCTL" lab down >/dev/null 2>&1
		LAB_UP=0
	fi
else
	skipped apply-lab "--lab not given (needs root and qemu)"
	skipped probe "--lab not given: the probes measure the lab's links"
fi

# 4. evidence: one bundle per lab host, from its own (verified) log
if [ ${#SIGN[@]} -eq 0 ]; then
	skipped evidence "no --sign key"
elif [ $LAB = 0 ]; then
	skipped evidence "--lab not given: nothing was applied, no audit records for change $CHANGE"
elif [ ${#HOSTS[@]} -eq 0 ]; then
	failed evidence "no lab host wrote an audit log (the lab did not come up)"
else
	for x in "${HOSTS[@]}"; do
		n=${x%% *}
		if [ -s "$OUT/audit/$n/audit.log" ]; then
			step "evidence-$n" "$FCTL" evidence --log "$OUT/audit/$n/audit.log" \
				--pubkey "$OUT/audit/$n/audit.pub" --ledger "$OUT/audit/$n/sa-ledger" \
				--change "$CHANGE" --profile "$NEW" "${SIGN[@]}" --out "$OUT/evidence-$CHANGE-$n.tar"
		else
			failed "evidence-$n" "no audit log was collected from $n"
		fi
	done
fi

write_junit
echo "pipeline: ${#CASES[@]} steps, $FAILED failed; JUnit in $OUT/junit.xml"
[ $FAILED -eq 0 ]
