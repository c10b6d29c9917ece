/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: readahead streams (see sc-readahead.h).
 *
 * Detection.  Each stream remembers its frontier (the highest end read).
 * A read belongs to the stream whose frontier is nearest, within a
 * tolerance that grows with the request size, so several interleaved
 * streams are told apart.  A read counts as sequential when it moves the
 * frontier, or when it lands behind the frontier in a hole that an earlier
 * forward jump left (a reordered request of the same stream).  Re-reads
 * and random reads never count, and a read that fits no stream starts a
 * new one in the least recently used slot.
 *
 * Windows.  After trigger_requests sequential reads the first window is as
 * large as the data read sequentially so far (like librbd), and every
 * further window doubles, up to max_bytes; a window that was partly evicted
 * unread halves instead.  Windows are issued back to back from the end of
 * the previous one, and the next one is issued as soon as the reader enters
 * the last one (the async marker is the window start), so at least one
 * full window is always in flight ahead of a sequential reader.
 *
 * Alignment.  Window ends snap to a stripe-unit boundary when that changes
 * the size by less than half: windows then start on stripe units too, and
 * the cache splits them into one job per stripe unit, i.e. per node.
 */
#include "sc-readahead.h"

#include <glib.h>
#include <string.h>

#define RA_TOLERANCE_MIN (64 * 1024)
#define RA_TOLERANCE_MAX (8 * 1024 * 1024)
#define RA_TOLERANCE_REQUESTS 32

void sc_ra_init(SCReadahead *ra, const SCRaConfig *cfg)
{
    memset(ra, 0, sizeof(*ra));
    sc_ra_configure(ra, cfg);
}

void sc_ra_configure(SCReadahead *ra, const SCRaConfig *cfg)
{
    ra->cfg = *cfg;
    if (ra->cfg.min_bytes == 0) {
        ra->cfg.min_bytes = 1;
    }
    ra->disabled = cfg->disable_after_bytes &&
                   ra->total_read > cfg->disable_after_bytes;
}

void sc_ra_reset(SCReadahead *ra)
{
    memset(ra->streams, 0, sizeof(ra->streams));
}

static uint64_t ra_tolerance(uint64_t len)
{
    uint64_t tol = len > RA_TOLERANCE_MAX / RA_TOLERANCE_REQUESTS
                   ? RA_TOLERANCE_MAX : len * RA_TOLERANCE_REQUESTS;

    return MAX(tol, RA_TOLERANCE_MIN);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static SCRaStream *ra_match(SCReadahead *ra, uint64_t off, uint64_t len)
{
    uint64_t tol = ra_tolerance(len);
    SCRaStream *best = NULL;
    uint64_t best_dist = UINT64_MAX;
    int i;

    for (i = 0; i < SC_RA_STREAMS; i++) {
        SCRaStream *s = &ra->streams[i];
        uint64_t lo, hi, dist;

        if (!s->active) {
            continue;
        }
        lo = s->frontier > tol ? s->frontier - tol : 0;
        hi = MAX(sat_add(s->frontier, tol), s->ra_end);
        if (off < lo || off >= hi) {
            continue;
        }
        dist = off >= s->frontier ? off - s->frontier : s->frontier - off;
        if (dist < best_dist) {
            best = s;
            best_dist = dist;
        }
    }
    return best;
}

static SCRaStream *ra_recycle(SCReadahead *ra)
{
    SCRaStream *victim = &ra->streams[0];
    int i;

    for (i = 0; i < SC_RA_STREAMS; i++) {
        SCRaStream *s = &ra->streams[i];

        if (!s->active) {
            return s;
        }
        if (s->stamp < victim->stamp) {
            victim = s;
        }
    }
    return victim;
}

static uint64_t round_up_to(uint64_t x, uint64_t a)
{
    uint64_t r = x % a;

    return r ? sat_add(x, a - r) : x;
}

/* End of a window of @size from @start, snapped as described above. */
static uint64_t ra_window_end(const SCReadahead *ra, uint64_t start,
                              uint64_t size)
{
    uint64_t end = sat_add(start, size);
    uint64_t su = ra->cfg.stripe_unit;

    if (su && end % su) {
        uint64_t down = end - end % su;
        uint64_t up = sat_add(down, su);
        bool down_ok = down > start && (end - down) * 2 < size;
        bool up_ok = (up - end) * 2 < size;

        if (down_ok && (!up_ok || end - down <= up - end)) {
            return down;
        }
        if (up_ok) {
            return up;
        }
    }
    return round_up_to(end, ra->cfg.min_bytes);
}

bool sc_ra_observe(SCReadahead *ra, uint64_t off, uint64_t len,
                   uint64_t *start, uint64_t *end)
{
    const SCRaConfig *cfg = &ra->cfg;
    uint64_t req_end = sat_add(off, len);
    uint64_t size, ws, we;
    SCRaStream *s;
    bool sequential = false;

    if (len == 0 || cfg->max_bytes == 0) {
        return false;
    }
    ra->total_read = sat_add(ra->total_read, len);
    if (cfg->disable_after_bytes &&
        ra->total_read > cfg->disable_after_bytes) {
        ra->disabled = true;
    }
    if (ra->disabled) {
        return false;
    }

    s = ra_match(ra, off, len);
    if (!s) {
        s = ra_recycle(ra);
        memset(s, 0, sizeof(*s));
        s->active = true;
        s->frontier = req_end;
        s->hits = 1;
        s->seq_bytes = len;
        s->stamp = ++ra->clock;
        return false;
    }
    s->stamp = ++ra->clock;

    if (off >= s->frontier) {
        s->skipped = MIN(sat_add(s->skipped, off - s->frontier),
                         ra_tolerance(len));
        s->frontier = req_end;
        sequential = true;
    } else if (req_end > s->frontier) {
        s->frontier = req_end;
        sequential = true;
    } else if (s->skipped >= len) {
        /* A reordered request filling a hole we jumped over. */
        s->skipped -= len;
        sequential = true;
    }
    if (sequential) {
        if (s->hits < UINT32_MAX) {
            s->hits++;
        }
        s->seq_bytes = sat_add(s->seq_bytes, len);
    }
    if (s->hits < cfg->trigger_requests) {
        return false;
    }

    if (s->window == 0) {
        size = s->seq_bytes;
    } else if (s->frontier > s->ra_start) {
        size = s->wasted ? s->window / 2 : s->window * 2;
    } else {
        return false;
    }
    size = MAX(MIN(size, cfg->max_bytes), cfg->min_bytes);

    ws = MAX(s->ra_end, s->frontier);
    we = MIN(ra_window_end(ra, ws, size), cfg->disk_size);
    if (we <= ws) {
        return false;
    }
    if (s->window == 0) {
        s->ra_first = ws;
    }
    s->window = size;
    s->ra_start = ws;
    s->ra_end = we;
    s->wasted = false;
    *start = ws;
    *end = we;
    return true;
}

void sc_ra_wasted(SCReadahead *ra, uint64_t off)
{
    int i;

    for (i = 0; i < SC_RA_STREAMS; i++) {
        SCRaStream *s = &ra->streams[i];

        if (s->active && s->window && off >= s->ra_first &&
            off < s->ra_end) {
            s->wasted = true;
        }
    }
}

unsigned sc_ra_active_streams(const SCReadahead *ra)
{
    unsigned n = 0;
    int i;

    for (i = 0; i < SC_RA_STREAMS; i++) {
        n += ra->streams[i].active;
    }
    return n;
}
