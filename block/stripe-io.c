/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": splitting guest requests into node requests and
 * running them in parallel.
 *
 * A request is cut at stripe-unit boundaries.  The pieces that land on one
 * node at consecutive node offsets (the same unit column in consecutive
 * rows) are merged into one node request, whose I/O vector is built from
 * slices of the guest's (no data is copied), up to max_node_request bytes.
 * All node requests of a guest request run at once, bounded by an
 * AioTaskPool; the first error wins.  With several copies of every unit
 * (docs/layout.md) writes go to all of them and reads to one.
 */

#include "qemu/osdep.h"
#include "block/aio_task.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qemu/iov.h"
#include "stripe.h"
#include "trace.h"

typedef struct StripeTask {
    AioTask task;               /* must be first: the pool frees it */
    BlockDriverState *bs;
    BdrvChild *child;
    StripeOp op;
    int64_t node_offset;
    int64_t bytes;
    QEMUIOVector qiov;          /* read and write only */
    BdrvRequestFlags flags;
} StripeTask;

/*
 * One node request on one child.  The caller holds the graph lock.
 * @qiov is used only for reads and writes.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_node_request(BdrvChild *child, StripeOp op, int64_t node_offset,
                    int64_t bytes, QEMUIOVector *qiov, size_t qiov_offset,
                    BdrvRequestFlags flags)
{
    switch (op) {
    case STRIPE_OP_READ:
        return bdrv_co_preadv_part(child, node_offset, bytes, qiov,
                                   qiov_offset, flags);
    case STRIPE_OP_WRITE:
        return bdrv_co_pwritev_part(child, node_offset, bytes, qiov,
                                    qiov_offset, flags);
    case STRIPE_OP_ZEROES:
        return bdrv_co_pwrite_zeroes(child, node_offset, bytes, flags);
    case STRIPE_OP_DISCARD:
        return bdrv_co_pdiscard(child, node_offset, bytes);
    }
    g_assert_not_reached();
}

/*
 * This function can count as GRAPH_RDLOCK because stripe_co_rw() holds the
 * graph lock and keeps it until all tasks of its pool have finished.
 */
static int coroutine_fn GRAPH_RDLOCK stripe_task_entry(AioTask *task)
{
    StripeTask *t = container_of(task, StripeTask, task);
    int ret;

    trace_stripe_node_request(t->bs, t->op, t->child->bs->node_name,
                              t->node_offset, t->bytes);
    ret = stripe_node_request(t->child, t->op, t->node_offset, t->bytes,
                              &t->qiov, 0, t->flags);
    if (ret < 0) {
        trace_stripe_node_request_error(t->bs, t->op,
                                        t->child->bs->node_name,
                                        t->node_offset, t->bytes, ret);
    }
    if (t->qiov.nalloc >= 0) {
        qemu_iovec_destroy(&t->qiov);
    }
    return ret;
}

static bool stripe_op_has_data(StripeOp op)
{
    return op == STRIPE_OP_READ || op == STRIPE_OP_WRITE;
}

/* A node request being collected from consecutive pieces. */
typedef struct StripeChunk {
    StripeTask *task;           /* NULL while nothing is collected */
} StripeChunk;

static void coroutine_fn stripe_chunk_submit(AioTaskPool *pool,
                                             StripeChunk *c)
{
    if (c->task) {
        aio_task_pool_start_task(pool, &c->task->task);
        c->task = NULL;
    }
}

/*
 * Run @op on @ncopies copies of the range, from copy @first on: a node
 * request per run of pieces that are adjacent on a node, all at once.
 * The pieces of different copies never share a node request.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_rw_copies(BlockDriverState *bs, StripeOp op, uint32_t first,
                    uint32_t ncopies, int64_t offset, int64_t bytes,
                    QEMUIOVector *qiov, size_t qiov_offset,
                    BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;
    const uint64_t max_req = s->max_node_request;
    g_autofree StripeChunk *chunks = NULL;
    AioTaskPool *pool;
    uint64_t node_offset, len, in_unit;
    uint32_t node, copy, i;
    int ret;

    /* Fast path: the request stays on one node and needs no splitting. */
    in_unit = stripe_map_copy(&s->geo, offset, first, &node, &node_offset);
    if (ncopies == 1 && bytes <= in_unit && bytes <= max_req) {
        return stripe_node_request(s->nodes[node], op, node_offset, bytes,
                                   qiov, qiov_offset, flags);
    }

    /* a chunk per node and copy: chunks[node * ncopies + copy - first] */
    chunks = g_new0(StripeChunk, s->node_count * ncopies);
    pool = aio_task_pool_new(STRIPE_MAX_PARALLEL);

    while (bytes > 0 && aio_task_pool_status(pool) == 0) {
        StripeChunk *piece[STRIPE_MAX_COPIES];

        len = MIN(bytes, in_unit);
        for (copy = first; copy < first + ncopies; copy++) {
            StripeChunk *c;

            stripe_map_copy(&s->geo, offset, copy, &node, &node_offset);
            c = piece[copy - first] = &chunks[node * ncopies + copy - first];
            /* Continue the collected request only if this piece follows. */
            if (c->task && (c->task->node_offset + c->task->bytes !=
                            node_offset || c->task->bytes >= max_req)) {
                stripe_chunk_submit(pool, c);
            }
            if (!c->task) {
                StripeTask *t = g_new(StripeTask, 1);

                *t = (StripeTask) {
                    .task.func = stripe_task_entry,
                    .bs = bs,
                    .child = s->nodes[node],
                    .op = op,
                    .node_offset = node_offset,
                    .bytes = 0,
                    .flags = flags,
                };
                t->qiov.nalloc = -1;
                if (stripe_op_has_data(op)) {
                    qemu_iovec_init(&t->qiov, 4);
                }
                c->task = t;
            }
            len = MIN(len, max_req - c->task->bytes);
        }
        /* the same bytes of the guest's buffer go to every copy */
        for (i = 0; i < ncopies; i++) {
            StripeChunk *c = piece[i];

            if (stripe_op_has_data(op)) {
                qemu_iovec_concat(&c->task->qiov, qiov, qiov_offset, len);
            }
            c->task->bytes += len;
        }
        if (stripe_op_has_data(op)) {
            qiov_offset += len;
        }
        offset += len;
        bytes -= len;
        if (bytes > 0) {
            in_unit = stripe_map_copy(&s->geo, offset, first, &node,
                                      &node_offset);
        }
    }

    for (i = 0; i < s->node_count * ncopies; i++) {
        if (aio_task_pool_status(pool) == 0) {
            stripe_chunk_submit(pool, &chunks[i]);
        } else if (chunks[i].task) {
            /* A node failed already: do not start more requests. */
            if (chunks[i].task->qiov.nalloc >= 0) {
                qemu_iovec_destroy(&chunks[i].task->qiov);
            }
            g_free(chunks[i].task);
        }
    }
    aio_task_pool_wait_all(pool);
    ret = aio_task_pool_status(pool);
    aio_task_pool_free(pool);
    return ret;
}

/*
 * With several copies, a write, zeroing or discard goes to every copy at
 * once and succeeds when all do; a read is served by one copy, and if
 * that fails, by the next one: the guest sees an error only when every
 * copy failed (the last copy's).
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_rw(BlockDriverState *bs, StripeOp op, int64_t offset,
             int64_t bytes, QEMUIOVector *qiov, size_t qiov_offset,
             BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t copy;
    int ret = -EIO;

    trace_stripe_co_rw(bs, op, offset, bytes);
    if (op != STRIPE_OP_READ) {
        return stripe_co_rw_copies(bs, op, 0, s->geo.copies, offset, bytes,
                                   qiov, qiov_offset, flags);
    }
    for (copy = 0; copy < s->geo.copies; copy++) {
        ret = stripe_co_rw_copies(bs, op, copy, 1, offset, bytes, qiov,
                                  qiov_offset, flags);
        if (ret >= 0) {
            break;
        }
        trace_stripe_read_copy_failed(bs, offset, bytes, copy, ret);
    }
    return ret;
}

typedef struct StripeFlushTask {
    AioTask task;
    BlockDriverState *bs;
    BdrvChild *child;
} StripeFlushTask;

/*
 * This function can count as GRAPH_RDLOCK because stripe_co_flush_nodes()
 * holds the graph lock until all tasks of its pool have finished.
 */
static int coroutine_fn GRAPH_RDLOCK stripe_flush_task_entry(AioTask *task)
{
    StripeFlushTask *t = container_of(task, StripeFlushTask, task);
    int ret = bdrv_co_flush(t->child->bs);

    if (ret < 0) {
        trace_stripe_node_flush_error(t->bs, t->child->bs->node_name, ret);
    }
    return ret;
}

/* Flush every node, all at once; returns the first error. */
int coroutine_fn GRAPH_RDLOCK stripe_co_flush_nodes(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    AioTaskPool *pool;
    uint32_t i;
    int ret;

    trace_stripe_flush_nodes(bs, s->node_count);
    if (s->node_count == 1) {
        return bdrv_co_flush(s->nodes[0]->bs);
    }
    pool = aio_task_pool_new(s->node_count);
    for (i = 0; i < s->node_count; i++) {
        StripeFlushTask *t = g_new(StripeFlushTask, 1);

        *t = (StripeFlushTask) {
            .task.func = stripe_flush_task_entry,
            .bs = bs,
            .child = s->nodes[i],
        };
        aio_task_pool_start_task(pool, &t->task);
    }
    aio_task_pool_wait_all(pool);
    ret = aio_task_pool_status(pool);
    aio_task_pool_free(pool);
    return ret;
}

/* The largest request alignment of the nodes: requests must satisfy all. */
uint32_t stripe_node_alignment(BDRVStripeState *s)
{
    uint32_t align = BDRV_SECTOR_SIZE, i;

    for (i = 0; i < s->node_count; i++) {
        align = MAX(align, s->nodes[i]->bs->bl.request_alignment);
    }
    return align;
}
