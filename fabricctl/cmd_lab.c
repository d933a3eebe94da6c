// SPDX-License-Identifier: MIT
/*
 * fabricctl lab ...: runs scripts/lab.sh (installed as FCTL_DATADIR/lab.sh).
 *
 * `lab up --profile FILE` first turns a profile into lab.sh's wiring: the
 * hosts that are an end of a link become h1..hN in file order, each host's
 * ports become eth0..ethK in profile order, and the links, port MACs, port
 * names, port MTUs and host names become --wiring, --mac, --ifname, --mtu and
 * --name, so that `fabricctl apply FILE` runs unchanged inside each guest.
 * Every other use passes its arguments to lab.sh as they are, except two
 * helpers for CI (examples/ci/pipeline.sh) that need no lab:
 *
 *   lab keys PROFILE [--dir DIR]  writes a throwaway lab key (hex, 0600, of the
 *                                 cipher's length, from OpenSSL's RAND_bytes) for
 *                                 each file-backend key reference that is missing;
 *                                 never prints a key
 *   lab links PROFILE             one line per link the probes can measure: the
 *                                 first MACsec VLAN with an address on both ends
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "cli.h"

#define LAB_MAX_HOSTS 8	 /* scripts/lab.sh MAX_HOSTS */
#define LAB_MAX_PORTS 16 /* scripts/lab.sh MAX_PORTS */
#define LAB_DEFAULT_MTU 1500
#define LAB_KEY_MAX 32 /* bytes: GCM-AES-256 */

/* The source tree's script and $FCTL_LAB_SCRIPT only for a fabricctl of the build tree. */
static const char *find_script(void)
{
	return cli_helper_path("FCTL_LAB_SCRIPT", FCTL_SOURCE_DIR "/scripts/lab.sh",
			       FCTL_DATADIR "/lab.sh", R_OK);
}

/* A NULL-terminated argv that grows; strings it owns are freed with it. */
struct argv_buf {
	char **v;
	size_t n, cap;
	bool oom;
};

static void av_push(struct argv_buf *a, char *s)
{
	if (!s) {
		a->oom = true;
		return;
	}
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		char **v = realloc(a->v, cap * sizeof(*v));

		if (!v) {
			a->oom = true;
			free(s);
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static void av_pushf(struct argv_buf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void av_pushf(struct argv_buf *a, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	av_push(a, s);
}

static void av_free(struct argv_buf *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

static int run_script(char **args)
{
	fflush(stdout);
	fflush(stderr);
	execv("/bin/bash", args);
	cli_err("lab: cannot run /bin/bash: %s", strerror(errno));
	return EXIT_USAGE;
}

/* One port of a host in the lab. */
struct lab_port {
	const struct fctl_port *pt;
	const struct fctl_link_end *end;  /* the link end at this port, NULL if none */
	const struct fctl_link_end *peer; /* the far end */
	char mac[18];			  /* "" = the lab's default */
};

struct lab_host {
	const struct fctl_host *h;
	size_t lab; /* 1-based lab index, 0 = not started */
	struct lab_port *ports;
};

/* Host names the guest can take and that lab.sh accepts as --name. */
static bool hostname_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

/* "h<digits>": the form of a lab id. */
static bool looks_like_lab_id(const char *s)
{
	if (s[0] != 'h' || !s[1])
		return false;
	for (const char *c = s + 1; *c; c++)
		if (!isdigit((unsigned char)*c))
			return false;
	return true;
}

static bool ifname_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 15 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return strcmp(s, "lo") != 0 && strncmp(s, "labtmp", 6) != 0;
}

/* Prints S quoted for a POSIX shell when it needs quoting. */
static void print_shell_word(const char *s)
{
	bool plain = *s != '\0';

	for (const char *c = s; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("_./:=,+@%-", *c))
			plain = false;
	if (plain) {
		fputs(s, stdout);
		return;
	}
	putchar('\'');
	for (const char *c = s; *c; c++) {
		if (*c == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*c);
	}
	putchar('\'');
}

static const char *const profile_owned[] = { "--wiring", "--hosts", "--mac", "--ifname", "--mtu",
					     "--name" };
/* lab.sh up options that take a value: the value is passed on unread. */
static const char *const with_value[] = { "--dir", "--mem", "--lifetime", "--boot-timeout",
					  "--mgmt-port" };

static bool in_list(const char *arg, const char *const *list, size_t n, bool prefix_eq)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(list[i]);

		if (strcmp(arg, list[i]) == 0 || (prefix_eq && strncmp(arg, list[i], l) == 0 &&
						  arg[l] == '='))
			return true;
	}
	return false;
}

/* Maps the profile onto lab hosts; fills hosts[] (p->n_hosts entries). */
static int map_profile(const struct fctl_profile *p, struct lab_host *hosts, size_t *n_lab)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_hosts; i++)
		hosts[i].h = &p->hosts[i];
	for (size_t l = 0; l < p->n_links; l++)
		for (int e = 0; e < 2; e++)
			if (p->links[l].end[e].host_idx >= 0)
				hosts[p->links[l].end[e].host_idx].lab = 1; /* mark: numbered below */
	for (size_t i = 0; i < p->n_hosts; i++)
		if (hosts[i].lab)
			hosts[i].lab = ++n;
	if (n == 0) {
		cli_err("lab: %s has no links: there is nothing to wire", p->file);
		return EXIT_USAGE;
	}
	if (n > LAB_MAX_HOSTS) {
		cli_err("lab: %s links %zu hosts; the lab runs at most %d (one VM each, ~512 MB "
			"of memory per host)",
			p->file, n, LAB_MAX_HOSTS);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < p->n_hosts; i++) {
		const struct fctl_host *h = hosts[i].h;
		char id[16];

		if (!hosts[i].lab)
			continue;
		snprintf(id, sizeof(id), "h%zu", hosts[i].lab);
		if (!hostname_ok(h->name)) {
			cli_err("lab: profile host '%s' cannot be a guest's hostname (1..63 of "
				"A-Z a-z 0-9 _ . -, starting with a letter or digit)",
				h->name);
			return EXIT_USAGE;
		}
		if (looks_like_lab_id(h->name) && strcmp(h->name, id) != 0) {
			cli_err("lab: profile host '%s' would be lab host %s (linked hosts are "
				"numbered in file order), and '%s' names another lab host; rename "
				"it or list the hosts in that order",
				h->name, id, h->name);
			return EXIT_USAGE;
		}
		if (h->n_ports > LAB_MAX_PORTS) {
			cli_err("lab: profile host '%s' has %zu ports; a lab host has at most %d NICs",
				h->name, h->n_ports, LAB_MAX_PORTS);
			return EXIT_USAGE;
		}
		for (size_t k = 0; k < h->n_ports; k++) {
			if (!ifname_ok(h->ports[k].name)) {
				cli_err("lab: port '%s' of host '%s' cannot be a guest NIC name (1..15 "
					"of A-Z a-z 0-9 _ . -)",
					h->ports[k].name, h->name);
				return EXIT_USAGE;
			}
		}
		hosts[i].ports = calloc(h->n_ports ? h->n_ports : 1, sizeof(*hosts[i].ports));
		if (!hosts[i].ports) {
			cli_err("lab: out of memory");
			return EXIT_USAGE;
		}
		for (size_t k = 0; k < h->n_ports; k++) {
			hosts[i].ports[k].pt = &h->ports[k];
			if (h->ports[k].has_mac)
				fctl_format_mac(h->ports[k].mac, hosts[i].ports[k].mac);
		}
	}
	for (size_t l = 0; l < p->n_links; l++) {
		for (int e = 0; e < 2; e++) {
			const struct fctl_link_end *end = &p->links[l].end[e];
			struct lab_port *lp = &hosts[end->host_idx].ports[end->port_idx];

			lp->end = end;
			lp->peer = &p->links[l].end[!e];
			/* The end's mac stands in for the port's (docs/profile.md). */
			if (!lp->mac[0] && end->has_peer_mac)
				fctl_format_mac(end->peer_mac, lp->mac);
		}
	}
	*n_lab = n;
	return EXIT_OK;
}

static void print_mapping(const struct fctl_profile *p, const struct lab_host *hosts, size_t n_lab)
{
	int w_prof = (int)strlen("profile host:port"), w_if = (int)strlen("guest NIC");
	bool renamed = false;
	const char *first = "h1";
	char buf[160];

	for (size_t i = 0; i < p->n_hosts; i++) {
		if (!hosts[i].lab)
			continue;
		for (size_t k = 0; k < hosts[i].h->n_ports; k++) {
			int l = snprintf(buf, sizeof(buf), "%s:%s", hosts[i].h->name,
					 hosts[i].h->ports[k].name);
			if (l > w_prof)
				w_prof = l;
			l = (int)strlen(hosts[i].h->ports[k].name);
			if (l > w_if)
				w_if = l;
		}
	}
	printf("lab: profile %s version %" PRIu64 " (%s): %zu host%s, %zu link%s\n", p->name,
	       p->version, p->file, n_lab, n_lab == 1 ? "" : "s", p->n_links,
	       p->n_links == 1 ? "" : "s");
	printf("  %-*s    %-8s  %-*s  %-17s  %-5s  %s\n", w_prof, "profile host:port", "lab NIC",
	       w_if, "guest NIC", "MAC", "MTU", "peer");
	for (size_t i = 0; i < p->n_hosts; i++) {
		const struct fctl_host *h = hosts[i].h;

		if (!hosts[i].lab)
			continue;
		for (size_t k = 0; k < h->n_ports; k++) {
			const struct lab_port *lp = &hosts[i].ports[k];
			char lab_nic[32], def_mac[18], peer[160];

			snprintf(buf, sizeof(buf), "%s:%s", h->name, lp->pt->name);
			snprintf(lab_nic, sizeof(lab_nic), "h%zu.eth%zu", hosts[i].lab, k);
			snprintf(def_mac, sizeof(def_mac), "52:54:00:fa:%02zx:%02zx", hosts[i].lab, k);
			if (lp->peer)
				snprintf(peer, sizeof(peer), "%s:%s", lp->peer->host, lp->peer->port);
			else
				snprintf(peer, sizeof(peer), "(unconnected)");
			printf("  %-*s -> %-8s  %-*s  %-17s  %-5" PRIu32 "  %s\n", w_prof, buf, lab_nic,
			       w_if, lp->pt->name, lp->mac[0] ? lp->mac : def_mac, lp->pt->mtu, peer);
			snprintf(buf, sizeof(buf), "eth%zu", k);
			if (strcmp(buf, lp->pt->name) != 0)
				renamed = true;
		}
	}
	for (size_t i = p->n_hosts; i-- > 0;)
		if (hosts[i].lab)
			first = hosts[i].h->name;
	for (size_t i = 0; i < p->n_hosts; i++)
		if (!hosts[i].lab)
			printf("lab: note: profile host '%s' is an end of no link: not started\n",
			       hosts[i].h->name);
	printf("lab: guest hostnames are the profile's host names: 'fabricctl apply %s' inside "
	       "a guest finds its host without --host",
	       p->file);
	if (strcmp(first, "h1") != 0)
		printf("; 'lab exec' takes either name (%s or h1)", first);
	printf("\n");
	if (renamed)
		printf("lab: note: profile port names differ from the lab NIC names (ethK): each "
		       "guest NIC is renamed after its profile port (--ifname), so the profile "
		       "applies unchanged; 'lab status' shows both names\n");
}

/*
 * Reads lab up's arguments after "lab" "up": --profile FILE into *file, --dry-run into
 * *dry_run, everything else (with its value, if it takes one) into pass for lab.sh.
 * Returns EXIT_OK, or EXIT_USAGE after saying why.
 */
static int parse_up_args(int argc, char **argv, const char **file, bool *dry_run,
			 struct argv_buf *pass)
{
	for (int a = 2; a < argc; a++) {
		if (strcmp(argv[a], "--profile") == 0) {
			if (a + 1 >= argc) {
				cli_err("lab up: --profile needs a file");
				return EXIT_USAGE;
			}
			if (*file) {
				cli_err("lab up: --profile given twice");
				return EXIT_USAGE;
			}
			*file = argv[++a];
		} else if (strncmp(argv[a], "--profile=", 10) == 0) {
			if (*file) {
				cli_err("lab up: --profile given twice");
				return EXIT_USAGE;
			}
			*file = argv[a] + 10;
		} else if (strcmp(argv[a], "--dry-run") == 0) {
			*dry_run = true;
		} else if (in_list(argv[a], profile_owned, FCTL_ARRAY_SIZE(profile_owned), true)) {
			cli_err("lab up: %s cannot be combined with --profile: the profile decides the "
				"hosts, wiring, MACs, NIC names, MTUs and host names",
				argv[a]);
			return EXIT_USAGE;
		} else {
			av_push(pass, strdup(argv[a]));
			if (in_list(argv[a], with_value, FCTL_ARRAY_SIZE(with_value), false) &&
			    a + 1 < argc)
				av_push(pass, strdup(argv[++a]));
		}
	}
	if (!*file || !**file) {
		cli_err("lab up: --profile needs a file");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/*
 * Pushes --wiring: every port of every lab host, linked (once) or alone.
 * Returns EXIT_OK, or EXIT_USAGE after saying why.
 */
static int push_wiring(struct argv_buf *args, const struct fctl_profile *p,
		       const struct lab_host *hosts)
{
	char *spec = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&spec, &len);

	if (!f) {
		cli_err("lab: out of memory");
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < p->n_hosts; i++) {
		for (size_t k = 0; hosts[i].lab && k < hosts[i].h->n_ports; k++) {
			const struct lab_port *lp = &hosts[i].ports[k];

			if (lp->peer && lp->end > lp->peer)
				continue; /* the link is written from its "a" end */
			fprintf(f, "%sh%zu.eth%zu", ftell(f) ? "," : "", hosts[i].lab, k);
			if (lp->peer)
				fprintf(f, "=h%zu.eth%ld", hosts[lp->peer->host_idx].lab,
					lp->peer->port_idx);
		}
	}
	if (fclose(f) != 0 || !spec) {
		free(spec);
		cli_err("lab: out of memory");
		return EXIT_USAGE;
	}
	av_push(args, strdup("--wiring"));
	av_push(args, spec);
	return EXIT_OK;
}

/* Pushes --name, --mac, --ifname and --mtu for what differs from the lab's defaults. */
static void push_host_options(struct argv_buf *args, const struct fctl_profile *p,
			      const struct lab_host *hosts)
{
	for (size_t i = 0; i < p->n_hosts; i++) {
		if (!hosts[i].lab)
			continue;
		if (!looks_like_lab_id(hosts[i].h->name)) { /* else it is its own id */
			av_push(args, strdup("--name"));
			av_pushf(args, "h%zu=%s", hosts[i].lab, hosts[i].h->name);
		}
		for (size_t k = 0; k < hosts[i].h->n_ports; k++) {
			const struct lab_port *lp = &hosts[i].ports[k];
			char eth[24];

			snprintf(eth, sizeof(eth), "eth%zu", k);
			if (lp->mac[0]) {
				av_push(args, strdup("--mac"));
				av_pushf(args, "h%zu.eth%zu=%s", hosts[i].lab, k, lp->mac);
			}
			if (strcmp(lp->pt->name, eth) != 0) {
				av_push(args, strdup("--ifname"));
				av_pushf(args, "h%zu.eth%zu=%s", hosts[i].lab, k, lp->pt->name);
			}
			if (lp->pt->mtu != LAB_DEFAULT_MTU) {
				av_push(args, strdup("--mtu"));
				av_pushf(args, "h%zu.eth%zu=%" PRIu32, hosts[i].lab, k, lp->pt->mtu);
			}
		}
	}
}

/* --dry-run: the command line lab.sh would get, quoted for a shell. */
static void print_would_run(const struct argv_buf *args)
{
	printf("lab: would run:");
	for (size_t i = 0; i < args->n; i++) {
		putchar(' ');
		print_shell_word(args->v[i]);
	}
	putchar('\n');
}

static int lab_up_profile(const char *script, int argc, char **argv)
{
	const char *file = NULL;
	bool dry_run = false;
	struct argv_buf pass = { 0 }, args = { 0 };
	struct fctl_profile *p = NULL;
	struct lab_host *hosts = NULL;
	size_t n_lab = 0;
	int rc;

	/* argv: "lab" "up" ... */
	rc = parse_up_args(argc, argv, &file, &dry_run, &pass);
	if (rc != EXIT_OK)
		goto out;
	rc = cli_load_valid_profile(file, &p, true);
	if (rc != EXIT_OK)
		goto out;
	rc = EXIT_USAGE;
	hosts = calloc(p->n_hosts ? p->n_hosts : 1, sizeof(*hosts));
	if (!hosts) {
		cli_err("lab: out of memory");
		goto out;
	}
	rc = map_profile(p, hosts, &n_lab);
	if (rc != EXIT_OK)
		goto out;
	rc = EXIT_USAGE;

	av_push(&args, strdup("bash"));
	av_push(&args, strdup(script));
	av_push(&args, strdup("up"));
	if (push_wiring(&args, p, hosts) != EXIT_OK)
		goto out;
	push_host_options(&args, p, hosts);
	for (size_t i = 0; i < pass.n; i++)
		av_push(&args, strdup(pass.v[i]));
	if (args.oom || pass.oom) {
		cli_err("lab: out of memory");
		goto out;
	}

	print_mapping(p, hosts, n_lab);
	if (dry_run) {
		print_would_run(&args);
		rc = EXIT_OK;
		goto out;
	}
	rc = run_script(args.v);
out:
	if (hosts)
		for (size_t i = 0; p && i < p->n_hosts; i++)
			free(hosts[i].ports);
	free(hosts);
	fctl_profile_free(p);
	av_free(&pass);
	av_free(&args);
	return rc;
}

/* --- lab keys: throwaway keys for a lab run ------------------------------- */

/* 1 written, 0 kept (exists with the right length), < 0 error (said) */
static int lab_key_one(const char *path, size_t len, const char *cipher, const char *policy)
{
	uint8_t key[LAB_KEY_MAX];
	char hex[2 * LAB_KEY_MAX + 2];
	struct stat st;
	int fd, r = 0;

	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode) || (st.st_mode & 077) ||
		    (st.st_size != (off_t)(2 * len) && st.st_size != (off_t)(2 * len + 1))) {
			cli_err("lab keys: '%s' (policy %s) exists but is not a %zu-hex-digit file of "
				"mode 0600 as %s needs; not touching it",
				path, policy, 2 * len, cipher);
			return -EEXIST;
		}
		printf("lab keys: %s exists (policy %s, %s): kept\n", path, policy, cipher);
		return 0;
	}
	if (fctl_mkdir_parents(path, 0700) < 0) {
		cli_err("lab keys: cannot create the directory of '%s': %s", path, strerror(errno));
		return -EIO;
	}
	if (len > sizeof(key) || RAND_bytes(key, (int)len) != 1) {
		cli_err("lab keys: no random bytes from OpenSSL");
		return -EIO;
	}
	fctl_format_hex(key, len, hex);
	hex[2 * len] = '\n';
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
	} else {
		if (fchmod(fd, 0600) < 0 || write(fd, hex, 2 * len + 1) != (ssize_t)(2 * len + 1) ||
		    fsync(fd) < 0)
			r = errno ? -errno : -EIO;
		close(fd);
		if (r < 0)
			unlink(path);
	}
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(hex, sizeof(hex));
	if (r < 0) {
		cli_err("lab keys: cannot write '%s': %s", path, strerror(-r));
		return r;
	}
	printf("lab keys: wrote %s (policy %s, %s, %zu bytes, mode 0600): a throwaway LAB-ONLY "
	       "key, never use it outside the lab\n",
	       path, policy, cipher, len);
	return 1;
}

static int lab_keys(int argc, char **argv)
{
	const char *file = NULL, *dir = NULL;
	struct fctl_profile *p = NULL;
	size_t written = 0;
	int rc;

	/* argv: "lab" "keys" ... */
	for (int a = 2; a < argc; a++) {
		if (strcmp(argv[a], "--dir") == 0 && a + 1 < argc)
			dir = argv[++a];
		else if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
			printf("usage: fabricctl lab keys PROFILE [--dir DIR]\n"
			       "  writes a throwaway lab key for every file-backend key reference of\n"
			       "  PROFILE that is missing (relative ids resolve against DIR, default the\n"
			       "  profile's directory); existing keys are kept\n");
			return EXIT_OK;
		} else if (argv[a][0] == '-' || file) {
			cli_err("lab keys: usage: fabricctl lab keys PROFILE [--dir DIR]");
			return EXIT_USAGE;
		} else
			file = argv[a];
	}
	if (!file) {
		cli_err("lab keys: usage: fabricctl lab keys PROFILE [--dir DIR]");
		return EXIT_USAGE;
	}
	/* key files are checked (and missing ones reported) by validation: load only */
	{
		struct fctl_diags d = { 0 };
		int r = fctl_profile_load(file, &d, &p);

		if (r < 0 || !p || d.n_errors) {
			struct fctl_buf b = { 0 };

			fctl_diags_to_text(&d, &b, false);
			cli_write(stderr, &b);
			fctl_buf_release(&b);
			fctl_diags_release(&d);
			fctl_profile_free(p);
			cli_err("lab keys: %s cannot be read as a profile", file);
			return r < 0 && !p ? EXIT_USAGE : EXIT_INVALID;
		}
		fctl_diags_release(&d);
	}
	if (!dir)
		dir = p->dir && *p->dir ? p->dir : ".";
	rc = EXIT_OK;
	for (size_t i = 0; i < p->n_policies; i++) {
		const struct fctl_macsec_policy *pol = &p->policies[i];
		char path[PATH_MAX];
		int r;

		if (!pol->key.backend || strcmp(pol->key.backend, "file") != 0 || !pol->key.id) {
			printf("lab keys: policy %s: backend '%s' is not a file: nothing to do\n",
			       pol->name ? pol->name : "?", pol->key.backend ? pol->key.backend : "?");
			continue;
		}
		if (pol->key.id[0] == '/') {
			if (access(pol->key.id, F_OK) == 0) {
				printf("lab keys: %s exists (policy %s): kept\n", pol->key.id, pol->name);
				continue;
			}
			cli_err("lab keys: policy %s names the absolute key file '%s', which is missing: "
				"lab keys only writes under '%s' (use a relative id)",
				pol->name, pol->key.id, dir);
			rc = EXIT_INVALID;
			continue;
		}
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, pol->key.id) >= sizeof(path)) {
			cli_err("lab keys: key path too long");
			rc = EXIT_USAGE;
			continue;
		}
		r = lab_key_one(path, fctl_cipher_key_len(pol->cipher), fctl_cipher_name(pol->cipher),
				pol->name);
		if (r < 0)
			rc = EXIT_INVALID;
		else
			written += (size_t)r;
	}
	if (written)
		printf("lab keys: %zu LAB-ONLY key%s written: they protect nothing real; delete them "
		       "after the lab run\n",
		       written, written == 1 ? "" : "s");
	fctl_profile_free(p);
	return rc;
}

/* --- lab links: what the probes measure ------------------------------------ */

/* The first IPv4 address (else any) of host on v, without its prefix length. */
static bool vlan_addr(const struct fctl_vlan *v, const char *host, char *out, size_t len)
{
	const char *best = NULL;

	for (size_t i = 0; i < v->n_addrs; i++) {
		if (!v->addrs[i].host || !v->addrs[i].cidr || strcmp(v->addrs[i].host, host) != 0)
			continue;
		if (!best || (strchr(best, ':') && !strchr(v->addrs[i].cidr, ':')))
			best = v->addrs[i].cidr;
	}
	if (!best)
		return false;
	snprintf(out, len, "%.*s", (int)strcspn(best, "/"), best);
	return true;
}

static int lab_links(int argc, char **argv)
{
	struct fctl_profile *p = NULL;
	const char *file = argc == 3 ? argv[2] : NULL;
	int rc;

	if (!file || file[0] == '-') {
		printf("usage: fabricctl lab links PROFILE\n"
		       "  one tab-separated line per link the probes can measure: LINK A_HOST\n"
		       "  A_MACSEC_IFNAME A_ADDR B_HOST B_MACSEC_IFNAME B_ADDR VLAN (the link's\n"
		       "  first MACsec VLAN with an address on both ends)\n");
		return file ? EXIT_OK : EXIT_USAGE;
	}
	rc = cli_load_valid_profile(file, &p, true);
	if (rc != EXIT_OK)
		return rc;
	for (size_t l = 0; l < p->n_links; l++) {
		const struct fctl_plink *lk = &p->links[l];
		bool found = false;

		for (size_t k = 0; k < lk->n_vlans && !found; k++) {
			const struct fctl_vlan *v = &lk->vlans[k];
			char addr[2][64], vif[FCTL_IFNAMSIZ + 8], mif[2][FCTL_IFNAMSIZ + 8];

			if (!v->macsec && !lk->macsec)
				continue;
			if (!vlan_addr(v, lk->end[0].host, addr[0], sizeof(addr[0])) ||
			    !vlan_addr(v, lk->end[1].host, addr[1], sizeof(addr[1])))
				continue;
			fctl_vlan_ifnames(v, lk->end[0].port, vif, mif[0]);
			fctl_vlan_ifnames(v, lk->end[1].port, vif, mif[1]);
			printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%u\n", lk->name, lk->end[0].host, mif[0],
			       addr[0], lk->end[1].host, mif[1], addr[1], v->id);
			found = true;
		}
		if (!found)
			cli_err("lab links: link %s has no MACsec VLAN with an address on both ends: "
				"the probes cannot measure it",
				lk->name);
	}
	fctl_profile_free(p);
	return EXIT_OK;
}

int cmd_lab(int argc, char **argv)
{
	static char bash[] = "bash";
	const char *script = find_script();
	char **args;

	if (argc >= 2 && strcmp(argv[1], "keys") == 0)
		return lab_keys(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "links") == 0)
		return lab_links(argc, argv);
	if (!script) {
		cli_helper_missing("lab", "lab.sh", "FCTL_LAB_SCRIPT", FCTL_SOURCE_DIR "/scripts/lab.sh",
				   FCTL_DATADIR "/lab.sh");
		return EXIT_USAGE;
	}
	/* lab.sh's usage and messages name what the user typed, not the script */
	setenv("FCTL_LAB_PROG", "fabricctl lab", 1);
	if (argc >= 2 && strcmp(argv[1], "up") == 0) {
		for (int a = 2; a < argc; a++) {
			if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0)
				break; /* lab.sh prints the help of up */
			if (strcmp(argv[a], "--profile") == 0 ||
			    strncmp(argv[a], "--profile=", 10) == 0)
				return lab_up_profile(script, argc, argv);
			/* the value of --dir etc. is not an option */
			if (in_list(argv[a], with_value, FCTL_ARRAY_SIZE(with_value), false))
				a++;
		}
	}
	args = calloc((size_t)argc + 2, sizeof(*args));
	if (!args)
		return EXIT_USAGE;
	args[0] = bash;
	args[1] = (char *)(uintptr_t)script; /* execv's argv is not const, but is not written */
	for (int a = 1; a < argc; a++)
		args[a + 1] = argv[a];
	run_script(args);
	free(args);
	return EXIT_USAGE;
}
