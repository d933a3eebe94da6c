// SPDX-License-Identifier: MIT
/* Applied profiles: the history, its stored copies, the last applied state. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fctl/approvals.h"
#include "fctl/rotation.h"

#include "engine_int.h"

int fctl_engi_history_read(const char *dir, struct fctl_history_entry **out, size_t *n)
{
	char path[PATH_MAX + 32], line[4096];
	struct fctl_history_entry *v = NULL;
	size_t cnt = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/history/index", dir);
	f = fctl_fopen_ro(path);
	if (!f) {
		*out = NULL;
		*n = 0;
		return errno == ENOENT ? 0 : -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		struct fctl_history_entry *h;
		char *tok[7], *save = NULL;
		int nt = 0;

		line[strcspn(line, "\n")] = '\0';
		for (char *t = strtok_r(line, "\t", &save); t && nt < 7; t = strtok_r(NULL, "\t", &save))
			tok[nt++] = t;
		if (nt != 7)
			continue;
		h = fctl_array_grow(&v, &cnt, &cap, sizeof(*h));
		if (!h)
			break;
		fctl_parse_u64(tok[0], &h->seq);
		fctl_parse_u64(tok[1], &h->version);
		snprintf(h->name, sizeof(h->name), "%s", tok[2]);
		snprintf(h->sha256, sizeof(h->sha256), "%s", tok[3]);
		snprintf(h->time, sizeof(h->time), "%s", tok[4]);
		snprintf(h->file, sizeof(h->file), "%s", tok[5]);
		snprintf(h->dir, sizeof(h->dir), "%s", tok[6]);
	}
	fclose(f);
	*out = v;
	*n = cnt;
	return 0;
}

static int history_add(struct eng *e, const struct fctl_profile *p)
{
	struct fctl_history_entry *v = NULL;
	struct fctl_buf src = { 0 }, line = { 0 };
	char copy[PATH_MAX + 64], idx[PATH_MAX + 32], tbuf[32], *absdir;
	uint64_t seq = 1;
	size_t n = 0;
	time_t t = time(NULL);
	struct tm tm;
	int fd, r;

	r = fctl_engi_history_read(e->dir, &v, &n);
	if (r < 0)
		return r;
	if (n)
		seq = v[n - 1].seq + 1;
	free(v);
	r = fctl_file_read(p->file, &src);
	if (r < 0)
		goto out;
	snprintf(copy, sizeof(copy), "%s/history/%06" PRIu64 "-v%" PRIu64 ".yaml", e->dir, seq,
		 p->version);
	fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = fctl_write_all(fd, src.data, src.len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	/* the version's approvals stay with its copy: a rollback to it needs them */
	if (r == 0)
		r = fctl_approvals_keep(p->file, copy);
	if (r < 0)
		goto out;
	gmtime_r(&t, &tm);
	strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	absdir = realpath(p->dir, NULL);
	fctl_buf_printf(&line, "%" PRIu64 "\t%" PRIu64 "\t%s\t", seq, p->version,
			p->name ? p->name : "?");
	fctl_buf_put_hex(&line, p->sha256, 32);
	fctl_buf_printf(&line, "\t%s\t%s\t%s\n", tbuf, copy, absdir ? absdir : p->dir);
	free(absdir);
	snprintf(idx, sizeof(idx), "%s/history/index", e->dir);
	fd = open(idx, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = fctl_write_all(fd, line.data, line.len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
out:
	fctl_buf_release(&src);
	fctl_buf_release(&line);
	return r;
}

int fctl_engi_history_load(const struct fctl_history_entry *h, struct fctl_diags *d,
			   struct fctl_profile **out)
{
	struct fctl_profile *p = NULL;
	int r = fctl_profile_load(h->file, d, &p);

	if (r < 0)
		return r;
	/* relative key ids resolve where the profile originally lived */
	free(p->dir);
	p->dir = strdup(h->dir);
	fctl_profile_validate(p, d);
	if (!p->dir || d->n_errors) {
		fctl_profile_free(p);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

int fctl_engine_load_version(const struct fctl_engine_opts *o, uint64_t version,
			     struct fctl_diags *d, struct fctl_profile **out)
{
	struct fctl_history_entry *v = NULL;
	size_t n = 0;
	int r = fctl_engine_history(o, &v, &n);

	if (r < 0)
		return r;
	r = -ENOENT;
	for (size_t i = n; i-- > 0;) {
		if (version == 0 || v[i].version == version) {
			r = fctl_engi_history_load(&v[i], d, out);
			break;
		}
	}
	free(v);
	return r;
}

void fctl_engine_history_format(const struct fctl_history_entry *v, size_t n, bool json,
				struct fctl_buf *out)
{
	if (json)
		fctl_buf_puts(out, "[");
	else if (!n)
		fctl_buf_puts(out, "no profile has been applied on this host\n");
	else
		fctl_buf_printf(out, "%-5s %-8s %-20s %-21s %s\n", "SEQ", "VERSION", "PROFILE",
				"APPLIED (UTC)", "SHA-256");
	for (size_t i = 0; i < n; i++) {
		if (json) {
			fctl_buf_printf(out, "%s{\"seq\":%" PRIu64 ",\"version\":%" PRIu64 ",\"profile\":",
					i ? "," : "", v[i].seq, v[i].version);
			fctl_buf_json_str(out, v[i].name);
			fctl_buf_printf(out, ",\"applied\":\"%s\",\"sha256\":\"%s\",\"stored\":",
					v[i].time, v[i].sha256);
			fctl_buf_json_str(out, v[i].file);
			fctl_buf_putc(out, '}');
		} else {
			fctl_buf_printf(out, "%-5" PRIu64 " %-8" PRIu64 " %-20s %-21s %.16s\n",
					v[i].seq, v[i].version, v[i].name, v[i].time, v[i].sha256);
		}
	}
	if (json)
		fctl_buf_puts(out, "]\n");
}

/* Desired state: the profile rendered, with the SAs that key rotation moved
 * (STATE_DIR/rotation, docs/rotation.md) where they live now. */
int fctl_engi_render_host(const struct eng *e, const struct fctl_profile *p,
			  struct fctl_host_state **out)
{
	struct fctl_host_state *hs = NULL;
	int r = fctl_profile_render_host(p, e->host, &hs);

	if (r < 0)
		return r;
	r = fctl_engi_desired_overlay(e, hs);
	if (r < 0) {
		fctl_host_state_free(hs);
		return r;
	}
	*out = hs;
	return 0;
}

int fctl_engi_desired_overlay(const struct eng *e, struct fctl_host_state *rendered)
{
	char dir[PATH_MAX + 16];

	snprintf(dir, sizeof(dir), "%s/rotation", e->dir);
	return fctl_rotation_overlay(rendered, dir);
}

/* The last applied profile's desired state for this host: *prev (NULL when
 * nothing was applied), *owned what the caller frees. When the last applied
 * profile has the bytes of p (the re-apply, and every plan or show after an
 * apply), that is want itself: loading, validating and rendering the stored
 * copy again gives the same links, and want comes first wherever the two are
 * used together (names, restrict_live, key references). */
void fctl_engi_last_applied(struct eng *e, const struct fctl_profile *p,
			    const struct fctl_host_state *want, const struct fctl_host_state **prev,
			    struct fctl_host_state **owned)
{
	struct fctl_history_entry *v = NULL;
	struct fctl_diags d = { 0 };
	struct fctl_profile *old = NULL;
	struct fctl_host_state *hs = NULL;
	size_t n = 0;

	*prev = NULL;
	*owned = NULL;
	if (fctl_engi_history_read(e->dir, &v, &n) < 0 || !n) {
		free(v);
		return;
	}
	if (p && want) {
		char sha[65];

		fctl_format_hex(p->sha256, 32, sha);
		if (strcmp(v[n - 1].sha256, sha) == 0) {
			*prev = want;
			free(v);
			return;
		}
	}
	if (fctl_engi_history_load(&v[n - 1], &d, &old) == 0) {
		if (fctl_profile_find_host(old, e->host))
			fctl_engi_render_host(e, old, &hs);
		fctl_profile_free(old);
	}
	fctl_diags_release(&d);
	free(v);
	*prev = hs;
	*owned = hs;
}

int fctl_engi_history_record(struct eng *e, const struct fctl_profile *p, char *err,
			     size_t errlen)
{
	struct fctl_history_entry *v = NULL;
	size_t n = 0;
	char sha[65];
	int r = 0;

	fctl_format_hex(p->sha256, 32, sha);
	/* record a version once per change: re-applying the same bytes adds nothing */
	fctl_engi_history_read(e->dir, &v, &n);
	if (!n || strcmp(v[n - 1].sha256, sha) != 0) {
		r = history_add(e, p);
		if (r < 0)
			snprintf(err, errlen, "applied, but the history could not be written: %s",
				 strerror(-r));
	}
	free(v);
	return r;
}
