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
/*
 * Free page slots an arena keeps resident however long they stay free,
 * and how long a slot must stay free before its memory is given back
 * (sc-arena.h).
 */
#define SC_ARENA_KEEP_SLOTS 8
#define SC_ARENA_COLD_US (1000 * 1000)
#define SC_MAX_SIZE (1ULL << 40)
#define SC_MAX_DIRTY_AGE_NS (3600 * SC_NS_PER_SEC)
#define SC_MAX_RA_TRIGGER 65536
#define SC_MAX_NODE_JOBS 1024
/*
 * Requests from this size on go around the cache: they keep the nodes
 * busy by themselves, and a copy through the cache, cut into stripe-unit
 * jobs, only costs CPU (docs/tuning.md, "Large requests").
 */
#define SC_DEFAULT_BYPASS_BYTES (512 * SC_KiB)
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

typedef struct SCWbJob SCWbJob;
typedef struct SCFetchJob SCFetchJob;

#include "sc-extent.h"
#include "sc-pages.h"
#include "sc-evict.h"
#include "sc-wbjobs.h"
#include "sc-writeback.h"
#include "sc-fetch.h"
#include "sc-flush.h"
#include "sc-around.h"
#include "sc-staged.h"

/* Per node; each field owned by the module named. */
typedef struct SCNode {
    SCTree eligible;            /* sc-extent: eligible DIRTY, oldest first */
    GQueue prefetch_queue;      /* sc-fetch: queued prefetch, oldest first */
    uint32_t wb_inflight;       /* sc-writeback */
    uint32_t fetch_inflight;    /* sc-fetch: issued prefetch jobs */
    int64_t backoff_until;      /* sc-writeback: paused till then */
    int64_t backoff_ns;
} SCNode;

/*
 * The cache: configuration set at creation (sc-cache.c), and one part
 * owned by each module, whose header states its invariants.  A module
 * changes only its own part; it reads others' through their functions
 * or, for counters, directly.
 */
struct SCCache {
    SCOptions opts;
    SCGeometry geo;
    uint64_t page_size;
    unsigned page_shift;
    uint64_t segment;
    uint64_t meta_limit;

    SCExtentMap ext;            /* sc-extent.h */
    SCPageStore store;          /* sc-pages.h */
    SCWbJobs wbj;               /* sc-wbjobs.h: jobs in flight */
    SCWbSched wb;               /* sc-writeback.h: the planner */
    SCFetchState fetch;         /* sc-fetch.h */
    SCFlushState fl;            /* sc-flush.h */
    GQueue arounds;             /* sc-around.h */
    SCStaged staged;            /* sc-staged.h */
    SCReadahead ra;             /* sc-readahead.h */
    SCNode *nodes;
    uint64_t next_job_id;
    SCStats stats;              /* each module counts its own */
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

/* A request that goes around the cache (cache-bypass-bytes). */
static inline bool sc_bypasses(const SCCache *c, uint64_t len)
{
    return c->opts.bypass_bytes && len >= c->opts.bypass_bytes;
}

/* In-flight jobs a node may have (cache-node-jobs, else the geometry). */
static inline uint32_t sc_writeback_jobs_max(const SCCache *c)
{
    return c->opts.node_jobs ?: c->geo.max_writeback_per_node;
}

static inline uint32_t sc_fetch_jobs_max(const SCCache *c)
{
    return c->opts.node_jobs ?: c->geo.max_fetch_per_node;
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

/*
 * Double the capacity of an array that starts in storage inside its owner
 * (@inline_v, *@cap elements of @elem bytes) and moves to the heap when
 * it outgrows it; returns where it is now.
 */
static inline void *sc_array_grow(void *v, void *inline_v, uint32_t *cap,
                                  size_t elem)
{
    void *grown;

    if (v == inline_v) {
        grown = g_malloc_n(*cap * 2, elem);
        memcpy(grown, inline_v, *cap * elem);
    } else {
        grown = g_realloc_n(v, *cap * 2, elem);
    }
    *cap *= 2;
    return grown;
}

/* sc-options.c */
char *sc_geometry_check(const SCGeometry *geo);


/* sc-write.c */
void sc_range_drop(SCCache *c, uint64_t offset, uint64_t len);
bool sc_range_busy(SCCache *c, uint64_t offset, uint64_t len);


/* sc-check.c: full consistency check, built for tests only (O(n)) */
bool sc_cache_check(SCCache *c, char **why);


#endif /* SC_INTERNAL_H */
