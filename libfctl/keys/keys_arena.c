// SPDX-License-Identifier: MIT
/*
 * The key arena: struct fctl_key slots in pages of their own (mmap'd, mlock'd,
 * MADV_DONTDUMP, MADV_WIPEONFORK), and page-aligned mappings for larger secrets.
 *
 * Why pages of their own: mlock and madvise work on whole pages, so a key in malloc'd
 * memory shares its page with whatever the heap put beside it, MADV_DONTDUMP refuses
 * the unaligned address (EINVAL), and munlock on free unlocks the other keys of that
 * page. Here a page holds keys only, its bookkeeping lives on the heap, and it is
 * never unlocked: the arena keeps its pages for the life of the process (as many as
 * the most keys held at once need) and reuses wiped slots.
 */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fctl/key_backend.h"
#include "fctl/keys.h"
#include "fctl/util.h"

#define SLOTS_MAX 256 /* per page: 85 keys in a 4 KiB page; larger pages use 256 */
#define SLOT_SIZE ((sizeof(struct fctl_key) + alignof(max_align_t) - 1) / \
		   alignof(max_align_t) * alignof(max_align_t))

struct arena_page {
	uint8_t *base;
	uint64_t used[SLOTS_MAX / 64];
	unsigned n_used;
};

static struct {
	pthread_mutex_t mu;
	struct arena_page *pages;
	size_t n_pages, cap_pages, n_keys;
	size_t page_size;
	unsigned slots; /* per page */
	pid_t locked_by; /* locks are not inherited by fork: a child locks again */
	struct fctl_keys_protection st;
} arena = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* mlock(2) itself: a sanitizer's mlock interceptor does nothing and says it worked */
static int lock_pages(void *p, size_t len)
{
	return syscall(SYS_mlock, p, len) == 0 ? 0 : -1;
}

/* Locks and advises a fresh mapping, noting what failed; the caller holds arena.mu. */
static void protect(void *p, size_t len)
{
	if (lock_pages(p, len) < 0 && !arena.st.lock_errno)
		arena.st.lock_errno = errno;
	if (madvise(p, len, MADV_DONTDUMP) < 0 && !arena.st.dontdump_errno)
		arena.st.dontdump_errno = errno;
#ifdef MADV_WIPEONFORK
	if (madvise(p, len, MADV_WIPEONFORK) < 0 && !arena.st.wipeonfork_errno)
		arena.st.wipeonfork_errno = errno;
#else
	arena.st.wipeonfork_errno = EOPNOTSUPP;
#endif
}

static void *map_pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	protect(p, len);
	return p;
}

static void arena_init(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	arena.page_size = ps > 0 ? (size_t)ps : 4096;
	arena.slots = (unsigned)(arena.page_size / SLOT_SIZE);
	if (arena.slots > SLOTS_MAX)
		arena.slots = SLOTS_MAX;
	arena.locked_by = getpid();
}

/* In a child of fork the pages are mapped (wiped, with MADV_WIPEONFORK) but unlocked. */
static void relock_after_fork(void)
{
	pid_t me = getpid();

	if (arena.locked_by == me)
		return;
	arena.locked_by = me;
	for (size_t i = 0; i < arena.n_pages; i++)
		if (lock_pages(arena.pages[i].base, arena.page_size) < 0 && !arena.st.lock_errno)
			arena.st.lock_errno = errno;
}

static struct arena_page *page_with_room(void)
{
	struct arena_page *pg;

	for (size_t i = 0; i < arena.n_pages; i++)
		if (arena.pages[i].n_used < arena.slots)
			return &arena.pages[i];
	if (arena.n_pages == arena.cap_pages) {
		size_t cap = arena.cap_pages ? 2 * arena.cap_pages : 4;
		struct arena_page *v = realloc(arena.pages, cap * sizeof(*v));

		if (!v)
			return NULL;
		arena.pages = v;
		arena.cap_pages = cap;
	}
	pg = &arena.pages[arena.n_pages];
	memset(pg, 0, sizeof(*pg));
	pg->base = map_pages(arena.page_size);
	if (!pg->base)
		return NULL;
	arena.n_pages++;
	return pg;
}

struct fctl_key *fctl_keys_alloc(void)
{
	struct arena_page *pg;
	struct fctl_key *k = NULL;

	pthread_mutex_lock(&arena.mu);
	if (!arena.page_size)
		arena_init();
	relock_after_fork();
	pg = page_with_room();
	for (unsigned s = 0; pg && s < arena.slots; s++) {
		if (pg->used[s / 64] & (UINT64_C(1) << (s % 64)))
			continue;
		pg->used[s / 64] |= UINT64_C(1) << (s % 64);
		pg->n_used++;
		arena.n_keys++;
		k = (struct fctl_key *)(void *)(pg->base + (size_t)s * SLOT_SIZE);
		memset(k, 0, sizeof(*k));
		break;
	}
	pthread_mutex_unlock(&arena.mu);
	return k;
}

void fctl_key_free(struct fctl_key *k)
{
	uint8_t *p = (uint8_t *)k;

	if (!k)
		return;
	fctl_memzero(k, sizeof(*k));
	pthread_mutex_lock(&arena.mu);
	for (size_t i = 0; i < arena.n_pages; i++) {
		struct arena_page *pg = &arena.pages[i];
		size_t off;
		unsigned s;

		if (p < pg->base || p >= pg->base + arena.page_size)
			continue;
		off = (size_t)(p - pg->base);
		s = (unsigned)(off / SLOT_SIZE);
		if (off % SLOT_SIZE == 0 && s < arena.slots &&
		    (pg->used[s / 64] & (UINT64_C(1) << (s % 64)))) {
			/* the page stays locked: other keys may live in it, the next one will */
			pg->used[s / 64] &= ~(UINT64_C(1) << (s % 64));
			pg->n_used--;
			arena.n_keys--;
		}
		break;
	}
	pthread_mutex_unlock(&arena.mu);
}

void *fctl_keys_secure_alloc(size_t n)
{
	size_t len;
	void *p;

	pthread_mutex_lock(&arena.mu);
	if (!arena.page_size)
		arena_init();
	len = (n + arena.page_size - 1) / arena.page_size * arena.page_size;
	p = n ? map_pages(len) : NULL;
	pthread_mutex_unlock(&arena.mu);
	return p;
}

void fctl_keys_secure_free(void *p, size_t n)
{
	size_t len;

	if (!p)
		return;
	len = (n + arena.page_size - 1) / arena.page_size * arena.page_size;
	fctl_memzero(p, len);
	munmap(p, len); /* its own pages: unmapping unlocks nothing else */
}

void fctl_keys_protection(struct fctl_keys_protection *out)
{
	pthread_mutex_lock(&arena.mu);
	*out = arena.st;
	out->pages = arena.n_pages;
	out->keys = arena.n_keys;
	out->slots_per_page = arena.page_size ? arena.slots : 0;
	out->locked = !arena.st.lock_errno;
	out->dontdump = !arena.st.dontdump_errno;
	out->wipeonfork = !arena.st.wipeonfork_errno;
	pthread_mutex_unlock(&arena.mu);
}
