#!/bin/sh
# SPDX-License-Identifier: MIT
# The Kubernetes manifests of examples/kubernetes/, checked offline (no cluster, no API
# server): what Debian's tools can check without one.
#   - yamllint (Debian's yamllint): every file, default rules, lines up to 100, '{ a: b }' allowed
#   - kubectl (Debian's kubernetes-client) 'create configmap --dry-run=client -o yaml'
#     runs without a server: the documented command that makes fabricctl-profile from a
#     profile file yields exactly the ConfigMap's data. ('kubectl apply --dry-run=client'
#     does NOT run offline: it needs the server's API discovery, so it is not used.)
#   - check_manifests.py: the objects' structure and the agent's needs (hostNetwork, the
#     capabilities NET_ADMIN, SETUID, SETGID and no other, every mount has its volume,
#     ConfigMaps and Secrets named exist, readiness from 'fabricctl status', the config
#     keys are options of 'fabricctl agent')
#   - fabricctl validate of the profile the ConfigMap carries
# Not checked here: the API server's schema and admission, a kubelet's behaviour (see
# docs/kubernetes.md). Usage: tests/kubernetes/manifests.sh FABRICCTL SOURCE_DIR
set -u
F=$1
SRC=$2
K=$SRC/examples/kubernetes
T=$(mktemp -d /tmp/fctl-k8s.XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT INT TERM
np=0 nf=0
ok() { np=$((np + 1)); echo "PASS: $1"; }
no() { nf=$((nf + 1)); echo "FAIL: $1${2:+: $2}"; }
for t in yamllint kubectl python3; do
	command -v $t >/dev/null || { no "tools" "$t is missing (scripts/deps.sh)"; exit 1; }
done

out=$(yamllint -f parsable -d '{extends: default, rules: {line-length: {max: 100}, braces: {max-spaces-inside: 1}}}' "$K" 2>&1)
[ -z "$out" ] && ok yamllint || no yamllint "$out"

KUBECONFIG=$T/no-cluster kubectl create configmap fabricctl-profile -n fabricctl \
	--from-file=profile.yaml="$K/profile.yaml" --dry-run=client -o yaml >"$T/cm.yaml" 2>"$T/err" &&
	ok kubectl-create-configmap-offline || no kubectl-create-configmap-offline "$(cat "$T/err")"
python3 - "$K/configmap.yaml" "$T/cm.yaml" <<'PY' && ok configmap-equals-kubectl || no configmap-equals-kubectl
import sys, yaml
ours = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d["metadata"]["name"] == "fabricctl-profile"][0]
theirs = yaml.safe_load(open(sys.argv[2]))
sys.exit(0 if ours["data"] == theirs["data"] and ours["metadata"]["namespace"] ==
         theirs["metadata"]["namespace"] else 1)
PY

"$F" help agent >"$T/agent-help" 2>&1 || no agent-help
out=$(python3 "$SRC/tests/kubernetes/check_manifests.py" "$K" "$T/agent-help" 2>&1)
[ $? -eq 0 ] && ok "check_manifests ($(echo "$out" | tail -1))" || no check_manifests "$out"
# the checker can fail: a DaemonSet with an extra capability is refused
mkdir "$T/bad"
cp "$K"/*.yaml "$T/bad/"
sed -i 's/add: \["NET_ADMIN", "SETUID", "SETGID"\]/add: ["NET_ADMIN", "SETUID", "SETGID", "SYS_ADMIN"]/' "$T/bad/daemonset.yaml"
python3 "$SRC/tests/kubernetes/check_manifests.py" "$T/bad" "$T/agent-help" >"$T/out" 2>&1 &&
	no checker-refuses-sys-admin || { grep -q SYS_ADMIN "$T/out" && ok checker-refuses-sys-admin ||
		no checker-refuses-sys-admin "$(cat "$T/out")"; }

mkdir -p "$T/p/keys"
cp "$K/profile.yaml" "$T/p/"
( umask 077; od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$T/p/keys/pod-a.key" )
"$F" validate -q "$T/p/profile.yaml" && ok profile-validates || no profile-validates
echo "manifests: $np passed, $nf failed"
[ "$nf" -eq 0 ]
