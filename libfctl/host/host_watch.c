// SPDX-License-Identifier: MIT
/* apply --confirm's watchdog started by the host transaction: the program again as
 * 'confirm --watchdog ID' in a session of its own, the deadline's owner on the host. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fctl/host_apply.h"
#include "fctl/util.h"

#define READY_TIMEOUT_MS 10000 /* how long apply waits for its watchdog to say it watches */

/* In the grandchild: self_exe as 'fabricctl confirm --watchdog ID --ready-fd 3 ...'. */
static void exec_watchdog(const struct fctl_engine_opts *eo, const char *self_exe,
			  const char *audit_log, const char *change_id)
{
	const char *opt[][2] = {
		{ "--watchdog", eo->confirm_id }, { "--ready-fd", "3" }, { "--life-fd", "4" },
		{ "--state-dir", eo->state_dir }, { "--netns", eo->netns },
		{ "--host", eo->host },	  { "--audit-log", audit_log },
		{ "--change", change_id },
	};
	char *argv[2 + 2 * FCTL_ARRAY_SIZE(opt) + 1];
	int argc = 0;

	argv[argc++] = strdup("fabricctl");
	argv[argc++] = strdup("confirm");
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(opt); i++) {
		if (!opt[i][1])
			continue;
		argv[argc++] = strdup(opt[i][0]);
		argv[argc++] = strdup(opt[i][1]);
	}
	argv[argc] = NULL;
	for (int i = 0; i < argc; i++)
		if (!argv[i])
			_exit(127);
	execv(self_exe, argv);
	_exit(127);
}

/* The child's side: a new session, fork again (so it is nobody's child), stdio on
 * /dev/null, the ready pipe on 3 and the life pipe on 4, then exec_watchdog. */
static void child(const struct fctl_engine_opts *eo, const char *self_exe,
		  const char *audit_log, const char *change_id, int ready, int life)
{
	int nul = open("/dev/null", O_RDWR);

	if (setsid() < 0 || nul < 0 || fork() != 0)
		_exit(0);
	dup2(nul, 0);
	dup2(nul, 1);
	dup2(nul, 2);
	/* ready and life are above 4 or a dup2 of them would close the other */
	if (ready < 5 || life < 5) {
		ready = fcntl(ready, F_DUPFD_CLOEXEC, 5);
		life = fcntl(life, F_DUPFD_CLOEXEC, 5);
	}
	if (ready < 0 || life < 0 || dup2(ready, 3) < 0 || dup2(life, 4) < 0)
		_exit(127); /* dup2 leaves 3 and 4 without O_CLOEXEC */
	for (int fd = 5; fd < 1024; fd++)
		close(fd);
	exec_watchdog(eo, self_exe, audit_log, change_id);
}

/* Starts the watchdog; 0 once it said it watches; *life_fd is this process's end of the
 * pipe whose closing (at exit, or a kill -9) tells the watchdog it is gone. */
static int start_watchdog(const struct fctl_engine_opts *eo, const char *self_exe,
			  const char *audit_log, const char *change_id, int *life_fd)
{
	struct pollfd pfd;
	int p[2], life[2], st;
	char b = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(life, O_CLOEXEC) < 0) {
		st = -errno;
		close(p[0]);
		close(p[1]);
		return st;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		child(eo, self_exe, audit_log, change_id, p[1], life[0]);
	close(p[1]);
	close(life[0]);
	if (pid < 0) {
		st = -errno;
		close(p[0]);
		close(life[1]);
		return st;
	}
	waitpid(pid, &st, 0);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	st = poll(&pfd, 1, READY_TIMEOUT_MS) == 1 && read(p[0], &b, 1) == 1 && b == '1';
	close(p[0]);
	if (!st) {
		close(life[1]);
		return -ECHILD;
	}
	*life_fd = life[1];
	return 0;
}

int fctl_host_confirm_watch(const struct fctl_engine_opts *eo, const char *self_exe,
			    const char *audit_log, const char *change_id, int *life_fd)
{
	struct fctl_confirm_pending c;

	*life_fd = -1;
	if (fctl_engine_confirm_pending(eo, &c) == 1)
		return 0; /* one is pending: the engine refuses this apply and says why */
	return start_watchdog(eo, self_exe ? self_exe : "/proc/self/exe", audit_log, change_id,
			      life_fd);
}
