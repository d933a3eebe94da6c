#!/bin/bash
# Agent figures on 3 lab VMs (triangle, agents as in tests/lab/agent.sh):
#   - control round trip: hello request/response on one open mTLS connection,
#     median of N (python3 client in h1 -> agent in h2); and the whole CLI call
#     (`fabricctl status --target`: process start, TLS handshake, request), median of 10
#   - fabric apply fan-out on 3 hosts from h1: first apply, and a no-op re-apply
#   - agent idle CPU over 30 s (utime+stime from /proc/PID/stat) and RSS (VmRSS)
# usage: bench/agent_bench.sh [N]   (default 200). FCTL_BUILD_DIR as tests/lab/agent.sh.
set -uo pipefail
N=${1:-200}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
LAB=$ROOT/scripts/lab.sh
export FCTL_LAB_DIR=/var/tmp/fabricctl-lab-agent-bench
trap '"$LAB" down >/dev/null 2>&1' EXIT
on() { local h=$1; shift; "$LAB" exec --timeout 300 "$h" -- "$@"; }

WORK=$BUILD/lab-agent-bench
rm -rf "$WORK"
mkdir -p "$WORK"
"$ROOT/scripts/pki.sh" "$WORK/pki" h1=10.9.12.1,10.9.13.1 h2=10.9.12.2 h3=10.9.13.3 >/dev/null
chmod 644 "$WORK"/pki/*.key
ID=$WORK/pki
OP=(--cert "$ID/client-operator.crt" --key "$ID/client-operator.key" --ca "$ID/ca.crt")
# the lab test's profile generator, reused
sed -n '/^profile() {/,/^}/p' "$ROOT/tests/lab/agent.sh" >"$WORK/gen.sh"
# shellcheck disable=SC1091
. "$WORK/gen.sh"
mkdir -p "$WORK/keys" && (umask 077; openssl rand -hex 16 >"$WORK/keys/tri.key")
profile 1 0 >"$WORK/v1.yaml"

"$LAB" up --hosts 3 >/dev/null || { echo "lab did not start"; exit 1; }
on h1 sh -c 'ip addr add 10.9.12.1/24 dev eth0 && ip addr add 10.9.13.1/24 dev eth1 && ip link set eth0 up && ip link set eth1 up'
on h2 sh -c 'ip addr add 10.9.12.2/24 dev eth0 && ip link set eth0 up && ip link set eth1 up'
on h3 sh -c 'ip addr add 10.9.13.3/24 dev eth1 && ip link set eth0 up && ip link set eth1 up'
for h in h1 h2 h3; do
	on "$h" sh -c "mkdir -p /var/lib/fabricctl/agent/keys && cp '$WORK/keys/tri.key' /var/lib/fabricctl/agent/keys/"
	"$LAB" exec-bg "$h" -- "$F" agent --host "$h" --listen 0.0.0.0:7443 --cert "$ID/server-$h.crt" \
		--key "$ID/server-$h.key" --ca "$ID/ca.crt" --drift-interval 60s >/dev/null
done
for _ in $(seq 30); do on h1 "$F" status --target 10.9.12.2:7443 "${OP[@]}" >/dev/null 2>&1 && break; sleep 1; done

cat >"$WORK/rtt.py" <<'EOPY'
import socket, ssl, statistics, sys, time
d, host, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=d + "/ca.crt")
ctx.check_hostname = False
ctx.load_cert_chain(d + "/client-operator.crt", d + "/client-operator.key")
s = ctx.wrap_socket(socket.create_connection((host, 7443), timeout=10))
hello = b"FCTL\x01\x01\x00\x00\x00\x00\x00\x01\x00\x00\x00\x10" + b"\x80\x01\x00\x00\x00\x02\x00\x01" + b"\x80\x02\x00\x00\x00\x02\x00\x01"
def recv_frame():
    h = b""
    while len(h) < 16:
        c = s.recv(16 - len(h))
        if not c:
            raise SystemExit("agent closed the connection (frame refused?)")
        h += c
    n = int.from_bytes(h[12:16], "big")
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise SystemExit("agent closed the connection mid-frame")
        b += c
t = []
for i in range(n):
    t0 = time.perf_counter()
    s.sendall(hello)
    recv_frame()
    t.append((time.perf_counter() - t0) * 1e6)
print("%.0f %.0f %.0f" % (statistics.median(t), min(t), sorted(t)[int(len(t) * 0.99) - 1]))
EOPY
read -r med mn p99 < <(on h1 /usr/bin/python3 "$WORK/rtt.py" "$ID" 10.9.12.2 "$N")
echo "control round trip (hello on one mTLS connection, h1 -> h2, N=$N): median ${med} us, min ${mn} us, p99 ${p99} us"
cli=$(on h1 sh -c "for i in \$(seq 10); do a=\$(date +%s%N); '$F' status --target 10.9.12.2:7443 --cert '$ID/client-operator.crt' --key '$ID/client-operator.key' --ca '$ID/ca.crt' >/dev/null; b=\$(date +%s%N); echo \$(( (b - a) / 1000 )); done" | sort -n | sed -n 5p)
echo "fabricctl status --target (process + TLS handshake + request), median of 10: ${cli} us"

t=$(on h1 sh -c "a=\$(date +%s%N); '$F' apply --fabric -q --cert '$ID/client-operator.crt' --key '$ID/client-operator.key' --ca '$ID/ca.crt' '$WORK/v1.yaml' >/dev/null 2>&1; echo \$?:\$(( (\$(date +%s%N) - a) / 1000000 ))")
echo "fabric apply fan-out, 3 hosts, first apply (status + plan + apply phases): ${t#*:} ms (exit ${t%%:*})"
t=$(on h1 sh -c "a=\$(date +%s%N); '$F' apply --fabric -q --cert '$ID/client-operator.crt' --key '$ID/client-operator.key' --ca '$ID/ca.crt' '$WORK/v1.yaml' >/dev/null 2>&1; echo \$?:\$(( (\$(date +%s%N) - a) / 1000000 ))")
echo "fabric apply fan-out, 3 hosts, no-op re-apply: ${t#*:} ms (exit ${t%%:*})"

idle=$(on h2 sh -c 'p=$(pidof fabricctl); hz=$(getconf CLK_TCK); a=$(awk "{print \$14+\$15}" /proc/$p/stat); sleep 30; b=$(awk "{print \$14+\$15}" /proc/$p/stat); rss=$(awk "/VmRSS/{print \$2}" /proc/$p/status); hwm=$(awk "/VmHWM/{print \$2}" /proc/$p/status); echo "$((b - a)) $hz $rss $hwm"')
read -r ticks hz rss hwm <<<"$idle"
echo "agent idle CPU over 30 s: $ticks ticks at $hz Hz = $(awk "BEGIN{printf \"%.3f\", $ticks / $hz / 30 * 100}") %"
echo "agent RSS: $((rss / 1024)).$(( (rss % 1024) * 10 / 1024 )) MB now, peak $((hwm / 1024)).$(( (hwm % 1024) * 10 / 1024 )) MB (target < 20 MB)"
