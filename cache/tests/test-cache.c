/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Scenario tests of the cache core: each test drives one behaviour the
 * design promises (docs/cache-design.md) through the public API and looks
 * at the jobs, tickets, data and statistics that come out.
 */
#include "sc-internal.h"
#include "sc-test.h"

#include <errno.h>
#include <inttypes.h>

#define KiB SC_KiB
#define MiB SC_MiB
#define MS SC_NS_PER_MS

typedef struct Fix {
    SCCache *c;
    SCOptions o;
    SCGeometry g;
    uint8_t *node;              /* what the nodes hold */
} Fix;

static void fix_opts(Fix *f)
{
    sc_options_init_defaults(&f->o);
    f->o.size = 1 * MiB;
    f->o.max_dirty = 512 * KiB;
    f->o.target_dirty = 256 * KiB;
    f->o.writethrough_until_flush = false;
    f->o.readahead_max_bytes = 0;
    f->o.bypass_bytes = 0;      /* tests of the bypass set it */
    f->g.disk_size = 16 * MiB;
    f->g.stripe_unit = 64 * KiB;
    f->g.node_count = 2;
    f->g.align = 512;
    f->g.max_writeback_per_node = 4;
    f->g.max_fetch_per_node = 2;
}

static void fix_start(Fix *f)
{
    char *err = NULL;
    uint64_t i;

    f->c = sc_cache_new(&f->o, &f->g, &err);
    sc_assert(!(err));
    f->node = g_malloc(f->g.disk_size);
    for (i = 0; i < f->g.disk_size; i++) {
        f->node[i] = (i * 7 + i / 4096) & 0xff;
    }
}

static void fix_check(Fix *f)
{
    char *why = NULL;
    SCStats st;

    if (!sc_cache_check(f->c, &why)) {
        g_error("inconsistent: %s", why);
    }
    sc_cache_get_stats(f->c, &st);
    sc_assert_cmpu(st.memory_bytes, <=, f->c->opts.size);
}

static void fix_end(Fix *f)
{
    fix_check(f);
    sc_cache_free(f->c);
    g_free(f->node);
}

static SCWriteResult wr(Fix *f, uint64_t off, uint64_t len, uint8_t val,
                        unsigned flags, int64_t now)
{
    uint8_t *buf = g_malloc(len);
    struct iovec iov = { buf, len };
    SCWriteResult r;

    memset(buf, val, len);
    r = sc_write(f->c, off, len, &iov, 1, 0, flags, now);
    g_free(buf);
    return r;
}

static GArray *rd(Fix *f, uint64_t off, uint64_t len, uint8_t *buf,
                  unsigned flags)
{
    struct iovec iov = { buf, len };

    return sc_read(f->c, off, len, &iov, 1, 0, flags, 0);
}

static void run_fetch(Fix *f, const SCJob *job, int ret)
{
    uint64_t pos = job->offset;
    int i;

    for (i = 0; i < job->iovcnt; i++) {
        memcpy(job->iov[i].iov_base, f->node + pos, job->iov[i].iov_len);
        pos += job->iov[i].iov_len;
    }
    sc_fetch_done(f->c, job->id, ret, 0);
}

static void run_wb(Fix *f, const SCJob *job, int ret, int64_t now)
{
    uint64_t pos = job->offset;
    int i;

    for (i = 0; ret == 0 && i < job->iovcnt; i++) {
        memcpy(f->node + pos, job->iov[i].iov_base, job->iov[i].iov_len);
        pos += job->iov[i].iov_len;
    }
    sc_writeback_done(f->c, job->id, ret, now);
}

/* Read through the cache, running every fetch at once. */
static void read_all(Fix *f, uint64_t off, uint64_t len, uint8_t *buf)
{
    unsigned flags = 0;
    int rounds;

    for (rounds = 0; rounds < 10; rounds++) {
        GArray *p = rd(f, off, len, buf, flags);
        bool again = false;
        guint i;

        for (i = 0; i < p->len; i++) {
            SCPiece *pc = &g_array_index(p, SCPiece, i);

            if (pc->kind == SC_PIECE_FETCH) {
                run_fetch(f, &pc->job, 0);
            }
            if (pc->kind == SC_PIECE_DIRECT) {
                memcpy(buf + (pc->offset - off), f->node + pc->offset,
                       pc->len);
            }
            again |= pc->kind == SC_PIECE_FETCH ||
                     pc->kind == SC_PIECE_WAIT;
        }
        g_array_unref(p);
        if (!again) {
            return;
        }
        flags = SC_READ_RETRY;
    }
    g_assert_not_reached();
}

static void assert_bytes(const uint8_t *buf, uint64_t len, uint8_t val)
{
    uint64_t i;

    for (i = 0; i < len; i++) {
        if (buf[i] != val) {
            g_error("byte %" PRIu64 " is %u, expected %u", i, buf[i], val);
        }
    }
}

static unsigned drain_wb(Fix *f, int64_t now)
{
    unsigned n = 0;
    SCJob job;

    while (sc_writeback_next(f->c, now, &job)) {
        run_wb(f, &job, 0, now);
        n++;
    }
    return n;
}

static void test_read_miss_then_hit(void)
{
    Fix f;
    uint8_t buf[4096];
    GArray *p;
    SCPiece *pc;
    SCStats st;

    fix_opts(&f);
    fix_start(&f);
    p = rd(&f, 10000, 4096, buf, 0);
    sc_assert_cmpu(p->len, ==, 1);
    pc = &g_array_index(p, SCPiece, 0);
    sc_assert_cmpi(pc->kind, ==, SC_PIECE_FETCH);
    /* expanded to whole pages: [8192, 16384) */
    sc_assert_cmpu(pc->job.offset, ==, 8192);
    sc_assert_cmpu(pc->job.len, ==, 8192);
    sc_assert_cmpu(pc->job.node, ==, 0);
    run_fetch(&f, &pc->job, 0);
    g_array_unref(p);

    p = rd(&f, 10000, 4096, buf, SC_READ_RETRY);
    sc_assert_cmpu(p->len, ==, 1);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_HIT);
    sc_assert_mem(buf, f.node + 10000, 4096);
    g_array_unref(p);

    /* the expansion is cached as well */
    p = rd(&f, 8192, 100, buf, 0);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_HIT);
    g_array_unref(p);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.read_requests, ==, 2);
    sc_assert_cmpu(st.read_miss_requests, ==, 1);
    sc_assert_cmpu(st.read_hit_requests, ==, 1);
    sc_assert_cmpu(st.clean_bytes, ==, 8192);
    fix_end(&f);
}

/* A second reader of bytes being fetched waits instead of fetching. */
static void test_read_waits_for_fetch(void)
{
    Fix f;
    uint8_t buf[4096];
    GArray *p1, *p2;

    fix_opts(&f);
    fix_start(&f);
    p1 = rd(&f, 0, 4096, buf, 0);
    p2 = rd(&f, 0, 4096, buf, 0);
    sc_assert_cmpi(g_array_index(p1, SCPiece, 0).kind, ==, SC_PIECE_FETCH);
    sc_assert_cmpi(g_array_index(p2, SCPiece, 0).kind, ==, SC_PIECE_WAIT);
    run_fetch(&f, &g_array_index(p1, SCPiece, 0).job, 0);
    g_array_unref(p1);
    g_array_unref(p2);
    p2 = rd(&f, 0, 4096, buf, SC_READ_RETRY);
    sc_assert_cmpi(g_array_index(p2, SCPiece, 0).kind, ==, SC_PIECE_HIT);
    g_array_unref(p2);
    fix_end(&f);
}

static void test_write_read_back(void)
{
    Fix f;
    uint8_t buf[8192];
    SCWriteResult r;
    SCStats st;

    fix_opts(&f);
    fix_start(&f);
    r = wr(&f, 1000, 3000, 0xAB, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_DONE);
    sc_assert_cmpi(r.delay_ns, ==, 0);
    read_all(&f, 0, 8192, buf);
    sc_assert_mem(buf, f.node, 1000);
    assert_bytes(buf + 1000, 3000, 0xAB);
    sc_assert_mem(buf + 4000, f.node + 4000, 4192);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.dirty_bytes, ==, 3000);
    fix_end(&f);
}

/* Adjacent dirty data becomes one job; jobs never cross a stripe unit. */
static void test_coalesce_within_stripe_unit(void)
{
    Fix f;
    SCJob j1, j2, j3;

    fix_opts(&f);
    f.o.target_dirty = 0;
    fix_start(&f);
    wr(&f, 8 * KiB, 4 * KiB, 1, 0, 0);
    wr(&f, 12 * KiB, 4 * KiB, 2, 0, 0);
    wr(&f, 16 * KiB, 4 * KiB, 3, 0, 0);
    wr(&f, 60 * KiB, 8 * KiB, 4, 0, 0);
    sc_assert(sc_writeback_next(f.c, 0, &j1));
    sc_assert(sc_writeback_next(f.c, 0, &j2));
    sc_assert(sc_writeback_next(f.c, 0, &j3));
    sc_assert_cmpu(j1.offset, ==, 8 * KiB);
    sc_assert_cmpu(j1.len, ==, 12 * KiB);
    sc_assert_cmpu(j1.node, ==, 0);
    sc_assert_cmpu(j2.offset, ==, 60 * KiB);
    sc_assert_cmpu(j2.len, ==, 4 * KiB);
    sc_assert_cmpu(j3.offset, ==, 64 * KiB);
    sc_assert_cmpu(j3.len, ==, 4 * KiB);
    sc_assert_cmpu(j3.node, ==, 1);
    sc_assert(!(sc_writeback_next(f.c, 0, &j1)));
    sc_assert(sc_range_busy(f.c, 0, 9 * KiB));
    sc_assert(!(sc_range_busy(f.c, 0, 8 * KiB)));
    sc_assert(sc_range_busy(f.c, 67 * KiB, 1));
    fix_end(&f);
}

static void test_per_node_limit(void)
{
    Fix f;
    SCJob a, b;

    fix_opts(&f);
    f.o.target_dirty = 0;
    f.g.max_writeback_per_node = 1;
    fix_start(&f);
    wr(&f, 0, 4 * KiB, 1, 0, 0);            /* node 0 */
    wr(&f, 128 * KiB, 4 * KiB, 2, 0, 0);    /* node 0 too */
    wr(&f, 64 * KiB, 4 * KiB, 3, 0, 0);     /* node 1 */
    sc_assert(sc_writeback_next(f.c, 0, &a));
    sc_assert(sc_writeback_next(f.c, 0, &b));
    sc_assert_cmpu(a.node, !=, b.node);
    sc_assert(!(sc_writeback_next(f.c, 0, &b)));
    run_wb(&f, &a, 0, 0);
    sc_assert(sc_writeback_next(f.c, 0, &a));
    sc_assert_cmpu(a.node, ==, 0);
    fix_end(&f);
}

/* cache-node-jobs overrides the geometry's limit, also on reconfigure. */
static void test_node_jobs_option(void)
{
    Fix f;
    SCJob a, b, c;

    fix_opts(&f);
    f.o.target_dirty = 0;
    f.o.node_jobs = 1;
    fix_start(&f);
    wr(&f, 0, 4 * KiB, 1, 0, 0);            /* node 0 */
    wr(&f, 128 * KiB, 4 * KiB, 2, 0, 0);    /* node 0 */
    wr(&f, 256 * KiB, 4 * KiB, 3, 0, 0);    /* node 0 */
    sc_assert(sc_writeback_next(f.c, 0, &a));
    sc_assert(!(sc_writeback_next(f.c, 0, &b)));
    f.o.node_jobs = 3;
    sc_assert(sc_cache_reconfigure(f.c, &f.o, NULL));
    sc_assert(sc_writeback_next(f.c, 0, &b));
    sc_assert(sc_writeback_next(f.c, 0, &c));
    sc_assert_cmpu(a.node + b.node + c.node, ==, 0);
    run_wb(&f, &a, 0, 0);
    run_wb(&f, &b, 0, 0);
    run_wb(&f, &c, 0, 0);
    f.o.node_jobs = 1025;
    sc_assert(!sc_cache_reconfigure(f.c, &f.o, NULL));
    fix_end(&f);
}

/*
 * cache-bypass-bytes: a write that large goes around the cache, dropping
 * the cached copy of its range; a smaller one is absorbed.
 */
static void test_bypass_write(void)
{
    Fix f;
    SCWriteResult r;
    uint8_t buf[4096];
    GArray *p;
    SCStats st;

    fix_opts(&f);
    f.o.bypass_bytes = 128 * KiB;
    f.o.target_dirty = 0;       /* drain_wb() writes everything back */
    fix_start(&f);
    r = wr(&f, 0, 64 * KiB, 1, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_DONE);
    r = wr(&f, 32 * KiB, 128 * KiB, 2, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_BYPASS);
    /* the writeback of what it replaced must not land after it */
    sc_assert(sc_around_ready(f.c, r.around));
    memset(f.node + 32 * KiB, 2, 128 * KiB);
    sc_around_end(f.c, r.around, 0);
    /* the first 32 KiB stay dirty; the rest comes from the node */
    p = rd(&f, 0, 4096, buf, 0);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_HIT);
    assert_bytes(buf, 4096, 1);
    g_array_unref(p);
    read_all(&f, 60 * KiB, 4096, buf);
    assert_bytes(buf, 4096, 2);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.write_bypass_requests, ==, 1);
    drain_wb(&f, 0);
    sc_assert_cmpu(f.node[0], ==, 1);
    sc_assert_cmpu(f.node[40 * KiB], ==, 2);
    fix_end(&f);
}

/*
 * A read of at least cache-bypass-bytes reads what is not cached around
 * the cache, as one DIRECT piece per run (not one per stripe unit), still
 * serves cached bytes, fetches nothing and starts no readahead.
 */
static void test_bypass_read(void)
{
    Fix f;
    uint8_t *buf = g_malloc(512 * KiB);
    GArray *p;
    SCPiece *pc;
    SCStats st;
    int i;

    fix_opts(&f);
    f.o.bypass_bytes = 256 * KiB;
    f.o.readahead_max_bytes = 256 * KiB;
    f.o.readahead_trigger_requests = 2;
    fix_start(&f);
    wr(&f, 128 * KiB, 4 * KiB, 9, 0, 0);    /* dirty in the middle */
    for (i = 0; i < 4; i++) {
        p = rd(&f, 512 * KiB * i, 512 * KiB, buf, 0);
        if (i == 0) {
            /* direct [0, 128K), hit [128K, 132K), direct to 512K */
            sc_assert_cmpu(p->len, ==, 3);
            pc = &g_array_index(p, SCPiece, 0);
            sc_assert_cmpi(pc->kind, ==, SC_PIECE_DIRECT);
            sc_assert_cmpu(pc->len, ==, 128 * KiB);
            pc = &g_array_index(p, SCPiece, 1);
            sc_assert_cmpi(pc->kind, ==, SC_PIECE_HIT);
            assert_bytes(buf + 128 * KiB, 4 * KiB, 9);
            pc = &g_array_index(p, SCPiece, 2);
            sc_assert_cmpi(pc->kind, ==, SC_PIECE_DIRECT);
            sc_assert_cmpu(pc->offset, ==, 132 * KiB);
            sc_assert_cmpu(pc->len, ==, 380 * KiB);
        } else {
            sc_assert_cmpu(p->len, ==, 1);
            sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==,
                           SC_PIECE_DIRECT);
        }
        g_array_unref(p);
    }
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.read_bypass_requests, ==, 4);
    sc_assert_cmpu(st.readahead_issued_bytes, ==, 0);
    sc_assert_cmpu(st.clean_bytes, ==, 0);
    /* smaller reads still fetch */
    p = rd(&f, 0, 4096, buf, 0);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_FETCH);
    run_fetch(&f, &g_array_index(p, SCPiece, 0).job, 0);
    g_array_unref(p);
    drain_wb(&f, 0);
    g_free(buf);
    fix_end(&f);
}

/*
 * Overwriting data under writeback: the job's buffer is left alone, the
 * new data is not written until the job is done, and it reaches the node
 * last.  A flush begun before the overwrite only waits for the job.
 */
static void test_overwrite_under_writeback(void)
{
    Fix f;
    SCJob j1, j2;
    SCFlush *before, *after;
    uint8_t buf[4096];

    fix_opts(&f);
    f.o.target_dirty = 0;
    fix_start(&f);
    wr(&f, 0, 4096, 0xA1, 0, 0);
    sc_assert(sc_writeback_next(f.c, 0, &j1));
    before = sc_flush_begin(f.c, true);
    wr(&f, 0, 4096, 0xB2, 0, 0);
    after = sc_flush_begin(f.c, true);
    /* the job still sends the old data */
    assert_bytes(j1.iov[0].iov_base, 4096, 0xA1);
    read_all(&f, 0, 4096, buf);
    assert_bytes(buf, 4096, 0xB2);
    /* no second job for the same bytes while j1 is in flight */
    sc_assert(!(sc_writeback_next(f.c, 0, &j2)));
    sc_assert_cmpi(sc_flush_status(f.c, before), ==, 1);
    run_wb(&f, &j1, 0, 0);
    sc_assert_cmpi(sc_flush_status(f.c, before), ==, 0);
    sc_assert_cmpi(sc_flush_status(f.c, after), ==, 1);
    sc_assert(sc_writeback_next(f.c, 0, &j2));
    assert_bytes(j2.iov[0].iov_base, 4096, 0xB2);
    run_wb(&f, &j2, 0, 0);
    sc_assert_cmpi(sc_flush_status(f.c, after), ==, 0);
    assert_bytes(f.node, 4096, 0xB2);
    sc_flush_release(f.c, before);
    sc_flush_release(f.c, after);
    fix_end(&f);
}

/* Writes during a flush do not delay it, even to the same bytes. */
static void test_flush_not_starved(void)
{
    Fix f;
    SCFlush *fl;
    SCJob j;
    int i;

    fix_opts(&f);
    fix_start(&f);
    wr(&f, 0, 4096, 1, 0, 0);
    fl = sc_flush_begin(f.c, true);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 1);
    for (i = 0; i < 5; i++) {
        sc_assert(sc_writeback_next(f.c, 0, &j));
        /* the guest keeps rewriting the block and writing elsewhere */
        wr(&f, 0, 4096, 2 + i, 0, 0);
        wr(&f, 1 * MiB + i * 4096, 4096, 9, 0, 0);
        run_wb(&f, &j, 0, 0);
        if (sc_flush_status(f.c, fl) == 0) {
            break;
        }
    }
    sc_assert_cmpi(i, ==, 0);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 0);
    sc_flush_release(f.c, fl);
    fix_end(&f);
}

/* A flush on a clean cache is done at once. */
static void test_flush_clean(void)
{
    Fix f;
    SCFlush *fl;

    fix_opts(&f);
    fix_start(&f);
    fl = sc_flush_begin(f.c, false);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 0);
    sc_flush_release(f.c, fl);
    fix_end(&f);
}

/*
 * A failed writeback keeps its data dirty, fails the flush waiting for it,
 * and is retried at once for the next flush despite the node's backoff.
 */
static void test_writeback_error_to_flush(void)
{
    Fix f;
    SCFlush *f1, *f2;
    SCJob j;
    SCStats st;
    uint8_t buf[4096];

    fix_opts(&f);
    fix_start(&f);
    wr(&f, 4096, 4096, 0x33, 0, 0);
    f1 = sc_flush_begin(f.c, true);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    run_wb(&f, &j, -EIO, 0);
    sc_assert_cmpi(sc_flush_status(f.c, f1), ==, -EIO);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.dirty_bytes, ==, 4096);
    sc_assert_cmpu(st.writeback_errors, ==, 1);
    sc_assert_cmpu(st.flush_errors, ==, 1);
    read_all(&f, 4096, 4096, buf);
    assert_bytes(buf, 4096, 0x33);
    /* the error was taken by f1: not sticky */
    f2 = sc_flush_begin(f.c, true);
    sc_assert_cmpi(sc_flush_status(f.c, f2), ==, 1);
    sc_assert(sc_writeback_next(f.c, 1, &j));
    run_wb(&f, &j, 0, 1);
    sc_assert_cmpi(sc_flush_status(f.c, f2), ==, 0);
    assert_bytes(f.node + 4096, 4096, 0x33);
    sc_flush_release(f.c, f1);
    sc_flush_release(f.c, f2);
    fix_end(&f);
}

/* With nobody waiting, the error sticks until the next flush. */
static void test_sticky_error_and_backoff(void)
{
    Fix f;
    SCFlush *f1, *f2;
    SCJob j;
    int64_t t;

    fix_opts(&f);
    f.o.target_dirty = 0;
    fix_start(&f);
    wr(&f, 0, 4096, 1, 0, 0);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    run_wb(&f, &j, -EIO, 0);
    /* background writeback backs off on that node */
    sc_assert(!(sc_writeback_next(f.c, 0, &j)));
    t = sc_next_deadline(f.c, 0);
    sc_assert_cmpi(t, ==, SC_BACKOFF_MIN_NS);
    sc_assert(sc_writeback_next(f.c, t, &j));
    run_wb(&f, &j, -EIO, t);
    /* the backoff doubles */
    sc_assert_cmpi(sc_next_deadline(f.c, t), ==, t + 2 * SC_BACKOFF_MIN_NS);
    f1 = sc_flush_begin(f.c, true);
    sc_assert_cmpi(sc_flush_status(f.c, f1), ==, -EIO);
    f2 = sc_flush_begin(f.c, true);
    sc_assert_cmpi(sc_flush_status(f.c, f2), ==, 1);
    drain_wb(&f, t);
    sc_assert_cmpi(sc_flush_status(f.c, f2), ==, 0);
    sc_flush_release(f.c, f1);
    sc_flush_release(f.c, f2);
    fix_end(&f);
}

/*
 * Failure of a job whose bytes were overwritten: the newer data inherits
 * the obligation, so the flush begun before the overwrite still waits.
 */
static void test_failed_job_overwritten(void)
{
    Fix f;
    SCFlush *fl;
    SCJob j;

    fix_opts(&f);
    fix_start(&f);
    wr(&f, 0, 4096, 1, 0, 0);
    fl = sc_flush_begin(f.c, true);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    wr(&f, 0, 4096, 2, 0, 0);
    run_wb(&f, &j, -EIO, 0);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, -EIO);
    sc_flush_release(f.c, fl);
    fl = sc_flush_begin(f.c, true);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 1);
    sc_assert_cmpu(drain_wb(&f, 0), ==, 1);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 0);
    assert_bytes(f.node, 4096, 2);
    sc_flush_release(f.c, fl);
    fix_end(&f);
}

static void test_age_writeback(void)
{
    Fix f;
    SCJob j;

    fix_opts(&f);
    f.o.max_dirty_age_ns = 1000 * MS;
    fix_start(&f);
    wr(&f, 0, 4096, 1, 0, 5 * MS);
    wr(&f, 64 * KiB, 4096, 1, 0, 300 * MS);
    sc_assert(!(sc_writeback_next(f.c, 6 * MS, &j)));
    sc_assert_cmpi(sc_next_deadline(f.c, 6 * MS), ==, 1005 * MS);
    sc_assert(sc_writeback_next(f.c, 1005 * MS, &j));
    sc_assert_cmpu(j.offset, ==, 0);
    sc_assert(!(sc_writeback_next(f.c, 1005 * MS, &j)));
    sc_assert_cmpi(sc_next_deadline(f.c, 1005 * MS), ==, 1300 * MS);
    /* rewriting does not make data younger: first-dirtied time counts */
    wr(&f, 64 * KiB, 4096, 2, 0, 1200 * MS);
    sc_assert(sc_writeback_next(f.c, 1300 * MS, &j));
    sc_assert_cmpu(j.offset, ==, 64 * KiB);
    fix_end(&f);
}

/*
 * A segment that writes leave dirty from end to end goes to its node at
 * once, in whatever order it filled, with no pressure and long before
 * max-dirty-age: nothing more could join its job.  A partly dirty one
 * waits, and so does a whole segment rewritten while its job was in
 * flight or within max-dirty-age of it (the flush or the age sends it):
 * eager writeback follows writers that move on, not ones that stay.
 */
static void test_whole_segment(void)
{
    Fix f;
    SCJob j, k;
    uint64_t off;

    fix_opts(&f);
    f.o.max_dirty_age_ns = 100 * MS;
    fix_start(&f);

    for (off = 0; off < 60 * KiB; off += 4 * KiB) {
        wr(&f, off, 4 * KiB, 1, 0, 0);
        sc_assert(!(sc_writeback_next(f.c, 0, &j)));
    }
    sc_assert_cmpi(sc_next_deadline(f.c, 0), ==, 100 * MS);
    wr(&f, 60 * KiB, 4 * KiB, 1, 0, 0);
    sc_assert_cmpi(sc_next_deadline(f.c, 7), ==, 7);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    sc_assert_cmpu(j.offset, ==, 0);
    sc_assert_cmpu(j.len, ==, 64 * KiB);
    sc_assert_cmpu(j.node, ==, 0);
    sc_assert(!(sc_writeback_next(f.c, 0, &k)));
    run_wb(&f, &j, 0, 0);
    assert_bytes(f.node, 64 * KiB, 1);

    /* backwards, on the other node */
    for (off = 124 * KiB; off >= 64 * KiB; off -= 4 * KiB) {
        sc_assert(!(sc_writeback_next(f.c, 0, &j)));
        wr(&f, off, 4 * KiB, 2, 0, 0);
    }
    sc_assert(sc_writeback_next(f.c, 0, &j));
    sc_assert_cmpu(j.offset, ==, 64 * KiB);
    sc_assert_cmpu(j.len, ==, 64 * KiB);
    sc_assert_cmpu(j.node, ==, 1);
    run_wb(&f, &j, 0, 0);

    /* a rewrite of part of a clean segment waits */
    wr(&f, 0, 4 * KiB, 3, 0, 0);
    sc_assert(!(sc_writeback_next(f.c, 0, &j)));

    /* rewritten whole while its job is in flight: only the first goes */
    wr(&f, 256 * KiB, 64 * KiB, 4, 0, 0);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    sc_assert_cmpu(j.offset, ==, 256 * KiB);
    wr(&f, 256 * KiB, 64 * KiB, 5, 0, 0);
    sc_assert(!(sc_writeback_next(f.c, 0, &k)));
    run_wb(&f, &j, 0, 0);
    sc_assert(!(sc_writeback_next(f.c, 0, &k)));
    assert_bytes(f.node + 256 * KiB, 64 * KiB, 4);

    /* a queued segment dropped before its job leaves the queue */
    wr(&f, 512 * KiB, 64 * KiB, 6, 0, 0);
    sc_range_drop(f.c, 512 * KiB, 4 * KiB);
    sc_assert(!(sc_writeback_next(f.c, 0, &j)));
    sc_assert_cmpu(g_queue_get_length(&f.c->wb.full), ==, 0);

    /* sent whole: rewritten whole within max-dirty-age, it stays */
    wr(&f, 384 * KiB, 64 * KiB, 7, 0, 0);
    wr(&f, 448 * KiB, 64 * KiB, 7, 0, 0);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    sc_assert(sc_writeback_next(f.c, 0, &k));
    sc_assert_cmpu(j.offset, ==, 384 * KiB);
    sc_assert_cmpu(k.offset, ==, 448 * KiB);
    run_wb(&f, &j, 0, 0);
    run_wb(&f, &k, 0, 0);
    wr(&f, 448 * KiB, 64 * KiB, 8, 0, 50 * MS);
    sc_assert(!(sc_writeback_next(f.c, 50 * MS, &j)));
    /* after it, it goes again, ahead of the data that aged meanwhile */
    wr(&f, 384 * KiB, 64 * KiB, 9, 0, 120 * MS);
    sc_assert(sc_writeback_next(f.c, 120 * MS, &j));
    sc_assert_cmpu(j.offset, ==, 384 * KiB);
    run_wb(&f, &j, 0, 120 * MS);

    /* the age sends the rest */
    sc_assert_cmpu(drain_wb(&f, 1000 * MS), ==, 4);
    assert_bytes(f.node, 4 * KiB, 3);
    assert_bytes(f.node + 256 * KiB, 64 * KiB, 5);
    assert_bytes(f.node + 384 * KiB, 64 * KiB, 9);
    assert_bytes(f.node + 448 * KiB, 64 * KiB, 8);
    assert_bytes(f.node + 516 * KiB, 60 * KiB, 6);
    fix_end(&f);
}

/*
 * The memory of segments sent whole stays bounded however fast a writer
 * moves: past SC_RECENT_MAX those older than max-dirty-age are forgotten,
 * and if all are younger, all are.
 */
static void test_whole_segment_memory(void)
{
    Fix f;
    SCJob j;
    uint64_t i;

    fix_opts(&f);
    f.o.max_dirty_age_ns = 100 * MS;
    f.g.stripe_unit = 4 * KiB;
    f.g.disk_size = 32 * MiB;
    fix_start(&f);
    for (i = 0; i < 2 * SC_RECENT_MAX; i++) {
        int64_t now = i < SC_RECENT_MAX / 2 ? 0 : 200 * MS;

        wr(&f, i * 4 * KiB, 4 * KiB, 1, 0, now);
        sc_assert(sc_writeback_next(f.c, now, &j));
        sc_assert_cmpu(j.offset, ==, i * 4 * KiB);
        run_wb(&f, &j, 0, now);
        sc_assert_cmpu(g_hash_table_size(f.c->wb.recent), <=, SC_RECENT_MAX);
        if (i == SC_RECENT_MAX) {
            /* the first half (sent at 0) expired and was forgotten */
            sc_assert_cmpu(g_hash_table_size(f.c->wb.recent), ==,
                           SC_RECENT_MAX / 2 + 1);
        }
    }
    /* all young at the next prune (at 6144): all were forgotten */
    sc_assert_cmpu(g_hash_table_size(f.c->wb.recent), ==, SC_RECENT_MAX / 2);
    wr(&f, 5000 * 4 * KiB, 4 * KiB, 2, 0, 250 * MS);
    sc_assert(sc_writeback_next(f.c, 250 * MS, &j));
    sc_assert_cmpu(j.offset, ==, 5000 * 4 * KiB);
    run_wb(&f, &j, 0, 250 * MS);
    /* one sent after it is remembered */
    wr(&f, 7000 * 4 * KiB, 4 * KiB, 2, 0, 250 * MS);
    sc_assert(!(sc_writeback_next(f.c, 250 * MS, &j)));
    fix_end(&f);
}

static void test_writethrough_until_flush(void)
{
    Fix f;
    SCWriteResult r;
    SCFlush *fl;
    SCJob j;

    fix_opts(&f);
    f.o.writethrough_until_flush = true;
    fix_start(&f);
    r = wr(&f, 0, 4096, 1, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_THROUGH);
    sc_assert(r.wait);
    sc_assert_cmpi(sc_flush_status(f.c, r.wait), ==, 1);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    sc_assert(!(j.fua));
    run_wb(&f, &j, 0, 0);
    sc_assert_cmpi(sc_flush_status(f.c, r.wait), ==, 0);
    sc_flush_release(f.c, r.wait);

    /* an internal flush does not prove that the guest flushes */
    fl = sc_flush_begin(f.c, false);
    sc_flush_release(f.c, fl);
    r = wr(&f, 0, 4096, 2, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_THROUGH);
    drain_wb(&f, 0);
    sc_flush_release(f.c, r.wait);

    fl = sc_flush_begin(f.c, true);
    sc_flush_release(f.c, fl);
    r = wr(&f, 0, 4096, 3, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_DONE);
    fix_end(&f);
}

static void test_fua(void)
{
    Fix f;
    SCWriteResult r;
    SCJob j;

    fix_opts(&f);
    f.o.target_dirty = 0;
    fix_start(&f);
    wr(&f, 0, 4096, 1, 0, 0);
    r = wr(&f, 64 * KiB, 4096, 2, SC_WRITE_FUA, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_THROUGH);
    /* the write-through data goes first, with FUA */
    sc_assert(sc_writeback_next(f.c, 0, &j));
    sc_assert_cmpu(j.offset, ==, 64 * KiB);
    sc_assert(j.fua);
    run_wb(&f, &j, 0, 0);
    sc_assert_cmpi(sc_flush_status(f.c, r.wait), ==, 0);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    sc_assert(!(j.fua));
    sc_flush_release(f.c, r.wait);
    fix_end(&f);
}

static void test_max_dirty_pacing(void)
{
    Fix f;
    SCWriteResult r;
    SCStats st;
    int64_t prev = 0;
    uint64_t off;
    bool blocked = false, delayed = false;
    SCJob j;

    fix_opts(&f);
    f.o.max_dirty = 128 * KiB;
    f.o.target_dirty = 64 * KiB;
    f.o.max_dirty_age_ns = 3600 * SC_NS_PER_SEC;
    fix_start(&f);
    for (off = 0; off < 256 * KiB; off += 4 * KiB) {
        r = wr(&f, off, 4 * KiB, 1, 0, 0);
        sc_cache_get_stats(f.c, &st);
        sc_assert_cmpu(st.dirty_bytes, <=, 128 * KiB);
        if (r.status == SC_WRITE_BLOCKED) {
            blocked = true;
            break;
        }
        sc_assert_cmpi(r.status, ==, SC_WRITE_DONE);
        if (st.dirty_bytes <= 64 * KiB) {
            sc_assert_cmpi(r.delay_ns, ==, 0);
        } else {
            /* smooth: grows with the dirty level */
            sc_assert_cmpi(r.delay_ns, >, prev);
            delayed = true;
        }
        prev = r.delay_ns;
    }
    sc_assert(delayed);
    sc_assert(blocked);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.write_blocked_count, ==, 1);
    sc_assert_cmpu(st.write_throttle_ns, >, 0);
    /* a refused writer puts writeback under pressure */
    sc_assert(sc_writeback_next(f.c, 0, &j));
    run_wb(&f, &j, 0, 0);
    r = wr(&f, off, 4 * KiB, 1, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_DONE);
    fix_end(&f);
}

/* Pacing follows the measured writeback bandwidth. */
static void test_pacing_bandwidth(void)
{
    Fix f;
    SCWriteResult r;
    int64_t slow_delay, fast_delay, t = 0;
    SCJob j;
    int i;

    fix_opts(&f);
    f.o.max_dirty = 256 * KiB;
    f.o.target_dirty = 0;
    fix_start(&f);
    /* 64 KiB per 100 ms: 640 KiB/s */
    for (i = 0; i < 4; i++) {
        wr(&f, i * 64 * KiB, 64 * KiB, 1, 0, t);
        sc_assert(sc_writeback_next(f.c, t, &j));
        t += 100 * MS;
        run_wb(&f, &j, 0, t);
    }
    wr(&f, 0, 96 * KiB, 2, 0, t);
    r = wr(&f, 1 * MiB, 4 * KiB, 2, 0, t);
    slow_delay = r.delay_ns;
    drain_wb(&f, t);
    /* now 64 KiB per 1 ms */
    for (i = 0; i < 300; i++) {
        wr(&f, (i % 4) * 64 * KiB, 64 * KiB, 1, 0, t);
        sc_assert(sc_writeback_next(f.c, t, &j));
        t += MS;
        run_wb(&f, &j, 0, t);
    }
    wr(&f, 0, 96 * KiB, 2, 0, t);
    r = wr(&f, 1 * MiB, 4 * KiB, 2, 0, t);
    fast_delay = r.delay_ns;
    sc_assert_cmpi(slow_delay, >, 0);
    sc_assert_cmpi(fast_delay, >, 0);
    sc_assert_cmpi(slow_delay, >, 20 * fast_delay);
    fix_end(&f);
}

static void test_bypass(void)
{
    Fix f;
    SCWriteResult r;
    uint8_t buf[4096];
    GArray *p;

    fix_opts(&f);
    fix_start(&f);
    read_all(&f, 100 * KiB, 4096, buf);
    r = wr(&f, 0, 600 * KiB, 1, 0, 0);      /* > max-dirty */
    sc_assert_cmpi(r.status, ==, SC_WRITE_BYPASS);
    sc_assert(sc_around_ready(f.c, r.around));
    sc_around_end(f.c, r.around, 0);
    /* the cached copy inside is gone */
    p = rd(&f, 100 * KiB, 4096, buf, 0);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_FETCH);
    run_fetch(&f, &g_array_index(p, SCPiece, 0).job, 0);
    g_array_unref(p);
    /* write-through requests only bypass when larger than the cache */
    f.o.max_dirty = 0;
    f.o.target_dirty = 0;
    sc_assert(sc_cache_reconfigure(f.c, &f.o, NULL));
    r = wr(&f, 0, 600 * KiB, 1, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_THROUGH);
    drain_wb(&f, 0);
    sc_assert_cmpi(sc_flush_status(f.c, r.wait), ==, 0);
    sc_flush_release(f.c, r.wait);
    r = wr(&f, 0, 2 * MiB, 1, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_BYPASS);
    sc_around_end(f.c, r.around, 0);
    fix_end(&f);
}

/* A fetch never makes stale node data clean. */
static void test_fetch_loses_to_write_and_invalidate(void)
{
    SCAround *a;
    Fix f;
    uint8_t buf[16384];
    GArray *p;
    SCJob job;

    fix_opts(&f);
    fix_start(&f);
    p = rd(&f, 0, 16384, buf, 0);
    job = g_array_index(p, SCPiece, 0).job;
    g_array_unref(p);
    wr(&f, 4096, 100, 0xEE, 0, 0);          /* write during the fetch */
    a = sc_around_begin(f.c, 8192, 4096);   /* discard during the fetch */
    memset(f.node + 8192, 0, 4096);         /* ... which the node did */
    run_fetch(&f, &job, 0);
    sc_around_end(f.c, a, 0);
    read_all(&f, 0, 16384, buf);
    sc_assert_mem(buf, f.node, 4096);
    assert_bytes(buf + 4096, 100, 0xEE);
    sc_assert_mem(buf + 4196, f.node + 4196, 12188);
    fix_end(&f);
}

static void test_failed_fetch(void)
{
    Fix f;
    uint8_t buf[4096];
    GArray *p;

    fix_opts(&f);
    fix_start(&f);
    p = rd(&f, 0, 4096, buf, 0);
    run_fetch(&f, &g_array_index(p, SCPiece, 0).job, -EIO);
    g_array_unref(p);
    p = rd(&f, 0, 4096, buf, SC_READ_RETRY);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_FETCH);
    run_fetch(&f, &g_array_index(p, SCPiece, 0).job, 0);
    g_array_unref(p);
    fix_end(&f);
}

/* Write-around of data under writeback: sent only once the job is done. */
static void test_around_waits_for_writeback(void)
{
    Fix f;
    SCFlush *fl;
    SCAround *a;
    SCJob j;
    SCStats st;

    fix_opts(&f);
    fix_start(&f);
    wr(&f, 0, 8192, 1, 0, 0);
    fl = sc_flush_begin(f.c, true);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    a = sc_around_begin(f.c, 0, 8192);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.extents, ==, 0);
    sc_assert_cmpu(st.dirty_bytes, ==, 8192);   /* still in flight */
    sc_assert(!sc_around_ready(f.c, a));
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 1);
    run_wb(&f, &j, 0, 0);
    sc_assert(sc_around_ready(f.c, a));
    /* the dropped data is superseded only when the write-around lands */
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 1);
    sc_around_end(f.c, a, 0);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 0);
    sc_flush_release(f.c, fl);
    fix_end(&f);
}

/*
 * A discard of dirty data: a flush that wanted the data completes only
 * once the discard is on the nodes (before, a crash would leave the data
 * from before the dirty write), and fails if the discard fails.  The
 * failure is the discard's own: it is not kept for a later flush.
 */
static void test_around_flush_obligation(void)
{
    Fix f;
    SCFlush *fl, *later, *after;
    SCAround *a;

    fix_opts(&f);
    fix_start(&f);
    wr(&f, 0, 8192, 1, 0, 0);
    fl = sc_flush_begin(f.c, true);
    a = sc_around_begin(f.c, 0, 8192);
    later = sc_flush_begin(f.c, true);
    sc_assert(sc_around_ready(f.c, a));
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 1);
    sc_assert_cmpi(sc_flush_status(f.c, later), ==, 1);
    sc_around_end(f.c, a, 0);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 0);
    sc_assert_cmpi(sc_flush_status(f.c, later), ==, 0);
    sc_flush_release(f.c, fl);
    sc_flush_release(f.c, later);

    wr(&f, 0, 8192, 2, 0, 0);
    fl = sc_flush_begin(f.c, true);
    a = sc_around_begin(f.c, 4096, 8192);
    sc_around_end(f.c, a, -EIO);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, -EIO);
    sc_flush_release(f.c, fl);
    /* [0, 4096) is still dirty; the failure is not sticky */
    after = sc_flush_begin(f.c, true);
    sc_assert_cmpi(sc_flush_status(f.c, after), ==, 1);
    drain_wb(&f, 0);
    sc_assert_cmpi(sc_flush_status(f.c, after), ==, 0);
    sc_flush_release(f.c, after);
    /* a write-around over clean data is no obligation */
    fl = sc_flush_begin(f.c, true);
    a = sc_around_begin(f.c, 0, 4096);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 0);
    sc_around_end(f.c, a, -EIO);
    sc_flush_release(f.c, fl);
    fix_end(&f);
}

/* While a write-around is in flight, readers wait and writers block. */
static void test_around_blocks_readers_and_writers(void)
{
    Fix f;
    uint8_t buf[16384];
    SCWriteResult r;
    SCAround *a;
    GArray *p;
    SCPiece *pc;

    fix_opts(&f);
    fix_start(&f);
    wr(&f, 8192, 4096, 7, 0, 0);
    a = sc_around_begin(f.c, 8192, 4096);
    p = rd(&f, 0, 16384, buf, 0);
    sc_assert_cmpu(p->len, ==, 3);
    pc = &g_array_index(p, SCPiece, 0);
    sc_assert_cmpi(pc->kind, ==, SC_PIECE_FETCH);
    /* the fetch job may span the page, it claims none of the range */
    sc_assert_cmpu(pc->job.offset + pc->job.len, <=, 8192);
    pc = &g_array_index(p, SCPiece, 1);
    sc_assert_cmpi(pc->kind, ==, SC_PIECE_WAIT);
    sc_assert_cmpu(pc->offset, ==, 8192);
    sc_assert_cmpu(pc->len, ==, 4096);
    sc_assert_cmpi(g_array_index(p, SCPiece, 2).kind, ==, SC_PIECE_FETCH);
    run_fetch(&f, &g_array_index(p, SCPiece, 0).job, 0);
    run_fetch(&f, &g_array_index(p, SCPiece, 2).job, 0);
    g_array_unref(p);
    r = wr(&f, 10000, 100, 9, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_BLOCKED);
    r = wr(&f, 12288, 100, 9, 0, 0);        /* next to it: fine */
    sc_assert_cmpi(r.status, ==, SC_WRITE_DONE);
    sc_assert_cmpi(sc_block_status(f.c, 8000, 100, &(uint64_t){0}), ==,
                   SC_STATUS_NODES);
    memset(f.node + 8192, 0, 4096);
    sc_around_end(f.c, a, 0);
    read_all(&f, 8192, 4096, buf);
    assert_bytes(buf, 4096, 0);
    r = wr(&f, 10000, 100, 9, 0, 0);
    sc_assert_cmpi(r.status, ==, SC_WRITE_DONE);
    fix_end(&f);
}

/*
 * Block status: dirty, under writeback, fetching and written-around bytes
 * are data; clean and absent bytes are the nodes' to answer.
 */
static void test_block_status(void)
{
    Fix f;
    uint8_t buf[4096];
    uint64_t n;
    SCAround *a;
    GArray *p;
    SCJob j;

    fix_opts(&f);
    f.o.target_dirty = 0;
    fix_start(&f);
    sc_assert_cmpi(sc_block_status(f.c, 0, 16 * MiB, &n), ==,
                   SC_STATUS_NODES);
    sc_assert_cmpu(n, ==, 16 * MiB);
    wr(&f, 4096, 100, 1, 0, 0);
    sc_assert_cmpi(sc_block_status(f.c, 0, 1 * MiB, &n), ==,
                   SC_STATUS_NODES);
    sc_assert_cmpu(n, ==, 4096);
    sc_assert_cmpi(sc_block_status(f.c, 4096, 1 * MiB, &n), ==,
                   SC_STATUS_DATA);
    sc_assert_cmpu(n, ==, 100);
    sc_assert_cmpi(sc_block_status(f.c, 4196, 1 * MiB, &n), ==,
                   SC_STATUS_NODES);
    sc_assert_cmpu(n, ==, 1 * MiB);
    /* under writeback, then overwritten, then clean */
    sc_assert(sc_writeback_next(f.c, 0, &j));
    sc_assert_cmpi(sc_block_status(f.c, 4096, 100, &n), ==, SC_STATUS_DATA);
    a = sc_around_begin(f.c, 4096, 50);     /* a discard drops half */
    sc_assert_cmpi(sc_block_status(f.c, 4096, 1000, &n), ==,
                   SC_STATUS_DATA);
    sc_assert_cmpu(n, ==, 100);             /* around, then the job */
    run_wb(&f, &j, 0, 0);
    sc_assert_cmpi(sc_block_status(f.c, 4096, 1000, &n), ==,
                   SC_STATUS_DATA);
    sc_assert_cmpu(n, ==, 50);
    sc_around_end(f.c, a, 0);
    sc_assert_cmpi(sc_block_status(f.c, 4096, 1000, &n), ==,
                   SC_STATUS_NODES);
    sc_assert_cmpu(n, ==, 1000);
    /* a fetch in flight */
    p = rd(&f, 64 * KiB, 4096, buf, 0);
    sc_assert_cmpi(sc_block_status(f.c, 60 * KiB, 1 * MiB, &n), ==,
                   SC_STATUS_NODES);
    sc_assert_cmpu(n, ==, 4096);
    sc_assert_cmpi(sc_block_status(f.c, 64 * KiB, 1 * MiB, &n), ==,
                   SC_STATUS_DATA);
    sc_assert_cmpu(n, ==, 4096);
    run_fetch(&f, &g_array_index(p, SCPiece, 0).job, 0);
    g_array_unref(p);
    sc_assert_cmpi(sc_block_status(f.c, 0, 16 * MiB, &n), ==,
                   SC_STATUS_NODES);
    sc_assert_cmpu(n, ==, 16 * MiB);
    fix_end(&f);
}

/*
 * An internal flush (resize, reopen, close) never takes the error that the
 * guest's next flush must see; it fails only for what it waits for.
 */
static void test_sticky_error_internal_flush(void)
{
    Fix f;
    SCFlush *fi, *fg;
    SCJob j;
    int err = 0;

    fix_opts(&f);
    f.o.target_dirty = 0;
    fix_start(&f);
    sc_assert_cmpu(sc_writeback_failures(f.c, &err), ==, 0);
    wr(&f, 0, 4096, 1, 0, 0);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    run_wb(&f, &j, -EIO, 0);
    sc_assert_cmpu(sc_writeback_failures(f.c, &err), ==, 1);
    sc_assert_cmpi(err, ==, -EIO);
    drain_wb(&f, SC_BACKOFF_MAX_NS);
    fi = sc_flush_begin(f.c, false);
    sc_assert_cmpi(sc_flush_status(f.c, fi), ==, 0);
    fg = sc_flush_begin(f.c, true);
    sc_assert_cmpi(sc_flush_status(f.c, fg), ==, -EIO);
    sc_flush_release(f.c, fi);
    sc_flush_release(f.c, fg);
    /* taken only by an internal flush: the guest still gets it */
    wr(&f, 0, 4096, 2, 0, 0);
    fi = sc_flush_begin(f.c, false);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    run_wb(&f, &j, -EIO, 0);
    sc_assert_cmpi(sc_flush_status(f.c, fi), ==, -EIO);
    drain_wb(&f, 2 * SC_BACKOFF_MAX_NS);
    fg = sc_flush_begin(f.c, true);
    sc_assert_cmpi(sc_flush_status(f.c, fg), ==, -EIO);
    sc_flush_release(f.c, fi);
    sc_flush_release(f.c, fg);
    fix_end(&f);
}

static void test_drop(void)
{
    Fix f;
    uint8_t buf[4096];
    SCStats st;
    GArray *p;

    fix_opts(&f);
    fix_start(&f);
    read_all(&f, 0, 4096, buf);
    wr(&f, 64 * KiB, 10, 1, 0, 0);
    sc_assert_cmpi(sc_cache_drop(f.c), ==, -EBUSY);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.extents, ==, 2);
    f.o.target_dirty = 0;
    sc_assert(sc_cache_reconfigure(f.c, &f.o, NULL));
    drain_wb(&f, 0);
    p = rd(&f, 1 * MiB, 4096, buf, 0);      /* a fetch in flight */
    sc_assert_cmpi(sc_cache_drop(f.c), ==, -EBUSY);
    run_fetch(&f, &g_array_index(p, SCPiece, 0).job, 0);
    g_array_unref(p);
    sc_assert_cmpi(sc_cache_drop(f.c), ==, 0);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.extents, ==, 0);
    sc_assert_cmpu(st.memory_bytes, ==, 0);
    fix_end(&f);
}

/*
 * A read's hits are copied with the lock dropped: a page dropped from the
 * store meanwhile (a drop, or a write's copy on write) lingers, counted,
 * with the bytes the read found, and is recycled once the read is done.
 */
static void test_read_hits_linger(void)
{
    Fix f;
    uint8_t buf[8192], got[4096];
    struct iovec iov = { got, sizeof(got) };
    g_autoptr(GArray) pieces = g_array_new(FALSE, TRUE, sizeof(SCPiece));
    SCHits hits;
    SCStats st;

    fix_opts(&f);
    fix_start(&f);
    read_all(&f, 0, 8 * KiB, buf);
    sc_read_pinned(f.c, 0, 4096, 0, 0, &hits, pieces);
    sc_assert_cmpi(sc_cache_drop(f.c), ==, 0);
    fix_check(&f);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.memory_bytes, ==, 4096);      /* the page read */
    sc_hits_copy(&hits, &iov, 1, 0);
    sc_assert(!memcmp(got, f.node, sizeof(got)));
    sc_hits_done(&hits);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.memory_bytes, ==, 0);

    read_all(&f, 0, 8 * KiB, buf);
    sc_read_pinned(f.c, 0, 4096, 0, 0, &hits, pieces);
    wr(&f, 0, 4096, 0xaa, 0, 0);                    /* copies the page */
    fix_check(&f);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.memory_bytes, ==, 12 * KiB);
    sc_hits_copy(&hits, &iov, 1, 0);
    sc_assert(!memcmp(got, f.node, sizeof(got)));
    sc_hits_done(&hits);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.memory_bytes, ==, 8 * KiB);
    read_all(&f, 0, 4096, got);
    assert_bytes(got, sizeof(got), 0xaa);
    fix_end(&f);
}

static void test_lru(void)
{
    Fix f;
    uint8_t buf[4096];
    SCStats st;
    GArray *p;
    int i;

    fix_opts(&f);
    f.o.size = 64 * KiB;
    f.o.max_dirty = 32 * KiB;
    f.o.target_dirty = 16 * KiB;
    fix_start(&f);
    /* 16 separate pages fill the cache */
    for (i = 0; i < 16; i++) {
        read_all(&f, i * 8192, 4096, buf);
    }
    read_all(&f, 0, 4096, buf);              /* the oldest is used again */
    for (i = 16; i < 20; i++) {
        read_all(&f, i * 8192, 4096, buf);
        fix_check(&f);
    }
    p = rd(&f, 0, 4096, buf, 0);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_HIT);
    g_array_unref(p);
    p = rd(&f, 8192, 4096, buf, 0);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_FETCH);
    run_fetch(&f, &g_array_index(p, SCPiece, 0).job, 0);
    g_array_unref(p);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.memory_bytes, <=, 64 * KiB);
    fix_end(&f);
}

/* Dirty data is never evicted; when it fills memory, reads go direct. */
static void test_dirty_not_evicted(void)
{
    Fix f;
    uint8_t buf[8192];
    GArray *p;

    uint64_t off = 0;

    fix_opts(&f);
    f.o.size = 64 * KiB;
    f.o.max_dirty = 64 * KiB;
    f.o.target_dirty = 64 * KiB;
    fix_start(&f);
    /* Fill with dirty data as far as data and bookkeeping fit. */
    while (wr(&f, off, 4096, 5, 0, 0).status == SC_WRITE_DONE) {
        off += 4096;
    }
    sc_assert_cmpu(off, >=, 48 * KiB);
    p = rd(&f, 1 * MiB, 8192, buf, 0);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_DIRECT);
    g_array_unref(p);
    sc_assert_cmpi(wr(&f, 1 * MiB, 4096, 5, 0, 0).status, ==,
                    SC_WRITE_BLOCKED);
    read_all(&f, 0, 8192, buf);
    assert_bytes(buf, 8192, 5);
    fix_end(&f);
}

/* Many tiny extents: bookkeeping stays bounded. */
static void test_metadata_bound(void)
{
    Fix f;
    SCStats st;
    SCWriteResult r;
    uint64_t off;
    bool blocked = false;

    fix_opts(&f);
    f.o.size = 64 * KiB;
    f.o.max_dirty = 64 * KiB;
    f.o.target_dirty = 64 * KiB;
    f.g.align = 1;
    fix_start(&f);
    for (off = 0; off < 64 * KiB; off += 2) {
        r = wr(&f, off, 1, 1, 0, 0);
        sc_cache_get_stats(f.c, &st);
        sc_assert_cmpu(st.metadata_bytes, <=,
                         f.c->meta_limit + 8 * sizeof(SCExtent));
        if (r.status == SC_WRITE_BLOCKED) {
            blocked = true;
            break;
        }
    }
    sc_assert(blocked);
    fix_end(&f);
}

static void test_prefetch_spread(void)
{
    Fix f;
    uint8_t buf[16384];
    SCJob jobs[16];
    SCStats st;
    unsigned n = 0, per_node[4] = { 0 }, i;
    uint64_t off;

    fix_opts(&f);
    f.g.node_count = 4;
    f.g.max_fetch_per_node = 1;
    f.o.readahead_trigger_requests = 4;
    f.o.readahead_max_bytes = 256 * KiB;
    fix_start(&f);
    for (off = 0; off < 4 * 16384; off += 16384) {
        read_all(&f, off, 16384, buf);
    }
    while (n < 16 && sc_prefetch_next(f.c, &jobs[n])) {
        SCJob *j = &jobs[n];

        sc_assert_cmpu(j->offset / (64 * KiB), ==,
                         (j->offset + j->len - 1) / (64 * KiB));
        sc_assert_cmpu(j->offset % 512, ==, 0);
        per_node[j->node]++;
        n++;
    }
    sc_assert_cmpu(n, >=, 1);
    for (i = 0; i < 4; i++) {
        sc_assert_cmpu(per_node[i], <=, 1);
    }
    for (i = 0; i < n; i++) {
        run_fetch(&f, &jobs[i], 0);
    }
    /* the reader finds the prefetched data */
    read_all(&f, 4 * 16384, 16384, buf);
    sc_assert_mem(buf, f.node + 4 * 16384, 16384);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.readahead_issued_bytes, >, 0);
    sc_assert_cmpu(st.readahead_used_bytes, ==, 16384);
    sc_assert_cmpu(st.readahead_streams, ==, 1);
    fix_end(&f);
}

/* A reader that needs a queued prefetch job takes it over. */
static void test_prefetch_handed_to_reader(void)
{
    Fix f;
    uint8_t buf[16384];
    GArray *p;
    SCPiece *pc;
    uint64_t off;
    SCJob j;

    fix_opts(&f);
    f.g.node_count = 1;
    f.g.max_fetch_per_node = 1;
    f.o.readahead_trigger_requests = 2;
    f.o.readahead_max_bytes = 256 * KiB;
    fix_start(&f);
    for (off = 0; off < 2 * 16384; off += 16384) {
        read_all(&f, off, 16384, buf);
    }
    sc_assert(sc_prefetch_next(f.c, &j));   /* one in flight */
    p = rd(&f, 64 * KiB, 16384, buf, 0);       /* in a queued job */
    pc = &g_array_index(p, SCPiece, 0);
    sc_assert_cmpi(pc->kind, ==, SC_PIECE_FETCH);
    sc_assert_cmpu(pc->job.offset, ==, 64 * KiB);
    run_fetch(&f, &pc->job, 0);
    run_fetch(&f, &j, 0);
    g_array_unref(p);
    fix_end(&f);
}

static void test_readahead_wasted(void)
{
    Fix f;
    uint8_t buf[4096];
    SCStats st;
    SCJob j;
    uint64_t off;

    fix_opts(&f);
    f.o.size = 256 * KiB;
    f.o.max_dirty = 0;
    f.o.target_dirty = 0;
    f.o.readahead_trigger_requests = 2;
    f.o.readahead_max_bytes = 64 * KiB;
    fix_start(&f);
    for (off = 0; off < 3 * 4096; off += 4096) {
        read_all(&f, off, 4096, buf);
    }
    while (sc_prefetch_next(f.c, &j)) {
        run_fetch(&f, &j, 0);
    }
    /* random reads push the prefetched data out unread */
    for (off = 0; off < 64; off++) {
        read_all(&f, 8 * MiB + off * 64 * KiB, 4096, buf);
    }
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.readahead_wasted_bytes, >, 0);
    fix_end(&f);
}

static void test_resize(void)
{
    Fix f;
    SCFlush *fl;
    SCStats st;
    uint8_t buf[4096];

    fix_opts(&f);
    fix_start(&f);
    read_all(&f, 0, 4096, buf);
    wr(&f, 8 * MiB, 4096, 1, 0, 0);
    fl = sc_flush_begin(f.c, true);
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 1);
    sc_cache_set_disk_size(f.c, 4 * MiB);
    /* the dirty data past the end went with the disk */
    sc_assert_cmpi(sc_flush_status(f.c, fl), ==, 0);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.extents, ==, 1);
    sc_assert_cmpu(st.dirty_bytes, ==, 0);
    sc_flush_release(f.c, fl);
    fix_end(&f);
}

static void test_reconfigure_shrink(void)
{
    Fix f;
    uint8_t *buf = g_malloc(512 * KiB);
    SCStats st;
    SCJob j;

    fix_opts(&f);
    fix_start(&f);
    read_all(&f, 0, 512 * KiB, buf);
    wr(&f, 2 * MiB, 200 * KiB, 1, 0, 0);
    f.o.size = 128 * KiB;
    f.o.max_dirty = 64 * KiB;
    f.o.target_dirty = 32 * KiB;
    f.o.readahead_max_bytes = 0;
    sc_assert(sc_cache_reconfigure(f.c, &f.o, NULL));
    sc_cache_get_stats(f.c, &st);
    /* clean data went; dirty data stays until written back */
    sc_assert_cmpu(st.clean_bytes, ==, 0);
    sc_assert_cmpu(st.dirty_bytes, ==, 200 * KiB);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    run_wb(&f, &j, 0, 0);
    drain_wb(&f, 0);
    sc_cache_get_stats(f.c, &st);
    sc_assert_cmpu(st.memory_bytes, <=, 128 * KiB);
    g_free(buf);
    fix_end(&f);
}

/* Reads see data under writeback and unaligned, scattered iovecs work. */
static void test_read_inflight_scattered(void)
{
    Fix f;
    uint8_t a[3], b[5000], c[1200], pad[7];
    struct iovec iov[4] = {
        { pad, 7 }, { a, 3 }, { b, 5000 }, { c, 1200 },
    };
    GArray *p;
    SCJob j;

    fix_opts(&f);
    f.o.target_dirty = 0;
    fix_start(&f);
    wr(&f, 100, 6203, 0x77, 0, 0);
    sc_assert(sc_writeback_next(f.c, 0, &j));
    p = sc_read(f.c, 100, 6203, iov, 4, 7, 0, 0);
    sc_assert_cmpu(p->len, ==, 1);
    sc_assert_cmpi(g_array_index(p, SCPiece, 0).kind, ==, SC_PIECE_HIT);
    assert_bytes(a, 3, 0x77);
    assert_bytes(b, 5000, 0x77);
    assert_bytes(c, 1200, 0x77);
    g_array_unref(p);
    run_wb(&f, &j, 0, 0);
    fix_end(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cache/read/miss-hit", test_read_miss_then_hit);
    g_test_add_func("/cache/read/wait", test_read_waits_for_fetch);
    g_test_add_func("/cache/read/hits-linger", test_read_hits_linger);
    g_test_add_func("/cache/read/failed-fetch", test_failed_fetch);
    g_test_add_func("/cache/read/inflight-scattered",
                    test_read_inflight_scattered);
    g_test_add_func("/cache/read/fetch-loses",
                    test_fetch_loses_to_write_and_invalidate);
    g_test_add_func("/cache/write/read-back", test_write_read_back);
    g_test_add_func("/cache/write/max-dirty-pacing", test_max_dirty_pacing);
    g_test_add_func("/cache/write/pacing-bandwidth", test_pacing_bandwidth);
    g_test_add_func("/cache/write/bypass", test_bypass);
    g_test_add_func("/cache/write/writethrough-until-flush",
                    test_writethrough_until_flush);
    g_test_add_func("/cache/write/fua", test_fua);
    g_test_add_func("/cache/writeback/coalesce",
                    test_coalesce_within_stripe_unit);
    g_test_add_func("/cache/writeback/per-node", test_per_node_limit);
    g_test_add_func("/cache/writeback/overwrite",
                    test_overwrite_under_writeback);
    g_test_add_func("/cache/writeback/age", test_age_writeback);
    g_test_add_func("/cache/writeback/whole-segment", test_whole_segment);
    g_test_add_func("/cache/writeback/whole-segment-memory",
                    test_whole_segment_memory);
    g_test_add_func("/cache/flush/not-starved", test_flush_not_starved);
    g_test_add_func("/cache/flush/clean", test_flush_clean);
    g_test_add_func("/cache/errors/to-flush", test_writeback_error_to_flush);
    g_test_add_func("/cache/errors/sticky-backoff",
                    test_sticky_error_and_backoff);
    g_test_add_func("/cache/errors/overwritten", test_failed_job_overwritten);
    g_test_add_func("/cache/around/waits-for-writeback",
                    test_around_waits_for_writeback);
    g_test_add_func("/cache/around/flush-obligation",
                    test_around_flush_obligation);
    g_test_add_func("/cache/around/blocks-readers-writers",
                    test_around_blocks_readers_and_writers);
    g_test_add_func("/cache/block-status", test_block_status);
    g_test_add_func("/cache/errors/sticky-internal-flush",
                    test_sticky_error_internal_flush);
    g_test_add_func("/cache/drop", test_drop);
    g_test_add_func("/cache/memory/lru", test_lru);
    g_test_add_func("/cache/memory/dirty-kept", test_dirty_not_evicted);
    g_test_add_func("/cache/memory/metadata", test_metadata_bound);
    g_test_add_func("/cache/memory/reconfigure", test_reconfigure_shrink);
    g_test_add_func("/cache/readahead/spread", test_prefetch_spread);
    g_test_add_func("/cache/readahead/handover",
                    test_prefetch_handed_to_reader);
    g_test_add_func("/cache/readahead/wasted", test_readahead_wasted);
    g_test_add_func("/cache/resize", test_resize);
    g_test_add_func("/cache/writeback/node-jobs-option",
                    test_node_jobs_option);
    g_test_add_func("/cache/bypass/write", test_bypass_write);
    g_test_add_func("/cache/bypass/read", test_bypass_read);
    return g_test_run();
}
