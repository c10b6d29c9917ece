/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of a multiqueue virtio-blk device on the stripe driver: four
 * queues, each served by its own iothread (iothread-vq-mapping), so that
 * the driver and its cache run in four threads at once, as they do under
 * a guest with several CPUs.  No guest runs: the test itself is the
 * driver of the device, which makes the test quick enough for a
 * ThreadSanitizer build of QEMU (qtests/run-tsan runs it there).
 *
 * The disk is a stripe over the storage nodes of QEMU_STRIPE_NODE_URLS
 * (iSCSI URLs, as qemu-stripe's run-stripe-qtest passes them), attached
 * with -blockdev so that it can be reopened, with a cache small enough
 * that hits, fetches, eviction, writeback and readahead all happen.  In
 * rounds, every queue gets a batch of random reads, writes and flushes on
 * distinct slots of a region; every read must return what was written
 * last.  Under that load the disk is reopened with other cache options,
 * and at the end the device is unplugged with writes in flight and the
 * node deleted; what the nodes then hold is read back with qemu-img and
 * must be what was written (for the writes cut off by the unplug, the old
 * or the new data).
 *
 *   QEMU_STRIPE_MQ_SECONDS  how long the rounds run (default 10)
 *
 * Copyright (c) 2026 qemu-stripe developers
 */

#include "qemu/osdep.h"
#include "libqtest-single.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "qobject/qlist.h"
#include "standard-headers/linux/virtio_blk.h"
#include "standard-headers/linux/virtio_config.h"
#include "libqos/pci-pc.h"
#include "libqos/qgraph.h"
#include "libqos/virtio-blk.h"
#include "stripe-virtio-blk-util.h"

#define MQ_QUEUES           4
/* Not a divisor of the stripe unit: some requests cross a unit. */
#define MQ_SLOT             (24 * KiB)
#define MQ_SLOTS            512
#define MQ_REGION           ((uint64_t)MQ_SLOTS * MQ_SLOT)
/* Requests per queue and round; each takes at most 5 descriptors. */
#define MQ_PER_QUEUE        12
#define MQ_MAX_SEGS         3
#define MQ_REQS             (MQ_QUEUES * MQ_PER_QUEUE)
/* The slot of the device that libqos's virtio-blk-pci node plugs. */
#define MQ_PCI_SLOT         4

/* A cache much smaller than the region: misses, eviction, writeback. */
#define MQ_CACHE_OPTS \
    "\"cache-size\": 2097152, \"cache-max-dirty\": 1048576, " \
    "\"cache-target-dirty\": 524288"

static bool mq_configured;

/* The JSON of an iSCSI node for an iscsi://HOST:PORT/TARGET/LUN URL. */
static void append_iscsi_node(GString *s, const char *url)
{
    g_autoptr(GUri) uri = g_uri_parse(url, G_URI_FLAGS_NONE, NULL);
    g_auto(GStrv) path = NULL;

    g_assert_nonnull(uri);
    g_assert_cmpstr(g_uri_get_scheme(uri), ==, "iscsi");
    path = g_strsplit(g_uri_get_path(uri), "/", -1);
    /* "/TARGET/LUN" splits into "", TARGET, LUN */
    g_assert_cmpuint(g_strv_length(path), ==, 3);
    g_string_append_printf(s, "{\"driver\": \"iscsi\", \"transport\": \"tcp\","
                           " \"portal\": \"%s:%d\", \"target\": \"%s\","
                           " \"lun\": %s}", g_uri_get_host(uri),
                           g_uri_get_port(uri) > 0 ? g_uri_get_port(uri)
                                                   : 3260,
                           path[1], path[2]);
}

/* The stripe node drive0 over @urls, with the cache options @cache. */
static char *mq_stripe_json(char **urls, const char *cache)
{
    GString *s = g_string_new("{\"driver\": \"stripe\", "
                              "\"node-name\": \"drive0\", \"nodes\": [");
    unsigned i;

    for (i = 0; urls[i]; i++) {
        if (i) {
            g_string_append(s, ", ");
        }
        append_iscsi_node(s, urls[i]);
    }
    g_string_append_printf(s, "], %s}", cache);
    return g_string_free(s, false);
}

/*
 * The device of libqos's virtio-blk-pci node, as JSON with four queues on
 * four iothreads: iothread-vq-mapping is a list, which only the JSON form
 * of -device can give.  @opts are the node's KEY=VALUE,... options.
 */
static char *mq_device_json(const char *opts)
{
    g_auto(GStrv) kv = g_strsplit(opts, ",", -1);
    GString *s = g_string_new("{\"driver\": \"virtio-blk-pci\"");
    unsigned i;

    for (i = 0; kv[i]; i++) {
        char *eq = strchr(kv[i], '=');

        g_assert_nonnull(eq);
        *eq = '\0';
        /* drive0 is now a node name, which drive= accepts too */
        g_string_append_printf(s, ", \"%s\": \"%s\"", kv[i], eq + 1);
    }
    g_string_append_printf(s, ", \"num-queues\": %d, "
                           "\"iothread-vq-mapping\": [", MQ_QUEUES);
    for (i = 0; i < MQ_QUEUES; i++) {
        g_string_append_printf(s, "%s{\"iothread\": \"mqio%u\"}",
                               i ? ", " : "", i);
    }
    g_string_append(s, "]}");
    return g_string_free(s, false);
}

static void *stripe_mq_before(GString *cmd_line, void *arg)
{
    static const char device[] = " -device virtio-blk-pci,";
    g_auto(GStrv) urls = split_words(g_getenv("QEMU_STRIPE_NODE_URLS"));
    g_autofree char *stripe = NULL;
    g_autofree char *opts = NULL;
    g_autofree char *json = NULL;
    g_autofree char *quoted = NULL;
    const char *dev, *end;
    unsigned i;

    qos_invalidate_command_line();
    mq_configured = urls[0] != NULL;
    if (!mq_configured) {
        g_string_append(cmd_line, " -drive if=none,id=drive0,format=raw,"
                        "file=null-co:// ");
        return NULL;
    }
    dev = strstr(cmd_line->str, device);
    g_assert_nonnull(dev);
    end = strchr(dev + strlen(device), ' ') ?: cmd_line->str + cmd_line->len;
    opts = g_strndup(dev + strlen(device), end - dev - strlen(device));
    json = mq_device_json(opts);
    quoted = g_shell_quote(json);
    g_string_erase(cmd_line, dev - cmd_line->str, end - dev);
    g_string_append_printf(cmd_line, " -device %s", quoted);

    for (i = 0; i < MQ_QUEUES; i++) {
        g_string_append_printf(cmd_line, " -object iothread,id=mqio%u", i);
    }
    stripe = mq_stripe_json(urls, MQ_CACHE_OPTS);
    g_free(quoted);
    quoted = g_shell_quote(stripe);
    g_string_append_printf(cmd_line, " -blockdev %s ", quoted);
    return arg;
}

/* One request of a round and the queue it went to. */
typedef struct MqReq {
    BlkReq r;
    unsigned queue;
    uint64_t off;
} MqReq;

typedef struct MqTest {
    StripeDev dev[MQ_QUEUES];
    Shadow sh;                  /* what the region holds */
    Shadow old;                 /* the last round's writes replaced this */
    uint64_t base;
    GRand *rng;
    unsigned slots[MQ_SLOTS];
    uint64_t ops[MQ_QUEUES];
    uint64_t reads, writes, flushes;
} MqTest;

/* libqos hands out each descriptor once: reuse them when all are used. */
static void mq_reset_queues(MqTest *t)
{
    for (unsigned q = 0; q < MQ_QUEUES; q++) {
        t->dev[q].vq->free_head = 0;
        t->dev[q].vq->num_free = t->dev[q].vq->size;
    }
}

/* Queue one random request on slot @slot (a flush uses none). */
static void mq_submit(MqTest *t, MqReq *m, unsigned queue, unsigned slot,
                      uint32_t seed, bool writes_only)
{
    StripeDev *d = &t->dev[queue];
    unsigned kind = writes_only ? 0 : g_rand_int_range(t->rng, 0, 20);
    uint32_t sectors = MQ_SLOT / SECTOR;
    uint32_t first = g_rand_int_range(t->rng, 0, sectors);
    uint32_t count = g_rand_int_range(t->rng, 1, sectors - first + 1);
    size_t len = (size_t)count * SECTOR;
    unsigned nseg = MIN(count, (uint32_t)g_rand_int_range(t->rng, 1,
                                                          MQ_MAX_SEGS + 1));

    m->queue = queue;
    m->off = t->base + (uint64_t)slot * MQ_SLOT + first * SECTOR;
    if (kind == 0 || kind >= 11) {
        uint8_t *data = shadow_at(&t->sh, m->off, len);

        memcpy(shadow_at(&t->old, m->off, len), data, len);
        pattern_fill(data, m->off, len, seed);
        blk_submit(d, &m->r, VIRTIO_BLK_T_OUT, m->off / SECTOR, data, len,
                   nseg);
        t->writes++;
    } else if (kind == 1) {
        blk_submit(d, &m->r, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0);
        t->flushes++;
    } else {
        blk_submit(d, &m->r, VIRTIO_BLK_T_IN, m->off / SECTOR, NULL, len,
                   nseg);
        t->reads++;
    }
}

/* Queue a round: MQ_PER_QUEUE requests on every queue, on distinct slots. */
static void mq_round_submit(MqTest *t, MqReq *reqs, uint32_t round,
                            bool writes_only)
{
    unsigned i;

    /* a partial shuffle: the first MQ_REQS slots are a random choice */
    for (i = 0; i < MQ_REQS; i++) {
        unsigned j = g_rand_int_range(t->rng, i, MQ_SLOTS);
        unsigned tmp = t->slots[i];

        t->slots[i] = t->slots[j];
        t->slots[j] = tmp;
    }
    /* across the queues in turn, so that every iothread starts early */
    for (i = 0; i < MQ_REQS; i++) {
        mq_submit(t, &reqs[i], i % MQ_QUEUES, t->slots[i],
                  round * MQ_REQS + i, writes_only);
    }
}

/* What a round still waits for, and what the driver says, on a timeout. */
static void mq_dump(MqTest *t, MqReq *reqs, const char *what)
{
    QDict *resp = qtest_qmp(t->dev[0].qts, "{'execute': 'query-blockstats'}");
    g_autoptr(GString) json = qobject_to_json_pretty(QOBJECT(resp), true);

    for (unsigned i = 0; i < MQ_REQS; i++) {
        if (!reqs[i].r.done) {
            g_test_message("%s: no answer on queue %u: type %u, offset %"
                           PRIu64 ", %zu bytes", what, reqs[i].queue,
                           reqs[i].r.type, reqs[i].off, reqs[i].r.len);
        }
    }
    g_test_message("query-blockstats: %s", json->str);
    qobject_unref(resp);
}

/* Wait until every queue has used every request of its part of @reqs. */
static void mq_wait(MqTest *t, MqReq *reqs, const char *what)
{
    gint64 deadline = g_get_monotonic_time() + REQ_TIMEOUT_US;
    unsigned pending = MQ_REQS;
    unsigned q, i;

    for (i = 0; i < MQ_REQS; i++) {
        reqs[i].r.done = false;
    }
    while (pending) {
        bool got = false;
        uint32_t head;

        for (q = 0; q < MQ_QUEUES; q++) {
            while (qvirtqueue_get_buf(t->dev[q].qts, t->dev[q].vq, &head,
                                      NULL)) {
                for (i = q; i < MQ_REQS && (reqs[i].r.head != head ||
                                            reqs[i].r.done);
                     i += MQ_QUEUES) {
                    /* find the request: request i went to queue i % 4 */
                }
                g_assert_cmpuint(i, <, MQ_REQS);
                reqs[i].r.done = true;
                t->ops[q]++;
                pending--;
                got = true;
            }
        }
        if (!got) {
            if (g_get_monotonic_time() > deadline) {
                mq_dump(t, reqs, what);
                g_assert_not_reached();
            }
            g_usleep(100);
        }
    }
}

/* Wait for a round and check it: every read returns the last write. */
static void mq_round_finish(MqTest *t, MqReq *reqs, const char *what)
{
    unsigned i;

    mq_wait(t, reqs, what);
    for (i = 0; i < MQ_REQS; i++) {
        MqReq *m = &reqs[i];
        StripeDev *d = &t->dev[m->queue];
        g_autofree uint8_t *data = NULL;

        g_assert_cmpuint(blk_status(d, &m->r), ==, VIRTIO_BLK_S_OK);
        if (m->r.type == VIRTIO_BLK_T_IN) {
            data = g_malloc(m->r.len);
        }
        blk_finish(d, &m->r, data);
        if (data) {
            verify_bytes(d, data, shadow_at(&t->sh, m->off, m->r.len),
                         m->off, m->r.len, "read on a queue");
        }
    }
    mq_reset_queues(t);
}

/* Reopen drive0 with the cache options @cache while a round runs. */
static void mq_reopen(MqTest *t, const char *cache)
{
    g_auto(GStrv) urls = split_words(g_getenv("QEMU_STRIPE_NODE_URLS"));
    g_autofree char *json = mq_stripe_json(urls, cache);
    QObject *opts = qobject_from_json(json, &error_abort);
    QDict *resp = qtest_qmp(t->dev[0].qts, "{'execute': 'blockdev-reopen', "
                            "'arguments': {'options': [%p]}}", opts);

    g_assert_nonnull(resp);
    if (qdict_haskey(resp, "error")) {
        g_test_message("blockdev-reopen: %s",
                       qdict_get_str(qdict_get_qdict(resp, "error"),
                                     "desc"));
    }
    g_assert_false(qdict_haskey(resp, "error"));
    qobject_unref(resp);
}

/* Write the region in 1 MiB requests, spread over the queues; flush. */
static void mq_fill(MqTest *t)
{
    BlkReq r;
    uint64_t off;
    unsigned q = 0;

    for (off = 0; off < MQ_REGION; off += MiB, q = (q + 1) % MQ_QUEUES) {
        blk_write_pattern(&t->dev[q], &t->sh, t->base + off,
                          MIN(MiB, MQ_REGION - off), 1, 2);
        mq_reset_queues(t);
    }
    blk_submit(&t->dev[0], &r, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, 0);
    blk_wait(&t->dev[0], &r, 1);
    g_assert_cmpuint(blk_status(&t->dev[0], &r), ==, VIRTIO_BLK_S_OK);
    blk_finish(&t->dev[0], &r, NULL);
    mq_reset_queues(t);
}

/* Read the region back, a quarter through each queue at once. */
static void mq_verify_region(MqTest *t)
{
    uint64_t part = MQ_REGION / MQ_QUEUES;
    uint64_t chunk = 256 * KiB;
    BlkReq r[MQ_QUEUES];
    uint64_t off;
    unsigned q;

    for (off = 0; off < part; off += chunk) {
        for (q = 0; q < MQ_QUEUES; q++) {
            blk_submit(&t->dev[q], &r[q], VIRTIO_BLK_T_IN,
                       (t->base + q * part + off) / SECTOR, NULL, chunk, 1);
        }
        for (q = 0; q < MQ_QUEUES; q++) {
            g_autofree uint8_t *data = g_malloc(chunk);
            uint64_t at = t->base + q * part + off;

            blk_wait(&t->dev[q], &r[q], 1);
            g_assert_cmpuint(blk_status(&t->dev[q], &r[q]), ==,
                             VIRTIO_BLK_S_OK);
            blk_finish(&t->dev[q], &r[q], data);
            verify_bytes(&t->dev[q], data, shadow_at(&t->sh, at, chunk), at,
                         chunk, "region read back");
        }
        mq_reset_queues(t);
    }
}

/*
 * The region as the nodes hold it, read with qemu-img once QEMU let go,
 * at the start of the buffer returned.
 */
static uint8_t *mq_read_nodes(MqTest *t)
{
    g_auto(GStrv) urls = split_words(g_getenv("QEMU_STRIPE_NODE_URLS"));
    g_autofree char *joined = g_strjoinv("|", urls);
    g_autofree char *name = g_strdup_printf("if=stripe:%s", joined);
    g_autofree char *tmp = NULL;
    g_autofree char *of = NULL;
    /* from the start: with skip=, qemu-img dd's count= counts it too */
    g_autofree char *count = g_strdup_printf("count=%" PRIu64,
                                             (t->base + MQ_REGION) / MiB);
    g_autoptr(GError) err = NULL;
    gchar *out = NULL;
    gsize len;
    int fd, status;

    fd = g_file_open_tmp("stripe-mq-XXXXXX", &tmp, &err);
    g_assert_no_error(err);
    close(fd);
    of = g_strdup_printf("of=%s", tmp);
    {
        char *argv[] = {
            (char *)g_getenv("QTEST_QEMU_IMG"), (char *)"dd", (char *)"-f",
            (char *)"stripe", (char *)"-O", (char *)"raw", (char *)"bs=1M",
            count, name, of, NULL
        };

        g_assert_nonnull(argv[0]);
        g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL,
                     NULL, &status, &err);
    }
    g_assert_no_error(err);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g_file_get_contents(tmp, &out, &len, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(len, ==, t->base + MQ_REGION);
    unlink(tmp);
    memmove(out, out + t->base, MQ_REGION);
    return (uint8_t *)out;
}

static void test_multiqueue(void *obj, void *arg, QGuestAllocator *alloc)
{
    const char *env = g_getenv("QEMU_STRIPE_MQ_SECONDS");
    double seconds = env ? g_ascii_strtod(env, NULL) : 10;
    g_autoptr(GTimer) timer = g_timer_new();
    MqTest t = { 0 };
    MqReq reqs[MQ_REQS];
    g_autofree uint8_t *nodes = NULL;
    uint32_t round, reopened = 0;
    uint64_t i;
    QDict *resp;

    if (!mq_configured) {
        g_test_skip("QEMU_STRIPE_NODE_URLS is not set");
        return;
    }
    stripe_dev_setup_queues(t.dev, MQ_QUEUES, obj, alloc,
                            1ULL << VIRTIO_BLK_F_MQ);
    g_assert_true(t.dev[0].features & (1ULL << VIRTIO_BLK_F_MQ));
    g_assert_cmpuint(qvirtio_config_readw(t.dev[0].vdev,
                         offsetof(struct virtio_blk_config, num_queues)),
                     ==, MQ_QUEUES);
    /* 5 descriptors per request at most: header, segments, status */
    g_assert_cmpuint(MQ_PER_QUEUE * (MQ_MAX_SEGS + 2), <=,
                     t.dev[0].vq->size);
    t.base = 8 * MiB;
    g_assert_cmpuint(t.base + MQ_REGION, <=, t.dev[0].geo.size);
    shadow_init(&t.sh, t.base, MQ_REGION);
    shadow_init(&t.old, t.base, MQ_REGION);
    t.rng = g_rand_new_with_seed(g_test_rand_int());
    for (i = 0; i < MQ_SLOTS; i++) {
        t.slots[i] = i;
    }

    /* the first flush turns cache-writethrough-until-flush into writeback */
    mq_fill(&t);
    for (round = 0; round < 8 || g_timer_elapsed(timer, NULL) < seconds;
         round++) {
        const char *what = "round";

        mq_round_submit(&t, reqs, round, false);
        if (round == 3 + reopened * 5 && reopened < 2) {
            mq_reopen(&t, reopened ? MQ_CACHE_OPTS
                                   : "\"cache-size\": 8388608, "
                                     "\"readahead-max-bytes\": 0");
            reopened++;
            what = "round with a reopen";
        }
        mq_round_finish(&t, reqs, what);
    }
    g_test_message("%u rounds in %.1f s: %" PRIu64 " reads, %" PRIu64
                   " writes, %" PRIu64 " flushes; per queue %" PRIu64 " %"
                   PRIu64 " %" PRIu64 " %" PRIu64, round,
                   g_timer_elapsed(timer, NULL), t.reads, t.writes,
                   t.flushes, t.ops[0], t.ops[1], t.ops[2], t.ops[3]);
    mq_verify_region(&t);

    /* unplug with a round of writes in flight, then delete the node */
    mq_round_submit(&t, reqs, round, true);
    qpci_unplug_acpi_device_test(t.dev[0].qts, "drv0", MQ_PCI_SLOT);
    resp = qtest_qmp(t.dev[0].qts, "{'execute': 'blockdev-del', "
                     "'arguments': {'node-name': 'drive0'}}");
    g_assert_false(qdict_haskey(resp, "error"));
    qobject_unref(resp);

    /* what the last round wrote may have landed or not; the rest must */
    nodes = mq_read_nodes(&t);
    for (i = 0; i < MQ_REQS; i++) {
        uint64_t at = reqs[i].off - t.base;
        size_t len = reqs[i].r.len;

        if (!memcmp(nodes + at, shadow_at(&t.old, reqs[i].off, len), len)) {
            memcpy(nodes + at, shadow_at(&t.sh, reqs[i].off, len), len);
        }
    }
    verify_bytes(&t.dev[0], nodes, t.sh.buf, t.base, MQ_REGION,
                 "nodes after the unplug");

    g_rand_free(t.rng);
    shadow_free(&t.sh);
    shadow_free(&t.old);
}

static void register_stripe_virtio_blk_mq_test(void)
{
    QOSGraphTestOptions opts = {
        .before = stripe_mq_before,
    };

    qos_add_test("stripe/multiqueue", "virtio-blk", test_multiqueue, &opts);
}

libqos_init(register_stripe_virtio_blk_mq_test);
