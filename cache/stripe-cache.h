/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the writeback cache and readahead core of qemu-stripe.
 *
 * This is a sans-IO library: it never performs IO, never sleeps and never
 * reads a clock.  It decides what to read, write back, evict and prefetch;
 * the caller (block/stripe-cache.c in QEMU, or a test) performs the IO and
 * reports completions.  That keeps every decision deterministic and lets the
 * same code run under a randomized model test, a fuzzer and QEMU.
 *
 * Only glib and the C library are used; no QEMU header is included.
 *
 * Threading: an SCCache is not thread-safe.  The caller serialises all calls
 * on one cache (QEMU holds a mutex around them, never across a yield).
 *
 * Time: every call that needs the time takes @now_ns, a monotonic clock in
 * nanoseconds chosen by the caller.
 *
 * Buffers: data lives in cache-owned buffers.  Jobs handed to the caller
 * (writeback and fetch) carry an iovec pointing into those buffers; it stays
 * valid until the job is completed with sc_writeback_done() or
 * sc_fetch_done(), whatever happens to the cached range meanwhile.
 */
#ifndef STRIPE_CACHE_H
#define STRIPE_CACHE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * Options
 */

typedef struct SCOptions {
    uint64_t size;                /* cache-size: bytes of memory, all states */
    uint64_t max_dirty;           /* cache-max-dirty: 0 means write-through */
    uint64_t target_dirty;        /* cache-target-dirty: writeback starts */
    uint64_t max_dirty_age_ns;    /* cache-max-dirty-age */
    bool writethrough_until_flush;
    /*
     * cache-eager-writeback: a segment that writes made wholly dirty goes
     * to its node at once (sc-writeback.c, policy 2)
     */
    bool eager_writeback;
    uint32_t readahead_trigger_requests;
    uint64_t readahead_max_bytes;           /* 0 disables readahead */
    uint64_t readahead_disable_after_bytes; /* 0 means never disable */
    /*
     * cache-bypass-bytes: requests at least this large go around the
     * cache (writes in full, reads for what is not cached); 0: none
     */
    uint64_t bypass_bytes;
    /*
     * cache-node-jobs: in-flight writeback and prefetch jobs per node;
     * 0 keeps the geometry's max_writeback/fetch_per_node
     */
    uint32_t node_jobs;
} SCOptions;

/* Defaults compatible with librbd's (see docs/cache-options.md). */
void sc_options_init_defaults(SCOptions *opts);

/*
 * Check @opts for consistency (target-dirty <= max-dirty <= size, ...).
 * Returns NULL when valid, otherwise a newly allocated message that names
 * the QEMU option (e.g. "cache-max-dirty") and the offending value(s).
 */
char *sc_options_check(const SCOptions *opts);

/*
 * The largest disk: QEMU's disks are below 2^63 bytes.  Requests end at or
 * below it, which keeps page and unit rounding clear of uint64_t overflow.
 */
#define SC_MAX_DISK_SIZE ((uint64_t)INT64_MAX)

/*
 * Geometry of the striped disk the cache sits in front of.
 * Stripe unit k lives on node k % node_count.
 */
typedef struct SCGeometry {
    /* at most SC_MAX_DISK_SIZE; nothing at or past it is read ahead */
    uint64_t disk_size;
    uint64_t stripe_unit;       /* power of two; jobs never cross one */
    uint32_t node_count;        /* >= 1 */
    /* node request alignment: a power of two <= stripe_unit */
    uint32_t align;
    uint32_t max_writeback_per_node;  /* in-flight writeback jobs, >= 1 */
    uint32_t max_fetch_per_node;      /* in-flight prefetch jobs, >= 1 */
} SCGeometry;

typedef struct SCCache SCCache;

/*
 * Create a cache.  Returns NULL and sets *@errmsg (newly allocated, naming
 * the option or geometry field) when @opts or @geo is invalid.
 */
SCCache *sc_cache_new(const SCOptions *opts, const SCGeometry *geo,
                      char **errmsg);

/*
 * Free the cache and all cached data.  No job may be in flight.  Dirty data
 * is lost: callers flush first (or check sc_cache_drop()).
 */
void sc_cache_free(SCCache *c);

/*
 * Apply new options (QEMU reopen).  Validates like sc_options_check() and
 * leaves the cache untouched on error.  Shrinking the size evicts clean
 * data; dirty data above a lowered max-dirty is written back, never dropped.
 */
bool sc_cache_reconfigure(SCCache *c, const SCOptions *opts, char **errmsg);

/*
 * The disk was resized.  Cached data at or beyond a new, smaller size is
 * dropped (the guest shrank the disk); no job may be in flight beyond it.
 * @disk_size is at most SC_MAX_DISK_SIZE.
 */
void sc_cache_set_disk_size(SCCache *c, uint64_t disk_size);

/*
 * Drop everything cached (migration destination: another host may have
 * changed the nodes).  Returns 0 on success.  Returns -EBUSY and drops
 * nothing if any data is dirty or any job or write-around is in flight:
 * dirty data is never dropped by this call.
 */
int sc_cache_drop(SCCache *c);

/*
 * Reads
 */

typedef enum SCPieceKind {
    /* copied (sc_read), or pinned in the hits (sc_read_pinned) */
    SC_PIECE_HIT,
    SC_PIECE_FETCH,  /* caller must run fetch job @job, then read again */
    /*
     * another fetch fills it, or a write-around replaces it: wait for any
     * sc_fetch_done() or sc_around_end(), then read it again
     */
    SC_PIECE_WAIT,
    /*
     * the caller reads it from the nodes into its buffer: no memory now,
     * or a read of at least cache-bypass-bytes (adjacent ones joined)
     */
    SC_PIECE_DIRECT,
} SCPieceKind;

typedef struct SCJob {
    uint64_t id;                /* handle for the *_done() call */
    uint64_t offset;            /* disk offset */
    uint64_t len;
    uint32_t node;              /* (offset / stripe_unit) % node_count */
    /* writeback only: a FUA write waits for these bytes: write with FUA */
    bool fua;
    struct iovec *iov;          /* cache-owned, valid until *_done() */
    int iovcnt;
} SCJob;

typedef struct SCPiece {
    SCPieceKind kind;
    uint64_t offset;
    uint64_t len;
    SCJob job;                  /* SC_PIECE_FETCH only */
} SCPiece;

/* Flags for sc_read() */
enum {
    /*
     * A retry of pieces of an earlier request: not observed by the
     * readahead detector and not counted again in the hit/miss stats.
     */
    SC_READ_RETRY = 1 << 0,
    /*
     * Fetch nothing: absent bytes come back as SC_PIECE_DIRECT (for a
     * reader whose fetched data keeps being evicted before it reads it).
     * Cached bytes are still copied and bytes in transition still wait.
     */
    SC_READ_DIRECT = 1 << 1,
};

/*
 * Cached bytes a read found, to be copied out without the caller's lock:
 * sc_read_pinned() pins the pages that hold them (a reader count on each:
 * a page with readers never changes, writes and fetches copy it first,
 * and it is not reused before they are gone), sc_hits_copy() copies them,
 * sc_hits_done() unpins them.  The caller owns the storage (usually on its
 * stack); the fields are the core's.
 */
#define SC_HITS_INLINE 4

typedef struct SCHitCopy {
    const uint8_t *src;
    uint64_t len;
    uint64_t dst;               /* bytes from the start of the read */
    void *page;
} SCHitCopy;

typedef struct SCHits {
    uint32_t n;
    uint32_t cap;
    SCHitCopy *v;               /* inline_v or allocated */
    SCHitCopy inline_v[SC_HITS_INLINE];
} SCHits;

/*
 * Like sc_read(), but the cached bytes are not copied: they are pinned and
 * described in @hits (initialised by this call).  Copy them with
 * sc_hits_copy(), without any lock, then give them back with
 * sc_hits_done(), also without the lock.  That keeps the bulk of a cache
 * hit, the copy, out of the lock that the other threads of a multiqueue
 * disk wait for, and the read takes the lock once.  The pieces go into
 * the caller's @pieces (a GArray of SCPiece, emptied first), which it may
 * reuse for every read: a read that is all hits then allocates nothing.
 *
 * Returns false, having done nothing (@hits is empty), while a staged
 * write copies into a page of the range (sc_write_staged()): call again
 * in a moment, as for a write refused with SCWriteResult.staged.
 */
bool sc_read_pinned(SCCache *c, uint64_t offset, uint64_t len,
                    unsigned flags, int64_t now_ns, SCHits *hits,
                    GArray *pieces);

/* Copy the hits into @iov, whose byte @iov_offset is the read's start. */
void sc_hits_copy(const SCHits *hits, const struct iovec *iov, int iovcnt,
                  size_t iov_offset);

/*
 * Unpin the hits' pages once copied: lock-free, from any thread.  Every
 * sc_read_pinned() needs it (it frees what the hits allocated).
 */
void sc_hits_done(SCHits *hits);

/*
 * Read [@offset, @offset + @len) into @iov (starting @iov_offset bytes into
 * it): sc_read_pinned(), sc_hits_copy() and sc_hits_done() in one.
 * Every byte the cache holds in any state (clean, dirty, under writeback)
 * is copied at once; the newest data always wins.  Returns the
 * pieces the request was cut into, in disk order, as a GArray of SCPiece
 * (free with g_array_unref()).  Fetch jobs are returned with their buffer
 * already reserved; the caller reads the nodes into job.iov, completes them
 * with sc_fetch_done() and calls sc_read() again with SC_READ_RETRY for the
 * FETCH and WAIT pieces.  A FETCH job may be larger than its piece (it is
 * expanded to the node alignment).
 *
 * Non-retry reads feed the readahead detector, which may queue prefetch jobs
 * (see sc_prefetch_next()).
 *
 * Returns NULL, having done nothing, while a staged write copies into a
 * page of the range: see sc_read_pinned().
 */
GArray *sc_read(SCCache *c, uint64_t offset, uint64_t len,
                const struct iovec *iov, int iovcnt, size_t iov_offset,
                unsigned flags, int64_t now_ns);

/*
 * Next queued prefetch job that may be issued now (bounded per node), or
 * false.  Prefetch jobs are aligned to, and never cross, the stripe unit.
 */
bool sc_prefetch_next(SCCache *c, SCJob *job);

/*
 * A fetch job (demand or prefetch) completed.  ret is 0 or -errno.  On
 * success the bytes still waiting for this job become clean cached data;
 * bytes written, discarded or dropped meanwhile are not touched (the newer
 * data wins).  On failure nothing is cached.
 */
void sc_fetch_done(SCCache *c, uint64_t job_id, int ret, int64_t now_ns);

/*
 * Writes
 */

typedef struct SCFlush SCFlush;
typedef struct SCAround SCAround;

typedef enum SCWriteStatus {
    /* Absorbed as dirty data: complete the guest write after delay_ns. */
    SC_WRITE_DONE,
    /*
     * Absorbed, but write-through applies (max-dirty 0, FUA, or no flush
     * seen yet with writethrough-until-flush): complete the guest write
     * with the result of the flush ticket @wait (see sc_flush_status()),
     * then release it.
     */
    SC_WRITE_THROUGH,
    /*
     * Not absorbed: dirty data is at max-dirty, memory is full, or a
     * write-around of an overlapping range is on its way to the nodes.
     * Wait for a writeback or write-around completion and call sc_write()
     * again.
     */
    SC_WRITE_BLOCKED,
    /*
     * Not absorbed: the request is at least cache-bypass-bytes, can never
     * fit (larger than max-dirty or the cache), or nothing can free
     * memory for it now.  The cached copy of
     * the range was dropped and a write-around @around begun: the caller
     * writes the range to the nodes itself (see sc_around_begin()).
     */
    SC_WRITE_BYPASS,
} SCWriteStatus;

typedef struct SCWriteResult {
    SCWriteStatus status;
    int64_t delay_ns;   /* SC_WRITE_DONE: pacing delay, 0 below target */
    SCFlush *wait;      /* SC_WRITE_THROUGH: ticket to wait on */
    SCAround *around;   /* SC_WRITE_BYPASS: the write-around begun */
    /*
     * SC_WRITE_BLOCKED by a staged write (see sc_write_staged()), which
     * another thread is copying: retry in a moment, do not wait for a job.
     */
    bool staged;
} SCWriteResult;

/* Flags for sc_write() */
enum {
    SC_WRITE_FUA = 1 << 0,      /* write through this request */
};

/*
 * Write [@offset, @offset + @len) from @iov (at @iov_offset).  The data is
 * copied into the cache.  Data under writeback may be overwritten at any
 * time; the core never lets two jobs for the same bytes be in flight at
 * once, so the newest data always reaches the node last.
 */
SCWriteResult sc_write(SCCache *c, uint64_t offset, uint64_t len,
                       const struct iovec *iov, int iovcnt,
                       size_t iov_offset, unsigned flags, int64_t now_ns);

/*
 * A staged write: the pages a write copies into outside the caller's lock
 * (see sc_write_staged()).  The caller owns the storage (usually on its
 * stack); the fields are the core's.
 */
#define SC_STAGE_INLINE 4

typedef struct SCStageCopy {
    uint8_t *dst;
    uint64_t len;
    void *page;
} SCStageCopy;

typedef struct SCStage {
    uint32_t n;
    uint32_t cap;
    SCStageCopy *v;             /* inline_v or allocated */
    SCStageCopy inline_v[SC_STAGE_INLINE];
} SCStage;

/*
 * sc_write() that may leave the copy to the caller, outside its lock.  A
 * write that only rewrites whole pages of dirty data that no job sends is
 * staged: its pages are described in @stage (initialised by this call)
 * and the result is SC_WRITE_DONE, but no byte is copied yet.  The caller
 * then, without its lock, copies with sc_staged_fill() and publishes with
 * sc_staged_publish(); if that returns true (a writeback job, a write or
 * a write-around was refused for these pages meanwhile), it collects the
 * jobs now due and wakes its waiters under the lock.  Until published the
 * pages are not written back and other writes to them are
 * SC_WRITE_BLOCKED: a staged write must be published promptly, without
 * waiting for anything in between.  An empty @stage (sc_stage_empty())
 * means the write was handled as by sc_write().
 */
SCWriteResult sc_write_staged(SCCache *c, uint64_t offset, uint64_t len,
                              const struct iovec *iov, int iovcnt,
                              size_t iov_offset, unsigned flags,
                              int64_t now_ns, SCStage *stage);
void sc_stage_init(SCStage *stage);
void sc_staged_fill(const SCStage *stage, const struct iovec *iov,
                    int iovcnt, size_t iov_offset);
/*
 * No lock needed; @stage is empty afterwards.  Returns whether somebody
 * was refused for these pages and waits.
 */
bool sc_staged_publish(SCCache *c, SCStage *stage);

static inline bool sc_stage_empty(const SCStage *stage)
{
    return stage->n == 0;
}

/*
 * Write-around: discard, write-zeroes and writes that bypass the cache.
 *
 * The caller's protocol:
 *   0. If a staged write copies into the range, sc_around_begin() returns
 *      NULL: call it again in a moment (only callers of sc_write_staged()
 *      see this).
 *   1. sc_around_begin() drops the cached range in every state (the guest
 *      replaces it) without copying data and cancels pending fetches.
 *   2. Wait until sc_around_ready(): no older writeback job overlapping
 *      the range is in flight any more, so none can land after it.
 *   3. Send the request to the nodes.
 *   4. sc_around_end() with its result.
 *
 * Until the end, the range is in transition: reads of it wait
 * (SC_PIECE_WAIT) and fetch nothing, so no reader sees node data older
 * than what was dropped; writes to it are SC_WRITE_BLOCKED; a flush ticket
 * that wanted the dropped dirty data stays pending, because that data is
 * superseded only once the replacement is on the nodes.  A failed
 * write-around fails those tickets with its error (the guest's own
 * request reports it too, so it is never kept for a later flush).
 */
SCAround *sc_around_begin(SCCache *c, uint64_t offset, uint64_t len);
bool sc_around_ready(SCCache *c, SCAround *a);
void sc_around_end(SCCache *c, SCAround *a, int ret);

/*
 * Block status
 */

typedef enum SCStatus {
    /* The nodes hold what a read returns: their answer is the truth. */
    SC_STATUS_NODES,
    /*
     * The cache holds newer data (dirty, under writeback) or the range is
     * in transition (being fetched, written around, or written back after
     * the cache dropped it): report it as data, never as a hole or zeroes.
     */
    SC_STATUS_DATA,
} SCStatus;

/*
 * Status of the byte at @offset; *@pnum gets the length of the run from
 * @offset (at most @len, at least 1 when @len is) in which every byte has
 * the same status.  O(log n + k) for the k extents and jobs in the run.
 */
SCStatus sc_block_status(SCCache *c, uint64_t offset, uint64_t len,
                         uint64_t *pnum);

/*
 * Writeback
 */

/*
 * Next writeback job to issue now, or false.  Policy, in order: data that
 * a flush or write-through waits for; segments a write left wholly dirty,
 * in the order they filled; dirty data above target-dirty, oldest first;
 * data older than max-dirty-age.  Adjacent dirty data is
 * coalesced into one job aligned to and not crossing the stripe unit;
 * jobs per node are bounded by max_writeback_per_node; bytes of an
 * in-flight job are never in a second job.
 */
bool sc_writeback_next(SCCache *c, int64_t now_ns, SCJob *job);

/*
 * A writeback job completed with ret (0 or -errno).  On success its bytes
 * become clean unless overwritten meanwhile.  On failure they stay dirty
 * (retried later) and the error is reported to the flushes waiting for
 * them, or, if none, kept for the next flush.
 */
void sc_writeback_done(SCCache *c, uint64_t job_id, int ret,
                       int64_t now_ns);

/*
 * Failed writeback jobs so far, and the errno of the last one in
 * *@last_error (when not NULL).  A writer blocked at max-dirty compares it
 * before and after a wait: a failure meanwhile means its write cannot be
 * absorbed until the node recovers, and it fails with that error (QEMU's
 * werror= policy then applies) rather than wait for ever.
 */
uint64_t sc_writeback_failures(SCCache *c, int *last_error);

/*
 * Earliest time at which sc_writeback_next() may return a job that it does
 * not return now (age-based writeback, retry backoff), or INT64_MAX.
 */
int64_t sc_next_deadline(SCCache *c, int64_t now_ns);

/*
 * Flush
 */

/*
 * Start a flush of everything dirty now.  A flush completes once every
 * byte dirty at its start has been written back successfully at least once
 * since (newer data in its place is fine); writes during the flush do not
 * delay it.  @from_guest: a guest flush ends writethrough-until-flush
 * and reports a writeback error that no ticket took (sticky).  Internal
 * flushes (resize, reopen, close, migration) leave that error for the
 * guest's next flush: they fail only for failures of the writeback they
 * wait for.
 */
SCFlush *sc_flush_begin(SCCache *c, bool from_guest);

/* 1 while pending, 0 when done, -errno if a writeback for it failed. */
int sc_flush_status(SCCache *c, SCFlush *f);

/* Forget a flush ticket, pending or not. */
void sc_flush_release(SCCache *c, SCFlush *f);

/*
 * Statistics
 */

typedef struct SCStats {
    /* reads */
    uint64_t read_requests;
    uint64_t read_hit_requests;       /* served fully from the cache */
    uint64_t read_miss_requests;      /* needed at least one fetch */
    uint64_t read_hit_bytes;
    uint64_t read_miss_bytes;
    /* readahead */
    uint64_t readahead_issued_bytes;
    uint64_t readahead_used_bytes;    /* read by the guest */
    uint64_t readahead_wasted_bytes;  /* evicted or dropped unread */
    uint64_t readahead_streams;       /* currently tracked streams */
    /* writes */
    uint64_t write_requests;
    uint64_t write_bytes;
    uint64_t write_through_requests;
    uint64_t write_bypass_requests;
    uint64_t read_bypass_requests;    /* read around: cache-bypass-bytes */
    uint64_t write_blocked_count;     /* SC_WRITE_BLOCKED answers */
    uint64_t write_staged_requests;   /* copied outside the lock */
    uint64_t write_throttle_ns;       /* sum of pacing delays handed out */
    uint64_t writeback_requests;
    uint64_t writeback_bytes;
    uint64_t writeback_errors;
    uint64_t flushes;
    uint64_t flush_errors;
    /* now */
    uint64_t dirty_bytes;             /* includes bytes under writeback */
    uint64_t writeback_inflight_bytes;
    uint64_t clean_bytes;
    uint64_t fetching_bytes;          /* reserved for in-flight fetches */
    uint64_t memory_bytes;            /* all data buffers, <= size */
    uint64_t metadata_bytes;          /* extent/job bookkeeping */
    uint64_t extents;
} SCStats;

void sc_cache_get_stats(SCCache *c, SCStats *stats);

#endif /* STRIPE_CACHE_H */
