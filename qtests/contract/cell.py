# SPDX-License-Identifier: GPL-2.0-or-later
"""One cell of the contract matrix: a fresh striped disk over the nodes,
filled with base data, a QEMU with the disk open (writeback cache on), a
guest on its NBD export, and the cache put into one state before the
consumer runs.

Layout of the 16 MiB disk (64 KiB stripe unit, 4 nodes):
  [0, 2M) base data   [2M, 4M) hole      [4M, 5M) base data
  [5M, 12M) hole      [12M, 13M) base    [13M, 16M) hole
The states write into the holes on purpose: a hole on the nodes under data
in the cache is what block status must not report as a hole."""

import json
import os
import subprocess
import time

import paths
from blocks import make_data
from guest import Guest
from machine import Machine, throttle_group
from nodes import run, wait_for

MiB = 1 << 20
KiB = 1 << 10
DISK = 16 * MiB
UNIT = '64k'
BASE = ((0, 2 * MiB), (4 * MiB, 1 * MiB), (12 * MiB, 1 * MiB))

# The cache of every cell: dirty data stays until written back by pressure
# or a flush (not when writes make a whole stripe unit dirty: the cells
# put whole units into every state; the whole-units state switches that
# on), readahead starts after three sequential reads.
CACHE_OPTS = {
    'cache-size': 2 * MiB,
    'cache-max-dirty': 1 * MiB,
    'cache-target-dirty': 512 * KiB,
    'cache-max-dirty-age': 3600,
    'cache-eager-writeback': False,
    'cache-writethrough-until-flush': False,
    'readahead-trigger-requests': 3,
    'readahead-max-bytes': 1 * MiB,
}

STATES = ('dirty', 'writeback', 'fetching', 'prefetched', 'evicted',
          'zeroing', 'whole-units')

# What a state changes in CACHE_OPTS.
STATE_OPTS = {'whole-units': {'cache-eager-writeback': True}}

# Base data carries write ids from here on; the guest's start at 1.
BASE_ID = 1 << 40


SHOWN_STATS = ('dirty-bytes', 'writeback-inflight-bytes', 'clean-bytes',
               'memory-bytes', 'read-miss-bytes', 'readahead-issued-bytes')


class CellError(Exception):
    pass


def fetching(st):
    """Bytes reserved for fetches in flight (demand or prefetch)."""
    return (st.get('memory-bytes', 0) - st.get('clean-bytes', 0) -
            st.get('dirty-bytes', 0))


def write_base(ranges, ref, workdir, image_args):
    """Write base data for @ranges (index k of BASE from the first) with
    qemu-io, cache off, into the image @image_args names."""
    cmds = []
    for k, (off, length) in ranges:
        data = make_data(off, length, BASE_ID + k)
        src = os.path.join(workdir, 'base-%d.bin' % k)
        with open(src, 'wb') as f:
            f.write(data)
        ref.store(off, data)
        cmds += ['-c', 'write -q -s %s %d %d' % (src, off, length)]
    run([paths.QEMU_IO, '-t', 'none'] + cmds + list(image_args))


def fill_base(nodes, ref, workdir):
    """Write the base data through the stripe."""
    write_base(enumerate(BASE), ref, workdir, ['-f', 'stripe',
                                               nodes.filename()])


def qcow2_over_stripe(nodes, ref, workdir, cache_opts=None):
    """A qcow2 overlay inside the striped disk (qemu-img create -o
    existing=on) over a raw base file: [0, 2M) of the base data in the
    base file, the rest written into the overlay, so that reads of it go
    to the stripe; @cache_opts change CACHE_OPTS for the disk.  Returns
    the blockdevs and the base file."""
    base = os.path.join(workdir, 'base.raw')
    off, length = BASE[0]
    data = make_data(off, length, BASE_ID)
    with open(base, 'wb') as f:
        f.truncate(DISK)
        f.seek(off)
        f.write(data)
    ref.store(off, data)
    run([paths.QEMU_IMG, 'create', '-q', '-f', 'qcow2', '-o', 'existing=on',
         '-b', base, '-F', 'raw', nodes.filename()])
    disk = nodes.stripe_json(**dict(CACHE_OPTS, **(cache_opts or {})))
    top = {'driver': 'qcow2', 'node-name': 'top', 'file': 'disk',
           'backing': {'driver': 'raw', 'node-name': 'base',
                       'file': {'driver': 'file', 'filename': base}}}
    spec = dict(top, file=nodes.stripe_json(throttle=False))
    write_base(enumerate(BASE[1:], 1), ref, workdir,
               ['json:' + json.dumps(spec)])
    return [disk, top], base


class Cell:
    def __init__(self, nodes, workdir, name, ref, cache_opts=None,
                 objects=(), blockdevs=None, export='disk', incoming=None):
        self.nodes = nodes
        self.workdir = workdir
        self.name = name
        self.ref = ref
        self.opts = dict(CACHE_OPTS, **(cache_opts or {}))
        self.disk_json = nodes.stripe_json(**self.opts)
        self.vm = Machine(workdir, name,
                          blockdevs=([self.disk_json] if blockdevs is None
                                     else blockdevs),
                          objects=[throttle_group()] + list(objects),
                          incoming=incoming)
        # ranges the stripe holds and the cache does not (yet)
        self.cold = BASE if export == 'disk' else BASE[1:]
        # every QEMU of the cell, for the watchdog (migration adds one)
        self.machines = [self.vm]
        # a consumer's check of the nodes once QEMU closed the disk: the
        # problem found, or None
        self.after_close = None
        self.guest = None
        if export:
            self.guest = Guest(self.vm.export(export), self.ref)

    def stats(self):
        return self.vm.cache_stats('disk')

    def close(self):
        if self.guest:
            self.guest.close()
        if self.vm.alive():
            self.vm.quit()

    # -- putting the cache into a state -----------------------------------

    def enter(self, state):
        """Put the cache into @state; raise CellError if it did not get
        there (the cell would test nothing).  The cell must have been
        made with STATE_OPTS[state]."""
        for opt, value in STATE_OPTS.get(state, {}).items():
            assert self.opts[opt] == value, 'cell made without ' + opt
        getattr(self, 'enter_' + state.replace('-', '_'))()

    def require(self, cond, what):
        if not cond:
            st = self.stats()
            raise CellError('could not set up: %s (cache: %s)' % (what, ', '.join(
                '%s %s' % (k, st.get(k)) for k in SHOWN_STATS)))

    def enter_dirty(self):
        """Dirty data in a hole of the nodes and over base data."""
        self.guest.write(2 * MiB, 384 * KiB)
        self.guest.write(self.cold[0][0] + 256 * KiB, 64 * KiB)
        self.require(self.stats().get('dirty-bytes', 0) >= 384 * KiB,
                     'dirty data')

    def enter_writeback(self):
        """Writeback in flight to slow nodes (throttled writes, half a
        second for what is over target-dirty), more dirty data waiting
        behind it."""
        self.vm.throttle(**{'bps-write': 512 * KiB})
        self.guest.write(6 * MiB, 768 * KiB)
        self.require(self.stats().get('writeback-inflight-bytes', 0) > 0,
                     'writeback in flight')

    def enter_fetching(self):
        """Guest reads of uncached data wait for fetches from slow nodes
        (throttled reads); dirty data next to them."""
        self.guest.write(2 * MiB, 256 * KiB)
        self.vm.throttle(**{'bps-read': 512 * KiB})
        off = self.cold[0][0]
        for at in (off, off + 768 * KiB, off + 256 * KiB):
            self.guest.aio_read(at, 128 * KiB)
        self.require(wait_for(lambda: fetching(self.stats()) > 0, 2,
                              0.005), 'a fetch in flight')
        # What waits keeps waiting (up to a second); what comes next is
        # not slowed down.
        self.vm.throttle()

    def enter_prefetched(self):
        """Sequential reads made readahead fetch data nobody read yet;
        then part of it is overwritten."""
        for k in range(4):
            self.guest.read(12 * MiB + k * 64 * KiB, 32 * KiB)
        self.require(wait_for(
            lambda: self.stats().get('readahead-issued-bytes', 0) > 0 and
            fetching(self.stats()) == 0, 10), 'prefetched data')
        self.guest.write(12 * MiB + 512 * KiB, 64 * KiB)

    def enter_evicted(self):
        """Data written, written back and evicted by later reads (of data:
        QEMU's NBD server does not read what block status calls holes)."""
        self.guest.write(2 * MiB, 512 * KiB)
        self.guest.flush()
        for off, length in self.cold:
            for at in range(off, off + length, 256 * KiB):
                self.guest.read(at, 256 * KiB)
        st = self.stats()
        came_in = (st.get('read-miss-bytes', 0) +
                   st.get('readahead-issued-bytes', 0))
        self.require(st.get('dirty-bytes', 1) == 0 and
                     came_in > self.opts['cache-size'],
                     'written back, then evicted by reads')

    def enter_zeroing(self):
        """Write-zeroes over dirty data on its way to slow nodes (a
        write-around in flight): the cache dropped the data, the nodes do
        not have the zeroes yet."""
        off = self.cold[0][0]
        # over base data: node data older than the dirty data is neither
        # what the guest wrote last nor zeroes
        self.guest.write(off + 64 * KiB, 256 * KiB)
        self.vm.throttle(**{'bps-write': 256 * KiB})
        req = self.guest.aio_zero(off + 128 * KiB, 128 * KiB)
        self.guest.wait_sent()
        # (qcow2 inside the stripe zeroes in its metadata cache at once)
        self.require(not req['done'] or self.cold != BASE,
                     'write-zeroes in flight')
        self.vm.throttle()

    def enter_whole_units(self):
        """The eager writeback's states: writes that make a stripe unit
        whole send it to the nodes at once, with no flush.  A unit sent
        and written back, then rewritten whole (kept dirty: a unit
        rewritten within the dirty age stays in the cache); units sent to
        slow nodes (in flight), one of them over base data, and part of
        one written again over its writeback."""
        slow = ((6 * MiB, 192 * KiB), (self.cold[0][0] + 384 * KiB, 64 * KiB))
        self.guest.write(2 * MiB, 64 * KiB, chunk=16 * KiB)
        # (qcow2 inside the stripe allocates a cluster with one write of
        # all of it, which sends the unit; the rest of it is rewritten)
        sent = ('dirty-bytes', 'writeback-inflight-bytes')[
            self.cold != BASE:]
        self.require(wait_for(lambda: not any(
            self.stats().get(k, 1) for k in sent), 5),
            'a whole unit written back with no flush')
        self.guest.write(2 * MiB, 64 * KiB, chunk=16 * KiB)
        self.vm.throttle(**{'bps-write': 512 * KiB})
        for (off, length), chunk in zip(slow, (16 * KiB, 32 * KiB)):
            self.guest.write(off, length, chunk=chunk)
        self.guest.write(6 * MiB + 80 * KiB, 16 * KiB)
        st = self.stats()
        self.require(st.get('writeback-inflight-bytes', 0) > 0 and
                     st.get('dirty-bytes', 0) >= 80 * KiB,
                     'whole units in flight, a rewritten unit dirty')

    def leave(self):
        """Lift the throttles and let the guest's requests finish; the
        problems they show."""
        self.vm.throttle()
        return self.guest.settle() if self.guest else []


def node_image_ok(nodes, ref):
    """None if the nodes (read without QEMU) hold the reference: with
    several copies, every copy of every unit, unless a node was marked
    failed (then the copies on live nodes)."""
    view = nodes.view()
    if view.copies == 1 or view.failed:
        return ref.diff(view.read(0, ref.size))
    for copy in range(view.copies):
        bad = ref.diff(view.read(0, ref.size, copy))
        if bad:
            return 'copy %d: %s' % (copy, bad)
    return None


def qemu_img(*args, timeout=300):
    res = subprocess.run([paths.QEMU_IMG] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=timeout)
    return res.returncode, res.stdout


def raw_file_diff(path, ref):
    with open(path, 'rb') as f:
        data = f.read()
    data += bytes(max(0, ref.size - len(data)))
    return ref.diff(data[:ref.size])


def image_diff(path, fmt, ref, workdir, opts=None):
    """Convert an image to raw with qemu-img and compare it."""
    out = os.path.join(workdir, 'converted.raw')
    args = ['convert', '-O', 'raw']
    if opts:
        args += ['--image-opts', opts]
    else:
        args += ['-f', fmt, path]
    rc, msg = qemu_img(*(args + [out]))
    if rc:
        return 'qemu-img convert failed: ' + msg.strip()
    try:
        return raw_file_diff(out, ref)
    finally:
        os.unlink(out)


def settle_time(seconds):
    time.sleep(seconds)
