// SPDX-License-Identifier: MIT
/*
 * One end of a fabric probe (docs/probes.md, "The whole fabric"): the RDMA device and GID
 * that belong to a MACsec interface (never one on its cleartext carrier), and the path MTU
 * towards the peer with don't-fragment ICMP echoes.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "prog.h"

#define IB_SYS "/sys/class/infiniband"

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -ENODATA;
	}
	fclose(f);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

struct gid_hit {
	char dev[64];
	int index;
	char gid[48];
	bool v2_ipv4;
};

/* The first GID of port ib_port of any device whose network device is ifname: a RoCE v2
 * IPv4-mapped one when there is one, else any. 1 found, 0 none. */
static int gid_on(const char *ifname, uint8_t ib_port, struct gid_hit *out)
{
	DIR *d = opendir(IB_SYS);
	struct dirent *e;
	bool found = false;

	if (!d)
		return 0;
	while ((e = readdir(d)) && !(found && out->v2_ipv4)) {
		char p[512], v[64], type[32];

		if (e->d_name[0] == '.')
			continue;
		for (int i = 0; i < 256; i++) {
			snprintf(p, sizeof(p), IB_SYS "/%s/ports/%u/gid_attrs/ndevs/%d", e->d_name,
				 ib_port, i);
			if (read_line(p, v, sizeof(v)) < 0 || strcmp(v, ifname) != 0)
				continue;
			snprintf(p, sizeof(p), IB_SYS "/%s/ports/%u/gid_attrs/types/%d", e->d_name,
				 ib_port, i);
			if (read_line(p, type, sizeof(type)) < 0)
				type[0] = '\0';
			snprintf(p, sizeof(p), IB_SYS "/%s/ports/%u/gids/%d", e->d_name, ib_port, i);
			if (read_line(p, v, sizeof(v)) < 0)
				continue;
			bool good = strcmp(type, "RoCE v2") == 0 &&
				    strncmp(v, "0000:0000:0000:0000:0000:ffff:", 30) == 0;
			if (!found || (good && !out->v2_ipv4)) {
				snprintf(out->dev, sizeof(out->dev), "%s", e->d_name);
				out->index = i;
				snprintf(out->gid, sizeof(out->gid), "%s", v);
				out->v2_ipv4 = good;
				found = true;
			}
			if (good)
				break;
		}
	}
	closedir(d);
	return found;
}

/* The device under ifname (a VLAN under a SecY, a port under a VLAN): "" when none. */
static void lower_of(const char *ifname, char out[IF_NAMESIZE + 1])
{
	char p[300];
	DIR *d;
	struct dirent *e;

	out[0] = '\0';
	snprintf(p, sizeof(p), "/sys/class/net/%s", ifname);
	d = opendir(p);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, "lower_", 6) == 0 && strlen(e->d_name + 6) <= IF_NAMESIZE) {
			snprintf(out, IF_NAMESIZE + 1, "%s", e->d_name + 6);
			break;
		}
	closedir(d);
}

/* The GID the interface's own IPv4 address would have ("none" without one). */
static void own_gid(const char *ifname, char *out, size_t len)
{
	struct ifaddrs *ifa = NULL;

	snprintf(out, len, "none (no IPv4 address on %s)", ifname);
	if (getifaddrs(&ifa) < 0)
		return;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		char a[INET_ADDRSTRLEN];

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    strcmp(i->ifa_name, ifname) != 0)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, a,
			  sizeof(a));
		snprintf(out, len, "::ffff:%s", a);
		break;
	}
	freeifaddrs(ifa);
}

int probe_netdev_pick(const char *ifname, struct fctl_rdma_opts *o, char *err, size_t errlen)
{
	static char dev[64];
	struct gid_hit h = { 0 };
	char cur[IF_NAMESIZE + 1], low[IF_NAMESIZE + 1], mine[80];
	uint8_t port = o->ib_port ? o->ib_port : 1;

	if (gid_on(ifname, port, &h)) {
		if (o->dev && strcmp(o->dev, h.dev) != 0) {
			snprintf(err, errlen, "the GID of %s is on device %s, not on --dev %s",
				 ifname, h.dev, o->dev);
			return -ENODEV;
		}
		snprintf(dev, sizeof(dev), "%s", h.dev);
		o->dev = dev;
		o->gid_index = h.index;
		return 0;
	}
	own_gid(ifname, mine, sizeof(mine));
	snprintf(cur, sizeof(cur), "%s", ifname);
	for (int depth = 0; depth < 4; depth++) {
		lower_of(cur, low);
		if (!low[0])
			break;
		if (gid_on(low, port, &h)) {
			snprintf(err, errlen,
				 "no RDMA GID on %s (its GID would be %s); device %s port %u GID %d "
				 "%s is on %s, the cleartext carrier of %s: RDMA there would not be "
				 "encrypted", ifname, mine, h.dev, port, h.index, h.gid, low, ifname);
			return -EPERM;
		}
		snprintf(cur, sizeof(cur), "%s", low);
	}
	snprintf(err, errlen, "no RDMA device on %s (GID %s): create one on it, e.g. 'rdma link "
		 "add rxe_%s type rxe netdev %s'", ifname, mine, ifname, ifname);
	return -ENODEV;
}

static uint16_t csum(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		s += (uint32_t)(p[len - 1] << 8);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One echo of `size` bytes of IP packet with DF, its answer awaited wait_ms: 1 answered,
 * 0 not (dropped), -EMSGSIZE too big for this end, another negative errno when it could
 * not be sent. */
static int echo(int fd, const struct sockaddr_in *to, unsigned size, uint16_t id, uint16_t seq,
		int wait_ms)
{
	static uint8_t pkt[65536], rx[65536];
	struct icmphdr *ic = (struct icmphdr *)(void *)pkt;
	size_t len = size - 20;
	int64_t end = now_ms() + wait_ms;

	memset(pkt, 0xa5, len);
	ic->type = ICMP_ECHO;
	ic->code = 0;
	ic->checksum = 0;
	ic->un.echo.id = htons(id);
	ic->un.echo.sequence = htons(seq);
	ic->checksum = csum(pkt, len);
	if (sendto(fd, pkt, len, 0, (const struct sockaddr *)to, sizeof(*to)) < 0)
		return errno == EMSGSIZE ? -EMSGSIZE : -errno;
	for (int left; (left = (int)(end - now_ms())) > 0;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t k;

		if (poll(&pfd, 1, left) <= 0)
			return 0;
		k = recv(fd, rx, sizeof(rx), 0);
		if (k < 20)
			continue;
		size_t hl = (size_t)(rx[0] & 0xf) * 4;
		const struct icmphdr *r = (const struct icmphdr *)(void *)(rx + hl);

		if ((size_t)k >= hl + sizeof(*r) && r->type == ICMP_ECHOREPLY &&
		    ntohs(r->un.echo.id) == id && ntohs(r->un.echo.sequence) == seq)
			return 1;
	}
	return 0;
}

int probe_pmtu(const char *peer, const char *ifname, unsigned mtu, unsigned *largest, char *err,
	       size_t errlen)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	int fd, pmtu = IP_PMTUDISC_PROBE, ok = 0;
	uint16_t id = (uint16_t)getpid(), seq = 0;
	unsigned lo = 0, hi;
	int64_t t0;
	int wait_ms = 3000;

	if (mtu < 68 || mtu > 65535 || inet_pton(AF_INET, peer, &to.sin_addr) != 1) {
		snprintf(err, errlen, "path MTU: bad peer '%s' or MTU %u", peer, mtu);
		return -EINVAL;
	}
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname)) < 0) {
		int r = -errno;

		snprintf(err, errlen, "path MTU: raw ICMP socket on %s: %s", ifname, strerror(-r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	/* the round trip first, with a small echo (the first may wait for the neighbour):
	 * what a lost echo is waited for after it (a delayed link is not a small MTU). The
	 * second echo waits 10 s: a link whose round trip is past 3 s is slow, not silent */
	t0 = now_ms();
	for (int t = 0; t < 2 && ok != 1; t++)
		ok = echo(fd, &to, 68, id, ++seq, t ? 10000 : wait_ms);
	if (ok != 1) {
		close(fd);
		*largest = 0; /* no answer at all: not a path MTU question */
		return 0;
	}
	wait_ms = (int)(now_ms() - t0) * 3 + 300;
	ok = 0;
	for (int t = 0; t < 2 && ok == 0; t++)
		ok = echo(fd, &to, mtu, id, ++seq, wait_ms);
	if (ok == 1) {
		*largest = mtu;
		close(fd);
		return 1;
	}
	/* the largest size that passes, between 68 (always) and mtu (failed) */
	hi = mtu;
	lo = 68;
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;

		if (echo(fd, &to, mid, id, ++seq, wait_ms) == 1)
			lo = mid;
		else
			hi = mid;
	}
	close(fd);
	*largest = lo;
	return 0;
}

void probe_pmtu_line(const char *role, const char *peer, const char *ifname, unsigned mtu)
{
	unsigned largest = 0;
	char err[200] = "";
	int r = probe_pmtu(peer, ifname, mtu, &largest, err, sizeof(err));

	if (r < 0)
		printf("pmtu end=%s ifname=%s peer=%s mtu=%u ok=0 largest=0 error=%s\n", role,
		       ifname, peer, mtu, err);
	else
		printf("pmtu end=%s ifname=%s peer=%s mtu=%u ok=%d largest=%u\n", role, ifname,
		       peer, mtu, r == 1, largest);
	fflush(stdout);
}
