// SPDX-License-Identifier: MIT
/* The probe families of a scrape: the last run (STATE_DIR/probe/last) and each link's
 * last run (STATE_DIR/probe/links/LINK@NETDEV), both in the probe's key=value report
 * format (docs/probes.md, "Metrics"). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_int.h"

/* At most this many link reports are read in one scrape (a host has a few ports, each
 * with a few VLANs); a report over 1 MiB is not a probe's. */
#define MX_PROBE_MAX_LINKS 256
#define MX_PROBE_MAX_BYTES (1u << 20)

struct mx_report {
	struct fctl_buf f;
	char base[640]; /* host, link, peer (and netdev for a link's) as labels */
};

static const struct {
	const char *suffix, *help;
} per_test[] = {
	{ "test_pass", "1 when the test passed its SLO in the last run." },
	{ "latency_seconds",
	  "Latency percentiles (50, 99, 99.9; exact, nearest rank) of the last run." },
	{ "bandwidth_bytes_per_second", "Bandwidth of the last run." },
	{ "loss_packets", "Packets lost in the last run (both ends)." },
	{ "retransmissions", "Retransmissions in the last run (both ends)." },
};

static void result_samples(const char *family, const char *suffix, const char *base,
			   const char *line, struct fctl_buf *o)
{
	static const struct {
		const char *key, *pct;
	} lat[] = { { "latency_p50_seconds", "50" },
		    { "latency_p99_seconds", "99" },
		    { "latency_p999_seconds", "99.9" } };
	char set[800], test[32] = "", size[24] = "", v[64];

	if (!fctl_kv_word(line, "test", test, sizeof(test)) ||
	    !fctl_kv_word(line, "size_bytes", size, sizeof(size)))
		return;
	snprintf(set, sizeof(set), "%s", base);
	fctl_mx_label(set, sizeof(set), "test", test);
	fctl_mx_label(set, sizeof(set), "size_bytes", size);
	if (strcmp(suffix, "latency_seconds") == 0) {
		for (size_t i = 0; i < FCTL_ARRAY_SIZE(lat); i++) {
			char s2[860];

			if (!fctl_kv_word(line, lat[i].key, v, sizeof(v)))
				continue;
			snprintf(s2, sizeof(s2), "%s", set);
			fctl_mx_label(s2, sizeof(s2), "percentile", lat[i].pct);
			fctl_mx_sample(o, family, s2, strtod(v, NULL));
		}
		return;
	}
	if (fctl_kv_word(line, suffix, v, sizeof(v)))
		fctl_mx_sample(o, family, set, strtod(v, NULL));
}

/* Every family of PREFIX (fabricctl_probe or fabricctl_probe_link) from the n reports:
 * each family's head once, then its samples from every report. */
static void emit(const char *prefix, const struct mx_report *r, size_t n, struct fctl_buf *o)
{
	char fam[96], v[64];

	snprintf(fam, sizeof(fam), "%s_last_run_timestamp_seconds", prefix);
	fctl_mx_head(o, fam, "gauge", "Unix time the last probe run ended.");
	for (size_t i = 0; i < n; i++)
		if (fctl_kv_word(r[i].f.data, "time", v, sizeof(v)))
			fctl_mx_sample(o, fam, r[i].base, strtod(v, NULL));
	snprintf(fam, sizeof(fam), "%s_pass", prefix);
	fctl_mx_head(o, fam, "gauge",
		     "1 when the last probe run passed (exit 0), 0 when it failed its SLO or "
		     "could not run.");
	for (size_t i = 0; i < n; i++)
		fctl_mx_sample_u64(o, fam, r[i].base,
				   fctl_kv_word(r[i].f.data, "exit", v, sizeof(v)) &&
					   strcmp(v, "0") == 0);
	for (size_t k = 0; k < FCTL_ARRAY_SIZE(per_test); k++) {
		snprintf(fam, sizeof(fam), "%s_%s", prefix, per_test[k].suffix);
		fctl_mx_head(o, fam, "gauge", per_test[k].help);
		for (size_t i = 0; i < n; i++) {
			for (const char *p = strstr(r[i].f.data, "\nresult "); p;
			     p = strstr(p + 1, "\nresult ")) {
				char one[1024];
				size_t len = strcspn(p + 1, "\n");

				if (len >= sizeof(one))
					continue;
				memcpy(one, p + 1, len);
				one[len] = '\0';
				result_samples(fam, per_test[k].suffix, r[i].base, one, o);
			}
		}
	}
}

/* Reads one report; its labels from its first line ("-" is the probe's word for none). */
static bool report_load(const struct fctl_metrics_src *src, const char *path, bool per_link,
			struct mx_report *r)
{
	char v[256];

	memset(r, 0, sizeof(*r));
	if (fctl_file_read(path, &r->f) < 0 || !r->f.len || r->f.len > MX_PROBE_MAX_BYTES ||
	    strncmp(r->f.data, "fabricctl-probe-last ", 21) != 0) {
		fctl_buf_release(&r->f);
		return false;
	}
	fctl_mx_label(r->base, sizeof(r->base), "host", src->host);
	fctl_mx_label(r->base, sizeof(r->base), "link",
		      fctl_kv_word(r->f.data, "link", v, sizeof(v)) && strcmp(v, "-") ? v : "");
	fctl_mx_label(r->base, sizeof(r->base), "peer",
		      fctl_kv_word(r->f.data, "peer", v, sizeof(v)) && strcmp(v, "-") ? v : "");
	if (per_link)
		fctl_mx_label(r->base, sizeof(r->base), "netdev",
			      fctl_kv_word(r->f.data, "netdev", v, sizeof(v)) && strcmp(v, "-")
				      ? v
				      : "");
	return true;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The link reports, in name order (a scrape's output is stable). */
static size_t links_load(const struct fctl_metrics_src *src, const char *dir,
			 struct mx_report *r)
{
	char *names[MX_PROBE_MAX_LINKS];
	size_t n = 0, got = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < MX_PROBE_MAX_LINKS) {
		if (e->d_name[0] == '.' || !strchr(e->d_name, '@'))
			continue;
		if (!(names[n] = strdup(e->d_name)))
			break;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_name);
	for (size_t i = 0; i < n; i++) {
		char path[4400];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (report_load(src, path, true, &r[got]))
			got++;
		free(names[i]);
	}
	return got;
}

void fctl_mx_probe(const struct fctl_metrics_src *src, struct fctl_buf *o)
{
	struct mx_report last, *links;
	char path[4200], dir[4200];
	size_t n;

	fctl_probe_last_path(src->eo->state_dir, src->eo->netns, path, sizeof(path));
	if (report_load(src, path, false, &last)) {
		emit("fabricctl_probe", &last, 1, o);
		fctl_buf_release(&last.f);
	}
	/* STATE_DIR/probe/last -> STATE_DIR/probe/links */
	snprintf(dir, sizeof(dir), "%.*s/links", (int)(strlen(path) - strlen("/last")), path);
	links = calloc(MX_PROBE_MAX_LINKS, sizeof(*links));
	if (!links)
		return;
	n = links_load(src, dir, links);
	if (n)
		emit("fabricctl_probe_link", links, n, o);
	for (size_t i = 0; i < n; i++)
		fctl_buf_release(&links[i].f);
	free(links);
}
