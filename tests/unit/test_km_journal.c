// SPDX-License-Identifier: MIT
/*
 * Unit tests of keymgr's rotation journal (keymgr/journal.c): the lines a rotation
 * leaves for recovery are the same whether the journal's fd is held open across the
 * rotation or opened per line (past KM_JOURNAL_FDS), every held fd is closed by the
 * journal's end or km_journal_close, and a closed journal still reads back. A batch's
 * commits (km_commit_flush) killed at every point inside the batch: each link's journal
 * is either still there, at retire (recovery finishes it), or gone with the link's
 * history line and record of the new key on disk: the journal tells which links moved.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
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

/* --- a batch's commits, killed inside ------------------------------------------ */

#define NB 5

struct batch {
	struct km_link l[NB];
	struct rot rt[NB];
	struct km_link *ls[NB];
	struct rot *rts[NB];
};

static const char *crash_where;
static size_t crash_at;

static void crash_here(const char *where, size_t i)
{
	if (crash_where && strcmp(where, crash_where) == 0 && i == crash_at)
		raise(SIGKILL);
}

/* In the child: NB links through every step to retire, their commits queued as the
 * retire phase queues them; 0 or the number of the check that failed. */
static int batch_to_retire(struct km *k, struct batch *b)
{
	for (size_t i = 0; i < NB; i++) {
		struct rot *rt = &b->rt[i];

		snprintf(b->l[i].name, sizeof(b->l[i].name), "h1-h2.%zu", 100 + i);
		b->l[i].ref.backend = "file";
		b->l[i].ref.id = "keys/l.key";
		b->ls[i] = &b->l[i];
		b->rts[i] = rt;
		rt->old_an = 0, rt->new_an = 1, rt->old_version = 3, rt->new_version = 4;
		if (km_journal_begin(k, &b->l[i], rt) < 0)
			return 1;
		for (int s = KM_PREPARE; s <= KM_RETIRE; s++)
			if (km_journal_step(k, &b->l[i], rt, (enum km_step)s) < 0)
				return 2;
	}
	if (km_journal_flush(k) < 0)
		return 3;
	k->commit_defer = true;
	for (size_t i = 0; i < NB; i++) {
		km_journal_end(k, &b->l[i], &b->rt[i], "committed");
		km_set_current(k, &b->l[i], &b->rt[i], 1, 4, "abcdef");
		if (!b->rt[i].end_pending || !b->rt[i].current_pending)
			return 4;
	}
	k->commit_defer = false;
	return 0;
}

/* Runs the batch in a child killed at where/at ("queued": before km_commit_flush; NULL:
 * not at all); the parent sees what a restarted keymgr would see. */
static void run_batch(struct fx *x, const char *where, size_t at)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct batch b;
		int r;

		memset(&b, 0, sizeof(b));
		x->k.journal_defer = true;
		x->k.crash_point = crash_here;
		crash_where = where;
		crash_at = at;
		r = batch_to_retire(&x->k, &b);
		if (r)
			_exit(10 + r);
		crash_here("queued", 0);
		if (km_commit_flush(&x->k, b.ls, b.rts, NB) < 0)
			_exit(20);
		_exit(km_journal_flush(&x->k) < 0 ? 21 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (where) {
		assert_true(WIFSIGNALED(st));
		assert_int_equal(WTERMSIG(st), SIGKILL);
	} else {
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

/* Every link: its journal at retire, or no journal and its history line and the new key's
 * record. Returns how many links have ended (no journal). */
static size_t assert_each_link_told(struct fx *x)
{
	char path[256], want[200], *hist;
	size_t ended = 0;

	snprintf(path, sizeof(path), "%s/rotations.log", x->dir);
	hist = slurp(path);
	for (size_t i = 0; i < NB; i++) {
		struct km_link l = { .ref = { .backend = "file", .id = "keys/l.key" } };
		struct rot back;
		unsigned an;
		uint32_t v;
		uint64_t when;
		char kcv[7];
		uint8_t keyid[FCTL_KEYID_LEN];

		snprintf(l.name, sizeof(l.name), "h1-h2.%zu", 100 + i);
		snprintf(path, sizeof(path), "%s/journal-%s", x->dir, l.name);
		if (access(path, F_OK) == 0) {
			assert_int_equal(km_journal_read(&x->k, &l, &back), 0);
			assert_int_equal(back.last, KM_RETIRE);
			assert_int_equal(back.new_an, 1);
			assert_int_equal(back.new_version, 4);
			continue;
		}
		ended++;
		snprintf(want, sizeof(want), " %s committed old_an 0 old_version 3 new_an 1 "
			 "new_version 4 kcv - steps prepare,", l.name);
		assert_non_null(hist);
		assert_non_null(strstr(hist, want));
		assert_int_equal(km_read_current(&x->k, &l, &an, &v, &when, kcv, keyid), 0);
		assert_int_equal(an, 1);
		assert_int_equal(v, 4);
		assert_string_equal(kcv, "abcdef");
	}
	return ended;
}

static void batch_commit_whole(void **state)
{
	struct fx *x = *state;
	char path[256];

	run_batch(x, NULL, 0);
	assert_int_equal(assert_each_link_told(x), NB);
	snprintf(path, sizeof(path), "%s/current-h1-h2.100.tmp", x->dir);
	assert_int_equal(access(path, F_OK), -1);
}

static void batch_killed_before_its_flush(void **state)
{
	struct fx *x = *state;

	run_batch(x, "queued", 0);
	assert_int_equal(assert_each_link_told(x), 0); /* all at retire: recovery finishes */
}

static void batch_killed_after_its_history(void **state)
{
	struct fx *x = *state;

	run_batch(x, "history", 0);
	assert_int_equal(assert_each_link_told(x), 0);
}

static void batch_killed_among_its_records(void **state)
{
	struct fx *x = *state;

	for (size_t at = 0; at < NB; at += 2) {
		run_batch(x, "current", at);
		assert_int_equal(assert_each_link_told(x), 0); /* no journal ends before all */
	}
}

static void batch_killed_among_its_journal_ends(void **state)
{
	struct fx *x = *state;

	for (size_t at = 0; at < NB; at++) {
		run_batch(x, "end", at);
		assert_int_equal(assert_each_link_told(x), at + 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(held_fd_same_lines_and_closed_at_end, setup, teardown),
		cmocka_unit_test_setup_teardown(past_the_cap_opened_per_line, setup, teardown),
		cmocka_unit_test_setup_teardown(close_keeps_the_journal_for_recover, setup, teardown),
		cmocka_unit_test_setup_teardown(deferred_lines_synced_by_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(batch_commit_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(batch_killed_before_its_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(batch_killed_after_its_history, setup, teardown),
		cmocka_unit_test_setup_teardown(batch_killed_among_its_records, setup, teardown),
		cmocka_unit_test_setup_teardown(batch_killed_among_its_journal_ends, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
