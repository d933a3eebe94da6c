#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue "Fleet", 3: `plan --fabric` sent every agent the whole fleet's profile (439 KB
# each at 10,000 hosts, 4.4 GB through TLS) and each agent's worker parsed all of it
# to plan its own host. Now plan and diff send each host its part, cut from the
# profile's text: the header, the policies, its own entry, its links and their far
# ends' entries (fctl/profile_slice.h); apply sends the whole profile in both its
# phases (its plan checks what it sends), and its audit record names its digest.
# Here: 4 real agents on 127.0.0.1 (own port, state dir, audit log; one network
# namespace), a chain h0 - h1 - h2 - h3 with a MACsec VLAN on each link. Checked: each
# host's plan and diff from its part equal those from the whole profile
# (--whole-profile), each part smaller than the profile and the whole-profile run
# sending all of it (profile_bytes); apply --fabric --dry-run's plan phase sends all;
# a profile not laid out in blocks (flow sequences) goes whole and still plans; the
# apply phase sends the whole profile and the audit record names the whole profile's
# digest. Prints PASS/FAIL per check, "fabric_slice: N passed, M failed"; root.
set -uo pipefail
NAME=fabric_slice
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent.bash"
N=4

cleanup() {
	fleet_stop
	[ -n "$NETNS" ] && ip netns del "$NETNS" 2>/dev/null
	rm -rf -- "$T"
}

fleet_start "$N"
# the chain, block layout; and the same fleet in flow sequences
"$PY" - "$T" "$N" <<'EOPY'
import sys
t, n = sys.argv[1], int(sys.argv[2])
head = ("# a chain of %d hosts\nschema: 1\nprofile:\n  name: chain\n  version: 3\n"
        "macsec:\n  gcm:\n    cipher: gcm-aes-128\n    replay_protect: true\n"
        "    replay_window: 0\n    key: { backend: file, id: keys/gcm.key }\n" % n)
hosts = ["  - name: h%d\n    ports:\n      - { name: eth0, mac: \"52:54:00:00:%02x:00\" }\n"
         "      - { name: eth1, mac: \"52:54:00:00:%02x:01\" }\n" % (i, i, i) for i in range(n)]
links = ["  - name: h%d-h%d\n    a: h%d:eth1\n    b: h%d:eth0\n    macsec: gcm\n    vlans:\n"
         "      - id: %d\n        addresses: { h%d: 10.9.%d.1/24, h%d: 10.9.%d.2/24 }\n"
         % (i, i + 1, i, i + 1, 200 + i, i, i, i + 1, i) for i in range(n - 1)]
open(t + "/chain.yaml", "w").write(head + "hosts:\n" + "".join(hosts) + "links:\n" + "".join(links))
flow_hosts = ", ".join("{ name: h%d, ports: [{ name: eth0, mac: \"52:54:00:00:%02x:00\" }, "
                       "{ name: eth1, mac: \"52:54:00:00:%02x:01\" }] }" % (i, i, i) for i in range(n))
flow_links = ", ".join("{ name: h%d-h%d, a: \"h%d:eth1\", b: \"h%d:eth0\", macsec: gcm, "
                       "vlans: [{ id: %d }] }" % (i, i + 1, i, i + 1, 200 + i) for i in range(n - 1))
open(t + "/flow.yaml", "w").write(head + "hosts: [" + flow_hosts + "]\nlinks: [" + flow_links + "]\n")
EOPY
"$F" validate "$T/chain.yaml" >/dev/null 2>&1 || die "chain.yaml does not validate: $("$F" validate "$T/chain.yaml" 2>&1 | head -5)"

# run NAME CMD... : the fabric command's JSON in $T/NAME.json (its exit in NAME.rc)
run() {
	local name=$1; shift
	"$F" "$@" --fabric --inventory "$T/inventory" $(tls_opts viewer) --timeout 30s --json -q \
		>"$T/$name.json" 2>"$T/$name.err"
	echo $? >"$T/$name.rc"
}
run plan plan "$T/chain.yaml"
run plan-whole plan --whole-profile "$T/chain.yaml"
run diff diff "$T/chain.yaml"
run diff-whole diff --whole-profile "$T/chain.yaml"
run flow plan "$T/flow.yaml"
run dry apply --dry-run "$T/chain.yaml"

# compare PART WHOLE SIZE: per host, the same agent output, PART sending less than SIZE
# bytes (all hosts answered, exit 0 or 1 for plan/diff), WHOLE sending SIZE
compare() {
	"$PY" - "$T" "$1" "$2" "$3" <<'EOPY'
import json, sys
t, part, whole, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def hosts(name):
    try:
        return {h["host"]: h for h in json.load(open("%s/%s.json" % (t, name)))["hosts"]}
    except (OSError, ValueError, KeyError) as e:
        print("FAIL %s-json %s: %s" % (name, e, open("%s/%s.err" % (t, name)).read()[-300:]))
        sys.exit()
a, b = hosts(part), hosts(whole)
ok = sorted(a) == sorted(b) == ["h0", "h1", "h2", "h3"]
print("%s %s-every-host %s" % ("PASS" if ok else "FAIL", part, sorted(a)))
def same(out):
    """The agent's output, its live-plan findings without their place: each names the line
    of the text it was sent (the host's part or the whole profile), in a file of the agent's."""
    if isinstance(out, dict) and isinstance(out.get("findings"), list):
        out = dict(out, findings=[{k: v for k, v in f.items() if k not in ("file", "line", "column")}
                                  for f in out["findings"]])
    return out
for n in sorted(a):
    x, y = a[n], b.get(n, {})
    good = x["exit"] in (0, 1) and x["exit"] == y.get("exit") and \
        same(x["output"]) == same(y.get("output")) and x["output"] is not None
    print("%s %s-%s-same-as-whole%s" % ("PASS" if good else "FAIL", part, n,
          "" if good else ": %r / %r" % (x, y)))
    good = 0 < x.get("profile_bytes", 0) < size and y.get("profile_bytes") == size
    print("%s %s-%s-part-sent%s" % ("PASS" if good else "FAIL", part, n,
          " (%d of %d bytes)" % (x.get("profile_bytes", 0), size) if good else
          ": %r of %d, whole %r" % (x.get("profile_bytes"), size, y.get("profile_bytes"))))
# the plan is not empty: a part without the host's links would plan less
if part == "plan":
    ops = [len(a[n]["output"].get("ops", [])) if isinstance(a[n]["output"], dict) else -1 for n in sorted(a)]
    print("%s plan-has-ops %s" % ("PASS" if all(o > 0 for o in ops) else "FAIL", ops))
EOPY
}
SIZE=$(stat -c %s "$T/chain.yaml")
count < <(compare plan plan-whole "$SIZE")
count < <(compare diff diff-whole "$SIZE")

# apply --dry-run: its plan phase sends the whole profile; the flow layout goes whole,
# and plans
"$PY" - "$T" "$SIZE" "$(stat -c %s "$T/flow.yaml")" <<'EOPY' | count
import json, sys
t, size, fsize = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dry = json.load(open(t + "/dry.json"))
ok = dry["result"] == "planned" and len(dry["hosts"]) == 4 and all(
    h["phase"] == "plan" and h.get("profile_bytes") == size for h in dry["hosts"])
print("%s dry-run-plan-whole %s" % ("PASS" if ok else "FAIL", [(h["host"], h.get("profile_bytes")) for h in dry["hosts"]]))
flow = json.load(open(t + "/flow.json"))
ok = len(flow["hosts"]) == 4 and all(h["exit"] in (0, 1) and h.get("profile_bytes") == fsize
                                     and isinstance(h["output"], dict) for h in flow["hosts"])
print("%s flow-layout-whole %s" % ("PASS" if ok else "FAIL", [(h["host"], h["exit"], h.get("profile_bytes")) for h in flow["hosts"]]))
EOPY

# the apply phase sends the whole profile: h0's audit record names the file's digest
# (the links need VLAN and MACsec in the kernel, which this machine may lack: the
# record is written whatever the apply's result)
"$F" apply --fabric --partial --inventory "$T/inventory" $(tls_opts operator) --timeout 60s \
	--json -q "$T/chain.yaml" >"$T/apply.json" 2>"$T/apply.err"
want=$(sha256sum "$T/chain.yaml" | cut -d' ' -f1)
if grep -h '"action":"apply"' "$T"/a*/agent.log | grep -F "\"sha256\":\"$want\"" >/dev/null; then
	pass apply-audit-whole-digest
else
	fail apply-audit-whole-digest "no apply record names $want: $(head -c 300 "$T/apply.json")"
fi
"$PY" - "$T/apply.json" "$SIZE" <<'EOPY' | count
import json, sys
doc, size = json.load(open(sys.argv[1])), int(sys.argv[2])
bad = [(h["host"], h["phase"], h.get("profile_bytes")) for h in doc["hosts"]
       if h["phase"] == "apply" and h.get("profile_bytes") != size]
seen = [h for h in doc["hosts"] if h["phase"] == "apply"]
print("%s apply-phase-whole %d hosts %s" % ("PASS" if seen and not bad else "FAIL", len(seen), bad))
EOPY
