/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the libFuzzer targets in block/fuzz: reading typed
 * values from the fuzz input, checks that abort with a message, and the
 * seed corpus convention of cache/fuzz (SC_FUZZ_SEED_CORPUS=dir makes the
 * binary write its seeds into dir and exit), so that one runner script,
 * cache/fuzz/run-fuzz.sh, drives every target.
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/* The entry points libFuzzer calls. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A failed invariant.  abort() rather than assert(): it must also fire in
 * a build with NDEBUG, and libFuzzer saves the input that caused it.
 */
#define fuzz_check(cond, ...)                                           \
    do {                                                                \
        if (!(cond)) {                                                  \
            fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);          \
        }                                                               \
    } while (0)

void G_GNUC_PRINTF(4, 5) G_GNUC_NORETURN
fuzz_fail(const char *file, int line, const char *cond, const char *fmt,
          ...);

/*
 * The fuzz input read front to back.  Past its end every value reads as
 * zero, so that any input, however short, is a complete test case.
 */
typedef struct FuzzInput {
    const uint8_t *data;
    size_t size;
    size_t pos;
} FuzzInput;

void fuzz_input_init(FuzzInput *in, const uint8_t *data, size_t size);
uint8_t fuzz_u8(FuzzInput *in);
uint32_t fuzz_u32(FuzzInput *in);
uint64_t fuzz_u64(FuzzInput *in);
void fuzz_bytes(FuzzInput *in, uint8_t *buf, size_t len);

/* The same encoding, for writing seeds. */
void fuzz_put_u8(GByteArray *out, uint8_t v);
void fuzz_put_u32(GByteArray *out, uint32_t v);
void fuzz_put_u64(GByteArray *out, uint64_t v);
void fuzz_put_bytes(GByteArray *out, const uint8_t *buf, size_t len);

/* Write @seed as file @name in the corpus directory @dir; frees @seed. */
void fuzz_write_seed(const char *dir, const char *name, GByteArray *seed);

#endif /* FUZZ_INPUT_H */
