# SPDX-License-Identifier: GPL-2.0-or-later
"""A qemu-storage-daemon exporting one stripe node over NBD (unix socket),
with a QMP monitor.  It dies with the test even on SIGKILL (parent-death
signal), can be killed -9 on purpose, or asked to quit, which closes the
stripe node and so writes the cache back."""

import ctypes
import json
import os
import signal
import subprocess
import time

import nbd

import paths
from qmp import QMP

PR_SET_PDEATHSIG = 1
NODE_NAME = 'disk'


def _die_with_parent():
    ctypes.CDLL('libc.so.6', use_errno=True).prctl(PR_SET_PDEATHSIG,
                                                   signal.SIGKILL)


class Daemon:
    def __init__(self, workdir, blockdev, name='qsd', log_name=None):
        self.sock = os.path.join(workdir, name + '.nbd')
        self.qmp_sock = os.path.join(workdir, name + '.qmp')
        self.log = os.path.join(workdir, log_name or name + '.log')
        for p in (self.sock, self.qmp_sock):
            if os.path.exists(p):
                os.unlink(p)
        node = dict(blockdev, **{'node-name': NODE_NAME})
        self.cmdline = [
            paths.QSD, '--blockdev', json.dumps(node),
            '--nbd-server', 'addr.type=unix,addr.path=' + self.sock,
            '--export', 'type=nbd,id=e,node-name=%s,name=%s,writable=on' %
            (NODE_NAME, NODE_NAME),
            '--chardev', 'socket,id=m,path=%s,server=on,wait=off' %
            self.qmp_sock,
            '--monitor', 'chardev=m']
        with open(self.log, 'a') as logf:
            self.proc = subprocess.Popen(self.cmdline, stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent)
        try:
            self.qmp = QMP(self.qmp_sock, timeout=60, alive=self.alive)
        except Exception:
            self.kill()
            raise RuntimeError('qemu-storage-daemon did not start: %s' %
                               self.log_text()[-2000:])
        self.uri = 'nbd+unix:///%s?socket=%s' % (NODE_NAME, self.sock)

    def alive(self):
        return self.proc.poll() is None

    def log_text(self):
        with open(self.log, errors='replace') as f:
            return f.read()

    def connect(self):
        h = nbd.NBD()
        h.connect_uri(self.uri)
        return h

    def cache_stats(self):
        for s in self.qmp.cmd('query-blockstats', **{'query-nodes': True}):
            if s.get('node-name') == NODE_NAME:
                return s['driver-specific']['cache']
        return {}

    def kill(self):
        """SIGKILL: what a crash of the host process looks like to the
        nodes.  Nothing of QEMU's runs after it."""
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.qmp.close() if hasattr(self, 'qmp') else None

    def request_quit(self):
        """Ask QEMU to quit, without waiting: qemu-storage-daemon closes
        its disks (writing the cache back) before it answers, if ever."""
        if self.alive():
            try:
                self.qmp.send('quit')
            except Exception:
                pass

    def quit(self, timeout=120):
        """Ask QEMU to quit and wait.  Its exit status, or None when it did
        not exit in time (it is then killed)."""
        self.request_quit()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        self.qmp.close()
        return rc


def wait_closed(h, timeout):
    """Process an NBD handle until nothing is in flight (or timeout)."""
    deadline = time.monotonic() + timeout
    while h.aio_in_flight() > 0 and time.monotonic() < deadline:
        h.poll(100)
    return h.aio_in_flight() == 0
