// SPDX-License-Identifier: MIT
/*
 * Unit tests of probe_encrypted_delta (probes/macsec_delta.c): the encryption counter of
 * a probe run on a static SecY (one SA), across a rotation (the AN moves), across MKA
 * rekeys (SAs installed during the run, an AN reused for a new SAK, the old SA gone), and
 * with no transmit SA left (the TX SC's counter, 0 when it went backwards).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "probe.h"

static void sa(struct fctl_macsec_stats *s, unsigned an, uint32_t enc)
{
	s->txsa[an].present = true;
	s->txsa[an].an = (uint8_t)an;
	s->txsa[an].out_pkts_encrypted = enc;
}

static void test_static(void **state)
{
	struct fctl_macsec_stats b, a;

	(void)state;
	memset(&b, 0, sizeof(b));
	memset(&a, 0, sizeof(a));
	sa(&b, 0, 1000);
	sa(&a, 0, 1500);
	b.out_pkts_encrypted = 1000;
	a.out_pkts_encrypted = 1500;
	assert_int_equal(probe_encrypted_delta(&b, &a), 500);
	/* nothing sent: nothing counted (the verdict fails on it) */
	assert_int_equal(probe_encrypted_delta(&b, &b), 0);
}

/* An MKA rekey mid-run: AN 1 installed (from zero), AN 0 still there, then gone. */
static void test_mka_rekey(void **state)
{
	struct fctl_macsec_stats b, a;

	(void)state;
	memset(&b, 0, sizeof(b));
	memset(&a, 0, sizeof(a));
	sa(&b, 0, 70);
	sa(&a, 0, 100); /* 30 more under the old SAK */
	sa(&a, 1, 400); /* 400 under the new one */
	assert_int_equal(probe_encrypted_delta(&b, &a), 430);
	/* the old SA retired before the run ended: its 30 packets of the run cannot be
	 * read any more, so the count is low (never high), and still not 0 */
	memset(&a, 0, sizeof(a));
	sa(&a, 1, 400);
	assert_int_equal(probe_encrypted_delta(&b, &a), 400);
}

/* The AN reused for a new SAK (after four rekeys, or a new MKA session): its counter is
 * below where it started, so it counts from zero, not as a wrap to a huge number. */
static void test_an_reused(void **state)
{
	struct fctl_macsec_stats b, a;

	(void)state;
	memset(&b, 0, sizeof(b));
	memset(&a, 0, sizeof(a));
	sa(&b, 2, 90000);
	sa(&a, 2, 25);
	assert_int_equal(probe_encrypted_delta(&b, &a), 25);
}

static void test_no_sa_left(void **state)
{
	struct fctl_macsec_stats b, a;

	(void)state;
	memset(&b, 0, sizeof(b));
	memset(&a, 0, sizeof(a));
	b.out_pkts_encrypted = 10;
	a.out_pkts_encrypted = 75;
	assert_int_equal(probe_encrypted_delta(&b, &a), 65);
	/* the SecY was created again (counters from zero): nothing proven */
	b.out_pkts_encrypted = 100;
	a.out_pkts_encrypted = 5;
	assert_int_equal(probe_encrypted_delta(&b, &a), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static),
		cmocka_unit_test(test_mka_rekey),
		cmocka_unit_test(test_an_reused),
		cmocka_unit_test(test_no_sa_left),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
