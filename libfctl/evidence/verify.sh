#!/bin/bash
# SPDX-License-Identifier: MIT
# verify.sh: checks a fabricctl evidence bundle with openssl (3.0+), jq, sha256sum, tar and bash
# (and the usual text tools: sed, grep, awk, head, cut, wc, od, find, sort; mkfifo for the
# python3 helper), and OpenSSH's ssh-keygen when the bundle carries approvals (approvals/).
# VERIFY.md says what each check means.
#
#   bash verify.sh --signer-pub FILE... (--audit-pub FILE | --trusted-checkpoint FILE)
#                  [--tar BUNDLE.tar | --dir DIR]
#   bash verify.sh --self-consistency-only [--tar BUNDLE.tar | --dir DIR]
#   --openssl-only (with either): no python3 helper, one openssl process per signature
#
# The trust comes from you, never from the bundle: --signer-pub pins a key that must have signed
# (as many as the bundle requires: two for dual control), --audit-pub pins the host's audit key,
# --trusted-checkpoint FILE is a checkpoint note of that host's log you kept yourself (its
# signature authenticates the bundle's audit key, its root the start of the log). Without them
# verify.sh refuses (exit 2); --self-consistency-only uses the keys shipped in the bundle and
# proves nothing about who wrote it. --tar checks the tar's entries (regular files, safe names,
# each once) and unpacks it into a temporary directory; else DIR (default: the current
# directory) is the unpacked bundle. Exit 0 only when every check holds, 1 when one fails.
set -u
LC_ALL=C
export LC_ALL
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
die() { echo "verify.sh: $*" >&2; exit 2; }
for t in openssl jq sha256sum stat tar find awk; do command -v $t >/dev/null || die "needs $t"; done

MANIFEST_TYPE=application/vnd.fabricctl.evidence-manifest+json
INTOTO_TYPE=application/vnd.in-toto+json
NOTHING_PROVEN="SELF-CONSISTENCY ONLY: the keys used are the ones inside the bundle; this proves nothing about who wrote it"

abspath() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
PINNED=() AUDIT_PUB= TRUSTED_CP= SELF=0 TAR= DIR=. BATCH=1
while [ $# -gt 0 ]; do
	case $1 in
	--self-consistency-only) SELF=1; shift; continue ;;
	--openssl-only) BATCH=0; shift; continue ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 0 ;;
	--signer-pub | --audit-pub | --trusted-checkpoint | --tar | --dir)
		[ $# -ge 2 ] || die "$1 needs a file" ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
	case $1 in
	--signer-pub) PINNED+=("$(abspath "$2")") ;;
	--audit-pub) AUDIT_PUB=$(abspath "$2") ;;
	--trusted-checkpoint) TRUSTED_CP=$(abspath "$2") ;;
	--tar) TAR=$(abspath "$2") ;;
	--dir) DIR=$2 ;;
	esac
	shift 2
done
if [ $SELF = 1 ]; then
	[ ${#PINNED[@]} -eq 0 ] && [ -z "$AUDIT_PUB$TRUSTED_CP" ] ||
		die "--self-consistency-only takes no --signer-pub, --audit-pub or --trusted-checkpoint"
else
	[ ${#PINNED[@]} -gt 0 ] || die "no trust anchor: pin the signers with --signer-pub FILE (one per required signature) and the audit key with --audit-pub FILE or --trusted-checkpoint FILE; keys shipped in the bundle are never trusted (--self-consistency-only checks the bundle against itself and proves nothing about who wrote it)"
	[ -n "$AUDIT_PUB$TRUSTED_CP" ] || die "no audit trust anchor: give --audit-pub FILE (the host's audit key) or --trusted-checkpoint FILE (a checkpoint note of the host's log you kept)"
fi
command -v python3 >/dev/null || BATCH=0
for f in "${PINNED[@]}" $AUDIT_PUB $TRUSTED_CP $TAR; do [ -f "$f" ] || die "cannot read '$f'"; done
TMP=$(mktemp -d) || die "no temporary directory"
trap '[ -z "${PYPID:-}" ] || { exec {PYQ}>&-; wait "$PYPID"; }; rm -rf "$TMP"' EXIT

hex2bin() { local h=$1 e= i; for ((i = 0; i < ${#h}; i += 2)); do e+="\\x${h:i:2}"; done; printf "$e"; }
sha() { sha256sum | { read -r h _; echo "$h"; }; }
size() { local n; n=$(wc -c <"$1") && echo $((n)); } # $((n)): some wc pad the number with blanks
# keyid FILE: KEYID, the key id of an Ed25519 public key (PEM file), the SHA-256 of its DER
# SubjectPublicKeyInfo in hex, and KEYRAW, its 32 bytes in hex. Fails when the file is not an
# Ed25519 public key: its DER is then not the 44 bytes of one (302a300506032b6570032100, the key).
ED25519_SPKI=302a300506032b6570032100
# (the DER's hex and digest from the python3 helper when it runs, else od and sha256sum)
keyid() {
	local der kid=
	openssl pkey -pubin -in "$1" -outform DER >"$TMP/key.der" 2>/dev/null
	if batch der /dev/null "$TMP/key.id" "$TMP/key.der"; then
		read -r kid der <"$TMP/key.id"
	else
		der=$(od -An -v -tx1 <"$TMP/key.der")
		der=${der//[$' \n']/}
	fi
	[[ $der =~ ^${ED25519_SPKI}[0-9a-f]{64}$ ]] || return 1
	KEYRAW=${der:24} KEYID=${kid:-$(hex2bin "$der" | sha)}
}
# a bundle file name: components of [A-Za-z0-9._-], none starting with a dot, no //, no /
# at either end (so no dotfile, no "..", no absolute path)
safe_name() { [[ $1 =~ ^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$ ]]; }

# --- batch helper: python3 (standard library) calling OpenSSL's own libcrypto ----------------
# One process for the whole run instead of one per record or signature: the leaf and record
# hashes of the window (hashlib) and every statement's Ed25519 signature (EVP_DigestVerify of
# libcrypto 3 through ctypes: OpenSSL's verification, the same code `openssl pkeyutl -verify`
# runs). Before it is trusted it must accept RFC 8032's test vector 1 and refuse it with one bit
# changed. Without python3 or libcrypto 3, or with --openssl-only, every check runs with the
# openssl tool alone (one process per signature: slower, the same checks).
PYBATCH='
import sys, re, hashlib
def leaves(path):
	data = open(path, "rb").read()
	lines = data.split(b"\n")
	if lines and lines[-1] == b"":
		lines.pop()
	out = []
	for l in lines:
		out.append(hashlib.sha256(b"\0" + l).hexdigest() + " " + hashlib.sha256(l).hexdigest())
	sys.stdout.write("".join(x + "\n" for x in out))
def crypto():
	global ctypes
	import ctypes, ctypes.util # here: a run that checks no signature does not load them
	# find_library (which runs ldconfig, or a compiler) only when the usual name does not load
	names = ("libcrypto.so.3", lambda: ctypes.util.find_library("crypto"), "libcrypto.3.dylib")
	for n in names:
		if callable(n):
			n = n()
		if not n:
			continue
		try:
			lib = ctypes.CDLL(n)
			lib.OpenSSL_version_num.restype = ctypes.c_ulong
			if lib.OpenSSL_version_num() >> 28 >= 3:
				break
		except (OSError, AttributeError):
			pass
	else:
		sys.exit(3)
	P = ctypes.c_void_p
	lib.EVP_PKEY_new_raw_public_key.restype = P
	lib.EVP_PKEY_new_raw_public_key.argtypes = [ctypes.c_int, P, ctypes.c_char_p, ctypes.c_size_t]
	lib.EVP_MD_CTX_new.restype = P
	lib.EVP_MD_CTX_free.argtypes = [P]
	lib.EVP_PKEY_free.argtypes = [P]
	lib.EVP_DigestVerifyInit.argtypes = [P, P, P, P, P]
	lib.EVP_DigestVerify.argtypes = [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
	return lib
def verifier(lib, pub):
	key = lib.EVP_PKEY_new_raw_public_key(1087, None, pub, len(pub)) # EVP_PKEY_ED25519
	if not key or len(pub) != 32:
		sys.exit(3)
	def ok(msg, sig):
		ctx = lib.EVP_MD_CTX_new()
		if not ctx:
			sys.exit(3)
		try:
			return len(sig) == 64 and lib.EVP_DigestVerifyInit(ctx, None, None, None, key) == 1 and \
				lib.EVP_DigestVerify(ctx, sig, 64, msg, len(msg)) == 1
		finally:
			lib.EVP_MD_CTX_free(ctx)
	return ok
def range_root(w, lo, hi, hashes):
	# the bash range_root below, step for step: leaves lo..hi, then the proof nodes in order
	cur, nodes = hashes.split("--")
	cur, nodes, u = cur.split(), nodes.split(), 0
	while w > 1:
		if lo & 1:
			if u >= len(nodes):
				return
			cur, u, lo = [nodes[u]] + cur, u + 1, lo - 1
		if hi & 1 == 0 and hi + 1 < w:
			if u >= len(nodes):
				return
			cur, u, hi = cur + [nodes[u]], u + 1, hi + 1
		new = [hashlib.sha256(b"\1" + bytes.fromhex(cur[i]) + bytes.fromhex(cur[i + 1])).hexdigest()
			for i in range(0, len(cur) - 1, 2)]
		if len(cur) % 2:
			new.append(cur[-1])
		cur, w, lo, hi = new, (w + 1) >> 1, lo >> 1, hi >> 1
	if u == len(nodes) and len(cur) == 1:
		print(cur[0])
def consistency(m, n, old, new, path):
	# the bash consistency_ok below, step for step (RFC 9162 2.1.4.2): True when PATH proves the
	# tree of M leaves with root OLD the start of the tree of N leaves with root NEW (hex)
	if not all(re.fullmatch("[0-9a-f]{64}", x) for x in [old, new] + path) or not 1 <= m <= n:
		return False
	if m == n:
		return not path and old == new
	if not path:
		return False
	node = lambda l, r: hashlib.sha256(b"\1" + bytes.fromhex(l) + bytes.fromhex(r)).hexdigest()
	if m & (m - 1) == 0:
		path = [old] + path
	fn, sn = m - 1, n - 1
	while fn & 1:
		fn, sn = fn >> 1, sn >> 1
	fr = sr = path[0]
	for c in path[1:]:
		if sn == 0:
			return False
		if fn & 1 or fn == sn:
			fr, sr = node(c, fr), node(c, sr)
			while not fn & 1 and fn != 0:
				fn, sn = fn >> 1, sn >> 1
		else:
			sr = node(sr, c)
		fn, sn = fn >> 1, sn >> 1
	return sn == 0 and fr == old and sr == new
def paes(paefile, goodfile):
	# the PAE lines of the jq pass (a backslash, newline and NUL escaped as printf %b reads them), by envelope line
	esc = {b"\\\\": b"\\", b"\\n": b"\n", b"\\0000": b"\0"}
	lines = open(paefile, "rb").read().split(b"\n")
	return [re.sub(rb"\\(\\|n|0000)", lambda m: esc[m.group(0)], lines[int(k) - 1])
		for k in open(goodfile).read().split()]
LIB = None
def checked():
	# libcrypto, once it accepted RFC 8032 test vector 1 and refused it changed
	global LIB
	if LIB is None:
		lib = crypto()
		kat = verifier(lib, bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
		ksig = bytes.fromhex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
		if not kat(b"", ksig) or kat(b"", ksig[:5] + bytes([ksig[5] ^ 1]) + ksig[6:]) or kat(b"x", ksig):
			sys.exit(3)
		LIB = lib
	return LIB
def ed25519(pubfile, sighex, listfile, paefile, goodfile):
	lib = checked()
	ok = verifier(lib, open(pubfile, "rb").read())
	hx = open(sighex).read()
	pae = paes(paefile, goodfile)
	for f in open(listfile).read().split():
		j = int(f, 10)
		if ok(pae[j], bytes.fromhex(hx[128 * j:128 * j + 128])):
			print(f)
def prefixes(path):
	# "SIZE SHA-256 of the first SIZE bytes" (or "-" past the end) per size on stdin
	data = open(path, "rb").read()
	for n in sorted(set(int(x) for x in sys.stdin.read().split())):
		print(n, hashlib.sha256(data[:n]).hexdigest() if n <= len(data) else "-")
def b64(t):
	# the bytes of T, base64 as the writer spells it (alphabet, padding, no stray bits), else
	# None: the openssl tool decodes what is not (exactly as before)
	import base64, binascii
	try:
		b = base64.b64decode(t, validate=True)
	except (binascii.Error, ValueError):
		return None
	return b if base64.b64encode(b) == t else None
ED25519_SPKI = bytes.fromhex("302a300506032b6570032100")
def der(path):
	# "SHA-256 HEX" of a DER file (a key as openssl pkey -outform DER wrote it)
	d = open(path, "rb").read()
	print(hashlib.sha256(d).hexdigest(), d.hex())
def dsse(typ, keys):
	# stdin: the payload in base64, then per key (KEYS of them) its 32 bytes in hex and its
	# signature in base64, or "-": writes the payload to PAYLOAD; per key "ok", "bad" or "-"
	lines = sys.stdin.buffer.read().split(b"\n")
	if len(lines) != keys + 2 or lines[-1] != b"":
		sys.exit(4)
	p = b64(lines[0])
	if p is None:
		sys.exit(4)
	want, sigs = [], []
	for l in lines[1:-1]:
		if l == b"-":
			want.append(None)
			continue
		k, s = l.split(b" ")
		s = b64(s)
		if s is None or not re.fullmatch(rb"[0-9a-f]{64}", k):
			sys.exit(4)
		want.append((bytes.fromhex(k.decode()), s))
	lib = checked() if any(want) else None
	typ = typ.encode()
	pae = b"DSSEv1 %d %s %d " % (len(typ), typ, len(p)) + p
	out = ["-" if w is None else ("ok" if verifier(lib, w[0])(pae, w[1]) else "bad") for w in want]
	return p, out
def note(body, sigs, derfile):
	# note_verify below, for an Ed25519 key (its DER in DERFILE): "verified" or "not"; 4 when a
	# line is not of the plain form (the openssl tool then decides, as before)
	d = open(derfile, "rb").read()
	if len(d) != 44 or not d.startswith(ED25519_SPKI):
		sys.exit(4)
	pub, text, s = d[12:], open(body, "rb").read(), open(sigs, "rb").read()
	if b"\0" in s:
		sys.exit(4)
	lib, ok = None, None
	for line in s.split(b"\n")[:-1]:
		if not line.startswith("\u2014 ".encode()):
			continue
		rest = line.split(b" ", 1)[1]
		f = rest.split(b" ")
		blob = b64(f[1] if len(f) > 1 else b"")
		if blob is None:
			sys.exit(4)
		if blob[:4] != hashlib.sha256(f[0] + b"\n\1" + pub).digest()[:4]:
			continue
		if ok is None:
			lib = checked()
			ok = verifier(lib, pub)
		if ok(text, blob[-64:]):
			print("verified")
			return
	print("not")
def digest(path):
	# the SHA-256 of the file PATH in hex, read a MiB at a time; OSError when it cannot be read
	h = hashlib.sha256()
	with open(path, "rb") as f:
		for c in iter(lambda: f.read(1 << 20), b""):
			h.update(c)
	return h.hexdigest()
def files(names):
	# "NAME SIZE SHA-256" per name a line ("-" for what cannot be read), as stat and sha256sum give them
	import os
	for n in names.read().split("\n")[:-1]:
		try:
			size = str(os.lstat(n).st_size)
		except OSError:
			size = "-"
		try:
			h = digest(n)
		except OSError:
			h = "-"
		print(n, size, h)
def sums(path):
	# "agrees" when every line of PATH is "SHA-256  NAME" (lowercase hex, a plain name) and
	# each file has it: sha256sum --strict -c accepts that; else "unsure" (sha256sum decides)
	data = open(path, "rb").read()
	lines = data.split(b"\n")
	if len(lines) < 2 or lines[-1] != b"":
		return print("unsure")
	for l in lines[:-1]:
		m = re.fullmatch(rb"([0-9a-f]{64})  ([A-Za-z0-9_-][A-Za-z0-9._-]*(?:/[A-Za-z0-9_-][A-Za-z0-9._-]*)*)", l)
		if not m or m.group(2) == b"-":
			return print("unsure")
		try:
			h = digest(m.group(2))
		except OSError:
			return print("unsure")
		if h.encode() != m.group(1):
			return print("unsure")
	print("agrees")
def lines(path):
	# the number of lines as awk counts them (NR at the end); 4 with a NUL byte (awk decides)
	data = open(path, "rb").read()
	if b"\0" in data:
		sys.exit(4)
	print(data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0))
def nokey(path):
	# "none" or "some": whether a string of the JSON document PATH (one value, UTF-8) is a run of
	# 32 or more lowercase hex digits, as test("^[0-9a-f]{32,}$") over jq .. | strings says;
	# 4 (jq decides) for what jq might read otherwise: not one plain value, a repeated key, a
	# NaN or Infinity, a string with a line break, nesting deeper than 64 (jq 1.6 refuses
	# over 256), a string or key with a lone surrogate (\ud800: jq refuses it)
	import json
	def pairs(p):
		if len(set(k for k, _ in p)) != len(p):
			raise ValueError
		return dict(p)
	def nan(c):
		raise ValueError
	try:
		doc = json.loads(open(path, "rb").read().decode("utf-8"), object_pairs_hook=pairs, parse_constant=nan)
	except (ValueError, RecursionError):
		sys.exit(4)
	def plain(t):
		try:
			t.encode("utf-8")
		except UnicodeEncodeError:
			sys.exit(4)
	found, todo = False, [(doc, 1)]
	while todo:
		v, depth = todo.pop()
		if depth > 64:
			sys.exit(4)
		if isinstance(v, dict):
			for k in v:
				plain(k)
			todo.extend((x, depth + 1) for x in v.values())
		elif isinstance(v, list):
			todo.extend((x, depth + 1) for x in v)
		elif isinstance(v, str):
			plain(v)
			if "\n" in v or "\r" in v:
				sys.exit(4)
			found = found or re.fullmatch("[0-9a-f]{32,}", v) is not None
	print("some" if found else "none")
def run(mode, a):
	if mode == "leaves":
		leaves(a[0])
	elif mode == "prefixes":
		prefixes(a[0])
	elif mode == "ed25519":
		ed25519(*a[0:5])
	elif mode == "range":
		range_root(int(a[0]), int(a[1]), int(a[2]), sys.stdin.read())
	elif mode == "der":
		der(a[0])
	elif mode == "dsse":
		p, out = dsse(a[0], int(a[1]))
		open(a[2], "wb").write(p)
		print("\n".join(["payload"] + out))
	elif mode == "note":
		note(a[0], a[1], a[2])
	elif mode == "b64hex":
		t = sys.stdin.buffer.read()
		b = b64(t[:-1] if t.endswith(b"\n") else t)
		if b is None:
			sys.exit(4)
		print(b.hex())
	elif mode == "files":
		files(sys.stdin)
	elif mode == "same":
		print("same" if open(a[0], "rb").read() == open(a[1], "rb").read() else "differ")
	elif mode == "sums":
		sums(a[0])
	elif mode == "nokey":
		nokey(a[0])
	elif mode == "lines":
		lines(a[0])
	elif mode == "consistency":
		h = sys.stdin.read().split()
		print("consistent" if len(h) >= 2 and consistency(int(a[0]), int(a[1]), h[0], h[1], h[2:]) else "inconsistent")
	else:
		sys.exit(2)
def serve():
	# one request a line (batch below): MODE IN OUT ARGS..., tab-separated; MODE reads IN as its
	# stdin and writes OUT as its stdout; the answer, one line: its exit status, a tab and OUT
	req, ans = sys.stdin, sys.stdout
	for line in req:
		rc, f = 1, line.rstrip("\n").split("\t")
		try:
			with open(f[1], errors="surrogateescape") as sys.stdin, open(f[2], "w") as sys.stdout:
				run(f[0], f[3:])
			rc = 0
		except SystemExit as e:
			rc = e.code if isinstance(e.code, int) else 1
		except Exception:
			pass
		sys.stdin, sys.stdout = req, ans
		ans.write("%d\t%s\n" % (rc, f[2] if len(f) > 2 else ""))
		ans.flush()
if sys.argv[1:] == ["serve"]:
	serve()
'
# batch MODE IN OUT ARGS...: the helper's MODE, IN its input and OUT its output; non-zero when it
# cannot run here (3: no python3 with libcrypto 3, or --openssl-only: the openssl tool does it).
# One python3 process answers every call of the run (python3 takes tens of milliseconds to start):
# batch_start starts it in this shell (a subshell's would end with it), reading requests from one
# FIFO and answering on another, a line each; the EXIT trap ends it.
PYPID=
batch_start() {
	[ "$BATCH" = 1 ] && [[ $TMP != *[$'\t\n']* ]] && mkfifo "$TMP/py.req" "$TMP/py.ans" || return
	exec {PYQ}<>"$TMP/py.req" # read and write: a request to a helper that died is no SIGPIPE
	python3 -I -S -c "$PYBATCH" serve >"$TMP/py.ans" <"$TMP/py.req" 2>/dev/null {PYQ}>&- &
	PYPID=$!
	exec {PYA}<"$TMP/py.ans" # EOF once the helper is gone
}
batch() {
	local IFS=$'\t' ans a
	[ -n "$PYPID" ] || return 3
	for a; do [[ $a != *[$'\t\n']* ]] || return 3; done # a field with a tab or newline: not one request line
	printf '%s\n' "$*" >&"$PYQ" && read -r ans <&"$PYA" && [ "$ans" = "0"$'\t'"$3" ]
}

# --- 0. the tar (with --tar): regular files only, safe names, each once; then unpacked --------
if [ -n "$TAR" ]; then
	tar -tvf "$TAR" >"$TMP/tv" 2>"$TMP/tarerr" && tar -tf "$TAR" >"$TMP/tl" 2>>"$TMP/tarerr" ||
		{ bad "tar: cannot list $TAR: $(head -c 300 "$TMP/tarerr")"; echo "verify.sh: $pass passed, $fail failed"; exit 1; }
	tbad=0
	[ "$(wc -l <"$TMP/tv")" = "$(wc -l <"$TMP/tl")" ] || { bad "tar: entry names with line breaks"; tbad=1; }
	while IFS= read -r l; do
		[ "${l:0:1}" = - ] || { bad "tar: an entry that is not a regular file: $l"; tbad=1; }
	done <"$TMP/tv"
	while IFS= read -r m; do
		safe_name "$m" || { bad "tar: unsafe entry name '$m' (dotfile, .., absolute or odd characters)"; tbad=1; }
	done <"$TMP/tl"
	d=$(sort "$TMP/tl" | uniq -d | head -3 | tr '\n' ' ')
	[ -z "$d" ] || { bad "tar: entries given more than once: $d"; tbad=1; }
	if [ $tbad = 1 ]; then
		echo "verify.sh: $pass passed, $fail failed (the tar was not unpacked)"
		exit 1
	fi
	ok "tar: $(wc -l <"$TMP/tl") regular files, safe names, each once"
	mkdir "$TMP/bundle" && tar -xf "$TAR" -C "$TMP/bundle" --no-same-owner --no-same-permissions 2>"$TMP/tarerr" ||
		{ bad "tar: cannot unpack: $(head -c 300 "$TMP/tarerr")"; echo "verify.sh: $pass passed, $fail failed"; exit 1; }
	DIR=$TMP/bundle
fi
cd "$DIR" || die "cannot enter '$DIR'"
[ $SELF = 1 ] && echo "$NOTHING_PROVEN"
batch_start # the helper, for the sections below (in the bundle's directory: it reads its files)

# --- DSSE: dsse_verify ENVELOPE TYPE LABEL --------------------------------------------------
# The payload goes to $TMP/payload. Every key of SIGNER_KEYS must have exactly one signature
# (matched by keyid) and it must verify over PAE(type, payload) =
# "DSSEv1" SP len(type) SP type SP len(payload) SP payload (lengths in bytes, decimal).
# Prints only failures; returns non-zero when one check fails.
SIGNER_KEYS=() SIGNER_IDS=()
# ids_json: SIGNER_IDS as a JSON array (key ids are SHA-256 in hex: nothing to escape)
ids_json() {
	local i out=
	for i in "${SIGNER_IDS[@]}"; do out+=${out:+,}\"$i\"; done
	echo "[$out]"
}
dsse_verify() {
	local env=$1 want=$2 label=$3 ptype n i rc=0
	local -a f=()
	# one jq pass (jq starts slowly): the shape, the type, the payload, and per pinned key
	# "s" and its signature or "n" and how many signatures it has when not exactly one;
	# base64 fields are checked against the alphabet, so each is one line
	mapfile -t f < <(jq -r --argjson ids "$IDS" '
		def b64: test("^[A-Za-z0-9+/]*={0,2}$");
		if type == "object" and (.payloadType | type) == "string" and
		(.payload | type) == "string" and (.signatures | type) == "array" and
		all(.signatures[]; type == "object" and (.keyid | type) == "string" and (.sig | type) == "string")
		then (.payloadType | @json), (.payload | if b64 then "p" + . else "x" end),
			(. as $e | $ids[] as $k | [$e.signatures[] | select(.keyid == $k)]
				| if length == 1 and (.[0].sig | b64) then "s" + .[0].sig
				elif length == 1 then "x" else "n\(length)" end)
		else empty end' "$env" 2>/dev/null)
	if [ ${#f[@]} != $((2 + ${#SIGNER_IDS[@]})) ]; then
		bad "$label: not a DSSE envelope"
		: >"$TMP/payload"
		return 1
	fi
	ptype=${f[0]}
	if [ "$ptype" != "\"$want\"" ]; then # the type's JSON text; $want is plain ASCII
		bad "$label: payloadType $ptype, expected \"$want\""
		rc=1
	fi
	# the payload and the PAE's signatures in the python3 helper when each is base64 as the
	# writer spells it (res: "payload", then "ok", "bad" or "-" per key), else the openssl tool
	local req=${f[1]#p} res=()
	[ "${f[1]}" = x ] && req=
	for i in "${!SIGNER_KEYS[@]}"; do
		n=${f[2 + i]}
		if [[ $n == s* ]]; then req+=$'\n'"${SIGNER_RAW[i]} ${n#s}"; else req+=$'\n-'; fi
	done
	printf '%s\n' "$req" >"$TMP/dsse.in"
	batch dsse "$TMP/dsse.in" "$TMP/dsse.out" "$want" ${#SIGNER_KEYS[@]} "$TMP/payload" &&
		mapfile -t res <"$TMP/dsse.out"
	[ ${#res[@]} = $((1 + ${#SIGNER_KEYS[@]})) ] && [ "${res[0]}" = payload ] || res=()
	if [ "${f[1]}" = x ]; then
		bad "$label: the payload is not base64"
		: >"$TMP/payload"
		rc=1
	elif [ ${#res[@]} = 0 ]; then
		printf '%s' "${f[1]#p}" | openssl base64 -d -A >"$TMP/payload" 2>/dev/null
	fi
	# the PAE of the expected type: a signature over any other type fails (and so does the type)
	[ ${#res[@]} != 0 ] ||
		{ printf 'DSSEv1 %d %s %d ' ${#want} "$want" "$(size "$TMP/payload")"; cat "$TMP/payload"; } >"$TMP/pae"
	for i in "${!SIGNER_KEYS[@]}"; do
		n=${f[2 + i]}
		if [[ $n == n* ]]; then
			bad "$label: ${n#n} signatures by ${SIGNER_KEYS[i]} (key id ${SIGNER_IDS[i]}), expected 1"
			rc=1
			continue
		fi
		if [ "$n" = x ]; then
			bad "$label: the signature by ${SIGNER_KEYS[i]} (key id ${SIGNER_IDS[i]}) is not base64"
			rc=1
			continue
		fi
		if [ ${#res[@]} != 0 ]; then
			[ "${res[1 + i]}" = ok ] ||
				{ bad "$label: the signature by ${SIGNER_KEYS[i]} (key id ${SIGNER_IDS[i]}) does NOT verify"; rc=1; }
			continue
		fi
		printf '%s' "${n#s}" | openssl base64 -d -A >"$TMP/sig" 2>/dev/null
		if ! openssl pkeyutl -verify -pubin -inkey "${SIGNER_KEYS[i]}" -rawin -in "$TMP/pae" \
			-sigfile "$TMP/sig" >/dev/null 2>&1; then
			bad "$label: the signature by ${SIGNER_KEYS[i]} (key id ${SIGNER_IDS[i]}) does NOT verify"
			rc=1
		fi
	done
	return $rc
}

# scalars FILE NAME=EXPR...: one jq pass over FILE (jq takes tens of milliseconds to start,
# and a bundle has a dozen such values) sets each shell variable NAME to what
# `jq -r EXPR FILE` prints for it: strings as they are, anything else as JSON; empty where
# EXPR fails or FILE is not exactly one JSON value. A string holding a control character
# becomes a lone newline, which no value read from one line of a file equals. The values
# reach eval only quoted by jq's @sh. NAME:raw=EXPR: the string EXPR gives, control characters
# and all (EXPR must give none with a NUL).
scalars() {
	local file=$1 kv prog=
	shift
	local name f
	for kv; do
		name=${kv%%=*} f=r
		[[ $name == *:raw ]] && name=${name%:raw} f=. # EXPR gives a string without a NUL: as it is
		printf -v "$name" '%s' ''
		prog+="${prog:+, }(try ((${kv#*=}) | $f) catch \"\" | @sh \"$name=\\(.)\")"
	done
	eval "$(jq -n -r 'def r: if type == "string" then (if (explode | any(. < 32)) then "\n" else . end)
		else tojson end; [inputs] | if length == 1 then .[0] | ('"$prog"') else empty end' "$file" 2>/dev/null)"
}

# --- 1. the signed manifest: the DSSE envelope, its signers, MANIFEST.json ------------------
M=$TMP/manifest
if [ $SELF = 1 ]; then
	# the signer keys the envelope's own payload names (unauthenticated by definition)
	jq -j .payload MANIFEST.dsse.json 2>/dev/null | openssl base64 -d -A >"$M" 2>/dev/null
	while IFS= read -r k; do
		safe_name "$k" && [ -f "$k" ] && [ ! -L "$k" ] && PINNED+=("$PWD/$k") || bad "manifest: signer key '$k' is not a file of the bundle"
	done < <(jq -r '.signers[]?.public_key' "$M" 2>/dev/null)
fi
SIGNER_RAW=() # their 32 bytes, hex
for k in "${PINNED[@]}"; do
	keyid "$k" || { bad "signer key $k is not an Ed25519 public key"; continue; }
	kid=$KEYID
	# one key pinned twice would let one signature count as two (dual control); a pin is a signer
	if [[ " ${SIGNER_IDS[*]} " == *" $kid "* ]]; then
		bad "signer key $k: the same key as one pinned before (key id $kid): each --signer-pub names another signer, and a signature counts once"
		continue
	fi
	SIGNER_KEYS+=("$k") SIGNER_IDS+=("$kid") SIGNER_RAW+=("$KEYRAW")
	echo "    signer key $k: key id $kid"
done
IDS=$(ids_json) # (for dsse_verify and section 4)
if [ -f MANIFEST.dsse.json ] && [ ! -L MANIFEST.dsse.json ] &&
	dsse_verify MANIFEST.dsse.json "$MANIFEST_TYPE" "manifest envelope" && [ ${#SIGNER_KEYS[@]} -gt 0 ]; then
	whose=pinned
	[ $SELF = 1 ] && whose="bundle's own"
	ok "manifest envelope: ${#SIGNER_KEYS[@]} signature(s) by the $whose keys verify"
else
	[ -f MANIFEST.dsse.json ] || bad "MANIFEST.dsse.json is missing"
	[ ${#SIGNER_KEYS[@]} -gt 0 ] || bad "no signer key to check the manifest with"
fi
# (the payload itself, not a copy: nothing writes $TMP/payload again)
if [ -f "$TMP/payload" ]; then M=$TMP/payload; else : >"$M"; fi
# every single value the later checks read from the manifest (the file list is read on its own)
scalars "$M" MF_SHAPE='.bundle == "fabricctl-evidence" and .format == 6 and (.signatures_required | type) == "number"
	and (.files | type) == "array" and all(.files[]; (.name | type) == "string" and (.size | type) == "number"
	and (.sha256 | type) == "string" and (.sha256 | test("^[0-9a-f]{64}$")))
	and (.attestations.file | type) == "string" and (.attestations.statements | type) == "number"' \
	MF_NEED='.signatures_required // 0' MF_FIRST='.audit.slice_first_seq' MF_LAST='.audit.slice_last_seq' \
	MF_RECORDS='.audit.slice_records' MF_CHECKPOINT='"\(.audit.checkpoint_size) \(.audit.checkpoint_root)"' \
	MF_ORIGIN='.audit.origin | strings' MF_WHOLE='.audit.whole_log' \
	MF_ATT='.attestations.file // "attestations.intoto.jsonl"' MF_STATEMENTS='.attestations.statements // -1' \
	MF_PN='.pn' MF_PN_SEQ='.pn.anchor_seq' MF_PN_BYTES='.pn.bytes' MF_PN_SHA='.pn.sha256' \
	MF_PN_FILES='.pn | "\(.ledger) \(.ranges)"' \
	MF_APPR='.approvals' MF_SEL='{c: .change_id, s: .window.since, u: .window.until}' \
	MF_FILES_TSV:raw='try ([.files[]? | [.name, .size, .sha256] | @tsv + "\n"] | add // "" |
		if test("\u0000") then "-" else "+" + . end) catch "-"'
if [ "$MF_SHAPE" = true ]; then
	ok "manifest: a fabricctl evidence manifest, format 6"
else
	bad "manifest: the signed payload is not a fabricctl evidence manifest (format 6)"
fi
need=${MF_NEED:-0}
if [ "$need" -ge 1 ] 2>/dev/null && [ ${#SIGNER_KEYS[@]} -ge "$need" ]; then
	ok "signers: ${#SIGNER_KEYS[@]} key(s) checked, the bundle requires $need"
else
	bad "signers: ${#SIGNER_KEYS[@]} key(s) pinned, the bundle requires ${need} signatures: pin every signer"
fi
# same FILE FILE: 0 when the two hold the same bytes (the helper, else cmp)
same() {
	local r
	batch same /dev/null "$TMP/same" "$1" "$2" && read -r r <"$TMP/same" && { [ "$r" = same ]; return; }
	cmp -s "$1" "$2"
}
if [ -f MANIFEST.json ] && same MANIFEST.json "$M"; then
	ok "MANIFEST.json is the signed payload"
else
	bad "MANIFEST.json is not the payload of the signed envelope"
fi

# --- 2. the files: exactly the ones the signed manifest lists, each with its size and digest --
declare -A LISTED=() DIRS=() FSHA=() WANT_SIZE=() WANT_SHA=() GOT_SIZE=() GOT_SHA=()
FN=()
LISTED[MANIFEST.json]=1 LISTED[MANIFEST.dsse.json]=1
fbad=0 nf=0
# the list: read with the manifest's values ("+" and its lines), else (a NUL, an error, not one
# JSON value) jq on its own as before
if [[ $MF_FILES_TSV == +* ]]; then
	printf '%s' "${MF_FILES_TSV#+}" >"$TMP/files.tsv"
else
	jq -r '.files[]? | [.name, .size, .sha256] | @tsv' "$M" >"$TMP/files.tsv" 2>/dev/null
fi
while IFS=$'\t' read -r name fsize digest; do
	nf=$((nf + 1))
	if ! safe_name "$name" || [ -n "${LISTED[$name]:-}" ]; then
		bad "manifest: file name '$name' is unsafe or listed twice"
		fbad=1
		continue
	fi
	LISTED[$name]=1
	d=$name
	while [[ $d == */* ]]; do d=${d%/*}; DIRS[$d]=1; done
	if [ -L "$name" ] || [ ! -f "$name" ]; then
		bad "files: $name (listed in the manifest) is missing or not a regular file"
		fbad=1
	else
		FN+=("$name") WANT_SIZE[$name]=$fsize WANT_SHA[$name]=$digest
	fi
done <"$TMP/files.tsv"
# the sizes and digests of all of them in two processes, not two a file; each read back by
# its name (safe names: no blank, no backslash, printed as given), so a file that vanished
# meanwhile leaves no value and fails instead of shifting the others
# (or all in the python3 helper: "NAME SIZE SHA-256" a line, "-" for what it cannot read)
if [ ${#FN[@]} -gt 0 ] && printf '%s\n' "${FN[@]}" >"$TMP/fn" && batch files "$TMP/fn" "$TMP/fn.out"; then
	while read -r n s v; do
		[ "$s" = - ] || GOT_SIZE[$n]=$s
		[ "$v" = - ] || GOT_SHA[$n]=$v
	done <"$TMP/fn.out"
elif [ ${#FN[@]} -gt 0 ]; then
	while read -r v n; do GOT_SIZE[$n]=$v; done < <(stat -c '%s %n' -- "${FN[@]}" 2>/dev/null)
	while read -r v n; do GOT_SHA[$n]=$v; done < <(sha256sum -- "${FN[@]}" 2>/dev/null)
fi
for name in "${FN[@]}"; do
	if [ "${GOT_SIZE[$name]:-x}" != "${WANT_SIZE[$name]}" ] || [ "${GOT_SHA[$name]:-x}" != "${WANT_SHA[$name]}" ]; then
		bad "files: $name does not match its size and SHA-256 in the signed manifest"
		fbad=1
	else
		FSHA[$name]=${WANT_SHA[$name]} # this file, with this digest (for the statements' subjects)
	fi
done
# every entry of the directory, dotfiles, directories and odd names included
while IFS= read -r -d '' ent; do
	kind=${ent:0:1} name=${ent:2}
	case $kind in
	f) [ -n "${LISTED[$name]:-}" ] || { bad "files: '$name' is not listed in the signed manifest"; fbad=1; } ;;
	d) [ -n "${DIRS[$name]:-}" ] || { bad "files: directory '$name' holds no listed file"; fbad=1; } ;;
	*) bad "files: '$name' is not a regular file (symbolic link, device or pipe)"; fbad=1 ;;
	esac
done < <(find . -mindepth 1 \( -type f -printf 'f %P\0' \) -o \( -type d -printf 'd %P\0' \) -o -printf 'o %P\0')
[ $fbad = 0 ] && [ "$nf" -gt 0 ] && ok "files: the $nf files of the signed manifest, sizes and digests match, nothing else in the bundle"
# SHA256SUMS, when there, is one of those files; check it agrees too (convenience for sha256sum -c)
if [ -n "${LISTED[SHA256SUMS]:-}" ] && [ -f SHA256SUMS ] && [ ! -L SHA256SUMS ]; then
	# the helper says "agrees" only for plain lines it checked, each file with its digest; on
	# anything else sha256sum -c decides, and words the failure
	if { batch sums /dev/null "$TMP/sums" SHA256SUMS && read -r r <"$TMP/sums" && [ "$r" = agrees ]; } ||
		sha256sum --quiet --strict -c SHA256SUMS >"$TMP/sums" 2>&1; then
		ok "SHA256SUMS agrees"
	else
		bad "SHA256SUMS: $(head -c 300 "$TMP/sums")"
	fi
fi

# --- 3. the audit log -------------------------------------------------------------------------
# check_audit_log: the window (audit/slice.jsonl: canonical records, consecutive, chained) and
# the RFC 9162 inclusion proof of each against the checkpoint (audit/proofs.json), the
# checkpoint (signature by the audit key, origin, the one the manifest names), the trusted
# checkpoint (same log, consistent), and with --whole-log the whole log (audit/log.jsonl).
# Kept in one function so a change of the log format changes only this.
LOG=audit/log.jsonl CP=audit/checkpoint.txt SLICE=audit/slice.jsonl PROOFS=audit/proofs.json
# note_split NOTEFILE PREFIX: the last note of a file of C2SP signed notes into PREFIX.body (the
# signed text: lines up to the blank line, each with its newline) and PREFIX.sigs (its lines)
note_split() {
	awk -v b="$2.body" -v s="$2.sigs" 'BEGIN { RS = ""; ORS = "" } { p[NR] = $0 }
		END { if (NR >= 2) { print p[NR - 1] "\n" > b; print p[NR] "\n" > s } }' "$1"
	[ -s "$2.body" ] && [ -s "$2.sigs" ]
}
# note_text PREFIX ARRAY: the first three lines of PREFIX.body (origin, size, root) into ARRAY,
# each as `sed -n Np` prints it without its newline, fewer when the text has fewer
note_text() {
	local -n nt=$2
	local l i
	nt=()
	for i in 1 2 3; do
		IFS= read -r l || [ -n "$l" ] || break
		nt+=("$l")
	done <"$1.body"
}
# note_verify PREFIX PUBFILE: 0 when a signature line "— NAME base64(keyid[4] || sig[64])" with
# keyid = SHA-256(NAME || "\n" || 0x01 || pub)[0..3] verifies over PREFIX.body
# (in the python3 helper when the key is Ed25519 and each signature line plain base64)
note_verify() {
	local line name kid pub rest b64 blob r
	openssl pkey -pubin -in "$2" -outform DER >"$TMP/note.der" 2>/dev/null
	batch note /dev/null "$TMP/note.out" "$1.body" "$1.sigs" "$TMP/note.der" && read -r r <"$TMP/note.out" &&
		{ [ "$r" = verified ]; return; }
	pub=$(od -An -v -tx1 <"$TMP/note.der")
	pub=${pub//[$' \n']/}
	[ ${#pub} -ge 64 ] || return 1
	pub=${pub: -64} # the key: the DER's last 32 bytes
	while IFS= read -r line; do
		[[ $line == $'\xe2\x80\x94 '* ]] || continue
		# NAME and the base64 (fields 2 and 3 of single blanks, as cut -d' ' gives them)
		rest=${line#* } b64=
		name=${rest%% *}
		[[ $rest == *' '* ]] && { b64=${rest#* }; b64=${b64%% *}; }
		b64hex "$b64"$'\n' # (with the newline the line's field had when it was piped to openssl)
		blob=$HEX
		kid=$({ printf '%s\n\1' "$name"; hex2bin "$pub"; } | sha)
		[ "${blob:0:8}" = "${kid:0:8}" ] || continue
		hex2bin "${blob:(${#blob} > 128 ? ${#blob} - 128 : 0)}" >"$TMP/nsig" # its last 64 bytes
		openssl pkeyutl -verify -pubin -inkey "$2" -rawin -in "$1.body" -sigfile "$TMP/nsig" >/dev/null 2>&1 && return 0
	done <"$1.sigs"
	return 1
}
# b64hex TEXT: HEX, the bytes openssl base64 -d -A gives for TEXT, in hex (the helper when TEXT is
# base64 as the writer spells it)
b64hex() {
	printf '%s' "$1" >"$TMP/b64.in"
	batch b64hex "$TMP/b64.in" "$TMP/b64.out" && { read -r HEX <"$TMP/b64.out" || HEX=; } && return
	HEX=$(openssl base64 -d -A <"$TMP/b64.in" 2>/dev/null | od -An -v -tx1)
	HEX=${HEX//[$' \n']/}
}
# node HEX-LEFT HEX-RIGHT: SHA-256(0x01 || left || right), hex (one openssl process: for the few
# hashes of a consistency proof)
node() { { printf '\1'; hex2bin "$1"; hex2bin "$2"; } | sha; }
# nodes_hash FILE: FILE holds messages of 65 bytes, each 0x01 || left || right, one after the
# other in hex; prints the SHA-256 of each, one a line, in order: all of them in one openssl
# process (one file each, cut from one binary written by one printf)
nodes_hash() {
	local d=$TMP/nodes h
	rm -rf "$d" && mkdir "$d" || return 1
	printf '%b' "$(sed 's/../\\x&/g' "$1")" >"$d/all"
	(cd "$d" && split -b 65 -a 7 -d all m. && rm all && openssl dgst -sha256 -r m.*) >"$d.out"
	while IFS= read -r h; do echo "${h:0:64}"; done <"$d.out"
}
# The canonical form (docs/audit.md "Canonical form"), with jq alone: each line must be byte
# for byte the record serialized again by the writer's rules from what jq parsed: fields in
# the canonical order, each once (jq keeps one of two repeated keys, so a repeated key
# changes the bytes), no whitespace, the writer's string escapes and numbers. Prints
# "LINE reason" for each line that is not.
CANON_JQ='
def order: ["seq","prev","time","actor","manual","action","change","host","link","secy","profile",
	"result","ops","writes","error","detail","key_ids","kcv","key_state","approvals"];
def hexd: "0123456789abcdef"[(./16|floor):(./16|floor)+1] + "0123456789abcdef"[(.%16):(.%16)+1];
def s: if type != "string" then error("not a string")
	elif test("[\u0000-\u001f\u007f\"\\\\]") | not then "\"" + . + "\""
	else "\"" + (explode | map(if . == 34 then "\\\"" elif . == 92 then "\\\\"
		elif . == 10 then "\\n" elif . == 9 then "\\t" elif . == 13 then "\\r"
		elif . < 32 or . == 127 then "\\u00" + hexd else [.] | implode end) | join("")) + "\"" end;
def n: if type == "number" and . >= 0 and . == floor then tostring else error("not a count") end;
def actor: if has("cert") then "{\"cert\":" + (.cert | s) + "}"
	else "{\"user\":" + (if .user == null then "null" else .user | s end) + ",\"uid\":" + (.uid | n) + "}" end;
def profile: "{\"name\":" + (.name | s) + ",\"version\":" + (.version | n)
	+ (if has("sha256") then ",\"sha256\":" + (.sha256 | s) else "" end) + "}";
def value($k): if $k == "actor" then actor elif $k == "profile" then profile
	elif $k == "manual" then (if . == true then "true" else error("manual is true or absent") end)
	elif $k == "seq" or $k == "ops" or $k == "writes" then n
	elif $k == "key_ids" or $k == "kcv" or $k == "approvals" then "[" + (map(s) | join(",")) + "]" else s end;
def canon: "{" + ([order[] as $k | select(has($k)) | "\"\($k)\":" + (.[$k] | value($k))] | join(",")) + "}";
def repeated($l): [order[] as $k | select(($l | [match("\"\($k)\":"; "g")] | length) > 1) | $k];
. as $l | input_line_number as $i | (try fromjson catch null) as $o |
if ($o | type) != "object" then "\($i) is not a JSON object"
else ($o | keys_unsorted) as $ks | ($ks - order) as $extra | [order[] as $k | select($ks | index($k)) | $k] as $want |
	(try ($o | canon) catch "") as $c |
	if $c == $l then empty
	elif ($extra | length) > 0 then "\($i) has fields that are not record fields: \($extra | join(","))"
	elif ($ks != $want) then "\($i) has its keys out of the canonical order (\($ks | join(",")))"
	elif (repeated($l) | length) > 0 then "\($i) repeats the key \(repeated($l) | join(","))"
	elif (["seq","prev","time","actor","action","result"] - $ks | length) > 0 then
		"\($i) lacks \(["seq","prev","time","actor","action","result"] - $ks | join(","))"
	else "\($i) is not in canonical form (spacing, escapes, numbers or field types)" end
end'
# range_nodes SIZE LO HI: how many nodes the range proof of leaves LO..HI of a tree of SIZE
# leaves holds (per level: the left neighbour when LO is a right child, the right neighbour
# when HI is a left child that has one)
range_nodes() {
	local w=$1 lo=$2 hi=$3 c=0
	for (( ; w > 1; w = (w + 1) >> 1, lo >>= 1, hi >>= 1)); do
		((lo & 1)) && c=$((c + 1))
		(((hi & 1) == 0 && hi + 1 < w)) && c=$((c + 1))
	done
	echo $c
}
# range_root SIZE LO HI: the root (hex) of a tree of SIZE leaves from the hashes of leaves LO..HI
# (the array CUR) and the range proof's nodes (the array NODES, every one used): level by
# level up, each level's hashes SHA-256(0x01 || left || right) in one openssl process.
# Prints nothing when the nodes do not fit the range.
range_root() {
	local w=$1 lo=$2 hi=$3 u=0 i last msgs
	local -a NEW=()
	printf '%s\n' "${CUR[@]}" -- "${NODES[@]}" >"$TMP/range.in"
	if batch range "$TMP/range.in" "$TMP/range.out" "$w" "$lo" "$hi"; then
		read -r last <"$TMP/range.out" && echo "$last"
		return 0
	fi
	for (( ; w > 1; w = (w + 1) >> 1, lo >>= 1, hi >>= 1)); do
		if ((lo & 1)); then
			[ $u -lt ${#NODES[@]} ] || return 1
			CUR=("${NODES[u]}" "${CUR[@]}") u=$((u + 1)) lo=$((lo - 1))
		fi
		if (((hi & 1) == 0 && hi + 1 < w)); then
			[ $u -lt ${#NODES[@]} ] || return 1
			CUR+=("${NODES[u]}") u=$((u + 1)) hi=$((hi + 1))
		fi
		msgs=
		for ((i = 0; i + 1 < ${#CUR[@]}; i += 2)); do msgs+=01${CUR[i]}${CUR[i + 1]}; done
		last=
		((${#CUR[@]} % 2)) && last=${CUR[-1]} # the last node of the level, alone: up as it is
		NEW=()
		if [ -n "$msgs" ]; then
			printf '%s' "$msgs" >"$TMP/msgs"
			mapfile -t NEW < <(nodes_hash "$TMP/msgs")
		fi
		[ -n "$last" ] && NEW+=("$last")
		CUR=("${NEW[@]}")
	done
	[ $u = ${#NODES[@]} ] && [ ${#CUR[@]} = 1 ] && echo "${CUR[0]}"
}
# check_window CPSIZE ROOTHEX: the slice against the manifest and audit/proofs.json. Leaves
# RECSHA (seq -> SHA-256 of the record's line) for the statements.
declare -A RECSHA=()
check_window() {
	local cpsize=$1 roothex=$2 first last want n=0 line seq wbad=0 pbad=0 i l k lo hi got need z before=
	local -a LEAF=() CUR=() SEQ=() PREV=() NODES=() DIG=()
	first=$MF_FIRST last=$MF_LAST want=$MF_RECORDS
	[[ $first =~ ^[0-9]+$ && $last =~ ^[0-9]+$ && $want =~ ^[0-9]+$ ]] || { bad "audit: the signed manifest names no window"; return; }
	[ -f "$SLICE" ] && [ -f "$PROOFS" ] || { bad "audit: $SLICE or $PROOFS is missing"; return; }
	# canonical records, with jq alone
	jq -R -r "$CANON_JQ" "$SLICE" >"$TMP/canon" 2>&1 || echo "0 cannot be read by jq" >>"$TMP/canon"
	if [ -s "$TMP/canon" ]; then
		while IFS= read -r l; do bad "audit: $SLICE:${l%% *} ${l#* } (non-canonical record)"; done < <(head -5 "$TMP/canon")
		wbad=1
	fi
	# the records: their seq and prev; each line's leaf hash SHA-256(0x00 || line) and its
	# own SHA-256 (the statements' subject digest): all in the one python3 helper, or else
	# in one openssl process over a file per line
	local files=1
	batch leaves /dev/null "$TMP/leaves.out" "$SLICE" && files=0
	[ $files = 0 ] || { rm -rf "$TMP/leaves" && mkdir "$TMP/leaves"; }
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		if [[ ! $line =~ ^\{\"seq\":([0-9]+),\"prev\":\"([0-9a-f]{64})\", ]]; then
			bad "audit: $SLICE:$n is not a record"; wbad=1; SEQ+=(0) PREV+=(x)
		else
			SEQ+=("${BASH_REMATCH[1]}") PREV+=("${BASH_REMATCH[2]}")
		fi
		[ $files = 1 ] || continue
		printf -v k '%08d' "$n"
		printf '\0%s' "$line" >"$TMP/leaves/l.$k"
		printf '%s' "$line" >"$TMP/leaves/r.$k"
	done <"$SLICE"
	if [ "$n" -gt 0 ] && [ $files = 0 ]; then
		while read -r l k; do LEAF+=("$l") DIG+=("$k"); done <"$TMP/leaves.out"
		[ ${#LEAF[@]} = "$n" ] || { bad "audit: $SLICE: $n lines but ${#LEAF[@]} hashes (a NUL byte in a record?)"; wbad=1; }
		for ((i = 0; i < n; i++)); do RECSHA[${SEQ[i]}]=${DIG[i]:-x}; done
	elif [ "$n" -gt 0 ]; then
		mapfile -t DIG < <(cd "$TMP/leaves" && openssl dgst -sha256 -r l.* r.* | cut -c1-64)
		LEAF=("${DIG[@]:0:n}")
		for ((i = 0; i < n; i++)); do RECSHA[${SEQ[i]}]=${DIG[n + i]}; done
	fi
	[ "$n" = "$want" ] || { bad "audit: $SLICE has $n records, the signed manifest says $want (dropped or added)"; wbad=1; }
	[ "$PF_SPAN" = "$first $last $cpsize" ] ||
		{ bad "audit: $PROOFS is not the proof of the window ($first..$last) against the checkpoint ($cpsize records)"; wbad=1; }
	for ((i = 0; i < n; i++)); do
		seq=${SEQ[i]}
		if [ "$seq" -gt "$cpsize" ]; then
			bad "audit: $SLICE:$((i + 1)) (seq $seq) is beyond the checkpoint, which covers $cpsize records"; wbad=1
		fi
		if [ "$seq" != $((first + i)) ]; then
			bad "audit: $SLICE:$((i + 1)) has seq $seq, expected $((first + i)) (the window must be consecutive: dropped, added or reordered)"; wbad=1
		fi
		if [ $i -gt 0 ] && [ "${PREV[i]}" != "${LEAF[i - 1]}" ]; then
			bad "audit: $SLICE:$((i + 1)) (seq $seq): prev is not the hash of the record before (modified, dropped or reordered)"; wbad=1
		fi
	done
	[ $wbad = 0 ] && ok "audit: $SLICE: $n canonical records, seq $first to $last, each chained to the one before"
	[ "$n" -gt 0 ] && [ "$n" = "$want" ] && [ "$first" -ge 1 ] && [ "$last" = $((first + n - 1)) ] && [ "$last" -le "$cpsize" ] || {
		[ "$n" = 0 ] && [ "$want" = 0 ] && [ "$PF_RANGE" = null ] && return
		bad "audit: no range proof can hold for this window ($n records, seq $first..$last, checkpoint $cpsize)"; return
	}
	# the range: from the leaf the first record's prev names (seq - 2) to the last record
	if [ "$first" -gt 1 ]; then
		lo=$((first - 2)) CUR=("${PREV[0]}" "${LEAF[@]}")
	else
		lo=0 CUR=("${LEAF[@]}")
		printf -v z '0%.0s' {1..64}
		[ "${PREV[0]}" = "$z" ] || { bad "audit: the first record of the log has a prev"; pbad=1; }
	fi
	hi=$((last - 1))
	# the nodes (PF_NODELIST, read with the proofs' other values) count only when the proof's
	# first_index and last_index, numbers, are lo and hi (PF_RANGE_IDX: they are, or it fails here)
	read -r -a NODES <<<"$PF_NODELIST"
	if [ "$PF_RANGE_IDX" != "$lo $hi" ]; then
		bad "audit: $PROOFS proves leaves ${PF_RANGE_IDX/ /..}, not $lo..$hi (the window and the leaf before it)"; return
	fi
	need=$(range_nodes "$cpsize" "$lo" "$hi")
	got=$PF_NODES
	if [ "${#NODES[@]}" != "$got" ]; then
		bad "audit: $PROOFS: a range proof node is not a SHA-256 in hex"; return
	elif [ "$got" != "$need" ]; then
		bad "audit: $PROOFS holds $got range proof nodes, the proof of leaves $lo..$hi of $cpsize needs $need (added or dropped)"; return
	fi
	got=$(range_root "$cpsize" "$lo" "$hi")
	if [ "$got" = "$roothex" ] && [ $pbad = 0 ]; then
		[ "$first" -gt 1 ] && before=" and the leaf before it"
		ok "audit: the window's $n records$before with the range proof's $need nodes give the checkpoint's root (every record included, in place)"
	elif [ "$got" != "$roothex" ]; then
		bad "audit: the window's records and the range proof do not give the checkpoint's root (a record or a proof node changed, or the window is not at its place in the log)"
	fi
}
# consistency_ok M N OLDHEX NEWHEX PATHHEX...: RFC 9162 2.1.4.2: 0 when the path proves the
# tree of M leaves with root OLDHEX the start of the tree of N leaves with root NEWHEX. Every
# hash must be 64 lowercase hex digits (they reach printf through hex2bin).
consistency_ok() {
	local m=$1 n=$2 old=$3 new=$4 fr sr fn sn i=0 x
	shift 4
	local p=("$@")
	[[ $m =~ ^[1-9][0-9]{0,17}$ && $n =~ ^[1-9][0-9]{0,17}$ ]] && [ "$m" -le "$n" ] || return 1
	for x in "$old" "$new" "${p[@]}"; do [[ $x =~ ^[0-9a-f]{64}$ ]] || return 1; done
	[ "$m" = "$n" ] && { [ ${#p[@]} = 0 ] && [ "$old" = "$new" ]; return; }
	[ ${#p[@]} -gt 0 ] || return 1
	if (((m & (m - 1)) == 0)); then fr=$old; else fr=${p[0]}; i=1; fi
	sr=$fr fn=$((m - 1)) sn=$((n - 1))
	while ((fn & 1)); do fn=$((fn >> 1)) sn=$((sn >> 1)); done
	for (( ; i < ${#p[@]}; i++)); do
		[ $sn = 0 ] && return 1
		if (((fn & 1) || fn == sn)); then
			fr=$(node "${p[i]}" "$fr") sr=$(node "${p[i]}" "$sr")
			while ! ((fn & 1)) && [ $fn != 0 ]; do fn=$((fn >> 1)) sn=$((sn >> 1)); done
		else
			sr=$(node "$sr" "${p[i]}")
		fi
		fn=$((fn >> 1)) sn=$((sn >> 1))
	done
	[ $sn = 0 ] && [ "$fr" = "$old" ] && [ "$sr" = "$new" ]
}
# consistency_check M N OLDHEX NEWHEX PATHHEX...: consistency_ok, in the python3 helper when it
# runs (the same steps), else in bash
consistency_check() {
	local r
	printf '%s\n' "${@:3}" >"$TMP/cons.in"
	batch consistency "$TMP/cons.in" "$TMP/cons.out" "$1" "$2" && read -r r <"$TMP/cons.out" &&
		case $r in consistent) return 0 ;; inconsistent) return 1 ;; esac
	consistency_ok "$@"
}
# check_whole_log CPSIZE TSIZE: with --whole-log, the chain of audit/log.jsonl and its roots at
# the checkpoint's size (must be the checkpoint's) and the trusted checkpoint's (in WHOLE_TROOT)
WHOLE_TROOT=
check_whole_log() {
	local cpsize=$1 tsize=$2 expect=1 prevhex cbad=0 n=0 line seq prev leaf cproot=
	local stack=() sizes=()
	printf -v prevhex '0%.0s' {1..64}
	push() { # RFC 6962 compact range: merge equal-size subtrees
		local h=$1 s=1
		while [ ${#sizes[@]} -gt 0 ] && [ "${sizes[-1]}" -eq $s ]; do
			h=$({ printf '\1'; hex2bin "${stack[-1]}"; hex2bin "$h"; } | sha)
			unset 'stack[-1]' 'sizes[-1]'
			s=$((s * 2))
		done
		stack+=("$h")
		sizes+=("$s")
	}
	root() { # the root of the records so far, base64
		local i h
		h=${stack[-1]}
		for ((i = ${#stack[@]} - 2; i >= 0; i--)); do
			h=$({ printf '\1'; hex2bin "${stack[i]}"; hex2bin "$h"; } | sha)
		done
		hex2bin "$h" | openssl base64 -A
	}
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		if [[ ! $line =~ ^\{\"seq\":([0-9]+),\"prev\":\"([0-9a-f]{64})\", ]]; then
			bad "audit: $LOG:$n is not a record"; cbad=1; continue
		fi
		seq=${BASH_REMATCH[1]} prev=${BASH_REMATCH[2]}
		[ "$seq" = "$expect" ] || { bad "audit: $LOG:$n has seq $seq, expected $expect (deleted or reordered)"; cbad=1; }
		[ "$prev" = "$prevhex" ] || { bad "audit: $LOG:$n: prev does not match the hash of the record before (modified)"; cbad=1; }
		leaf=$({ printf '\0'; printf '%s' "$line"; } | sha)
		push "$leaf"
		prevhex=$leaf expect=$((seq + 1))
		[ "$n" = "$cpsize" ] && cproot=$(root)
		[ "$n" = "$tsize" ] && WHOLE_TROOT=$(root)
	done <"$LOG"
	[ $cbad = 0 ] && ok "audit: $LOG: $n records, each chained to the one before"
	if [ "$cpsize" -gt "$n" ]; then
		bad "audit: the checkpoint covers $cpsize records but $LOG has $n (cut-off tail)"
	elif [ "${CPN[2]:-}" = "$cproot" ]; then # CPN: check_audit_log's
		ok "audit: $LOG: Merkle root of the first $cpsize records matches the checkpoint"
	else
		bad "audit: $LOG: Merkle root of the first $cpsize records does not match the checkpoint"
	fi
}
check_audit_log() {
	local cpsize tsize= akey origin mo roothex= troot troothex p=() CPN TCPN
	note_split "$CP" "$TMP/cp" || { bad "audit: $CP is not a signed note"; return; }
	note_text "$TMP/cp" CPN
	cpsize=${CPN[1]:-}
	[[ $cpsize =~ ^[1-9][0-9]*$ ]] || { bad "audit: the checkpoint has no size"; return; }
	[ ${#CPN[@]} -lt 3 ] || { b64hex "${CPN[2]}"$'\n'; roothex=$HEX; }
	if [ -n "$TRUSTED_CP" ]; then
		note_split "$TRUSTED_CP" "$TMP/tcp" || { bad "audit: the trusted checkpoint $TRUSTED_CP is not a signed note"; return; }
		note_text "$TMP/tcp" TCPN
		tsize=${TCPN[1]:-}
		[[ $tsize =~ ^[1-9][0-9]*$ ]] || { bad "audit: the trusted checkpoint has no size"; return; }
	fi
	# the audit key: pinned, or the bundle's own when the trusted checkpoint's signature
	# authenticates it (or, with --self-consistency-only, the bundle's own unchecked)
	akey=$AUDIT_PUB
	if [ -z "$akey" ]; then
		akey=$PWD/audit/audit.pub
		if [ -n "$TRUSTED_CP" ]; then
			if note_verify "$TMP/tcp" "$akey"; then
				ok "audit: the bundle's audit key signed your trusted checkpoint"
			else
				bad "audit: your trusted checkpoint is not signed by the bundle's audit key"
			fi
		fi
	elif [ -n "$TRUSTED_CP" ]; then
		note_verify "$TMP/tcp" "$akey" && ok "audit: your trusted checkpoint is signed by $akey" ||
			bad "audit: your trusted checkpoint is not signed by $akey"
	fi
	if note_verify "$TMP/cp" "$akey"; then
		ok "audit: the checkpoint's signature by $akey verifies"
	else
		bad "audit: the checkpoint is not signed by $akey"
	fi
	# the values check_window reads from the proofs too
	scalars "$PROOFS" PF_ROOT='.root' PF_SPAN='"\(.first_seq) \(.last_seq) \(.tree_size)"' \
		PF_RANGE='.range' PF_RANGE_IDX='.range | "\(.first_index) \(.last_index)"' PF_NODES='.range.nodes | length' \
		PF_NODELIST='.range | select(type == "object" and (.first_index | type) == "number"
			and (.last_index | type) == "number" and (.nodes | type) == "array"
			and all(.nodes[]; type == "string" and test("^[0-9a-f]{64}$"))) | .nodes | join(" ")'
	# the manifest names the root in hex, as fabricctl prints it (the note holds it in base64)
	if [[ $roothex =~ ^[0-9a-f]{64}$ ]] && [ "$MF_CHECKPOINT" = "$cpsize $roothex" ] &&
		[ "$PF_ROOT" = "$roothex" ]; then
		ok "audit: the checkpoint is the one the signed manifest names: $cpsize records, root $roothex"
	else
		bad "audit: the checkpoint is not the one the signed manifest names"
	fi
	origin=${CPN[0]:-}
	mo=$MF_ORIGIN
	if [ -n "$mo" ] && [ "$mo" = "$origin" ]; then
		ok "audit: the checkpoint's origin '$origin' is the one the signed manifest records"
	else
		bad "audit: the checkpoint's origin '$origin' is not the one the signed manifest records ('$mo')"
	fi
	check_window "$cpsize" "$roothex"
	if [ "$MF_WHOLE" = true ]; then
		check_whole_log "$cpsize" "${tsize:-0}"
	elif [ -e "$LOG" ]; then
		bad "audit: $LOG is in the bundle but the signed manifest says no whole log"
	fi
	[ -n "$TRUSTED_CP" ] || return
	troot=${TCPN[2]:-}
	if [ "${TCPN[0]:-}" != "$origin" ]; then
		bad "audit: your trusted checkpoint is of another log (origin '${TCPN[0]:-}')"
	elif [ "$tsize" -gt "$cpsize" ]; then
		bad "audit: your trusted checkpoint covers $tsize records, the bundle's checkpoint $cpsize (records removed)"
	elif [ "$tsize" = "$cpsize" ]; then
		[ "$troot" = "${CPN[2]:-}" ] && ok "audit: the first $tsize records are the ones your trusted checkpoint covers" ||
			bad "audit: the first $tsize records differ from the ones your trusted checkpoint covers (history rewritten)"
	elif [ -n "$WHOLE_TROOT" ]; then
		[ "$troot" = "$WHOLE_TROOT" ] && ok "audit: the first $tsize records of $LOG are the ones your trusted checkpoint covers" ||
			bad "audit: the first $tsize records differ from the ones your trusted checkpoint covers (history rewritten)"
	else
		# the proof from the trusted size: its old root must be the trusted checkpoint's, and it
		# must lead from that root to the bundle checkpoint's (roothex), never to a root of its own
		mapfile -t p < <(jq -r --argjson m "$tsize" '[.consistency[]? | select(type == "object" and .old_size == $m)][0]
			| select(type == "object" and (.old_root | type) == "string" and (.path | type) == "array"
			and all(.path[]; type == "string")) | .old_root, .path[]' "$PROOFS" 2>/dev/null)
		b64hex "$troot"
		troothex=$HEX
		if [ ${#p[@]} = 0 ]; then
			bad "audit: the bundle proves nothing about your trusted checkpoint's $tsize records (build it with --consistency-from $tsize or --whole-log)"
		elif [ "${p[0]}" = "$troothex" ] && consistency_check "$tsize" "$cpsize" "$troothex" "$roothex" "${p[@]:1}"; then
			ok "audit: the checkpoint is consistent with your trusted checkpoint ($tsize records; RFC 9162 consistency proof)"
		else
			bad "audit: the checkpoint is not consistent with your trusted checkpoint (history rewritten)"
		fi
	fi
}
check_audit_log

# --- 4. in-toto statements: one DSSE envelope a line, signed by every signer ------------------
# In a few processes whatever their number: one jq pass reads every envelope (its shape, type,
# payload, the signature of each pinned key as hex, the statement and its subjects), a second
# writes each PAE = "DSSEv1" SP len(type) SP type SP len(payload) SP payload (lengths in bytes)
# one a line, and one xargs pass per pinned key runs openssl pkeyutl -verify on each. A payload
# must be base64 of one line of UTF-8 (jq decodes it and encodes it again to the same text),
# so the PAE bytes are exact.
ATT=$MF_ATT want=$MF_STATEMENTS
ENV_JQ='
def hx: "0123456789abcdef"[(./16|floor):(./16|floor)+1] + "0123456789abcdef"[(.%16):(.%16)+1];
def sighex: if type == "string" and test("^[A-Za-z0-9+/]{86}==$") then
	(.[0:86] + "AA") | explode | map(if . >= 97 then . - 71 elif . >= 65 then . - 65
		elif . >= 48 then . + 4 elif . == 43 then 62 else 63 end) | . as $v
	| [range(0; 88; 4) | $v[.:.+4] | (.[0] * 262144 + .[1] * 4096 + .[2] * 64 + .[3]) as $n
		| ($n / 65536 | floor), ($n / 256 | floor) % 256, $n % 256] | .[0:64] | map(hx) | join("")
	else "" end;
def shape: type == "object" and (.payloadType | type) == "string" and (.payload | type) == "string"
	and (.signatures | type) == "array"
	and all(.signatures[]; type == "object" and (.keyid | type) == "string" and (.sig | type) == "string");
def statement: try fromjson catch null | select(type == "object" and ._type == "https://in-toto.io/Statement/v1"
	and (.predicateType | type) == "string" and (.subject | type) == "array" and (.subject | length) > 0
	and all(.subject[]; type == "object" and (.name | type) == "string" and (.digest.sha256 | type) == "string"));
. as $l | input_line_number as $k | (try fromjson catch null) as $e |
if ($e | shape | not) then ["E", $k, "s", "not a DSSE envelope"] | @tsv
else ($e.payload) as $p | ($p | try @base64d catch null) as $d0 |
	(if $d0 != null and ($d0 | @base64) == $p then $d0 else null end) as $d |
	(if $e.payloadType != $type then "payloadType \u0027\($e.payloadType)\u0027, expected \u0027\($type)\u0027"
	elif $d == null then "the payload is not base64 of UTF-8 text"
	elif ($d | statement) == null then "holds no in-toto v1 statement" else "" end) as $why |
	(["E", $k, "s" + ([$ids[] as $i | [$e.signatures[] | select(.keyid == $i)] |
		if length == 1 then .[0].sig | sighex else "n\(length)" end] | join(",")), $why] | @tsv),
	(if $why == "" then $d | statement | .subject[] | ["S", $k, "d" + .digest.sha256, "n" + .name] | @tsv
	else empty end)
end'
# one PAE a line, for printf %b: its backslashes, newlines and NULs written \\, \n and \0000
PAE_JQ='. as $l | (try fromjson catch null) as $e | ($e.payload | strings) as $p |
	(try ($p | @base64d) catch "") as $d |
	if ($d | @base64) == $p and $e.payloadType == $type
	then "DSSEv1 \($type | utf8bytelength) \($type) \($d | utf8bytelength) \($d)"
		| gsub("\\\\"; "\\\\") | gsub("\n"; "\\n") | gsub("\u0000"; "\\0000") else "-" end'
# nlines FILE: NL, the number of lines of FILE as awk counts them (the helper, else awk)
nlines() {
	batch lines /dev/null "$TMP/nl" "$1" && read -r NL <"$TMP/nl" && return
	NL=$(awk 'END { print NR }' "$1")
}
sbad=0 k=0 last=0
ST=$TMP/st
mkdir "$ST"
declare -A EWHY=() NREC=() STOK=()
GOOD=()
if [ ! -f "$ATT" ]; then
	bad "in-toto: $ATT is missing"; sbad=1
else
	for i in "${!SIGNER_KEYS[@]}"; do : >"$ST/s$i.hex"; done
	# ENV_JQ's lines (E or S first) and PAE_JQ's (P first) in one pass, each as its own pass
	# gives it (an error in ENV_JQ leaves the line's PAE, as a pass of its own would)
	jq -R -r --arg type "$INTOTO_TYPE" --argjson ids "$IDS" "(try ($ENV_JQ) catch empty), (\"P\" + ($PAE_JQ))" \
		"$ATT" >"$ST/both" 2>/dev/null
	while IFS= read -r l; do
		if [[ $l == P* ]]; then printf '%s\n' "${l#P}" >&3; else printf '%s\n' "$l"; fi
	done <"$ST/both" >"$ST/env.tsv" 3>"$ST/pae"
	while IFS=$'\t' read -r tag k sigs why; do
		[ "$tag" = E ] || continue
		EWHY[$k]=$why
		[ -n "$why" ] && continue
		STOK[$k]=1
		IFS=, read -r -a SIG <<<"${sigs#s}"
		for i in "${!SIGNER_KEYS[@]}"; do
			if [[ ! ${SIG[i]:-} =~ ^[0-9a-f]{128}$ ]]; then
				EWHY[$k]+="${EWHY[$k]:+$'\n'}${SIG[i]#n} signatures by ${SIGNER_KEYS[i]} (key id ${SIGNER_IDS[i]}), expected 1"
				printf '%0128d' 0 >>"$ST/s$i.hex" # a place holder, never checked
			else
				printf '%s' "${SIG[i]}" >>"$ST/s$i.hex"
				printf '%07d\n' ${#GOOD[@]} >>"$ST/k$i"
			fi
		done
		GOOD+=("$k")
	done <"$ST/env.tsv"
	nlines "$ATT"
	k=$NL
	# the PAE of each envelope ($ST/pae, written above), one a line
	printf '%s\n' "${GOOD[@]}" >"$ST/good"
	# one file per PAE, for the openssl tool (the python3 helper reads them from $ST/pae)
	pae_files() {
		local j=0 n=0 line f
		while IFS= read -r line; do
			n=$((n + 1))
			[ "${GOOD[j]:-}" = "$n" ] || continue
			printf -v f '%07d' "$j"
			printf '%b' "$line" >"$ST/p.$f"
			j=$((j + 1))
		done <"$ST/pae" # a file, not a pipe: bash reads a pipe a byte at a time
		[ "$j" = ${#GOOD[@]} ] || { bad "in-toto: the envelopes could not be read again ($j of ${#GOOD[@]})"; sbad=1; GOOD=(); }
	}
	nlines "$ST/pae"
	[ "$NL" = "$k" ] || { bad "in-toto: the envelopes could not be read again"; sbad=1; GOOD=(); }
	PAR= # how many openssl processes at once, where the helper cannot check the signatures
	for i in "${!SIGNER_KEYS[@]}"; do
		[ -s "$ST/k$i" ] || continue
		declare -A VOK=()
		hex2bin "${SIGNER_RAW[i]}" >"$ST/pub$i"
		if batch ed25519 /dev/null "$ST/v$i" "$ST/pub$i" "$ST/s$i.hex" "$ST/k$i" "$ST/pae" "$ST/good"; then
			while IFS= read -r f; do VOK[$f]=1; done <"$ST/v$i"
		else
			[ "$BATCH" = 1 ] && [ $i = 0 ] && echo "    (no python3 with OpenSSL's libcrypto 3 here: one openssl process per signature)"
			[ -e "$ST/p.0000000" ] || pae_files
			PAR=${PAR:-$(nproc 2>/dev/null || echo 2)}
			(cd "$ST" && printf '%b' "$(sed 's/../\\x&/g' "s$i.hex")" | split -b 64 -a 7 -d - "g$i." &&
				xargs -P "$PAR" -I{} openssl pkeyutl -verify -pubin -inkey "${SIGNER_KEYS[i]}" -rawin \
					-in p.{} -sigfile "g$i.{}" -out "r$i.{}" <"k$i" >/dev/null 2>&1)
			while IFS= read -r f; do VOK[${f#r$i.}]=1; done < <(cd "$ST" && grep -l -x 'Signature Verified Successfully' r$i.* 2>/dev/null)
		fi
		while IFS= read -r f; do
			[ -n "${VOK[$f]:-}" ] || EWHY[${GOOD[10#$f]}]+="${EWHY[${GOOD[10#$f]}]:+$'\n'}the signature by ${SIGNER_KEYS[i]} (key id ${SIGNER_IDS[i]}) does NOT verify"
		done <"$ST/k$i"
		unset VOK
	done
	for ((n = 1; n <= k; n++)); do
		[ -z "${EWHY[$n]-x}" ] && continue
		sbad=1
		if [ -z "${EWHY[$n]+x}" ]; then bad "in-toto: envelope $n: not a DSSE envelope"
		elif [ "${EWHY[$n]}" = "holds no in-toto v1 statement" ]; then bad "in-toto: envelope $n does not hold an in-toto v1 statement"
		else while IFS= read -r l; do bad "in-toto: envelope $n: $l"; done <<<"${EWHY[$n]}"; fi
	done
	# the subjects: exactly one record of the slice per statement (in increasing order) with
	# its line's digest, and files of the bundle with theirs
	while IFS=$'\t' read -r tag n digest name; do
		[ "$tag" = S ] || continue
		digest=${digest#d} name=${name#n}
		case $name in
		audit/slice.jsonl\#seq=*)
			s=${name#*=}
			NREC[$n]=$((${NREC[$n]:-0} + 1))
			if [[ ! $s =~ ^[1-9][0-9]*$ ]]; then bad "in-toto: envelope $n: subject '$name'"; sbad=1; continue; fi
			if [ -z "${RECSHA[$s]:-}" ]; then bad "in-toto: envelope $n: record $s is not in the slice"; sbad=1
			elif [ "${RECSHA[$s]}" != "$digest" ]; then bad "in-toto: envelope $n: subject $name does not match the audit record"; sbad=1; fi
			[ "$s" -gt "$last" ] || { bad "in-toto: envelope $n: record $s comes after record $last (reordered or repeated)"; sbad=1; }
			last=$s ;;
		profile:*) ;; # a profile the bundle does not carry: its digest is in the record
		*)
			[ -n "${FSHA[$name]:-}" ] && [ "${FSHA[$name]}" = "$digest" ] ||
				{ bad "in-toto: envelope $n: subject $name is not a file of the bundle with that digest"; sbad=1; } ;;
		esac
	done <"$ST/env.tsv"
	for ((n = 1; n <= k; n++)); do
		[ -n "${STOK[$n]:-}" ] || continue
		[ "${NREC[$n]:-0}" = 1 ] || { bad "in-toto: envelope $n names ${NREC[$n]:-0} audit records, expected 1"; sbad=1; }
	done
fi
[ "$k" = "$want" ] || { bad "in-toto: $k envelopes, the signed manifest says $want (dropped or added)"; sbad=1; }
[ $sbad = 0 ] && ok "in-toto: $k statements in DSSE envelopes, each signed by every signer, subjects match"

# --- 5. no key material: key metadata holds ids and check values only ------------------------
# (the python3 helper when the file is plain JSON, else jq)
kms_nokey() {
	local r
	batch nokey /dev/null "$TMP/kms" keys/kms-metadata.json && read -r r <"$TMP/kms" && { [ "$r" = none ]; return; }
	jq -e '[.. | strings | select(test("^[0-9a-f]{32,}$"))] | length == 0' keys/kms-metadata.json >/dev/null 2>&1
}
if kms_nokey; then
	ok "keys/kms-metadata.json holds no value long enough to be a key"
else
	bad "keys/kms-metadata.json holds a value that could be key material"
fi

# --- 6. packet numbers: no key at a PN twice, as the ledger the audit log anchors says ----------
# The window's sa-ledger records (the tool's; a manual record never takes that action) each name
# a length and SHA-256 of the host's packet-number ledger; pn/sa-ledger must be the longest of
# them and every one a prefix of it (the ledger was only appended to). pn/ranges.json must be
# what jq derives from its lines (PN_JQ: the rules of docs/audit.md), and no two ranges of one
# key, SCI and direction may overlap (PN_OVERLAP_JQ). PNs are decimal strings (XPN's exceed
# what a JSON number holds exactly) compared by length, then text.
PN_DEFS='def lt($a; $b): ($a | length) < ($b | length) or (($a | length) == ($b | length) and $a < $b);
def gk: "\(.dir) \(.sci) \(.keyid) \(.key)";'
PN_JQ=$PN_DEFS'
def ev: [capture("^(?<ev>live|retired) (?<dir>tx|rx) (?<key>[0-9a-f]{32}|-) (?<keyid>[0-9a-f]{32}) (?<sci>0x[0-9a-f]{16}) (?<pn>0|[1-9][0-9]{0,19})$")]
	| .[0] | if . != null and lt("18446744073709551615"; .pn) then null else . end;
def mkrange($e; $first; $next; $fl; $tl): {key: $e.key, keyid: $e.keyid, sci: $e.sci, dir: $e.dir,
	first: $first, next: $next, from_line: $fl, to_line: $tl};
split("\n") as $l |
if $l[0] != "fabricctl-sa-ledger 1" or $l[-1] != "" or ($l | length) < 2 then
	{error: "pn/sa-ledger does not start with its head or does not end with a whole line"}
else reduce range(1; ($l | length) - 1) as $i ({ranges: [], g: {}, error: null};
	($i + 1) as $n | ($l[$i] | ev) as $e |
	if .error != null then .
	elif $e == null then .error = "line \($n) of pn/sa-ledger is not a ledger event"
	else ($e | gk) as $k | (.g[$k] // []) as $idx | . as $s |
		($idx | last) as $li |
		(reduce ($idx[] | $s.ranges[.].next | select(. != null)) as $x ("0"; if lt(.; $x) then $x else . end)) as $reached |
		if $e.ev == "retired" and $li != null and .ranges[$li].next == null then
			.ranges[$li].next = $e.pn | .ranges[$li].to_line = $n
		elif $e.ev == "retired" and ($idx | length) > 0 and (lt($reached; $e.pn) | not) then .
		else .g[$k] = $idx + [.ranges | length] |
			.ranges += [if $e.ev == "retired" then mkrange($e; null; $e.pn; null; $n)
				else mkrange($e; $e.pn; null; $n; null) end] end
	end) | {error, ranges} end'
PN_OVERLAP_JQ=$PN_DEFS'
def show: "[\(.first // "unknown"), \(.next // "unknown"))";
def over($x; $y): (if lt($x.first // "0"; $y.first // "0") then $y.first // "0" else $x.first // "0" end) as $lo |
	if $x.next == null and $y.next == null then true
	elif $x.next == null then lt($lo; $y.next) elif $y.next == null then lt($lo; $x.next)
	else lt($lo; if lt($x.next; $y.next) then $x.next else $y.next end) end;
(group_by([.dir, .sci, .keyid])[] | . as $g | range(0; length) as $i | range($i + 1; length) as $j |
	$g[$i] as $x | $g[$j] as $y | select($x.key == $y.key or $x.key == "-" or $y.key == "-") |
	select(over($x; $y)) |
	"key \(if $x.key == "-" then $y.key else $x.key end) (KEYID \($x.keyid)) SCI \($x.sci) \($x.dir): PN ranges \($x | show) (ledger lines \($x.from_line // "-")-\($x.to_line // "-")) and \($y | show) (lines \($y.from_line // "-")-\($y.to_line // "-")) overlap: a nonce used twice"),
(.[] | select(.first != null and .next != null and lt(.next; .first)) |
	"key \(.key) (KEYID \(.keyid)) SCI \(.sci) \(.dir): PN range \(show) ends before it starts")'
# pn_overlaps FILE LABEL: the overlap findings of the ranges in FILE (a JSON array); 0 when none
pn_overlaps() {
	local l rc=0
	if ! jq -r "$PN_OVERLAP_JQ" "$1" >"$TMP/pn.over" 2>/dev/null; then
		bad "pn: $2 are not ranges of the documented form"
		return 1
	fi
	while IFS= read -r l; do bad "pn: $l ($2)"; rc=1; done <"$TMP/pn.over"
	return $rc
}
check_pn() {
	local an=() a seq b h top=-1 topseq= topb=-1 n pbad=0 line
	declare -A PFX=()
	# MF_PN...: read with the manifest's other values (section 1)
	[ -f "$SLICE" ] || return
	mapfile -t an < <(jq -r 'select(.action == "sa-ledger" and (has("manual") | not)) | "\(.seq) \(.detail)"' "$SLICE" 2>/dev/null)
	if [ "$MF_PN" = null ]; then
		if [ ${#an[@]} -gt 0 ]; then
			bad "pn: the window's audit record ${an[0]%% *} anchors the packet-number ledger, yet the bundle carries none"
		else
			ok "pn: the window holds no sa-ledger record: this bundle shows no packet-number ranges"
		fi
		return
	fi
	if [ "$MF_PN_FILES" != "pn/sa-ledger pn/ranges.json" ] || [ ! -f pn/sa-ledger ] || [ ! -f pn/ranges.json ]; then
		bad "pn: the signed manifest's pn names other files than pn/sa-ledger and pn/ranges.json, or they are missing"
		return
	fi
	[ ${#an[@]} -gt 0 ] || { bad "pn: the bundle carries a ledger no record of its window anchors"; return; }
	for a in "${an[@]}"; do
		if [[ ! $a =~ ^([1-9][0-9]*)\ bytes=(0|[1-9][0-9]{0,18})\ sha256=([0-9a-f]{64})$ ]]; then
			bad "pn: audit record ${a%% *} (sa-ledger) is not an anchor of the ledger: '${a#* }'"
			pbad=1
			continue
		fi
		PFX[${BASH_REMATCH[2]}]=
		[ "${BASH_REMATCH[2]}" -gt "$topb" ] && topb=${BASH_REMATCH[2]} topseq=${BASH_REMATCH[1]}
	done
	[ $pbad = 0 ] || return
	# the digest of each anchored prefix: one python3 pass, else one openssl process each
	printf '%s\n' "${!PFX[@]}" >"$TMP/pn.sizes"
	if ! batch prefixes "$TMP/pn.sizes" "$TMP/pn.pfx" pn/sa-ledger; then
		n=$(size pn/sa-ledger)
		for b in "${!PFX[@]}"; do
			if [ "$b" -le "$n" ]; then
				h=$(head -c "$b" pn/sa-ledger | sha256sum)
				echo "$b ${h%% *}"
			else
				echo "$b -"
			fi
		done >"$TMP/pn.pfx"
	fi
	while read -r b h; do PFX[$b]=$h; done <"$TMP/pn.pfx"
	for a in "${an[@]}"; do
		[[ $a =~ ^([0-9]+)\ bytes=([0-9]+)\ sha256=([0-9a-f]{64})$ ]]
		if [ "${PFX[${BASH_REMATCH[2]}]:-}" != "${BASH_REMATCH[3]}" ]; then
			bad "pn: pn/sa-ledger is not the ledger audit record ${BASH_REMATCH[1]} anchors (its first ${BASH_REMATCH[2]} bytes, sha256 ${BASH_REMATCH[3]}): changed after it was recorded"
			pbad=1
		fi
	done
	if [ "$(size pn/sa-ledger)" != "$topb" ] || [ "$MF_PN_SEQ" != "$topseq" ] || [ "$MF_PN_BYTES" != "$topb" ] ||
		[ "$MF_PN_SHA" != "$(sha <pn/sa-ledger)" ]; then
		bad "pn: pn/sa-ledger is not the ledger the window's longest anchor (record $topseq, $topb bytes) names, or the manifest says otherwise"
		pbad=1
	fi
	[ $pbad = 0 ] && ok "pn: pn/sa-ledger ($topb bytes) is the packet-number ledger the window's ${#an[@]} sa-ledger records anchor (the longest: record $topseq)"
	# the ranges: derived again from the ledger's lines, compared, and checked for overlaps
	jq -R -s "$PN_JQ" pn/sa-ledger >"$TMP/pn.derived" 2>/dev/null || echo '{"error":"jq cannot read pn/sa-ledger"}' >"$TMP/pn.derived"
	if [ "$(jq -r '.error // empty' "$TMP/pn.derived")" != "" ]; then
		bad "pn: $(jq -r .error "$TMP/pn.derived")"
		return
	fi
	jq '.ranges' "$TMP/pn.derived" >"$TMP/pn.mine"
	jq '.ranges' pn/ranges.json >"$TMP/pn.theirs" 2>/dev/null || echo null >"$TMP/pn.theirs"
	if [ "$(jq -n --slurpfile a "$TMP/pn.mine" --slurpfile b "$TMP/pn.theirs" '$a == $b')" = true ]; then
		n=$(jq length "$TMP/pn.mine")
		ok "pn: pn/ranges.json is what the ledger's lines give: $n ranges"
		pn_overlaps "$TMP/pn.theirs" "pn/ranges.json" &&
			ok "pn: no two PN ranges of one key, SCI and direction overlap: no nonce used twice, as recorded"
	else
		line=$(jq -n -r --slurpfile a "$TMP/pn.mine" --slurpfile b "$TMP/pn.theirs" \
			'first(range(0; [($a[0] | length), ($b[0] | length? // 0)] | max) as $i | select($a[0][$i] != ($b[0][$i]?)) |
			"range \($i + 1): the ledger gives \($a[0][$i] | tojson), pn/ranges.json says \($b[0][$i]? | tojson)") // "?"' 2>/dev/null)
		bad "pn: pn/ranges.json disagrees with the ledger the audit records anchor: ${line:-not a ranges file}"
		# what the auditor reads, and what the records say: overlaps in either are named
		pn_overlaps "$TMP/pn.theirs" "pn/ranges.json"
		pn_overlaps "$TMP/pn.mine" "as the ledger's lines give them"
	fi
}
check_pn

# --- 7. approvals: who approved each applied profile version, checked with OpenSSH -----------
# Each approval a selected apply or rollback record names ("PRINCIPAL SHA256:KEY sha256:DIGEST",
# docs/approvals.md) must be in approvals/approvals.json with a signature file whose SHA-256 is
# DIGEST, and `ssh-keygen -Y verify` must accept that file as PRINCIPAL's signature, in the
# namespace fabricctl-profile, over the profile file the record names (its SHA-256 the
# record's), with the key the record names, against approvals/allowed_signers at the time of
# the record (-Overify-time: valid-after and valid-before as the host saw them).
check_approvals() {
	local seq psha ap p key hex rest vt prof sig out n=0 abad=0
	local -A SEEN=()
	# MF_APPR, MF_SEL: read with the manifest's other values (section 1)
	[ -f "$SLICE" ] || return
	jq -r --argjson w "${MF_SEL:-null}" 'select(($w.c == null or .change == $w.c)
		and ($w.s == null or (.time != null and .time >= $w.s)) and ($w.u == null or (.time != null and .time <= $w.u))
		and (has("manual") | not)) | . as $r | (.approvals // [])[] |
		"\($r.seq)\t\($r.profile.sha256 // "-")\t\($r.time // "-")\t\(.)"' "$SLICE" >"$TMP/appr.want" 2>/dev/null ||
		{ bad "approvals: the audit window cannot be read for approvals"; return; }
	if [ "$MF_APPR" = null ]; then
		if [ -s "$TMP/appr.want" ]; then
			bad "approvals: audit record $(head -1 "$TMP/appr.want" | cut -f1) names approvals, yet the bundle carries none"
		else
			ok "approvals: no selected record names approvals: this bundle shows none"
		fi
		return
	fi
	if [ "$MF_APPR" != approvals/approvals.json ] || [ ! -f approvals/approvals.json ] || [ ! -f approvals/allowed_signers ] ||
		[ "$(jq -r '.allowed_signers' approvals/approvals.json 2>/dev/null)" != approvals/allowed_signers ] ||
		[ "$(jq -r '.namespace' approvals/approvals.json 2>/dev/null)" != fabricctl-profile ]; then
		bad "approvals: the manifest's approvals names other files than approvals/approvals.json and approvals/allowed_signers, or they are missing"
		return
	fi
	command -v ssh-keygen >/dev/null || { bad "approvals: ssh-keygen (OpenSSH) is needed to check the approvals, and is missing"; return; }
	# what the bundle shows: "SEQ<TAB>PROFILE<TAB>PRINCIPAL KEY sha256:DIGEST<TAB>SIGNATURE"
	jq -r '.records[] | . as $r | .approvals[] | "\($r.seq)\t\($r.profile)\t\(.principal) \(.key) sha256:\(.sha256)\t\(.signature)"' \
		approvals/approvals.json >"$TMP/appr.have" 2>/dev/null || { bad "approvals: approvals/approvals.json is not of the documented form"; return; }
	while IFS=$'\t' read -r seq p ap sig; do SEEN["$seq $ap"]="$p"$'\t'"$sig"; done <"$TMP/appr.have"
	while IFS=$'\t' read -r seq psha vt ap; do
		n=$((n + 1))
		if [ -z "${SEEN["$seq $ap"]+x}" ]; then
			bad "approvals: audit record $seq names the approval '$ap', which approvals/approvals.json does not carry"; abad=1; continue
		fi
		p=${SEEN["$seq $ap"]%%$'\t'*} sig=${SEEN["$seq $ap"]#*$'\t'}
		unset 'SEEN["$seq $ap"]'
		[[ $ap =~ ^(.+)\ (SHA256:[A-Za-z0-9+/]+)\ sha256:([0-9a-f]{64})$ ]] || { bad "approvals: audit record $seq: '$ap' is not an approval"; abad=1; continue; }
		rest=${BASH_REMATCH[1]} key=${BASH_REMATCH[2]} hex=${BASH_REMATCH[3]}
		prof=$(jq -r --arg h "$psha" 'first(.profiles[] | select(.sha256 == $h) | .file | strings) // ""' "$M" 2>/dev/null)
		if [ -z "$prof" ] || [ "$prof" != "$p" ] || ! safe_name "$prof" || [ ! -f "$prof" ] || [ "$(sha <"$prof")" != "$psha" ]; then
			bad "approvals: audit record $seq: the bundle does not carry the profile it names (sha256 $psha) as approvals/approvals.json says"; abad=1; continue
		fi
		if [ "$sig" != "approvals/$hex.sig" ] || [ ! -f "$sig" ]; then
			bad "approvals: audit record $seq: the bundle does not carry the signature of $rest as approvals/$hex.sig"; abad=1; continue
		fi
		# a file with other bytes is named, and still shown to OpenSSH: both findings are said
		[ "$(sha <"$sig")" = "$hex" ] ||
			{ bad "approvals: audit record $seq: the signature of $rest ($sig) is not the file whose SHA-256 the record names (sha256:$hex)"; abad=1; }
		[[ $vt =~ ^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2}) ]] || { bad "approvals: audit record $seq has no time"; abad=1; continue; }
		vt="${BASH_REMATCH[1]}${BASH_REMATCH[2]}${BASH_REMATCH[3]}${BASH_REMATCH[4]}${BASH_REMATCH[5]}${BASH_REMATCH[6]}Z"
		out=$(ssh-keygen -Y verify -n fabricctl-profile -f approvals/allowed_signers -I "$rest" -s "$sig" \
			-O verify-time="$vt" <"$prof" 2>&1)
		if [ $? != 0 ]; then
			bad "approvals: audit record $seq: ssh-keygen -Y verify refuses the signature of $rest over $prof ($sig) against approvals/allowed_signers: $(printf '%s' "$out" | tr '\n' ' ' | head -c 200)"
			abad=1
		elif [[ $out != *" key $key"* ]]; then
			bad "approvals: audit record $seq: $sig is signed by another key than the record's $key: $(printf '%s' "$out" | head -c 200)"
			abad=1
		fi
	done <"$TMP/appr.want"
	for ap in "${!SEEN[@]}"; do bad "approvals: approvals/approvals.json carries '$ap', which no selected record names"; abad=1; done
	[ $abad = 0 ] && ok "approvals: ssh-keygen -Y verify accepts each of the $n approvals the selected records name, with the keys and signature digests they record, against approvals/allowed_signers"
}
check_approvals

if [ $SELF = 1 ]; then
	echo "$NOTHING_PROVEN"
	echo "verify.sh: $pass passed, $fail failed (self-consistency only: proves nothing about who wrote the bundle)"
else
	echo "verify.sh: $pass passed, $fail failed"
fi
[ $fail -eq 0 ]
