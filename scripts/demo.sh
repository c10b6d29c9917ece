#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The demo: installs and builds what is missing, starts a local pool of 4
# iSCSI storage nodes (tgtd), creates a striped disk over them with
# qemu-img and does real IO on it through QEMU, verifying every byte it
# reads back.  Leaves nothing running.

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

IMG="stripe:$(echo $NODE_URLS | tr ' ' '|')"

echo "== a striped disk over the 4 nodes (64 KiB stripe unit)"
"$QEMU/qemu-img" create -f stripe -o stripe-unit=64k "$IMG" 900M |
    sed -e 's/, fmt=/\n   fmt=/'
"$QEMU/qemu-img" info -f stripe "$IMG" |
    grep -e 'virtual size' -e uuid -e 'stripe unit' -e '    index'

echo "== write 64 MiB of patterns through the stripe, read them back verified"
"$QEMU/qemu-io" -f stripe "$IMG" \
    -c 'write -P 0x5a 0 32M' -c 'write -P 0xa5 32M 32M' \
    -c 'read -P 0x5a 0 32M' -c 'read -P 0xa5 32M 32M' |
    grep -v '^[0-9].*ops;'

echo "== the second unit is on node 1: read it straight from the LUN"
"$QEMU/qemu-io" -f raw "$NODE1_URL" -c 'read -P 0x5a 1M 64k' |
    grep -v '^[0-9].*ops;'

echo "== qemu-img bench through the stripe"
echo "   1 MiB sequential writes, depth 8:"
"$QEMU/qemu-img" bench -f stripe -t none -w -c 512 -s 1M -d 8 "$IMG" |
    grep completed
echo "   1 MiB sequential reads, depth 8:"
"$QEMU/qemu-img" bench -f stripe -t none -c 512 -s 1M -d 8 "$IMG" |
    grep completed
echo "   4 KiB reads 1 MiB apart, depth 32:"
"$QEMU/qemu-img" bench -f stripe -t none -c 20000 -s 4k -S 1M -d 32 "$IMG" |
    grep completed

echo "== stopping the nodes"
