#!/bin/bash
# Installs what fabricctl needs to build, test and run its lab, from Debian 12
# packages, and the npm packages one test needs (tests/kubernetes/models/, versions pinned
# by its package-lock.json, into a cache outside the tree). Idempotent: installs only what
# is missing. Needs root.
#   scripts/deps.sh            build + test + lab dependencies
set -euo pipefail

PKGS=(
	# build (ccache: the clones of lab-ci-pipeline-* reuse the main build's objects)
	build-essential cmake pkg-config ccache
	libnl-3-dev libnl-route-3-dev libnl-genl-3-dev libibverbs-dev librdmacm-dev
	libssl-dev libyaml-dev libcmocka-dev
	# tests: sanitizers and fuzzing with clang, JSON and XML checks
	clang libclang-rt-dev jq python3 openssl time xxd
	# evidence bundles: DSSE signatures checked by a second, independent Ed25519
	# implementation (tests/security/evidence_tamper.sh)
	python3-securesystemslib
	# the auditor's report (report.html) rendered headless, offline (tests/evidence/report.sh)
	chromium
	# the profile JSON Schema test (Debian's python3), manual pages
	python3-jsonschema python3-yaml man-db bsdextrautils
	# the Debian package (scripts/package.sh, tests/package)
	dpkg-dev fakeroot lintian
	# the qemu lab: Debian's stock kernel has MACsec, VLAN and soft-RoCE
	qemu-system-x86 linux-image-amd64 busybox-static kmod cpio iproute2 iputils-ping curl procps
	# the wire as a switch sees it: the VLAN tag's PCP in front of MACsec (tests/lab/wiring.sh)
	tcpdump
	rdma-core ibverbs-utils perftest
	# MKA (802.1X key agreement) in the lab: Debian 12's wpa_supplicant 2.10, driver macsec_linux
	wpasupplicant
	# key management: pkcs11.h (build), a SoftHSM2 token, a PyKMIP server and
	# pkcs11-tool for tests/kms
	libp11-kit-dev softhsm2 python3-pykmip opensc
	# metrics: promtool (check metrics, check/test rules) and the server tests/metrics
	# scrapes the agent with (started and stopped by the test, never as a service)
	prometheus
	# Slurm and munge for the node check's lab suite (tests/lab/slurm.sh: the daemons run
	# only inside lab guests, with the test's own slurm.conf and munge key)
	slurm-wlm munge
	# the Kubernetes manifests, checked offline (tests/kubernetes/manifests.sh); Debian's
	# kubectl is kubernetes-client (left out below when a kubectl is already installed:
	# another package's /usr/bin/kubectl would make dpkg refuse it)
	kubernetes-client yamllint
	# and against the Kubernetes API's own schemas with npm's kubernetes-models (below):
	# Debian's node and npm (left out when a node and npm are already installed)
	nodejs npm
)

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: needs root to install packages (apt-get)" >&2
	exit 2
fi
missing=()
for p in "${PKGS[@]}"; do
	[ "${p:0:1}" = "#" ] && continue
	[ "$p" = kubernetes-client ] && command -v kubectl >/dev/null && continue
	[ "$p" = nodejs ] && command -v node >/dev/null && continue
	[ "$p" = npm ] && command -v npm >/dev/null && continue
	# dpkg-query: installed and configured ("ii")
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
# The npm packages of the tests (tests/kubernetes/models/: kubernetes-models, the Kubernetes
# API's OpenAPI schemas for tests/kubernetes/manifests.sh), at the versions its
# package-lock.json pins, into a cache outside the tree ($FCTL_K8S_MODELS, default
# /var/cache/fabricctl/k8s-models): installed again only when the lock changed.
npm_models() {
	local src dir
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/kubernetes/models
	dir=${FCTL_K8S_MODELS:-/var/cache/fabricctl/k8s-models}
	if cmp -s "$src/package-lock.json" "$dir/package-lock.json" && [ -d "$dir/node_modules/kubernetes-models" ]; then
		echo "deps.sh: npm packages of the tests present ($dir)"
		return 0
	fi
	rm -rf "$dir" && mkdir -p "$dir" && cp "$src/package.json" "$src/package-lock.json" "$dir/" || return 1
	# exactly the lock's versions; no install scripts run
	(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null) || {
		echo "deps.sh: npm ci of tests/kubernetes/models failed" >&2
		rm -rf "$dir"
		return 1
	}
	echo "deps.sh: installed the npm packages of the tests into $dir"
}

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps.sh: all ${#PKGS[@]} packages present"
	npm_models || exit 1
	exit 0
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# no service a package ships is started here (munge, slurmd, slurmctld, wpa_supplicant):
# the tests run their daemons themselves, inside lab guests (invoke-rc.d's policy-rc.d)
POLICY=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$POLICY" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$POLICY" && chmod 755 "$POLICY" && own_policy=1
	trap '[ $own_policy = 1 ] && rm -f "$POLICY"' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
rc=$?
[ $own_policy = 1 ] && rm -f "$POLICY"
[ $rc -eq 0 ] || { echo "deps.sh: apt-get install failed (exit $rc)" >&2; exit 1; }
echo "deps.sh: installed ${#missing[@]} packages"
npm_models || exit 1
