# SPDX-License-Identifier: GPL-2.0-or-later
"""A qemu-storage-daemon exporting one stripe node over NBD (unix socket),
with a QMP monitor.  It dies with the test even on SIGKILL (parent-death
signal), can be killed -9 on purpose, or asked to quit, which closes the
stripe node and so writes the cache back."""

import json
import os
import time

import nbd

import paths
from qemuproc import QemuProcess

NODE_NAME = 'disk'


class Daemon(QemuProcess):
    def __init__(self, workdir, blockdev, name='qsd', log_name=None,
                 trace=(), objects=()):
        """@trace: trace events to log (to the log file); @objects:
        --object arguments (e.g. a throttle group the nodes use)."""
        self.sock = os.path.join(workdir, name + '.nbd')
        self.qmp_sock = os.path.join(workdir, name + '.qmp')
        self.log = os.path.join(workdir, log_name or name + '.log')
        for p in (self.sock, self.qmp_sock):
            if os.path.exists(p):
                os.unlink(p)
        node = dict(blockdev, **{'node-name': NODE_NAME})
        self.cmdline = [paths.QSD] + ['--trace=' + t for t in trace] + \
            [a for o in objects for a in ('--object', o)] + [
            '--blockdev', json.dumps(node),
            '--nbd-server', 'addr.type=unix,addr.path=' + self.sock,
            '--export', 'type=nbd,id=e,node-name=%s,name=%s,writable=on' %
            (NODE_NAME, NODE_NAME),
            '--chardev', 'socket,id=m,path=%s,server=on,wait=off' %
            self.qmp_sock,
            '--monitor', 'chardev=m']
        super().__init__(self.cmdline, self.qmp_sock, self.log)
        self.uri = 'nbd+unix:///%s?socket=%s' % (NODE_NAME, self.sock)

    def connect(self):
        h = nbd.NBD()
        h.connect_uri(self.uri)
        return h

    def stripe_stats(self):
        for s in self.qmp.cmd('query-blockstats', **{'query-nodes': True}):
            if s.get('node-name') == NODE_NAME:
                return s['driver-specific']
        return {}

    def cache_stats(self):
        return self.stripe_stats().get('cache', {})


def wait_closed(h, timeout):
    """Process an NBD handle until nothing is in flight (or timeout)."""
    deadline = time.monotonic() + timeout
    while h.aio_in_flight() > 0 and time.monotonic() < deadline:
        h.poll(100)
    return h.aio_in_flight() == 0
