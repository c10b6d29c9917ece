/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: operation sequences against the cache core, checked
 * by the model harness (cache/tests/model.c) with a full consistency check
 * every fourth operation.
 *
 * Input: 8 bytes of configuration seed, then 12 bytes per operation
 * (kind, a: 4 bytes, b: 3 bytes, c: 4 bytes, little endian).  Any failed
 * check aborts, which libFuzzer reports with the input that caused it.
 *
 * SC_FUZZ_SEED_CORPUS=dir makes the binary write a seed corpus of
 * generated sequences into dir and exit (cache/fuzz/run-fuzz.sh does it).
 */
#include "fuzz-ops.h"
#include "model.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_OPS 1500
#define FUZZ_OP_BYTES 12
#define FUZZ_MAX_DISK (128 * 1024)
#define FUZZ_SEEDS 32

static uint32_t get_le(const uint8_t *p, int n)
{
    uint32_t v = 0;
    int i;

    for (i = n - 1; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static void put_le(uint8_t *p, uint32_t v, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        p[i] = v >> (8 * i);
    }
}

static void fuzz_config(uint64_t seed, ModelConfig *cfg)
{
    model_config_from_seed(seed, cfg);
    /* small disks keep every input fast */
    if (cfg->disk_size > FUZZ_MAX_DISK) {
        cfg->disk_size = FUZZ_MAX_DISK;
        cfg->geo.disk_size = FUZZ_MAX_DISK;
    }
    cfg->check_interval = 4;
}

static void write_seed_corpus(const char *dir)
{
    uint64_t s;

    for (s = 1; s <= FUZZ_SEEDS; s++) {
        size_t n = 100 + (s * 37) % 400, i;
        size_t len = 8 + n * FUZZ_OP_BYTES;
        uint8_t *buf = g_malloc(len);
        ModelOp *ops = g_new(ModelOp, n);
        ModelConfig cfg;
        char *path;

        fuzz_config(s, &cfg);
        model_gen_ops(s, &cfg, ops, n);
        put_le(buf, s, 4);
        put_le(buf + 4, s >> 32, 4);
        for (i = 0; i < n; i++) {
            uint8_t *p = buf + 8 + i * FUZZ_OP_BYTES;

            p[0] = ops[i].kind;
            put_le(p + 1, ops[i].a, 4);
            put_le(p + 5, ops[i].b, 3);
            put_le(p + 8, ops[i].c, 4);
        }
        path = g_strdup_printf("%s/seed-%02u", dir, (unsigned)s);
        if (!g_file_set_contents(path, (char *)buf, len, NULL)) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(1);
        }
        g_free(path);
        g_free(ops);
        g_free(buf);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("SC_FUZZ_SEED_CORPUS");

    if (dir) {
        write_seed_corpus(dir);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ModelOp ops[FUZZ_MAX_OPS];
    ModelConfig cfg;
    uint64_t seed;
    size_t n = 0;
    char *msg = NULL;

    if (size < 8) {
        return 0;
    }
    seed = get_le(data, 4) | (uint64_t)get_le(data + 4, 4) << 32;
    fuzz_config(seed, &cfg);
    for (data += 8, size -= 8; size >= FUZZ_OP_BYTES && n < FUZZ_MAX_OPS;
         data += FUZZ_OP_BYTES, size -= FUZZ_OP_BYTES) {
        ops[n].kind = data[0] % MOP__MAX;
        ops[n].a = get_le(data + 1, 4);
        ops[n].b = get_le(data + 5, 3);
        ops[n].c = get_le(data + 8, 4);
        n++;
    }
    if (!model_run(&cfg, ops, n, true, &msg)) {
        char *c = model_format_config(&cfg);

        fprintf(stderr, "model check failed: %s\n%s\n", msg, c);
        abort();
    }
    return 0;
}
