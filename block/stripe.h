/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": internal interfaces shared by its files.
 *
 *   stripe.c         the BlockDriver: open/close, limits, reopen, info
 *   stripe-header.c  reading, checking and writing the node headers
 *   stripe-create.c  qemu-img create / blockdev-create
 *   stripe-io.c      splitting requests per node and running them in
 *                    parallel
 */
#ifndef BLOCK_STRIPE_H
#define BLOCK_STRIPE_H

#include "block/block_int.h"
#include "stripe-layout.h"

/*
 * Node requests are kept at or below this size: larger ones are split and
 * run in parallel.  tgtd over libiscsi falls off a cliff at 1 MiB requests
 * (its default MaxBurstLength is 256 KiB), see docs/stripe-unit.md.
 */
#define STRIPE_MAX_NODE_REQUEST     (256 * 1024)

/* Default stripe unit of new images, see docs/stripe-unit.md. */
#define STRIPE_DEFAULT_UNIT         (256 * 1024)

/* Node requests one guest request may have in flight at once. */
#define STRIPE_MAX_PARALLEL         64

typedef struct BDRVStripeState {
    StripeGeometry geo;
    uint8_t uuid[16];
    uint64_t generation;
    uint32_t node_count;
    BdrvChild **nodes;          /* indexed by node index (assembled order) */
    uint32_t *given_pos;        /* nodes[i] was the given_pos[i]-th node */
    bool *stale;                /* header older than s->generation */
    uint64_t max_node_request;  /* bytes, <= every node's max_transfer */
} BDRVStripeState;

/* stripe-header.c */
int GRAPH_RDLOCK stripe_assemble_nodes(BlockDriverState *bs,
                                       BdrvChild **given, uint32_t count,
                                       Error **errp);
int coroutine_fn GRAPH_RDLOCK
stripe_co_write_header(BdrvChild *child, const StripeHeader *h,
                       Error **errp);
void stripe_header_for_node(BDRVStripeState *s, uint32_t index,
                            StripeHeader *h);
int coroutine_fn GRAPH_RDLOCK
stripe_co_check(BlockDriverState *bs, BdrvCheckResult *result,
                BdrvCheckMode fix);
int coroutine_fn GRAPH_RDLOCK
stripe_co_truncate(BlockDriverState *bs, int64_t offset, bool exact,
                   PreallocMode prealloc, BdrvRequestFlags flags,
                   Error **errp);

/* stripe-create.c */
extern QemuOptsList stripe_create_opts;
int coroutine_fn GRAPH_UNLOCKED
stripe_co_create(BlockdevCreateOptions *options, Error **errp);
int coroutine_fn GRAPH_UNLOCKED
stripe_co_create_opts(BlockDriver *drv, const char *filename,
                      QemuOpts *opts, Error **errp);
void stripe_parse_filename(const char *filename, QDict *options,
                           Error **errp);

/* stripe-io.c */
typedef enum StripeOp {
    STRIPE_OP_READ,
    STRIPE_OP_WRITE,
    STRIPE_OP_ZEROES,
    STRIPE_OP_DISCARD,
} StripeOp;

int coroutine_fn GRAPH_RDLOCK
stripe_co_rw(BlockDriverState *bs, StripeOp op, int64_t offset,
             int64_t bytes, QEMUIOVector *qiov, size_t qiov_offset,
             BdrvRequestFlags flags);
int coroutine_fn GRAPH_RDLOCK stripe_co_flush_nodes(BlockDriverState *bs);

#endif /* BLOCK_STRIPE_H */
