/* SPDX-License-Identifier: MIT */
/*
 * Approvals of profile versions (docs/approvals.md): the host's policy ("require N of
 * the principals in FILE"), OpenSSH allowed_signers files, the signatures kept beside a
 * profile (PROFILE.sig and PROFILE.sig.d/NAME.sig), and the check of one profile's exact
 * bytes against them: who signed, who is counted (one signer once), who is missing.
 *
 * A signature approves the exact bytes of the profile file it was made over, so the
 * profile's name and version (in those bytes) are bound with them.
 */
#ifndef FCTL_APPROVALS_H
#define FCTL_APPROVALS_H

#include <limits.h>
#include <stdbool.h>
#include <time.h>

#include "fctl/sshsig.h"
#include "fctl/util.h"

#define FCTL_APPROVALS_NAMESPACE "fabricctl-profile"
#define FCTL_APPROVALS_CONF "/etc/fabricctl/approvals.conf"
#define FCTL_APPROVALS_MAX_SIGS 64

/* One principal of an allowed_signers line (a line with two principals is two). */
struct fctl_signer {
	char principal[128];
	struct fctl_sshkey key;
	char namespaces[256]; /* the namespaces= option, "" when absent (any namespace) */
	bool has_after, has_before;
	time_t after, before;
	unsigned int line;
};

struct fctl_signers {
	char file[PATH_MAX];
	struct fctl_signer *v;
	size_t n;
};

/* Parses allowed_signers text; file names it in errors ("FILE:LINE: ..."). A
 * cert-authority line, an sk- key or an unknown option is refused (-EINVAL, -EOPNOTSUPP). */
int fctl_signers_parse(const char *file, const char *text, size_t len, struct fctl_signers *out,
		       char *err, size_t errlen);
int fctl_signers_load(const char *file, struct fctl_signers *out, char *err, size_t errlen);
void fctl_signers_release(struct fctl_signers *s);

/* The host's policy. conf NULL reads FCTL_APPROVALS_CONF. Returns 0 when conf does not
 * exist (no policy: approvals not required), 1 with *out filled, negative on a file
 * that exists and is wrong ("FILE:LINE: ..." in err). Format: `require: N of FILE`. */
struct fctl_approval_policy {
	char conf[PATH_MAX];
	unsigned int required;
	char signers[PATH_MAX];
};
int fctl_approval_policy_load(const char *conf, struct fctl_approval_policy *out, char *err,
			      size_t errlen);

enum fctl_approval_state {
	FCTL_APPROVAL_COUNTED = 1, /* valid, and counted for its principal */
	FCTL_APPROVAL_REPEAT,      /* valid, but its signer is counted already */
	FCTL_APPROVAL_REFUSED,     /* not valid for this profile: see reason */
};

struct fctl_approval_sig {
	char file[PATH_MAX];
	enum fctl_approval_state state;
	char principal[128]; /* counted as (COUNTED), else the key's first principal or "" */
	char fp[56];	     /* the signing key's fingerprint, "" when unparsable */
	char digest[72];     /* "sha256:" + hex of the signature file's bytes */
	char reason[256];    /* REFUSED and REPEAT: why */
};

struct fctl_approvals {
	struct fctl_approval_sig *v;
	size_t n;
	unsigned int counted, required;
	bool met;
	char signers_file[PATH_MAX];
	char missing[1024]; /* principals not counted, ", "-separated */
};

/* Checks the signatures kept beside profile_file against the bytes (the profile file's
 * bytes as read once by the caller) under pol at time now. Returns 0 with *out filled
 * (out->met says whether the policy holds), negative when the allowed_signers file
 * cannot be read or parsed (err says why). */
int fctl_approvals_check(const char *profile_file, const void *bytes, size_t len,
			 const struct fctl_approval_policy *pol, time_t now,
			 struct fctl_approvals *out, char *err, size_t errlen);
void fctl_approvals_release(struct fctl_approvals *a);
/* One sentence: "approved by 2 of 2 required (alice SHA256:.., bob SHA256:..)" or
 * "NOT approved: 1 of 2 required signed (alice SHA256:..); missing: bob, carol; ..." */
void fctl_approvals_text(const struct fctl_approvals *a, struct fctl_buf *out);
/* A JSON object: required, counted, met, allowed_signers, missing, signatures[]. */
void fctl_approvals_json(const struct fctl_approvals *a, struct fctl_buf *out);

/* Reads name (relative to folder dfd, or AT_FDCWD) into b: a regular file, not opened
 * through a symlink (-ELOOP), at most max bytes (-EFBIG); -EINVAL not a regular file. */
int fctl_approvals_read_at(int dfd, const char *name, size_t max, struct fctl_buf *b);
/* The signature files of profile_file (PROFILE.sig, then PROFILE.NAME.sig beside it and
 * PROFILE.sig.d/ *.sig, sorted),
 * at most FCTL_APPROVALS_MAX_SIGS. *paths is an array of heap strings. */
int fctl_approvals_list(const char *profile_file, char ***paths, size_t *n);
void fctl_approvals_list_free(char **paths, size_t n);
/* Copies the signature files of src beside dst (dst.sig.d/NAME.sig): the history keeps a
 * version's approvals with its copy. 0 also when there are none. */
int fctl_approvals_keep(const char *src, const char *dst);

#endif
