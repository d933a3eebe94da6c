// SPDX-License-Identifier: MIT
/*
 * Unit tests of the probe statistics (fctl_stats) and of the probe's verdicts,
 * reports and wire form (fctl_probecore): hand-computed vectors, table-driven.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fctl/stats.h"
#include "probe.h"

#define EPS 1e-9
/* cmocka 1.1 has no assert_double_equal */
#define assert_double_equal(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

/* --- statistics ------------------------------------------------------------ */

static void test_deltas(void **state)
{
	const uint64_t post[] = { 100, 250, 300, 1000 };
	uint64_t s[3];

	assert_int_equal(fctl_stats_deltas(post, 4, s), 3);
	assert_int_equal(s[0], 150);
	assert_int_equal(s[1], 50);
	assert_int_equal(s[2], 700);
	assert_int_equal(fctl_stats_deltas(post, 1, s), -EINVAL);
}

/* 1..10 us shuffled, factor 1. perftest: m = 8 used; median (s[3] + s[4]) / 2 = 4.5;
 * t_max = s[8] = 9; avg 4.5; deviations cut to int: 3 2 1 0 0 -1 -2 -3 -> sqrt(28/8);
 * p99 index ceil(8 * .99) = 8. Exact: mean 5.5, population stdev sqrt(8.25), nearest
 * rank p50 = s[4] = 5, p90 = s[8] = 9, p99 = s[9] = 10. */
static void test_perftest_even(void **state)
{
	uint64_t s[] = { 7000, 3000, 10000, 1000, 5000, 9000, 2000, 8000, 4000, 6000 };
	struct fctl_stats_perftest pt;
	struct fctl_stats_exact ex;

	assert_int_equal(fctl_stats_compute(s, 10, 1, &pt, &ex), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(s[i], (uint64_t)(i + 1) * 1000); /* sorted in place */
	assert_int_equal(pt.n_samples, 10);
	assert_int_equal(pt.n_used, 8);
	assert_double_equal(pt.t_min_us, 1.0, EPS);
	assert_double_equal(pt.t_max_us, 9.0, EPS);
	assert_double_equal(pt.t_typical_us, 4.5, EPS);
	assert_double_equal(pt.t_avg_us, 4.5, EPS);
	assert_double_equal(pt.t_stdev_us, sqrt(28.0 / 8), EPS);
	assert_double_equal(pt.p99_us, 9.0, EPS);
	assert_double_equal(pt.p999_us, 9.0, EPS);

	assert_int_equal(ex.n, 10);
	assert_double_equal(ex.min_us, 1.0, EPS);
	assert_double_equal(ex.max_us, 10.0, EPS);
	assert_double_equal(ex.mean_us, 5.5, EPS);
	assert_double_equal(ex.stdev_us, sqrt(8.25), EPS);
	assert_double_equal(ex.p50_us, 5.0, EPS);
	assert_double_equal(ex.p90_us, 9.0, EPS);
	assert_double_equal(ex.p99_us, 10.0, EPS);
	assert_double_equal(ex.p999_us, 10.0, EPS);
	assert_double_equal(ex.p9999_us, 10.0, EPS);
	/* log2 buckets of ns: 1000 -> 9, 2000 -> 10, 3000 4000 -> 11, 5000..8000 -> 12, 9000 10000 -> 13 */
	assert_int_equal(ex.hist[9], 1);
	assert_int_equal(ex.hist[10], 1);
	assert_int_equal(ex.hist[11], 2);
	assert_int_equal(ex.hist[12], 4);
	assert_int_equal(ex.hist[13], 2);
	assert_int_equal(ex.hist[8] + ex.hist[14], 0);
}

/* Round trips of 2..10 us, factor 2 (send/write latency is half the round trip):
 * latencies 1..5 us. perftest: m = 3, odd: median s[1] = 2; t_max = s[3] = 4; avg 2;
 * deviations 1 0 -1 -> sqrt(2/3); p99 index ceil(2.97) = 3 -> 4. Exact: mean 3, stdev sqrt(2). */
static void test_perftest_odd_factor2(void **state)
{
	uint64_t s[] = { 10000, 2000, 8000, 4000, 6000 };
	struct fctl_stats_perftest pt;
	struct fctl_stats_exact ex;

	assert_int_equal(fctl_stats_compute(s, 5, 2, &pt, &ex), 0);
	assert_int_equal(pt.n_used, 3);
	assert_double_equal(pt.t_min_us, 1.0, EPS);
	assert_double_equal(pt.t_max_us, 4.0, EPS);
	assert_double_equal(pt.t_typical_us, 2.0, EPS);
	assert_double_equal(pt.t_avg_us, 2.0, EPS);
	assert_double_equal(pt.t_stdev_us, sqrt(2.0 / 3), EPS);
	assert_double_equal(pt.p99_us, 4.0, EPS);
	assert_double_equal(pt.p999_us, 4.0, EPS);
	assert_double_equal(ex.mean_us, 3.0, EPS);
	assert_double_equal(ex.stdev_us, sqrt(2.0), EPS);
	assert_double_equal(ex.p50_us, 3.0, EPS);
	assert_double_equal(ex.max_us, 5.0, EPS);
	assert_int_equal(ex.hist[9], 1);  /* 1000 ns */
	assert_int_equal(ex.hist[10], 1); /* 2000 */
	assert_int_equal(ex.hist[11], 2); /* 3000, 4000 */
	assert_int_equal(ex.hist[12], 1); /* 5000 */
}

/* perftest's median of an even count is the integer mean of the middle two:
 * 6 samples, m = 4, (s[1] + s[2]) / 2 = (2 + 3) / 2 = 2 ns. The two largest
 * (100, 200) never reach t_avg. */
static void test_perftest_integer_median(void **state)
{
	uint64_t s[] = { 200, 3, 1, 100, 4, 2 };
	struct fctl_stats_perftest pt;
	struct fctl_stats_exact ex;

	assert_int_equal(fctl_stats_compute(s, 6, 1, &pt, &ex), 0);
	assert_double_equal(pt.t_typical_us, 0.002, EPS);
	assert_double_equal(pt.t_avg_us, 0.0025, EPS);
	assert_double_equal(pt.t_max_us, 0.1, EPS);
	assert_double_equal(pt.t_stdev_us, 0.0, EPS); /* every deviation cuts to 0 */
	assert_true(ex.stdev_us > 0.07);	      /* the exact one does not */
}

/* p99 and p99.9 indexes on 1002 samples 1..1002 ns: m = 1000, t_max = s[1000] = 1001 ns,
 * ceil(990) = 990 -> 991 ns,
 * ceil(999) = 999 -> 1000 ns; exact nearest rank p99 = s[ceil(991.98) - 1] = s[991] = 992. */
static void test_perftest_index_large(void **state)
{
	uint64_t *s = calloc(1002, sizeof(*s));
	struct fctl_stats_perftest pt;
	struct fctl_stats_exact ex;

	assert_non_null(s);
	for (int i = 0; i < 1002; i++)
		s[i] = (uint64_t)(1002 - i);
	assert_int_equal(fctl_stats_compute(s, 1002, 1, &pt, &ex), 0);
	assert_double_equal(pt.p99_us, 0.991, EPS);
	assert_double_equal(pt.p999_us, 1.0, EPS);
	assert_double_equal(pt.t_max_us, 1.001, EPS); /* s[m] = s[1000] */
	assert_double_equal(ex.p99_us, 0.992, EPS);
	assert_double_equal(ex.p999_us, 1.001, EPS);
	assert_double_equal(ex.p9999_us, 1.002, EPS);
	free(s);
}

static void test_bad_input(void **state)
{
	uint64_t s[] = { 1, 2, 3 };
	struct fctl_stats_perftest pt;
	struct fctl_stats_exact ex;

	assert_int_equal(fctl_stats_compute(s, 2, 1, &pt, &ex), -EINVAL);
	assert_int_equal(fctl_stats_compute(s, 3, 0, &pt, &ex), -EINVAL);
	assert_int_equal(fctl_stats_compute(s, 3, 1, &pt, &ex), 0);
	assert_int_equal(pt.n_used, 1);
}

static void test_rank_bucket(void **state)
{
	static const struct {
		size_t n;
		double q;
		size_t want;
	} r[] = { { 1, 0.5, 0 }, { 100, 0.99, 98 }, { 1000, 0.999, 998 }, { 3, 0.9999, 2 },
		  { 10, 0.5, 4 }, { 10, 0.0, 0 } };
	static const struct {
		uint64_t ns;
		unsigned k;
	} b[] = { { 0, 0 }, { 1, 0 }, { 2, 1 }, { 3, 1 }, { 1023, 9 }, { 1024, 10 }, { UINT64_MAX, 63 } };

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(r); i++)
		assert_int_equal(fctl_stats_rank(r[i].n, r[i].q), r[i].want);
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(b); i++)
		assert_int_equal(fctl_stats_bucket(b[i].ns), b[i].k);
}

static void test_counter_classes(void **state)
{
	static const struct {
		const char *name;
		enum fctl_counter_class c;
	} t[] = {
		{ "out_of_seq_request", FCTL_COUNTER_LOSS },
		{ "rcvd_seq_err", FCTL_COUNTER_LOSS },
		{ "retry_exceeded_err", FCTL_COUNTER_LOSS },
		{ "out_of_sequence", FCTL_COUNTER_LOSS },
		{ "packet_seq_err", FCTL_COUNTER_LOSS },
		{ "implied_nak_seq_err", FCTL_COUNTER_LOSS },
		{ "duplicate_request", FCTL_COUNTER_RETRANS },
		{ "completer_retry_err", FCTL_COUNTER_RETRANS },
		{ "local_ack_timeout_err", FCTL_COUNTER_RETRANS },
		{ "rnr_nak_retry_err", FCTL_COUNTER_RETRANS },
		{ "send_err", FCTL_COUNTER_ERROR },
		{ "retry_rnr_exceeded_err", FCTL_COUNTER_ERROR },
		{ "rcvd_pkts", FCTL_COUNTER_INFO },
		{ "np_cnp_sent", FCTL_COUNTER_INFO },
		{ "no_such_counter", FCTL_COUNTER_INFO },
		{ "", FCTL_COUNTER_INFO },
	};

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(t); i++)
		assert_int_equal(fctl_counter_classify(t[i].name), t[i].c);
	assert_string_equal(fctl_counter_class_name(FCTL_COUNTER_LOSS), "loss");
	assert_string_equal(fctl_counter_class_name(FCTL_COUNTER_RETRANS), "retransmission");
}

/* --- verdicts ---------------------------------------------------------------- */

static void healthy(struct probe_result *r, bool lat)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->test, sizeof(r->test), "%s", lat ? "send_lat" : "write_bw");
	r->size = 2;
	r->iters = 100;
	r->ran = true;
	r->has_lat = lat;
	r->ex.p99_us = 4.0;
	r->ex.p999_us = 8.0;
	r->gbps = 50;
	r->has_peer = true;
	for (int e = 0; e < 2; e++) {
		struct probe_end *pe = &r->end[e];

		snprintf(pe->role, sizeof(pe->role), "%s", e ? "server" : "client");
		snprintf(pe->host, sizeof(pe->host), "h%d", e + 1);
		pe->counters_ok = true;
		pe->ms.checked = pe->ms.is_macsec = pe->ms.up = pe->ms.encrypt = true;
		pe->ms.tx_sa_active = true;
		pe->ms.out_pkts_encrypted = 100;
		snprintf(pe->ms.ifname, sizeof(pe->ms.ifname), "ms100");
		probe_end_add_counter(pe, "rcvd_pkts", 100);
	}
}

static const struct probe_slo slo = { .present = true, .has_p99 = true, .p99_us = 5,
				      .has_p999 = true, .p999_us = 10, .has_bw = true,
				      .bw_gbps = 40, .max_loss = 0, .has_max_retrans = true,
				      .max_retrans = 2, .require_macsec = true };

static bool has_reason(const struct probe_result *r, const char *prefix)
{
	for (size_t i = 0; i < r->n_reasons; i++)
		if (strncmp(r->reasons[i], prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

static void test_verdicts(void **state)
{
	struct probe_result r;

	healthy(&r, true);
	probe_verdict(&slo, &r);
	assert_true(r.pass);
	assert_int_equal(r.n_reasons, 0);

	healthy(&r, true);
	r.ex.p99_us = 5.5;
	probe_verdict(&slo, &r);
	assert_false(r.pass);
	assert_string_equal(r.reasons[0], "latency p99 5.500 us > 5.000 us");

	healthy(&r, true);
	probe_end_add_counter(&r.end[1], "out_of_seq_request", 3);
	probe_end_add_counter(&r.end[0], "rcvd_seq_err", 2);
	probe_verdict(&slo, &r);
	assert_false(r.pass);
	assert_string_equal(r.reasons[0],
			    "loss: 5 (max 0): rcvd_seq_err=2 on h1, out_of_seq_request=3 on h2");

	healthy(&r, false);
	probe_end_add_counter(&r.end[0], "completer_retry_err", 2);
	probe_verdict(&slo, &r);
	assert_true(r.pass); /* at the ceiling */
	probe_end_add_counter(&r.end[1], "duplicate_request", 1);
	probe_verdict(&slo, &r);
	assert_false(r.pass);
	assert_true(has_reason(&r, "retransmissions: 3 (max 2)"));

	healthy(&r, false);
	r.gbps = 39.5;
	probe_verdict(&slo, &r);
	assert_true(has_reason(&r, "bandwidth 39.500000 Gb/s < 40.000000 Gb/s"));

	healthy(&r, true);
	r.end[1].ms.in_pkts_not_valid = 1;
	probe_verdict(&slo, &r);
	assert_true(has_reason(&r, "macsec: frames refused on 'ms100' on h2"));

	healthy(&r, true);
	r.end[0].ms.out_pkts_encrypted = 0;
	r.end[0].ms.encrypt = false;
	probe_verdict(&slo, &r);
	assert_true(has_reason(&r, "macsec: encryption is off"));
	assert_true(has_reason(&r, "macsec: OutPktsEncrypted did not grow"));

	healthy(&r, true);
	r.end[0].ms.is_macsec = false;
	probe_verdict(&slo, &r);
	assert_true(has_reason(&r, "macsec: 'ms100' on h1 is not a MACsec device"));
	{
		struct probe_slo s2 = slo;

		s2.require_macsec = false;
		probe_verdict(&s2, &r);
		assert_true(r.pass);
	}

	healthy(&r, true);
	r.ran = false;
	snprintf(r.error, sizeof(r.error), "send completion failed: transport retry counter exceeded");
	probe_verdict(&slo, &r);
	assert_true(has_reason(&r, "run failed: send completion failed"));

	healthy(&r, true);
	probe_end_add_counter(&r.end[0], "send_err", 1);
	probe_verdict(&slo, &r);
	assert_true(has_reason(&r, "errors: 1: send_err=1 on h1"));
}

/* --- JSON validity: a small strict parser (RFC 8259) ----------------------------- */

static const char *jv(const char *p);

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *jstring(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
		p++;
	}
	return p + 1;
}

static const char *jnumber(const char *p)
{
	const char *s = p;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (*p == '.') {
		p++;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p > s ? p : NULL;
}

static const char *jv(const char *p)
{
	p = ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		bool obj = *p == '{';

		p = ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (obj) {
				p = jstring(ws(p));
				if (!p || *(p = ws(p)) != ':')
					return NULL;
				p++;
			}
			p = jv(p);
			if (!p)
				return NULL;
			p = ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (*p == '"')
		return jstring(p);
	if (strncmp(p, "true", 4) == 0)
		return p + 4;
	if (strncmp(p, "false", 5) == 0)
		return p + 5;
	if (strncmp(p, "null", 4) == 0)
		return p + 4;
	return jnumber(p);
}

static bool json_valid(const char *s)
{
	const char *e = jv(s);

	return e && *ws(e) == '\0';
}

static void test_json_validator_itself(void **state)
{
	assert_true(json_valid("{\"a\":[1,-2.5e3,true,null,\"x\\n\"]}"));
	assert_false(json_valid("{\"a\":nan}"));
	assert_false(json_valid("{\"a\":1,}"));
	assert_false(json_valid("{\"a\":\"\n\"}"));
	assert_false(json_valid("[01]"));
}

static void test_report_json_junit_text(void **state)
{
	struct probe_result res[2];
	struct probe_report rep = { .slo = slo, .res = res, .n_res = 2 };
	struct fctl_buf b = { 0 };

	snprintf(rep.peer, sizeof(rep.peer), "10.0.0.2:18516");
	snprintf(rep.link, sizeof(rep.link), "h1-\"h2\"");
	healthy(&res[0], true);
	res[0].ex.hist[10] = 7;
	res[0].ex.mean_us = NAN; /* JSON has no NaN: null */
	healthy(&res[1], false);
	probe_end_add_counter(&res[1].end[1], "out_of_seq_request", 1);
	snprintf(res[1].end[0].counters_err, sizeof(res[1].end[0].counters_err), "a \"quoted\"\nline");
	probe_report_verdict(&rep);
	assert_true(res[0].pass);
	assert_false(res[1].pass);
	assert_false(rep.pass);

	assert_int_equal(probe_report_json(&rep, &b), 0);
	assert_true(json_valid(b.data));
	assert_non_null(strstr(b.data, "\"latency_p99_us\":4,"));
	assert_non_null(strstr(b.data, "\"latency_mean_us\":null"));
	assert_non_null(strstr(b.data, "\"bandwidth_gbps\":50"));
	assert_non_null(strstr(b.data, "{\"ge_ns\":1024,\"lt_ns\":2048,\"count\":7}"));
	assert_non_null(strstr(b.data, "\"out_of_seq_request\":{\"delta\":1,\"class\":\"loss\"}"));
	assert_non_null(strstr(b.data, "\"pass\":false"));
	fctl_buf_reset(&b);

	assert_int_equal(probe_report_junit(&rep, &b), 0);
	assert_non_null(strstr(b.data, "tests=\"2\" failures=\"1\""));
	assert_non_null(strstr(b.data, "name=\"probe.h1-&quot;h2&quot;\""));
	assert_non_null(strstr(b.data, "<failure message=\"loss: 1 (max 0): out_of_seq_request=1 on h2\">"));
	fctl_buf_reset(&b);

	assert_int_equal(probe_report_text(&rep, &b), 0);
	assert_non_null(strstr(b.data, "    loss: 1 (max 0)"));
	assert_non_null(strstr(b.data, "probe: FAIL\n"));
	fctl_buf_release(&b);

	/* no results is not a pass */
	rep.n_res = 0;
	probe_report_verdict(&rep);
	assert_false(rep.pass);
}

static void test_wire_round_trip(void **state)
{
	struct probe_result r;
	struct probe_end back = { 0 };
	struct fctl_buf b = { 0 };
	char *save = NULL, *line;
	int last = 0;

	healthy(&r, true);
	probe_end_add_counter(&r.end[1], "duplicate_request", 4);
	r.end[1].ms.in_pkts_late = 2;
	r.end[1].cpu_ns = 12345;
	snprintf(r.end[1].counters_err, sizeof(r.end[1].counters_err), "100%% odd text\there");
	snprintf(r.end[1].dev, sizeof(r.end[1].dev), "rxe0");
	assert_int_equal(probe_end_to_wire(&r.end[1], &b), 0);
	for (line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		assert_null(strchr(line, '\t'));
		last = probe_end_from_wire(line, &back);
		assert_true(last >= 0);
	}
	assert_int_equal(last, 1);
	assert_string_equal(back.host, "h2");
	assert_string_equal(back.dev, "rxe0");
	assert_string_equal(back.counters_err, "100% odd text\there");
	assert_int_equal(back.cpu_ns, 12345);
	assert_int_equal(back.n_ctr, 2);
	assert_int_equal(back.retrans, 4);
	assert_true(back.ms.checked && back.ms.is_macsec && back.ms.encrypt && back.ms.tx_sa_active);
	assert_int_equal(back.ms.in_pkts_late, 2);
	assert_int_equal(back.ms.out_pkts_encrypted, 100);
	assert_string_equal(back.ms.ifname, "ms100");
	assert_int_equal(probe_end_from_wire("BOGUS 1", &back), -EINVAL);
	assert_int_equal(probe_end_from_wire("CTR noval", &back), -EINVAL);
	fctl_buf_release(&b);
}

/* the one key=value reader (probes' control lines, the last-probe record, node-check) */
static void test_kv_word(void **state)
{
	char v[16];
	uint64_t x;

	(void)state;
	assert_true(fctl_kv_word("TEST test=send_lat size=2", "test", v, sizeof(v)));
	assert_string_equal(v, "send_lat");
	assert_false(fctl_kv_word("TEST test=send_lat size=2", "siz", v, sizeof(v)));
	assert_false(fctl_kv_word("TEST xtest=a", "test", v, sizeof(v)));
	assert_true(fctl_kv_word("TEST xtest=a test=b", "test", v, sizeof(v)));
	assert_string_equal(v, "b");
	assert_true(ctl_field_u64("TEST size=4096 iters=7", "iters", &x));
	assert_int_equal(x, 7);
	assert_false(ctl_field_u64("TEST size=-1", "size", &x));
	assert_false(fctl_kv_word("k=0123456789abcdefXYZ", "k", v, sizeof(v)));
	/* a record's line: the value ends at the newline */
	assert_true(fctl_kv_word("fabricctl-probe-last time=17 exit=0\n", "exit", v, sizeof(v)));
	assert_string_equal(v, "0");
	assert_true(fctl_kv_word("a= b=1", "a", v, sizeof(v)));
	assert_string_equal(v, "");
	assert_false(fctl_kv_word("a=1", "", v, sizeof(v)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deltas),
		cmocka_unit_test(test_perftest_even),
		cmocka_unit_test(test_perftest_odd_factor2),
		cmocka_unit_test(test_perftest_integer_median),
		cmocka_unit_test(test_perftest_index_large),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_rank_bucket),
		cmocka_unit_test(test_counter_classes),
		cmocka_unit_test(test_verdicts),
		cmocka_unit_test(test_json_validator_itself),
		cmocka_unit_test(test_report_json_junit_text),
		cmocka_unit_test(test_wire_round_trip),
		cmocka_unit_test(test_kv_word),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
