// SPDX-License-Identifier: MIT
/*
 * Unit tests of the MKA supervision (fctl/mka_super.h): the backoff, the restart
 * decision over a series of observations (the clock passed in, never waited for), and
 * the health of a port against stand-ins: no run directory, a pid file naming a process
 * that is not wpa_supplicant, and a process named wpa_supplicant (a copy of sleep) with
 * no control interface, which is hung and which fctl_mka_kill ends.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/mka.h"
#include "fctl/mka_super.h"

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(fctl_mka_sup_backoff_ms(0), 0);
	assert_int_equal(fctl_mka_sup_backoff_ms(1), 2000);
	assert_int_equal(fctl_mka_sup_backoff_ms(2), 4000);
	assert_int_equal(fctl_mka_sup_backoff_ms(3), 8000);
	assert_int_equal(fctl_mka_sup_backoff_ms(5), 32000);
	assert_int_equal(fctl_mka_sup_backoff_ms(6), 60000);
	assert_int_equal(fctl_mka_sup_backoff_ms(1000), 60000);
}

/* A port that keeps dying: restarted at once, then never sooner than the backoff. */
static void test_dead_backoff(void **state)
{
	struct fctl_mka_sup s = { 0 };
	uint64_t t = 100000;
	unsigned restarts = 0;

	(void)state;
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_DEAD, t), FCTL_MKA_RESTART);
	assert_int_equal(s.streak, 1);
	/* dead again at the next checks: wait until 2 s have passed */
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_DEAD, t + 1999), FCTL_MKA_WAIT);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_DEAD, t + 2000), FCTL_MKA_RESTART);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_DEAD, t + 5999), FCTL_MKA_WAIT);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_DEAD, t + 6000), FCTL_MKA_RESTART);
	/* checked every 2 s for 10 minutes while it keeps dying: at most one restart a
	 * minute once the backoff is at its cap, never a tight loop */
	for (uint64_t now = t + 8000; now < t + 600000; now += 2000)
		restarts += fctl_mka_sup_decide(&s, FCTL_MKA_DEAD, now) == FCTL_MKA_RESTART;
	assert_true(restarts >= 9 && restarts <= 13);
	assert_int_equal(fctl_mka_sup_backoff_ms(s.streak), 60000);
}

/* Healthy a short while does not reset the backoff; healthy a minute does. */
static void test_stable_resets(void **state)
{
	struct fctl_mka_sup s = { 0 };
	uint64_t t = 5000;

	(void)state;
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_DEAD, t), FCTL_MKA_RESTART);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_OK, t + 2000), FCTL_MKA_NONE);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_DEAD, t + 4000), FCTL_MKA_RESTART);
	assert_int_equal(s.streak, 2);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_OK, t + 10000), FCTL_MKA_NONE);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_OK, t + 10000 + 59999), FCTL_MKA_NONE);
	assert_int_equal(s.streak, 2);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_OK, t + 10000 + 60000), FCTL_MKA_NONE);
	assert_int_equal(s.streak, 0);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_DEAD, t + 80000), FCTL_MKA_RESTART);
	assert_int_equal(s.streak, 1);
}

/* One unanswered PING is not a hang; two in a row are; an answer in between resets. */
static void test_hung_needs_two(void **state)
{
	struct fctl_mka_sup s = { 0 };

	(void)state;
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_HUNG, 1000), FCTL_MKA_NONE);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_OK, 3000), FCTL_MKA_NONE);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_HUNG, 5000), FCTL_MKA_NONE);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_HUNG, 7000), FCTL_MKA_RESTART);
	assert_int_equal(s.streak, 1);
	/* hung again right after: one more miss, then the backoff */
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_HUNG, 8000), FCTL_MKA_NONE);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_HUNG, 8500), FCTL_MKA_WAIT);
	assert_int_equal(fctl_mka_sup_decide(&s, FCTL_MKA_HUNG, 9000), FCTL_MKA_RESTART);
}

static void write_pid(const char *dir, pid_t pid)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/pid", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%ld\n", (long)pid);
	fclose(f);
}

static void test_health(void **state)
{
	char dir[] = "/tmp/fctl-mkasup-XXXXXX", exe[PATH_MAX], pidf[PATH_MAX];
	int st;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(fctl_mka_health("eth9.9", "/nonexistent/fctl-mkasup"), FCTL_MKA_DEAD);
	/* a pid file naming this test (not a wpa_supplicant): dead, and never killed */
	write_pid(dir, getpid());
	assert_int_equal(fctl_mka_health("eth9.9", dir), FCTL_MKA_DEAD);
	assert_int_equal(fctl_mka_kill("eth9.9", dir), -ESRCH);
	/* a process called wpa_supplicant without a control interface: hung */
	snprintf(exe, sizeof(exe), "%s/wpa_supplicant", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char cmd[PATH_MAX * 2 + 32];

		snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s", exe);
		if (system(cmd) != 0)
			_exit(126);
		execl(exe, "wpa_supplicant", "30", (char *)NULL);
		_exit(127);
	}
	write_pid(dir, pid);
	/* bounded: the child copies and executes before its /proc/PID/exe names it */
	for (int i = 0; i < 200 && fctl_mka_health("eth9.9", dir) == FCTL_MKA_DEAD; i++)
		usleep(20000);
	assert_int_equal(fctl_mka_health("eth9.9", dir), FCTL_MKA_HUNG);
	assert_string_equal(fctl_mka_health_name(FCTL_MKA_HUNG), "hung");
	assert_int_equal(fctl_mka_kill("eth9.9", dir), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(fctl_mka_health("eth9.9", dir), FCTL_MKA_DEAD);
	snprintf(pidf, sizeof(pidf), "%s/pid", dir);
	unlink(pidf);
	unlink(exe);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_dead_backoff),
		cmocka_unit_test(test_stable_resets),
		cmocka_unit_test(test_hung_needs_two),
		cmocka_unit_test(test_health),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
