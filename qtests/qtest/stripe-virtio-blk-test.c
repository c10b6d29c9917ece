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
 * In stripe/cache/, drive0 has the stripe's writeback cache in front of
 * its nodes, and the tests check the semantics of each QEMU cache mode by
 * holding one node back (SIGSTOP through the harness, so that it answers
 * nothing until resumed) and watching which guest requests complete
 * meanwhile; data written is then read from the node's backing file.
 * They use the stripe of stripe/ and need, besides QEMU_STRIPE_NODE_URLS,
 * the pool that serves it (lists in the harness's node order):
 *
 *   QEMU_STRIPE_HARNESS     the storage-nodes script, for pause and resume
 *   QEMU_STRIPE_POOL_DIR    the pool directory given to it
 *   QEMU_STRIPE_POOL_URLS   the URL of each node of the pool
 *   QEMU_STRIPE_POOL_FILES  the LUN backing file of each node of the pool
 *
 * Two of them take a node's LUN offline instead (NOT READY: ENOMEDIUM in
 * QEMU) under werror=stop,rerror=stop, and check that the VM stops and,
 * after the LUN is back and cont, completes the request with nothing lost.
 * Two more stripe/cache/ tests fail writeback with a blkdebug node over
 * the files of QEMU_STRIPE_ERROR_FILES, as in stripe/error/ but cached.
 *
 * Each group is skipped without its variables.  The request offsets are
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
#include "qapi/error.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "qobject/qlist.h"
#include "standard-headers/linux/virtio_blk.h"
#include "standard-headers/linux/virtio_config.h"
#include "libqos/qgraph.h"
#include "libqos/virtio-blk.h"
#include "stripe-virtio-blk-util.h"

#define MAX_BATCH           16

/* What the before hook hands to the tests when a stripe is configured. */
typedef struct StripeTestConfig {
    uint64_t expected_size;     /* 0: not given */
    unsigned url_count;
} StripeTestConfig;

static StripeTestConfig stripe_config;

/*
 * Start the device of a stripe/ test.  Returns false (and
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
    stripe_dev_setup(d, obj, alloc, 0);
    g_assert_cmpuint(d->geo.nodes, ==, cfg->url_count);
    g_assert_cmpint(d->geo.debug_node, ==, -1);
    return true;
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

/* The device needs a drive0 even when every test skips. */
static void append_null_drive(GString *cmd_line)
{
    g_string_append(cmd_line,
                    " -drive if=none,id=drive0,format=raw,file=null-co:// ");
}

static void *stripe_before(GString *cmd_line, void *arg)
{
    const char *size = g_getenv("QEMU_STRIPE_SIZE");
    g_autoptr(GString) drive = g_string_new("if=none,id=drive0");
    g_auto(GStrv) urls = split_words(g_getenv("QEMU_STRIPE_NODE_URLS"));
    g_autofree char *quoted = NULL;

    if (!urls[0]) {
        append_null_drive(cmd_line);
        return NULL;
    }

    stripe_config = (StripeTestConfig) { 0 };
    if (size && *size) {
        stripe_config.expected_size = g_ascii_strtoull(size, NULL, 0);
    }
    g_string_append(drive, ",driver=stripe,cache=writeback,"
                    "werror=report,rerror=report");
    stripe_config.url_count = append_url_nodes(drive, urls);
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
    const char *cache;          /* cache mode; NULL: no stripe cache */
    const char *cache_opts;     /* stripe cache options, with @cache */
} ErrorCase;

/* The file that the before hook wrapped in blkdebug, for reading it. */
static char *error_wrapped_file;

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
    stripe_dev_setup(d, obj, alloc, 0);
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
     * Without @cache, cache.direct=on keeps the stripe driver's cache out
     * of the way, so that every guest request reaches the nodes and fails
     * or succeeds with them.  The files are opened without O_DIRECT (which
     * tmpfs does not have); the write cache stays on, so the device offers
     * FLUSH.
     */
    if (c->cache) {
        g_string_append_printf(drive, ",driver=stripe,cache=%s%s", c->cache,
                               c->cache_opts ? c->cache_opts : "");
    } else {
        g_string_append(drive, ",driver=stripe,cache.direct=on");
    }
    g_string_append_printf(drive, ",werror=%s,rerror=%s", c->werror,
                           c->rerror);
    for (i = 0; v[i]; i++) {
        if (!*v[i]) {
            continue;
        }
        if (n == ERR_WRAPPED_FILE) {
            append_failing_node(drive, n, v[i], c);
            g_free(error_wrapped_file);
            error_wrapped_file = g_strdup(v[i]);
        } else {
            g_string_append_printf(drive, ",nodes.%u.driver=file"
                                   ",nodes.%u.cache.direct=off"
                                   ",nodes.%u.filename=", n, n, n);
            append_opt_value(drive, v[i]);
        }
        n++;
    }
    if (!n) {
        append_null_drive(cmd_line);
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

/*
 * stripe/cache/: the cache modes, seen from the guest while one node is
 * held back.
 *
 * The harness stops the held node (SIGSTOP): it answers nothing until it
 * is resumed.  A request that needs the node therefore cannot complete
 * meanwhile, and one that completes cannot have waited for it; watching a
 * request for CACHE_HOLD_US is no race.  What reached the node is read
 * from its LUN's backing file: unit k of the disk is at offset
 * data_offset + (k / N) * unit of node k % N.
 */

/* How long a request that waits for the held node is watched. */
#define CACHE_HOLD_US           (3 * G_USEC_PER_SEC / 2)
/*
 * The bound for what must complete while the node is held back.  It stays
 * below the 15 to 20 s after which QEMU's iSCSI client declares a silent
 * node dead and reconnects.
 */
#define CACHE_HELD_TIMEOUT_US   (10 * G_USEC_PER_SEC)
/* How long background writeback may take to reach a resumed node. */
#define CACHE_WRITEBACK_TIMEOUT_US (20 * G_USEC_PER_SEC)
/*
 * Each test writes in rows of its own, past the rows that the stripe/
 * tests write, so that no earlier write can pass for the test's data.
 */
#define CACHE_FIRST_ROW         64
#define CACHE_ROWS_PER_TEST     4
/* The length of a test write; page aligned, so the cache holds it whole. */
#define CACHE_WRITE_LEN         (16 * KiB)

/* The pool of storage nodes behind the stripe, in the pool's order. */
typedef struct CachePool {
    char *harness;
    char *dir;
    char **urls;
    char **files;
    unsigned count;
} CachePool;

static CachePool cache_pool;

/* The drive of one test. */
typedef struct CacheCase {
    const char *cache;          /* the cache mode */
    const char *opts;           /* stripe cache options, or "" */
    const char *errors;         /* werror=/rerror=, or NULL: report */
    bool write_cache;           /* its cache.writeback: the guest's wce */
    unsigned slot;              /* picks the test's rows and held node */
} CacheCase;

/* The node that a test holds back. */
typedef struct HeldNode {
    unsigned index;             /* in the stripe */
    unsigned pool_index;        /* in the pool */
    const char *file;           /* its LUN's backing file */
    char *resume_argv[7];       /* "storage-nodes resume|online ..." */
    bool held;
} HeldNode;

static HeldNode held_node;

/* A range of the disk within one stripe unit, and where its node has it. */
typedef struct CacheTarget {
    uint64_t off;
    size_t len;
    uint64_t node_off;          /* in @file */
    const char *file;
} CacheTarget;

/* Take the pool from the environment; false when it is not all there. */
static bool cache_pool_init(void)
{
    const char *harness = g_getenv("QEMU_STRIPE_HARNESS");
    const char *dir = g_getenv("QEMU_STRIPE_POOL_DIR");

    g_free(cache_pool.harness);
    g_free(cache_pool.dir);
    g_strfreev(cache_pool.urls);
    g_strfreev(cache_pool.files);
    cache_pool = (CachePool) {
        .harness = g_strdup(harness),
        .dir = g_strdup(dir),
        .urls = split_words(g_getenv("QEMU_STRIPE_POOL_URLS")),
        .files = split_words(g_getenv("QEMU_STRIPE_POOL_FILES")),
    };
    cache_pool.count = g_strv_length(cache_pool.urls);
    if (!harness || !*harness || !dir || !*dir || !cache_pool.count) {
        return false;
    }
    g_assert_cmpuint(g_strv_length(cache_pool.files), ==, cache_pool.count);
    return true;
}

static void *stripe_cache_before(GString *cmd_line, void *arg)
{
    const CacheCase *c = arg;
    g_autoptr(GString) drive = g_string_new("if=none,id=drive0");
    g_auto(GStrv) urls = split_words(g_getenv("QEMU_STRIPE_NODE_URLS"));
    g_autofree char *quoted = NULL;

    /*
     * Every test needs a cache of its own: one that has seen no flush and
     * counts from zero.  qos-test would otherwise keep a QEMU whose
     * command line has not changed.
     */
    qos_invalidate_command_line();
    if (!cache_pool_init() || !urls[0]) {
        append_null_drive(cmd_line);
        return NULL;
    }
    g_string_append_printf(drive, ",driver=stripe,cache=%s%s%s", c->cache,
                           c->opts,
                           c->errors ?: ",werror=report,rerror=report");
    g_assert_cmpuint(append_url_nodes(drive, urls), ==, cache_pool.count);
    quoted = g_shell_quote(drive->str);
    g_string_append_printf(cmd_line, " -drive %s ", quoted);
    return arg;
}

/* The node offset of disk offset @off, which is on node *@node. */
static uint64_t stripe_node_offset(const StripeGeometry *g, uint64_t off,
                                   unsigned *node)
{
    uint64_t k = off / g->unit;

    *node = k % g->nodes;
    return g->data_offset + k / g->nodes * g->unit + off % g->unit;
}

/* Run "storage-nodes @verb" on node @pool_index of the pool. */
static void harness_node_cmd(const char *verb, unsigned pool_index)
{
    g_autofree char *index = g_strdup_printf("%u", pool_index);
    char *argv[] = {
        cache_pool.harness, (char *)verb, (char *)"--pool-dir",
        cache_pool.dir, (char *)"--node", index, NULL
    };
    g_autoptr(GError) err = NULL;
    int status;

    /* stdout is TAP's: the harness has nothing to say on it here */
    g_assert_true(g_spawn_sync(NULL, argv, NULL,
                               G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                               NULL, &status, &err));
    g_assert_no_error(err);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/*
 * When an assertion aborts the test, libqtest stops QEMU, whose exit
 * writes the cache back: resume the node (or bring its LUN back) first (this hook runs before
 * libqtest's), or QEMU waits for it until libqtest kills it 30 s later.
 */
static void held_node_abort(void *opaque)
{
    HeldNode *h = opaque;
    pid_t pid;

    if (!h->held) {
        return;
    }
    /* only async-signal-safe calls: this runs in the SIGABRT handler */
    pid = fork();
    if (pid == 0) {
        execv(h->resume_argv[0], h->resume_argv);
        _exit(127);
    }
    if (pid > 0) {
        waitpid(pid, NULL, 0);
    }
}

/*
 * The URL of an iSCSI node from the filename that QEMU reports for it:
 * the iscsi driver turns the URL into options, so that filename is a
 * json: one, from which the URL is spelled as the harness spells it.
 */
static char *iscsi_node_url(const char *filename)
{
    QDict *opts;
    char *url;

    if (!g_str_has_prefix(filename, "json:")) {
        return g_strdup(filename);
    }
    opts = qobject_to(QDict, qobject_from_json(filename + 5, &error_abort));
    g_assert_nonnull(opts);
    g_assert_cmpstr(qdict_get_str(opts, "driver"), ==, "iscsi");
    url = g_strdup_printf("iscsi://%s/%s/%s", qdict_get_str(opts, "portal"),
                          qdict_get_str(opts, "target"),
                          qdict_get_str(opts, "lun"));
    qobject_unref(opts);
    return url;
}

/*
 * Choose stripe node @index as the node to hold back: find it in the pool
 * by the URL of the node that the driver reports with that index.
 */
static void held_node_pick(QTestState *qts, unsigned index)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'query-block' }");
    QList *nodes = qdict_get_qlist(stripe_image_data(drive0_image(resp)),
                                   "nodes");
    QListEntry *e;
    g_autofree char *url = NULL;
    unsigned i;

    QLIST_FOREACH_ENTRY(nodes, e) {
        QDict *node = qobject_to(QDict, qlist_entry_obj(e));

        if (qdict_get_int(node, "index") == index) {
            url = iscsi_node_url(qdict_get_str(node, "filename"));
        }
    }
    g_assert_nonnull(url);
    for (i = 0; i < cache_pool.count; i++) {
        if (!strcmp(cache_pool.urls[i], url)) {
            break;
        }
    }
    if (i == cache_pool.count) {
        g_test_message("stripe node %u (%s) is not in the pool", index, url);
    }
    g_assert_cmpuint(i, <, cache_pool.count);

    g_assert_false(held_node.held);
    for (char **a = held_node.resume_argv; *a; a++) {
        g_free(*a);
    }
    held_node = (HeldNode) {
        .index = index,
        .pool_index = i,
        .file = cache_pool.files[i],
    };
    held_node.resume_argv[0] = g_strdup(cache_pool.harness);
    held_node.resume_argv[1] = g_strdup("resume");
    held_node.resume_argv[2] = g_strdup("--pool-dir");
    held_node.resume_argv[3] = g_strdup(cache_pool.dir);
    held_node.resume_argv[4] = g_strdup("--node");
    held_node.resume_argv[5] = g_strdup_printf("%u", held_node.pool_index);
    qobject_unref(resp);
}

/* Apply fault @verb to the held node; @undo is the verb that ends it. */
static void node_fault(const char *verb, const char *undo)
{
    g_assert_false(held_node.held);
    g_free(held_node.resume_argv[1]);
    held_node.resume_argv[1] = g_strdup(undo);
    /* armed first: a command that fails may still have hit the node */
    held_node.held = true;
    qtest_add_abrt_handler(held_node_abort, &held_node);
    harness_node_cmd(verb, held_node.pool_index);
}

static void node_fault_end(void)
{
    g_assert_true(held_node.held);
    harness_node_cmd(held_node.resume_argv[1], held_node.pool_index);
    held_node.held = false;
    qtest_remove_abrt_handler(&held_node);
}

static void node_pause(void)
{
    node_fault("pause", "resume");
}

static void node_resume(void)
{
    node_fault_end();
}

/*
 * Start the device of a stripe/cache/ test over the pool and choose the
 * node to hold back.  Returns false (and marks the test skipped) when no
 * pool was given.
 */
static bool cache_dev_start(StripeDev *d, void *obj, void *arg,
                            QGuestAllocator *alloc)
{
    const CacheCase *c = arg;

    if (!c) {
        g_test_skip("QEMU_STRIPE_NODE_URLS, QEMU_STRIPE_HARNESS, "
                    "QEMU_STRIPE_POOL_DIR or QEMU_STRIPE_POOL_URLS is not "
                    "set");
        return false;
    }
    /*
     * A guest that negotiates FLUSH without CONFIG_WCE gets the write
     * cache turned on by the device, whatever the cache mode: QEMU would
     * then send no FUA with cache=writethrough.  With CONFIG_WCE it keeps
     * the mode's setting, which the guest sees in the config space.
     */
    stripe_dev_setup(d, obj, alloc, 1ULL << VIRTIO_BLK_F_CONFIG_WCE);
    g_assert_true(d->features & (1ULL << VIRTIO_BLK_F_CONFIG_WCE));
    g_assert_cmpuint(qvirtio_config_readb(d->vdev,
                         offsetof(struct virtio_blk_config, wce)), ==,
                     c->write_cache);
    g_assert_cmpuint(d->geo.nodes, ==, cache_pool.count);
    g_assert_cmpint(d->geo.debug_node, ==, -1);
    /* the tests hold a different node back each, all nodes in turn */
    held_node_pick(d->qts, c->slot % d->geo.nodes);
    return true;
}

/* The @i-th range of the test's rows: mid-unit, on the held node. */
static void cache_target(const StripeDev *d, const CacheCase *c, unsigned i,
                         CacheTarget *t)
{
    const StripeGeometry *g = &d->geo;
    uint64_t row = CACHE_FIRST_ROW + c->slot * CACHE_ROWS_PER_TEST + i;
    unsigned node;

    g_assert_cmpuint(i, <, CACHE_ROWS_PER_TEST);
    t->len = MIN(g->unit, CACHE_WRITE_LEN);
    t->off = (row * g->nodes + held_node.index) * g->unit +
             (g->unit - t->len) / 2;
    g_assert_cmpuint(t->off + t->len, <=, g->size);
    t->node_off = stripe_node_offset(g, t->off, &node);
    g_assert_cmpuint(node, ==, held_node.index);
    t->file = held_node.file;
}

/* A buffer of pattern @seed for @t. */
static uint8_t *target_pattern(const CacheTarget *t, uint32_t seed)
{
    uint8_t *buf = g_malloc(t->len);

    pattern_fill(buf, t->off, t->len, seed);
    return buf;
}

/* Whether the node's backing file holds @want for @t. */
static bool node_holds(const CacheTarget *t, const uint8_t *want,
                       uint8_t *got)
{
    int fd = open(t->file, O_RDONLY);
    ssize_t n;

    g_assert_cmpint(fd, >=, 0);
    n = pread(fd, got, t->len, t->node_off);
    close(fd);
    g_assert_cmpint(n, ==, t->len);
    return !memcmp(got, want, t->len);
}

/* The node has the data of @t: compared byte by byte if not. */
static void assert_node_holds(const StripeDev *d, const CacheTarget *t,
                              const uint8_t *want, const char *what)
{
    g_autofree uint8_t *got = g_malloc(t->len);

    if (!node_holds(t, want, got)) {
        g_test_message("%s: not on the node's backing file %s at %" PRIu64,
                       what, t->file, t->node_off);
        verify_bytes(d, got, want, t->off, t->len, what);
    }
}

/*
 * The node does not have the data of @t yet.  This keeps a later
 * assert_node_holds() from passing on data written before the test.
 */
static void assert_node_lacks(const CacheTarget *t, const uint8_t *want,
                              const char *what)
{
    g_autofree uint8_t *got = g_malloc(t->len);
    bool holds = node_holds(t, want, got);

    if (holds) {
        g_test_message("%s: already on the node", what);
    }
    g_assert_false(holds);
}

/*
 * drive0's cache statistics from query-blockstats (a new reference), or
 * NULL when the stripe has no cache.
 */
static QDict *cache_stats(QTestState *qts)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'query-blockstats' }");
    QDict *cache = NULL;
    QListEntry *e;
    bool found = false;

    g_assert(qdict_haskey(resp, "return"));
    QLIST_FOREACH_ENTRY(qdict_get_qlist(resp, "return"), e) {
        QDict *st = qobject_to(QDict, qlist_entry_obj(e));
        QDict *spec;

        if (g_strcmp0(qdict_get_try_str(st, "device"), "drive0")) {
            continue;
        }
        spec = qdict_get_qdict(st, "driver-specific");
        g_assert_nonnull(spec);
        g_assert_cmpstr(qdict_get_str(spec, "driver"), ==, "stripe");
        cache = qdict_get_qdict(spec, "cache");
        qobject_ref(cache);
        found = true;
    }
    qobject_unref(resp);
    g_assert_true(found);
    return cache;
}

/* One statistic of drive0's cache, now. */
static uint64_t cache_stat(QTestState *qts, const char *name)
{
    QDict *cache = cache_stats(qts);
    uint64_t val;

    g_assert_nonnull(cache);
    g_assert_true(qdict_haskey(cache, name));
    val = qdict_get_int(cache, name);
    qobject_unref(cache);
    return val;
}

/*
 * The request in flight waits for the held node: it must not complete
 * within CACHE_HOLD_US.
 */
static void expect_held(StripeDev *d, const char *what)
{
    gint64 end = g_get_monotonic_time() + CACHE_HOLD_US;
    uint32_t head;
    bool used;

    do {
        g_usleep(10 * 1000);
        used = request_used(d, &head);
        if (used) {
            g_test_message("%s completed while node %u was held back",
                           what, held_node.index);
        }
        g_assert_false(used);
    } while (g_get_monotonic_time() < end);
}

/* Request @r does not wait for the held node: it completes with @status. */
static void expect_done_while_held(StripeDev *d, BlkReq *r, uint8_t status,
                                   const char *what)
{
    g_test_message("%s must complete while node %u is held back", what,
                   held_node.index);
    blk_wait_timeout(d, r, 1, CACHE_HELD_TIMEOUT_US);
    g_assert_cmpuint(blk_status(d, r), ==, status);
}

/* Resume the held node and see @r, which waited for it, complete OK. */
static void resume_and_complete(StripeDev *d, BlkReq *r)
{
    node_resume();
    blk_wait(d, r, 1);
    g_assert_cmpuint(blk_status(d, r), ==, VIRTIO_BLK_S_OK);
    blk_finish(d, r, NULL);
}

/*
 * cache=writeback: a write completes once it is in the cache, before its
 * node has it; a flush completes only once the node has it.  With
 * cache-writethrough-until-flush=off, from the first write on.
 */
static void test_cache_writeback(void *obj, void *arg,
                                 QGuestAllocator *alloc)
{
    StripeDev d;
    CacheTarget t;
    BlkReq w, f;
    g_autofree uint8_t *data = NULL;

    if (!cache_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    g_assert_true(d.features & (1ULL << VIRTIO_BLK_F_FLUSH));
    cache_target(&d, arg, 0, &t);
    data = target_pattern(&t, 401);

    node_pause();
    blk_submit(&d, &w, VIRTIO_BLK_T_OUT, t.off / SECTOR, data, t.len, 2);
    expect_done_while_held(&d, &w, VIRTIO_BLK_S_OK, "write");
    blk_finish(&d, &w, NULL);
    /* absorbed: the cache owes the data to the node */
    g_assert_cmpuint(cache_stat(d.qts, "write-through-requests"), ==, 0);
    g_assert_cmpuint(cache_stat(d.qts, "dirty-bytes"), >=, t.len);
    assert_node_lacks(&t, data, "absorbed write");

    blk_submit(&d, &f, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0);
    expect_held(&d, "flush");
    resume_and_complete(&d, &f);
    assert_node_holds(&d, &t, data, "write after the flush");
    g_assert_cmpuint(cache_stat(d.qts, "dirty-bytes"), ==, 0);
    stripe_dev_stop(&d);
}

/*
 * cache=writeback with cache-writethrough-until-flush on (the default):
 * until the guest's first flush a write waits for its node, from then on
 * it does not.
 */
static void test_cache_writeback_until_flush(void *obj, void *arg,
                                             QGuestAllocator *alloc)
{
    StripeDev d;
    CacheTarget t1, t2;
    BlkReq w1, w2;
    g_autofree uint8_t *data1 = NULL;
    g_autofree uint8_t *data2 = NULL;

    if (!cache_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    cache_target(&d, arg, 0, &t1);
    cache_target(&d, arg, 1, &t2);
    data1 = target_pattern(&t1, 411);
    data2 = target_pattern(&t2, 412);

    node_pause();
    blk_submit(&d, &w1, VIRTIO_BLK_T_OUT, t1.off / SECTOR, data1, t1.len,
               2);
    expect_held(&d, "write before the first flush");
    assert_node_lacks(&t1, data1, "write before the first flush");
    resume_and_complete(&d, &w1);
    assert_node_holds(&d, &t1, data1, "write before the first flush");

    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0), ==,
                     VIRTIO_BLK_S_OK);
    node_pause();
    blk_submit(&d, &w2, VIRTIO_BLK_T_OUT, t2.off / SECTOR, data2, t2.len,
               2);
    expect_done_while_held(&d, &w2, VIRTIO_BLK_S_OK,
                           "write after the first flush");
    blk_finish(&d, &w2, NULL);
    assert_node_lacks(&t2, data2, "write after the first flush");
    node_resume();
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0), ==,
                     VIRTIO_BLK_S_OK);
    assert_node_holds(&d, &t2, data2, "write after the second flush");
    stripe_dev_stop(&d);
}

/*
 * cache=none and cache=directsync (cache.direct=on): no stripe cache, a
 * write completes only once its node has it.
 */
static void test_cache_direct(void *obj, void *arg, QGuestAllocator *alloc)
{
    StripeDev d;
    CacheTarget t;
    BlkReq w;
    g_autofree uint8_t *data = NULL;

    if (!cache_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    g_assert_null(cache_stats(d.qts));
    cache_target(&d, arg, 0, &t);
    data = target_pattern(&t, 421 + ((CacheCase *)arg)->slot);

    node_pause();
    blk_submit(&d, &w, VIRTIO_BLK_T_OUT, t.off / SECTOR, data, t.len, 2);
    expect_held(&d, "write");
    assert_node_lacks(&t, data, "write");
    resume_and_complete(&d, &w);
    assert_node_holds(&d, &t, data, "completed write");
    stripe_dev_stop(&d);
}

/*
 * cache=writethrough: QEMU sends every write with FUA, so it completes
 * only once its node has it; but the cache keeps what was written and
 * serves it while the node is held back.
 */
static void test_cache_writethrough(void *obj, void *arg,
                                    QGuestAllocator *alloc)
{
    StripeDev d;
    CacheTarget t1, t2;
    BlkReq r, w;
    g_autofree uint8_t *data1 = NULL;
    g_autofree uint8_t *data2 = NULL;
    g_autofree uint8_t *got = NULL;

    if (!cache_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    cache_target(&d, arg, 0, &t1);
    cache_target(&d, arg, 1, &t2);
    data1 = target_pattern(&t1, 431);
    data2 = target_pattern(&t2, 432);
    got = g_malloc(t1.len);

    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_OUT, t1.off / SECTOR, data1,
                            t1.len, 2), ==, VIRTIO_BLK_S_OK);
    assert_node_holds(&d, &t1, data1, "completed write");

    node_pause();
    blk_submit(&d, &r, VIRTIO_BLK_T_IN, t1.off / SECTOR, NULL, t1.len, 2);
    expect_done_while_held(&d, &r, VIRTIO_BLK_S_OK, "read of cached data");
    blk_finish(&d, &r, got);
    verify_bytes(&d, got, data1, t1.off, t1.len, "read from the cache");
    g_assert_cmpuint(cache_stat(d.qts, "read-hit-requests"), ==, 1);

    blk_submit(&d, &w, VIRTIO_BLK_T_OUT, t2.off / SECTOR, data2, t2.len, 2);
    expect_held(&d, "write");
    assert_node_lacks(&t2, data2, "write");
    resume_and_complete(&d, &w);
    assert_node_holds(&d, &t2, data2, "completed write");
    g_assert_cmpuint(cache_stat(d.qts, "write-through-requests"), ==, 2);
    stripe_dev_stop(&d);
}

/*
 * cache=unsafe: writes are absorbed from the first on (no write-through
 * until a flush: QEMU does not pass the guest's flushes to the nodes).  A
 * flush still writes the cache back, as QEMU's rule is that cached data
 * goes "to the OS" even with cache=unsafe (so killing QEMU loses nothing
 * flushed): it waits for the held node, and once it completes the node
 * has the data.
 */
static void test_cache_unsafe(void *obj, void *arg, QGuestAllocator *alloc)
{
    StripeDev d;
    CacheTarget t;
    BlkReq w, f;
    g_autofree uint8_t *data = NULL;

    if (!cache_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    cache_target(&d, arg, 0, &t);
    data = target_pattern(&t, 441);

    node_pause();
    blk_submit(&d, &w, VIRTIO_BLK_T_OUT, t.off / SECTOR, data, t.len, 2);
    expect_done_while_held(&d, &w, VIRTIO_BLK_S_OK, "write");
    blk_finish(&d, &w, NULL);
    blk_submit(&d, &f, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0);
    expect_held(&d, "flush");
    assert_node_lacks(&t, data, "write");
    resume_and_complete(&d, &f);
    assert_node_holds(&d, &t, data, "flushed write");
    stripe_dev_stop(&d);
}

/*
 * The data of the failing node's unit in region @reg, and where that node
 * has it.
 */
static void failing_unit_target(const StripeDev *d, const ErrorRegion *reg,
                                CacheTarget *t)
{
    unsigned node;

    t->off = QEMU_ALIGN_DOWN(reg->target, d->geo.unit);
    t->len = d->geo.unit;
    g_assert_cmpuint(t->off, >=, reg->hit_off);
    g_assert_cmpuint(t->off + t->len, <=, reg->hit_off + reg->hit_len);
    t->node_off = stripe_node_offset(&d->geo, t->off, &node);
    g_assert_cmpint(node, ==, d->geo.debug_node);
    t->file = error_wrapped_file;
}

/*
 * Start a cached stripe/error/ device and write @sh's region, which
 * reaches the failing node: after a first flush, the cache absorbs it.
 */
static bool cache_error_start(StripeDev *d, void *obj, void *arg,
                              QGuestAllocator *alloc, ErrorRegion *reg,
                              CacheTarget *t, Shadow *sh, uint32_t seed)
{
    const ErrorCase *c = arg;

    if (!error_dev_start(d, obj, arg, alloc)) {
        return false;
    }
    g_assert_true(d->features & (1ULL << VIRTIO_BLK_F_FLUSH));
    error_region(d, c->rules[0].node_offset, reg);
    failing_unit_target(d, reg, t);
    shadow_init(sh, reg->hit_off, reg->hit_len);

    /* ends cache-writethrough-until-flush */
    g_assert_cmpuint(blk_do(d, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0), ==,
                     VIRTIO_BLK_S_OK);
    /* the node would fail it: it can only succeed in the cache */
    blk_write_pattern(d, sh, reg->hit_off, reg->hit_len, seed, 2);
    g_assert_cmpuint(cache_stat(d->qts, "write-through-requests"), ==, 0);
    g_assert_cmpuint(cache_stat(d->qts, "dirty-bytes"), >=, reg->hit_len);
    assert_node_lacks(t, shadow_at(sh, t->off, t->len), "absorbed write");
    return true;
}

/*
 * werror=report: the flush that writes back to the failing node fails
 * with the node's error, and the data stays dirty, not dropped; the rule
 * fired once, so the next flush writes it.
 */
static void test_cache_error_report(void *obj, void *arg,
                                    QGuestAllocator *alloc)
{
    const ErrorCase *c = arg;
    StripeDev d;
    ErrorRegion reg;
    CacheTarget t;
    Shadow sh;

    if (!cache_error_start(&d, obj, arg, alloc, &reg, &t, &sh, 501)) {
        return;
    }
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0), ==,
                     VIRTIO_BLK_S_IOERR);
    expect_io_error(&d, false, "write", "report", c->rules[0].err);
    assert_running(&d);
    g_assert_cmpuint(cache_stat(d.qts, "writeback-errors"), >, 0);
    g_assert_cmpuint(cache_stat(d.qts, "flush-errors"), ==, 1);
    /* at least the failing node's unit is still owed to it */
    g_assert_cmpuint(cache_stat(d.qts, "dirty-bytes"), >=, t.len);
    assert_node_lacks(&t, shadow_at(&sh, t.off, t.len), "failed writeback");

    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0), ==,
                     VIRTIO_BLK_S_OK);
    g_assert_cmpuint(cache_stat(d.qts, "dirty-bytes"), ==, 0);
    assert_node_holds(&d, &t, shadow_at(&sh, t.off, t.len),
                      "writeback retried by the second flush");
    blk_read_verify(&d, &sh, reg.hit_off, reg.hit_len, 1,
                    "read after the second flush");

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/*
 * werror=stop: the flush that writes back to the failing node stops the
 * VM and is held; after cont the device flushes again, and since the rule
 * fired once, the data reaches the node.
 */
static void test_cache_error_stop(void *obj, void *arg,
                                  QGuestAllocator *alloc)
{
    const ErrorCase *c = arg;
    StripeDev d;
    ErrorRegion reg;
    CacheTarget t;
    Shadow sh;
    BlkReq f;

    if (!cache_error_start(&d, obj, arg, alloc, &reg, &t, &sh, 511)) {
        return;
    }
    blk_submit(&d, &f, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0);
    expect_io_error(&d, true, "write", "stop", c->rules[0].err);
    expect_stopped(&d);
    cont_and_complete(&d, &f);
    g_assert_cmpuint(blk_status(&d, &f), ==, VIRTIO_BLK_S_OK);
    blk_finish(&d, &f, NULL);
    g_assert_cmpuint(cache_stat(d.qts, "dirty-bytes"), ==, 0);
    assert_node_holds(&d, &t, shadow_at(&sh, t.off, t.len),
                      "writeback retried after cont");
    blk_read_verify(&d, &sh, reg.hit_off, reg.hit_len, 1,
                    "read after cont");

    shadow_free(&sh);
    stripe_dev_stop(&d);
}

/*
 * stripe/cache/offline-*: the LUN of a real node goes offline (tgtd then
 * answers NOT READY, which QEMU's iscsi driver reports as ENOMEDIUM) under
 * werror=stop,rerror=stop.  The guest request that needs the node stops
 * the VM; once the LUN is back, cont completes it, and nothing that the
 * guest was told is written is missing.
 */

/* Write @data to @t on the node's backing file, behind QEMU's back. */
static void node_store(const CacheTarget *t, const uint8_t *data)
{
    int fd = open(t->file, O_WRONLY);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pwrite(fd, data, t->len, t->node_off), ==, t->len);
    g_assert_cmpint(fdatasync(fd), ==, 0);
    close(fd);
}

/*
 * A write absorbed by the cache before the LUN went away: the flush that
 * must write it back stops the VM, and after cont it completes with the
 * data on the node.  A write that the guest makes while the VM is stopped
 * cannot happen, so the flush covers everything the guest was told.
 */
static void test_cache_offline_flush(void *obj, void *arg,
                                     QGuestAllocator *alloc)
{
    StripeDev d;
    CacheTarget t;
    BlkReq f;
    g_autofree uint8_t *data = NULL;

    if (!cache_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    cache_target(&d, arg, 0, &t);
    data = target_pattern(&t, 701);
    g_assert_cmpuint(blk_do(&d, VIRTIO_BLK_T_OUT, t.off / SECTOR, data,
                            t.len, 2), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpuint(cache_stat(d.qts, "dirty-bytes"), >=, t.len);
    assert_node_lacks(&t, data, "absorbed write");

    node_fault("offline", "online");
    blk_submit(&d, &f, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0);
    expect_io_error(&d, true, "write", "stop", ENOMEDIUM);
    expect_stopped(&d);
    assert_node_lacks(&t, data, "write while the LUN is offline");
    /* still owed to the node, not dropped */
    g_assert_cmpuint(cache_stat(d.qts, "dirty-bytes"), >=, t.len);

    node_fault_end();
    cont_and_complete(&d, &f);
    g_assert_cmpuint(blk_status(&d, &f), ==, VIRTIO_BLK_S_OK);
    blk_finish(&d, &f, NULL);
    assert_node_holds(&d, &t, data, "write after cont");
    g_assert_cmpuint(cache_stat(d.qts, "dirty-bytes"), ==, 0);
    stripe_dev_stop(&d);
}

/*
 * A read that misses the cache while the LUN is offline stops the VM;
 * after cont it returns what the node holds.
 */
static void test_cache_offline_read(void *obj, void *arg,
                                    QGuestAllocator *alloc)
{
    StripeDev d;
    CacheTarget t;
    BlkReq r;
    g_autofree uint8_t *data = NULL;
    g_autofree uint8_t *got = NULL;

    if (!cache_dev_start(&d, obj, arg, alloc)) {
        return;
    }
    cache_target(&d, arg, 1, &t);
    data = target_pattern(&t, 702);
    got = g_malloc(t.len);
    node_store(&t, data);

    node_fault("offline", "online");
    blk_submit(&d, &r, VIRTIO_BLK_T_IN, t.off / SECTOR, NULL, t.len, 2);
    expect_io_error(&d, true, "read", "stop", ENOMEDIUM);
    expect_stopped(&d);

    node_fault_end();
    cont_and_complete(&d, &r);
    g_assert_cmpuint(blk_status(&d, &r), ==, VIRTIO_BLK_S_OK);
    blk_finish(&d, &r, got);
    verify_bytes(&d, got, data, t.off, t.len, "read after cont");
    stripe_dev_stop(&d);
}

static CacheCase cache_writeback = {
    .cache = "writeback", .write_cache = true,
    .opts = ",cache-writethrough-until-flush=off",
    .slot = 0,
};

static CacheCase cache_writeback_until_flush = {
    .cache = "writeback", .write_cache = true, .opts = "", .slot = 1,
};

static CacheCase cache_none = {
    .cache = "none", .write_cache = true, .opts = "", .slot = 2,
};

/* no write cache: QEMU sends every write with FUA */
static CacheCase cache_directsync = {
    .cache = "directsync", .write_cache = false, .opts = "", .slot = 3,
};

/*
 * Before the first flush, the stripe writes through anyway: only FUA may
 * keep the writes of this test waiting for the node.
 */
static CacheCase cache_writethrough = {
    .cache = "writethrough", .write_cache = false,
    .opts = ",cache-writethrough-until-flush=off",
    .slot = 4,
};

/* soon after the node is back, background writeback has brought the data */
static CacheCase cache_unsafe = {
    .cache = "unsafe", .write_cache = true,
    .opts = ",cache-max-dirty-age=0.1",
    .slot = 5,
};

/* only the guest's flush writes back: no writeback by age meanwhile */
static CacheCase cache_offline_flush = {
    .cache = "writeback", .write_cache = true,
    .opts = ",cache-writethrough-until-flush=off,cache-max-dirty-age=3600",
    .errors = ",werror=stop,rerror=stop",
    .slot = 6,
};

static CacheCase cache_offline_read = {
    .cache = "writeback", .write_cache = true, .opts = "",
    .errors = ",werror=stop,rerror=stop",
    .slot = 7,
};

/*
 * Only the guest's flushes may write back to the failing node, so that
 * the test sees which flush fails and the data stay dirty in between: no
 * writeback by age during a test.
 */
#define CACHE_ERROR_OPTS        ",cache-max-dirty-age=3600"

static ErrorCase cache_error_report = {
    .werror = "report", .rerror = "report",
    .rules = { { "write", EIO, ERR_NODE_OFFSET, true } },
    .cache = "writeback", .cache_opts = CACHE_ERROR_OPTS,
};

static ErrorCase cache_error_stop = {
    .werror = "stop", .rerror = "report",
    .rules = { { "write", EIO, ERR_NODE_OFFSET, true } },
    .cache = "writeback", .cache_opts = CACHE_ERROR_OPTS,
};

static void add_cache_test(const char *name, QOSTestFunc fn, CacheCase *c)
{
    g_autofree char *path = g_strdup_printf("stripe/cache/%s", name);
    QOSGraphTestOptions opts = {
        .before = stripe_cache_before,
        .arg = c,
    };

    qos_add_test(path, "virtio-blk", fn, &opts);
}

static void add_cache_error_test(const char *name, QOSTestFunc fn,
                                 ErrorCase *c)
{
    g_autofree char *path = g_strdup_printf("stripe/cache/%s", name);
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

    add_cache_test("writeback", test_cache_writeback, &cache_writeback);
    add_cache_test("writeback-until-flush", test_cache_writeback_until_flush,
                   &cache_writeback_until_flush);
    add_cache_test("none", test_cache_direct, &cache_none);
    add_cache_test("directsync", test_cache_direct, &cache_directsync);
    add_cache_test("writethrough", test_cache_writethrough,
                   &cache_writethrough);
    add_cache_test("unsafe", test_cache_unsafe, &cache_unsafe);
    add_cache_test("offline-flush-stop", test_cache_offline_flush,
                   &cache_offline_flush);
    add_cache_test("offline-read-stop", test_cache_offline_read,
                   &cache_offline_read);
    add_cache_error_test("flush-error-report", test_cache_error_report,
                         &cache_error_report);
    add_cache_error_test("flush-error-stop", test_cache_error_stop,
                         &cache_error_stop);
}

libqos_init(register_stripe_virtio_blk_test);
