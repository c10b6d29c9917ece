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
    uint32_t node;
    StripeOp op;
    int64_t node_offset;
    int64_t bytes;
    QEMUIOVector qiov;          /* read and write only */
    BdrvRequestFlags flags;
    /* replicated images: what the node requests did, if asked */
    struct StripeRwOut *out;
} StripeTask;

/* What the node requests of a replicated request did. */
typedef struct StripeRwOut {
    uint64_t failed_nodes;      /* the nodes that failed a request */
    uint64_t bytes;             /* bytes the others moved */
} StripeRwOut;

/* Which copies of a piece a request uses (stripe_pick_copies()). */
typedef enum StripePick {
    STRIPE_PICK_FIRST,          /* reads: the first live copy */
    /* reads where the copies agree: the live copy least busy now */
    STRIPE_PICK_IDLEST,
    STRIPE_PICK_ALL,            /* writes: every copy */
    STRIPE_PICK_OTHERS,         /* resync: all but the first live copy */
    /* resync, comparing: copy 1 (2) unless it is the first live copy */
    STRIPE_PICK_COPY1,
    STRIPE_PICK_COPY2,
} StripePick;

/* Whether @pick leaves out the copy that reads take (a resync's source). */
static bool stripe_pick_skips_source(StripePick pick)
{
    return pick >= STRIPE_PICK_OTHERS;
}

/*
 * One node request on one child.  The caller holds the graph lock.
 * @qiov is used only for reads and writes.
 */
int coroutine_fn GRAPH_RDLOCK
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
    case STRIPE_OP_FLUSH:
        return bdrv_co_flush(child->bs);
    case STRIPE_OP_BLOCK_STATUS:
        break;
    }
    g_assert_not_reached();
}

/*
 * What a node request of a replicated image that returned @ret means: a
 * failure marks the node failed.  A write or zeroing returns 0 once the
 * node is marked, and goes on without it; a read returns the node's
 * error and must be served again by another copy: it learns of the node
 * in @failed_nodes.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_replica_result(BlockDriverState *bs, uint32_t node, StripeOp op,
                         int64_t bytes, int ret, StripeRwOut *out)
{
    BDRVStripeState *s = bs->opaque;

    if (ret >= 0 || ret == -ENOMEM) {
        if (out && ret >= 0) {
            qatomic_add(&out->bytes, bytes);
        }
        return ret;
    }
    if (out) {
        qatomic_or(&out->failed_nodes, UINT64_C(1) << node);
    }
    /* a node being resynced that fails stays failed, unwritten */
    qatomic_and(&s->resync.nodes, ~(UINT64_C(1) << node));
    if (op == STRIPE_OP_READ) {
        stripe_co_mark_failed(bs, node, ret);
        return ret;
    }
    return stripe_co_mark_failed(bs, node, ret);
}

/*
 * The node requests of one piece of a replicated image, on @count of its
 * copies at once (a read on one), or of a flush or header write on its
 * nodes, each given up on after node-timeout (stripe-deadline.c); returns
 * the first error.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_replica_requests(BlockDriverState *bs, uint32_t count,
                           const uint32_t *nodes, const int64_t *node_offsets,
                           StripeOp op, int64_t bytes, QEMUIOVector *qiov,
                           size_t qiov_offset, BdrvRequestFlags flags,
                           StripeRwOut *out)
{
    int rets[STRIPE_MAX_NODES];
    int ret = 0, err;
    uint32_t i;

    assert(count <= STRIPE_MAX_NODES);
    stripe_co_node_requests_timed(bs, count, nodes, node_offsets, op, bytes,
                                  qiov, qiov_offset, flags, rets);
    for (i = 0; i < count; i++) {
        err = stripe_co_replica_result(bs, nodes[i], op, bytes, rets[i], out);
        if (err < 0 && ret == 0) {
            ret = err;
        }
    }
    return ret;
}

/*
 * This function can count as GRAPH_RDLOCK because stripe_co_rw() holds the
 * graph lock and keeps it until all tasks of its pool have finished.
 */
static int coroutine_fn GRAPH_RDLOCK stripe_task_entry(AioTask *task)
{
    StripeTask *t = container_of(task, StripeTask, task);
    BDRVStripeState *s = t->bs->opaque;
    BdrvChild *child = s->nodes[t->node];
    int ret;

    trace_stripe_node_request(t->bs, t->op, child->bs->node_name,
                              t->node_offset, t->bytes);
    if (s->geo.copies > 1) {
        ret = stripe_co_replica_requests(t->bs, 1, &t->node,
                                         &t->node_offset, t->op, t->bytes,
                                         &t->qiov, 0, t->flags, t->out);
    } else {
        ret = stripe_node_request(child, t->op, t->node_offset, t->bytes,
                                  &t->qiov, 0, t->flags);
    }
    if (ret < 0) {
        trace_stripe_node_request_error(t->bs, t->op, child->bs->node_name,
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
 * Which copies of a piece a request uses: every copy not on a node to
 * avoid (writes), the first of those or the one whose node has the
 * fewest requests in flight (reads), or every one but the first copy not
 * on a failed node (a resync, which reads that one), or just copy 1 or 2
 * if it is not that one.  Returns how many, their numbers in @copies.
 *
 * A read goes to the least busy copy only where the write-intent bitmap
 * says that the copies agree (stripe_bitmap_copies_agree()), and to the
 * first live copy elsewhere: after a crash, the copies of a range that had
 * writes in flight may differ until they are resynced, and two reads of
 * it must not see different data.  The first copies are spread over the
 * nodes as in the single-copy layout; a node with a queue of its own
 * hands its reads to the other copies.
 */
static uint32_t stripe_pick_copies(BDRVStripeState *s, uint64_t offset,
                                   uint64_t avoid, StripePick pick,
                                   uint32_t *copies)
{
    uint64_t node_offset, failed = qatomic_read(&s->failed);
    uint32_t copy, node, n = 0;
    uint64_t busy, least = UINT64_MAX;
    bool source_seen = false;

    for (copy = 0; copy < s->geo.copies; copy++) {
        stripe_map_copy(&s->geo, offset, copy, &node, &node_offset);
        if (stripe_pick_skips_source(pick) && !source_seen &&
            !((failed >> node) & 1)) {
            source_seen = true;
            continue;
        }
        if ((avoid >> node) & 1) {
            continue;
        }
        if (pick > STRIPE_PICK_OTHERS &&
            copy != pick - STRIPE_PICK_COPY1 + 1) {
            continue;
        }
        if (pick == STRIPE_PICK_IDLEST) {
            busy = qatomic_read(&qatomic_read(&s->edges[node])->in_flight);
            if (busy < least) {
                least = busy;
                copies[0] = copy;
                n = 1;
            }
            continue;
        }
        copies[n++] = copy;
        if (pick == STRIPE_PICK_FIRST) {
            break;
        }
    }
    return n;
}

/*
 * Run @op on the range: a node request per run of pieces that are adjacent
 * on a node, all at once.  With several copies, each piece goes to the
 * copies stripe_pick_copies() chooses, never to a node in @avoid (-EIO
 * when a piece has none left); the pieces of different copies never
 * share a node request.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_rw_pieces(BlockDriverState *bs, StripeOp op, uint64_t avoid,
                    StripePick pick, int64_t offset, int64_t bytes,
                    QEMUIOVector *qiov, size_t qiov_offset,
                    BdrvRequestFlags flags, StripeRwOut *out)
{
    BDRVStripeState *s = bs->opaque;
    const uint32_t ncopies = s->geo.copies;
    const uint64_t max_req = s->max_node_request;
    g_autofree StripeChunk *chunks = NULL;
    AioTaskPool *pool;
    uint64_t node_offset, len, in_unit;
    uint32_t node, i;
    int ret = 0;

    /*
     * Fast paths: a piece within one unit, no splitting and no task pool;
     * its copies go out at once, as one group (stripe-deadline.c).
     */
    in_unit = stripe_map(&s->geo, offset, &node, &node_offset);
    if (bytes <= in_unit && bytes <= max_req) {
        uint32_t copies[STRIPE_MAX_COPIES], nodes[STRIPE_MAX_COPIES], n;
        int64_t node_offsets[STRIPE_MAX_COPIES];

        if (ncopies == 1) {
            return stripe_node_request(s->nodes[node], op, node_offset,
                                       bytes, qiov, qiov_offset, flags);
        }
        n = stripe_pick_copies(s, offset, avoid, pick, copies);
        if (!n) {
            return stripe_pick_skips_source(pick) ? 0 : -EIO;
        }
        for (i = 0; i < n; i++) {
            stripe_map_copy(&s->geo, offset, copies[i], &node, &node_offset);
            nodes[i] = node;
            node_offsets[i] = node_offset;
            trace_stripe_node_request(bs, op, s->nodes[node]->bs->node_name,
                                      node_offset, bytes);
        }
        return stripe_co_replica_requests(bs, n, nodes, node_offsets, op,
                                          bytes, qiov, qiov_offset, flags,
                                          out);
    }

    /* a chunk per node and copy: chunks[node * ncopies + copy] */
    chunks = g_new0(StripeChunk, s->node_count * ncopies);
    pool = aio_task_pool_new(STRIPE_MAX_PARALLEL);

    while (bytes > 0 && aio_task_pool_status(pool) == 0) {
        StripeChunk *piece[STRIPE_MAX_COPIES];
        uint32_t copies[STRIPE_MAX_COPIES];
        uint32_t n = 1;

        len = MIN(bytes, in_unit);
        copies[0] = 0;
        if (ncopies > 1) {
            n = stripe_pick_copies(s, offset, avoid, pick, copies);
            if (!n && stripe_pick_skips_source(pick)) {
                goto next;      /* no other copy to write */
            }
            if (!n) {
                ret = -EIO;
                break;
            }
        }
        for (i = 0; i < n; i++) {
            StripeChunk *c;

            stripe_map_copy(&s->geo, offset, copies[i], &node, &node_offset);
            c = piece[i] = &chunks[node * ncopies + copies[i]];
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
                    .node = node,
                    .op = op,
                    .node_offset = node_offset,
                    .bytes = 0,
                    .flags = flags,
                    .out = out,
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
        for (i = 0; i < n; i++) {
            StripeChunk *c = piece[i];

            if (stripe_op_has_data(op)) {
                qemu_iovec_concat(&c->task->qiov, qiov, qiov_offset, len);
            }
            c->task->bytes += len;
        }
next:
        if (stripe_op_has_data(op)) {
            qiov_offset += len;
        }
        offset += len;
        bytes -= len;
        if (bytes > 0) {
            in_unit = stripe_map(&s->geo, offset, &node, &node_offset);
        }
    }

    for (i = 0; i < s->node_count * ncopies; i++) {
        if (ret == 0 && aio_task_pool_status(pool) == 0) {
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
    ret = ret ?: aio_task_pool_status(pool);
    aio_task_pool_free(pool);
    return ret;
}

/*
 * The nodes that writes skip: the failed ones, but not those a resync is
 * bringing back.  Read after the write's bitmap marking (stripe-resync.c).
 */
static uint64_t stripe_write_skipped_nodes(BDRVStripeState *s)
{
    return qatomic_read(&s->failed) & ~qatomic_read(&s->resync.nodes);
}

/*
 * The failed nodes a write left out must be failed in the headers before
 * the write is acknowledged (stripe-health.c).  Not a node that a resync
 * brought back meanwhile: the write's region was set before it chose its
 * nodes, so that resync copied the region, after the write's end
 * (stripe_bitmap_co_lock_region()); marking it again would fail a node
 * that holds the data.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_confirm_skipped(BlockDriverState *bs, uint64_t skipped)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t node;
    int ret;

    if (bdrv_is_read_only(bs)) {
        return 0;       /* nothing was written: e.g. a flush without a node */
    }
    skipped &= qatomic_read(&s->failed) & ~qatomic_read(&s->failed_durable);
    for (node = 0; skipped; node++, skipped >>= 1) {
        if (skipped & 1) {
            ret = stripe_co_mark_failed(bs, node, -EIO);
            if (ret < 0) {
                return ret;
            }
        }
    }
    return 0;
}

/*
 * With several copies, a write, zeroing or discard goes to every live
 * copy at once (and to the nodes being resynced), once its regions are
 * marked in the write-intent bitmap; a node that fails it is marked
 * failed and the write succeeds on the others (stripe-health.c).  A read
 * is served by one copy of each piece, the first live one; when a node
 * fails it, the read is served again without that node: the guest sees
 * an error only when some piece has no copy left (the node's error).
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_rw(BlockDriverState *bs, StripeOp op, int64_t offset,
             int64_t bytes, QEMUIOVector *qiov, size_t qiov_offset,
             BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t avoid, tried = 0;
    uint32_t attempt;
    StripePick pick;
    int ret = -EIO;

    trace_stripe_co_rw(bs, op, offset, bytes);
    if (s->geo.copies == 1) {
        return stripe_co_rw_pieces(bs, op, 0, STRIPE_PICK_ALL, offset, bytes,
                                   qiov, qiov_offset, flags, NULL);
    }
    if (op != STRIPE_OP_READ) {
        ret = stripe_bitmap_co_start_write(bs, offset, bytes);
        if (ret < 0) {
            return ret;
        }
        avoid = stripe_write_skipped_nodes(s);
        ret = stripe_co_rw_pieces(bs, op, avoid, STRIPE_PICK_ALL, offset,
                                  bytes, qiov, qiov_offset, flags, NULL);
        stripe_bitmap_end_write(bs, offset, bytes);
        return ret < 0 ? ret : stripe_co_confirm_skipped(bs, avoid);
    }
    pick = stripe_bitmap_copies_agree(s, offset, bytes) ?
           STRIPE_PICK_IDLEST : STRIPE_PICK_FIRST;
    for (attempt = 0; attempt < s->geo.copies; attempt++) {
        StripeRwOut out = { 0 };
        int err;

        err = stripe_co_rw_pieces(bs, op, qatomic_read(&s->failed) | tried,
                                  pick, offset, bytes, qiov, qiov_offset,
                                  flags, &out);
        if (err >= 0) {
            return err;
        }
        /* the node's own error, not the -EIO of a piece left without */
        if (!out.failed_nodes) {
            return attempt ? ret : err;
        }
        ret = err;
        tried |= out.failed_nodes;
        trace_stripe_read_copy_failed(bs, offset, bytes, attempt, ret);
    }
    return ret;
}

/*
 * Copy 1 or 2 (@pick) of the range, where it is on a live node and not
 * the source, made equal to @qiov: read into @scratch (a copy of @qiov
 * first, so that pieces without such a copy compare equal), and written
 * only if it differs.  A node that fails the read is marked failed: its
 * regions stay set, and a later pass writes them.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_sync_live_copy(BlockDriverState *bs, StripePick pick,
                         int64_t offset, int64_t bytes, QEMUIOVector *qiov,
                         void *scratch, uint64_t *written)
{
    BDRVStripeState *s = bs->opaque;
    StripeRwOut out = { 0 };
    QEMUIOVector cmp;
    int ret;

    qemu_iovec_to_buf(qiov, 0, scratch, bytes);
    qemu_iovec_init_buf(&cmp, scratch, bytes);
    ret = stripe_co_rw_pieces(bs, STRIPE_OP_READ, qatomic_read(&s->failed),
                              pick, offset, bytes, &cmp, 0, 0, &out);
    if (ret < 0) {
        return out.failed_nodes ? 0 : ret;
    }
    if (qemu_iovec_compare(qiov, &cmp) < 0) {
        return 0;       /* equal */
    }
    trace_stripe_resync_copy_differs(bs, offset, bytes,
                                     pick - STRIPE_PICK_COPY1 + 1);
    out.bytes = 0;
    ret = stripe_co_rw_pieces(bs, STRIPE_OP_WRITE, qatomic_read(&s->failed),
                              pick, offset, bytes, qiov, 0, 0, &out);
    *written += out.bytes;
    return ret;
}

/*
 * Where a read of @offset goes, up to the end of its unit (the length
 * returned): the copy stripe_co_rw() reads, the first one not on a failed
 * node.  Block status answers with it, so that it describes exactly what
 * reads return: a failed node may hold old data, or be the stand-in of a
 * node that could not be opened.
 */
uint64_t stripe_map_read(BDRVStripeState *s, uint64_t offset, uint32_t *node,
                         uint64_t *node_offset)
{
    uint32_t copies[STRIPE_MAX_COPIES] = { 0 };

    if (s->geo.copies > 1) {
        stripe_pick_copies(s, offset, qatomic_read(&s->failed),
                           STRIPE_PICK_FIRST, copies);
    }
    return stripe_map_copy(&s->geo, offset, copies[0], node, node_offset);
}

/*
 * A resync: make every copy of the range but the one a read takes (the
 * source, in @qiov) equal to it.  The nodes being brought back get all
 * their copies written: they missed writes.  The live ones hold the
 * writes they were sent, so their copies differ from the source only
 * where a crash cut writes off: they are compared (read into @scratch,
 * as large as @qiov) and written only where they differ.  So the resync
 * after an outage writes to the returning node alone.  *@written counts
 * the bytes written.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_write_other_copies(BlockDriverState *bs, int64_t offset,
                             int64_t bytes, QEMUIOVector *qiov,
                             void *scratch, uint64_t *written)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t avoid, back = qatomic_read(&s->resync.nodes);
    StripeRwOut out = { 0 };
    uint32_t copy;
    int ret = 0;

    avoid = stripe_write_skipped_nodes(s);
    if (back) {
        ret = stripe_co_rw_pieces(bs, STRIPE_OP_WRITE, avoid | ~back,
                                  STRIPE_PICK_OTHERS, offset, bytes, qiov, 0,
                                  0, &out);
        *written += out.bytes;
    }
    QEMU_BUILD_BUG_ON(STRIPE_MAX_COPIES > 3);   /* STRIPE_PICK_COPY1, 2 */
    for (copy = 1; copy < s->geo.copies && ret >= 0; copy++) {
        ret = stripe_co_sync_live_copy(bs, STRIPE_PICK_COPY1 + copy - 1,
                                       offset, bytes, qiov, scratch,
                                       written);
    }
    return ret < 0 ? ret : stripe_co_confirm_skipped(bs, avoid);
}

/*
 * stripe_co_each_node() on a single-copy image: a task per node but
 * those in @skipped.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_each_node_pool(BlockDriverState *bs, uint64_t skipped, StripeOp op,
                         int64_t node_offset, int64_t bytes,
                         QEMUIOVector *qiov, BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;
    AioTaskPool *pool;
    uint32_t i;
    int ret;

    pool = aio_task_pool_new(s->node_count);
    for (i = 0; i < s->node_count; i++) {
        StripeTask *t;

        if ((skipped >> i) & 1) {
            continue;
        }
        t = g_new(StripeTask, 1);
        *t = (StripeTask) {
            .task.func = stripe_task_entry,
            .bs = bs,
            .node = i,
            .op = op,
            .node_offset = node_offset,
            .bytes = bytes,
            .flags = flags,
        };
        t->qiov.nalloc = -1;
        if (stripe_op_has_data(op)) {
            qemu_iovec_init(&t->qiov, qiov->niov);
            qemu_iovec_concat(&t->qiov, qiov, 0, bytes);
        }
        aio_task_pool_start_task(pool, &t->task);
    }
    aio_task_pool_wait_all(pool);
    ret = aio_task_pool_status(pool);
    aio_task_pool_free(pool);
    return ret;
}

/*
 * Run @op at the same node offset of every node, all at once; returns
 * the first error.  A replicated image uses its live nodes and those
 * being resynced (they take writes, so they take flushes too): a node
 * that fails is marked failed, and the request succeeds without it.
 * @qiov is used for writes only, and is the same for every node.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_each_node(BlockDriverState *bs, StripeOp op, int64_t node_offset,
                    int64_t bytes, QEMUIOVector *qiov,
                    BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t skipped = stripe_write_skipped_nodes(s);
    uint32_t i;
    int ret;

    if (s->node_count == 1) {
        return stripe_node_request(s->nodes[0], op, node_offset, bytes, qiov,
                                   0, flags);
    }
    if (s->geo.copies > 1) {
        uint32_t nodes[STRIPE_MAX_NODES], count = 0;
        int64_t node_offsets[STRIPE_MAX_NODES];

        for (i = 0; i < s->node_count; i++) {
            if (!((skipped >> i) & 1)) {
                nodes[count] = i;
                node_offsets[count++] = node_offset;
            }
        }
        ret = count ? stripe_co_replica_requests(bs, count, nodes,
                                                 node_offsets, op, bytes,
                                                 qiov, 0, flags, NULL) : 0;
    } else {
        ret = stripe_co_each_node_pool(bs, skipped, op, node_offset, bytes,
                                       qiov, flags);
    }
    /*
     * A node that could not be opened got no write here to miss a flush
     * or a bitmap block of: the first data write that skips it marks it.
     */
    skipped &= ~qatomic_read(&s->absent);
    return ret < 0 ? ret : stripe_co_confirm_skipped(bs, skipped);
}

/*
 * Flush every node, all at once; returns the first error.  A replicated
 * image flushes its live nodes: a node that fails the flush is marked
 * failed, and the flush succeeds without it.  Regions whose writes the
 * flush put on every copy may leave the write-intent bitmap.
 */
int coroutine_fn GRAPH_RDLOCK stripe_co_flush_nodes(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    g_autofree unsigned long *clear = NULL;
    int ret;

    trace_stripe_flush_nodes(bs, s->node_count);
    clear = stripe_bitmap_flush_begin(bs);
    ret = stripe_co_each_node(bs, STRIPE_OP_FLUSH, 0, 0, NULL, 0);
    if (ret == 0 && clear) {
        ret = stripe_bitmap_co_flush_end(bs, clear);
    }
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

/*
 * The block driver that stores a node's data: the node's own, or below
 * filters and raw format nodes (throttle, copy-on-read, raw: libvirt
 * gives a network disk under a raw node) the one of their file.  What
 * the storage takes, e.g. how many requests at once, is that driver's.
 */
static const char * GRAPH_RDLOCK
stripe_node_storage_driver(BlockDriverState *bs)
{
    int depth;

    for (depth = 0; depth < STRIPE_NODE_FILE_DEPTH; depth++) {
        BlockDriverState *below = NULL;

        if (bs->drv->is_filter) {
            below = bdrv_filter_bs(bs);
        } else if (!strcmp(bs->drv->format_name, "raw") && bs->file) {
            below = bs->file->bs;
        }
        if (!below) {
            break;
        }
        bs = below;
    }
    return bs->drv->format_name;
}

/* Whether every node's data is stored by the block driver @name. */
bool stripe_nodes_all(BDRVStripeState *s, const char *name)
{
    uint32_t i;

    for (i = 0; i < s->node_count; i++) {
        if (strcmp(stripe_node_storage_driver(s->nodes[i]->bs), name)) {
            return false;
        }
    }
    return true;
}

/*
 * The largest node request every node takes: its max_transfer, and
 * less for iSCSI nodes (see STRIPE_MAX_NODE_REQUEST), never below the
 * request alignment.
 */
uint64_t stripe_node_request_max(BDRVStripeState *s)
{
    uint64_t max_req = STRIPE_MAX_NODE_REQUEST;
    uint32_t i;

    for (i = 0; i < s->node_count; i++) {
        BlockDriverState *node = s->nodes[i]->bs;

        if (!strcmp(stripe_node_storage_driver(node), "iscsi")) {
            max_req = MIN(max_req, STRIPE_MAX_ISCSI_NODE_REQUEST);
        }
        if (node->bl.max_transfer) {
            max_req = MIN(max_req, node->bl.max_transfer);
        }
    }
    return MAX(max_req, stripe_node_alignment(s));
}
