/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the register of write-arounds in flight (discard,
 * write-zeroes, bypass writes), and what they cover.  Their life
 * (sc_around_begin/ready/end) is in sc-write.c, beside the writes they
 * hold off; this module calls nothing.
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

void sc_around_add(SCCache *c, SCAround *a)
{
    g_queue_push_tail_link(&c->arounds, &a->link);
}

void sc_around_remove(SCCache *c, SCAround *a)
{
    g_queue_unlink(&c->arounds, &a->link);
}
