/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": formatting nodes into a new striped disk
 * (qemu-img create, QMP blockdev-create), and the stripe: filename syntax.
 *
 *   stripe:F0|F1|...|Fn-1   nodes given by filename or URL, in stripe
 *                           order (one node: "stripe:F0|")
 *   stripe:PREFIX           local files PREFIX.0, PREFIX.1, ...
 *
 * Nothing is written to any node until every node has been checked: a node
 * that carries the header of a stripe image is only overwritten with
 * force=on.
 */

#include "qemu/osdep.h"
#include "block/block_int.h"
#include "block/qdict.h"
#include "qapi/error.h"
#include "qapi/qapi-visit-block-core.h"
#include "qobject/qdict.h"
#include "qemu/cutils.h"
#include "qemu/option.h"
#include "qemu/uuid.h"
#include "system/block-backend.h"
#include "stripe.h"
#include "trace.h"

#define STRIPE_OPT_UNIT         "stripe-unit"
#define STRIPE_OPT_NODE_COUNT   "node-count"
#define STRIPE_OPT_FORCE        "force"
#define STRIPE_OPT_COPIES       "copies"
#define STRIPE_OPT_EXISTING     "existing"
#define STRIPE_DEFAULT_PREFIX_NODES 4

QemuOptsList stripe_create_opts = {
    .name = "stripe-create-opts",
    .head = QTAILQ_HEAD_INITIALIZER(stripe_create_opts.head),
    .desc = {
        {
            .name = BLOCK_OPT_SIZE,
            .type = QEMU_OPT_SIZE,
            .help = "Virtual disk size"
        },
        {
            .name = STRIPE_OPT_UNIT,
            .type = QEMU_OPT_SIZE,
            .help = "Bytes per stripe unit: a power of two from 512 bytes "
                    "to 64 MiB (default 256 KiB, or the nodes' allocation "
                    "unit if larger, e.g. an RBD object)"
        },
        {
            .name = STRIPE_OPT_NODE_COUNT,
            .type = QEMU_OPT_NUMBER,
            .help = "Number of node files PREFIX.0, PREFIX.1, ... for a "
                    "stripe:PREFIX filename (default 4)"
        },
        {
            .name = STRIPE_OPT_FORCE,
            .type = QEMU_OPT_BOOL,
            .help = "Format nodes that carry the header of another stripe "
                    "image, destroying it (default off)"
        },
        {
            .name = STRIPE_OPT_COPIES,
            .type = QEMU_OPT_NUMBER,
            .help = "How many distinct nodes store every stripe unit, 1 to "
                    "3 (default 1: no redundancy)"
        },
        {
            .name = STRIPE_OPT_BITMAP_REGION,
            .type = QEMU_OPT_SIZE,
            .help = "Replicated images: bytes of the disk per bit of the "
                    "write-intent bitmap, a power of two from 64k to 1G "
                    "(default 4M; 0: no bitmap, a failed node is rebuilt "
                    "whole)"
        },
        {
            .name = STRIPE_OPT_EXISTING,
            .type = QEMU_OPT_BOOL,
            .help = "Keep the stripe image the nodes hold and format "
                    "nothing, e.g. to create a qcow2 image inside it "
                    "(default off)"
        },
        { /* end of list */ }
    }
};

/* What a node held where create writes, put back if create fails. */
typedef struct StripeNodeSaved {
    int64_t len;
    uint8_t head[STRIPE_HEADER_SIZE];   /* its first MIN(len, size) bytes */
} StripeNodeSaved;

/*
 * Check one node before anything is written; fills *needs_grow and what
 * @saved must hold to put the node back as it was.
 */
static int coroutine_fn GRAPH_UNLOCKED
stripe_check_node(BlockBackend *blk, uint32_t pos, const char *name,
                  uint64_t needed, uint64_t stripe_unit, bool force,
                  bool *needs_grow, StripeNodeSaved *saved, Error **errp)
{
    BlockDriverState *bs = blk_bs(blk);
    uint8_t *buf = saved->head;
    StripeHeader h;
    int64_t len;
    int ret;

    if (stripe_unit % bs->bl.request_alignment) {
        error_setg(errp, "stripe: stripe-unit %" PRIu64 " is not a multiple "
                   "of node %u's (%s) request alignment %" PRIu32,
                   stripe_unit, pos, name, bs->bl.request_alignment);
        return -EINVAL;
    }
    len = blk_co_getlength(blk);
    if (len < 0) {
        error_setg_errno(errp, -len, "stripe: cannot get the length of node "
                         "%u (%s)", pos, name);
        return len;
    }
    saved->len = len;
    if (len > 0) {
        ret = blk_co_pread(blk, 0, MIN(len, STRIPE_HEADER_SIZE), buf, 0);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot read node %u (%s)",
                             pos, name);
            return ret;
        }
    }
    if (len >= STRIPE_HEADER_SIZE) {
        switch (stripe_header_decode(buf, STRIPE_HEADER_SIZE, &h, NULL)) {
        case STRIPE_HEADER_BLANK:
        case STRIPE_HEADER_FOREIGN:
            break;
        case STRIPE_HEADER_OK:
            if (!force) {
                char uuid[37];

                stripe_uuid_unparse(h.uuid, uuid);
                error_setg(errp, "stripe: node %u (%s) already belongs to "
                           "stripe image %s (node index %u of %u); use "
                           "force=on to format it anyway", pos, name,
                           uuid, h.node_index, h.node_count);
                return -EEXIST;
            }
            break;
        default:
            if (!force) {
                error_setg(errp, "stripe: node %u (%s) carries a damaged or "
                           "unsupported stripe header; use force=on to "
                           "format it anyway", pos, name);
                return -EEXIST;
            }
            break;
        }
    }
    *needs_grow = (uint64_t)len < needed;
    return 0;
}

/* How messages name a node: its filename, else its node name. */
static const char *stripe_bs_name(BlockDriverState *bs)
{
    return bs->filename[0] ? bs->filename : bdrv_get_node_name(bs);
}

/*
 * Read every header back: each node must hold the one written to it.  Two
 * names of one piece of storage (a symlink or hard link, a path through
 * "/./", one iSCSI LUN under two host names) pass every check by name,
 * but the node written first then reads what was written through the
 * other name.  Copies on the same storage would be no redundancy at all.
 */
static int coroutine_fn GRAPH_UNLOCKED
stripe_check_identity(BlockBackend **blks, const char *const *desc,
                      uint32_t count, const QemuUUID *uuid, Error **errp)
{
    uint8_t buf[STRIPE_HEADER_SIZE];
    StripeHeader h;
    bool ours;
    uint32_t i;
    int ret;

    for (i = 0; i < count; i++) {
        ret = blk_co_pread(blks[i], 0, sizeof(buf), buf, 0);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot read back the "
                             "header of node %u (%s)", i, desc[i]);
            return ret;
        }
        ours = stripe_header_decode(buf, sizeof(buf), &h, NULL) ==
               STRIPE_HEADER_OK &&
               !memcmp(h.uuid, uuid->data, sizeof(h.uuid));
        if (ours && h.node_index == i) {
            continue;
        }
        if (ours && h.node_index < count) {
            error_setg(errp, "stripe: nodes %u (%s) and %u (%s) are the "
                       "same storage: node %u reads the header written to "
                       "node %u", i, desc[i], h.node_index,
                       desc[h.node_index], i, h.node_index);
        } else {
            error_setg(errp, "stripe: node %u (%s) does not read back the "
                       "header just written to it", i, desc[i]);
        }
        return -EEXIST;
    }
    return 0;
}

/*
 * Put the nodes back as they were: their first bytes, then their length
 * where create grew them.  Two names of one node hold the same saved
 * bytes, so the order does not matter.
 */
static void coroutine_fn GRAPH_UNLOCKED
stripe_restore_nodes(BlockBackend **blks, const StripeNodeSaved *saved,
                     const bool *grown, uint32_t count)
{
    uint32_t i;

    for (i = 0; i < count; i++) {
        if (!blks[i]) {
            continue;
        }
        if (saved[i].len > 0) {
            blk_co_pwrite(blks[i], 0, MIN(saved[i].len, STRIPE_HEADER_SIZE),
                          saved[i].head, 0);
        }
        if (grown[i]) {
            blk_co_truncate(blks[i], saved[i].len, false, PREALLOC_MODE_OFF,
                            0, NULL);
        }
        blk_co_flush(blks[i]);
    }
}

/*
 * The write-intent bitmap of a new image: replicated images get one, of
 * *@region bytes per bit when @has_region (0: no bitmap), else of the
 * default size.  Returns NULL or a newly allocated message; *@region is
 * then the region size, 0 for no bitmap.
 */
static char *stripe_create_bitmap_check(uint64_t size, uint64_t stripe_unit,
                                        uint64_t copies, bool has_region,
                                        uint64_t *region)
{
    if (copies == 1) {
        if (*region) {
            return g_strdup_printf("bitmap-region %" PRIu64 " needs copies "
                                   "2 or 3: an image with one copy has "
                                   "no copies to resync", *region);
        }
        return NULL;
    }
    if (!has_region) {
        *region = STRIPE_DEFAULT_BITMAP_REGION;
    }
    if (!*region) {
        return NULL;    /* no bitmap: a failed node needs a full rebuild */
    }
    return stripe_bitmap_check(size, *region, STRIPE_BITMAP_OFFSET,
                               stripe_default_data_offset(stripe_unit));
}

/*
 * The nodes' own allocation units (bdrv_get_info()'s cluster size: an RBD
 * image's object, 4 MiB by default), asked once: *@largest, the largest
 * power of two up to STRIPE_MAX_NODE_ALLOC_UNIT any node has (0: none);
 * *@common, the smallest, capped there, when every node has one (else 0).
 */
static void coroutine_fn GRAPH_UNLOCKED
stripe_co_nodes_alloc_units(BlockDriverState **bss, uint32_t count,
                            uint64_t *largest, uint64_t *common)
{
    uint32_t i;

    *largest = 0;
    *common = STRIPE_MAX_NODE_ALLOC_UNIT;
    bdrv_graph_co_rdlock();
    for (i = 0; i < count; i++) {
        BlockDriverInfo bdi = { 0 };

        if (bdrv_co_get_info(bss[i], &bdi) < 0 || bdi.cluster_size <= 0 ||
            !is_power_of_2(bdi.cluster_size)) {
            *common = 0;
            continue;
        }
        if (bdi.cluster_size <= STRIPE_MAX_NODE_ALLOC_UNIT) {
            *largest = MAX(*largest, bdi.cluster_size);
        }
        *common = MIN(*common, bdi.cluster_size);
    }
    bdrv_graph_co_rdunlock();
}

/*
 * Format @count open nodes, in stripe order, as one new image.  @names
 * (optional) is how the user named them.  @stripe_unit 0: the default.
 */
static int coroutine_fn GRAPH_UNLOCKED
stripe_co_format(BlockDriverState **bss, const char *const *names,
                 uint32_t count, uint64_t size, uint64_t stripe_unit,
                 uint32_t copies, bool has_bitmap_region,
                 uint64_t bitmap_region, bool force, Error **errp)
{
    g_autofree BlockBackend **blks = g_new0(BlockBackend *, count);
    uint64_t alloc_largest, alloc_common;
    g_autofree bool *grow = g_new0(bool, count);
    g_autofree bool *grown = g_new0(bool, count);
    g_autofree StripeNodeSaved *saved = g_new0(StripeNodeSaved, count);
    bool written = false;
    g_autofree const char **desc = g_new0(const char *, count);
    g_autofree char *msg = NULL;
    StripeGeometry geo;
    StripeHeader h;
    QemuUUID uuid;
    uint64_t needed;
    uint32_t i, j;
    int ret = 0;

    /*
     * Without a unit given, the nodes' allocation unit when every node has
     * one larger than the default: one unit is then one RBD object, and a
     * large request one OSD operation instead of one per 256 KiB.  The
     * data starts on a boundary of the largest, so that a unit up to that
     * size never straddles two of them and costs two operations.
     */
    stripe_co_nodes_alloc_units(bss, count, &alloc_largest, &alloc_common);
    if (!stripe_unit) {
        stripe_unit = MAX(alloc_common, STRIPE_DEFAULT_UNIT);
    }
    msg = stripe_geometry_check(size, stripe_unit, count, copies) ?:
          stripe_create_bitmap_check(size, stripe_unit, copies,
                                     has_bitmap_region, &bitmap_region);
    if (msg) {
        error_setg(errp, "stripe: %s", msg);
        return -EINVAL;
    }
    for (i = 0; i < count; i++) {
        desc[i] = names ? names[i] : stripe_bs_name(bss[i]);
    }
    for (i = 0; i < count; i++) {
        for (j = 0; j < i; j++) {
            if (bss[i] == bss[j] || !strcmp(desc[i], desc[j])) {
                error_setg(errp, "stripe: nodes %u and %u are the same node "
                           "(%s)", j, i, desc[i]);
                return -EINVAL;
            }
        }
    }
    stripe_geometry_init(&geo, size, stripe_unit,
                         MAX(stripe_default_data_offset(stripe_unit),
                             alloc_largest),
                         count);
    stripe_geometry_set_copies(&geo, copies);
    if (bitmap_region) {
        stripe_geometry_set_bitmap(&geo, bitmap_region);
    }
    needed = stripe_node_size_needed(&geo);
    trace_stripe_create(count, size, stripe_unit);

    for (i = 0; i < count; i++) {
        blks[i] = blk_co_new_with_bs(bss[i], BLK_PERM_WRITE | BLK_PERM_RESIZE,
                                     BLK_PERM_ALL, errp);
        if (!blks[i]) {
            ret = -EPERM;
            goto out;
        }
        ret = stripe_check_node(blks[i], i, desc[i], needed,
                                stripe_unit, force, &grow[i], &saved[i],
                                errp);
        if (ret < 0) {
            goto out;
        }
    }

    /* Every node passed: from here on nodes are written. */
    written = true;
    for (i = 0; i < count; i++) {
        if (grow[i]) {
            grown[i] = true;
            ret = blk_co_truncate(blks[i], needed, false, PREALLOC_MODE_OFF,
                                  0, NULL);
            if (ret < 0) {
                error_setg(errp, "stripe: node %u (%s) is too small for size "
                           "%" PRIu64 " (it needs %" PRIu64 " bytes) and "
                           "cannot grow", i, desc[i], size, needed);
                goto out;
            }
        }
    }

    qemu_uuid_generate(&uuid);
    for (i = 0; i < count; i++) {
        uint8_t buf[STRIPE_HEADER_SIZE];

        h = (StripeHeader) {
            .version = STRIPE_VERSION,
            .header_size = STRIPE_HEADER_SIZE,
            .node_index = i,
            .node_count = count,
            .stripe_unit = stripe_unit,
            .virtual_size = size,
            .data_offset = geo.data_offset,
            .generation = 1,
            .copies = copies,
            .incompat_features = bitmap_region ? STRIPE_INCOMPAT_BITMAP : 0,
            .bitmap_region = geo.bitmap_region,
            .bitmap_offset = geo.bitmap_offset,
        };
        memcpy(h.uuid, uuid.data, sizeof(h.uuid));
        stripe_header_encode(&h, buf);
        ret = 0;
        if (bitmap_region) {
            /* all of its room: a disk that grows finds its new bits clear */
            ret = blk_co_pwrite_zeroes(blks[i], geo.bitmap_offset,
                                       geo.data_offset - geo.bitmap_offset,
                                       0);
        }
        if (ret == 0) {
            ret = blk_co_pwrite(blks[i], 0, sizeof(buf), buf, 0);
        }
        if (ret == 0) {
            ret = blk_co_flush(blks[i]);
        }
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot write the header of "
                             "node %u (%s)", i, desc[i]);
            goto out;
        }
    }
    ret = stripe_check_identity(blks, desc, count, &uuid, errp);

out:
    if (ret < 0 && written) {
        stripe_restore_nodes(blks, saved, grown, count);
    }
    for (i = 0; i < count; i++) {
        if (blks[i]) {
            blk_co_unref(blks[i]);
        }
    }
    return ret;
}

int coroutine_fn GRAPH_UNLOCKED
stripe_co_create(BlockdevCreateOptions *options, Error **errp)
{
    BlockdevCreateOptionsStripe *opts = &options->u.stripe;
    g_autofree BlockDriverState **bss = NULL;
    BlockdevRefList *l;
    uint32_t count = 0, i;
    int ret;

    assert(options->driver == BLOCKDEV_DRIVER_STRIPE);
    for (l = opts->nodes; l; l = l->next) {
        count++;
    }
    if (count < 1 || count > STRIPE_MAX_NODES) {
        error_setg(errp, "stripe: 'nodes' lists %u nodes, a stripe needs 1 "
                   "to %d", count, STRIPE_MAX_NODES);
        return -EINVAL;
    }
    bss = g_new0(BlockDriverState *, count);
    for (l = opts->nodes, i = 0; l; l = l->next, i++) {
        bss[i] = bdrv_co_open_blockdev_ref(l->value, errp);
        if (!bss[i]) {
            ret = -EIO;
            goto out;
        }
    }
    ret = stripe_co_format(bss, NULL, count, opts->size,
                           opts->has_stripe_unit ? opts->stripe_unit : 0,
                           opts->has_copies ? opts->copies : 1,
                           opts->has_bitmap_region, opts->bitmap_region,
                           opts->has_force && opts->force, errp);
out:
    for (i = 0; i < count; i++) {
        if (bss[i]) {
            bdrv_co_unref(bss[i]);
        }
    }
    return ret;
}

/*
 * How many nodes the image at PREFIX has, from the header of the first
 * PREFIX.i file that holds one; 0 if none does.  So that stripe:PREFIX
 * names every node even when a file is missing: a replicated image opens
 * without it (stripe-absent.c).
 */
static uint32_t stripe_prefix_node_count(const char *prefix)
{
    uint8_t buf[STRIPE_HEADER_SIZE];
    StripeHeader h;
    uint32_t i;

    for (i = 0; i < STRIPE_MAX_NODES; i++) {
        g_autofree char *name = g_strdup_printf("%s.%u", prefix, i);
        int fd = qemu_open_old(name, O_RDONLY);
        ssize_t len;

        if (fd < 0) {
            continue;
        }
        len = pread(fd, buf, sizeof(buf), 0);
        qemu_close(fd);
        if (len == sizeof(buf) &&
            stripe_header_decode(buf, sizeof(buf), &h, NULL) ==
            STRIPE_HEADER_OK) {
            return h.node_count;
        }
    }
    return 0;
}

/*
 * Split a stripe: filename into node filenames.  @prefix_count is the
 * number of nodes of the PREFIX form; 0 means "as many as the first
 * header found says, or as many PREFIX.i files as exist".
 */
static char **stripe_split_filename(const char *filename,
                                    uint32_t prefix_count, Error **errp)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *spec;
    uint32_t i;

    if (!strstart(filename, "stripe:", &spec)) {
        spec = filename;
    }
    if (strchr(spec, '|')) {
        g_auto(GStrv) parts = g_strsplit(spec, "|", -1);

        for (i = 0; parts[i]; i++) {
            if (parts[i][0]) {
                g_ptr_array_add(names, g_strdup(parts[i]));
            }
        }
    } else if (spec[0]) {
        if (!prefix_count) {
            prefix_count = stripe_prefix_node_count(spec);
        }
        for (i = 0; prefix_count ? i < prefix_count : true; i++) {
            char *name = g_strdup_printf("%s.%u", spec, i);

            if (!prefix_count && !g_file_test(name, G_FILE_TEST_EXISTS)) {
                g_free(name);
                break;
            }
            g_ptr_array_add(names, name);
            if (names->len > STRIPE_MAX_NODES) {
                break;
            }
        }
    }
    if (names->len < 1) {
        error_setg(errp, "stripe: '%s' names no node (use stripe:F0|F1|... "
                   "or stripe:PREFIX for files PREFIX.0, PREFIX.1, ...)",
                   filename);
        return NULL;
    }
    if (names->len > STRIPE_MAX_NODES) {
        error_setg(errp, "stripe: '%s' names more than %d nodes", filename,
                   STRIPE_MAX_NODES);
        return NULL;
    }
    g_ptr_array_add(names, NULL);
    return (char **)g_ptr_array_steal(names, NULL);
}

void stripe_parse_filename(const char *filename, QDict *options,
                           Error **errp)
{
    g_auto(GStrv) names = NULL;
    uint32_t i;

    if (qdict_haskey(options, "nodes") ||
        qdict_haskey(options, "nodes.0") ||
        qdict_haskey(options, "nodes.0.filename") ||
        qdict_haskey(options, "nodes.0.driver")) {
        error_setg(errp, "stripe: a filename and the option 'nodes' cannot "
                   "both be given");
        return;
    }
    names = stripe_split_filename(filename, 0, errp);
    if (!names) {
        return;
    }
    for (i = 0; names[i]; i++) {
        g_autofree char *key = g_strdup_printf("nodes.%u.filename", i);

        qdict_put_str(options, key, names[i]);
    }
}

/* A local file that does not exist yet: created by qemu-img create. */
static bool stripe_node_is_missing_file(const char *name)
{
    BlockDriver *drv = bdrv_find_protocol(name, true, NULL);
    const char *path = name;

    if (!drv || strcmp(drv->format_name, "file")) {
        return false;
    }
    strstart(name, "file:", &path);
    return !g_file_test(path, G_FILE_TEST_EXISTS);
}

/*
 * existing=on: the nodes must already hold one complete stripe image (the
 * driver opens it as it would for a guest); nothing is written.  Options
 * that describe a new image must agree with it or be left out.
 */
static int coroutine_fn GRAPH_UNLOCKED
stripe_co_use_existing(const char *filename, uint64_t size,
                       uint64_t stripe_unit, bool force, Error **errp)
{
    BlockDriverState *bs;
    BDRVStripeState *s;
    int ret = 0;

    if (force) {
        error_setg(errp, "stripe: existing=on keeps the image on the nodes,"
                   " force=on formats them: use one of the two");
        return -EINVAL;
    }
    bs = bdrv_co_open(filename, NULL, NULL,
                      BDRV_O_RDWR | BDRV_O_RESIZE | BDRV_O_PROTOCOL, errp);
    if (!bs) {
        error_prepend(errp, "existing=on: ");
        return -EINVAL;
    }
    s = bs->opaque;
    if (size && size != s->geo.virtual_size) {
        error_setg(errp, "stripe: existing=on keeps the image's size %"
                   PRIu64 ", not %" PRIu64 " (qemu-img resize changes it)",
                   s->geo.virtual_size, size);
        ret = -EINVAL;
    } else if (stripe_unit && stripe_unit != s->geo.stripe_unit) {
        error_setg(errp, "stripe: existing=on keeps the image's stripe-unit"
                   " %" PRIu64 ", not %" PRIu64, s->geo.stripe_unit,
                   stripe_unit);
        ret = -EINVAL;
    }
    bdrv_co_unref(bs);
    return ret;
}

int coroutine_fn GRAPH_UNLOCKED
stripe_co_create_opts(BlockDriver *drv, const char *filename,
                      QemuOpts *opts, Error **errp)
{
    g_auto(GStrv) names = NULL;
    g_autofree BlockDriverState **bss = NULL;
    g_autofree bool *created = NULL;
    uint64_t size, stripe_unit, count64, copies, bitmap_region;
    StripeGeometry geo;
    bool force, has_unit, has_bitmap_region;
    uint32_t count, i;
    int ret = 0;

    /*
     * The block layer shows every disk in whole sectors (a 1000-byte file
     * reads as 1024 bytes), so round up like qcow2 does; blockdev-create
     * still wants a multiple of 512.
     */
    size = qemu_opt_get_size_del(opts, BLOCK_OPT_SIZE, 0);
    if (size <= STRIPE_MAX_SIZE) {
        size = ROUND_UP(size, BDRV_SECTOR_SIZE);
    }
    has_unit = qemu_opt_get(opts, STRIPE_OPT_UNIT) != NULL;
    stripe_unit = qemu_opt_get_size_del(opts, STRIPE_OPT_UNIT,
                                        STRIPE_DEFAULT_UNIT);
    count64 = qemu_opt_get_number_del(opts, STRIPE_OPT_NODE_COUNT, 0);
    copies = qemu_opt_get_number_del(opts, STRIPE_OPT_COPIES, 1);
    has_bitmap_region = qemu_opt_get(opts, STRIPE_OPT_BITMAP_REGION) != NULL;
    bitmap_region = qemu_opt_get_size_del(opts, STRIPE_OPT_BITMAP_REGION, 0);
    force = qemu_opt_get_bool_del(opts, STRIPE_OPT_FORCE, false);
    if (qemu_opt_get_bool_del(opts, STRIPE_OPT_EXISTING, false)) {
        return stripe_co_use_existing(filename, size,
                                      has_unit ? stripe_unit : 0, force,
                                      errp);
    }

    if (count64 > STRIPE_MAX_NODES) {
        error_setg(errp, "stripe: node-count %" PRIu64 " is out of range "
                   "(1 to %d)", count64, STRIPE_MAX_NODES);
        return -EINVAL;
    }
    names = stripe_split_filename(filename, count64 ? count64 :
                                  STRIPE_DEFAULT_PREFIX_NODES, errp);
    if (!names) {
        return -EINVAL;
    }
    count = g_strv_length(names);
    if (count64 && count64 != count) {
        error_setg(errp, "stripe: node-count %" PRIu64 " disagrees with the "
                   "%u nodes named in '%s'", count64, count, filename);
        return -EINVAL;
    }
    {
        g_autofree char *msg = stripe_geometry_check(size, stripe_unit,
                                                     count, MIN(copies,
                                                     UINT32_MAX)) ?:
            stripe_create_bitmap_check(size, stripe_unit, copies,
                                       has_bitmap_region, &bitmap_region);
        if (msg) {
            error_setg(errp, "stripe: %s", msg);
            return -EINVAL;
        }
    }
    stripe_geometry_init(&geo, size, stripe_unit,
                         stripe_default_data_offset(stripe_unit), count);
    stripe_geometry_set_copies(&geo, copies);

    bss = g_new0(BlockDriverState *, count);
    created = g_new0(bool, count);
    for (i = 0; i < count; i++) {
        if (stripe_node_is_missing_file(names[i])) {
            QemuOpts *fopts = qemu_opts_create(&stripe_create_opts, NULL, 0,
                                               &error_abort);

            qemu_opt_set_number(fopts, BLOCK_OPT_SIZE,
                                stripe_node_size_needed(&geo), &error_abort);
            ret = bdrv_co_create_file(names[i], fopts, errp);
            qemu_opts_del(fopts);
            if (ret < 0) {
                error_prepend(errp, "stripe: node %u (%s): ", i, names[i]);
                goto out;
            }
            created[i] = true;
        }
        bss[i] = bdrv_co_open(names[i], NULL, NULL,
                              BDRV_O_RDWR | BDRV_O_RESIZE | BDRV_O_PROTOCOL,
                              errp);
        if (!bss[i]) {
            /* "Could not open ...: Operation not permitted" names no node */
            error_prepend(errp, "stripe: node %u: ", i);
            ret = -EIO;
            goto out;
        }
    }
    ret = stripe_co_format(bss, (const char *const *)names, count, size,
                           has_unit ? stripe_unit : 0, copies,
                           has_bitmap_region, bitmap_region, force, errp);

out:
    for (i = 0; i < count; i++) {
        if (bss[i]) {
            bdrv_co_unref(bss[i]);
        }
        /* Do not leave files behind that this failed call created. */
        if (ret < 0 && created[i]) {
            const char *path = names[i];

            strstart(names[i], "file:", &path);
            unlink(path);
        }
    }
    return ret;
}
