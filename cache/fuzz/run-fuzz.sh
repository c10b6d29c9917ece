#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run a libFuzzer target for a bounded time and report in TAP.  Every
# target of the project (cache/fuzz, block/fuzz) goes through it.
#
#   run-fuzz.sh FUZZER WORKDIR SECONDS
#
# WORKDIR keeps the corpus between runs (seeded on first use: the target
# writes its seeds when SC_FUZZ_SEED_CORPUS names a directory) and any
# crash input.  CI runs 20-30 s from the meson test suite; for a long run
# (docs/fuzzing.md):
#
#   cache/fuzz/run-fuzz.sh BUILD/cache/tests/fuzz-cache-ops /var/tmp/scfuzz 3600
#
# A crash input replays with: FUZZER CRASH-FILE

set -u
fuzzer=$1
work=$2
secs=$3

mkdir -p "$work/corpus"
if [ -z "$(ls -A "$work/corpus")" ]; then
    SC_FUZZ_SEED_CORPUS="$work/corpus" "$fuzzer" || exit 1
fi

name=$(basename "$fuzzer")
echo "1..1"
if "$fuzzer" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" \
        > "$work/fuzz.log" 2>&1; then
    echo "ok 1 - $name ran ${secs}s without failure"
    grep -E "^stat::(number_of_executed|average_exec|peak_rss)|cov:" \
        "$work/fuzz.log" | tail -4 | sed 's/^/# /'
else
    echo "not ok 1 - $name failed, log: $work/fuzz.log"
    tail -40 "$work/fuzz.log" | sed 's/^/# /'
    exit 1
fi
