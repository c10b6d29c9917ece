/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: write-arounds (discard, write-zeroes, bypass writes).
 *
 * A write-around replaces a range on the nodes without the cache.  From
 * sc_around_begin() to sc_around_end() the range is in transition: the
 * nodes may hold the old data, the new data or a mix.  So:
 *   - the cached range is dropped at the beginning;
 *   - reads of it wait and fetches skip it (a fetch would make the old
 *     node data "clean", or show data older than what the guest wrote);
 *   - writes to it are blocked (their writeback could land before the
 *     write-around and be overwritten by it);
 *   - the oldest flush epoch of the dirty data it dropped, and of the
 *     writeback jobs over the range, stays an obligation: that data is
 *     superseded only once the replacement is on the nodes, and a flush
 *     that wanted it must not succeed before.
 * There are few write-arounds at a time (the guest's queue depth bounds
 * them), so they are kept in a list and the queries below are linear in
 * their number.
 */
#include "sc-internal.h"

SCAround *sc_around_begin(SCCache *c, uint64_t offset, uint64_t len)
{
    uint64_t end = sc_range_end(offset, len);
    SCAround *a = g_new0(SCAround, 1);
    SCExtent *e;

    a->link.data = a;
    a->start = offset;
    a->end = end;
    a->min_since = UINT64_MAX;
    for (e = sc_ext_lookup(c, offset); e && e->start < end;
         e = sc_ext_next(e)) {
        if (e->state == SC_EXT_DIRTY) {
            a->min_since = MIN(a->min_since, e->since);
        }
    }
    /*
     * An overlapping writeback job in flight may fail once nothing cached
     * depends on it any more: what it owed is owed by this write now.
     */
    a->min_since = MIN(a->min_since, sc_wb_min_since(c, offset, end));
    /* Listed first, so that the drop's ticket update sees the obligation. */
    g_queue_push_tail_link(&c->arounds, &a->link);
    sc_range_drop(c, offset, len);
    return a;
}

bool sc_around_ready(SCCache *c, SCAround *a)
{
    return !sc_range_busy(c, a->start, a->end - a->start);
}

void sc_around_end(SCCache *c, SCAround *a, int ret)
{
    g_queue_unlink(&c->arounds, &a->link);
    if (ret < 0 && a->min_since != UINT64_MAX) {
        /* The guest's request reports the error: nothing is kept. */
        sc_tickets_fail(c, a->start, a->end, a->min_since, ret, false);
    }
    sc_tickets_update(c, a->start, a->end);
    g_free(a);
}

/* End of the run from @off that write-arounds cover; @off if none does. */
uint64_t sc_around_covered_end(SCCache *c, uint64_t off)
{
    bool moved = true;
    GList *l;

    while (moved) {
        moved = false;
        for (l = c->arounds.head; l; l = l->next) {
            SCAround *a = l->data;

            if (a->start <= off && off < a->end) {
                off = a->end;
                moved = true;
            }
        }
    }
    return off;
}

/* The first write-around start after @off, or UINT64_MAX. */
uint64_t sc_around_next_start(SCCache *c, uint64_t off)
{
    uint64_t best = UINT64_MAX;
    GList *l;

    for (l = c->arounds.head; l; l = l->next) {
        SCAround *a = l->data;

        if (a->start > off) {
            best = MIN(best, a->start);
        }
    }
    return best;
}

bool sc_around_overlaps(SCCache *c, uint64_t start, uint64_t end)
{
    GList *l;

    for (l = c->arounds.head; l; l = l->next) {
        SCAround *a = l->data;

        if (a->start < end && start < a->end) {
            return true;
        }
    }
    return false;
}

/* Oldest obligation of the write-arounds overlapping [start, end). */
uint64_t sc_around_min_need(SCCache *c, uint64_t start, uint64_t end)
{
    uint64_t m = UINT64_MAX;
    GList *l;

    for (l = c->arounds.head; l; l = l->next) {
        SCAround *a = l->data;

        if (a->start < end && start < a->end) {
            m = MIN(m, a->min_since);
        }
    }
    return m;
}

void sc_arounds_free_all(SCCache *c)
{
    while (c->arounds.head) {
        SCAround *a = c->arounds.head->data;

        g_queue_unlink(&c->arounds, &a->link);
        g_free(a);
    }
}
