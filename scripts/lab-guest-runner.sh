#!/bin/bash
#
# Stage 2 of a fabricctl lab guest: PID 1 inside the chroot on the host root.
#
# Started by scripts/lab-guest-init.sh with LAB_HOST and LAB_SHARE set.  It
# sets the hostname from "$LAB_SHARE/hostname", names the NICs after their MAC
# addresses as "$LAB_SHARE/nics" says ("MAC IFNAME MTU" per line), sets their
# MTU, brings them up (mgmt0, the management NIC, with 10.0.2.15/24 when there is
# one), writes "$LAB_SHARE/ready", then serves commands that
# scripts/lab.sh drops into the share:
#
#   $LAB_SHARE/jobs/ID          NUL-separated: "fctl-lab-job-1", the timeout in seconds
#                               (0 = none), the working directory (falls back to /), the
#                               number N of environment entries, N entries K=V, then argv
#   $LAB_SHARE/queue/ID         created after it: "run job ID"
#   $LAB_SHARE/queue/kill.ID.T  "send SIGTERM to job ID's process group"
#
# and names the entry on the doorbell port (below).  Results: jobs/ID.out, jobs/ID.err,
# and jobs/ID.rc written last (one write of "RC\n"); the job's pid stays in the guest
# (/run/lab-jobs/ID).  Jobs run concurrently, each in its own process group; the
# runner itself enforces each job's timeout as timeout(1) did (TERM to the group,
# KILL 5 s later, exit 124 or 137), without a program start per job.
#
# This script is PID 1 of the guest: if it exits the kernel panics and qemu
# stops, so it must not die on a failed command (no "set -e" here).

set -u
shopt -s nullglob

: "${LAB_HOST:?}" "${LAB_SHARE:?}"
Q=$LAB_SHARE/queue
J=$LAB_SHARE/jobs
SAFE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { printf 'lab-runner[%s]: %s\n' "$LAB_HOST" "$*" >/dev/console 2>/dev/null; }

# The hostname lab.sh chose (--name), else the lab id.
name=$LAB_HOST
if [[ -s $LAB_SHARE/hostname ]]; then
	read -r name <"$LAB_SHARE/hostname" || name=$LAB_HOST
fi
hostname "$name" || log "warning: hostname $name failed"
ip link set lo up || log "warning: lo not up"

# NIC names follow the MACs, whatever order the kernel probed the devices in:
# "$LAB_SHARE/nics" has "MAC IFNAME MTU" per NIC.  Without it (a share laid
# out by an older lab.sh), the lab MACs 52:54:00:fa:HH:PP give ethPP.
declare -A want_name=() want_mtu=()
if [[ -f $LAB_SHARE/nics ]]; then
	while read -r mac ifname mtu; do
		[[ -n ${mac:-} && -n ${ifname:-} ]] || continue
		want_name[$mac]=$ifname want_mtu[$mac]=${mtu:-}
	done <"$LAB_SHARE/nics"
else
	for dev in /sys/class/net/*; do
		mac=$(<"$dev/address")
		[[ $mac == 52:54:00:fa:*:* ]] && want_name[$mac]=eth$((16#${mac##*:}))
	done
fi
# Two passes, so that names can swap (a NIC may hold the name another wants).
i=0
declare -A tmp_of=()
for dev in /sys/class/net/*; do
	name=${dev##*/}
	mac=$(<"$dev/address")
	[[ -n ${want_name[$mac]:-} ]] || continue
	tmp_of[$mac]=labtmp$i
	ip link set dev "$name" name "labtmp$i" || { log "warning: rename $name failed"; tmp_of[$mac]=$name; }
	i=$((i + 1))
done
for mac in "${!want_name[@]}"; do
	cur=${tmp_of[$mac]:-}
	if [[ -z $cur ]]; then
		log "warning: no NIC with MAC $mac (wanted as ${want_name[$mac]})"
		continue
	fi
	ip link set dev "$cur" name "${want_name[$mac]}" ||
		log "warning: rename $cur to ${want_name[$mac]} failed"
	if [[ -n ${want_mtu[$mac]:-} ]]; then
		ip link set dev "${want_name[$mac]}" mtu "${want_mtu[$mac]}" ||
			log "warning: mtu ${want_mtu[$mac]} on ${want_name[$mac]} failed"
	fi
	ip link set dev "${want_name[$mac]}" up || log "warning: ${want_name[$mac]} not up"
done
# The management NIC (lab.sh up --mgmt-port): qemu's user network answers 10.0.2.15,
# where the build host's forward arrives.
if [[ -e /sys/class/net/mgmt0 ]]; then
	ip addr add 10.0.2.15/24 dev mgmt0 || log "warning: no address on mgmt0"
fi

mkdir -p "$Q" "$J" || log "warning: cannot create $Q or $J"
# the pids of jobs, for kill_job: a tmpfs of the guest, not the share (each file on the
# share costs the guest a virtio round trip under TCG)
P=/run/lab-jobs
mkdir -p "$P" || log "warning: cannot create $P"

# The doorbell: lab.sh writes a line to the virtio port named fctl.bell after it queues
# a job, the queue entry's name, and the runner sleeps on the port between scans; a line
# that names an entry is taken without listing the queue (a 9p round trip or more).
# Polling the share instead cost each busy guest about a quarter of a host core under TCG
# (docs/lab.md, "How it works").
# Without the port (a lab.sh of before), a sleep that forks nothing: a read with a timeout
# on a FIFO nobody writes, and a scan every 50 ms while busy, 200 ms when idle.
poll_fifo() { # fd 9 becomes the FIFO nobody writes
	bell=
	mkfifo /run/lab-tick 2>/dev/null
	exec 9<>/run/lab-tick
}
bell=
for p in /sys/class/virtio-ports/*; do
	[[ -r $p/name && $(<"$p/name") == fctl.bell ]] && bell=/dev/${p##*/}
done
if [[ -n $bell && -c $bell ]] && exec 9<"$bell"; then
	log "doorbell on $bell"
else
	log "no doorbell port: polling the queue"
	poll_fifo
fi
# An end of file on the port (it should not happen) would make every read return at
# once: then back to the FIFO and polling, said on the console. The line read, when it
# names a queue entry, in bl (else bl is empty: scan the queue).
bl=
tick() {
	local st
	bl=
	read -r -t "$1" -u 9 bl
	st=$?
	if ((st == 1)) && [[ -n $bell ]]; then
		log "doorbell $bell gave an end of file: polling the queue"
		poll_fifo
		write_ready
	fi
	# a line cut by the timeout or the end of file is not taken (the scan finds its entry)
	((st == 0)) && [[ $bl =~ ^(kill\.)?[0-9]+-[0-9]+-[0-9]+(\.[0-9]+)?$ ]] || bl=
}

# run_job ID: runs the job whose fields the main loop read into f (below), writes its
# rc. Its own process group (set -m), so kill_job and the deadline signal all of it.
# timeout(1) took about 40 ms of the guest's CPU per job under TCG (docs/lab.md, "What
# an exec costs"), so the deadline is the main loop's: at a job's deadline it sends this
# process SIGUSR1, which interrupts the wait; the first sends TERM to the job's group, a
# second one 5 s later KILL, and the job ends with timeout(1)'s status, 124 (137 when
# KILL was needed).
run_job() {
	local id=$1 d=$J/$1 t=0 cwd=/ rc n=0 pid late=0
	local -a argv=() envs=()
	if [[ ${f[0]:-} == fctl-lab-job-1 && ${#f[@]} -ge 4 && ${f[3]} =~ ^[0-9]+$ ]]; then
		t=${f[1]} cwd=${f[2]} n=${f[3]}
		envs=("${f[@]:4:n}")
		argv=("${f[@]:4+n}")
	fi
	if ((${#argv[@]} == 0)); then
		echo "lab: job $id is malformed or has an empty argv" >"$d.err"
		rc=2
	else
		set -m
		(
			cd "$cwd" 2>/dev/null || cd / || exit 126
			# the runner exports nothing (below): only these reach the command
			export PATH=$SAFE_PATH HOME=/root LANG=C.UTF-8 TERM=dumb
			for kv in "${envs[@]}"; do export "${kv?}"; done
			exec "${argv[@]}"
		) </dev/null >"$d.out" 2>"$d.err" &
		pid=$!
		set +m
		echo "$pid" >"$P/$id"
		trap 'late=$((late + 1)); if ((late == 1)); then kill -TERM -- "-$pid"; else kill -KILL -- "-$pid"; fi 2>/dev/null' USR1
		while :; do
			wait "$pid"
			rc=$?
			# a signal for the trap ends the wait (status > 128) while the job runs on
			((rc > 128)) && kill -0 "$pid" 2>/dev/null && continue
			break
		done
		((late == 1)) && rc=124
		((late > 1)) && rc=137
	fi
	# one write of "RC\n" (no mv: a program start costs the guest a tenth of a second);
	# lab.sh takes the job as ended only once rc holds a whole line
	echo "$rc" >"$d.rc"
}

# Run in the background: a kill queued right after its job may find the job started
# (both in one scan, the job first) but its pid not yet written; it waits up to 5 s for
# the pid, and gives up if the job has ended meanwhile.
kill_job() {
	local pid= i
	for ((i = 0; i < 100; i++)); do
		[[ -f $J/$1.rc ]] && return 0
		read -r pid <"$P/$1" 2>/dev/null
		[[ $pid =~ ^[0-9]+$ ]] && break
		pid=
		sleep 0.05
	done
	[[ -n $pid ]] || return 0
	# the job leads its own process group (run_job's set -m): signal the whole job.
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
}

# Jobs get a clean environment: the runner's own variables (init's) stay unexported.
for v in $(compgen -e); do export -n "$v"; done

up=$(</proc/uptime)
# "bell=1" tells lab.sh to ring (ring_bell); written again as bell=0 if the port fails
write_ready() {
	printf 'host=%s\nname=%s\nuptime=%s\nkernel=%s\nbell=%s\n' "$LAB_HOST" "$(hostname)" "${up%% *}" \
		"$(uname -r)" "$([[ -n $bell ]] && echo 1 || echo 0)" >"$LAB_SHARE/ready.tmp" &&
		mv -f "$LAB_SHARE/ready.tmp" "$LAB_SHARE/ready"
}
write_ready
log "ready after ${up%% *} s of guest uptime"

# Queue entries are taken by name, once: lab.sh removes an entry with its job's
# directory when it has read the result (an rm here cost the guest a program start, about
# a third of a short job's cost under TCG: docs/lab.md, "What an exec costs").
declare -A seen=()
# the deadlines of running jobs: run_job's PID, when to signal it next, signals sent
declare -A due_pid=() due_at=() due_n=()
deadlines() {
	local id
	for id in "${!due_at[@]}"; do
		if ! kill -0 "${due_pid[$id]}" 2>/dev/null; then
			unset "due_pid[$id]" "due_at[$id]" "due_n[$id]"
		elif ((EPOCHSECONDS >= due_at[$id])); then
			kill -USR1 "${due_pid[$id]}" 2>/dev/null
			due_n[$id]=$((due_n[$id] + 1)) due_at[$id]=$((EPOCHSECONDS + 5))
			((due_n[$id] < 2)) || unset "due_pid[$id]" "due_at[$id]" "due_n[$id]"
		fi
	done
}
# take ENTRY: starts what the queue entry ENTRY asks, once (0 when it did)
take() {
	local id=$1 j
	[[ -z ${seen[$id]:-} ]] || return 1
	seen[$id]=1
	case "$id" in
	kill.*)
		j=${id#kill.}
		kill_job "${j%%.*}" &
		;;
	*)
		f=()
		mapfile -d '' -t f <"$J/$id" 2>/dev/null || return 1
		run_job "$id" &
		if [[ ${f[1]:-} =~ ^[1-9][0-9]*$ ]]; then
			due_pid[$id]=$! due_at[$id]=$((EPOCHSECONDS + f[1])) due_n[$id]=0
		fi
		;;
	esac
}
idle=0
while :; do
	got=0
	if [[ -n $bl ]]; then
		take "$bl" && got=1
	else
		for q in "$Q"/*; do
			id=${q##*/}
			[[ -z ${seen[$id]:-} && -e $q ]] && take "$id" && got=1
		done
	fi
	((${#due_at[@]} == 0)) || deadlines
	# Finished jobs and orphans re-parented to PID 1 are reaped by bash's
	# own SIGCHLD handling; nothing to wait for here.
	if ((got)); then idle=0; else idle=$((idle + 1)); fi
	# with the doorbell, a scan at least every 2 s all the same (a ring is never lost,
	# but a queue entry costs nothing to find late)
	if [[ -n $bell ]]; then tick 2; elif ((idle < 100)); then tick 0.05; else tick 0.2; fi
done
