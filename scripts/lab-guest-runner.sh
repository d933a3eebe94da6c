#!/bin/bash
#
# Stage 2 of a fabricctl lab guest: PID 1 inside the chroot on the host root.
#
# Started by scripts/lab-guest-init.sh with LAB_HOST and LAB_SHARE set.  It
# names the host, names the NICs after their lab MAC addresses, brings the
# links up, writes "$LAB_SHARE/ready", then serves commands that
# scripts/lab.sh drops into the share:
#
#   $LAB_SHARE/jobs/ID/argv     argv, NUL-separated (required)
#   $LAB_SHARE/jobs/ID/env      extra environment, NUL-separated K=V (optional)
#   $LAB_SHARE/jobs/ID/cwd      working directory (optional, falls back to /)
#   $LAB_SHARE/jobs/ID/timeout  seconds, 0 = none (optional)
#   $LAB_SHARE/queue/ID         created last (by rename): "run job ID"
#   $LAB_SHARE/queue/kill.ID    "send SIGTERM to job ID's process group"
#
# Results: jobs/ID/out, jobs/ID/err, jobs/ID/pid, and jobs/ID/rc written last
# (by rename).  Jobs run concurrently, each under GNU timeout in its own
# process group.
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

hostname "$LAB_HOST" || log "warning: hostname failed"
ip link set lo up || log "warning: lo not up"

# NIC names follow the lab MACs 52:54:00:fa:HH:PP -> ethPP, whatever order the
# kernel probed the devices in.
for dev in /sys/class/net/*; do
	name=${dev##*/}
	mac=$(<"$dev/address")
	case "$mac" in
	52:54:00:fa:*:*) ;;
	*) continue ;;
	esac
	want=eth$((16#${mac##*:}))
	if [[ $name != "$want" ]]; then
		ip link set dev "$name" name "lab-tmp-$want" || log "warning: rename $name failed"
	fi
done
for dev in /sys/class/net/lab-tmp-*; do
	name=${dev##*/}
	ip link set dev "$name" name "${name#lab-tmp-}" || log "warning: rename $name failed"
done
for dev in /sys/class/net/eth*; do
	ip link set dev "${dev##*/}" up || log "warning: ${dev##*/} not up"
done

mkdir -p "$Q" "$J" || log "warning: cannot create $Q or $J"

# A sleep that forks nothing: read with a timeout on a FIFO nobody writes.
mkfifo /run/lab-tick 2>/dev/null
exec 9<>/run/lab-tick
tick() { read -r -t "$1" -u 9 _ || :; }

run_job() {
	local id=$1 d=$J/$1 t=0 cwd=/ rc
	local -a argv=() envs=()
	[[ -f $d/argv ]] || return 0
	mapfile -d '' -t argv <"$d/argv"
	[[ -f $d/env ]] && mapfile -d '' -t envs <"$d/env"
	[[ -f $d/cwd ]] && cwd=$(<"$d/cwd")
	[[ -f $d/timeout ]] && t=$(<"$d/timeout")
	[[ $t =~ ^[0-9]+$ ]] || t=0
	if ((${#argv[@]} == 0)); then
		echo "lab: job $id has an empty argv" >"$d/err"
		rc=2
	else
		(
			cd "$cwd" 2>/dev/null || cd / || exit 126
			for v in $(compgen -e); do unset "$v"; done
			export PATH=$SAFE_PATH HOME=/root LANG=C.UTF-8 TERM=dumb
			for kv in "${envs[@]}"; do export "${kv?}"; done
			echo "$BASHPID" >"$d/pid"
			exec timeout -k 5 "$t" "${argv[@]}"
		) </dev/null >"$d/out" 2>"$d/err"
		rc=$?
	fi
	echo "$rc" >"$d/rc.tmp" && mv -f "$d/rc.tmp" "$d/rc"
}

kill_job() {
	local pid
	pid=$(<"$J/$1/pid") 2>/dev/null || return 0
	[[ $pid =~ ^[0-9]+$ ]] || return 0
	# timeout(1) leads its own process group: signal the whole job.
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
}

up=$(</proc/uptime)
printf 'host=%s\nuptime=%s\nkernel=%s\n' "$LAB_HOST" "${up%% *}" "$(uname -r)" >"$LAB_SHARE/ready.tmp" &&
	mv -f "$LAB_SHARE/ready.tmp" "$LAB_SHARE/ready"
log "ready after ${up%% *} s of guest uptime"

idle=0
while :; do
	got=0
	for q in "$Q"/*; do
		id=${q##*/}
		rm -f "$q" 2>/dev/null || continue
		got=1
		case "$id" in
		kill.*) kill_job "${id#kill.}" ;;
		*) run_job "$id" & ;;
		esac
	done
	# Finished jobs and orphans re-parented to PID 1 are reaped by bash's
	# own SIGCHLD handling; nothing to wait for here.
	if ((got)); then idle=0; else idle=$((idle + 1)); fi
	if ((idle < 100)); then tick 0.05; else tick 0.2; fi
done
