/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-layout: the on-node header and the RAID-0 geometry of a striped
 * disk.  See stripe-layout.h and docs/layout.md.
 */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "stripe-layout.h"

/*
 * Encoded header, all integers little-endian:
 *
 *   0  magic[8]            "QSTRIPE\x1a"
 *   8  version             u32
 *  12  header_size         u32
 *  16  uuid[16]
 *  32  node_index          u32
 *  36  node_count          u32
 *  40  stripe_unit         u64
 *  48  virtual_size        u64
 *  56  data_offset         u64
 *  64  compat_features     u64
 *  72  incompat_features   u64
 *  80  generation          u64
 *  88  copies              u32 (with STRIPE_INCOMPAT_COPIES, else zero)
 *  92  reserved, zero      u32
 *  96  failed              u64 (with STRIPE_INCOMPAT_COPIES, else zero)
 * 104  bitmap_region       u64 (with STRIPE_INCOMPAT_BITMAP, else zero)
 * 112  bitmap_offset       u64 (with STRIPE_INCOMPAT_BITMAP, else zero)
 * 120  incarnation[64]     u32 each (with STRIPE_COMPAT_INCARNATIONS)
 * 376  reserved, zero
 * 508  crc32 (zlib) of bytes 0..507
 */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 8,
    OFF_HEADER_SIZE = 12,
    OFF_UUID = 16,
    OFF_NODE_INDEX = 32,
    OFF_NODE_COUNT = 36,
    OFF_STRIPE_UNIT = 40,
    OFF_VIRTUAL_SIZE = 48,
    OFF_DATA_OFFSET = 56,
    OFF_COMPAT = 64,
    OFF_INCOMPAT = 72,
    OFF_GENERATION = 80,
    OFF_COPIES = 88,
    OFF_FAILED = 96,
    OFF_BITMAP_REGION = 104,
    OFF_BITMAP_OFFSET = 112,
    OFF_INCARNATION = 120,
    OFF_CRC = STRIPE_HEADER_SIZE - 4,
};

#define MAX_HEADER_SIZE     (64 * 1024)
#define MAX_DATA_OFFSET     (UINT64_C(1) << 30)

static void put_le32(uint8_t *p, uint32_t v)
{
    int i;

    for (i = 0; i < 4; i++) {
        p[i] = v >> (8 * i);
    }
}

static void put_le64(uint8_t *p, uint64_t v)
{
    int i;

    for (i = 0; i < 8; i++) {
        p[i] = v >> (8 * i);
    }
}

static uint32_t get_le32(const uint8_t *p)
{
    return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t get_le64(const uint8_t *p)
{
    return get_le32(p) | ((uint64_t)get_le32(p + 4) << 32);
}

static uint32_t header_crc(const uint8_t *buf)
{
    return crc32(0, buf, OFF_CRC);
}

static bool is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

void stripe_header_encode(const StripeHeader *h, uint8_t *buf)
{
    int i;

    memset(buf, 0, STRIPE_HEADER_SIZE);
    memcpy(buf + OFF_MAGIC, STRIPE_MAGIC, STRIPE_MAGIC_LEN);
    put_le32(buf + OFF_VERSION, h->version);
    put_le32(buf + OFF_HEADER_SIZE, h->header_size);
    memcpy(buf + OFF_UUID, h->uuid, 16);
    put_le32(buf + OFF_NODE_INDEX, h->node_index);
    put_le32(buf + OFF_NODE_COUNT, h->node_count);
    put_le64(buf + OFF_STRIPE_UNIT, h->stripe_unit);
    put_le64(buf + OFF_VIRTUAL_SIZE, h->virtual_size);
    put_le64(buf + OFF_DATA_OFFSET, h->data_offset);
    put_le64(buf + OFF_COMPAT, h->compat_features);
    /* the bit says whether there is a copy count: set exactly then */
    put_le64(buf + OFF_INCOMPAT,
             (h->incompat_features & ~STRIPE_INCOMPAT_COPIES) |
             (h->copies > 1 ? STRIPE_INCOMPAT_COPIES : 0));
    put_le64(buf + OFF_GENERATION, h->generation);
    if (h->copies > 1) {
        put_le32(buf + OFF_COPIES, h->copies);
        put_le64(buf + OFF_FAILED, h->failed);
    }
    if (h->compat_features & STRIPE_COMPAT_INCARNATIONS) {
        for (i = 0; i < STRIPE_MAX_NODES; i++) {
            put_le32(buf + OFF_INCARNATION + 4 * i, h->incarnation[i]);
        }
    }
    if (h->incompat_features & STRIPE_INCOMPAT_BITMAP) {
        put_le64(buf + OFF_BITMAP_REGION, h->bitmap_region);
        put_le64(buf + OFF_BITMAP_OFFSET, h->bitmap_offset);
    }
    put_le32(buf + OFF_CRC, header_crc(buf));
}

bool stripe_buf_is_zero(const uint8_t *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (buf[i]) {
            return false;
        }
    }
    return true;
}

static void set_err(char **errmsg, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void set_err(char **errmsg, const char *fmt, ...)
{
    va_list ap;

    if (!errmsg) {
        return;
    }
    va_start(ap, fmt);
    *errmsg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

/* The bitmap fields: returns false with *errmsg set. */
static bool header_bitmap_valid(const StripeHeader *h, char **errmsg)
{
    g_autofree char *msg = NULL;

    if (!(h->incompat_features & STRIPE_INCOMPAT_BITMAP)) {
        return true;
    }
    if (h->copies == 1) {
        set_err(errmsg, "write-intent bitmap without copies");
        return false;
    }
    if (h->bitmap_offset < h->header_size ||
        h->bitmap_offset % STRIPE_BITMAP_BLOCK) {
        set_err(errmsg, "invalid bitmap offset %" PRIu64, h->bitmap_offset);
        return false;
    }
    msg = stripe_bitmap_check(h->virtual_size, h->bitmap_region,
                              h->bitmap_offset, h->data_offset);
    if (msg) {
        set_err(errmsg, "invalid bitmap: %s", msg);
        return false;
    }
    return true;
}

/* Field checks shared by decode; returns false with *errmsg set. */
static bool header_fields_valid(const StripeHeader *h, char **errmsg)
{
    if (h->header_size < STRIPE_HEADER_SIZE ||
        h->header_size > MAX_HEADER_SIZE || h->header_size % 512) {
        set_err(errmsg, "invalid header size %u", h->header_size);
        return false;
    }
    if (h->node_count < 1 || h->node_count > STRIPE_MAX_NODES) {
        set_err(errmsg, "invalid node count %u (1 to %d)", h->node_count,
                STRIPE_MAX_NODES);
        return false;
    }
    if (h->node_index >= h->node_count) {
        set_err(errmsg, "node index %u out of range for %u nodes",
                h->node_index, h->node_count);
        return false;
    }
    if (!is_pow2(h->stripe_unit) || h->stripe_unit < STRIPE_MIN_UNIT ||
        h->stripe_unit > STRIPE_MAX_UNIT) {
        set_err(errmsg, "invalid stripe unit %" PRIu64, h->stripe_unit);
        return false;
    }
    if (h->data_offset < h->header_size || h->data_offset % 512 ||
        h->data_offset > MAX_DATA_OFFSET) {
        set_err(errmsg, "invalid data offset %" PRIu64, h->data_offset);
        return false;
    }
    if (h->virtual_size % 512 || h->virtual_size > STRIPE_MAX_SIZE) {
        set_err(errmsg, "invalid virtual size %" PRIu64, h->virtual_size);
        return false;
    }
    if (h->copies < 1 || h->copies > STRIPE_MAX_COPIES ||
        h->copies > h->node_count ||
        (h->copies == 1) != !(h->incompat_features & STRIPE_INCOMPAT_COPIES)) {
        set_err(errmsg, "invalid copy count %u (%u nodes)", h->copies,
                h->node_count);
        return false;
    }
    if ((h->node_count < 64 && h->failed >> h->node_count) ||
        (h->failed >> h->node_index) & 1) {
        set_err(errmsg, "invalid failed nodes 0x%" PRIx64 " (node %u of %u)",
                h->failed, h->node_index, h->node_count);
        return false;
    }
    return header_bitmap_valid(h, errmsg);
}

StripeHeaderStatus stripe_header_decode(const uint8_t *buf, size_t len,
                                        StripeHeader *h, char **errmsg)
{
    uint32_t crc;
    int i;

    if (len < STRIPE_HEADER_SIZE) {
        set_err(errmsg, "node is smaller than a stripe header");
        return STRIPE_HEADER_BLANK;
    }
    if (memcmp(buf + OFF_MAGIC, STRIPE_MAGIC, STRIPE_MAGIC_LEN)) {
        if (stripe_buf_is_zero(buf, STRIPE_HEADER_SIZE)) {
            set_err(errmsg, "no stripe header (node is not formatted)");
            return STRIPE_HEADER_BLANK;
        }
        set_err(errmsg, "no stripe header (node holds other data)");
        return STRIPE_HEADER_FOREIGN;
    }
    crc = get_le32(buf + OFF_CRC);
    if (crc != header_crc(buf)) {
        set_err(errmsg, "stripe header checksum mismatch (stored 0x%08x, "
                "computed 0x%08x): header is corrupted", crc,
                header_crc(buf));
        return STRIPE_HEADER_CORRUPT;
    }

    h->version = get_le32(buf + OFF_VERSION);
    h->header_size = get_le32(buf + OFF_HEADER_SIZE);
    memcpy(h->uuid, buf + OFF_UUID, 16);
    h->node_index = get_le32(buf + OFF_NODE_INDEX);
    h->node_count = get_le32(buf + OFF_NODE_COUNT);
    h->stripe_unit = get_le64(buf + OFF_STRIPE_UNIT);
    h->virtual_size = get_le64(buf + OFF_VIRTUAL_SIZE);
    h->data_offset = get_le64(buf + OFF_DATA_OFFSET);
    h->compat_features = get_le64(buf + OFF_COMPAT);
    h->incompat_features = get_le64(buf + OFF_INCOMPAT);
    h->generation = get_le64(buf + OFF_GENERATION);
    h->copies = h->incompat_features & STRIPE_INCOMPAT_COPIES ?
                get_le32(buf + OFF_COPIES) : 1;
    h->failed = h->incompat_features & STRIPE_INCOMPAT_COPIES ?
                get_le64(buf + OFF_FAILED) : 0;
    h->bitmap_region = h->incompat_features & STRIPE_INCOMPAT_BITMAP ?
                       get_le64(buf + OFF_BITMAP_REGION) : 0;
    h->bitmap_offset = h->incompat_features & STRIPE_INCOMPAT_BITMAP ?
                       get_le64(buf + OFF_BITMAP_OFFSET) : 0;
    for (i = 0; i < STRIPE_MAX_NODES; i++) {
        h->incarnation[i] =
            h->compat_features & STRIPE_COMPAT_INCARNATIONS ?
            get_le32(buf + OFF_INCARNATION + 4 * i) : 0;
    }

    if (h->version != STRIPE_VERSION) {
        set_err(errmsg, "stripe header version %u is not supported "
                "(this QEMU supports version %d)", h->version,
                STRIPE_VERSION);
        return STRIPE_HEADER_UNSUPPORTED;
    }
    if (h->incompat_features & ~STRIPE_INCOMPAT_KNOWN) {
        set_err(errmsg, "unsupported incompatible features 0x%" PRIx64,
                h->incompat_features & ~STRIPE_INCOMPAT_KNOWN);
        return STRIPE_HEADER_UNSUPPORTED;
    }
    if (!header_fields_valid(h, errmsg)) {
        return STRIPE_HEADER_INVALID;
    }
    return STRIPE_HEADER_OK;
}

char *stripe_geometry_check(uint64_t virtual_size, uint64_t stripe_unit,
                            uint32_t node_count, uint32_t copies)
{
    if (!is_pow2(stripe_unit)) {
        return g_strdup_printf("stripe-unit %" PRIu64 " is not a power of "
                               "two", stripe_unit);
    }
    if (stripe_unit < STRIPE_MIN_UNIT || stripe_unit > STRIPE_MAX_UNIT) {
        return g_strdup_printf("stripe-unit %" PRIu64 " is out of range "
                               "(%d to %d bytes)", stripe_unit,
                               STRIPE_MIN_UNIT, STRIPE_MAX_UNIT);
    }
    if (node_count < 1 || node_count > STRIPE_MAX_NODES) {
        return g_strdup_printf("%u nodes given, a stripe needs 1 to %d",
                               node_count, STRIPE_MAX_NODES);
    }
    if (copies < 1 || copies > MIN(node_count, STRIPE_MAX_COPIES)) {
        return g_strdup_printf("copies %u is out of range (1 to %u with "
                               "%u nodes)", copies,
                               MIN(node_count, STRIPE_MAX_COPIES),
                               node_count);
    }
    if (virtual_size > STRIPE_MAX_SIZE) {
        return g_strdup_printf("size %" PRIu64 " is larger than the "
                               "maximum %" PRIu64, virtual_size,
                               STRIPE_MAX_SIZE);
    }
    if (virtual_size % 512) {
        return g_strdup_printf("size %" PRIu64 " is not a multiple of 512",
                               virtual_size);
    }
    return NULL;
}

uint64_t stripe_bitmap_regions(uint64_t virtual_size, uint64_t region)
{
    return (virtual_size + region - 1) / region;
}

uint64_t stripe_bitmap_bytes(uint64_t virtual_size, uint64_t region)
{
    uint64_t bytes = (stripe_bitmap_regions(virtual_size, region) + 7) / 8;

    return (bytes + STRIPE_BITMAP_BLOCK - 1) /
           STRIPE_BITMAP_BLOCK * STRIPE_BITMAP_BLOCK;
}

char *stripe_bitmap_check(uint64_t virtual_size, uint64_t region,
                          uint64_t bitmap_offset, uint64_t data_offset)
{
    uint64_t room, need;

    if (!is_pow2(region) || region < STRIPE_MIN_BITMAP_REGION ||
        region > STRIPE_MAX_BITMAP_REGION) {
        return g_strdup_printf("bitmap-region %" PRIu64 " is not a power of "
                               "two from %d to %" PRIu64 " bytes", region,
                               STRIPE_MIN_BITMAP_REGION,
                               STRIPE_MAX_BITMAP_REGION);
    }
    room = data_offset > bitmap_offset ? data_offset - bitmap_offset : 0;
    need = stripe_bitmap_bytes(virtual_size, region);
    if (need > room) {
        return g_strdup_printf("size %" PRIu64 " with bitmap-region %"
                               PRIu64 " needs a bitmap of %" PRIu64 " bytes, "
                               "but the nodes have room for %" PRIu64 ": "
                               "choose a larger bitmap-region",
                               virtual_size, region, need, room);
    }
    return NULL;
}

void stripe_geometry_set_bitmap(StripeGeometry *g, uint64_t region)
{
    assert(g->copies > 1 && is_pow2(region));
    g->bitmap_region = region;
    g->bitmap_offset = STRIPE_BITMAP_OFFSET;
}

uint64_t stripe_default_data_offset(uint64_t stripe_unit)
{
    return MAX(STRIPE_MIN_DATA_OFFSET, stripe_unit);
}

void stripe_geometry_init(StripeGeometry *g, uint64_t virtual_size,
                          uint64_t stripe_unit, uint64_t data_offset,
                          uint32_t node_count)
{
    g->virtual_size = virtual_size;
    g->stripe_unit = stripe_unit;
    g->data_offset = data_offset;
    g->node_count = node_count;
    g->copies = 1;
    g->unit_shift = __builtin_ctzll(stripe_unit);
    g->bitmap_region = 0;
    g->bitmap_offset = 0;
}

void stripe_geometry_set_copies(StripeGeometry *g, uint32_t copies)
{
    assert(copies >= 1 && copies <= STRIPE_MAX_COPIES &&
           copies <= g->node_count);
    g->copies = copies;
}

bool stripe_geometry_lost_unit(const StripeGeometry *g, uint64_t failed,
                               uint64_t *unit)
{
    /* The placement repeats every N - c + 1 rows: look at one period. */
    uint64_t units = (uint64_t)g->node_count *
                     (g->node_count - g->copies + 1);
    uint64_t k;
    uint32_t copy, node;
    uint64_t node_offset;

    for (k = 0; k < units && failed; k++) {
        for (copy = 0; copy < g->copies; copy++) {
            stripe_map_copy(g, k << g->unit_shift, copy, &node,
                            &node_offset);
            if (!((failed >> node) & 1)) {
                break;
            }
        }
        if (copy == g->copies) {
            if (unit) {
                *unit = k;
            }
            return true;
        }
    }
    return false;
}

uint64_t stripe_node_size_needed(const StripeGeometry *g)
{
    uint64_t units = (g->virtual_size + g->stripe_unit - 1) >> g->unit_shift;
    uint64_t rows = (units + g->node_count - 1) / g->node_count;

    return g->data_offset + ((rows * g->copies) << g->unit_shift);
}

uint64_t stripe_map_copy(const StripeGeometry *g, uint64_t offset,
                         uint32_t copy, uint32_t *node,
                         uint64_t *node_offset)
{
    uint64_t unit = offset >> g->unit_shift;
    uint64_t in_unit = offset & (g->stripe_unit - 1);
    uint64_t row = unit / g->node_count;
    uint32_t column = unit % g->node_count;
    uint32_t shift = 0;

    assert(copy < g->copies);
    if (copy) {
        /* the rotation: 0 .. N - c, so copies never reach the primary */
        shift = copy + row % (g->node_count - g->copies + 1);
    }
    *node = (column + shift) % g->node_count;
    *node_offset = g->data_offset +
        ((row * g->copies + copy) << g->unit_shift) + in_unit;
    return g->stripe_unit - in_unit;
}

uint64_t stripe_map(const StripeGeometry *g, uint64_t offset,
                    uint32_t *node, uint64_t *node_offset)
{
    return stripe_map_copy(g, offset, 0, node, node_offset);
}

void stripe_uuid_unparse(const uint8_t *u, char *buf)
{
    snprintf(buf, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5],
             u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
}

/* Whether the node at position @i of the user's list has no header. */
static bool is_absent(uint64_t absent, uint32_t i)
{
    return (absent >> i) & 1;
}

/*
 * Whether two headers describe the same image: its UUID and every field
 * that all nodes must share.
 */
static bool same_image(const StripeHeader *a, const StripeHeader *b)
{
    return !memcmp(a->uuid, b->uuid, 16) &&
           a->node_count == b->node_count &&
           a->stripe_unit == b->stripe_unit &&
           a->data_offset == b->data_offset &&
           a->copies == b->copies &&
           a->bitmap_region == b->bitmap_region &&
           a->bitmap_offset == b->bitmap_offset &&
           a->header_size == b->header_size;
}

/*
 * The image most nodes describe (the first one on a tie), so that a
 * node that disagrees is named as the odd one out even when it comes
 * first in the user's list.
 */
static uint32_t majority_node(const StripeHeader *hdrs, uint32_t count,
                              uint64_t absent)
{
    uint32_t best = 0, best_votes = 0, i, j, votes;

    for (i = 0; i < count; i++) {
        if (is_absent(absent, i)) {
            continue;
        }
        votes = 0;
        for (j = 0; j < count; j++) {
            votes += !is_absent(absent, j) && same_image(&hdrs[i], &hdrs[j]);
        }
        if (votes > best_votes) {
            best = i;
            best_votes = votes;
        }
    }
    return best;
}

/*
 * The failed nodes of an image whose headers passed every other check: a
 * node is failed when a node with a newer header lists it.  An older
 * listing is one the node outlived (it was resynced since, and the lister's
 * header was not rewritten yet).  Two nodes that list each other were each
 * written while the other was away: neither holds all the data.
 */
static bool assemble_failed(const StripeHeader *hdrs, uint32_t count,
                            uint64_t absent, StripeAssembly *out,
                            int *errnode, char **errmsg)
{
    uint64_t unit;
    uint32_t i, j, x, y;

    out->failed = out->absent;
    for (i = 0; i < count; i++) {
        for (j = 0; j < count; j++) {
            if (is_absent(absent, i) || is_absent(absent, j)) {
                continue;
            }
            x = hdrs[i].node_index;
            y = hdrs[j].node_index;
            if (!((hdrs[j].failed >> x) & 1)) {
                continue;
            }
            if ((hdrs[i].failed >> y) & 1) {
                *errnode = MAX(i, j);
                out->twin = MIN(i, j);
                out->split_brain = true;
                set_err(errmsg, "split brain: node indices %u and %u each "
                        "list the other as failed (each was written while "
                        "the other was away); neither holds all the data",
                        x, y);
                return false;
            }
            if (hdrs[j].generation > hdrs[i].generation) {
                out->failed |= UINT64_C(1) << x;
            }
        }
    }
    if (stripe_geometry_lost_unit(&out->geo, out->failed, &unit)) {
        GString *list = g_string_new(NULL);

        for (x = 0; x < count; x++) {
            if ((out->failed >> x) & 1) {
                g_string_append_printf(list, "%s%u", list->len ? ", " : "",
                                       x);
            }
        }
        set_err(errmsg, "too many failed nodes: node indices %s are failed "
                "and hold every copy of stripe unit %" PRIu64 " (copies %u)",
                list->str, unit, out->geo.copies);
        g_string_free(list, true);
        return false;
    }
    return true;
}

bool stripe_assemble(const StripeHeader *hdrs, const uint64_t *node_len,
                     uint32_t count, StripeAssembly *out, int *errnode,
                     char **errmsg)
{
    return stripe_assemble_absent(hdrs, node_len, count, 0, out, errnode,
                                  errmsg);
}

bool stripe_assemble_absent(const StripeHeader *hdrs,
                            const uint64_t *node_len, uint32_t count,
                            uint64_t absent, StripeAssembly *out,
                            int *errnode, char **errmsg)
{
    const StripeHeader *ref;
    char want[37], got[37];
    int32_t seen[STRIPE_MAX_NODES];
    uint32_t index_of[STRIPE_MAX_NODES];
    uint64_t needed;
    uint32_t i, idx, newest;

    *errnode = -1;
    out->twin = -1;
    out->absent = 0;
    if (count < 1 || count > STRIPE_MAX_NODES) {
        set_err(errmsg, "%u nodes given, a stripe needs 1 to %d", count,
                STRIPE_MAX_NODES);
        return false;
    }
    if (absent == (count == 64 ? UINT64_MAX : (UINT64_C(1) << count) - 1)) {
        set_err(errmsg, "none of the %u nodes could be opened", count);
        return false;
    }
    ref = &hdrs[majority_node(hdrs, count, absent)];
    stripe_uuid_unparse(ref->uuid, want);

    for (i = 0; i < count; i++) {
        if (is_absent(absent, i)) {
            continue;
        }
        if (memcmp(hdrs[i].uuid, ref->uuid, 16)) {
            stripe_uuid_unparse(hdrs[i].uuid, got);
            *errnode = i;
            set_err(errmsg, "belongs to another image (UUID %s, the other "
                    "nodes have %s)", got, want);
            return false;
        }
        if (hdrs[i].node_count != ref->node_count ||
            hdrs[i].stripe_unit != ref->stripe_unit ||
            hdrs[i].data_offset != ref->data_offset) {
            *errnode = i;
            set_err(errmsg, "geometry disagrees with the other nodes "
                    "(%u nodes, stripe unit %" PRIu64 ", data offset %"
                    PRIu64 " instead of %u, %" PRIu64 ", %" PRIu64 ")",
                    hdrs[i].node_count, hdrs[i].stripe_unit,
                    hdrs[i].data_offset, ref->node_count, ref->stripe_unit,
                    ref->data_offset);
            return false;
        }
        if (hdrs[i].copies != ref->copies) {
            *errnode = i;
            set_err(errmsg, "copies %u disagrees with the other nodes (%u)",
                    hdrs[i].copies, ref->copies);
            return false;
        }
        if (hdrs[i].bitmap_region != ref->bitmap_region ||
            hdrs[i].bitmap_offset != ref->bitmap_offset) {
            *errnode = i;
            set_err(errmsg, "bitmap (region %" PRIu64 ", offset %" PRIu64
                    ") disagrees with the other nodes (%" PRIu64 ", %"
                    PRIu64 ")", hdrs[i].bitmap_region,
                    hdrs[i].bitmap_offset, ref->bitmap_region,
                    ref->bitmap_offset);
            return false;
        }
        /* One image has one header format: a mix is no image of ours. */
        if (hdrs[i].header_size != ref->header_size) {
            *errnode = i;
            set_err(errmsg, "header size %u disagrees with the other nodes "
                    "(%u)", hdrs[i].header_size, ref->header_size);
            return false;
        }
    }

    memset(seen, -1, sizeof(seen));
    for (i = 0; i < count; i++) {
        if (is_absent(absent, i)) {
            continue;
        }
        idx = hdrs[i].node_index;
        index_of[i] = idx;
        if (seen[idx] >= 0) {
            *errnode = i;
            out->twin = seen[idx];
            set_err(errmsg, "claims node index %u, like node %d (the same "
                    "node given twice?)", idx, seen[idx]);
            return false;
        }
        seen[idx] = i;
    }
    if (count != ref->node_count) {
        for (i = 0; i < ref->node_count; i++) {
            if (seen[i] < 0) {
                set_err(errmsg, "image %s has %u nodes but %u were given: "
                        "the node with index %u is missing", want,
                        ref->node_count, count, i);
                return false;
            }
        }
        /* Unreachable: indices are unique and < node_count. */
        set_err(errmsg, "image %s has %u nodes but %u were given", want,
                ref->node_count, count);
        return false;
    }
    /*
     * The nodes without a header take the indices no header claims, in
     * order: which absent node has which index is not known, and does not
     * matter while they are absent.
     */
    idx = 0;
    for (i = 0; i < count; i++) {
        if (!is_absent(absent, i)) {
            continue;
        }
        while (seen[idx] >= 0) {
            idx++;
        }
        seen[idx] = i;
        index_of[i] = idx;
        out->absent |= UINT64_C(1) << idx;
    }

    newest = ref - hdrs;
    for (i = 0; i < count; i++) {
        if (!is_absent(absent, i) &&
            hdrs[i].generation > hdrs[newest].generation) {
            newest = i;
        }
    }
    for (i = 0; i < count; i++) {
        if (is_absent(absent, i)) {
            continue;
        }
        if (hdrs[i].generation == hdrs[newest].generation &&
            hdrs[i].virtual_size != hdrs[newest].virtual_size) {
            *errnode = i;
            set_err(errmsg, "virtual size %" PRIu64 " disagrees with node %u "
                    "(%" PRIu64 ") at the same generation %" PRIu64,
                    hdrs[i].virtual_size, newest, hdrs[newest].virtual_size,
                    hdrs[i].generation);
            return false;
        }
        idx = hdrs[i].node_index;
        if (hdrs[i].incarnation[idx] != hdrs[newest].incarnation[idx]) {
            *errnode = i;
            set_err(errmsg, "was node index %u before another node was put "
                    "in its place (incarnation %08" PRIx32 ", the image's %08"
                    PRIx32 "): its data is out of date; give the node that "
                    "replaced it", idx, hdrs[i].incarnation[idx],
                    hdrs[newest].incarnation[idx]);
            return false;
        }
    }
    memcpy(out->incarnation, hdrs[newest].incarnation,
           sizeof(out->incarnation));

    stripe_geometry_init(&out->geo, hdrs[newest].virtual_size,
                         ref->stripe_unit, ref->data_offset, count);
    stripe_geometry_set_copies(&out->geo, ref->copies);
    out->geo.bitmap_region = ref->bitmap_region;
    out->geo.bitmap_offset = ref->bitmap_offset;
    memcpy(out->uuid, ref->uuid, 16);
    out->generation = hdrs[newest].generation;
    out->split_brain = false;
    if (!assemble_failed(hdrs, count, absent, out, errnode, errmsg)) {
        return false;
    }
    needed = stripe_node_size_needed(&out->geo);
    for (i = 0; i < count; i++) {
        idx = index_of[i];
        out->order[idx] = i;
        if (is_absent(absent, i)) {
            out->stale[idx] = false;
            continue;
        }
        if (node_len[i] < needed) {
            *errnode = i;
            set_err(errmsg, "node is too small: %" PRIu64 " bytes, the "
                    "image needs %" PRIu64, node_len[i], needed);
            return false;
        }
        out->stale[idx] = hdrs[i].generation != out->generation &&
                          !((out->failed >> idx) & 1);
    }
    return true;
}
