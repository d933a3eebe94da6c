# SPDX-License-Identifier: MIT
# Sourced by the agent attack tests (not a test itself): a real `fabricctl agent` on
# 127.0.0.1 (mutual TLS, scripts/pki.sh's test CA) and a Unix socket in a temp dir,
# acting in a network namespace of its own, PASS/FAIL counting, cleanup on exit.
# The caller sets NAME; FCTL_BUILD_DIR names the build (default build/).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
PY=${FCTL_PYTHON:-/usr/bin/python3}
export PYTHONPATH=$ROOT/tests/security/lib
PASS=0 FAIL=0
AGENT_PID="" NETNS=""
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
die() { echo "$NAME: cannot run: $*" >&2; exit 2; }
# PASS/FAIL lines printed by a helper (python): echoed and counted
count() {
	local l
	while IFS= read -r l; do
		case $l in
		"PASS "*) echo "$l"; PASS=$((PASS + 1)) ;;
		"FAIL "*) echo "$l"; FAIL=$((FAIL + 1)) ;;
		*) echo "   $l" ;;
		esac
	done
}

[ "$(id -u)" = 0 ] || die "needs root"
[ -x "$F" ] || die "no $F: build first"
[ -x "$PY" ] || die "no $PY"
command -v ip >/dev/null || die "no ip"
T=$(mktemp -d /tmp/fctl-sec-"$NAME".XXXXXX) || die "mktemp"
chmod 0755 "$T"

cleanup() {
	fleet_stop # the fleet's agents (fleet_start), when a test has one
	if [ -n "$AGENT_PID" ]; then
		kill "$AGENT_PID" 2>/dev/null
		wait "$AGENT_PID" 2>/dev/null
	fi
	[ -n "$NETNS" ] && ip netns del "$NETNS" 2>/dev/null
	rm -rf -- "$T"
}
finish() {
	local rc=$?
	[ "$rc" -ne 0 ] && [ "$rc" -ne 2 ] && [ "$FAIL" -eq 0 ] && fail script "stopped early with status $rc"
	cleanup
	[ "$rc" -eq 2 ] && [ "$FAIL" -eq 0 ] && exit 2
	echo "$NAME: $PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ] && [ "$PASS" -gt 0 ] && exit 0
	exit 1
}
trap finish EXIT

PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') ||
	die "no free port"
NETNS=fctl-sec-$NAME-$$
ip netns add "$NETNS" || { NETNS=""; die "ip netns add failed"; }
sh "$ROOT/scripts/pki.sh" "$T/pki" h1=127.0.0.1 >/dev/null || die "pki.sh failed"
PKI=$T/pki
mkdir -p "$T/state" "$T/profiles" "$T/audit"
SOCK=$T/agent.sock
# the workers' commands write their own audit records: here, not in /var/lib
export FCTL_AUDIT_LOG=$T/audit/worker.log
# the CLI's TLS session cache (docs/agent.md, "Session resumption"): here, not in ~/.cache
export XDG_CACHE_HOME=$T/cache
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# The agent's options (besides --config when given); tests append their own.
agent_args() {
	echo --socket "$SOCK" --listen "127.0.0.1:$PORT" --cert "$PKI/server-h1.crt" \
		--key "$PKI/server-h1.key" --ca "$PKI/ca.crt" --netns "$NETNS" \
		--state-dir "$T/state" --host h1 --profile-dir "$T/profiles" \
		--audit-log "$T/audit/agent.log" --drift-interval 0
}

# start_agent ARG...: the agent in the background (stderr in $T/agent.err), up
# when root's status answers on the Unix socket (10 s at most).
start_agent() {
	"$F" agent "$@" 2>"$T/agent.err" &
	AGENT_PID=$!
	for _ in $(seq 100); do
		"$F" status --target "unix:$SOCK" >/dev/null 2>&1 && return 0
		kill -0 "$AGENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$T/agent.err" >&2
	die "the agent did not start"
}

# Stops the agent (SIGTERM, by its PID) and waits for it.
stop_agent() {
	[ -n "$AGENT_PID" ] || return 0
	kill "$AGENT_PID" 2>/dev/null
	wait "$AGENT_PID" 2>/dev/null
	AGENT_PID=""
}

# The checks every agent test ends with: alive, serving root, no sanitizer report.
agent_healthy() { # label
	if kill -0 "$AGENT_PID" 2>/dev/null; then pass "$1-agent-alive"; else fail "$1-agent-alive"; fi
	if out=$("$F" status --target "unix:$SOCK" 2>&1) && grep -q "your role: local" <<<"$out"; then
		pass "$1-root-status-on-unix-socket"
	else
		fail "$1-root-status-on-unix-socket" "$out"
	fi
	if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: " "$T/agent.err"; then
		fail "$1-no-sanitizer-report" "$(grep -m3 -E "ERROR|SUMMARY|runtime error" "$T/agent.err")"
	else
		pass "$1-no-sanitizer-report"
	fi
}

# TLS client options for ROLE
tls_opts() { echo --cert "$PKI/client-$1.crt" --key "$PKI/client-$1.key" --ca "$PKI/ca.crt"; }

profile() { # name version
	printf 'schema: 1\nprofile:\n  name: %s\n  version: %s\nhosts:\n  - name: h1\n    ports: [{ name: eth0 }]\n' "$1" "$2"
}

# A fleet of agents h0 .. hN-1 (the fan-out tests): fleet_start N starts them, each
# on a free port of 127.0.0.1 (FLEET_PORTS) with its Unix socket $T/sockI, state dir
# $T/sI, profile dir $T/pI and audit log $T/aI/agent.log, all acting in $NETNS;
# $T/inventory names them; it returns once each answers root's status on its socket.
# fleet_stop stops them by PID (FLEET_PIDS): call it from the test's cleanup.
FLEET_PIDS=() FLEET_PORTS=()
fleet_start() {
	local n=$1 i up
	mapfile -t FLEET_PORTS < <("$PY" - "$n" <<'EOPY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
EOPY
)
	[ "${#FLEET_PORTS[@]}" -eq "$n" ] || die "no free ports"
	: >"$T/inventory"
	for i in $(seq 0 $((n - 1))); do
		mkdir -p "$T/s$i" "$T/p$i" "$T/a$i"
		"$F" agent --socket "$T/sock$i" --listen "127.0.0.1:${FLEET_PORTS[$i]}" \
			--cert "$PKI/server-h1.crt" --key "$PKI/server-h1.key" --ca "$PKI/ca.crt" \
			--netns "$NETNS" --state-dir "$T/s$i" --host "h$i" --profile-dir "$T/p$i" \
			--audit-log "$T/a$i/agent.log" --drift-interval 0 2>"$T/agent$i.err" &
		FLEET_PIDS+=($!)
		echo "h$i 127.0.0.1:${FLEET_PORTS[$i]}" >>"$T/inventory"
	done
	for i in $(seq 0 $((n - 1))); do
		up=0
		for _ in $(seq 100); do
			"$F" status --target "unix:$T/sock$i" >/dev/null 2>&1 && { up=1; break; }
			kill -0 "${FLEET_PIDS[$i]}" 2>/dev/null || break
			sleep 0.1
		done
		[ $up = 1 ] || { cat "$T/agent$i.err" >&2; die "agent h$i did not start"; }
	done
}
fleet_stop() {
	local p
	for p in "${FLEET_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${FLEET_PIDS[@]}"; do wait "$p" 2>/dev/null; done
}
