/* SPDX-License-Identifier: MIT */
/* Inside the key module: what the dispatch (keys.c) shares with the file backend. */
#ifndef FCTL_KEYS_INT_H
#define FCTL_KEYS_INT_H

#include "fctl/key_backend.h"

/* The built-in "file" backend (keys_file.c): always registered, first. */
extern const struct fctl_key_backend fctl_keys_file_backend;

#endif
