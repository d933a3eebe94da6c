// SPDX-License-Identifier: MIT
/* Rotation state overlay on rendered SAs, and the SA requests of the agent protocol. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <errno.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fctl/key_backend.h"
#include "fctl/proto.h"
#include "fctl/rotation.h"

static void make_secy(struct fctl_macsec *m, char *backend, char *id)
{
	uint8_t keyid[FCTL_KEYID_LEN];
	struct fctl_rxsc *sc;

	memset(m, 0, sizeof(*m));
	m->key.backend = backend;
	m->key.id = id;
	fctl_keyid_from_ref(&m->key, keyid);
	m->txsa[0].present = m->txsa[0].active = true;
	m->txsa[0].pn = 1;
	memcpy(m->txsa[0].keyid, keyid, sizeof(keyid));
	m->txsa[0].has_keyid = true;
	sc = fctl_macsec_add_rxsc(m, 0x525400fa02000001ull);
	assert_non_null(sc);
	sc->sa[0] = m->txsa[0];
}

static void test_secy_set_moves_sa(void **st)
{
	char be[] = "file", id[] = "keys/k";
	struct fctl_keyref r = { .backend = be, .id = id, .version = 7 };
	uint8_t want[FCTL_KEYID_LEN];
	struct fctl_macsec m;

	(void)st;
	make_secy(&m, be, id);
	fctl_rotation_secy_set(&m, 3, 7);
	fctl_keyid_from_ref(&r, want);
	assert_int_equal(m.encoding_sa, 3);
	assert_int_equal(m.key.version, 7);
	assert_false(m.txsa[0].present);
	assert_true(m.txsa[3].present && m.txsa[3].active);
	assert_memory_equal(m.txsa[3].keyid, want, FCTL_KEYID_LEN);
	assert_false(m.rxsc[0].sa[0].present);
	assert_memory_equal(m.rxsc[0].sa[3].keyid, want, FCTL_KEYID_LEN);
	free(m.rxsc);
	/* a pinned version P (a KMS reference's first version): a record at or below P is
	 * older than the profile's pin and left alone; one above it is the rotated key */
	make_secy(&m, be, id);
	m.key.version = 7;
	fctl_rotation_secy_set(&m, 1, 7);
	assert_int_equal(m.encoding_sa, 0);
	assert_true(m.txsa[0].present);
	fctl_rotation_secy_set(&m, 1, 6);
	assert_int_equal(m.encoding_sa, 0);
	assert_int_equal(m.key.version, 7);
	r.version = 9;
	fctl_keyid_from_ref(&r, want);
	fctl_rotation_secy_set(&m, 2, 9);
	assert_int_equal(m.encoding_sa, 2);
	assert_int_equal(m.key.version, 9);
	assert_false(m.txsa[0].present);
	assert_memory_equal(m.txsa[2].keyid, want, FCTL_KEYID_LEN);
	assert_memory_equal(m.rxsc[0].sa[2].keyid, want, FCTL_KEYID_LEN);
	free(m.rxsc);
}

/* The metrics fields of a record (switch and completion times, outcome counts) survive a
 * write and a read; a record without them reads as zeros. */
static void test_state_file_metrics_fields(void **st)
{
	char dir[] = "/tmp/fctl-rot-XXXXXX", path[64];
	struct fctl_rotation_cur c = { .an = 1, .version = 7, .switched_at = 1700000000,
				       .completed_at = 1700000100, .completed_version = 7,
				       .n_completed = 6, .n_rolled_back = 2, .n_failed = 3 },
				 got;
	FILE *f;

	(void)st;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(fctl_rotation_write(dir, "ms1", &c), 0);
	assert_int_equal(fctl_rotation_read(dir, "ms1", &got), 0);
	assert_int_equal(got.switched_at, 1700000000);
	assert_int_equal(got.completed_at, 1700000100);
	assert_int_equal(got.completed_version, 7);
	assert_int_equal(got.n_completed, 6);
	assert_int_equal(got.n_rolled_back, 2);
	assert_int_equal(got.n_failed, 3);
	snprintf(path, sizeof(path), "%s/ms2", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("an 0\nversion 2\nbusy 0\n", f);
	fclose(f);
	assert_int_equal(fctl_rotation_read(dir, "ms2", &got), 0);
	assert_int_equal(got.switched_at, 0);
	assert_int_equal(got.n_completed, 0);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ms1", dir);
	unlink(path);
	rmdir(dir);
}

static void test_state_file_roundtrip_and_overlay(void **st)
{
	char dir[] = "/tmp/fctl-rot-XXXXXX", be[] = "file", id[] = "keys/k";
	struct fctl_rotation_cur c = { .an = 2, .version = 5, .busy_until = 0 }, got;
	struct fctl_host_state *hs = fctl_host_state_new("h1");
	struct fctl_link *l;
	char ifn[16] = "";

	(void)st;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(fctl_rotation_read(dir, "ms100", &got), -2 /* -ENOENT */);
	assert_int_equal(fctl_rotation_write(dir, "ms100", &c), 0);
	assert_int_equal(fctl_rotation_read(dir, "ms100", &got), 0);
	assert_int_equal(got.an, 2);
	assert_int_equal(got.version, 5);
	assert_false(fctl_rotation_busy(dir, ifn, sizeof(ifn)));
	c.busy_until = (uint64_t)time(NULL) + 60;
	assert_int_equal(fctl_rotation_write(dir, "ms100", &c), 0);
	assert_true(fctl_rotation_busy(dir, ifn, sizeof(ifn)));
	assert_string_equal(ifn, "ms100");
	assert_int_equal(fctl_rotation_write(dir, "../x", &c), -22);
	assert_false(got.has_keyid);
	/* a record names its key reference by the KEYID of {backend, id, version} */
	{
		struct fctl_keyref r = { .backend = be, .id = id, .version = 5 };

		fctl_keyid_from_ref(&r, c.keyid);
		c.has_keyid = true;
		c.busy_until = 0;
		assert_int_equal(fctl_rotation_write(dir, "ms100", &c), 0);
		assert_int_equal(fctl_rotation_read(dir, "ms100", &got), 0);
		assert_true(got.has_keyid);
		assert_memory_equal(got.keyid, c.keyid, FCTL_KEYID_LEN);
	}
	l = fctl_host_state_add_link(hs, FCTL_LINK_MACSEC, "ms100");
	make_secy(&l->macsec, be, id);
	assert_int_equal(fctl_rotation_overlay(hs, dir), 0);
	assert_int_equal(l->macsec.encoding_sa, 2);
	assert_true(l->macsec.txsa[2].present);
	free(l->macsec.rxsc);
	l->macsec.rxsc = NULL;
	l->macsec.n_rxsc = 0;
	l->macsec.key.backend = l->macsec.key.id = NULL;
	fctl_host_state_free(hs);
	unlink(strcat(strcpy((char[64]){ 0 }, dir), "/ms100"));
	rmdir(dir);
}

/* A record applies to a SecY only when it belongs to the profile's key reference and is
 * past its pinned version; a record of another key (the profile moved the link) does not. */
static void test_record_applies_to_its_key_only(void **st)
{
	char be[] = "file", id[] = "keys/a", other[] = "keys/b", kb[] = "pkcs11",
	     kid[] = "token=t;object=a", dir[] = "/tmp/fctl-rotr-XXXXXX";
	struct fctl_keyref ref = { .backend = be, .id = id }, r;
	struct fctl_rotation_cur c = { .an = 1, .version = 3 };
	struct fctl_host_state *hs;
	struct fctl_link *l;
	FILE *f;
	char path[128];

	(void)st;
	/* no keyid (an older agent's record): taken as the profile's */
	assert_true(fctl_rotation_applies(&ref, &c));
	r = ref;
	r.version = 3;
	fctl_keyid_from_ref(&r, c.keyid);
	c.has_keyid = true;
	assert_true(fctl_rotation_applies(&ref, &c));
	/* the same id under another backend, or another id: not this key's record */
	ref.id = other;
	assert_false(fctl_rotation_applies(&ref, &c));
	ref.id = id;
	ref.backend = kb;
	assert_false(fctl_rotation_applies(&ref, &c));
	/* a KMS reference pinned at 1 after a file key's rotation to 3: ignored */
	ref.id = kid;
	ref.version = 1;
	assert_false(fctl_rotation_applies(&ref, &c));
	/* pinned at 1, the record of version 3 of that very key: applies; at or below: not */
	r = ref;
	r.version = 3;
	fctl_keyid_from_ref(&r, c.keyid);
	assert_true(fctl_rotation_applies(&ref, &c));
	ref.version = 3;
	assert_false(fctl_rotation_applies(&ref, &c));
	/* a version that differs from the one the keyid was made of: not this record */
	ref.version = 1;
	c.version = 4;
	assert_false(fctl_rotation_applies(&ref, &c));

	/* the overlay leaves a SecY alone when the record is another key's; a bad keyid
	 * line is an unreadable record, not a missing keyid */
	assert_non_null(mkdtemp(dir));
	ref.backend = be;
	ref.id = id;
	ref.version = 0;
	r = ref;
	r.version = 2;
	c.version = 2;
	c.an = 2;
	fctl_keyid_from_ref(&r, c.keyid);
	assert_int_equal(fctl_rotation_write(dir, "ms7", &c), 0);
	hs = fctl_host_state_new("h1");
	l = fctl_host_state_add_link(hs, FCTL_LINK_MACSEC, "ms7");
	make_secy(&l->macsec, be, other); /* the profile now names keys/b */
	assert_int_equal(fctl_rotation_overlay(hs, dir), 0);
	assert_int_equal(l->macsec.encoding_sa, 0);
	assert_true(l->macsec.txsa[0].present);
	l->macsec.key.id = id; /* keys/a: the record's key */
	assert_int_equal(fctl_rotation_overlay(hs, dir), 0);
	assert_int_equal(l->macsec.encoding_sa, 2);
	assert_true(l->macsec.txsa[2].present);
	snprintf(path, sizeof(path), "%s/ms7", dir);
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("keyid zz\n", f);
	fclose(f);
	assert_int_equal(fctl_rotation_read(dir, "ms7", &c), -EBADMSG);
	free(l->macsec.rxsc);
	l->macsec.rxsc = NULL;
	l->macsec.n_rxsc = 0;
	l->macsec.key.backend = l->macsec.key.id = NULL;
	fctl_host_state_free(hs);
	unlink(path);
	rmdir(dir);
}

/* A KMS stand-in for the pass-through check: records what reached it, hands out nothing. */
static char stub_id[64];
static uint32_t stub_version;

static int stub_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		      struct fctl_key **out, struct fctl_key_info *info, char *err, size_t errlen)
{
	snprintf(stub_id, sizeof(stub_id), "%s", ref->id);
	stub_version = ref->version;
	snprintf(err, errlen, "stub: no such key");
	return -ENOKEY;
}

static int stub_info(const struct fctl_keyref *ref, const char *base_dir,
		     struct fctl_key_info *out, char *err, size_t errlen)
{
	return -ENOKEY;
}

static const struct fctl_key_backend stub_kmip = {
	.name = "kmip", .needs_version = true, .fetch = stub_fetch, .info = stub_info,
};

/* The file backend has no versions (keys.c ignores them): version V of X is the file
 * X.vV, version 0 is X itself; a wrong or missing version fails, never falls back. */
static void test_key_fetch_file_versions(void **st)
{
	char dir[] = "/tmp/fctl-rotk-XXXXXX", be[] = "file", id[] = "k", err[256];
	const char *const files[] = { "k", "k.v1", "k.v2" };
	const char *const hex[] = { "000102030405060708090a0b0c0d0e0f\n",
				    "101112131415161718191a1b1c1d1e1f\n",
				    "202122232425262728292a2b2c2d2e2f\n" };
	struct fctl_keyref ref = { .backend = be, .id = id };
	struct fctl_key *k = NULL;
	char path[128];

	(void)st;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 3; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(hex[i], f);
		fclose(f);
		chmod(path, 0600);
	}
	for (uint32_t v = 0; v < 3; v++) {
		ref.version = v;
		assert_int_equal(fctl_rotation_key_fetch(&ref, dir, 16, &k, err, sizeof(err)), 0);
		assert_int_equal(k->bytes[0], 0x10 * v);
		fctl_key_free(k);
		k = NULL;
	}
	ref.version = 3;
	assert_true(fctl_rotation_key_fetch(&ref, dir, 16, &k, err, sizeof(err)) < 0);
	assert_null(k);
	ref.version = 1;
	assert_true(fctl_rotation_key_fetch(&ref, dir, 32, &k, err, sizeof(err)) < 0);
	/* a KMS reference goes through unchanged: version 0 fails closed; without its backend
	 * in this process (only keymgr registers the KMS ones) it is not available at all */
	{
		char kb[] = "kmip", kid[] = "name";
		struct fctl_keyref kr = { .backend = kb, .id = kid, .version = 0 };

		assert_int_equal(fctl_rotation_key_fetch(&kr, dir, 16, &k, err, sizeof(err)),
				 -EOPNOTSUPP);
		assert_int_equal(fctl_key_backend_register(&stub_kmip), 0);
		assert_int_equal(fctl_rotation_key_fetch(&kr, dir, 16, &k, err, sizeof(err)),
				 -ENOKEY);
		assert_string_equal(stub_id, ""); /* refused before the backend was asked */
		kr.version = 3;
		assert_int_equal(fctl_rotation_key_fetch(&kr, dir, 16, &k, err, sizeof(err)),
				 -ENOKEY);
		assert_string_equal(stub_id, "name"); /* not "name.v3": the KMS names versions */
		assert_int_equal(stub_version, 3);
		assert_null(k);
	}
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void test_proto_sa_roundtrip(void **st)
{
	uint8_t key[16], keyid[16];
	struct fctl_msg m = { .type = FCTL_MSG_RXSA_INSTALL, .id = 9 }, d;
	struct fctl_buf b = { 0 };
	char why[200];

	(void)st;
	memset(key, 0xab, sizeof(key));
	memset(keyid, 0x11, sizeof(keyid));
	snprintf(m.ifname, sizeof(m.ifname), "ms100");
	m.sci = 0x525400fa01000001ull;
	m.an = 1;
	m.pn = 1;
	m.key = key;
	m.key_len = 16;
	m.keyid = keyid;
	m.key_version = 4;
	m.present = FCTL_HAS_IFNAME | FCTL_HAS_SCI | FCTL_HAS_AN | FCTL_HAS_PN | FCTL_HAS_KEY |
		    FCTL_HAS_KEYID | FCTL_HAS_KEY_VERSION;
	assert_true(fctl_proto_is_sa_request(m.type));
	assert_int_equal(fctl_proto_encode(&m, &b), 0);
	assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &d, why, sizeof(why)), 0);
	assert_string_equal(d.ifname, "ms100");
	assert_int_equal(d.sci, m.sci);
	assert_int_equal(d.an, 1);
	assert_int_equal(d.key_len, 16);
	assert_memory_equal(d.key, key, 16);
	assert_memory_equal(d.keyid, keyid, 16);
	assert_int_equal(d.key_version, 4);
	fctl_buf_release(&b);
	/* no key: refused by the encoder; AN 4: refused */
	m.present &= ~(uint32_t)FCTL_HAS_KEY;
	assert_int_equal(fctl_proto_encode(&m, &b), -22);
	m.present |= FCTL_HAS_KEY;
	m.an = 4;
	assert_int_equal(fctl_proto_encode(&m, &b), -22);
	fctl_buf_release(&b);
	/* a key TLV of 15 bytes is refused by the decoder */
	m.an = 1;
	m.key_len = 16;
	assert_int_equal(fctl_proto_encode(&m, &b), 0);
	{
		uint8_t *p = (uint8_t *)b.data;
		size_t off = FCTL_PROTO_HDR_LEN;

		while (off + 6 <= b.len && !(p[off] == 0x80 && p[off + 1] == 0x11))
			off += 6 + ((size_t)p[off + 2] << 24 | (size_t)p[off + 3] << 16 |
				    (size_t)p[off + 4] << 8 | p[off + 5]);
		assert_true(off + 6 <= b.len);
		p[off + 5] = 15; /* key length 16 -> 15, one byte becomes the next TLV's */
		assert_true(fctl_proto_decode(p, b.len, 0, &d, why, sizeof(why)) < 0);
	}
	fctl_buf_release(&b);
	/* txsa-switch names the key it switches to (version + KEYID); no key bytes */
	{
		struct fctl_msg w = { .type = FCTL_MSG_TXSA_SWITCH, .id = 10, .an = 2,
				      .key_version = 5, .keyid = keyid };

		snprintf(w.ifname, sizeof(w.ifname), "ms100");
		w.present = FCTL_HAS_IFNAME | FCTL_HAS_AN | FCTL_HAS_KEY_VERSION | FCTL_HAS_KEYID;
		assert_int_equal(fctl_proto_encode(&w, &b), 0);
		assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &d, why, sizeof(why)),
				 0);
		assert_int_equal(d.key_version, 5);
		assert_non_null(d.keyid);
		assert_memory_equal(d.keyid, keyid, 16);
		assert_null(d.key);
		fctl_buf_release(&b);
		w.type = FCTL_MSG_ENCODING_SA;
		assert_int_equal(fctl_proto_encode(&w, &b), 0);
		assert_int_equal(fctl_proto_decode((uint8_t *)b.data, b.len, 0, &d, why, sizeof(why)),
				 0);
		assert_memory_equal(d.keyid, keyid, 16);
		fctl_buf_release(&b);
		/* a key on a switch is refused: switching moves no key material */
		w.type = FCTL_MSG_TXSA_SWITCH;
		w.key = key;
		w.key_len = 16;
		w.present |= FCTL_HAS_KEY;
		assert_int_not_equal(fctl_proto_encode(&w, &b), 0);
		fctl_buf_release(&b);
	}
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_secy_set_moves_sa),
		cmocka_unit_test(test_state_file_roundtrip_and_overlay),
		cmocka_unit_test(test_state_file_metrics_fields),
		cmocka_unit_test(test_proto_sa_roundtrip),
		cmocka_unit_test(test_key_fetch_file_versions),
		cmocka_unit_test(test_record_applies_to_its_key_only),
	};

	return cmocka_run_group_tests(t, NULL, NULL);
}
