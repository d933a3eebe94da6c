#!/bin/bash
# SPDX-License-Identifier: MIT
# The agent's metrics against the real tools (docs/agent.md, "Metrics"): a real agent
# (tests/security/lib/agent.bash: a netns of its own, a Unix socket, mutual TLS and a
# metrics listener on 127.0.0.1), its /metrics fetched with curl and checked by
# `promtool check metrics` (silent, exit 0) and by families.py (every family one group
# with HELP and TYPE); a rotation record and a probe report read from the state dir;
# `fabricctl probe run` and `fabricctl rotate` writing --metrics-textfile files
# promtool accepts; the alert rules (promtool check rules, promtool test rules with a
# test for every rule); every PromQL expression of the Grafana dashboard parsed; and
# Debian's prometheus scraping the agent every second (tests/metrics/prom.bash),
# queried over its HTTP API. Usage: metrics.sh [BUILD_DIR]. Prints PASS/FAIL lines and
# "metrics: N passed, M failed"; needs root (netns), promtool, prometheus, curl, jq.
set -uo pipefail
NAME=metrics
[ -n "${1:-}" ] && export FCTL_BUILD_DIR=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../security/lib/agent.bash
source "$HERE/../security/lib/agent.bash"
# shellcheck source=prom.bash
source "$HERE/prom.bash"
for tool in promtool prometheus curl jq; do
	command -v "$tool" >/dev/null || die "no $tool (scripts/deps.sh installs it)"
done
# the agent's cleanup, and the Prometheus server's
eval "agent_cleanup() $(declare -f cleanup | tail -n +2)"
cleanup() { prom_stop; agent_cleanup; }

RULES=$ROOT/examples/prometheus/fabricctl.rules.yml
DASH=$ROOT/examples/grafana/fabricctl.json
MPORT=$(prom_free_port) || die "no free port"
M=http://127.0.0.1:$MPORT/metrics
mkdir -p "$T/textfile"

# the families every scrape has (MACsec ones without samples here: the namespace has no
# SecY; the lab adds them)
FAMILIES=(fabricctl_build_info fabricctl_agent_start_time_seconds fabricctl_agent_connections
	fabricctl_agent_requests_total fabricctl_agent_refused_total fabricctl_profile_applied
	fabricctl_drift fabricctl_drift_last_check_timestamp_seconds fabricctl_drift_checks_total
	fabricctl_drift_detected_total fabricctl_drift_repairs_total fabricctl_mka_restarts_total
	fabricctl_macsec_secy_up fabricctl_macsec_secy_encrypting fabricctl_macsec_encoding_sa
	fabricctl_macsec_secy_offload_info
	fabricctl_macsec_sa_active fabricctl_macsec_sa_next_pn fabricctl_macsec_sa_pn_usage_ratio
	fabricctl_macsec_out_pkts_encrypted_total fabricctl_macsec_out_bytes_encrypted_total
	fabricctl_macsec_in_bytes_decrypted_total fabricctl_macsec_in_pkts_not_valid_total
	fabricctl_macsec_in_pkts_no_sci_total
	fabricctl_rotation_key_version fabricctl_rotation_key_age_seconds
	fabricctl_rotation_last_completed_age_seconds fabricctl_rotation_due_in_seconds
	fabricctl_rotation_cryptoperiod_seconds fabricctl_rotation_in_progress
	fabricctl_rotations_total
	fabricctl_audit_log_open fabricctl_audit_records_total fabricctl_state_read_ok)
PROBE_FAMILIES=(fabricctl_probe_last_run_timestamp_seconds fabricctl_probe_pass
	fabricctl_probe_test_pass fabricctl_probe_latency_seconds
	fabricctl_probe_bandwidth_bytes_per_second fabricctl_probe_loss_packets
	fabricctl_probe_retransmissions)

# promtool_clean LABEL FILE: promtool check metrics says nothing and exits 0
promtool_clean() {
	local out rc
	out=$(promtool check metrics <"$2" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [ -z "$out" ]; then pass "$1-promtool-check-metrics"; else fail "$1-promtool-check-metrics" "exit $rc: $out"; fi
}
# sample FILE REGEX: the value of the first sample line matching REGEX
sample() { grep -E "$2" "$1" | head -1 | awk '{print $NF}'; }
expect() { # label, got, want
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got '$2', want '$3'"; fi
}

# --- 1. the agent's exposition ---------------------------------------------------
# a rotation record as the agent writes it (docs/rotation.md), for ms100
now=$(date +%s)
mkdir -p "$T/state/rotation"
printf 'an 1\nversion 3\nbusy 0\nswitched %s\ncompleted %s\ncompleted_version 3\ncompleted_total 2\nrolled_back_total 1\nfailed_total 0\n' \
	$((now - 100)) $((now - 50)) >"$T/state/rotation/ms100"
# shellcheck disable=SC2046
start_agent $(agent_args) --metrics "127.0.0.1:$MPORT"
curl -sf "$M" -o "$T/m1.txt" || fail fetch-metrics "curl $M failed"
promtool_clean agent "$T/m1.txt"
count < <("$PY" "$HERE/families.py" "$T/m1.txt" agent "${FAMILIES[@]}" 2>&1)
expect scrape-not-a-connection "$(sample "$T/m1.txt" '^fabricctl_agent_connections ')" 0
# no MKA port here: the agent restarted nothing (the lab restarts one: tests/lab/mka_agent.bash)
expect mka-restarts-none "$(sample "$T/m1.txt" '^fabricctl_mka_restarts_total\{result="ok"\} ')" 0
version=$("$F" --version 2>/dev/null | awk '{print $2}')
expect build-info-version "$(grep -c "^fabricctl_build_info{version=\"$version\"" "$T/m1.txt")" 1
expect requests-by-role-local-status \
	"$(sample "$T/m1.txt" '^fabricctl_agent_requests_total\{role="local",type="status",result="ok"\}')" 1
expect rotation-key-version "$(sample "$T/m1.txt" '^fabricctl_rotation_key_version\{.*ifname="ms100"')" 3
age=$(sample "$T/m1.txt" '^fabricctl_rotation_key_age_seconds\{.*ifname="ms100"')
if awk -v a="$age" 'BEGIN { exit !(a >= 99 && a < 200) }'; then pass rotation-key-age; else fail rotation-key-age "got '$age'"; fi
expect rotations-rolled-back \
	"$(sample "$T/m1.txt" '^fabricctl_rotations_total\{.*ifname="ms100",result="rolled_back"')" 1
expect rotations-completed \
	"$(sample "$T/m1.txt" '^fabricctl_rotations_total\{.*ifname="ms100",result="completed"')" 2
expect audit-log-open "$(sample "$T/m1.txt" '^fabricctl_audit_log_open ')" 1
if grep -q "periodic drift checks off" "$T/agent.err" && ! grep -q "drift every 0s" "$T/agent.err"; then
	pass log-says-drift-checks-off
else
	fail log-says-drift-checks-off "$(grep serving "$T/agent.err")"
fi
# a viewer's apply is refused: counted under its role
profile p 1 >"$T/p.yaml"
# shellcheck disable=SC2046
"$F" apply --target "127.0.0.1:$PORT" $(tls_opts viewer) "$T/p.yaml" >/dev/null 2>&1
curl -sf "$M" -o "$T/m2.txt"
expect requests-by-role-viewer-refused \
	"$(sample "$T/m2.txt" '^fabricctl_agent_requests_total\{role="viewer",type="apply",result="refused"\}')" 1

# --- 2. textfiles of runs outside the agent --------------------------------------
# a probe that cannot run (no peer, no RDMA here): exit 2, and still its files
"$F" probe run --peer 127.0.0.1:1 --connect-timeout 1 --audit-log "$T/audit/probe.log" \
	--state-dir "$T/state" --metrics-textfile "$T/textfile/probe.prom" >"$T/probe.out" 2>&1
rc=$?
expect probe-exit-2 "$rc" 2
if [ -s "$T/textfile/probe.prom" ]; then
	promtool_clean probe-textfile "$T/textfile/probe.prom"
	count < <("$PY" "$HERE/families.py" "$T/textfile/probe.prom" probe-textfile \
		"${PROBE_FAMILIES[@]}" fabricctl_probe_exit_code 2>&1)
	expect probe-textfile-exit-code "$(sample "$T/textfile/probe.prom" '^fabricctl_probe_exit_code')" 2
else
	fail probe-textfile-written "$(cat "$T/probe.out")"
fi
expect probe-no-temp-file "$(find "$T/textfile" "$T/state/probe" -name '*.tmp*' | wc -l)" 0
# keymgr: a rotation the agents cannot carry out (no SecY here): exits non-zero, writes
# its textfile all the same
# shellcheck disable=SC2046
"$F" rotate --all $(tls_opts key-custodian) --agent "h1=127.0.0.1:$PORT" \
	--agent "h2=127.0.0.1:$PORT" --state-dir "$T/keymgr" --audit-log "$T/audit/keymgr.log" \
	--timeout 3 --metrics-textfile "$T/textfile/keymgr.prom" "$ROOT/profiles/lab-pair.yaml" \
	>"$T/keymgr.out" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ -s "$T/textfile/keymgr.prom" ]; then
	pass keymgr-textfile-written
	promtool_clean keymgr-textfile "$T/textfile/keymgr.prom"
	count < <("$PY" "$HERE/families.py" "$T/textfile/keymgr.prom" keymgr-textfile \
		fabricctl_keymgr_last_run_timestamp_seconds fabricctl_keymgr_last_run_exit_code \
		fabricctl_keymgr_last_run_duration_seconds fabricctl_keymgr_last_run_links \
		fabricctl_keymgr_link_committed fabricctl_keymgr_link_key_version 2>&1)
	expect keymgr-textfile-exit-code \
		"$(sample "$T/textfile/keymgr.prom" '^fabricctl_keymgr_last_run_exit_code')" "$rc"
else
	fail keymgr-textfile-written "exit $rc: $(head -5 "$T/keymgr.out")"
fi
# the agent reads the probe's report
curl -sf "$M" -o "$T/m3.txt"
promtool_clean agent-with-probe "$T/m3.txt"
count < <("$PY" "$HERE/families.py" "$T/m3.txt" agent-with-probe "${FAMILIES[@]}" \
	"${PROBE_FAMILIES[@]}" 2>&1)
expect agent-probe-pass "$(sample "$T/m3.txt" '^fabricctl_probe_pass\{host="h1"')" 0
expect agent-probe-tests "$(grep -c '^fabricctl_probe_test_pass{host="h1"' "$T/m3.txt")" 2
# each link's last run (the fabric probe's runs keep STATE_DIR/probe/links/LINK@NETDEV):
# two links from the report above, plus what the agent must pass over: a name without
# '@', a file that is no probe report
mkdir -p "$T/state/probe/links"
sed 's/ netdev=[^ ]*//; s/ link=[^ ]*/ link=h1-h2 netdev=ms100/' "$T/state/probe/last" >"$T/state/probe/links/h1-h2@ms100"
sed 's/ netdev=[^ ]*//; s/ link=[^ ]*/ link=h1-h3 netdev=ms101/; s/ exit=[0-9]*/ exit=0/' "$T/state/probe/last" \
	>"$T/state/probe/links/h1-h3@ms101"
cp "$T/state/probe/last" "$T/state/probe/links/stray"
echo "not a report" >"$T/state/probe/links/h1-h4@ms102"
curl -sf "$M" -o "$T/m4.txt"
promtool_clean agent-with-link-probes "$T/m4.txt"
count < <("$PY" "$HERE/families.py" "$T/m4.txt" agent-with-link-probes "${FAMILIES[@]}" \
	"${PROBE_FAMILIES[@]}" "${PROBE_FAMILIES[@]/fabricctl_probe_/fabricctl_probe_link_}" 2>&1)
expect agent-link-probe-h1-h2 \
	"$(sample "$T/m4.txt" '^fabricctl_probe_link_pass\{host="h1",link="h1-h2",peer="[^"]*",netdev="ms100"\}')" 0
expect agent-link-probe-h1-h3 \
	"$(sample "$T/m4.txt" '^fabricctl_probe_link_pass\{host="h1",link="h1-h3",peer="[^"]*",netdev="ms101"\}')" 1
expect agent-link-probe-only-reports "$(grep -c '^fabricctl_probe_link_pass{' "$T/m4.txt")" 2
expect agent-link-probe-tests "$(grep -c '^fabricctl_probe_link_test_pass{host="h1",link="h1-h2"' "$T/m4.txt")" 2

# --- 3. alert rules and the dashboard ------------------------------------------------
if out=$(promtool check rules "$RULES" 2>&1); then pass rules-check; else fail rules-check "$out"; fi
if out=$(cd "$HERE" && promtool test rules fabricctl.rules.test.yml 2>&1); then
	pass rules-unit-tests
else
	fail rules-unit-tests "$out"
fi
untested=""
for a in $(grep -E '^ *- alert:' "$RULES" | awk '{print $3}'); do
	grep -qE "alertname: $a\$" "$HERE/fabricctl.rules.test.yml" || untested="$untested $a"
done
expect every-rule-has-a-test "${untested:-none}" none
# every PromQL expression of the dashboard, wrapped as a recording rule
jq -r '[.. | objects | select(has("expr")) | .expr] | .[]' "$DASH" >"$T/exprs.txt" ||
	fail dashboard-json "not JSON"
n=$(wc -l <"$T/exprs.txt")
{
	echo "groups:"
	echo "  - name: dashboard"
	echo "    rules:"
	i=0
	while IFS= read -r e; do
		i=$((i + 1))
		printf '      - record: fabricctl:dashboard_%d\n        expr: %s\n' "$i" "$(jq -Rn --arg e "$e" '$e')"
	done <"$T/exprs.txt"
} >"$T/dashboard.rules.yml"
if [ "$n" -gt 0 ] && out=$(promtool check rules "$T/dashboard.rules.yml" 2>&1); then
	pass "dashboard-exprs-parse ($n)"
else
	fail dashboard-exprs-parse "$out"
fi

# --- 4. a real Prometheus scraping the agent -------------------------------------
if prom_start "$T/prom" "$RULES" "127.0.0.1:$MPORT"; then
	pass prometheus-started
	if prom_wait 'fabricctl_build_info{job="fabricctl-agent"}' 30; then pass prom-build-info; else fail prom-build-info "$(prom_query 'up')"; fi
	expect prom-target-up "$(prom_value 'up{job="fabricctl-agent"}')" 1
	if prom_wait 'fabricctl_agent_requests_total{role="local",type="status",result="ok"} >= 1' 10; then
		pass prom-agent-requests
	else
		fail prom-agent-requests "$(prom_query 'fabricctl_agent_requests_total{role="local"}' | head -c 300)"
	fi
	if prom_wait 'fabricctl_rotation_key_version{ifname="ms100"} == 3' 10; then
		pass prom-rotation-series
	else
		fail prom-rotation-series
	fi
	if prom_wait 'fabricctl_probe_pass == 0' 10; then pass prom-probe-series; else fail prom-probe-series; fi
	bad=""
	while IFS= read -r e; do
		prom_ok "${e//\$host/.*}" || bad="$bad [$e]"
	done <"$T/exprs.txt"
	expect prom-dashboard-queries "${bad:-none}" none
	# the rules loaded and evaluated without error
	sleep 2
	rules=$(curl -sf "$PROM_URL/api/v1/rules")
	expect prom-rules-loaded "$(jq '[.data.groups[].rules[]] | length' <<<"$rules")" \
		"$(grep -cE '^ *- alert:' "$RULES")"
	expect prom-rules-healthy "$(jq -r '[.data.groups[].rules[] | select(.health != "ok") | .name] | join(" ")' <<<"$rules")" ""
	expect prom-probe-alert "$(prom_value 'count(ALERTS{alertname="FabricctlProbeFailing"})')" 1
else
	fail prometheus-started "$(tail -5 "$T/prom/prometheus.log" 2>/dev/null)"
fi
prom_stop
if [ -z "$(pgrep -f "storage.tsdb.path=$T/prom/data")" ]; then pass prometheus-stopped; else fail prometheus-stopped; fi

agent_healthy metrics
