/* SPDX-License-Identifier: MIT */
/*
 * The per-host agent (`fabricctl agent`, docs/agent.md) and its client.
 *
 * The agent is one single-threaded event loop (epoll, signalfd, timerfd): a
 * local Unix socket (peer credentials: root or a configured group), a TCP port
 * with mutual TLS (roles from the client certificate), an HTTP endpoint with
 * Prometheus metrics, drift checks on a timer and on netlink link events. Each
 * request runs in a worker (the program re-executed; fctl_agent_worker_open hands it
 * the request, sandboxed) whose stdout/stderr are captured and sent back, so a remote
 * command prints exactly what the local one prints. The library never calls back into
 * the program: the program runs the request the worker opened, and exits.
 */
#ifndef FCTL_AGENT_H
#define FCTL_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fctl/proto.h"

struct ssl_ctx_st;

#define FCTL_AGENT_SOCKET "/run/fabricctl/agent.sock"
#define FCTL_AGENT_PORT 7443
/* Request limits (docs/agent.md, "Limits"): the largest legitimate request is a
 * profile, so 1 MiB per frame by default (max_frame, 4 KiB .. 16 MiB); all the
 * frames being read and responses not yet written together (max_buffered); the
 * workers running at once (max_workers, 1 .. 64). */
#define FCTL_AGENT_MAX_FRAME (1u << 20)
#define FCTL_AGENT_MAX_BUFFERED (8u << 20)
#define FCTL_AGENT_MAX_WORKERS 4
/* Connection limits (docs/agent.md, "Limits"): one pool per listener; per source
 * address, TLS connections still in their handshake; the handshake deadline; slots of
 * the Unix socket only root may take; refusals audited at most once per reason and
 * source per interval (the rest counted), for so many sources per interval. */
#define FCTL_AGENT_MAX_CONNECTIONS 64
#define FCTL_AGENT_MAX_HANDSHAKES_PER_ADDRESS 8
#define FCTL_AGENT_HANDSHAKE_TIMEOUT_S 5
#define FCTL_AGENT_MAX_UNIX_CONNECTIONS 16
#define FCTL_AGENT_UNIX_ROOT_RESERVE 4
#define FCTL_AGENT_MAX_METRICS_CONNECTIONS 4
#define FCTL_AGENT_REFUSAL_INTERVAL_S 60
#define FCTL_AGENT_MAX_REFUSAL_SOURCES 32

struct fctl_agent_config {
	char *socket_path;  /* "" = no Unix socket */
	char *group;        /* group (besides root) allowed on the Unix socket */
	char *listen;       /* "ADDR:PORT" for mutual TLS, NULL = none */
	char *cert, *key, *ca;
	char *policy;       /* allow, deny and pin rules (fctl/tls.h) */
	char *crl;          /* PEM CRLs client chains are checked against, NULL = none */
	char *metrics;      /* "ADDR:PORT" for GET /metrics, NULL = none */
	char *state_dir;    /* the apply engine's state dir, NULL = its default */
	char *netns;
	char *host;         /* profile host this machine is, NULL = hostname */
	char *profile_dir;  /* received profiles are written here; relative key ids resolve here */
	char *audit_log;    /* NULL = FCTL_AUDIT_LOG when the audit library is built in */
	unsigned drift_interval_s; /* 0 = no periodic check */
	unsigned drift_debounce_ms;
	bool drift_repair;  /* re-apply the last applied profile when drift is found */
	unsigned max_connections;  /* TLS connections, those in their handshake included */
	unsigned max_handshakes_per_address; /* TLS connections in their handshake, per address */
	unsigned handshake_timeout_s; /* a TLS handshake (a metrics request) must end within */
	unsigned max_unix_connections;
	unsigned unix_root_reserve;   /* of max_unix_connections, the slots only uid 0 takes */
	unsigned max_metrics_connections;
	unsigned refusal_interval_s;  /* refusals of one reason and source: one record per */
	unsigned max_refusal_sources; /* reason+source pairs audited per interval */
	unsigned timeout_s;
	uint32_t max_frame;        /* a request frame, header included */
	unsigned max_buffered;     /* bytes of frames and responses held at once, in total */
	unsigned max_workers;      /* request workers at once; more are refused */
	char *worker_user;         /* read-only workers run as this user (default nobody) */
	char *pull_dir;            /* pull mode: the profile directory watched, NULL = off */
	char *pull_file;           /* the profile's name in it, NULL = profile.yaml */
};

void fctl_agent_config_init(struct fctl_agent_config *c);
/* "key: value" lines (a YAML subset), '#' comments; findings name FILE:LINE. */
int fctl_agent_config_load(struct fctl_agent_config *c, const char *file, char *err,
			   size_t errlen);
/* Sets one key from a string (config file and command line share it). */
int fctl_agent_config_set(struct fctl_agent_config *c, const char *key, const char *val);
void fctl_agent_config_release(struct fctl_agent_config *c);

/* One request, as the worker gets it. */
struct fctl_agent_request {
	uint8_t type;             /* FCTL_MSG_* */
	uint32_t options;         /* FCTL_OPT_* */
	const char *host;         /* NULL: the agent's */
	const char *profile_path; /* plan/apply/diff: the received profile, written to a file */
	uint64_t to_version;
	uint32_t confirm_seconds; /* apply --confirm: the deadline, seconds after it (0: none) */
	const char *state_dir;
	const char *netns;
	/* apply/rollback/recover: their records go to the agent's log (NULL: the default)
	 * and name the client: its certificate subject over TLS, its uid on the Unix socket */
	const char *audit_log;
	const char *actor_cert;
	bool has_actor_uid;
	uid_t actor_uid;
	/* FCTL_AGENT_MKA_RESTART only: the MKA port (VLAN device) whose wpa_supplicant the
	 * agent restarts, and whether a hung one is to be killed first */
	const char *mka_port;
	bool mka_kill;
	bool mka_step; /* instead of a restart: one step of the port's CAK rotation */
	/* probe-serve, probe-run: the probe spec (FCTL_TLV_PROBE); the worker keeps the
	 * agent's privileges (RDMA memory, raw ICMP) but is not a writer */
	const char *probe;
};

/* The exit status of a rotation step worker (mka_step) that moved the rotation on: the
 * addresses moved to the incoming CA's SecY, or the switch done (0: nothing to do, or
 * still waiting for the peer). The agent audits both as mka-rotate. */
#define FCTL_AGENT_MKA_STEP_MOVED 10
#define FCTL_AGENT_MKA_STEP_DONE 11

/* A worker request the agent makes itself, never one a client can send (no protocol
 * type has this number): restart the wpa_supplicant of rq->mka_port with the
 * configuration of the last applied profile (docs/mka.md, "Supervision by the agent"). */
#define FCTL_AGENT_MKA_RESTART 0xf0

/* Where the agent's log lines go. The library never writes to stdout, stderr or syslog
 * (docs/architecture.md, "Rules"): the program gives a sink, called with one line (no
 * newline, no program prefix) in the agent, its TLS front-end and its workers, and in a
 * child between fork and exec: it must do no more than one write(2). Set it once, before
 * fctl_agent_run, fctl_agent_worker_open or fctl_agent_frontend_main; NULL (the default)
 * drops the lines. */
typedef void (*fctl_agent_log_fn)(const char *line);
void fctl_agent_log_set(fctl_agent_log_fn fn);

/* The worker mode of the program (`fabricctl agent --worker FD`, started only by the
 * agent, which re-executes its own binary for every request: the worker never shares
 * the agent's memory). FD holds the request. fctl_agent_worker_open reads and decodes
 * it into w->rq and, for a request that changes nothing, first opens what the request
 * reads, then drops to the agent's worker_user with no capabilities, no_new_privs and
 * a seccomp allow-list; writing workers keep the agent's privileges. Closes FD. The
 * program then runs w->rq, flushes its output and exits with the run's code (2 when
 * this failed: err says which step, the program logs it). w->rq's strings point into
 * w, valid until fctl_agent_worker_release; w is written on failure too (release it). */
struct fctl_agent_worker {
	struct fctl_agent_request rq;
	/* the library's: the decoded frame and the state directory w->rq points into */
	char *frame;
	size_t frame_len, frame_cap;
	char state_dir[4096];
};
int fctl_agent_worker_open(struct fctl_agent_worker *w, int fd, char *err, size_t errlen);
void fctl_agent_worker_release(struct fctl_agent_worker *w);

/* The TLS front-end mode of the program (`fabricctl agent --frontend FD`, started only
 * by the agent): FD is its channel to the agent, fd 4 the TLS listener. It terminates
 * TLS as worker_user with no capabilities, no_new_privs and a seccomp allow-list, and
 * sends the agent well-formed requests and their peers' identities
 * (docs/agent.md, "Privilege boundary"). Exits when the agent goes. */
int fctl_agent_frontend_main(int fd);

/* How the agent is started: its configuration, as data. The library builds the
 * configuration from it at start and again on SIGHUP (fctl_agent_config_build). */
struct fctl_agent_start {
	const char *config;        /* the configuration file (fctl_agent_config_load), NULL: none */
	const char *const *keys;   /* then these keys set over it (fctl_agent_config_set), */
	const char *const *vals;   /* in order: the command line's options */
	size_t n;
	/* fabricctl-keymgr, for the keys of KMS references when the agent itself rolls back
	 * an interrupted apply (fctl_engine_opts.keymgr_path); NULL: none */
	const char *keymgr_path;
};

/* The configuration s describes: the file loaded, then the keys set ("bad value 'V' for
 * --KEY" in err when one is refused). out is fctl_agent_config_init'ed by the caller. */
int fctl_agent_config_build(const struct fctl_agent_start *s, struct fctl_agent_config *out,
			    char *err, size_t errlen);

/* Runs until SIGTERM/SIGINT. Returns 0 on a clean shutdown, negative errno when it
 * could not start (err says why). s (borrowed) must live until it returns. */
int fctl_agent_run(const struct fctl_agent_start *s, char *err, size_t errlen);

/* --- drift and metrics (used by the agent's loop; usable alone) --- */

struct fctl_engine_opts;

struct fctl_drift_report {
	bool applied;        /* a profile was applied on this host */
	uint64_t version;    /* its version */
	char profile[129];
	size_t ops;          /* operations that would bring the host back: 0 = no drift */
	char summary[512];   /* the first operations, "create-link ms100; add-addr ms100" */
	char ifnames[256];   /* the interfaces those operations touch, space-separated */
	/* the plan's first PFC warning (pfc-off, pfc-unknown: docs/profile.md "qos"), "" none */
	char pfc[384];
};

/* Plans the last applied profile (history version 0) against the live state. */
int fctl_drift_check(const struct fctl_engine_opts *o, struct fctl_drift_report *out,
		     char *err, size_t errlen);

enum fctl_refusal {
	FCTL_REFUSED_NO_CERT,     /* TLS handshake failed: no, expired or foreign certificate */
	FCTL_REFUSED_NO_ROLE,     /* a valid certificate naming no role */
	FCTL_REFUSED_ROLE,        /* the role does not allow the request */
	FCTL_REFUSED_PEER,        /* Unix socket peer neither root nor in the group */
	FCTL_REFUSED_MALFORMED,   /* a frame the decoder refused */
	FCTL_REFUSED_OVERSIZED,   /* a frame over max_frame */
	FCTL_REFUSED_TIMEOUT,
	FCTL_REFUSED_BUSY,        /* max_connections reached */
	FCTL_REFUSED_WORKERS,     /* max_workers requests running */
	FCTL_REFUSED_BUFFERED,    /* max_buffered bytes held */
	FCTL_REFUSED_PER_ADDRESS, /* max_handshakes_per_address from this address */
	FCTL_REFUSED_HANDSHAKE_TIMEOUT, /* no TLS handshake within handshake_timeout */
	FCTL_REFUSED_UNIX_BUSY,   /* max_unix_connections reached (for this peer) */
	FCTL_REFUSED_METRICS_BUSY, /* max_metrics_connections reached */
	FCTL_REFUSED_MAX,
};

const char *fctl_refusal_name(enum fctl_refusal r);

/* Requests are counted by the role the connection has (enum fctl_role of fctl/tls.h,
 * FCTL_ROLE_NONE .. FCTL_ROLE_LOCAL), the request type, and the result. */
#define FCTL_AGENT_ROLES 5
enum { FCTL_REQ_OK, FCTL_REQ_FAILED, FCTL_REQ_REFUSED, FCTL_REQ_ABANDONED, FCTL_REQ_RESULTS };

struct fctl_agent_stats {
	uint64_t requests[FCTL_AGENT_ROLES][FCTL_MSG_LAST + 1][FCTL_REQ_RESULTS];
	uint64_t refused[FCTL_REFUSED_MAX];
	uint64_t refusals_aggregated; /* refusals audited only in a count, not one by one */
	uint64_t connections; /* open now (control and metrics) */
	bool drift_known;
	bool drift;
	double drift_last_check; /* unix time */
	char drift_ifnames[256]; /* the interfaces the last check found drifting */
	uint64_t drift_checks, drift_detected, drift_repairs, drift_repair_failures;
	uint64_t mka_restarts, mka_restart_failures; /* wpa_supplicants the agent restarted */
	bool applied;
	uint64_t applied_version;
	double start_time;
};

/* What a scrape reads besides the live state (agentd_http.c fills it). */
struct fctl_metrics_src {
	const struct fctl_engine_opts *eo; /* state dir, netns, host */
	const struct fctl_agent_stats *st;
	const char *host;         /* the host label of the per-host series */
	uint64_t control_connections; /* open control connections (not the scrape's) */
	bool audit_open;
	uint64_t audit_records;   /* records in the audit log (fctl_audit_size) */
	const char *audit_log;    /* its path: LOG.checkpoints holds its signed checkpoints */
	double now;               /* unix time of the scrape */
};

/* Prometheus text format (0.0.4): one group per family, each with HELP and TYPE; the
 * agent's counters, the SecY and SA series read live over netlink, rotation records
 * (STATE_DIR/rotation), the last probe report (STATE_DIR/probe/last) and the audit
 * log. Names, labels and meanings: docs/agent.md, "Metrics". */
int fctl_metrics_render(const struct fctl_metrics_src *src, struct fctl_buf *out);

/* Path of the last probe report of a state dir: STATE_DIR/probe/last (docs/probes.md). */
void fctl_probe_last_path(const char *state_dir, const char *netns, char *out, size_t len);

/* --- client --- */

struct fctl_agent_conn;

/* endpoint: "HOST:PORT" or "[V6]:PORT" (mutual TLS with ctx; the server certificate
 * must name HOST), or "unix:PATH" / an absolute path (ctx unused). timeout_s (0 = 30)
 * is one deadline for the TCP connect, the TLS handshake and the first
 * fctl_agent_call on the connection (its request and the whole answer); each later
 * call has timeout_s of its own. Errors (err says which step): -ECONNREFUSED (nothing
 * listens: "connection refused"), -ETIMEDOUT ("timed out after Ns": the connect, or a
 * peer that accepted but never finished the handshake), -EPROTO (the handshake
 * failed: certificate, protocol), -ECONNRESET (the agent closed it during the
 * handshake: most often a refused client certificate), other -errno. */
int fctl_agent_connect(const char *endpoint, struct ssl_ctx_st *ctx, unsigned timeout_s,
		       struct fctl_agent_conn **out, char *err, size_t errlen);
/* Sends req (its id is set), reads the response into frame and decodes it into resp
 * (pointing into frame). -ETIMEDOUT when the deadline passes ("timed out after Ns"),
 * -ECONNRESET when the agent closed the connection. */
int fctl_agent_call(struct fctl_agent_conn *c, struct fctl_msg *req, struct fctl_msg *resp,
		    struct fctl_buf *frame, char *err, size_t errlen);
/* Sends raw bytes (tests: malformed frames). */
int fctl_agent_send_raw(struct fctl_agent_conn *c, const void *p, size_t n);
/* The send and receive timeout of c, and each call's deadline, from now on (a request
 * known to take long); a first call not yet made gets that much from now. */
int fctl_agent_conn_set_timeout(struct fctl_agent_conn *c, unsigned timeout_s);
/* Whether an idle connection is still usable: nothing to read (no close, no TLS alert
 * from the agent, whose idle timeout may have ended it) and no error. Never blocks. */
bool fctl_agent_conn_idle_ok(const struct fctl_agent_conn *c);
/* Whether c's TLS handshake resumed a session of ctx's cache (fctl_tls_cache_attach). */
bool fctl_agent_conn_tls_resumed(const struct fctl_agent_conn *c);
void fctl_agent_conn_free(struct fctl_agent_conn *c);

#endif
