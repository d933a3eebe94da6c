/* SPDX-License-Identifier: MIT */
/*
 * Dependency-free utilities: growable buffers, JSON string escaping, secrets
 * hygiene, number and duration parsing, edit distance for "did you mean",
 * big-endian fields, whole-file reads and all-or-nothing file writes.
 *
 * Conventions (all of libfctl): functions return int >= 0 on success and a
 * negative errno on failure; output parameters are written only on success.
 */
#ifndef FCTL_UTIL_H
#define FCTL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define FCTL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define FCTL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FCTL_PRINTF(f, a)
#endif

/* A growable, always NUL-terminated byte buffer. Zero-initialise to use. */
struct fctl_buf {
	char *data;
	size_t len;
	size_t cap;
	bool oom; /* sticky: an allocation failed, contents are truncated */
};

void fctl_buf_release(struct fctl_buf *b);
void fctl_buf_reset(struct fctl_buf *b);
int fctl_buf_append(struct fctl_buf *b, const void *p, size_t n);
int fctl_buf_puts(struct fctl_buf *b, const char *s);
int fctl_buf_putc(struct fctl_buf *b, char c);
int fctl_buf_printf(struct fctl_buf *b, const char *fmt, ...) FCTL_PRINTF(2, 3);
/* bytes appended as lower-case hex (fctl_format_hex into a buffer) */
int fctl_buf_put_hex(struct fctl_buf *b, const uint8_t *p, size_t len);
int fctl_buf_vprintf(struct fctl_buf *b, const char *fmt, va_list ap) FCTL_PRINTF(2, 0);
/* Transfers ownership of the data to the caller; the buffer is left empty. */
char *fctl_buf_steal(struct fctl_buf *b);

/* JSON: append s as a quoted, escaped JSON string ("null" for NULL). */
int fctl_buf_json_str(struct fctl_buf *b, const char *s);
/* XML: append s with &<>"' escaped. */
int fctl_buf_xml_str(struct fctl_buf *b, const char *s);

/* Read-only opens that may be served from files opened earlier: a process about to
 * lose the right to open some paths (an agent worker dropping to an unprivileged
 * user) opens them first with fctl_preopen_add (which takes fd); fctl_open_ro(path)
 * then returns a new descriptor of that open file, rewound, and opens path itself
 * (O_RDONLY | O_CLOEXEC | flags) when it was not preopened. The fd or a negative
 * errno (with errno set as open(2) sets it). */
int fctl_preopen_add(const char *path, int fd);
int fctl_open_ro(const char *path, int flags);
/* fopen(path, "re") through fctl_open_ro: NULL with errno set on failure. */
FILE *fctl_fopen_ro(const char *path);

/* Secrets. */
void fctl_memzero(void *p, size_t n);
bool fctl_memeq_ct(const void *a, const void *b, size_t n);

/* Parsing. All reject trailing garbage, signs and overflow. */
/* Whether a relative path given by a user stays below the directory it is resolved
 * against: not empty, not absolute, no '..' component. Returns 0, or -EINVAL with *why
 * set to a static phrase ("is an absolute path", ...). The profile's validation and the
 * file key backend both apply it to a file key's id: it never leaves the key base. */
int fctl_path_below_check(const char *id, const char **why);

int fctl_parse_u64(const char *s, uint64_t *out);          /* decimal or 0x hex */
int fctl_parse_duration(const char *s, uint64_t *seconds); /* 90, 90s, 5m, 24h, 30d, 1h30m */
int fctl_parse_mac(const char *s, uint8_t mac[6]);
int fctl_format_mac(const uint8_t mac[6], char out[18]);
/* value of one hex digit, or -1 */
int fctl_hexval(int c);
/* hex string (even length, no separators) -> bytes; len must match exactly */
int fctl_parse_hex(const char *s, uint8_t *out, size_t len);
/* The value of key in a line of space-separated key=value words (a word starts the line
 * or follows a space; its value ends at a space, a newline or the end): copied to
 * out[len], true; false when absent or when the value does not fit in out. */
bool fctl_kv_word(const char *line, const char *key, char *out, size_t len);
/* bytes -> lower-case hex, NUL-terminated: out holds 2 * len + 1 */
void fctl_format_hex(const uint8_t *p, size_t len, char *out);

/* Levenshtein distance, capped: returns cap+1 when larger. */
size_t fctl_edit_distance(const char *a, const char *b, size_t cap);
/* The candidate closest to word (distance <= 2 or a prefix match), or NULL. */
const char *fctl_did_you_mean(const char *word, const char *const *candidates, size_t n);

char *fctl_strdup(const char *s);
void *fctl_calloc(size_t n, size_t size);
/* Grows *arr (of *n elements of size) by one zeroed element; returns it or NULL. */
void *fctl_array_grow(void *arr_ptr, size_t *n, size_t *cap, size_t size);

/* An error text into err[len] (nothing when err is NULL or len 0). */
void fctl_set_err(char *err, size_t len, const char *fmt, ...) FCTL_PRINTF(3, 4);

/* Big-endian fields of n bytes (n <= 8) of wire formats. */
void fctl_put_be(uint8_t *p, uint64_t v, unsigned int n);
uint64_t fctl_get_be(const uint8_t *p, unsigned int n);

/* --- files --- */

/* write() until all n bytes are written (EINTR retried). Negative errno. */
int fctl_write_all(int fd, const void *p, size_t n);
/* Appends the whole file to b. Negative errno (-ENOMEM when b ran out of memory). */
int fctl_file_read(const char *path, struct fctl_buf *b);
/* fsync()s the directory that holds path (so a rename or a new name in it is durable). */
int fctl_fsync_parent(const char *path);

#define FCTL_FILE_SYNC_DIR 0x1 /* fctl_file_replace: also fsync the directory */
/* Replaces path with data, all or nothing: writes tmp (NULL: PATH.tmp.PID; created with
 * mode, never through a symlink), fsyncs it and renames it over path; tmp is removed on
 * failure. With FCTL_FILE_SYNC_DIR the directory is fsynced after the rename. */
int fctl_file_replace(const char *path, const char *tmp, const void *data, size_t len,
		      mode_t mode, unsigned int flags);
/* Creates every missing directory above the last component of path, with mode. */
int fctl_mkdir_parents(const char *path, mode_t mode);
/* mkdir -p: fctl_mkdir_parents, then path itself (an existing directory is success). */
int fctl_mkdir_all(const char *path, mode_t mode);

/* A lock file held for as long as the returned fd stays open (flock, so the kernel drops it
 * when the process dies): opens path (created 0600, never through a symlink) and takes it
 * without waiting. On success returns the fd and, with FCTL_LOCK_WRITE_PID, leaves this
 * process's pid in the file. -EBUSY when another process holds it (*holder, when not NULL,
 * gets the pid that process wrote, or 0); other negative errno from open/flock. */
#define FCTL_LOCK_WRITE_PID 0x1
int fctl_lockfile_take(const char *path, unsigned int flags, long *holder);

#endif
