/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": running the cache core's jobs.
 *
 * The core (cache/) decides which dirty data to write back and what to
 * prefetch; here each such job becomes a coroutine doing one node request.
 * Every job is counted in the node's in-flight requests, so a drain waits
 * for it, and every completion wakes the requests waiting for progress
 * (blocked writers, flushes, reads waiting for a prefetch).
 *
 * All calls into the core happen under StripeCache.lock, which is never
 * held across a yield (qemu_co_queue_wait() drops it while waiting).
 *
 * Drain: QEMU waits in a drained section until no request of this node is
 * in flight.  Requests that wait for the cache (blocked writers, flushes,
 * write-arounds, readers of data being fetched) are in flight, so the work
 * they wait for always starts, drained or not.  Only background work
 * (age-based writeback, prefetch, retries nobody waits for) stops, and the
 * timer that drives it stays off until the section ends.  Nothing waits
 * by polling: a waiter sleeps on the progress queue, or, when nothing is
 * in flight and nothing may start before a retry deadline, until that
 * deadline.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qemu/coroutine.h"
#include "qemu/iov.h"
#include "qemu/main-loop.h"
#include "qemu/processor.h"
#include "stripe.h"
#include "trace.h"

typedef struct StripeJob {
    BlockDriverState *bs;
    SCJob job;
    bool writeback;             /* else a prefetch */
    int ret;                    /* of the node request, once ended */
    QSLIST_ENTRY(StripeJob) done_next;  /* StripeNodeDone */
} StripeJob;

/* Ended jobs settled in one hold of the lock, finished after it. */
typedef struct StripeSettled {
    QSLIST_HEAD(, StripeJob) jobs;
    StripeJobBatch batch;
} StripeSettled;

/* done_nodes has a bit per node */
QEMU_BUILD_BUG_ON(STRIPE_MAX_NODES > 64);

/*
 * Push @elm on the lock-free list @head.  Not QSLIST_INSERT_HEAD_ATOMIC():
 * it reads the head with a plain load, a data race with the
 * QSLIST_MOVE_ATOMIC() exchange of whoever empties the list (TSan).
 */
#define STRIPE_QSLIST_PUSH(head, elm, field) do {                        \
        typeof((head)->slh_first) first_;                               \
        do {                                                            \
            first_ = qatomic_read(&(head)->slh_first);                  \
            (elm)->field.sle_next = first_;                             \
        } while (qatomic_cmpxchg(&(head)->slh_first, first_, (elm)) !=  \
                 first_);                                               \
    } while (0)

static void stripe_cache_ended(StripeCache *c, unsigned n, int64_t now,
                               StripeJobBatch *b) TSA_REQUIRES(c->lock);

int64_t stripe_cache_now(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
}

/*
 * Settling.  A background job whose node request has ended is not settled
 * with the core by its own coroutine under the lock, as a reader's fetch
 * or a write-around is: under multiqueue load the request threads hold
 * the lock most of the time, and the node's completion would wait for it.
 * The job goes on its node's list of ended jobs instead, without the lock,
 * and the next coroutine to drop the lock settles every ended job of
 * every node in that hold (stripe_cache_unlock()).  If the lock is free,
 * the job's coroutine takes it and settles.  If it is held, the holder
 * settles the job when it drops the lock, unless it looked before the job
 * was pushed or is not a coroutine: for those cases a settling coroutine
 * is scheduled in the job's thread.  Only coroutines settle: settling
 * wakes the requests waiting for progress, and outside a coroutine
 * qemu_co_queue_restart_all() would enter a waiter of this thread at once,
 * with the lock held, which the waiter then takes again.  A job stays in
 * flight for QEMU until settled, and the settling coroutine is in flight
 * until it has run, so that a drain waits for both.
 */

/* Tell the core of the ended jobs; called with c->lock held. */
static void stripe_cache_settle(StripeCache *c, StripeSettled *st)
    TSA_REQUIRES(c->lock)
{
    uint64_t nodes = qatomic_xchg(&c->done_nodes, 0);
    int64_t now = stripe_cache_now();
    QSLIST_HEAD(, StripeJob) list;
    StripeJob *j, *next;
    unsigned n = 0;

    QSLIST_INIT(&st->jobs);
    while (nodes) {
        unsigned node = ctz64(nodes);

        nodes &= nodes - 1;
        QSLIST_MOVE_ATOMIC(&list, &c->done[node].jobs);
        QSLIST_FOREACH_SAFE(j, &list, done_next, next) {
            if (j->writeback) {
                sc_writeback_done(c->core, j->job.id, j->ret, now);
            } else {
                sc_fetch_done(c->core, j->job.id, j->ret, now);
            }
            n++;
            QSLIST_INSERT_HEAD(&st->jobs, j, done_next);
        }
    }
    stripe_cache_ended(c, n, now, &st->batch);
}

/*
 * Start what the settled jobs made startable, then let them go: the last
 * bdrv_dec_in_flight() may end a drain and let the cache be freed, so
 * nothing of it is touched after.
 */
static void stripe_cache_settled(BlockDriverState *bs, StripeSettled *st)
{
    StripeJob *j, *next;

    stripe_cache_start_jobs(bs, &st->batch);
    QSLIST_FOREACH_SAFE(j, &st->jobs, done_next, next) {
        g_free(j);
        bdrv_dec_in_flight(bs);
    }
}

static void coroutine_fn stripe_cache_settle_co(void *opaque)
{
    BlockDriverState *bs = opaque;
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;

    /* before looking: a job pushed after this schedules another */
    qatomic_xchg(&c->settle_scheduled, false);
    if (qatomic_read(&c->done_nodes)) {
        stripe_cache_lock(c);
        stripe_cache_unlock(c);
    }
    bdrv_dec_in_flight(bs);
}

/* A job's node request ended: push it, and settle it or see it settled. */
static void coroutine_fn stripe_job_ended(StripeCache *c, StripeJob *j)
    TSA_NO_TSA
{
    uint64_t bit = 1ULL << j->job.node;
    BlockDriverState *bs = j->bs;

    STRIPE_QSLIST_PUSH(&c->done[j->job.node].jobs, j, done_next);
    /* after the push: a settler that cleared the bit finds it set again */
    if (!(qatomic_read(&c->done_nodes) & bit)) {
        qatomic_fetch_or(&c->done_nodes, bit);
    }

    if (qemu_mutex_trylock(&c->lock.mutex) == 0) {
        stripe_cache_unlock(c);
    } else if (!qatomic_xchg(&c->settle_scheduled, true)) {
        bdrv_inc_in_flight(bs);
        aio_co_schedule(qemu_get_current_aio_context(),
                        qemu_coroutine_create(stripe_cache_settle_co, bs));
    }
}

static void coroutine_fn stripe_job_co(void *opaque)
{
    StripeJob *j = opaque;
    BlockDriverState *bs = j->bs;
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;
    QEMUIOVector qiov;
    int ret;

    qemu_iovec_init_external(&qiov, j->job.iov, j->job.iovcnt);
    /*
     * The job outlives whatever request started it, so it takes the graph
     * lock itself.  Cache buffers are not registered guest memory: no
     * BDRV_REQ_REGISTERED_BUF.
     */
    bdrv_graph_co_rdlock();
    ret = stripe_co_rw(bs, j->writeback ? STRIPE_OP_WRITE : STRIPE_OP_READ,
                       j->job.offset, j->job.len, &qiov, 0,
                       j->writeback && j->job.fua ? BDRV_REQ_FUA : 0);
    bdrv_graph_co_rdunlock();

    trace_stripe_cache_job_done(bs, j->writeback, j->job.id, j->job.offset,
                                j->job.len, ret);
    j->ret = ret;
    stripe_job_ended(c, j);
}

static void stripe_job_start(BlockDriverState *bs, const SCJob *job,
                             bool writeback)
{
    StripeJob *j = g_new(StripeJob, 1);
    Coroutine *co;

    *j = (StripeJob) { .bs = bs, .job = *job, .writeback = writeback };
    trace_stripe_cache_job_start(bs, writeback, job->id, job->offset,
                                 job->len, job->node);
    bdrv_inc_in_flight(bs);
    co = qemu_coroutine_create(stripe_job_co, j);
    aio_co_enter(bdrv_get_aio_context(bs), co);
}

/* Take the next job of either kind, counting it in flight. */
static bool stripe_next_job(StripeCache *c, bool force, int64_t now,
                            SCJob *job, bool *writeback)
    TSA_REQUIRES(c->lock)
{
    bool got = false;

    if (c->inactive || (c->quiesced && !force)) {
        return false;
    }
    if (sc_writeback_next(c->core, now, job)) {
        *writeback = true;
        got = true;
    } else if (!c->quiesced && sc_prefetch_next(c->core, job)) {
        *writeback = false;
        got = true;
    }
    if (got) {
        c->in_flight++;
    }
    return got;
}

/*
 * Arm the timer for the next background deadline.  Called with c->lock
 * held.  Not while drained or inactive: background work is stopped then,
 * and a deadline that is already due would fire the timer in a loop.
 */
static void stripe_cache_timer_arm(StripeCache *c, int64_t now)
    TSA_REQUIRES(c->lock)
{
    int64_t deadline;

    if (!c->timer || c->quiesced || c->inactive) {
        return;
    }
    deadline = sc_next_deadline(c->core, now);
    /* Only move the timer when the next deadline moves. */
    if (deadline != INT64_MAX && deadline != c->timer_deadline) {
        c->timer_deadline = deadline;
        timer_mod(c->timer, deadline);
    }
}

void stripe_cache_lock(StripeCache *c) TSA_NO_TSA
{
    int i;

    for (i = 0; i < STRIPE_CACHE_LOCK_SPINS; i++) {
        if (qemu_mutex_trylock(&c->lock.mutex) == 0) {
            break;
        }
        cpu_relax();
    }
    if (i == STRIPE_CACHE_LOCK_SPINS) {
        qemu_mutex_lock(&c->lock.mutex);
    }
}

/*
 * Drop the lock; a coroutine settles the jobs that ended meanwhile first
 * (see Settling).
 */
void stripe_cache_unlock(StripeCache *c) TSA_NO_TSA
{
    BlockDriverState *bs = c->bs;
    StripeSettled st;

    if (!qatomic_read(&c->done_nodes) || !qemu_in_coroutine()) {
        qemu_mutex_unlock(&c->lock.mutex);
        return;
    }
    stripe_cache_settle(c, &st);
    qemu_mutex_unlock(&c->lock.mutex);
    stripe_cache_settled(bs, &st);
}

/*
 * Take from the core the jobs it allows now, at most a batch, and arm the
 * timer for what is due later.  Called with c->lock held; the caller
 * starts them with stripe_cache_start_jobs() once it has dropped the lock
 * (a job may run until its first yield right away).  A request collects
 * them in the same hold of the lock as its own work: taking the lock once
 * more per request for this was most of the contention between iothreads.
 * @force: also while drained, for the requests that wait for the jobs
 * (they are in flight, and the drain waits for them).
 */
void stripe_cache_collect_jobs(StripeCache *c, bool force, int64_t now,
                               StripeJobBatch *b)
{
    b->force = force;
    for (b->n = 0; b->n < STRIPE_CACHE_KICK_BATCH &&
         stripe_next_job(c, force, now, &b->jobs[b->n],
                         &b->writeback[b->n]); b->n++) {
        /* collected */
    }
    if (b->n < STRIPE_CACHE_KICK_BATCH) {
        stripe_cache_timer_arm(c, now);
    }
}

/* Start the jobs of @b; a full batch may have left more: kick for them. */
void stripe_cache_start_jobs(BlockDriverState *bs, StripeJobBatch *b)
{
    for (unsigned i = 0; i < b->n; i++) {
        stripe_job_start(bs, &b->jobs[i], b->writeback[i]);
    }
    if (b->n == STRIPE_CACHE_KICK_BATCH) {
        stripe_cache_kick(bs, b->force);
    }
}

/* Start every job the core allows now (see stripe_cache_collect_jobs). */
void stripe_cache_kick(BlockDriverState *bs, bool force)
{
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;
    StripeJobBatch batch;

    if (!c) {
        return;
    }
    stripe_cache_lock(c);
    stripe_cache_collect_jobs(c, force, stripe_cache_now(), &batch);
    stripe_cache_unlock(c);
    stripe_cache_start_jobs(bs, &batch);
}

/* Age-based writeback and retries after errors. */
static void stripe_cache_timer_cb(void *opaque)
{
    BlockDriverState *bs = opaque;
    BDRVStripeState *s = bs->opaque;

    stripe_cache_lock(s->cache);
    s->cache->timer_deadline = INT64_MAX;
    stripe_cache_unlock(s->cache);
    stripe_cache_kick(bs, false);
}

void stripe_cache_timer_attach(BlockDriverState *bs, AioContext *ctx)
{
    BDRVStripeState *s = bs->opaque;

    s->cache->timer = aio_timer_new(ctx, QEMU_CLOCK_REALTIME, SCALE_NS,
                                    stripe_cache_timer_cb, bs);
    s->cache->timer_deadline = INT64_MAX;
}

void stripe_cache_timer_detach(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    if (s->cache->timer) {
        timer_free(s->cache->timer);
        s->cache->timer = NULL;
    }
}

/* Stop the timer: drained, inactive or closing. */
void stripe_cache_timer_stop(StripeCache *c)
{
    stripe_cache_lock(c);
    if (c->timer) {
        timer_del(c->timer);
    }
    c->timer_deadline = INT64_MAX;
    stripe_cache_unlock(c);
}

/*
 * A job or write-around has ended and the core has its result (called
 * with c->lock held): wake the waiters and collect what may start now.
 * Collected with force when requests wait: they are in flight, so a drain
 * waits for them, and they do not kick by themselves after each wakeup
 * (stripe_cache_wait_progress()).
 */
void stripe_cache_completed(StripeCache *c, StripeJobBatch *b)
{
    stripe_cache_ended(c, 1, stripe_cache_now(), b);
}

/*
 * Something other than a job let waiters go on (a staged write was
 * published): wake them and start what became startable.
 */
void coroutine_fn stripe_cache_wake(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    StripeCache *c = s->cache;
    StripeJobBatch batch;

    stripe_cache_lock(c);
    c->wakeups++;
    stripe_cache_ended(c, 0, stripe_cache_now(), &batch);
    stripe_cache_unlock(c);
    stripe_cache_start_jobs(bs, &batch);
}

/* @n jobs or write-arounds ended (see stripe_cache_completed()). */
static void stripe_cache_ended(StripeCache *c, unsigned n, int64_t now,
                               StripeJobBatch *b)
{
    bool waiters = !qemu_co_queue_empty(&c->progress);

    c->in_flight -= n;
    qemu_co_queue_restart_all(&c->progress);
    stripe_cache_collect_jobs(c, waiters, now, b);
}

/*
 * Let a staged write that this request was refused for be published: it
 * is being copied in another thread, a matter of microseconds, and its
 * publisher wakes only those who wait for progress, which a request
 * refused with no job in flight might not do for long.  Called and
 * returns with c->lock held.
 */
void coroutine_fn stripe_cache_yield_for_staged(StripeCache *c)
{
    stripe_cache_unlock(c);
    qemu_co_sleep_ns(QEMU_CLOCK_REALTIME, STRIPE_CACHE_STAGED_WAIT_NS);
    stripe_cache_lock(c);
}

/*
 * Wait for progress: some job or write-around completes, or the next
 * deadline passes.  Called with c->lock held, by a request in flight that
 * waits for the cache; returns with it held.  With @kick, first start
 * whatever may start (drained or not: the drain waits for this request;
 * and what is in flight, a write-around say, may not be what this request
 * needs): a request's first wait kicks, since its own call into the core
 * may have made work due.  After a wakeup by a completion there is no
 * need: the completion collected what it made startable
 * (stripe_cache_completed()), and a kick by each of the woken waiters
 * would cost time quadratic in their number.  If nothing is in flight and
 * nothing can start before a deadline (every node with dirty data is
 * backing off after an error), sleep until it.  Returns whether the next
 * wait must kick: after such a sleep, only time has changed.
 */
bool coroutine_fn stripe_cache_wait_progress(BlockDriverState *bs,
                                             StripeCache *c, bool kick)
{
    int64_t now, wait;

    unsigned wakeups = c->wakeups;

    /* nothing in flight: no completion will collect for us */
    if (kick || !c->in_flight) {
        stripe_cache_unlock(c);
        stripe_cache_kick(bs, true);
        stripe_cache_lock(c);
        /* a staged write published meanwhile: look again */
        if (c->wakeups != wakeups) {
            return false;
        }
    }
    if (c->in_flight) {
        qemu_co_queue_wait(&c->progress, &c->lock.mutex);
        return false;
    }
    now = stripe_cache_now();
    wait = sc_next_deadline(c->core, now);
    wait = wait == INT64_MAX ? STRIPE_CACHE_IDLE_WAIT_NS
                             : MIN(wait - now, STRIPE_CACHE_IDLE_WAIT_NS);
    wait = MAX(wait, STRIPE_CACHE_MIN_WAIT_NS);
    trace_stripe_cache_wait_deadline(bs, wait);
    stripe_cache_unlock(c);
    qemu_co_sleep_ns(QEMU_CLOCK_REALTIME, wait);
    stripe_cache_lock(c);
    return true;
}

/*
 * Wait until @ticket is done: 0, or the -errno of a writeback it waited
 * for.  Called with c->lock held; returns with it held.
 */
int coroutine_fn stripe_cache_wait_ticket(BlockDriverState *bs,
                                          StripeCache *c, SCFlush *ticket)
{
    bool kick = true;
    int ret;

    while ((ret = sc_flush_status(c->core, ticket)) == 1) {
        kick = stripe_cache_wait_progress(bs, c, kick);
    }
    sc_flush_release(c->core, ticket);
    return ret;
}
