/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Staged writes (cache/sc-staged.h): which writes are staged, and that
 * nothing sends, copies or drops a staged page before it is published,
 * nor waits for it without being told when it is.
 */
#include "sc-internal.h"
#include "sc-test.h"

#define KiB SC_KiB
#define MiB SC_MiB

typedef struct Fix {
    SCCache *c;
    SCStage stage;
    uint8_t node[256 * 1024];   /* what the nodes hold */
} Fix;

static Fix *fix_new(void)
{
    Fix *f = g_new0(Fix, 1);
    SCGeometry g = {
        .disk_size = sizeof(f->node), .stripe_unit = 64 * KiB,
        .node_count = 2, .align = 512, .max_writeback_per_node = 4,
        .max_fetch_per_node = 2,
    };
    SCOptions o;
    char *err = NULL;

    sc_options_init_defaults(&o);
    o.size = 1 * MiB;
    o.max_dirty = 512 * KiB;
    o.target_dirty = 256 * KiB;
    o.writethrough_until_flush = false;
    o.readahead_max_bytes = 0;
    o.bypass_bytes = 0;
    f->c = sc_cache_new(&o, &g, &err);
    sc_assert(f->c && !err);
    sc_stage_init(&f->stage);
    return f;
}

static void check(Fix *f)
{
    char *why = NULL;

    if (!sc_cache_check(f->c, &why)) {
        g_error("inconsistent: %s", why);
    }
}

static void fix_free(Fix *f)
{
    check(f);
    sc_cache_free(f->c);
    g_free(f);
}

/* sc_write_staged() of @len bytes of @val; the copy is not made yet. */
static SCWriteResult stage(Fix *f, uint64_t off, uint64_t len, uint8_t val,
                           unsigned flags)
{
    g_autofree uint8_t *buf = g_malloc(len);
    struct iovec iov = { buf, len };
    SCWriteResult r;

    memset(buf, val, len);
    r = sc_write_staged(f->c, off, len, &iov, 1, 0, flags, 0, &f->stage);
    check(f);
    return r;
}

/* The caller's side after the lock: copy and publish. */
static bool publish(Fix *f, uint8_t val)
{
    uint64_t len = 0;
    uint32_t i;
    bool waited;

    for (i = 0; i < f->stage.n; i++) {
        len += f->stage.v[i].len;
    }
    {
        g_autofree uint8_t *buf = g_malloc(len);
        struct iovec iov = { buf, len };

        memset(buf, val, len);
        sc_staged_fill(&f->stage, &iov, 1, 0);
    }
    waited = sc_staged_publish(f->c, &f->stage);
    sc_assert(sc_stage_empty(&f->stage));
    check(f);
    return waited;
}

static void write_now(Fix *f, uint64_t off, uint64_t len, uint8_t val)
{
    g_autofree uint8_t *buf = g_malloc(len);
    struct iovec iov = { buf, len };

    memset(buf, val, len);
    sc_assert_cmpi(sc_write(f->c, off, len, &iov, 1, 0, 0, 0).status, ==,
                   SC_WRITE_DONE);
}

static void assert_cached(Fix *f, uint64_t off, uint64_t len, uint8_t val)
{
    g_autofree uint8_t *buf = g_malloc(len);
    struct iovec iov = { buf, len };
    GArray *p = sc_read(f->c, off, len, &iov, 1, 0, 0, 0);
    uint64_t i;

    sc_assert_cmpu(p->len, ==, 1);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_HIT);
    g_array_unref(p);
    for (i = 0; i < len; i++) {
        sc_assert_cmpu(buf[i], ==, val);
    }
}

/* Run every writeback job the planner gives now; returns how many. */
static int write_back(Fix *f)
{
    SCJob job;
    int n = 0;

    while (sc_writeback_next(f->c, 0, &job)) {
        uint64_t pos = job.offset;
        int i;

        for (i = 0; i < job.iovcnt; i++) {
            memcpy(f->node + pos, job.iov[i].iov_base, job.iov[i].iov_len);
            pos += job.iov[i].iov_len;
        }
        sc_writeback_done(f->c, job.id, 0, 0);
        n++;
    }
    return n;
}

static void test_rewrite_staged(void)
{
    Fix *f = fix_new();
    SCStats st;

    write_now(f, 0, 16 * KiB, 0x11);
    sc_assert_cmpi(stage(f, 4 * KiB, 8 * KiB, 0x22, 0).status, ==,
                   SC_WRITE_DONE);
    sc_assert_cmpu(f->stage.n, ==, 2);      /* a copy per page */
    /* nothing copied under the lock (and reads wait for the copy) */
    sc_assert_cmpu(sc_store_lookup(f->c, 1)->data[0], ==, 0x11);
    sc_assert_cmpu(sc_store_lookup(f->c, 2)->data[4095], ==, 0x11);
    sc_assert(!publish(f, 0x22));
    assert_cached(f, 0, 4 * KiB, 0x11);
    assert_cached(f, 4 * KiB, 8 * KiB, 0x22);
    assert_cached(f, 12 * KiB, 4 * KiB, 0x11);
    /* more pages than the stage holds inline */
    write_now(f, 64 * KiB, 64 * KiB, 0x33);
    stage(f, 64 * KiB, 64 * KiB, 0x44, 0);
    sc_assert_cmpu(f->stage.n, ==, 16);
    sc_assert(!publish(f, 0x44));
    assert_cached(f, 64 * KiB, 64 * KiB, 0x44);
    sc_cache_get_stats(f->c, &st);
    sc_assert_cmpu(st.write_staged_requests, ==, 2);
    fix_free(f);
}

/* What must be copied under the lock, as before. */
static void test_not_staged(void)
{
    Fix *f = fix_new();
    SCWriteResult r;
    SCHits hits;
    g_autoptr(GArray) pieces = g_array_new(FALSE, TRUE, sizeof(SCPiece));
    SCFlush *t;
    SCJob job;

    /* nothing cached: a new extent */
    sc_assert_cmpi(stage(f, 0, 4 * KiB, 1, 0).status, ==, SC_WRITE_DONE);
    sc_assert(sc_stage_empty(&f->stage));
    assert_cached(f, 0, 4 * KiB, 1);
    /* part of a page */
    stage(f, 512, 1 * KiB, 2, 0);
    sc_assert(sc_stage_empty(&f->stage));
    /* past the dirty extent */
    stage(f, 0, 8 * KiB, 3, 0);
    sc_assert(sc_stage_empty(&f->stage));
    /* FUA: written through */
    r = stage(f, 0, 4 * KiB, 4, SC_WRITE_FUA);
    sc_assert_cmpi(r.status, ==, SC_WRITE_THROUGH);
    sc_assert(sc_stage_empty(&f->stage));
    /* under writeback (the FUA write's ticket wants it) */
    sc_assert(sc_writeback_next(f->c, 0, &job));
    stage(f, 0, 4 * KiB, 5, 0);
    sc_assert(sc_stage_empty(&f->stage));
    sc_writeback_done(f->c, job.id, 0, 0);
    sc_assert_cmpi(sc_flush_status(f->c, r.wait), ==, 0);
    sc_flush_release(f->c, r.wait);
    write_back(f);
    t = sc_flush_begin(f->c, true);
    write_back(f);
    sc_assert_cmpi(sc_flush_status(f->c, t), ==, 0);
    sc_flush_release(f->c, t);
    /* clean data */
    stage(f, 0, 4 * KiB, 6, 0);
    sc_assert(sc_stage_empty(&f->stage));
    /* a page a read pins, after one that could be staged: neither is */
    write_now(f, 64 * KiB, 8 * KiB, 7);
    sc_read_pinned(f->c, 68 * KiB, 4 * KiB, 0, 0, &hits, pieces);
    stage(f, 64 * KiB, 8 * KiB, 8, 0);
    sc_assert(sc_stage_empty(&f->stage));
    sc_assert(!sc_store_lookup(f->c, 64 * KiB / 4096)->writers);
    sc_hits_done(&hits);
    assert_cached(f, 64 * KiB, 8 * KiB, 8);
    fix_free(f);
}

/*
 * The planner does not send a staged page: a flush waits for the copy,
 * and the publisher is told to call it again; meanwhile nothing new is
 * staged, so rewrites cannot starve the writeback.
 */
static void test_writeback_waits(void)
{
    Fix *f = fix_new();
    SCFlush *t;

    write_now(f, 0, 8 * KiB, 0x11);
    stage(f, 0, 4 * KiB, 0x22, 0);
    sc_assert(!sc_stage_empty(&f->stage));
    t = sc_flush_begin(f->c, true);
    sc_assert_cmpi(write_back(f), ==, 0);
    sc_assert_cmpi(sc_flush_status(f->c, t), ==, 1);
    /* held: the other page is written under the lock, not staged */
    {
        SCStage other;
        uint8_t buf[4096];
        struct iovec iov = { buf, sizeof(buf) };

        memset(buf, 0x33, sizeof(buf));
        sc_write_staged(f->c, 4 * KiB, 4 * KiB, &iov, 1, 0, 0, 0, &other);
        sc_assert(sc_stage_empty(&other));
    }
    sc_assert(publish(f, 0x22));
    /* called again: the copy goes out whole */
    sc_assert_cmpi(write_back(f), ==, 1);
    sc_assert_cmpi(sc_flush_status(f->c, t), ==, 0);
    sc_flush_release(f->c, t);
    sc_assert_cmpu(f->node[0], ==, 0x22);
    sc_assert_cmpu(f->node[4 * KiB - 1], ==, 0x22);
    sc_assert_cmpu(f->node[4 * KiB], ==, 0x33);
    /* the hold ends with the planner's next pass that is not refused */
    write_now(f, 0, 8 * KiB, 0x44);
    stage(f, 0, 4 * KiB, 0x55, 0);
    sc_assert(!sc_stage_empty(&f->stage));
    sc_assert(!publish(f, 0x55));
    fix_free(f);
}

/* Other writes and write-arounds of a staged page wait for it. */
static void test_others_wait(void)
{
    Fix *f = fix_new();
    uint8_t buf[4096];
    struct iovec iov = { buf, sizeof(buf) };
    SCWriteResult r;

    write_now(f, 0, 8 * KiB, 0x11);
    stage(f, 0, 4 * KiB, 0x22, 0);
    memset(buf, 0x33, sizeof(buf));
    /* a sub-page write would have copied the page on write */
    iov.iov_len = 512;
    r = sc_write(f->c, 512, 512, &iov, 1, 0, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_BLOCKED);
    sc_assert(r.staged);                /* retried in a moment */
    sc_assert(sc_around_begin(f->c, 0, 8 * KiB) == NULL);
    /* nor can a bypass write begin its write-around */
    f->c->opts.bypass_bytes = 512;
    r = sc_write(f->c, 0, 512, &iov, 1, 0, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_BLOCKED);
    sc_assert(r.staged);
    f->c->opts.bypass_bytes = 0;
    /* the next page is not staged: it can be written */
    sc_assert_cmpi(sc_write(f->c, 4 * KiB, 512, &iov, 1, 0, 0, 0).status,
                   ==, SC_WRITE_DONE);
    /* those retry: the publisher has nobody to wake */
    sc_assert(!publish(f, 0x22));
    sc_assert_cmpi(sc_write(f->c, 512, 512, &iov, 1, 0, 0, 0).status, ==,
                   SC_WRITE_DONE);
    assert_cached(f, 0, 512, 0x22);
    assert_cached(f, 512, 512, 0x33);
    assert_cached(f, 1 * KiB, 3 * KiB, 0x22);
    fix_free(f);
}

/*
 * A read of a staged page waits until it is published: its copy would race
 * with the publisher's.  A read of the page beside it goes on, and a read
 * that pins a page keeps it from being staged.
 */
static void test_read_of_staged_page(void)
{
    Fix *f = fix_new();
    uint8_t buf[8192];
    struct iovec iov = { buf, sizeof(buf) };
    SCHits hits;
    GArray *p = g_array_new(FALSE, TRUE, sizeof(SCPiece));

    write_now(f, 0, 8 * KiB, 0x11);
    stage(f, 0, 4 * KiB, 0x22, 0);
    /* refused, with nothing pinned and no piece */
    sc_assert(!sc_read_pinned(f->c, 0, 8 * KiB, 0, 0, &hits, p));
    sc_assert_cmpu(hits.n, ==, 0);
    sc_assert(!sc_read_pinned(f->c, 4095, 2, 0, 0, &hits, p));
    sc_assert(sc_read(f->c, 512, 512, &iov, 1, 0, 0, 0) == NULL);
    check(f);
    /* the next page is not staged: its read goes on */
    sc_assert(sc_read_pinned(f->c, 4 * KiB, 4 * KiB, 0, 0, &hits, p));
    sc_assert_cmpu(p->len, ==, 1);
    sc_hits_copy(&hits, &iov, 1, 0);
    sc_assert_cmpu(buf[0], ==, 0x11);
    sc_hits_done(&hits);
    /* nobody to wake: the refused read retries by itself */
    sc_assert(!publish(f, 0x22));
    sc_assert(sc_read_pinned(f->c, 0, 8 * KiB, 0, 0, &hits, p));
    check(f);
    /* the pinned page is read: a rewrite of it is not staged */
    sc_assert(stage(f, 0, 4 * KiB, 0x33, 0).status == SC_WRITE_DONE);
    sc_assert(sc_stage_empty(&f->stage));
    sc_hits_copy(&hits, &iov, 1, 0);
    sc_assert_cmpu(buf[0], ==, 0x22);
    sc_assert_cmpu(buf[4096], ==, 0x11);
    sc_hits_done(&hits);
    g_array_unref(p);
    assert_cached(f, 0, 4 * KiB, 0x33);
    fix_free(f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/staged/rewrite", test_rewrite_staged);
    g_test_add_func("/staged/not-staged", test_not_staged);
    g_test_add_func("/staged/writeback-waits", test_writeback_waits);
    g_test_add_func("/staged/others-wait", test_others_wait);
    g_test_add_func("/staged/read", test_read_of_staged_page);
    return g_test_run();
}
