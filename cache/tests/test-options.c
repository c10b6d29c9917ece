/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit test of option defaults and validation messages.
 */
#include "sc-internal.h"
#include "sc-test.h"

static void test_defaults(void)
{
    SCOptions o;

    sc_options_init_defaults(&o);
    sc_assert_cmpu(o.size, ==, 32 * SC_MiB);
    sc_assert_cmpu(o.max_dirty, ==, 24 * SC_MiB);
    sc_assert_cmpu(o.target_dirty, ==, 16 * SC_MiB);
    sc_assert_cmpu(o.max_dirty_age_ns, ==, SC_NS_PER_SEC);
    sc_assert(o.writethrough_until_flush);
    sc_assert_cmpu(o.readahead_trigger_requests, ==, 10);
    sc_assert_cmpu(o.readahead_max_bytes, ==, 2 * SC_MiB);
    sc_assert_cmpu(o.readahead_disable_after_bytes, ==, 0);
    sc_assert(!(sc_options_check(&o)));
}

typedef struct BadCase {
    const char *what;
    void (*mutate)(SCOptions *o);
    const char *expect;
} BadCase;

static void small_size(SCOptions *o)
{
    o->size = 4096;
}

static void huge_size(SCOptions *o)
{
    o->size = SC_MAX_SIZE + 1;
}

static void dirty_over_size(SCOptions *o)
{
    o->max_dirty = o->size + 1;
}

static void target_over_max(SCOptions *o)
{
    o->target_dirty = o->max_dirty + 1;
}

static void long_age(SCOptions *o)
{
    o->max_dirty_age_ns = SC_MAX_DIRTY_AGE_NS + 1;
}

static void zero_trigger(SCOptions *o)
{
    o->readahead_trigger_requests = 0;
}

static void big_readahead(SCOptions *o)
{
    o->readahead_max_bytes = o->size / 2 + 1;
}

static const BadCase bad_cases[] = {
    { "small", small_size, "cache-size (4096) must be at least 65536" },
    { "huge", huge_size, "cache-size (1099511627777) must be at most" },
    { "dirty", dirty_over_size, "cache-max-dirty (33554433) must not "
      "exceed cache-size (33554432)" },
    { "target", target_over_max, "cache-target-dirty (25165825) must not "
      "exceed cache-max-dirty (25165824)" },
    { "age", long_age, "cache-max-dirty-age" },
    { "trigger", zero_trigger, "readahead-trigger-requests (0) must be "
      "between 1 and" },
    { "readahead", big_readahead, "readahead-max-bytes (16777217) must not "
      "exceed half of cache-size" },
};

static void test_bad_options(void)
{
    SCGeometry geo = { 1 << 30, 65536, 4, 4096, 2, 2 };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        SCOptions o;
        char *msg, *msg2 = NULL;
        SCCache *c;

        sc_options_init_defaults(&o);
        bad_cases[i].mutate(&o);
        msg = sc_options_check(&o);
        sc_assert(msg);
        if (!g_str_has_prefix(msg, bad_cases[i].expect)) {
            g_error("%s: got \"%s\"", bad_cases[i].what, msg);
        }
        /* sc_cache_new and sc_cache_reconfigure say the same */
        c = sc_cache_new(&o, &geo, &msg2);
        sc_assert(!(c));
        sc_assert(!g_strcmp0(msg, msg2));
        g_free(msg2);
        msg2 = NULL;
        sc_options_init_defaults(&o);
        c = sc_cache_new(&o, &geo, NULL);
        bad_cases[i].mutate(&o);
        sc_assert(!(sc_cache_reconfigure(c, &o, &msg2)));
        sc_assert(!g_strcmp0(msg, msg2));
        /* the cache kept its options */
        sc_assert_cmpu(c->opts.size, ==, 32 * SC_MiB);
        sc_cache_free(c);
        g_free(msg);
        g_free(msg2);
    }
}

static void test_bad_geometry(void)
{
    static const struct {
        SCGeometry geo;
        const char *expect;
    } cases[] = {
        { { 1 << 20, 3000, 1, 512, 1, 1 }, "stripe unit (3000) must be" },
        { { 1 << 20, 256, 1, 256, 1, 1 }, "stripe unit (256) must be" },
        { { 1 << 20, 4096, 1, 8192, 1, 1 }, "node alignment (8192)" },
        { { 1 << 20, 4096, 1, 0, 1, 1 }, "node alignment (0)" },
        { { 1 << 20, 4096, 0, 512, 1, 1 }, "node count must be" },
        /* offsets near 2^64 would overflow page rounding (fuzzing) */
        { { UINT64_MAX, 4096, 1, 512, 1, 1 },
          "disk size (18446744073709551615) must be at most "
          "9223372036854775807" },
        /* not an allocation of UINT32_MAX nodes (found by fuzzing) */
        { { 1 << 20, 4096, UINT32_MAX, 512, 1, 1 },
          "node count (4294967295) must be at most 1024" },
        { { 1 << 20, 4096, 1, 512, 0, 1 }, "max_writeback_per_node" },
        { { 1 << 20, 4096, 1, 512, 1, 0 }, "max_fetch_per_node" },
    };
    SCOptions o;
    size_t i;

    sc_options_init_defaults(&o);
    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *msg = NULL;

        sc_assert(!(sc_cache_new(&o, &cases[i].geo, &msg)));
        if (!g_str_has_prefix(msg, cases[i].expect)) {
            g_error("case %zu: got \"%s\"", i, msg);
        }
        g_free(msg);
    }
}

/* Boundaries that are valid. */
static void test_edges_valid(void)
{
    SCGeometry geo = { 1 << 20, 512, 1, 1, 1, 1 };
    SCGeometry most_nodes = { 1 << 20, 512, SC_MAX_NODES, 512, 1, 1 };
    SCOptions o;
    SCCache *c;

    sc_options_init_defaults(&o);
    o.size = SC_MIN_SIZE;
    o.max_dirty = 0;
    o.target_dirty = 0;
    o.max_dirty_age_ns = 0;
    o.readahead_max_bytes = 0;
    o.readahead_trigger_requests = 1;
    sc_assert(!(sc_options_check(&o)));
    c = sc_cache_new(&o, &geo, NULL);
    sc_assert(c);
    sc_assert_cmpu(c->page_size, ==, 512);
    sc_cache_free(c);
    c = sc_cache_new(&o, &most_nodes, NULL);
    sc_assert(c);
    sc_cache_free(c);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cache/options/defaults", test_defaults);
    g_test_add_func("/cache/options/bad", test_bad_options);
    g_test_add_func("/cache/options/bad-geometry", test_bad_geometry);
    g_test_add_func("/cache/options/edges", test_edges_valid);
    return g_test_run();
}
