// SPDX-License-Identifier: MIT
/* Confirmed apply: the pending record STATE_DIR/confirm, confirm, and the rollback at the deadline. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine_int.h"

#define CONFIRM_MAGIC "fabricctl-confirm 1"

static void confirm_path(const char *dir, char *out, size_t len)
{
	snprintf(out, len, "%s/confirm", dir);
}

int fctl_engi_confirm_write(const struct eng *e, const struct fctl_confirm_pending *c)
{
	struct fctl_buf b = { 0 };
	char path[PATH_MAX + 16], tmp[PATH_MAX + 24];
	int r;

	fctl_buf_printf(&b, "%s\nid %s\ndeadline %" PRId64 "\nstarted %" PRId64 "\nversion %" PRIu64
			"\nname %s\nprev_seq %" PRIu64 "\nprev_version %" PRIu64 "\nstate %s\n",
			CONFIRM_MAGIC, c->id[0] ? c->id : "-", c->deadline, c->started, c->version,
			c->name[0] ? c->name : "-", c->prev_seq, c->prev_version,
			c->expiring ? "expiring" : "armed");
	confirm_path(e->dir, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	r = b.data ? fctl_file_replace(path, tmp, b.data, b.len, 0600, FCTL_FILE_SYNC_DIR) : -ENOMEM;
	fctl_buf_release(&b);
	return r;
}

int fctl_engi_confirm_remove(const struct eng *e)
{
	char path[PATH_MAX + 16];

	confirm_path(e->dir, path, sizeof(path));
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	fctl_fsync_parent(path);
	return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
	uint64_t v;
	int r = fctl_parse_u64(s, &v);

	if (r == 0 && v > INT64_MAX)
		r = -ERANGE;
	if (r == 0)
		*out = (int64_t)v;
	return r;
}

/* One "key value" line into c; -EINVAL on a bad value (unknown keys are skipped). */
static int parse_line(char *line, struct fctl_confirm_pending *c, unsigned *seen)
{
	char *v = strchr(line, ' ');
	int r = 0;

	if (!v)
		return -EINVAL;
	*v++ = '\0';
	if (strcmp(line, "id") == 0)
		snprintf(c->id, sizeof(c->id), "%s", v);
	else if (strcmp(line, "name") == 0)
		snprintf(c->name, sizeof(c->name), "%s", v);
	else if (strcmp(line, "deadline") == 0)
		r = parse_i64(v, &c->deadline), *seen |= 1;
	else if (strcmp(line, "started") == 0)
		r = parse_i64(v, &c->started);
	else if (strcmp(line, "version") == 0)
		r = fctl_parse_u64(v, &c->version);
	else if (strcmp(line, "prev_seq") == 0)
		r = fctl_parse_u64(v, &c->prev_seq), *seen |= 2;
	else if (strcmp(line, "prev_version") == 0)
		r = fctl_parse_u64(v, &c->prev_version);
	else if (strcmp(line, "state") == 0) {
		if (strcmp(v, "expiring") != 0 && strcmp(v, "armed") != 0)
			return -EINVAL;
		c->expiring = strcmp(v, "expiring") == 0;
		*seen |= 4;
	}
	return r;
}

int fctl_engi_confirm_read(const char *dir, struct fctl_confirm_pending *out)
{
	char path[PATH_MAX + 16], line[512];
	struct fctl_confirm_pending c;
	unsigned seen = 0;
	int r = 0;
	FILE *f;

	confirm_path(dir, path, sizeof(path));
	f = fctl_fopen_ro(path);
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	memset(&c, 0, sizeof(c));
	if (!fgets(line, sizeof(line), f) || strncmp(line, CONFIRM_MAGIC "\n", sizeof(line)) != 0)
		r = -EINVAL;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		r = parse_line(line, &c, &seen);
	}
	fclose(f);
	if (r == 0 && seen != 7)
		r = -EINVAL; /* deadline, prev_seq and state are required */
	if (r < 0)
		return r;
	*out = c;
	return 1;
}

int fctl_engine_confirm_pending(const struct fctl_engine_opts *o, struct fctl_confirm_pending *out)
{
	char dir[PATH_MAX];

	fctl_state_dir_path(o->state_dir, o->netns, dir, sizeof(dir));
	return fctl_engi_confirm_read(dir, out);
}

static void fmt_deadline(int64_t t, char *out, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int fctl_engi_confirm_refuse(const struct eng *e, char *err, size_t errlen)
{
	struct fctl_confirm_pending c;
	char when[32];
	int r = fctl_engi_confirm_read(e->dir, &c);

	if (r == 0)
		return 0;
	if (r < 0) {
		snprintf(err, errlen, "cannot read the pending confirmation '%s/confirm': %s", e->dir,
			 strerror(-r));
		return r;
	}
	fmt_deadline(c.deadline, when, sizeof(when));
	if (c.expiring || c.deadline <= (int64_t)time(NULL))
		snprintf(err, errlen, "the confirmed apply of version %" PRIu64 " was not confirmed by "
			 "%s: its rollback is due ('fabricctl recover' runs it now)", c.version, when);
	else if (c.prev_seq)
		snprintf(err, errlen, "version %" PRIu64 " awaits confirmation until %s: 'fabricctl "
			 "confirm' keeps it, else the host goes back to version %" PRIu64 " then",
			 c.version, when, c.prev_version);
	else
		snprintf(err, errlen, "version %" PRIu64 " awaits confirmation until %s: 'fabricctl "
			 "confirm' keeps it, else it is torn down then", c.version, when);
	return -EBUSY;
}

int fctl_engine_confirm(const struct fctl_engine_opts *o, struct fctl_confirm_pending *out,
			char *err, size_t errlen)
{
	struct fctl_confirm_pending c;
	struct eng e;
	char when[32];
	int r = fctl_engi_open(&e, o, true, false, err, errlen);

	if (r < 0)
		return r;
	r = fctl_engi_confirm_read(e.dir, &c);
	if (r == 0) {
		snprintf(err, errlen, "no confirmation is pending on %s", e.host);
		r = -ENOENT;
	} else if (r < 0) {
		snprintf(err, errlen, "cannot read '%s/confirm': %s", e.dir, strerror(-r));
	} else if (c.expiring || c.deadline <= (int64_t)time(NULL)) {
		fmt_deadline(c.deadline, when, sizeof(when));
		snprintf(err, errlen, "too late: the deadline of version %" PRIu64 " passed at %s; "
			 "the host goes back to the version before", c.version, when);
		r = -ETIMEDOUT;
	} else {
		r = fctl_engi_confirm_remove(&e);
		if (r < 0)
			snprintf(err, errlen, "cannot remove '%s/confirm': %s", e.dir, strerror(-r));
		else
			*out = c;
	}
	fctl_engi_close(&e);
	return r;
}

/* The history entry with sequence number seq, loaded as a profile. */
static int load_seq(const struct eng *e, uint64_t seq, struct fctl_profile **out, char *err,
		    size_t errlen)
{
	struct fctl_history_entry *v = NULL;
	struct fctl_diags d = { 0 };
	size_t n = 0;
	int r = fctl_engi_history_read(e->dir, &v, &n);

	for (size_t i = 0; r == 0 && i < n; i++) {
		if (v[i].seq != seq)
			continue;
		r = fctl_engi_history_load(&v[i], &d, out);
		if (r < 0)
			snprintf(err, errlen, "history entry %" PRIu64 " ('%s') cannot be loaded: %s",
				 seq, v[i].file, strerror(-r));
		free(v);
		fctl_diags_release(&d);
		return r;
	}
	free(v);
	snprintf(err, errlen, "history entry %" PRIu64 " is not in '%s/history/index'", seq, e->dir);
	return -ENOENT;
}

int fctl_engi_confirm_expire_locked(struct eng *e, const char *id, bool force,
				    struct fctl_confirm_pending *out, struct fctl_apply_result *res)
{
	struct fctl_profile *p = NULL;
	struct fctl_confirm_pending c;
	int r = fctl_engi_confirm_read(e->dir, &c);

	if (r <= 0) {
		if (r < 0)
			snprintf(res->error, sizeof(res->error), "cannot read '%s/confirm': %s", e->dir,
				 strerror(-r));
		return r;
	}
	if (id && strcmp(id, c.id) != 0)
		return 0;
	if (!force && !c.expiring && c.deadline > (int64_t)time(NULL))
		return 0;
	if (c.prev_seq) {
		r = load_seq(e, c.prev_seq, &p, res->error, sizeof(res->error));
		if (r < 0)
			return r;
	}
	if (!c.expiring) {
		c.expiring = true; /* a crash from here on: recovery finishes the rollback */
		r = fctl_engi_confirm_write(e, &c);
		if (r < 0) {
			snprintf(res->error, sizeof(res->error), "cannot mark '%s/confirm' expiring: %s",
				 e->dir, strerror(-r));
			fctl_profile_free(p);
			return r;
		}
	}
	e->expiring = true; /* the record must not refuse its own rollback */
	r = p ? fctl_engi_apply_locked(e, p, res) : fctl_engi_teardown_locked(e, res);
	e->expiring = false;
	fctl_profile_free(p);
	if (r < 0)
		return r;
	r = fctl_engi_confirm_remove(e);
	if (r < 0) {
		snprintf(res->error, sizeof(res->error), "rolled back, but '%s/confirm' cannot be "
			 "removed: %s", e->dir, strerror(-r));
		return r;
	}
	*out = c;
	return 1;
}
