#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The one test command: installs what is missing, builds the cache core and
# QEMU with the stripe driver, and runs every test (cache unit and model
# tests, their ASan/UBSan builds, qemu-iotests cases, qtests) through
# `meson test`.  Every test speaks TAP; tests that need storage nodes start
# their own tgtd pool and stop it.  The last line is "N passed, N failed".
#
#   scripts/run-tests.sh [meson test options, e.g. --suite cache]
#
# QEMU_STRIPE_BUILD selects the build directory (default: ./build).

set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${QEMU_STRIPE_BUILD:-$REPO/build}
START=$(date +%s)

summary() {
    # $1 passed, $2 failed
    echo "run-tests: wall time $(( $(date +%s) - START )) s"
    echo "$1 passed, $2 failed"
}

fatal() {
    echo "run-tests: $*" >&2
    summary 0 1
    exit 1
}

"$REPO/scripts/install-deps.sh" || fatal "installing packages failed"

if [ ! -f "$BUILD/build.ninja" ]; then
    rm -rf "$BUILD/meson-private"
    meson setup "$BUILD" "$REPO" > "$REPO/build-setup.log" 2>&1 || {
        cat "$REPO/build-setup.log" >&2
        rm -f "$REPO/build-setup.log"
        fatal "meson setup failed"
    }
    rm -f "$REPO/build-setup.log"
fi

# A run that was killed midway may have left storage nodes behind.
"$REPO/qtests/harness/storage-nodes" sweep
"$REPO/qtests/harness/ceph-cluster" sweep

rm -f "$BUILD/meson-logs/testlog.json"
meson test -C "$BUILD" --num-processes 2 --print-errorlogs "$@"
rc=$?

# Anything still registered now belongs to a test that did not clean up:
# that fails the run (the tests' owners are gone, so the sweep stops it).
left=$( { "$REPO/qtests/harness/storage-nodes" sweep
          "$REPO/qtests/harness/ceph-cluster" sweep; } 2>&1 |
        tee /dev/stderr | grep -c 'stale' || true)

if [ ! -f "$BUILD/meson-logs/testlog.json" ]; then
    fatal "meson test produced no results (exit code $rc)"
fi

read -r passed failed skipped < <(python3 - "$BUILD/meson-logs/testlog.json" <<'EOF'
import json, sys
ok = bad = skip = 0
for line in open(sys.argv[1]):
    r = json.loads(line)['result']
    if r in ('OK', 'EXPECTEDFAIL'):
        ok += 1
    elif r == 'SKIP':
        skip += 1
    else:
        bad += 1
print(ok, bad, skip)
EOF
)
if [ "$left" != 0 ]; then
    echo "run-tests: the tests left $left storage pool(s) or Ceph" \
         "cluster(s) behind" >&2
    failed=$((failed + 1))
fi
if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
    # meson itself failed (e.g. the build): count that as a failure.
    failed=1
fi
echo "run-tests: $skipped skipped"
summary "$passed" "$failed"
[ "$failed" = 0 ]
