/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * guest-mqio: random verified IO from every CPU of the guest at once, so
 * that a multiqueue virtio-blk disk gets requests on all its queues (the
 * guest's blk-mq maps one queue to each CPU) and the host's iothreads run
 * the driver concurrently.
 *
 *   guest-mqio DEVICE WORKERS REGION_MIB SECONDS
 *
 * Worker i is pinned to CPU i and owns the REGION_MIB MiB at i * REGION_MIB
 * of DEVICE.  It writes (60 %) and reads (40 %) random 4 KiB blocks with
 * O_DIRECT, remembering which version of each block it wrote last; every
 * read must return exactly that version, or zeroes for a block never
 * written.  Every 64 operations it flushes (fdatasync).
 *
 * Phase 1 lasts SECONDS; each worker then flushes, reads its whole region
 * back, prints "QS mq worker=I cpu=C ops=N writes=W reads=R bad=B" and
 * "QS mqmap worker=I BLOCK:VERSION ..." (hex, written blocks only).  When
 * every worker has reported, the parent prints "QS mq phase=2" and the
 * workers go on writing until the disk goes away (an IO error ends a
 * worker quietly: the host unplugs the disk in this phase) or for at most
 * 10 times SECONDS.  Last line: "QS mq end bad=B".
 *
 * A block of version V at byte offset O holds 128 copies of the 32-byte
 * line "MQ <O, 12 hex> <V, 8 hex> <worker, 2 dec> ---\n", so that the host
 * can check the nodes afterwards without knowing the phase-2 writes: any
 * block there must be such a block for its own offset, or zeroes.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096
#define LINE 32
#define FLUSH_EVERY 64

/* A worker's end of the pipe it reports its phase-1 outcome on, or -1. */
static int ready_fd = -1;

static void die(const char *what)
{
    printf("QS mq error=%s errno=%d\n", what, errno);
    fflush(stdout);
    if (ready_fd >= 0 && write(ready_fd, "x", 1) != 1) {
        /* the parent then sees the end of the pipe */
    }
    exit(2);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fill(uint8_t *buf, uint64_t off, uint32_t version, int worker)
{
    char line[LINE + 1];

    snprintf(line, sizeof(line), "MQ %012" PRIx64 " %08" PRIx32 " %02d ---\n",
             off, version, worker);
    for (int i = 0; i < BLOCK / LINE; i++) {
        memcpy(buf + i * LINE, line, LINE);
    }
}

typedef struct Worker {
    int id;
    int fd;
    uint64_t base;
    uint32_t nblocks;
    uint32_t *version;          /* last version written, 0 = never */
    uint32_t next_version;
    uint8_t *buf;
    uint8_t *want;
    uint64_t ops, writes, reads, bad;
} Worker;

/* One operation; false if the disk failed it. */
static bool one_op(Worker *w, uint32_t blk, bool write)
{
    uint64_t off = w->base + (uint64_t)blk * BLOCK;

    if (write) {
        uint32_t v = w->next_version++;

        fill(w->buf, off, v, w->id);
        if (pwrite(w->fd, w->buf, BLOCK, off) != BLOCK) {
            return false;
        }
        w->version[blk] = v;
        w->writes++;
    } else {
        if (pread(w->fd, w->buf, BLOCK, off) != BLOCK) {
            return false;
        }
        if (w->version[blk]) {
            fill(w->want, off, w->version[blk], w->id);
        } else {
            memset(w->want, 0, BLOCK);
        }
        if (memcmp(w->buf, w->want, BLOCK)) {
            if (w->bad++ < 5) {
                printf("QS mq worker=%d bad offset=%" PRIu64
                       " want-version=%" PRIu32 " got=%.31s\n", w->id, off,
                       w->version[blk], (char *)w->buf);
                fflush(stdout);
            }
        }
        w->reads++;
    }
    if (++w->ops % FLUSH_EVERY == 0 && fdatasync(w->fd)) {
        return false;
    }
    return true;
}

/*
 * The workers share the serial port: each report goes out in one write(),
 * which the tty layer does not interleave with another process's.
 */
static void report(Worker *w, int cpu)
{
    size_t cap = 256 + (size_t)w->nblocks * 20, len;
    char *buf = malloc(cap);

    if (!buf) {
        die("report-alloc");
    }
    len = snprintf(buf, cap, "QS mq worker=%d cpu=%d ops=%" PRIu64
                   " writes=%" PRIu64 " reads=%" PRIu64 " bad=%" PRIu64
                   "\nQS mqmap worker=%d", w->id, cpu, w->ops, w->writes,
                   w->reads, w->bad, w->id);
    for (uint32_t b = 0; b < w->nblocks; b++) {
        if (w->version[b]) {
            len += snprintf(buf + len, cap - len, " %" PRIx32 ":%" PRIx32, b,
                            w->version[b]);
        }
    }
    len += snprintf(buf + len, cap - len, "\n");
    fflush(stdout);
    if (write(STDOUT_FILENO, buf, len) != (ssize_t)len) {
        die("report-write");
    }
    free(buf);
}

static int run_worker(Worker *w, double seconds, int go_fd)
{
    cpu_set_t set;
    unsigned int seed = 12345 + w->id;
    double end = now() + seconds;
    char go;

    CPU_ZERO(&set);
    CPU_SET(w->id, &set);
    if (sched_setaffinity(0, sizeof(set), &set)) {
        die("affinity");
    }
    while (now() < end) {
        if (!one_op(w, rand_r(&seed) % w->nblocks, rand_r(&seed) % 10 < 6)) {
            die("phase1-io");
        }
    }
    if (fdatasync(w->fd)) {
        die("phase1-flush");
    }
    for (uint32_t b = 0; b < w->nblocks; b++) {
        if (!one_op(w, b, false)) {
            die("phase1-verify");
        }
    }
    report(w, sched_getcpu());
    if (write(ready_fd, w->bad ? "b" : "0", 1) != 1) {
        die("report");
    }
    ready_fd = -1;
    if (w->bad) {
        return 1;
    }
    /* phase 2 once every worker has reported: the parent closes go_fd */
    if (read(go_fd, &go, 1) < 0) {
        die("phase2-wait");
    }
    end = now() + 10 * seconds;
    while (now() < end) {
        if (!one_op(w, rand_r(&seed) % w->nblocks, rand_r(&seed) % 10 < 6)) {
            return 0;               /* the disk went away */
        }
    }
    return w->bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    int workers, go[2], ready[2], bad = 0;
    pid_t *pids;
    uint64_t region;
    double seconds;
    char c;

    if (argc != 5) {
        fprintf(stderr, "usage: guest-mqio DEVICE WORKERS REGION_MIB "
                "SECONDS\n");
        return 2;
    }
    workers = atoi(argv[2]);
    region = strtoull(argv[3], NULL, 0) << 20;
    seconds = atof(argv[4]);
    pids = calloc(workers > 0 ? workers : 1, sizeof(*pids));
    if (workers < 1 || region < BLOCK || seconds <= 0 || !pids ||
        pipe(go) || pipe(ready)) {
        fprintf(stderr, "guest-mqio: bad arguments\n");
        return 2;
    }
    printf("QS mq begin workers=%d region=%" PRIu64 " seconds=%g\n",
           workers, region, seconds);
    fflush(stdout);
    for (int i = 0; i < workers; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            Worker w = {
                .id = i,
                .base = i * region,
                .nblocks = region / BLOCK,
                .next_version = 1,
            };

            close(go[1]);
            close(ready[0]);
            ready_fd = ready[1];
            w.fd = open(argv[1], O_RDWR | O_DIRECT);
            w.version = calloc(w.nblocks, sizeof(*w.version));
            if (w.fd < 0 || !w.version ||
                posix_memalign((void **)&w.buf, BLOCK, BLOCK) ||
                posix_memalign((void **)&w.want, BLOCK, BLOCK)) {
                die("setup");
            }
            exit(run_worker(&w, seconds, go[0]));
        }
        if (pids[i] < 0) {
            die("fork");
        }
    }
    close(go[0]);
    close(ready[1]);
    /* one byte from each worker once it has reported phase 1 */
    for (int i = 0; i < workers; i++) {
        if (read(ready[0], &c, 1) != 1 || c != '0') {
            bad = 1;
            break;
        }
    }
    if (bad) {
        for (int i = 0; i < workers; i++) {
            kill(pids[i], SIGKILL);
        }
    } else {
        printf("QS mq phase=2\n");
        fflush(stdout);
    }
    close(go[1]);
    while (wait(NULL) > 0) {
        /* phase 2 ends when the disk goes away: exit statuses tell nothing */
    }
    printf("QS mq end bad=%d\n", bad);
    return bad;
}
