# SPDX-License-Identifier: MIT
# The two-host MKA lab profile (h1.eth0 <-> h2.eth0, VLAN 100 on a CAK from a key file),
# written by tests/lab/mka.sh and the MKA benches (bench/mka_rotation_*.sh) alike.
#
# mka_profile FILE NAME VERSION KEYFILE CKN: KEYFILE is relative to FILE's keys/ folder.

mka_profile() {
	cat >"$1" <<EOF_PROFILE
schema: 1
profile: { name: $2, version: $3 }
macsec:
  mka1:
    cipher: gcm-aes-128
    encrypt: true
    replay_protect: true
    replay_window: 0
    port: 1
    mka:
      cak: { backend: file, id: keys/$4 }
      ckn: "$5"
hosts:
  - { name: h1, ports: [{ name: eth0, mac: "52:54:00:fa:01:00" }] }
  - { name: h2, ports: [{ name: eth0, mac: "52:54:00:fa:02:00" }] }
links:
  - name: h1-h2
    a: h1:eth0
    b: h2:eth0
    macsec: mka1
    vlans:
      - { id: 100, addresses: { h1: 10.100.0.1/24, h2: 10.100.0.2/24 } }
EOF_PROFILE
}
