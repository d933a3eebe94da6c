/* SPDX-License-Identifier: MIT */
/*
 * One host's part of a profile, cut from the profile's own text: what a fabric
 * plan or diff sends each agent instead of the whole fleet's profile.
 *
 * A host's slice is the profile's lines in their order and bytes, less the entries
 * of `hosts` and `links` the host does not need: it keeps every other top-level
 * key whole (schema, profile, macsec, slo, comments), the host's own entry, the
 * entries of the hosts at the far end of its links, and the links with an end on
 * it. Nothing is re-serialised, so the host plans from exactly what was written.
 *
 * Only a profile laid out in block style can be cut by lines: each top-level key at
 * the start of its line, `hosts` and `links` as block sequences whose entries each
 * begin on a line of their own with their "- ", and "\n" (or "\r\n") its only line
 * break. Anything else (a flow sequence, an entry that starts on the line of the one
 * before, a lone "\r", NEL, LS or PS, which YAML counts as line breaks too) is
 * -ENOTSUP, and the caller sends the whole profile. Each slice is parsed and
 * validated again before it is given out and must hold exactly the hosts and links
 * it was cut for (names, ports, ends, VLANs, policies); one that does not is -EPROTO
 * (the caller sends the whole profile then too).
 *
 * A slice's bytes differ from the profile's, so its digest does too: slices are for
 * requests that change nothing and record nothing (plan, diff). An apply sends the
 * whole profile, whose digest its audit record names.
 */
#ifndef FCTL_PROFILE_SLICE_H
#define FCTL_PROFILE_SLICE_H

#include <stddef.h>

#include "fctl/profile.h"
#include "fctl/util.h"

struct fctl_profile_slicer;

/* Indexes data[0..len), the bytes profile p was parsed from, p validated without
 * errors (its link ends resolved). Both are borrowed and must outlive the slicer.
 * Returns 0 with *out set, -ENOTSUP (a layout not cut by lines), -EINVAL (the bytes
 * do not parse, or are not p's: their SHA-256 is not p->sha256) or -ENOMEM. */
int fctl_profile_slicer_new(const unsigned char *data, size_t len, const struct fctl_profile *p,
			    struct fctl_profile_slicer **out);

/* Appends host's slice to out. Safe to call from several threads at once on one
 * slicer. Returns the number of links in the slice (>= 0), -ENOENT (no such host),
 * -EPROTO (the slice did not check out, see above) or -ENOMEM; out is then left
 * as it was given. */
int fctl_profile_slicer_host(const struct fctl_profile_slicer *s, const char *host,
			     struct fctl_buf *out);

/* Accepts NULL. */
void fctl_profile_slicer_free(struct fctl_profile_slicer *s);

#endif
