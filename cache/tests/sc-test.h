/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Assertions for the cache tests.  QEMU's checkpatch allows GLib's
 * g_assert_cmp*() family only under the top-level tests/, so these print
 * the compared values themselves.  They fail even with G_DISABLE_ASSERT.
 */
#ifndef SC_TEST_H
#define SC_TEST_H

#include <glib.h>
#include <inttypes.h>
#include <string.h>

#define sc_assert_cmpu(a, op, b)                                        \
    do {                                                                \
        uint64_t a_ = (a), b_ = (b);                                    \
        if (!(a_ op b_)) {                                              \
            g_error("%s:%d: %s %s %s failed (%" PRIu64 " vs %" PRIu64   \
                    ")", __FILE__, __LINE__, #a, #op, #b, a_, b_);      \
        }                                                               \
    } while (0)

#define sc_assert_cmpi(a, op, b)                                        \
    do {                                                                \
        int64_t a_ = (a), b_ = (b);                                     \
        if (!(a_ op b_)) {                                              \
            g_error("%s:%d: %s %s %s failed (%" PRId64 " vs %" PRId64   \
                    ")", __FILE__, __LINE__, #a, #op, #b, a_, b_);      \
        }                                                               \
    } while (0)

#define sc_assert(cond)                                                 \
    do {                                                                \
        if (!(cond)) {                                                  \
            g_error("%s:%d: %s failed", __FILE__, __LINE__, #cond);     \
        }                                                               \
    } while (0)

#define sc_assert_mem(a, b, len)                                        \
    do {                                                                \
        if (memcmp((a), (b), (len))) {                                  \
            g_error("%s:%d: %s and %s differ", __FILE__, __LINE__,     \
                    #a, #b);                                            \
        }                                                               \
    } while (0)

#endif /* SC_TEST_H */
