/* SPDX-License-Identifier: MIT */
/*
 * Key rotation state shared by the agent, the apply engine and keymgr
 * (docs/rotation.md). It sits in the key module and needs the model, never the engine.
 *
 * Per MACsec interface the agent keeps STATE_DIR/rotation/IFNAME, written
 * atomically (temporary file, fsync, rename) only by the agent, on the SA
 * requests of a rotation:
 *
 *   an A            the encoding SA's AN (the current TX key)
 *   version V       the key version installed on that AN
 *   busy UNTIL      unix seconds: a rotation lease (SAs of two keys are live);
 *                   0 = none. While it runs the agent refuses apply/rollback/
 *                   recover and skips drift checks.
 *   keyid K         the KEYID of {backend, id, V} of the key on AN A: names the key
 *                   reference the record belongs to (absent in records of agents
 *                   before it was added: such a record is taken as the profile's)
 *
 * and, for the metrics (docs/agent.md; absent in older records, read as 0):
 *
 *   switched T            unix seconds of the last switch to a new AN (txsa-switch)
 *   completed T           unix seconds of the last completed rotation: the lease
 *                         ended (TX SA retired) with a version above completed_version
 *   completed_version V   the version that completion installed
 *   completed_total N     rotations completed on this SecY
 *   rolled_back_total N   encoding-sa requests that moved the encoding SA back
 *   failed_total N        SA change requests of a rotation the agent could not carry out
 *
 * When the record's V is above the profile's key version (0 when unpinned; a KMS
 * reference pins its first version) and its K is the KEYID of the profile's
 * reference at V, render + fctl_rotation_overlay() put the desired SA at AN A with
 * the KEYID of {backend, id, V}: a rotated link is not drift. A record of another
 * reference (the profile moved the link to another key) is ignored.
 */
#ifndef FCTL_ROTATION_H
#define FCTL_ROTATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/keys.h"
#include "fctl/state.h"

struct fctl_rotation_cur {
	uint8_t an;
	uint32_t version;
	uint64_t busy_until; /* unix seconds, 0 = no rotation in progress */
	bool has_keyid;
	uint8_t keyid[FCTL_KEYID_LEN]; /* KEYID of {backend, id, version} */
	uint64_t switched_at, completed_at; /* unix seconds, 0 = never */
	uint32_t completed_version;
	uint64_t n_completed, n_rolled_back, n_failed;
};

/* STATE_DIR/rotation of fctl_state_dir_path(state_dir, netns) (fctl/state.h). */
void fctl_rotation_dir(const char *state_dir, const char *netns, char *out, size_t len);
/* -ENOENT when the interface was never rotated. */
int fctl_rotation_read(const char *dir, const char *ifname, struct fctl_rotation_cur *out);
int fctl_rotation_write(const char *dir, const char *ifname, const struct fctl_rotation_cur *c);
/* Whether some interface holds an unexpired lease; names the first one. */
bool fctl_rotation_busy(const char *dir, char *ifname, size_t len);

/* Whether record c says where rotation took a SecY whose profile names ref: c's
 * version is past ref's pinned version (any, when unpinned) and c's KEYID (when it
 * has one) is the KEYID of ref at that version, i.e. c belongs to the same key. */
bool fctl_rotation_applies(const struct fctl_keyref *ref, const struct fctl_rotation_cur *c);

/* Moves the desired SAs of one SecY (rendered at AN 0 with the profile's key version
 * P, 0 when unpinned) to AN an with key version `version`: KEYID (and XPN salt) of
 * {backend, id, version}, encoding SA an. Only when version > P: a pinned P is the
 * first version of a rotated key (KMS references must pin one), and a record at or
 * below it is older than the profile's word, which wins. */
void fctl_rotation_secy_set(struct fctl_macsec *m, uint8_t an, uint32_t version);
/* fctl_rotation_secy_set for every MACsec link of hs with a record that
 * fctl_rotation_applies() to its key reference. */
int fctl_rotation_overlay(struct fctl_host_state *hs, const char *dir);

/* fctl_key_fetch with versions for the file backend, which has none of its own
 * (keys.c ignores a file reference's version): version V > 0 of id X is the file
 * "X.vV", version 0 is X. pkcs11/kmip references pass unchanged (they name
 * objects "NAME.vN" themselves; version 0 fails closed there). */
int fctl_rotation_key_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
			    struct fctl_key **out, char *err, size_t errlen);

#endif
