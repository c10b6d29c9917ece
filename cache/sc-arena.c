/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: a fixed-slot arena for page data (see sc-arena.h).
 */
#include <glib.h>
#include <stdbool.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sc-arena.h"

struct SCArena {
    uint8_t *base;
    size_t slot_size;
    size_t slots;
    size_t fresh;               /* slots never handed out start here */
    size_t keep;                /* cold free slots that stay resident */
    bool release;               /* slots are whole pages: can be released */
    uint32_t *free_stack;       /* slots given back, reused first */
    size_t free_count;
    size_t released;            /* free_stack[0 .. released) given back */
    size_t low_water;           /* fewest free slots since the last look */
    int64_t cold_us;            /* how long a slot stays free to be cold */
    int64_t looked_us;          /* when the cold slots were last sought */
};

SCArena *sc_arena_new(size_t slot_size, size_t slots, size_t keep,
                      int64_t cold_us)
{
    SCArena *a = g_new0(SCArena, 1);

    g_assert(slots > 0 && slots <= UINT32_MAX);
    a->base = mmap(NULL, slot_size * slots, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a->base == MAP_FAILED) {
        g_free(a);
        return NULL;
    }
    a->slot_size = slot_size;
    a->slots = slots;
    a->keep = keep;
    a->release = slot_size % getauxval(AT_PAGESZ) == 0;
    a->free_stack = g_new(uint32_t, slots);
    a->cold_us = cold_us;
    a->looked_us = g_get_monotonic_time();
    return a;
}

void sc_arena_free(SCArena *a)
{
    if (a) {
        munmap(a->base, a->slot_size * a->slots);
        g_free(a->free_stack);
        g_free(a);
    }
}

/*
 * Give back the memory of the slots that stayed free for a whole period:
 * those beneath the fewest free slots seen in it, less @keep.  A slot
 * freed and soon taken again (clean pages evicted while writes stream
 * in) is never given back: each release is a system call and a TLB
 * shootdown on every CPU, and the slot's next use a page fault, which
 * cost a 4k sequential writer over an RBD node a third of its speed.
 */
static void arena_release_cold(SCArena *a)
{
    int64_t now = g_get_monotonic_time();
    size_t cold_end, i;

    if (!a->release || now - a->looked_us < a->cold_us) {
        return;
    }
    cold_end = a->low_water > a->keep ? a->low_water - a->keep : 0;
    for (i = a->released; i < cold_end; i++) {
        madvise(a->base + (size_t)a->free_stack[i] * a->slot_size,
                a->slot_size, MADV_DONTNEED);
    }
    a->released = MAX(a->released, cold_end);
    a->low_water = a->free_count;
    a->looked_us = now;
}

void *sc_arena_get(SCArena *a)
{
    size_t slot;

    arena_release_cold(a);
    /*
     * Reuse given-back slots before touching fresh ones, so that the
     * resident part of the arena only grows when more slots are live.
     */
    if (a->free_count) {
        slot = a->free_stack[--a->free_count];
        a->released = MIN(a->released, a->free_count);
        a->low_water = MIN(a->low_water, a->free_count);
    } else if (a->fresh < a->slots) {
        slot = a->fresh++;
    } else {
        return NULL;
    }
    return a->base + slot * a->slot_size;
}

void sc_arena_put(SCArena *a, void *ptr)
{
    size_t slot = ((uint8_t *)ptr - a->base) / a->slot_size;

    g_assert(sc_arena_owns(a, ptr));
    g_assert(a->free_count < a->fresh);
    a->free_stack[a->free_count++] = slot;
    arena_release_cold(a);
}

int sc_arena_owns(const SCArena *a, const void *ptr)
{
    const uint8_t *p = ptr;

    return p >= a->base && p < a->base + a->slot_size * a->slots &&
           (size_t)(p - a->base) % a->slot_size == 0;
}

size_t sc_arena_metadata_bytes(const SCArena *a)
{
    return sizeof(*a) + a->slots * sizeof(uint32_t);
}
