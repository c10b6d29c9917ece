/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": resyncing the copies of a replicated image from
 * its write-intent bitmap (stripe-bitmap.c).
 *
 * The set bits are the regions whose copies may differ: after a crash,
 * those that had writes in flight; while a node was failed, every region
 * written meanwhile.  A pass copies each such region from the copy that
 * reads use (the first live one) to the other copies, on the live nodes
 * and on the failed nodes being brought back; then those nodes are marked
 * live.  Only the set bits are copied, not the whole node: after an
 * outage, what was written during it.  The copies on live nodes are
 * compared first and written only where they differ (a crash), so an
 * outage's resync writes to the returning node alone.
 *
 * A failed node is brought back from the moment the pass starts: writes go
 * to it (stripe_co_rw()), reads do not.  A region is copied a chunk at a
 * time, each with the region's writes held off and those in flight
 * waited for (stripe_bitmap_co_lock_region()), so that a write and the
 * copy never cross; a write that skipped the node before the pass
 * started set its region's bit first, and the pass finds it.
 *
 * The pass runs in the background once a writable image is open (a
 * coroutine in the node's AioContext, paused while the node is drained,
 * stopped at close and inactivation), inline for qemu-img check -r, or
 * as a block job started from QMP (stripe-job.c); the three share one
 * walk over the regions, stripe_co_resync_regions().  A background pass
 * that leaves a node failed (it fails again, say a timeout on a busy
 * target) is tried again once the node answers, so a node found failed
 * at open comes back without the operator.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/memalign.h"
#include "stripe.h"
#include "trace.h"

/* Copy region @r to the other copies.  @buf holds STRIPE_RESYNC_BUF. */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_resync_region(BlockDriverState *bs, uint64_t r, void *buf)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t region = s->geo.bitmap_region;
    uint64_t size = qatomic_read_u64(&s->geo.virtual_size);
    uint64_t offset = r * region, len, done, n, written = 0;
    QEMUIOVector qiov;
    int ret = 0;

    if (offset >= size) {
        return 0;
    }
    len = MIN(region, size - offset);
    for (done = 0; done < len && ret >= 0; done += n) {
        n = MIN(STRIPE_RESYNC_CHUNK, len - done);
        qemu_iovec_init_buf(&qiov, buf, n);
        /*
         * The region's writes are held off for one chunk at a time: a
         * guest write waits for a chunk's copy, not the whole region's
         * (up to 1 GiB).  A write between two chunks goes to every copy
         * of its range, the nodes being brought back included, and a
         * chunk copied later copies what it wrote.
         */
        stripe_bitmap_co_lock_region(s, r);
        ret = stripe_co_rw(bs, STRIPE_OP_READ, offset + done, n, &qiov, 0, 0);
        if (ret >= 0) {
            char *scratch = (char *)buf + STRIPE_RESYNC_CHUNK;

            ret = stripe_co_write_other_copies(bs, offset + done, n, &qiov,
                                               scratch, &written);
        }
        if (stripe_bitmap_unlock_region(s)) {
            /*
             * Let the writes that waited start before the next chunk
             * holds them off again: they run once this coroutine yields.
             */
            aio_co_schedule(qemu_get_current_aio_context(),
                            qemu_coroutine_self());
            qemu_coroutine_yield();
        }
    }
    qatomic_add(&s->resync.bytes, written);
    trace_stripe_resync_region(bs, r, written, ret);
    return ret;
}

/*
 * After a pass: the nodes being brought back hold every region; each gets
 * the bitmap and is marked live.  A node that failed again during the
 * pass left @resync.nodes and stays failed.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_resync_finish(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t nodes = qatomic_read(&s->resync.nodes);
    uint32_t i;
    int ret;

    for (i = 0; i < s->node_count; i++) {
        if (!((nodes >> i) & 1)) {
            continue;
        }
        ret = bdrv_co_flush(s->nodes[i]->bs);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot flush node index "
                             "%u (%s)", i, stripe_node_name(s, i));
            return ret;
        }
        ret = stripe_bitmap_co_bring_back(bs, i, errp);
        if (ret < 0) {
            return ret;
        }
        qatomic_and(&s->resync.nodes, ~(UINT64_C(1) << i));
        info_report("stripe: node index %u (%s) is live again",
                    i, stripe_node_name(s, i));
    }
    return 0;
}

/*
 * Start a pass: bring back the failed nodes among @nodes, and take the
 * regions set now.  A region set later was written to every copy, the
 * nodes being brought back included: it needs no copy.  A node that could
 * not be opened has a stand-in, which is never brought back.
 */
uint64_t stripe_resync_begin(BDRVStripeState *s, uint64_t nodes)
{
    uint64_t failed = stripe_failed_reachable(s) & nodes;

    qatomic_set(&s->resync.nodes, failed);
    qatomic_set(&s->resync.regions_done, 0);
    qatomic_set(&s->resync.regions_total, stripe_bitmap_snapshot(s));
    return failed;
}

/*
 * The end of a pass that copied every region: when no node is failed
 * (none failed meanwhile, every one was brought back), the copies agree
 * and the bitmap may clear.  Otherwise the bits stay, for the next pass.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_resync_end(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    int ret = stripe_co_resync_finish(bs, errp);

    if (ret == 0 && !qatomic_read(&s->failed)) {
        qatomic_set(&s->bitmap.resync_pending, false);
    }
    return ret;
}

/* @between with the graph lock dropped, which its caller holds. */
static bool coroutine_fn GRAPH_RDLOCK
stripe_resync_co_between(StripeResyncBetween *between, void *opaque,
                         uint64_t copied)
{
    bool go_on;

    bdrv_graph_co_rdunlock();
    go_on = between(opaque, copied);
    bdrv_graph_co_rdlock();
    return go_on;
}

/*
 * Copy every region set now, in order: the one loop of the three ways a
 * resync runs (the background pass, the QMP job, qemu-img check -r),
 * which differ only in what they do between two regions (@between, or
 * nothing when NULL: the offline check, where nothing else runs).
 * Returns -ECANCELED, with @errp untouched, when @between ends it.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_resync_regions(BlockDriverState *bs, void *buf,
                         StripeResyncBetween *between, void *opaque,
                         Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t region = s->geo.bitmap_region, r = 0, copied = 0;
    int ret;

    for (;;) {
        if (between && !stripe_resync_co_between(between, opaque, copied)) {
            return -ECANCELED;
        }
        if (!stripe_bitmap_next_dirty(s, &r)) {
            return 0;
        }
        ret = stripe_co_resync_region(bs, r, buf);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot resync the region "
                             "at %" PRIu64, r * region);
            return ret;
        }
        qatomic_inc(&s->resync.regions_done);
        copied = region;
        r++;
    }
}

int coroutine_fn GRAPH_RDLOCK
stripe_co_resync_offline(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    void *buf = qemu_try_blockalign(bs, STRIPE_RESYNC_BUF);
    int ret;

    if (!buf) {
        error_setg(errp, "stripe: no memory to resync");
        return -ENOMEM;
    }
    stripe_resync_begin(s, UINT64_MAX);
    ret = stripe_co_resync_regions(bs, buf, NULL, NULL, errp);
    qemu_vfree(buf);
    if (ret == 0) {
        ret = stripe_co_resync_end(bs, errp);
    }
    qatomic_set(&s->resync.nodes, 0);
    if (ret == 0) {
        /* nothing else writes: the copies agree once the nodes are flushed */
        stripe_bitmap_co_clear_all(bs);
    }
    return ret;
}

/*
 * Between two regions: wait while the node is drained.  Returns false
 * when the pass must end (close, inactivation).
 */
static bool coroutine_fn stripe_resync_co_checkpoint(BDRVStripeState *s)
{
    StripeResync *rs = &s->resync;

    while (qatomic_read(&rs->paused) && !qatomic_read(&rs->stop)) {
        qatomic_set(&rs->parked, qemu_coroutine_self());
        /* parked before looking again: pairs with stripe_resync_unpark()'s */
        smp_mb();
        if ((!qatomic_read(&rs->paused) || qatomic_read(&rs->stop)) &&
            qatomic_xchg(&rs->parked, NULL)) {
            break;      /* resumed before parking: nobody wakes us */
        }
        /* stripe_resync_unpark() schedules us */
        qemu_coroutine_yield();
    }
    return !qatomic_read(&rs->stop);
}

/*
 * The background pass between two regions: counted in flight only while
 * it copies, so that a drain waits for a region, not for the pass, and
 * parked while the node is drained.
 */
static bool coroutine_fn stripe_resync_pass_between(void *opaque,
                                                    uint64_t copied)
{
    BlockDriverState *bs = opaque;
    bool go_on;

    bdrv_dec_in_flight(bs);
    go_on = stripe_resync_co_checkpoint(bs->opaque);
    bdrv_inc_in_flight(bs);
    return go_on;
}

/*
 * One pass over the regions set now.  Returns -ECANCELED when it must end
 * (close, inactivation), another error when a region could not be copied.
 */
static int coroutine_fn stripe_resync_co_pass(BlockDriverState *bs,
                                              uint64_t nodes, void *buf)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t failed = stripe_resync_begin(s, nodes);
    Error *local_err = NULL;
    int ret;

    trace_stripe_resync_start(bs, failed, s->resync.regions_total);
    bdrv_inc_in_flight(bs);
    bdrv_graph_co_rdlock();
    ret = stripe_co_resync_regions(bs, buf, stripe_resync_pass_between, bs,
                                   &local_err);
    if (ret == 0) {
        ret = stripe_co_resync_end(bs, &local_err);
    }
    bdrv_graph_co_rdunlock();
    bdrv_dec_in_flight(bs);
    if (local_err) {
        error_report_err(local_err);
    }
    trace_stripe_resync_done(bs, qatomic_read(&s->resync.regions_done),
                             qatomic_read(&s->resync.bytes), ret);
    /* nodes not brought back stay failed, and get no more writes */
    qatomic_set(&s->resync.nodes, 0);
    return ret;
}

/*
 * Whether a failed node answers again: it has answered every request
 * given up on (a node that has not is still away, and asking it more
 * would only add to them), and it reads its first block in time.
 */
static bool coroutine_fn stripe_resync_co_node_answers(BlockDriverState *bs,
                                                       uint32_t node,
                                                       void *buf)
{
    BDRVStripeState *s = bs->opaque;
    QEMUIOVector qiov;
    int ret;

    if (stripe_node_outstanding(s, node)) {
        return false;
    }
    qemu_iovec_init_buf(&qiov, buf, BDRV_SECTOR_SIZE);
    bdrv_inc_in_flight(bs);
    bdrv_graph_co_rdlock();
    ret = stripe_co_node_request_timed(bs, node, STRIPE_OP_READ, 0,
                                       BDRV_SECTOR_SIZE, &qiov, 0, 0);
    bdrv_graph_co_rdunlock();
    bdrv_dec_in_flight(bs);
    return ret >= 0;
}

/*
 * After a pass that left a node failed (it failed again, or a region could
 * not be read): wait until a failed node answers.  Each wait is twice the
 * last one, up to STRIPE_RESYNC_RETRY_MAX_NS, for as long as the worker
 * runs (@wait_ns): a node that answers reads but fails every write (a
 * thin LUN out of space, a LUN gone read-only) would otherwise cost a
 * pass and a warning every STRIPE_RESYNC_RETRY_MIN_NS.  Returns the nodes
 * to bring back in the next pass, 0 when the worker must end.
 */
static uint64_t coroutine_fn stripe_resync_co_wait_retry(BlockDriverState *bs,
                                                         void *buf,
                                                         int64_t *wait_ns)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t failed, answers;
    uint32_t i;

    for (;;) {
        trace_stripe_resync_retry(bs, *wait_ns / SCALE_MS);
        qemu_co_sleep_ns_wakeable(&s->resync.sleep, QEMU_CLOCK_REALTIME,
                                  *wait_ns);
        *wait_ns = MIN(*wait_ns * 2, STRIPE_RESYNC_RETRY_MAX_NS);
        if (!stripe_resync_co_checkpoint(s) ||
            !qatomic_read(&s->auto_resync)) {
            return 0;
        }
        failed = qatomic_read(&s->failed);
        if (!failed) {
            return UINT64_MAX;  /* a region could not be read: try again */
        }
        failed = stripe_failed_reachable(s);
        if (!failed) {
            return 0;   /* it comes back by stripe-node-replace */
        }
        answers = 0;
        for (i = 0; i < s->node_count; i++) {
            if (((failed >> i) & 1) &&
                stripe_resync_co_node_answers(bs, i, buf)) {
                answers |= UINT64_C(1) << i;
            }
        }
        if (answers) {
            return answers;
        }
    }
}

static void coroutine_fn stripe_resync_entry(void *opaque)
{
    BlockDriverState *bs = opaque;
    BDRVStripeState *s = bs->opaque;
    void *buf = qemu_try_blockalign(bs, STRIPE_RESYNC_BUF);
    uint64_t nodes = UINT64_MAX;
    int64_t wait_ns = STRIPE_RESYNC_RETRY_MIN_NS;
    int ret;

    while (buf && nodes && stripe_resync_co_checkpoint(s)) {
        ret = stripe_resync_co_pass(bs, nodes, buf);
        if (ret == -ECANCELED || !qatomic_read(&s->bitmap.resync_pending)) {
            break;
        }
        if (ret == 0 && !stripe_failed_reachable(s)) {
            break;      /* only nodes that could not be opened are left */
        }
        warn_report("stripe: the resync left a node failed (%s); it goes on "
                    "once the node answers", ret < 0 ? strerror(-ret) :
                    "it failed again");
        nodes = stripe_resync_co_wait_retry(bs, buf, &wait_ns);
    }
    qemu_vfree(buf);
    qatomic_set(&s->resync.co, NULL);
    aio_wait_kick();
}

/*
 * Whether this open resyncs by itself: an image with a bitmap, writable,
 * auto-resync on, not opened for qemu-img check (which resyncs inline)
 * nor inactive (migration).
 */
bool stripe_resync_at_open(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    return s->geo.bitmap_region && qatomic_read(&s->auto_resync) &&
           !bdrv_is_read_only(bs) &&
           !(bs->open_flags & (BDRV_O_CHECK | BDRV_O_INACTIVE));
}

/* Whether a background pass has work and may run now. */
bool stripe_resync_wanted(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    return stripe_resync_at_open(bs) && !qatomic_read(&s->resync.job) &&
           qatomic_read(&s->bitmap.resync_pending);
}

void stripe_resync_start(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    Coroutine *co;

    GLOBAL_STATE_CODE();
    if (s->resync.co || !stripe_resync_wanted(bs)) {
        return;
    }
    qatomic_set(&s->resync.stop, false);
    co = qemu_coroutine_create(stripe_resync_entry, bs);
    qatomic_set(&s->resync.co, co);
    aio_co_schedule(bdrv_get_aio_context(bs), co);
}

static void stripe_resync_unpark(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    Coroutine *co = qatomic_xchg(&s->resync.parked, NULL);

    if (co) {
        aio_co_schedule(bdrv_get_aio_context(bs), co);
    }
}

static void stripe_resync_wake_bh(void *opaque)
{
    BDRVStripeState *s = opaque;

    qemu_co_sleep_wake(&s->resync.sleep);
}

void stripe_resync_stop(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    GLOBAL_STATE_CODE();
    if (!qatomic_read(&s->resync.co)) {
        return;
    }
    qatomic_set(&s->resync.stop, true);
    /* told before unparking: pairs with the checkpoint's */
    smp_mb();
    stripe_resync_unpark(bs);
    /* in the worker's thread, where its sleep's timer runs too */
    aio_wait_bh_oneshot(bdrv_get_aio_context(bs), stripe_resync_wake_bh, s);
    BDRV_POLL_WHILE(bs, qatomic_read(&s->resync.co));
}

void stripe_resync_pause(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    qatomic_set(&s->resync.paused, true);
}

void stripe_resync_resume(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    qatomic_set(&s->resync.paused, false);
    /* resumed before unparking: pairs with the checkpoint's */
    smp_mb();
    stripe_resync_unpark(bs);
}
