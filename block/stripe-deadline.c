/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": node requests that give up after node-timeout.
 *
 * A node that does not answer must not hang a replicated disk: the other
 * copies can serve.  Node drivers do not always give up by themselves:
 * QEMU's iscsi driver resends a request after every reconnect, and when
 * the target is gone it reconnects forever (libiscsi's own timeout does
 * not cover requests waiting for a reconnect).  So every node request
 * runs in a coroutine of its own, on a buffer of its own, and its caller
 * waits for it at most node-timeout.  Then it gives up (-ETIMEDOUT, and
 * the node is marked failed); the request goes on alone until the node
 * answers, with its buffer (the caller's may be reused at once), and
 * counts as outstanding on its node.  Its late result is dropped: the
 * node is failed by then and is neither read nor written until it is
 * resynced.
 *
 * A request given up on no longer holds the graph lock.  A reader held
 * until a hung node answers would hold every graph change of the process
 * that long (a blockdev-add anywhere, a block job's completion), and
 * forever for a target gone for good.  Its BdrvChild stays
 * without it: the request is in flight on the node (and on any filter
 * between), and QEMU changes a node's edges only with the node drained,
 * which waits for its requests.  Detaching the node therefore still waits
 * for it: close does.  stripe-node-replace parks the edge instead
 * (StripeNodeEdge): each request keeps the edge it began on, and counts
 * as outstanding there, so the node put in its place owes nothing.
 *
 * Block status queries of a replicated image are given up on the same
 * way (stripe_co_replica_block_status()): consumers that read the disk
 * ask before they read, and must not wait longer for the answer than
 * for the data.
 *
 * The copies of one write are one group: one buffer holds their data,
 * and one timer bounds them all, so that a second copy costs little
 * more than its own node request (bench/replica-bench --only quorum
 * compares it with QEMU's quorum driver).  The copy to and from the own
 * buffer is the price of giving up safely; node-timeout=0 avoids it and
 * waits for the nodes forever.
 */

#include "qemu/osdep.h"
#include "block/aio-wait.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "block/graph-lock.h"
#include "qemu/coroutine.h"
#include "qemu/iov.h"
#include "stripe.h"
#include "trace.h"

typedef struct StripeNodeGroup StripeNodeGroup;

/* One node request of a group. */
typedef struct StripeGroupMember {
    StripeNodeGroup *group;
    uint32_t node;
    StripeNodeEdge *edge;   /* node's edge as the group began */
    int64_t node_offset;
    int ret;
    bool done;
    bool holds_graph;       /* its share of the graph lock, until given up */
} StripeGroupMember;

/*
 * The node requests of one caller: the same operation, length and data
 * on several nodes.  Only the caller's thread touches it: node drivers
 * wake the members' coroutines there.
 */
struct StripeNodeGroup {
    BlockDriverState *bs;
    StripeOp op;
    int64_t bytes;
    BdrvRequestFlags flags;
    QEMUIOVector *qiov;         /* the caller's, or @own over @buf */
    size_t qiov_offset;
    QEMUIOVector own;
    void *buf;                  /* node-timeout: the data's copy, after it */
    StripeNodeStatus status;    /* a block status query's answer */
    QemuCoSleep sleep;          /* the caller, waiting */
    uint32_t pending;           /* members still running */
    bool given_up;
    uint32_t count;
    StripeGroupMember members[];
};

static bool stripe_op_changes_data(StripeOp op)
{
    return op == STRIPE_OP_WRITE || op == STRIPE_OP_ZEROES ||
           op == STRIPE_OP_DISCARD;
}

/*
 * Whether the member may send its request now.  A request that changes
 * data must not go to a node that still owes answers to requests given
 * up on: a write among those could land after it and undo it.  That
 * happens where the node was not marked failed (it holds the last copy
 * of some unit), so it keeps taking writes.  The member waits for those
 * answers; given up on meanwhile, it sends nothing.
 */
static bool coroutine_fn stripe_group_member_may_send(StripeGroupMember *m)
{
    StripeNodeGroup *g = m->group;

    if (!stripe_op_changes_data(g->op)) {
        return true;
    }
    while (qatomic_read(&m->edge->outstanding)) {
        if (g->given_up) {
            return false;
        }
        qemu_co_sleep_ns(QEMU_CLOCK_REALTIME, STRIPE_OUTSTANDING_POLL_NS);
    }
    return !g->given_up;
}

/* The member's own hold of the graph lock, for its node request. */
static void coroutine_fn TSA_ACQUIRE_SHARED(graph_lock) TSA_NO_TSA
stripe_group_member_rdlock(StripeGroupMember *m)
{
    bdrv_graph_co_rdlock();
    m->holds_graph = true;
}

/* Released, unless its caller gave up on it and released it then. */
static void coroutine_fn TSA_RELEASE_SHARED(graph_lock) TSA_NO_TSA
stripe_group_member_rdunlock(StripeGroupMember *m)
{
    if (m->holds_graph) {
        m->holds_graph = false;
        bdrv_graph_co_rdunlock();
    }
}

/*
 * The caller gives up on the members still running: it releases their
 * holds of the graph lock for them (the count is per AioContext, and they
 * run in the caller's), so that no graph change waits for a hung node.
 */
static void coroutine_fn TSA_NO_TSA
stripe_group_release_graph(StripeNodeGroup *g)
{
    uint32_t i;

    for (i = 0; i < g->count; i++) {
        stripe_group_member_rdunlock(&g->members[i]);
    }
}

/*
 * Takes the graph lock itself: once given up on, a member outlives the
 * caller's hold (and its own, see the top of the file).  The last member
 * of a group given up on frees it.
 */
static void coroutine_fn stripe_group_member_entry(void *opaque)
{
    StripeGroupMember *m = opaque;
    StripeNodeGroup *g = m->group;

    if (stripe_group_member_may_send(m)) {
        stripe_group_member_rdlock(m);
        if (g->op == STRIPE_OP_BLOCK_STATUS) {
            m->ret = stripe_co_edge_block_status(g->bs, m->node, m->edge,
                                                 m->node_offset, g->bytes,
                                                 &g->status);
        } else {
            m->ret = stripe_co_edge_request(g->bs, m->node, m->edge, g->op,
                                            m->node_offset, g->bytes, g->qiov,
                                            g->qiov_offset, g->flags);
        }
        stripe_group_member_rdunlock(m);
    } else {
        m->ret = -ETIMEDOUT;
    }
    m->done = true;
    g->pending--;
    if (!g->given_up) {
        if (!g->pending) {
            qemu_co_sleep_wake(&g->sleep);
        }
        return;
    }
    trace_stripe_node_late_answer(g->bs, m->node, g->op, m->ret);
    stripe_edge_answered(g->bs, m->edge);
    if (!g->pending) {
        g_free(g);
    }
}

/*
 * A group for @count requests of @op on @bs; with @own_buffer
 * (node-timeout, a read or a write), followed by a buffer for their data
 * aligned for each node: one allocation per group, a fraction of a small
 * write's cost.
 */
static StripeNodeGroup *stripe_node_group_new(BlockDriverState *bs,
                                              StripeOp op, uint32_t count,
                                              const uint32_t *nodes,
                                              const int64_t *node_offsets,
                                              int64_t bytes, bool own_buffer)
{
    BDRVStripeState *s = bs->opaque;
    size_t size = sizeof(StripeNodeGroup) + count * sizeof(StripeGroupMember);
    size_t align = 1;
    StripeNodeGroup *g;
    uint32_t i;

    for (i = 0; own_buffer && i < count; i++) {
        align = MAX(align, bdrv_opt_mem_align(s->nodes[nodes[i]]->bs));
    }
    g = g_try_malloc(size + (own_buffer ? bytes + align - 1 : 0));
    if (!g) {
        return NULL;
    }
    memset(g, 0, size);
    g->bs = bs;
    g->op = op;
    g->bytes = bytes;
    g->count = count;
    for (i = 0; i < count; i++) {
        g->members[i].group = g;
        g->members[i].node = nodes[i];
        g->members[i].node_offset = node_offsets[i];
        g->members[i].edge = qatomic_read(&s->edges[nodes[i]]);
    }
    if (own_buffer) {
        g->buf = QEMU_ALIGN_PTR_UP((char *)g + size, align);
    }
    return g;
}

/*
 * Run the members of @g and wait for them, at most @timeout_ns if that is
 * not 0; each member's result is in @rets[i], -ETIMEDOUT for those given
 * up on.  Returns whether every member answered: else @g belongs to
 * them, and its last one frees it.
 */
static bool coroutine_fn GRAPH_RDLOCK
stripe_co_group_run(BlockDriverState *bs, StripeNodeGroup *g,
                    int64_t timeout_ns, int *rets)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t i;

    /* set before any member can end: one may end before it yields */
    g->pending = g->count;
    for (i = 0; i < g->count; i++) {
        qemu_coroutine_enter(qemu_coroutine_create(stripe_group_member_entry,
                                                   &g->members[i]));
    }
    if (g->pending && timeout_ns) {
        qemu_co_sleep_ns_wakeable(&g->sleep, QEMU_CLOCK_REALTIME,
                                  timeout_ns);
    } else if (g->pending) {
        qemu_co_sleep(&g->sleep);
    }

    for (i = 0; i < g->count; i++) {
        StripeGroupMember *m = &g->members[i];

        if (m->done) {
            rets[i] = m->ret;
            continue;
        }
        qatomic_inc(&s->health[m->node].timeouts);
        qatomic_inc(&m->edge->outstanding);
        trace_stripe_node_timeout(bs, m->node, g->op, m->node_offset,
                                  g->bytes);
        rets[i] = -ETIMEDOUT;
    }
    if (g->pending) {
        g->given_up = true;     /* its last member frees it */
        stripe_group_release_graph(g);
        return false;
    }
    return true;
}

/*
 * @op on @count nodes of a replicated image at once (a read on one only):
 * on @nodes[i] at @node_offsets[i], all with the same length, flags and
 * data.  Counted, and given up on after node-timeout when that is set;
 * each request's result is in @rets[i].
 */
void coroutine_fn GRAPH_RDLOCK
stripe_co_node_requests_timed(BlockDriverState *bs, uint32_t count,
                              const uint32_t *nodes,
                              const int64_t *node_offsets, StripeOp op,
                              int64_t bytes, QEMUIOVector *qiov,
                              size_t qiov_offset, BdrvRequestFlags flags,
                              int *rets)
{
    BDRVStripeState *s = bs->opaque;
    int64_t timeout_ns = qatomic_read(&s->node_timeout_ns);
    StripeNodeGroup *g;
    uint32_t i;

    assert(count && (op != STRIPE_OP_READ || count == 1) &&
           op != STRIPE_OP_BLOCK_STATUS);
    if (count == 1 && !timeout_ns) {
        StripeNodeEdge *edge = qatomic_read(&s->edges[nodes[0]]);

        if (!qatomic_read(&edge->outstanding)) {
            rets[0] = stripe_co_edge_request(bs, nodes[0], edge, op,
                                             node_offsets[0], bytes, qiov,
                                             qiov_offset, flags);
            return;
        }
    }

    g = stripe_node_group_new(bs, op, count, nodes, node_offsets, bytes,
                              timeout_ns && (op == STRIPE_OP_READ ||
                                             op == STRIPE_OP_WRITE));
    if (!g) {
        for (i = 0; i < count; i++) {
            rets[i] = -ENOMEM;
        }
        return;
    }
    g->flags = flags;
    g->qiov = qiov;
    g->qiov_offset = qiov_offset;
    if (g->buf) {
        qemu_iovec_init_buf(&g->own, g->buf, bytes);
        if (op == STRIPE_OP_WRITE) {
            qemu_iovec_to_buf(qiov, qiov_offset, g->buf, bytes);
        }
        g->qiov = &g->own;
        g->qiov_offset = 0;
    }

    if (!stripe_co_group_run(bs, g, timeout_ns, rets)) {
        return;
    }
    if (op == STRIPE_OP_READ && g->buf && rets[0] >= 0) {
        qemu_iovec_from_buf(qiov, qiov_offset, g->buf, bytes);
    }
    g_free(g);
}

/*
 * Block status of [@node_offset, +@bytes) on node index @node, asked like
 * a request: counted, and given up on after node-timeout when that is
 * set.  Returns the node's status bits (stripe_co_edge_block_status())
 * with its answer in @status, or an error: -ETIMEDOUT when given up on.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_node_status_timed(BlockDriverState *bs, uint32_t node,
                            int64_t node_offset, int64_t bytes,
                            StripeNodeStatus *status)
{
    BDRVStripeState *s = bs->opaque;
    StripeNodeGroup *g;
    int ret;

    g = stripe_node_group_new(bs, STRIPE_OP_BLOCK_STATUS, 1, &node,
                              &node_offset, bytes, false);
    if (!g) {
        return -ENOMEM;
    }
    if (!stripe_co_group_run(bs, g, qatomic_read(&s->node_timeout_ns),
                             &ret)) {
        return ret;
    }
    *status = g->status;
    g_free(g);
    return ret;
}

/*
 * A node request of a replicated image, counted, given up on after
 * node-timeout when that is set.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_co_node_request_timed(BlockDriverState *bs, uint32_t node,
                             StripeOp op, int64_t node_offset, int64_t bytes,
                             QEMUIOVector *qiov, size_t qiov_offset,
                             BdrvRequestFlags flags)
{
    int ret;

    stripe_co_node_requests_timed(bs, 1, &node, &node_offset, op, bytes,
                                  qiov, qiov_offset, flags, &ret);
    return ret;
}

/* Requests given up on that node index @node's present edge still owes. */
uint64_t stripe_node_outstanding(BDRVStripeState *s, uint32_t node)
{
    return qatomic_read(&qatomic_read(&s->edges[node])->outstanding);
}

/* Whether any edge, parked ones too, owes answers or is being answered. */
static bool stripe_owes_answers(BDRVStripeState *s)
{
    StripeNodeEdge *edge;
    uint32_t i;

    for (i = 0; s->edges && i < s->node_count; i++) {
        if (qatomic_read(&s->edges[i]->outstanding)) {
            return true;
        }
    }
    QSLIST_FOREACH(edge, &s->parked, next) {
        if (qatomic_read(&edge->outstanding)) {
            return true;
        }
    }
    return qatomic_read(&s->late_answers);
}

/*
 * Before the state goes away at close: requests given up on use it until
 * their node answers, parked edges' too.  Detaching the nodes would wait
 * for them just as long (a drain).
 */
void stripe_wait_outstanding(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    GLOBAL_STATE_CODE();
    AIO_WAIT_WHILE_UNLOCKED(NULL, stripe_owes_answers(s));
}
