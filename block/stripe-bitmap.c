/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": the write-intent bitmap of a replicated image.
 *
 * A write reaches the copies of a unit at different moments: a crash, or a
 * node that fails, can leave them different.  So, as md does, every node
 * keeps a bitmap with a bit per region of the virtual disk (docs/layout.md,
 * "Write-intent bitmap"), and
 *
 *   - a region's bit is set on every live node, written through (FUA),
 *     before the first write into the region goes to any copy;
 *   - it is cleared lazily: at a flush, once no write has started in the
 *     region for two rotations (STRIPE_BITMAP_ROTATE_NS apart) and none is
 *     in flight, so that the flush has put its writes on every copy; never
 *     while a node is failed or a resync has work left, whose regions
 *     are exactly the set bits;
 *   - a clean close clears every bit.
 *
 * After a crash the set bits are the regions whose copies may differ; when
 * a failed node comes back they hold every region it missed
 * (stripe-resync.c copies just those).
 *
 * Locks: @lock (a QemuMutex, never held across a yield) covers the
 * in-memory state; @io_lock (a CoMutex, taken before @lock and before
 * health_lock) serialises the writes of the on-node bitmap, so that a
 * later write of a block always carries the newer bits.  @durable only
 * changes with both held: under @io_lock alone it may be read.
 */

#include "qemu/osdep.h"
#include "block/block-io.h"
#include "block/block_int.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/memalign.h"
#include "stripe.h"
#include "trace.h"

#define BITS_PER_BLOCK  (STRIPE_BITMAP_BLOCK * 8)

static bool stripe_has_bitmap(BDRVStripeState *s)
{
    return s->geo.bitmap_region != 0;
}

static unsigned long *stripe_bitmap_realloc(unsigned long *map,
                                            uint64_t old_bits,
                                            uint64_t new_bits)
{
    unsigned long *grown = bitmap_new(new_bits);

    if (map) {
        bitmap_copy(grown, map, old_bits);
        g_free(map);
    }
    return grown;
}

/* Room for @regions bits (more than now), the new ones clear. */
static void stripe_bitmap_resize(StripeBitmap *b, uint64_t regions)
{
    b->durable = stripe_bitmap_realloc(b->durable, b->regions, regions);
    b->image = stripe_bitmap_realloc(b->image, b->regions, regions);
    b->recent = stripe_bitmap_realloc(b->recent, b->regions, regions);
    b->older = stripe_bitmap_realloc(b->older, b->regions, regions);
    b->regions = regions;
}

/*
 * Encode blocks [@b0, @b1] of @image, little-endian as on the nodes, into
 * @buf.
 */
static void stripe_bitmap_encode(StripeBitmap *b, uint64_t b0, uint64_t b1,
                                 void *buf)
{
    uint64_t first = b0 * BITS_PER_BLOCK;
    uint64_t end = MIN((b1 + 1) * BITS_PER_BLOCK, b->regions);

    memset(buf, 0, (b1 - b0 + 1) * STRIPE_BITMAP_BLOCK);
    if (end > first) {
        bitmap_to_le(buf, b->image + first / BITS_PER_LONG, end - first);
    }
}

/*
 * Write blocks [@b0, @b1] of the bitmap as @image has them to the live
 * nodes (@node < 0) or to node @node.  Called with @io_lock held.
 */
static int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_write_blocks(BlockDriverState *bs, uint64_t b0, uint64_t b1,
                              BdrvRequestFlags flags, int node)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    uint64_t bytes = (b1 - b0 + 1) * STRIPE_BITMAP_BLOCK;
    uint64_t offset = s->geo.bitmap_offset + b0 * STRIPE_BITMAP_BLOCK;
    QEMUIOVector qiov;
    void *buf;
    int ret;

    buf = qemu_try_blockalign(s->nodes[0]->bs, bytes);
    if (!buf) {
        return -ENOMEM;
    }
    qemu_mutex_lock(&b->lock);
    stripe_bitmap_encode(b, b0, b1, buf);
    qemu_mutex_unlock(&b->lock);
    qemu_iovec_init_buf(&qiov, buf, bytes);
    trace_stripe_bitmap_write(bs, b0, b1, node, flags);
    if (node >= 0) {
        ret = bdrv_co_pwritev(s->nodes[node], offset, bytes, &qiov, flags);
    } else {
        ret = stripe_co_each_node(bs, STRIPE_OP_WRITE, offset, bytes, &qiov,
                                  flags);
    }
    qemu_vfree(buf);
    return ret;
}

/* Count a write in flight in region @r.  Called with @lock held. */
static void stripe_bitmap_writers_inc(StripeBitmap *b, uint64_t r)
{
    gpointer key = GUINT_TO_POINTER(r);
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(b->writers, key));

    g_hash_table_insert(b->writers, key, GUINT_TO_POINTER(n + 1));
}

/* Returns the writes left in flight in region @r.  With @lock held. */
static guint stripe_bitmap_writers_dec(StripeBitmap *b, uint64_t r)
{
    gpointer key = GUINT_TO_POINTER(r);
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(b->writers, key));

    assert(n > 0);
    if (n == 1) {
        g_hash_table_remove(b->writers, key);
    } else {
        g_hash_table_insert(b->writers, key, GUINT_TO_POINTER(n - 1));
    }
    return n - 1;
}

/* Set the bits of regions [@first, @last] on every live node. */
static int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_mark(BlockDriverState *bs, uint64_t first, uint64_t last)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    uint64_t r, b0 = UINT64_MAX, b1 = 0;
    int ret;

    QEMU_LOCK_GUARD(&b->io_lock);
    /* @durable changes only under @io_lock, held here */
    for (r = first; r <= last; r++) {
        if (!test_bit(r, b->durable)) {
            set_bit(r, b->image);
            b0 = MIN(b0, r / BITS_PER_BLOCK);
            b1 = r / BITS_PER_BLOCK;
        }
    }
    if (b0 == UINT64_MAX) {
        return 0;       /* another write marked them meanwhile */
    }
    ret = stripe_bitmap_co_write_blocks(bs, b0, b1, BDRV_REQ_FUA, -1);
    if (ret < 0) {
        return ret;
    }
    qemu_mutex_lock(&b->lock);
    bitmap_set(b->durable, first, last - first + 1);
    qemu_mutex_unlock(&b->lock);
    qatomic_inc(&b->marks);
    return 0;
}

static void stripe_bitmap_range(StripeBitmap *b, int64_t offset,
                                int64_t bytes, uint64_t *first,
                                uint64_t *last)
{
    *first = offset >> b->shift;
    *last = (offset + bytes - 1) >> b->shift;
    assert(*last < b->regions);
}

int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_start_write(BlockDriverState *bs, int64_t offset,
                             int64_t bytes)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    uint64_t first, last, r;
    bool clean = false;
    int ret;

    if (!stripe_has_bitmap(s) || bytes <= 0) {
        return 0;
    }
    stripe_bitmap_range(b, offset, bytes, &first, &last);
    qemu_mutex_lock(&b->lock);
    /* a region being resynced takes no new writes until it is done */
    while (b->resync_region >= first && b->resync_region <= last) {
        qemu_co_queue_wait(&b->resync_wait, &b->lock);
    }
    for (r = first; r <= last; r++) {
        stripe_bitmap_writers_inc(b, r);
        set_bit(r, b->recent);
        clean = clean || !test_bit(r, b->durable);
    }
    qemu_mutex_unlock(&b->lock);
    if (clean) {
        ret = stripe_bitmap_co_mark(bs, first, last);
        if (ret < 0) {
            stripe_bitmap_end_write(bs, offset, bytes);
            return ret;
        }
    }
    return 0;
}

void stripe_bitmap_end_write(BlockDriverState *bs, int64_t offset,
                             int64_t bytes)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    uint64_t first, last, r;

    if (!stripe_has_bitmap(s) || bytes <= 0) {
        return;
    }
    stripe_bitmap_range(b, offset, bytes, &first, &last);
    QEMU_LOCK_GUARD(&b->lock);
    for (r = first; r <= last; r++) {
        if (!stripe_bitmap_writers_dec(b, r) && r == b->resync_region) {
            qemu_co_queue_restart_all(&b->writers_done);
        }
    }
}

/*
 * Whether bits may be cleared: not while a node is failed (its regions
 * must stay set until it is resynced) or a resync has work left.
 */
static bool stripe_bitmap_may_clear(BDRVStripeState *s)
{
    return !qatomic_read(&s->failed) &&
           !qatomic_read(&s->bitmap.resync_pending);
}

unsigned long *stripe_bitmap_flush_begin(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    unsigned long *clear, *swap;
    GHashTableIter iter;
    gpointer key;

    if (!stripe_has_bitmap(s) || !stripe_bitmap_may_clear(s)) {
        return NULL;
    }
    QEMU_LOCK_GUARD(&b->lock);
    if (now - b->rotated_ns < STRIPE_BITMAP_ROTATE_NS) {
        return NULL;
    }
    b->rotated_ns = now;
    clear = bitmap_new(b->regions);
    bitmap_andnot(clear, b->durable, b->recent, b->regions);
    bitmap_andnot(clear, clear, b->older, b->regions);
    g_hash_table_iter_init(&iter, b->writers);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        clear_bit(GPOINTER_TO_UINT(key), clear);
    }
    swap = b->older;
    b->older = b->recent;
    b->recent = swap;
    bitmap_zero(b->recent, b->regions);
    if (bitmap_empty(clear, b->regions)) {
        g_free(clear);
        return NULL;
    }
    return clear;
}

int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_flush_end(BlockDriverState *bs, unsigned long *clear)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    uint64_t r, n, b0, b1;
    int ret;

    QEMU_LOCK_GUARD(&b->io_lock);
    if (!stripe_bitmap_may_clear(s)) {
        return 0;
    }
    qemu_mutex_lock(&b->lock);
    /* a write that started since flush_begin keeps its region */
    bitmap_andnot(clear, clear, b->recent, b->regions);
    n = bitmap_count_one(clear, b->regions);
    if (!n) {
        qemu_mutex_unlock(&b->lock);
        return 0;
    }
    b0 = find_first_bit(clear, b->regions) / BITS_PER_BLOCK;
    b1 = find_last_bit(clear, b->regions) / BITS_PER_BLOCK;
    bitmap_andnot(b->durable, b->durable, clear, b->regions);
    bitmap_andnot(b->image, b->image, clear, b->regions);
    qemu_mutex_unlock(&b->lock);
    for (r = b0; r <= b1; r++) {
        /* Clearing may be late: no FUA, the next flush takes it. */
        ret = stripe_bitmap_co_write_blocks(bs, r, r, 0, -1);
        if (ret < 0) {
            return ret;
        }
    }
    qatomic_add(&b->clears, n);
    trace_stripe_bitmap_cleared(bs, n);
    return 0;
}

/*
 * Set every region, on every live node: a blank node replaces a failed
 * one, and all of its units must be copied, also by the resync of a
 * later open if this process dies first.
 */
int coroutine_fn GRAPH_RDLOCK stripe_bitmap_co_set_all(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    int ret;

    QEMU_LOCK_GUARD(&b->io_lock);
    qatomic_set(&b->resync_pending, true);
    if (!b->regions) {
        return 0;
    }
    bitmap_set(b->image, 0, b->regions);
    ret = stripe_bitmap_co_write_blocks(bs, 0, (b->regions - 1) /
                                        BITS_PER_BLOCK, BDRV_REQ_FUA, -1);
    if (ret < 0) {
        return ret;
    }
    qemu_mutex_lock(&b->lock);
    bitmap_set(b->durable, 0, b->regions);
    qemu_mutex_unlock(&b->lock);
    return 0;
}

/*
 * Node @node holds every region again: give it the bitmap, then mark it
 * live.  Under @io_lock, so that no marking in between misses it.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_bring_back(BlockDriverState *bs, uint32_t node,
                            Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    int ret;

    QEMU_LOCK_GUARD(&b->io_lock);
    if (b->regions) {
        ret = stripe_bitmap_co_write_blocks(bs, 0, (b->regions - 1) /
                                            BITS_PER_BLOCK, BDRV_REQ_FUA,
                                            node);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot write the "
                             "write-intent bitmap of node index %u (%s)",
                             node, stripe_node_name(s, node));
            return ret;
        }
    }
    return stripe_co_mark_live(bs, node, errp);
}

/*
 * A clean close, or the end of an offline resync: no write is in flight,
 * each one is on every copy, and once the nodes are flushed no bit needs
 * to stay set.
 */
void coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_clear_all(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    uint64_t blocks = DIV_ROUND_UP(b->regions, BITS_PER_BLOCK);
    int ret;

    QEMU_LOCK_GUARD(&b->io_lock);
    if (!stripe_bitmap_may_clear(s) ||
        bitmap_empty(b->durable, b->regions)) {
        return;
    }
    ret = stripe_co_each_node(bs, STRIPE_OP_FLUSH, 0, 0, NULL, 0);
    if (ret < 0) {
        return;
    }
    qemu_mutex_lock(&b->lock);
    assert(g_hash_table_size(b->writers) == 0);
    bitmap_zero(b->durable, b->regions);
    bitmap_zero(b->image, b->regions);
    qemu_mutex_unlock(&b->lock);
    if (stripe_bitmap_co_write_blocks(bs, 0, blocks - 1, 0, -1) == 0) {
        stripe_co_each_node(bs, STRIPE_OP_FLUSH, 0, 0, NULL, 0);
    }
}

typedef struct StripeBitmapClose {
    BlockDriverState *bs;
    bool done;
} StripeBitmapClose;

static void coroutine_fn stripe_bitmap_clear_entry(void *opaque)
{
    StripeBitmapClose *c = opaque;

    bdrv_graph_co_rdlock();
    stripe_bitmap_co_clear_all(c->bs);
    bdrv_graph_co_rdunlock();
    c->done = true;
    aio_wait_kick();
}

void stripe_bitmap_free(BDRVStripeState *s)
{
    StripeBitmap *b = &s->bitmap;

    if (!b->writers) {
        return;
    }
    g_hash_table_destroy(b->writers);
    g_free(b->durable);
    g_free(b->image);
    g_free(b->recent);
    g_free(b->older);
    g_free(b->todo);
    qemu_mutex_destroy(&b->lock);
    memset(b, 0, sizeof(*b));
}

void stripe_bitmap_close(BlockDriverState *bs)
{
    BDRVStripeState *s = bs->opaque;

    GLOBAL_STATE_CODE();
    if (!stripe_has_bitmap(s)) {
        return;
    }
    if (!bdrv_is_read_only(bs) && !(bs->open_flags & BDRV_O_INACTIVE)) {
        StripeBitmapClose c = { .bs = bs };
        Coroutine *co = qemu_coroutine_create(stripe_bitmap_clear_entry, &c);

        bdrv_inc_in_flight(bs);
        aio_co_enter(bdrv_get_aio_context(bs), co);
        BDRV_POLL_WHILE(bs, !c.done);
        bdrv_dec_in_flight(bs);
    }
    stripe_bitmap_free(s);
}

/* Read the bitmap of every live node into @durable and @image. */
static int GRAPH_RDLOCK stripe_bitmap_load(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    uint64_t bytes = stripe_bitmap_bytes(s->geo.virtual_size,
                                         s->geo.bitmap_region);
    g_autofree unsigned long *node_bits = bitmap_new(b->regions);
    void *buf;
    uint32_t i;
    int ret = 0;

    if (!bytes) {
        return 0;
    }
    buf = qemu_try_blockalign(s->nodes[0]->bs, bytes);
    if (!buf) {
        error_setg(errp, "stripe: no memory for the write-intent bitmap");
        return -ENOMEM;
    }
    for (i = 0; i < s->node_count; i++) {
        if (stripe_node_failed(s, i)) {
            continue;
        }
        ret = bdrv_pread(s->nodes[i], s->geo.bitmap_offset, bytes, buf, 0);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "stripe: cannot read the "
                             "write-intent bitmap of node index %u (%s)", i,
                             stripe_node_name(s, i));
            break;
        }
        bitmap_from_le(node_bits, buf, b->regions);
        /* the last long's bits past the end are not regions */
        bitmap_clear(node_bits, b->regions,
                     BITS_TO_LONGS(b->regions) * BITS_PER_LONG - b->regions);
        bitmap_or(b->durable, b->durable, node_bits, b->regions);
    }
    qemu_vfree(buf);
    bitmap_copy(b->image, b->durable, b->regions);
    /* no bit may clear before a resync has copied the regions */
    qatomic_set(&b->resync_pending, !bitmap_empty(b->durable, b->regions) ||
                qatomic_read(&s->failed));
    return ret;
}

int GRAPH_RDLOCK stripe_bitmap_open(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;

    GLOBAL_STATE_CODE();
    if (!stripe_has_bitmap(s)) {
        return 0;
    }
    qemu_mutex_init(&b->lock);
    qemu_co_mutex_init(&b->io_lock);
    qemu_co_queue_init(&b->resync_wait);
    qemu_co_queue_init(&b->writers_done);
    b->shift = ctz64(s->geo.bitmap_region);
    stripe_bitmap_resize(b, stripe_bitmap_regions(s->geo.virtual_size,
                                                  s->geo.bitmap_region));
    b->writers = g_hash_table_new(NULL, NULL);
    b->resync_region = UINT64_MAX;
    b->rotated_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    return stripe_bitmap_load(bs, errp);
}

/*
 * The nodes come back from another host (migration), which may have
 * resized the disk and changed the bitmap: read it again.  No request is
 * in flight.
 */
int coroutine_fn GRAPH_RDLOCK
stripe_bitmap_co_reload(BlockDriverState *bs, Error **errp)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    uint64_t regions;

    if (!stripe_has_bitmap(s)) {
        return 0;
    }
    regions = stripe_bitmap_regions(s->geo.virtual_size,
                                    s->geo.bitmap_region);
    QEMU_LOCK_GUARD(&b->io_lock);
    qemu_mutex_lock(&b->lock);
    assert(g_hash_table_size(b->writers) == 0);
    if (regions > b->regions) {
        stripe_bitmap_resize(b, regions);
    }
    bitmap_zero(b->durable, b->regions);
    qemu_mutex_unlock(&b->lock);
    return stripe_bitmap_load(bs, errp);
}

void coroutine_fn stripe_bitmap_co_grow(BlockDriverState *bs, uint64_t size)
{
    BDRVStripeState *s = bs->opaque;
    StripeBitmap *b = &s->bitmap;
    uint64_t regions;

    if (!stripe_has_bitmap(s)) {
        return;
    }
    regions = stripe_bitmap_regions(size, s->geo.bitmap_region);
    QEMU_LOCK_GUARD(&b->io_lock);
    if (regions > b->regions) {
        qemu_mutex_lock(&b->lock);
        stripe_bitmap_resize(b, regions);
        qemu_mutex_unlock(&b->lock);
    }
}

/*
 * Whether every live copy of the range holds the same data: none of its
 * regions is set.  A write sets its regions on every live node before it
 * writes any copy, and a bit clears only once a flush has put the
 * region's writes on every copy, so a clear bit means that no write is
 * in flight there and none left the copies different (a crash, a node
 * that failed).  Without a bitmap that is not known: false.
 */
bool stripe_bitmap_copies_agree(BDRVStripeState *s, int64_t offset,
                                int64_t bytes)
{
    StripeBitmap *b = &s->bitmap;
    uint64_t first, last;

    if (!stripe_has_bitmap(s) || bytes <= 0) {
        return false;
    }
    QEMU_LOCK_GUARD(&b->lock);
    stripe_bitmap_range(b, offset, bytes, &first, &last);
    return find_next_bit(b->durable, last + 1, first) > last;
}

uint64_t stripe_bitmap_dirty_regions(BDRVStripeState *s)
{
    StripeBitmap *b = &s->bitmap;

    if (!stripe_has_bitmap(s)) {
        return 0;
    }
    QEMU_LOCK_GUARD(&b->lock);
    return bitmap_count_one(b->durable, b->regions);
}

uint64_t stripe_bitmap_snapshot(BDRVStripeState *s)
{
    StripeBitmap *b = &s->bitmap;

    QEMU_LOCK_GUARD(&b->lock);
    g_free(b->todo);
    b->todo = bitmap_new(b->regions);
    b->todo_regions = b->regions;
    bitmap_copy(b->todo, b->durable, b->regions);
    return bitmap_count_one(b->todo, b->todo_regions);
}

bool stripe_bitmap_next_dirty(BDRVStripeState *s, uint64_t *region)
{
    StripeBitmap *b = &s->bitmap;

    QEMU_LOCK_GUARD(&b->lock);
    if (*region >= b->todo_regions) {
        return false;
    }
    *region = find_next_bit(b->todo, b->todo_regions, *region);
    return *region < b->todo_regions;
}

void coroutine_fn stripe_bitmap_co_lock_region(BDRVStripeState *s,
                                               uint64_t region)
{
    StripeBitmap *b = &s->bitmap;

    QEMU_LOCK_GUARD(&b->lock);
    assert(b->resync_region == UINT64_MAX);
    b->resync_region = region;
    while (g_hash_table_lookup(b->writers, GUINT_TO_POINTER(region))) {
        qemu_co_queue_wait(&b->writers_done, &b->lock);
    }
}

/* Whether writes were held off meanwhile (they may go on now). */
bool stripe_bitmap_unlock_region(BDRVStripeState *s)
{
    StripeBitmap *b = &s->bitmap;
    bool held;

    QEMU_LOCK_GUARD(&b->lock);
    b->resync_region = UINT64_MAX;
    held = !qemu_co_queue_empty(&b->resync_wait);
    qemu_co_queue_restart_all(&b->resync_wait);
    return held;
}
