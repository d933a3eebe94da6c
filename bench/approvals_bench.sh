#!/bin/sh
# SPDX-License-Identifier: MIT
# What approvals cost per apply (docs/approvals.md): the time of `fabricctl approvals` and
# of an unchanged `fabricctl apply` of a host-only profile, with no policy and with a
# 2-of-3 policy (three Ed25519 signatures, or two Ed25519 and one ECDSA P-256, checked), in
# a network namespace of its own (unshare -rn). A loop and date +%s%N: no hyperfine.
# Prints the mean per run in milliseconds and the difference; not a test, asserts nothing.
#
# usage: bench/approvals_bench.sh [FABRICCTL] [ROUNDS]
set -eu
F=${1:-build/fabricctl/fabricctl}
N=${2:-50}
case $F in /*) ;; *) F=$(pwd)/$F ;; esac
if [ "${FCTL_APPROVALS_BENCH_NETNS:-}" != 1 ]; then
	FCTL_APPROVALS_BENCH_NETNS=1 exec unshare -rn sh "$0" "$F" "$N"
fi
T=$(mktemp -d /tmp/fctl-approvals-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
cd "$T"
ip link add eth9 type bridge
printf 'schema: 1\nprofile: { name: bench, version: 1 }\nhosts:\n  - name: h1\n    ports: [{ name: eth9, mac: "52:54:00:fa:01:00", mtu: 1500 }]\n' >p.yaml
for w in alice bob; do ssh-keygen -q -t ed25519 -N '' -C $w -f $w; done
ssh-keygen -q -t ecdsa -b 256 -N '' -C carol -f carol
for w in alice bob carol; do echo "$w@bench $(cut -d' ' -f1,2 $w.pub)"; done >allowed_signers
echo "require: 2 of allowed_signers" >policy.conf
"$F" approve -q --key alice --name alice p.yaml
"$F" approve -q --key bob --name bob p.yaml
"$F" approve -q --ssh-keygen --key carol --name carol p.yaml
H="--host h1 --state-dir $T/sd --audit-log $T/audit.log"
# mean_ms LABEL CMD...: the mean wall time of N runs of CMD, in ms (3 decimals)
mean_ms() {
	label=$1
	shift
	"$@" >/dev/null 2>&1 || { echo "approvals_bench: '$label' failed" >&2; exit 1; }
	t0=$(date +%s%N)
	i=0
	while [ $i -lt "$N" ]; do
		"$@" >/dev/null 2>&1
		i=$((i + 1))
	done
	t1=$(date +%s%N)
	echo $(((t1 - t0) / N / 1000)) | awk -v l="$label" '{ printf "%-44s %9.3f ms\n", l, $1 / 1000 }'
}
echo "approvals_bench: $N runs each, $(nproc) CPUs, $(uname -r)"
export FCTL_APPROVALS_CONF=$T/none.conf
mean_ms "approvals, no policy" "$F" approvals p.yaml
mean_ms "apply (unchanged), no policy" "$F" apply $H p.yaml
export FCTL_APPROVALS_CONF=$T/policy.conf
mean_ms "approvals, 2 of 3 (3 signatures checked)" "$F" approvals p.yaml
mean_ms "apply (unchanged), 2 of 3" "$F" apply $H p.yaml
