// SPDX-License-Identifier: MIT
/* The apply journal: the prior state, written before the first op, removed at the end. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine_int.h"

#define JOURNAL_MAGIC "fabricctl-journal 1"

static void journal_path(const struct eng *e, char *out, size_t len)
{
	snprintf(out, len, "%s/journal", e->dir);
}

int fctl_engi_journal_begin(struct eng *e, const struct fctl_profile *p,
			    const struct fctl_host_state *before, const struct fctl_plan *plan)
{
	struct fctl_buf b = { 0 };
	char path[PATH_MAX + 16], tmp[PATH_MAX + 24];
	int r;

	fctl_buf_printf(&b, "%s\nhost %s\nprofile %s\nversion %" PRIu64 "\nops %zu\n",
			JOURNAL_MAGIC, e->host, p && p->name ? p->name : "-",
			p ? p->version : 0, plan->n_ops);
	/* the links the plan touches: recovery looks at these too, the new ones included */
	for (size_t i = 0; i < plan->n_ops; i++)
		if (i == 0 || strcmp(plan->ops[i].ifname, plan->ops[i - 1].ifname) != 0)
			fctl_buf_printf(&b, "link %s\n", plan->ops[i].ifname);
	r = fctl_host_state_save(before, &b);
	if (r < 0)
		goto out;
	journal_path(e, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	r = fctl_file_replace(path, tmp, b.data, b.len, 0600, FCTL_FILE_SYNC_DIR);
out:
	fctl_buf_release(&b);
	return r;
}

int fctl_engi_journal_end(struct eng *e)
{
	char path[PATH_MAX + 16];

	journal_path(e, path, sizeof(path));
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	fctl_fsync_parent(path); /* the removal is durable */
	return 0;
}

/* The "link NAME" lines of a journal (before its state) as links of a state: names only. */
static int journal_links(const char *text, const char *end, const char *host,
			 struct fctl_host_state **out)
{
	struct fctl_host_state *hs = fctl_host_state_new(host);

	if (!hs)
		return -ENOMEM;
	for (const char *l = strstr(text, "\nlink "); l && l < end; l = strstr(l + 1, "\nlink ")) {
		char name[FCTL_IFNAMSIZ];
		size_t n = strcspn(l + 6, "\n");

		if (n == 0 || n >= sizeof(name))
			continue;
		memcpy(name, l + 6, n);
		name[n] = '\0';
		if (!fctl_host_state_add_link(hs, FCTL_LINK_VLAN, name)) {
			fctl_host_state_free(hs);
			return -ENOMEM;
		}
	}
	*out = hs;
	return 0;
}

/* Reads the prior state of an interrupted apply, or *before = NULL if none, and the
 * links its plan touched (*touched, names only; empty for a journal without them). */
int fctl_engi_journal_read(struct eng *e, struct fctl_host_state **before,
			   struct fctl_host_state **touched, char *err, size_t errlen)
{
	struct fctl_buf b = { 0 };
	char path[PATH_MAX + 16];
	const char *st;
	size_t used;
	int r;

	*before = NULL;
	*touched = NULL;
	journal_path(e, path, sizeof(path));
	r = fctl_file_read(path, &b);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(err, errlen, "cannot read journal '%s': %s", path, strerror(-r));
		return r;
	}
	if (!b.data || strncmp(b.data, JOURNAL_MAGIC "\n", strlen(JOURNAL_MAGIC) + 1) != 0 ||
	    !(st = strstr(b.data, "\nstate "))) {
		snprintf(err, errlen, "journal '%s' is not a fabricctl journal; refusing to guess",
			 path);
		fctl_buf_release(&b);
		return -EINVAL;
	}
	r = fctl_host_state_load(st + 1, &used, before);
	if (r < 0)
		snprintf(err, errlen, "journal '%s' is damaged (prior state unreadable)", path);
	if (r == 0) {
		r = journal_links(b.data, st + 1, e->host, touched);
		if (r < 0) {
			fctl_host_state_free(*before);
			*before = NULL;
		}
	}
	fctl_buf_release(&b);
	return r;
}
