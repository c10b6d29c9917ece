/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: flush tickets and error reporting.
 *
 * Every ticket takes the current epoch as its seq and starts a new epoch,
 * so data written after the ticket has a larger since and can never delay
 * it (no starvation by concurrent writers).  A flush ticket is done when
 * the oldest obligation in the cache, min(since of any dirty extent,
 * min_since of any in-flight job), is newer than its seq; because seqs
 * grow, pending flush tickets complete in order and checking them is O(1)
 * amortized.  A write-through ticket (SC_WRITE_THROUGH) does the same for
 * its own range only.
 *
 * A failed writeback job reports its errno to every pending ticket that
 * wanted any of its bytes; when none did, the error is kept ("sticky")
 * and the guest's next flush ticket reports it (an internal flush must not
 * swallow it).  The data stays dirty either way and is retried.
 *
 * Write-arounds in flight are obligations too (sc-around.c): the dirty
 * data they dropped is superseded only once they reach the nodes.
 */
#include "sc-internal.h"

static uint64_t global_min_need(SCCache *c)
{
    SCTreeNode *n = sc_tree_first(&c->ext.dirty_by_since);
    uint64_t m = n ? SC_CONTAINER_OF(n, SCExtent, dirty_node)->since
                   : UINT64_MAX;

    n = sc_tree_first(&c->wbj.by_since);
    if (n) {
        m = MIN(m, SC_CONTAINER_OF(n, SCWbJob, since_node)->min_since);
    }
    return MIN(m, sc_around_min_need(c, 0, UINT64_MAX));
}

/* Oldest obligation within [start, end). */
static uint64_t range_min_need(SCCache *c, uint64_t start, uint64_t end)
{
    uint64_t m = UINT64_MAX;
    SCExtent *e;

    for (e = sc_ext_lookup(c, start); e && e->start < end;
         e = sc_ext_next(e)) {
        if (e->state == SC_EXT_DIRTY) {
            m = MIN(m, e->since);
        }
    }
    m = MIN(m, sc_wb_min_since(c, start, end));
    return MIN(m, sc_around_min_need(c, start, end));
}

static SCFlush *ticket_new(SCCache *c)
{
    SCFlush *f = g_new0(SCFlush, 1);

    f->link.data = f;
    f->pending_link.data = f;
    f->seq = c->fl.epoch++;
    f->status = 1;
    g_queue_push_tail_link(&c->fl.tickets, &f->link);
    return f;
}

static void ticket_finish(SCCache *c, SCFlush *f, int status)
{
    g_assert(f->status == 1);
    g_queue_unlink(f->ranged ? &c->fl.pending_range : &c->fl.pending_global,
                   &f->pending_link);
    f->status = status;
    if (status < 0 && !f->ranged) {
        c->stats.flush_errors++;
    }
}

SCFlush *sc_flush_begin(SCCache *c, bool from_guest)
{
    SCFlush *f = ticket_new(c);

    c->stats.flushes++;
    f->from_guest = from_guest;
    if (from_guest) {
        c->fl.seen_guest_flush = true;
    }
    if (from_guest && c->fl.sticky_error) {
        f->status = c->fl.sticky_error;
        c->fl.sticky_error = 0;
        c->stats.flush_errors++;
        return f;
    }
    if (global_min_need(c) > f->seq) {
        f->status = 0;
        return f;
    }
    g_queue_push_tail_link(&c->fl.pending_global, &f->pending_link);
    return f;
}

SCFlush *sc_ticket_new_range(SCCache *c, uint64_t start, uint64_t end,
                             bool fua)
{
    SCFlush *f = ticket_new(c);

    f->ranged = true;
    f->from_guest = true;
    f->fua = fua;
    f->start = start;
    f->end = end;
    if (range_min_need(c, start, end) > f->seq) {
        f->status = 0;
        return f;
    }
    g_queue_push_tail_link(&c->fl.pending_range, &f->pending_link);
    return f;
}

int sc_flush_status(SCCache *c, SCFlush *f)
{
    return f->status;
}

void sc_flush_release(SCCache *c, SCFlush *f)
{
    if (f->status == 1) {
        g_queue_unlink(f->ranged ? &c->fl.pending_range : &c->fl.pending_global,
                       &f->pending_link);
    }
    g_queue_unlink(&c->fl.tickets, &f->link);
    g_free(f);
}

void sc_tickets_free_all(SCCache *c)
{
    while (c->fl.tickets.head) {
        sc_flush_release(c, c->fl.tickets.head->data);
    }
}

/* Obligations in [start, end) may have gone: complete what is done. */
void sc_tickets_update(SCCache *c, uint64_t start, uint64_t end)
{
    uint64_t m = global_min_need(c);
    GList *l, *next;

    while (c->fl.pending_global.head) {
        SCFlush *f = c->fl.pending_global.head->data;

        if (f->seq >= m) {
            break;
        }
        ticket_finish(c, f, 0);
    }
    for (l = c->fl.pending_range.head; l; l = next) {
        SCFlush *f = l->data;

        next = l->next;
        if (f->start < end && start < f->end &&
            (f->seq < m || range_min_need(c, f->start, f->end) > f->seq)) {
            ticket_finish(c, f, 0);
        }
    }
}

/*
 * Fail the pending tickets that wanted data of [start, end) from epoch
 * @min_since on.  With @keep_untaken, an error that no guest ticket took
 * (none, or only internal flushes) is kept for the guest's next flush.
 */
void sc_tickets_fail(SCCache *c, uint64_t start, uint64_t end,
                     uint64_t min_since, int err, bool keep_untaken)
{
    bool taken = false;
    GList *l, *next;

    for (l = c->fl.pending_global.head; l; l = next) {
        SCFlush *f = l->data;

        next = l->next;
        if (f->seq >= min_since) {
            ticket_finish(c, f, err);
            taken |= f->from_guest;
        }
    }
    for (l = c->fl.pending_range.head; l; l = next) {
        SCFlush *f = l->data;

        next = l->next;
        if (f->start < end && start < f->end && f->seq >= min_since) {
            ticket_finish(c, f, err);
            taken = true;
        }
    }
    if (keep_untaken && !taken && !c->fl.sticky_error) {
        c->fl.sticky_error = err;
    }
}

bool sc_tickets_want_fua(SCCache *c, uint64_t start, uint64_t end,
                         uint64_t min_since)
{
    GList *l;

    for (l = c->fl.pending_range.head; l; l = l->next) {
        SCFlush *f = l->data;

        if (f->fua && f->start < end && start < f->end &&
            f->seq >= min_since) {
            return true;
        }
    }
    return false;
}
