// SPDX-License-Identifier: MIT
/*
 * fctl_lab_drop: loss injection for the probe's lab test (tests/lab/probe.sh).
 * The lab's stock kernel loads no tc or nftables modules, but BPF and generic
 * (skb-mode) XDP are built in: this attaches a tiny XDP program to a device
 * that drops a given fraction (per mille) of RoCE v2 frames (UDP port 4791,
 * IPv4 or IPv6) it receives. On a MACsec device it sees the decrypted frames,
 * so MACsec's own counters stay clean while RDMA loses packets.
 *
 *   fctl_lab_drop IFNAME PERMILLE   attach (replaces a program already there)
 *   fctl_lab_drop IFNAME off        detach
 *
 * Not installed; a test tool only.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define LDX(sz, d, s, o) INSN(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define MOV_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD_IMM(d, i) INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define AND_IMM(d, i) INSN(BPF_ALU64 | BPF_AND | BPF_K, d, 0, 0, i)
#define MOD_IMM(d, i) INSN(BPF_ALU64 | BPF_MOD | BPF_K, d, 0, 0, i)
#define JGT_REG(d, s, o) INSN(BPF_JMP | BPF_JGT | BPF_X, d, s, o, 0)
#define JNE_IMM(d, i, o) INSN(BPF_JMP | BPF_JNE | BPF_K, d, 0, o, i)
#define JEQ_IMM(d, i, o) INSN(BPF_JMP | BPF_JEQ | BPF_K, d, 0, o, i)
#define JGE_IMM(d, i, o) INSN(BPF_JMP | BPF_JGE | BPF_K, d, 0, o, i)
#define JA(o) INSN(BPF_JMP | BPF_JA, 0, 0, o, 0)
#define CALL(f) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

static int load_prog(int permille)
{
	/* Loads are little-endian: 0x0800 reads 0x0008, 0x86dd reads 0xdd86, 4791 0xb712. */
	struct bpf_insn p[] = {
		/* 0 */ LDX(BPF_W, 2, 1, 0), /* data */
		/* 1 */ LDX(BPF_W, 3, 1, 4), /* data_end */
		/* 2 */ MOV_REG(4, 2),
		/* 3 */ ADD_IMM(4, 62),	     /* eth + ipv6 + udp */
		/* 4 */ JGT_REG(4, 3, 7),    /* shorter: maybe IPv4 (12) */
		/* 5 */ LDX(BPF_H, 5, 2, 12),
		/* 6 */ JNE_IMM(5, 0xdd86, 5), /* not IPv6: 12 */
		/* 7 */ LDX(BPF_B, 5, 2, 20),  /* next header */
		/* 8 */ JNE_IMM(5, 17, 12),    /* pass (21) */
		/* 9 */ LDX(BPF_H, 5, 2, 56),  /* UDP dport */
		/* 10 */ JNE_IMM(5, 0xb712, 10), /* pass (21) */
		/* 11 */ JA(11),		 /* dice (23) */
		/* 12 */ MOV_REG(4, 2),
		/* 13 */ ADD_IMM(4, 42), /* eth + ipv4 + udp */
		/* 14 */ JGT_REG(4, 3, 6), /* pass (21) */
		/* 15 */ LDX(BPF_H, 5, 2, 12),
		/* 16 */ JNE_IMM(5, 0x0008, 4),
		/* 17 */ LDX(BPF_B, 5, 2, 23), /* protocol */
		/* 18 */ JNE_IMM(5, 17, 2),
		/* 19 */ LDX(BPF_H, 5, 2, 36), /* UDP dport, IHL 5 (RoCE v2 has no options) */
		/* 20 */ JEQ_IMM(5, 0xb712, 2), /* dice (23) */
		/* 21 */ MOV_IMM(0, XDP_PASS),
		/* 22 */ EXIT(),
		/* 23 */ CALL(BPF_FUNC_get_prandom_u32),
		/* 24 */ MOD_IMM(0, 1000),
		/* 25 */ JGE_IMM(0, permille, -5), /* keep: pass (21) */
		/* 26 */ MOV_IMM(0, XDP_DROP),
		/* 27 */ EXIT(),
	};
	static char log[65536];
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_XDP;
	a.insns = (uintptr_t)p;
	a.insn_cnt = sizeof(p) / sizeof(p[0]);
	a.license = (uintptr_t) "GPL";
	a.log_buf = (uintptr_t)log;
	a.log_size = sizeof(log);
	a.log_level = 1;
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	if (fd < 0)
		fprintf(stderr, "fctl_lab_drop: BPF_PROG_LOAD: %s\n%s\n", strerror(errno), log);
	return fd;
}

static int attach(int ifindex, int prog_fd)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		char attrs[64];
	} req;
	struct rtattr *xdp, *rta;
	char ans[4096];
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	ssize_t n;
	uint32_t flags = XDP_FLAGS_SKB_MODE;

	if (s < 0)
		return -errno;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifi));
	req.nh.nlmsg_type = RTM_SETLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = ifindex;
	xdp = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
	xdp->rta_type = IFLA_XDP | NLA_F_NESTED;
	xdp->rta_len = RTA_LENGTH(0);
	rta = (struct rtattr *)((char *)xdp + RTA_ALIGN(xdp->rta_len));
	rta->rta_type = IFLA_XDP_FD;
	rta->rta_len = RTA_LENGTH(sizeof(int));
	memcpy(RTA_DATA(rta), &prog_fd, sizeof(int));
	xdp->rta_len = (unsigned short)(xdp->rta_len + RTA_ALIGN(rta->rta_len));
	rta = (struct rtattr *)((char *)xdp + RTA_ALIGN(xdp->rta_len));
	rta->rta_type = IFLA_XDP_FLAGS;
	rta->rta_len = RTA_LENGTH(sizeof(flags));
	memcpy(RTA_DATA(rta), &flags, sizeof(flags));
	xdp->rta_len = (unsigned short)(xdp->rta_len + RTA_ALIGN(rta->rta_len));
	req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(xdp->rta_len);
	if (send(s, &req, req.nh.nlmsg_len, 0) < 0 || (n = recv(s, ans, sizeof(ans), 0)) < 0) {
		int e = -errno;

		close(s);
		return e;
	}
	close(s);
	if ((size_t)n >= NLMSG_LENGTH(sizeof(struct nlmsgerr)) &&
	    ((struct nlmsghdr *)ans)->nlmsg_type == NLMSG_ERROR)
		return ((struct nlmsgerr *)NLMSG_DATA(ans))->error;
	return 0;
}

int main(int argc, char **argv)
{
	int ifindex, fd = -1, ret;
	long pm = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: fctl_lab_drop IFNAME PERMILLE|off\n");
		return 2;
	}
	ifindex = (int)if_nametoindex(argv[1]);
	if (!ifindex) {
		fprintf(stderr, "fctl_lab_drop: no device '%s'\n", argv[1]);
		return 2;
	}
	if (strcmp(argv[2], "off") != 0) {
		char *end;

		pm = strtol(argv[2], &end, 10);
		if (*end || pm < 0 || pm > 1000) {
			fprintf(stderr, "fctl_lab_drop: PERMILLE is 0..1000\n");
			return 2;
		}
		fd = load_prog((int)pm);
		if (fd < 0)
			return 1;
	}
	ret = attach(ifindex, fd);
	if (ret < 0) {
		fprintf(stderr, "fctl_lab_drop: attaching XDP to '%s': %s\n", argv[1], strerror(-ret));
		return 1;
	}
	if (fd >= 0)
		printf("fctl_lab_drop: dropping %ld per mille of UDP 4791 frames received on %s\n", pm,
		       argv[1]);
	else
		printf("fctl_lab_drop: %s: detached\n", argv[1]);
	return 0;
}
