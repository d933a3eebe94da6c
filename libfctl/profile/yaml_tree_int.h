/* SPDX-License-Identifier: MIT */
/* A position-carrying YAML tree built from libyaml events, with hard limits. Internal. */
#ifndef FCTL_YAML_TREE_H
#define FCTL_YAML_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/diag.h"

enum ynode_type {
	YNODE_SCALAR,
	YNODE_SEQ,
	YNODE_MAP,
};

struct ynode {
	enum ynode_type type;
	uint32_t line; /* 1-based */
	uint32_t col;  /* 1-based */
	/* scalar */
	char *str;
	size_t len;
	bool plain; /* unquoted: may be a number, bool or null */
	/* seq: kids are the items; map: kids alternate key, value */
	struct ynode **kids;
	size_t n;
	size_t cap;
};

#define YAML_MAX_DEPTH 64
#define YAML_MAX_NODES 4000000u
#define YAML_MAX_SCALAR (64u * 1024u)
#define YAML_MAX_FILE (64u * 1024u * 1024u)

/* Parses one YAML document. On a syntax or limit error, adds a finding and returns
 * -EINVAL; *out is then NULL. An empty document gives 0 and *out == NULL. */
int fctl_ynode_parse(const char *file, const unsigned char *data, size_t len,
		     struct fctl_diags *d, struct ynode **out);
void fctl_ynode_free(struct ynode *n);

static inline size_t ymap_len(const struct ynode *m)
{
	return m->n / 2;
}

const char *fctl_ynode_type_name(enum ynode_type t);

#endif
