#!/bin/bash
# SPDX-License-Identifier: MIT
# fabricctl node-check as Slurm's HealthCheckProgram, with Debian's Slurm (slurm-wlm
# 22.05) and munge in two lab VMs: slurmctld and slurmd on h1, slurmd on h2, lab-pair's
# MACsec VLAN 100 between them, slurm.conf and the munge key made by this test (a private
# directory of the build tree, never /etc of the host), SLURM_CONF naming it.
#
#  1. both nodes healthy: idle, and a two-node job runs on h1 and h2
#  2. h2's SecY down: the health check drains h2, `scontrol show node` gives the reason
#     "fabricctl: h1-h2.100: SecY ms100 is down"; a job asking for h2 is refused, a job
#     lands on h1
#  3. the SecY up again: h2 is resumed, a two-node job runs
#  4. a receive SA with a wrong key beside h2's own (ip macsec, AN 1, key id 01): drift:
#     drained with the reason; `fabricctl apply` repairs it (removes it): resumed
#  5. an admin's drain (another reason) is left alone by the healthy check
#
# Waits are bounded (FCTL_SLURM_WAIT seconds each), never asserted on. Prints PASS/FAIL
# per check and "slurm: N passed, M failed"; exits non-zero on any failure, including a
# lab or a daemon that cannot start (never skips).
set -uo pipefail

SUITE=slurm
SUITE_LAB_DIR=/var/tmp/fabricctl-lab-slurm
# shellcheck source=tests/lab/lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
WAIT=${FCTL_SLURM_WAIT:-240}

[ -x "$F" ] || { fail "build" "$F is missing: build first"; exit 1; }
for p in slurmctld slurmd scontrol srun munged; do
	command -v "$p" >/dev/null || { fail "packages" "$p is missing (scripts/deps.sh)"; exit 1; }
done

W=$BUILD/lab-slurm-work
rm -rf "$W"
mkdir -p "$W/keys"
mkdir -m 700 "$W/munge"
( umask 077; dd if=/dev/urandom of="$W/munge/munge.key" bs=1024 count=1 2>/dev/null )
cp "$ROOT/profiles/lab-pair.yaml" "$W/"
( umask 077; openssl rand -hex 16 >"$W/keys/lab-pair.key" )
export SLURM_CONF=$W/slurm.conf
on() { local h=$1; shift; "$LAB" exec --timeout 120 --env SLURM_CONF="$SLURM_CONF" "$h" -- "$@"; }

# the HealthCheckProgram: slurmd gives it no arguments and kills it after 60 s; one at a
# time (a slow guest must not pile them up), each run counted in the guest
cat >"$W/healthcheck.sh" <<EOS
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF=$SLURM_CONF
exec 9>/run/fabricctl-nodecheck.lock
flock -n 9 || exit 0
echo run >>/var/tmp/slurm/healthcheck.runs
exec $F node-check --slurm >>/var/tmp/slurm/healthcheck.log 2>&1
EOS
chmod 755 "$W/healthcheck.sh"
cat >"$W/cgroup.conf" <<'EOS'
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
EOS
cat >"$W/slurm.conf" <<EOS
ClusterName=fabricctl-lab
SlurmctldHost=h1(10.9.12.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=/run/munge/munge.socket.2
CredType=cred/munge
StateSaveLocation=/var/tmp/slurm/ctld
SlurmdSpoolDir=/var/tmp/slurm/d
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/tmp/slurm/slurmctld.log
SlurmdLogFile=/var/tmp/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/linear
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=120
SlurmdTimeout=300
# the guests are emulated and share a busy machine: Slurm's default 10 s per message
# timed out a job launch at a load average of 234 (a bound, not an assertion)
MessageTimeout=60
HealthCheckProgram=$W/healthcheck.sh
HealthCheckInterval=10
HealthCheckNodeState=ANY
NodeName=h1 NodeAddr=10.9.12.1 CPUs=1 RealMemory=64 State=UNKNOWN
NodeName=h2 NodeAddr=10.9.12.2 CPUs=1 RealMemory=64 State=UNKNOWN
PartitionName=lab Nodes=h1,h2 Default=YES MaxTime=INFINITE State=UP
EOS

if ! "$LAB" up --hosts 2; then
	fail "lab-up" "the lab did not start"
	exit 1
fi
pass "lab-up"

n=1
for h in h1 h2; do
	# munged wants its socket directory world-searchable and its key private; slurmd
	# wants a cgroup v2 hierarchy with a system.slice (no systemd in the guest)
	on $h sh -c "set -e; ip addr add 10.9.12.$n/24 dev eth0; ip link set eth0 up
		mkdir -p -m 755 /run/munge; mkdir -p -m 700 /run/munge-key
		mkdir -p /var/tmp/slurm/ctld /var/tmp/slurm/d /var/tmp/p/keys
		cp '$W/munge/munge.key' /run/munge-key/munge.key; chmod 600 /run/munge-key/munge.key
		munged --key-file=/run/munge-key/munge.key --socket=/run/munge/munge.socket.2 \
			--pid-file=/run/munge/munged.pid --log-file=/var/tmp/slurm/munged.log \
			--seed-file=/run/munge-key/munged.seed --origin=10.9.12.$n
		mount -t cgroup2 none /sys/fs/cgroup; mkdir -p /sys/fs/cgroup/system.slice
		cp '$W/lab-pair.yaml' /var/tmp/p/; cp '$W/keys/lab-pair.key' /var/tmp/p/keys/
		chmod 600 /var/tmp/p/keys/lab-pair.key
		'$F' apply -q /var/tmp/p/lab-pair.yaml" >"$W/setup-$h.log" 2>&1 &&
		pass "setup-$h" || { fail "setup-$h" "$(tail -5 "$W/setup-$h.log")"; exit 1; }
	n=$((n + 1))
done
on h1 slurmctld || { fail "slurmctld" "$(on h1 tail -5 /var/tmp/slurm/slurmctld.log)"; exit 1; }
for h in h1 h2; do
	on $h slurmd || { fail "slurmd-$h" "$(on $h tail -5 /var/tmp/slurm/slurmd.log)"; exit 1; }
done

state() { on h1 scontrol show node "$1" 2>/dev/null | sed -n 's/^ *State=\([^ ]*\).*/\1/p'; }
reason() { on h1 scontrol show node "$1" 2>/dev/null | sed -n 's/^ *Reason=//p'; }
# until DESC TEST...: a test in this shell, retried every 2 s for at most $WAIT s
until_ok() {
	local desc=$1 t0=$SECONDS
	shift
	until "$@"; do
		[ $((SECONDS - t0)) -ge "$WAIT" ] && { echo "  (waited ${WAIT}s for: $desc)"; return 1; }
		sleep 2
	done
}
healthy() { local s; s=$(state "$1"); [ -n "$s" ] && [[ $s != *DRAIN* && $s != *DOWN* && $s != *NOT_RESPONDING* && $s != *UNKNOWN* ]]; }
drained() { [[ $(state "$1") == *DRAIN* && $(reason "$1") == "fabricctl: "*"$2"* ]]; }
runs() { on h2 sh -c 'wc -l </var/tmp/slurm/healthcheck.runs 2>/dev/null || echo 0'; }
two_node_job() { on h1 srun -N2 -t 2 --immediate=120 hostname 2>&1 | sort | tr '\n' ' '; }

# 1. healthy nodes take a job
until_ok "h1 and h2 idle" eval 'healthy h1 && healthy h2' && pass "1-nodes-idle" ||
	fail "1-nodes-idle" "h1 $(state h1) $(reason h1); h2 $(state h2) $(reason h2)"
out=$(two_node_job)
[ "$out" = "h1 h2 " ] && pass "1-job-on-both" || fail "1-job-on-both" "$out"

# 2. SecY down on h2: drained with the reason, jobs avoid it
on h2 ip link set ms100 down
until_ok "h2 drained" drained h2 "SecY ms100 is down" && pass "2-drained" ||
	fail "2-drained" "h2 $(state h2): $(reason h2)"
r=$(reason h2)
[[ $r == "fabricctl: h1-h2.100: SecY ms100 is down"* ]] && pass "2-reason-names-link" ||
	fail "2-reason-names-link" "$r"
out=$(on h1 srun -w h2 -t 1 --immediate=5 hostname 2>&1)
[ $? -ne 0 ] && pass "2-job-for-h2-refused" || fail "2-job-for-h2-refused" "$out"
out=$(on h1 srun -N1 -t 1 --immediate=120 hostname 2>&1)
[ "$out" = h1 ] && pass "2-job-on-h1" || fail "2-job-on-h1" "$out"

# 3. repaired: resumed
on h2 ip link set ms100 up
until_ok "h2 resumed" healthy h2 && pass "3-resumed" || fail "3-resumed" "h2 $(state h2): $(reason h2)"
out=$(two_node_job)
[ "$out" = "h1 h2 " ] && pass "3-job-on-both" || fail "3-job-on-both" "$out"

# 4. a receive SA with a wrong key (key id 01 is not the profile's KEYID) beside h2's own:
# drift. (Not h2's own SA replaced by hand: that takes its packet numbers with it, and the
# apply then rightly withholds the key, docs/keys-and-pn.md; tests/lab/nonce.sh has it.)
on h2 sh -c "ip macsec add ms100 rx sci 525400fa01000001 sa 1 pn 1 on key 01 $(openssl rand -hex 16)"
until_ok "h2 drained (drift)" drained h2 "drift" && pass "4-drained-drift" ||
	fail "4-drained-drift" "h2 $(state h2): $(reason h2)"
on h2 "$F" apply -q /var/tmp/p/lab-pair.yaml >/dev/null 2>&1
until_ok "h2 resumed" healthy h2 && pass "4-resumed-after-apply" ||
	fail "4-resumed-after-apply" "h2 $(state h2): $(reason h2)"

# 5. an admin's drain stays through healthy checks
on h1 scontrol update nodename=h2 state=drain reason="maintenance window"
k=$(runs)
until_ok "two more health checks on h2" eval '[ "$(runs)" -ge $((k + 2)) ]'
[[ $(state h2) == *DRAIN* && $(reason h2) == "maintenance window"* ]] &&
	pass "5-admin-drain-kept" || fail "5-admin-drain-kept" "h2 $(state h2): $(reason h2)"
on h2 grep -q "none: drained by someone else (maintenance window" /var/tmp/slurm/healthcheck.log &&
	pass "5-check-says-why" || fail "5-check-says-why" "$(on h2 tail -3 /var/tmp/slurm/healthcheck.log)"
