/* SPDX-License-Identifier: MIT */
/*
 * fabricctl-probe: the program's shared pieces. fctl_probecore (report.c,
 * ctl.c) needs no RDMA library: the unit tests link it for verdicts, JSON,
 * JUnit and the control protocol's wire forms.
 */
#ifndef FCTL_PROBE_H
#define FCTL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/nl.h"
#include "fctl/stats.h"
#include "fctl/util.h"

#define PROBE_PROTO 1
#define PROBE_MAX_CTR 96
#define PROBE_MAX_REASONS 12

enum { PROBE_EXIT_PASS = 0, PROBE_EXIT_FAIL = 1, PROBE_EXIT_ERROR = 2 };

/* OutPktsEncrypted of a SecY over a run (counters read before and after): summed over its
 * transmit SAs, an SA installed during the run counted from zero, so that a change of the
 * encoding SA (a static key rotation, or an MKA rekey: MKA's SAKs move the AN) neither
 * hides nor double-counts packets; the TX SC's counter when no transmit SA is left. */
uint64_t probe_encrypted_delta(const struct fctl_macsec_stats *before,
			       const struct fctl_macsec_stats *after);

/* The same set of tests as enum fctl_rdma_test, by name (report.c needs no fctl_rdma). */
extern const char *const probe_test_names[6];
bool probe_test_is_lat(const char *test);

/* MACsec evidence on one end: configuration at the start, counter deltas over the run. */
struct probe_macsec {
	bool checked;	   /* a MACsec device was looked at */
	char ifname[16];
	bool is_macsec;	   /* the RDMA device's network device is a MACsec SecY */
	bool up;
	bool encrypt;
	bool tx_sa_active; /* the encoding SA exists and is active */
	uint64_t out_pkts_encrypted; /* delta over every TX SA (probe_encrypted_delta) */
	uint64_t in_pkts_not_valid;  /* deltas over every RX SC */
	uint64_t in_pkts_invalid;
	uint64_t in_pkts_no_sci;
	uint64_t in_pkts_unknown_sci;
	uint64_t in_pkts_late;
	char err[160]; /* why it could not be read */
};

struct probe_ctr {
	char name[48];
	uint64_t delta;
	enum fctl_counter_class cls;
};

/* One end of the link as the probe saw it. */
struct probe_end {
	char role[8]; /* "client" or "server" */
	char host[64];
	char dev[64];
	char netdev[16];
	bool counters_ok;
	char counters_err[160];
	struct probe_ctr ctr[PROBE_MAX_CTR];
	size_t n_ctr;
	uint64_t loss, retrans, errors; /* sums of the deltas by class */
	uint64_t iters;			/* messages the end handled */
	uint64_t bytes, elapsed_ns;	/* bidirectional bandwidth: the end's own loop */
	uint64_t cpu_ns;
	struct probe_macsec ms;
};

void probe_end_add_counter(struct probe_end *e, const char *name, uint64_t delta);

/* SLO thresholds (from a profile's slo section). */
struct probe_slo {
	bool present;
	bool has_p99, has_p999, has_bw, has_max_retrans;
	double p99_us, p999_us, bw_gbps;
	uint64_t max_loss, max_retrans;
	bool require_macsec;
};

struct probe_result {
	char test[16];
	uint32_t size;
	uint64_t iters;
	bool ran;	     /* the measurement completed */
	char error[240];     /* why not */
	int wc_status;	     /* a bad completion's status, 0 if none */
	char wc_status_str[64];
	bool has_lat;
	struct fctl_stats_perftest pt;
	struct fctl_stats_exact ex;
	double gbps;	     /* bidirectional: the sum of both ends' loops */
	double msg_rate_mpps;
	bool bidirectional;
	double gbps_client, gbps_server; /* bidirectional: each end's own loop */
	uint64_t elapsed_ns;
	struct probe_end end[2]; /* [0] this end (client), [1] the peer (server) */
	bool has_peer;
	bool pass;
	char reasons[PROBE_MAX_REASONS][200];
	size_t n_reasons;
};

struct probe_report {
	char peer[128];
	char link[64];	   /* "" without a profile */
	char netdev[32];   /* --netdev, "" without it */
	char profile[256]; /* file, "" without one */
	char profile_name[128];
	uint64_t profile_version;
	struct probe_slo slo;
	struct probe_result *res;
	size_t n_res;
	bool pass;
};

/* Verdict of one result against the SLO; fills pass and reasons. */
void probe_verdict(const struct probe_slo *slo, struct probe_result *r);
/* Every result's verdict, then the report's. */
void probe_report_verdict(struct probe_report *rep);

int probe_report_json(const struct probe_report *rep, struct fctl_buf *out);
int probe_report_junit(const struct probe_report *rep, struct fctl_buf *out);
int probe_report_text(const struct probe_report *rep, struct fctl_buf *out);
/* The lines the fabric probe's agents return (report_lines.c, docs/probes.md). */
int probe_report_lines(const struct probe_report *rep, struct fctl_buf *out);

/* The last run for monitoring (metrics.c, docs/probes.md "Metrics"): the report the
 * agent reads from STATE_DIR/probe/last, and the node_exporter textfile. exit_code is
 * the run's exit code, now the unix time it ended. */
int probe_report_last(const struct probe_report *rep, int exit_code, double now,
		      struct fctl_buf *out);
int probe_report_textfile(const struct probe_report *rep, int exit_code, double now,
			  struct fctl_buf *out);
/* Replaces path with b all or nothing (a temporary file in the same directory, then a
 * rename); mode 0644. 0 or a negative errno. */
int probe_write_atomic(const char *path, const struct fctl_buf *b);

/* The server's end travels to the client as lines: "END ..."/"CTR name delta"/"MS ...". */
int probe_end_to_wire(const struct probe_end *e, struct fctl_buf *out);
/* Parses one line into e; returns 1 when the line was the last ("FIN"), 0 for
 * more to come, -EINVAL for a line it does not know. */
int probe_end_from_wire(const char *line, struct probe_end *e);

/* Control connection (ctl.c): line-based, every read bounded by a timeout. */
int ctl_connect(const char *host, const char *port, int timeout_ms, char *err, size_t errlen);
int ctl_listen(const char *port, char *err, size_t errlen);
int ctl_send(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ctl_send_buf(int fd, const struct fctl_buf *b);
/* Reads one line (without the newline) into buf; -ETIMEDOUT, -ECONNRESET (closed),
 * -EMSGSIZE (too long). */
int ctl_recv_line(int fd, char *buf, size_t len, int timeout_ms);
/* The value of key=VALUE in a line of space-separated words, copied into out. */
bool ctl_field_u64(const char *line, const char *key, uint64_t *out);

#endif
