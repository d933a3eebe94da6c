// SPDX-License-Identifier: MIT
/* fabricctl __test-fork-server (builds with FCTL_TEST_HOOKS only): runs fabricctl's own
 * dispatch in a forked child per request, so a test that runs the parsers thousands of
 * times (tests/cli/complete.sh) pays a fork each instead of an exec and the dynamic
 * loading of libcrypto and libnl (about 10 ms of CPU a start on the build machines). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#ifdef FCTL_TEST_HOOKS

enum { REQ_MAX = 16384, ARGS_MAX = 64 };

/* one line from fd into line (without its newline): 1, 0 at EOF, -EINVAL when too long */
static int read_line(int fd, char *buf, size_t *have, char *line)
{
	for (;;) {
		char *nl = memchr(buf, '\n', *have);
		if (nl) {
			size_t n = (size_t)(nl - buf);
			memcpy(line, buf, n);
			line[n] = '\0';
			*have -= n + 1;
			memmove(buf, nl + 1, *have);
			return 1;
		}
		if (*have == REQ_MAX)
			return -EINVAL;
		ssize_t r = read(fd, buf + *have, REQ_MAX - *have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		*have += (size_t)r;
	}
}

static int open_to(const char *path, int flags, int to)
{
	int fd = open(path, flags | O_CLOEXEC, 0600);
	if (fd < 0 || dup2(fd, to) < 0)
		return -1;
	if (fd != to)
		close(fd);
	return 0;
}

/* the child: its standard streams as the request names them, then the dispatch */
static void child(char *argv0, char **f, int nf, cli_dispatch_fn dispatch)
{
	char *av[ARGS_MAX + 2];
	int ac = 0;

	if (open_to("/dev/null", O_RDONLY, 0) < 0 || open_to(f[0], O_WRONLY | O_CREAT | O_TRUNC, 1) < 0 ||
	    open_to(f[1], O_WRONLY | O_CREAT | O_TRUNC, 2) < 0)
		_exit(125);
	av[ac++] = argv0;
	for (int i = 2; i < nf; i++)
		av[ac++] = f[i];
	av[ac] = NULL;
	exit(dispatch(ac, av));
}

int cli_test_fork_server(char *argv0, const char *req, const char *rep, cli_dispatch_fn dispatch)
{
	static char buf[REQ_MAX], line[REQ_MAX + 1];
	size_t have = 0;
	int in = open(req, O_RDONLY | O_CLOEXEC);
	int out = in < 0 ? -1 : open(rep, O_WRONLY | O_CLOEXEC);
	int r;

	if (in < 0 || out < 0) {
		fprintf(stderr, "%s: __test-fork-server: cannot open %s or %s\n", prog_name, req, rep);
		return EXIT_USAGE;
	}
	while ((r = read_line(in, buf, &have, line)) > 0) {
		char *f[ARGS_MAX + 2], *save = NULL, *t;
		int nf = 0, status = 0, rc;
		char ans[16];

		if (line[0] == '\0')
			break; /* an empty line: the end of the requests */
		for (t = strtok_r(line, "\t", &save); t && nf < ARGS_MAX + 2; t = strtok_r(NULL, "\t", &save))
			f[nf++] = t;
		if (nf < 2 || t) {
			rc = 124; /* not OUT<TAB>ERR[<TAB>ARG]... */
		} else {
			pid_t pid = fork();
			if (pid == 0)
				child(argv0, f, nf, dispatch);
			while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			if (pid < 0)
				rc = 126;
			else if (WIFEXITED(status))
				rc = WEXITSTATUS(status);
			else
				rc = 128 + WTERMSIG(status);
		}
		int n = snprintf(ans, sizeof(ans), "%d\n", rc);
		if (write(out, ans, (size_t)n) != n)
			break;
	}
	close(in);
	close(out);
	return r < 0 ? EXIT_USAGE : EXIT_OK;
}

#endif
