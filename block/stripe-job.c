/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": bringing failed nodes back, and replacing a
 * failed node with a blank one, from QMP while the disk is in use.
 *
 * Both run the resync of stripe-resync.c as a block job ("stripe-resync"
 * in query-jobs): progress in bytes of regions, pause and resume (also
 * while the node is drained), cancel, and a speed limit.  The image's
 * own background resync (auto-resync) steps aside while a job runs.
 *
 * stripe-node-resync brings back every failed node that answers: the
 * regions set in the write-intent bitmap (written while it was away)
 * are copied to it, then it is marked live.
 *
 * stripe-node-replace puts a blank node in the place of a failed one: the
 * new node takes its index and gets a header older than the live nodes'
 * (so that a restart still sees it failed), every region is set in the
 * bitmap of the live nodes (so that a resync after a crash copies all of
 * it too), and the job copies every region.  The failed node may still
 * owe answers, forever if its target is gone for good: it is parked
 * rather than detached (stripe-edge.c).
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "block/blockjob_int.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-block-core.h"
#include "system/block-backend.h"
#include "qemu/memalign.h"
#include "stripe.h"
#include "trace.h"

typedef struct StripeResyncJob {
    BlockJob common;
    BlockDriverState *bs;
    int64_t replace;            /* the node index replaced, or -1 */
} StripeResyncJob;

/*
 * The blank node now at index @node: room for its share, a clear bitmap,
 * a new incarnation of the index in the live nodes' headers (so that the
 * node it replaces is never taken for it again), and a header one
 * generation older than the live nodes', which list it as failed.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_adopt_node(BlockDriverState *bs, uint32_t node, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    BdrvChild *child = s->nodes[node];
    uint32_t incarnation;
    StripeHeader h;
    int ret;

    WITH_QEMU_LOCK_GUARD(&s->resize_lock) {
        ret = stripe_co_fit_node(bs, node, s->geo.virtual_size, errp);
    }
    if (ret < 0) {
        return ret;
    }
    ret = bdrv_co_pwrite_zeroes(child, s->geo.bitmap_offset,
                                s->geo.data_offset - s->geo.bitmap_offset, 0);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "stripe: cannot clear the bitmap of "
                         "node index %u (%s)", node, child->bs->filename);
        return ret;
    }
    QEMU_LOCK_GUARD(&s->health_lock);
    do {
        incarnation = g_random_int();
    } while (!incarnation || incarnation == s->incarnation[node]);
    s->incarnation[node] = incarnation;
    s->generation++;
    ret = stripe_co_commit_generation(bs, errp);
    if (ret < 0) {
        return ret;
    }
    stripe_header_for_node(s, node, &h);
    h.failed &= ~(UINT64_C(1) << node);
    h.generation = s->generation - 1;
    s->stale[node] = false;
    return stripe_co_write_header(child, &h, errp);
}

/* Between two regions: progress, the speed limit, the pause point. */
static bool coroutine_fn stripe_resync_job_between(void *opaque,
                                                   uint64_t copied)
{
    StripeResyncJob *sj = opaque;

    if (copied) {
        job_progress_update(&sj->common.job, copied);
        block_job_ratelimit_processed_bytes(&sj->common, copied);
        block_job_ratelimit_sleep(&sj->common);
    }
    return !job_is_cancelled(&sj->common.job);
}

/*
 * Wait until the failed nodes have answered every request given up on.
 * Until then a node is still away (a target just restarted reconnects
 * first, and resends them), and the pass's writes to it would wait for
 * those answers, give up after node-timeout and fail it again.  Paused
 * and cancelled like the pass.  False once cancelled.
 */
static bool coroutine_fn stripe_resync_job_wait_answers(StripeResyncJob *sj)
{
    Job *job = &sj->common.job;
    BDRVStripeState *s = sj->bs->opaque;
    uint64_t failed = stripe_failed_reachable(s);
    uint32_t i;

    for (i = 0; i < s->node_count; i++) {
        while (((failed >> i) & 1) &&
               stripe_node_outstanding(s, i) &&
               !job_is_cancelled(job)) {
            trace_stripe_resync_job_wait_answers(sj->bs, i,
                stripe_node_outstanding(s, i));
            job_sleep_ns(job, STRIPE_RESYNC_ANSWER_POLL_NS);
        }
    }
    return !job_is_cancelled(job);
}

static int coroutine_fn stripe_resync_job_run(Job *job, Error **errp)
{
    StripeResyncJob *sj = container_of(job, StripeResyncJob, common.job);
    BlockDriverState *bs = sj->bs;
    BDRVStripeState *s = bs->opaque;
    uint64_t region = s->geo.bitmap_region, failed, total;
    void *buf = qemu_try_blockalign(bs, STRIPE_RESYNC_BUF);
    int ret = 0;

    if (!buf) {
        error_setg(errp, "stripe: no memory to resync");
        return -ENOMEM;
    }
    if (!stripe_resync_job_wait_answers(sj)) {
        goto out;
    }
    if (sj->replace >= 0) {
        bdrv_graph_co_rdlock();
        ret = stripe_bitmap_co_set_all(bs);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot set the "
                             "write-intent bitmap");
        } else {
            ret = stripe_co_adopt_node(bs, sj->replace, errp);
        }
        bdrv_graph_co_rdunlock();
    }
    if (ret < 0) {
        goto out;
    }

    failed = stripe_resync_begin(s, UINT64_MAX);
    total = qatomic_read(&s->resync.regions_total);
    job_progress_set_remaining(job, total * region);
    bdrv_graph_co_rdlock();
    ret = stripe_co_resync_regions(bs, buf, stripe_resync_job_between, sj,
                                   errp);
    bdrv_graph_co_rdunlock();
    if (ret < 0) {
        goto out;
    }
    if (qatomic_read(&s->resync.nodes) != failed) {
        error_setg(errp, "stripe: a node being brought back failed again");
        ret = -EIO;
        goto out;
    }
    bdrv_graph_co_rdlock();
    ret = stripe_co_resync_end(bs, errp);
    bdrv_graph_co_rdunlock();

out:
    qemu_vfree(buf);
    qatomic_set(&s->resync.nodes, 0);
    return ret;
}

static void stripe_resync_job_clean(Job *job)
{
    StripeResyncJob *sj = container_of(job, StripeResyncJob, common.job);
    BDRVStripeState *s = sj->bs->opaque;

    qatomic_set(&s->resync.job, NULL);
    /* what is left (a cancelled job) goes to the background resync */
    stripe_resync_start(sj->bs);
    bdrv_unref(sj->bs);
}

static const BlockJobDriver stripe_resync_job_driver = {
    .job_driver = {
        .instance_size = sizeof(StripeResyncJob),
        .job_type      = JOB_TYPE_STRIPE_RESYNC,
        .free          = block_job_free,
        .run           = stripe_resync_job_run,
        .clean         = stripe_resync_job_clean,
        .user_resume   = block_job_user_resume,
    },
};

static bool stripe_job_node_inactive(BlockDriverState *bs)
{
    GRAPH_RDLOCK_GUARD_MAINLOOP();

    return bdrv_is_inactive(bs);
}

/* The replicated stripe image @node_name, able to run a job now. */
static BlockDriverState *stripe_job_target(const char *node_name,
                                           Error **errp)
{
    BlockDriverState *bs = bdrv_find_node(node_name);
    BDRVStripeState *s;

    if (!bs) {
        error_setg(errp, "stripe: no node named '%s'", node_name);
        return NULL;
    }
    if (!bs->drv || strcmp(bs->drv->format_name, "stripe")) {
        error_setg(errp, "stripe: node '%s' is not a stripe image",
                   node_name);
        return NULL;
    }
    s = bs->opaque;
    if (s->geo.copies == 1) {
        error_setg(errp, "stripe: node '%s' keeps one copy of its data "
                   "(copies 1): it has no copies to resync or rebuild",
                   node_name);
        return NULL;
    }
    if (!s->geo.bitmap_region) {
        error_setg(errp, "stripe: node '%s' has no write-intent bitmap "
                   "(copies %u): rebuild its failed nodes offline with "
                   "'qemu-img check -r all'", node_name, s->geo.copies);
        return NULL;
    }
    if (bdrv_is_read_only(bs)) {
        error_setg(errp, "stripe: node '%s' is read-only", node_name);
        return NULL;
    }
    if (stripe_job_node_inactive(bs)) {
        error_setg(errp, "stripe: node '%s' is inactive (migrated away, or "
                   "not activated yet): a job cannot write it", node_name);
        return NULL;
    }
    if (qatomic_read(&s->resync.job)) {
        error_setg(errp, "stripe: node '%s' already runs a resync job",
                   node_name);
        return NULL;
    }
    return bs;
}

/*
 * A resync job on @bs, created but not started: the background resync is
 * stopped meanwhile (the job does what it would).  NULL with @errp set
 * (an invalid or used job ID, a negative speed), the background resync
 * going on.
 */
static StripeResyncJob *stripe_job_create(BlockDriverState *bs,
                                          const char *job_id,
                                          bool has_speed, int64_t speed,
                                          bool has_auto_finalize,
                                          bool auto_finalize,
                                          bool has_auto_dismiss,
                                          bool auto_dismiss, Error **errp)
{
    StripeResyncJob *sj;
    int flags = JOB_DEFAULT;

    if (has_auto_finalize && !auto_finalize) {
        flags |= JOB_MANUAL_FINALIZE;
    }
    if (has_auto_dismiss && !auto_dismiss) {
        flags |= JOB_MANUAL_DISMISS;
    }
    stripe_resync_stop(bs);
    sj = block_job_create(job_id, &stripe_resync_job_driver, NULL, bs, 0,
                          BLK_PERM_ALL, has_speed ? speed : 0, flags, NULL,
                          NULL, errp);
    if (!sj) {
        stripe_resync_start(bs);
    }
    return sj;
}

/* A job created but not started goes, and the background resync resumes. */
static void stripe_job_drop(BlockDriverState *bs, StripeResyncJob *sj)
{
    job_early_fail(&sj->common.job);
    stripe_resync_start(bs);
}

/* Start @sj; @replace: the node index it rebuilds in full, or -1. */
static void stripe_job_start(BlockDriverState *bs, StripeResyncJob *sj,
                             int64_t replace)
{
    BDRVStripeState *s = bs->opaque;

    bdrv_ref(bs);
    sj->bs = bs;
    sj->replace = replace;
    qatomic_set(&s->resync.job, sj);
    job_start(&sj->common.job);
}

void qmp_stripe_node_resync(const char *job_id, const char *node_name,
                            bool has_speed, int64_t speed,
                            bool has_auto_finalize, bool auto_finalize,
                            bool has_auto_dismiss, bool auto_dismiss,
                            Error **errp)
{
    BlockDriverState *bs;
    BDRVStripeState *s;
    StripeResyncJob *sj;

    GLOBAL_STATE_CODE();
    bs = stripe_job_target(node_name, errp);
    if (!bs) {
        return;
    }
    s = bs->opaque;
    if (!stripe_failed_reachable(s) && !stripe_bitmap_dirty_regions(s)) {
        uint64_t absent = qatomic_read(&s->absent);

        if (absent) {
            error_setg(errp, "stripe: node '%s' has nothing to resync: its "
                       "failed nodes could not be opened (node index %d: "
                       "%s); give one back with stripe-node-replace",
                       node_name, ctz64(absent),
                       stripe_node_name(s, ctz64(absent)));
        } else {
            error_setg(errp, "stripe: node '%s' has no failed node and no "
                       "dirty region: nothing to resync", node_name);
        }
        return;
    }
    sj = stripe_job_create(bs, job_id, has_speed, speed, has_auto_finalize,
                           auto_finalize, has_auto_dismiss, auto_dismiss,
                           errp);
    if (sj) {
        stripe_job_start(bs, sj, -1);
    }
}

/* Whether @bs is @target or has it among its children, at any depth. */
static bool GRAPH_RDLOCK stripe_job_reaches(BlockDriverState *bs,
                                            BlockDriverState *target)
{
    BdrvChild *c;

    if (bs == target) {
        return true;
    }
    QLIST_FOREACH(c, &bs->children, next) {
        if (stripe_job_reaches(c->bs, target)) {
            return true;
        }
    }
    return false;
}

/*
 * Why @new_bs cannot be a node of any image now: in use, the image
 * itself or above it (a cycle), read-only, inactive.  NULL if it can.
 */
static const char *stripe_replacement_unusable(BlockDriverState *bs,
                                               BlockDriverState *new_bs)
{
    GRAPH_RDLOCK_GUARD_MAINLOOP();

    if (stripe_job_reaches(new_bs, bs)) {
        return "the image itself or a node above it";
    }
    if (!QLIST_EMPTY(&new_bs->parents)) {
        return "in use";
    }
    if (bdrv_is_read_only(new_bs)) {
        return "read-only";
    }
    if (bdrv_is_inactive(new_bs)) {
        return "inactive";
    }
    return NULL;
}

/*
 * What a header with this image's UUID and @index on a replacement says:
 * NULL if it is that node come back (no newer than the image, listing no
 * node as failed that the image does not), else why it is not.
 */
static char *stripe_replacement_split_brain(BDRVStripeState *s,
                                            const StripeHeader *h)
{
    uint64_t extra = h->failed & ~s->failed;

    if (h->generation > s->generation) {
        return g_strdup_printf("its header is newer than the image's "
                               "(generation %" PRIu64 ", the image's %"
                               PRIu64 "): it was written while the image "
                               "went on without it (split brain)",
                               h->generation, s->generation);
    }
    if (extra) {
        return g_strdup_printf("its header lists node index %d as failed, "
                               "which the image does not: it was written "
                               "while that node was away (split brain)",
                               ctz64(extra));
    }
    return NULL;
}

/*
 * Whether @new_bs may take the place of node index @index: used by
 * nothing else, and either blank (returns 0; a node smaller than a header
 * counts as blank: the job grows it if it can) or that very node come
 * back (returns 1).  Any other stripe header is refused (a node of some
 * image: its data would be lost), and so is this node's own header when
 * it was written while the image went on without it.  Returns -1 with
 * @errp set when refused.
 */
static int stripe_replacement_kind(BlockDriverState *bs, uint32_t index,
                                   BlockDriverState *new_bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    const char *name = bdrv_get_node_name(new_bs);
    uint8_t buf[STRIPE_HEADER_SIZE];
    g_autofree char *msg = NULL;
    g_autofree char *why = NULL;
    const char *unusable;
    StripeHeaderStatus st;
    StripeHeader h;
    BlockBackend *blk;
    int64_t len;
    bool blank;
    int ret;

    unusable = stripe_replacement_unusable(bs, new_bs);
    if (unusable) {
        error_setg(errp, "stripe: node '%s' is %s", name, unusable);
        return -1;
    }
    blk = blk_new_with_bs(new_bs, BLK_PERM_CONSISTENT_READ, BLK_PERM_ALL,
                          errp);
    if (!blk) {
        return -1;
    }
    len = blk_getlength(blk);
    blank = len >= 0 && len < (int64_t)sizeof(buf);
    ret = len < 0 || blank ? len : blk_pread(blk, 0, sizeof(buf), buf, 0);
    blk_unref(blk);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "stripe: cannot read node '%s'", name);
        return -1;
    }
    if (blank) {
        return 0;
    }
    st = stripe_header_decode(buf, sizeof(buf), &h, &msg);
    if (st == STRIPE_HEADER_OK) {
        char uuid[37];

        if (!memcmp(h.uuid, s->uuid, sizeof(s->uuid)) &&
            h.node_index == index) {
            if (h.incarnation[index] != s->incarnation[index]) {
                error_setg(errp, "stripe: node '%s' was node index %u before "
                           "another node was put in its place: its data is "
                           "out of date; give a blank node", name, index);
                return -1;
            }
            why = stripe_replacement_split_brain(s, &h);
            if (!why) {
                return 1;
            }
            error_setg(errp, "stripe: node '%s' is node index %u of this "
                       "image, but %s: give a blank node", name, index, why);
            return -1;
        }
        stripe_uuid_unparse(h.uuid, uuid);
        error_setg(errp, "stripe: node '%s' holds a stripe header (image "
                   "%s, node index %u, generation %" PRIu64 "), and is not "
                   "node index %u of this image come back: give a blank "
                   "node", name, uuid, h.node_index, h.generation, index);
        return -1;
    }
    if (st != STRIPE_HEADER_BLANK &&
        !memcmp(buf, STRIPE_MAGIC, STRIPE_MAGIC_LEN)) {
        error_setg(errp, "stripe: node '%s' holds a stripe header that "
                   "cannot be used (%s): give a blank node", name, msg);
        return -1;
    }
    return 0;
}

void qmp_stripe_node_replace(const char *job_id, const char *node_name,
                             uint32_t index, const char *new_node,
                             bool has_speed, int64_t speed,
                             bool has_auto_finalize, bool auto_finalize,
                             bool has_auto_dismiss, bool auto_dismiss,
                             Error **errp)
{
    BlockDriverState *bs, *new_bs;
    BDRVStripeState *s;
    StripeResyncJob *sj;
    int kind, ret;

    GLOBAL_STATE_CODE();
    bs = stripe_job_target(node_name, errp);
    if (!bs) {
        return;
    }
    s = bs->opaque;
    if (index >= s->node_count) {
        error_setg(errp, "stripe: index %u is out of range (%u nodes)",
                   index, s->node_count);
        return;
    }
    if (!stripe_node_failed(s, index)) {
        error_setg(errp, "stripe: node index %u (%s) is not failed: only a "
                   "failed node can be replaced", index,
                   stripe_node_name(s, index));
        return;
    }
    new_bs = bdrv_find_node(new_node);
    if (!new_bs) {
        error_setg(errp, "stripe: no node named '%s'", new_node);
        return;
    }
    kind = stripe_replacement_kind(bs, index, new_bs, errp);
    if (kind < 0) {
        return;
    }
    if (bdrv_try_change_aio_context(new_bs, bdrv_get_aio_context(bs), NULL,
                                    errp) < 0) {
        return;
    }
    /* the job first: a command refused leaves the image as it was */
    sj = stripe_job_create(bs, job_id, has_speed, speed, has_auto_finalize,
                           auto_finalize, has_auto_dismiss, auto_dismiss,
                           errp);
    if (!sj) {
        return;
    }
    ret = stripe_swap_node(bs, index, new_bs, errp);
    if (ret < 0) {
        stripe_job_drop(bs, sj);
        return;
    }
    stripe_absent_forget(s, index);
    bdrv_graph_rdlock_main_loop();
    bdrv_refresh_filename(new_bs);
    bdrv_graph_rdunlock_main_loop();
    /* the node come back misses only the regions set: a resync */
    stripe_job_start(bs, sj, kind ? -1 : (int64_t)index);
}
