/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Seeded model-based randomized test of the cache core (see model.h).
 *
 * Environment:
 *   SC_MODEL_OPS=n          operations in total (default 1000000)
 *   SC_MODEL_EPISODE_OPS=n  operations per episode (default 20000); every
 *                           episode has its own random configuration
 *   SC_MODEL_SEED=s         seed (default: random, always printed)
 *   SC_MODEL_EPISODE=k      run only episode k of that seed
 *   SC_MODEL_REPLAY=file    run a replay printed by a failing run
 *   SC_MODEL_NOFORK=1       run episodes in this process (for valgrind)
 *   SC_MODEL_SHRINK_SECS=n  time allowed for shrinking (default 120)
 *
 * Each episode runs in a child process, so a crash is caught like a failed
 * check; a failing episode is then shrunk (delta debugging over the
 * operation list, each candidate again in a child) and printed as a replay
 * that SC_MODEL_REPLAY runs.
 */
#include "model.h"
#include "sc-test.h"

#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* SC_HAVE_LSAN: defined by the build for the ASan variant */
#ifdef SC_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

static bool no_fork;

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *v = g_getenv(name);

    return v && *v ? g_ascii_strtoull(v, NULL, 0) : def;
}

/* Run in a child process; a crash counts as a failure. */
static bool run_isolated(const ModelConfig *cfg, const ModelOp *ops,
                         size_t n, char **msg)
{
    GString *out;
    int fds[2], status;
    char buf[4096];
    ssize_t got;
    pid_t pid;

    if (no_fork) {
        return model_run(cfg, ops, n, true, msg);
    }
    g_assert(pipe(fds) == 0);
    fflush(NULL);
    pid = fork();
    g_assert(pid >= 0);
    if (pid == 0) {
        char *m = NULL;
        bool ok;

        close(fds[0]);
        ok = model_run(cfg, ops, n, true, &m);
        if (!ok && m && write(fds[1], m, strlen(m)) < 0) {
            _exit(2);
        }
        g_free(m);
#ifdef SC_HAVE_LSAN
        if (__lsan_do_recoverable_leak_check()) {
            _exit(3);
        }
#endif
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    out = g_string_new(NULL);
    while ((got = read(fds[0], buf, sizeof(buf))) > 0) {
        g_string_append_len(out, buf, got);
    }
    close(fds[0]);
    g_assert(waitpid(pid, &status, 0) == pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        g_string_free(out, TRUE);
        return true;
    }
    if (WIFSIGNALED(status)) {
        g_string_append_printf(out, "%scrashed with signal %d",
                               out->len ? "; " : "", WTERMSIG(status));
    } else if (WEXITSTATUS(status) == 3) {
        g_string_append(out, "memory leaked");
    }
    *msg = g_string_free(out, FALSE);
    return false;
}

/* Delta debugging: drop chunks of operations while it still fails. */
static size_t shrink(const ModelConfig *cfg, ModelOp *ops, size_t n,
                     gint64 deadline)
{
    ModelOp *cand = g_new(ModelOp, n);
    size_t chunk = MAX(n / 2, 1);

    while (g_get_monotonic_time() < deadline) {
        bool progress = false;
        size_t i = 0;

        while (i < n && g_get_monotonic_time() < deadline) {
            size_t len = MIN(chunk, n - i);
            char *msg = NULL;

            memcpy(cand, ops, i * sizeof(*ops));
            memcpy(cand + i, ops + i + len, (n - i - len) * sizeof(*ops));
            if (n - len > 0 && !run_isolated(cfg, cand, n - len, &msg)) {
                memcpy(ops, cand, (n - len) * sizeof(*ops));
                n -= len;
                progress = true;
            } else {
                i += len;
            }
            g_free(msg);
        }
        if (!progress) {
            if (chunk == 1) {
                break;
            }
            chunk /= 2;
        }
    }
    g_free(cand);
    return n;
}

static void report_failure(const ModelConfig *cfg, ModelOp *ops, size_t n,
                           const char *msg)
{
    gint64 deadline = g_get_monotonic_time() +
                      env_u64("SC_MODEL_SHRINK_SECS", 120) * G_USEC_PER_SEC;
    char *line, *last = NULL;
    size_t i;

    g_test_message("failure: %s", msg);
    g_test_message("shrinking %zu operations...", n);
    n = shrink(cfg, ops, n, deadline);
    if (!run_isolated(cfg, ops, n, &last)) {
        g_test_message("minimal replay (%zu operations) fails with: %s", n,
                       last);
    }
    g_free(last);
    g_test_message("save the lines below to a file F, then run "
                   "SC_MODEL_REPLAY=F SC_MODEL_NOFORK=1 test-model");
    line = model_format_config(cfg);
    g_test_message("%s", line);
    g_free(line);
    for (i = 0; i < n; i++) {
        line = model_format_op(&ops[i]);
        g_test_message("%s", line);
        g_free(line);
    }
    g_test_fail();
}

static void test_replay_file(const char *path)
{
    GArray *ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    ModelConfig cfg;
    bool have_cfg = false;
    char *text = NULL, **lines, *msg = NULL;
    guint i;

    g_assert(g_file_get_contents(path, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (i = 0; lines[i]; i++) {
        const char *l = lines[i];
        ModelOp op;

        while (*l == '#' || *l == ' ') {
            l++;
        }
        if (g_str_has_prefix(l, "config")) {
            have_cfg = model_parse_config(l, &cfg);
        } else if (*l && model_parse_op(l, &op)) {
            g_array_append_val(ops, op);
        }
    }
    g_assert(have_cfg);
    if (!model_run(&cfg, (ModelOp *)ops->data, ops->len, true, &msg)) {
        g_test_message("replay fails: %s", msg);
        g_test_fail();
    }
    g_free(msg);
    g_strfreev(lines);
    g_free(text);
    g_array_unref(ops);
}

static uint64_t episode_seed(uint64_t seed, uint64_t episode)
{
    uint64_t s = seed ^ (episode * 0xD1B54A32D192ED03ULL);

    return model_rand(&s);
}

static void test_model(void)
{
    const char *replay = g_getenv("SC_MODEL_REPLAY");
    uint64_t seed, total, per, only, done = 0, e;
    gint64 t0;
    double secs;

    if (replay) {
        test_replay_file(replay);
        return;
    }
    seed = env_u64("SC_MODEL_SEED",
                   ((uint64_t)g_random_int() << 32) | g_random_int());
    total = env_u64("SC_MODEL_OPS", 1000000);
    per = MAX(env_u64("SC_MODEL_EPISODE_OPS", 20000), 1);
    only = env_u64("SC_MODEL_EPISODE", UINT64_MAX);
    g_test_message("SC_MODEL_SEED=%" PRIu64 " SC_MODEL_OPS=%" PRIu64
                   " SC_MODEL_EPISODE_OPS=%" PRIu64, seed, total, per);

    t0 = g_get_monotonic_time();
    for (e = 0; done < total; e++) {
        uint64_t es = episode_seed(seed, e), n = MIN(per, total - done);
        ModelConfig cfg;
        ModelOp *ops;
        char *msg = NULL;

        done += n;
        if (only != UINT64_MAX && e != only) {
            continue;
        }
        model_config_from_seed(es, &cfg);
        ops = g_new(ModelOp, n);
        model_gen_ops(es ^ 0x5DEECE66DULL, &cfg, ops, n);
        if (!run_isolated(&cfg, ops, n, &msg)) {
            g_test_message("episode %" PRIu64 " failed (rerun with "
                           "SC_MODEL_SEED=%" PRIu64 " SC_MODEL_EPISODE=%"
                           PRIu64 ")", e, seed, e);
            report_failure(&cfg, ops, n, msg);
            g_free(msg);
            g_free(ops);
            return;
        }
        g_free(ops);
    }
    secs = (g_get_monotonic_time() - t0) / (double)G_USEC_PER_SEC;
    g_test_message("%" PRIu64 " operations in %" PRIu64 " episodes, "
                   "%.2f s, %.0f ops/s", total, e, secs,
                   secs > 0 ? total / secs : 0.0);
}

/* The checks must be able to fail: feed the model broken node behaviour. */
static void test_model_detects_bugs(void)
{
    unsigned kind, found = 0;

    for (kind = 1; kind <= 2; kind++) {
        uint64_t s;

        for (s = 1; s <= 20; s++) {
            ModelConfig cfg;
            ModelOp ops[3000];
            char *msg = NULL;

            model_config_from_seed(s * 7919 + kind, &cfg);
            cfg.sabotage = kind;
            model_gen_ops(s, &cfg, ops, G_N_ELEMENTS(ops));
            if (!model_run(&cfg, ops, G_N_ELEMENTS(ops), true, &msg)) {
                found++;
                g_free(msg);
                break;
            }
        }
    }
    sc_assert_cmpu(found, ==, 2);
}

static void test_format_roundtrip(void)
{
    ModelConfig cfg, back;
    ModelOp op = { MOP_COMPLETE, 1, 2, 3 }, op2;
    char *s;

    model_config_from_seed(42, &cfg);
    s = model_format_config(&cfg);
    sc_assert(model_parse_config(s, &back));
    sc_assert_mem(&cfg, &back, sizeof(cfg));
    g_free(s);
    s = model_format_op(&op);
    sc_assert(model_parse_op(s, &op2));
    sc_assert_mem(&op, &op2, sizeof(op));
    g_free(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    no_fork = env_u64("SC_MODEL_NOFORK", 0);
    g_test_add_func("/cache/model/format", test_format_roundtrip);
    g_test_add_func("/cache/model/detects-bugs", test_model_detects_bugs);
    g_test_add_func("/cache/model/random", test_model);
    return g_test_run();
}
