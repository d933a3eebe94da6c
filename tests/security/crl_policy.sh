#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding "roles cannot be revoked or restricted": the agent's mutual TLS checked no
# CRL and the policy file could only add roles, so any certificate the CA issued with
# OU=key-custodian was a key custodian whatever the policy said. Against a real agent
# on 127.0.0.1 (no MACsec needed: status requests), with a CA database and CRLs made
# here with openssl ca:
#   - a revoked operator certificate is refused at the handshake, and an audit record
#     names it; an unrevoked one works;
#   - a key-custodian certificate the policy denies is refused, a DN deny works on a
#     real certificate's subject;
#   - SIGHUP with a new CRL and policy: the newly revoked certificate is refused; with
#     a pin for key-custodian another OU=key-custodian certificate is refused and the
#     pinned one accepted;
#   - a bad CRL on reload keeps the running configuration; a missing, unparsable or
#     foreign-signed CRL, or a policy with an unknown directive, refuses the start;
#     an expired CRL refuses clients.
# Prints PASS/FAIL per check, "crl_policy: N passed, M failed"; exits non-zero on any
# failure, 2 when it cannot run at all.
set -uo pipefail
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's: a pyenv shim first in PATH costs ~0.6 s of CPU a start
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${FCTL_BUILD_DIR:-$ROOT/build}
F=$BUILD/fabricctl/fabricctl
PASS=0 FAIL=0
pass() { echo "PASS $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
check() { # name, condition (a command), detail on failure
	local name=$1 detail=$3
	if eval "$2"; then pass "$name"; else fail "$name" "$detail"; fi
}
die() { echo "crl_policy: $*" >&2; exit 2; }
command -v openssl >/dev/null || die "openssl missing"
command -v "$PY" >/dev/null || die "python3 missing (picks a free port)"
[ -x "$F" ] || die "no $F (build first)"
T=$(mktemp -d /tmp/fctl-sec-crl.XXXXXX) || die "mktemp failed"
AGENT=
cleanup() {
	[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null
	rm -rf -- "$T"
}
trap cleanup EXIT

# --- the PKI: scripts/pki.sh, then a second operator and a second key custodian ---
PKI=$T/pki
sh "$ROOT/scripts/pki.sh" "$PKI" h1=127.0.0.1 >/dev/null || die "scripts/pki.sh failed"
client() { # name OU CN
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$1.key" 2>/dev/null &&
		openssl req -new -key "$PKI/$1.key" -subj "/O=fabricctl test/OU=$2/CN=$3" \
			-out "$T/$1.csr" 2>/dev/null &&
		printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\nsubjectAltName=URI:fabricctl:role:%s\n' \
			"$2" >"$T/$1.ext" &&
		openssl x509 -req -in "$T/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
			-CAcreateserial -days 30 -extfile "$T/$1.ext" -out "$PKI/$1.crt" 2>/dev/null ||
		die "cannot make the certificate $1"
}
client client-operator2 operator operator2-user
client client-key-custodian2 key-custodian custodian2-user

# the CA database the CRLs come from (pki.sh keeps none for its CA)
mkdir -p "$T/cadb"
: >"$T/cadb/index.txt"
echo 1000 >"$T/cadb/crlnumber"
cat >"$T/cadb/ca.cnf" <<EOC
[ca]
default_ca = d
[d]
database = $T/cadb/index.txt
crlnumber = $T/cadb/crlnumber
default_md = sha256
default_crl_days = 7
EOC
ca() { openssl ca -batch -config "$T/cadb/ca.cnf" -cert "$PKI/${CA:-ca}.crt" -keyfile "$PKI/${CA:-ca}.key" "$@" 2>"$T/ca.err" || die "openssl ca $*: $(cat "$T/ca.err")"; }
ca -revoke "$PKI/client-operator2.crt" -crl_reason keyCompromise
ca -gencrl -out "$T/crl1.pem"
ca -revoke "$PKI/client-operator.crt" -crl_reason superseded
ca -gencrl -out "$T/crl2.pem"
ca -gencrl -crl_lastupdate 20200101000000Z -crl_nextupdate 20200102000000Z -out "$T/crl-expired.pem"
CA=foreign-ca ca -gencrl -out "$T/crl-foreign.pem"
printf -- '-----BEGIN X509 CRL-----\nnot a crl\n-----END X509 CRL-----\n' >"$T/crl-garbage.pem"

fp() { openssl x509 -noout -fingerprint -sha256 -in "$PKI/$1.crt" | sed 's/^.*=//'; }
dn() { openssl x509 -noout -subject -nameopt RFC2253 -in "$PKI/$1.crt" | sed 's/^subject=//'; }

# --- the agent ---
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$T/state" "$T/profiles" "$T/audit"
config() { # crl policy
	cat >"$T/agent.conf" <<EOC
socket: ""
listen: 127.0.0.1:$PORT
cert: $PKI/server-h1.crt
key: $PKI/server-h1.key
ca: $PKI/ca.crt
crl: $1
policy: $2
host: h1
state_dir: $T/state
profile_dir: $T/profiles
audit_log: $T/audit/audit.log
drift_interval: 0
EOC
}
start_agent() { # log file; 0 when it serves
	"$F" agent --config "$T/agent.conf" 2>"$1" &
	AGENT=$!
	for _ in $(seq 100); do
		grep -q "serving host" "$1" 2>/dev/null && return 0
		kill -0 "$AGENT" 2>/dev/null || { wait "$AGENT"; AGENT=; return 1; }
		sleep 0.1
	done
	return 1
}
stop_agent() {
	[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null
	AGENT=
}
hup() { # waits for the reload line number n (succeeded or failed)
	local before
	before=$(grep -c "reload" "$T/agent.err")
	kill -HUP "$AGENT"
	for _ in $(seq 50); do
		[ "$(grep -c "reload" "$T/agent.err")" -gt "$before" ] && return 0
		sleep 0.1
	done
	return 1
}
# status as a client certificate: output in $OUT, exit code returned
status() {
	OUT=$("$F" status --target "127.0.0.1:$PORT" --cert "$PKI/$1.crt" --key "$PKI/$1.key" \
		--ca "$PKI/ca.crt" --timeout 5s 2>&1)
}
accepted() { # name cert role
	status "$2"
	local rc=$?
	check "$1" '[ $rc -eq 0 ] && grep -q "your role: $3" <<<"$OUT"' "exit $rc: $OUT"
}
refused() { # name cert: refused by a running agent (not for want of one)
	status "$2"
	local rc=$?
	check "$1" '[ $rc -ne 0 ] && [ -n "$AGENT" ] && kill -0 "$AGENT" 2>/dev/null &&
		! grep -q "cannot connect" <<<"$OUT"' "exit $rc, agent ${AGENT:-not running}: $OUT"
}
audited() { # name, text the refusal's audit record has (fixed string), second text
	local a=$2 b=$3
	# the agent writes the record after the refusal reached the client: wait for it
	for _ in $(seq 20); do
		grep '"result":"refused"' "$T/audit/audit.log" 2>/dev/null | grep -F -- "$a" |
			grep -qF -- "$b" && break
		sleep 0.1
	done
	check "$1" 'grep "\"result\":\"refused\"" "$T/audit/audit.log" 2>/dev/null | grep -F -- "$a" | grep -qF -- "$b"' \
		"no refused record with '$a' and '$b' in the audit log"
}

# phase 1: CRL 1 (operator2 revoked); policy denies custodian2 and, by DN, the viewer
printf '# phase 1\ndeny key-custodian cn:custodian2-user\ndeny all dn:%s\n' "$(dn client-viewer)" >"$T/policy1"
config "$T/crl1.pem" "$T/policy1"
if start_agent "$T/agent.err"; then
	pass agent-starts-with-crl-and-policy
else
	fail agent-starts-with-crl-and-policy "$(cat "$T/agent.err")"
fi
accepted unrevoked-operator-accepted client-operator operator
refused revoked-operator-refused client-operator2
audited revoked-refusal-audited "certificate revoked" "CN=operator2-user,OU=operator"
refused denied-key-custodian-refused client-key-custodian2
audited denied-key-custodian-audited "role key-custodian denied by $T/policy1:2" "CN=custodian2-user"
accepted other-key-custodian-accepted client-key-custodian key-custodian
refused dn-denied-viewer-refused client-viewer
audited dn-denied-viewer-audited "role viewer denied by $T/policy1:3" "CN=viewer-user"
refused no-role-still-refused client-norole
refused expired-cert-still-refused client-expired

# phase 2: SIGHUP with CRL 2 (operator revoked too) and a pin for key-custodian
printf '# phase 2\npin key-custodian sha256:%s\n' "$(fp client-key-custodian2)" >"$T/policy2"
config "$T/crl2.pem" "$T/policy2"
if [ -n "$AGENT" ] && hup && grep -q "configuration, certificates and policy reloaded" "$T/agent.err"; then
	pass sighup-reload
else
	fail sighup-reload "$(tail -3 "$T/agent.err")"
fi
refused newly-revoked-operator-refused client-operator
audited newly-revoked-audited "certificate revoked" "CN=operator-user,OU=operator"
refused still-revoked-operator2-refused client-operator2
refused unpinned-key-custodian-refused client-key-custodian
audited unpinned-key-custodian-audited "role key-custodian is pinned to other certificates" "CN=key-custodian-user"
accepted pinned-key-custodian-accepted client-key-custodian2 key-custodian
accepted viewer-no-longer-denied client-viewer viewer

# phase 3: a bad CRL on reload keeps the running configuration
config "$T/crl-garbage.pem" "$T/policy2"
if [ -n "$AGENT" ] && hup && grep -q "reload failed.*crl-garbage.pem" "$T/agent.err"; then
	pass bad-crl-reload-refused
else
	fail bad-crl-reload-refused "$(tail -3 "$T/agent.err")"
fi
refused bad-crl-reload-kept-revocation client-operator
accepted bad-crl-reload-kept-pin client-key-custodian2 key-custodian
stop_agent

# phase 4: configurations the agent must refuse to start with
start_refused() { # name, expected message part
	if start_agent "$T/start.err"; then
		fail "$1" "the agent started"
		stop_agent
	elif grep -qF -- "$2" "$T/start.err"; then
		pass "$1"
	else
		fail "$1" "$(cat "$T/start.err")"
	fi
}
config "$T/missing.pem" "$T/policy2"
start_refused missing-crl-refused "$T/missing.pem"
config "$T/crl-garbage.pem" "$T/policy2"
start_refused unparsable-crl-refused "$T/crl-garbage.pem"
config "$T/policy2" "$T/policy2"
start_refused no-crl-in-file-refused "no CRL in the file"
config "$T/crl-foreign.pem" "$T/policy2"
start_refused foreign-crl-refused "not signed by a CA of the ca file"
printf 'deny all cn:x\nrevoke key-custodian cn:y\n' >"$T/policy-bad"
config "$T/crl1.pem" "$T/policy-bad"
start_refused bad-policy-refused "$T/policy-bad:2: unknown directive 'revoke'"

# phase 5: an expired CRL (nextUpdate in the past) refuses the clients it covers
config "$T/crl-expired.pem" "$T/policy2"
if start_agent "$T/agent-expired.err" && grep -q "past its next update" "$T/agent-expired.err"; then
	pass expired-crl-warned
else
	fail expired-crl-warned "$(cat "$T/agent-expired.err")"
fi
refused expired-crl-refuses-clients client-viewer
audited expired-crl-audited "CRL has expired" "CN=viewer-user"
stop_agent

echo "crl_policy: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ] && [ $PASS -gt 0 ]
