/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: a fixed-slot arena for page data.
 *
 * The cache bounds its data to cache-size, but one malloc per page lets
 * the heap fragment around the small allocations of extents and jobs, so
 * the process grew by half as much again as the cache held.  Page data
 * therefore lives in arenas of equal slots reserved with one mmap each:
 * a slot is resident once touched and reused after that, so the data can
 * never take more memory than the arenas' size, whatever the churn.
 */
#ifndef SC_ARENA_H
#define SC_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct SCArena SCArena;

/*
 * Reserve @slots slots of @slot_size bytes (address space only).  The
 * memory of a slot that stays free for @cold_us microseconds is given
 * back (at the next get or put), but for @keep such slots.
 */
SCArena *sc_arena_new(size_t slot_size, size_t slots, size_t keep,
                      int64_t cold_us);
void sc_arena_free(SCArena *a);

/* A free slot, or NULL when all are taken. */
void *sc_arena_get(SCArena *a);

/* Give back a slot that sc_arena_get() returned. */
void sc_arena_put(SCArena *a, void *slot);

/* Whether @ptr is a slot of @a. */
int sc_arena_owns(const SCArena *a, const void *ptr);

/* Bytes of bookkeeping (the free-slot stack). */
size_t sc_arena_metadata_bytes(const SCArena *a);

#endif /* SC_ARENA_H */
