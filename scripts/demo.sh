#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The demo: installs and builds what is missing, starts a local pool of 4
# iSCSI storage nodes (tgtd) and does real IO on them through QEMU's iscsi
# driver with qemu-io, verifying every byte it reads back.  Leaves nothing
# running.

set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${QEMU_STRIPE_BUILD:-$REPO/build}
QEMU="$BUILD/qemu/qemu-build"
HARNESS="$REPO/qtests/harness/storage-nodes"
POOL_DIR=$(mktemp -d /tmp/qemu-stripe-demo.XXXXXX)

cleanup() {
    if [ -f "$POOL_DIR/pool.json" ]; then
        "$HARNESS" stop --pool-dir "$POOL_DIR"
    fi
    rm -rf "$POOL_DIR"
}
trap cleanup EXIT

echo "== installing packages (if missing) and building QEMU"
"$REPO/scripts/install-deps.sh"
"$REPO/scripts/build-qemu.sh" --build-dir "$BUILD/qemu"

echo "== starting 4 iSCSI storage nodes"
eval "$("$HARNESS" start --count 4 --size 256M --owner $$ \
        --pool-dir "$POOL_DIR" --format env)"
for url in $NODE_URLS; do
    echo "   $url"
done

i=0
for url in $NODE_URLS; do
    pattern=$((0x11 * (i + 1)))
    echo "== node $i: write 16 MiB of pattern $pattern, read it back verified"
    "$QEMU/qemu-io" -f raw "$url" \
        -c "write -P $pattern 0 16M" -c "read -P $pattern 0 16M" |
        grep -v '^[0-9].*ops;'
    i=$((i + 1))
done

echo "== 4k random-offset reads on node 0 (qemu-img bench, depth 32)"
"$QEMU/qemu-img" bench -f raw -t none -c 20000 -s 4k -S 12k -d 32 \
    "$NODE0_URL"

echo "== stopping the nodes"
