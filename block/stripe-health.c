/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": replicated images keep serving when a node fails.
 *
 * A node whose request fails (an error, or no answer within node-timeout)
 * is marked failed, like md marks a faulty member: the headers of the
 * live nodes are rewritten with a new generation and the node in their
 * list of failed nodes.  From then on the node is neither read nor
 * written; its copies are served by the others.  Its own header is left
 * as it was, older than theirs, so that open knows it is out of date even
 * if it answers again (stripe_assemble()).
 *
 * A node is marked only while every stripe unit keeps a copy on a live
 * node; a failure that would lose the last copy of some unit fails the
 * request with the node's error instead, and werror/rerror apply.
 *
 * A write that skipped a failed node is acknowledged only once the marking
 * is in the headers: after a crash, a node that missed acknowledged writes
 * must never be taken for live.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "stripe.h"
#include "trace.h"

/*
 * One request to node index @node over @edge (its edge when the request
 * began: it may be parked meanwhile), counted for query-blockstats.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_edge_request(BlockDriverState *bs, uint32_t node,
                       StripeNodeEdge *edge, StripeOp op,
                       int64_t node_offset, int64_t bytes,
                       QEMUIOVector *qiov, size_t qiov_offset,
                       BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;
    int ret;

    qatomic_inc(&edge->in_flight);
    ret = stripe_node_request(edge->child, op, node_offset, bytes, qiov,
                              qiov_offset, flags);
    qatomic_dec(&edge->in_flight);
    if (ret < 0) {
        qatomic_inc(&s->health[node].errors);
    }
    return ret;
}

/*
 * A block status query to node index @node over @edge, counted like a
 * request.  Only what the node itself knows of its data is kept: its
 * end of file is not the disk's, and nothing is asked of the node's own
 * file later (no BDRV_BLOCK_RECURSE), so that one query is all a caller
 * waits for.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_edge_block_status(BlockDriverState *bs, uint32_t node,
                            StripeNodeEdge *edge, int64_t node_offset,
                            int64_t bytes, StripeNodeStatus *status)
{
    BDRVStripeState *s = bs->opaque;
    int ret;

    qatomic_inc(&edge->in_flight);
    ret = bdrv_co_block_status(edge->child->bs, node_offset, bytes,
                               &status->pnum, &status->map, &status->file);
    qatomic_dec(&edge->in_flight);
    if (ret < 0) {
        qatomic_inc(&s->health[node].errors);
        return ret;
    }
    return ret & (BDRV_BLOCK_DATA | BDRV_BLOCK_ZERO | BDRV_BLOCK_ALLOCATED |
                  BDRV_BLOCK_OFFSET_VALID);
}

/* Node @node is marked failed, for @why ("(the error)" or what it failed). */
static void stripe_report_failed(BDRVStripeState *s, uint32_t node,
                                 const char *why)
{
    error_report("stripe: node index %u (%s) failed %s; the disk goes on "
                 "with the other copies of its data", node,
                 stripe_node_name(s, node), why);
}

/*
 * Nodes that failed their header write while another was being marked:
 * @err is the first one's error.
 */
static void stripe_report_header_failures(BDRVStripeState *s,
                                          uint64_t unwritten, Error *err)
{
    uint32_t i;

    error_report_err(err);
    for (i = 0; i < s->node_count; i++) {
        if ((unwritten >> i) & 1) {
            stripe_report_failed(s, i, "writing its header");
        }
    }
}

/*
 * Write the generation, just bumped by the caller, to the headers of the
 * live nodes, which list the failed ones.  A live node that fails its
 * header write is marked failed as well (its header is now older than
 * the others', whatever it holds), as long as every unit keeps a live
 * copy without it, and the next generation is written listing it.
 * Returns 0 once the headers hold @failed, or the first header write's
 * error in @errp when marking would lose some unit's last copy.  Every
 * change of the failed set and every resize goes through here, so that a
 * node whose header cannot be written never fails the operation while the
 * others could carry on.  Called with @health_lock held.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_commit_generation(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    Error *local_err = NULL;
    int ret;

    for (;;) {
        uint64_t unwritten = 0;

        ret = stripe_co_write_live_headers(bs, &unwritten, &local_err);
        if (ret >= 0) {
            break;
        }
        if (stripe_geometry_lost_unit(&s->geo, s->failed | unwritten,
                                      NULL)) {
            error_propagate(errp, local_err);
            return ret;
        }
        stripe_report_header_failures(s, unwritten, local_err);
        local_err = NULL;
        qatomic_set(&s->failed, s->failed | unwritten);
        s->generation++;
    }
    qatomic_set(&s->failed_durable, s->failed);
    return 0;
}

/*
 * Node @node failed a request with @err (or was given up on: -ETIMEDOUT).
 * Returns 0 once it is marked failed in the live nodes' headers, so that
 * the request may go on without it; @err when it cannot be marked (one
 * copy only, or it holds the last live copy of some unit).  A live node
 * that fails its header write meanwhile is marked failed as well, if
 * every unit keeps a copy without it; else the header write's error is
 * returned.  Also called, with any @err, for a node that is failed
 * already, to make sure the marking is written.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_mark_failed(BlockDriverState *bs, uint32_t node, int err)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t bit = UINT64_C(1) << node;
    Error *local_err = NULL;
    int ret;

    if (qatomic_read(&s->failed_durable) & bit) {
        return 0;
    }
    if (s->geo.copies == 1) {
        return err;
    }

    QEMU_LOCK_GUARD(&s->health_lock);
    if (s->failed_durable & bit) {
        return 0;
    }
    if (!(s->failed & bit)) {
        g_autofree char *why = NULL;

        if (stripe_geometry_lost_unit(&s->geo, s->failed | bit, NULL)) {
            trace_stripe_mark_failed_refused(bs, node, err);
            return err;
        }
        qatomic_set(&s->failed, s->failed | bit);
        why = g_strdup_printf("(%s)", strerror(-err));
        stripe_report_failed(s, node, why);
    }
    s->generation++;
    trace_stripe_mark_failed(bs, node, err, s->generation);
    ret = stripe_co_commit_generation(bs, &local_err);
    if (ret < 0) {
        error_report_err(local_err);
    }
    return ret;
}

/*
 * Node @node holds all its copies again (rebuilt): mark it live.  Its own
 * header is written first, so that a crash in between leaves it newer
 * than the headers that still list it, which then no longer count
 * (stripe_assemble()).
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_mark_live(BlockDriverState *bs, uint32_t node, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t bit = UINT64_C(1) << node;
    StripeHeader h;
    int ret;

    QEMU_LOCK_GUARD(&s->health_lock);
    qatomic_set(&s->failed_durable, s->failed_durable & ~bit);
    qatomic_set(&s->failed, s->failed & ~bit);
    s->generation++;
    stripe_header_for_node(s, node, &h);
    ret = stripe_co_write_header(s->nodes[node], &h, errp);
    if (ret < 0) {
        /* still listed as failed in the others' headers: stays failed */
        qatomic_set(&s->failed, s->failed | bit);
        qatomic_set(&s->failed_durable, s->failed_durable | bit);
        return ret;
    }
    s->stale[node] = false;
    return stripe_co_commit_generation(bs, errp);
}
