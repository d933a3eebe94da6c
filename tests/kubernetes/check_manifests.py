#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Structural checks of examples/kubernetes/ that need no API server (manifests.sh).

usage: check_manifests.py DIR AGENT_HELP_FILE
Prints one line per problem and exits 1 when there is any; else "N objects, M checks".
"""
import glob
import os
import re
import sys

import yaml

d, help_file = sys.argv[1], sys.argv[2]
objs = []
for f in sorted(glob.glob(os.path.join(d, "*.yaml"))):
    for o in yaml.safe_load_all(open(f)):
        if o is not None and "kind" in o:
            objs.append((os.path.basename(f), o))
problems, checks = [], 0


def need(cond, what):
    global checks
    checks += 1
    if not cond:
        problems.append(what)


def by(kind):
    return {o["metadata"]["name"]: o for _, o in objs if o["kind"] == kind}


for f, o in objs:
    need(o.get("apiVersion") and o.get("metadata", {}).get("name"), f"{f}: {o.get('kind')}: apiVersion and metadata.name")
    if o["kind"] != "Namespace":
        need(o["metadata"].get("namespace") == "fabricctl", f"{f}: {o['kind']} {o['metadata']['name']}: namespace fabricctl")

ds = by("DaemonSet").get("fabricctl-agent")
need(ds is not None, "no DaemonSet fabricctl-agent")
if ds:
    spec = ds["spec"]["template"]["spec"]
    sel = ds["spec"]["selector"]["matchLabels"]
    labels = ds["spec"]["template"]["metadata"]["labels"]
    need(all(labels.get(k) == v for k, v in sel.items()), "selector does not match the template's labels")
    need(spec.get("hostNetwork") is True, "hostNetwork must be true (the host's links)")
    need(spec.get("dnsPolicy") == "ClusterFirstWithHostNet", "dnsPolicy ClusterFirstWithHostNet with hostNetwork")
    need(spec.get("automountServiceAccountToken") is False, "no service account token: the agent never calls the API")
    need(spec.get("serviceAccountName") in by("ServiceAccount"), "serviceAccountName names no ServiceAccount here")
    cs = spec["containers"]
    need(len(cs) == 1, "one container")
    c = cs[0]
    sc = c.get("securityContext", {})
    caps = sc.get("capabilities", {})
    need(caps.get("drop") == ["ALL"], "capabilities: drop ALL")
    need(sorted(caps.get("add", [])) == ["NET_ADMIN", "SETGID", "SETUID"],
         f"capabilities added must be NET_ADMIN, SETUID, SETGID only, not {caps.get('add')}")
    need(sc.get("privileged") is False, "not privileged")
    need(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation false")
    need(sc.get("readOnlyRootFilesystem") is True, "read-only root filesystem")
    need(c.get("resources", {}).get("limits", {}).get("memory") == "64Mi", "memory limit 64Mi (the unit's MemoryMax)")
    rp = c.get("readinessProbe", {}).get("exec", {}).get("command", [])
    need(rp[-2:] == ["status", "-q"] and rp[0].endswith("fabricctl"), "readiness: fabricctl status -q")
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    for m in c.get("volumeMounts", []):
        need(m["name"] in vols, f"mount {m['mountPath']} names no volume {m['name']}")
    for v in vols.values():
        if "configMap" in v:
            need(v["configMap"]["name"] in by("ConfigMap"), f"volume {v['name']}: no ConfigMap {v['configMap']['name']}")
        if "secret" in v:
            need(v["secret"]["secretName"] in by("Secret"), f"volume {v['name']}: no Secret {v['secret']['secretName']}")
            need(v["secret"].get("defaultMode") == 0o400, f"volume {v['name']}: keys mode 0400")
    need(vols.get("state", {}).get("hostPath", {}).get("path") == "/var/lib/fabricctl", "state on the host: /var/lib/fabricctl")
    conf = by("ConfigMap").get("fabricctl-agent-conf", {}).get("data", {}).get("agent.conf", "")
    kv = dict(re.findall(r"^([a-z_]+):\s*(\S+)", conf, re.M))
    opts = set(re.findall(r"--([a-z][a-z-]*)", open(help_file).read()))
    for k in kv:
        need(k.replace("_", "-") in opts, f"agent.conf key {k}: no option --{k.replace('_', '-')} of fabricctl agent")
    pd = kv.get("pull_dir")
    need(pd in mounts and mounts[pd]["name"] == "profile" and "subPath" not in mounts[pd],
         "pull_dir must be the whole profile ConfigMap volume (a subPath is never updated)")
    need(vols.get("profile", {}).get("configMap", {}).get("name") == "fabricctl-profile", "volume profile: ConfigMap fabricctl-profile")
    need(kv.get("pull_file", "profile.yaml") in by("ConfigMap").get("fabricctl-profile", {}).get("data", {}),
         "the ConfigMap fabricctl-profile has no key pull_file names")
    for k in ("cert", "key", "ca"):
        p = kv.get(k, "")
        need(any(p.startswith(mp + "/") and mounts[mp]["name"] == "tls" for mp in mounts), f"agent.conf {k}: not in the tls Secret's mount")
    # the metrics endpoint is where Prometheus can reach it: not on loopback, bound by
    # --metrics to the node's address (status.hostIP), the port the annotations, the named
    # container port and the PodMonitor give
    need("metrics" not in kv or not kv["metrics"].startswith(("127.", "localhost", "[::1]")),
         f"agent.conf metrics {kv.get('metrics')}: loopback, which nothing can scrape")
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in c.get("env", [])}
    args = c.get("args", [])
    m = args[args.index("--metrics") + 1] if "--metrics" in args[:-1] else ""
    mm = re.fullmatch(r"\$\(([A-Z_]+)\):([0-9]+)", m)
    need(mm is not None and env.get(mm.group(1)) == "status.hostIP",
         f"args --metrics {m!r}: not $(VAR):PORT with VAR from status.hostIP")
    port = mm.group(2) if mm else None
    ann = ds["spec"]["template"]["metadata"].get("annotations", {})
    need(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == port,
         f"annotations prometheus.io/scrape, port: {ann}, the endpoint's port is {port}")
    cports = {p.get("name"): str(p.get("containerPort")) for p in c.get("ports", [])}
    need(cports.get("metrics") == port, f"container port 'metrics' {cports.get('metrics')}, the endpoint's {port}")
    for name, pm in by("PodMonitor").items():
        need(all(labels.get(k) == v for k, v in pm["spec"]["selector"]["matchLabels"].items()),
             f"PodMonitor {name}: selects no agent pod")
        need([e.get("port") for e in pm["spec"]["podMetricsEndpoints"]] == ["metrics"],
             f"PodMonitor {name}: not the port named metrics")
    need(len(by("PodMonitor")) == 1, "one PodMonitor (podmonitor.yaml)")
    keys = mounts.get(kv.get("profile_dir", "") + "/keys")
    need(keys is not None and keys["name"] == "keys", "the keys Secret is mounted at profile_dir/keys")

for p in problems:
    print(p)
print(f"{len(objs)} objects, {checks} checks")
sys.exit(1 if problems else 0)
