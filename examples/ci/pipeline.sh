#!/bin/bash
# SPDX-License-Identifier: MIT
# The CI pipeline for profile changes, as fabricctl commands (docs/audit.md, "CI"):
#   prepare -> validate -> plan --offline against the previous version
#   -> (--lab) lab up from the profile, apply on every lab host, and when the profile
#      has an slo section: an agent on every host and one fabric probe of every link
#      through them (fabricctl probe --fabric), then each audit log collected
#   -> (--sign) one signed evidence bundle per lab host, and one for the probe's log
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
#   --probe-args A    options for 'probe --fabric' (default: $FCTL_CI_PROBE_ARGS or
#                     "--test send_lat,write_bw --iters 200 --qp-timeout 20 --timeout 300s
#                     --deadline 900s")
# Environment: FABRICCTL (the fabricctl binary; default: fabricctl on PATH), FCTL_LAB_DIR
# (the lab's directory, as for 'fabricctl lab').
#
# Key files: the profile is copied into OUT/work with throwaway LAB-ONLY keys for its
# file-backend key references (fabricctl lab keys); validate and plan read that copy, the
# lab applies it. The keys are deleted when the pipeline ends. Real keys never enter CI.
# The agents of the fabric probe use a throwaway CA made in OUT/work/pki, deleted as well:
# each guest's agent listens on its management NIC, which the lab forwards from this
# machine's 127.0.0.1 (fabricctl lab up --mgmt-port, docs/lab.md); the probe runs here
# with an operator certificate and writes its verdicts into its own audit log.
set -uo pipefail

FCTL=${FABRICCTL:-fabricctl}
PROFILE='' FROM='' BASE=HEAD~1 OUT=ci-out LAB=0 CHANGE=${CI_COMMIT_SHORT_SHA:-${GITHUB_SHA:-local}}
PROBE_ARGS=${FCTL_CI_PROBE_ARGS:---test send_lat,write_bw --iters 200 --qp-timeout 20 --timeout 300s --deadline 900s}
AGENT_PORT=7443 # the agents' port in the guests, forwarded from 127.0.0.1 by the lab
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
	stop_agents
	rm -rf "$WORK/keys" "$WORK/.keys" "$WORK/pki" "$WORK/probe-audit/audit.key"
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
mgmt_of() { local x; for x in "${MGMT[@]}"; do [ "${x%% *}" = "$1" ] && echo "${x#* }"; done; }
MGMT=() # "name 127.0.0.1:PORT" of each lab host: its agent, forwarded by the lab
OPC=(--cert "$WORK/pki/operator.crt" --key "$WORK/pki/operator.key" --ca "$WORK/pki/ca.crt")
# the probe's sessions with throwaway agents are not kept in the user's cache
export FCTL_TLS_CACHE=off

# A throwaway CA for the lab's agents: a server certificate per host naming the address
# the probe dials (127.0.0.1, the lab's forward; each agent still refuses a request for
# a host it is not), an operator client certificate for the probe. EC P-256, 1 day.
lab_pki() { # host names...
	local d=$WORK/pki h
	mkdir -p "$d" && chmod 700 "$d" || return 1
	cert() { # name subject extensions (signed by the CA)
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/$1.key" 2>/dev/null &&
			openssl req -new -key "$d/$1.key" -subj "$2" -out "$d/$1.csr" 2>/dev/null &&
			printf '%s\n' "$3" >"$d/$1.ext" &&
			openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
				-days 1 -extfile "$d/$1.ext" -out "$d/$1.crt" 2>/dev/null && rm -f "$d/$1.csr" "$d/$1.ext"
	}
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/ca.key" 2>/dev/null &&
		openssl req -x509 -new -key "$d/ca.key" -days 1 -subj "/O=fabricctl CI lab/CN=lab CA" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
			-out "$d/ca.crt" 2>/dev/null || return 1
	for h in "$@"; do
		cert "server-$h" "/O=fabricctl CI lab/CN=$h" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:$h,IP:127.0.0.1" || return 1
	done
	cert operator "/O=fabricctl CI lab/OU=operator/CN=ci-pipeline" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
subjectAltName=URI:fabricctl:role:operator" || return 1
	# the guests' agents read their keys as root over the lab's 9p share
	chmod 644 "$d"/*.crt "$d"/server-*.key
	echo "a throwaway CA in $d: $# server certificates, one operator certificate"
}

AGENT_JOBS=() # "host job" of each agent started
stop_agents() {
	local x
	for x in "${AGENT_JOBS[@]}"; do
		"$FCTL" lab kill "${x%% *}" "${x#* }" >/dev/null 2>&1
		"$FCTL" lab wait --timeout 30 "${x%% *}" "${x#* }" >/dev/null 2>&1
	done
	AGENT_JOBS=()
}

# soft-RoCE on each link end's MACsec device (RoCE v2 over MACsec over the VLAN: the
# protected traffic), an agent on every host on its management NIC, the inventory of
# their forwards; waits until every agent answers (status --fabric)
start_agents() {
	local l ah am bh bm x n s ep job i
	lab_pki "${HOSTS[@]%% *}" || { echo "cannot make the lab CA"; return 2; }
	while IFS=$'\t' read -r l ah am _ bh bm _ _; do
		[ -n "$l" ] || continue
		for x in "$ah $am" "$bh $bm"; do
			set -- $x
			lab_exec "$1" -- sh -c "rdma link show rxe_$2 >/dev/null 2>&1 || rdma link add rxe_$2 type rxe netdev $2" ||
				{ echo "cannot add rxe_$2 on $1"; return 2; }
		done
	done <<<"$LINKS"
	: >"$WORK/inventory"
	for x in "${HOSTS[@]}"; do
		n=${x%% *} s=${x#* }
		ep=$(mgmt_of "$n")
		[ -n "$ep" ] || { echo "$n has no management forward (lab up --mgmt-port)"; return 2; }
		echo "$n $ep" >>"$WORK/inventory"
		# the agent audits into the host's log, after the apply's records
		job=$("$FCTL" lab exec-bg --timeout 1800 "$n" -- "$FCTL" agent --host "$n" \
			--listen "0.0.0.0:$AGENT_PORT" --cert "$WORK/pki/server-$n.crt" \
			--key "$WORK/pki/server-$n.key" --ca "$WORK/pki/ca.crt" --audit-log "$s/audit.log") ||
			{ echo "cannot start the agent on $n"; return 2; }
		AGENT_JOBS+=("$n $job")
		echo "agent on $n (lab job $job): $ep on this machine -> $n mgmt0:$AGENT_PORT"
	done
	for i in $(seq 120); do
		"$FCTL" status --fabric --inventory "$WORK/inventory" "${OPC[@]}" --quiet >/dev/null 2>&1 &&
			{ echo "every agent answers over mutual TLS (after ${i}s)"; return 0; }
		sleep 1
	done
	"$FCTL" status --fabric --inventory "$WORK/inventory" "${OPC[@]}"
	echo "the agents do not all answer after 120 s"
	return 2
}

# every protected link at once, through the agents: verdicts into the probe's own log
probe_fabric() {
	local args rc
	read -ra args <<<"$PROBE_ARGS"
	mkdir -p "$WORK/probe-audit" || return 2
	"$FCTL" probe --fabric "$NEW" --inventory "$WORK/inventory" "${OPC[@]}" "${args[@]}" \
		--audit-log "$WORK/probe-audit/audit.log" --change "$CHANGE" \
		--junit "$OUT/probe-fabric.junit.xml" --json >"$OUT/probe-fabric.json"
	rc=$?
	jq -r '.links[] | . as $l | (.tests[]? | "  \($l.link) VLAN \($l.vlan) \(.test) \(.size_bytes) B: p99 \(.latency_p99_us // "-") us, \(.bandwidth_gbps // "-") Gb/s, loss \(.loss_packets.a + .loss_packets.b), retrans \(.retransmissions.a + .retransmissions.b), MACsec-encrypted +\(.macsec_encrypted_delta.a)/+\(.macsec_encrypted_delta.b): \(if .pass then "pass" else "FAIL" end)"),
		"  \($l.link): \($l.verdict)\(if ($l.reasons | length) > 0 then ": \($l.reasons | join("; "))" else "" end)"' \
		"$OUT/probe-fabric.json" 2>/dev/null
	echo "probe --fabric exit $rc (0 every link passed, 1 an SLO failed, 2 a link could not be probed)"
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
	if step lab-up "$FCTL" lab up --profile "$NEW" --lifetime 1800 --mgmt-port "$AGENT_PORT"; then
		LAB_UP=1
		while read -r n s m; do HOSTS+=("$n $s") MGMT+=("$n $m"); done < <("$FCTL" lab status --json 2>/dev/null |
			jq -r '.hosts[] | "\(.name // .host) \(.share) \(.mgmt // "")"' 2>/dev/null)
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
			if [ -n "$LINKS" ] && step agents start_agents; then
				step probe-fabric probe_fabric
			elif [ -n "$LINKS" ]; then
				failed probe-fabric "the agents did not start (step agents)"
			fi
			stop_agents
			# the probe's log is collected and bundled as a host's is
			[ -s "$WORK/probe-audit/audit.log" ] && HOSTS+=("fabric-probe $WORK/probe-audit")
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

# 4. evidence: one bundle per lab host, and one for the fabric probe, each from its own
# (verified) log
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
			# the probe's log has no packet-number ledger (it wrote no SA)
			ledger=()
			[ -f "$OUT/audit/$n/sa-ledger" ] && ledger=(--ledger "$OUT/audit/$n/sa-ledger")
			step "evidence-$n" "$FCTL" evidence --log "$OUT/audit/$n/audit.log" \
				--pubkey "$OUT/audit/$n/audit.pub" "${ledger[@]}" \
				--change "$CHANGE" --profile "$NEW" "${SIGN[@]}" --out "$OUT/evidence-$CHANGE-$n.tar"
		else
			failed "evidence-$n" "no audit log was collected from $n"
		fi
	done
fi

write_junit
echo "pipeline: ${#CASES[@]} steps, $FAILED failed; JUnit in $OUT/junit.xml"
[ $FAILED -eq 0 ]
