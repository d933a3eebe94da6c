// SPDX-License-Identifier: MIT
/* A deterministic ustar writer: sorted names, fixed owner, times and modes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/evidence.h"

static int cmp_file(const void *a, const void *b)
{
	const struct fctl_evidence_file *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static void octal(char *field, size_t width, unsigned long long v)
{
	/* width-1 digits, zero padded, NUL terminated */
	snprintf(field, width, "%0*llo", (int)width - 1, v);
}

int fctl_evidence_tar(struct fctl_evidence_file *files, size_t n, struct fctl_buf *out)
{
	static const char zero[1024];

	if (n > 1)
		qsort(files, n, sizeof(*files), cmp_file);
	for (size_t i = 0; i < n; i++) {
		char h[512];
		size_t nl = strlen(files[i].name);
		unsigned int sum = 0;
		const char *name = files[i].name, *prefix = "";
		size_t plen = 0;

		if (i && strcmp(files[i - 1].name, name) == 0)
			return -EEXIST;
		if (nl > 100) { /* split at a slash into prefix (155) and name (100) */
			const char *s = strrchr(name, '/');

			if (!s || (size_t)(s - name) > 155 || nl - (size_t)(s - name) - 1 > 100)
				return -ENAMETOOLONG;
			prefix = name;
			plen = (size_t)(s - name);
			name = s + 1;
		}
		memset(h, 0, sizeof(h));
		memcpy(h, name, strlen(name));
		octal(h + 100, 8, 0644);             /* mode */
		octal(h + 108, 8, 0);                /* uid */
		octal(h + 116, 8, 0);                /* gid */
		octal(h + 124, 12, files[i].len);    /* size */
		octal(h + 136, 12, 0);               /* mtime: fixed */
		memset(h + 148, ' ', 8);             /* checksum, counted as spaces */
		h[156] = '0';                        /* regular file */
		memcpy(h + 257, "ustar", 6);         /* magic + NUL */
		memcpy(h + 263, "00", 2);            /* version */
		memcpy(h + 265, "root", 4);          /* uname */
		memcpy(h + 297, "root", 4);          /* gname */
		memcpy(h + 345, prefix, plen);
		for (size_t k = 0; k < sizeof(h); k++)
			sum += (unsigned char)h[k];
		snprintf(h + 148, 8, "%06o", sum);   /* six digits, NUL, space */
		h[155] = ' ';
		fctl_buf_append(out, h, sizeof(h));
		fctl_buf_append(out, files[i].data, files[i].len);
		if (files[i].len % 512)
			fctl_buf_append(out, zero, 512 - files[i].len % 512);
	}
	fctl_buf_append(out, zero, 1024); /* two zero blocks end the archive */
	/* whole records of 20 blocks, as tar writes them */
	while (out->len % 10240 && !out->oom)
		fctl_buf_append(out, zero, 10240 - out->len % 10240 > 1024 ? 1024 : 10240 - out->len % 10240);
	return out->oom ? -ENOMEM : 0;
}
