/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": the node headers on the QEMU side.  Reading and
 * assembling them at open, writing them (resize, and growing for a write
 * past the end), and qemu-img check.
 *
 * Headers are written only by create, resize, growth and check -r; never
 * by open.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qapi/error.h"
#include "stripe.h"
#include "trace.h"

static char *stripe_node_desc(BdrvChild *child, uint32_t pos) GRAPH_RDLOCK;

/* "node 2 (iscsi://...)": how errors name a node given by the user. */
static char *stripe_node_desc(BdrvChild *child, uint32_t pos)
{
    bdrv_refresh_filename(child->bs);
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

int GRAPH_RDLOCK stripe_assemble_nodes(BlockDriverState *bs,
                                       BdrvChild **given, uint32_t count,
                                       Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    g_autofree StripeHeader *hdrs = g_new(StripeHeader, count);
    g_autofree uint64_t *lens = g_new(uint64_t, count);
    g_autofree char *msg = NULL;
    StripeAssembly as;
    int errnode;
    uint32_t i;
    int ret;

    for (i = 0; i < count; i++) {
        ret = stripe_read_header(given[i], i, &hdrs[i], errp);
        if (ret < 0) {
            return ret;
        }
        lens[i] = bdrv_getlength(given[i]->bs);
    }
    if (!stripe_assemble(hdrs, lens, count, &as, &errnode, &msg)) {
        if (errnode >= 0) {
            g_autofree char *desc = stripe_node_desc(given[errnode],
                                                     errnode);
            error_setg(errp, "stripe: %s: %s", desc, msg);
        } else {
            error_setg(errp, "stripe: %s", msg);
        }
        return -EINVAL;
    }

    s->geo = as.geo;
    memcpy(s->uuid, as.uuid, sizeof(s->uuid));
    s->generation = as.generation;
    s->node_count = count;
    s->nodes = g_new(BdrvChild *, count);
    s->given_pos = g_new(uint32_t, count);
    s->stale = g_new(bool, count);
    for (i = 0; i < count; i++) {
        s->nodes[i] = given[as.order[i]];
        s->given_pos[i] = as.order[i];
        s->stale[i] = as.stale[i];
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
                        PRIu64 ", older than %" PRIu64 " (a resize was cut "
                        "off); run 'qemu-img check -r all' to repair it",
                        as.order[i], s->nodes[i]->bs->filename,
                        hdrs[as.order[i]].generation, s->generation);
        }
    }
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
    g_autofree StripeHeader *hdrs = g_new(StripeHeader, s->node_count);
    g_autofree uint64_t *lens = g_new(uint64_t, s->node_count);
    g_autofree char *msg = NULL;
    StripeAssembly as;
    bool same;
    int errnode;
    uint32_t i;
    int ret;

    for (i = 0; i < s->node_count; i++) {
        ret = stripe_read_header(s->nodes[i], s->given_pos[i], &hdrs[i],
                                 errp);
        if (ret < 0) {
            return ret;
        }
        lens[i] = bdrv_co_getlength(s->nodes[i]->bs);
    }
    if (!stripe_assemble(hdrs, lens, s->node_count, &as, &errnode, &msg)) {
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
    for (i = 0; i < s->node_count; i++) {
        s->stale[i] = as.stale[i];
    }
    if (s->cache) {
        qemu_mutex_lock(&s->cache->lock);
        sc_cache_set_disk_size(s->cache->core, as.geo.virtual_size);
        qemu_mutex_unlock(&s->cache->lock);
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
        .virtual_size = s->geo.virtual_size,
        .data_offset = s->geo.data_offset,
        .generation = s->generation,
    };
    memcpy(h->uuid, s->uuid, sizeof(h->uuid));
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
        error_setg_errno(errp, -ret, "stripe: cannot write the header of "
                         "node index %u (%s)", h->node_index,
                         child->bs->filename);
    }
    return ret;
}

/*
 * Rewrite every node's header for the current generation and a disk of
 * @size bytes, which need not be the size in use yet.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_write_all_headers(BlockDriverState *bs, uint64_t size,
                            Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeHeader h;
    uint32_t i;
    int ret;

    for (i = 0; i < s->node_count; i++) {
        stripe_header_for_node(s, i, &h);
        h.virtual_size = size;
        ret = stripe_co_write_header(s->nodes[i], &h, errp);
        if (ret < 0) {
            return ret;
        }
        s->stale[i] = false;
    }
    return 0;
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
        g_autofree char *msg = NULL;
        bool bad;

        ret = bdrv_co_pread(s->nodes[i], 0, sizeof(buf), buf, 0);
        if (ret < 0) {
            fprintf(stderr, "ERROR cannot read the header of node index %u "
                    "(%s): %s\n", i, s->nodes[i]->bs->filename,
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
                    s->nodes[i]->bs->filename, msg);
            s->stale[i] = false;
            result->corruptions_fixed++;
        } else {
            fprintf(stderr, "ERROR node index %u (%s): %s\n", i,
                    s->nodes[i]->bs->filename, msg);
            result->corruptions++;
        }
    }
    return 0;
}

/*
 * Make every node big enough for a disk of @size bytes: a node that is too
 * small is grown if it can be (a file).  @old_len, if not NULL, gets each
 * node's length from before.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_fit_nodes(BlockDriverState *bs, uint64_t size, int64_t *old_len,
                    Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeGeometry geo = s->geo;
    uint64_t needed;
    uint32_t i;
    int ret;

    geo.virtual_size = size;
    needed = stripe_node_size_needed(&geo);
    for (i = 0; i < s->node_count; i++) {
        BdrvChild *child = s->nodes[i];
        int64_t len = bdrv_co_getlength(child->bs);

        if (len < 0) {
            error_setg_errno(errp, -len, "stripe: cannot get the length of "
                             "node index %u (%s)", i, child->bs->filename);
            return len;
        }
        if (old_len) {
            old_len[i] = len;
        }
        if (len >= needed) {
            continue;
        }
        ret = bdrv_co_truncate(child, needed, false, PREALLOC_MODE_OFF, 0,
                               NULL);
        if (ret < 0) {
            error_setg(errp, "stripe: node index %u (%s) has %" PRId64
                       " bytes, size %" PRIu64 " needs %" PRIu64 " per node,"
                       " and the node cannot grow", i, child->bs->filename,
                       len, size, needed);
            return ret;
        }
    }
    return 0;
}

/*
 * Grow or shrink the virtual disk.  Growing needs room on every node: a
 * node that is too small is grown if it can be (a file), otherwise the
 * resize fails before any header changes.  The headers are then rewritten
 * with a new generation; a resize cut off between two nodes leaves a mix of
 * generations, which open resolves to the newest and check -r repairs.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_truncate(BlockDriverState *bs, int64_t offset, bool exact,
                   PreallocMode prealloc, BdrvRequestFlags flags,
                   Error **errp)
{
    BDRVStripeState *s = bs->opaque;
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
    /* The cache knows the old size: resize with nothing dirty in it. */
    if (s->cache) {
        ret = stripe_cache_co_writeback_all(bs);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot write the cache "
                             "back before resizing");
            return ret;
        }
    }

    ret = stripe_co_fit_nodes(bs, offset, NULL, errp);
    if (ret < 0) {
        return ret;
    }

    /*
     * The new area must read as zeroes before it becomes visible.  Shrinking
     * zeroes (and unmaps where the nodes can) what it cuts off, so that a
     * later grow never shows the old data again.
     */
    if ((flags & BDRV_REQ_ZERO_WRITE) && offset > old_size) {
        ret = stripe_co_rw(bs, STRIPE_OP_ZEROES, old_size, offset - old_size,
                           NULL, 0, 0);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot zero the new area");
            return ret;
        }
    } else if (offset < old_size) {
        ret = stripe_co_rw(bs, STRIPE_OP_ZEROES, offset, old_size - offset,
                           NULL, 0, BDRV_REQ_MAY_UNMAP);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot zero the area cut "
                             "off by shrinking");
            return ret;
        }
    }

    trace_stripe_resize(bs, old_size, offset);
    qatomic_set_u64(&s->geo.virtual_size, offset);
    s->generation++;
    ret = stripe_co_write_all_headers(bs, offset, errp);
    if (s->cache) {
        qemu_mutex_lock(&s->cache->lock);
        sc_cache_set_disk_size(s->cache->core, s->geo.virtual_size);
        qemu_mutex_unlock(&s->cache->lock);
    }
    return ret;
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
 *
 * The new area must read as zeroes, as it does past the end of a file.
 * Nodes grown by truncation read as zeroes there; what was on the nodes
 * before may hold old data (shrinking zeroes what it cuts off, but a
 * formatted node may have held anything) and is zeroed.
 */
int coroutine_fn GRAPH_RDLOCK stripe_co_grow(BlockDriverState *bs,
                                             uint64_t end)
{
    BDRVStripeState *s = bs->opaque;
    const uint64_t unit = s->geo.stripe_unit;
    const uint64_t row = unit * s->node_count;
    g_autofree int64_t *old_len = g_new(int64_t, s->node_count);
    uint64_t old_size, size, min_size, stale_rows = 0;
    Error *local_err = NULL;
    uint32_t i;
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

    for (i = 0; i < s->node_count; i++) {
        if (old_len[i] > s->geo.data_offset) {
            stale_rows = MAX(stale_rows,
                             DIV_ROUND_UP(old_len[i] - s->geo.data_offset,
                                          unit));
        }
    }
    if (stale_rows * row > old_size) {
        uint64_t zero_end = MIN(stale_rows * row, size);

        /* The cache may hold a page reaching past the old end: drop it. */
        if (s->cache) {
            ret = stripe_cache_co_write_around(bs, STRIPE_OP_ZEROES,
                                               old_size, zero_end - old_size,
                                               NULL, 0, 0);
        } else {
            ret = stripe_co_rw(bs, STRIPE_OP_ZEROES, old_size,
                               zero_end - old_size, NULL, 0, 0);
        }
        if (ret < 0) {
            return ret;
        }
    }

    /*
     * The new size is used only once it is in the headers: a write that
     * completes in the new area must still be there after a crash.  A
     * failure leaves the old size in use and the generation bumped, so
     * the next attempt writes a newer generation than any header that
     * made it to a node.
     */
    trace_stripe_resize(bs, old_size, size);
    s->generation++;
    ret = stripe_co_write_all_headers(bs, size, &local_err);
    if (ret < 0) {
        warn_report_err_once(local_err);
        return ret;
    }
    if (s->cache) {
        qemu_mutex_lock(&s->cache->lock);
        sc_cache_set_disk_size(s->cache->core, size);
        qemu_mutex_unlock(&s->cache->lock);
    }
    qatomic_set_u64(&s->geo.virtual_size, size);
    return 0;
}
