/* SPDX-License-Identifier: MIT */
/*
 * Inventory: the hosts of a fabric and their agent endpoints, from a profile
 * (hosts[].agent) or an inventory file: "HOST ENDPOINT" lines, '#' comments
 * (ENDPOINT as fctl_agent_connect takes it). A file overrides the profile's
 * endpoints for the hosts it names.
 */
#ifndef FCTL_INVENTORY_H
#define FCTL_INVENTORY_H

#include <stddef.h>

#include "fctl/profile.h"

struct fctl_inventory_host {
	char name[256];
	char endpoint[512]; /* "" = unknown */
};

struct fctl_inventory {
	struct fctl_inventory_host *v;
	size_t n, cap;
};

/* Adds every host of p (may be NULL), then applies file (may be NULL). */
int fctl_inventory_load(struct fctl_inventory *inv, const struct fctl_profile *p,
			const char *file, char *err, size_t errlen);
const struct fctl_inventory_host *fctl_inventory_find(const struct fctl_inventory *inv,
						      const char *name);
void fctl_inventory_release(struct fctl_inventory *inv);

#endif
