/* SPDX-License-Identifier: MIT */
/*
 * The fabric probe (docs/probes.md, "The whole fabric"): every protected VLAN of every
 * link of a profile (or of the links named) probed through the agents of its two ends,
 * end a serving (probe-serve) and end b measuring (probe-run), in rounds in which no
 * port carries two probes; the agents' answers parsed into one result per link.
 *
 * Nothing here prints. The plan and the schedule are pure; fctl_probe_fabric_run makes
 * the requests (fctl_fabric_call, two threads a probe) and waits for all of them.
 */
#ifndef FCTL_FABRIC_PROBE_H
#define FCTL_FABRIC_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/fabric.h"
#include "fctl/profile.h"
#include "fctl/util.h"

#define FCTL_PROBE_BASE_PORT 18600 /* control port of probe i: base + i */
#define FCTL_PROBE_MAX_TESTS 6
#define FCTL_PROBE_MAX_REASONS 8

/* One probe: one protected VLAN of one link. [0] is end a (serves), [1] end b (runs). */
struct fctl_probe_item {
	char link[128];
	uint16_t vlan;
	char host[2][128];
	char port[2][64];
	char ifname[2][24]; /* the interface carrying IP: the SecY, or the VLAN in clear */
	char addr[2][64];   /* its IPv4 address, without the prefix length */
	unsigned mtu;       /* the VLAN's MTU (the SecY's), as the profile says */
	bool protected_;    /* the VLAN has a MACsec policy */
	unsigned round;     /* set by fctl_probe_schedule, 0-based */
	unsigned ctl_port;  /* the probe's control port */
};

/* The probes of profile p (validated): for every link (or only those in names[0..n_names),
 * each of which must exist), every VLAN with an IPv4 address on both ends. A VLAN without
 * MACsec is refused (-EPERM) when require_macsec: the fabric probe proves protected
 * traffic. *out malloc'd. -ENOENT unknown link, -EINVAL a VLAN without addresses; err
 * says which. */
int fctl_probe_plan(const struct fctl_profile *p, const char *const *names, size_t n_names,
		    bool require_macsec, struct fctl_probe_item **out, size_t *n, char *err,
		    size_t errlen);

/* The item of link `link`, VLAN `vlan` (the agent's side of a request). */
int fctl_probe_item_find(const struct fctl_profile *p, const char *link, unsigned vlan,
			 struct fctl_probe_item *out, char *err, size_t errlen);

/* Greedy edge colouring: each item the first round in which neither of its ports
 * (host, port) carries a probe yet, in order. Returns the number of rounds. */
unsigned fctl_probe_schedule(struct fctl_probe_item *v, size_t n);

/* What one end's agent said, parsed. */
struct fctl_probe_test {
	char test[16];
	uint32_t size;
	bool ran, pass;
	bool has_lat, has_bw;
	double p50_us, p99_us, p999_us, gbps;
	uint64_t loss[2], retrans[2], encrypted[2], macsec_bad[2]; /* [0] client, [1] server */
	bool macsec[2];
};

struct fctl_probe_pmtu {
	bool checked, ok;
	unsigned mtu, largest;
	char ifname[24];
	char error[160];
};

enum fctl_probe_verdict { FCTL_PROBE_PASS, FCTL_PROBE_FAIL, FCTL_PROBE_ERROR };

struct fctl_probe_result {
	const struct fctl_probe_item *item;
	struct fctl_fabric_result serve, run; /* the two requests' answers */
	struct fctl_probe_test tests[FCTL_PROBE_MAX_TESTS];
	size_t n_tests;
	struct fctl_probe_pmtu pmtu[2];       /* [0] from end a (server), [1] from end b */
	enum fctl_probe_verdict verdict;
	char reasons[FCTL_PROBE_MAX_REASONS][400]; /* an agent's refusal names two GIDs */
	size_t n_reasons;
	double wall_s;	/* from its round's start to the later of its two answers */
};

struct fctl_probe_run_opts {
	const struct fctl_fabric_opts *fo; /* tls, profile bytes; timeout_s: per link */
	const struct fctl_inventory *inv;
	const char *spec_extra;            /* "tests=... iters=..." appended to each spec */
	unsigned deadline_s;               /* the whole run; 0: none */
	/* after each link's result, from the thread that made it (under a lock); NULL: none */
	void (*done)(void *ctx, const struct fctl_probe_result *r);
	void *ctx;
};

/* Runs the rounds of v[0..n) (scheduled), results into res[0..n) (zeroed by the caller;
 * release with fctl_probe_results_release). Every link gets a verdict and its reasons: a
 * host that does not answer within the link's deadline fails its links by name. Returns
 * 0 or -ENOMEM. */
int fctl_probe_fabric_run(const struct fctl_probe_run_opts *o, const struct fctl_probe_item *v,
			  size_t n, struct fctl_probe_result *res);
void fctl_probe_results_release(struct fctl_probe_result *res, size_t n);

/* Parses the agents' answers of r (serve and run) into its tests, path MTU and verdict
 * (exposed for the unit test). */
void fctl_probe_judge(struct fctl_probe_result *r, unsigned link_deadline_s);

/* The latency matrix (docs/probes.md, "The latency matrix"): the hosts that end a probed
 * link, in the order they first appear (end a, then end b, link by link), and for each
 * pair the p50 or p99 (us) of the first latency test of the links between them; of
 * several links (or VLANs) between a pair, the largest figure. Symmetric. */
enum fctl_probe_cell { FCTL_PROBE_CELL_NONE, FCTL_PROBE_CELL_NOFIG, FCTL_PROBE_CELL_US };

struct fctl_probe_matrix {
	size_t n_hosts;
	const char **hosts;	    /* into the results' items */
	enum fctl_probe_cell *kind; /* n_hosts * n_hosts: no link, a link without figure, us */
	double *us;
	bool p99;		    /* the figure is the p99 (else the p50) */
};

/* Builds m (zeroed by the caller) from res[0..n): 0 or -ENOMEM (m untouched). */
int fctl_probe_matrix_build(const struct fctl_probe_result *res, size_t n, bool p99,
			    struct fctl_probe_matrix *m);
/* The matrix as text into b: a header line, then one row a host; '-' no link, '?' a link
 * with no latency figure (it could not run, or ran no latency test). */
void fctl_probe_matrix_text(const struct fctl_probe_matrix *m, struct fctl_buf *b);
/* As JSON into b: {"percentile":"p99","hosts":[...],"us":[[null,1.5,...],...]}; null where
 * no figure, and "links" with true where a link joins the pair. */
void fctl_probe_matrix_json(const struct fctl_probe_matrix *m, struct fctl_buf *b);
void fctl_probe_matrix_release(struct fctl_probe_matrix *m);

#endif
