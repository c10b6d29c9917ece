/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the cache object: creation, reconfiguration, resize, drop,
 * statistics.  The IO paths live in sc-read.c, sc-write.c,
 * sc-writeback.c and sc-flush.c.
 */
#include "sc-internal.h"

#include <errno.h>

static void ra_config_from(const SCCache *c, SCRaConfig *rc)
{
    rc->trigger_requests = c->opts.readahead_trigger_requests;
    rc->max_bytes = c->opts.readahead_max_bytes;
    rc->disable_after_bytes = c->opts.readahead_disable_after_bytes;
    rc->stripe_unit = c->geo.stripe_unit;
    rc->min_bytes = c->page_size;
    rc->disk_size = c->geo.disk_size;
}

static void apply_options(SCCache *c, const SCOptions *opts)
{
    SCRaConfig rc;

    c->opts = *opts;
    c->meta_limit = MAX(opts->size / 8, SC_MIN_SIZE);
    ra_config_from(c, &rc);
    sc_ra_configure(&c->ra, &rc);
}

SCCache *sc_cache_new(const SCOptions *opts, const SCGeometry *geo,
                      char **errmsg)
{
    SCCache *c;
    SCRaConfig rc;
    uint32_t i;
    char *msg;

    msg = sc_options_check(opts);
    if (!msg) {
        msg = sc_geometry_check(geo);
    }
    if (msg) {
        if (errmsg) {
            *errmsg = msg;
        } else {
            g_free(msg);
        }
        return NULL;
    }

    c = g_aligned_alloc0(1, sizeof(SCCache), G_ALIGNOF(SCCache));
    c->geo = *geo;
    c->page_size = MAX((uint64_t)geo->align,
                       MIN((uint64_t)SC_PAGE_PREFERRED, geo->stripe_unit));
    c->page_shift = __builtin_ctzll(c->page_size);
    c->segment = MIN(geo->stripe_unit, (uint64_t)SC_SEGMENT_MAX);
    sc_tree_init(&c->ext.map);
    sc_tree_init(&c->ext.dirty_by_since);
    sc_tree_init(&c->ext.eligible);
    g_queue_init(&c->ext.lru);
    c->store.table = g_hash_table_new(g_int64_hash, g_int64_equal);
    c->store.pool = g_ptr_array_new();
    c->store.lingering = g_ptr_array_new();
    c->store.arenas = g_ptr_array_new_with_free_func(
        (GDestroyNotify)sc_arena_free);
    c->nodes = g_new0(SCNode, geo->node_count);
    for (i = 0; i < geo->node_count; i++) {
        sc_tree_init(&c->nodes[i].eligible);
        g_queue_init(&c->nodes[i].prefetch_queue);
    }
    sc_tree_init(&c->wbj.by_start);
    sc_tree_init(&c->wbj.by_since);
    c->wbj.jobs = g_hash_table_new(g_int64_hash, g_int64_equal);
    c->fetch.jobs = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_queue_init(&c->arounds);
    g_queue_init(&c->fl.tickets);
    g_queue_init(&c->fl.pending_global);
    g_queue_init(&c->fl.pending_range);
    c->fl.epoch = 1;
    c->next_job_id = 1;
    c->opts = *opts;
    ra_config_from(c, &rc);
    sc_ra_init(&c->ra, &rc);
    apply_options(c, opts);
    sc_page_arenas_fit(c);
    return c;
}

static void free_all_extents(SCCache *c)
{
    SCTreeNode *n;

    while ((n = sc_tree_first(&c->ext.map))) {
        SCExtent *e = sc_ext_of_map(n);

        sc_tree_remove(&c->ext.map, n);
        g_free(e);
    }
}

void sc_cache_free(SCCache *c)
{
    GHashTableIter iter;
    gpointer key, value;
    GList *jobs, *l;
    uint32_t i;

    if (!c) {
        return;
    }
    /* No job should be in flight; free whatever is left regardless. */
    g_hash_table_iter_init(&iter, c->wbj.jobs);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        g_hash_table_iter_steal(&iter);
        sc_wb_job_free(c, value);
    }
    for (i = 0; i < c->geo.node_count; i++) {
        g_queue_init(&c->nodes[i].prefetch_queue);
    }
    c->fetch.queued = 0;
    /* sc_fetch_job_free() takes each out of the table: not while iterating */
    jobs = g_hash_table_get_values(c->fetch.jobs);
    for (l = jobs; l; l = l->next) {
        sc_fetch_job_free(c, l->data);
    }
    g_list_free(jobs);
    free_all_extents(c);
    sc_store_clear(c);
    sc_tickets_free_all(c);
    sc_arounds_free_all(c);
    sc_wb_full_clear(c);
    g_hash_table_destroy(c->store.table);
    /* the caller's reads are done: every lingering page is free now */
    sc_pages_reap(c);
    g_assert(!c->store.lingering->len);
    g_ptr_array_free(c->store.lingering, true);
    sc_page_pool_free(c);
    g_hash_table_destroy(c->wbj.jobs);
    g_hash_table_destroy(c->fetch.jobs);
    g_free(c->nodes);
    g_aligned_free(c);
}

/* Evict clean data until the (possibly smaller) budget is met. */
static void shrink_to_budget(SCCache *c)
{
    if (!sc_make_room(c, 0, 0, 0, 0, true)) {
        /* Dirty or in-flight data is over it: write back, never drop. */
        sc_wb_set_pressure(c, true);
    }
}

bool sc_cache_reconfigure(SCCache *c, const SCOptions *opts, char **errmsg)
{
    char *msg = sc_options_check(opts);

    if (msg) {
        if (errmsg) {
            *errmsg = msg;
        } else {
            g_free(msg);
        }
        return false;
    }
    apply_options(c, opts);
    shrink_to_budget(c);
    sc_page_pool_trim(c);
    sc_page_arenas_fit(c);
    return true;
}

/* Cancel queued prefetch jobs that would read at or past @end. */
static void cancel_prefetch_beyond(SCCache *c, uint64_t end)
{
    uint32_t i;

    for (i = 0; c->fetch.queued && i < c->geo.node_count; i++) {
        GList *l = c->nodes[i].prefetch_queue.head;

        while (l) {
            SCFetchJob *job = l->data;

            l = l->next;
            if (job->end > end) {
                sc_fetch_cancel(c, job);
            }
        }
    }
}

void sc_cache_set_disk_size(SCCache *c, uint64_t disk_size)
{
    SCRaConfig rc;

    g_assert(disk_size <= SC_MAX_DISK_SIZE);
    if (disk_size < c->geo.disk_size) {
        cancel_prefetch_beyond(c, disk_size);
        sc_range_drop(c, disk_size, UINT64_MAX - disk_size);
    }
    c->geo.disk_size = disk_size;
    ra_config_from(c, &rc);
    sc_ra_configure(&c->ra, &rc);
}

int sc_cache_drop(SCCache *c)
{
    SCTreeNode *n;

    if (sc_dirty_total(c) || g_hash_table_size(c->wbj.jobs) ||
        c->fetch.issued || c->arounds.length) {
        return -EBUSY;
    }
    /* Only clean data and queued prefetch jobs are left. */
    while (sc_prefetch_cancel_one(c)) {
        /* nothing else to do */
    }
    while ((n = sc_tree_first(&c->ext.map))) {
        sc_ext_delete(c, sc_ext_of_map(n), SC_DROP_INVALIDATE);
    }
    sc_ra_reset(&c->ra);
    return 0;
}

/*
 * Event counters are kept in c->stats as they happen; the levels ("now"
 * fields) are derived from the live counters, so they can never disagree
 * with the cache.
 */
void sc_cache_get_stats(SCCache *c, SCStats *stats)
{
    sc_pages_reap(c);           /* memory_bytes: what is in use */
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
