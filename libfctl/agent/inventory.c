// SPDX-License-Identifier: MIT
/* Fabric inventory: hosts and agent endpoints from a profile and/or a file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/inventory.h"

static struct fctl_inventory_host *get(struct fctl_inventory *inv, const char *name)
{
	struct fctl_inventory_host *h;

	for (size_t i = 0; i < inv->n; i++)
		if (strcmp(inv->v[i].name, name) == 0)
			return &inv->v[i];
	h = fctl_array_grow(&inv->v, &inv->n, &inv->cap, sizeof(*inv->v));
	if (h)
		snprintf(h->name, sizeof(h->name), "%s", name);
	return h;
}

int fctl_inventory_load(struct fctl_inventory *inv, const struct fctl_profile *p,
			const char *file, char *err, size_t errlen)
{
	struct fctl_inventory_host *h;
	char line[1024];
	unsigned lineno = 0;
	FILE *f;
	int r = 0;

	for (size_t i = 0; p && i < p->n_hosts; i++) {
		h = get(inv, p->hosts[i].name);
		if (!h)
			return -ENOMEM;
		if (p->hosts[i].agent)
			snprintf(h->endpoint, sizeof(h->endpoint), "%s", p->hosts[i].agent);
	}
	if (!file)
		return 0;
	f = fopen(file, "re");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "'%s': %s", file, strerror(-r));
		return r;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[256], ep[512], extra[2];
		int k;

		lineno++;
		line[strcspn(line, "#\r\n")] = '\0';
		k = sscanf(line, "%255s %511s %1s", name, ep, extra);
		if (k <= 0)
			continue;
		if (k != 2) {
			snprintf(err, errlen, "%s:%u: expected 'HOST ENDPOINT'", file, lineno);
			r = -EINVAL;
			break;
		}
		if (p && !fctl_profile_find_host(p, name)) {
			snprintf(err, errlen, "%s:%u: host '%s' is not in profile '%s'", file,
				 lineno, name, p->name);
			r = -ENOENT;
			break;
		}
		h = get(inv, name);
		if (!h) {
			r = -ENOMEM;
			break;
		}
		snprintf(h->endpoint, sizeof(h->endpoint), "%s", ep);
	}
	fclose(f);
	return r;
}

const struct fctl_inventory_host *fctl_inventory_find(const struct fctl_inventory *inv,
						      const char *name)
{
	for (size_t i = 0; i < inv->n; i++)
		if (strcmp(inv->v[i].name, name) == 0)
			return &inv->v[i];
	return NULL;
}

void fctl_inventory_release(struct fctl_inventory *inv)
{
	free(inv->v);
	memset(inv, 0, sizeof(*inv));
}
