/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit test of readahead stream detection and window sizing.
 */
#include "sc-readahead.h"
#include "sc-test.h"

#include <glib.h>

#define KiB 1024ULL
#define MiB (1024ULL * 1024)

static void default_config(SCRaConfig *cfg)
{
    cfg->trigger_requests = 10;
    cfg->max_bytes = 512 * KiB;
    cfg->disable_after_bytes = 0;
    cfg->stripe_unit = 64 * KiB;
    cfg->min_bytes = 4 * KiB;
    cfg->disk_size = 1024 * MiB;
}

typedef struct Window {
    uint64_t start;
    uint64_t end;
    uint64_t at_read;
} Window;

/* Feed reads; collect the windows they trigger. */
static void feed(SCReadahead *ra, GArray *wins, uint64_t off, uint64_t len,
                 uint64_t n, uint64_t *read_no)
{
    uint64_t i;

    for (i = 0; i < n; i++) {
        Window w;

        if (sc_ra_observe(ra, off + i * len, len, &w.start, &w.end)) {
            w.at_read = *read_no;
            g_array_append_val(wins, w);
        }
        (*read_no)++;
    }
}

static void test_trigger_and_growth(void)
{
    GArray *w = g_array_new(FALSE, FALSE, sizeof(Window));
    SCRaConfig cfg;
    SCReadahead ra;
    uint64_t n = 0;
    guint i;

    default_config(&cfg);
    sc_ra_init(&ra, &cfg);
    feed(&ra, w, 0, 4 * KiB, 9, &n);
    sc_assert_cmpu(w->len, ==, 0);
    feed(&ra, w, 36 * KiB, 4 * KiB, 1, &n);
    sc_assert_cmpu(w->len, ==, 1);
    /* the first window starts where the reader is */
    sc_assert_cmpu(g_array_index(w, Window, 0).start, ==, 40 * KiB);

    feed(&ra, w, 40 * KiB, 4 * KiB, 2000, &n);
    for (i = 1; i < w->len; i++) {
        Window *p = &g_array_index(w, Window, i - 1);
        Window *c = &g_array_index(w, Window, i);

        /* back to back, stripe-unit aligned, never above max * 1.5 */
        sc_assert_cmpu(c->start, ==, p->end);
        sc_assert_cmpu(c->end % (64 * KiB), ==, 0);
        sc_assert_cmpu(c->end - c->start, <=, 768 * KiB);
        sc_assert_cmpu(c->end - c->start, >=,
                         MIN(p->end - p->start, 512 * KiB) / 2);
    }
    /* it grew to the maximum */
    sc_assert_cmpu(g_array_index(w, Window, w->len - 1).end -
                     g_array_index(w, Window, w->len - 1).start, ==,
                     512 * KiB);
    g_array_unref(w);
}

/* The reader never catches up with the prefetched data. */
static void test_pipelined(void)
{
    SCRaConfig cfg;
    SCReadahead ra;
    uint64_t off, ra_end = 0, s, e;

    default_config(&cfg);
    sc_ra_init(&ra, &cfg);
    for (off = 0; off < 64 * MiB; off += 16 * KiB) {
        if (sc_ra_observe(&ra, off, 16 * KiB, &s, &e)) {
            sc_assert_cmpu(s, >=, off + 16 * KiB);
            ra_end = e;
        }
        if (off >= 10 * 16 * KiB) {
            /* the next window is out before the reader needs it */
            sc_assert_cmpu(ra_end, >, off + 16 * KiB);
        }
    }
}

static void test_random_never(void)
{
    GRand *r = g_rand_new_with_seed(7);
    SCRaConfig cfg;
    SCReadahead ra;
    uint64_t s, e;
    int i;

    default_config(&cfg);
    sc_ra_init(&ra, &cfg);
    for (i = 0; i < 100000; i++) {
        uint64_t off = (uint64_t)g_rand_int_range(r, 0, 262144) * 4096;

        sc_assert(!(sc_ra_observe(&ra, off, 4096, &s, &e)));
    }
    g_rand_free(r);
}

static void test_rereads_never(void)
{
    SCRaConfig cfg;
    SCReadahead ra;
    uint64_t s, e;
    int i;

    default_config(&cfg);
    sc_ra_init(&ra, &cfg);
    for (i = 0; i < 1000; i++) {
        sc_assert(!(sc_ra_observe(&ra, 8 * MiB, 4096, &s, &e)));
        sc_assert(!(sc_ra_observe(&ra, 8 * MiB - 8192, 4096, &s, &e)));
    }
}

/* Six streams interleaved request by request: all are detected. */
static void test_interleaved(void)
{
    SCRaConfig cfg;
    SCReadahead ra;
    unsigned hits[6] = { 0 };
    uint64_t s, e;
    int i, k;

    default_config(&cfg);
    sc_ra_init(&ra, &cfg);
    for (i = 0; i < 200; i++) {
        for (k = 0; k < 6; k++) {
            uint64_t base = (uint64_t)k * 100 * MiB;

            if (sc_ra_observe(&ra, base + i * 8192, 8192, &s, &e)) {
                sc_assert_cmpu(s, >=, base);
                sc_assert_cmpu(e, <=, base + 10 * MiB);
                hits[k]++;
            }
        }
    }
    for (k = 0; k < 6; k++) {
        sc_assert_cmpu(hits[k], >=, 3);
    }
    sc_assert_cmpu(sc_ra_active_streams(&ra), ==, 6);
}

/* Requests of one stream arriving out of order still count. */
static void test_reordered(void)
{
    static const int order[8] = { 1, 0, 3, 2, 6, 4, 7, 5 };
    SCRaConfig cfg;
    SCReadahead ra;
    uint64_t s, e, n = 0, first = 0;
    int i;

    default_config(&cfg);
    sc_ra_init(&ra, &cfg);
    for (i = 0; i < 64; i++) {
        uint64_t req = (i / 8) * 8 + order[i % 8];

        n++;
        if (sc_ra_observe(&ra, req * 4096, 4096, &s, &e) && !first) {
            first = n;
        }
    }
    /* triggered after about trigger_requests requests, like in order */
    sc_assert_cmpu(first, >=, 10);
    sc_assert_cmpu(first, <=, 12);
}

static void test_disable_after(void)
{
    SCRaConfig cfg;
    SCReadahead ra;
    uint64_t off, s, e, last = 0;

    default_config(&cfg);
    cfg.disable_after_bytes = 1 * MiB;
    sc_ra_init(&ra, &cfg);
    for (off = 0; off < 4 * MiB; off += 4096) {
        if (sc_ra_observe(&ra, off, 4096, &s, &e)) {
            last = off;
        }
    }
    sc_assert_cmpu(last, >, 0);
    sc_assert_cmpu(last, <, 1 * MiB);
    /* 0 means never */
    cfg.disable_after_bytes = 0;
    sc_ra_configure(&ra, &cfg);
    sc_assert(!(ra.disabled));
}

static void test_disk_end(void)
{
    SCRaConfig cfg;
    SCReadahead ra;
    uint64_t off, s, e, size = 3 * MiB + 12345;

    default_config(&cfg);
    cfg.disk_size = size;
    sc_ra_init(&ra, &cfg);
    for (off = 0; off + 4096 <= size; off += 4096) {
        if (sc_ra_observe(&ra, off, 4096, &s, &e)) {
            sc_assert_cmpu(e, <=, size);
            sc_assert_cmpu(s, <, e);
        }
    }
}

static void test_waste_shrinks(void)
{
    SCRaConfig cfg;
    SCReadahead ra;
    uint64_t off, s, e, len = 0;
    bool wasted = false, checked = false;

    default_config(&cfg);
    sc_ra_init(&ra, &cfg);
    for (off = 0; off < 32 * MiB; off += 4096) {
        if (!sc_ra_observe(&ra, off, 4096, &s, &e)) {
            continue;
        }
        if (wasted) {
            /* the window after waste is half the previous one */
            sc_assert_cmpu(e - s, <=, len / 2 + 64 * KiB);
            checked = true;
            break;
        }
        len = e - s;
        if (len == 512 * KiB && off > 8 * MiB) {
            sc_ra_wasted(&ra, s);
            wasted = true;
        }
    }
    sc_assert(checked);
}

static void test_disabled_by_zero_max(void)
{
    SCRaConfig cfg;
    SCReadahead ra;
    uint64_t off, s, e;

    default_config(&cfg);
    cfg.max_bytes = 0;
    sc_ra_init(&ra, &cfg);
    for (off = 0; off < MiB; off += 4096) {
        sc_assert(!(sc_ra_observe(&ra, off, 4096, &s, &e)));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cache/readahead/trigger-growth",
                    test_trigger_and_growth);
    g_test_add_func("/cache/readahead/pipelined", test_pipelined);
    g_test_add_func("/cache/readahead/random", test_random_never);
    g_test_add_func("/cache/readahead/rereads", test_rereads_never);
    g_test_add_func("/cache/readahead/interleaved", test_interleaved);
    g_test_add_func("/cache/readahead/reordered", test_reordered);
    g_test_add_func("/cache/readahead/disable-after", test_disable_after);
    g_test_add_func("/cache/readahead/disk-end", test_disk_end);
    g_test_add_func("/cache/readahead/waste", test_waste_shrinks);
    g_test_add_func("/cache/readahead/max-zero", test_disabled_by_zero_max);
    return g_test_run();
}
