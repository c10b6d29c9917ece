# SPDX-License-Identifier: GPL-2.0-or-later
"""A QEMU process for the contract tests: qemu-system-x86_64 with machine
'none' (no guest code runs; block jobs, NBD exports, iothreads, VM
stop/cont and migration all work) or qemu-storage-daemon, a QMP monitor,
and the helpers the consumers need: NBD exports, job waits, per-node cache
statistics and the process's CPU time."""

import json
import os
import threading
import time

import paths
from qemuproc import QemuProcess
from qmp import QMPError

THROTTLE_FIELDS = ('bps-total', 'bps-read', 'bps-write', 'iops-total',
                   'iops-read', 'iops-write')
CLK_TCK = os.sysconf('SC_CLK_TCK')


class Machine(QemuProcess):
    """@daemon: run qemu-storage-daemon instead (no VM state, no
    migration, the same QMP for everything else)."""

    def __init__(self, workdir, name, blockdevs=(), objects=(),
                 incoming=None, extra=(), daemon=False):
        self.workdir = workdir
        self.name = name
        self.qmp_sock = os.path.join(workdir, name + '.qmp')
        self.nbd_sock = os.path.join(workdir, name + '.nbd')
        self.log = os.path.join(workdir, name + '.log')
        for p in (self.qmp_sock, self.nbd_sock):
            if os.path.exists(p):
                os.unlink(p)
        chardev = 'socket,id=m,path=%s,server=on,wait=off' % self.qmp_sock
        if daemon:
            cmd = [paths.QSD, '--chardev', chardev, '--monitor', 'chardev=m']
        else:
            cmd = [paths.QEMU_SYSTEM, '-M', 'none', '-nodefaults',
                   '-display', 'none', '-accel', 'tcg',
                   '-chardev', chardev, '-mon', 'chardev=m,mode=control']
        dash = '--' if daemon else '-'
        for o in objects:
            cmd += [dash + 'object', json.dumps(o)]
        for b in blockdevs:
            cmd += [dash + 'blockdev', json.dumps(b)]
        if incoming:
            cmd += ['-incoming', incoming]
        cmd += list(extra)
        super().__init__(cmd, self.qmp_sock, self.log)
        self.nbd_started = False

    def cmd(self, command, timeout=None, **args):
        return self.qmp.cmd(command, timeout=timeout, **args)

    def hmp(self, line, timeout=None):
        return self.cmd('human-monitor-command', timeout=timeout,
                        **{'command-line': line})

    def cpu_seconds(self):
        """User + system CPU time of the QEMU process so far."""
        with open('/proc/%d/stat' % self.proc.pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    # -- exports ----------------------------------------------------------

    def export(self, node, name=None, writable=True):
        """NBD export of @node; its URI."""
        name = name or node
        if not self.nbd_started:
            self.cmd('nbd-server-start',
                     addr={'type': 'unix', 'data': {'path': self.nbd_sock}})
            self.nbd_started = True
        self.cmd('block-export-add', type='nbd', id='exp-' + name,
                 **{'node-name': node}, writable=writable)
        return self.uri(name)

    def uri(self, name):
        return 'nbd+unix:///%s?socket=%s' % (name, self.nbd_sock)

    def unexport(self, name, mode='safe', timeout=60):
        """Remove export @name.  A client that just dropped its
        connection may still count as a user until the server's
        coroutine for it has ended, so 'safe' mode retries for a while."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.cmd('block-export-del', id='exp-' + name, mode=mode)
                break
            except QMPError as e:
                if ('still in use' not in str(e)
                        or time.monotonic() > deadline):
                    raise
                time.sleep(0.02)
        if not self.qmp.wait_event('BLOCK_EXPORT_DELETED', timeout):
            raise QMPError('export %s not deleted in %d s' % (name, timeout))

    # -- jobs -------------------------------------------------------------

    def wait_migration(self, timeout=120):
        """Poll until the outgoing migration ends; its final status."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.cmd('query-migrate').get('status')
            if st in ('completed', 'failed', 'cancelled'):
                return st
            time.sleep(0.05)
        return 'timed out'

    def wait_job(self, job, event='BLOCK_JOB_COMPLETED', timeout=120):
        """Wait for @event of block job @job; the event's data."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            e = self.qmp.wait_event(event, deadline - time.monotonic())
            if e is None:
                break
            if e['data'].get('device') == job or e['data'].get('id') == job:
                return e['data']
        raise QMPError('job %s: no %s in %d s' % (job, event, timeout))

    def wait_job_gone(self, job, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not any(j['id'] == job for j in self.cmd('query-jobs')):
                return
            time.sleep(0.02)
        raise QMPError('job %s still there after %d s' % (job, timeout))

    # -- state ------------------------------------------------------------

    def cache_stats(self, node='disk'):
        for s in self.cmd('query-blockstats', **{'query-nodes': True}):
            if s.get('node-name') == node:
                return s['driver-specific'].get('cache', {})
        return {}

    def throttle(self, **limits):
        """Set the node throttle group's limits (none: lift them).  QOM
        changes only the fields given, so every field is given, 0 for
        'no limit'."""
        value = dict.fromkeys(THROTTLE_FIELDS, 0)
        value.update(limits)
        self.cmd('qom-set', path='/objects/tg', property='limits',
                 value=value)

def throttle_group():
    return {'qom-type': 'throttle-group', 'id': 'tg', 'limits': {}}


class Watchdog:
    """Kill the QEMUs of a test that runs longer than @seconds, so that a
    hang fails the test (whose blocked NBD or QMP calls then return)
    instead of stalling the whole run.  @machines is a list the test may
    append to after the start."""

    def __init__(self, machines, seconds):
        self.machines = machines
        self.fired = False
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True

    def _fire(self):
        self.fired = True
        for m in list(self.machines):
            m.kill()

    def __enter__(self):
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()
