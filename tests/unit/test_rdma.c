// SPDX-License-Identifier: MIT
/* Unit tests of fctl_rdma's parts that need no device: the out-of-band QP
 * parameters' wire form, the rdma_cm private data, the counter files and their
 * deltas. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/rdma.h"

static void test_qpinfo_round_trip(void **state)
{
	struct fctl_rdma_qpinfo q = { .lid = 0x12, .out_reads = 16, .qpn = 0xabcdef, .psn = 0x123456,
				      .rkey = 0xdeadbeef, .vaddr = 0x7f4723695000ull, .srqn = 0,
				      .mtu = 3 },
				back;
	char s[FCTL_RDMA_QPINFO_LEN];

	for (int i = 0; i < 16; i++)
		q.gid[i] = (uint8_t)(i * 17);
	assert_int_equal(fctl_rdma_qpinfo_format(&q, s), 0);
	assert_string_equal(s, "0012:0010:abcdef:123456:deadbeef:00007f4723695000:00000000:"
			       "00112233445566778899aabbccddeeff:3");
	assert_int_equal(fctl_rdma_qpinfo_parse(s, &back), 0);
	assert_memory_equal(&q, &back, sizeof(q));
}

static void test_qpinfo_rejects(void **state)
{
	static const char *const bad[] = {
		"",
		"0012:0010:abcdef:123456:deadbeef:00007f4723695000:00000000:00112233445566778899aabbccddeeff",
		"0012:0010:abcdef:123456:deadbeef:00007f4723695000:00000000:00112233445566778899aabbccddeeff:6",
		"0012:0010:abcdef:123456:deadbeef:00007f4723695000:00000000:00112233445566778899aabbccddeeff:3x",
		"0012:0010:abcdef:123456:deadbeef:00007f4723695000:00000000:00112233445566778899aabbccddee:3",
		"0012:0010:ABCDEF:123456:deadbeef:00007f4723695000:00000000:00112233445566778899aabbccddeeff:3",
		"12:0010:abcdef:123456:deadbeef:00007f4723695000:00000000:00112233445566778899aabbccddeeff:3",
	};
	struct fctl_rdma_qpinfo q = { .qpn = 42 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(fctl_rdma_qpinfo_parse(bad[i], &q), -EINVAL);
		assert_int_equal(q.qpn, 42); /* untouched on failure */
	}
}

static void put(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_counters_dir_and_delta(void **state)
{
	char dir[] = "/tmp/fctl-test-ctr-XXXXXX", sub[600];
	struct fctl_rdma_counters *a = calloc(3, sizeof(*a)), *b = a + 1, *d = a + 2;

	assert_non_null(a);
	assert_non_null(mkdtemp(dir));
	put(dir, "sent_pkts", "100\n");
	put(dir, "out_of_seq_request", "3\n");
	put(dir, "garbage", "x1\n"); /* not a counter: skipped */
	snprintf(sub, sizeof(sub), "%s/subdir", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(fctl_rdma_counters_read_dir(dir, a), 0);
	assert_int_equal(a->n, 2);
	assert_string_equal(a->c[0].name, "out_of_seq_request"); /* sorted */
	put(dir, "sent_pkts", "250\n");
	put(dir, "out_of_seq_request", "3\n");
	put(dir, "rcvd_seq_err", "5\n"); /* new since: counts from 0 */
	assert_int_equal(fctl_rdma_counters_read_dir(dir, b), 0);
	fctl_rdma_counters_delta(a, b, d);
	assert_int_equal(d->n, 3);
	assert_string_equal(d->c[0].name, "out_of_seq_request");
	assert_int_equal(d->c[0].value, 0);
	assert_string_equal(d->c[1].name, "rcvd_seq_err");
	assert_int_equal(d->c[1].value, 5);
	assert_string_equal(d->c[2].name, "sent_pkts");
	assert_int_equal(d->c[2].value, 150);
	/* a counter that went backwards (device reset) is 0, never a huge number */
	fctl_rdma_counters_delta(b, a, d);
	for (size_t i = 0; i < d->n; i++)
		assert_true(d->c[i].value == 0);
	assert_int_equal(fctl_rdma_counters_read_dir("/nonexistent/x", a), -ENOENT);
	for (size_t i = 0; i < 4; i++) {
		static const char *const f[] = { "sent_pkts", "out_of_seq_request", "garbage",
						 "rcvd_seq_err" };
		char p[600];

		snprintf(p, sizeof(p), "%s/%s", dir, f[i]);
		unlink(p);
	}
	rmdir(sub);
	rmdir(dir);
	free(a);
}

static void test_test_names(void **state)
{
	enum fctl_rdma_test t;

	for (int i = 0; i < FCTL_RDMA_N_TESTS; i++) {
		assert_int_equal(fctl_rdma_test_from_name(fctl_rdma_test_name((enum fctl_rdma_test)i), &t), 0);
		assert_int_equal(t, i);
	}
	assert_int_equal(fctl_rdma_test_from_name("send", &t), -EINVAL);
	assert_int_equal(fctl_rdma_test_rtt_factor(FCTL_RDMA_READ_LAT), 1);
	assert_int_equal(fctl_rdma_test_rtt_factor(FCTL_RDMA_SEND_LAT), 2);
	assert_int_equal(fctl_rdma_test_rtt_factor(FCTL_RDMA_WRITE_LAT), 2);
	assert_true(fctl_rdma_test_server_active(FCTL_RDMA_SEND_BW));
	assert_false(fctl_rdma_test_server_active(FCTL_RDMA_WRITE_BW));
}

static void test_cm_pdata(void **state)
{
	struct fctl_rdma_cm_pdata d = { .rkey = 0xdeadbeef, .vaddr = 0x7f4723695000ull,
					.size = 131072, .out_reads = 16 },
				  back;
	uint8_t buf[56] = { 0 }; /* the CM pads the private data of an RC connect to 56 bytes */
	static const uint8_t want[FCTL_RDMA_CM_PDATA_LEN] = {
		'F', 'C', 'M', '1', 0xde, 0xad, 0xbe, 0xef, 0, 0, 0x7f, 0x47, 0x23, 0x69, 0x50, 0,
		0, 2, 0, 0, 0, 16, 0, 0,
	};

	fctl_rdma_cm_pdata_encode(&d, buf);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(fctl_rdma_cm_pdata_decode(buf, sizeof(buf), &back), 0);
	assert_int_equal(back.rkey, d.rkey);
	assert_int_equal(back.vaddr, d.vaddr);
	assert_int_equal(back.size, d.size);
	assert_int_equal(back.out_reads, d.out_reads);
	assert_int_equal(fctl_rdma_cm_pdata_decode(buf, FCTL_RDMA_CM_PDATA_LEN, &back), 0);
	/* too short, no data, wrong magic, reserved bytes set, size 0, no reads */
	assert_int_equal(fctl_rdma_cm_pdata_decode(buf, FCTL_RDMA_CM_PDATA_LEN - 1, &back), -EINVAL);
	assert_int_equal(fctl_rdma_cm_pdata_decode(NULL, 56, &back), -EINVAL);
	buf[3] = '2';
	assert_int_equal(fctl_rdma_cm_pdata_decode(buf, sizeof(buf), &back), -EINVAL);
	buf[3] = '1';
	buf[23] = 1;
	assert_int_equal(fctl_rdma_cm_pdata_decode(buf, sizeof(buf), &back), -EINVAL);
	buf[23] = 0;
	d.size = 0;
	fctl_rdma_cm_pdata_encode(&d, buf);
	assert_int_equal(fctl_rdma_cm_pdata_decode(buf, sizeof(buf), &back), -EINVAL);
	d.size = 4096;
	d.out_reads = 0;
	fctl_rdma_cm_pdata_encode(&d, buf);
	assert_int_equal(fctl_rdma_cm_pdata_decode(buf, sizeof(buf), &back), -EINVAL);
	/* an all-zero buffer (a peer that is not a probe) */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(fctl_rdma_cm_pdata_decode(buf, sizeof(buf), &back), -EINVAL);
}

static void test_bidirectional_server_active(void **state)
{
	struct fctl_rdma_params p = { .test = FCTL_RDMA_WRITE_BW };

	assert_false(fctl_rdma_params_server_active(&p));
	p.bidirectional = true;
	assert_true(fctl_rdma_params_server_active(&p));
	p.test = FCTL_RDMA_READ_BW;
	assert_true(fctl_rdma_params_server_active(&p));
	p.test = FCTL_RDMA_READ_LAT; /* latency tests are never bidirectional */
	assert_false(fctl_rdma_params_server_active(&p));
	p.test = FCTL_RDMA_SEND_LAT;
	assert_true(fctl_rdma_params_server_active(&p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qpinfo_round_trip),
		cmocka_unit_test(test_qpinfo_rejects),
		cmocka_unit_test(test_counters_dir_and_delta),
		cmocka_unit_test(test_test_names),
		cmocka_unit_test(test_cm_pdata),
		cmocka_unit_test(test_bidirectional_server_active),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
