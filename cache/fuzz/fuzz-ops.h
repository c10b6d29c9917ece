/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Entry points that libFuzzer calls in the cache fuzz target.
 */
#ifndef FUZZ_OPS_H
#define FUZZ_OPS_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* FUZZ_OPS_H */
