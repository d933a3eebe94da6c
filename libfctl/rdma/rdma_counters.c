// SPDX-License-Identifier: MIT
/* RDMA device counters from sysfs (hw_counters), and their deltas. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fctl/rdma.h"

#define SYSFS_IB "/sys/class/infiniband"

static int read_u64_file(int dirfd, const char *name, uint64_t *out)
{
	char buf[64], *end;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t n;
	unsigned long long v;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	*out = v;
	return 0;
}

static int cmp_counter(const void *a, const void *b)
{
	return strcmp(((const struct fctl_rdma_counter *)a)->name,
		      ((const struct fctl_rdma_counter *)b)->name);
}

int fctl_rdma_counters_read_dir(const char *path, struct fctl_rdma_counters *out)
{
	DIR *d = opendir(path);
	struct dirent *e;
	struct fctl_rdma_counters *c;
	int ret = 0;

	if (!d)
		return -errno;
	c = calloc(1, sizeof(*c));
	if (!c) {
		closedir(d);
		return -ENOMEM;
	}
	while ((e = readdir(d)) != NULL) {
		uint64_t v = 0;

		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(c->c[0].name))
			continue;
		if (read_u64_file(dirfd(d), e->d_name, &v) < 0)
			continue; /* not a counter (a directory, or unreadable) */
		if (c->n == FCTL_RDMA_MAX_COUNTERS) {
			ret = -E2BIG;
			break;
		}
		snprintf(c->c[c->n].name, sizeof(c->c[0].name), "%s", e->d_name);
		c->c[c->n++].value = v;
	}
	closedir(d);
	if (ret == 0) {
		qsort(c->c, c->n, sizeof(c->c[0]), cmp_counter);
		*out = *c;
	}
	free(c);
	return ret;
}

int fctl_rdma_counters_read(const char *dev, uint8_t port, struct fctl_rdma_counters *out)
{
	char path[256];

	snprintf(path, sizeof(path), SYSFS_IB "/%s/ports/%u/hw_counters", dev, port);
	return fctl_rdma_counters_read_dir(path, out);
}

void fctl_rdma_counters_delta(const struct fctl_rdma_counters *before,
			      const struct fctl_rdma_counters *after, struct fctl_rdma_counters *out)
{
	size_t n = 0;

	for (size_t i = 0; i < after->n; i++) {
		uint64_t b = 0;

		for (size_t j = 0; j < before->n; j++)
			if (strcmp(before->c[j].name, after->c[i].name) == 0)
				b = before->c[j].value;
		out->c[n] = after->c[i];
		out->c[n].value = after->c[i].value >= b ? after->c[i].value - b : 0;
		n++;
	}
	out->n = n;
	if (out->n > 1)
		qsort(out->c, out->n, sizeof(out->c[0]), cmp_counter);
}

int fctl_rdma_dev_exists(const char *dev)
{
	char path[256];

	snprintf(path, sizeof(path), SYSFS_IB "/%s", dev);
	return access(path, F_OK) == 0 ? 1 : 0;
}
