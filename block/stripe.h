/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": internal interfaces shared by its files.
 *
 *   stripe.c             the BlockDriver: open/close, limits, reopen, info
 *   stripe-options.c     the cache and readahead runtime options
 *   stripe-header.c      reading, checking and writing the node headers
 *   stripe-resize.c      resize, and growth for a write past the end
 *   stripe-create.c      qemu-img create / blockdev-create
 *   stripe-io.c          splitting requests per node and running them in
 *                        parallel
 *   stripe-health.c      replicated images: marking a node failed
 *   stripe-deadline.c    node requests that give up after node-timeout
 *   stripe-bitmap.c      the write-intent bitmap: marking, lazy clearing
 *   stripe-resync.c      copying the bitmap's regions to the other copies
 *                        and bringing failed nodes back
 *   stripe-rebuild.c     copying all of a failed node's units back to it
 *                        (images without a bitmap)
 *   stripe-job.c         QMP: resync and replace nodes as a block job
 *   stripe-cache.c       guest requests through the writeback cache, and
 *                        its lifecycle
 *   stripe-cache-jobs.c  running the cache's writeback and prefetch jobs
 *   stripe-stats.c       query-blockstats statistics
 */
#ifndef BLOCK_STRIPE_H
#define BLOCK_STRIPE_H

#include "block/block_int.h"
#include "qapi/qapi-types-block-core.h"
#include "qemu/coroutine.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "stripe-cache.h"
#include "stripe-layout.h"

/*
 * Node requests are kept at or below this size (and the node's
 * max_transfer): larger ones are split and run in parallel.  iSCSI nodes
 * take at most 256 KiB: tgtd over libiscsi falls off a cliff at 1 MiB
 * requests (its default MaxBurstLength is 256 KiB), see
 * docs/stripe-unit.md.  Other nodes take up to 4 MiB, one RBD object: a
 * node that is a whole cluster does one large request for less CPU than
 * several small ones (docs/tuning.md, "Large requests").
 */
#define STRIPE_MAX_NODE_REQUEST         (4 * 1024 * 1024)
#define STRIPE_MAX_ISCSI_NODE_REQUEST   (256 * 1024)

/* Default stripe unit of new images, see docs/stripe-unit.md. */
#define STRIPE_DEFAULT_UNIT         (256 * 1024)

/* Node requests one guest request may have in flight at once. */
#define STRIPE_MAX_PARALLEL         64

/* Runtime options of the cache (stripe-options.c) */
#define STRIPE_OPT_CACHE_SIZE           "cache-size"
#define STRIPE_OPT_CACHE_MAX_DIRTY      "cache-max-dirty"
#define STRIPE_OPT_CACHE_TARGET_DIRTY   "cache-target-dirty"
#define STRIPE_OPT_CACHE_MAX_DIRTY_AGE  "cache-max-dirty-age"
#define STRIPE_OPT_CACHE_WT_UNTIL_FLUSH "cache-writethrough-until-flush"
#define STRIPE_OPT_RA_TRIGGER           "readahead-trigger-requests"
#define STRIPE_OPT_RA_MAX_BYTES         "readahead-max-bytes"
#define STRIPE_OPT_RA_DISABLE_AFTER     "readahead-disable-after-bytes"
#define STRIPE_OPT_CACHE_BYPASS         "cache-bypass-bytes"
#define STRIPE_OPT_CACHE_NODE_JOBS      "cache-node-jobs"
#define STRIPE_OPT_CACHE_EAGER_WB       "cache-eager-writeback"
#define STRIPE_MAX_DIRTY_AGE_SECS       3600
/* Replicated images: when a node that does not answer is given up on. */
#define STRIPE_OPT_NODE_TIMEOUT         "node-timeout"
#define STRIPE_DEFAULT_NODE_TIMEOUT_NS  (15 * NANOSECONDS_PER_SECOND)
/* How often a write checks that its node answered requests given up on */
#define STRIPE_OUTSTANDING_POLL_NS      (10 * SCALE_MS)
#define STRIPE_OPT_AUTO_RESYNC          "auto-resync"
#define STRIPE_MAX_NODE_TIMEOUT_SECS    3600

/*
 * Write-intent bitmap: the region size of new replicated images, and how
 * long a region must see no write before a flush clears its bit (two such
 * rotations, docs/layout.md).  4 MiB: smaller regions cost random writes
 * on clean regions (15 % at 1 MiB) and resynced no less, larger ones
 * resync more (bench/replica-bench --only region, docs/tuning.md).
 */
#define STRIPE_OPT_BITMAP_REGION        "bitmap-region"
#define STRIPE_DEFAULT_BITMAP_REGION    (4 * 1024 * 1024)
#define STRIPE_BITMAP_ROTATE_NS         (5 * NANOSECONDS_PER_SECOND)
/* Bytes the resync copies at a time, at most. */
#define STRIPE_RESYNC_CHUNK             (1024 * 1024)
/* a resync's buffer: a chunk of the source, and one to compare a copy in */
#define STRIPE_RESYNC_BUF               (2 * STRIPE_RESYNC_CHUNK)
/* Between passes while a node stays failed: doubling, up to a minute. */
#define STRIPE_RESYNC_RETRY_MIN_NS      NANOSECONDS_PER_SECOND
#define STRIPE_RESYNC_RETRY_MAX_NS      (60 * NANOSECONDS_PER_SECOND)
/* How often a resync job checks that failed nodes answered what was given up */
#define STRIPE_RESYNC_ANSWER_POLL_NS    (100 * SCALE_MS)

/* Jobs taken from the core under one hold of its lock. */
#define STRIPE_CACHE_KICK_BATCH         16
/*
 * Tries to take a contended cache lock before sleeping on it.  The
 * critical sections are short (an index walk; reads copy outside the
 * lock, a write copies only its own data): the lock is usually free again
 * within a microsecond, while sleeping and being woken costs two system
 * calls and a context switch, several microseconds.
 */
#define STRIPE_CACHE_LOCK_SPINS         200

/*
 * In-flight writeback and prefetch jobs per node, unless cache-node-jobs
 * says otherwise: an RBD image spreads its requests over a cluster's
 * OSDs and takes many more than one storage target (docs/tuning.md).
 */
#define STRIPE_CACHE_WB_PER_NODE        4
#define STRIPE_CACHE_FETCH_PER_NODE     4
#define STRIPE_CACHE_JOBS_PER_RBD_NODE  128
/* How deep a node is searched for its storage under filters and raw. */
#define STRIPE_NODE_FILE_DEPTH          8
/* A reader starved by evictions this often reads around the cache. */
#define STRIPE_CACHE_MAX_READ_ROUNDS    8
/*
 * A request waiting for the cache with nothing in flight and nothing to
 * start (every node with dirty data backs off after an error) sleeps until
 * the next retry deadline, within these bounds.
 */
#define STRIPE_CACHE_MIN_WAIT_NS        (1 * SCALE_MS)
/* a retry after a staged write refused a request: it copies 4 KiB or so */
#define STRIPE_CACHE_STAGED_WAIT_NS     (10 * SCALE_US)
#define STRIPE_CACHE_IDLE_WAIT_NS       (1 * NANOSECONDS_PER_SECOND)
/* Writeback attempts at close before dirty data is reported lost. */
#define STRIPE_CACHE_CLOSE_TRIES        3

/*
 * Thread model.
 *
 * Contexts.  IO callbacks (preadv, pwritev, pwrite_zeroes, pdiscard, flush,
 * block_status, truncate, getlength) are coroutines that may run in any
 * thread that submits requests to this node: with virtio-blk
 * iothread-vq-mapping, in several iothreads at once.  The cache's job
 * coroutines are entered in the node's home AioContext
 * (bdrv_get_aio_context()), where its timer fires too; they may end up
 * completing in another thread's context when a child node lives there.
 * Open, close, reopen, drain_begin/end, attach/detach_aio_context,
 * inactivate and the node list are global state: main loop, BQL held.
 *
 * Locks, in the order they are taken:
 *   1. BDRVStripeState.resize_lock (CoMutex): resize and growth, held
 *      across their node IO;
 *   2. StripeBitmap.io_lock (CoMutex): writes of the on-node write-intent
 *      bitmap, held across them (growth takes it under resize_lock, and
 *      bringing a node back takes health_lock under it);
 *   3. BDRVStripeState.health_lock (CoMutex): marking a node failed and
 *      every header rewrite, held across the header writes; taken from
 *      IO paths (a node request failed), so never held across data IO;
 *   4. StripeBitmap.lock (QemuMutex): the bitmap in memory; never held
 *      across a yield, and nothing else is taken under it;
 *   5. StripeCache.lock (StripeCacheLock, a QemuMutex): the
 *      cache.  Innermost: nothing else is taken while it is held, it is
 *      never held across a yield or a call into the block layer
 *      (qemu_co_queue_wait() drops it while it waits), and it covers the
 *      index and state transitions only: reads copy their hits, and
 *      rewrites of dirty data their data (staged writes, see
 *      cache/sc-staged.h), with it dropped (docs/cache-design.md,
 *      "Threads").
 *
 * StripeCache: every field under @lock, except @core's and @bs's
 * pointers and @lock and @progress themselves (set at creation), @done,
 * @done_nodes and @settle_scheduled (ended jobs: pushed without the lock,
 * emptied by stripe_cache_unlock()), and @timer, which is created and
 * freed in the main loop when no request is in flight
 * (attach/detach_aio_context, open, close), where @timer_deadline is
 * reset with it; timer_mod() and timer_del() are thread-safe.  Waiters
 * on @progress are woken with qemu_co_queue_restart_all(), which wakes
 * each in its own AioContext.
 */
/*
 * The cache lock: a QemuMutex that clang's thread-safety analysis knows as
 * a capability (QemuMutex itself is not one), so that it checks that every
 * function documented to run under the lock (TSA_REQUIRES) is called with
 * it held, and that every path drops what it takes.  Taken with
 * stripe_cache_lock() and stripe_cache_unlock(), not QEMU_LOCK_GUARD():
 * the analysis cannot follow a cleanup-attribute scope in C.
 */
typedef struct TSA_CAPABILITY("mutex") StripeCacheLock {
    QemuMutex mutex;
} StripeCacheLock;

/*
 * Background jobs whose node request has ended and that the core has not
 * been told of yet: one lock-free list per node, on a cache line of its
 * own, so that the completions of different nodes, each in its own
 * thread, neither share a list nor wait for the cache lock
 * (stripe-cache-jobs.c, "Settling").
 */
typedef struct StripeNodeDone {
    QSLIST_HEAD(, StripeJob) jobs;
} QEMU_ALIGNED(64) StripeNodeDone;

typedef struct StripeCache {
    SCCache *core;
    BlockDriverState *bs;
    StripeNodeDone *done;       /* per node; lock-free, see @done_nodes */
    uint64_t done_nodes;        /* atomic: a bit per node with ended jobs */
    bool settle_scheduled;      /* atomic: a settling bottom half pending */
    StripeCacheLock lock;       /* around every core call, never a yield */
    /*
     * woken when any job or write-around completes, or a staged write
     * that somebody was refused for is published
     */
    CoQueue progress;
    QEMUTimer *timer;           /* age-based writeback, retries */
    int64_t timer_deadline;     /* when it fires, INT64_MAX: not armed */
    /* jobs and write-arounds in flight: each wakes @progress when done */
    unsigned in_flight;
    /* times a published staged write woke @progress (stripe_cache_wake) */
    unsigned wakeups;
    bool quiesced;              /* drained: start no background IO */
    bool inactive;              /* migrated away: no IO at all */
    /* the pieces of the read holding @lock, reused: hits allocate nothing */
    GArray *read_pieces;
    /* what the core cannot see */
    uint64_t flush_count;
    uint64_t flush_errors;
    uint64_t flush_ns_total;
    uint64_t flush_ns_max;
    uint64_t throttled_writes;
    uint64_t throttle_ns;
} StripeCache;

/*
 * Per node index, replicated images: counters read by query-blockstats,
 * atomic.  They outlive a replace: the index's history.
 */
typedef struct StripeNodeHealth {
    uint64_t errors;            /* node requests that failed */
    uint64_t timeouts;          /* ... that were given up on */
} StripeNodeHealth;

/*
 * The image's edge to one node, as its requests see it: a request given
 * up on keeps its edge until the node answers, however long that is
 * (stripe-deadline.c).  When stripe-node-replace puts another node in
 * the place of one that still owes answers, its edge is parked, not
 * detached: detaching drains the node, which waits for those answers,
 * forever for a target gone for good.  A parked edge is detached once
 * its node has answered everything (stripe-edge.c), and freed at close.
 */
typedef struct StripeNodeEdge {
    BdrvChild *child;           /* NULL once a parked edge is detached */
    uint32_t index;             /* the node index it was the edge of */
    uint64_t in_flight;         /* atomic: node requests now */
    uint64_t outstanding;       /* atomic: given up on, not answered yet */
    bool parked;                /* atomic: set once, main loop */
    QSLIST_ENTRY(StripeNodeEdge) next;  /* in BDRVStripeState.parked */
} StripeNodeEdge;

/*
 * The write-intent bitmap (stripe-bitmap.c).  @lock covers every field
 * but these: @image (under @io_lock), @durable (written with both locks
 * held, read under either), @shift (fixed), @regions (written with both
 * held, grows only), the counters (atomic).
 */
typedef struct StripeBitmap {
    QemuMutex lock;             /* never held across a yield */
    CoMutex io_lock;            /* around writes of the on-node bitmap */
    unsigned shift;             /* log2(region size) */
    uint64_t regions;           /* bits */
    unsigned long *durable;     /* set on every live node */
    unsigned long *image;       /* the bits the nodes hold or are given */
    unsigned long *recent;      /* written since the last rotation */
    unsigned long *older;       /* ... in the rotation before */
    GHashTable *writers;        /* region -> writes in flight there */
    unsigned long *todo;        /* the resync pass's regions */
    uint64_t todo_regions;
    uint64_t resync_region;     /* being resynced, UINT64_MAX: none */
    CoQueue resync_wait;        /* writes into @resync_region wait here */
    CoQueue writers_done;       /* the resync waits for those in it */
    int64_t rotated_ns;
    bool resync_pending;        /* atomic: set bits the resync must copy */
    uint64_t marks;             /* atomic: bitmap writes that set bits */
    uint64_t clears;            /* atomic: bits cleared */
} StripeBitmap;

/*
 * The background resync (stripe-resync.c): all atomic.  @co is set by the
 * main loop when it starts the worker and cleared by the worker when it
 * ends.
 */
typedef struct StripeResync {
    Coroutine *co;              /* the worker while it runs */
    void *job;                  /* a stripe-resync block job, or NULL */
    Coroutine *parked;          /* the worker while the node is drained */
    bool paused;                /* drained: start no region */
    bool stop;                  /* close or inactivate: end */
    QemuCoSleep sleep;          /* the worker, waiting for a node to answer */
    uint64_t nodes;             /* failed nodes being brought back */
    uint64_t regions_total;     /* progress of this pass */
    uint64_t regions_done;
    uint64_t bytes;             /* written to copies, since open */
} StripeResync;

/*
 * BDRVStripeState: set at open and fixed while the node is open, except
 *   - geo.virtual_size: written under @resize_lock, read without a lock
 *     with qatomic_read_u64() (a stale value only sends a write through
 *     stripe_co_grow(), which looks again under the lock);
 *   - generation, header_virtual_size, stale[]: under @health_lock
 *     (resize, growth, failure marking, migration's reload of the
 *     headers; qemu-img check runs with no other user);
 *   - failed, failed_durable: written under @health_lock, read without a
 *     lock (qatomic_read): a request that saw a node live may still write
 *     to it after it was marked, which is harmless, and a write that
 *     skipped a failed node is acknowledged only once the marking is in
 *     the headers (stripe_co_mark_failed());
 *   - absent: set at open; a bit is cleared (atomically, main loop) when
 *     stripe-node-replace puts the real node in; read atomically.
 *     absent_nodes[]: set at open, freed only at close, so that a reader
 *     that saw a bit just before it was cleared still finds its entry;
 *   - health[]: atomic counters;
 *   - edges[], parked: stripe-node-replace (main loop, the image
 *     drained) swaps an index's edge; a request reads its edge once, and
 *     an edge is freed only at close (their counters are atomic); the
 *     parked list changes in the main loop only;
 *   - late_answers: atomic, see stripe_edge_answered();
 *   - bitmap, resync: see their structures;
 *   - node_timeout_ns, auto_resync: open and reopen commit, read
 *     atomically;
 *   - max_node_request: refresh_limits, main loop, drained;
 *   - cache, cache_opts: open, reopen commit and close, main loop, with the
 *     node drained, so that no request sees the cache change under it.
 */
/* A node that could not be opened, and its stand-in (stripe-absent.c). */
typedef struct StripeAbsentNode {
    char *name;                 /* its filename as given, or json:{...} */
    QDict *opts;                /* its options as given */
    Error *why;                 /* its open error, until assembly */
} StripeAbsentNode;

typedef struct BDRVStripeState {
    StripeGeometry geo;
    uint8_t uuid[16];
    uint64_t generation;
    /* the size in the headers: ahead of geo's while a resize runs */
    uint64_t header_virtual_size;
    CoMutex resize_lock;        /* around changes of size */
    CoMutex health_lock;        /* around failure marking, header writes */
    uint64_t failed;            /* bit per node index: marked failed */
    /* per node index, which node holds it (StripeHeader.incarnation) */
    uint32_t incarnation[STRIPE_MAX_NODES];
    uint64_t failed_durable;    /* ... and so in the live nodes' headers */
    StripeNodeHealth *health;   /* per node index */
    int64_t node_timeout_ns;    /* replicated images; 0: wait forever */
    bool auto_resync;           /* start a resync when writable */
    uint32_t node_count;
    BdrvChild **nodes;          /* indexed by node index (assembled order) */
    StripeNodeEdge **edges;     /* ... and their edges: edges[i]->child */
    QSLIST_HEAD(, StripeNodeEdge) parked;   /* replaced, owing answers */
    uint32_t parked_count;      /* edges ever parked: their child names */
    unsigned late_answers;      /* being counted off a parked edge */
    uint32_t *given_pos;        /* nodes[i] was the given_pos[i]-th node */
    bool *stale;                /* header older than s->generation */
    /* bit per node index: not opened, a stand-in instead; also failed */
    uint64_t absent;
    StripeAbsentNode **absent_nodes;    /* per node index, or NULL */
    uint64_t max_node_request;  /* bytes, <= every node's max_transfer */
    SCOptions cache_opts;       /* as given, kept while the cache is off */
    StripeCache *cache;         /* NULL: cache.direct=on, IO goes through */
    StripeBitmap bitmap;        /* replicated images with geo.bitmap_region */
    StripeResync resync;
} BDRVStripeState;

/* stripe.c: child_of_bds, with an rbd node's cache default (see there) */
extern BdrvChildClass stripe_node_class;

/* stripe-options.c */
extern QemuOptsList stripe_runtime_opts;
extern const char *const stripe_mutable_opts[];
bool stripe_parse_cache_options(QemuOpts *opts, SCOptions *o, Error **errp);
bool stripe_parse_node_timeout(QemuOpts *opts, int64_t *timeout_ns,
                               Error **errp);

/* stripe-absent.c */
BdrvChild *stripe_open_node(BlockDriverState *bs, QDict *options,
                            const char *key, const char *filename,
                            StripeAbsentNode **absent, Error **errp);
void stripe_absent_node_free(StripeAbsentNode *a);
void stripe_absent_free_given(StripeAbsentNode **absent, uint32_t count);
bool stripe_absent_is_twin(BdrvChild **given, StripeAbsentNode **absent,
                           uint32_t pos, Error **errp);
uint64_t stripe_absent_positions(StripeAbsentNode **absent, uint32_t count);
void stripe_absent_refuse(StripeAbsentNode **absent, uint32_t pos,
                          const char *why_not, Error **errp);
void stripe_absent_adopt(BlockDriverState *bs, StripeAbsentNode **absent);
void stripe_absent_forget(BDRVStripeState *s, uint32_t i);
void stripe_absent_free_all(BDRVStripeState *s);
const char *stripe_node_name(BDRVStripeState *s, uint32_t i);
const char *stripe_node_exact_filename(BDRVStripeState *s, uint32_t i);
QDict *stripe_node_open_options(BDRVStripeState *s, uint32_t i);

/* stripe-header.c */
int GRAPH_RDLOCK stripe_assemble_nodes(BlockDriverState *bs,
                                       BdrvChild **given, uint32_t count,
                                       StripeAbsentNode **absent,
                                       Error **errp);
int coroutine_fn GRAPH_RDLOCK
stripe_co_reload_headers(BlockDriverState *bs, Error **errp);
int coroutine_fn GRAPH_RDLOCK
stripe_co_write_header(BdrvChild *child, const StripeHeader *h,
                       Error **errp);
void stripe_header_for_node(BDRVStripeState *s, uint32_t index,
                            StripeHeader *h);
int coroutine_fn GRAPH_RDLOCK
stripe_co_write_live_headers(BlockDriverState *bs, uint64_t *unwritten,
                             Error **errp);
int coroutine_fn GRAPH_RDLOCK
stripe_co_write_all_headers(BlockDriverState *bs, uint64_t size,
                            Error **errp);
int coroutine_fn GRAPH_RDLOCK
stripe_co_check(BlockDriverState *bs, BdrvCheckResult *result,
                BdrvCheckMode fix);

/* stripe-resize.c */
int coroutine_fn GRAPH_RDLOCK
stripe_co_truncate(BlockDriverState *bs, int64_t offset, bool exact,
                   PreallocMode prealloc, BdrvRequestFlags flags,
                   Error **errp);
int coroutine_fn GRAPH_RDLOCK stripe_co_grow(BlockDriverState *bs,
                                             uint64_t end);
int coroutine_fn GRAPH_RDLOCK
stripe_co_fit_node(BlockDriverState *bs, uint32_t i, uint64_t size,
                   Error **errp);

/* stripe-create.c */
extern QemuOptsList stripe_create_opts;
int coroutine_fn GRAPH_UNLOCKED
stripe_co_create(BlockdevCreateOptions *options, Error **errp);
int coroutine_fn GRAPH_UNLOCKED
stripe_co_create_opts(BlockDriver *drv, const char *filename,
                      QemuOpts *opts, Error **errp);
void stripe_parse_filename(const char *filename, QDict *options,
                           Error **errp);

/* stripe-io.c */
uint32_t stripe_node_alignment(BDRVStripeState *s);
bool GRAPH_RDLOCK stripe_nodes_all(BDRVStripeState *s, const char *name);
uint64_t GRAPH_RDLOCK stripe_node_request_max(BDRVStripeState *s);

typedef enum StripeOp {
    STRIPE_OP_READ,
    STRIPE_OP_WRITE,
    STRIPE_OP_ZEROES,
    STRIPE_OP_DISCARD,
    STRIPE_OP_FLUSH,            /* a whole node: stripe_node_request() only */
    STRIPE_OP_BLOCK_STATUS,     /* stripe_co_node_status_timed() only */
} StripeOp;

/* A node's answer to a block status query. */
typedef struct StripeNodeStatus {
    int64_t pnum;
    int64_t map;
    BlockDriverState *file;
} StripeNodeStatus;

int coroutine_fn GRAPH_RDLOCK
stripe_node_request(BdrvChild *child, StripeOp op, int64_t node_offset,
                    int64_t bytes, QEMUIOVector *qiov, size_t qiov_offset,
                    BdrvRequestFlags flags);

int coroutine_fn GRAPH_RDLOCK
stripe_co_rw(BlockDriverState *bs, StripeOp op, int64_t offset,
             int64_t bytes, QEMUIOVector *qiov, size_t qiov_offset,
             BdrvRequestFlags flags);
int coroutine_fn GRAPH_RDLOCK stripe_co_flush_nodes(BlockDriverState *bs);
int coroutine_fn GRAPH_RDLOCK
stripe_co_each_node(BlockDriverState *bs, StripeOp op, int64_t node_offset,
                    int64_t bytes, QEMUIOVector *qiov,
                    BdrvRequestFlags flags);
uint64_t stripe_map_read(BDRVStripeState *s, uint64_t offset, uint32_t *node,
                         uint64_t *node_offset);
int coroutine_fn GRAPH_RDLOCK
stripe_co_write_other_copies(BlockDriverState *bs, int64_t offset,
                             int64_t bytes, QEMUIOVector *qiov,
                             void *scratch, uint64_t *written);

/* stripe-cache.c */
int GRAPH_RDLOCK stripe_cache_open(BlockDriverState *bs, const SCOptions *opts,
                                   int flags, Error **errp);
void stripe_cache_reconfigure(BlockDriverState *bs, const SCOptions *opts,
                              int flags);
void stripe_cache_close(BlockDriverState *bs);
int stripe_cache_writeback_all(BlockDriverState *bs);
int coroutine_fn GRAPH_RDLOCK
stripe_cache_co_writeback_all(BlockDriverState *bs);
int coroutine_fn GRAPH_RDLOCK
stripe_cache_co_preadv(BlockDriverState *bs, int64_t offset, int64_t bytes,
                       QEMUIOVector *qiov, size_t qiov_offset);
int coroutine_fn GRAPH_RDLOCK
stripe_cache_co_pwritev(BlockDriverState *bs, int64_t offset, int64_t bytes,
                        QEMUIOVector *qiov, size_t qiov_offset,
                        BdrvRequestFlags flags);
int coroutine_fn GRAPH_RDLOCK
stripe_cache_co_write_around(BlockDriverState *bs, StripeOp op,
                             int64_t offset, int64_t bytes,
                             QEMUIOVector *qiov, size_t qiov_offset,
                             BdrvRequestFlags flags);
int coroutine_fn GRAPH_RDLOCK stripe_cache_co_flush(BlockDriverState *bs);
void stripe_cache_drain_begin(BlockDriverState *bs);
void stripe_cache_drain_end(BlockDriverState *bs);
int stripe_cache_inactivate(BlockDriverState *bs);
int stripe_cache_activate(BlockDriverState *bs, Error **errp);

/* stripe-cache-jobs.c */
int64_t stripe_cache_now(void);
/* Jobs collected under the cache lock, started after it is dropped. */
typedef struct StripeJobBatch {
    unsigned n;
    bool force;
    SCJob jobs[STRIPE_CACHE_KICK_BATCH];
    bool writeback[STRIPE_CACHE_KICK_BATCH];
} StripeJobBatch;

void stripe_cache_lock(StripeCache *c) TSA_ACQUIRE(c->lock);
void stripe_cache_unlock(StripeCache *c) TSA_RELEASE(c->lock);
void stripe_cache_kick(BlockDriverState *bs, bool force);
void stripe_cache_collect_jobs(StripeCache *c, bool force, int64_t now,
                               StripeJobBatch *b) TSA_REQUIRES(c->lock);
void stripe_cache_start_jobs(BlockDriverState *bs, StripeJobBatch *b);
void stripe_cache_timer_attach(BlockDriverState *bs, AioContext *ctx);
void stripe_cache_timer_detach(BlockDriverState *bs);
void stripe_cache_timer_stop(StripeCache *c);
bool coroutine_fn stripe_cache_wait_progress(BlockDriverState *bs,
                                             StripeCache *c, bool kick)
    TSA_REQUIRES(c->lock);
void coroutine_fn stripe_cache_yield_for_staged(StripeCache *c)
    TSA_REQUIRES(c->lock);
void stripe_cache_completed(StripeCache *c, StripeJobBatch *b)
    TSA_REQUIRES(c->lock);
void coroutine_fn stripe_cache_wake(BlockDriverState *bs);
int coroutine_fn stripe_cache_wait_ticket(BlockDriverState *bs,
                                          StripeCache *c, SCFlush *ticket)
    TSA_REQUIRES(c->lock);

/* stripe-health.c */
static inline bool stripe_node_failed(BDRVStripeState *s, uint32_t node)
{
    return (qatomic_read(&s->failed) >> node) & 1;
}

/* Whether node @node could not be opened (a stand-in holds its place). */
static inline bool stripe_node_absent(BDRVStripeState *s, uint32_t node)
{
    return (qatomic_read(&s->absent) >> node) & 1;
}

/* The failed nodes a resync may bring back: all but the stand-ins. */
static inline uint64_t stripe_failed_reachable(BDRVStripeState *s)
{
    return qatomic_read(&s->failed) & ~qatomic_read(&s->absent);
}

int coroutine_fn GRAPH_RDLOCK
stripe_co_mark_failed(BlockDriverState *bs, uint32_t node, int err);
int coroutine_fn GRAPH_RDLOCK
stripe_co_commit_generation(BlockDriverState *bs, Error **errp);
int coroutine_fn GRAPH_RDLOCK
stripe_co_mark_live(BlockDriverState *bs, uint32_t node, Error **errp);
int coroutine_fn GRAPH_RDLOCK
stripe_co_edge_request(BlockDriverState *bs, uint32_t node,
                       StripeNodeEdge *edge, StripeOp op,
                       int64_t node_offset, int64_t bytes,
                       QEMUIOVector *qiov, size_t qiov_offset,
                       BdrvRequestFlags flags);
int coroutine_fn GRAPH_RDLOCK
stripe_co_edge_block_status(BlockDriverState *bs, uint32_t node,
                            StripeNodeEdge *edge, int64_t node_offset,
                            int64_t bytes, StripeNodeStatus *status);

/* stripe-bitmap.c */
int GRAPH_RDLOCK stripe_bitmap_open(BlockDriverState *bs, Error **errp);
void stripe_bitmap_close(BlockDriverState *bs);
void stripe_bitmap_free(BDRVStripeState *s);
void coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_clear_all(BlockDriverState *bs);
int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_start_write(BlockDriverState *bs, int64_t offset,
                             int64_t bytes);
void stripe_bitmap_end_write(BlockDriverState *bs, int64_t offset,
                             int64_t bytes);
unsigned long *stripe_bitmap_flush_begin(BlockDriverState *bs);
int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_flush_end(BlockDriverState *bs, unsigned long *clear);
int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_bring_back(BlockDriverState *bs, uint32_t node,
                            Error **errp);
int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_reload(BlockDriverState *bs, Error **errp);
void coroutine_fn stripe_bitmap_co_grow(BlockDriverState *bs, uint64_t size);
bool stripe_bitmap_copies_agree(BDRVStripeState *s, int64_t offset,
                                int64_t bytes);
uint64_t stripe_bitmap_dirty_regions(BDRVStripeState *s);
uint64_t stripe_bitmap_snapshot(BDRVStripeState *s);
int coroutine_fn GRAPH_RDLOCK stripe_bitmap_co_set_all(BlockDriverState *bs);
bool stripe_bitmap_next_dirty(BDRVStripeState *s, uint64_t *region);
void coroutine_fn stripe_bitmap_co_lock_region(BDRVStripeState *s,
                                               uint64_t region);
bool stripe_bitmap_unlock_region(BDRVStripeState *s);

/* stripe-resync.c */
static inline bool stripe_node_resyncing(BDRVStripeState *s, uint32_t node)
{
    return (qatomic_read(&s->resync.nodes) >> node) & 1;
}

static inline StripeNodeState stripe_node_state(BDRVStripeState *s,
                                                uint32_t node)
{
    if (stripe_node_resyncing(s, node)) {
        return STRIPE_NODE_STATE_RESYNCING;
    }
    return stripe_node_failed(s, node) ? STRIPE_NODE_STATE_FAILED
                                       : STRIPE_NODE_STATE_LIVE;
}

int coroutine_fn GRAPH_RDLOCK
stripe_co_rebuild_node(BlockDriverState *bs, uint32_t node, uint64_t *units,
                       Error **errp);
bool stripe_resync_at_open(BlockDriverState *bs);
bool stripe_resync_wanted(BlockDriverState *bs);
void stripe_resync_start(BlockDriverState *bs);
void stripe_resync_stop(BlockDriverState *bs);
void stripe_resync_pause(BlockDriverState *bs);
void stripe_resync_resume(BlockDriverState *bs);
int coroutine_fn GRAPH_RDLOCK
stripe_co_resync_offline(BlockDriverState *bs, Error **errp);
uint64_t stripe_resync_begin(BDRVStripeState *s, uint64_t nodes);
/*
 * What a walk over the regions does between two of them, for the context
 * that runs it (pause point, cancellation, rate limit, progress): called
 * before each region and after the last, with the graph lock dropped,
 * with the bytes of the region just copied (0 the first time).  False
 * ends the walk.
 */
typedef bool coroutine_fn StripeResyncBetween(void *opaque, uint64_t copied);
int coroutine_fn GRAPH_RDLOCK
stripe_co_resync_regions(BlockDriverState *bs, void *buf,
                         StripeResyncBetween *between, void *opaque,
                         Error **errp);
int coroutine_fn GRAPH_RDLOCK
stripe_co_resync_end(BlockDriverState *bs, Error **errp);

/* stripe-deadline.c */
void coroutine_fn GRAPH_RDLOCK
stripe_co_node_requests_timed(BlockDriverState *bs, uint32_t count,
                              const uint32_t *nodes,
                              const int64_t *node_offsets, StripeOp op,
                              int64_t bytes, QEMUIOVector *qiov,
                              size_t qiov_offset, BdrvRequestFlags flags,
                              int *rets);
int coroutine_fn GRAPH_RDLOCK
stripe_co_node_request_timed(BlockDriverState *bs, uint32_t node,
                             StripeOp op, int64_t node_offset, int64_t bytes,
                             QEMUIOVector *qiov, size_t qiov_offset,
                             BdrvRequestFlags flags);
int coroutine_fn GRAPH_RDLOCK
stripe_co_node_status_timed(BlockDriverState *bs, uint32_t node,
                            int64_t node_offset, int64_t bytes,
                            StripeNodeStatus *status);
void stripe_wait_outstanding(BlockDriverState *bs);
uint64_t stripe_node_outstanding(BDRVStripeState *s, uint32_t node);

/* stripe-edge.c */
int stripe_swap_node(BlockDriverState *bs, uint32_t index,
                     BlockDriverState *new_bs, Error **errp);
void stripe_edge_answered(BlockDriverState *bs, StripeNodeEdge *edge);

/* stripe-stats.c */
BlockStatsSpecific *stripe_get_specific_stats(BlockDriverState *bs);

#endif /* BLOCK_STRIPE_H */
