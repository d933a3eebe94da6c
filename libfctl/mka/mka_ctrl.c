// SPDX-License-Identifier: MIT
/* wpa_supplicant's control interface: one datagram request, one reply; STATUS/MIB parsing. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fctl/mka.h"

void fctl_mka_run_dir(const char *ifname, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s/%s", FCTL_MKA_RUN_DIR, ifname);
}

void fctl_mka_ctrl_path(const char *ifname, const char *run_dir, char *out, size_t outlen)
{
	if (run_dir)
		snprintf(out, outlen, "%s/ctrl/%s", run_dir, ifname);
	else
		snprintf(out, outlen, "%s/%s/ctrl/%s", FCTL_MKA_RUN_DIR, ifname, ifname);
}

int fctl_mka_ctrl_request(const char *path, const char *cmd, char *reply, size_t replylen,
			  int timeout_ms)
{
	static unsigned counter;
	struct sockaddr_un dst = { .sun_family = AF_UNIX }, me = { .sun_family = AF_UNIX };
	socklen_t melen;
	struct pollfd pfd;
	ssize_t n;
	int fd, r;

	if (!path || !cmd || !reply || replylen < 2 || strlen(path) >= sizeof(dst.sun_path))
		return -EINVAL;
	memcpy(dst.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* the reply comes back to our address: an abstract one leaves no file behind */
	n = snprintf(me.sun_path + 1, sizeof(me.sun_path) - 1, "fctl-mka-%ld-%u", (long)getpid(),
		     __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
	melen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	if (bind(fd, (struct sockaddr *)&me, melen) < 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (send(fd, cmd, strlen(cmd), 0) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	for (;;) {
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		r = poll(&pfd, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			close(fd);
			return r == 0 ? -ETIMEDOUT : -errno;
		}
		n = recv(fd, reply, replylen - 1, 0);
		if (n < 0) {
			r = -errno;
			close(fd);
			return r;
		}
		/* unsolicited event messages start with '<' (we never ATTACH, but be sure) */
		if (n > 0 && reply[0] == '<')
			continue;
		break;
	}
	close(fd);
	reply[n] = '\0';
	return (int)n;
}

static void copy(char *dst, size_t len, const char *v)
{
	snprintf(dst, len, "%s", v);
}

static unsigned num(const char *v)
{
	return (unsigned)strtoul(v, NULL, 10);
}

static bool yes(const char *v)
{
	return strcmp(v, "Yes") == 0 || strcmp(v, "true") == 0;
}

/* One KEY=VALUE line of STATUS. The KaY part uses both "Is Key Server" (the KaY's own
 * view) and is_key_server (the participant's); the participant's is the one that counts. */
static void status_line(struct fctl_mka_status *s, const char *k, const char *v)
{
	if (strcmp(k, "PAE KaY status") == 0)
		copy(s->kay, sizeof(s->kay), v);
	else if (strcmp(k, "wpa_state") == 0)
		copy(s->wpa_state, sizeof(s->wpa_state), v);
	else if (strcmp(k, "Secured") == 0)
		s->secured = yes(v);
	else if (strcmp(k, "Failed") == 0)
		s->failed = yes(v);
	else if (strcmp(k, "Actor Priority") == 0)
		s->actor_priority = num(v);
	else if (strcmp(k, "Key Server Priority") == 0)
		s->key_server_priority = num(v);
	else if (strcmp(k, "Number of Keys Distributed") == 0)
		s->keys_distributed = num(v);
	else if (strcmp(k, "Number of Keys Received") == 0)
		s->keys_received = num(v);
	else if (strcmp(k, "actor_sci") == 0)
		copy(s->actor_sci, sizeof(s->actor_sci), v);
	else if (strcmp(k, "key_server_sci") == 0)
		copy(s->key_server_sci, sizeof(s->key_server_sci), v);
	else if (strcmp(k, "ckn") == 0)
		copy(s->ckn, sizeof(s->ckn), v);
	else if (strcmp(k, "live_peers") == 0)
		s->live_peers = num(v);
	else if (strcmp(k, "potential_peers") == 0)
		s->potential_peers = num(v);
	else if (strcmp(k, "is_key_server") == 0)
		s->is_key_server = yes(v);
}

/* MIB: each peer is a group of ieee8021XKayMkaPeerList{MI,MN,Type,SCI} lines; Type 1 is
 * a live peer, 2 a potential one (hostap's ieee802_1x_kay.c). */
static void mib_line(struct fctl_mka_status *s, const char *k, const char *v, int *type)
{
	if (strcmp(k, "ieee8021XKayMkaPeerListType") == 0) {
		*type = (int)num(v);
	} else if (strcmp(k, "ieee8021XKayMkaPeerListSCI") == 0 &&
		   s->n_peers < FCTL_MKA_MAX_PEERS) {
		copy(s->peers[s->n_peers].sci, sizeof(s->peers[0].sci), v);
		s->peers[s->n_peers].live = *type == 1;
		s->n_peers++;
		*type = 0;
	}
}

static void each_line(const char *text, struct fctl_mka_status *s, bool mib)
{
	char line[512], *eq;
	int type = 0;

	while (text && *text) {
		size_t n = strcspn(text, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1),
			 text);
		text += n + (text[n] == '\n');
		eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		if (mib)
			mib_line(s, line, eq + 1, &type);
		else
			status_line(s, line, eq + 1);
	}
}

void fctl_mka_status_parse(const char *status, const char *mib, struct fctl_mka_status *out)
{
	memset(out, 0, sizeof(*out));
	each_line(status, out, false);
	each_line(mib, out, true);
}

int fctl_mka_status_read(const char *ifname, const char *run_dir, struct fctl_mka_status *out,
			 char *err, size_t errlen)
{
	char path[4200], status[4096], mib[8192];
	int r;

	fctl_mka_ctrl_path(ifname, run_dir, path, sizeof(path));
	r = fctl_mka_ctrl_request(path, "STATUS", status, sizeof(status), 2000);
	if (r >= 0)
		r = fctl_mka_ctrl_request(path, "MIB", mib, sizeof(mib), 2000);
	if (r < 0) {
		snprintf(err, errlen, "wpa_supplicant of %s: control socket %s: %s", ifname, path,
			 strerror(-r));
		return r;
	}
	fctl_mka_status_parse(status, mib, out);
	return 0;
}

void fctl_mka_status_to_json(const char *ifname, const struct fctl_mka_status *s,
			     struct fctl_buf *o)
{
	fctl_buf_puts(o, "{\"port\":");
	fctl_buf_json_str(o, ifname);
	fctl_buf_puts(o, ",\"kay\":");
	fctl_buf_json_str(o, s->kay);
	fctl_buf_puts(o, ",\"wpa_state\":");
	fctl_buf_json_str(o, s->wpa_state);
	fctl_buf_printf(o, ",\"secured\":%s,\"failed\":%s,\"is_key_server\":%s",
			s->secured ? "true" : "false", s->failed ? "true" : "false",
			s->is_key_server ? "true" : "false");
	fctl_buf_puts(o, ",\"ckn\":");
	fctl_buf_json_str(o, s->ckn);
	fctl_buf_puts(o, ",\"actor_sci\":");
	fctl_buf_json_str(o, s->actor_sci);
	fctl_buf_puts(o, ",\"key_server_sci\":");
	fctl_buf_json_str(o, s->key_server_sci);
	fctl_buf_printf(o, ",\"actor_priority\":%u,\"key_server_priority\":%u,\"live_peers\":%u,"
			"\"potential_peers\":%u,\"keys_distributed\":%u,\"keys_received\":%u,"
			"\"peers\":[",
			s->actor_priority, s->key_server_priority, s->live_peers,
			s->potential_peers, s->keys_distributed, s->keys_received);
	for (size_t i = 0; i < s->n_peers; i++) {
		fctl_buf_puts(o, i ? ",{\"sci\":" : "{\"sci\":");
		fctl_buf_json_str(o, s->peers[i].sci);
		fctl_buf_printf(o, ",\"live\":%s}", s->peers[i].live ? "true" : "false");
	}
	fctl_buf_puts(o, "]}");
}

bool fctl_mka_secured(const char *ifname, const char *run_dir)
{
	struct fctl_mka_status ks;
	char err[256];

	return fctl_mka_status_read(ifname, run_dir, &ks, err, sizeof(err)) == 0 && ks.secured &&
	       ks.live_peers > 0;
}
