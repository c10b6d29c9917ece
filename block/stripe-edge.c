/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": putting another node in a node index's place.
 *
 * stripe-node-replace swaps the node under an index.  A node that owes
 * nothing is detached at once (bdrv_replace_child_bs(), which drains it).
 * A node that still owes answers to requests given up on cannot be: the
 * drain waits for them, and a target gone for good never answers (QEMU's
 * iscsi driver keeps its requests across reconnects).  Its edge is parked
 * instead: the new node gets an edge of its own, the old one stays
 * attached under another name and no request is sent to it any more.  A
 * parked edge is detached once its node has answered everything, in a
 * bottom half of the main loop (graph changes happen there); close waits
 * for those answers, as it waits for any node's.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "block/aio-wait.h"
#include "block/graph-lock.h"
#include "qapi/error.h"
#include "stripe.h"
#include "trace.h"

/*
 * Detach the parked edges whose node has answered every request.  The
 * edges themselves stay until close: a late answer may still read one.
 */
static void stripe_unpark_answered(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    StripeNodeEdge *edge;

    GLOBAL_STATE_CODE();
    QSLIST_FOREACH(edge, &s->parked, next) {
        BdrvChild *child = edge->child;

        if (!child || qatomic_read(&edge->outstanding)) {
            continue;
        }
        /* first: the wait for the write lock may run this again */
        edge->child = NULL;
        trace_stripe_node_unparked(bs, child->bs->node_name);
        bdrv_graph_wrlock();
        bdrv_unref_child(bs, child);
        bdrv_graph_wrunlock();
    }
}

static void stripe_unpark_bh(void *opaque)
{
    BlockDriverState *bs = opaque;
    BDRVStripeState *s = bs->opaque;

    stripe_unpark_answered(bs);
    qatomic_dec(&s->late_answers);
    aio_wait_kick();
}

/*
 * A request given up on over @edge has been answered, late: its last
 * access to the image.  The image stays until @late_answers drops
 * (stripe_wait_outstanding()), and so do its edges, so that the answer
 * may look at whether its edge was parked after counting itself off.
 * Either it sees the edge parked and the bottom half detaches it, or
 * the replace that parked it sees that it owes nothing (both order the
 * count before the flag, the flag before the count).
 */
void stripe_edge_answered(BlockDriverState *bs, StripeNodeEdge *edge)
{
    BDRVStripeState *s = bs->opaque;

    qatomic_inc(&s->late_answers);
    qatomic_dec(&edge->outstanding);
    if (qatomic_read(&edge->parked)) {
        aio_bh_schedule_oneshot(qemu_get_aio_context(), stripe_unpark_bh,
                                bs);
        return;
    }
    qatomic_dec(&s->late_answers);
    aio_wait_kick();
}

/*
 * The old edge stays attached, renamed so that the new node takes the
 * name the index's options use.  The image is drained: no request reads
 * the index's edge meanwhile.
 */
static int stripe_park_node(BlockDriverState *bs, uint32_t index,
                            BlockDriverState *new_bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeNodeEdge *old = s->edges[index];
    StripeNodeEdge *edge = g_new0(StripeNodeEdge, 1);
    char *name = old->child->name;

    edge->index = index;

    bdrv_graph_wrlock();
    old->child->name = g_strdup_printf("parked.%u", s->parked_count);
    /* bdrv_attach_child() takes over this reference */
    bdrv_ref(new_bs);
    edge->child = bdrv_attach_child(bs, new_bs, name, &stripe_node_class,
                                    old->child->role, errp);
    if (edge->child) {
        trace_stripe_node_parked(bs, index, old->child->bs->node_name,
                                 old->child->name,
                                 qatomic_read(&old->outstanding));
        s->parked_count++;
        QSLIST_INSERT_HEAD(&s->parked, old, next);
        qatomic_set(&old->parked, true);
        qatomic_set(&s->nodes[index], edge->child);
        qatomic_set(&s->edges[index], edge);
        g_free(name);
    } else {
        g_free(old->child->name);
        old->child->name = name;
        g_free(edge);
    }
    bdrv_graph_wrunlock();
    return s->edges[index] == old ? -1 : 0;
}

/*
 * Put @new_bs in node index @index's place (@new_bs in @bs's AioContext,
 * with no parent).  The failed node is detached, or parked when it still
 * owes answers.
 */
int stripe_swap_node(BlockDriverState *bs, uint32_t index,
                     BlockDriverState *new_bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    int ret;

    GLOBAL_STATE_CODE();
    /*
     * Drained, the image sends nothing more to the failed node (its
     * probes count as in flight on the image): whether it owes answers
     * can only go from yes to no from here on.
     */
    bdrv_drained_begin(bs);
    if (stripe_node_outstanding(s, index)) {
        ret = stripe_park_node(bs, index, new_bs, errp);
        /* answered since, not seeing the edge parked yet */
        smp_mb();
        stripe_unpark_answered(bs);
    } else {
        ret = bdrv_replace_child_bs(s->nodes[index], new_bs, errp);
    }
    bdrv_drained_end(bs);
    return ret;
}
