/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: eviction and the memory budget.
 *
 * Two budgets: data pages (mem_bytes <= cache-size, counting clean, dirty,
 * in-flight and fetch pages alike) and bookkeeping (meta_limit, an eighth
 * of cache-size, so that millions of one-byte extents cannot eat memory
 * that the data budget does not see).  Room is made by evicting CLEAN
 * extents from the cold end of the LRU, and as a last resort by cancelling
 * queued prefetch jobs that were not handed out yet.  DIRTY data and
 * anything in flight is never evicted; when they fill the budget the
 * caller is told to wait (or to bypass) and the writeback planner is put
 * under pressure.
 */
#include "sc-internal.h"

uint64_t sc_meta_bytes(const SCCache *c)
{
    return c->extent_count * sizeof(SCExtent) +
           c->page_count * (sizeof(SCPage) + SC_HASH_ENTRY_BYTES) +
           c->page_pool->len * (sizeof(SCPage) + c->page_size) +
           g_hash_table_size(c->wb_jobs) * sizeof(SCWbJob) +
           g_hash_table_size(c->fetch_jobs) * sizeof(SCFetchJob) +
           c->geo.node_count * sizeof(SCNode) + sizeof(SCCache);
}

bool sc_over_budget(SCCache *c, uint64_t mem_need, uint64_t ext_need)
{
    return c->mem_bytes + mem_need > c->opts.size ||
           sc_meta_bytes(c) + ext_need * sizeof(SCExtent) > c->meta_limit;
}

bool sc_make_room(SCCache *c, uint64_t mem_need, uint64_t ext_need,
                  uint64_t keep_start, uint64_t keep_end,
                  bool cancel_prefetch)
{
    GList *l = c->lru.tail;

    while (l && sc_over_budget(c, mem_need, ext_need)) {
        SCExtent *e = l->data;

        l = l->prev;
        /* The caller is about to use [keep_start, keep_end). */
        if (e->end <= keep_start || e->start >= keep_end) {
            sc_ext_delete(c, e, SC_DROP_EVICT);
        }
    }
    while (cancel_prefetch && sc_over_budget(c, mem_need, ext_need)) {
        if (!sc_prefetch_cancel_one(c)) {
            break;
        }
    }
    return !sc_over_budget(c, mem_need, ext_need);
}
