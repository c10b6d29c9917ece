/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": changing the size of the virtual disk, by resize
 * (qemu-img resize, block_resize) and by growth for a write past the end.
 *
 * Both follow the same order, so that what a crash leaves is always an
 * image that opens with the data every completed request wrote:
 *   1. make room on every node (grow node files that can grow);
 *   2. zero what becomes visible and may hold old bytes (a grow), or what
 *      is cut off (a shrink, so that no later grow shows it again);
 *   3. write every node's header with a new generation;
 *   4. only then tell the cache and publish the new size.
 * A failure at any step leaves the old size in use.  A resize cut off
 * between two header writes leaves a mix of generations, which open
 * resolves to the newest and check -r repairs.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "stripe.h"
#include "trace.h"

/* The length of node @i, or an error naming it. */
static int64_t coroutine_fn GRAPH_RDLOCK
stripe_co_node_length(BDRVStripeState *s, uint32_t i, Error **errp)
{
    int64_t len = bdrv_co_getlength(s->nodes[i]->bs);

    if (len < 0) {
        error_setg_errno(errp, -len, "stripe: cannot get the length of "
                         "node index %u (%s)", i, stripe_node_name(s, i));
    }
    return len;
}

/*
 * Make node @i big enough for a disk of @size bytes: grow it if it is too
 * small and can grow (a file).  For a resize, and for the rebuild of a
 * failed node, which a resize left alone.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_fit_node(BlockDriverState *bs, uint32_t i, uint64_t size,
                   Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeGeometry geo = s->geo;
    uint64_t needed;
    int64_t len;
    int ret;

    geo.virtual_size = size;
    needed = stripe_node_size_needed(&geo);
    len = stripe_co_node_length(s, i, errp);
    if (len < 0) {
        return len;
    }
    if (len >= needed) {
        return 0;
    }
    ret = bdrv_co_truncate(s->nodes[i], needed, false, PREALLOC_MODE_OFF, 0,
                           NULL);
    if (ret < 0) {
        error_setg(errp, "stripe: node index %u (%s) has %" PRId64
                   " bytes, size %" PRIu64 " needs %" PRIu64 " per node,"
                   " and the node cannot grow", i, stripe_node_name(s, i),
                   len, size, needed);
    }
    return ret;
}

/*
 * Make every live node big enough for a disk of @size bytes.  @old_len,
 * if not NULL, gets each node's length from before.  A failed node is
 * left alone: its rebuild makes it fit.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_fit_nodes(BlockDriverState *bs, uint64_t size, int64_t *old_len,
                    Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t i;
    int ret;

    if (s->geo.bitmap_region) {
        g_autofree char *msg = stripe_bitmap_check(size, s->geo.bitmap_region,
                                                   s->geo.bitmap_offset,
                                                   s->geo.data_offset);
        if (msg) {
            error_setg(errp, "stripe: %s", msg);
            return -EFBIG;
        }
        /* before anything writes past the old end, which it marks */
        stripe_bitmap_co_grow(bs, size);
    }

    /* All of them before any node grows. */
    for (i = 0; i < s->node_count; i++) {
        int64_t len;

        if (stripe_node_failed(s, i)) {
            continue;
        }
        len = stripe_co_node_length(s, i, errp);
        if (len < 0) {
            return len;
        }
        if (old_len) {
            old_len[i] = len;
        }
    }
    for (i = 0; i < s->node_count; i++) {
        if (stripe_node_failed(s, i)) {
            continue;
        }
        ret = stripe_co_fit_node(bs, i, size, errp);
        if (ret < 0) {
            return ret;
        }
    }
    return 0;
}

/*
 * Zero [offset, offset + bytes) of the disk, around the cache when there
 * is one (it may hold a page reaching past the old end).
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_zero_range(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                     BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;

    if (s->cache) {
        return stripe_cache_co_write_around(bs, STRIPE_OP_ZEROES, offset,
                                            bytes, NULL, 0, flags);
    }
    return stripe_co_rw(bs, STRIPE_OP_ZEROES, offset, bytes, NULL, 0, flags);
}

/*
 * Zero what growing from @old_size to @new_size exposes.  With @all, the
 * whole new area (BDRV_REQ_ZERO_WRITE asks for it); otherwise the part the
 * nodes held before (@old_len, their lengths before stripe_co_fit_nodes()):
 * a node grown by truncation reads zeroes past its old end, but below it a
 * node may hold anything (data from before a shrink, a reused LUN, another
 * image), and the guest must read zeroes there, as past the end of a file.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_zero_exposed(BlockDriverState *bs, uint64_t old_size,
                       uint64_t new_size, const int64_t *old_len, bool all)
{
    BDRVStripeState *s = bs->opaque;
    const uint64_t unit = s->geo.stripe_unit;
    uint64_t rows = 0, zero_end;
    uint32_t i;

    for (i = 0; i < s->node_count; i++) {
        if (old_len[i] > s->geo.data_offset) {
            /* a row takes a unit slot per copy on every node */
            uint64_t slots = DIV_ROUND_UP(old_len[i] - s->geo.data_offset,
                                          unit);

            rows = MAX(rows, DIV_ROUND_UP(slots, s->geo.copies));
        }
    }
    zero_end = all ? new_size
                   : MIN(new_size, rows * unit * s->node_count);
    if (zero_end <= old_size) {
        return 0;
    }
    return stripe_co_zero_range(bs, old_size, zero_end - old_size, 0);
}

/*
 * The size is on the nodes: the cache and every request may use it.  A
 * smaller cache size drops what the cache held past the end.
 */
static void stripe_publish_size(BlockDriverState *bs, uint64_t size)
{
    BDRVStripeState *s = bs->opaque;

    if (s->cache) {
        stripe_cache_lock(s->cache);
        sc_cache_set_disk_size(s->cache->core, size);
        stripe_cache_unlock(s->cache);
    }
    qatomic_set_u64(&s->geo.virtual_size, size);
}

/* Grow or shrink the virtual disk to @offset bytes (see the top). */
int coroutine_fn GRAPH_RDLOCK
stripe_co_truncate(BlockDriverState *bs, int64_t offset, bool exact,
                   PreallocMode prealloc, BdrvRequestFlags flags,
                   Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    g_autofree int64_t *old_len = g_new0(int64_t, s->node_count);
    uint64_t old_size;
    int ret;

    if (prealloc != PREALLOC_MODE_OFF) {
        error_setg(errp, "stripe: unsupported preallocation mode '%s'",
                   PreallocMode_str(prealloc));
        return -ENOTSUP;
    }
    if (offset < 0 || offset % BDRV_SECTOR_SIZE ||
        offset > STRIPE_MAX_SIZE) {
        error_setg(errp, "stripe: invalid size %" PRId64 ": it must be a "
                   "multiple of 512 and at most %" PRIu64, offset,
                   STRIPE_MAX_SIZE);
        return -EINVAL;
    }
    QEMU_LOCK_GUARD(&s->resize_lock);
    old_size = s->geo.virtual_size;
    if (offset == old_size) {
        return 0;
    }
    /*
     * Resize with nothing dirty in the cache.  An internal flush: a
     * writeback error that the guest has not seen yet stays for it.
     */
    if (s->cache) {
        ret = stripe_cache_co_writeback_all(bs);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot write the cache "
                             "back before resizing");
            return ret;
        }
    }

    ret = stripe_co_fit_nodes(bs, offset, old_len, errp);
    if (ret < 0) {
        return ret;
    }

    if (offset > old_size) {
        ret = stripe_co_zero_exposed(bs, old_size, offset, old_len,
                                     flags & BDRV_REQ_ZERO_WRITE);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot zero the new area");
            return ret;
        }
    } else {
        ret = stripe_co_zero_range(bs, offset, old_size - offset,
                                   BDRV_REQ_MAY_UNMAP);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot zero the area cut "
                             "off by shrinking");
            return ret;
        }
    }

    trace_stripe_resize(bs, old_size, offset);
    ret = stripe_co_write_all_headers(bs, offset, errp);
    if (ret < 0) {
        return ret;
    }
    stripe_publish_size(bs, offset);
    return 0;
}

/*
 * Grow the disk for a write that ends at @end, past its end.  Formats such
 * as qcow2 grow their image file by writing past its end, which the block
 * layer allows to parents that hold BLK_PERM_RESIZE (qcow2 opens its file
 * with BDRV_O_RESIZE); bdrv_co_write_req_finish() then moves
 * bs->total_sectors to the end of the write, as a file's length would.
 *
 * Every growth rewrites all headers, so the disk grows by whole stripe
 * rows and by at least an eighth of its size: the headers, and the size a
 * later open sees, may be ahead of the end of the last write.  A node that
 * cannot hold that much gets only the rows @end needs (rounding @end up to
 * a row needs no more room on any node); a node that cannot grow far
 * enough (an iSCSI LUN) fails the write with ENOSPC.
 */
int coroutine_fn GRAPH_RDLOCK stripe_co_grow(BlockDriverState *bs,
                                             uint64_t end)
{
    BDRVStripeState *s = bs->opaque;
    const uint64_t row = s->geo.stripe_unit * s->node_count;
    g_autofree int64_t *old_len = g_new0(int64_t, s->node_count);
    uint64_t old_size, size, min_size;
    Error *local_err = NULL;
    int ret;

    if (end > STRIPE_MAX_SIZE) {
        return -EFBIG;
    }
    QEMU_LOCK_GUARD(&s->resize_lock);
    old_size = s->geo.virtual_size;
    if (end <= old_size) {
        return 0;               /* another request grew it meanwhile */
    }

    min_size = MIN(QEMU_ALIGN_UP(end, row), STRIPE_MAX_SIZE);
    size = MIN(QEMU_ALIGN_UP(MAX(end, old_size + old_size / 8), row),
               STRIPE_MAX_SIZE);
    ret = stripe_co_fit_nodes(bs, size, old_len, &local_err);
    if (ret < 0 && size > min_size) {
        error_free(local_err);
        local_err = NULL;
        size = min_size;
        ret = stripe_co_fit_nodes(bs, size, NULL, &local_err);
    }
    if (ret < 0) {
        warn_report_err_once(local_err);
        return -ENOSPC;
    }

    ret = stripe_co_zero_exposed(bs, old_size, size, old_len, false);
    if (ret < 0) {
        return ret;
    }

    /*
     * The new size is used only once it is in the headers: a write that
     * completes in the new area must still be there after a crash.  A
     * failure leaves the old size in use (and the generation bumped,
     * see stripe_co_write_all_headers()).
     */
    trace_stripe_resize(bs, old_size, size);
    ret = stripe_co_write_all_headers(bs, size, &local_err);
    if (ret < 0) {
        warn_report_err_once(local_err);
        return ret;
    }
    stripe_publish_size(bs, size);
    return 0;
}
