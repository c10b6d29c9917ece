/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: what open does with the bytes it reads from the nodes
 * (block/stripe-layout.c), before any guest IO depends on it.
 *
 * The first input byte selects the mode:
 *
 * even: the rest is the start of a node.  It is decoded as read (any
 *       length, any content), then once more with the magic and the
 *       checksum made right, so that the field checks behind the checksum
 *       are reached: libFuzzer cannot forge a CRC-32.
 * odd:  the rest describes a set of nodes: an image's geometry, and per
 *       node a position, mutations of its header (UUID, index, geometry,
 *       generation and size) and its length.  The headers go through
 *       encode and decode, as create writes and open reads them, then
 *       through stripe_assemble(), and an assembled image's mapping is
 *       checked at offsets taken from the rest of the input.
 *
 * Every byte that runs past the end of the input reads as zero, and zero
 * always means "no mutation", so short inputs describe sound images.
 */
#include "fuzz-input.h"
#include "../stripe-layout.h"

#include <inttypes.h>
#include <string.h>
#include <zlib.h>

/* Field offsets, from the table in docs/layout.md */
#define OFF_VERSION     8
#define OFF_HEADER_SIZE 12
#define OFF_UUID        16
#define OFF_NODE_INDEX  32
#define OFF_NODE_COUNT  36
#define OFF_STRIPE_UNIT 40
#define OFF_SIZE        48
#define OFF_DATA_OFFSET 56
#define OFF_COMPAT      64
#define OFF_INCOMPAT    72
#define OFF_GENERATION  80
#define OFF_COPIES      88
#define OFF_RESERVED    92
#define OFF_FAILED      96
#define OFF_BM_REGION   104
#define OFF_BM_OFFSET   112
#define OFF_CRC         (STRIPE_HEADER_SIZE - 4)

/* Node sets go one past the limit, which stripe_assemble() must refuse. */
#define SET_MAX         (STRIPE_MAX_NODES + 1)
#define MAP_OFFSETS     16

/* Per-node mutation flags of the node-set mode. */
enum {
    MUT_INDEX = 1 << 0,     /* another node index: duplicate or missing */
    MUT_UUID = 1 << 1,      /* belongs to another image */
    MUT_UNIT = 1 << 2,      /* other stripe unit */
    MUT_COUNT = 1 << 3,     /* other node count */
    MUT_OFFSET = 1 << 4,    /* other data offset or header size */
    MUT_GEN = 1 << 5,       /* other generation and size (cut-off resize) */
    MUT_COMPAT = 1 << 6,    /* compatible feature bits, to be ignored */
    MUT_SHORT = 1 << 7,     /* node too small */
};

/* Little-endian reads written here, not shared with the code under test. */
static uint32_t le32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The fields as docs/layout.md places them. */
static void parse_fields(const uint8_t *buf, StripeHeader *h)
{
    h->version = le32(buf + OFF_VERSION);
    h->header_size = le32(buf + OFF_HEADER_SIZE);
    memcpy(h->uuid, buf + OFF_UUID, sizeof(h->uuid));
    h->node_index = le32(buf + OFF_NODE_INDEX);
    h->node_count = le32(buf + OFF_NODE_COUNT);
    h->stripe_unit = le64(buf + OFF_STRIPE_UNIT);
    h->virtual_size = le64(buf + OFF_SIZE);
    h->data_offset = le64(buf + OFF_DATA_OFFSET);
    h->compat_features = le64(buf + OFF_COMPAT);
    h->incompat_features = le64(buf + OFF_INCOMPAT);
    h->generation = le64(buf + OFF_GENERATION);
    h->copies = h->incompat_features & STRIPE_INCOMPAT_COPIES ?
                le32(buf + OFF_COPIES) : 1;
    h->failed = h->incompat_features & STRIPE_INCOMPAT_COPIES ?
                le64(buf + OFF_FAILED) : 0;
    h->bitmap_region = h->incompat_features & STRIPE_INCOMPAT_BITMAP ?
                       le64(buf + OFF_BM_REGION) : 0;
    h->bitmap_offset = h->incompat_features & STRIPE_INCOMPAT_BITMAP ?
                       le64(buf + OFF_BM_OFFSET) : 0;
}

static bool same_header(const StripeHeader *a, const StripeHeader *b)
{
    return a->version == b->version && a->header_size == b->header_size &&
        !memcmp(a->uuid, b->uuid, sizeof(a->uuid)) &&
        a->node_index == b->node_index && a->node_count == b->node_count &&
        a->stripe_unit == b->stripe_unit &&
        a->virtual_size == b->virtual_size &&
        a->data_offset == b->data_offset &&
        a->compat_features == b->compat_features &&
        a->incompat_features == b->incompat_features &&
        a->generation == b->generation && a->copies == b->copies &&
        a->failed == b->failed && a->bitmap_region == b->bitmap_region &&
        a->bitmap_offset == b->bitmap_offset;
}

static void seal(uint8_t *buf)
{
    uint32_t crc = crc32(0, buf, OFF_CRC);
    int i;

    for (i = 0; i < 4; i++) {
        buf[OFF_CRC + i] = crc >> (8 * i);
    }
}

static bool is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

/*
 * The bitmap, when there is one: a power-of-two region, a bit per region
 * of the virtual size, in whole blocks between the header and the data.
 */
static bool bitmap_follows_rules(const StripeHeader *h)
{
    uint64_t bits, bytes;

    if (!(h->incompat_features & STRIPE_INCOMPAT_BITMAP)) {
        return true;
    }
    if (h->copies < 2 || !is_pow2(h->bitmap_region) ||
        h->bitmap_region < STRIPE_MIN_BITMAP_REGION ||
        h->bitmap_region > STRIPE_MAX_BITMAP_REGION ||
        h->bitmap_offset < h->header_size || h->bitmap_offset % 4096) {
        return false;
    }
    bits = h->virtual_size / h->bitmap_region +
           !!(h->virtual_size % h->bitmap_region);
    bytes = (bits + 32767) / 32768 * 4096;
    return h->bitmap_offset <= h->data_offset &&
        bytes <= h->data_offset - h->bitmap_offset;
}

/* The rules of docs/layout.md, which the rest of the driver relies on. */
static bool header_follows_rules(const StripeHeader *h)
{
    return bitmap_follows_rules(h) && h->version == STRIPE_VERSION &&
        !(h->incompat_features & ~STRIPE_INCOMPAT_KNOWN) &&
        h->header_size >= STRIPE_HEADER_SIZE && h->header_size % 512 == 0 &&
        h->node_count >= 1 && h->node_count <= STRIPE_MAX_NODES &&
        h->node_index < h->node_count &&
        is_pow2(h->stripe_unit) && h->stripe_unit >= STRIPE_MIN_UNIT &&
        h->stripe_unit <= STRIPE_MAX_UNIT &&
        h->data_offset >= h->header_size && h->data_offset % 512 == 0 &&
        h->virtual_size % 512 == 0 && h->virtual_size <= STRIPE_MAX_SIZE &&
        h->copies >= 1 && h->copies <= STRIPE_MAX_COPIES &&
        h->copies <= h->node_count &&
        (h->copies > 1) == !!(h->incompat_features & STRIPE_INCOMPAT_COPIES) &&
        /* failed nodes: existing ones, never the writer itself */
        (h->node_count == 64 || !(h->failed >> h->node_count)) &&
        !((h->failed >> h->node_index) & 1);
}

/* What create writes; open must accept it whatever the geometry. */
static bool header_as_created(const StripeHeader *h)
{
    return header_follows_rules(h) && !h->failed &&
        h->header_size == STRIPE_HEADER_SIZE &&
        h->data_offset == stripe_default_data_offset(h->stripe_unit);
}

/*
 * @offset (below the virtual size) is in the unit docs/layout.md puts it
 * in, inside the @needed bytes of its node, and maps back to @offset, so
 * that no two offsets share node bytes.
 */
static void check_map_at(const StripeGeometry *g, uint64_t needed,
                         uint64_t offset)
{
    uint64_t unit = g->stripe_unit, node_off, len, unit_no, slot, row;
    uint32_t node, copy, column, shift;
    uint64_t seen = 0;              /* STRIPE_MAX_NODES is 64 */

    for (copy = 0; copy < g->copies; copy++) {
        len = stripe_map_copy(g, offset, copy, &node, &node_off);
        fuzz_check(node < g->node_count, "offset %" PRIu64 " on node %u "
                   "of %u", offset, node, g->node_count);
        fuzz_check(!(seen & (UINT64_C(1) << node)), "offset %" PRIu64
                   ": two copies on node %u", offset, node);
        seen |= UINT64_C(1) << node;
        fuzz_check(len >= 1 && len <= unit && (offset + len) % unit == 0,
                   "offset %" PRIu64 ": %" PRIu64 " bytes to the end of "
                   "its unit of %" PRIu64, offset, len, unit);
        fuzz_check(node_off >= g->data_offset &&
                   node_off % unit == (g->data_offset + offset) % unit,
                   "offset %" PRIu64 " at node offset %" PRIu64 " (data "
                   "offset %" PRIu64 ")", offset, node_off, g->data_offset);
        fuzz_check(node_off + len <= needed, "offset %" PRIu64 ": node "
                   "bytes up to %" PRIu64 ", but a node needs only %"
                   PRIu64, offset, node_off + len, needed);
        /* back from the node, as docs/layout.md places the copies */
        slot = (node_off - g->data_offset) / unit;
        row = slot / g->copies;
        fuzz_check(slot % g->copies == copy, "copy %u of offset %" PRIu64
                   " in slot %" PRIu64, copy, offset, slot % g->copies);
        shift = copy ? copy + row % (g->node_count - g->copies + 1) : 0;
        column = (node + g->node_count - shift) % g->node_count;
        unit_no = row * g->node_count + column;
        fuzz_check(unit_no * unit + offset % unit == offset,
                   "offset %" PRIu64 " copy %u maps to node %u offset %"
                   PRIu64 ", which is unit %" PRIu64, offset, copy, node,
                   node_off, unit_no);
    }
}

/* The node size and the mapping of a geometry that open accepted. */
static void check_geometry(const StripeGeometry *g, FuzzInput *in)
{
    uint64_t unit = g->stripe_unit, size = g->virtual_size;
    uint64_t row = unit * g->node_count;
    uint64_t needed = stripe_node_size_needed(g);
    uint64_t edges[] = {
        0, unit - 1, unit, row - 1, row, size / 2, size - row, size - unit,
        size - 1,
    };
    uint64_t rows;
    unsigned i, n;

    fuzz_check(g->unit_shift < 64 && UINT64_C(1) << g->unit_shift == unit,
               "unit shift %u for a unit of %" PRIu64, g->unit_shift, unit);
    fuzz_check(needed >= g->data_offset &&
               (needed - g->data_offset) % unit == 0,
               "node size %" PRIu64 " for data offset %" PRIu64 " and unit "
               "%" PRIu64, needed, g->data_offset, unit);
    /* rows = ceil(size / (unit * nodes)), docs/layout.md's formula */
    rows = (needed - g->data_offset) / unit / g->copies;
    fuzz_check(rows == size / row + !!(size % row),
               "%" PRIu64 " rows reserved for %" PRIu64 " bytes over %u "
               "nodes of unit %" PRIu64, rows, size, g->node_count, unit);

    for (i = 0; i < G_N_ELEMENTS(edges); i++) {
        if (edges[i] < size) {
            check_map_at(g, needed, edges[i]);
        }
    }
    n = fuzz_u8(in) % (MAP_OFFSETS + 1);
    for (i = 0; i < n && size; i++) {
        check_map_at(g, needed, fuzz_u64(in) % size);
    }
}

/*
 * Decode @len bytes read from a node and check the status against an
 * independent reading of the same bytes.
 */
static void check_decode(const uint8_t *buf, size_t len, FuzzInput *in)
{
    uint8_t enc[STRIPE_HEADER_SIZE];
    StripeHeaderStatus st, want;
    size_t reserved;
    StripeHeader h, h2, fields;
    char *msg = NULL;

    st = stripe_header_decode(buf, len, &h, &msg);
    fuzz_check(stripe_header_decode(buf, len, &h2, NULL) == st,
               "status %d with a message, another without", st);
    if (st != STRIPE_HEADER_OK) {
        fuzz_check(msg && *msg, "status %d without a message", st);
    } else {
        fuzz_check(!msg, "status OK with a message: %s", msg);
    }

    if (len >= STRIPE_HEADER_SIZE) {
        parse_fields(buf, &fields);
    }
    if (len < STRIPE_HEADER_SIZE) {
        want = STRIPE_HEADER_BLANK;
    } else if (memcmp(buf, STRIPE_MAGIC, STRIPE_MAGIC_LEN)) {
        want = stripe_buf_is_zero(buf, STRIPE_HEADER_SIZE) ?
               STRIPE_HEADER_BLANK : STRIPE_HEADER_FOREIGN;
    } else if (crc32(0, buf, OFF_CRC) != le32(buf + OFF_CRC)) {
        want = STRIPE_HEADER_CORRUPT;
    } else if (fields.version != STRIPE_VERSION ||
               (fields.incompat_features & ~STRIPE_INCOMPAT_KNOWN)) {
        want = STRIPE_HEADER_UNSUPPORTED;
    } else {
        /* OK or INVALID: checked below */
        want = st == STRIPE_HEADER_OK ? st : STRIPE_HEADER_INVALID;
    }
    fuzz_check(st == want, "status %d, expected %d (%s)", st, want,
               msg ? msg : "no message");
    g_free(msg);

    if (st == STRIPE_HEADER_INVALID) {
        fuzz_check(!header_as_created(&fields), "a header as create writes "
                   "it was refused: %u nodes, unit %" PRIu64 ", size %"
                   PRIu64, fields.node_count, fields.stripe_unit,
                   fields.virtual_size);
    }
    if (st != STRIPE_HEADER_OK) {
        return;
    }
    fuzz_check(same_header(&h, &fields), "decoded fields differ from "
               "docs/layout.md's table");
    fuzz_check(header_follows_rules(&h), "accepted a header against the "
               "rules: index %u of %u, unit %" PRIu64 ", data offset %"
               PRIu64 ", header size %u, size %" PRIu64, h.node_index,
               h.node_count, h.stripe_unit, h.data_offset, h.header_size,
               h.virtual_size);

    /*
     * Every field round-trips.  The reserved bytes are not checked on
     * decode and written as zero on encode, so the whole sector
     * round-trips only when they were zero.
     */
    stripe_header_encode(&h, enc);
    /* without the copies bit, the copy count's bytes are reserved too */
    reserved = h.copies > 1 ? OFF_RESERVED : OFF_COPIES;
    fuzz_check(!memcmp(enc, buf, reserved), "fields re-encode "
               "differently");
    if (stripe_buf_is_zero(buf + reserved, OFF_CRC - reserved)) {
        fuzz_check(!memcmp(enc, buf, STRIPE_HEADER_SIZE), "header "
                   "re-encodes differently");
    }
    fuzz_check(stripe_header_decode(enc, sizeof(enc), &h2, NULL) ==
               STRIPE_HEADER_OK, "re-encoded header refused");
    fuzz_check(same_header(&h, &h2), "decode of an encoded header "
               "differs");

    {
        StripeGeometry g;

        stripe_geometry_init(&g, h.virtual_size, h.stripe_unit,
                             h.data_offset, h.node_count);
        stripe_geometry_set_copies(&g, h.copies);
        check_geometry(&g, in);
    }
}

/* Encode and decode, as the header goes from create to open. */
static bool through_node(const StripeHeader *h, StripeHeader *out)
{
    uint8_t buf[STRIPE_HEADER_SIZE];

    stripe_header_encode(h, buf);
    return stripe_header_decode(buf, sizeof(buf), out, NULL) ==
           STRIPE_HEADER_OK;
}

/* Whatever geometry create accepts, open accepts the headers it writes. */
static void check_create(const StripeHeader *fields)
{
    char *err = stripe_geometry_check(fields->virtual_size,
                                      fields->stripe_unit,
                                      fields->node_count, fields->copies);
    StripeHeader h = *fields, out;

    if (err) {
        fuzz_check(*err, "create refuses without a message");
        g_free(err);
        return;
    }
    h.version = STRIPE_VERSION;
    h.header_size = STRIPE_HEADER_SIZE;
    h.node_index = h.node_count - 1;
    h.data_offset = stripe_default_data_offset(h.stripe_unit);
    h.incompat_features = 0;
    h.failed = 0;
    h.bitmap_offset = 0;
    /* a replicated image with the bitmap region the fields give */
    if (h.copies > 1) {
        err = stripe_bitmap_check(h.virtual_size, h.bitmap_region,
                                  STRIPE_BITMAP_OFFSET, h.data_offset);
        if (err) {
            fuzz_check(*err, "create refuses a bitmap without a message");
            g_free(err);
            return;
        }
        h.incompat_features = STRIPE_INCOMPAT_BITMAP;
        h.bitmap_offset = STRIPE_BITMAP_OFFSET;
    } else {
        h.bitmap_region = 0;
    }
    fuzz_check(through_node(&h, &out), "create accepts %u nodes, unit %"
               PRIu64 ", size %" PRIu64 ", bitmap region %" PRIu64 ", open "
               "refuses them", h.node_count, h.stripe_unit, h.virtual_size,
               h.bitmap_region);
}

static void fuzz_header(const uint8_t *data, size_t size)
{
    StripeHeader fields;

    uint8_t buf[STRIPE_HEADER_SIZE] = { 0 };
    FuzzInput rest;

    /* Map offsets come from the bytes after the header. */
    fuzz_input_init(&rest, data, size);
    rest.pos = STRIPE_HEADER_SIZE;
    check_decode(data, size, &rest);

    memcpy(buf, data, MIN(size, sizeof(buf)));
    memcpy(buf, STRIPE_MAGIC, STRIPE_MAGIC_LEN);
    seal(buf);
    rest.pos = STRIPE_HEADER_SIZE;
    check_decode(buf, sizeof(buf), &rest);

    /* the same fields as the parameters of a create */
    parse_fields(buf, &fields);
    check_create(&fields);
}

/* What stripe_assemble() promised about an image it accepted. */
static void check_assembly(const StripeHeader *hdrs, const uint64_t *lens,
                           uint32_t count, const StripeAssembly *as)
{
    uint64_t newest = 0, needed = stripe_node_size_needed(&as->geo);
    bool seen[STRIPE_MAX_NODES] = { false };
    uint32_t i, k;

    fuzz_check(count >= 1 && count <= STRIPE_MAX_NODES &&
               as->geo.node_count == count, "assembled %u nodes as %u",
               count, as->geo.node_count);
    for (i = 0; i < count; i++) {
        newest = MAX(newest, hdrs[i].generation);
    }
    fuzz_check(as->generation == newest, "generation %" PRIu64 ", newest "
               "%" PRIu64, as->generation, newest);
    for (i = 0; i < count; i++) {
        const StripeHeader *h = &hdrs[i];

        fuzz_check(!memcmp(h->uuid, as->uuid, 16), "node %u of another "
                   "image accepted", i);
        fuzz_check(h->node_count == count &&
                   h->stripe_unit == as->geo.stripe_unit &&
                   h->data_offset == as->geo.data_offset &&
                   h->header_size == hdrs[0].header_size,
                   "node %u with another geometry accepted", i);
        fuzz_check(h->generation != newest ||
                   h->virtual_size == as->geo.virtual_size,
                   "node %u: size %" PRIu64 " at the newest generation, "
                   "image size %" PRIu64, i, h->virtual_size,
                   as->geo.virtual_size);
        fuzz_check(lens[i] >= needed, "node %u of %" PRIu64 " bytes "
                   "accepted, %" PRIu64 " needed", i, lens[i], needed);
    }
    for (k = 0; k < count; k++) {
        i = as->order[k];
        fuzz_check(i < count && !seen[i] && hdrs[i].node_index == k,
                   "order[%u] = %u", k, i);
        seen[i] = true;
        fuzz_check(as->stale[k] == (hdrs[i].generation != newest),
                   "node index %u: stale %d, generation %" PRIu64, k,
                   as->stale[k], hdrs[i].generation);
    }
}

/*
 * The same set with the nodes in @absent (positions) unopened: what
 * stripe_assemble_absent() promised about an image it accepted.
 */
static void check_assemble_absent(const StripeHeader *hdrs,
                                  const uint64_t *lens, uint32_t count,
                                  uint64_t absent)
{
    uint64_t newest = 0, claimed = 0, unit;
    StripeAssembly as;
    char *msg = NULL;
    int errnode = -2;
    uint32_t i, k;

    if (!stripe_assemble_absent(hdrs, lens, count, absent, &as, &errnode,
                                &msg)) {
        fuzz_check(msg && *msg, "refused without a message");
        g_free(msg);
        return;
    }
    fuzz_check(count <= 64 && absent != (count == 64 ? UINT64_MAX :
                                         (UINT64_C(1) << count) - 1),
               "assembled from absent nodes alone");
    fuzz_check(__builtin_popcountll(as.absent) ==
               __builtin_popcountll(absent) &&
               (as.absent & ~as.failed) == 0,
               "absent 0x%" PRIx64 " of 0x%" PRIx64 ", failed 0x%" PRIx64,
               as.absent, absent, as.failed);
    fuzz_check(!stripe_geometry_lost_unit(&as.geo, as.failed, &unit),
               "assembled with unit %" PRIu64 " on failed nodes only", unit);
    for (i = 0; i < count; i++) {
        if (!((absent >> i) & 1)) {
            newest = MAX(newest, hdrs[i].generation);
            claimed |= UINT64_C(1) << hdrs[i].node_index;
        }
    }
    fuzz_check(as.generation == newest && !(claimed & as.absent),
               "generation %" PRIu64 " (newest %" PRIu64 "), absent 0x%"
               PRIx64 " claimed 0x%" PRIx64, as.generation, newest,
               as.absent, claimed);
    for (k = 0; k < count; k++) {
        i = as.order[k];
        fuzz_check(i < count && ((absent >> i) & 1 ?
                                 (as.absent >> k) & 1 :
                                 hdrs[i].node_index == k),
                   "order[%u] = %u", k, i);
    }
}

static void check_assemble(const StripeHeader *hdrs, const uint64_t *lens,
                           uint32_t count, bool must_succeed, FuzzInput *in)
{
    StripeAssembly as;
    char *msg = NULL;
    int errnode = -2;

    check_assemble_absent(hdrs, lens, count, fuzz_u64(in) &
                          (count >= 64 ? UINT64_MAX :
                           (UINT64_C(1) << count) - 1));

    if (stripe_assemble(hdrs, lens, count, &as, &errnode, &msg)) {
        fuzz_check(!msg, "assembled with a message: %s", msg);
        check_assembly(hdrs, lens, count, &as);
        check_geometry(&as.geo, in);
        return;
    }
    fuzz_check(msg && *msg, "refused without a message");
    fuzz_check(errnode >= -1 && errnode < (int)count, "refused with node "
               "%d of %u: %s", errnode, count, msg);
    fuzz_check(!must_succeed, "refused the image create writes (node %d): "
               "%s", errnode, msg);
    g_free(msg);
}

static uint64_t fuzz_size(FuzzInput *in)
{
    return fuzz_u64(in) % (STRIPE_MAX_SIZE / 512 + 1) * 512;
}

static void fuzz_node_set(FuzzInput *in)
{
    StripeHeader base, hdrs[SET_MAX], h;
    uint64_t lens[SET_MAX], needed, max_size;
    uint8_t short_by[SET_MAX] = { 0 };
    uint32_t perm[SET_MAX], count, i, j, tmp;
    StripeGeometry g;
    uint8_t sel;
    char *err;

    count = fuzz_u8(in) % (SET_MAX + 1);
    base = (StripeHeader) {
        .version = STRIPE_VERSION,
        .header_size = STRIPE_HEADER_SIZE,
    };
    fuzz_bytes(in, base.uuid, sizeof(base.uuid));
    sel = fuzz_u8(in);
    base.node_count = sel ? sel % STRIPE_MAX_NODES + 1
                          : CLAMP(count, 1, STRIPE_MAX_NODES);
    base.stripe_unit = (uint64_t)STRIPE_MIN_UNIT << fuzz_u8(in) % 18;
    base.data_offset = stripe_default_data_offset(base.stripe_unit) +
                       512 * fuzz_u8(in);
    base.virtual_size = fuzz_size(in);
    base.generation = fuzz_u64(in);

    /*
     * The image as create writes it must open, if create accepts the
     * geometry.
     */
    base.copies = 1 + fuzz_u8(in) % MIN(base.node_count, STRIPE_MAX_COPIES);
    err = stripe_geometry_check(base.virtual_size, base.stripe_unit,
                                base.node_count, base.copies);
    if (!err) {
        FuzzInput none;

        /* mapped at the edges only: the input's offsets come at its end */
        fuzz_input_init(&none, NULL, 0);
        h = base;
        h.data_offset = stripe_default_data_offset(h.stripe_unit);
        stripe_geometry_init(&g, h.virtual_size, h.stripe_unit,
                             h.data_offset, h.node_count);
        stripe_geometry_set_copies(&g, h.copies);
        needed = stripe_node_size_needed(&g);
        for (i = 0; i < base.node_count; i++) {
            h.node_index = base.node_count - 1 - i;
            fuzz_check(through_node(&h, &hdrs[i]), "create's header for "
                       "node %u of %u refused", i, base.node_count);
            lens[i] = needed;
        }
        check_assemble(hdrs, lens, base.node_count, true, &none);
    }
    g_free(err);

    for (i = 0; i < count; i++) {
        perm[i] = i;
    }
    max_size = base.virtual_size;
    for (i = 0; i < count; i++) {
        uint8_t mut;

        j = i + fuzz_u8(in) % (count - i);
        tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
        h = base;
        /* more nodes than the image has: some come twice */
        h.node_index = perm[i] % base.node_count;
        mut = fuzz_u8(in);
        if (mut & MUT_INDEX) {
            h.node_index = fuzz_u8(in) % base.node_count;
        }
        if (mut & MUT_UUID) {
            sel = fuzz_u8(in);
            h.uuid[sel % 16] ^= sel | 1;
        }
        if (mut & MUT_UNIT) {
            h.stripe_unit = h.stripe_unit == STRIPE_MAX_UNIT
                            ? h.stripe_unit / 2 : h.stripe_unit * 2;
        }
        if (mut & MUT_COUNT) {
            h.node_count = h.node_count % STRIPE_MAX_NODES + 1;
        }
        if (mut & MUT_OFFSET) {
            sel = fuzz_u8(in);
            /* the data offset, or the header size of a later version */
            if (sel & 1) {
                h.header_size = 512 * (2 + sel % 8);
            } else {
                h.data_offset += 512 * (1 + sel);
            }
        }
        if (mut & MUT_GEN) {
            h.generation += (int8_t)fuzz_u8(in);
            h.virtual_size = fuzz_size(in);
            max_size = MAX(max_size, h.virtual_size);
        }
        if (mut & MUT_COMPAT) {
            h.compat_features = fuzz_u64(in);
        }
        if (mut & MUT_SHORT) {
            short_by[i] = 1 + fuzz_u8(in);
        }
        lens[i] = 512 * (uint64_t)fuzz_u8(in);
        if (!through_node(&h, &hdrs[i])) {
            /* open stops at a header it cannot decode */
            return;
        }
    }

    /* Big enough for the largest size any node claims, unless short. */
    stripe_geometry_init(&g, max_size, base.stripe_unit, base.data_offset,
                         MAX(count, 1));
    stripe_geometry_set_copies(&g, MIN(base.copies, MAX(count, 1)));
    needed = stripe_node_size_needed(&g);
    for (i = 0; i < count; i++) {
        lens[i] = short_by[i] ? needed - 512 * short_by[i]
                              : needed + lens[i];
    }
    check_assemble(hdrs, lens, count, false, in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in;

    if (size < 1) {
        return 0;
    }
    if (data[0] % 2 == 0) {
        fuzz_header(data + 1, size - 1);
    } else {
        fuzz_input_init(&in, data + 1, size - 1);
        fuzz_node_set(&in);
    }
    return 0;
}

/*
 * Seeds
 */

static const uint8_t seed_uuid[16] = {
    0x51, 0x7e, 0x9a, 0x02, 0xc4, 0x4f, 0x4b, 0x1d,
    0x8e, 0x33, 0x70, 0x05, 0xaa, 0x6c, 0x19, 0xd2,
};

static void seed_header(const char *dir, const char *name,
                        const StripeHeader *h, size_t len, bool reseal,
                        size_t poke_at, uint8_t poke)
{
    uint8_t buf[STRIPE_HEADER_SIZE];
    GByteArray *out = g_byte_array_new();

    stripe_header_encode(h, buf);
    if (poke_at < sizeof(buf)) {
        buf[poke_at] ^= poke;
    }
    if (reseal) {
        seal(buf);
    }
    fuzz_put_u8(out, 0);
    fuzz_put_bytes(out, buf, len);
    fuzz_write_seed(dir, name, out);
}

static void write_header_seeds(const char *dir)
{
    StripeHeader h = {
        .version = STRIPE_VERSION,
        .header_size = STRIPE_HEADER_SIZE,
        .node_index = 2,
        .node_count = 4,
        .stripe_unit = 64 * 1024,
        .virtual_size = 100 * 1024 * 1024,
        .data_offset = 1024 * 1024,
        .generation = 1,
        .copies = 1,
    };
    StripeHeader big = h, tiny = h, bad = h, copies = h;
    GByteArray *out;

    memcpy(h.uuid, seed_uuid, sizeof(h.uuid));
    seed_header(dir, "hdr-valid", &h, STRIPE_HEADER_SIZE, false, -1, 0);
    copies.copies = 2;
    memcpy(copies.uuid, seed_uuid, sizeof(copies.uuid));
    seed_header(dir, "hdr-copies", &copies, STRIPE_HEADER_SIZE, false, -1,
                0);
    seed_header(dir, "hdr-truncated", &h, 100, false, -1, 0);
    seed_header(dir, "hdr-corrupt", &h, STRIPE_HEADER_SIZE, false, 40, 1);
    seed_header(dir, "hdr-reserved", &h, STRIPE_HEADER_SIZE, true, 200, 7);
    big.node_index = 0;
    big.node_count = 1;
    big.stripe_unit = STRIPE_MAX_UNIT;
    big.data_offset = STRIPE_MAX_UNIT;
    big.virtual_size = STRIPE_MAX_SIZE;
    seed_header(dir, "hdr-largest", &big, STRIPE_HEADER_SIZE, false, -1, 0);
    tiny.node_index = STRIPE_MAX_NODES - 1;
    tiny.node_count = STRIPE_MAX_NODES;
    tiny.stripe_unit = STRIPE_MIN_UNIT;
    tiny.virtual_size = 0;
    seed_header(dir, "hdr-64-nodes", &tiny, STRIPE_HEADER_SIZE, false, -1,
                0);
    bad.version = 2;
    seed_header(dir, "hdr-version", &bad, STRIPE_HEADER_SIZE, false, -1, 0);
    bad = h;
    bad.incompat_features = 1;
    seed_header(dir, "hdr-incompat", &bad, STRIPE_HEADER_SIZE, false, -1, 0);
    bad = h;
    bad.node_index = bad.node_count;
    seed_header(dir, "hdr-index", &bad, STRIPE_HEADER_SIZE, false, -1, 0);
    bad = h;
    bad.stripe_unit = 3000;
    seed_header(dir, "hdr-unit", &bad, STRIPE_HEADER_SIZE, false, -1, 0);
    bad = h;
    bad.data_offset = 256;
    seed_header(dir, "hdr-offset", &bad, STRIPE_HEADER_SIZE, false, -1, 0);
    bad = h;
    bad.virtual_size = 1000;
    seed_header(dir, "hdr-size", &bad, STRIPE_HEADER_SIZE, false, -1, 0);

    out = g_byte_array_new();
    fuzz_put_u8(out, 0);
    g_byte_array_set_size(out, 1 + STRIPE_HEADER_SIZE);
    memset(out->data + 1, 0, STRIPE_HEADER_SIZE);
    fuzz_write_seed(dir, "hdr-blank", out);
    out = g_byte_array_new();
    fuzz_put_u8(out, 0);
    while (out->len < 1 + STRIPE_HEADER_SIZE) {
        fuzz_put_bytes(out, (const uint8_t *)"some other data ", 16);
    }
    fuzz_write_seed(dir, "hdr-foreign", out);
}

/* A node of a node-set seed: fields in the order fuzz_node_set reads. */
typedef struct SeedNode {
    uint8_t pos, mut, arg, len;
} SeedNode;

static void seed_set(const char *dir, const char *name, uint8_t count,
                     uint8_t count_sel, uint8_t unit_sel, uint64_t size,
                     const SeedNode *nodes, int n)
{
    GByteArray *out = g_byte_array_new();
    int i;

    fuzz_put_u8(out, 1);
    fuzz_put_u8(out, count);
    fuzz_put_bytes(out, seed_uuid, sizeof(seed_uuid));
    fuzz_put_u8(out, count_sel);
    fuzz_put_u8(out, unit_sel);
    fuzz_put_u8(out, 0);                /* default data offset */
    fuzz_put_u64(out, size / 512);
    fuzz_put_u64(out, 1);               /* generation */
    for (i = 0; i < n; i++) {
        fuzz_put_u8(out, nodes[i].pos);
        fuzz_put_u8(out, nodes[i].mut);
        if (nodes[i].mut & MUT_INDEX) {
            fuzz_put_u8(out, nodes[i].arg);
        }
        if (nodes[i].mut & MUT_UUID) {
            fuzz_put_u8(out, nodes[i].arg);
        }
        if (nodes[i].mut & MUT_OFFSET) {
            fuzz_put_u8(out, nodes[i].arg);
        }
        if (nodes[i].mut & MUT_GEN) {
            fuzz_put_u8(out, nodes[i].arg);
            fuzz_put_u64(out, size / 512 * 2);
        }
        if (nodes[i].mut & MUT_COMPAT) {
            fuzz_put_u64(out, UINT64_C(0x8000000000000001));
        }
        if (nodes[i].mut & MUT_SHORT) {
            fuzz_put_u8(out, nodes[i].arg);
        }
        fuzz_put_u8(out, nodes[i].len);
    }
    /* a few map offsets */
    fuzz_put_u8(out, 3);
    fuzz_put_u64(out, size / 3);
    fuzz_put_u64(out, size / 7 * 5);
    fuzz_put_u64(out, UINT64_MAX);
    fuzz_write_seed(dir, name, out);
}

static void write_set_seeds(const char *dir)
{
    static const SeedNode four[] = {
        { 3, 0, 0, 0 }, { 0, 0, 0, 1 }, { 1, 0, 0, 0 }, { 0, 0, 0, 8 },
    };
    static const SeedNode stale[] = {
        { 0, 0, 0, 0 }, { 0, MUT_GEN, 0xff, 0 }, { 0, 0, 0, 0 },
    };
    static const SeedNode twice[] = {
        { 0, 0, 0, 0 }, { 0, MUT_INDEX, 0, 0 }, { 0, 0, 0, 0 },
    };
    static const SeedNode foreign[] = {
        { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, MUT_UUID, 5, 0 },
    };
    static const SeedNode mixed[] = {
        { 0, MUT_UNIT, 0, 0 }, { 0, MUT_COUNT, 0, 0 },
        { 0, MUT_OFFSET, 1, 0 }, { 0, MUT_COMPAT, 0, 0 },
    };
    static const SeedNode small[] = {
        { 1, 0, 0, 0 }, { 0, MUT_SHORT, 0, 0 },
    };
    SeedNode many[SET_MAX];
    int i;

    for (i = 0; i < SET_MAX; i++) {
        many[i] = (SeedNode) { (uint8_t)(i * 7), 0, 0, 0 };
    }
    seed_set(dir, "set-4", 4, 0, 7, 100 << 20, four, 4);
    seed_set(dir, "set-1", 1, 0, 0, 512, four, 1);
    seed_set(dir, "set-64", 64, 0, 17, UINT64_C(1) << 40, many, 64);
    seed_set(dir, "set-too-many", SET_MAX, 0, 3, 1 << 30, many, SET_MAX);
    seed_set(dir, "set-stale", 3, 0, 8, 3 << 20, stale, 3);
    seed_set(dir, "set-twice", 3, 0, 8, 3 << 20, twice, 3);
    seed_set(dir, "set-missing", 3, 3, 8, 3 << 20, four, 3);
    seed_set(dir, "set-foreign", 3, 0, 8, 3 << 20, foreign, 3);
    seed_set(dir, "set-geometry", 4, 0, 8, 3 << 20, mixed, 4);
    seed_set(dir, "set-small", 2, 0, 8, 3 << 20, small, 2);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("SC_FUZZ_SEED_CORPUS");

    if (dir) {
        write_header_seeds(dir);
        write_set_seeds(dir);
        exit(0);
    }
    return 0;
}
