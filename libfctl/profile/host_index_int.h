/* SPDX-License-Identifier: MIT */
/* A profile's hosts sorted by name, for O(log n) lookups (validate.c, profile_slice.c). */
#ifndef FCTL_HOST_INDEX_INT_H
#define FCTL_HOST_INDEX_INT_H

#include <stddef.h>

#include "fctl/profile.h"

/* A name and its index in the array it names. */
struct name_idx {
	const char *name;
	size_t idx;
};

/* Orders by name, then index (a stable order for duplicates). */
int fctl_prof_cmp_name_idx(const void *a, const void *b);

/* The named hosts of p sorted by name, their count in *n; NULL on ENOMEM (lookups
 * then fall back to a scan). Free with free(). */
struct name_idx *fctl_prof_host_index(const struct fctl_profile *p, size_t *n);

/* The first host of that name, as fctl_profile_find_host finds it; hx NULL: a scan. */
const struct fctl_host *fctl_prof_find_host(const struct fctl_profile *p,
					    const struct name_idx *hx, size_t nhx,
					    const char *name);

#endif
