/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-layout: the on-node header and the RAID-0 geometry of a striped
 * disk.
 *
 * Plain C and glib only (no QEMU headers), so that it is unit-tested and
 * fuzzed on its own.
 *
 * Every node starts with a header sector describing the whole image (like an
 * md superblock).  Guest data starts at data_offset on every node:
 * stripe unit k of the virtual disk lives on node k % node_count, at node
 * offset data_offset + (k / node_count) * stripe_unit.
 *
 * With copies c > 1 (replicated layouts, docs/layout.md) every unit is
 * stored on c distinct nodes.  Unit k is in row r = k / N at column
 * p = k % N, N the node count.  Each row takes c unit slots on every node,
 * rows one after the other: slot 0 holds the unit of the node's own column
 * (its primary copy), slot j (0 < j < c) copy j of a unit of another
 * column.  Copy j of unit k is on node (p + j + t) % N, t = r % (N - c + 1),
 * at node offset data_offset + (r * c + j) * stripe_unit: the copies move
 * one node further every row, so that the units of a failed node are read
 * from all the others.  With c = 1 this is the RAID-0 layout above.
 */
#ifndef STRIPE_LAYOUT_H
#define STRIPE_LAYOUT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define STRIPE_MAGIC            "QSTRIPE\x1a"
#define STRIPE_MAGIC_LEN        8
#define STRIPE_VERSION          1
#define STRIPE_HEADER_SIZE      512     /* encoded size, one sector */

#define STRIPE_MIN_UNIT         512
#define STRIPE_MAX_UNIT         (64 * 1024 * 1024)
#define STRIPE_MAX_NODES        64
#define STRIPE_MAX_COPIES       3
#define STRIPE_MIN_DATA_OFFSET  (1024 * 1024)
/* The data offset follows a node's allocation unit up to this size. */
#define STRIPE_MAX_NODE_ALLOC_UNIT  (64 * 1024 * 1024)

/*
 * The write-intent bitmap: bit i (byte i / 8, bit i % 8) stands for the
 * virtual bytes [i * region, (i + 1) * region).  It starts at
 * STRIPE_BITMAP_OFFSET on every node, before the data, and is written in
 * blocks of STRIPE_BITMAP_BLOCK bytes.
 */
#define STRIPE_BITMAP_OFFSET    4096
#define STRIPE_BITMAP_BLOCK     4096
#define STRIPE_MIN_BITMAP_REGION    (64 * 1024)
#define STRIPE_MAX_BITMAP_REGION    (UINT64_C(1) << 30)
/* Keeps every offset computation far from 64-bit overflow. */
#define STRIPE_MAX_SIZE         (UINT64_C(1) << 60)

/*
 * Feature bits.  A reader must refuse an image with an incompatible bit it
 * does not know, and may ignore unknown compatible bits, so that later
 * versions add features without a version bump.
 *
 * STRIPE_INCOMPAT_COPIES: every unit is stored on StripeHeader.copies
 * nodes (2 or more; without the bit there is one copy, and an older build
 * that does not know the bit refuses the image rather than misread it).
 */
#define STRIPE_INCOMPAT_COPIES  (UINT64_C(1) << 0)
/*
 * STRIPE_INCOMPAT_BITMAP: a replicated image keeps a write-intent bitmap
 * on every node (bitmap_offset, bitmap_region).  Incompatible because a
 * writer that does not mark it would leave regions that differ between
 * copies looking clean.
 */
#define STRIPE_INCOMPAT_BITMAP  (UINT64_C(1) << 1)
#define STRIPE_INCOMPAT_KNOWN   (STRIPE_INCOMPAT_COPIES | \
                                 STRIPE_INCOMPAT_BITMAP)
/*
 * STRIPE_COMPAT_INCARNATIONS: a replicated image's headers list, per
 * node index, which node holds it (StripeHeader.incarnation).  A build
 * that does not know the bit ignores the list, and writes none.
 */
#define STRIPE_COMPAT_INCARNATIONS  (UINT64_C(1) << 0)
#define STRIPE_COMPAT_KNOWN     STRIPE_COMPAT_INCARNATIONS

typedef struct StripeHeader {
    uint32_t version;
    uint32_t header_size;
    uint8_t uuid[16];
    uint32_t node_index;
    uint32_t node_count;
    uint64_t stripe_unit;
    uint64_t virtual_size;
    uint64_t data_offset;
    uint64_t compat_features;
    uint64_t incompat_features;
    uint64_t generation;        /* bumped by every header rewrite */
    uint32_t copies;            /* 1, or with STRIPE_INCOMPAT_COPIES 2.. */
    /*
     * With copies > 1: a bit per node index, the nodes the writer of this
     * header had marked failed (their data is out of date); else zero.
     */
    uint64_t failed;
    /* with STRIPE_INCOMPAT_BITMAP, else zero */
    uint64_t bitmap_region;     /* bytes of guest data per bit */
    uint64_t bitmap_offset;     /* where the bitmap starts on the node */
    /*
     * With copies > 1, per node index: which node holds it.  Zero for the
     * node it was created on; a new random value each time another node
     * is put in its place (stripe-node-replace), so that the node it
     * replaced, out of date, is never taken for it.
     */
    uint32_t incarnation[STRIPE_MAX_NODES];
} StripeHeader;

typedef struct StripeGeometry {
    uint64_t virtual_size;
    uint64_t stripe_unit;
    uint64_t data_offset;
    uint32_t node_count;
    uint32_t copies;            /* 1: RAID-0; at most node_count */
    unsigned unit_shift;        /* log2(stripe_unit) */
    uint64_t bitmap_region;     /* 0: no write-intent bitmap */
    uint64_t bitmap_offset;
} StripeGeometry;

typedef enum StripeHeaderStatus {
    STRIPE_HEADER_OK,
    STRIPE_HEADER_BLANK,        /* all zeroes: never formatted */
    STRIPE_HEADER_FOREIGN,      /* some other data, no stripe magic */
    STRIPE_HEADER_CORRUPT,      /* stripe magic, bad checksum */
    STRIPE_HEADER_UNSUPPORTED,  /* version or incompatible feature */
    STRIPE_HEADER_INVALID,      /* checksum fine, fields impossible */
} StripeHeaderStatus;

/* Serialise @h into @buf (STRIPE_HEADER_SIZE bytes), checksum included. */
void stripe_header_encode(const StripeHeader *h, uint8_t *buf);

/*
 * Parse @len bytes at @buf.  On STRIPE_HEADER_OK *@h is filled in; on any
 * other status *@errmsg (if not NULL) gets a newly allocated explanation.
 */
StripeHeaderStatus stripe_header_decode(const uint8_t *buf, size_t len,
                                        StripeHeader *h, char **errmsg);

/*
 * Check a geometry proposed for a new image.  Returns NULL or a newly
 * allocated message naming the option ("stripe-unit", "size", ...).
 */
char *stripe_geometry_check(uint64_t virtual_size, uint64_t stripe_unit,
                            uint32_t node_count, uint32_t copies);

/* The data offset a new image gets: 1 MiB, or one stripe unit if larger. */
uint64_t stripe_default_data_offset(uint64_t stripe_unit);

void stripe_geometry_init(StripeGeometry *g, uint64_t virtual_size,
                          uint64_t stripe_unit, uint64_t data_offset,
                          uint32_t node_count);

/* Bytes a node must have to hold its share of the image. */
uint64_t stripe_node_size_needed(const StripeGeometry *g);

/*
 * Map the virtual offset @offset to its node and node offset (its primary
 * copy).  Returns the number of bytes from @offset to the end of its
 * stripe unit.
 */
uint64_t stripe_map(const StripeGeometry *g, uint64_t offset,
                    uint32_t *node, uint64_t *node_offset);

/* The same for copy @copy (0 <= @copy < g->copies) of @offset. */
uint64_t stripe_map_copy(const StripeGeometry *g, uint64_t offset,
                         uint32_t copy, uint32_t *node,
                         uint64_t *node_offset);

/* A replicated layout: @copies (1 to STRIPE_MAX_COPIES) of every unit. */
void stripe_geometry_set_copies(StripeGeometry *g, uint32_t copies);

/*
 * The write-intent bitmap of an image of @virtual_size bytes with one bit
 * per @region bytes: its number of bits, and its size on a node (whole
 * STRIPE_BITMAP_BLOCKs).
 */
uint64_t stripe_bitmap_regions(uint64_t virtual_size, uint64_t region);
uint64_t stripe_bitmap_bytes(uint64_t virtual_size, uint64_t region);

/*
 * Check a bitmap region size for an image of @virtual_size bytes whose
 * bitmap starts at @bitmap_offset and data at @data_offset.  Returns NULL
 * or a newly allocated message naming the option ("bitmap-region") or the
 * size.
 */
char *stripe_bitmap_check(uint64_t virtual_size, uint64_t region,
                          uint64_t bitmap_offset, uint64_t data_offset);

/* A write-intent bitmap of @region bytes per bit (copies > 1 only). */
void stripe_geometry_set_bitmap(StripeGeometry *g, uint64_t region);

/*
 * Whether some stripe unit has no copy outside the nodes of @failed (a bit
 * per node index); if so, *@unit (if not NULL) is the first such unit.
 */
bool stripe_geometry_lost_unit(const StripeGeometry *g, uint64_t failed,
                               uint64_t *unit);

/*
 * Assembling an image from the headers read from its nodes.
 */

typedef struct StripeAssembly {
    StripeGeometry geo;
    uint8_t uuid[16];
    uint64_t generation;
    /* order[i]: the position (in the user's list) of the node with index i */
    uint32_t order[STRIPE_MAX_NODES];
    /*
     * true when a node's header is older than the newest and the node is
     * not failed: a resize or a marking that was cut off, the header only
     * is out of date
     */
    bool stale[STRIPE_MAX_NODES];
    /*
     * A bit per node index: the nodes whose data is out of date, marked
     * failed by a node with a newer header
     */
    uint64_t failed;
    /*
     * A bit per node index: the nodes that gave no header (could not be
     * opened, stripe_assemble_absent()); they are in @failed too
     */
    uint64_t absent;
    /* which node holds each index, from the newest header */
    uint32_t incarnation[STRIPE_MAX_NODES];
    /*
     * When assembly fails because two nodes hold the same header, or
     * because each was written while the other was failed (split brain):
     * the position of the first, the offending node being the second;
     * else -1
     */
    int32_t twin;
    bool split_brain;
} StripeAssembly;

/*
 * Check that @count decoded headers (hdrs[i] read from the i-th node in the
 * user's order, whose length is node_len[i]) describe one complete image,
 * and fill in @out.  On failure returns false, and *@errnode is the
 * position of the offending node (or -1 for a problem of the whole set)
 * and *@errmsg a newly allocated explanation.
 *
 * Every node must agree on the bitmap (region and offset).
 * Headers may differ only in virtual_size, generation and failed, after a
 * resize or a failure marking that was cut off or left a node behind; the
 * newest generation wins.  A node listed as failed by a node with a newer
 * header is failed; other older ones are stale (their header is repaired
 * by qemu-img check -r).  Refused: two nodes that list each other (split
 * brain), and failed nodes that hold every copy of some unit.
 */
bool stripe_assemble(const StripeHeader *hdrs, const uint64_t *node_len,
                     uint32_t count, StripeAssembly *out, int *errnode,
                     char **errmsg);

/*
 * The same, where the nodes at the positions set in @absent (a bit per
 * position in the user's list) gave no header: they could not be opened.
 * Their hdrs[] and node_len[] are not looked at.  They take the node
 * indices that no header claims, and are failed; the image assembles only
 * while every stripe unit keeps a copy on a node that is not failed, and
 * never from absent nodes alone.
 */
bool stripe_assemble_absent(const StripeHeader *hdrs,
                            const uint64_t *node_len, uint32_t count,
                            uint64_t absent, StripeAssembly *out,
                            int *errnode, char **errmsg);

/* Format a UUID as the usual 36-character string (buf: 37 bytes). */
void stripe_uuid_unparse(const uint8_t *uuid, char *buf);

/* Whether @len bytes at @buf are all zero (a never-written header). */
bool stripe_buf_is_zero(const uint8_t *buf, size_t len);

#endif /* STRIPE_LAYOUT_H */
