/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-mq-bench: a block node driven from several threads at once, the
 * way virtio-blk's iothread-vq-mapping drives it: one BlockBackend, each
 * thread with its own AioContext submitting requests that run in that
 * thread.  qemu-img bench has one thread only, so it cannot show whether
 * a driver scales with the iothreads given to it.
 *
 *   stripe-mq-bench [-T THREADS] [-d DEPTH] [-s SIZE] [-r RANGE]
 *                   [-n SECONDS] [-t CACHE] [-w | -m PERCENT] [--no-warm]
 *                   JSON
 *
 * JSON is the node's options as for -blockdev.  Each thread keeps DEPTH
 * requests of SIZE bytes in flight at random SIZE-aligned offsets in the
 * first RANGE bytes (reads, or writes with -w, or PERCENT % writes and
 * the rest reads with -m: a stress test, with a small cache) for SECONDS.
 * Before that, unless --no-warm, the range is read (or written) once
 * from the main thread so that it is in the node's cache.  The main thread meanwhile
 * runs the main loop: the node's own context (timers, completions of
 * nodes that live there).  Prints one line:
 *
 *   threads=T depth=D size=S ops=N seconds=X iops=N cpu-us-per-op=X
 *
 * Built inside QEMU's tree (scripts/build-qemu.sh links it there): it
 * needs the block layer's internal API.
 */

#include "qemu/osdep.h"
#include <getopt.h>
#include <sys/resource.h>
#include "block/aio.h"
#include "block/block.h"
#include "qapi/error.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/memalign.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "system/block-backend.h"

typedef struct Worker {
    BlockBackend *blk;
    AioContext *ctx;
    QemuThread thread;
    uint64_t rng;
    unsigned inflight;          /* read by the main thread at the end */
    uint64_t ops;
    int error;
    void *buf;                  /* DEPTH buffers of SIZE bytes */
} Worker;

typedef struct Slot {
    Worker *w;
    QEMUIOVector qiov;
} Slot;

static struct {
    int threads;
    int depth;
    int64_t size;
    int64_t range;
    double seconds;
    int write_pct;
    bool warm;
} cfg = {
    .threads = 1,
    .depth = 32,
    .size = 4096,
    .range = 64 * MiB,
    .seconds = 5,
    .warm = true,
};

static bool stop;

static void time_up(void *opaque)
{
    qatomic_set(&stop, true);
}

static uint64_t next_offset(Worker *w)
{
    /* xorshift64: cheap, and private to the thread */
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (w->rng % (cfg.range / cfg.size)) * cfg.size;
}

static void submit(Slot *s);

static void done(void *opaque, int ret)
{
    Slot *s = opaque;
    Worker *w = s->w;

    qatomic_set(&w->inflight, w->inflight - 1);
    if (ret < 0) {
        w->error = ret;
        return;
    }
    w->ops++;
    if (!qatomic_read(&stop)) {
        submit(s);
    }
}

static void submit(Slot *s)
{
    Worker *w = s->w;
    uint64_t off = next_offset(w);

    qatomic_set(&w->inflight, w->inflight + 1);
    if (cfg.write_pct == 100 ||
        (cfg.write_pct && (w->rng >> 33) % 100 < cfg.write_pct)) {
        blk_aio_pwritev(w->blk, off, &s->qiov, 0, done, s);
    } else {
        blk_aio_preadv(w->blk, off, &s->qiov, 0, done, s);
    }
}

static void *worker_run(void *opaque)
{
    Worker *w = opaque;
    Slot *slots = g_new0(Slot, cfg.depth);

    rcu_register_thread();
    qemu_set_current_aio_context(w->ctx);
    for (int i = 0; i < cfg.depth; i++) {
        slots[i].w = w;
        qemu_iovec_init_buf(&slots[i].qiov,
                            (uint8_t *)w->buf + i * cfg.size, cfg.size);
        submit(&slots[i]);
    }
    while (w->inflight) {
        aio_poll(w->ctx, true);
    }
    g_free(slots);
    rcu_unregister_thread();
    return NULL;
}

/* Bring the range into the node's cache, from the main thread. */
static void warm(BlockBackend *blk)
{
    int64_t chunk = MIN(cfg.range, 1 * MiB);
    void *buf = blk_blockalign(blk, chunk);

    memset(buf, 0xa5, chunk);
    for (int64_t off = 0; off < cfg.range; off += chunk) {
        int ret = cfg.write_pct ? blk_pwrite(blk, off, chunk, buf, 0)
                            : blk_pread(blk, off, chunk, buf, 0);
        if (ret < 0) {
            error_report("warming up at %" PRId64 ": %s", off,
                         strerror(-ret));
            exit(1);
        }
    }
    qemu_vfree(buf);
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void usage(void)
{
    error_report("usage: stripe-mq-bench [-T THREADS] [-d DEPTH] [-s SIZE] "
                 "[-r RANGE] [-n SECONDS] [-t CACHE] [-w | -m PERCENT] "
                 "[--no-warm] JSON");
    exit(2);
}

static int64_t parse_size(const char *opt, const char *s)
{
    uint64_t v;

    if (qemu_strtosz(s, NULL, &v) < 0 || v == 0 || v > INT64_MAX) {
        error_report("-%s: '%s' is not a size", opt, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "no-warm", no_argument, NULL, 'W' },
        { NULL, 0, NULL, 0 },
    };
    const char *cache = "writeback";
    int flags = BDRV_O_RDWR, c;
    bool writethrough;
    Worker *workers;
    BlockBackend *blk;
    QEMUTimer *timer;
    QDict *opts;
    int64_t t0, t1;
    double cpu0, cpu1, secs;
    uint64_t ops = 0;
    int error = 0;

    error_init(argv[0]);
    qemu_init_exec_dir(argv[0]);
    qemu_init_main_loop(&error_fatal);
    module_call_init(MODULE_INIT_QOM);
    bdrv_init();

    while ((c = getopt_long(argc, argv, "T:d:s:r:n:t:wm:", longopts,
                            NULL)) != -1) {
        switch (c) {
        case 'T':
            cfg.threads = atoi(optarg);
            break;
        case 'd':
            cfg.depth = atoi(optarg);
            break;
        case 's':
            cfg.size = parse_size("s", optarg);
            break;
        case 'r':
            cfg.range = parse_size("r", optarg);
            break;
        case 'n':
            cfg.seconds = atof(optarg);
            break;
        case 't':
            cache = optarg;
            break;
        case 'w':
            cfg.write_pct = 100;
            break;
        case 'm':
            cfg.write_pct = atoi(optarg);
            if (cfg.write_pct < 0 || cfg.write_pct > 100) {
                error_report("-m: '%s' is not a percentage", optarg);
                exit(2);
            }
            break;
        case 'W':
            cfg.warm = false;
            break;
        default:
            usage();
        }
    }
    if (optind != argc - 1 || cfg.threads < 1 || cfg.threads > 64 ||
        cfg.depth < 1 || cfg.depth > 1024 || cfg.range < cfg.size ||
        cfg.seconds <= 0) {
        usage();
    }
    if (bdrv_parse_cache_mode(cache, &flags, &writethrough) < 0) {
        error_report("-t: '%s' is not a cache mode", cache);
        exit(2);
    }
    opts = qobject_to(QDict, qobject_from_json(argv[optind], &error_fatal));
    if (!opts) {
        error_report("the node's options must be a JSON object");
        exit(2);
    }
    blk = blk_new_open(NULL, NULL, opts, flags, &error_fatal);
    blk_set_enable_write_cache(blk, !writethrough);
    if (blk_getlength(blk) < cfg.range) {
        error_report("-r: the node has only %" PRId64 " bytes",
                     blk_getlength(blk));
        exit(2);
    }
    if (cfg.warm) {
        warm(blk);
    }

    workers = g_new0(Worker, cfg.threads);
    for (int i = 0; i < cfg.threads; i++) {
        Worker *w = &workers[i];

        w->blk = blk;
        w->ctx = aio_context_new(&error_fatal);
        /* what an iothread object polls for by default */
        aio_context_set_poll_params(w->ctx, 32768, 0, 0, &error_fatal);
        w->rng = 0x9e3779b97f4a7c15ULL * (i + 1);
        w->buf = blk_blockalign(blk, cfg.size * cfg.depth);
        memset(w->buf, 0x5a, cfg.size * cfg.depth);
    }
    t0 = get_clock();
    cpu0 = cpu_seconds();
    for (int i = 0; i < cfg.threads; i++) {
        qemu_thread_create(&workers[i].thread, "bench", worker_run,
                           &workers[i], QEMU_THREAD_JOINABLE);
    }
    /* the main loop sleeps until something happens: the timer ends it */
    timer = timer_new_ns(QEMU_CLOCK_REALTIME, time_up, NULL);
    timer_mod(timer, t0 + cfg.seconds * NANOSECONDS_PER_SECOND);
    while (!qatomic_read(&stop)) {
        main_loop_wait(false);
    }
    timer_free(timer);
    for (int i = 0; i < cfg.threads; i++) {
        /*
         * The main context may hold what a worker's last requests need,
         * and a worker's last completion does not wake it: poll.
         */
        while (qatomic_read(&workers[i].inflight)) {
            main_loop_wait(true);
            g_usleep(1000);
        }
        qemu_thread_join(&workers[i].thread);
        ops += workers[i].ops;
        error = error ?: workers[i].error;
    }
    t1 = get_clock();
    cpu1 = cpu_seconds();
    secs = (double)(t1 - t0) / NANOSECONDS_PER_SECOND;
    if (error) {
        error_report("a request failed: %s", strerror(-error));
    }
    printf("threads=%d depth=%d size=%" PRId64 " ops=%" PRIu64
           " seconds=%.3f iops=%.0f cpu-us-per-op=%.2f\n", cfg.threads,
           cfg.depth, cfg.size, ops, secs, ops / secs,
           ops ? (cpu1 - cpu0) * 1e6 / ops : 0.0);
    for (int i = 0; i < cfg.threads; i++) {
        aio_context_unref(workers[i].ctx);
        qemu_vfree(workers[i].buf);
    }
    g_free(workers);
    /* closing writes the cache back: not part of the measurement */
    blk_unref(blk);
    bdrv_close_all();
    return error ? 1 : 0;
}
