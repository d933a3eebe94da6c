// SPDX-License-Identifier: MIT
/*
 * Unit tests of rendering (profile -> host state) and planning (state -> state):
 * operation order, what is in place and what is disruptive, and the JSON form.
 * Profiles are built in memory from one template with a few knobs.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fctl/plan.h"
#include "fctl/profile.h"

struct knobs {
	const char *cipher;
	unsigned window;
	unsigned vid;
	unsigned key_version;
	const char *ifname; /* "" or ", ifname: { vlan: v0, macsec: m0 }" */
	bool second_link;
	unsigned icv;
	unsigned port;
	bool no_first_link;
	const char *offload; /* NULL: none */
};

static const struct knobs base = { "gcm-aes-128", 0, 100, 1, "", true, 16, 1, false, NULL };

static struct fctl_profile *make(const struct knobs *k)
{
	char yaml[2048], first[256];
	struct fctl_profile *p = NULL;
	struct fctl_diags d = { 0 };
	struct fctl_buf b = { 0 };

	snprintf(first, sizeof(first),
		 "  - a: h1:eth0\n    b: h2:eth0\n    vlans:\n"
		 "      - { id: %u, mtu: 8000, macsec: p%s,\n"
		 "          addresses: { h1: 10.0.0.1/24, h2: 10.0.0.2/24 } }\n",
		 k->vid, k->ifname);
	snprintf(yaml, sizeof(yaml),
		 "schema: 1\nprofile: { name: t, version: 1 }\n"
		 "macsec:\n"
		 "  p:\n"
		 "    cipher: %s\n    icv_len: %u\n    port: %u\n    offload: %s\n"
		 "    replay_protect: true\n    replay_window: %u\n"
		 "    key: { backend: file, id: nonexistent/k.key, version: %u }\n"
		 "hosts:\n"
		 "  - name: h1\n    ports:\n"
		 "      - { name: eth0, mac: \"52:54:00:00:01:00\", mtu: 9000 }\n"
		 "      - { name: eth1, mac: \"52:54:00:00:01:01\", mtu: 1500 }\n"
		 "  - name: h2\n    ports:\n"
		 "      - { name: eth0, mac: \"52:54:00:00:02:00\", mtu: 9000 }\n"
		 "      - { name: eth1, mac: \"52:54:00:00:02:01\", mtu: 1500 }\n"
		 "links:\n%s%s",
		 k->cipher, k->icv, k->port, k->offload ? k->offload : "none", k->window,
		 k->key_version,
		 k->no_first_link ? "" : first,
		 k->second_link ? "  - a: h1:eth1\n    b: h2:eth1\n    vlans:\n"
				  "      - { id: 300, addresses: { h1: \"fd00::1/64\" } }\n"
				: "");
	assert_int_equal(fctl_profile_parse("t.yaml", (const unsigned char *)yaml, strlen(yaml),
					    &d, &p),
			 0);
	fctl_profile_validate(p, &d);
	if (d.n_errors) {
		fctl_diags_to_text(&d, &b, false);
		fail_msg("template does not validate:\n%s\n%s", yaml, b.data);
	}
	fctl_diags_release(&d);
	return p;
}

static struct fctl_host_state *render(const struct knobs *k, const char *host)
{
	struct fctl_profile *p = make(k);
	struct fctl_host_state *hs = NULL;

	assert_int_equal(fctl_profile_render_host(p, host, &hs), 0);
	fctl_profile_free(p);
	return hs;
}

static struct fctl_plan *plan(const struct knobs *from, const struct knobs *to, const char *host)
{
	struct fctl_host_state *a = from ? render(from, host) : NULL, *b = render(to, host);
	struct fctl_plan *pl = NULL;

	assert_int_equal(fctl_plan_compute(a, b, &pl), 0);
	fctl_host_state_free(a);
	fctl_host_state_free(b);
	return pl;
}

static size_t index_of(const struct fctl_plan *p, enum fctl_op_kind k, const char *ifname)
{
	for (size_t i = 0; i < p->n_ops; i++)
		if (p->ops[i].kind == k && (!ifname || strcmp(p->ops[i].ifname, ifname) == 0))
			return i;
	fail_msg("no %s op on %s", fctl_op_kind_name(k), ifname ? ifname : "any link");
	return SIZE_MAX;
}

static void dump(const struct fctl_plan *p)
{
	struct fctl_buf b = { 0 };

	fctl_plan_to_text(p, &b, false);
	print_message("%s", b.data);
	fctl_buf_release(&b);
}

struct op_want {
	enum fctl_op_kind kind;
	const char *ifname;
	bool disruptive;
};

static void expect_ops(const struct fctl_plan *p, const struct op_want *w, size_t n)
{
	bool ok = p->n_ops == n;

	for (size_t i = 0; ok && i < n; i++)
		ok = p->ops[i].kind == w[i].kind && strcmp(p->ops[i].ifname, w[i].ifname) == 0 &&
		     p->ops[i].disruptive == w[i].disruptive;
	if (!ok) {
		dump(p);
		for (size_t i = 0; i < n; i++)
			print_message("want %s %s%s\n", fctl_op_kind_name(w[i].kind), w[i].ifname,
				      w[i].disruptive ? " [disruptive]" : "");
		fail_msg("plan differs");
	}
}

/* ---- rendering ---- */

static void test_render(void **state)
{
	struct knobs k = base;
	struct fctl_host_state *hs;
	const struct fctl_link *v, *m, *c;
	char sci[24];

	hs = render(&k, "h1");
	assert_string_equal(hs->host, "h1");
	assert_int_equal(hs->n_links, 3); /* eth0.100, eth1.300, ms100: VLANs first */
	v = fctl_host_state_find(hs, "eth0.100");
	m = fctl_host_state_find(hs, "ms100");
	c = fctl_host_state_find(hs, "eth1.300");
	assert_non_null(v);
	assert_non_null(m);
	assert_non_null(c);
	assert_int_equal(hs->links[0].kind, FCTL_LINK_VLAN);
	assert_int_equal(hs->links[2].kind, FCTL_LINK_MACSEC);
	assert_string_equal(v->parent, "eth0");
	assert_int_equal(v->vid, 100);
	assert_int_equal(v->proto, FCTL_VLAN_8021Q);
	/* the vlan mtu is the MTU of the interface carrying IP; the VLAN below adds the overhead */
	assert_int_equal(m->mtu, 8000);
	assert_int_equal(v->mtu, 8000 + 16 + 16);
	assert_int_equal(v->n_addrs, 0);
	assert_int_equal(m->n_addrs, 1);
	assert_string_equal(m->addrs[0], "10.0.0.1/24");
	/* a cleartext VLAN without mtu carries the port's MTU and the addresses itself */
	assert_int_equal(c->mtu, 1500);
	assert_int_equal(c->n_addrs, 1);
	assert_string_equal(c->addrs[0], "fd00::1/64");
	/* SCI = own MAC + policy port; the RX SC is the peer's */
	assert_string_equal(m->parent, "eth0.100");
	fctl_sci_format(m->macsec.sci, sci);
	assert_string_equal(sci, "52:54:00:00:01:00/1");
	assert_int_equal(m->macsec.n_rxsc, 1);
	fctl_sci_format(m->macsec.rxsc[0].sci, sci);
	assert_string_equal(sci, "52:54:00:00:02:00/1");
	assert_true(m->macsec.protect);
	assert_true(m->macsec.encrypt);
	assert_true(m->macsec.replay_protect);
	assert_int_equal(m->macsec.validate, FCTL_VALIDATE_STRICT);
	assert_true(m->macsec.txsa[0].present);
	assert_true(m->macsec.txsa[0].active);
	assert_true(m->macsec.rxsc[0].sa[0].present);
	/* one key: TX and RX SAs name the same KEYID, derived from the key reference */
	assert_memory_equal(m->macsec.txsa[0].keyid, m->macsec.rxsc[0].sa[0].keyid,
			    FCTL_KEYID_LEN);
	{
		struct fctl_keyref ref = { .backend = (char *)"file", .id = (char *)"nonexistent/k.key",
					   .version = 1 };
		uint8_t id[FCTL_KEYID_LEN];

		fctl_keyid_from_ref(&ref, id);
		assert_memory_equal(id, m->macsec.txsa[0].keyid, FCTL_KEYID_LEN);
	}
	assert_false(m->macsec.txsa[0].has_salt); /* not XPN */
	fctl_host_state_free(hs);

	/* XPN: SSCI 1 for the lower SCI of the pair, 2 for the higher; both ends agree */
	k.cipher = "gcm-aes-xpn-256";
	{
		struct fctl_host_state *a = render(&k, "h1"), *b = render(&k, "h2");
		const struct fctl_link *ma = fctl_host_state_find(a, "ms100"),
				       *mb = fctl_host_state_find(b, "ms100");

		assert_int_equal(ma->macsec.txsa[0].ssci, 1);
		assert_int_equal(ma->macsec.rxsc[0].sa[0].ssci, 2);
		assert_int_equal(mb->macsec.txsa[0].ssci, 2);
		assert_int_equal(mb->macsec.rxsc[0].sa[0].ssci, 1);
		assert_true(ma->macsec.txsa[0].has_salt);
		assert_memory_equal(ma->macsec.txsa[0].salt, mb->macsec.rxsc[0].sa[0].salt,
				    FCTL_SALT_LEN);
		/* the salt follows from the KEYID alone, which the kernel does dump: what a
		 * rollback needs to re-install an SA it read back */
		{
			uint8_t salt[FCTL_SALT_LEN];

			fctl_salt_from_keyid(ma->macsec.txsa[0].keyid, salt);
			assert_memory_equal(salt, ma->macsec.txsa[0].salt, FCTL_SALT_LEN);
		}
		fctl_host_state_free(a);
		fctl_host_state_free(b);
	}
	/* an unknown host */
	{
		struct fctl_profile *p = make(&base);

		assert_int_equal(fctl_profile_render_host(p, "nope", &hs), -ENOENT);
		fctl_profile_free(p);
	}
}

/* ---- plans ---- */

static void test_plan_from_nothing(void **state)
{
	struct fctl_plan *p = plan(NULL, &base, "h1");
	static const struct op_want want[] = {
		{ FCTL_OP_LINK_ADD, "eth0.100", false },  { FCTL_OP_LINK_ADD, "eth1.300", false },
		{ FCTL_OP_LINK_ADD, "ms100", false },	  { FCTL_OP_RXSC_ADD, "ms100", false },
		{ FCTL_OP_RXSA_ADD, "ms100", false },	  { FCTL_OP_TXSA_ADD, "ms100", false },
		{ FCTL_OP_LINK_UP, "eth0.100", false },	  { FCTL_OP_LINK_UP, "eth1.300", false },
		{ FCTL_OP_LINK_UP, "ms100", false },	  { FCTL_OP_ADDR_ADD, "eth1.300", false },
		{ FCTL_OP_ADDR_ADD, "ms100", false },
	};

	expect_ops(p, want, FCTL_ARRAY_SIZE(want));
	/* the rules behind that order, stated once more */
	assert_true(index_of(p, FCTL_OP_LINK_ADD, "eth0.100") < index_of(p, FCTL_OP_LINK_ADD, "ms100"));
	assert_true(index_of(p, FCTL_OP_RXSC_ADD, NULL) < index_of(p, FCTL_OP_RXSA_ADD, NULL));
	assert_true(index_of(p, FCTL_OP_RXSA_ADD, NULL) < index_of(p, FCTL_OP_TXSA_ADD, NULL));
	assert_true(index_of(p, FCTL_OP_TXSA_ADD, NULL) < index_of(p, FCTL_OP_ADDR_ADD, NULL));
	assert_int_equal(p->ops[p->n_ops - 1].kind, FCTL_OP_ADDR_ADD);
	assert_string_equal(p->ops[p->n_ops - 1].addr, "10.0.0.1/24");
	assert_int_equal(fctl_plan_count_disruptive(p), 0);
	assert_string_equal(p->host, "h1");
	/* the ops carry their payload */
	assert_int_equal(p->ops[0].link.vid, 100);
	assert_true(p->ops[5].sa.active);
	fctl_plan_free(p);
	fctl_plan_free(NULL);
}

static void test_plan_same_twice(void **state)
{
	struct knobs x = base;
	struct fctl_plan *p = plan(&base, &base, "h1");
	struct fctl_buf b = { 0 };

	assert_int_equal(p->n_ops, 0);
	fctl_plan_to_text(p, &b, false);
	assert_non_null(strstr(b.data, "no changes"));
	fctl_buf_release(&b);
	fctl_plan_free(p);
	x.cipher = "gcm-aes-xpn-128";
	p = plan(&x, &x, "h2");
	assert_int_equal(p->n_ops, 0);
	fctl_plan_free(p);
}

static void test_plan_window_in_place(void **state)
{
	struct knobs to = base;
	struct fctl_plan *p;
	static const struct op_want want[] = { { FCTL_OP_LINK_CHANGE, "ms100", false } };

	to.window = 64;
	p = plan(&base, &to, "h1");
	expect_ops(p, want, 1);
	assert_int_equal(p->ops[0].changes, FCTL_CHG_WINDOW);
	assert_int_equal(p->ops[0].link.macsec.window, 64);
	assert_string_equal(p->ops[0].detail, "window 0 -> 64");
	assert_int_equal(fctl_plan_count_disruptive(p), 0);
	fctl_plan_free(p);
}

static void test_plan_cipher_recreates(void **state)
{
	struct knobs to = base;
	struct fctl_plan *p;
	static const struct op_want want[] = {
		{ FCTL_OP_LINK_DEL, "ms100", true }, { FCTL_OP_LINK_ADD, "ms100", true },
		{ FCTL_OP_RXSC_ADD, "ms100", false }, { FCTL_OP_RXSA_ADD, "ms100", false },
		{ FCTL_OP_TXSA_ADD, "ms100", false }, { FCTL_OP_LINK_UP, "ms100", false },
		{ FCTL_OP_ADDR_ADD, "ms100", false },
	};

	to.cipher = "gcm-aes-256";
	p = plan(&base, &to, "h1");
	expect_ops(p, want, FCTL_ARRAY_SIZE(want));
	assert_non_null(strstr(p->ops[0].detail, "cipher gcm-aes-128 -> gcm-aes-256"));
	assert_int_equal(p->ops[1].link.macsec.cipher, FCTL_CIPHER_GCM_AES_256);
	assert_int_equal(fctl_plan_count_disruptive(p), 1); /* the delete: the outage */
	fctl_plan_free(p);

	/* ICV length and SCI port are fixed at creation too */
	to = base;
	to.icv = 12;
	p = plan(&base, &to, "h1");
	assert_int_equal(p->ops[0].kind, FCTL_OP_LINK_DEL);
	assert_true(p->ops[0].disruptive);
	assert_non_null(strstr(p->ops[0].detail, "icv_len 16 -> 12"));
	fctl_plan_free(p);
	to = base;
	to.port = 2;
	p = plan(&base, &to, "h1");
	assert_int_equal(p->ops[0].kind, FCTL_OP_LINK_DEL);
	assert_non_null(strstr(p->ops[0].detail, "sci 52:54:00:00:01:00/1 -> 52:54:00:00:01:00/2"));
	fctl_plan_free(p);
	/* and offload: the kernel refuses to change it on a SecY that is up or has SCs and
	 * SAs (macsec_update_offload, -EBUSY), so the SecY is rebuilt with it */
	to = base;
	to.offload = "mac";
	p = plan(&base, &to, "h1");
	expect_ops(p, want, FCTL_ARRAY_SIZE(want));
	assert_non_null(strstr(p->ops[0].detail, "offload off -> mac"));
	assert_int_equal(p->ops[1].link.macsec.offload, FCTL_OFFLOAD_MAC);
	assert_int_equal(fctl_plan_count_disruptive(p), 1);
	fctl_plan_free(p);
}

static void test_plan_vid_drags_macsec(void **state)
{
	struct knobs from = base, to = base;
	struct fctl_plan *p;
	static const struct op_want want[] = {
		{ FCTL_OP_LINK_DEL, "m0", true },    { FCTL_OP_LINK_DEL, "v0", true },
		{ FCTL_OP_LINK_ADD, "v0", true },    { FCTL_OP_LINK_ADD, "m0", true },
		{ FCTL_OP_RXSC_ADD, "m0", false },   { FCTL_OP_RXSA_ADD, "m0", false },
		{ FCTL_OP_TXSA_ADD, "m0", false },   { FCTL_OP_LINK_UP, "v0", false },
		{ FCTL_OP_LINK_UP, "m0", false },    { FCTL_OP_ADDR_ADD, "m0", false },
	};

	/* fixed names: the VLAN keeps its name, its id changes, the MACsec link above must
	 * go down and come back with it */
	from.ifname = to.ifname = ", ifname: { vlan: v0, macsec: m0 }";
	to.vid = 200;
	p = plan(&from, &to, "h1");
	expect_ops(p, want, FCTL_ARRAY_SIZE(want));
	assert_non_null(strstr(p->ops[1].detail, "vid 100 -> 200"));
	assert_non_null(strstr(p->ops[0].detail, "parent v0 is recreated"));
	assert_int_equal(p->ops[2].link.vid, 200);
	fctl_plan_free(p);

	/* default names follow the id: old pair deleted (MACsec first), new pair created */
	to = base;
	to.vid = 200;
	p = plan(&base, &to, "h1");
	assert_true(index_of(p, FCTL_OP_LINK_DEL, "ms100") < index_of(p, FCTL_OP_LINK_DEL, "eth0.100"));
	assert_true(index_of(p, FCTL_OP_LINK_DEL, "eth0.100") < index_of(p, FCTL_OP_LINK_ADD, "eth0.200"));
	assert_true(index_of(p, FCTL_OP_LINK_ADD, "eth0.200") < index_of(p, FCTL_OP_LINK_ADD, "ms200"));
	fctl_plan_free(p);
}

static void test_plan_removed_link(void **state)
{
	struct knobs to = base;
	struct fctl_plan *p;
	/* a protected link's end is disruptive: the SecY and the VLAN it ran on */
	static const struct op_want want[] = {
		{ FCTL_OP_LINK_DEL, "ms100", true },
		{ FCTL_OP_LINK_DEL, "eth0.100", true },
	};

	/* a cleartext link goes: one delete (its address goes with it) */
	to.second_link = false;
	p = plan(&base, &to, "h1");
	assert_int_equal(p->n_ops, 1);
	assert_int_equal(p->ops[0].kind, FCTL_OP_LINK_DEL);
	assert_string_equal(p->ops[0].ifname, "eth1.300");
	assert_false(p->ops[0].disruptive); /* removing what is no longer wanted */
	fctl_plan_free(p);

	/* the protected link goes: MACsec before the VLAN under it */
	to = base;
	to.no_first_link = true;
	p = plan(&base, &to, "h1");
	expect_ops(p, want, FCTL_ARRAY_SIZE(want));
	assert_int_equal(fctl_plan_count_disruptive(p), 2);
	assert_string_equal(p->ops[0].detail, "a protected link removed");
	fctl_plan_free(p);

	/* to nothing at all */
	{
		struct fctl_host_state *a = render(&base, "h2"), *none = fctl_host_state_new("h2");

		assert_int_equal(fctl_plan_compute(a, none, &p), 0);
		assert_int_equal(p->n_ops, 3);
		assert_true(index_of(p, FCTL_OP_LINK_DEL, "ms100") <
			    index_of(p, FCTL_OP_LINK_DEL, "eth0.100"));
		/* "hosts: []" against a profile with MACsec: not a routine change */
		assert_int_equal(fctl_plan_count_disruptive(p), 2);
		fctl_plan_free(p);
		assert_int_equal(fctl_plan_compute(a, NULL, &p), 0);
		assert_int_equal(p->n_ops, 3);
		fctl_plan_free(p);
		fctl_host_state_free(a);
		fctl_host_state_free(none);
	}
}

static void test_plan_key_change(void **state)
{
	struct knobs to = base;
	struct fctl_plan *p;
	static const struct op_want want[] = {
		{ FCTL_OP_TXSA_DEL, "ms100", true }, { FCTL_OP_RXSA_DEL, "ms100", true },
		{ FCTL_OP_RXSA_ADD, "ms100", true }, { FCTL_OP_TXSA_ADD, "ms100", true },
	};

	to.key_version = 2;
	p = plan(&base, &to, "h1");
	expect_ops(p, want, FCTL_ARRAY_SIZE(want));
	assert_non_null(strstr(p->ops[0].detail, "(replace)"));
	assert_memory_not_equal(p->ops[0].sa.keyid, p->ops[3].sa.keyid, FCTL_KEYID_LEN);
	assert_int_equal(fctl_plan_count_disruptive(p), 2); /* the two deletes */
	fctl_plan_free(p);
}

/* A tiny strict JSON checker: enough to prove the output parses. */
static const char *js_value(const char *s, int depth);

static const char *js_ws(const char *s)
{
	while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
		s++;
	return s;
}

static const char *js_string(const char *s)
{
	if (*s++ != '"')
		return NULL;
	while (*s && *s != '"') {
		if ((unsigned char)*s < 0x20)
			return NULL;
		if (*s == '\\') {
			s++;
			if (*s == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
						return NULL;
				s += 4;
			} else if (!*s || !strchr("\"\\/bfnrt", *s)) {
				return NULL;
			}
		}
		s++;
	}
	return *s == '"' ? s + 1 : NULL;
}

static const char *js_number(const char *s)
{
	const char *start = s;

	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return NULL;
	if (*s == '.') {
		s++;
		if (!(*s >= '0' && *s <= '9'))
			return NULL;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return s > start ? s : NULL;
}

static const char *js_seq(const char *s, char close, bool obj, int depth)
{
	s = js_ws(s + 1);
	if (*s == close)
		return s + 1;
	for (;;) {
		if (obj) {
			s = js_string(js_ws(s));
			if (!s)
				return NULL;
			s = js_ws(s);
			if (*s++ != ':')
				return NULL;
		}
		s = js_value(s, depth + 1);
		if (!s)
			return NULL;
		s = js_ws(s);
		if (*s == close)
			return s + 1;
		if (*s++ != ',')
			return NULL;
	}
}

static const char *js_value(const char *s, int depth)
{
	if (depth > 64)
		return NULL;
	s = js_ws(s);
	switch (*s) {
	case '{':
		return js_seq(s, '}', true, depth);
	case '[':
		return js_seq(s, ']', false, depth);
	case '"':
		return js_string(s);
	case 't':
		return strncmp(s, "true", 4) == 0 ? s + 4 : NULL;
	case 'f':
		return strncmp(s, "false", 5) == 0 ? s + 5 : NULL;
	case 'n':
		return strncmp(s, "null", 4) == 0 ? s + 4 : NULL;
	default:
		return js_number(s);
	}
}

static bool json_ok(const char *s)
{
	const char *e = s ? js_value(s, 0) : NULL;

	return e && *js_ws(e) == '\0';
}

static void test_json_checker(void **state)
{
	assert_true(json_ok("{\"a\":[1,2.5,-3,true,false,null,\"x\\n\\u0001\"],\"b\":{}}"));
	assert_false(json_ok("{\"a\":1,}"));
	assert_false(json_ok("[1 2]"));
	assert_false(json_ok("{\"a\" 1}"));
	assert_false(json_ok("\"\x01\""));
	assert_false(json_ok("{} x"));
}

static void test_json_output(void **state)
{
	struct knobs to = base;
	struct fctl_plan *p;
	struct fctl_buf b = { 0 };
	struct fctl_host_state *hs;

	p = plan(NULL, &base, "h1");
	assert_int_equal(fctl_plan_to_json(p, &b), 0);
	assert_true(json_ok(b.data));
	assert_non_null(strstr(b.data, "\"host\":\"h1\""));
	assert_non_null(strstr(b.data, "{\"op\":\"create-link\",\"ifname\":\"eth0.100\""));
	assert_non_null(strstr(b.data, "\"summary\":{\"ops\":11,\"disruptive\":0}"));
	fctl_plan_free(p);
	fctl_buf_reset(&b);

	to.cipher = "gcm-aes-xpn-256";
	p = plan(&base, &to, "h2");
	assert_int_equal(fctl_plan_to_json(p, &b), 0);
	assert_true(json_ok(b.data));
	assert_non_null(strstr(b.data, "\"disruptive\":true"));
	fctl_buf_reset(&b);
	assert_int_equal(fctl_plan_to_text(p, &b, false), 0);
	assert_non_null(strstr(b.data, "[disruptive]"));
	assert_non_null(strstr(b.data, "1 disruptive"));
	fctl_plan_free(p);
	fctl_buf_reset(&b);

	hs = render(&to, "h1");
	assert_int_equal(fctl_host_state_to_json(hs, &b), 0);
	assert_true(json_ok(b.data));
	fctl_buf_reset(&b);
	{
		struct fctl_host_state *old = render(&base, "h1");

		assert_int_equal(fctl_state_diff_json(old, hs, &b), 1);
		assert_true(json_ok(b.data));
		assert_non_null(strstr(b.data, "\"change\":\"changed\""));
		fctl_buf_reset(&b);
		assert_int_equal(fctl_state_diff_text(old, hs, &b, false), 1);
		assert_non_null(strstr(b.data, "~ macsec ms100"));
		assert_non_null(strstr(b.data, "-   cipher gcm-aes-128"));
		assert_non_null(strstr(b.data, "+   cipher gcm-aes-xpn-256"));
		fctl_buf_reset(&b);
		assert_int_equal(fctl_state_diff_text(old, old, &b, false), 0);
		fctl_host_state_free(old);
	}
	fctl_host_state_free(hs);
	fctl_buf_release(&b);
}

/* A live XPN state as the kernel dumps it: SSCI yes, salt no. Neither drift nor a plan
 * may come of the missing salt; a wrong SSCI is both (and replaces the SA). */
static void strip_salt(struct fctl_host_state *hs)
{
	for (size_t i = 0; i < hs->n_links; i++) {
		struct fctl_macsec *m = &hs->links[i].macsec;

		for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
			m->txsa[an].has_salt = false;
			memset(m->txsa[an].salt, 0, FCTL_SALT_LEN);
			for (size_t j = 0; j < m->n_rxsc; j++) {
				m->rxsc[j].sa[an].has_salt = false;
				memset(m->rxsc[j].sa[an].salt, 0, FCTL_SALT_LEN);
			}
		}
	}
}

static void test_xpn_live_state(void **state)
{
	struct knobs x = base;
	struct fctl_host_state *want, *live;
	struct fctl_link *ml;
	struct fctl_plan *p = NULL;
	struct fctl_buf b = { 0 };
	static const struct op_want replace[] = {
		{ FCTL_OP_TXSA_DEL, "ms100", true },
		{ FCTL_OP_TXSA_ADD, "ms100", true },
	};

	(void)state;
	x.cipher = "gcm-aes-xpn-128";
	want = render(&x, "h1");
	live = render(&x, "h1");
	strip_salt(live);
	ml = (struct fctl_link *)fctl_host_state_find(live, "ms100");
	assert_non_null(ml);
	assert_int_equal(ml->macsec.txsa[0].ssci, 1);
	assert_int_equal(fctl_state_diff_text(live, want, &b, false), 0);
	assert_int_equal(fctl_plan_compute(live, want, &p), 0);
	assert_int_equal(p->n_ops, 0);
	fctl_plan_free(p);
	p = NULL;
	/* show --json reports the SSCI the kernel dumped, salt or none */
	assert_int_equal(fctl_host_state_to_json(live, &b), 0);
	assert_non_null(strstr(b.data, "\"ssci\":1}"));
	assert_non_null(strstr(b.data, "\"ssci\":2}"));
	fctl_buf_reset(&b);
	/* the SSCI of the peer's: drift, shown on both sides, and a replacement */
	ml->macsec.txsa[0].ssci = 2;
	fctl_buf_reset(&b);
	assert_int_equal(fctl_state_diff_text(live, want, &b, false), 1);
	assert_non_null(strstr(b.data, " ssci 2\n"));
	assert_non_null(strstr(b.data, " ssci 1\n"));
	assert_int_equal(fctl_plan_compute(live, want, &p), 0);
	expect_ops(p, replace, FCTL_ARRAY_SIZE(replace));
	fctl_plan_free(p);
	fctl_host_state_free(want);
	fctl_host_state_free(live);
	fctl_buf_release(&b);
}

/* The carrier of a SecY holds no IPv6 address, link-local included. A carrier made
 * before that (address generation on, its fe80:: address read back) converges in place:
 * the mode changes and its addresses go, nothing is recreated. */
static void test_carrier_addrgen(void **state)
{
	struct fctl_host_state *want = render(&base, "h1"), *live = render(&base, "h1");
	struct fctl_link *lv, *lm, *lc;
	struct fctl_plan *p = NULL, *back = NULL;
	struct fctl_buf b = { 0 };
	size_t used;
	struct fctl_host_state *again = NULL;
	static const struct op_want upgrade[] = {
		{ FCTL_OP_ADDR_DEL, "eth0.100", false },
		{ FCTL_OP_LINK_CHANGE, "eth0.100", false },
	};
	static const struct op_want undo[] = {
		{ FCTL_OP_LINK_CHANGE, "eth0.100", false },
		{ FCTL_OP_ADDR_ADD, "eth0.100", false },
	};

	(void)state;
	/* rendered: only the carrier has a mode, and it is none */
	lv = (struct fctl_link *)fctl_host_state_find(want, "eth0.100");
	assert_true(lv->has_addrgen);
	assert_int_equal(lv->addrgen, FCTL_ADDRGEN_NONE);
	assert_false(fctl_host_state_find(want, "ms100")->has_addrgen);
	assert_false(fctl_host_state_find(want, "eth1.300")->has_addrgen); /* cleartext */
	/* a fresh carrier is created with it, so the create op sets it before set-up */
	p = plan(NULL, &base, "h1");
	assert_true(p->ops[index_of(p, FCTL_OP_LINK_ADD, "eth0.100")].link.has_addrgen);
	assert_int_equal(p->ops[index_of(p, FCTL_OP_LINK_ADD, "eth0.100")].link.addrgen,
			 FCTL_ADDRGEN_NONE);
	assert_false(p->ops[index_of(p, FCTL_OP_LINK_ADD, "ms100")].link.has_addrgen);
	assert_false(p->ops[index_of(p, FCTL_OP_LINK_ADD, "eth1.300")].link.has_addrgen);
	assert_int_equal(fctl_plan_to_text(p, &b, false), 0);
	assert_non_null(strstr(b.data, "create vlan eth0.100 on eth0 (802.1q id 100, mtu 8032, "
				       "addrgenmode none)"));
	fctl_buf_reset(&b);
	assert_int_equal(fctl_plan_to_json(p, &b), 0);
	assert_non_null(strstr(b.data, "\"vid\":100,\"protocol\":\"802.1q\",\"mtu\":8032,"
				       "\"addrgenmode\":\"none\""));
	fctl_buf_reset(&b);
	fctl_plan_free(p);

	/* live as the kernel reports it: every link has a mode; the carrier converged */
	lv = (struct fctl_link *)fctl_host_state_find(live, "eth0.100");
	lm = (struct fctl_link *)fctl_host_state_find(live, "ms100");
	lc = (struct fctl_link *)fctl_host_state_find(live, "eth1.300");
	lm->has_addrgen = lc->has_addrgen = true;
	lm->addrgen = lc->addrgen = FCTL_ADDRGEN_EUI64;
	assert_int_equal(fctl_plan_compute(live, want, &p), 0);
	assert_int_equal(p->n_ops, 0);
	fctl_plan_free(p);
	assert_int_equal(fctl_state_diff_text(live, want, &b, false), 0);
	fctl_buf_reset(&b);

	/* an old carrier: eui64 and its link-local address */
	lv->addrgen = FCTL_ADDRGEN_EUI64;
	assert_int_equal(fctl_link_add_addr(lv, "fe80::5054:ff:fe00:100/64"), 0);
	assert_int_equal(fctl_plan_compute(live, want, &p), 0);
	expect_ops(p, upgrade, FCTL_ARRAY_SIZE(upgrade));
	assert_string_equal(p->ops[0].addr, "fe80::5054:ff:fe00:100/64");
	assert_int_equal(p->ops[1].changes, FCTL_CHG_ADDRGEN);
	assert_int_equal(p->ops[1].link.addrgen, FCTL_ADDRGEN_NONE);
	assert_string_equal(p->ops[1].detail, "addrgenmode eui64 -> none");
	assert_int_equal(fctl_plan_count_disruptive(p), 0);
	assert_int_equal(fctl_plan_to_json(p, &b), 0);
	assert_non_null(strstr(b.data, "\"addrgenmode\":\"none\""));
	fctl_buf_reset(&b);
	fctl_plan_free(p);
	/* diff shows it too */
	assert_int_equal(fctl_state_diff_text(live, want, &b, false), 1);
	assert_non_null(strstr(b.data, "addrgenmode none"));
	assert_non_null(strstr(b.data, "fe80::5054:ff:fe00:100/64"));
	fctl_buf_reset(&b);
	/* and a rollback to that prior state puts both back (the prior state is exact) */
	assert_int_equal(fctl_plan_compute(want, live, &back), 0);
	lv = (struct fctl_link *)fctl_host_state_find(want, "eth0.100");
	expect_ops(back, undo, FCTL_ARRAY_SIZE(undo));
	assert_int_equal(back->ops[0].link.addrgen, FCTL_ADDRGEN_EUI64);
	fctl_plan_free(back);

	/* a link without IPv6 (no mode reported) generates nothing: nothing to change */
	lv = (struct fctl_link *)fctl_host_state_find(live, "eth0.100");
	lv->has_addrgen = false;
	assert_int_equal(fctl_plan_compute(live, want, &p), 0);
	assert_int_equal(p->n_ops, 1);
	assert_int_equal(p->ops[0].kind, FCTL_OP_ADDR_DEL);
	fctl_plan_free(p);

	/* the journal keeps the mode; a journal without it loads as "not known" */
	lv->has_addrgen = true;
	lv->addrgen = FCTL_ADDRGEN_STABLE_PRIVACY;
	assert_int_equal(fctl_host_state_save(live, &b), 0);
	assert_non_null(strstr(b.data, " addrgen=stable_secret "));
	assert_int_equal(fctl_host_state_load(b.data, &used, &again), 0);
	assert_true(fctl_host_state_find(again, "eth0.100")->has_addrgen);
	assert_int_equal(fctl_host_state_find(again, "eth0.100")->addrgen,
			 FCTL_ADDRGEN_STABLE_PRIVACY);
	fctl_host_state_free(again);
	again = NULL;
	{
		static const char old[] = "state h1\nlink vlan eth0.100 parent=eth0 mtu=1500 up=1 "
					  "vid=100 proto=802.1q\nstate-end\n";

		assert_int_equal(fctl_host_state_load(old, &used, &again), 0);
		assert_false(fctl_host_state_find(again, "eth0.100")->has_addrgen);
		fctl_host_state_free(again);
	}
	fctl_buf_reset(&b);
	assert_int_equal(fctl_host_state_to_json(want, &b), 0);
	assert_non_null(strstr(b.data, "\"up\":true,\"addrgenmode\":\"none\",\"vid\":100"));
	fctl_buf_release(&b);
	fctl_host_state_free(want);
	fctl_host_state_free(live);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_carrier_addrgen),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_plan_from_nothing),
		cmocka_unit_test(test_plan_same_twice),
		cmocka_unit_test(test_xpn_live_state),
		cmocka_unit_test(test_plan_window_in_place),
		cmocka_unit_test(test_plan_cipher_recreates),
		cmocka_unit_test(test_plan_vid_drags_macsec),
		cmocka_unit_test(test_plan_removed_link),
		cmocka_unit_test(test_plan_key_change),
		cmocka_unit_test(test_json_checker),
		cmocka_unit_test(test_json_output),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
