/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: full consistency check of every structure and counter.
 *
 * O(n); the model test and the fuzzer call it after operations so that a
 * broken invariant is caught at the operation that broke it, not when its
 * consequences reach the guest data.
 */
#include "sc-internal.h"

#include <inttypes.h>

#define CHECK(cond, ...)                                    \
    do {                                                    \
        if (!(cond)) {                                      \
            *why = g_strdup_printf(__VA_ARGS__);            \
            goto out;                                       \
        }                                                   \
    } while (0)

typedef struct CheckState {
    GHashTable *used;           /* page index -> computed used */
    GHashTable *wb_live;        /* SCWbJob -> computed live bytes */
    GHashTable *fetch_wait;     /* SCFetchJob -> computed waiting */
    GHashTable *page_refs;      /* SCPage -> computed refs */
} CheckState;

static void count_add(GHashTable *h, gconstpointer key, uint64_t n)
{
    uint64_t *v = g_hash_table_lookup(h, key);

    if (!v) {
        v = g_new0(uint64_t, 1);
        g_hash_table_insert(h, (gpointer)key, v);
    }
    *v += n;
}

static uint64_t count_get(GHashTable *h, gconstpointer key)
{
    uint64_t *v = g_hash_table_lookup(h, key);

    return v ? *v : 0;
}

static bool check_extents(SCCache *c, CheckState *st, char **why)
{
    uint64_t clean = 0, dirty = 0, count = 0, ndirty = 0, nclean = 0;
    uint64_t nelig = 0, prev_end = 0, elig_total = 0;
    SCExtent *e;
    uint32_t n;

    CHECK(sc_tree_check(&c->ext.map, sc_ext_map_cmp), "map tree broken");
    CHECK(sc_tree_check(&c->ext.dirty_by_since, sc_ext_dirty_cmp),
          "dirty tree broken");
    for (n = 0; n < c->geo.node_count; n++) {
        CHECK(sc_tree_check(&c->nodes[n].eligible, sc_ext_elig_cmp),
              "eligible tree of node %u broken", n);
        elig_total += c->nodes[n].eligible.count;
    }

    for (e = sc_ext_of_map(sc_tree_first(&c->ext.map)); e;
         e = sc_ext_next(e)) {
        uint64_t len = sc_ext_len(e);

        count++;
        CHECK(e->start < e->end, "empty extent at %" PRIu64, e->start);
        CHECK(count == 1 || e->start >= prev_end,
              "extents overlap at %" PRIu64, e->start);
        CHECK(sc_seg_start(c, e->start) == sc_seg_start(c, e->end - 1),
              "extent [%" PRIu64 ", %" PRIu64 ") crosses a segment",
              e->start, e->end);
        prev_end = e->end;
        switch (e->state) {
        case SC_EXT_CLEAN:
            CHECK(!e->wb && !e->blocked_by && !e->fetch,
                  "clean extent at %" PRIu64 " has job links", e->start);
            clean += len;
            nclean++;
            break;
        case SC_EXT_DIRTY:
            CHECK(sc_tree_linked(&e->dirty_node),
                  "dirty extent at %" PRIu64 " not indexed", e->start);
            CHECK(!(e->wb && e->blocked_by), "dirty extent both in flight "
                  "and blocked at %" PRIu64, e->start);
            CHECK(e->since <= c->fl.epoch, "since from the future");
            CHECK(sc_ext_eligible(e) == sc_tree_linked(&e->elig_node),
                  "eligibility of %" PRIu64 " wrong", e->start);
            CHECK(sc_tree_linked(&e->elig_node) ==
                  sc_tree_linked(&e->elig_all_node),
                  "extent at %" PRIu64 " in one eligible tree only",
                  e->start);
            if (e->wb) {
                CHECK(g_hash_table_lookup(c->wbj.jobs, &e->wb->id) == e->wb,
                      "extent points at a finished job");
                CHECK(e->start >= e->wb->start && e->end <= e->wb->end,
                      "in-flight extent outside its job");
                CHECK(!e->inherit, "in-flight extent inherits");
                count_add(st->wb_live, e->wb, len);
            }
            if (e->blocked_by) {
                CHECK(g_hash_table_lookup(c->wbj.jobs,
                                          &e->blocked_by->id) ==
                      e->blocked_by, "extent blocked by a finished job");
                CHECK(e->start >= e->blocked_by->start &&
                      e->end <= e->blocked_by->end,
                      "blocked extent at %" PRIu64 " outside its job",
                      e->start);
            } else {
                CHECK(!e->inherit, "unblocked extent inherits");
            }
            if (sc_ext_eligible(e)) {
                nelig++;
                CHECK(!sc_wb_job_covering(c, e->start) &&
                      sc_wb_boundary_after(c, e->start) >= e->end,
                      "eligible extent at %" PRIu64 " overlaps a job",
                      e->start);
            }
            dirty += len;
            ndirty++;
            break;
        case SC_EXT_FETCHING:
            CHECK(e->fetch && g_hash_table_lookup(c->fetch.jobs,
                                                  &e->fetch->id) == e->fetch,
                  "fetching extent without a live job");
            CHECK(e->start >= e->fetch->start && e->end <= e->fetch->end,
                  "fetching extent outside its job");
            count_add(st->fetch_wait, e->fetch, len);
            break;
        default:
            CHECK(false, "bad state %d", e->state);
        }
        if (e->state != SC_EXT_FETCHING) {
            uint64_t pos = e->start;

            while (pos < e->end) {
                uint64_t idx = sc_page_index(c, pos);
                uint64_t pend = (idx + 1) << c->page_shift;
                uint64_t k = MIN(e->end, pend) - pos;

                CHECK(sc_store_lookup(c, idx), "cached byte %" PRIu64
                      " without a page", pos);
                count_add(st->used, sc_store_lookup(c, idx), k);
                pos += k;
            }
        }
    }
    CHECK(count == c->ext.count, "extent count %" PRIu64 " != %" PRIu64,
          count, c->ext.count);
    CHECK(clean == c->ext.clean_bytes, "clean bytes %" PRIu64 " != %" PRIu64,
          clean, c->ext.clean_bytes);
    CHECK(dirty == c->ext.dirty_bytes, "dirty bytes %" PRIu64 " != %" PRIu64,
          dirty, c->ext.dirty_bytes);
    CHECK(nclean == c->ext.lru.length, "LRU length wrong");
    CHECK(ndirty == c->ext.dirty_by_since.count, "dirty index size wrong");
    {
        uint64_t queued = 0;

        for (uint32_t q = 0; q < c->geo.node_count; q++) {
            queued += c->nodes[q].prefetch_queue.length;
        }
        CHECK(queued == c->fetch.queued, "queued prefetch %" PRIu64
              " != %" PRIu64, queued, c->fetch.queued);
    }
    CHECK(nelig == elig_total, "eligible trees hold %" PRIu64 " not %"
          PRIu64, elig_total, nelig);
    CHECK(c->ext.eligible.count == elig_total, "all nodes' eligible tree "
          "holds %" PRIu64 " not %" PRIu64, (uint64_t)c->ext.eligible.count,
          elig_total);
    return true;
out:
    return false;
}

static bool check_pages(SCCache *c, CheckState *st, char **why)
{
    GHashTableIter iter;
    gpointer key, value;
    uint64_t fetch_mem = 0, prefetch_mem = 0, live_pages;
    guint i;

    g_hash_table_iter_init(&iter, c->store.table);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        SCPage *p = value;

        CHECK(key == &p->index && p->in_store, "store key/flag wrong");
        CHECK(p->used == count_get(st->used, p), "page %" PRIu64
              " used %u, extents cover %" PRIu64, p->index, p->used,
              count_get(st->used, p));
        CHECK(p->used > 0, "empty page %" PRIu64 " kept", p->index);
        count_add(st->page_refs, p, 1);
    }
    g_hash_table_iter_init(&iter, c->wbj.jobs);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        SCWbJob *j = value;
        uint32_t k;

        for (k = 0; k < j->npages; k++) {
            CHECK(!g_atomic_int_get(&j->pages[k]->writers), "page %" PRIu64
                  " sent while a staged write copies into it",
                  j->pages[k]->index);
            count_add(st->page_refs, j->pages[k], 1);
        }
    }
    g_hash_table_iter_init(&iter, c->fetch.jobs);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        SCFetchJob *j = value;
        uint32_t k;

        for (k = 0; k < j->npages; k++) {
            if (j->pages[k]) {
                CHECK(!j->pages[k]->in_store, "fetch page in the store");
                count_add(st->page_refs, j->pages[k], 1);
                fetch_mem += c->page_size;
                if (j->prefetch) {
                    prefetch_mem += c->page_size;
                }
            }
        }
    }
    live_pages = g_hash_table_size(st->page_refs);
    g_hash_table_iter_init(&iter, st->page_refs);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        SCPage *p = key;

        CHECK(p->refs == *(uint64_t *)value, "page %" PRIu64 " has %u "
              "refs, %" PRIu64 " expected", p->index, p->refs,
              *(uint64_t *)value);
        if (g_atomic_int_get(&p->writers)) {
            SCExtent *e = sc_ext_lookup(c, p->index << c->page_shift);

            CHECK(p->in_store && e && e->state == SC_EXT_DIRTY && !e->wb &&
                  e->start <= p->index << c->page_shift &&
                  (p->index + 1) << c->page_shift <= e->end,
                  "staged page %" PRIu64 " not inside idle dirty data",
                  p->index);
            CHECK(!g_atomic_int_get(&p->readers), "staged page %" PRIu64
                  " is being read", p->index);
        }
    }
    for (i = 0; i < c->store.lingering->len; i++) {
        SCPage *p = g_ptr_array_index(c->store.lingering, i);

        CHECK(!p->refs && !p->in_store, "lingering page %" PRIu64
              " still referenced", p->index);
        live_pages++;
    }
    for (i = 0; i < c->store.pool->len; i++) {
        SCPage *p = g_ptr_array_index(c->store.pool, i);

        /* reused only once nothing, not even a read, holds it */
        CHECK(!p->refs && !p->in_store && !g_atomic_int_get(&p->readers) &&
              !g_atomic_int_get(&p->writers), "pooled page %" PRIu64
              " still in use", p->index);
    }
    CHECK(live_pages == c->store.count, "page count wrong");
    CHECK(c->store.mem_bytes == live_pages * c->page_size,
          "memory %" PRIu64 " != %" PRIu64 " pages", c->store.mem_bytes,
          live_pages);
    CHECK(fetch_mem == c->fetch.mem_bytes, "fetch memory wrong");
    CHECK(prefetch_mem == c->fetch.prefetch_mem_bytes, "prefetch memory wrong");
    return true;
out:
    return false;
}

static bool check_jobs(SCCache *c, CheckState *st, char **why)
{
    GHashTableIter iter;
    gpointer key, value;
    uint64_t wb_bytes = 0, orphan = 0, issued = 0, prev_end = 0;
    uint32_t *wb_per_node = g_new0(uint32_t, c->geo.node_count);
    uint32_t *pf_per_node = g_new0(uint32_t, c->geo.node_count);
    SCTreeNode *n;
    uint32_t i;
    bool first = true, ok = false;

    CHECK(sc_tree_check(&c->wbj.by_start, sc_job_start_cmp),
          "job range tree broken");
    CHECK(sc_tree_check(&c->wbj.by_since, sc_job_since_cmp),
          "job since tree broken");
    CHECK(c->wbj.by_start.count == g_hash_table_size(c->wbj.jobs) &&
          c->wbj.by_since.count == g_hash_table_size(c->wbj.jobs),
          "job trees and table differ");
    for (n = sc_tree_first(&c->wbj.by_start); n; n = sc_tree_next(n)) {
        SCWbJob *j = SC_CONTAINER_OF(n, SCWbJob, range_node);

        CHECK(first || j->start >= prev_end, "in-flight jobs overlap at %"
              PRIu64, j->start);
        first = false;
        prev_end = j->end;
        CHECK(sc_seg_start(c, j->start) == sc_seg_start(c, j->end - 1),
              "job crosses a segment");
        CHECK(j->live == count_get(st->wb_live, j), "job %" PRIu64
              " live %" PRIu64 " != %" PRIu64, j->id, j->live,
              count_get(st->wb_live, j));
        CHECK(j->node == sc_node_of(c, j->start), "job on wrong node");
        wb_bytes += j->end - j->start;
        orphan += j->end - j->start - j->live;
        wb_per_node[j->node]++;
    }
    CHECK(wb_bytes == c->wbj.inflight_bytes, "in-flight bytes wrong");
    CHECK(orphan == c->wbj.orphan_bytes, "orphan bytes %" PRIu64 " != %" PRIu64,
          orphan, c->wbj.orphan_bytes);

    g_hash_table_iter_init(&iter, c->fetch.jobs);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        SCFetchJob *j = value;

        CHECK(j->waiting == count_get(st->fetch_wait, j), "fetch job %"
              PRIu64 " waiting %" PRIu64 " != %" PRIu64, j->id, j->waiting,
              count_get(st->fetch_wait, j));
        CHECK(sc_seg_start(c, j->start) == sc_seg_start(c, j->end - 1),
              "fetch job crosses a segment");
        if (j->issued) {
            issued++;
            if (j->prefetch) {
                pf_per_node[j->node]++;
            }
        } else {
            CHECK(j->prefetch && j->waiting > 0,
                  "useless or demand job queued");
        }
    }
    CHECK(issued == c->fetch.issued, "issued fetch count wrong");
    for (i = 0; i < c->geo.node_count; i++) {
        CHECK(wb_per_node[i] == c->nodes[i].wb_inflight,
              "node %u writeback count wrong", i);
        CHECK(pf_per_node[i] == c->nodes[i].fetch_inflight,
              "node %u prefetch count wrong", i);
    }
    ok = true;
out:
    g_free(wb_per_node);
    g_free(pf_per_node);
    return ok;
}

static bool check_tickets(SCCache *c, char **why)
{
    uint64_t prev = 0;
    GList *l;

    for (l = c->fl.pending_global.head; l; l = l->next) {
        SCFlush *f = l->data;

        CHECK(f->status == 1 && !f->ranged, "bad pending flush ticket");
        CHECK(f->seq > prev, "pending flush tickets out of order");
        prev = f->seq;
    }
    for (l = c->fl.pending_range.head; l; l = l->next) {
        SCFlush *f = l->data;

        CHECK(f->status == 1 && f->ranged, "bad pending range ticket");
    }
    return true;
out:
    return false;
}

/* Nothing is cached, fetched or written back inside a write-around. */
static bool check_arounds(SCCache *c, char **why)
{
    GList *l;

    for (l = c->arounds.head; l; l = l->next) {
        SCAround *a = l->data;
        SCExtent *e = sc_ext_lookup(c, a->start);

        CHECK(a->start < a->end, "empty write-around");
        CHECK(!e || e->start >= a->end, "extent [%" PRIu64 ", %" PRIu64
              ") inside write-around [%" PRIu64 ", %" PRIu64 ")",
              e->start, e->end, a->start, a->end);
    }
    return true;
out:
    return false;
}

bool sc_cache_check(SCCache *c, char **why)
{
    CheckState st;
    bool ok;

    st.used = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    st.wb_live = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    st.fetch_wait = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    st.page_refs = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    *why = NULL;
    ok = check_extents(c, &st, why) && check_pages(c, &st, why) &&
         check_jobs(c, &st, why) && check_tickets(c, why) &&
         check_arounds(c, why);
    g_hash_table_destroy(st.used);
    g_hash_table_destroy(st.wb_live);
    g_hash_table_destroy(st.fetch_wait);
    g_hash_table_destroy(st.page_refs);
    return ok;
}
