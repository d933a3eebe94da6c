// SPDX-License-Identifier: MIT
/* Pipelined netlink writes (libfctl/nl/nl_pipe.c): answers matched to their requests by
 * sequence number, out of order, missing, doubled or stray, read from a datagram socket
 * pair standing in for the kernel's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/netlink.h>

#include "nl_int.h"

/* One answer: an NLMSG_ERROR for seq with error (0: the ACK) and, when text, the
 * extended ACK's message, as the kernel sends them with NETLINK_CAP_ACK. Returns its
 * length in buf. */
static size_t answer(uint8_t *buf, uint32_t seq, int error, const char *text)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nlmsgerr *e = NLMSG_DATA(h);
	size_t len = NLMSG_LENGTH(sizeof(*e));

	memset(buf, 0, 512);
	h->nlmsg_type = NLMSG_ERROR;
	h->nlmsg_seq = seq;
	h->nlmsg_flags = NLM_F_CAPPED;
	e->error = error;
	e->msg.nlmsg_seq = seq;
	e->msg.nlmsg_len = NLMSG_HDRLEN + 64; /* the request's own length: not echoed */
	if (text) {
		struct nlattr *a = (struct nlattr *)(buf + NLMSG_ALIGN(len));
		size_t tl = strlen(text) + 1;

		h->nlmsg_flags |= NLM_F_ACK_TLVS;
		a->nla_type = NLMSGERR_ATTR_MSG;
		a->nla_len = (uint16_t)(NLA_HDRLEN + tl);
		memcpy((uint8_t *)a + NLA_HDRLEN, text, tl);
		len = NLMSG_ALIGN(len) + NLA_ALIGN(a->nla_len);
	}
	h->nlmsg_len = (uint32_t)len;
	return NLMSG_ALIGN(len);
}

static void put(int fd, const uint8_t *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, 0), (ssize_t)len);
}

struct pair {
	int kernel, us;
};

static void pair_open(struct pair *p)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
	p->kernel = sv[0];
	p->us = sv[1];
}

static void pair_close(struct pair *p)
{
	close(p->kernel);
	close(p->us);
}

/* Answers out of order, one missing, one doubled, one for no request of the window:
 * each request gets its own answer or, with none, an unknown outcome. */
static void test_match_by_seq(void **st)
{
	struct fctl_nl_err err[4] = { 0 };
	struct fctl_nli_slot slot[4] = { 0 };
	struct fctl_nli_pipe p = { .seq0 = 100, .n = 4, .slot = slot };
	struct pair k;
	uint8_t buf[512];

	(void)st;
	for (int i = 0; i < 4; i++)
		slot[i].err = &err[i];
	pair_open(&k);
	put(k.kernel, buf, answer(buf, 102, 0, NULL));
	put(k.kernel, buf, answer(buf, 100, -EEXIST, "link name taken"));
	put(k.kernel, buf, answer(buf, 999, -EINVAL, NULL));  /* not ours */
	put(k.kernel, buf, answer(buf, 102, -EINVAL, NULL));  /* a second answer */
	put(k.kernel, buf, answer(buf, 103, 0, NULL));
	/* 101: never answered */
	assert_int_equal(fctl_nli_pipe_collect(k.us, &p), 0);

	assert_true(slot[0].answered && !slot[0].unknown);
	assert_int_equal(slot[0].rc, -EEXIST);
	assert_string_equal(err[0].extack, "link name taken");
	assert_false(slot[1].answered);
	assert_true(slot[1].unknown);
	assert_int_equal(slot[1].rc, -EPROTO);
	assert_non_null(strstr(err[1].extack, "no answer from the kernel"));
	assert_true(slot[2].answered);
	assert_int_equal(slot[2].rc, 0); /* the first answer stands */
	assert_true(slot[3].answered);
	assert_int_equal(slot[3].rc, 0);
	assert_int_equal(p.stray, 2);
	/* the queue was read to its end: nothing of this window is left for the next */
	assert_int_equal(recv(k.us, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	pair_close(&k);
}

/* Several answers in one datagram; the sequence numbers wrap around 2^32 in a window. */
static void test_many_in_one_datagram_and_wrap(void **st)
{
	struct fctl_nli_slot slot[3] = { 0 };
	struct fctl_nli_pipe p = { .seq0 = UINT32_MAX - 1, .n = 3, .slot = slot };
	uint8_t buf[2048];
	size_t len = 0;

	(void)st;
	len += answer(buf + len, UINT32_MAX, 0, NULL);
	len += answer(buf + len, 0, -ENODEV, NULL); /* seq0 + 2, wrapped */
	len += answer(buf + len, UINT32_MAX - 1, 0, NULL);
	fctl_nli_pipe_take(&p, buf, len);
	for (int i = 0; i < 3; i++)
		assert_true(slot[i].answered);
	assert_int_equal(slot[0].rc, 0);
	assert_int_equal(slot[1].rc, 0);
	assert_int_equal(slot[2].rc, -ENODEV);
	assert_int_equal(p.stray, 0);
}

/* An answer too short to hold its error, and a message that is no answer. */
static void test_malformed(void **st)
{
	struct fctl_nli_slot slot[2] = { 0 };
	struct fctl_nli_pipe p = { .seq0 = 7, .n = 2, .slot = slot };
	uint8_t buf[512] = { 0 };
	struct nlmsghdr *h = (struct nlmsghdr *)buf;

	(void)st;
	h->nlmsg_type = NLMSG_ERROR;
	h->nlmsg_seq = 7;
	h->nlmsg_len = NLMSG_HDRLEN + 4;
	fctl_nli_pipe_take(&p, buf, NLMSG_ALIGN(h->nlmsg_len));
	assert_true(slot[0].answered);
	assert_int_equal(slot[0].rc, -EPROTO);
	h->nlmsg_type = NLMSG_DONE;
	h->nlmsg_seq = 8;
	h->nlmsg_len = NLMSG_HDRLEN;
	fctl_nli_pipe_take(&p, buf, NLMSG_HDRLEN);
	assert_false(slot[1].answered);
}

/* What is sent: one datagram, the requests in order with their sequence numbers and ACKs
 * asked for, nothing else of them changed (the messages themselves untouched). */
static void test_send_one_datagram(void **st)
{
	struct nl_msg *m[3];
	struct pair k;
	uint8_t buf[4096];
	ssize_t got;
	int left, i = 0;

	(void)st;
	pair_open(&k);
	for (int j = 0; j < 3; j++) {
		m[j] = nlmsg_alloc_simple(RTM_NEWLINK + j, NLM_F_CREATE);
		assert_non_null(m[j]);
		assert_int_equal(nla_put_u32(m[j], 1, (uint32_t)j), 0);
	}
	assert_int_equal(fctl_nli_pipe_send(k.us, m, 3, UINT32_MAX), 0);
	got = recv(k.kernel, buf, sizeof(buf), MSG_DONTWAIT);
	assert_true(got > 0);
	left = (int)got;
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left);
	     h = NLMSG_NEXT(h, left), i++) {
		assert_int_equal(h->nlmsg_type, RTM_NEWLINK + i);
		assert_int_equal(h->nlmsg_seq, (uint32_t)(UINT32_MAX + (uint32_t)i));
		assert_int_equal(h->nlmsg_flags, NLM_F_CREATE | NLM_F_REQUEST | NLM_F_ACK);
		assert_int_equal(h->nlmsg_pid, 0);
		assert_int_equal(*(uint32_t *)((uint8_t *)NLMSG_DATA(h) + NLA_HDRLEN), (uint32_t)i);
	}
	assert_int_equal(i, 3);
	assert_int_equal(left, 0);
	/* one datagram: nothing more */
	assert_int_equal(recv(k.kernel, buf, sizeof(buf), MSG_DONTWAIT), -1);
	for (int j = 0; j < 3; j++) {
		assert_int_equal(nlmsg_hdr(m[j])->nlmsg_seq, 0);
		nlmsg_free(m[j]);
	}
	pair_close(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_by_seq),
		cmocka_unit_test(test_many_in_one_datagram_and_wrap),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_send_one_datagram),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
