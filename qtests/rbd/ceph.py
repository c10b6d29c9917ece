# SPDX-License-Identifier: GPL-2.0-or-later
"""A local Ceph cluster for tests (qtests/harness/ceph-cluster) and its
RBD images: create, remove, export, and how QEMU names them."""

import json
import os
import subprocess

CLUSTER = os.path.join(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))), 'harness', 'ceph-cluster')


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout, **kw)


class Cluster:
    """One monitor and one memstore OSD under @workdir/ceph, owned by
    this process (a killed test leaves it to the harness' sweep)."""

    def __init__(self, workdir, osds=1, osd_mem='1G'):
        self.dir = os.path.join(workdir, 'ceph')
        res = run([CLUSTER, 'start', '--dir', self.dir, '--osds', str(osds),
                   '--osd-mem', osd_mem, '--owner', str(os.getpid()),
                   '--format', 'json'], timeout=180)
        if res.returncode:
            raise RuntimeError('ceph-cluster start: ' + res.stderr.strip())
        self.info = json.loads(res.stdout)
        self.conf = self.info['CEPH_CONF']
        self.pool = self.info['CEPH_POOL']
        self.env = dict(os.environ, CEPH_CONF=self.conf)

    def rbd(self, *args, timeout=60):
        res = run(['rbd', '-c', self.conf] + list(args), timeout=timeout)
        if res.returncode:
            raise RuntimeError('rbd %s: %s' % (' '.join(args),
                                               res.stderr.strip()))
        return res.stdout

    def create(self, name, mib):
        self.rbd('create', '%s/%s' % (self.pool, name), '--size',
                 '%dM' % mib)

    def remove(self, name):
        self.rbd('rm', '--no-progress', '%s/%s' % (self.pool, name))

    def export(self, name, path):
        self.rbd('export', '%s/%s' % (self.pool, name), path)

    def filename(self, name):
        return 'rbd:%s/%s:conf=%s' % (self.pool, name, self.conf)

    def node_json(self, name):
        return {'driver': 'rbd', 'pool': self.pool, 'image': name,
                'conf': self.conf}

    def osd_ops(self):
        """Ops the OSDs have done so far: (reads, writes), summed."""
        reads = writes = 0
        run_dir = os.path.join(self.dir, 'run')
        for name in sorted(os.listdir(run_dir)):
            if not (name.startswith('osd.') and name.endswith('.asok')):
                continue
            res = run(['ceph', '--admin-daemon',
                       os.path.join(run_dir, name), 'perf', 'dump', 'osd'])
            if res.returncode:
                raise RuntimeError('perf dump: ' + res.stderr.strip())
            osd = json.loads(res.stdout)['osd']
            reads += osd['op_r']
            writes += osd['op_w'] + osd['op_rw']
        return reads, writes

    def stop(self):
        run([CLUSTER, 'stop', '--dir', self.dir], timeout=120)

    def leftovers(self):
        """PIDs of processes whose command line names the cluster's dir."""
        found = []
        for pid in os.listdir('/proc'):
            if not pid.isdigit():
                continue
            try:
                with open('/proc/%s/cmdline' % pid, 'rb') as f:
                    cmd = f.read().decode(errors='replace')
            except OSError:
                continue
            if self.dir in cmd and int(pid) != os.getpid():
                found.append(int(pid))
        return found
