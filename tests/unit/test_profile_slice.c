// SPDX-License-Identifier: MIT
/*
 * Unit tests of a host's slice of a profile (fctl/profile_slice.h): which lines it
 * keeps, that each host renders from its slice exactly as from the whole profile,
 * and the layouts it refuses to cut.
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
#include "fctl/profile_slice.h"

/* Four hosts in a line h1 - h2 - h3 - h4, plus h5 with no link. */
static const char FLEET[] =
	"# fleet: a comment before the first key\n"
	"schema: 1\n"
	"profile:\n"
	"  name: fleet\n"
	"  version: 7\n"
	"macsec:\n"
	"  gcm:\n"
	"    cipher: gcm-aes-128\n"
	"    replay_protect: true\n"
	"    replay_window: 0\n"
	"    key: { backend: file, id: keys/none.key }\n"
	"hosts:\n"
	"  # the hosts\n"
	"  - name: h1\n"
	"    ports: [{ name: eth0, mac: \"52:54:00:00:00:01\" }]\n"
	"  - name: h2\n"
	"    ports:\n"
	"      - { name: eth0, mac: \"52:54:00:00:00:02\" }\n"
	"      - { name: eth1, mac: \"52:54:00:00:00:12\" }\n"
	"  -   name: h3\n"
	"      ports: [{ name: eth0, mac: \"52:54:00:00:00:03\" }, { name: eth1, mac: \"52:54:00:00:00:13\" }]\n"
	"  - name: h4\n"
	"    ports: [{ name: eth0, mac: \"52:54:00:00:00:04\" }]\n"
	"  - name: h5\n"
	"    ports: [{ name: eth0 }]\n"
	"links:\n"
	"  - name: h1-h2\n"
	"    a: h1:eth0\n"
	"    b: h2:eth0\n"
	"    vlans:\n"
	"      - { id: 100, macsec: gcm, addresses: { h1: 10.0.12.1/24, h2: 10.0.12.2/24 } }\n"
	"  - name: h2-h3\n"
	"    a: h2:eth1\n"
	"    b: h3:eth0\n"
	"    vlans: [{ id: 101, macsec: gcm }]\n"
	"  - name: h3-h4\n"
	"    a: h3:eth1\n"
	"    b: h4:eth0\n"
	"    vlans: [{ id: 102 }]\n"
	"slo:\n"
	"  max_loss: 0\n";

static struct fctl_profile *load(const char *text)
{
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;

	assert_int_equal(fctl_profile_parse("mem/fleet.yaml", (const unsigned char *)text,
					    strlen(text), &d, &p),
			 0);
	fctl_profile_validate(p, &d);
	if (d.n_errors) {
		struct fctl_buf b = { 0 };

		fctl_diags_to_text(&d, &b, false);
		fail_msg("the test profile does not validate:\n%s", b.data);
	}
	fctl_diags_release(&d);
	return p;
}

static struct fctl_profile_slicer *slicer(const char *text, struct fctl_profile **p)
{
	struct fctl_profile_slicer *s = NULL;

	*p = load(text);
	assert_int_equal(fctl_profile_slicer_new((const unsigned char *)text, strlen(text), *p, &s),
			 0);
	return s;
}

/* h1's slice: every line but the entries of h3, h4, h5 and the links without h1. */
static void test_slice_lines(void **state)
{
	struct fctl_profile *p;
	struct fctl_profile_slicer *s = slicer(FLEET, &p);
	struct fctl_buf b = { 0 };
	const char *want =
		"# fleet: a comment before the first key\n"
		"schema: 1\n"
		"profile:\n"
		"  name: fleet\n"
		"  version: 7\n"
		"macsec:\n"
		"  gcm:\n"
		"    cipher: gcm-aes-128\n"
		"    replay_protect: true\n"
		"    replay_window: 0\n"
		"    key: { backend: file, id: keys/none.key }\n"
		"hosts:\n"
		"  # the hosts\n"
		"  - name: h1\n"
		"    ports: [{ name: eth0, mac: \"52:54:00:00:00:01\" }]\n"
		"  - name: h2\n"
		"    ports:\n"
		"      - { name: eth0, mac: \"52:54:00:00:00:02\" }\n"
		"      - { name: eth1, mac: \"52:54:00:00:00:12\" }\n"
		"links:\n"
		"  - name: h1-h2\n"
		"    a: h1:eth0\n"
		"    b: h2:eth0\n"
		"    vlans:\n"
		"      - { id: 100, macsec: gcm, addresses: { h1: 10.0.12.1/24, h2: 10.0.12.2/24 } }\n"
		"slo:\n"
		"  max_loss: 0\n";

	(void)state;
	assert_int_equal(fctl_profile_slicer_host(s, "h1", &b), 1);
	assert_string_equal(b.data, want);
	/* appended: what the buffer held stays in front */
	fctl_buf_reset(&b);
	fctl_buf_puts(&b, "X");
	assert_int_equal(fctl_profile_slicer_host(s, "h5", &b), 0);
	assert_non_null(strstr(b.data, "  - name: h5\n    ports: [{ name: eth0 }]\nlinks:\nslo:"));
	assert_int_equal(b.data[0], 'X');
	assert_null(strstr(b.data, "name: h1"));
	fctl_buf_release(&b);
	fctl_profile_slicer_free(s);
	fctl_profile_free(p);
}

/* The middle host: both neighbours and both of its links, in the profile's order. */
static void test_slice_peers(void **state)
{
	struct fctl_profile *p;
	struct fctl_profile_slicer *s = slicer(FLEET, &p);
	struct fctl_buf b = { 0 };
	char *h1, *h2, *h3, *l12, *l23;

	(void)state;
	assert_int_equal(fctl_profile_slicer_host(s, "h2", &b), 2);
	h1 = strstr(b.data, "- name: h1\n");
	h2 = strstr(b.data, "- name: h2\n");
	h3 = strstr(b.data, "-   name: h3\n");
	l12 = strstr(b.data, "- name: h1-h2\n");
	l23 = strstr(b.data, "- name: h2-h3\n");
	assert_true(h1 && h2 && h3 && l12 && l23);
	assert_true(h1 < h2 && h2 < h3 && h3 < l12 && l12 < l23);
	assert_null(strstr(b.data, "name: h4"));
	assert_null(strstr(b.data, "h3-h4"));
	fctl_buf_release(&b);
	fctl_profile_slicer_free(s);
	fctl_profile_free(p);
}

/* What each host is asked to be is the same from its slice as from the whole profile. */
static void test_slice_renders_same(void **state)
{
	struct fctl_profile *p;
	struct fctl_profile_slicer *s = slicer(FLEET, &p);

	(void)state;
	for (size_t i = 0; i < p->n_hosts; i++) {
		struct fctl_host_state *whole = NULL, *part = NULL;
		struct fctl_profile *q;
		struct fctl_plan *plan = NULL;
		struct fctl_buf b = { 0 };

		assert_true(fctl_profile_slicer_host(s, p->hosts[i].name, &b) >= 0);
		q = load(b.data);
		assert_int_equal(fctl_profile_render_host(p, p->hosts[i].name, &whole), 0);
		assert_int_equal(fctl_profile_render_host(q, p->hosts[i].name, &part), 0);
		assert_int_equal(fctl_plan_compute(whole, part, &plan), 0);
		assert_int_equal(plan->n_ops, 0);
		/* and it is not the whole profile, except where the host needs it all */
		assert_true(b.len < strlen(FLEET));
		fctl_plan_free(plan);
		fctl_host_state_free(whole);
		fctl_host_state_free(part);
		fctl_profile_free(q);
		fctl_buf_release(&b);
	}
	fctl_profile_slicer_free(s);
	fctl_profile_free(p);
}

static void test_slice_unknown_host(void **state)
{
	struct fctl_profile *p;
	struct fctl_profile_slicer *s = slicer(FLEET, &p);
	struct fctl_buf b = { 0 };

	(void)state;
	assert_int_equal(fctl_profile_slicer_host(s, "h9", &b), -ENOENT);
	assert_int_equal(b.len, 0);
	fctl_buf_release(&b);
	fctl_profile_slicer_free(s);
	fctl_profile_free(p);
}

/* Layouts not cut by lines: the caller is told, and sends the whole profile. */
static void test_slice_refused(void **state)
{
	static const char *const texts[] = {
		/* hosts as a flow sequence */
		"schema: 1\nprofile: { name: f, version: 1 }\n"
		"hosts: [{ name: h1, ports: [{ name: eth0 }] }, { name: h2, ports: [{ name: eth0 }] }]\n",
		/* an entry whose "- " stands alone on its line */
		"schema: 1\nprofile: { name: f, version: 1 }\nhosts:\n"
		"  -\n    name: h1\n    ports: [{ name: eth0 }]\n"
		"  - name: h2\n    ports: [{ name: eth0 }]\n",
		/* a top-level key after a document marker on the same line */
		"--- schema: 1\nprofile: { name: f, version: 1 }\nhosts:\n"
		"  - name: h1\n    ports: [{ name: eth0 }]\n",
	};

	size_t tried = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct fctl_diags d = { 0 };
		struct fctl_profile *p = NULL;
		struct fctl_profile_slicer *s = NULL;

		if (fctl_profile_parse("f.yaml", (const unsigned char *)texts[i], strlen(texts[i]),
				       &d, &p) < 0 || d.n_errors) {
			fctl_diags_release(&d);
			fctl_profile_free(p);
			continue; /* not even a profile: nothing to cut (the third, by libyaml) */
		}
		fctl_profile_validate(p, &d);
		assert_int_equal(d.n_errors, 0);
		assert_int_equal(fctl_profile_slicer_new((const unsigned char *)texts[i],
							 strlen(texts[i]), p, &s),
				 -ENOTSUP);
		assert_null(s);
		tried++;
		fctl_diags_release(&d);
		fctl_profile_free(p);
	}
	assert_true(tried >= 2); /* the first two are profiles */
}

/* Bytes that are not the profile's (a host renamed, two links swapped): refused, not
 * cut wrongly. */
static void test_slice_mismatch(void **state)
{
	struct fctl_profile *p = load(FLEET);
	struct fctl_profile_slicer *s = NULL;
	char *other = strdup(FLEET), *a, *b, *tmp;
	size_t la, lb;

	(void)state;
	memcpy(strstr(other, "name: h2\n"), "name: hX\n", 9);
	assert_int_equal(fctl_profile_slicer_new((const unsigned char *)other, strlen(other), p, &s),
			 -EINVAL);
	assert_null(s);
	/* links h2-h3 and h3-h4 swapped, same length */
	strcpy(other, FLEET);
	a = strstr(other, "  - name: h2-h3\n");
	b = strstr(other, "  - name: h3-h4\n");
	la = (size_t)(b - a);
	lb = (size_t)(strstr(other, "slo:\n") - b);
	tmp = malloc(la + lb);
	assert_non_null(tmp);
	memcpy(tmp, b, lb);
	memcpy(tmp + lb, a, la);
	memcpy(a, tmp, la + lb);
	free(tmp);
	assert_int_equal(fctl_profile_slicer_new((const unsigned char *)other, strlen(other), p, &s),
			 -EINVAL);
	assert_null(s);
	fctl_profile_slicer_free(NULL);
	free(other);
	fctl_profile_free(p);
}

/* A line break libyaml counts and "\n" does not (a lone CR, NEL, LS, PS) would put
 * every cut after it a line off: such a text is not cut. */
static void test_slice_other_breaks(void **state)
{
	static const char *const breaks[] = { "\r", "\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9" };

	(void)state;
	for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
		struct fctl_diags d = { 0 };
		struct fctl_profile *p = NULL;
		struct fctl_profile_slicer *s = NULL;
		char text[4096];

		snprintf(text, sizeof(text), "%.*s# a note%s# more\n%s",
			 (int)(strstr(FLEET, "  - name: h1\n") - FLEET), FLEET, breaks[i],
			 strstr(FLEET, "  - name: h1\n"));
		assert_int_equal(fctl_profile_parse("f.yaml", (const unsigned char *)text,
						    strlen(text), &d, &p),
				 0);
		fctl_profile_validate(p, &d);
		assert_int_equal(d.n_errors, 0);
		assert_int_equal(fctl_profile_slicer_new((const unsigned char *)text, strlen(text), p,
							 &s),
				 -ENOTSUP);
		assert_null(s);
		fctl_diags_release(&d);
		fctl_profile_free(p);
	}
}

/* A lone CR where counting by "\n" alone would cut host c's links wrong and every
 * cut would still start on a "- " line (the quoted name's second line looks like an
 * entry): refused at once, not handed to the checks. */
static void test_slice_lone_cr_miscut(void **state)
{
	static const char text[] =
		"schema: 1\nprofile: { name: f, version: 1 }\nhosts:\n"
		"  - { name: a, ports: [{ name: e0 }, { name: e1 }, { name: e2 }] }\n"
		"  - { name: b, ports: [{ name: e0 }, { name: e1 }, { name: e2 }] }\n"
		"  - { name: c, ports: [{ name: e0 }, { name: e1 }] }\n"
		"  - { name: d, ports: [{ name: e0 }] }\n"
		"  - { name: e, ports: [{ name: e0 }] }\n"
		"links:\n"
		"  - { name: ab0, a: \"a:e0\", b: \"b:e0\", vlans: [{ id: 10 }] }\n"
		"  # note\r# more\n"
		"  - { name: ac1, a: \"a:e1\", b: \"c:e0\", vlans: [{ id: 11 }] }\n"
		"  - { name: bc1, a: \"b:e1\", b: \"c:e1\", vlans: [{ id: 12 }] }\n"
		"  - { name: ab2, a: \"a:e2\", b: \"b:e2\", vlans: [{ id: 13 }] }\n"
		"  - { name: \"de\n  - x\", a: \"d:e0\", b: \"e:e0\", vlans: [{ id: 14 }] }\n";
	struct fctl_profile *p = load(text);
	struct fctl_profile_slicer *s = NULL;

	(void)state;
	assert_int_equal(fctl_profile_slicer_new((const unsigned char *)text, strlen(text), p, &s),
			 -ENOTSUP);
	assert_null(s);
	fctl_profile_free(p);
}

/* "\r\n" line ends are cut like "\n" ones, and the parts keep them. */
static void test_slice_crlf(void **state)
{
	struct fctl_profile *p;
	struct fctl_profile_slicer *s;
	struct fctl_buf crlf = { 0 }, b = { 0 };

	(void)state;
	for (const char *c = FLEET; *c; c++) {
		if (*c == '\n')
			fctl_buf_putc(&crlf, '\r');
		fctl_buf_putc(&crlf, *c);
	}
	s = slicer(crlf.data, &p);
	assert_int_equal(fctl_profile_slicer_host(s, "h4", &b), 1);
	assert_non_null(strstr(b.data, "  - name: h3-h4\r\n    a: h3:eth1\r\n"));
	assert_null(strstr(b.data, "name: h1"));
	assert_null(strstr(b.data, "name: h2"));
	fctl_buf_release(&b);
	fctl_buf_release(&crlf);
	fctl_profile_slicer_free(s);
	fctl_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slice_lines),	    cmocka_unit_test(test_slice_peers),
		cmocka_unit_test(test_slice_renders_same), cmocka_unit_test(test_slice_unknown_host),
		cmocka_unit_test(test_slice_refused),	    cmocka_unit_test(test_slice_mismatch),
		cmocka_unit_test(test_slice_other_breaks), cmocka_unit_test(test_slice_crlf),
		cmocka_unit_test(test_slice_lone_cr_miscut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
