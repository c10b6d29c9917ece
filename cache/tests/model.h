/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache model harness: drives an SCCache the way the QEMU glue
 * does (a simulated striped disk, jobs completed in any order, injected
 * failures) and checks it against a reference model of what the guest
 * must read back and what must be durable after each successful flush.
 *
 * Operations are self-contained (their parameters are taken modulo the
 * current state), so any subsequence of a failing sequence is a valid
 * sequence: that is what lets the test shrink a failure to a short replay.
 */
#ifndef MODEL_H
#define MODEL_H

#include "stripe-cache.h"

#include <stddef.h>

typedef enum ModelOpKind {
    MOP_READ,
    MOP_WRITE,
    MOP_WRITE_FUA,
    MOP_FLUSH,
    MOP_DISCARD,
    MOP_ZERO,
    MOP_WB_ISSUE,
    MOP_PF_ISSUE,
    MOP_COMPLETE,
    MOP_TICK,
    MOP_RETRY,
    MOP_RECONF,
    MOP_DROP,
    MOP_RESIZE,
    MOP_AROUND,     /* a write-around (discard, zero, bypass) lands */
    MOP_STATUS,     /* block status of a range */
    MOP__MAX,
} ModelOpKind;

typedef struct ModelOp {
    uint32_t kind;
    uint32_t a;
    uint32_t b;
    uint32_t c;
} ModelOp;

typedef struct ModelConfig {
    uint64_t disk_size;         /* the largest the disk gets */
    SCGeometry geo;
    SCOptions opts;
    uint32_t wb_fail_permille;
    uint32_t fetch_fail_permille;
    uint32_t check_interval;    /* full sc_cache_check every N ops */
    /*
     * Test of the harness itself, not stored in replays: 1 = nodes corrupt
     * written data, 2 = nodes return zeroes to fetches.  Must be caught.
     */
    uint32_t sabotage;
} ModelConfig;

/* Deterministic generator (splitmix64). */
uint64_t model_rand(uint64_t *state);

void model_config_from_seed(uint64_t seed, ModelConfig *cfg);

/* Fill @ops with @n operations; the mix exercises every path. */
void model_gen_ops(uint64_t seed, const ModelConfig *cfg, ModelOp *ops,
                   size_t n);

/*
 * Run @ops (and, with @drain, write everything back and verify the disk at
 * the end).  Returns true on success; on failure *@msg says what and at
 * which op.
 */
bool model_run(const ModelConfig *cfg, const ModelOp *ops, size_t n,
               bool drain, char **msg);

/* Text form of configurations and operations, for replays. */
char *model_format_config(const ModelConfig *cfg);
bool model_parse_config(const char *line, ModelConfig *cfg);
char *model_format_op(const ModelOp *op);
bool model_parse_op(const char *line, ModelOp *op);

#endif /* MODEL_H */
