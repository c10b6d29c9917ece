/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: statistics.  Event counters are kept in c->stats as they
 * happen; the levels ("now" fields) are derived from the live counters so
 * they can never disagree with the cache.
 */
#include "sc-internal.h"

void sc_cache_get_stats(SCCache *c, SCStats *stats)
{
    *stats = c->stats;
    stats->readahead_streams = sc_ra_active_streams(&c->ra);
    stats->dirty_bytes = sc_dirty_total(c);
    stats->writeback_inflight_bytes = c->wbj.inflight_bytes;
    stats->clean_bytes = c->ext.clean_bytes;
    stats->fetching_bytes = c->fetch.mem_bytes;
    stats->memory_bytes = c->store.mem_bytes;
    stats->metadata_bytes = sc_meta_bytes(c);
    stats->extents = c->ext.count;
}
