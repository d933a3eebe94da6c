/* SPDX-License-Identifier: MIT */
/* Shared between the agent daemon's files (agentd_*.c): its state and steps; not installed. */
#ifndef FCTL_AGENTD_INT_H
#define FCTL_AGENTD_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "fctl/agent.h"
#include "fctl/audit.h"
#include "fctl/engine.h"
#include "fctl/engine_kernel.h"
#include "fctl/nl.h"
#include "fctl/proto.h"
#include "fctl/rotation.h"
#include "fctl/tls.h"
#include "fctl/util.h"

/*
 * The agent's event loop: one thread, epoll over listeners, connections, a
 * signalfd (TERM/INT/HUP/CHLD), two timerfds (periodic drift check, debounce
 * after link events), the MKA supervision's 2 s timerfd (agentd_mka.c) and a
 * NETLINK_ROUTE socket subscribed to link and address events. Nothing else
 * polls: with no traffic and no timer due the process sleeps
 * in epoll_wait. Requests that touch the engine run in a worker (one per
 * request, killed with the agent: PR_SET_PDEATHSIG) that re-executes the agent's
 * binary (no memory of the agent's survives: agentd_sandbox.c) and whose stdout
 * and stderr go to memfds that become the response's OUTPUT and ERROR; read-only
 * workers drop to worker_user, no capabilities, no_new_privs and seccomp.
 *
 * TLS is not the agent's: a front-end process (agentd_frontend.c, re-executed as
 * worker_user under seccomp) owns the TLS listener, the TLS key and every TLS
 * connection, and runs this same connection code on a state of its own (struct
 * frontend: a struct conn_table, its listener, its channel; its own conn_hooks). The
 * two processes share no state: the agent's (struct agent) holds the audit log, the
 * SA session, pull mode, MKA, the workers and the front-end's handle; the connection
 * code sees only the struct conn_table it is given and the shared part of each
 * connection (struct conn): the agent's connections are struct aconn (the worker and
 * request state besides), the front-end's are struct conn alone. The agent sees each TLS
 * connection as a proxy (struct aconn with .proxy, fd -1) fed by the front-end's
 * channel (agentd_tlsfe.c), whose messages it checks before anything acts on them.
 *
 * Ownership of a struct conn (one rule, everywhere): only
 * fctl_agentd_conn_collect frees a connection, and the loop calls it once per
 * epoll batch, after every event of the batch (and the timeout sweep) ran.
 * Everything else that ends a connection calls fctl_agentd_conn_close, which
 * sets c->closing, takes the fd out of the epoll set and closes it, and frees
 * nothing else. So a struct conn stays valid for the rest of the batch after any
 * call that "closes" it: callers check c->closing after a call that may close,
 * never compare addresses, and never touch a connection once they returned to
 * the loop with c->closing set. A closing connection still busy (the agent's whose
 * worker still runs) is kept until the worker is reaped (its response is dropped). Connections are
 * freed directly only by the loop's teardown.
 *
 * Limits (docs/agent.md): a request frame is at most cfg.max_frame bytes (refused
 * from its header, before anything is allocated); the frames being read and the
 * responses not yet written count against cfg.max_buffered for the whole agent (a
 * frame that would exceed it is refused from its header); at most cfg.max_workers
 * workers run at once (a request beyond that is refused, never queued).
 *
 * Connection limits: each listener has its own pool (cfg.max_connections for TLS,
 * cfg.max_unix_connections, of which cfg.unix_root_reserve only uid 0 may take, and
 * cfg.max_metrics_connections), counted over the connections not closing; a source
 * address holds at most cfg.max_handshakes_per_address TLS connections that have not
 * finished their handshake, which must finish within cfg.handshake_timeout_s. Refused
 * connections go through fctl_agentd_refuse: counted, and audited at most once per
 * reason and source per cfg.refusal_interval_s (agentd_refusal.c).
 */

#define EXIT_REFUSED 13 /* RESULT of a request the role does not allow */

enum conn_kind { C_UNIX, C_TLS, C_HTTP };

/*
 * A connection as the connection code (agentd_conn.c) sees it, in either process: the
 * socket, TLS, who the peer is, the framing buffers, the deadline and what it holds of
 * the limits. What else a process keeps of a connection is its own: the agent's
 * connections are struct aconn (below: the worker, the request, the proxy), which its
 * hooks allocate and free; the front-end's are this struct alone. Every connection of a
 * table is its owner's type (t->hooks->alloc made it).
 */
struct conn {
	struct conn *next;
	enum conn_kind kind;
	int fd;            /* -1: closed, or (not closing) no socket here: the agent's proxy */
	SSL *ssl;
	bool handshake;
	enum fctl_role role; /* the one hello and status name: fctl_roles_primary(roles) */
	unsigned roles;      /* what requests are checked against (fctl/tls.h) */
	char who[320];      /* "uid 0" or "CN=alice,OU=operator" */
	char peer[64];      /* the source: numeric address (TLS, metrics) or "uid N" (Unix) */
	uid_t uid;
	bool has_uid;
	uint8_t hdr[FCTL_PROTO_HDR_LEN];
	size_t hdr_got;
	struct fctl_proto_hdr h;
	uint8_t *frame;
	size_t frame_got;
	struct fctl_buf out;
	size_t out_off;
	bool writing, close_after;
	/* its request is handled by its owner (the agent: its worker runs; the front-end:
	 * the agent has it), set and cleared by the owner: nothing is read from it (only its
	 * hang-up watched), its deadline waits, and closed it is not shut down (TLS) and
	 * fctl_agentd_conn_collect keeps it until busy is cleared (the front-end clears it
	 * in hooks->closing: the agent's answer is dropped) */
	bool busy;
	uint64_t deadline; /* ms, 0 = none */
	bool closing;      /* closed: no more I/O, freed by fctl_agentd_conn_collect */
	bool in_readable;  /* inside fctl_agentd_conn_readable (which reads on itself) */
	size_t held;       /* bytes of frame and response counted in conn_table.buffered */
	uint32_t rid;      /* a TLS connection's id on the front-end channel (both sides) */
};

/* The agent's connection: the shared part and what only the agent keeps (its worker,
 * the request being handled, the metrics request, the proxy's state). Allocated and
 * freed by the agent's hooks (fctl_agentd_conn_hooks: alloc, release). */
struct aconn {
	struct conn c;
	pid_t child;       /* its worker, 0: none (c.busy while it runs) */
	int fd_out, fd_err; /* the worker's stdout and stderr (memfds), -1: none */
	uint32_t req_id;
	uint8_t req_type;
	uint32_t req_options;
	bool req_writes;
	bool abandoned; /* a read-only worker stopped: its client hung up */
	char spool[PATH_MAX]; /* this request's profile (a unique name made here), or "" */
	char http[2048];   /* the metrics request being read (C_HTTP) */
	size_t http_len;
	bool proxy;        /* a TLS connection the front-end holds (c.fd -1) */
	bool authed;       /* the front-end named its peer (CH_AUTH) */
	bool fe_gone;      /* the front-end closed it, or is gone */
};

/* The agent's connection c is part of (every connection of the agent's table is one). */
static inline struct aconn *fctl_agentd_ac(struct conn *c)
{
	return (struct aconn *)(void *)((char *)c - offsetof(struct aconn, c));
}

static inline const struct aconn *fctl_agentd_cac(const struct conn *c)
{
	return (const struct aconn *)(const void *)((const char *)c - offsetof(struct aconn, c));
}

/*
 * The channel between the agent and its TLS front-end (agentd_chan.c, a stream
 * socketpair): messages of a 12-byte header (type u8, three zero bytes, connection id
 * u32, payload length u32; big-endian) and the payload: at most FCTL_CHAN_SMALL bytes,
 * a request or response frame (CH_REQ, CH_RESP) at most max_len. Payloads (u32
 * big-endian, strings without their NUL unless said):
 *   CH_OPEN   fe>agent  peer NUL who        a TCP connection accepted (id > every earlier)
 *   CH_AUTH   fe>agent  roles u32, who      its handshake finished: subject, policy roles
 *   CH_REQ    fe>agent  frame               one well-formed request frame
 *   CH_REFUSE fe>agent  why u32, detail NUL who  refused (fctl_agentd_refuse), closed
 *   CH_EVENT  fe>agent  why u32, what u8, detail  a counted refusal (what 1: audited as
 *                                           "request refused", 2: "request timeout")
 *   CH_CLOSE  both      -                   closed (or: close it)
 *   CH_ACK    fe>agent  result u32, error   a CH_CONFIG applied (0, 1: a CRL is stale) or
 *                                           not (an errno, and why)
 *   CH_RESP   agent>fe  flags u8, frame     the response (flags 1: close after it)
 *   CH_CONFIG agent>fe  u32 x 10, names     limits, the worker user, which files; the
 *                                           files' descriptors ride along (SCM_RIGHTS)
 */
enum { CH_OPEN = 1, CH_AUTH, CH_REQ, CH_REFUSE, CH_EVENT, CH_CLOSE, CH_ACK, CH_RESP, CH_CONFIG,
       CH_MAX };
#define FCTL_CHAN_HDR 12
#define FCTL_CHAN_SMALL 4096
#define FCTL_CHAN_FDS 5 /* cert, key, ca, crl, policy */

struct fctl_chan {
	int fd;
	uint8_t hdr[FCTL_CHAN_HDR];
	size_t hdr_got;
	uint8_t type;
	uint32_t id, len;
	uint8_t *msg;     /* the payload being read (len + 1 bytes, NUL-terminated) */
	size_t msg_got;
	uint32_t max_len; /* of a CH_REQ or CH_RESP payload */
	struct fctl_buf out;
	size_t out_off;
	int fds[FCTL_CHAN_FDS * 2]; /* received with the bytes (front-end) */
	unsigned nfds;
};

/* The agent's TLS front-end (agentd_tlsfe.c). */
struct fe {
	pid_t pid;          /* 0: none running */
	struct fctl_chan ch;
	uint32_t max_id;    /* the highest connection id it opened */
	unsigned deaths;    /* in the window */
	uint64_t window_ms; /* the window of deaths began */
};

/* One reason and source of refusals, audited once, then counted (agentd_refusal.c). */
struct refusal_src {
	enum fctl_refusal why;
	enum conn_kind kind;
	char source[64];
	char detail[256];
	bool has_uid;
	uid_t uid;
	uint64_t repeats; /* refusals since its last record */
	uint64_t seen;    /* refusals in this interval */
};

/* The refusals of the current interval. */
struct refusals {
	struct refusal_src *src; /* cfg.max_refusal_sources at most */
	size_t n, cap;
	uint64_t total;          /* refused in this interval */
	uint64_t unrecorded;     /* of which not audited one by one (in counts or the summary) */
	uint64_t overflow;       /* of which from sources beyond the table (summary only) */
	uint64_t by_reason[FCTL_REFUSED_MAX];
	bool armed;              /* refusal_tfd runs */
	uint64_t start_ms;       /* the interval began (armed) */
};

struct fctl_agentd_pull;
struct fctl_agentd_mka;

/* The limits the connection code applies (the agent's from its configuration, the
 * front-end's from CH_CONFIG), and the group that may use the Unix socket. */
struct conn_limits {
	uint32_t max_frame;
	unsigned max_buffered, timeout_s;
	unsigned max_connections, max_handshakes_per_address, handshake_timeout_s; /* TLS */
	unsigned max_unix_connections, unix_root_reserve;                          /* Unix */
	unsigned max_metrics_connections;                                          /* /metrics */
	bool has_gid;
	gid_t gid; /* the Unix socket's group (the agent's configuration) */
};

struct conn_table;
struct agent;

/*
 * What the connection code (agentd_conn.c) leaves to the process that runs it: the
 * agent's hooks (agentd_request.c: fctl_agentd_conn_hooks) handle requests, count and
 * audit refusals; the front-end's (agentd_frontend.c) send them over its channel. The
 * first three are always set; a NULL one of the others does nothing (alloc, release:
 * see there).
 */
struct conn_hooks {
	/* A decoded request frame of c (c->frame holds it while m is used). */
	void (*request)(struct conn_table *t, struct conn *c, const struct fctl_msg *m);
	/* Refuses c (not yet, or just, authenticated): counted, audited or reported, and
	 * c closed (fctl_agentd_conn_close). detail may be NULL. */
	void (*refuse)(struct conn_table *t, struct conn *c, enum fctl_refusal why,
		       const char *detail);
	/* A counted refusal of c's request (why); what 1: audited as "request refused", 2:
	 * "request timeout", 0: counted only. detail may be NULL. c is not closed here. */
	void (*event)(struct conn_table *t, struct conn *c, enum fctl_refusal why, uint8_t what,
		      const char *detail);
	/* A TCP connection accepted, its peer and who set, before its limits are checked. */
	void (*opened)(struct conn_table *t, struct conn *c);
	/* c's TLS handshake finished and its peer has roles. */
	void (*authed)(struct conn_table *t, struct conn *c);
	/* c is being closed (fctl_agentd_conn_close, once), its socket still open. */
	void (*closing)(struct conn_table *t, struct conn *c);
	/* c has no socket here (fd -1, not closing: the agent's proxy): its response
	 * (c->out) leaves through the front-end. */
	void (*proxy_out)(struct conn_table *t, struct conn *c);
	/* A new connection, zeroed but for what its owner sets (a struct aconn in the
	 * agent), or NULL; NULL hook: a struct conn alone (fctl_calloc). */
	struct conn *(*alloc)(struct conn_table *t);
	/* Frees c and what its owner kept of it (fctl_agentd_conn_free calls it last, c
	 * already unlinked, its socket closed); NULL hook: free(c). */
	void (*release)(struct conn_table *t, struct conn *c);
};

/* One process's connections (agentd_conn.c): the agent's (Unix socket, /metrics, the
 * front-end's TLS connections as proxies) or the front-end's (TLS). Each process has its
 * own, embedded in its state (struct agent, agentd_frontend.c's struct frontend). */
struct conn_table {
	const struct conn_hooks *hooks;
	int ep;                /* the process's epoll, which its connections are in */
	struct conn *conns;
	size_t buffered;       /* the sum of every connection's held bytes */
	struct conn_limits lim;
	SSL_CTX *ctx;          /* TLS connections' context (the front-end's), else NULL */
	struct fctl_tls_policy *pol; /* the roles policy of TLS peers, NULL: none */
	uint64_t *count;       /* connections open, counted here (NULL: not counted) */
};

/* What request handling hands on (agentd_request.c): fctl_agentd_req_ops, the real
 * ones, start a worker (fctl_agentd_spawn), run an SA request (fctl_agentd_sa_request)
 * and read the engine's state; tests/unit/test_agentd_request.c puts fakes here. */
struct agentd_req_ops {
	/* Starts c's worker for m (a->workers, a->writers counted): 0 or a negative errno. */
	int (*spawn)(struct agent *a, struct conn *c, const struct fctl_msg *m);
	/* Handles one SA request and responds (its role checks its own). */
	void (*sa_request)(struct agent *a, struct conn *c, const struct fctl_msg *m);
	/* fctl_engine_confirm_pending of the agent's engine options. */
	int (*confirm_pending)(struct agent *a, struct fctl_confirm_pending *cp);
	/* Whether a key rotation holds an interface of the host (its name in ifn). */
	bool (*rotation_busy)(struct agent *a, char *ifn, size_t len);
};
extern const struct agentd_req_ops fctl_agentd_req_ops;

/* The root agent's state (fctl_agent_run); the front-end has its own (agentd_frontend.c). */
struct agent {
	const struct fctl_agent_start *start; /* borrowed from fctl_agent_run's caller */
	const struct agentd_req_ops *rops; /* fctl_agentd_req_ops (tests: fakes) */
	struct fctl_agent_config cfg;
	struct fctl_engine_opts eo;
	struct conn_table ct;   /* its connections; ct.ep is the loop's epoll */
	int sfd, drift_tfd, debounce_tfd, nl_fd, unix_fd, tcp_fd, http_fd, refusal_tfd;
	struct fctl_agent_stats st;
	unsigned writers;  /* workers that change the host */
	unsigned workers;  /* request workers running (cfg.max_workers at most) */
	pid_t repair_child;
	bool stop;
	char host[256];
	/* the SA requests' kernel session (reads on its netlink, writes through the engine),
	 * kept open between them */
	struct fctl_engine_kernel *sa_kern;
	struct fctl_audit *audit;
	struct refusals refusals;
	int exe_fd;             /* the agent's own binary, re-executed by every worker */
	uid_t worker_uid;       /* worker_user: what read-only workers run as */
	gid_t worker_gid;
	struct fctl_agentd_pull *pull; /* pull mode (agentd_pull.c), NULL = off */
	struct fctl_agentd_mka *mka;   /* MKA supervision (agentd_mka.c), NULL = not started */
	struct fe fe;           /* its TLS front-end */
	int fatal;              /* stop with this error (fatal_err) */
	char fatal_err[256];
};

/* The agent whose connection table t is (t is a struct agent's ct). */
static inline struct agent *fctl_agentd_of(struct conn_table *t)
{
	return (struct agent *)(void *)((char *)t - offsetof(struct agent, ct));
}

/* What a worker is told besides its request (agentd_sandbox.c). */
struct fctl_wreq {
	bool drop;     /* a request that changes nothing: sandboxed as uid:gid */
	uid_t uid;
	gid_t gid;
	pid_t parent;  /* the agent: the worker exits when it is not its parent */
};

/* --- agentd_loop.c: the loop's clock, log and epoll --- */

/* One line of the agent's log, to the program's sink (fctl_agent_log_set); none set: dropped. */
void fctl_agentd_log(const char *fmt, ...) FCTL_PRINTF(1, 2);
/* CLOCK_MONOTONIC in milliseconds. */
uint64_t fctl_agentd_now_ms(void);
/* CLOCK_REALTIME in seconds. */
double fctl_agentd_wall(void);
/* epoll_ctl on the loop's epoll (a->ct.ep): 0 or a negative errno. */
int fctl_agentd_ep_set(struct agent *a, int op, int fd, uint32_t events, void *ptr);

/* --- agentd_audit.c: the audit log --- */

/* Opens the audit log named by the configuration; a failure is logged, not fatal. */
void fctl_agentd_audit_open(struct agent *a);
/* Closes it (none open is fine). */
void fctl_agentd_audit_close(struct agent *a);
/* The one audit call site of the agent: logs the event and appends it to the audit log.
 * c (may be NULL) is the actor, detail may be NULL. */
void fctl_agentd_audit_event(struct agent *a, const char *action, const char *result,
			     const struct conn *c, const char *detail);
/* The same with the actor given field by field: a certificate subject or peer (may be
 * NULL), else a uid (has_uid), else the agent itself. */
void fctl_agentd_audit_actor(struct agent *a, const char *action, const char *result,
			     const char *actor_cert, bool has_uid, uid_t uid, const char *detail);

/* The same by the agent itself, carrying one key check value (kcv: FCTL_AUDIT_KCV_LEN hex
 * digits, never key material; NULL or "" for none): the MKA state records. */
void fctl_agentd_audit_kcv(struct agent *a, const char *action, const char *result,
			   const char *detail, const char *kcv);

/* --- agentd_refusal.c: refused connections, counted and audited in aggregate --- */

/* Refuses c (a connection not yet, or just, authenticated): counts why, audits it
 * (the first refusal of this reason, detail and source at once, the next ones of the
 * interval as one record with their count), closes c. The agent's conn_hooks.refuse. */
void fctl_agentd_refuse(struct agent *a, struct conn *c, enum fctl_refusal why,
			const char *detail);
/* A counted refusal of c's request: counted; what 1 audited as "request refused", 2 as
 * "request timeout" (detail may be NULL). The agent's conn_hooks.event, and the
 * front-end's CH_EVENT. */
void fctl_agentd_refusal_event(struct agent *a, const struct conn *c, enum fctl_refusal why,
			       uint8_t what, const char *detail);
/* refusal_tfd fired: one record per reason and source refused again since its last
 * record, and a summary record when any refusal was not audited one by one. */
void fctl_agentd_refusals_flush(struct agent *a);
/* Teardown: flushes what is counted, frees the table. */
void fctl_agentd_refusals_release(struct agent *a);

/* --- agentd_listen.c: the sockets the loop watches --- */

/* A non-blocking TCP listener on "ADDR:PORT" ("[v6]:PORT"): the fd or a negative errno
 * with err filled. */
int fctl_agentd_listen_tcp(const char *addr, char *err, size_t errlen);
/* The Unix socket of the configuration (0600, 0660 with the agent's group, ct.lim.gid):
 * the fd or a negative errno with err filled. */
int fctl_agentd_listen_unix(struct agent *a, char *err, size_t errlen);
/* NETLINK_ROUTE subscribed to link and address events: the fd or a negative errno. */
int fctl_agentd_open_netlink(void);

/* --- agentd_conn.c: connections, framing, responses (each process its own table) --- */

/* The limits of cfg (the group not: ct.lim.gid is set apart). */
void fctl_agentd_conn_limits(struct conn_limits *l, const struct fctl_agent_config *cfg);
/* epoll_ctl on t's epoll: 0 or a negative errno. */
int fctl_agentd_conn_ep(struct conn_table *t, int op, int fd, uint32_t events, void *ptr);
/* Accepts one connection on lfd: peer credentials (Unix), TLS handshake (TLS). */
void fctl_agentd_accept(struct conn_table *t, int lfd, enum conn_kind kind);
/* Unlinks and frees c: its socket, TLS, frame, output, then hooks->release (the agent:
 * the worker's memfds and spool file). Only fctl_agentd_conn_collect and the loop's
 * teardown call it. */
void fctl_agentd_conn_free(struct conn_table *t, struct conn *c);
/* Closes c's socket and sets c->closing (hooks->closing first: the agent sends a
 * read-only worker of c SIGTERM); c itself stays valid until fctl_agentd_conn_collect
 * (closing twice is fine). */
void fctl_agentd_conn_close(struct conn_table *t, struct conn *c);
/* While c's request is handled (its worker runs, or the agent has it from the
 * front-end) nothing is read from c; only its hang-up is watched for.
 * _watch_hangup arms that (the fd stays registered: the answer re-arms it with
 * EPOLL_CTL_MOD); _on_hangup takes an event of that fd and closes c on a hang-up. */
void fctl_agentd_conn_watch_hangup(struct conn_table *t, struct conn *c);
void fctl_agentd_conn_on_hangup(struct conn_table *t, struct conn *c, uint32_t events);
/* End of an epoll batch: frees the closing connections that are not busy (the agent's
 * whose worker still runs). */
void fctl_agentd_conn_collect(struct conn_table *t);
/* Closes connections past their deadline (handshake: hooks->refuse; idle or a request
 * not read or written in time: hooks->event, then closed). Not busy ones, nor those
 * with no socket here (the agent's proxies: the front-end times them). */
void fctl_agentd_sweep_timeouts(struct conn_table *t);
/* The epoll timeout until the next deadline (of the connections the sweep times), -1
 * for none. */
int fctl_agentd_next_timeout(struct conn_table *t);
/* Sets the bytes c holds (frame + response) and keeps t->buffered their sum. */
void fctl_agentd_conn_hold(struct conn_table *t, struct conn *c, size_t bytes);
/* >0 bytes, 0 end of stream, -EAGAIN, < 0 error */
ssize_t fctl_agentd_conn_read(struct conn *c, void *p, size_t n);
/* Writes c->out (a proxy's: hooks->proxy_out); then closes c or waits for its next
 * request. May close c. */
void fctl_agentd_conn_flush(struct conn_table *t, struct conn *c);
/* Reads and decodes frames, each handed to hooks->request, until one is in progress.
 * May close c. */
void fctl_agentd_conn_readable(struct conn_table *t, struct conn *c);
/* Continues the TLS handshake; done, maps the certificate to a role. May close c. */
void fctl_agentd_tls_handshake(struct conn_table *t, struct conn *c);
/* Encodes a RESPONSE (extra: other TLVs, may be NULL) into c->out and starts writing it.
 * May close c. */
void fctl_agentd_respond(struct conn_table *t, struct conn *c, uint32_t id, uint32_t result,
			 const void *out, size_t out_len, const char *err, size_t err_len,
			 const struct fctl_msg *extra);
/* A RESPONSE whose ERROR is "fabricctl agent: <fmt>\n". May close c. */
void fctl_agentd_respond_error(struct conn_table *t, struct conn *c, uint32_t id,
			       uint32_t result, const char *fmt, ...) FCTL_PRINTF(5, 6);

/* --- agentd_request.c: what a decoded request does --- */

/* Checks the role, answers HELLO and STATUS itself, sends SA requests to
 * a->rops->sa_request and starts a worker (a->rops->spawn) for the rest: refused past
 * cfg.max_workers, and a writing request while a key rotation runs. Responds to c
 * (or its worker will). */
void fctl_agentd_handle_request(struct agent *a, struct conn *c, const struct fctl_msg *m);
/* The agent's hooks of the connection code (requests, refusals, a closing connection's
 * worker and proxy, a proxy's response). */
extern const struct conn_hooks fctl_agentd_conn_hooks;
/* Counts one request of c's role for the metrics: FCTL_REQ_OK, _FAILED,
 * _REFUSED or _ABANDONED. */
void fctl_agentd_count(struct agent *a, const struct conn *c, uint8_t type, unsigned result);

/* --- agentd_worker.c: workers, forked and re-executed --- */

/* Spools the request's profile to a file only this request uses (a new unique name
 * in profile_dir, O_EXCL, 0600), forks the worker with its output in memfds: 0 or
 * a negative errno, with nothing left behind (no memfd, no spool file). */
int fctl_agentd_spawn(struct agent *a, struct conn *c, const struct fctl_msg *m);
/* Reaps the exited workers (and the drift repair) and sends their responses. */
void fctl_agentd_reap(struct agent *a);

/* Opens the agent's own binary (/proc/self/exe) for the workers: 0 or a negative errno
 * with err filled. */
int fctl_agentd_worker_init(struct agent *a, char *err, size_t errlen);
/* In a forked child: becomes the worker of rq (fd_out, fd_err its stdout and stderr;
 * drop: sandboxed as worker_user) by re-executing the agent's binary with the request
 * in a memfd. Does not return. */
_Noreturn void fctl_agentd_exec_worker(const struct agent *a, int fd_out, int fd_err,
				       const struct fctl_agent_request *rq, bool drop);

/* --- agentd_sandbox.c: the re-executed worker --- */

/* The request as "key=value\0" strings (b: appended). 0 or -ENOMEM. */
int fctl_agentd_wreq_encode(const struct fctl_agent_request *rq, const struct fctl_wreq *w,
			    struct fctl_buf *b);

/* Drops to uid:gid (no supplementary groups), checks every capability is gone: 0 or a
 * negative errno. */
int fctl_agentd_drop_to(uid_t uid, gid_t gid);

/* --- agentd_chan.c: the front-end channel's messages --- */

/* Queues one message (payload p1 then p2, either may be empty) and writes what it can:
 * 0 (some may wait: fctl_chan_pending), or a negative errno. The queue never reallocs:
 * it grows by a copy of what waits and the old buffer is wiped before it is freed, and
 * it is wiped whenever it empties (a queued request may carry a SAK). */
int fctl_chan_send(struct fctl_chan *ch, uint8_t type, uint32_t id, const void *p1, size_t l1,
		   const void *p2, size_t l2);
/* Writes all queued bytes, then one message with nfds descriptors attached (blocking
 * until sent): 0 or a negative errno. */
int fctl_chan_send_fds(struct fctl_chan *ch, uint8_t type, uint32_t id, const void *p, size_t l,
		       const int *fds, unsigned nfds);
/* Writes what it can of the queue: 0 all written, -EAGAIN some left, < 0 error. */
int fctl_chan_flush(struct fctl_chan *ch);
/* Whether bytes wait in the queue. */
bool fctl_chan_pending(const struct fctl_chan *ch);
/* Reads on: 1 a message is complete (ch->type, id, len, msg; then fctl_chan_done), 0
 * nothing more now, -EPIPE the other side closed, -EPROTO a header no message has
 * (unknown type, payload over its limit, bytes that must be zero). */
int fctl_chan_recv(struct fctl_chan *ch);
/* The message was handled: its payload wiped and freed. */
void fctl_chan_done(struct fctl_chan *ch);
/* Closes the socket, wipes and frees the queue and the message, closes received fds. */
void fctl_chan_release(struct fctl_chan *ch);
/* Big-endian u32 at p. */
uint32_t fctl_chan_u32(const uint8_t *p);

/* --- agentd_tlsfe.c: the agent's side of its TLS front-end --- */

/* Starts the front-end (fork, re-executes `fabricctl agent --frontend 3` with the
 * channel and the TLS listener) and configures it: 0 or a negative errno with err. */
int fctl_agentd_fe_start(struct agent *a, char *err, size_t errlen);
/* Sends cfg's limits and TLS files (opened here, never read) to the running front-end
 * and waits for its answer: 0, 1 (a CRL is past its next update) or a negative errno
 * with err (the front-end keeps what it had). */
int fctl_agentd_fe_configure(struct agent *a, const struct fctl_agent_config *cfg, char *err,
			     size_t errlen);
/* The channel is readable or writable: reads and checks the front-end's messages. */
void fctl_agentd_fe_event(struct agent *a, uint32_t events);
/* pid was the front-end: audits its end, closes its connections, restarts it (at most
 * FE_MAX_DEATHS times a minute; beyond: the agent stops, exit non-zero). */
bool fctl_agentd_fe_reaped(struct agent *a, pid_t pid, int status);
/* Teardown: kills it, waits for it, closes the channel. */
void fctl_agentd_fe_stop(struct agent *a);
/* A proxy connection's response (c->out) to the front-end; closes c after it when
 * c->close_after. */
void fctl_agentd_fe_respond(struct agent *a, struct conn *c);
/* A proxy connection closed by the agent: tells the front-end. */
void fctl_agentd_fe_close(struct agent *a, struct conn *c);

/* --- agentd_sa.c: the SA requests of key rotation --- */

/* Handles one SA request in the loop (key-custodian or local only) and responds. */
void fctl_agentd_sa_request(struct agent *a, struct conn *c, const struct fctl_msg *m);

/* --- agentd_secret.c: key hygiene --- */

/* No core dumps (RLIMIT_CORE 0) and not dumpable (PR_SET_DUMPABLE 0: no /proc/PID/mem,
 * no ptrace without CAP_SYS_PTRACE); failures are logged. Call before any request. */
void fctl_agentd_harden(void);
/* Wipes c->frame (all the allocation: it may hold a SAK), frees it, sets it NULL. */
void fctl_agentd_frame_free(struct conn *c);

/* --- agentd_http.c: the metrics endpoint --- */

/* Reads an HTTP request on c and answers GET /metrics (404, 405, 431 otherwise). */
void fctl_agentd_http_readable(struct agent *a, struct conn *c);

/* --- agentd_drift.c: drift checks and repairs --- */

/* A drift check ms milliseconds from now (the debounce timer). */
void fctl_agentd_drift_schedule(struct agent *a, unsigned ms);
/* Checks for drift now (why names the trigger in the log), repairs when configured. */
void fctl_agentd_drift_check(struct agent *a, const char *why);
/* A writer (apply, rollback, a pull, a drift repair) ended: the applied version (status,
 * metrics) is read at once from the history's index (a line of a file, no profile parsed),
 * before the writer's answer goes out, so a status right after an apply says that apply's
 * version, not the last drift check's; and a drift check follows 200 ms later. */
void fctl_agentd_after_write(struct agent *a);

/* --- agentd_config.c: configuration and reload --- */

/* Makes cfg the running configuration (cfg is emptied): TLS context, policy, group,
 * host name, drift timer. 0, or a negative errno with err filled and nothing changed. */
int fctl_agentd_apply_config(struct agent *a, struct fctl_agent_config *cfg, char *err,
			     size_t errlen);
/* SIGHUP: loads and applies the configuration again, or keeps the running one. */
void fctl_agentd_reload(struct agent *a);
/* Tells systemd (sd_notify) the agent's state: "READY=1" once it listens and recovered,
 * "RELOADING=1" and "READY=1" around a reload, "STOPPING=1" on shutdown. A no-op
 * outside a Type=notify unit or in a build without libsystemd. */
void fctl_agentd_notify(const char *state);

/* --- agentd_pull.c: pull mode (pull_dir) --- */

/* Watches cfg.pull_dir when set (inotify, a debounce timer, both in the epoll) and takes
 * the version there now: 0, or a negative errno with err filled. */
int fctl_agentd_pull_start(struct agent *a, char *err, size_t errlen);
/* An epoll event: true when ptr was pull mode's (handled). */
bool fctl_agentd_pull_event(struct agent *a, void *ptr);
/* A reaped child: true when it was the apply of a pulled version (audited). */
bool fctl_agentd_pull_reaped(struct agent *a, pid_t pid, int status);
/* Teardown: stops its worker, closes its fds, removes its spool file. */
void fctl_agentd_pull_stop(struct agent *a);
/* agentd_pull_read.c: the pulled file of dir, read without following a symlink (but the
 * kubelet's "..data" folder link), into b; err says why not (a symlink is refused). */
int fctl_agentd_pull_read(const char *dir, const char *file, struct fctl_buf *b, char *err,
			  size_t errlen);
/* Spools the file's signatures (FILE.sig, FILE.NAME.sig, FILE.sig.d/ *.sig of dir, not
 * through symlinks) beside spool (spool.sig.d/) and checks b, the spooled bytes, against
 * the host's approval policy ($FCTL_APPROVALS_CONF, else /etc/fabricctl/approvals.conf):
 * 0 approved or no policy, -EACCES not approved (err: who signed, who is missing, the
 * allowed_signers file), another negative errno when it cannot be checked. */
int fctl_agentd_pull_approve(const char *dir, const char *file, const char *spool,
			     const struct fctl_buf *b, char *err, size_t errlen);

/* --- agentd_mka.c: supervision of the MKA ports' wpa_supplicants --- */

/* Every FCTL_AGENTD_MKA_CHECK_MS (a timerfd in the epoll) the agent checks the
 * wpa_supplicant of each MKA port of the last applied profile (fctl_mka_health) and
 * restarts a dead or hung one through a writing worker (root: it starts processes and
 * changes links; the agent itself never execs wpa_supplicant), with the backoff of
 * fctl/mka_super.h, one restart at a time, none while another writer runs. A port no
 * longer in the applied profile is forgotten, never restarted. Each restart is audited
 * (mka-restart, the port, the reason) and counted (fabricctl_mka_restarts_total). */
#define FCTL_AGENTD_MKA_CHECK_MS 2000u
/* The check interval while the applied profile gives this host no MKA port (or nothing
 * is applied): an agent without MKA does not wake every 2 s for nothing (10,000 idle
 * agents of the fan-out bench spent 1.3 cores on it). A writing request or a pulled
 * version that ends brings the next check forward (fctl_agentd_mka_soon); a local CLI
 * apply that adds MKA ports, which starts their wpa_supplicants itself, is supervised
 * from the next slow check on. */
#define FCTL_AGENTD_MKA_IDLE_MS 30000u

/* Starts the check timer: 0, or a negative errno with err filled. */
int fctl_agentd_mka_start(struct agent *a, char *err, size_t errlen);
/* An epoll event: true when ptr was the check timer's (handled). */
bool fctl_agentd_mka_event(struct agent *a, void *ptr);
/* A reaped child: true when it was a restart worker (counted, audited). */
bool fctl_agentd_mka_reaped(struct agent *a, pid_t pid, int status);
/* The applied profile may have changed (a writing request or a pulled version ended):
 * the next check in FCTL_AGENTD_MKA_CHECK_MS, whatever the interval was. */
void fctl_agentd_mka_soon(struct agent *a);
/* Teardown: stops a restart worker, closes the timer, frees the state. */
void fctl_agentd_mka_stop(struct agent *a);

#endif
