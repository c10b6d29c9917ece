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
    size_t keep;                /* free slots allowed to stay resident */
    bool release;               /* slots are whole pages: can be released */
    uint32_t *free_stack;       /* slots given back, reused first */
    size_t free_count;
};

SCArena *sc_arena_new(size_t slot_size, size_t slots, size_t keep)
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

void *sc_arena_get(SCArena *a)
{
    size_t slot;

    /*
     * Reuse given-back slots before touching fresh ones, so that the
     * resident part of the arena only grows when more slots are live.
     */
    if (a->free_count) {
        slot = a->free_stack[--a->free_count];
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
    /*
     * Slots are reused from the top of the stack, so the slots beneath
     * the top @keep are cold: give their memory back.  When the budget
     * shifts from data to bookkeeping, the process then shrinks too.
     */
    if (a->release && a->free_count >= a->keep) {
        madvise(ptr, a->slot_size, MADV_DONTNEED);
    }
    a->free_stack[a->free_count++] = slot;
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
