#!/bin/bash
# KMS backends against real servers: a SoftHSM2 token (PKCS#11) and a PyKMIP server
# (KMIP over TLS 1.2 with client certificates), both set up here in a temporary
# directory and torn down on exit (processes stopped by PID). Never skips: a missing
# SoftHSM2 or PyKMIP is a FAIL.
#   tests/kms/kms.sh BUILD_DIR
# Prints PASS/FAIL lines and "kms: N passed, M failed"; exits non-zero on failure.
set -u

BUILD=${1:-build}
TOOL=$(cd "$BUILD" 2>/dev/null && pwd)/tests/kms/kms_tool
# apply-fetch: the key as fabricctl's apply gets it, from keymgr fetch-sak (docs/kms.md)
export KMS_TOOL_KEYMGR=$(cd "$BUILD" 2>/dev/null && pwd)/keymgr/fabricctl-keymgr
MODULE=${FCTL_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}
PY=/usr/bin/python3 # PyKMIP is Debian's, for Debian's python
pass=0
fail=0
pids=()
W=$(mktemp -d /tmp/fctl-kms.XXXXXX)

cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$W"
}
trap cleanup EXIT

ok() { echo "PASS: $*"; pass=$((pass + 1)); }
ko() { echo "FAIL: $*"; fail=$((fail + 1)); }
# check NAME CMD...: the command succeeds
check() {
	local name=$1
	shift
	if "$@" >"$W/out" 2>"$W/err"; then ok "$name"; else ko "$name: $(cat "$W/err")"; fi
	cat "$W/err" >>"$W/allerr"
}
# refuse NAME ERRNAME CMD...: the command fails with that errno name
refuse() {
	local name=$1 want=$2
	shift 2
	"$@" >"$W/out" 2>"$W/err"
	local rc=$?
	cat "$W/err" >>"$W/allerr"
	if [ $rc -eq 0 ]; then
		ko "$name: succeeded, expected $want"
	elif grep -q "kms_tool: $want:" "$W/err"; then
		ok "$name ($(sed 's/^kms_tool: //' "$W/err" | head -c 150))"
	else
		ko "$name: expected $want, got: $(cat "$W/err")"
	fi
}
field() { sed -n "s/^$1=//p" "$W/out"; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ ! -x "$TOOL" ]; then
	ko "kms_tool is built ($TOOL)"
	echo "kms: $pass passed, $fail failed"
	exit 1
fi

# pre_active_to_deactivated LABEL BACKEND REF: version 2 of REF (128-bit) through the
# start of its life on either KMS: created pre-active and refused for a new SA
# (PyKMIP would serve Get: the state check is ours), activated and fetched,
# deactivated and refused again
pre_active_to_deactivated() {
	local l=$1 be=$2 ref=$3
	check "$l: create v2 (128-bit) pre-active" "$TOOL" create "$be" "$ref" 2 16
	refuse "$l: pre-active key refused for a new SA" EKEYREJECTED "$TOOL" fetch "$be" "$ref" 2 16
	check "$l: activate v2" "$TOOL" activate "$be" "$ref" 2
	check "$l: fetch v2 once active" "$TOOL" fetch "$be" "$ref" 2 16
	local direct
	direct=$(sed -n 's/^fetched //p' "$W/out")
	check "$l: apply's fetch of v2 through keymgr fetch-sak" "$TOOL" apply-fetch "$be" "$ref" 2 16
	[ -n "$direct" ] && [ "$(sed -n 's/^fetched //p' "$W/out")" = "$direct" ] &&
		ok "$l: through keymgr the same key ($direct)" ||
		ko "$l: through keymgr: $(cat "$W/out") vs $direct"
	check "$l: deactivate v2" "$TOOL" deactivate "$be" "$ref" 2
	refuse "$l: deactivated key refused for a new SA" EKEYREJECTED "$TOOL" fetch "$be" "$ref" 2 16
	refuse "$l: deactivated key refused through keymgr too" EKEYREJECTED \
		"$TOOL" apply-fetch "$be" "$ref" 2 16
}

# ---------------------------------------------------------------- PKCS#11: SoftHSM2
pkcs11_tests() {
	local tok='token=fab-kms;object=sak' kcv

	if ! command -v softhsm2-util >/dev/null || [ ! -e "$MODULE" ]; then
		ko "softhsm2 installed (softhsm2-util and $MODULE; apt-get install softhsm2)"
		return
	fi
	mkdir -p "$W/hsm/tokens"
	printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
		"$W/hsm/tokens" >"$W/hsm/softhsm2.conf"
	export SOFTHSM2_CONF=$W/hsm/softhsm2.conf FCTL_PKCS11_MODULE=$MODULE
	# a random PIN in an owner-only file, never on a command line of ours after init
	$PY -c 'import secrets; print(secrets.token_hex(8))' >"$W/hsm/pin"
	chmod 600 "$W/hsm/pin"
	export FCTL_PKCS11_PIN_FILE=$W/hsm/pin
	# another token first, so ours is not the first slot; then ours
	if softhsm2-util --init-token --free --label fab-first --so-pin "$(cat "$W/hsm/pin")" \
		--pin "$(cat "$W/hsm/pin")" >"$W/hsm/init.log" 2>&1 &&
		softhsm2-util --init-token --free --label fab-kms --so-pin "$(cat "$W/hsm/pin")" \
			--pin "$(cat "$W/hsm/pin")" >>"$W/hsm/init.log" 2>&1; then
		ok "pkcs11: SoftHSM2 tokens 'fab-first' and 'fab-kms' initialised in $W/hsm"
	else
		ko "pkcs11: token init: $(cat "$W/hsm/init.log")"
		return
	fi

	check "pkcs11: create v1 (256-bit, active) in the token" \
		"$TOOL" create pkcs11 "$tok" 1 32 --activate
	kcv=$(field kcv)
	check "pkcs11: info v1 without key bytes" "$TOOL" info pkcs11 "$tok" 1
	[ "$(field state)" = active ] && [ "$(field len)" = 32 ] && [ -n "$kcv" ] &&
		[ "$(field kcv)" = "$kcv" ] && ok "pkcs11: info says active, 32 bytes, kcv $kcv" ||
		ko "pkcs11: info v1: $(tr '\n' ' ' <"$W/out")"
	check "pkcs11: fetch v1 (wrapped export)" "$TOOL" fetch pkcs11 "$tok" 1 32
	grep -q "kcv=$kcv" "$W/out" && ok "pkcs11: exported key's KCV equals the token's CKA_CHECK_VALUE" ||
		ko "pkcs11: KCV after export: $(cat "$W/out") vs $kcv"
	check "pkcs11: apply's fetch of v1 through keymgr fetch-sak" "$TOOL" apply-fetch pkcs11 "$tok" 1 32
	grep -q "kcv=$kcv" "$W/out" && ok "pkcs11: the key through keymgr has the token's KCV" ||
		ko "pkcs11: KCV through keymgr: $(cat "$W/out") vs $kcv"
	refuse "pkcs11: through keymgr, unknown version 9 fails closed with keymgr's reason" ENOKEY \
		"$TOOL" apply-fetch pkcs11 "$tok" 9 32
	# the key never leaves in clear: CKA_SENSITIVE and CKA_EXTRACTABLE as documented
	if command -v pkcs11-tool >/dev/null; then
		pkcs11-tool --module "$MODULE" --token-label fab-kms --login \
			--pin "$(cat "$W/hsm/pin")" --list-objects --type secrkey >"$W/objs" 2>&1
		grep -A8 'label: *sak.v1' "$W/objs" | grep -qi 'sensitive' &&
			ok "pkcs11: pkcs11-tool lists sak.v1 as sensitive" ||
			ko "pkcs11: sak.v1 not listed sensitive: $(tr '\n' ' ' <"$W/objs" | head -c 300)"
		if pkcs11-tool --module "$MODULE" --token-label fab-kms --login \
			--pin "$(cat "$W/hsm/pin")" --read-object --type secrkey --label sak.v1 \
			>"$W/raw" 2>&1; then
			ko "pkcs11: pkcs11-tool read the raw value of a sensitive key"
		else
			ok "pkcs11: the raw value cannot be read with C_GetAttributeValue"
		fi
	else
		ko "pkcs11: pkcs11-tool installed (apt-get install opensc)"
	fi

	refuse "pkcs11: wrong length (v1 is 32 bytes, 16 asked)" EINVAL "$TOOL" fetch pkcs11 "$tok" 1 16
	refuse "pkcs11: unknown version 9 fails closed" ENOKEY "$TOOL" fetch pkcs11 "$tok" 9 32
	refuse "pkcs11: version 0 fails closed" ENOKEY "$TOOL" fetch pkcs11 "$tok" 0 32
	refuse "pkcs11: unknown token label" ENODEV "$TOOL" fetch pkcs11 'token=nope;object=sak' 1 32
	refuse "pkcs11: malformed reference" EINVAL "$TOOL" fetch pkcs11 'sak' 1 32
	refuse "pkcs11: create over an existing version" EEXIST "$TOOL" create pkcs11 "$tok" 1 32

	# slots renumbered: another token initialised (SoftHSM gives it a new slot id that
	# may sort before ours); ours is still found by label
	slot_order() { softhsm2-util --show-slots 2>/dev/null | sed -n 's/^ *Label: *//p' | tr -s ' \n' ' '; }
	local before after
	before=$(slot_order)
	softhsm2-util --init-token --free --label fab-other --so-pin "$(cat "$W/hsm/pin")" \
		--pin "$(cat "$W/hsm/pin")" >"$W/hsm/init2.log" 2>&1
	after=$(slot_order)
	[ "$before" != "$after" ] && ok "pkcs11: slot list changed: [$before] -> [$after]" ||
		ko "pkcs11: slot list did not change: [$before]"
	check "pkcs11: token found by label after another token took a slot" \
		"$TOOL" fetch pkcs11 "$tok" 1 32
	grep -q "kcv=$kcv" "$W/out" && ok "pkcs11: same key (kcv $kcv) after slot renumbering" ||
		ko "pkcs11: different key after renumbering"
	refuse "pkcs11: a key of another token is not found in ours" ENOKEY \
		"$TOOL" fetch pkcs11 'token=fab-other;object=sak' 1 32

	# life cycle: pre-active -> active -> deactivated; compromised; dates
	local now
	now=$(date +%s)
	pre_active_to_deactivated pkcs11 pkcs11 "$tok"
	check "pkcs11: info v2 (deactivated, dated)" "$TOOL" info pkcs11 "$tok" 2
	[ "$(field state)" = deactivated ] && [ -n "$(field activation)" ] && [ -n "$(field deactivation)" ] &&
		ok "pkcs11: v2 deactivated with activation and deactivation dates" ||
		ko "pkcs11: info v2: $(tr '\n' ' ' <"$W/out")"
	refuse "pkcs11: deactivated key cannot be activated again" EPERM "$TOOL" activate pkcs11 "$tok" 2
	check "pkcs11: create v3 active" "$TOOL" create pkcs11 "$tok" 3 32 --activate
	check "pkcs11: compromise v3" "$TOOL" compromise pkcs11 "$tok" 3
	refuse "pkcs11: compromised key refused for a new SA" EKEYREJECTED "$TOOL" fetch pkcs11 "$tok" 3 32
	check "pkcs11: destroy v3" "$TOOL" destroy pkcs11 "$tok" 3
	check "pkcs11: info v3 after destroy" "$TOOL" info pkcs11 "$tok" 3
	[ "$(field state)" = destroyed-compromised ] && [ -n "$(field destroy)" ] && [ -n "$(field compromise)" ] &&
		ok "pkcs11: v3 destroyed-compromised, dated, no KCV left" ||
		ko "pkcs11: info v3: $(tr '\n' ' ' <"$W/out")"
	refuse "pkcs11: active key cannot be destroyed" EPERM "$TOOL" destroy pkcs11 "$tok" 1
	# dates restrict even an active key
	check "pkcs11: create v4 active, activation in an hour" \
		"$TOOL" create pkcs11 "$tok" 4 32 --activate --activation=$((now + 3600))
	refuse "pkcs11: key before its activation date refused" EKEYREJECTED "$TOOL" fetch pkcs11 "$tok" 4 32
	check "pkcs11: create v5 active, protect stop passed" \
		"$TOOL" create pkcs11 "$tok" 5 32 --activate --protect-stop=$((now - 10))
	refuse "pkcs11: key past its protect stop date refused" EKEYREJECTED "$TOOL" fetch pkcs11 "$tok" 5 32

	# secrets: wrong PIN, loose PIN file
	printf 'wrong\n' >"$W/hsm/badpin"
	chmod 600 "$W/hsm/badpin"
	FCTL_PKCS11_PIN_FILE=$W/hsm/badpin refuse "pkcs11: wrong PIN refused" EACCES \
		"$TOOL" fetch pkcs11 "$tok" 1 32
	cp "$W/hsm/pin" "$W/hsm/loosepin"
	chmod 644 "$W/hsm/loosepin"
	FCTL_PKCS11_PIN_FILE=$W/hsm/loosepin refuse "pkcs11: PIN file readable by others refused" EPERM \
		"$TOOL" fetch pkcs11 "$tok" 1 32
	FCTL_PKCS11_MODULE=/nonexistent.so refuse "pkcs11: missing module" ENOENT \
		"$TOOL" fetch pkcs11 "$tok" 1 32
}

# ---------------------------------------------------------------- KMIP: PyKMIP
pki() {
	local d=$W/pki
	mkdir -p "$d"
	(
		cd "$d" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
			-subj /CN=fabricctl-test-ca -addext basicConstraints=critical,CA:TRUE \
			-addext keyUsage=critical,keyCertSign,cRLSign
		openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1
		printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
			-out server.pem -days 2 -extfile server.ext
		openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=keymgr
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
			-out client.pem -days 2 -extfile client.ext
		# a certificate from another CA: the server must not be trusted with it
		openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 2 \
			-subj /CN=other-ca
		chmod 600 ./*.key
	) >"$W/pki.log" 2>&1
}

start_pykmip() {
	local port=$1
	mkdir -p "$W/kmip/policies"
	cat >"$W/kmip/server.conf" <<EOF
[server]
hostname=127.0.0.1
port=$port
certificate_path=$W/pki/server.pem
key_path=$W/pki/server.key
ca_path=$W/pki/ca.pem
auth_suite=TLS1.2
policy_path=$W/kmip/policies
enable_tls_client_auth=True
logging_level=DEBUG
database_path=$W/kmip/pykmip.db
EOF
	/usr/bin/pykmip-server -f "$W/kmip/server.conf" -l "$W/kmip/server.log" \
		>"$W/kmip/stdout" 2>&1 &
	kmip_pid=$!
	pids+=("$kmip_pid")
	for _ in $(seq 1 100); do
		if $PY -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
			return 0
		fi
		kill -0 "$kmip_pid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

stop_pid() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# oracle NAME KCV: PyKMIP's own client (KMIP 1.2) reads the object named NAME, and
# Python's AES computes its KCV; true when it equals KCV
oracle() {
	$PY - "$W/kmip/client.conf" "$1" "$2" >"$W/oracle" 2>&1 <<'EOF'
import sys
from kmip.pie.client import ProxyKmipClient
from kmip.core import enums
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
with ProxyKmipClient(config="client", config_file=sys.argv[1]) as c:
    uid = c.locate(attributes=[c.attribute_factory.create_attribute(
        enums.AttributeType.NAME, sys.argv[2])])[0]
    key = c.get(uid).value
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    kcv = (enc.update(bytes(16)) + enc.finalize())[:3].hex()
    sys.exit(0 if kcv == sys.argv[3] else 1)
EOF
}

# requests in the server's debug log (hex of each request after its 8-byte header)
# holding the hex string $1
wire_count() { grep -c "Request encoding: b'[0-9a-f]*$1" "$W/kmip/server.log"; }

# kmip_life_cycle LABEL NAME: versions 2..4 of NAME through every state, with
# NAME v1 active already: pre-active refused until activated, deactivated
# (Revoke, cessation) and compromised (Revoke, key compromise) refused and
# reported so, an active key not destroyable, a destroyed one gone, and a
# planned deactivation date that has passed refused and read back (PyKMIP keeps
# it only in our Application Specific Information)
kmip_life_cycle() {
	local l=$1 n=$2 now
	now=$(date +%s)
	pre_active_to_deactivated "$l" kmip "$n" # deactivate: Revoke, cessation of operation
	check "$l: info v2" "$TOOL" info kmip "$n" 2
	[ "$(field state)" = deactivated ] && ok "$l: v2 reported deactivated" ||
		ko "$l: info v2: $(tr '\n' ' ' <"$W/out")"
	check "$l: create v3 active" "$TOOL" create kmip "$n" 3 32 --activate
	check "$l: compromise v3 (Revoke, key compromise)" "$TOOL" compromise kmip "$n" 3
	refuse "$l: compromised key refused for a new SA" EKEYREJECTED "$TOOL" fetch kmip "$n" 3 32
	check "$l: info v3" "$TOOL" info kmip "$n" 3
	[ "$(field state)" = compromised ] && ok "$l: v3 reported compromised" ||
		ko "$l: info v3: $(tr '\n' ' ' <"$W/out")"
	refuse "$l: active key cannot be destroyed" EACCES "$TOOL" destroy kmip "$n" 1
	check "$l: destroy deactivated v2" "$TOOL" destroy kmip "$n" 2
	refuse "$l: destroyed v2 is gone" ENOKEY "$TOOL" info kmip "$n" 2
	check "$l: create v4 active, deactivation date passed" \
		"$TOOL" create kmip "$n" 4 32 --activate --deactivation=$((now - 5))
	refuse "$l: active key past its deactivation date refused" EKEYREJECTED "$TOOL" fetch kmip "$n" 4 32
	check "$l: info v4 carries the planned date" "$TOOL" info kmip "$n" 4
	[ "$(field deactivation)" = $((now - 5)) ] && ok "$l: deactivation date read back" ||
		ko "$l: info v4: $(tr '\n' ' ' <"$W/out")"
}

# KMIP 2.0: the same life cycle with attributes in 2.0's layout. Objects are shared
# between versions: a key made with 1.2 is read with 2.0 and the other way round.
kmip20_tests() {
	local kcv1=$1 kcv v2 attrs refs
	# protocol version 2.0 in a request header: Protocol Version Major = 2
	v2=$(wire_count '42006a020000000400000002')
	attrs=$(wire_count '4201250100') # an Attributes structure (2.0 only)
	refs=$(wire_count '42013b0500')  # an Attribute Reference (2.0 only)
	[ "$v2" = 0 ] && [ "$attrs" = 0 ] && [ "$refs" = 0 ] &&
		ok "kmip 2.0: no 2.0 request on the wire before (the 1.2 run used 1.x layout)" ||
		ko "kmip 2.0: 2.0 requests before the 2.0 run: version $v2 attributes $attrs references $refs"
	export FCTL_KMIP_VERSION=2.0
	check "kmip 2.0: create sak20 v1 (256-bit, active)" "$TOOL" create kmip sak20 1 32 --activate
	kcv=$(field kcv)
	check "kmip 2.0: info sak20 v1" "$TOOL" info kmip sak20 1
	[ "$(field state)" = active ] && [ "$(field len)" = 32 ] && [ -n "$(field initial)" ] &&
		[ -n "$kcv" ] && [ "$(field kcv)" = "$kcv" ] &&
		ok "kmip 2.0: info says active, 32 bytes, initial date, kcv $kcv" ||
		ko "kmip 2.0: info sak20 v1: $(tr '\n' ' ' <"$W/out")"
	check "kmip 2.0: fetch sak20 v1" "$TOOL" fetch kmip sak20 1 32
	grep -q "kcv=$kcv" "$W/out" && ok "kmip 2.0: fetched key has the created KCV" ||
		ko "kmip 2.0: KCV differs: $(cat "$W/out")"
	if oracle sak20.v1 "$kcv"; then
		ok "kmip 2.0: PyKMIP's own 1.2 client agrees on the KCV of the 2.0-created key"
	else
		ko "kmip 2.0: oracle: $(tail -3 "$W/oracle")"
	fi
	check "kmip 2.0: fetch sak v1, created with 1.2" "$TOOL" fetch kmip sak 1 32
	grep -q "kcv=$kcv1" "$W/out" && ok "kmip 2.0: the 1.2-created key reads the same (kcv $kcv1)" ||
		ko "kmip 2.0: sak v1 over 2.0: $(cat "$W/out")"
	FCTL_KMIP_VERSION=1.2 check "kmip 1.2: fetch sak20 v1, created with 2.0" "$TOOL" fetch kmip sak20 1 32
	grep -q "kcv=$kcv" "$W/out" && ok "kmip 1.2: the 2.0-created key reads the same" ||
		ko "kmip 1.2: sak20 v1: $(cat "$W/out")"
	refuse "kmip 2.0: wrong length refused" EINVAL "$TOOL" fetch kmip sak20 1 16
	refuse "kmip 2.0: unknown version fails closed" ENOKEY "$TOOL" fetch kmip sak20 9 32
	kmip_life_cycle "kmip 2.0" sak20
	FCTL_KMIP_VERSION=2.1 refuse "kmip: protocol version 2.1 refused" EINVAL "$TOOL" fetch kmip sak20 1 32
	FCTL_KMIP_VERSION=3 refuse "kmip: protocol version 3 refused" EINVAL "$TOOL" fetch kmip sak20 1 32
	unset FCTL_KMIP_VERSION
	# the server received 2.0 requests in 2.0's layout
	v2=$(wire_count '42006a020000000400000002')
	attrs=$(wire_count '4201250100')
	refs=$(wire_count '42013b0500')
	[ "$v2" -ge 20 ] && [ "$attrs" -ge 10 ] && [ "$refs" -ge 5 ] &&
		ok "kmip 2.0: the server received $v2 requests of version 2.0 ($attrs with Attributes, $refs with Attribute References)" ||
		ko "kmip 2.0: on the wire: version 2.0 $v2, Attributes $attrs, Attribute References $refs"
}

kmip_tests() {
	local port kcv now t0 t1

	if [ ! -x /usr/bin/pykmip-server ]; then
		ko "pykmip installed (/usr/bin/pykmip-server; apt-get install python3-pykmip)"
		return
	fi
	if ! pki || [ ! -s "$W/pki/client.pem" ]; then
		ko "kmip: test PKI with openssl: $(tail -3 "$W/pki.log")"
		return
	fi
	port=$(free_port)
	if start_pykmip "$port"; then
		ok "kmip: PyKMIP started on 127.0.0.1:$port (pid $kmip_pid, TLS1.2, client auth)"
	else
		ko "kmip: PyKMIP did not start: $(tail -5 "$W/kmip/stdout" "$W/kmip/server.log" 2>/dev/null)"
		return
	fi
	export FCTL_KMIP_SERVER=127.0.0.1:$port FCTL_KMIP_CA=$W/pki/ca.pem \
		FCTL_KMIP_CERT=$W/pki/client.pem FCTL_KMIP_KEY=$W/pki/client.key FCTL_KMIP_TIMEOUT_MS=3000

	check "kmip: create sak v1 (256-bit, active) on the server" "$TOOL" create kmip sak 1 32 --activate
	kcv=$(field kcv)
	check "kmip: info sak v1" "$TOOL" info kmip sak 1
	[ "$(field state)" = active ] && [ "$(field len)" = 32 ] && [ -n "$(field initial)" ] &&
		[ "$(field kcv)" = "$kcv" ] && ok "kmip: info says active, 32 bytes, initial date, kcv $kcv" ||
		ko "kmip: info v1: $(tr '\n' ' ' <"$W/out")"
	check "kmip: fetch sak v1" "$TOOL" fetch kmip sak 1 32
	grep -q "kcv=$kcv" "$W/out" && ok "kmip: fetched key has the same KCV" || ko "kmip: KCV differs"
	# an independent oracle: PyKMIP's own client reads the key, Python computes the KCV
	cat >"$W/kmip/client.conf" <<EOF
[client]
host=127.0.0.1
port=$port
certfile=$W/pki/client.pem
keyfile=$W/pki/client.key
ca_certs=$W/pki/ca.pem
ssl_version=PROTOCOL_TLSv1_2
EOF
	if oracle sak.v1 "$kcv"; then
		ok "kmip: PyKMIP's own client and Python's AES agree on the KCV"
	else
		ko "kmip: oracle: $(tail -3 "$W/oracle")"
	fi

	refuse "kmip: wrong length (v1 is 32 bytes, 16 asked)" EINVAL "$TOOL" fetch kmip sak 1 16
	refuse "kmip: unknown version 9 fails closed" ENOKEY "$TOOL" fetch kmip sak 9 32
	refuse "kmip: version 0 fails closed" ENOKEY "$TOOL" fetch kmip sak 0 32
	refuse "kmip: create over an existing version" EEXIST "$TOOL" create kmip sak 1 32
	refuse "kmip: malformed name" EINVAL "$TOOL" fetch kmip 'sak;x' 1 32

	kmip_life_cycle kmip sak

	kmip20_tests "$kcv"

	# TLS: a client certificate from another CA, a CA that did not sign the server
	FCTL_KMIP_CERT=$W/pki/other.pem FCTL_KMIP_KEY=$W/pki/other.key \
		refuse "kmip: client certificate of another CA refused" EACCES "$TOOL" fetch kmip sak 1 32
	FCTL_KMIP_CA=$W/pki/other.pem refuse "kmip: server not signed by our CA refused" EACCES \
		"$TOOL" fetch kmip sak 1 32
	chmod 644 "$W/pki/client.key"
	refuse "kmip: client key readable by others refused" EPERM "$TOOL" fetch kmip sak 1 32
	chmod 600 "$W/pki/client.key"

	# key bytes never in logs: the server's debug log and our stderr hold no key, in hex
	# or base64 (the oracle above had the key; compare against it)
	if $PY - "$W/kmip/client.conf" "$W" >"$W/leak" 2>&1 <<'EOF'; then
import sys, glob, base64, binascii
from kmip.pie.client import ProxyKmipClient
from kmip.core import enums
w = sys.argv[2]
with ProxyKmipClient(config="client", config_file=sys.argv[1]) as c:
    keys = []
    for n in ("sak.v1", "sak.v3", "sak.v4"):
        for uid in c.locate(attributes=[c.attribute_factory.create_attribute(
                enums.AttributeType.NAME, n)]):
            keys.append(c.get(uid).value)
pats = []
for k in keys:
    pats += [k, binascii.hexlify(k), binascii.hexlify(k).upper(), base64.b64encode(k)]
bad = []
for f in glob.glob(w + "/*") + glob.glob(w + "/kmip/stdout"):
    try:
        data = open(f, "rb").read()
    except (IsADirectoryError, PermissionError):
        continue
    for p in pats:
        if p in data:
            bad.append(f)
sys.exit(1 if bad else 0)
EOF
		ok "kmip: no key bytes in our stdout/stderr captures"
	else
		ko "kmip: key bytes found: $(cat "$W/leak")"
	fi

	# KMS stopped: refused fast; a server that accepts and never answers: bounded
	stop_pid "$kmip_pid"
	refuse "kmip: server stopped -> connection refused" ECONNREFUSED "$TOOL" fetch kmip sak 1 32
	port=$(free_port)
	$PY -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(8)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
" >/dev/null 2>&1 &
	local tar_pid=$!
	pids+=("$tar_pid")
	sleep 0.5
	t0=$(date +%s%N)
	FCTL_KMIP_SERVER=127.0.0.1:$port FCTL_KMIP_TIMEOUT_MS=1500 \
		refuse "kmip: server accepts and never answers -> timeout" ETIMEDOUT "$TOOL" fetch kmip sak 1 32
	t1=$(date +%s%N)
	local ms=$(((t1 - t0) / 1000000))
	[ "$ms" -lt 4000 ] && ok "kmip: the silent server cost ${ms} ms (limit 1500 ms per exchange)" ||
		ko "kmip: the silent server cost ${ms} ms"
	stop_pid "$tar_pid"
}

pkcs11_tests
kmip_tests
# every stderr of kms_tool, kept in allerr: no 32-digit hex string (a key) anywhere
if grep -Eq '[0-9a-fA-F]{32}' "$W/allerr" 2>/dev/null; then
	ko "stderr of every call holds no hex key: $(grep -Eo '[0-9a-fA-F]{32}' "$W/allerr" | head -1)"
else
	ok "stderr of every call ($(wc -l <"$W/allerr") lines) holds no hex key material"
fi
echo "kms: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
