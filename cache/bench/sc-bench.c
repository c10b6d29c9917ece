/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Micro-benchmark of the cache core: cost per operation of inserts, hit
 * lookups and evictions as the number of cached extents grows, at 32 MiB
 * and 1 GiB cache sizes.  Prints numbers; it is not a pass/fail test.
 *
 * Every extent is 4 KiB with a gap after it, so extents never merge and
 * their number is cache-size / 4 KiB at the end.  Times are process CPU
 * time, so other load on the machine matters less than with wall clock
 * (it still pollutes the CPU caches).
 *
 *   insert  a read miss plus the completion of its fetch job: one new
 *           clean extent (extent map, page store, LRU)
 *   write   a 4 KiB write to a new place: one dirty extent (extent map,
 *           dirty index, per-node writeback index)
 *   hot     a 64-byte read hit on one of a fixed 1024 extents: the cost of
 *           finding data when the path to it is in the CPU caches
 *   cold    a 64-byte read hit on a random one of all extents
 *   4k      like cold, copying a whole extent
 *   hash    baseline for "cold": an O(1) GHashTable lookup of a random one
 *           of the same number of keys; it slows down with size too,
 *           because random accesses over many MiB miss the CPU caches
 *   evict   an insert into the full cache, which evicts the least recently
 *           used extent first (steady state of a streaming reader)
 *
 * "hot" growing like log2(extents) shows the per-operation cost is
 * logarithmic; "cold" divided by "hash" shows the same with cache misses.
 * The allocator is warmed first (and told not to return memory to the
 * system), so inserts do not measure the kernel zeroing fresh pages.
 */
#include "stripe-cache.h"

#include <glib.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define KiB UINT64_C(1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)
#define EXT UINT64_C(4096)
#define STRIDE (2 * EXT)
#define LOOKUPS 200000
#define HOT 1024

static uint8_t buf[EXT];
static uint64_t rng = 88172645463325252ULL;

static uint64_t xorshift(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static SCCache *make_cache(uint64_t size, bool dirty)
{
    SCOptions o;
    SCGeometry g = {
        .disk_size = 8 * size, .stripe_unit = 64 * KiB, .node_count = 4,
        .align = 4096, .max_writeback_per_node = 8,
        .max_fetch_per_node = 8,
    };
    char *err = NULL;
    SCCache *c;

    sc_options_init_defaults(&o);
    o.size = size;
    o.max_dirty = dirty ? size : size / 2;
    o.target_dirty = o.max_dirty;
    o.max_dirty_age_ns = 3600ULL * 1000000000ULL;
    o.writethrough_until_flush = false;
    o.readahead_max_bytes = 0;
    c = sc_cache_new(&o, &g, &err);
    g_assert(c);
    return c;
}

/* Read miss at @off and complete its fetch: one new clean extent. */
static void insert_clean(SCCache *c, uint64_t off)
{
    struct iovec iov = { buf, EXT };
    GArray *p = sc_read(c, off, EXT, &iov, 1, 0, 0, 0);
    SCPiece *pc = &g_array_index(p, SCPiece, 0);

    g_assert(p->len == 1 && pc->kind == SC_PIECE_FETCH);
    sc_fetch_done(c, pc->job.id, 0, 0);
    g_array_unref(p);
}

static void lookup(SCCache *c, uint64_t off, uint64_t len)
{
    struct iovec iov = { buf, len };
    GArray *p = sc_read(c, off, len, &iov, 1, 0, 0, 0);

    g_assert(g_array_index(p, SCPiece, 0).kind == SC_PIECE_HIT);
    g_array_unref(p);
}

static void write_new(SCCache *c, uint64_t off)
{
    struct iovec iov = { buf, EXT };
    SCWriteResult r = sc_write(c, off, EXT, &iov, 1, 0, 0, 0);

    g_assert(r.status == SC_WRITE_DONE);
}

/* O(1) baseline with the same number of random keys. */
static double hash_lookup_cost(GHashTable *h, uint64_t n)
{
    volatile uintptr_t sink = 0; /* keeps the lookups from being elided */
    double t = now_s();
    uint64_t i;

    for (i = 0; i < LOOKUPS; i++) {
        uint64_t k = (xorshift() % n) * STRIDE;

        sink += (uintptr_t)g_hash_table_lookup(h, &k);
    }
    (void)sink;
    return (now_s() - t) / LOOKUPS;
}

static double hot_lookup_cost(SCCache *c, const uint64_t *hot)
{
    double t = now_s();
    uint64_t i;

    for (i = 0; i < LOOKUPS; i++) {
        lookup(c, hot[i % HOT], 64);
    }
    return (now_s() - t) / LOOKUPS;
}

/* Fill and free two caches once so later inserts find warm memory. */
static void warm_allocator(uint64_t size)
{
    SCCache *c = make_cache(size, false);
    SCCache *w = make_cache(size, true);
    uint64_t i;

    for (i = 0; i < size / EXT; i++) {
        insert_clean(c, i * STRIDE);
        write_new(w, i * STRIDE);
    }
    sc_cache_free(c);
    sc_cache_free(w);
}

typedef struct Row {
    uint64_t n;
    double insert, write, hot, cold, k4, hash;
} Row;

static void bench_size(uint64_t size)
{
    uint64_t max = size / EXT, n = 0, checkpoint = HOT, i;
    uint64_t *keys = g_new(uint64_t, max);
    uint64_t hot[HOT];
    GHashTable *h = g_hash_table_new(g_int64_hash, g_int64_equal);
    SCCache *c, *w;
    Row first = { 0 }, r;
    double t;
    SCStats st;

    warm_allocator(size);
    c = make_cache(size, false);
    w = make_cache(size, true);
    printf("\ncache-size %" PRIu64 " MiB: up to %" PRIu64 " extents of 4 "
           "KiB\n", size / MiB, max);
    printf("%9s %8s %8s %8s %8s %8s %8s   (ns/op)\n", "extents", "insert",
           "write", "hot", "cold", "4k", "hash");
    while (n < max) {
        uint64_t from = n;

        t = now_s();
        for (; n < checkpoint; n++) {
            insert_clean(c, n * STRIDE);
        }
        r.insert = (now_s() - t) / (n - from);
        t = now_s();
        for (i = from; i < n; i++) {
            write_new(w, i * STRIDE);
        }
        r.write = (now_s() - t) / (n - from);
        for (i = from; i < n; i++) {
            keys[i] = i * STRIDE;
            g_hash_table_insert(h, &keys[i], &keys[i]);
        }
        if (from == 0) {
            for (i = 0; i < HOT; i++) {
                hot[i] = (xorshift() % n) * STRIDE;
            }
        }
        r.hot = hot_lookup_cost(c, hot);
        t = now_s();
        for (i = 0; i < LOOKUPS; i++) {
            lookup(c, (xorshift() % n) * STRIDE, 64);
        }
        r.cold = (now_s() - t) / LOOKUPS;
        t = now_s();
        for (i = 0; i < LOOKUPS; i++) {
            lookup(c, (xorshift() % n) * STRIDE, EXT);
        }
        r.k4 = (now_s() - t) / LOOKUPS;
        r.hash = hash_lookup_cost(h, n);
        r.n = n;
        printf("%9" PRIu64 " %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f\n", n,
               r.insert * 1e9, r.write * 1e9, r.hot * 1e9, r.cold * 1e9,
               r.k4 * 1e9, r.hash * 1e9);
        if (!first.n) {
            first = r;
        }
        checkpoint = MIN(checkpoint * 4, max);
    }
    sc_cache_get_stats(c, &st);
    g_assert(st.extents == max);

    /* the cache is full: every further insert evicts the LRU extent */
    t = now_s();
    for (i = 0; i < max; i++) {
        insert_clean(c, (max + i) * STRIDE);
    }
    t = (now_s() - t) / max;
    sc_cache_get_stats(c, &st);
    printf("evict+insert into the full cache: %.0f ns/op (%.0f ops/s)\n",
           t * 1e9, 1 / t);
    printf("ops/s at %" PRIu64 " extents: hot lookup %.0f, cold lookup "
           "%.0f, insert %.0f, write %.0f\n", r.n, 1 / r.hot, 1 / r.cold,
           1 / r.insert, 1 / r.write);
    printf("metadata at %" PRIu64 " extents: %" PRIu64 " bytes (%.0f per "
           "extent, %.1f%% of the data)\n", st.extents, st.metadata_bytes,
           (double)st.metadata_bytes / st.extents,
           100.0 * st.metadata_bytes / st.memory_bytes);
    printf("growth from %" PRIu64 " to %" PRIu64 " extents (x%.0f; log2 "
           "ratio %.2f): hot lookup x%.2f, cold/hash x%.2f, insert x%.2f, "
           "write x%.2f\n", first.n, r.n, (double)r.n / first.n,
           log2(r.n) / log2(first.n), r.hot / first.hot,
           (r.cold / r.hash) / (first.cold / first.hash),
           r.insert / first.insert, r.write / first.write);
    sc_cache_free(c);
    sc_cache_free(w);
    g_hash_table_destroy(h);
    g_free(keys);
}

int main(int argc, char **argv)
{
    /* keep freed memory: inserts should not measure page faults */
    mallopt(M_TRIM_THRESHOLD, -1);
    memset(buf, 0x5A, sizeof(buf));
    printf("stripe-cache micro-benchmark (4 KiB extents, CPU time)\n");
    bench_size(32 * MiB);
    bench_size(1 * GiB);
    return 0;
}
