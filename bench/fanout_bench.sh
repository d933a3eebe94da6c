#!/bin/bash
# SPDX-License-Identifier: MIT
# Fabric fan-out figures with real agents: N `fabricctl agent` processes on 127.0.0.1
# (mutual TLS, one port, state dir, audit log and network namespace each), then
# `status --fabric` and `plan --fabric` over all of them (wall time, the CLI's peak
# RSS and CPU), a TLS-handshake-only pass over the same agents (the handshake's
# share), and status again with HUNG% of the agents stopped (SIGSTOP: TCP accepts,
# TLS never answers) and DEAD% killed: it must finish and name each one "timed out"
# or "connection refused".
# usage: sudo bench/fanout_bench.sh [--agents N] [--hung PCT] [--dead PCT]
#            [--timeout DUR] [--plan-timeout DUR] [--parallel N] [--no-netns] [--perf DIR]
#            [--ksm]
# --timeout (default 10s, the CLI's) is the deadline of the status runs; plan runs
# get --plan-timeout (default 60s): here N agents share the machine's cores, so
# N / parallel plan workers (a fork and re-execution each) queue for them, which no
# single agent host sees. --no-netns: every agent in the host's namespace (saves
# the kernel memory of N namespaces). The agents' handshake_timeout is 60 s: N of
# them share the cores, and under load an agent's 5 s default closes handshakes the
# client has not been scheduled to finish.
# --ksm: the agents' identical pages merged by the kernel (KSM), so that 10,000 agents
# fit one machine: an agent and its TLS front-end hold about 2.4 MiB, nearly all of it
# the same bytes in every agent (libcrypto's relocated data, OpenSSL's provider tables);
# they are started with address-space randomization off (setarch -R: the same addresses,
# so the same bytes) and PR_SET_MEMORY_MERGE (Linux 6.4), KSM scans until the merging
# settles, then stops before anything is measured (merged pages stay merged; a write
# copies the page). The CLI is started outside that. The machine's KSM settings are
# put back on exit. Changes the agents' memory, not what the CLI does or measures.
# Needs root, a build in build/ (FCTL_BUILD_DIR=DIR for another), python3, ip, ss,
# /usr/bin/time. Refuses (exit 1, "FAILED: ...") when the machine lacks the memory
# for N agents. Stops every agent it started, by PID, and removes its namespaces and
# its directory (/var/tmp/fctl-fanout-bench.XXXXXX, or under FCTL_BENCH_TMPDIR: a tmpfs
# such as /dev/shm spares 10,000 agents' first start the disk's fsyncs of their audit
# keys) on exit, whatever happens.
# Ends with one line: BENCH {json}.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
N=1000 HUNG=5 DEAD=5 TIMEOUT=10s PLAN_TIMEOUT=60s PARALLEL="" NETNS=1 PERF="" KSM=0
while [ $# -gt 0 ]; do
	case $1 in
	--agents) N=$2; shift 2 ;;
	--hung) HUNG=$2; shift 2 ;;
	--dead) DEAD=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--plan-timeout) PLAN_TIMEOUT=$2; shift 2 ;;
	--parallel) PARALLEL=$2; shift 2 ;;
	--no-netns) NETNS=0; shift ;;
	--perf) PERF=$2; shift 2 ;;
	--ksm) KSM=1; shift ;;
	*) echo "usage: $0 [--agents N] [--hung PCT] [--dead PCT] [--timeout DUR] [--plan-timeout DUR] [--parallel N] [--no-netns] [--perf DIR] [--ksm]" >&2
		exit 2 ;;
	esac
done
die() { echo "fanout_bench: FAILED: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root"
[ -x "$F" ] || die "no $F: build first"
for t in python3 ip ss /usr/bin/time; do command -v "$t" >/dev/null || die "no $t"; done
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -ge 10 ] || die "--agents expects 10 or more"

KSMD=/sys/kernel/mm/ksm
if [ $KSM = 1 ]; then
	[ -w $KSMD/run ] || die "--ksm: no $KSMD/run (a kernel without CONFIG_KSM)"
	command -v setarch >/dev/null || die "--ksm: no setarch (util-linux)"
	python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).prctl(67, 1, 0, 0, 0) != 0)' ||
		die "--ksm: prctl(PR_SET_MEMORY_MERGE) refused (Linux 6.4 or later needed)"
	KSM_SAVED=$(for k in run pages_to_scan sleep_millisecs; do echo "$k $(cat $KSMD/$k)"; done)
fi

W=$(mktemp -d "${FCTL_BENCH_TMPDIR:-/var/tmp}/fctl-fanout-bench.XXXXXX") || die "mktemp"
chmod 0755 "$W"
PIDS=() STOPPED=() NSNAMES=()
NSPFX=fctl-fb$$-
cleanup() {
	local p left
	trap '' INT TERM # a second signal must not cut the cleanup short
	for p in "${STOPPED[@]}"; do kill -CONT "$p" 2>/dev/null; done
	# --ksm: the launcher first, so that it starts no more; its agents (reaped by init
	# once it is gone) are those in $W/pids, which PIDS may not hold yet
	if [ -n "${LAUNCHER:-}" ]; then
		kill "$LAUNCHER" 2>/dev/null
		wait "$LAUNCHER" 2>/dev/null
		mapfile -t PIDS <"$W/pids"
	fi
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for _ in $(seq 100); do
		left=0
		for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && { left=1; break; }; done
		[ $left = 0 ] && break
		sleep 0.2
	done
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ ${#NSNAMES[@]} -gt 0 ]; then
		printf 'netns del %s\n' "${NSNAMES[@]}" | ip -force -batch - 2>/dev/null
	fi
	# the machine's KSM as it was (the agents are gone: nothing left merged of theirs)
	if [ -n "${KSM_SAVED:-}" ]; then
		while read -r k v; do echo "$v" >"$KSMD/$k"; done <<<"$KSM_SAVED"
	fi
	rm -rf -- "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# memory: an agent and its front-end hold ~2.4 MiB of their own (anonymous pages,
# relocated library data, page tables; its namespace besides); ask for 2.5 MiB each
# and 2 GiB besides; with --ksm, 1 MiB each (measured: 0.65 MiB once merged; the
# start is paced so that KSM keeps up)
avail=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
per=2560
[ $KSM = 1 ] && per=1024
need=$((N * per + 2 * 1024 * 1024))
[ "$avail" -ge "$need" ] || die "cannot start $N agents here: they need ~$((need / 1024)) MiB, MemAvailable is $((avail / 1024)) MiB$([ $KSM = 0 ] && echo " (--ksm merges their identical pages)")"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

mapfile -t PORTS < <(python3 - "$N" <<'EOPY'
import socket, sys
n, out = int(sys.argv[1]), []
for p in range(15000, 32768):       # below the ephemeral range the CLI's connects use
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        out.append(p)
    except OSError:
        pass
    finally:
        s.close()
    if len(out) == n:
        break
print("\n".join(map(str, out)))
EOPY
)
[ "${#PORTS[@]}" -eq "$N" ] || die "only ${#PORTS[@]} free ports in 15000..32767 for $N agents"

sh "$ROOT/scripts/pki.sh" "$W/pki" h1=127.0.0.1 >/dev/null || die "pki.sh failed"
PKI=$W/pki
# the CLI's TLS session cache (docs/agent.md, "Session resumption") in the bench's own
# directory: the warm-up run fills it, the measured runs resume its sessions
export XDG_CACHE_HOME=$W/cache
VIEWER=(--cert "$PKI/client-viewer.crt" --key "$PKI/client-viewer.key" --ca "$PKI/ca.crt")
python3 - "$W" "${PORTS[@]}" <<'EOPY'
import sys
w, ports = sys.argv[1], sys.argv[2:]
with open(w + "/inventory", "w") as inv, open(w + "/fleet.yaml", "w") as prof:
    prof.write("schema: 1\nprofile:\n  name: fleet\n  version: 1\nhosts:\n")
    for i, p in enumerate(ports):
        inv.write("h%d 127.0.0.1:%s\n" % (i, p))
        prof.write("  - name: h%d\n    ports: [{ name: eth0 }]\n" % i)
EOPY

now() { date +%s.%N; }
load() { cut -d' ' -f1 /proc/loadavg; }
load0=$(load)
# the first hosts of NAME.json that did not answer, with their errors
failures() {
	python3 -c 'import json,sys
try:
    hosts = json.load(open(sys.argv[1]))["hosts"]
except (OSError, ValueError, KeyError, TypeError):
    try:
        err = open(sys.argv[2]).read().strip()[-300:]
    except OSError:
        err = ""
    sys.exit(print("no document (the command died) " + err))
bad = [h for h in hosts if h["exit"]]
print(len(bad), "failed:", "; ".join("%s: %s" % (h["host"], (h["error"] or "").strip()) for h in bad[:3]))' "$W/$1.json" "$W/$1.err" 2>&1
}
t0=$(now)
if [ $NETNS = 1 ]; then
	for i in $(seq 0 $((N - 1))); do NSNAMES+=("$NSPFX$i"); done
	printf 'netns add %s\n' "${NSNAMES[@]}" | ip -batch - || die "ip netns add failed"
fi
t_ns=$(now)
mkdir -p "$W/agents"
# start_agents FIRST COUNT: agents FIRST.. in the background, each PID a line of $W/pids
start_agents() {
	local i d ns
	for i in $(seq "$1" $(($1 + $2 - 1))); do
		d=$W/agents/$i
		mkdir -p "$d/state" "$d/profiles"
		ns=()
		[ $NETNS = 1 ] && ns=(--netns "$NSPFX$i")
		"$F" agent --socket "" --listen "127.0.0.1:${PORTS[$i]}" --cert "$PKI/server-h1.crt" \
			--key "$PKI/server-h1.key" --ca "$PKI/ca.crt" "${ns[@]}" --state-dir "$d/state" \
			--host "h$i" --profile-dir "$d/profiles" --audit-log "$d/audit.log" \
			--drift-interval 0 --handshake-timeout 60s 2>>"$W/agents.err" &
		echo $! >>"$W/pids"
	done
}
: >"$W/pids"
if [ $KSM = 0 ]; then
	start_agents 0 "$N"
else
	echo 1 >$KSMD/run && echo 5000 >$KSMD/pages_to_scan && echo 20 >$KSMD/sleep_millisecs
	# the launcher: a bash with merging on and no randomization, both inherited by every
	# agent it starts (and reaped by it); 250 at a time, each batch once MemAvailable is
	# back over 3 GiB (KSM has caught up)
	export -f start_agents
	export W F NETNS NSPFX PKI
	PORTS_LIST="${PORTS[*]}" setarch -R python3 -c 'import ctypes, os, sys
if ctypes.CDLL(None).prctl(67, 1, 0, 0, 0):
    sys.exit("prctl(PR_SET_MEMORY_MERGE) failed")
os.execvp("bash", ["bash", "-c", sys.argv[1], "launcher", sys.argv[2]])' '
		read -r -a PORTS <<<"$PORTS_LIST"
		n=$1
		for ((b = 0; b < n; b += 250)); do
			for _ in $(seq 600); do
				a=$(awk "/MemAvailable/ {print \$2}" /proc/meminfo)
				[ "$a" -gt 3145728 ] && break
				sleep 0.5
			done
			[ "$a" -gt 3145728 ] || { echo "fanout_bench: KSM did not keep up: MemAvailable ${a} KiB" >&2; break; }
			start_agents "$b" $((n - b < 250 ? n - b : 250))
		done
		echo done >"$W/launched"
		wait' "$N" &
	LAUNCHER=$!
	for _ in $(seq 3600); do [ -e "$W/launched" ] && break; kill -0 $LAUNCHER 2>/dev/null || break; sleep 1; done
	[ -e "$W/launched" ] || die "the launcher stopped before starting every agent"
fi
mapfile -t PIDS <"$W/pids"
[ "${#PIDS[@]}" = "$N" ] || die "${#PIDS[@]} of $N agents started"
# up: every port listens (read from ss, without connecting to any agent)
python3 - "$W/inventory" "$N" <<'EOPY' || die "the agents did not all listen: $(tail -3 "$W/agents.err")"
import subprocess, sys, time
want = {l.split(":")[-1].strip() for l in open(sys.argv[1])}
deadline = time.time() + 60 + int(sys.argv[2]) * 0.05
while time.time() < deadline:
    out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True).stdout
    got = {l.split()[3].rsplit(":", 1)[1] for l in out.splitlines() if "127.0.0.1:" in l}
    if want <= got:
        sys.exit(0)
    time.sleep(1)
print("%d of %d listen" % (len(want & got), len(want)), file=sys.stderr)
sys.exit(1)
EOPY
# --ksm: merging settles (two more full scans, pages_sharing grown < 1% over the
# last), then ksmd stops, so that it takes no CPU from what is measured
KSM_NOTE=""
if [ $KSM = 1 ]; then
	s0=$(cat $KSMD/full_scans) prev=0
	for _ in $(seq 300); do
		sleep 2
		cur=$(cat $KSMD/pages_sharing)
		[ $(($(cat $KSMD/full_scans) - s0)) -ge 2 ] && [ $((cur - prev)) -le $((cur / 100)) ] && break
		prev=$cur
	done
	echo 0 >$KSMD/run
	KSM_NOTE="KSM: $(cat $KSMD/pages_sharing) pages sharing $(cat $KSMD/pages_shared), then stopped"
	echo "fanout_bench: $KSM_NOTE, MemAvailable $(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo) MiB"
fi
# ... and answers: a warm-up status (not measured), 64 at a time with 60 s each (at
# 10,000 agents on 2 cores the default pool's 625 handshakes at once left 775 agents
# without an answer in 30 s, five times over); a host that never answers is counted
# and named, not fatal: the figures are still worth having, with the count beside them
warm_ok=0
for try in 1 2 3; do
	"$F" status --fabric --inventory "$W/inventory" "${VIEWER[@]}" --parallel 64 --timeout 60s \
		--json -q >"$W/warm.json" 2>/dev/null && { warm_ok=$N; break; }
	warm_ok=$(python3 -c 'import json,sys
try:
    print(sum(h["exit"] == 0 for h in json.load(open(sys.argv[1]))["hosts"]))
except (OSError, ValueError, KeyError, TypeError):
    print(0)' "$W/warm.json")
done
[ "$warm_ok" = "$N" ] || echo "fanout_bench: warm-up: $warm_ok of $N answered: $(failures warm)" >&2
t_up=$(now)
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || die "agent $p died: $(tail -3 "$W/agents.err")"; done
# the PSS of the agents and of their TLS front-ends (their children), in one process (a
# cat and an awk per process took 14 minutes at 10,000 agents)
agents_pss=$(python3 - "${PIDS[@]}" <<'EOPY'
import sys
kb = 0
for p in sys.argv[1:]:
    try:
        kids = open("/proc/%s/task/%s/children" % (p, p)).read().split()
    except OSError:
        kids = []
    for q in [p] + kids:
        try:
            for line in open("/proc/%s/smaps_rollup" % q):
                if line.startswith("Pss:"):
                    kb += int(line.split()[1])
                    break
        except OSError:
            pass
print(kb)
EOPY
)
# and what the machine lost to them, kernel memory included
mem_used=$((avail - $(awk '/MemAvailable/ {print $2}' /proc/meminfo)))

PAR=()
[ -n "$PARALLEL" ] && PAR=(--parallel "$PARALLEL")
# run NAME CMD...: wall, peak RSS, user+sys CPU of CMD into $W/NAME.time, its exit in RC
run() {
	local name=$1; shift
	/usr/bin/time -f '%e %M %U %S' -o "$W/$name.time" "$@" >"$W/$name.json" 2>"$W/$name.err"
	RC=$?
}

# hosts of a fabric JSON with exit 0
# (0 when the command printed no document: killed, out of memory)
answered() {
	python3 -c 'import json,sys
try:
    print(sum(h["exit"] == 0 for h in json.load(open(sys.argv[1]))["hosts"]))
except (OSError, ValueError, KeyError, TypeError):
    print(0)' "$W/$1.json"
}
# the wall, peak RSS and CPU of run NAME, printed at once: a later step that dies
# (the kernel's OOM killer at thousands of agents) does not take them with it
said() { echo "fanout_bench: $1: exit $RC, $(tail -1 "$W/$1.time") (wall s, peak KiB, user s, sys s)"; }

# CPU seconds (user + system) of the agents and their TLS front-ends so far
agents_cpu() {
	python3 - "${PIDS[@]}" <<'EOPY'
import os, sys
todo, seen, ticks = list(sys.argv[1:]), set(), 0
while todo:
    p = todo.pop()
    if p in seen:
        continue
    seen.add(p)
    try:
        st = open("/proc/%s/stat" % p).read()
        f = st[st.rindex(")") + 2:].split()
        ticks += int(f[11]) + int(f[12])
        for t in os.listdir("/proc/%s/task" % p):
            todo += open("/proc/%s/task/%s/children" % (p, t)).read().split()
    except OSError:
        pass
print("%.2f" % (ticks / os.sysconf("SC_CLK_TCK")))
EOPY
}
acpu0=$(agents_cpu)
run status "$F" status --fabric --inventory "$W/inventory" "${VIEWER[@]}" "${PAR[@]}" \
	--timeout "$TIMEOUT" --json -q
# a host that does not answer is reported, not fatal: on a loaded machine the
# figures are still worth having, with the count beside them
acpu_status=$(awk "BEGIN {print $(agents_cpu) - $acpu0}")
status_ok=$(answered status)
said status
[ "$status_ok" = "$N" ] || echo "fanout_bench: status --fabric: exit $RC, $(failures status)" >&2
run plan "$F" plan --fabric --inventory "$W/inventory" "${VIEWER[@]}" "${PAR[@]}" \
	--timeout "$PLAN_TIMEOUT" --json -q "$W/fleet.yaml"
plan_ok=$(answered plan)
said plan
[ "$plan_ok" = "$N" ] || echo "fanout_bench: plan --fabric: exit $RC, $(failures plan)" >&2

# --perf DIR: one more status run (not in the figures) under `perf record -a -g`, its
# profile in DIR/status.perf.data; DIR/status.perf.txt has the CPU by command and
# library (CLI and agents), then fabricctl's hottest symbols
if [ -n "$PERF" ]; then
	command -v perf >/dev/null || die "--perf: no perf (linux-perf)"
	mkdir -p "$PERF" || die "--perf: cannot create $PERF"
	# system-wide (-a): the agents' side of the handshakes is half the work
	perf record -q -a -F 499 -g -o "$PERF/status.perf.data" -- "$F" status --fabric \
		--inventory "$W/inventory" "${VIEWER[@]}" "${PAR[@]}" --timeout "$TIMEOUT" --json -q \
		>/dev/null 2>"$PERF/status.perf.err" || echo "fanout_bench: --perf: status under perf failed" >&2
	{
		perf report -i "$PERF/status.perf.data" --no-children --sort comm,dso --percent-limit 1 \
			--stdio -g none
		perf report -i "$PERF/status.perf.data" --no-children --comm fabricctl \
			--sort dso,symbol --percent-limit 0.5 --stdio -g none
	} 2>/dev/null >"$PERF/status.perf.txt"
	echo "  perf: $PERF/status.perf.txt"
fi

# full TLS handshakes alone (no session resumed): connect, mutual TLS handshake, close; as many at once as
# the CLI's default pool
par=${PARALLEL:-$(( N / 16 > 64 ? (N / 16 > 1024 ? 1024 : N / 16) : 64 ))}
tls_s=$(python3 - "$W/inventory" "$PKI" "$par" <<'EOPY' || die "the TLS pass failed"
import socket, ssl, sys, threading, time
eps = [l.split()[1] for l in open(sys.argv[1])]
pki, par = sys.argv[2], int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.load_verify_locations(pki + "/ca.crt")
ctx.load_cert_chain(pki + "/client-viewer.crt", pki + "/client-viewer.key")
lock, nxt, bad = threading.Lock(), [0], [0]
def worker():
    while True:
        with lock:
            i = nxt[0]; nxt[0] += 1
        if i >= len(eps):
            return
        host, port = eps[i].rsplit(":", 1)
        try:
            with ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=10)) as s:
                s.do_handshake()
        except OSError:
            with lock:
                bad[0] += 1
t = time.perf_counter()
threading.stack_size(256 << 10)
th = [threading.Thread(target=worker) for _ in range(min(par, len(eps)))]
for x in th: x.start()
for x in th: x.join()
print("%.2f" % (time.perf_counter() - t))
if bad[0]:
    print("%d handshakes failed" % bad[0], file=sys.stderr)
EOPY
)

# faults: HUNG% stopped, DEAD% killed, picked at random (seed 1)
read -r -a IDX < <(python3 -c 'import random,sys; n=int(sys.argv[1]); r=random.Random(1); v=list(range(n)); r.shuffle(v); print(*v)' "$N")
nh=$((N * HUNG / 100)) nd=$((N * DEAD / 100))
: >"$W/hung" && : >"$W/dead"
for k in $(seq 0 $((nh - 1))); do
	i=${IDX[$k]}; kill -STOP "${PIDS[$i]}" && STOPPED+=("${PIDS[$i]}"); echo "h$i" >>"$W/hung"
done
for k in $(seq "$nh" $((nh + nd - 1))); do
	i=${IDX[$k]}; kill "${PIDS[$i]}"; echo "h$i" >>"$W/dead"
done
# reaped, a dead agent's PID is no longer ours: out of the list cleanup kills
for k in $(seq "$nh" $((nh + nd - 1))); do
	i=${IDX[$k]}; wait "${PIDS[$i]}" 2>/dev/null; unset "PIDS[$i]"
done
run faults "$F" status --fabric --inventory "$W/inventory" "${VIEWER[@]}" "${PAR[@]}" \
	--timeout "$TIMEOUT" --json -q
faults_rc=$RC
read -r reported wrong < <(python3 - "$W" <<'EOPY'
import json, sys
w = sys.argv[1]
hung = set(open(w + "/hung").read().split())
dead = set(open(w + "/dead").read().split())
rep = wrong = 0
for h in json.load(open(w + "/faults.json"))["hosts"]:
    e = h["error"] or ""
    if h["host"] in hung:
        ok = h["exit"] == 2 and "timed out after" in e
    elif h["host"] in dead:
        ok = h["exit"] == 2 and "connection refused" in e
    else:
        ok = h["exit"] == 0
        if not ok:
            wrong += 1
        continue
    rep += ok
    wrong += not ok
print(rep, wrong)
EOPY
)
t_end=$(now)
load1=$(load)

python3 - "$W" "$N" "$nh" "$nd" "$reported" "$wrong" "$faults_rc" "$tls_s" "$par" "$TIMEOUT" \
	"$(awk "BEGIN {print $t_ns - $t0}")" "$(awk "BEGIN {print $t_up - $t_ns}")" "$agents_pss" "$NETNS" \
	"$(nproc)" "$PLAN_TIMEOUT" "$load0" "$load1" "$status_ok" "$plan_ok" "$acpu_status" "$KSM" "$mem_used" <<'EOPY'
import json, os, sys
w = sys.argv[1]
n, nh, nd, rep, wrong, frc = map(int, sys.argv[2:8])
tls_s, par, timeout = float(sys.argv[8]), int(sys.argv[9]), sys.argv[10]
ns_s, up_s, pss, netns, cores = float(sys.argv[11]), float(sys.argv[12]), int(sys.argv[13]), sys.argv[14] == "1", int(sys.argv[15])
plan_timeout, load0, load1 = sys.argv[16], float(sys.argv[17]), float(sys.argv[18])
status_ok, plan_ok, acpu = int(sys.argv[19]), int(sys.argv[20]), float(sys.argv[21])
ksm, memused = sys.argv[22] == "1", int(sys.argv[23])
def resumed(name):
    try:
        return sum(bool(h.get("tls_resumed")) for h in json.load(open("%s/%s.json" % (w, name)))["hosts"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0
st_res, pl_res = resumed("status"), resumed("plan")
def t(name):
    e, m, u, s = open("%s/%s.time" % (w, name)).read().splitlines()[-1].split()
    return float(e), int(m), float(u) + float(s)
st, sm, sc = t("status")
pl, pm, pc = t("plan")
try: # what plan sent each agent: its part of the profile (fctl/profile_slice.h)
    sent = [h.get("profile_bytes", 0) for h in json.load(open(w + "/plan.json"))["hosts"]]
except (OSError, ValueError, KeyError, TypeError):
    sent = []
sent = [x for x in sent if x]
sent_avg = sum(sent) / len(sent) if sent else 0
ft, fm, fc = t("faults")
print("agents %d (%s), %d cores, pool %d, deadline %s (plan %s), load average %.1f -> %.1f" % (
    n, "own netns each" if netns else "no netns", cores, par, timeout, plan_timeout, load0, load1))
print("  start: netns %.1f s, agents listening %.1f s; agents' PSS %.0f MiB (%.0f KiB each%s), MemAvailable down %.0f MiB (%.0f KiB each)" % (
    ns_s, up_s, pss / 1024, pss / n, ", KSM-merged" if ksm else "", memused / 1024, memused / n))
print("  status --fabric  %7.2f s  %6.2f ms/agent  CLI peak RSS %6.1f MiB  CLI CPU %.2f s  %d answered, %d TLS sessions resumed" % (st, st * 1e3 / n, sm / 1024, sc, status_ok, st_res))
print("  plan --fabric    %7.2f s  %6.2f ms/agent  CLI peak RSS %6.1f MiB  CLI CPU %.2f s  %d answered, %.0f profile bytes sent each (of %d)" % (pl, pl * 1e3 / n, pm / 1024, pc, plan_ok, sent_avg, os.path.getsize(w + "/fleet.yaml")))
print("  status CPU: CLI %.2f s + agents %.2f s = %.2f ms per agent (the 2 cores' floor for status: %.2f s)" % (
    sc, acpu, (sc + acpu) * 1e3 / n, (sc + acpu) / cores))
print("  full TLS handshakes alone %.2f s = %.0f%% of status" % (tls_s, 100 * tls_s / st))
print("  %d hung + %d dead: status %.2f s (exit %d), %d of %d named right, %d hosts wrong" % (nh, nd, ft, frc, rep, nh + nd, wrong))
print("BENCH " + json.dumps({
    "agents": n, "cores": cores, "netns": netns, "parallel": par, "timeout": timeout,
    "plan_timeout": plan_timeout, "load1_start": load0, "load1_end": load1,
    "status_s": st, "plan_s": pl, "status_answered": status_ok, "plan_answered": plan_ok, "status_ms_per_agent": round(st * 1e3 / n, 3),
    "plan_ms_per_agent": round(pl * 1e3 / n, 3),
    "plan_profile_bytes_per_agent": round(sent_avg), "profile_bytes": os.path.getsize(w + "/fleet.yaml"),
    "cli_peak_rss_kb": max(sm, pm, fm), "status_rss_kb": sm, "plan_rss_kb": pm,
    "status_tls_resumed": st_res, "plan_tls_resumed": pl_res, "status_cpu_s": round(sc, 2), "plan_cpu_s": round(pc, 2), "status_agents_cpu_s": round(acpu, 2),
    "status_cpu_ms_per_agent": round((sc + acpu) * 1e3 / n, 3),
    "tls_only_s": tls_s, "tls_share": round(tls_s / st, 3),
    "agents_pss_kb": pss, "agents_mem_kb": memused, "ksm": ksm, "netns_s": round(ns_s, 2), "agents_up_s": round(up_s, 2),
    "hung": nh, "dead": nd, "status_with_faults_s": ft, "faults_exit": frc,
    "faults_reported": rep, "hosts_misreported": wrong}))
EOPY
