/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache model harness (see model.h).
 *
 * The reference model is four arrays over the disk: the data and version
 * the guest must read back (exp, exp_ver) and the data and version the
 * simulated nodes hold (disk, disk_ver).  Every write gets a new version.
 * Checks:
 *   - every byte a read returns from the cache, or reads directly, equals
 *     exp at that moment (reads always see the newest data), also when
 *     the read's hits are pinned and copied several operations later;
 *   - a writeback job carries exactly the newest data when issued, its
 *     buffer does not change while in flight, and it never lands on a node
 *     over a newer version (newest data reaches the node last);
 *   - after a flush ticket succeeds, every byte is on the nodes in the
 *     version it had when the flush began, or newer; after a write-through
 *     ticket, the write's bytes are;
 *   - a writeback failure is reported to some guest ticket before a guest
 *     flush begun after it can succeed, and an internal flush fails only
 *     for failures while it waits (it never takes the guest's error);
 *   - write-arounds (discard, write-zeroes, bypass writes) land on the
 *     nodes some operations after they begin; a flush that wanted the
 *     dirty data they dropped does not succeed before they land, and
 *     reads of their range never see node data older than what they
 *     dropped;
 *   - block status calls a byte "ask the nodes" only when the nodes hold
 *     exactly what the guest reads there;
 *   - memory never exceeds cache-size and writers never push dirty data
 *     over cache-max-dirty; jobs respect stripe units, alignment, the disk
 *     end and the per-node limits;
 *   - sc_cache_check() finds every structure consistent;
 *   - at the end everything drains and the disk equals exp.
 */
#include "model.h"
#include "sc-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#define MODEL_MAX_IOV 4
#define MODEL_READ_RETRY_LIMIT 100000
#define MODEL_META_SLACK (256 * sizeof(SCExtent))

typedef struct MJob {
    bool wb;
    bool from_prefetch_next;
    bool touched;               /* wb: a discard or bypass overlapped it */
    SCJob job;
    uint8_t *snap;              /* wb: data at issue; fetch: node data */
    uint32_t *snap_ver;         /* wb: versions at issue */
} MJob;

typedef struct MRead {
    uint64_t off;
    uint64_t len;
    uint8_t *buf;
    GArray *pending;            /* SCPiece: FETCH and WAIT to read again */
    GArray *jobs;               /* uint64_t: FETCH jobs it must see done */
    uint64_t fetch_mark;        /* fetch completions when it last read */
    unsigned retries;
} MRead;

typedef struct MTicket {
    SCFlush *f;
    bool ranged;
    bool guest;                 /* global: a guest flush */
    uint64_t any_mark;          /* any failures before it began */
    uint64_t start;
    uint64_t end;
    uint32_t ver;               /* ranged: version of the write */
    uint32_t *snap;             /* global: exp_ver at begin, or NULL */
    uint64_t snap_len;
    uint64_t fail_mark;         /* relevant failures before it began */
} MTicket;

/* A write-around begun but not landed yet. */
typedef struct MAround {
    SCAround *a;
    uint64_t off;
    uint64_t len;
    uint8_t *data;              /* NULL: zeroes */
} MAround;

typedef struct Model {
    ModelConfig cfg;
    SCCache *c;
    uint64_t disk_size;
    uint8_t *exp;
    uint8_t *disk;
    uint32_t *exp_ver;
    uint32_t *disk_ver;
    uint32_t ver;
    uint64_t last_write;        /* offset of the last write: rewrites */
    GPtrArray *jobs;
    GPtrArray *reads;
    GPtrArray *tickets;
    GPtrArray *arounds;         /* MAround */
    GPtrArray *pinned;          /* MPinned: reads not copied yet */
    int64_t now;
    uint64_t fetch_completions; /* and write-arounds landed */
    uint64_t failures;          /* writeback failures the guest must see */
    uint64_t any_failures;
    uint64_t unreported_from;   /* first unreported failure, 0 = none */
    bool mem_over_ok;           /* cache-size was lowered below usage */
    bool inject;                /* failures enabled (off while draining) */
    size_t op_index;
    GString *err;
    /* scratch buffers of disk_size + SCRATCH_SLACK bytes, reused */
    uint8_t *iov_scratch;
    uint8_t *data_scratch;
    GArray *pinned_pieces;      /* reused by every pinned read, as QEMU's */
    uint8_t *cmp_scratch;
    GPtrArray *spare_snaps;     /* flush snapshots to reuse */
} Model;

#define SCRATCH_SLACK (64 * 1024)

#define MCHECK(m, cond, ...)                                     \
    do {                                                         \
        if (!(cond)) {                                           \
            model_fail(m, __VA_ARGS__);                          \
            return false;                                        \
        }                                                        \
    } while (0)

static void G_GNUC_PRINTF(2, 3) model_fail(Model *m, const char *fmt, ...)
{
    va_list ap;

    if (m->err->len) {
        return;
    }
    if (m->op_index == SIZE_MAX) {
        g_string_append(m->err, "final drain: ");
    } else {
        g_string_append_printf(m->err, "op %zu: ", m->op_index);
    }
    va_start(ap, fmt);
    g_string_append_vprintf(m->err, fmt, ap);
    va_end(ap);
}

uint64_t model_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/*
 * Data of version @ver at @pos.  Cheap (the harness writes a lot of it),
 * different in every byte from any other version less than 65536 apart,
 * and different between neighbouring positions, so stale or misplaced
 * data is caught.
 */
static uint8_t pattern(uint64_t pos, uint32_t ver)
{
    return (uint8_t)(pos * 0x9D + (pos >> 8) * 0x61 + ver * 0x3B +
                     (ver >> 8));
}

/*
 * Configurations
 */

static uint64_t pick(uint64_t *rs, const uint64_t *v, size_t n)
{
    return v[model_rand(rs) % n];
}

void model_config_from_seed(uint64_t seed, ModelConfig *cfg)
{
    static const uint64_t sizes[] = { 64 * SC_KiB, 128 * SC_KiB,
                                      256 * SC_KiB, 512 * SC_KiB };
    static const uint64_t aligns[] = { 1, 512, 512, 4096 };
    static const uint64_t ages[] = { 0, SC_NS_PER_MS, 100 * SC_NS_PER_MS,
                                     SC_NS_PER_SEC, 10 * SC_NS_PER_SEC };
    static const uint64_t disables[] = { 0, 0, 256 * SC_KiB, 4 * SC_MiB };
    static const uint64_t wb_fail[] = { 0, 20, 100, 300 };
    static const uint64_t fetch_fail[] = { 0, 20, 100 };
    static const uint64_t bypass[] = { 0, 0, 16 * SC_KiB, 64 * SC_KiB,
                                       512 * SC_KiB };
    uint64_t rs = seed, ra_max;
    SCOptions *o = &cfg->opts;
    SCGeometry *g = &cfg->geo;

    memset(cfg, 0, sizeof(*cfg));
    g->stripe_unit = 512ULL << (model_rand(&rs) % 8);
    g->align = pick(&rs, aligns, G_N_ELEMENTS(aligns));
    g->align = MIN(g->align, g->stripe_unit);
    g->node_count = 1 + model_rand(&rs) % 5;
    g->max_writeback_per_node = 1 + model_rand(&rs) % 4;
    g->max_fetch_per_node = 1 + model_rand(&rs) % 3;
    cfg->disk_size = sc_round_up(16 * SC_KiB +
                                 model_rand(&rs) % (1008 * SC_KiB),
                                 g->align);
    g->disk_size = cfg->disk_size;

    sc_options_init_defaults(o);
    o->size = pick(&rs, sizes, G_N_ELEMENTS(sizes));
    o->max_dirty = model_rand(&rs) % 8 == 0 ? 0
                   : model_rand(&rs) % (o->size + 1);
    o->target_dirty = model_rand(&rs) % (o->max_dirty + 1);
    o->max_dirty_age_ns = pick(&rs, ages, G_N_ELEMENTS(ages));
    o->writethrough_until_flush = model_rand(&rs) % 2;
    o->readahead_trigger_requests = 1 + model_rand(&rs) % 10;
    ra_max = model_rand(&rs) % 5 == 0 ? 0
             : (4 * SC_KiB) << (model_rand(&rs) % 6);
    o->readahead_max_bytes = MIN(ra_max, o->size / 2);
    o->readahead_disable_after_bytes = pick(&rs, disables,
                                            G_N_ELEMENTS(disables));
    o->bypass_bytes = pick(&rs, bypass, G_N_ELEMENTS(bypass));
    o->node_jobs = model_rand(&rs) % 2 ? 0 : 1 + model_rand(&rs) % 3;
    cfg->wb_fail_permille = pick(&rs, wb_fail, G_N_ELEMENTS(wb_fail));
    cfg->fetch_fail_permille = pick(&rs, fetch_fail,
                                    G_N_ELEMENTS(fetch_fail));
    cfg->check_interval = 1 + model_rand(&rs) % 16;
    o->eager_writeback = model_rand(&rs) % 2;
}

char *model_format_config(const ModelConfig *cfg)
{
    const SCOptions *o = &cfg->opts;
    const SCGeometry *g = &cfg->geo;

    return g_strdup_printf("config %" PRIu64 " %" PRIu64 " %" PRIu32
                           " %" PRIu32 " %" PRIu32 " %" PRIu32
                           " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                           " %d %" PRIu32 " %" PRIu64 " %" PRIu64
                           " %" PRIu32 " %" PRIu32 " %" PRIu32
                           " %" PRIu64 " %" PRIu32 " %d",
                           cfg->disk_size, g->stripe_unit, g->align,
                           g->node_count, g->max_writeback_per_node,
                           g->max_fetch_per_node, o->size, o->max_dirty,
                           o->target_dirty, o->max_dirty_age_ns,
                           o->writethrough_until_flush,
                           o->readahead_trigger_requests,
                           o->readahead_max_bytes,
                           o->readahead_disable_after_bytes,
                           cfg->wb_fail_permille, cfg->fetch_fail_permille,
                           cfg->check_interval, o->bypass_bytes,
                           o->node_jobs, o->eager_writeback);
}

bool model_parse_config(const char *line, ModelConfig *cfg)
{
    SCOptions *o = &cfg->opts;
    SCGeometry *g = &cfg->geo;
    int wtuf, eager;

    memset(cfg, 0, sizeof(*cfg));
    if (sscanf(line, "config %" SCNu64 " %" SCNu64 " %" SCNu32 " %" SCNu32
               " %" SCNu32 " %" SCNu32 " %" SCNu64 " %" SCNu64 " %" SCNu64
               " %" SCNu64 " %d %" SCNu32 " %" SCNu64 " %" SCNu64
               " %" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu64
               " %" SCNu32 " %d",
               &cfg->disk_size, &g->stripe_unit, &g->align, &g->node_count,
               &g->max_writeback_per_node, &g->max_fetch_per_node,
               &o->size, &o->max_dirty, &o->target_dirty,
               &o->max_dirty_age_ns, &wtuf, &o->readahead_trigger_requests,
               &o->readahead_max_bytes, &o->readahead_disable_after_bytes,
               &cfg->wb_fail_permille, &cfg->fetch_fail_permille,
               &cfg->check_interval, &o->bypass_bytes,
               &o->node_jobs, &eager) != 20) {
        return false;
    }
    o->writethrough_until_flush = wtuf;
    o->eager_writeback = eager;
    g->disk_size = cfg->disk_size;
    return cfg->check_interval > 0;
}

static const char *const op_names[MOP__MAX] = {
    [MOP_READ] = "read", [MOP_WRITE] = "write", [MOP_WRITE_FUA] = "fua",
    [MOP_FLUSH] = "flush", [MOP_DISCARD] = "discard", [MOP_ZERO] = "zero",
    [MOP_WB_ISSUE] = "wb", [MOP_PF_ISSUE] = "pf",
    [MOP_COMPLETE] = "complete", [MOP_TICK] = "tick", [MOP_RETRY] = "retry",
    [MOP_RECONF] = "reconf", [MOP_DROP] = "drop", [MOP_RESIZE] = "resize",
    [MOP_AROUND] = "around", [MOP_STATUS] = "status",
};

char *model_format_op(const ModelOp *op)
{
    return g_strdup_printf("%s %" PRIu32 " %" PRIu32 " %" PRIu32,
                           op_names[op->kind % MOP__MAX], op->a, op->b,
                           op->c);
}

bool model_parse_op(const char *line, ModelOp *op)
{
    char name[32];
    unsigned k;

    if (sscanf(line, "%31s %" SCNu32 " %" SCNu32 " %" SCNu32, name, &op->a,
               &op->b, &op->c) != 4) {
        return false;
    }
    for (k = 0; k < MOP__MAX; k++) {
        if (!strcmp(name, op_names[k])) {
            op->kind = k;
            return true;
        }
    }
    return false;
}

/*
 * Operation generator
 */

typedef struct GenCursor {
    uint64_t pos;
    uint32_t len;
} GenCursor;

static uint32_t gen_len(uint64_t *rs, const ModelConfig *cfg)
{
    uint64_t r = model_rand(rs) % 100;
    uint64_t unit = MAX(cfg->geo.align, 512);

    if (r < 25) {
        return 1 + model_rand(rs) % 64;
    } else if (r < 60) {
        return 1 + model_rand(rs) % (2 * unit + 1);
    } else if (r < 90) {
        return unit * (1 + model_rand(rs) % 16);
    }
    return 1 + model_rand(rs) % (96 * SC_KiB);
}

void model_gen_ops(uint64_t seed, const ModelConfig *cfg, ModelOp *ops,
                   size_t n)
{
    /* per mille, in ModelOpKind order */
    static const unsigned weights[MOP__MAX] = {
        205, 190, 20, 45, 15, 15, 125, 60, 175, 45, 40, 3, 5, 2, 30, 25,
    };
    uint64_t rs = seed;
    GenCursor cur[3];
    size_t i;
    unsigned k;

    for (k = 0; k < 3; k++) {
        cur[k].pos = model_rand(&rs) % cfg->disk_size;
        cur[k].len = MAX(cfg->geo.align, 512) << (model_rand(&rs) % 4);
    }
    for (i = 0; i < n; i++) {
        ModelOp *op = &ops[i];
        unsigned r = model_rand(&rs) % 1000;
        GenCursor *gc;

        for (k = 0; k < MOP__MAX - 1 && r >= weights[k]; k++) {
            r -= weights[k];
        }
        op->kind = k;
        op->a = model_rand(&rs);
        op->b = model_rand(&rs);
        op->c = model_rand(&rs);
        switch (k) {
        case MOP_READ:
        case MOP_WRITE:
            if (model_rand(&rs) % 2) {
                /* a sequential stream, sometimes slightly reordered */
                gc = &cur[model_rand(&rs) % 3];
                if (model_rand(&rs) % 8 == 0) {
                    gc->pos = model_rand(&rs) % cfg->disk_size;
                }
                op->a = gc->pos;
                if (model_rand(&rs) % 6 == 0) {
                    op->a += gc->len;
                } else {
                    gc->pos += gc->len;
                }
                if (gc->pos >= cfg->disk_size) {
                    gc->pos = 0;
                }
                op->b = gc->len;
                break;
            }
            op->a = model_rand(&rs) % cfg->disk_size;
            op->b = gen_len(&rs, cfg);
            break;
        case MOP_WRITE_FUA:
        case MOP_DISCARD:
        case MOP_ZERO:
        case MOP_STATUS:
            op->a = model_rand(&rs) % cfg->disk_size;
            op->b = gen_len(&rs, cfg);
            break;
        default:
            break;
        }
    }
}

/*
 * The runner
 */

static MJob *pool_find(Model *m, uint64_t id, guint *idx)
{
    guint i;

    for (i = 0; i < m->jobs->len; i++) {
        MJob *j = g_ptr_array_index(m->jobs, i);

        if (j->job.id == id) {
            if (idx) {
                *idx = i;
            }
            return j;
        }
    }
    return NULL;
}

static void mjob_free(gpointer p)
{
    MJob *j = p;

    g_free(j->snap);
    g_free(j->snap_ver);
    g_free(j);
}

static void mread_free(gpointer p)
{
    MRead *r = p;

    g_free(r->buf);
    g_array_unref(r->pending);
    g_array_unref(r->jobs);
    g_free(r);
}

static void mticket_free(Model *m, MTicket *t)
{
    sc_flush_release(m->c, t->f);
    if (t->snap && t->snap_len == m->cfg.disk_size) {
        g_ptr_array_add(m->spare_snaps, t->snap);
    } else {
        g_free(t->snap);
    }
    g_free(t);
}

/* Clamp a request to the disk; false if nothing is left. */
static bool clamp_range(Model *m, uint32_t a, uint32_t b, uint64_t *off,
                        uint64_t *len)
{
    if (m->disk_size == 0) {
        return false;
    }
    *off = a % m->disk_size;
    *len = MIN((uint64_t)MAX(b, 1), m->disk_size - *off);
    return *len > 0;
}

/*
 * Build an iovec over a copy of @buf with a pad of (sel % 8) bytes in
 * front (skipped through iov_offset) and up to MODEL_MAX_IOV pieces, in
 * the scratch buffer that *@store points to afterwards.
 */
static int make_iov(Model *m, uint8_t *buf, uint64_t len, uint32_t sel,
                    struct iovec *iov, size_t *iov_off, uint8_t **store)
{
    size_t pad = sel % 8;
    uint8_t *mem = m->iov_scratch;
    int cnt = 1 + (sel >> 3) % MODEL_MAX_IOV;
    uint64_t total = pad + len, pos = 0;
    int i;

    memcpy(mem + pad, buf, len);
    for (i = 0; i < cnt; i++) {
        uint64_t n = i == cnt - 1 ? total - pos
                     : MIN(total - pos, ((sel >> (5 + 4 * i)) % 16) * 97);

        iov[i].iov_base = mem + pos;
        iov[i].iov_len = n;
        pos += n;
    }
    *iov_off = pad;
    *store = mem;
    return cnt;
}

static bool job_valid(Model *m, const SCJob *job, bool wb)
{
    const SCGeometry *g = &m->cfg.geo;
    uint64_t end = job->offset + job->len, sum = 0;
    int i;

    MCHECK(m, job->len > 0, "empty job");
    MCHECK(m, job->offset / g->stripe_unit == (end - 1) / g->stripe_unit,
           "job [%" PRIu64 ", %" PRIu64 ") crosses a stripe unit",
           job->offset, end);
    MCHECK(m, job->node == (job->offset / g->stripe_unit) % g->node_count,
           "job on the wrong node");
    MCHECK(m, end <= sc_round_up(m->disk_size, g->align),
           "job [%" PRIu64 ", %" PRIu64 ") past the disk end %" PRIu64,
           job->offset, end, m->disk_size);
    if (!wb) {
        MCHECK(m, job->offset % g->align == 0 &&
               (end % g->align == 0 || end >= m->disk_size),
               "fetch job [%" PRIu64 ", %" PRIu64 ") not aligned",
               job->offset, end);
    }
    for (i = 0; i < job->iovcnt; i++) {
        sum += job->iov[i].iov_len;
    }
    MCHECK(m, sum == job->len, "job iov does not match its length");
    return true;
}

static void iov_to_buf(const SCJob *job, uint8_t *buf)
{
    int i;

    for (i = 0; i < job->iovcnt; i++) {
        memcpy(buf, job->iov[i].iov_base, job->iov[i].iov_len);
        buf += job->iov[i].iov_len;
    }
}

static void buf_to_iov(const SCJob *job, const uint8_t *buf)
{
    int i;

    for (i = 0; i < job->iovcnt; i++) {
        memcpy(job->iov[i].iov_base, buf, job->iov[i].iov_len);
        buf += job->iov[i].iov_len;
    }
}

/* Node data for a fetch of @job: beyond the disk end reads zeroes. */
static void node_read(Model *m, const SCJob *job, uint8_t *data)
{
    uint64_t n = job->offset < m->disk_size
                 ? MIN(job->len, m->disk_size - job->offset) : 0;

    memcpy(data, m->disk + job->offset, n);
    memset(data + n, 0, job->len - n);
}

static bool add_fetch_job(Model *m, const SCJob *job, bool from_pf,
                          bool read_now)
{
    MJob *j;
    guint k;

    if (!job_valid(m, job, false)) {
        return false;
    }
    MCHECK(m, !pool_find(m, job->id, NULL), "fetch job handed out twice");
    if (from_pf) {
        unsigned count = 1;

        for (k = 0; k < m->jobs->len; k++) {
            MJob *o = g_ptr_array_index(m->jobs, k);

            count += !o->wb && o->from_prefetch_next &&
                     o->job.node == job->node;
        }
        MCHECK(m, count <= (m->cfg.opts.node_jobs ?:
                            m->cfg.geo.max_fetch_per_node),
               "too many prefetch jobs on node %u", job->node);
    }
    j = g_new0(MJob, 1);
    j->job = *job;
    j->from_prefetch_next = from_pf;
    if (read_now) {
        j->snap = g_malloc(job->len);
        node_read(m, job, j->snap);
    }
    g_ptr_array_add(m->jobs, j);
    return true;
}

/* Check the pieces of a read of [off, off + len) into @buf. */
static bool read_pieces(Model *m, MRead *r, uint64_t off, uint64_t len,
                        uint8_t *buf, GArray *pieces, uint32_t sel,
                        bool pinned)
{
    uint64_t pos = off;
    guint i;

    for (i = 0; i < pieces->len; i++) {
        SCPiece *p = &g_array_index(pieces, SCPiece, i);
        uint8_t *b = buf + (p->offset - off);

        MCHECK(m, p->offset == pos && p->len > 0 &&
               p->offset + p->len <= off + len,
               "pieces do not tile the read at %" PRIu64, pos);
        pos += p->len;
        switch (p->kind) {
        case SC_PIECE_HIT:
            /* a pinned read's hits are copied and checked later */
            MCHECK(m, pinned || !memcmp(b, m->exp + p->offset, p->len),
                   "read of [%" PRIu64 ", +%" PRIu64 ") returned stale "
                   "data", p->offset, p->len);
            break;
        case SC_PIECE_DIRECT:
            memcpy(b, m->disk + p->offset, p->len);
            MCHECK(m, !memcmp(b, m->exp + p->offset, p->len),
                   "direct piece [%" PRIu64 ", +%" PRIu64 ") while the "
                   "nodes are stale", p->offset, p->len);
            break;
        case SC_PIECE_FETCH:
            MCHECK(m, p->job.offset <= p->offset &&
                   p->job.offset + p->job.len >= p->offset + p->len,
                   "fetch job does not cover its piece");
            if (!add_fetch_job(m, &p->job, false, sel & 1)) {
                return false;
            }
            g_array_append_val(r->jobs, p->job.id);
            g_array_append_val(r->pending, *p);
            break;
        case SC_PIECE_WAIT:
            g_array_append_val(r->pending, *p);
            break;
        default:
            MCHECK(m, false, "bad piece kind %d", p->kind);
        }
    }
    MCHECK(m, pos == off + len, "pieces do not cover the read");
    return true;
}

/* A read of [off, off + len) about to start; data_scratch is its buffer. */
static MRead *mread_new(Model *m, uint64_t off, uint64_t len)
{
    MRead *r = g_new0(MRead, 1);

    r->off = off;
    r->len = len;
    r->pending = g_array_new(FALSE, FALSE, sizeof(SCPiece));
    r->jobs = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    memset(m->data_scratch, 0xA5, len);
    return r;
}

/* Keep @r (whose data so far is @buf) if it has pieces left to read. */
static void mread_keep(Model *m, MRead *r, const uint8_t *buf, bool ok)
{
    r->fetch_mark = m->fetch_completions;
    if (ok && r->pending->len) {
        r->buf = g_memdup2(buf, r->len);
        g_ptr_array_add(m->reads, r);
    } else {
        mread_free(r);
    }
}

/*
 * A read whose hits are pinned, copied only some operations later (as the
 * glue copies them once it dropped its lock, while other threads write,
 * fetch and evict): the copy must still give what the guest had written
 * when the read looked.
 */
typedef struct MPinned {
    SCHits hits;
    uint64_t off;
    uint64_t len;
    uint8_t *want;              /* exp at the time of the read */
    GArray *ranges;             /* SCPiece: the HIT pieces */
} MPinned;

static bool finish_pinned(Model *m, MPinned *p)
{
    uint8_t *got = m->cmp_scratch;
    struct iovec iov = { got, p->len };
    bool ok = true;
    guint i;

    sc_hits_copy(&p->hits, &iov, 1, 0);
    sc_hits_done(&p->hits);
    for (i = 0; i < p->ranges->len && ok; i++) {
        SCPiece *r = &g_array_index(p->ranges, SCPiece, i);
        uint64_t at = r->offset - p->off;

        if (memcmp(got + at, p->want + at, r->len)) {
            model_fail(m, "pinned hit [%" PRIu64 ", +%" PRIu64 ") changed "
                       "before it was copied", r->offset, r->len);
            ok = false;
        }
    }
    g_free(p->want);
    g_array_unref(p->ranges);
    g_free(p);
    return ok;
}

static bool finish_all_pinned(Model *m)
{
    bool ok = true;

    while (m->pinned->len) {
        ok = finish_pinned(m, g_ptr_array_steal_index(m->pinned, 0)) && ok;
    }
    return ok;
}

static bool do_read_pinned(Model *m, uint64_t off, uint64_t len,
                           uint32_t sel)
{
    MPinned *p = g_new0(MPinned, 1);
    GArray *pieces;
    MRead *r;
    guint i;
    bool ok;

    p->off = off;
    p->len = len;
    p->want = g_memdup2(m->exp + off, len);
    p->ranges = g_array_new(FALSE, FALSE, sizeof(SCPiece));
    pieces = m->pinned_pieces;
    sc_read_pinned(m->c, off, len, 0, m->now, &p->hits, pieces);
    r = mread_new(m, off, len);
    ok = read_pieces(m, r, off, len, m->data_scratch, pieces, sel, true);
    for (i = 0; i < pieces->len; i++) {
        SCPiece *pc = &g_array_index(pieces, SCPiece, i);

        if (pc->kind == SC_PIECE_HIT) {
            g_array_append_val(p->ranges, *pc);
        }
    }
    g_ptr_array_add(m->pinned, p);
    /* the rest of the read goes on as any read's does */
    mread_keep(m, r, m->data_scratch, ok);
    return ok;
}

static bool do_read(Model *m, const ModelOp *op)
{
    struct iovec iov[MODEL_MAX_IOV];
    uint64_t off, len;
    size_t iov_off;
    uint8_t *store;
    GArray *pieces;
    MRead *r;
    int cnt;
    bool ok;

    if (!clamp_range(m, op->a, op->b, &off, &len)) {
        return true;
    }
    if (op->c % 4 == 1) {
        return do_read_pinned(m, off, len, op->c);
    }
    r = mread_new(m, off, len);
    cnt = make_iov(m, m->data_scratch, len, op->c, iov, &iov_off, &store);
    pieces = sc_read(m->c, off, len, iov, cnt, iov_off, 0, m->now);
    ok = read_pieces(m, r, off, len, store + iov_off, pieces, op->c, false);
    g_array_unref(pieces);
    mread_keep(m, r, store + iov_off, ok);
    return ok;
}

static bool read_ready(Model *m, MRead *r)
{
    bool waits = false;
    guint i;

    for (i = 0; i < r->jobs->len; i++) {
        if (pool_find(m, g_array_index(r->jobs, uint64_t, i), NULL)) {
            return false;
        }
    }
    for (i = 0; i < r->pending->len; i++) {
        waits |= g_array_index(r->pending, SCPiece, i).kind ==
                 SC_PIECE_WAIT;
    }
    return !waits || m->fetch_completions > r->fetch_mark;
}

/* Read the pending pieces of @r again (SC_READ_RETRY). */
static bool retry_read(Model *m, MRead *r, bool *finished)
{
    GArray *old = r->pending;
    guint i;

    r->pending = g_array_new(FALSE, FALSE, sizeof(SCPiece));
    g_array_set_size(r->jobs, 0);
    r->fetch_mark = m->fetch_completions;
    for (i = 0; i < old->len; i++) {
        SCPiece *p = &g_array_index(old, SCPiece, i);
        struct iovec iov = { r->buf + (p->offset - r->off), p->len };
        /* now and then as a reader starved by evictions would */
        unsigned flags = SC_READ_RETRY |
                         (r->retries % 4 == 3 ? SC_READ_DIRECT : 0);
        GArray *pieces = sc_read(m->c, p->offset, p->len, &iov, 1, 0,
                                 flags, m->now);
        bool ok = read_pieces(m, r, p->offset, p->len,
                              r->buf + (p->offset - r->off), pieces,
                              r->retries, false);

        g_array_unref(pieces);
        if (!ok) {
            g_array_unref(old);
            return false;
        }
    }
    g_array_unref(old);
    r->retries++;
    MCHECK(m, r->retries < MODEL_READ_RETRY_LIMIT, "read at %" PRIu64
           " never completes", r->off);
    *finished = r->pending->len == 0;
    return true;
}

static bool do_retry(Model *m, uint32_t sel, bool all)
{
    guint i = 0;

    while (i < m->reads->len) {
        MRead *r = g_ptr_array_index(m->reads, i);
        bool finished = false;

        if ((all || (sel++ % 2) == 0) && read_ready(m, r)) {
            if (!retry_read(m, r, &finished)) {
                return false;
            }
        }
        if (finished) {
            g_ptr_array_remove_index(m->reads, i);
        } else {
            i++;
        }
    }
    return true;
}

/* A fetch job failed: reads that needed it fail (the guest sees EIO). */
static void fail_reads_of(Model *m, uint64_t id)
{
    guint i = 0, k;

    while (i < m->reads->len) {
        MRead *r = g_ptr_array_index(m->reads, i);
        bool hit = false;

        for (k = 0; k < r->jobs->len; k++) {
            hit |= g_array_index(r->jobs, uint64_t, k) == id;
        }
        if (hit) {
            g_ptr_array_remove_index(m->reads, i);
        } else {
            i++;
        }
    }
}

static bool ticket_done(Model *m, MTicket *t, int st)
{
    uint64_t b;

    if (st < 0) {
        MCHECK(m, st == -EIO, "ticket failed with %d", st);
        MCHECK(m, m->any_failures, "ticket failed without any failure");
        if (!t->ranged && !t->guest) {
            MCHECK(m, m->any_failures > t->any_mark, "an internal flush "
                   "took an error from before it began (the guest's)");
            return true;
        }
        m->unreported_from = 0;
        return true;
    }
    if (t->ranged) {
        for (b = t->start; b < MIN(t->end, m->disk_size); b++) {
            MCHECK(m, m->disk_ver[b] >= t->ver, "write-through ticket "
                   "done but byte %" PRIu64 " is not on the node", b);
        }
        return true;
    }
    if (t->guest && m->unreported_from &&
        t->fail_mark >= m->unreported_from) {
        MCHECK(m, false, "a writeback error was never reported");
    }
    if (t->snap) {
        for (b = 0; b < MIN(m->disk_size, t->snap_len); b++) {
            MCHECK(m, m->disk_ver[b] >= t->snap[b], "flush done but byte %"
                   PRIu64 " has version %u on the node, %u expected", b,
                   m->disk_ver[b], t->snap[b]);
        }
    }
    return true;
}

static bool check_tickets(Model *m)
{
    guint i = 0;

    while (i < m->tickets->len) {
        MTicket *t = g_ptr_array_index(m->tickets, i);
        int st = sc_flush_status(m->c, t->f);

        if (st == 1) {
            i++;
            continue;
        }
        if (!ticket_done(m, t, st)) {
            return false;
        }
        mticket_free(m, t);
        g_ptr_array_remove_index(m->tickets, i);
    }
    return true;
}

static MTicket *add_ticket(Model *m, SCFlush *f)
{
    MTicket *t = g_new0(MTicket, 1);

    t->f = f;
    t->fail_mark = m->failures;
    t->any_mark = m->any_failures;
    t->guest = true;
    g_ptr_array_add(m->tickets, t);
    return t;
}

/* Complete pool job @idx with success or failure. */
static bool complete_job(Model *m, guint idx, bool fail)
{
    MJob *j = g_ptr_array_index(m->jobs, idx);
    uint64_t b, end = j->job.offset + j->job.len;
    uint8_t *now;

    g_ptr_array_steal_index(m->jobs, idx);
    if (j->wb) {
        now = m->cmp_scratch;
        iov_to_buf(&j->job, now);
        if (memcmp(now, j->snap, j->job.len)) {
            mjob_free(j);
            MCHECK(m, false, "writeback buffer changed while in flight");
        }
        if (!fail) {
            for (b = j->job.offset; b < end; b++) {
                uint32_t v = j->snap_ver[b - j->job.offset];

                if (m->disk_ver[b] > v) {
                    mjob_free(j);
                    MCHECK(m, false, "older data (v%u) lands over newer "
                           "(v%u) at %" PRIu64, v, m->disk_ver[b], b);
                }
                m->disk[b] = j->snap[b - j->job.offset];
                m->disk_ver[b] = v;
            }
            if (m->cfg.sabotage == 1) {
                m->disk[j->job.offset] ^= 0x5A;
            }
        } else {
            m->any_failures++;
            if (!j->touched) {
                m->failures++;
                if (!m->unreported_from) {
                    m->unreported_from = m->failures;
                }
            }
        }
        sc_writeback_done(m->c, j->job.id, fail ? -EIO : 0, m->now);
    } else {
        uint8_t *data = j->snap;

        if (!data) {
            data = m->cmp_scratch;
            node_read(m, &j->job, data);
        }
        if (m->cfg.sabotage == 2) {
            memset(data, 0, j->job.len);
        }
        buf_to_iov(&j->job, data);
        sc_fetch_done(m->c, j->job.id, fail ? -EIO : 0, m->now);
        m->fetch_completions++;
        if (fail) {
            fail_reads_of(m, j->job.id);
        }
    }
    mjob_free(j);
    return true;
}

static void maround_free(gpointer p)
{
    MAround *a = p;

    g_free(a->data);
    g_free(a);
}

/* Write-around @idx lands on the nodes, or fails. */
static bool complete_around(Model *m, guint idx, bool fail)
{
    MAround *a = g_ptr_array_steal_index(m->arounds, idx);
    /*
     * Versioned when it lands: of two overlapping write-arounds in flight
     * the nodes keep whichever lands last, as they would.
     */
    uint32_t ver = ++m->ver;
    uint64_t b;

    for (b = a->off; b < a->off + a->len && b < m->disk_size; b++) {
        if (!fail) {
            m->disk[b] = a->data ? a->data[b - a->off] : 0;
            m->disk_ver[b] = ver;
        }
        /* a failed write leaves what the nodes have */
        m->exp[b] = m->disk[b];
        m->exp_ver[b] = m->disk_ver[b];
    }
    if (fail) {
        /* the guest's request fails: nothing to report at a flush */
        m->any_failures++;
    }
    sc_around_end(m->c, a->a, fail ? -EIO : 0);
    m->fetch_completions++;
    maround_free(a);
    return true;
}

static bool do_around(Model *m, const ModelOp *op)
{
    bool fail;

    if (!m->arounds->len) {
        return true;
    }
    fail = m->inject && op->b % 1000 < m->cfg.wb_fail_permille;
    return complete_around(m, op->a % m->arounds->len, fail) &&
           do_retry(m, op->c, false);
}

/*
 * Send write-around @a of [off, off + len) with @data (NULL: zeroes), as
 * the glue does for bypass writes, discard and write-zeroes: complete the
 * overlapping writeback jobs it waits for, then leave it in flight until
 * an MOP_AROUND lands it (or land it at once, sometimes).
 */
static bool start_around(Model *m, SCAround *a, uint64_t off, uint64_t len,
                         const uint8_t *data, uint32_t sel)
{
    MAround *ma;
    guint i;

    for (i = 0; i < m->jobs->len; i++) {
        MJob *j = g_ptr_array_index(m->jobs, i);

        if (j->wb && j->job.offset < off + len &&
            off < j->job.offset + j->job.len) {
            j->touched = true;
        }
    }
    while (!sc_around_ready(m->c, a)) {
        bool found = false;

        for (i = 0; i < m->jobs->len; i++) {
            MJob *j = g_ptr_array_index(m->jobs, i);

            if (j->wb && j->job.offset < off + len &&
                off < j->job.offset + j->job.len) {
                bool fail = m->inject && (sel++ % 1000) <
                            m->cfg.wb_fail_permille;

                if (!complete_job(m, i, fail)) {
                    return false;
                }
                found = true;
                break;
            }
        }
        MCHECK(m, found, "write-around not ready without an overlapping "
               "job");
    }
    ma = g_new0(MAround, 1);
    ma->a = a;
    ma->off = off;
    ma->len = len;
    ma->data = data ? g_memdup2(data, len) : NULL;
    g_ptr_array_add(m->arounds, ma);
    if (sel % 4 == 0) {
        return complete_around(m, m->arounds->len - 1, false);
    }
    return true;
}

/* Land every write-around (no failures). */
static bool drain_arounds(Model *m)
{
    while (m->arounds->len) {
        if (!complete_around(m, 0, false)) {
            return false;
        }
    }
    return true;
}

static bool check_invariants(Model *m, bool full);

/*
 * A staged write's copy, which the driver makes with its lock dropped:
 * the cache is consistent before it, and nobody can have waited for it.
 */
static bool finish_staged(Model *m, SCStage *stage, struct iovec *iov,
                          int cnt, size_t iov_off)
{
    bool ok;

    if (sc_stage_empty(stage)) {
        return true;
    }
    ok = check_invariants(m, true);
    sc_staged_fill(stage, iov, cnt, iov_off);
    if (sc_staged_publish(m->c, stage)) {
        model_fail(m, "a staged write was waited for with nothing between");
        ok = false;
    }
    return ok;
}

static bool do_write(Model *m, const ModelOp *op, bool fua)
{
    struct iovec iov[MODEL_MAX_IOV];
    SCStage stage;
    uint64_t off, len, b, dirty_before;
    uint32_t ver;
    uint8_t *data, *store;
    size_t iov_off;
    SCWriteResult res;
    SCStats st;
    int cnt;
    bool ok = true;

    if (!clamp_range(m, op->a, op->b, &off, &len)) {
        return true;
    }
    ver = ++m->ver;
    /*
     * The writes that may be staged are whole pages, which are what can
     * be staged, and half of them rewrite where the last write went,
     * which is likely still dirty.  (An unaligned one takes the path of
     * sc_write(), which the others take.)
     */
    if (!(ver & 1)) {
        uint64_t page = m->c->page_size;
        uint64_t end;

        if (op->c & 16) {
            /* inside one stripe unit: one extent */
            off = MIN(m->last_write, m->disk_size - 1);
            len = MIN(len, MIN(m->disk_size, sc_seg_end(m->c, off)) - off);
        }
        end = sc_round_up(off + len, page);
        off = sc_round_down(off, page);
        if (end <= m->disk_size) {
            len = end - off;
        }
    }
    m->last_write = off;
    data = m->data_scratch;
    for (b = 0; b < len; b++) {
        data[b] = pattern(off + b, ver);
    }
    cnt = make_iov(m, data, len, op->c, iov, &iov_off, &store);
    sc_cache_get_stats(m->c, &st);
    dirty_before = st.dirty_bytes;
    if (ver & 1) {
        res = sc_write(m->c, off, len, iov, cnt, iov_off,
                       fua ? SC_WRITE_FUA : 0, m->now);
    } else {
        res = sc_write_staged(m->c, off, len, iov, cnt, iov_off,
                              fua ? SC_WRITE_FUA : 0, m->now, &stage);
        ok = finish_staged(m, &stage, iov, cnt, iov_off);
    }
    switch (res.status) {
    case SC_WRITE_DONE:
    case SC_WRITE_THROUGH:
        memcpy(m->exp + off, data, len);
        for (b = 0; b < len; b++) {
            m->exp_ver[off + b] = ver;
        }
        if (res.status == SC_WRITE_THROUGH) {
            MTicket *t = add_ticket(m, res.wait);

            t->ranged = true;
            t->start = off;
            t->end = off + len;
            t->ver = ver;
        } else {
            sc_cache_get_stats(m->c, &st);
            if (fua) {
                model_fail(m, "FUA write absorbed without write-through");
                ok = false;
            } else if (st.dirty_bytes > MAX(m->cfg.opts.max_dirty,
                                            dirty_before)) {
                model_fail(m, "write pushed dirty to %" PRIu64 " over "
                           "max-dirty %" PRIu64, st.dirty_bytes,
                           m->cfg.opts.max_dirty);
                ok = false;
            } else if (res.delay_ns < 0 ||
                       res.delay_ns > (int64_t)SC_MAX_PAUSE_NS) {
                model_fail(m, "bad pacing delay %" PRId64, res.delay_ns);
                ok = false;
            }
        }
        break;
    case SC_WRITE_BLOCKED:
        sc_cache_get_stats(m->c, &st);
        if (st.dirty_bytes != dirty_before) {
            model_fail(m, "a blocked write changed the dirty data");
            ok = false;
        }
        break;
    case SC_WRITE_BYPASS:
        ok = start_around(m, res.around, off, len, data, op->c);
        break;
    default:
        model_fail(m, "bad write status %d", res.status);
        ok = false;
    }
    return ok;
}

static bool do_discard(Model *m, const ModelOp *op)
{
    uint64_t off, len;

    if (!clamp_range(m, op->a, op->b, &off, &len)) {
        return true;
    }
    return start_around(m, sc_around_begin(m->c, off, len), off, len, NULL,
                        op->c);
}

/*
 * Block status: "ask the nodes" only where they hold exactly what the
 * guest reads; runs tile the range.
 */
static bool check_status(Model *m, uint64_t off, uint64_t len)
{
    uint64_t pos = off, end = off + len, pnum, b;
    guint i;

    while (pos < end) {
        SCStatus st = sc_block_status(m->c, pos, end - pos, &pnum);

        MCHECK(m, pnum >= 1 && pnum <= end - pos, "block status at %"
               PRIu64 " gave a run of %" PRIu64 " bytes", pos, pnum);
        if (st == SC_STATUS_NODES) {
            for (b = pos; b < pos + pnum; b++) {
                MCHECK(m, m->disk_ver[b] == m->exp_ver[b], "block status "
                       "sends byte %" PRIu64 " to the nodes, which have v%u"
                       " while the guest wrote v%u", b, m->disk_ver[b],
                       m->exp_ver[b]);
            }
            for (i = 0; i < m->arounds->len; i++) {
                MAround *a = g_ptr_array_index(m->arounds, i);

                MCHECK(m, a->off >= pos + pnum || pos >= a->off + a->len,
                       "block status sends [%" PRIu64 ", +%" PRIu64 ") to "
                       "the nodes while it is written around", pos, pnum);
            }
        } else {
            MCHECK(m, st == SC_STATUS_DATA, "bad block status %d", st);
        }
        pos += pnum;
    }
    return true;
}

static bool do_status(Model *m, const ModelOp *op)
{
    uint64_t off, len;

    if (!clamp_range(m, op->a, op->b, &off, &len)) {
        return true;
    }
    return check_status(m, off, len);
}

static bool do_flush(Model *m, const ModelOp *op)
{
    MTicket *t = add_ticket(m, sc_flush_begin(m->c, op->a % 8 != 0));

    t->guest = op->a % 8 != 0;

    if (m->disk_size <= 32 * SC_KiB || op->b % 16 == 0) {
        t->snap = m->spare_snaps->len
                  ? g_ptr_array_steal_index_fast(m->spare_snaps, 0)
                  : g_new(uint32_t, m->cfg.disk_size);
        t->snap_len = m->cfg.disk_size;
        memcpy(t->snap, m->exp_ver, m->cfg.disk_size * sizeof(uint32_t));
    }
    return true;
}

static bool do_wb_issue(Model *m, const ModelOp *op)
{
    unsigned i, n = 1 + op->a % 8;
    SCJob job;

    for (i = 0; i < n; i++) {
        if (!sc_writeback_next(m->c, m->now, &job)) {
            /* nothing now: the deadline must say so */
            MCHECK(m, sc_next_deadline(m->c, m->now) > m->now,
                   "deadline is now but there is nothing to write back");
            break;
        }
        MJob *j;
        guint k;
        unsigned on_node = 1;

        if (!job_valid(m, &job, true)) {
            return false;
        }
        for (k = 0; k < m->jobs->len; k++) {
            MJob *o = g_ptr_array_index(m->jobs, k);

            if (!o->wb) {
                continue;
            }
            MCHECK(m, o->job.offset >= job.offset + job.len ||
                   job.offset >= o->job.offset + o->job.len,
                   "two writeback jobs for the same bytes in flight");
            on_node += o->job.node == job.node;
        }
        MCHECK(m, on_node <= (m->cfg.opts.node_jobs ?:
                              m->cfg.geo.max_writeback_per_node),
               "too many writeback jobs on node %u", job.node);
        j = g_new0(MJob, 1);
        j->wb = true;
        j->job = job;
        j->snap = g_malloc(job.len);
        iov_to_buf(&job, j->snap);
        MCHECK(m, !memcmp(j->snap, m->exp + job.offset, job.len),
               "writeback job [%" PRIu64 ", +%" PRIu64 ") does not carry "
               "the newest data", job.offset, job.len);
        j->snap_ver = g_memdup2(m->exp_ver + job.offset,
                                job.len * sizeof(uint32_t));
        g_ptr_array_add(m->jobs, j);
    }
    return true;
}

static bool do_pf_issue(Model *m, const ModelOp *op)
{
    unsigned i, n = 1 + op->a % 4;
    SCJob job;

    for (i = 0; i < n && sc_prefetch_next(m->c, &job); i++) {
        if (!add_fetch_job(m, &job, true, (op->b >> i) & 1)) {
            return false;
        }
    }
    return true;
}

static bool do_complete(Model *m, const ModelOp *op)
{
    guint idx;
    MJob *j;
    bool fail;

    if (!m->jobs->len) {
        return true;
    }
    idx = op->a % m->jobs->len;
    j = g_ptr_array_index(m->jobs, idx);
    fail = m->inject && op->b % 1000 < (j->wb ? m->cfg.wb_fail_permille
                                              : m->cfg.fetch_fail_permille);
    return complete_job(m, idx, fail) && do_retry(m, op->c, false);
}

/*
 * Time passes; sometimes straight to the writeback deadline, where
 * sc_writeback_next() must have a job.
 */
static bool do_tick(Model *m, const ModelOp *op)
{
    static const int64_t steps[] = {
        0, 1000, SC_NS_PER_MS, 10 * SC_NS_PER_MS, 100 * SC_NS_PER_MS,
        1100 * SC_NS_PER_MS, 3 * SC_NS_PER_SEC,
    };
    ModelOp issue_one = { .kind = MOP_WB_ISSUE, .a = 0 };
    int64_t deadline = sc_next_deadline(m->c, m->now);

    MCHECK(m, deadline >= m->now, "deadline in the past");
    if (op->b % 2 && deadline != INT64_MAX) {
        m->now = deadline;
        return do_wb_issue(m, &issue_one);
    }
    m->now += steps[op->a % G_N_ELEMENTS(steps)];
    return true;
}

static bool do_reconf(Model *m, const ModelOp *op)
{
    SCOptions o = m->cfg.opts;
    char *err = NULL;
    SCStats st;

    /* an invalid change must be refused with a message */
    o.target_dirty = o.max_dirty + 1;
    MCHECK(m, !sc_cache_reconfigure(m->c, &o, &err) && err &&
           strstr(err, "cache-target-dirty"),
           "invalid reconfiguration accepted");
    g_free(err);

    o = m->cfg.opts;
    o.size = (64 * SC_KiB) << (op->a % 4);
    o.max_dirty = op->b % 4 == 0 ? 0 : op->b % (o.size + 1);
    o.target_dirty = op->c % (o.max_dirty + 1);
    o.readahead_max_bytes = MIN(o.readahead_max_bytes, o.size / 2);
    o.writethrough_until_flush = op->a & 16;
    o.eager_writeback = op->a & 32;
    err = NULL;
    MCHECK(m, sc_cache_reconfigure(m->c, &o, &err), "valid "
           "reconfiguration refused: %s", err);
    m->cfg.opts = o;
    sc_cache_get_stats(m->c, &st);
    m->mem_over_ok = st.memory_bytes > o.size;
    return true;
}

static bool do_drop(Model *m)
{
    SCStats st;
    bool busy;
    int r;

    /* QEMU drops the cache with no request in flight, no read either */
    if (!finish_all_pinned(m)) {
        return false;
    }
    sc_cache_get_stats(m->c, &st);
    busy = m->jobs->len || st.dirty_bytes || m->arounds->len;
    r = sc_cache_drop(m->c);
    sc_cache_get_stats(m->c, &st);
    MCHECK(m, (r == -EBUSY) == busy, "drop returned %d, busy %d", r, busy);
    if (r == 0) {
        MCHECK(m, st.extents == 0 && st.memory_bytes == 0,
               "drop left %" PRIu64 " extents, %" PRIu64 " bytes",
               st.extents, st.memory_bytes);
    }
    return true;
}

static bool drain_jobs(Model *m, uint32_t sel)
{
    while (m->jobs->len) {
        bool fail = m->inject && (sel++ % 1000) < m->cfg.wb_fail_permille;
        MJob *j = g_ptr_array_index(m->jobs, 0);

        if (!complete_job(m, 0, j->wb && fail)) {
            return false;
        }
    }
    return true;
}

static bool do_resize(Model *m, const ModelOp *op)
{
    uint64_t half = m->cfg.disk_size / 2, size, b;
    uint32_t ver = ++m->ver;
    guint i = 0;

    /* QEMU serialises a resize with the requests it cuts off */
    if (!drain_arounds(m) || !drain_jobs(m, op->b)) {
        return false;
    }
    size = sc_round_down(half + op->a % (half + 1), m->cfg.geo.align);
    size = MAX(size, m->cfg.geo.align);
    /* bytes past a shrink are gone; growing shows what the nodes hold */
    for (b = size; b < m->disk_size; b++) {
        m->disk[b] = m->exp[b] = 0;
        m->disk_ver[b] = m->exp_ver[b] = ver;
    }
    sc_cache_set_disk_size(m->c, size);
    m->disk_size = size;
    while (i < m->reads->len) {
        MRead *r = g_ptr_array_index(m->reads, i);

        if (r->off + r->len > size) {
            g_ptr_array_remove_index(m->reads, i);
        } else {
            i++;
        }
    }
    return true;
}

static bool check_invariants(Model *m, bool full)
{
    SCStats st;
    char *why = NULL;

    sc_cache_get_stats(m->c, &st);
    if (st.memory_bytes <= m->cfg.opts.size) {
        m->mem_over_ok = false;
    }
    MCHECK(m, st.memory_bytes <= m->cfg.opts.size || m->mem_over_ok,
           "memory %" PRIu64 " over cache-size %" PRIu64, st.memory_bytes,
           m->cfg.opts.size);
    /* bookkeeping: its budget, plus what one operation may add */
    MCHECK(m, st.metadata_bytes <= m->c->meta_limit + MODEL_META_SLACK ||
           m->mem_over_ok, "metadata %" PRIu64 " over its limit %" PRIu64,
           st.metadata_bytes, m->c->meta_limit);
    if (full && !sc_cache_check(m->c, &why)) {
        model_fail(m, "inconsistent cache: %s", why);
        g_free(why);
        return false;
    }
    return true;
}

static bool run_op(Model *m, const ModelOp *op)
{
    /* pinned hits are copied some operations after their read */
    if (op->a % 4 == 0 && !finish_all_pinned(m)) {
        return false;
    }
    switch (op->kind % MOP__MAX) {
    case MOP_READ:
        return do_read(m, op);
    case MOP_WRITE:
        return do_write(m, op, false);
    case MOP_WRITE_FUA:
        return do_write(m, op, true);
    case MOP_FLUSH:
        return do_flush(m, op);
    case MOP_DISCARD:
    case MOP_ZERO:
        return do_discard(m, op);
    case MOP_WB_ISSUE:
        return do_wb_issue(m, op);
    case MOP_PF_ISSUE:
        return do_pf_issue(m, op);
    case MOP_COMPLETE:
        return do_complete(m, op);
    case MOP_TICK:
        return do_tick(m, op);
    case MOP_RETRY:
        return do_retry(m, op->a, false);
    case MOP_RECONF:
        return do_reconf(m, op);
    case MOP_DROP:
        return do_drop(m);
    case MOP_RESIZE:
        return do_resize(m, op);
    case MOP_AROUND:
        return do_around(m, op);
    case MOP_STATUS:
        return do_status(m, op);
    }
    return true;
}

/* Write everything back without failures and verify the nodes. */
static bool drain(Model *m)
{
    ModelOp issue_all = { .kind = MOP_WB_ISSUE, .a = 7 };
    unsigned rounds;
    uint64_t b;
    SCStats st;
    SCJob job;

    m->inject = false;
    m->op_index = SIZE_MAX;
    if (!finish_all_pinned(m)) {
        return false;
    }
    for (rounds = 0; rounds < 100000; rounds++) {
        if (!drain_arounds(m) || !drain_jobs(m, 0) ||
            !do_retry(m, 0, true)) {
            return false;
        }
        while (sc_prefetch_next(m->c, &job)) {
            if (!add_fetch_job(m, &job, true, false)) {
                return false;
            }
        }
        if (!do_wb_issue(m, &issue_all) || !check_tickets(m)) {
            return false;
        }
        sc_cache_get_stats(m->c, &st);
        if (!m->jobs->len && !m->reads->len && !m->tickets->len &&
            !st.dirty_bytes) {
            break;
        }
        if (!m->tickets->len) {
            add_ticket(m, sc_flush_begin(m->c, true));
        }
    }
    MCHECK(m, rounds < 100000, "drain does not finish");
    add_ticket(m, sc_flush_begin(m->c, true));
    if (!check_tickets(m)) {
        return false;
    }
    MCHECK(m, m->tickets->len == 0, "flush of a clean cache is pending");
    for (b = 0; b < m->disk_size; b++) {
        MCHECK(m, m->disk[b] == m->exp[b], "byte %" PRIu64 " lost: node "
               "has v%u, guest wrote v%u", b, m->disk_ver[b],
               m->exp_ver[b]);
    }
    if (m->disk_size) {
        uint64_t pnum;

        /* a clean cache sends every byte to the nodes, in one answer */
        MCHECK(m, sc_block_status(m->c, 0, m->disk_size, &pnum) ==
               SC_STATUS_NODES && pnum == m->disk_size,
               "block status of a clean cache is not the nodes'");
    }
    MCHECK(m, sc_cache_drop(m->c) == 0, "drop of a clean cache refused");
    return check_invariants(m, true);
}

bool model_run(const ModelConfig *cfg, const ModelOp *ops, size_t n,
               bool drain_at_end, char **msg)
{
    Model m;
    char *err = NULL;
    bool ok = true;
    size_t i;

    memset(&m, 0, sizeof(m));
    m.cfg = *cfg;
    m.err = g_string_new(NULL);
    m.c = sc_cache_new(&cfg->opts, &cfg->geo, &err);
    if (!m.c) {
        *msg = g_strdup_printf("bad configuration: %s", err);
        g_free(err);
        g_string_free(m.err, TRUE);
        return false;
    }
    m.disk_size = cfg->disk_size;
    m.exp = g_malloc0(cfg->disk_size);
    m.disk = g_malloc0(cfg->disk_size);
    m.exp_ver = g_new0(uint32_t, cfg->disk_size);
    m.disk_ver = g_new0(uint32_t, cfg->disk_size);
    m.iov_scratch = g_malloc(cfg->disk_size + SCRATCH_SLACK);
    m.data_scratch = g_malloc(cfg->disk_size + SCRATCH_SLACK);
    m.pinned_pieces = g_array_new(FALSE, TRUE, sizeof(SCPiece));
    m.cmp_scratch = g_malloc(cfg->disk_size + SCRATCH_SLACK);
    m.spare_snaps = g_ptr_array_new_with_free_func(g_free);
    m.jobs = g_ptr_array_new_with_free_func(mjob_free);
    m.reads = g_ptr_array_new_with_free_func(mread_free);
    m.tickets = g_ptr_array_new();
    m.arounds = g_ptr_array_new_with_free_func(maround_free);
    m.pinned = g_ptr_array_new();
    m.inject = true;

    for (i = 0; i < n && ok; i++) {
        m.op_index = i;
        ok = run_op(&m, &ops[i]) && check_tickets(&m) &&
             check_invariants(&m, i % cfg->check_interval == 0);
    }
    if (ok && drain_at_end) {
        ok = drain(&m);
    }
    if (!ok) {
        if (!m.err->len) {
            g_string_append(m.err, "unknown failure");
        }
        *msg = g_strdup(m.err->str);
    }

    while (m.tickets->len) {
        mticket_free(&m, g_ptr_array_steal_index(m.tickets, 0));
    }
    g_ptr_array_unref(m.tickets);
    /* jobs still in flight must be completed before the cache goes */
    while (m.jobs->len) {
        MJob *j = g_ptr_array_steal_index(m.jobs, 0);

        if (j->wb) {
            sc_writeback_done(m.c, j->job.id, -EIO, m.now);
        } else {
            sc_fetch_done(m.c, j->job.id, -EIO, m.now);
        }
        mjob_free(j);
    }
    g_ptr_array_unref(m.jobs);
    g_ptr_array_unref(m.reads);
    while (m.pinned->len) {
        MPinned *p = g_ptr_array_steal_index(m.pinned, 0);

        sc_hits_done(&p->hits);
        g_free(p->want);
        g_array_unref(p->ranges);
        g_free(p);
    }
    g_ptr_array_unref(m.pinned);
    while (m.arounds->len) {
        MAround *a = g_ptr_array_steal_index(m.arounds, 0);

        sc_around_end(m.c, a->a, -EIO);
        maround_free(a);
    }
    g_ptr_array_unref(m.arounds);
    sc_cache_free(m.c);
    g_free(m.exp);
    g_free(m.disk);
    g_free(m.exp_ver);
    g_free(m.disk_ver);
    g_free(m.iov_scratch);
    g_free(m.data_scratch);
    g_array_unref(m.pinned_pieces);
    g_free(m.cmp_scratch);
    g_ptr_array_unref(m.spare_snaps);
    g_string_free(m.err, TRUE);
    return ok;
}
