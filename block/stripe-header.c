/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": the node headers on the QEMU side.  Reading and
 * assembling them at open, writing them (for stripe-resize.c and
 * stripe-health.c), and qemu-img check.
 *
 * Headers are written only by create, resize, growth, failure marking and
 * check -r; never by open.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qapi/error.h"
#include "stripe.h"
#include "trace.h"

static char *stripe_node_desc(BdrvChild *child, uint32_t pos) GRAPH_RDLOCK;

/*
 * "node 2 (iscsi://...)": how errors name a node given by the user.  Open
 * refreshes the nodes' filenames (stripe_assemble_nodes()); refreshing
 * here would call global-state code from the reload coroutine.
 */
static char *stripe_node_desc(BdrvChild *child, uint32_t pos)
{
    return g_strdup_printf("node %u (%s)", pos, child->bs->filename);
}

static int GRAPH_RDLOCK stripe_read_header(BdrvChild *child, uint32_t pos,
                                           StripeHeader *h, Error **errp)
{
    uint8_t buf[STRIPE_HEADER_SIZE];
    g_autofree char *desc = stripe_node_desc(child, pos);
    g_autofree char *msg = NULL;
    int64_t len;
    int ret;

    len = bdrv_getlength(child->bs);
    if (len < 0) {
        error_setg_errno(errp, -len, "stripe: %s: cannot get its length",
                         desc);
        return len;
    }
    if (len < STRIPE_HEADER_SIZE) {
        error_setg(errp, "stripe: %s: no stripe header (node has only %"
                   PRId64 " bytes)", desc, len);
        return -EINVAL;
    }
    ret = bdrv_pread(child, 0, STRIPE_HEADER_SIZE, buf, 0);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "stripe: %s: cannot read the header",
                         desc);
        return ret;
    }
    if (stripe_header_decode(buf, sizeof(buf), h, &msg) !=
        STRIPE_HEADER_OK) {
        error_setg(errp, "stripe: %s: %s", desc, msg);
        return -EINVAL;
    }
    return 0;
}

/*
 * @absent: per position, the nodes that could not be opened (a stand-in
 * took their place); taken over on success.
 */
int GRAPH_RDLOCK stripe_assemble_nodes(BlockDriverState *bs,
                                       BdrvChild **given, uint32_t count,
                                       StripeAbsentNode **absent,
                                       Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    g_autofree StripeHeader *hdrs = g_new0(StripeHeader, count);
    g_autofree uint64_t *lens = g_new0(uint64_t, count);
    g_autofree char *msg = NULL;
    uint64_t absent_pos = stripe_absent_positions(absent, count);
    StripeAssembly as;
    int errnode;
    uint32_t i;
    int ret;

    GLOBAL_STATE_CODE();
    /* Every message names the node by its filename, from here on too. */
    for (i = 0; i < count; i++) {
        bdrv_refresh_filename(given[i]->bs);
    }
    for (i = 0; i < count; i++) {
        if (absent[i]) {
            continue;
        }
        ret = stripe_read_header(given[i], i, &hdrs[i], errp);
        if (ret < 0) {
            return ret;
        }
        lens[i] = bdrv_getlength(given[i]->bs);
    }
    if (!stripe_assemble_absent(hdrs, lens, count, absent_pos, &as, &errnode,
                                &msg)) {
        if (as.twin >= 0) {
            /* a problem of two nodes: name both */
            g_autofree char *first = stripe_node_desc(given[as.twin],
                                                      as.twin);
            g_autofree char *second = stripe_node_desc(given[errnode],
                                                       errnode);

            if (as.split_brain) {
                error_setg(errp, "stripe: %s and %s each list the other as "
                           "failed: each was written while the other was "
                           "away (split brain), and neither holds all the "
                           "data", first, second);
            } else {
                error_setg(errp, "stripe: %s and %s hold the same header "
                           "(node index %u): the same storage given twice, "
                           "or a copy of a node", first, second,
                           hdrs[errnode].node_index);
            }
        } else if (errnode >= 0) {
            g_autofree char *desc = stripe_node_desc(given[errnode],
                                                     errnode);
            error_setg(errp, "stripe: %s: %s", desc, msg);
        } else if (absent_pos) {
            /*
             * Too many nodes failed: the first one that could not be
             * opened says why, as without copies.
             */
            uint32_t present = ctz64(~absent_pos);
            bool copies = present < count && hdrs[present].copies > 1;

            stripe_absent_refuse(absent, ctz64(absent_pos),
                                 copies ? msg : NULL, errp);
        } else {
            error_setg(errp, "stripe: %s", msg);
        }
        return -EINVAL;
    }

    s->geo = as.geo;
    memcpy(s->uuid, as.uuid, sizeof(s->uuid));
    memcpy(s->incarnation, as.incarnation, sizeof(s->incarnation));
    s->generation = as.generation;
    s->header_virtual_size = as.geo.virtual_size;
    s->node_count = count;
    s->nodes = g_new(BdrvChild *, count);
    s->given_pos = g_new(uint32_t, count);
    s->stale = g_new(bool, count);
    s->health = g_new0(StripeNodeHealth, count);
    s->edges = g_new0(StripeNodeEdge *, count);
    s->failed = s->failed_durable = as.failed & ~as.absent;
    for (i = 0; i < count; i++) {
        s->nodes[i] = given[as.order[i]];
        s->edges[i] = g_new0(StripeNodeEdge, 1);
        s->edges[i]->child = s->nodes[i];
        s->edges[i]->index = i;
        s->given_pos[i] = as.order[i];
        s->stale[i] = as.stale[i];
        if ((as.absent >> i) & 1) {
            continue;   /* said by stripe_absent_adopt() */
        }
        trace_stripe_assembled_node(bs, i, s->nodes[i]->bs->node_name,
                                    as.order[i], as.stale[i]);
        if (s->geo.stripe_unit % s->nodes[i]->bs->bl.request_alignment) {
            g_autofree char *desc = stripe_node_desc(s->nodes[i],
                                                     as.order[i]);

            error_setg(errp, "stripe: %s: its request alignment %" PRIu32
                       " does not divide the stripe unit %" PRIu64, desc,
                       s->nodes[i]->bs->bl.request_alignment,
                       s->geo.stripe_unit);
            return -EINVAL;
        }
        if (as.stale[i]) {
            warn_report("stripe: node %u (%s) has a header of generation %"
                        PRIu64 ", older than %" PRIu64 " (a header update "
                        "was cut off); run 'qemu-img check -r all' to "
                        "repair it", as.order[i], stripe_node_name(s, i),
                        hdrs[as.order[i]].generation, s->generation);
        }
        if (stripe_node_failed(s, i)) {
            warn_report("stripe: node %u (%s), node index %u, was marked "
                        "failed (its header is of generation %" PRIu64
                        ", the image's %" PRIu64 "): its data is out of "
                        "date and it is not used; %s", as.order[i],
                        stripe_node_name(s, i), i,
                        hdrs[as.order[i]].generation, s->generation,
                        stripe_resync_at_open(bs) ?
                        "it is resynced in the background" :
                        "run 'qemu-img check -r all' to rebuild it");
        }
    }
    stripe_absent_adopt(bs, absent);
    return 0;
}

/*
 * Read the headers again when the nodes come back from another host
 * (migration): while they were inactive here, it may have grown or
 * resized the disk.  They must still be the same image, in the same order.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_reload_headers(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    g_autofree StripeHeader *hdrs = g_new0(StripeHeader, s->node_count);
    g_autofree uint64_t *lens = g_new0(uint64_t, s->node_count);
    g_autofree char *msg = NULL;
    StripeAssembly as;
    bool same;
    int errnode;
    uint32_t i;
    int ret;

    /* Size, generation and failed nodes change only under these locks. */
    QEMU_LOCK_GUARD(&s->resize_lock);
    QEMU_LOCK_GUARD(&s->health_lock);
    for (i = 0; i < s->node_count; i++) {
        if (stripe_node_absent(s, i)) {
            continue;
        }
        ret = stripe_read_header(s->nodes[i], s->given_pos[i], &hdrs[i],
                                 errp);
        if (ret < 0) {
            return ret;
        }
        lens[i] = bdrv_co_getlength(s->nodes[i]->bs);
    }
    /* in index order: the absent nodes take their own indices again */
    if (!stripe_assemble_absent(hdrs, lens, s->node_count,
                                qatomic_read(&s->absent), &as, &errnode,
                                &msg)) {
        if (errnode >= 0) {
            g_autofree char *desc = stripe_node_desc(s->nodes[errnode],
                                                     s->given_pos[errnode]);
            error_setg(errp, "stripe: %s: %s", desc, msg);
        } else {
            error_setg(errp, "stripe: %s", msg);
        }
        return -EINVAL;
    }
    same = !memcmp(as.uuid, s->uuid, sizeof(s->uuid)) &&
           as.geo.stripe_unit == s->geo.stripe_unit &&
           as.geo.data_offset == s->geo.data_offset;
    for (i = 0; i < s->node_count; i++) {
        same = same && as.order[i] == i;
    }
    if (!same) {
        error_setg(errp, "stripe: the nodes no longer hold the image that "
                   "was opened");
        return -EINVAL;
    }

    s->generation = as.generation;
    s->header_virtual_size = as.geo.virtual_size;
    memcpy(s->incarnation, as.incarnation, sizeof(s->incarnation));
    for (i = 0; i < s->node_count; i++) {
        s->stale[i] = as.stale[i];
    }
    qatomic_set(&s->failed, as.failed);
    /* an absent node is failed in the headers only once a write says so */
    qatomic_set(&s->failed_durable, as.failed & ~as.absent);
    if (s->cache) {
        stripe_cache_lock(s->cache);
        sc_cache_set_disk_size(s->cache->core, as.geo.virtual_size);
        stripe_cache_unlock(s->cache);
    }
    qatomic_set_u64(&s->geo.virtual_size, as.geo.virtual_size);
    return 0;
}

void stripe_header_for_node(BDRVStripeState *s, uint32_t index,
                            StripeHeader *h)
{
    *h = (StripeHeader) {
        .version = STRIPE_VERSION,
        .header_size = STRIPE_HEADER_SIZE,
        .node_index = index,
        .node_count = s->node_count,
        .stripe_unit = s->geo.stripe_unit,
        .virtual_size = s->header_virtual_size,
        .data_offset = s->geo.data_offset,
        .generation = s->generation,
        .copies = s->geo.copies,
        .failed = qatomic_read(&s->failed),
        .compat_features = s->geo.copies > 1 ? STRIPE_COMPAT_INCARNATIONS : 0,
        .incompat_features = s->geo.bitmap_region ? STRIPE_INCOMPAT_BITMAP : 0,
        .bitmap_region = s->geo.bitmap_region,
        .bitmap_offset = s->geo.bitmap_offset,
    };
    memcpy(h->uuid, s->uuid, sizeof(h->uuid));
    memcpy(h->incarnation, s->incarnation, sizeof(h->incarnation));
}

static void stripe_header_write_error(Error **errp, int ret,
                                      const StripeHeader *h,
                                      BdrvChild *child)
{
    error_setg_errno(errp, -ret, "stripe: cannot write the header of node "
                     "index %u (%s)", h->node_index, child->bs->filename);
}

int coroutine_fn GRAPH_RDLOCK
stripe_co_write_header(BdrvChild *child, const StripeHeader *h, Error **errp)
{
    uint8_t buf[STRIPE_HEADER_SIZE];
    int ret;

    stripe_header_encode(h, buf);
    ret = bdrv_co_pwrite(child, 0, sizeof(buf), buf, 0);
    if (ret == 0) {
        ret = bdrv_co_flush(child->bs);
    }
    if (ret < 0) {
        stripe_header_write_error(errp, ret, h, child);
    }
    return ret;
}

/*
 * stripe_co_write_header() for node @node of an open image, whose
 * requests give up after node-timeout: a live node that hangs while
 * another one is being marked failed must not hold the marking, and
 * every request waiting for it, until it answers.  A node that has not
 * answered requests given up on yet counts as unwritten at once: the
 * write would only wait for those answers (stripe-deadline.c, so that an
 * older header still on its way cannot land after it), for node-timeout,
 * with the health lock held.  A single-copy image has no node to go on
 * without: it waits, as its data requests do.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_write_header_timed(BlockDriverState *bs, uint32_t node,
                             const StripeHeader *h, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    uint8_t buf[STRIPE_HEADER_SIZE];
    QEMUIOVector qiov;
    int ret = -ETIMEDOUT;

    if (s->geo.copies == 1) {
        return stripe_co_write_header(s->nodes[node], h, errp);
    }
    if (!stripe_node_outstanding(s, node)) {
        stripe_header_encode(h, buf);
        qemu_iovec_init_buf(&qiov, buf, sizeof(buf));
        ret = stripe_co_node_request_timed(bs, node, STRIPE_OP_WRITE, 0,
                                           sizeof(buf), &qiov, 0, 0);
    }
    if (ret == 0) {
        ret = stripe_co_node_request_timed(bs, node, STRIPE_OP_FLUSH, 0, 0,
                                           NULL, 0, 0);
    }
    if (ret < 0) {
        stripe_header_write_error(errp, ret, h, s->nodes[node]);
    }
    return ret;
}

/*
 * Write the header of every live node: the current generation, the
 * failed nodes and the size in the headers.  A failed node keeps its
 * older header, which says that it is out of date.  Every live node is
 * tried; those that failed are added to @unwritten, and the first error
 * is the one returned (see stripe_co_commit_generation()).  Called with
 * @health_lock held.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_write_live_headers(BlockDriverState *bs, uint64_t *unwritten,
                             Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeHeader h;
    uint32_t i;
    int ret, first = 0;

    for (i = 0; i < s->node_count; i++) {
        if (stripe_node_failed(s, i)) {
            continue;
        }
        stripe_header_for_node(s, i, &h);
        ret = stripe_co_write_header_timed(bs, i, &h,
                                           first < 0 ? NULL : errp);
        if (ret < 0) {
            *unwritten |= UINT64_C(1) << i;
            first = first ?: ret;
            continue;
        }
        s->stale[i] = false;
    }
    return first;
}

/*
 * Rewrite the live nodes' headers for a new generation and a disk of
 * @size bytes, which need not be the size in use yet.  A failure leaves
 * the generation bumped, so that the next attempt writes a newer one than
 * any header this one wrote.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_write_all_headers(BlockDriverState *bs, uint64_t size,
                            Error **errp)
{
    BDRVStripeState *s = bs->opaque;

    QEMU_LOCK_GUARD(&s->health_lock);
    s->generation++;
    s->header_virtual_size = size;
    return stripe_co_commit_generation(bs, errp);
}

/*
 * A failed node holds out of date data: an error, which -r all repairs
 * by rebuilding the node from the other copies (an image without a
 * write-intent bitmap; with one, stripe_co_check_bitmap() resyncs).
 */
static void coroutine_fn GRAPH_RDLOCK
stripe_co_check_failed(BlockDriverState *bs, uint32_t i,
                       BdrvCheckResult *result, BdrvCheckMode fix)
{
    BDRVStripeState *s = bs->opaque;
    Error *local_err = NULL;
    uint64_t units;

    if (stripe_node_absent(s, i)) {
        fprintf(stderr, "ERROR node index %u (%s) could not be opened: it "
                "stays failed, its data out of date\n", i,
                stripe_node_name(s, i));
        result->corruptions++;
        return;
    }
    if (!(fix & BDRV_FIX_ERRORS)) {
        fprintf(stderr, "ERROR node index %u (%s) is failed: its data is out "
                "of date\n", i, stripe_node_name(s, i));
        result->corruptions++;
        return;
    }
    if (s->geo.bitmap_region) {
        return;
    }
    fprintf(stderr, "Rebuilding node index %u (%s) from the other copies\n",
            i, stripe_node_name(s, i));
    if (stripe_co_rebuild_node(bs, i, &units, &local_err) < 0) {
        error_report_err(local_err);
        result->corruptions++;
        return;
    }
    fprintf(stderr, "Rebuilt node index %u: %" PRIu64 " stripe units "
            "copied\n", i, units);
    result->corruptions_fixed++;
}

/*
 * Regions set in the write-intent bitmap may differ between copies (a
 * crash with writes in flight), or be missing from a failed node: -r all
 * resyncs them, and brings the failed nodes back.
 */
static void coroutine_fn GRAPH_RDLOCK
stripe_co_check_bitmap(BlockDriverState *bs, BdrvCheckResult *result,
                       BdrvCheckMode fix)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t dirty = stripe_bitmap_dirty_regions(s);
    uint64_t failed = qatomic_read(&s->failed);
    Error *local_err = NULL;

    if (!s->geo.bitmap_region || (!dirty && !failed)) {
        return;
    }
    /*
     * Not an error on its own: reads take one copy until the resync (at
     * the next writable open, or -r) has made the others agree.
     */
    fprintf(stderr, "%" PRIu64 " regions of %" PRIu64 " bytes are dirty in "
            "the write-intent bitmap: %s\n", dirty, s->geo.bitmap_region,
            failed ? "the failed nodes miss them" :
            "their copies may differ (writes in flight at a crash)");
    if (!(fix & BDRV_FIX_ERRORS)) {
        return;
    }
    if (stripe_co_resync_offline(bs, &local_err) < 0) {
        error_report_err(local_err);
        result->corruptions++;
        return;
    }
    fprintf(stderr, "Resynced: %" PRIu64 " bytes written to copies\n",
            qatomic_read(&s->resync.bytes));
    result->corruptions_fixed += ctpop64(failed & ~qatomic_read(&s->absent));
}

int coroutine_fn GRAPH_RDLOCK
stripe_co_check(BlockDriverState *bs, BdrvCheckResult *result,
                BdrvCheckMode fix)
{
    BDRVStripeState *s = bs->opaque;
    uint8_t buf[STRIPE_HEADER_SIZE];
    StripeHeader h, want;
    uint32_t i;
    int ret;

    for (i = 0; i < s->node_count; i++) {
        if (stripe_node_failed(s, i)) {
            stripe_co_check_failed(bs, i, result, fix);
        }
    }
    stripe_co_check_bitmap(bs, result, fix);
    for (i = 0; i < s->node_count; i++) {
        g_autofree char *msg = NULL;
        bool bad;

        if (stripe_node_failed(s, i)) {
            continue;
        }

        ret = bdrv_co_pread(s->nodes[i], 0, sizeof(buf), buf, 0);
        if (ret < 0) {
            fprintf(stderr, "ERROR cannot read the header of node index %u "
                    "(%s): %s\n", i, stripe_node_name(s, i),
                    strerror(-ret));
            result->check_errors++;
            continue;
        }
        stripe_header_for_node(s, i, &want);
        bad = stripe_header_decode(buf, sizeof(buf), &h, &msg) !=
              STRIPE_HEADER_OK;
        if (!bad) {
            uint8_t want_buf[STRIPE_HEADER_SIZE];

            /* Everything must match the assembled image exactly. */
            want.compat_features = h.compat_features;
            stripe_header_encode(&h, buf);
            stripe_header_encode(&want, want_buf);
            bad = memcmp(buf, want_buf, sizeof(buf)) != 0;
            if (bad) {
                msg = g_strdup_printf("header of generation %" PRIu64
                                      " is stale (image is at %" PRIu64 ")",
                                      h.generation, s->generation);
            }
        }
        if (!bad) {
            continue;
        }
        if (fix & BDRV_FIX_ERRORS) {
            Error *local_err = NULL;

            ret = stripe_co_write_header(s->nodes[i], &want, &local_err);
            if (ret < 0) {
                error_report_err(local_err);
                result->corruptions++;
                continue;
            }
            fprintf(stderr, "Repairing node index %u (%s): %s\n", i,
                    stripe_node_name(s, i), msg);
            s->stale[i] = false;
            result->corruptions_fixed++;
        } else {
            fprintf(stderr, "ERROR node index %u (%s): %s\n", i,
                    stripe_node_name(s, i), msg);
            result->corruptions++;
        }
    }
    return 0;
}
