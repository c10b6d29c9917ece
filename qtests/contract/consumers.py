# SPDX-License-Identifier: GPL-2.0-or-later
"""QEMU's consumers of a block node, each run on a cell whose cache is in
some state, each returning the problems it found (empty: the consumer saw
exactly what the guest wrote).

Every consumer compares byte for byte with the guest's reference, through
the consumer's own output: the NBD reader's data and its base:allocation
map, a converted image, a mirror or backup target, an overlay after stream
or copy-on-read, the base after commit, the nodes themselves after a
snapshot, a stop or a close, the destination after migration."""

import json
import os

from cell import (DISK, KiB, MiB, image_diff, node_image_ok, qemu_img,
                  raw_file_diff)
from guest import Guest
from qmp import QMPError


def note(problems, what, bad):
    """Add problem @bad (None: none) found in @what."""
    if bad:
        problems.append('%s: %s' % (what, bad))


def _target(cell, name, fmt='raw', backing=None):
    path = os.path.join(cell.workdir, name + '.' + fmt)
    args = ['create', '-q', '-f', fmt]
    if backing:
        args += ['-b', backing, '-F', 'raw']
    rc, msg = qemu_img(*(args + [path, str(DISK)]))
    if rc:
        raise QMPError('qemu-img create %s: %s' % (path, msg))
    return path


def _add_file_node(cell, name, path, fmt='raw', **extra):
    node = {'driver': fmt, 'node-name': name,
            'file': {'driver': 'file', 'filename': path}}
    node.update(extra)
    cell.vm.cmd('blockdev-add', **node)


def nbd_read(cell):
    """A second NBD client reads the whole disk with structured replies
    (QEMU sends the holes it believes in as such) and asks base:allocation:
    every byte must be the guest's, every hole or zero range zero."""
    reader = Guest(cell.vm.uri('disk'), cell.ref)
    try:
        holes = reader.zero_extents()
        bad = cell.ref.zero_ranges_ok(holes)
        data_bad = reader.check()
    finally:
        reader.close()
    return [p for p in (bad, data_bad) if p]


def img_convert_compare(cell):
    """qemu-img compare and convert, reading the running disk over NBD."""
    problems = []
    ref_path = os.path.join(cell.workdir, 'ref.raw')
    with open(ref_path, 'wb') as f:
        f.write(cell.ref.data)
    uri = cell.vm.uri('disk')
    # (compare knows one right answer: not while a write is in flight)
    if not cell.ref.maybe:
        rc, msg = qemu_img('compare', '-f', 'raw', '-F', 'raw', ref_path,
                           uri)
        if rc:
            problems.append('qemu-img compare: ' + msg.strip())
    note(problems, 'qemu-img convert', image_diff(uri, 'raw', cell.ref, cell.workdir))
    os.unlink(ref_path)
    return problems


def close_then_check_overlay(cell, path):
    """Close QEMU, then compare the qcow2 overlay @path read without its
    backing file (everything must have been copied into it)."""
    cell.close()
    spec = json.dumps({'driver': 'qcow2', 'backing': None,
                       'file': {'driver': 'file', 'filename': path}})
    bad = image_diff('json:' + spec, 'qcow2', cell.ref, cell.workdir)
    return ['overlay alone: ' + bad] if bad else []


def _mirror(cell, sync):
    path = _target(cell, 'mirror')
    _add_file_node(cell, 'tgt', path)
    cell.vm.cmd('blockdev-mirror', **{'job-id': 'm', 'device': 'disk',
                                      'target': 'tgt', 'sync': sync})
    cell.vm.wait_job('m', 'BLOCK_JOB_READY')
    # written while mirroring: must reach the target too
    cell.guest.write(9 * MiB, 128 * KiB)
    cell.vm.cmd('block-job-cancel', device='m')
    cell.vm.wait_job('m')
    cell.vm.wait_job_gone('m')
    cell.vm.cmd('blockdev-del', **{'node-name': 'tgt'})
    bad = raw_file_diff(path, cell.ref)
    return ['mirror target: ' + bad] if bad else []


def mirror_full(cell):
    return _mirror(cell, 'full')


def mirror_top(cell):
    return _mirror(cell, 'top')


def mirror_pivot(cell):
    """blockdev-mirror and job-complete: the export moves to the target
    and the guest goes on there.  The target holds everything, the stripe
    (once QEMU closed it, cell.after_close) the data of the pivot moment.
    The way off a disk whose node is gone: it must not wait for a hung
    node."""
    path = _target(cell, 'mirror')
    _add_file_node(cell, 'tgt', path)
    cell.vm.cmd('blockdev-mirror', **{'job-id': 'm', 'device': 'disk',
                                      'target': 'tgt', 'sync': 'full'})
    cell.vm.wait_job('m', 'BLOCK_JOB_READY')
    cell.guest.write(9 * MiB, 128 * KiB)
    # the guest's requests end first: the pivot moment is then exact
    problems = cell.leave()
    cell.vm.cmd('job-complete', id='m')
    cell.vm.wait_job('m')
    cell.vm.wait_job_gone('m')
    at_pivot = cell.ref.copy()
    cell.guest.write(2 * MiB + 512 * KiB, 128 * KiB)
    note(problems, 'after the pivot', cell.guest.check())
    cell.guest.flush()
    note(problems, 'mirror target', raw_file_diff(path, cell.ref))
    cell.after_close = lambda: node_image_ok(cell.nodes, at_pivot)
    return problems


def backup_incremental(cell):
    """A full backup, then more writes and an incremental backup of a
    dirty bitmap into a qcow2 over the full one."""
    full = _target(cell, 'full')
    _add_file_node(cell, 'full', full)
    cell.vm.cmd('block-dirty-bitmap-add', node='disk', name='bm')
    cell.vm.cmd('blockdev-backup', **{'job-id': 'b1', 'device': 'disk',
                                      'target': 'full', 'sync': 'full'})
    cell.vm.wait_job('b1')
    cell.vm.wait_job_gone('b1')
    cell.vm.cmd('blockdev-del', **{'node-name': 'full'})
    problems = []
    note(problems, 'full backup', raw_file_diff(full, cell.ref))
    cell.guest.write(9 * MiB, 256 * KiB)
    cell.guest.write(4 * MiB + 512 * KiB, 64 * KiB)
    inc = _target(cell, 'inc', 'qcow2', backing=full)
    _add_file_node(cell, 'inc', inc, 'qcow2')
    cell.vm.cmd('blockdev-backup', **{'job-id': 'b2', 'device': 'disk',
                                      'target': 'inc',
                                      'sync': 'incremental',
                                      'bitmap': 'bm'})
    cell.vm.wait_job('b2')
    cell.vm.wait_job_gone('b2')
    cell.vm.cmd('blockdev-del', **{'node-name': 'inc'})
    note(problems, 'incremental backup', image_diff(inc, 'qcow2', cell.ref, cell.workdir))
    return problems


def _snapshot(cell, name='top'):
    path = os.path.join(cell.workdir, name + '.qcow2')
    cell.vm.cmd('blockdev-snapshot-sync', **{
        'node-name': 'disk', 'snapshot-file': path,
        'snapshot-node-name': name, 'format': 'qcow2'})
    return path


def snapshot(cell):
    """blockdev-snapshot-sync: the guest goes on in the overlay; the stripe
    keeps exactly the data of the snapshot moment (checked on the nodes
    after QEMU closed it)."""
    _snapshot(cell)
    at_snapshot = cell.ref.copy()
    cell.guest.write(2 * MiB + 512 * KiB, 128 * KiB)
    problems = []
    note(problems, 'overlay', cell.guest.check())
    problems += cell.leave()
    cell.close()
    note(problems, 'stripe after the snapshot', node_image_ok(cell.nodes, at_snapshot))
    return problems


def stream(cell):
    """The stripe becomes the backing file of a qcow2 overlay, and
    block-stream copies it all into the overlay."""
    path = _snapshot(cell)
    cell.vm.cmd('block-stream', **{'job-id': 's', 'device': 'top'})
    cell.vm.wait_job('s')
    cell.vm.wait_job_gone('s')
    problems = cell.leave()
    note(problems, 'after stream', cell.guest.check())
    return problems + close_then_check_overlay(cell, path)


def copy_on_read(cell):
    """A copy-on-read filter over a qcow2 overlay whose backing is the
    stripe: reading everything copies the stripe into the overlay."""
    problems = cell.leave()
    cell.guest.close()
    cell.guest = None
    cell.vm.unexport('disk')
    path = _target(cell, 'cor', 'qcow2')
    _add_file_node(cell, 'ovl', path, 'qcow2', backing='disk')
    cell.vm.cmd('blockdev-add', driver='copy-on-read', **{
        'node-name': 'cor', 'file': 'ovl'})
    reader = Guest(cell.vm.export('cor', writable=False), cell.ref)
    bad = reader.check()
    reader.close()
    if bad:
        problems.append('read through copy-on-read: ' + bad)
    return problems + close_then_check_overlay(cell, path)


def reopen(cell):
    """blockdev-reopen: new cache options with the export up, read-only
    without it (the cache is written back first), and read-write again."""
    problems = []
    opts = dict(cell.disk_json, **{'cache-size': 8 * MiB})
    cell.vm.cmd('blockdev-reopen', options=[opts])
    note(problems, 'after reopen with new options', cell.guest.check())
    problems += cell.leave()
    cell.guest.close()
    cell.guest = None
    cell.vm.unexport('disk')
    cell.vm.cmd('blockdev-reopen', options=[dict(opts, **{'read-only':
                                                          True})])
    note(problems, 'nodes after reopen read-only', node_image_ok(cell.nodes, cell.ref))
    reader = Guest(cell.vm.export('disk', writable=False), cell.ref)
    bad = reader.check()
    reader.close()
    if bad:
        problems.append('read-only: ' + bad)
    cell.vm.unexport('disk')
    cell.vm.cmd('blockdev-reopen', options=[opts])
    cell.guest = Guest(cell.vm.export('disk'), cell.ref, 1 << 20)
    cell.guest.write(10 * MiB, 128 * KiB)
    note(problems, 'read-write again', cell.guest.check())
    return problems


def iothread_move(cell):
    """x-blockdev-set-iothread to an iothread and back, with guest writes
    in flight across the moves."""
    problems = []
    for target in ('io0', None):
        for k in range(4):
            cell.guest.aio_write(9 * MiB + k * 64 * KiB, 64 * KiB)
        cell.guest.wait_sent()
        cell.vm.cmd('x-blockdev-set-iothread', **{'node-name': 'disk',
                                                  'iothread': target,
                                                  'force': True})
        problems += cell.guest.settle()
        bad = cell.guest.check()
        if bad:
            problems.append('after moving to %s: %s' % (target or 'main',
                                                        bad))
    return problems


def blockdev_del_under_load(cell):
    """Writes in flight, then the export and the disk go away: closing
    the disk writes every acknowledged write back to the nodes."""
    before = cell.ref.copy()
    reqs = [cell.guest.aio_write(9 * MiB + k * 64 * KiB, 64 * KiB)
            for k in range(8)]
    cell.guest.wait_sent()
    cell.vm.throttle()
    cell.vm.unexport('disk', mode='hard')
    cell.vm.cmd('blockdev-del', **{'node-name': 'disk'}, timeout=120)
    for r in reqs:
        r['thread'].join(30)
    cell.guest.inflight = []
    cell.guest.close()
    cell.guest = None
    # an unacknowledged write may or may not have landed, whole
    view = cell.nodes.view().read(0, DISK)
    problems = []
    for r in reqs:
        off, data = r['offset'], r['payload']
        got = view[off:off + len(data)]
        if got == data:
            before.store(off, got)
        elif not r['error'] and r['done']:
            problems.append('acknowledged write at %d not on the nodes' %
                            off)
    note(problems, 'nodes after blockdev-del', before.diff(view))
    return problems


def stop_cont(cell):
    """VM stop with guest writes in flight: when 'stop' returns, the nodes
    hold every write acknowledged before it (QEMU drains and flushes)."""
    for k in range(6):
        cell.guest.aio_write(9 * MiB + k * 64 * KiB, 64 * KiB)
    cell.guest.wait_sent()
    cell.vm.throttle()
    cell.vm.cmd('stop', timeout=120)
    problems = cell.guest.settle()
    note(problems, 'nodes after stop', node_image_ok(cell.nodes, cell.ref))
    cell.vm.cmd('cont')
    cell.guest.write(10 * MiB, 64 * KiB)
    note(problems, 'after cont', cell.guest.check())
    return problems


# Where resize cuts the disk: inside the units the writeback and
# whole-units states write around 6 MiB, and before the data the
# prefetched state reads ahead at 12 MiB.
CUT = 6 * MiB + 96 * KiB


def resize(cell):
    """block_resize shrinks the disk under the cache's data and grows it
    back: what was cut off reads as zeroes (dirty data, writeback in
    flight and data read ahead there included), the rest as the guest
    wrote it, through the export and on the nodes.  (An NBD export does
    not share the resize permission: it goes away meanwhile.)"""
    problems = cell.leave()
    cell.guest.close()
    cell.guest = None
    cell.vm.unexport('disk')
    for size in (CUT, DISK):
        cell.vm.cmd('block_resize', **{'node-name': 'disk'}, size=size,
                    timeout=120)
    cell.ref.zero(CUT, DISK - CUT)
    cell.guest = Guest(cell.vm.export('disk'), cell.ref, 1 << 20)
    note(problems, 'grown back', cell.guest.check())
    cell.guest.write(12 * MiB, 128 * KiB)
    note(problems, 'after a write past the cut', cell.guest.check())
    cell.after_close = lambda: node_image_ok(cell.nodes, cell.ref)
    return problems


def migration(cell):
    """Migration to a second QEMU on the same nodes: the source writes its
    cache back when it hands the nodes over, the destination starts from
    nothing and reads what the guest wrote."""
    from machine import Machine, throttle_group
    problems = cell.leave()
    cell.guest.close()
    cell.guest = None
    cell.vm.unexport('disk')
    sock = os.path.join(cell.workdir, 'migrate.sock')
    dst = Machine(cell.workdir, cell.name + '-dst',
                  blockdevs=[cell.disk_json], objects=[throttle_group()],
                  incoming='unix:' + sock)
    cell.machines.append(dst)
    try:
        cell.vm.cmd('migrate', uri='unix:' + sock)
        st = cell.vm.wait_migration()
        if st != 'completed':
            return problems + ['migration ended: %s' % st]
        cell.vm.quit()
        dst.cmd('cont')
        reader = Guest(dst.export('disk'), cell.ref, 1 << 20)
        note(problems, 'destination', reader.check())
        reader.write(10 * MiB, 64 * KiB)
        bad = reader.check()
        reader.close()
        if bad:
            problems.append('destination after a write: ' + bad)
    finally:
        dst.quit()
    note(problems, 'nodes after the destination closed', node_image_ok(cell.nodes, cell.ref))
    return problems


def commit(cell):
    """qcow2 inside the stripe over a raw base file: an active block-commit
    copies the overlay (read from the stripe) into the base and pivots."""
    cell.vm.cmd('block-commit', **{'job-id': 'c', 'device': 'top'})
    cell.vm.wait_job('c', 'BLOCK_JOB_READY')
    cell.guest.write(9 * MiB, 128 * KiB)
    cell.vm.cmd('job-complete', id='c')
    cell.vm.wait_job('c')
    cell.vm.wait_job_gone('c')
    problems = cell.leave()
    note(problems, 'after commit', cell.guest.check())
    cell.close()
    note(problems, 'base file', raw_file_diff(cell.base_file, cell.ref))
    return problems


CONSUMERS = {
    'nbd-read': nbd_read,
    'img-convert-compare': img_convert_compare,
    'mirror-full': mirror_full,
    'mirror-top': mirror_top,
    'mirror-pivot': mirror_pivot,
    'backup-incremental': backup_incremental,
    'stream': stream,
    'copy-on-read': copy_on_read,
    'snapshot': snapshot,
    'reopen': reopen,
    'iothread-move': iothread_move,
    'blockdev-del': blockdev_del_under_load,
    'stop-cont': stop_cont,
    'migration': migration,
    'commit': commit,
    'resize': resize,
}

# Consumers whose disk is a qcow2 inside the stripe (cell.qcow2_over_stripe)
QCOW2_OVER_STRIPE = {'commit'}

# Consumers that need an iothread object in the QEMU
NEEDS_IOTHREAD = {'iothread-move'}
