// SPDX-License-Identifier: MIT
/*
 * fabricctl-keymgr: MACsec key rotation (docs/rotation.md). The only program that
 * fetches keys from the KMS; it hands SAKs to the agents of both ends of a link
 * (key-custodian certificate, mutual TLS) and never to anything else.
 *
 *   fabricctl-keymgr rotate  [LINK... | --all] [--compromised]  OPTIONS PROFILE
 *   fabricctl-keymgr watch   [--count N]                          OPTIONS PROFILE
 *   fabricctl-keymgr recover                                      OPTIONS PROFILE
 *   fabricctl-keymgr status  [--json]                             OPTIONS PROFILE
 *
 * and, internal, `fabricctl-keymgr fetch-sak --fd N`: one SAK for fabricctl's apply
 * engine over the socketpair it inherited on fd N (fctl/keysrc.h, docs/kms.md).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "fctl/audit.h"
#include "fctl/getopt.h"
#include "fctl/keysrc.h"
#include "fctl/kms.h"
#include "fctl/rotation.h"
#include "fctl/tls.h"
#include "keymgr.h"

#define KM_STATE_DIR "/var/lib/fabricctl/keymgr"

/* options (globals of the program's main file only) */
static const char *opt_cert, *opt_key, *opt_ca, *opt_state_dir = KM_STATE_DIR, *opt_audit;
static const char *opt_textfile; /* --metrics-textfile */
static bool opt_all, opt_json, opt_compromised, opt_dry_run;
static unsigned opt_count, opt_timeout = 10, opt_parallel = 8;
static double opt_cryptoperiod = -1, opt_overlap = -1;

/* The name the user typed: fabricctl runs this program with argv[0] "fabricctl", and its
 * commands are then 'fabricctl rotate' and 'fabricctl keys watch|recover|status'. */
static const char *km_prog = "fabricctl-keymgr";
static bool km_via_fabricctl;

static void kerr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void kerr(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", km_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static void usage(FILE *f)
{
	const char *keys = km_via_fabricctl ? " keys" : "";

	fprintf(f,
		"usage: %s rotate [LINK... | --all] [--compromised] OPTIONS PROFILE\n"
		"       %s%s watch [--count N] OPTIONS PROFILE\n"
		"       %s%s recover OPTIONS PROFILE\n"
		"       %s%s status [--json] OPTIONS PROFILE\n",
		km_prog, km_prog, keys, km_prog, keys, km_prog, keys);
	fputs("options: --cert F --key F --ca F (key-custodian identity for the agents)\n"
	      "         --agent HOST=ADDR:PORT (default: the profile's hosts[].agent)\n"
	      "         --state-dir DIR (default " KM_STATE_DIR ") --audit-log FILE\n"
	      "         --timeout SEC (per agent request, default 10)\n"
	      "         --parallel N (agents asked at once in each phase, 1..256, default 8)\n"
	      "         --cryptoperiod SEC --overlap SEC (override the profile's key policy)\n"
	      "         --json (rotate, status: one JSON object / array on stdout)\n"
	      "         --dry-run (rotate: the plan only: links, order, requests per phase,\n"
	      "           waves, expected time; no agent or KMS asked, nothing written)\n"
	      "         --metrics-textfile PATH (rotate, recover: the run in node_exporter's\n"
	      "           textfile format, written atomically)\n"
	      "rotate takes the links together, phase by phase (prepare, install-rx, stage-tx,\n"
	      "confirm, switch), one request per agent and phase, one overlap wait for all\n"
	      "of them, then the check and retirement of all.\n"
	      "LINK is PROFILE-LINK.VLAN-ID as `status` prints it, e.g. h1-h2.100.\n"
	      "A link whose policy has `mka:` is MKA's: status names it, rotate LINK refuses\n"
	      "it, --all and watch leave it alone (its CAK rotates through apply, docs/mka.md).\n"
	      "Exit: 0 rotated (or nothing to do), 1 rolled back (old key still in use),\n"
	      "2 usage or environment, 3 failed with the journal kept (rerun: recover).\n",
	      f);
}

static void harden(void)
{
	struct rlimit no = { 0, 0 };

	/* no core dumps, no ptrace by other users, locked key pages */
	setrlimit(RLIMIT_CORE, &no);
	prctl(PR_SET_DUMPABLE, 0);
	(void)mlockall(MCL_CURRENT | MCL_FUTURE);
}

/* fetch-sak --fd N: the apply engine's request on the channel it made (fctl/keysrc.h).
 * Answers once and exits: 0 answered (the answer may be an error), 2 no channel. */
static int fetch_sak(int argc, char **argv)
{
	char err[600] = "";
	uint64_t fd;

	if (argc != 3 || strcmp(argv[1], "--fd") != 0 || fctl_parse_u64(argv[2], &fd) < 0 ||
	    fd > 1024) {
		fprintf(stderr, "fabricctl-keymgr: fetch-sak is internal (fabricctl apply runs it "
			"with --fd N)\n");
		return 2;
	}
	harden();
	if (fctl_keymgr_serve((int)fd, err, sizeof(err)) < 0) {
		fprintf(stderr, "fabricctl-keymgr: fetch-sak: %s\n", err);
		return 2;
	}
	return 0;
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* Rotation links of the profile: one per VLAN protected by static SAKs. */
int km_links_from_profile(struct km *k, char *err, size_t errlen)
{
	const struct fctl_profile *p = k->profile;
	size_t n = 0, n_mka = 0;

	for (size_t i = 0; i < p->n_links; i++)
		for (size_t j = 0; j < p->links[i].n_vlans; j++) {
			const struct fctl_macsec_policy *pol =
				fctl_profile_find_policy(p, p->links[i].vlans[j].macsec);

			n += pol && !pol->has_mka;
			n_mka += pol && pol->has_mka;
		}
	k->links = calloc(n ? n : 1, sizeof(*k->links));
	k->mka_links = calloc(n_mka ? n_mka : 1, sizeof(*k->mka_links));
	if (!k->links || !k->mka_links)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_links; i++) {
		const struct fctl_plink *pl = &p->links[i];

		for (size_t j = 0; j < pl->n_vlans; j++) {
			const struct fctl_vlan *v = &pl->vlans[j];
			const struct fctl_macsec_policy *pol = fctl_profile_find_policy(p, v->macsec);
			struct km_link *l;
			uint8_t mac[2][6];

			if (!pol)
				continue;
			if (pol->has_mka) {
				snprintf(k->mka_links[k->n_mka_links++], sizeof(*k->mka_links), "%s.%u",
					 pl->name, v->id);
				continue;
			}
			l = &k->links[k->n_links++];
			snprintf(l->name, sizeof(l->name), "%s.%u", pl->name, v->id);
			l->cipher = pol->cipher;
			l->ref = pol->key;
			l->base = p->dir;
			l->cryptoperiod_s = opt_cryptoperiod >= 0 ? (uint64_t)opt_cryptoperiod
								 : pol->cryptoperiod_s;
			l->overlap_s = opt_overlap >= 0 ? (uint64_t)opt_overlap : pol->overlap_s;
			l->pn_threshold = pol->has_pn_rekey_threshold ? pol->pn_rekey_threshold
			    : fctl_cipher_is_xpn(pol->cipher) ? 0xC000000000000000ull : 0xC0000000ull;
			for (int e = 0; e < 2; e++) {
				const struct fctl_link_end *le = &pl->end[e];
				const struct fctl_host *h = &p->hosts[le->host_idx];
				const struct fctl_port *pt = &h->ports[le->port_idx];
				char vif[FCTL_IFNAMSIZ + 8];

				memcpy(mac[e], pt->has_mac ? pt->mac : le->peer_mac, 6);
				l->end[e].host = h->name;
				l->end[e].endpoint = h->agent;
				for (size_t a = 0; a < k->n_agents; a++) {
					size_t hl = strlen(h->name);

					if (strncmp(k->agents[a], h->name, hl) == 0 && k->agents[a][hl] == '=')
						l->end[e].endpoint = k->agents[a] + hl + 1;
				}
				if (!l->end[e].endpoint) {
					snprintf(err, errlen, "host '%s' has no agent address (profile "
						 "hosts[].agent or --agent %s=ADDR:PORT)", h->name, h->name);
					return -EINVAL;
				}
				fctl_vlan_ifnames(v, pt->name, vif, l->end[e].ifname);
			}
			for (int e = 0; e < 2; e++) {
				l->end[e].sci = fctl_sci_make(mac[e], pol->port);
				l->end[e].peer_sci = fctl_sci_make(mac[!e], pol->port);
			}
			for (int e = 0; e < 2; e++)
				l->end[e].ssci = l->end[e].sci < l->end[e].peer_sci ? 1 : 2;
		}
	}
	return 0;
}

void km_links_free(struct km *k)
{
	km_close_conns(k);
	free(k->links);
	k->links = NULL;
	k->n_links = 0;
	free(k->mka_links);
	k->mka_links = NULL;
	k->n_mka_links = 0;
}

static bool is_mka_link(const struct km *k, const char *name)
{
	for (size_t i = 0; i < k->n_mka_links; i++)
		if (strcmp(k->mka_links[i], name) == 0)
			return true;
	return false;
}

/* What keymgr says of the MKA links it leaves alone (rotate --all, recover, watch). */
static void note_mka_links(const struct km *k, const char *cmd)
{
	for (size_t i = 0; i < k->n_mka_links; i++)
		kerr("%s: %s: an MKA link, left to MKA (its key server renews the SAKs; the CAK "
		     "rotates when fabricctl apply gets the next one, docs/mka.md)\n",
		     cmd, k->mka_links[i]);
}

static int status(struct km *k)
{
	int rc = 0;

	if (opt_json)
		printf("[");
	for (size_t i = 0; i < k->n_links; i++) {
		struct km_link *l = &k->links[i];
		struct km_dump d[2];
		char err[600] = "";
		unsigned an = 0;
		uint32_t v = 0;
		uint64_t when = 0;
		bool rec = km_current(k, l, &an, &v, &when) == 0;
		int r = km_dump_link(k, l, d, err, sizeof(err));

		if (r < 0)
			rc = 2;
		if (opt_json) {
			printf("%s{\"link\":\"%s\",\"recorded\":%s,\"an\":%u,\"version\":%" PRIu32
			       ",\"rotated_at\":%" PRIu64, i ? "," : "", l->name, rec ? "true" : "false",
			       an, v, when);
			for (int e = 0; r == 0 && e < 2; e++)
				printf(",\"%s\":{\"ifname\":\"%s\",\"encoding_sa\":%u,\"version\":%" PRIu32
				       ",\"tx_pn\":%" PRIu64 ",\"not_valid\":%" PRIu64 ",\"not_using_sa\":%"
				       PRIu64 ",\"unused_sa\":%" PRIu64 "}", l->end[e].host, l->end[e].ifname,
				       d[e].encoding_sa, km_end_version(l, &d[e]),
				       d[e].tx[d[e].encoding_sa].pn, d[e].sc_not_valid,
				       d[e].sc_not_using_sa, d[e].sc_unused_sa);
			if (r < 0)
				printf(",\"error\":\"unreachable\"");
			printf("}");
			continue;
		}
		printf("%s: recorded an %u version %" PRIu32 "%s\n", l->name, an, v,
		       rec ? "" : " (never rotated)");
		if (r < 0) {
			printf("  %s\n", err);
			continue;
		}
		for (int e = 0; e < 2; e++)
			printf("  %s %s: encoding sa %u, key version %" PRIu32 ", tx pn %" PRIu64
			       ", not_valid %" PRIu64 ", not_using_sa %" PRIu64 ", unused_sa %" PRIu64 "\n",
			       l->end[e].host, l->end[e].ifname, d[e].encoding_sa,
			       km_end_version(l, &d[e]), d[e].tx[d[e].encoding_sa].pn,
			       d[e].sc_not_valid, d[e].sc_not_using_sa, d[e].sc_unused_sa);
	}
	for (size_t i = 0; i < k->n_mka_links; i++) {
		if (opt_json)
			printf("%s{\"link\":\"%s\",\"mka\":true}", k->n_links || i ? "," : "",
			       k->mka_links[i]);
		else
			printf("%s: MKA (SAKs from the key server, not rotated by keymgr; "
			       "`fabricctl show` has the session)\n", k->mka_links[i]);
	}
	if (opt_json)
		printf("]\n");
	return rc;
}

static int rc_of(int r)
{
	return r == 0 ? 0 : r == 1 ? 1 : 3;
}

static uint64_t now_s(void)
{
	return (uint64_t)time(NULL);
}

/* Cryptoperiod and PN use, on a timerfd: sleeps until the next link is due (or the
 * next PN check), never polls faster than that. The links due at one wake-up rotate
 * together (one overlap for all of them, km_rotate_batch). */
static int watch(struct km *k)
{
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	uint64_t *last = calloc(k->n_links ? k->n_links : 1, sizeof(*last));
	struct km_link **due = calloc(k->n_links ? k->n_links : 1, sizeof(*due));
	struct km_result *res = calloc(k->n_links ? k->n_links : 1, sizeof(*res));
	unsigned done = 0;
	int worst = 0;

	if (tfd < 0 || !last || !due || !res || !k->n_links) {
		if (tfd >= 0)
			close(tfd);
		free(last);
		free(due);
		free(res);
		if (tfd < 0 || !last || !due || !res)
			return 2;
		note_mka_links(k, "watch");
		kerr("watch: no link with static SAKs in the profile: nothing to watch\n");
		return 0;
	}
	note_mka_links(k, "watch");
	for (size_t i = 0; i < k->n_links; i++) {
		unsigned an;
		uint32_t v;

		if (km_current(k, &k->links[i], &an, &v, &last[i]) < 0)
			last[i] = now_s();
		km_recover(k, &k->links[i]);
	}
	while (!stop && (!opt_count || done < opt_count)) {
		uint64_t next = UINT64_MAX, now = now_s(), exp, t0;
		struct itimerspec its = { 0 };
		size_t n_due = 0;

		for (size_t i = 0; i < k->n_links && !stop; i++) {
			struct km_link *l = &k->links[i];
			struct km_dump d[2];
			char err[600];
			const char *why = NULL;

			if (opt_count && done + n_due >= opt_count)
				break;
			if (now >= last[i] + l->cryptoperiod_s)
				why = "cryptoperiod";
			else if (km_dump_link(k, l, d, err, sizeof(err)) == 0 &&
				 (d[0].tx[d[0].encoding_sa].pn >= l->pn_threshold ||
				  d[1].tx[d[1].encoding_sa].pn >= l->pn_threshold))
				why = "pn-threshold";
			if (why) {
				km_audit(k, l, "key-rotation", "triggered", NULL, NULL, "%s", why);
				due[n_due++] = l;
			}
		}
		if (n_due) {
			int r;

			t0 = now_s();
			r = km_rotate_batch(k, due, n_due, res, false);
			if (r != 0 && worst == 0)
				worst = rc_of(r);
			for (size_t j = 0; j < n_due; j++) /* from one start to the next */
				last[due[j] - k->links] = t0;
			done += (unsigned)n_due;
		}
		/* the connections stay open across wake-ups (reopened when an agent's idle
		 * timeout closed them) */
		if (stop || (opt_count && done >= opt_count))
			break;
		for (size_t i = 0; i < k->n_links; i++)
			if (last[i] + k->links[i].cryptoperiod_s < next)
				next = last[i] + k->links[i].cryptoperiod_s;
		now = now_s();
		/* PN use is checked at least every 10 s between cryptoperiods */
		its.it_value.tv_sec = next > now ? (time_t)(next - now) : 0;
		if (its.it_value.tv_sec > 10)
			its.it_value.tv_sec = 10;
		if (!its.it_value.tv_sec)
			its.it_value.tv_nsec = 100 * 1000 * 1000;
		timerfd_settime(tfd, 0, &its, NULL);
		if (read(tfd, &exp, sizeof(exp)) < 0 && errno != EINTR)
			break;
	}
	close(tfd);
	free(last);
	free(due);
	free(res);
	return worst;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char *result_name(int r)
{
	return r == 0 ? "committed" : r == 1 ? "rolled-back" : "failed";
}

/* The report of a rotation batch: a line per link and a summary, or one JSON object. */
static void report(const struct km *k, const struct km_result *res, size_t n, double wall_ms)
{
	double wait_ms = k->overlap_wait_ms;
	unsigned ok = 0, rb = 0, bad = 0;
	double step_sum = 0;
	uint64_t overlap = 0;

	for (size_t i = 0; i < n; i++) {
		ok += res[i].r == 0;
		rb += res[i].r == 1;
		bad += res[i].r < 0;
		if (res[i].link->overlap_s > overlap && !k->compromised)
			overlap = res[i].link->overlap_s;
	}
	if (opt_json)
		printf("{\"links\":[");
	for (size_t i = 0; i < n; i++) {
		const struct km_result *x = &res[i];
		double sum = 0;

		for (int s = 0; s < KM_N_STEPS; s++)
			sum += x->step_ms[s];
		step_sum += sum;
		if (!opt_json) {
			printf("%s: %s", x->link->name, x->r == 0 ? "rotated" : result_name(x->r));
			if (x->r >= 0)
				printf(" (an %u -> %u, key version %" PRIu32 " -> %" PRIu32 "%s%s, %.1f ms "
				       "of steps)", x->old_an, x->new_an, x->old_version, x->new_version,
				       x->kcv[0] ? ", kcv " : "", x->kcv, sum);
			putchar('\n');
			continue;
		}
		printf("%s{\"link\":\"%s\",\"result\":\"%s\",\"old_an\":%u,\"new_an\":%u,"
		       "\"old_version\":%" PRIu32 ",\"new_version\":%" PRIu32 ",\"kcv\":",
		       i ? "," : "", x->link->name, result_name(x->r), x->old_an, x->new_an,
		       x->old_version, x->new_version);
		if (x->kcv[0])
			printf("\"%s\"", x->kcv);
		else
			printf("null");
		printf(",\"kms_ops\":%u,\"agent_requests\":%u,\"steps_ms\":{", x->kms_ops,
		       x->agent_requests);
		for (int s = 0; s < KM_N_STEPS; s++)
			printf("%s\"%s\":%.3f", s ? "," : "", km_step_name((enum km_step)s), x->step_ms[s]);
		printf("}}");
	}
	if (opt_json) {
		printf("],\"total\":{\"links\":%zu,\"committed\":%u,\"rolled_back\":%u,\"failed\":%u,"
		       "\"overlap_s\":%" PRIu64 ",\"overlap_wait_ms\":%.3f,\"wall_ms\":%.3f,"
		       "\"steps_ms\":%.3f,\"kms_ops\":%u,\"agent_requests\":%u,"
		       "\"agent_connections\":%u,\"self_ms\":{", n, ok, rb, bad, overlap, wait_ms,
		       wall_ms, step_sum, k->kms_ops, k->agent_requests, k->agent_connects);
		for (int s = 0; s < KS_N; s++)
			printf("%s\"%s\":%.3f", s ? "," : "", km_self_name((enum km_self)s),
			       k->self_ms[s]);
		printf("}}}\n");
		return;
	}
	if (n > 1)
		printf("%zu links: %u committed, %u rolled back, %u failed; %.1f s in all, %.1f s "
		       "of it the overlap wait; %.1f ms of steps per link; %u KMS operations, %u agent "
		       "requests, %u agent connections\n", n, ok, rb, bad, wall_ms / 1e3, wait_ms / 1e3,
		       n ? step_sum / (double)n : 0, k->kms_ops, k->agent_requests, k->agent_connects);
}

static bool textfile_written;

/* --metrics-textfile: the run (rotate, recover) for node_exporter; a failure is said. */
static void textfile(const char *cmd, const struct km_result *res, size_t n, int rc,
		     double wall_ms)
{
	int r;

	if (!opt_textfile || textfile_written)
		return;
	textfile_written = true;
	r = km_metrics_textfile(opt_textfile, cmd, res, n, rc, wall_ms / 1e3);
	if (r < 0)
		fprintf(stderr, "fabricctl-keymgr: --metrics-textfile %s not written: %s\n",
			opt_textfile, strerror(-r));
}

/* rotate LINK...|--all, recover: the links named (or all of them). */
static int rotate_or_recover(struct km *k, const char *cmd, char **names, int n_names)
{
	bool recover = strcmp(cmd, "recover") == 0;
	struct km_link **sel = calloc(k->n_links ? k->n_links : 1, sizeof(*sel));
	struct km_result *res = calloc(k->n_links ? k->n_links : 1, sizeof(*res));
	size_t n = 0, n_res = 0;
	double t0 = now_ms();
	int rc = 0;

	if (!sel || !res) {
		free(sel);
		free(res);
		kerr("out of memory\n");
		return 2;
	}
	for (int a = 0; a < n_names; a++) { /* every name must be a link of the profile */
		size_t i = 0;

		while (i < k->n_links && strcmp(names[a], k->links[i].name) != 0)
			i++;
		if (i == k->n_links && is_mka_link(k, names[a])) {
			kerr("%s: '%s' is an MKA link: its SAKs come from MKA's key server, not "
			     "from keymgr; its CAK rotates make-before-break when fabricctl apply "
			     "gets a profile naming the next CAK and a new CKN (docs/mka.md)\n",
			     cmd, names[a]);
			rc = 2;
		} else if (i == k->n_links) {
			kerr("%s: no protected link '%s' in the profile "
				"(see status)\n", cmd, names[a]);
			rc = 2;
		}
	}
	if (rc == 0 && (opt_all || recover) && k->n_mka_links) {
		note_mka_links(k, cmd);
		if (!k->n_links) {
			free(sel);
			free(res);
			return 0; /* nothing of keymgr's to rotate */
		}
	}
	for (size_t i = 0; i < k->n_links && rc == 0; i++) {
		bool want = opt_all || recover;

		for (int a = 0; a < n_names && !want; a++)
			want = strcmp(names[a], k->links[i].name) == 0;
		if (want)
			sel[n++] = &k->links[i];
	}
	if (rc == 0 && !n) {
		kerr("%s: name a link (see status) or --all\n", cmd);
		rc = 2;
	}
	if (rc == 0 && opt_dry_run) {
		/* measured in the lab (bench/README.md, "Rotation at fabric scale") */
		static const struct km_plan_model mo = { .request_ms = KM_PLAN_REQUEST_MS,
			.record_ms = KM_PLAN_RECORD_MS, .kms_ms = KM_PLAN_KMS_MS,
			.journal_ms = KM_PLAN_JOURNAL_MS };

		rc = km_plan_print(k, sel, n, &mo, opt_json) < 0 ? 2 : 0;
		free(sel);
		free(res);
		return rc;
	}
	if (rc == 0 && recover) {
		for (size_t i = 0; i < n; i++) {
			int r = km_recover(k, sel[i]);

			if (r != 0 && rc == 0)
				rc = rc_of(r);
		}
	} else if (rc == 0) {
		int r = km_rotate_batch(k, sel, n, res, n > 1 && isatty(STDERR_FILENO) && !opt_json);

		report(k, res, n, now_ms() - t0);
		rc = r == 0 ? 0 : rc_of(r);
		n_res = n;
	}
	textfile(cmd, res, n_res, rc, now_ms() - t0);
	km_close_conns(k);
	free(sel);
	free(res);
	return rc;
}

/* The CLI's audit policy (fctl_audit_open_policy): --audit-log or the default log,
 * signed with the key pair beside it, made on first use. Says why it failed. */
static int open_audit(struct km *k)
{
	/* signed after every flush: `keys watch` runs for days */
	struct fctl_audit_policy p = { .log_path = opt_audit, .env = true, .create_key = true,
					 .checkpoint_every = 1 };
	char err[512] = "";
	int r = fctl_audit_open_policy(&p, &k->audit, err, sizeof(err));

	if (r < 0)
		kerr("audit log: %s\n", err);
	else if (r & FCTL_AUDIT_KEY_CREATED)
		kerr("audit: %s\n", err);
	else if (r & FCTL_AUDIT_UNSIGNED)
		kerr("warning: audit: %s\n", err);
	return r < 0 ? r : 0;
}

static void close_audit(struct km *k)
{
	int r = fctl_audit_close(k->audit);

	if (r < 0)
		kerr("audit: the closing checkpoint was not written: %s\n",
			strerror(-r));
	k->audit = NULL;
}

/* One keymgr at a time changes a state directory: a second rotate, watch or recover
 * would begin its journal over the first one's. The lock is held until exit (the fd is
 * never closed; close-on-exec). 0, or the exit code 2 with the holder's pid. */
static int lock_state_dir(const char *dir)
{
	char path[4200];
	long holder;
	int fd;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		kerr("state directory '%s': %s\n", dir, strerror(errno));
		return 2;
	}
	snprintf(path, sizeof(path), "%s/lock", dir);
	fd = fctl_lockfile_take(path, FCTL_LOCK_WRITE_PID, &holder);
	if (fd == -EBUSY) {
		if (holder > 0)
			kerr("another keymgr (rotate, watch or recover) holds '%s', pid %ld: "
			     "nothing done\n", path, holder);
		else
			kerr("another keymgr (rotate, watch or recover) holds '%s': nothing done\n",
			     path);
		return 2;
	}
	if (fd < 0) {
		kerr("'%s': %s\n", path, strerror(-fd));
		return 2;
	}
	return 0; /* fd kept: the lock lasts as long as this process */
}

/* The profile, the identity for the agents, the links and (but for status) the audit
 * log; released by main. 0, or the exit code 2 with the reason on stderr. */
static int setup(struct km *k, struct fctl_diags *d, const char *cmd, const char *profile)
{
	char err[600] = "";
	int r;

	r = fctl_profile_load(profile, d, &k->profile);
	if (r == 0)
		fctl_profile_validate(k->profile, d);
	if (r < 0 || d->n_errors) {
		kerr("'%s' does not load or validate (run fabricctl "
			"validate)\n", profile);
		return 2;
	}
	k->state_dir = opt_state_dir;
	k->timeout_s = opt_timeout;
	k->parallel = opt_parallel;
	k->compromised = opt_compromised;
	if ((!opt_cert || !opt_key || !opt_ca) && !(opt_cert == NULL && opt_key == NULL)) {
		kerr("--cert, --key and --ca go together\n");
		return 2;
	}
	if (opt_cert && fctl_tls_ctx_new(false, opt_cert, opt_key, opt_ca, &k->tls, err,
					 sizeof(err)) < 0) {
		kerr("%s\n", err);
		return 2;
	}
	if (km_links_from_profile(k, err, sizeof(err)) < 0) {
		kerr("%s\n", err);
		return 2;
	}
	/* a rotation nobody can account for is refused; a plan changes nothing */
	if (strcmp(cmd, "status") != 0 && !opt_dry_run &&
	    (lock_state_dir(opt_state_dir) != 0 || open_audit(k) < 0 ||
	     (strcmp(cmd, "recover") != 0 && km_approvals_gate(k, cmd) < 0)))
		return 2;
	return 0;
}

static void signals(void)
{
	struct sigaction sa = { .sa_handler = on_term };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int parse_parallel(const char *s)
{
	uint64_t v;

	if (fctl_parse_u64(s, &v) < 0 || v < 1 || v > KM_MAX_PARALLEL) {
		kerr("--parallel expects 1..%d\n", KM_MAX_PARALLEL);
		return -1;
	}
	opt_parallel = (unsigned)v;
	return 0;
}

/* The options after the command (docs/cli.md: exact long names, -j/-o json, a mistake in
 * our words): -1 to go on, else the exit code. */
static int parse_options(struct km *k, const char *cmd, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "ca", required_argument, NULL, 'a' },
		{ "agent", required_argument, NULL, 'g' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "audit-log", required_argument, NULL, 'l' },
		{ "timeout", required_argument, NULL, 't' },
		{ "parallel", required_argument, NULL, 'p' },
		{ "cryptoperiod", required_argument, NULL, 'P' },
		{ "overlap", required_argument, NULL, 'O' },
		{ "count", required_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'A' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "compromised", no_argument, NULL, 'X' },
		{ "json", no_argument, NULL, 'j' },
		{ "metrics-textfile", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char gcmd[32], ghelp[64], gerr[320];
	struct fctl_getopt g = { km_prog, gcmd, ghelp };
	int c;

	snprintf(gcmd, sizeof(gcmd), "%s%s",
		 km_via_fabricctl && strcmp(cmd, "rotate") ? "keys " : "", cmd);
	snprintf(ghelp, sizeof(ghelp), km_via_fabricctl ? "fabricctl help %s" : "%s --help",
		 km_via_fabricctl ? (strcmp(cmd, "rotate") ? "keys" : "rotate") : km_prog);
	while ((c = fctl_getopt(&g, argc, argv, "h", lo, NULL, gerr, sizeof(gerr))) != -1) {
		switch (c) {
		case 'c': opt_cert = optarg; break;
		case 'k': opt_key = optarg; break;
		case 'a': opt_ca = optarg; break;
		case 'g':
			if (k->n_agents == KM_MAX_AGENTS || !strchr(optarg, '=')) {
				kerr("--agent expects HOST=ADDR:PORT\n");
				return 2;
			}
			k->agents[k->n_agents++] = optarg;
			break;
		case 's': opt_state_dir = optarg; break;
		case 'l': opt_audit = optarg; break;
		case 't': opt_timeout = (unsigned)atoi(optarg); break;
		case 'p': if (parse_parallel(optarg) < 0) return 2; break;
		case 'P': opt_cryptoperiod = atof(optarg); break;
		case 'O': opt_overlap = atof(optarg); break;
		case 'n': opt_count = (unsigned)atoi(optarg); break;
		case 'A': opt_all = true; break;
		case 'D': opt_dry_run = true; break;
		case 'X': opt_compromised = true; break;
		case 'j': opt_json = true; break;
		case 'M': opt_textfile = optarg; break;
		case 'h': usage(stdout); return 0;
		case '?': fprintf(stderr, "%s\n", gerr); return 2;
		default: usage(stderr); return 2;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct km k = { 0 };
	struct fctl_diags d = { 0 };
	const char *cmd = NULL, *profile;
	int cmd_at = 0;
	int rc = 0, r;

	if (argc > 0 && argv[0] && strcmp(argv[0], "fabricctl") == 0)
		km_prog = "fabricctl", km_via_fabricctl = true;
	r = fctl_kms_register();
	if (r < 0) {
		kerr("cannot register the KMS backends: %s\n", strerror(-r));
		return 2;
	}
	if (argc > 1 && strcmp(argv[1], "fetch-sak") == 0)
		return fetch_sak(argc - 1, argv + 1);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	/* the command may follow the options: "keymgr --state-dir D status P" */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "rotate") == 0 || strcmp(argv[i], "watch") == 0 ||
		    strcmp(argv[i], "recover") == 0 || strcmp(argv[i], "status") == 0) {
			cmd = argv[i];
			memmove(&argv[i], &argv[i + 1], sizeof(*argv) * (size_t)(argc - i));
			argc--;
			cmd_at = i;
			break;
		}
	}
	if (!cmd_at) {
		kerr("no command (rotate, watch, recover, status)\n");
		usage(stderr);
		return 2;
	}
	rc = parse_options(&k, cmd, argc, argv);
	if (rc >= 0)
		return rc;
	rc = 0;
	if (strcmp(cmd, "rotate") && strcmp(cmd, "watch") && strcmp(cmd, "recover") &&
	    strcmp(cmd, "status")) {
		kerr("unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	if (optind >= argc) {
		kerr("%s: no profile given\n", cmd);
		return 2;
	}
	profile = argv[argc - 1];
	harden();
	signals();
	rc = setup(&k, &d, cmd, profile);
	if (rc)
		goto out;
	if (strcmp(cmd, "status") == 0) {
		rc = status(&k);
	} else if (strcmp(cmd, "watch") == 0) {
		rc = watch(&k);
	} else {
		rc = rotate_or_recover(&k, cmd, argv + optind, argc - 1 - optind);
	}
out:
	if ((strcmp(cmd, "rotate") == 0 || strcmp(cmd, "recover") == 0) && !opt_dry_run)
		textfile(cmd, NULL, 0, rc, 0); /* a run that stopped before rotating */
	close_audit(&k);
	km_links_free(&k);
	fctl_profile_free(k.profile);
	fctl_diags_release(&d);
	fctl_tls_ctx_free(k.tls);
	return rc;
}
