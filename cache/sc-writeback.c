/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the writeback planner.
 *
 * Each node has a tree of its eligible dirty extents ordered by (since,
 * first-dirtied time, offset), so the oldest data of every node is found
 * in O(log n) and the planner never scans extents.  sc_writeback_next()
 * picks a seed extent by policy:
 *   1. data a flush ticket waits for (oldest first; retried at once even
 *      on a node in error backoff, because somebody is waiting), then data
 *      a write-through ticket waits for;
 *   2. whole segments (cache-eager-writeback, on by default): segments
 *      that writes left dirty from end to end, in the order they filled.
 *      Nothing more can coalesce with one (a job never crosses a
 *      segment), so sending it now costs no extra node request; the
 *      writeback of a sequential writer then keeps pace with it, and the
 *      guest's next flush finds at most the segment being written still
 *      dirty instead of everything written since the last one
 *      (docs/cache-design.md, "Whole segments").  A segment sent whole
 *      less than max-dirty-age ago is not queued again: a guest rewriting
 *      one region over and over keeps it in the cache, as before,
 *      instead of sending every pass;
 *   3. under pressure (idle dirty above target-dirty, a refused writer,
 *      memory over budget): the oldest data of any node not in backoff;
 *   4. data older than max-dirty-age.
 * The job is the seed plus the eligible dirty extents contiguous with it in
 * its segment, so adjacent dirty data goes out as one request that never
 * crosses a stripe unit.  Nodes at their job limit are skipped, so
 * one slow node holds up only its own data.  A seed whose pages a staged
 * write copies into is not sent: the planner stops until it is published
 * (sc-staged.h).
 *
 * Age is measured from the time data first became dirty (not from its last
 * write, as librbd does): rewriting a block over and over cannot keep it
 * from the nodes for longer than max-dirty-age.
 */
#include "sc-internal.h"

static bool node_has_room(SCCache *c, uint32_t n)
{
    return c->nodes[n].wb_inflight < sc_writeback_jobs_max(c);
}

static SCExtent *node_oldest(SCCache *c, uint32_t n)
{
    SCTreeNode *t = sc_tree_first(&c->nodes[n].eligible);

    return t ? SC_CONTAINER_OF(t, SCExtent, elig_node) : NULL;
}

static int64_t age_deadline(SCCache *c, const SCExtent *e)
{
    uint64_t age = c->opts.max_dirty_age_ns;

    return e->dirtied_ns > INT64_MAX - (int64_t)age
           ? INT64_MAX : e->dirtied_ns + (int64_t)age;
}

/*
 * The oldest eligible extent on a node that can take a job now.  With
 * @background, nodes in error backoff are skipped and, unless @pressure,
 * so are nodes whose oldest data is younger than max-dirty-age.
 */
static bool node_may_start(SCCache *c, uint32_t n, bool background,
                           int64_t now_ns)
{
    return node_has_room(c, n) &&
           !(background && c->nodes[n].backoff_until > now_ns);
}

static SCExtent *oldest_eligible(SCCache *c, bool background,
                                 bool pressure, int64_t now_ns)
{
    SCExtent *best = NULL, *first = sc_ext_oldest_eligible(c);
    uint32_t n;

    /*
     * The oldest eligible data of all nodes (c->ext.eligible) settles the
     * common cases without a look at every node: nothing eligible; not old
     * enough for background writeback, so no node's is (a newer write is
     * never older: since and dirtied_ns grow together); or its node can
     * take a job, so it is the answer.
     */
    if (!first || (background && !pressure &&
                   age_deadline(c, first) > now_ns)) {
        return NULL;
    }
    if (node_may_start(c, sc_node_of(c, first->start), background, now_ns)) {
        return first;
    }
    for (n = 0; n < c->geo.node_count; n++) {
        SCExtent *e;

        if (!node_may_start(c, n, background, now_ns)) {
            continue;
        }
        e = node_oldest(c, n);
        if (!e || (background && !pressure &&
                   age_deadline(c, e) > now_ns)) {
            continue;
        }
        if (!best || sc_ext_elig_cmp(&e->elig_node, &best->elig_node) < 0) {
            best = e;
        }
    }
    return best;
}

/* Policy 1: data that a flush or write-through ticket waits for. */
static SCExtent *pick_for_tickets(SCCache *c)
{
    GList *l;

    if (c->fl.pending_global.length) {
        SCFlush *newest = c->fl.pending_global.tail->data;
        SCExtent *e = oldest_eligible(c, false, false, 0);

        if (e && e->since <= newest->seq) {
            return e;
        }
    }
    for (l = c->fl.pending_range.head; l; l = l->next) {
        SCFlush *t = l->data;
        SCExtent *e;

        for (e = sc_ext_lookup(c, t->start); e && e->start < t->end;
             e = sc_ext_next(e)) {
            if (sc_ext_eligible(e) && e->since <= t->seq &&
                node_has_room(c, sc_node_of(c, e->start))) {
                return e;
            }
        }
    }
    return NULL;
}

/*
 * Queued segments a planner pass looks at beyond the first whose node can
 * take a job: the rest wait for a later pass, so a pass stays short while
 * every node is at its job limit.
 */
#define SC_FULL_SCAN 16

typedef struct SCRecent {
    uint64_t seg;               /* first: the key, for g_int64_hash() */
    int64_t sent_ns;
} SCRecent;

typedef struct SCRecentPrune {
    int64_t now_ns;
    int64_t window_ns;
} SCRecentPrune;

static gboolean recent_expired(gpointer key, gpointer value, gpointer opaque)
{
    const SCRecent *r = value;
    const SCRecentPrune *p = opaque;

    return p->now_ns - r->sent_ns >= p->window_ns;
}

static void recent_add(SCCache *c, uint64_t seg, int64_t now_ns)
{
    SCRecent *r;

    if (!c->wb.recent) {
        c->wb.recent = g_hash_table_new_full(g_int64_hash, g_int64_equal,
                                             NULL, g_free);
    }
    if (g_hash_table_size(c->wb.recent) >= SC_RECENT_MAX) {
        SCRecentPrune p = { now_ns, c->opts.max_dirty_age_ns };

        g_hash_table_foreach_remove(c->wb.recent, recent_expired, &p);
        if (g_hash_table_size(c->wb.recent) >= SC_RECENT_MAX) {
            g_hash_table_remove_all(c->wb.recent);
        }
    }
    r = g_new(SCRecent, 1);
    r->seg = seg;
    r->sent_ns = now_ns;
    g_hash_table_replace(c->wb.recent, r, r);
}

static bool recently_sent(SCCache *c, uint64_t seg, int64_t now_ns)
{
    SCRecent *r = c->wb.recent ? g_hash_table_lookup(c->wb.recent, &seg)
                               : NULL;

    if (r && now_ns - r->sent_ns < (int64_t)c->opts.max_dirty_age_ns) {
        return true;
    }
    if (r) {
        g_hash_table_remove(c->wb.recent, &seg);
    }
    return false;
}

/* End of the segment at @seg, or of the disk if that is nearer. */
static uint64_t seg_data_end(SCCache *c, uint64_t seg)
{
    return MIN(sc_seg_end(c, seg), c->geo.disk_size);
}

/* Whether [seg, its end) is covered by eligible dirty extents. */
static bool segment_full(SCCache *c, uint64_t seg)
{
    uint64_t pos = seg, end = seg_data_end(c, seg);
    SCExtent *e;

    for (e = sc_ext_lookup(c, seg); e && e->start <= pos && sc_ext_eligible(e);
         e = sc_ext_next(e)) {
        pos = e->end;
        if (pos >= end) {
            return true;
        }
    }
    return false;
}

/* The queue of whole segments owns a copy of each segment's start. */
static void full_push(SCCache *c, uint64_t seg, bool head)
{
    uint64_t *entry = g_memdup2(&seg, sizeof(seg));

    if (head) {
        g_queue_push_head(&c->wb.full, entry);
    } else {
        g_queue_push_tail(&c->wb.full, entry);
    }
}

static void full_unlink(SCCache *c, GList *l)
{
    g_free(l->data);
    g_queue_delete_link(&c->wb.full, l);
}

void sc_wb_note_write(SCCache *c, uint64_t start, uint64_t end,
                      int64_t now_ns)
{
    uint64_t seg;

    if (!c->opts.eager_writeback) {
        return;
    }
    for (seg = sc_seg_start(c, start); seg < end;
         seg = sc_seg_end(c, seg)) {
        if (segment_full(c, seg) && !recently_sent(c, seg, now_ns)) {
            full_push(c, seg, false);
        }
        if (sc_seg_end(c, seg) == UINT64_MAX) {
            break;
        }
    }
}

void sc_wb_full_clear(SCCache *c)
{
    g_queue_clear_full(&c->wb.full, g_free);
    if (c->wb.recent) {
        g_hash_table_destroy(c->wb.recent);
        c->wb.recent = NULL;
    }
}

/*
 * Policy 2: the first queued segment that is still whole and whose node
 * can take a job; with @take, it leaves the queue.  Entries that are not
 * whole any more (written back by another policy, partly rewritten while
 * in flight, dropped) leave the queue here.
 */
static SCExtent *pick_full(SCCache *c, int64_t now_ns, bool take)
{
    GList *l = c->wb.full.head;
    unsigned skipped = 0;

    if (!c->opts.eager_writeback) {
        /* turned off by a reopen: what was queued waits like the rest */
        g_queue_clear_full(&c->wb.full, g_free);
        return NULL;
    }
    while (l && skipped < SC_FULL_SCAN) {
        GList *next = l->next;
        uint64_t seg = *(uint64_t *)l->data;

        if (!segment_full(c, seg)) {
            full_unlink(c, l);
        } else if (node_may_start(c, sc_node_of(c, seg), true, now_ns)) {
            if (take) {
                full_unlink(c, l);
            }
            return sc_ext_lookup(c, seg);
        } else {
            skipped++;
        }
        l = next;
    }
    return NULL;
}

void sc_wb_set_pressure(SCCache *c, bool pressure)
{
    c->wb.pressure = pressure;
}

static bool under_pressure(SCCache *c)
{
    uint64_t idle = sc_dirty_total(c) - c->wbj.inflight_bytes;

    return c->wb.pressure || idle > c->opts.target_dirty ||
           c->store.mem_bytes > c->opts.size;
}

/* Writeback busy time: the bandwidth estimate ignores idle periods. */
static void bw_account(SCCache *c, int64_t now_ns)
{
    if (now_ns > c->wb.bw_last_ns) {
        if (g_hash_table_size(c->wbj.jobs)) {
            c->wb.bw_busy_ns += now_ns - c->wb.bw_last_ns;
        }
        c->wb.bw_last_ns = now_ns;
    }
}

static void bw_sample(SCCache *c, uint64_t bytes)
{
    double sample;

    c->wb.bw_bytes += bytes;
    if (c->wb.bw_busy_ns < (int64_t)SC_BW_SAMPLE_NS) {
        return;
    }
    sample = (double)c->wb.bw_bytes * SC_NS_PER_SEC / c->wb.bw_busy_ns;
    c->wb.bw = c->wb.bw > 0 ? (3 * c->wb.bw + sample) / 4 : sample;
    c->wb.bw_bytes = 0;
    c->wb.bw_busy_ns = 0;
}

/*
 * Look the pages of [start, end) up into @pages.  False if a staged write
 * copies into one of them: the job would send half-copied bytes.
 */
static bool job_pages(SCCache *c, uint64_t start, uint64_t end,
                      SCPage **pages)
{
    uint64_t first = sc_page_index(c, start);
    uint32_t k, n = sc_pages_spanned(c, start, end);

    for (k = 0; k < n; k++) {
        SCPage *p = sc_store_lookup(c, first + k);

        g_assert(p);
        if (g_atomic_int_get(&p->writers) &&
            sc_staged_busy(c, start, end, true)) {
            return false;
        }
        pages[k] = p;
    }
    return true;
}

static SCWbJob *build_job(SCCache *c, SCExtent *seed)
{
    uint64_t seg = sc_seg_start(c, seed->start);
    SCExtent *first = seed, *last = seed, *x;
    SCPage **pages;
    SCWbJob *job;
    uint32_t k;

    while ((x = sc_ext_prev(first)) && x->end == first->start &&
           sc_ext_eligible(x) && sc_seg_start(c, x->start) == seg) {
        first = x;
    }
    while ((x = sc_ext_next(last)) && last->end == x->start &&
           sc_ext_eligible(x) && sc_seg_start(c, x->start) == seg) {
        last = x;
    }
    pages = g_new(SCPage *, sc_pages_spanned(c, first->start, last->end));
    if (!job_pages(c, first->start, last->end, pages)) {
        first = last = seed;
        if (!job_pages(c, seed->start, seed->end, pages)) {
            g_free(pages);
            return NULL;
        }
    }

    job = g_new0(SCWbJob, 1);
    job->id = c->next_job_id++;
    job->start = first->start;
    job->end = last->end;
    job->live = job->end - job->start;
    job->node = sc_node_of(c, job->start);
    job->min_since = UINT64_MAX;
    job->min_dirtied_ns = INT64_MAX;
    for (x = first;; x = sc_ext_next(x)) {
        sc_ext_elig_remove(c, x);
        x->wb = job;
        job->min_since = MIN(job->min_since, x->since);
        job->min_dirtied_ns = MIN(job->min_dirtied_ns, x->dirtied_ns);
        if (x == last) {
            break;
        }
    }

    job->first_page = sc_page_index(c, job->start);
    job->npages = sc_pages_spanned(c, job->start, job->end);
    job->pages = pages;
    job->iov = g_new(struct iovec, job->npages);
    for (k = 0; k < job->npages; k++) {
        pages[k]->refs++;       /* pinned: writers copy it from now on */
    }
    sc_job_iov_build(c, job->start, job->end, job->pages, job->iov);
    job->fua = sc_tickets_want_fua(c, job->start, job->end,
                                   job->min_since);

    sc_wb_job_add(c, job);
    return job;
}

bool sc_writeback_next(SCCache *c, int64_t now_ns, SCJob *out)
{
    SCExtent *e = pick_for_tickets(c), *whole = NULL;
    SCWbJob *job;

    if (!e) {
        e = whole = pick_full(c, now_ns, true);
    }
    if (!e) {
        e = oldest_eligible(c, true, under_pressure(c), now_ns);
    }
    if (!e) {
        sc_staged_planned(c, false);
        return false;
    }
    bw_account(c, now_ns);
    job = build_job(c, e);
    /* if refused, the staged write's publisher has us called again */
    sc_staged_planned(c, !job);
    if (whole && !job) {
        full_push(c, whole->start, true);     /* first again next time */
    } else if (whole) {
        recent_add(c, whole->start, now_ns);
    }
    if (!job) {
        return false;
    }
    c->stats.writeback_requests++;
    c->stats.writeback_bytes += job->end - job->start;

    memset(out, 0, sizeof(*out));
    out->id = job->id;
    out->offset = job->start;
    out->len = job->end - job->start;
    out->node = job->node;
    out->fua = job->fua;
    out->iov = job->iov;
    out->iovcnt = job->npages;
    return true;
}

/*
 * Settle the extents of a finished job.  Returns true if any cached data
 * still depends on it (for error reporting).
 */
static bool settle_extents(SCCache *c, SCWbJob *job, int ret)
{
    SCExtent *e = sc_ext_lookup(c, job->start);
    bool depends = false;

    while (e && e->start < job->end) {
        SCExtent *next = sc_ext_next(e);

        if (e->state == SC_EXT_DIRTY && e->wb == job) {
            depends = true;
            sc_ext_unindex(c, e);
            e->wb = NULL;
            if (ret == 0) {
                e->state = SC_EXT_CLEAN;
                e->prefetched = false;
            }
            sc_ext_index(c, e);
        } else if (e->state == SC_EXT_DIRTY && e->blocked_by == job) {
            sc_ext_unindex(c, e);
            e->blocked_by = NULL;
            if (ret < 0 && e->inherit) {
                /* What the job owed is owed by the newer data now. */
                depends = true;
                e->since = MIN(e->since, job->min_since);
                e->dirtied_ns = MIN(e->dirtied_ns, job->min_dirtied_ns);
            }
            e->inherit = false;
            sc_ext_index(c, e);
        }
        e = next;
    }
    return depends;
}

void sc_writeback_done(SCCache *c, uint64_t job_id, int ret,
                       int64_t now_ns)
{
    SCWbJob *job = g_hash_table_lookup(c->wbj.jobs, &job_id);
    SCNode *node;
    uint64_t len, start, end;
    bool depends;

    g_assert(job);
    node = &c->nodes[job->node];
    start = job->start;
    end = job->end;
    len = end - start;

    bw_account(c, now_ns);
    sc_wb_job_remove(c, job);

    depends = settle_extents(c, job, ret);
    if (ret == 0) {
        node->backoff_ns = 0;
        node->backoff_until = 0;
        bw_sample(c, len);
    } else {
        c->stats.writeback_errors++;
        node->backoff_ns = node->backoff_ns
            ? MIN(node->backoff_ns * 2, (int64_t)SC_BACKOFF_MAX_NS)
            : (int64_t)SC_BACKOFF_MIN_NS;
        node->backoff_until = now_ns + node->backoff_ns;
        c->wb.failures++;
        c->wb.last_error = ret;
        if (depends) {
            sc_tickets_fail(c, start, end, job->min_since, ret, true);
        }
    }
    sc_wb_job_free(c, job);
    sc_ext_merge_range(c, start, end);
    sc_tickets_update(c, start, end);
    if (c->store.mem_bytes > c->opts.size) {
        /* cache-size was lowered: what became clean can go now */
        sc_make_room(c, 0, 0, 0, 0, true);
    }
}

uint64_t sc_writeback_failures(SCCache *c, int *last_error)
{
    if (last_error) {
        *last_error = c->wb.last_error;
    }
    return c->wb.failures;
}

int64_t sc_next_deadline(SCCache *c, int64_t now_ns)
{
    SCExtent *first;
    bool pressure;
    int64_t best = INT64_MAX;
    uint32_t n;

    /* nothing dirty, nothing to write back: no node needs a look */
    if (!c->ext.dirty_bytes) {
        return INT64_MAX;
    }
    pressure = under_pressure(c);
    if (pick_for_tickets(c) || pick_full(c, now_ns, false)) {
        return now_ns;
    }
    first = sc_ext_oldest_eligible(c);
    if (!first) {
        return INT64_MAX;       /* all in flight: job ends look again */
    }
    /*
     * No node's oldest eligible data ages before the oldest of all: while
     * that is in the future, it is the deadline without a look at every
     * node (early, if its node cannot take a job then: the timer then
     * looks at them all).
     */
    if (!pressure && age_deadline(c, first) > now_ns) {
        return age_deadline(c, first);
    }
    for (n = 0; n < c->geo.node_count && best > now_ns; n++) {
        SCExtent *e = node_oldest(c, n);
        int64_t t;

        if (!e || !node_has_room(c, n)) {
            continue;
        }
        t = pressure ? now_ns : age_deadline(c, e);
        t = MAX(t, c->nodes[n].backoff_until);
        best = MIN(best, t);
    }
    return best == INT64_MAX ? best : MAX(best, now_ns);
}
