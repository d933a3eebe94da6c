#!/bin/bash
#
# Stage 2 of a fabricctl lab guest: PID 1 inside the chroot on the host root.
#
# Started by scripts/lab-guest-init.sh with LAB_HOST and LAB_SHARE set.  It
# sets the hostname from "$LAB_SHARE/hostname", names the NICs after their MAC
# addresses as "$LAB_SHARE/nics" says ("MAC IFNAME MTU" per line), sets their
# MTU, brings them up, writes "$LAB_SHARE/ready", then serves commands that
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
printf 'host=%s\nname=%s\nuptime=%s\nkernel=%s\n' "$LAB_HOST" "$(hostname)" "${up%% *}" "$(uname -r)" >"$LAB_SHARE/ready.tmp" &&
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
