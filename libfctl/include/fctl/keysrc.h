/* SPDX-License-Identifier: MIT */
/*
 * Where the apply path gets its keys (docs/kms.md, "The key boundary").
 *
 * fabricctl and the agent hold no KMS credentials and link no KMS code. A key source
 * fetches a reference of a backend this process has (the file backend: a local file is
 * not a KMS) here, and asks fabricctl-keymgr for any other (pkcs11, kmip):
 *
 *   the parent creates an AF_UNIX SOCK_SEQPACKET socketpair, forks and execs keymgr
 *   from the path it was given (the trusted build or install path) as
 *   `fabricctl-keymgr fetch-sak --fd 3`, its end of the pair on fd 3 and nowhere else;
 *   the environment passes through (keymgr reads its KMS configuration there), stdin
 *   and stdout are /dev/null. One request goes in: backend, id, version, the wanted
 *   length and the base directory of relative file ids. One answer comes back: a
 *   result, the key bytes and their KCV, or keymgr's one-line error (never key bytes).
 *   Key bytes travel on the socket only: never argv, the environment or a file. They
 *   are received straight into a locked struct fctl_key and checked against the KCV.
 *
 * The socket is the channel's authentication: only the parent and the child it exec'd
 * hold it; keymgr also refuses a descriptor that is not a SOCK_SEQPACKET socket of its
 * own user (or root).
 */
#ifndef FCTL_KEYSRC_H
#define FCTL_KEYSRC_H

#include <stddef.h>

#include "fctl/keys.h"

struct fctl_key_source {
	/* fabricctl-keymgr, asked for references of backends this process does not have;
	 * NULL: such references fail (-EOPNOTSUPP) */
	const char *keymgr_path;
};

/* The key of ref (versions of file keys as fctl_rotation_key_fetch() has them) of
 * want_len bytes, in locked memory. Errors as fctl/keys.h; err gets keymgr's own reason
 * when it answered, or what went wrong with the channel. src may be NULL. */
int fctl_key_source_fetch(const struct fctl_key_source *src, const struct fctl_keyref *ref,
			  const char *base_dir, size_t want_len, struct fctl_key **out, char *err,
			  size_t errlen);

/* The channel, parent's end: runs `keymgr_path fetch-sak --fd 3` for one request.
 * 0 with *out set, or keymgr's negative errno and reason; -EPROTO when the answer is
 * malformed or its KCV does not match its key; -ECHILD when keymgr ended without one. */
int fctl_keymgr_fetch(const char *keymgr_path, const struct fctl_keyref *ref,
		      const char *base_dir, size_t want_len, struct fctl_key **out, char *err,
		      size_t errlen);

/* The channel, keymgr's end: reads one request on fd, fetches the key with the
 * backends this process registered (fctl_rotation_key_fetch) and answers, the key
 * wiped at once. 0 when it answered (the answer may be an error, -EBADMSG for a
 * malformed request); negative errno when fd is not a channel or the answer could not
 * be sent (err says why). */
int fctl_keymgr_serve(int fd, char *err, size_t errlen);

#endif
