/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Page arenas (cache/sc-arena.h): a slot freed and soon taken again keeps
 * its memory; only a slot that stayed free for a whole period gives it
 * back.  MADV_DONTNEED zeroes what it gives back, so a slot's content
 * says whether it was released, and mincore() says whether it is
 * resident.
 */
#include "sc-arena.h"
#include "sc-test.h"

#include <stdbool.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#define SLOTS 64
#define TAKEN 32
#define KEEP 2
#define FILL 0xab

static size_t page_size(void)
{
    return getauxval(AT_PAGESZ);
}

static bool resident(void *slot)
{
    unsigned char vec;

    sc_assert_cmpi(mincore(slot, page_size(), &vec), ==, 0);
    return vec & 1;
}

static bool holds_fill(const uint8_t *slot)
{
    size_t i;

    for (i = 0; i < page_size(); i++) {
        if (slot[i] != FILL) {
            return false;
        }
    }
    return true;
}

static void take_all(SCArena *a, uint8_t **slot)
{
    int i;

    for (i = 0; i < TAKEN; i++) {
        slot[i] = sc_arena_get(a);
        sc_assert(slot[i] != NULL);
    }
}

static void put_all(SCArena *a, uint8_t **slot)
{
    int i;

    for (i = 0; i < TAKEN; i++) {
        sc_arena_put(a, slot[i]);
    }
}

/* Slots freed and taken again over several periods keep their memory. */
static void test_churn_keeps_memory(void)
{
    const int64_t cold_us = 200 * 1000;
    SCArena *a = sc_arena_new(page_size(), SLOTS, KEEP, cold_us);
    int64_t start = g_get_monotonic_time();
    uint8_t *slot[TAKEN];
    int i, rounds = 0;

    sc_assert(a != NULL);
    take_all(a, slot);
    for (i = 0; i < TAKEN; i++) {
        memset(slot[i], FILL, page_size());
    }
    while (g_get_monotonic_time() - start < 5 * cold_us) {
        put_all(a, slot);
        take_all(a, slot);
        rounds++;
        g_usleep(1000);
    }
    put_all(a, slot);
    for (i = 0; i < TAKEN; i++) {
        sc_assert(resident(slot[i]));
        sc_assert(holds_fill(slot[i]));
    }
    sc_assert_cmpi(rounds, >, 1);
    sc_arena_free(a);
}

/*
 * Slots that stay free for a whole period are given back, but for KEEP,
 * and the youngest free ones (taken first) were never in doubt.  A slot
 * given back is usable again.
 */
static void test_cold_slots_released(void)
{
    const int64_t cold_us = 200 * 1000;
    SCArena *a = sc_arena_new(page_size(), SLOTS, KEEP, cold_us);
    uint8_t *slot[TAKEN], *again;
    int i, released = 0;

    sc_assert(a != NULL);
    take_all(a, slot);
    for (i = 0; i < TAKEN; i++) {
        memset(slot[i], FILL, page_size());
    }
    put_all(a, slot);
    /* the first period saw no free slot at its start: nothing is cold */
    g_usleep(2 * cold_us);
    again = sc_arena_get(a);
    sc_assert(again == slot[TAKEN - 1]);
    for (i = 0; i < TAKEN; i++) {
        sc_assert(resident(slot[i]));
    }
    sc_arena_put(a, again);
    /* the second one never had fewer than TAKEN - 1 free */
    g_usleep(2 * cold_us);
    again = sc_arena_get(a);
    sc_assert(again == slot[TAKEN - 1]);
    /* the oldest free slots went; checked before a read maps them again */
    sc_assert(!resident(slot[0]));
    sc_assert(resident(slot[TAKEN - 2]));
    for (i = 0; i < TAKEN; i++) {
        if (!resident(slot[i])) {
            released++;
            sc_assert_cmpu(slot[i][0], ==, 0);
        } else {
            sc_assert(holds_fill(slot[i]));
        }
    }
    sc_assert_cmpi(released, ==, TAKEN - 1 - KEEP);
    /* released slots come back, zeroed and writable */
    sc_arena_put(a, again);
    for (i = 0; i < TAKEN; i++) {
        again = sc_arena_get(a);
        sc_assert(again != NULL);
        memset(again, FILL, page_size());
    }
    sc_arena_free(a);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/arena/churn-keeps-memory", test_churn_keeps_memory);
    g_test_add_func("/arena/cold-slots-released", test_cold_slots_released);
    return g_test_run();
}
