/* SPDX-License-Identifier: MIT */
/*
 * Fabric-wide requests: one agent request to every host of an inventory through a
 * bounded pool of threads, and the fabric apply built on it (plan everywhere, apply
 * everywhere, roll back the hosts already changed when one fails).
 *
 * Nothing here prints or logs. Each host's answer lands in its struct
 * fctl_fabric_result; the verdict over all hosts in a struct fctl_fabric_outcome;
 * progress, while a phase runs, goes to the caller's callback.
 *
 * Concurrency: a phase starts min(parallel, hosts in the phase) threads, each taking
 * the next host not yet taken, so at most `parallel` requests are in flight at once,
 * each on its own connection (fctl_agent_connect, fctl_agent_call). The threads are
 * joined before the phase ends and before any function here returns; when no thread
 * can be created, the calling thread runs the phase alone. The TLS context is shared
 * by the threads (OpenSSL allows that). The caller ignores SIGPIPE: a peer that
 * closes mid-write is an error for that host, not the end of the process.
 *
 * Ownership: the caller owns the array of results and the hosts they point to; it
 * sets .host in each (everything else zero) and frees what the calls put in them
 * with fctl_fabric_results_release. Results stay in the caller's order, whatever the
 * order the hosts answered in.
 */
#ifndef FCTL_FABRIC_H
#define FCTL_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/agent.h"
#include "fctl/inventory.h"

/* Hosts at once: at most 1024. The default (parallel 0) scales with the phase:
 * 64, or one per 16 hosts of the phase above 1,024 hosts (625 for 10,000), at most
 * FCTL_FABRIC_MAX_PARALLEL. A host that accepts a connection but never answers holds
 * its slot until the deadline; with a slot per 16 hosts, up to ~6% of a fleet can hang
 * and the others still go through at full speed, so the phase ends within its
 * normal time plus one deadline. */
#define FCTL_FABRIC_MAX_PARALLEL 1024
#define FCTL_FABRIC_DEFAULT_PARALLEL 64
#define FCTL_FABRIC_HOSTS_PER_SLOT 16
/* The deadline of each host: connect, TLS handshake, request and the whole answer. */
#define FCTL_FABRIC_DEFAULT_TIMEOUT 10
/* The exit a host is given when its agent did not answer (status < 0): the usage,
 * I/O or environment exit code of fabricctl. */
#define FCTL_FABRIC_EXIT_NO_ANSWER 2

/* One host's answer to the last request it was sent. */
struct fctl_fabric_result {
	const struct fctl_inventory_host *host; /* set by the caller, borrowed */
	uint8_t type;     /* FCTL_MSG_* of the phase this result belongs to; 0 = the host
			   * took no part in it (see fctl_fabric_apply) */
	uint64_t to;      /* FCTL_MSG_ROLLBACK: the version asked for */
	/* 0: the agent answered, exit/output/error are its own. Negative errno: no
	 * answer, exit is FCTL_FABRIC_EXIT_NO_ANSWER, output NULL and error says why
	 * (-EDESTADDRREQ: the host has no agent endpoint, error is ""; -ECONNRESET or
	 * an error naming "closed": the agent hung up, most often a refused certificate) */
	int status;
	int exit;         /* the exit code of the command on the host */
	char *output;     /* its stdout, NUL-terminated; NULL when there is none */
	char *error;      /* its stderr, or why there was no answer */
	/* fctl_fabric_apply only */
	bool has_prev;    /* the host had a profile applied before this run ... */
	uint64_t prev;    /* ... of this version (its status "applied_version") */
	bool changed;     /* the apply phase changed the host ("result":"applied"), or may
			   * have: its answer did not come before the deadline (-ETIMEDOUT) */
	size_t profile_sent; /* plan, diff, apply: the profile bytes this host was sent
			      * (less than the profile's with opts.profile_for) */
	const char *probe;   /* probe-serve, probe-run: the spec sent (FCTL_TLV_PROBE), set
			      * by the caller, borrowed */
	bool tls_resumed;    /* its TLS handshake resumed a cached session */
};

enum fctl_fabric_event {
	/* A host answered (or could not be reached) in phase `phase`: `done` of `total`
	 * hosts of that phase have now, r is complete. */
	FCTL_FABRIC_HOST_DONE,
	/* fctl_fabric_apply, before the rollback phase: r was changed by the apply phase
	 * but had no profile applied before, so it cannot be rolled back through its
	 * history: it keeps the new profile (and the verdict is rollback-incomplete). */
	FCTL_FABRIC_NOT_ROLLED_BACK,
};

struct fctl_fabric_progress {
	enum fctl_fabric_event event;
	uint8_t phase;    /* FCTL_MSG_* of the phase: status, plan, apply, rollback, ... */
	size_t done, total;
	const struct fctl_fabric_result *r;
};

struct fctl_fabric_opts {
	struct ssl_ctx_st *tls;   /* client context for HOST:PORT endpoints; NULL: none */
	unsigned timeout_s;       /* per host and phase, one deadline for its connect,
				   * handshake and answer; 0 = FCTL_FABRIC_DEFAULT_TIMEOUT */
	unsigned parallel;        /* hosts at once, 1..FCTL_FABRIC_MAX_PARALLEL; 0 = scaled
				   * (fctl_fabric_default_parallel) */
	uint32_t options;         /* FCTL_OPT_* of the request (fctl_fabric_apply: only
				   * FCTL_OPT_DRY_RUN counts, its phases ask for JSON) */
	uint64_t to_version;      /* FCTL_MSG_ROLLBACK of fctl_fabric_call/_run */
	/* plan, apply, diff: the profile's bytes and the name the agents are given */
	const unsigned char *profile;
	size_t profile_len;
	const char *profile_name;
	/* apply: the profile's signature files as a FCTL_TLV_SIGS value (fctl_proto_sig_put),
	 * sent with each apply request; NULL/0: none */
	const unsigned char *sigs;
	size_t sigs_len;
	/* plan and diff, which change and record nothing: the bytes to send host h
	 * instead of the whole profile (its slice, fctl/profile_slice.h), malloc'd, their
	 * length in *len; NULL sends the whole profile. NULL callback: every host gets the
	 * whole profile. Called from the pool's threads, several at once. An apply always
	 * sends the whole profile, and fctl_fabric_apply ignores the callback in its plan
	 * phase too: that plan checks what the apply will send. */
	unsigned char *(*profile_for)(void *ctx, const struct fctl_inventory_host *h, size_t *len);
	void *profile_for_ctx;
	bool partial;             /* fctl_fabric_apply: keep what applied when a host fails */
	/* fctl_fabric_call of FCTL_MSG_APPLY: a confirmed apply, the deadline this many
	 * seconds after it, owned on the host (FCTL_TLV_CONFIRM); 0: none. fctl_fabric_apply
	 * refuses it (-EINVAL): its own rollback would be refused while one is pending. */
	uint32_t confirm_seconds;
	/* Called for each event, NULL = none. HOST_DONE comes from the pool's threads,
	 * one call at a time (under the pool's lock, in the order the hosts answered):
	 * keep it short, and call nothing of this module from it. NOT_ROLLED_BACK
	 * comes from the thread that called fctl_fabric_apply. */
	void (*progress)(void *ctx, const struct fctl_fabric_progress *ev);
	void *progress_ctx;
};

enum fctl_fabric_verdict {
	FCTL_FABRIC_OK,            /* fctl_fabric_run: every host exited 0 */
	FCTL_FABRIC_FAILED,        /* fctl_fabric_run: a host did not */
	FCTL_FABRIC_PLANNED,       /* apply --dry-run: every status and plan succeeded */
	FCTL_FABRIC_PLAN_FAILED,   /* a status or a plan failed: nothing was applied */
	FCTL_FABRIC_APPLIED,       /* every host applied */
	FCTL_FABRIC_PARTIAL,       /* some failed, opts.partial: the others keep the profile */
	FCTL_FABRIC_ROLLED_BACK,   /* some failed; every host changed was rolled back */
	FCTL_FABRIC_ROLLBACK_INCOMPLETE, /* some failed; a host changed is not back */
};

struct fctl_fabric_outcome {
	enum fctl_fabric_verdict verdict;
	/* fctl_fabric_run: the highest exit of any host. fctl_fabric_apply: the highest
	 * exit of a failed status or plan (PLAN_FAILED), else 0. */
	int worst;
};

/* The number of hosts at once when opts.parallel is 0, for a phase of `hosts` hosts. */
unsigned fctl_fabric_default_parallel(size_t hosts);

/* "ok", "failed", "planned", "plan-failed", "applied", "partial", "rolled-back",
 * "rollback-incomplete". */
const char *fctl_fabric_verdict_name(enum fctl_fabric_verdict v);

/* Sends request `type` (with opts' options, to_version and profile as the type
 * takes them) to r->host on a connection of its own, in the calling thread, and
 * replaces what r held with the answer. When the host's name differs from its
 * endpoint (an inventory host) the request names it, so that the agent acts as that
 * profile host. Returns 0 (the answer, or why there is none, is in r) or -EINVAL. */
int fctl_fabric_call(const struct fctl_fabric_opts *o, uint8_t type,
		     struct fctl_fabric_result *r);

/* One phase: request `type` to every host of v[0..n) through the pool; sets each
 * v[i].type to `type`. out: FCTL_FABRIC_OK or _FAILED, and the highest exit.
 * Returns 0, or -EINVAL (out untouched). */
int fctl_fabric_run(const struct fctl_fabric_opts *o, uint8_t type, struct fctl_fabric_result *v,
		    size_t n, struct fctl_fabric_outcome *out);

/*
 * The fabric apply of opts' profile to every host of v[0..n):
 *  1. status everywhere, for the version each host has now (has_prev, prev); when
 *     every host answered 0, a plan everywhere. Any non-zero exit: PLAN_FAILED and
 *     no apply is sent anywhere; with FCTL_OPT_DRY_RUN, PLANNED stops here too.
 *     Results: the plan's (the status's when a status failed), type PLAN.
 *  2. apply everywhere. Every host 0: APPLIED. Otherwise, with opts.partial:
 *     PARTIAL, no rollback. Results: the apply's, type APPLY.
 *  3. otherwise, rollback: each host that reported "applied" in phase 2, or whose
 *     answer timed out (it may have applied; changed), and only those, is sent a
 *     rollback to its prev (a no-op where the apply did not happen); a changed host without prev
 *     gets a NOT_ROLLED_BACK event instead. Hosts that failed, or applied nothing
 *     new, are left as they are. ROLLED_BACK when every changed host was rolled
 *     back with exit 0, else ROLLBACK_INCOMPLETE. Results: the rollback's for the
 *     hosts rolled back (type ROLLBACK), the apply's for the others (type 0).
 * Each phase waits for every host of the phase before the next starts.
 * Returns 0 (verdict in out), or -EINVAL (out untouched).
 */
int fctl_fabric_apply(const struct fctl_fabric_opts *o, struct fctl_fabric_result *v, size_t n,
		      struct fctl_fabric_outcome *out);

/* Frees what the calls put in v[0..n) (output, error) and zeroes all but .host.
 * Accepts NULL. */
void fctl_fabric_results_release(struct fctl_fabric_result *v, size_t n);

/* An agent's output as a value of the fabric JSON, appended to o: a JSON object or array
 * the agent printed (trailing newlines dropped) when it is one complete, valid JSON value
 * (RFC 8259, UTF-8, at most 64 levels deep); otherwise, and for text, the output as a
 * JSON string (invalid UTF-8 bytes become U+FFFD); NULL output is null. Whatever an
 * agent sends, o stays one valid document. Returns 0 or -ENOMEM. */
int fctl_fabric_json_output(struct fctl_buf *o, const char *output);
/* Whether s[0..n) is exactly one JSON value, optionally surrounded by whitespace. */
bool fctl_fabric_json_valid(const char *s, size_t n);

#endif
