/* SPDX-License-Identifier: MIT */
/*
 * The packet-number ledger's text (STATE_DIR/sa-ledger, docs/keys-and-pn.md), shared by
 * the engine that keeps it (engine_pn.c) and the evidence bundle that shows it
 * (evidence_pn.c): its head, one event a line, and the anchor an audit record keeps of
 * it (its length and SHA-256, so that the ledger an evidence bundle carries is the one
 * the hash-chained, signed audit log recorded).
 *
 * A line: "live|retired tx|rx HASH|- KEYID SCI PN\n": HASH the key's name (the first 16
 * bytes of SHA-256("fabricctl sa-ledger 1" NUL key), 32 lowercase hex digits; "-" for a
 * key known by KEYID only), KEYID 32 lowercase hex digits, SCI "0x" and 16 lowercase hex
 * digits, PN decimal without leading zeros: live, the PN the SA started at; retired, the
 * next PN the key may use on that SCI.
 */
#ifndef FCTL_SA_LEDGER_H
#define FCTL_SA_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/util.h"

#define FCTL_SA_LEDGER_HEAD "fabricctl-sa-ledger 1\n"
#define FCTL_SA_LEDGER_HASH_LEN 16
#define FCTL_SA_LEDGER_KEYID_LEN 16
/* the audit action of an anchor record; its detail is "bytes=N sha256=HEX" */
#define FCTL_SA_LEDGER_ACTION "sa-ledger"
#define FCTL_SA_LEDGER_ANCHOR_MAX 96

struct fctl_sa_ledger_event {
	bool tx;
	bool has_hash;
	bool retired;
	uint8_t hash[FCTL_SA_LEDGER_HASH_LEN];
	uint8_t keyid[FCTL_SA_LEDGER_KEYID_LEN];
	uint64_t sci;
	uint64_t pn; /* live: where the SA started; retired: the next PN the key may use */
};

/* One line (without its newline; s is cut into words): 0, or -EINVAL for anything that
 * is not an event exactly as fctl_sa_ledger_format writes it. */
int fctl_sa_ledger_parse(char *s, struct fctl_sa_ledger_event *ev);
/* Appends ev's line with its newline. 0 or -ENOMEM. */
int fctl_sa_ledger_format(struct fctl_buf *b, const struct fctl_sa_ledger_event *ev);

/* What an audit record keeps of the ledger: its first size bytes (whole lines) and their
 * SHA-256. */
struct fctl_sa_ledger_anchor {
	uint64_t size;
	uint8_t sha256[32];
};
/* "bytes=N sha256=HEX" into out (FCTL_SA_LEDGER_ANCHOR_MAX bytes). */
void fctl_sa_ledger_anchor_format(const struct fctl_sa_ledger_anchor *a, char *out);
/* The reverse: 0, or -EINVAL for any other text. */
int fctl_sa_ledger_anchor_parse(const char *detail, struct fctl_sa_ledger_anchor *a);
/* The bytes of data up to and including its last newline (a line a crash cut short is
 * not part of the ledger). */
size_t fctl_sa_ledger_whole(const char *data, size_t len);

#endif
