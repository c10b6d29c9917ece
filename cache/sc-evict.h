/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: eviction (sc-evict.c): the budget check and making room by
 * dropping the least recently used clean extents, then queued prefetch
 * (whose cancellation lives here too: it drops extents).
 *
 * Owns nothing: it reads SCPageStore's and SCExtentMap's counters and
 * consumes SCExtentMap's LRU order.  Dirty data, data under writeback and
 * the range a caller is working on (@keep_start, @keep_end) are never
 * dropped.
 *
 * Locking: none here.  The caller serialises every call into the core
 * (the driver holds its cache lock around each); nothing in this module
 * blocks, sleeps or reads a clock.
 */
#ifndef SC_EVICT_H
#define SC_EVICT_H

/* sc-evict.c: clean LRU and making room */
bool sc_over_budget(SCCache *c, uint64_t mem_need, uint64_t ext_need);
bool sc_make_room(SCCache *c, uint64_t mem_need, uint64_t ext_need,
                  uint64_t keep_start, uint64_t keep_end,
                  bool cancel_prefetch);
uint64_t sc_meta_bytes(const SCCache *c);

/* Cancel a queued prefetch job and drop the extents waiting for it. */
void sc_fetch_cancel(SCCache *c, SCFetchJob *job);
/* Cancel the newest queued prefetch job of the busiest queue. */
bool sc_prefetch_cancel_one(SCCache *c);

#endif /* SC_EVICT_H */
