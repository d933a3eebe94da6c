#!/bin/bash
# The fabric probe's schedule, measured: tests/lab/fabric_probe.sh's lab (five VMs, six
# MACsec links with soft-RoCE, agents) with its bench section on: one `probe --fabric`
# of every link against the same links probed one by one (`--link NAME`, one run each);
# prints "BENCH fabric probe of 6 links: A s in one run; one by one: B s (ratio B/A)".
# Not a test: the suite's checks run too (and fail as they would), the figure is printed.
#
#   sudo bench/fabric_probe_bench.sh      (FCTL_BUILD_DIR, FCTL_LAB_DIR as for the suite)
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export FCTL_FABRIC_PROBE_BENCH=1
export FCTL_LAB_DIR=${FCTL_LAB_DIR:-/var/tmp/fctl-fabric-probe-bench.$$}
bash "$ROOT/tests/lab/fabric_probe.sh" | grep -E "^BENCH|alone:|^fabric-probe:|^FAIL"
