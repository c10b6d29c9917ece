/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest cases for a virtio-blk device backed by the stripe block driver
 *
 * Copyright (c) 2026 qemu-stripe developers
 *
 * Two groups of tests.  In stripe/, the device's drive0 is a stripe over
 * storage nodes that the caller has started and formatted (qemu-stripe's
 * run-stripe-qtest does both):
 *
 *   QEMU_STRIPE_NODE_URLS  the node URLs, space separated, in any order
 *   QEMU_STRIPE_SIZE       optional: the virtual size in bytes given to
 *                          qemu-img create, checked against the device
 *
 * In stripe/error/, drive0 is a stripe over local files, one of which is
 * wrapped in blkdebug to make that node fail chosen requests; the tests
 * check that the guest request fails with the node's error and that the
 * werror= and rerror= policies of the drive apply to it:
 *
 *   QEMU_STRIPE_ERROR_FILES  the files of a formatted stripe image (at
 *                            least two), space separated, in any order
 *
 * Each group is skipped without its variable.  The request offsets are
 * derived from the geometry that the driver reports over QMP, so that
 * requests straddle stripe units, wrap around all nodes and end in the last
 * (partial) row whatever the stripe unit and node count are.
 */

#include "qemu/osdep.h"
#include "libqtest-single.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "standard-headers/linux/virtio_blk.h"
#include "standard-headers/linux/virtio_config.h"
#include "libqos/qgraph.h"
#include "libqos/virtio-blk.h"

#define SECTOR              512
#define REQ_HDR_SIZE        16
#define REQ_TIMEOUT_US      (60 * G_USEC_PER_SEC)
#define MAX_BATCH           16

/* What the before hook hands to the tests when a stripe is configured. */
typedef struct StripeTestConfig {
    uint64_t expected_size;     /* 0: not given */
    unsigned url_count;
} StripeTestConfig;

static StripeTestConfig stripe_config;

/* The layout of drive0 as the stripe driver reports it. */
typedef struct StripeGeometry {
    uint64_t size;              /* virtual size in bytes */
    uint64_t unit;              /* stripe unit in bytes */
    uint64_t data_offset;       /* where each node's data area starts */
    unsigned nodes;
    int debug_node;             /* index of the blkdebug node, or -1 */
} StripeGeometry;

/* One started device with its request queue. */
typedef struct StripeDev {
    QTestState *qts;
    QVirtioDevice *vdev;
    QGuestAllocator *alloc;
    QVirtQueue *vq;
    uint64_t features;
    uint64_t capacity;          /* in sectors, from the config space */
    StripeGeometry geo;
} StripeDev;

/* One request in flight: header, data and status byte in guest memory. */
typedef struct BlkReq {
    uint64_t addr;
    uint32_t head;
    uint32_t type;
    uint64_t sector;
    size_t len;
    bool done;
} BlkReq;

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

static void pattern_fill(uint8_t *buf, uint64_t off, size_t len,
                         uint32_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = pattern_byte(off + i, seed);
    }
}

/* Compare @len bytes read at disk offset @off with what is expected. */
static void verify_bytes(const StripeDev *d, const uint8_t *got,
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

/* A copy of what a region of the disk holds, kept up to date by writes. */
typedef struct Shadow {
    uint64_t off;
    size_t len;
    uint8_t *buf;
} Shadow;

static void shadow_init(Shadow *sh, uint64_t off, size_t len)
{
    sh->off = off;
    sh->len = len;
    sh->buf = g_malloc(len);
}

static uint8_t *shadow_at(Shadow *sh, uint64_t off, size_t len)
{
    g_assert_cmpuint(off, >=, sh->off);
    g_assert_cmpuint(off + len, <=, sh->off + sh->len);
    return sh->buf + (off - sh->off);
}

static void shadow_free(Shadow *sh)
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
static void blk_submit(StripeDev *d, BlkReq *r, uint32_t type,
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

/* Wait until the device has used every request of @reqs, in any order. */
static void blk_wait(StripeDev *d, BlkReq *reqs, unsigned n)
{
    gint64 deadline = g_get_monotonic_time() + REQ_TIMEOUT_US;
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

static uint8_t blk_status(StripeDev *d, const BlkReq *r)
{
    return qtest_readb(d->qts, r->addr + REQ_HDR_SIZE + r->len);
}

/* Fetch what an IN request read, then release the request's memory. */
static void blk_finish(StripeDev *d, BlkReq *r, uint8_t *data)
{
    if (data) {
        qtest_bufread(d->qts, r->addr + REQ_HDR_SIZE, data, r->len);
    }
    guest_free(d->alloc, r->addr);
    r->addr = 0;
}

/* One request, waited for; returns its status. */
static uint8_t blk_do(StripeDev *d, uint32_t type, uint64_t sector,
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
static void blk_write_pattern(StripeDev *d, Shadow *sh, uint64_t off,
                              size_t len, uint32_t seed, unsigned nseg)
{
    uint8_t *data = shadow_at(sh, off, len);

    pattern_fill(data, off, len, seed);
    g_assert_cmpuint(blk_do(d, VIRTIO_BLK_T_OUT, off / SECTOR, data, len,
                            nseg), ==, VIRTIO_BLK_S_OK);
}

/* Read @len bytes at @off and check them against @sh. */
static void blk_read_verify(StripeDev *d, Shadow *sh, uint64_t off,
                            size_t len, unsigned nseg, const char *what)
{
    g_autofree uint8_t *data = g_malloc(len);

    g_assert_cmpuint(blk_do(d, VIRTIO_BLK_T_IN, off / SECTOR, data, len,
                            nseg), ==, VIRTIO_BLK_S_OK);
    verify_bytes(d, data, shadow_at(sh, off, len), off, len, what);
}

static void stripe_query_geometry(QTestState *qts, StripeGeometry *geo)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'query-block' }");
    QListEntry *e;
    bool found = false;

    g_assert(qdict_haskey(resp, "return"));
    QLIST_FOREACH_ENTRY(qdict_get_qlist(resp, "return"), e) {
        QDict *blk = qobject_to(QDict, qlist_entry_obj(e));
        QDict *image, *spec, *data;
        QListEntry *n;

        if (strcmp(qdict_get_str(blk, "device"), "drive0")) {
            continue;
        }
        image = qdict_get_qdict(qdict_get_qdict(blk, "inserted"), "image");
        g_assert_cmpstr(qdict_get_str(image, "format"), ==, "stripe");
        spec = qdict_get_qdict(image, "format-specific");
        g_assert_cmpstr(qdict_get_str(spec, "type"), ==, "stripe");
        data = qdict_get_qdict(spec, "data");
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
        found = true;
    }
    qobject_unref(resp);
    g_assert(found);
}

/*
 * Negotiate the features these tests understand, set up queue 0 and read
 * the capacity and the stripe geometry.
 */
static void stripe_dev_setup(StripeDev *d, QVirtioBlk *blk,
                             QGuestAllocator *alloc)
{
    uint64_t offered;
    uint64_t wanted = (1ULL << VIRTIO_F_VERSION_1) |
                      (1ULL << VIRTIO_BLK_F_FLUSH) |
                      (1ULL << VIRTIO_BLK_F_SEG_MAX) |
                      (1ULL << VIRTIO_BLK_F_BLK_SIZE);

    *d = (StripeDev) {
        .qts = global_qtest,
        .vdev = blk->vdev,
        .alloc = alloc,
    };
    offered = qvirtio_get_features(d->vdev);
    d->features = offered & wanted;
    qvirtio_set_features(d->vdev, d->features);
    d->capacity = qvirtio_config_readq(d->vdev,
                      offsetof(struct virtio_blk_config, capacity));
    d->vq = qvirtqueue_setup(d->vdev, alloc, 0);
    qvirtio_set_driver_ok(d->vdev);

    stripe_query_geometry(d->qts, &d->geo);
    g_assert_cmpuint(d->geo.unit % SECTOR, ==, 0);
    /* keeps the windows below within a few MiB of guest memory */
    g_assert_cmpuint(d->geo.unit, <=, 1 * MiB);
    g_assert_cmpuint(d->geo.nodes, <=, 8);
}

/*
 * Start the device of a test outside stripe/error/.  Returns false (and
 * marks the test skipped) when no stripe was configured.
 */
static bool stripe_dev_start(StripeDev *d, void *obj, void *arg,
                             QGuestAllocator *alloc)
{
    const StripeTestConfig *cfg = arg;

    if (!cfg) {
        g_test_skip("QEMU_STRIPE_NODE_URLS is not set");
        return false;
    }
    stripe_dev_setup(d, obj, alloc);
    g_assert_cmpuint(d->geo.nodes, ==, cfg->url_count);
    g_assert_cmpint(d->geo.debug_node, ==, -1);
    return true;
}

static void stripe_dev_stop(StripeDev *d)
{
    qvirtqueue_cleanup(d->vdev->bus, d->vq, d->alloc);
}

/* The capacity in the config space is the stripe's virtual size. */
static void test_capacity(void *obj, void *arg, QGuestAllocator *alloc)
{
    const StripeTestConfig *cfg = arg;
    StripeDev d;

    if (!stripe_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    g_test_message("stripe: %" PRIu64 " bytes, %u nodes, %" PRIu64
                   "-byte stripe unit, capacity %" PRIu64 " sectors",
                   d.geo.size, d.geo.nodes, d.geo.unit, d.capacity);
    g_assert_cmpuint(d.geo.size % SECTOR, ==, 0);
    g_assert_cmpuint(d.capacity, ==, d.geo.size / SECTOR);
    if (cfg->expected_size) {
        g_assert_cmpuint(d.capacity * SECTOR, ==, cfg->expected_size);
    }
    stripe_dev_stop(&d);
}

/*
 * Overlapping writes of 1, 8, 129 and 512 sectors and of more than a row,
 * each straddling stripe-unit boundaries, over a pattern written in one
 * request; every byte is read back piecewise and in one request.
 */
static void test_rw_boundaries(void *obj, void *arg, QGuestAllocator *alloc)
{
    StripeDev d;
    Shadow sh;
    uint64_t u, row, base, len;
    struct {
        uint64_t off;
        size_t len;
        unsigned nseg;
    } w[5];
    unsigned i;

    if (!stripe_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    u = d.geo.unit;
    row = u * d.geo.nodes;
    /* start one row in, so that the first unit is not at offset 0 */
    base = row;
    len = 3 * row + 2 * u + 1 * MiB;
    g_assert_cmpuint(base + len, <=, d.geo.size);
    shadow_init(&sh, base, len);

    /* the last sector of a unit */
    w[0].off = base + u - SECTOR;
    w[0].len = SECTOR;
    w[0].nseg = 1;
    /* 8 sectors across the boundary between the next two units */
    w[1].off = base + 2 * u - 3 * SECTOR;
    w[1].len = 8 * SECTOR;
    w[1].nseg = 2;
    /* 129 sectors from just before the end of a row into the next one */
    w[2].off = base + row - SECTOR;
    w[2].len = 129 * SECTOR;
    w[2].nseg = 3;
    /* 512 sectors at an odd sector offset */
    w[3].off = base + row + u + 7 * SECTOR;
    w[3].len = 512 * SECTOR;
    w[3].nseg = 4;
    /* more than a row: the request wraps around every node */
    w[4].off = base + 2 * row - 5 * SECTOR;
    w[4].len = row + u + 11 * SECTOR;
    w[4].nseg = 3;

    blk_write_pattern(&d, &sh, base, len, 1, 4);
    for (i = 0; i < ARRAY_SIZE(w); i++) {
        if (w[i].len > SECTOR) {
            /* every multi-sector request crosses a unit boundary */
            g_assert_cmpuint(w[i].off / u, <,
                             (w[i].off + w[i].len - 1) / u);
        }
        blk_write_pattern(&d, &sh, w[i].off, w[i].len, 100 + i, w[i].nseg);
    }
    for (i = 0; i < ARRAY_SIZE(w); i++) {
        g_autofree char *what = g_strdup_printf("write %u read back", i);

        blk_read_verify(&d, &sh, w[i].off, w[i].len, w[i].nseg, what);
    }
    /* reads that split the disk differently from the writes */
    blk_read_verify(&d, &sh, base + u - 4 * SECTOR, u + 9 * SECTOR, 1,
                    "unit-straddling read");
    blk_read_verify(&d, &sh, base + 3 * SECTOR, 2 * row, 2,
                    "two-row read");
    blk_read_verify(&d, &sh, base, len, 5, "whole window");

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/*
 * Several requests in flight at once, each crossing a unit boundary, on
 * every node in turn; they may complete in any order.
 */
static void test_rw_parallel(void *obj, void *arg, QGuestAllocator *alloc)
{
    StripeDev d;
    Shadow sh;
    BlkReq reqs[MAX_BATCH];
    uint64_t u, stride, base, len, off[MAX_BATCH];
    size_t rlen = 129 * SECTOR;
    unsigned n, i;

    if (!stripe_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    u = d.geo.unit;
    n = MIN(2 * d.geo.nodes, MAX_BATCH);
    /*
     * Request i starts (i + 1) sectors before the unit boundary at
     * (i + 1) * stride, so no two requests overlap; an odd number of units
     * per stride makes the boundaries visit every node.
     */
    stride = DIV_ROUND_UP(rlen + (n + 1) * SECTOR, u) | 1;
    stride *= u;
    base = 8 * u * d.geo.nodes;
    len = (n + 1) * stride;
    g_assert_cmpuint(base + len, <=, d.geo.size);
    shadow_init(&sh, base, len);

    blk_write_pattern(&d, &sh, base, len, 7, 2);
    for (i = 0; i < n; i++) {
        off[i] = base + (i + 1) * stride - (i + 1) * SECTOR;
        pattern_fill(shadow_at(&sh, off[i], rlen), off[i], rlen, 200 + i);
        blk_submit(&d, &reqs[i], VIRTIO_BLK_T_OUT, off[i] / SECTOR,
                   shadow_at(&sh, off[i], rlen), rlen, 3);
    }
    blk_wait(&d, reqs, n);
    for (i = 0; i < n; i++) {
        g_assert_cmpuint(blk_status(&d, &reqs[i]), ==, VIRTIO_BLK_S_OK);
        blk_finish(&d, &reqs[i], NULL);
    }

    for (i = 0; i < n; i++) {
        blk_submit(&d, &reqs[i], VIRTIO_BLK_T_IN, off[i] / SECTOR, NULL,
                   rlen, 2);
    }
    blk_wait(&d, reqs, n);
    for (i = 0; i < n; i++) {
        g_autofree uint8_t *data = g_malloc(rlen);

        g_assert_cmpuint(blk_status(&d, &reqs[i]), ==, VIRTIO_BLK_S_OK);
        blk_finish(&d, &reqs[i], data);
        verify_bytes(&d, data, shadow_at(&sh, off[i], rlen), off[i], rlen,
                     "parallel read");
    }
    blk_read_verify(&d, &sh, base, len, 1, "whole window");

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/*
 * The end of the disk: requests that end exactly at the capacity work,
 * requests past it fail with IOERR and change nothing.
 */
static void test_tail(void *obj, void *arg, QGuestAllocator *alloc)
{
    StripeDev d;
    Shadow sh;
    uint64_t size, base, len;
    uint8_t buf[8 * SECTOR];

    if (!stripe_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    size = d.capacity * SECTOR;
    len = MIN(2 * d.geo.unit * d.geo.nodes + 3 * SECTOR, size);
    base = size - len;
    shadow_init(&sh, base, len);

    blk_write_pattern(&d, &sh, base, len, 31, 3);
    blk_write_pattern(&d, &sh, size - 129 * SECTOR, 129 * SECTOR, 32, 2);
    blk_write_pattern(&d, &sh, size - SECTOR, SECTOR, 33, 1);

    memset(buf, 0x5a, sizeof(buf));
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_OUT, d.capacity - 4, buf,
                            sizeof(buf), 1), ==, VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_OUT, d.capacity, buf, SECTOR,
                            1), ==, VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_IN, d.capacity - 4, buf,
                            sizeof(buf), 1), ==, VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_IN, d.capacity, buf, SECTOR,
                            1), ==, VIRTIO_BLK_S_IOERR);

    blk_read_verify(&d, &sh, size - 129 * SECTOR, 129 * SECTOR, 3,
                    "read up to the end");
    blk_read_verify(&d, &sh, base, len, 2, "tail window");

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/* FLUSH returns OK, alone and behind writes, and data reads back after it. */
static void test_flush(void *obj, void *arg, QGuestAllocator *alloc)
{
    StripeDev d;
    Shadow sh;
    BlkReq reqs[MAX_BATCH];
    uint64_t u, row, base, len;
    unsigned n, i;

    if (!stripe_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    /* with cache=writeback the device offers FLUSH and honours it */
    g_assert_true(d.features & (1ULL << VIRTIO_BLK_F_FLUSH));
    u = d.geo.unit;
    row = u * d.geo.nodes;
    base = 16 * row + 5 * SECTOR;
    len = 2 * row + 3 * SECTOR;
    g_assert_cmpuint(base + len, <=, d.geo.size);
    shadow_init(&sh, base, len);

    /* nothing written yet */
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0), ==,
                     VIRTIO_BLK_S_OK);

    blk_write_pattern(&d, &sh, base, len, 41, 2);
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0), ==,
                     VIRTIO_BLK_S_OK);
    blk_read_verify(&d, &sh, base, len, 3, "read after flush");

    /* writes to every node, each completed before a flush is queued */
    n = MIN(d.geo.nodes, MAX_BATCH - 1);
    for (i = 0; i < n; i++) {
        uint64_t off = base + i * u + QEMU_ALIGN_DOWN(u / 2, SECTOR);

        pattern_fill(shadow_at(&sh, off, u), off, u, 50 + i);
        blk_submit(&d, &reqs[i], VIRTIO_BLK_T_OUT, off / SECTOR,
                   shadow_at(&sh, off, u), u, 1);
    }
    blk_wait(&d, reqs, n);
    blk_submit(&d, &reqs[n], VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0);
    blk_wait(&d, &reqs[n], 1);
    for (i = 0; i <= n; i++) {
        g_assert_cmpuint(blk_status(&d, &reqs[i]), ==, VIRTIO_BLK_S_OK);
        blk_finish(&d, &reqs[i], NULL);
    }
    blk_read_verify(&d, &sh, base, len, 1, "read after second flush");

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/* Append @val to @s as a QemuOpts value: a comma is doubled. */
static void append_opt_value(GString *s, const char *val)
{
    for (; *val; val++) {
        if (*val == ',') {
            g_string_append_c(s, ',');
        }
        g_string_append_c(s, *val);
    }
}

static void *stripe_before(GString *cmd_line, void *arg)
{
    const char *urls = g_getenv("QEMU_STRIPE_NODE_URLS");
    const char *size = g_getenv("QEMU_STRIPE_SIZE");
    g_autoptr(GString) drive = g_string_new("if=none,id=drive0");
    g_autofree char *trimmed = g_strstrip(g_strdup(urls ? urls : ""));
    g_auto(GStrv) v = NULL;
    g_autofree char *quoted = NULL;
    unsigned i;

    if (!*trimmed) {
        /* the device needs a drive0 even when every test skips */
        g_string_append(cmd_line,
                        " -drive if=none,id=drive0,format=raw,"
                        "file=null-co:// ");
        return NULL;
    }

    stripe_config = (StripeTestConfig) { 0 };
    if (size && *size) {
        stripe_config.expected_size = g_ascii_strtoull(size, NULL, 0);
    }
    g_string_append(drive, ",driver=stripe,cache=writeback,"
                    "werror=report,rerror=report");
    v = g_strsplit_set(trimmed, " \t\n", -1);
    for (i = 0; v[i]; i++) {
        if (!*v[i]) {
            continue;
        }
        g_string_append_printf(drive, ",nodes.%u.filename=",
                               stripe_config.url_count++);
        append_opt_value(drive, v[i]);
    }
    quoted = g_shell_quote(drive->str);
    g_string_append_printf(cmd_line, " -drive %s ", quoted);
    return &stripe_config;
}

/*
 * stripe/error/: one node of drive0 fails chosen requests.
 *
 * The rules of blkdebug fire at a byte offset of the failing node; the
 * tests map it to the disk through the geometry reported over QMP (unit k
 * of the disk is unit k / N of node k % N, after the data offset), so that
 * they know which guest requests reach that node and which do not.
 */

/*
 * Node offsets at which rules fire: in the data area (past the 1 MiB that
 * holds the header) of the nodes of a 64 MiB image over 4 nodes.
 */
#define ERR_NODE_OFFSET         (8 * MiB)
#define ERR_NODE_OFFSET2        (12 * MiB)
#define ERR_MAX_RULES           2
/*
 * The file given in this position gets the blkdebug filter.  Which node
 * that is depends on the file's header, so the tests ask the driver.
 */
#define ERR_WRAPPED_FILE        1

/* One inject-error rule of the failing node. */
typedef struct ErrorRule {
    const char *iotype;         /* read, write or flush; NULL: unused */
    int err;                    /* the errno that the node returns */
    uint64_t node_offset;       /* 0: any request of @iotype fails */
    bool once;                  /* the rule is dropped when it fires */
} ErrorRule;

/* The drive options of one test. */
typedef struct ErrorCase {
    const char *werror;
    const char *rerror;
    ErrorRule rules[ERR_MAX_RULES];
} ErrorCase;

/*
 * Disk ranges around the byte at which a rule fires.  @hit is two units
 * long and covers the unit of the failing node that holds that byte, so
 * it reaches a neighbouring node too; @miss covers the units of all
 * other nodes that follow, up to the failing node's next unit, so it
 * reaches every node but the failing one.  @len bytes from @hit_off span
 * both.  With a 512-byte unit, @hit has just two sectors and @miss may
 * have one: requests on them are split into that few segments at most.
 */
typedef struct ErrorRegion {
    uint64_t target;            /* the disk offset of that byte */
    uint64_t hit_off;
    uint64_t hit_len;
    uint64_t miss_off;
    uint64_t miss_len;
    uint64_t len;               /* from @hit_off to the end of @miss */
} ErrorRegion;

static void error_region(const StripeDev *d, uint64_t node_offset,
                         ErrorRegion *r)
{
    const StripeGeometry *g = &d->geo;
    uint64_t rel, unit_start;

    g_assert_cmpuint(node_offset, >=, g->data_offset);
    rel = node_offset - g->data_offset;
    unit_start = (rel / g->unit * g->nodes + g->debug_node) * g->unit;
    /* @hit starts in the unit before */
    g_assert_cmpuint(unit_start, >=, g->unit);

    r->target = unit_start + rel % g->unit;
    r->hit_off = unit_start - QEMU_ALIGN_DOWN(g->unit / 2, SECTOR);
    r->hit_len = 2 * g->unit;
    r->miss_off = unit_start + g->unit;
    r->miss_len = (g->nodes - 1) * g->unit;
    r->len = r->miss_off + r->miss_len - r->hit_off;
    g_assert_cmpuint(r->hit_off + r->len, <=, g->size);
    g_assert_cmpuint(r->target, >=, r->hit_off);
    g_assert_cmpuint(r->target, <, r->hit_off + r->hit_len);
}

/* Whether the VM runs; @status gets the run state. */
static bool query_status(QTestState *qts, char **status)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'query-status' }");
    QDict *ret = qdict_get_qdict(resp, "return");
    bool running;

    g_assert(ret);
    running = qdict_get_bool(ret, "running");
    *status = g_strdup(qdict_get_str(ret, "status"));
    qobject_unref(resp);
    return running;
}

static void assert_running(StripeDev *d)
{
    g_autofree char *status = NULL;

    g_assert_true(query_status(d->qts, &status));
    g_assert_cmpstr(status, ==, "running");
}

/* True when the device has used a request since the last call. */
static bool request_used(StripeDev *d, uint32_t *head)
{
    return qvirtqueue_get_buf(d->qts, d->vq, head, NULL);
}

/*
 * Wait for drive0's BLOCK_IO_ERROR event and check that it reports @err
 * for @operation and that the drive took @action.  With @held, the
 * request in flight must not complete meanwhile.
 */
static void expect_io_error(StripeDev *d, bool held, const char *operation,
                            const char *action, int err)
{
    gint64 deadline = g_get_monotonic_time() + REQ_TIMEOUT_US;
    QDict *ev, *data;
    uint32_t head;

    /*
     * libqtest keeps the events that arrive before a command's reply, so
     * any command lets the event in.  QEMU sends at most one BLOCK_IO_ERROR
     * a second; under qtest that second is one of virtual time, which only
     * the test advances (see test_error_write_enospc).
     */
    while (!(ev = qtest_qmp_event_ref(d->qts, "BLOCK_IO_ERROR"))) {
        g_autofree char *status = NULL;

        if (held) {
            g_assert_false(request_used(d, &head));
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(1000);
        query_status(d->qts, &status);
    }
    data = qdict_get_qdict(ev, "data");
    g_assert_cmpstr(qdict_get_str(data, "device"), ==, "drive0");
    g_assert_cmpstr(qdict_get_str(data, "operation"), ==, operation);
    g_assert_cmpstr(qdict_get_str(data, "action"), ==, action);
    /* the node's own errno, not one that the stripe made up */
    g_assert_cmpstr(qdict_get_str(data, "reason"), ==, strerror(err));
    g_assert_cmpint(qdict_get_try_bool(data, "nospace", false), ==,
                    err == ENOSPC);
    qobject_unref(ev);
}

/* The VM stopped for the error and holds the request instead of failing it */
static void expect_stopped(StripeDev *d)
{
    gint64 deadline = g_get_monotonic_time() + REQ_TIMEOUT_US;
    uint32_t head;

    for (;;) {
        g_autofree char *status = NULL;

        if (!query_status(d->qts, &status)) {
            g_assert_cmpstr(status, ==, "io-error");
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(1000);
    }
    g_assert_false(request_used(d, &head));
}

/*
 * Resume the VM: the device retries the held request @r, which must then
 * complete without stopping the VM again.
 */
static void cont_and_complete(StripeDev *d, BlkReq *r)
{
    gint64 deadline = g_get_monotonic_time() + REQ_TIMEOUT_US;
    QDict *resp = qtest_qmp(d->qts, "{ 'execute': 'cont' }");
    uint32_t head;

    g_assert(qdict_haskey(resp, "return"));
    qobject_unref(resp);
    while (!request_used(d, &head)) {
        /* a retry that fails again stops the VM: no need to wait long */
        assert_running(d);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(1000);
    }
    g_assert_cmpuint(head, ==, r->head);
    assert_running(d);
}

/*
 * Start the device of a stripe/error/ test.  Returns false (and marks the
 * test skipped) when no files were given.
 */
static bool error_dev_start(StripeDev *d, void *obj, void *arg,
                            QGuestAllocator *alloc)
{
    if (!arg) {
        g_test_skip("QEMU_STRIPE_ERROR_FILES is not set");
        return false;
    }
    stripe_dev_setup(d, obj, alloc);
    g_assert_cmpint(d->geo.debug_node, >=, 0);
    g_assert_cmpuint(d->geo.nodes, >=, 2);
    assert_running(d);
    return true;
}

/*
 * werror=stop: a write that reaches the failing node stops the VM and is
 * held; after cont the device writes it again, and since the rule fired
 * once, the whole request lands, on the failing node too.
 */
static void test_error_write_stop(void *obj, void *arg,
                                  QGuestAllocator *alloc)
{
    const ErrorCase *c = arg;
    StripeDev d;
    ErrorRegion reg;
    Shadow sh;
    BlkReq r;

    if (!error_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    error_region(&d, c->rules[0].node_offset, &reg);
    shadow_init(&sh, reg.hit_off, reg.hit_len);
    pattern_fill(sh.buf, reg.hit_off, reg.hit_len, 301);

    blk_submit(&d, &r, VIRTIO_BLK_T_OUT, reg.hit_off / SECTOR, sh.buf,
               reg.hit_len, 2);
    expect_io_error(&d, true, "write", "stop", c->rules[0].err);
    expect_stopped(&d);
    cont_and_complete(&d, &r);
    g_assert_cmpuint(blk_status(&d, &r), ==, VIRTIO_BLK_S_OK);
    blk_finish(&d, &r, NULL);

    /* the sector where the write failed holds the retried data */
    blk_read_verify(&d, &sh, QEMU_ALIGN_DOWN(reg.target, SECTOR), SECTOR, 1,
                    "failed sector after cont");
    blk_read_verify(&d, &sh, reg.hit_off, reg.hit_len, 2,
                    "write retried after cont");

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/*
 * werror=report: a write that reaches the failing node completes with
 * IOERR, every time; a write to all the other nodes succeeds.
 */
static void test_error_write_report(void *obj, void *arg,
                                    QGuestAllocator *alloc)
{
    const ErrorCase *c = arg;
    StripeDev d;
    ErrorRegion reg;
    Shadow sh;
    g_autofree uint8_t *buf = NULL;

    if (!error_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    error_region(&d, c->rules[0].node_offset, &reg);
    shadow_init(&sh, reg.miss_off, reg.miss_len);
    buf = g_malloc(reg.hit_len);
    pattern_fill(buf, reg.hit_off, reg.hit_len, 311);

    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_OUT, reg.hit_off / SECTOR, buf,
                            reg.hit_len, 2), ==, VIRTIO_BLK_S_IOERR);
    expect_io_error(&d, false, "write", "report", c->rules[0].err);
    assert_running(&d);
    /* the rule stays, and nothing may hide the node's error from the guest */
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_OUT, reg.hit_off / SECTOR, buf,
                            reg.hit_len, 1), ==, VIRTIO_BLK_S_IOERR);

    blk_write_pattern(&d, &sh, reg.miss_off, reg.miss_len, 312, 1);
    blk_read_verify(&d, &sh, reg.miss_off, reg.miss_len, 1,
                    "write that missed the failing node");
    assert_running(&d);

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/*
 * rerror=stop: a read that reaches the failing node stops the VM and is
 * held; after cont the device reads again and gets all of the data.
 */
static void test_error_read_stop(void *obj, void *arg,
                                 QGuestAllocator *alloc)
{
    const ErrorCase *c = arg;
    StripeDev d;
    ErrorRegion reg;
    Shadow sh;
    BlkReq r;
    g_autofree uint8_t *data = NULL;

    if (!error_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    error_region(&d, c->rules[0].node_offset, &reg);
    shadow_init(&sh, reg.hit_off, reg.hit_len);
    data = g_malloc(reg.hit_len);
    /* only reads fail */
    blk_write_pattern(&d, &sh, reg.hit_off, reg.hit_len, 321, 2);

    blk_submit(&d, &r, VIRTIO_BLK_T_IN, reg.hit_off / SECTOR, NULL,
               reg.hit_len, 2);
    expect_io_error(&d, true, "read", "stop", c->rules[0].err);
    expect_stopped(&d);
    cont_and_complete(&d, &r);
    g_assert_cmpuint(blk_status(&d, &r), ==, VIRTIO_BLK_S_OK);
    blk_finish(&d, &r, data);
    verify_bytes(&d, data, sh.buf, reg.hit_off, reg.hit_len,
                 "read retried after cont");

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/*
 * rerror=report: a read that reaches the failing node completes with
 * IOERR, every time; a read from all the other nodes returns their data.
 */
static void test_error_read_report(void *obj, void *arg,
                                   QGuestAllocator *alloc)
{
    const ErrorCase *c = arg;
    StripeDev d;
    ErrorRegion reg;
    Shadow sh;
    g_autofree uint8_t *buf = NULL;

    if (!error_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    error_region(&d, c->rules[0].node_offset, &reg);
    shadow_init(&sh, reg.hit_off, reg.len);
    buf = g_malloc(reg.hit_len);
    blk_write_pattern(&d, &sh, reg.hit_off, reg.len, 331, 2);

    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_IN, reg.hit_off / SECTOR, buf,
                            reg.hit_len, 2), ==, VIRTIO_BLK_S_IOERR);
    expect_io_error(&d, false, "read", "report", c->rules[0].err);
    assert_running(&d);
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_IN, reg.hit_off / SECTOR, buf,
                            reg.hit_len, 1), ==, VIRTIO_BLK_S_IOERR);

    blk_read_verify(&d, &sh, reg.miss_off, reg.miss_len, 1,
                    "read that missed the failing node");
    assert_running(&d);

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/*
 * werror=report: a flush fails with IOERR when the node's flush fails.
 * The node has written data to flush, so its flush is not skipped as
 * having nothing to do; the rule fires once, so the next flush succeeds.
 */
static void test_error_flush_report(void *obj, void *arg,
                                    QGuestAllocator *alloc)
{
    const ErrorCase *c = arg;
    StripeDev d;
    ErrorRegion reg;
    Shadow sh;

    if (!error_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    g_assert_true(d.features & (1ULL << VIRTIO_BLK_F_FLUSH));
    /* the rule has no offset: any write that reaches the node will do */
    error_region(&d, ERR_NODE_OFFSET, &reg);
    shadow_init(&sh, reg.hit_off, reg.hit_len);
    blk_write_pattern(&d, &sh, reg.hit_off, reg.hit_len, 341, 2);

    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0), ==,
                     VIRTIO_BLK_S_IOERR);
    /* a failed flush counts as a failed write */
    expect_io_error(&d, false, "write", "report", c->rules[0].err);
    assert_running(&d);
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0), ==,
                     VIRTIO_BLK_S_OK);
    blk_read_verify(&d, &sh, reg.hit_off, reg.hit_len, 1,
                    "read after the flushes");

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/*
 * werror=enospc tells errors apart: it stops the VM on ENOSPC only and
 * reports any other error.  The failing node returns EIO for one write
 * and ENOSPC for another; the guest sees exactly the policy of each.
 */
static void test_error_write_enospc(void *obj, void *arg,
                                    QGuestAllocator *alloc)
{
    const ErrorCase *c = arg;
    StripeDev d;
    ErrorRegion nospc, eio;
    Shadow sh_nospc, sh_eio;
    BlkReq r;

    if (!error_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    g_assert_cmpint(c->rules[0].err, ==, ENOSPC);
    g_assert_cmpint(c->rules[1].err, !=, ENOSPC);
    error_region(&d, c->rules[0].node_offset, &nospc);
    error_region(&d, c->rules[1].node_offset, &eio);
    shadow_init(&sh_nospc, nospc.hit_off, nospc.hit_len);
    shadow_init(&sh_eio, eio.hit_off, eio.hit_len);
    pattern_fill(sh_nospc.buf, nospc.hit_off, nospc.hit_len, 351);
    pattern_fill(sh_eio.buf, eio.hit_off, eio.hit_len, 352);

    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_OUT, eio.hit_off / SECTOR,
                            sh_eio.buf, eio.hit_len, 2), ==,
                     VIRTIO_BLK_S_IOERR);
    expect_io_error(&d, false, "write", "report", c->rules[1].err);
    assert_running(&d);
    /* let the rate limit of BLOCK_IO_ERROR pass, or the next one waits */
    qtest_clock_step(d.qts, NANOSECONDS_PER_SECOND);

    blk_submit(&d, &r, VIRTIO_BLK_T_OUT, nospc.hit_off / SECTOR,
               sh_nospc.buf, nospc.hit_len, 2);
    expect_io_error(&d, true, "write", "stop", c->rules[0].err);
    expect_stopped(&d);
    cont_and_complete(&d, &r);
    g_assert_cmpuint(blk_status(&d, &r), ==, VIRTIO_BLK_S_OK);
    blk_finish(&d, &r, NULL);

    /* both rules fired once: the reported write now succeeds as well */
    blk_write_pattern(&d, &sh_eio, eio.hit_off, eio.hit_len, 353, 1);
    blk_read_verify(&d, &sh_nospc, nospc.hit_off, nospc.hit_len, 2,
                    "write retried after cont");
    blk_read_verify(&d, &sh_eio, eio.hit_off, eio.hit_len, 2,
                    "write repeated by the guest");

    shadow_free(&sh_nospc);
    shadow_free(&sh_eio);
    stripe_dev_stop(&d);
}

/* Append the options of the failing node, number @i, to @drive. */
static void append_failing_node(GString *drive, unsigned i,
                                const char *file, const ErrorCase *c)
{
    unsigned j;

    g_string_append_printf(drive, ",nodes.%u.driver=blkdebug"
                           ",nodes.%u.cache.direct=off"
                           ",nodes.%u.image.driver=file"
                           ",nodes.%u.image.filename=", i, i, i, i);
    append_opt_value(drive, file);
    for (j = 0; j < ERR_MAX_RULES && c->rules[j].iotype; j++) {
        const ErrorRule *rule = &c->rules[j];
        g_autofree char *p = g_strdup_printf(",nodes.%u.inject-error.%u.",
                                             i, j);

        /* event "none": the rule is active from the start */
        g_string_append_printf(drive, "%sevent=none%siotype=%s%serrno=%d"
                               "%sonce=%s", p, p, rule->iotype, p,
                               rule->err, p, rule->once ? "on" : "off");
        if (rule->node_offset) {
            g_assert_cmpuint(rule->node_offset % SECTOR, ==, 0);
            g_string_append_printf(drive, "%ssector=%" PRIu64, p,
                                   rule->node_offset / SECTOR);
        }
    }
}

static void *stripe_error_before(GString *cmd_line, void *arg)
{
    const ErrorCase *c = arg;
    const char *files = g_getenv("QEMU_STRIPE_ERROR_FILES");
    g_autoptr(GString) drive = g_string_new("if=none,id=drive0");
    g_auto(GStrv) v = g_strsplit_set(files ? files : "", " \t\n", -1);
    g_autofree char *quoted = NULL;
    unsigned i, n = 0;

    /*
     * Every test needs a QEMU of its own: one whose rules have not fired
     * yet and whose VM has not been stopped.  qos-test would otherwise
     * only reset the QEMU of a previous test with the same command line.
     */
    qos_invalidate_command_line();

    /*
     * cache.direct=on keeps any cache of the stripe driver out of the way,
     * so that every guest request reaches the nodes and fails or succeeds
     * with them.  The files are opened without O_DIRECT (which tmpfs does
     * not have); the write cache stays on, so the device offers FLUSH.
     */
    g_string_append_printf(drive, ",driver=stripe,cache.direct=on"
                           ",werror=%s,rerror=%s", c->werror, c->rerror);
    for (i = 0; v[i]; i++) {
        if (!*v[i]) {
            continue;
        }
        if (n == ERR_WRAPPED_FILE) {
            append_failing_node(drive, n, v[i], c);
        } else {
            g_string_append_printf(drive, ",nodes.%u.driver=file"
                                   ",nodes.%u.cache.direct=off"
                                   ",nodes.%u.filename=", n, n, n);
            append_opt_value(drive, v[i]);
        }
        n++;
    }
    if (!n) {
        /* the device needs a drive0 even when every test skips */
        g_string_append(cmd_line,
                        " -drive if=none,id=drive0,format=raw,"
                        "file=null-co:// ");
        return NULL;
    }
    /* the failing node needs a healthy one to be told apart from */
    g_assert_cmpuint(n, >, ERR_WRAPPED_FILE);

    quoted = g_shell_quote(drive->str);
    g_string_append_printf(cmd_line, " -drive %s ", quoted);
    return arg;
}

static ErrorCase error_write_stop = {
    .werror = "stop", .rerror = "report",
    .rules = { { "write", EIO, ERR_NODE_OFFSET, true } },
};

static ErrorCase error_write_report = {
    .werror = "report", .rerror = "report",
    .rules = { { "write", EIO, ERR_NODE_OFFSET, false } },
};

static ErrorCase error_read_stop = {
    .werror = "report", .rerror = "stop",
    .rules = { { "read", EIO, ERR_NODE_OFFSET, true } },
};

static ErrorCase error_read_report = {
    .werror = "report", .rerror = "report",
    .rules = { { "read", EIO, ERR_NODE_OFFSET, false } },
};

/* a flush covers the whole node: no offset */
static ErrorCase error_flush_report = {
    .werror = "report", .rerror = "report",
    .rules = { { "flush", EIO, 0, true } },
};

static ErrorCase error_write_enospc = {
    .werror = "enospc", .rerror = "report",
    .rules = {
        { "write", ENOSPC, ERR_NODE_OFFSET, true },
        { "write", EIO, ERR_NODE_OFFSET2, true },
    },
};

static void add_error_test(const char *name, QOSTestFunc fn, ErrorCase *c)
{
    g_autofree char *path = g_strdup_printf("stripe/error/%s", name);
    QOSGraphTestOptions opts = {
        .before = stripe_error_before,
        .arg = c,
    };

    qos_add_test(path, "virtio-blk", fn, &opts);
}

static void register_stripe_virtio_blk_test(void)
{
    QOSGraphTestOptions opts = {
        .before = stripe_before,
    };

    qos_add_test("stripe/capacity", "virtio-blk", test_capacity, &opts);
    qos_add_test("stripe/rw-boundaries", "virtio-blk", test_rw_boundaries,
                 &opts);
    qos_add_test("stripe/rw-parallel", "virtio-blk", test_rw_parallel,
                 &opts);
    qos_add_test("stripe/tail", "virtio-blk", test_tail, &opts);
    qos_add_test("stripe/flush", "virtio-blk", test_flush, &opts);

    add_error_test("write-stop", test_error_write_stop, &error_write_stop);
    add_error_test("write-report", test_error_write_report,
                   &error_write_report);
    add_error_test("read-stop", test_error_read_stop, &error_read_stop);
    add_error_test("read-report", test_error_read_report,
                   &error_read_report);
    add_error_test("flush-report", test_error_flush_report,
                   &error_flush_report);
    add_error_test("write-enospc", test_error_write_enospc,
                   &error_write_enospc);
}

libqos_init(register_stripe_virtio_blk_test);
