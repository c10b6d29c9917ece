# SPDX-License-Identifier: GPL-2.0-or-later
"""Where the QEMU binaries and the storage-node harness are.  QEMU's build
directory is QEMU_STRIPE_QEMU_BUILD, or a script's --qemu-build, or the
repository's build/qemu/qemu-build."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HARNESS = os.path.join(REPO, 'qtests', 'harness', 'storage-nodes')
QEMU_BUILD = os.environ.get('QEMU_STRIPE_QEMU_BUILD',
                            os.path.join(REPO, 'build', 'qemu', 'qemu-build'))
QEMU_IMG = os.path.join(QEMU_BUILD, 'qemu-img')
QEMU_IO = os.path.join(QEMU_BUILD, 'qemu-io')
QEMU_NBD = os.path.join(QEMU_BUILD, 'qemu-nbd')
QSD = os.path.join(QEMU_BUILD, 'storage-daemon', 'qemu-storage-daemon')
QEMU_SYSTEM = os.path.join(QEMU_BUILD, 'qemu-system-x86_64')


def set_qemu_build(path):
    """Point every binary at another QEMU build directory (before use)."""
    global QEMU_BUILD, QEMU_IMG, QEMU_IO, QEMU_NBD, QSD, QEMU_SYSTEM
    QEMU_BUILD = os.path.abspath(path)
    QEMU_IMG = os.path.join(QEMU_BUILD, 'qemu-img')
    QEMU_IO = os.path.join(QEMU_BUILD, 'qemu-io')
    QEMU_NBD = os.path.join(QEMU_BUILD, 'qemu-nbd')
    QSD = os.path.join(QEMU_BUILD, 'storage-daemon', 'qemu-storage-daemon')
    QEMU_SYSTEM = os.path.join(QEMU_BUILD, 'qemu-system-x86_64')

