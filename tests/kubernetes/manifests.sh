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
#   - the Kubernetes API's own OpenAPI schemas, offline: every object validated with npm's
#     kubernetes-models (the PodMonitor with @kubernetes-models/prometheus-operator's, made
#     from the operator's CRD), versions pinned in tests/kubernetes/models/ and installed by
#     scripts/deps.sh; unknown fields refused too (validate_models.mjs: the schemas leave out
#     additionalProperties); copies with a misspelt field and with a wrong type must fail
# Not checked here: the API server's admission, a kubelet's behaviour (see
# docs/kubernetes.md). Usage: tests/kubernetes/manifests.sh FABRICCTL SOURCE_DIR
set -u
PY=${FCTL_PYTHON:-/usr/bin/python3} # Debian's (python3-yaml): a pyenv shim first in PATH costs ~0.6 s of CPU a start
F=$1
SRC=$2
K=$SRC/examples/kubernetes
T=$(mktemp -d /tmp/fctl-k8s.XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT INT TERM
np=0 nf=0
ok() { np=$((np + 1)); echo "PASS: $1"; }
no() { nf=$((nf + 1)); echo "FAIL: $1${2:+: $2}"; }
for t in yamllint kubectl "$PY"; do
	command -v $t >/dev/null || { no "tools" "$t is missing (scripts/deps.sh)"; exit 1; }
done

out=$(yamllint -f parsable -d '{extends: default, rules: {line-length: {max: 100}, braces: {max-spaces-inside: 1}}}' "$K" 2>&1)
[ -z "$out" ] && ok yamllint || no yamllint "$out"

KUBECONFIG=$T/no-cluster kubectl create configmap fabricctl-profile -n fabricctl \
	--from-file=profile.yaml="$K/profile.yaml" --dry-run=client -o yaml >"$T/cm.yaml" 2>"$T/err" &&
	ok kubectl-create-configmap-offline || no kubectl-create-configmap-offline "$(cat "$T/err")"
"$PY" - "$K/configmap.yaml" "$T/cm.yaml" <<'PY' && ok configmap-equals-kubectl || no configmap-equals-kubectl
import sys, yaml
ours = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d["metadata"]["name"] == "fabricctl-profile"][0]
theirs = yaml.safe_load(open(sys.argv[2]))
sys.exit(0 if ours["data"] == theirs["data"] and ours["metadata"]["namespace"] ==
         theirs["metadata"]["namespace"] else 1)
PY

"$F" help agent >"$T/agent-help" 2>&1 || no agent-help
out=$("$PY" "$SRC/tests/kubernetes/check_manifests.py" "$K" "$T/agent-help" 2>&1)
[ $? -eq 0 ] && ok "check_manifests ($(echo "$out" | tail -1))" || no check_manifests "$out"
# the checker can fail: a DaemonSet with an extra capability is refused
mkdir "$T/bad"
cp "$K"/*.yaml "$T/bad/"
sed -i 's/add: \["NET_ADMIN", "SETUID", "SETGID"\]/add: ["NET_ADMIN", "SETUID", "SETGID", "SYS_ADMIN"]/' "$T/bad/daemonset.yaml"
"$PY" "$SRC/tests/kubernetes/check_manifests.py" "$T/bad" "$T/agent-help" >"$T/out" 2>&1 &&
	no checker-refuses-sys-admin || { grep -q SYS_ADMIN "$T/out" && ok checker-refuses-sys-admin ||
		no checker-refuses-sys-admin "$(cat "$T/out")"; }

# --- the Kubernetes API's own OpenAPI schemas, offline: npm's kubernetes-models (and the
# prometheus-operator's models for its CRDs), pinned by tests/kubernetes/models/package-lock.json
# and installed by scripts/deps.sh into $FCTL_K8S_MODELS (default /var/cache/fabricctl/k8s-models)
M=${FCTL_K8S_MODELS:-/var/cache/fabricctl/k8s-models}
if ! command -v node >/dev/null; then
	no schemas "node is missing (scripts/deps.sh installs nodejs and npm)"
elif [ ! -d "$M/node_modules/kubernetes-models" ] ||
	! cmp -s "$SRC/tests/kubernetes/models/package-lock.json" "$M/package-lock.json"; then
	no schemas "$M does not hold the pinned kubernetes-models (run scripts/deps.sh)"
else
	# every object of every file, as JSON for node ("FILE#N": the Nth document); a file of no
	# Kubernetes object (profile.yaml, the fabricctl profile the ConfigMap carries) is named
	"$PY" - "$K" "$T/objects.json" "$T/mutants.json" <<'PY'
import glob, json, os, sys, yaml
objs = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.yaml"))):
    docs = [d for d in yaml.safe_load_all(open(f)) if d is not None]
    if not any(isinstance(d, dict) and "apiVersion" in d and "kind" in d for d in docs):
        print(f"{os.path.basename(f)}: no Kubernetes object (a fabricctl profile: fabricctl validate below)")
        continue
    for i, d in enumerate(docs):
        objs.append({"where": f"{os.path.basename(f)}#{i + 1}", "object": d})
json.dump(objs, open(sys.argv[2], "w"), default=str)
# copies that must fail: a misspelt field and a wrong type, in the DaemonSet and the PodMonitor
def find(kind):
    return json.loads(json.dumps(next(o["object"] for o in objs if o["object"]["kind"] == kind), default=str))
mut = []
d = find("DaemonSet"); p = d["spec"]["template"]["spec"]; p["hostNetwrok"] = p.pop("hostNetwork")
mut.append({"where": "daemonset.yaml, hostNetwork misspelt hostNetwrok", "object": d})
d = find("DaemonSet"); d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "9443"
mut.append({"where": "daemonset.yaml, containerPort the string \"9443\"", "object": d})
d = find("PodMonitor"); e = d["spec"]["podMetricsEndpoints"][0]; e["intervall"] = e.pop("interval")
mut.append({"where": "podmonitor.yaml, interval misspelt intervall", "object": d})
d = find("PodMonitor"); d["spec"]["selector"]["matchLabels"] = ["app.kubernetes.io/name"]
mut.append({"where": "podmonitor.yaml, matchLabels a list", "object": d})
json.dump(mut, open(sys.argv[3], "w"))
PY
	node "$SRC/tests/kubernetes/validate_models.mjs" "$M" "$T/objects.json" >"$T/schema.out" 2>&1
	rc=$?
	while IFS= read -r l; do
		case $l in
		"PASS "*) ok "schema: ${l#PASS }" ;;
		"FAIL "*) no "schema: ${l#FAIL }" ;;
		# a kind no installed package models: said, never a pass (check_manifests.py above
		# is then its only check)
		"NOSCHEMA "*) echo "NOT VALIDATED: ${l#NOSCHEMA } has no schema in the installed packages: the structure check alone covers it" ;;
		esac
	done <"$T/schema.out"
	[ $rc -le 1 ] || [ $rc -eq 3 ] || no "schema: validate_models.mjs ran" "exit $rc: $(tail -c 300 "$T/schema.out")"
	grep -qE '^(PASS|FAIL) ' "$T/schema.out" || no "schema: validate_models.mjs validated nothing" "$(tail -c 300 "$T/schema.out")"
	# the validator can fail: each copy must be refused by the schema
	node "$SRC/tests/kubernetes/validate_models.mjs" "$M" "$T/mutants.json" >"$T/mutants.out" 2>&1
	while IFS= read -r l; do
		case $l in
		"FAIL "*) ok "schema refuses ${l#FAIL }" ;;
		"PASS "*) no "schema refuses ${l#PASS }" "ACCEPTED" ;;
		"NOSCHEMA "*) echo "NOT VALIDATED: ${l#NOSCHEMA }" ;;
		esac
	done <"$T/mutants.out"
	[ "$(grep -c '^FAIL ' "$T/mutants.out")" -ge 2 ] ||
		no "schema: the misspelt field and the wrong type are refused" "$(head -c 400 "$T/mutants.out")"
fi

mkdir -p "$T/p/keys"
cp "$K/profile.yaml" "$T/p/"
( umask 077; od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$T/p/keys/pod-a.key" )
"$F" validate -q "$T/p/profile.yaml" && ok profile-validates || no profile-validates
echo "manifests: $np passed, $nf failed"
[ "$nf" -eq 0 ]
