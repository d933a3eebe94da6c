# SPDX-License-Identifier: MIT
# Checks fabricctl validate --junit output: well-formed (xml.etree), one testcase per
# finding with file= (and line= unless it is about the whole file), failures, errors and
# skipped counted as the root says. usage: junit_check.py FILE [KIND=N]... [lines=1]
# KIND: failure, error, skipped, valid (passing testcases named "valid").
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
want = dict(a.split("=", 1) for a in sys.argv[2:])
assert root.tag == "testsuites", root.tag
cases = list(root.iter("testcase"))
kinds = {"failure": [], "error": [], "skipped": []}
for c in cases:
    assert c.get("file"), "a testcase without file="
    for k in kinds:
        if c.find(k) is not None:
            kinds[k].append(c)
for k, v in kinds.items():
    if k in want:
        assert len(v) == int(want[k]), "%d %s, want %s" % (len(v), k, want[k])
assert int(root.get("failures")) == len(kinds["failure"]), "failures="
assert int(root.get("errors")) == len(kinds["error"]), "errors="
assert int(root.get("skipped")) == len(kinds["skipped"]), "skipped="
assert int(root.get("tests")) == len(cases), "tests="
for c in kinds["failure"] + kinds["skipped"]:
    if want.get("lines") == "1":
        assert int(c.get("line", "0")) > 0, "a finding without line="
    assert c[0].get("message"), "a finding without message="
for c in kinds["error"]:
    assert c.get("line") is None, "an I/O error with a line"
for c in kinds["skipped"]:
    assert c.find("system-out") is not None, "a warning without system-out"
    assert c.find("skipped").get("message").startswith("warning: ")
if "valid" in want:
    n = sum(c.get("name") == "valid" for c in cases)
    assert n == int(want["valid"]), "%d valid testcases" % n
