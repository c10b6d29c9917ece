/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: staged writes, the copy of a rewrite outside the lock.
 *
 * An absorbed write into data that is already dirty (a guest rewriting its
 * hot blocks) changes no state, only bytes; with several iothreads its
 * copy, made under the cache lock, was a fifth of the time the other
 * threads waited for the lock.  Staged, it marks its pages under the lock
 * and copies with the lock dropped.  The rules that keep that safe are in
 * sc-staged.h.  Staging writes only to the pages it stages, so that two
 * threads' writes share no cache line beyond the lock's.
 */
#include "sc-internal.h"

static bool page_busy(const SCPage *p)
{
    return p && g_atomic_int_get(&p->writers);
}

static void stage_push(SCStage *st, SCPage *p, uint8_t *data, uint64_t len)
{
    if (st->n == st->cap) {
        st->v = sc_array_grow(st->v, st->inline_v, &st->cap, sizeof(*st->v));
    }
    st->v[st->n++] = (SCStageCopy) { .dst = data, .len = len, .page = p };
}

static void stage_reset(SCStage *st)
{
    if (st->v != st->inline_v) {
        g_free(st->v);
    }
    sc_stage_init(st);
}

bool sc_staged_begin(SCCache *c, uint64_t start, uint64_t end,
                     SCStage *stage)
{
    SCExtent *e;
    uint64_t idx;
    uint32_t i;

    /* Whole pages only: every byte of a staged page is this write's. */
    if (c->staged.hold || ((start | end) & (c->page_size - 1))) {
        return false;
    }
    e = sc_ext_lookup(c, start);
    if (!e || e->state != SC_EXT_DIRTY || e->wb || e->start > start ||
        e->end < end) {
        return false;
    }
    for (idx = sc_page_index(c, start); idx < sc_page_index(c, end); idx++) {
        SCPage *p = sc_store_lookup(c, idx);

        /* Pinned by a job or a read: copy on write.  Staged: wait. */
        if (sc_page_shared(p) || page_busy(p)) {
            stage_reset(stage);
            return false;
        }
        stage_push(stage, p, p->data, c->page_size);
    }
    for (i = 0; i < stage->n; i++) {
        g_atomic_int_inc(&((SCPage *)stage->v[i].page)->writers);
    }
    c->stats.write_staged_requests++;
    return true;
}

bool sc_staged_busy(SCCache *c, uint64_t start, uint64_t end, bool notify)
{
    SCExtent *e;

    /* Staged pages lie in DIRTY extents: look at those pages only. */
    for (e = sc_ext_lookup(c, start); e && e->start < end;
         e = sc_ext_next(e)) {
        uint64_t s = MAX(e->start, start), idx;

        if (e->state != SC_EXT_DIRTY || e->wb) {
            continue;
        }
        for (idx = sc_page_index(c, s);
             idx <= sc_page_index(c, MIN(e->end, end) - 1); idx++) {
            SCPage *p = sc_store_lookup(c, idx);

            if (!page_busy(p)) {
                continue;
            }
            if (!notify) {
                return true;
            }
            /* Ask the publisher for a call, then look again. */
            g_atomic_int_set(&c->staged.waiting, 1);
            if (page_busy(p)) {
                return true;
            }
        }
    }
    return false;
}

void sc_staged_planned(SCCache *c, bool refused)
{
    /* written only when it changes: @waiting shares its cache line */
    if (c->staged.hold != refused) {
        c->staged.hold = refused;
    }
}

/* The public side: stripe-cache.h */

void sc_stage_init(SCStage *stage)
{
    stage->n = 0;
    stage->cap = SC_STAGE_INLINE;
    stage->v = stage->inline_v;
}

void sc_staged_fill(const SCStage *stage, const struct iovec *iov,
                    int iovcnt, size_t iov_offset)
{
    SCIovIter it;
    uint32_t i;

    sc_iov_iter_init(&it, iov, iovcnt, iov_offset);
    for (i = 0; i < stage->n; i++) {
        sc_iov_iter_copy(&it, stage->v[i].dst, stage->v[i].len, false);
    }
}

bool sc_staged_publish(SCCache *c, SCStage *stage)
{
    uint32_t i;

    for (i = 0; i < stage->n; i++) {
        g_atomic_int_add(&((SCPage *)stage->v[i].page)->writers, -1);
    }
    stage_reset(stage);
    return g_atomic_int_get(&c->staged.waiting) &&
           g_atomic_int_compare_and_exchange(&c->staged.waiting, 1, 0);
}
