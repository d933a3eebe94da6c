// SPDX-License-Identifier: MIT
/* Unit tests of the utility layer (fctl_util): table-driven. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/util.h"

static void test_buf_basic(void **state)
{
	struct fctl_buf b = { 0 };
	char *s;

	fctl_buf_reset(&b); /* on an empty buffer: no crash */
	assert_int_equal(fctl_buf_puts(&b, "abc"), 0);
	assert_int_equal(fctl_buf_putc(&b, 'd'), 0);
	assert_int_equal(fctl_buf_append(&b, "ef\0gh", 2), 0);
	assert_int_equal(fctl_buf_printf(&b, "-%d-%s", 42, "x"), 0);
	assert_string_equal(b.data, "abcdef-42-x");
	assert_int_equal(b.len, strlen("abcdef-42-x"));
	assert_int_equal(fctl_buf_append(&b, NULL, 0), 0);
	assert_int_equal(b.len, 11);
	fctl_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.data, "");
	s = fctl_buf_steal(&b);
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	free(s);
	s = fctl_buf_steal(&b); /* never used: still a valid empty string */
	assert_non_null(s);
	assert_string_equal(s, "");
	free(s);
	fctl_buf_release(&b);
	fctl_buf_release(NULL);
}

static void test_buf_growth(void **state)
{
	struct fctl_buf b = { 0 };
	char chunk[1000];

	memset(chunk, 'z', sizeof(chunk));
	for (int i = 0; i < 1000; i++)
		assert_int_equal(fctl_buf_append(&b, chunk, sizeof(chunk)), 0);
	assert_int_equal(b.len, 1000000);
	assert_true(b.cap > b.len);
	assert_int_equal(b.data[b.len], '\0');
	assert_int_equal(b.data[999999], 'z');
	assert_false(b.oom);
	/* an impossible size sets the sticky oom flag and later appends fail too */
	assert_int_equal(fctl_buf_append(&b, chunk, SIZE_MAX - 2), -ENOMEM);
	assert_true(b.oom);
	assert_int_equal(fctl_buf_puts(&b, "x"), -ENOMEM);
	assert_int_equal(b.len, 1000000);
	fctl_buf_release(&b);
	assert_false(b.oom);
}

static void test_buf_printf_long(void **state)
{
	struct fctl_buf b = { 0 };
	char big[5000];

	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(fctl_buf_printf(&b, "<%s>", big), 0);
	assert_int_equal(b.len, 5001);
	assert_int_equal(b.data[0], '<');
	assert_int_equal(b.data[5000], '>');
	fctl_buf_release(&b);
}

static const struct {
	const char *in;
	const char *json;
	const char *xml;
} escape_cases[] = {
	{ "", "\"\"", "" },
	{ "plain", "\"plain\"", "plain" },
	{ "a\"b", "\"a\\\"b\"", "a&quot;b" },
	{ "back\\slash", "\"back\\\\slash\"", "back\\slash" },
	{ "nl\ntab\tcr\r", "\"nl\\ntab\\tcr\\r\"", "nl\ntab\tcr?" },
	{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"", "??\x7f" },
	{ "<a & b='c'>", "\"<a & b='c'>\"", "&lt;a &amp; b=&apos;c&apos;&gt;" },
	{ "h\xc3\xa9llo", "\"h\xc3\xa9llo\"", "h\xc3\xa9llo" }, /* UTF-8 passes through */
};

static void test_escape(void **state)
{
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(escape_cases); i++) {
		struct fctl_buf j = { 0 }, x = { 0 };

		assert_int_equal(fctl_buf_json_str(&j, escape_cases[i].in), 0);
		assert_int_equal(fctl_buf_xml_str(&x, escape_cases[i].in), 0);
		assert_string_equal(j.data, escape_cases[i].json);
		assert_string_equal(x.data ? x.data : "", escape_cases[i].xml);
		fctl_buf_release(&j);
		fctl_buf_release(&x);
	}
	{
		struct fctl_buf j = { 0 };

		assert_int_equal(fctl_buf_json_str(&j, NULL), 0);
		assert_string_equal(j.data, "null");
		fctl_buf_release(&j);
	}
}

static const struct {
	const char *in;
	int ret;
	uint64_t val;
} u64_cases[] = {
	{ "0", 0, 0 },
	{ "42", 0, 42 },
	{ "007", 0, 7 },
	{ "18446744073709551615", 0, UINT64_MAX },
	{ "18446744073709551616", -ERANGE, 0 },
	{ "99999999999999999999999", -ERANGE, 0 },
	{ "0x0", 0, 0 },
	{ "0x10", 0, 16 },
	{ "0XfF", 0, 255 },
	{ "0xC000000000000000", 0, 0xC000000000000000ull },
	{ "0xffffffffffffffff", 0, UINT64_MAX },
	{ "0x10000000000000000", -ERANGE, 0 },
	{ "0x", -EINVAL, 0 },
	{ "0xg", -EINVAL, 0 },
	{ "0x-1", -EINVAL, 0 },
	{ "", -EINVAL, 0 },
	{ "-1", -EINVAL, 0 },
	{ "+1", -EINVAL, 0 },
	{ " 1", -EINVAL, 0 },
	{ "1 ", -EINVAL, 0 },
	{ "12abc", -EINVAL, 0 },
	{ "1.5", -EINVAL, 0 },
	{ "1e3", -EINVAL, 0 },
	{ "abc", -EINVAL, 0 },
};

static void test_parse_u64(void **state)
{
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(u64_cases); i++) {
		uint64_t v = 12345;
		int r = fctl_parse_u64(u64_cases[i].in, &v);

		if (r != u64_cases[i].ret)
			fail_msg("parse_u64(\"%s\") = %d, expected %d", u64_cases[i].in, r,
				 u64_cases[i].ret);
		/* output written only on success */
		assert_int_equal(v, r == 0 ? u64_cases[i].val : 12345);
	}
	{
		uint64_t v = 1;

		assert_int_equal(fctl_parse_u64(NULL, &v), -EINVAL);
	}
}

static const struct {
	const char *in;
	int ret;
	uint64_t secs;
} dur_cases[] = {
	{ "90", 0, 90 },
	{ "0", 0, 0 },
	{ "90s", 0, 90 },
	{ "5m", 0, 300 },
	{ "24h", 0, 86400 },
	{ "30d", 0, 30 * 86400 },
	{ "2w", 0, 14 * 86400 },
	{ "1h30m", 0, 5400 },
	{ "1d2h3m4s", 0, 86400 + 7200 + 180 + 4 },
	{ "1h30", -EINVAL, 0 }, /* ambiguous: 30 what? */
	{ "", -EINVAL, 0 },
	{ "h", -EINVAL, 0 },
	{ "1x", -EINVAL, 0 },
	{ "1 h", -EINVAL, 0 },
	{ "-5s", -EINVAL, 0 },
	{ "1.5h", -EINVAL, 0 },
	{ "18446744073709551615", 0, UINT64_MAX },
	{ "18446744073709551616", -ERANGE, 0 },
	{ "99999999999999999999s", -ERANGE, 0 },
	{ "18446744073709551615m", -ERANGE, 0 },
	{ "3074457345618258602m", -ERANGE, 0 }, /* v * 60 overflows */
	{ "18446744073709551615s1s", -ERANGE, 0 }, /* the sum overflows */
};

static void test_parse_duration(void **state)
{
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(dur_cases); i++) {
		uint64_t v = 777;
		int r = fctl_parse_duration(dur_cases[i].in, &v);

		if (r != dur_cases[i].ret)
			fail_msg("parse_duration(\"%s\") = %d, expected %d", dur_cases[i].in, r,
				 dur_cases[i].ret);
		assert_int_equal(v, r == 0 ? dur_cases[i].secs : 777);
	}
	{
		uint64_t v;

		assert_int_equal(fctl_parse_duration(NULL, &v), -EINVAL);
	}
}

static const struct {
	const char *in;
	int ret;
	uint8_t mac[6];
} mac_cases[] = {
	{ "52:54:00:fa:01:00", 0, { 0x52, 0x54, 0x00, 0xfa, 0x01, 0x00 } },
	{ "0C:42:A1:00:01:FF", 0, { 0x0c, 0x42, 0xa1, 0x00, 0x01, 0xff } },
	{ "ff:ff:ff:ff:ff:ff", 0, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } },
	{ "52:54:00:fa:01", -EINVAL, { 0 } },
	{ "52:54:00:fa:01:00:00", -EINVAL, { 0 } },
	{ "52-54-00-fa-01-00", -EINVAL, { 0 } },
	{ "5254.00fa.0100xx", -EINVAL, { 0 } },
	{ "52:54:00:fa:01:0g", -EINVAL, { 0 } },
	{ "525400fa0100", -EINVAL, { 0 } },
	{ "", -EINVAL, { 0 } },
	{ " 2:54:00:fa:01:00", -EINVAL, { 0 } },
};

static void test_parse_mac(void **state)
{
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(mac_cases); i++) {
		uint8_t m[6] = { 9, 9, 9, 9, 9, 9 };
		static const uint8_t untouched[6] = { 9, 9, 9, 9, 9, 9 };
		int r = fctl_parse_mac(mac_cases[i].in, m);

		if (r != mac_cases[i].ret)
			fail_msg("parse_mac(\"%s\") = %d", mac_cases[i].in, r);
		assert_memory_equal(m, r == 0 ? mac_cases[i].mac : untouched, 6);
	}
	{
		uint8_t m[6];
		static const uint8_t mac[6] = { 0x0c, 0x42, 0xa1, 0x00, 0x01, 0xff };
		char out[18];

		assert_int_equal(fctl_parse_mac(NULL, m), -EINVAL);
		fctl_format_mac(mac, out);
		assert_string_equal(out, "0c:42:a1:00:01:ff");
	}
}

static void test_parse_hex(void **state)
{
	uint8_t b[4] = { 1, 2, 3, 4 };
	static const uint8_t untouched[4] = { 1, 2, 3, 4 };
	static const uint8_t want[4] = { 0xde, 0xad, 0xBE, 0xef };

	assert_int_equal(fctl_parse_hex("deadBEEF", b, 4), 0);
	assert_memory_equal(b, want, 4);
	memcpy(b, untouched, 4);
	assert_int_equal(fctl_parse_hex("deadbee", b, 4), -EINVAL);	  /* odd */
	assert_int_equal(fctl_parse_hex("deadbeef00", b, 4), -EINVAL); /* too long */
	assert_int_equal(fctl_parse_hex("deadbeeg", b, 4), -EINVAL);	  /* not hex */
	assert_int_equal(fctl_parse_hex("de:adbee", b, 4), -EINVAL);
	assert_int_equal(fctl_parse_hex(NULL, b, 4), -EINVAL);
	assert_memory_equal(b, untouched, 4); /* a late bad digit leaves out alone */
	assert_int_equal(fctl_parse_hex("", b, 0), 0);
	/* and back: lower case, NUL-terminated, exactly 2 * len digits */
	{
		static const uint8_t all[] = { 0x00, 0x09, 0x0a, 0x5f, 0xa0, 0xff };
		char out[2 * sizeof(all) + 2];

		memset(out, 'x', sizeof(out));
		fctl_format_hex(all, sizeof(all), out);
		assert_string_equal(out, "00090a5fa0ff");
		assert_int_equal(out[sizeof(out) - 1], 'x');
		fctl_format_hex(want, 4, out);
		assert_string_equal(out, "deadbeef");
		assert_int_equal(fctl_parse_hex(out, b, 4), 0);
		assert_memory_equal(b, want, 4);
		fctl_format_hex(want, 0, out);
		assert_string_equal(out, "");
	}
	/* the same digits appended to a buffer, after what it holds */
	{
		static const uint8_t all[] = { 0x00, 0x09, 0x0a, 0x5f, 0xa0, 0xff };
		struct fctl_buf o = { 0 };

		fctl_buf_puts(&o, "id ");
		assert_int_equal(fctl_buf_put_hex(&o, all, sizeof(all)), 0);
		assert_int_equal(fctl_buf_put_hex(&o, all, 0), 0);
		assert_string_equal(o.data, "id 00090a5fa0ff");
		assert_int_equal(o.len, 3 + 2 * sizeof(all));
		fctl_buf_release(&o);
	}
}

static const struct {
	const char *a, *b;
	size_t cap, d;
} ed_cases[] = {
	{ "", "", 2, 0 },
	{ "cipher", "cipher", 2, 0 },
	{ "ciper", "cipher", 2, 1 },	  /* deletion */
	{ "cipherr", "cipher", 2, 1 },  /* insertion */
	{ "cipjer", "cipher", 2, 1 },	  /* substitution */
	{ "icv_len", "icvlen", 2, 1 },
	{ "kitten", "sitting", 5, 3 },
	{ "kitten", "sitting", 2, 3 },  /* capped: cap + 1 */
	{ "a", "abcdef", 2, 3 },	  /* length difference alone exceeds the cap */
	{ "", "abc", 3, 3 },
	{ "abc", "", 3, 3 },
	{ "flaw", "lawn", 4, 2 },
};

static void test_edit_distance(void **state)
{
	char long1[80], long2[80];

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(ed_cases); i++) {
		size_t d = fctl_edit_distance(ed_cases[i].a, ed_cases[i].b, ed_cases[i].cap);

		if (d != ed_cases[i].d)
			fail_msg("edit_distance(\"%s\", \"%s\", %zu) = %zu, expected %zu",
				 ed_cases[i].a, ed_cases[i].b, ed_cases[i].cap, d, ed_cases[i].d);
	}
	/* longer than the 64-character working row: reported as "far" */
	memset(long1, 'a', 70);
	long1[70] = '\0';
	memcpy(long2, long1, 71);
	assert_int_equal(fctl_edit_distance(long1, long2, 2), 3);
}

static void test_did_you_mean(void **state)
{
	static const char *const keys[] = { "cipher",   "icv_len",  "encrypt", "replay_protect",
					     "replay_window", "validate", "send_sci", "port" };
	static const struct {
		const char *word, *want;
	} cases[] = {
		{ "ciper", "cipher" },
		{ "icvlen", "icv_len" },
		{ "replay_windw", "replay_window" },
		{ "replay", "replay_protect" }, /* a prefix of 3+ characters */
		{ "vaildate", "validate" },
		{ "prot", "port" },
		{ "xyzzy", NULL },
		{ "re", NULL }, /* too short for a prefix match */
		{ "", NULL },
	};

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(cases); i++) {
		const char *g = fctl_did_you_mean(cases[i].word, keys, FCTL_ARRAY_SIZE(keys));

		if (!cases[i].want) {
			if (g)
				fail_msg("did_you_mean(\"%s\") = \"%s\", expected none",
					 cases[i].word, g);
			continue;
		}
		if (!g || strcmp(g, cases[i].want) != 0)
			fail_msg("did_you_mean(\"%s\") = \"%s\", expected \"%s\"", cases[i].word,
				 g ? g : "(null)", cases[i].want);
	}
	assert_null(fctl_did_you_mean("cipher", NULL, 0));
}

static void test_secrets(void **state)
{
	unsigned char a[32], b[32];

	memset(a, 0x5a, sizeof(a));
	memcpy(b, a, sizeof(b));
	assert_true(fctl_memeq_ct(a, b, sizeof(a)));
	b[31] ^= 1;
	assert_false(fctl_memeq_ct(a, b, sizeof(a)));
	assert_true(fctl_memeq_ct(a, b, 0));
	fctl_memzero(a, sizeof(a));
	for (size_t i = 0; i < sizeof(a); i++)
		assert_int_equal(a[i], 0);
	fctl_memzero(NULL, 10); /* accepted */
}

static void test_alloc_helpers(void **state)
{
	int *v = NULL;
	size_t n = 0, cap = 0;
	char *s;

	for (int i = 0; i < 100; i++) {
		int *slot = fctl_array_grow(&v, &n, &cap, sizeof(*v));

		assert_non_null(slot);
		assert_int_equal(*slot, 0);
		*slot = i;
	}
	assert_int_equal(n, 100);
	assert_true(cap >= 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(v[i], i);
	free(v);
	s = fctl_strdup("x");
	assert_string_equal(s, "x");
	free(s);
	assert_null(fctl_strdup(NULL));
	s = fctl_calloc(0, 0); /* never NULL for zero sizes */
	assert_non_null(s);
	free(s);
}

static void test_be_and_err(void **state)
{
	static const struct {
		uint64_t v;
		unsigned int n;
		uint8_t bytes[8];
	} cases[] = {
		{ 0x42, 1, { 0x42 } },
		{ 0x0102, 2, { 0x01, 0x02 } },
		{ 0x420001, 3, { 0x42, 0x00, 0x01 } },
		{ 0xdeadbeef, 4, { 0xde, 0xad, 0xbe, 0xef } },
		{ 0x0102030405060708ull, 8, { 1, 2, 3, 4, 5, 6, 7, 8 } },
	};
	char err[8] = "x";

	(void)state;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(cases); i++) {
		uint8_t b[8] = { 0 };

		fctl_put_be(b, cases[i].v, cases[i].n);
		assert_memory_equal(b, cases[i].bytes, cases[i].n);
		assert_true(fctl_get_be(b, cases[i].n) == cases[i].v);
	}
	fctl_set_err(NULL, 0, "ignored %d", 1);
	fctl_set_err(err, 0, "ignored");
	assert_string_equal(err, "x");
	fctl_set_err(err, sizeof(err), "cannot %s", "open the file");
	assert_string_equal(err, "cannot ");
}

static void test_files(void **state)
{
	char dir[] = "/tmp/fctl-util-test.XXXXXX", path[96], cmd[128];
	struct fctl_buf b = { 0 };
	struct stat st;
	mode_t mask = umask(0);

	(void)state;
	umask(mask);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a/b/file", dir);
	assert_int_equal(fctl_mkdir_parents(path, 0750), 0);
	assert_int_equal(fctl_file_replace(path, NULL, "one", 3, 0640, 0), 0);
	assert_int_equal(fctl_file_replace(path, NULL, "second", 6, 0640, FCTL_FILE_SYNC_DIR), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640 & ~mask);
	assert_int_equal(fctl_file_read(path, &b), 0);
	assert_int_equal(b.len, 6);
	assert_string_equal(b.data, "second");
	fctl_buf_release(&b);
	assert_int_equal(fctl_file_read("/nonexistent/file", &b), -ENOENT);
	snprintf(path, sizeof(path), "%s/missing/file", dir);
	assert_int_equal(fctl_file_replace(path, NULL, "x", 1, 0600, 0), -ENOENT);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* The lock file: held while the fd is open, refused to another process with its pid,
 * free again when the holder dies; never taken through a symlink. */
static void test_lockfile(void **state)
{
	char dir[] = "/tmp/fctl-test-lock.XXXXXX", path[64], link[80], buf[32] = "";
	int fd, st, p[2];
	long holder = -1;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/lock", dir);
	fd = fctl_lockfile_take(path, FCTL_LOCK_WRITE_PID, &holder);
	assert_true(fd >= 0);
	assert_int_equal(holder, 0);
	assert_true(pread(fd, buf, sizeof(buf) - 1, 0) > 0);
	assert_int_equal(strtol(buf, NULL, 10), (long)getpid());

	/* another process is refused and told who holds it (flock is per open file, so a
	 * second open in this process would be refused as well: the child shows it) */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		long h = 0;
		int r = fctl_lockfile_take(path, FCTL_LOCK_WRITE_PID, &h);

		_exit(r == -EBUSY && h == (long)getppid() ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* the refused attempt left the holder's pid in place */
	memset(buf, 0, sizeof(buf));
	assert_true(pread(fd, buf, sizeof(buf) - 1, 0) > 0);
	assert_int_equal(strtol(buf, NULL, 10), (long)getpid());
	close(fd);

	/* a holder that dies releases it */
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int r = fctl_lockfile_take(path, FCTL_LOCK_WRITE_PID, NULL);

		(void)!write(p[1], r >= 0 ? "y" : "n", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], buf, 1), 1);
	assert_int_equal(buf[0], 'y');
	assert_int_equal(fctl_lockfile_take(path, 0, &holder), -EBUSY);
	assert_int_equal(holder, (long)pid);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	close(p[0]);
	fd = fctl_lockfile_take(path, 0, &holder);
	assert_true(fd >= 0);
	close(fd);

	/* never through a symlink */
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(fctl_lockfile_take(link, 0, NULL), -ELOOP);
	unlink(link);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_basic),      cmocka_unit_test(test_buf_growth),
		cmocka_unit_test(test_buf_printf_long), cmocka_unit_test(test_escape),
		cmocka_unit_test(test_parse_u64),      cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_mac),      cmocka_unit_test(test_parse_hex),
		cmocka_unit_test(test_edit_distance),  cmocka_unit_test(test_did_you_mean),
		cmocka_unit_test(test_secrets),	       cmocka_unit_test(test_alloc_helpers),
		cmocka_unit_test(test_be_and_err),     cmocka_unit_test(test_files),
		cmocka_unit_test(test_lockfile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
