/* SPDX-License-Identifier: MIT */
/* fabricctl-keymgr: the only program that talks to the KMS (docs/rotation.md). */
#ifndef KEYMGR_H
#define KEYMGR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/agent.h"
#include "fctl/profile.h"
#include "fctl/rotation.h"
#include "fctl/state.h"

struct ssl_ctx_st;
struct fctl_audit;

#define KM_MAX_AGENTS 32
#define KM_MAX_PARALLEL 256

/* One end of a protected VLAN, as the profile renders it. */
struct km_end {
	const char *host;
	const char *endpoint; /* the host's agent */
	char ifname[FCTL_IFNAMSIZ + 8];
	uint64_t sci, peer_sci;
	uint32_t ssci; /* XPN: 1 for the lower SCI of the pair, 2 for the higher */
};

/* keymgr's own time by kind of work, summed over a run (the report's "self_ms", read by
 * bench/rotation_bench.sh): the KMS's calls, journal lines and syncs, audit records
 * (append, sync), their lines on stderr (log), STATE/current-LINK reads and writes, rotations.log
 * lines, and the agent requests (waiting for the answers included). */
enum km_self { KS_KMS, KS_JOURNAL, KS_AUDIT, KS_LOG, KS_CURRENT, KS_HISTORY, KS_AGENTS, KS_N };

/* One MACsec SecY pair (a VLAN of a profile link). */
struct km_link {
	char name[128]; /* "LINK.VID" */
	struct km_end end[2];
	enum fctl_cipher cipher;
	struct fctl_keyref ref; /* version 0: rotated (per rotation state) */
	const char *base;       /* profile dir: relative file ids */
	uint64_t cryptoperiod_s, overlap_s, pn_threshold;
};

/* What a dump of one end says. */
struct km_sa {
	bool present, active;
	uint64_t pn;
	uint8_t keyid[FCTL_KEYID_LEN];
	uint64_t ok, not_valid, not_using_sa, unused_sa, invalid;
};

struct km_dump {
	unsigned encoding_sa;
	bool has_rotation;
	struct fctl_rotation_cur rot; /* the agent's record (an, version, busy, keyid) */
	struct km_sa tx[FCTL_MAX_AN];
	struct km_sa rx[FCTL_MAX_AN]; /* of the RX SC of the peer */
	uint64_t sc_not_valid, sc_not_using_sa, sc_unused_sa, sc_invalid;
};

/* One open connection per agent, shared by every link that has an end there. */
struct km_conn {
	const char *endpoint;
	struct fctl_agent_conn *conn;
};

/* The steps of a rotation, in order (names: km_step_name). */
enum km_step { KM_PREPARE, KM_INSTALL_RX, KM_STAGE_TX, KM_CONFIRM, KM_SWITCH, KM_OVERLAP,
	       KM_RETIRE, KM_ROLLBACK, KM_N_STEPS };

/* What one link's rotation did, for the report (text or --json). */
struct km_result {
	const struct km_link *link;
	int r; /* 0 committed, 1 rolled back, <0 failed (journal kept) */
	unsigned old_an, new_an;
	uint32_t old_version, new_version;
	char kcv[7];
	double step_ms[KM_N_STEPS]; /* time of each step's own work, overlap wait excluded */
	unsigned kms_ops, agent_requests;
};

struct km {
	struct ssl_ctx_st *tls;
	const char *state_dir;
	struct fctl_audit *audit;
	const char *agents[KM_MAX_AGENTS]; /* "HOST=ENDPOINT" overrides */
	size_t n_agents;
	unsigned timeout_s;
	unsigned parallel; /* agents asked at once in a phase (--parallel, 1..KM_MAX_PARALLEL) */
	bool compromised;
	bool verbose;
	struct fctl_profile *profile;
	struct km_link *links;
	size_t n_links;
	/* links whose policy is MKA: their SAKs are the key server's, never keymgr's */
	char (*mka_links)[128];
	size_t n_mka_links;
	struct km_conn *conns; /* one per agent endpoint in use */
	size_t n_conns;
	/* a batch's phases: km_audit queues its records, km_audit_flush syncs them (one
	 * write, one fdatasync, one signed checkpoint), before every agent request and at
	 * the end of each phase */
	bool audit_defer;
	struct fctl_buf errlines; /* audit_defer: km_audit's stderr lines, written by the flush */
	/* likewise the journals' lines: written at once, synced together by
	 * km_journal_flush (one syncfs of the state directory's file system) before the
	 * next agent request; journal_dirty: lines written since the last sync */
	bool journal_defer, journal_dirty;
	/* a batch's retire phase: each commit's rotations.log line goes to hist and its
	 * STATE/current-LINK to a temporary file; km_commit_flush writes the lines with one
	 * fdatasync, syncs the records with one syncfs and renames them, and only then ends
	 * the journals (docs/rotation.md, "Crash safety of a batch") */
	bool commit_defer;
	struct fctl_buf hist;
	bool state_dir_made; /* mkdir of state_dir done (once a run) */
	/* NULL but in tests/unit/test_km_journal.c: called at each point of km_commit_flush
	 * where a kill -9 may land ("history", "current" i, "end" i), to land one there */
	void (*crash_point)(const char *where, size_t i);
	unsigned journal_fds; /* journals held open (struct rot's jfd), <= KM_JOURNAL_FDS */
	/* counters for the report */
	unsigned kms_ops, agent_requests, agent_connects;
	double overlap_wait_ms;
	double self_ms[KS_N]; /* enum km_self */
};

/* CLOCK_MONOTONIC in ms (km_self's timings). */
double km_now_ms(void);
const char *km_self_name(enum km_self s);

/* The profile's static-key links into k->links; its MKA links only by name into
 * k->mka_links (keymgr never installs an SA on an MKA SecY). */
int km_links_from_profile(struct km *k, char *err, size_t errlen);
void km_links_free(struct km *k);

/* Rotates n links make-before-break, together: each (after finishing an interrupted
 * rotation of it) through prepare..switch, then one overlap wait for all (until the last
 * switch + the longest overlap), then each link's overlap check and retirement. res[i]
 * for links[i]; returns the worst: <0 a failure (journal kept), 1 a rollback (old key
 * in use), 0 all rotated. */
int km_rotate_batch(struct km *k, struct km_link **links, size_t n, struct km_result *res,
		    bool progress);
const char *km_step_name(enum km_step s);
/* Finishes an interrupted rotation of l from its journal: 0 nothing to do or done. */
int km_recover(struct km *k, struct km_link *l);
/* Reads both ends; fills d[2]. */
int km_dump_link(struct km *k, struct km_link *l, struct km_dump d[2], char *err, size_t errlen);
/* The key version an end uses: its rotation record's when that is past the profile's
 * (a pinned version, as KMS references have, is the first one), else the profile's. */
uint32_t km_end_version(const struct km_link *l, const struct km_dump *d);
/* Current {an, version} of the link from keymgr's state (version 0 when never rotated);
 * last rotation time in *when. */
int km_current(struct km *k, const struct km_link *l, unsigned *an, uint32_t *version,
	       uint64_t *when);
/* agents.c: one request to the agent of end e (its connection opened on first use and
 * shared; never resent). 0, or negative errno with err naming the host; out (may be
 * NULL) receives the response's output, NUL-terminated. */
int km_call(struct km *k, struct km_end *e, struct fctl_msg *req, struct fctl_buf *out, char *err,
	    size_t errlen);
/* One SA operation of a phase, for km_call_ops: m (type 10..15; ifname is set from e)
 * to the agent of end e. Out: r (0 or negative errno), err naming the host, out (a dump's
 * text), requests (the agent requests it took part in). */
struct km_op {
	struct km_end *e;
	struct fctl_msg m;
	int r;
	char err[512];
	struct fctl_buf out;
	unsigned requests;
};

#define KM_JOURNAL_FDS 256 /* journals a batch holds open at once (the rest: open per line) */
#define KM_BATCH_MAX 1024 /* records per sa-batch request (docs/protocol.md) */
#define KM_TIMEOUT_RECORDS 16 /* an sa-batch waits --timeout per this many records */

/* agents.c: ops[0..n) as one sa-batch request per agent endpoint (the records of an
 * endpoint in their order; more than KM_BATCH_MAX in several), never resent; k->parallel
 * endpoints at once, each on its own connection. Returns the
 * last failure (or 0); each op has its own result. km_ops_release frees the outputs. */
int km_call_ops(struct km *k, struct km_op *ops, size_t n);
void km_ops_release(struct km_op *ops, size_t n);
/* The text of one SA dump into d (the RX side of the SC of peer_sci). */
void km_parse_dump(const char *text, uint64_t peer_sci, struct km_dump *d);
/* plan.c: rotate --dry-run. The cost model of the expected time (bench/README.md gives
 * the measured figures the defaults come from). */
struct km_plan_model {
	double request_ms; /* one sa-batch round trip, agent overhead included */
	double record_ms;  /* one SA record at the agent (netlink, rotation record) */
	double kms_ms;     /* one KMS fetch (prepare) */
	double journal_ms; /* one journal line synced, per link and phase */
};
#define KM_PLAN_REQUEST_MS 30.0
#define KM_PLAN_RECORD_MS 2.0
#define KM_PLAN_KMS_MS 1.0
#define KM_PLAN_JOURNAL_MS 0.2
/* Prints the plan of rotating links[0..n) (text, or one JSON object) on stdout. */
int km_plan_print(const struct km *k, struct km_link *const *links, size_t n,
		  const struct km_plan_model *mo, bool json);
/* metrics.c: the last run of cmd (rotate, recover) in node_exporter's textfile format,
 * replacing path atomically (a temporary file beside it, then a rename). res[n] may be
 * empty (a run that stopped before rotating); rc is the run's exit code. */
int km_metrics_textfile(const char *path, const char *cmd, const struct km_result *res,
			size_t n, int rc, double wall_s);
/* Closes every agent connection (idle ones time out at the agent anyway). */
void km_close_conns(struct km *k);
/* Syncs the records km_audit queued (k->audit_defer); nothing to do is 0. A failure is
 * printed, as km_audit's own; negative errno. */
int km_audit_flush(struct km *k);
/* Writes the stderr lines km_audit kept back (k->audit_defer) in one go; km_audit_flush
 * does it first, so they are out before every agent request and at each phase's end. */
void km_err_flush(struct km *k);
/* Makes the journal lines written since the last call durable (k->journal_defer), then
 * the audit records (km_audit_flush): called before every agent request, so a step is
 * on disk before it is taken. 0, or negative errno with the reason in err: then no
 * request may go out. */
int km_flush_before_request(struct km *k, char *err, size_t errlen);
/* approve.c: with an approval policy on this machine ($FCTL_APPROVALS_CONF, else
 * /etc/fabricctl/approvals.conf), the profile's exact bytes must carry its approvals
 * (docs/approvals.md): 0, or negative after saying why on stderr and auditing the
 * refusal (action key-rotation, result refused). */
int km_approvals_gate(struct km *k, const char *cmd);
void km_audit(struct km *k, const struct km_link *l, const char *action, const char *result,
	      const char *kcv, const char *key_state, const char *fmt, ...) FCTL_PRINTF(7, 8);

#endif
