#!/bin/bash
#
# fabricctl real-kernel lab: a few qemu guests booting the stock Debian
# kernel (which has MACsec, VLAN and soft-RoCE), wired to each other over
# loopback sockets and driven by commands.  See docs/lab.md.
#
#   lab.sh setup [--kernel SERIES]
#   lab.sh up [--kernel SERIES] [--hosts N] [--dir DIR] [--mem MB] [--lifetime SEC] [--boot-timeout SEC]
#             [--wiring SPEC] [--mac HOST.PORT=MAC]... [--ifname HOST.PORT=NAME]...
#             [--mtu HOST.PORT=MTU]... [--name HOST=NAME]... [--mgmt-port PORT]
#             [--guestfwd GUESTPORT=HOSTPORT]...
#       SPEC: comma-separated hA.ethP=hB.ethQ (a link) or hA.ethP (a NIC with no
#       peer), e.g. h1.eth0=h2.eth0,h2.eth1=h3.eth0,h3.eth1=h1.eth1
#       --mgmt-port PORT: each guest also gets a management NIC, mgmt0 (10.0.2.15/24,
#       qemu's user network with restrict=on: the guest reaches nothing through it), and
#       its TCP PORT is forwarded from a free port on the build host's 127.0.0.1, which
#       'status' reports as the host's "mgmt" endpoint (an agent's, for a CLI on this host)
#       --guestfwd GUESTPORT=HOSTPORT (repeatable): each guest gets mgmt0 too (the same NIC
#       when --mgmt-port is given), and its connections to 10.0.2.100:GUESTPORT reach the
#       build host's 127.0.0.1:HOSTPORT (a relay per connection; nothing else is reachable)
#   lab.sh exec [--dir DIR] [--timeout SEC] [--env K=V]... [--cwd DIR] HOST [--] CMD [ARG]...
#   lab.sh exec-bg [--dir DIR] [--timeout SEC] [--env K=V]... [--cwd DIR] HOST [--] CMD [ARG]...
#   lab.sh wait [--dir DIR] [--timeout SEC] HOST JOB
#   lab.sh kill [--dir DIR] HOST JOB
#   lab.sh reboot [--dir DIR] [--boot-timeout SEC] HOST
#   lab.sh status [--dir DIR] [--json]
#   lab.sh down [--dir DIR]

set -euo pipefail
# modprobe, ip and friends live in sbin, which a non-login root PATH may lack.
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

# This script's absolute path, without a program start when it is not a symlink (every
# `lab.sh exec` starts here: docs/lab.md, "What an exec costs")
SELF=${BASH_SOURCE[0]}
if [[ -L $SELF ]]; then
	SELF=$(readlink -f "$SELF")
elif [[ $SELF != /* ]]; then
	SELF=$PWD/$SELF
fi
SCRIPTS=${SELF%/*}
REPO=${SCRIPTS%/*}
LAB_DIR=${FCTL_LAB_DIR:-/var/tmp/fabricctl-lab}
# The kernel series the guests boot: Debian 12's stock 6.1 unless --kernel or
# FCTL_LAB_KERNEL names another one that Debian ships (6.12 from bookworm's security
# updates / backports). FCTL_LAB_KVER names one exact installed kernel instead.
KERNEL_SERIES=${FCTL_LAB_KERNEL:-6.1}
# The image package `setup --kernel SERIES` installs when no kernel of the series is
# there: pinned, so CI boots the same kernel every run (a newer point release of the
# series is taken only when the pinned one has left the archive, and `setup` says so).
declare -A KERNEL_PKG=([6.1]=linux-image-amd64 [6.12]=linux-image-6.12.117+deb12-amd64)
WIRING=
CACHE_DIR=${FCTL_LAB_CACHE:-/var/cache/fabricctl-lab}
GUEST_INIT=$SCRIPTS/lab-guest-init.sh
GUEST_RUNNER=$SCRIPTS/lab-guest-runner.sh
# --guestfwd: the address the guests connect to on mgmt0, and the relay qemu starts per
# connection (its path goes into qemu's option string: no commas, no spaces)
GUESTFWD_ADDR=10.0.2.100
GUESTFWD_RELAY=$SCRIPTS/lab-guestfwd-relay.py

# Kernel modules the guests need, by the names modprobe knows them.
# virtio_console: the doorbell port the runner sleeps on (docs/lab.md, "How it works").
MODULES=(virtio_pci virtio_net virtio_console 9pnet_virtio 9p 8021q macsec gcm ghash-generic
	ctr aesni-intel ghash-clmulni-intel crc32_generic rdma_rxe ib_uverbs rdma_ucm)

# command-or-file:package, checked by `setup` (and `up`).
PACKAGES=(
	qemu-system-x86_64:qemu-system-x86
	modprobe:kmod
	cpio:cpio
	ip:iproute2
	rdma:iproute2
	ss:iproute2
	ibv_devices:ibverbs-utils
	ib_send_lat:perftest
	ping:iputils-ping
	jq:jq
	wpa_supplicant:wpasupplicant
	flock:util-linux
	setsid:util-linux
	timeout:coreutils
	xz:xz-utils
	zstd:zstd
	# Slurm in the guests (tests/lab/slurm.sh): the guests run the host's binaries
	slurmctld:slurmctld
	slurmd:slurmd
	scontrol:slurm-client
	munged:munge
)

MAX_HOSTS=8
QBOOT=${FCTL_LAB_QBOOT-/usr/share/qemu/qboot.rom} # empty: SeaBIOS, qemu's default
TB_MB=256 # TCG translation cache per guest

die() {
	printf 'lab: %s\n' "$*" >&2
	exit 1
}
# a usage error: exit 2, as every fabricctl command's (docs/cli.md, "Exit codes")
usage_die() {
	printf 'lab: %s\n' "$*" >&2
	exit 2
}
say() { printf 'lab: %s\n' "$*" >&2; }
# Whole non-negative number, small enough for shell arithmetic.
is_uint() { [[ $1 =~ ^[0-9]{1,9}$ ]]; }
# need_range VALUE MIN MAX MESSAGE
need_range() {
	if ! is_uint "$1" || (($1 < $2 || $1 > $3)); then usage_die "$4"; fi
}

# The name the user typed: fabricctl runs this script with FCTL_LAB_PROG="fabricctl lab".
PROG=${FCTL_LAB_PROG:-lab.sh}
[[ $PROG =~ ^[A-Za-z0-9._/\ -]{1,64}$ ]] || PROG=lab.sh

usage() {
	sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$SELF" | sed '/^set -euo/,$d' |
		sed "s|lab\.sh|$PROG|g"
}
# need_val MESSAGE VALUE: an option's value is missing: a usage error (exit 2, the usage
# on stderr), as every fabricctl command's (docs/cli.md, "Exit codes")
need_val() {
	[[ -n ${2-} ]] && return 0
	usage >&2
	usage_die "$1"
}

# --- exec, exec-bg, wait, kill ------------------------------------------------
# These come first, and are dispatched before bash has read the rest of this file: they
# are about 2,000 runs of a test run, and parsing the whole file cost each ~10 ms of host
# CPU (docs/lab.md, "What an exec costs").

# PID from a pidfile, only if that process still is what we started.
live_pid() {
	local pidfile=$1 marker=$2 pid
	[[ -f $pidfile ]] || return 1
	pid=$(<"$pidfile")
	pid=${pid//[^0-9]/}
	[[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
	# the command line, NUL-separated, read and matched in bash: no program started
	local -a argv=()
	mapfile -d '' -t argv <"/proc/$pid/cmdline" 2>/dev/null || return 1
	local IFS=" " cmd
	cmd="${argv[*]} "
	[[ $cmd == *"$marker"* ]] || return 1
	echo "$pid"
}

qemu_pid() { live_pid "$LAB_DIR/$1/qemu.pid" "$LAB_DIR/$1/qemu.pid"; }
watchdog_pid() { live_pid "$LAB_DIR/watchdog.pid" "__watchdog $LAB_DIR "; }

console_tail() {
	local h=$1 lines=${2:-40} log
	log=$LAB_DIR/$h/console.log
	echo "---- $h: last $lines lines of $log ----" >&2
	if [[ -s $log ]]; then tail -n "$lines" "$log" | tr -d '\r' >&2; else echo "(empty)" >&2; fi
	if [[ -s $LAB_DIR/$h/qemu.err ]]; then
		echo "---- $h: qemu stderr ----" >&2
		tail -n 20 "$LAB_DIR/$h/qemu.err" >&2
	fi
	echo "----" >&2
}

# resolve_host HOST: the lab id (h1, h2, ...) of HOST, given as that id or as the
# host's --name, in REPLY (not printed: every exec resolves its host, and reading a
# printed answer costs a subshell); 1 when there is no such host.
resolve_host() {
	local want=$1 id name
	REPLY=
	if [[ $want =~ ^h[0-9]+$ ]]; then
		REPLY=$want
		return 0
	fi
	if [[ -f $LAB_DIR/names.tsv ]]; then
		while read -r id name; do
			[[ $name == "$want" ]] && { REPLY=$id; return 0; }
		done <"$LAB_DIR/names.tsv"
	fi
	return 1
}

# require_host HOST: dies unless HOST (an id or a --name) is a running,
# ready host; sets HOST_ID to its id.
HOST_ID=
require_host() {
	local h
	[[ -f $LAB_DIR/lab.state ]] || die "no lab is up in $LAB_DIR (run: $PROG up)"
	resolve_host "$1" || die "no host '$1' in the lab at $LAB_DIR (hosts: $(host_list))"
	h=$REPLY
	HOST_ID=$h
	[[ -d $LAB_DIR/$h ]] || die "no host '$1' in the lab at $LAB_DIR (hosts: $(host_list))"
	[[ -f $LAB_DIR/$h/ready ]] || die "host '$h' is not ready"
	qemu_pid "$h" >/dev/null || {
		console_tail "$h" 20
		die "host '$h' is not running (lifetime over, or it crashed)"
	}
}

# Parses exec options into EXEC_* globals and the command into EXEC_ARGV.
parse_exec() {
	EXEC_TIMEOUT=$1 && shift
	EXEC_ENV=() EXEC_CWD=$PWD EXEC_HOST='' EXEC_ARGV=()
	local v
	# FCTL_* settings of the caller reach the guest command (not the lab's own): the
	# exported ones among the variables of that prefix, without a subshell
	for v in ${!FCTL_*}; do
		[[ $v != FCTL_LAB_* && ${!v@a} == *x* ]] && EXEC_ENV+=("$v=${!v}")
	done
	while (($#)); do
		case "$1" in
		--timeout) need_val "--timeout needs seconds" "${2-}" && EXEC_TIMEOUT=$2 && shift 2 ;;
		--env)
			[[ ${2:-} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_die "--env needs K=V"
			EXEC_ENV+=("$2") && shift 2
			;;
		--cwd) need_val "--cwd needs a directory" "${2-}" && EXEC_CWD=$2 && shift 2 ;;
		--dir) need_val "--dir needs a path" "${2-}" && LAB_DIR=$2 && shift 2 ;;
		--) usage_die "missing HOST before --" ;;
		-*) usage_die "unknown option '$1'" ;;
		*)
			EXEC_HOST=$1 && shift
			[[ ${1:-} == -- ]] && shift
			EXEC_ARGV=("$@")
			break
			;;
		esac
	done
	is_uint "$EXEC_TIMEOUT" || die "--timeout must be whole seconds"
	[[ -n $EXEC_HOST ]] || die "missing HOST"
	((${#EXEC_ARGV[@]} > 0)) || die "missing command"
}

# Queues EXEC_ARGV on host H; the job's id in JOB_ID (a global, not printed: the callers
# would need a subshell to read it).
submit_job() {
	local h=$1 timeout=$2 cwd=$3 id d hd
	shift 3
	hd=$LAB_DIR/$h
	id=${EPOCHREALTIME/./}000-$$-$RANDOM
	# the job is a file, jobs/ID, and its results are files beside it (jobs/ID.out, ...):
	# no directory per job, whose mkdir and rm -r were two program starts of an exec
	# (docs/lab.md, "What an exec costs"). One file, NUL-separated, read by the runner in one
	# go (each file the guest opens on its 9p share costs it milliseconds under TCG): a
	# version tag, the timeout, the working directory, the number of environment entries,
	# those entries, then argv
	printf '%s\0' fctl-lab-job-1 "$timeout" "$cwd" "${#EXEC_ENV[@]}" "${EXEC_ENV[@]}" "${EXEC_ARGV[@]}" >"$hd/jobs/$id"
	# the queue entry only names the job (its file is whole by now): created in place
	: >"$hd/queue/$id"
	ring_bell "$hd" "$id"
	JOB_ID=$id
}

# Wakes HD's runner: a line into the doorbell FIFO qemu reads (after the queue entry is
# in place), with the queue entry's name, which the runner takes without listing the
# queue; its scan every 2 s finds any entry all the same. Opened read-write, so the open
# never blocks, even when qemu is gone; the guest drains the port, so the FIFO never fills.
# One write of a short line: lines of lab.sh runs at once do not mix. Runners that
# announced no doorbell ("bell=1" in ready) scan on their own every 200 ms.
ring_bell() { # host dir, queue entry
	local fd line on=0
	[[ -p $1/bell.in ]] || return 0
	while read -r line; do [[ $line == bell=1 ]] && on=1; done <"$1/ready" 2>/dev/null
	((on)) || return 0
	exec {fd}<>"$1/bell.in" || return 0
	printf '%s\n' "$2" >&"$fd"
	exec {fd}>&-
}

# Asks HD's runner to send SIGTERM to job ID's process group (by a queue entry, then a ring).
queue_kill() { # host dir, job id
	# (each kill its own entry, kill.JOB.TIME: the runner takes an entry once)
	local e=kill.$2.${EPOCHREALTIME/./}
	: >"$1/queue/$e" && ring_bell "$1" "$e"
}

# Copies what a job wrote to FILE since the last call to fd FD (flush_from FILE FD): FILE
# is opened once, and each call copies from where the last one stopped to the file's end
# (the open file keeps the offset). The copy is bash's read, which starts no program (a
# cat, or stat, tail and head while streaming, cost the host a program start each: docs/
# lab.md, "What an exec costs"): NUL-separated pieces of at most 64 KiB, bytes as they are
# (LC_ALL=C); past 256 KiB in one call a cat copies the rest, faster than read for a lot.
declare -A IN_FD=()
flush_from() {
	local f=$1 fd=$2 in=${IN_FD[$2]:-} c n=0 st LC_ALL=C
	if [[ -z $in ]]; then
		[[ -s $f ]] || return 0
		exec {in}<"$f" || return 0
		IN_FD[$fd]=$in
	fi
	while :; do
		IFS= read -r -d '' -n 65536 -u "$in" c && st=0 || st=$?
		printf '%s' "$c" >&"$fd"
		((st == 0)) || return 0
		# a NUL ended the piece (a piece of 64 KiB may end anywhere)
		((${#c} < 65536)) && printf '\0' >&"$fd"
		n=$((n + ${#c} + 1))
		if ((n > 262144)); then
			cat <&"$in" >&"$fd"
			return 0
		fi
	done
}

# A sleep that starts no program: a read with a timeout on a FIFO nobody writes (a
# sleep(1) per round of wait_job's loop was most of an exec's CPU on the host). The FIFO
# lives in the lab directory; opened read-write, the open never blocks.
NAP_FD=
nap() { # seconds
	if [[ -z $NAP_FD ]]; then
		[[ -p $LAB_DIR/.nap ]] || mkfifo -m 0600 "$LAB_DIR/.nap" 2>/dev/null
		if [[ -p $LAB_DIR/.nap ]] && exec {NAP_FD}<>"$LAB_DIR/.nap"; then :; else
			NAP_FD=
			sleep "$1"
			return 0
		fi
	fi
	read -r -t "$1" -u "$NAP_FD" _ || :
}

# The files of jobs whose results were read (jobs/ID.done) go, with their queue entries
# (the runner takes an entry once, and leaves it: a program start less in the guest per
# job), 16 jobs at a time: one rm for 16 execs instead of one each. A job a lab.sh
# gave up on (no .done) stays until `down`.
sweep_jobs() { # host dir
	local f id
	local -a done=() rmf=()
	done=("$1"/jobs/*.done)
	[[ -e ${done[0]} ]] && ((${#done[@]} >= 16)) || return 0
	for f in "${done[@]}"; do
		id=${f##*/} id=${id%.done}
		rmf+=("$1/jobs/$id" "$1/jobs/$id".* "$1/queue/$id")
		rmf+=("$1/queue/kill.$id".*)
	done
	rm -f -- "${rmf[@]}" 2>/dev/null || :
}

# Streams a job's stdout/stderr until it ends; returns its exit code.
wait_job() {
	local h=$1 id=$2 limit=$3 d hd rc start interval=0.02 done=0 n=0
	hd=$LAB_DIR/$h
	d=$hd/jobs/$id
	[[ -f $d && ! -e $d.done ]] || die "no job '$id' on $h"
	start=$EPOCHSECONDS
	while :; do
		# the runner writes "RC\n" in one write: ended once the line is whole
		if [[ -f $d.rc ]] && read -r rc <"$d.rc" && [[ $rc =~ ^[0-9]+$ ]]; then done=1; fi
		# the output: streamed every 10th round, and the rest at the end
		if ((done || n % 10 == 0)); then
			flush_from "$d.out" 1
			flush_from "$d.err" 2
		fi
		if ((done)); then
			: >"$d.done"
			sweep_jobs "$hd"
			return "$rc"
		fi
		n=$((n + 1))
		if ((n % 10 == 0)); then
			if ! qemu_pid "$h" >/dev/null; then
				say "$h stopped while running job $id"
				console_tail "$h" 20
				return 125
			fi
			if ((limit > 0 && EPOCHSECONDS - start > limit)); then
				say "job $id on $h: no result after ${limit}s, killing it"
				queue_kill "$hd" "$id"
				return 124
			fi
		fi
		nap "$interval"
		((n == 50)) && interval=0.1
	done
}

# "h1 (gpu01), h2 (gpu02)" for messages.
host_list() {
	local id name out=
	[[ -f $LAB_DIR/names.tsv ]] || { echo "none"; return; }
	while read -r id name; do
		out+="${out:+, }$id"
		[[ $name != "$id" ]] && out+=" ($name)"
	done <"$LAB_DIR/names.tsv"
	echo "${out:-none}"
}

cmd_exec() {
	parse_exec 120 "$@"
	require_host "$EXEC_HOST"
	EXEC_HOST=$HOST_ID
	local id rc=0
	submit_job "$EXEC_HOST" "$EXEC_TIMEOUT" "$EXEC_CWD"
	id=$JOB_ID
	# The guest enforces the timeout (rc 124); the host waits a little longer.
	if ((EXEC_TIMEOUT > 0)); then
		wait_job "$EXEC_HOST" "$id" $((EXEC_TIMEOUT + 15)) || rc=$?
	else
		wait_job "$EXEC_HOST" "$id" 0 || rc=$?
	fi
	if ((rc == 124 || rc == 137)) && ((EXEC_TIMEOUT > 0)); then
		say "'${EXEC_ARGV[0]}' on $EXEC_HOST hit the ${EXEC_TIMEOUT}s timeout (exit $rc)"
	fi
	return "$rc"
}

cmd_exec_bg() {
	parse_exec 0 "$@"
	require_host "$EXEC_HOST"
	EXEC_HOST=$HOST_ID
	submit_job "$EXEC_HOST" "$EXEC_TIMEOUT" "$EXEC_CWD"
	echo "$JOB_ID"
}

cmd_wait() {
	local timeout=120 h='' id=
	while (($#)); do
		case "$1" in
		--timeout) need_val "--timeout needs seconds" "${2-}" && timeout=$2 && shift 2 ;;
		--dir) need_val "--dir needs a path" "${2-}" && LAB_DIR=$2 && shift 2 ;;
		-*) die "wait: unknown option '$1'" ;;
		*)
			if [[ -z $h ]]; then h=$1; elif [[ -z $id ]]; then id=$1; else die "wait: extra argument '$1'"; fi
			shift
			;;
		esac
	done
	[[ -n $h && -n $id ]] || usage_die "usage: $PROG wait [--timeout SEC] HOST JOB"
	is_uint "$timeout" || die "--timeout must be whole seconds"
	[[ $id =~ ^[0-9a-zA-Z-]+$ ]] || die "bad job id '$id'"
	require_host "$h"
	wait_job "$HOST_ID" "$id" "$timeout"
}

cmd_kill() {
	local h='' id=
	while (($#)); do
		case "$1" in
		--dir) need_val "--dir needs a path" "${2-}" && LAB_DIR=$2 && shift 2 ;;
		-*) die "kill: unknown option '$1'" ;;
		*)
			if [[ -z $h ]]; then h=$1; elif [[ -z $id ]]; then id=$1; else die "kill: extra argument '$1'"; fi
			shift
			;;
		esac
	done
	[[ -n $h && -n $id ]] || usage_die "usage: $PROG kill HOST JOB"
	[[ $id =~ ^[0-9a-zA-Z-]+$ ]] || die "bad job id '$id'"
	require_host "$h"
	h=$HOST_ID
	local hd
	hd=$LAB_DIR/$h
	[[ -f $hd/jobs/$id && ! -e $hd/jobs/$id.done ]] || die "no job '$id' on $h"
	queue_kill "$hd" "$id"
}

# wants_help VERB ARGS...: --help or -h among the options of VERB. exec and exec-bg
# look only before the host: what follows is the guest's command line.
wants_help() {
	local verb=$1 a
	shift
	for a in "$@"; do
		case "$a" in
		-h | --help) return 0 ;;
		--) return 1 ;;
		-*) ;;
		*) [[ $verb == exec || $verb == exec-bg ]] && return 1 ;;
		esac
	done
	return 1
}

case ${1:-} in
exec | exec-bg | wait | kill)
	VERB=$1
	shift
	if wants_help "$VERB" "$@"; then
		usage
		exit 0
	fi
	case "$VERB" in
	exec) cmd_exec "$@" ;;
	exec-bg) cmd_exec_bg "$@" ;;
	wait) cmd_wait "$@" ;;
	kill) cmd_kill "$@" ;;
	esac
	exit
	;;
esac

# --- packages, kernel, initramfs -------------------------------------------

need_root() {
	[[ $(id -u) == 0 ]] || die "must run as root (qemu reads /boot and exports / over 9p)"
}

ensure_packages() {
	local -a missing=()
	local entry cmd pkg
	for entry in "${PACKAGES[@]}"; do
		cmd=${entry%%:*} pkg=${entry#*:}
		command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
	done
	# The dynamic busybox package would not run inside the initramfs.
	dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
		missing+=(busybox-static)
	# The rxe userspace provider (librxe) lives here.
	dpkg-query -W -f='${Status}' ibverbs-providers 2>/dev/null | grep -q 'ok installed' ||
		missing+=(ibverbs-providers)
	# A kernel chosen with FCTL_LAB_KVER is the caller's business.
	if [[ -z ${FCTL_LAB_KVER:-} && -z $(find_kver 2>/dev/null) ]]; then
		missing+=("$(kernel_pkg)")
	fi
	((${#missing[@]} == 0)) && return 0
	mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
	say "installing missing packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=300 update -q >&2 || die "apt-get update failed"
	# the services these packages ship (munge, slurmd, wpa_supplicant) run only in guests:
	# none is started on the host (invoke-rc.d honours policy-rc.d)
	local policy=/usr/sbin/policy-rc.d own=0 rc=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own=1
	fi
	apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}" >&2 || rc=$?
	((own)) && rm -f "$policy"
	((rc == 0)) || die "apt-get install ${missing[*]} failed"
}

# The package that brings a kernel of KERNEL_SERIES: the pinned one, else (it left the
# archive) the newest image of the series the archive has.
kernel_pkg() {
	local p=${KERNEL_PKG[$KERNEL_SERIES]:-}
	if [[ -n $p ]] && apt-cache show "$p" >/dev/null 2>&1; then
		echo "$p"
		return 0
	fi
	p=$(apt-cache search --names-only "^linux-image-${KERNEL_SERIES//./\\.}\\.[0-9]+\\+deb12-amd64\$" 2>/dev/null |
		awk '{print $1}' | sort -V | tail -1)
	[[ -n $p ]] || die "no kernel image of series $KERNEL_SERIES in the archive (apt-get update?)"
	say "the pinned kernel package ${KERNEL_PKG[$KERNEL_SERIES]:-"(none)"} is not in the archive: using $p"
	echo "$p"
}

# Newest kernel of KERNEL_SERIES under /boot that has its modules and MACsec;
# FCTL_LAB_KVER names one exactly. Never a hard-coded point release: those move.
find_kver() {
	local v
	if [[ -n ${FCTL_LAB_KVER:-} ]]; then
		[[ -f /boot/vmlinuz-$FCTL_LAB_KVER && -f /lib/modules/$FCTL_LAB_KVER/modules.dep ]] ||
			die "FCTL_LAB_KVER=$FCTL_LAB_KVER: no /boot/vmlinuz-$FCTL_LAB_KVER or its modules"
		echo "$FCTL_LAB_KVER"
		return 0
	fi
	for v in $(find /boot -maxdepth 1 -name "vmlinuz-$KERNEL_SERIES.*" -printf '%f\n' 2>/dev/null |
		sed 's/^vmlinuz-//' | sort -V -r); do
		if [[ -f /lib/modules/$v/modules.dep ]] && modprobe -S "$v" --show-depends macsec >/dev/null 2>&1; then
			echo "$v"
			return 0
		fi
	done
	return 1
}

# Prints the .ko paths to load, in order, for every module in MODULES.
module_files() {
	local kver=$1 m out line
	local -A seen=()
	for m in "${MODULES[@]}"; do
		out=$(modprobe -S "$kver" --show-depends "$m" 2>&1) ||
			die "kernel $kver lacks module '$m': $out"
		while read -r line; do
			case "$line" in
			builtin\ *) ;;
			insmod\ *)
				line=${line#insmod }
				line=${line%% *}
				[[ -n ${seen[$line]:-} ]] && continue
				seen[$line]=1
				echo "$line"
				;;
			*) die "unexpected modprobe output for '$m': $line" ;;
			esac
		done <<<"$out"
	done
}

# Builds (or reuses) the initramfs; prints its path.  The cache key covers the
# kernel version, the module files and both scripts that end up in it.
build_initramfs() {
	local kver=$1 key tmp f base out
	local -a files
	mapfile -t files < <(module_files "$kver")
	((${#files[@]} > 0)) || die "no module files found for $kver"
	key=$({
		echo "$kver"
		printf '%s\n' "${files[@]}"
		# Contents only, so copies of the tree at other paths share the image.
		cat "$GUEST_INIT" "$SELF" /bin/busybox | sha256sum
	} | sha256sum | cut -c1-16)
	out=$CACHE_DIR/initramfs-$kver-$key.cpio
	if [[ -s $out ]]; then
		echo "$out"
		return 0
	fi
	mkdir -p "$CACHE_DIR"
	tmp=$(mktemp -d "$CACHE_DIR/build.XXXXXX")
	mkdir -p "$tmp/bin" "$tmp/lib/modules" "$tmp/dev" "$tmp/proc" "$tmp/sys" "$tmp/newroot"
	cp /bin/busybox "$tmp/bin/busybox"
	file -b /bin/busybox 2>/dev/null | grep -q 'dynamically' &&
		{ rm -rf "$tmp"; die "/bin/busybox is dynamically linked: install busybox-static"; }
	install -m 0755 "$GUEST_INIT" "$tmp/init"
	: >"$tmp/modules.list"
	for f in "${files[@]}"; do
		base=${f##*/}
		case "$f" in
		*.ko) cp "$f" "$tmp/lib/modules/$base" ;;
		*.ko.xz) base=${base%.xz} && xz -dc "$f" >"$tmp/lib/modules/$base" ;;
		*.ko.zst) base=${base%.zst} && zstd -qdc "$f" >"$tmp/lib/modules/$base" ;;
		*.ko.gz) base=${base%.gz} && gzip -dc "$f" >"$tmp/lib/modules/$base" ;;
		*) rm -rf "$tmp" && die "unknown module file type: $f" ;;
		esac
		echo "$base" >>"$tmp/modules.list"
	done
	(cd "$tmp" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp.cpio"
	rm -rf "$tmp"
	# Older images of this kernel (other modules or scripts) are stale; running guests
	# already hold theirs in memory. Another kernel's image stays: the 6.1 and 6.12
	# suites of one run would otherwise rebuild each other's.
	find "$CACHE_DIR" -maxdepth 1 -name "initramfs-$kver-*.cpio" ! -name "${out##*/}" -delete 2>/dev/null || :
	mv -f "$tmp.cpio" "$out"
	say "built $out (${#files[@]} modules)"
	echo "$out"
}

# The image qemu boots for kernel $1; prints its path. Under TCG the bzImage spends 3
# to 6 s of emulated CPU decompressing itself (xz for 6.1, zstd for 6.12) at every
# boot; the same kernel uncompressed, entered through its PVH note (CONFIG_PVH, which
# Debian sets), skips that. It is cut out of the bzImage once per kernel (the setup
# header's payload_offset and payload_length) into the cache. Anything that does not
# give an ELF with the PVH entry note falls back to the bzImage, saying why;
# FCTL_LAB_PVH=0 asks for the bzImage (docs/lab.md, "Boot time").
boot_image() {
	local kver=$1 bz=/boot/vmlinuz-$1 out setup off len magic tmp dec
	# named by the bzImage's size and mtime: a kernel package replaced under the same
	# version gets its own
	out=$CACHE_DIR/vmlinux-$kver-$(stat -c '%s.%Y' "$bz" 2>/dev/null)
	if [[ ${FCTL_LAB_PVH:-1} == 0 ]]; then
		echo "$bz"
		return 0
	fi
	if [[ -s $out ]]; then
		echo "$out"
		return 0
	fi
	# setup_sects at 0x1f1; the payload's offset (from the protected-mode code, which
	# starts after the setup sectors) and length at 0x248 and 0x24c, little-endian
	setup=$(od -An -tu1 -j $((0x1f1)) -N1 "$bz" 2>/dev/null | tr -d ' ')
	read -r off len < <(od -An -tu4 -j $((0x248)) -N8 "$bz" 2>/dev/null)
	if [[ -z $setup || -z $off || -z $len ]] || ((len == 0)); then
		say "no payload found in $bz: booting the bzImage"
		echo "$bz"
		return 0
	fi
	((setup == 0)) && setup=4
	off=$(((setup + 1) * 512 + off))
	magic=$(od -An -tx1 -j "$off" -N6 "$bz" | tr -d ' \n')
	mkdir -p "$CACHE_DIR"
	tmp=$(mktemp "$CACHE_DIR/vmlinux.XXXXXX")
	case "$magic" in
	fd377a585a00) dec=(xz -dc) ;;
	28b52ffd*) dec=(zstd -qdc) ;;
	1f8b*) dec=(gzip -dc) ;;
	*) dec=(false) ;;
	esac
	tail -c +$((off + 1)) "$bz" | head -c "$len" | "${dec[@]}" >"$tmp" 2>/dev/null
	# XEN_ELFNOTE_PHYS32_ENTRY (18) is the PVH entry qemu looks for
	if [[ $(head -c4 "$tmp" | od -An -tx1 | tr -d ' \n') != 7f454c46 ]] ||
		! readelf -n "$tmp" 2>/dev/null | grep -Eq 'Xen[[:space:]]+0x[0-9a-f]+[[:space:]]+Unknown note type: \(0x00000012\)'; then
		rm -f "$tmp"
		say "no PVH-bootable kernel in $bz (payload $magic, or no readelf): booting the bzImage"
		echo "$bz"
		return 0
	fi
	chmod 0644 "$tmp"
	find "$CACHE_DIR" -maxdepth 1 -name "vmlinux-$kver-*" ! -name "${out##*/}" -delete 2>/dev/null || :
	mv -f "$tmp" "$out"
	say "cut $out out of $bz (booted through its PVH entry)"
	echo "$out"
}

cmd_setup() {
	while (($#)); do
		case "$1" in
		--kernel) need_val "--kernel needs a series, e.g. 6.1 or 6.12" "${2-}" && kernel_series "$2" && shift 2 ;;
		*) usage_die "setup: unknown argument '$1'" ;;
		esac
	done
	need_root
	ensure_packages
	local kver initrd
	kver=$(find_kver) || die "no $KERNEL_SERIES kernel with modules under /boot (run: lab.sh setup --kernel $KERNEL_SERIES)"
	initrd=$(build_initramfs "$kver")
	echo "kernel:    /boot/vmlinuz-$kver"
	echo "boots:     $(boot_image "$kver")"
	echo "initramfs: $initrd"
}

# --- topology ---------------------------------------------------------------

MAX_PORTS=16 # NICs per host: PCI slots 0x08..0x17

# The wiring of a lab, filled by plan_topology from the defaults or --wiring:
#   LINKS[]       "LINK HOST_A PORT_A HOST_B PORT_B" (hosts and ports as numbers)
#   LONE[]        "HOST PORT" of NICs with no peer
# and the per-NIC settings, keyed "HOST.PORT" (numbers):
#   NIC_MAC[] NIC_IFNAME[] NIC_MTU[]; HOST_NAME[HOST] (the guest's hostname).
LINKS=()
LONE=()
declare -A NIC_MAC=() NIC_IFNAME=() NIC_MTU=() HOST_NAME=()

# One line per link: "LINK HOST_A PORT_A HOST_B PORT_B" (hosts as numbers).
#   N=1: no links (h1.eth0 listens, nobody connects)
#   N=2: h1.eth0 <-> h2.eth0
#   N>=3 ring: h1.eth0 <-> h2.eth0, h2.eth1 <-> h3.eth0, ..., hN.eth1 <-> h1.eth1
links() {
	local n=$1 k a b pa pb
	if ((n == 2)); then
		echo "1 1 0 2 0"
	elif ((n >= 3)); then
		for ((k = 1; k <= n; k++)); do
			a=$k b=$((k % n + 1))
			if ((a == 1)); then pa=0; else pa=1; fi
			if ((b == 1)); then pb=1; else pb=0; fi
			echo "$k $a $pa $b $pb"
		done
	fi
}

mac_of() { printf '52:54:00:fa:%02x:%02x' "$1" "$2"; }

# parse_ref REF WHAT: "hN.ethK" -> REF_H=N REF_P=K, or dies naming WHAT.
parse_ref() {
	[[ $1 =~ ^h([1-9][0-9]{0,2})\.eth(0|[1-9][0-9]{0,2})$ ]] ||
		die "$2: '$1' is not HOST.PORT (hN.ethK, e.g. h1.eth0)"
	REF_H=${BASH_REMATCH[1]} REF_P=${BASH_REMATCH[2]}
	((REF_H <= MAX_HOSTS)) || die "$2: '$1': host index $REF_H is above the lab's limit of $MAX_HOSTS hosts"
	((REF_P < MAX_PORTS)) || die "$2: '$1': port index $REF_P is above eth$((MAX_PORTS - 1)) (at most $MAX_PORTS NICs per host)"
}

# plan_topology HOSTS HOSTS_GIVEN WIRING: fills LINKS, LONE and NIC_*
# defaults, and sets TOPO_HOSTS.  With an empty WIRING the default topology of
# HOSTS hosts; otherwise the explicit one, whose highest host is the host count
# unless --hosts gave more.
plan_topology() {
	local hosts=$1 given=$2 spec=$3 item a b ha pa hb pb k=0 maxh=0 h p
	local -A used=() top=()
	LINKS=() LONE=()
	if [[ -z $spec ]]; then
		mapfile -t LINKS < <(links "$hosts")
		((hosts == 1)) && LONE=("1 0")
	else
		local -a items
		[[ $spec == *, || $spec == ,* || $spec == *,,* ]] && die "--wiring: empty entry in '$spec'"
		IFS=, read -ra items <<<"$spec"
		for item in "${items[@]}"; do
			item=${item// /}
			[[ -n $item ]] || die "--wiring: empty entry in '$spec'"
			if [[ $item == *=* ]]; then
				a=${item%%=*} b=${item#*=}
				[[ $b != *=* ]] || die "--wiring: '$item' has more than one '='"
				parse_ref "$a" "--wiring" && ha=$REF_H pa=$REF_P
				parse_ref "$b" "--wiring" && hb=$REF_H pb=$REF_P
				((ha != hb)) || die "--wiring: '$item' links h$ha to itself (a link joins two different hosts)"
			else
				parse_ref "$item" "--wiring" && ha=$REF_H pa=$REF_P hb=0 pb=0
			fi
			for h in "$ha.$pa" "$hb.$pb"; do
				[[ $h == 0.0 ]] && continue
				[[ -z ${used[$h]:-} ]] ||
					die "--wiring: h${h%.*}.eth${h#*.} is used twice (a port faces one peer)"
				used[$h]=1
				((${h%.*} > maxh)) && maxh=${h%.*}
				((${h#*.} + 1 > ${top[${h%.*}]:-0})) && top[${h%.*}]=$((${h#*.} + 1))
			done
			if ((hb)); then
				k=$((k + 1))
				LINKS+=("$k $ha $pa $hb $pb")
			else
				LONE+=("$ha $pa")
			fi
		done
		if ((given)); then
			((maxh <= hosts)) || die "--wiring names h$maxh but --hosts is $hosts"
		else
			hosts=$maxh
		fi
		# Ports below a host's highest one that the spec leaves out are
		# NICs with no peer, so that ethK always is the K-th NIC.
		for ((h = 1; h <= hosts; h++)); do
			for ((p = 0; p < ${top[$h]:-0}; p++)); do
				[[ -n ${used[$h.$p]:-} ]] || LONE+=("$h $p")
			done
		done
	fi
	need_range "$hosts" 1 "$MAX_HOSTS" "--hosts must be 1..$MAX_HOSTS"
	TOPO_HOSTS=$hosts
	local line
	NIC_MAC=() NIC_IFNAME=() NIC_MTU=()
	for line in "${LINKS[@]}"; do
		read -r k ha pa hb pb <<<"$line"
		set_nic_defaults "$ha" "$pa"
		set_nic_defaults "$hb" "$pb"
	done
	for line in "${LONE[@]}"; do
		read -r ha pa <<<"$line"
		set_nic_defaults "$ha" "$pa"
	done
}

set_nic_defaults() {
	NIC_MAC[$1.$2]=$(mac_of "$1" "$2") NIC_IFNAME[$1.$2]=eth$2 NIC_MTU[$1.$2]=1500
}

# Lists the NICs a host has, "ethK ethL ..." (for messages).
nics_of() {
	local h=$1 p out=
	for ((p = 0; p < MAX_PORTS; p++)); do
		[[ -n ${NIC_MAC[$h.$p]:-} ]] && out+="${out:+ }eth$p"
	done
	echo "${out:-no NICs}"
}

# apply_overrides: the --mac, --ifname, --mtu and --name options (arrays
# OPT_MAC, OPT_IFNAME, OPT_MTU, OPT_NAME of REF=VALUE) over the defaults,
# checked against the topology and each other.
apply_overrides() {
	local kv ref val key h k
	local -A seen=() mac_at=() name_at=()
	for kv in ${OPT_MAC[@]+"${OPT_MAC[@]}"}; do
		[[ $kv == *=* ]] || die "--mac needs HOST.PORT=MAC, got '$kv'"
		ref=${kv%%=*} val=${kv#*=}
		nic_key "$ref" --mac
		[[ -z ${seen[mac$key]:-} ]] || die "--mac $ref given twice"
		seen[mac$key]=1
		[[ $val =~ ^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$ ]] ||
			die "--mac $ref: '$val' is not a MAC address (six hex octets with ':', e.g. 0c:42:a1:00:01:00)"
		val=${val,,}
		((16#${val:0:2} % 2 == 0)) || die "--mac $ref: $val is a multicast address (the first octet must be even)"
		[[ $val != 00:00:00:00:00:00 ]] || die "--mac $ref: 00:00:00:00:00:00 is not a usable address"
		NIC_MAC[$key]=$val
	done
	for kv in ${OPT_IFNAME[@]+"${OPT_IFNAME[@]}"}; do
		[[ $kv == *=* ]] || die "--ifname needs HOST.PORT=NAME, got '$kv'"
		ref=${kv%%=*} val=${kv#*=}
		nic_key "$ref" --ifname
		[[ -z ${seen[if$key]:-} ]] || die "--ifname $ref given twice"
		seen[if$key]=1
		[[ $val =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$ ]] ||
			die "--ifname $ref: '$val' is not an interface name (1..15 of A-Z a-z 0-9 _ . -, not starting with . or -)"
		[[ $val != lo && $val != labtmp* ]] || die "--ifname $ref: '$val' is reserved in the guest"
		NIC_IFNAME[$key]=$val
	done
	for kv in ${OPT_MTU[@]+"${OPT_MTU[@]}"}; do
		[[ $kv == *=* ]] || die "--mtu needs HOST.PORT=MTU, got '$kv'"
		ref=${kv%%=*} val=${kv#*=}
		nic_key "$ref" --mtu
		[[ -z ${seen[mtu$key]:-} ]] || die "--mtu $ref given twice"
		seen[mtu$key]=1
		need_range "$val" 68 65535 "--mtu $ref: '$val' must be 68..65535"
		NIC_MTU[$key]=$((10#$val))
	done
	HOST_NAME=()
	for kv in ${OPT_NAME[@]+"${OPT_NAME[@]}"}; do
		[[ $kv == *=* ]] || die "--name needs HOST=NAME, got '$kv'"
		ref=${kv%%=*} val=${kv#*=}
		[[ $ref =~ ^h([1-9][0-9]{0,2})$ ]] || die "--name $kv: '$ref' is not a lab host (h1, h2, ...)"
		h=${BASH_REMATCH[1]}
		((h <= TOPO_HOSTS)) || die "--name $kv: the lab has $TOPO_HOSTS host(s), h1..h$TOPO_HOSTS"
		[[ -z ${HOST_NAME[$h]:-} ]] || die "--name $ref given twice"
		[[ $val =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$ ]] ||
			die "--name $kv: '$val' is not a host name (1..63 of A-Z a-z 0-9 _ . -, starting with a letter or digit)"
		if [[ $val =~ ^h[0-9]+$ && $val != "$ref" ]]; then
			die "--name $kv: '$val' is another lab host's id; exec and status could not tell them apart"
		fi
		[[ -z ${name_at[$val]:-} ]] || die "--name: '$val' is given to both ${name_at[$val]} and $ref"
		name_at[$val]=$ref
		HOST_NAME[$h]=$val
	done
	for ((h = 1; h <= TOPO_HOSTS; h++)); do
		[[ -n ${HOST_NAME[$h]:-} ]] || HOST_NAME[$h]=h$h
		[[ -z ${name_at[h$h]:-} || ${name_at[h$h]} == "h$h" ]] || die "--name: h$h is a lab host id"
	done
	# A guest tells its NICs apart by MAC; peers and switches do too.
	local -A if_at=()
	for k in "${!NIC_MAC[@]}"; do
		val=${NIC_MAC[$k]}
		[[ -z ${mac_at[$val]:-} ]] ||
			die "MAC $val is on both ${mac_at[$val]} and h${k%.*}.eth${k#*.} (every NIC needs its own)"
		mac_at[$val]=h${k%.*}.eth${k#*.}
		val=${k%.*}/${NIC_IFNAME[$k]}
		[[ -z ${if_at[$val]:-} ]] ||
			die "interface name ${NIC_IFNAME[$k]} is on both ${if_at[$val]} and h${k%.*}.eth${k#*.} (--ifname)"
		if_at[$val]=h${k%.*}.eth${k#*.}
	done
}

# nic_key REF OPTION: sets key to "H.P" of an existing NIC, or dies.
nic_key() {
	parse_ref "$1" "$2"
	key=$REF_H.$REF_P
	((REF_H <= TOPO_HOSTS)) || die "$2 $1: the lab has $TOPO_HOSTS host(s), h1..h$TOPO_HOSTS"
	[[ -n ${NIC_MAC[$key]:-} ]] ||
		die "$2 $1: h$REF_H has no eth$REF_P in this wiring (it has: $(nics_of "$REF_H"))"
}

# One line per NIC: "HOST PORT MAC PEER_HOST PEER_PORT ROLE TCPPORT IFNAME MTU"
# from LINKS, LONE, the NIC_* settings and the chosen TCP ports ("LINK PORT"
# lines on stdin).  The lower-numbered host of a link listens, the other
# connects, so hosts can be started in order h1, h2, ... with each peer
# already listening.  A NIC with no peer has role "none" (a qemu hub port
# with nothing else on it), except the single NIC of the default one-host lab,
# which listens as it always did.
nic_table() {
	local n=$1 k a pa b pb p la lb line
	local -A tcp=()
	while read -r k p; do tcp[$k]=$p; done
	{
		for line in "${LINKS[@]}"; do
			read -r k a pa b pb <<<"$line"
			if ((a < b)); then la=listen lb=connect; else la=connect lb=listen; fi
			nic_row "$a" "$pa" "h$b eth$pb" "$la" "${tcp[$k]}"
			nic_row "$b" "$pb" "h$a eth$pa" "$lb" "${tcp[$k]}"
		done
		for line in "${LONE[@]}"; do
			read -r a pa <<<"$line"
			if ((n == 1)) && ((${#LINKS[@]} == 0)) && [[ -z $WIRING ]]; then
				nic_row "$a" "$pa" "- -" listen "${tcp[1]:-0}"
			else
				nic_row "$a" "$pa" "- -" none -
			fi
		done
	} | sort -k1.2,1n -k2.4,2n
}

nic_row() {
	echo "h$1 eth$2 ${NIC_MAC[$1.$2]} $3 $4 $5 ${NIC_IFNAME[$1.$2]} ${NIC_MTU[$1.$2]}"
}

port_in_use() { [[ -n $(ss -Hltn "sport = :$1" 2>/dev/null) ]]; }

pick_ports() {
	local count=$1 i p
	local -A used=()
	for ((i = 1; i <= count; i++)); do
		while :; do
			p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
			[[ -z ${used[$p]:-} ]] && ! port_in_use "$p" && break
		done
		used[$p]=1
		echo "$i $p"
	done
}

# --- state ------------------------------------------------------------------

# The host paths the guests must see although a guest tmpfs covers them (/tmp,
# /root, ...): the project tree, then FCTL_LAB_KEEP (absolute paths, ':'-separated,
# e.g. a CI output directory). Printed as the guests' lab.keep= value.
lab_keep() {
	local keep=$REPO k
	local IFS=:
	for k in ${FCTL_LAB_KEEP:-}; do
		[[ $k == /* && $k != *[[:space:]]* ]] || die "FCTL_LAB_KEEP: '$k' is not an absolute path without spaces"
		keep+=:$(realpath -m -- "$k")
	done
	printf '%s' "$keep"
}
# The lab's paths are written out: $LAB_DIR/lab.state, a host's $LAB_DIR/hN (a helper
# that printed them cost a subshell at every use, on the path of every exec).

state_get() {
	local key=$1 f
	f=$LAB_DIR/lab.state
	[[ -f $f ]] || return 1
	sed -n "s/^$key=//p" "$f" | tail -n1
}

kill_qemus() {
	local hd h pid
	local -a pids=()
	for hd in "$LAB_DIR"/h[0-9]*; do
		[[ -d $hd ]] || continue
		h=${hd##*/}
		if pid=$(qemu_pid "$h"); then
			pids+=("$pid")
			kill -TERM "$pid" 2>/dev/null || :
		fi
	done
	((${#pids[@]} == 0)) && return 0
	local alive
	for _ in $(seq 50); do
		alive=0
		for pid in "${pids[@]}"; do
			if [[ -d /proc/$pid ]]; then alive=1; fi
		done
		((alive)) || return 0
		sleep 0.1
	done
	for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || :; done
	return 0
}

# Host-side watchdog: kills this lab's qemus at the deadline even if whoever
# ran `up` is gone.  Runs in its own session; `down` kills its group.
cmd_watchdog() {
	LAB_DIR=$1
	local deadline=$2 t
	echo "$$" >"$LAB_DIR/watchdog.pid"
	trap 'exit 0' TERM INT
	while :; do
		[[ -f $LAB_DIR/lab.state ]] || exit 0
		# the clock and the pause without a program: this loop lives as long as the lab
		((EPOCHSECONDS >= deadline)) && break
		nap 2
	done
	echo "lifetime over at $(date -u +%FT%TZ): stopping the lab's guests"
	kill_qemus
	echo "expired=$(date +%s)" >>"$LAB_DIR/lab.state"
}

# --- up / down --------------------------------------------------------------

# The lab directory is root's alone: lab.sh runs as root and trusts what it finds
# there (the lock, nics.tsv, lab.state, each guest's queue of jobs), so a directory
# that another user made or can write into (a predictable name under /var/tmp) is
# refused, and so is a symlink. A new one is made 0700.
secure_lab_dir() {
	local d=$1 parent owner mode
	parent=$(dirname -- "$d")
	if [[ -L $d ]]; then
		die "lab directory $d is a symbolic link; refusing it (remove it, or use --dir)"
	fi
	if [[ ! -e $d ]]; then
		mkdir -p -- "$parent" || die "cannot create $parent"
		mkdir -m 0700 -- "$d" || die "cannot create the lab directory $d"
		return 0
	fi
	[[ -d $d ]] || die "lab directory $d exists and is not a directory"
	read -r owner mode < <(stat -c '%u %a' -- "$d")
	[[ $owner == 0 ]] || die "lab directory $d belongs to uid $owner, not root; refusing it (remove it, or use --dir)"
	((8#$mode & 8#022)) && die "lab directory $d is writable by group or others (mode $mode); refusing it"
	return 0
}

LOCKFD=
with_lock() {
	[[ -n $LOCKFD ]] && return 0
	secure_lab_dir "$LAB_DIR"
	exec {LOCKFD}>"$LAB_DIR/.lock"
	flock -w 120 "$LOCKFD" || die "another lab.sh holds $LAB_DIR/.lock"
}

cmd_down() {
	with_lock
	local pid hd
	if pid=$(watchdog_pid); then
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || :
	fi
	kill_qemus
	for hd in "$LAB_DIR"/h[0-9]*; do
		[[ -d $hd ]] && rm -rf -- "$hd"
	done
	rm -f -- "$LAB_DIR/.nap" "$LAB_DIR/lab.state" "$LAB_DIR/nics.tsv" "$LAB_DIR/names.tsv" "$LAB_DIR/watchdog.pid" \
		"$LAB_DIR/watchdog.log"
	rm -f -- "$LAB_DIR/.lock"
	rmdir -- "$LAB_DIR" 2>/dev/null || :
	return 0
}

# the management NIC's MAC of host number N (--mgmt-port, --guestfwd)
mgmt_mac() { printf '52:54:00:fb:00:%02x' "$1"; }

check_path_ok() {
	[[ $1 == /* ]] || die "path must be absolute: $1"
	[[ $1 =~ ^[A-Za-z0-9_./+-]+$ ]] || die "path has characters the kernel command line cannot carry: $1"
}

start_qemu() {
	local h=$1 image=$2 initrd=$3 mem=$4 hd n
	local -a args nicargs=()
	hd=$LAB_DIR/$h
	n=${h#h}
	local _h port mac _ph _pp role tcp _if _mtu i=0
	while read -r _h port mac _ph _pp role tcp _if _mtu; do
		[[ $_h == "$h" ]] || continue
		case "$role" in
		listen) nicargs+=(-netdev "socket,id=n$i,listen=127.0.0.1:$tcp") ;;
		connect) nicargs+=(-netdev "socket,id=n$i,connect=127.0.0.1:$tcp") ;;
		# A hub of its own with nothing else on it: a NIC with no peer.
		*) nicargs+=(-netdev "hubport,id=n$i,hubid=$i") ;;
		esac
		nicargs+=(-device "virtio-net-pci,netdev=n$i,mac=$mac,addr=$(printf '0x%x' $((8 + ${port#eth})))")
		i=$((i + 1))
	done <"$LAB_DIR/nics.tsv"
	# the management NIC: qemu's user network, isolated (restrict=on: no packet of the
	# guest's leaves it), with one forward from the build host's loopback to the guest
	# (--mgmt-port) and/or forwards from the guest's 10.0.2.100 to the build host's
	# loopback (--guestfwd): a relay started per connection, as a chardev guestfwd
	# would be one stream for all connections, opened once when qemu starts
	local hp gp mmac='' fwd=''
	if [[ -f $hd/mgmt ]]; then
		read -r hp gp mmac <"$hd/mgmt"
		fwd=",hostfwd=tcp:127.0.0.1:$hp-10.0.2.15:$gp"
	fi
	if [[ -f $hd/guestfwd ]]; then
		while read -r gp hp; do
			fwd+=",guestfwd=tcp:$GUESTFWD_ADDR:$gp-cmd:$GUESTFWD_RELAY $hp"
		done <"$hd/guestfwd"
		[[ -n $mmac ]] || mmac=$(mgmt_mac "$n")
	fi
	if [[ -n $mmac ]]; then
		nicargs+=(-netdev "user,id=mg,restrict=on,net=10.0.2.0/24$fwd"
			-device "virtio-net-pci,netdev=mg,mac=$mmac,addr=0x1f")
	fi
	# qboot (Debian's qemu-system-data) loads the kernel at once where SeaBIOS takes
	# seconds under TCG: 1 to 3 s off every guest's boot (docs/lab.md, "Boot time")
	local -a fw=()
	[[ -r $QBOOT ]] && fw=(-bios "$QBOOT")
	# norandmaps: TCG reuses the code it translated for a program's libraries only at the
	# same virtual addresses, so with randomized mappings every process start translated
	# ld.so and libc again (docs/lab.md, "How it works"). FCTL_LAB_ASLR=1 keeps it.
	local aslr=norandmaps
	[[ ${FCTL_LAB_ASLR:-0} == 1 ]] && aslr=
	# pci=noacpi: the PCI devices' legacy interrupt lines are not routed through ACPI's
	# link objects, whose AML the guest interprets at every boot (0.2 s of emulated CPU
	# per link under TCG); every device here is virtio with MSI-X and uses no INTx line
	# (docs/lab.md, "How it works"). FCTL_LAB_PCI_ACPI=1 keeps the routing.
	local pci=pci=noacpi
	[[ ${FCTL_LAB_PCI_ACPI:-0} == 1 ]] && pci=
	# no_timer_check: the kernel's boot-time check that the IO-APIC timer interrupt
	# arrives within a few ticks fails when the host starves the emulated CPU (seen on
	# a machine at load 28: "IO-APIC + timer doesn't work", a panic), as in any VM
	args=(
		-name "fctl-lab-$h,process=fctl-lab-$h"
		"${fw[@]}"
		-accel "tcg,tb-size=$TB_MB" -cpu max -smp 1 -m "$mem"
		-nodefaults -display none -monitor none -no-reboot
		-serial "file:$hd/console.log"
		-kernel "$image" -initrd "$initrd"
		-append "console=ttyS0 panic=-1 $aslr $pci no_timer_check lab.host=$h lab.share=$hd lab.runner=$GUEST_RUNNER lab.keep=$(lab_keep)"
		-virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap"
		-virtfs "local,path=/usr,mount_tag=hostusr,security_model=passthrough,readonly=on,multidevs=remap"
		-virtfs "local,path=$hd,mount_tag=labshare,security_model=passthrough,multidevs=remap"
		"${nicargs[@]}"
		# the doorbell: a byte from the host (ring_bell) wakes the runner, which sleeps on
		# the port instead of polling the share (docs/lab.md, "How it works")
		-device virtio-serial-pci,id=vser0
		-chardev "pipe,id=bell,path=$hd/bell"
		-device virtserialport,bus=vser0.0,chardev=bell,name=fctl.bell
		-pidfile "$hd/qemu.pid" -daemonize
	)
	date +%s.%N >"$hd/started"
	# The lock fd must not live on in the daemonized qemu.
	qemu-system-x86_64 "${args[@]}" </dev/null >"$hd/qemu.err" 2>&1 {LOCKFD}>&-
}

# --kernel SERIES: "6.1", "6.12" (digits and one dot)
kernel_series() {
	[[ $1 =~ ^[0-9]+\.[0-9]+$ ]] || die "--kernel takes a series such as 6.1 or 6.12, not '$1'"
	KERNEL_SERIES=$1
}

cmd_up() {
	local hosts=2 hosts_given=0 mem=512 lifetime=1800 boot_timeout=180
	WIRING=
	OPT_MAC=() OPT_IFNAME=() OPT_MTU=() OPT_NAME=()
	local mgmt_port='' gf
	local -a guestfwd=()
	while (($#)); do
		case "$1" in
		--kernel) need_val "--kernel needs a series, e.g. 6.1 or 6.12" "${2-}" && kernel_series "$2" && shift 2 ;;
		--hosts) need_val "--hosts needs a number" "${2-}" && hosts=$2 hosts_given=1 && shift 2 ;;
		--wiring)
			need_val "--wiring needs a spec, e.g. h1.eth0=h2.eth0,h2.eth1=h3.eth0" "${2-}" && WIRING=$2
			shift 2
			;;
		--mac) need_val "--mac needs HOST.PORT=MAC" "${2-}" && OPT_MAC+=("$2") && shift 2 ;;
		--ifname) need_val "--ifname needs HOST.PORT=NAME" "${2-}" && OPT_IFNAME+=("$2") && shift 2 ;;
		--mtu) need_val "--mtu needs HOST.PORT=MTU" "${2-}" && OPT_MTU+=("$2") && shift 2 ;;
		--name) need_val "--name needs HOST=NAME" "${2-}" && OPT_NAME+=("$2") && shift 2 ;;
		--dir) need_val "--dir needs a path" "${2-}" && LAB_DIR=$2 && shift 2 ;;
		--mem) need_val "--mem needs MB" "${2-}" && mem=$2 && shift 2 ;;
		--lifetime) need_val "--lifetime needs seconds" "${2-}" && lifetime=$2 && shift 2 ;;
		--boot-timeout) need_val "--boot-timeout needs seconds" "${2-}" && boot_timeout=$2 && shift 2 ;;
		--mgmt-port) need_val "--mgmt-port needs a TCP port" "${2-}" && mgmt_port=$2 && shift 2 ;;
		--guestfwd) need_val "--guestfwd needs GUESTPORT=HOSTPORT" "${2-}" && guestfwd+=("$2") && shift 2 ;;
		*) usage_die "up: unknown argument '$1'" ;;
		esac
	done
	need_range "$hosts" 1 "$MAX_HOSTS" "--hosts must be 1..$MAX_HOSTS"
	need_range "$mem" 256 65536 "--mem must be 256..65536 (MB)"
	need_range "$lifetime" 10 604800 "--lifetime must be 10..604800 (s)"
	need_range "$boot_timeout" 1 3600 "--boot-timeout must be 1..3600 (s)"
	[[ -z $mgmt_port ]] || need_range "$mgmt_port" 1 65535 "--mgmt-port must be 1..65535"
	for gf in "${guestfwd[@]}"; do
		[[ $gf =~ ^[0-9]+=[0-9]+$ ]] || usage_die "--guestfwd needs GUESTPORT=HOSTPORT, not '$gf'"
		need_range "${gf%=*}" 1 65535 "--guestfwd: GUESTPORT must be 1..65535"
		need_range "${gf#*=}" 1 65535 "--guestfwd: HOSTPORT must be 1..65535"
	done
	((${#guestfwd[@]} == 0)) || [[ -x $GUESTFWD_RELAY ]] || die "--guestfwd: $GUESTFWD_RELAY is missing or not executable"
	# The whole wiring is checked before anything starts.
	plan_topology "$hosts" "$hosts_given" "$WIRING"
	hosts=$TOPO_HOSTS
	apply_overrides
	need_root
	check_path_ok "$LAB_DIR"
	check_path_ok "$SCRIPTS"
	secure_lab_dir "$LAB_DIR"

	# Refuse to start over a live lab; clean up a dead one.
	if [[ -f $LAB_DIR/lab.state ]]; then
		local h alive=0
		for h in "$LAB_DIR"/h[0-9]*; do
			qemu_pid "${h##*/}" >/dev/null && alive=1
		done
		((alive)) && die "a lab is already up in $LAB_DIR (run: $PROG down --dir $LAB_DIR)"
		(cmd_down)
	fi

	ensure_packages
	local kver initrd image avail need
	kver=$(find_kver) || die "no $KERNEL_SERIES kernel with modules under /boot (run: lab.sh setup --kernel $KERNEL_SERIES)"
	initrd=$(build_initramfs "$kver")
	image=$(boot_image "$kver")
	say "kernel $kver (series $KERNEL_SERIES), booting $image"

	avail=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)
	need=$((hosts * (mem + TB_MB + 96) + 512))
	((avail >= need)) || die "not enough memory: $hosts guests need about $need MB, $avail MB available"

	with_lock
	trap 'say "interrupted: tearing the lab down"; cmd_down; exit 130' INT TERM
	local deadline=$(($(date +%s) + lifetime)) i h nlinks
	for ((i = 1; i <= hosts; i++)); do
		rm -rf -- "${LAB_DIR:?}/h$i"
		mkdir -p "$LAB_DIR/h$i/queue" "$LAB_DIR/h$i/jobs"
		# the doorbell's two FIFOs (qemu's pipe chardev: PATH.in to the guest, PATH.out back)
		mkfifo -m 0600 "$LAB_DIR/h$i/bell.in" "$LAB_DIR/h$i/bell.out"
	done
	nlinks=${#LINKS[@]}
	((nlinks == 0)) && nlinks=1
	# one draw for the wires and the management forwards: no port twice
	local -a ports=()
	mapfile -t ports < <(pick_ports $((nlinks + hosts)))
	printf '%s\n' "${ports[@]:0:nlinks}" | nic_table "$hosts" >"$LAB_DIR/nics.tsv"
	: >"$LAB_DIR/names.tsv"
	for ((i = 1; i <= hosts; i++)); do
		echo "h$i ${HOST_NAME[$i]}" >>"$LAB_DIR/names.tsv"
		# What the guest runner needs: its hostname, and "MAC IFNAME MTU"
		# per NIC (it names NICs by MAC).
		echo "${HOST_NAME[$i]}" >"$LAB_DIR/h$i/hostname"
		awk -v h="h$i" '$1 == h { print $3, $8, $9 }' "$LAB_DIR/nics.tsv" >"$LAB_DIR/h$i/nics"
		# the management NIC (--mgmt-port): "HOSTPORT GUESTPORT MAC", read by start_qemu
		# (a reboot keeps it) and status; the runner names it mgmt0 and addresses it
		if [[ -n $mgmt_port ]]; then
			echo "${ports[nlinks + i - 1]#* } $mgmt_port $(mgmt_mac "$i")" >"$LAB_DIR/h$i/mgmt"
		fi
		# --guestfwd: "GUESTPORT HOSTPORT" a line, read by start_qemu (a reboot keeps them)
		if ((${#guestfwd[@]})); then
			printf '%s\n' "${guestfwd[@]}" | tr '=' ' ' >"$LAB_DIR/h$i/guestfwd"
		fi
		if [[ -n $mgmt_port ]] || ((${#guestfwd[@]})); then
			echo "$(mgmt_mac "$i") mgmt0 1500" >>"$LAB_DIR/h$i/nics"
		fi
	done
	cat >"$LAB_DIR/lab.state" <<-EOF
		hosts=$hosts
		kver=$kver
		mem=$mem
		initrd=$initrd
		image=$image
		started=$(date +%s)
		deadline=$deadline
	EOF
	setsid "$SELF" __watchdog "$LAB_DIR" "$deadline" </dev/null >"$LAB_DIR/watchdog.log" 2>&1 {LOCKFD}>&- &
	for _ in $(seq 50); do
		[[ -s $LAB_DIR/watchdog.pid ]] && break
		sleep 0.1
	done
	watchdog_pid >/dev/null || { cmd_down; die "the lifetime watchdog did not start"; }

	# Start in order: each host's peers with lower numbers already listen
	# (-daemonize returns once qemu is set up and listening).  The guests
	# then boot in parallel.
	for ((i = 1; i <= hosts; i++)); do
		if ! start_qemu "h$i" "$image" "$initrd" "$mem"; then
			say "qemu for h$i failed to start"
			console_tail "h$i"
			cmd_down
			exit 1
		fi
	done

	# A connect that found nobody listening fails silently inside qemu:
	# check that every link is an established loopback connection.
	local _h _port _mac _ph _pp role tcp _if _mtu
	while read -r _h _port _mac _ph _pp role tcp _if _mtu; do
		[[ $role == listen && $_ph != - ]] || continue
		for _ in $(seq 30); do
			[[ -n $(ss -Htn state established "( sport = :$tcp )" 2>/dev/null) ]] && break
			sleep 0.1
		done
		if [[ -z $(ss -Htn state established "( sport = :$tcp )" 2>/dev/null) ]]; then
			say "link $_h.$_port <-> $_ph.$_pp (127.0.0.1:$tcp) is not connected"
			cmd_down
			exit 1
		fi
	done <"$LAB_DIR/nics.tsv"

	local t0 pending dead
	t0=$EPOCHSECONDS
	while :; do
		pending=0 dead=
		for ((i = 1; i <= hosts; i++)); do
			h=h$i
			[[ -f $LAB_DIR/$h/ready ]] && continue
			pending=$((pending + 1))
			qemu_pid "$h" >/dev/null || dead="$dead $h"
		done
		((pending == 0)) && break
		if [[ -n $dead ]]; then
			say "guest(s)$dead stopped while booting"
			for h in $dead; do console_tail "$h"; done
			cmd_down
			exit 1
		fi
		if ((EPOCHSECONDS - t0 >= boot_timeout)); then
			say "boot timeout (${boot_timeout}s): not ready:"
			for ((i = 1; i <= hosts; i++)); do
				[[ -f $LAB_DIR/h$i/ready ]] || console_tail "h$i"
			done
			cmd_down
			exit 1
		fi
		nap 0.2 # (a boot under load takes a minute: no sleep and date started each round)
	done
	for ((i = 1; i <= hosts; i++)); do
		h=h$i
		awk -v s="$(<"$LAB_DIR/$h/started")" -v r="$(stat -c %.3Y "$LAB_DIR/$h/ready")" \
			'BEGIN { printf "%.1f\n", r - s }' >"$LAB_DIR/$h/boot_seconds"
	done
	echo "phase=running" >>"$LAB_DIR/lab.state"
	trap - INT TERM
	cmd_status
}

# --- reboot -----------------------------------------------------------------

# A power cycle of one guest: its qemu is killed (no shutdown inside: what a power cut
# does), then started again with the same kernel, initramfs, memory, NICs and MACs. The
# guest boots from nothing again: its tmpfs directories (/var/lib/fabricctl, /run, /tmp)
# are empty, its links and MACsec devices gone. Its share DIR/hN keeps every file a test
# put there (a state directory with --state-dir, for example), except the job queue,
# which starts empty (jobs still running are lost). Only a host that connects to all its
# peers can be rebooted: qemu's listening end of a link takes a peer that connects
# again, but a connecting end does not connect again after its listener went away, so
# rebooting a lower-numbered end would leave its links dead (reboot the other end).
cmd_reboot() {
	local h= boot_timeout=180
	while (($#)); do
		case "$1" in
		--dir) need_val "--dir needs a path" "${2-}" && LAB_DIR=$2 && shift 2 ;;
		--boot-timeout) need_val "--boot-timeout needs seconds" "${2-}" && boot_timeout=$2 && shift 2 ;;
		-*) usage_die "reboot: unknown option '$1'" ;;
		*)
			[[ -z $h ]] || usage_die "reboot: extra argument '$1'"
			h=$1
			shift
			;;
		esac
	done
	[[ -n $h ]] || usage_die "usage: $PROG reboot [--dir DIR] [--boot-timeout SEC] HOST"
	need_range "$boot_timeout" 1 3600 "--boot-timeout must be 1..3600 (s)"
	need_root
	require_host "$h"
	h=$HOST_ID
	local _h _port _mac ph _pp role tcp _if _mtu
	while read -r _h _port _mac ph _pp role tcp _if _mtu; do
		[[ $_h == "$h" && $role == listen ]] &&
			die "reboot: $h listens for its link to $ph (127.0.0.1:$tcp), and $ph's qemu would not connect again: reboot $ph instead"
	done <"$LAB_DIR/nics.tsv"
	with_lock
	local hd pid image initrd mem kver
	hd=$LAB_DIR/$h
	image=$(state_get image) && initrd=$(state_get initrd) && mem=$(state_get mem) && kver=$(state_get kver) ||
		die "reboot: $LAB_DIR/lab.state is incomplete"
	# The cache keeps one initramfs per kernel: a lab booted since with other scripts (another
	# checkout's lab.sh) may have pruned this one, which the running guests no longer need
	[[ -s $initrd ]] || initrd=$(build_initramfs "$kver")
	[[ -s $image ]] || image=$(boot_image "$kver")
	pid=$(qemu_pid "$h") || die "reboot: $h is not running"
	kill -KILL "$pid" 2>/dev/null || :
	for _ in $(seq 100); do
		[[ -d /proc/$pid ]] || break
		sleep 0.1
	done
	[[ -d /proc/$pid ]] && die "reboot: $h's qemu (pid $pid) did not stop"
	rm -f -- "$hd/ready" "$hd/boot_seconds" "$hd/qemu.pid"
	rm -rf -- "$hd/queue" "$hd/jobs"
	mkdir -p "$hd/queue" "$hd/jobs"
	# the boot before is kept beside the new one (lab_guest_trouble reads console.log)
	[[ -f $hd/console.log ]] && mv -f -- "$hd/console.log" "$hd/console.before-reboot.log"
	start_qemu "$h" "$image" "$initrd" "$mem" || { console_tail "$h"; die "reboot: qemu for $h failed to start"; }
	while read -r _h _port _mac ph _pp role tcp _if _mtu; do
		[[ $_h == "$h" && $role == connect ]] || continue
		for _ in $(seq 30); do
			[[ -n $(ss -Htn state established "( dport = :$tcp )" 2>/dev/null) ]] && break
			sleep 0.1
		done
		[[ -n $(ss -Htn state established "( dport = :$tcp )" 2>/dev/null) ]] ||
			die "reboot: $h's link to $ph (127.0.0.1:$tcp) did not connect again"
	done <"$LAB_DIR/nics.tsv"
	local t0=$EPOCHSECONDS
	until [[ -f $hd/ready ]]; do
		qemu_pid "$h" >/dev/null || { console_tail "$h"; die "reboot: $h stopped while booting"; }
		((EPOCHSECONDS - t0 < boot_timeout)) || { console_tail "$h"; die "reboot: $h not ready after ${boot_timeout}s"; }
		nap 0.2
	done
	awk -v s="$(<"$hd/started")" -v r="$(stat -c %.3Y "$hd/ready")" \
		'BEGIN { printf "%.1f\n", r - s }' >"$hd/boot_seconds"
	say "$h rebooted: ready after $(<"$hd/boot_seconds") s"
}

# --- status -----------------------------------------------------------------

cmd_status() {
	local json=0
	while (($#)); do
		case "$1" in
		--json) json=1 && shift ;;
		--dir) need_val "--dir needs a path" "${2-}" && LAB_DIR=$2 && shift 2 ;;
		*) usage_die "status: unknown argument '$1'" ;;
		esac
	done
	local hosts kver deadline expired i h pid ready alive boot mgmt gfwd rc=0 nup=0
	if ! hosts=$(state_get hosts) || [[ -z $hosts ]]; then
		if ((json)); then
			jq -n --arg dir "$LAB_DIR" '{dir: $dir, up: false, hosts: [], nics: [], links: [], wiring: ""}'
		else
			echo "lab: not up in $LAB_DIR"
		fi
		return 1
	fi
	kver=$(state_get kver) deadline=$(state_get deadline) expired=$(state_get expired || :)
	local hosts_json="[]" nics_json links_json wiring name
	local -A names=()
	if [[ -f $LAB_DIR/names.tsv ]]; then
		while read -r h name; do names[$h]=$name; done <"$LAB_DIR/names.tsv"
	fi
	for ((i = 1; i <= hosts; i++)); do
		h=h$i
		name=${names[$h]:-$h}
		if pid=$(qemu_pid "$h"); then alive=true; else alive=false pid=0; fi
		[[ -f $LAB_DIR/$h/ready ]] && ready=true || ready=false
		boot=$(cat "$LAB_DIR/$h/boot_seconds" 2>/dev/null || echo null)
		mgmt=null
		[[ -f $LAB_DIR/$h/mgmt ]] && read -r mgmt _ <"$LAB_DIR/$h/mgmt" && mgmt="\"127.0.0.1:$mgmt\""
		# --guestfwd: [{guest: "10.0.2.100:G", host: "127.0.0.1:H"}...], [] without
		gfwd=
		[[ -f $LAB_DIR/$h/guestfwd ]] &&
			gfwd=$(awk -v a="$GUESTFWD_ADDR" '{ printf "%s{\"guest\":\"%s:%s\",\"host\":\"127.0.0.1:%s\"}", n++ ? "," : "", a, $1, $2 }' \
				"$LAB_DIR/$h/guestfwd")
		gfwd="[$gfwd]"

		[[ $alive == true && $ready == true ]] && nup=$((nup + 1))
		hosts_json=$(jq -c --arg h "$h" --arg name "$name" --argjson pid "$pid" --argjson alive "$alive" \
			--argjson ready "$ready" --argjson boot "$boot" --argjson mgmt "$mgmt" --argjson gfwd "$gfwd" \
			--arg console "$LAB_DIR/$h/console.log" --arg share "$LAB_DIR/$h" \
			'. + [{host: $h, name: $name, pid: $pid, alive: $alive, ready: $ready, boot_seconds: $boot,
			       console: $console, share: $share, mgmt: $mgmt, guestfwd: $gfwd}]' <<<"$hosts_json")
	done
	# nics.tsv of a lab started before ifname and mtu existed has 7 columns.
	local names_json='{}'
	[[ -f $LAB_DIR/names.tsv ]] && names_json=$(jq -R -s -c 'split("\n") | map(select(length > 0) |
		split(" ") | {(.[0]): .[1]}) | add // {}' <"$LAB_DIR/names.tsv")
	nics_json=$(jq -R -s -c --argjson names "$names_json" \
		'split("\n") | map(select(length > 0) | split(" ") |
		{host: .[0], name: ($names[.[0]] // .[0]), port: .[1], ifname: (.[7] // .[1]),
		 mac: .[2], mtu: ((.[8] // "1500") | tonumber),
		 peer_host: (if .[3] == "-" then null else .[3] end),
		 peer_port: (if .[4] == "-" then null else .[4] end),
		 role: .[5], tcp_port: (if .[6] == "-" then null else (.[6] | tonumber) end)})' \
		<"$LAB_DIR/nics.tsv")
	# Each link once (from its listening end), and a --wiring spec that
	# rebuilds the same topology.
	links_json=$(jq -c '. as $all | [.[] | select(.peer_host != null and .role == "listen") |
		. as $a | ($all[] | select(.host == $a.peer_host and .port == $a.peer_port)) as $b |
		{a: {host: $a.host, name: $a.name, port: $a.port, ifname: $a.ifname, mac: $a.mac},
		 b: {host: $b.host, name: $b.name, port: $b.port, ifname: $b.ifname, mac: $b.mac},
		 tcp_port: $a.tcp_port}]' <<<"$nics_json")
	wiring=$(jq -r '[.[] | if .peer_host == null then "\(.host).\(.port)"
		elif .role == "listen" then "\(.host).\(.port)=\(.peer_host).\(.peer_port)" else empty end] | join(",")' \
		<<<"$nics_json")
	if ((nup != hosts)); then rc=2; fi
	if ((json)); then
		jq -n --arg dir "$LAB_DIR" --arg kver "$kver" --argjson deadline "$deadline" \
			--argjson up "$([[ $rc == 0 ]] && echo true || echo false)" \
			--argjson expired "$([[ -n $expired ]] && echo true || echo false)" \
			--argjson hosts "$hosts_json" --argjson nics "$nics_json" \
			--argjson links "$links_json" --arg wiring "$wiring" \
			'{dir: $dir, up: $up, kernel: $kver, deadline: $deadline, expired: $expired,
			  hosts: $hosts, nics: $nics, links: $links, wiring: $wiring}'
	else
		echo "lab $LAB_DIR: $nup/$hosts hosts up, kernel $kver, lifetime ends in $((deadline - $(date +%s))) s${expired:+ (EXPIRED)}"
		jq -r '.[] | "  \(.host)\(if .name != .host then " (\(.name))" else "" end)  pid \(.pid)  \(if .alive then "running" else "STOPPED" end)  \(if .ready then "ready" else "not-ready" end)  boot \(.boot_seconds // "-") s  console \(.console)\(if .mgmt then "  mgmt \(.mgmt)" else "" end)\(.guestfwd | map("  guestfwd \(.guest) -> \(.host)") | join(""))"' <<<"$hosts_json"
		echo "  wiring (loopback sockets on 127.0.0.1):"
		jq -r 'def nic: "\(.host).\(.port)\(if .ifname != .port then " (\(.ifname))" else "" end)";
			. as $all | .[] | . as $n | "    \(nic)  \(.mac)\(if .mtu != 1500 then "  mtu \(.mtu)" else "" end)  <->  \(if .peer_host then ($all[] | select(.host == $n.peer_host and .port == $n.peer_port) | nic) else "(unconnected)" end)"' <<<"$nics_json"
	fi
	return "$rc"
}

# --- exec -------------------------------------------------------------------

# --- main -------------------------------------------------------------------

main() {
	local verb=${1:-}
	(($#)) && shift
	if [[ -n $verb && $verb != -* && $verb != help ]] && wants_help "$verb" "$@"; then
		usage
		return 0
	fi
	case "$verb" in
	setup) cmd_setup "$@" ;;
	up) cmd_up "$@" ;;
	down)
		while (($#)); do
			case "$1" in
			--dir) need_val "--dir needs a path" "${2-}" && LAB_DIR=$2 && shift 2 ;;
			*) usage_die "down: unknown argument '$1'" ;;
			esac
		done
		[[ -d $LAB_DIR ]] || return 0
		cmd_down
		;;
	reboot) cmd_reboot "$@" ;;
	status) cmd_status "$@" ;;
	# (exec, exec-bg, wait and kill never get here: dispatched at the top, before the
	# rest of this file is read)
	__watchdog) cmd_watchdog "$@" ;;
	-h | --help | help) usage ;;
	"") usage >&2 && exit 2 ;;
	*) usage >&2 && usage_die "unknown command '$verb'" ;;
	esac
}

main "$@"
