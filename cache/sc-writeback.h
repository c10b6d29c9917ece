/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the writeback planner (sc-writeback.c): which dirty data
 * goes to the nodes next, and what a finished job settles.
 *
 * Owns SCWbSched: the pressure flag, the bandwidth estimate that paces
 * writers, and the failure count that blocked writers watch.  Per node it
 * owns SCNode.backoff_*: a node whose writeback failed gets no background
 * job until @backoff_until.  It starts jobs through sc-wbjobs.h and
 * settles flush tickets through sc-flush.h.
 *
 * Locking: none here.  The caller serialises every call into the core
 * (the driver holds its cache lock around each); nothing in this module
 * blocks, sleeps or reads a clock.
 */
#ifndef SC_WRITEBACK_H
#define SC_WRITEBACK_H

/*
 * Whole segments remembered as recently sent: past this many, those older
 * than max-dirty-age are forgotten, and if that is not enough, all are
 * (a writer faster than this many segments per max-dirty-age).
 */
#define SC_RECENT_MAX 4096

typedef struct SCWbSched {
    bool pressure;              /* a writer was refused: write back now */
    double bw;                  /* writeback bytes per second (EWMA) */
    int64_t bw_last_ns;
    int64_t bw_busy_ns;
    uint64_t bw_bytes;
    uint64_t failures;          /* failed writeback jobs so far */
    int last_error;
    GQueue full;                /* segments a write completed (uint64_t *) */
    GHashTable *recent;         /* SCRecent: whole segments sent lately */
} SCWbSched;

/*
 * Whether a writer waits for room (or cache-size shrank below what is
 * dirty): the planner then writes back at once, not by age.
 */
void sc_wb_set_pressure(SCCache *c, bool pressure);

/*
 * A write to [@start, @end) at @now_ns made new extents: each segment it
 * touched that is now dirty from end to end is queued for writeback
 * (policy 2 in sc-writeback.c), unless it was sent whole less than
 * max-dirty-age ago.
 */
void sc_wb_note_write(SCCache *c, uint64_t start, uint64_t end,
                      int64_t now_ns);

/* Forget the queued and recently sent segments (sc_cache_free()). */
void sc_wb_full_clear(SCCache *c);

#endif /* SC_WRITEBACK_H */
