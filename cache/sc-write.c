/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: writes, writer pacing, discard and write-zeroes.
 *
 * A write copies the guest data into pages (copy-on-write for pages an
 * in-flight writeback job sends) and turns its range DIRTY:
 *   - dirty bytes not in flight keep their since and age (the flush that
 *     wanted them still gets the newest data);
 *   - bytes under writeback get a new since and are "blocked" by that job
 *     until it completes, so no second job for them can start; if the job
 *     fails they inherit its older since (nothing it owed is forgotten);
 *   - clean, fetching and absent bytes get the current epoch.
 * Extents are cut at in-flight job boundaries so that each one is wholly
 * inside or outside every job.
 *
 * Admission: dirty data (including in-flight bytes no longer cached) may
 * not exceed cache-max-dirty; above cache-target-dirty writers get a delay
 * that grows smoothly with the dirty level and shrinks with the measured
 * writeback bandwidth; a write that does not fit in memory or max-dirty
 * right now is SC_WRITE_BLOCKED (and the writeback planner is put under
 * pressure); one that can never fit is SC_WRITE_BYPASS, a write-around.
 * A write over a write-around in flight is blocked until it lands, and
 * one over a staged write's pages until it is published (sc-staged.h).
 */
#include "sc-internal.h"

/* Bytes in [start, end) that are DIRTY and not under writeback. */
static uint64_t dirty_idle_bytes(SCCache *c, uint64_t start, uint64_t end)
{
    uint64_t n = 0;
    SCExtent *e;

    for (e = sc_ext_lookup(c, start); e && e->start < end;
         e = sc_ext_next(e)) {
        if (e->state == SC_EXT_DIRTY && !e->wb) {
            n += MIN(e->end, end) - MAX(e->start, start);
        }
    }
    return n;
}

/*
 * Delay for a writer that just dirtied @len bytes, leaving @dirty dirty:
 * zero up to target-dirty, then len / bandwidth scaled by
 * (dirty - target) / (max - dirty): the guest may dirty at the writeback
 * bandwidth half way between target and max, much faster below, and
 * ever slower as it approaches max, where it would be blocked.
 */
static int64_t pacing_delay(SCCache *c, uint64_t dirty, uint64_t len)
{
    uint64_t target = c->opts.target_dirty, max = c->opts.max_dirty;
    double bw = c->wb.bw > 0 ? c->wb.bw : SC_BW_DEFAULT;
    double delay;

    if (dirty <= target || max <= target) {
        return 0;
    }
    if (dirty >= max) {
        return SC_MAX_PAUSE_NS;
    }
    delay = (double)len * SC_NS_PER_SEC / bw *
            (double)(dirty - target) / (double)(max - dirty);
    return delay >= SC_MAX_PAUSE_NS ? SC_MAX_PAUSE_NS : (int64_t)delay;
}

/* Make a non-DIRTY extent, inside or outside any job, dirty now. */
static void make_dirty(SCCache *c, SCExtent *e, uint64_t epoch,
                       int64_t now_ns)
{
    e->state = SC_EXT_DIRTY;
    e->since = epoch;
    e->dirtied_ns = now_ns;
    e->blocked_by = sc_wb_job_covering(c, e->start);
    e->inherit = false;
    e->prefetched = false;
    e->fetch = NULL;
}

/* Write over existing extent @e (data is already in the pages). */
static void write_over(SCCache *c, SCExtent *e, uint64_t epoch,
                       int64_t now_ns)
{
    uint64_t len = sc_ext_len(e);

    switch (e->state) {
    case SC_EXT_DIRTY:
        if (!e->wb) {
            return;             /* keeps since and age */
        }
        sc_ext_unindex(c, e);
        sc_wb_job_orphan(c, e->wb, len);
        e->blocked_by = e->wb;
        e->wb = NULL;
        e->inherit = true;
        e->since = epoch;
        e->dirtied_ns = now_ns;
        sc_ext_index(c, e);
        break;
    case SC_EXT_CLEAN:
        if (e->prefetched) {
            c->stats.readahead_wasted_bytes += len;
        }
        sc_ext_unindex(c, e);
        make_dirty(c, e, epoch, now_ns);
        sc_ext_index(c, e);
        break;
    case SC_EXT_FETCHING: {
        SCFetchJob *job = e->fetch;

        sc_ext_unindex(c, e);
        make_dirty(c, e, epoch, now_ns);
        sc_store_add_used(c, e->start, e->end);
        sc_ext_index(c, e);
        if (!job->issued && job->waiting == 0) {
            sc_fetch_job_discard(c, job);
        }
        break;
    }
    }
}

/* Cut extents at the boundaries of in-flight jobs inside [start, end). */
static void carve_job_boundaries(SCCache *c, uint64_t start, uint64_t end)
{
    uint64_t pos = start;

    while (pos < end) {
        pos = sc_wb_boundary_after(c, pos);
        if (pos >= end) {
            break;
        }
        sc_ext_carve(c, pos);
    }
}

static void write_apply(SCCache *c, uint64_t start, uint64_t end,
                        SCIovIter *it, int64_t now_ns)
{
    uint64_t epoch = c->fl.epoch, pos = start;
    SCExtent *e = sc_ext_lookup(c, start);

    /*
     * Rewriting bytes that are dirty and not on their way to the nodes
     * (a guest rewriting its hot blocks): the extent keeps its state,
     * since and age (write_over() changes nothing for it) and no job
     * boundary lies inside it, so only the data changes.  Cutting it and
     * merging it back would take it out of every index tree and put it
     * back, for nothing.
     */
    if (e && e->state == SC_EXT_DIRTY && !e->wb && e->start <= start &&
        end <= e->end) {
        sc_pages_copy_in(c, start, end, it);
        return;
    }

    sc_ext_carve(c, start);
    sc_ext_carve(c, end);
    carve_job_boundaries(c, start, end);
    sc_pages_copy_in(c, start, end, it);

    e = sc_ext_lookup(c, start);
    while (pos < end) {
        if (e && e->start <= pos) {
            SCExtent *next = sc_ext_next(e);

            pos = e->end;
            write_over(c, e, epoch, now_ns);
            e = next;
        } else {
            uint64_t stop = MIN(end, e ? e->start : end);
            SCExtent *n;

            stop = MIN(stop, sc_seg_end(c, pos));
            stop = MIN(stop, sc_wb_boundary_after(c, pos));
            n = sc_ext_new(c, pos, stop, SC_EXT_DIRTY);
            make_dirty(c, n, epoch, now_ns);
            sc_store_add_used(c, pos, stop);
            sc_ext_insert(c, n);
            pos = stop;
        }
    }
    sc_ext_merge_range(c, start, end);
    sc_wb_note_write(c, start, end, now_ns);
}

/* Drop [offset, offset + len) from the cache in every state. */
void sc_range_drop(SCCache *c, uint64_t offset, uint64_t len)
{
    uint64_t end = sc_range_end(offset, len);
    SCExtent *e;

    if (len == 0) {
        return;
    }
    sc_ext_carve(c, offset);
    sc_ext_carve(c, end);
    e = sc_ext_lookup(c, offset);
    while (e && e->start < end) {
        SCExtent *next = sc_ext_next(e);

        sc_ext_delete(c, e, SC_DROP_INVALIDATE);
        e = next;
    }
    sc_tickets_update(c, offset, end);
}

bool sc_range_busy(SCCache *c, uint64_t offset, uint64_t len)
{
    if (!len) {
        return false;
    }
    /* The next job boundary is a start unless a job covers @offset. */
    return sc_wb_job_covering(c, offset) ||
           sc_wb_boundary_after(c, offset) < sc_range_end(offset, len);
}

/* sc_write(), staging the write in @stage if it can (sc-staged.h) */
static SCWriteResult write_absorb(SCCache *c, uint64_t offset, uint64_t len,
                                  const struct iovec *iov, int iovcnt,
                                  size_t iov_offset, unsigned flags,
                                  int64_t now_ns, SCStage *stage)
{
    SCWriteResult res = { .status = SC_WRITE_DONE };
    uint64_t end = sc_range_end(offset, len);
    uint64_t pages, new_dirty, segs, need;
    bool staged;
    bool fua = flags & SC_WRITE_FUA;
    bool through = fua || c->opts.max_dirty == 0 ||
                   (c->opts.writethrough_until_flush &&
                    !c->fl.seen_guest_flush);
    SCIovIter it;

    c->stats.write_requests++;
    c->stats.write_bytes += len;
    if (len == 0) {
        return res;
    }

    pages = sc_pages_spanned(c, offset, end);
    if (sc_bypasses(c, len) || pages * c->page_size > c->opts.size ||
        (!through && len > c->opts.max_dirty)) {
        goto bypass;
    }
    /*
     * A rewrite of dirty data needs no room and no new extent, and no
     * write-around overlaps dirty data: only the pacing is left.
     */
    if (!through && stage && sc_staged_begin(c, offset, end, stage)) {
        goto absorbed;
    }
    new_dirty = len - dirty_idle_bytes(c, offset, end);
    need = sc_store_pages_to_alloc(c, offset, end, &staged);
    /* a staged write copies into these pages: wait a moment */
    res.staged = staged && sc_staged_busy(c, offset, end, false);
    if (res.staged || sc_around_overlaps(c, offset, end)) {
        /* or its writeback could land before the write-around: wait */
        c->stats.write_blocked_count++;
        res.status = SC_WRITE_BLOCKED;
        return res;
    }
    if (!through && sc_dirty_total(c) + new_dirty > c->opts.max_dirty) {
        goto blocked;
    }
    segs = (end - 1) / c->segment - offset / c->segment + 1;
    /*
     * Keep whole pages: evicting a neighbour could free a page we count
     * as present.
     */
    if (!sc_make_room(c, need * c->page_size, segs + 4,
                      sc_round_down(offset, c->page_size),
                      sc_round_up(end, c->page_size), true)) {
        if (sc_dirty_total(c) || c->wbj.inflight_bytes) {
            goto blocked;
        }
        goto bypass;
    }

    sc_iov_iter_init(&it, iov, iovcnt, iov_offset);
    write_apply(c, offset, end, &it, now_ns);
    if (through) {
        sc_wb_set_pressure(c, false);
        c->stats.write_through_requests++;
        res.status = SC_WRITE_THROUGH;
        res.wait = sc_ticket_new_range(c, offset, end, fua);
        return res;
    }
absorbed:
    sc_wb_set_pressure(c, false);
    res.delay_ns = pacing_delay(c, sc_dirty_total(c), len);
    c->stats.write_throttle_ns += res.delay_ns;
    return res;

blocked:
    sc_wb_set_pressure(c, true);
    c->stats.write_blocked_count++;
    res.status = SC_WRITE_BLOCKED;
    return res;

bypass:
    res.around = sc_around_begin(c, offset, len);
    if (!res.around) {
        c->stats.write_blocked_count++;
        res.status = SC_WRITE_BLOCKED;
        res.staged = true;
        return res;
    }
    c->stats.write_bypass_requests++;
    res.status = SC_WRITE_BYPASS;
    return res;
}

SCWriteResult sc_write(SCCache *c, uint64_t offset, uint64_t len,
                       const struct iovec *iov, int iovcnt,
                       size_t iov_offset, unsigned flags, int64_t now_ns)
{
    return write_absorb(c, offset, len, iov, iovcnt, iov_offset, flags,
                        now_ns, NULL);
}

SCWriteResult sc_write_staged(SCCache *c, uint64_t offset, uint64_t len,
                              const struct iovec *iov, int iovcnt,
                              size_t iov_offset, unsigned flags,
                              int64_t now_ns, SCStage *stage)
{
    sc_stage_init(stage);
    return write_absorb(c, offset, len, iov, iovcnt, iov_offset, flags,
                        now_ns, stage);
}

/* The life of a write-around (see sc-around.c for what it means). */
SCAround *sc_around_begin(SCCache *c, uint64_t offset, uint64_t len)
{
    uint64_t end = sc_range_end(offset, len);
    SCAround *a;
    SCExtent *e;

    /* Dropping a staged page would lose the copy made into it. */
    if (sc_staged_busy(c, offset, end, false)) {
        return NULL;
    }
    a = g_new0(SCAround, 1);

    a->link.data = a;
    a->start = offset;
    a->end = end;
    a->min_since = UINT64_MAX;
    for (e = sc_ext_lookup(c, offset); e && e->start < end;
         e = sc_ext_next(e)) {
        if (e->state == SC_EXT_DIRTY) {
            a->min_since = MIN(a->min_since, e->since);
        }
    }
    /*
     * An overlapping writeback job in flight may fail once nothing cached
     * depends on it any more: what it owed is owed by this write now.
     */
    a->min_since = MIN(a->min_since, sc_wb_min_since(c, offset, end));
    /* Listed first, so that the drop's ticket update sees the obligation. */
    sc_around_add(c, a);
    sc_range_drop(c, offset, len);
    return a;
}

bool sc_around_ready(SCCache *c, SCAround *a)
{
    return !sc_range_busy(c, a->start, a->end - a->start);
}

void sc_around_end(SCCache *c, SCAround *a, int ret)
{
    sc_around_remove(c, a);
    if (ret < 0 && a->min_since != UINT64_MAX) {
        /* The guest's request reports the error: nothing is kept. */
        sc_tickets_fail(c, a->start, a->end, a->min_since, ret, false);
    }
    sc_tickets_update(c, a->start, a->end);
    g_free(a);
}
