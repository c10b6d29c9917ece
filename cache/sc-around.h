/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the register of write-arounds (sc-around.c): discards,
 * write-zeroes and bypass writes on their way to the nodes (their life,
 * sc_around_begin/ready/end, is in sc-write.c).
 *
 * Owns SCCache.arounds, a list bounded by the guest's queue depth.
 * Invariants: while an around of a range is in flight, that range is not
 * cached (its dirty data was dropped, its flush obligations carried by
 * @min_since), reads of it go to the nodes after the around, and writes
 * to it wait.
 *
 * Locking: none here.  The caller serialises every call into the core
 * (the driver holds its cache lock around each); nothing in this module
 * blocks, sleeps or reads a clock.
 */
#ifndef SC_AROUND_H
#define SC_AROUND_H

/* A write-around on its way to the nodes (sc-around.c). */
struct SCAround {
    GList link;                 /* c->arounds */
    uint64_t start;
    uint64_t end;
    uint64_t min_since;         /* oldest dropped dirty data, or MAX */
};

/* sc-around.c */
uint64_t sc_around_covered_end(SCCache *c, uint64_t off);
uint64_t sc_around_next_start(SCCache *c, uint64_t off);
bool sc_around_overlaps(SCCache *c, uint64_t start, uint64_t end);
uint64_t sc_around_min_need(SCCache *c, uint64_t start, uint64_t end);
void sc_arounds_free_all(SCCache *c);

void sc_around_add(SCCache *c, SCAround *a);
void sc_around_remove(SCCache *c, SCAround *a);

#endif /* SC_AROUND_H */
