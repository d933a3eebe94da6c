# SPDX-License-Identifier: MIT
# Checks the DSSE envelopes of an unpacked evidence bundle with an implementation that is not
# ours: the Ed25519 verification of securesystemslib (Debian's python3-securesystemslib, 0.26:
# SSlibKey.verify_signature over PyNaCl). That version has no DSSE Envelope class, so the PAE
# is computed here from the DSSE v1 spec, independently of the C code and of verify.sh.
#
#   python3 evidence_dsse_check.py DIR SIGNER.pub...
#
# Every line of DIR/attestations.intoto.jsonl (payload type application/vnd.in-toto+json, an
# in-toto v1 statement) and DIR/MANIFEST.dsse.json must carry exactly one signature per signer
# key (keyid = SHA-256 of the key's DER SubjectPublicKeyInfo, hex) that verifies. Prints one
# line per envelope; exits 0 when all hold, 1 when one does not, 2 when it cannot run.
import base64
import hashlib
import json
import sys

try:
    from securesystemslib.exceptions import UnverifiedSignatureError, VerificationError
    from securesystemslib.signer import Signature, SSlibKey
except ImportError as e:
    print(f"evidence_dsse_check: needs python3-securesystemslib: {e}", file=sys.stderr)
    sys.exit(2)

INTOTO = "application/vnd.in-toto+json"
MANIFEST = "application/vnd.fabricctl.evidence-manifest+json"
SPKI_ED25519 = bytes.fromhex("302a300506032b6570032100")


def pae(ptype: bytes, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    return b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)


def load_key(path: str) -> SSlibKey:
    """An Ed25519 public key from a PEM SubjectPublicKeyInfo, keyid = SHA-256 of the DER."""
    with open(path, encoding="ascii") as f:
        body = "".join(l.strip() for l in f if not l.startswith("-----"))
    der = base64.b64decode(body, validate=True)
    if len(der) != 44 or der[:12] != SPKI_ED25519:
        raise ValueError(f"{path}: not an Ed25519 public key")
    return SSlibKey(hashlib.sha256(der).hexdigest(), "ed25519", "ed25519",
                    {"public": der[12:].hex()})


def check(env: dict, want_type: str, keys: list) -> str:
    """'' when every key's signature verifies, else the reason."""
    if env.get("payloadType") != want_type:
        return f"payloadType {env.get('payloadType')!r}"
    payload = base64.b64decode(env["payload"], validate=True)
    if want_type == INTOTO:
        st = json.loads(payload)
        if st.get("_type") != "https://in-toto.io/Statement/v1" or not st.get("subject"):
            return "not an in-toto v1 statement"
    msg = pae(want_type.encode(), payload)
    for key in keys:
        sigs = [s for s in env.get("signatures", []) if s.get("keyid") == key.keyid]
        if len(sigs) != 1:
            return f"{len(sigs)} signatures with keyid {key.keyid}"
        sig = Signature(key.keyid, base64.b64decode(sigs[0]["sig"], validate=True).hex())
        try:
            key.verify_signature(sig, msg)
        except (UnverifiedSignatureError, VerificationError) as e:
            return f"signature by {key.keyid}: {e}"
    return ""


def main() -> int:
    if len(sys.argv) < 3:
        print("usage: evidence_dsse_check.py DIR SIGNER.pub...", file=sys.stderr)
        return 2
    d, keys = sys.argv[1], [load_key(p) for p in sys.argv[2:]]
    bad = n = 0
    todo = [("MANIFEST.dsse.json", MANIFEST, open(f"{d}/MANIFEST.dsse.json").read())]
    with open(f"{d}/attestations.intoto.jsonl", encoding="utf-8") as f:
        todo += [(f"attestations.intoto.jsonl:{i}", INTOTO, l) for i, l in enumerate(f, 1)]
    for where, ptype, text in todo:
        n += 1
        try:
            why = check(json.loads(text), ptype, keys)
        except (ValueError, KeyError, TypeError) as e:
            why = f"malformed: {e}"
        print(f"{'ok' if not why else 'BAD'} {where}{': ' + why if why else ''}")
        bad += bool(why)
    print(f"evidence_dsse_check: {n} envelopes, {bad} bad, {len(keys)} keys")
    return 1 if bad or n < 2 else 0


if __name__ == "__main__":
    sys.exit(main())
