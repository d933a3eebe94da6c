/* SPDX-License-Identifier: MIT */
/* keymgr's rotation state shared by rotate.c and journal.c (not installed). */
#ifndef KEYMGR_ROT_H
#define KEYMGR_ROT_H

#include <time.h>

#include "keymgr.h"

struct rot {
	unsigned old_an, new_an;
	uint32_t old_version, new_version;
	char kcv[7];
	enum km_step last;
	char steps[256];
	/* the report: step times and counters at the start of the rotation */
	double step_ms[KM_N_STEPS];
	struct timespec t_step;
	unsigned kms_ops, agent_requests; /* this link's own, in a batch too */
	/* after the switch: counters at the start of the overlap, when they could be read */
	bool have_base;
	struct km_dump base[2];
	/* the new key's KEYID and XPN salt, named by its requests; the old key's, named by
	 * its retirement */
	uint8_t new_keyid[FCTL_KEYID_LEN], salt[FCTL_SALT_LEN], old_keyid[FCTL_KEYID_LEN];
	/* the journal, open from km_journal_begin to km_journal_end/close (jfd_open; at
	 * most KM_JOURNAL_FDS at once, the others opened per line): the same lines, synced
	 * the same way, without an open and close per line */
	bool jfd_open;
	int jfd;
	/* k->commit_defer: the commit's history line is in k->hist (end_pending) and its
	 * current-LINK record in current-LINK.tmp (current_pending), both waiting for
	 * km_commit_flush */
	bool end_pending, current_pending;
};

/* journal.c: STATE/journal-LINK, written (and synced) before each step is taken. */
void km_jpath(const struct km *k, const struct km_link *l, const char *what, char *out,
	      size_t len);
int km_append_sync(const char *path, const char *line);
/* The journal lines written since the last call (k->journal_defer), made durable. */
int km_journal_flush(struct km *k);
/* Journals step s (and runs the test hook of test builds). */
int km_journal_step(struct km *k, const struct km_link *l, struct rot *rt, enum km_step s);
int km_journal_begin(struct km *k, const struct km_link *l, struct rot *rt);
int km_journal_read(struct km *k, const struct km_link *l, struct rot *rt);
/* One history line in STATE/rotations.log, then the journal goes (its fd closed). */
void km_journal_end(struct km *k, const struct km_link *l, struct rot *rt,
		    const char *result);
/* Closes the journal's fd, if open; the file stays (recovery reads it). */
void km_journal_close(struct km *k, struct rot *rt);
/* STATE/current-LINK: the key in use ("an A version V time T [kcv K keyid ID]"). */
int km_read_current(struct km *k, const struct km_link *l, unsigned *an, uint32_t *version,
		    uint64_t *when, char kcv[7], uint8_t keyid[FCTL_KEYID_LEN]);
void km_set_current(struct km *k, const struct km_link *l, struct rot *rt, unsigned an,
		    uint32_t version, const char *kcv);
/* The commits a batch's retire phase queued (k->commit_defer), for links[i] with rts[i]
 * (those without end_pending are skipped), in an order that keeps recovery right after a
 * kill -9 at any point: (1) their rotations.log lines, one write and one fdatasync; (2)
 * their current-LINK records, written to temporary files when queued, made durable by one
 * syncfs, then renamed over; (3) their journals closed and unlinked (made durable by the
 * batch's next km_journal_flush). Until (3) a journal says its rotation is at retire, and
 * recovery finishes it again (retire is idempotent, the history gets a second line). The
 * history and the records are best effort, as one link's are; 0 or the first error. */
int km_commit_flush(struct km *k, struct km_link *const *links, struct rot *const *rts,
		    size_t n);
/* The KEYID of version of the link's key reference. */
void km_ref_keyid(const struct km_link *l, uint32_t version, uint8_t out[FCTL_KEYID_LEN]);

/* fetch.c: one KMS fetch of a batch's prepare phase: version of l's key reference. */
struct km_fetch {
	const struct km_link *l;
	uint32_t version;
	struct fctl_key *key; /* out: the key (the caller frees it), or NULL */
	int r;                /* out: 0 or negative errno, with err */
	char err[512];
};
#define KM_FETCH_THREADS 8 /* fetches at once */
/* Fetches jobs[0..n), up to KM_FETCH_THREADS at once, every one whatever the others
 * give (a fetch changes nothing in the KMS; each backend's fetch may run in threads: the
 * file backend reads a file of its own, kmip opens a connection of its own, pkcs11
 * serializes on its own lock). Counts n KMS operations. */
void km_fetch_keys(struct km *k, struct km_fetch *jobs, size_t n);

#endif
