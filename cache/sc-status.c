/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: block status, i.e. who knows what a read of a range
 * returns.
 *
 * QEMU's consumers (NBD's sparse reads and base:allocation, mirror, backup,
 * qemu-img convert and map) skip ranges that block status calls holes or
 * zeroes.  The nodes can answer only for bytes whose newest data they
 * hold.  A byte is "held" by the cache, and must be reported as data,
 * while it is DIRTY (under writeback or not), FETCHING, inside an
 * in-flight writeback job (possibly no longer cached) or inside a
 * write-around in flight.  CLEAN bytes equal the nodes, absent ones are
 * on the nodes only: for both the nodes' answer is the truth, zeroes
 * written around the cache included once they have landed.
 */
#include "sc-internal.h"

/* End of the held run starting at @off (@off itself if it is not held). */
static uint64_t held_end(SCCache *c, uint64_t off, uint64_t limit)
{
    bool moved = true;

    while (moved && off < limit) {
        SCExtent *e = sc_ext_lookup(c, off);
        SCWbJob *j = sc_wb_job_covering(c, off);
        uint64_t a = sc_around_covered_end(c, off);

        moved = false;
        if (e && e->start <= off && e->state != SC_EXT_CLEAN) {
            off = e->end;
            moved = true;
        } else if (j) {
            off = j->end;
            moved = true;
        } else if (a > off) {
            off = a;
            moved = true;
        }
    }
    return off;
}

/* Start of the first held byte after @off (which is not held), or @limit. */
static uint64_t next_held(SCCache *c, uint64_t off, uint64_t limit)
{
    uint64_t next = MIN(limit, sc_wb_boundary_after(c, off));
    SCExtent *e;

    next = MIN(next, sc_around_next_start(c, off));
    for (e = sc_ext_lookup(c, off); e && e->start < next;
         e = sc_ext_next(e)) {
        if (e->state != SC_EXT_CLEAN) {
            next = MAX(e->start, off);
            break;
        }
    }
    return next;
}

SCStatus sc_block_status(SCCache *c, uint64_t offset, uint64_t len,
                         uint64_t *pnum)
{
    uint64_t limit = sc_range_end(offset, len);
    uint64_t end = held_end(c, offset, limit);

    if (end > offset) {
        *pnum = MIN(end, limit) - offset;
        return SC_STATUS_DATA;
    }
    *pnum = next_held(c, offset, limit) - offset;
    return SC_STATUS_NODES;
}
