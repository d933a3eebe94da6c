#!/bin/busybox sh
# shellcheck shell=sh
#
# Stage 1 of a fabricctl lab guest: the /init of the lab initramfs.
#
# Runs under busybox (static) as PID 1 of a stock Debian kernel booted by
# scripts/lab.sh.  It loads the kernel modules listed in /modules.list (in
# dependency order, computed on the build host), mounts the host's root
# filesystem read-only over 9p, builds the guest's root from it (a read-only tmpfs
# with the host root's top level), lays writable tmpfs and the per-host 9p share
# over it, and finally chroots into that root and hands over to stage 2
# (scripts/lab-guest-runner.sh, read from the host tree at boot time).
#
# Parameters come from the kernel command line as lab.KEY=VALUE words:
#   lab.host=h1          host name
#   lab.share=/path      per-host writable share; mounted at the same path
#   lab.runner=/path     stage-2 script (path inside the host root)
#   lab.keep=/a[:/b...]  host paths to keep visible even under a tmpfs (the project
#                        tree first, then what FCTL_LAB_KEEP named on the host)
#                        (the project tree, when it lives in /tmp or similar)
#
# On any failure it prints "lab-init: FATAL: ..." on the console and powers
# the guest off, so the host notices at once and shows the console tail.

PATH=/bin
export PATH

say() { echo "lab-init: $*" >/dev/console 2>/dev/null || echo "lab-init: $*"; }
fatal() {
	say "FATAL: $*"
	sync
	/bin/busybox poweroff -f
	sleep 60
}

/bin/busybox mkdir -p /bin /proc /sys /dev /newroot /hostview
/bin/busybox --install -s /bin || fatal "busybox --install failed"

mount -t proc proc /proc || fatal "mount /proc"
mount -t sysfs sysfs /sys || fatal "mount /sys"
mount -t devtmpfs devtmpfs /dev || fatal "mount /dev"

HOST=
SHARE=
RUNNER=
KEEP=
read -r CMDLINE </proc/cmdline
for w in $CMDLINE; do
	case "$w" in
	lab.host=*) HOST=${w#lab.host=} ;;
	lab.share=*) SHARE=${w#lab.share=} ;;
	lab.runner=*) RUNNER=${w#lab.runner=} ;;
	lab.keep=*) KEEP=${w#lab.keep=} ;;
	esac
done
[ -n "$HOST" ] || fatal "no lab.host= on the kernel command line"
[ -n "$SHARE" ] || fatal "no lab.share= on the kernel command line"
[ -n "$RUNNER" ] || fatal "no lab.runner= on the kernel command line"

# Modules, in the order lab.sh computed with modprobe --show-depends.
while read -r ko; do
	[ -n "$ko" ] || continue
	name=${ko%.ko}
	# Already loaded (a dependency listed twice) is fine.
	[ -d "/sys/module/$(echo "$name" | tr - _)" ] && continue
	insmod "/lib/modules/$ko" || fatal "insmod $ko failed"
done </modules.list

NINEP="trans=virtio,version=9p2000.L,msize=262144"
# The host root, untouched: the guest's root is built from it, and paths that a tmpfs
# below would hide are brought back from it.
mount -t 9p -o "ro,$NINEP" hostroot /hostview || fatal "mount host root (9p tag hostroot)"
R=/newroot
# The guest's / is a tmpfs holding the host root's top level: its symlinks copied (on
# Debian 12 /bin, /sbin, /lib and /lib64 point into /usr), its directories and files
# bind-mounted from the host root. Every program start resolves its loader
# (/lib64/ld-linux-x86-64.so.2) and libc (/lib/x86_64-linux-gnu/...) through those
# symlinks, and on the 9p root (cache=none) each resolution was a walk, a getattr and a
# readlink over 9p, each of them a round trip through qemu (docs/lab.md, "What a
# wakeup costs"). Made read-only below, as the host root is.
# bring_back DIR [NAME...]: each entry of the host's DIR into the guest's (a tmpfs laid
# over it): a symlink copied, a directory or a file bind-mounted from the untouched host
# view; a directory named among the NAMEs is only made (it gets a mount of its own)
bring_back() {
	# (its own names: the callers' loops use d and e)
	bd=$1
	shift
	for be in "/hostview$bd"/* "/hostview$bd"/.[!.]* "/hostview$bd"/..?*; do
		[ -e "$be" ] || [ -L "$be" ] || continue
		bn=${be##*/}
		if [ -L "$be" ]; then
			cp -P "$be" "$R$bd/$bn"
		elif [ -d "$be" ]; then
			mkdir "$R$bd/$bn" && case " $* " in *" $bn "*) ;; *) mount -o bind "$be" "$R$bd/$bn" ;; esac
		else
			: >"$R$bd/$bn" && mount -o bind "$be" "$R$bd/$bn"
		fi || say "warning: $bd/$bn not brought back over the tmpfs on ${bd:-/}"
	done
}
mount -t tmpfs -o mode=0755,size=1m tmpfs "$R" || fatal "tmpfs on the guest's root"
# proc, sys, dev and usr get mounts of their own below
bring_back "" proc sys dev usr
# (what the guest cannot do without is checked: /etc here, the runner, bash and the
# share's mount point below)
[ -f "$R/etc/passwd" ] || fatal "/etc of the host root not in the guest's root"
# The loader reads /etc/ld.so.cache at every program start (10 reads over 9p): a copy
# in RAM, bound over it. Packages are installed before labs boot; a library installed
# after the guest booted is found only in the loader's built-in directories
# (/lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu, ...), not through ld.so.conf.
if [ -f /hostview/etc/ld.so.cache ] && cp /hostview/etc/ld.so.cache /ld.so.cache; then
	mount -o bind /ld.so.cache "$R/etc/ld.so.cache" || say "warning: /etc/ld.so.cache not kept in RAM"
fi
# The host's /usr (Debian 12: every program and library) once more, cached: the root's
# mount caches nothing (cache=none: a file the host changes is seen at once, which the
# tests' work files in the project tree need), so every program start read its binary
# and libraries from the host again, under TCG the larger part of a short command's
# time. /usr does not change while a lab is up (packages are installed before the labs
# boot; an apt run meanwhile is seen by guests booted after it).
# Not when the project tree (or another kept path) is under /usr: its files change.
case ":$KEEP:" in
*:/usr/*)
	say "a kept path is under /usr: /usr stays uncached"
	mount -o bind /hostview/usr "$R/usr" || fatal "bind /usr"
	;;
*)
	if ! mount -t 9p -o "ro,cache=loose,$NINEP" hostusr "$R/usr"; then
		say "warning: /usr not mounted with a cache (9p tag hostusr): programs start slower"
		mount -o bind /hostview/usr "$R/usr" || fatal "bind /usr"
	fi
	;;
esac
mount -t proc proc "$R/proc" || fatal "mount $R/proc"
mount -t sysfs sysfs "$R/sys" || fatal "mount $R/sys"
mount -t devtmpfs devtmpfs "$R/dev" || fatal "mount $R/dev"
mkdir -p "$R/dev/pts" "$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$R/dev/pts" || say "warning: devpts not mounted"
ln -sf /proc/self/fd "$R/dev/fd"
ln -sf /proc/self/fd/0 "$R/dev/stdin"
ln -sf /proc/self/fd/1 "$R/dev/stdout"
ln -sf /proc/self/fd/2 "$R/dev/stderr"
[ -d /sys/kernel/config ] && mount -t configfs configfs "$R/sys/kernel/config" 2>/dev/null

# A mount point the host root lacks cannot be made on the read-only 9p root.  The
# host may have lost it while this guest booted: a 'dpkg --purge fabricctl' on
# the host removes an empty /var/lib/fabricctl.  Lay a tmpfs over its parent
# instead, bring each of the parent's entries back with a bind mount from the
# untouched host view, and make the mount point in the tmpfs.
mount_point_in_parent() { # DIR
	p=${1%/*}
	# at the top level: the guest's root is a tmpfs, still writable here
	[ -n "$p" ] || { mkdir "$R$1"; return; }
	[ -d "$R$p" ] || return 1
	mount -t tmpfs -o mode=0755,size=4m tmpfs "$R$p" || return 1
	bring_back "$p"
	mkdir -p "$R$1"
}

# Writable scratch space.
for d in /tmp /run /var/tmp /var/lib/fabricctl /root /dev/shm; do
	if [ ! -d "$R$d" ] && ! mount_point_in_parent "$d"; then
		say "warning: $d missing on the host root and no parent to hold it, left out"
		continue
	fi
	mount -t tmpfs -o mode=1777,size=128m tmpfs "$R$d" || fatal "tmpfs on $d"
done
chmod 0700 "$R/root" 2>/dev/null
chmod 0755 "$R/run" "$R/var/lib/fabricctl" 2>/dev/null

# Bring back the project tree, and the other kept paths, if a tmpfs above hid them.
# In order: a path inside an earlier one is already visible and is left alone.
OLDIFS=$IFS
IFS=:
for k in $KEEP; do
	IFS=$OLDIFS
	[ -n "$k" ] && [ ! -e "$R$k" ] && [ -d "/hostview$k" ] || continue
	if ! mkdir -p "$R$k" || ! mount -o bind "/hostview$k" "$R$k"; then
		say "warning: could not keep $k visible"
	fi
done
IFS=$OLDIFS

# The per-host writable share, at the same path as on the host.
mkdir -p "$R$SHARE" 2>/dev/null
[ -d "$R$SHARE" ] || fatal "share mount point $SHARE missing in the guest"
mount -t 9p -o "rw,$NINEP" labshare "$R$SHARE" || fatal "mount lab share (9p tag labshare) on $SHARE"

[ -f "$R$RUNNER" ] || fatal "runner $RUNNER not found in the host root"
[ -x "$R/bin/bash" ] || fatal "/bin/bash missing in the host root"

mount -o remount,ro "$R" || fatal "the guest's root not made read-only"
say "modules loaded, host root mounted, starting $RUNNER"
# shellcheck disable=SC2093 # exec replaces PID 1; fatal only runs if it fails
exec chroot "$R" /usr/bin/env -i \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root LANG=C.UTF-8 TERM=dumb \
	LAB_HOST="$HOST" LAB_SHARE="$SHARE" \
	/bin/bash "$RUNNER"
fatal "chroot into the host root failed"
