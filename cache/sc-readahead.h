/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: sequential stream detection and readahead window sizing.
 *
 * Pure logic with no knowledge of the cache: it watches guest reads and
 * answers with the next window to prefetch.  The cache turns windows into
 * per-stripe-unit prefetch jobs and reports prefetched data that was
 * evicted unread, which shrinks the stream's next window.
 */
#ifndef SC_READAHEAD_H
#define SC_READAHEAD_H

#include <stdbool.h>
#include <stdint.h>

/* Streams tracked at once; the least recently used slot is recycled. */
#define SC_RA_STREAMS 8

typedef struct SCRaConfig {
    uint32_t trigger_requests;  /* sequential requests before prefetch */
    uint64_t max_bytes;         /* largest window; 0 disables readahead */
    uint64_t disable_after_bytes; /* stop after this much read; 0 never */
    uint64_t stripe_unit;       /* window ends snap to it */
    uint64_t min_bytes;         /* smallest window and alignment */
    uint64_t disk_size;         /* windows never reach past it */
} SCRaConfig;

typedef struct SCRaStream {
    uint64_t frontier;          /* highest end of a read in the stream */
    uint64_t skipped;           /* bytes jumped over, not yet read */
    uint64_t seq_bytes;         /* bytes of sequential requests */
    uint64_t window;            /* size of the last window, 0 = none */
    uint64_t ra_first;          /* start of the first window */
    uint64_t ra_start;          /* start of the last window */
    uint64_t ra_end;            /* end of everything read ahead */
    uint64_t stamp;             /* last use, for slot recycling */
    uint32_t hits;              /* sequential requests seen */
    bool active;
    bool wasted;                /* data evicted unread since last window */
} SCRaStream;

typedef struct SCReadahead {
    SCRaConfig cfg;
    SCRaStream streams[SC_RA_STREAMS];
    uint64_t clock;
    uint64_t total_read;
    bool disabled;              /* disable_after_bytes reached */
} SCReadahead;

void sc_ra_init(SCReadahead *ra, const SCRaConfig *cfg);

/* New configuration; streams survive, disabling is re-evaluated. */
void sc_ra_configure(SCReadahead *ra, const SCRaConfig *cfg);

/* Forget all streams (the cache was dropped). */
void sc_ra_reset(SCReadahead *ra);

/*
 * A guest read of [@off, @off + @len).  Returns true and the window
 * [*@start, *@end) when a prefetch should be issued now.
 */
bool sc_ra_observe(SCReadahead *ra, uint64_t off, uint64_t len,
                   uint64_t *start, uint64_t *end);

/* Prefetched data at @off was evicted before anybody read it. */
void sc_ra_wasted(SCReadahead *ra, uint64_t off);

unsigned sc_ra_active_streams(const SCReadahead *ra);

#endif /* SC_READAHEAD_H */
