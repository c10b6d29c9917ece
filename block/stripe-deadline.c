/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": node requests that give up after node-timeout.
 *
 * A node that does not answer must not hang a replicated disk: the other
 * copies can serve.  Node drivers do not always give up by themselves:
 * QEMU's iscsi driver resends a request after every reconnect, and when
 * the target is gone it reconnects forever (libiscsi's own timeout does
 * not cover requests waiting for a reconnect).  So the request runs in a
 * coroutine of its own, on a buffer of its own, and its caller waits for
 * it at most node-timeout.  Then it gives up (-ETIMEDOUT, and the node is
 * marked failed); the request goes on alone until the node answers, with
 * its buffer (the caller's may be reused at once) and its share of the
 * graph lock (its BdrvChild must stay), and counts as outstanding on its
 * node.  Its late result is dropped: the node is failed by then and is
 * neither read nor written until it is resynced.
 *
 * The copy to and from the own buffer is the price of giving up safely;
 * node-timeout=0 avoids it and waits for the node forever.
 */

#include "qemu/osdep.h"
#include "block/aio-wait.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "block/graph-lock.h"
#include "qemu/coroutine.h"
#include "qemu/iov.h"
#include "qemu/memalign.h"
#include "stripe.h"
#include "trace.h"

typedef struct StripeDeadlineReq {
    BlockDriverState *bs;
    uint32_t node;
    StripeOp op;
    int64_t node_offset;
    int64_t bytes;
    BdrvRequestFlags flags;
    QEMUIOVector qiov;          /* over @buf */
    void *buf;
    QemuCoSleep sleep;          /* the caller, waiting */
    int ret;
    bool done;
    bool given_up;
} StripeDeadlineReq;

static void stripe_deadline_req_free(StripeDeadlineReq *r)
{
    qemu_vfree(r->buf);
    g_free(r);
}

/*
 * Runs in the caller's thread, which a node driver wakes it in.  Takes the
 * graph lock itself: once given up on, it outlives the caller's hold.
 */
static void coroutine_fn stripe_deadline_entry(void *opaque)
{
    StripeDeadlineReq *r = opaque;
    BDRVStripeState *s = r->bs->opaque;
    StripeNodeHealth *h = &s->health[r->node];

    bdrv_graph_co_rdlock();
    r->ret = stripe_co_node_request_counted(r->bs, r->node, r->op,
                                            r->node_offset, r->bytes,
                                            &r->qiov, 0, r->flags);
    bdrv_graph_co_rdunlock();
    r->done = true;
    if (!r->given_up) {
        qemu_co_sleep_wake(&r->sleep);
        return;
    }
    trace_stripe_node_late_answer(r->bs, r->node, r->op, r->ret);
    /* the last access to @s: stripe_wait_outstanding() frees it after */
    qatomic_dec(&h->outstanding);
    aio_wait_kick();
    stripe_deadline_req_free(r);
}

int coroutine_fn GRAPH_RDLOCK
stripe_co_node_request_deadline(BlockDriverState *bs, uint32_t node,
                                StripeOp op, int64_t node_offset,
                                int64_t bytes, QEMUIOVector *qiov,
                                size_t qiov_offset, BdrvRequestFlags flags,
                                int64_t timeout_ns)
{
    BDRVStripeState *s = bs->opaque;
    StripeDeadlineReq *r = g_new0(StripeDeadlineReq, 1);
    Coroutine *co;
    int ret;

    *r = (StripeDeadlineReq) {
        .bs = bs,
        .node = node,
        .op = op,
        .node_offset = node_offset,
        .bytes = bytes,
        .flags = flags,
    };
    if (op == STRIPE_OP_READ || op == STRIPE_OP_WRITE) {
        r->buf = qemu_try_blockalign(s->nodes[node]->bs, bytes);
        if (!r->buf) {
            g_free(r);
            return -ENOMEM;
        }
        qemu_iovec_init_buf(&r->qiov, r->buf, bytes);
        if (op == STRIPE_OP_WRITE) {
            qemu_iovec_to_buf(qiov, qiov_offset, r->buf, bytes);
        }
    }

    co = qemu_coroutine_create(stripe_deadline_entry, r);
    qemu_coroutine_enter(co);
    if (!r->done) {
        qemu_co_sleep_ns_wakeable(&r->sleep, QEMU_CLOCK_REALTIME,
                                  timeout_ns);
    }
    if (!r->done) {
        r->given_up = true;
        qatomic_inc(&s->health[node].timeouts);
        qatomic_inc(&s->health[node].outstanding);
        trace_stripe_node_timeout(bs, node, op, node_offset, bytes);
        return -ETIMEDOUT;
    }
    ret = r->ret;
    if (op == STRIPE_OP_READ && ret >= 0) {
        qemu_iovec_from_buf(qiov, qiov_offset, r->buf, bytes);
    }
    stripe_deadline_req_free(r);
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
    BDRVStripeState *s = bs->opaque;
    int64_t timeout_ns = qatomic_read(&s->node_timeout_ns);

    if (timeout_ns) {
        return stripe_co_node_request_deadline(bs, node, op, node_offset,
                                               bytes, qiov, qiov_offset,
                                               flags, timeout_ns);
    }
    return stripe_co_node_request_counted(bs, node, op, node_offset, bytes,
                                          qiov, qiov_offset, flags);
}

/*
 * Before the state goes away at close: requests given up on use it until
 * their node answers.  Closing also takes the graph lock for writing,
 * which waits for them just as long.
 */
void stripe_wait_outstanding(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t i;

    GLOBAL_STATE_CODE();
    for (i = 0; s->health && i < s->node_count; i++) {
        AIO_WAIT_WHILE_UNLOCKED(NULL,
                                qatomic_read(&s->health[i].outstanding));
    }
}
