/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": guest requests through the writeback cache and
 * readahead, and the cache's lifecycle (open, reopen, close, migration).
 *
 * The cache core (cache/stripe-cache.h) is sans-IO: it copies hits, absorbs
 * writes and hands out jobs; the node IO happens here and in
 * stripe-cache-jobs.c.  Semantics kept from QEMU:
 *
 *  - a completed flush means every byte written before it is on the nodes
 *    and the nodes were flushed; with cache=unsafe the data still goes to
 *    the nodes (QEMU's "flush to the OS", block/io.c), only the nodes'
 *    own flush is skipped, so a crash of QEMU loses nothing flushed;
 *  - block status reports what the cache holds newer than the nodes as
 *    data (never as a hole or zeroes from the nodes), so that NBD's sparse
 *    reads, mirror and backup copy it;
 *  - FUA writes and cache=writethrough (QEMU sets FUA on every write)
 *    complete only once written through, with FUA on the nodes;
 *  - a writeback error reaches the guest as the error of the next flush
 *    (or of a write blocked at max-dirty behind it), and the data stays
 *    dirty and is retried, never dropped;
 *  - close, reopen to no cache and migration (inactivate) write everything
 *    back first and report failure.
 */

#include "qemu/osdep.h"
#include "block/aio_task.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qapi/error.h"
#include "qemu/coroutine.h"
#include "qemu/error-report.h"
#include "qemu/iov.h"
#include "qemu/main-loop.h"
#include "qemu/memalign.h"
#include "stripe.h"
#include "trace.h"

/*
 * cache=unsafe never forwards the guest's flushes, so waiting for one to
 * end write-through would leave the cache write-through forever.
 */
static void stripe_cache_effective_opts(const SCOptions *opts, int flags,
                                        SCOptions *o)
{
    *o = *opts;
    if (flags & BDRV_O_NO_FLUSH) {
        o->writethrough_until_flush = false;
    }
}

int GRAPH_RDLOCK stripe_cache_open(BlockDriverState *bs, const SCOptions *opts,
                                   int flags, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    bool rbd = stripe_nodes_all(s, "rbd");
    SCOptions o;
    SCGeometry geo = {
        .disk_size = s->geo.virtual_size,
        .stripe_unit = s->geo.stripe_unit,
        .node_count = s->node_count,
        .align = stripe_node_alignment(s),
    };
    g_autofree char *msg = NULL;
    StripeCache *c;
    SCCache *core;

    geo.max_writeback_per_node = rbd ? STRIPE_CACHE_JOBS_PER_RBD_NODE
                                     : STRIPE_CACHE_WB_PER_NODE;
    geo.max_fetch_per_node = rbd ? STRIPE_CACHE_JOBS_PER_RBD_NODE
                                 : STRIPE_CACHE_FETCH_PER_NODE;
    stripe_cache_effective_opts(opts, flags, &o);
    core = sc_cache_new(&o, &geo, &msg);
    if (!core) {
        error_setg(errp, "stripe: %s", msg);
        return -EINVAL;
    }
    c = g_new0(StripeCache, 1);
    c->core = core;
    c->bs = bs;
    /* a cache line per node: see StripeNodeDone */
    c->done = qemu_memalign(__alignof__(StripeNodeDone),
                            s->node_count * sizeof(StripeNodeDone));
    memset(c->done, 0, s->node_count * sizeof(StripeNodeDone));
    qemu_mutex_init(&c->lock.mutex);
    qemu_co_queue_init(&c->progress);
    c->read_pieces = g_array_new(false, true, sizeof(SCPiece));
    s->cache = c;
    stripe_cache_timer_attach(bs, bdrv_get_aio_context(bs));
    trace_stripe_cache_open(bs, o.size, o.max_dirty, o.readahead_max_bytes,
                            o.node_jobs ?: geo.max_writeback_per_node);
    return 0;
}

/* New options on reopen; they were checked in reopen_prepare. */
void stripe_cache_reconfigure(BlockDriverState *bs, const SCOptions *opts,
                              int flags)
{
    BDRVStripeState *s = bs->opaque;
    g_autofree char *msg = NULL;
    SCOptions o;

    stripe_cache_effective_opts(opts, flags, &o);
    stripe_cache_lock(s->cache);
    if (!sc_cache_reconfigure(s->cache->core, &o, &msg)) {
        warn_report("stripe: cache options not changed: %s", msg);
    }
    stripe_cache_unlock(s->cache);
}

/* The cache must be clean and idle (written back, drained). */
static void stripe_cache_free(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;

    stripe_cache_timer_detach(bs);
    sc_cache_free(c->core);
    assert(!c->done_nodes && !c->settle_scheduled);
    qemu_vfree(c->done);
    g_array_unref(c->read_pieces);
    qemu_mutex_destroy(&c->lock.mutex);
    g_free(c);
    s->cache = NULL;
}

/*
 * Write back everything dirty, even with cache=unsafe, and flush the
 * nodes: for close, inactivation and turning the cache off.
 */
int coroutine_fn GRAPH_RDLOCK stripe_cache_co_writeback_all(
    BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;
    SCFlush *ticket;
    int ret;

    stripe_cache_lock(c);
    ticket = sc_flush_begin(c->core, false);
    ret = stripe_cache_wait_ticket(bs, c, ticket);
    stripe_cache_unlock(c);
    if (ret == 0) {
        ret = stripe_co_flush_nodes(bs);
    }
    return ret;
}

typedef struct StripeWritebackAll {
    BlockDriverState *bs;
    int ret;
    bool done;
} StripeWritebackAll;

static void coroutine_fn stripe_writeback_all_entry(void *opaque)
{
    StripeWritebackAll *w = opaque;

    bdrv_graph_co_rdlock();
    w->ret = stripe_cache_co_writeback_all(w->bs);
    bdrv_graph_co_rdunlock();
    w->done = true;
    aio_wait_kick();
}

/* stripe_cache_co_writeback_all() from the main loop, polling. */
int stripe_cache_writeback_all(BlockDriverState *bs)
{
    StripeWritebackAll w = { .bs = bs };
    Coroutine *co;

    GLOBAL_STATE_CODE();
    co = qemu_coroutine_create(stripe_writeback_all_entry, &w);
    bdrv_inc_in_flight(bs);
    aio_co_enter(bdrv_get_aio_context(bs), co);
    BDRV_POLL_WHILE(bs, !w.done);
    bdrv_dec_in_flight(bs);
    return w.ret;
}

void stripe_cache_close(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    SCStats st;
    int ret, tries;

    /*
     * bdrv_close() flushed already, but cache=unsafe does not write back
     * on a flush.  Never drop dirty data silently: retry, then report.
     */
    for (tries = 0; tries < STRIPE_CACHE_CLOSE_TRIES; tries++) {
        ret = stripe_cache_writeback_all(bs);
        if (ret == 0) {
            break;
        }
    }
    /* jobs of other nodes may still end meanwhile (see below) */
    stripe_cache_lock(s->cache);
    sc_cache_get_stats(s->cache->core, &st);
    stripe_cache_unlock(s->cache);
    if (st.dirty_bytes) {
        error_report("stripe: %" PRIu64 " bytes of cached writes could not "
                     "be written to the nodes at close: %s", st.dirty_bytes,
                     strerror(-ret));
    } else if (ret < 0) {
        error_report("stripe: flushing the nodes at close failed: %s",
                     strerror(-ret));
    }
    /*
     * A failed write-back ends the wait above while jobs for other nodes
     * may still run, and their completion takes the cache's lock: start
     * no more jobs and let those end (a job's last act is to leave the
     * node's in-flight count) before the cache goes away.
     */
    stripe_cache_lock(s->cache);
    s->cache->inactive = true;
    stripe_cache_unlock(s->cache);
    BDRV_POLL_WHILE(bs, qatomic_read(&bs->in_flight) > 0);
    stripe_cache_free(bs);
}

/*
 * Reads
 */

typedef struct StripeFetchTask {
    AioTask task;
    BlockDriverState *bs;
    SCPiece piece;
    QEMUIOVector *guest_qiov;   /* DIRECT pieces only */
    size_t guest_offset;
} StripeFetchTask;

/*
 * This function can count as GRAPH_RDLOCK because stripe_cache_co_preadv()
 * holds the graph lock until all tasks of its pool have finished.
 */
static int coroutine_fn GRAPH_RDLOCK stripe_fetch_task_entry(AioTask *task)
{
    StripeFetchTask *t = container_of(task, StripeFetchTask, task);
    BDRVStripeState *s = t->bs->opaque;
    StripeCache *c = s->cache;
    StripeJobBatch batch;
    QEMUIOVector qiov;
    int ret;

    if (t->piece.kind == SC_PIECE_DIRECT) {
        return stripe_co_rw(t->bs, STRIPE_OP_READ, t->piece.offset,
                            t->piece.len, t->guest_qiov, t->guest_offset, 0);
    }
    qemu_iovec_init_external(&qiov, t->piece.job.iov, t->piece.job.iovcnt);
    ret = stripe_co_rw(t->bs, STRIPE_OP_READ, t->piece.job.offset,
                       t->piece.job.len, &qiov, 0, 0);
    stripe_cache_lock(c);
    sc_fetch_done(c->core, t->piece.job.id, ret, stripe_cache_now());
    stripe_cache_completed(c, &batch);
    stripe_cache_unlock(c);
    stripe_cache_start_jobs(t->bs, &batch);
    return ret;
}

/* Pieces of @pieces that need a node request of their own. */
static guint issued_count(GArray *pieces)
{
    guint i, n = 0;

    for (i = 0; i < pieces->len; i++) {
        n += g_array_index(pieces, SCPiece, i).kind != SC_PIECE_WAIT;
    }
    return n;
}

/*
 * Copy the cached bytes that this round's reads of @todo pinned into the
 * guest's buffer, with the lock dropped (other threads' requests go on
 * meanwhile), and give the pins back, which needs no lock either.
 * Byte @base + X of @qiov is disk offset X.
 */
static void stripe_cache_copy_hits(SCHits *hits, const SCPiece *todo,
                                   guint n, QEMUIOVector *qiov, int64_t base)
{
    guint i;

    for (i = 0; i < n; i++) {
        sc_hits_copy(&hits[i], qiov->iov, qiov->niov, base + todo[i].offset);
        sc_hits_done(&hits[i]);
    }
}

int coroutine_fn GRAPH_RDLOCK
stripe_cache_co_preadv(BlockDriverState *bs, int64_t offset, int64_t bytes,
                       QEMUIOVector *qiov, size_t qiov_offset)
{
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;
    /*
     * What this round reads from the cache: the request, then the pieces
     * it has to read again (fetched, or waited for), in @again
     */
    SCPiece request = { .offset = offset, .len = bytes };
    const SCPiece *todo = &request;
    guint todo_len = 1;
    g_autoptr(GArray) again = NULL;
    SCHits stack_hits[2], *hits;
    g_autofree SCHits *heap_hits = NULL;
    unsigned flags = 0, round;
    bool kick = true;
    int ret = 0;

    for (round = 0; todo_len; round++) {
        /* made only if a piece is not a hit: most reads are all hits */
        g_autoptr(GArray) next = NULL;
        AioTaskPool *pool = NULL;
        StripeJobBatch batch;
        bool need_wait = false, issued = false;
        int64_t now;
        guint i, j;

        /*
         * Starved by evictions (what it fetched was evicted before it
         * could read it, again and again): fetch no more, read what is
         * not cached straight from the nodes.  Cached data still wins and
         * data in transition is still waited for.
         */
        if (round >= STRIPE_CACHE_MAX_READ_ROUNDS) {
            flags |= SC_READ_DIRECT;
        }
        hits = todo_len <= G_N_ELEMENTS(stack_hits) ? stack_hits :
               (heap_hits = g_renew(SCHits, heap_hits, todo_len));
        stripe_cache_lock(c);
        now = stripe_cache_now();
        for (i = 0; i < todo_len; i++) {
            GArray *pieces = c->read_pieces;

            /* not while a staged write copies into the range */
            while (!sc_read_pinned(c->core, todo[i].offset, todo[i].len,
                                   flags, now, &hits[i], pieces)) {
                stripe_cache_yield_for_staged(c);
                now = stripe_cache_now();
            }
            for (j = 0; j < pieces->len; j++) {
                SCPiece *p = &g_array_index(pieces, SCPiece, j);

                if (p->kind != SC_PIECE_HIT) {
                    if (!next) {
                        next = g_array_new(false, false, sizeof(SCPiece));
                    }
                    g_array_append_val(next, *p);
                }
                /* Counted so that readers waiting for it get woken. */
                c->in_flight += p->kind == SC_PIECE_FETCH;
            }
        }
        flags |= SC_READ_RETRY;

        /* Pieces being fetched by others: wait without losing a wakeup. */
        for (i = 0; next && i < next->len; i++) {
            SCPieceKind k = g_array_index(next, SCPiece, i).kind;

            need_wait |= k == SC_PIECE_WAIT;
            issued |= k == SC_PIECE_FETCH || k == SC_PIECE_DIRECT;
        }
        if (need_wait && !issued) {
            kick = stripe_cache_wait_progress(bs, c, kick);
            now = stripe_cache_now();
        }
        stripe_cache_collect_jobs(c, false, now, &batch);
        stripe_cache_unlock(c);
        stripe_cache_copy_hits(hits, todo, todo_len, qiov,
                               qiov_offset - offset);
        stripe_cache_start_jobs(bs, &batch);

        todo_len = 0;
        if (!next) {
            break;
        }
        if (!again) {
            again = g_array_new(false, false, sizeof(SCPiece));
        }
        g_array_set_size(again, 0);
        for (i = 0; i < next->len; i++) {
            SCPiece *p = &g_array_index(next, SCPiece, i);
            StripeFetchTask *t;

            if (p->kind == SC_PIECE_WAIT) {
                g_array_append_val(again, *p);
                continue;
            }
            if (p->kind == SC_PIECE_FETCH) {
                /* Read again from the cache once filled. */
                g_array_append_val(again, *p);
            }
            t = g_new(StripeFetchTask, 1);
            *t = (StripeFetchTask) {
                .task.func = stripe_fetch_task_entry,
                .bs = bs,
                .piece = *p,
                .guest_qiov = qiov,
                .guest_offset = qiov_offset + (p->offset - offset),
            };
            /*
             * A single node request (the common random read) runs right
             * here: a task pool would cost a coroutine per request.
             */
            if (issued_count(next) == 1) {
                ret = stripe_fetch_task_entry(&t->task);
                g_free(t);
                if (ret < 0) {
                    return ret;
                }
                continue;
            }
            if (!pool) {
                pool = aio_task_pool_new(STRIPE_MAX_PARALLEL);
            }
            aio_task_pool_start_task(pool, &t->task);
        }
        if (pool) {
            aio_task_pool_wait_all(pool);
            ret = aio_task_pool_status(pool);
            aio_task_pool_free(pool);
            if (ret < 0) {
                return ret;
            }
        }
        todo = (const SCPiece *)again->data;
        todo_len = again->len;
    }
    return 0;
}

/*
 * Writes
 */

/*
 * Send write-around @a (begun under c->lock, which the caller holds and
 * this drops): wait until no older writeback of the range is in flight,
 * write the nodes, then tell the core, which wakes the readers and
 * writers held off the range and the flushes that wanted the dirty data
 * it replaced.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_cache_co_send_around(BlockDriverState *bs, StripeCache *c,
                            SCAround *a, StripeOp op, int64_t offset,
                            int64_t bytes, QEMUIOVector *qiov,
                            size_t qiov_offset, BdrvRequestFlags flags)
    TSA_RELEASE(c->lock)
{
    StripeJobBatch batch;
    bool kick = true;
    int ret;

    c->in_flight++;
    while (!sc_around_ready(c->core, a)) {
        kick = stripe_cache_wait_progress(bs, c, kick);
    }
    stripe_cache_unlock(c);

    ret = stripe_co_rw(bs, op, offset, bytes, qiov, qiov_offset, flags);
    trace_stripe_cache_write_around(bs, op, offset, bytes, ret);

    stripe_cache_lock(c);
    sc_around_end(c->core, a, ret);
    stripe_cache_completed(c, &batch);
    stripe_cache_unlock(c);
    stripe_cache_start_jobs(bs, &batch);
    return ret;
}

/*
 * Write around the cache: discard, write-zeroes, zeroing for a resize.
 * See sc_around_begin() for what the core does meanwhile.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_cache_co_write_around(BlockDriverState *bs, StripeOp op,
                             int64_t offset, int64_t bytes,
                             QEMUIOVector *qiov, size_t qiov_offset,
                             BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;
    SCAround *a;

    stripe_cache_lock(c);
    /* not while a staged write copies into the range */
    while (!(a = sc_around_begin(c->core, offset, bytes))) {
        stripe_cache_yield_for_staged(c);
    }
    return stripe_cache_co_send_around(bs, c, a, op, offset, bytes, qiov,
                                       qiov_offset, flags);
}

/*
 * Copy a staged write (see sc_write_staged()) into the cache, with the
 * lock dropped, and publish it.  If a writeback job, a write or a
 * write-around was refused for these pages meanwhile, wake them now.
 */
static void coroutine_fn stripe_cache_copy_staged(BlockDriverState *bs,
                                                  StripeCache *c,
                                                  SCStage *stage,
                                                  QEMUIOVector *qiov,
                                                  size_t qiov_offset)
{
    if (sc_stage_empty(stage)) {
        return;
    }
    sc_staged_fill(stage, qiov->iov, qiov->niov, qiov_offset);
    if (sc_staged_publish(c->core, stage)) {
        stripe_cache_wake(bs);
    }
}

int coroutine_fn GRAPH_RDLOCK
stripe_cache_co_pwritev(BlockDriverState *bs, int64_t offset, int64_t bytes,
                        QEMUIOVector *qiov, size_t qiov_offset,
                        BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;
    unsigned wflags = (flags & BDRV_REQ_FUA) ? SC_WRITE_FUA : 0;
    SCStage stage;
    uint64_t failed = 0;
    bool blocked = false, kick = true;
    SCWriteResult r;
    int ret;

    stripe_cache_lock(c);
    for (;;) {
        uint64_t now_failed;
        int err;

        r = sc_write_staged(c->core, offset, bytes, qiov->iov, qiov->niov,
                            qiov_offset, wflags, stripe_cache_now(),
                            &stage);
        if (r.status != SC_WRITE_BLOCKED) {
            break;
        }
        if (r.staged) {
            stripe_cache_yield_for_staged(c);
            continue;
        }
        /*
         * At max-dirty: wait until writeback makes room.  If writeback
         * fails meanwhile, room may never come (a node refuses writes):
         * fail now, so that werror= applies to this write instead of
         * leaving the guest blocked until some later flush.  The cache
         * took nothing of it; the dirty data stays and is retried.
         */
        now_failed = sc_writeback_failures(c->core, &err);
        if (blocked && now_failed != failed) {
            stripe_cache_unlock(c);
            trace_stripe_cache_write_failed(bs, offset, bytes, err);
            return err;
        }
        blocked = true;
        failed = now_failed;
        kick = stripe_cache_wait_progress(bs, c, kick);
    }

    switch (r.status) {
    case SC_WRITE_DONE: {
        StripeJobBatch batch;

        if (r.delay_ns > 0) {
            c->throttled_writes++;
            c->throttle_ns += r.delay_ns;
        }
        stripe_cache_collect_jobs(c, false, stripe_cache_now(), &batch);
        stripe_cache_unlock(c);
        stripe_cache_copy_staged(bs, c, &stage, qiov, qiov_offset);
        stripe_cache_start_jobs(bs, &batch);
        if (r.delay_ns > 0) {
            /* Pace the writer smoothly instead of stopping it at max. */
            trace_stripe_cache_throttle(bs, r.delay_ns);
            qemu_co_sleep_ns(QEMU_CLOCK_REALTIME, r.delay_ns);
        }
        return 0;
    }
    case SC_WRITE_THROUGH:
        /* its first wait starts the writeback that the ticket waits for */
        ret = stripe_cache_wait_ticket(bs, c, r.wait);
        stripe_cache_unlock(c);
        return ret;
    case SC_WRITE_BYPASS:
        return stripe_cache_co_send_around(bs, c, r.around, STRIPE_OP_WRITE,
                                           offset, bytes, qiov, qiov_offset,
                                           flags);
    default:
        g_assert_not_reached();
    }
}

/*
 * Flush
 */

int coroutine_fn GRAPH_RDLOCK stripe_cache_co_flush(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;
    int64_t start = stripe_cache_now(), took;
    SCFlush *ticket;
    int ret;

    stripe_cache_lock(c);
    ticket = sc_flush_begin(c->core, true);
    /* its first wait starts the writeback that the ticket waits for */
    ret = stripe_cache_wait_ticket(bs, c, ticket);
    stripe_cache_unlock(c);
    /*
     * cache=unsafe writes the cache back all the same (a QEMU crash must
     * not lose it), but does not make the nodes flush their own caches.
     */
    if (ret == 0 && !(bs->open_flags & BDRV_O_NO_FLUSH)) {
        ret = stripe_co_flush_nodes(bs);
    }

    took = stripe_cache_now() - start;
    stripe_cache_lock(c);
    c->flush_count++;
    c->flush_errors += ret < 0;
    c->flush_ns_total += took;
    c->flush_ns_max = MAX(c->flush_ns_max, took);
    stripe_cache_unlock(c);
    trace_stripe_cache_flush(bs, took, ret);
    return ret;
}

/*
 * Drain, AioContext and migration
 */

void stripe_cache_drain_begin(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    /*
     * Background work stops; requests in flight still get the writeback
     * and fetches they wait for (see stripe-cache-jobs.c).
     */
    stripe_cache_lock(s->cache);
    s->cache->quiesced = true;
    stripe_cache_unlock(s->cache);
    stripe_cache_timer_stop(s->cache);
}

static void stripe_cache_resume_bh(void *opaque)
{
    BlockDriverState *bs = opaque;

    stripe_cache_kick(bs, false);
    bdrv_dec_in_flight(bs);
}

void stripe_cache_drain_end(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    stripe_cache_lock(s->cache);
    s->cache->quiesced = false;
    stripe_cache_unlock(s->cache);
    /* No IO from a drain callback: resume background work from a BH. */
    bdrv_inc_in_flight(bs);
    aio_bh_schedule_oneshot(bdrv_get_aio_context(bs), stripe_cache_resume_bh,
                            bs);
}

int stripe_cache_inactivate(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    int ret;

    /* Migration hands the nodes over: nothing may stay behind here. */
    ret = stripe_cache_writeback_all(bs);
    if (ret < 0) {
        return ret;
    }
    stripe_cache_lock(s->cache);
    s->cache->inactive = true;
    stripe_cache_unlock(s->cache);
    stripe_cache_timer_stop(s->cache);
    return 0;
}

int stripe_cache_activate(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;
    int ret;

    /* The nodes may have been written by another host meanwhile. */
    stripe_cache_lock(c);
    ret = sc_cache_drop(c->core);
    if (ret == 0) {
        c->inactive = false;
    }
    stripe_cache_unlock(c);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "stripe: cannot drop the cache: it "
                         "holds data not yet written to the nodes");
    }
    return ret;
}
