// SPDX-License-Identifier: MIT
/* The journal's text form of a host state: exact round trips, damaged input refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fctl/plan.h"
#include "fctl/state.h"

static struct fctl_host_state *sample(void)
{
	struct fctl_host_state *hs = fctl_host_state_new("gpu 01");
	struct fctl_link *v, *m;
	struct fctl_rxsc *sc;
	const uint8_t mac[6] = { 0x52, 0x54, 0, 0xfa, 1, 0 }, peer[6] = { 0x52, 0x54, 0, 0xfa, 2, 0 };

	assert_non_null(hs);
	v = fctl_host_state_add_link(hs, FCTL_LINK_VLAN, "eth0.100");
	assert_non_null(v);
	strcpy(v->parent, "eth0");
	v->vid = 100;
	v->proto = FCTL_VLAN_8021AD;
	v->mtu = 1500;
	v->has_mtu = true;
	v->up = true;
	m = fctl_host_state_add_link(hs, FCTL_LINK_MACSEC, "ms100");
	assert_non_null(m);
	strcpy(m->parent, "eth0.100");
	m->mtu = 1464;
	m->has_mtu = true;
	m->up = true;
	m->macsec.sci = fctl_sci_make(mac, 7);
	m->macsec.port = 7;
	m->macsec.has_port = true;
	m->macsec.cipher = FCTL_CIPHER_GCM_AES_XPN_256;
	m->macsec.icv_len = 12;
	m->macsec.encrypt = true;
	m->macsec.protect = true;
	m->macsec.replay_protect = true;
	m->macsec.window = 1u << 20;
	m->macsec.validate = FCTL_VALIDATE_CHECK;
	m->macsec.end_station = true;
	m->macsec.offload = FCTL_OFFLOAD_MAC;
	m->macsec.encoding_sa = 2;
	m->macsec.key.backend = strdup("file");
	m->macsec.key.id = strdup("keys/with space=and%percent.key");
	m->macsec.key.base = strdup("/etc/fabric ctl");
	m->macsec.key.version = 9;
	m->macsec.txsa[2].present = true;
	m->macsec.txsa[2].active = true;
	m->macsec.txsa[2].pn = 0x1234567890ULL;
	m->macsec.txsa[2].has_keyid = true;
	memset(m->macsec.txsa[2].keyid, 0xab, FCTL_KEYID_LEN);
	m->macsec.txsa[2].has_salt = true;
	m->macsec.txsa[2].ssci = 2;
	memset(m->macsec.txsa[2].salt, 0x5a, FCTL_SALT_LEN);
	sc = fctl_macsec_add_rxsc(&m->macsec, fctl_sci_make(peer, 7));
	assert_non_null(sc);
	sc->active = true;
	sc->sa[2] = m->macsec.txsa[2];
	sc->sa[2].ssci = 1;
	sc->sa[3].present = true; /* inactive, no key id */
	assert_int_equal(fctl_link_add_addr(m, "fd00::1/64"), 0);
	assert_int_equal(fctl_link_add_addr(m, "10.0.0.1/31"), 0);
	fctl_host_state_sort(hs);
	return hs;
}

static void test_round_trip(void **state)
{
	struct fctl_host_state *a = sample(), *b = NULL;
	struct fctl_buf t1 = { 0 }, t2 = { 0 }, j1 = { 0 }, j2 = { 0 };
	struct fctl_plan *p = NULL;
	size_t used = 0;

	(void)state;
	assert_int_equal(fctl_host_state_save(a, &t1), 0);
	assert_int_equal(fctl_host_state_load(t1.data, &used, &b), 0);
	assert_int_equal(used, t1.len);
	assert_int_equal(fctl_host_state_save(b, &t2), 0);
	assert_string_equal(t1.data, t2.data);
	/* every field survives: JSON renderings agree, and the plan between them is empty */
	fctl_host_state_to_json(a, &j1);
	fctl_host_state_to_json(b, &j2);
	assert_string_equal(j1.data, j2.data);
	assert_int_equal(fctl_plan_compute(a, b, &p), 0);
	assert_int_equal(p->n_ops, 0);
	assert_string_equal(b->host, "gpu 01");
	assert_string_equal(b->links[1].macsec.key.id, "keys/with space=and%percent.key");
	assert_string_equal(b->links[1].macsec.key.base, "/etc/fabric ctl");
	assert_int_equal(b->links[1].macsec.key.version, 9);
	assert_int_equal(b->links[1].macsec.txsa[2].pn, 0x1234567890ULL);
	/* no key material can be in the text: the state holds none, only key ids */
	assert_non_null(strstr(t1.data, "keyid=abababab"));
	fctl_plan_free(p);
	fctl_host_state_free(a);
	fctl_host_state_free(b);
	fctl_buf_release(&t1);
	fctl_buf_release(&t2);
	fctl_buf_release(&j1);
	fctl_buf_release(&j2);
}

static void test_trailing_text(void **state)
{
	struct fctl_host_state *b = NULL;
	const char *text = "state h\nlink vlan v1 parent=eth0 up=1 vid=5 proto=802.1q\nstate-end\nafter\n";
	size_t used = 0;

	(void)state;
	assert_int_equal(fctl_host_state_load(text, &used, &b), 0);
	assert_int_equal(used, strlen(text) - strlen("after\n"));
	assert_int_equal(b->n_links, 1);
	fctl_host_state_free(b);
}

static void test_damaged(void **state)
{
	static const char *const bad[] = {
		"",
		"state h\n",                                    /* no end */
		"link vlan v parent=e up=1 vid=1 proto=802.1q\nstate-end\n", /* no header */
		"state h\nlink vlan v parent=e up=2 vid=1 proto=802.1q\nstate-end\n",
		"state h\nlink vlan v parent=e up=1 vid=99999 proto=802.1q\nstate-end\n",
		"state h\nlink vlan v parent=e up=1 vid=1 proto=802.1x\nstate-end\n",
		"state h\nlink bridge v parent=e up=1\nstate-end\n",
		"state h\ntxsa nosuch an=0 active=1 pn=1\nstate-end\n",
		"state h\nlink vlan v parent=e up=1 vid=1 proto=802.1q\ntxsa v an=0 active=1 pn=1\nstate-end\n",
		"state h\nlink macsec m parent=e up=1 sci=zz port=1 cipher=gcm-aes-128 icv=16 encrypt=1 "
		"protect=1 replay=0 window=0 validate=strict send_sci=1 es=0 scb=0 offload=off "
		"encoding_sa=0\nstate-end\n",
		"state h\nlink vlan v parent=e%zz up=1 vid=1 proto=802.1q\nstate-end\n",
		"state h\nlink vlan v parent=aaaaaaaaaaaaaaaaaaaa up=1 vid=1 proto=802.1q\nstate-end\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fctl_host_state *b = NULL;
		size_t used = 0;
		int r = fctl_host_state_load(bad[i], &used, &b);

		if (r >= 0)
			fail_msg("damaged input %zu was accepted", i);
		assert_null(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_trailing_text),
		cmocka_unit_test(test_damaged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
