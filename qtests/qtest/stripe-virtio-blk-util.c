/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the stripe driver's virtio-blk qtests: requests on a queue,
 * patterns whose every byte depends on its disk offset, a shadow of what
 * the disk holds, the geometry the driver reports, command-line pieces.
 *
 * Copyright (c) 2026 qemu-stripe developers
 */

#include "qemu/osdep.h"
#include "libqtest-single.h"
#include "qemu/bswap.h"
#include "qemu/units.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "standard-headers/linux/virtio_blk.h"
#include "standard-headers/linux/virtio_config.h"
#include "stripe-virtio-blk-util.h"

/*
 * The pattern byte at disk offset @off for @seed.  Every byte depends on
 * its absolute offset, so data read from the wrong unit or node never
 * matches by accident.
 */
static uint8_t pattern_byte(uint64_t off, uint32_t seed)
{
    uint64_t x = off * 0x9e3779b97f4a7c15ULL + seed * 0xd6e8feb86659fd93ULL;

    x ^= x >> 31;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 29;
    return x & 0xff;
}

void pattern_fill(uint8_t *buf, uint64_t off, size_t len,
                         uint32_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = pattern_byte(off + i, seed);
    }
}

/* Compare @len bytes read at disk offset @off with what is expected. */
void verify_bytes(const StripeDev *d, const uint8_t *got,
                         const uint8_t *want, uint64_t off, size_t len,
                         const char *what)
{
    size_t i;

    if (memcmp(got, want, len) == 0) {
        return;
    }
    for (i = 0; got[i] == want[i]; i++) {
        /* find the first difference */
    }
    g_test_message("%s: first mismatch at disk byte %" PRIu64
                   " (sector %" PRIu64 ", stripe unit %" PRIu64 ", node %"
                   PRIu64 "): read 0x%02x, expected 0x%02x", what, off + i,
                   (off + i) / SECTOR, (off + i) / d->geo.unit,
                   (off + i) / d->geo.unit % d->geo.nodes, got[i], want[i]);
    g_assert_cmphex(got[i], ==, want[i]);
}


void shadow_init(Shadow *sh, uint64_t off, size_t len)
{
    sh->off = off;
    sh->len = len;
    sh->buf = g_malloc(len);
}

uint8_t *shadow_at(Shadow *sh, uint64_t off, size_t len)
{
    g_assert_cmpuint(off, >=, sh->off);
    g_assert_cmpuint(off + len, <=, sh->off + sh->len);
    return sh->buf + (off - sh->off);
}

void shadow_free(Shadow *sh)
{
    g_free(sh->buf);
    sh->buf = NULL;
}

static void put_le_or_be32(const StripeDev *d, uint8_t *p, uint32_t v)
{
    if (qvirtio_is_big_endian(d->vdev)) {
        stl_be_p(p, v);
    } else {
        stl_le_p(p, v);
    }
}

static void put_le_or_be64(const StripeDev *d, uint8_t *p, uint64_t v)
{
    if (qvirtio_is_big_endian(d->vdev)) {
        stq_be_p(p, v);
    } else {
        stq_le_p(p, v);
    }
}

/*
 * Queue a request and notify the device without waiting for it.  The data
 * of IN and OUT requests is split into @nseg descriptors whose boundaries
 * are deliberately not sector aligned.
 */
void blk_submit(StripeDev *d, BlkReq *r, uint32_t type,
                       uint64_t sector, const uint8_t *data, size_t len,
                       unsigned nseg)
{
    uint8_t hdr[REQ_HDR_SIZE] = { 0 };
    unsigned ndesc = len ? nseg + 2 : 2;
    size_t start = 0;
    unsigned i;

    g_assert_cmpuint(len % SECTOR, ==, 0);
    g_assert(len == 0 || (nseg >= 1 && len >= (size_t)nseg * SECTOR));
    /* libqos hands out each descriptor of the ring only once */
    g_assert_cmpuint(d->vq->free_head + ndesc, <=, d->vq->size);

    *r = (BlkReq) {
        .type = type,
        .sector = sector,
        .len = len,
    };
    r->addr = guest_alloc(d->alloc, REQ_HDR_SIZE + len + 1);

    put_le_or_be32(d, hdr, type);
    put_le_or_be32(d, hdr + 4, 0);
    put_le_or_be64(d, hdr + 8, sector);
    qtest_memwrite(d->qts, r->addr, hdr, sizeof(hdr));
    if (type == VIRTIO_BLK_T_OUT) {
        qtest_bufwrite(d->qts, r->addr + REQ_HDR_SIZE, data, len);
    } else if (len) {
        /* so that stale guest memory cannot pass for read data */
        qtest_memset(d->qts, r->addr + REQ_HDR_SIZE, 0xee, len);
    }
    /* the device overwrites this with a VIRTIO_BLK_S_* value */
    qtest_writeb(d->qts, r->addr + REQ_HDR_SIZE + len, 0xff);

    r->head = qvirtqueue_add(d->qts, d->vq, r->addr, REQ_HDR_SIZE, false,
                             true);
    for (i = 0; len && i < nseg; i++) {
        size_t end = i + 1 == nseg ? len : (i + 1) * len / nseg + 7 * (i & 1);

        qvirtqueue_add(d->qts, d->vq, r->addr + REQ_HDR_SIZE + start,
                       end - start, type == VIRTIO_BLK_T_IN, true);
        start = end;
    }
    qvirtqueue_add(d->qts, d->vq, r->addr + REQ_HDR_SIZE + len, 1, true,
                   false);
    qvirtqueue_kick(d->qts, d->vdev, d->vq, r->head);
}

/*
 * Wait until the device has used every request of @reqs, in any order,
 * for at most @timeout_us.
 */
void blk_wait_timeout(StripeDev *d, BlkReq *reqs, unsigned n,
                             gint64 timeout_us)
{
    gint64 deadline = g_get_monotonic_time() + timeout_us;
    unsigned pending = n;
    unsigned i;

    for (i = 0; i < n; i++) {
        reqs[i].done = false;
    }
    while (pending) {
        uint32_t head;

        if (!qvirtqueue_get_buf(d->qts, d->vq, &head, NULL)) {
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
            g_usleep(100);
            continue;
        }
        for (i = 0; i < n && reqs[i].head != head; i++) {
            /* find the request */
        }
        g_assert_cmpuint(i, <, n);
        g_assert_false(reqs[i].done);
        reqs[i].done = true;
        pending--;
    }
}

void blk_wait(StripeDev *d, BlkReq *reqs, unsigned n)
{
    blk_wait_timeout(d, reqs, n, REQ_TIMEOUT_US);
}

uint8_t blk_status(StripeDev *d, const BlkReq *r)
{
    return qtest_readb(d->qts, r->addr + REQ_HDR_SIZE + r->len);
}

/* Fetch what an IN request read, then release the request's memory. */
void blk_finish(StripeDev *d, BlkReq *r, uint8_t *data)
{
    if (data) {
        qtest_bufread(d->qts, r->addr + REQ_HDR_SIZE, data, r->len);
    }
    guest_free(d->alloc, r->addr);
    r->addr = 0;
}

/* One request, waited for; returns its status. */
uint8_t blk_do(StripeDev *d, uint32_t type, uint64_t sector,
                      uint8_t *data, size_t len, unsigned nseg)
{
    BlkReq r;
    uint8_t status;

    blk_submit(d, &r, type, sector, data, len, nseg);
    blk_wait(d, &r, 1);
    status = blk_status(d, &r);
    blk_finish(d, &r, type == VIRTIO_BLK_T_IN && !status ? data : NULL);
    return status;
}

/* Write @len bytes of pattern @seed at @off and record them in @sh. */
void blk_write_pattern(StripeDev *d, Shadow *sh, uint64_t off,
                              size_t len, uint32_t seed, unsigned nseg)
{
    uint8_t *data = shadow_at(sh, off, len);

    pattern_fill(data, off, len, seed);
    g_assert_cmpuint(blk_do(d, VIRTIO_BLK_T_OUT, off / SECTOR, data, len,
                            nseg), ==, VIRTIO_BLK_S_OK);
}

/* Read @len bytes at @off and check them against @sh. */
void blk_read_verify(StripeDev *d, Shadow *sh, uint64_t off,
                            size_t len, unsigned nseg, const char *what)
{
    g_autofree uint8_t *data = g_malloc(len);

    g_assert_cmpuint(blk_do(d, VIRTIO_BLK_T_IN, off / SECTOR, data, len,
                            nseg), ==, VIRTIO_BLK_S_OK);
    verify_bytes(d, data, shadow_at(sh, off, len), off, len, what);
}

/*
 * drive0's image in the query-block reply @resp: a stripe.  drive0 is the
 * BlockBackend's name (-drive id=drive0) or, for a device attached to a
 * -blockdev node, the node's name.
 */
QDict *drive0_image(QDict *resp)
{
    QListEntry *e;

    g_assert(qdict_haskey(resp, "return"));
    QLIST_FOREACH_ENTRY(qdict_get_qlist(resp, "return"), e) {
        QDict *blk = qobject_to(QDict, qlist_entry_obj(e));
        QDict *image;

        QDict *inserted = qdict_get_qdict(blk, "inserted");

        if (strcmp(qdict_get_str(blk, "device"), "drive0") &&
            (!inserted ||
             strcmp(qdict_get_str(inserted, "node-name"), "drive0"))) {
            continue;
        }
        image = qdict_get_qdict(inserted, "image");
        g_assert_cmpstr(qdict_get_str(image, "format"), ==, "stripe");
        return image;
    }
    g_assert_not_reached();
}

/* What the stripe driver tells about that image. */
QDict *stripe_image_data(QDict *image)
{
    QDict *spec = qdict_get_qdict(image, "format-specific");

    g_assert_cmpstr(qdict_get_str(spec, "type"), ==, "stripe");
    return qdict_get_qdict(spec, "data");
}

void stripe_query_geometry(QTestState *qts, StripeGeometry *geo)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'query-block' }");
    QDict *image = drive0_image(resp);
    QDict *data = stripe_image_data(image);
    QListEntry *n;

    geo->size = qdict_get_int(image, "virtual-size");
    geo->unit = qdict_get_int(data, "stripe-unit");
    geo->data_offset = qdict_get_int(data, "data-offset");
    geo->nodes = qlist_size(qdict_get_qlist(data, "nodes"));
    geo->debug_node = -1;
    /*
     * A node with inject-error rules has no plain filename: it is
     * named by a json: filename that spells out its driver.
     */
    QLIST_FOREACH_ENTRY(qdict_get_qlist(data, "nodes"), n) {
        QDict *node = qobject_to(QDict, qlist_entry_obj(n));

        if (strstr(qdict_get_str(node, "filename"), "blkdebug")) {
            g_assert_cmpint(geo->debug_node, ==, -1);
            geo->debug_node = qdict_get_int(node, "index");
        }
    }
    qobject_unref(resp);
}

/*
 * Negotiate the features these tests understand, and the features of
 * @extra, set up @nq queues, one per StripeDev of @d, and read the
 * capacity and the stripe geometry into each.
 */
void stripe_dev_setup_queues(StripeDev *d, unsigned nq, QVirtioBlk *blk,
                             QGuestAllocator *alloc, uint64_t extra)
{
    uint64_t offered;
    uint64_t wanted = (1ULL << VIRTIO_F_VERSION_1) |
                      (1ULL << VIRTIO_BLK_F_FLUSH) |
                      (1ULL << VIRTIO_BLK_F_SEG_MAX) |
                      (1ULL << VIRTIO_BLK_F_BLK_SIZE) | extra;
    unsigned i;

    d[0] = (StripeDev) {
        .qts = global_qtest,
        .vdev = blk->vdev,
        .alloc = alloc,
    };
    offered = qvirtio_get_features(d->vdev);
    d->features = offered & wanted;
    qvirtio_set_features(d->vdev, d->features);
    d->capacity = qvirtio_config_readq(d->vdev,
                      offsetof(struct virtio_blk_config, capacity));
    stripe_query_geometry(d->qts, &d->geo);
    g_assert_cmpuint(d->geo.unit % SECTOR, ==, 0);
    /* keeps the windows below within a few MiB of guest memory */
    g_assert_cmpuint(d->geo.unit, <=, 1 * MiB);
    g_assert_cmpuint(d->geo.nodes, <=, 8);

    for (i = 0; i < nq; i++) {
        d[i] = d[0];
        d[i].vq = qvirtqueue_setup(d->vdev, alloc, i);
    }
    qvirtio_set_driver_ok(d->vdev);
}

void stripe_dev_setup(StripeDev *d, QVirtioBlk *blk, QGuestAllocator *alloc,
                      uint64_t extra)
{
    stripe_dev_setup_queues(d, 1, blk, alloc, extra);
}

void stripe_dev_stop(StripeDev *d)
{
    qvirtqueue_cleanup(d->vdev->bus, d->vq, d->alloc);
}

/* Append @val to @s as a QemuOpts value: a comma is doubled. */
void append_opt_value(GString *s, const char *val)
{
    for (; *val; val++) {
        if (*val == ',') {
            g_string_append_c(s, ',');
        }
        g_string_append_c(s, *val);
    }
}

/* The words of @s (NULL: none), split at white space. */
char **split_words(const char *s)
{
    char **v = g_strsplit_set(s ? s : "", " \t\n", -1);
    unsigned i, n = 0;

    for (i = 0; v[i]; i++) {
        if (*v[i]) {
            v[n++] = v[i];
        } else {
            g_free(v[i]);
        }
    }
    v[n] = NULL;
    return v;
}

/* Append the nodes named by the URLs of @urls to @drive; count them. */
unsigned append_url_nodes(GString *drive, char **urls)
{
    unsigned i;

    for (i = 0; urls[i]; i++) {
        g_string_append_printf(drive, ",nodes.%u.filename=", i);
        append_opt_value(drive, urls[i]);
    }
    return i;
}
