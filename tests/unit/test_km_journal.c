// SPDX-License-Identifier: MIT
/*
 * Unit tests of keymgr's rotation journal (keymgr/journal.c): the lines a rotation
 * leaves for recovery are the same whether the journal's fd is held open across the
 * rotation or opened per line (past KM_JOURNAL_FDS), every held fd is closed by the
 * journal's end or km_journal_close, and a closed journal still reads back.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rot.h"

/* keymgr's own definitions of these live in rotate.c and main.c, which this test does
 * not link: the journal needs only the names and a place for its audit records */
static const char *const names[KM_N_STEPS] = {
	"prepare", "install-rx", "stage-tx", "confirm", "switch", "overlap", "retire", "rollback",
};
static unsigned audits;

const char *km_step_name(enum km_step s)
{
	return s < KM_N_STEPS ? names[s] : "?";
}

void km_audit(struct km *k, const struct km_link *l, const char *action, const char *result,
	      const char *kcv, const char *key_state, const char *fmt, ...)
{
	(void)k, (void)l, (void)action, (void)result, (void)kcv, (void)key_state, (void)fmt;
	audits++;
}

struct fx {
	char dir[64];
	struct km k;
	struct km_link l;
};

static int fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	snprintf(x->dir, sizeof(x->dir), "/tmp/fctl-km-journal.XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	x->k.state_dir = x->dir;
	snprintf(x->l.name, sizeof(x->l.name), "h1-h2.100");
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", x->dir);
	assert_int_equal(system(cmd), 0);
	free(x);
	return 0;
}

static void begin_steps(struct fx *x, struct rot *rt)
{
	rt->old_an = 0, rt->new_an = 1, rt->old_version = 3, rt->new_version = 4;
	assert_int_equal(km_journal_begin(&x->k, &x->l, rt), 0);
	assert_int_equal(km_journal_step(&x->k, &x->l, rt, KM_PREPARE), 0);
	assert_int_equal(km_journal_step(&x->k, &x->l, rt, KM_INSTALL_RX), 0);
	assert_int_equal(km_journal_step(&x->k, &x->l, rt, KM_SWITCH), 0);
}

/* what recovery reads after a crash at the switch: begin, then the last step */
static void assert_journal_reads_back(struct fx *x)
{
	struct rot back;

	assert_int_equal(km_journal_read(&x->k, &x->l, &back), 0);
	assert_int_equal(back.old_an, 0);
	assert_int_equal(back.new_an, 1);
	assert_int_equal(back.old_version, 3);
	assert_int_equal(back.new_version, 4);
	assert_int_equal(back.last, KM_SWITCH);
	assert_string_equal(back.steps, "prepare,install-rx,switch");
	assert_false(back.jfd_open);
}

static void held_fd_same_lines_and_closed_at_end(void **state)
{
	struct fx *x = *state;
	struct rot rt = { 0 };
	char path[256], *text;
	int base = fds_open();

	begin_steps(x, &rt);
	assert_true(rt.jfd_open);
	assert_int_equal(x->k.journal_fds, 1);
	assert_int_equal(fds_open(), base + 1);
	assert_journal_reads_back(x); /* readable while the fd is held (a crash now) */
	km_journal_end(&x->k, &x->l, &rt, "committed");
	assert_false(rt.jfd_open);
	assert_int_equal(x->k.journal_fds, 0);
	assert_int_equal(fds_open(), base);
	snprintf(path, sizeof(path), "%s/journal-h1-h2.100", x->dir);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/rotations.log", x->dir);
	text = slurp(path);
	assert_non_null(text);
	assert_non_null(strstr(text, " h1-h2.100 committed old_an 0 old_version 3 new_an 1"));
	assert_non_null(strstr(text, "steps prepare,install-rx,switch\n"));
}

static void past_the_cap_opened_per_line(void **state)
{
	struct fx *x = *state;
	struct rot rt = { 0 };
	int base = fds_open();

	x->k.journal_fds = KM_JOURNAL_FDS; /* as if a large batch held them all */
	begin_steps(x, &rt);
	assert_false(rt.jfd_open);
	assert_int_equal(x->k.journal_fds, KM_JOURNAL_FDS);
	assert_int_equal(fds_open(), base);
	assert_journal_reads_back(x);
	km_journal_close(&x->k, &rt); /* nothing held: a no-op */
	assert_int_equal(x->k.journal_fds, KM_JOURNAL_FDS);
}

static void close_keeps_the_journal_for_recover(void **state)
{
	struct fx *x = *state;
	struct rot rt = { 0 }, again = { 0 };
	int base = fds_open();

	begin_steps(x, &rt);
	km_journal_close(&x->k, &rt);
	km_journal_close(&x->k, &rt); /* twice: still one close */
	km_journal_close(&x->k, NULL);
	assert_int_equal(x->k.journal_fds, 0);
	assert_int_equal(fds_open(), base);
	assert_journal_reads_back(x);
	/* a new rotation of the link starts a new journal, not lines after the old one */
	again.old_an = 1, again.new_an = 2, again.old_version = 4, again.new_version = 5;
	assert_int_equal(km_journal_begin(&x->k, &x->l, &again), 0);
	assert_int_equal(km_journal_step(&x->k, &x->l, &again, KM_PREPARE), 0);
	km_journal_close(&x->k, &again);
	assert_int_equal(km_journal_read(&x->k, &x->l, &rt), 0);
	assert_int_equal(rt.new_an, 2);
	assert_string_equal(rt.steps, "prepare");
	assert_int_equal(fds_open(), base);
}

static void deferred_lines_synced_by_flush(void **state)
{
	struct fx *x = *state;
	struct rot rt = { 0 };

	x->k.journal_defer = true;
	begin_steps(x, &rt);
	assert_true(x->k.journal_dirty);
	assert_journal_reads_back(x); /* written at once, only the sync waits */
	assert_int_equal(km_journal_flush(&x->k), 0);
	assert_false(x->k.journal_dirty);
	km_journal_end(&x->k, &x->l, &rt, "rolled-back");
	assert_int_equal(x->k.journal_fds, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(held_fd_same_lines_and_closed_at_end, setup, teardown),
		cmocka_unit_test_setup_teardown(past_the_cap_opened_per_line, setup, teardown),
		cmocka_unit_test_setup_teardown(close_keeps_the_journal_for_recover, setup, teardown),
		cmocka_unit_test_setup_teardown(deferred_lines_synced_by_flush, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
