/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the page store and memory accounting.
 *
 * Every data byte the cache holds lives in a page of page_size bytes.  A
 * page is in the store (indexed by offset / page_size) while any CLEAN or
 * DIRTY byte of it is cached (@used > 0); jobs hold extra references and
 * reads copying from it count as readers.  A page with a job reference or
 * a reader is never modified: sc_store_writable() copies it first.
 * c->store.mem_bytes counts every live page wherever it is (store,
 * writeback job, fetch job, lingering until its readers are gone), which
 * is what cache-size bounds.
 */
#include "sc-internal.h"

void sc_iov_iter_init(SCIovIter *it, const struct iovec *iov, int iovcnt,
                      size_t skip)
{
    it->iov = iov;
    it->iovcnt = iovcnt;
    it->idx = 0;
    it->off = 0;
    sc_iov_iter_skip(it, skip);
}

/* Advance by @n bytes; also steps over empty elements. */
void sc_iov_iter_skip(SCIovIter *it, uint64_t n)
{
    while (it->idx < it->iovcnt) {
        uint64_t avail = it->iov[it->idx].iov_len - it->off;

        if (n < avail) {
            it->off += n;
            return;
        }
        n -= avail;
        it->idx++;
        it->off = 0;
    }
}

/* Copy @len bytes between the iterator and @buf (@to_iov: into the iov). */
void sc_iov_iter_copy(SCIovIter *it, uint8_t *buf, uint64_t len,
                      bool to_iov)
{
    while (len) {
        uint8_t *base;
        uint64_t n;

        g_assert(it->idx < it->iovcnt);
        base = (uint8_t *)it->iov[it->idx].iov_base + it->off;
        n = MIN(len, it->iov[it->idx].iov_len - it->off);
        if (to_iov) {
            memcpy(base, buf, n);
        } else {
            memcpy(buf, base, n);
        }
        buf += n;
        len -= n;
        sc_iov_iter_skip(it, n);
    }
}

static uint32_t page_pool_cap(const SCCache *c)
{
    return MIN(SC_PAGE_POOL_MAX, c->opts.size / c->page_size / 64);
}

/*
 * Under AddressSanitizer every page is its own allocation, so that an
 * overrun of a page is caught; otherwise page data comes from the arenas.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SC_USE_ARENAS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SC_USE_ARENAS 0
#endif
#endif
#ifndef SC_USE_ARENAS
#define SC_USE_ARENAS 1
#endif

/*
 * Make the arenas hold every page the budget allows plus the page pool,
 * so that the malloc fallback below is never needed.  A larger cache-size
 * adds an arena; a smaller one keeps the slots reserved.
 */
void sc_page_arenas_fit(SCCache *c)
{
    uint64_t want = c->opts.size / c->page_size + page_pool_cap(c) + 1;
    SCArena *a;

    if (!SC_USE_ARENAS || want <= c->store.arena_slots) {
        return;
    }
    /* The page pool keeps pages for reuse already: keep few free slots. */
    a = sc_arena_new(c->page_size, want - c->store.arena_slots,
                     SC_ARENA_KEEP_SLOTS, SC_ARENA_COLD_US);
    if (a) {
        g_ptr_array_add(c->store.arenas, a);
        c->store.arena_slots = want;
    }
}

static uint8_t *page_data_get(SCCache *c)
{
    guint i;

    for (i = 0; i < c->store.arenas->len; i++) {
        void *slot = sc_arena_get(g_ptr_array_index(c->store.arenas, i));

        if (slot) {
            return slot;
        }
    }
    return g_malloc(c->page_size);
}

static void page_data_put(SCCache *c, uint8_t *data)
{
    guint i;

    for (i = 0; i < c->store.arenas->len; i++) {
        SCArena *a = g_ptr_array_index(c->store.arenas, i);

        if (sc_arena_owns(a, data)) {
            sc_arena_put(a, data);
            return;
        }
    }
    g_free(data);
}

static void page_free(SCCache *c, SCPage *p)
{
    page_data_put(c, p->data);
    g_free(p);
}

SCPage *sc_page_alloc(SCCache *c, uint64_t index)
{
    SCPage *p;

    if (c->store.pool->len) {
        p = g_ptr_array_steal_index_fast(c->store.pool, c->store.pool->len - 1);
    } else {
        p = g_new(SCPage, 1);
        p->data = page_data_get(c);
    }

    p->index = index;
    p->refs = 1;
    p->used = 0;
    p->writers = 0;
    p->readers = 0;
    p->in_store = false;
    c->store.mem_bytes += c->page_size;
    c->store.count++;
    return p;
}

static void page_recycle(SCCache *c, SCPage *p)
{
    c->store.mem_bytes -= c->page_size;
    c->store.count--;
    if (c->store.pool->len < page_pool_cap(c)) {
        g_ptr_array_add(c->store.pool, p);
    } else {
        page_free(c, p);
    }
}

void sc_page_unref(SCCache *c, SCPage *p)
{
    g_assert(p->refs > 0);
    if (--p->refs == 0) {
        g_assert(!p->in_store);
        if (g_atomic_int_get(&p->readers)) {
            /* a read copies from it with the lock dropped: not yet */
            g_ptr_array_add(c->store.lingering, p);
            return;
        }
        page_recycle(c, p);
    }
}

void sc_pages_reap(SCCache *c)
{
    guint i = 0;

    while (i < c->store.lingering->len) {
        SCPage *p = g_ptr_array_index(c->store.lingering, i);

        /* (the read's copy happens before its decrement: seq_cst) */
        if (g_atomic_int_get(&p->readers)) {
            i++;
            continue;
        }
        g_ptr_array_remove_index_fast(c->store.lingering, i);
        page_recycle(c, p);
    }
}

/* Give pooled pages back beyond the (possibly lowered) cap. */
void sc_page_pool_trim(SCCache *c)
{
    while (c->store.pool->len > page_pool_cap(c)) {
        page_free(c, g_ptr_array_steal_index_fast(c->store.pool,
                                                  c->store.pool->len - 1));
    }
}

/* Free the pool and the arenas; every other page must be gone. */
void sc_page_pool_free(SCCache *c)
{
    while (c->store.pool->len) {
        page_free(c, g_ptr_array_steal_index_fast(c->store.pool,
                                                  c->store.pool->len - 1));
    }
    g_ptr_array_unref(c->store.pool);
    g_ptr_array_free(c->store.arenas, true);
}

SCPage *sc_store_lookup(SCCache *c, uint64_t index)
{
    return g_hash_table_lookup(c->store.table, &index);
}

/* The store takes over one reference of @p. */
void sc_store_insert(SCCache *c, SCPage *p)
{
    g_assert(!sc_store_lookup(c, p->index));
    p->in_store = true;
    g_hash_table_insert(c->store.table, &p->index, p);
}

static void store_remove(SCCache *c, SCPage *p)
{
    /* a staged page is never dropped (sc-staged.h) */
    g_assert(!g_atomic_int_get(&p->writers));
    g_hash_table_remove(c->store.table, &p->index);
    p->in_store = false;
    sc_page_unref(c, p);
}

SCPage *sc_store_writable(SCCache *c, uint64_t index)
{
    SCPage *p = sc_store_lookup(c, index);
    SCPage *copy;

    if (!p) {
        p = sc_page_alloc(c, index);
        sc_store_insert(c, p);
        return p;
    }
    if (!sc_page_shared(p)) {
        return p;
    }
    /* a staged page is never written by others (sc-staged.h) */
    g_assert(!g_atomic_int_get(&p->writers));
    /* A writeback job sends this page or a read copies it: copy it. */
    copy = sc_page_alloc(c, index);
    memcpy(copy->data, p->data, c->page_size);
    copy->used = p->used;
    copy->in_store = true;
    /* replace, not insert: the key must point into the new page */
    g_hash_table_replace(c->store.table, &copy->index, copy);
    p->in_store = false;
    sc_page_unref(c, p);
    return copy;
}

void sc_store_add_used(SCCache *c, uint64_t start, uint64_t end)
{
    uint64_t pos = start;

    while (pos < end) {
        uint64_t pend = sc_round_down(pos, c->page_size) + c->page_size;
        uint64_t n = MIN(end, pend) - pos;
        SCPage *p = sc_store_lookup(c, sc_page_index(c, pos));

        g_assert(p && p->used + n <= c->page_size);
        p->used += n;
        pos += n;
    }
}

void sc_store_sub_used(SCCache *c, uint64_t start, uint64_t end)
{
    uint64_t pos = start;

    while (pos < end) {
        uint64_t pend = sc_round_down(pos, c->page_size) + c->page_size;
        uint64_t n = MIN(end, pend) - pos;
        SCPage *p = sc_store_lookup(c, sc_page_index(c, pos));

        g_assert(p && p->used >= n);
        p->used -= n;
        if (p->used == 0) {
            store_remove(c, p);
        }
        pos += n;
    }
}

static gboolean store_clear_one(gpointer key, gpointer value,
                                gpointer opaque)
{
    SCCache *c = opaque;
    SCPage *p = value;

    p->in_store = false;
    sc_page_unref(c, p);
    return TRUE;
}

void sc_store_clear(SCCache *c)
{
    g_hash_table_foreach_remove(c->store.table, store_clear_one, c);
}

uint32_t sc_pages_spanned(const SCCache *c, uint64_t start, uint64_t end)
{
    if (end <= start) {
        return 0;
    }
    return sc_page_index(c, end - 1) - sc_page_index(c, start) + 1;
}

uint64_t sc_store_pages_to_alloc(SCCache *c, uint64_t start, uint64_t end,
                                 bool *staged)
{
    uint64_t idx, n = 0;

    *staged = false;
    if (end <= start) {
        return 0;
    }
    for (idx = sc_page_index(c, start); idx <= sc_page_index(c, end - 1);
         idx++) {
        SCPage *p = sc_store_lookup(c, idx);

        if (!p || sc_page_shared(p)) {
            n++;
        }
        *staged |= p && g_atomic_int_get(&p->writers);
    }
    return n;
}

/*
 * Copy [start, end) between the cache's pages and the iterator: into the
 * pages (@to_iov false; they are made writable, i.e. private to the
 * cache, first) or out of them (they must be present).
 */
/*
 * Copy between the pages of [start, end) and the caller's iovec: into the
 * pages (copy-on-write where a job or a read pins them), or out of them.
 */
static void pages_copy(SCCache *c, uint64_t start, uint64_t end,
                       SCIovIter *it, bool to_iov)
{
    uint64_t pos = start;

    while (pos < end) {
        uint64_t pstart = sc_round_down(pos, c->page_size);
        uint64_t n = MIN(end, pstart + c->page_size) - pos;
        uint64_t idx = sc_page_index(c, pos);
        SCPage *p = to_iov ? sc_store_lookup(c, idx)
                           : sc_store_writable(c, idx);

        g_assert(p);
        sc_iov_iter_copy(it, p->data + (pos - pstart), n, to_iov);
        pos += n;
    }
}

void sc_pages_copy_in(SCCache *c, uint64_t start, uint64_t end,
                      SCIovIter *it)
{
    pages_copy(c, start, end, it, false);
}

void sc_pages_copy_out(SCCache *c, uint64_t start, uint64_t end,
                       SCIovIter *it)
{
    pages_copy(c, start, end, it, true);
}

void sc_job_iov_build(SCCache *c, uint64_t start, uint64_t end,
                      SCPage **pages, struct iovec *iov)
{
    uint64_t pos = start;
    uint32_t k = 0;

    while (pos < end) {
        uint64_t pstart = sc_round_down(pos, c->page_size);
        uint64_t n = MIN(end, pstart + c->page_size) - pos;

        iov[k].iov_base = pages[k]->data + (pos - pstart);
        iov[k].iov_len = n;
        pos += n;
        k++;
    }
}
