// SPDX-License-Identifier: MIT
/*
 * Unit tests of the MKA control-interface client (fctl_mka): STATUS/MIB parsing of
 * wpa_supplicant 2.10's text, the JSON, and one request/reply against a stand-in control
 * socket (a Unix datagram socket in a temporary directory that answers like
 * wpa_supplicant: to the sender's address).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/mka.h"

/* as wpa_supplicant 2.10 answered in the lab (tests/lab/mka.sh), key server side */
static const char status_text[] =
	"bssid=01:80:c2:00:00:03\nwpa_state=COMPLETED\naddress=52:54:00:fa:01:00\n"
	"PAE KaY status=Active\nAuthenticated=No\nSecured=Yes\nFailed=No\n"
	"Actor Priority=10\nKey Server Priority=10\nIs Key Server=No\n"
	"Number of Keys Distributed=1\nNumber of Keys Received=0\nMKA Hello Time=2000\n"
	"actor_sci=52:54:00:fa:01:00@1\nkey_server_sci=52:54:00:fa:01:00@1\n"
	"participant_idx=0\nckn=abcd01\nmi=0af5e37ef9a14c177f54f701\nmn=16\nactive=Yes\n"
	"participant=No\nretain=No\nlive_peers=1\npotential_peers=1\nis_key_server=Yes\n"
	"is_elected=Yes\n";
static const char mib_text[] =
	"dot1xSuppPaeState=9\nieee8021XKayMkaPartCKN=abcd01\n"
	"ieee8021XKayMkaPeerListMI=f3307e5e2dd316855b8ed1f5\nieee8021XKayMkaPeerListMN=10\n"
	"ieee8021XKayMkaPeerListType=1\nieee8021XKayMkaPeerListSCI=52:54:00:fa:02:00@1\n"
	"ieee8021XKayMkaPeerListMI=000102030405060708090a0b\nieee8021XKayMkaPeerListMN=1\n"
	"ieee8021XKayMkaPeerListType=2\nieee8021XKayMkaPeerListSCI=52:54:00:fa:03:00@1\n";

static void test_parse(void **state)
{
	struct fctl_mka_status s;

	(void)state;
	fctl_mka_status_parse(status_text, mib_text, &s);
	assert_string_equal(s.kay, "Active");
	assert_string_equal(s.wpa_state, "COMPLETED");
	assert_true(s.secured);
	assert_false(s.failed);
	/* the participant's view wins over the KaY's "Is Key Server=No" */
	assert_true(s.is_key_server);
	assert_int_equal(s.actor_priority, 10);
	assert_int_equal(s.key_server_priority, 10);
	assert_int_equal(s.keys_distributed, 1);
	assert_string_equal(s.ckn, "abcd01");
	assert_string_equal(s.actor_sci, "52:54:00:fa:01:00@1");
	assert_string_equal(s.key_server_sci, "52:54:00:fa:01:00@1");
	assert_int_equal(s.live_peers, 1);
	assert_int_equal(s.potential_peers, 1);
	assert_int_equal(s.n_peers, 2);
	assert_string_equal(s.peers[0].sci, "52:54:00:fa:02:00@1");
	assert_true(s.peers[0].live);
	assert_string_equal(s.peers[1].sci, "52:54:00:fa:03:00@1");
	assert_false(s.peers[1].live);

	/* no MKA at all: everything empty, nothing secured */
	fctl_mka_status_parse("wpa_state=DISCONNECTED\n", NULL, &s);
	assert_string_equal(s.kay, "");
	assert_false(s.secured);
	assert_int_equal(s.n_peers, 0);
}

static void test_json(void **state)
{
	struct fctl_mka_status s;
	struct fctl_buf b = { 0 };

	(void)state;
	fctl_mka_status_parse(status_text, mib_text, &s);
	fctl_mka_status_to_json("eth0.100", &s, &b);
	assert_non_null(strstr(b.data, "\"port\":\"eth0.100\""));
	assert_non_null(strstr(b.data, "\"secured\":true"));
	assert_non_null(strstr(b.data, "\"ckn\":\"abcd01\""));
	assert_non_null(strstr(b.data, "{\"sci\":\"52:54:00:fa:02:00@1\",\"live\":true}"));
	assert_non_null(strstr(b.data, "{\"sci\":\"52:54:00:fa:03:00@1\",\"live\":false}"));
	assert_int_equal(b.data[b.len - 1], '}');
	fctl_buf_release(&b);
}

/* A stand-in control socket: answers one request with "PONG\n" to "PING", then exits. */
static pid_t serve_once(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	pid_t pid;

	assert_true(fd >= 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un from;
		socklen_t fl = sizeof(from);
		char buf[64];
		ssize_t n = recvfrom(fd, buf, sizeof(buf) - 1, 0, (struct sockaddr *)&from, &fl);

		if (n > 0) {
			buf[n] = '\0';
			/* an event first, as an attached monitor would get: the client skips it */
			sendto(fd, "<3>CTRL-EVENT-X", 15, 0, (struct sockaddr *)&from, fl);
			sendto(fd, strcmp(buf, "PING") == 0 ? "PONG\n" : "UNKNOWN COMMAND\n",
			       strcmp(buf, "PING") == 0 ? 5 : 16, 0, (struct sockaddr *)&from, fl);
		}
		_exit(0);
	}
	close(fd);
	return pid;
}

static void test_request(void **state)
{
	char dir[] = "/tmp/fctl-mka-XXXXXX", path[128], reply[64];
	pid_t pid;
	int st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/eth0.100", dir);
	assert_int_equal(fctl_mka_ctrl_request(path, "PING", reply, sizeof(reply), 500), -ENOENT);
	pid = serve_once(path);
	assert_int_equal(fctl_mka_ctrl_request(path, "PING", reply, sizeof(reply), 5000), 5);
	assert_string_equal(reply, "PONG\n");
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* the socket file is there, nobody reads it */
	assert_int_equal(fctl_mka_ctrl_request(path, "PING", reply, sizeof(reply), 500),
			 -ECONNREFUSED);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
