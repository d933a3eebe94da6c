/* SPDX-License-Identifier: MIT */
/*
 * Latency statistics, dependency-free: perftest-compatible figures (its sample
 * definition, trimming, median and percentile index, stdev truncation included)
 * side by side with exact, untrimmed ones and a log2 histogram. docs/probes.md
 * states every definition.
 *
 * Samples are nanoseconds. A latency figure is a sample divided by the
 * round-trip factor: 2 when a sample is a round trip that stands for two
 * one-way trips (send and write ping-pong), 1 when it is the latency itself
 * (RDMA read).
 */
#ifndef FCTL_STATS_H
#define FCTL_STATS_H

#include <stddef.h>
#include <stdint.h>

#define FCTL_STATS_HIST_BUCKETS 64 /* bucket k: [2^k, 2^(k+1)) ns; bucket 0 also holds 0 */

/* perftest's report (print_report_lat), in microseconds. */
struct fctl_stats_perftest {
	size_t n_samples; /* before trimming */
	size_t n_used;	  /* n_samples - 2: the two largest are dropped */
	double t_min_us;
	double t_max_us; /* the second largest sample */
	double t_typical_us;
	double t_avg_us;
	double t_stdev_us; /* perftest's: each deviation truncated to a whole microsecond */
	double p99_us;	   /* sorted[ceil(0.99 * n_used)] */
	double p999_us;	   /* sorted[ceil(0.999 * n_used)] */
};

/* Exact figures over every sample, in microseconds. */
struct fctl_stats_exact {
	size_t n;
	double min_us;
	double max_us;
	double mean_us;
	double stdev_us; /* population standard deviation, full precision */
	double p50_us;	 /* nearest rank: sorted[ceil(q * n) - 1] */
	double p90_us;
	double p99_us;
	double p999_us;
	double p9999_us;
	uint64_t hist[FCTL_STATS_HIST_BUCKETS]; /* of the latency (sample / factor) in ns */
};

/* perftest's latency samples: the gaps between n_posts consecutive post times
 * (ns, non-decreasing), written to samples[0 .. n_posts-2]. */
int fctl_stats_deltas(const uint64_t *post_ns, size_t n_posts, uint64_t *samples);

/* Sorts samples in place, then fills both reports. factor: 1 or 2 (see above).
 * -EINVAL when n < 3 (perftest needs three samples to drop two) or factor is 0. */
int fctl_stats_compute(uint64_t *samples, size_t n, unsigned factor,
		       struct fctl_stats_perftest *pt, struct fctl_stats_exact *ex);

/* The index of quantile q in a sorted array of n, nearest rank (n >= 1). */
size_t fctl_stats_rank(size_t n, double q);
/* The histogram bucket of a value in ns. */
unsigned fctl_stats_bucket(uint64_t ns);

/*
 * RDMA counters (rxe and mlx5 hw_counters by name) in the classes the loss
 * proof needs. LOSS: a packet sequence gap was seen (a packet never arrived);
 * RETRANS: a packet was sent again (timer, NAK or RNR), which on a lossless link
 * a too-short QP timeout also causes; ERROR: a QP gave up or a send failed;
 * INFO: everything else (packet counts, congestion notifications).
 */
enum fctl_counter_class {
	FCTL_COUNTER_INFO,
	FCTL_COUNTER_LOSS,
	FCTL_COUNTER_RETRANS,
	FCTL_COUNTER_ERROR,
};

enum fctl_counter_class fctl_counter_classify(const char *name);
const char *fctl_counter_class_name(enum fctl_counter_class c);

#endif
