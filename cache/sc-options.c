/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: option defaults and validation.
 *
 * The defaults are librbd's (rbd_cache_* and rbd_readahead_*), so users
 * moving from rbd get the behaviour they know, except for two readahead
 * defaults that benchmarks on striped node pools showed to be too small
 * for several nodes; docs/cache-options.md says why.  Every message names
 * the QEMU option, because the driver hands it to the user unchanged.
 */
#include "sc-internal.h"

#include <inttypes.h>

void sc_options_init_defaults(SCOptions *opts)
{
    opts->size = 32 * SC_MiB;
    opts->max_dirty = 24 * SC_MiB;
    opts->target_dirty = 16 * SC_MiB;
    opts->max_dirty_age_ns = SC_NS_PER_SEC;
    opts->writethrough_until_flush = true;
    opts->eager_writeback = true;
    opts->readahead_trigger_requests = 10;
    opts->readahead_max_bytes = 2 * SC_MiB;
    opts->readahead_disable_after_bytes = 0;
    opts->bypass_bytes = SC_DEFAULT_BYPASS_BYTES;
    opts->node_jobs = 0;
}

char *sc_options_check(const SCOptions *opts)
{
    if (opts->size < SC_MIN_SIZE) {
        return g_strdup_printf("cache-size (%" PRIu64 ") must be at least "
                               "%" PRIu64 " bytes",
                               opts->size, (uint64_t)SC_MIN_SIZE);
    }
    if (opts->size > SC_MAX_SIZE) {
        return g_strdup_printf("cache-size (%" PRIu64 ") must be at most "
                               "%" PRIu64 " bytes",
                               opts->size, (uint64_t)SC_MAX_SIZE);
    }
    if (opts->max_dirty > opts->size) {
        return g_strdup_printf("cache-max-dirty (%" PRIu64 ") must not "
                               "exceed cache-size (%" PRIu64 ")",
                               opts->max_dirty, opts->size);
    }
    if (opts->target_dirty > opts->max_dirty) {
        return g_strdup_printf("cache-target-dirty (%" PRIu64 ") must not "
                               "exceed cache-max-dirty (%" PRIu64 ")",
                               opts->target_dirty, opts->max_dirty);
    }
    if (opts->max_dirty_age_ns > SC_MAX_DIRTY_AGE_NS) {
        return g_strdup_printf("cache-max-dirty-age (%" PRIu64 " ns) must "
                               "be at most %" PRIu64 " seconds",
                               opts->max_dirty_age_ns,
                               (uint64_t)(SC_MAX_DIRTY_AGE_NS /
                                          SC_NS_PER_SEC));
    }
    if (opts->readahead_trigger_requests < 1 ||
        opts->readahead_trigger_requests > SC_MAX_RA_TRIGGER) {
        return g_strdup_printf("readahead-trigger-requests (%" PRIu32 ") "
                               "must be between 1 and %u",
                               opts->readahead_trigger_requests,
                               (unsigned)SC_MAX_RA_TRIGGER);
    }
    if (opts->readahead_max_bytes > opts->size / 2) {
        return g_strdup_printf("readahead-max-bytes (%" PRIu64 ") must not "
                               "exceed half of cache-size (%" PRIu64 ")",
                               opts->readahead_max_bytes, opts->size);
    }
    if (opts->node_jobs > SC_MAX_NODE_JOBS) {
        return g_strdup_printf("cache-node-jobs (%" PRIu32 ") must be at "
                               "most %u", opts->node_jobs,
                               (unsigned)SC_MAX_NODE_JOBS);
    }
    return NULL;
}

static bool is_pow2(uint64_t x)
{
    return x && !(x & (x - 1));
}

char *sc_geometry_check(const SCGeometry *geo)
{
    if (geo->stripe_unit < SC_MIN_STRIPE_UNIT ||
        !is_pow2(geo->stripe_unit)) {
        return g_strdup_printf("stripe unit (%" PRIu64 ") must be a power "
                               "of two of at least %u bytes",
                               geo->stripe_unit,
                               (unsigned)SC_MIN_STRIPE_UNIT);
    }
    if (!is_pow2(geo->align) || geo->align > geo->stripe_unit) {
        return g_strdup_printf("node alignment (%" PRIu32 ") must be a "
                               "power of two no larger than the stripe "
                               "unit (%" PRIu64 ")",
                               geo->align, geo->stripe_unit);
    }
    if (geo->disk_size > SC_MAX_DISK_SIZE) {
        return g_strdup_printf("disk size (%" PRIu64 ") must be at most %"
                               PRIu64, geo->disk_size, SC_MAX_DISK_SIZE);
    }
    if (geo->node_count < 1) {
        return g_strdup("node count must be at least 1");
    }
    if (geo->node_count > SC_MAX_NODES) {
        return g_strdup_printf("node count (%" PRIu32 ") must be at most %u",
                               geo->node_count, (unsigned)SC_MAX_NODES);
    }
    if (geo->max_writeback_per_node < 1) {
        return g_strdup("max_writeback_per_node must be at least 1");
    }
    if (geo->max_fetch_per_node < 1) {
        return g_strdup("max_fetch_per_node must be at least 1");
    }
    return NULL;
}
