#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build QEMU 10.0.2 with the stripe driver.
#
#   build-qemu.sh [--asan|--tsan] [--build-dir DIR] [--stamp FILE] [TARGET...]
#
# 1. Obtain Debian's qemu_10.0.2+ds.orig.tar.xz into the download cache
#    (once; the sha256 is checked on every run).
# 2. Unpack it under DIR/qemu-src (never in the source tree) and apply
#    patches/*.patch in order; a new or changed patch re-unpacks the tree.
# 3. Link block/ and cache/ of this checkout into the QEMU tree (symlinks,
#    so editing a file here rebuilds it there), plus our qemu-iotests cases.
# 4. Configure once (DIR/qemu-build), then let ninja rebuild only what
#    changed; ccache makes a fresh tree cheap.
#
# The default TARGETs are the binaries the project uses.
#
# --asan configures with QEMU's --enable-asan --enable-ubsan (UBSan errors
# abort, as in QEMU's own CI) and builds by default only what
# qtests/run-asan-iotests needs.  It has its own DIR (default
# build/qemu-asan) with its own unpacked tree and lock, so that it never
# waits for, re-unpacks or reconfigures the plain build.
#
# --tsan builds with clang and QEMU's --enable-tsan, in build/qemu-tsan,
# what qtests/run-tsan needs: the driver driven from several threads.

set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=""
STAMP=""
ASAN=0
TSAN=0
TARGETS=()

QEMU_DEB_VERSION='1:10.0.2+ds-2+deb13u1~bpo12+1'
TARBALL=qemu_10.0.2+ds.orig.tar.xz
TARBALL_SHA256=0901da33844a331bf8b3602b9c1fbd178e60b737c8e3ade678255bd090c9b9f1
DOWNLOAD_CACHE=${QEMU_STRIPE_DOWNLOAD_CACHE:-/var/cache/qemu-stripe}

DEFAULT_TARGETS=(qemu-img qemu-io qemu-nbd storage-daemon/qemu-storage-daemon
                 qemu-system-x86_64 tests/qtest/qos-test stripe-mq-bench)
# qemu-iotests' ./check wants all of these to exist, even when a case only
# runs qemu-img and qemu-io.
ASAN_TARGETS=(qemu-img qemu-io qemu-nbd storage-daemon/qemu-storage-daemon
              qemu-system-x86_64)
# What qtests/run-tsan runs: the driver from several threads at once, and
# the multiqueue qtest (a virtio-blk device on four iothreads).
TSAN_TARGETS=(qemu-img stripe-mq-bench qemu-system-x86_64
              tests/qtest/qos-test)

die() {
    echo "build-qemu: error: $*" >&2
    exit 1
}

log() {
    echo "build-qemu: $*"
}

while [ $# -gt 0 ]; do
    case "$1" in
    --asan) ASAN=1; shift ;;
    --tsan) TSAN=1; shift ;;
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --stamp) STAMP=$2; shift 2 ;;
    -*) die "unknown option $1" ;;
    *) TARGETS+=("$1"); shift ;;
    esac
done
if [ $ASAN = 1 ]; then
    BUILD_DIR=${BUILD_DIR:-$REPO/build/qemu-asan}
    DEFAULT_TARGETS=("${ASAN_TARGETS[@]}")
fi
if [ $TSAN = 1 ]; then
    [ $ASAN = 0 ] || die "--asan and --tsan do not mix"
    BUILD_DIR=${BUILD_DIR:-$REPO/build/qemu-tsan}
    DEFAULT_TARGETS=("${TSAN_TARGETS[@]}")
fi
BUILD_DIR=${BUILD_DIR:-$REPO/build/qemu}
if [ ${#TARGETS[@]} = 0 ]; then
    TARGETS=("${DEFAULT_TARGETS[@]}")
fi

mkdir -p "$BUILD_DIR"
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)

# Let ccache share results between checkouts and build directories: paths
# below the build directory are hashed relative to it.
export CCACHE_BASEDIR="$BUILD_DIR"
export CCACHE_NOHASHDIR=true

SRC="$BUILD_DIR/qemu-src"
OBJ="$BUILD_DIR/qemu-build"
mkdir -p "$BUILD_DIR"

# Serialise concurrent invocations on one build directory.
exec 9>"$BUILD_DIR/.lock"
flock 9

check_sha256() {
    echo "$TARBALL_SHA256  $1" | sha256sum --check --status
}

fetch_tarball() {
    local tmp
    mkdir -p "$DOWNLOAD_CACHE"
    if [ -f "$DOWNLOAD_CACHE/$TARBALL" ]; then
        check_sha256 "$DOWNLOAD_CACHE/$TARBALL" ||
            die "$DOWNLOAD_CACHE/$TARBALL has the wrong sha256" \
                "(expected $TARBALL_SHA256); remove it to download again"
        return
    fi
    log "downloading $TARBALL with apt-get source"
    tmp=$(mktemp -d "$DOWNLOAD_CACHE/.dl.XXXXXX")
    # The .dsc and debian tarball of this version answer 404; only the orig
    # tarball matters, so judge by its checksum, not by apt's exit code.
    (cd "$tmp" && apt-get source -q --download-only \
        "qemu=$QEMU_DEB_VERSION" >apt-source.log 2>&1) || true
    if [ ! -f "$tmp/$TARBALL" ]; then
        cat "$tmp/apt-source.log" >&2
        rm -rf "$tmp"
        die "apt-get source did not deliver $TARBALL (is the" \
            "bookworm-backports deb-src entry there? run" \
            "scripts/install-deps.sh)"
    fi
    if ! check_sha256 "$tmp/$TARBALL"; then
        rm -rf "$tmp"
        die "downloaded $TARBALL has the wrong sha256, refusing to build"
    fi
    mv "$tmp/$TARBALL" "$DOWNLOAD_CACHE/$TARBALL"
    rm -rf "$tmp"
}

# The tree is identified by the tarball and the exact patch contents.
tree_id() {
    {
        echo "$TARBALL_SHA256"
        for p in "$REPO"/patches/*.patch; do
            [ -e "$p" ] || continue
            basename "$p"
            sha256sum < "$p"
        done
    } | sha256sum | cut -d' ' -f1
}

prepare_tree() {
    local id p
    id=$(tree_id)
    if [ -f "$SRC/.qemu-stripe-tree" ] &&
            [ "$(cat "$SRC/.qemu-stripe-tree")" = "$id" ]; then
        return
    fi
    log "unpacking $TARBALL into $SRC"
    rm -rf "$SRC" "$SRC.tmp"
    mkdir -p "$SRC.tmp"
    tar -xJf "$DOWNLOAD_CACHE/$TARBALL" --no-same-owner \
        --strip-components=1 -C "$SRC.tmp"
    for p in "$REPO"/patches/*.patch; do
        [ -e "$p" ] || continue
        log "applying $(basename "$p")"
        if ! patch -d "$SRC.tmp" -p1 --batch --forward --quiet \
                < "$p" > "$BUILD_DIR/patch.log" 2>&1; then
            cat "$BUILD_DIR/patch.log" >&2
            die "patch $(basename "$p") does not apply"
        fi
    done
    echo "$id" > "$SRC.tmp/.qemu-stripe-tree"
    mv "$SRC.tmp" "$SRC"
    # A new tree means a new configure: meson caches absolute paths.
    rm -rf "$OBJ"
}

# Replace $2 by a symlink to $1 unless it already is one.
link() {
    if [ "$(readlink "$2" 2>/dev/null)" != "$1" ]; then
        rm -rf "$2"
        ln -s "$1" "$2"
    fi
}

link_sources() {
    local t d
    link "$REPO/block" "$SRC/block/stripe"
    link "$REPO/cache" "$SRC/block/stripe-cache"
    # the multi-thread benchmark, built next to qemu-img
    link "$REPO/bench/stripe-mq-bench.c" "$SRC/stripe-mq-bench.c"
    # Our qemu-iotests cases: named tests live in tests/qemu-iotests/tests.
    d="$SRC/tests/qemu-iotests/tests"
    for t in "$REPO"/qtests/iotests/*; do
        [ -e "$t" ] || continue
        link "$t" "$d/$(basename "$t")"
    done
    # Drop links to cases that were removed here.
    for t in "$d"/*; do
        if [ -L "$t" ] && [ ! -e "$t" ]; then
            rm -f "$t"
        fi
    done
    # libqtest/libqos tests built inside QEMU's tests/qtest.
    for t in "$REPO"/qtests/qtest/*.[ch]; do
        [ -e "$t" ] || continue
        link "$t" "$SRC/tests/qtest/$(basename "$t")"
    done
}

configure() {
    local cc=gcc cxx=g++ args
    # ThreadSanitizer with coroutines needs clang (QEMU's configure says)
    [ $TSAN = 1 ] && cc=clang cxx=clang++
    if [ -x /usr/lib/ccache/$cc ]; then
        cc=/usr/lib/ccache/$cc
        cxx=/usr/lib/ccache/$cxx
    fi
    args=(--cc="$cc" --cxx="$cxx" --host-cc="$cc"
          --python=/usr/bin/python3
          --target-list=x86_64-softmmu
          --without-default-features
          --enable-tools --enable-libiscsi --enable-linux-aio
          --enable-fdt=system
          --disable-docs --disable-install-blobs)
    if [ $ASAN = 1 ]; then
        args+=(--enable-asan --enable-ubsan
               --extra-cflags=-fno-sanitize-recover=undefined)
    fi
    if [ $TSAN = 1 ]; then
        args+=(--enable-tsan)
    fi
    # Ceph RBD images as nodes (qtests/rbd), in the plain build: the
    # sanitizer builds test the driver, not librbd.
    if [ $ASAN = 0 ] && [ $TSAN = 0 ]; then
        args+=(--enable-rbd)
    fi
    # Reconfigure only when the arguments change or a configure was cut off.
    if [ -f "$OBJ/.qemu-stripe-configured" ] &&
            [ "$(cat "$OBJ/.qemu-stripe-configured")" = "${args[*]}" ]; then
        return
    fi
    log "configuring in $OBJ"
    rm -rf "$OBJ"
    mkdir -p "$OBJ"
    if ! (cd "$OBJ" && "$SRC/configure" "${args[@]}" \
            > "$BUILD_DIR/configure.log" 2>&1); then
        tail -40 "$BUILD_DIR/configure.log" >&2
        die "QEMU configure failed (full log: $BUILD_DIR/configure.log)"
    fi
    echo "${args[*]}" > "$OBJ/.qemu-stripe-configured"
}

# The +ds tarball has no firmware: a QEMU run from the build tree looks in
# its qemu-bundle, where we link Debian's SeaBIOS and iPXE images and the
# option ROMs of qemu-system-data (kvmvapic, linuxboot, multiboot, pvh).
link_firmware() {
    local f dir="$OBJ/qemu-bundle/usr/local/share/qemu"
    mkdir -p "$dir"
    for f in /usr/share/seabios/*.bin /usr/lib/ipxe/qemu/*.rom \
             /usr/share/qemu/kvmvapic.bin /usr/share/qemu/linuxboot*.bin \
             /usr/share/qemu/multiboot*.bin /usr/share/qemu/pvh.bin; do
        [ -e "$f" ] || continue
        link "$f" "$dir/$(basename "$f")"
    done
}

fetch_tarball
prepare_tree
link_sources
configure
link_firmware
log "building ${TARGETS[*]}"
if ! ninja -C "$OBJ" "${TARGETS[@]}" > "$BUILD_DIR/ninja.log" 2>&1; then
    grep -v '^\[[0-9]*/[0-9]*\] ' "$BUILD_DIR/ninja.log" | tail -80 >&2
    die "QEMU build failed (full log: $BUILD_DIR/ninja.log)"
fi
log "$(grep -c '^\[[0-9]*/[0-9]*\] ' "$BUILD_DIR/ninja.log" || true) build steps run"
if [ -n "$STAMP" ]; then
    touch "$STAMP"
fi
