#!/bin/bash
# Installs what is missing, builds, and runs every test of fabricctl:
#   1. build with -Werror, unit tests + CLI tests (ctest)
#   2. ASan+UBSan build, the same tests under the sanitizers
#      (both builds with -DFCTL_TEST_HOOKS=ON: the lab tests inject faults)
#   release-hooks: a Release build without that option carries no test hook
#   package: the Debian package (scripts/package.sh): lintian, dpkg -i, the installed
#            files and units, dpkg --purge (tests/package/package.sh; with the lab, the
#            first step of lab-package, which then runs the pipeline with the package)
#   3. libFuzzer over the profile parser, bounded time (clang)
#   4. the real-kernel lab: qemu VMs with Debian's stock kernel 6.1 and with 6.12
#        smoke (the lab itself), nl_live (netlink layer), apply (apply engine), wiring,
#        probe, agent, the CI pipeline from fresh clones under /root and /tmp, the
#        package in the lab, rotation, metrics, pull, confirm; netlink, apply and
#        rotation on 6.12
# After the build and the lab setup, three lanes run side by side: "host" (1-3 and the ASan
# apply in the lab, then lab suites), "lab" (lab suites from the start) and "spare" (a lab
# suite whenever 20% of the CPU has been idle for 10 s). The lab suites are one queue,
# longest first, that the lanes take from, so the lanes end together; FCTL_TEST_LANES=2
# runs host and lab only, FCTL_TEST_LANES=1 the two one after the other.
# Needs root (packages, qemu lab, netlink). A suite that cannot run FAILS; none
# is skipped. Ends with "test.sh: N passed, M failed" (suites) and exits non-zero
# on any failure.
#
# Environment: FCTL_FUZZ_SECONDS (default 60), FCTL_TEST_ONLY="unit asan release package fuzz lab"
# to run a subset while developing (CI runs everything), FCTL_JOBS (default nproc).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=${FCTL_JOBS:-$(nproc)}
ONLY=${FCTL_TEST_ONLY:-unit asan release package fuzz lab}
PASSED=()
FAILED=()
T0=$(date +%s)
SUITE_LOGS=$(mktemp -d /tmp/fctl-test-suites.XXXXXX)
trap 'rm -rf -- "$SUITE_LOGS"' EXIT
export SUITE_LOGS

log() { printf '\n=== %s (%ds) ===\n' "$*" "$(($(date +%s) - T0))"; }
# Each suite's CPU time (user+sys of everything it started, its qemu guests included) is
# read from a cgroup of its own: cgroup v2 (cpu.stat) or v1's cpuacct. Where neither can be
# made, the column says "-". The table of every suite goes to $FCTL_TEST_TIMES (default
# build/test-times.tsv) and its slowest five are printed at the end.
CG_ROOT=
if [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then
	CG_ROOT=/sys/fs/cgroup
elif [ -w /sys/fs/cgroup/cpuacct ]; then
	CG_ROOT=/sys/fs/cgroup/cpuacct
fi
cg_cpu_seconds() { # cgroup dir: its CPU seconds, one decimal, or "-"
	local d=$1 v
	if [ -f "$d/cpu.stat" ]; then
		v=$(awk '$1 == "usage_usec" { print $2 }' "$d/cpu.stat")
		[ -n "$v" ] && { awk -v u="$v" 'BEGIN { printf "%.1f", u / 1e6 }'; return; }
	elif [ -f "$d/cpuacct.usage" ]; then
		awk '{ printf "%.1f", $1 / 1e9 }' "$d/cpuacct.usage"
		return
	fi
	echo -
}
suite() { # name, timeout seconds, command...
	local name=$1 limit=$2 rc secs t0=$SECONDS cg= cpu=-
	shift 2
	log "$name"
	if [ -n "$CG_ROOT" ]; then
		cg=$CG_ROOT/fctl-test-$$-$name
		mkdir -p "$cg" 2>/dev/null || cg=
	fi
	# into the suite's own log (for the digest at the end), then printed: a file, not a
	# pipe, so a process a suite left behind holding its output cannot hold the run
	bash -c '[ -n "$1" ] && { echo $$ >"$1/cgroup.procs" || echo $$ >"$1/tasks"; } 2>/dev/null
		shift; exec "$@"' suite-cg "$cg" \
		timeout --kill-after=30 "$limit" "$@" >"$SUITE_LOGS/$name.log" 2>&1
	rc=$?
	secs=$((SECONDS - t0))
	if [ -n "$cg" ]; then
		cpu=$(cg_cpu_seconds "$cg")
		rmdir "$cg" 2>/dev/null
	fi
	printf '%s\t%s\t%s\t%s\n' "$name" "$secs" "$cpu" "$rc" >>"$SUITE_LOGS/times.tsv"
	cat "$SUITE_LOGS/$name.log"
	if [ $rc -eq 0 ]; then
		PASSED+=("$name")
		echo "--- suite $name: PASS ($secs s)"
	else
		[ $rc -eq 124 ] && echo "--- suite $name: TIMED OUT after ${limit}s"
		FAILED+=("$name")
		echo "--- suite $name: FAIL (exit $rc, $secs s)"
	fi
	suite_ended "$name" $rc $secs
}
suite_ended() { :; } # name rc seconds: the lanes print it as progress
want() { [[ " $ONLY " == *" $1 "* ]]; }
# the end of a long run is what a CI page shows: each failed suite's FAIL lines again
# there (else its last lines), so the reason is not 10,000 lines up
digest() {
	local n f
	for n in "${FAILED[@]}"; do
		f=$SUITE_LOGS/$n.log
		[ -s "$f" ] || continue
		echo
		echo "--- why $n failed (its FAIL lines, else its last lines):"
		if grep -qE '(^|[^A-Za-z_])FAIL' "$f"; then
			grep -E '(^|[^A-Za-z_])FAIL' "$f" | head -25
		else
			tail -n 15 "$f"
		fi
	done
}
# every suite's wall and CPU seconds, slowest first, into $FCTL_TEST_TIMES; the five
# slowest printed (a contributor adding a suite sees what it costs: docs/testing.md)
times_table() {
	local out=${FCTL_TEST_TIMES:-$ROOT/build/test-times.tsv}
	[ -s "$SUITE_LOGS/times.tsv" ] || return 0
	mkdir -p "$(dirname "$out")"
	{
		printf 'suite\twall_s\tcpu_s\texit\n'
		sort -t "$(printf '\t')" -k2,2nr "$SUITE_LOGS/times.tsv"
	} >"$out"
	echo
	echo "slowest suites (wall s, CPU s of the suite and its guests; all in $out):"
	tail -n +2 "$out" | head -n 5 | awk -F'\t' '{ printf "  %-24s %6s %8s\n", $1, $2, $3 }'
	awk -F'\t' 'NR > 1 && $3 != "-" { c += $3 } NR > 1 { w += $2 }
		END { printf "  suite time %d s wall, %.0f s CPU\n", w, c }' "$out"
}
summary() {
	digest
	times_table
	echo
	echo "passed: ${PASSED[*]:-none}"
	echo "failed: ${FAILED[*]:-none}"
	echo "total time: $(($(date +%s) - T0)) s"
	echo "test.sh: ${#PASSED[@]} passed, ${#FAILED[@]} failed"
	[ ${#FAILED[@]} -eq 0 ]
}

if [ "$(id -u)" -ne 0 ]; then
	echo "test.sh: needs root (packages, the qemu lab, netlink); run as root" >&2
	exit 2
fi
log "dependencies"
if ! scripts/deps.sh; then
	echo "test.sh: installing dependencies failed" >&2
	FAILED+=(deps)
	summary
	exit 1
fi

# A compiler cache of this run only (removed at exit): the main build fills it and the
# fresh clones of lab-ci-pipeline-root/-tmp (tests/lab/from_clone.sh), built with the same
# options under another path, take its objects (ccache 4.7: 147 of 151 compilations, 68 to
# 27 CPU seconds a clone). Paths are relative to each build's own source tree
# (CCACHE_BASEDIR, set per build) and the directory is left out of the hash: the objects
# hold no path of their tree (-ffile-prefix-map). The other builds (ASan, Release, fuzz)
# have other options, so they do not use it. Without ccache, builds go as before.
if command -v ccache >/dev/null; then
	FCTL_CCACHE_DIR=$(mktemp -d /tmp/fctl-ccache.XXXXXX)
	trap 'rm -rf -- "$SUITE_LOGS" "$FCTL_CCACHE_DIR"' EXIT
	export FCTL_CCACHE_DIR
fi
# cmake configure + build of one build directory, with -Werror; the main one ("build") through
# that cache when there is one (the from-clone builds do the same)
build() { # dir, extra cmake args...
	local dir=$1
	shift
	if [ -n "${FCTL_CCACHE_DIR:-}" ] && [ "$dir" = build ]; then
		set -- -DCMAKE_C_COMPILER_LAUNCHER=ccache "$@"
		export CCACHE_DIR=$FCTL_CCACHE_DIR CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
	fi
	cmake -S "$ROOT" -B "$ROOT/$dir" -DFCTL_WERROR=ON "$@" >/dev/null &&
		cmake --build "$ROOT/$dir" -j "$JOBS"
}
# fails when a binary of build directory $1 is missing or names a test hook
release_hooks_check() { # dir
	local dir=$1 bin s rc=0
	for bin in fabricctl/fabricctl keymgr/fabricctl-keymgr probes/fabricctl-probe; do
		if [ ! -f "$ROOT/$dir/$bin" ]; then
			echo "release-hooks: $dir/$bin is missing: cannot check it" >&2
			rc=1
			continue
		fi
		for s in FCTL_TEST_FAIL_AT_OP FCTL_TEST_CRASH_AFTER_OP FCTL_AUDIT_TEST_TEAR \
			FCTL_KEYMGR_TEST_HOOK FCTL_TEST_SWAP_PROFILE FCTL_TEST_HOLD_PROFILE_MS \
			FCTL_TEST_STOP_AFTER_APPLY; do
			if grep -qa "$s" "$ROOT/$dir/$bin"; then
				echo "release-hooks: $dir/$bin contains the test hook $s" >&2
				rc=1
			fi
		done
	done
	[ $rc -eq 0 ] && echo "release-hooks: no test hook in $dir"
	return $rc
}
export -f build release_hooks_check
export ROOT JOBS

# 1. the build CI and the lab use, with -Werror
suite build 1200 bash -c 'build build -DFCTL_TEST_HOOKS=ON'

# the release configuration: the programs as they ship, built once per run in
# build-package by scripts/package.sh --build-only (the package suite finds them built
# there, rather than compiling the same Release tree a second time); and the default
# options of a fresh configure leave the test hooks off (package.sh sets them off
# itself, so this is what a plain `cmake -S . -B DIR` gives)
release_build() {
	local d rc=0
	"$ROOT/scripts/package.sh" --jobs "$JOBS" --build-only || return 1
	d=$(mktemp -d "$ROOT/build-defaults.XXXXXX") || return 1
	if ! cmake -S "$ROOT" -B "$d" >/dev/null 2>&1; then
		echo "release-hooks: cmake with the default options failed" >&2
		rc=1
	elif ! grep -qx 'FCTL_TEST_HOOKS:BOOL=OFF' "$d/CMakeCache.txt"; then
		echo "release-hooks: a default configure has $(grep '^FCTL_TEST_HOOKS' "$d/CMakeCache.txt" || echo 'no FCTL_TEST_HOOKS'), not OFF" >&2
		rc=1
	fi
	rm -rf "$d"
	return $rc
}
export -f release_build

# Lane "host": the tests on this machine (unit, sanitizers, release, fuzz) and the ASan
# apply in the lab (it needs the ASan build); then, like the lab lane, lab suites from
# the shared queue below until none is left.
host_lane() {
	if want unit; then
		suite unit 900 ctest --test-dir "$ROOT/build" --output-on-failure --timeout 600
		# (the audit log's attack tests, tests/audit/audit.sh, are the ctest "audit")
		# real key servers: a SoftHSM2 token and a PyKMIP server, set up and stopped by the test
		suite kms 600 tests/kms/kms.sh "$ROOT/build"
		# attack tests: each reproduces a finding of the security review (tests/security/);
		# the four on verify.sh are the queue's q_security_evidence
		suite security 1800 env FCTL_SECURITY_EXCLUDE="evidence_tamper evidence_consistency evidence_pn evidence_approvals" \
			tests/security/run.sh "$ROOT/build"
		# the auditor's report of an evidence bundle, rendered in headless Chromium (tests/evidence/)
		suite report 600 tests/evidence/report.sh "$ROOT/build/fabricctl/fabricctl"
		# the metrics against promtool and a real Prometheus scraping an agent; the alert
		# rules' unit tests and the Grafana dashboard's queries (tests/metrics/)
		suite metrics 600 tests/metrics/metrics.sh "$ROOT/build"
		# the Kubernetes manifests (examples/kubernetes/) offline: yamllint, kubectl's offline
		# configmap generation, the DaemonSet's structure and capabilities (no cluster)
		suite kubernetes 300 sh tests/kubernetes/manifests.sh "$ROOT/build/fabricctl/fabricctl" "$ROOT"
	fi
	# 2. sanitizers: every unit and CLI test under ASan+UBSan
	if want asan; then
		suite asan-build 1200 bash -c 'build build-asan -DFCTL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DFCTL_TEST_HOOKS=ON'
		suite asan-unit 1200 env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
			UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			ctest --test-dir "$ROOT/build-asan" --output-on-failure --timeout 600
		suite asan-kms 900 env ASAN_OPTIONS=detect_leaks=1 tests/kms/kms.sh "$ROOT/build-asan"
		# evidence_tamper, evidence_consistency, evidence_pn and evidence_approvals attack verify.sh (bash, openssl,
		# python): the build changes nothing there, and "security" ran them; here they would only
		# lengthen the lane. So with lab_dir (lab.sh's checks of its directory: bash, no program
		# of ours runs) and unit_hardening (systemd-analyze reads the agent's unit file; the
		# build's fabricctl is only named as its ExecStart, never started)
		suite asan-security 2400 env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
			FCTL_SECURITY_EXCLUDE="evidence_tamper evidence_consistency evidence_pn evidence_approvals lab_dir unit_hardening" \
			tests/security/run.sh "$ROOT/build-asan"
		# the apply engine again, built with ASan+UBSan (leaks included), on the real kernel
		if want lab; then
			suite lab-apply-asan 1200 env FCTL_LAB_DIR=/var/tmp/fabricctl-lab-apply-asan \
				FCTL_BUILD_DIR="$ROOT/build-asan" tests/lab/apply.sh
		fi
	fi
	if want release; then
		suite release-hooks 1200 bash -c 'release_build && release_hooks_check build-package'
	fi
	queue_drain
}

# The lab suites (each tears its lab down, even on failure), one function each, in the
# order the lanes take them: the longest first, so that the two lanes end close together
# (a fixed split left one lane 20 minutes behind the other). Each lab suite has its own lab
# directory and the lab picks free TCP ports, so any two may run at once; only q_package
# runs dpkg, so one lane at a time does.
# (Seconds of wall / CPU in the idle whole run of 2026-12-05, a508de4: rotation 364/319,
# mka 324/179, fuzz 301/199, fabric-probe 197/129, probe 150/86, rotation-6.12 134/112,
# nonce 130/99, ci-tmp 109/102, security-evidence 96/127, agent 103/75, rekey 97/84,
# apply-6.12 89/68, ci-root 87/67, package 87/70, metrics 86/47, apply 73/54, wiring
# 63/52, smoke 49/30, netlink-6.12 40/35, netlink 32/26, pull 42/29, slurm 89/52,
# confirm 180/51.) The front of the queue is that run's order, longest first. Its end
# holds the suites that mostly wait (confirm's deadlines, slurm's daemons): the spare
# lane takes the queue from its end when a core idles, and they leave the CPU to the
# others; so the suites the lanes take last, where they meet, are short ones. In that
# run lab-slurm, in the middle, was taken last and ran 90 s alone at the end.
# The fuzzers are in the queue too (q_fuzz): bounded by the clock (each target 60 s
# on one core), they made the host lane, which they ended, the longest of the three.
# So are the attack tests on verify.sh (q_security_evidence: evidence_tamper,
# evidence_consistency, evidence_pn and evidence_approvals: bash, jq, openssl and
# ssh-keygen whatever the build), taken out of the host lane's security suite for the
# same reason.
QUEUE=(q_rotation q_mka q_fuzz q_fabric_probe q_probe q_rotation_612 q_nonce q_ci_tmp
	q_security_evidence q_agent q_rekey q_apply_612 q_ci_root q_package q_metrics q_apply
	q_wiring q_smoke q_netlink_612 q_netlink q_pull q_slurm q_confirm)
q_security_evidence() {
	suite security-evidence 1800 env FCTL_SECURITY_ONLY="evidence_tamper evidence_consistency evidence_pn evidence_approvals" \
		tests/security/run.sh "$ROOT/build"
}
# 3. fuzzing, bounded by the clock (FCTL_FUZZ_SECONDS per target)
q_fuzz() { suite fuzz $((${FCTL_FUZZ_SECONDS:-60} + 900)) tests/fuzz/run.sh "${FCTL_FUZZ_SECONDS:-60}"; }
# lab_suite NAME LIMIT DIR SCRIPT [VAR=VALUE...]: a lab suite with this build's programs,
# its lab in /var/tmp/fabricctl-lab-DIR (nl_live.sh and smoke.sh name theirs by a variable
# of their own, given among the VAR=VALUE)
lab_suite() {
	local name=$1 limit=$2 dir=/var/tmp/fabricctl-lab-$3 script=$4
	shift 4
	suite "$name" "$limit" env FCTL_LAB_DIR="$dir" FCTL_BUILD_DIR="$ROOT/build" "$@" bash "$script"
}
# make-before-break key rotation: 8 rotations under a sequence-numbered stream, faults,
# and the PKCS#11 (SoftHSM2) and KMIP (PyKMIP) backends inside the lab
q_rotation() { lab_suite lab-rotation 2400 rotation tests/lab/rotation.sh; }
# the agents' metrics through a real Prometheus inside the lab: apply, probe, drift, a
# wrong key and rotations asserted with PromQL, promtool on real scrapes
q_metrics() { lab_suite lab-metrics 1200 metrics tests/lab/metrics.sh; }
# MKA through Debian's wpa_supplicant 2.10: both ends fabricctl, a wrong CAK, the peer
# killed and restarted, interop with a hand-configured peer, the key server moving
q_mka() { lab_suite lab-mka 1500 mka tests/lab/mka.sh; }
# the Debian package: built, linted, installed and checked on this machine by package.sh
# (its checks printed there), then the pipeline in the lab with /usr/sbin/fabricctl, then
# purged, nothing left. Without "lab" in FCTL_TEST_ONLY, package.sh alone (q_package_alone).
q_package() {
	suite lab-package 1200 env FCTL_LAB_DIR=/var/tmp/fabricctl-lab-package FCTL_JOBS="$JOBS" \
		bash tests/lab/package_lab.sh
}
# rekey failures other MACsec stacks hit in the field (SONiC): counters across a rekey, a
# retirement that touches only the old key, keymgr killed mid-rotation and reconciled from
# the kernels, a delete and an install of one AN in one frame
q_rekey() { lab_suite lab-rekey-regress 1500 rekey tests/lab/rekey_regress.sh; }
# fabricctl node-check as Slurm's HealthCheckProgram with Debian's slurm-wlm and munge in
# two VMs: healthy nodes take jobs, a SecY down or a wrong key drains the node with the
# reason, the repair resumes it (tests/lab/slurm.sh)
q_slurm() { lab_suite lab-slurm 1500 slurm tests/lab/slurm.sh; }
# the kernels users run: the netlink, apply and rotation suites again on Debian's 6.12
# (docs/lab.md, "Kernels"). The rotation phases that exercise the kernel: 6 rotations
# under a stream, XPN.
q_rotation_612() {
	lab_suite lab-rotation-6.12 1500 rotation-612 tests/lab/rotation.sh FCTL_LAB_KERNEL=6.12 \
		ROTATION_PHASES="1 5" ROTATIONS=6
}
q_apply_612() { lab_suite lab-apply-6.12 1200 apply-612 tests/lab/apply.sh FCTL_LAB_KERNEL=6.12; }
q_netlink_612() {
	lab_suite lab-netlink-6.12 900 nl-612 tests/lab/nl_live.sh FCTL_LAB_KERNEL=6.12 \
		FCTL_NL_LAB_DIR=/var/tmp/fabricctl-lab-nl-612
}
# the CI pipeline from fresh clones of this tree under /root and under /tmp (the guests'
# own tmpfs), each built there (so no FCTL_BUILD_DIR): no checkout path is assumed. The
# failure path (a second pipeline with an SLO no link meets: its own lab, about 40 s of
# CPU) proves nothing about the checkout's path, so it runs once, in the /tmp clone
q_ci() { # root|tmp
	suite "lab-ci-pipeline-$1" 900 env FCTL_LAB_DIR="/var/tmp/fabricctl-lab-ci-$1" FCTL_JOBS="$JOBS" \
		FCTL_CI_FAILURE_PATH="$([ "$1" = tmp ] && echo 1 || echo 0)" \
		bash tests/lab/from_clone.sh "/$1" tests/lab/ci_pipeline.sh
}
q_ci_root() { q_ci root; }
q_ci_tmp() { q_ci tmp; }
q_agent() { lab_suite lab-agent 900 agent tests/lab/agent.sh; }
q_apply() { lab_suite lab-apply 1200 apply tests/lab/apply.sh; }
# the agent's pull mode: a ConfigMap-style profile directory, new versions by the kubelet's
# ..data symlink swap: applied, an invalid one refused, a failing one rolled back (one VM)
q_pull() { lab_suite lab-pull 1200 pull tests/lab/pull.sh; }
# nonce safety (docs/keys-and-pn.md): a key back by rollback continues where it stopped,
# its old frames replayed are refused, links gone behind fabricctl withhold the key, and
# so do a TX SA deleted by hand and a guest's power cycle (lab.sh reboot); recover after
# kill -9 at three ops and a keymgr rotation rolled back with an agent restarted continue
# each key; the wire read frame by frame shows no (SCI, PN) twice under one key
q_nonce() { lab_suite lab-nonce 900 nonce tests/lab/nonce.sh; }
q_probe() { lab_suite lab-probe 900 probe tests/lab/probe.sh; }
# the fabric probe (issue 31): five VMs, six MACsec links with soft-RoCE, agents on all;
# a delay, a loss, an MTU and a stopped agent each named, the rest passing, within the
# run's deadline; a clean run; bad input (tests/lab/fabric_probe.sh)
q_fabric_probe() { lab_suite lab-fabric-probe 900 fabric-probe tests/lab/fabric_probe.sh; }
# confirmed apply: confirm in time; a change that cuts the path to the host rolled back by
# the host's watchdog at the deadline; the CLI killed -9 after its apply; the same through
# h2's agent (apply/confirm --target, a viewer's confirm refused)
q_confirm() { lab_suite lab-confirm 900 confirm tests/lab/confirm.sh; }
q_netlink() { lab_suite lab-netlink 900 nl tests/lab/nl_live.sh FCTL_NL_LAB_DIR=/var/tmp/fabricctl-lab-nl; }
q_wiring() { lab_suite lab-wiring 900 wiring tests/lab/wiring.sh; }
q_smoke() { lab_suite lab-smoke 600 smoke tests/lab/smoke.sh FCTL_SMOKE_LAB_DIR=/var/tmp/fabricctl-lab-smoke; }
# without the lab (FCTL_TEST_ONLY has "package", not "lab"): package.sh alone
q_package_alone() { suite package 900 env FCTL_JOBS="$JOBS" tests/package/package.sh; }
# Takes the queue's items one after another, each one no other lane took: a lane claims an
# item by creating its directory (mkdir is atomic). Only with "lab" in FCTL_TEST_ONLY, but
# for q_package, whose place "package" alone takes with q_package_alone, and q_fuzz, which
# "fuzz" decides.
# q_part ITEM: the part of FCTL_TEST_ONLY a queue item belongs to (lab, but for these)
q_part() {
	case $1 in
	q_fuzz) echo fuzz ;;
	q_security_evidence) echo unit ;;
	*) echo lab ;;
	esac
}
queue_drain() {
	local q run
	for q in "${QUEUE[@]}"; do
		if want "$(q_part "$q")"; then
			run=$q
		elif [ "$q" = q_package ] && want package; then
			run=q_package_alone
		else
			continue
		fi
		mkdir "$LANES/claim-$q" 2>/dev/null && "$run"
	done
}
# The third lane, "spare": takes a lab suite from the same queue only while the machine
# has CPU to spare (at least 20% of it idle over 10 s, from /proc/stat), so that a suite
# that mostly waits (deadlines, MKA hellos, cryptoperiods) beside two others does not
# leave a core idle; on a loaded machine it waits, and the two other lanes drain the
# queue. (It used the 1-minute load average, below the cores + 1, until 2026-12-04: the
# average lags a minute behind, and in an idle run the CPU was 17% idle in the first
# 630 s while the lane waited.) It takes the queue from its end (the suites that mostly
# wait first, then short ones), so the suites that are sensitive to a crowded machine
# (rotation and MKA under a stream) keep the places at the front that the other lanes
# take, as before. (30% until 2026-12-05: in that day's idle run the CPU was 10.6% idle
# over the whole run while the lane waited 81, 51 and 71 s between suites.)
cpu_idle_pct() { # the share of CPU time idle over the next $1 seconds, in percent
	local a b
	a=$(awk '/^cpu /{ print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
	sleep "$1"
	b=$(awk '/^cpu /{ print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[2] - x[2]
		print (t > 0 ? int(100 * (y[1] - x[1]) / t) : 0) }'
}
spare_drain() {
	local q i
	want lab || return 0
	for ((i = ${#QUEUE[@]} - 1; i >= 0; i--)); do
		q=${QUEUE[i]}
		[ -d "$LANES/claim-$q" ] && continue
		want "$(q_part "$q")" || continue
		until [ "$(cpu_idle_pct 10)" -ge 20 ]; do
			[ -d "$LANES/claim-$q" ] && break
		done
		mkdir "$LANES/claim-$q" 2>/dev/null && "$q"
	done
}

# 4. the lab's kernels and initramfs first (apt runs here, never beside a lane)
if want lab; then
	suite lab-setup 900 scripts/lab.sh setup
	suite lab-setup-6.12 1200 scripts/lab.sh setup --kernel 6.12
	# netdevsim.ko for the 6.12 guests (apply-6.12's offload checks), built once from
	# Debian's linux-source-6.12 and cached: 30-40 s of CPU, about 1.5 min on an idle machine
	suite lab-netdevsim 900 scripts/lab-netdevsim.sh
fi
# The lanes run side by side: host, lab and spare (FCTL_TEST_LANES=2: host and lab;
# FCTL_TEST_LANES=1: host, then lab, one after the other). Each lane's
# output goes to its log, printed whole when the lane ends; a line per suite start shows
# progress meanwhile. Lanes share no lab directory, no dpkg and no fixed port.
LANES=$(mktemp -d /tmp/fctl-test-lanes.XXXXXX)
exec 3>&1
lane_log() { # the load average beside each start: where a slow run's time went
	printf '[%s] %s (%ds, load %s)\n' "$LANE" "$*" "$(($(date +%s) - T0))" \
		"$(cut -d' ' -f1 /proc/loadavg)" >&3
}
lane_run() { # name function
	local LANE=$1
	PASSED=() FAILED=()
	log() { printf '\n=== %s (%ds) ===\n' "$*" "$(($(date +%s) - T0))"; lane_log "$*"; }
	suite_ended() { lane_log "$1 ended: $([ "$2" = 0 ] && echo PASS || echo "FAIL, exit $2") in $3 s"; }
	"$2" >"$LANES/$LANE.log" 2>&1
	{ printf 'PASS %s\n' "${PASSED[@]}"; printf 'FAIL %s\n' "${FAILED[@]}"; } |
		grep -v '^[A-Z]* $' >"$LANES/$LANE.result"
	echo done >>"$LANES/$LANE.result"
}
lane_collect() { # name
	local name=$1 st n
	echo
	echo "##### lane $name #####"
	cat "$LANES/$name.log" 2>/dev/null
	if ! tail -n1 "$LANES/$name.result" 2>/dev/null | grep -qx done; then
		echo "--- lane $name: ended without its results"
		FAILED+=("lane-$name")
		return
	fi
	while read -r st n; do
		case $st in PASS) PASSED+=("$n") ;; FAIL) FAILED+=("$n") ;; esac
	done <"$LANES/$name.result"
}
SPARE=1
case ${FCTL_TEST_LANES:-3} in 1 | 2) SPARE=0 ;; esac
if [ "${FCTL_TEST_LANES:-3}" = 1 ]; then
	( lane_run host host_lane )
	( lane_run lab queue_drain )
else
	LANE_PIDS=()
	lane_run host host_lane &
	LANE_PIDS+=($!)
	lane_run lab queue_drain &
	LANE_PIDS+=($!)
	if [ $SPARE = 1 ]; then
		lane_run spare spare_drain &
		LANE_PIDS+=($!)
	fi
	wait "${LANE_PIDS[@]}"
fi
lane_collect host
lane_collect lab
[ $SPARE = 1 ] && lane_collect spare
rm -rf "$LANES"

# safety net: no lab outlives the run, whatever happened to a suite
for d in /var/tmp/fabricctl-lab-smoke /var/tmp/fabricctl-lab-nl /var/tmp/fabricctl-lab-apply \
	/var/tmp/fabricctl-lab-apply-asan /var/tmp/fabricctl-lab-wiring \
	/var/tmp/fabricctl-lab-probe /var/tmp/fabricctl-lab-fabric-probe /var/tmp/fabricctl-lab-agent \
	/var/tmp/fabricctl-lab-ci-root /var/tmp/fabricctl-lab-ci-tmp /var/tmp/fabricctl-lab-rotation \
	/var/tmp/fabricctl-lab-metrics \
	/var/tmp/fabricctl-lab-nl-612 /var/tmp/fabricctl-lab-apply-612 /var/tmp/fabricctl-lab-rotation-612 \
	/var/tmp/fabricctl-lab-package /var/tmp/fabricctl-lab-mka \
	/var/tmp/fabricctl-lab-pull /var/tmp/fabricctl-lab-slurm /var/tmp/fabricctl-lab-confirm \
	/var/tmp/fabricctl-lab-rekey /var/tmp/fabricctl-lab-nonce; do
	[ -d "$d" ] && scripts/lab.sh down --dir "$d" >/dev/null 2>&1
done
# nor a server a lab suite ran on this host (lab-metrics' Prometheus, lab-rotation's
# PyKMIP; each stops its own by PID, but not when its suite was killed with -9): each
# runs from its suite's work directory under build/
pkill -f -- "$ROOT/build/lab-(metrics|rotation)-work" 2>/dev/null
summary
