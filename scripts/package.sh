#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the Debian package build/fabricctl_VERSION_ARCH.deb (VERSION from the
# project() line of CMakeLists.txt) from a Release build without test hooks:
#   1. cmake Release, -DFCTL_TEST_HOOKS=OFF, prefix /usr, in build-package/
#   2. the three programs checked for test hook strings (as test.sh's release-hooks)
#   3. `cmake --install --strip` with DESTDIR into build-package/stage
#   4. Debian's parts: gzipped manual pages, copyright, changelog.gz, DEBIAN/ with
#      control (Depends from dpkg-shlibdeps), md5sums, conffiles, maintainer scripts
#   5. dpkg-deb --build under fakeroot (root:root, sane modes)
# Prints the path of the .deb last. Needs cmake, a compiler, dpkg-dev and fakeroot
# (scripts/deps.sh); not root.
#   scripts/package.sh [--jobs N] [--build-only]
# --build-only: steps 1 and 2 only, the release build that ships (scripts/test.sh's
# release-hooks checks it; the package built later in the same run finds it built).
# Two runs at once take turns (a lock on build-package/package.lock): one build directory.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${FCTL_JOBS:-$(nproc)}
ONLY_BUILD=0
while [ $# -gt 0 ]; do
	case $1 in
	--jobs) JOBS=${2:?--jobs needs a number} && shift 2 ;;
	--build-only) ONLY_BUILD=1 && shift ;;
	*) echo "usage: scripts/package.sh [--jobs N] [--build-only]" >&2 && exit 2 ;;
	esac
done
B=$ROOT/build-package
STAGE=$B/stage
die() { echo "package.sh: $*" >&2; exit 1; }
mkdir -p "$B"
exec {LOCK}>"$B/package.lock"
flock "$LOCK"

VERSION=$(sed -n 's/^project(fabricctl VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
[ -n "$VERSION" ] || die "no VERSION in the project() line of CMakeLists.txt"
ARCH=$(dpkg --print-architecture)
CHANGELOG_VERSION=$(sed -n '1s/^fabricctl (\([^)]*\)).*/\1/p' "$ROOT/packaging/debian/changelog")
[ "$CHANGELOG_VERSION" = "$VERSION" ] ||
	die "packaging/debian/changelog starts with $CHANGELOG_VERSION, CMakeLists.txt says $VERSION: add an entry"
for tool in cmake dpkg-deb dpkg-shlibdeps fakeroot gzip; do
	command -v "$tool" >/dev/null || die "$tool is missing (scripts/deps.sh)"
done

# 1. the release build: default options, no hooks, the units' /usr prefix
cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release -DFCTL_TEST_HOOKS=OFF -DFCTL_WERROR=ON \
	-DFCTL_SYSTEMD=ON -DCMAKE_INSTALL_PREFIX=/usr -DFCTL_BUILD_TREE_PATHS=OFF >/dev/null
cmake --build "$B" -j "$JOBS" --target fabricctl fabricctl-keymgr fabricctl-probe fabricctl-docs

# 2. no test hook in what ships (the list of scripts/test.sh's release_hooks_check)
for bin in fabricctl/fabricctl keymgr/fabricctl-keymgr probes/fabricctl-probe; do
	[ -f "$B/$bin" ] || die "$bin was not built (libibverbs-dev missing?)"
	for s in FCTL_TEST_FAIL_AT_OP FCTL_TEST_CRASH_AFTER_OP FCTL_AUDIT_TEST_TEAR \
		FCTL_KEYMGR_TEST_HOOK; do
		if grep -qa "$s" "$B/$bin"; then die "$bin contains the test hook $s"; fi
	done
done
if [ $ONLY_BUILD = 1 ]; then
	echo "$B"
	exit 0
fi

# 3. the staging tree
rm -rf "$STAGE"
DESTDIR=$STAGE cmake --install "$B" --strip >/dev/null
DOC=$STAGE/usr/share/doc/fabricctl
# as dh_strip: no .comment or .note sections (the CET property notes stay)
for elf in "$STAGE/usr/sbin/fabricctl" "$STAGE"/usr/libexec/fabricctl/fabricctl-*; do
	strip --remove-section=.comment --remove-section=.note "$elf"
done
[ -x "$STAGE/usr/sbin/fabricctl" ] && [ -d "$DOC" ] || die "cmake --install left no /usr/sbin/fabricctl"

# 4. Debian policy: manual pages and the changelog compressed (gzip -9n), the
# copyright file; a native version (no Debian revision) has changelog.gz
gzip -9nf "$STAGE"/usr/share/man/man8/*.8
install -m 0644 "$ROOT/packaging/debian/copyright" "$DOC/copyright"
gzip -9nc "$ROOT/packaging/debian/changelog" >"$DOC/changelog.gz"
install -D -m 0644 "$ROOT/packaging/debian/lintian-overrides" \
	"$STAGE/usr/share/lintian/overrides/fabricctl"
find "$STAGE" -type d -exec chmod 0755 {} +
find "$STAGE" -type f -exec chmod go-w {} +
mkdir -p "$STAGE/DEBIAN"
for s in postinst prerm postrm; do
	install -m 0755 "$ROOT/packaging/debian/$s" "$STAGE/DEBIAN/$s"
done
(cd "$STAGE" && find etc -type f | sed 's|^|/|' | sort) >"$STAGE/DEBIAN/conffiles"
[ -s "$STAGE/DEBIAN/conffiles" ] || rm -f "$STAGE/DEBIAN/conffiles"
(cd "$STAGE" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -print |
	sed 's|^\./||' | LC_ALL=C sort | xargs md5sum) >"$STAGE/DEBIAN/md5sums"

# Depends: the shared libraries the programs need, as dpkg-shlibdeps finds them
# (it reads debian/control of a source tree: a minimal one)
W=$B/shlibdeps
rm -rf "$W" && mkdir -p "$W/debian"
printf 'Source: fabricctl\n\nPackage: fabricctl\nArchitecture: any\n' >"$W/debian/control"
DEPENDS=$(cd "$W" && dpkg-shlibdeps -O -e"$STAGE/usr/sbin/fabricctl" \
	-e"$STAGE/usr/libexec/fabricctl/fabricctl-keymgr" \
	-e"$STAGE/usr/libexec/fabricctl/fabricctl-probe" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$DEPENDS" ] || die "dpkg-shlibdeps found no dependencies"
SIZE=$(du -k -s --apparent-size --exclude=DEBIAN "$STAGE" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@SIZE@/$SIZE/" \
	-e "s/@DEPENDS@/$DEPENDS/" "$ROOT/packaging/debian/control.in" >"$STAGE/DEBIAN/control"

# 5. the package
mkdir -p "$ROOT/build"
DEB=$ROOT/build/fabricctl_${VERSION}_${ARCH}.deb
fakeroot -- dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB" >/dev/null
echo "$DEB"
