/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": driver-specific statistics for query-blockstats.
 *
 * No hypervisor-facing anchor (librbd's admin socket, nbdkit's debug log)
 * shows what a client cache does; here it is part of QMP.
 */

#include "qemu/osdep.h"
#include "block/block_int.h"
#include "stripe.h"

static StripeCacheStats *stripe_cache_stats(StripeCache *c)
{
    StripeCacheStats *st = g_new0(StripeCacheStats, 1);
    SCStats core;

    stripe_cache_lock(c);
    sc_cache_get_stats(c->core, &core);
    *st = (StripeCacheStats) {
        .read_hit_requests = core.read_hit_requests,
        .read_miss_requests = core.read_miss_requests,
        .read_hit_bytes = core.read_hit_bytes,
        .read_miss_bytes = core.read_miss_bytes,
        .readahead_issued_bytes = core.readahead_issued_bytes,
        .readahead_used_bytes = core.readahead_used_bytes,
        .readahead_wasted_bytes = core.readahead_wasted_bytes,
        .readahead_streams = core.readahead_streams,
        .write_requests = core.write_requests,
        .write_bytes = core.write_bytes,
        .write_through_requests = core.write_through_requests,
        .write_bypass_requests = core.write_bypass_requests,
        .read_bypass_requests = core.read_bypass_requests,
        .writeback_requests = core.writeback_requests,
        .writeback_bytes = core.writeback_bytes,
        .writeback_errors = core.writeback_errors,
        /* Coalescing: how many guest writes one node write carried. */
        .writes_per_writeback = core.writeback_requests ?
            (double)core.write_requests / core.writeback_requests : 0,
        .dirty_bytes = core.dirty_bytes,
        .writeback_inflight_bytes = core.writeback_inflight_bytes,
        .clean_bytes = core.clean_bytes,
        .memory_bytes = core.memory_bytes,
        .metadata_bytes = core.metadata_bytes,
        .flush_requests = c->flush_count,
        .flush_errors = c->flush_errors,
        .flush_total_time_ns = c->flush_ns_total,
        .flush_max_time_ns = c->flush_ns_max,
        .throttled_writes = c->throttled_writes,
        .throttle_time_ns = c->throttle_ns,
        .blocked_writes = core.write_blocked_count,
    };
    stripe_cache_unlock(c);
    return st;
}

static StripeBitmapStats *stripe_bitmap_stats(BDRVStripeState *s)
{
    StripeBitmapStats *st = g_new0(StripeBitmapStats, 1);

    *st = (StripeBitmapStats) {
        .dirty_regions = stripe_bitmap_dirty_regions(s),
        .marks = qatomic_read(&s->bitmap.marks),
        .clears = qatomic_read(&s->bitmap.clears),
        .resync_active = qatomic_read(&s->resync.co) != NULL,
        .resync_regions = qatomic_read(&s->resync.regions_total),
        .resync_done = qatomic_read(&s->resync.regions_done),
        .resync_bytes = qatomic_read(&s->resync.bytes),
    };
    return st;
}

/*
 * The nodes replaced while they owed answers, still attached: an operator
 * waiting to delete one sees what it owes.  query-blockstats runs in the
 * main loop, where alone the list changes.
 */
static StripeParkedNodeList *stripe_parked_stats(BDRVStripeState *s)
{
    StripeParkedNodeList *list = NULL, **tail = &list;
    StripeNodeEdge *edge;

    QSLIST_FOREACH(edge, &s->parked, next) {
        StripeParkedNode *p;

        if (!edge->child) {
            continue;   /* detached */
        }
        p = g_new0(StripeParkedNode, 1);

        *p = (StripeParkedNode) {
            .index = edge->index,
            .node_name = g_strdup(edge->child->bs->node_name),
            .outstanding = qatomic_read(&edge->outstanding),
        };
        QAPI_LIST_APPEND(tail, p);
    }
    return list;
}

BlockStatsSpecific *stripe_get_specific_stats(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    BlockStatsSpecific *stats = g_new0(BlockStatsSpecific, 1);
    StripeNodeStatsList **tail = &stats->u.stripe.node_stats;
    uint32_t i;

    stats->driver = BLOCKDEV_DRIVER_STRIPE;
    stats->u.stripe.nodes = s->node_count;
    for (i = 0; i < s->node_count; i++) {
        StripeNodeHealth *h = &s->health[i];
        StripeNodeEdge *edge = qatomic_read(&s->edges[i]);
        StripeNodeStats *n = g_new0(StripeNodeStats, 1);

        *n = (StripeNodeStats) {
            .index = i,
            .state = stripe_node_state(s, i),
            .in_flight = qatomic_read(&edge->in_flight),
            .errors = qatomic_read(&h->errors),
            .timeouts = qatomic_read(&h->timeouts),
            .outstanding = qatomic_read(&edge->outstanding),
        };
        if (n->state == STRIPE_NODE_STATE_RESYNCING) {
            /* one pass brings every resyncing node back */
            n->has_resync_regions = n->has_resync_done = true;
            n->resync_regions = qatomic_read(&s->resync.regions_total);
            n->resync_done = qatomic_read(&s->resync.regions_done);
        }
        QAPI_LIST_APPEND(tail, n);
    }
    stats->u.stripe.parked = stripe_parked_stats(s);
    if (s->geo.bitmap_region) {
        stats->u.stripe.bitmap = stripe_bitmap_stats(s);
    }
    if (s->cache) {
        stats->u.stripe.cache = stripe_cache_stats(s->cache);
    }
    return stats;
}
