/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": the cache and readahead runtime options.
 *
 * They are parsed with QemuOpts so that -drive (all values are strings)
 * and -blockdev (typed values) read the same, and they all can change on
 * reopen.  An option left out of a reopen returns to its default.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/option.h"
#include "stripe.h"

#define NS_PER_SEC 1000000000.0

QemuOptsList stripe_runtime_opts = {
    .name = "stripe",
    .head = QTAILQ_HEAD_INITIALIZER(stripe_runtime_opts.head),
    .desc = {
        {
            .name = STRIPE_OPT_CACHE_SIZE,
            .type = QEMU_OPT_SIZE,
            .help = "Memory for cached data in all states (default 32M)",
        },
        {
            .name = STRIPE_OPT_CACHE_MAX_DIRTY,
            .type = QEMU_OPT_SIZE,
            .help = "Most dirty data; 0 writes through (default 24M)",
        },
        {
            .name = STRIPE_OPT_CACHE_TARGET_DIRTY,
            .type = QEMU_OPT_SIZE,
            .help = "Dirty data at which writeback starts (default 16M)",
        },
        {
            .name = STRIPE_OPT_CACHE_MAX_DIRTY_AGE,
            .type = QEMU_OPT_STRING,
            .help = "Seconds after which dirty data is written back "
                    "(default 1)",
        },
        {
            .name = STRIPE_OPT_CACHE_WT_UNTIL_FLUSH,
            .type = QEMU_OPT_BOOL,
            .help = "Write through until the guest's first flush "
                    "(default on)",
        },
        {
            .name = STRIPE_OPT_RA_TRIGGER,
            .type = QEMU_OPT_NUMBER,
            .help = "Sequential requests that start readahead (default 10)",
        },
        {
            .name = STRIPE_OPT_RA_MAX_BYTES,
            .type = QEMU_OPT_SIZE,
            .help = "Largest readahead window; 0 disables readahead "
                    "(default 2M)",
        },
        {
            .name = STRIPE_OPT_RA_DISABLE_AFTER,
            .type = QEMU_OPT_SIZE,
            .help = "Stop readahead after this many bytes were read; "
                    "0 never stops (default 0)",
        },
        {
            .name = STRIPE_OPT_CACHE_BYPASS,
            .type = QEMU_OPT_SIZE,
            .help = "Requests of at least this size go around the cache; "
                    "0 never (default 512K)",
        },
        {
            .name = STRIPE_OPT_CACHE_NODE_JOBS,
            .type = QEMU_OPT_NUMBER,
            .help = "Writeback and prefetch jobs in flight per node; "
                    "0 picks by node kind (default 0: 128 for rbd, else 4)",
        },
        {
            .name = STRIPE_OPT_CACHE_EAGER_WB,
            .type = QEMU_OPT_BOOL,
            .help = "Write a stripe segment back as soon as writes made "
                    "all of it dirty (default on)",
        },
        {
            .name = STRIPE_OPT_NODE_TIMEOUT,
            .type = QEMU_OPT_STRING,
            .help = "Replicated images: seconds after which a node that "
                    "does not answer is failed; 0 waits forever "
                    "(default 15)",
        },
        {
            .name = STRIPE_OPT_AUTO_RESYNC,
            .type = QEMU_OPT_BOOL,
            .help = "Replicated images: resync the regions of the "
                    "write-intent bitmap, and bring failed nodes back, as "
                    "soon as the image is writable (default on)",
        },
        { /* end of list */ }
    },
};

const char *const stripe_mutable_opts[] = {
    STRIPE_OPT_CACHE_SIZE,
    STRIPE_OPT_CACHE_MAX_DIRTY,
    STRIPE_OPT_CACHE_TARGET_DIRTY,
    STRIPE_OPT_CACHE_MAX_DIRTY_AGE,
    STRIPE_OPT_CACHE_WT_UNTIL_FLUSH,
    STRIPE_OPT_RA_TRIGGER,
    STRIPE_OPT_RA_MAX_BYTES,
    STRIPE_OPT_RA_DISABLE_AFTER,
    STRIPE_OPT_CACHE_BYPASS,
    STRIPE_OPT_CACHE_NODE_JOBS,
    STRIPE_OPT_CACHE_EAGER_WB,
    STRIPE_OPT_NODE_TIMEOUT,
    STRIPE_OPT_AUTO_RESYNC,
    NULL
};

/* A duration in seconds, a decimal; *@ns is left alone if not given. */
static bool stripe_parse_seconds(QemuOpts *opts, const char *name,
                                 int max_secs, int64_t *ns, Error **errp)
{
    const char *str = qemu_opt_get(opts, name);
    double secs;

    if (!str) {
        return true;
    }
    if (qemu_strtod_finite(str, NULL, &secs) < 0 || secs < 0 ||
        secs > max_secs) {
        error_setg(errp, "stripe: invalid %s '%s': seconds from 0 to %d",
                   name, str, max_secs);
        return false;
    }
    *ns = secs * NS_PER_SEC;
    return true;
}

bool stripe_parse_node_timeout(QemuOpts *opts, int64_t *timeout_ns,
                               Error **errp)
{
    *timeout_ns = STRIPE_DEFAULT_NODE_TIMEOUT_NS;
    return stripe_parse_seconds(opts, STRIPE_OPT_NODE_TIMEOUT,
                                STRIPE_MAX_NODE_TIMEOUT_SECS, timeout_ns,
                                errp);
}

static bool stripe_opt_given(QemuOpts *opts, const char *name)
{
    return qemu_opt_get(opts, name) != NULL;
}

/*
 * Defaults that do not fit the options given are scaled down to them,
 * librbd-style: cache-max-dirty=0 alone means write-through, a small
 * cache-size alone gets dirty limits and a readahead window that fit.
 * Values given explicitly are never changed (and may be refused).
 */
static void stripe_scale_defaults(QemuOpts *opts, SCOptions *o)
{
    if (!stripe_opt_given(opts, STRIPE_OPT_CACHE_MAX_DIRTY)) {
        o->max_dirty = MIN(o->max_dirty, o->size / 4 * 3);
    }
    if (!stripe_opt_given(opts, STRIPE_OPT_CACHE_TARGET_DIRTY)) {
        o->target_dirty = MIN(o->target_dirty, o->max_dirty / 3 * 2);
    }
    if (!stripe_opt_given(opts, STRIPE_OPT_RA_MAX_BYTES)) {
        o->readahead_max_bytes = MIN(o->readahead_max_bytes, o->size / 2);
    }
}

bool stripe_parse_cache_options(QemuOpts *opts, SCOptions *o, Error **errp)
{
    int64_t age_ns;
    uint64_t trigger, jobs;
    g_autofree char *msg = NULL;

    sc_options_init_defaults(o);
    o->size = qemu_opt_get_size(opts, STRIPE_OPT_CACHE_SIZE, o->size);
    o->max_dirty = qemu_opt_get_size(opts, STRIPE_OPT_CACHE_MAX_DIRTY,
                                     o->max_dirty);
    o->target_dirty = qemu_opt_get_size(opts, STRIPE_OPT_CACHE_TARGET_DIRTY,
                                        o->target_dirty);
    o->writethrough_until_flush =
        qemu_opt_get_bool(opts, STRIPE_OPT_CACHE_WT_UNTIL_FLUSH,
                          o->writethrough_until_flush);
    o->eager_writeback = qemu_opt_get_bool(opts, STRIPE_OPT_CACHE_EAGER_WB,
                                           o->eager_writeback);
    trigger = qemu_opt_get_number(opts, STRIPE_OPT_RA_TRIGGER,
                                  o->readahead_trigger_requests);
    if (trigger > UINT32_MAX) {
        error_setg(errp, "stripe: invalid %s %" PRIu64,
                   STRIPE_OPT_RA_TRIGGER, trigger);
        return false;
    }
    o->readahead_trigger_requests = trigger;
    o->readahead_max_bytes = qemu_opt_get_size(opts, STRIPE_OPT_RA_MAX_BYTES,
                                               o->readahead_max_bytes);
    o->readahead_disable_after_bytes =
        qemu_opt_get_size(opts, STRIPE_OPT_RA_DISABLE_AFTER,
                          o->readahead_disable_after_bytes);
    o->bypass_bytes = qemu_opt_get_size(opts, STRIPE_OPT_CACHE_BYPASS,
                                        o->bypass_bytes);
    jobs = qemu_opt_get_number(opts, STRIPE_OPT_CACHE_NODE_JOBS,
                               o->node_jobs);
    if (jobs > UINT32_MAX) {
        error_setg(errp, "stripe: invalid %s %" PRIu64,
                   STRIPE_OPT_CACHE_NODE_JOBS, jobs);
        return false;
    }
    o->node_jobs = jobs;
    age_ns = o->max_dirty_age_ns;
    if (!stripe_parse_seconds(opts, STRIPE_OPT_CACHE_MAX_DIRTY_AGE,
                              STRIPE_MAX_DIRTY_AGE_SECS, &age_ns, errp)) {
        return false;
    }
    o->max_dirty_age_ns = age_ns;
    stripe_scale_defaults(opts, o);

    /* The core names the option and value in its messages. */
    msg = sc_options_check(o);
    if (msg) {
        error_setg(errp, "stripe: %s", msg);
        return false;
    }
    return true;
}
