// SPDX-License-Identifier: MIT
/* MKA in show: the KaY state of the MKA ports fabricctl runs (an apply's start-up is the
 * host transaction's, libfctl/host/host_mka.c). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fctl/engine.h"
#include "fctl/engine_kernel.h"
#include "fctl/mka_host.h"
#include "fctl/mka_rotate.h"

/* The SA MKA installed: encoding AN and the key number of its KEYID (MI || KN, the KN in
 * wpa_supplicant's host byte order). */
static void secy_part(struct fctl_nl *nl, const char *ifname, uint16_t sci_port,
		      struct fctl_buf *o, bool json)
{
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *secy = NULL;
	const struct fctl_sa *sa;
	uint32_t kn = 0;

	if (!nl || fctl_mka_find_secy(nl, "show", ifname, sci_port, &hs, &secy) < 0) {
		fctl_buf_puts(o, json ? ",\"secy\":null" : "#   secy: none (no MACsec device: "
							   "no traffic)\n");
		return;
	}
	sa = &secy->macsec.txsa[secy->macsec.encoding_sa & 3];
	if (sa->present && sa->has_keyid)
		memcpy(&kn, sa->keyid + 12, 4);
	if (json) {
		fctl_buf_puts(o, ",\"secy\":");
		fctl_buf_json_str(o, secy->name);
		fctl_buf_printf(o, ",\"cipher\":\"%s\",\"encrypt\":%s,\"an\":%u,\"tx_sa\":%s,"
				"\"key_number\":%u",
				fctl_cipher_name(secy->macsec.cipher),
				secy->macsec.encrypt ? "true" : "false", secy->macsec.encoding_sa,
				sa->present ? "true" : "false", kn);
	} else {
		fctl_buf_printf(o, "#   secy: %s, cipher %s, encrypt %s, an %u, key number %u%s\n",
				secy->name, fctl_cipher_name(secy->macsec.cipher),
				secy->macsec.encrypt ? "on" : "off", secy->macsec.encoding_sa, kn,
				sa->present ? "" : " (no SAK installed: no traffic)");
	}
	fctl_host_state_free(hs);
}

static void port_text(const char *ifname, const struct fctl_mka_status *s, struct fctl_buf *o)
{
	fctl_buf_printf(o, "# mka %s: kay %s, %s, ckn %s, key server %s%s (priority %u), "
			"live peers %u, potential peers %u\n",
			ifname, s->kay[0] ? s->kay : "?",
			s->secured ? "secured" : "NOT secured (no traffic)", s->ckn[0] ? s->ckn : "-",
			s->key_server_sci[0] ? s->key_server_sci : "none",
			s->is_key_server ? " (this end)" : "", s->key_server_priority,
			s->live_peers, s->potential_peers);
	for (size_t i = 0; i < s->n_peers; i++)
		fctl_buf_printf(o, "#   peer %s (%s)\n", s->peers[i].sci,
				s->peers[i].live ? "live" : "potential");
}

/* One CA: the current one of port (run_dir NULL) or a rotation's incoming one. */
static void show_ca(struct fctl_nl *nl, const char *port, const char *run_dir,
		    struct fctl_buf *o, bool json)
{
	struct fctl_mka_status s;
	char err[512], line[512];
	uint16_t sci = 0;
	int r = fctl_mka_status_read(port, run_dir, &s, err, sizeof(err));

	if (fctl_mka_settings_read(port, run_dir, line, &sci) < 0)
		sci = 0; /* not one fabricctl configured: its first SecY */
	if (json) {
		if (r < 0) {
			fctl_buf_puts(o, "{\"port\":");
			fctl_buf_json_str(o, port);
			fctl_buf_puts(o, ",\"error\":");
			fctl_buf_json_str(o, err);
		} else {
			fctl_mka_status_to_json(port, &s, o);
			o->len--; /* reopen the object for the SecY part */
			secy_part(nl, port, sci, o, true);
		}
		fctl_buf_printf(o, ",\"ca\":\"%s\"}", run_dir ? "incoming" : "current");
		return;
	}
	if (run_dir)
		fctl_buf_printf(o, "# mka %s: CAK rotation under way, the incoming CA (SCI port %u) "
				"below; the current one carries the traffic until it is secured\n",
				port, sci);
	if (r < 0) {
		fctl_buf_printf(o, "# mka %s: %s (no traffic: the SecY needs MKA)\n", port, err);
		return;
	}
	port_text(port, &s, o);
	secy_part(nl, port, sci, o, false);
}

/* By port, then the current CA before the incoming one. */
static int cmp_name(const void *a, const void *b)
{
	char pa[NAME_MAX + 1], pb[NAME_MAX + 1];
	int ka = fctl_mka_dir_name(*(char *const *)a, pa, sizeof(pa), NULL);
	int kb = fctl_mka_dir_name(*(char *const *)b, pb, sizeof(pb), NULL);
	int c = strcmp(pa, pb);

	return c ? c : ka - kb;
}

/* Every wpa_supplicant fabricctl runs (one directory per port under the run directory,
 * IFNAME:N for a rotation's incoming CA): YAML comments (the show output still
 * validates), or "mka":[...] for --json, "ca" saying which is which. */
int cli_mka_show(const char *netns, struct fctl_buf *o, bool json)
{
	struct fctl_nl *nl = NULL;
	struct dirent *de;
	DIR *d = opendir(FCTL_MKA_RUN_DIR);
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (json)
		fctl_buf_puts(o, "[");
	/* sorted: a port's current CA ("IF") before its incoming one ("IF:N") */
	while (d && (de = readdir(d))) {
		char port[NAME_MAX + 1], **nn;

		if (de->d_name[0] == '.' || fctl_mka_dir_name(de->d_name, port, sizeof(port), NULL) < 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn)
				break;
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	if (d)
		closedir(d);
	if (n && fctl_nl_open(netns, &nl) < 0)
		nl = NULL;
	if (n)
		qsort(names, n, sizeof(*names), cmp_name);
	for (size_t i = 0; i < n; i++) {
		char port[NAME_MAX + 1], dir[PATH_MAX + NAME_MAX + 2];
		int kind = fctl_mka_dir_name(names[i], port, sizeof(port), NULL);

		snprintf(dir, sizeof(dir), "%s/%s", FCTL_MKA_RUN_DIR, names[i]);
		if (json)
			fctl_buf_puts(o, i ? "," : "");
		show_ca(nl, port, kind == 1 ? dir : NULL, o, json);
		free(names[i]);
	}
	free(names);
	fctl_nl_close(nl);
	if (json)
		fctl_buf_puts(o, "]");
	return 0;
}
