#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The profile's JSON Schema (profiles/profile.schema.json, installed as
# /usr/share/fabricctl/profile.schema.json) against fabricctl validate:
#   1. the schema is a valid draft 2020-12 schema;
#   2. every shipped profile fabricctl validate accepts validates against it
#      (profiles/, examples/ but examples/invalid, tests/lab/profiles/ but the
#      ones meant invalid, tests/data/good);
#   3. profiles that break a rule a schema can say are refused by both.
# The YAML is read as fabricctl reads it (docs/profile.md "Values"): only true/false
# are booleans (`offload: off` is the name "off"), integers are unquoted decimal or 0x
# hex, no anchors, aliases or duplicate keys; and again as a YAML 1.1 reader reads it
# (PyYAML's SafeLoader, as Ansible and go-yaml v2 do: `off` is the boolean false there),
# so a shipped profile means the same to the tools users load it with.
# Usage: check_schema.py FABRICCTL SOURCE_DIR. Prints PASS/FAIL lines and
# "schema: N passed, M failed"; exit 0 when all pass.
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema
import yaml


class ProfileLoader(yaml.SafeLoader):
    """YAML as fabricctl reads it."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("aliases are refused (alias)")
        event = self.peek_event()
        if getattr(event, "anchor", None):
            raise yaml.YAMLError("anchors are refused (alias)")
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        seen = set()
        for k, _ in node.value:
            if k.value in seen:
                raise yaml.YAMLError("duplicate key %r (duplicate-key)" % k.value)
            seen.add(k.value)
        return super().construct_mapping(node, deep)


ProfileLoader.yaml_implicit_resolvers = {}
for tag, regexp, first in (
    ("tag:yaml.org,2002:bool", r"^(?:true|false)$", "tf"),
    ("tag:yaml.org,2002:int", r"^(?:[0-9]+|0[xX][0-9a-fA-F]+)$", "0123456789"),
    ("tag:yaml.org,2002:float", r"^(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$|^[0-9]+[eE][-+]?[0-9]+$",
     "0123456789."),
    ("tag:yaml.org,2002:null", r"^(?:~|null|)$", ["~", "n", ""]),
):
    ProfileLoader.add_implicit_resolver(tag, re.compile(regexp), list(first))


def construct_int(loader, node):
    v = loader.construct_scalar(node)
    return int(v, 16) if v[:2] in ("0x", "0X") else int(v, 10)


ProfileLoader.add_constructor("tag:yaml.org,2002:int", construct_int)

PASS = FAIL = 0


def result(ok, name, why=""):
    global PASS, FAIL
    if ok:
        PASS += 1
        print("PASS " + name)
    else:
        FAIL += 1
        print("FAIL " + name + (": " + why if why else ""))


def schema_errors(validator, path, loader=ProfileLoader):
    try:
        with open(path, "rb") as f:
            doc = yaml.load(f.read().decode("utf-8"), Loader=loader)
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        return ["not read: %s" % str(e).splitlines()[0]]
    return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(root)", e.message)
            for e in validator.iter_errors(doc)]


def fabricctl_valid(fabricctl, path):
    return subprocess.run([fabricctl, "validate", "-q", path]).returncode == 0


# Each breaks one rule of docs/profile.md that the schema states; fabricctl refuses all.
BASE = """schema: 1
profile:
  name: bad
  version: 1
macsec:
  p:
    replay_protect: true
    replay_window: 0
    key: { backend: file, id: keys/p.key }
%s
hosts:
  - name: h1
    ports: [{ name: eth0, mac: "52:54:00:00:00:01" }]
  - name: h2
    ports: [{ name: eth0, mac: "52:54:00:00:00:02" }]
links:
  - { a: "h1:eth0", b: "h2:eth0", macsec: p, vlans: [{ id: %s }] }
"""
INVALID = {
    "icv-range": (BASE % ("    icv_len: 20", "100")),
    "vlan-id-range": (BASE % ("", "4095")),
    "quoted-number": (BASE % ("    port: \"1\"", "100")),
    "yes-is-not-a-boolean": (BASE % ("    encrypt: yes", "100")),
    "unknown-key": (BASE % ("    ciper: gcm-aes-128", "100")),
    "bad-cipher": (BASE % ("    cipher: gcm-aes-512", "100")),
    "sci-flags": (BASE % ("    scb: true", "100")),
    "integrity-only-must-secure": (BASE % ("    encrypt: false", "100")),
    "pn-threshold-32-bit": (BASE % ("    pn_rekey_threshold: 0x100000000", "100")),
    "key-id-absolute": (BASE.replace("keys/p.key", "/etc/p.key") % ("", "100")),
    "kms-key-without-version": (BASE.replace("backend: file, id: keys/p.key",
                                             "backend: kmip, id: p") % ("", "100")),
    "schema-version": (BASE.replace("schema: 1", "schema: 2") % ("", "100")),
    "speed-without-unit": (BASE.replace('name: eth0, mac: "52:54:00:00:00:01"',
                                        'name: eth0, mac: "52:54:00:00:00:01", speed: "400"') %
                           ("", "100")),
    # MKA (docs/mka.md): exactly one of key and mka, gcm-aes-128 only, a CKN of 1..32 bytes
    "key-and-mka": (BASE % ("    mka: { cak: { backend: file, id: keys/c.key }, ckn: \"00\" }",
                            "100")),
    "mka-cipher": (BASE.replace("    key: { backend: file, id: keys/p.key }\n", "") %
                   ("    cipher: gcm-aes-256\n"
                    "    mka: { cak: { backend: file, id: keys/c.key }, ckn: \"00\" }", "100")),
    "ckn-length": (BASE.replace("    key: { backend: file, id: keys/p.key }\n", "") %
                   ("    mka: { cak: { backend: file, id: keys/c.key }, ckn: \"001\" }", "100")),
}


def main():
    fabricctl, src = sys.argv[1], sys.argv[2]
    with open(os.path.join(src, "profiles", "profile.schema.json")) as f:
        schema = json.load(f)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        result(True, "schema-is-draft-2020-12")
    except jsonschema.SchemaError as e:
        result(False, "schema-is-draft-2020-12", e.message)
        return
    v = jsonschema.Draft202012Validator(schema)

    shipped = []
    for pat in ("profiles/*.yaml", "examples/*/*.yaml", "examples/*.yaml",
                "tests/lab/profiles/*.yaml", "tests/data/good/*.yaml"):
        shipped += sorted(glob.glob(os.path.join(src, pat)))
    # examples/kubernetes/ holds manifests (tests/kubernetes checks them) and one profile
    shipped = [p for p in shipped if "/examples/invalid/" not in p and
               not re.search(r"invalid", os.path.basename(p)) and
               ("/examples/kubernetes/" not in p or os.path.basename(p) == "profile.yaml")]
    for p in shipped:
        name = "shipped " + os.path.relpath(p, src)
        if not fabricctl_valid(fabricctl, p):
            result(False, name, "fabricctl validate refuses it")
            continue
        errs = schema_errors(v, p)
        result(not errs, name, "; ".join(errs[:3]))
        errs = schema_errors(v, p, yaml.SafeLoader)
        result(not errs, name + " (YAML 1.1)", "; ".join(errs[:3]))

    with tempfile.TemporaryDirectory() as d:
        for name, text in sorted(INVALID.items()):
            path = os.path.join(d, name + ".yaml")
            with open(path, "w") as f:
                f.write(text)
            by_schema = bool(schema_errors(v, path))
            by_fabricctl = not fabricctl_valid(fabricctl, path)
            result(by_schema and by_fabricctl, "invalid " + name,
                   "schema %s, fabricctl %s" % ("refuses" if by_schema else "accepts",
                                                "refuses" if by_fabricctl else "accepts"))
        # a port's line rate as fabricctl reads it (400G, 2.5G, 100M) is valid for both
        for sp in ("400G", "2.5G", "100M"):
            path = os.path.join(d, "speed.yaml")
            with open(path, "w") as f:
                f.write(BASE.replace('name: eth0, mac: "52:54:00:00:00:01"',
                                     'name: eth0, mac: "52:54:00:00:00:01", speed: "%s"' % sp)
                        % ("", "100"))
            errs = schema_errors(v, path)
            result(not errs and fabricctl_valid(fabricctl, path), "speed-%s-valid-by-both" % sp,
                   "; ".join(errs[:3]) or "fabricctl validate refuses it")
        # the control: the same profile without a broken rule passes both
        path = os.path.join(d, "control.yaml")
        with open(path, "w") as f:
            f.write(BASE % ("", "100"))
        errs = schema_errors(v, path)
        result(not errs and fabricctl_valid(fabricctl, path), "control-valid-by-both",
               "; ".join(errs[:3]))
    # offload spelled each way fabricctl takes: the schema accepts it as fabricctl reads it
    # and as a YAML 1.1 reader does, and the spellings fabricctl refuses the schema refuses
    with tempfile.TemporaryDirectory() as d:
        for word, ok in (("none", True), ("off", True), ("false", True), ("phy", True),
                         ("no", False), ("0", False)):
            path = os.path.join(d, "offload-%s.yaml" % word)
            with open(path, "w") as f:
                f.write(BASE % ("    offload: %s" % word, "100"))
            got = (fabricctl_valid(fabricctl, path), not schema_errors(v, path),
                   not schema_errors(v, path, yaml.SafeLoader))
            # YAML 1.1 reads "no" as false too: fabricctl and the schema as fabricctl reads
            # it refuse it, which is what makes a profile mean one thing
            want = (ok, ok, ok or word == "no")
            result(got == want, "offload-" + word,
                   "fabricctl, schema, schema under YAML 1.1: %s, expected %s" % (got, want))
    # shipped invalid examples a schema can judge (the others need references)
    for rel in ("examples/invalid/kernel-rules.yaml", "examples/invalid/typos.yaml",
                "examples/invalid/weak-settings.yaml", "examples/invalid/key-ids.yaml",
                "examples/invalid/alias-bomb.yaml"):
        p = os.path.join(src, rel)
        result(bool(schema_errors(v, p)) and not fabricctl_valid(fabricctl, p),
               "invalid " + rel)


if __name__ == "__main__":
    main()
    print("schema: %d passed, %d failed" % (PASS, FAIL))
    sys.exit(0 if FAIL == 0 and PASS > 0 else 1)
