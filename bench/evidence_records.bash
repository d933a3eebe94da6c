# SPDX-License-Identifier: MIT
# Sourced by bench/evidence_bench.sh and bench/evidence_pn_bench.sh (not a benchmark itself):
# apply records as the tool writes them, by audit append in a build with -DFCTL_TEST_HOOKS=ON
# (docs/audit.md "Manual records"). The caller sets FCTL and LOG.
append() { # CHANGE COUNT
	FCTL_TEST_AUDIT_APPEND_AS_TOOL=1 "$FCTL" audit append --log "$LOG" --action "${FCTL_BENCH_ACTION:-apply}" --result applied --host gpu01 --link eth0.100 \
		--secy ms100 --change "$1" --profile-name gpu-pod-a --profile-version 7 \
		--profile-sha256 9ed46e9bdc989a335a08e6d244aefffb15f24d80bcf6501fe4c22e58aef35ac9 \
		--key-id 0011223344556677 --kcv a1b2c3 --count "$2" --batch 4096 >/dev/null
}
