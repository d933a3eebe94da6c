// SPDX-License-Identifier: MIT
/* Latency statistics: see fctl/stats.h and docs/probes.md. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/stats.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int fctl_stats_deltas(const uint64_t *post_ns, size_t n_posts, uint64_t *samples)
{
	if (n_posts < 2)
		return -EINVAL;
	for (size_t i = 0; i + 1 < n_posts; i++)
		samples[i] = post_ns[i + 1] >= post_ns[i] ? post_ns[i + 1] - post_ns[i] : 0;
	return (int)(n_posts - 1 > INT32_MAX ? INT32_MAX : n_posts - 1);
}

size_t fctl_stats_rank(size_t n, double q)
{
	double r = ceil(q * (double)n);

	if (r < 1)
		return 0;
	if (r > (double)n)
		return n - 1;
	return (size_t)r - 1;
}

unsigned fctl_stats_bucket(uint64_t ns)
{
	unsigned k = 0;

	while (ns > 1) {
		ns >>= 1;
		k++;
	}
	return k;
}

/* perftest's index ceil(q * m) into the sorted samples (m = n - 2 entries are used,
 * so the index reaches at most m, the second largest). */
static size_t perftest_index(size_t m, double q)
{
	return (size_t)ceil((double)m * q);
}

int fctl_stats_compute(uint64_t *samples, size_t n, unsigned factor,
		       struct fctl_stats_perftest *pt, struct fctl_stats_exact *ex)
{
	const double us = 1000.0 * factor; /* ns per microsecond of latency */
	size_t m;
	uint64_t median;
	double sum = 0, avg, var = 0;
	long double lsum = 0, lmean, lvar = 0;

	if (n < 3 || factor == 0)
		return -EINVAL;
	qsort(samples, n, sizeof(*samples), cmp_u64);

	/* perftest: drop the two largest, median as get_median() computes it (integer
	 * mean of the middle two when the count is even), mean over what is left, and
	 * a stdev whose deviations are cut to whole microseconds (int). */
	m = n - 2;
	median = (m - 1) % 2 ? (samples[m / 2] + samples[m / 2 - 1]) / 2 : samples[m / 2];
	for (size_t i = 0; i < m; i++)
		sum += (double)samples[i] / us;
	avg = sum / (double)m;
	for (size_t i = 0; i < m; i++) {
		int d = (int)(avg - (double)samples[i] / us);
		int p = (int)pow(d, 2);

		var += p;
	}
	pt->n_samples = n;
	pt->n_used = m;
	pt->t_min_us = (double)samples[0] / us;
	pt->t_max_us = (double)samples[m] / us;
	pt->t_typical_us = (double)median / us;
	pt->t_avg_us = avg;
	pt->t_stdev_us = sqrt(var / (double)m);
	pt->p99_us = (double)samples[perftest_index(m, 0.99)] / us;
	pt->p999_us = (double)samples[perftest_index(m, 0.999)] / us;

	/* exact: every sample, two-pass variance in long double */
	for (size_t i = 0; i < n; i++)
		lsum += samples[i];
	lmean = lsum / n;
	for (size_t i = 0; i < n; i++) {
		long double d = (long double)samples[i] - lmean;

		lvar += d * d;
	}
	ex->n = n;
	ex->min_us = (double)samples[0] / us;
	ex->max_us = (double)samples[n - 1] / us;
	ex->mean_us = (double)(lmean / us);
	ex->stdev_us = (double)(sqrtl(lvar / n) / us);
	ex->p50_us = (double)samples[fctl_stats_rank(n, 0.50)] / us;
	ex->p90_us = (double)samples[fctl_stats_rank(n, 0.90)] / us;
	ex->p99_us = (double)samples[fctl_stats_rank(n, 0.99)] / us;
	ex->p999_us = (double)samples[fctl_stats_rank(n, 0.999)] / us;
	ex->p9999_us = (double)samples[fctl_stats_rank(n, 0.9999)] / us;
	for (size_t k = 0; k < FCTL_STATS_HIST_BUCKETS; k++)
		ex->hist[k] = 0;
	for (size_t i = 0; i < n; i++)
		ex->hist[fctl_stats_bucket(samples[i] / factor)]++;
	return 0;
}

static const struct {
	const char *name;
	enum fctl_counter_class cls;
} counter_classes[] = {
	/* rxe (drivers/infiniband/sw/rxe/rxe_hw_counters.c) */
	{ "out_of_seq_request", FCTL_COUNTER_LOSS },	   /* responder: PSN gap */
	{ "rcvd_seq_err", FCTL_COUNTER_LOSS },		   /* requester: NAK sequence error */
	{ "retry_exceeded_err", FCTL_COUNTER_LOSS },	   /* retries ran out: packets kept vanishing */
	{ "duplicate_request", FCTL_COUNTER_RETRANS },	   /* responder saw a packet twice */
	{ "completer_retry_err", FCTL_COUNTER_RETRANS },   /* requester resent after a timeout */
	{ "rcvd_rnr_err", FCTL_COUNTER_RETRANS },	   /* RNR NAK received: resend later */
	{ "send_rnr_err", FCTL_COUNTER_RETRANS },	   /* RNR NAK sent */
	{ "retry_rnr_exceeded_err", FCTL_COUNTER_ERROR },
	{ "send_err", FCTL_COUNTER_ERROR },
	{ "link_downed", FCTL_COUNTER_ERROR },
	/* mlx5 (Documentation of the mlx5 hw counters) */
	{ "out_of_sequence", FCTL_COUNTER_LOSS },
	{ "packet_seq_err", FCTL_COUNTER_LOSS },
	{ "implied_nak_seq_err", FCTL_COUNTER_LOSS },
	{ "req_transport_retries_exceeded", FCTL_COUNTER_LOSS },
	{ "local_ack_timeout_err", FCTL_COUNTER_RETRANS },
	{ "rnr_nak_retry_err", FCTL_COUNTER_RETRANS },
	{ "roce_adp_retrans", FCTL_COUNTER_RETRANS },
	{ "roce_slow_restart", FCTL_COUNTER_RETRANS },
	{ "req_rnr_retries_exceeded", FCTL_COUNTER_ERROR },
	{ "resp_local_length_error", FCTL_COUNTER_ERROR },
	{ "resp_cqe_error", FCTL_COUNTER_ERROR },
	{ "req_cqe_error", FCTL_COUNTER_ERROR },
	{ "req_remote_invalid_request", FCTL_COUNTER_ERROR },
	{ "req_remote_access_errors", FCTL_COUNTER_ERROR },
	{ "resp_remote_access_errors", FCTL_COUNTER_ERROR },
	{ "rx_icrc_encapsulated", FCTL_COUNTER_ERROR },
};

enum fctl_counter_class fctl_counter_classify(const char *name)
{
	for (size_t i = 0; i < sizeof(counter_classes) / sizeof(counter_classes[0]); i++)
		if (strcmp(counter_classes[i].name, name) == 0)
			return counter_classes[i].cls;
	return FCTL_COUNTER_INFO;
}

const char *fctl_counter_class_name(enum fctl_counter_class c)
{
	switch (c) {
	case FCTL_COUNTER_LOSS:
		return "loss";
	case FCTL_COUNTER_RETRANS:
		return "retransmission";
	case FCTL_COUNTER_ERROR:
		return "error";
	case FCTL_COUNTER_INFO:
		break;
	}
	return "info";
}
