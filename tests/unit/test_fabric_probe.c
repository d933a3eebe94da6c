// SPDX-License-Identifier: MIT
/* The fabric probe without agents: the probes of a profile, the rounds in which no port
 * carries two probes, and each link's verdict from its two answers (fctl/fabric_probe.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fctl/fabric_probe.h"
#include "probe.h"

static const char yaml[] =
	"schema: 1\n"
	"profile: { name: t, version: 1 }\n"
	"macsec:\n"
	"  p: { cipher: gcm-aes-128, key: { backend: file, id: k.key } }\n"
	"hosts:\n"
	"  - { name: h1, ports: [ { name: eth0, mtu: 9000 }, { name: eth1 } ] }\n"
	"  - { name: h2, ports: [ { name: eth0 }, { name: eth1 } ] }\n"
	"  - { name: h3, ports: [ { name: eth0 }, { name: eth1 } ] }\n"
	"links:\n"
	"  - { name: l1, a: h1:eth0, b: h2:eth0, macsec: p, vlans: [\n"
	"      { id: 10, mtu: 1400, addresses: { h1: 10.10.0.1/24, h2: 10.10.0.2/24 } },\n"
	"      { id: 11, addresses: { h1: 10.11.0.1/24, h2: 10.11.0.2/24 } } ] }\n"
	"  - { name: l2, a: h2:eth1, b: h3:eth0, macsec: p, vlans: [\n"
	"      { id: 20, addresses: { h2: 10.20.0.2/24, h3: 10.20.0.3/24 } },\n"
	"      { id: 21, macsec: ~, addresses: { h2: 10.21.0.2/24, h3: 10.21.0.3/24 } } ] }\n"
	"  - { name: l3, a: h3:eth1, b: h1:eth1, vlans: [\n"
	"      { id: 30, addresses: { h3: 10.30.0.3/24, h1: 10.30.0.1/24 } } ] }\n";

static struct fctl_profile *load(void)
{
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;

	assert_int_equal(fctl_profile_parse("t.yaml", (const unsigned char *)yaml, strlen(yaml),
					    &d, &p), 0);
	fctl_diags_release(&d);
	return p;
}

static void plan_and_rounds(void **state)
{
	struct fctl_profile *p = load();
	struct fctl_probe_item *v = NULL;
	char err[256];
	size_t n = 0;

	(void)state;
	assert_int_equal(fctl_probe_plan(p, NULL, 0, false, &v, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 5);
	/* l2's VLAN 21 is cleartext by 'macsec: ~', whatever the link's default */
	assert_int_equal(v[3].vlan, 21);
	assert_false(v[3].protected_);
	memmove(&v[3], &v[4], sizeof(*v));
	n = 4;
	assert_string_equal(v[0].link, "l1");
	assert_int_equal(v[0].vlan, 10);
	assert_string_equal(v[0].ifname[0], "ms10");
	assert_string_equal(v[0].addr[1], "10.10.0.2");
	assert_int_equal(v[0].mtu, 1400);
	assert_int_equal(v[1].mtu, 1500 - 32); /* no mtu: the smaller port's, less MACsec's */
	assert_false(v[3].protected_);
	assert_string_equal(v[3].ifname[1], "eth1.30"); /* cleartext: the VLAN device */
	assert_int_not_equal(v[0].ctl_port, v[1].ctl_port);
	/* l1's two VLANs share both ports: two rounds; l2 and l3 go with the first */
	assert_int_equal(fctl_probe_schedule(v, n), 2);
	assert_int_equal(v[0].round, 0);
	assert_int_equal(v[1].round, 1);
	assert_int_equal(v[2].round, 0);
	assert_int_equal(v[3].round, 0);
	free(v);
	fctl_profile_free(p);
}

static void plan_refusals(void **state)
{
	struct fctl_profile *p = load();
	struct fctl_probe_item *v = NULL;
	const char *nope[] = { "l1", "nope" }, *clear[] = { "l3" }, *one[] = { "l1" };
	char err[256];
	size_t n = 0;

	(void)state;
	assert_int_equal(fctl_probe_plan(p, nope, 2, true, &v, &n, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no link 'nope'"));
	assert_int_equal(fctl_probe_plan(p, clear, 1, true, &v, &n, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "link 'l3' VLAN 30 has no MACsec"));
	/* the whole profile with encryption required: l3 is refused too */
	assert_int_equal(fctl_probe_plan(p, NULL, 0, true, &v, &n, err, sizeof(err)), -EPERM);
	assert_int_equal(fctl_probe_plan(p, one, 1, true, &v, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].host[0], "h1");
	free(v);
	fctl_profile_free(p);
}

static const struct fctl_inventory_host ha = { "h2", "10.0.0.2:7443" },
					hb = { "h3", "10.0.0.3:7443" };

static void judge(struct fctl_probe_result *r, const struct fctl_probe_item *it, int serve_exit,
		  const char *serve_out, int run_status, int run_exit, const char *run_out,
		  const char *run_err)
{
	memset(r, 0, sizeof(*r));
	r->item = it;
	r->serve.host = &ha;
	r->run.host = &hb;
	r->serve.exit = serve_exit;
	r->serve.output = serve_out ? strdup(serve_out) : NULL;
	r->run.status = run_status;
	r->run.exit = run_exit;
	r->run.output = run_out ? strdup(run_out) : NULL;
	r->run.error = run_err ? strdup(run_err) : NULL;
	fctl_probe_judge(r, 30);
}

static const char pass_run[] =
	"pmtu end=client ifname=ms20 peer=10.20.0.2 mtu=1468 ok=1 largest=1468\n"
	"result test=send_lat size=2 ran=1 pass=1 p50_us=20.000 p99_us=30.500 p999_us=31.000 "
	"gbps=- loss_client=0 loss_server=0 retrans_client=1 retrans_server=2 "
	"encrypted_client=40 encrypted_server=41 macsec_bad_client=0 macsec_bad_server=0 "
	"macsec_client=1 macsec_server=1\n"
	"verdict pass=1\n";

static void verdicts(void **state)
{
	struct fctl_profile *p = load();
	struct fctl_probe_item it;
	struct fctl_probe_result r;
	char err[256];

	(void)state;
	assert_int_equal(fctl_probe_item_find(p, "l2", 20, &it, err, sizeof(err)), 0);
	judge(&r, &it, 0, "pmtu end=server ifname=ms20 peer=10.20.0.3 mtu=1468 ok=1 largest=1468\n",
	      0, 0, pass_run, NULL);
	assert_int_equal(r.verdict, FCTL_PROBE_PASS);
	assert_int_equal(r.n_tests, 1);
	assert_true(r.tests[0].has_lat && !r.tests[0].has_bw);
	assert_true(r.tests[0].p99_us > 30.4 && r.tests[0].p99_us < 30.6);
	assert_int_equal(r.tests[0].retrans[1], 2);
	assert_int_equal(r.tests[0].encrypted[0], 40);
	assert_true(r.pmtu[0].checked && r.pmtu[1].ok);
	fctl_probe_results_release(&r, 1);

	/* the server's direction lost its size: the link fails, named by host and port */
	judge(&r, &it, 0, "pmtu end=server ifname=ms20 peer=10.20.0.3 mtu=1468 ok=0 largest=1300\n",
	      0, 0, pass_run, NULL);
	assert_int_equal(r.verdict, FCTL_PROBE_FAIL);
	assert_int_equal(r.n_reasons, 1);
	assert_non_null(strstr(r.reasons[0], "path MTU: h2 port eth1 (ms20): don't-fragment 1468 "
					     "bytes to h3 failed; largest that passed: 1300"));
	fctl_probe_results_release(&r, 1);

	/* an SLO failure, its reason carried over */
	judge(&r, &it, 0, NULL, 0, 1,
	      "result test=send_lat size=2 ran=1 pass=0 p50_us=1 p99_us=9 p999_us=9 gbps=-\n"
	      "reason test=send_lat latency p99 9.000 us > 5.000 us\n", NULL);
	assert_int_equal(r.verdict, FCTL_PROBE_FAIL);
	assert_string_equal(r.reasons[0], "send_lat: latency p99 9.000 us > 5.000 us");
	fctl_probe_results_release(&r, 1);

	/* an SLO missed, then the run broke (killed at its deadline): the SLO is the verdict */
	judge(&r, &it, 3, NULL, 0, 3,
	      "result test=send_lat size=2 ran=1 pass=0 p50_us=1 p99_us=9 p999_us=9 gbps=-\n"
	      "reason test=send_lat latency p99 9.000 us > 5.000 us\n"
	      "result test=write_bw size=65536 ran=0 pass=0 p50_us=- p99_us=- p999_us=- gbps=-\n",
	      "fabricctl agent: the probe-run worker was killed by signal 14\n");
	assert_int_equal(r.verdict, FCTL_PROBE_FAIL);
	assert_string_equal(r.reasons[0], "send_lat: latency p99 9.000 us > 5.000 us");
	assert_non_null(strstr(r.reasons[1], "killed by signal 14"));
	fctl_probe_results_release(&r, 1);

	/* the running end's agent never answered */
	judge(&r, &it, 2, NULL, -ETIMEDOUT, 2, NULL, "no answer within 30 s");
	assert_int_equal(r.verdict, FCTL_PROBE_ERROR);
	assert_non_null(strstr(r.reasons[0], "h3 did not answer its run request within 30 s"));
	fctl_probe_results_release(&r, 1);

	/* the probe could not run there: its first line, without the program's name */
	judge(&r, &it, 2, NULL, 0, 2, NULL, "fabricctl-probe: run: no RDMA device on ms20\nmore\n");
	assert_int_equal(r.verdict, FCTL_PROBE_ERROR);
	assert_string_equal(r.reasons[0], "could not run on h3: run: no RDMA device on ms20");
	fctl_probe_results_release(&r, 1);
	fctl_profile_free(p);
}

/* without agents: a run whose deadline leaves no round its time fails every link by
 * name, and a host with no agent fails its links, without a request sent */
static void run_without_agents(void **state)
{
	struct fctl_profile *p = load();
	struct fctl_probe_item *v = NULL;
	struct fctl_probe_result res[8];
	struct fctl_fabric_opts fo = { .timeout_s = 10 };
	struct fctl_inventory inv = { 0 };
	struct fctl_probe_run_opts ro = { .fo = &fo, .inv = &inv, .deadline_s = 1 };
	char err[256];
	size_t n = 0;

	(void)state;
	assert_int_equal(fctl_probe_plan(p, NULL, 0, false, &v, &n, err, sizeof(err)), 0);
	assert_true(n <= 8);
	fctl_probe_schedule(v, n);
	memset(res, 0, sizeof(res));
	assert_int_equal(fctl_probe_fabric_run(&ro, v, n, res), 0);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(res[i].verdict, FCTL_PROBE_ERROR);
		assert_non_null(strstr(res[i].reasons[0], "whole run's deadline (1 s)"));
	}
	fctl_probe_results_release(res, n);
	ro.deadline_s = 0;
	memset(res, 0, sizeof(res));
	assert_int_equal(fctl_probe_fabric_run(&ro, v, n, res), 0);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(res[i].verdict, FCTL_PROBE_ERROR);
		assert_non_null(strstr(res[i].reasons[0], "no agent known for h"));
	}
	fctl_probe_results_release(res, n);
	free(v);
	fctl_profile_free(p);
}

/* the contract between the probe (probe_report_lines) and the CLI (fctl_probe_judge) */
static void lines_round_trip(void **state)
{
	struct fctl_profile *p = load();
	struct probe_result res[2];
	struct probe_report rep = { .res = res, .n_res = 2 };
	struct fctl_probe_item it;
	struct fctl_probe_result r;
	struct fctl_buf b = { 0 };
	char err[256];

	(void)state;
	memset(res, 0, sizeof(res));
	snprintf(res[0].test, sizeof(res[0].test), "send_lat");
	res[0].size = 2;
	res[0].ran = res[0].has_lat = res[0].has_peer = true;
	res[0].ex.p50_us = 11.5;
	res[0].ex.p99_us = 42.25;
	res[0].ex.p999_us = 50;
	res[0].end[0].loss = 3;
	res[0].end[1].retrans = 4;
	res[0].end[0].ms.out_pkts_encrypted = 100;
	res[0].end[1].ms.out_pkts_encrypted = 101;
	res[0].end[1].ms.in_pkts_late = 2;
	res[0].end[0].ms.is_macsec = res[0].end[1].ms.is_macsec = true;
	res[0].n_reasons = 1;
	snprintf(res[0].reasons[0], sizeof(res[0].reasons[0]), "loss: 3 (max 0):\nx");
	snprintf(res[1].test, sizeof(res[1].test), "write_bw");
	res[1].size = 65536;
	res[1].ran = res[1].pass = true;
	res[1].gbps = 0.0125;
	assert_int_equal(probe_report_lines(&rep, &b), 0);
	assert_int_equal(fctl_probe_item_find(p, "l2", 20, &it, err, sizeof(err)), 0);
	judge(&r, &it, 0, NULL, 0, 1, b.data, NULL);
	assert_int_equal(r.verdict, FCTL_PROBE_FAIL);
	assert_int_equal(r.n_tests, 2);
	assert_string_equal(r.tests[0].test, "send_lat");
	assert_true(r.tests[0].has_lat && !r.tests[0].has_bw && !r.tests[0].pass);
	assert_true(r.tests[0].p99_us > 42.24 && r.tests[0].p99_us < 42.26);
	assert_int_equal(r.tests[0].loss[0], 3);
	assert_int_equal(r.tests[0].retrans[1], 4);
	assert_int_equal(r.tests[0].encrypted[1], 101);
	assert_int_equal(r.tests[0].macsec_bad[1], 2);
	assert_true(r.tests[0].macsec[0] && r.tests[0].macsec[1]);
	assert_true(r.tests[1].has_bw && r.tests[1].pass && !r.tests[1].has_lat);
	assert_true(r.tests[1].gbps > 0.0124 && r.tests[1].gbps < 0.0126);
	/* a reason stays one line, whatever its text held */
	assert_string_equal(r.reasons[0], "send_lat: loss: 3 (max 0): x");
	fctl_probe_results_release(&r, 1);
	fctl_buf_release(&b);
	fctl_profile_free(p);
}

/* hosts x hosts: the figure of each link's latency test both ways, '-' no link, '?' a link
 * without figure; of two links between a pair, the larger */
static void latency_matrix(void **state)
{
	struct fctl_probe_item it[4] = { 0 };
	struct fctl_probe_result r[4];
	struct fctl_probe_matrix m = { 0 };
	struct fctl_buf b = { 0 };
	const char *ends[4][2] = { { "h1", "h2" }, { "h2", "h3" }, { "h3", "h4" }, { "h2", "h1" } };

	(void)state;
	memset(r, 0, sizeof(r));
	for (int i = 0; i < 4; i++) {
		snprintf(it[i].host[0], sizeof(it[i].host[0]), "%s", ends[i][0]);
		snprintf(it[i].host[1], sizeof(it[i].host[1]), "%s", ends[i][1]);
		r[i].item = &it[i];
		r[i].n_tests = 2;
		snprintf(r[i].tests[0].test, sizeof(r[i].tests[0].test), "write_bw");
		r[i].tests[0].ran = r[i].tests[0].has_bw = true;
		snprintf(r[i].tests[1].test, sizeof(r[i].tests[1].test), "send_lat");
		r[i].tests[1].ran = r[i].tests[1].has_lat = true;
		r[i].tests[1].p50_us = 10 + i;
		r[i].tests[1].p99_us = 20 + i;
	}
	r[2].n_tests = 0; /* h3-h4 could not run */
	assert_int_equal(fctl_probe_matrix_build(r, 4, true, &m), 0);
	assert_int_equal(m.n_hosts, 4);
	assert_string_equal(m.hosts[3], "h4");
	fctl_probe_matrix_text(&m, &b);
	assert_non_null(b.data);
	assert_string_equal(b.data,
			    "latency p99 (us), hosts x hosts:\n"
			    "                 h1        h2        h3        h4\n"
			    "h1                -      23.0         -         -\n"
			    "h2             23.0         -      21.0         -\n"
			    "h3                -      21.0         -         ?\n"
			    "h4                -         -         ?         -\n");
	fctl_buf_release(&b);
	fctl_probe_matrix_release(&m);
	assert_int_equal(fctl_probe_matrix_build(r, 2, false, &m), 0);
	fctl_probe_matrix_json(&m, &b);
	assert_string_equal(b.data, "{\"percentile\":\"p50\",\"hosts\":[\"h1\",\"h2\",\"h3\"],"
				    "\"us\":[[null,10.000,null],[10.000,null,11.000],"
				    "[null,11.000,null]],\"links\":[[false,true,false],"
				    "[true,false,true],[false,true,false]]}");
	fctl_buf_release(&b);
	fctl_probe_matrix_release(&m);
	fctl_probe_matrix_release(NULL);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(plan_and_rounds),
		cmocka_unit_test(plan_refusals),
		cmocka_unit_test(verdicts),
		cmocka_unit_test(run_without_agents),
		cmocka_unit_test(lines_round_trip),
		cmocka_unit_test(latency_matrix),
	};

	return cmocka_run_group_tests(t, NULL, NULL);
}
