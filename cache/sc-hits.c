/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: cache hits copied outside the caller's lock.
 *
 * A read that finds cached bytes counts itself as a reader of the pages
 * holding them and records where each piece goes.  (sc_read() copies at
 * once instead, under the caller's lock.)  A page with readers does not
 * change: a write or a fetch that must modify it copies it first
 * (sc_store_writable()), and a page dropped from the store meanwhile
 * lingers until its readers are gone (sc_pages_reap()); and a page being
 * written by a staged write is not read (sc-staged.h).  So the caller
 * can copy the bytes with no lock held, and they are exactly the bytes
 * cached when the read looked, which is when the read takes effect.
 *
 * The count is the only shared state a hit leaves behind, on the page
 * itself, and the read gives it back with an atomic decrement and no
 * lock: no list of hits to allocate an entry on, no second pass under the
 * lock.  Memory stays bounded: a lingering page counts until it is
 * recycled, as an orphan page of a writeback job does.
 */
#include "sc-internal.h"

static void hits_push(SCHits *h, const SCHitCopy *e)
{
    if (h->n == h->cap) {
        h->v = sc_array_grow(h->v, h->inline_v, &h->cap, sizeof(*h->v));
    }
    h->v[h->n++] = *e;
}

void sc_hits_init(SCHits *h)
{
    h->n = 0;
    h->cap = SC_HITS_INLINE;
    h->v = h->inline_v;
}

/* Hold the cached bytes [start, end), which go @dst bytes into the read. */
void sc_hits_add(SCCache *c, SCHits *h, uint64_t start, uint64_t end,
                 uint64_t dst)
{
    uint64_t pos = start;

    while (pos < end) {
        uint64_t pstart = sc_round_down(pos, c->page_size);
        uint64_t n = MIN(end, pstart + c->page_size) - pos;
        SCPage *p = sc_store_lookup(c, sc_page_index(c, pos));
        SCHitCopy *last = h->n ? &h->v[h->n - 1] : NULL;

        g_assert(p);
        if (last && last->page == p && last->dst + last->len == dst &&
            last->src + last->len == p->data + (pos - pstart)) {
            last->len += n;
        } else {
            SCHitCopy e = {
                .src = p->data + (pos - pstart), .len = n, .dst = dst,
                .page = p,
            };

            g_atomic_int_inc(&p->readers);
            hits_push(h, &e);
        }
        pos += n;
        dst += n;
    }
}

void sc_hits_copy(const SCHits *h, const struct iovec *iov, int iovcnt,
                  size_t iov_offset)
{
    uint64_t at = 0;
    SCIovIter it;
    uint32_t i;

    sc_iov_iter_init(&it, iov, iovcnt, iov_offset);
    for (i = 0; i < h->n; i++) {
        sc_iov_iter_skip(&it, h->v[i].dst - at);
        /* (copied to the iovec: the source is only read) */
        sc_iov_iter_copy(&it, (uint8_t *)h->v[i].src, h->v[i].len, true);
        at = h->v[i].dst + h->v[i].len;
    }
}

void sc_hits_done(SCHits *h)
{
    uint32_t i;

    for (i = 0; i < h->n; i++) {
        /* after the copy: a writer that sees 0 may reuse the bytes */
        g_atomic_int_add(&((SCPage *)h->v[i].page)->readers, -1);
    }
    if (h->v != h->inline_v) {
        g_free(h->v);
    }
    h->v = h->inline_v;
    h->n = 0;
}
