// SPDX-License-Identifier: MIT
/*
 * Unit tests of the pieces of a make-before-break CAK rotation that need no kernel
 * (fctl/mka_rotate.h, fctl/mka.h): the SCI port a rotation moves to, which settings
 * changes are a rotation and which a reconfiguration, and the settings file a
 * wpa_supplicant's run directory keeps (its SCI port on a second line once rotated).
 * The rotation itself runs in the lab: tests/lab/mka_rotate.bash.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/mka.h"
#include "fctl/mka_rotate.h"

static void test_alt_port(void **state)
{
	(void)state;
	assert_int_equal(fctl_mka_alt_port(1), 2);
	assert_int_equal(fctl_mka_alt_port(2), 1);
	assert_int_equal(fctl_mka_alt_port(3), 4);
	assert_int_equal(fctl_mka_alt_port(4), 3);
	assert_int_equal(fctl_mka_alt_port(fctl_mka_alt_port(7)), 7);
	assert_int_equal(fctl_mka_alt_port(65534), 65533);
	assert_int_equal(fctl_mka_alt_port(65535), 65534); /* never 0 */
}

/* The run directory's names: a port's current CA, its incoming one, and nothing else. */
static void test_dir_name(void **state)
{
	char port[32];
	uint16_t n = 0;

	(void)state;
	assert_int_equal(fctl_mka_dir_name("eth0.100", port, sizeof(port), &n), 0);
	assert_string_equal(port, "eth0.100");
	assert_int_equal(fctl_mka_dir_name("eth0.100:2", port, sizeof(port), &n), 1);
	assert_string_equal(port, "eth0.100");
	assert_int_equal(n, 2);
	assert_int_equal(fctl_mka_dir_name("eth0.100:0", port, sizeof(port), &n), -EINVAL);
	assert_int_equal(fctl_mka_dir_name("eth0.100:", port, sizeof(port), &n), -EINVAL);
	assert_int_equal(fctl_mka_dir_name("eth0.100:2x", port, sizeof(port), &n), -EINVAL);
	assert_int_equal(fctl_mka_dir_name("eth0.100:65536", port, sizeof(port), &n), -EINVAL);
	assert_int_equal(fctl_mka_dir_name(":2", port, sizeof(port), &n), -EINVAL);
	assert_int_equal(fctl_mka_dir_name("", port, sizeof(port), &n), -EINVAL);
	assert_int_equal(fctl_mka_dir_name("a-very-long-interface-name-here", port, 8, &n),
			 -EINVAL);
}

static void line(const char *ckn, uint8_t k0, unsigned prio, uint16_t port, char *out, size_t n)
{
	struct fctl_key cak = { .len = 16 };
	struct fctl_mka_params p = { .ckn = ckn, .cak = &cak, .priority = (uint8_t)prio,
				     .must_secure = true, .replay_protect = true, .port = port };

	cak.kcv[0] = k0;
	fctl_mka_settings_line(&p, out, n);
}

/* A new CKN or CAK is a rotation; anything else (or nothing) is not. */
static void test_ca_only(void **state)
{
	char a[512], b[512];

	(void)state;
	line("0011", 1, 16, 1, a, sizeof(a));
	line("0011", 1, 16, 1, b, sizeof(b));
	assert_false(fctl_mka_settings_ca_only(a, b)); /* unchanged */
	line("0022", 1, 16, 1, b, sizeof(b));
	assert_true(fctl_mka_settings_ca_only(a, b)); /* new CKN */
	line("0011", 2, 16, 1, b, sizeof(b));
	assert_true(fctl_mka_settings_ca_only(a, b)); /* new CAK, same CKN */
	assert_null(strstr(b, "0102")); /* the line names the CAK by check value only */
	line("0022", 2, 17, 1, b, sizeof(b));
	assert_false(fctl_mka_settings_ca_only(a, b)); /* the priority changed too */
	line("0022", 2, 16, 3, b, sizeof(b));
	assert_false(fctl_mka_settings_ca_only(a, b)); /* the policy's port changed too */
	assert_false(fctl_mka_settings_ca_only("garbage", b));
}

static void write_file(const char *dir, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/settings", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_settings_read(void **state)
{
	char dir[] = "/tmp/fctl-mka-rot-XXXXXX", got[512], path[PATH_MAX];
	uint16_t port = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(fctl_mka_settings_read("eth9.9", dir, got, &port), -ENOENT);
	write_file(dir, "ckn=00 kcv=aabbcc len=16 priority=16 secure=1 integ=0 replay=1 window=0 "
			"port=1\n");
	assert_int_equal(fctl_mka_settings_read("eth9.9", dir, got, &port), 0);
	assert_int_equal(port, 1);
	assert_string_equal(got, "ckn=00 kcv=aabbcc len=16 priority=16 secure=1 integ=0 "
				 "replay=1 window=0 port=1");
	/* rotated: the SecY runs on the other port, the policy's port unchanged */
	write_file(dir, "ckn=00 kcv=aabbcc len=16 priority=16 secure=1 integ=0 replay=1 window=0 "
			"port=1\nsci=2\n");
	assert_int_equal(fctl_mka_settings_read("eth9.9", dir, got, &port), 0);
	assert_int_equal(port, 2);
	assert_null(strchr(got, '\n'));
	write_file(dir, "ckn=00 kcv=aabbcc port=0\n");
	assert_int_equal(fctl_mka_settings_read("eth9.9", dir, got, &port), -EINVAL);
	write_file(dir, "no port at all\n");
	assert_int_equal(fctl_mka_settings_read("eth9.9", dir, got, &port), -EINVAL);
	snprintf(path, sizeof(path), "%s/settings", dir);
	unlink(path);
	rmdir(dir);
}

static void test_incoming_dir(void **state)
{
	char d[PATH_MAX];

	(void)state;
	fctl_mka_incoming_dir("eth0.100", 2, d, sizeof(d));
	assert_string_equal(d, FCTL_MKA_RUN_DIR "/eth0.100:2");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alt_port),
		cmocka_unit_test(test_dir_name),
		cmocka_unit_test(test_ca_only),
		cmocka_unit_test(test_settings_read),
		cmocka_unit_test(test_incoming_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
