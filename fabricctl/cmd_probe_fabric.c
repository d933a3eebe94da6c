// SPDX-License-Identifier: MIT
/*
 * fabricctl probe --fabric PROFILE [--link NAME...]: every protected VLAN of every link
 * probed through the agents of its two ends, in rounds in which no port carries two
 * probes (libfctl's fctl/fabric_probe.h); prints a table per link, the fabric verdict,
 * --json, --junit FILE. Exit 0 every link passed, 1 a link failed its SLO or path MTU,
 * 2 a link could not be probed (an agent did not answer, no RDMA device, ...) or usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "fctl/fabric_probe.h"
#include "fctl/inventory.h"
#include "fctl/tls.h"

#define MAX_LINKS 64

struct pf {
	const char *profile_file, *inventory, *cert, *key, *ca, *junit, *audit_log, *change;
	const char *links[MAX_LINKS];
	size_t n_links;
	bool json, quiet, allow_clear, matrix_p50;
	unsigned link_s, deadline_s;
	char extra[200];
};

static const struct option pf_opts[] = {
	{ "fabric", no_argument, NULL, 'F' },	      { "link", required_argument, NULL, 'l' },
	{ "profile", required_argument, NULL, 'P' },  { "inventory", required_argument, NULL, 'I' },
	{ "cert", required_argument, NULL, 'C' },     { "key", required_argument, NULL, 'K' },
	{ "ca", required_argument, NULL, 'A' },	      { "json", no_argument, NULL, 'j' },
	{ "junit", required_argument, NULL, 'J' },    { "timeout", required_argument, NULL, 'o' },
	{ "deadline", required_argument, NULL, 'D' }, { "test", required_argument, NULL, 't' },
	{ "iters", required_argument, NULL, 'i' },    { "size", required_argument, NULL, 's' },
	{ "qp-timeout", required_argument, NULL, 'Q' },
	{ "allow-cleartext", no_argument, NULL, 'c' }, { "quiet", no_argument, NULL, 'q' },
	{ "audit-log", required_argument, NULL, 'L' }, { "change", required_argument, NULL, 'G' },
	{ "matrix", required_argument, NULL, 'M' },
	{ "help", no_argument, NULL, 'h' },	      { NULL, 0, NULL, 0 },
};

/* the words of the spec the agents pass on to the probe, checked here first */
static int add_extra(struct pf *f, const char *key, const char *v)
{
	size_t n = strlen(f->extra);

	if (!*v || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_,") != strlen(v) ||
	    n + strlen(key) + strlen(v) + 3 >= sizeof(f->extra)) {
		cli_err("probe: bad --%s '%s'", key, v);
		return -EINVAL;
	}
	snprintf(f->extra + n, sizeof(f->extra) - n, "%s%s=%s", n ? " " : "", key, v);
	return 0;
}

static int duration(const char *opt, const char *v, unsigned *out)
{
	uint64_t s;

	if (fctl_parse_duration(v, &s) < 0 || s < 5 || s > 3600) {
		cli_err("probe: %s expects 5s..1h", opt);
		return -EINVAL;
	}
	*out = (unsigned)s;
	return 0;
}

static int pf_parse(struct pf *f, int argc, char **argv)
{
	int ch;

	optind = 1;
	while ((ch = cli_getopt("probe", argc, argv, "qh", pf_opts, NULL)) != -1) {
		int r = 0;

		switch (ch) {
		case 'F': break;
		case 'l':
			if (f->n_links == MAX_LINKS) {
				cli_err("probe: at most %d --link", MAX_LINKS);
				return EXIT_USAGE;
			}
			f->links[f->n_links++] = optarg;
			break;
		case 'P': f->profile_file = optarg; break;
		case 'I': f->inventory = optarg; break;
		case 'C': f->cert = optarg; break;
		case 'K': f->key = optarg; break;
		case 'A': f->ca = optarg; break;
		case 'j': f->json = true; break;
		case 'J': f->junit = optarg; break;
		case 'o': r = duration("--timeout", optarg, &f->link_s); break;
		case 'D': r = duration("--deadline", optarg, &f->deadline_s); break;
		case 't': r = add_extra(f, "tests", optarg); break;
		case 'i': r = add_extra(f, "iters", optarg); break;
		case 's': r = add_extra(f, "size", optarg); break;
		case 'Q': r = add_extra(f, "qp_timeout", optarg); break;
		case 'c': f->allow_clear = true; break;
		case 'L': f->audit_log = optarg; break;
		case 'G': f->change = optarg; break;
		case 'q': f->quiet = true; break;
		case 'M':
			if (strcmp(optarg, "p50") && strcmp(optarg, "p99")) {
				cli_err("probe: --matrix expects p50 or p99");
				return EXIT_USAGE;
			}
			f->matrix_p50 = !strcmp(optarg, "p50");
			break;
		case 'h': cli_usage_cmd("probe"); return EXIT_OK;
		default: return EXIT_USAGE;
		}
		if (r < 0)
			return EXIT_USAGE;
	}
	if (optind < argc) {
		if (f->profile_file || optind + 1 != argc) {
			cli_err("probe: expected one PROFILE");
			return EXIT_USAGE;
		}
		f->profile_file = argv[optind];
	}
	if (!f->profile_file) {
		cli_err("probe: --fabric needs a PROFILE");
		return EXIT_USAGE;
	}
	f->cert = f->cert ? f->cert : getenv("FCTL_CERT");
	f->key = f->key ? f->key : getenv("FCTL_KEY");
	f->ca = f->ca ? f->ca : getenv("FCTL_CA");
	f->change = f->change ? f->change : getenv("FCTL_CHANGE_ID");
	return -1;
}

static const char *verdict_name(enum fctl_probe_verdict v)
{
	return v == FCTL_PROBE_PASS ? "pass" : v == FCTL_PROBE_FAIL ? "fail" : "error";
}

static void num(struct fctl_buf *b, bool has, double v, int prec)
{
	if (has)
		fctl_buf_printf(b, " %9.*f", prec, v);
	else
		fctl_buf_printf(b, " %9s", "-");
}

/* One row per test (a = end a, the server; the tests' [1]); reasons under it. */
static void text_link(struct fctl_buf *b, const struct fctl_probe_result *r)
{
	const struct fctl_probe_item *it = r->item;
	char name[160];

	snprintf(name, sizeof(name), "%s/%u", it->link, it->vlan);
	if (!r->n_tests)
		fctl_buf_printf(b, "%-18s %-9s %-17s %s\n", name, "-", "", verdict_name(r->verdict));
	for (size_t i = 0; i < r->n_tests; i++) {
		const struct fctl_probe_test *t = &r->tests[i];

		fctl_buf_printf(b, "%-18s %-9s", i ? "" : name, t->test);
		num(b, t->has_lat, t->p50_us, 1);
		num(b, t->has_lat, t->p99_us, 1);
		num(b, t->has_lat, t->p999_us, 1);
		num(b, t->has_bw, t->gbps, 4);
		fctl_buf_printf(b, " %4" PRIu64 "/%-4" PRIu64 " %4" PRIu64 "/%-4" PRIu64
				   " %6" PRIu64 "/%-6" PRIu64 " %s\n",
				t->loss[1], t->loss[0], t->retrans[1], t->retrans[0], t->encrypted[1],
				t->encrypted[0], i ? "" : verdict_name(r->verdict));
	}
	for (size_t k = 0; k < r->n_reasons; k++)
		fctl_buf_printf(b, "    %s\n", r->reasons[k]);
}

static void json_test(struct fctl_buf *b, const struct fctl_probe_test *t)
{
	fctl_buf_puts(b, "{\"test\":");
	fctl_buf_json_str(b, t->test);
	fctl_buf_printf(b, ",\"size_bytes\":%" PRIu32 ",\"ran\":%s,\"pass\":%s", t->size,
			t->ran ? "true" : "false", t->pass ? "true" : "false");
	if (t->has_lat)
		fctl_buf_printf(b, ",\"latency_p50_us\":%.3f,\"latency_p99_us\":%.3f,"
				   "\"latency_p999_us\":%.3f", t->p50_us, t->p99_us, t->p999_us);
	if (t->has_bw)
		fctl_buf_printf(b, ",\"bandwidth_gbps\":%.6f", t->gbps);
	fctl_buf_printf(b, ",\"loss_packets\":{\"a\":%" PRIu64 ",\"b\":%" PRIu64 "}"
			   ",\"retransmissions\":{\"a\":%" PRIu64 ",\"b\":%" PRIu64 "}"
			   ",\"macsec_encrypted_delta\":{\"a\":%" PRIu64 ",\"b\":%" PRIu64 "}"
			   ",\"macsec_refused_delta\":{\"a\":%" PRIu64 ",\"b\":%" PRIu64 "}}",
			t->loss[1], t->loss[0], t->retrans[1], t->retrans[0], t->encrypted[1],
			t->encrypted[0], t->macsec_bad[1], t->macsec_bad[0]);
}

static void json_link(struct fctl_buf *b, const struct fctl_probe_result *r)
{
	const struct fctl_probe_item *it = r->item;

	fctl_buf_puts(b, "{\"link\":");
	fctl_buf_json_str(b, it->link);
	fctl_buf_printf(b, ",\"vlan\":%u,\"a\":", it->vlan);
	fctl_buf_json_str(b, it->host[0]);
	fctl_buf_puts(b, ",\"b\":");
	fctl_buf_json_str(b, it->host[1]);
	fctl_buf_printf(b, ",\"round\":%u,\"wall_seconds\":%.3f,\"verdict\":\"%s\",\"reasons\":[",
			it->round + 1, r->wall_s, verdict_name(r->verdict));
	for (size_t k = 0; k < r->n_reasons; k++) {
		if (k)
			fctl_buf_putc(b, ',');
		fctl_buf_json_str(b, r->reasons[k]);
	}
	fctl_buf_puts(b, "],\"path_mtu\":[");
	for (int e = 0; e < 2; e++) {
		const struct fctl_probe_pmtu *m = &r->pmtu[e];

		fctl_buf_printf(b, "%s{\"from\":", e ? "," : "");
		fctl_buf_json_str(b, it->host[e]);
		fctl_buf_puts(b, ",\"port\":");
		fctl_buf_json_str(b, it->port[e]);
		fctl_buf_printf(b, ",\"checked\":%s,\"mtu\":%u,\"ok\":%s,\"largest_passed\":%u}",
				m->checked ? "true" : "false", it->mtu, m->ok ? "true" : "false",
				m->largest);
	}
	fctl_buf_puts(b, "],\"tests\":[");
	for (size_t i = 0; i < r->n_tests; i++) {
		if (i)
			fctl_buf_putc(b, ',');
		json_test(b, &r->tests[i]);
	}
	fctl_buf_puts(b, "]}");
}

/* One testcase per link and test, one per link for the path MTU, one for a link that
 * could not run. */
static int junit(const char *file, const struct fctl_probe_result *res, size_t n)
{
	struct fctl_buf b = { 0 };
	size_t cases = 0, fails = 0, errs = 0;
	FILE *f;

	for (size_t i = 0; i < n; i++) {
		const struct fctl_probe_result *r = &res[i];
		char name[160];

		snprintf(name, sizeof(name), "%s/%u", r->item->link, r->item->vlan);
		for (size_t t = 0; t <= r->n_tests; t++) {
			bool bad = t < r->n_tests ? !r->tests[t].pass
						  : (r->pmtu[0].checked && !r->pmtu[0].ok) ||
							    (r->pmtu[1].checked && !r->pmtu[1].ok);

			fctl_buf_puts(&b, "  <testcase classname=\"fabric-probe.");
			fctl_buf_xml_str(&b, name);
			fctl_buf_puts(&b, "\" name=\"");
			fctl_buf_xml_str(&b, t < r->n_tests ? r->tests[t].test : "path_mtu");
			fctl_buf_puts(&b, "\">");
			cases++;
			if (bad) {
				fails++;
				fctl_buf_puts(&b, "<failure message=\"");
				for (size_t k = 0; k < r->n_reasons; k++) {
					fctl_buf_xml_str(&b, r->reasons[k]);
					fctl_buf_puts(&b, k + 1 < r->n_reasons ? "; " : "");
				}
				fctl_buf_puts(&b, "\"/>");
			}
			fctl_buf_puts(&b, "</testcase>\n");
		}
		if (r->verdict == FCTL_PROBE_ERROR) {
			errs++;
			cases++;
			fctl_buf_puts(&b, "  <testcase classname=\"fabric-probe.");
			fctl_buf_xml_str(&b, name);
			fctl_buf_puts(&b, "\" name=\"run\"><error message=\"");
			for (size_t k = 0; k < r->n_reasons; k++) {
				fctl_buf_xml_str(&b, r->reasons[k]);
				fctl_buf_puts(&b, k + 1 < r->n_reasons ? "; " : "");
			}
			fctl_buf_puts(&b, "\"/></testcase>\n");
		}
	}
	f = fopen(file, "we");
	if (!f) {
		cli_err("probe: --junit %s: %s", file, strerror(errno));
		fctl_buf_release(&b);
		return -EIO;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"fabric-probe\" "
		   "tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n", cases, fails, errs);
	fwrite(b.data ? b.data : "", 1, b.len, f);
	fputs("</testsuite>\n", f);
	fctl_buf_release(&b);
	return fclose(f) == 0 ? 0 : -EIO;
}

static void progress(void *ctx, const struct fctl_probe_result *r)
{
	const struct pf *f = ctx;

	if (!f->quiet)
		fprintf(stderr, "probe: round %u: %s/%u %s\n", r->item->round + 1, r->item->link,
			r->item->vlan, verdict_name(r->verdict));
}

static int report(const struct pf *f, const struct fctl_probe_result *res, size_t n,
		  unsigned rounds, double wall)
{
	struct fctl_probe_matrix m = { 0 };
	struct fctl_buf b = { 0 };
	size_t fail = 0, err = 0;
	int rc;

	if (fctl_probe_matrix_build(res, n, !f->matrix_p50, &m) < 0) {
		cli_err("probe: out of memory");
		return EXIT_USAGE;
	}

	for (size_t i = 0; i < n; i++) {
		fail += res[i].verdict == FCTL_PROBE_FAIL;
		err += res[i].verdict == FCTL_PROBE_ERROR;
	}
	rc = err ? EXIT_USAGE : fail ? EXIT_INVALID : EXIT_OK;
	if (f->json) {
		fctl_buf_printf(&b, "{\"command\":\"probe\",\"schema\":1,\"pass\":%s,\"exit\":%d,"
				    "\"rounds\":%u,\"wall_seconds\":%.3f,\"links\":[",
				rc == 0 ? "true" : "false", rc, rounds, wall);
		for (size_t i = 0; i < n; i++) {
			if (i)
				fctl_buf_putc(&b, ',');
			json_link(&b, &res[i]);
		}
		fctl_buf_puts(&b, "],\"latency_matrix\":");
		fctl_probe_matrix_json(&m, &b);
		fctl_buf_puts(&b, "}\n");
	} else {
		fctl_buf_printf(&b, "%-18s %-9s %9s %9s %9s %9s %9s %9s %13s %s\n", "LINK/VLAN",
				"TEST", "P50_US", "P99_US", "P999_US", "GBPS", "LOSS A/B",
				"RETR A/B", "ENCRYPTED A/B", "VERDICT");
		for (size_t i = 0; i < n; i++)
			text_link(&b, &res[i]);
		fctl_buf_putc(&b, '\n');
		fctl_probe_matrix_text(&m, &b);
		fctl_buf_printf(&b, "fabric probe: %zu link%s in %u round%s, %.1f s: %zu passed, "
				    "%zu failed, %zu could not run\n", n, n == 1 ? "" : "s", rounds,
				rounds == 1 ? "" : "s", wall, n - fail - err, fail, err);
	}
	cli_write(stdout, &b);
	fctl_buf_release(&b);
	fctl_probe_matrix_release(&m);
	if (f->junit && junit(f->junit, res, n) < 0)
		rc = EXIT_USAGE;
	return rc;
}

/* One probe-fabric record: detail "TEST size=N link=L vlan=V a=A b=B round=R: figures" (the
 * single probe's "TEST size=N link=L: figures", which the evidence bundle turns into a
 * test-result statement; docs/audit.md). */
static int audit_one(struct fctl_audit *a, const struct pf *f, const struct fctl_profile *p,
		     const struct fctl_probe_result *r, const char *test, bool pass,
		     const char *figures)
{
	const struct fctl_probe_item *it = r->item;
	char detail[768], why[FCTL_PROBE_MAX_REASONS * 242] = "";
	struct fctl_host_event ev = { .action = "probe-fabric", .host = it->host[1],
				      .change_id = f->change, .p = p, .detail = detail };
	size_t off = 0;

	ev.result = r->verdict == FCTL_PROBE_ERROR ? "error" : pass ? "pass" : "fail";
	for (size_t k = 0; !pass && k < r->n_reasons && off < sizeof(why); k++)
		off += (size_t)snprintf(why + off, sizeof(why) - off, "%s%s", k ? "; " : "",
					r->reasons[k]);
	snprintf(detail, sizeof(detail), "%s link=%s vlan=%u a=%s b=%s round=%u: %s", test,
		 it->link, it->vlan, it->host[0], it->host[1], it->round + 1, figures);
	ev.error = why[0] ? why : NULL;
	return cli_audit_record(a, &ev) < 0 ? -EIO : 0;
}

/* One record per link and test, one per link for its path MTU, one "run" record for a
 * link that could not be measured. Negative errno when one was not written. */
static int audit_links(struct fctl_audit *a, const struct pf *f, const struct fctl_profile *p,
		       const struct fctl_probe_result *res, size_t n)
{
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		const struct fctl_probe_result *r = &res[i];
		char fig[400], name[48];

		for (size_t t = 0; t < r->n_tests; t++) {
			const struct fctl_probe_test *x = &r->tests[t];
			int o = snprintf(fig, sizeof(fig), "ran=%d", x->ran);

			if (x->has_lat)
				o += snprintf(fig + o, sizeof(fig) - (size_t)o, " latency_p50_us=%.3f "
					      "latency_p99_us=%.3f latency_p999_us=%.3f", x->p50_us, x->p99_us,
					      x->p999_us);
			if (x->has_bw)
				o += snprintf(fig + o, sizeof(fig) - (size_t)o, " bandwidth_gbps=%.6f",
					      x->gbps);
			snprintf(fig + o, sizeof(fig) - (size_t)o, " loss=%" PRIu64 "/%" PRIu64
				 " retrans=%" PRIu64 "/%" PRIu64 " encrypted=%" PRIu64 "/%" PRIu64
				 " refused=%" PRIu64 "/%" PRIu64, x->loss[1], x->loss[0],
				 x->retrans[1], x->retrans[0], x->encrypted[1], x->encrypted[0],
				 x->macsec_bad[1], x->macsec_bad[0]);
			snprintf(name, sizeof(name), "%s size=%" PRIu32, x->test, x->size);
			if (audit_one(a, f, p, r, name, x->pass, fig) < 0)
				ret = -EIO;
		}
		if (r->pmtu[0].checked || r->pmtu[1].checked) {
			bool ok = (!r->pmtu[0].checked || r->pmtu[0].ok) &&
				  (!r->pmtu[1].checked || r->pmtu[1].ok);

			snprintf(fig, sizeof(fig), "mtu=%u largest_a=%u largest_b=%u", r->item->mtu,
				 r->pmtu[0].largest, r->pmtu[1].largest);
			if (audit_one(a, f, p, r, "path_mtu", ok, fig) < 0)
				ret = -EIO;
		}
		if (r->verdict == FCTL_PROBE_ERROR &&
		    audit_one(a, f, p, r, "run", false, "could not be measured") < 0)
			ret = -EIO;
	}
	return ret;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int pf_run(struct pf *f, const struct fctl_profile *p, struct fctl_fabric_opts *fo,
		  const struct fctl_inventory *inv, struct fctl_audit *audit)
{
	struct fctl_probe_item *v = NULL;
	struct fctl_probe_result *res;
	struct fctl_probe_run_opts ro = { .fo = fo, .inv = inv, .deadline_s = f->deadline_s,
					  .spec_extra = f->extra[0] ? f->extra : NULL,
					  .done = progress, .ctx = f };
	char err[512];
	size_t n = 0;
	unsigned rounds;
	double t0 = mono();
	int rc;

	if (fctl_probe_plan(p, f->links, f->n_links, !f->allow_clear, &v, &n, err, sizeof(err)) <
	    0) {
		cli_err("probe: %s: %s", f->profile_file, err);
		return EXIT_USAGE;
	}
	rounds = fctl_probe_schedule(v, n);
	res = calloc(n, sizeof(*res));
	if (!res || fctl_probe_fabric_run(&ro, v, n, res) < 0) {
		cli_err("probe: out of memory");
		free(res);
		free(v);
		return EXIT_USAGE;
	}
	rc = report(f, res, n, rounds, mono() - t0);
	if (audit_links(audit, f, p, res, n) < 0) {
		cli_err("probe: AUDIT RECORD NOT WRITTEN: the verdicts above are not all in the "
			"audit log");
		rc = EXIT_USAGE;
	}
	fctl_probe_results_release(res, n);
	free(res);
	free(v);
	return rc;
}

int cmd_probe_fabric(int argc, char **argv)
{
	struct pf f = { .link_s = 60 };
	struct fctl_fabric_opts fo = { 0 };
	struct fctl_inventory inv = { 0 };
	struct fctl_profile *p = NULL;
	struct fctl_buf bytes = { 0 };
	struct fctl_audit *audit = NULL;
	char err[768];
	int rc = pf_parse(&f, argc, argv), r;

	if (rc >= 0)
		return rc;
	signal(SIGPIPE, SIG_IGN);
	rc = cli_need_regular("probe", f.profile_file);
	if (rc == EXIT_OK)
		rc = cli_load_profile(f.profile_file, &p, true, f.json);
	if (rc != EXIT_OK)
		return rc == EXIT_INVALID ? EXIT_USAGE : rc;
	r = fctl_file_read(f.profile_file, &bytes);
	if (r == 0 && bytes.len > FCTL_PROTO_MAX_PROFILE)
		r = -EFBIG;
	if (r < 0) {
		cli_err("probe: '%s': %s", f.profile_file, strerror(-r));
		rc = EXIT_USAGE;
		goto out;
	}
	fo.profile = (const unsigned char *)bytes.data;
	fo.profile_len = bytes.len;
	fo.profile_name = f.profile_file;
	fo.timeout_s = f.link_s;
	r = fctl_inventory_load(&inv, p, f.inventory, err, sizeof(err));
	if (r == 0 && (f.cert || f.key || f.ca))
		r = fctl_tls_ctx_new(false, f.cert, f.key, f.ca, &fo.tls, err, sizeof(err));
	if (r < 0) {
		cli_err("probe: %s", err);
		rc = EXIT_USAGE;
		goto out;
	}
	/* verdicts are audited, as the single probe's: no run whose verdicts cannot be */
	if (cli_audit_open(f.audit_log, &audit) < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	rc = pf_run(&f, p, &fo, &inv, audit);
	if (cli_audit_close(audit) < 0)
		rc = EXIT_USAGE;
out:
	fctl_inventory_release(&inv);
	fctl_tls_ctx_free(fo.tls);
	fctl_profile_free(p);
	fctl_buf_release(&bytes);
	return rc;
}
