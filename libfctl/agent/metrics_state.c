// SPDX-License-Identifier: MIT
/* The families a scrape reads from files: drift per link, the rotation records
 * (STATE_DIR/rotation), the audit log (the probe reports: metrics_probe.c). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fctl/rotation.h"
#include "metrics_int.h"

void fctl_probe_last_path(const char *state_dir, const char *netns, char *out, size_t len)
{
	char dir[4096];

	fctl_state_dir_path(state_dir, netns, dir, sizeof(dir));
	snprintf(out, len, "%s/probe/last", dir);
}

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; n && (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

void fctl_mx_drift_links(const struct fctl_metrics_src *src, const struct fctl_mx_links *l,
			 struct fctl_buf *o)
{
	if (!src->st->drift_known || !l->n)
		return;
	fctl_mx_head(o, "fabricctl_link_drift", "gauge",
		     "1 when the last drift check found operations on this interface of the "
		     "applied profile.");
	for (size_t i = 0; i < l->n; i++) {
		char set[384];

		fctl_mx_link_labels(src, l, l->v[i].ifname, set, sizeof(set));
		fctl_mx_sample_u64(o, "fabricctl_link_drift", set,
				   in_list(src->st->drift_ifnames, l->v[i].ifname));
	}
}

/* --- rotation records ---------------------------------------------------------------- */

struct rot {
	char set[384];
	struct fctl_rotation_cur c;
	uint64_t cryptoperiod_s;
};

enum rot_what { R_VERSION, R_AGE, R_COMPLETED_AGE, R_DUE, R_PERIOD, R_BUSY };

static const struct {
	const char *name, *help;
} rot_families[] = {
	[R_VERSION] = { "fabricctl_rotation_key_version",
			"The key version on the encoding SA (the rotation record's)." },
	[R_AGE] = { "fabricctl_rotation_key_age_seconds",
		    "Seconds since the SecY switched to its current key (txsa-switch)." },
	[R_COMPLETED_AGE] = { "fabricctl_rotation_last_completed_age_seconds",
			      "Seconds since the last completed rotation (old SAs retired)." },
	[R_DUE] = { "fabricctl_rotation_due_in_seconds",
		    "Seconds until the next rotation is due: the last switch plus the "
		    "profile's cryptoperiod; negative when overdue." },
	[R_PERIOD] = { "fabricctl_rotation_cryptoperiod_seconds",
		       "The cryptoperiod of the SecY's policy in the applied profile." },
	[R_BUSY] = { "fabricctl_rotation_in_progress",
		     "1 while a rotation lease is held (SAs of two keys are live)." },
};

static bool rot_value(const struct rot *r, enum rot_what w, double now, double *v)
{
	switch (w) {
	case R_VERSION: *v = r->c.version; return true;
	case R_AGE: *v = now - (double)r->c.switched_at; return r->c.switched_at != 0;
	case R_COMPLETED_AGE:
		*v = now - (double)r->c.completed_at;
		return r->c.completed_at != 0;
	case R_DUE:
		*v = (double)(r->c.switched_at + r->cryptoperiod_s) - now;
		return r->c.switched_at && r->cryptoperiod_s;
	case R_PERIOD: *v = (double)r->cryptoperiod_s; return r->cryptoperiod_s != 0;
	case R_BUSY: *v = r->c.busy_until > (uint64_t)now; return true;
	}
	return false;
}

static void rot_write(const struct fctl_metrics_src *src, const struct rot *v, size_t n,
		      struct fctl_buf *o)
{
	static const char *const results[] = { "completed", "rolled_back", "failed" };

	for (unsigned w = R_VERSION; w <= R_BUSY; w++) {
		fctl_mx_head(o, rot_families[w].name, "gauge", rot_families[w].help);
		for (size_t i = 0; i < n; i++) {
			double x;

			if (rot_value(&v[i], (enum rot_what)w, src->now, &x))
				fctl_mx_sample(o, rot_families[w].name, v[i].set, x);
		}
	}
	fctl_mx_head(o, "fabricctl_rotations_total", "counter",
		     "Rotations of the SecY by outcome: completed (the old key retired), "
		     "rolled_back (the encoding SA moved back), failed (SA steps the agent could "
		     "not carry out).");
	for (size_t i = 0; i < n; i++) {
		const uint64_t c[] = { v[i].c.n_completed, v[i].c.n_rolled_back, v[i].c.n_failed };

		for (size_t k = 0; k < 3; k++) {
			char set[448];

			snprintf(set, sizeof(set), "%s", v[i].set);
			fctl_mx_label(set, sizeof(set), "result", results[k]);
			fctl_mx_sample_u64(o, "fabricctl_rotations_total", set, c[k]);
		}
	}
}

void fctl_mx_rotation(const struct fctl_metrics_src *src, const struct fctl_mx_links *l,
		      struct fctl_buf *o)
{
	struct rot *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	char dir[4096];
	DIR *d;

	fctl_rotation_dir(src->eo->state_dir, src->eo->netns, dir, sizeof(dir));
	d = opendir(dir);
	/* every record of the state dir: the SecYs the agent rotated */
	while (d && (de = readdir(d))) {
		const struct fctl_mx_link *k;

		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			struct rot *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));

			if (!nv) {
				o->oom = true;
				break;
			}
			v = nv;
		}
		memset(&v[n], 0, sizeof(v[n]));
		if (fctl_rotation_read(dir, de->d_name, &v[n].c) < 0)
			continue;
		k = fctl_mx_links_find(l, de->d_name);
		v[n].cryptoperiod_s = k ? k->cryptoperiod_s : 0;
		fctl_mx_link_labels(src, l, de->d_name, v[n].set, sizeof(v[n].set));
		n++;
	}
	if (d)
		closedir(d);
	rot_write(src, v, n, o);
	free(v);
}

/* --- the audit log ------------------------------------------------------------------- */

void fctl_mx_audit(const struct fctl_metrics_src *src, struct fctl_buf *o)
{
	char path[4200];
	struct stat sb;

	fctl_mx_head(o, "fabricctl_audit_log_open", "gauge",
		     "1 when the agent's audit log is open for writing.");
	fctl_mx_sample_u64(o, "fabricctl_audit_log_open", "", src->audit_open);
	fctl_mx_head(o, "fabricctl_audit_records_total", "counter",
		     "Records in the agent's audit log (the chain's length).");
	if (src->audit_open)
		fctl_mx_sample_u64(o, "fabricctl_audit_records_total", "", src->audit_records);
	snprintf(path, sizeof(path), "%s.checkpoints", src->audit_log ? src->audit_log : "");
	if (!src->audit_log || stat(path, &sb) < 0)
		return;
	fctl_mx_head(o, "fabricctl_audit_last_checkpoint_timestamp_seconds", "gauge",
		     "Unix time the last signed checkpoint was written (LOG.checkpoints).");
	fctl_mx_sample(o, "fabricctl_audit_last_checkpoint_timestamp_seconds", "",
		       (double)sb.st_mtim.tv_sec + (double)sb.st_mtim.tv_nsec / 1e9);
	fctl_mx_head(o, "fabricctl_audit_checkpoint_age_seconds", "gauge",
		     "Seconds since the last signed checkpoint was written.");
	fctl_mx_sample(o, "fabricctl_audit_checkpoint_age_seconds", "",
		       src->now - ((double)sb.st_mtim.tv_sec + (double)sb.st_mtim.tv_nsec / 1e9));
}
