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

typedef struct SCWbSched {
    bool pressure;              /* a writer was refused: write back now */
    double bw;                  /* writeback bytes per second (EWMA) */
    int64_t bw_last_ns;
    int64_t bw_busy_ns;
    uint64_t bw_bytes;
    uint64_t failures;          /* failed writeback jobs so far */
    int last_error;
} SCWbSched;

/*
 * Whether a writer waits for room (or cache-size shrank below what is
 * dirty): the planner then writes back at once, not by age.
 */
void sc_wb_set_pressure(SCCache *c, bool pressure);

#endif /* SC_WRITEBACK_H */
