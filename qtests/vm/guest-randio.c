/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * guest-randio: the random-IO part of the guest's throughput test.
 *
 *   guest-randio read|write FILE BLOCK_SIZE OPS [SEED]
 *
 * Does OPS reads or writes of BLOCK_SIZE bytes at random block-aligned
 * offsets inside FILE (which must already have its final size), one at a
 * time, with O_DIRECT so that every request reaches the virtual disk; a
 * write run ends with fdatasync, inside the timed interval, so that the
 * data is on the storage nodes when the clock stops.  Prints one line:
 *
 *   ops=N bytes=N usec=N
 *
 * It exists because a shell loop of dd at random offsets measures fork and
 * exec under TCG, not the disk: it is built statically on the host, with
 * Debian's gcc and libc, when the guest's initramfs is made.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    fprintf(stderr, "guest-randio: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t now_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* xorshift64: reproducible offsets for a given seed, no libc state. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

int main(int argc, char **argv)
{
    int writing, fd;
    long bs, ops, i;
    uint64_t seed = 0x9e3779b97f4a7c15ull, blocks, start, usec;
    struct stat st;
    void *buf;

    if (argc < 5 || argc > 6 ||
        (strcmp(argv[1], "read") && strcmp(argv[1], "write"))) {
        fprintf(stderr,
                "usage: guest-randio read|write FILE BLOCK_SIZE OPS [SEED]\n");
        return 2;
    }
    writing = !strcmp(argv[1], "write");
    bs = atol(argv[3]);
    ops = atol(argv[4]);
    if (argc == 6) {
        seed = strtoull(argv[5], NULL, 0) | 1;   /* xorshift needs != 0 */
    }
    if (bs < 512 || bs % 512 || ops < 1) {
        fprintf(stderr, "guest-randio: bad block size or op count\n");
        return 2;
    }

    fd = open(argv[2], (writing ? O_RDWR : O_RDONLY) | O_DIRECT);
    if (fd < 0) {
        die(argv[2]);
    }
    if (fstat(fd, &st) < 0) {
        die("fstat");
    }
    blocks = (uint64_t)st.st_size / bs;
    if (blocks == 0) {
        fprintf(stderr, "guest-randio: %s is smaller than one block\n",
                argv[2]);
        return 1;
    }
    /* O_DIRECT needs a buffer aligned to the logical block size. */
    if (posix_memalign(&buf, 4096, bs)) {
        fprintf(stderr, "guest-randio: out of memory\n");
        return 1;
    }
    memset(buf, 0xa5, bs);

    start = now_usec();
    for (i = 0; i < ops; i++) {
        off_t off = (off_t)(next_random(&seed) % blocks) * bs;
        ssize_t n;

        if (writing) {
            /* Different data each time: nothing below can dedupe it. */
            memcpy(buf, &i, sizeof(i));
            n = pwrite(fd, buf, bs, off);
        } else {
            n = pread(fd, buf, bs, off);
        }
        if (n < 0) {
            die(writing ? "pwrite" : "pread");
        }
        if (n != bs) {
            fprintf(stderr, "guest-randio: short %s at %lld: %zd bytes\n",
                    argv[1], (long long)off, n);
            return 1;
        }
    }
    if (writing && fdatasync(fd) < 0) {
        die("fdatasync");
    }
    usec = now_usec() - start;

    printf("ops=%ld bytes=%" PRIu64 " usec=%" PRIu64 "\n",
           ops, (uint64_t)ops * bs, usec);
    close(fd);
    return 0;
}
