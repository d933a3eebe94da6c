/* SPDX-License-Identifier: MIT */
/*
 * MKA (IEEE 802.1X key agreement) through Debian 12's wpa_supplicant 2.10, driver
 * macsec_linux (docs/mka.md).
 *
 * fabricctl runs one wpa_supplicant per MKA port (the VLAN device of a VLAN whose policy
 * has an 'mka' block). Its run directory (/run/fabricctl/mka/IFNAME by default) must be
 * on a tmpfs and is private (0700): it holds the configuration (no secret in it: only
 * the control-interface path and the EAPOL settings), the pid file and the control
 * socket. The CAK never touches a disk or an argv: it is sent as "SET_NETWORK 0 mka_cak
 * HEX" over the control socket, a Unix datagram socket only root can reach, from a
 * buffer that is wiped at once. wpa_supplicant creates the MACsec device (macsecN) on
 * the VLAN device itself, and installs the SAKs the key server distributes: those SAs
 * are MKA's, never fabricctl's.
 *
 * The control protocol is wpa_supplicant's: a request is one datagram of text, the reply
 * one datagram; STATUS and MIB carry the KaY state (this file parses both).
 */
#ifndef FCTL_MKA_H
#define FCTL_MKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fctl/keys.h"
#include "fctl/util.h"

#define FCTL_MKA_RUN_DIR "/run/fabricctl/mka"
#define FCTL_MKA_WPA_SUPPLICANT "/sbin/wpa_supplicant"
#define FCTL_MKA_MAX_PEERS 16

/* What one wpa_supplicant is started with. */
struct fctl_mka_params {
	const char *ifname;	     /* the VLAN device MKA runs on */
	const char *run_dir;	     /* its private directory; NULL = FCTL_MKA_RUN_DIR/ifname */
	const char *wpa_supplicant; /* NULL = $FCTL_MKA_WPA_SUPPLICANT or the default */
	const struct fctl_key *cak; /* borrowed; 16 or 32 bytes */
	const char *ckn;	     /* hex, 2..64 digits */
	uint8_t priority;	     /* key-server priority, lower wins */
	bool must_secure;	     /* macsec_policy=1 */
	bool integrity_only;	     /* macsec_integ_only=1 */
	bool replay_protect;
	uint32_t replay_window;
	uint16_t port;		     /* the policy's SCI port */
	uint16_t sci_port;	     /* the SCI port this SecY uses; 0 = port (a CAK rotation
				      * alternates it, docs/mka.md "CAK rotation") */
};

struct fctl_mka_peer {
	char sci[32]; /* "52:54:00:fa:02:00@1" */
	bool live;    /* false: potential peer */
};

/* The KaY state as wpa_supplicant reports it. */
struct fctl_mka_status {
	char kay[16];		/* "Active", "Disabled", "" when MKA is not running */
	char wpa_state[24];	/* "COMPLETED", ... */
	bool secured, failed, is_key_server;
	unsigned actor_priority, key_server_priority;
	char ckn[65];
	char actor_sci[32], key_server_sci[32];
	unsigned live_peers, potential_peers;
	unsigned keys_distributed, keys_received;
	struct fctl_mka_peer peers[FCTL_MKA_MAX_PEERS];
	size_t n_peers;
};

/* The run directory of ifname's wpa_supplicant, into out (PATH_MAX). */
void fctl_mka_run_dir(const char *ifname, char *out, size_t outlen);
/* The CKN (hex) and the CAK's check value (6 hex digits, never the CAK) that ifname's
 * running wpa_supplicant was given, from the settings line of run_dir (NULL = ifname's
 * default): 0, or -ENOENT when there is none (no wpa_supplicant fabricctl started),
 * -EINVAL when the line is not one fctl_mka_start wrote. Outputs written only on
 * success. */
int fctl_mka_given(const char *ifname, const char *run_dir, char ckn[65], char kcv[7]);
/* The first line of the settings a wpa_supplicant was given (the CAK by its check
 * value only) and the SCI port it runs on, from run_dir (NULL = ifname's default):
 * 0, -ENOENT or -EINVAL. line is NUL-terminated without its newline. */
int fctl_mka_settings_read(const char *ifname, const char *run_dir, char line[512],
			   uint16_t *sci_port);
/* The settings line fctl_mka_start would write for p (no newline). */
void fctl_mka_settings_line(const struct fctl_mka_params *p, char *out, size_t len);
/* The control socket of ifname's wpa_supplicant, RUN_DIR/ctrl/IFNAME, into out: RUN_DIR is
 * run_dir, or ifname's default (fctl_mka_run_dir) when run_dir is NULL. */
void fctl_mka_ctrl_path(const char *ifname, const char *run_dir, char *out, size_t outlen);

/* One request over the control socket at path (RUN_DIR/ctrl/IFNAME): cmd out, the reply
 * in (NUL-terminated, at most replylen - 1 bytes). Returns the reply's length or
 * -ENOENT (no such socket), -ECONNREFUSED (nobody listening), -ETIMEDOUT (no reply
 * within timeout_ms), other negative errno. The request buffer is the caller's: a
 * command holding a secret is the caller's to wipe. */
int fctl_mka_ctrl_request(const char *path, const char *cmd, char *reply, size_t replylen,
			  int timeout_ms);

/* Parses STATUS text and MIB text (either may be NULL) into *out (zeroed first). */
void fctl_mka_status_parse(const char *status, const char *mib, struct fctl_mka_status *out);

/* STATUS and MIB of ifname's wpa_supplicant (run_dir NULL = the default). */
int fctl_mka_status_read(const char *ifname, const char *run_dir, struct fctl_mka_status *out,
			 char *err, size_t errlen);

/* The KaY of ifname's wpa_supplicant (run_dir NULL = the default) is secured with a live
 * peer: its STATUS says so. False also when it does not answer. */
bool fctl_mka_secured(const char *ifname, const char *run_dir);

/* The status as one JSON object (ifname as "port"). */
void fctl_mka_status_to_json(const char *ifname, const struct fctl_mka_status *s,
			     struct fctl_buf *out);

/* Starts (or, when one is running for ifname with other settings, reconfigures)
 * wpa_supplicant for p and hands it the CAK over the control socket. 1 when it started
 * or reconfigured it (MKA restarts: the SecY is re-created), 0 when the running one
 * already has these settings (compared by the CAK's check value, kept in the run
 * directory, never the CAK), negative errno with err saying why (never key material). */
int fctl_mka_start(const struct fctl_mka_params *p, char *err, size_t errlen);

/* The pid of ifname's running wpa_supplicant (from its pid file, checked against
 * /proc), or -ESRCH. */
int fctl_mka_pid(const char *ifname, const char *run_dir, pid_t *out);

/* Takes the lock of FCTL_MKA_RUN_DIR (creating the directory, 0700), waiting for it:
 * every change of a port's wpa_supplicants (apply, the agent's restart and rotation
 * step) holds it. The fd to close, or a negative errno. */
int fctl_mka_lock(void);

/* Stops ifname's wpa_supplicant (SIGTERM by its pid, then waits: it deletes its MACsec
 * device as it ends) and wipes the run directory. 0 also when none was running. */
int fctl_mka_stop(const char *ifname, const char *run_dir, char *err, size_t errlen);

#endif
