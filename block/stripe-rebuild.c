/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": rebuilding a failed node of a replicated image.
 *
 * Every stripe unit that has a copy on the node is read from a live copy
 * and written to the node; then the node is marked live again.  This is
 * the offline repair of qemu-img check -r all: nothing else uses the disk
 * meanwhile, so the copies cannot change under it.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qapi/error.h"
#include "qemu/memalign.h"
#include "stripe.h"
#include "trace.h"

/* Bytes copied at a time: a unit, or a part of a large one. */
#define STRIPE_REBUILD_CHUNK    (1024 * 1024)

/* A copy of unit @unit that is not on a failed node (there always is). */
static void stripe_live_copy(BDRVStripeState *s, uint64_t unit,
                             uint32_t *node, uint64_t *node_offset)
{
    uint32_t copy;

    for (copy = 0; copy < s->geo.copies; copy++) {
        stripe_map_copy(&s->geo, unit << s->geo.unit_shift, copy, node,
                        node_offset);
        if (!stripe_node_failed(s, *node)) {
            return;
        }
    }
    g_assert_not_reached();
}

/* Copy the units with a copy on @node, @chunk bytes at a time. */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_rebuild_units(BlockDriverState *bs, uint32_t node, void *buf,
                        uint64_t chunk, uint64_t *units, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    const uint64_t unit_bytes = s->geo.stripe_unit;
    uint64_t nunits = DIV_ROUND_UP(s->geo.virtual_size, unit_bytes);
    uint64_t k, done, from_offset, to_offset;
    uint32_t copy, from, to;
    int ret;

    for (k = 0; k < nunits; k++) {
        for (copy = 0; copy < s->geo.copies; copy++) {
            stripe_map_copy(&s->geo, k << s->geo.unit_shift, copy, &to,
                            &to_offset);
            if (to == node) {
                break;
            }
        }
        if (copy == s->geo.copies) {
            continue;
        }
        stripe_live_copy(s, k, &from, &from_offset);
        for (done = 0; done < unit_bytes; done += chunk) {
            ret = bdrv_co_pread(s->nodes[from], from_offset + done, chunk,
                                buf, 0);
            if (ret < 0) {
                error_setg_errno(errp, -ret, "stripe: cannot read stripe "
                                 "unit %" PRIu64 " from node index %u (%s)",
                                 k, from, stripe_node_name(s, from));
                return ret;
            }
            ret = bdrv_co_pwrite(s->nodes[node], to_offset + done, chunk,
                                 buf, 0);
            if (ret < 0) {
                error_setg_errno(errp, -ret, "stripe: cannot write stripe "
                                 "unit %" PRIu64 " to node index %u (%s)",
                                 k, node, stripe_node_name(s, node));
                return ret;
            }
        }
        (*units)++;
    }
    return 0;
}

/*
 * Copy every unit with a copy on the failed node @node from a live copy,
 * then mark the node live.  *@units counts the units copied.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_rebuild_node(BlockDriverState *bs, uint32_t node, uint64_t *units,
                       Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    const uint64_t chunk = MIN(s->geo.stripe_unit, STRIPE_REBUILD_CHUNK);
    void *buf;
    int ret;

    assert(stripe_node_failed(s, node));
    *units = 0;
    ret = stripe_co_fit_node(bs, node, s->geo.virtual_size, errp);
    if (ret < 0) {
        return ret;
    }
    buf = qemu_try_blockalign(s->nodes[node]->bs, chunk);
    if (!buf) {
        error_setg(errp, "stripe: no memory to rebuild node index %u", node);
        return -ENOMEM;
    }
    ret = stripe_co_rebuild_units(bs, node, buf, chunk, units, errp);
    qemu_vfree(buf);
    if (ret < 0) {
        return ret;
    }
    ret = bdrv_co_flush(s->nodes[node]->bs);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "stripe: cannot flush node index %u "
                         "(%s)", node, stripe_node_name(s, node));
        return ret;
    }
    trace_stripe_rebuilt(bs, node, *units);
    return stripe_co_mark_live(bs, node, errp);
}
