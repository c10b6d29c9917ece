/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of block/stripe-layout.c: header encoding, validation, the
 * RAID-0 and replicated mappings and assembling nodes given in any order.
 */

#include <glib.h>
#include <string.h>
#include <zlib.h>

#include "../stripe-layout.h"
#include "sc-test.h"

static void make_header(StripeHeader *h, uint32_t index, uint32_t count)
{
    static const uint8_t uuid[16] = {
        0x6b, 0x1e, 0x52, 0x11, 0x27, 0x70, 0x4d, 0x36,
        0x9a, 0x0c, 0xe4, 0x57, 0x3a, 0x24, 0x91, 0x8e,
    };

    *h = (StripeHeader) {
        .version = STRIPE_VERSION,
        .header_size = STRIPE_HEADER_SIZE,
        .node_index = index,
        .node_count = count,
        .stripe_unit = 64 * 1024,
        .virtual_size = 100 * 1024 * 1024,
        .data_offset = 1024 * 1024,
        .generation = 1,
        .copies = 1,
    };
    memcpy(h->uuid, uuid, 16);
}

/* Re-seal a hand-modified encoded header. */
static void reseal(uint8_t *buf)
{
    uint32_t crc = crc32(0, buf, STRIPE_HEADER_SIZE - 4);
    int i;

    for (i = 0; i < 4; i++) {
        buf[STRIPE_HEADER_SIZE - 4 + i] = crc >> (8 * i);
    }
}

static void test_roundtrip(void)
{
    uint8_t buf[STRIPE_HEADER_SIZE];
    StripeHeader h, out;
    char *msg = NULL;

    make_header(&h, 2, 5);
    h.compat_features = 0x10;
    h.generation = 77;
    stripe_header_encode(&h, buf);
    sc_assert_mem(buf, STRIPE_MAGIC, 8);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), &out, &msg), ==,
                    STRIPE_HEADER_OK);
    sc_assert(!(msg));
    sc_assert_cmpu(out.node_index, ==, 2);
    sc_assert_cmpu(out.node_count, ==, 5);
    sc_assert_cmpu(out.stripe_unit, ==, h.stripe_unit);
    sc_assert_cmpu(out.virtual_size, ==, h.virtual_size);
    sc_assert_cmpu(out.data_offset, ==, h.data_offset);
    sc_assert_cmpu(out.compat_features, ==, 0x10);
    sc_assert_cmpu(out.generation, ==, 77);
    sc_assert_mem(out.uuid, h.uuid, 16);
    /* Little-endian on disk: the node count is at byte 36. */
    sc_assert_cmpu(buf[36], ==, 5);
    sc_assert_cmpu(buf[37], ==, 0);
}

static StripeHeaderStatus decode_status(const uint8_t *buf, char **msg)
{
    StripeHeader h;

    g_free(*msg);
    *msg = NULL;
    return stripe_header_decode(buf, STRIPE_HEADER_SIZE, &h, msg);
}

static void test_rejects(void)
{
    uint8_t buf[STRIPE_HEADER_SIZE], good[STRIPE_HEADER_SIZE];
    StripeHeader h;
    char *msg = NULL;

    memset(buf, 0, sizeof(buf));
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_BLANK);
    sc_assert(strstr(msg, "not formatted"));

    memcpy(buf, "QFI\xfb", 4);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_FOREIGN);
    sc_assert(strstr(msg, "other data"));

    make_header(&h, 0, 2);
    stripe_header_encode(&h, good);

    memcpy(buf, good, sizeof(buf));
    buf[50] ^= 1;
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_CORRUPT);
    sc_assert(strstr(msg, "checksum"));

    memcpy(buf, good, sizeof(buf));
    buf[8] = 2;                             /* version 2 */
    reseal(buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==,
                    STRIPE_HEADER_UNSUPPORTED);
    sc_assert(strstr(msg, "version 2"));

    memcpy(buf, good, sizeof(buf));
    buf[72] = 4;                            /* incompatible bit 2 */
    reseal(buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==,
                    STRIPE_HEADER_UNSUPPORTED);
    sc_assert(strstr(msg, "0x4"));

    memcpy(buf, good, sizeof(buf));
    buf[64] = 4;                            /* compatible bits are fine */
    reseal(buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_OK);

    memcpy(buf, good, sizeof(buf));
    buf[32] = 2;                            /* index 2 of 2 nodes */
    reseal(buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_INVALID);
    sc_assert(strstr(msg, "node index 2"));

    memcpy(buf, good, sizeof(buf));
    buf[40] = 0x01;                         /* stripe unit 64 KiB + 1 */
    reseal(buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_INVALID);
    sc_assert(strstr(msg, "stripe unit"));

    memcpy(buf, good, sizeof(buf));
    buf[36] = 0;                            /* zero nodes */
    reseal(buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_INVALID);

    memcpy(buf, good, sizeof(buf));
    buf[48] = 1;                            /* size not a multiple of 512 */
    reseal(buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_INVALID);
    sc_assert(strstr(msg, "virtual size"));

    memcpy(buf, good, sizeof(buf));
    memset(buf + 56, 0, 8);                 /* data offset 0 */
    reseal(buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_INVALID);
    sc_assert(strstr(msg, "data offset"));

    g_free(msg);
}

static void test_geometry_check(void)
{
    char *msg;

    sc_assert(!(stripe_geometry_check(1 << 30, 256 * 1024, 4, 1)));
    msg = stripe_geometry_check(1 << 30, 3 * 4096, 4, 1);
    sc_assert(strstr(msg, "stripe-unit 12288 is not a power of two"));
    g_free(msg);
    msg = stripe_geometry_check(1 << 30, 256, 4, 1);
    sc_assert(strstr(msg, "out of range"));
    g_free(msg);
    msg = stripe_geometry_check(1 << 30, UINT64_C(128) << 20, 4, 1);
    sc_assert(strstr(msg, "out of range"));
    g_free(msg);
    msg = stripe_geometry_check(1 << 30, 65536, 0, 1);
    sc_assert(strstr(msg, "0 nodes"));
    g_free(msg);
    msg = stripe_geometry_check(1000, 65536, 2, 1);
    sc_assert(strstr(msg, "multiple of 512"));
    g_free(msg);
    sc_assert_cmpu(stripe_default_data_offset(4096), ==, 1 << 20);
    sc_assert_cmpu(stripe_default_data_offset(4 << 20), ==, 4 << 20);
}

/* The mapping against its definition, unit by unit, over odd geometries. */
static void test_map(void)
{
    static const uint32_t counts[] = { 1, 2, 3, 4, 7 };
    StripeGeometry g;
    size_t c;

    for (c = 0; c < G_N_ELEMENTS(counts); c++) {
        uint32_t n = counts[c];
        uint64_t su = 4096, off;

        stripe_geometry_init(&g, 37 * su + 1024, su, 1 << 20, n);
        for (off = 0; off < g.virtual_size; off += 512) {
            uint64_t k = off / su, node_off, left;
            uint32_t node;

            left = stripe_map(&g, off, &node, &node_off);
            sc_assert_cmpu(node, ==, k % n);
            sc_assert_cmpu(node_off, ==,
                             (1 << 20) + (k / n) * su + off % su);
            sc_assert_cmpu(left, ==, su - off % su);
            sc_assert_cmpu(node_off + left, <=,
                             stripe_node_size_needed(&g));
        }
        /* 38 units over n nodes: ceil(38 / n) rows per node */
        sc_assert_cmpu(stripe_node_size_needed(&g), ==,
                         (1 << 20) + ((38 + n - 1) / n) * su);
    }
}

/*
 * Replicated layouts: the copies of a unit are on distinct nodes, every
 * unit slot of every node is used once, and the copies of a failed node's
 * units are spread over all the other nodes.
 */
static void test_map_copies(void)
{
    const uint64_t su = 4096, data = 1 << 20;
    const uint32_t rows = 24;
    StripeGeometry g;
    uint32_t n, c;

    for (n = 1; n <= 8; n++) {
        for (c = 1; c <= MIN(n, STRIPE_MAX_COPIES); c++) {
            uint64_t units = (uint64_t)rows * n, k;
            uint64_t slots = rows * c;
            g_autofree uint8_t *used = g_new0(uint8_t, n * slots);
            /* partner[f * n + m]: units with a copy on f and one on m */
            g_autofree uint32_t *partner = g_new0(uint32_t, n * n);
            uint32_t f, m;

            stripe_geometry_init(&g, units * su, su, data, n);
            stripe_geometry_set_copies(&g, c);
            sc_assert_cmpu(stripe_node_size_needed(&g), ==, data + slots * su);
            for (k = 0; k < units; k++) {
                uint32_t node[STRIPE_MAX_COPIES], j, i;
                uint64_t off;

                for (j = 0; j < c; j++) {
                    uint64_t left = stripe_map_copy(&g, k * su + 512, j,
                                                    &node[j], &off);

                    sc_assert_cmpu(left, ==, su - 512);
                    sc_assert_cmpu(node[j], <, n);
                    sc_assert_cmpu((off - 512 - data) % su, ==, 0);
                    off = (off - 512 - data) / su;
                    sc_assert_cmpu(off, <, slots);
                    /* slot j of its row */
                    sc_assert_cmpu(off % c, ==, j);
                    sc_assert_cmpu(used[node[j] * slots + off], ==, 0);
                    used[node[j] * slots + off] = 1;
                    for (i = 0; i < j; i++) {
                        sc_assert_cmpu(node[i], !=, node[j]);
                    }
                }
                /* copy 0 is where RAID-0 puts the unit, in column order */
                sc_assert_cmpu(node[0], ==, k % n);
                for (i = 0; i < c; i++) {
                    for (j = 0; j < c; j++) {
                        partner[node[i] * n + node[j]] += i != j;
                    }
                }
            }
            /* every slot of every node holds one copy of one unit */
            for (k = 0; k < n * slots; k++) {
                sc_assert_cmpu(used[k], ==, 1);
            }
            /* a failed node's units have copies on every other node */
            for (f = 0; f < n && c > 1; f++) {
                for (m = 0; m < n; m++) {
                    if (m != f) {
                        sc_assert_cmpu(partner[f * n + m], >, 0);
                    }
                }
            }
            /* two copies: evenly, rows / (n - 1) times each of 2 ways */
            for (f = 0; f < n && c == 2 && n > 2 && rows % (n - 1) == 0;
                 f++) {
                for (m = 0; m < n; m++) {
                    if (m != f) {
                        sc_assert_cmpu(partner[f * n + m], ==,
                                       2 * rows / (n - 1));
                    }
                }
            }
        }
    }
    /* one copy is the RAID-0 layout, checked by /stripe-layout/map */
}

static void encode_decode(StripeHeader *h)
{
    uint8_t buf[STRIPE_HEADER_SIZE];

    stripe_header_encode(h, buf);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), h, NULL), ==,
                    STRIPE_HEADER_OK);
}

static bool assemble(StripeHeader *h, uint32_t n, uint64_t len,
                     StripeAssembly *as, int *errnode, char **msg)
{
    uint64_t lens[STRIPE_MAX_NODES];
    uint32_t i;

    for (i = 0; i < n; i++) {
        encode_decode(&h[i]);
        lens[i] = len;
    }
    g_free(*msg);
    *msg = NULL;
    return stripe_assemble(h, lens, n, as, errnode, msg);
}

static void test_assemble(void)
{
    const uint64_t len = 64 * 1024 * 1024;
    StripeHeader h[4];
    StripeAssembly as;
    char *msg = NULL;
    int errnode;
    uint32_t i;

    /* Given in the order 2, 0, 3, 1: assembled by index. */
    make_header(&h[0], 2, 4);
    make_header(&h[1], 0, 4);
    make_header(&h[2], 3, 4);
    make_header(&h[3], 1, 4);
    g_assert(assemble(h, 4, len, &as, &errnode, &msg));
    sc_assert_cmpu(as.order[0], ==, 1);
    sc_assert_cmpu(as.order[1], ==, 3);
    sc_assert_cmpu(as.order[2], ==, 0);
    sc_assert_cmpu(as.order[3], ==, 2);
    sc_assert_cmpu(as.geo.node_count, ==, 4);
    for (i = 0; i < 4; i++) {
        g_assert(!(as.stale[i]));
    }

    /* Same node given twice. */
    make_header(&h[3], 2, 4);
    g_assert(!(assemble(h, 4, len, &as, &errnode, &msg)));
    sc_assert_cmpi(errnode, ==, 3);
    sc_assert_cmpi(as.twin, ==, 0);
    sc_assert(strstr(msg, "index 2, like node 0"));

    /* One node missing. */
    make_header(&h[0], 0, 4);
    make_header(&h[1], 1, 4);
    make_header(&h[2], 3, 4);
    g_assert(!(assemble(h, 3, len, &as, &errnode, &msg)));
    sc_assert_cmpi(errnode, ==, -1);
    sc_assert_cmpi(as.twin, ==, -1);
    sc_assert(strstr(msg, "index 2 is missing"));

    /* A node of another image: the majority decides who is foreign. */
    make_header(&h[0], 0, 3);
    make_header(&h[1], 1, 3);
    make_header(&h[2], 2, 3);
    h[0].uuid[0] ^= 0xff;
    g_assert(!(assemble(h, 3, len, &as, &errnode, &msg)));
    sc_assert_cmpi(errnode, ==, 0);
    sc_assert(strstr(msg, "another image"));

    /* Disagreeing geometry. */
    make_header(&h[0], 0, 3);
    h[2].stripe_unit = 128 * 1024;
    g_assert(!(assemble(h, 3, len, &as, &errnode, &msg)));
    sc_assert_cmpi(errnode, ==, 2);
    sc_assert(strstr(msg, "geometry"));

    /* The odd one out is named even when it comes first. */
    make_header(&h[2], 2, 3);
    h[0].stripe_unit = 128 * 1024;
    g_assert(!(assemble(h, 3, len, &as, &errnode, &msg)));
    sc_assert_cmpi(errnode, ==, 0);
    sc_assert(strstr(msg, "stripe unit 131072, data offset"));
    make_header(&h[0], 0, 3);
    h[0].copies = 3;
    g_assert(!(assemble(h, 3, len, &as, &errnode, &msg)));
    sc_assert_cmpi(errnode, ==, 0);
    sc_assert(strstr(msg, "copies 3 disagrees with the other nodes (1)"));
    make_header(&h[0], 0, 3);

    /* A node with another header size (from another version). */
    h[1].header_size = 1024;
    g_assert(!(assemble(h, 3, len, &as, &errnode, &msg)));
    sc_assert_cmpi(errnode, ==, 1);
    sc_assert(strstr(msg, "header size 1024"));
    make_header(&h[1], 1, 3);

    /* A node too small for the image. */
    make_header(&h[2], 2, 3);
    {
        uint64_t lens[3] = { len, 1024 * 1024, len };

        for (i = 0; i < 3; i++) {
            encode_decode(&h[i]);
        }
        g_free(msg);
        msg = NULL;
        g_assert(!(stripe_assemble(h, lens, 3, &as, &errnode, &msg)));
        sc_assert_cmpi(errnode, ==, 1);
        sc_assert(strstr(msg, "too small"));
    }

    /* A resize cut off after node 1: the newest generation wins. */
    h[1].generation = 2;
    h[1].virtual_size = 120 * 1024 * 1024;
    g_assert(assemble(h, 3, len, &as, &errnode, &msg));
    sc_assert_cmpu(as.geo.virtual_size, ==, 120 * 1024 * 1024);
    sc_assert_cmpu(as.generation, ==, 2);
    g_assert(as.stale[0]);
    g_assert(!(as.stale[1]));
    g_assert(as.stale[2]);

    /* Same generation, different sizes: inconsistent. */
    h[0].generation = 2;
    g_assert(!(assemble(h, 3, len, &as, &errnode, &msg)));
    sc_assert_cmpi(errnode, ==, 1);
    sc_assert(strstr(msg, "same generation"));
    g_free(msg);
}

/*
 * Replicated images: n nodes, every header at generation 1, @copies
 * copies, with the list of node incarnations (all zero).
 */
static void make_replicated(StripeHeader *h, uint32_t n, uint32_t copies)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        make_header(&h[i], i, n);
        h[i].copies = copies;
        h[i].compat_features = STRIPE_COMPAT_INCARNATIONS;
    }
}

static void test_lost_unit(void)
{
    StripeGeometry g;
    uint64_t unit = 0;
    uint32_t n, a, b, c;

    /* Two copies: any one node may fail, no two (every pair shares). */
    for (n = 2; n <= 8; n++) {
        stripe_geometry_init(&g, 1 << 30, 65536, 1 << 20, n);
        stripe_geometry_set_copies(&g, 2);
        g_assert(!stripe_geometry_lost_unit(&g, 0, NULL));
        for (a = 0; a < n; a++) {
            g_assert(!stripe_geometry_lost_unit(&g, 1ull << a, NULL));
            for (b = a + 1; b < n; b++) {
                g_assert(stripe_geometry_lost_unit(&g, (1ull << a) |
                                                   (1ull << b), &unit));
            }
        }
    }
    /* Three copies: any two nodes may fail. */
    for (n = 3; n <= 7; n++) {
        stripe_geometry_init(&g, 1 << 30, 65536, 1 << 20, n);
        stripe_geometry_set_copies(&g, 3);
        for (a = 0; a < n; a++) {
            for (b = a + 1; b < n; b++) {
                g_assert(!stripe_geometry_lost_unit(&g, (1ull << a) |
                                                    (1ull << b), NULL));
                for (c = b + 1; c < n; c++) {
                    bool lost = stripe_geometry_lost_unit(
                        &g, (1ull << a) | (1ull << b) | (1ull << c), NULL);
                    /* with 3 nodes, every node holds every unit */
                    g_assert(n > 3 || lost);
                }
            }
        }
    }
    /* One copy: any failed node loses its units, the first is its own. */
    stripe_geometry_init(&g, 1 << 30, 65536, 1 << 20, 4);
    g_assert(stripe_geometry_lost_unit(&g, 1ull << 2, &unit));
    sc_assert_cmpu(unit, ==, 2);
}

/* Nodes that gave no header (could not be opened): stripe_assemble_absent() */
static void test_assemble_absent(void)
{
    const uint64_t len = 64 * 1024 * 1024;
    uint64_t lens[4] = { len, len, len, len };
    StripeHeader h[4];
    StripeAssembly as;
    char *msg = NULL;
    int errnode;
    uint32_t i;

    /* Given in the order 2, (absent), 3, 0: the absent one is index 1. */
    make_replicated(h, 4, 2);
    {
        StripeHeader given[4] = { h[2], { 0 }, h[3], h[0] };

        for (i = 0; i < 4; i++) {
            if (i != 1) {
                encode_decode(&given[i]);
            }
        }
        g_assert(stripe_assemble_absent(given, lens, 4, 1ull << 1, &as,
                                        &errnode, &msg));
        sc_assert_cmpu(as.absent, ==, 1ull << 1);
        sc_assert_cmpu(as.failed, ==, 1ull << 1);
        sc_assert_cmpu(as.order[0], ==, 3);
        sc_assert_cmpu(as.order[1], ==, 1);
        sc_assert_cmpu(as.order[2], ==, 0);
        sc_assert_cmpu(as.order[3], ==, 2);
        g_assert(!as.stale[1]);

        /* with node 2 (position 0) failed in the others' headers too */
        given[2].failed = given[3].failed = 1ull << 2;
        given[2].generation = given[3].generation = 2;
        g_assert(!stripe_assemble_absent(given, lens, 4, 1ull << 1, &as,
                                         &errnode, &msg));
        sc_assert_cmpi(errnode, ==, -1);
        sc_assert(strstr(msg, "node indices 1, 2 are failed"));

        /* every node absent */
        g_free(msg);
        msg = NULL;
        g_assert(!stripe_assemble_absent(given, lens, 4, 0xf, &as, &errnode,
                                         &msg));
        sc_assert(strstr(msg, "none of the 4 nodes"));
    }

    /* One copy: an absent node loses its units. */
    for (i = 0; i < 3; i++) {
        make_header(&h[i], i, 3);
        encode_decode(&h[i]);
    }
    g_free(msg);
    msg = NULL;
    g_assert(!stripe_assemble_absent(h, lens, 3, 1ull << 2, &as, &errnode,
                                     &msg));
    sc_assert(strstr(msg, "too many failed nodes"));
    g_free(msg);
}

static void test_assemble_failed(void)
{
    const uint64_t len = 64 * 1024 * 1024;
    uint8_t buf[STRIPE_HEADER_SIZE];
    StripeHeader h[5], out;
    StripeAssembly as;
    char *msg = NULL;
    int errnode;

    /* The field survives encoding; it needs copies, and never self. */
    make_replicated(h, 4, 2);
    h[0].failed = 1ull << 3;
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), &out, NULL), ==,
                   STRIPE_HEADER_OK);
    sc_assert_cmpu(out.failed, ==, 1ull << 3);
    h[0].failed = 1ull << 0;
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), &out, &msg), ==,
                   STRIPE_HEADER_INVALID);
    sc_assert(strstr(msg, "invalid failed nodes"));
    g_free(msg);
    msg = NULL;
    h[0].failed = 1ull << 4;
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), &out, NULL), ==,
                   STRIPE_HEADER_INVALID);
    h[0].copies = 1;
    h[0].failed = 1ull << 3;
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), &out, NULL), ==,
                   STRIPE_HEADER_OK);
    sc_assert_cmpu(out.failed, ==, 0);

    /* Node 2 failed: the others list it at generation 2. */
    make_replicated(h, 4, 2);
    h[0].failed = h[1].failed = h[3].failed = 1ull << 2;
    h[0].generation = h[1].generation = h[3].generation = 2;
    g_assert(assemble(h, 4, len, &as, &errnode, &msg));
    sc_assert_cmpu(as.failed, ==, 1ull << 2);
    sc_assert_cmpu(as.generation, ==, 2);
    g_assert(!as.stale[2]);

    /* A marking cut off after node 0: node 2 is failed, 1 and 3 stale. */
    h[1].failed = h[3].failed = 0;
    h[1].generation = h[3].generation = 1;
    g_assert(assemble(h, 4, len, &as, &errnode, &msg));
    sc_assert_cmpu(as.failed, ==, 1ull << 2);
    g_assert(as.stale[1] && as.stale[3] && !as.stale[0] && !as.stale[2]);

    /* Resynced, its header rewritten first: an older listing is moot. */
    h[2].generation = 3;
    h[1].generation = h[3].generation = 3;
    g_assert(assemble(h, 4, len, &as, &errnode, &msg));
    sc_assert_cmpu(as.failed, ==, 0);
    g_assert(as.stale[0]);

    /* Split brain: nodes 0 and 2 list each other. */
    make_replicated(h, 4, 2);
    h[0].failed = 1ull << 2;
    h[0].generation = 2;
    h[2].failed = 1ull << 0;
    h[2].generation = 5;
    g_assert(!assemble(h, 4, len, &as, &errnode, &msg));
    g_assert(as.split_brain);
    sc_assert_cmpi(as.twin, ==, 0);
    sc_assert_cmpi(errnode, ==, 2);
    sc_assert(strstr(msg, "split brain: node indices 0 and 2"));

    /* Two failed nodes with two copies: some unit has no copy left. */
    make_replicated(h, 4, 2);
    h[0].failed = h[1].failed = (1ull << 2) | (1ull << 3);
    h[0].generation = h[1].generation = 2;
    g_assert(!assemble(h, 4, len, &as, &errnode, &msg));
    g_assert(!as.split_brain);
    sc_assert(strstr(msg, "node indices 2, 3 are failed and hold every copy"));

    /* ... which three copies on five nodes survive. */
    make_replicated(h, 5, 3);
    h[0].failed = h[1].failed = h[4].failed = (1ull << 2) | (1ull << 3);
    h[0].generation = h[1].generation = h[4].generation = 2;
    g_assert(assemble(h, 5, len, &as, &errnode, &msg));
    sc_assert_cmpu(as.failed, ==, (1ull << 2) | (1ull << 3));
    g_free(msg);
}

/*
 * Node incarnations: the list survives encoding with copies only, and a
 * node that was replaced since (its own entry older than the newest
 * header's) is refused, while the node that replaced it is taken.
 */
static void test_incarnation(void)
{
    const uint64_t len = 64 * 1024 * 1024;
    uint8_t buf[STRIPE_HEADER_SIZE];
    StripeHeader h[4], out, old;
    StripeAssembly as;
    char *msg = NULL;
    int errnode, i;

    make_replicated(h, 4, 2);
    h[0].incarnation[1] = 0x1234abcd;
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), &out, NULL), ==,
                   STRIPE_HEADER_OK);
    sc_assert_cmpu(out.incarnation[1], ==, 0x1234abcd);
    sc_assert_cmpu(out.compat_features, ==, STRIPE_COMPAT_INCARNATIONS);
    h[0].compat_features = 0;       /* an older writer: no list */
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), &out, NULL), ==,
                   STRIPE_HEADER_OK);
    sc_assert_cmpu(out.incarnation[1], ==, 0);

    /* Node 1 failed at generation 2, then replaced at generation 3. */
    make_replicated(h, 4, 2);
    old = h[1];
    for (i = 0; i < 4; i++) {
        h[i].incarnation[1] = 0x5eed;
        h[i].generation = 3;
    }
    h[1].generation = 4;                /* rebuilt, marked live */
    g_assert(assemble(h, 4, len, &as, &errnode, &msg));
    sc_assert_cmpu(as.failed, ==, 0);
    sc_assert_cmpu(as.incarnation[1], ==, 0x5eed);

    /* The node it replaced, given instead: refused, not read as stale. */
    h[1] = old;
    g_assert(!assemble(h, 4, len, &as, &errnode, &msg));
    sc_assert_cmpi(errnode, ==, 1);
    sc_assert(strstr(msg, "was node index 1 before another node was put in "
                     "its place"));
    g_free(msg);
}

/*
 * The write-intent bitmap: its fields survive encoding only with their
 * incompatible bit, need copies, must fit before the data, and every node
 * must agree on them.
 */
static void test_bitmap(void)
{
    const uint64_t len = 128 * 1024 * 1024;
    uint8_t buf[STRIPE_HEADER_SIZE];
    StripeHeader h[3], out;
    StripeAssembly as;
    char *msg = NULL;
    int errnode, i;

    sc_assert_cmpu(stripe_bitmap_regions(100 << 20, 4 << 20), ==, 25);
    sc_assert_cmpu(stripe_bitmap_regions((100 << 20) + 512, 4 << 20), ==,
                   26);
    sc_assert_cmpu(stripe_bitmap_bytes(100 << 20, 4 << 20), ==, 4096);
    sc_assert_cmpu(stripe_bitmap_bytes(0, 4 << 20), ==, 0);
    /* 4096 bytes hold 32768 bits, one more needs a second block */
    sc_assert_cmpu(stripe_bitmap_bytes(32768ull << 16, 1 << 16), ==, 4096);
    sc_assert_cmpu(stripe_bitmap_bytes((32768ull << 16) + 1, 1 << 16), ==,
                   8192);

    g_assert(!stripe_bitmap_check(1ull << 40, 4 << 20, 4096, 1 << 20));
    msg = stripe_bitmap_check(1ull << 40, 3 << 20, 4096, 1 << 20);
    sc_assert(strstr(msg, "bitmap-region 3145728 is not a power of two"));
    g_free(msg);
    msg = stripe_bitmap_check(1ull << 40, 32 * 1024, 4096, 1 << 20);
    sc_assert(strstr(msg, "bitmap-region 32768"));
    g_free(msg);
    /* 1 MiB data offset: room for 1044480 * 8 regions */
    msg = stripe_bitmap_check(1ull << 40, 64 * 1024, 4096, 1 << 20);
    sc_assert(strstr(msg, "needs a bitmap of 2097152 bytes, but the nodes "
                          "have room for 1044480"));
    g_free(msg);
    msg = NULL;

    make_replicated(h, 3, 2);
    for (i = 0; i < 3; i++) {
        h[i].incompat_features = STRIPE_INCOMPAT_BITMAP;
        h[i].bitmap_region = 4 << 20;
        h[i].bitmap_offset = STRIPE_BITMAP_OFFSET;
    }
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), &out, &msg), ==,
                   STRIPE_HEADER_OK);
    sc_assert_cmpu(out.bitmap_region, ==, 4 << 20);
    sc_assert_cmpu(out.bitmap_offset, ==, 4096);
    sc_assert_cmpu(buf[104 + 2], ==, 0x40);
    sc_assert_cmpu(buf[112 + 1], ==, 0x10);
    g_assert(assemble(h, 3, len, &as, &errnode, &msg));
    sc_assert_cmpu(as.geo.bitmap_region, ==, 4 << 20);
    sc_assert_cmpu(as.geo.bitmap_offset, ==, 4096);

    /* a node that disagrees */
    h[2].bitmap_region = 8 << 20;
    g_assert(!assemble(h, 3, len, &as, &errnode, &msg));
    sc_assert_cmpi(errnode, ==, 2);
    sc_assert(strstr(msg, "bitmap (region 8388608, offset 4096) disagrees"));
    h[2].bitmap_region = 4 << 20;

    /* the bitmap inside the header, or past the data offset */
    h[0].bitmap_offset = 0;
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_INVALID);
    sc_assert(strstr(msg, "invalid bitmap offset 0"));
    h[0].bitmap_offset = 1 << 20;
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_INVALID);
    sc_assert(strstr(msg, "invalid bitmap: size 104857600 with "
                          "bitmap-region 4194304 needs a bitmap of 4096 "
                          "bytes, but the nodes have room for 0"));
    h[0].bitmap_offset = 4096;

    /* without copies there is nothing to resync */
    make_header(&h[0], 0, 3);
    h[0].incompat_features = STRIPE_INCOMPAT_BITMAP;
    h[0].bitmap_region = 4 << 20;
    h[0].bitmap_offset = STRIPE_BITMAP_OFFSET;
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(decode_status(buf, &msg), ==, STRIPE_HEADER_INVALID);
    sc_assert(strstr(msg, "write-intent bitmap without copies"));

    /* without the bit the fields are not read */
    make_replicated(h, 3, 2);
    h[0].bitmap_region = 4 << 20;
    stripe_header_encode(&h[0], buf);
    sc_assert_cmpi(stripe_header_decode(buf, sizeof(buf), &out, &msg), ==,
                   STRIPE_HEADER_OK);
    sc_assert_cmpu(out.bitmap_region, ==, 0);
    sc_assert_cmpu(buf[104 + 2], ==, 0);
    g_free(msg);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/stripe-layout/roundtrip", test_roundtrip);
    g_test_add_func("/stripe-layout/rejects", test_rejects);
    g_test_add_func("/stripe-layout/geometry-check", test_geometry_check);
    g_test_add_func("/stripe-layout/map", test_map);
    g_test_add_func("/stripe-layout/map-copies", test_map_copies);
    g_test_add_func("/stripe-layout/assemble", test_assemble);
    g_test_add_func("/stripe-layout/lost-unit", test_lost_unit);
    g_test_add_func("/stripe-layout/assemble-failed", test_assemble_failed);
    g_test_add_func("/stripe-layout/assemble-absent", test_assemble_absent);
    g_test_add_func("/stripe-layout/bitmap", test_bitmap);
    g_test_add_func("/stripe-layout/incarnation", test_incarnation);
    return g_test_run();
}
