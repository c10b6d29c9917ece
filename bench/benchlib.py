# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared pieces of the benchmark scripts: storage-node pools, a
qemu-storage-daemon NBD export, fio through it, and measuring in turns."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get('QEMU_STRIPE_BUILD', os.path.join(REPO, 'build'))
QEMU = os.path.join(BUILD, 'qemu', 'qemu-build')
HARNESS = os.path.join(REPO, 'qtests', 'harness', 'storage-nodes')
QEMU_IMG = os.path.join(QEMU, 'qemu-img')
QSD = os.path.join(QEMU, 'storage-daemon', 'qemu-storage-daemon')
MiB = 1024 * 1024


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kw).stdout


def check_tools(*extra):
    for tool in (QEMU_IMG, QSD):
        if not os.path.exists(tool):
            sys.exit('%s missing: run scripts/build-qemu.sh' % tool)
    for tool in ('fio',) + extra:
        if not shutil.which(tool):
            sys.exit('%s missing: run scripts/install-deps.sh' % tool)


class Pool:
    """A harness pool of tgtd nodes, optionally bandwidth-capped."""

    def __init__(self, workdir, name, count, size='1G', rate=None,
                 delay_us=0):
        self.dir = os.path.join(workdir, name)
        args = [HARNESS, 'start', '--count', str(count), '--size', size,
                '--owner', str(os.getpid()), '--pool-dir', self.dir,
                '--format', 'json']
        if rate:
            args += ['--netns', '--rate', rate]
        if delay_us:
            args += ['--delay-us', str(delay_us)]
        self.info = json.loads(run(args))
        self.urls = ['iscsi://%s/%s/1' % (self.portal(n), n['iqn'])
                     for n in self.info['nodes']]

    @staticmethod
    def portal(n):
        # with added latency, nodes are reached through their forwarder
        if n.get('proxy_port'):
            return '127.0.0.1:%d' % n['proxy_port']
        return '%s:%d' % (n['addr'], n['port'])

    def node_json(self, i):
        n = self.info['nodes'][i]
        return {'driver': 'iscsi', 'transport': 'tcp',
                'portal': self.portal(n), 'target': n['iqn'], 'lun': 1}

    def stripe_json(self, **opts):
        node = {'driver': 'stripe',
                'nodes': [self.node_json(i) for i in range(len(self.urls))]}
        node.update(opts)
        return node

    def filename(self):
        # a single node needs the trailing '|' (stripe:PREFIX means files)
        return 'stripe:' + '|'.join(self.urls) + \
            ('|' if len(self.urls) == 1 else '')

    def create_stripe(self, size, unit, copies=1, bitmap_region=None):
        opts = 'stripe-unit=%d,force=on,copies=%d' % (unit, copies)
        if bitmap_region is not None:
            opts += ',bitmap-region=%d' % bitmap_region
        run([QEMU_IMG, 'create', '-f', 'stripe', '-o', opts,
             self.filename(), str(size)])

    def rx_bytes(self):
        """Bytes each node has sent to this host (a --rate pool: its veth),
        per node: what reads cost each node, whatever the driver says."""
        out = []
        for n in self.info['nodes']:
            with open('/sys/class/net/%s/statistics/rx_bytes' %
                      n['veth_host']) as f:
                out.append(int(f.read()))
        return out

    def harness(self, op, node):
        run([HARNESS, op, '--pool-dir', self.dir, '--node', str(node)])

    def stop(self):
        subprocess.run([HARNESS, 'stop', '--pool-dir', self.dir])


class Export:
    """A qemu-storage-daemon exporting one block node over NBD."""

    def __init__(self, workdir, blockdev, name='qsd', iothread=False):
        """@iothread: the export runs in an iothread (which polls a
        while before it sleeps), as production disks do."""
        self.sock = os.path.join(workdir, name + '.sock')
        self.pidfile = os.path.join(workdir, name + '.pid')
        node = dict(blockdev, **{'node-name': 'b'})
        export = 'type=nbd,id=e,node-name=b,name=b,writable=on'
        extra = []
        if iothread:
            export += ',iothread=io0'
            extra = ['--object', 'iothread,id=io0']
        run([QSD] + extra + ['--blockdev', json.dumps(node),
             '--nbd-server', 'addr.type=unix,addr.path=' + self.sock,
             '--export', export,
             '--pidfile', self.pidfile, '--daemonize'])
        with open(self.pidfile) as f:
            self.pid = int(f.read())
        self.uri = 'nbd+unix:///b?socket=' + self.sock

    def rss(self):
        """Resident memory of the daemon, bytes."""
        with open('/proc/%d/status' % self.pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
        raise RuntimeError('no VmRSS')

    def stop(self):
        os.kill(self.pid, 15)
        while os.path.exists('/proc/%d' % self.pid):
            time.sleep(0.05)


def fio(uri, rw, bs, qd, runtime, size, extra=()):
    """IOPS and MiB/s of one fio run (read side unless rw writes)."""
    out = run(['fio', '--name=b', '--ioengine=nbd', '--uri=' + uri,
               '--rw=' + rw, '--bs=' + bs, '--iodepth=%d' % qd,
               '--time_based', '--runtime=%d' % runtime, '--ramp_time=1',
               '--size=%d' % size, '--output-format=json'] + list(extra))
    res = json.loads(out[out.index('{'):])['jobs']
    side = 'write' if 'write' in rw else 'read'
    iops = sum(j[side]['iops'] for j in res)
    bw = sum(j[side]['bw'] for j in res) / 1024.0
    return iops, bw


def fio_export(workdir, blockdev, rw, bs, qd, runtime, size, extra=()):
    exp = Export(workdir, blockdev)
    try:
        return fio(exp.uri, rw, bs, qd, runtime, size, extra)
    finally:
        exp.stop()


def median(values):
    """The middle value; with an even count, the mean of the two middle
    ones (not the upper one: two runs are not a best of two).  Of tuples,
    the median of each field."""
    values = list(values)
    if values and isinstance(values[0], tuple):
        return tuple(median(field) for field in zip(*values))
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else \
        (values[mid - 1] + values[mid]) / 2


def alternate(reps, *fns):
    """Run the measurements in turn @reps times; their medians.

    Alternating spreads background noise of the shared 2-CPU machine over
    all sides instead of biasing one."""
    results = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            results[i].append(fn())
    return [median(r) for r in results]


def img_bench_secs(out):
    return float(re.search(r'Run completed in ([0-9.]+) seconds', out)[1])


def img_bench_ir_per_io(qemu_img, workdir, args, small=2000, large=12000):
    """Instructions per request of `qemu-img bench @args` under callgrind:
    the difference of a @large- and a @small-request run removes start-up
    and teardown.  @args are bench's options and image, without -c."""
    def total(count):
        out_file = os.path.join(workdir, 'callgrind.out')
        subprocess.run(['valgrind', '--tool=callgrind',
                        '--callgrind-out-file=' + out_file, qemu_img,
                        'bench', '-c', str(count)] + list(args),
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(out_file) as f:
            for line in f:
                if line.startswith(('summary:', 'totals:')):
                    return int(line.split()[1])
        raise RuntimeError('no callgrind summary')
    return (total(large) - total(small)) / (large - small)
