// SPDX-License-Identifier: MIT
/*
 * The "pkcs11" key backend: a PKCS#11 token (SoftHSM2 in tests, an HSM in
 * production), module loaded with dlopen + C_GetFunctionList.
 *
 * Reference: id "token=LABEL;object=NAME", version N >= 1. The token is found by
 * its label (never a slot number: SoftHSM renumbers slots when tokens come and go);
 * two tokens with one label are refused. Version N of NAME is two token objects
 * labelled "NAME.vN":
 *   - the SAK: CKO_SECRET_KEY, CKK_AES, CKA_ID "NAME.vN", private, CKA_SENSITIVE,
 *     CKA_EXTRACTABLE (the kernel needs the raw SAK), usable for nothing else
 *     (encrypt, decrypt, sign, wrap, derive all FALSE);
 *   - its life record: CKO_DATA, CKA_APPLICATION "fabricctl-key-state", private,
 *     CKA_VALUE "fabricctl-key 1 state=active activation=..." (PKCS#11 has no key
 *     states and only day-granular dates). A transition writes the new record
 *     before removing the old one.
 * Export: the SAK leaves the token only wrapped (C_WrapKey, CKM_AES_KEY_WRAP, RFC
 * 3394) under a fresh 256-bit session key this process creates for that one call;
 * it is unwrapped into a struct fctl_key and its check value compared in constant
 * time with the token's CKA_CHECK_VALUE. Sensitive means C_GetAttributeValue never
 * returns CKA_VALUE; what a PIN holder can still do is wrap it: docs/kms.md says why
 * that is the trade-off a kernel consumer forces.
 *
 * Configuration: FCTL_PKCS11_MODULE (absolute path, default
 * /usr/lib/softhsm/libsofthsm2.so), FCTL_PKCS11_PIN_FILE (default
 * /etc/fabricctl/pkcs11.pin; owner-only, never argv or the environment).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <p11-kit/pkcs11.h>

#include "kms_int.h"

#define DEFAULT_MODULE "/usr/lib/softhsm/libsofthsm2.so"
#define DEFAULT_PIN_FILE "/etc/fabricctl/pkcs11.pin"
#define STATE_APP "fabricctl-key-state"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *module;
static CK_FUNCTION_LIST_PTR fl;

struct p11 {
	CK_SESSION_HANDLE s;
	bool initialized, finalize, open, logged_in;
	char token[33];
	char label[64]; /* NAME.vN */
};

static const char *rv_name(CK_RV rv)
{
	switch (rv) {
	case CKR_PIN_INCORRECT:
		return "CKR_PIN_INCORRECT";
	case CKR_PIN_LOCKED:
		return "CKR_PIN_LOCKED";
	case CKR_USER_NOT_LOGGED_IN:
		return "CKR_USER_NOT_LOGGED_IN";
	case CKR_TOKEN_NOT_PRESENT:
		return "CKR_TOKEN_NOT_PRESENT";
	case CKR_MECHANISM_INVALID:
		return "CKR_MECHANISM_INVALID";
	case CKR_KEY_UNEXTRACTABLE:
		return "CKR_KEY_UNEXTRACTABLE";
	case CKR_KEY_NOT_WRAPPABLE:
		return "CKR_KEY_NOT_WRAPPABLE";
	case CKR_ATTRIBUTE_SENSITIVE:
		return "CKR_ATTRIBUTE_SENSITIVE";
	case CKR_TEMPLATE_INCONSISTENT:
		return "CKR_TEMPLATE_INCONSISTENT";
	case CKR_ATTRIBUTE_VALUE_INVALID:
		return "CKR_ATTRIBUTE_VALUE_INVALID";
	case CKR_DEVICE_ERROR:
		return "CKR_DEVICE_ERROR";
	case CKR_GENERAL_ERROR:
		return "CKR_GENERAL_ERROR";
	case CKR_HOST_MEMORY:
		return "CKR_HOST_MEMORY";
	default:
		return "CKR_?";
	}
}

/* The one place a CK_RV becomes an errno and a message. */
static int rv_fail(CK_RV rv, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "pkcs11 %s: %s (0x%lx)", what, rv_name(rv), (unsigned long)rv);
	switch (rv) {
	case CKR_PIN_INCORRECT:
	case CKR_PIN_LOCKED:
	case CKR_PIN_EXPIRED:
	case CKR_USER_NOT_LOGGED_IN:
		return -EACCES;
	case CKR_TOKEN_NOT_PRESENT:
	case CKR_SLOT_ID_INVALID:
		return -ENODEV;
	case CKR_MECHANISM_INVALID:
	case CKR_FUNCTION_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case CKR_HOST_MEMORY:
		return -ENOMEM;
	case CKR_KEY_UNEXTRACTABLE:
	case CKR_KEY_NOT_WRAPPABLE:
	case CKR_ATTRIBUTE_SENSITIVE:
		return -EPERM;
	case CKR_ATTRIBUTE_VALUE_INVALID:
	case CKR_TEMPLATE_INCONSISTENT:
	case CKR_TEMPLATE_INCOMPLETE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static int load_module(char *err, size_t errlen)
{
	const char *path = getenv("FCTL_PKCS11_MODULE");
	CK_RV (*get)(CK_FUNCTION_LIST_PTR_PTR);
	CK_RV rv;

	if (fl)
		return 0;
	if (!path || !*path)
		path = DEFAULT_MODULE;
	if (path[0] != '/') {
		snprintf(err, errlen, "FCTL_PKCS11_MODULE '%s' is not an absolute path", path);
		return -EINVAL;
	}
	/* loaded once, never unloaded: modules leave atexit handlers behind */
	module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!module) {
		snprintf(err, errlen, "pkcs11 module '%s' cannot be loaded: %s", path, dlerror());
		return -ENOENT;
	}
	*(void **)&get = dlsym(module, "C_GetFunctionList");
	if (!get) {
		snprintf(err, errlen, "pkcs11 module '%s' has no C_GetFunctionList", path);
		return -ENOENT;
	}
	rv = get(&fl);
	if (rv != CKR_OK || !fl) {
		fl = NULL;
		return rv_fail(rv, "C_GetFunctionList", err, errlen);
	}
	return 0;
}

static void p11_close(struct p11 *p)
{
	if (p->logged_in)
		(void)fl->C_Logout(p->s);
	if (p->open)
		(void)fl->C_CloseSession(p->s);
	if (p->finalize)
		(void)fl->C_Finalize(NULL);
	p->logged_in = p->open = p->finalize = false;
	pthread_mutex_unlock(&lock);
}

static int parse_ref(const struct fctl_keyref *ref, struct p11 *p, char *err, size_t errlen)
{
	char obj[48];

	if (fctl_keys_id_field(ref->id, "token", p->token, sizeof(p->token)) < 0 ||
	    fctl_keys_id_field(ref->id, "object", obj, sizeof(obj)) < 0 ||
	    !fctl_keys_name_ok(obj, 40)) {
		snprintf(err, errlen, "pkcs11 key id '%s' is not \"token=LABEL;object=NAME\" (a "
			 "token label of 1..32 characters, an object name of 1..40 [A-Za-z0-9._-])",
			 ref->id);
		return -EINVAL;
	}
	snprintf(p->label, sizeof(p->label), "%s.v%u", obj, ref->version);
	return 0;
}

/* Locks, initialises the module, finds the token by label, logs in. */
static int p11_open(const struct fctl_keyref *ref, struct p11 *p, char *err, size_t errlen)
{
	CK_C_INITIALIZE_ARGS args = { .flags = CKF_OS_LOCKING_OK };
	CK_SLOT_ID *slots = NULL, slot = 0;
	CK_ULONG n = 0;
	const char *pinfile = getenv("FCTL_PKCS11_PIN_FILE");
	char pin[256];
	int found = 0, r;
	CK_RV rv;

	memset(p, 0, sizeof(*p));
	r = parse_ref(ref, p, err, errlen);
	if (r < 0)
		return r;
	pthread_mutex_lock(&lock);
	r = load_module(err, errlen);
	if (r < 0)
		goto fail;
	rv = fl->C_Initialize(&args);
	if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) {
		r = rv_fail(rv, "C_Initialize", err, errlen);
		goto fail;
	}
	p->finalize = rv == CKR_OK;
	rv = fl->C_GetSlotList(CK_TRUE, NULL, &n);
	if (rv == CKR_OK && n) {
		slots = calloc(n, sizeof(*slots));
		if (!slots) {
			r = -ENOMEM;
			goto fail;
		}
		rv = fl->C_GetSlotList(CK_TRUE, slots, &n);
	}
	if (rv != CKR_OK) {
		r = rv_fail(rv, "C_GetSlotList", err, errlen);
		goto fail;
	}
	for (CK_ULONG i = 0; i < n; i++) {
		CK_TOKEN_INFO ti;
		size_t l = sizeof(ti.label);

		if (fl->C_GetTokenInfo(slots[i], &ti) != CKR_OK)
			continue;
		while (l && ti.label[l - 1] == ' ')
			l--;
		if (l == strlen(p->token) && memcmp(ti.label, p->token, l) == 0) {
			slot = slots[i];
			found++;
		}
	}
	free(slots);
	if (found != 1) {
		if (found)
			snprintf(err, errlen, "pkcs11: %d tokens are labelled '%s'; refusing to "
				 "pick one", found, p->token);
		else
			snprintf(err, errlen, "pkcs11: no token labelled '%s'", p->token);
		r = found ? -ENOTUNIQ : -ENODEV;
		goto fail;
	}
	rv = fl->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &p->s);
	if (rv != CKR_OK) {
		r = rv_fail(rv, "C_OpenSession", err, errlen);
		goto fail;
	}
	p->open = true;
	r = fctl_keys_read_secret_file(pinfile && *pinfile ? pinfile : DEFAULT_PIN_FILE, pin,
				       sizeof(pin), err, errlen);
	if (r < 0)
		goto fail;
	rv = fl->C_Login(p->s, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
	OPENSSL_cleanse(pin, sizeof(pin));
	if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN) {
		r = rv_fail(rv, "C_Login", err, errlen);
		goto fail;
	}
	p->logged_in = rv == CKR_OK;
	return 0;
fail:
	p11_close(p);
	return r;
}

/* Finds the single object of class with CKA_LABEL p->label: 0, -ENOKEY, -ENOTUNIQ. */
static int find_one(struct p11 *p, CK_OBJECT_CLASS cls, CK_OBJECT_HANDLE *out, char *err,
		    size_t errlen)
{
	CK_ATTRIBUTE tpl[] = {
		{ CKA_CLASS, &cls, sizeof(cls) },
		{ CKA_LABEL, p->label, strlen(p->label) },
	};
	CK_OBJECT_HANDLE h[2];
	CK_ULONG n = 0;
	CK_RV rv;

	rv = fl->C_FindObjectsInit(p->s, tpl, FCTL_ARRAY_SIZE(tpl));
	if (rv != CKR_OK)
		return rv_fail(rv, "C_FindObjectsInit", err, errlen);
	rv = fl->C_FindObjects(p->s, h, 2, &n);
	(void)fl->C_FindObjectsFinal(p->s);
	if (rv != CKR_OK)
		return rv_fail(rv, "C_FindObjects", err, errlen);
	if (n == 0) {
		snprintf(err, errlen, "pkcs11: token '%s' holds no %s '%s' (unknown key or version)",
			 p->token, cls == CKO_DATA ? "key record" : "key", p->label);
		return -ENOKEY;
	}
	if (n > 1) {
		snprintf(err, errlen, "pkcs11: token '%s' holds several objects labelled '%s'; "
			 "refusing to pick one", p->token, p->label);
		return -ENOTUNIQ;
	}
	*out = h[0];
	return 0;
}

static int read_record(struct p11 *p, CK_OBJECT_HANDLE *rec, struct fctl_key_info *info,
		       char *err, size_t errlen)
{
	char buf[512];
	CK_ATTRIBUTE a = { CKA_VALUE, buf, sizeof(buf) };
	CK_RV rv;
	int r;

	r = find_one(p, CKO_DATA, rec, err, errlen);
	if (r < 0)
		return r;
	rv = fl->C_GetAttributeValue(p->s, *rec, &a, 1);
	if (rv != CKR_OK)
		return rv_fail(rv, "C_GetAttributeValue(record)", err, errlen);
	if (fctl_keys_info_parse(buf, a.ulValueLen, info) < 0) {
		snprintf(err, errlen, "pkcs11: the key record '%s' is malformed", p->label);
		return -EBADMSG;
	}
	return 0;
}

static int write_record(struct p11 *p, const struct fctl_key_info *info, CK_OBJECT_HANDLE *out,
			char *err, size_t errlen)
{
	CK_OBJECT_CLASS cls = CKO_DATA;
	CK_BBOOL yes = CK_TRUE;
	char buf[512];
	CK_ATTRIBUTE tpl[] = {
		{ CKA_CLASS, &cls, sizeof(cls) },
		{ CKA_TOKEN, &yes, sizeof(yes) },
		{ CKA_PRIVATE, &yes, sizeof(yes) },
		{ CKA_LABEL, p->label, strlen(p->label) },
		{ CKA_APPLICATION, (void *)(uintptr_t)STATE_APP, strlen(STATE_APP) },
		{ CKA_VALUE, buf, 0 },
	};
	CK_RV rv;

	fctl_keys_info_format(info, buf, sizeof(buf));
	tpl[5].ulValueLen = strlen(buf);
	rv = fl->C_CreateObject(p->s, tpl, FCTL_ARRAY_SIZE(tpl), out);
	return rv == CKR_OK ? 0 : rv_fail(rv, "C_CreateObject(record)", err, errlen);
}

/* Key object metadata: length and the token's check value. */
static int key_meta(struct p11 *p, CK_OBJECT_HANDLE key, struct fctl_key_info *info, char *err,
		    size_t errlen)
{
	CK_ULONG len = 0;
	CK_KEY_TYPE kt = 0;
	uint8_t kcv[3];
	CK_ATTRIBUTE a[] = {
		{ CKA_VALUE_LEN, &len, sizeof(len) },
		{ CKA_KEY_TYPE, &kt, sizeof(kt) },
	};
	CK_ATTRIBUTE c = { CKA_CHECK_VALUE, kcv, sizeof(kcv) };
	CK_RV rv;

	rv = fl->C_GetAttributeValue(p->s, key, a, FCTL_ARRAY_SIZE(a));
	if (rv != CKR_OK)
		return rv_fail(rv, "C_GetAttributeValue(key)", err, errlen);
	if (kt != CKK_AES) {
		snprintf(err, errlen, "pkcs11: '%s' is not an AES key", p->label);
		return -EINVAL;
	}
	info->len = len;
	rv = fl->C_GetAttributeValue(p->s, key, &c, 1);
	info->has_kcv = rv == CKR_OK && c.ulValueLen == sizeof(kcv);
	if (info->has_kcv)
		memcpy(info->kcv, kcv, sizeof(kcv));
	snprintf(info->object, sizeof(info->object), "pkcs11:token=%s;object=%s", p->token,
		 p->label);
	return 0;
}

/* Record and key of p->label; a destroyed key has only its record. */
static int lookup(struct p11 *p, uint32_t version, CK_OBJECT_HANDLE *rec, CK_OBJECT_HANDLE *key,
		  bool *have_key, struct fctl_key_info *info, char *err, size_t errlen)
{
	int r;

	memset(info, 0, sizeof(*info));
	info->version = version;
	r = read_record(p, rec, info, err, errlen);
	if (r < 0)
		return r;
	r = find_one(p, CKO_SECRET_KEY, key, err, errlen);
	*have_key = r == 0;
	if (r == -ENOKEY && (info->state == FCTL_KEY_DESTROYED ||
			     info->state == FCTL_KEY_DESTROYED_COMPROMISED)) {
		snprintf(info->object, sizeof(info->object), "pkcs11:token=%s;object=%s", p->token,
			 p->label);
		return 0;
	}
	if (r < 0)
		return r;
	return key_meta(p, *key, info, err, errlen);
}

int fctl_pkcs11_info(const struct fctl_keyref *ref, struct fctl_key_info *out, char *err,
		     size_t errlen)
{
	struct fctl_key_info info;
	CK_OBJECT_HANDLE rec, key;
	struct p11 p;
	bool have_key;
	int r;

	r = p11_open(ref, &p, err, errlen);
	if (r < 0)
		return r;
	r = lookup(&p, ref->version, &rec, &key, &have_key, &info, err, errlen);
	p11_close(&p);
	if (r == 0)
		*out = info;
	return r;
}

/* Unwraps RFC 3394 output under kek into k (the OpenSSL side of the export). */
static int unwrap(const uint8_t *kek, const uint8_t *in, size_t inlen, struct fctl_key *k)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int n = 0, m = 0, r = -EBADMSG;

	if (!ctx)
		return -ENOMEM;
	EVP_CIPHER_CTX_set_flags(ctx, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
	if (inlen >= 24 && inlen - 8 <= sizeof(k->bytes) &&
	    EVP_DecryptInit_ex(ctx, EVP_aes_256_wrap(), NULL, kek, NULL) == 1 &&
	    EVP_DecryptUpdate(ctx, k->bytes, &n, in, (int)inlen) == 1 &&
	    EVP_DecryptFinal_ex(ctx, k->bytes + n, &m) == 1 && (size_t)(n + m) == inlen - 8) {
		k->len = (size_t)(n + m);
		r = 0;
	}
	EVP_CIPHER_CTX_free(ctx);
	return r;
}

/* The SAK leaves the token wrapped under a one-call session key. */
static int export_key(struct p11 *p, CK_OBJECT_HANDLE key, struct fctl_key **out, char *err,
		      size_t errlen)
{
	CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
	CK_KEY_TYPE kt = CKK_AES;
	CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
	CK_MECHANISM mech = { CKM_AES_KEY_WRAP, NULL, 0 };
	CK_OBJECT_HANDLE kek_h = CK_INVALID_HANDLE;
	struct fctl_key *kek = fctl_keys_alloc(), *k = fctl_keys_alloc();
	uint8_t wrapped[FCTL_KEY_MAX + 8];
	CK_ULONG wlen = sizeof(wrapped);
	CK_RV rv;
	int r;

	if (!kek || !k) {
		r = -ENOMEM;
		goto out;
	}
	if (RAND_priv_bytes(kek->bytes, 32) != 1) {
		snprintf(err, errlen, "pkcs11: no randomness for the wrapping key");
		r = -EIO;
		goto out;
	}
	kek->len = 32;
	{
		CK_ATTRIBUTE tpl[] = {
			{ CKA_CLASS, &cls, sizeof(cls) },
			{ CKA_KEY_TYPE, &kt, sizeof(kt) },
			{ CKA_TOKEN, &no, sizeof(no) },
			{ CKA_PRIVATE, &yes, sizeof(yes) },
			{ CKA_SENSITIVE, &yes, sizeof(yes) },
			{ CKA_EXTRACTABLE, &no, sizeof(no) },
			{ CKA_WRAP, &yes, sizeof(yes) },
			{ CKA_VALUE, kek->bytes, 32 },
		};

		rv = fl->C_CreateObject(p->s, tpl, FCTL_ARRAY_SIZE(tpl), &kek_h);
	}
	if (rv != CKR_OK) {
		r = rv_fail(rv, "C_CreateObject(wrapping key)", err, errlen);
		goto out;
	}
	rv = fl->C_WrapKey(p->s, &mech, kek_h, key, wrapped, &wlen);
	if (rv != CKR_OK) {
		r = rv_fail(rv, "C_WrapKey", err, errlen);
		goto out;
	}
	if (unwrap(kek->bytes, wrapped, wlen, k) < 0) {
		snprintf(err, errlen, "pkcs11: the wrapped key of '%s' does not unwrap", p->label);
		r = -EBADMSG;
		goto out;
	}
	fctl_keys_kcv(k);
	*out = k;
	k = NULL;
	r = 0;
out:
	if (kek_h != CK_INVALID_HANDLE)
		(void)fl->C_DestroyObject(p->s, kek_h);
	OPENSSL_cleanse(wrapped, sizeof(wrapped));
	fctl_key_free(kek);
	fctl_key_free(k);
	return r;
}

int fctl_pkcs11_fetch(const struct fctl_keyref *ref, size_t want_len, struct fctl_key **out,
		      struct fctl_key_info *info, char *err, size_t errlen)
{
	struct fctl_key_info in;
	CK_OBJECT_HANDLE rec, key;
	struct fctl_key *k = NULL;
	struct p11 p;
	bool have_key;
	int r;

	r = p11_open(ref, &p, err, errlen);
	if (r < 0)
		return r;
	r = lookup(&p, ref->version, &rec, &key, &have_key, &in, err, errlen);
	if (r == 0)
		r = fctl_key_check_usable(&in, (int64_t)time(NULL), err, errlen);
	if (r == 0 && in.len != want_len) {
		snprintf(err, errlen, "pkcs11 key '%s' on token '%s' is %zu bytes; the cipher needs "
			 "%zu", p.label, p.token, in.len, want_len);
		r = -EINVAL;
	}
	if (r == 0)
		r = export_key(&p, key, &k, err, errlen);
	if (r == 0 && (k->len != want_len ||
		       (in.has_kcv && !fctl_memeq_ct(k->kcv, in.kcv, sizeof(in.kcv))))) {
		snprintf(err, errlen, "pkcs11 key '%s': the exported key does not match the token's "
			 "check value", p.label);
		r = -EBADMSG;
	}
	p11_close(&p);
	if (r < 0) {
		fctl_key_free(k);
		return r;
	}
	memcpy(in.kcv, k->kcv, sizeof(in.kcv));
	in.has_kcv = true;
	*info = in;
	*out = k;
	return 0;
}

int fctl_pkcs11_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		       bool activate, struct fctl_key_info *out, char *err, size_t errlen)
{
	CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
	CK_KEY_TYPE kt = CKK_AES;
	CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
	CK_ULONG vlen = len;
	CK_MECHANISM mech = { CKM_AES_KEY_GEN, NULL, 0 };
	CK_OBJECT_HANDLE key = CK_INVALID_HANDLE, rec;
	struct fctl_key_info info = { 0 };
	int64_t now = (int64_t)time(NULL);
	bool have_key;
	struct p11 p;
	CK_RV rv;
	int r;

	r = p11_open(ref, &p, err, errlen);
	if (r < 0)
		return r;
	r = find_one(&p, CKO_SECRET_KEY, &rec, err, errlen);
	if (r == 0 || r == -ENOTUNIQ || (r = find_one(&p, CKO_DATA, &rec, err, errlen)) == 0 ||
	    r == -ENOTUNIQ) {
		snprintf(err, errlen, "pkcs11 key '%s' exists already on token '%s'", p.label,
			 p.token);
		r = -EEXIST;
		goto out;
	}
	if (r != -ENOKEY)
		goto out;
	{
		CK_ATTRIBUTE tpl[] = {
			{ CKA_CLASS, &cls, sizeof(cls) },
			{ CKA_KEY_TYPE, &kt, sizeof(kt) },
			{ CKA_TOKEN, &yes, sizeof(yes) },
			{ CKA_PRIVATE, &yes, sizeof(yes) },
			{ CKA_SENSITIVE, &yes, sizeof(yes) },
			{ CKA_EXTRACTABLE, &yes, sizeof(yes) },
			{ CKA_ENCRYPT, &no, sizeof(no) },
			{ CKA_DECRYPT, &no, sizeof(no) },
			{ CKA_SIGN, &no, sizeof(no) },
			{ CKA_VERIFY, &no, sizeof(no) },
			{ CKA_WRAP, &no, sizeof(no) },
			{ CKA_UNWRAP, &no, sizeof(no) },
			{ CKA_DERIVE, &no, sizeof(no) },
			{ CKA_VALUE_LEN, &vlen, sizeof(vlen) },
			{ CKA_LABEL, p.label, strlen(p.label) },
			{ CKA_ID, p.label, strlen(p.label) },
		};

		rv = fl->C_GenerateKey(p.s, &mech, tpl, FCTL_ARRAY_SIZE(tpl), &key);
	}
	if (rv != CKR_OK) {
		r = rv_fail(rv, "C_GenerateKey", err, errlen);
		goto out;
	}
	info.state = activate ? FCTL_KEY_ACTIVE : FCTL_KEY_PRE_ACTIVE;
	info.dates[FCTL_KEY_DATE_INITIAL] = now;
	info.dates_set = 1u << FCTL_KEY_DATE_INITIAL;
	if (plan)
		for (unsigned d = FCTL_KEY_DATE_ACTIVATION; d <= FCTL_KEY_DATE_DEACTIVATION; d++)
			if (plan->dates_set & (1u << d)) {
				info.dates[d] = plan->dates[d];
				info.dates_set |= 1u << d;
			}
	if (activate && !(info.dates_set & (1u << FCTL_KEY_DATE_ACTIVATION))) {
		info.dates[FCTL_KEY_DATE_ACTIVATION] = now;
		info.dates_set |= 1u << FCTL_KEY_DATE_ACTIVATION;
	}
	r = write_record(&p, &info, &rec, err, errlen);
	if (r < 0) {
		(void)fl->C_DestroyObject(p.s, key); /* no key without its record */
		goto out;
	}
	if (out)
		r = lookup(&p, ref->version, &rec, &key, &have_key, out, err, errlen);
out:
	p11_close(&p);
	return r;
}

int fctl_pkcs11_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			   size_t errlen)
{
	struct fctl_key_info info;
	CK_OBJECT_HANDLE rec, key, nrec;
	int64_t now = (int64_t)time(NULL);
	enum fctl_key_date d;
	bool have_key;
	struct p11 p;
	CK_RV rv;
	int r;

	r = p11_open(ref, &p, err, errlen);
	if (r < 0)
		return r;
	r = lookup(&p, ref->version, &rec, &key, &have_key, &info, err, errlen);
	if (r < 0)
		goto out;
	switch (t) {
	case FCTL_KEY_DO_ACTIVATE:
		if (info.state != FCTL_KEY_PRE_ACTIVE)
			goto illegal;
		info.state = FCTL_KEY_ACTIVE;
		d = FCTL_KEY_DATE_ACTIVATION;
		break;
	case FCTL_KEY_DO_DEACTIVATE:
		if (info.state != FCTL_KEY_ACTIVE)
			goto illegal;
		info.state = FCTL_KEY_DEACTIVATED;
		d = FCTL_KEY_DATE_DEACTIVATION;
		break;
	case FCTL_KEY_DO_COMPROMISE:
		info.state = info.state == FCTL_KEY_DESTROYED || info.state ==
			FCTL_KEY_DESTROYED_COMPROMISED ? FCTL_KEY_DESTROYED_COMPROMISED
						       : FCTL_KEY_COMPROMISED;
		d = FCTL_KEY_DATE_COMPROMISE;
		break;
	case FCTL_KEY_DO_DESTROY:
		if (info.state == FCTL_KEY_ACTIVE || !have_key)
			goto illegal;
		info.state = info.state == FCTL_KEY_COMPROMISED ? FCTL_KEY_DESTROYED_COMPROMISED
								: FCTL_KEY_DESTROYED;
		d = FCTL_KEY_DATE_DESTROY;
		break;
	default:
		r = -EINVAL;
		goto out;
	}
	info.dates[d] = now;
	info.dates_set |= 1u << d;
	/* the new record first, then the old one goes: a crash leaves two records,
	 * which every reader refuses (-ENOTUNIQ) rather than trusting either */
	r = write_record(&p, &info, &nrec, err, errlen);
	if (r < 0)
		goto out;
	rv = fl->C_DestroyObject(p.s, rec);
	if (rv != CKR_OK) {
		r = rv_fail(rv, "C_DestroyObject(old record)", err, errlen);
		goto out;
	}
	if (t == FCTL_KEY_DO_DESTROY) {
		rv = fl->C_DestroyObject(p.s, key);
		if (rv != CKR_OK)
			r = rv_fail(rv, "C_DestroyObject(key)", err, errlen);
	}
	goto out;
illegal:
	snprintf(err, errlen, "pkcs11 key '%s' is %s: cannot %s it", p.label,
		 fctl_key_state_name(info.state), fctl_key_transition_name(t));
	r = -EPERM;
out:
	p11_close(&p);
	return r;
}
