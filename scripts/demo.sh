#!/bin/bash
# The main job, end to end, on a fresh Debian 12 machine (as root):
#   install what is missing, build, validate and plan the shipped profiles
#   (what a reviewer sees in CI), then boot two lab hosts (qemu, Debian's stock
#   kernel), apply the lab profile on both through netlink, and show encrypted
#   traffic crossing the MACsec link. The lab is torn down at the end, even on
#   failure.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export FCTL_LAB_DIR=${FCTL_LAB_DIR:-/var/tmp/fabricctl-lab-demo}
F=$ROOT/build/fabricctl/fabricctl
LAB=$ROOT/scripts/lab.sh
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

if [ "$(id -u)" -ne 0 ]; then
	echo "demo.sh: needs root (packages, the qemu lab, netlink); run as root" >&2
	exit 2
fi

step "1. dependencies (Debian packages) and build"
scripts/deps.sh
cmake -S "$ROOT" -B "$ROOT/build" >/dev/null
cmake --build "$ROOT/build" -j "$(nproc)" >/dev/null
run "$F" version

step "2. validate the shipped profiles"
run "$F" validate profiles/ examples/changes/ || true
echo "(warnings about key files are expected here: keys are made at deploy time)"
step "   an invalid profile: every finding, with file:line:column"
run "$F" validate tests/lab/profiles/lab-pair-invalid.yaml || echo "(exit $?: invalid, as intended)"

step "3. offline plans: what a reviewer sees in CI on a profile change"
run "$F" plan --offline profiles/lab-pair.yaml
run "$F" plan --offline tests/lab/profiles/lab-pair-v2.yaml --from profiles/lab-pair.yaml
run "$F" plan --offline tests/lab/profiles/lab-pair-v3.yaml --from profiles/lab-pair.yaml
run "$F" diff profiles/lab-pair.yaml tests/lab/profiles/lab-pair-v3.yaml || true

step "4. two lab hosts: Debian's stock kernel under qemu, one wire between them"
trap '"$LAB" down >/dev/null 2>&1 || true' EXIT
"$LAB" up --hosts 2
# the guests see this tree read-only; the key is made here, mode 0600, not in git
WORK=$ROOT/build/demo
rm -rf "$WORK"
mkdir -p "$WORK/keys"
cp profiles/lab-pair.yaml "$WORK/"
(umask 077 && openssl rand -hex 16 >"$WORK/keys/lab-pair.key")

step "5. apply the profile on both hosts (netlink: libnl-route + MACsec generic netlink)"
for h in h1 h2; do
	run "$LAB" exec "$h" -- "$F" apply "$WORK/lab-pair.yaml"
done

step "6. encrypted traffic across the MACsec link"
run "$LAB" exec h1 -- ping -c 5 -i 0.3 10.100.0.2
for h in h1 h2; do
	"$LAB" exec "$h" -- ip -j -s macsec show ms100 | jq -r --arg h "$h" \
		'.[0] | "\($h): cipher \(.cipher_suite), encrypt \(.encrypt), OutPktsEncrypted \(.OutPktsEncrypted), InPktsOK \([.rx_sc[].InPktsOK] | add), InPktsNotValid \([.rx_sc[].InPktsNotValid] | add), InPktsNoSCI \(.InPktsNoSCI)"'
done

step "7. live state as a profile, drift check, and an idempotent re-apply"
run "$LAB" exec h1 -- "$F" show
run "$LAB" exec h1 -- "$F" diff "$WORK/lab-pair.yaml"
run "$LAB" exec h1 -- "$F" apply "$WORK/lab-pair.yaml"
run "$LAB" exec h1 -- "$F" history

step "done: the lab is being torn down"
