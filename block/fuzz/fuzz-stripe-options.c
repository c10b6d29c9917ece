/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the cache options and geometry as the driver hands
 * them to the cache core (block/stripe-cache.c: the options that
 * block/stripe-options.c parsed, the geometry of the assembled image).
 *
 * Fuzzes sc_options_check(), sc_cache_new() and sc_cache_reconfigure()
 * and checks that
 * - the three agree, and every refusal names the option (with its value)
 *   or the geometry field, since the driver shows it to the user as is;
 * - an accepted configuration gives a cache that works: a short sequence
 *   of writes, reads, flushes, discards, resizes, drops and reconfigures
 *   from the input, with every job completed at once, reads back what was
 *   written, and a flush puts it on the nodes;
 * - nothing crashes or leaks (ASan, UBSan, LeakSanitizer).
 *
 * The operation sequences themselves are fuzzed far deeper, against a
 * model and for a handful of configurations, by cache/fuzz; here the
 * configuration is what varies.
 *
 * Input, read with FuzzInput (zero bytes select the driver's defaults):
 * options, geometry, options for reconfigures, the window of the disk the
 * operations use, then 9 bytes per operation.
 */
#include "fuzz-input.h"
#include "stripe-cache.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#define KiB             UINT64_C(1024)
#define MiB             (1024 * KiB)
#define WINDOW          (256 * KiB)
#define MAX_IO          (64 * KiB)
#define MAX_OPS         48
/* Rounds of job completions after which a wait counts as a hang. */
#define MAX_ROUNDS      1000
/*
 * Operations run only where they take little memory and time, since the
 * fuzzer runs hundreds of inputs a second: every node request grows with
 * the alignment, readahead windows and what is cached with cache-size.
 * Larger values are still fuzzed on creation and reconfigure.
 */
#define MAX_IO_ALIGN    (1 * MiB)
#define MAX_IO_CACHE    (64 * MiB)

/* The driver's geometry for a 4-node image (block/stripe-cache.c). */
static const SCGeometry default_geo = {
    .disk_size = 1024 * MiB,
    .stripe_unit = 64 * KiB,
    .node_count = 4,
    .align = 512,
    .max_writeback_per_node = 4,
    .max_fetch_per_node = 4,
};

enum {
    OP_WRITE,
    OP_WRITE_FUA,
    OP_READ,
    OP_FLUSH,
    OP_DISCARD,
    OP_TICK,
    OP_RESIZE,
    OP_DROP,
    OP_RECONF,
    OP__MAX,
};

typedef struct Run {
    SCCache *c;
    SCOptions opts[2];          /* [0] at creation, [1] for reconfigures */
    int cur;                    /* the one in effect */
    uint64_t mem_limit;         /* what memory_bytes may reach */
    SCGeometry geo;             /* disk_size follows resizes */
    uint64_t base, len;         /* the window the operations use */
    uint8_t *disk;              /* node contents in the window */
    uint8_t *exp;               /* what the guest must read there */
    uint8_t *buf;               /* one request's data */
    int64_t now;
    uint32_t ver;
} Run;

/*
 * Option values: zero picks the default, the other selectors spread the
 * fuzzer's effort over the whole range, small values and powers of two.
 */
static uint64_t fuzz_value(FuzzInput *in, uint64_t dflt)
{
    uint8_t sel = fuzz_u8(in);
    uint64_t v;

    if (!sel) {
        return dflt;
    }
    v = fuzz_u64(in);
    switch (sel % 4) {
    case 0:
        return v;
    case 1:
        return v % (4 * dflt + 1);
    case 2:
        return (v % 4096) * KiB;
    default:
        return (UINT64_C(1) << (v % 64)) + (int8_t)(v >> 8);
    }
}

static void fuzz_options(FuzzInput *in, SCOptions *o)
{
    uint8_t flip;

    sc_options_init_defaults(o);
    o->size = fuzz_value(in, o->size);
    o->max_dirty = fuzz_value(in, o->max_dirty);
    o->target_dirty = fuzz_value(in, o->target_dirty);
    o->max_dirty_age_ns = fuzz_value(in, o->max_dirty_age_ns);
    flip = fuzz_u8(in);
    o->writethrough_until_flush ^= flip & 1;
    o->eager_writeback ^= (flip >> 1) & 1;
    o->readahead_trigger_requests =
        fuzz_value(in, o->readahead_trigger_requests);
    o->readahead_max_bytes = fuzz_value(in, o->readahead_max_bytes);
    o->readahead_disable_after_bytes =
        fuzz_value(in, o->readahead_disable_after_bytes);
}

static void fuzz_geometry(FuzzInput *in, SCGeometry *g)
{
    g->disk_size = fuzz_value(in, default_geo.disk_size);
    g->stripe_unit = fuzz_value(in, default_geo.stripe_unit);
    g->node_count = fuzz_value(in, default_geo.node_count);
    g->align = fuzz_value(in, default_geo.align);
    g->max_writeback_per_node =
        fuzz_value(in, default_geo.max_writeback_per_node);
    g->max_fetch_per_node = fuzz_value(in, default_geo.max_fetch_per_node);
}

/* An option refusal starts with the option and its value. */
static void check_option_message(const SCOptions *o, const char *msg)
{
    const struct {
        const char *name;
        uint64_t value;
    } names[] = {
        /* longer names first: cache-max-dirty is a prefix of -age */
        { "cache-max-dirty-age", o->max_dirty_age_ns },
        { "cache-size", o->size },
        { "cache-max-dirty", o->max_dirty },
        { "cache-target-dirty", o->target_dirty },
        { "readahead-trigger-requests", o->readahead_trigger_requests },
        { "readahead-max-bytes", o->readahead_max_bytes },
        { "readahead-disable-after-bytes",
          o->readahead_disable_after_bytes },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        char *want = g_strdup_printf("%s (%" PRIu64, names[i].name,
                                     names[i].value);
        bool match = g_str_has_prefix(msg, want);

        g_free(want);
        if (match) {
            return;
        }
    }
    fuzz_check(false, "refusal does not name an option and its value: %s",
               msg);
}

static void check_geometry_message(const char *msg)
{
    static const char *const fields[] = {
        "stripe unit (", "node alignment (", "node count",
        "max_writeback_per_node", "max_fetch_per_node", "disk size",
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(fields); i++) {
        if (g_str_has_prefix(msg, fields[i])) {
            return;
        }
    }
    fuzz_check(false, "refusal does not name a geometry field: %s", msg);
}

/*
 * Node contents outside the window: never written, so any fixed pattern,
 * one that differs between neighbouring bytes and sectors.
 */
static uint8_t pattern(uint64_t pos)
{
    return pos ^ (pos >> 9) ^ 0x5a;
}

static uint8_t node_byte(Run *r, uint64_t pos)
{
    return pos - r->base < r->len ? r->disk[pos - r->base] : pattern(pos);
}

/* The job contract of stripe-cache.h. */
static void check_job(Run *r, const SCJob *job, bool wb)
{
    const SCGeometry *g = &r->geo;
    uint64_t end = job->offset + job->len, sum = 0;
    int i;

    fuzz_check(job->len > 0 && end > job->offset, "job [%" PRIu64 ", +%"
               PRIu64 ")", job->offset, job->len);
    fuzz_check(job->offset / g->stripe_unit == (end - 1) / g->stripe_unit,
               "job [%" PRIu64 ", %" PRIu64 ") crosses a stripe unit",
               job->offset, end);
    fuzz_check(job->node == job->offset / g->stripe_unit % g->node_count,
               "job at %" PRIu64 " on node %u", job->offset, job->node);
    for (i = 0; i < job->iovcnt; i++) {
        sum += job->iov[i].iov_len;
    }
    fuzz_check(sum == job->len, "job iov of %" PRIu64 " bytes for %" PRIu64,
               sum, job->len);
    if (wb) {
        fuzz_check(job->offset >= r->base && end <= r->base + r->len,
                   "writeback [%" PRIu64 ", %" PRIu64 ") of bytes never "
                   "written", job->offset, end);
    } else {
        fuzz_check(job->offset % g->align == 0 && job->offset < g->disk_size,
                   "fetch at %" PRIu64 ", alignment %u, disk size %" PRIu64,
                   job->offset, g->align, g->disk_size);
        fuzz_check(end <= g->disk_size ||
                   (end % g->align == 0 && end - g->disk_size < g->align),
                   "fetch [%" PRIu64 ", %" PRIu64 ") past the disk end %"
                   PRIu64, job->offset, end, g->disk_size);
    }
}

/* Read node bytes [pos, pos + len) into @dst. */
static void read_nodes(Run *r, uint64_t pos, uint64_t len, uint8_t *dst)
{
    uint64_t k;

    if (pos >= r->base && pos - r->base + len <= r->len) {
        memcpy(dst, r->disk + (pos - r->base), len);
        return;
    }
    for (k = 0; k < len; k++) {
        dst[k] = node_byte(r, pos + k);
    }
}

static void complete_fetch(Run *r, const SCJob *job)
{
    uint64_t pos = job->offset;
    int i;

    check_job(r, job, false);
    for (i = 0; i < job->iovcnt; i++) {
        read_nodes(r, pos, job->iov[i].iov_len, job->iov[i].iov_base);
        pos += job->iov[i].iov_len;
    }
    sc_fetch_done(r->c, job->id, 0, r->now);
}

/* Issue and complete every prefetch job the cache has queued. */
static void run_prefetch(Run *r)
{
    SCJob job;
    int n = 0;

    while (sc_prefetch_next(r->c, &job)) {
        complete_fetch(r, &job);
        fuzz_check(++n < MAX_ROUNDS, "prefetch jobs without end");
    }
}

/* Issue every writeback job due now, then complete them; false if none. */
static bool run_writeback(Run *r)
{
    GArray *jobs = g_array_new(false, false, sizeof(SCJob));
    SCJob job;
    guint i;
    bool any;

    while (sc_writeback_next(r->c, r->now, &job)) {
        check_job(r, &job, true);
        g_array_append_val(jobs, job);
        fuzz_check(jobs->len < MAX_ROUNDS, "writeback jobs without end");
    }
    for (i = 0; i < jobs->len; i++) {
        SCJob *j = &g_array_index(jobs, SCJob, i);
        uint8_t *dst = r->disk + (j->offset - r->base);
        int k;

        for (k = 0; k < j->iovcnt; k++) {
            memcpy(dst, j->iov[k].iov_base, j->iov[k].iov_len);
            dst += j->iov[k].iov_len;
        }
        sc_writeback_done(r->c, j->id, 0, r->now);
    }
    any = jobs->len > 0;
    g_array_unref(jobs);
    return any;
}

/* Move time to the cache's next deadline, if it has one. */
static bool advance_to_deadline(Run *r)
{
    int64_t t = sc_next_deadline(r->c, r->now);

    if (t == INT64_MAX) {
        return false;
    }
    fuzz_check(t >= r->now, "deadline %" PRId64 " in the past (%" PRId64
               ")", t, r->now);
    r->now = MAX(t, r->now + 1);
    return true;
}

static void wait_flush(Run *r, SCFlush *f)
{
    int round, st;

    for (round = 0; round < MAX_ROUNDS; round++) {
        st = sc_flush_status(r->c, f);
        if (st != 1) {
            fuzz_check(st == 0, "flush failed (%d) without a failed "
                       "writeback", st);
            sc_flush_release(r->c, f);
            return;
        }
        if (!run_writeback(r)) {
            fuzz_check(advance_to_deadline(r), "flush pending, no "
                       "writeback job and no deadline");
        }
    }
    fuzz_check(false, "flush never completes");
}

static void check_memory(Run *r)
{
    SCStats st;

    sc_cache_get_stats(r->c, &st);
    fuzz_check(st.memory_bytes <= r->mem_limit, "%" PRIu64 " bytes of "
               "memory, cache-size %" PRIu64, st.memory_bytes, r->mem_limit);
    fuzz_check(st.dirty_bytes <= st.memory_bytes &&
               st.clean_bytes <= st.memory_bytes,
               "dirty %" PRIu64 ", clean %" PRIu64 ", memory %" PRIu64,
               st.dirty_bytes, st.clean_bytes, st.memory_bytes);
}

/*
 * The write-around path of the glue: write the nodes once no older
 * writeback runs over the range.
 */
static void write_nodes(Run *r, SCAround *a, uint64_t off, uint64_t len,
                        const uint8_t *data)
{
    int round;

    for (round = 0; !sc_around_ready(r->c, a); round++) {
        fuzz_check(round < MAX_ROUNDS && run_writeback(r), "range busy, "
                   "no writeback job");
    }
    if (data) {
        memcpy(r->disk + off, data, len);
        memcpy(r->exp + off, data, len);
    } else {
        memset(r->disk + off, 0, len);
        memset(r->exp + off, 0, len);
    }
    sc_around_end(r->c, a, 0);
}

static void do_write(Run *r, uint64_t off, uint64_t len, unsigned flags)
{
    struct iovec iov = { r->buf, len };
    SCWriteResult res;
    uint64_t i;
    int round;

    r->ver++;
    for (i = 0; i < len; i++) {
        r->buf[i] = r->ver * 37 + i * 3 + (i >> 9);
    }
    for (round = 0; round < MAX_ROUNDS; round++) {
        res = sc_write(r->c, r->base + off, len, &iov, 1, 0, flags, r->now);
        switch (res.status) {
        case SC_WRITE_DONE:
            fuzz_check(!(flags & SC_WRITE_FUA), "FUA write absorbed");
            fuzz_check(res.delay_ns >= 0, "delay %" PRId64, res.delay_ns);
            memcpy(r->exp + off, r->buf, len);
            return;
        case SC_WRITE_THROUGH:
            memcpy(r->exp + off, r->buf, len);
            wait_flush(r, res.wait);
            fuzz_check(!memcmp(r->disk + off, r->buf, len), "write-through "
                       "completed before the data was on the nodes");
            return;
        case SC_WRITE_BLOCKED:
            if (!run_writeback(r)) {
                fuzz_check(advance_to_deadline(r), "write blocked, nothing "
                           "to write back");
            }
            break;
        case SC_WRITE_BYPASS:
            write_nodes(r, res.around, off, len, r->buf);
            return;
        default:
            fuzz_check(false, "write status %d", res.status);
        }
    }
    fuzz_check(false, "write blocked forever");
}

/* A HIT or DIRECT piece read into @b has what the guest wrote. */
static void check_piece_data(Run *r, const SCPiece *p, const uint8_t *b)
{
    fuzz_check(!memcmp(b, r->exp + (p->offset - r->base), p->len),
               "read [%" PRIu64 ", +%" PRIu64 ") (kind %d) returned other "
               "data", p->offset, p->len, p->kind);
}

static void do_read(Run *r, uint64_t off, uint64_t len)
{
    GArray *todo = g_array_new(false, false, sizeof(SCPiece));
    SCPiece all = { .offset = r->base + off, .len = len };
    unsigned flags = 0;
    int round;

    memset(r->buf, 0xa5, len);
    g_array_append_val(todo, all);
    for (round = 0; todo->len; round++) {
        GArray *next = g_array_new(false, false, sizeof(SCPiece));
        guint t, i;

        fuzz_check(round < MAX_ROUNDS, "read never completes");
        for (t = 0; t < todo->len; t++) {
            SCPiece *want = &g_array_index(todo, SCPiece, t);
            uint8_t *dst = r->buf + (want->offset - r->base - off);
            struct iovec iov = { dst, want->len };
            GArray *pieces = sc_read(r->c, want->offset, want->len, &iov, 1,
                                     0, flags, r->now);
            uint64_t pos = want->offset;

            for (i = 0; i < pieces->len; i++) {
                SCPiece *p = &g_array_index(pieces, SCPiece, i);
                uint8_t *b = r->buf + (p->offset - r->base - off);

                fuzz_check(p->offset == pos && p->len > 0 &&
                           p->offset + p->len <= want->offset + want->len,
                           "pieces do not tile the read at %" PRIu64, pos);
                pos += p->len;
                switch (p->kind) {
                case SC_PIECE_DIRECT:
                    read_nodes(r, p->offset, p->len, b);
                    check_piece_data(r, p, b);
                    break;
                case SC_PIECE_HIT:
                    check_piece_data(r, p, b);
                    break;
                case SC_PIECE_FETCH:
                    fuzz_check(p->job.offset <= p->offset &&
                               p->job.offset + p->job.len >=
                               p->offset + p->len,
                               "fetch job does not cover its piece");
                    complete_fetch(r, &p->job);
                    g_array_append_val(next, *p);
                    break;
                case SC_PIECE_WAIT:
                    /* our fetches complete at once: a queued prefetch */
                    run_prefetch(r);
                    g_array_append_val(next, *p);
                    break;
                default:
                    fuzz_check(false, "piece kind %d", p->kind);
                }
            }
            fuzz_check(pos == want->offset + want->len, "pieces end at %"
                       PRIu64 ", the read at %" PRIu64, pos,
                       want->offset + want->len);
            g_array_unref(pieces);
        }
        g_array_unref(todo);
        todo = next;
        flags = SC_READ_RETRY;
    }
    g_array_unref(todo);
    run_prefetch(r);
}

static void do_flush(Run *r)
{
    wait_flush(r, sc_flush_begin(r->c, true));
    fuzz_check(!memcmp(r->disk, r->exp, r->len), "flushed, but the nodes "
               "do not hold what was written");
}

static void do_reconf(Run *r)
{
    const SCOptions *o = &r->opts[!r->cur];
    char *want = sc_options_check(o), *msg = NULL;
    bool ok = sc_cache_reconfigure(r->c, o, &msg);
    SCStats st;

    fuzz_check(ok == !want, "reconfigure says %d, sc_options_check \"%s\"",
               ok, want ? want : "ok");
    if (ok) {
        fuzz_check(!msg, "accepted with a message: %s", msg);
        r->cur = !r->cur;
        /* dirty data over a smaller size is written back, not dropped */
        sc_cache_get_stats(r->c, &st);
        r->mem_limit = MAX(o->size, st.memory_bytes);
    } else {
        fuzz_check(msg && !strcmp(msg, want), "reconfigure refused with "
                   "\"%s\", sc_options_check says \"%s\"", msg, want);
        fuzz_check(!sc_cache_reconfigure(r->c, o, NULL), "reconfigure "
                   "accepted without a message pointer");
    }
    g_free(msg);
    g_free(want);
}

static void do_drop(Run *r)
{
    SCStats before, after;
    int ret;

    sc_cache_get_stats(r->c, &before);
    ret = sc_cache_drop(r->c);
    sc_cache_get_stats(r->c, &after);
    /* no job is ever in flight between operations here */
    if (before.dirty_bytes) {
        fuzz_check(ret == -EBUSY && after.dirty_bytes == before.dirty_bytes,
                   "drop with dirty data returned %d", ret);
    } else {
        fuzz_check(ret == 0 && after.memory_bytes == 0, "drop returned %d, "
                   "%" PRIu64 " bytes left", ret, after.memory_bytes);
    }
}

static void run_op(Run *r, FuzzInput *in)
{
    uint8_t kind = fuzz_u8(in) % OP__MAX;
    uint32_t a = fuzz_u32(in), b = fuzz_u32(in);
    uint64_t off = a % r->len;
    uint64_t len = 1 + b % MIN(MAX_IO, r->len - off);

    switch (kind) {
    case OP_WRITE:
    case OP_WRITE_FUA:
        do_write(r, off, len, kind == OP_WRITE_FUA ? SC_WRITE_FUA : 0);
        break;
    case OP_READ:
        do_read(r, off, len);
        break;
    case OP_FLUSH:
        do_flush(r);
        break;
    case OP_DISCARD:
        write_nodes(r, sc_around_begin(r->c, r->base + off, len), off, len,
                    NULL);
        break;
    case OP_TICK:
        r->now += (int64_t)(a % 4000) * 1000000;
        while (run_writeback(r)) {
            /* everything due now */
        }
        break;
    case OP_RESIZE:
        /* never below the window: the guest only uses the disk */
        r->geo.disk_size = MIN(r->base + r->len + (uint64_t)(a % 4096) * 512,
                               SC_MAX_DISK_SIZE);
        sc_cache_set_disk_size(r->c, r->geo.disk_size);
        break;
    case OP_DROP:
        do_drop(r);
        break;
    case OP_RECONF:
        do_reconf(r);
        break;
    }
    check_memory(r);
}

static void run_cache(Run *r, FuzzInput *in)
{
    /* static: allocating them per input made page faults dominate */
    static uint8_t disk[WINDOW], exp[WINDOW], buf[MAX_IO];
    uint64_t i;
    int n;

    r->base = fuzz_u64(in) % r->geo.disk_size;
    r->len = MIN(WINDOW, r->geo.disk_size - r->base);
    r->disk = disk;
    r->exp = exp;
    r->buf = buf;
    for (i = 0; i < r->len; i++) {
        r->disk[i] = r->exp[i] = pattern(r->base + i);
    }
    r->now = 1000000000;
    r->mem_limit = r->opts[0].size;

    for (n = 0; n < MAX_OPS && in->pos < in->size; n++) {
        run_op(r, in);
    }

    /* Everything written is on the nodes after a flush, and reads back. */
    do_flush(r);
    do_drop(r);
    do_read(r, 0, MIN(MAX_IO, r->len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in;
    Run r = { 0 };
    char *opt_msg, *msg = NULL;

    fuzz_input_init(&in, data, size);
    fuzz_options(&in, &r.opts[0]);
    fuzz_geometry(&in, &r.geo);
    fuzz_options(&in, &r.opts[1]);

    opt_msg = sc_options_check(&r.opts[0]);
    if (opt_msg) {
        check_option_message(&r.opts[0], opt_msg);
    }
    r.c = sc_cache_new(&r.opts[0], &r.geo, &msg);
    if (!r.c) {
        fuzz_check(msg, "sc_cache_new refused without a message");
        if (opt_msg) {
            fuzz_check(!strcmp(msg, opt_msg), "sc_cache_new says \"%s\", "
                       "sc_options_check \"%s\"", msg, opt_msg);
        } else {
            check_geometry_message(msg);
        }
        fuzz_check(!sc_cache_new(&r.opts[0], &r.geo, NULL), "accepted "
                   "without a message pointer");
        g_free(msg);
        g_free(opt_msg);
        return 0;
    }
    fuzz_check(!opt_msg && !msg, "sc_cache_new accepted options that "
               "sc_options_check refuses: %s", opt_msg);

    if (r.geo.disk_size && r.geo.align <= MAX_IO_ALIGN &&
        MAX(r.opts[0].size, r.opts[1].size) <= MAX_IO_CACHE) {
        run_cache(&r, &in);
    }
    sc_cache_free(r.c);
    return 0;
}

/*
 * Seeds: the driver's defaults, the smallest cache, write-through, no
 * readahead, the largest stripe unit, and a set of refusals.
 */

typedef struct SeedValue {
    uint8_t sel;
    uint64_t v;
} SeedValue;

static void put_value(GByteArray *out, SeedValue v)
{
    fuzz_put_u8(out, v.sel);
    if (v.sel) {
        fuzz_put_u64(out, v.v);
    }
}

/* A raw value: selector 4 (4 % 4 == 0) passes the next u64 through. */
#define RAW(x) ((SeedValue) { 4, (x) })
#define DFLT ((SeedValue) { 0, 0 })

static void put_options(GByteArray *out, SeedValue size, SeedValue dirty,
                        SeedValue target, SeedValue ra)
{
    put_value(out, size);
    put_value(out, dirty);
    put_value(out, target);
    put_value(out, DFLT);               /* max dirty age */
    fuzz_put_u8(out, 0);                /* writethrough until flush */
    put_value(out, DFLT);               /* readahead trigger */
    put_value(out, ra);
    put_value(out, DFLT);               /* readahead disable after */
}

static void put_geometry(GByteArray *out, SeedValue disk, SeedValue unit,
                         SeedValue nodes, SeedValue align)
{
    put_value(out, disk);
    put_value(out, unit);
    put_value(out, nodes);
    put_value(out, align);
    put_value(out, DFLT);
    put_value(out, DFLT);
}

/* Writes, reads back, a flush, a reconfigure and more IO. */
static void put_ops(GByteArray *out)
{
    static const uint8_t ops[][9] = {
        { OP_WRITE, 0, 0x10, 0, 0, 0xff, 0x3f, 0, 0 },
        { OP_READ, 0, 0x08, 0, 0, 0xff, 0x7f, 0, 0 },
        { OP_WRITE_FUA, 0, 0x40, 0, 0, 0x00, 0x02, 0, 0 },
        { OP_TICK, 0xd0, 0x07, 0, 0, 0, 0, 0, 0 },
        { OP_READ, 0, 0x00, 1, 0, 0xff, 0xff, 0, 0 },
        { OP_READ, 0, 0x00, 2, 0, 0xff, 0xff, 0, 0 },
        { OP_RECONF, 0, 0, 0, 0, 0, 0, 0, 0 },
        { OP_DISCARD, 0, 0x20, 0, 0, 0xff, 0x0f, 0, 0 },
        { OP_WRITE, 0, 0x30, 0, 0, 0xff, 0xff, 0, 0 },
        { OP_FLUSH, 0, 0, 0, 0, 0, 0, 0, 0 },
        { OP_RESIZE, 0x10, 0, 0, 0, 0, 0, 0, 0 },
        { OP_DROP, 0, 0, 0, 0, 0, 0, 0, 0 },
        { OP_READ, 0, 0x00, 0, 0, 0xff, 0xff, 0, 0 },
    };

    fuzz_put_bytes(out, &ops[0][0], sizeof(ops));
}

typedef struct SeedOptions {
    SeedValue size, dirty, target, ra;
} SeedOptions;

typedef struct SeedGeometry {
    SeedValue unit, nodes, align;
} SeedGeometry;

#define OPTS(size, dirty, target, ra) \
    ((SeedOptions) { RAW(size), RAW(dirty), RAW(target), RAW(ra) })
#define OPTS_DFLT ((SeedOptions) { DFLT, DFLT, DFLT, DFLT })
#define GEO(unit, nodes, align) \
    ((SeedGeometry) { RAW(unit), RAW(nodes), RAW(align) })
#define GEO_DFLT ((SeedGeometry) { DFLT, DFLT, DFLT })

static void seed(const char *dir, const char *name, SeedOptions o,
                 SeedGeometry g, SeedOptions o2)
{
    GByteArray *out = g_byte_array_new();

    put_options(out, o.size, o.dirty, o.target, o.ra);
    put_geometry(out, DFLT, g.unit, g.nodes, g.align);
    put_options(out, o2.size, o2.dirty, o2.target, o2.ra);
    fuzz_put_u64(out, 3 * MiB + 77);    /* window base */
    put_ops(out);
    fuzz_write_seed(dir, name, out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("SC_FUZZ_SEED_CORPUS");

    if (!dir) {
        return 0;
    }
    seed(dir, "defaults", OPTS_DFLT, GEO_DFLT, OPTS_DFLT);
    seed(dir, "smallest", OPTS(64 * KiB, 32 * KiB, 16 * KiB, 0),
         GEO(512, 1, 512), OPTS(128 * KiB, 64 * KiB, 0, 32 * KiB));
    seed(dir, "writethrough", OPTS(MiB, 0, 0, 256 * KiB),
         GEO(4096, 64, 4096), OPTS_DFLT);
    seed(dir, "big-unit", OPTS(256 * MiB, 64 * MiB, 0, 8 * MiB),
         GEO(64 * MiB, 3, 64 * KiB), OPTS(64 * KiB, 0, 0, 0));
    seed(dir, "shrink", OPTS(8 * MiB, 6 * MiB, 4 * MiB, MiB),
         GEO(4096, 2, 4096), OPTS(64 * KiB, 64 * KiB, 64 * KiB, 0));
    seed(dir, "bad-size", OPTS(4096, 0, 0, 0), GEO_DFLT, OPTS_DFLT);
    seed(dir, "bad-dirty", OPTS(MiB, 2 * MiB, 0, 0), GEO_DFLT, OPTS_DFLT);
    seed(dir, "bad-readahead", OPTS(MiB, 0, 0, MiB), GEO_DFLT, OPTS_DFLT);
    seed(dir, "bad-unit", OPTS_DFLT, GEO(3000, 4, 512), OPTS_DFLT);
    seed(dir, "bad-align", OPTS_DFLT, GEO(4096, 4, 8192), OPTS_DFLT);
    seed(dir, "bad-nodes", OPTS_DFLT, GEO(4096, 0, 512), OPTS_DFLT);
    seed(dir, "bad-reconf", OPTS_DFLT, GEO_DFLT, OPTS(MiB, 2 * MiB, 0, 0));
    exit(0);
}
