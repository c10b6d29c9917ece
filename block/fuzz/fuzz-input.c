/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the libFuzzer targets in block/fuzz.
 */
#include "fuzz-input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fuzz_fail(const char *file, int line, const char *cond,
               const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s:%d: check failed: %s\n  ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void fuzz_input_init(FuzzInput *in, const uint8_t *data, size_t size)
{
    in->data = data;
    in->size = size;
    in->pos = 0;
}

uint8_t fuzz_u8(FuzzInput *in)
{
    return in->pos < in->size ? in->data[in->pos++] : 0;
}

uint32_t fuzz_u32(FuzzInput *in)
{
    uint32_t v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        v |= (uint32_t)fuzz_u8(in) << (8 * i);
    }
    return v;
}

uint64_t fuzz_u64(FuzzInput *in)
{
    uint64_t lo = fuzz_u32(in);

    return lo | (uint64_t)fuzz_u32(in) << 32;
}

void fuzz_bytes(FuzzInput *in, uint8_t *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = fuzz_u8(in);
    }
}

void fuzz_put_u8(GByteArray *out, uint8_t v)
{
    g_byte_array_append(out, &v, 1);
}

void fuzz_put_u32(GByteArray *out, uint32_t v)
{
    int i;

    for (i = 0; i < 4; i++) {
        fuzz_put_u8(out, v >> (8 * i));
    }
}

void fuzz_put_u64(GByteArray *out, uint64_t v)
{
    fuzz_put_u32(out, v);
    fuzz_put_u32(out, v >> 32);
}

void fuzz_put_bytes(GByteArray *out, const uint8_t *buf, size_t len)
{
    g_byte_array_append(out, buf, len);
}

void fuzz_write_seed(const char *dir, const char *name, GByteArray *seed)
{
    char *path = g_build_filename(dir, name, NULL);
    GError *err = NULL;

    if (!g_file_set_contents(path, (const char *)seed->data, seed->len,
                             &err)) {
        fprintf(stderr, "cannot write seed %s: %s\n", path, err->message);
        exit(1);
    }
    g_free(path);
    g_byte_array_unref(seed);
}
