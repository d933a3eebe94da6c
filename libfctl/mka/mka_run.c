// SPDX-License-Identifier: MIT
/* One wpa_supplicant per MKA port: its private tmpfs directory, start, CAK hand-over, stop. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fctl/mka.h"

static void dir_of(const char *ifname, const char *run_dir, char *out, size_t len)
{
	if (run_dir)
		snprintf(out, len, "%s", run_dir);
	else
		fctl_mka_run_dir(ifname, out, len);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* dir exists (made 0700 if not), is a directory of ours, not a link, mode 0700, on a
 * tmpfs or ramfs: what is in it never reaches a persistent disk. */
static int private_dir(const char *dir, char *err, size_t errlen)
{
	struct statfs fs;
	struct stat st;
	int r;

	r = fctl_mkdir_all(dir, 0700);
	if (r < 0) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(-r));
		return r;
	}
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s is not a directory owned by this user", dir);
		return -EPERM;
	}
	if ((st.st_mode & 077) && chmod(dir, 0700) < 0) {
		snprintf(err, errlen, "cannot make %s private: %s", dir, strerror(errno));
		return -errno;
	}
	if (statfs(dir, &fs) < 0 ||
	    (fs.f_type != (typeof(fs.f_type))TMPFS_MAGIC &&
	     fs.f_type != (typeof(fs.f_type))RAMFS_MAGIC)) {
		snprintf(err, errlen, "%s is not on a tmpfs: wpa_supplicant's run directory must "
			 "not reach a persistent disk", dir);
		return -EPERM;
	}
	return 0;
}

int fctl_mka_pid(const char *ifname, const char *run_dir, pid_t *out)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], exe[PATH_MAX], buf[32];
	ssize_t n;
	long pid;
	FILE *f;

	dir_of(ifname, run_dir, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/pid", dir);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -ESRCH;
	}
	fclose(f);
	pid = strtol(buf, NULL, 10);
	if (pid <= 1)
		return -ESRCH;
	/* the pid must still be a wpa_supplicant: never signal a recycled pid */
	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ESRCH;
	exe[n] = '\0';
	if (!strstr(exe, "wpa_supplicant"))
		return -ESRCH;
	*out = (pid_t)pid;
	return 0;
}

/* wpa_supplicant -B: it daemonizes once its interface and control socket are up. */
static int spawn(const struct fctl_mka_params *p, const char *dir, char *err, size_t errlen)
{
	const char *wpa = p->wpa_supplicant ? p->wpa_supplicant : getenv("FCTL_MKA_WPA_SUPPLICANT");
	char conf[PATH_MAX + 16], pidf[PATH_MAX + 16], text[PATH_MAX + 128];
	int fd, st, len;
	pid_t pid;

	if (!wpa || !*wpa)
		wpa = FCTL_MKA_WPA_SUPPLICANT;
	snprintf(conf, sizeof(conf), "%s/wpa.conf", dir);
	snprintf(pidf, sizeof(pidf), "%s/pid", dir);
	/* no secret in it: the CAK comes over the control socket */
	len = snprintf(text, sizeof(text),
		       "ctrl_interface=DIR=%s/ctrl GROUP=root\neapol_version=3\nap_scan=0\n", dir);
	fd = open(conf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, (size_t)len) != len) {
		snprintf(err, errlen, "cannot write %s: %s", conf, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		execl(wpa, "wpa_supplicant", "-i", p->ifname, "-D", "macsec_linux", "-c", conf,
		      "-P", pidf, "-B", (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(err, errlen, "%s -i %s -D macsec_linux failed (exit %d)", wpa, p->ifname,
			 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		return -ECHILD;
	}
	return 0;
}

/* One SET_NETWORK-style command that must answer OK; what is refused is named by its
 * field, never by its value. */
static int ask(const char *ctrl, const char *cmd, const char *field, char *reply, size_t len,
	       char *err, size_t errlen)
{
	int r = fctl_mka_ctrl_request(ctrl, cmd, reply, len, 3000);

	if (r < 0) {
		snprintf(err, errlen, "wpa_supplicant control socket %s: %s (%s)", ctrl,
			 strerror(-r), field);
		return r;
	}
	if (strncmp(reply, "FAIL", 4) == 0) {
		snprintf(err, errlen, "wpa_supplicant refused %s", field);
		return -EINVAL;
	}
	return 0;
}

static int configure(const struct fctl_mka_params *p, const char *ctrl, char *err, size_t errlen)
{
	char reply[256], cmd[256], secret[128];
	int id, r;

	r = ask(ctrl, "REMOVE_NETWORK all", "REMOVE_NETWORK", reply, sizeof(reply), err, errlen);
	if (r == 0)
		r = ask(ctrl, "ADD_NETWORK", "ADD_NETWORK", reply, sizeof(reply), err, errlen);
	if (r < 0)
		return r;
	id = atoi(reply);
	struct {
		const char *field;
		char value[80];
	} set[] = {
		{ "key_mgmt", "NONE" },
		{ "eapol_flags", "0" },
		{ "macsec_policy", "" },
		{ "macsec_integ_only", "" },
		{ "macsec_replay_protect", "" },
		{ "macsec_replay_window", "" },
		{ "macsec_port", "" },
		{ "mka_priority", "" },
		{ "mka_ckn", "" },
	};
	snprintf(set[2].value, sizeof(set[2].value), "%d", p->must_secure ? 1 : 0);
	snprintf(set[3].value, sizeof(set[3].value), "%d", p->integrity_only ? 1 : 0);
	snprintf(set[4].value, sizeof(set[4].value), "%d", p->replay_protect ? 1 : 0);
	snprintf(set[5].value, sizeof(set[5].value), "%u", p->replay_window);
	snprintf(set[6].value, sizeof(set[6].value), "%u", p->sci_port ? p->sci_port : p->port);
	snprintf(set[7].value, sizeof(set[7].value), "%u", p->priority);
	snprintf(set[8].value, sizeof(set[8].value), "%.64s", p->ckn);
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(set) && r == 0; i++) {
		snprintf(cmd, sizeof(cmd), "SET_NETWORK %d %s %s", id, set[i].field, set[i].value);
		r = ask(ctrl, cmd, set[i].field, reply, sizeof(reply), err, errlen);
	}
	if (r < 0)
		return r;
	/* the CAK: hex in a stack buffer wiped right after the one send */
	r = snprintf(secret, sizeof(secret), "SET_NETWORK %d mka_cak ", id);
	fctl_format_hex(p->cak->bytes, p->cak->len, secret + r);
	r = ask(ctrl, secret, "mka_cak", reply, sizeof(reply), err, errlen);
	fctl_memzero(secret, sizeof(secret));
	if (r < 0)
		return r;
	snprintf(cmd, sizeof(cmd), "SELECT_NETWORK %d", id);
	return ask(ctrl, cmd, "SELECT_NETWORK", reply, sizeof(reply), err, errlen);
}

/* What the running wpa_supplicant was given, the CAK by its check value only: an apply
 * that changes nothing must not restart MKA (that would be a rekey and a gap). */
void fctl_mka_settings_line(const struct fctl_mka_params *p, char *out, size_t len)
{
	snprintf(out, len, "ckn=%.64s kcv=%02x%02x%02x len=%zu priority=%u secure=%d integ=%d "
		 "replay=%d window=%u port=%u",
		 p->ckn, p->cak->kcv[0], p->cak->kcv[1], p->cak->kcv[2], p->cak->len, p->priority,
		 p->must_secure, p->integrity_only, p->replay_protect, p->replay_window, p->port);
}

int fctl_mka_settings_read(const char *ifname, const char *run_dir, char line[512],
			   uint16_t *sci_port)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], two[64] = "";
	unsigned port = 0, sci = 0;
	const char *pp;
	FILE *f;

	dir_of(ifname, run_dir, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/settings", dir);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ENOENT : -errno;
	if (!fgets(line, 512, f))
		line[0] = '\0';
	if (!fgets(two, sizeof(two), f))
		two[0] = '\0';
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	pp = strstr(line, " port=");
	if (!pp || sscanf(pp, " port=%u", &port) != 1 || !port || port > 0xffff)
		return -EINVAL;
	/* a second line "sci=N" when the SecY runs on another port than the policy's */
	if (sscanf(two, "sci=%u", &sci) != 1 || !sci || sci > 0xffff)
		sci = port;
	if (sci_port)
		*sci_port = (uint16_t)sci;
	return 0;
}

static bool same_settings(const struct fctl_mka_params *p, const char *want)
{
	char have[512];
	uint16_t sci;

	return fctl_mka_settings_read(p->ifname, p->run_dir, have, &sci) == 0 &&
	       strcmp(have, want) == 0 && sci == (p->sci_port ? p->sci_port : p->port);
}

int fctl_mka_given(const char *ifname, const char *run_dir, char ckn[65], char kcv[7])
{
	char line[512], c[65], k[7];
	int r = fctl_mka_settings_read(ifname, run_dir, line, NULL);

	if (r < 0)
		return r;
	if (sscanf(line, "ckn=%64[0-9a-fA-F] kcv=%6[0-9a-f]", c, k) != 2 || strlen(k) != 6)
		return -EINVAL;
	memcpy(ckn, c, strlen(c) + 1);
	memcpy(kcv, k, 7);
	return 0;
}

static void save_settings(const struct fctl_mka_params *p, const char *dir, const char *text)
{
	char path[PATH_MAX + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/settings", dir);
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%s\n", text);
		if (p->sci_port && p->sci_port != p->port)
			fprintf(f, "sci=%u\n", p->sci_port);
		fclose(f);
	}
}

int fctl_mka_start(const struct fctl_mka_params *p, char *err, size_t errlen)
{
	char dir[PATH_MAX], ctrl[PATH_MAX + 16], reply[64], want[512];
	bool running;
	pid_t pid;
	int r;

	if (!p || !p->ifname || !p->cak || (p->cak->len != 16 && p->cak->len != 32) || !p->ckn ||
	    strlen(p->ckn) > 64)
		return -EINVAL;
	dir_of(p->ifname, p->run_dir, dir, sizeof(dir));
	r = private_dir(dir, err, errlen);
	if (r < 0)
		return r;
	fctl_mka_ctrl_path(p->ifname, p->run_dir, ctrl, sizeof(ctrl));
	fctl_mka_settings_line(p, want, sizeof(want));
	running = fctl_mka_pid(p->ifname, p->run_dir, &pid) == 0 &&
		  fctl_mka_ctrl_request(ctrl, "PING", reply, sizeof(reply), 2000) > 0;
	if (running && same_settings(p, want))
		return 0;
	if (!running) {
		r = spawn(p, dir, err, errlen);
		if (r < 0)
			return r;
	}
	r = configure(p, ctrl, err, errlen);
	if (r == 0)
		save_settings(p, dir, want);
	return r < 0 ? r : 1;
}

int fctl_mka_lock(void)
{
	int fd, r;

	r = fctl_mkdir_all(FCTL_MKA_RUN_DIR, 0700);
	if (r < 0)
		return r;
	fd = open(FCTL_MKA_RUN_DIR "/.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			r = -errno;
			close(fd);
			return r;
		}
	return fd;
}

int fctl_mka_stop(const char *ifname, const char *run_dir, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	pid_t pid;

	dir_of(ifname, run_dir, dir, sizeof(dir));
	if (fctl_mka_pid(ifname, run_dir, &pid) == 0) {
		if (kill(pid, SIGTERM) < 0 && errno != ESRCH) {
			snprintf(err, errlen, "cannot stop wpa_supplicant %ld: %s", (long)pid,
				 strerror(errno));
			return -errno;
		}
		/* it deletes its MACsec device on the way out; give it 10 s, then KILL */
		for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
			sleep_ms(50);
		if (kill(pid, 0) == 0) {
			kill(pid, SIGKILL);
			for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
				sleep_ms(20);
		}
	}
	snprintf(path, sizeof(path), "%s/wpa.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/pid", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/settings", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/rotation", dir); /* a rotation's step state */
	unlink(path);
	snprintf(path, sizeof(path), "%s/rotation.new", dir);
	unlink(path);
	fctl_mka_ctrl_path(ifname, run_dir, path, sizeof(path));
	unlink(path);
	snprintf(path, sizeof(path), "%s/ctrl", dir);
	rmdir(path);
	if (rmdir(dir) < 0 && errno != ENOENT) {
		snprintf(err, errlen, "cannot remove %s: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}
