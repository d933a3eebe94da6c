// SPDX-License-Identifier: MIT
/* The key arena: slots wiped on free, pages locked and left out of dumps, growth, fork. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/key_backend.h"
#include "fctl/keys.h"

/* The VmFlags of the mapping that holds p (/proc/self/smaps), "" when none does. */
static void vmflags(const void *p, char *out, size_t outlen)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false;

	out[0] = '\0';
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		/* a mapping's first line: "lo-hi perms ..." (field lines have no '-' first) */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			snprintf(out, outlen, "%s", line + 8);
			break;
		}
	}
	fclose(f);
}

static bool has_flag(const void *p, const char *flag)
{
	char fl[256], want[8];

	vmflags(p, fl, sizeof(fl));
	snprintf(want, sizeof(want), " %s", flag);
	for (char *s = strstr(fl, want); s; s = strstr(s + 1, want))
		if (s[strlen(want)] == ' ' || s[strlen(want)] == '\n' || !s[strlen(want)])
			return true;
	return false;
}

static uintptr_t page_of(const void *p)
{
	return (uintptr_t)p & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
}

/* Locked (when the protection says so, and always as root), not dumped, wiped on fork. */
static void assert_protected(const void *p)
{
	struct fctl_keys_protection st;

	fctl_keys_protection(&st);
	assert_true(st.dontdump);
	assert_int_equal(st.dontdump_errno, 0);
	assert_true(has_flag(p, "dd"));
	if (geteuid() == 0)
		assert_true(st.locked);
	assert_true(has_flag(p, "lo") == st.locked);
	if (st.wipeonfork)
		assert_true(has_flag(p, "wf"));
}

static void test_protected(void **state)
{
	struct fctl_keys_protection st;
	struct fctl_key *k = fctl_keys_alloc();

	(void)state;
	assert_non_null(k);
	assert_protected(k);
	fctl_keys_protection(&st);
	assert_true(st.pages >= 1);
	assert_true(st.keys >= 1);
	assert_true(st.slots_per_page >= 1);
	fctl_key_free(k);
}

static void test_wiped_on_free(void **state)
{
	struct fctl_key *k = fctl_keys_alloc(), *again;
	const volatile uint8_t *raw = (const uint8_t *)k;

	(void)state;
	assert_non_null(k);
	memset(k->bytes, 0xa5, sizeof(k->bytes));
	k->len = 32;
	memset(k->kcv, 0x5a, sizeof(k->kcv));
	fctl_key_free(k);
	/* the page stays mapped: the slot reads back as zeroes */
	for (size_t i = 0; i < sizeof(*k); i++)
		assert_int_equal(raw[i], 0);
	again = fctl_keys_alloc();
	assert_non_null(again);
	for (size_t i = 0; i < sizeof(again->bytes); i++)
		assert_int_equal(again->bytes[i], 0);
	assert_int_equal(again->len, 0);
	fctl_key_free(again);
}

static void test_shared_page_stays_locked(void **state)
{
	struct fctl_key *a = fctl_keys_alloc(), *b = fctl_keys_alloc();
	struct fctl_keys_protection st;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_true(page_of(a) == page_of(b)); /* the free slots of one page come first */
	memset(b->bytes, 0x3c, sizeof(b->bytes));
	fctl_key_free(a);
	fctl_keys_protection(&st);
	assert_true(has_flag(b, "lo") == st.locked);
	if (geteuid() == 0)
		assert_true(has_flag(b, "lo"));
	assert_true(has_flag(b, "dd"));
	for (size_t i = 0; i < sizeof(b->bytes); i++)
		assert_int_equal(b->bytes[i], 0x3c);
	fctl_key_free(b);
	/* no key left in the page: it stays locked for the next one */
	assert_true(has_flag(b, "lo") == st.locked);
}

static void test_growth(void **state)
{
	struct fctl_keys_protection st0, st;
	struct fctl_key **k;
	size_t n;

	(void)state;
	fctl_key_free(fctl_keys_alloc()); /* the arena exists: slots_per_page is known */
	fctl_keys_protection(&st0);
	assert_true(st0.slots_per_page > 0);
	n = 3 * st0.slots_per_page + 1;
	k = calloc(n, sizeof(*k));
	assert_non_null(k);
	for (size_t i = 0; i < n; i++) {
		k[i] = fctl_keys_alloc();
		assert_non_null(k[i]);
		k[i]->bytes[0] = (uint8_t)i;
		k[i]->len = i;
	}
	fctl_keys_protection(&st);
	assert_true(st.pages >= 4);
	assert_int_equal(st.keys, st0.keys + n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(k[i]->len, i); /* no two keys share a slot */
		assert_int_equal(k[i]->bytes[0], (uint8_t)i);
		if (i == 0 || page_of(k[i]) != page_of(k[i - 1]))
			assert_protected(k[i]);
	}
	for (size_t i = 0; i < n; i++)
		fctl_key_free(k[i]);
	fctl_keys_protection(&st);
	assert_int_equal(st.keys, st0.keys);
	free(k);
}

static void test_fork(void **state)
{
	struct fctl_key *k = fctl_keys_alloc();
	struct fctl_keys_protection st;
	int status;
	pid_t pid;

	(void)state;
	assert_non_null(k);
	memset(k->bytes, 0x77, sizeof(k->bytes));
	fctl_keys_protection(&st);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct fctl_key *c = fctl_keys_alloc();
		int bad = 0;

		/* MADV_WIPEONFORK: the child sees zeroes; its own keys are locked again */
		if (st.wipeonfork && k->bytes[0] != 0)
			bad |= 1;
		if (!c || (st.locked && !has_flag(c, "lo")))
			bad |= 2;
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(k->bytes[31], 0x77);
	fctl_key_free(k);
}

static void test_secure_alloc(void **state)
{
	uint8_t *p = fctl_keys_secure_alloc(10000);

	(void)state;
	assert_non_null(p);
	assert_true(page_of(p) == (uintptr_t)p);
	for (size_t i = 0; i < 10000; i++)
		assert_int_equal(p[i], 0);
	memset(p, 0xee, 10000);
	assert_protected(p);
	assert_protected(p + 9999);
	fctl_keys_secure_free(p, 10000);
	fctl_keys_secure_free(NULL, 10);
	assert_null(fctl_keys_secure_alloc(0));
	fctl_key_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_protected),
		cmocka_unit_test(test_wiped_on_free),
		cmocka_unit_test(test_shared_page_stays_locked),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_secure_alloc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
