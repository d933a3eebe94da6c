/* SPDX-License-Identifier: MIT */
/*
 * Make-before-break CAK rotation of an MKA port (docs/mka.md, "CAK rotation").
 *
 * wpa_supplicant 2.10 holds one CAK per process, so a new CAK gets a second
 * wpa_supplicant on the same VLAN device, on the other SCI port (1 <-> 2, 3 <-> 4 ..):
 * the incoming CA. Its run directory is FCTL_MKA_RUN_DIR/IFNAME:N (N its SCI port; ':'
 * is never part of an interface name), beside the current CA's FCTL_MKA_RUN_DIR/IFNAME.
 * It creates a SecY of its own; the end's addresses stay on the current CA's SecY.
 *
 * fctl_mka_rotation_step moves the rotation on, one idempotent step per call (the agent
 * calls it from its MKA check, in a writing worker), with its state in the incoming
 * directory:
 *   1. wait until the incoming CA is secured (a live peer; on its SecY an active receive
 *      SA and the encoding SA active) and has stayed so for FCTL_MKA_ROT_SETTLE_MS;
 *   2. move the end's addresses to the incoming SecY (added there first, then deleted
 *      from the current one: no moment without a route);
 *   3. once the peer has moved too (over a window of at least FCTL_MKA_ROT_WINDOW_MS
 *      since the last step, its traffic arrived on the incoming SecY and nothing on the
 *      current one; or its old CA left), at least FCTL_MKA_ROT_QUIET_MS after the move; or, on a link where the current SecY
 *      received nothing at all since the move, FCTL_MKA_ROT_MAX_MS after it: stop the
 *      current CA and make the incoming one current.
 * Until step 2 the current CA carries the traffic, whatever the incoming one does: a CAK
 * the peer does not have never gets secured, and the rotation waits (fail-secure: no
 * cleartext, no loss). An incoming CA that dies gives the rotation up (after step 2:
 * the addresses go back to the old CA first); a current CA that dies after step 1 is
 * replaced by the incoming one at once. A CA is gone when its process is: one that does
 * not answer PING (a loaded machine) is asked again at the next step. Callers hold
 * fctl_mka_lock. Nothing here logs;
 * errors come back as text without key material.
 */
#ifndef FCTL_MKA_ROTATE_H
#define FCTL_MKA_ROTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/mka_host.h"

#define FCTL_MKA_ROT_SETTLE_MS 4000
#define FCTL_MKA_ROT_QUIET_MS 6000 /* the MKA life time */
#define FCTL_MKA_ROT_MAX_MS 60000
#define FCTL_MKA_ROT_WINDOW_MS 1000 /* the shortest window the switch judges the peer by */

enum fctl_mka_rot_stage {
	FCTL_MKA_ROT_NONE = 0, /* no rotation on this port */
	FCTL_MKA_ROT_WAITING,  /* the incoming CA is not secured (long enough) yet */
	FCTL_MKA_ROT_MOVED,    /* the addresses are on the incoming SecY, the old CA runs */
	FCTL_MKA_ROT_DONE,     /* the old CA stopped, the incoming one is current */
};

/* The SCI port a rotation moves to from port: 1 <-> 2, 3 <-> 4, .. (never 0). */
uint16_t fctl_mka_alt_port(uint16_t port);

/* A name in FCTL_MKA_RUN_DIR: the port's (VLAN device) name into port; 0 for a port's
 * current CA ("IFNAME"), 1 for an incoming one ("IFNAME:N", N into *sci_port), -EINVAL
 * for anything else. */
int fctl_mka_dir_name(const char *name, char *port, size_t len, uint16_t *sci_port);

/* Whether ifname's rotation has moved its addresses to the incoming CA (step 2 done). */
bool fctl_mka_rotation_moved(const char *ifname);

/* Whether two settings lines (fctl_mka_settings_line) differ in the CA only (CKN, CAK
 * check value, CAK length): a rotation, not a reconfiguration. */
bool fctl_mka_settings_ca_only(const char *have, const char *want);

/* FCTL_MKA_RUN_DIR/IFNAME:SCI_PORT into out. */
void fctl_mka_incoming_dir(const char *ifname, uint16_t sci_port, char *out, size_t len);

/* The incoming CA of ifname, if a rotation runs: 0 with its directory in dir and its SCI
 * port in *sci_port, or -ENOENT. */
int fctl_mka_incoming(const char *ifname, char *dir, size_t len, uint16_t *sci_port);

/* Stops the incoming CA of ifname (a rotation given up, or replaced): 0 also when none. */
int fctl_mka_incoming_stop(const char *ifname, char *err, size_t errlen);

/* One step of the rotation of port (see above), timed by CLOCK_BOOTTIME, its reads and
 * writes through kern (borrowed, fctl_engine_nl_ops'): the stage it is in after the step,
 * or a negative errno with err saying why. */
int fctl_mka_rotation_step(struct fctl_engine_kernel *kern, const struct fctl_mka_port *port,
			   char *err, size_t errlen);

#endif
