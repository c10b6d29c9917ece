/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the extent map (sc-extent.c), and the LRU order of clean
 * extents that eviction (sc-evict.c) consumes.
 *
 * Owns SCExtentMap.  Invariants (sc_cache_check() proves them):
 * - extents in @map never overlap and never cross a segment, so each
 *   belongs to one node;
 * - every DIRTY extent is in @dirty_by_since, ordered by (since, start),
 *   and in its node's eligible tree exactly when sc_ext_eligible();
 * - every CLEAN extent is in @lru, most recently used first; no other is;
 * - @count, @clean_bytes and @dirty_bytes are the sums over @map;
 * - a FETCHING extent points at a fetch job whose @waiting counts it.
 *
 * Locking: none here.  The caller serialises every call into the core
 * (the driver holds its cache lock around each); nothing in this module
 * blocks, sleeps or reads a clock.
 */
#ifndef SC_EXTENT_H
#define SC_EXTENT_H

typedef enum SCExtentState {
    SC_EXT_CLEAN,
    SC_EXT_DIRTY,
    SC_EXT_FETCHING,
} SCExtentState;

/* Why an extent leaves the cache: decides what the stats call it. */
typedef enum SCDropReason {
    SC_DROP_EVICT,              /* memory pressure */
    SC_DROP_INVALIDATE,         /* discard, write-zeroes, bypass, drop */
    SC_DROP_FETCH_FAILED,
} SCDropReason;

typedef struct SCExtent {
    SCTreeNode map_node;        /* c->map, by start */
    SCTreeNode dirty_node;      /* DIRTY: c->dirty_by_since */
    SCTreeNode elig_node;       /* DIRTY, eligible: node's eligible tree */
    SCTreeNode elig_all_node;   /* ... and c->ext.eligible, all nodes' */
    GList lru_link;             /* CLEAN: c->lru (head = most recent) */
    uint64_t start;
    uint64_t end;
    uint64_t since;             /* DIRTY: epoch the data became dirty */
    int64_t dirtied_ns;         /* DIRTY: time it became dirty */
    uint64_t lru_stamp;         /* CLEAN: last use, for merges */
    SCWbJob *wb;                /* DIRTY: in-flight job sending this data */
    SCWbJob *blocked_by;        /* DIRTY: in-flight job over this range */
    SCFetchJob *fetch;          /* FETCHING: the job that fills it */
    uint8_t state;              /* SCExtentState */
    /* blocked: replaced @blocked_by's data, inherits its since on failure */
    bool inherit;
    bool prefetched;            /* CLEAN: read ahead, not read yet */
} SCExtent;

typedef struct SCExtentMap {
    SCTree map;                 /* every extent, by start */
    SCTree dirty_by_since;      /* DIRTY extents, oldest data first */
    /*
     * every node's eligible extents in one tree, in the same order: the
     * oldest eligible data of all, without a look at every node
     */
    SCTree eligible;
    GQueue lru;                 /* CLEAN extents, most recent first */
    uint64_t lru_clock;
    uint64_t count;
    uint64_t clean_bytes;
    uint64_t dirty_bytes;       /* bytes in DIRTY extents */
} SCExtentMap;

/* sc-extent.c: the extent map and the per-state indexes */
SCExtent *sc_ext_new(SCCache *c, uint64_t start, uint64_t end,
                     SCExtentState state);
void sc_ext_insert(SCCache *c, SCExtent *e);
void sc_ext_delete(SCCache *c, SCExtent *e, SCDropReason why);
void sc_ext_index(SCCache *c, SCExtent *e);
void sc_ext_unindex(SCCache *c, SCExtent *e);
/* Into and out of its node's eligible tree and c->ext.eligible. */
void sc_ext_elig_insert(SCCache *c, SCExtent *e);
void sc_ext_elig_remove(SCCache *c, SCExtent *e);
/* The oldest eligible extent of all nodes, or NULL. */
SCExtent *sc_ext_oldest_eligible(SCCache *c);
SCExtent *sc_ext_lookup(SCCache *c, uint64_t off);
SCExtent *sc_ext_next(SCExtent *e);
SCExtent *sc_ext_prev(SCExtent *e);
void sc_ext_carve(SCCache *c, uint64_t off);
void sc_ext_merge_range(SCCache *c, uint64_t start, uint64_t end);
void sc_ext_touch(SCCache *c, SCExtent *e);
int sc_ext_elig_cmp(const SCTreeNode *a, const SCTreeNode *b);
/* Tree orders, shared with the consistency checker. */
int sc_ext_map_cmp(const SCTreeNode *a, const SCTreeNode *b);
int sc_ext_dirty_cmp(const SCTreeNode *a, const SCTreeNode *b);
/* Dirty bytes, cached or only in flight. */
uint64_t sc_dirty_total(const SCCache *c);

#endif /* SC_EXTENT_H */
