/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: internal data structures shared by the modules.
 *
 * Model (docs/cache-design.md has the long version):
 *
 * - The extent map holds non-overlapping byte ranges ("extents") in one of
 *   three states: CLEAN (equals the nodes), DIRTY (newer than the nodes)
 *   and FETCHING (a fetch job will fill it).  Absent bytes have no extent.
 *   An extent never crosses a segment boundary (stripe unit, at most
 *   SC_SEGMENT_MAX), so it belongs to exactly one node and writeback jobs
 *   never cross a stripe unit.
 *
 * - Data lives in fixed-size pages (SCPage) in a hash "store", separate
 *   from the extents: splitting and merging extents never copies data.  A
 *   page that an in-flight writeback job points at is immutable; a write
 *   to it copies the page first (copy-on-write), so the job keeps sending
 *   exactly the bytes it was given.  Fetch jobs read into pages of their
 *   own; completion adopts or copies only the bytes still waiting.
 *
 * - A DIRTY extent carries @since, the flush epoch in which its data first
 *   became dirty.  A flush ticket taken in epoch S is done when no dirty
 *   byte and no in-flight job has since <= S.  A dirty extent is
 *   "eligible" for writeback unless it is being written (@wb) or an
 *   in-flight job covers its range with older data (@blocked_by); that
 *   keeps two jobs for the same bytes from ever being in flight at once.
 *
 * All offsets are bytes on the virtual disk.
 */
#ifndef SC_INTERNAL_H
#define SC_INTERNAL_H

#include "stripe-cache.h"
#include "sc-arena.h"
#include "sc-tree.h"
#include "sc-readahead.h"

#include <string.h>

#define SC_KiB 1024ULL
#define SC_MiB (1024ULL * 1024)
#define SC_GiB (1024ULL * 1024 * 1024)
#define SC_NS_PER_SEC 1000000000ULL
#define SC_NS_PER_MS 1000000ULL

/* Limits on options and geometry */
#define SC_MIN_SIZE (64 * SC_KiB)
/* Free page slots an arena keeps resident (sc-arena.h). */
#define SC_ARENA_KEEP_SLOTS 8
#define SC_MAX_SIZE (1ULL << 40)
#define SC_MAX_DIRTY_AGE_NS (3600 * SC_NS_PER_SEC)
#define SC_MAX_RA_TRIGGER 65536
#define SC_MIN_STRIPE_UNIT 512
/*
 * The driver has at most 64 nodes (STRIPE_MAX_NODES); a bound keeps the
 * per-node array allocated at creation, and the loops over all nodes in
 * writeback and prefetch, small whatever the caller passes.
 */
#define SC_MAX_NODES 1024

/* Largest extent and job: keeps node requests and iovecs reasonable. */
#define SC_SEGMENT_MAX (1 * SC_MiB)
/* Preferred page size: large enough to keep per-page overhead small. */
#define SC_PAGE_PREFERRED 4096

/* Writer pacing: the longest single delay handed to a writer. */
#define SC_MAX_PAUSE_NS (200 * SC_NS_PER_MS)
/* Writeback bandwidth assumed before the first measurement. */
#define SC_BW_DEFAULT (64 * SC_MiB)
/* Busy time over which one bandwidth sample is taken. */
#define SC_BW_SAMPLE_NS (100 * SC_NS_PER_MS)
/* Retry backoff of a node whose writeback failed. */
#define SC_BACKOFF_MIN_NS (10 * SC_NS_PER_MS)
#define SC_BACKOFF_MAX_NS (1 * SC_NS_PER_SEC)

/*
 * Bookkeeping as allocated: a GHashTable entry (hash, key, value, with
 * the table's slack) and the header glibc's malloc puts before a block.
 */
#define SC_HASH_ENTRY_BYTES 40
#define SC_ALLOC_OVERHEAD 16
/*
 * Freed pages kept for reuse, at most this many and at most 1/64 of the
 * cache: pages are just above the allocator's small-size caches, and
 * evicting and refilling them through malloc() dominated the cost of an
 * insert into a full cache.  Reported in metadata_bytes.
 */
#define SC_PAGE_POOL_MAX 256

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

typedef struct SCWbJob SCWbJob;
typedef struct SCFetchJob SCFetchJob;

typedef struct SCPage {
    uint64_t index;             /* offset / page_size; the hash key */
    uint32_t refs;              /* the store's plus one per job */
    uint32_t used;              /* bytes covered by CLEAN/DIRTY extents */
    bool in_store;
    uint8_t *data;              /* a slot of c->arenas (see sc-arena.h) */
} SCPage;

typedef struct SCExtent {
    SCTreeNode map_node;        /* c->map, by start */
    SCTreeNode dirty_node;      /* DIRTY: c->dirty_by_since */
    SCTreeNode elig_node;       /* DIRTY, eligible: node's eligible tree */
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

struct SCWbJob {
    uint64_t id;                /* first: the hash key */
    SCTreeNode range_node;      /* c->wb_by_start */
    SCTreeNode since_node;      /* c->wb_by_since */
    uint64_t start;
    uint64_t end;
    uint64_t live;              /* bytes still cached as this data */
    uint64_t min_since;
    int64_t min_dirtied_ns;
    uint32_t node;
    bool fua;
    uint64_t first_page;
    uint32_t npages;
    SCPage **pages;
    struct iovec *iov;
};

struct SCFetchJob {
    uint64_t id;                /* first: the hash key */
    uint64_t start;
    uint64_t end;
    uint64_t waiting;           /* bytes of FETCHING extents for it */
    uint64_t handout_call;      /* sc_read call that handed it out */
    uint32_t node;
    bool prefetch;
    bool issued;                /* handed to the caller */
    GList queue_link;           /* queued prefetch: node's queue */
    uint64_t first_page;
    uint32_t npages;
    SCPage **pages;             /* NULL once adopted by the store */
    struct iovec *iov;
};

struct SCFlush {
    GList link;                 /* c->tickets */
    GList pending_link;         /* c->pending_global / pending_range */
    uint64_t seq;               /* covers dirty data with since <= seq */
    uint64_t start;             /* range tickets (write-through) */
    uint64_t end;
    int status;                 /* 1 pending, 0 done, -errno failed */
    bool from_guest;            /* a guest flush or write-through */
    bool ranged;
    bool fua;
};

/* A write-around on its way to the nodes (sc-around.c). */
struct SCAround {
    GList link;                 /* c->arounds */
    uint64_t start;
    uint64_t end;
    uint64_t min_since;         /* oldest dropped dirty data, or MAX */
};

typedef struct SCNode {
    SCTree eligible;            /* eligible DIRTY extents, oldest first */
    GQueue prefetch_queue;      /* queued prefetch jobs, oldest first */
    uint32_t wb_inflight;
    uint32_t fetch_inflight;    /* issued prefetch jobs */
    int64_t backoff_until;      /* background writeback paused till then */
    int64_t backoff_ns;
} SCNode;

struct SCCache {
    SCOptions opts;
    SCGeometry geo;
    uint64_t page_size;
    unsigned page_shift;
    uint64_t segment;
    uint64_t meta_limit;

    /* extents */
    SCTree map;
    SCTree dirty_by_since;
    GQueue lru;
    uint64_t lru_clock;
    uint64_t extent_count;
    uint64_t clean_bytes;
    uint64_t dirty_bytes;       /* bytes in DIRTY extents */
    uint64_t orphan_bytes;      /* in-flight bytes no longer cached */

    /* pages */
    GHashTable *pages;
    uint64_t page_count;        /* all live pages, store and jobs */
    GPtrArray *page_pool;       /* freed pages kept for reuse */
    GPtrArray *arenas;          /* SCArena: where page data lives */
    uint64_t arena_slots;       /* slots in all arenas */
    uint64_t mem_bytes;
    uint64_t fetch_mem_bytes;   /* pages owned by fetch jobs */
    uint64_t prefetch_mem_bytes;

    SCNode *nodes;

    /* writeback */
    SCTree wb_by_start;
    SCTree wb_by_since;
    GHashTable *wb_jobs;
    uint64_t wb_inflight_bytes;
    bool pressure;              /* a writer was refused: write back now */
    double bw;                  /* writeback bytes per second (EWMA) */
    int64_t bw_last_ns;
    int64_t bw_busy_ns;
    uint64_t bw_bytes;

    /* fetch */
    GHashTable *fetch_jobs;
    uint64_t fetch_issued;
    uint64_t read_call;
    uint32_t prefetch_rr;

    /* write-arounds in flight, few: bounded by the guest's queue depth */
    GQueue arounds;
    /* reads' pinned hits not released yet (for the consistency check) */
    GQueue hit_sets;

    /* flush */
    uint64_t epoch;
    GQueue tickets;
    GQueue pending_global;
    GQueue pending_range;
    int sticky_error;           /* for the guest's next flush */
    bool seen_guest_flush;
    uint64_t wb_failures;       /* failed writeback jobs so far */
    int wb_last_error;

    SCReadahead ra;
    uint64_t next_job_id;
    SCStats stats;
};

/* Geometry helpers */

static inline uint64_t sc_round_down(uint64_t x, uint64_t a)
{
    return x & ~(a - 1);
}

static inline uint64_t sc_round_up(uint64_t x, uint64_t a)
{
    return x > UINT64_MAX - (a - 1) ? sc_round_down(UINT64_MAX, a)
                                    : sc_round_down(x + a - 1, a);
}

static inline uint64_t sc_seg_start(const SCCache *c, uint64_t off)
{
    return sc_round_down(off, c->segment);
}

/* End of the segment holding @off (saturates at UINT64_MAX). */
static inline uint64_t sc_seg_end(const SCCache *c, uint64_t off)
{
    uint64_t s = sc_seg_start(c, off);

    return s > UINT64_MAX - c->segment ? UINT64_MAX : s + c->segment;
}

static inline uint32_t sc_node_of(const SCCache *c, uint64_t off)
{
    return (off / c->geo.stripe_unit) % c->geo.node_count;
}

static inline uint64_t sc_page_index(const SCCache *c, uint64_t off)
{
    return off >> c->page_shift;
}

static inline uint64_t sc_ext_len(const SCExtent *e)
{
    return e->end - e->start;
}

static inline bool sc_ext_eligible(const SCExtent *e)
{
    return e->state == SC_EXT_DIRTY && !e->wb && !e->blocked_by;
}

static inline SCExtent *sc_ext_of_map(SCTreeNode *n)
{
    return n ? SC_CONTAINER_OF(n, SCExtent, map_node) : NULL;
}

/* End of [off, off + len), saturating. */
static inline uint64_t sc_range_end(uint64_t off, uint64_t len)
{
    return len > UINT64_MAX - off ? UINT64_MAX : off + len;
}

/* sc-options.c */
char *sc_geometry_check(const SCGeometry *geo);

/* sc-pages.c: page store, memory accounting, data copies */
typedef struct SCIovIter {
    const struct iovec *iov;
    int iovcnt;
    int idx;
    size_t off;                 /* within iov[idx] */
} SCIovIter;

void sc_iov_iter_init(SCIovIter *it, const struct iovec *iov, int iovcnt,
                      size_t skip);
void sc_iov_iter_skip(SCIovIter *it, uint64_t n);
SCPage *sc_page_alloc(SCCache *c, uint64_t index);
void sc_page_unref(SCCache *c, SCPage *p);
SCPage *sc_store_lookup(SCCache *c, uint64_t index);
void sc_store_insert(SCCache *c, SCPage *p);
SCPage *sc_store_writable(SCCache *c, uint64_t index);
void sc_store_add_used(SCCache *c, uint64_t start, uint64_t end);
void sc_store_sub_used(SCCache *c, uint64_t start, uint64_t end);
void sc_store_clear(SCCache *c);
/* Pages [start, end) would need: absent or pinned by a job. */
uint64_t sc_store_pages_to_alloc(SCCache *c, uint64_t start, uint64_t end);
void sc_iov_iter_copy(SCIovIter *it, uint8_t *buf, uint64_t len,
                      bool to_iov);
void sc_pages_copy_in(SCCache *c, uint64_t start, uint64_t end,
                      SCIovIter *it);
void sc_pages_copy_out(SCCache *c, uint64_t start, uint64_t end,
                       SCIovIter *it);
/* Build pages and iov for a job over [start, end). */
void sc_job_iov_build(SCCache *c, uint64_t start, uint64_t end,
                      SCPage **pages, struct iovec *iov);
uint32_t sc_pages_spanned(const SCCache *c, uint64_t start, uint64_t end);
void sc_page_pool_trim(SCCache *c);
void sc_page_arenas_fit(SCCache *c);
void sc_page_pool_free(SCCache *c);

/* sc-hits.c: cache hits pinned, copied outside the caller's lock */
void sc_hits_init(SCHits *h);
void sc_hits_add(SCCache *c, SCHits *h, uint64_t start, uint64_t end,
                 uint64_t dst);

/* sc-extent.c: the extent map and the per-state indexes */
SCExtent *sc_ext_new(SCCache *c, uint64_t start, uint64_t end,
                     SCExtentState state);
void sc_ext_insert(SCCache *c, SCExtent *e);
void sc_ext_delete(SCCache *c, SCExtent *e, SCDropReason why);
void sc_ext_index(SCCache *c, SCExtent *e);
void sc_ext_unindex(SCCache *c, SCExtent *e);
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
int sc_job_start_cmp(const SCTreeNode *a, const SCTreeNode *b);
int sc_job_since_cmp(const SCTreeNode *a, const SCTreeNode *b);

/* sc-evict.c: clean LRU and making room */
bool sc_over_budget(SCCache *c, uint64_t mem_need, uint64_t ext_need);
bool sc_make_room(SCCache *c, uint64_t mem_need, uint64_t ext_need,
                  uint64_t keep_start, uint64_t keep_end,
                  bool cancel_prefetch);
uint64_t sc_meta_bytes(const SCCache *c);

/* sc-read.c: fetch jobs and prefetch */
void sc_fetch_cancel(SCCache *c, SCFetchJob *job);
void sc_fetch_job_free(SCCache *c, SCFetchJob *job);
bool sc_prefetch_cancel_one(SCCache *c);

/* sc-writeback.c */
SCWbJob *sc_wb_job_covering(SCCache *c, uint64_t off);
uint64_t sc_wb_boundary_after(SCCache *c, uint64_t off);
uint64_t sc_wb_min_since(SCCache *c, uint64_t start, uint64_t end);
uint64_t sc_dirty_total(const SCCache *c);
void sc_wb_job_free(SCCache *c, SCWbJob *job);

/* sc-around.c */
uint64_t sc_around_covered_end(SCCache *c, uint64_t off);
uint64_t sc_around_next_start(SCCache *c, uint64_t off);
bool sc_around_overlaps(SCCache *c, uint64_t start, uint64_t end);
uint64_t sc_around_min_need(SCCache *c, uint64_t start, uint64_t end);
void sc_arounds_free_all(SCCache *c);

/* sc-write.c */
void sc_range_drop(SCCache *c, uint64_t offset, uint64_t len);
bool sc_range_busy(SCCache *c, uint64_t offset, uint64_t len);

/* sc-flush.c */
SCFlush *sc_ticket_new_range(SCCache *c, uint64_t start, uint64_t end,
                             bool fua);
void sc_tickets_update(SCCache *c, uint64_t start, uint64_t end);
void sc_tickets_fail(SCCache *c, uint64_t start, uint64_t end,
                     uint64_t min_since, int err, bool keep_untaken);
bool sc_tickets_want_fua(SCCache *c, uint64_t start, uint64_t end,
                         uint64_t min_since);
void sc_tickets_free_all(SCCache *c);

/* sc-check.c: full consistency check, built for tests only (O(n)) */
bool sc_cache_check(SCCache *c, char **why);

#endif /* SC_INTERNAL_H */
