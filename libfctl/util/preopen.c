// SPDX-License-Identifier: MIT
/* Files opened before a process gave up the right to open them (fctl_open_ro). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fctl/util.h"

#define PREOPEN_MAX 64

static struct {
	char *path;
	int fd;
} table[PREOPEN_MAX];
static size_t n_table;

int fctl_preopen_add(const char *path, int fd)
{
	char *p;

	if (fd < 0)
		return -EBADF;
	if (n_table == PREOPEN_MAX) {
		close(fd);
		return -ENOSPC;
	}
	p = fctl_strdup(path);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	table[n_table].path = p;
	table[n_table++].fd = fd;
	return 0;
}

int fctl_open_ro(const char *path, int flags)
{
	int fd;

	for (size_t i = 0; i < n_table; i++) {
		if (strcmp(table[i].path, path) != 0)
			continue;
		/* a new descriptor of the same open file, read from its start again */
		fd = fcntl(table[i].fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (lseek(fd, 0, SEEK_SET) < 0) {
			int r = -errno;

			close(fd);
			return r;
		}
		return fd;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | flags);
	return fd < 0 ? -errno : fd;
}

FILE *fctl_fopen_ro(const char *path)
{
	int fd = fctl_open_ro(path, 0);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "re");
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}
