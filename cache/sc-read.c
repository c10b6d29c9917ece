/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: reads, fetch jobs and prefetch.
 *
 * A read copies every cached byte at once (clean, dirty or under
 * writeback: the cache always holds the newest data) and cuts the rest
 * into pieces.  Absent ranges become fetch jobs, expanded to whole pages
 * (a multiple of the node alignment) but never across a segment, so one
 * job is one node request.  The absent bytes of a job's range become
 * FETCHING extents pointing at the job; a write, discard or drop that hits
 * them replaces or removes them, and the job's completion fills only the
 * FETCHING extents still pointing at it.  That is how stale node data is
 * kept from ever becoming "clean".
 *
 * Fetch jobs read into pages of their own (reserved when the job is
 * created, so memory stays bounded); on completion a job page is adopted
 * by the store when the store has no page there, otherwise the waiting
 * bytes are copied.
 *
 * Bytes being written around (sc-around.c) are neither read nor fetched
 * until the write-around lands: the reader waits for it.
 *
 * Prefetch jobs come from readahead windows, wait in a per-node queue and
 * are handed out by sc_prefetch_next() within the node's job limit.  When a
 * guest read needs bytes of a prefetch job that is still queued, the read
 * gets that job as its own FETCH piece instead of waiting behind the queue.
 */
#include "sc-internal.h"

/* Share of cache-size that queued and in-flight prefetch may reserve. */
#define SC_PREFETCH_SHARE 4

static void sc_prefetch_window(SCCache *c, uint64_t start, uint64_t end);
static void read_walk(SCCache *c, uint64_t offset, uint64_t len,
                      unsigned flags, int64_t now_ns, SCIovIter *it,
                      SCHits *hits, GArray *pieces);

/* Make every absent byte of the job's range wait for the job. */
static void fetch_job_claim(SCCache *c, SCFetchJob *job)
{
    uint64_t pos = job->start;
    SCExtent *e = sc_ext_lookup(c, pos);

    while (pos < job->end) {
        uint64_t gap_end, around_end;
        SCExtent *f;

        if (e && e->start <= pos) {
            pos = e->end;
            e = sc_ext_next(e);
            continue;
        }
        gap_end = MIN(job->end, e ? e->start : job->end);
        around_end = sc_around_covered_end(c, pos);
        if (around_end > pos) {
            /* Being written around: the job's copy would be stale. */
            pos = MIN(around_end, gap_end);
            continue;
        }
        gap_end = MIN(gap_end, sc_around_next_start(c, pos));
        f = sc_ext_new(c, pos, gap_end, SC_EXT_FETCHING);
        f->fetch = job;
        sc_ext_insert(c, f);
        pos = gap_end;
    }
}

static void job_to_public(const SCFetchJob *job, SCJob *out)
{
    memset(out, 0, sizeof(*out));
    out->id = job->id;
    out->offset = job->start;
    out->len = job->end - job->start;
    out->node = job->node;
    out->iov = job->iov;
    out->iovcnt = job->npages;
}

/* Expand [start, end) to whole pages within its segment and the disk. */
static void fetch_range(SCCache *c, uint64_t start, uint64_t end,
                        uint64_t *js, uint64_t *je)
{
    uint64_t seg_start = sc_seg_start(c, start);
    uint64_t seg_end = sc_seg_end(c, start);
    uint64_t disk_end = sc_round_up(c->geo.disk_size, c->geo.align);

    *js = MAX(sc_round_down(start, c->page_size), seg_start);
    *je = MIN(sc_round_up(end, c->page_size), seg_end);
    *je = MAX(MIN(*je, disk_end), end);
}

static void piece_push(GArray *pieces, SCPieceKind kind, uint64_t off,
                       uint64_t len, const SCFetchJob *job)
{
    SCPiece *last = pieces->len ?
        &g_array_index(pieces, SCPiece, pieces->len - 1) : NULL;
    SCPiece p;

    if (last && last->kind == kind && last->offset + last->len == off &&
        kind != SC_PIECE_FETCH) {
        last->len += len;
        return;
    }
    if (last && kind == SC_PIECE_FETCH && last->kind == SC_PIECE_FETCH &&
        last->job.id == job->id && last->offset + last->len == off) {
        last->len += len;
        return;
    }
    memset(&p, 0, sizeof(p));
    p.kind = kind;
    p.offset = off;
    p.len = len;
    if (job) {
        job_to_public(job, &p.job);
    }
    g_array_append_val(pieces, p);
}

/*
 * Serve a FETCHING extent met by a read: wait for an issued job, or take
 * over a queued prefetch job so the reader does not queue behind it.
 */
static void read_fetching(SCCache *c, GArray *pieces, SCExtent *e,
                          uint64_t pos, uint64_t end)
{
    SCFetchJob *job = e->fetch;

    if (!job->issued) {
        sc_fetch_job_unqueue(c, job);
        job->issued = true;
        job->handout_call = c->fetch.read_call;
        c->nodes[job->node].fetch_inflight++;
        c->fetch.issued++;
        c->stats.readahead_issued_bytes += job->waiting;
    }
    if (job->handout_call == c->fetch.read_call) {
        /*
         * Handed out by this very call (pieces_dedup_fetch() sorts out
         * a second, non-adjacent piece of the same job).
         */
        piece_push(pieces, SC_PIECE_FETCH, pos, end - pos, job);
    } else {
        piece_push(pieces, SC_PIECE_WAIT, pos, end - pos, NULL);
    }
}

/*
 * Fix up FETCH pieces pushed for a job that were not contiguous: only the
 * first one carries the job, the others wait for it.
 */
static void pieces_dedup_fetch(GArray *pieces)
{
    GHashTable *seen;
    guint i, fetches = 0;

    for (i = 0; i < pieces->len; i++) {
        fetches += g_array_index(pieces, SCPiece, i).kind == SC_PIECE_FETCH;
    }
    if (fetches < 2) {
        return;
    }
    seen = g_hash_table_new(g_int64_hash, g_int64_equal);
    for (i = 0; i < pieces->len; i++) {
        SCPiece *p = &g_array_index(pieces, SCPiece, i);

        if (p->kind != SC_PIECE_FETCH) {
            continue;
        }
        if (g_hash_table_contains(seen, &p->job.id)) {
            p->kind = SC_PIECE_WAIT;
            memset(&p->job, 0, sizeof(p->job));
        } else {
            g_hash_table_add(seen, &p->job.id);
        }
    }
    g_hash_table_destroy(seen);
}

/*
 * Join DIRECT pieces that follow each other (one per segment so far), so
 * that the caller reads them with one request, which the driver cuts
 * into node requests as large as the nodes take.
 */
static void pieces_merge_direct(GArray *pieces)
{
    guint i, out = 0;

    for (i = 0; i < pieces->len; i++) {
        SCPiece *p = &g_array_index(pieces, SCPiece, i);
        SCPiece *last = out ? &g_array_index(pieces, SCPiece, out - 1) : NULL;

        if (last && last->kind == SC_PIECE_DIRECT &&
            p->kind == SC_PIECE_DIRECT &&
            last->offset + last->len == p->offset) {
            last->len += p->len;
            continue;
        }
        if (out != i) {
            g_array_index(pieces, SCPiece, out) = *p;
        }
        out++;
    }
    g_array_set_size(pieces, out);
}

/* Mark bytes of prefetched extents as used, splitting at the read. */
static void read_mark_used(SCCache *c, uint64_t start, uint64_t end)
{
    SCExtent *e;

    sc_ext_carve(c, start);
    sc_ext_carve(c, end);
    for (e = sc_ext_lookup(c, start); e && e->start < end;
         e = sc_ext_next(e)) {
        if (e->state == SC_EXT_CLEAN && e->prefetched) {
            e->prefetched = false;
            c->stats.readahead_used_bytes += sc_ext_len(e);
        }
    }
    sc_ext_merge_range(c, start, end);
}

/*
 * Fetch [start, end) of one segment, absent when the read looked at it.
 * A job created earlier in this call may have claimed part of it already
 * (jobs are expanded to whole pages).
 */
static void read_gap_segment(SCCache *c, GArray *pieces, uint64_t start,
                             uint64_t end, bool direct)
{
    uint64_t pos = start;

    while (pos < end) {
        SCExtent *e = sc_ext_lookup(c, pos);
        uint64_t stop, js, je;
        SCFetchJob *job;

        if (e && e->start <= pos) {
            stop = MIN(e->end, end);
            g_assert(e->state == SC_EXT_FETCHING);
            read_fetching(c, pieces, e, pos, stop);
            pos = stop;
            continue;
        }
        stop = MIN(end, e ? e->start : end);
        js = sc_around_covered_end(c, pos);
        if (js > pos) {
            /* Written around right now: read it once that has landed. */
            stop = MIN(stop, js);
            piece_push(pieces, SC_PIECE_WAIT, pos, stop - pos, NULL);
            pos = stop;
            continue;
        }
        stop = MIN(stop, sc_around_next_start(c, pos));
        fetch_range(c, pos, stop, &js, &je);
        if (direct ||
            !sc_make_room(c, sc_pages_spanned(c, js, je) * c->page_size,
                          3, 0, 0, true)) {
            piece_push(pieces, SC_PIECE_DIRECT, pos, stop - pos, NULL);
            pos = stop;
            continue;
        }
        job = sc_fetch_job_new(c, js, je, false);
        job->issued = true;
        job->handout_call = c->fetch.read_call;
        c->fetch.issued++;
        fetch_job_claim(c, job);
        piece_push(pieces, SC_PIECE_FETCH, pos, stop - pos, job);
        pos = stop;
    }
}

typedef struct SCGap {
    uint64_t start;
    uint64_t end;
    guint piece;        /* index in the piece list it goes before */
} SCGap;

/*
 * A staged write copies into its pages with no lock held: a read of those
 * bytes now would race with the copy (and could see half of it).  Reads
 * and staged writes of a page exclude each other, as a reader-writer lock
 * would: a page with readers is not staged (sc_staged_begin()), and a
 * read of a staged page is refused until it is published, a matter of
 * microseconds.
 */
static bool read_refused(SCCache *c, uint64_t offset, uint64_t len)
{
    return sc_staged_busy(c, offset, sc_range_end(offset, len), false);
}

GArray *sc_read(SCCache *c, uint64_t offset, uint64_t len,
                const struct iovec *iov, int iovcnt, size_t iov_offset,
                unsigned flags, int64_t now_ns)
{
    GArray *pieces;
    SCIovIter it;

    if (read_refused(c, offset, len)) {
        return NULL;
    }
    pieces = g_array_new(FALSE, TRUE, sizeof(SCPiece));
    sc_iov_iter_init(&it, iov, iovcnt, iov_offset);
    read_walk(c, offset, len, flags, now_ns, &it, NULL, pieces);
    return pieces;
}

bool sc_read_pinned(SCCache *c, uint64_t offset, uint64_t len,
                    unsigned flags, int64_t now_ns, SCHits *hits,
                    GArray *pieces)
{
    sc_hits_init(hits);
    if (read_refused(c, offset, len)) {
        return false;
    }
    read_walk(c, offset, len, flags, now_ns, NULL, hits, pieces);
    return true;
}

/*
 * The read: the hits copied through @it at once, or pinned in @hits; the
 * pieces put in @pieces, emptied first.  A read that is all hits, the
 * common one, allocates nothing when @pieces has room.
 */
static void read_walk(SCCache *c, uint64_t offset, uint64_t len,
                      unsigned flags, int64_t now_ns, SCIovIter *it,
                      SCHits *hits, GArray *pieces)
{
    GArray *gaps = NULL;
    GArray *out;
    uint64_t end = sc_range_end(offset, len);
    uint64_t pos = offset, hit_bytes = 0, used_start = 0, used_end = 0;
    bool any_prefetched = false, retry = flags & SC_READ_RETRY;
    /* a large read: what is not cached is read around, not fetched */
    bool around = !retry && sc_bypasses(c, len);
    bool direct = (flags & SC_READ_DIRECT) || around;
    SCExtent *e;
    guint i, g;

    g_array_set_size(pieces, 0);
    c->fetch.read_call++;
    e = sc_ext_lookup(c, offset);
    while (pos < end) {
        if (e && e->start <= pos) {
            uint64_t stop = MIN(e->end, end);

            if (e->state == SC_EXT_FETCHING) {
                read_fetching(c, pieces, e, pos, stop);
                if (it) {
                    sc_iov_iter_skip(it, stop - pos);
                }
            } else {
                if (it) {
                    sc_pages_copy_out(c, pos, stop, it);
                } else {
                    sc_hits_add(c, hits, pos, stop, pos - offset);
                }
                piece_push(pieces, SC_PIECE_HIT, pos, stop - pos, NULL);
                hit_bytes += stop - pos;
                if (e->state == SC_EXT_CLEAN) {
                    sc_ext_touch(c, e);
                    if (e->prefetched) {
                        if (!any_prefetched) {
                            used_start = pos;
                        }
                        any_prefetched = true;
                        used_end = stop;
                    }
                }
            }
            pos = stop;
            e = sc_ext_next(e);
        } else {
            SCGap gap;

            gap.start = pos;
            gap.end = MIN(end, e ? e->start : end);
            gap.piece = pieces->len;
            if (!gaps) {
                gaps = g_array_new(FALSE, FALSE, sizeof(SCGap));
            }
            g_array_append_val(gaps, gap);
            if (it) {
                sc_iov_iter_skip(it, gap.end - pos);
            }
            pos = gap.end;
        }
    }
    if (any_prefetched) {
        read_mark_used(c, used_start, used_end);
    }

    /* Now create fetch jobs for the gaps, keeping the pieces in order. */
    if (!gaps) {
        out = pieces;
        goto done;
    }
    out = g_array_sized_new(FALSE, TRUE, sizeof(SCPiece),
                            pieces->len + gaps->len);
    g = 0;
    for (i = 0; i <= pieces->len; i++) {
        while (g < gaps->len && g_array_index(gaps, SCGap, g).piece == i) {
            SCGap *gap = &g_array_index(gaps, SCGap, g);
            uint64_t s = gap->start;

            while (s < gap->end) {
                uint64_t stop = MIN(gap->end, sc_seg_end(c, s));

                read_gap_segment(c, out, s, stop, direct);
                s = stop;
            }
            g++;
        }
        if (i < pieces->len) {
            SCPiece *p = &g_array_index(pieces, SCPiece, i);

            g_array_append_val(out, *p);
        }
    }
    g_array_unref(gaps);
    g_array_set_size(pieces, 0);
    g_array_append_vals(pieces, out->data, out->len);
    g_array_unref(out);
    out = pieces;
done:
    pieces_dedup_fetch(out);
    if (direct) {
        pieces_merge_direct(out);
    }

    if (!retry) {
        bool missed = false;
        uint64_t ws, we;

        for (i = 0; i < out->len; i++) {
            if (g_array_index(out, SCPiece, i).kind != SC_PIECE_HIT) {
                missed = true;
            }
        }
        c->stats.read_requests++;
        c->stats.read_hit_bytes += hit_bytes;
        c->stats.read_miss_bytes += len - hit_bytes;
        if (missed) {
            c->stats.read_miss_requests++;
        } else {
            c->stats.read_hit_requests++;
        }
        c->stats.read_bypass_requests += around && missed;
        /*
         * A read that large keeps the nodes busy by itself: readahead
         * would only copy what the next such read fetches anyway.
         */
        if (!around && sc_ra_observe(&c->ra, offset, len, &ws, &we)) {
            sc_prefetch_window(c, ws, we);
        }
    }
}

/*
 * Queue prefetch jobs for the absent parts of [start, end): one job per
 * absent run per segment, so the window spreads over the nodes.
 */
static void sc_prefetch_window(SCCache *c, uint64_t start, uint64_t end)
{
    uint64_t budget = c->opts.size / SC_PREFETCH_SHARE;
    uint64_t pos = start;
    SCExtent *e;

    end = MIN(end, c->geo.disk_size);
    e = sc_ext_lookup(c, pos);
    while (pos < end) {
        uint64_t gap_end, js, je, need;
        SCFetchJob *job;

        if (e && e->start <= pos) {
            pos = e->end;
            e = sc_ext_next(e);
            continue;
        }
        js = sc_around_covered_end(c, pos);
        if (js > pos) {
            pos = js;
            e = sc_ext_lookup(c, pos);
            continue;
        }
        gap_end = MIN(MIN(end, e ? e->start : end), sc_seg_end(c, pos));
        gap_end = MIN(gap_end, sc_around_next_start(c, pos));
        fetch_range(c, pos, gap_end, &js, &je);
        need = sc_pages_spanned(c, js, je) * c->page_size;
        if (c->fetch.prefetch_mem_bytes + need > budget ||
            !sc_make_room(c, need, 3, 0, 0, false)) {
            return;
        }
        job = sc_fetch_job_new(c, js, je, true);
        fetch_job_claim(c, job);
        sc_fetch_job_queue(c, job);
        pos = je;
        e = sc_ext_lookup(c, pos);
    }
}

bool sc_prefetch_next(SCCache *c, SCJob *out)
{
    uint32_t i;

    /* most calls find nothing queued: do not look at every node then */
    if (!c->fetch.queued) {
        return false;
    }
    for (i = 0; i < c->geo.node_count; i++) {
        uint32_t n = (c->fetch.prefetch_rr + i) % c->geo.node_count;
        SCNode *node = &c->nodes[n];
        SCFetchJob *job;

        if (!node->prefetch_queue.length ||
            node->fetch_inflight >= sc_fetch_jobs_max(c)) {
            continue;
        }
        job = node->prefetch_queue.head->data;
        sc_fetch_job_unqueue(c, job);
        job->issued = true;
        node->fetch_inflight++;
        c->fetch.issued++;
        c->stats.readahead_issued_bytes += job->waiting;
        c->fetch.prefetch_rr = n + 1;
        job_to_public(job, out);
        return true;
    }
    return false;
}

/* Turn FETCHING extent @e of @job into clean data from the job's pages. */
static void fetch_install(SCCache *c, SCFetchJob *job, SCExtent *e)
{
    uint64_t pos = e->start;

    while (pos < e->end) {
        uint64_t idx = sc_page_index(c, pos);
        uint64_t pstart = idx << c->page_shift;
        uint64_t n = MIN(e->end, pstart + c->page_size) - pos;
        uint32_t k = idx - job->first_page;
        SCPage *sp = sc_store_lookup(c, idx);

        if (!sp && job->pages[k]) {
            /* Adopt the job's page: no copy. */
            sc_store_insert(c, job->pages[k]);
            job->pages[k] = NULL;
            c->fetch.mem_bytes -= c->page_size;
            if (job->prefetch) {
                c->fetch.prefetch_mem_bytes -= c->page_size;
            }
        } else if (job->pages[k]) {
            sp = sc_store_writable(c, idx);
            memcpy(sp->data + (pos - pstart),
                   job->pages[k]->data + (pos - pstart), n);
        } else {
            /* Adopted for an earlier extent of this job: already there. */
            g_assert(sp);
        }
        pos += n;
    }
    sc_ext_unindex(c, e);
    e->state = SC_EXT_CLEAN;
    e->fetch = NULL;
    e->prefetched = job->prefetch;
    sc_store_add_used(c, e->start, e->end);
    sc_ext_index(c, e);
}

void sc_fetch_done(SCCache *c, uint64_t job_id, int ret, int64_t now_ns)
{
    SCFetchJob *job = g_hash_table_lookup(c->fetch.jobs, &job_id);
    uint64_t start, end;
    SCExtent *e;

    g_assert(job && job->issued);
    start = job->start;
    end = job->end;
    c->fetch.issued--;
    if (job->prefetch) {
        c->nodes[job->node].fetch_inflight--;
    }
    e = sc_ext_lookup(c, job->start);
    while (e && e->start < job->end) {
        SCExtent *next = sc_ext_next(e);

        if (e->state == SC_EXT_FETCHING && e->fetch == job) {
            if (ret == 0) {
                fetch_install(c, job, e);
            } else {
                sc_ext_delete(c, e, SC_DROP_FETCH_FAILED);
            }
        }
        e = next;
    }
    g_assert(job->waiting == 0);
    sc_fetch_job_free(c, job);
    if (ret == 0) {
        sc_ext_merge_range(c, start, end);
    }
}
