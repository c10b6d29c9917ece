/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the extent map and the per-state indexes.
 *
 * Every extent is in c->ext.map.  Depending on its state it is also in:
 *   CLEAN     c->ext.lru (and counted in clean_bytes)
 *   DIRTY     c->ext.dirty_by_since (dirty_bytes), and when eligible for
 *             writeback in its node's eligible tree and c->ext.eligible
 *   FETCHING  counted in its job's @waiting
 * sc_ext_unindex() / sc_ext_index() move an extent out of and into those
 * indexes around a state change, so the counters can never drift.
 * CLEAN and DIRTY extents also hold their bytes' page @used counts.
 */
#include "sc-internal.h"

int sc_ext_map_cmp(const SCTreeNode *a, const SCTreeNode *b)
{
    const SCExtent *x = SC_CONTAINER_OF(a, SCExtent, map_node);
    const SCExtent *y = SC_CONTAINER_OF(b, SCExtent, map_node);

    return x->start < y->start ? -1 : x->start > y->start;
}

static int map_key_cmp(const void *key, const SCTreeNode *n)
{
    uint64_t off = *(const uint64_t *)key;
    const SCExtent *e = SC_CONTAINER_OF(n, SCExtent, map_node);

    return off < e->start ? -1 : off > e->start;
}

int sc_ext_dirty_cmp(const SCTreeNode *a, const SCTreeNode *b)
{
    const SCExtent *x = SC_CONTAINER_OF(a, SCExtent, dirty_node);
    const SCExtent *y = SC_CONTAINER_OF(b, SCExtent, dirty_node);

    if (x->since != y->since) {
        return x->since < y->since ? -1 : 1;
    }
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Eligible extents of a node: by since, then age, then offset. */
int sc_ext_elig_cmp(const SCTreeNode *a, const SCTreeNode *b)
{
    const SCExtent *x = SC_CONTAINER_OF(a, SCExtent, elig_node);
    const SCExtent *y = SC_CONTAINER_OF(b, SCExtent, elig_node);

    if (x->since != y->since) {
        return x->since < y->since ? -1 : 1;
    }
    if (x->dirtied_ns != y->dirtied_ns) {
        return x->dirtied_ns < y->dirtied_ns ? -1 : 1;
    }
    return x->start < y->start ? -1 : x->start > y->start;
}

static int elig_all_cmp(const SCTreeNode *a, const SCTreeNode *b)
{
    const SCExtent *x = SC_CONTAINER_OF(a, SCExtent, elig_all_node);
    const SCExtent *y = SC_CONTAINER_OF(b, SCExtent, elig_all_node);

    return sc_ext_elig_cmp(&x->elig_node, &y->elig_node);
}

void sc_ext_elig_insert(SCCache *c, SCExtent *e)
{
    sc_tree_insert(&c->nodes[sc_node_of(c, e->start)].eligible,
                   &e->elig_node, sc_ext_elig_cmp);
    sc_tree_insert(&c->ext.eligible, &e->elig_all_node, elig_all_cmp);
}

void sc_ext_elig_remove(SCCache *c, SCExtent *e)
{
    sc_tree_remove(&c->nodes[sc_node_of(c, e->start)].eligible,
                   &e->elig_node);
    sc_tree_remove(&c->ext.eligible, &e->elig_all_node);
}

SCExtent *sc_ext_oldest_eligible(SCCache *c)
{
    SCTreeNode *t = sc_tree_first(&c->ext.eligible);

    return t ? SC_CONTAINER_OF(t, SCExtent, elig_all_node) : NULL;
}

SCExtent *sc_ext_new(SCCache *c, uint64_t start, uint64_t end,
                     SCExtentState state)
{
    SCExtent *e = g_new0(SCExtent, 1);

    g_assert(start < end && sc_seg_start(c, start) ==
             sc_seg_start(c, end - 1));
    e->start = start;
    e->end = end;
    e->state = state;
    e->lru_link.data = e;
    return e;
}

void sc_ext_index(SCCache *c, SCExtent *e)
{
    uint64_t len = sc_ext_len(e);

    switch (e->state) {
    case SC_EXT_CLEAN:
        e->lru_stamp = ++c->ext.lru_clock;
        g_queue_push_head_link(&c->ext.lru, &e->lru_link);
        c->ext.clean_bytes += len;
        break;
    case SC_EXT_DIRTY:
        sc_tree_insert(&c->ext.dirty_by_since, &e->dirty_node,
                       sc_ext_dirty_cmp);
        if (sc_ext_eligible(e)) {
            sc_ext_elig_insert(c, e);
        }
        c->ext.dirty_bytes += len;
        break;
    case SC_EXT_FETCHING:
        e->fetch->waiting += len;
        break;
    default:
        g_assert_not_reached();
    }
}

void sc_ext_unindex(SCCache *c, SCExtent *e)
{
    uint64_t len = sc_ext_len(e);

    switch (e->state) {
    case SC_EXT_CLEAN:
        g_queue_unlink(&c->ext.lru, &e->lru_link);
        c->ext.clean_bytes -= len;
        break;
    case SC_EXT_DIRTY:
        sc_tree_remove(&c->ext.dirty_by_since, &e->dirty_node);
        if (sc_tree_linked(&e->elig_node)) {
            sc_ext_elig_remove(c, e);
        }
        c->ext.dirty_bytes -= len;
        break;
    case SC_EXT_FETCHING:
        g_assert(e->fetch->waiting >= len);
        e->fetch->waiting -= len;
        break;
    default:
        g_assert_not_reached();
    }
}

void sc_ext_insert(SCCache *c, SCExtent *e)
{
    sc_tree_insert(&c->ext.map, &e->map_node, sc_ext_map_cmp);
    c->ext.count++;
    sc_ext_index(c, e);
}

void sc_ext_delete(SCCache *c, SCExtent *e, SCDropReason why)
{
    uint64_t len = sc_ext_len(e);
    SCFetchJob *job = NULL;

    sc_ext_unindex(c, e);
    switch (e->state) {
    case SC_EXT_CLEAN:
        if (e->prefetched) {
            c->stats.readahead_wasted_bytes += len;
            if (why == SC_DROP_EVICT) {
                sc_ra_wasted(&c->ra, e->start);
            }
        }
        sc_store_sub_used(c, e->start, e->end);
        break;
    case SC_EXT_DIRTY:
        if (e->wb) {
            /* The job keeps sending the data; it is no longer cached. */
            sc_wb_job_orphan(c, e->wb, len);
        }
        sc_store_sub_used(c, e->start, e->end);
        break;
    case SC_EXT_FETCHING:
        job = e->fetch;
        break;
    }
    sc_tree_remove(&c->ext.map, &e->map_node);
    c->ext.count--;
    g_free(e);
    if (job && !job->issued && job->waiting == 0) {
        sc_fetch_job_discard(c, job);
    }
}

/* The first extent that ends after @off (contains it or follows it). */
SCExtent *sc_ext_lookup(SCCache *c, uint64_t off)
{
    SCTreeNode *n = sc_tree_find_le(&c->ext.map, &off, map_key_cmp);

    if (n) {
        SCExtent *e = sc_ext_of_map(n);

        if (e->end > off) {
            return e;
        }
        return sc_ext_of_map(sc_tree_next(n));
    }
    return sc_ext_of_map(sc_tree_first(&c->ext.map));
}

SCExtent *sc_ext_next(SCExtent *e)
{
    return sc_ext_of_map(sc_tree_next(&e->map_node));
}

SCExtent *sc_ext_prev(SCExtent *e)
{
    return sc_ext_of_map(sc_tree_prev(&e->map_node));
}

/* Split @e at @at; the new right part keeps every property of @e. */
static SCExtent *ext_split(SCCache *c, SCExtent *e, uint64_t at)
{
    SCExtent *r = g_new(SCExtent, 1);

    *r = *e;
    memset(&r->map_node, 0, sizeof(r->map_node));
    memset(&r->dirty_node, 0, sizeof(r->dirty_node));
    memset(&r->elig_node, 0, sizeof(r->elig_node));
    memset(&r->elig_all_node, 0, sizeof(r->elig_all_node));
    r->lru_link.prev = NULL;
    r->lru_link.next = NULL;
    r->lru_link.data = r;
    r->start = at;
    e->end = at;

    sc_tree_insert(&c->ext.map, &r->map_node, sc_ext_map_cmp);
    c->ext.count++;
    switch (e->state) {
    case SC_EXT_CLEAN:
        /* same LRU position as the left part */
        g_queue_insert_after_link(&c->ext.lru, &e->lru_link, &r->lru_link);
        break;
    case SC_EXT_DIRTY:
        sc_tree_insert(&c->ext.dirty_by_since, &r->dirty_node,
                       sc_ext_dirty_cmp);
        if (sc_tree_linked(&e->elig_node)) {
            sc_ext_elig_insert(c, r);
        }
        break;
    case SC_EXT_FETCHING:
        break;
    }
    return r;
}

/* Make @off an extent boundary (if it falls inside an extent). */
void sc_ext_carve(SCCache *c, uint64_t off)
{
    SCExtent *e = sc_ext_lookup(c, off);

    if (e && e->start < off && off < e->end) {
        ext_split(c, e, off);
    }
}

static bool ext_mergeable(SCCache *c, const SCExtent *a, const SCExtent *b)
{
    if (a->end != b->start || a->state != b->state ||
        sc_seg_start(c, a->start) != sc_seg_start(c, b->start)) {
        return false;
    }
    switch (a->state) {
    case SC_EXT_CLEAN:
        return a->prefetched == b->prefetched;
    case SC_EXT_DIRTY:
        return a->since == b->since && a->wb == b->wb &&
               a->blocked_by == b->blocked_by && a->inherit == b->inherit;
    case SC_EXT_FETCHING:
        return a->fetch == b->fetch;
    }
    return false;
}

/* Fold @b (the right neighbour) into @a and free @b. */
static void ext_merge(SCCache *c, SCExtent *a, SCExtent *b)
{
    bool elig = sc_tree_linked(&a->elig_node);

    switch (a->state) {
    case SC_EXT_CLEAN:
        /* The merged extent takes the more recent LRU position. */
        if (b->lru_stamp > a->lru_stamp) {
            g_queue_unlink(&c->ext.lru, &a->lru_link);
            g_queue_insert_before_link(&c->ext.lru, &b->lru_link,
                                       &a->lru_link);
            a->lru_stamp = b->lru_stamp;
        }
        g_queue_unlink(&c->ext.lru, &b->lru_link);
        break;
    case SC_EXT_DIRTY:
        sc_tree_remove(&c->ext.dirty_by_since, &b->dirty_node);
        if (elig) {
            sc_ext_elig_remove(c, a);
            sc_ext_elig_remove(c, b);
        }
        a->dirtied_ns = MIN(a->dirtied_ns, b->dirtied_ns);
        break;
    case SC_EXT_FETCHING:
        break;
    }
    sc_tree_remove(&c->ext.map, &b->map_node);
    c->ext.count--;
    a->end = b->end;
    if (a->state == SC_EXT_DIRTY && elig) {
        sc_ext_elig_insert(c, a);
    }
    g_free(b);
}

/*
 * Merge compatible neighbours from the extent before @start up to the one
 * after @end.  Keeps the extent count low after writes and fills.
 */
void sc_ext_merge_range(SCCache *c, uint64_t start, uint64_t end)
{
    SCExtent *e = sc_ext_lookup(c, start);
    SCExtent *prev;

    if (!e) {
        e = sc_ext_of_map(sc_tree_last(&c->ext.map));
        if (!e) {
            return;
        }
    }
    prev = sc_ext_prev(e);
    if (prev) {
        e = prev;
    }
    while (e) {
        SCExtent *next = sc_ext_next(e);

        if (!next) {
            break;
        }
        if (ext_mergeable(c, e, next)) {
            ext_merge(c, e, next);
            continue;
        }
        if (next->start > end) {
            break;
        }
        e = next;
    }
}

/* A CLEAN extent was used: make it the most recent. */
void sc_ext_touch(SCCache *c, SCExtent *e)
{
    g_assert(e->state == SC_EXT_CLEAN);
    g_queue_unlink(&c->ext.lru, &e->lru_link);
    g_queue_push_head_link(&c->ext.lru, &e->lru_link);
    e->lru_stamp = ++c->ext.lru_clock;
}

/* Dirty bytes, cached or only in flight (overwritten meanwhile). */
uint64_t sc_dirty_total(const SCCache *c)
{
    return c->ext.dirty_bytes + c->wbj.orphan_bytes;
}
