/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": a virtual disk striped over storage nodes
 * (RAID-0), each node carrying a self-describing header.
 *
 * The nodes are child block nodes of any driver (iscsi, nbd, file, rbd...).
 * Open reads every node's header and assembles the nodes by the index
 * recorded there, whatever order the user gave them in.  See
 * docs/user-guide.md and docs/layout.md.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "block/qdict.h"
#include "qapi/error.h"
#include "qapi/qapi-types-block-core.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qemu/cutils.h"
#include "qemu/module.h"
#include "qemu/option.h"
#include "stripe.h"
#include "trace.h"

/*
 * A node given as @key.filename without a driver is a filename to parse as
 * -drive file= would: iscsi://..., nbd://..., a path.  bdrv_open_child()
 * would take it literally as a local path, so resolve its protocol here.
 */
static bool stripe_parse_node_filename(QDict *options, const char *key,
                                       Error **errp)
{
    g_autofree char *prefix = g_strconcat(key, ".", NULL);
    g_autofree char *fkey = g_strconcat(prefix, "filename", NULL);
    g_autofree char *dkey = g_strconcat(prefix, "driver", NULL);
    g_autofree char *filename = NULL;
    const QDictEntry *e;
    Error *local_err = NULL;
    BlockDriver *drv;
    QDict *sub;

    if (!qdict_get_try_str(options, fkey) || qdict_haskey(options, dkey)) {
        return true;
    }
    filename = g_strdup(qdict_get_str(options, fkey));
    drv = bdrv_find_protocol(filename, true, errp);
    if (!drv) {
        return false;
    }
    if (drv->bdrv_parse_filename) {
        qdict_extract_subqdict(options, &sub, prefix);
        drv->bdrv_parse_filename(filename, sub, &local_err);
        if (!drv->bdrv_needs_filename) {
            qdict_del(sub, "filename");
        }
        for (e = qdict_first(sub); e; e = qdict_next(sub, e)) {
            g_autofree char *k = g_strconcat(prefix, qdict_entry_key(e),
                                             NULL);

            qdict_put_obj(options, k, qobject_ref(qdict_entry_value(e)));
        }
        qobject_unref(sub);
        if (local_err) {
            error_propagate(errp, local_err);
            return false;
        }
    }
    qdict_put_str(options, dkey, drv->format_name);
    return true;
}

/*
 * With its own cache on, the stripe gives a node that is a caching
 * client itself cache.direct=on, unless the node says otherwise: else
 * the node inherits the stripe's cache mode, and librbd would keep a
 * second cache under the stripe's (since Ceph Pacific its writearound
 * policy: no reads from it, every write copied into it and acknowledged
 * early).  An rbd node under filters or a raw format (throttle, raw,
 * copy-on-read: each one's "file") counts too; the option is set on the
 * node given, and its "file" children inherit it.  Other nodes keep the
 * stripe's mode: for a local file cache.direct=on means O_DIRECT, which
 * not every filesystem has.  @options are the node's own.
 */
static void stripe_default_node_cache(QDict *options, int stripe_flags)
{
    g_autofree char *prefix = g_strdup("");
    int depth;

    if ((stripe_flags & BDRV_O_NOCACHE) ||
        qdict_haskey(options, BDRV_OPT_CACHE_DIRECT)) {
        return;
    }
    for (depth = 0; depth < STRIPE_NODE_FILE_DEPTH; depth++) {
        g_autofree char *dkey = g_strconcat(prefix, "driver", NULL);
        const char *driver = qdict_get_try_str(options, dkey);
        char *below;

        if (!driver) {
            return;
        }
        if (!strcmp(driver, "rbd")) {
            qdict_put_str(options, BDRV_OPT_CACHE_DIRECT, "on");
            return;
        }
        below = g_strconcat(prefix, "file.", NULL);
        g_free(prefix);
        prefix = below;
    }
}

/*
 * Where a node inherits the stripe's options: at open, and at every
 * reopen, which computes them afresh (blockdev-reopen of a stripe with
 * its nodes given inline would otherwise turn an rbd node's cache.direct
 * back to the stripe's mode; QEMU's rbd driver keeps the librbd cache
 * it opened with, so the node would say one thing and do another).
 */
static void stripe_inherit_node_options(BdrvChildRole role,
                                        bool parent_is_format,
                                        int *child_flags,
                                        QDict *child_options,
                                        int parent_flags,
                                        QDict *parent_options)
{
    stripe_default_node_cache(child_options, parent_flags);
    child_of_bds.inherit_options(role, parent_is_format, child_flags,
                                 child_options, parent_flags,
                                 parent_options);
}

/* child_of_bds, but for what a node inherits; set up at block_init. */
BdrvChildClass stripe_node_class;

/* The children themselves, parked ones too, are released by bdrv_close(). */
static void stripe_free_node_map(BDRVStripeState *s)
{
    uint32_t i;

    for (i = 0; s->edges && i < s->node_count; i++) {
        g_free(s->edges[i]);
    }
    while (!QSLIST_EMPTY(&s->parked)) {
        StripeNodeEdge *edge = QSLIST_FIRST(&s->parked);

        QSLIST_REMOVE_HEAD(&s->parked, next);
        g_free(edge);
    }
    g_free(s->edges);
    g_free(s->nodes);
    g_free(s->given_pos);
    g_free(s->stale);
    g_free(s->health);
    stripe_absent_free_all(s);
    s->edges = NULL;
    s->nodes = NULL;
    s->given_pos = NULL;
    s->stale = NULL;
    s->health = NULL;
}

static int stripe_open(BlockDriverState *bs, QDict *options, int flags,
                       Error **errp)
{
    ERRP_GUARD();
    BDRVStripeState *s = bs->opaque;
    g_autofree BdrvChild **given = NULL;
    g_autofree StripeAbsentNode **absent = NULL;
    g_autofree char *filename = NULL;
    QemuOpts *opts;
    QList *nodes;
    int count, i;

    qdict_flatten(options);

    /* Bad options fail before any node is even opened. */
    opts = qemu_opts_create(&stripe_runtime_opts, NULL, 0, &error_abort);
    if (!qemu_opts_absorb_qdict(opts, options, errp) ||
        !stripe_parse_cache_options(opts, &s->cache_opts, errp) ||
        !stripe_parse_node_timeout(opts, &s->node_timeout_ns, errp)) {
        qemu_opts_del(opts);
        return -EINVAL;
    }
    s->auto_resync = qemu_opt_get_bool(opts, STRIPE_OPT_AUTO_RESYNC, true);
    qemu_opts_del(opts);

    /*
     * The block layer parses a filename given as the image name, but not
     * one given as an option (-drive file.driver=stripe,file.filename=...).
     */
    filename = g_strdup(qdict_get_try_str(options, "filename"));
    if (filename) {
        Error *local_err = NULL;

        qdict_del(options, "filename");
        stripe_parse_filename(filename, options, &local_err);
        if (local_err) {
            error_propagate(errp, local_err);
            return -EINVAL;
        }
    }

    /* -blockdev's "nodes": [] stays an empty list when flattened */
    nodes = qobject_to(QList, qdict_get(options, "nodes"));
    if (nodes && qlist_empty(nodes)) {
        error_setg(errp, "stripe: option 'nodes' must list at least one "
                   "node");
        return -EINVAL;
    }
    if (qdict_haskey(options, "nodes")) {
        error_setg(errp, "stripe: option 'nodes' must be a list of nodes "
                   "(nodes.0, nodes.1, ...), not a single value");
        return -EINVAL;
    }
    count = qdict_array_entries(options, "nodes.");
    if (count < 0) {
        error_setg(errp, "stripe: option 'nodes' is not a valid list");
        return -EINVAL;
    }
    if (count < 1) {
        error_setg(errp, "stripe: option 'nodes' must list at least one "
                   "node");
        return -EINVAL;
    }
    if (count > STRIPE_MAX_NODES) {
        error_setg(errp, "stripe: option 'nodes' lists %d nodes, at most %d "
                   "are supported", count, STRIPE_MAX_NODES);
        return -EINVAL;
    }

    given = g_new0(BdrvChild *, count);
    absent = g_new0(StripeAbsentNode *, count);
    for (i = 0; i < count; i++) {
        g_autofree char *key = g_strdup_printf("nodes.%d", i);
        g_autofree char *fkey = g_strconcat(key, ".filename", NULL);
        g_autofree char *node_filename =
            g_strdup(qdict_get_try_str(options, fkey));

        if (!stripe_parse_node_filename(options, key, errp)) {
            stripe_absent_free_given(absent, count);
            return -EINVAL;
        }
        given[i] = stripe_open_node(bs, options, key, node_filename,
                                    &absent[i], errp);
        if (!given[i]) {
            /* e.g. "Block node is read-only" says not which one */
            error_prepend(errp, "stripe: node %d: ", i);
            stripe_absent_free_given(absent, count);
            return -EINVAL;
        }
        if (absent[i] && stripe_absent_is_twin(given, absent, i, errp)) {
            stripe_absent_free_given(absent, count);
            return -EINVAL;
        }
    }

    GRAPH_RDLOCK_GUARD_MAINLOOP();

    qemu_co_mutex_init(&s->resize_lock);
    qemu_co_mutex_init(&s->health_lock);
    if (stripe_assemble_nodes(bs, given, count, absent, errp) < 0 ||
        stripe_bitmap_open(bs, errp) < 0) {
        goto fail;
    }

    /*
     * FUA is passed down to the nodes that a write touches; nodes without
     * native FUA get it emulated by a flush of just that node.
     */
    bs->supported_write_flags = BDRV_REQ_WRITE_UNCHANGED | BDRV_REQ_FUA;
    bs->supported_zero_flags = BDRV_REQ_WRITE_UNCHANGED | BDRV_REQ_FUA |
        BDRV_REQ_MAY_UNMAP | BDRV_REQ_NO_FALLBACK;
    for (i = 0; i < s->node_count; i++) {
        if (stripe_node_absent(s, i)) {
            continue;   /* its stand-in is never written */
        }
        bs->supported_zero_flags &= s->nodes[i]->bs->supported_zero_flags |
            BDRV_REQ_WRITE_UNCHANGED | BDRV_REQ_FUA;
    }
    bs->supported_truncate_flags = BDRV_REQ_ZERO_WRITE;

    /*
     * cache.direct=on (cache=none, directsync) sends IO straight to the
     * nodes; every other mode goes through the writeback cache.
     */
    if (!(flags & BDRV_O_NOCACHE) &&
        stripe_cache_open(bs, &s->cache_opts, flags, errp) < 0) {
        goto fail;
    }

    trace_stripe_open(bs, count, s->geo.virtual_size, s->geo.stripe_unit);
    return 0;

fail:
    /* a failed open is not followed by stripe_close() */
    stripe_bitmap_free(s);
    stripe_free_node_map(s);
    stripe_absent_free_given(absent, count);
    return -EINVAL;
}

static void stripe_close(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    stripe_resync_stop(bs);
    if (s->cache) {
        stripe_cache_close(bs);
    }
    stripe_bitmap_close(bs);
    stripe_wait_outstanding(bs);
    stripe_free_node_map(s);
}

static void GRAPH_RDLOCK stripe_refresh_limits(BlockDriverState *bs,
                                               Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t align = stripe_node_alignment(s), zero_align = 0;
    uint32_t i;

    for (i = 0; i < s->node_count; i++) {
        zero_align = MAX(zero_align,
                         s->nodes[i]->bs->bl.pwrite_zeroes_alignment);
    }
    s->max_node_request = stripe_node_request_max(s);

    bs->bl.request_alignment = align;
    bs->bl.pwrite_zeroes_alignment = zero_align;
    /*
     * The generic code would split large requests at the smallest node
     * max_transfer, one piece after another; stripe_co_rw() splits them
     * itself and runs the pieces on all nodes at once.
     */
    bs->bl.max_transfer = 0;
    bs->bl.max_pdiscard = 0;
    bs->bl.max_pwrite_zeroes = 0;
    bs->bl.opt_transfer = s->geo.stripe_unit * s->node_count;

    /* A resync left by a crash or a failed node: its IO needs the above. */
    stripe_resync_start(bs);
}

static int coroutine_fn GRAPH_RDLOCK
stripe_co_preadv_part(BlockDriverState *bs, int64_t offset, int64_t bytes,
                      QEMUIOVector *qiov, size_t qiov_offset,
                      BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;

    if (s->cache) {
        return stripe_cache_co_preadv(bs, offset, bytes, qiov, qiov_offset);
    }
    return stripe_co_rw(bs, STRIPE_OP_READ, offset, bytes, qiov,
                        qiov_offset, flags);
}

/*
 * A write past the end grows the disk first (see stripe_co_grow()).  The
 * size is read without the lock: a stale value only sends the request to
 * stripe_co_grow(), which looks again under it.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_grow_for(BlockDriverState *bs, int64_t offset, int64_t bytes)
{
    BDRVStripeState *s = bs->opaque;

    if (offset + bytes <= qatomic_read_u64(&s->geo.virtual_size)) {
        return 0;
    }
    return stripe_co_grow(bs, offset + bytes);
}

static int coroutine_fn GRAPH_RDLOCK
stripe_co_pwritev_part(BlockDriverState *bs, int64_t offset, int64_t bytes,
                       QEMUIOVector *qiov, size_t qiov_offset,
                       BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;
    int ret;

    ret = stripe_co_grow_for(bs, offset, bytes);
    if (ret < 0) {
        return ret;
    }
    if (s->cache) {
        return stripe_cache_co_pwritev(bs, offset, bytes, qiov, qiov_offset,
                                       flags);
    }
    return stripe_co_rw(bs, STRIPE_OP_WRITE, offset, bytes, qiov,
                        qiov_offset, flags);
}

/* Discard and write-zeroes replace the data: they go around the cache. */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_replace(BlockDriverState *bs, StripeOp op, int64_t offset,
                  int64_t bytes, BdrvRequestFlags flags)
{
    BDRVStripeState *s = bs->opaque;

    if (s->cache) {
        return stripe_cache_co_write_around(bs, op, offset, bytes, NULL, 0,
                                            flags);
    }
    return stripe_co_rw(bs, op, offset, bytes, NULL, 0, flags);
}

static int coroutine_fn GRAPH_RDLOCK
stripe_co_pwrite_zeroes(BlockDriverState *bs, int64_t offset, int64_t bytes,
                        BdrvRequestFlags flags)
{
    int ret = stripe_co_grow_for(bs, offset, bytes);

    if (ret < 0) {
        return ret;
    }
    return stripe_co_replace(bs, STRIPE_OP_ZEROES, offset, bytes, flags);
}

static int coroutine_fn GRAPH_RDLOCK
stripe_co_pdiscard(BlockDriverState *bs, int64_t offset, int64_t bytes)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t size = qatomic_read_u64(&s->geo.virtual_size);

    /*
     * Discard never grows the disk, but qcow2 may discard past its end
     * when it reverts an allocation: there is nothing to drop there.
     */
    if (offset >= size) {
        return 0;
    }
    bytes = MIN(bytes, size - offset);
    return stripe_co_replace(bs, STRIPE_OP_DISCARD, offset, bytes, 0);
}

/*
 * Implementing .bdrv_co_flush (instead of flush_to_disk) lets the nodes be
 * flushed in parallel; the generic code would flush them one after
 * another.  Each node's own flush honours cache.no-flush, which the nodes
 * inherit.
 */
static int coroutine_fn GRAPH_RDLOCK stripe_co_flush(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    trace_stripe_co_flush(bs);
    if (s->cache) {
        return stripe_cache_co_flush(bs);
    }
    return stripe_co_flush_nodes(bs);
}

/*
 * Block status of a replicated image with a node-timeout, from the node
 * reads use.  The generic code would ask the node with no deadline, and
 * consumers that read the disk (an NBD export, a mirror, qemu-img
 * convert) ask before they read: a hung node would hold them, where its
 * reads give up after node-timeout.  So the node is asked here like a
 * read: a node that owes answers is not asked, and one that fails or does
 * not answer in time is marked failed, as a read would mark it, and the
 * next copy's node is asked.  Where no node answers, the run is data
 * (always a safe answer).
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_co_replica_block_status(BlockDriverState *bs, int64_t offset,
                               int64_t bytes, int64_t *pnum, int64_t *map,
                               BlockDriverState **file)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t align = bs->bl.request_alignment;
    uint64_t node_offset;
    StripeNodeStatus st;
    uint32_t node, tries;
    int ret;

    for (tries = 0; tries < s->geo.copies; tries++) {
        bytes = MIN(bytes, stripe_map_read(s, offset, &node, &node_offset));
        if (stripe_node_outstanding(s, node)) {
            break;
        }
        ret = stripe_co_node_status_timed(bs, node, node_offset, bytes, &st);
        if (ret >= 0) {
            /* whole alignment blocks of the disk, or data */
            *pnum = QEMU_ALIGN_DOWN(st.pnum, align);
            if (!*pnum) {
                break;
            }
            *map = st.map;
            *file = st.file;
            return ret;
        }
        trace_stripe_block_status_failed(bs, node, ret);
        if (ret == -ENOMEM || stripe_co_mark_failed(bs, node, ret) < 0) {
            break;
        }
    }
    *pnum = bytes;
    return BDRV_BLOCK_DATA;
}

static int coroutine_fn GRAPH_RDLOCK
stripe_co_block_status(BlockDriverState *bs, bool want_zero, int64_t offset,
                       int64_t bytes, int64_t *pnum, int64_t *map,
                       BlockDriverState **file)
{
    BDRVStripeState *s = bs->opaque;
    uint64_t node_offset, in_unit;
    uint32_t node;

    /*
     * The cache is the disk: what it holds newer than the nodes (or is
     * moving between them) is data, whatever the nodes would say of it.
     */
    if (s->cache) {
        StripeCache *c = s->cache;
        uint32_t align = bs->bl.request_alignment;
        uint64_t run;
        SCStatus st;

        stripe_cache_lock(c);
        st = sc_block_status(c->core, offset, bytes, &run);
        stripe_cache_unlock(c);
        /*
         * Answers come in whole alignment blocks: a block with any byte
         * the cache holds is data (calling more data is always safe).
         */
        if (st == SC_STATUS_NODES) {
            run = QEMU_ALIGN_DOWN(run, align);
        }
        if (st == SC_STATUS_DATA || run == 0) {
            *pnum = QEMU_ALIGN_UP(MAX(run, 1), align);
            return BDRV_BLOCK_DATA;
        }
        bytes = run;
    }

    if (s->geo.copies > 1 && qatomic_read(&s->node_timeout_ns)) {
        return stripe_co_replica_block_status(bs, offset, bytes, pnum, map,
                                              file);
    }

    /*
     * Report the mapping on the node reads use (with copies and
     * node-timeout=0, not a failed one); the generic code asks the node.
     * With one node the whole disk is one run on it: consumers that read
     * what one answer covers (an NBD export's sparse reads) then read it
     * at once.  With several nodes each answer is one unit, so that
     * qemu-img map and others get a mapping (docs/cache-design.md,
     * section 12).
     */
    in_unit = stripe_map_read(s, offset, &node, &node_offset);
    *pnum = s->node_count == 1 ? bytes : MIN(bytes, in_unit);
    *map = node_offset;
    *file = s->nodes[node]->bs;
    return BDRV_BLOCK_RAW | BDRV_BLOCK_OFFSET_VALID;
}

static int64_t coroutine_fn GRAPH_RDLOCK
stripe_co_getlength(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    return s->geo.virtual_size;
}

static int64_t coroutine_fn GRAPH_RDLOCK
stripe_co_get_allocated_file_size(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    int64_t sum = 0, size;
    uint32_t i;

    for (i = 0; i < s->node_count; i++) {
        size = bdrv_co_get_allocated_file_size(s->nodes[i]->bs);
        if (size < 0) {
            return size;
        }
        sum += size;
    }
    return sum;
}

static int GRAPH_RDLOCK stripe_has_zero_init(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t i;

    for (i = 0; i < s->node_count; i++) {
        if (!bdrv_has_zero_init(s->nodes[i]->bs)) {
            return 0;
        }
    }
    return 1;
}

static int coroutine_fn GRAPH_RDLOCK
stripe_co_get_info(BlockDriverState *bs, BlockDriverInfo *bdi)
{
    BDRVStripeState *s = bs->opaque;

    bdi->cluster_size = s->geo.stripe_unit;
    bdi->subcluster_size = s->geo.stripe_unit;
    return 0;
}

static ImageInfoSpecific * GRAPH_RDLOCK
stripe_get_specific_info(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    ImageInfoSpecificStripeNodeList **tail;
    ImageInfoSpecificStripe *info;
    ImageInfoSpecific *spec;
    char uuid[37];
    uint32_t i;

    stripe_uuid_unparse(s->uuid, uuid);
    info = g_new0(ImageInfoSpecificStripe, 1);
    *info = (ImageInfoSpecificStripe) {
        .uuid = g_strdup(uuid),
        .stripe_unit = s->geo.stripe_unit,
        .data_offset = s->geo.data_offset,
        .generation = s->generation,
        .copies = s->geo.copies,
        .has_bitmap_region = s->geo.bitmap_region != 0,
        .bitmap_region = s->geo.bitmap_region,
        .has_dirty_regions = s->geo.bitmap_region != 0,
        .dirty_regions = stripe_bitmap_dirty_regions(s),
    };
    tail = &info->nodes;
    for (i = 0; i < s->node_count; i++) {
        ImageInfoSpecificStripeNode *node =
            g_new0(ImageInfoSpecificStripeNode, 1);

        node->index = i;
        node->filename = g_strdup(stripe_node_name(s, i));
        node->stale_header = s->stale[i];
        node->state = stripe_node_state(s, i);
        QAPI_LIST_APPEND(tail, node);
    }

    spec = g_new0(ImageInfoSpecific, 1);
    spec->type = IMAGE_INFO_SPECIFIC_KIND_STRIPE;
    spec->u.stripe.data = info;
    return spec;
}

/*
 * stripe:PREFIX when the nodes are PREFIX.0 ... PREFIX.N-1 in index order
 * and all opened, otherwise stripe:F0|F1|... (a single node gets a
 * trailing '|').
 */
static void GRAPH_RDLOCK stripe_refresh_filename(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    g_autoptr(GString) name = g_string_new("stripe:");
    const char *first = stripe_node_exact_filename(s, 0);
    size_t plen = strlen(first);
    /* the prefix form finds the nodes by their files: not one missing */
    bool prefix_form = plen > 2 && g_str_has_suffix(first, ".0") &&
                       !qatomic_read(&s->absent);
    uint32_t i;

    for (i = 0; i < s->node_count; i++) {
        const char *f = stripe_node_exact_filename(s, i);
        g_autofree char *want = NULL;

        if (!f[0] || strchr(f, '|')) {
            return;
        }
        want = g_strdup_printf("%.*s.%u", (int)(plen - 2), first, i);
        prefix_form = prefix_form && !strcmp(f, want);
    }
    if (prefix_form) {
        g_string_append_len(name, first, plen - 2);
    } else {
        for (i = 0; i < s->node_count; i++) {
            g_string_append(name, stripe_node_exact_filename(s, i));
            if (i + 1 < s->node_count || s->node_count == 1) {
                g_string_append_c(name, '|');
            }
        }
    }
    if (name->len < sizeof(bs->exact_filename)) {
        pstrcpy(bs->exact_filename, sizeof(bs->exact_filename), name->str);
    }
}

static void GRAPH_RDLOCK
stripe_gather_child_options(BlockDriverState *bs, QDict *target,
                            bool backing_overridden)
{
    BDRVStripeState *s = bs->opaque;
    QList *list = qlist_new();
    uint32_t i;

    /* In index order: any order opens the same image. */
    qdict_put(target, "nodes", list);
    for (i = 0; i < s->node_count; i++) {
        qlist_append(list, stripe_node_open_options(s, i));
    }
}

static char * GRAPH_RDLOCK stripe_dirname(BlockDriverState *bs,
                                          Error **errp)
{
    /* The nodes may live anywhere: there is no single directory. */
    error_setg(errp, "Cannot generate a base directory for stripe nodes");
    return NULL;
}

typedef struct StripeReopenState {
    SCOptions opts;
    int64_t node_timeout_ns;
    bool cache_on;
    bool auto_resync;
} StripeReopenState;

/*
 * Read-only <-> read-write is handled by the generic code for this node
 * and its nodes.  The cache options may change, and so may the cache mode:
 * before the cache goes away (cache.direct=on) or the nodes become
 * read-only, everything dirty is written back, or the reopen fails.
 */
static int stripe_reopen_prepare(BDRVReopenState *state,
                                 BlockReopenQueue *queue, Error **errp)
{
    BlockDriverState *bs = state->bs;
    BDRVStripeState *s = bs->opaque;
    g_autofree StripeReopenState *r = g_new0(StripeReopenState, 1);
    QemuOpts *opts;
    bool ok;
    int ret;

    opts = qemu_opts_create(&stripe_runtime_opts, NULL, 0, &error_abort);
    ok = qemu_opts_absorb_qdict(opts, state->options, errp) &&
         stripe_parse_cache_options(opts, &r->opts, errp) &&
         stripe_parse_node_timeout(opts, &r->node_timeout_ns, errp);
    r->auto_resync = qemu_opt_get_bool(opts, STRIPE_OPT_AUTO_RESYNC, true);
    qemu_opts_del(opts);
    if (!ok) {
        return -EINVAL;
    }
    if (!(state->flags & BDRV_O_RDWR) || !r->auto_resync) {
        /* harmless if the reopen fails: the bits stay for the next one */
        stripe_resync_stop(bs);
    }
    r->cache_on = !(state->flags & BDRV_O_NOCACHE);
    if (s->cache && (!r->cache_on || !(state->flags & BDRV_O_RDWR))) {
        ret = stripe_cache_writeback_all(bs);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot write the cache "
                             "back to the nodes");
            return ret;
        }
    }
    state->opaque = g_steal_pointer(&r);
    return 0;
}

static void stripe_reopen_commit(BDRVReopenState *state)
{
    BlockDriverState *bs = state->bs;
    BDRVStripeState *s = bs->opaque;
    StripeReopenState *r = state->opaque;

    if (s->cache && !r->cache_on) {
        stripe_cache_close(bs);
    } else if (!s->cache && r->cache_on) {
        GRAPH_RDLOCK_GUARD_MAINLOOP();

        /* Geometry and options were checked: this cannot fail. */
        stripe_cache_open(bs, &r->opts, state->flags, &error_abort);
    } else if (s->cache) {
        stripe_cache_reconfigure(bs, &r->opts, state->flags);
    }
    s->cache_opts = r->opts;
    qatomic_set(&s->node_timeout_ns, r->node_timeout_ns);
    qatomic_set(&s->auto_resync, r->auto_resync);
    g_free(r);
    state->opaque = NULL;
}

static void stripe_reopen_abort(BDRVReopenState *state)
{
    g_free(state->opaque);
    state->opaque = NULL;
}

static void stripe_drain_begin(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    stripe_resync_pause(bs);
    if (s->cache) {
        stripe_cache_drain_begin(bs);
    }
}

static void stripe_drain_end(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    if (s->cache) {
        stripe_cache_drain_end(bs);
    }
    stripe_resync_resume(bs);
}

static void stripe_detach_aio_context(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    if (s->cache) {
        stripe_cache_timer_detach(bs);
    }
}

static void stripe_attach_aio_context(BlockDriverState *bs,
                                      AioContext *new_context)
{
    BDRVStripeState *s = bs->opaque;

    if (s->cache) {
        stripe_cache_timer_attach(bs, new_context);
    }
}

/* Migration source: hand the nodes over with nothing left in the cache. */
static int GRAPH_RDLOCK stripe_inactivate(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    /* the other host reads the bitmap and resyncs */
    stripe_resync_stop(bs);
    return s->cache ? stripe_cache_inactivate(bs) : 0;
}

/*
 * Migration destination (or a failed migration): the other host may have
 * changed the size, and the cache starts from nothing.
 */
static void coroutine_fn GRAPH_RDLOCK
stripe_co_invalidate_cache(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;

    if (stripe_co_reload_headers(bs, errp) < 0 ||
        stripe_bitmap_co_reload(bs, errp) < 0) {
        return;
    }
    if (s->cache && stripe_cache_activate(bs, errp) < 0) {
        return;
    }
    stripe_resync_start(bs);
}

static void GRAPH_RDLOCK stripe_cancel_in_flight(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t i;

    /* The generic function does not recurse; nbd nodes implement it. */
    for (i = 0; i < s->node_count; i++) {
        bdrv_cancel_in_flight(s->nodes[i]->bs);
    }
}

static const char *const stripe_strong_runtime_opts[] = {
    /*
     * The layout comes from the node headers and the cache options do not
     * change what the guest reads: no option of ours is strong.
     */
    NULL
};

static BlockDriver bdrv_stripe = {
    .format_name                        = "stripe",
    .protocol_name                      = "stripe",
    .instance_size                      = sizeof(BDRVStripeState),

    .bdrv_parse_filename                = stripe_parse_filename,
    .bdrv_open                          = stripe_open,
    .bdrv_close                         = stripe_close,
    .bdrv_reopen_prepare                = stripe_reopen_prepare,
    .bdrv_reopen_commit                 = stripe_reopen_commit,
    .bdrv_reopen_abort                  = stripe_reopen_abort,
    .mutable_opts                       = stripe_mutable_opts,
    .bdrv_child_perm                    = bdrv_default_perms,
    .bdrv_refresh_limits                = stripe_refresh_limits,

    .create_opts                        = &stripe_create_opts,
    .bdrv_co_create                     = stripe_co_create,
    .bdrv_co_create_opts                = stripe_co_create_opts,

    .bdrv_co_preadv_part                = stripe_co_preadv_part,
    .bdrv_co_pwritev_part               = stripe_co_pwritev_part,
    .bdrv_co_pwrite_zeroes              = stripe_co_pwrite_zeroes,
    .bdrv_co_pdiscard                   = stripe_co_pdiscard,
    .bdrv_co_flush                      = stripe_co_flush,
    .bdrv_co_block_status               = stripe_co_block_status,
    .bdrv_co_truncate                   = stripe_co_truncate,
    .bdrv_co_getlength                  = stripe_co_getlength,
    .bdrv_co_get_allocated_file_size    = stripe_co_get_allocated_file_size,
    .bdrv_has_zero_init                 = stripe_has_zero_init,
    .bdrv_cancel_in_flight              = stripe_cancel_in_flight,
    .bdrv_drain_begin                   = stripe_drain_begin,
    .bdrv_drain_end                     = stripe_drain_end,
    .bdrv_detach_aio_context            = stripe_detach_aio_context,
    .bdrv_attach_aio_context            = stripe_attach_aio_context,
    .bdrv_inactivate                    = stripe_inactivate,
    .bdrv_co_invalidate_cache           = stripe_co_invalidate_cache,

    .bdrv_co_get_info                   = stripe_co_get_info,
    .bdrv_get_specific_info             = stripe_get_specific_info,
    .bdrv_get_specific_stats            = stripe_get_specific_stats,
    .bdrv_co_check                      = stripe_co_check,
    .bdrv_refresh_filename              = stripe_refresh_filename,
    .bdrv_gather_child_options          = stripe_gather_child_options,
    .bdrv_dirname                       = stripe_dirname,

    .strong_runtime_opts                = stripe_strong_runtime_opts,
};

static void bdrv_stripe_init(void)
{
    stripe_node_class = child_of_bds;
    stripe_node_class.inherit_options = stripe_inherit_node_options;
    bdrv_register(&bdrv_stripe);
}

block_init(bdrv_stripe_init);
