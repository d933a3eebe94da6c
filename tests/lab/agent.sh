#!/bin/bash
# The agent and fabric-wide operations against real kernels: three lab VMs in a
# triangle, `fabricctl agent` in each (mutual TLS over addresses on the lab wires),
# the CLI in h1.
#
#  1. agents answer over mutual TLS; fabric apply of a 3-host profile (two phases)
#  2. fabric apply of v2, fabric rollback --to 1
#  3. one host failing during a fabric apply: the hosts already changed are rolled
#     back to the version they had
#  4. a link changed with `ip` behind the agent's back is reported as drift within
#     DRIFT_LIMIT seconds (link event + debounce), and the apply repairs it (a SecY
#     deleted by hand would take its SAs' packet numbers with it: the apply then
#     withholds the key, as tests/lab/nonce.sh checks)
#  5. refused: no certificate, expired, foreign CA, no role; a viewer applying
#  6. malformed and oversized frames are refused and the agent keeps serving
#  7. the agent's apply worker killed mid-apply and the agent killed with -9; the
#     restarted agent recovers from the journal: state and history consistent
#
# Prints PASS/FAIL per check and "agent: N passed, M failed"; exits non-zero on any
# failure, including a lab that cannot start (never skips).
set -uo pipefail

SUITE=agent
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-agent
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
DRIFT_LIMIT=${DRIFT_LIMIT:-10}

[ -x "$F" ] || { fail "build" "$F is missing: build first"; exit 1; }

# --- material, in a directory the guests see (read-only) ----------------------
WORK=$BUILD/lab-agent-work
rm -rf "$WORK"
mkdir -p "$WORK/keys"
"$ROOT/scripts/pki.sh" "$WORK/pki" h1=10.9.12.1,10.9.13.1 h2=10.9.12.2 h3=10.9.13.3 >/dev/null ||
	{ fail "pki"; exit 1; }
chmod 644 "$WORK"/pki/*.key # guests read them as root over 9p; this tree is a test tree
( umask 077; openssl rand -hex 16 >"$WORK/keys/tri.key" )
ID=$WORK/pki
OP=(--cert "$ID/client-operator.crt" --key "$ID/client-operator.key" --ca "$ID/ca.crt")
VIEW=(--cert "$ID/client-viewer.crt" --key "$ID/client-viewer.key" --ca "$ID/ca.crt")

profile() { # version window
	cat <<EOP
schema: 1
profile: { name: lab-agent-triangle, version: $1 }
macsec:
  edge:
    cipher: gcm-aes-128
    icv_len: 16
    encrypt: true
    replay_protect: true
    replay_window: $2
    validate: strict
    send_sci: true
    port: 1
    key: { backend: file, id: keys/tri.key }
hosts:
  - name: h1
    agent: 10.9.12.1:7443
    ports:
      - { name: eth0, mac: "52:54:00:fa:01:00" }
      - { name: eth1, mac: "52:54:00:fa:01:01" }
  - name: h2
    agent: 10.9.12.2:7443
    ports:
      - { name: eth0, mac: "52:54:00:fa:02:00" }
      - { name: eth1, mac: "52:54:00:fa:02:01" }
  - name: h3
    agent: 10.9.13.3:7443
    ports:
      - { name: eth0, mac: "52:54:00:fa:03:00" }
      - { name: eth1, mac: "52:54:00:fa:03:01" }
links:
  - { name: h1-h2, a: "h1:eth0", b: "h2:eth0", macsec: edge,
      vlans: [ { id: 101, mtu: 1400, addresses: { h1: 10.101.0.1/24, h2: 10.101.0.2/24 } } ] }
  - { name: h2-h3, a: "h2:eth1", b: "h3:eth0", macsec: edge,
      vlans: [ { id: 102, mtu: 1400, addresses: { h2: 10.102.0.2/24, h3: 10.102.0.3/24 } } ] }
  - { name: h3-h1, a: "h3:eth1", b: "h1:eth1", macsec: edge,
      vlans: [ { id: 103, mtu: 1400, addresses: { h3: 10.103.0.3/24, h1: 10.103.0.1/24 } } ] }
EOP
}
profile 1 0 >"$WORK/v1.yaml"
profile 2 64 >"$WORK/v2.yaml"
"$F" validate -q "$WORK/v1.yaml" || { fail "profile" "v1 does not validate"; exit 1; }

# --- lab, control addresses, agents --------------------------------------------
if ! "$LAB" up --hosts 3; then
	fail "lab-up" "the lab did not start"
	exit 1
fi
pass "lab-up"
on h1 sh -c 'ip addr add 10.9.12.1/24 dev eth0 && ip addr add 10.9.13.1/24 dev eth1 && ip link set eth0 up && ip link set eth1 up'
on h2 sh -c 'ip addr add 10.9.12.2/24 dev eth0 && ip link set eth0 up && ip link set eth1 up'
on h3 sh -c 'ip addr add 10.9.13.3/24 dev eth1 && ip link set eth0 up && ip link set eth1 up'

declare -A JOB
start_agent() { # host [env K=V]...
	local h=$1
	shift
	on "$h" sh -c "mkdir -p /var/lib/fabricctl/agent/keys && cp '$WORK/keys/tri.key' /var/lib/fabricctl/agent/keys/ && chmod 600 /var/lib/fabricctl/agent/keys/tri.key"
	JOB[$h]=$("$LAB" exec-bg "$@" "$h" -- "$F" agent --host "$h" --listen 0.0.0.0:7443 \
		--cert "$ID/server-$h.crt" --key "$ID/server-$h.key" --ca "$ID/ca.crt" \
		--metrics 0.0.0.0:9443 --drift-interval 30s)
}
endpoint() { case $1 in h1) echo 10.9.12.1:7443 ;; h2) echo 10.9.12.2:7443 ;; h3) echo 10.9.13.3:7443 ;; esac; }
status_json() { on h1 "$F" status --json --target "$(endpoint "$1")" "${OP[@]}"; }
wait_agent() { # host: up to 30 s
	for _ in $(seq 30); do
		status_json "$1" >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}
version_of() { status_json "$1" 2>/dev/null | jq -r .applied_version; }
# all_at V: every host's agent says version V is applied; else WHY names each that does not,
# with what its status said (its error, or the JSON)
all_at() {
	local h s
	WHY=
	for h in h1 h2 h3; do
		s=$(status_json "$h" 2>&1)
		[ "$(jq -r .applied_version <<<"$s" 2>/dev/null)" = "$1" ] || WHY+="$h: $(head -c 300 <<<"$s" | tr '\n' ' ') "
	done
	[ -z "$WHY" ]
}
for h in h1 h2 h3; do start_agent "$h"; done
for h in h1 h2 h3; do
	wait_agent "$h" && pass "1-agent-$h-answers-mtls" || fail "1-agent-$h-answers-mtls"
done

# --- 1. fabric apply ------------------------------------------------------------
t0=$(date +%s.%N)
out=$(on h1 "$F" apply --fabric --json "${OP[@]}" "$WORK/v1.yaml")
rc=$?
t1=$(date +%s.%N)
[ $rc = 0 ] && [ "$(jq -r .result <<<"$out")" = applied ] &&
	[ "$(jq '[.hosts[] | select(.exit == 0 and .output.result == "applied")] | length' <<<"$out")" = 3 ] &&
	pass "1-fabric-apply-v1" || fail "1-fabric-apply-v1" "exit $rc: $(head -c 400 <<<"$out")"
echo "   fabric apply of 3 hosts: $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s (including lab exec overhead)"
all_at 1 && pass "1-every-host-at-v1" || fail "1-every-host-at-v1" "$WHY"
on h1 ping -c 2 -W 3 10.101.0.2 >/dev/null && pass "1-traffic-over-macsec-h1-h2" || fail "1-traffic-over-macsec-h1-h2"

# --- 2. v2, rollback --------------------------------------------------------------
out=$(on h1 "$F" apply --fabric --json "${OP[@]}" "$WORK/v2.yaml")
[ "$(jq -r .result <<<"$out")" = applied ] && pass "2-fabric-apply-v2" || fail "2-fabric-apply-v2" "$(head -c 300 <<<"$out")"
[ "$(on h2 ip -j macsec show ms101 | jq '.[0].window // .[0].replay_window // empty' 2>/dev/null)" != "" ] || true
out=$(on h1 "$F" rollback --to 1 --fabric --json --profile "$WORK/v1.yaml" "${OP[@]}")
rc=$?
WHY=
[ $rc = 0 ] && all_at 1 && pass "2-fabric-rollback-to-1" || fail "2-fabric-rollback-to-1" "exit $rc $WHY"

# --- 3. a host failing during apply: the others are rolled back --------------------
"$LAB" kill h3 "${JOB[h3]}" >/dev/null 2>&1
sleep 1
start_agent h3 --env FCTL_TEST_FAIL_AT_OP=1
wait_agent h3 || fail "3-h3-agent-restart"
out=$(on h1 "$F" apply --fabric --json "${OP[@]}" "$WORK/v2.yaml")
rc=$?
[ $rc = 3 ] && [ "$(jq -r .result <<<"$out")" = rolled-back ] && pass "3-fabric-apply-fails-rolled-back" ||
	fail "3-fabric-apply-fails-rolled-back" "exit $rc, $(jq -c '[.result, [.hosts[] | {host, exit, phase}]]' <<<"$out" 2>/dev/null)"
all_at 1 && pass "3-every-host-back-at-v1" || fail "3-every-host-back-at-v1" "$WHY"
for h in h1 h2 h3; do
	on "$h" "$F" diff --host "$h" "$WORK/v1.yaml" >/dev/null 2>&1 && pass "3-$h-live-equals-v1" || fail "3-$h-live-equals-v1"
done
"$LAB" kill h3 "${JOB[h3]}" >/dev/null 2>&1
sleep 1
start_agent h3
wait_agent h3 || fail "3-h3-agent-restart-clean"

# --- 4. drift behind the agent's back ------------------------------------------------
on h2 ip link set ms101 mtu 1300
t0=$(date +%s)
seen=""
for _ in $(seq "$DRIFT_LIMIT"); do
	[ "$(status_json h2 | jq -r .drift)" = true ] && { seen=$(($(date +%s) - t0)); break; }
	sleep 1
done
[ -n "$seen" ] && pass "4-drift-reported-within-${DRIFT_LIMIT}s (${seen}s)" || fail "4-drift-reported-within-${DRIFT_LIMIT}s"
m=$(on h2 curl -s http://127.0.0.1:9443/metrics)
grep -q '^fabricctl_drift 1' <<<"$m" && pass "4-drift-metric" || fail "4-drift-metric"
grep -q '^fabricctl_macsec_out_pkts_encrypted_total{[^}]*ifname="ms102"}' <<<"$m" &&
	grep -q '^fabricctl_macsec_sa_pn_usage_ratio{[^}]*ifname="ms102",dir="tx"' <<<"$m" &&
	pass "4-macsec-metrics" || fail "4-macsec-metrics"
on h1 "$F" apply --target h2 --inventory /dev/null "${OP[@]}" -q "$WORK/v1.yaml" >/dev/null 2>&1
on h1 "$F" apply --fabric -q "${OP[@]}" "$WORK/v1.yaml" >/dev/null 2>&1
sleep 2
[ "$(status_json h2 | jq -r .drift)" = false ] && pass "4-drift-cleared-after-apply" || fail "4-drift-cleared-after-apply"

# --- 5. refused credentials ---------------------------------------------------------
for c in expired foreign norole; do
	if on h1 "$F" status --target 10.9.12.2:7443 --cert "$ID/client-$c.crt" --key "$ID/client-$c.key" --ca "$ID/ca.crt" >/dev/null 2>&1; then
		fail "5-refused-$c-cert"
	else
		pass "5-refused-$c-cert"
	fi
done
# no client certificate at all (openssl s_client offers none)
on h1 sh -c "printf 'FCTL' | timeout 10 openssl s_client -quiet -connect 10.9.12.2:7443 -CAfile '$ID/ca.crt' 2>&1" >/dev/null 2>&1
m=$(on h2 curl -s http://127.0.0.1:9443/metrics)
n=$(grep '^fabricctl_agent_refused_total{reason="tls_handshake"}' <<<"$m" | awk '{print $2}')
[ "${n:-0}" -ge 3 ] && pass "5-refused-no-cert (tls_handshake refusals: $n)" || fail "5-refused-no-cert" "counter ${n:-none}"
out=$(on h1 "$F" apply --target h2 --profile "$WORK/v2.yaml" "${VIEW[@]}" 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "permission denied" <<<"$out" && pass "5-viewer-apply-refused" || fail "5-viewer-apply-refused" "exit $rc: $out"
[ "$(version_of h2)" = 1 ] && pass "5-viewer-changed-nothing" || fail "5-viewer-changed-nothing"
on h1 "$F" plan --target h2 "${VIEW[@]}" "$WORK/v2.yaml" >/dev/null && pass "5-viewer-may-plan" || fail "5-viewer-may-plan"

# --- 6. malformed and oversized frames ------------------------------------------------
cat >"$WORK/garbage.py" <<'EOPY'
import socket, ssl, struct, sys
d = sys.argv[1]
ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=d + "/ca.crt")
ctx.check_hostname = False
ctx.load_cert_chain(d + "/client-operator.crt", d + "/client-operator.key")
def send(b):
    s = ctx.wrap_socket(socket.create_connection((sys.argv[2], 7443), timeout=10))
    s.sendall(b)
    try:
        r = s.recv(65536)
    except Exception:
        r = b""
    s.close()
    return r
cases = {
    "garbage": b"\x00\xffhello, this is not a frame" * 4,
    "bad-version": b"FCTL\x07\x02\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00",
    "unknown-critical": b"FCTL\x01\x02\x00\x00\x00\x00\x00\x01\x00\x00\x00\x07" + b"\x81\x23\x00\x00\x00\x01x",
    "oversized": b"FCTL\x01\x04\x00\x00\x00\x00\x00\x01" + struct.pack(">I", 0x7fffffff),
    "truncated-tlv": b"FCTL\x01\x02\x00\x00\x00\x00\x00\x01\x00\x00\x00\x02\x80\x03",
}
for name, b in cases.items():
    r = send(b)
    ok = r[:4] == b"FCTL" and r[5] == 0x80 or r == b""
    print(name, "answered-error" if r[:4] == b"FCTL" else "closed", "ok" if ok else "BAD")
EOPY
out=$(on h1 /usr/bin/python3 "$WORK/garbage.py" "$ID" 10.9.12.2 2>&1)
echo "$out" | sed 's/^/   /'
[ "$(grep -c ' ok$' <<<"$out")" = 5 ] && pass "6-malformed-oversized-refused" || fail "6-malformed-oversized-refused"
status_json h2 >/dev/null && pass "6-agent-still-serving" || fail "6-agent-still-serving"
m=$(on h2 curl -s http://127.0.0.1:9443/metrics)
grep -q '^fabricctl_agent_refused_total{reason="oversized"} [1-9]' <<<"$m" &&
	grep -q '^fabricctl_agent_refused_total{reason="malformed"} [1-9]' <<<"$m" &&
	pass "6-refusals-counted" || fail "6-refusals-counted"

# --- 7. kill -9 mid-apply, restart, recover --------------------------------------------
"$LAB" kill h2 "${JOB[h2]}" >/dev/null 2>&1
sleep 1
start_agent h2 --env FCTL_TEST_CRASH_AFTER_OP=0
wait_agent h2 || fail "7-h2-agent-restart"
out=$(on h1 "$F" apply --target h2 "${OP[@]}" "$WORK/v2.yaml" 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "killed by signal 9" <<<"$out" && pass "7-worker-killed-mid-apply" || fail "7-worker-killed-mid-apply" "exit $rc: $out"
on h2 sh -c 'kill -9 $(pidof fabricctl)'
sleep 1
on h2 sh -c 'test -f /var/lib/fabricctl/journal' && pass "7-journal-left-behind" || fail "7-journal-left-behind"
start_agent h2
wait_agent h2 && pass "7-agent-restarted" || fail "7-agent-restarted"
on h2 sh -c 'test ! -f /var/lib/fabricctl/journal' && pass "7-recovered-at-start" || fail "7-recovered-at-start"
[ "$(version_of h2)" = 1 ] && pass "7-history-consistent-v1" || fail "7-history-consistent-v1"
on h2 "$F" diff --host h2 "$WORK/v1.yaml" >/dev/null 2>&1 && pass "7-live-equals-v1" || fail "7-live-equals-v1"
out=$(on h1 "$F" apply --fabric --json "${OP[@]}" "$WORK/v2.yaml")
[ "$(jq -r .result <<<"$out")" = applied ] && pass "7-converges-to-v2" || fail "7-converges-to-v2"

# --- SIGTERM: clean shutdown ---------------------------------------------------------
"$LAB" kill h3 "${JOB[h3]}" >/dev/null 2>&1
sleep 2
on h3 sh -c 'test ! -e /run/fabricctl/agent.sock && ! pidof fabricctl' && pass "sigterm-clean-shutdown" || fail "sigterm-clean-shutdown"
