# SPDX-License-Identifier: GPL-2.0-or-later
"""The storage nodes under a striped disk in the contract tests, of four
kinds: sparse files, NBD exports (one qemu-nbd per node, so that one node
can be paused with SIGSTOP), tgtd iSCSI LUNs (the harness pool) and RBD
images of a local Ceph cluster (qtests/rbd/ceph.py).

Whatever the kind, the tests can read every node without QEMU (NodeView;
RBD images are exported to files for it), and the stripe's nodes are
opened through a
throttle filter of the group "tg", which the tests use to slow writeback or
fetches down (the limits are off unless a test sets them)."""

import os
import signal
import subprocess
import time

import sys

import paths
from nodes import NodeView, Pool, run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))), 'rbd'))
import ceph                                      # noqa: E402

KINDS = ('file', 'nbd', 'iscsi', 'rbd')
THROTTLE_GROUP = 'tg'


class NodeSet:
    def __init__(self, kind, workdir, count=4, node_size=32 << 20,
                 copies=1):
        if kind not in KINDS:
            raise ValueError('node kind must be one of %s' % ', '.join(KINDS))
        self.kind = kind
        self.copies = copies
        self.stripe_opts = {}      # options of every stripe disk made here
        self.workdir = workdir
        self.count = count
        self.pool = None
        self.nbd = []
        self.prefix = os.path.join(workdir, 'node')
        self.cluster = None
        self.node_mib = node_size >> 20
        self.images = []
        self.disks = 0             # RBD images are made anew per disk
        if kind == 'rbd':
            self.cluster = ceph.Cluster(workdir)
            self.files = ['%s.%d' % (self.prefix, i) for i in range(count)]
        elif kind == 'iscsi':
            self.pool = Pool(workdir, count=count,
                             size='%dM' % (node_size >> 20))
            self.files = list(self.pool.files)
        else:
            self.files = ['%s.%d' % (self.prefix, i) for i in range(count)]

    # -- naming -----------------------------------------------------------

    def protocol_json(self, i):
        """The node as a QEMU protocol node."""
        if self.kind == 'file':
            return {'driver': 'file', 'filename': self.files[i]}
        if self.kind == 'nbd':
            return {'driver': 'nbd',
                    'server': {'type': 'unix', 'path': self.sock(i)}}
        if self.kind == 'rbd':
            return self.cluster.node_json(self.images[i])
        return self.pool.node_json(i)

    def filename(self):
        """stripe: filename of the nodes, for qemu-img."""
        if self.kind == 'file':
            return 'stripe:' + self.prefix
        if self.kind == 'nbd':
            return 'stripe:' + '|'.join(
                'nbd+unix:///?socket=%s' % self.sock(i)
                for i in range(self.count))
        if self.kind == 'rbd':
            return 'stripe:' + '|'.join(self.cluster.filename(x)
                                        for x in self.images)
        return self.pool.filename()

    def stripe_json(self, node_name='disk', throttle=True, **opts):
        nodes = []
        for i in range(self.count):
            n = self.protocol_json(i)
            if throttle:
                n = {'driver': 'throttle', 'throttle-group': THROTTLE_GROUP,
                     'file': n}
            nodes.append(n)
        d = {'driver': 'stripe', 'node-name': node_name, 'nodes': nodes}
        d.update(self.stripe_opts)
        d.update(opts)
        return d

    def sock(self, i):
        return '%s.%d.sock' % (self.prefix, i)

    # -- life cycle -------------------------------------------------------

    def create(self, size, unit='64k'):
        """A new striped disk over the nodes, every byte zero."""
        self.stop_nbd()
        if self.kind == 'iscsi':
            # force=on reuses the LUNs: zero them so the disk starts blank
            for f in self.files:
                lun_bytes = os.path.getsize(f)
                os.truncate(f, 0)
                os.truncate(f, lun_bytes)
            self.pool.create(size, unit, copies=self.copies)
            return
        if self.kind == 'rbd':
            self.create_rbd(size, unit)
            return
        for f in self.files:
            if os.path.exists(f):
                os.unlink(f)
        run([paths.QEMU_IMG, 'create', '-q', '-f', 'stripe', '-o',
             'node-count=%d,stripe-unit=%s,copies=%d' % (self.count, unit,
                                                         self.copies),
             'stripe:' + self.prefix, str(size)])
        if self.kind == 'nbd':
            self.start_nbd()

    def create_rbd(self, size, unit):
        for name in self.images:
            self.cluster.remove(name)
        self.disks += 1
        self.images = ['d%d-%d' % (self.disks, i) for i in range(self.count)]
        for name in self.images:
            self.cluster.create(name, self.node_mib)
        run([paths.QEMU_IMG, 'create', '-q', '-f', 'stripe', '-o',
             'stripe-unit=%s,copies=%d' % (unit, self.copies),
             self.filename(), str(size)])

    def start_nbd(self):
        for i in range(self.count):
            if os.path.exists(self.sock(i)):
                os.unlink(self.sock(i))
            p = subprocess.Popen(
                [paths.QEMU_NBD, '-f', 'raw', '--persistent', '--shared=8',
                 '--cache=writeback', '--aio=threads',
                 '--socket=' + self.sock(i), self.files[i]],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            self.nbd.append(p)
        deadline = time.monotonic() + 30
        while not all(os.path.exists(self.sock(i))
                      for i in range(self.count)):
            if time.monotonic() > deadline:
                raise RuntimeError('qemu-nbd did not start')
            time.sleep(0.02)

    def stop_nbd(self):
        for p in self.nbd:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.nbd = []

    def stop(self):
        self.stop_nbd()
        if self.pool:
            self.pool.stop()
            self.pool = None
        if self.cluster:
            self.cluster.stop()
            self.cluster = None

    # -- faults -----------------------------------------------------------

    def can_pause(self):
        return self.kind in ('nbd', 'iscsi')

    def pause(self, i):
        """The node stops answering (SIGSTOP), connections stay up."""
        if self.kind == 'nbd':
            os.kill(self.nbd[i].pid, signal.SIGSTOP)
        elif self.kind == 'iscsi':
            self.pool.fault('pause', i, True)
        else:
            raise RuntimeError('file nodes cannot be paused')

    def resume(self, i):
        if self.kind == 'nbd':
            os.kill(self.nbd[i].pid, signal.SIGCONT)
        elif self.kind == 'iscsi':
            self.pool.fault('pause', i, False)

    def can_fail(self):
        return self.kind == 'iscsi'

    def fail(self, i, on):
        """The LUN answers NOT READY to every command (on), or works again
        (off): the node fails every request at once, holding none."""
        if self.kind != 'iscsi':
            raise RuntimeError('only iscsi nodes can be taken offline')
        self.pool.fault('offline', i, on)

    # -- what the nodes hold ----------------------------------------------

    def view(self):
        if self.kind == 'rbd':
            for name, path in zip(self.images, self.files):
                if os.path.exists(path):
                    os.unlink(path)
                self.cluster.export(name, path)
        return NodeView(self.files)
