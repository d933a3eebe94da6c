// SPDX-License-Identifier: MIT
/* libyaml events into a position-carrying node tree, refusing what profiles do not allow. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "yaml_tree_int.h"

const char *fctl_ynode_type_name(enum ynode_type t)
{
	switch (t) {
	case YNODE_SCALAR:
		return "a scalar";
	case YNODE_SEQ:
		return "a list";
	case YNODE_MAP:
		return "a mapping";
	}
	return "?";
}

void fctl_ynode_free(struct ynode *n)
{
	/* iterative post-order free: a deep tree must not exhaust the stack */
	struct ynode **stack = NULL;
	size_t sn = 0, scap = 0;

	if (!n)
		return;
	if (!fctl_array_grow(&stack, &sn, &scap, sizeof(*stack)))
		goto slow;
	stack[0] = n;
	while (sn) {
		struct ynode *cur = stack[--sn];

		for (size_t i = 0; i < cur->n; i++) {
			struct ynode **slot = fctl_array_grow(&stack, &sn, &scap, sizeof(*stack));

			if (!slot) { /* out of memory while freeing: leak rather than crash */
				cur->n = i;
				break;
			}
			*slot = cur->kids[i];
		}
		free(cur->kids);
		free(cur->str);
		free(cur);
	}
	free(stack);
	return;
slow:
	free(n);
}

static struct ynode *node_new(enum ynode_type t, const yaml_mark_t *m)
{
	struct ynode *n = calloc(1, sizeof(*n));

	if (n) {
		n->type = t;
		n->line = (uint32_t)m->line + 1;
		n->col = (uint32_t)m->column + 1;
	}
	return n;
}

static int add_kid(struct ynode *p, struct ynode *k)
{
	struct ynode **slot = fctl_array_grow(&p->kids, &p->n, &p->cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	*slot = k;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	const struct ynode *x = *(struct ynode *const *)a, *y = *(struct ynode *const *)b;
	int c;

	if (x->type != YNODE_SCALAR || y->type != YNODE_SCALAR)
		return (int)x->type - (int)y->type;
	c = strcmp(x->str, y->str);
	if (c)
		return c;
	return x->line != y->line ? (x->line < y->line ? -1 : 1) : (x->col < y->col ? -1 : 1);
}

/* Reports every duplicate key of a mapping at the later occurrence, in O(n log n). */
static int check_dup_keys(const char *file, struct ynode *m, struct fctl_diags *d)
{
	size_t nk = ymap_len(m);
	struct ynode **keys;
	int r = 0;

	if (nk < 2)
		return 0;
	keys = calloc(nk, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < nk; i++)
		keys[i] = m->kids[2 * i];
	qsort(keys, nk, sizeof(*keys), cmp_key);
	for (size_t i = 1; i < nk; i++) {
		if (keys[i]->type != YNODE_SCALAR || keys[i - 1]->type != YNODE_SCALAR)
			continue;
		if (strcmp(keys[i]->str, keys[i - 1]->str) == 0) {
			fctl_diag_add(d, FCTL_SEV_ERROR, file, keys[i]->line, keys[i]->col,
				      "duplicate-key", NULL,
				      "duplicate key '%s' (first defined at line %u column %u)",
				      keys[i]->str, keys[i - 1]->line, keys[i - 1]->col);
			r = -EINVAL;
		}
	}
	free(keys);
	return r;
}

/* Line and column (in characters, as libyaml counts them) of a byte offset. */
static void offset_pos(const unsigned char *data, size_t len, size_t off, uint32_t *line,
		       uint32_t *col)
{
	uint32_t l = 1, c = 1;

	for (size_t i = 0; i < off && i < len; i++) {
		if (data[i] == '\n') {
			l++;
			c = 1;
		} else if ((data[i] & 0xc0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}

static void parser_error(const char *file, const unsigned char *data, size_t len,
			 yaml_parser_t *p, struct fctl_diags *d)
{
	const yaml_mark_t *m = &p->problem_mark;
	const char *what = p->problem ? p->problem : "malformed YAML";

	if (p->error == YAML_READER_ERROR) {
		uint32_t line, col;

		size_t off = p->problem_offset;

		/* the reader reports a byte offset and leaves problem_mark unset; a bad
		 * trailing octet is reported at itself: point at its sequence's first byte */
		if (p->problem && strstr(p->problem, "trailing") && off > 0 && off <= len) {
			off--;
			while (off > 0 && (data[off] & 0xc0) == 0x80)
				off--;
		}
		offset_pos(data, len, off, &line, &col);
		fctl_diag_add(d, FCTL_SEV_ERROR, file, line, col, "encoding", NULL,
			      "invalid input at byte %zu: %s (expected UTF-8 text)",
			      p->problem_offset, what);
		return;
	}
	if (p->error == YAML_MEMORY_ERROR) {
		fctl_diag_add(d, FCTL_SEV_ERROR, file, 0, 0, "memory", NULL,
			      "out of memory while parsing");
		return;
	}
	if (p->context)
		fctl_diag_add(d, FCTL_SEV_ERROR, file, (uint32_t)m->line + 1,
			      (uint32_t)m->column + 1, "syntax", NULL, "%s %s (at line %zu)", what,
			      p->context, p->context_mark.line + 1);
	else
		fctl_diag_add(d, FCTL_SEV_ERROR, file, (uint32_t)m->line + 1,
			      (uint32_t)m->column + 1, "syntax", NULL, "%s", what);
}

/* The anchor of a scalar, sequence-start or mapping-start event, or NULL. */
static const yaml_char_t *event_anchor(const yaml_event_t *ev)
{
	if (ev->type == YAML_SCALAR_EVENT)
		return ev->data.scalar.anchor;
	if (ev->type == YAML_SEQUENCE_START_EVENT)
		return ev->data.sequence_start.anchor;
	return ev->data.mapping_start.anchor;
}

/* The node of a scalar event, refusing one over YAML_MAX_SCALAR (-EFBIG). */
static int scalar_node(const char *file, const yaml_event_t *ev, struct fctl_diags *d,
		       struct ynode **out)
{
	struct ynode *n;

	if (ev->data.scalar.length > YAML_MAX_SCALAR) {
		fctl_diag_add(d, FCTL_SEV_ERROR, file, (uint32_t)ev->start_mark.line + 1,
			      (uint32_t)ev->start_mark.column + 1, "too-large", NULL,
			      "scalar of %zu bytes; the limit is %u", ev->data.scalar.length,
			      YAML_MAX_SCALAR);
		return -EFBIG;
	}
	n = node_new(YNODE_SCALAR, &ev->start_mark);
	if (n) {
		n->len = ev->data.scalar.length;
		n->str = malloc(n->len + 1);
		if (n->str) {
			memcpy(n->str, ev->data.scalar.value, n->len);
			n->str[n->len] = '\0';
		}
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	}
	if (n && !n->str) {
		free(n);
		n = NULL;
	}
	if (!n)
		return -ENOMEM;
	*out = n;
	return 0;
}

/* The node of a scalar, sequence-start or mapping-start event at nesting depth, counted in
 * *nodes; refuses anchors and the node-count and depth limits with a finding. */
static int event_node(const char *file, const yaml_event_t *ev, size_t depth, size_t *nodes,
		      struct fctl_diags *d, struct ynode **out)
{
	const yaml_char_t *anchor = event_anchor(ev);
	struct ynode *n;

	if (anchor) {
		fctl_diag_add(d, FCTL_SEV_ERROR, file, (uint32_t)ev->start_mark.line + 1,
			      (uint32_t)ev->start_mark.column + 1, "alias", NULL,
			      "anchor '&%s' found; profiles do not support anchors and "
			      "aliases (write the value out)",
			      (const char *)anchor);
		return -EINVAL;
	}
	if (++*nodes > YAML_MAX_NODES) {
		fctl_diag_add(d, FCTL_SEV_ERROR, file, (uint32_t)ev->start_mark.line + 1,
			      (uint32_t)ev->start_mark.column + 1, "too-large", NULL,
			      "more than %u YAML nodes; profile too large", YAML_MAX_NODES);
		return -EFBIG;
	}
	if (ev->type == YAML_SCALAR_EVENT)
		return scalar_node(file, ev, d, out);
	if (depth >= YAML_MAX_DEPTH) {
		fctl_diag_add(d, FCTL_SEV_ERROR, file, (uint32_t)ev->start_mark.line + 1,
			      (uint32_t)ev->start_mark.column + 1, "too-deep", NULL,
			      "nesting deeper than %d levels", YAML_MAX_DEPTH);
		return -EINVAL;
	}
	n = node_new(ev->type == YAML_SEQUENCE_START_EVENT ? YNODE_SEQ : YNODE_MAP,
		     &ev->start_mark);
	if (!n)
		return -ENOMEM;
	*out = n;
	return 0;
}

int fctl_ynode_parse(const char *file, const unsigned char *data, size_t len,
		     struct fctl_diags *d, struct ynode **out)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	struct ynode *stack[YAML_MAX_DEPTH + 1];
	size_t depth = 0, nodes = 0, docs = 0;
	struct ynode *root = NULL;
	int r = 0;
	bool done = false;

	*out = NULL;
	if (len > YAML_MAX_FILE) {
		fctl_diag_add(d, FCTL_SEV_ERROR, file, 0, 0, "too-large", NULL,
			      "file is %zu bytes; profiles are limited to %u bytes", len,
			      YAML_MAX_FILE);
		return -EFBIG;
	}
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, data, len);

	while (!done) {
		struct ynode *n = NULL;

		if (!yaml_parser_parse(&parser, &ev)) {
			parser_error(file, data, len, &parser, d);
			r = -EINVAL;
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				fctl_diag_add(d, FCTL_SEV_ERROR, file,
					      (uint32_t)ev.start_mark.line + 1,
					      (uint32_t)ev.start_mark.column + 1, "multiple-documents",
					      NULL,
					      "a second YAML document starts here; a profile file holds exactly one");
				r = -EINVAL;
				done = true;
			}
			break;
		case YAML_ALIAS_EVENT:
			fctl_diag_add(d, FCTL_SEV_ERROR, file, (uint32_t)ev.start_mark.line + 1,
				      (uint32_t)ev.start_mark.column + 1, "alias", NULL,
				      "alias '*%s' found; profiles do not support anchors and aliases "
				      "(write the value out)",
				      ev.data.alias.anchor ? (const char *)ev.data.alias.anchor : "");
			r = -EINVAL;
			done = true;
			break;
		case YAML_SCALAR_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT: {
			int e = event_node(file, &ev, depth, &nodes, d, &n);

			if (e == 0 && depth == 0) {
				root = n;
			} else if (e == 0 && add_kid(stack[depth - 1], n) < 0) {
				fctl_ynode_free(n);
				e = -ENOMEM;
			}
			if (e < 0) {
				r = e;
				done = true;
				break;
			}
			if (n->type != YNODE_SCALAR)
				stack[depth++] = n;
			break;
		}
		case YAML_SEQUENCE_END_EVENT:
			depth--;
			break;
		case YAML_MAPPING_END_EVENT:
			depth--;
			if (check_dup_keys(file, stack[depth], d) == -ENOMEM)
				r = -ENOMEM;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (r < 0) {
		fctl_ynode_free(root);
		return r;
	}
	*out = root;
	return 0;
}
