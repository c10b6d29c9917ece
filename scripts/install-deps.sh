#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Install every Debian package qemu-stripe needs on a Debian 12 machine:
# the QEMU build dependencies (with libiscsi), meson >= 1.5 and pycotap from
# bookworm-backports, the storage-node and load tools, and the guest parts.
#
# Idempotent, and silent when everything is already installed.

set -euo pipefail

BACKPORTS_LIST=/etc/apt/sources.list.d/qemu-stripe-backports.list

# Packages from the main bookworm archive.
PACKAGES=(
    # QEMU build
    build-essential pkg-config ninja-build ccache python3 python3-venv
    libglib2.0-dev libpixman-1-dev zlib1g-dev libiscsi-dev libaio-dev
    libfdt-dev flex bison xz-utils bzip2 perl librbd-dev librados-dev
    # clang -Wthread-safety check, libFuzzer, sanitizers
    clang lld libclang-rt-14-dev
    # storage nodes and load generators
    tgt libiscsi-bin fio nbdkit libnbd-bin python3-libnbd iproute2 socat jq
    # Ceph storage nodes (qtests/harness/ceph-cluster): one monitor and
    # memstore OSDs on loopback, no mgr
    ceph-mon ceph-osd ceph-common uuid-runtime
    # guest boot (BIOS, option ROMs, initramfs userland)
    seabios ipxe-qemu busybox-static cpio e2fsprogs
    # tests and benchmark reports; gdb prints the stacks of a QEMU that
    # hangs in a test
    valgrind gnuplot-nox gdb
)

# Packages that must come from bookworm-backports: meson >= 1.5, and the
# option ROMs of the same QEMU version (the +ds tarball has none).
BACKPORTS=(meson python3-pycotap qemu-system-data)

need_sources=0
if [ ! -f "$BACKPORTS_LIST" ]; then
    need_sources=1
fi

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q 'ok installed'; then
        missing+=("$p")
    fi
done

missing_bpo=()
for p in "${BACKPORTS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q 'ok installed'; then
        missing_bpo+=("$p")
    fi
done
# Bookworm's own meson and qemu-system-data are too old.
need_version() {
    local pkg=$1 min=$2 ver
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
            grep -q 'ok installed'; then
        ver=$(dpkg-query -W -f='${Version}' "$pkg")
        if dpkg --compare-versions "$ver" lt "$min"; then
            missing_bpo+=("$pkg")
        fi
    fi
}
need_version meson 1.5
need_version qemu-system-data 1:10.0

if [ $need_sources = 0 ] && [ ${#missing[@]} = 0 ] &&
        [ ${#missing_bpo[@]} = 0 ]; then
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "install-deps: packages missing (${missing[*]} ${missing_bpo[*]})," \
         "run as root" >&2
    exit 1
fi

if [ $need_sources = 1 ]; then
    echo "install-deps: adding bookworm-backports (deb and deb-src)"
    cat > "$BACKPORTS_LIST" <<'EOF'
deb http://deb.debian.org/debian bookworm-backports main
deb-src http://deb.debian.org/debian bookworm-backports main
EOF
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: apt-get update"
apt-get update -q >/dev/null

if [ ${#missing_bpo[@]} != 0 ]; then
    echo "install-deps: installing from backports: ${missing_bpo[*]}"
    apt-get install -y -q -t bookworm-backports "${missing_bpo[@]}" \
        >/dev/null
fi
if [ ${#missing[@]} != 0 ]; then
    echo "install-deps: installing: ${missing[*]}"
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-deps: done"
