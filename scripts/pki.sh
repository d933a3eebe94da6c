#!/bin/sh
# SPDX-License-Identifier: MIT
# A test/dev fabric CA for the agent's mutual TLS (docs/agent.md). Not for production.
#
# usage: scripts/pki.sh DIR [HOST[=IP,IP...]]...
#   DIR/ca.{crt,key}                 the fabric CA (EC P-256, 10 years)
#   DIR/server-HOST.{crt,key}        per host: CN=HOST, SAN DNS:HOST + the IPs given
#   DIR/client-ROLE.{crt,key}        ROLE = viewer, operator, key-custodian: the role as
#                                    SAN URI fabricctl:role:ROLE and as OU
#   DIR/client-norole.{crt,key}      valid, signed by the CA, but names no role
#   DIR/client-expired.{crt,key}     operator, expired (validity ended in the past)
#   DIR/client-foreign.{crt,key}     operator, signed by another CA (DIR/foreign-ca.crt)
# Existing files are kept (run again to add hosts).
set -eu

[ $# -ge 1 ] || { echo "usage: $0 DIR [HOST[=IP,IP...]]..." >&2; exit 2; }
DIR=$1
shift
mkdir -p "$DIR"
umask 077
cd "$DIR"

key() { [ -f "$1" ] || openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ca() { # name
	[ -f "$1.crt" ] && return 0
	key "$1.key"
	openssl req -x509 -new -key "$1.key" -days 3650 -subj "/O=fabricctl test/CN=$1" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
		-out "$1.crt" 2>/dev/null
}

# sign NAME SUBJECT EXT CA [DAYS|expired]
sign() {
	[ -f "$1.crt" ] && return 0
	key "$1.key"
	printf '%s\n' "$3" >"$1.ext"
	openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
	if [ "${5:-825}" = expired ]; then
		# validity in the past (2020-01-01 .. 2020-01-02): openssl ca takes explicit dates
		mkdir -p ca-db
		: >ca-db/index.txt
		[ -f ca-db/serial ] || echo 01 >ca-db/serial
		cat >ca-db/ca.cnf <<EOC
[ca]
default_ca = d
[d]
database = ca-db/index.txt
new_certs_dir = ca-db
serial = ca-db/serial
default_md = sha256
policy = p
unique_subject = no
[p]
commonName = supplied
organizationName = optional
organizationalUnitName = optional
EOC
		openssl ca -batch -notext -config ca-db/ca.cnf -cert "$4.crt" -keyfile "$4.key" \
			-startdate 20200101000000Z -enddate 20200102000000Z -extfile "$1.ext" \
			-in "$1.csr" -out "$1.crt" 2>/dev/null
	else
		openssl x509 -req -in "$1.csr" -CA "$4.crt" -CAkey "$4.key" -CAcreateserial \
			-days "${5:-825}" -extfile "$1.ext" -out "$1.crt" 2>/dev/null
	fi
	rm -f "$1.csr" "$1.ext"
}

ca ca
ca foreign-ca
for spec in "$@"; do
	host=${spec%%=*}
	san="DNS:$host"
	if [ "$spec" != "$host" ]; then
		for ip in $(echo "${spec#*=}" | tr ',' ' '); do san="$san,IP:$ip"; done
	fi
	sign "server-$host" "/O=fabricctl test/CN=$host" \
		"basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$san" ca
done
for role in viewer operator key-custodian; do
	sign "client-$role" "/O=fabricctl test/OU=$role/CN=$role-user" \
		"basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
subjectAltName=URI:fabricctl:role:$role" ca
done
sign client-norole "/O=fabricctl test/CN=nobody" "basicConstraints=CA:FALSE
extendedKeyUsage=clientAuth" ca
sign client-expired "/O=fabricctl test/OU=operator/CN=expired-user" "basicConstraints=CA:FALSE
extendedKeyUsage=clientAuth
subjectAltName=URI:fabricctl:role:operator" ca expired
sign client-foreign "/O=fabricctl test/OU=operator/CN=foreign-user" "basicConstraints=CA:FALSE
extendedKeyUsage=clientAuth
subjectAltName=URI:fabricctl:role:operator" foreign-ca
chmod 644 ./*.crt
echo "pki: $(pwd): ca.crt, $(ls server-*.crt 2>/dev/null | wc -l) server and 6 client certificates"
