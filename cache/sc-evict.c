/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: eviction and the memory budget.
 *
 * One budget: data pages (counting clean, dirty, in-flight and fetch pages
 * alike) and bookkeeping together stay within cache-size, so the process
 * grows by no more than that; bookkeeping alone may use at most
 * meta_limit, an eighth of it, so that millions of one-byte extents cannot
 * crowd out the data.  Room is made by evicting CLEAN
 * extents from the cold end of the LRU, and as a last resort by cancelling
 * queued prefetch jobs that were not handed out yet.  DIRTY data and
 * anything in flight is never evicted; when they fill the budget the
 * caller is told to wait (or to bypass) and the writeback planner is put
 * under pressure.
 */
#include "sc-internal.h"

uint64_t sc_meta_bytes(const SCCache *c)
{
    /* What malloc really takes: each block also carries its header. */
    return c->ext.count * (sizeof(SCExtent) + SC_ALLOC_OVERHEAD) +
           c->store.count * (sizeof(SCPage) + SC_ALLOC_OVERHEAD +
                            SC_HASH_ENTRY_BYTES) +
           c->store.pool->len * (sizeof(SCPage) + c->page_size) +
           g_hash_table_size(c->wbj.jobs) *
               (sizeof(SCWbJob) + SC_ALLOC_OVERHEAD) +
           g_hash_table_size(c->fetch.jobs) *
               (sizeof(SCFetchJob) + SC_ALLOC_OVERHEAD) +
           c->store.arena_slots * sizeof(uint32_t) +
           c->geo.node_count * sizeof(SCNode) + sizeof(SCCache);
}

/*
 * Data and bookkeeping share cache-size, so that the process grows by no
 * more than cache-size however small the extents are; bookkeeping alone
 * may take at most meta_limit of it, so that data always keeps the rest.
 */
bool sc_over_budget(SCCache *c, uint64_t mem_need, uint64_t ext_need)
{
    uint64_t meta = sc_meta_bytes(c) + ext_need * sizeof(SCExtent);

    return c->store.mem_bytes + mem_need + meta > c->opts.size ||
           meta > c->meta_limit;
}

bool sc_make_room(SCCache *c, uint64_t mem_need, uint64_t ext_need,
                  uint64_t keep_start, uint64_t keep_end,
                  bool cancel_prefetch)
{
    GList *l = c->ext.lru.tail;

    sc_pages_reap(c);
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

/* A queued prefetch job nobody waits for any more (or that must go). */
void sc_fetch_cancel(SCCache *c, SCFetchJob *job)
{
    SCExtent *e = sc_ext_lookup(c, job->start);

    g_assert(!job->issued);
    /* Clear the job's extents first: deleting the last one recurses. */
    job->issued = true;
    while (e && e->start < job->end) {
        SCExtent *next = sc_ext_next(e);

        if (e->state == SC_EXT_FETCHING && e->fetch == job) {
            sc_ext_delete(c, e, SC_DROP_INVALIDATE);
        }
        e = next;
    }
    sc_fetch_job_unqueue(c, job);
    sc_fetch_job_free(c, job);
}

/* Cancel the newest queued prefetch job of the busiest queue. */
bool sc_prefetch_cancel_one(SCCache *c)
{
    SCNode *best = NULL;
    uint32_t i;

    if (!c->fetch.queued) {
        return false;
    }
    for (i = 0; i < c->geo.node_count; i++) {
        SCNode *n = &c->nodes[i];

        if (n->prefetch_queue.length &&
            (!best || n->prefetch_queue.length >
                      best->prefetch_queue.length)) {
            best = n;
        }
    }
    if (!best) {
        return false;
    }
    sc_fetch_cancel(c, best->prefetch_queue.tail->data);
    return true;
}
