#!/bin/sh
# SPDX-License-Identifier: MIT
# The key boundary, checked on the binaries (docs/kms.md): only fabricctl-keymgr holds
# the KMS code. A binary holds it when nm finds a symbol of the KMS backends
# (fctl_kmip_*, fctl_pkcs11_*, fctl_kms_*, the TTLV codec) or grep -a finds a string
# only they carry: the PKCS#11 entry point they dlsym, their environment variables,
# the KMIP protocol's own words.
#   kms_boundary.sh absent BINARY    passes when BINARY holds none of it (fabricctl)
#   kms_boundary.sh present BINARY   passes when BINARY holds it (keymgr: the check
#                                    can fail)
set -u
mode=${1:-}
bin=${2:-}
if [ ! -f "$bin" ] || { [ "$mode" != absent ] && [ "$mode" != present ]; }; then
	echo "usage: kms_boundary.sh absent|present BINARY" >&2
	exit 2
fi
command -v nm >/dev/null || { echo "FAIL: nm is not installed" >&2; exit 1; }

syms=$(nm "$bin" 2>/dev/null | grep -E ' (fctl_kmip_|fctl_pkcs11_|fctl_kms_|fctl_ttlv_)|C_GetFunctionList' |
	awk '{print $NF}' | sort -u | head -5 | tr '\n' ' ')
strs=$(grep -a -o -E 'C_GetFunctionList|FCTL_PKCS11_[A-Z_]+|FCTL_KMIP_[A-Z_]+|KMIP batch item' "$bin" |
	sort -u | head -5 | tr '\n' ' ')

if [ "$mode" = absent ]; then
	if [ -n "$syms$strs" ]; then
		echo "FAIL: $bin holds KMS code: symbols [${syms}] strings [${strs}]"
		exit 1
	fi
	echo "PASS: $bin holds no KMS code"
	exit 0
fi
if [ -z "$syms" ] || [ -z "$strs" ]; then
	echo "FAIL: $bin should hold the KMS code: symbols [${syms}] strings [${strs}]"
	exit 1
fi
echo "PASS: $bin holds the KMS code: symbols [${syms}] strings [${strs}]"
