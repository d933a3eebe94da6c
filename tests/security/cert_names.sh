#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding (issue #29, 2) "a NUL in a certificate's CN takes another name's role": the agent
# read the subject CN with X509_NAME_get_text_by_NID into a C string and the policy compared
# it with strcmp, so a certificate the CA issued for "alice\0.mallory.example" matched the
# policy line "operator alice", and the audit named CN=alice. The same held for the OU that
# names a role, a CN with a control byte passed into the records, and of two CNs the first
# one counted. Against a real agent on 127.0.0.1 with certificates of the test CA made by
# openssl (the names patched in a self-signed certificate, re-signed by its key, then
# certified by the CA with openssl x509 -CA):
#   - alice's genuine certificate is an operator (the control);
#   - CN "alice\0.mallory.example", OU "operator\0.x" (no SAN), CN with an escape byte,
#     and CN=alice + CN=mallory.example are refused, each audited with the reason, and
#     no record names CN=alice for them.
# Prints PASS/FAIL per check, "cert_names: N passed, M failed"; needs root.
set -uo pipefail
NAME=cert_names
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"

# mkcert NAME SUBJECT PATCH-FROM PATCH-TO [EXT]: $PKI/NAME.crt and .key, a client certificate of
# the test CA whose subject is SUBJECT with the bytes PATCH-FROM replaced by PATCH-TO (python
# escapes, same length) in its DER
mkcert() {
	local n=$1 d=$T/mk-$1
	mkdir -p "$d"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$n.key" 2>/dev/null &&
		openssl req -x509 -new -key "$PKI/$n.key" -subj "$2" -days 2 -outform DER -out "$d/s0.der" 2>/dev/null &&
		"$PY" - "$d/s0.der" "$d/s1.der" "$3" "$4" <<'EOPY' &&
import ast, sys
d = open(sys.argv[1], "rb").read()
a, b = (ast.literal_eval("b'%s'" % x) for x in sys.argv[3:5])
assert len(a) == len(b) and d.count(a) == 2, "the name is not in the certificate twice (issuer, subject)"
open(sys.argv[2], "wb").write(d.replace(a, b))
EOPY
		openssl x509 -inform DER -in "$d/s1.der" -key "$PKI/$n.key" -out "$d/s2.crt" 2>/dev/null &&
		printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n%s' "${5:-}" >"$d/ext" &&
		openssl x509 -in "$d/s2.crt" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 2 \
			-clrext -extfile "$d/ext" -out "$PKI/$n.crt" 2>/dev/null &&
		openssl verify -CAfile "$PKI/ca.crt" "$PKI/$n.crt" >/dev/null 2>&1 ||
		die "cannot make the certificate $n"
}
mkcert alice "/O=fabricctl test/CN=alice" alice alice
mkcert alice-nul "/O=fabricctl test/CN=alice#.mallory.example" 'alice#.mal' 'alice\x00.mal'
mkcert ou-nul "/O=fabricctl test/OU=operator#.x/CN=ou-nul" 'operator#.x' 'operator\x00.x'
mkcert cn-esc "/O=fabricctl test/CN=viewer#[31m" 'viewer#[31m' 'viewer\x1b[31m' \
	'subjectAltName=URI:fabricctl:role:viewer'
mkcert two-cn "/O=fabricctl test/CN=alice/CN=mallory.example" alice alice
subj=$(openssl x509 -noout -subject -nameopt RFC2253 -in "$PKI/alice-nul.crt")
[[ $subj == *'alice\00.mallory.example'* ]] || die "the NUL is not in the certificate: $subj"

printf '# cert_names\noperator alice\n' >"$T/policy"
# shellcheck disable=SC2046
start_agent $(agent_args) --policy "$T/policy"

status() { # CERT: status over TLS as CERT, output in $OUT, exit code returned
	OUT=$("$F" status --target "127.0.0.1:$PORT" --cert "$PKI/$1.crt" --key "$PKI/$1.key" \
		--ca "$PKI/ca.crt" --timeout 5s 2>&1)
}
LOG=$T/audit/agent.log
audited() { # NAME TEXT: a refused record holding TEXT (fixed string) appears in the agent's log
	for _ in $(seq 30); do
		grep '"result":"refused"' "$LOG" 2>/dev/null | grep -qF -- "$2" && break
		sleep 0.1
	done
	if grep '"result":"refused"' "$LOG" 2>/dev/null | grep -qF -- "$2"; then pass "$1"; else
		fail "$1" "no refused record with '$2': $(grep refused "$LOG" 2>/dev/null | tail -2)"
	fi
}

status alice
if [ $? -eq 0 ] && grep -q "your role: operator" <<<"$OUT"; then pass alice-is-operator; else
	fail alice-is-operator "$OUT"
fi
# refused NAME CERT WHY-IN-AUDIT
refused() {
	local rc
	status "$2"
	rc=$?
	if [ $rc -ne 0 ] && ! grep -q "your role" <<<"$OUT" && ! grep -q "cannot connect" <<<"$OUT"; then
		pass "$1-refused"
	else
		fail "$1-refused" "exit $rc: $(head -c 300 <<<"$OUT")"
	fi
	audited "$1-audited" "$3"
}
refused cn-with-nul alice-nul 'CN holds a NUL or a non-printable byte'
refused ou-with-nul ou-nul 'OU holds a NUL or a non-printable byte'
refused cn-with-escape cn-esc 'CN holds a NUL or a non-printable byte'
refused two-cns two-cn 'more than one CN'
# none of them was ever alice, an operator, or a raw control byte in the log
if grep -F '"cert":"CN=alice' "$LOG" | grep -vq '"cert":"CN=alice"'; then
	fail no-record-names-cn-alice-for-a-look-alike "$(grep -F '"cert":"CN=alice' "$LOG" | grep -v '"cert":"CN=alice"' | head -2)"
else
	pass no-record-names-cn-alice-for-a-look-alike
fi
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$LOG"; then fail audit-log-holds-no-control-byte; else
	pass audit-log-holds-no-control-byte
fi
agent_healthy cert-names
