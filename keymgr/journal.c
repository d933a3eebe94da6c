// SPDX-License-Identifier: MIT
/* keymgr's journal of each rotation's steps and its record of the key in use per link. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fctl/keys.h"
#include "fctl/rotation.h"
#include "rot.h"

double km_now_ms(void)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return (double)n.tv_sec * 1e3 + (double)n.tv_nsec / 1e6;
}

/* --- journal -------------------------------------------------------------- */

void km_jpath(const struct km *k, const struct km_link *l, const char *what, char *out,
		  size_t len)
{
	snprintf(out, len, "%s/%s-%s", k->state_dir, what, l->name);
}

static int open_append(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);

	return fd < 0 ? -errno : fd;
}

static int write_line(int fd, const char *line, bool sync)
{
	size_t n = strlen(line);

	errno = 0;
	if (write(fd, line, n) != (ssize_t)n || (sync && fdatasync(fd) < 0))
		return errno ? -errno : -EIO;
	return 0;
}

static int append(const char *path, const char *line, bool sync)
{
	int fd = open_append(path), r;

	if (fd < 0)
		return fd;
	r = write_line(fd, line, sync);
	close(fd);
	return r;
}

int km_append_sync(const char *path, const char *line)
{
	return append(path, line, true);
}

/* A journal line: synced now, or (a batch's phases) written now and synced by the next
 * km_journal_flush, which comes before any agent request. */
static int journal_append(struct km *k, const struct rot *rt, const char *path,
			  const char *line)
{
	double t0 = km_now_ms();
	int r = rt->jfd_open ? write_line(rt->jfd, line, !k->journal_defer)
			     : append(path, line, !k->journal_defer);

	if (r == 0 && k->journal_defer)
		k->journal_dirty = true;
	k->self_ms[KS_JOURNAL] += km_now_ms() - t0;
	return r;
}

int km_journal_flush(struct km *k)
{
	int fd, r = 0;
	double t0;

	if (!k->journal_dirty)
		return 0;
	t0 = km_now_ms();
	/* every journal of the batch lives in the state directory: one syncfs makes all
	 * their lines durable (writeback errors are reported since Linux 5.8) */
	fd = open(k->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syncfs(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0)
		k->journal_dirty = false;
	k->self_ms[KS_JOURNAL] += km_now_ms() - t0;
	return r;
}

static void test_hook(const struct km *k, enum km_step s)
{
#ifdef FCTL_TEST_HOOKS /* test builds only */
	/* "STEP:kill", "STEP:pause:SEC", or "STEP:hold" (until the test removes the marker,
	 * 300 s at most: a test on a loaded machine takes its time, and says when it is done) */
	const char *h = getenv("FCTL_KEYMGR_TEST_HOOK");
	size_t n = strlen(km_step_name(s));
	char marker[4200];

	if (!h || strncmp(h, km_step_name(s), n) != 0 || h[n] != ':')
		return;
	if (strcmp(h + n + 1, "kill") == 0)
		raise(SIGKILL);
	snprintf(marker, sizeof(marker), "%s/paused-%s", k->state_dir, km_step_name(s));
	if (strncmp(h + n + 1, "pause:", 6) == 0) {
		close(open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
		sleep((unsigned)atoi(h + n + 7));
		unlink(marker);
	} else if (strcmp(h + n + 1, "hold") == 0) {
		close(open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
		for (int i = 0; i < 1200 && access(marker, F_OK) == 0; i++)
			usleep(250000);
		unlink(marker);
	}
#endif
}

/* Written (and synced) before the step is taken. */
int km_journal_step(struct km *k, const struct km_link *l, struct rot *rt, enum km_step s)
{
	char path[4200], line[128];
	int r;

	km_jpath(k, l, "journal", path, sizeof(path));
	snprintf(line, sizeof(line), "step %s %ld\n", km_step_name(s), (long)time(NULL));
	r = journal_append(k, rt, path, line);
	if (r < 0) {
		km_audit(k, l, "key-rotation", "failed", NULL, NULL,
			 "cannot write the journal %s: %s", path, strerror(-r));
		return r;
	}
	rt->last = s;
	if (strlen(rt->steps) + 16 < sizeof(rt->steps))
		snprintf(rt->steps + strlen(rt->steps), sizeof(rt->steps) - strlen(rt->steps),
			 "%s%s", rt->steps[0] ? "," : "", km_step_name(s));
	test_hook(k, s);
	return 0;
}

int km_journal_begin(struct km *k, const struct km_link *l, struct rot *rt)
{
	char path[4200], line[256];
	double t0 = km_now_ms();

	if (!k->state_dir_made) {
		if (mkdir(k->state_dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		k->state_dir_made = true;
	}
	km_jpath(k, l, "journal", path, sizeof(path));
	snprintf(line, sizeof(line),
		 "begin old_an %u old_version %" PRIu32 " new_an %u new_version %" PRIu32
		 " time %ld\n", rt->old_an, rt->old_version, rt->new_an, rt->new_version,
		 (long)time(NULL));
	km_journal_close(k, rt);
	unlink(path);
	if (k->journal_fds < KM_JOURNAL_FDS) {
		int fd = open_append(path);

		if (fd < 0)
			return fd;
		rt->jfd = fd;
		rt->jfd_open = true;
		k->journal_fds++;
	}
	k->self_ms[KS_JOURNAL] += km_now_ms() - t0;
	return journal_append(k, rt, path, line);
}

void km_journal_close(struct km *k, struct rot *rt)
{
	if (!rt || !rt->jfd_open)
		return;
	close(rt->jfd);
	rt->jfd_open = false;
	k->journal_fds--;
}

int km_journal_read(struct km *k, const struct km_link *l, struct rot *rt)
{
	char path[4200], line[256], name[32];
	bool begun = false;
	FILE *f;

	km_jpath(k, l, "journal", path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(rt, 0, sizeof(*rt));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "begin old_an %u old_version %" SCNu32 " new_an %u new_version %" SCNu32,
			   &rt->old_an, &rt->old_version, &rt->new_an, &rt->new_version) == 4) {
			begun = true;
			rt->last = KM_PREPARE;
		} else if (sscanf(line, "step %31s", name) == 1) {
			for (int s = 0; s < KM_N_STEPS; s++)
				if (strcmp(name, km_step_name(s)) == 0)
					rt->last = (enum km_step)s;
			if (strlen(rt->steps) + strlen(name) + 2 < sizeof(rt->steps))
				snprintf(rt->steps + strlen(rt->steps),
					 sizeof(rt->steps) - strlen(rt->steps), "%s%s",
					 rt->steps[0] ? "," : "", name);
		}
	}
	fclose(f);
	return begun && rt->old_an < FCTL_MAX_AN && rt->new_an < FCTL_MAX_AN ? 0 : -EBADMSG;
}

/* The journal ends: one history line, then the journal goes. */
void km_journal_end(struct km *k, const struct km_link *l, struct rot *rt,
			const char *result)
{
	char path[4200], line[600];

	snprintf(line, sizeof(line),
		 "%ld %s %s old_an %u old_version %" PRIu32 " new_an %u new_version %" PRIu32
		 " kcv %s steps %s\n", (long)time(NULL), l->name, result, rt->old_an,
		 rt->old_version, rt->new_an, rt->new_version, rt->kcv[0] ? rt->kcv : "-",
		 rt->steps[0] ? rt->steps : "-");
	double t0 = km_now_ms();

	if (k->commit_defer) { /* km_commit_flush writes it, then ends the journal */
		if (fctl_buf_append(&k->hist, line, strlen(line)) == 0)
			rt->end_pending = true;
		k->self_ms[KS_HISTORY] += km_now_ms() - t0;
		if (rt->end_pending)
			return;
	}

	snprintf(path, sizeof(path), "%s/rotations.log", k->state_dir);
	km_append_sync(path, line);
	k->self_ms[KS_HISTORY] += km_now_ms() - t0;
	t0 = km_now_ms();
	km_journal_close(k, rt);
	km_jpath(k, l, "journal", path, sizeof(path));
	unlink(path);
	k->self_ms[KS_JOURNAL] += km_now_ms() - t0;
}

/* --- keymgr's record of the current key per link ---------------------------- */

/* STATE/current-LINK: "an A version V time T [kcv K keyid ID]". The check value of the
 * key in use (ID: the KEYID of the reference it came from) lets the next rotation refuse a
 * KMS that hands out the same key again without fetching the old key a second time. */
int km_read_current(struct km *k, const struct km_link *l, unsigned *an, uint32_t *version,
			uint64_t *when, char kcv[7], uint8_t keyid[FCTL_KEYID_LEN])
{
	char path[4200], line[256], kc[16] = "", kid[64] = "";
	unsigned a;
	uint32_t v;
	uint64_t t;
	FILE *f;
	int n;

	double t0 = km_now_ms();

	km_jpath(k, l, "current", path, sizeof(path));
	f = fopen(path, "re");
	if (!f) {
		n = -errno;
		k->self_ms[KS_CURRENT] += km_now_ms() - t0;
		return n;
	}
	n = fgets(line, sizeof(line), f) ? sscanf(line, "an %u version %" SCNu32 " time %" SCNu64
						   " kcv %15s keyid %63s", &a, &v, &t, kc, kid) : 0;
	fclose(f);
	k->self_ms[KS_CURRENT] += km_now_ms() - t0;
	if (n < 3 || a >= FCTL_MAX_AN)
		return -EBADMSG;
	*an = a;
	*version = v;
	*when = t;
	if (kcv) {
		kcv[0] = 0;
		if (n == 5 && strlen(kc) == 6 && fctl_parse_hex(kid, keyid, FCTL_KEYID_LEN) == 0)
			snprintf(kcv, 7, "%s", kc);
	}
	return 0;
}

int km_current(struct km *k, const struct km_link *l, unsigned *an, uint32_t *version,
	       uint64_t *when)
{
	return km_read_current(k, l, an, version, when, NULL, NULL);
}

void km_set_current(struct km *k, const struct km_link *l, struct rot *rt, unsigned an,
		    uint32_t version, const char *kcv)
{
	char path[4200], tmp[4300], line[200], kid[2 * FCTL_KEYID_LEN + 1];
	uint8_t id[FCTL_KEYID_LEN];
	double t0 = km_now_ms();
	int n;

	km_jpath(k, l, "current", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	km_ref_keyid(l, version, id);
	fctl_format_hex(id, FCTL_KEYID_LEN, kid);
	n = snprintf(line, sizeof(line), "an %u version %" PRIu32 " time %ld", an, version,
		     (long)time(NULL));
	if (kcv && kcv[0])
		n += snprintf(line + n, sizeof(line) - (size_t)n, " kcv %s keyid %s", kcv, kid);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	/* best effort: the journal, not this summary, is what recovery trusts */
	if (k->commit_defer && rt && rt->end_pending) {
		/* written now, synced and renamed over by km_commit_flush with the batch's */
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd >= 0) {
			rt->current_pending = fctl_write_all(fd, line, (size_t)n) == 0;
			if (close(fd) < 0)
				rt->current_pending = false;
			if (!rt->current_pending)
				unlink(tmp);
		}
	} else {
		(void)fctl_file_replace(path, tmp, line, (size_t)n, 0600, 0);
	}
	k->self_ms[KS_CURRENT] += km_now_ms() - t0;
}

void km_ref_keyid(const struct km_link *l, uint32_t version, uint8_t out[FCTL_KEYID_LEN])
{
	struct fctl_keyref r = l->ref;

	r.version = version;
	fctl_keyid_from_ref(&r, out);
}


int km_commit_flush(struct km *k, struct km_link *const *links, struct rot *const *rts,
		    size_t n)
{
	char path[4200], tmp[4300];
	double t0 = km_now_ms();
	int fd, r = 0;

	/* (1) the history: one write, one fdatasync */
	if (k->hist.len) {
		snprintf(path, sizeof(path), "%s/rotations.log", k->state_dir);
		fd = open_append(path);
		r = fd < 0 ? fd : fctl_write_all(fd, k->hist.data, k->hist.len);
		if (fd >= 0 && r == 0 && fdatasync(fd) < 0)
			r = -errno;
		if (fd >= 0)
			close(fd);
		fctl_buf_reset(&k->hist);
	}
	k->self_ms[KS_HISTORY] += km_now_ms() - t0;
	if (k->crash_point)
		k->crash_point("history", 0);
	/* (2) the records of the keys in use: durable, then in place */
	t0 = km_now_ms();
	fd = open(k->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		if (syncfs(fd) < 0 && r == 0)
			r = -errno;
		close(fd);
	}
	for (size_t i = 0; i < n; i++) {
		if (!rts[i]->current_pending)
			continue;
		km_jpath(k, links[i], "current", path, sizeof(path));
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		if (fd < 0 || rename(tmp, path) < 0) {
			if (r == 0)
				r = fd < 0 ? -EIO : -errno;
			unlink(tmp);
		}
		rts[i]->current_pending = false;
		if (k->crash_point)
			k->crash_point("current", i);
	}
	k->self_ms[KS_CURRENT] += km_now_ms() - t0;
	/* (3) the journals end: synced by the next km_journal_flush */
	t0 = km_now_ms();
	for (size_t i = 0; i < n; i++) {
		if (!rts[i]->end_pending)
			continue;
		km_journal_close(k, rts[i]);
		km_jpath(k, links[i], "journal", path, sizeof(path));
		unlink(path);
		rts[i]->end_pending = false;
		k->journal_dirty = true;
		if (k->crash_point)
			k->crash_point("end", i);
	}
	k->self_ms[KS_JOURNAL] += km_now_ms() - t0;
	return r;
}
