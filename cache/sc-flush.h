/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: flush tickets (sc-flush.c): what a flush or a write-through
 * write waits for, and the errors it gets.
 *
 * Owns SCFlushState.  Invariants:
 * - a ticket taken in epoch S (@seq) is done when no dirty byte, no job
 *   in flight and no write-around with data of since <= S is left (for a
 *   ranged ticket: within its range);
 * - @pending_global and @pending_range hold the tickets still pending, in
 *   the order they were taken;
 * - @sticky_error is a writeback error no guest flush has reported yet;
 *   only a guest flush takes it.
 *
 * Locking: none here.  The caller serialises every call into the core
 * (the driver holds its cache lock around each); nothing in this module
 * blocks, sleeps or reads a clock.
 */
#ifndef SC_FLUSH_H
#define SC_FLUSH_H

struct SCFlush {
    GList link;                 /* c->tickets */
    GList pending_link;         /* c->pending_global / pending_range */
    uint64_t seq;               /* covers dirty data with since <= seq */
    uint64_t start;             /* range tickets (write-through) */
    uint64_t end;
    int status;                 /* 1 pending, 0 done, -errno failed */
    bool from_guest;            /* a guest flush or write-through */
    bool ranged;
    bool fua;
};

typedef struct SCFlushState {
    uint64_t epoch;
    GQueue tickets;             /* every ticket not released */
    GQueue pending_global;
    GQueue pending_range;
    int sticky_error;           /* for the guest's next flush */
    bool seen_guest_flush;
} SCFlushState;

/* sc-flush.c */
SCFlush *sc_ticket_new_range(SCCache *c, uint64_t start, uint64_t end,
                             bool fua);
void sc_tickets_update(SCCache *c, uint64_t start, uint64_t end);
void sc_tickets_fail(SCCache *c, uint64_t start, uint64_t end,
                     uint64_t min_since, int err, bool keep_untaken);
bool sc_tickets_want_fua(SCCache *c, uint64_t start, uint64_t end,
                         uint64_t min_since);
void sc_tickets_free_all(SCCache *c);

#endif /* SC_FLUSH_H */
