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
    NULL
};

static bool stripe_parse_age(QemuOpts *opts, SCOptions *o, Error **errp)
{
    const char *str = qemu_opt_get(opts, STRIPE_OPT_CACHE_MAX_DIRTY_AGE);
    double secs;

    if (!str) {
        return true;
    }
    if (qemu_strtod_finite(str, NULL, &secs) < 0 || secs < 0 ||
        secs > STRIPE_MAX_DIRTY_AGE_SECS) {
        error_setg(errp, "stripe: invalid %s '%s': seconds from 0 to %d",
                   STRIPE_OPT_CACHE_MAX_DIRTY_AGE, str,
                   STRIPE_MAX_DIRTY_AGE_SECS);
        return false;
    }
    o->max_dirty_age_ns = secs * NS_PER_SEC;
    return true;
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
    uint64_t trigger;
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
    if (!stripe_parse_age(opts, o, errp)) {
        return false;
    }
    stripe_scale_defaults(opts, o);

    /* The core names the option and value in its messages. */
    msg = sc_options_check(o);
    if (msg) {
        error_setg(errp, "stripe: %s", msg);
        return false;
    }
    return true;
}
