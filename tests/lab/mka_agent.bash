# SPDX-License-Identifier: MIT
# Sourced by tests/lab/mka.sh, in its lab boot: the agent supervises h2's wpa_supplicant
# (docs/mka.md, "Supervision by the agent").
#
#   agent-restart           kill -9 of h2's wpa_supplicant: the agent starts a new one
#   agent-restart-secured   h2's KaY secured again with h1 as live peer; ping h1 -> h2
#   agent-restart-no-clear  on h2's eth0.100 from before the kill until after: only
#                           MACsec and EAPOL frames
#   agent-restart-audit     an mka-restart record naming the port and the reason, no CAK
#   agent-restart-counted   fabricctl_mka_restarts_total{result="ok"} 1, status mka_restarts 1
#   agent-mka-state         an mka-state record: secured, CKN, key server h1, the check value
#                           of the CAK given to wpa_supplicant (kcv), no CAK
#   agent-evidence-mka      fabricctl evidence on h2: mka/ports.json lists eth0.100 (CKN,
#                           kcv, key server h1, secured, the restart among its events)
#   agent-audit-verifies    audit verify passes with the agent's records in the log
#   agent-no-restart-gone   a profile without the MKA port applied: its wpa_supplicant
#                           stops and the agent does not start it again
#
# Uses mka.sh's helpers (on, lab, check, ping_ok, wait_mka, F, WORK, RUN, CKN).

mkdir -p "$WORK/none"
cat >"$WORK/none/p.yaml" <<EOF2
schema: 1
profile: { name: mka-lab, version: 2 }
hosts:
  - { name: h1, ports: [{ name: eth0, mac: "52:54:00:fa:01:00" }] }
  - { name: h2, ports: [{ name: eth0, mac: "52:54:00:fa:02:00" }] }
EOF2
# (jq_ok: mka.sh)
AUD=/var/lib/fabricctl/audit.log
SOCK=/run/fabricctl/agent.sock
# h2 back under fabricctl (the interop section left it without MKA)
on h2 sh -c "for i in \$(seq 100); do ip link show type macsec | grep -q . || break; sleep 0.1; done"
on h2 "$F" apply -q "$WORK/p.yaml" >/dev/null
ping_ok h1 10.100.0.2 || fail agent-setup "no traffic with fabricctl on both ends again"
AJOB=$(lab exec-bg --timeout 900 h2 -- "$F" agent --host h2 --socket "$SOCK" \
	--audit-log "$AUD" --metrics 127.0.0.1:9464 --drift-interval 0)
agent_status() { on h2 "$F" status --json --target "unix:$SOCK" 2>/dev/null; }
for _ in $(seq 60); do agent_status >/dev/null && break; sleep 1; done
agent_status >/dev/null || fail agent-setup "the agent on h2 does not answer"
metric() { # NAME{LABELS}: its value on h2's /metrics
	on h2 python3 -c "import urllib.request as u
for l in u.urlopen('http://127.0.0.1:9464/metrics', timeout=20).read().decode().splitlines():
    if l.startswith('$1 '): print(l.split()[-1])"
}

# frames on h2's eth0.100 across the kill and the restart (60 s window, 1 s idle polls)
SJ=$(lab exec-bg --timeout 120 h2 -- python3 "$SNIFF" eth0.100 40 /run/sniff2.ready)
on h2 sh -c 'for i in $(seq 200); do [ -e /run/sniff2.ready ] && break; sleep 0.1; done; rm -f /run/sniff2.ready'
old=$(on h2 cat "$RUN/pid")
on h2 sh -c "kill -9 $old"
restarted() { # a new wpa_supplicant of eth0.100, alive (bounded: checks every 2 s)
	local p
	for _ in $(seq 60); do
		p=$(on h2 cat "$RUN/pid" 2>/dev/null)
		[[ -n $p && $p != "$old" ]] && on h2 sh -c "kill -0 $p && readlink /proc/$p/exe | grep -q wpa_supplicant" &&
			return 0
		sleep 1
	done
	return 1
}
check agent-restart "no new wpa_supplicant on h2 after kill -9 of $old" restarted
check agent-restart-secured "h2 not secured again with h1 live" \
	wait_mka h2 ".secured and .live_peers == 1 and .peers[0].sci == \"$SCI1\" and .tx_sa"
check agent-restart-ping "no ping h1 -> h2 after the restart" ping_ok h1 10.100.0.2
on h2 ping -c 5 -i 0.3 -W 1 -q 10.100.0.1 >/dev/null 2>&1
s=$(lab wait --timeout 120 h2 "$SJ" | tail -1)
check agent-restart-no-clear "frames on h2's eth0.100: $s" jq_ok "$s" '.other == 0 and .macsec > 0'
rec=$(on h2 sh -c "grep '\"mka-restart\"' $AUD" | tail -1)
cak=$(cat "$WORK/keys/cak.key")
check agent-restart-audit "the record: $rec" \
	bash -c '[[ $1 == *eth0.100* && $1 == *dead* && $1 == *restarted* && $1 != *"$2"* ]]' _ "$rec" "$cak"
n=$(metric 'fabricctl_mka_restarts_total{result="ok"}')
st=$(agent_status | jq -c '{mka_restarts, mka_restart_failures}')
check agent-restart-counted "metric '$n', status $st" \
	bash -c '[[ $1 == 1 && -n $2 ]] && jq -e ".mka_restarts == 1 and .mka_restart_failures == 0" <<<"$2" >/dev/null' _ "$n" "$st"

# the KaY state as the agent audits it, and as an evidence bundle lists it
kcv=$(on h2 sh -c "sed -n 's/.* kcv=\([0-9a-f]*\) .*/\1/p' $RUN/settings")
state_rec() { on h2 sh -c "grep '\"mka-state\"' $AUD | grep '\"secured\"' | grep -q '$SCI1'"; }
for _ in $(seq 20); do state_rec && break; sleep 1; done
rec=$(on h2 sh -c "grep '\"mka-state\"' $AUD" | tail -1)
check agent-mka-state "the record: $rec (kcv given: '$kcv')" \
	bash -c '[[ ${#3} == 6 && -n $1 ]] && jq -e --arg k "$3" --arg c "$4" --arg s "$5" \
		".result == \"secured\" and .kcv == [\$k] and (.detail | test(\"port=eth0.100 ckn=\" + \$c + \" key_server=\" + \$s))" \
		<<<"$1" >/dev/null && [[ $1 != *"$2"* ]]' _ "$rec" "$cak" "$kcv" "$CKN" "$SCI1"
on h2 sh -c 'umask 077; openssl genpkey -algorithm ed25519 -out /run/ev-sign.pem 2>/dev/null'
ev=$(on h2 sh -c "$F evidence --out /run/ev.tar --sign /run/ev-sign.pem >/dev/null && tar -xOf /run/ev.tar mka/ports.json")
check agent-evidence-mka "mka/ports.json: $ev" jq_ok "$ev" --arg c "$CKN" --arg k "$kcv" --arg s "$SCI1" \
	'.ports | map(select(.host == "h2" and .port == "eth0.100")) | .[0] |
	 .ckn == [$c] and (.kcv | index($k)) != null and .key_server == $s and .secured and
	 (.events | map(.action) | index("mka-restart")) != null'
check agent-audit-verifies "audit verify on h2 fails with the agent's MKA records" \
	on h2 sh -c "$F audit verify --pubkey /var/lib/fabricctl/audit.pub >/dev/null"

# the port leaves the profile: apply stops its wpa_supplicant; the agent must not start it
on h2 "$F" apply -q "$WORK/none/p.yaml" >/dev/null
gone() { ! on h2 sh -c "[ -e $RUN/pid ] || pgrep -x wpa_supplicant >/dev/null"; }
# three of the agent's checks (2 s apart) after the apply: still none
sleep 7
n=$(metric 'fabricctl_mka_restarts_total{result="ok"}')
check agent-no-restart-gone "a wpa_supplicant of eth0.100 runs again (restarts: $n)" \
	bash -c '[[ $1 == 1 ]]' _ "$n"
check agent-no-restart-gone-stopped "wpa_supplicant or its run directory left on h2" gone
lab kill h2 "$AJOB" >/dev/null 2>&1 || :
