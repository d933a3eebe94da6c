// SPDX-License-Identifier: MIT
/* The apply path's key source and its channel to fabricctl-keymgr (fctl/keysrc.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fctl/keysrc.h"
#include "fctl/rotation.h"
#include "keys_int.h"

/*
 * Wire format, one SOCK_SEQPACKET message each way, integers big-endian:
 *   request  "FKQ1" u32 version, u32 want_len, u16 |backend|, u16 |id|, u16 |base|,
 *            u16 flags (bit 0: base given), then backend, id, base (no NULs)
 *   answer   "FKA1" i32 result (0 or -errno), u8 key_len, u8 kcv[3], u16 |error|,
 *            u16 0, then 32 key bytes (zero when none or shorter), then the error text
 */
#define KEYMGR_FD 3
#define REQ_HDR 20
#define ANS_HDR 16
#define MAX_BACKEND 32
#define MAX_STR 4096
#define MAX_ERR 1024
#define REQ_MAX (REQ_HDR + MAX_BACKEND + 2 * MAX_STR)

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) << 16 | get16(p + 2);
}

/* --- the key source --- */

int fctl_key_source_fetch(const struct fctl_key_source *src, const struct fctl_keyref *ref,
			  const char *base_dir, size_t want_len, struct fctl_key **out, char *err,
			  size_t errlen)
{
	/* no reference, or a backend this process has (the file backend): here */
	if (!ref || !ref->backend || !ref->id || fctl_key_backend_find(ref->backend))
		return fctl_rotation_key_fetch(ref, base_dir, want_len, out, err, errlen);
	if (!src || !src->keymgr_path) {
		snprintf(err, errlen, "key backend '%s' is reached through fabricctl-keymgr, which "
			 "was not found", ref->backend);
		return -EOPNOTSUPP;
	}
	return fctl_keymgr_fetch(src->keymgr_path, ref, base_dir, want_len, out, err, errlen);
}

/* --- the parent's end --- */

static int encode_request(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
			  uint8_t *buf, size_t *len)
{
	size_t bl = strlen(ref->backend), il = strlen(ref->id), dl = base_dir ? strlen(base_dir) : 0;

	if (bl == 0 || bl > MAX_BACKEND || il == 0 || il > MAX_STR || dl > MAX_STR ||
	    want_len > FCTL_KEY_MAX)
		return -EINVAL;
	memcpy(buf, "FKQ1", 4);
	put32(buf + 4, ref->version);
	put32(buf + 8, (uint32_t)want_len);
	put16(buf + 12, (uint32_t)bl);
	put16(buf + 14, (uint32_t)il);
	put16(buf + 16, (uint32_t)dl);
	put16(buf + 18, base_dir ? 1 : 0);
	memcpy(buf + REQ_HDR, ref->backend, bl);
	memcpy(buf + REQ_HDR + bl, ref->id, il);
	if (dl)
		memcpy(buf + REQ_HDR + bl + il, base_dir, dl);
	*len = REQ_HDR + bl + il + dl;
	return 0;
}

/* The child: its end of the pair on fd 3, stdin/stdout on /dev/null, signals as new.
 * Only async-signal-safe calls between fork and exec. */
static void run_child(const char *path, int fd)
{
	static const char *const argv_tail[] = { "fetch-sak", "--fd", "3" };
	char *argv[5];
	sigset_t none;
	int devnull;

	if (fd == KEYMGR_FD ? fcntl(fd, F_SETFD, 0) < 0 : dup2(fd, KEYMGR_FD) < 0)
		_exit(127);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* execv's argv is not const, but is not written */
	argv[0] = (char *)(uintptr_t)path;
	for (size_t i = 0; i < 3; i++)
		argv[i + 1] = (char *)(uintptr_t)argv_tail[i];
	argv[4] = NULL;
	execv(path, argv);
	_exit(127);
}

static int wait_child(pid_t pid)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

/* Takes keymgr's error text as the user's: one line, printable. */
static void copy_text(char *err, size_t errlen, const char *s, size_t n)
{
	size_t i;

	if (!errlen)
		return;
	for (i = 0; i < n && i + 1 < errlen; i++)
		err[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	err[i] = '\0';
}

/* Receives one answer: key bytes straight into the locked k. Returns keymgr's result
 * (0 or its negative errno, err set), or -EPROTO / -ECHILD for the channel's. */
static int recv_answer(int fd, size_t want_len, struct fctl_key *k, char *err, size_t errlen)
{
	uint8_t hdr[ANS_HDR];
	char text[MAX_ERR];
	struct iovec iov[3] = {
		{ .iov_base = hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = k->bytes, .iov_len = FCTL_KEY_MAX },
		{ .iov_base = text, .iov_len = sizeof(text) },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
	uint8_t kcv[3];
	ssize_t n;
	size_t tl;
	int32_t res;

	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -ECHILD;
	if ((mh.msg_flags & MSG_TRUNC) || n < ANS_HDR + FCTL_KEY_MAX || memcmp(hdr, "FKA1", 4))
		return -EPROTO;
	res = (int32_t)get32(hdr + 4);
	tl = get16(hdr + 12);
	if (tl != (size_t)n - ANS_HDR - FCTL_KEY_MAX || res > 0 || res < -4095)
		return -EPROTO;
	if (res < 0) {
		copy_text(err, errlen, text, tl);
		return res;
	}
	k->len = hdr[8];
	memcpy(kcv, hdr + 9, 3);
	if (k->len != want_len || tl != 0)
		return -EPROTO;
	fctl_keys_kcv(k);
	return memcmp(kcv, k->kcv, 3) == 0 ? 0 : -EPROTO;
}

int fctl_keymgr_fetch(const char *keymgr_path, const struct fctl_keyref *ref,
		      const char *base_dir, size_t want_len, struct fctl_key **out, char *err,
		      size_t errlen)
{
	uint8_t req[REQ_MAX]; /* no secrets: the reference, never the key */
	struct fctl_key *k;
	size_t len;
	int sv[2], status, r;
	pid_t pid;

	if (!ref || !ref->backend || !ref->id ||
	    encode_request(ref, base_dir, want_len, req, &len) < 0) {
		snprintf(err, errlen, "key reference too long or malformed for fabricctl-keymgr");
		return -EINVAL;
	}
	k = fctl_keys_alloc();
	if (!k)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		snprintf(err, errlen, "fabricctl-keymgr: cannot create its channel: %s", strerror(-r));
		fctl_key_free(k);
		return r;
	}
	pid = fork();
	if (pid == 0)
		run_child(keymgr_path, sv[1]);
	r = pid < 0 ? -errno : 0;
	close(sv[1]);
	if (r == 0 && send(sv[0], req, len, MSG_NOSIGNAL) != (ssize_t)len)
		r = -ECHILD; /* it went before reading: its exit status says why */
	if (r == 0)
		r = recv_answer(sv[0], want_len, k, err, errlen);
	close(sv[0]);
	status = pid > 0 ? wait_child(pid) : 0;
	if (pid < 0)
		snprintf(err, errlen, "cannot run %s: %s", keymgr_path, strerror(-r));
	else if (r == -ECHILD && WIFEXITED(status) && WEXITSTATUS(status) == 127)
		snprintf(err, errlen, "cannot run %s", keymgr_path);
	else if (r == -ECHILD)
		snprintf(err, errlen, "%s fetch-sak ended without an answer (%s %d)", keymgr_path,
			 WIFSIGNALED(status) ? "signal" : "exit status",
			 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	else if (r == -EPROTO)
		snprintf(err, errlen, "%s fetch-sak gave a malformed answer", keymgr_path);
	if (r < 0) {
		fctl_key_free(k);
		return r;
	}
	*out = k;
	return 0;
}

/* --- keymgr's end --- */

static int check_channel(int fd, char *err, size_t errlen)
{
	struct ucred cred;
	socklen_t l = sizeof(cred);
	int type = 0;
	socklen_t tl = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET) {
		snprintf(err, errlen, "fd %d is not a key channel (a SOCK_SEQPACKET socket)", fd);
		return -ENOTSOCK;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0 ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		snprintf(err, errlen, "fd %d: the other end is another user's", fd);
		return -EPERM;
	}
	return 0;
}

static int decode_request(const uint8_t *buf, size_t n, struct fctl_keyref *ref, char *backend,
			  char *id, char *base, bool *has_base, size_t *want_len)
{
	size_t bl, il, dl;

	if (n < REQ_HDR || memcmp(buf, "FKQ1", 4))
		return -EBADMSG;
	bl = get16(buf + 12);
	il = get16(buf + 14);
	dl = get16(buf + 16);
	if (bl == 0 || bl > MAX_BACKEND || il == 0 || il > MAX_STR || dl > MAX_STR ||
	    REQ_HDR + bl + il + dl != n || get16(buf + 18) > 1 ||
	    memchr(buf + REQ_HDR, '\0', bl + il + dl))
		return -EBADMSG;
	memcpy(backend, buf + REQ_HDR, bl);
	backend[bl] = '\0';
	memcpy(id, buf + REQ_HDR + bl, il);
	id[il] = '\0';
	memcpy(base, buf + REQ_HDR + bl + il, dl);
	base[dl] = '\0';
	*has_base = get16(buf + 18) == 1;
	ref->backend = backend;
	ref->id = id;
	ref->version = get32(buf + 4);
	*want_len = get32(buf + 8);
	return 0;
}

static int send_answer(int fd, int res, const struct fctl_key *k, const char *text)
{
	static const uint8_t none[FCTL_KEY_MAX];
	size_t tl = res < 0 ? strnlen(text, MAX_ERR) : 0;
	uint8_t hdr[ANS_HDR] = { 'F', 'K', 'A', '1' };
	struct iovec iov[3] = {
		{ .iov_base = hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)(uintptr_t)(k ? k->bytes : none), .iov_len = FCTL_KEY_MAX },
		{ .iov_base = (void *)(uintptr_t)text, .iov_len = tl },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
	ssize_t n;

	put32(hdr + 4, (uint32_t)res);
	if (k) {
		hdr[8] = (uint8_t)k->len;
		memcpy(hdr + 9, k->kcv, 3);
	}
	put16(hdr + 12, (uint32_t)tl);
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

int fctl_keymgr_serve(int fd, char *err, size_t errlen)
{
	uint8_t req[REQ_MAX + 1];
	char backend[MAX_BACKEND + 1], id[MAX_STR + 1], base[MAX_STR + 1];
	struct fctl_keyref ref = { 0 };
	struct fctl_key *k = NULL;
	char why[MAX_ERR] = "";
	size_t want_len = 0;
	bool has_base = false;
	ssize_t n;
	int r;

	r = check_channel(fd, err, errlen);
	if (r < 0)
		return r;
	do
		n = recv(fd, req, sizeof(req), MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		r = -errno;
		snprintf(err, errlen, "fd %d: %s", fd, strerror(-r));
		return r;
	}
	r = (size_t)n > REQ_MAX ? -EBADMSG
				: decode_request(req, (size_t)n, &ref, backend, id, base, &has_base,
						 &want_len);
	if (r < 0)
		snprintf(why, sizeof(why), "malformed key request");
	else
		r = fctl_rotation_key_fetch(&ref, has_base ? base : NULL, want_len, &k, why,
					    sizeof(why));
	r = send_answer(fd, r, k, why);
	fctl_key_free(k);
	if (r < 0)
		snprintf(err, errlen, "fd %d: cannot answer: %s", fd, strerror(-r));
	return r;
}
