#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds netdevsim.ko (Linux's simulated NIC, which implements the MACsec offload API
# since v6.6) for a lab kernel from Debian packages, and caches it beside the lab's
# initramfs: Debian's kernels do not build netdevsim (CONFIG_NETDEVSIM is not set), but
# Debian ships the kernel's source (linux-source-SERIES) and the headers of each build.
#
#   lab-netdevsim.sh [--kernel KVER]    prints the cached module's path (builds it once)
#
# KVER: an installed lab kernel (default: the newest 6.12 under /boot). The source is the
# one of the image's own Debian version, so the module matches it (vermagic, modversions).
# Nothing is installed: the packages are downloaded (apt-get download) and unpacked into
# a scratch directory under the cache, which is removed afterwards. The build needs
# make and gcc-12 (the compiler Debian built 6.12 for bookworm with); one line is added to
# netdevsim (MACsec offload on its VLANs too, below); BTF is skipped
# (no pahole), so the module loads without BTF. A guest loads it with
# `modprobe psample && insmod PATH` (docs/lab.md, "netdevsim").
set -euo pipefail
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

CACHE_DIR=${FCTL_LAB_CACHE:-/var/cache/fabricctl-lab}
die() { echo "lab-netdevsim: $*" >&2; exit 1; }
say() { echo "lab-netdevsim: $*" >&2; }

kver=
while (($#)); do
	case $1 in
	--kernel) kver=${2:?--kernel needs a kernel version, e.g. 6.12.117+deb12-amd64} && shift 2 ;;
	-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
	*) die "unknown argument '$1'" ;;
	esac
done
if [[ -z $kver ]]; then
	kver=$(find /boot -maxdepth 1 -name 'vmlinuz-6.12.*' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V | tail -n1)
	[[ -n $kver ]] || die "no 6.12 kernel under /boot: run scripts/lab.sh setup --kernel 6.12"
fi
[[ $kver =~ ^([0-9]+\.[0-9]+)\.[0-9]+\+deb[0-9]+-amd64$ ]] || die "'$kver' is not a Debian amd64 kernel version"
series=${BASH_REMATCH[1]}
out=$CACHE_DIR/netdevsim-$kver-vlan-macsec.ko
if [[ -s $out ]] && modinfo -F vermagic "$out" 2>/dev/null | grep -q "^$kver "; then
	echo "$out"
	exit 0
fi
# the image's Debian version: the source and headers of the same upload
ver=$(dpkg-query -W -f '${Version}' "linux-image-$kver" 2>/dev/null) ||
	die "linux-image-$kver is not installed"
base=${kver%-amd64}
command -v gcc-12 >/dev/null || die "gcc-12 is missing (apt-get install gcc-12)"
command -v make >/dev/null || die "make is missing"

mkdir -p "$CACHE_DIR"
work=$(mktemp -d "$CACHE_DIR/netdevsim.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
say "downloading linux-source-$series $ver and the headers of $kver"
(cd "$work" && apt-get download -q "linux-source-$series=$ver" "linux-headers-$kver=$ver" \
	"linux-headers-$base-common=$ver" "linux-kbuild-$base=$ver" >/dev/null 2>"$work/apt.err") ||
	die "apt-get download failed: $(tail -n 3 "$work/apt.err")"
mkdir "$work/root" "$work/src"
for deb in "$work"/linux-headers-*.deb "$work"/linux-kbuild-*.deb; do
	dpkg-deb -x "$deb" "$work/root"
done
hdr=$work/root/usr/src/linux-headers-$kver
[[ -f $hdr/Makefile ]] || die "no headers in linux-headers-$kver"
# the arch headers include the common ones by absolute path: point it at the unpacked tree
sed -i "s#^include /usr/src/#include $work/root/usr/src/#" "$hdr/Makefile"
dpkg-deb --fsys-tarfile "$work"/linux-source-"$series"_*.deb |
	tar -xO "./usr/src/linux-source-$series.tar.xz" |
	tar -xJ -C "$work/src" "linux-source-$series/drivers/net/netdevsim"
src=$work/src/linux-source-$series/drivers/net/netdevsim
grep -q 'macsec.o' "$src/Makefile" || die "this netdevsim has no MACsec offload (macsec.o)"
# Two changes, so a SecY on a VLAN of the port is offloaded (fabricctl's SecY sits on a
# VLAN), as mlx5 and atlantic do it: netdevsim offers MACsec offload on the port only
# (features), and the kernel takes it for a VLAN from the port's vlan_features
# (vlan_dev_init; macsec_check_offload), so the port also gets it there (mlx5:
# en_accel/macsec.c:1731); and the VLAN's offload calls reach netdevsim with the VLAN
# device in ctx->netdev, so its private data is taken with macsec_netdev_priv, which
# looks through a VLAN (include/net/macsec.h), not netdev_priv.
sed -i -e 's/^\(\t*\)ns->netdev->features |= NETIF_F_HW_MACSEC;$/&\n\1ns->netdev->vlan_features |= NETIF_F_HW_MACSEC;/' \
	-e 's/= netdev_priv(ctx->netdev);/= macsec_netdev_priv(ctx->netdev);/' "$src/macsec.c"
grep -q 'vlan_features |= NETIF_F_HW_MACSEC' "$src/macsec.c" && ! grep -q 'netdev_priv(ctx->netdev)' <(
	grep -v macsec_netdev_priv "$src/macsec.c") ||
	die "netdevsim's macsec.c no longer reads as expected: cannot make its offload VLAN-aware"
say "building netdevsim.ko"
make -s -C "$hdr" M="$src" CONFIG_NETDEVSIM=m CONFIG_DEBUG_INFO_BTF_MODULES= -j2 modules \
	>"$work/build.log" 2>&1 || die "build failed: $(tail -n 20 "$work/build.log")"
modinfo -F vermagic "$src/netdevsim.ko" | grep -q "^$kver " ||
	die "built module's vermagic is not $kver: $(modinfo -F vermagic "$src/netdevsim.ko")"
cp "$src/netdevsim.ko" "$out.tmp" && mv -f "$out.tmp" "$out"
say "built $out in $(($(date +%s) - start)) s"
echo "$out"
