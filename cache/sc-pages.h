/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the page store and the memory budget (sc-pages.c), data
 * copies between pages and iovecs, and pinned cache hits (sc-hits.c).
 *
 * Owns SCPageStore.  Invariants:
 * - a page is in @table (the store), owned by jobs only, or lingering
 *   (see below), and @count counts all three; @refs is the store's
 *   reference plus one per job;
 * - a page with @refs > 1 or @readers > 0 is shared (sc_page_shared()) and
 *   immutable: a write to it goes to a copy (sc_store_writable()), so jobs
 *   and reads copying their hits see the bytes they were given;
 * - @readers counts the reads copying from the page with the caller's lock
 *   dropped (sc-hits.c): taken under the lock, given back without it.  A
 *   page whose last reference goes while it has readers lingers in
 *   @lingering, counted, until sc_pages_reap() sees its readers gone; only
 *   then is its memory reused.  The budget counts lingering pages, so
 *   sc_make_room() reaps before it evicts anything;
 * - @used is the number of bytes of CLEAN or DIRTY extents in the page;
 *   a store page with @used 0 is freed;
 * - @mem_bytes is what the pages and the metadata cost, the figure the
 *   budget (sc-evict.c) compares with the cache size.
 *
 * Locking: none here.  The caller serialises every call into the core
 * (the driver holds its cache lock around each); nothing in this module
 * blocks, sleeps or reads a clock.
 */
#ifndef SC_PAGES_H
#define SC_PAGES_H

typedef struct SCPage {
    uint64_t index;             /* offset / page_size; the hash key */
    uint32_t refs;              /* the store's plus one per job */
    uint32_t used;              /* bytes covered by CLEAN/DIRTY extents */
    int writers;                /* atomic: staged writes (sc-staged.h) */
    int readers;                /* atomic: reads copying from it (sc-hits.c) */
    bool in_store;
    uint8_t *data;              /* a slot of c->arenas (see sc-arena.h) */
} SCPage;

typedef struct SCPageStore {
    GHashTable *table;          /* index -> SCPage */
    uint64_t count;             /* all live pages, store and jobs */
    GPtrArray *pool;            /* freed pages kept for reuse */
    GPtrArray *lingering;       /* unreferenced pages still being read */
    GPtrArray *arenas;          /* SCArena: where page data lives */
    uint64_t arena_slots;       /* slots in all arenas */
    uint64_t mem_bytes;
} SCPageStore;

/* sc-pages.c: page store, memory accounting, data copies */
typedef struct SCIovIter {
    const struct iovec *iov;
    int iovcnt;
    int idx;
    size_t off;                 /* within iov[idx] */
} SCIovIter;

void sc_iov_iter_init(SCIovIter *it, const struct iovec *iov, int iovcnt,
                      size_t skip);
void sc_iov_iter_skip(SCIovIter *it, uint64_t n);
SCPage *sc_page_alloc(SCCache *c, uint64_t index);
void sc_page_unref(SCCache *c, SCPage *p);
/* Recycle the lingering pages that no read copies from any more. */
void sc_pages_reap(SCCache *c);

static inline bool sc_page_shared(const SCPage *p)
{
    return p->refs > 1 || g_atomic_int_get(&p->readers);
}

SCPage *sc_store_lookup(SCCache *c, uint64_t index);
void sc_store_insert(SCCache *c, SCPage *p);
SCPage *sc_store_writable(SCCache *c, uint64_t index);
void sc_store_add_used(SCCache *c, uint64_t start, uint64_t end);
void sc_store_sub_used(SCCache *c, uint64_t start, uint64_t end);
void sc_store_clear(SCCache *c);
/*
 * Pages [start, end) would need: absent or shared (sc_page_shared()); and
 * whether a staged write copies into one of them (@staged).
 */
uint64_t sc_store_pages_to_alloc(SCCache *c, uint64_t start, uint64_t end,
                                 bool *staged);
void sc_iov_iter_copy(SCIovIter *it, uint8_t *buf, uint64_t len,
                      bool to_iov);
void sc_pages_copy_in(SCCache *c, uint64_t start, uint64_t end,
                      SCIovIter *it);
void sc_pages_copy_out(SCCache *c, uint64_t start, uint64_t end,
                       SCIovIter *it);
/* Build pages and iov for a job over [start, end). */
void sc_job_iov_build(SCCache *c, uint64_t start, uint64_t end,
                      SCPage **pages, struct iovec *iov);
uint32_t sc_pages_spanned(const SCCache *c, uint64_t start, uint64_t end);
void sc_page_pool_trim(SCCache *c);
void sc_page_arenas_fit(SCCache *c);
void sc_page_pool_free(SCCache *c);


/* sc-hits.c: cache hits copied outside the caller's lock */
void sc_hits_init(SCHits *h);
void sc_hits_add(SCCache *c, SCHits *h, uint64_t start, uint64_t end,
                 uint64_t dst);

#endif /* SC_PAGES_H */
